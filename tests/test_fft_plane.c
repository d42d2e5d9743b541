/*
 * test_fft_plane.c: Tide's own plane pass and strided pass (gpu/fft_plane.h) against FFTW in
 * double (the oracle) and cuFFT on the same random data. The plane pass: every size class it
 * takes (64 to 1024 each way, square and not), float and double, forward and backward, in place
 * and out of place, plane counts below and above the lag, forced lags. The strided pass: the
 * slowest dimension of planes x ny x nx arrays, every line length it takes (64 to 1024), a few
 * planes' sizes. Each relative L2 error must be at most cuFFT's on the same input and below an
 * absolute bound; and the sizes refused are refused with a reason. The data move with plain
 * CUDA calls on the caller's stream around the pass: a copy in still pending when it is
 * enqueued, a copy out after it.
 * Exit 77 (skipped) without a usable GPU.
 */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>
#include <cufft.h>
#include <fftw3.h>
#include "gpu/fft_plane.h"

static int failures;

static double rel_l2(const double *a, const fftw_complex *ref, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double dr = a[2 * i] - creal(ref[i]), di = a[2 * i + 1] - cimag(ref[i]);
        num += dr * dr + di * di;
        den += creal(ref[i]) * creal(ref[i]) + cimag(ref[i]) * cimag(ref[i]);
    }
    return sqrt(num / den);
}

/* The device array d (n complex points) as doubles. */
static int fetch(const void *d, size_t n, int dbl, cudaStream_t st, double *out)
{
    size_t bytes = n * (dbl ? 16 : 8);
    void *h = malloc(bytes);
    if (!h || cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, st) ||
        cudaStreamSynchronize(st)) {
        free(h);
        return 1;
    }
    for (size_t i = 0; i < 2 * n; i++)
        out[i] = dbl ? ((double *)h)[i] : ((float *)h)[i];
    free(h);
    return 0;
}

/* A pass over planes planes of ny x nx points: the plane pass (2D transforms of the planes),
 * or (strided) the strided pass (1D transforms of length planes across them) in blocks of
 * points points (0: the rule's), each plane followed by pad points that no line takes (in
 * place: the pass must leave them as they are). */
static void one(int dbl, int nx, int ny, int planes, int sign, int in_place, int lag,
                int strided, int points, int pad)
{
    size_t n = ((size_t)nx * ny + (size_t)pad) * planes, bytes = n * (dbl ? 16 : 8);
    char why[256] = "";
    const char *what = dbl ? "double" : "float";
    fftw_complex *x = fftw_malloc(sizeof(fftw_complex) * n);
    fftw_complex *ref = fftw_malloc(sizeof(fftw_complex) * n);
    double *got = malloc(sizeof(double) * 2 * n);
    void *h = malloc(bytes), *din = NULL, *dout = NULL;
    if (!x || !ref || !got || !h || cudaMalloc(&din, bytes) ||
        (!in_place && cudaMalloc(&dout, bytes))) {
        printf("FAIL %s %dx%d x%d: out of memory\n", what, nx, ny, planes);
        failures++;
        goto out;
    }
    if (in_place)
        dout = din;
    for (size_t i = 0; i < n; i++) {
        double re = 2.0 * rand() / RAND_MAX - 1, im = 2.0 * rand() / RAND_MAX - 1;
        if (dbl) {
            ((double *)h)[2 * i] = re;
            ((double *)h)[2 * i + 1] = im;
        } else {
            ((float *)h)[2 * i] = (float)re;
            ((float *)h)[2 * i + 1] = (float)im;
            re = (float)re; /* the oracle transforms the values the GPU sees */
            im = (float)im;
        }
        x[i] = re + I * im;
    }
    memcpy(ref, x, sizeof(fftw_complex) * n); /* the points no line takes, as they are */
    int dims[2] = {ny, nx}, area = nx * ny, pitch = area + pad;
    fftw_plan fp = strided ? fftw_plan_many_dft(1, &planes, area, x, NULL, pitch, 1, ref, NULL,
                                                pitch, 1, sign, FFTW_ESTIMATE)
                           : fftw_plan_many_dft(2, dims, planes, x, NULL, 1, area, ref, NULL, 1,
                                                area, sign, FFTW_ESTIMATE);
    fftw_execute(fp);
    fftw_destroy_plan(fp);

    cudaStream_t st;
    cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    tide_gpu_plane *pass = NULL;
    tide_gpu_strided *line = NULL;
    int r = strided ? tide_gpu_strided_create(dbl, planes, area, pitch, sign, points, &line,
                                              why, sizeof why)
                    : tide_gpu_plane_create(dbl, nx, ny, planes, sign, lag, &pass, why,
                                            sizeof why);
    double err = NAN, cerr = NAN;
    if (r) {
        printf("FAIL %s %dx%d x%d: create returned %d: %s\n", what, nx, ny, planes, r, why);
        failures++;
        goto done;
    }
    /* the copy in is still pending when the pass is enqueued behind it */
    if (cudaMemcpyAsync(din, h, bytes, cudaMemcpyHostToDevice, st) ||
        (strided ? tide_gpu_strided_execute(line, din, dout, st)
                 : tide_gpu_plane_execute(pass, din, dout, st)) ||
        fetch(dout, n, dbl, st, got)) {
        printf("FAIL %s %dx%d x%d: the pass did not run\n", what, nx, ny, planes);
        failures++;
        goto done;
    }
    err = rel_l2(got, ref, n);
    /* cuFFT on the same input */
    cufftHandle cp;
    int cn[2] = {ny, nx};
    cufftType ct = dbl ? CUFFT_Z2Z : CUFFT_C2C;
    if ((strided ? cufftPlanMany(&cp, 1, &planes, &planes, pitch, 1, &planes, pitch, 1, ct,
                                 area)
                 : cufftPlanMany(&cp, 2, cn, NULL, 1, area, NULL, 1, area, ct, planes)) ||
        cufftSetStream(cp, st) ||
        cudaMemcpyAsync(din, h, bytes, cudaMemcpyHostToDevice, st) ||
        (dbl ? cufftExecZ2Z(cp, din, din, sign) : cufftExecC2C(cp, din, din, sign)) ||
        fetch(din, n, dbl, st, got)) {
        printf("FAIL %s %dx%d x%d: cuFFT did not run\n", what, nx, ny, planes);
        failures++;
        goto done;
    }
    cufftDestroy(cp);
    cerr = rel_l2(got, ref, n);
    double bound = dbl ? 1e-14 : 1e-6;
    int ok = err <= cerr && err < bound;
    printf("%s %s %-7s %4dx%-4d x%-4d %s %-12s lag %2d points %5d pad %4d: rel L2 %.3g (cuFFT "
           "%.3g, ratio %.2f)\n", ok ? "ok  " : "FAIL", what, strided ? "strided" : "planes", nx,
           ny, planes, sign < 0 ? "fwd" : "bwd", in_place ? "in place" : "out of place", lag,
           points, pad, err, cerr, err / cerr);
    failures += !ok;
done:
    tide_gpu_plane_destroy(pass);
    tide_gpu_strided_destroy(line);
    cudaStreamDestroy(st);
out:
    if (!in_place)
        cudaFree(dout);
    cudaFree(din);
    fftw_free(x);
    fftw_free(ref);
    free(got);
    free(h);
}

static void refused(int dbl, int nx, int ny, int planes)
{
    char why[256] = "";
    tide_gpu_plane *pass = NULL;
    int r = tide_gpu_plane_create(dbl, nx, ny, planes, -1, 0, &pass, why, sizeof why);
    int ok = r == TIDE_ERR_UNSUPPORTED && !pass && why[0];
    printf("%s %s %dx%d x%d refused: %s\n", ok ? "ok  " : "FAIL", dbl ? "double" : "float", nx,
           ny, planes, why);
    failures += !ok;
    tide_gpu_plane_destroy(pass);
}

static void refused_strided(int dbl, int n, int64_t count, int64_t pitch, int points)
{
    char why[256] = "";
    tide_gpu_strided *pass = NULL;
    int r = tide_gpu_strided_create(dbl, n, count, pitch, -1, points, &pass, why, sizeof why);
    int ok = r == TIDE_ERR_UNSUPPORTED && !pass && why[0];
    printf("%s %s strided %d points x %lld lines %lld apart, blocks of %d refused: %s\n",
           ok ? "ok  " : "FAIL", dbl ? "double" : "float", n, (long long)count,
           (long long)pitch, points, why);
    failures += !ok;
    tide_gpu_strided_destroy(pass);
}

int main(void)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) || count < 1) {
        printf("no usable GPU: skipped\n");
        return 77;
    }
    srand(12345);
    static const int sizes[][3] = {
        {64, 128, 3}, {128, 64, 2},  {256, 256, 5}, {512, 512, 3},  {1024, 512, 2},
        {512, 1024, 2}, {1024, 1024, 1}, {64, 1024, 4}, {1024, 64, 4}, {128, 128, 41},
        {64, 64, 9},
    };
    for (int dbl = 0; dbl < 2; dbl++)
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
            int nx = sizes[i][0], ny = sizes[i][1], planes = sizes[i][2];
            char why[128];
            if (!tide_gpu_plane_supported(dbl, nx, ny, why, sizeof why)) {
                refused(dbl, nx, ny, planes);
                continue;
            }
            for (int sign = -1; sign <= 1; sign += 2)
                one(dbl, nx, ny, planes, sign, (int)(i + sign + 2) % 2, 0, 0, 0, 0);
        }
    /* the lag forced: one plane ahead, and more planes ahead than there are */
    one(0, 128, 128, 41, -1, 1, 1, 0, 0, 0);
    one(1, 128, 128, 41, 1, 0, 1, 0, 0, 0);
    one(0, 256, 128, 7, -1, 0, 64, 0, 0, 0);
    /* the strided pass: lines of 64 to 1024 points across planes of 8 x 8 (the fewest lines
     * at 64 points: one block) to 96 x 32 (not a power of two: the lines need only come in
     * blocks), in blocks of the rule's size, then of every size forced */
    static const int lines[][3] = {
        {8, 8, 64},  {96, 32, 64},  {16, 8, 128},  {32, 40, 256}, {64, 64, 512},
        {24, 16, 1024}, {512, 2, 64},
    };
    for (int dbl = 0; dbl < 2; dbl++)
        for (size_t i = 0; i < sizeof lines / sizeof *lines; i++)
            for (int sign = -1; sign <= 1; sign += 2)
                one(dbl, lines[i][0], lines[i][1], lines[i][2], sign, (int)(i + sign + 2) % 2,
                    0, 1, 0, 0);
    for (int points = 4096; points <= 16384; points *= 2) {
        one(0, 32, 32, 512, -1, 1, 0, 1, points, 0);
        one(0, 16, 64, 1024, 1, 0, 0, 1, points, 0);
        if (points < 16384)
            one(1, 32, 16, 1024, -1, 0, 0, 1, points, 0);
    }
    /* lines whose points lie further apart than their count (a slice of each plane's rows, as
     * an overlapped exchange's chunk takes), in place: the rest of each plane untouched */
    one(0, 32, 16, 512, -1, 1, 0, 1, 0, 37);
    one(1, 24, 16, 256, 1, 1, 0, 1, 0, 4096);
    one(0, 8, 8, 64, 1, 1, 0, 1, 0, 100);
    /* refused: not powers of two, too large, too many planes */
    refused(0, 96, 128, 1);
    refused(1, 1024, 1024, 1);
    refused(0, 2048, 128, 1);
    refused(0, 128, 128, 1 << 19);
    refused(0, 128, 128, 0);
    refused_strided(0, 96, 64, 64, 0);
    refused_strided(1, 2048, 64, 64, 0);
    refused_strided(0, 32, 64, 64, 0);
    refused_strided(0, 64, 32, 32, 0);
    refused_strided(1, 64, 96, 96, 0);
    refused_strided(0, 512, 1024, 1024, 2048);
    refused_strided(1, 512, 1024, 1024, 16384);
    refused_strided(0, 1024, 4, 4, 0);
    refused_strided(0, 64, 128, 64, 0); /* points nearer than the lines' count */
    printf("%d failed\n", failures);
    return failures ? 1 : 0;
}
