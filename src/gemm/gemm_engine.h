/*
 * gemm_engine.h: the out-of-card multiply's parts shared by its files (private):
 * gemm_streamed.c runs the multiplies on the out-of-card runner, gemm_streamed_plan.c plans
 * them (the tiles and panels from the model and the measured rates, the parts on several
 * GPUs, A shared between them).
 */
#ifndef TIDE_GEMM_ENGINE_H
#define TIDE_GEMM_ENGINE_H

#include <pthread.h>
#include "gemm/gemm_streamed.h"
#include "plan/runner.h"

enum { SLOTS = 4, MAX_CHUNKS = 1 << 16, PROBE = 2048, FINALISTS = 6, MAX_BLOCKS = 4096 };

/* Tiles and panels: the largest of each, how many, and which operands are kept whole on the
 * device: A and B (each block uploaded once per run, by the first tile that needs it, instead
 * of once per tile row or column), and C across the runs of a sequence (loaded by the first,
 * stored by the last). */
typedef struct {
    long long mb, nb, kb;
    int tm, tn, np;
    int keep[3];
} shape;

typedef struct engine engine;
typedef struct tide_gemm_streamed gemm_stream;

/* What one execution works on (the job's user data): the part's multiply with the run's k
(at most the planned) and leading dimensions of A and B, and its panels per tile. */
typedef struct {
    const engine *s;
    tide_gemm_desc g;
    int np;
    int load, store;        /* C kept: this run uploads C first, downloads it at the end */
    int gen;                /* A shared: the run's number (sharing.gen) */
    tide_scalar alpha, beta;
    const void *a, *b;
    void *c;
    tide_gemm_operands bound; /* the chunk in flight's update: its tile, panels, beta */
    size_t tile;            /* ... and the bytes of its C tile */
} run_t;

/* The ops of a chunk (plan/program.h), in the order they run on its chunk buffers (0 the
 * slot's C tile, 1 the tile being accumulated): the tile loaded into the accumulator (its
 * first panel, beta != 0), the update, the tile stored for its download (its last panel). A
 * chunk runs a contiguous range of them; with C kept whole on the device only the update, in
 * place at the tile's place in C. */
enum { OP_LOAD, OP_UPDATE, OP_STORE, NOPS };

/* One GPU's part of the multiply: columns col0.. of C (d.d.n of them), all of A. */
struct engine {
    tide_gemm_streamed_desc d;  /* d.d: the part's multiply; d.env, d.blas: its GPU's */
    int device;
    long long col0;
    shape sh;
    size_t elem;
    tide_rates rates;
    double rate_gemm;       /* flop/s of one chunk's multiply on the device, measured */
    tide_gemm_desc timed[2 * FINALISTS]; /* the chunk multiplies choose has measured ... */
    double timed_rate[2 * FINALISTS];    /* ... and their rates (choose_sharing asks twice) */
    int ntimed;
    tide_runner *runner;    /* SLOTS deep */
    tide_env env;           /* a GPU other than the plan's: its own stream ... */
    void *blas;             /* ... and cuBLAS handle */
    run_t run;              /* the execution in flight */
    tide_op ops[NOPS];      /* bound to run.bound and run.tile */
    tide_runner_pass pass;
    int index;              /* its place among the parts */
    int sharers;            /* GPUs the model spreads A's uploads over (1: none) */
    gemm_stream *all;
    void *push;             /* A shared: the stream its blocks of A go to the other GPUs on ... */
    void **pushed;          /* ... and per block, an event recorded there after their copies */
};

/* A shared among the parts: which blocks' copies have been enqueued in the run in flight. */
typedef struct {
    int on;
    int nblocks;            /* tm x np of the planned multiply */
    pthread_mutex_t lock;   /* lock and cond initialized when ready is allocated */
    pthread_cond_t cond;
    int gen;                /* the run in flight */
    int *ready;             /* per block: the last run whose owner has enqueued its copies */
    int first_failed;       /* the part whose run failed first (its copies may not come), or
                             * -1 */
} sharing;

struct tide_gemm_streamed {
    int n;
    engine *e[TIDE_GEMM_MAX_GPUS];
    int started;            /* parts of the run in flight */
    sharing share;
    double pcie[3];         /* what the parts' PCIe rates (up, down, both) alone are scaled by:
                             * the share of them host memory gives all the GPUs at once */
};

/* Buffers of a pipeline slot, then the resident ones. */
enum { BUF_A, BUF_B, BUF_C, RES_C, RES_A, RES_B };

static inline long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

static inline long long at_least_1(long long v) { return v > 1 ? v : 1; }

/* The leading dimension of a block of `rows` rows on the device: a multiple of 32 elements,
 * so that every column starts 128-byte aligned, which cuBLAS's fastest kernels want. */
static inline long long dev_ld(long long rows) { return at_least_1((rows + 31) / 32 * 32); }

/* Operand x (0: A, 1: B) as its matrix is stored: rows x cols in all, and the block a chunk
 * with ranges q needs (rows r0..r1 of columns c0..c1). */
typedef struct {
    long long rows, cols, r0, r1, c0, c1;
} stored;

static inline stored operand(const tide_gemm_desc *g, int x, const long long q[6])
{
    /* op(A) is m x k over q[0..2) x q[4..6); op(B) is k x n over q[4..6) x q[2..4) */
    const long long *r = x ? q + 4 : q, *c = x ? q + 2 : q + 4;
    long long rows = x ? g->k : g->m, cols = x ? g->n : g->k;
    if (x ? g->transb : g->transa)
        return (stored){cols, rows, c[0], c[1], r[0], r[1]};
    return (stored){rows, cols, r[0], r[1], c[0], c[1]};
}

#endif
