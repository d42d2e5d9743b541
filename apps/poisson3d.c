/*
 * poisson3d.c: solve a periodic 3D Helmholtz problem with Tide, a starting point to copy into an
 * MPI code. Built beside `tide` and run by the tests (tests/test_app.sh):
 *
 *   mpirun -np 2 build/apps/poisson3d [neumann]
 *
 * The problem: lap(u) - alpha u = f on the periodic box [0, 2 pi)^3 with n points per side.
 * We pick f so that the answer is known: with u = sin(x) cos(2y) sin(z), lap(u) = -6 u, so
 * f = -(6 + alpha) u. Tide's default operator is the 7-point finite-difference Laplacian, whose
 * solution differs from that u by the discretisation error (under 1% on this grid).
 *
 * With `neumann`, z is bounded by two walls of zero normal derivative at z = 0 and 2 pi instead
 * of periodic. Along a bounded dimension the grid is cell-centred (point z at (z + 1/2) h), and
 * u = sin(x) cos(2y) cos(z) meets the walls' condition, with the same lap(u) = -6 u.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tide.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    const double pi = 3.14159265358979323846, alpha = 1.0;
    int n[3] = {32, 32, 32};
    int neumann = argc == 2 && !strcmp(argv[1], "neumann");
    if (argc > 2 || (argc == 2 && !neumann)) { /* the same argv, so every rank stops */
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np P poisson3d [neumann]\n");
        MPI_Finalize();
        return 2;
    }

    /* 1. A context: one per communicator. NULL options: the backend is chosen automatically
     *    (the GPU when every rank has one, else the CPU). Collective, like every call below that
     *    takes the context or a plan, except the local queries (info, mean). */
    tide_context *ctx;
    if (tide_context_create(MPI_COMM_WORLD, NULL, &ctx)) {
        fprintf(stderr, "poisson3d: %s\n", tide_last_error(NULL));
        MPI_Finalize();
        return 1;
    }

    /* 2. This rank's part of the grid: here x-slabs, x cut into P blocks, y and z whole, in C
     *    order (z contiguous). Any boxes that tile the grid work; NULL lets Tide choose. */
    tide_box slab;
    tide_box_slab(n, 0, P, rank, &slab);

    /* 3. Options: init fills the defaults (double precision, periodic boundaries, h = 1,
     *    alpha = 0, host arrays), then set what differs. The grid spacing makes the box 2 pi
     *    long; alpha > 0 makes the problem non-singular (with alpha = 0 Tide removes f's mean
     *    and returns the u of zero mean). */
    tide_poisson_options o;
    tide_poisson_options_init(&o);
    o.alpha = alpha;
    for (int d = 0; d < 3; d++)
        o.h[d] = 2 * pi / n[d];
    if (neumann) /* z's low and high faces; Dirichlet (zero value) is TIDE_BC_DIRICHLET */
        o.bc[2][0] = o.bc[2][1] = TIDE_BC_NEUMANN;

    /* 4. The plan: all checking, allocation and FFT planning happen here. A refused request
     *    fails on every rank with the same message, so every rank takes the same exit. */
    tide_poisson_plan *plan;
    if (tide_poisson_plan_create(ctx, n, &slab, &o, &plan)) {
        if (rank == 0)
            fprintf(stderr, "poisson3d: %s\n", tide_last_error(ctx));
        tide_context_destroy(ctx);
        MPI_Finalize();
        return 1;
    }
    tide_poisson_info info;
    tide_poisson_plan_info(plan, &info); /* info.count points here, info.bytes bytes */

    /* 5. f on this rank's slab: point (x, y, z) of the global grid sits at (x h, y h, z h)
     *    ((z + 1/2) h with neumann) and is element ((x - lo_x) * ny + (y - lo_y)) * nz +
     *    (z - lo_z) of the slab. umax[1] keeps max |u| of the exact u on the grid. */
    double *a = malloc(info.bytes ? info.bytes : 1), umax[2] = {0, 0};
    int ny = slab.hi[1] - slab.lo[1], nz = slab.hi[2] - slab.lo[2];
    for (int x = slab.lo[0]; x < slab.hi[0]; x++)
        for (int y = slab.lo[1]; y < slab.hi[1]; y++)
            for (int z = slab.lo[2]; z < slab.hi[2]; z++) {
                double gz = neumann ? cos((z + 0.5) * o.h[2]) : sin(z * o.h[2]);
                double u = sin(x * o.h[0]) * cos(2 * y * o.h[1]) * gz;
                a[((long)(x - slab.lo[0]) * ny + (y - slab.lo[1])) * nz + (z - slab.lo[2])] =
                    -(6 + alpha) * u;
                umax[1] = fmax(umax[1], fabs(u));
            }

    /* 6. Solve in place: a holds f on entry, u on return. Out of place (f, u distinct), f is
     *    left untouched. */
    int st = tide_poisson_solve(plan, a, a);
    if (st && rank == 0)
        fprintf(stderr, "poisson3d: %s\n", tide_last_error(ctx));

    /* 7. Results: the mean of f Tide saw (tide_poisson_mean, one value per field of a batch:
     *    it tells a singular problem how far f was from solvable), and max |u| over all ranks,
     *    which should be the exact u's up to the discretisation error. A NaN anywhere makes
     *    max |u| NaN (fmax and MPI_MAX would drop it), and the check below fails. */
    double mean = 0;
    tide_poisson_mean(plan, &mean);
    for (long long i = 0; i < info.count; i++)
        umax[0] = isnan(a[i]) || fabs(a[i]) > umax[0] ? fabs(a[i]) : umax[0];
    double m[3] = {isnan(umax[0]), isnan(umax[0]) ? 0 : umax[0], umax[1]};
    MPI_Allreduce(MPI_IN_PLACE, m, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    umax[0] = m[0] > 0 ? NAN : m[1];
    umax[1] = m[2];
    if (rank == 0 && !st)
        printf("poisson3d: %d ranks, %dx%dx%d%s, alpha %g: mean of f %.3g, max |u| %.6f "
               "(exact %.6f)\n", P, n[0], n[1], n[2], neumann ? ", Neumann z" : "", alpha, mean,
               umax[0], umax[1]);

    /* 8. Clean up: plans before their context. */
    free(a);
    tide_poisson_plan_destroy(plan);
    tide_context_destroy(ctx);
    MPI_Finalize();
    return !st && fabs(umax[0] - umax[1]) < 0.02 ? 0 : 1;
}
