/*
 * test_gemm.c: matrix multiply (tide_gemm_*), real and complex, checked against the naive
 * oracle (tide_ref_gemm, apps/reference.c: every entry a dot product in long double, no Tide
 * code and no BLAS involved): a result passes when every entry (each part of a complex one)
 * lies within the rounding bound of its dot product (tide_ref_gemm_error <= 1).
 *
 * Run under mpiexec with 1 to 6 ranks; with TIDE_TEST_BACKEND=cuda on the GPU (host matrices
 * streamed through it, or with TIDE_TEST_LOCATION=device device matrices from
 * tide_device_alloc), skipped (77) where no GPU is usable. On the GPU the test moves its data
 * with plain CUDA calls right before each multiply: A and C poisoned with NaN bytes and written
 * by copies queued on the plan's stream behind a delay (host matrices: pinned ones from
 * tide_host_alloc, alternating with plain pageable ones; device matrices: device-to-device
 * copies, alternating with pageable cudaMemcpy on the legacy stream); the plan's stream is the
 * legacy default stream or the test's own non-blocking one (given as the stream option or by
 * tide_gemm_plan_set_stream). A multiply not ordered after that work reads NaN and fails.
 *
 * Complex cases (domain TIDE_COMPLEX, interleaved (re, im) elements) run beside the real ones
 * in every group below, fewer of them where the oracle's cost matters (its complex dot
 * products cost four times the real ones); their scalars are complex (alpha or beta imaginary,
 * beta 0 on NaN, alpha 0 among them), given by tide_gemm_execute_complex, or as real ones by
 * tide_gemm_execute where their imaginary parts are 0; real plans too are multiplied by
 * tide_gemm_execute_complex at times (imaginary parts 0). op is N, T or C (the conjugate
 * transpose) on complex and on real matrices (where C must equal T).
 *
 *  a) the oracle's own conventions on products worked by hand, real and complex (op C, complex
 *     alpha and beta); its bounds at their edges (a real and a complex entry a few ulps
 *     within and beyond them), and far beyond them for a complex result whose conjugation was
 *     forgotten or whose parts were swapped;
 *  b) more than one rank: the distributed multiply over every process grid of the ranks (the
 *     library's and each p x P/p), odd, prime and tiny shapes with blocks empty on some ranks,
 *     every op combination (N, T, C), both orders and precisions, real and complex (per grid
 *     the 16 real combinations of each shape, and 6 complex ones per shape, all 36 of op,
 *     order and precision over the shapes), leading dimensions that differ between ranks
 *     with NaN padding left alone, panels of 5; each rank's block of C checked against the
 *     oracle on the global matrices; on the CPU backend, or on the GPU with host matrices
 *     the cuda backend (the ranks sharing the GPU, each update streamed through it, tiles of 8
 *     in some cases; pinned blocks written by copies queued on the plan's stream behind a
 *     delay, or pageable ones), or with TIDE_TEST_LOCATION=device device blocks (cuBLAS
 *     updates, the panels over NCCL where every rank has a GPU of its own, else by MPI on
 *     device pointers where it takes them, else through host memory, or every case the way
 *     TIDE_TEST_EXCHANGE=nccl, cuda-mpi or p2p says, which the plan's description must say;
 *     written by copies queued behind a delay, or by plain cudaMemcpy); the user's blocks
 *     (random boundaries, empty blocks among them, every third case complex) on every grid;
 *     bad input (a grid of the wrong size, a negative size, k or transb differing on one rank,
 *     complex on one rank alone, a leading dimension too small on one rank, blocks that do not
 *     tile the matrix, that differ between ranks or are given on one rank alone; a real plan
 *     given a complex alpha, or NULL for beta; option exchange direct, out of range, nccl or
 *     cuda-mpi on the CPU or on host matrices, or differing on one rank) the same error on
 *     every rank, C left alone; the test stops there;
 *  c) one rank: odd, prime, tall-skinny and empty shapes (k = 0, m = 0, n = 0), every transa and
 *     transb (N, T, C), both orders, float and double, real (16 combinations per shape, a
 *     transposed operand's op T or C in turn) and complex (all 36 combinations of op, order
 *     and precision over each two small shapes, over each four medium ones, 2 on a 3.2M
 *     multiply-add shape, none on 257^3), leading dimensions at the minimum (given as 0 or
 *     explicitly) and beyond it with the padding full of NaN that must be neither read nor
 *     written, alpha and beta edge cases (alpha 0, beta 0 with C full of NaN, beta 1, negative
 *     values, complex ones), empty matrices passed as NULL; each plan executed twice with
 *     fresh data and other alpha and beta, each result compared over the whole matrix; info
 *     (shape, flops 2 m n k or complex 8 m n k, backend, location, the tiling fields) and
 *     describe (its head: the shape, "[complex ]double|float", the op letters of NTC, the
 *     order); small tile and panel options forcing many tiles, partial edge tiles and several
 *     panels on the GPU host path (real and complex);
 *  d) a context with a device budget of 1 MiB, far below the matrices: many tiles and panels
 *     (GPU host path only; a complex case among them); on several ranks three distributed
 *     cases (one complex) whose blocks of C exceed it, so that each update streams C through
 *     the GPU, and a check that the plans of b) kept C on the device across their updates
 *     (their descriptions say which);
 *  e) the one-shot tide_gemm, default options (NULL) and given ones, a complex plan among them;
 *  g) the gpus option (GPU host path, one rank): gpus 1, and with the argument several-gpus
 *     (a test of its own, SKIP (77) where the rank drives one GPU) 2 to all the GPUs the rank
 *     may drive, C's columns shared among them (uneven parts, fewer columns than GPUs, tiles
 *     forced small), every op combination (one of four complex, op(B) = B^H), info.gpus; on
 *     two GPUs or more A shared between them (share_a 1, info.shared_a), not (-1) and as the
 *     model decides (0); more GPUs than the rank's share and beyond the limit fail
 *     TIDE_ERR_ARGUMENT. With gpus 0 (every other case) a rank alone on a node of several
 *     GPUs drives all of them;
 *  f) bad input: negative sizes, leading dimensions below the minimum, unknown enums (transa 3,
 *     domain -1 and 2 among them), options not from the init function, negative tile or panel,
 *     gpus negative or above 16, a device location on the CPU backend (the code
 *     tide_stencil_plan_create gives), NULL matrices with elements, NULL alpha or beta, a
 *     real plan given a complex alpha or beta, a host matrix given to a device plan and the
 *     reverse: the same code on every rank, a message, outputs left alone; then the plan
 *     (real, and a complex one with op(B) = B^H) still multiplies right; empty matrices
 *     accepted as NULL (a complex k = 0 multiply too, C times i exactly).
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tide_config.h"
#if TIDE_HAVE_CUDA
#include <cuda_runtime.h>
#endif
#include "common.h"
#include "reference.h"
#include "tide.h"

static MPI_Comm world;
static int rank, nranks;
static tt_tally tally;
static int gpu;            /* TIDE_TEST_BACKEND=cuda: the context runs on the GPU */
static int on_device;      /* TIDE_TEST_LOCATION=device: A, B and C in device memory */
static int verbose;        /* TIDE_TEST_VERBOSE=1: name each case as it starts */
static tide_context *ctx;  /* the context of the cases (every rank of MPI_COMM_WORLD) */
static int nccl_panels;    /* device blocks on several ranks, each with a GPU of its own, in a
                            * build with NCCL: the plans must move their panels over NCCL */
static int aware;          /* every rank's MPI takes device pointers */
static int forced = -1;    /* TIDE_TEST_EXCHANGE: every distributed case's option exchange
                            * (device blocks), or -1 (AUTO) */
static int c_kept[2];      /* distributed plans on the GPU that keep C on the device across
                            * the updates (1) or stream it in each (0), by their description */
static tide_backend backend;

#define BIT(code) (1u << (code))
static const unsigned ARG = BIT(TIDE_ERR_ARGUMENT), UNSUP = BIT(TIDE_ERR_UNSUPPORTED),
                      MISM = BIT(TIDE_ERR_MISMATCH);
/* What a failed create must leave in the plan pointer: an address no allocation returns. */
static char plan_sentinel_storage;
#define PLAN_SENTINEL ((tide_gemm_plan *)&plan_sentinel_storage)

static void *xdup(const void *src, size_t bytes)
{
    return memcpy(tt_xmalloc(bytes), src, bytes);
}

static double rnd(tt_rng *rng)
{
    /* 53 random bits: [-1, 1), with full mantissas (so rounding to float matters). */
    return (double)(tt_rng_next(rng) >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0;
}

/* ---- matrices ------------------------------------------------------------------------------- */

/* One matrix as stored: rows x cols in `order` with leading dimension ld (in elements);
 * complex elements (cplx) are two values, the real part first. */
typedef struct {
    long long rows, cols, ld;
    tide_matrix_order order;
    int dbl, cplx;
} gmat;

/* Values (float or double) per element. */
static int gmat_vals(const gmat *x) { return x->cplx ? 2 : 1; }

/* Bytes of one element. */
static size_t gmat_elem(const gmat *x)
{
    return (size_t)gmat_vals(x) * (x->dbl ? sizeof(double) : sizeof(float));
}

static long long min_ld(const gmat *x)
{
    long long need = x->order == TIDE_COL_MAJOR ? x->rows : x->cols;
    return need > 1 ? need : 1;
}

static size_t gmat_count(const gmat *x)
{
    long long lines = x->order == TIDE_COL_MAJOR ? x->cols : x->rows;
    return (size_t)(lines * x->ld);
}

/* Bytes of the array (at least one element, so that every matrix has an allocation). */
static size_t gmat_bytes(const gmat *x)
{
    size_t n = gmat_count(x);
    return (n ? n : 1) * gmat_elem(x);
}

static int is_padding(const gmat *x, size_t e)
{
    long long within = (long long)(e % (size_t)x->ld);
    return within >= (x->order == TIDE_COL_MAJOR ? x->rows : x->cols);
}

static void put(void *a, int dbl, size_t e, double v)
{
    if (dbl)
        ((double *)a)[e] = v;
    else
        ((float *)a)[e] = (float)v;
}

static double get(const void *a, int dbl, size_t e)
{
    return dbl ? ((const double *)a)[e] : ((const float *)a)[e];
}

/* Random values in [-1, 1) in the matrix (both parts of a complex element), NaN in the
 * padding (and everywhere with nan_all). */
static void gmat_fill(const gmat *x, void *a, int nan_all, tt_rng *rng)
{
    size_t n = gmat_count(x), w = (size_t)gmat_vals(x);
    for (size_t q = 0; q < w; q++)
        put(a, x->dbl, q, NAN); /* the spare element of an empty matrix */
    for (size_t e = 0; e < n; e++)
        for (size_t q = 0; q < w; q++)
            put(a, x->dbl, e * w + q, nan_all || is_padding(x, e) ? NAN : rnd(rng));
}

/* Whether the padding of got is bitwise the padding of want. */
static int padding_intact(const gmat *x, const void *got, const void *want)
{
    size_t es = gmat_elem(x), n = gmat_count(x);
    for (size_t e = 0; e < n; e++)
        if (is_padding(x, e) && memcmp((const char *)got + e * es, (const char *)want + e * es, es))
            return 0;
    return 1;
}

/* ---- cases ---------------------------------------------------------------------------------- */

typedef struct {
    long long m, n, k;
    int dbl, cplx;     /* double; complex elements (domain TIDE_COMPLEX) */
    tide_matrix_order order;
    tide_transpose ta, tb;
    long long pad[3];  /* A, B, C: extra leading dimension; -1: the minimum, given as 0 */
    int tile, panel;   /* options; 0: the plan's choice */
    int gpus;          /* option gpus (GPU host path) */
    int share_a;       /* option share_a */
    double alpha[2][2], beta[2][2]; /* of the two executions, {real, imaginary} */
    int cplx_call;     /* tide_gemm_execute_complex also where the imaginary parts are 0 (it
                        * must be where they are not) */
    int null_empty;    /* pass an empty matrix as NULL */
    int stream_mode;   /* GPU: 0 the legacy stream, 1 own stream as option, 2 by set_stream */
    unsigned seed;
    char name[320];
} gcase;

/* The three matrices of a case: A stored m x k (k x m transposed), B k x n (n x k), C m x n. */
static void case_mats(const gcase *g, gmat x[3])
{
    long long r[3] = {g->ta ? g->k : g->m, g->tb ? g->n : g->k, g->m};
    long long c[3] = {g->ta ? g->m : g->k, g->tb ? g->k : g->n, g->n};
    for (int i = 0; i < 3; i++) {
        x[i] = (gmat){r[i], c[i], 1, g->order, g->dbl, g->cplx};
        x[i].ld = min_ld(&x[i]) + (g->pad[i] > 0 ? g->pad[i] : 0);
    }
}

static void case_options(const gcase *g, const gmat x[3], tide_gemm_options *o)
{
    tide_gemm_options_init(o);
    o->precision = g->dbl ? TIDE_DOUBLE : TIDE_FLOAT;
    o->domain = g->cplx ? TIDE_COMPLEX : TIDE_REAL;
    o->location = on_device ? TIDE_LOCATION_DEVICE : TIDE_LOCATION_HOST;
    o->order = g->order;
    o->transa = g->ta;
    o->transb = g->tb;
    o->lda = g->pad[0] < 0 ? 0 : x[0].ld;
    o->ldb = g->pad[1] < 0 ? 0 : x[1].ld;
    o->ldc = g->pad[2] < 0 ? 0 : x[2].ld;
    o->tile = g->tile;
    o->panel = g->panel;
    o->gpus = g->gpus;
    o->share_a = g->share_a;
}

/* A scalar for a message: "1.5", complex "1.5-2i". */
static const char *scalar_str(const double v[2], int cplx, char *buf, size_t len)
{
    if (cplx)
        snprintf(buf, len, "%g%+gi", v[0], v[1]);
    else
        snprintf(buf, len, "%g", v[0]);
    return buf;
}

/* "double", "complex float", ...; and op(X)'s letter: N, T or C (the conjugate transpose). */
static const char *elem_name(int dbl, int cplx)
{
    return cplx ? (dbl ? "complex double" : "complex float") : dbl ? "double" : "float";
}

static char op_letter(tide_transpose t) { return "NTC"[t]; }

static void name_case(gcase *g, const char *kind)
{
    gmat x[3];
    case_mats(g, x);
    char sc[4][48];
    snprintf(g->name, sizeof g->name,
             "%s %lldx%lldx%lld %s %s %c%c ld %lld,%lld,%lld%s tile %d panel %d alpha %s,%s "
             "beta %s,%s%s seed %u",
             kind, g->m, g->n, g->k, elem_name(g->dbl, g->cplx),
             g->order == TIDE_COL_MAJOR ? "col" : "row", op_letter(g->ta), op_letter(g->tb),
             x[0].ld, x[1].ld, x[2].ld, g->pad[0] < 0 ? " (A's as 0)" : "", g->tile, g->panel,
             scalar_str(g->alpha[0], g->cplx, sc[0], 48),
             scalar_str(g->alpha[1], g->cplx, sc[1], 48),
             scalar_str(g->beta[0], g->cplx, sc[2], 48), scalar_str(g->beta[1], g->cplx, sc[3], 48),
             g->cplx_call ? " execute_complex" : "", g->seed);
}

/* alpha and beta {re, im, re, im}: beta 0 fills C with NaN, which must be ignored. The real
 * cases' pairs, then the complex cases': alpha or beta imaginary, one of them 0, both
 * complex. */
static const double AB[][4] = {{1, 0, 0, 0},  {1, 0, 1, 0},       {-0.75, 0, 0.5, 0},
                               {0, 0, 1.5, 0}, {0, 0, 0, 0},       {2.5, 0, -1, 0},
                               {-1, 0, 0, 0},  {0.3, 0, -2.25, 0}, {1, 0, -1, 0},
                               {0, 0, -1, 0}};
static const double ABZ[][4] = {{1, 0, 0, 0},    {0, 1, 1, 0},        {-0.75, 0.5, 0, 0},
                                {0, 0, 1.5, -1}, {0, 0, 0, 0},        {2.5, -1, 0.5, 0.25},
                                {1, 0, 0, 1},    {0.3, -2.25, -1, 0}, {0, -1, 0, 0},
                                {1, 1, 1, -1},   {-1, 0, 1, 0}};
enum { NAB = (int)(sizeof AB / sizeof AB[0]), NABZ = (int)(sizeof ABZ / sizeof ABZ[0]) };

/* A case's combination: bits transa, transb (each op(X) = X^T), order, double, complex, and
 * whether a transposed A or B is the conjugate transpose (on real matrices the same). */
enum { C_TA = 1, C_TB = 2, C_ROW = 4, C_DBL = 8, C_CPLX = 16, C_CA = 32, C_CB = 64 };

/* Combination q of the 36 of every transa and transb (N, T, C), order and precision. */
static int combo_of(int q)
{
    int ta = q % 3, tb = q / 3 % 3;
    return (ta ? C_TA : 0) | (ta == 2 ? C_CA : 0) | (tb ? C_TB : 0) | (tb == 2 ? C_CB : 0) |
           (q / 9 % 2 ? C_ROW : 0) | (q / 18 % 2 ? C_DBL : 0);
}

static tide_transpose trans_of(int combo, int t, int c)
{
    return !(combo & t) ? TIDE_NOTRANS : combo & c ? TIDE_CONJTRANS : TIDE_TRANS;
}

/* Case number idx of a shape with combination combo (C_* bits). */
static void build_case(gcase *g, const long long s[3], int combo, int idx, int tile, int panel,
                       const char *kind)
{
    memset(g, 0, sizeof *g);
    g->m = s[0], g->n = s[1], g->k = s[2];
    g->ta = trans_of(combo, C_TA, C_CA);
    g->tb = trans_of(combo, C_TB, C_CB);
    g->order = combo & C_ROW ? TIDE_ROW_MAJOR : TIDE_COL_MAJOR;
    g->dbl = (combo & C_DBL) != 0;
    g->cplx = (combo & C_CPLX) != 0;
    g->seed = 7000u + 131u * (unsigned)idx;
    tt_rng rng;
    tt_rng_seed(&rng, g->seed);
    for (int i = 0; i < 3; i++) {
        int pick = tt_rng_below(&rng, 4); /* the minimum as 0, explicit, or 1..5 beyond */
        g->pad[i] = pick == 0 ? -1 : pick == 1 ? 0 : 1 + tt_rng_below(&rng, 5);
    }
    for (int r = 0; r < 2; r++) {
        int p = idx * 3 + r * 7;
        const double *ab = g->cplx ? ABZ[p % NABZ] : AB[p % NAB];
        g->alpha[r][0] = ab[0], g->alpha[r][1] = ab[1];
        g->beta[r][0] = ab[2], g->beta[r][1] = ab[3];
    }
    /* complex plans mostly through tide_gemm_execute_complex, real ones at times */
    g->cplx_call = g->cplx ? idx % 3 != 0 : idx % 5 == 2;
    g->tile = tile;
    g->panel = panel;
    g->null_empty = idx % 2;
    g->stream_mode = idx % 3;
    name_case(g, kind);
}

/* ---- moving the data: plain C on the CPU, plain CUDA calls on the GPU ----------------------- */

/* The arrays of one execution: host images of A, B and C (whole arrays, padding included); on
 * return c holds the result and a, b what the arrays held afterwards. */
typedef struct {
    void *h[3];
    size_t bytes[3];
    int pass_null[3]; /* pass NULL for that matrix */
} garrays;

static void *arg_of(const garrays *g, void *const p[3], int i)
{
    return g->pass_null[i] ? NULL : p[i];
}

/* The multiply: tide_gemm_execute_complex with cx or where an imaginary part is not 0, else
 * tide_gemm_execute with the real parts. */
static int gemm_call(tide_gemm_plan *plan, const double alpha[2], const void *a, const void *b,
                     const double beta[2], void *c, int cx)
{
    if (cx || alpha[1] != 0 || beta[1] != 0)
        return tide_gemm_execute_complex(plan, alpha, a, b, beta, c);
    return tide_gemm_execute(plan, alpha[0], a, b, beta[0], c);
}

static int execute_host(tide_gemm_plan *plan, const double alpha[2], const double beta[2],
                        int cx, garrays *g)
{
    return gemm_call(plan, alpha, arg_of(g, g->h, 0), arg_of(g, g->h, 1), beta,
                     arg_of(g, g->h, 2), cx);
}

#if TIDE_HAVE_CUDA
#define CU TT_CU

enum { DELAY_MS = 5 };

/* Writes host images h[0] (A) and h[2] (C) into dst[0], dst[2] (host or device) by copies
 * queued on stream behind a delay, dst poisoned with NaN bytes first. stage[]: device copies
 * of the images, freed by the caller. */
static void queue_writes(garrays *g, void *dst[3], void *stage[3], cudaStream_t stream,
                         int dst_on_device)
{
    for (int i = 0; i < 3; i += 2) {
        CU(cudaMalloc(&stage[i], g->bytes[i]));
        CU(cudaMemcpy(stage[i], g->h[i], g->bytes[i], cudaMemcpyHostToDevice));
        if (dst_on_device)
            CU(cudaMemset(dst[i], 0xff, g->bytes[i]));
        else
            memset(dst[i], 0xff, g->bytes[i]);
    }
    CU(cudaDeviceSynchronize()); /* the poison lands before the queued copies */
    CU(cudaLaunchHostFunc(stream, tt_sleep_on_stream, (void *)(intptr_t)DELAY_MS));
    for (int i = 0; i < 3; i += 2)
        CU(cudaMemcpyAsync(dst[i], stage[i], g->bytes[i],
                           dst_on_device ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost,
                           stream));
}

static void xalloc(int device, size_t bytes, void **p)
{
    int st = device ? tide_device_alloc(ctx, bytes, p) : tide_host_alloc(ctx, bytes, p);
    if (st != 0) {
        fprintf(stderr, "test_gemm: tide_%s_alloc: %s\n", device ? "device" : "host",
                tide_last_error(ctx));
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

/* Pinned host matrices (tide_host_alloc) or device ones, A and C written by queued copies
 * (device matrices with `queued` 0 on the legacy stream: by pageable cudaMemcpy, which may
 * return before the data has landed). empty: the multiply has nothing to do, so it need not
 * wait for the copies. */
static int execute_gpu(tide_gemm_plan *plan, const double alpha[2], const double beta[2],
                       int cx, garrays *g, cudaStream_t stream, int queued, int empty)
{
    void *p[3], *stage[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++)
        xalloc(on_device, g->bytes[i], &p[i]);
    CU(cudaMemcpy(p[1], g->h[1], g->bytes[1], cudaMemcpyDefault));
    if (queued || stream || !on_device)
        queue_writes(g, p, stage, stream, on_device);
    else
        for (int i = 0; i < 3; i += 2)
            CU(cudaMemcpy(p[i], g->h[i], g->bytes[i], cudaMemcpyHostToDevice));
    int st = gemm_call(plan, alpha, arg_of(g, p, 0), arg_of(g, p, 1), beta, arg_of(g, p, 2),
                       cx);
    if (st != 0 || empty)
        CU(cudaStreamSynchronize(stream));
    for (int i = 0; i < 3; i++)
        CU(cudaMemcpy(g->h[i], p[i], g->bytes[i], cudaMemcpyDefault));
    CU(cudaDeviceSynchronize());
    for (int i = 0; i < 3; i++) {
        if (stage[i])
            CU(cudaFree(stage[i]));
        if (on_device)
            tide_device_free(ctx, p[i]);
        else
            tide_host_free(ctx, p[i]);
    }
    return st;
}
#endif

/* One execution the way the mode under test moves data. call: a counter picking the variant
 * (GPU host: pageable or pinned; device: queued or plain copies); cx: gemm_call's. */
static int execute(tide_gemm_plan *plan, const double alpha[2], const double beta[2], int cx,
                   garrays *g, void *stream, int call, int empty)
{
#if TIDE_HAVE_CUDA
    if (gpu && (on_device || call % 2))
        return execute_gpu(plan, alpha, beta, cx, g, (cudaStream_t)stream, call % 2, empty);
#else
    (void)stream;
    (void)call;
    (void)empty;
#endif
    return execute_host(plan, alpha, beta, cx, g);
}

/* ---- checking a result ---------------------------------------------------------------------- */

/* The first entry of C beyond the bound, for the failure message. */
static void first_bad(const gcase *g, const gmat *xc, const void *c, const double *ref,
                      const double *scale, char *out, size_t len)
{
    snprintf(out, len, "no entry beyond the bound");
    int w = gmat_vals(xc);
    for (long long i = 0; i < g->m; i++)
        for (long long j = 0; j < g->n; j++) {
            long long e = (i * g->n + j) * w;
            double err = tide_ref_gemm_error(g->dbl, g->cplx, g->order, g->k, c, xc->ld, i,
                                             i + 1, j, j + 1, ref + e, scale + e);
            if (!(err <= 1)) {
                size_t at = g->order == TIDE_COL_MAJOR ? (size_t)(i + j * xc->ld)
                                                       : (size_t)(i * xc->ld + j);
                double got[2] = {get(c, g->dbl, at * (size_t)w), 0};
                got[1] = g->cplx ? get(c, g->dbl, at * 2 + 1) : 0;
                char gs[64], ws[64], ss[64];
                snprintf(out, len, "first at (%lld,%lld): got %s want %s scale %s (error %.3g "
                         "bounds)", i, j, scalar_str(got, g->cplx, gs, sizeof gs),
                         scalar_str(ref + e, g->cplx, ws, sizeof ws),
                         scalar_str(scale + e, g->cplx, ss, sizeof ss), err);
                return;
            }
        }
}

/* C (result) against the oracle on A, B, C0 (inputs); A and B bitwise untouched, C's padding
 * too. Returns the largest error in bounds. */
static double check_result(const gcase *g, int run, const gmat x[3], void *const in[3],
                           const garrays *out)
{
    size_t mn = (size_t)(g->m * g->n) * (size_t)gmat_vals(&x[2]);
    double *ref = tt_xmalloc(mn * sizeof *ref), *scale = tt_xmalloc(mn * sizeof *scale);
    int rst = tide_ref_gemm(g->dbl, g->cplx, g->order, g->ta, g->tb, g->m, g->n, g->k,
                            g->alpha[run], in[0], x[0].ld, in[1], x[1].ld, g->beta[run], in[2],
                            x[2].ld, 0, g->m, 0, g->n, ref, scale);
    double err = rst ? NAN : tide_ref_gemm_error(g->dbl, g->cplx, g->order, g->k, out->h[2],
                                                  x[2].ld, 0, g->m, 0, g->n, ref, scale);
    char bad[320] = "";
    if (!(err <= 1))
        first_bad(g, &x[2], out->h[2], ref, scale, bad, sizeof bad);
    tt_check(&tally, world, rst == 0 && err <= 1,
             "c) %s: run %d: error %.3g bounds (oracle status %d): %s", g->name, run + 1, err,
             rst, bad);
    tt_check(&tally, world, !memcmp(out->h[0], in[0], out->bytes[0]) &&
                                !memcmp(out->h[1], in[1], out->bytes[1]),
             "c) %s: run %d: A or B (or their NaN padding) written", g->name, run + 1);
    tt_check(&tally, world, padding_intact(&x[2], out->h[2], in[2]),
             "c) %s: run %d: C's NaN padding written", g->name, run + 1);
    free(ref);
    free(scale);
    return rst ? NAN : err;
}

/* ---- c) the cases --------------------------------------------------------------------------- */

static long long ceil_div(long long a, long long b) { return b > 0 ? (a + b - 1) / b : 0; }

/* info and describe of a case's plan. many: the tile options must give several tiles and
 * panels (GPU host path). */
static void check_info(const gcase *g, tide_gemm_plan *plan, int many)
{
    tide_gemm_info info;
    memset(&info, 0xab, sizeof info);
    int st = tide_gemm_plan_info(plan, &info);
    double flops = (g->cplx ? 8.0 : 2.0) * (double)g->m * (double)g->n * (double)g->k;
    tide_location loc = on_device ? TIDE_LOCATION_DEVICE : TIDE_LOCATION_HOST;
    tt_check(&tally, world, st == 0 && info.m == g->m && info.n == g->n && info.k == g->k &&
                                info.flops == flops && info.backend == backend &&
                                info.location == loc,
             "c) %s: info: status %d, %lldx%lldx%lld, flops %g (want %g), backend %d (want %d), "
             "location %d (want %d)", g->name, st, info.m, info.n, info.k, info.flops, flops,
             (int)info.backend, (int)backend, (int)info.location, (int)loc);
    int tiled = gpu && !on_device, forced = g->tile > 0 && g->panel > 0;
    if (st == 0 && !tiled)
        tt_check(&tally, world, !info.tile_m && !info.tile_n && !info.panel && !info.tiles &&
                                    !info.panels,
                 "c) %s: info: tiling fields %lld, %lld, %lld, %d, %d not zero off the GPU "
                 "host path", g->name, info.tile_m, info.tile_n, info.panel, info.tiles,
                 info.panels);
    if (st == 0 && tiled && g->m * g->n * g->k > 0 && (forced || many)) {
        /* tile and panel options are bounds, so they set the fewest tiles and panels. */
        long long tiles = forced ? ceil_div(g->m, g->tile) * ceil_div(g->n, g->tile) : 1;
        long long panels = forced ? ceil_div(g->k, g->panel) : 1;
        int sized = !forced || (info.tile_m <= g->tile && info.tile_n <= g->tile &&
                                info.panel <= g->panel);
        tt_check(&tally, world, sized && info.tiles >= tiles && info.panels >= panels &&
                                    (!many || (info.tiles > 1 && info.panels > 1)),
                 "c) %s: info: %d tiles of %lldx%lld (want at least %lld%s), %d panels of %lld "
                 "(want at least %lld%s)", g->name, info.tiles, info.tile_m, info.tile_n,
                 many && tiles < 2 ? 2 : tiles, forced ? ", within the tile option" : "",
                 info.panels, info.panel, many && panels < 2 ? 2 : panels,
                 forced ? ", within the panel option" : "");
    }
    char desc[512], tiny[16];
    memset(desc, 0, sizeof desc);
    st = tide_gemm_plan_describe(plan, desc, sizeof desc);
    /* it begins with the shape, the elements, the ops and the order */
    char head[160];
    snprintf(head, sizeof head, "gemm %lldx%lldx%lld %s %c%c %s ", g->m, g->n, g->k,
             elem_name(g->dbl, g->cplx), op_letter(g->ta), op_letter(g->tb),
             g->order == TIDE_COL_MAJOR ? "col" : "row");
    tt_check(&tally, world, st == 0 && memchr(desc, 0, sizeof desc) &&
                                !strncmp(desc, head, strlen(head)),
             "c) %s: describe: status %d, \"%s\" (want it to begin \"%s\")", g->name, st, desc,
             head);
    if (verbose)
        printf("  describe: %s\n", desc);
    memset(tiny, 'Z', sizeof tiny);
    st = tide_gemm_plan_describe(plan, tiny, 10);
    int intact = 1;
    for (int i = 10; i < 16; i++)
        intact = intact && tiny[i] == 'Z';
    tt_check(&tally, world, intact && (st != 0 || memchr(tiny, 0, 10)),
             "c) %s: describe into 10 bytes wrote past them or left no terminator (status %d)",
             g->name, st);
}

/* The plan of a case on the context c; the stream as option or by set_stream. */
static int case_plan(tide_context *c, const gcase *g, void *stream, tide_gemm_plan **plan)
{
    gmat x[3];
    case_mats(g, x);
    tide_gemm_options o;
    case_options(g, x, &o);
    o.stream = g->stream_mode == 1 ? stream : NULL;
    int st = tide_gemm_plan_create(c, g->m, g->n, g->k, &o, plan);
    if (st == 0 && g->stream_mode == 2)
        st = tide_gemm_plan_set_stream(*plan, stream);
    return st;
}

/* One case: a plan, two executions on fresh data. Returns the largest error in bounds. */
static double run_case(tide_context *c, const gcase *g, int index, int many)
{
    if (verbose) {
        printf("  case %d: %s\n", index, g->name);
        fflush(stdout);
    }
    void *stream = NULL;
#if TIDE_HAVE_CUDA
    if (gpu && g->stream_mode) {
        cudaStream_t s;
        CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        stream = s;
    }
#endif
    tide_gemm_plan *plan = NULL;
    int st = case_plan(c, g, stream, &plan);
    double worst = 0;
    if (tt_check(&tally, world, st == 0, "c) %s: plan: %s: %s", g->name, tide_strerror(st),
                 tide_last_error(c))) {
        check_info(g, plan, many);
        gmat x[3];
        case_mats(g, x);
        tt_rng rng;
        tt_rng_seed(&rng, g->seed * 31u + 7u);
        long long elems[3] = {g->m * g->k, g->k * g->n, g->m * g->n};
        for (int run = 0; run < 2; run++) {
            garrays a;
            void *in[3];
            for (int i = 0; i < 3; i++) {
                a.bytes[i] = gmat_bytes(&x[i]);
                in[i] = tt_xmalloc(a.bytes[i]);
                gmat_fill(&x[i], in[i], i == 2 && !g->beta[run][0] && !g->beta[run][1], &rng);
                a.h[i] = xdup(in[i], a.bytes[i]);
                a.pass_null[i] = g->null_empty && elems[i] == 0;
            }
            st = execute(plan, g->alpha[run], g->beta[run], g->cplx_call, &a, stream,
                         index + run, elems[2] == 0);
            if (tt_check(&tally, world, st == 0, "c) %s: run %d: %s: %s", g->name, run + 1,
                         tide_strerror(st), tide_last_error(c))) {
                double e = check_result(g, run, x, in, &a);
                worst = tt_max_nan(worst, e);
            }
            for (int i = 0; i < 3; i++) {
                free(in[i]);
                free(a.h[i]);
            }
        }
    }
    tide_gemm_plan_destroy(plan);
#if TIDE_HAVE_CUDA
    if (stream)
        CU(cudaStreamDestroy((cudaStream_t)stream));
#endif
    return worst;
}

/* Odd, prime, tall-skinny, square and empty shapes (m, n, k). */
static const long long SHAPES[][3] = {
    {1, 1, 1},    {7, 1, 31},    {1, 7, 1},      {1, 1, 97},   {31, 97, 7},  {97, 31, 129},
    {129, 7, 97}, {257, 129, 97}, {1000, 3, 17}, {3, 1000, 17}, {17, 3, 1000}, {64, 64, 64},
    {257, 257, 257}, {7, 7, 0},  {31, 1, 0},     {0, 7, 7},    {7, 0, 7},    {0, 0, 0}};
enum { NSHAPES = (int)(sizeof SHAPES / sizeof SHAPES[0]) };

/* Tile and panel options forcing many tiles (partial edge tiles) and several panels. */
static const struct {
    long long s[3];
    int tile, panel;
} TILED[] = {{{257, 129, 97}, 32, 16}, {{31, 97, 129}, 7, 5}, {{1000, 3, 17}, 100, 4},
             {{129, 257, 64}, 64, 16}};
enum { NTILED = (int)(sizeof TILED / sizeof TILED[0]) };

/* The real cases of a shape take the 16 combinations of transa, transb, order and precision,
 * a transposed A or B the conjugate transpose in turn (shape after shape: every op of N, T and
 * C); the complex cases one of every `stride` of the 36 (combo_of), from the shape's number
 * on, so that neighbouring shapes take every op, order and precision between them; fewer on
 * larger shapes, none (0) on 257^3, whose one complex case would cost the oracle as much as
 * a fifth of all the others (its complex dot products cost four times the real ones). */
static int complex_stride(const long long s[3])
{
    double mnk = (double)s[0] * (double)s[1] * (double)s[2];
    return mnk <= 6e4 ? 2 : mnk <= 5e5 ? 4 : mnk <= 4e6 ? 18 : 0;
}

/* The cases of one shape (sn its number); worst[cplx] gets the largest error in bounds. */
static void shape_cases(const long long s[3], int sn, int tile, int panel, const char *kind,
                        int many, int *count, double worst[2])
{
    int stride = complex_stride(s);
    for (int c = 0; c < 16 + 36; c++) {
        int combo;
        if (c < 16) {
            int conj = (sn + c) % 4;
            combo = c | (conj & 1 ? C_CA : 0) | (conj & 2 ? C_CB : 0);
        } else if (stride && (c - 16) % stride == sn % stride) {
            combo = combo_of(c - 16) | C_CPLX;
        } else {
            continue;
        }
        gcase g;
        build_case(&g, s, combo, *count, tile, panel, kind);
        double e = run_case(ctx, &g, *count, many);
        worst[g.cplx] = tt_max_nan(worst[g.cplx], e);
        ++*count;
    }
}

static void cases(void)
{
    double t0 = MPI_Wtime(), worst[2] = {0, 0};
    int before = tally.failed, count = 0;
    for (int s = 0; s < NSHAPES; s++)
        shape_cases(SHAPES[s], s, 0, 0, "case", 0, &count, worst);
    for (int t = 0; t < NTILED; t++)
        shape_cases(TILED[t].s, t, TILED[t].tile, TILED[t].panel, "tiled", 1, &count, worst);
    if (rank == 0)
        printf("  c) %d cases, 2 runs each: %d failed checks, largest error %.3g bounds real, "
               "%.3g complex (%.1f s)\n", count, tally.failed - before, worst[0], worst[1],
               MPI_Wtime() - t0);
}

/* ---- d) a small device budget --------------------------------------------------------------- */

static void dist_case(long long m, long long n, long long k, int combo, const int grid[2],
                      const long long *const blocks[4], const double alpha[2],
                      const double beta[2], uint64_t seed, int on_gpu);

static void small_budget(const tide_context_options *copts)
{
    if (!gpu || on_device)
        return;
    int kept_before[2] = {c_kept[0], c_kept[1]};
    double t0 = MPI_Wtime();
    int before = tally.failed;
    tide_context_options o = *copts;
    o.device_budget = (size_t)1 << 20;
    tide_context *small = NULL;
    int st = tide_context_create(world, &o, &small);
    if (!tt_check(&tally, world, st == 0, "d) context with a 1 MiB budget: %s: %s",
                  tide_strerror(st), tide_last_error(NULL)))
        return;
    static const long long s[3][3] = {{600, 500, 700}, {611, 487, 703}, {301, 250, 349}};
    /* double col NN; float row TN; complex double col NC */
    static const int combos[3] = {C_DBL, C_ROW | C_TA, C_CPLX | C_DBL | C_TB | C_CB};
    static const double ab[3][4] = {{1.5, 0, -1, 0}, {1.5, 0, 0, 0}, {1.5, -0.5, 0.5, 1}};
    const long long *balanced[4] = {NULL, NULL, NULL, NULL};
    const int lib_grid[2] = {0, 0};
    for (int c = 0; c < 3; c++) {
        if (nranks > 1) { /* each rank's block of C (above 1.8 MB on up to 3 ranks) beyond the
                           * budget: streamed in each update */
            tide_context *keep = ctx;
            ctx = small;
            dist_case(900 + c, 800 - c, 70, combos[c], lib_grid, balanced, ab[c], ab[c] + 2,
                      5100 + (uint64_t)c, 1);
            ctx = keep;
            continue;
        }
        gcase g;
        build_case(&g, s[c], combos[c], 5000 + c, 0, 0, "budget 1 MiB");
        run_case(small, &g, 5000 + c, 1);
    }
    tide_context_destroy(small);
    if (nranks > 1) /* both ways a rank's C can go through its updates were taken */
        tt_check(&tally, world, c_kept[1] > 0 && c_kept[0] > kept_before[0],
                 "d) distributed plans keeping C on the device across their updates: %d, "
                 "streaming it in each (1 MiB budget): %d", c_kept[1], c_kept[0] - kept_before[0]);
    if (rank == 0)
        printf("  d) 1 MiB device budget: %d failed checks (%.1f s)\n", tally.failed - before,
               MPI_Wtime() - t0);
}

/* ---- g) the gpus option --------------------------------------------------------------------- */

static void expect(const char *tag, const char *what, int st, unsigned allowed, int untouched);

/* The info of a plan with options gpus = want and share_a (-1 for gpus when the plan fails,
 * its status in *st). */
static tide_gemm_info plan_gpus_info(int want, int share_a, int *st)
{
    gcase g;
    static const long long s[3] = {64, 4096, 64};
    build_case(&g, s, 0, 7000, 0, 0, "gpus");
    g.gpus = want;
    g.share_a = share_a;
    gmat x[3];
    case_mats(&g, x);
    tide_gemm_options o;
    case_options(&g, x, &o);
    tide_gemm_plan *plan = NULL;
    tide_gemm_info info = {0};
    *st = tide_gemm_plan_create(ctx, g.m, g.n, g.k, &o, &plan);
    if (!*st)
        tide_gemm_plan_info(plan, &info);
    else
        info.gpus = -1;
    tide_gemm_plan_destroy(plan);
    return info;
}

static int plan_gpus(int want, int *st) { return plan_gpus_info(want, 0, st).gpus; }

/* The GPUs a plan with gpus 0 drives on this rank (its share of the node's), 0 when that plan
 * fails. */
static int gpu_share(void)
{
    int st, share = plan_gpus(0, &st);
    tt_check(&tally, world, share >= 1, "g) plan with gpus 0: %s: %s (gpus %d)",
             tide_strerror(st), tide_last_error(ctx), share);
    return share >= 1 ? share : 0;
}

/* Option gpus from lo to hi (at most the rank's share): each count's cases, and that a plan
 * asking for hi gets them; from 2 on A shared or not as asked; beyond the share refused. */
static void gpus_option(int lo, int hi, int share)
{
    double t0 = MPI_Wtime();
    int before = tally.failed, st;
    static const long long s[][3] = {{97, 301, 129}, {31, 1, 7}, {129, 513, 97}, {7, 3, 1000}};
    int count = 0;
    for (int want = lo; want <= hi; want++)
        for (int c = 0; c < 4; c++)
            for (int combo = 0; combo < 16; combo += 5, count++) {
                gcase g;
                /* combination 10 (double col NT) complex, op(B) = B^H */
                build_case(&g, s[c], combo == 10 ? combo | C_CPLX | C_CB : combo, 7100 + count,
                           c == 2 ? 64 : 0, c == 2 ? 32 : 0, "gpus");
                g.gpus = want;
                /* A shared (forced) in two of the four combinations, never, as the model says */
                g.share_a = combo == 5 ? 0 : combo == 15 ? -1 : 1;
                snprintf(g.name + strlen(g.name), sizeof g.name - strlen(g.name), " gpus %d "
                         "share_a %d", want, g.share_a);
                run_case(ctx, &g, 7100 + count, 0);
            }
    int got = plan_gpus(hi, &st);
    tt_check(&tally, world, got == hi, "g) plan with gpus %d runs on %d GPUs", hi, got);
    for (int v = -1; v <= 1 && hi > 1; v += 2) { /* A (64 x 64) fits every GPU whole */
        tide_gemm_info in = plan_gpus_info(hi, v, &st);
        tt_check(&tally, world, !st && in.shared_a == (v > 0), "g) gpus %d share_a %d: %s, "
                 "info.shared_a %d", hi, v, tide_strerror(st), in.shared_a);
    }
    if (share + 1 <= 16) {
        plan_gpus(share + 1, &st);
        expect("g", "gpus beyond the rank's share", st, ARG, 1);
    }
    if (rank == 0)
        printf("  g) option gpus %d..%d of the rank's %d: %d cases, %d failed checks (%.1f s)\n",
               lo, hi, share, count, tally.failed - before, MPI_Wtime() - t0);
}

/* ---- e) the one-shot call ------------------------------------------------------------------- */

/* tide_gemm with opts NULL (double, column major, no transposes, host) and with a case's,
 * a complex one among them (tide_gemm's alpha and beta are real). */
static void one_shot(void)
{
    int before = tally.failed;
    for (int c = 0; c < 4; c++) {
        static const long long s[4][3] = {{97, 31, 129}, {31, 257, 7}, {1, 1, 1}, {37, 23, 41}};
        static const int combos[4] = {C_DBL, C_ROW | C_TB, C_ROW | C_TA | C_TB,
                                      C_CPLX | C_ROW | C_TA | C_CA};
        gcase g;
        build_case(&g, s[c], combos[c], 6000 + c, 0, 0, "one-shot");
        g.alpha[0][1] = g.beta[0][1] = 0;
        g.cplx_call = 0;
        int defaults = c == 0 && !on_device;
        if (defaults)
            g.pad[0] = g.pad[1] = g.pad[2] = -1;
        name_case(&g, "one-shot");
        gmat x[3];
        case_mats(&g, x);
        tide_gemm_options o;
        case_options(&g, x, &o);
        tt_rng rng;
        tt_rng_seed(&rng, g.seed);
        void *in[3], *h[3];
        size_t bytes[3];
        for (int i = 0; i < 3; i++) {
            bytes[i] = gmat_bytes(&x[i]);
            in[i] = tt_xmalloc(bytes[i]);
            gmat_fill(&x[i], in[i], i == 2 && g.beta[0][0] == 0, &rng);
            h[i] = xdup(in[i], bytes[i]);
        }
        void *p[3] = {h[0], h[1], h[2]};
#if TIDE_HAVE_CUDA
        for (int i = 0; on_device && i < 3; i++) {
            xalloc(1, bytes[i], &p[i]);
            CU(cudaMemcpy(p[i], h[i], bytes[i], cudaMemcpyHostToDevice));
        }
#endif
        int st = tide_gemm(ctx, g.m, g.n, g.k, g.alpha[0][0], p[0], p[1], g.beta[0][0], p[2],
                           defaults ? NULL : &o);
#if TIDE_HAVE_CUDA
        for (int i = 0; on_device && i < 3; i++) {
            CU(cudaMemcpy(h[i], p[i], bytes[i], cudaMemcpyDeviceToHost));
            tide_device_free(ctx, p[i]);
        }
#endif
        garrays out = {{h[0], h[1], h[2]}, {bytes[0], bytes[1], bytes[2]}, {0, 0, 0}};
        if (tt_check(&tally, world, st == 0, "e) %s%s: %s: %s", g.name,
                     defaults ? " (options NULL)" : "", tide_strerror(st),
                     tide_last_error(ctx)))
            check_result(&g, 0, x, in, &out);
        for (int i = 0; i < 3; i++) {
            free(in[i]);
            free(h[i]);
        }
    }
    if (rank == 0)
        printf("  e) one-shot tide_gemm: %d failed checks\n", tally.failed - before);
}

/* ---- a) the oracle -------------------------------------------------------------------------- */

/* The complex oracle on products worked by hand: A = [1+2i 3-i; i 2] (2 x 2), B = [2-i; 1+3i]
 * (2 x 1): A B = [10+11i; 3+8i], the real products' magnitudes [10; 3] for the real parts
 * (|1 2| + |2 -1| + |3 1| + |-1 3|, ...) and [15; 8] for the imaginary ones. Given as A^H and
 * B^H stored, op = C; with alpha i, beta 1-i and C0 = [1+i; 2]: [-9+10i; -6+i], magnitudes
 * [17 12; 10 5]. Returns whether all held. */
static int oracle_complex(void)
{
    const double a[8] = {1, 2, 0, 1, 3, -1, 2, 0};   /* A column major */
    const double ah[8] = {1, -2, 3, 1, 0, -1, 2, 0}; /* A^H column major */
    const double b[4] = {2, -1, 1, 3}, bh[4] = {2, 1, 1, -3}; /* B, B^H (1 x 2) */
    const double c0[4] = {1, 1, 2, 0};
    const double one[2] = {1, 0}, zero[2] = {0, 0}, ai[2] = {0, 1}, b1[2] = {1, -1};
    double ref[4], scale[4];
    int ok = 1;
    int st = tide_ref_gemm(1, 1, TIDE_COL_MAJOR, TIDE_NOTRANS, TIDE_NOTRANS, 2, 1, 2, one, a, 2,
                           b, 2, zero, NULL, 2, 0, 2, 0, 1, ref, scale);
    ok = ok && st == 0 && ref[0] == 10 && ref[1] == 11 && ref[2] == 3 && ref[3] == 8;
    ok = ok && scale[0] == 10 && scale[1] == 15 && scale[2] == 3 && scale[3] == 8;
    /* row major: B (2 x 1) stores the same; A transposed */
    const double a_row[8] = {1, 2, 3, -1, 0, 1, 2, 0};
    st = tide_ref_gemm(1, 1, TIDE_ROW_MAJOR, TIDE_NOTRANS, TIDE_NOTRANS, 2, 1, 2, one, a_row, 2,
                       b, 1, zero, NULL, 1, 1, 2, 0, 1, ref, scale);
    ok = ok && st == 0 && ref[0] == 3 && ref[1] == 8;
    st = tide_ref_gemm(1, 1, TIDE_COL_MAJOR, TIDE_CONJTRANS, TIDE_CONJTRANS, 2, 1, 2, ai, ah, 2,
                       bh, 1, b1, c0, 2, 0, 2, 0, 1, ref, scale);
    ok = ok && st == 0 && ref[0] == -9 && ref[1] == 10 && ref[2] == -6 && ref[3] == 1;
    ok = ok && scale[0] == 17 && scale[1] == 12 && scale[2] == 10 && scale[3] == 5;
    tt_check(&tally, world, ok, "a) oracle: complex products worked by hand (op N, and C with "
             "complex alpha and beta)");
    /* the bound per part, (k + 4) u scale + u |ref| for complex: with k 2, ref 10 + 11i and
     * scale [10, 15], 4 ulps of 10 (64 u) are within 70 u, 5 are not; 6 ulps of 11 (96 u)
     * within 101 u, 7 not */
    const double r2[2] = {10, 11}, s2[2] = {10, 15}, ulp = 0x1p-49;
    double c1[2] = {10 + 4 * ulp, 11 - 6 * ulp}, c2[2] = {10 - 5 * ulp, 11}, c3[2] = {10,
                                                                               11 + 7 * ulp};
    double e1 = tide_ref_gemm_error(1, 1, TIDE_COL_MAJOR, 2, c1, 1, 0, 1, 0, 1, r2, s2);
    double e2 = tide_ref_gemm_error(1, 1, TIDE_COL_MAJOR, 2, c2, 1, 0, 1, 0, 1, r2, s2);
    double e3 = tide_ref_gemm_error(1, 1, TIDE_COL_MAJOR, 2, c3, 1, 0, 1, 0, 1, r2, s2);
    /* ... and the real one, (k + 2) u scale + u |ref|: 4 ulps of 10 beyond 50 u */
    double e4 = tide_ref_gemm_error(1, 0, TIDE_COL_MAJOR, 2, c1, 1, 0, 1, 0, 1, r2, s2);
    tt_check(&tally, world, e1 > 0.9 && e1 <= 1 && e2 > 1 && e3 > 1 && e4 > 1,
             "a) oracle: errors %g (want within the complex bound), %g, %g (want beyond), real "
             "%g (want beyond)", e1, e2, e3, e4);
    /* wrong results far beyond: the conjugation forgotten (op T for C), or the parts swapped */
    const double want[4] = {10, 11, 3, 8}, swapped[4] = {11, 10, 8, 3};
    st = tide_ref_gemm(1, 1, TIDE_COL_MAJOR, TIDE_TRANS, TIDE_NOTRANS, 2, 1, 2, one, ah, 2, b,
                       2, zero, NULL, 2, 0, 2, 0, 1, ref, scale);
    double e5 = tide_ref_gemm_error(1, 1, TIDE_COL_MAJOR, 2, want, 2, 0, 2, 0, 1, ref, scale);
    int st2 = tide_ref_gemm(1, 1, TIDE_COL_MAJOR, TIDE_NOTRANS, TIDE_NOTRANS, 2, 1, 2, one, a, 2,
                            b, 2, zero, NULL, 2, 0, 2, 0, 1, ref, scale);
    double e6 = tide_ref_gemm_error(1, 1, TIDE_COL_MAJOR, 2, swapped, 2, 0, 2, 0, 1, ref, scale);
    tt_check(&tally, world, st == 0 && st2 == 0 && e5 > 1e6 && e6 > 1e6,
             "a) oracle: conjugation forgotten %g bounds, parts swapped %g (want far beyond 1)",
             e5, e6);
    return ok;
}

static void oracle_selftest(void)
{
    /* A = [1 2 3; 4 5 6] (2 x 3), B = [1 0; 0 1; 2 -1] (3 x 2): A B = [7 -1; 16 -1]. */
    const double a_col[6] = {1, 4, 2, 5, 3, 6}, b_col[6] = {1, 0, 2, 0, 1, -1};
    const double a_row[6] = {1, 2, 3, 4, 5, 6}, b_row[6] = {1, 0, 0, 1, 2, -1};
    const double at_col[6] = {1, 2, 3, 4, 5, 6}; /* A^T (3 x 2) column major = A row major */
    const double c0[4] = {1, NAN, 2, 3};         /* column major, padded: ldc 2 */
    const double one[2] = {1, 0}, zero[2] = {0, 0}, two[2] = {2, 0}, minus1[2] = {-1, 0};
    double ref[4], scale[4];
    int ok = 1;
    int st = tide_ref_gemm(1, 0, TIDE_COL_MAJOR, TIDE_NOTRANS, TIDE_NOTRANS, 2, 2, 3, one, a_col,
                           2, b_col, 3, zero, NULL, 2, 0, 2, 0, 2, ref, scale);
    ok = ok && st == 0 && ref[0] == 7 && ref[1] == -1 && ref[2] == 16 && ref[3] == -1;
    ok = ok && scale[0] == 7 && scale[1] == 5 && scale[2] == 16 && scale[3] == 11;
    st = tide_ref_gemm(1, 0, TIDE_ROW_MAJOR, TIDE_NOTRANS, TIDE_NOTRANS, 2, 2, 3, one, a_row, 3,
                       b_row, 2, zero, NULL, 2, 1, 2, 0, 2, ref, scale);
    ok = ok && st == 0 && ref[0] == 16 && ref[1] == -1;
    /* op(A) = (A^T)^T, op(B) = (B^T)^T with B^T column major = B row major; beta C0; on real
     * matrices the conjugate transpose is the transpose */
    for (int t = TIDE_TRANS; t <= TIDE_CONJTRANS; t++) {
        st = tide_ref_gemm(1, 0, TIDE_COL_MAJOR, (tide_transpose)t, (tide_transpose)t, 2, 2, 3,
                           two, at_col, 3, b_row, 2, minus1, c0, 2, 0, 2, 1, 2, ref, scale);
        ok = ok && st == 0 && ref[0] == 2 * -1 - 2 && ref[1] == 2 * -1 - 3 &&
             scale[0] == 2 * 5 + 2 && scale[1] == 2 * 11 + 3;
    }
    tt_check(&tally, world, ok, "a) oracle: products worked by hand");
    float cf[4] = {7, NAN, -1, 0}; /* 2 x 1, ldc 2 */
    double rf[2] = {7, -1}, sf[2] = {1, 0};
    double e0 = tide_ref_gemm_error(0, 0, TIDE_COL_MAJOR, 3, cf, 2, 0, 1, 0, 1, rf, sf);
    double e1 = tide_ref_gemm_error(0, 0, TIDE_COL_MAJOR, 3, cf, 2, 0, 2, 0, 1, rf, sf);
    cf[2] = -1.5f;
    double e2 = tide_ref_gemm_error(0, 0, TIDE_ROW_MAJOR, 3, cf, 2, 1, 2, 0, 1, rf + 1, sf + 1);
    tt_check(&tally, world, e0 == 0 && isinf(e1) && isinf(e2),
             "a) oracle: error %g (want 0), NaN in C %g, scale 0 differing %g (want inf)", e0,
             e1, e2);
    st = tide_ref_gemm(1, 0, TIDE_COL_MAJOR, TIDE_NOTRANS, TIDE_NOTRANS, 2, 2, 3, one, a_col, 2,
                       b_col, 3, zero, NULL, 2, 0, 3, 0, 2, ref, scale);
    int st2 = tide_ref_gemm(1, 0, TIDE_COL_MAJOR, TIDE_NOTRANS, TIDE_NOTRANS, 2, 2, 3, one, a_col,
                            1, b_col, 3, zero, NULL, 2, 0, 2, 0, 2, ref, scale);
    const double ai[2] = {1, 0.5};
    int st3 = tide_ref_gemm(1, 0, TIDE_COL_MAJOR, TIDE_NOTRANS, TIDE_NOTRANS, 2, 2, 3, ai, a_col,
                            2, b_col, 3, zero, NULL, 2, 0, 2, 0, 2, ref, scale);
    int st4 = tide_ref_gemm(1, 1, TIDE_COL_MAJOR, (tide_transpose)3, TIDE_NOTRANS, 1, 1, 1, one,
                            a_col, 1, b_col, 1, zero, NULL, 1, 0, 1, 0, 1, ref, scale);
    tt_check(&tally, world, st == TIDE_ERR_ARGUMENT && st2 == TIDE_ERR_ARGUMENT &&
                                st3 == TIDE_ERR_ARGUMENT && st4 == TIDE_ERR_ARGUMENT,
             "a) oracle: rows [0,3) of 2, lda 1 < 2, a complex alpha on real matrices or transa "
             "3 accepted: %d, %d, %d, %d", st, st2, st3, st4);
    oracle_complex();
    if (rank == 0)
        printf("  a) the oracle on products worked by hand: %d failed checks\n", tally.failed);
}

/* ---- b) and f) errors ----------------------------------------------------------------------- */

static void expect(const char *tag, const char *what, int st, unsigned allowed, int untouched)
{
    tt_expect_error(&tally, world, tag, what, st, tide_last_error(ctx), allowed, untouched, 1);
}

/* m, n, k of the error cases, and options every error case spoils one field of. */
enum { EM = 9, EN = 8, EK = 7 };

static void base_options(tide_gemm_options *o)
{
    tide_gemm_options_init(o);
    o->location = on_device ? TIDE_LOCATION_DEVICE : TIDE_LOCATION_HOST;
}

/* An EM x EN x EK plan with options o that the error tests go on with (what: the check's
 * name), or NULL with the failure counted. */
static tide_gemm_plan *error_plan(const tide_gemm_options *o, const char *what)
{
    tide_gemm_plan *plan = NULL;
    int st = tide_gemm_plan_create(ctx, EM, EN, EK, o, &plan);
    return tt_check(&tally, world, st == 0, "%s: %s (%s)", what, tide_strerror(st),
                    tide_last_error(ctx))
               ? plan
               : NULL;
}

static void expect_create(const char *tag, const char *what, long long m, long long n,
                          long long k, const tide_gemm_options *o, unsigned allowed)
{
    tide_gemm_plan *plan = PLAN_SENTINEL;
    int st = tide_gemm_plan_create(ctx, m, n, k, o, &plan);
    if (st == 0 && plan != PLAN_SENTINEL)
        tide_gemm_plan_destroy(plan); /* a call that wrongly succeeded must not leak */
    expect(tag, what, st, allowed, plan == PLAN_SENTINEL);
}

/* ---- b) more than one rank: the distributed multiply ------------------------------------- */

/* Element (i, j) of a stored matrix. */
static size_t at(const gmat *x, long long i, long long j)
{
    return (size_t)(x->order == TIDE_COL_MAJOR ? i + j * x->ld : i * x->ld + j);
}

/* Block i of n over p, as tide.h defines the distribution: the user's boundaries, or
 * balanced. */
static void dist_block(const long long *given, long long n, int p, int i, long long *lo,
                       long long *hi)
{
    *lo = given ? given[i] : n * i / p;
    *hi = given ? given[i + 1] : n * (i + 1) / p;
}

/* This rank's block [r0, r1) x [c0, c1) of the global matrix g (array ga) into a local matrix
 * with leading dimension ld (NaN in its padding). */
static void *local_block(const gmat *g, const void *ga, long long r0, long long r1,
                         long long c0, long long c1, long long pad, gmat *lx)
{
    *lx = (gmat){r1 - r0, c1 - c0, 0, g->order, g->dbl, g->cplx};
    lx->ld = min_ld(lx) + pad;
    void *la = tt_xmalloc(gmat_bytes(lx));
    size_t n = gmat_count(lx), w = (size_t)gmat_vals(lx);
    for (size_t e = 0; e < (n ? n : 1) * w; e++) /* the spare element of an empty block */
        put(la, lx->dbl, e, NAN);
    for (long long i = 0; i < lx->rows; i++)
        for (long long j = 0; j < lx->cols; j++)
            for (size_t q = 0; q < w; q++)
                put(la, lx->dbl, at(lx, i, j) * w + q,
                    get(ga, g->dbl, at(g, r0 + i, c0 + j) * w + q));
    return la;
}

/* One distributed case: every rank makes the same global A, B, C0 from the seed, keeps its
 * blocks, multiplies, and checks its block of C against the oracle on the global matrices.
 * on_gpu: the cuda backend on host matrices, every rank's updates through the GPU; with an
 * odd seed the blocks pinned and A and C written by copies queued behind a delay on the
 * legacy stream (the plan's), else pageable; C tiles of 8 when the seed is a multiple of 3.
 * With on_device, device blocks instead, written by queued copies (odd seed) or plain ones. */
static void dist_case(long long m, long long n, long long k, int combo, const int grid[2],
                      const long long *const blocks[4], const double alpha[2],
                      const double beta[2], uint64_t seed, int on_gpu)
{
    int dbl = (combo & C_DBL) != 0, cplx = (combo & C_CPLX) != 0;
    tide_matrix_order order = combo & C_ROW ? TIDE_ROW_MAJOR : TIDE_COL_MAJOR;
    tide_transpose ta = trans_of(combo, C_TA, C_CA), tb = trans_of(combo, C_TB, C_CB);
    /* A stored m x k (k x m transposed), B k x n (n x k) */
    gmat g[3] = {{ta ? k : m, ta ? m : k, 0, order, dbl, cplx},
                 {tb ? n : k, tb ? k : n, 0, order, dbl, cplx}, {m, n, 0, order, dbl, cplx}};
    void *ga[3];
    tt_rng rng;
    tt_rng_seed(&rng, seed);
    for (int i = 0; i < 3; i++) {
        g[i].ld = min_ld(&g[i]);
        ga[i] = tt_xmalloc(gmat_bytes(&g[i]));
        gmat_fill(&g[i], ga[i], i == 2 && !beta[0] && !beta[1], &rng);
    }
    int gr[2] = {grid[0], grid[1]};
    if (!gr[0]) { /* the most square grid, as the library picks it */
        gr[0] = 1;
        for (int r = 1; r * r <= nranks; r++)
            if (nranks % r == 0)
                gr[0] = r;
        gr[1] = nranks / gr[0];
    }
    int row = rank / gr[1], col = rank % gr[1];
    long long rm[2], cn[2], ka[2], kb[2];
    dist_block(blocks[0], m, gr[0], row, &rm[0], &rm[1]);
    dist_block(blocks[1], n, gr[1], col, &cn[0], &cn[1]);
    dist_block(blocks[2], k, gr[1], col, &ka[0], &ka[1]);
    dist_block(blocks[3], k, gr[0], row, &kb[0], &kb[1]);
    gmat lx[3];
    long long pad = rank % 3; /* leading dimensions differ between ranks */
    /* the blocks of op(A) and op(B) the rank holds, as stored */
    void *la = ta ? local_block(&g[0], ga[0], ka[0], ka[1], rm[0], rm[1], pad, &lx[0])
                  : local_block(&g[0], ga[0], rm[0], rm[1], ka[0], ka[1], pad, &lx[0]);
    void *lb = tb ? local_block(&g[1], ga[1], cn[0], cn[1], kb[0], kb[1], pad + 1, &lx[1])
                  : local_block(&g[1], ga[1], kb[0], kb[1], cn[0], cn[1], pad + 1, &lx[1]);
    void *lc = local_block(&g[2], ga[2], rm[0], rm[1], cn[0], cn[1], pad, &lx[2]);
    tide_gemm_options o;
    tide_gemm_options_init(&o);
    o.backend = on_gpu ? TIDE_BACKEND_CUDA : TIDE_BACKEND_CPU;
    o.precision = dbl ? TIDE_DOUBLE : TIDE_FLOAT;
    o.domain = cplx ? TIDE_COMPLEX : TIDE_REAL;
    o.order = order;
    o.transa = ta;
    o.transb = tb;
    o.grid[0] = grid[0], o.grid[1] = grid[1];
    for (int x = 0; x < 4; x++)
        o.blocks[x] = blocks[x];
    o.lda = lx[0].ld, o.ldb = lx[1].ld, o.ldc = lx[2].ld;
    o.location = on_gpu && on_device ? TIDE_LOCATION_DEVICE : TIDE_LOCATION_HOST;
    o.panel = 5; /* several panels per owner's block */
    o.tile = on_gpu && !on_device && seed % 3 == 0 ? 8 : 0;
    o.exchange = on_gpu && on_device && forced >= 0 ? (tide_exchange)forced : TIDE_EXCHANGE_AUTO;
    tide_gemm_plan *plan = NULL;
    int st = tide_gemm_plan_create(ctx, m, n, k, &o, &plan);
    char desc[400] = "";
    if (!st && on_gpu && !tide_gemm_plan_describe(plan, desc, sizeof desc) &&
        strstr(desc, "updates: cublas") == NULL && strstr(desc, "tile"))
        c_kept[strstr(desc, "C kept across the runs") != NULL]++;
    int cx = cplx ? seed % 3 != 0 : seed % 4 == 1; /* gemm_call's */
    if (!st && on_gpu && (seed % 2 || on_device)) {
#if TIDE_HAVE_CUDA
        garrays arr = {{la, lb, lc}, {gmat_bytes(&lx[0]), gmat_bytes(&lx[1]),
                                      gmat_bytes(&lx[2])}, {0, 0, 0}};
        st = execute_gpu(plan, alpha, beta, cx, &arr, NULL, (int)(seed % 2), m == 0 || n == 0);
#endif
    } else if (!st) {
        st = gemm_call(plan, alpha, la, lb, beta, lc, cx);
    }
    tide_gemm_plan_destroy(plan);
    long long bm = rm[1] - rm[0], bn = cn[1] - cn[0];
    size_t vals = (size_t)(bm * bn) * (size_t)gmat_vals(&g[2]);
    double *ref = tt_xmalloc(sizeof(double) * vals), *scale = tt_xmalloc(sizeof(double) * vals);
    double err = INFINITY;
    if (!st && !tide_ref_gemm(dbl, cplx, order, ta, tb, m, n, k, alpha, ga[0], g[0].ld, ga[1],
                              g[1].ld, beta, ga[2], g[2].ld, rm[0], rm[1], cn[0], cn[1], ref,
                              scale))
        err = bm > 0 && bn > 0 ? tide_ref_gemm_error(dbl, cplx, order, k, lc, lx[2].ld, 0, bm, 0,
                                                     bn, ref, scale)
                               : 0;
    if (!st && on_gpu && on_device) { /* the transport AUTO takes, or the one forced */
        int x = forced >= 0     ? forced
                : nccl_panels   ? TIDE_EXCHANGE_NCCL
                : aware         ? TIDE_EXCHANGE_CUDA_MPI
                                : TIDE_EXCHANGE_P2P;
        const char *want = x == TIDE_EXCHANGE_NCCL       ? " over nccl"
                           : x == TIDE_EXCHANGE_CUDA_MPI ? " over cuda-mpi"
                                                         : " through host memory";
        tt_check(&tally, world, strstr(desc, want) != NULL, "b) %lldx%lldx%lld on %d ranks: "
                 "the panels should go%s, but the plan is %s", m, n, k, nranks, want, desc);
    }
    int pad_ok = 1; /* C's padding (NaN) untouched */
    size_t w = (size_t)gmat_vals(&lx[2]);
    for (size_t e = 0; e < gmat_count(&lx[2]) * w; e++)
        pad_ok = pad_ok && (!is_padding(&lx[2], e / w) || isnan(get(lc, dbl, e)));
    char sa[48], sb[48];
    tt_check(&tally, world, st == 0 && err <= 1 && pad_ok,
             "b) %lldx%lldx%lld %s %s %c%c grid %dx%d%s alpha %s beta %s%s on %d ranks (%s%s): "
             "status %d (%s), rank %d's block [%lld,%lld)x[%lld,%lld) error %g bounds, "
             "padding %s", m, n, k, elem_name(dbl, cplx),
             order == TIDE_COL_MAJOR ? "col" : "row", op_letter(ta), op_letter(tb), gr[0],
             gr[1], blocks[0] ? " user blocks" : "", scalar_str(alpha, cplx, sa, sizeof sa),
             scalar_str(beta, cplx, sb, sizeof sb), cx ? " execute_complex" : "", nranks,
             !on_gpu ? "cpu" : on_device ? "cuda, device" : "cuda, host",
             !on_gpu ? "" : seed % 2 ? ", queued writes" : on_device ? "" : ", pageable", st,
             st ? tide_last_error(ctx) : "", rank, rm[0], rm[1], cn[0], cn[1], err,
             pad_ok ? "intact" : "written");
    free(ref), free(scale), free(la), free(lb), free(lc);
    for (int i = 0; i < 3; i++)
        free(ga[i]);
}

/* p + 1 sorted boundaries of n over p parts, random (some parts empty). */
static void random_splits(long long n, int p, tt_rng *rng, long long *out)
{
    out[0] = 0, out[p] = n;
    for (int i = 1; i < p; i++)
        out[i] = tt_rng_below(rng, (int)n + 1);
    for (int i = 1; i < p; i++) /* insertion sort of the inner cuts */
        for (int j = i; j > 1 && out[j] < out[j - 1]; j--) {
            long long t = out[j];
            out[j] = out[j - 1], out[j - 1] = t;
        }
}

/* Distributed cases over every process grid of the ranks, odd, prime and tiny shapes (blocks
 * empty on some ranks), every op combination, both orders and precisions, beta 0 on NaN
 * (on_gpu: dist_case's). */
static void dist_cases(int on_gpu)
{
    static const long long shapes[][3] = {{37, 29, 41}, {13, 17, 19}, {3, 5, 2},
                                          {1, 7, 11},   {20, 1, 9},   {8, 6, 0}};
    enum { NSH = (int)(sizeof shapes / sizeof shapes[0]) };
    static const double ab[][4] = {{1, 0, 0, 0}, {-0.75, 0, 1.5, 0}, {2.5, 0, 1, 0}};
    static const double abz[][4] = {{1, 0, 0, 0}, {-0.75, 0.5, 1.5, -1}, {0, 1, 0, 0},
                                    {2.5, -1, 1, 0.25}};
    const long long *balanced[4] = {NULL, NULL, NULL, NULL};
    int before = tally.failed, count = 0;
    for (int gi = 0; gi <= nranks; gi++) { /* gi 0: the library's grid, else gi x P / gi */
        if (gi && nranks % gi)
            continue;
        int grid[2] = {gi, gi ? nranks / gi : 0};
        /* per shape the 16 real combinations (a transposed operand's op T or C in turn) and 6
         * complex ones: the shapes take the 36 of combo_of between them */
        for (int sh = 0; sh < NSH; sh++)
            for (int c = 0; c < 16 + 6; c++, count++) {
                int conj = (sh + c + gi) % 4, combo;
                if (c < 16)
                    combo = (c & 1 ? C_DBL : 0) | (c & 2 ? C_ROW : 0) | (c & 4 ? C_TA : 0) |
                            (c & 8 ? C_TB : 0) | (conj & 1 ? C_CA : 0) | (conj & 2 ? C_CB : 0);
                else
                    combo = combo_of((sh * 6 + c - 16) % 36) | C_CPLX;
                const double *x = c < 16 ? ab[(sh + c) % 3] : abz[(sh + c) % 4];
                dist_case(shapes[sh][0], shapes[sh][1], shapes[sh][2], combo, grid, balanced, x,
                          x + 2, 1000 + (uint64_t)count, on_gpu);
            }
    }
    /* the user's blocks: random boundaries (the same on every rank), empty blocks among them */
    for (int gi = 1; gi <= nranks; gi++) {
        if (nranks % gi)
            continue;
        int grid[2] = {gi, nranks / gi};
        for (int c = 0; c < 8; c++, count++) {
            long long s3[3] = {5 + 9 * c, 3 + 11 * c, 1 + 7 * c}, ext[4], cuts[4][8];
            const long long *user[4];
            tt_rng rng;
            tt_rng_seed(&rng, 4000u + (unsigned)count);
            for (int x = 0; x < 4; x++) {
                int parts = grid[x == 0 || x == 3 ? 0 : 1];
                ext[x] = x == 0 ? s3[0] : x == 1 ? s3[1] : s3[2];
                random_splits(ext[x], parts, &rng, cuts[x]);
                user[x] = cuts[x];
            }
            /* every third complex, its transposes conjugate */
            int cplx = c % 3 == 1;
            int combo = (c & 1 ? C_DBL : 0) | (c & 2 ? C_ROW : 0) | (c & 4 ? C_TA : 0) |
                        ((c + 1) & 2 ? C_TB : 0) | (cplx ? C_CPLX | C_CA | C_CB : 0);
            double alpha[2] = {-0.5, cplx ? 0.75 : 0}, beta[2] = {0, 0};
            if (c % 3 && c != 4) /* beta 0 (C full of NaN) in real and complex cases */
                beta[0] = 1.25, beta[1] = cplx ? -0.5 : 0;
            dist_case(s3[0], s3[1], s3[2], combo, grid, user, alpha, beta,
                      3000 + (uint64_t)count, on_gpu);
        }
    }
    if (rank == 0)
        printf("  b) %d distributed cases on the %s backend: %d failed checks\n", count,
               on_gpu ? "cuda" : "cpu", tally.failed - before);
}

/* A real plan over the ranks (host matrices, cpu backend) given a complex alpha, or NULL for
 * beta: refused on every rank, C left alone. */
static void scalar_errors_over_ranks(void)
{
    tide_gemm_options o;
    base_options(&o);
    o.backend = TIDE_BACKEND_CPU;
    o.location = TIDE_LOCATION_HOST;
    tide_gemm_plan *plan = error_plan(&o, "b) real plan over the ranks");
    if (plan) {
        /* larger than any rank's blocks */
        double a[EM * EK], b[EK * EN], c[EM * EN], c0[EM * EN];
        tt_rng rng;
        tt_rng_seed(&rng, 616);
        for (int i = 0; i < EM * EN; i++)
            c[i] = c0[i] = rnd(&rng);
        for (int i = 0; i < EM * EK; i++)
            a[i] = rnd(&rng);
        for (int i = 0; i < EK * EN; i++)
            b[i] = rnd(&rng);
        const double alpha[2] = {1, 0.5}, one[2] = {1, 0};
        int st = tide_gemm_execute_complex(plan, alpha, a, b, one, c);
        expect("b", "real plan over the ranks, alpha 1+0.5i", st, ARG, !memcmp(c, c0, sizeof c));
        st = tide_gemm_execute_complex(plan, one, a, b, NULL, c);
        expect("b", "plan over the ranks, beta NULL", st, ARG, !memcmp(c, c0, sizeof c));
    }
    tide_gemm_plan_destroy(plan);
}

/* b) more than one rank: the distributed cases (on the GPU, host matrices through it or device
 * matrices), bad input. */
static void many_ranks(void)
{
    dist_cases(gpu);
    tide_gemm_options o;
    base_options(&o);
    o.backend = TIDE_BACKEND_CPU;
    o.grid[0] = nranks + 1, o.grid[1] = 1;
    expect_create("b", "grid of more ranks than the context has", EM, EN, EK, &o, ARG);
    base_options(&o);
    o.backend = TIDE_BACKEND_CPU;
    expect_create("b", "plan over the ranks, m -1", -1, EN, EK, &o, ARG);
    expect_create("b", "plan over the ranks, k 5 on the last rank", EM, EN,
                  rank == nranks - 1 ? 5 : EK, &o, ARG | MISM);
    if (rank == 0)
        o.transb = (tide_transpose)3;
    expect_create("b", "plan over the ranks, transb 3 on rank 0", EM, EN, EK, &o, ARG | MISM);
    base_options(&o);
    o.backend = TIDE_BACKEND_CPU;
    if (rank == 0)
        o.domain = TIDE_COMPLEX;
    expect_create("b", "plan over the ranks, complex on rank 0 alone", EM, EN, EK, &o, MISM);
    scalar_errors_over_ranks();
    base_options(&o);
    o.backend = TIDE_BACKEND_CPU;
    o.transa = TIDE_TRANS;
    if (rank == nranks - 1) /* its block of A^T has k / grid[1] or more rows */
        o.lda = 1;
    expect_create("b", "plan over the ranks, A^T, lda 1 on the last rank", EM, EN, EK, &o, ARG);
    /* the user's blocks over a P x 1 grid: m's P + 1 boundaries */
    long long rows[8];
    for (int i = 0; i <= nranks; i++)
        rows[i] = EM * i / nranks;
    base_options(&o);
    o.backend = TIDE_BACKEND_CPU;
    o.grid[0] = nranks, o.grid[1] = 1;
    o.blocks[0] = rows;
    rows[nranks] = EM - 1;
    expect_create("b", "blocks[0] ending short of m", EM, EN, EK, &o, ARG);
    rows[nranks] = EM;
    long long keep = rows[1];
    rows[1] = EM + 1;
    expect_create("b", "blocks[0] decreasing", EM, EN, EK, &o, ARG);
    rows[1] = keep + (rank == nranks - 1); /* still a tiling, on the last rank another one */
    expect_create("b", "blocks[0] differing on the last rank", EM, EN, EK, &o, MISM);
    rows[1] = keep;
    o.blocks[0] = rank == 0 ? rows : NULL;
    expect_create("b", "blocks[0] given on rank 0 alone", EM, EN, EK, &o, MISM);
    /* option exchange: direct, out of range, GPU transports on the CPU or on host matrices,
     * and one differing between ranks, refused on every rank */
    base_options(&o);
    o.exchange = TIDE_EXCHANGE_DIRECT;
    expect_create("b", "exchange direct", EM, EN, EK, &o, UNSUP);
    o.exchange = (tide_exchange)9;
    expect_create("b", "exchange 9", EM, EN, EK, &o, ARG);
    base_options(&o);
    o.backend = TIDE_BACKEND_CPU;
    o.location = TIDE_LOCATION_HOST;
    o.exchange = TIDE_EXCHANGE_NCCL;
    expect_create("b", "exchange nccl on the CPU", EM, EN, EK, &o, UNSUP);
    o.exchange = TIDE_EXCHANGE_CUDA_MPI;
    expect_create("b", "exchange cuda-mpi on the CPU", EM, EN, EK, &o, UNSUP);
    if (gpu) {
        base_options(&o);
        o.location = TIDE_LOCATION_HOST;
        o.exchange = TIDE_EXCHANGE_CUDA_MPI;
        expect_create("b", "exchange cuda-mpi on host matrices", EM, EN, EK, &o, UNSUP);
    }
    base_options(&o);
    o.backend = TIDE_BACKEND_CPU;
    o.location = TIDE_LOCATION_HOST;
    o.exchange = rank == nranks - 1 ? TIDE_EXCHANGE_P2P : TIDE_EXCHANGE_AUTO;
    expect_create("b", "exchange p2p on the last rank alone", EM, EN, EK, &o, MISM);
    o.exchange = TIDE_EXCHANGE_A2AV; /* the panels go pairwise whatever the MPI choice */
    tide_gemm_plan *ok = error_plan(&o, "b) exchange a2av on host matrices");
    tide_gemm_plan_destroy(ok);
    MPI_Barrier(world); /* every rank got here: no call hung */
}

/* The status tide_stencil_plan_create gives for a device location on this context. */
static int stencil_device_status(void)
{
    tide_stencil_options so;
    tide_stencil_options_init(&so);
    so.location = TIDE_LOCATION_DEVICE;
    tide_stencil_plan *sp = NULL;
    const int n[3] = {5, 5, 5};
    int st = tide_stencil_plan_create(ctx, n, NULL, &so, &sp);
    tide_stencil_plan_destroy(sp);
    return st;
}

static void create_errors(void)
{
    tide_gemm_options o;
    base_options(&o);
    expect_create("f", "m -1", -1, EN, EK, &o, ARG);
    expect_create("f", "n -8", EM, -8, EK, &o, ARG);
    expect_create("f", "k -1", EM, EN, -1, &o, ARG);
    o.lda = EM - 1;
    expect_create("f", "lda 8 < m 9 (col, A m x k)", EM, EN, EK, &o, ARG);
    base_options(&o);
    o.transa = TIDE_TRANS;
    o.lda = EK - 1;
    expect_create("f", "lda 6 < k 7 (col, A^T stored k x m)", EM, EN, EK, &o, ARG);
    base_options(&o);
    o.order = TIDE_ROW_MAJOR;
    o.ldb = EN - 1;
    expect_create("f", "ldb 7 < n 8 (row, B k x n)", EM, EN, EK, &o, ARG);
    base_options(&o);
    o.ldc = -4;
    expect_create("f", "ldc -4", EM, EN, EK, &o, ARG);
    base_options(&o);
    o.order = TIDE_ROW_MAJOR;
    o.ldc = EN - 1;
    expect_create("f", "ldc 7 < n 8 (row)", EM, EN, EK, &o, ARG);
    base_options(&o);
    o.transa = (tide_transpose)3;
    expect_create("f", "transa 3 (no such transpose)", EM, EN, EK, &o, ARG);
    for (int d = -1; d <= 2; d += 3) {
        base_options(&o);
        o.domain = (tide_domain)d;
        expect_create("f", d < 0 ? "domain -1" : "domain 2", EM, EN, EK, &o, ARG);
    }
    base_options(&o);
    o.transb = (tide_transpose)-1;
    expect_create("f", "transb -1 (no such transpose)", EM, EN, EK, &o, ARG);
    base_options(&o);
    o.order = (tide_matrix_order)7;
    expect_create("f", "order 7 (no such order)", EM, EN, EK, &o, ARG);
    base_options(&o);
    o.precision = (tide_precision)5;
    expect_create("f", "precision 5", EM, EN, EK, &o, ARG);
    base_options(&o);
    o.tile = -1;
    expect_create("f", "tile -1", EM, EN, EK, &o, ARG);
    base_options(&o);
    o.panel = -16;
    expect_create("f", "panel -16", EM, EN, EK, &o, ARG);
    base_options(&o);
    o.gpus = -1;
    expect_create("f", "gpus -1", EM, EN, EK, &o, ARG);
    base_options(&o);
    o.gpus = 17;
    expect_create("f", "gpus 17 (more than 16)", EM, EN, EK, &o, ARG);
    for (int v = -2; v <= 2; v += 4) {
        base_options(&o);
        o.share_a = v;
        expect_create("f", v < 0 ? "share_a -2" : "share_a 2", EM, EN, EK, &o, ARG);
    }
    base_options(&o);
    o.size = 0;
    expect_create("f", "options size 0", EM, EN, EK, &o, ARG);
    memset(&o, 0, sizeof o);
    expect_create("f", "options zeroed, not from the init function", EM, EN, EK, &o, ARG);
    if (!gpu) {
        int want = stencil_device_status();
        base_options(&o);
        o.location = TIDE_LOCATION_DEVICE;
        expect_create("f", "location device on the CPU backend (as stencil)", EM, EN, EK, &o,
                      want > 0 && want < 32 ? BIT(want) : ARG | UNSUP);
    }
    base_options(&o);
    int st = tide_gemm_plan_create(ctx, EM, EN, EK, &o, NULL);
    expect("f", "plan pointer NULL", st, ARG, 1);
    double a[EM * EK] = {0}, b[EK * EN] = {0}, c[EM * EN] = {0};
    st = tide_gemm(ctx, -3, EN, EK, 1, a, b, 0, c, NULL);
    expect("f", "tide_gemm with m -3", st, ARG, 1);
    base_options(&o);
    o.size = 0;
    st = tide_gemm(ctx, EM, EN, EK, 1, a, b, 0, c, &o);
    expect("f", "tide_gemm with options size 0", st, ARG, 1);
}

/* The arrays of the execution error cases (double, column major, minimal leading dimensions):
 * host images, C's first values, and where the plan's matrices live. EM x EN is the largest. */
typedef struct {
    double h[3][2 * EM * EN]; /* complex too */
    double c0[2 * EM * EN];
    void *p[3];
} earrays;

static void earrays_init(earrays *e)
{
    tt_rng rng;
    tt_rng_seed(&rng, 515);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2 * EM * EN; j++)
            e->h[i][j] = rnd(&rng);
    memcpy(e->c0, e->h[2], sizeof e->c0);
    for (int i = 0; i < 3; i++)
        e->p[i] = e->h[i];
#if TIDE_HAVE_CUDA
    for (int i = 0; on_device && i < 3; i++) {
        xalloc(1, sizeof e->h[i], &e->p[i]);
        CU(cudaMemcpy(e->p[i], e->h[i], sizeof e->h[i], cudaMemcpyHostToDevice));
    }
#endif
}

/* Whether C still holds its first values. */
static int c_intact(earrays *e)
{
#if TIDE_HAVE_CUDA
    if (on_device)
        CU(cudaMemcpy(e->h[2], e->p[2], sizeof e->c0, cudaMemcpyDeviceToHost));
#endif
    return !memcmp(e->h[2], e->c0, sizeof e->c0);
}

/* The plan (complex with cplx) still multiplies right (on fresh C). */
static void still_right(tide_gemm_plan *plan, earrays *e, int cplx, tide_transpose tb)
{
    const double alpha[2] = {-1.5, cplx ? 0.25 : 0}, beta[2] = {0.5, cplx ? -1 : 0};
    int st = gemm_call(plan, alpha, e->p[0], e->p[1], beta, e->p[2], 0);
    c_intact(e); /* reads C back */
    double ref[2 * EM * EN], scale[2 * EM * EN];
    int rst = tide_ref_gemm(1, cplx, TIDE_COL_MAJOR, TIDE_NOTRANS, tb, EM, EN, EK, alpha,
                            e->h[0], EM, e->h[1], tb ? EN : EK, beta, e->c0, EM, 0, EM, 0, EN,
                            ref, scale);
    double err = tide_ref_gemm_error(1, cplx, TIDE_COL_MAJOR, EK, e->h[2], EM, 0, EM, 0, EN, ref,
                                     scale);
    memcpy(e->c0, e->h[2], sizeof e->c0); /* C's values from here on */
    tt_check(&tally, world, st == 0 && rst == 0 && err <= 1,
             "f) a %s multiply after the failed ones: %s (%s), error %.3g bounds",
             cplx ? "complex" : "real", tide_strerror(st), tide_last_error(ctx), err);
}

/* A complex plan (op(B) = B^H) refuses NULL scalars and matrices, then multiplies right. */
static void execute_errors_complex(earrays *e)
{
    tide_gemm_options o;
    base_options(&o);
    o.domain = TIDE_COMPLEX;
    o.transb = TIDE_CONJTRANS;
    tide_gemm_plan *plan = error_plan(&o, "f) complex plan for the execute errors");
    if (!plan)
        return;
    const double one[2] = {1, 0}, ab[2] = {0.5, -2};
    int st = tide_gemm_execute_complex(plan, NULL, e->p[0], e->p[1], ab, e->p[2]);
    expect("f", "complex plan, execute_complex with alpha NULL", st, ARG, c_intact(e));
    st = tide_gemm_execute_complex(plan, ab, e->p[0], e->p[1], NULL, e->p[2]);
    expect("f", "complex plan, execute_complex with beta NULL", st, ARG, c_intact(e));
    st = tide_gemm_execute_complex(plan, one, NULL, e->p[1], ab, e->p[2]);
    expect("f", "complex plan, execute_complex with A NULL", st, ARG, c_intact(e));
    still_right(plan, e, 1, TIDE_CONJTRANS);
    tide_gemm_plan_destroy(plan);
}

static void execute_errors(void)
{
    tide_gemm_options o;
    base_options(&o);
    tide_gemm_plan *plan = error_plan(&o, "f) plan for the execute errors");
    if (!plan)
        return;
    earrays *e = tt_xmalloc(sizeof *e);
    earrays_init(e);
    int st = tide_gemm_execute(plan, 1, NULL, e->p[1], 1, e->p[2]);
    expect("f", "execute with A NULL (9 x 7)", st, ARG, c_intact(e));
    st = tide_gemm_execute(plan, 1, e->p[0], NULL, 0, e->p[2]);
    expect("f", "execute with B NULL (7 x 8)", st, ARG, c_intact(e));
    st = tide_gemm_execute(plan, 1, e->p[0], e->p[1], 1, NULL);
    expect("f", "execute with C NULL (9 x 8)", st, ARG, c_intact(e));
    st = tide_gemm_execute(NULL, 1, e->p[0], e->p[1], 1, e->p[2]);
    tt_check(&tally, world, st == TIDE_ERR_ARGUMENT && c_intact(e),
             "f) execute with plan NULL: status %d (%s)", st, tide_strerror(st));
    const double one[2] = {1, 0}, ai[2] = {1, 0.5}, bi[2] = {0, -1};
    st = tide_gemm_execute_complex(NULL, one, e->p[0], e->p[1], one, e->p[2]);
    tt_check(&tally, world, st == TIDE_ERR_ARGUMENT && c_intact(e),
             "f) execute_complex with plan NULL: status %d (%s)", st, tide_strerror(st));
    st = tide_gemm_execute_complex(plan, ai, e->p[0], e->p[1], one, e->p[2]);
    expect("f", "real plan, execute_complex with alpha 1+0.5i", st, ARG, c_intact(e));
    st = tide_gemm_execute_complex(plan, one, e->p[0], e->p[1], bi, e->p[2]);
    expect("f", "real plan, execute_complex with beta -i", st, ARG, c_intact(e));
    st = tide_gemm_execute_complex(plan, NULL, e->p[0], e->p[1], one, e->p[2]);
    expect("f", "real plan, execute_complex with alpha NULL", st, ARG, c_intact(e));
    st = tide_gemm_execute_complex(plan, one, e->p[0], e->p[1], NULL, e->p[2]);
    expect("f", "real plan, execute_complex with beta NULL", st, ARG, c_intact(e));
#if TIDE_HAVE_CUDA
    if (gpu) {
        /* A matrix where the plan's location says it is not: a malloc'd host A given to a
         * device plan, or a device A given to a host plan. */
        void *other = NULL;
        if (!on_device)
            xalloc(1, sizeof e->h[0], &other);
        st = tide_gemm_execute(plan, 1, on_device ? (void *)e->h[0] : other, e->p[1], 1,
                               e->p[2]);
        expect("f", on_device ? "device plan, execute with a malloc'd host A"
                              : "host plan, execute with a device A",
               st, ARG, c_intact(e));
        if (other)
            tide_device_free(ctx, other);
    }
#endif
    tide_gemm_info info;
    char buf[64];
    tt_check(&tally, world, tide_gemm_plan_info(plan, NULL) == TIDE_ERR_ARGUMENT &&
                                tide_gemm_plan_info(NULL, &info) == TIDE_ERR_ARGUMENT &&
                                tide_gemm_plan_describe(NULL, buf, sizeof buf) ==
                                    TIDE_ERR_ARGUMENT &&
                                tide_gemm_plan_set_stream(NULL, NULL) == TIDE_ERR_ARGUMENT &&
                                tide_gemm_plan_destroy(NULL) == 0,
             "f) info, describe or set_stream on a NULL plan (or info NULL) not "
             "TIDE_ERR_ARGUMENT, or destroy(NULL) not 0");
    still_right(plan, e, 0, TIDE_NOTRANS);
    tide_gemm_plan_destroy(plan);
    execute_errors_complex(e);
#if TIDE_HAVE_CUDA
    for (int i = 0; on_device && i < 3; i++)
        tide_device_free(ctx, e->p[i]);
#endif
    free(e);
}

/* Matrices without elements may be NULL: k = 0 scales C by beta, m = 0 does nothing. */
static void empty_as_null(void)
{
    tide_gemm_options o;
    base_options(&o);
    tide_gemm_plan *plan = NULL;
    earrays *e = tt_xmalloc(sizeof *e);
    earrays_init(e);
    int st = tide_gemm_plan_create(ctx, EM, EN, 0, &o, &plan);
    if (st == 0)
        st = tide_gemm_execute(plan, 1, NULL, NULL, 0.5, e->p[2]);
    c_intact(e);
    int ok = st == 0;
    for (int i = 0; i < EM * EN; i++)
        ok = ok && e->h[2][i] == 0.5 * e->c0[i];
    tt_check(&tally, world, ok, "f) k 0 with A and B NULL: %s (%s)%s", tide_strerror(st),
             tide_last_error(ctx), st ? "" : ", C is not 0.5 C");
    tide_gemm_plan_destroy(plan);
    plan = NULL;
    /* complex, beta i: C's parts (re, im) become (-im, re), exactly */
    o.domain = TIDE_COMPLEX;
    memcpy(e->c0, e->h[2], sizeof e->c0);
    const double one[2] = {1, 0}, imag[2] = {0, 1};
    st = tide_gemm_plan_create(ctx, EM, EN, 0, &o, &plan);
    if (st == 0)
        st = tide_gemm_execute_complex(plan, one, NULL, NULL, imag, e->p[2]);
    c_intact(e);
    ok = st == 0;
    for (int i = 0; i < EM * EN; i++)
        ok = ok && e->h[2][2 * i] == -e->c0[2 * i + 1] && e->h[2][2 * i + 1] == e->c0[2 * i];
    tt_check(&tally, world, ok, "f) complex, k 0 with A and B NULL: %s (%s)%s",
             tide_strerror(st), tide_last_error(ctx), st ? "" : ", C is not i C");
    tide_gemm_plan_destroy(plan);
    plan = NULL;
    o.domain = TIDE_REAL;
    st = tide_gemm_plan_create(ctx, 0, EN, EK, &o, &plan);
    if (st == 0)
        st = tide_gemm_execute(plan, 1, NULL, e->p[1], 1, NULL);
    tt_check(&tally, world, st == 0, "f) m 0 with A and C NULL: %s (%s)", tide_strerror(st),
             tide_last_error(ctx));
    tide_gemm_plan_destroy(plan);
#if TIDE_HAVE_CUDA
    for (int i = 0; on_device && i < 3; i++)
        tide_device_free(ctx, e->p[i]);
#endif
    free(e);
}

/* ---- main ----------------------------------------------------------------------------------- */

/* The context of every rank; 77 when the GPU run cannot be had, 1 on failure, else 0. */
static int make_context(const tide_context_options *copts, int cuda)
{
    int st = tide_context_create(world, copts, &ctx);
    backend = TIDE_BACKEND_CPU;
    if (st == 0)
        tide_context_backend(ctx, &backend);
    if (!tt_all(world, st == 0)) {
        if (rank == 0)
            printf("test_gemm: tide_context_create failed: %s: %s\n", tide_strerror(st),
                   tide_last_error(NULL));
        return 1;
    }
    if (cuda && backend != TIDE_BACKEND_CUDA) {
        if (rank == 0)
            printf("SKIP: no GPU for the CUDA backend: %s\n", tide_context_gpu_status(ctx));
        tide_context_destroy(ctx);
        return 77;
    }
    gpu = backend == TIDE_BACKEND_CUDA;
#if TIDE_HAVE_CUDA
    if (gpu) {
        tide_device_info d;
        tide_context_device(ctx, &d);
        CU(cudaSetDevice(d.device)); /* the plain CUDA calls use the context's GPU */
    }
#endif
    return 0;
}

/* Whether every rank has a GPU of its own (their PCI bus ids distinct) in a build with NCCL. */
static int own_gpus(void)
{
    tide_device_info info;
    tide_context_device(ctx, &info);
    enum { ID = sizeof info.pci_bus_id };
    char *ids = tt_xmalloc((size_t)nranks * ID);
    MPI_Allgather(info.pci_bus_id, ID, MPI_CHAR, ids, ID, MPI_CHAR, world);
    int mine = info.nccl_version > 0 && info.pci_bus_id[0], all = 0;
    for (int r = 0; r < nranks; r++)
        mine = mine && (r == rank || strncmp(ids + (size_t)r * ID, info.pci_bus_id, ID) != 0);
    free(ids);
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, world);
    return all;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    world = MPI_COMM_WORLD;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &nranks);
    const char *be = getenv("TIDE_TEST_BACKEND"), *loc = getenv("TIDE_TEST_LOCATION");
    const char *verbose_env = getenv("TIDE_TEST_VERBOSE");
    verbose = verbose_env && verbose_env[0] && strcmp(verbose_env, "0") != 0;
    int cuda = be && !strcmp(be, "cuda");
    /* Argument several-gpus: g) alone for two GPUs and more (one rank, the GPU host path). */
    int several = argc > 1 && !strcmp(argv[1], "several-gpus");
    if (rank == 0)
        printf("test_gemm on %d ranks (TIDE_TEST_VERBOSE=1 names each case as it starts)\n",
               nranks);
    if (several && (!cuda || nranks > 1 || (loc && strcmp(loc, "host")))) {
        if (rank == 0)
            printf("FAIL: test_gemm several-gpus runs on one rank with TIDE_TEST_BACKEND=cuda "
                   "and host matrices\n");
        MPI_Finalize();
        return 1;
    }
    if (cuda && !tt_all(world, tt_gpus_or_skip() > 0)) {
        MPI_Finalize();
        return 77;
    }
    tide_context_options copts;
    tide_context_options_init(&copts);
    copts.backend = cuda ? TIDE_BACKEND_AUTO : TIDE_BACKEND_CPU;
    int rc = make_context(&copts, cuda);
    if (rc) {
        MPI_Finalize();
        return rc;
    }
    on_device = gpu && loc && !strcmp(loc, "device");
    nccl_panels = on_device && nranks > 1 && own_gpus();
    aware = tt_cuda_aware(world, gpu ? ctx : NULL);
    /* TIDE_TEST_EXCHANGE=nccl, cuda-mpi or p2p (device blocks): every distributed case's
     * panels that way */
    const char *xe = getenv("TIDE_TEST_EXCHANGE");
    forced = tt_exchange_env();
    if (forced != -1) {
        if (forced < 0 || forced == TIDE_EXCHANGE_DIRECT || !on_device)
            return tt_stop_early(world, ctx, EXIT_FAILURE, "test_gemm: TIDE_TEST_EXCHANGE=%s: "
                                 "want nccl, cuda-mpi or p2p with TIDE_TEST_LOCATION=device on "
                                 "the GPU\n", xe);
        if ((forced == TIDE_EXCHANGE_CUDA_MPI && !aware) ||
            (forced == TIDE_EXCHANGE_NCCL && !nccl_panels))
            return tt_stop_early(world, ctx, 77, "SKIP: TIDE_TEST_EXCHANGE=%s, but %s\n", xe,
                                 forced == TIDE_EXCHANGE_NCCL
                                     ? "NCCL is not usable (a GPU of its own for every rank)"
                                     : "the MPI library does not take device pointers on "
                                       "every rank");
    }
    if (rank == 0)
        printf("backend %s, matrices in %s memory\n", gpu ? "cuda" : "cpu",
               on_device ? "device" : "host");
    double t0 = MPI_Wtime();
    oracle_selftest();
    if (several) {
        int share = gpu_share();
        if (share == 1) {
            printf("SKIP: this rank drives one GPU: no case of several GPUs to run\n");
            tide_context_destroy(ctx);
            MPI_Finalize();
            return 77;
        }
        if (share > 1)
            gpus_option(2, share, share);
    } else if (nranks > 1) {
        many_ranks();
        small_budget(&copts);
    } else {
        cases();
        small_budget(&copts);
        if (gpu && !on_device) {
            int share = gpu_share();
            if (share)
                gpus_option(1, 1, share);
        }
        one_shot();
        int before = tally.failed;
        create_errors();
        execute_errors();
        empty_as_null();
        printf("  f) bad input: %d failed checks\n", tally.failed - before);
    }
    if (rank == 0)
        printf("(%.1f s)\n", MPI_Wtime() - t0);
    tide_context_destroy(ctx);
    rc = tt_finish(&tally, world, "test_gemm", "checks");
    MPI_Finalize();
    return rc;
}
