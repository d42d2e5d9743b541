/*
 * stencil_span.c: the CPU's inner loop of a stencil update (stencil_span.h): a span of columns
 * of output rows, each point from its taps in order, one product then one fused
 * multiply-add each, then the source's add (tide.h's arithmetic, so the result is bitwise the
 * reference's); or, for the 27-point box with class-constant weights, the class form
 * (backend.h): pair sums in each plane of x, three short multiply-add chains, their sum. Where
 * the CPU has AVX-512 (else AVX2 and FMA) the span goes several vectors of columns at a time,
 * in independent accumulators, so that the taps' chains of multiply-adds, each as long as the
 * stencil has taps, overlap in the FMA units; elsewhere point by point with the C library's
 * fmaf and fma, the same results. Every operation is an explicit one (the build's C17 mode
 * does not contract a product and a sum into one).
 */
#include <math.h>
#include <stddef.h>
#include <immintrin.h>
#include "backend/stencil_span.h"

/* ---- one point, or one vector of points ------------------------------------------------- */

/* The tap form at element `at` of each tap's row into ACC: a product, then a multiply-add per
 * further tap. */
#define TAP_POINT(V, LOAD, SET1, MUL, FMADD, ADD, ACC)                                           \
    do {                                                                                         \
        ACC = MUL(SET1(w[0]), LOAD(p[0] + at));                                                  \
        for (int i = 1; i < nt; i++)                                                             \
            ACC = FMADD(SET1(w[i]), LOAD(p[i] + at), ACC);                                       \
    } while (0)

/* The class form (backend.h) at element `at` into ACC: p[9 (a + 1) + 3 (b + 1) + c + 1] is the
 * row of u(a, b, c) (user offsets), w the weights centre, face, edge, corner. Plane a's nine
 * rows are p[j .. j + 8], j = 9 (a + 1), u(a, b, c)'s at j + 3 (b + 1) + c + 1. */
#define CLASS_POINT(V, LOAD, SET1, MUL, FMADD, ADD, ACC)                                         \
    do {                                                                                         \
        V s_[3];                                                                                 \
        for (int a_ = 0; a_ < 3; a_++) {                                                         \
            int j = 9 * a_, m = a_ == 1; /* m: the middle plane, one class nearer the centre */ \
            V vm = ADD(LOAD(p[j] + at), LOAD(p[j + 6] + at));                                    \
            V v0 = ADD(LOAD(p[j + 1] + at), LOAD(p[j + 7] + at));                                \
            V vp = ADD(LOAD(p[j + 2] + at), LOAD(p[j + 8] + at));                                \
            V f = ADD(v0, ADD(LOAD(p[j + 3] + at), LOAD(p[j + 5] + at))), k = ADD(vm, vp);       \
            s_[a_] = FMADD(SET1(w[3 - m]), k,                                                    \
                           FMADD(SET1(w[2 - m]), f, MUL(SET1(w[1 - m]), LOAD(p[j + 4] + at)))); \
        }                                                                                        \
        ACC = ADD(ADD(s_[0], s_[1]), s_[2]);                                                     \
    } while (0)

/* ---- point by point ---------------------------------------------------------------------- */

#define S_LOAD(x) (*(x))
#define S_SET1(x) (x)
#define S_MUL(x, y) ((x) * (y))
#define S_ADD(x, y) ((x) + (y))

#define SPAN_SCALAR(NAME, T, FMA, POINT)                                                         \
    static void NAME(int nt, const T *const *p, const T *w, const T *src, T *out, int a, int e,  \
                     int rows, ptrdiff_t pin, ptrdiff_t psrc, ptrdiff_t pout)                    \
    {                                                                                            \
        (void)nt;                                                                                \
        for (int y = 0; y < rows; y++)                                                           \
            for (int c = a; c < e; c++) {                                                        \
                ptrdiff_t at = y * pin + c;                                                      \
                T acc;                                                                           \
                POINT(T, S_LOAD, S_SET1, S_MUL, FMA, S_ADD, acc);                                \
                out[y * pout + c] = src ? acc + src[y * psrc + c] : acc;                         \
            }                                                                                    \
    }
SPAN_SCALAR(span_f, float, fmaf, TAP_POINT)
SPAN_SCALAR(span_d, double, fma, TAP_POINT)
SPAN_SCALAR(class_f, float, fmaf, CLASS_POINT)
SPAN_SCALAR(class_d, double, fma, CLASS_POINT)

/* ---- AVX2 and FMA, AVX-512 -------------------------------------------------------------- */

/* The K vectors of acc, columns from c of row y, plus the source's, to out. */
#define STORE_BLOCK(T, V, W, LOAD, STORE, ADD, K)                                                \
    do {                                                                                         \
        T *o = out + y * pout + c;                                                               \
        const T *sr = src ? src + y * psrc + c : NULL;                                           \
        for (int k = 0; k < K; k++)                                                              \
            STORE(o + k * W, sr ? ADD(acc[k], LOAD(sr + k * W)) : acc[k]);                       \
    } while (0)

/* The tap form's K vectors of columns from c of row y, the taps in the outer loop so that the
 * K chains of multiply-adds are independent and overlap. */
#define TAP_BLOCK(T, V, W, LOAD, STORE, SET1, MUL, FMADD, ADD, K)                                \
    do {                                                                                         \
        ptrdiff_t at = y * pin + c;                                                              \
        V acc[K], wv = SET1(w[0]);                                                               \
        for (int k = 0; k < K; k++)                                                              \
            acc[k] = MUL(wv, LOAD(p[0] + at + k * W));                                           \
        for (int i = 1; i < nt; i++) {                                                           \
            wv = SET1(w[i]);                                                                     \
            const T *q = p[i] + at;                                                              \
            for (int k = 0; k < K; k++)                                                          \
                acc[k] = FMADD(wv, LOAD(q + k * W), acc[k]);                                     \
        }                                                                                        \
        STORE_BLOCK(T, V, W, LOAD, STORE, ADD, K);                                               \
    } while (0)

/* The class form's K vectors of columns from c of row y, one after the other (a point's three
 * chains are independent already). */
#define CLASS_BLOCK(T, V, W, LOAD, STORE, SET1, MUL, FMADD, ADD, K)                              \
    do {                                                                                         \
        V acc[K];                                                                                \
        for (int k = 0; k < K; k++) {                                                            \
            ptrdiff_t at = y * pin + c + k * W;                                                  \
            CLASS_POINT(V, LOAD, SET1, MUL, FMADD, ADD, acc[k]);                                 \
        }                                                                                        \
        STORE_BLOCK(T, V, W, LOAD, STORE, ADD, K);                                               \
    } while (0)

/* Each row's span in blocks of CHAINS vectors of W columns, then of one vector; the last
 * vector's columns ending at e (recomputing the same values for a few columns) where the
 * span is a vector wide or more, else point by point (SCALAR). */
#define SPAN_VEC(NAME, ISA, BLK, CHAINS, T, V, W, LOAD, STORE, SET1, MUL, FMADD, ADD, SCALAR)   \
    __attribute__((target(ISA))) static void NAME(                                              \
        int nt, const T *const *p, const T *w, const T *src, T *out, int a, int e, int rows,    \
        ptrdiff_t pin, ptrdiff_t psrc, ptrdiff_t pout)                                          \
    {                                                                                            \
        if (e - a < W) {                                                                         \
            SCALAR(nt, p, w, src, out, a, e, rows, pin, psrc, pout);                             \
            return;                                                                              \
        }                                                                                        \
        (void)nt;                                                                                \
        for (int y = 0; y < rows; y++) {                                                         \
            int c = a;                                                                           \
            for (; c + CHAINS * W <= e; c += CHAINS * W)                                         \
                BLK(T, V, W, LOAD, STORE, SET1, MUL, FMADD, ADD, CHAINS);                        \
            for (; c + W <= e; c += W)                                                           \
                BLK(T, V, W, LOAD, STORE, SET1, MUL, FMADD, ADD, 1);                             \
            if (c < e) {                                                                         \
                c = e - W;                                                                       \
                BLK(T, V, W, LOAD, STORE, SET1, MUL, FMADD, ADD, 1);                             \
            }                                                                                    \
        }                                                                                        \
    }

/* The tap form: eight chains of 256-bit vectors, four of 512-bit ones, 64 floats or 32
 * doubles a block, enough independent multiply-adds to cover the FMA units' latency (measured
 * best of 1, 2, 4 and 8 on one core with the rows in L1). The class form's chains are short
 * and a point's three are independent: two vectors a block. */
#define SPANS(ISA, SUF, TAPS, CLASSES, VF, VD, WF, WD, P)                                        \
    SPAN_VEC(span_f_##SUF, ISA, TAP_BLOCK, TAPS, float, VF, WF, P##_loadu_ps, P##_storeu_ps,    \
             P##_set1_ps, P##_mul_ps, P##_fmadd_ps, P##_add_ps, span_f)                          \
    SPAN_VEC(span_d_##SUF, ISA, TAP_BLOCK, TAPS, double, VD, WD, P##_loadu_pd, P##_storeu_pd,   \
             P##_set1_pd, P##_mul_pd, P##_fmadd_pd, P##_add_pd, span_d)                          \
    SPAN_VEC(class_f_##SUF, ISA, CLASS_BLOCK, CLASSES, float, VF, WF, P##_loadu_ps,             \
             P##_storeu_ps, P##_set1_ps, P##_mul_ps, P##_fmadd_ps, P##_add_ps, class_f)          \
    SPAN_VEC(class_d_##SUF, ISA, CLASS_BLOCK, CLASSES, double, VD, WD, P##_loadu_pd,            \
             P##_storeu_pd, P##_set1_pd, P##_mul_pd, P##_fmadd_pd, P##_add_pd, class_d)
SPANS("avx2,fma", avx2, 8, 2, __m256, __m256d, 8, 4, _mm256)
SPANS("avx512f", avx512, 4, 2, __m512, __m512d, 16, 8, _mm512)

void tide_stencil_spans(int classes, tide_stencil_span_f **f, tide_stencil_span_d **d)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        *f = classes ? class_f_avx512 : span_f_avx512;
        *d = classes ? class_d_avx512 : span_d_avx512;
    } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        *f = classes ? class_f_avx2 : span_f_avx2;
        *d = classes ? class_d_avx2 : span_d_avx2;
    } else {
        *f = classes ? class_f : span_f;
        *d = classes ? class_d : span_d;
    }
}
