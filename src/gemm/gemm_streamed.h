/*
 * gemm_streamed.h: the out-of-card matrix multiply (private): column-major host matrices through
 * the GPU, C tiles kept on the device across the k loop while panels of A and B stream in
 * through the out-of-card runner (Wu 2014, chapter 5).
 */
#ifndef TIDE_GEMM_STREAMED_H
#define TIDE_GEMM_STREAMED_H

#include "backend/backend.h"

typedef struct {
    tide_gemm_desc d;       /* the multiply (column major; lda, ldb, ldc of the host arrays) */
    const tide_env *env;    /* the plan's (CUDA backend) */
    void *blas;             /* the plan's handle (gemm_create) */
    size_t budget;          /* device bytes the multiply may hold */
    int tile, panel;        /* the caller's C tile and panel sizes; 0: chosen here */
    int ngpus;              /* GPUs the multiply runs on (1..TIDE_GEMM_MAX_GPUS), C's columns
                             * shared among them; devices[0] is env's */
    const int *devices;
    int runs;               /* runs each multiply comes in (0 or 1: one, tide_gemm_streamed_
                             * execute; more: a sequence of starts into one C, first to last,
                             * which the plan may keep on the device in between) */
    int share_a;            /* several GPUs: tide_gemm_options.share_a */
} tide_gemm_streamed_desc;

enum { TIDE_GEMM_MAX_GPUS = 16 };

/* Where a run stands in its sequence (tide_gemm_streamed_start's which): a plan that keeps C on
 * the device uploads it in the first run only and downloads it in the last only. */
enum { TIDE_GEMM_RUN_FIRST = 1, TIDE_GEMM_RUN_LAST = 2 };

typedef struct tide_gemm_streamed tide_gemm_streamed;

/* Local: on each GPU, measures the PCIe and GEMM rates, chooses the tiles and panels that fit
 * the budget and finish soonest by the model in gemm_streamed.c, and makes the runner.
 * Returns 0 or a code with the reason in err. */
int tide_gemm_streamed_create(const tide_gemm_streamed_desc *d, tide_gemm_streamed **out, char *err,
                            size_t len);
void tide_gemm_streamed_destroy(tide_gemm_streamed *s);

/* C = alpha op(A) op(B) + beta C for host arrays a, b, c, after the work enqueued on caller (a
 * cudaStream_t; NULL: the legacy default stream) and complete on return. Returns 0 or a code
 * with the reason in err. */
int tide_gemm_streamed_execute(tide_gemm_streamed *s, tide_scalar alpha, const void *a,
                             const void *b, tide_scalar beta, void *c, void *caller, char *err,
                             size_t len);

/* The same in two halves: start returns once the multiply runs on the runners' own threads
 * (the arrays must stay untouched until wait returns), wait waits for it (after a failed start
 * nothing is left to wait for). With run not NULL the multiply is the planned one with run's k
 * (at most the planned k), lda and ldb; its other fields are not read. which: the run's place
 * in a sequence (TIDE_GEMM_RUN_* bits; both for a multiply of one run); the runs of a sequence
 * after the first add to C (beta 1), and C's host copy is complete only after the last. */
int tide_gemm_streamed_start(tide_gemm_streamed *s, const tide_gemm_desc *run, int which,
                           tide_scalar alpha, const void *a, const void *b, tide_scalar beta,
                           void *c, void *caller, char *err, size_t len);
int tide_gemm_streamed_wait(tide_gemm_streamed *s, char *err, size_t len);

/* Its part of tide_gemm_info over `runs` runs whose k add up to k (one planned multiply: its
 * k and 1): tiles, panels, slots, bytes each way, rates, bound, and the device and pinned
 * memory it holds. */
void tide_gemm_streamed_info(const tide_gemm_streamed *s, long long k, int runs,
                           tide_gemm_info *info);

/* "4 tiles of 512x512, 2 panels of 512, 3 slots" */
void tide_gemm_streamed_describe(const tide_gemm_streamed *s, char *buf, size_t len);

#endif
