/*
 * poisson_peer.c: one GPU, arrays in device memory: Tide's periodic Poisson solve against its
 * bound, a bare cuFFT R2C + C2R pair of the same grid (cufftPlan3d, out of place: the real
 * array into a complex one and back), and Tide's solve with a Neumann z (periodic x and y: 2D
 * transforms and a tridiagonal solve per mode) against the periodic solve, all timed in
 * alternation in the same run.
 *
 *   poisson_peer <float|double> N|NXxNYxNZ [RUNS]    (N^3 or NX x NY x NZ, default 9 runs)
 *
 * Each run restores the input from a pristine device copy (untimed), then times one pair / one
 * solve (f -> u, out of place) with a device synchronize on both sides; the figures are the
 * medians after one warm-up each. The goals: the periodic solve within 1.05x the pair, the
 * Neumann one within 1.3x the periodic one. The last solves are checked on the host: the
 * 7-point residual lap(u) - (f - mean(f)) (h = 1, the default options; ghost values u[-1] =
 * u[0], u[n] = u[n-1] along the Neumann z) at a few hundred random points, relative to
 * max |f - mean(f)| there; above 1e-3 (float) or 1e-9 (double) fails. Prints the figures, the
 * bounds and bound / time last.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>
#include <cufft.h>
#include "tide.h"
#define PEER_NAME "poisson_peer"
#include "peer.h"

/* A Tide call: on failure prints the context's message and returns 1. */
#define TK(ctx, call)                                                                           \
    do {                                                                                        \
        if (call) {                                                                             \
            fprintf(stderr, PEER_NAME ": %s failed at line %d: %s\n", #call, __LINE__,          \
                    tide_last_error(ctx));                                                      \
            return 1;                                                                           \
        }                                                                                       \
    } while (0)

enum { SAMPLES = 400 };

/* Element i of a device array of float or double scalars, on the host. */
static int fetch(const void *d, size_t i, int dbl, double *v)
{
    if (dbl) {
        double x;
        CK(cudaMemcpy(&x, (const double *)d + i, sizeof x, cudaMemcpyDeviceToHost));
        *v = x;
    } else {
        float x;
        CK(cudaMemcpy(&x, (const float *)d + i, sizeof x, cudaMemcpyDeviceToHost));
        *v = x;
    }
    return 0;
}

/* Offset of global point p (taken periodically; ghost points of a Neumann z are their
 * neighbours inside) in an array stored in box b. */
static size_t offset(const tide_box *b, const int n[3], const int p[3], int neumann_z)
{
    size_t off = 0;
    for (int k = 0; k < 3; k++) {
        int d = b->order[k];
        int q = ((p[d] % n[d]) + n[d]) % n[d];
        if (d == 2 && neumann_z)
            q = p[d] < 0 ? 0 : p[d] >= n[d] ? n[d] - 1 : p[d];
        off = off * (size_t)(b->hi[d] - b->lo[d]) + (size_t)(q - b->lo[d]);
    }
    return off;
}

/* The max relative 7-point residual of u against f at SAMPLES random points (two of them
 * corners, where every neighbour wraps or is a ghost): |lap(u) - alpha u - (f - mean)| over
 * max |f - mean| at those points, mean being mean(f) in a singular problem and 0 otherwise. */
static int residual(const void *f, const void *u, const tide_box *b, const int n[3],
                    const tide_poisson_options *o, double mean, int dbl, double *rel)
{
    int nz = o->bc[2][0] == TIDE_BC_NEUMANN;
    unsigned long long x = PEER_SEED ^ 0x9e3779b97f4a7c15ull;
    double rmax = 0, smax = 0;
    for (int s = 0; s < SAMPLES; s++) {
        int p[3];
        for (int d = 0; d < 3; d++)
            p[d] = s == 0 ? 0 : s == 1 ? n[d] - 1 : (int)(peer_rand(&x) % (unsigned)n[d]);
        double fp, u0, lap = 0;
        CK(fetch(f, offset(b, n, p, nz), dbl, &fp));
        CK(fetch(u, offset(b, n, p, nz), dbl, &u0));
        for (int d = 0; d < 3; d++) {
            double up, um;
            int q[3] = {p[0], p[1], p[2]};
            q[d] = p[d] + 1;
            CK(fetch(u, offset(b, n, q, nz), dbl, &up));
            q[d] = p[d] - 1;
            CK(fetch(u, offset(b, n, q, nz), dbl, &um));
            lap += (up - 2 * u0 + um) / (o->h[d] * o->h[d]);
        }
        double rhs = fp - mean;
        double r = fabs(lap - o->alpha * u0 - rhs);
        if (!(r <= rmax)) /* a NaN sticks */
            rmax = r;
        smax = fmax(smax, fabs(rhs));
    }
    *rel = rmax / smax;
    return 0;
}

static int bench(int dbl, const int n[3], int runs)
{
    size_t n3 = (size_t)n[0] * n[1] * n[2], es = dbl ? 8 : 4;
    size_t rbytes = n3 * es, cbytes = (size_t)n[0] * n[1] * (size_t)(n[2] / 2 + 1) * 2 * es;
    char N[64]; /* the grid, as the figures name it */
    if (n[0] == n[1] && n[1] == n[2])
        snprintf(N, sizeof N, "%d^3", n[0]);
    else
        snprintf(N, sizeof N, "%dx%dx%d", n[0], n[1], n[2]);
    void *pristine = NULL, *d = NULL, *u = NULL, *c = NULL;
    CK(cudaMalloc(&pristine, rbytes));
    CK(cudaMalloc(&d, rbytes));
    CK(cudaMalloc(&u, rbytes));
    CK(cudaMalloc(&c, cbytes));
    /* Random input, never zeros; its mean is what a singular solve removes. */
    char *h = malloc(rbytes);
    if (!h)
        return fprintf(stderr, PEER_NAME ": out of memory\n"), 1;
    unsigned long long x = PEER_SEED;
    double mean = peer_fill(h, n3, dbl, &x) / (double)n3;
    CK(cudaMemcpy(pristine, h, rbytes, cudaMemcpyHostToDevice));
    free(h);

    cufftHandle fwd, inv;
    CK(cufftPlan3d(&fwd, n[0], n[1], n[2], dbl ? CUFFT_D2Z : CUFFT_R2C));
    CK(cufftPlan3d(&inv, n[0], n[1], n[2], dbl ? CUFFT_Z2D : CUFFT_C2R));
    tide_context *ctx = NULL;
    tide_poisson_plan *tp = NULL, *tn = NULL;
    tide_context_options co;
    tide_context_options_init(&co);
    co.backend = TIDE_BACKEND_CUDA;
    TK(NULL, tide_context_create(MPI_COMM_WORLD, &co, &ctx));
    tide_poisson_options o;
    tide_poisson_options_init(&o);
    o.precision = dbl ? TIDE_DOUBLE : TIDE_FLOAT;
    o.backend = TIDE_BACKEND_CUDA;
    o.location = TIDE_LOCATION_DEVICE;
    TK(ctx, tide_poisson_plan_create(ctx, n, NULL, &o, &tp));
    tide_poisson_options on = o; /* the seeds' case: periodic x and y, Neumann z */
    on.bc[2][0] = on.bc[2][1] = TIDE_BC_NEUMANN;
    TK(ctx, tide_poisson_plan_create(ctx, n, NULL, &on, &tn));
    tide_box box, nbox; /* f and u of the Neumann solve are stored as its plan says */
    TK(ctx, tide_poisson_plan_box(tp, &box));
    TK(ctx, tide_poisson_plan_box(tn, &nbox));
    if (tide_box_count(&box) != (long long)n3) {
        fprintf(stderr, PEER_NAME ": the plan's box is not the whole grid\n");
        return 1;
    }
    char desc[200], ndesc[200];
    TK(ctx, tide_poisson_plan_describe(tp, desc, sizeof desc));
    TK(ctx, tide_poisson_plan_describe(tn, ndesc, sizeof ndesc));
    tide_poisson_info info, ninfo;
    TK(ctx, tide_poisson_plan_info(tp, &info));
    TK(ctx, tide_poisson_plan_info(tn, &ninfo));

#define CUFFT_PAIR()                                                                            \
    do {                                                                                        \
        if (dbl) {                                                                              \
            CK(cufftExecD2Z(fwd, d, c));                                                        \
            CK(cufftExecZ2D(inv, c, d));                                                        \
        } else {                                                                                \
            CK(cufftExecR2C(fwd, d, c));                                                        \
            CK(cufftExecC2R(inv, c, d));                                                        \
        }                                                                                       \
    } while (0)

    double *tc = malloc(sizeof(double) * 3 * (size_t)runs), *tt = tc + runs, *tn_ = tt + runs;
    if (!tc)
        return fprintf(stderr, PEER_NAME ": out of memory\n"), 1;
    for (int r = -1; r < runs; r++) { /* r = -1: warm-up */
        CK(cudaMemcpy(d, pristine, rbytes, cudaMemcpyDeviceToDevice));
        double t0 = peer_now();
        CUFFT_PAIR();
        double t1 = peer_now();
        CK(cudaMemcpy(d, pristine, rbytes, cudaMemcpyDeviceToDevice));
        double t2 = peer_now();
        TK(ctx, tide_poisson_solve(tp, d, u));
        double t3 = peer_now();
        TK(ctx, tide_poisson_solve(tn, d, c)); /* the complex buffer serves as its output */
        double t4 = peer_now();
        if (r >= 0) {
            tc[r] = t1 - t0;
            tt[r] = t3 - t2;
            tn_[r] = t4 - t3;
        }
    }
    double mc = peer_median(tc, runs), mt = peer_median(tt, runs), mn = peer_median(tn_, runs);

    /* The last timed solves, checked against the pristine f. */
    double tide_mean = NAN, rel = NAN, nmean = NAN, nrel = NAN;
    TK(ctx, tide_poisson_mean(tp, &tide_mean));
    TK(ctx, tide_poisson_mean(tn, &nmean));
    CK(residual(pristine, u, &box, n, &o, info.singular ? mean : 0, dbl, &rel));
    CK(residual(pristine, c, &nbox, n, &on, ninfo.singular ? mean : 0, dbl, &nrel));
    double tol = dbl ? 1e-9 : 1e-3;
    int ok = rel <= tol && nrel <= tol; /* false for NaN */

    printf("poisson %s %s, one GPU, device arrays, out of place; Tide plan: %s "
           "(work memory %.2f GiB on the device)\n", dbl ? "double" : "float", N, desc,
           (double)info.device_bytes / (1 << 30));
    printf("Tide poisson check: max relative 7-point residual %.3g at %d points (mean(f) %.3g, "
           "Tide's %.3g)%s\n", rel, SAMPLES, mean, tide_mean, rel <= tol ? "" : " FAILED");
    printf("RESULT poisson %s %s: Tide %.4f ms, bound (bare cuFFT R2C+C2R pair) %.4f ms, "
           "ratio %.3f (goal <= 1.05)\n", dbl ? "double" : "float", N, mt * 1e3, mc * 1e3,
           mt / mc);
    printf("cuFFT R2C+C2R pair: %.4f ms (min %.4f)\n", mc * 1e3, tc[0] * 1e3);
    printf("Tide poisson solve: %.4f ms (min %.4f)\n", mt * 1e3, tt[0] * 1e3);
    printf("Bound: %.4f ms (the bare cuFFT R2C+C2R pair); bound / time %.3f\n", mc * 1e3,
           mc / mt);
    printf("poisson %s %s Neumann z: Tide plan: %s (work memory %.2f GiB on the device)\n",
           dbl ? "double" : "float", N, ndesc, (double)ninfo.device_bytes / (1 << 30));
    printf("Tide poisson check: Neumann z: max relative 7-point residual %.3g at %d points "
           "(mean(f) %.3g, Tide's %.3g)%s\n", nrel, SAMPLES, mean, nmean,
           nrel <= tol ? "" : " FAILED");
    printf("RESULT poisson-neumann-z %s %s: Tide %.4f ms, Tide periodic %.4f ms, ratio %.3f "
           "(goal <= 1.3)\n", dbl ? "double" : "float", N, mn * 1e3, mt * 1e3, mn / mt);
    free(tc);
    tide_poisson_plan_destroy(tn);
    tide_poisson_plan_destroy(tp);
    tide_context_destroy(ctx);
    cufftDestroy(fwd);
    cufftDestroy(inv);
    cudaFree(pristine);
    cudaFree(d);
    cudaFree(u);
    cudaFree(c);
    return ok ? 0 : 1;
}

/* The grid: N (a cube) or NXxNYxNZ, each at least 2; 0 if not. */
static int grid(const char *s, int n[3])
{
    char x1, x2, end;
    int k = sscanf(s, "%d%c%d%c%d%c", &n[0], &x1, &n[1], &x2, &n[2], &end);
    if (k == 1)
        n[1] = n[2] = n[0];
    else if (k != 5 || x1 != 'x' || x2 != 'x')
        return 0;
    return n[0] >= 2 && n[1] >= 2 && n[2] >= 2;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rc = 2, size = 0, n[3];
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 1 || argc < 3 || (strcmp(argv[1], "float") && strcmp(argv[1], "double")) ||
        !grid(argv[2], n) || (argc > 3 && atoi(argv[3]) < 1))
        fprintf(stderr, "usage: poisson_peer <float|double> N|NXxNYxNZ [RUNS]   (one rank)\n");
    else
        rc = bench(!strcmp(argv[1], "double"), n, argc > 3 ? atoi(argv[3]) : 9);
    MPI_Finalize();
    return rc;
}
