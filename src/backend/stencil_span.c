/*
 * stencil_span.c: the CPU's inner loop of a stencil update (stencil_span.h): a span of columns
 * of output rows, each point from its taps in order, one product then one fused
 * multiply-add each, then the source's add (tide.h's arithmetic, so the result is bitwise the
 * reference's). Where the CPU has AVX-512 (else AVX2 and FMA) the span goes 64 floats (32
 * doubles) at a time in four (eight) independent accumulators, so that the taps' chains of
 * multiply-adds, each as long as the stencil has taps, overlap in the FMA units; elsewhere
 * point by point with the C library's fmaf and fma, the same results.
 */
#include <math.h>
#include <stddef.h>
#include <immintrin.h>
#include "backend/stencil_span.h"

/* ---- point by point ---------------------------------------------------------------------- */

#define SPAN_SCALAR(NAME, T, FMA)                                                                \
    static void NAME(int nt, const T *const *p, const T *w, const T *src, T *out, int a, int e,  \
                     int rows, ptrdiff_t pin, ptrdiff_t psrc, ptrdiff_t pout)                    \
    {                                                                                            \
        for (int y = 0; y < rows; y++)                                                           \
            for (int c = a; c < e; c++) {                                                        \
                ptrdiff_t at = y * pin + c;                                                      \
                T acc = w[0] * p[0][at];                                                         \
                for (int i = 1; i < nt; i++)                                                     \
                    acc = FMA(w[i], p[i][at], acc);                                              \
                out[y * pout + c] = src ? acc + src[y * psrc + c] : acc;                         \
            }                                                                                    \
    }
SPAN_SCALAR(span_f, float, fmaf)
SPAN_SCALAR(span_d, double, fma)

/* ---- AVX2 and FMA, AVX-512 -------------------------------------------------------------- */

/* K vectors of columns from c of row y: their taps' products and multiply-adds, then the
 * source. */
#define BLOCK(T, V, W, LOAD, STORE, SET1, MUL, FMADD, ADD, K)                                    \
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
        T *o = out + y * pout + c;                                                               \
        const T *sr = src ? src + y * psrc + c : NULL;                                           \
        for (int k = 0; k < K; k++)                                                              \
            STORE(o + k * W, sr ? ADD(acc[k], LOAD(sr + k * W)) : acc[k]);                       \
    } while (0)

/* Each row's span in blocks of CHAINS vectors of W columns, then of one vector; the last
 * vector's columns ending at e (recomputing the same values for a few columns) where the
 * span is a vector wide or more, else point by point. */
#define SPAN_VEC(NAME, ISA, CHAINS, T, V, W, LOAD, STORE, SET1, MUL, FMADD, ADD, SCALAR)        \
    __attribute__((target(ISA))) static void NAME(                                              \
        int nt, const T *const *p, const T *w, const T *src, T *out, int a, int e, int rows,    \
        ptrdiff_t pin, ptrdiff_t psrc, ptrdiff_t pout)                                          \
    {                                                                                            \
        if (e - a < W) {                                                                         \
            SCALAR(nt, p, w, src, out, a, e, rows, pin, psrc, pout);                             \
            return;                                                                              \
        }                                                                                        \
        for (int y = 0; y < rows; y++) {                                                         \
            int c = a;                                                                           \
            for (; c + CHAINS * W <= e; c += CHAINS * W)                                         \
                BLOCK(T, V, W, LOAD, STORE, SET1, MUL, FMADD, ADD, CHAINS);                      \
            for (; c + W <= e; c += W)                                                           \
                BLOCK(T, V, W, LOAD, STORE, SET1, MUL, FMADD, ADD, 1);                           \
            if (c < e) {                                                                         \
                c = e - W;                                                                       \
                BLOCK(T, V, W, LOAD, STORE, SET1, MUL, FMADD, ADD, 1);                           \
            }                                                                                    \
        }                                                                                        \
    }

/* Eight chains of 256-bit vectors, four of 512-bit ones: 64 floats or 32 doubles a block,
 * enough independent multiply-adds to cover the FMA units' latency (measured best of 1, 2, 4
 * and 8 on one core with the rows in L1). */
SPAN_VEC(span_f_avx2, "avx2,fma", 8, float, __m256, 8, _mm256_loadu_ps, _mm256_storeu_ps,
         _mm256_set1_ps, _mm256_mul_ps, _mm256_fmadd_ps, _mm256_add_ps, span_f)
SPAN_VEC(span_d_avx2, "avx2,fma", 8, double, __m256d, 4, _mm256_loadu_pd, _mm256_storeu_pd,
         _mm256_set1_pd, _mm256_mul_pd, _mm256_fmadd_pd, _mm256_add_pd, span_d)
SPAN_VEC(span_f_avx512, "avx512f", 4, float, __m512, 16, _mm512_loadu_ps, _mm512_storeu_ps,
         _mm512_set1_ps, _mm512_mul_ps, _mm512_fmadd_ps, _mm512_add_ps, span_f)
SPAN_VEC(span_d_avx512, "avx512f", 4, double, __m512d, 8, _mm512_loadu_pd, _mm512_storeu_pd,
         _mm512_set1_pd, _mm512_mul_pd, _mm512_fmadd_pd, _mm512_add_pd, span_d)

void tide_stencil_spans(tide_stencil_span_f **f, tide_stencil_span_d **d)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        *f = span_f_avx512, *d = span_d_avx512;
    } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        *f = span_f_avx2, *d = span_d_avx2;
    } else {
        *f = span_f, *d = span_d;
    }
}
