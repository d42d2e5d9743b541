/*
 * test_fft_plane.c: Tide's own plane pass and strided pass (gpu/fft_plane.h) against FFTW in
 * double (the oracle) and cuFFT on the same random data. The plane pass: every size class it
 * takes (64 to 1024 each way, square and not), float and double, forward and backward, in place
 * and out of place, plane counts below and above the lag, forced lags. The strided pass: the
 * slowest dimension of planes x ny x nx arrays, every line length it takes (64 to 1024), a few
 * planes' sizes. Each relative L2 error must be at most cuFFT's on the same input and below an
 * absolute bound; and the sizes refused are refused with a reason. The real plane pass: R2C
 * and C2R of real planes of 128 to 2048 reals a row, padded rows and not, against FFTW's and
 * cuFFT's real transforms. The data move with plain
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

/* The real plane pass over planes planes of ny rows of nx reals, rows rpitch reals apart, and
 * their spectra, rows of nx / 2 + 1 points cpitch apart: sign -1 the R2C transforms of random
 * reals, +1 the C2R transforms of the spectra of random reals (Hermitian: the columns kx = 0 and
 * nx / 2 made exactly so), against FFTW in double and cuFFT's on the same input. The output's
 * row padding must keep what was there before (out of place: the input as it was). */
static void one_real(int dbl, int nx, int ny, int planes, int sign, int64_t rpitch,
                     int64_t cpitch, int lag)
{
    const int nc = nx / 2 + 1;
    const size_t nr = (size_t)rpitch * ny * planes, ncx = (size_t)cpitch * ny * planes;
    const size_t es = dbl ? 8 : 4, rbytes = nr * es, cbytes = ncx * 2 * es;
    const char *what = dbl ? "double" : "float";
    char why[256] = "";
    double *xr = fftw_malloc(sizeof(double) * nr), *rr = fftw_malloc(sizeof(double) * nr);
    fftw_complex *xc = fftw_malloc(sizeof(fftw_complex) * ncx);
    fftw_complex *rc = fftw_malloc(sizeof(fftw_complex) * ncx);
    double *got = malloc(sizeof(double) * 2 * ncx);
    const size_t most = cbytes > rbytes ? cbytes : rbytes;
    void *hin = malloc(most), *hout = malloc(2 * most); /* the pattern, then the output */
    void *din = NULL, *dout = NULL;
    tide_gpu_plane *pass = NULL;
    cufftHandle cp = 0;
    int planned = 0;
    cudaStream_t st;
    cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    if (!xr || !rr || !xc || !rc || !got || !hin || !hout ||
        cudaMalloc(&din, most) || cudaMalloc(&dout, most)) {
        printf("FAIL real %s %dx%d x%d: out of memory\n", what, nx, ny, planes);
        failures++;
        goto out;
    }
    for (size_t i = 0; i < nr; i++) { /* the reals the GPU sees, padding included */
        double v = 2.0 * rand() / RAND_MAX - 1;
        xr[i] = dbl ? v : (float)v;
    }
    int dims[2] = {ny, nx}, rem[2] = {ny, (int)rpitch}, cem[2] = {ny, (int)cpitch};
    int rdist = (int)rpitch * ny, cdist = (int)cpitch * ny;
    for (size_t i = 0; i < ncx; i++)
        xc[i] = 0;
    fftw_plan f = fftw_plan_many_dft_r2c(2, dims, planes, xr, rem, 1, rdist, xc, cem, 1, cdist,
                                         FFTW_ESTIMATE);
    fftw_execute(f); /* the spectra (the input of C2R, the oracle of R2C) */
    fftw_destroy_plan(f);
    for (int q = 0; q < planes && sign > 0; q++)
        for (int kx = 0; kx < nc; kx += nx / 2) /* columns 0 and nx / 2: exactly Hermitian */
            for (int ky = 0; ky <= ny / 2; ky++) {
                fftw_complex *a = xc + (size_t)q * cdist + (size_t)ky * cpitch + kx;
                fftw_complex *b =
                    xc + (size_t)q * cdist + (size_t)((ny - ky) % ny) * cpitch + kx;
                double re = creal(*a), im = ky % (ny / 2) ? cimag(*a) : 0;
                if (!dbl)
                    re = (float)re, im = (float)im;
                *a = re + I * im;
                *b = re - I * im;
            }
    if (sign > 0) { /* the oracle: FFTW's C2R of the spectra (a copy: it destroys its input) */
        for (size_t i = 0; i < ncx && !dbl; i++) /* the values the GPU sees */
            xc[i] = (float)creal(xc[i]) + I * (float)cimag(xc[i]);
        memcpy(rc, xc, sizeof(fftw_complex) * ncx);
        for (size_t i = 0; i < nr; i++)
            rr[i] = -1;
        f = fftw_plan_many_dft_c2r(2, dims, planes, rc, cem, 1, cdist, rr, rem, 1, rdist,
                                   FFTW_ESTIMATE);
        fftw_execute(f);
        fftw_destroy_plan(f);
    }
    /* host images of the input, and of the output's pattern: -1 everywhere */
    for (size_t i = 0; i < (sign < 0 ? nr : 2 * ncx); i++) {
        double v = sign < 0 ? xr[i] : ((double *)xc)[i];
        if (dbl)
            ((double *)hin)[i] = v;
        else
            ((float *)hin)[i] = (float)v;
    }
    for (size_t i = 0; i < (sign < 0 ? 2 * ncx : nr); i++) {
        if (dbl)
            ((double *)hout)[i] = -1;
        else
            ((float *)hout)[i] = -1;
    }
    size_t ibytes = sign < 0 ? rbytes : cbytes, obytes = sign < 0 ? cbytes : rbytes;
    size_t on = sign < 0 ? 2 * ncx : nr; /* reals out */
    int r = tide_gpu_plane_create_real(dbl, nx, ny, planes, sign, rpitch, cpitch, lag, &pass,
                                       why, sizeof why);
    if (r) {
        printf("FAIL real %s %dx%d x%d: create returned %d: %s\n", what, nx, ny, planes, r, why);
        failures++;
        goto out;
    }
    double err[2] = {NAN, NAN}, pad_bad = 0;
    char *back = (char *)hout + obytes; /* the output, fetched */
    for (int k = 0; k < 2; k++) { /* Tide's pass, then cuFFT's plan on the same input */
        if (k == 1) {
            cufftType t = sign < 0 ? (dbl ? CUFFT_D2Z : CUFFT_R2C) : (dbl ? CUFFT_Z2D : CUFFT_C2R);
            if (cufftPlanMany(&cp, 2, dims, sign < 0 ? rem : cem, 1, sign < 0 ? rdist : cdist,
                              sign < 0 ? cem : rem, 1, sign < 0 ? cdist : rdist, t, planes) ||
                cufftSetStream(cp, st)) {
                printf("FAIL real %s %dx%d x%d: no cuFFT plan\n", what, nx, ny, planes);
                failures++;
                goto out;
            }
            planned = 1;
        }
        /* the copies in are still pending when the pass is enqueued behind them */
        int bad = cudaMemcpyAsync(din, hin, ibytes, cudaMemcpyHostToDevice, st) ||
                  cudaMemcpyAsync(dout, hout, obytes, cudaMemcpyHostToDevice, st);
        if (!bad && k == 0)
            bad = tide_gpu_plane_execute(pass, din, dout, st);
        else if (!bad)
            bad = sign < 0 ? (dbl ? cufftExecD2Z(cp, din, dout) : cufftExecR2C(cp, din, dout))
                           : (dbl ? cufftExecZ2D(cp, din, dout) : cufftExecC2R(cp, din, dout));
        if (bad || cudaMemcpyAsync(back, dout, obytes, cudaMemcpyDeviceToHost, st) ||
            cudaStreamSynchronize(st)) {
            printf("FAIL real %s %dx%d x%d: %s did not run\n", what, nx, ny, planes,
                   k ? "cuFFT" : "the pass");
            failures++;
            goto out;
        }
        for (size_t i = 0; i < on; i++)
            got[i] = dbl ? ((double *)back)[i] : ((float *)back)[i];
        double num = 0, den = 0;
        for (int q = 0; q < planes; q++)
            for (int y = 0; y < ny; y++) {
                int wid = sign < 0 ? 2 * (int)cpitch : (int)rpitch;
                int used = sign < 0 ? 2 * nc : nx;
                for (int x = 0; x < wid; x++) {
                    size_t i = ((size_t)q * ny + y) * wid + x;
                    if (x >= used) { /* the row's padding: as it was */
                        pad_bad += k == 0 && got[i] != -1;
                        continue;
                    }
                    double ref = sign < 0 ? ((double *)xc)[i] : rr[i];
                    num += (got[i] - ref) * (got[i] - ref);
                    den += ref * ref;
                }
            }
        err[k] = sqrt(num / den);
    }
    double bound = dbl ? 1e-14 : 1e-6;
    int ok = err[0] <= err[1] && err[0] < bound && !pad_bad;
    printf("%s %s real    %4dx%-4d x%-4d %s pitches %lld %lld lag %2d: rel L2 %.3g (cuFFT %.3g, "
           "ratio %.2f)%s\n", ok ? "ok  " : "FAIL", what, nx, ny, planes,
           sign < 0 ? "r2c" : "c2r", (long long)rpitch, (long long)cpitch, lag, err[0], err[1],
           err[0] / err[1], pad_bad ? ", padding overwritten" : "");
    failures += !ok;
out:
    if (planned)
        cufftDestroy(cp);
    tide_gpu_plane_destroy(pass);
    cudaStreamDestroy(st);
    cudaFree(din);
    cudaFree(dout);
    fftw_free(xr);
    fftw_free(rr);
    fftw_free(xc);
    fftw_free(rc);
    free(got);
    free(hin);
    free(hout);
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

static void refused_real(int dbl, int nx, int ny, int64_t rpitch, int64_t cpitch)
{
    char why[256] = "";
    tide_gpu_plane *pass = NULL;
    int r = tide_gpu_plane_create_real(dbl, nx, ny, 2, 1, rpitch, cpitch, 0, &pass, why,
                                       sizeof why);
    int ok = r == TIDE_ERR_UNSUPPORTED && !pass && why[0];
    printf("%s %s real %dx%d pitches %lld %lld refused: %s\n", ok ? "ok  " : "FAIL",
           dbl ? "double" : "float", nx, ny, (long long)rpitch, (long long)cpitch, why);
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
    /* real planes: every sized kernel (squares of 256 and 512, float 1024) and the general
     * one (double 1024, oblong, 128 x 64: rows of 64 complex points), padded rows, the lag */
    static const int reals[][3] = {
        {256, 256, 3}, {512, 512, 2}, {1024, 1024, 1}, {128, 64, 5}, {2048, 64, 2},
        {128, 1024, 2}, {512, 128, 3}, {256, 128, 41},
    };
    for (int dbl = 0; dbl < 2; dbl++)
        for (size_t i = 0; i < sizeof reals / sizeof *reals; i++)
            for (int sign = -1; sign <= 1; sign += 2) {
                int nx = reals[i][0], pad = (int)(i + sign + 2) % 2;
                one_real(dbl, nx, reals[i][1], reals[i][2], sign, nx + 2 * pad,
                         nx / 2 + 1 + 3 * pad, 0);
            }
    one_real(0, 256, 128, 41, -1, 256, 129, 1);
    one_real(1, 256, 128, 41, 1, 258, 129, 64);
    /* refused: not powers of two, too large, too many planes */
    refused(0, 96, 128, 1);
    refused(1, 1024, 1024, 1);
    refused(0, 2048, 128, 1);
    refused(0, 128, 128, 1 << 19);
    refused(0, 128, 128, 0);
    refused_real(0, 64, 64, 64, 33);   /* rows of 32 complex points */
    refused_real(0, 192, 64, 192, 97); /* not a power of two */
    refused_real(1, 2048, 1024, 2048, 1025); /* 16 MiB */
    refused_real(0, 256, 64, 255, 129); /* odd pitch */
    refused_real(0, 256, 64, 256, 128); /* complex rows too short */
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
