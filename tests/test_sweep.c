/*
 * test_sweep.c: the backends' stencil sweeps (backend.h: tide_sweep) writing part of the grid.
 * A sweep whose out names planes [lo, hi) along n[0] writes those planes alone into a dst
 * holding them alone, and a GPU sweep told that others run beside it (beside) plans its chunks
 * for its share of the SMs: the results must not change. Each case runs k steps of a random
 * stencil (the built-in 7- and 27-point taps, whose GPU kernels are the fast ones, and random
 * star and box taps of radius 1 to 3, tests/common.c) on a random grid of odd and prime sizes with random
 * boundaries and source, over random planes, and compares them bitwise with k steps of the
 * naive reference (apps/reference.c) on the whole grid; the planes of dst's buffer before and
 * after the written ones must keep their poison.
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

#include "backend.h"
#include "common.h"
#include "reference.h"
#if TIDE_HAVE_CUDA
#include <cuda_runtime.h>
#endif

static tt_tally tally;

typedef struct {
    int n[3], dbl, ntaps, radius, periodic[3], k, out[2], beside, source;
    int off[TIDE_SWEEP_MAX_TAPS][3];
    double w[TIDE_SWEEP_MAX_TAPS];
    char taps[32];
} scase;

static const int sizes[] = {3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 64, 67, 97, 128, 131};

static void make_case(tt_rng *rng, int gpu, int i, scase *c)
{
    memset(c, 0, sizeof *c);
    c->dbl = tt_rng_below(rng, 2);
    int kind = i % 4; /* 7-point, 27-point, star, box */
    if (kind < 2) {
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
    tt_stencil_weights(rng, c->ntaps, c->w);
    /* small grids on the CPU; on the GPU some wider than a tile, the first dimension deep
     * enough for several chunks */
    int top = gpu ? 16 : 11;
    for (int d = 0; d < 3; d++) {
        int m;
        do
            m = sizes[tt_rng_below(rng, top)];
        while (m < 2 * c->radius + 1);
        c->n[d] = m;
    }
    if (gpu && i % 3 == 0) /* planes of several tiles (the reference's time bounds n[0]) */
        c->n[0] = c->n[0] > 37 ? 37 : c->n[0], c->n[1] = 131,
        c->n[2] = 128 + 4 * tt_rng_below(rng, 2);
    for (int d = 0; d < 3; d++)
        c->periodic[d] = tt_rng_below(rng, 2);
    c->source = tt_rng_below(rng, 3) == 0;
    c->beside = tt_rng_below(rng, 2);
    /* the whole grid now and then, else random planes (often a thin band) */
    if (i % 5 == 0) {
        c->out[0] = c->out[1] = 0;
    } else {
        int lo = tt_rng_below(rng, c->n[0]);
        int width = 1 + tt_rng_below(rng, tt_rng_below(rng, 2) ? 4 : c->n[0]);
        c->out[0] = lo;
        c->out[1] = lo + width > c->n[0] ? c->n[0] : lo + width;
    }
}

/* One case on backend be (gpu: buffers in device memory, moved on stream). */
static void run_case(const tide_backend_ops *be, int gpu, void *stream, int threads,
                     const scase *c, tt_rng *rng, int index)
{
    size_t es = c->dbl ? sizeof(double) : sizeof(float);
    size_t plane = (size_t)c->n[1] * c->n[2], count = plane * c->n[0];
    int lo = c->out[1] ? c->out[0] : 0, hi = c->out[1] ? c->out[1] : c->n[0];
    size_t guard = plane, outn = (size_t)(hi - lo) * plane, dstn = outn + 2 * guard;
    char name[200];
    snprintf(name, sizeof name, "case %d: %s %s %dx%dx%d periodic %d%d%d%s, %d steps, planes "
             "[%d, %d), beside %d", index, c->taps, c->dbl ? "double" : "float", c->n[0],
             c->n[1], c->n[2], c->periodic[0], c->periodic[1], c->periodic[2],
             c->source ? ", source" : "", c->k, lo, hi, c->beside);

    unsigned char *u = malloc(count * es), *want = malloc(count * es), *src = NULL;
    unsigned char *got = malloc(dstn * es);
    if (c->source)
        src = malloc(count * es);
    tt_fill_random(u, count, c->dbl, 1.0, rng);
    if (src)
        tt_fill_random(src, count, c->dbl, 0.01, rng);
    memcpy(want, u, count * es);
    tide_bc bc[3];
    for (int d = 0; d < 3; d++)
        bc[d] = c->periodic[d] ? TIDE_BC_PERIODIC : TIDE_BC_DIRICHLET;
    int rs = tide_ref_stencil(c->n, c->dbl, c->ntaps, (const int(*)[3])c->off, c->w, bc, src,
                              want, c->k);
    tt_local(&tally, rs == 0, "%s: the reference failed (%d)", name, rs);
    memset(got, 0xA5, dstn * es);

    tide_env env = {0};
    env.be = be, env.threads = threads, env.stream = stream;
    tide_sweep s = {0};
    s.dbl = c->dbl, s.radius = c->radius, s.ntaps = c->ntaps, s.off = (const int(*)[3])c->off;
    s.w = c->w;
    for (int d = 0; d < 3; d++)
        s.n[d] = c->n[d], s.periodic[d] = c->periodic[d];
    s.out[0] = c->out[0], s.out[1] = c->out[1], s.beside = c->beside;
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
    s.source = dsrc;
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
        memcpy(want, u, count * es);
        tide_ref_stencil(c->n, c->dbl, c->ntaps, (const int(*)[3])c->off, c->w, bc, src, want, k);
    }
    if (!st)
        st = be->sweep(&env, &s, du, (char *)ddst + guard * es, k);
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
    if (!st) {
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < outn * es; i++)
            if (got[guard * es + i] != want[(size_t)lo * plane * es + i] && !bad++)
                first = i / es;
        tt_local(&tally, bad == 0, "%s: %zu bytes differ from the reference, the first in "
                 "point %zu of the planes written", name, bad, first);
        size_t spoilt = 0;
        for (size_t i = 0; i < guard * es; i++)
            spoilt += (got[i] != 0xA5) + (got[(guard + outn) * es + i] != 0xA5);
        tt_local(&tally, spoilt == 0, "%s: %zu bytes written outside planes [%d, %d)", name,
                 spoilt, lo, hi);
    }
    free(u), free(want), free(got), free(src);
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
    printf("test_sweep: backend %s: sweeps writing part of the grid against the reference\n",
           be->name);
    tt_rng rng;
    tt_rng_seed(&rng, 20261126);
    int cases = gpu ? 160 : 400;
    for (int i = 0; i < cases; i++) {
        scase c;
        make_case(&rng, gpu, i, &c);
        c.k = 1 + tt_rng_below(&rng, 6);
        run_case(be, gpu, stream, 1 + tt_rng_below(&rng, 3), &c, &rng, i);
    }
#if TIDE_HAVE_CUDA
    if (stream)
        cudaStreamDestroy((cudaStream_t)stream);
#endif
    printf("test_sweep: %d checks, %d failed\n", tally.checks, tally.failed);
    return tally.failed ? 1 : 0;
}
