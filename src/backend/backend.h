/*
 * backend.h: the backend table (private). Everything a plan's program does that depends on
 * where it runs goes through one of these tables, so plan code has no CUDA branches: work
 * memory, copies, local FFTs, reshapes, pointwise scaling, and the ordering with the caller's
 * work. backend_cpu.c fills one for the CPU (FFTW, threads), backend_cuda.c one for the GPU
 * (cuFFT, kernels, NCCL / CUDA-aware MPI / pinned staging).
 */
#ifndef TIDE_BACKEND_H
#define TIDE_BACKEND_H

#include <stddef.h>
#include "backend/cpu_fft.h"
#include "comm/halo.h"
#include "comm/reshape.h"
#include "core/core.h"

/* The operator of a Poisson solve in spectral space, applied to batch fields of complex data
 * (real data when `real`: every transformed dimension was transformed real-to-real) laid out
 * as this rank's box (global indices (i,j,k), the box's storage order) within the array arr
 * (below). Along the transformed dimensions it is diagonal, with tables lam[d] over each
 * one's whole grid; along the dimension `line` (-1: none), which the box holds whole, it is
 * the tridiagonal matrix of rows lower, diag, upper (lower[0] and upper[n-1] zero) of a
 * bounded dimension, or (line_fft) diagonal after a transform the op does itself.
 *
 * line < 0: each point is multiplied by norm / (lam[0][i] + lam[1][j] + lam[2][k] - alpha),
 * or cleared where that sum is exactly 0 (the singular mode).
 * line >= 0 with line_fft (a periodic line, complex data): each line is transformed along
 * it by an unnormalized forward DFT, multiplied as by the diagonal operator (lam[line] the
 * line's table), and transformed back by an unnormalized inverse DFT, in one pass over the
 * data (norm includes 1 / the line's length); the backend's spectral_line_fft says for which
 * lengths it can.
 * line >= 0 otherwise: each line along it, at (i,j) of the other two dimensions a and b, is
 * replaced by the solution u of (T + s I) u = norm d, s = lam[a][i] + lam[b][j] - alpha, by
 * Thomas' algorithm with its pivots in double precision. When `pin` is set (T singular: Neumann on
 * both faces) the line with s == 0 has a solution only for data of zero weighted mean: that
 * mean (weights weight[k], summing to 1) is removed, the system solved with u fixed at its
 * last point, and u shifted to zero weighted mean.
 *
 * origin[field + f] (complex, in double) receives, for field f, before the solve, the sum
 * over the box of mean_w[0][i] mean_w[1][j] mean_w[2][k] times the value (a tridiagonal
 * line: over the other two dimensions, times the line's weighted mean; line_fft: the value
 * after the line's forward transform); a NULL table weighs index 0 alone (a periodic
 * dimension, or Neumann faces). norm times the sum over the ranks is the mean of f. Tables,
 * origin and scratch live in the backend's memory; scratch (a tridiagonal line only) holds
 * tide_spectral_scratch doubles: one per point of the box, and at least three per point of
 * TIDE_LINE_BLOCK lines (the GPU keeps the eliminated upper diagonal there, the CPU the
 * elimination of a block of neighbouring lines in double, one such block a thread as far as
 * the scratch holds them).
 *
 * The data lies in an array of layout arr (same order as box, box inside it), of which box is
 * the part processed: a streamed solve's chunk buffer is laid out for a fixed chunk thickness,
 * and its last chunk holds fewer planes. The strides are arr's (tide_box_strides: the fastest
 * storage dimension at stride 1), box's first point is (box.lo[k] - arr.lo[k]) strides along
 * each dimension k in, and field f of the data tide_box_count(arr) points after field 0.
 * An arr of no points (all zeros) means box itself. The tables stay indexed by the global
 * indices of box.
 *
 * field: the origin entry of the first field processed; origin holds room for every field of
 * every execution. keep == 0: the entries of the fields processed take their sums (the GPU
 * clears them, then adds; an empty box gives 0). keep != 0: the sums add to what they hold,
 * so that the chunks of a streamed solve each add their part (the caller clears origin before
 * the solve). */
enum { TIDE_LINE_BLOCK = 32 };

typedef struct tide_spectral {
    int dbl;
    tide_box box;
    tide_box arr;
    int field;
    int keep;
    int batch;
    const double *lam[3];
    double alpha, norm;
    void *origin;
    int line;
    int line_fft;
    const double *lower, *diag, *upper, *weight;
    const double *mean_w[3];
    int pin;
    int real;
    double *scratch;
} tide_spectral;

/* The layout of the array d's data lies in: arr, or box where arr has no points. */
static inline const tide_box *tide_spectral_arr(const tide_spectral *d)
{
    return tide_box_count(&d->arr) > 0 ? &d->arr : &d->box;
}

/* The doubles of one block of TIDE_LINE_BLOCK lines of n points eliminated together (the
 * CPU's), and of a tridiagonal line's scratch (above): a double per point of the box, and at
 * least one such block. */
static inline size_t tide_spectral_line_block(int n)
{
    return 3 * (size_t)n * TIDE_LINE_BLOCK;
}

static inline size_t tide_spectral_scratch(const tide_spectral *d, int n)
{
    size_t count = (size_t)tide_box_count(&d->box), row = tide_spectral_line_block(n);
    return count > row ? count : row;
}

/* Bytes of one element of d's data (real or complex, float or double). */
static inline size_t tide_spectral_elem(const tide_spectral *d)
{
    return (d->real ? 1 : 2) * (d->dbl ? sizeof(double) : sizeof(float));
}

/* A stencil sweep (stencil.c): `steps` time steps of the stencil from src into dst, two
 * distinct arrays holding the whole grid (src is not changed). The grid is seen in storage
 * order: n[0] the slowest dimension, n[2] the fastest (contiguous), and the taps' offsets are
 * given in that order too. Point (a, b, c) is at element a pitch[0] + b pitch[1] + c of src
 * and of the source (pitch 0: the dense layout, (a n[1] + b) n[2] + c), so a sweep may run on
 * a box inside a larger array (a view: its faces are the sweep's). The sweep writes the points
 * of its out window alone; dst is laid out as src, shifted so that it holds the window's
 * planes from its first, l, on: point (a, b, c) at dst + (a - l) pitch[0] + b pitch[1] + c.
 *
 * One step at a point p: when p lies within `radius` of a face of a dimension that is not
 * periodic (a boundary point), the value stays; otherwise acc = w[0] u(p + off[0]) (a rounded
 * product), acc = fma(w[i], u(p + off[i]), acc) for i = 1 .. ntaps - 1, acc = acc + s(p) with
 * a source, all in the data's precision (weights rounded to it), with the indices along
 * periodic dimensions taken modulo n. Every backend follows that order exactly, so results
 * are bitwise equal everywhere.
 *
 * The class form (`classes` set): the taps are the 27-point box and its weights take one value
 * per class, cw = {centre, face, edge, corner} (rounded to the data's precision). With
 * u(a, b, c) the value at offset a along storage dimension axis[0], b along axis[1] and c along
 * axis[2] (the user's x, y and z, whatever the storage order), each operation rounded:
 *   for a = -1, 0, 1:  v(a, c) = u(a, -1, c) + u(a, 1, c)   (c = -1, 0, 1)
 *                      f(a) = v(a, 0) + (u(a, 0, -1) + u(a, 0, 1))
 *                      k(a) = v(a, -1) + v(a, 1)
 *   S(a) = fma(cw[3], k(a), fma(cw[2], f(a), cw[1] u(a, 0, 0)))   for a = -1 and 1
 *   M    = fma(cw[2], k(0), fma(cw[1], f(0), cw[0] u(0, 0, 0)))
 *   acc  = (S(-1) + M) + S(1), then acc + s(p) with a source.
 * Twelve operations a point instead of 27 multiply-adds: the sums of a plane perpendicular to
 * x are shared by the three planes that read it, its pair sums by the rows beside them.
 * Every backend follows that order exactly, for every storage order.
 *
 * How a backend fuses steps (temporal blocking by plane streaming, which both backends share):
 * the planes it writes along the slowest dimension (its out window's) are cut into chunks
 * [z0, z1) worked on independently. For a chunk,
 * level t (the data after t steps) is needed on the planes [z0 - (k - t) r, z1 + (k - t) r)
 * (clipped to [0, n[0]) when that dimension is not periodic; plane indices modulo n[0] when
 * it is): level 0 is read from src, level k written to dst on [z0, z1). Planes enter in
 * order; once level t - 1 holds planes q - r .. q + r, level t computes plane q. Each level
 * keeps the last 2 r + 1 planes it made in a ring, so a sweep reads src once and writes dst
 * once, and computes each plane of each level once, apart from the (k - t) r extra planes at
 * each end of a chunk. The CPU also cuts each plane's rows into tiles (`cache`), the same
 * scheme along the rows, so that a thread's rings fit its core's cache. In the class form with
 * the user's x the slowest dimension the CPU keeps no ring: a level passes each plane of the
 * level below through once into two planes of partial sums (S of the last plane, and S + M),
 * which complete its planes in order (stencil_cpu.c). */
enum {
    TIDE_SWEEP_SIDE = 2 * TIDE_STENCIL_MAX_RADIUS + 1,
    TIDE_SWEEP_MAX_TAPS = TIDE_SWEEP_SIDE * TIDE_SWEEP_SIDE * TIDE_SWEEP_SIDE /* the full box */
};

typedef struct tide_sweep {
    int dbl;
    int n[3];
    int periodic[3];
    int radius;
    int ntaps;
    const int (*off)[3];  /* host memory: offsets in storage order */
    const double *w;      /* host memory: weights */
    int classes;          /* the class form (above): off and w still list the 27 taps */
    int axis[3];          /* the class form: the storage dimensions of the user's x, y, z */
    double cw[4];         /* the class form: centre, face, edge and corner weights */
    const void *source;   /* NULL, or an array laid out like the data (the backend's memory) */
    int out[3][2];        /* the points a sweep writes: [out[d][0], out[d][1]) along storage
                           * dimension d (out[d][1] 0: all n[d] of them) */
    long long pitch[2];   /* elements from a plane to the next and from a row to the next in
                           * src, dst and the source; 0: n[1] n[2] and n[2] */
    int beside;           /* sweeps running at the same time as this one: a GPU plans its
                           * chunks for the 1 / (1 + beside) share of its SMs it may get */
    size_t cache;         /* bytes of cache a CPU thread's rings should fit (0: half the
                           * core's L2); the CPU cuts the rows into tiles that fit it */
    int stream_dst;       /* CPU: the stores into dst bypass the caches (non-temporal) where
                           * the kernel can: 1, -1 never, 0 the backend's choice by the
                           * grid's size */
    int max_fuse;         /* the most steps one sweep may do (set by sweep_create) */
    void *state;          /* the backend's: tables, rings (sweep_create) */
    size_t state_bytes;   /* host memory the state holds (set by sweep_create) */
} tide_sweep;

/* The points [*lo, *hi) along storage dimension d that s writes (its out window). */
static inline void tide_sweep_out(const tide_sweep *s, int d, int *lo, int *hi)
{
    *lo = s->out[d][1] ? s->out[d][0] : 0;
    *hi = s->out[d][1] ? s->out[d][1] : s->n[d];
}

/* The elements from a plane of s's arrays to the next (p[0]) and from a row to the next
 * (p[1]). */
static inline void tide_sweep_pitch(const tide_sweep *s, long long p[2])
{
    p[0] = s->pitch[0] ? s->pitch[0] : (long long)s->n[1] * s->n[2];
    p[1] = s->pitch[1] ? s->pitch[1] : s->n[2];
}

/* A matrix multiply in the backend's memory, column major as the BLAS has it: C = alpha op(A)
 * op(B) + beta C with op(A) m x k, op(B) k x n, C m x n; trans: tide_transpose (op(X) = X, X^T
 * or X^H); ld: leading dimensions in elements (at least 1 and the rows of the matrix as
 * stored). cplx: complex elements, (re, im) pairs of the precision. beta = 0 does not read C. */
typedef struct tide_gemm_desc {
    int dbl, cplx;
    int transa, transb;
    long long m, n, k;
    long long lda, ldb, ldc;
} tide_gemm_desc;

/* A multiply's alpha or beta (im 0 on real matrices). */
typedef struct tide_scalar {
    double re, im;
} tide_scalar;

static inline tide_scalar tide_scalar_real(double x) { return (tide_scalar){x, 0}; }
static inline int tide_scalar_is_zero(tide_scalar x) { return x.re == 0 && x.im == 0; }

/* Bytes of one element of d's matrices. */
static inline size_t tide_gemm_elem(const tide_gemm_desc *d)
{
    return (d->dbl ? sizeof(double) : sizeof(float)) * (d->cplx ? 2 : 1);
}

/* Real operations per term of op(A) op(B) (one multiply and one add): 2, complex 8. */
static inline double tide_gemm_ops(const tide_gemm_desc *d) { return d->cplx ? 8.0 : 2.0; }

/* What a plan's ops run with, made at plan creation; execution only reads it. */
typedef struct {
    tide_context *ctx;
    const struct tide_backend_ops *be;
    int threads;
    tide_exchange exchange;   /* MPI exchange of host data (A2AV, P2P or AUTO) */
    tide_exchange transport;  /* GPU: how reshapes move device data */
    void *nccl;               /* GPU: the context's tide_nccl, or NULL */
    void *stream;             /* GPU: the plan's stream */
    void *fft_work;           /* GPU: the work area every local FFT of the plan shares */
    size_t fft_work_bytes;
    void *sendbuf, *recvbuf;  /* exchange staging in the backend's memory */
    void *hsend, *hrecv;      /* GPU: pinned host staging for exchanges through host memory */
    size_t sbytes, rbytes;
    int failed;               /* a program's failure so far, for its collective ops (program.h);
                               * 0 otherwise */
    int out_kept;             /* GPU: the caller's output array stays allocated as long as the
                               * plan (tide_fft_options' arrays_kept), so reshapes into it may
                               * take the peers' direct stores (program.h) */
} tide_env;

/* A band matrix's pass (src/band): `steps` steps y = A x (tide.h's arithmetic) on an array of
 * `rows` consecutive rows of the matrix (a rank's rows grown by their halo; every array row is
 * a matrix row), from src into dst (both laid out as the array, src unchanged), of which dst
 * receives the rows [out_lo, out_hi) alone. diag (the backend's memory) holds the array's rows
 * of A diagonal-major: A(i, i + d) at (d + kl) * rows + i. A term whose column lies outside
 * the array is skipped: the array's edges are the matrix's, or the halo is deep enough that
 * the rows needing such a term are not computed. Step t of s computes the rows
 * [out_lo - (s - t) kl, out_hi + (s - t) ku) clipped to the array, from those of step t - 1, so
 * after s steps the out rows are exact when out_lo >= s kl or the array starts at row 0, and
 * rows - out_hi >= s ku or the array ends at the matrix's end. */
typedef struct tide_band_pass {
    int dbl;
    int kl, ku;
    int rows;
    int out_lo, out_hi;
    const void *diag;
    int max_steps;        /* the most steps one pass may do (set by band_create) */
    void *state;          /* the backend's: work memory (band_create) */
    size_t state_bytes;   /* host memory the state holds */
} tide_band_pass;

typedef struct tide_backend_ops {
    const char *name;
    int gpu;
    /* Work memory in the backend's memory; free accepts NULL. */
    int (*alloc)(size_t bytes, void **ptr);
    void (*free)(void *ptr);
    /* GPU only (NULL on the CPU): pinned host memory for staging; the plan's stream; where
     * a caller's pointer points (1 device memory, 0 host memory, -1 unknown). */
    int (*host_alloc)(size_t bytes, void **ptr);
    void (*host_free)(void *ptr);
    int (*stream_create)(void **stream, int urgent); /* urgent: tide_gpu_stream_create's */
    void (*stream_destroy)(void *stream);
    int (*pointer_kind)(const void *ptr);
    /* Copy bytes within or into or out of the backend's memory, in the plan's order. */
    int (*copy)(const tide_env *e, void *dst, const void *src, size_t bytes);
    /* The permuting copy of comm/region.h within the backend's memory: region from src (laid
     * out as sbox) into dst (laid out as dbox), elements of elem bytes. */
    int (*copy_region)(const tide_env *e, size_t elem, const tide_box *region, const void *src,
                       const tide_box *sbox, void *dst, const tide_box *dbox);
    /* Collective: fills the halo of a, or issues part of it (comm/halo.h; in the backend's
     * memory, the halo made with device = gpu). */
    int (*halo)(const tide_env *e, const tide_halo *h, void *a, tide_halo_part part);
    /* Multiply count scalars (double or float) by s. */
    int (*scale)(const tide_env *e, int dbl, void *data, long long count, double s);
    /* Apply the spectral operator d to data (in place): the diagonal scaling, or the line
     * solves. */
    int (*spectral)(const tide_env *e, const tide_spectral *d, void *data);
    /* Whether spectral transforms a periodic line of n points itself (tide_spectral's
     * line_fft), in double precision when dbl; NULL: never. */
    int (*spectral_line_fft)(int n, int dbl);
    /* Stencil sweeps (tide_sweep). sweep_create prepares s (its tables and work memory in
     * s->state) for sweeps of up to `fuse` steps, or with fuse 0 up to as many as the backend
     * chooses, and sets s->max_fuse to that count; a fuse beyond what the backend can do is
     * TIDE_ERR_ARGUMENT with the limit in err. sweep runs one sweep of steps (1 .. max_fuse)
     * from src into dst. sweep_destroy frees s's state (also after a failed create). */
    int (*sweep_create)(const tide_env *e, tide_sweep *s, int fuse, char *err, size_t len);
    int (*sweep)(const tide_env *e, const tide_sweep *s, const void *src, void *dst, int steps);
    void (*sweep_destroy)(const tide_env *e, tide_sweep *s);
    /* Band matrix passes (tide_band_pass): band_create prepares b for passes of up to `steps`
     * steps (its work memory in b->state; it reads b's dbl, kl and ku alone) and sets
     * b->max_steps to it, or with steps 0 to the backend's choice; more than the backend can
     * do is TIDE_ERR_ARGUMENT with the limit in err. band runs one pass of steps (1 ..
     * max_steps) from src into dst. band_destroy frees b's state (also after a failed
     * create). */
    int (*band_create)(const tide_env *e, tide_band_pass *b, int steps, char *err, size_t len);
    int (*band)(const tide_env *e, const tide_band_pass *b, const void *src, void *dst,
                int steps);
    void (*band_destroy)(const tide_env *e, tide_band_pass *b);
    /* Matrix multiplies (tide_gemm_desc): gemm_create makes what they need in *h (the GPU: a
     * cuBLAS handle; the CPU: nothing), gemm enqueues one on e's stream (the CPU: runs it with
     * e's threads), gemm_destroy frees h (NULL accepted). */
    int (*gemm_create)(void **h);
    int (*gemm)(const tide_env *e, void *h, const tide_gemm_desc *d, tide_scalar alpha,
                const void *a, const void *b, tide_scalar beta, void *c);
    void (*gemm_destroy)(void *h);
    /* Local FFTs: plan (the work area the transform needs is added to *work), attach the
     * plan's work area and stream (GPU), run, free. */
    int (*fft_create)(const tide_cpu_fft_desc *d, void **f, size_t *work, char *err,
                      size_t len);
    int (*fft_bind)(const tide_env *e, void *f);
    int (*fft_execute)(const tide_env *e, const void *f, void *in, void *out);
    /* A transform that overwrites its input (c2r) run from in into out with stage (as large as
     * in) as work space, in left as it is: where its first pass can write stage in place of
     * a copy of in. TIDE_ERR_UNSUPPORTED, nothing started, where it cannot; NULL: never. */
    int (*fft_execute_staged)(const tide_env *e, const void *f, const void *in, void *stage,
                              void *out);
    void (*fft_destroy)(void *f);
    /* Reshapes between layouts (comm/): create (part_from, part_to: the part of the points it
     * moves, comm/reshape.h; NULL: all), run from src into dst on e's stream. GPU: flags are
     * comm/reshape.h's TIDE_RESHAPE_* (0 on the CPU); with TIDE_RESHAPE_DEFER the run stops
     * once the data travels, and land (NULL on the CPU) copies the points kept and unpacks
     * what arrived on e's stream, which may be another one (tide_reshape_land_device;
     * e->recvbuf the run's). */
    int (*reshape_create)(const tide_env *e, const tide_box *from, const tide_box *to,
                          const tide_box *part_from, const tide_box *part_to, size_t elem,
                          int batch, tide_reshape **r, char *err, size_t len);
    int (*reshape_execute)(const tide_env *e, const tide_reshape *r, const void *src,
                           void *dst, int flags);
    int (*reshape_land)(const tide_env *e, const tide_reshape *r, const void *src, void *dst,
                        int status);
    /* Wait until everything the plan enqueued is done (0 on the CPU). */
    int (*sync)(const tide_env *e);
    /* The message of the backend's last failure ("" when it keeps none). */
    const char *(*last_error)(void);
} tide_backend_ops;

extern const tide_backend_ops tide_backend_cpu;
/* The CPU's stencil sweeps (stencil_cpu.c), the entries of tide_backend_cpu. */
int tide_cpu_sweep_create(const tide_env *e, tide_sweep *s, int fuse, char *err, size_t len);
int tide_cpu_sweep(const tide_env *e, const tide_sweep *s, const void *src, void *dst,
                   int steps);
void tide_cpu_sweep_destroy(tide_sweep *s);
/* The CPU's band matrix passes (band_cpu.c), the entries of tide_backend_cpu. */
int tide_cpu_band_create(const tide_env *e, tide_band_pass *b, int steps, char *err,
                         size_t len);
int tide_cpu_band(const tide_env *e, const tide_band_pass *b, const void *src, void *dst,
                  int steps);
void tide_cpu_band_destroy(const tide_env *e, tide_band_pass *b);
/* The CUDA backend (in a build without CUDA its entries fail: gpu/none.c). */
const tide_backend_ops *tide_backend_cuda(void);

/* Ordering with the caller's CUDA work (nothing to do on a context without GPUs).
 * tide_order_create: an event for tide_order_after, made on a context with GPUs (NULL on
 * others). tide_order_after: what comes next is ordered after the work queued on `caller` (a
 * cudaStream_t, NULL: the legacy default stream) before this call: `stream` waits for it on
 * the device, or with stream NULL the calling thread waits. */
int tide_order_create(const tide_context *ctx, void **event);
void tide_order_destroy(void *event);
int tide_order_after(void *event, void *caller, void *stream);

/* Every call on a context with GPUs runs with the context's GPU current and gives the calling
 * thread its current device back: enter remembers it in *prev (-1 on other contexts). */
int tide_device_enter(const tide_context *ctx, int *prev);
void tide_device_leave(int prev);

#endif
