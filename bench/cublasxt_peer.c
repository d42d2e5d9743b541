/*
 * cublasxt_peer.c: the peer of `tide gemm` with host matrices on one GPU: cuBLASXt's DGEMM
 * (ZGEMM with -complex), NVIDIA's out-of-card GEMM, on devices 0..G-1 (G = 1 by default), the
 * matrices in pinned host memory (cudaMallocHost), swept over cuBLASXt's block sizes.
 *
 *   cublasxt_peer [N | M N K] [-block B] [-gpus G] [-n RUNS] [-complex]
 *
 * C = A B (alpha 1, beta 0, column major, no transposes) with A M x K and B K x N; default
 * N = 32768 (M = N = K), block sizes 1024, 2048, 4096 and 8192 (-block B: that one alone),
 * 5 runs. Per block size: one warm-up, then RUNS runs, each timed with a device synchronize
 * on both sides (cuBLASXt's calls return once the product is in C); the median counts. Prints
 * each block size's time and TFLOP/s (2 M N K / time; complex 8 M N K) and the best last, in a
 * line
 *   cublasXt best: block B, T TFLOP/s
 * The inputs are uniform in [-0.5, 0.5) (peer.h); 8 entries of the last C are compared with
 * dot products on the CPU, so a misconfigured call cannot post a figure.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>
#include <cublasXt.h>
#define PEER_NAME "cublasxt_peer"
#include "peer.h"

#define MAX_BLOCKS 8
#define CHECKED_ENTRIES 8

static const char *usage =
    "usage: cublasxt_peer [N | M N K] [-block B] [-gpus G] [-n RUNS] [-complex]\n"
    "  cuBLASXt DGEMM (ZGEMM with -complex) C = A B on GPUs 0..G-1 (default G = 1), A M x K,\n"
    "  B K x N in pinned host memory (default N = 32768 for all three); block sizes 1024 2048\n"
    "  4096 8192, or B alone; median of RUNS runs (default 5) after a warm-up per block size\n";

typedef struct {
    size_t m, n, k;
    int blocks[MAX_BLOCKS], nblocks, runs, gpus;
    int cplx; /* ZGEMM: each element two doubles (re, im) */
} params;

/* A whole decimal in [lo, hi] into *out: 0, else -1. */
static int to_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* Fills p from argv: 0, else the usage on stderr and 2. */
static int parse(int argc, char **argv, params *p)
{
    static const int sweep[] = {1024, 2048, 4096, 8192};
    long sizes[3], v, nsizes = 0;
    p->runs = 5;
    p->gpus = 1;
    p->nblocks = 0;
    p->cplx = 0;
    for (int i = 1; i < argc; i++) {
        int more = argc - i - 1;
        if (!strcmp(argv[i], "-block") && more && !to_long(argv[i + 1], 1, 1L << 20, &v))
            p->blocks[0] = (int)v, p->nblocks = 1, i++;
        else if (!strcmp(argv[i], "-n") && more && !to_long(argv[i + 1], 1, 1000, &v))
            p->runs = (int)v, i++;
        else if (!strcmp(argv[i], "-complex"))
            p->cplx = 1;
        else if (!strcmp(argv[i], "-gpus") && more && !to_long(argv[i + 1], 1, 16, &v))
            p->gpus = (int)v, i++;
        else if (nsizes < 3 && !to_long(argv[i], 1, 1L << 30, &v))
            sizes[nsizes++] = v;
        else if (!strcmp(argv[i], "-block") || !strcmp(argv[i], "-n") ||
                 !strcmp(argv[i], "-gpus"))
            return fprintf(stderr, "cublasxt_peer: %s needs a whole number >= 1\n%s", argv[i],
                           usage), 2;
        else
            return fprintf(stderr, "cublasxt_peer: bad argument '%s'\n%s", argv[i], usage), 2;
    }
    if (nsizes == 2)
        return fprintf(stderr, "cublasxt_peer: give one size or three\n%s", usage), 2;
    if (nsizes == 0)
        sizes[0] = 32768, nsizes = 1;
    p->m = (size_t)sizes[0];
    p->n = (size_t)sizes[nsizes == 3 ? 1 : 0];
    p->k = (size_t)sizes[nsizes == 3 ? 2 : 0];
    if (!p->nblocks)
        for (int b = 0; b < 4; b++)
            p->blocks[p->nblocks++] = sweep[b];
    return 0;
}

/* Device 0 must exist: 0, else why not and 1 (no crash on a machine without a GPU). */
static int gpu_ready(void)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count < 1) {
        fprintf(stderr, "cublasxt_peer: no usable GPU: cudaGetDeviceCount: %s\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "no devices");
        return 1;
    }
    struct cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    CK(cudaSetDevice(0));
    printf("cublasxt_peer: GPU 0 %s, %.1f GB, %d GPU%s visible (device 0 used alone)\n",
           prop.name, prop.totalGlobalMem / 1e9, count, count > 1 ? "s" : "");
    return 0;
}

/* A cuBLAS status: 0, else the call, its status name and 1. */
static int xt_ok(cublasStatus_t s, const char *what)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return 0;
    fprintf(stderr, "cublasxt_peer: %s failed: %s (%s)\n", what, cublasGetStatusName(s),
            cublasGetStatusString(s));
    return 1;
}

/* One product C = A B. */
static int multiply(cublasXtHandle_t h, const params *p, const double *a, const double *b,
                    double *c)
{
    const double one = 1, zero = 0;
    const cuDoubleComplex zone = {1, 0}, zzero = {0, 0};
    if (p->cplx)
        return xt_ok(cublasXtZgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, p->m, p->n, p->k, &zone,
                                   (const cuDoubleComplex *)a, p->m, (const cuDoubleComplex *)b,
                                   p->k, &zzero, (cuDoubleComplex *)c, p->m),
                     "cublasXtZgemm");
    return xt_ok(cublasXtDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, p->m, p->n, p->k, &one, a, p->m, b,
                               p->k, &zero, c, p->m),
                 "cublasXtDgemm");
}

/* The median seconds of p->runs products at block size `block`, after a warm-up. */
static int time_block(cublasXtHandle_t h, const params *p, int block, const double *a,
                      const double *b, double *c, double *times, double *median)
{
    char what[64];
    snprintf(what, sizeof what, "cublasXtSetBlockDim(%d)", block);
    if (xt_ok(cublasXtSetBlockDim(h, block), what))
        return 1;
    for (int r = -1; r < p->runs; r++) { /* r = -1: warm-up */
        double t0 = peer_now();
        if (multiply(h, p, a, b, c))
            return 1;
        double t = peer_now() - t0;
        if (r >= 0)
            times[r] = t;
    }
    *median = peer_median(times, p->runs);
    return 0;
}

/* CHECKED_ENTRIES entries of C against dot products in long double: the largest error
 * relative to sum |a_il| |b_lj| of its entry (complex: each part's error, the moduli summed),
 * which rounding keeps below about k 2^-53 (complex: sqrt(2) times that). */
static double spot_check(const params *p, const double *a, const double *b, const double *c)
{
    unsigned long long x = PEER_SEED ^ 0x5bd1e995u;
    double worst = 0;
    size_t w = p->cplx ? 2 : 1; /* doubles per element */
    for (int e = 0; e < CHECKED_ENTRIES; e++) {
        size_t i = peer_rand(&x) % p->m, j = peer_rand(&x) % p->n;
        long double re = 0, im = 0, mag = 0;
        for (size_t l = 0; l < p->k; l++) {
            const double *ai = a + w * (i + l * p->m), *bj = b + w * (l + j * p->k);
            long double ar = ai[0], br = bj[0], ai_ = p->cplx ? ai[1] : 0,
                        bi = p->cplx ? bj[1] : 0;
            re += ar * br - ai_ * bi;
            im += ar * bi + ai_ * br;
            mag += sqrtl(ar * ar + ai_ * ai_) * sqrtl(br * br + bi * bi);
        }
        const double *cij = c + w * (i + j * p->m);
        long double d = fmaxl(fabsl(cij[0] - re), p->cplx ? fabsl(cij[1] - im) : 0);
        double err = mag > 0 ? (double)(d / mag) : 0;
        worst = fmax(worst, isnan(cij[0]) || (p->cplx && isnan(cij[1])) ? INFINITY : err);
    }
    return worst;
}

/* The sweep on matrices already filled; prints each block size and the best. */
static int sweep(cublasXtHandle_t h, const params *p, const double *a, const double *b,
                 double *c)
{
    double *times = malloc(sizeof(double) * (size_t)p->runs), best = 0;
    int best_block = 0;
    if (!times)
        return fprintf(stderr, "cublasxt_peer: out of memory\n"), 1;
    double flops = (p->cplx ? 8.0 : 2.0) * (double)p->m * (double)p->n * (double)p->k;
    for (int i = 0; i < p->nblocks; i++) {
        double median;
        if (time_block(h, p, p->blocks[i], a, b, c, times, &median)) {
            free(times);
            return 1;
        }
        double tflops = flops / median * 1e-12;
        printf("block %5d: %.4f s per run (min %.4f, max %.4f, %d runs), %.3f TFLOP/s\n",
               p->blocks[i], median, times[0], times[p->runs - 1], p->runs, tflops);
        if (tflops > best)
            best = tflops, best_block = p->blocks[i];
    }
    free(times);
    double err = spot_check(p, a, b, c), tol = 4.0 * (double)p->k * 0x1p-53;
    printf("check: %d entries of C against long double dot products: largest error %.3g of "
           "sum |a b| (tolerance %.3g): %s\n", CHECKED_ENTRIES, err, tol,
           err <= tol ? "passed" : "FAILED");
    printf("cublasXt best: block %d, %.3f TFLOP/s\n", best_block, best);
    return err <= tol ? 0 : 1;
}

static int bench(const params *p)
{
    if (gpu_ready())
        return 1;
    size_t e = (p->cplx ? 2 : 1) * sizeof(double);
    size_t bytes[3] = {p->m * p->k * e, p->k * p->n * e, p->m * p->n * e};
    double *mat[3] = {NULL, NULL, NULL};
    cublasXtHandle_t h = NULL;
    int rc = 1, devices[16];
    for (int i = 0; i < p->gpus; i++)
        devices[i] = i;
    for (int i = 0; i < 3; i++)
        if (cudaMallocHost((void **)&mat[i], bytes[i]) != cudaSuccess) {
            fprintf(stderr, "cublasxt_peer: cudaMallocHost of %.3g GB failed\n", bytes[i] / 1e9);
            goto done;
        }
    unsigned long long x = PEER_SEED;
    for (int i = 0; i < 3; i++)
        peer_fill(mat[i], bytes[i] / sizeof(double), 1, &x);
    printf("cublasxt_peer: %s %zux%zux%zu (M N K), NN, column major, pinned host matrices "
           "%.3g GB in all, %d GPU%s, %d runs per block size\n", p->cplx ? "ZGEMM" : "DGEMM",
           p->m, p->n, p->k,
           (double)(bytes[0] + bytes[1] + bytes[2]) / 1e9, p->gpus, p->gpus > 1 ? "s" : "",
           p->runs);
    if (xt_ok(cublasXtCreate(&h), "cublasXtCreate") ||
        xt_ok(cublasXtDeviceSelect(h, p->gpus, devices), "cublasXtDeviceSelect"))
        goto done;
    rc = sweep(h, p, mat[0], mat[1], mat[2]);
done:
    if (h)
        xt_ok(cublasXtDestroy(h), "cublasXtDestroy");
    for (int i = 0; i < 3; i++)
        if (mat[i])
            cudaFreeHost(mat[i]);
    return rc;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv); /* peer.h's clock */
    params p;
    int rc = parse(argc, argv, &p);
    if (!rc)
        rc = bench(&p);
    MPI_Finalize();
    return rc;
}
