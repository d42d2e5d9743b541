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
 */
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "core/args.h"
#include "backend/backend.h"
#include "comm/halo.h"
#include "plan/program.h"
#include "comm/region.h"
#include "stencil/stencil_split.h"
#include "stencil/stencil_streamed.h"

struct tide_stencil_plan {
    tide_context *ctx;
    int held;             /* counted on ctx (tide_context_hold) */
    tide_stencil_options o;
    int n[3];
    tide_box box;          /* this rank's of u */
    tide_box ext;          /* the box the sweep runs on: box, grown by its halo on several
                            * ranks */
    int grid[3];           /* several ranks, boxes of the plan's choice: its process grid */
    tide_halo *halo;       /* several ranks: the exchange that fills ext around box */
    long long exchanges;   /* ... made by the last run, and its seconds in them */
    double halo_seconds;
    void *ea, *eb, *esrc;  /* ... arrays laid out as ext: the passes' two, and the source's */
    int radius, taps;
    int (*off)[3];         /* the taps in storage order (sweep.off) */
    double *w;
    tide_env env;
    tide_sweep sweep;
    tide_op op;            /* the sweep op; count set for each pass */
    int fuse;              /* steps per pass */
    size_t bytes;          /* of u */
    void *work;            /* the second array of the passes, in the backend's memory */
    void *dev_u;           /* a GPU plan on host arrays: u on the device */
    void *dev_source;      /* ... and the source, uploaded at each run */
    void *entry;           /* orders runs after the caller's CUDA work */
    int tuned;             /* fuse chosen by timing sweeps */
    tide_stencil_split *split; /* several ranks: passes that hide the exchange
                                * (stencil_split.h), or NULL */
    tide_stencil_streamed *oc; /* GPU, host arrays beyond the device budget: slabs through the
                              * GPU (stencil_streamed.h) */
    int ooc;               /* several GPU ranks out of core: each pass's halo exchanged into
                            * halo_u (and the source's once into halo_src) and this rank's
                            * grown box streamed through the GPU from u, the source and them */
    tide_parts halo_u, halo_src; /* ... the parts of the halo alone, pinned host memory */
};

static const char *const shape_names[] = {"7pt", "27pt", "star", "box"};

/* ---- the request ----------------------------------------------------------------------- */

enum {
    F_N0, F_N1, F_N2, F_PRECISION, F_BACKEND, F_LOCATION, F_SHAPE, F_RADIUS, F_TAPS, F_BC,
    F_FUSE = F_BC + 3, F_SOURCE, F_REACH, F_LEVELS, F_OVERLAP, NFIELDS
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
    int st = tide_args_backend(ctx, v[F_BACKEND], v[F_LOCATION]);
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
        tide_stencil_streamed_destroy(p->oc);
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

/* Whether box b holds the whole grid along dimension d. */
static int whole_along(const tide_stencil_plan *p, const tide_box *b, int d)
{
    return b->lo[d] == 0 && b->hi[d] == p->n[d];
}

/* The taps in the box's storage order, and the sweep over ext: periodic along a periodic
 * dimension it holds whole; its faces elsewhere are boundaries (the grid's, or the halo's). */
static void make_sweep(tide_stencil_plan *p, const int (*off)[3], const double *w)
{
    tide_sweep *s = &p->sweep;
    const int *ord = p->box.order;
    s->dbl = p->o.precision == TIDE_DOUBLE;
    for (int k = 0; k < 3; k++) {
        s->n[k] = (int)tide_ext(&p->ext, ord[k]);
        s->periodic[k] = p->o.bc[ord[k]] == TIDE_BC_PERIODIC && whole_along(p, &p->ext, ord[k]);
    }
    for (int i = 0; i < p->taps; i++) {
        for (int k = 0; k < 3; k++)
            p->off[i][k] = off[i][ord[k]];
        p->w[i] = w[i];
    }
    s->radius = p->radius;
    s->ntaps = p->taps;
    s->off = (const int(*)[3])p->off;
    s->w = p->w;
}

/* The mean of three sweeps after a warm-up, not the best: ranks that share a GPU take turns
 * on it, and the best of a rank's sweeps is one that happened to run while the others' did
 * not. */
double tide_stencil_time_sweep(const tide_env *e, const tide_sweep *s, const void *src,
                               void *dst, int k, int *st)
{
    double t0 = 0;
    for (int rep = 0; rep < 4 && !*st; rep++) {
        t0 = rep == 1 ? MPI_Wtime() : t0;
        *st = e->be->sweep(e, s, src, dst, k);
        *st = *st ? *st : e->be->sync(e);
    }
    return *st ? INFINITY : (MPI_Wtime() - t0) / 3;
}

/* The steps per pass with the best rate, timed on the GPU: sweeps of 1 .. max_fuse steps
 * from one half of the work array into the other, over the first half of the slowest
 * dimension (the same planes, so the same kernels and tiles). A grid too thin for that keeps
 * the most the kernels fuse. */
static int tune_fuse(tide_stencil_plan *p, int *st)
{
    tide_sweep t = p->sweep;
    t.source = NULL;
    t.n[0] = p->sweep.n[0] / 2;
    if (t.n[0] < 2 * p->radius + 1)
        return p->sweep.max_fuse;
    size_t half = (size_t)t.n[0] * t.n[1] * t.n[2] * (t.dbl ? sizeof(double) : sizeof(float));
    char *a = p->work;
    int best = 1;
    double best_rate = 0;
    for (int k = 1; k <= p->sweep.max_fuse && !*st; k++) {
        double rate = k / tide_stencil_time_sweep(&p->env, &t, a, a + half, k, st);
        tide_log(p->ctx, TIDE_LOG_DEBUG, "stencil: %d steps per sweep: %.4g GCell/s (on half "
                 "the grid)", k, rate * (double)t.n[0] * t.n[1] * t.n[2] / 1e9);
        if (rate > best_rate)
            best = k, best_rate = rate;
    }
    p->tuned = 1;
    return best;
}

/* The dimensions the grid wraps around. */
static void periodic_dims(const tide_stencil_plan *p, int periodic[3])
{
    for (int d = 0; d < 3; d++)
        periodic[d] = p->o.bc[d] == TIDE_BC_PERIODIC;
}

/* Bytes of one point of u. */
static size_t elem_bytes(const tide_stencil_plan *p)
{
    return p->o.precision == TIDE_DOUBLE ? sizeof(double) : sizeof(float);
}

/* Bytes of one array laid out as the grown box. */
static size_t ext_bytes(const tide_stencil_plan *p)
{
    return (size_t)tide_box_count(&p->ext) * elem_bytes(p);
}

/* Bytes in the backend's memory of a plan whose box has own points: on one rank the work
 * array; on several (ranks) the two arrays on the grown box of ext points (three with a
 * source) and `extra` (the halo's device staging); on a GPU
 * with host arrays also the device copies of u and the source. */
static double arrays_bytes(const tide_stencil_plan *p, int ranks, double own, double ext,
                           double extra)
{
    int src = p->o.source != NULL;
    int copies = p->env.be->gpu && p->o.location == TIDE_LOCATION_HOST;
    double e = (double)elem_bytes(p);
    return (ranks ? ext * e * (2 + src) + extra : own * e) + (copies ? own * e * (1 + src) : 0);
}

/* What the plan holds in its backend's memory (arrays_bytes). */
static size_t backend_bytes(const tide_stencil_plan *p)
{
    double extra = p->halo ? (double)tide_halo_bytes(p->halo, 1) : 0;
    return (size_t)arrays_bytes(p, p->halo != NULL, (double)tide_box_count(&p->box),
                                (double)tide_box_count(&p->ext), extra);
}

/* ---- several ranks ---------------------------------------------------------------------- */

/* Rank r's box of a process grid g over n (ranks in C order over it, balanced blocks
 * [i n / p, (i + 1) n / p)), in C order. */
static tide_box grid_box(const int n[3], const int g[3], int r)
{
    int at[3] = {r / (g[1] * g[2]), r / g[2] % g[1], r % g[2]};
    tide_box b = {{0, 0, 0}, {0, 0, 0}, {0, 1, 2}};
    for (int d = 0; d < 3; d++) {
        b.lo[d] = (int)((long long)n[d] * at[d] / g[d]);
        b.hi[d] = (int)((long long)n[d] * (at[d] + 1) / g[d]);
    }
    return b;
}

/* Box b grown by a halo of h points along each dimension it does not hold whole: past the
 * grid's faces along periodic dimensions, up to them along Dirichlet ones. An empty box stays
 * as it is. */
static tide_box grown(const tide_stencil_plan *p, const tide_box *b, int h)
{
    tide_box e = *b;
    if (tide_box_count(b) == 0)
        return e;
    for (int d = 0; d < 3; d++) {
        if (whole_along(p, b, d))
            continue;
        int wrap = p->o.bc[d] == TIDE_BC_PERIODIC;
        e.lo[d] = wrap || b->lo[d] - h > 0 ? b->lo[d] - h : 0;
        e.hi[d] = wrap || b->hi[d] + h < p->n[d] ? b->hi[d] + h : p->n[d];
    }
    return e;
}

/* The first dimension along which a non-empty grown box is thinner than the 2 r + 1 points a
 * sweep needs, or -1. */
static int too_thin(const tide_stencil_plan *p, const tide_box *e)
{
    for (int d = 0; d < 3 && tide_box_count(e) > 0; d++)
        if (tide_ext(e, d) < 2 * p->radius + 1)
            return d;
    return -1;
}

/* What a grid pays for each dimension it cuts beyond the first, as a share of its largest
 * grown box: the GPU's tiles fill its SMs worse on the smaller planes, and the split passes'
 * shell is thin boxes (a halo along one dimension is two slabs of whole planes). On four
 * H200, 1024 x 512 x 512 (7-point float) cut 2 x 2 x 1, whose grown boxes have 0.8% fewer
 * points than the slabs', ran at 0.530 of one GPU per GPU with split passes (0.433
 * without), the slabs at 0.808: its planes are 35 tiles, a wave of 105 blocks on 132 SMs,
 * and its shell's band along the second dimension 15 rows through every plane. */
#define CUT_COST 0.05

/* The plan's process grid for halos of h points: of the grids g[0] g[1] g[2] = P with no more
 * parts than points along any dimension, the one whose largest grown box has the fewest
 * points (the least halo to fill and to compute) once each dimension cut beyond the first
 * adds CUT_COST of them, one whose grown boxes are all thick enough first; ties go to the grid
 * cutting the slower dimensions (contiguous halos in C order). */
static void choose_grid(const tide_stencil_plan *p, int P, int h, int g[3])
{
    double best = INFINITY;
    int best_thin = 1;
    g[0] = P, g[1] = g[2] = 1;
    for (int a = P; a >= 1; a--)
        for (int b = P / a; b >= 1; b--) {
            int c = P / a / b, t[3] = {a, b, c}, thin = 0;
            if (a * b * c != P || a > p->n[0] || b > p->n[1] || c > p->n[2])
                continue;
            double most = 0;
            for (int r = 0; r < P; r++) {
                tide_box o = grid_box(p->n, t, r), e = grown(p, &o, h);
                most = fmax(most, (double)tide_box_count(&e));
                thin = thin || too_thin(p, &e) >= 0;
            }
            int cuts = (a > 1) + (b > 1) + (c > 1);
            double cost = most * (1 + CUT_COST * (cuts > 1 ? cuts - 1 : 0));
            if ((thin < best_thin) || (thin == best_thin && cost < best)) {
                best = cost, best_thin = thin;
                memcpy(g, t, sizeof t);
            }
        }
}

/* The most steps per pass the plan times over several ranks (the GPU's kernels fuse 8). */
enum { TIMED_FUSE_MAX = 16 };

/* How the plan's halos move: in host memory on the CPU and out of core (the grown arrays live
 * there); on the GPU over NCCL where the context has it for the plan (make_plan), else by MPI
 * on the device staging where the MPI library takes device pointers on every rank, else
 * staged through pinned host memory. */
static tide_halo_transport halo_transport(const tide_stencil_plan *p)
{
    if (!p->env.be->gpu || p->ooc)
        return TIDE_HALO_HOST;
    return p->env.nccl            ? TIDE_HALO_NCCL
           : p->ctx->cuda_aware_mpi ? TIDE_HALO_CUDA_MPI
                                    : TIDE_HALO_STAGED;
}

/* Collective over every rank (st: this rank's status; a failed rank still takes part):
 * seconds one exchange of the halo of k steps per pass takes on this rank, a laid out as its
 * box grown by that halo (the mean of three after a warm-up, on the GPU to the end of the
 * unpacks); INFINITY on every rank where any rank could not set the exchange up. */
static double time_halo(tide_context *ctx, tide_stencil_plan *p, const tide_box *own, int k,
                        void *a, int st)
{
    const tide_env *e = &p->env;
    int P = ctx->nranks, periodic[3], ok = !st, all_ok = 0, x = 0;
    tide_box *ext = malloc(sizeof *ext * (size_t)P);
    tide_halo *h = NULL;
    char why[256];
    periodic_dims(p, periodic);
    for (int r = 0; r < P && ext; r++)
        ext[r] = grown(p, &own[r], k * p->radius);
    ok = ok && ext && !tide_halo_create(ctx->comm, p->n, periodic, own, ext, elem_bytes(p),
                                        e->threads, halo_transport(p), &h, why, sizeof why);
    double t0 = 0, t = INFINITY;
    if (MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, ctx->comm) == MPI_SUCCESS && all_ok) {
        for (int rep = 0; rep < 4; rep++) { /* every exchange on every rank, failed or not */
            t0 = rep == 1 ? MPI_Wtime() : t0;
            int y = e->be->halo(e, h, a, TIDE_HALO_ALL);
            x = x ? x : y ? y : e->be->sync(e);
        }
        t = x ? INFINITY : (MPI_Wtime() - t0) / 3;
    }
    tide_halo_destroy(h);
    free(ext);
    return t;
}

/* Collective, several ranks on the GPU with the plan's own choice of steps per pass (own:
 * every rank's box; kmax: the most the kernels fuse, thick enough for every box): times
 * sweeps of k = 1 .. kmax steps on this rank's box grown by k r and the exchange of that
 * halo, each k whose grown boxes are thick enough on every rank, and keeps the k whose slowest
 * rank does the most useful cell steps per second over a pass (the one-rank plan times its
 * sweeps likewise). A rank with an empty box, or one that failed, does not vote; every rank
 * takes part in the exchanges and the reduction. Returns the steps per pass; a local failure
 * in *st. */
static int time_fuse_ranks(tide_context *ctx, tide_stencil_plan *p, const tide_box *own,
                           int kmax, const int (*off)[3], const double *w, int *st,
                           char *err, size_t len)
{
    const tide_env *e = &p->env;
    int P = ctx->nranks, me = ctx->rank;
    kmax = kmax < TIMED_FUSE_MAX ? kmax : TIMED_FUSE_MAX;
    double rate[TIMED_FUSE_MAX + 1];
    void *a = NULL, *b = NULL;
    long long count = tide_box_count(&own[me]);
    tide_box big = grown(p, &own[me], kmax * p->radius);
    size_t bytes = (size_t)tide_box_count(&big) * elem_bytes(p);
    if (count > 0 && !*st && (e->be->alloc(bytes, &a) || e->be->alloc(bytes, &b)))
        *st = TIDE_ERR_NOMEM, snprintf(err, len, "cannot allocate %.3g GB of %s memory to time "
                                       "the sweeps", 2 * bytes / 1e9, e->be->name);
    for (int k = 1; k <= kmax; k++) {
        /* every rank times k at once, as the ranks will run: a rank timed while another that
         * shares its GPU is between counts sees the whole card (every rank gets here for
         * each k) */
        MPI_Barrier(ctx->comm);
        int thick = 1;
        for (int r = 0; r < P && thick; r++) {
            tide_box g = grown(p, &own[r], k * p->radius);
            thick = too_thin(p, &g) < 0;
        }
        rate[k] = !thick ? 0 : INFINITY;
        if (!thick)
            continue;
        double t = 0;
        if (count > 0 && !*st) {
            p->ext = grown(p, &own[me], k * p->radius);
            make_sweep(p, off, w);
            *st = e->be->sweep_create(e, &p->sweep, k, err, len);
            t = *st ? 0 : tide_stencil_time_sweep(e, &p->sweep, a, b, k, st);
            if (p->sweep.state)
                e->be->sweep_destroy(e, &p->sweep);
            p->sweep.state = NULL;
        }
        /* and the exchange before each pass, which the k steps share */
        double th = time_halo(ctx, p, own, k, a, *st);
        if (count > 0 && !*st && t > 0 && th < INFINITY)
            rate[k] = k * (double)count / (t + th);
        tide_log(ctx, TIDE_LOG_DEBUG, "stencil: %d steps per pass: sweep %.3g ms, exchange "
                 "%.3g ms: %.4g useful cell steps/s", k, 1e3 * t, 1e3 * th, rate[k]);
    }
    e->be->free(a);
    e->be->free(b);
    p->ext = p->box;
    if (MPI_Allreduce(MPI_IN_PLACE, rate + 1, kmax, MPI_DOUBLE, MPI_MIN, ctx->comm) !=
            MPI_SUCCESS && !*st)
        *st = TIDE_ERR_MPI, snprintf(err, len, "MPI_Allreduce failed");
    int best = kmax;
    for (int k = kmax; k >= 1; k--) /* the fewest steps among the fastest */
        if (rate[k] > 0 && rate[k] >= rate[best])
            best = k;
    p->tuned = 1;
    return best;
}

/* The description of the slabs of host grid b (this rank's box, or the box grown by its halo,
 * of which u holds the box) through the GPU with fuse steps per pass (0: the model's choice),
 * at the measured PCIe rates (local; the reason in err). */
static int stream_desc(tide_stencil_plan *p, const tide_box *b, int fuse,
                       tide_stencil_streamed_desc *d, char *err, size_t len)
{
    *d = (tide_stencil_streamed_desc){.env = &p->env, .sweep = &p->sweep, .box = *b, .own = p->box,
                                    .source = p->o.source != NULL,
                                    .budget = p->ctx->dev.budget_bytes, .fuse = fuse,
                                    .level_steps = p->o.level_steps};
    return tide_context_pcie(p->ctx, &d->pcie, err, len);
}

/* The slabs through the GPU of host array b (its layout; p->sweep made for it, created) with
 * fuse steps per pass (local; the reason in err). */
static int make_stream(tide_stencil_plan *p, const tide_box *b, int fuse,
                       tide_stencil_streamed **out, char *err, size_t len)
{
    tide_stencil_streamed_desc d;
    int st = stream_desc(p, b, fuse, &d, err, len);
    return st ? st : tide_stencil_streamed_create(&d, out, err, len);
}

/* Out of core on several ranks, fuse 0: this rank's vote on the steps per pass (INT_MAX: none).
 * The out-of-card model's choice for its box alone, capped so that the halo of k r points
 * adds at most a quarter to the planes swept along each dimension the box shares (k r at
 * most an eighth of the box there): the model counts neither the halo's recomputation nor its
 * exchange. A box the model cannot stream alone (thinner than two slabs: its grown box may
 * still be thick enough) does not vote; the plan's own streaming then says what fails. */
static int ooc_fuse(tide_stencil_plan *p, char *err, size_t len)
{
    tide_stencil_streamed_desc d;
    int k = 0;
    if (stream_desc(p, &p->box, 0, &d, err, len) == TIDE_SUCCESS)
        tide_stencil_streamed_fuse(&d, &k, err, len);
    if (k < 1)
        return INT_MAX;
    for (int dim = 0; dim < 3; dim++) {
        long long cap = tide_ext(&p->box, dim) / (8LL * p->radius);
        if (!whole_along(p, &p->box, dim) && k > cap)
            k = cap > 1 ? (int)cap : 1;
    }
    /* the ranks take the least vote, so this rank's box grown by the halo of every count up
     * to k must stream (its planes may not cut into slabs that fit where the box's do) */
    for (int j = 1; j <= k; j++) {
        tide_box g = grown(p, &p->box, j * p->radius);
        tide_sweep t = p->sweep;
        for (int q = 0; q < 3; q++)
            t.n[q] = (int)tide_ext(&g, g.order[q]);
        d.sweep = &t;
        d.box = g;
        if (!tide_stencil_streamed_fits(&d, j))
            k = j - 1;
    }
    return k >= 1 ? k : INT_MAX;
}

/* Collective, on several ranks (st: this rank's status so far; every rank comes here): every
 * rank's box (the caller's or the plan's grid's), the steps per pass (option fuse; else on the
 * GPU the count time_fuse_ranks keeps, on the CPU the fewest any rank's backend picks for its
 * box), every rank's grown box and the halo exchange. A box too thin for its halo fails on
 * every rank alike. */
static int plan_ranks(tide_context *ctx, tide_stencil_plan *p, const tide_args *all,
                      const int (*off)[3], const double *w, int st, char *err, size_t len)
{
    int P = ctx->nranks, mine = INT_MAX, fuse = 0;
    if (p) {
        int given = all[0].has[0], h0 = (p->o.fuse ? p->o.fuse : 4) * p->radius;
        if (!given)
            choose_grid(p, P, h0, p->grid);
        p->box = given ? all[ctx->rank].box[0] : grid_box(p->n, p->grid, ctx->rank);
        p->ext = p->box;
    }
    /* out of core where any GPU rank's in-card plan could exceed its budget at the widest
     * halo its kernels fuse (arrays_bytes, the halo's device staging about its points twice):
     * every rank alike */
    int ooc = 0, any_ooc = 0;
    if (p && !st && p->env.be->gpu && p->o.location == TIDE_LOCATION_HOST) {
        tide_box wide = grown(p, &p->box, TIMED_FUSE_MAX * p->radius);
        double own = (double)tide_box_count(&p->box), ext = (double)tide_box_count(&wide);
        ooc = arrays_bytes(p, 1, own, ext, 2 * (ext - own) * (double)elem_bytes(p)) >
              (double)ctx->dev.budget_bytes;
    }
    if (MPI_Allreduce(&ooc, &any_ooc, 1, MPI_INT, MPI_MAX, ctx->comm) != MPI_SUCCESS && !st)
        st = TIDE_ERR_MPI, snprintf(err, len, "MPI_Allreduce failed");
    if (p)
        p->ooc = any_ooc;
    if (p && !st && tide_box_count(&p->box) > 0) { /* the backend's choice on this box */
        make_sweep(p, off, w);
        for (int k = 0; k < 3; k++) /* at least a stencil's width: the GPU's sweeps need it,
                                     * and the grown box will have it */
            if (p->sweep.n[k] < 2 * p->radius + 1)
                p->sweep.n[k] = 2 * p->radius + 1;
        st = p->env.be->sweep_create(&p->env, &p->sweep, p->ooc ? 0 : p->o.fuse, err, len);
        if (!st && !p->ooc)
            mine = p->sweep.max_fuse;
        else if (!st) /* out of core: not bound by the kernels (levels of any steps) */
            mine = p->o.fuse ? p->o.fuse : ooc_fuse(p, err, len);
        if (p->sweep.state)
            p->env.be->sweep_destroy(&p->env, &p->sweep);
        p->sweep.state = NULL;
    }
    if (MPI_Allreduce(&mine, &fuse, 1, MPI_INT, MPI_MIN, ctx->comm) != MPI_SUCCESS && !st)
        st = TIDE_ERR_MPI, snprintf(err, len, "MPI_Allreduce failed");
    if (!p || st) { /* a local failure (another rank's box may have failed otherwise): still
                     * in the vote on timing below, against it */
        int no = 0, any = 0;
        MPI_Allreduce(&no, &any, 1, MPI_INT, MPI_MIN, ctx->comm);
        return st;
    }
    p->fuse = fuse == INT_MAX ? 1 : fuse;
    tide_box *own = malloc(sizeof *own * (size_t)P), *ext = malloc(sizeof *ext * (size_t)P);
    if (!own || !ext)
        st = TIDE_ERR_NOMEM, snprintf(err, len, "out of memory creating the plan");
    /* a box of one point at a Dirichlet face grows to 1 + fuse r points: the plan's own
     * choice takes 2 steps per pass where 1 would leave a box too thin */
    int thin = -1, at = 0;
    while (!st) {
        thin = -1;
        for (int r = 0; r < P && thin < 0; r++) {
            own[r] = all[0].has[0] ? all[r].box[0] : grid_box(p->n, p->grid, r);
            ext[r] = grown(p, &own[r], p->fuse * p->radius);
            thin = too_thin(p, &ext[r]), at = r;
        }
        if (thin < 0 || p->o.fuse || p->fuse >= 2)
            break;
        p->fuse++;
    }
    /* every rank times, or none: the statuses so far may differ */
    int go = !st && thin < 0 && p->env.be->gpu && !p->ooc && !p->o.fuse && p->fuse > 1;
    int all_go = 0;
    MPI_Allreduce(&go, &all_go, 1, MPI_INT, MPI_MIN, ctx->comm);
    if (all_go) {
        p->fuse = time_fuse_ranks(ctx, p, own, p->fuse, off, w, &st, err, len);
        for (int r = 0; r < P; r++) /* thick enough: the timing only takes such counts */
            ext[r] = grown(p, &own[r], p->fuse * p->radius);
    }
    if (!st && thin >= 0)
        st = TIDE_ERR_ARGUMENT,
        snprintf(err, len, "the box of rank %d grown by its halo (%d step%s per pass of radius "
                 "%d: %d point%s) is %lld point%s along dimension %d, fewer than the %d a "
                 "sweep needs: give it more points, or more steps per pass (option fuse: a "
                 "wider halo)", at, p->fuse, p->fuse > 1 ? "s" : "", p->radius,
                 p->fuse * p->radius, p->fuse * p->radius > 1 ? "s" : "",
                 (long long)tide_ext(&ext[at], thin), tide_ext(&ext[at], thin) > 1 ? "s" : "",
                 thin, 2 * p->radius + 1);
    int periodic[3];
    periodic_dims(p, periodic);
    size_t elem = elem_bytes(p);
    if (!st) {
        p->ext = ext[ctx->rank];
        st = tide_halo_create(ctx->comm, p->n, periodic, own, ext, elem, p->env.threads,
                              halo_transport(p), &p->halo, err, len);
    }
    free(own);
    free(ext);
    return st;
}

/* The split passes (stencil_split.h) where the option overlap asks for them (by default on
 * the GPU, where the exchange runs beside the sweep) and this rank's geometry allows (local;
 * the reason in err). */
static int split_setup(tide_stencil_plan *p, char *err, size_t len)
{
    int want = p->o.overlap > 0 || (p->o.overlap == 0 && p->env.be->gpu);
    if (!want || tide_box_count(&p->box) == 0)
        return TIDE_SUCCESS;
    return tide_stencil_split_create(&p->env, &p->sweep, &p->box, &p->ext, p->fuse, &p->split,
                                     err, len);
}

/* One GPU rank whose host arrays are beyond the device budget (local; the reason in err):
 * the slabs through the GPU (stencil_streamed.h), the whole grid's sweep serving them, and the
 * steps per pass they take. */
static int build_streamed(tide_stencil_plan *p, char *err, size_t len)
{
    const tide_env *e = &p->env;
    int st = e->be->sweep_create(e, &p->sweep, 0, err, len); /* every level_steps */
    if (st || (st = make_stream(p, &p->box, p->o.fuse, &p->oc, err, len)))
        return st;
    tide_stencil_streamed_shape sh;
    tide_stencil_streamed_shape_of(p->oc, &sh);
    p->fuse = sh.fuse;
    p->tuned = !p->o.fuse;
    tide_op_sweep(&p->op, &p->sweep, sh.level_steps); /* a level's (describe) */
    tide_log(p->ctx, TIDE_LOG_DEBUG, "stencil: out of card: %d slabs of at most %d planes, %d "
             "steps per pass in levels of %d; the model expects %.4g GCell/s", sh.slabs,
             sh.planes, sh.fuse, sh.level_steps, sh.model_rate / 1e9);
    return TIDE_SUCCESS;
}

/* Bytes of the parts of this rank's halo (its grown box less its box), of u or the source. */
static size_t halo_bytes(const tide_stencil_plan *p)
{
    return (size_t)(tide_box_count(&p->ext) - tide_box_count(&p->box)) * elem_bytes(p);
}

/* Several GPU ranks out of core (local; the reason in err): the halo of u and that of the
 * source in parts of pinned host memory (the grown box less the own box), and this rank's
 * grown box streamed through the GPU with the agreed steps per pass (its faces other than the
 * grid's are boundaries to the slabs' sweeps, as to the in-card sweep of the grown box). */
static int build_out_of_core(tide_stencil_plan *p, char *err, size_t len)
{
    const tide_env *e = &p->env;
    if (tide_box_count(&p->box) == 0)
        return TIDE_SUCCESS;
    int st = TIDE_SUCCESS;
    tide_parts *halo[2] = {&p->halo_u, p->o.source ? &p->halo_src : NULL};
    for (int k = 0; k < 2 && halo[k]; k++) {
        halo[k]->n = tide_box_subtract(&p->ext, &p->box, halo[k]->box);
        for (int i = 0; i < halo[k]->n && !st; i++)
            st = e->be->host_alloc((size_t)tide_box_count(&halo[k]->box[i]) * elem_bytes(p),
                                   &halo[k]->data[i]);
    }
    if (st)
        return snprintf(err, len, "cannot allocate the plan's %.3g GB of pinned host memory: "
                        "%s", halo_bytes(p) * (1 + (p->o.source != NULL)) / 1e9,
                        e->be->last_error()), st;
    st = e->be->sweep_create(e, &p->sweep, 0, err, len); /* every level_steps */
    if (st || (st = make_stream(p, &p->ext, p->fuse, &p->oc, err, len)))
        return st;
    tide_stencil_streamed_shape sh;
    tide_stencil_streamed_shape_of(p->oc, &sh);
    tide_op_sweep(&p->op, &p->sweep, sh.level_steps); /* a level's (describe) */
    return TIDE_SUCCESS;
}

/* The plan's memory, its sweep and its steps per pass (local; the reason in err): on a GPU
 * with host arrays the device copies of u and the source (or, beyond the budget on one rank,
 * the slabs through the GPU); the work array, or on several ranks the arrays on the grown
 * box, and the sweep with the agreed steps per pass. */
static int build(tide_stencil_plan *p, const int (*off)[3], const double *w, char *err,
                 size_t len)
{
    const tide_env *e = &p->env;
    make_sweep(p, off, w);
    int host_gpu = e->be->gpu && p->o.location == TIDE_LOCATION_HOST;
    if (host_gpu && !p->halo && backend_bytes(p) > p->ctx->dev.budget_bytes)
        return build_streamed(p, err, len);
    if (p->ooc)
        return build_out_of_core(p, err, len);
    if (e->be->gpu && backend_bytes(p) > p->ctx->dev.budget_bytes)
        return snprintf(err, len, "the plan needs %.3g GB of device memory on GPU %d, more than "
                        "the context's budget of %.3g GB", backend_bytes(p) / 1e9,
                        p->ctx->dev.device, p->ctx->dev.budget_bytes / 1e9), TIDE_ERR_NOMEM;
    int st = host_gpu ? e->be->alloc(p->bytes, &p->dev_u) : TIDE_SUCCESS;
    if (!st && host_gpu && p->o.source)
        st = e->be->alloc(p->bytes, &p->dev_source);
    if (!st && !p->halo)
        st = e->be->alloc(p->bytes, &p->work);
    if (!st && p->halo)
        st = e->be->alloc(ext_bytes(p), &p->ea);
    if (!st && p->halo)
        st = e->be->alloc(ext_bytes(p), &p->eb);
    if (!st && p->halo && p->o.source)
        st = e->be->alloc(ext_bytes(p), &p->esrc);
    if (st)
        return snprintf(err, len, "cannot allocate the plan's %.3g GB of %s memory: %s",
                        backend_bytes(p) / 1e9, e->be->name, e->be->last_error()), st;
    if (p->halo) { /* the agreed steps per pass, on the grown box */
        p->sweep.source = p->esrc;
        if (tide_box_count(&p->box) > 0 &&
            (st = e->be->sweep_create(e, &p->sweep, p->fuse, err, len)))
            return st;
        tide_op_sweep(&p->op, &p->sweep, p->fuse);
        return split_setup(p, err, len);
    }
    p->sweep.source = host_gpu ? p->dev_source : p->o.source;
    st = e->be->sweep_create(e, &p->sweep, p->o.fuse, err, len);
    if (st)
        return st;
    p->fuse = p->o.fuse ? p->o.fuse : e->be->gpu ? tune_fuse(p, &st) : p->sweep.max_fuse;
    if (st)
        return snprintf(err, len, "timing the sweeps failed: %s", e->be->last_error()), st;
    tide_op_sweep(&p->op, &p->sweep, p->fuse);
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
    if (ctx->nranks > 1 && cuda && ctx->nccl_usable) { /* collective, agreed: the halos over
                                                        * NCCL, GPU to GPU */
        void *nccl = NULL;
        int x = tide_context_nccl(ctx, 1, &nccl);
        st = st ? st : x;
        if (p)
            p->env.nccl = nccl;
    }
    if (ctx->nranks > 1) /* collective: every rank, whatever its status */
        st = plan_ranks(ctx, p, all, off, w, st, err, sizeof err);
    if (p && !st) {
        p->bytes = (size_t)tide_box_count(&p->box) * elem_bytes(p);
        st = build(p, off, w, err, sizeof err);
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
    size_t elem = elem_bytes(p);
    memset(info, 0, sizeof *info);
    info->count = tide_box_count(&p->box);
    info->bytes = p->bytes;
    /* the sweeps' state (the split passes' too) and the halo's host staging (pinned on the
     * GPU), the arrays where they live */
    size_t staging = p->halo ? tide_halo_bytes(p->halo, 0) : 0;
    info->host_bytes = p->sweep.state_bytes + tide_stencil_split_host_bytes(p->split) +
                       (gpu ? 0 : backend_bytes(p) + staging);
    info->pinned_bytes = gpu ? staging : 0;
    info->device_bytes = gpu ? backend_bytes(p) : 0;
    if (p->ooc) { /* the halo's parts in pinned host memory, its staging in host memory */
        info->host_bytes += staging;
        info->pinned_bytes = p->halo_u.n ? halo_bytes(p) * (1 + (p->halo_src.n > 0)) : 0;
        info->device_bytes = 0;
    }
    if (p->oc) { /* the pipeline's buffers (one rank: the plan's only pinned and device ones) */
        tide_stencil_streamed_shape sh;
        tide_stencil_streamed_shape_of(p->oc, &sh);
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
        info->exchanges = p->exchanges;
        info->halo_seconds = p->halo_seconds;
        info->overlapped = p->split != NULL;
        tide_halo_transport t = tide_halo_transport_of(p->halo);
        info->halo_exchange = t == TIDE_HALO_NCCL       ? TIDE_EXCHANGE_NCCL
                              : t == TIDE_HALO_CUDA_MPI ? TIDE_EXCHANGE_CUDA_MPI
                                                        : TIDE_EXCHANGE_P2P;
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
    if (p->oc) { /* each slab: up, the pass's sweeps, down */
        tide_stencil_streamed_shape sh;
        tide_stencil_streamed_shape_of(p->oc, &sh);
        snprintf(slabs, sizeof slabs, "%d slabs of <= %d planes, %d steps per pass: ",
                 sh.slabs, sh.planes, sh.fuse);
    }
    /* out of core the exchange comes first, in host memory; in card after the upload */
    snprintf(buf, len, "stencil %s r%d %d taps %s %s: %s%s%s%s%s%s", shape_names[p->o.shape],
             p->radius, p->taps, p->o.precision == TIDE_DOUBLE ? "double" : "float",
             p->env.be->name, p->ooc ? halo : "", host_gpu ? "upload > " : "",
             p->ooc ? "" : halo, slabs, p->op.what, host_gpu ? " > download" : "");
    return TIDE_SUCCESS;
}

int tide_stencil_plan_set_stream(tide_stencil_plan *p, void *stream)
{
    if (!p)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_stencil_plan_set_stream: plan is NULL");
    p->o.stream = stream;
    return TIDE_SUCCESS;
}

/* ---- running --------------------------------------------------------------------------- */

/* One halo exchange into a (laid out as ext), the points sent read from `from` (a itself, or
 * out of core u, laid out as the rank's box), counted and timed (on the GPU from the end of
 * the work before it). */
static int exchange(tide_stencil_plan *p, void *a, const void *from, const tide_parts *to)
{
    const tide_env *e = &p->env;
    int st = e->be->sync(e);
    double t0 = MPI_Wtime();
    int x = to ? tide_halo_run_from(p->halo, from, &p->box, to)
               : e->be->halo(e, p->halo, a, TIDE_HALO_ALL);
    p->halo_seconds += MPI_Wtime() - t0;
    p->exchanges++;
    return st ? st : x;
}

/* The passes `steps` steps take at most p->fuse per pass, and the steps of pass i of n: as
 * even as they go, the first steps % n passes one more. */
static long long pass_count(const tide_stencil_plan *p, long long steps)
{
    return (steps + p->fuse - 1) / p->fuse;
}

static int pass_steps(long long steps, long long n, long long i)
{
    return (int)(steps / n + (i < steps % n));
}

/* The passes of a run from a to b and back, `steps` >= 1 split as evenly as the passes allow;
 * on one rank an even number of them where there are steps enough, so the result ends where
 * it began. On several ranks each pass starts by filling the halo of its input, and every
 * rank takes part in every exchange even after a failure of its own. box: NULL, or for split
 * passes of two or more (split_bands done) u's own box, which the first pass reads its own
 * planes from and the last writes into, the result. Returns 0, a backend failure or
 * TIDE_ERR_MPI; *in_b: the result is in b. */
static int passes(tide_stencil_plan *p, void *a, void *b, void *box, long long steps,
                  int *in_b)
{
    long long n = pass_count(p, steps);
    if (n % 2 && steps > n && !p->halo) /* several ranks copy the result back anyway */
        n++;
    void *from = a, *to = b;
    int st = TIDE_SUCCESS, sweep = tide_box_count(&p->box) > 0;
    for (long long i = 0; i < n && (!st || p->halo); i++) {
        p->op.count = pass_steps(steps, n, i);
        if (p->split) {
            int last = box && i == n - 1;
            st = tide_stencil_split_pass(&p->env, p->split, p->halo, from, box && i == 0 ? box
                                         : NULL, last ? box : to, last, p->op.count, st,
                                         &p->halo_seconds);
            p->exchanges++;
        } else {
            int x = p->halo ? exchange(p, from, NULL, NULL) : TIDE_SUCCESS;
            st = st ? st : x;
            if (!st && sweep)
                st = p->op.cls->execute(&p->op, &p->env, from, to);
        }
        void *t = from;
        from = to, to = t;
    }
    *in_b = n % 2;
    return st;
}

/* Several ranks out of core: the source's halo exchanged into its parts, then each pass: the
 * halo of u exchanged into its parts (sent from u), and the grown box streamed through the
 * GPU, its own points read from and written back into u (the source's from the caller's), its
 * halo read from the parts. Every rank takes part in every exchange whatever failed before. */
static int run_out_of_core(tide_stencil_plan *p, void *u, long long steps)
{
    int any = tide_box_count(&p->box) > 0, st = TIDE_SUCCESS;
    char err[TIDE_MSG_LEN] = "";
    double t_pass = 0;
    if (p->o.source) {
        int x = exchange(p, NULL, p->o.source, &p->halo_src);
        st = st ? st : x;
    }
    long long n = pass_count(p, steps);
    for (long long i = 0; i < n; i++) {
        int x = exchange(p, NULL, u, &p->halo_u);
        st = st ? st : x;
        double t1 = MPI_Wtime();
        if (!st && any)
            st = tide_stencil_streamed_pass(p->oc, u, &p->halo_u, p->o.source, &p->halo_src,
                                          pass_steps(steps, n, i), err, sizeof err);
        t_pass += MPI_Wtime() - t1;
    }
    tide_log(p->ctx, TIDE_LOG_DEBUG, "stencil: out of core, %lld steps: %lld exchanges %.3g ms, "
             "%lld passes %.3g ms", steps, p->exchanges, 1e3 * p->halo_seconds, n,
             1e3 * t_pass);
    if (st)
        tide_fail(p->ctx, st, "failure during tide_stencil_run: %s",
                  *err ? err : "a halo exchange failed");
    return st;
}

/* Several ranks: u (this rank's box; on a GPU with host arrays uploaded first) into the
 * grown array, the source likewise with its halo filled, the passes, and the box of the
 * result back into u; split passes of two or more read u's box and write into it, so that
 * only the planes next to the halos are copied. Every rank takes part in every exchange
 * whatever failed before. */
static int run_ranks(tide_stencil_plan *p, void *u, long long steps)
{
    const tide_env *e = &p->env;
    size_t elem = elem_bytes(p);
    int host_gpu = e->be->gpu && p->o.location == TIDE_LOCATION_HOST, in_b = 0;
    int any = tide_box_count(&p->box) > 0, st = TIDE_SUCCESS;
    void *ub = host_gpu ? p->dev_u : u; /* u's box in the backend's memory */
    if (any && host_gpu)
        st = e->be->copy(e, ub, u, p->bytes);
    /* direct split passes of two or more read u's box and write the result into it */
    int direct = p->split && tide_stencil_split_direct(p->split) && pass_count(p, steps) >= 2;
    if (any && !st)
        st = direct ? tide_stencil_split_bands(e, p->split, ub, p->ea)
                    : e->be->copy_region(e, elem, &p->box, ub, &p->box, p->ea, &p->ext);
    if (p->esrc) {
        const void *sb = host_gpu ? p->dev_source : p->o.source;
        if (any && !st && host_gpu)
            st = e->be->copy(e, p->dev_source, p->o.source, p->bytes);
        if (any && !st)
            st = e->be->copy_region(e, elem, &p->box, sb, &p->box, p->esrc, &p->ext);
        int x = exchange(p, p->esrc, NULL, NULL);
        st = st ? st : x;
    }
    int x = passes(p, p->ea, p->eb, direct ? ub : NULL, steps, &in_b);
    st = st ? st : x;
    if (any && !st && !direct)
        st = e->be->copy_region(e, elem, &p->box, in_b ? p->eb : p->ea, &p->ext, ub, &p->box);
    if (any && !st && host_gpu)
        st = e->be->copy(e, u, ub, p->bytes);
    int sync = e->be->sync(e);
    return st ? st : sync;
}

/* Local checks of a run's arguments and the ordering after the caller's work (the reason in
 * why, worded to be followed by the call's name). */
static int start(tide_stencil_plan *p, void *u, long long steps, int enter_st, char *why,
                 size_t len)
{
    if (enter_st)
        return snprintf(why, len, "could not make GPU %d current (%s) in", p->ctx->dev.device,
                        tide_backend_cuda()->last_error()), enter_st;
    if (steps < 0)
        return snprintf(why, len, "asked for %lld steps in", steps), TIDE_ERR_ARGUMENT;
    if (!u && p->bytes)
        return snprintf(why, len, "passed a NULL array to"), TIDE_ERR_ARGUMENT;
    const char *m = u ? tide_array_location(p->ctx, p->o.location == TIDE_LOCATION_DEVICE, u)
                      : "";
    if (*m)
        return snprintf(why, len, "passed %s to", m), TIDE_ERR_ARGUMENT;
    void *stream = p->env.be->gpu ? p->env.stream : NULL;
    if (tide_order_after(p->entry, p->o.stream, stream))
        return snprintf(why, len, "could not wait for the caller's earlier CUDA work (%s) in",
                        tide_backend_cuda()->last_error()), TIDE_ERR_BACKEND;
    return TIDE_SUCCESS;
}

static int run(tide_stencil_plan *p, void *u, long long steps, int enter_st)
{
    char why[256] = "";
    int st = start(p, u, steps, enter_st, why, sizeof why);
    if (st)
        tide_fail(p->ctx, st, "%s tide_stencil_run", why);
    tide_call_arg agreed = tide_call_int("steps", steps);
    st = tide_agree_call(p->ctx, "tide_stencil_run", st, &agreed, 1);
    p->exchanges = 0;
    p->halo_seconds = 0;
    if (st || steps == 0)
        return st;
    const tide_env *e = &p->env;
    if (p->halo) {
        st = p->ooc ? run_out_of_core(p, u, steps) : run_ranks(p, u, steps);
        if (st && !p->ooc) /* out of core says why itself */
            tide_fail(p->ctx, st, "failure during tide_stencil_run: %s",
                      st == TIDE_ERR_MPI ? "a halo exchange failed" : e->be->last_error());
        return tide_agree(p->ctx, st);
    }
    if (p->oc) {
        char err[TIDE_MSG_LEN] = "";
        long long n = pass_count(p, steps);
        for (long long i = 0; i < n && !st; i++)
            st = tide_stencil_streamed_pass(p->oc, u, NULL, p->o.source, NULL,
                                          pass_steps(steps, n, i), err, sizeof err);
        if (st)
            tide_fail(p->ctx, st, "failure during tide_stencil_run: %s", err);
        return tide_agree(p->ctx, st);
    }
    int host_gpu = e->be->gpu && p->o.location == TIDE_LOCATION_HOST, in_b = 0;
    void *a = host_gpu ? p->dev_u : u;
    st = host_gpu ? e->be->copy(e, a, u, p->bytes) : TIDE_SUCCESS;
    if (!st && p->dev_source)
        st = e->be->copy(e, p->dev_source, p->o.source, p->bytes);
    if (!st)
        st = passes(p, a, p->work, NULL, steps, &in_b);
    if (!st && in_b)
        st = e->be->copy(e, a, p->work, p->bytes);
    if (!st && host_gpu)
        st = e->be->copy(e, u, a, p->bytes);
    int sync = e->be->sync(e);
    st = st ? st : sync;
    if (st)
        tide_fail(p->ctx, st, "%s failure during tide_stencil_run: %s", e->be->name,
                  e->be->last_error());
    return tide_agree(p->ctx, st);
}

int tide_stencil_run(tide_stencil_plan *p, void *u, long long steps)
{
    if (!p)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_stencil_run: plan is NULL");
    int prev, enter_st = tide_device_enter(p->ctx, &prev);
    int st = run(p, u, steps, enter_st);
    tide_device_leave(prev);
    return st;
}
