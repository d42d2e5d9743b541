/*
 * test_cpu_fft.c: serial unit test of the CPU backend's plane-by-plane transforms
 * (src/cpu_fft.h, by_planes: each plane staged transposed in a thread's buffer), the CPU's x
 * transforms of a Poisson solve streamed with the seeds' scheme.
 *
 * One transformed dimension t along the planes of another, p, for R2C, C2R and C2C, float and
 * double, on odd, prime and even extents (1 and 2 included), arrays larger than the box (a
 * padded fastest dimension), t the slowest or a middle dimension, 1 to 3 threads. Every
 * result is compared with a naive DFT in double written here from the definition (FFTW's
 * unnormalized transforms: sign -1 forward; C2R reads the half spectrum as Hermitian, the
 * imaginary parts of modes 0 and n/2 ignored), never with FFTW. No MPI is needed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "backend/cpu_fft.h"

static tt_tally tally;

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

typedef struct {
    int n[3];       /* the real grid */
    int t, p;       /* the transformed dimension, the planes' */
    int pad;        /* extra points of the arrays along dimension 2 */
    tide_fft_kind kind;
    tide_precision prec;
    int threads;
} fcase;

/* Element (i, j, k) of an array laid out as box a (C order), real or complex part c. */
static double get(const void *v, const tide_box *a, const int q[3], int cplx, int c,
                  tide_precision prec)
{
    long long i = tt_offset(a, q) * (cplx ? 2 : 1) + c;
    return prec == TIDE_DOUBLE ? ((const double *)v)[i] : ((const float *)v)[i];
}

static void put(void *v, const tide_box *a, const int q[3], int cplx, int c, double x,
                tide_precision prec)
{
    long long i = tt_offset(a, q) * (cplx ? 2 : 1) + c;
    if (prec == TIDE_DOUBLE)
        ((double *)v)[i] = x;
    else
        ((float *)v)[i] = (float)x;
}

/* One case: random input, the transform by planes, the naive DFT of every line along t. */
static void run(const fcase *c, tt_rng *rng)
{
    int t = c->t, n = c->n[t], h = n / 2 + 1;
    int real_in = c->kind == TIDE_KIND_R2C, real_out = c->kind == TIDE_KIND_C2R;
    tide_box ib = {{0, 0, 0}, {c->n[0], c->n[1], c->n[2]}, {0, 1, 2}}, ob = ib;
    if (real_in)
        ob.hi[t] = h;
    if (real_out)
        ib.hi[t] = h;
    tide_box ia = ib, oa = ob;
    ia.hi[2] += c->pad, oa.hi[2] += c->pad;
    size_t s = c->prec == TIDE_DOUBLE ? sizeof(double) : sizeof(float);
    size_t ibytes = (size_t)tide_box_count(&ia) * s * (real_in ? 1 : 2);
    size_t obytes = (size_t)tide_box_count(&oa) * s * (real_out ? 1 : 2);
    void *in = tt_xmalloc(ibytes), *out = tt_xmalloc(obytes), *keep = tt_xmalloc(ibytes);
    memset(out, 0, obytes);
    int q[3];
    for (q[0] = 0; q[0] < ib.hi[0]; q[0]++)
        for (q[1] = 0; q[1] < ib.hi[1]; q[1]++)
            for (q[2] = 0; q[2] < ib.hi[2]; q[2]++)
                for (int k = 0; k < (real_in ? 1 : 2); k++)
                    put(in, &ia, q, !real_in, k, tt_rng_below(rng, 2001) / 1000.0 - 1,
                        c->prec);
    memcpy(keep, in, ibytes);
    tide_cpu_fft_desc d = {.precision = c->prec, .kind = c->kind,
                           .sign = c->kind == TIDE_KIND_C2R ? +1 : -1, .ibox = &ib,
                           .obox = &ob, .iarr = &ia, .oarr = &oa, .dims = {t}, .ndims = 1,
                           .half = t, .real_n = n, .batch = 1, .threads = c->threads,
                           .by_planes = 1, .plane_dim = c->p}; /* planned on its own buffers */
    tide_cpu_fft *f = NULL;
    int st = tide_cpu_fft_create(&d, &f);
    char what[160];
    snprintf(what, sizeof what, "%s %s %dx%dx%d (+%d) t=%c planes of %c, %d threads",
             c->kind == TIDE_KIND_R2C ? "r2c" : c->kind == TIDE_KIND_C2R ? "c2r" : "c2c",
             c->prec == TIDE_DOUBLE ? "double" : "float", c->n[0], c->n[1], c->n[2], c->pad,
             "xyz"[t], "xyz"[c->p], c->threads);
    if (!tt_local(&tally, st == 0 && f, "%s: create returned %d", what, st))
        goto done;
    tide_cpu_fft_execute(f, in, out);
    tide_cpu_fft_destroy(f);
    double worst = 0, scale = 0, tol = (c->prec == TIDE_DOUBLE ? 1e-13 : 2e-6) * n;
    int olen = ob.hi[t];
    for (q[0] = 0; q[0] < ob.hi[0]; q[0]++)
        for (q[1] = 0; q[1] < ob.hi[1]; q[1]++)
            for (q[2] = 0; q[2] < ob.hi[2]; q[2]++) {
                if (q[t])
                    continue; /* one line per (other two) */
                for (int k = 0; k < olen; k++) {
                    double re = 0, im = 0;
                    int src[3] = {q[0], q[1], q[2]};
                    if (real_out) { /* Hermitian: modes 0..n/2 stand for all n */
                        for (int m = 0; m < h; m++) {
                            src[t] = m;
                            double a = get(keep, &ia, src, 1, 0, c->prec);
                            double b = get(keep, &ia, src, 1, 1, c->prec);
                            double w = 2 * M_PI * m * k / n, mult = m == 0 || 2 * m == n ? 1 : 2;
                            re += mult * (a * cos(w) - (m == 0 || 2 * m == n ? 0 : b * sin(w)));
                        }
                    } else {
                        for (int m = 0; m < n; m++) {
                            src[t] = m;
                            double a = get(keep, &ia, src, !real_in, 0, c->prec);
                            double b = real_in ? 0 : get(keep, &ia, src, 1, 1, c->prec);
                            double w = -2 * M_PI * m * k / n;
                            re += a * cos(w) - b * sin(w), im += a * sin(w) + b * cos(w);
                        }
                    }
                    int dst[3] = {q[0], q[1], q[2]};
                    dst[t] = k;
                    double gr = get(out, &oa, dst, !real_out, 0, c->prec);
                    double gi = real_out ? 0 : get(out, &oa, dst, 1, 1, c->prec);
                    worst = tt_max_nan(worst, tt_max_nan(fabs(gr - re), fabs(gi - im)));
                    scale = tt_max_nan(scale, tt_max_nan(fabs(re), fabs(im)));
                }
            }
    double bound = tol * tt_max_nan(scale, 1);
    tt_local(&tally, worst <= bound,
             "%s: largest difference from the naive DFT %.3g (scale %.3g, tol %.3g)", what, worst,
             scale, bound);
done:
    free(in);
    free(out);
    free(keep);
}

int main(void)
{
    static const int sizes[][3] = {{9, 7, 11}, {16, 5, 13}, {17, 12, 1}, {2, 3, 4},
                                   {1, 6, 5},  {31, 2, 33}, {24, 9, 8},  {13, 13, 13}};
    static const tide_fft_kind kinds[] = {TIDE_KIND_R2C, TIDE_KIND_C2R, TIDE_KIND_C2C};
    tt_rng rng;
    tt_rng_seed(&rng, 2026);
    int ncases = 0;
    for (int s = 0; s < 8; s++)
        for (int k = 0; k < 3; k++)
            for (int pr = 0; pr < 2; pr++) {
                int i = (s * 3 + k) * 2 + pr;
                fcase c = {.t = i % 4 == 3 ? 1 : 0, .kind = kinds[k],
                           .prec = pr ? TIDE_FLOAT : TIDE_DOUBLE, .threads = 1 + i % 3,
                           .pad = i % 5 == 2 ? 3 : 0};
                memcpy(c.n, sizes[s], sizeof c.n);
                c.p = c.t == 1 ? 0 : 1 + (i / 2) % 2; /* planes of y or z (x: along y) */
                run(&c, &rng);
                ncases++;
            }
    printf("test_cpu_fft: %d cases\n", ncases);
    return tt_finish_local(&tally, "test_cpu_fft", "checks");
}
