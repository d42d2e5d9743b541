/*
 * gemm.c: matrix multiply plans on the plan core. A plan validates the request (the same
 * verdict on every rank), turns it into one column-major multiply (a row-major C = op(A) op(B)
 * is the column-major C^T = op(B)^T op(A)^T: the operands swap, each keeps its transpose flag)
 * and runs it: on one rank in card as a program of one op, the plan core's multiply op (the
 * backend's gemm entry: the CPU BLAS on the CPU, cuBLAS on device matrices), run by the
 * executor; for host matrices on the GPU through the out-of-card scheme of gemm_streamed.c. On
 * several ranks it is SUMMA (gemm_dist.c), a program of panel moves and updates, each update
 * the same multiply op, or on the GPU the out-of-card scheme on the broadcast panels.
 */
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/args.h"
#include "backend/backend.h"
#include "gemm/gemm_dist.h"
#include "gemm/gemm_streamed.h"
#include "plan/program.h"

struct tide_gemm_plan {
    tide_context *ctx;
    int held;             /* counted on ctx (tide_context_hold) */
    tide_gemm_options o;
    long long m, n, k;      /* the caller's */
    tide_gemm_desc g;       /* the column-major multiply the plan runs */
    int swap;               /* row major: g's A is the caller's B and the other way round */
    long long count[3];     /* elements of this rank's A, B and C */
    int grid[2];            /* the caller's process grid (several ranks) */
    long long *split;       /* its block boundaries, the caller's or balanced (tide.h's
                             * blocks[0..4), one after another) */
    tide_env env;
    void *blas;             /* the backend's gemm handle */
    tide_gemm_streamed *streamed; /* host matrices through the GPU (several ranks: the updates) */
    tide_gemm_dist *dist;   /* several ranks */
    tide_program local;     /* one rank in card: [gemm], the plan core's multiply op, */
    tide_gemm_operands bound; /* ... its operands, bound per run */
    int panels;             /* several ranks: the updates per multiply (the panels of k) */
    long long widest;       /* ... and the widest panel (the broadcast width the plan uses) */
    void *entry;            /* orders runs after the caller's CUDA work */
};

/* ---- the request ----------------------------------------------------------------------- */

enum {
    F_M, F_N, F_K, F_PRECISION, F_BACKEND, F_LOCATION, F_ORDER, F_TRANSA, F_TRANSB, F_TILE,
    F_PANEL, F_GRID0, F_GRID1, F_GPUS, F_SHARE, F_DOMAIN, F_EXCHANGE, F_BLOCKS,
    NFIELDS = F_BLOCKS + 4
};
static const tide_arg_field fields[NFIELDS] = {
    {"m", 0, INT_MAX},
    {"n", 0, INT_MAX},
    {"k", 0, INT_MAX},
    {"option precision", TIDE_DOUBLE, TIDE_FLOAT},
    {"option backend", TIDE_BACKEND_AUTO, TIDE_BACKEND_CUDA},
    {"option location", TIDE_LOCATION_HOST, TIDE_LOCATION_DEVICE},
    {"option order", TIDE_COL_MAJOR, TIDE_ROW_MAJOR},
    {"option transa", TIDE_NOTRANS, TIDE_CONJTRANS},
    {"option transb", TIDE_NOTRANS, TIDE_CONJTRANS},
    {"option tile", 0, INT_MAX},
    {"option panel", 0, INT_MAX},
    {"option grid[0]", 0, INT_MAX},
    {"option grid[1]", 0, INT_MAX},
    {"option gpus", 0, TIDE_GEMM_MAX_GPUS},
    {"option share_a", -1, 1},
    {"option domain", TIDE_REAL, TIDE_COMPLEX},
    {"option exchange", TIDE_EXCHANGE_AUTO, TIDE_EXCHANGE_DIRECT},
    {"option blocks[0] given", 0, 1},
    {"option blocks[1] given", 0, 1},
    {"option blocks[2] given", 0, 1},
    {"option blocks[3] given", 0, 1},
};
static const tide_args_spec spec = {"tide_gemm_plan_create", fields, NFIELDS, NULL, 0, NULL,
                                    0};

/* The leading dimension a matrix of rows x cols needs in the caller's order. */
static long long min_ld(int order, long long rows, long long cols)
{
    long long ld = order == TIDE_COL_MAJOR ? rows : cols;
    return ld > 1 ? ld : 1;
}

/* One matrix's leading dimension: the caller's, or with 0 the least it may be. Returns it, or
 * -1 with the failure recorded in r. */
static long long leading(tide_args *r, const char *name, long long ld, int order,
                         long long rows, long long cols)
{
    long long least = min_ld(order, rows, cols);
    if (ld == 0)
        return least;
    if (ld < least)
        return tide_args_fail(r, TIDE_ERR_ARGUMENT, "option ld%s = %lld is smaller than the "
                              "%lld %s of %s (%lld x %lld, %s major)", name, ld, least,
                              order == TIDE_COL_MAJOR ? "rows" : "columns", name, rows, cols,
                              order == TIDE_COL_MAJOR ? "column" : "row"), -1;
    return ld;
}

/* A size or leading dimension as a field: negative is an argument error, beyond INT_MAX too
 * large (cuBLAS and the boxes of the transfers count in int). */
static int field(tide_args *r, const char *name, long long v)
{
    if (v < 0)
        return tide_args_fail(r, TIDE_ERR_ARGUMENT, "%s = %lld is negative", name, v), 0;
    if (v > INT_MAX)
        return tide_args_fail(r, TIDE_ERR_TOO_LARGE, "%s = %lld is more than %d", name, v,
                              INT_MAX), 0;
    return (int)v;
}

/* The process grid of P ranks: the caller's, or the most square one (rows <= columns). */
static int process_grid(int P, const int want[2], int grid[2])
{
    if (want[0] || want[1]) {
        grid[0] = want[0], grid[1] = want[1];
        return (long long)want[0] * want[1] == P;
    }
    grid[0] = 1;
    for (int r = 1; (long long)r * r <= P; r++)
        if (P % r == 0)
            grid[0] = r;
    grid[1] = P / grid[0];
    return 1;
}

/* The extent and the process-grid dimension of the caller's blocks[x]: m over rows, n over
 * columns, k over columns (A's) and over rows (B's). */
static long long extent_of(int x, long long m, long long n, long long k)
{
    return x == 0 ? m : x == 1 ? n : k;
}

/* Local: the caller's blocks[x] tiles its extent over p parts (from 0 to the extent, never
 * decreasing), else a failure in r. */
static void check_blocks(tide_args *r, int x, const long long *b, long long n, int p)
{
    static const char *const what[] = {"m", "n", "k", "k"};
    if (!b)
        return;
    if (b[0] != 0 || b[p] != n)
        tide_args_fail(r, TIDE_ERR_ARGUMENT, "option blocks[%d] runs from %lld to %lld; its %d "
                       "blocks must tile %s = %lld, from 0 to %lld", x, b[0], b[p], p, what[x],
                       n, n);
    for (int i = 0; i < p; i++)
        if (b[i + 1] < b[i])
            tide_args_fail(r, TIDE_ERR_ARGUMENT, "option blocks[%d][%d] = %lld is below "
                           "blocks[%d][%d] = %lld: the blocks do not tile %s", x, i + 1,
                           b[i + 1], x, i, b[i], what[x]);
}

/* This rank's part of extent x (tide.h's blocks[x]): the caller's block, or the balanced one. */
static long long part(const long long *given, long long n, int p, int i)
{
    long long lo, hi;
    if (given)
        return given[i + 1] - given[i];
    tide_gemm_block(n, p, i, &lo, &hi);
    return hi - lo;
}

/* The request; ld gets this rank's leading dimensions (A, B, C), checked here: they may
 * differ between ranks, as the blocks do. */
static void make_request(tide_context *ctx, long long m, long long n, long long k,
                         const tide_gemm_options *o, tide_gemm_plan **plan, tide_args *r,
                         long long ld[3])
{
    memset(r, 0, sizeof *r);
    if (!plan)
        tide_args_fail(r, TIDE_ERR_ARGUMENT, "plan pointer is NULL");
    r->v[F_M] = field(r, "m", m);
    r->v[F_N] = field(r, "n", n);
    r->v[F_K] = field(r, "k", k);
    int v[] = {o->precision, o->backend, o->location, o->order, o->transa, o->transb, o->tile,
               o->panel, o->grid[0], o->grid[1], o->gpus, o->share_a, o->domain, o->exchange,
               o->blocks[0] != NULL,
               o->blocks[1] != NULL, o->blocks[2] != NULL, o->blocks[3] != NULL};
    memcpy(r->v + F_PRECISION, v, sizeof v);
    tide_args_check_ranges(&spec, r);
    int g[2];
    if (!r->status && !process_grid(ctx->nranks, o->grid, g))
        tide_args_fail(r, TIDE_ERR_ARGUMENT, "option grid is %d x %d, not the %d ranks of the "
                       "context", o->grid[0], o->grid[1], ctx->nranks);
    for (int x = 0; x < 4 && !r->status; x++)
        check_blocks(r, x, o->blocks[x], extent_of(x, m, n, k), g[tide_gemm_split_dim(x)]);
    if (r->status)
        return;
    /* this rank's blocks (the whole matrices on one rank) */
    int row = ctx->rank / g[1], col = ctx->rank % g[1];
    long long lm = part(o->blocks[0], m, g[0], row), ln = part(o->blocks[1], n, g[1], col);
    long long lka = part(o->blocks[2], k, g[1], col), lkb = part(o->blocks[3], k, g[0], row);
    int ord = o->order, ta = o->transa != TIDE_NOTRANS, tb = o->transb != TIDE_NOTRANS;
    ld[0] = leading(r, "a", o->lda, ord, ta ? lka : lm, ta ? lm : lka);
    ld[1] = leading(r, "b", o->ldb, ord, tb ? ln : lkb, tb ? lkb : ln);
    ld[2] = leading(r, "c", o->ldc, ord, lm, ln);
    field(r, "option lda", ld[0]);
    field(r, "option ldb", ld[1]);
    field(r, "option ldc", ld[2]);
}

/* Collective: the caller's blocks (given on every rank or on none: agreed) hold the same
 * boundaries on every rank, else TIDE_ERR_MISMATCH on every rank. */
static int same_blocks(tide_context *ctx, const int *v, const tide_gemm_options *o)
{
    int g[2], want[2] = {v[F_GRID0], v[F_GRID1]}, st = TIDE_SUCCESS;
    process_grid(ctx->nranks, want, g);
    for (int x = 0; x < 4 && !st; x++) {
        int at = -1;
        long long lo, hi;
        if (v[F_BLOCKS + x])
            st = tide_args_first_difference(ctx, "tide_gemm_plan_create", o->blocks[x],
                                            g[tide_gemm_split_dim(x)] + 1, MPI_LONG_LONG,
                                            sizeof(long long), &at, &lo, &hi);
        if (!st && at >= 0)
            st = tide_fail(ctx, TIDE_ERR_MISMATCH, "tide_gemm_plan_create: option blocks[%d][%d] "
                           "differs between ranks (%lld and %lld)", x, at, lo, hi);
    }
    return st;
}

/* The verdict on the agreed request, the same on every rank. */
static int judge(tide_context *ctx, const tide_args *all, const tide_gemm_options *o)
{
    const int *v = all[0].v;
    int st = same_blocks(ctx, v, o);
    if (st)
        return st;
    st = tide_args_backend(ctx, v[F_BACKEND], v[F_LOCATION]);
    if (st || ctx->nranks == 1)
        return st;
    int x = v[F_EXCHANGE], cuda = tide_wants_cuda(ctx, v[F_BACKEND]);
    if (x == TIDE_EXCHANGE_DIRECT)
        return tide_fail(ctx, TIDE_ERR_UNSUPPORTED, "tide_gemm_plan_create: option exchange "
                         "direct: the panels do not take direct stores (nccl, cuda-mpi or p2p)");
    st = tide_args_exchange(ctx, x, cuda);
    if (!st && (x == TIDE_EXCHANGE_NCCL || x == TIDE_EXCHANGE_CUDA_MPI) &&
        v[F_LOCATION] != TIDE_LOCATION_DEVICE)
        st = tide_fail(ctx, TIDE_ERR_UNSUPPORTED, "tide_gemm_plan_create: option exchange %s "
                       "moves device memory; host matrices' panels go by MPI in host memory",
                       tide_exchange_name(x));
    return st;
}

void tide_gemm_options_init(tide_gemm_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
    o->precision = TIDE_DOUBLE;
    o->backend = TIDE_BACKEND_AUTO;
    o->location = TIDE_LOCATION_HOST;
    o->order = TIDE_COL_MAJOR;
    o->transa = o->transb = TIDE_NOTRANS;
}

/* ---- the plan -------------------------------------------------------------------------- */

int tide_gemm_plan_destroy(tide_gemm_plan *p)
{
    if (!p)
        return TIDE_SUCCESS;
    tide_context_release(p->ctx, &p->held);
    int prev;
    tide_device_enter(p->ctx, &prev);
    tide_gemm_streamed_destroy(p->streamed);
    tide_gemm_dist_destroy(p->dist);
    const tide_env *e = &p->env;
    if (e->be) {
        tide_program_destroy(&p->local, e);
        e->be->gemm_destroy(p->blas);
        if (e->stream)
            e->be->stream_destroy(e->stream);
    }
    tide_order_destroy(p->entry);
    tide_device_leave(prev);
    free(p->split);
    free(p);
    return TIDE_SUCCESS;
}

/* The plan's block boundaries, tide.h's blocks[0..4) in order. */
static void split_arrays(const tide_gemm_plan *p, const long long *b[4])
{
    const long long *at = p->split;
    for (int x = 0; x < 4; x++) {
        b[x] = at;
        at += p->grid[tide_gemm_split_dim(x)] + 1;
    }
}

/* The column-major multiply of the agreed request (global sizes, this rank's leading
 * dimensions ld), the process grid and its block boundaries, and this rank's element counts
 * (TIDE_ERR_NOMEM when the boundaries cannot be stored). On real matrices the conjugate
 * transpose is the transpose, and the backends see it as that. */
static int make_desc(tide_gemm_plan *p, const int *v, const long long ld[3],
                     const tide_gemm_options *o)
{
    int cplx = v[F_DOMAIN] == TIDE_COMPLEX, P = p->ctx->nranks;
    int ta = cplx || v[F_TRANSA] != TIDE_CONJTRANS ? v[F_TRANSA] : TIDE_TRANS;
    int tb = cplx || v[F_TRANSB] != TIDE_CONJTRANS ? v[F_TRANSB] : TIDE_TRANS;
    int sw = p->swap = v[F_ORDER] == TIDE_ROW_MAJOR;
    p->g = (tide_gemm_desc){.dbl = v[F_PRECISION] == TIDE_DOUBLE, .cplx = cplx,
                            .transa = sw ? tb : ta, .transb = sw ? ta : tb,
                            .m = v[sw ? F_N : F_M], .n = v[sw ? F_M : F_N], .k = v[F_K],
                            .lda = ld[sw], .ldb = ld[!sw], .ldc = ld[2]};
    int want[2] = {v[F_GRID0], v[F_GRID1]};
    process_grid(P, want, p->grid);
    p->split = malloc(sizeof(long long) * (size_t)(2 * (p->grid[0] + p->grid[1]) + 4));
    if (!p->split)
        return TIDE_ERR_NOMEM;
    long long *at = p->split;
    for (int x = 0; x < 4; x++) {
        int parts = p->grid[tide_gemm_split_dim(x)];
        tide_gemm_splits(o->blocks[x], extent_of(x, p->m, p->n, p->k), parts, at);
        at += parts + 1;
        p->o.blocks[x] = NULL; /* the caller's arrays are read here only */
    }
    int row = p->ctx->rank / p->grid[1], col = p->ctx->rank % p->grid[1];
    const long long *b[4];
    split_arrays(p, b);
    long long m = b[0][row + 1] - b[0][row], n = b[1][col + 1] - b[1][col];
    p->count[0] = m * (b[2][col + 1] - b[2][col]);
    p->count[1] = (b[3][row + 1] - b[3][row]) * n;
    p->count[2] = m * n;
    return TIDE_SUCCESS;
}

static int host_gpu(const tide_gemm_plan *p)
{
    return p->env.be->gpu && p->o.location == TIDE_LOCATION_HOST;
}

static int device_gpu(const tide_gemm_plan *p)
{
    return p->env.be->gpu && p->o.location == TIDE_LOCATION_DEVICE;
}

/* The GPU's update of a broadcast panel pair: the out-of-card multiply, started on the
 * pipelines' threads (nothing on a rank whose block of C is empty). */
static int stream_begin(void *user, const tide_gemm_desc *g, int first, int last,
                        tide_scalar alpha, const void *a, const void *b, tide_scalar beta,
                        void *c, char *err, size_t len)
{
    tide_gemm_plan *p = user;
    int which = (first ? TIDE_GEMM_RUN_FIRST : 0) | (last ? TIDE_GEMM_RUN_LAST : 0);
    return p->streamed ? tide_gemm_streamed_start(p->streamed, g, which, alpha, a, b, beta, c,
                                              p->o.stream, err, len)
                     : TIDE_SUCCESS;
}

static int stream_end(void *user, char *err, size_t len)
{
    tide_gemm_plan *p = user;
    return p->streamed ? tide_gemm_streamed_wait(p->streamed, err, len) : TIDE_SUCCESS;
}

/* The broadcast panels' default width: on the GPU wide enough that a panel's multiply hides
 * the upload and download of C's tiles it costs (the PCIe inequality of Wu 2014 with C moved
 * once per panel: 2 w flops per element at ~50 TFLOP/s against 16 bytes at ~50 GB/s each way
 * need w above ~4000), and with device blocks wide enough for cuBLAS's full rate and few
 * round trips of the panels through host memory; on the CPU narrow, the BLAS at full rate
 * already. */
static int default_panel(const tide_gemm_plan *p) { return p->env.be->gpu ? 4096 : 256; }

/* Several ranks: SUMMA on the column-major multiply, whose process grid is the caller's
 * transposed when the operands swapped (local; the reason in err). */
static int build_dist(tide_gemm_plan *p, char *err, size_t len)
{
    int row = p->ctx->rank / p->grid[1], col = p->ctx->rank % p->grid[1];
    const long long *b[4];
    split_arrays(p, b);
    tide_gemm_dist_desc d = {p->g.dbl, p->g.cplx, p->g.transa, p->g.transb, p->g.m, p->g.n,
                             p->g.k,
                             {p->swap ? p->grid[1] : p->grid[0],
                              p->swap ? p->grid[0] : p->grid[1]},
                             /* swapped: B^T A^T's rows are the caller's columns, and A^T's
                              * columns of k are the caller's B's rows */
                             {p->swap ? b[1] : b[0], p->swap ? b[0] : b[1],
                              p->swap ? b[3] : b[2], p->swap ? b[2] : b[3]},
                             {p->swap ? col : row, p->swap ? row : col}, p->g.lda, p->g.ldb,
                             p->g.ldc, p->o.panel ? p->o.panel : default_panel(p), &p->env,
                             device_gpu(p), p->blas, {NULL, NULL, NULL},
                             device_gpu(p) ? p->env.nccl : NULL,
                             device_gpu(p) && p->env.transport == TIDE_EXCHANGE_CUDA_MPI};
    if (host_gpu(p))
        d.update = (tide_gemm_update){stream_begin, stream_end, p};
    return tide_gemm_dist_create(&d, &p->dist, err, len);
}

/* One rank in card: the program of one op, the multiply on the plan's handle in place in C
 * (the program's output). */
static void local_program(tide_gemm_plan *p)
{
    tide_op *op = &p->local.ops[p->local.nops++];
    tide_op_gemm(op, p->blas, &p->g, &p->bound);
    op->src = op->dst = TIDE_LOC_OUT;
}

/* The backend's handle; several ranks: SUMMA; host matrices on the GPU: the out-of-card
 * scheme for the whole multiply, or for a rank's updates by the widest panel, with the panel
 * option there for the broadcasts; else one rank's one-op program (local; the reason in
 * err). */
static int build(tide_gemm_plan *p, char *err, size_t len)
{
    const tide_env *e = &p->env;
    int st = e->be->gemm_create(&p->blas);
    if (st == TIDE_ERR_UNSUPPORTED)
        return snprintf(err, len, "this build has no CPU BLAS (CBLAS) for backend cpu"), st;
    if (st)
        return snprintf(err, len, "%s", e->be->last_error()), st;
    if (p->ctx->nranks > 1 && (st = build_dist(p, err, len)))
        return st;
    tide_gemm_desc g = p->dist ? tide_gemm_dist_local(p->dist, &p->panels) : p->g;
    p->widest = g.k;
    if (!p->dist && !host_gpu(p))
        local_program(p);
    if (!host_gpu(p) || g.m == 0 || g.n == 0)
        return TIDE_SUCCESS;
    int devs[TIDE_GEMM_MAX_GPUS];
    int n = tide_context_gpus(p->ctx, p->o.gpus, devs, TIDE_GEMM_MAX_GPUS, err, len);
    if (n < 0)
        return -n;
    tide_gemm_streamed_desc d = {g, e, p->blas, p->ctx->dev.budget_bytes, p->o.tile,
                               p->dist ? 0 : p->o.panel, n, devs, p->dist ? p->panels : 1,
                               p->o.share_a};
    return tide_gemm_streamed_create(&d, &p->streamed, err, len);
}

/* Collective: the plan of an agreed request; failures agreed. */
static int make_plan(tide_context *ctx, const tide_args *all, const tide_gemm_options *o,
                     const long long ld[3], tide_gemm_plan **out)
{
    char err[TIDE_MSG_LEN] = "";
    int st = TIDE_SUCCESS, cuda = tide_wants_cuda(ctx, o->backend);
    /* device matrices on several ranks: SUMMA's panels over NCCL where every rank has a GPU
     * of its own (the context's communicator, made here by every rank alike: the request is
     * agreed), else by MPI on device pointers where the MPI library takes them, else through
     * pinned host memory; option exchange forces one (judged usable) */
    void *nccl = NULL;
    int dev = cuda && ctx->nranks > 1 && o->location == TIDE_LOCATION_DEVICE;
    tide_exchange x = o->exchange;
    if (dev && x == TIDE_EXCHANGE_AUTO) /* the panels take no direct stores */
        x = tide_exchange_gpu_auto(ctx, 0);
    if (x == TIDE_EXCHANGE_AUTO) /* through pinned host memory: the panels go pairwise */
        x = TIDE_EXCHANGE_P2P;
    if (dev && x == TIDE_EXCHANGE_NCCL && (st = tide_context_nccl(ctx, 0, &nccl)))
        return st;
    tide_gemm_plan *p = calloc(1, sizeof *p);
    if (!p)
        st = TIDE_ERR_NOMEM, snprintf(err, sizeof err, "out of memory creating the plan");
    if (p) {
        const int *v = all[0].v;
        p->ctx = ctx;
        p->o = *o;
        p->o.backend = cuda ? TIDE_BACKEND_CUDA : TIDE_BACKEND_CPU;
        p->m = v[F_M], p->n = v[F_N], p->k = v[F_K];
        p->env.ctx = ctx;
        p->env.be = cuda ? tide_backend_cuda() : &tide_backend_cpu;
        p->env.threads = ctx->threads;
        p->env.nccl = nccl;
        p->env.transport = dev ? x : TIDE_EXCHANGE_P2P;
        if ((st = make_desc(p, v, ld, o)))
            snprintf(err, sizeof err, "out of memory creating the plan");
        else if (tide_order_create(ctx, &p->entry) ||
                 (cuda && p->env.be->stream_create(&p->env.stream, 0)))
            st = TIDE_ERR_BACKEND, snprintf(err, sizeof err, "%s", p->env.be->last_error());
        if (!st)
            st = build(p, err, sizeof err);
    }
    if (st)
        tide_fail(ctx, st, "tide_gemm_plan_create: %s", err);
    st = tide_agree(ctx, st);
    if (st) {
        tide_gemm_plan_destroy(p);
        return st;
    }
    *out = p;
    char what[320];
    tide_gemm_plan_describe(p, what, sizeof what);
    tide_log(ctx, TIDE_LOG_INFO, "gemm plan: %s", what);
    return TIDE_SUCCESS;
}

int tide_gemm_plan_create(tide_context *ctx, long long m, long long n, long long k,
                          const tide_gemm_options *opts, tide_gemm_plan **plan)
{
    if (!ctx)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_gemm_plan_create: context is NULL");
    int prev, st = tide_create_enter(ctx, "tide_gemm_plan_create", &prev);
    if (st)
        return st;
    tide_gemm_options o;
    tide_args mine;
    long long ld[3] = {1, 1, 1};
    tide_gemm_options_init(&o);
    if (!tide_options_read(opts, &o, sizeof o, offsetof(tide_gemm_options, precision))) {
        memset(&mine, 0, sizeof mine);
        tide_args_fail(&mine, TIDE_ERR_ARGUMENT, "options not filled by "
                       "tide_gemm_options_init (its size member is unset)");
    } else {
        make_request(ctx, m, n, k, &o, plan, &mine, ld);
    }
    tide_args *all = NULL;
    st = tide_args_agree(ctx, &spec, &mine, &all);
    if (!st)
        st = judge(ctx, all, &o);
    if (!st)
        st = make_plan(ctx, all, &o, ld, plan);
    if (!st)
        tide_context_hold(ctx, &(*plan)->held);
    free(all);
    tide_device_leave(prev);
    return st;
}

/* ---- queries --------------------------------------------------------------------------- */

int tide_gemm_plan_info(const tide_gemm_plan *p, tide_gemm_info *info)
{
    if (!p || !info)
        return tide_fail(p ? p->ctx : NULL, TIDE_ERR_ARGUMENT,
                         "tide_gemm_plan_info: %s is NULL", p ? "info" : "plan");
    memset(info, 0, sizeof *info);
    info->m = p->m, info->n = p->n, info->k = p->k;
    info->flops = tide_gemm_ops(&p->g) * p->m * p->n * p->k;
    info->grid[0] = p->grid[0], info->grid[1] = p->grid[1];
    if (p->streamed) /* this rank's: several ranks, its updates' sum over k */
        tide_gemm_streamed_info(p->streamed, p->k, p->dist ? p->panels : 1, info);
    if (p->dist && p->env.be->host_alloc)
        info->pinned_bytes += tide_gemm_dist_panel_bytes(p->dist, 0);
    else if (p->dist)
        info->host_bytes += tide_gemm_dist_panel_bytes(p->dist, 0);
    if (p->dist)
        info->device_bytes += tide_gemm_dist_panel_bytes(p->dist, 1);
    info->backend = p->o.backend;
    info->location = p->o.location;
    return TIDE_SUCCESS;
}

int tide_gemm_plan_describe(const tide_gemm_plan *p, char *buf, size_t len)
{
    if (!p || !buf || !len)
        return tide_fail(p ? p->ctx : NULL, TIDE_ERR_ARGUMENT,
                         "tide_gemm_plan_describe: %s", p ? "no buffer" : "plan is NULL");
    char how[280], local[160] = "", summa[120] = "";
    if (p->streamed)
        tide_gemm_streamed_describe(p->streamed, local, sizeof local);
    else
        snprintf(local, sizeof local, "%s", p->env.be->gpu ? "cublas" : "cblas");
    if (p->dist)
        snprintf(summa, sizeof summa, "summa on %dx%d ranks, %d panels of up to %lld%s; "
                 "this rank's updates: ", p->grid[0], p->grid[1], p->panels, p->widest,
                 !device_gpu(p)                                   ? ""
                 : p->env.transport == TIDE_EXCHANGE_NCCL     ? " over nccl"
                 : p->env.transport == TIDE_EXCHANGE_CUDA_MPI ? " over cuda-mpi"
                                                              : " through host memory");
    snprintf(how, sizeof how, "%s%s", summa, local);
    snprintf(buf, len, "gemm %lldx%lldx%lld %s%s %c%c %s %s %s: %s", p->m, p->n, p->k,
             p->g.cplx ? "complex " : "", p->o.precision == TIDE_DOUBLE ? "double" : "float",
             "NTC"[p->o.transa], "NTC"[p->o.transb],
             p->o.order == TIDE_COL_MAJOR ? "col" : "row", p->env.be->name,
             p->o.location == TIDE_LOCATION_HOST ? "host" : "device", how);
    return TIDE_SUCCESS;
}

int tide_gemm_plan_set_stream(tide_gemm_plan *p, void *stream)
{
    if (!p)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_gemm_plan_set_stream: plan is NULL");
    p->o.stream = stream;
    return TIDE_SUCCESS;
}

/* ---- running --------------------------------------------------------------------------- */

/* Whether a matrix with elements is missing or lies in the wrong memory (the reason in why,
 * worded to be followed by the call's name). */
static int check_array(const tide_gemm_plan *p, const char *name, const void *x,
                       long long count, char *why, size_t len)
{
    if (count == 0)
        return TIDE_SUCCESS;
    if (!x)
        return snprintf(why, len, "passed NULL for %s (%lld elements) to", name, count),
               TIDE_ERR_ARGUMENT;
    const char *m = tide_array_location(p->ctx, p->o.location == TIDE_LOCATION_DEVICE, x);
    if (*m)
        return snprintf(why, len, "passed %s as %s to", m, name), TIDE_ERR_ARGUMENT;
    return TIDE_SUCCESS;
}

/* Local checks of an execution's arguments (the reason in why). */
static int start(const tide_gemm_plan *p, const void *a, const void *b, void *c, int enter_st,
                 char *why, size_t len)
{
    if (enter_st)
        return snprintf(why, len, "could not make GPU %d current (%s) in", p->ctx->dev.device,
                        tide_backend_cuda()->last_error()), enter_st;
    int st = check_array(p, "A", a, p->count[0], why, len);
    st = st ? st : check_array(p, "B", b, p->count[1], why, len);
    return st ? st : check_array(p, "C", c, p->count[2], why, len);
}

/* The multiply on the backend: streamed, or after the caller's work on the plan's stream
 * SUMMA's program or the one-op program, run by the plan core's executor. */
static int multiply(tide_gemm_plan *p, tide_scalar alpha, const void *a, const void *b,
                    tide_scalar beta, void *c, char *err, size_t len)
{
    const tide_env *e = &p->env;
    if (p->g.m == 0 || p->g.n == 0)
        return TIDE_SUCCESS;
    const void *ga = p->swap ? b : a, *gb = p->swap ? a : b;
    if (p->streamed && !p->dist)
        return tide_gemm_streamed_execute(p->streamed, alpha, ga, gb, beta, c, p->o.stream, err,
                                        len);
    int st = tide_order_after(p->entry, p->o.stream, e->be->gpu ? e->stream : NULL);
    /* SUMMA packs panels on the CPU: the caller's work on the matrices must have finished */
    if (!st && p->dist && e->be->gpu)
        st = e->be->sync(e);
    if (st)
        return snprintf(err, len, "could not wait for the caller's earlier CUDA work: %s",
                        e->be->last_error()), TIDE_ERR_BACKEND;
    if (p->dist)
        return tide_gemm_dist_execute(p->dist, alpha, ga, gb, beta, c, err, len);
    const char *failed_at = "";
    p->bound = (tide_gemm_operands){.g = p->g, .alpha = alpha, .beta = beta, .a = ga, .b = gb};
    st = tide_program_run(&p->local, e, NULL, NULL, c, TIDE_SUCCESS, &failed_at, NULL, 0);
    int sync = e->be->sync(e);
    st = st ? st : sync;
    if (st)
        snprintf(err, len, "%s", e->be->last_error());
    return st;
}

/* Local: alpha and beta ({re, im}) present, and real for real matrices (the reason in why,
 * worded to be followed by the call's name). */
static int check_scalars(const tide_gemm_plan *p, const double *alpha, const double *beta,
                         char *why, size_t len)
{
    if (!alpha || !beta)
        return snprintf(why, len, "passed NULL for %s to", alpha ? "beta" : "alpha"),
               TIDE_ERR_ARGUMENT;
    if (!p->g.cplx && (alpha[1] != 0 || beta[1] != 0))
        return snprintf(why, len, "passed alpha = %g%+gi and beta = %g%+gi, not real, for real "
                        "matrices to", alpha[0], alpha[1], beta[0], beta[1]),
               TIDE_ERR_ARGUMENT;
    return TIDE_SUCCESS;
}

/* Collective: the checks of the arrays and scalars ({re, im} each, NULL refused), then the
 * multiply, each verdict agreed; call names the entry point in messages. */
static int execute(tide_gemm_plan *p, const char *call, const double *alpha, const void *a,
                   const void *b, const double *beta, void *c)
{
    int prev, enter_st = tide_device_enter(p->ctx, &prev);
    char why[TIDE_MSG_LEN] = "";
    int st = start(p, a, b, c, enter_st, why, sizeof why);
    st = st ? st : check_scalars(p, alpha, beta, why, sizeof why);
    if (st)
        tide_fail(p->ctx, st, "%s %s", why, call);
    const double none[2] = {0, 0}, *al = alpha ? alpha : none, *be = beta ? beta : none;
    const tide_call_arg agreed[] = {tide_call_real("alpha", al[0]),
                                    tide_call_real("the imaginary part of alpha", al[1]),
                                    tide_call_real("beta", be[0]),
                                    tide_call_real("the imaginary part of beta", be[1])};
    st = tide_agree_call(p->ctx, call, st, agreed, 4);
    if (!st) {
        st = multiply(p, (tide_scalar){alpha[0], alpha[1]}, a, b,
                      (tide_scalar){beta[0], beta[1]}, c, why, sizeof why);
        if (st)
            tide_fail(p->ctx, st, "%s failure during %s: %s", p->env.be->name, call, why);
        st = tide_agree(p->ctx, st);
    }
    tide_device_leave(prev);
    return st;
}

int tide_gemm_execute(tide_gemm_plan *p, double alpha, const void *a, const void *b,
                      double beta, void *c)
{
    if (!p)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_gemm_execute: plan is NULL");
    const double al[2] = {alpha, 0}, be[2] = {beta, 0};
    return execute(p, "tide_gemm_execute", al, a, b, be, c);
}

int tide_gemm_execute_complex(tide_gemm_plan *p, const double alpha[2], const void *a,
                              const void *b, const double beta[2], void *c)
{
    if (!p)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_gemm_execute_complex: plan is NULL");
    return execute(p, "tide_gemm_execute_complex", alpha, a, b, beta, c);
}

int tide_gemm(tide_context *ctx, long long m, long long n, long long k, double alpha,
              const void *a, const void *b, double beta, void *c,
              const tide_gemm_options *opts)
{
    tide_gemm_plan *p = NULL;
    int st = tide_gemm_plan_create(ctx, m, n, k, opts, &p);
    if (!st)
        st = tide_gemm_execute(p, alpha, a, b, beta, c);
    tide_gemm_plan_destroy(p);
    return st;
}
