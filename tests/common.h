/*
 * common.h: helpers shared by the tests (prefix tt_). Deterministic everywhere: every rank that
 * calls a generator with the same seed gets the same result, so ranks can build the global
 * picture (e.g. everybody's box of a random tiling) without communicating.
 */
#ifndef TIDE_TESTS_COMMON_H
#define TIDE_TESTS_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <mpi.h>
#include "tide.h"

/* malloc of at least one byte (an empty array still gets a valid pointer); out of memory
 * aborts the job with a message. */
void *tt_xmalloc(size_t bytes);

/* ---- GPU tests ------------------------------------------------------------------------------ */
/* The GPUs this process can use; 0 after printing "SKIP: <why>" (the caller then exits 77, which
 * meson reports as skipped). */
int tt_gpus_or_skip(void);
/* TIDE_TEST_EXCHANGE, the exchange a GPU test forces in every case: -1 unset or empty, the
 * tide_exchange its name says (nccl, cuda-mpi, p2p or direct), -2 another name. */
int tt_exchange_env(void);
/* Collective: whether every rank's MPI library takes device pointers (ctx's device info;
 * 0 where ctx is NULL). */
int tt_cuda_aware(MPI_Comm comm, tide_context *ctx);
/* Ends a test before its cases: rank 0 prints the message, ctx (or NULL) is destroyed, MPI
 * finalized; returns code, the exit status (77: SKIP). */
int tt_stop_early(MPI_Comm comm, tide_context *ctx, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#include "tide_config.h"
#if TIDE_HAVE_CUDA
#include <stdio.h>
#include <cuda_runtime.h>
/* Aborts the job on a failing plain CUDA call: a test cannot go on without its arrays. */
#define TT_CU(call)                                                                              \
    do {                                                                                         \
        cudaError_t e_ = (call);                                                                 \
        if (e_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));                          \
            MPI_Abort(MPI_COMM_WORLD, 2);                                                        \
        }                                                                                        \
    } while (0)
/* A host function for cudaLaunchHostFunc with arg (void *)(intptr_t) milliseconds: everything
 * queued on the stream after it waits that long, so a copy queued behind it is still pending
 * when the library call under test starts. */
void CUDART_CB tt_sleep_on_stream(void *ms);
/* Runs steps of a stencil plan whose arrays are on the device the way a caller would: u (host
 * memory, bytes; the result replaces it) goes into a device array of ctx poisoned with NaN
 * bytes right before the run, by a device-to-device copy queued on stream behind a 5 ms delay
 * (queued, or any non-NULL stream) or by a pageable cudaMemcpy on the legacy stream, and comes
 * back by a plain cudaMemcpy. Returns the run's status. */
int tt_stencil_run_device(tide_context *ctx, tide_stencil_plan *plan, void *u, size_t bytes,
                          long long steps, cudaStream_t stream, int queued);
#endif

/* ---- RNG (splitmix64) ----------------------------------------------------------------------- */
typedef struct {
    uint64_t state;
} tt_rng;

void tt_rng_seed(tt_rng *rng, uint64_t seed);
uint64_t tt_rng_next(tt_rng *rng);
/* Uniform integer in [0, n); 0 when n <= 1. */
int tt_rng_below(tt_rng *rng, int n);
/* 53 random bits: [-1, 1), with full mantissas (so rounding to float matters). */
double tt_rnd(tt_rng *rng);
/* count random values in [-scale, scale), float or double. */
void tt_fill_random(void *a, size_t count, int dbl, double scale, tt_rng *rng);
/* Element i of a float or double array, as a double. */
double tt_elem(const void *a, int dbl, size_t i);
/* Random stencil weights: ntaps values whose magnitudes sum to at most 1.5, so values neither
 * vanish nor blow up over many steps. */
void tt_stencil_weights(tt_rng *rng, int ntaps, double *w);
/* Random taps (dx, dy, dz) of radius r, in random order, one of them at distance r: a
 * non-empty subset of the 6 r + 1 axis offsets (star), or count of the (2 r + 1)^3 offsets of
 * the box (count 0: a random count up to 40). Return the number of taps. */
int tt_star_taps(tt_rng *rng, int r, int (*off)[3]);
/* Shuffles the first `all` offsets of radius at most r, then makes sure one of the first count
 * lies at distance r. */
void tt_pick_taps(tt_rng *rng, int (*off)[3], int all, int count, int r);
int tt_box_taps(tt_rng *rng, int r, int count, int (*off)[3]);
/* Whether msg contains one of the '|'-separated words, ignoring case. */
int tt_mentions(const char *msg, const char *words);

/* ---- orders --------------------------------------------------------------------------------- */
/* The k-th (0..5) permutation of {0, 1, 2}, {0,1,2} first. */
void tt_perm3(int k, int order[3]);
/* "012" .. "210", or "???" when order is not a permutation. */
const char *tt_order_name(const int order[3]);

/* ---- geometry ------------------------------------------------------------------------------- */
/* Points in the box (0 when empty). */
long long tt_box_count(const tide_box *b);
/* Whether global point p lies inside box b. */
int tt_inside(const tide_box *b, const int p[3]);
/* Element offset of global point p inside box b (b's storage order). */
long long tt_offset(const tide_box *b, const int p[3]);
/* A box from its corners; order NULL means C order {0,1,2}. */
tide_box tt_box(int lo0, int lo1, int lo2, int hi0, int hi1, int hi2, const int *order);
/* "[lo,hi)x[lo,hi)x[lo,hi) o012" into buf. Returns buf. */
const char *tt_box_str(const tide_box *b, char *buf, int len);

/* ---- tilings (boxes[r] for r in 0..nranks, C order) ---------------------------------------- */
void tt_tiling_slabs(const int n[3], int dim, int nranks, tide_box *boxes);
void tt_tiling_pencils(const int n[3], int whole_dim, int nranks, tide_box *boxes);
/* Random recursive bisection, some boxes possibly empty, ranks shuffled. */
void tt_tiling_random(const int n[3], int nranks, tt_rng *rng, tide_box *boxes);

/* ---- random orders, tiling check, agreement and tallies ------------------------------------ */
/* Gives every box a random storage order. */
void tt_random_orders(int nboxes, tt_rng *rng, tide_box *boxes);
/* 1 when the boxes lie inside the grid, have valid orders, do not overlap and cover it. */
int tt_boxes_tile(const int n[3], int nboxes, const tide_box *boxes);

/* Logical AND of ok over comm: every rank gets the same answer. */
int tt_all(MPI_Comm comm, int ok);

typedef struct {
    int checks;
    int failed;
} tt_tally;

/* Prints "FAIL: " and the printf-style description on a line of its own, flushed. */
void tt_vfail(const char *fmt, va_list ap);
/* Local: counts one check in t, failed unless ok (then tt_vfail's line). Returns ok. */
int tt_local(tt_tally *t, int ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Collective: counts one check, failed unless ok on every rank. Rank 0 prints the printf-style
 * description on failure. Returns the agreed outcome (1 passed). */
int tt_check(tt_tally *t, MPI_Comm comm, int ok, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Collective: checks that a call that should fail failed the same way on every rank: status st
 * is one of `allowed` (bits 1 << code) everywhere, the message msg is not empty and, with
 * same_msg, the same on every rank, and the call left its outputs alone (untouched). Three
 * checks in t, described as "<tag>) <what>: ..."; rank 0 prints the code and message. */
void tt_expect_error(tt_tally *t, MPI_Comm comm, const char *tag, const char *what, int st,
                     const char *msg, unsigned allowed, int untouched, int same_msg);

/* Collective: rank 0 prints "<name>: <checks> <noun>, <failed> failed", or a FAIL line when no
 * rank counted a check (a test that checked nothing must not pass). Returns the process exit
 * status (0 when checks ran and none failed), the same on every rank. */
int tt_finish(const tt_tally *t, MPI_Comm comm, const char *name, const char *noun);
/* tt_finish for a test of one process that never initializes MPI. */
int tt_finish_local(const tt_tally *t, const char *name, const char *noun);

/* The larger of a and b, NaN when either is NaN (fmax drops a NaN: an error maximum taken with
 * it would hide a NaN result). */
double tt_max_nan(double a, double b);
/* Collective: the largest x over comm, on every rank; NaN when x is NaN on any rank (MPI_MAX
 * need not keep a NaN: another rank's NaN error would drop out of the maximum). */
double tt_allmax_nan(MPI_Comm comm, double x);

#endif
