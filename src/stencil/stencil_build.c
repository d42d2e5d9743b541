/*
 * stencil_build.c: what a stencil plan holds once its request is agreed: the sweep over its box
 * (the taps in the storage order, the steps per pass, timed on the GPU), its memory; on several
 * ranks every rank's box (the caller's or a block of the process grid with the smallest
 * halos), the halo exchange and the split passes; beyond the device budget the slabs streamed
 * through the GPU, on one rank or on each of several (out of core).
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "comm/region.h"
#include "stencil/stencil_plan.h"

/* Whether box b holds the whole grid along dimension d. */
static int whole_along(const tide_stencil_plan *p, const tide_box *b, int d)
{
    return b->lo[d] == 0 && b->hi[d] == p->n[d];
}

/* Whether the 27-point box's weights w (tap (dx, dy, dz) at 9 (dx + 1) + 3 (dy + 1) + dz + 1)
 * take one value per class, the class of a tap its count of nonzero offsets; then cw gets
 * them: centre, face, edge, corner. Compared exactly, as given. */
static int class_weights(const int (*off)[3], const double *w, double cw[4])
{
    int seen[4] = {0};
    for (int i = 0; i < 27; i++) {
        int k = (off[i][0] != 0) + (off[i][1] != 0) + (off[i][2] != 0);
        if (seen[k] && cw[k] != w[i])
            return 0;
        cw[k] = w[i], seen[k] = 1;
    }
    return 1;
}

/* The taps in the box's storage order, and the sweep over ext: periodic along a periodic
 * dimension it holds whole; its faces elsewhere are boundaries (the grid's, or the halo's).
 * The 27-point shape with class-constant weights takes the class form (backend.h), axis[u]
 * the storage dimension of the user's dimension u. */
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
    s->classes = p->o.shape == TIDE_STENCIL_27PT && class_weights(off, w, s->cw);
    for (int k = 0; k < 3; k++)
        s->axis[ord[k]] = k;
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

/* On the CPU a fresh array's pages map the one zero page until they are written: read, they
 * cost no memory traffic, and a sweep reading them times as if its source sat in the cache (a
 * pass of one step, bound by memory, about twice as fast as it runs). So the source of the
 * timed sweeps is written first, by a sweep into it (its pages then lie where the sweep's
 * threads read them). Returns the sweep's status. */
static int touch_source(const tide_env *e, const tide_sweep *s, const void *other, void *src)
{
    if (e->be->gpu)
        return TIDE_SUCCESS;
    int st = e->be->sweep(e, s, other, src, 1);
    return st ? st : e->be->sync(e);
}

/* The steps per pass with the best rate, timed: sweeps of 1 .. max_fuse steps from one half
 * of the work array into the other, over the first half of the slowest dimension (the same
 * planes, so the same kernels and tiles), each count in two rounds with the others between
 * them and its better round kept, so that a burst of other load on the machine during one
 * count's timing does not decide alone. A grid too thin for that keeps the most the backend
 * fuses. */
static int tune_fuse(tide_stencil_plan *p, int *st)
{
    tide_sweep t = p->sweep;
    t.source = NULL;
    t.n[0] = p->sweep.n[0] / 2;
    if (t.n[0] < 2 * p->radius + 1)
        return p->sweep.max_fuse;
    size_t half = (size_t)t.n[0] * t.n[1] * t.n[2] * (t.dbl ? sizeof(double) : sizeof(float));
    char *a = p->work;
    enum { TIMED_MAX = 32 }; /* beyond every backend's max_fuse */
    int best = 1, kmax = p->sweep.max_fuse < TIMED_MAX ? p->sweep.max_fuse : TIMED_MAX;
    double best_rate = 0, rate[TIMED_MAX + 1] = {0};
    *st = *st ? *st : touch_source(&p->env, &t, a + half, a);
    for (int round = 0; round < 2; round++)
        for (int k = 1; k <= kmax && !*st; k++) {
            double r = k / tide_stencil_time_sweep(&p->env, &t, a, a + half, k, st);
            tide_log(p->ctx, TIDE_LOG_DEBUG, "stencil: %d steps per sweep: %.4g GCell/s (on "
                     "half the grid)", k, r * (double)t.n[0] * t.n[1] * t.n[2] / 1e9);
            rate[k] = r > rate[k] ? r : rate[k];
            if (round == 1 && rate[k] > best_rate)
                best = k, best_rate = rate[k];
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
size_t tide_stencil_elem_bytes(const tide_stencil_plan *p)
{
    return p->o.precision == TIDE_DOUBLE ? sizeof(double) : sizeof(float);
}

/* Bytes of one array laid out as the grown box. */
static size_t ext_bytes(const tide_stencil_plan *p)
{
    return (size_t)tide_box_count(&p->ext) * tide_stencil_elem_bytes(p);
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
    double e = (double)tide_stencil_elem_bytes(p);
    return (ranks ? ext * e * (2 + src) + extra : own * e) + (copies ? own * e * (1 + src) : 0);
}

/* What the plan holds in its backend's memory (arrays_bytes). */
size_t tide_stencil_backend_bytes(const tide_stencil_plan *p)
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

/* Whether the plan's halos move arrays in device memory: on the GPU, except out of core (the
 * grown arrays live in host memory there). */
static int halo_on_device(const tide_stencil_plan *p)
{
    return p->env.be->gpu && !p->out_of_core;
}

/* How they move: in host memory over MPI; on the GPU as option exchange asks (judged at
 * creation; A2AV goes pairwise), else over NCCL where the context has it for the plan
 * (make_plan), else by MPI on the device staging where the MPI library takes device pointers
 * on every rank, else by MPI through pinned host staging. */
static tide_exchange halo_exchange(const tide_stencil_plan *p)
{
    tide_exchange x = p->o.exchange;
    if (!halo_on_device(p) || x == TIDE_EXCHANGE_P2P || x == TIDE_EXCHANGE_A2AV)
        return TIDE_EXCHANGE_P2P;
    if (x == TIDE_EXCHANGE_NCCL || x == TIDE_EXCHANGE_CUDA_MPI)
        return x;
    return p->env.nccl            ? TIDE_EXCHANGE_NCCL
           : p->ctx->cuda_aware_mpi ? TIDE_EXCHANGE_CUDA_MPI
                                    : TIDE_EXCHANGE_P2P;
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
    ok = ok && ext && !tide_halo_create(ctx->comm, p->n, periodic, own, ext,
                                        tide_stencil_elem_bytes(p), e->threads,
                                        halo_exchange(p), halo_on_device(p), &h, why,
                                        sizeof why);
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

/* Collective, several ranks with the plan's own choice of steps per pass (own:
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
    size_t bytes = (size_t)tide_box_count(&big) * tide_stencil_elem_bytes(p);
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
            /* each k: its grown box lays a out anew, and its edges reach pages the smaller
             * boxes before did not write */
            *st = *st ? *st : touch_source(e, &p->sweep, b, a);
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
static int streamed_desc(tide_stencil_plan *p, const tide_box *b, int fuse,
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
static int make_streamed(tide_stencil_plan *p, const tide_box *b, int fuse,
                         tide_stencil_streamed **out, char *err, size_t len)
{
    tide_stencil_streamed_desc d;
    int st = streamed_desc(p, b, fuse, &d, err, len);
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
    if (streamed_desc(p, &p->box, 0, &d, err, len) == TIDE_SUCCESS)
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
 * rank's box (the caller's or the plan's grid's), the steps per pass (option fuse; else the
 * count time_fuse_ranks keeps), every rank's grown box and the halo exchange. A box too thin
 * for its halo fails on every rank alike. */
int tide_stencil_plan_ranks(tide_context *ctx, tide_stencil_plan *p, const tide_args *all,
                            const int (*off)[3], const double *w, int st, char *err,
                            size_t len)
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
        ooc = arrays_bytes(p, 1, own, ext, 2 * (ext - own) * (double)tide_stencil_elem_bytes(p)) >
              (double)ctx->dev.budget_bytes;
    }
    if (MPI_Allreduce(&ooc, &any_ooc, 1, MPI_INT, MPI_MAX, ctx->comm) != MPI_SUCCESS && !st)
        st = TIDE_ERR_MPI, snprintf(err, len, "MPI_Allreduce failed");
    if (p)
        p->out_of_core = any_ooc;
    tide_exchange asked = p ? p->o.exchange : TIDE_EXCHANGE_AUTO;
    if (p && !st && any_ooc && (asked == TIDE_EXCHANGE_NCCL || asked == TIDE_EXCHANGE_CUDA_MPI))
        st = TIDE_ERR_UNSUPPORTED,
        snprintf(err, len, "option exchange %s moves device memory, and this plan's halos lie "
                 "in host memory: its host arrays exceed the device budget, so it runs out of "
                 "core", tide_exchange_name(asked));
    if (p && !st && tide_box_count(&p->box) > 0) { /* the backend's choice on this box */
        make_sweep(p, off, w);
        for (int k = 0; k < 3; k++) /* at least a stencil's width: the GPU's sweeps need it,
                                     * and the grown box will have it */
            if (p->sweep.n[k] < 2 * p->radius + 1)
                p->sweep.n[k] = 2 * p->radius + 1;
        st = p->env.be->sweep_create(&p->env, &p->sweep, p->out_of_core ? 0 : p->o.fuse, err, len);
        if (!st && !p->out_of_core)
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
    int go = !st && thin < 0 && !p->out_of_core && !p->o.fuse && p->fuse > 1;
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
    size_t elem = tide_stencil_elem_bytes(p);
    if (!st) {
        p->ext = ext[ctx->rank];
        st = tide_halo_create(ctx->comm, p->n, periodic, own, ext, elem, p->env.threads,
                              halo_exchange(p), halo_on_device(p), &p->halo, err, len);
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
    if (st || (st = make_streamed(p, &p->box, p->o.fuse, &p->streamed, err, len)))
        return st;
    tide_stencil_streamed_shape sh;
    tide_stencil_streamed_shape_of(p->streamed, &sh);
    p->fuse = sh.fuse;
    p->tuned = !p->o.fuse;
    tide_op_sweep(&p->sweep_op, &p->sweep, sh.level_steps); /* a level's (describe) */
    tide_log(p->ctx, TIDE_LOG_DEBUG, "stencil: out of card: %d slabs of at most %d planes, %d "
             "steps per pass in levels of %d; the model expects %.4g GCell/s", sh.slabs,
             sh.planes, sh.fuse, sh.level_steps, sh.model_rate / 1e9);
    return TIDE_SUCCESS;
}

/* Bytes of the parts of this rank's halo (its grown box less its box), of u or the source. */
size_t tide_stencil_halo_bytes(const tide_stencil_plan *p)
{
    return (size_t)(tide_box_count(&p->ext) - tide_box_count(&p->box)) * tide_stencil_elem_bytes(p);
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
            st = e->be->host_alloc((size_t)tide_box_count(&halo[k]->box[i]) *
                                       tide_stencil_elem_bytes(p),
                                   &halo[k]->data[i]);
    }
    if (st)
        return snprintf(err, len, "cannot allocate the plan's %.3g GB of pinned host memory: "
                        "%s", tide_stencil_halo_bytes(p) * (1 + (p->o.source != NULL)) / 1e9,
                        e->be->last_error()), st;
    st = e->be->sweep_create(e, &p->sweep, 0, err, len); /* every level_steps */
    if (st || (st = make_streamed(p, &p->ext, p->fuse, &p->streamed, err, len)))
        return st;
    tide_stencil_streamed_shape sh;
    tide_stencil_streamed_shape_of(p->streamed, &sh);
    tide_op_sweep(&p->sweep_op, &p->sweep, sh.level_steps); /* a level's (describe) */
    return TIDE_SUCCESS;
}

/* The plan's memory, its sweep and its steps per pass (local; the reason in err): on a GPU
 * with host arrays the device copies of u and the source (or, beyond the budget on one rank,
 * the slabs through the GPU); the work array, or on several ranks the arrays on the grown
 * box, and the sweep with the agreed steps per pass. */
static int build_memory(tide_stencil_plan *p, const int (*off)[3], const double *w, char *err,
                        size_t len)
{
    const tide_env *e = &p->env;
    make_sweep(p, off, w);
    int host_gpu = e->be->gpu && p->o.location == TIDE_LOCATION_HOST;
    if (host_gpu && !p->halo && tide_stencil_backend_bytes(p) > p->ctx->dev.budget_bytes)
        return build_streamed(p, err, len);
    if (p->out_of_core)
        return build_out_of_core(p, err, len);
    if (e->be->gpu && tide_stencil_backend_bytes(p) > p->ctx->dev.budget_bytes)
        return snprintf(err, len, "the plan needs %.3g GB of device memory on GPU %d, more than "
                        "the context's budget of %.3g GB", tide_stencil_backend_bytes(p) / 1e9,
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
                        tide_stencil_backend_bytes(p) / 1e9, e->be->name, e->be->last_error()), st;
    if (p->halo) { /* the agreed steps per pass, on the grown box */
        p->sweep.source = p->esrc;
        if (tide_box_count(&p->box) > 0 &&
            (st = e->be->sweep_create(e, &p->sweep, p->fuse, err, len)))
            return st;
        tide_op_sweep(&p->sweep_op, &p->sweep, p->fuse);
        return split_setup(p, err, len);
    }
    p->sweep.source = host_gpu ? p->dev_source : p->o.source;
    st = e->be->sweep_create(e, &p->sweep, p->o.fuse, err, len);
    if (st)
        return st;
    p->fuse = p->o.fuse ? p->o.fuse : tune_fuse(p, &st);
    if (st)
        return snprintf(err, len, "timing the sweeps failed: %s", e->be->last_error()), st;
    tide_op_sweep(&p->sweep_op, &p->sweep, p->fuse);
    return TIDE_SUCCESS;
}

/* Adds op to prog, in place in its source or from it into the destination. */
static void add(tide_program *prog, const tide_op *op)
{
    tide_op *o = &prog->ops[prog->nops++];
    *o = *op;
    o->src = TIDE_LOC_IN;
    o->dst = o->in_place_ok ? TIDE_LOC_IN : TIDE_LOC_OUT;
}

/* The programs of the plan's path (stencil_plan.h: pass, source_halo) on what build_memory
 * made. */
static void make_programs(tide_stencil_plan *p)
{
    tide_stencil_ops *s = &p->ops;
    tide_op op = {0};
    int any = tide_box_count(&p->box) > 0;
    s->streamed = p->streamed;
    s->source = p->o.source;
    s->split = p->split;
    p->into[0] = (tide_stencil_parts){&p->box, &p->halo_u};
    p->into[1] = (tide_stencil_parts){&p->box, &p->halo_src};
    if (p->out_of_core) {
        s->halo_u = &p->halo_u;
        s->halo_src = &p->halo_src;
        tide_stencil_op_halo_parts(&op, &p->into[0], p->halo, &p->tally);
        add(&p->pass, &op);
    } else if (p->split) {
        tide_stencil_op_split(&op, s, p->halo, &p->tally);
        add(&p->pass, &op);
    } else if (p->halo) {
        tide_op_halo(&op, p->halo, &p->tally);
        add(&p->pass, &op);
    }
    if (p->streamed) {
        memset(&op, 0, sizeof op);
        tide_stencil_op_slabs(&op, s);
        add(&p->pass, &op);
    } else if (!p->out_of_core && !p->split && (any || !p->halo)) {
        add(&p->pass, &p->sweep_op);
    }
    if (p->halo && p->o.source) {
        memset(&op, 0, sizeof op);
        if (p->out_of_core)
            tide_stencil_op_halo_parts(&op, &p->into[1], p->halo, &p->tally);
        else
            tide_op_halo(&op, p->halo, &p->tally);
        add(&p->source_halo, &op);
    }
}

int tide_stencil_build(tide_stencil_plan *p, const int (*off)[3], const double *w, char *err,
                       size_t len)
{
    int st = build_memory(p, off, w, err, len);
    if (!st)
        make_programs(p);
    return st;
}
