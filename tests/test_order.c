/*
 * test_order.c: a transform on a CUDA context is ordered after the work the caller queued on
 * the legacy default stream before the call, and complete when it returns (tide.h, "GPU
 * execution"). The caller moves data with plain CUDA calls only, never tide_copy:
 *   a) device arrays: a pageable cudaMemcpy of the input right before the call (it may return
 *      before its data has landed), and of the result right after;
 *   b) device arrays: the input written by a device-to-device copy queued behind a host
 *      function that sleeps, so that the copy is still pending when the call starts (forward,
 *      then backward fed the same way with the forward result);
 *   c) device arrays: a device-to-host copy of the previous output queued behind the same
 *      delay; the next transform into that output must not overwrite it before it was read;
 *   d) host arrays: a pinned input written by a device-to-host copy still queued when the call
 *      starts, for plans on the GPU in card, streamed through a 64 KiB budget, and on the CPU;
 *   e) the caller's own non-blocking stream (the plan's stream option): the input copied on it
 *      behind the delay; complete on return (read back with a plain cudaMemcpy), and
 *      asynchronous (read back by a copy queued on the same stream after the call).
 * Random boxes and storage orders (device and in-card cases), c2c and r2c, float and double,
 * odd and prime sizes, 1 to 6 ranks sharing the GPUs. Every result is checked against the
 * serial FFTW transform of the gathered array (apps/reference.c). Exits 77 (SKIP) without a
 * GPU.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tide_config.h"

#if !TIDE_HAVE_CUDA
int main(void)
{
    printf("SKIP: this build has no CUDA (gpu/ not compiled)\n");
    return 77;
}
#else
#include <cuda_runtime.h>
#include "common.h"
#include "reference.h"
#include "tide.h"

#define TOL_DOUBLE 1e-12
#define TOL_FLOAT 1e-5
enum { DELAY_MS = 20 };

#define CU TT_CU

typedef struct {
    int n[3];
    tide_fft_type type;
    tide_precision prec;
    int random_boxes; /* else NULL boxes (the plan's slabs) */
    int inplace;
    unsigned seed;
} ocase;

typedef struct {
    tide_fft_plan *plan;
    tide_box ib, ob;
    size_t in_bytes, out_bytes, big;
    double tol;
} setup;

/* Random boxes: the sizes that showed the race, and more odd, prime and even ones. Streamed:
 * planes small enough for three pipeline slots in a 64 KiB budget, at least 6 x-planes and
 * y-rows (slabs for 6 ranks). Both lists have 8 entries. */
static const int sizes[][3] = {{23, 20, 5}, {20, 11, 25}, {31, 8, 32}, {17, 19, 23},
                               {12, 18, 10}, {7, 11, 13}, {45, 36, 50}, {6, 6, 7}};
static const int streamed_sizes[][3] = {{7, 11, 13}, {9, 17, 5}, {31, 6, 20}, {24, 8, 33},
                                        {17, 19, 23}, {12, 12, 12}, {6, 7, 9}, {13, 6, 21}};
enum { NSIZES = 8 };

static void case_str(const ocase *c, char *buf, size_t len)
{
    snprintf(buf, len, "%dx%dx%d %s %s %s%s seed %u", c->n[0], c->n[1], c->n[2],
             c->type == TIDE_R2C ? "r2c" : "c2c", c->prec == TIDE_FLOAT ? "float" : "double",
             c->random_boxes ? "random boxes" : "slabs", c->inplace ? " in place" : "",
             c->seed);
}

/* This rank's box of a random tiling of g with random storage orders (the same on every rank
 * for the same seed). */
static tide_box random_box(const int g[3], int rank, int nranks, unsigned seed)
{
    tide_box *all = malloc((size_t)nranks * sizeof *all), b;
    tt_rng rng;
    tt_rng_seed(&rng, seed);
    tt_tiling_random(g, nranks, &rng, all);
    tt_random_orders(nranks, &rng, all);
    b = all[rank];
    free(all);
    return b;
}

static int make_setup(tide_context *ctx, const ocase *c, tide_location loc, tide_backend be,
                      void *stream, int async, setup *s)
{
    int rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    int cn[3] = {c->n[0], c->n[1], c->type == TIDE_R2C ? c->n[2] / 2 + 1 : c->n[2]};
    tide_box ib = random_box(c->n, rank, P, c->seed), ob = random_box(cn, rank, P, c->seed + 1);
    tide_fft_options o;
    tide_fft_options_init(&o);
    o.type = c->type;
    o.precision = c->prec;
    o.location = loc;
    o.backend = be;
    o.stream = stream;
    o.async = async;
    memset(s, 0, sizeof *s);
    int st = tide_fft_plan_create(ctx, c->n, c->random_boxes ? &ib : NULL,
                                  c->random_boxes ? &ob : NULL, &o, &s->plan);
    if (st)
        return st;
    tide_fft_info info;
    tide_fft_plan_boxes(s->plan, &s->ib, &s->ob);
    tide_fft_plan_info(s->plan, &info);
    s->in_bytes = info.in_bytes;
    s->out_bytes = info.out_bytes;
    s->big = info.inplace_bytes;
    s->tol = c->prec == TIDE_FLOAT ? TOL_FLOAT : TOL_DOUBLE;
    return 0;
}

/* Compares a result (dbox layout on this rank) with the oracle's transform of src. */
static void check(tt_tally *t, const char *what, const char *desc, const ocase *c,
                  const setup *s, int dir, const void *src, const void *dst)
{
    tide_ref_error e = {0, 0, 0};
    const tide_box *sb = dir < 0 ? &s->ib : &s->ob, *db = dir < 0 ? &s->ob : &s->ib;
    int st = tide_ref_check(MPI_COMM_WORLD, c->n, c->type, c->prec, 1, dir, 1.0, sb, src, db,
                            dst, &e);
    tt_check(t, MPI_COMM_WORLD, st == 0 && e.rel_l2 <= s->tol,
             "%s: %s: %s vs oracle: rel_l2 %.3g (tol %.0e), max_abs %.3g", desc, what,
             dir < 0 ? "forward" : "backward", e.rel_l2, s->tol, e.max_abs);
}

static void *host(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        MPI_Abort(MPI_COMM_WORLD, 2);
    return p;
}

static void *dev(size_t bytes)
{
    void *p = NULL;
    CU(cudaMalloc(&p, bytes ? bytes : 1));
    return p;
}

/* dst (poisoned first: NaN wherever a transform reads too early) gets bytes from device
 * array src by a copy queued on stream behind a delay, still pending when this returns. */
static void queue_input(void *dst, size_t poison_bytes, const void *src, size_t bytes,
                        cudaStream_t stream)
{
    CU(cudaMemset(dst, 0xff, poison_bytes));
    CU(cudaDeviceSynchronize());
    CU(cudaLaunchHostFunc(stream, tt_sleep_on_stream, (void *)(intptr_t)DELAY_MS));
    CU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
}

/* A transform through Tide whose status is a check. */
static int transform(tt_tally *t, tide_context *ctx, const char *what, const char *desc,
                     const setup *s, int dir, const void *in, void *out)
{
    int st = dir < 0 ? tide_fft_forward(s->plan, in, out) : tide_fft_backward(s->plan, in, out);
    return tt_check(t, MPI_COMM_WORLD, st == 0, "%s: %s: %s", desc, what, tide_last_error(ctx));
}

/* Patterns a, b and c on device arrays. */
static void device_case(tt_tally *t, tide_context *ctx, const ocase *c)
{
    char desc[160];
    case_str(c, desc, sizeof desc);
    setup s;
    if (!tt_check(t, MPI_COMM_WORLD, make_setup(ctx, c, TIDE_LOCATION_DEVICE,
                                                TIDE_BACKEND_CUDA, NULL, 0, &s) == 0,
                  "%s: plan: %s", desc, tide_last_error(ctx)))
        return;
    int r2c = c->type == TIDE_R2C;
    size_t ib = s.in_bytes, ob = s.out_bytes;
    unsigned char *x = host(ib), *x2 = host(ib), *y = host(ob), *got = host(s.big);
    unsigned char *seen = NULL; /* pinned: the target of an asynchronous copy */
    CU(cudaMallocHost((void **)&seen, ob ? ob : 1));
    tide_ref_fill(x, &s.ib, 1, !r2c, c->prec, c->n, c->seed);
    tide_ref_fill(x2, &s.ib, 1, !r2c, c->prec, c->n, c->seed + 7);
    void *din = dev(s.big), *dout = c->inplace ? din : dev(ob), *dsrc = dev(s.big);

    /* a) pageable copies around the call */
    CU(cudaMemcpy(din, x, ib, cudaMemcpyHostToDevice));
    if (transform(t, ctx, "a) pageable copy", desc, &s, -1, din, dout)) {
        CU(cudaMemcpy(got, dout, ob, cudaMemcpyDeviceToHost));
        check(t, "a) pageable copy", desc, c, &s, -1, x, got);
    }
    /* b) the input copied device to device behind a delay, still queued at the call */
    CU(cudaMemcpy(dsrc, x, ib, cudaMemcpyHostToDevice));
    queue_input(din, s.big, dsrc, ib, 0);
    if (transform(t, ctx, "b) queued copy", desc, &s, -1, din, dout)) {
        CU(cudaMemcpy(got, dout, ob, cudaMemcpyDeviceToHost));
        check(t, "b) queued copy", desc, c, &s, -1, x, got);
        memcpy(y, got, ob); /* the forward result, the backward input */
        CU(cudaMemcpy(dsrc, y, ob, cudaMemcpyHostToDevice));
        queue_input(dout, ob, dsrc, ob, 0);
        if (transform(t, ctx, "b) queued copy", desc, &s, +1, dout, din)) {
            CU(cudaMemcpy(got, din, ib, cudaMemcpyDeviceToHost));
            check(t, "b) queued copy", desc, c, &s, +1, y, got);
        }
    }
    /* c) the previous output read by a queued copy while the next transform writes it (out
     * of place: in place, writing the next input would overwrite it first) */
    CU(cudaMemcpy(din, x, ib, cudaMemcpyHostToDevice));
    if (!c->inplace && transform(t, ctx, "c) queued read", desc, &s, -1, din, dout)) {
        CU(cudaMemcpy(y, dout, ob, cudaMemcpyDeviceToHost));
        CU(cudaMemcpy(din, x2, ib, cudaMemcpyHostToDevice));
        memset(seen, 0, ob);
        CU(cudaLaunchHostFunc(0, tt_sleep_on_stream, (void *)(intptr_t)DELAY_MS));
        CU(cudaMemcpyAsync(seen, dout, ob, cudaMemcpyDeviceToHost, 0));
        if (transform(t, ctx, "c) queued read", desc, &s, -1, din, dout)) {
            CU(cudaDeviceSynchronize());
            tt_check(t, MPI_COMM_WORLD, memcmp(seen, y, ob) == 0,
                     "%s: c) the transform overwrote its output before the caller's queued "
                     "copy read it", desc);
            CU(cudaMemcpy(got, dout, ob, cudaMemcpyDeviceToHost));
            check(t, "c) queued read", desc, c, &s, -1, x2, got);
        }
    }
    tide_fft_plan_destroy(s.plan);
    CU(cudaFree(din));
    if (!c->inplace)
        CU(cudaFree(dout));
    CU(cudaFree(dsrc));
    CU(cudaFreeHost(seen));
    free(x);
    free(x2);
    free(y);
    free(got);
}

/* Pattern d: host arrays, the input written by a queued device-to-host copy. */
static void host_case(tt_tally *t, tide_context *ctx, const ocase *c, tide_backend be,
                      const char *what)
{
    char desc[200];
    case_str(c, desc, sizeof desc);
    setup s;
    if (!tt_check(t, MPI_COMM_WORLD,
                  make_setup(ctx, c, TIDE_LOCATION_HOST, be, NULL, 0, &s) == 0,
                  "%s: %s: plan: %s", desc, what, tide_last_error(ctx)))
        return;
    int r2c = c->type == TIDE_R2C;
    size_t ib = s.in_bytes, ob = s.out_bytes;
    unsigned char *x = host(ib), *got = host(ob), *pin = NULL;
    CU(cudaMallocHost((void **)&pin, s.big ? s.big : 1));
    tide_ref_fill(x, &s.ib, 1, !r2c, c->prec, c->n, c->seed);
    void *dsrc = dev(ib);
    CU(cudaMemcpy(dsrc, x, ib, cudaMemcpyHostToDevice));
    memset(pin, 0xff, s.big);
    CU(cudaLaunchHostFunc(0, tt_sleep_on_stream, (void *)(intptr_t)DELAY_MS));
    CU(cudaMemcpyAsync(pin, dsrc, ib, cudaMemcpyDeviceToHost, 0));
    void *out = c->inplace ? (void *)pin : (void *)got;
    if (transform(t, ctx, what, desc, &s, -1, pin, out)) {
        if (c->inplace)
            memcpy(got, pin, ob);
        check(t, what, desc, c, &s, -1, x, got);
    }
    tide_fft_plan_destroy(s.plan);
    CU(cudaFree(dsrc));
    CU(cudaFreeHost(pin));
    free(x);
    free(got);
}

/* Pattern e: the plan ordered after, and with async before, the caller's own stream. */
static void stream_case(tt_tally *t, tide_context *ctx, const ocase *c, int async)
{
    char desc[200];
    case_str(c, desc, sizeof desc);
    const char *what = async ? "e) own stream, async" : "e) own stream";
    cudaStream_t mine;
    CU(cudaStreamCreateWithFlags(&mine, cudaStreamNonBlocking));
    setup s;
    if (!tt_check(t, MPI_COMM_WORLD, make_setup(ctx, c, TIDE_LOCATION_DEVICE, TIDE_BACKEND_CUDA,
                                                mine, async, &s) == 0,
                  "%s: %s: plan: %s", desc, what, tide_last_error(ctx))) {
        CU(cudaStreamDestroy(mine));
        return;
    }
    int r2c = c->type == TIDE_R2C;
    size_t ib = s.in_bytes, ob = s.out_bytes;
    unsigned char *x = host(ib), *got = NULL;
    CU(cudaMallocHost((void **)&got, ob ? ob : 1));
    tide_ref_fill(x, &s.ib, 1, !r2c, c->prec, c->n, c->seed);
    void *din = dev(s.big), *dout = c->inplace ? din : dev(ob), *dsrc = dev(ib);
    CU(cudaMemcpy(dsrc, x, ib, cudaMemcpyHostToDevice));
    queue_input(din, s.big, dsrc, ib, mine);
    memset(got, 0, ob);
    if (transform(t, ctx, what, desc, &s, -1, din, dout)) {
        if (async) {
            CU(cudaMemcpyAsync(got, dout, ob, cudaMemcpyDeviceToHost, mine));
            CU(cudaStreamSynchronize(mine));
        } else {
            CU(cudaMemcpy(got, dout, ob, cudaMemcpyDeviceToHost));
        }
        check(t, what, desc, c, &s, -1, x, got);
    }
    tide_fft_plan_destroy(s.plan);
    CU(cudaFree(din));
    if (!c->inplace)
        CU(cudaFree(dout));
    CU(cudaFree(dsrc));
    CU(cudaFreeHost(got));
    CU(cudaStreamDestroy(mine));
    free(x);
}

static ocase make_case(int i, int random_boxes)
{
    ocase c;
    memcpy(c.n, random_boxes ? sizes[i % NSIZES] : streamed_sizes[i % NSIZES], sizeof c.n);
    c.type = (i / NSIZES) % 2 ? TIDE_R2C : TIDE_C2C;
    c.prec = (i / 2) % 2 ? TIDE_FLOAT : TIDE_DOUBLE;
    c.random_boxes = random_boxes;
    c.inplace = i % 5 == 3;
    c.seed = 1000u + (unsigned)i * 31u;
    return c;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    int gpus = tt_gpus_or_skip();
    if (!tt_all(MPI_COMM_WORLD, gpus > 0)) {
        MPI_Finalize();
        return 77;
    }
    tt_tally t = {0, 0};
    tide_context *ctx = NULL, *small = NULL;
    tide_context_options co;
    tide_context_options_init(&co);
    co.backend = TIDE_BACKEND_CUDA;
    int st = tide_context_create(MPI_COMM_WORLD, &co, &ctx);
    co.device_budget = 65536; /* host arrays stream through the GPU in chunks */
    if (!st)
        st = tide_context_create(MPI_COMM_WORLD, &co, &small);
    if (st) {
        if (rank == 0)
            printf("FAIL: cuda context: %s\n", tide_last_error(NULL));
        MPI_Finalize();
        return 1;
    }
    tide_device_info d;
    tide_context_device(ctx, &d);
    CU(cudaSetDevice(d.device)); /* the plain CUDA calls use the context's GPU */

    int ncases = argc > 1 ? atoi(argv[1]) : 32;
    for (int i = 0; i < ncases; i++) {
        ocase c = make_case(i, 1);
        device_case(&t, ctx, &c);
        stream_case(&t, ctx, &c, i % 2);
        host_case(&t, ctx, &c, TIDE_BACKEND_CUDA, "d) host arrays in card");
        host_case(&t, ctx, &c, TIDE_BACKEND_CPU, "d) host arrays on the CPU");
        c = make_case(i, 0); /* slabs, so that the small budget streams them */
        host_case(&t, small, &c, TIDE_BACKEND_CUDA, "d) host arrays streamed");
    }
    tide_context_destroy(small);
    tide_context_destroy(ctx);
    int rc = tt_finish(&t, MPI_COMM_WORLD, "test_order", "checks");
    MPI_Finalize();
    return rc;
}
#endif
