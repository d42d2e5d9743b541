/*
 * gemm.c: matrix multiply plans on the plan core. A plan validates the request (the same
 * verdict on every rank), turns it into one column-major multiply (a row-major C = op(A) op(B)
 * is the column-major C^T = op(B)^T op(A)^T: the operands swap, each keeps its transpose flag)
 * and runs it through the backend's gemm entry: the CPU BLAS on the CPU, cuBLAS on device
 * matrices, and for host matrices on the GPU the out-of-card scheme of gemm_stream.c.
 */
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "args.h"
#include "backend.h"
#include "gemm_stream.h"

struct tide_gemm_plan {
    tide_context *ctx;
    tide_gemm_options o;
    long long m, n, k;      /* the caller's */
    tide_gemm_desc g;       /* the column-major multiply the plan runs */
    int swap;               /* row major: g's A is the caller's B and the other way round */
    tide_env env;
    void *blas;             /* the backend's gemm handle */
    tide_gemm_stream *stream; /* host matrices through the GPU */
    void *entry;            /* orders runs after the caller's CUDA work */
};

/* ---- the request ----------------------------------------------------------------------- */

enum {
    F_M, F_N, F_K, F_LDA, F_LDB, F_LDC, F_PRECISION, F_BACKEND, F_LOCATION, F_ORDER, F_TRANSA,
    F_TRANSB, F_TILE, F_PANEL, NFIELDS
};
static const tide_arg_field fields[NFIELDS] = {
    {"m", 0, INT_MAX},
    {"n", 0, INT_MAX},
    {"k", 0, INT_MAX},
    {"option lda", 1, INT_MAX},
    {"option ldb", 1, INT_MAX},
    {"option ldc", 1, INT_MAX},
    {"option precision", TIDE_DOUBLE, TIDE_FLOAT},
    {"option backend", TIDE_BACKEND_AUTO, TIDE_BACKEND_CUDA},
    {"option location", TIDE_LOCATION_HOST, TIDE_LOCATION_DEVICE},
    {"option order", TIDE_COL_MAJOR, TIDE_ROW_MAJOR},
    {"option transa", TIDE_NOTRANS, TIDE_TRANS},
    {"option transb", TIDE_NOTRANS, TIDE_TRANS},
    {"option tile", 0, INT_MAX},
    {"option panel", 0, INT_MAX},
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

static void make_request(long long m, long long n, long long k, const tide_gemm_options *o,
                         tide_gemm_plan **plan, tide_args *r)
{
    memset(r, 0, sizeof *r);
    if (!plan)
        tide_args_fail(r, TIDE_ERR_ARGUMENT, "plan pointer is NULL");
    r->v[F_M] = field(r, "m", m);
    r->v[F_N] = field(r, "n", n);
    r->v[F_K] = field(r, "k", k);
    int v[] = {o->precision, o->backend, o->location, o->order, o->transa, o->transb, o->tile,
               o->panel};
    memcpy(r->v + F_PRECISION, v, sizeof v);
    r->v[F_LDA] = r->v[F_LDB] = r->v[F_LDC] = 1; /* checked below, once the enums are valid */
    tide_args_check_ranges(&spec, r);
    if (r->status)
        return;
    int ord = o->order, ta = o->transa == TIDE_TRANS, tb = o->transb == TIDE_TRANS;
    long long lda = leading(r, "a", o->lda, ord, ta ? k : m, ta ? m : k);
    long long ldb = leading(r, "b", o->ldb, ord, tb ? n : k, tb ? k : n);
    long long ldc = leading(r, "c", o->ldc, ord, m, n);
    r->v[F_LDA] = field(r, "option lda", lda);
    r->v[F_LDB] = field(r, "option ldb", ldb);
    r->v[F_LDC] = field(r, "option ldc", ldc);
}

/* The verdict on the agreed request, the same on every rank. */
static int judge(tide_context *ctx, const tide_args *all)
{
    if (ctx->nranks > 1)
        return tide_fail(ctx, TIDE_ERR_UNSUPPORTED, "tide_gemm_plan_create: matrix multiply "
                         "plans run on a context of one rank in this version, this one has %d "
                         "(make one on MPI_COMM_SELF)", ctx->nranks);
    return tide_args_backend(ctx, all[0].v[F_BACKEND], all[0].v[F_LOCATION]);
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
    int prev;
    tide_device_enter(p->ctx, &prev);
    tide_gemm_stream_destroy(p->stream);
    const tide_env *e = &p->env;
    if (e->be) {
        e->be->gemm_destroy(p->blas);
        if (e->stream)
            e->be->stream_destroy(e->stream);
    }
    tide_order_destroy(p->entry);
    tide_device_leave(prev);
    free(p);
    return TIDE_SUCCESS;
}

/* The column-major multiply of the agreed request. */
static void make_desc(tide_gemm_plan *p, const int *v)
{
    int ta = v[F_TRANSA], tb = v[F_TRANSB];
    p->swap = v[F_ORDER] == TIDE_ROW_MAJOR;
    p->g = p->swap ? (tide_gemm_desc){v[F_PRECISION] == TIDE_DOUBLE, tb, ta, v[F_N], v[F_M],
                                      v[F_K], v[F_LDB], v[F_LDA], v[F_LDC]}
                   : (tide_gemm_desc){v[F_PRECISION] == TIDE_DOUBLE, ta, tb, v[F_M], v[F_N],
                                      v[F_K], v[F_LDA], v[F_LDB], v[F_LDC]};
}

static int host_gpu(const tide_gemm_plan *p)
{
    return p->env.be->gpu && p->o.location == TIDE_LOCATION_HOST;
}

/* The backend's handle, and the out-of-card scheme for host matrices on the GPU (local; the
 * reason in err). */
static int build(tide_gemm_plan *p, char *err, size_t len)
{
    const tide_env *e = &p->env;
    int st = e->be->gemm_create(&p->blas);
    if (st == TIDE_ERR_UNSUPPORTED)
        return snprintf(err, len, "this build has no CPU BLAS (CBLAS) for backend cpu"), st;
    if (st)
        return snprintf(err, len, "%s", e->be->last_error()), st;
    if (!host_gpu(p) || p->g.m == 0 || p->g.n == 0)
        return TIDE_SUCCESS;
    tide_gemm_stream_desc d = {p->g, e, p->blas, p->ctx->dev.budget_bytes, p->o.tile,
                               p->o.panel};
    return tide_gemm_stream_create(&d, &p->stream, err, len);
}

/* Collective: the plan of an agreed request; failures agreed. */
static int make_plan(tide_context *ctx, const tide_args *all, const tide_gemm_options *o,
                     tide_gemm_plan **out)
{
    char err[TIDE_MSG_LEN] = "";
    int st = TIDE_SUCCESS, cuda = tide_wants_cuda(ctx, o->backend);
    tide_gemm_plan *p = calloc(1, sizeof *p);
    if (!p)
        st = TIDE_ERR_NOMEM, snprintf(err, sizeof err, "out of memory creating the plan");
    if (p) {
        const int *v = all[0].v;
        p->ctx = ctx;
        p->o = *o;
        p->o.backend = cuda ? TIDE_BACKEND_CUDA : TIDE_BACKEND_CPU;
        p->m = v[F_M], p->n = v[F_N], p->k = v[F_K];
        make_desc(p, v);
        p->env.ctx = ctx;
        p->env.be = cuda ? tide_backend_cuda() : &tide_backend_cpu;
        p->env.threads = ctx->threads;
        if (tide_order_create(ctx, &p->entry) ||
            (cuda && p->env.be->stream_create(&p->env.stream)))
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
    char what[160];
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
    tide_gemm_options_init(&o);
    if (!tide_options_read(opts, &o, sizeof o, offsetof(tide_gemm_options, precision))) {
        memset(&mine, 0, sizeof mine);
        tide_args_fail(&mine, TIDE_ERR_ARGUMENT, "options not filled by "
                       "tide_gemm_options_init (its size member is unset)");
    } else {
        make_request(m, n, k, &o, plan, &mine);
    }
    tide_args *all = NULL;
    st = tide_args_agree(ctx, &spec, &mine, &all);
    if (!st)
        st = judge(ctx, all);
    if (!st)
        st = make_plan(ctx, all, &o, plan);
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
    info->flops = 2.0 * p->m * p->n * p->k;
    if (p->stream)
        tide_gemm_stream_info(p->stream, info);
    info->backend = p->o.backend;
    info->location = p->o.location;
    return TIDE_SUCCESS;
}

int tide_gemm_plan_describe(const tide_gemm_plan *p, char *buf, size_t len)
{
    if (!p || !buf || !len)
        return tide_fail(p ? p->ctx : NULL, TIDE_ERR_ARGUMENT,
                         "tide_gemm_plan_describe: %s", p ? "no buffer" : "plan is NULL");
    char how[96];
    if (p->stream)
        tide_gemm_stream_describe(p->stream, how, sizeof how);
    else
        snprintf(how, sizeof how, "%s", p->env.be->gpu ? "cublas" : "cblas");
    snprintf(buf, len, "gemm %lldx%lldx%lld %s %c%c %s %s %s: %s", p->m, p->n, p->k,
             p->o.precision == TIDE_DOUBLE ? "double" : "float", "NT"[p->o.transa],
             "NT"[p->o.transb], p->o.order == TIDE_COL_MAJOR ? "col" : "row", p->env.be->name,
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
    int st = check_array(p, "A", a, p->m * p->k, why, len);
    st = st ? st : check_array(p, "B", b, p->k * p->n, why, len);
    return st ? st : check_array(p, "C", c, p->m * p->n, why, len);
}

/* The multiply on the backend: on the plan's stream after the caller's work, or streamed. */
static int multiply(tide_gemm_plan *p, double alpha, const void *a, const void *b, double beta,
                    void *c, char *err, size_t len)
{
    const tide_env *e = &p->env;
    if (p->g.m == 0 || p->g.n == 0)
        return TIDE_SUCCESS;
    const void *ga = p->swap ? b : a, *gb = p->swap ? a : b;
    if (p->stream)
        return tide_gemm_stream_execute(p->stream, alpha, ga, gb, beta, c, p->o.stream, err,
                                        len);
    int st = tide_order_after(p->entry, p->o.stream, e->be->gpu ? e->stream : NULL);
    if (st)
        return snprintf(err, len, "could not wait for the caller's earlier CUDA work: %s",
                        e->be->last_error()), TIDE_ERR_BACKEND;
    st = e->be->gemm(e, p->blas, &p->g, alpha, ga, gb, beta, c);
    int sync = e->be->sync(e);
    st = st ? st : sync;
    if (st)
        snprintf(err, len, "%s", e->be->last_error());
    return st;
}

int tide_gemm_execute(tide_gemm_plan *p, double alpha, const void *a, const void *b,
                      double beta, void *c)
{
    if (!p)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_gemm_execute: plan is NULL");
    int prev, enter_st = tide_device_enter(p->ctx, &prev);
    char why[TIDE_MSG_LEN] = "";
    int st = start(p, a, b, c, enter_st, why, sizeof why);
    if (st)
        tide_fail(p->ctx, st, "%s tide_gemm_execute", why);
    st = tide_agree(p->ctx, st);
    if (!st) {
        st = multiply(p, alpha, a, b, beta, c, why, sizeof why);
        if (st)
            tide_fail(p->ctx, st, "%s failure during tide_gemm_execute: %s",
                      p->env.be->name, why);
        st = tide_agree(p->ctx, st);
    }
    tide_device_leave(prev);
    return st;
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
