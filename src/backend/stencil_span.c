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
 * does not contract a product and a sum into one). Also the class form's plane pass, which
 * makes a plane's sums once for the three planes that read them (stencil_span.h).
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
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

/* ---- the stars along rows, AVX-512 (stencil_span.h) ------------------------------------- */

/* Lanes [lo - d, hi - d) of a vector of W columns from column d, as a mask. */
static inline unsigned lanes(int d, int lo, int hi, int W)
{
    int l = lo - d > 0 ? lo - d : 0, h = hi - d < W ? hi - d : W;
    return h <= l ? 0u : ((1u << h) - 1u) & ~((1u << l) - 1u);
}

/* The centre row's columns from d - k (PREV, from the vectors at d - W and d) or from d + k
 * (NEXT, from those at d and d + W), k = 1 .. 4 < W, by a lane shift (SHIFT(hi, lo, n): lanes
 * n .. n + W - 1 of lo then hi). The choice on k, a constant, leaves each shift's count the
 * immediate the instruction needs. */
#define PREV(SHIFT, W, at, before, k)                                                            \
    ((k) == 1   ? SHIFT(at, before, W - 1)                                                       \
     : (k) == 2 ? SHIFT(at, before, W - 2)                                                       \
     : (k) == 3 ? SHIFT(at, before, W - 3)                                                       \
                : SHIFT(at, before, W - 4))
#define NEXT(SHIFT, W, after, at, k)                                                             \
    ((k) == 1 ? SHIFT(after, at, 1) : (k) == 2 ? SHIFT(after, at, 2)                             \
     : (k) == 3 ? SHIFT(after, at, 3) : SHIFT(after, at, 4))

/* K vectors of columns from d of row y of a star of radius R: cv[j] holds the centre row's
 * vector from d + (j - 1) W (j = 0 .. K + 1), r[i] slot i's row. Each point's chain in slot
 * order: the centre's product, then for each k = 1 .. R the multiply-adds of slots 6k - 5 ..
 * 6k - 2 (loads at d from their rows) and of slots 6k - 1 and 6k (the centre row's columns
 * c - k and c + k, shifted out of cv); the K chains interleaved, tap by tap, so that they
 * overlap in the FMA units. Then the source's add and the stores (around the caches where nt_
 * says so). FULL 0: one vector (K 1), its loads and store masked to the span's columns by m. */
#define STAR_BLOCK(T, V, W, R, LOADU, MLOAD, STOREU, MSTORE, STREAM, MUL, FMADD, ADD, SHIFT, K, \
                   FULL)                                                                         \
    do {                                                                                         \
        V acc_[K];                                                                               \
        for (int j = 0; j < K; j++)                                                              \
            acc_[j] = MUL(wv[0], cv[j + 1]);                                                     \
        for (int k = 1; k <= R; k++) {                                                           \
            for (int i = 6 * k - 5; i < 6 * k - 1; i++)                                          \
                for (int j = 0; j < K; j++)                                                      \
                    acc_[j] = FMADD(wv[i], FULL ? LOADU(r[i] + d + j * W) : MLOAD(m, r[i] + d), \
                                    acc_[j]);                                                    \
            for (int j = 0; j < K; j++)                                                          \
                acc_[j] = FMADD(wv[6 * k - 1], PREV(SHIFT, W, cv[j + 1], cv[j], k), acc_[j]);   \
            for (int j = 0; j < K; j++)                                                          \
                acc_[j] = FMADD(wv[6 * k], NEXT(SHIFT, W, cv[j + 2], cv[j + 1], k), acc_[j]);   \
        }                                                                                        \
        for (int j = 0; j < K; j++) {                                                            \
            if (sr)                                                                              \
                acc_[j] = ADD(acc_[j], FULL ? LOADU(sr + d + j * W) : MLOAD(m, sr + d));         \
            if (FULL && nt_)                                                                     \
                STREAM(o + d + j * W, acc_[j]);                                                  \
            else if (FULL)                                                                       \
                STOREU(o + d + j * W, acc_[j]);                                                  \
            else                                                                                 \
                MSTORE(o + d, m, acc_[j]);                                                       \
        }                                                                                        \
    } while (0)

/* A span of the star of radius R (stencil_span.h: its arguments are a span's, the slot count
 * 6 R + 1, and pf, pfb: row y also prefetches into the L2 the pfb bytes from pf + y pfb on, a
 * cache line a vector; pf NULL: none): slots 6k - 5 .. 6k - 2 read rows at their own columns,
 * slots 6k - 1 and 6k the centre row's (slot 0's) columns c - k and c + k (the built-in stars
 * and star:R in the documented tap order with the user's z the fastest dimension). Vectors of
 * W columns go where out's row is aligned, so that the stores and, in rows laid out alike (the
 * sweep's rings), the loads stay within a cache line; NT: whole vectors at 64-byte aligned
 * addresses are stored around the caches (non-temporal), then a fence orders them before
 * whatever reads out next. The centre row's neighbour columns come from the vectors before and
 * after by lane shifts instead of 2 R loads across cache lines. Inside the span K vectors go
 * at once (independent chains, 6 R + 1 multiply-adds long), its ends one vector at a time.
 * Loads of the centre row take its columns [a - R, e + R), the others' [a, e) (masked at the
 * span's ends, where nothing outside them is touched); each point's operations are the tap
 * form's, in slot order, so the results are span_f's. */
#define STAR_SPAN(NAME, T, V, W, R, K, MASK, LOADU, MLOAD, STOREU, MSTORE, STREAM, SET1, MUL,   \
                  FMADD, ADD, SHIFT, SCALAR, NT)                                                 \
    __attribute__((target("avx512f"))) static void NAME(                                        \
        const T *const *p, const T *w, const T *src, T *out, int a, int e, int rows,            \
        ptrdiff_t pin, ptrdiff_t psrc, ptrdiff_t pout, const char *pf, size_t pfb)              \
    {                                                                                            \
        if (e - a < W) {                                                                         \
            SCALAR(6 * R + 1, p, w, src, out, a, e, rows, pin, psrc, pout);                      \
            return;                                                                              \
        }                                                                                        \
        V wv[6 * R + 1];                                                                         \
        for (int i = 0; i < 6 * R + 1; i++)                                                      \
            wv[i] = SET1(w[i]);                                                                  \
        for (int y = 0; y < rows; y++) {                                                         \
            const T *r[6 * R + 1], *c = p[0] + y * pin;                                          \
            for (int i = 0; i < 6 * R + 1; i++)                                                  \
                r[i] = p[i] + y * pin;                                                           \
            const T *sr = src ? src + y * psrc : NULL;                                           \
            T *o = out + y * pout;                                                               \
            const char *f = pf ? pf + y * pfb : NULL;                                            \
            size_t nf = pf ? pfb / 64 : 0; /* lines left to prefetch */                          \
            int d = a - (int)((uintptr_t)(o + a) % (W * sizeof(T)) / sizeof(T));                \
            int nt_ = NT && (uintptr_t)(o + d) % 64 == 0;                                        \
            V cv[K + 2];                                                                         \
            MASK m = (MASK)lanes(d - W, a - R, e + R, W);                                        \
            cv[0] = MLOAD(m, c + d - W);                                                         \
            m = (MASK)lanes(d, a - R, e + R, W);                                                 \
            cv[1] = MLOAD(m, c + d);                                                             \
            while (d < e) {                                                                      \
                int n = 1; /* vectors done */                                                    \
                if (d >= a && d + K * W <= e && d + (K + 1) * W <= e + R) {                      \
                    for (int j = 2; j < K + 2; j++)                                              \
                        cv[j] = LOADU(c + d + (j - 1) * W);                                      \
                    STAR_BLOCK(T, V, W, R, LOADU, MLOAD, STOREU, MSTORE, STREAM, MUL, FMADD,     \
                               ADD, SHIFT, K, 1);                                                \
                    n = K;                                                                       \
                } else {                                                                         \
                    if (d + 2 * W <= e + R)                                                      \
                        cv[2] = LOADU(c + d + W);                                                \
                    else                                                                         \
                        m = (MASK)lanes(d + W, a - R, e + R, W), cv[2] = MLOAD(m, c + d + W);   \
                    if (d >= a && d + W <= e) {                                                  \
                        STAR_BLOCK(T, V, W, R, LOADU, MLOAD, STOREU, MSTORE, STREAM, MUL, FMADD, \
                                   ADD, SHIFT, 1, 1);                                            \
                    } else {                                                                     \
                        m = (MASK)lanes(d, a, e, W);                                             \
                        STAR_BLOCK(T, V, W, R, LOADU, MLOAD, STOREU, MSTORE, STREAM, MUL, FMADD, \
                                   ADD, SHIFT, 1, 0);                                            \
                    }                                                                            \
                }                                                                                \
                cv[0] = cv[n], cv[1] = cv[n + 1], d += n * W;                                    \
                for (int j = 0; j < n && nf; j++)                                                \
                    _mm_prefetch(f, _MM_HINT_T1), f += 64, nf--;                                 \
            }                                                                                    \
        }                                                                                        \
        if (NT)                                                                                  \
            _mm_sfence();                                                                        \
    }

#define SHIFT_PS(hi, lo, n)                                                                      \
    _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(hi), _mm512_castps_si512(lo), n))
#define SHIFT_PD(hi, lo, n)                                                                      \
    _mm512_castsi512_pd(_mm512_alignr_epi64(_mm512_castpd_si512(hi), _mm512_castpd_si512(lo), n))
/* The spans of radius R, K vectors at once inside a span, with stores around the caches (NT)
 * or not. */
#define STAR_SPANS(R, K, SUF, NT)                                                                \
    STAR_SPAN(star##R##_f_##SUF, float, __m512, 16, R, K, __mmask16, _mm512_loadu_ps,           \
              _mm512_maskz_loadu_ps, _mm512_storeu_ps, _mm512_mask_storeu_ps, _mm512_stream_ps, \
              _mm512_set1_ps, _mm512_mul_ps, _mm512_fmadd_ps, _mm512_add_ps, SHIFT_PS, span_f,  \
              NT)                                                                                \
    STAR_SPAN(star##R##_d_##SUF, double, __m512d, 8, R, K, __mmask8, _mm512_loadu_pd,           \
              _mm512_maskz_loadu_pd, _mm512_storeu_pd, _mm512_mask_storeu_pd, _mm512_stream_pd, \
              _mm512_set1_pd, _mm512_mul_pd, _mm512_fmadd_pd, _mm512_add_pd, SHIFT_PD, span_d,  \
              NT)
#define STAR_RADIUS(R, K) STAR_SPANS(R, K, avx512, 0) STAR_SPANS(R, K, avx512_nt, 1)
/* Four vectors at once for every star: one vector's chain of 6 R + 1 multiply-adds alone
 * leaves the FMA units waiting on their latency. For star:2 to star:4 (one core, 40 rows of
 * 256 in L2, best of six rounds on the loaded machine) four were 1.25-1.5 times faster than
 * one, two, six and eight within the noise of four or slower; for the 7-point star in the
 * sweep (`tide stencil cpu float 256 256 256 -steps 32 -fuse 8`, two cores) four make 5.8
 * GCell/s against 4.3 with one, two and eight within the noise of four (docs/performance.md). */
STAR_RADIUS(1, 4)
STAR_RADIUS(2, 4)
STAR_RADIUS(3, 4)
STAR_RADIUS(4, 4)

/* ---- the class form's plane pass (stencil_span.h) ----------------------------------------- */

/* Column c of the plane pass, computed: plane p's sums around c from its rows r0, r1, r2
 * (b - 1, b, b + 1; swap: the user's y along the columns, z along the rows), its S and M
 * (backend.h); by mode O = P + S(p) (+ source), Q = S + M(p) and N = S(p), the values PLANE_PUT
 * stores to out, P and S. LD loads one vector (or one value) at an address. */
#define PLANE_CALC(V, LD, MUL, FMADD, ADD, CM, C, CP, O, Q, N)                                  \
    do {                                                                                         \
        V f_, k_;                                                                                \
        if (swap) {                                                                              \
            V v0_ = ADD(LD(r1 + CM), LD(r1 + CP));                                               \
            f_ = ADD(v0_, ADD(LD(r0 + C), LD(r2 + C)));                                          \
            k_ = ADD(ADD(LD(r0 + CM), LD(r0 + CP)), ADD(LD(r2 + CM), LD(r2 + CP)));              \
        } else {                                                                                 \
            V v0_ = ADD(LD(r0 + C), LD(r2 + C));                                                 \
            f_ = ADD(v0_, ADD(LD(r1 + CM), LD(r1 + CP)));                                        \
            k_ = ADD(ADD(LD(r0 + CM), LD(r2 + CM)), ADD(LD(r0 + CP), LD(r2 + CP)));              \
        }                                                                                        \
        PLANE_REST(V, LD, MUL, FMADD, ADD, C, O, Q, N, f_, k_, LD(r1 + C));                     \
    } while (0)

/* The rest of column c from the plane's f and k and u(0, 0, 0): N, Q and O as above. */
#define PLANE_REST(V, LD, MUL, FMADD, ADD, C, O, Q, N, F, K, U)                                  \
    do {                                                                                         \
        V u_ = U;                                                                                \
        N = FMADD(w3, K, FMADD(w2, F, MUL(w1, u_)));                                             \
        if (mode > 0)                                                                            \
            Q = ADD(LD(S + C), FMADD(w2, K, FMADD(w1, F, MUL(w0, u_))));                         \
        if (mode > 1)                                                                            \
            O = src ? ADD(ADD(LD(P + C), N), LD(src + C)) : ADD(LD(P + C), N);                   \
    } while (0)

#define PLANE_PUT(ST, C, O, Q, N)                                                                \
    do {                                                                                         \
        if (mode > 1)                                                                            \
            ST(out + C, O);                                                                      \
        if (mode > 0)                                                                            \
            ST(P + C, Q);                                                                        \
        ST(S + C, N);                                                                            \
    } while (0)

#define S_ST(x, v) (*(x) = (v))

/* Point by point, columns [a, e) of [0, n2), their neighbours' columns taken modulo n2. */
#define PLANE_SCALAR(NAME, T, FMA)                                                               \
    static void NAME(const T *const *r, const T *w, T *S, T *P, T *out, const T *src, int a,     \
                     int e, int n2, int swap, int mode)                                          \
    {                                                                                            \
        const T *r0 = r[0], *r1 = r[1], *r2 = r[2];                                              \
        T w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];                                            \
        for (int c = a; c < e; c++) {                                                            \
            int cm = c > 0 ? c - 1 : n2 - 1, cp = c + 1 < n2 ? c + 1 : 0;                        \
            T o = 0, q = 0, n;                                                                   \
            PLANE_CALC(T, S_LOAD, S_MUL, FMA, S_ADD, cm, c, cp, o, q, n);                        \
            PLANE_PUT(S_ST, c, o, q, n);                                                         \
        }                                                                                        \
    }
PLANE_SCALAR(plane_f, float, fmaf)
PLANE_SCALAR(plane_d, double, fma)

/* Vectors of W columns: the first from a, then those aligned where S is (the sweep aligns its
 * own rows, so that most loads and the stores to its rows stay within a cache line), the last
 * ending at e where it overlaps no vector stored before the one it follows, else the last
 * columns point by point (SCALAR). A vector is stored only once the next one is computed:
 * where two overlap, the second reads P and S as they were, so that both store the same
 * values (P and S are updated in place). The columns [a, e) lie within [1, n2 - 1), so that no
 * neighbour wraps; fewer than W go point by point. The mode and the layout go to the inner
 * loops as constants (the body inlined with each).
 *
 * Where the ISA shifts a vector across lanes (SHIFTS: AVX-512's valign) and the user's y runs
 * along the rows, a run of vectors W apart whose neighbours lie in the row takes the vertical
 * pair sums v = u(-1) + u(1) and the row b values of the vector before and after it (carried
 * from one to the next) and shifts them by a lane (SHIFT(hi, lo, n): lanes n .. n + W - 1 of
 * lo then hi), instead of loading v's and u's neighbours at c - 1 and c + 1, loads that
 * straddle two cache lines: the same sums, so the same values. */
#define PLANE_VEC(NAME, ISA, T, V, W, LOAD, STORE, SET1, MUL, FMADD, ADD, SCALAR, SHIFTS, SHIFT) \
    __attribute__((target(ISA), always_inline)) static inline void NAME##_body(                 \
        const T *const *r, const T *w, V w0, V w1, V w2, V w3, T *S, T *P, T *out, const T *src, \
        int a, int e, int n2, int swap, int mode)                                               \
    {                                                                                            \
        const T *r0 = r[0], *r1 = r[1], *r2 = r[2];                                              \
        int mis = (int)((uintptr_t)(S + a) % (W * sizeof(T)) / sizeof(T));                      \
        int c = a, next = mis ? a + W - mis : a + W, stored = a;                                 \
        V o = SET1(0), q = SET1(0), n, o1 = SET1(0), q1 = SET1(0), n1;                          \
        V vb = SET1(0), vc = SET1(0), ub = SET1(0), uc = SET1(0); /* the run's carried vectors */ \
        int run = -1;                                             /* where they serve next */   \
        PLANE_CALC(V, LOAD, MUL, FMADD, ADD, c - 1, c, c + 1, o, q, n);                          \
        for (;;) {                                                                               \
            int d = next + W <= e ? next : next < e && e - W >= stored ? e - W : -1;            \
            if (d < 0)                                                                           \
                break;                                                                           \
            if (SHIFTS && !swap && d >= W && d + 2 * W <= n2) {                                  \
                if (d != run) {                                                                  \
                    vb = ADD(LOAD(r0 + d - W), LOAD(r2 + d - W)), ub = LOAD(r1 + d - W);         \
                    vc = ADD(LOAD(r0 + d), LOAD(r2 + d)), uc = LOAD(r1 + d);                     \
                }                                                                                \
                V va = ADD(LOAD(r0 + d + W), LOAD(r2 + d + W)), ua = LOAD(r1 + d + W);           \
                V f_ = ADD(vc, ADD(SHIFT(uc, ub, W - 1), SHIFT(ua, uc, 1)));                     \
                V k_ = ADD(SHIFT(vc, vb, W - 1), SHIFT(va, vc, 1));                              \
                PLANE_REST(V, LOAD, MUL, FMADD, ADD, d, o1, q1, n1, f_, k_, uc);                 \
                vb = vc, vc = va, ub = uc, uc = ua, run = d + W;                                 \
            } else                                                                               \
                PLANE_CALC(V, LOAD, MUL, FMADD, ADD, d - 1, d, d + 1, o1, q1, n1);               \
            PLANE_PUT(STORE, c, o, q, n);                                                        \
            stored = c + W, c = d, o = o1, q = q1, n = n1, next = d + W;                         \
        }                                                                                        \
        PLANE_PUT(STORE, c, o, q, n);                                                            \
        if (c + W < e)                                                                           \
            SCALAR(r, w, S, P, out, src, c + W, e, n2, swap, mode);                              \
    }                                                                                            \
    __attribute__((target(ISA))) static void NAME(const T *const *r, const T *w, T *S, T *P,    \
                                                  T *out, const T *src, int a, int e, int n2,   \
                                                  int swap, int mode)                           \
    {                                                                                            \
        if (e - a < W) {                                                                         \
            SCALAR(r, w, S, P, out, src, a, e, n2, swap, mode);                                  \
            return;                                                                              \
        }                                                                                        \
        V w0 = SET1(w[0]), w1 = SET1(w[1]), w2 = SET1(w[2]), w3 = SET1(w[3]);                    \
        if (mode == 0 && swap)                                                                   \
            NAME##_body(r, w, w0, w1, w2, w3, S, P, out, NULL, a, e, n2, 1, 0);                  \
        else if (mode == 0)                                                                      \
            NAME##_body(r, w, w0, w1, w2, w3, S, P, out, NULL, a, e, n2, 0, 0);                  \
        else if (mode == 1 && swap)                                                              \
            NAME##_body(r, w, w0, w1, w2, w3, S, P, out, NULL, a, e, n2, 1, 1);                  \
        else if (mode == 1)                                                                      \
            NAME##_body(r, w, w0, w1, w2, w3, S, P, out, NULL, a, e, n2, 0, 1);                  \
        else if (swap && src)                                                                    \
            NAME##_body(r, w, w0, w1, w2, w3, S, P, out, src, a, e, n2, 1, 2);                   \
        else if (swap)                                                                           \
            NAME##_body(r, w, w0, w1, w2, w3, S, P, out, NULL, a, e, n2, 1, 2);                  \
        else if (src)                                                                            \
            NAME##_body(r, w, w0, w1, w2, w3, S, P, out, src, a, e, n2, 0, 2);                   \
        else                                                                                     \
            NAME##_body(r, w, w0, w1, w2, w3, S, P, out, NULL, a, e, n2, 0, 2);                  \
    }

#define NO_SHIFT(hi, lo, n) ((void)(lo), (hi))
PLANE_VEC(plane_f_avx2, "avx2,fma", float, __m256, 8, _mm256_loadu_ps, _mm256_storeu_ps,
          _mm256_set1_ps, _mm256_mul_ps, _mm256_fmadd_ps, _mm256_add_ps, plane_f, 0, NO_SHIFT)
PLANE_VEC(plane_d_avx2, "avx2,fma", double, __m256d, 4, _mm256_loadu_pd, _mm256_storeu_pd,
          _mm256_set1_pd, _mm256_mul_pd, _mm256_fmadd_pd, _mm256_add_pd, plane_d, 0, NO_SHIFT)
/* ---- the boxes across rows, AVX-512 (stencil_span.h) ------------------------------------- */

/* Input row j (0 .. M + D - 2) of a block of M output rows, at the column shift dz of plane dx
 * (b: the block's rows of tap (dx, 0, dz), at its first column): its K vectors feed each output
 * row m of the block that reads the row, as the tap (dx, j - m, dz). FIRST: the taps of dx 0
 * and dz 0, where the row's own tap (dx, dy, dz) = (0, 0, 0) of output row j is the first of
 * its chain (a product). */
#define BOX_GROUP(T, V, W, D, M, K, LOADU, SET1, MUL, FMADD, j, FIRST)                          \
    do {                                                                                         \
        const T *q_ = b + (j) * pin;                                                             \
        V v_[K];                                                                                 \
        _Pragma("GCC unroll 8") for (int k = 0; k < K; k++) v_[k] = LOADU(q_ + k * W);           \
        _Pragma("GCC unroll 8") for (int m = 0; m < M; m++) {                                    \
            if ((j) - m < 0 || (j) - m >= D)                                                     \
                continue;                                                                        \
            V wv_ = SET1(wx[((j) - m) * D + dz]);                                                \
            _Pragma("GCC unroll 8") for (int k = 0; k < K; k++) acc[m][k] =                      \
                FIRST && (j) == m ? MUL(wv_, v_[k]) : FMADD(wv_, v_[k], acc[m][k]);              \
        }                                                                                        \
    } while (0)

/* A span of the box of radius R in lexicographic tap order (stencil_span.h: tap (dx, dy, dz),
 * each from 0 to D - 1 = 2 R, in slot (dx D + dy) D + dz, the plane, row and column offsets
 * slowest to fastest). Each point's chain of D^3 multiply-adds takes its taps in slot order, as
 * the tap form's span does; but M output rows go at once, so that a vector loaded from an input
 * row feeds the up to D rows of the block that read it (M K independent chains in all, K
 * vectors of columns a row): a tap's load serves D multiply-adds instead of one. That holds
 * where the taps' rows of a plane and column shift are consecutive rows of one array (slot
 * (dx, dy, dz)'s row dy pin on from slot (dx, 0, dz)'s, as in the sweep's rings and grids away
 * from a periodic face), else the tap form's span (TAPS) makes the span, the same results, as
 * it does spans of fewer than M rows or K W columns. The last block of rows and of columns ends
 * at the span's end, making a few rows or columns again (the same values). */
#define BOX_SPAN(NAME, T, V, W, R, M, K, LOADU, STOREU, SET1, MUL, FMADD, ADD, TAPS)            \
    __attribute__((target("avx512f"))) static void NAME(                                        \
        int nt, const T *const *p, const T *w, const T *src, T *out, int a, int e, int rows,    \
        ptrdiff_t pin, ptrdiff_t psrc, ptrdiff_t pout)                                          \
    {                                                                                            \
        enum { D = 2 * R + 1 };                                                                  \
        int alike = rows >= M && e - a >= K * W;                                                 \
        for (int i = 0; i < D * D * D && alike; i++)                                             \
            if (p[i] != p[i - i / D % D * D] + i / D % D * pin)                                  \
                alike = 0;                                                                       \
        if (!alike) {                                                                            \
            TAPS(nt, p, w, src, out, a, e, rows, pin, psrc, pout);                               \
            return;                                                                              \
        }                                                                                        \
        for (int y0 = 0; y0 < rows; y0 += M)                                                     \
            for (int c0 = a; c0 < e; c0 += K * W) {                                              \
                const int y = y0 + M <= rows ? y0 : rows - M;                                    \
                const int c = c0 + K * W <= e ? c0 : e - K * W;                                  \
                V acc[M][K];                                                                     \
                memset(acc, 0, sizeof acc); /* each chain's first tap sets it (FIRST) */        \
                for (int dx = 0; dx < D; dx++) {                                                 \
                    const T *wx = w + dx * D * D;                                                \
                    _Pragma("GCC unroll 16") for (int j = 0; j < M + D - 1; j++) {               \
                        int dz = 0;                                                              \
                        const T *b = p[dx * D * D] + y * pin + c;                                \
                        if (dx == 0)                                                             \
                            BOX_GROUP(T, V, W, D, M, K, LOADU, SET1, MUL, FMADD, j, 1);          \
                        else                                                                     \
                            BOX_GROUP(T, V, W, D, M, K, LOADU, SET1, MUL, FMADD, j, 0);          \
                        for (dz = 1; dz < D; dz++) {                                             \
                            b = p[dx * D * D + dz] + y * pin + c;                                \
                            BOX_GROUP(T, V, W, D, M, K, LOADU, SET1, MUL, FMADD, j, 0);          \
                        }                                                                        \
                    }                                                                            \
                }                                                                                \
                _Pragma("GCC unroll 8") for (int m = 0; m < M; m++) {                            \
                    T *o = out + (y + m) * pout + c;                                             \
                    const T *sr = src ? src + (y + m) * psrc + c : NULL;                         \
                    _Pragma("GCC unroll 8") for (int k = 0; k < K; k++)                          \
                        STOREU(o + k * W, sr ? ADD(acc[m][k], LOADU(sr + k * W)) : acc[m][k]);   \
                }                                                                                \
            }                                                                                    \
    }

#define BOX_SPANS(R, M, K)                                                                       \
    BOX_SPAN(box##R##_f_avx512, float, __m512, 16, R, M, K, _mm512_loadu_ps, _mm512_storeu_ps,  \
             _mm512_set1_ps, _mm512_mul_ps, _mm512_fmadd_ps, _mm512_add_ps, span_f_avx512)       \
    BOX_SPAN(box##R##_d_avx512, double, __m512d, 8, R, M, K, _mm512_loadu_pd,                   \
             _mm512_storeu_pd, _mm512_set1_pd, _mm512_mul_pd, _mm512_fmadd_pd, _mm512_add_pd,   \
             span_d_avx512)
BOX_SPANS(1, 4, 2)
BOX_SPANS(2, 4, 2)
BOX_SPANS(3, 4, 2)
BOX_SPANS(4, 4, 2)

PLANE_VEC(plane_f_avx512, "avx512f", float, __m512, 16, _mm512_loadu_ps, _mm512_storeu_ps,
          _mm512_set1_ps, _mm512_mul_ps, _mm512_fmadd_ps, _mm512_add_ps, plane_f, 1, SHIFT_PS)
PLANE_VEC(plane_d_avx512, "avx512f", double, __m512d, 8, _mm512_loadu_pd, _mm512_storeu_pd,
          _mm512_set1_pd, _mm512_mul_pd, _mm512_fmadd_pd, _mm512_add_pd, plane_d, 1, SHIFT_PD)

void tide_stencil_planes(tide_stencil_plane_f **f, tide_stencil_plane_d **d,
                         tide_stencil_plane_f **f1, tide_stencil_plane_d **d1)
{
    __builtin_cpu_init();
    *f1 = plane_f, *d1 = plane_d;
    if (__builtin_cpu_supports("avx512f"))
        *f = plane_f_avx512, *d = plane_d_avx512;
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        *f = plane_f_avx2, *d = plane_d_avx2;
    else
        *f = plane_f, *d = plane_d;
}

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

/* Whether this CPU runs the spans of radius R of their own (the stars', the boxes'): AVX-512
 * and R = 1 .. 4. */
static int own_spans(int radius)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && radius >= 1 && radius <= 4;
}

void tide_stencil_star_spans(int radius, int stream, tide_stencil_star_f **f,
                             tide_stencil_star_d **d)
{
    static tide_stencil_star_f *const fs[4][2] = {{star1_f_avx512, star1_f_avx512_nt},
                                                  {star2_f_avx512, star2_f_avx512_nt},
                                                  {star3_f_avx512, star3_f_avx512_nt},
                                                  {star4_f_avx512, star4_f_avx512_nt}};
    static tide_stencil_star_d *const ds[4][2] = {{star1_d_avx512, star1_d_avx512_nt},
                                                  {star2_d_avx512, star2_d_avx512_nt},
                                                  {star3_d_avx512, star3_d_avx512_nt},
                                                  {star4_d_avx512, star4_d_avx512_nt}};
    int ok = own_spans(radius);
    *f = ok ? fs[radius - 1][!!stream] : NULL;
    *d = ok ? ds[radius - 1][!!stream] : NULL;
}

void tide_stencil_box_spans(int radius, tide_stencil_span_f **f, tide_stencil_span_d **d)
{
    static tide_stencil_span_f *const fs[4] = {box1_f_avx512, box2_f_avx512, box3_f_avx512,
                                               box4_f_avx512};
    static tide_stencil_span_d *const ds[4] = {box1_d_avx512, box2_d_avx512, box3_d_avx512,
                                               box4_d_avx512};
    int ok = own_spans(radius);
    *f = ok ? fs[radius - 1] : NULL;
    *d = ok ? ds[radius - 1] : NULL;
}
