/*
 * band.c: band matrix power plans (tide.h: x <- A^steps x) on the plan core. A plan takes the
 * request (agreed on every rank with the argument table: n, precision, backend, location,
 * bandwidths, steps per pass; the rows' ranges checked to tile the matrix), then builds its
 * rows grown by the halo, the matrix on them and its pass program (band_build.c); runs are
 * band_run.c's. This file takes the request and makes, describes and frees plans.
 */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "band/band_plan.h"

static const char CALL[] = "tide_band_plan_create";

enum { F_N, F_PRECISION, F_BACKEND, F_LOCATION, F_KL, F_KU, F_STEPS, F_SLAB, NFIELDS };
static const tide_arg_field fields[NFIELDS] = {
    {"n", 1, INT_MAX},
    {"option precision", TIDE_DOUBLE, TIDE_FLOAT},
    {"option backend", TIDE_BACKEND_AUTO, TIDE_BACKEND_CUDA},
    {"option location", TIDE_LOCATION_HOST, TIDE_LOCATION_DEVICE},
    {"option kl", 0, TIDE_BAND_MAX_BANDWIDTH},
    {"option ku", 0, TIDE_BAND_MAX_BANDWIDTH},
    {"option steps_per_pass", 0, TIDE_BAND_MAX_STEPS},
    {"option slab_rows", 0, INT_MAX},
};
static const char *const box_names[] = {"rows"};
static const tide_args_spec spec = {CALL, fields, NFIELDS, NULL, 0, box_names, 1};

void tide_band_options_init(tide_band_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
    o->precision = TIDE_DOUBLE;
    o->backend = TIDE_BACKEND_AUTO;
    o->location = TIDE_LOCATION_HOST;
    o->kl = o->ku = 1;
}

size_t tide_band_elem(const tide_band_plan *p)
{
    return p->o.precision == TIDE_DOUBLE ? sizeof(double) : sizeof(float);
}

/* This rank's request: the fields, its rows as a box of the n x 1 x 1 grid, and what it can
 * see wrong alone (recorded in r). */
static void make_request(int n, int lo, int hi, const tide_band_options *o,
                         tide_band_plan **plan, tide_args *r)
{
    memset(r, 0, sizeof *r);
    if (!plan)
        tide_args_fail(r, TIDE_ERR_ARGUMENT, "plan pointer is NULL");
    int v[NFIELDS] = {n, o->precision, o->backend, o->location, o->kl, o->ku,
                      o->steps_per_pass, o->slab_rows};
    memcpy(r->v, v, sizeof v);
    tide_args_check_ranges(&spec, r);
    if (lo > hi || lo < 0 || hi > n)
        tide_args_fail(r, TIDE_ERR_BOX, "rows [%d, %d) are not a range of the matrix's %d",
                       lo, hi, n);
    if (hi > lo && !o->diagonals)
        tide_args_fail(r, TIDE_ERR_ARGUMENT, "option diagonals is NULL on a rank with %d rows",
                       hi - lo);
    r->has[0] = 1;
    r->box[0] = (tide_box){{lo, 0, 0}, {hi > lo ? hi : lo, 1, 1}, {0, 1, 2}};
}

/* The verdict on the agreed request, the same on every rank. */
static int judge(tide_context *ctx, const tide_args *all)
{
    const int *v = all[0].v;
    int st = tide_args_backend(ctx, v[F_BACKEND], v[F_LOCATION]);
    int g[3] = {v[F_N], 1, 1};
    if (!st)
        st = tide_args_check_tiling(ctx, &spec, all, 0, g);
    return st;
}

int tide_band_plan_destroy(tide_band_plan *p)
{
    if (!p)
        return TIDE_SUCCESS;
    tide_context_release(p->ctx, &p->held);
    int prev;
    tide_device_enter(p->ctx, &prev);
    const tide_env *e = &p->env;
    if (e->be) {
        if (p->pass.state)
            e->be->band_destroy(e, &p->pass);
        e->be->free(p->ea);
        e->be->free(p->eb);
        e->be->free(p->diag);
        tide_band_streamed_destroy(e, p->streamed);
        if (e->stream)
            e->be->stream_destroy(e->stream);
    }
    tide_order_destroy(p->entry);
    tide_halo_destroy(p->halo);
    tide_device_leave(prev);
    if (p->matrix_pinned)
        p->env.be->host_free(p->host_matrix);
    else
        free(p->host_matrix);
    free(p->host_x);
    free(p);
    return TIDE_SUCCESS;
}

/* The plan's frame from the agreed request: options, rows, backend and stream (local; the
 * reason in err). */
static tide_band_plan *frame(tide_context *ctx, const tide_args *all,
                             const tide_band_options *o, int *st, char *err, size_t len)
{
    int cuda = tide_wants_cuda(ctx, o->backend);
    tide_band_plan *p = calloc(1, sizeof *p);
    if (!p) {
        *st = TIDE_ERR_NOMEM, snprintf(err, len, "out of memory creating the plan");
        return NULL;
    }
    p->ctx = ctx;
    p->o = *o;
    p->o.diagonals = NULL;
    p->o.backend = cuda ? TIDE_BACKEND_CUDA : TIDE_BACKEND_CPU;
    p->n = all[0].v[F_N];
    p->lo = all[ctx->rank].box[0].lo[0];
    p->hi = all[ctx->rank].box[0].hi[0];
    p->env.ctx = ctx;
    p->env.be = cuda ? tide_backend_cuda() : &tide_backend_cpu;
    p->env.threads = ctx->threads;
    if (tide_order_create(ctx, &p->entry) || (cuda && p->env.be->stream_create(&p->env.stream, 0)))
        *st = TIDE_ERR_BACKEND, snprintf(err, len, "%s", p->env.be->last_error());
    return p;
}

/* Collective: the plan of an agreed request; failures agreed. */
static int make_plan(tide_context *ctx, const tide_args *all, const tide_band_options *o,
                     tide_band_plan **out)
{
    char err[TIDE_MSG_LEN] = "";
    int st = TIDE_SUCCESS, P = ctx->nranks;
    tide_band_plan *p = frame(ctx, all, o, &st, err, sizeof err);
    int (*every)[2] = malloc(sizeof *every * (size_t)P);
    if (!every && !st)
        st = TIDE_ERR_NOMEM, snprintf(err, sizeof err, "out of memory creating the plan");
    for (int r = 0; every && r < P; r++)
        every[r][0] = all[r].box[0].lo[0], every[r][1] = all[r].box[0].hi[0];
    st = tide_band_build(ctx, p, (const int(*)[2])every, o->diagonals, st, err, sizeof err);
    free(every);
    if (st)
        tide_fail(ctx, st, "%s: %s", CALL, err);
    st = tide_agree(ctx, st);
    if (st) {
        tide_band_plan_destroy(p);
        return st;
    }
    *out = p;
    tide_log(ctx, TIDE_LOG_INFO, "band plan: kl %d ku %d %s, %d steps per pass, rows [%d, %d)",
             p->o.kl, p->o.ku, p->env.be->name, p->steps_per_pass, p->lo, p->hi);
    return TIDE_SUCCESS;
}

int tide_band_plan_create(tide_context *ctx, int n, int lo, int hi,
                          const tide_band_options *opts, tide_band_plan **plan)
{
    if (!ctx)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "%s: context is NULL", CALL);
    int prev, st = tide_create_enter(ctx, CALL, &prev);
    if (st)
        return st;
    tide_band_options o;
    tide_args mine;
    tide_band_options_init(&o);
    if (!tide_options_read(opts, &o, sizeof o, offsetof(tide_band_options, precision))) {
        memset(&mine, 0, sizeof mine);
        tide_args_fail(&mine, TIDE_ERR_ARGUMENT, "options not filled by "
                       "tide_band_options_init (its size member is unset)");
    } else {
        make_request(n, lo, hi, &o, plan, &mine);
    }
    tide_args *all = NULL;
    st = tide_args_agree(ctx, &spec, &mine, &all);
    if (!st)
        st = judge(ctx, all);
    if (!st)
        st = make_plan(ctx, all, &o, plan);
    if (!st)
        tide_context_hold(ctx, &(*plan)->held);
    free(all);
    tide_device_leave(prev);
    return st;
}

/* ---- queries --------------------------------------------------------------------------- */

int tide_band_plan_info(const tide_band_plan *p, tide_band_info *info)
{
    if (!p || !info)
        return tide_fail(p ? p->ctx : NULL, TIDE_ERR_ARGUMENT,
                         "tide_band_plan_info: %s is NULL", p ? "info" : "plan");
    int gpu = p->env.be->gpu;
    size_t elem = tide_band_elem(p);
    size_t grown = (size_t)(p->ehi - p->elo);
    size_t held = grown * elem * (size_t)(3 + p->o.kl + p->o.ku); /* two arrays, A */
    size_t staging = p->halo ? tide_halo_bytes(p->halo, 0) : 0;
    memset(info, 0, sizeof *info);
    info->lo = p->lo, info->hi = p->hi;
    info->bytes = (size_t)(p->hi - p->lo) * elem;
    info->host_bytes = p->pass.state_bytes + (gpu ? 0 : held + staging);
    info->pinned_bytes = gpu ? staging : 0;
    info->device_bytes = gpu ? held + (p->halo ? tide_halo_bytes(p->halo, 1) : 0) : 0;
    info->kl = p->o.kl, info->ku = p->o.ku;
    info->steps_per_pass = p->steps_per_pass;
    double terms = 0; /* the matrix entries of this rank's rows */
    for (int i = p->lo; i < p->hi; i++) {
        int j0 = i - p->o.kl < 0 ? 0 : i - p->o.kl;
        int j1 = i + p->o.ku > p->n - 1 ? p->n - 1 : i + p->o.ku;
        terms += j1 - j0 + 1;
    }
    info->flops = 2 * terms;
    info->bytes_per_step = (double)elem * (2.0 * (p->hi - p->lo) + terms);
    info->backend = p->o.backend;
    info->location = p->o.location;
    if (p->out_of_card) { /* the slabs' buffers where the arrays were; A and x's halo in host
                           * memory */
        size_t slabs = 0, pinned = 0;
        if (p->streamed)
            tide_band_streamed_memory(p->streamed, &slabs, &pinned);
        size_t matrix = grown * elem * (size_t)(p->o.kl + p->o.ku + 1);
        size_t x = p->host_x ? grown * elem : 0;
        info->host_bytes = p->pass.state_bytes + (p->matrix_pinned ? 0 : matrix) + x + staging +
                           (gpu ? 0 : slabs);
        info->pinned_bytes = pinned + (p->matrix_pinned ? matrix : 0);
        info->device_bytes = gpu ? slabs : 0;
        info->slabs = p->streamed ? tide_band_streamed_slabs(p->streamed) : 0;
        info->slab_rows = p->slab;
    }
    if (p->halo) {
        info->halo_rows = tide_halo_points(p->halo);
        info->exchanges = p->tally.exchanges;
        info->halo_seconds = p->tally.seconds;
    }
    return TIDE_SUCCESS;
}

int tide_band_plan_describe(const tide_band_plan *p, char *buf, size_t len)
{
    if (!p || !buf || !len)
        return tide_fail(p ? p->ctx : NULL, TIDE_ERR_ARGUMENT,
                         "tide_band_plan_describe: %s", p ? "no buffer" : "plan is NULL");
    char halo[48] = "";
    if (p->halo)
        snprintf(halo, sizeof halo, "halo %d+%d > ", p->steps_per_pass * p->o.kl,
                 p->steps_per_pass * p->o.ku);
    if (p->out_of_card) {
        snprintf(buf, len, "band kl %d ku %d %s %s: %s%d slabs of <= %d rows, each: upload > "
                 "%d levels of band[1 step] > download", p->o.kl, p->o.ku,
                 p->o.precision == TIDE_DOUBLE ? "double" : "float", p->env.be->name, halo,
                 p->streamed ? tide_band_streamed_slabs(p->streamed) : 0, p->slab,
                 p->steps_per_pass);
        return TIDE_SUCCESS;
    }
    int host_gpu = p->env.be->gpu && p->o.location == TIDE_LOCATION_HOST;
    snprintf(buf, len, "band kl %d ku %d %s %s: %s%s%s%s", p->o.kl, p->o.ku,
             p->o.precision == TIDE_DOUBLE ? "double" : "float", p->env.be->name,
             host_gpu ? "upload > " : "", halo, p->band_op.what, host_gpu ? " > download" : "");
    return TIDE_SUCCESS;
}

int tide_band_plan_set_stream(tide_band_plan *p, void *stream)
{
    if (!p)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_band_plan_set_stream: plan is NULL");
    p->o.stream = stream;
    return TIDE_SUCCESS;
}
