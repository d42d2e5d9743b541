/*
 * band_cpu.c: the CPU's band matrix passes (backend.h: tide_band_pass). The out rows are cut
 * into tiles handed to the threads (OpenMP); a thread copies the rows its tile needs at step
 * 0 (the tile grown by s kl above and s ku below) into the first of its two buffers and runs
 * the s steps between them, each on a range that shrinks by kl and ku (temporal blocking, as
 * the GPU's kernel does in shared memory), so x is read once and written once per pass and the
 * steps run in cache. Each row is tide.h's sum: acc = 0, then one fma per term in increasing
 * column order, written with fma()/fmaf() so no compiler contraction can change it.
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

/* One tile [a, z) of out rows: s steps from src into dst through the buffers u and v, in the
 * precision T (with its fma F). Buffer index q holds array row q + base. */
#define BAND_TILE(NAME, T, F)                                                                   \
    static void NAME(const tide_band_pass *b, const T *src, T *dst, int a, int z, int s,     \
                     T *u, T *v)                                                             \
    {                                                                                        \
        const T *diag = b->diag;                                                             \
        int kl = b->kl, ku = b->ku, rows = b->rows;                                          \
        int base = imax(0, a - s * kl), top = imin(rows, z + s * ku);                        \
        memcpy(u, src + base, (size_t)(top - base) * sizeof(T));                             \
        for (int t = 1; t <= s; t++) {                                                       \
            int lo = imax(0, a - (s - t) * kl), hi = imin(rows, z + (s - t) * ku);           \
            T *out = t == s ? dst + base : v;                                                \
            for (int i = lo; i < hi; i++) {                                                  \
                int j0 = imax(0, i - kl), j1 = imin(rows - 1, i + ku);                       \
                T acc = 0;                                                                   \
                for (int j = j0; j <= j1; j++)                                               \
                    acc = F(diag[(size_t)(j - i + kl) * (size_t)rows + (size_t)i],          \
                            u[j - base], acc);                                               \
                out[i - base] = acc;                                                         \
            }                                                                                \
            T *w = u;                                                                        \
            u = v, v = w;                                                                    \
        }                                                                                    \
    }

BAND_TILE(tile_d, double, fma)
BAND_TILE(tile_f, float, fmaf)

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
            tile_d(b, src, dst, a, z, steps, (double *)m, (double *)m + half);
        else
            tile_f(b, src, dst, a, z, steps, (float *)m, (float *)m + half);
    }
    return TIDE_SUCCESS;
}
