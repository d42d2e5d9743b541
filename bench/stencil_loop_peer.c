/*
 * stencil_loop_peer.c: the untiled OpenMP loop that `tide stencil` on the CPU is compared
 * against (bench/compare-cpu): one step per pass over memory, rows shared among the threads,
 * the innermost loop along the fastest dimension left to the compiler's vectorizer (this file
 * is built with -O3 -march=native). The arithmetic is Tide's (docs/api.md): for the 7-point
 * stencil and the user shapes star:R and box:R (`tide stencil`'s taps and weights, from
 * tide_ref_stencil_binomial_taps) a product, then one fused multiply-add per further tap in
 * order; for the 27-point one, whose default weights take one value per class, the class form
 * (pair sums in each plane of x, three chains of a product and two multiply-adds, their sum);
 * the boundary points (r of each face, Dirichlet, r the radius) keeping their values; so on
 * the same input the result is bitwise Tide's.
 *
 *   stencil_loop_peer <float|double> NX NY NZ [-shape 7pt|27pt|star:R|box:R] [-steps S]
 *                     [-runs R] [-seed S] [-no-check]
 *
 * The input is `tide stencil`'s (apps/reference.c: tide_ref_fill with the same seed). Up to
 * 2^21 points the result of S steps is checked bitwise against the naive serial oracle
 * (tide_ref_stencil). Prints the keys `tide stencil` prints (Time per run, Throughput), the
 * median of R runs after one warm-up run; threads: OMP_NUM_THREADS.
 */
#include <math.h>
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "reference.h"
#include "tide.h"

/* One step from u into v on the interior points (r of each face kept); off: the taps' offsets
 * in elements, a compile-time count NT of them, as a user writing out a given stencil would
 * have it; the column loop vectorized (omp simd), the tap loop inside it unrolled. */
#define LOOP(NAME, T, NT, FMA)                                                                   \
    static void NAME(const int n[3], int r, const long long *off, const T *w, const T *u, T *v) \
    {                                                                                            \
        long long plane = (long long)n[1] * n[2];                                                \
        _Pragma("omp parallel for collapse(2) schedule(static)")                                 \
        for (int x = r; x < n[0] - r; x++)                                                       \
            for (int y = r; y < n[1] - r; y++) {                                                 \
                const T *in = u + x * plane + (long long)y * n[2];                               \
                T *out = v + x * plane + (long long)y * n[2];                                    \
                _Pragma("omp simd")                                                              \
                for (int z = r; z < n[2] - r; z++) {                                             \
                    T acc = w[0] * in[z + off[0]];                                               \
                    _Pragma("GCC unroll 32")                                                     \
                    for (int i = 1; i < NT; i++)                                                 \
                        acc = FMA(w[i], in[z + off[i]], acc);                                    \
                    out[z] = acc;                                                                \
                }                                                                                \
            }                                                                                    \
    }
/* The box of radius R ((2R+1)^3 taps, dx slowest, dz fastest) one row of taps at a time: for
 * each (dx, dy), the 2R + 1 taps along dz chained onto the output row, the first row starting
 * with the product, so each point's operations stay in the tap order. The column loop inside
 * is a chain of 2R + 1 loads and multiply-adds, which the compiler vectorizes; a whole chain
 * of 125 or more taps for each point is not vectorized by GCC (too many memory references for
 * its dependence analysis), so this is the form a user gets vectorized for box:2..4. */
#define LOOP_ROWS(NAME, T, R, FMA)                                                               \
    static void NAME(const int n[3], int r, const long long *off, const T *w, const T *u, T *v) \
    {                                                                                            \
        enum { K = 2 * R + 1 };                                                                  \
        long long plane = (long long)n[1] * n[2];                                                \
        _Pragma("omp parallel for collapse(2) schedule(static)")                                 \
        for (int x = r; x < n[0] - r; x++)                                                       \
            for (int y = r; y < n[1] - r; y++) {                                                 \
                const T *in = u + x * plane + (long long)y * n[2];                               \
                T *out = v + x * plane + (long long)y * n[2];                                    \
                for (int t = 0; t < K * K * K; t += K) {                                         \
                    const long long *o = off + t;                                                \
                    const T *wt = w + t;                                                         \
                    _Pragma("omp simd")                                                          \
                    for (int z = r; z < n[2] - r; z++) {                                         \
                        T acc = t ? FMA(wt[0], in[z + o[0]], out[z]) : wt[0] * in[z + o[0]];     \
                        _Pragma("GCC unroll 9")                                                  \
                        for (int i = 1; i < K; i++)                                              \
                            acc = FMA(wt[i], in[z + o[i]], acc);                                 \
                        out[z] = acc;                                                            \
                    }                                                                            \
                }                                                                                \
            }                                                                                    \
    }

/* 7pt and star:1 (7 taps), star:2..4 (13, 19, 25), box:1 (27): each point's chain whole;
 * box:2..4 (125, 343, 729 taps) a row of taps at a time */
#define LOOPS(NT)                                                                                \
    LOOP(loop##NT##_f, float, NT, fmaf)                                                          \
    LOOP(loop##NT##_d, double, NT, fma)
#define LOOPS_ROWS(NT, R)                                                                        \
    LOOP_ROWS(loop##NT##_f, float, R, fmaf)                                                      \
    LOOP_ROWS(loop##NT##_d, double, R, fma)
LOOPS(7)
LOOPS(13)
LOOPS(19)
LOOPS(25)
LOOPS(27)
LOOPS_ROWS(125, 2)
LOOPS_ROWS(343, 3)
LOOPS_ROWS(729, 4)

typedef void loop_f(const int *, int, const long long *, const float *, const float *, float *);
typedef void loop_d(const int *, int, const long long *, const double *, const double *,
                    double *);

/* The tap-order loop for nt taps, float (f) and double (d); 0 for another count. */
static int tap_loop(int nt, loop_f **f, loop_d **d)
{
#define CASE(NT)                                                                                 \
    case NT:                                                                                     \
        *f = loop##NT##_f, *d = loop##NT##_d;                                                    \
        return 1;
    switch (nt) {
        CASE(7) CASE(13) CASE(19) CASE(25) CASE(27) CASE(125) CASE(343) CASE(729)
    }
#undef CASE
    return 0;
}

/* One step of the 27-point class form from u into v on the interior points: off[9 (a + 1) +
 * 3 (b + 1) + c + 1] the offset in elements of u(a, b, c), cw the weights centre, face, edge,
 * corner; the column loop vectorized (omp simd). */
#define LOOP_CLASS(NAME, T, FMA)                                                                 \
    static void NAME(const int n[3], const long long *off, const T *cw, const T *u, T *v)        \
    {                                                                                            \
        long long plane = (long long)n[1] * n[2];                                                \
        _Pragma("omp parallel for collapse(2) schedule(static)")                                 \
        for (int x = 1; x < n[0] - 1; x++)                                                       \
            for (int y = 1; y < n[1] - 1; y++) {                                                 \
                const T *in = u + x * plane + (long long)y * n[2];                               \
                T *out = v + x * plane + (long long)y * n[2];                                    \
                _Pragma("omp simd")                                                              \
                for (int z = 1; z < n[2] - 1; z++) {                                             \
                    T s[3];                                                                      \
                    _Pragma("GCC unroll 3")                                                      \
                    for (int a = 0; a < 3; a++) {                                                \
                        const T *p = in + z;                                                     \
                        const long long *o = off + 9 * a;                                        \
                        T vm = p[o[0]] + p[o[6]], v0 = p[o[1]] + p[o[7]];                        \
                        T vp = p[o[2]] + p[o[8]];                                                \
                        T f = v0 + (p[o[3]] + p[o[5]]), k = vm + vp;                             \
                        const T *c = a == 1 ? cw : cw + 1; /* the middle plane's centre */       \
                        s[a] = FMA(c[2], k, FMA(c[1], f, c[0] * p[o[4]]));                       \
                    }                                                                            \
                    out[z] = (s[0] + s[1]) + s[2];                                               \
                }                                                                                \
            }                                                                                    \
    }
LOOP_CLASS(class27_f, float, fmaf)
LOOP_CLASS(class27_d, double, fma)

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int usage(void)
{
    fprintf(stderr, "usage: stencil_loop_peer <float|double> NX NY NZ "
                    "[-shape 7pt|27pt|star:R|box:R] [-steps S] [-runs R] [-seed S] "
                    "[-no-check]\n");
    return 2;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv); /* tide_ref_fill's box type; one rank */
    if (argc < 5)
        return usage();
    int dbl = !strcmp(argv[1], "double"), n[3], steps = 20, runs = 5, check = 1;
    unsigned seed = 2026;
    tide_stencil_shape shape = TIDE_STENCIL_7PT;
    int radius = 1;
    const char *shape_name = "7pt";
    if (!dbl && strcmp(argv[1], "float"))
        return usage();
    for (int d = 0; d < 3; d++)
        n[d] = atoi(argv[2 + d]);
    for (int i = 5; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-no-check"))
            check = 0;
        else if (!v)
            return usage();
        else if (!strcmp(a, "-shape") && (!strcmp(v, "7pt") || !strcmp(v, "27pt")))
            shape = !strcmp(v, "7pt") ? TIDE_STENCIL_7PT : TIDE_STENCIL_27PT, shape_name = v, i++;
        else if (!strcmp(a, "-shape") && (!strncmp(v, "star:", 5) || !strncmp(v, "box:", 4)) &&
                 (radius = atoi(strchr(v, ':') + 1)) >= 1 && radius <= TIDE_STENCIL_MAX_RADIUS)
            shape = v[0] == 's' ? TIDE_STENCIL_STAR : TIDE_STENCIL_BOX, shape_name = v, i++;
        else if (!strcmp(a, "-steps") && (steps = atoi(v)) >= 0)
            i++;
        else if ((!strcmp(a, "-runs") || !strcmp(a, "-n")) && (runs = atoi(v)) >= 1)
            i++;
        else if (!strcmp(a, "-seed"))
            seed = (unsigned)strtoul(v, NULL, 10), i++;
        else
            return usage();
    }
    for (int d = 0; d < 3; d++)
        if (n[d] < 2 * radius + 1 || n[d] > 100000)
            return fprintf(stderr, "stencil_loop_peer: sizes 2R+1 = %d to 100000\n",
                           2 * radius + 1), 2;
    enum { MAXT = (2 * TIDE_STENCIL_MAX_RADIUS + 1) * (2 * TIDE_STENCIL_MAX_RADIUS + 1) *
                  (2 * TIDE_STENCIL_MAX_RADIUS + 1) };
    static int taps[MAXT][3];
    static double wd[MAXT];
    static float wf[MAXT];
    static long long off[MAXT];
    int class_form = shape == TIDE_STENCIL_27PT; /* the default weights: one a class */
    int nt = shape == TIDE_STENCIL_7PT || class_form
                 ? tide_ref_stencil_taps(shape, NULL, taps, wd)
                 : tide_ref_stencil_binomial_taps(shape, radius, taps, wd);
    loop_f *tap_f = NULL;
    loop_d *tap_d = NULL;
    if (!class_form && !tap_loop(nt, &tap_f, &tap_d))
        return fprintf(stderr, "stencil_loop_peer: no loop for %d taps\n", nt), 1;
    for (int i = 0; i < nt; i++) {
        off[i] = ((long long)taps[i][0] * n[1] + taps[i][1]) * n[2] + taps[i][2];
        wf[i] = (float)wd[i];
    }
    /* 27 points: the default weights of the taps (0,0,0), (-1,0,0), (-1,-1,0), (-1,-1,-1), one
     * per class */
    double cwd[4] = {wd[13 % nt], wd[4], wd[1], wd[0]};
    float cwf[4] = {(float)cwd[0], (float)cwd[1], (float)cwd[2], (float)cwd[3]};
    size_t count = (size_t)n[0] * n[1] * n[2], es = dbl ? sizeof(double) : sizeof(float);
    char *u0 = malloc(count * es), *a = malloc(count * es), *b = malloc(count * es);
    if (!u0 || !a || !b)
        return fprintf(stderr, "stencil_loop_peer: out of memory\n"), 1;
    tide_box box = {{0, 0, 0}, {n[0], n[1], n[2]}, {0, 1, 2}};
    tide_ref_fill(u0, &box, 1, 0, dbl ? TIDE_DOUBLE : TIDE_FLOAT, n, seed);

    double *t = malloc(sizeof(double) * (size_t)(runs + 1));
    char *result = NULL;
    for (int r = 0; r <= runs; r++) { /* run 0: the warm-up */
        memcpy(a, u0, count * es), memcpy(b, u0, count * es); /* both: the boundary */
        char *from = a, *to = b;
        double t0 = omp_get_wtime();
        for (int s = 0; s < steps; s++) {
            if (class_form && dbl)
                class27_d(n, off, cwd, (double *)from, (double *)to);
            else if (class_form)
                class27_f(n, off, cwf, (float *)from, (float *)to);
            else if (dbl)
                tap_d(n, radius, off, wd, (double *)from, (double *)to);
            else
                tap_f(n, radius, off, wf, (float *)from, (float *)to);
            char *x = from;
            from = to, to = x;
        }
        t[r] = omp_get_wtime() - t0;
        result = from;
    }
    qsort(t + 1, (size_t)runs, sizeof(double), cmp);
    double med = t[1 + runs / 2];
    printf("Peer: untiled OpenMP loop, %s %s %dx%dx%d, %d steps, %d threads\n",
           shape_name, dbl ? "double" : "float", n[0], n[1],
           n[2], steps, omp_get_max_threads());
    int bad = 0;
    if (check && count <= (1u << 21)) {
        tide_bc bc[3] = {TIDE_BC_DIRICHLET, TIDE_BC_DIRICHLET, TIDE_BC_DIRICHLET};
        tide_ref_stencil(n, dbl, shape, nt, (const int(*)[3])taps, wd, bc, NULL, u0, steps);
        size_t diff = 0;
        for (size_t i = 0; i < count; i++)
            diff += memcmp(u0 + i * es, result + i * es, es) != 0;
        printf("Verification: %s (%zu of %zu points differ from the serial oracle)\n",
               diff ? "FAILED" : "passed", diff, count);
        bad = diff != 0;
    } else {
        printf("Verification: not checked (%s)\n", check ? "above 2^21 points" : "-no-check");
    }
    printf("Time per run: %.6g (s) (median of %d)\n", med, runs);
    printf("Throughput: %.6g GCell/s (%zu points x %d steps / time per run)\n",
           (double)count * steps / med / 1e9, count, steps);
    free(u0), free(a), free(b), free(t);
    MPI_Finalize();
    return bad;
}
