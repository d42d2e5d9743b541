/*
 * band_cpu.c: the CPU's band matrix passes (backend.h: tide_band_pass). The out rows are cut
 * into tiles handed to the threads (OpenMP); a thread copies the rows its tile needs at step
 * 0 (the tile grown by s kl above and s ku below) into the first of its two buffers and runs
 * the s steps between them, each on a range that shrinks by kl and ku (temporal blocking, as
 * the GPU's kernel does in shared memory), so x is read once and written once per pass and the
 * steps run in cache. Each row is tide.h's sum: 0, then one fma per term in increasing column
 * order, written with fma()/fmaf() so no compiler contraction can change it; where the CPU
 * has FMA instructions a copy compiled for them inlines and vectorizes those calls, with the
 * same bits.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include "backend/backend.h"

/* Out rows per tile: enough that the s (kl + ku) rows a tile recomputes stay a small share. */
enum { TILE_ROWS = 4096 };

typedef struct {
    int threads, tile;
    size_t per_thread; /* bytes of one thread's two buffers */
    char *mem;
    int fma;           /* the CPU has FMA instructions (and AVX2) */
} cpu_band;

/* The CPU's choice of steps per pass. */
enum { CPU_STEPS = 8 };

int tide_cpu_band_create(const tide_env *e, tide_band_pass *b, int steps, char *err,
                         size_t len)
{
    size_t elem = b->dbl ? sizeof(double) : sizeof(float);
    int k = steps ? steps : CPU_STEPS;
    int threads = e->threads < 1 ? 1 : e->threads;
    cpu_band *c = calloc(1, sizeof *c);
    size_t width = (size_t)TILE_ROWS + (size_t)k * (size_t)(b->kl + b->ku);
    size_t per_thread = 2 * width * elem;
    char *mem = malloc((size_t)threads * per_thread);
    if (!c || !mem) {
        free(c);
        free(mem);
        return snprintf(err, len, "out of memory for the band passes' work memory (%zu bytes)",
                        (size_t)threads * per_thread), TIDE_ERR_NOMEM;
    }
    c->threads = threads, c->tile = TILE_ROWS, c->per_thread = per_thread, c->mem = mem;
    __builtin_cpu_init();
    c->fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    b->state = c;
    b->max_steps = k;
    b->state_bytes = (size_t)threads * per_thread;
    return TIDE_SUCCESS;
}

void tide_cpu_band_destroy(const tide_env *e, tide_band_pass *b)
{
    (void)e;
    cpu_band *c = b->state;
    if (c)
        free(c->mem);
    free(c);
    b->state = NULL;
}

static inline int imax(int a, int b) { return a > b ? a : b; }
static inline int imin(int a, int b) { return a < b ? a : b; }

/* Rows [lo, hi) of one step: out[i - base] = the sum of row i over u (row j at u[j - base]),
 * tide.h's order. The rows go in chunks that stay in L1 while every diagonal adds its term to
 * each of them, diagonal after diagonal in increasing d (so each row still sums its terms in
 * increasing column order, from 0): the inner loop runs along a diagonal, contiguous in the
 * matrix, u and out, so the compiler vectorizes it where fma is an instruction. */
enum { CHUNK = 512 };

#define BAND_ROWS(NAME, ATTR, T, F)                                                             \
    ATTR static void NAME(const tide_band_pass *b, const T *restrict u, T *restrict out,       \
                          int lo, int hi, int base)                                            \
    {                                                                                          \
        const T *restrict diag = b->diag;                                                      \
        int kl = b->kl, ku = b->ku, rows = b->rows;                                            \
        for (int c0 = lo; c0 < hi; c0 += CHUNK) {                                              \
            int c1 = imin(c0 + CHUNK, hi);                                                     \
            for (int i = c0; i < c1; i++)                                                      \
                out[i - base] = 0;                                                             \
            for (int d = -kl; d <= ku; d++) {                                                  \
                const T *restrict dg = diag + (size_t)(d + kl) * (size_t)rows;                 \
                int a = imax(c0, -d), z = imin(c1, rows - d); /* column i + d in the array */ \
                for (int i = a; i < z; i++)                                                    \
                    out[i - base] = F(dg[i], u[i + d - base], out[i - base]);                  \
            }                                                                                  \
        }                                                                                      \
    }

BAND_ROWS(rows_d, , double, fma)
BAND_ROWS(rows_f, , float, fmaf)
/* The same where the CPU has FMA instructions: the compiler inlines fma() and vectorizes. */
BAND_ROWS(rows_d_fma, __attribute__((target("avx2,fma"))), double, fma)
BAND_ROWS(rows_f_fma, __attribute__((target("avx2,fma"))), float, fmaf)

typedef void rows_d_fn(const tide_band_pass *, const double *, double *, int, int, int);
typedef void rows_f_fn(const tide_band_pass *, const float *, float *, int, int, int);

/* One tile [a, z) of out rows: s steps from src into dst through the buffers u and v (buffer
 * index q holds array row q + base), each step on a range that shrinks by kl and ku. */
#define BAND_TILE(NAME, T, FN)                                                                  \
    static void NAME(const tide_band_pass *b, FN *rows_of, const T *src, T *dst, int a, int z, \
                     int s, T *u, T *v)                                                        \
    {                                                                                          \
        int kl = b->kl, ku = b->ku, rows = b->rows;                                            \
        int base = imax(0, a - s * kl), top = imin(rows, z + s * ku);                          \
        memcpy(u, src + base, (size_t)(top - base) * sizeof(T));                               \
        for (int t = 1; t <= s; t++) {                                                         \
            int lo = imax(0, a - (s - t) * kl), hi = imin(rows, z + (s - t) * ku);             \
            rows_of(b, u, t == s ? dst + base : v, lo, hi, base);                              \
            T *w = u;                                                                          \
            u = v, v = w;                                                                      \
        }                                                                                      \
    }

BAND_TILE(tile_d, double, rows_d_fn)
BAND_TILE(tile_f, float, rows_f_fn)

int tide_cpu_band(const tide_env *e, const tide_band_pass *b, const void *src, void *dst,
                  int steps)
{
    (void)e;
    const cpu_band *c = b->state;
    if (steps < 1 || steps > b->max_steps || !c)
        return TIDE_ERR_ARGUMENT;
    size_t elem = b->dbl ? sizeof(double) : sizeof(float);
    int span = b->out_hi - b->out_lo;
    int tiles = span > 0 ? (span + c->tile - 1) / c->tile : 0;
    size_t half = c->per_thread / 2 / elem;
#pragma omp parallel for num_threads(c->threads) schedule(dynamic)
    for (int k = 0; k < tiles; k++) {
        char *m = c->mem + (size_t)omp_get_thread_num() * c->per_thread;
        int a = b->out_lo + k * c->tile, z = imin(a + c->tile, b->out_hi);
        if (b->dbl)
            tile_d(b, c->fma ? rows_d_fma : rows_d, src, dst, a, z, steps, (double *)m,
                   (double *)m + half);
        else
            tile_f(b, c->fma ? rows_f_fma : rows_f, src, dst, a, z, steps, (float *)m,
                   (float *)m + half);
    }
    return TIDE_SUCCESS;
}
