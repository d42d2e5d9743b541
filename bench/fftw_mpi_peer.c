/*
 * fftw_mpi_peer: FFTW's own distributed 3D C2C transform (libfftw3-mpi), the CPU peer Tide is
 * compared against. Timed exactly like `tide fft`:
 *
 *   fftw_mpi_peer c2c <float|double> NX NY NZ [-transposed] [-n RUNS] [-measure|-estimate]
 *
 * Out of place: forward in -> out, backward out -> back (a third array), so the input is never
 * touched by the backward transform. FFTW's out-of-place MPI transforms preserve their input by
 * default (no FFTW_DESTROY_INPUT), as Tide's do. With -transposed the forward plan uses
 * FFTW_MPI_TRANSPOSED_OUT and the backward FFTW_MPI_TRANSPOSED_IN (one exchange less each).
 *
 * One warm-up forward+backward, then RUNS iterations of: barrier, t0, forward, backward, t1.
 * A run's time is the max over ranks of (t1 - t0) / 2, i.e. one transform. `Time per run:` is the
 * median of the runs. Flops: 5 N log2 N per transform. Max error: round trip
 * backward(forward(x)) / N against x, max |difference| over max |x|, both over all ranks.
 * Output keys follow heFFTe's speed3d.
 */
#include <fftw3-mpi.h>
#include <mpi.h>

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* ---- the two precisions behind one interface ---------------------------------------------- */

typedef struct {
    const char *name;
    size_t elem_bytes; /* bytes of one complex element */
    const char *version;
    void (*init)(void);
    void (*cleanup)(void);
    ptrdiff_t (*local_size)(const ptrdiff_t n[3], MPI_Comm comm, int transposed, ptrdiff_t *ln0,
                            ptrdiff_t *s0, ptrdiff_t *ln1, ptrdiff_t *s1);
    void *(*alloc)(ptrdiff_t count);
    void (*free)(void *p);
    void *(*plan)(const ptrdiff_t n[3], void *in, void *out, MPI_Comm comm, int sign,
                  unsigned flags);
    void (*execute)(void *plan);
    void (*destroy)(void *plan);
} precision_ops;

static ptrdiff_t d_local_size(const ptrdiff_t n[3], MPI_Comm comm, int transposed, ptrdiff_t *ln0,
                              ptrdiff_t *s0, ptrdiff_t *ln1, ptrdiff_t *s1)
{
    if (transposed)
        return fftw_mpi_local_size_3d_transposed(n[0], n[1], n[2], comm, ln0, s0, ln1, s1);
    *ln1 = *s1 = 0;
    return fftw_mpi_local_size_3d(n[0], n[1], n[2], comm, ln0, s0);
}
static void *d_alloc(ptrdiff_t count) { return fftw_alloc_complex((size_t)count); }
static void d_free(void *p) { fftw_free(p); }
static void *d_plan(const ptrdiff_t n[3], void *in, void *out, MPI_Comm comm, int sign,
                    unsigned flags)
{
    return fftw_mpi_plan_dft_3d(n[0], n[1], n[2], in, out, comm, sign, flags);
}
static void d_execute(void *p) { fftw_execute((fftw_plan)p); }
static void d_destroy(void *p) { fftw_destroy_plan((fftw_plan)p); }

static ptrdiff_t f_local_size(const ptrdiff_t n[3], MPI_Comm comm, int transposed, ptrdiff_t *ln0,
                              ptrdiff_t *s0, ptrdiff_t *ln1, ptrdiff_t *s1)
{
    if (transposed)
        return fftwf_mpi_local_size_3d_transposed(n[0], n[1], n[2], comm, ln0, s0, ln1, s1);
    *ln1 = *s1 = 0;
    return fftwf_mpi_local_size_3d(n[0], n[1], n[2], comm, ln0, s0);
}
static void *f_alloc(ptrdiff_t count) { return fftwf_alloc_complex((size_t)count); }
static void f_free(void *p) { fftwf_free(p); }
static void *f_plan(const ptrdiff_t n[3], void *in, void *out, MPI_Comm comm, int sign,
                    unsigned flags)
{
    return fftwf_mpi_plan_dft_3d(n[0], n[1], n[2], in, out, comm, sign, flags);
}
static void f_execute(void *p) { fftwf_execute((fftwf_plan)p); }
static void f_destroy(void *p) { fftwf_destroy_plan((fftwf_plan)p); }

static const precision_ops double_ops = {"double", sizeof(fftw_complex), fftw_version,
                                         fftw_mpi_init, fftw_mpi_cleanup, d_local_size,
                                         d_alloc, d_free, d_plan, d_execute, d_destroy};
static const precision_ops float_ops = {"float", sizeof(fftwf_complex), fftwf_version,
                                        fftwf_mpi_init, fftwf_mpi_cleanup, f_local_size,
                                        f_alloc, f_free, f_plan, f_execute, f_destroy};

/* ---- data ---------------------------------------------------------------------------------- */

/* A value in [-1, 1) that depends only on the seed and the global index, so every rank can
 * regenerate its part of x without keeping a copy. */
static double hashed_uniform(uint64_t seed, uint64_t index)
{
    uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (index + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-52 - 1.0;
}

enum { SEED = 20240611 };

/* x at global point g: non-zero (|re| >= 0.05 always). */
static void x_value(uint64_t g, double *re, double *im)
{
    double a = hashed_uniform(SEED, 2 * g), b = hashed_uniform(SEED, 2 * g + 1);
    *re = a < 0 ? a - 0.05 : a + 0.05;
    *im = b;
}

static void set_elem(void *p, int is_float, size_t i, double re, double im)
{
    if (is_float) {
        ((float *)p)[2 * i] = (float)re;
        ((float *)p)[2 * i + 1] = (float)im;
    } else {
        ((double *)p)[2 * i] = re;
        ((double *)p)[2 * i + 1] = im;
    }
}

static void get_elem(const void *p, int is_float, size_t i, double *re, double *im)
{
    if (is_float) {
        *re = ((const float *)p)[2 * i];
        *im = ((const float *)p)[2 * i + 1];
    } else {
        *re = ((const double *)p)[2 * i];
        *im = ((const double *)p)[2 * i + 1];
    }
}

/* The input is x-slabs in C order: local planes s0 .. s0+ln0-1, each n[1] x n[2]. */
static void fill_input(void *in, int is_float, const ptrdiff_t n[3], ptrdiff_t ln0, ptrdiff_t s0)
{
    size_t count = (size_t)ln0 * (size_t)n[1] * (size_t)n[2];
    uint64_t first = (uint64_t)s0 * (uint64_t)n[1] * (uint64_t)n[2];
    for (size_t i = 0; i < count; ++i) {
        double re, im;
        x_value(first + i, &re, &im);
        set_elem(in, is_float, i, re, im);
    }
}

/* max |back/N - x| and max |x| on this rank. */
static void round_trip_error(const void *back, int is_float, const ptrdiff_t n[3], ptrdiff_t ln0,
                             ptrdiff_t s0, double *max_diff, double *max_x)
{
    size_t count = (size_t)ln0 * (size_t)n[1] * (size_t)n[2];
    uint64_t first = (uint64_t)s0 * (uint64_t)n[1] * (uint64_t)n[2];
    double scale = 1.0 / ((double)n[0] * (double)n[1] * (double)n[2]);
    double md = 0.0, mx = 0.0;
    for (size_t i = 0; i < count; ++i) {
        double xr, xi, br, bi;
        x_value(first + i, &xr, &xi);
        if (is_float) { /* compare with the float input actually transformed */
            xr = (float)xr;
            xi = (float)xi;
        }
        get_elem(back, is_float, i, &br, &bi);
        double d = hypot(br * scale - xr, bi * scale - xi), a = hypot(xr, xi);
        if (!(d <= md)) md = d; /* NaN propagates */
        if (a > mx) mx = a;
    }
    *max_diff = md;
    *max_x = mx;
}

/* ---- helpers ------------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void usage(int rank, const char *prog)
{
    if (rank == 0)
        fprintf(stderr,
                "usage: %s c2c <float|double> NX NY NZ [-transposed] [-n RUNS] "
                "[-measure|-estimate]\n",
                prog);
}

static int parse_positive(const char *s, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v <= 0) return 0;
    *out = v;
    return 1;
}

/* ---- main ---------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm comm = MPI_COMM_WORLD;
    int rank, nranks;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nranks);

    /* arguments (identical on every rank, so every rank takes the same exit) */
    const precision_ops *ops = NULL;
    ptrdiff_t n[3] = {0, 0, 0};
    int transposed = 0, runs = 5;
    unsigned planner = FFTW_MEASURE;
    int ok = argc >= 6 && strcmp(argv[1], "c2c") == 0;
    if (ok) {
        if (strcmp(argv[2], "double") == 0)
            ops = &double_ops;
        else if (strcmp(argv[2], "float") == 0)
            ops = &float_ops;
        else
            ok = 0;
    }
    for (int d = 0; ok && d < 3; ++d) {
        long v = 0;
        ok = parse_positive(argv[3 + d], &v);
        n[d] = (ptrdiff_t)v;
    }
    for (int i = 6; ok && i < argc; ++i) {
        if (strcmp(argv[i], "-transposed") == 0) {
            transposed = 1;
        } else if (strcmp(argv[i], "-measure") == 0) {
            planner = FFTW_MEASURE;
        } else if (strcmp(argv[i], "-estimate") == 0) {
            planner = FFTW_ESTIMATE;
        } else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
            long v = 0;
            ok = parse_positive(argv[++i], &v) && v <= 100000;
            runs = (int)v;
        } else {
            if (rank == 0) fprintf(stderr, "%s: unknown or incomplete option '%s'\n", argv[0], argv[i]);
            ok = 0;
        }
    }
    if (!ok) {
        usage(rank, argv[0]);
        MPI_Finalize();
        return 2;
    }
    const int is_float = ops == &float_ops;

    ops->init();

    ptrdiff_t ln0, s0, ln1, s1;
    ptrdiff_t alloc_local = ops->local_size(n, comm, transposed, &ln0, &s0, &ln1, &s1);
    if (alloc_local < 1) alloc_local = 1; /* ranks without planes still pass valid pointers */
    void *in = ops->alloc(alloc_local), *out = ops->alloc(alloc_local),
         *back = ops->alloc(alloc_local);
    int have = in && out && back, all_have;
    MPI_Allreduce(&have, &all_have, 1, MPI_INT, MPI_MIN, comm);
    if (!all_have) {
        if (rank == 0) fprintf(stderr, "%s: allocation of %td elements failed\n", argv[0], alloc_local);
        MPI_Abort(comm, 1);
    }
    /* Touch all three arrays before planning (first touch, and FFTW_MEASURE overwrites them). */
    memset(in, 0, (size_t)alloc_local * ops->elem_bytes);
    memset(out, 0, (size_t)alloc_local * ops->elem_bytes);
    memset(back, 0, (size_t)alloc_local * ops->elem_bytes);

    MPI_Barrier(comm);
    double tp0 = MPI_Wtime();
    void *fwd = ops->plan(n, in, out, comm, FFTW_FORWARD,
                          planner | (transposed ? FFTW_MPI_TRANSPOSED_OUT : 0u));
    void *bwd = ops->plan(n, out, back, comm, FFTW_BACKWARD,
                          planner | (transposed ? FFTW_MPI_TRANSPOSED_IN : 0u));
    double plan_time = MPI_Wtime() - tp0, plan_time_max;
    MPI_Allreduce(&plan_time, &plan_time_max, 1, MPI_DOUBLE, MPI_MAX, comm);
    have = fwd && bwd;
    MPI_Allreduce(&have, &all_have, 1, MPI_INT, MPI_MIN, comm);
    if (!all_have) {
        if (rank == 0) fprintf(stderr, "%s: FFTW could not create the plans\n", argv[0]);
        MPI_Abort(comm, 1);
    }

    /* Planning with FFTW_MEASURE overwrote the arrays: fill the input now. */
    fill_input(in, is_float, n, ln0, s0);

    /* warm-up */
    ops->execute(fwd);
    ops->execute(bwd);

    double *times = malloc((size_t)runs * sizeof *times);
    double *times_max = malloc((size_t)runs * sizeof *times_max);
    if (!times || !times_max) MPI_Abort(comm, 1);
    for (int r = 0; r < runs; ++r) {
        MPI_Barrier(comm);
        double t0 = MPI_Wtime();
        ops->execute(fwd);
        ops->execute(bwd);
        double t1 = MPI_Wtime();
        times[r] = (t1 - t0) / 2.0;
    }
    MPI_Allreduce(times, times_max, runs, MPI_DOUBLE, MPI_MAX, comm);

    /* Round trip on fresh input (untimed), so the check holds even if the input were modified. */
    fill_input(in, is_float, n, ln0, s0);
    ops->execute(fwd);
    ops->execute(bwd);
    double loc[2], glob[2];
    round_trip_error(back, is_float, n, ln0, s0, &loc[0], &loc[1]);
    MPI_Allreduce(loc, glob, 2, MPI_DOUBLE, MPI_MAX, comm);
    double max_error = glob[1] > 0 ? glob[0] / glob[1] : glob[0];

    /* memory: the three arrays this rank holds; peak resident set for FFTW's own buffers too */
    double mem_mb = 3.0 * (double)alloc_local * (double)ops->elem_bytes / 1e6,
           mem_mb_max;
    MPI_Allreduce(&mem_mb, &mem_mb_max, 1, MPI_DOUBLE, MPI_MAX, comm);
    struct rusage ru;
    double rss_mb = 0.0, rss_mb_max;
    if (getrusage(RUSAGE_SELF, &ru) == 0) rss_mb = (double)ru.ru_maxrss * 1024.0 / 1e6; /* KiB on Linux */
    MPI_Allreduce(&rss_mb, &rss_mb_max, 1, MPI_DOUBLE, MPI_MAX, comm);

    if (rank == 0) {
        qsort(times_max, (size_t)runs, sizeof *times_max, cmp_double);
        double median = runs % 2 ? times_max[runs / 2]
                                  : 0.5 * (times_max[runs / 2 - 1] + times_max[runs / 2]);
        double sum = 0.0;
        for (int r = 0; r < runs; ++r) sum += times_max[r];
        double N = (double)n[0] * (double)n[1] * (double)n[2];
        double flops = 5.0 * N * log2(N);
        printf("Peer: fftw-mpi %s\n", ops->version);
        printf("Transform: c2c %s, out of place, %s\n", ops->name,
               planner == FFTW_MEASURE ? "FFTW_MEASURE" : "FFTW_ESTIMATE");
        printf("Size: %tdx%tdx%td\n", n[0], n[1], n[2]);
        printf("Layout: %s\n", transposed ? "transposed" : "natural");
        printf("Ranks: %d\n", nranks);
        printf("Runs: %d (after 1 warm-up; time = max over ranks of (fwd+bwd)/2)\n", runs);
        printf("Plan creation time: %.6g (s)\n", plan_time_max);
        printf("Time per run: %.6g (s)\n", median);
        printf("Min/Max/Avg: %.6g %.6g %.6g (s)\n", times_max[0], times_max[runs - 1],
               sum / runs);
        printf("Performance: %.4g GFlop/s\n", flops / median * 1e-9);
        printf("Max error: %.3e\n", max_error);
        printf("Memory usage: %.1f MB/rank\n", mem_mb_max);
        printf("Peak RSS: %.2f MB/rank (max over ranks)\n", rss_mb_max);
        fflush(stdout);
    }

    free(times);
    free(times_max);
    ops->destroy(fwd);
    ops->destroy(bwd);
    ops->free(in);
    ops->free(out);
    ops->free(back);
    ops->cleanup();
    MPI_Finalize();
    return 0;
}
