/*
 * example_slab.c: the README's example, built and run by the tests. Each rank transforms its
 * own x-slab forward and back in place and checks that it got its data back.
 *
 *   mpirun -np 2 build/apps/example_slab
 */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "tide.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int n[3] = {64, 64, 64}, rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &P);
    tide_context *ctx;   tide_context_create(MPI_COMM_WORLD, NULL, &ctx);
    tide_box slab;       tide_box_slab(n, 0, P, rank, &slab);           /* x cut over P ranks */
    tide_fft_options o;  tide_fft_options_init(&o);  o.scaling = TIDE_SCALE_FULL;
    tide_fft_plan *plan;
    if (tide_fft_plan_create(ctx, n, &slab, &slab, &o, &plan)) {         /* same error on every rank */
        fprintf(stderr, "%s\n", tide_last_error(ctx));
        MPI_Finalize();
        return 1;
    }
    tide_fft_info info;  tide_fft_plan_info(plan, &info);
    double complex *a = malloc(info.inplace_bytes);
    for (long long i = 0; i < info.in_count; i++)                      /* the slab, C order */
        a[i] = sin(0.001 * (double)(i + rank * info.in_count)) + I * cos(0.002 * (double)i);
    tide_fft_forward(plan, a, a);  tide_fft_backward(plan, a, a);      /* a is back, scaled by 1/N */

    double err = 0;
    for (long long i = 0; i < info.in_count; i++) {
        double complex x = sin(0.001 * (double)(i + rank * info.in_count)) + I * cos(0.002 * (double)i);
        err = fmax(err, cabs(a[i] - x));
    }
    MPI_Allreduce(MPI_IN_PLACE, &err, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("example_slab: %d ranks, round-trip max error %.3g\n", P, err);
    free(a);
    tide_fft_plan_destroy(plan);  tide_context_destroy(ctx);
    MPI_Finalize();
    return err < 1e-12 ? 0 : 1;
}
