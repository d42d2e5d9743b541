/*
 * pdgemm_peer: ScaLAPACK's distributed DGEMM (pdgemm, Debian's libscalapack-openmpi), the CPU
 * peer of `tide gemm cpu double` on several ranks (SUMMA). Timed like `tide gemm`:
 *
 *   pdgemm_peer M [N K] -grid PxQ [-nb NB] [-n RUNS]
 *
 * C = A B, column major, no transposes, alpha 1, beta 0, on a P x Q BLACS grid (row-major
 * ranks, as `tide gemm -grid`), every matrix NB x NB block-cyclic (NB default 256, the panel
 * width `tide gemm` uses on the CPU). One warm-up multiply, then RUNS of: barrier, t0, pdgemm,
 * t1; a run's time is the largest over the ranks, `Time per run:` the median of the runs.
 * Check: A(i, j) and B(i, j) are functions of the global indices, so each rank recomputes the
 * entries it holds of C's last row and column and of three more rows and columns with a
 * long-double naive sum, and compares in units of the rounding bound K eps sum |a| |b|.
 * Output keys as `tide gemm`'s (heFFTe's speed3d keys).
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void Cblacs_get(int context, int what, int *value);
void Cblacs_gridinit(int *context, const char *order, int rows, int cols);
void Cblacs_gridinfo(int context, int *rows, int *cols, int *row, int *col);
void Cblacs_gridexit(int context);
int Csys2blacs_handle(MPI_Comm comm);
int numroc_(const int *n, const int *nb, const int *iproc, const int *isrc, const int *nprocs);
void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb,
               const int *irsrc, const int *icsrc, const int *ctxt, const int *lld, int *info);
void pdgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
             const double *alpha, const double *a, const int *ia, const int *ja,
             const int *desca, const double *b, const int *ib, const int *jb, const int *descb,
             const double *beta, double *c, const int *ic, const int *jc, const int *descc);

/* Entry (i, j) of matrix `which` (0: A, 1: B), a value in [-1, 1) from a hash of its place. */
static double entry(int which, long long i, long long j)
{
    unsigned long long x = (unsigned long long)(i * 1000003LL + j) * 2654435761ULL + 12345ULL +
                           (unsigned long long)which * 0x9E3779B97F4A7C15ULL;
    x ^= x >> 33, x *= 0xff51afd7ed558ccdULL, x ^= x >> 33;
    return (double)(x >> 11) / 4503599627370496.0 - 1.0; /* 2^52 */
}

/* Global index of local index l in a dimension cut in nb-blocks dealt over np processes. */
static long long global_of(int l, int nb, int p, int np)
{
    return (long long)(l / nb) * nb * np + (long long)p * nb + l % nb;
}

typedef struct {
    int m, n, k, p, q, nb, runs;
} args;

static int usage(int rank, const char *why)
{
    if (rank == 0)
        fprintf(stderr, "pdgemm_peer: %s\nusage: pdgemm_peer M [N K] -grid PxQ [-nb NB] [-n RUNS]\n",
                why);
    return 2;
}

static int parse(int argc, char **argv, int nranks, int rank, args *a)
{
    *a = (args){0, 0, 0, 0, 0, 256, 5};
    int pos[3], npos = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-grid") && i + 1 < argc) {
            if (sscanf(argv[++i], "%dx%d", &a->p, &a->q) != 2)
                return usage(rank, "-grid takes PxQ");
        } else if (!strcmp(argv[i], "-nb") && i + 1 < argc) {
            a->nb = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            a->runs = atoi(argv[++i]);
        } else if (npos < 3 && atoi(argv[i]) > 0) {
            pos[npos++] = atoi(argv[i]);
        } else {
            return usage(rank, "bad argument");
        }
    }
    if (npos != 1 && npos != 3)
        return usage(rank, "give M, or M N K");
    a->m = pos[0], a->n = npos == 3 ? pos[1] : pos[0], a->k = npos == 3 ? pos[2] : pos[0];
    if (a->p * a->q != nranks || a->p < 1 || a->q < 1)
        return usage(rank, "-grid PxQ must have P Q = the ranks");
    if (a->nb < 1 || a->runs < 1)
        return usage(rank, "-nb and -n take positive integers");
    return 0;
}

/* One distributed matrix: rows x cols in nb-blocks, this process's part filled by entry(). */
typedef struct {
    int desc[9], lr, lc;
    double *v;
} dmat;

static int dmat_make(dmat *x, int which, int rows, int cols, int nb, int ctxt, int pr, int pc,
                     int np, int nq)
{
    int zero = 0, info = 0;
    x->lr = numroc_(&rows, &nb, &pr, &zero, &np);
    x->lc = numroc_(&cols, &nb, &pc, &zero, &nq);
    int lld = x->lr > 1 ? x->lr : 1;
    descinit_(x->desc, &rows, &cols, &nb, &nb, &zero, &zero, &ctxt, &lld, &info);
    x->v = calloc((size_t)lld * (size_t)(x->lc > 0 ? x->lc : 1), sizeof(double));
    if (info || !x->v)
        return 1;
    for (int j = 0; j < x->lc && which >= 0; j++)
        for (int i = 0; i < x->lr; i++)
            x->v[(size_t)j * lld + i] =
                entry(which, global_of(i, nb, pr, np), global_of(j, nb, pc, nq));
    return 0;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The sampled entries of C this process holds against the naive sum: the largest error in
 * units of K eps sum |a| |b| (<= 1 passes), over every process. */
static double check(const args *a, const dmat *c, int pr, int pc, int np, int nq)
{
    long long rows[4] = {a->m - 1, a->m / 3, a->m / 7, 0};
    long long cols[4] = {a->n - 1, a->n / 2, a->n / 5, 0};
    double worst = 0;
    int lld = c->desc[8];
    for (int j = 0; j < c->lc; j++)
        for (int i = 0; i < c->lr; i++) {
            long long gi = global_of(i, a->nb, pr, np), gj = global_of(j, a->nb, pc, nq);
            int take = 0;
            for (int s = 0; s < 4; s++)
                take |= gi == rows[s] || gj == cols[s];
            if (!take)
                continue;
            long double sum = 0, mag = 0;
            for (long long k = 0; k < a->k; k++) {
                long double t = (long double)entry(0, gi, k) * entry(1, k, gj);
                sum += t;
                mag += fabsl(t);
            }
            double bound = (double)a->k * 2.220446049250313e-16 * (double)mag;
            double err = fabs((double)((long double)c->v[(size_t)j * lld + i] - sum));
            double units = bound > 0 ? err / bound : err > 0 ? INFINITY : 0;
            worst = units > worst ? units : worst;
        }
    MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    args a;
    int rc = parse(argc, argv, nranks, rank, &a);
    if (rc) {
        MPI_Finalize();
        return rc;
    }
    int ctxt = Csys2blacs_handle(MPI_COMM_WORLD), np, nq, pr, pc;
    Cblacs_gridinit(&ctxt, "Row", a.p, a.q);
    Cblacs_gridinfo(ctxt, &np, &nq, &pr, &pc);
    dmat A, B, C;
    int bad = dmat_make(&A, 0, a.m, a.k, a.nb, ctxt, pr, pc, np, nq) |
              dmat_make(&B, 1, a.k, a.n, a.nb, ctxt, pr, pc, np, nq) |
              dmat_make(&C, -1, a.m, a.n, a.nb, ctxt, pr, pc, np, nq);
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (bad) {
        if (rank == 0)
            fprintf(stderr, "pdgemm_peer: descinit or the allocation failed\n");
        MPI_Finalize();
        return 1;
    }
    if (rank == 0)
        printf("pdgemm_peer: ScaLAPACK pdgemm, double %dx%dx%d (M N K), NN, column major, "
               "%dx%d BLACS grid, %d-blocks cyclic, %d ranks\n", a.m, a.n, a.k, a.p, a.q, a.nb,
               nranks);
    const int one = 1;
    const double alpha = 1, beta = 0;
    double *t = malloc(sizeof(double) * (size_t)a.runs);
    for (int r = -1; r < a.runs; r++) { /* r = -1: the warm-up */
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        pdgemm_("N", "N", &a.m, &a.n, &a.k, &alpha, A.v, &one, &one, A.desc, B.v, &one, &one,
                B.desc, &beta, C.v, &one, &one, C.desc);
        double dt = MPI_Wtime() - t0;
        MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (r >= 0)
            t[r] = dt;
    }
    double err = check(&a, &C, pr, pc, np, nq);
    qsort(t, (size_t)a.runs, sizeof *t, cmp);
    double med = t[a.runs / 2], sum = 0;
    for (int r = 0; r < a.runs; r++)
        sum += t[r];
    if (rank == 0) {
        printf("Time per run: %g (s)\n", med);
        printf("Min/Max/Avg: %g %g %g (s)\n", t[0], t[a.runs - 1], sum / a.runs);
        printf("Performance: %g GFlop/s\n", 2.0 * a.m * a.n * a.k / med / 1e9);
        printf("Max error: %g (units of the rigorous rounding bound; <= 1 passes)\n", err);
        printf("Verification: %s\n", err <= 1 ? "passed" : "FAILED");
    }
    free(t);
    free(A.v), free(B.v), free(C.v);
    Cblacs_gridexit(ctxt);
    MPI_Finalize();
    return err <= 1 ? 0 : 1;
}
