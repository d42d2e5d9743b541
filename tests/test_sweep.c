/*
 * test_sweep.c: the backends' stencil sweeps (backend.h: tide_sweep) on views, writing a
 * window. A sweep runs on a box of a larger array (its pitches) whose faces are its own, and
 * writes the points of its out window alone into a dst laid out as the array and holding the
 * window's planes alone; a GPU sweep told that others run beside it (beside) plans its chunks
 * for its share of the SMs: the results must not change. Each case runs k steps of a random
 * stencil (the built-in 7- and 27-point taps, whose GPU kernels are the fast ones, and random
 * star and box taps of radius 1 to 3, tests/common.c) on a random view of odd and prime sizes
 * with random boundaries and source inside a random array (random values around the view,
 * which must not matter), over a random window (often a thin band along one dimension), with
 * the CPU's cache per thread its own or a small random one (rows cut into tiles), its stores
 * into dst around the caches or not (the 7-point star's non-temporal stores), and
 * compares it bitwise with k steps of the naive reference (apps/reference.c) on the view
 * alone. The view's storage order is random (the user's x, y, z any of its dimensions; the
 * reference runs on the view turned to C order): the 27-point taps with weights of one value
 * per class (centre, face, edge, corner) half the time, swept in the class form (backend.h),
 * else with random weights, in the tap form; then more cases of the class form with x the
 * slowest dimension (the CPU's sweep that shares each plane's sums), grids up to 67 points
 * and up to 8 steps fused; then cases of star:R (R = 1 .. 4) in the documented tap order, the
 * user's z mostly the fastest dimension (the CPU's star spans), rows up to 131 points; then
 * fixed cases of the GPU's fused tiling (relay_case). Every other point of dst's buffer (the
 * rows and columns beside the window, the planes before and after it) must keep its poison.
 *
 * The CPU backend always; the CUDA backend when TIDE_TEST_BACKEND=cuda (exit 77, a visible
 * SKIP, without a GPU). On the GPU the test moves its data with plain CUDA calls on its own
 * stream, queued right before and after each sweep. Serial: no MPI.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "common.h"
#include "reference.h"
#if TIDE_HAVE_CUDA
#include <cuda_runtime.h>
#endif

static tt_tally tally;

typedef struct {
    int n[3], dbl, ntaps, radius, periodic[3], k, out[3][2], beside, source;
    int ord[3];        /* storage dimension k holds the user's dimension ord[k] */
    tide_stencil_shape shape;
    int classes;       /* the 27-point taps with class-constant weights cw */
    double cw[4];
    size_t cache; /* the CPU's cache per thread (0: its own): small ones cut rows into tiles */
    int stream_dst; /* the CPU's stores into dst around the caches: 1, -1 never, 0 its choice */
    int at[3], big[3]; /* the view's first point in the array, and the array's extents */
    int off[TIDE_SWEEP_MAX_TAPS][3];
    double w[TIDE_SWEEP_MAX_TAPS];
    char taps[32];
} scase;

static const int sizes[] = {3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 64, 67, 97, 128, 131};

/* A window along an extent of m points: all of it (out[1] 0) now and then, else random points
 * (often a thin band, of 1 to 4), on the GPU's wide rows (align) half the time from and to
 * multiples of 4 (the vector kernels' windows). */
static void make_window(tt_rng *rng, int m, int align, int out[2])
{
    out[0] = out[1] = 0;
    if (tt_rng_below(rng, 3) == 0)
        return;
    int lo = tt_rng_below(rng, m);
    int width = 1 + tt_rng_below(rng, tt_rng_below(rng, 2) ? 4 : m);
    int hi = lo + width > m ? m : lo + width;
    if (align && tt_rng_below(rng, 2) && (hi + 3) / 4 * 4 <= m)
        lo = lo / 4 * 4, hi = (hi + 3) / 4 * 4;
    out[0] = lo, out[1] = hi;
}

/* A random case; mode 1 (shared): the 27-point class form with the user's x the slowest
 * dimension (the CPU's sweep that shares each plane's sums), its grids up to 67 points; mode 2:
 * star:R, R = 1 .. 4, in the documented tap order with random weights, the user's z mostly the
 * fastest dimension (the CPU's star spans), rows up to 131 points; mode 3: box:R, R = 1 .. 4,
 * in the documented tap order with random weights, the user's x mostly the slowest dimension and
 * z the fastest (the CPU's box spans), rows up to 131 points. */
static void make_case(tt_rng *rng, int gpu, int i, int mode, scase *c)
{
    memset(c, 0, sizeof *c);
    c->dbl = tt_rng_below(rng, 2);
    int shared = mode == 1;
    int kind = mode ? (int[]){0, 1, 4, 5}[mode] : i % 4; /* 7pt, 27pt, star, box; star:R, box:R */
    double bw[TIDE_SWEEP_MAX_TAPS]; /* star:R's own weights (the case's are random) */
    if (kind >= 4) {
        c->radius = 1 + tt_rng_below(rng, 4);
        c->ntaps = tide_ref_stencil_binomial_taps(kind == 4 ? TIDE_STENCIL_STAR : TIDE_STENCIL_BOX,
                                                  c->radius, c->off, bw);
        snprintf(c->taps, sizeof c->taps, "%s:%d", kind == 4 ? "star" : "box", c->radius);
    } else if (kind < 2) {
        tide_stencil_shape sh = kind == 0 ? TIDE_STENCIL_7PT : TIDE_STENCIL_27PT;
        c->ntaps = tide_ref_stencil_taps(sh, NULL, c->off, c->w);
        c->radius = 1;
        snprintf(c->taps, sizeof c->taps, "%s", kind == 0 ? "7pt" : "27pt");
    } else { /* one tap at distance radius: the reference's radius too */
        c->radius = 1 + tt_rng_below(rng, 3);
        c->ntaps = kind == 2 ? tt_star_taps(rng, c->radius, c->off)
                             : tt_box_taps(rng, c->radius, 0, c->off);
        snprintf(c->taps, sizeof c->taps, "%s r%d", kind == 2 ? "star" : "box", c->radius);
    }
    c->shape = kind == 0 ? TIDE_STENCIL_7PT : kind == 1 ? TIDE_STENCIL_27PT
             : kind == 3 || kind == 5 ? TIDE_STENCIL_BOX : TIDE_STENCIL_STAR;
    tt_stencil_weights(rng, c->ntaps, c->w);
    c->classes = kind == 1 && (shared || tt_rng_below(rng, 2));
    if (c->classes) { /* one random weight per class: the tap's count of nonzero offsets */
        tt_stencil_weights(rng, 4, c->cw);
        for (int t = 0; t < 27; t++)
            c->w[t] = c->cw[!!c->off[t][0] + !!c->off[t][1] + !!c->off[t][2]] / 6;
        for (int k = 0; k < 4; k++)
            c->cw[k] /= 6;
        snprintf(c->taps, sizeof c->taps, "27pt classes");
    }
    tt_perm3(tt_rng_below(rng, 6), c->ord);
    if (shared) /* x first, y and z in either order */
        c->ord[0] = 0, c->ord[1] = 1 + tt_rng_below(rng, 2), c->ord[2] = 3 - c->ord[1];
    if (kind == 4 && tt_rng_below(rng, 4)) /* z fastest, x and y in either order */
        c->ord[2] = 2, c->ord[0] = tt_rng_below(rng, 2), c->ord[1] = 1 - c->ord[0];
    if (kind == 5 && tt_rng_below(rng, 4)) /* x slowest, z fastest */
        c->ord[0] = 0, c->ord[1] = 1, c->ord[2] = 2;
    /* small grids on the CPU; on the GPU some wider than a tile, the first dimension deep
     * enough for several chunks */
    int top = gpu ? 16 : shared ? 13 : 11;
    for (int d = 0; d < 3; d++) {
        int m;
        do
            m = sizes[tt_rng_below(rng, kind >= 4 && d == 2 ? 16 : kind == 5 ? 8 : top)];
        while (m < 2 * c->radius + 1);
        c->n[d] = m;
    }
    int wide = gpu && i % 3 == 0; /* planes of several tiles (the reference's time bounds
                                   * n[0]), rows of a multiple of 4 points */
    if (wide)
        c->n[0] = c->n[0] > 37 ? 37 : c->n[0], c->n[1] = 131,
        c->n[2] = 128 + 4 * tt_rng_below(rng, 2);
    for (int d = 0; d < 3; d++)
        c->periodic[d] = tt_rng_below(rng, 2);
    c->source = tt_rng_below(rng, 3) == 0;
    c->beside = tt_rng_below(rng, 2);
    c->cache = tt_rng_below(rng, 2) ? 0 : 1 + tt_rng_below(rng, 1 << 14);
    c->stream_dst = tt_rng_below(rng, 3) - 1;
    for (int d = 0; d < 3; d++)
        make_window(rng, c->n[d], wide && d == 2, c->out[d]);
    /* the whole array half the time (the default pitches), else a view with 0 to 5 points
     * around it along each dimension (wide rows: multiples of 4) */
    for (int d = 0; d < 3; d++) {
        int view = tt_rng_below(rng, 2), q = wide && d == 2 ? 4 : 1;
        c->at[d] = view ? q * tt_rng_below(rng, 6 / q + 1) : 0;
        c->big[d] = c->n[d] + c->at[d] + (view ? q * tt_rng_below(rng, 6 / q + 1) : 0);
    }
}

/* Dense copy of the view of c out of array a (laid out as c->big). */
static void view_of(const scase *c, size_t es, const unsigned char *a, unsigned char *v)
{
    for (int z = 0; z < c->n[0]; z++)
        for (int y = 0; y < c->n[1]; y++) {
            size_t from = (((size_t)(c->at[0] + z) * c->big[1] + c->at[1] + y) * c->big[2] +
                           c->at[2]) * es;
            size_t to = (((size_t)z * c->n[1] + y) * c->n[2]) * es;
            memcpy(v + to, a + from, (size_t)c->n[2] * es);
        }
}

/* The view v of c (storage order, extents c->n) into u in C order of the user's dimensions
 * (extents nu), or back (back 1). */
static void turn(const scase *c, size_t es, const int nu[3], unsigned char *v, unsigned char *u,
                 int back)
{
    int q[3], p[3];
    size_t i = 0;
    for (q[0] = 0; q[0] < c->n[0]; q[0]++)
        for (q[1] = 0; q[1] < c->n[1]; q[1]++)
            for (q[2] = 0; q[2] < c->n[2]; q[2]++, i++) {
                for (int k = 0; k < 3; k++)
                    p[c->ord[k]] = q[k];
                size_t j = ((size_t)p[0] * nu[1] + p[1]) * nu[2] + p[2];
                if (back)
                    memcpy(v + i * es, u + j * es, es);
                else
                    memcpy(u + j * es, v + i * es, es);
            }
}

/* k steps of the naive reference on the view v (storage order), with the source's view vsrc:
 * on both turned to the user's C order, the result turned back. */
static int reference(const scase *c, size_t es, unsigned char *v, unsigned char *vsrc, int k)
{
    int nu[3];
    tide_bc bc[3];
    for (int d = 0; d < 3; d++) {
        nu[c->ord[d]] = c->n[d];
        bc[c->ord[d]] = c->periodic[d] ? TIDE_BC_PERIODIC : TIDE_BC_DIRICHLET;
    }
    size_t count = (size_t)c->n[0] * c->n[1] * c->n[2];
    unsigned char *u = malloc(count * es), *us = vsrc ? malloc(count * es) : NULL;
    turn(c, es, nu, v, u, 0);
    if (us)
        turn(c, es, nu, vsrc, us, 0);
    int rs = tide_ref_stencil(nu, c->dbl, c->shape, c->ntaps, (const int(*)[3])c->off, c->w,
                              bc, us, u, k);
    turn(c, es, nu, v, u, 1);
    free(u), free(us);
    return rs;
}

/* One case on backend be (gpu: buffers in device memory, moved on stream). */
static void run_case(const tide_backend_ops *be, int gpu, void *stream, int threads,
                     const scase *c, tt_rng *rng, int index)
{
    size_t es = c->dbl ? sizeof(double) : sizeof(float);
    size_t plane = (size_t)c->big[1] * c->big[2], count = plane * c->big[0];
    size_t vcount = (size_t)c->n[0] * c->n[1] * c->n[2];
    int lo[3], hi[3];
    for (int d = 0; d < 3; d++) {
        lo[d] = c->out[d][1] ? c->out[d][0] : 0;
        hi[d] = c->out[d][1] ? c->out[d][1] : c->n[d];
    }
    /* dst's buffer: the window's planes of the array and a plane of guard on each side */
    size_t guard = plane, dstn = (size_t)(hi[0] - lo[0]) * plane + 2 * guard;
    size_t origin = guard + (size_t)c->at[1] * c->big[2] + c->at[2]; /* dst: the view's point
                                                                       * (lo[0], 0, 0) */
    char name[260];
    snprintf(name, sizeof name, "case %d: %s %s order %s %dx%dx%d at (%d,%d,%d) of %dx%dx%d "
             "periodic %d%d%d%s, %d steps, window [%d,%d)x[%d,%d)x[%d,%d), beside %d, cache %zu, "
             "stream %d", index, c->taps, c->dbl ? "double" : "float", tt_order_name(c->ord),
             c->n[0], c->n[1], c->n[2], c->at[0], c->at[1], c->at[2], c->big[0], c->big[1],
             c->big[2], c->periodic[0], c->periodic[1], c->periodic[2],
             c->source ? ", source" : "", c->k, lo[0], hi[0], lo[1], hi[1], lo[2], hi[2],
             c->beside, c->cache, c->stream_dst);

    unsigned char *u = malloc(count * es), *want = malloc(vcount * es), *src = NULL;
    unsigned char *vsrc = NULL, *got = malloc(dstn * es);
    if (c->source)
        src = malloc(count * es), vsrc = malloc(vcount * es);
    tt_fill_random(u, count, c->dbl, 1.0, rng);
    if (src)
        tt_fill_random(src, count, c->dbl, 0.01, rng);
    view_of(c, es, u, want);
    if (src)
        view_of(c, es, src, vsrc);
    int rs = reference(c, es, want, vsrc, c->k);
    tt_local(&tally, rs == 0, "%s: the reference failed (%d)", name, rs);
    memset(got, 0xA5, dstn * es);

    tide_env env = {0};
    env.be = be, env.threads = threads, env.stream = stream;
    tide_sweep s = {0};
    int soff[TIDE_SWEEP_MAX_TAPS][3]; /* the taps in storage order */
    for (int i = 0; i < c->ntaps; i++)
        for (int d = 0; d < 3; d++)
            soff[i][d] = c->off[i][c->ord[d]];
    s.dbl = c->dbl, s.radius = c->radius, s.ntaps = c->ntaps, s.off = (const int(*)[3])soff;
    s.w = c->w;
    s.classes = c->classes;
    memcpy(s.cw, c->cw, sizeof s.cw);
    for (int d = 0; d < 3; d++) {
        s.axis[c->ord[d]] = d;
        s.n[d] = c->n[d], s.periodic[d] = c->periodic[d];
        s.out[d][0] = c->out[d][0], s.out[d][1] = c->out[d][1];
    }
    if (c->big[1] != c->n[1] || c->big[2] != c->n[2]) /* else the default pitches */
        s.pitch[0] = (long long)plane, s.pitch[1] = c->big[2];
    s.beside = c->beside;
    s.cache = c->cache;
    s.stream_dst = c->stream_dst;
    size_t view0 = ((size_t)c->at[0] * c->big[1] + c->at[1]) * c->big[2] + c->at[2];
    void *du = u, *dsrc = src, *ddst = got;
#if !TIDE_HAVE_CUDA
    (void)gpu;
#else
    cudaStream_t cs = (cudaStream_t)stream;
    if (gpu) {
        int e = cudaMalloc(&du, count * es) | cudaMalloc(&ddst, dstn * es);
        if (src)
            e |= cudaMalloc(&dsrc, count * es);
        tt_local(&tally, e == 0, "%s: cudaMalloc", name);
        cudaMemcpyAsync(du, u, count * es, cudaMemcpyHostToDevice, cs);
        cudaMemcpyAsync(ddst, got, dstn * es, cudaMemcpyHostToDevice, cs);
        if (src)
            cudaMemcpyAsync(dsrc, src, count * es, cudaMemcpyHostToDevice, cs);
    }
#endif
    s.source = dsrc ? (char *)dsrc + view0 * es : NULL;
    char err[256] = "";
    int st = be->sweep_create(&env, &s, c->k, err, sizeof err);
    if (st == TIDE_ERR_ARGUMENT && c->k > 1) {
        /* more steps than this backend fuses at this radius: its most */
        be->sweep_destroy(&env, &s);
        s.state = NULL;
        st = be->sweep_create(&env, &s, 0, err, sizeof err);
        if (!st)
            snprintf(name + strlen(name), sizeof name - strlen(name), " (%d fused)", s.max_fuse);
    }
    tt_local(&tally, st == 0, "%s: sweep_create: %s", name, err);
    int k = st ? 0 : c->k < s.max_fuse ? c->k : s.max_fuse;
    if (!st && k < c->k) { /* the reference for the steps the sweep does */
        view_of(c, es, u, want);
        reference(c, es, want, vsrc, k);
    }
    if (!st)
        st = be->sweep(&env, &s, (char *)du + view0 * es, (char *)ddst + origin * es, k);
    tt_local(&tally, st == 0, "%s: sweep failed (%d)", name, st);
#if TIDE_HAVE_CUDA
    if (gpu) {
        cudaMemcpyAsync(got, ddst, dstn * es, cudaMemcpyDeviceToHost, cs);
        tt_local(&tally, cudaStreamSynchronize(cs) == cudaSuccess, "%s: %s", name,
                 cudaGetErrorString(cudaGetLastError()));
        cudaFree(du), cudaFree(ddst), cudaFree(dsrc);
    }
#endif
    if (s.state)
        be->sweep_destroy(&env, &s);
    if (!st) { /* every element of dst's buffer: a window point's result, or the poison */
        size_t bad = 0, spoilt = 0, first = 0;
        for (size_t e = 0; e < dstn; e++) {
            long long rel = (long long)e - (long long)guard;
            long long a = rel >= 0 ? rel / (long long)plane + lo[0] : -1;
            long long r = rel >= 0 ? rel % (long long)plane : 0;
            long long b = r / c->big[2] - c->at[1], x = r % c->big[2] - c->at[2];
            int in = rel >= 0 && a < hi[0] && b >= lo[1] && b < hi[1] && x >= lo[2] &&
                     x < hi[2];
            const unsigned char *g = got + e * es;
            if (in) {
                size_t v = ((size_t)a * c->n[1] + (size_t)b) * c->n[2] + (size_t)x;
                if (memcmp(g, want + v * es, es) && !bad++)
                    first = v;
            } else {
                for (size_t i = 0; i < es; i++)
                    spoilt += g[i] != 0xA5;
            }
        }
        tt_local(&tally, bad == 0, "%s: %zu points differ from the reference, the first "
                 "point %zu of the view", name, bad, first);
        tt_local(&tally, spoilt == 0, "%s: %zu bytes written outside the window", name,
                 spoilt);
    }
    free(u), free(want), free(got), free(src), free(vsrc);
}

/* A fixed case for the GPU's fused kernels' tiling: the 7-point star or the 27-point box in
 * its class form (kind 0 or 1), C order, the whole 37 x 131 x 132 grid written, k steps fused:
 * 132 columns are a wide tile and a strip of narrow ones, and the star's equal shares of the
 * tiles' planes (37 a tile, an odd count) run across tiles. */
static void relay_case(tt_rng *rng, int gpu, int kind, int dbl, int k, scase *c)
{
    do
        make_case(rng, gpu, kind, 0, c);
    while (kind == 1 && !c->classes);
    static const int n[3] = {37, 131, 132};
    for (int d = 0; d < 3; d++) {
        c->n[d] = c->big[d] = n[d], c->at[d] = 0, c->ord[d] = d;
        c->out[d][0] = c->out[d][1] = 0;
    }
    c->dbl = dbl, c->k = k, c->beside = 0, c->source = 0, c->cache = 0;
}

/* A fixed case for the CPU's tall tiles: the 7-point star, 8 steps fused, on rows of 1024
 * points, whose rings outgrow any core's L2 at the least tile: with the machine's caches
 * (cache 0) a tile on 2 threads is a thread's share of the 130 rows, 65, where the L3 holds
 * their rings (27 MiB or more; on 3 threads the share is under the least tile, 56 rows, which
 * the sweep then balances to 44). */
static void tall_case(tt_rng *rng, int gpu, scase *c)
{
    relay_case(rng, gpu, 0, 0, 8, c);
    c->n[0] = c->big[0] = 12, c->n[1] = c->big[1] = 130, c->n[2] = c->big[2] = 1024;
}

int main(void)
{
    const char *be_name = getenv("TIDE_TEST_BACKEND");
    int gpu = be_name && !strcmp(be_name, "cuda");
    const tide_backend_ops *be = &tide_backend_cpu;
    void *stream = NULL;
    if (gpu) {
        if (!tt_gpus_or_skip())
            return 77;
#if TIDE_HAVE_CUDA
        be = tide_backend_cuda();
        cudaStream_t cs;
        if (cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking) != cudaSuccess) {
            printf("FAIL: cudaStreamCreate\n");
            return 1;
        }
        stream = cs;
#endif
    }
    printf("test_sweep: backend %s: sweeps on views writing windows against the reference\n",
           be->name);
    tt_rng rng;
    tt_rng_seed(&rng, 20261126);
    int cases = gpu ? 160 : 400;
    for (int i = 0; i < cases; i++) {
        scase c;
        make_case(&rng, gpu, i, 0, &c);
        c.k = 1 + tt_rng_below(&rng, 6);
        run_case(be, gpu, stream, 1 + tt_rng_below(&rng, 3), &c, &rng, i);
    }
    for (int i = 0; i < 150; i++) { /* the class form swept along x, up to 8 steps fused */
        scase c;
        make_case(&rng, gpu, cases + i, 1, &c);
        c.k = 1 + tt_rng_below(&rng, 8);
        run_case(be, gpu, stream, 1 + tt_rng_below(&rng, 3), &c, &rng, cases + i);
    }
    for (int i = 0; i < 120; i++) { /* star:R, up to 6 steps fused */
        scase c;
        make_case(&rng, gpu, cases + 150 + i, 2, &c);
        c.k = 1 + tt_rng_below(&rng, 6);
        run_case(be, gpu, stream, 1 + tt_rng_below(&rng, 3), &c, &rng, cases + 150 + i);
    }
    for (int i = 0; i < 60; i++) { /* box:R, up to 4 steps fused */
        scase c;
        make_case(&rng, gpu, cases + 270 + i, 3, &c);
        c.k = 1 + tt_rng_below(&rng, 4);
        run_case(be, gpu, stream, 1 + tt_rng_below(&rng, 3), &c, &rng, cases + 270 + i);
    }
    for (int i = 0; i < 8; i++) { /* the GPU's relay tiling, each shape and precision */
        scase c;
        const int kind = i / 4, dbl = i / 2 % 2, k = kind ? 2 + i % 2 : 3 + i % 2;
        relay_case(&rng, gpu, kind, dbl, k, &c);
        run_case(be, gpu, stream, 2, &c, &rng, cases + 330 + i);
    }
    for (int i = 0; i < 2; i++) { /* the CPU's tall tiles, on 2 and 3 threads */
        scase c;
        tall_case(&rng, gpu, &c);
        run_case(be, gpu, stream, 2 + i, &c, &rng, cases + 338 + i);
    }
#if TIDE_HAVE_CUDA
    if (stream)
        cudaStreamDestroy((cudaStream_t)stream);
#endif
    return tt_finish_local(&tally, "test_sweep", "checks");
}
