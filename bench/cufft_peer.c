/*
 * cufft_peer.c: one GPU, arrays in device memory: Tide's 3D C2C plan against a bare cuFFT plan
 * of the same transform (cufftPlan3d, in place), timed in alternation in the same run.
 *
 *   cufft_peer <float|double> N [RUNS]      (N^3 grid, default 9 runs)
 *
 * Each run restores the input from a pristine device copy (untimed), then times one forward +
 * inverse pair with a device synchronize on both sides; the figure is the median pair / 2.
 * Tide's forward output is compared with cuFFT's first (relative L2), so the two compute the
 * same transform. Prints the figure, the bound (bare cuFFT) and the ratio last.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>
#include <cufft.h>
#include "tide.h"
#define PEER_NAME "cufft_peer"
#include "peer.h"

static int bench(int dbl, int N, int runs)
{
    size_t n3 = (size_t)N * N * N, bytes = n3 * (dbl ? 16 : 8);
    void *pristine = NULL, *d = NULL, *ref = NULL;
    CK(peer_device_arrays(n3, dbl, &pristine, &d, &ref));

    cufftHandle cp;
    CK(cufftPlan3d(&cp, N, N, N, dbl ? CUFFT_Z2Z : CUFFT_C2C));
    tide_context *ctx = NULL;
    tide_fft_plan *tp = NULL;
    CK(tide_context_create(MPI_COMM_WORLD, NULL, &ctx));
    tide_fft_options o;
    tide_fft_options_init(&o);
    o.precision = dbl ? TIDE_DOUBLE : TIDE_FLOAT;
    o.backend = TIDE_BACKEND_CUDA;
    o.location = TIDE_LOCATION_DEVICE;
    int n[3] = {N, N, N};
    if (tide_fft_plan_create(ctx, n, NULL, NULL, &o, &tp)) {
        fprintf(stderr, "cufft_peer: %s\n", tide_last_error(ctx));
        return 1;
    }
    char desc[200];
    tide_fft_plan_describe(tp, desc, sizeof desc);
    tide_fft_info info;
    tide_fft_plan_info(tp, &info);

#define CUFFT_EXEC(dir)                                                                         \
    (dbl ? cufftExecZ2Z(cp, d, d, dir) : cufftExecC2C(cp, d, d, dir))
    /* Same transform: forward of the same input, both ways. */
    CK(cudaMemcpy(d, pristine, bytes, cudaMemcpyDeviceToDevice));
    CK(CUFFT_EXEC(CUFFT_FORWARD));
    CK(cudaMemcpy(ref, d, bytes, cudaMemcpyDeviceToDevice));
    CK(cudaMemcpy(d, pristine, bytes, cudaMemcpyDeviceToDevice));
    CK(tide_fft_forward(tp, d, d));
    double err = peer_rel_l2(d, ref, 2 * n3, dbl);

    double *tc = malloc(sizeof(double) * (size_t)runs), *tt = malloc(sizeof(double) * (size_t)runs);
    for (int r = -1; r < runs; r++) { /* r = -1: warm-up */
        CK(cudaMemcpy(d, pristine, bytes, cudaMemcpyDeviceToDevice));
        double t0 = peer_now();
        CK(CUFFT_EXEC(CUFFT_FORWARD));
        CK(CUFFT_EXEC(CUFFT_INVERSE));
        double t1 = peer_now();
        CK(cudaMemcpy(d, pristine, bytes, cudaMemcpyDeviceToDevice));
        double t2 = peer_now();
        CK(tide_fft_forward(tp, d, d));
        CK(tide_fft_backward(tp, d, d));
        double t3 = peer_now();
        if (r >= 0) {
            tc[r] = (t1 - t0) / 2;
            tt[r] = (t3 - t2) / 2;
        }
    }
    double mc = peer_median(tc, runs), mt = peer_median(tt, runs);
    printf("c2c %s %d^3, one GPU, device arrays, in place; Tide plan: %s\n",
           dbl ? "double" : "float", N, desc);
    printf("Tide vs cuFFT forward: relative L2 %.3g\n", err);
    printf("cuFFT (bound):  %.4f ms per transform (min %.4f)\n", mc * 1e3, tc[0] * 1e3);
    printf("Tide:           %.4f ms per transform (min %.4f)\n", mt * 1e3, tt[0] * 1e3);
    printf("RESULT c2c %s %d^3: Tide %.4f ms, bound (bare cuFFT) %.4f ms, ratio %.3f "
           "(goal <= 1.05)\n", dbl ? "double" : "float", N, mt * 1e3, mc * 1e3, mt / mc);
    free(tc);
    free(tt);
    tide_fft_plan_destroy(tp);
    tide_context_destroy(ctx);
    cufftDestroy(cp);
    cudaFree(pristine);
    cudaFree(d);
    cudaFree(ref);
    return err < (dbl ? 1e-12 : 1e-5) ? 0 : 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rc = 2;
    if (argc < 3 || (strcmp(argv[1], "float") && strcmp(argv[1], "double")) || atoi(argv[2]) < 2)
        fprintf(stderr, "usage: cufft_peer <float|double> N [RUNS]\n");
    else
        rc = bench(!strcmp(argv[1], "double"), atoi(argv[2]), argc > 3 ? atoi(argv[3]) : 9);
    MPI_Finalize();
    return rc;
}
