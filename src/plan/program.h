/*
 * program.h: a plan's program of ops, and the one executor that runs it on any backend
 * (private).
 *
 * An op reads a source and writes a destination, each named by location: the caller's input
 * or output array, or one of two work buffers. Kinds: reshape (comm/: move the data to another
 * layout), FFT (local transforms of whole lines), pointwise (scaling; eigenvalue scaling), line
 * solves, halo exchanges, stencil sweeps, matrix multiply updates, an operation's own
 * halves of an exchange (SUMMA's panel moves), and copies. Every op has the same small
 * interface: created by its kind's constructor, run and destroyed through its class, described
 * by `what`, and costed by `cost` (flops, and bytes over each link), so a plan reports its own
 * bound. The executor runs the ops through the plan's backend table (backend.h): the same
 * code for the CPU and the GPU.
 */
#ifndef TIDE_PROGRAM_H
#define TIDE_PROGRAM_H

#include "backend/backend.h"

enum { TIDE_LOC_IN, TIDE_LOC_OUT, TIDE_LOC_W0, TIDE_LOC_W1 };

/* The flags of a reshape into loc on e's backend (backend.h's reshape_execute): on the GPU a
 * plan's work buffer lives as long as the plan, so the peers' direct stores may go straight
 * into it, and so does the caller's output where the caller said it stays allocated as long
 * (e->out_kept); any other caller's array may be freed between calls, so they go into the
 * staging. */
static inline int tide_reshape_flags(const tide_env *e, int loc)
{
    int kept = loc == TIDE_LOC_W0 || loc == TIDE_LOC_W1 || (loc == TIDE_LOC_OUT && e->out_kept);
    return e->be->gpu && kept ? TIDE_RESHAPE_DST_KEPT : 0;
}

typedef enum {
    TIDE_OP_RESHAPE,
    TIDE_OP_FFT,
    TIDE_OP_POINTWISE,
    TIDE_OP_LINE_SOLVE,
    TIDE_OP_HALO,
    TIDE_OP_STENCIL,
    TIDE_OP_OVERLAP, /* a reshape and an FFT in chunks (overlap.h) */
    TIDE_OP_GEMM,    /* a local multiply update C = alpha op(A) op(B) + beta C */
    TIDE_OP_EXCHANGE, /* a half (start or finish) of an exchange the operation made
                       * (comm/exchange.h): SUMMA's panel moves */
    TIDE_OP_COPY      /* a copy within the backend's memory (an out-of-card multiply's C
                       * tile loaded into and stored from its accumulator) */
} tide_op_kind;

/* One execution of an op on this rank. */
typedef struct {
    double flops;
    double mem_bytes; /* read plus written in the memory the op runs in (host or device) */
    double net_bytes; /* sent to other ranks */
} tide_op_cost;

typedef struct tide_op tide_op;

typedef struct {
    int (*execute)(const tide_op *op, const tide_env *e, void *src, void *dst);
    void (*destroy)(tide_op *op, const tide_env *e);
    int collective;       /* it exchanges with other ranks: it runs after a failure too (every
                           * rank takes part; e->failed says there was one, so it does no
                           * local work it can skip) */
    int completes;        /* it waits for work an earlier op of the program left running (on
                           * threads or a stream of its own): it runs after a failure too,
                           * with e->failed set, so that nothing is left running when the
                           * program returns */
    /* Where not NULL: runs an op that overwrites its input (overwrites_input) from src into
     * dst with stage (its stage_bytes, free) as work space, src left as it is, in place of
     * the staged copy and execute; returns TIDE_ERR_UNSUPPORTED, having started nothing,
     * where it cannot (run_op then stages src). */
    int (*execute_staged)(const tide_op *op, const tide_env *e, const void *src, void *stage,
                          void *dst);
} tide_op_class;

/* A region copy's geometry, bound by the plan that owns the op before each execution: the
 * points of region between a source laid out as from and a destination laid out as to. */
typedef struct {
    size_t elem;
    tide_box region, from, to;
} tide_region_copy;

/* A multiply's operands, bound by the plan that owns the op before each execution (they change
 * with the run, and with SUMMA's panel): the multiply g (backend.h; its k, lda and ldb the
 * panel's), the scalars, and A and B; C is the op's destination. */
typedef struct {
    tide_gemm_desc g;
    tide_scalar alpha, beta;
    const void *a, *b;
} tide_gemm_operands;

/* The exchanges a plan's halo ops made and the seconds they took on this rank. */
typedef struct {
    long long exchanges;
    double seconds;
} tide_halo_tally;

struct tide_op {
    const tide_op_class *cls;
    tide_op_kind kind;
    /* Where it reads and writes (tide_program_place). */
    int src, dst;
    int in_place_ok;      /* runs with src == dst (c2c FFT, pointwise) */
    int overwrites_input; /* destroys its source (c2r) */
    int stage_input;      /* reads IN: copied to stage_loc first when IN and the destination
                           * alias at run time, or always when it overwrites its input, so that
                           * out-of-place inputs stay unmodified */
    int stage_loc;
    size_t stage_bytes;
    tide_op_cost cost;
    char what[40];
    /* The kind's state. */
    tide_reshape *reshape;
    void *fft;
    int dbl;
    long long scalars;    /* pointwise: the scalars it scales */
    int fields;           /* spectral: the fields its origin holds */
    int steps;            /* stencil sweep: the steps of one execution (a pass) */
    double factor;        /* pointwise: the scale factor */
    tide_spectral *spec;  /* spectral operator: its tables in the backend's memory */
    tide_sweep *sweep;    /* stencil sweep (the plan's) */
    const tide_halo *halo; /* halo exchange (the plan's) */
    tide_halo_tally *tally; /* ... where it counts itself */
    void *blas;           /* multiply update: the backend's gemm handle (the plan's) */
    const tide_gemm_operands *operands; /* ... and its operands, bound per execution */
    const size_t *bytes;  /* copy: the bytes it copies, bound per execution */
    const tide_region_copy *region; /* region copy: its geometry, bound per execution */
    void *state;          /* an operation's own op class: its state */
};

enum { TIDE_PROGRAM_OPS = 20 };

typedef struct {
    tide_op ops[TIDE_PROGRAM_OPS];
    int nops;
} tide_program;

/* Constructors, on an op whose placement is set (tide_program_place; an FFT is planned on the
 * buffers it will use) and that is otherwise zero. A reshape moves this rank's part of
 * layout from into layout to (every rank's boxes); an FFT runs d (whose in/out arrays say
 * what to plan with); a pointwise op multiplies count scalars by factor. Return 0 or a code
 * with the reason in err. */
int tide_op_reshape(tide_op *op, const tide_env *e, const tide_box *from, const tide_box *to,
                    size_t elem, int batch, char *err, size_t len);
int tide_op_fft(tide_op *op, const tide_env *e, const tide_cpu_fft_desc *d, size_t *work,
                char *err, size_t len);
void tide_op_scale(tide_op *op, int dbl, long long count, double factor);
/* The costs those ops have, without making them: a reshape of every rank's boxes from into to
 * on rank `rank`, and FFT d. */
tide_op_cost tide_op_reshape_cost(int rank, const tide_box *from, const tide_box *to,
                                  size_t elem, int batch);
tide_op_cost tide_op_fft_cost(const tide_cpu_fft_desc *d);
/* The name tide_op_fft gives an FFT op of d: "fft(y,z)", "r2r(x)", "fft(x)+r2r(y)". */
void tide_op_fft_name(const tide_cpu_fft_desc *d, char *what, size_t len);
/* The spectral operator of a Poisson solve (backend.h), in place: d with its tables (host
 * memory; lam[k] and mean_w[k] of n[k] doubles, the line's rows and weights of n[d->line])
 * copied into the backend's memory, a zeroed origin of d->batch complex doubles and the
 * scratch there. A pointwise op without a line, a line solve with one. */
int tide_op_spectral(tide_op *op, const tide_env *e, const tide_spectral *d, const int n[3],
                     char *err, size_t len);
/* The spectral op (diagonal, in place) that the FFT before it applies as it stores its output
 * (tide_cpu_fft_desc's then): it keeps its tables and origin, and runs as nothing. */
void tide_op_spectral_fused(tide_op *op);
int tide_op_spectral_is_fused(const tide_op *op);
/* Copies the spectral op's origin (the d->batch complex doubles it was made with) into host
 * memory at dst, after the work enqueued before (synchronizes the plan's work). */
int tide_op_spectral_origin(const tide_op *op, const tide_env *e, void *dst);
/* Zeroes the spectral op's whole origin (every field it was made with), after the work
 * enqueued before (synchronizes the plan's work). Returns 0 or a code. */
int tide_op_spectral_clear(const tide_op *op, const tide_env *e);
/* A streamed solve's middle op (made for a chunk's layout, with origin room for every field)
 * runs on one chunk of one field at a time: box the chunk's points (global indices, no more
 * than the op was made for: the scratch), arr the chunk buffer's layout (backend.h), field
 * the field whose origin entry its sums add to. Sets batch 1 and keep; the op stays const,
 * its spectral operator is not. Its cost stays the one it was made with. */
void tide_op_spectral_chunk(const tide_op *op, const tide_box *box, const tide_box *arr,
                            int field);

/* A stencil sweep of s (backend.h; prepared by the backend's sweep_create, owned by the
 * caller) from its source to its destination, op->steps steps per execution (the caller sets
 * it before each pass, 1 .. s->max_fuse). cost: one pass of `fuse` steps over the grid. */
void tide_op_sweep(tide_op *op, tide_sweep *s, int fuse);

/* A halo exchange of h (comm/halo.h; made for arrays in the backend's memory), in place: the
 * halo of its source filled from the owners' points; each execution counted and timed in
 * tally (on the GPU from the end of the work enqueued before it). Collective. */
void tide_op_halo(tide_op *op, const tide_halo *h, tide_halo_tally *tally);

/* A local multiply update through the backend's gemm entry on handle h (gemm_create's; owned
 * by the caller): C = alpha op(A) op(B) + beta C, C the op's destination (in place), the rest
 * read from x at each execution (the CPU: the BLAS on the env's threads; the GPU: cuBLAS
 * enqueued on the env's stream). cost: one multiply of g (the largest it runs). */
void tide_op_gemm(tide_op *op, void *h, const tide_gemm_desc *g, const tide_gemm_operands *x);

/* A copy of *bytes bytes (read at each execution) from its source to its destination, within
 * the backend's memory, on the env's stream. cost: one copy of `most` bytes. */
void tide_op_copy(tide_op *op, const size_t *bytes, size_t most);

/* A copy of the points x->region (read at each execution) from its source to its
 * destination, within the backend's memory, on the env's stream. cost: one copy of `most`
 * bytes. */
void tide_op_copy_region(tide_op *op, const tide_region_copy *x, size_t most);

/* One step of a pass over chunks: op run from src to dst, addresses in the chunk's buffers. */
typedef struct {
    const tide_op *op;
    void *src, *dst;
} tide_step;

/* The steps of ops[0..n) on a chunk's two buffers, each op reading and writing the one its
 * src and dst name (0: chunk[0], else chunk[1]); returns n. */
static inline int tide_steps_of(const tide_op *ops, int n, void *const chunk[2], tide_step *s)
{
    for (int k = 0; k < n; k++)
        s[k] = (tide_step){&ops[k], chunk[ops[k].src ? 1 : 0], chunk[ops[k].dst ? 1 : 0]};
    return n;
}

/* Whether op o runs after a failure (collective: its peers wait for it; completes: it waits
 * for work left running), with e->failed set: the executor's failure rule. */
static inline int tide_op_runs_after_failure(const tide_op *o)
{
    return o->cls->collective || o->cls->completes;
}

/* Runs steps s[0..n) in order through env e under the executor's failure rule, *status the
 * run's first failure so far (0: none): after a failure a step runs only when
 * tide_op_runs_after_failure says so, with e->failed set. The first failure is kept in
 * *status, its op in *failed_at (when not NULL). Returns whether a step is collective. */
int tide_steps_run(const tide_step *s, int n, const tide_env *e, int *status,
                   const tide_op **failed_at);

/* The local checks that open a plan's run on array a of `steps` steps: the plan's GPU made
 * current (enter_st, the status of entering it), steps >= 0, a not NULL where the rank has
 * data (has_data), a in the plan's memory (device: device memory), and the plan's stream
 * ordered after the caller's CUDA work (entry, an event; caller and stream as
 * tide_order_after). Returns 0, or a code with the reason in why, worded to be followed by
 * the call's name ("passed a NULL array to"). */
int tide_run_checks(const tide_env *e, int device, const void *a, int has_data,
                    long long steps, int enter_st, void *entry, void *caller, char *why,
                    size_t len);

/* Chooses where ops[0..n) of prog read and write. Normally every op writes the work buffer
 * its source is not in and the last op writes OUT; ops that can run in place stay where their
 * source is. When ops that run in place follow the last reshape, that reshape delivers into
 * OUT and they run in OUT (the caller's output array is free work space, and FFTW's in-place
 * transforms along strided dimensions are far faster than out-of-place ones), unless the
 * reshape reads IN (in and out may be one array). Pointwise ops at the end run in place in
 * OUT. Reads each op's kind, in_place_ok and overwrites_input; gpu: in-place ops run with
 * in == out as they are (cuFFT), else a source that aliases its destination at run time is
 * staged. */
void tide_program_place(tide_program *prog, int gpu);

/* The work buffer an op is planned with in place of loc (FFTW plans on real arrays): the work
 * buffer itself, or for IN/OUT the work buffer the other side does not use. */
void *tide_program_stand_in(void *const w[2], int loc, int other);

/* Runs the program from in to out with work buffers w. After a local failure (status: the
 * caller's so far) a rank skips its local ops but still runs every collective op (a reshape,
 * a halo exchange), so that no peer waits for it, and every op that completes work an earlier
 * op left running (completes); returns the first failure, with *failed_at
 * naming its op ("" when it came before the program). times (when not NULL): each op's wall
 * time, synchronizing after each (debug). */
int tide_program_run(const tide_program *prog, const tide_env *e, void *const w[2],
                     const void *in, void *out, int status, const char **failed_at,
                     char *times, size_t tlen);

void tide_program_destroy(tide_program *prog, const tide_env *e);

#endif
