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

/* Stops every rank when a Tide call failed (a collective call fails alike on every rank;
 * MPI_Abort also ends a rank that did not see the failure). ctx NULL: a call without one. */
static void check(int status, const tide_context *ctx)
{
    if (status != TIDE_SUCCESS) {
        fprintf(stderr, "example_slab: %s: %s\n", tide_strerror(status), tide_last_error(ctx));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int n[3] = {64, 64, 64}, rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &P);
    tide_context *ctx;   check(tide_context_create(MPI_COMM_WORLD, NULL, &ctx), NULL);
    tide_box slab;       check(tide_box_slab(n, 0, P, rank, &slab), NULL);  /* x cut over P ranks */
    tide_fft_options o;  tide_fft_options_init(&o);  o.scaling = TIDE_SCALE_FULL;
    tide_fft_plan *plan; check(tide_fft_plan_create(ctx, n, &slab, &slab, &o, &plan), ctx);
    tide_fft_info info;  check(tide_fft_plan_info(plan, &info), ctx);
    double complex *a = malloc(info.inplace_bytes);
    for (long long i = 0; i < info.in_count; i++)                      /* the slab, C order */
        a[i] = sin(0.001 * (double)(i + rank * info.in_count)) + I * cos(0.002 * (double)i);
    check(tide_fft_forward(plan, a, a), ctx);                /* in place */
    check(tide_fft_backward(plan, a, a), ctx);               /* a is back, scaled by 1/N */

    double err = 0;                                    /* the largest error, NaN if one is */
    for (long long i = 0; i < info.in_count; i++) {
        double complex x = sin(0.001 * (double)(i + rank * info.in_count)) +
                           I * cos(0.002 * (double)i);
        double e = cabs(a[i] - x);
        err = isnan(e) || e > err ? e : err;
    }
    double m[2] = {isnan(err) ? 0 : err, isnan(err)};  /* MPI_MAX need not keep a NaN */
    MPI_Allreduce(MPI_IN_PLACE, m, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    err = m[1] ? NAN : m[0];
    if (rank == 0)
        printf("example_slab: %d ranks, round-trip max error %.3g\n", P, err);
    free(a);
    check(tide_fft_plan_destroy(plan), ctx);  check(tide_context_destroy(ctx), NULL);
    MPI_Finalize();
    return err < 1e-12 ? 0 : 1;
}
