/*
 * stencil_streamed.c: stencil passes over a host grid larger than the GPU (stencil_streamed.h).
 *
 * Jin 2014's 1D-TBM with buffer copy, its levels fused. Slab i owns planes [o0, o1) of the nz
 * along the slowest storage dimension. A pass of L f steps computes, on the device, each
 * level l = 1 .. L of the slab one after another, level l being the data after l f steps, by
 * one sweep of f steps (the fused kernels of the plan's sweep): to the layout below such a
 * sweep is one step of a stencil of radius R = f r. Level l lies on planes [o0 - l R, o1 - l
 * R): every level lags the one before by R planes, so it reads only level l - 1 on [o0 - (l +
 * 1) R, o1 - (l - 1) R), the slab's own level l - 1 planes and the 2 R below them, which the
 * slab before computed and left in resident buffer BORDER (one band of 2 R planes per level).
 * Each plane goes up once at level 0 and comes back once at level L; a point is computed
 * twice only inside a sweep of f steps (its intermediate steps near the window's faces).
 * The plan picks F, the steps of a level, with K (a multiple of F) from the model; a pass of
 * fewer steps takes levels of the largest f <= F dividing them.
 *
 * The device buffers of a slot, X and Y, hold the levels alternately (level l in X when l is
 * even), each level in the window it is read from: planes [o0 - (l + 2) R, ...) from position
 * 0, so a sweep that reads level l - 1 at position p writes level l at position p + R (its
 * output pointer R planes on), and every level fits S + 3 R planes, whatever L. The source's
 * planes lie in a buffer of their own from plane o0 - (K + F) r, the deepest any window reads.
 *
 * The grid's faces along the slabs: slab 0 starts from the face (Dirichlet, the face a sweep
 * boundary) or, periodic, from what it has (level l from plane l R: a cold start), keeping
 * levels 0 .. L - 1 of its planes [(l - 1) R, (l + 1) R) in resident buffer HEAD. One more
 * chunk after the slabs, the seam, finishes the levels the lag left: Dirichlet, level l on
 * [nz - l R, nz) from the last slab's bands and the face; periodic, level l on [-l R, l R)
 * (wrapped) from the last slab's bands and HEAD. Each level is one sweep of f steps over the
 * planes it reads, whose faces are kept as boundaries: a face that is not the grid's spoils
 * exactly the R planes its f steps reach. A slab downloads planes the slab before uploaded (and
 * the seam planes of the last slab and of slab 0): the job is ordered (slab i's work after
 * slab i-1's), which the pipeline engine guarantees orders those downloads after the uploads
 * (backend/pipeline.h, host-side ordering); nothing is read from the host after it was written,
 * and uploads, sweeps and downloads of neighbouring slabs overlap in both directions.
 *
 * The model (Jin 2014's: the slowest of the transfers and the sweeps sets each slab's time):
 * a pass takes slabs x max(up / h2d, down / d2h, (up + down) / both, K / F sweeps of F steps)
 * plus one slab's upload and download (the pipeline filling and draining) and the seam's
 * sweeps, each sweep's time per plane measured at plan time for every F the kernels fuse; K,
 * F and the slab count are those that give the most cell steps per second within the budget,
 * the largest K within 2 per cent of the best: once the sweeps bound a pass, its rate no
 * longer grows with K, but a run of many steps makes fewer passes, each moving the whole grid
 * over PCIe.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "stencil/stencil_streamed.h"
#include "comm/region.h"
#include "plan/runner.h"

enum {
    SLOTS = 3,         /* upload, sweeps and download of three slabs at once */
    KMAX = 256,        /* the most steps per pass the model considers */
    FMAX = 8,          /* the most steps of one level's sweep it considers */
    TIMED_PLANES = 64  /* planes of the box the sweeps are timed on (fewer on a thin grid) */
};
enum { BORDER = 0, HEAD = 1 }; /* resident buffers */

/* A level's ops, made once a pass: its sweep of f steps over a window (win: the window's
 * planes n[0] and its source set for each chunk), and a copy of a window too thin for a sweep
 * (thin: its bytes, set for each chunk). */
typedef struct {
    tide_sweep win;
    size_t thin;
    tide_op sweep, copy;
} level_ops;

struct tide_stencil_streamed {
    tide_stencil_streamed_desc d;
    tide_sweep sweep;         /* the whole grid's, copied: windows change n[0] and the source */
    long long nz;             /* planes along the slowest storage dimension */
    size_t plane;             /* bytes of one plane */
    int r, K, ns, smax, nbufs, periodic;
    int F;                    /* steps of a level's sweep (K a multiple of it) */
    double tf[FMAX + 1];      /* seconds per plane of a sweep of f steps (0: none) */
    long long levels, sources; /* planes of X and Y, and of the source's buffer */
    double rate;              /* the model's cell steps per second */
    tide_runner *runner;      /* SLOTS deep */
    tide_runner_pass pass;
    tide_op band_copy;        /* a chunk's ops: a level's band copied (band_bytes) ... */
    size_t band_bytes;
    level_ops *lev;           /* ... and each level's (K of them at most), made for each pass */
    void *u, *src;            /* the pass in flight: u and the source (laid out as own) ... */
    const tide_parts *halo, *src_halo; /* ... and their halos (NULL where own is box) */
    int steps;                /* its steps */
    int f;                    /* its steps per level (the largest divisor of steps <= F) */
};

/* The most steps, at most F, that divide n: the steps of a level in a pass of n steps. */
static int level_steps(int n, int F)
{
    while (n % F)
        F--;
    return F;
}

/* The planes below a slab's first that its deepest window reaches, (K + F) r: the source
 * buffer's first plane and the seam's position of plane nz. */
static long long reach(const tide_stencil_streamed *s, int K, int F)
{
    return (long long)(K + F) * s->r;
}

/* Planes of X and Y, and of the source's buffer, for slabs of at most smax own planes, K
 * steps per pass and F a level (the seam's windows grow to (K + F) r planes, twice that
 * periodic). */
static long long level_planes(const tide_stencil_streamed *s, int K, int F, long long smax)
{
    long long slab = smax + 3LL * F * s->r, seam = (s->periodic ? 2 : 1) * reach(s, K, F);
    return slab > seam ? slab : seam;
}

static long long source_planes(const tide_stencil_streamed *s, int K, int F, long long smax)
{
    long long slab = smax + reach(s, K, F), seam = 2 * reach(s, K, F);
    return slab > seam ? slab : seam;
}

/* Slab i's own planes [*o0, *o1). */
static void slab(const tide_stencil_streamed *s, int i, long long *o0, long long *o1)
{
    *o0 = s->nz * i / s->ns;
    *o1 = s->nz * (i + 1) / s->ns;
}

/* u's box with planes [a, b) of the slowest storage dimension (a may lie below 0, b past
 * nz: the device side of a slab, shifted by nz for the planes that wrap). */
static tide_box planes(const tide_stencil_streamed *s, long long a, long long b)
{
    tide_box x = s->d.box;
    int d = x.order[0];
    x.hi[d] = x.lo[d] + (int)b;
    x.lo[d] = x.lo[d] + (int)a;
    return x;
}

/* Transfer x of the grid appended to xs at *n as the pipeline moves it: the part of its
 * region inside the own box from or into host (laid out as own), and, for an upload, the
 * parts of the halo it meets from theirs (at most six; none where own is box); downloads
 * leave the halo's results on the device. */
static void split(const tide_stencil_streamed *s, tide_xfer x, void *host,
                  const tide_parts *halo, int upload, tide_xfer *xs, int *n)
{
    tide_xfer t = x;
    t.host = host;
    t.hbox = s->d.own;
    if (tide_box_intersect(&x.region, &s->d.own, &t.region) > 0)
        xs[(*n)++] = t;
    for (int i = 0; upload && halo && i < halo->n; i++) {
        t.host = halo->data[i];
        t.hbox = halo->box[i];
        if (tide_box_intersect(&x.region, &halo->box[i], &t.region) > 0)
            xs[(*n)++] = t;
    }
}

static int describe(void *user, int i, tide_xfer *up, int *nup, tide_xfer *down, int *ndown)
{
    const tide_stencil_streamed *s = user;
    /* L levels of f steps, each lagging R planes (the header comment) */
    long long nz = s->nz, L = s->steps / s->f, R = (long long)s->f * s->r, B = s->levels;
    long long SB = s->sources, P0 = reach(s, s->K, s->F);
    const tide_box *h = &s->d.box;
    void *src = s->src;
    int n = 0, m = 0;
    if (i < s->ns) {
        long long o0, o1;
        slab(s, i, &o0, &o1);
        long long sbase = o0 - P0, lo = o0 - (L + 1) * R;
        /* level 0 at its window's positions (from o0 - 2 R), the source from sbase */
        split(s, (tide_xfer){s->u, *h, planes(s, o0, o1), 0, 0,
                             planes(s, o0 - 2 * R, o0 - 2 * R + B)}, s->u, s->halo, 1, up, &n);
        if (src)
            split(s, (tide_xfer){src, *h, planes(s, lo > 0 ? lo : 0, o1), 2, 0,
                                 planes(s, sbase, sbase + SB)}, src, s->src_halo, 1, up, &n);
        /* level L: from o0 - L R (slab 0 from the face, or past the cold start) */
        long long d0 = i ? o0 - L * R : s->periodic ? L * R : 0, b0 = o0 - (L + 2) * R;
        split(s, (tide_xfer){s->u, *h, planes(s, d0, o1 - L * R), (int)(L % 2), 0,
                             planes(s, b0, b0 + B)}, s->u, s->halo, 0, down, &m);
    } else { /* the seam: sources up, level L down, below nz (and wrapped above 0); P0 is the
              * position of plane nz, or periodic 0 */
        tide_box top = planes(s, nz - P0, nz - P0 + B), bottom = planes(s, -P0, -P0 + B);
        if (src) {
            split(s, (tide_xfer){src, *h, planes(s, nz - (L + 1) * R, nz), 2, 0,
                                 planes(s, nz - P0, nz - P0 + SB)}, src, s->src_halo, 1, up, &n);
            if (s->periodic)
                split(s, (tide_xfer){src, *h, planes(s, 0, (L + 1) * R), 2, 0,
                                     planes(s, -P0, -P0 + SB)}, src, s->src_halo, 1, up, &n);
        }
        split(s, (tide_xfer){s->u, *h, planes(s, nz - L * R, nz), (int)(L % 2), 0, top}, s->u,
              s->halo, 0, down, &m);
        if (s->periodic)
            split(s, (tide_xfer){s->u, *h, planes(s, 0, L * R), (int)(L % 2), 0, bottom}, s->u,
                  s->halo, 0, down, &m);
    }
    *nup = n;
    *ndown = m;
    return TIDE_SUCCESS;
}

/* Chunk i's steps for level l: appends to step[*n] the op that makes level l from level
 * l - 1 over the window of n planes at from (into to, at the same or a later position), the
 * source's planes at sb: one sweep of f steps, or, thinner than a sweep's 2 r + 1 planes (the
 * seam's first level at a Dirichlet face, f 1), a copy of all of them. */
static void level(tide_stencil_streamed *s, long long l, char *from, char *to, long long n,
                  char *sb, tide_step *step, int *k)
{
    level_ops *v = &s->lev[l - 1];
    v->win.n[0] = (int)n;
    v->win.source = sb; /* NULL without a source */
    v->thin = (size_t)n * s->plane;
    step[(*k)++] = (tide_step){n < 2LL * s->r + 1 ? &v->copy : &v->sweep, from, to};
}

/* A copy of one level's band (2 R planes) from src to dst. */
static void band(const tide_stencil_streamed *s, void *src, void *dst, tide_step *step, int *k)
{
    step[(*k)++] = (tide_step){&s->band_copy, src, dst};
}

/* Chunk i's steps: level after level, the bands it takes from the slab before and leaves for
 * the next (and the seam), then the level's sweep. */
static int chunk_steps(void *user, int i, const tide_env *e, void *const *buf,
                       tide_step *step, int *n)
{
    (void)e;
    tide_stencil_streamed *s = user;
    long long L = s->steps / s->f, R = (long long)s->f * s->r, P0 = reach(s, s->K, s->F);
    size_t pl = s->plane, bb = 2 * (size_t)R * pl;
    char *border = buf[s->nbufs + BORDER], *head = buf[s->nbufs + HEAD];
    char *sb = s->src ? buf[2] : NULL;
    int k = 0;
    s->band_bytes = bb;
#define AT(b, p) ((b) + (size_t)(p) * pl) /* position p of buffer b */
    if (i < s->ns) {
        long long o0, o1;
        slab(s, i, &o0, &o1);
        long long own = o1 - o0, sbase = o0 - P0;
        int first = i == 0;
        for (long long l = 1; l <= L; l++) {
            char *from = buf[(l - 1) % 2], *to = buf[l % 2];
            char *bl = border + (size_t)(l - 1) * bb, *hl = head + (size_t)(l - 1) * bb;
            long long base = o0 - (l + 1) * R; /* the global plane at from's position 0 */
            /* level l - 1: the band below from the slab before, its own top band for the next
             * (and the seam), a periodic slab 0's planes [(l - 1) r, (l + 1) r) for the seam */
            if (!first)
                band(s, bl, from, step, &k);
            band(s, AT(from, own), bl, step, &k);
            if (s->periodic && first)
                band(s, AT(from, (l - 1) * R - base), hl, step, &k);
            long long a = !first ? base : s->periodic ? (l - 1) * R : 0, b = o1 - (l - 1) * R;
            level(s, l, AT(from, a - base), AT(to, a - base + R), b - a,
                  sb ? AT(sb, a - sbase) : NULL, step, &k);
        }
    } else {
        for (long long l = 1; l <= L; l++) {
            char *from = buf[(l - 1) % 2], *to = buf[l % 2];
            char *bl = border + (size_t)(l - 1) * bb, *hl = head + (size_t)(l - 1) * bb;
            /* level l - 1: the last slab's band below, a periodic slab 0's above */
            band(s, bl, AT(from, P0 - (l + 1) * R), step, &k);
            if (s->periodic)
                band(s, hl, AT(from, P0 + (l - 1) * R), step, &k);
            long long a = P0 - (l + 1) * R, b = s->periodic ? P0 + (l + 1) * R : P0;
            level(s, l, AT(from, a), AT(to, a), b - a, sb ? AT(sb, a) : NULL, step, &k);
        }
    }
#undef AT
    *n = k;
    return TIDE_SUCCESS;
}

/* Device bytes for slabs of at most smax own planes, K steps per pass and F a level: the
 * slots' buffers, BORDER and (periodic) HEAD (2 F r planes for each of K / F levels). */
static double pipeline_bytes(const tide_stencil_streamed *s, int K, int F, long long smax)
{
    double per_slot = 2.0 * level_planes(s, K, F, smax) +
                      (s->d.source ? (double)source_planes(s, K, F, smax) : 0);
    return (SLOTS * per_slot + (s->periodic ? 4.0 : 2.0) * K * s->r) * (double)s->plane;
}

/* s->tf: seconds per plane of a sweep of f steps for each f the kernels fuse (up to FMAX),
 * timed on a few planes from one device buffer into another. */
static int time_sweeps(tide_stencil_streamed *s, char *err, size_t len)
{
    const tide_env *e = s->d.env;
    /* within the budget (which holds the thinnest slabs: see create) */
    long long n0 = s->nz < TIMED_PLANES ? s->nz : TIMED_PLANES;
    long long fit = (long long)(s->d.budget / 2 / s->plane);
    n0 = n0 < fit ? n0 : fit;
    void *a = NULL, *b = NULL;
    if (e->be->alloc((size_t)n0 * s->plane, &a) || e->be->alloc((size_t)n0 * s->plane, &b)) {
        e->be->free(a);
        return snprintf(err, len, "cannot allocate %.3g MB of device memory to time the "
                        "sweeps: %s", 2e-6 * (double)n0 * s->plane, e->be->last_error()),
               TIDE_ERR_NOMEM;
    }
    tide_sweep t = s->sweep;
    t.n[0] = (int)n0;
    t.periodic[0] = 0;
    t.source = NULL;
    int st = TIDE_SUCCESS;
    for (int f = 1; f <= FMAX && f <= s->sweep.max_fuse && !st; f++)
        s->tf[f] = tide_stencil_time_sweep(e, &t, a, b, f, &st) / (double)n0;
    e->be->free(a);
    e->be->free(b);
    if (st)
        snprintf(err, len, "timing the sweeps failed: %s", e->be->last_error());
    return st;
}

/* The thinnest slab for K steps per pass in levels of F: slab 0 holds the last level but
 * one's band for slab 1 above what it computes from (the face: K + F radii; a cold start:
 * 2 K) and a sweep's 2 r + 1 planes at its last level. */
static long long thinnest(const tide_stencil_streamed *s, int K, int F)
{
    return (s->periodic ? 2LL * K : (long long)K + F) * s->r + 1;
}

/* The model's seconds for one pass of K steps in levels of F in ns slabs, tf seconds per
 * plane of a level's sweep; INFINITY where the slabs are too thin or do not fit the budget. */
static double pass_time(const tide_stencil_streamed *s, double tf, int K, int F, long long ns)
{
    long long smin = s->nz / ns, smax = (s->nz + ns - 1) / ns;
    if (ns < 2 || smin < thinnest(s, K, F) ||
        pipeline_bytes(s, K, F, smax) > (double)s->d.budget)
        return INFINITY;
    const tide_rates *x = &s->d.pcie;
    double pl = (double)s->plane, S = (double)smax, R = (double)F * s->r, L = (double)K / F;
    double up = (S + (s->d.source ? S + (double)reach(s, K, F) : 0)) * pl, down = S * pl;
    double t_up = up / (x->h2d * 1e9), t_down = down / (x->d2h * 1e9);
    double t_both = (up + down) / (x->both * 1e9), t_dev = L * (S + 2 * R) * tf;
    double seam = L * (L + 3) * R * tf * (s->periodic ? 2 : 1) / 2;
    double t = fmax(fmax(t_up, t_down), fmax(t_both, t_dev));
    return (double)ns * t + t_up + t_down + seam;
}

/* s's geometry from d, no timing (the reason in err). */
static int stream_init(const tide_stencil_streamed_desc *d, tide_stencil_streamed *s, char *err,
                       size_t len)
{
    s->d = *d;
    s->sweep = *d->sweep;
    s->nz = d->sweep->n[0];
    s->r = d->sweep->radius;
    s->nbufs = 2 + (d->source != 0);
    s->periodic = d->sweep->periodic[0];
    size_t elem = d->sweep->dbl ? sizeof(double) : sizeof(float);
    s->plane = (size_t)d->sweep->n[1] * (size_t)d->sweep->n[2] * elem;
    const tide_rates *x = &d->pcie;
    if (!(x->h2d > 0 && x->d2h > 0 && x->both > 0))
        return snprintf(err, len, "no measured PCIe rates"), TIDE_ERR_BACKEND;
    return TIDE_SUCCESS;
}

/* The slabs for K steps per pass in levels of F: the fewest that fit the budget, and a few
 * more (more slabs overlap better), the count with the most cell steps per second (*rate, at
 * tf seconds per plane of a level's sweep); 0 where none fit. */
static int slabs_for(const tide_stencil_streamed *s, double tf, int K, int F, double *rate)
{
    *rate = 0;
    long long smax = 0, hi = s->nz + 1; /* the thickest slab that fits: a bisection */
    while (hi - smax > 1) {
        long long mid = (smax + hi) / 2;
        *(pipeline_bytes(s, K, F, mid) <= (double)s->d.budget ? &smax : &hi) = mid;
    }
    if (smax < thinnest(s, K, F))
        return 0;
    long long ns0 = (s->nz + smax - 1) / smax;
    int best = 0;
    for (long long ns = ns0 > 2 ? ns0 : 2; ns <= ns0 + 8 && ns <= s->nz; ns++) {
        double t = pass_time(s, tf, K, F, ns);
        if (t < INFINITY && (double)K / t > *rate)
            *rate = (double)K / t, best = (int)ns;
    }
    return best;
}

/* The stream of d without its pipeline: the sweep timed, K and the slabs chosen (freed on a
 * failure). */
static int choose(const tide_stencil_streamed_desc *d, tide_stencil_streamed **out, char *err,
                  size_t len)
{
    *out = NULL;
    tide_stencil_streamed *s = calloc(1, sizeof *s);
    if (!s)
        return snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM;
    int st = stream_init(d, s, err, len);

    /* the budget must hold two of the thinnest slabs for one step per pass */
    long long thin = thinnest(s, 1, 1);
    if (!st && (pipeline_bytes(s, 1, 1, thin) > (double)d->budget || s->nz < 2 * thin)) {
        st = TIDE_ERR_NOMEM;
        snprintf(err, len, "the grid streams through the GPU in slabs along its slowest "
                 "storage dimension (%lld planes of %.3g MB), which needs at least two slabs "
                 "of %lld planes and %.3g MB of device memory; the budget is %.3g MB", s->nz,
                 s->plane / 1e6, thin, pipeline_bytes(s, 1, 1, thin) / 1e6, d->budget / 1e6);
    }
    /* the steps of a level: each count the kernels fuse, or at most the given one */
    int fhi = s->sweep.max_fuse < FMAX ? s->sweep.max_fuse : FMAX;
    if (!st && (d->level_steps < 0 || d->level_steps > fhi))
        st = TIDE_ERR_ARGUMENT, snprintf(err, len, "level_steps %d: out of card the GPU's "
                                         "sweeps take 1 .. %d steps a level", d->level_steps,
                                         fhi);
    if (!st)
        st = time_sweeps(s, err, len);

    /* For each K (the given one, or each up to KMAX) the slabs and the best steps a level
     * dividing K (with level_steps given, the most up to it), then the largest K within 2 per
     * cent of the best rate. */
    double best = 0, rate[KMAX + 1] = {0};
    int ns_of[KMAX + 1] = {0}, F_of[KMAX + 1] = {0};
    int k0 = d->fuse ? d->fuse : 1, k1 = d->fuse ? d->fuse : KMAX;
    if (!st && (k0 < 1 || k1 > KMAX))
        st = TIDE_ERR_ARGUMENT, snprintf(err, len, "fuse %d: out of card a pass takes 1 .. %d "
                                         "steps", d->fuse, KMAX);
    for (int K = k0; !st && K <= k1; K++) {
        for (int F = 1; F <= fhi; F++) {
            double x = 0;
            int fits = d->level_steps ? F == level_steps(K, d->level_steps) : K % F == 0;
            int ns = fits ? slabs_for(s, s->tf[F], K, F, &x) : 0;
            if (ns && x > rate[K])
                rate[K] = x, ns_of[K] = ns, F_of[K] = F;
        }
        best = fmax(best, rate[K]);
    }
    for (int K = k1; !st && K >= k0 && !s->K; K--)
        if (rate[K] > 0 && rate[K] >= 0.98 * best)
            s->K = K, s->F = F_of[K], s->ns = ns_of[K], best = rate[K];
    if (!st && !s->K) {
        st = d->fuse ? TIDE_ERR_ARGUMENT : TIDE_ERR_NOMEM;
        if (d->fuse)
            snprintf(err, len, "fuse %d: the grid's %lld planes do not cut into slabs of at "
                     "least %lld (for %d steps per pass) that fit the device budget of %.3g "
                     "MB", d->fuse, s->nz, thinnest(s, d->fuse, 1), d->fuse, d->budget / 1e6);
        else
            snprintf(err, len, "no slabs of the %lld-plane grid fit the device budget of %.3g "
                     "MB", s->nz, d->budget / 1e6);
    }
    if (st) {
        free(s);
        return st;
    }
    size_t elem = d->sweep->dbl ? sizeof(double) : sizeof(float);
    s->rate = best * (double)s->nz * (double)s->plane / (double)elem;
    s->smax = (int)((s->nz + s->ns - 1) / s->ns);
    s->levels = level_planes(s, s->K, s->F, s->smax);
    s->sources = source_planes(s, s->K, s->F, s->smax);
    *out = s;
    return TIDE_SUCCESS;
}

int tide_stencil_streamed_fits(const tide_stencil_streamed_desc *d, int K)
{
    tide_stencil_streamed s = {0};
    char err[64];
    double rate;
    /* one step a level fits wherever any count does */
    return K >= 1 && K <= KMAX && !stream_init(d, &s, err, sizeof err) &&
           slabs_for(&s, 1.0, K, 1, &rate) > 0;
}

int tide_stencil_streamed_fuse(const tide_stencil_streamed_desc *d, int *fuse, char *err,
                             size_t len)
{
    tide_stencil_streamed *s;
    int st = choose(d, &s, err, len);
    *fuse = st ? 0 : s->K;
    free(s);
    return st;
}

int tide_stencil_streamed_create(const tide_stencil_streamed_desc *d, tide_stencil_streamed **out,
                               char *err, size_t len)
{
    tide_stencil_streamed *s;
    int st = choose(d, &s, err, len);
    *out = NULL;
    if (st)
        return st;
    size_t kr = (size_t)s->K * (size_t)s->r; /* BORDER: K / F levels of 2 F r planes */
    size_t buf[3] = {(size_t)s->levels * s->plane, (size_t)s->levels * s->plane,
                     (size_t)s->sources * s->plane};
    size_t res[2] = {2 * kr * s->plane, s->periodic ? 2 * kr * s->plane : 1};
    /* a chunk's steps: per level up to three bands and the level */
    tide_runner_desc rd = {.env = s->d.env, .slots = SLOTS, .nbufs = s->nbufs, .buf_bytes = buf,
                           .nresident = 2, .resident_bytes = res, .max_steps = 4 * s->K};
    s->lev = calloc((size_t)s->K, sizeof *s->lev);
    st = !s->lev ? (snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM)
                 : tide_runner_create(&rd, &s->runner, err, len);
    if (st) {
        tide_stencil_streamed_destroy(s);
        return st;
    }
    tide_op_copy(&s->band_copy, &s->band_bytes, 2 * (size_t)s->F * (size_t)s->r * s->plane);
    *out = s;
    return TIDE_SUCCESS;
}

void tide_stencil_streamed_destroy(tide_stencil_streamed *s)
{
    if (!s)
        return;
    tide_runner_destroy(s->runner);
    free(s->lev);
    free(s);
}

int tide_stencil_streamed_pass(tide_stencil_streamed *s, void *u, const tide_parts *halo,
                             const void *source, const tide_parts *source_halo, int steps,
                             char *err, size_t len)
{
    if (steps < 1 || steps > s->K)
        return snprintf(err, len, "a pass of %d steps (1 .. %d)", steps, s->K),
               TIDE_ERR_ARGUMENT;
    if ((!halo || (source && !source_halo)) && !tide_box_equal(&s->d.own, &s->d.box))
        return snprintf(err, len, "u holds part of the grid: halo parts are needed"),
               TIDE_ERR_ARGUMENT;
    s->u = u, s->halo = halo, s->src = (void *)source, s->src_halo = source_halo;
    s->steps = steps;
    s->f = level_steps(steps, s->F);
    for (int l = 0; l < steps / s->f; l++) { /* each level's ops, on the whole grid's sweep */
        level_ops *v = &s->lev[l];
        v->win = s->sweep;
        v->win.periodic[0] = 0;
        tide_op_sweep(&v->sweep, &v->win, s->f);
        tide_op_copy(&v->copy, &v->thin, 2 * (size_t)s->r * s->plane);
    }
    /* up: u's level 0 and the source, each in at most seven pieces (split); down: into u */
    s->pass = (tide_runner_pass){.nchunks = s->ns + 1, .elem = s->sweep.dbl ? 8 : 4,
                                 .batch = 1, .max_up = 2 * (1 + TIDE_PARTS_MAX), .max_down = 2,
                                 .describe = describe, .steps = chunk_steps, .user = s,
                                 .ordered = 1, .after_caller = 1,
                                 .caller_stream = s->d.env->stream};
    return tide_runner_run(s->runner, &s->pass, err, len);
}

void tide_stencil_streamed_shape_of(const tide_stencil_streamed *s, tide_stencil_streamed_shape *sh)
{
    *sh = (tide_stencil_streamed_shape){s->K, s->F, s->ns, s->smax,
                                      tide_runner_device_bytes(s->runner),
                                      tide_runner_pinned_bytes(s->runner), s->rate};
}
