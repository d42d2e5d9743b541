/*
 * gemm_stream.h: the out-of-card matrix multiply (private): column-major host matrices through
 * the GPU, C tiles kept on the device across the k loop while panels of A and B stream in
 * through the pipeline engine (Wu 2014, chapter 5).
 */
#ifndef TIDE_GEMM_STREAM_H
#define TIDE_GEMM_STREAM_H

#include "backend.h"

typedef struct {
    tide_gemm_desc d;       /* the multiply (column major; lda, ldb, ldc of the host arrays) */
    const tide_env *env;    /* the plan's (CUDA backend) */
    void *blas;             /* the plan's handle (gemm_create) */
    size_t budget;          /* device bytes the multiply may hold */
    int tile, panel;        /* the caller's C tile and panel sizes; 0: chosen here */
    int ngpus;              /* GPUs the multiply runs on (1..TIDE_GEMM_MAX_GPUS), C's columns
                             * shared among them; devices[0] is env's */
    const int *devices;
} tide_gemm_stream_desc;

enum { TIDE_GEMM_MAX_GPUS = 16 };

typedef struct tide_gemm_stream tide_gemm_stream;

/* Local: on each GPU, measures the PCIe and GEMM rates, chooses the tiles and panels that fit
 * the budget and finish soonest by the model in gemm_stream.c, and makes the pipeline.
 * Returns 0 or a code with the reason in err. */
int tide_gemm_stream_create(const tide_gemm_stream_desc *d, tide_gemm_stream **out, char *err,
                            size_t len);
void tide_gemm_stream_destroy(tide_gemm_stream *s);

/* C = alpha op(A) op(B) + beta C for host arrays a, b, c, after the work enqueued on caller (a
 * cudaStream_t; NULL: the legacy default stream) and complete on return. Returns 0 or a code
 * with the reason in err. */
int tide_gemm_stream_execute(tide_gemm_stream *s, double alpha, const void *a, const void *b,
                             double beta, void *c, void *caller, char *err, size_t len);

/* Its part of tide_gemm_info: tiles, panels, slots, bytes each way, rates, bound, and the
 * device and pinned memory it holds. */
void tide_gemm_stream_info(const tide_gemm_stream *s, tide_gemm_info *info);

/* "4 tiles of 512x512, 2 panels of 512, 3 slots" */
void tide_gemm_stream_describe(const tide_gemm_stream *s, char *buf, size_t len);

#endif
