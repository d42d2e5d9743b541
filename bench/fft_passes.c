/*
 * fft_passes.c: one GPU, arrays in device memory: how many passes over device memory a 3D C2C
 * transform of N^3 takes when its planes go through the L2 cache, against the bare cuFFT 3D
 * plan (the study behind Tide's own in-card FFT; docs/performance.md, "Passes over device
 * memory").
 *
 *   fft_passes <float|double> N [RUNS]      (N^3 grid, default 9 runs)
 *
 * Schedules, each in place, forward, timed with a device synchronize on both sides, the median
 * of RUNS after a warm-up:
 *   3d:       cufftPlan3d;
 *   planes B: the two fastest dimensions as 2D transforms of B planes at a time (cufftPlanMany,
 *             batch B; B planes of N^2 points fit the L2 for small B, so the second of the 2D
 *             transform's passes reads the L2), then the slowest dimension as N^2 strided 1D
 *             transforms (one plan, stride N^2), for B = 1, 2, 4, ... N;
 *   the same launched from a CUDA graph (captured once), which leaves the kernels and not
 *   their launches;
 * and the parts alone: the 2D transforms of all planes in one call, the strided 1D pass;
 * then Tide's own plane pass (gpu/fft_plane.h: every plane's 2D transform in one kernel, each
 * plane read and written once) for a few lags (how many planes its row items run ahead of
 * its column items; 0: the plan's choice), alone against cuFFT's 2D transforms of all planes,
 * and followed by cuFFT's strided pass: the 3D transform; Tide's own strided pass alone
 * against cuFFT's, and after the plane pass: the 3D transform by Tide's passes alone.
 * The floor is one read and one write of the array at the device copy rate measured in the
 * same run (cudaMemcpy device to device); each time is printed as passes = time / floor.
 * Every schedule's output is compared with the 3D plan's (relative L2 over the first 2^24
 * points); the program fails when one differs by more than 1e-5 (float) or 1e-12 (double).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>
#include <cufft.h>
#include "tide.h"
#include "gpu/fft_plane.h"
#define PEER_NAME "fft_passes"
#include "peer.h"

typedef struct {
    int dbl, N, B;         /* B: planes a 2D call takes (0: the 3D plan) */
    cufftHandle plane, line, whole;
    cudaStream_t stream;
} sched;

static int exec(cufftHandle h, const sched *s, void *p)
{
    return s->dbl ? (int)cufftExecZ2Z(h, p, p, CUFFT_FORWARD)
                  : (int)cufftExecC2C(h, p, p, CUFFT_FORWARD);
}

/* One forward transform of d by schedule s, enqueued on s->stream. */
static int run(const sched *s, void *d)
{
    if (!s->B)
        return exec(s->whole, s, d);
    size_t plane = (size_t)s->N * s->N * (s->dbl ? 16 : 8);
    for (int z = 0; z < s->N; z += s->B)
        CK(exec(s->plane, s, (char *)d + (size_t)z * plane));
    return exec(s->line, s, d);
}

static int make(sched *s, int dbl, int N, int B, cudaStream_t stream)
{
    *s = (sched){.dbl = dbl, .N = N, .B = B, .stream = stream};
    cufftType t = dbl ? CUFFT_Z2Z : CUFFT_C2C;
    if (!B) {
        CK(cufftPlan3d(&s->whole, N, N, N, t));
        return cufftSetStream(s->whole, stream);
    }
    int n2[2] = {N, N}, n1[1] = {N};
    CK(cufftPlanMany(&s->plane, 2, n2, NULL, 1, N * N, NULL, 1, N * N, t, B));
    CK(cufftPlanMany(&s->line, 1, n1, n1, N * N, 1, n1, N * N, 1, t, N * N));
    CK(cufftSetStream(s->plane, stream));
    return cufftSetStream(s->line, stream);
}

static void unmake(sched *s)
{
    if (s->B) {
        cufftDestroy(s->plane);
        cufftDestroy(s->line);
    } else {
        cufftDestroy(s->whole);
    }
}

/* Median seconds of one call of f (a schedule run, or a graph launch) over runs, the input
 * restored before each (untimed). */
typedef int (*call_fn)(const void *what, void *d);

static int call_sched(const void *what, void *d) { return run(what, d); }

typedef struct {
    cudaGraphExec_t exec;
    cudaStream_t stream;
} graph;

static int call_graph(const void *what, void *d)
{
    (void)d;
    const graph *g = what;
    return (int)cudaGraphLaunch(g->exec, g->stream);
}

/* d restored from pristine on the schedules' stream, finished before it returns. */
static int restore(void *d, const void *pristine, size_t bytes, cudaStream_t stream)
{
    CK(cudaMemcpyAsync(d, pristine, bytes, cudaMemcpyDeviceToDevice, stream));
    return (int)cudaStreamSynchronize(stream);
}

static int timed(call_fn f, const void *what, void *d, const void *pristine, size_t bytes,
                 cudaStream_t stream, int runs, double *median)
{
    double *t = malloc(sizeof(double) * (size_t)runs);
    if (!t)
        return 1;
    for (int r = -1; r < runs; r++) {
        CK(restore(d, pristine, bytes, stream));
        double t0 = peer_now();
        CK(f(what, d));
        double t1 = peer_now();
        if (r >= 0)
            t[r] = t1 - t0;
    }
    *median = peer_median(t, runs);
    free(t);
    return 0;
}

/* Tide's plane pass (where pass is not NULL), then the strided pass of s: none (line 0),
 * cuFFT's (1) or Tide's (2: strided). */
typedef struct {
    tide_gpu_plane *pass;
    tide_gpu_strided *strided;
    const sched *s;
    int line;
} own;

static int call_own(const void *what, void *d)
{
    const own *o = what;
    if (o->pass)
        CK(tide_gpu_plane_execute(o->pass, d, d, o->s->stream));
    if (o->line == 2)
        return tide_gpu_strided_execute(o->strided, d, d, o->s->stream);
    return o->line ? exec(o->s->line, o->s, d) : 0;
}

/* o run once on d (from pristine, bytes), its output against ref over the first cmp points
 * (*err), then timed (*t). */
static int check_and_time(const own *o, void *d, const void *pristine, const void *ref,
                          size_t bytes, size_t cmp, int runs, double *err, double *t)
{
    cudaStream_t st = o->s->stream;
    CK(restore(d, pristine, bytes, st));
    CK(call_own(o, d));
    CK(cudaStreamSynchronize(st));
    *err = peer_rel_l2(d, ref, 2 * cmp, o->s->dbl);
    return timed(call_own, o, d, pristine, bytes, st, runs, t);
}

/* A copy of pristine transformed by cuFFT's plan h of s, in a new device array *out. */
static int reference(const sched *s, cufftHandle h, void *d, const void *pristine,
                     size_t bytes, void **out)
{
    CK(cudaMalloc(out, bytes));
    CK(restore(d, pristine, bytes, s->stream));
    CK(exec(h, s, d));
    CK(cudaMemcpyAsync(*out, d, bytes, cudaMemcpyDeviceToDevice, s->stream));
    return (int)cudaStreamSynchronize(s->stream);
}

/* Tide's strided pass alone against cuFFT's (its output ref1 from pristine), and after the
 * plane pass of lag 0 against the 3D plan's output ref: blocks of the rule's size, then of
 * each size forced. */
static int bench_strided(const sched *s, void *d, const void *pristine, const void *ref,
                         double floor, int runs, int *worst)
{
    int dbl = s->dbl, N = s->N;
    size_t n3 = (size_t)N * N * N, bytes = n3 * (dbl ? 16 : 8);
    size_t cmp = n3 < ((size_t)1 << 24) ? n3 : (size_t)1 << 24;
    char why[256];
    void *ref1 = NULL;
    CK(reference(s, s->line, d, pristine, bytes, &ref1));
    int points[] = {0, 4096, 8192, 16384};
    for (int i = 0; i < (int)(sizeof points / sizeof *points); i++) {
        own o = {.s = s, .line = 2};
        int64_t area = (int64_t)N * N;
        if (tide_gpu_strided_create(dbl, N, area, area, -1, points[i], &o.strided, why,
                                    sizeof why)) {
            printf("own strided, %5d points a block: %s\n", points[i], why);
            continue;
        }
        double t1, t3, e1, e3;
        CK(check_and_time(&o, d, pristine, ref1, bytes, cmp, runs, &e1, &t1));
        CK(tide_gpu_plane_create(dbl, N, N, N, -1, 0, &o.pass, why, sizeof why));
        CK(check_and_time(&o, d, pristine, ref, bytes, cmp, runs, &e3, &t3));
        *worst |= !(e1 < (dbl ? 1e-12 : 1e-5)) || !(e3 < (dbl ? 1e-12 : 1e-5));
        printf("own strided, %5d pts %8.4f ms  %5.2f passes (rel L2 against cuFFT's strided "
               "%.3g); own planes + own strided %8.4f ms  %5.2f passes (against 3d %.3g)\n",
               points[i], t1 * 1e3, t1 / floor, e1, t3 * 1e3, t3 / floor, e3);
        tide_gpu_plane_destroy(o.pass);
        tide_gpu_strided_destroy(o.strided);
    }
    cudaFree(ref1);
    return 0;
}

/* The plane pass against cuFFT's 2D transforms of all planes (s: B = N) and, with the strided
 * pass, against the 3D plan's output ref; d restored from pristine before each run. */
static int bench_own(const sched *s, void *d, const void *pristine, const void *ref,
                     double floor, int runs, int *worst)
{
    int dbl = s->dbl, N = s->N;
    size_t n3 = (size_t)N * N * N, bytes = n3 * (dbl ? 16 : 8);
    size_t cmp = n3 < ((size_t)1 << 24) ? n3 : (size_t)1 << 24;
    char why[256];
    if (!tide_gpu_plane_supported(dbl, N, N, why, sizeof why)) {
        printf("own plane pass: %s\n", why);
        return 0;
    }
    void *ref2 = NULL;
    CK(reference(s, s->plane, d, pristine, bytes, &ref2));
    int lags[] = {0, 2, 4, 8, 16};
    for (int i = 0; i < (int)(sizeof lags / sizeof *lags); i++) {
        own o = {.s = s};
        CK(tide_gpu_plane_create(dbl, N, N, N, -1, lags[i], &o.pass, why, sizeof why));
        double t2, t3, e2, e3;
        CK(check_and_time(&o, d, pristine, ref2, bytes, cmp, runs, &e2, &t2));
        o.line = 1;
        CK(check_and_time(&o, d, pristine, ref, bytes, cmp, runs, &e3, &t3));
        *worst |= !(e2 < (dbl ? 1e-12 : 1e-5)) || !(e3 < (dbl ? 1e-12 : 1e-5));
        printf("own planes, lag %-2d     %8.4f ms  %5.2f passes (rel L2 against cuFFT's 2D "
               "%.3g); + strided 1D %8.4f ms  %5.2f passes (against 3d %.3g)\n", lags[i],
               t2 * 1e3, t2 / floor, e2, t3 * 1e3, t3 / floor, e3);
        tide_gpu_plane_destroy(o.pass);
    }
    cudaFree(ref2);
    return bench_strided(s, d, pristine, ref, floor, runs, worst);
}

static int bench(int dbl, int N, int runs)
{
    size_t n3 = (size_t)N * N * N, bytes = n3 * (dbl ? 16 : 8);
    void *pristine = NULL, *d = NULL, *ref = NULL;
    CK(peer_device_arrays(n3, dbl, &pristine, &d, &ref));
    cudaStream_t stream;
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

    /* the floor: one read and one write of the array, at the copy rate of this run */
    double tc[16];
    for (int r = 0; r < 16; r++) {
        double t0 = peer_now();
        CK(cudaMemcpyAsync(d, pristine, bytes, cudaMemcpyDeviceToDevice, stream));
        tc[r] = peer_now() - t0;
    }
    double floor = peer_median(tc, 16);
    printf("c2c %s %d^3, one GPU, device arrays, in place, forward; copy %.0f GB/s, one pass "
           "(read + write) %.4f ms\n", dbl ? "double" : "float", N, 2 * bytes / floor / 1e9,
           floor * 1e3);

    sched s3;
    CK(make(&s3, dbl, N, 0, stream));
    CK(restore(d, pristine, bytes, stream));
    CK(run(&s3, d));
    CK(cudaMemcpyAsync(ref, d, bytes, cudaMemcpyDeviceToDevice, stream));
    CK(cudaStreamSynchronize(stream));
    double t3;
    CK(timed(call_sched, &s3, d, pristine, bytes, stream, runs, &t3));
    printf("%-22s %8.4f ms  %5.2f passes\n", "3d (cufftPlan3d)", t3 * 1e3, t3 / floor);
    unmake(&s3);

    /* outputs compared over their first cmp points (every output point depends on every
     * input point: a wrong pass shows anywhere), all of them up to 2^24 */
    size_t cmp = n3 < ((size_t)1 << 24) ? n3 : (size_t)1 << 24;
    int worst = 0;
    for (int B = 1; B <= N; B *= 2) {
        sched s;
        CK(make(&s, dbl, N, B, stream));
        CK(restore(d, pristine, bytes, stream));
        CK(run(&s, d));
        CK(cudaStreamSynchronize(stream));
        double err = peer_rel_l2(d, ref, 2 * cmp, dbl), t, tg = NAN, t2 = NAN, t1 = NAN;
        worst |= !(err < (dbl ? 1e-12 : 1e-5));
        CK(timed(call_sched, &s, d, pristine, bytes, stream, runs, &t));
        /* the same from a graph */
        cudaGraph_t gr;
        graph g = {.stream = stream};
        CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
        int cst = run(&s, d);
        CK(cudaStreamEndCapture(stream, &gr));
        if (!cst && cudaGraphInstantiate(&g.exec, gr, 0) == cudaSuccess) {
            CK(timed(call_graph, &g, d, pristine, bytes, stream, runs, &tg));
            cudaGraphExecDestroy(g.exec);
        }
        cudaGraphDestroy(gr);
        if (B == N) { /* the parts alone: all planes in one call, the strided pass */
            sched p = s;
            p.B = 0;
            p.whole = s.plane;
            CK(timed(call_sched, &p, d, pristine, bytes, stream, runs, &t2));
            p.whole = s.line;
            CK(timed(call_sched, &p, d, pristine, bytes, stream, runs, &t1));
        }
        printf("planes %-4d           %8.4f ms  %5.2f passes; graph %8.4f ms  %5.2f passes; "
               "rel L2 against 3d %.3g\n", B, t * 1e3, t / floor, tg * 1e3, tg / floor, err);
        if (B == N) {
            printf("parts: 2D of all planes %.4f ms (%.2f passes), strided 1D %.4f ms (%.2f "
                   "passes)\n", t2 * 1e3, t2 / floor, t1 * 1e3, t1 / floor);
            CK(bench_own(&s, d, pristine, ref, floor, runs, &worst));
        }
        unmake(&s);
    }
    cudaStreamDestroy(stream);
    cudaFree(pristine);
    cudaFree(d);
    cudaFree(ref);
    return worst;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    MPI_Init(&argc, &argv);
    int rc = 2;
    if (argc < 3 || (strcmp(argv[1], "float") && strcmp(argv[1], "double")) || atoi(argv[2]) < 2)
        fprintf(stderr, "usage: fft_passes <float|double> N [RUNS]\n");
    else
        rc = bench(!strcmp(argv[1], "double"), atoi(argv[2]), argc > 3 ? atoi(argv[3]) : 9);
    MPI_Finalize();
    return rc;
}
