/*
 * stencil_stream.c: stencil passes over a host grid larger than the GPU (stencil_stream.h).
 *
 * Slab i owns planes [o0, o1) of the nz along the slowest storage dimension and is swept on
 * the device grown by g = K r ghost planes: [o0 - g, o1 + g), clipped at Dirichlet faces and
 * wrapping past periodic ones. Its device buffers (one pipeline slot's): A and B, the two
 * time levels the sweeps alternate between, and the source's planes. Resident buffers: SAVE,
 * the g own planes at the top of the slab before (the planes below this slab, which that slab
 * has written back by now), and WRAP, slab 0's first g planes (above the last slab on a
 * periodic grid). The work of slab i:
 *   1. the planes below from SAVE (i > 0), then its own top g planes into SAVE (i < last);
 *      slab 0 of a periodic grid saves its first g planes into WRAP, the last slab takes them
 *      above its own;
 *   2. the pass's steps in sweeps of up to f steps, A to B and back, the slab's faces kept as
 *      boundaries: its own planes are right, g planes from any ghost face at most K r deep.
 * Uploads: the planes from the slab's first own one (slab 0: its first) to its top, and a
 * periodic slab 0's planes below from the grid's top; the source's planes all from the host
 * (never written). Download: the own planes from whichever of A and B holds the result.
 *
 * The model (Jin 2014's: the slowest of the transfers and the kernel sets each slab's time):
 * a pass takes slabs x max(up / h2d, down / d2h, (up + down) / both, sweeps) plus one slab's
 * upload and download (the pipeline filling and draining), with the sweeps' times per plane
 * measured at plan time for each count f the kernels fuse; K, f and the slab count are those
 * that give the most cell steps per second within the budget.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "tide_config.h"
#include "stencil_stream.h"
#if TIDE_HAVE_CUDA
#include "pipeline.h"

enum {
    SLOTS = 3,        /* upload, sweeps and download of three slabs at once */
    KMAX = 64,        /* the most steps per pass the model considers */
    FMAX = 16,        /* the most steps per sweep timed */
    TIMED_PLANES = 64 /* planes of the box the sweeps are timed on (fewer on a thin grid) */
};
enum { SAVE = 0, WRAP = 1 }; /* resident buffers */

struct tide_stencil_stream {
    tide_stencil_stream_desc d;
    tide_sweep sweep;         /* the whole grid's, copied: slabs change n[0] and the source */
    long long nz;             /* planes along the slowest storage dimension */
    size_t plane;             /* bytes of one plane */
    int r, K, f, ns, smax, nbufs, periodic;
    double rate;              /* the model's cell steps per second */
    tide_pipeline *pipe;
    tide_pipeline_job job;
    void *u;                  /* the pass in flight */
    const void *src;
    int steps;
};

/* Slab i's own planes [*o0, *o1) and its grown ones [*lo, *hi) (below 0 or past nz where the
 * grid wraps). */
static void slab(const tide_stencil_stream *s, int i, long long *o0, long long *o1,
                 long long *lo, long long *hi)
{
    long long g = (long long)s->K * s->r;
    *o0 = s->nz * i / s->ns;
    *o1 = s->nz * (i + 1) / s->ns;
    *lo = *o0 - g, *hi = *o1 + g;
    if (!s->periodic) {
        *lo = *lo > 0 ? *lo : 0;
        *hi = *hi < s->nz ? *hi : s->nz;
    }
}

/* u's box with planes [a, b) of the slowest storage dimension (a may lie below 0, b past
 * nz: the device side of a slab, shifted by nz for the planes that wrap). */
static tide_box planes(const tide_stencil_stream *s, long long a, long long b)
{
    tide_box x = s->d.box;
    int d = x.order[0];
    x.hi[d] = x.lo[d] + (int)b;
    x.lo[d] = x.lo[d] + (int)a;
    return x;
}

/* Sweeps of the pass: how many, so whether the result lands in B (odd) or A. */
static int sweeps(const tide_stencil_stream *s) { return (s->steps + s->f - 1) / s->f; }

static int describe(void *user, int i, tide_xfer *up, int *nup, tide_xfer *down, int *ndown)
{
    const tide_stencil_stream *s = user;
    long long o0, o1, lo, hi, nz = s->nz;
    slab(s, i, &o0, &o1, &lo, &hi);
    const tide_box *h = &s->d.box;
    tide_box dev = planes(s, lo, hi), below = planes(s, lo + nz, hi + nz),
             above = planes(s, lo - nz, hi - nz);
    long long top = hi < nz ? hi : nz, bottom = lo > 0 ? lo : 0;
    int n = 0;
    /* u: the planes below come from SAVE past slab 0; a periodic slab 0's from the top */
    up[n++] = (tide_xfer){s->u, *h, planes(s, i ? o0 : bottom, top), 0, 0, dev};
    if (lo < 0)
        up[n++] = (tide_xfer){s->u, *h, planes(s, nz + lo, nz), 0, 0, below};
    if (s->src) {
        up[n++] = (tide_xfer){(void *)s->src, *h, planes(s, bottom, top), 2, 0, dev};
        if (lo < 0)
            up[n++] = (tide_xfer){(void *)s->src, *h, planes(s, nz + lo, nz), 2, 0, below};
        if (hi > nz)
            up[n++] = (tide_xfer){(void *)s->src, *h, planes(s, 0, hi - nz), 2, 0, above};
    }
    *nup = n;
    down[0] = (tide_xfer){s->u, *h, planes(s, o0, o1), sweeps(s) % 2, 0, dev};
    *ndown = 1;
    return TIDE_SUCCESS;
}

static int work(void *user, int i, void *const *buf, void *stream)
{
    const tide_stencil_stream *s = user;
    tide_env e = *s->d.env;
    e.stream = stream;
    const tide_backend_ops *be = e.be;
    long long o0, o1, lo, hi, nz = s->nz;
    slab(s, i, &o0, &o1, &lo, &hi);
    size_t pl = s->plane, gb = (size_t)s->K * (size_t)s->r * pl;
    char *a = buf[0], *save = buf[s->nbufs + SAVE], *wrap = buf[s->nbufs + WRAP];
    int st = TIDE_SUCCESS;
    if (i > 0)
        st = be->copy(&e, a, save, gb);
    if (!st && i < s->ns - 1)
        st = be->copy(&e, save, a + (size_t)(o1 - lo) * pl - gb, gb);
    if (!st && s->periodic && i == 0)
        st = be->copy(&e, wrap, a + (size_t)(0 - lo) * pl, gb);
    if (!st && s->periodic && i == s->ns - 1)
        st = be->copy(&e, a + (size_t)(nz - lo) * pl, wrap, gb);
    tide_sweep t = s->sweep;
    t.n[0] = (int)(hi - lo);
    t.periodic[0] = 0;
    t.source = s->src ? buf[2] : NULL;
    void *from = buf[0], *to = buf[1];
    for (int left = s->steps; left > 0 && !st;) {
        int k = left < s->f ? left : s->f;
        st = be->sweep(&e, &t, from, to, k);
        left -= k;
        void *x = from;
        from = to, to = x;
    }
    return st;
}

/* Device bytes of the pipeline for slabs of at most smax own planes and K steps per pass. */
static double pipeline_bytes(const tide_stencil_stream *s, int K, long long smax)
{
    double g = (double)K * s->r;
    return ((double)SLOTS * s->nbufs * ((double)smax + 2 * g) + 2 * g) * (double)s->plane;
}

/* Seconds per plane of one sweep of f steps (f = 1 .. fmost), timed on a few planes from one
 * device buffer into another. */
static int time_sweeps(tide_stencil_stream *s, int fmost, double *tf, char *err, size_t len)
{
    const tide_env *e = s->d.env;
    /* within the budget (which holds 2 r + 1 planes' slabs: see create) */
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
    for (int f = 1; f <= fmost && !st; f++)
        tf[f] = tide_stencil_time_sweep(e, &t, a, b, f, &st) / (double)n0;
    e->be->free(a);
    e->be->free(b);
    if (st)
        snprintf(err, len, "timing the sweeps failed: %s", e->be->last_error());
    return st;
}

/* The sweeps of K steps with the least time per plane: *f steps each (the last fewer). */
static double sweep_time(const double *tf, int fmost, int K, int *f)
{
    double best = INFINITY;
    for (int k = 1; k <= fmost; k++) {
        double t = (K / k) * tf[k] + (K % k ? tf[K % k] : 0);
        if (t < best)
            best = t, *f = k;
    }
    return best;
}

/* The model's seconds for one pass of K steps in ns slabs (the thickest smax own planes), f
 * steps per sweep; INFINITY where the slabs do not fit the budget or are thinner than their
 * ghosts or a sweep's 2 r + 1 planes. */
static double pass_time(const tide_stencil_stream *s, const double *tf, int fmost, int K,
                        long long ns, int *f)
{
    long long g = (long long)K * s->r, smin = s->nz / ns, smax = (s->nz + ns - 1) / ns;
    if (ns < 2 || smin < g || smin < 2LL * s->r + 1 ||
        pipeline_bytes(s, K, smax) > (double)s->d.budget)
        return INFINITY;
    const tide_rates *x = &s->d.pcie;
    double pl = (double)s->plane, rows = (double)(smax + 2 * g);
    double up = ((double)(smax + g) + (s->d.source ? rows : 0)) * pl, down = (double)smax * pl;
    double t_up = up / (x->h2d * 1e9), t_down = down / (x->d2h * 1e9);
    double t_both = (up + down) / (x->both * 1e9), t_dev = rows * sweep_time(tf, fmost, K, f);
    double t = fmax(fmax(t_up, t_down), fmax(t_both, t_dev));
    return (double)ns * t + t_up + t_down;
}

int tide_stencil_stream_create(const tide_stencil_stream_desc *d, tide_stencil_stream **out,
                               char *err, size_t len)
{
    *out = NULL;
    tide_stencil_stream *s = calloc(1, sizeof *s);
    if (!s)
        return snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM;
    s->d = *d;
    s->sweep = *d->sweep;
    s->nz = d->sweep->n[0];
    s->r = d->sweep->radius;
    s->nbufs = 2 + (d->source != 0);
    s->periodic = d->sweep->periodic[0];
    size_t elem = d->sweep->dbl ? sizeof(double) : sizeof(float);
    s->plane = (size_t)d->sweep->n[1] * (size_t)d->sweep->n[2] * elem;
    const tide_rates *x = &d->pcie;
    if (!(x->h2d > 0 && x->d2h > 0 && x->both > 0)) {
        free(s);
        return snprintf(err, len, "no measured PCIe rates"), TIDE_ERR_BACKEND;
    }

    /* the budget must hold three slots of slabs one plane thick with one step's ghosts */
    int fmost = d->sweep->max_fuse < FMAX ? d->sweep->max_fuse : FMAX, st = TIDE_SUCCESS;
    long long thinnest = 2LL * s->r + 1;
    if (pipeline_bytes(s, 1, thinnest) > (double)d->budget || s->nz < 2 * thinnest) {
        st = TIDE_ERR_NOMEM;
        snprintf(err, len, "the grid streams through the GPU in slabs along its slowest "
                 "storage dimension (%lld planes of %.3g MB), which needs at least two slabs "
                 "of %lld planes and %.3g MB of device memory; the budget is %.3g MB", s->nz,
                 s->plane / 1e6, thinnest, pipeline_bytes(s, 1, thinnest) / 1e6,
                 d->budget / 1e6);
    }
    double tf[FMAX + 1];
    if (!st)
        st = time_sweeps(s, fmost, tf, err, len);

    /* K (the given one, or each up to KMAX) and the slabs: the fewest thick enough to fit,
     * and a few more (more slabs overlap better but grow the ghosts' share) */
    double best = 0;
    for (int K = d->fuse ? d->fuse : 1; !st && K <= (d->fuse ? d->fuse : KMAX); K++) {
        double fit = (double)d->budget / (double)s->plane;
        long long g = (long long)K * s->r;
        long long smax = (long long)((fit - 2.0 * g) / (SLOTS * s->nbufs)) - 2 * g;
        if (smax < 1)
            break;
        long long ns0 = (s->nz + smax - 1) / smax;
        for (long long ns = ns0 > 2 ? ns0 : 2; ns <= ns0 + 8 && ns <= s->nz; ns++) {
            int f = 1;
            double t = pass_time(s, tf, fmost, K, ns, &f);
            /* cell steps per second, so K is compared fairly */
            if (t < INFINITY && (double)K / t > best * (1 + 1e-9))
                best = (double)K / t, s->K = K, s->f = f, s->ns = (int)ns;
        }
    }
    if (!st && !s->K) {
        st = d->fuse ? TIDE_ERR_ARGUMENT : TIDE_ERR_NOMEM;
        if (d->fuse)
            snprintf(err, len, "fuse %d: the slabs of the %lld-plane grid cannot hold %d ghost "
                     "planes on each side within the device budget of %.3g MB", d->fuse, s->nz,
                     d->fuse * s->r, d->budget / 1e6);
        else
            snprintf(err, len, "no slabs of the %lld-plane grid fit the device budget of %.3g "
                     "MB", s->nz, d->budget / 1e6);
    }
    if (st) {
        free(s);
        return st;
    }
    s->rate = best * (double)s->nz * (double)s->plane / (double)elem;
    s->smax = (int)((s->nz + s->ns - 1) / s->ns);
    size_t g = (size_t)s->K * (size_t)s->r;
    size_t buf[3], res[2] = {g * s->plane, g * s->plane};
    for (int b = 0; b < s->nbufs; b++)
        buf[b] = ((size_t)s->smax + 2 * g) * s->plane;
    tide_pipeline_config pc = {.nslots = SLOTS, .nbufs = s->nbufs, .buf_bytes = buf,
                               .nresident = 2, .resident_bytes = res};
    st = tide_pipeline_create_config(&pc, &s->pipe, err, len);
    if (st) {
        free(s);
        return st;
    }
    *out = s;
    return TIDE_SUCCESS;
}

void tide_stencil_stream_destroy(tide_stencil_stream *s)
{
    if (!s)
        return;
    tide_pipeline_destroy(s->pipe);
    free(s);
}

int tide_stencil_stream_pass(tide_stencil_stream *s, void *u, const void *source, int steps,
                             char *err, size_t len)
{
    if (steps < 1 || steps > s->K)
        return snprintf(err, len, "a pass of %d steps (1 .. %d)", steps, s->K),
               TIDE_ERR_ARGUMENT;
    s->u = u, s->src = source, s->steps = steps;
    s->job = (tide_pipeline_job){.nchunks = s->ns, .elem = s->sweep.dbl ? 8 : 4, .batch = 1,
                                 .max_up = 5, .max_down = 1, .describe = describe,
                                 .work = work, .user = s, .pageable = TIDE_PAGEABLE_STAGE,
                                 .ordered = 1, .after_caller = 1,
                                 .caller_stream = s->d.env->stream};
    return tide_pipeline_run(s->pipe, &s->job, err, len);
}

void tide_stencil_stream_shape_of(const tide_stencil_stream *s, tide_stencil_stream_shape *sh)
{
    *sh = (tide_stencil_stream_shape){s->K, s->f, s->ns, s->smax,
                                      tide_pipeline_device_bytes(s->pipe),
                                      tide_pipeline_pinned_bytes(s->pipe), s->rate};
}

#else /* no CUDA: plans never stream (the CPU backend holds the grid in host memory) */

int tide_stencil_stream_create(const tide_stencil_stream_desc *d, tide_stencil_stream **out,
                               char *err, size_t len)
{
    (void)d;
    *out = NULL;
    snprintf(err, len, "this build has no CUDA");
    return TIDE_ERR_UNSUPPORTED;
}

void tide_stencil_stream_destroy(tide_stencil_stream *s) { (void)s; }

int tide_stencil_stream_pass(tide_stencil_stream *s, void *u, const void *source, int steps,
                             char *err, size_t len)
{
    (void)s, (void)u, (void)source, (void)steps;
    snprintf(err, len, "this build has no CUDA");
    return TIDE_ERR_UNSUPPORTED;
}

void tide_stencil_stream_shape_of(const tide_stencil_stream *s, tide_stencil_stream_shape *sh)
{
    (void)s;
    memset(sh, 0, sizeof *sh);
}

#endif
