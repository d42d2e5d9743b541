/*
 * stencil.c: temporal-blocked stencil plans on the plan core. A plan validates the request,
 * turns the shape into taps in the storage order of the data, has the backend prepare its
 * sweep (backend.h: tide_sweep) and runs steps as passes of one sweep op (program.h): each
 * pass fuses up to `fuse` steps and goes from one array into the other, the caller's u and the
 * plan's work array taking turns, with an even number of passes where the steps allow so that
 * the result lands in u without a copy. A GPU plan on host arrays keeps both arrays on the
 * device for the whole run: u goes up once and comes down once.
 *
 * On several ranks each rank owns a box of the grid (the caller's, or a block of the process
 * grid with the smallest halos) and works on two arrays of its box grown by a halo of fuse r
 * points along each dimension it does not hold whole (the redundant ghost zones of Jin 2014:
 * one exchange per fuse steps). Before each pass the halo is filled from its owners (comm/halo.h);
 * the pass then runs the same sweep on the grown box, treating the halo's outer faces as
 * boundaries: each step spoils r more points inward from them, so after fuse steps the
 * points of the rank's own box are exactly the single-rank plan's, bit for bit (the same
 * sweep, the same arithmetic on the same values), and the halo is filled again. The exchange
 * and the copies between u and the grown arrays go through the backend table, so on the GPU
 * the halo is packed and unpacked on the device and only its points cross PCIe. Split passes
 * (stencil_split.h; option overlap) sweep the own points that need no halo while it travels.
 *
 * This file takes the request and makes, describes and frees plans; stencil_build.c builds
 * what a plan holds, stencil_run.c runs it.
 */
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "comm/region.h"
#include "stencil/stencil_plan.h"

static const char *const shape_names[] = {"7pt", "27pt", "star", "box"};

/* ---- the request ----------------------------------------------------------------------- */

enum {
    F_N0, F_N1, F_N2, F_PRECISION, F_BACKEND, F_LOCATION, F_SHAPE, F_RADIUS, F_TAPS, F_BC,
    F_FUSE = F_BC + 3, F_SOURCE, F_REACH, F_LEVELS, F_OVERLAP, F_EXCHANGE, NFIELDS
};
static const tide_arg_field fields[NFIELDS] = {
    {"n[0]", 1, INT_MAX},
    {"n[1]", 1, INT_MAX},
    {"n[2]", 1, INT_MAX},
    {"option precision", TIDE_DOUBLE, TIDE_FLOAT},
    {"option backend", TIDE_BACKEND_AUTO, TIDE_BACKEND_CUDA},
    {"option location", TIDE_LOCATION_HOST, TIDE_LOCATION_DEVICE},
    {"option shape", TIDE_STENCIL_7PT, TIDE_STENCIL_BOX},
    {"option radius", 1, TIDE_STENCIL_MAX_RADIUS},
    {"option npoints", 1, TIDE_SWEEP_MAX_TAPS},
    {"option bc[0]", TIDE_BC_PERIODIC, TIDE_BC_DIRICHLET},
    {"option bc[1]", TIDE_BC_PERIODIC, TIDE_BC_DIRICHLET},
    {"option bc[2]", TIDE_BC_PERIODIC, TIDE_BC_DIRICHLET},
    {"option fuse", 0, TIDE_STENCIL_MAX_FUSE},
    {"option source given", 0, 1},
    {"the stencil's radius", 0, TIDE_STENCIL_MAX_RADIUS},
    {"option level_steps", 0, TIDE_STENCIL_MAX_FUSE},
    {"option overlap", -1, 1},
    {"option exchange", TIDE_EXCHANGE_AUTO, TIDE_EXCHANGE_DIRECT},
};
static const char *const box_names[] = {"data"};
static const tide_args_spec spec = {"tide_stencil_plan_create", fields, NFIELDS, NULL, 0,
                                    box_names, 1};

/* The taps of the request in (dx, dy, dz) order: the built-in shapes' fixed offsets with the
 * caller's weights or the defaults (tide.h), or the caller's own. Returns the count, or 0 with
 * the failure recorded in r. off and w hold TIDE_SWEEP_MAX_TAPS. */
static int request_taps(const tide_stencil_options *o, int radius, int (*off)[3], double *w,
                        tide_args *r)
{
    static const int star7[7][3] = {{0, 0, 0}, {-1, 0, 0}, {1, 0, 0}, {0, -1, 0},
                                    {0, 1, 0}, {0, 0, -1}, {0, 0, 1}};
    static const double line[3] = {0.25, 0.5, 0.25};
    int n;
    if (o->shape == TIDE_STENCIL_7PT) {
        n = 7;
        memcpy(off, star7, sizeof star7);
        for (int i = 0; i < n; i++)
            w[i] = o->weights ? o->weights[i] : i ? 0.125 : 0.25;
    } else if (o->shape == TIDE_STENCIL_27PT) {
        n = 27;
        for (int i = 0; i < n; i++) {
            int d[3] = {i / 9 - 1, i / 3 % 3 - 1, i % 3 - 1};
            memcpy(off[i], d, sizeof d);
            w[i] = o->weights ? o->weights[i] : line[d[0] + 1] * line[d[1] + 1] * line[d[2] + 1];
        }
    } else {
        n = o->npoints;
        if (!o->offsets || !o->weights)
            return tide_args_fail(r, TIDE_ERR_ARGUMENT, "option %s is NULL; shape %s takes "
                                  "its taps from options offsets and weights",
                                  o->offsets ? "weights" : "offsets", shape_names[o->shape]), 0;
        memcpy(off, o->offsets, (size_t)n * sizeof *off);
        memcpy(w, o->weights, (size_t)n * sizeof *w);
    }
    for (int i = 0; i < n; i++) {
        const int *d = off[i];
        if (!isfinite(w[i]))
            return tide_args_fail(r, TIDE_ERR_ARGUMENT, "weight %d of the stencil is %g; "
                                  "weights must be finite", i, w[i]), 0;
        int big = abs(d[0]) > radius || abs(d[1]) > radius || abs(d[2]) > radius;
        int axes = (d[0] != 0) + (d[1] != 0) + (d[2] != 0);
        if (big || (o->shape == TIDE_STENCIL_STAR && axes > 1))
            return tide_args_fail(r, TIDE_ERR_ARGUMENT, "offset %d of the stencil, (%d,%d,%d), "
                                  "lies %s", i, d[0], d[1], d[2],
                                  big ? "beyond its radius" : "off the axes of a star"), 0;
        for (int j = 0; j < i; j++)
            if (!memcmp(off[j], d, sizeof off[j]))
                return tide_args_fail(r, TIDE_ERR_ARGUMENT, "offsets %d and %d of the stencil "
                                      "are both (%d,%d,%d)", j, i, d[0], d[1], d[2]), 0;
    }
    return n;
}

static void make_request(const int n[3], const tide_box *box, const tide_stencil_options *o,
                         tide_stencil_plan **plan, tide_args *r, int (*off)[3], double *w)
{
    memset(r, 0, sizeof *r);
    if (!plan)
        tide_args_fail(r, TIDE_ERR_ARGUMENT, "plan pointer is NULL");
    if (!n)
        tide_args_fail(r, TIDE_ERR_ARGUMENT, "n is NULL");
    else
        memcpy(r->v, n, 3 * sizeof(int));
    int user = o->shape == TIDE_STENCIL_STAR || o->shape == TIDE_STENCIL_BOX;
    int v[] = {o->precision, o->backend, o->location, o->shape, user ? o->radius : 1,
               user ? o->npoints : o->shape == TIDE_STENCIL_27PT ? 27 : 7};
    memcpy(r->v + F_PRECISION, v, sizeof v);
    for (int d = 0; d < 3; d++)
        r->v[F_BC + d] = o->bc[d];
    r->v[F_FUSE] = o->fuse;
    r->v[F_SOURCE] = o->source != NULL;
    r->v[F_LEVELS] = o->level_steps;
    r->v[F_OVERLAP] = o->overlap;
    r->v[F_EXCHANGE] = o->exchange;
    tide_args_check_ranges(&spec, r);
    if (!r->status)
        r->v[F_TAPS] = request_taps(o, r->v[F_RADIUS], off, w, r);
    int reach = 1; /* the stencil's radius: its largest offset (tide.h) */
    for (int i = 0; i < r->v[F_TAPS]; i++)
        for (int d = 0; d < 3; d++)
            reach = abs(off[i][d]) > reach ? abs(off[i][d]) : reach;
    r->v[F_REACH] = reach;
    r->has[0] = box != NULL;
    if (box)
        r->box[0] = *box;
}

/* The verdict on the agreed request, the same on every rank. */
static int judge(tide_context *ctx, const tide_args *all)
{
    const int *v = all[0].v;
    int r = v[F_REACH];
    for (int d = 0; d < 3; d++) {
        if (v[F_BC + d] == TIDE_BC_NEUMANN)
            return tide_fail(ctx, TIDE_ERR_UNSUPPORTED, "tide_stencil_plan_create: option bc[%d] "
                             "is Neumann; stencils take periodic or Dirichlet boundaries", d);
        if (v[d] < 2 * r + 1)
            return tide_fail(ctx, TIDE_ERR_ARGUMENT, "tide_stencil_plan_create: n[%d] = %d is "
                             "smaller than the stencil: radius %d needs at least %d points",
                             d, v[d], r, 2 * r + 1);
    }
    if ((double)v[F_N0] * v[F_N1] * v[F_N2] > 1e18)
        return tide_fail(ctx, TIDE_ERR_TOO_LARGE, "tide_stencil_plan_create: %dx%dx%d is too "
                         "many points", v[F_N0], v[F_N1], v[F_N2]);
    if (v[F_EXCHANGE] == TIDE_EXCHANGE_DIRECT)
        return tide_fail(ctx, TIDE_ERR_UNSUPPORTED, "tide_stencil_plan_create: option exchange "
                         "direct: the halos do not take direct stores (nccl, cuda-mpi or p2p)");
    int st = tide_args_backend(ctx, v[F_BACKEND], v[F_LOCATION]);
    if (!st)
        st = tide_args_exchange(ctx, v[F_EXCHANGE], tide_wants_cuda(ctx, v[F_BACKEND]));
    if (!st && all[0].has[0])
        st = tide_args_check_tiling(ctx, &spec, all, 0, v);
    return st;
}

/* Collective, after judge (the tap counts agreed): every rank gives the same offsets and,
 * bit for bit, the same weights, else TIDE_ERR_MISMATCH on every rank naming the first that
 * differs. */
static int agree_taps(tide_context *ctx, int taps, const int (*off)[3], const double *w)
{
    static const char *call = "tide_stencil_plan_create";
    int at, lo, hi;
    int st = tide_args_first_difference(ctx, call, off, 3 * taps, MPI_INT, sizeof(int), &at,
                                        &lo, &hi);
    if (!st && at >= 0)
        return tide_fail(ctx, TIDE_ERR_MISMATCH, "%s: component %d of offset %d of the stencil "
                         "differs between ranks (%d and %d)", call, at % 3, at / 3, lo, hi);
    double x, y; /* the weights compared as their bits */
    if (!st)
        st = tide_args_first_difference(ctx, call, w, taps, MPI_LONG_LONG, sizeof(double), &at,
                                        &x, &y);
    if (!st && at >= 0)
        return tide_fail(ctx, TIDE_ERR_MISMATCH, "%s: weight %d of the stencil differs between "
                         "ranks (%.17g and %.17g)", call, at, x, y);
    return st;
}

void tide_stencil_options_init(tide_stencil_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
    o->precision = TIDE_DOUBLE;
    o->backend = TIDE_BACKEND_AUTO;
    o->location = TIDE_LOCATION_HOST;
    o->shape = TIDE_STENCIL_7PT;
    for (int d = 0; d < 3; d++)
        o->bc[d] = TIDE_BC_DIRICHLET;
}


/* ---- the plan -------------------------------------------------------------------------- */

int tide_stencil_plan_destroy(tide_stencil_plan *p)
{
    if (!p)
        return TIDE_SUCCESS;
    tide_context_release(p->ctx, &p->held);
    int prev;
    tide_device_enter(p->ctx, &prev);
    const tide_env *e = &p->env;
    if (e->be) {
        if (p->sweep.state)
            e->be->sweep_destroy(e, &p->sweep);
        tide_stencil_split_destroy(e, p->split);
        tide_stencil_streamed_destroy(p->streamed);
        e->be->free(p->work);
        for (int i = 0; i < p->halo_u.n; i++) /* out of core (the GPU backend's pinned) */
            e->be->host_free(p->halo_u.data[i]);
        for (int i = 0; i < p->halo_src.n; i++)
            e->be->host_free(p->halo_src.data[i]);
        e->be->free(p->ea);
        e->be->free(p->esrc);
        e->be->free(p->eb);
        e->be->free(p->dev_u);
        e->be->free(p->dev_source);
        if (e->stream)
            e->be->stream_destroy(e->stream);
    }
    tide_order_destroy(p->entry);
    tide_halo_destroy(p->halo);
    tide_device_leave(prev);
    free(p->off);
    free(p->w);
    free(p);
    return TIDE_SUCCESS;
}


/* A source on a GPU plan lies where its location says (local; the reason in err). */
static int check_source(const tide_stencil_plan *p, char *err, size_t len)
{
    if (!p->o.source)
        return TIDE_SUCCESS;
    const char *m = tide_array_location(p->ctx, p->o.location == TIDE_LOCATION_DEVICE,
                                        p->o.source);
    if (*m)
        return snprintf(err, len, "option source: %s", m), TIDE_ERR_ARGUMENT;
    return TIDE_SUCCESS;
}

/* Collective: the plan of an agreed request; failures agreed. */
static int make_plan(tide_context *ctx, const int n[3], const tide_args *all,
                     const tide_stencil_options *o, const int (*off)[3], const double *w,
                     tide_stencil_plan **out)
{
    char err[TIDE_MSG_LEN] = "";
    int st = TIDE_SUCCESS, cuda = tide_wants_cuda(ctx, o->backend);
    tide_stencil_plan *p = calloc(1, sizeof *p);
    if (!p)
        st = TIDE_ERR_NOMEM, snprintf(err, sizeof err, "out of memory creating the plan");
    if (p) {
        p->ctx = ctx;
        p->o = *o;
        p->o.backend = cuda ? TIDE_BACKEND_CUDA : TIDE_BACKEND_CPU;
        memcpy(p->n, n, sizeof p->n);
        tide_box whole = {{0, 0, 0}, {n[0], n[1], n[2]}, {0, 1, 2}};
        p->box = p->ext = all[0].has[0] ? all[ctx->rank].box[0] : whole;
        p->radius = all[0].v[F_REACH];
        p->taps = all[0].v[F_TAPS];
        p->env.ctx = ctx;
        p->env.be = cuda ? tide_backend_cuda() : &tide_backend_cpu;
        p->env.threads = ctx->threads;
        p->off = malloc((size_t)p->taps * sizeof *p->off);
        p->w = malloc((size_t)p->taps * sizeof *p->w);
        if (!p->off || !p->w)
            st = TIDE_ERR_NOMEM, snprintf(err, sizeof err, "out of memory creating the plan");
        else if (tide_order_create(ctx, &p->entry) ||
                 (cuda && p->env.be->stream_create(&p->env.stream, 0)))
            st = TIDE_ERR_BACKEND, snprintf(err, sizeof err, "%s", p->env.be->last_error());
        if (!st)
            st = check_source(p, err, sizeof err);
    }
    int by_nccl = o->exchange == TIDE_EXCHANGE_AUTO || o->exchange == TIDE_EXCHANGE_NCCL;
    if (ctx->nranks > 1 && cuda && ctx->nccl_usable && by_nccl) { /* collective, agreed: the
                                                                   * halos over NCCL */
        void *nccl = NULL;
        int x = tide_context_nccl(ctx, 1, &nccl);
        st = st ? st : x;
        if (p)
            p->env.nccl = nccl;
    }
    if (ctx->nranks > 1) /* collective: every rank, whatever its status */
        st = tide_stencil_plan_ranks(ctx, p, all, off, w, st, err, sizeof err);
    if (p && !st) {
        p->bytes = (size_t)tide_box_count(&p->box) * tide_stencil_elem_bytes(p);
        st = tide_stencil_build(p, off, w, err, sizeof err);
    }
    if (st)
        tide_fail(ctx, st, "tide_stencil_plan_create: %s", err);
    st = tide_agree(ctx, st);
    if (st) {
        tide_stencil_plan_destroy(p);
        return st;
    }
    *out = p;
    tide_log(ctx, TIDE_LOG_INFO, "stencil plan: %s %s, %d taps, radius %d, %d step%s per pass%s",
             shape_names[o->shape], p->env.be->name, p->taps, p->radius, p->fuse,
             p->fuse > 1 ? "s" : "", p->tuned ? " (timed)" : "");
    return TIDE_SUCCESS;
}

int tide_stencil_plan_create(tide_context *ctx, const int n[3], const tide_box *box,
                             const tide_stencil_options *opts, tide_stencil_plan **plan)
{
    if (!ctx)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_stencil_plan_create: context is NULL");
    int prev, st = tide_create_enter(ctx, "tide_stencil_plan_create", &prev);
    if (st)
        return st;
    tide_stencil_options o;
    tide_args mine;
    int(*off)[3] = malloc(TIDE_SWEEP_MAX_TAPS * sizeof *off);
    double *w = malloc(TIDE_SWEEP_MAX_TAPS * sizeof *w);
    tide_stencil_options_init(&o);
    if (!off || !w) {
        memset(&mine, 0, sizeof mine);
        tide_args_fail(&mine, TIDE_ERR_NOMEM, "out of memory reading the stencil");
    } else if (!tide_options_read(opts, &o, sizeof o, offsetof(tide_stencil_options, precision))) {
        memset(&mine, 0, sizeof mine);
        tide_args_fail(&mine, TIDE_ERR_ARGUMENT, "options not filled by "
                       "tide_stencil_options_init (its size member is unset)");
    } else {
        make_request(n, box, &o, plan, &mine, off, w);
    }
    tide_args *all = NULL;
    st = tide_args_agree(ctx, &spec, &mine, &all);
    if (!st)
        st = judge(ctx, all);
    if (!st)
        st = agree_taps(ctx, all[0].v[F_TAPS], (const int(*)[3])off, w);
    if (!st)
        st = make_plan(ctx, n, all, &o, (const int(*)[3])off, w, plan);
    if (!st)
        tide_context_hold(ctx, &(*plan)->held);
    free(all);
    free(off);
    free(w);
    tide_device_leave(prev);
    return st;
}


/* ---- queries --------------------------------------------------------------------------- */

int tide_stencil_plan_info(const tide_stencil_plan *p, tide_stencil_info *info)
{
    if (!p || !info)
        return tide_fail(p ? p->ctx : NULL, TIDE_ERR_ARGUMENT,
                         "tide_stencil_plan_info: %s is NULL", p ? "info" : "plan");
    int gpu = p->env.be->gpu;
    size_t elem = tide_stencil_elem_bytes(p);
    memset(info, 0, sizeof *info);
    info->count = tide_box_count(&p->box);
    info->bytes = p->bytes;
    /* the sweeps' state (the split passes' too) and the halo's host staging (pinned on the
     * GPU), the arrays where they live */
    size_t staging = p->halo ? tide_halo_bytes(p->halo, 0) : 0;
    info->host_bytes = p->sweep.state_bytes + tide_stencil_split_host_bytes(p->split) +
                       (gpu ? 0 : tide_stencil_backend_bytes(p) + staging);
    info->pinned_bytes = gpu ? staging : 0;
    info->device_bytes = gpu ? tide_stencil_backend_bytes(p) : 0;
    if (p->out_of_core) { /* the halo's parts in pinned host memory, its staging in host memory */
        info->host_bytes += staging;
        info->pinned_bytes =
            p->halo_u.n ? tide_stencil_halo_bytes(p) * (1 + (p->halo_src.n > 0)) : 0;
        info->device_bytes = 0;
    }
    if (p->streamed) { /* the pipeline's buffers (one rank: the plan's only pinned and device
                        * ones) */
        tide_stencil_streamed_shape sh;
        tide_stencil_streamed_shape_of(p->streamed, &sh);
        info->pinned_bytes += sh.pinned_bytes;
        info->device_bytes = sh.device_bytes;
        info->slabs = sh.slabs;
        info->level_steps = sh.level_steps;
    }
    info->taps = p->taps;
    info->radius = p->radius;
    info->fuse = p->fuse;
    info->flops = 2.0 * p->taps - 1 + (p->o.source ? 1 : 0);
    info->bytes_per_step = (double)elem * (p->o.source ? 3 : 2);
    info->backend = p->o.backend;
    info->location = p->o.location;
    info->box = p->box;
    memcpy(info->grid, p->grid, sizeof info->grid);
    if (p->halo) {
        info->halo_points = tide_halo_points(p->halo);
        info->exchanges = p->tally.exchanges;
        info->halo_seconds = p->tally.seconds;
        info->overlapped = p->split != NULL;
        info->halo_exchange = tide_halo_exchange(p->halo);
    }
    return TIDE_SUCCESS;
}

int tide_stencil_plan_describe(const tide_stencil_plan *p, char *buf, size_t len)
{
    if (!p || !buf || !len)
        return tide_fail(p ? p->ctx : NULL, TIDE_ERR_ARGUMENT,
                         "tide_stencil_plan_describe: %s", p ? "no buffer" : "plan is NULL");
    int host_gpu = p->env.be->gpu && p->o.location == TIDE_LOCATION_HOST;
    char halo[48] = "", slabs[96] = "";
    if (p->halo)
        snprintf(halo, sizeof halo, "halo %d %s ", p->fuse * p->radius,
                 p->split ? "beside" : ">");
    if (p->streamed) { /* each slab: up, the pass's sweeps, down */
        tide_stencil_streamed_shape sh;
        tide_stencil_streamed_shape_of(p->streamed, &sh);
        snprintf(slabs, sizeof slabs, "%d slabs of <= %d planes, %d steps per pass: ",
                 sh.slabs, sh.planes, sh.fuse);
    }
    /* out of core the exchange comes first, in host memory; in card after the upload */
    snprintf(buf, len, "stencil %s r%d %d taps %s %s: %s%s%s%s%s%s", shape_names[p->o.shape],
             p->radius, p->taps, p->o.precision == TIDE_DOUBLE ? "double" : "float",
             p->env.be->name, p->out_of_core ? halo : "", host_gpu ? "upload > " : "",
             p->out_of_core ? "" : halo, slabs, p->sweep_op.what, host_gpu ? " > download" : "");
    return TIDE_SUCCESS;
}

int tide_stencil_plan_set_stream(tide_stencil_plan *p, void *stream)
{
    if (!p)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_stencil_plan_set_stream: plan is NULL");
    p->o.stream = stream;
    return TIDE_SUCCESS;
}

