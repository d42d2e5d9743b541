/*
 * stencil_cpu.c: stencil sweeps on the CPU (backend.h: tide_sweep). Each thread takes one
 * chunk of the slowest dimension and streams its planes through the levels of the sweep:
 * level 0 is read from src where it lies, levels 1 .. k - 1 live in the thread's rings of
 * 2 r + 1 planes, level k goes to dst. A plane of a level is made once, from the 2 r + 1
 * planes around it one level down, while those are still in cache, so k steps cost one read
 * of src and one write of dst.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include "backend/backend.h"

/* Each thread's work memory: rings of (fuse - 1) levels x (2 r + 1) planes, and a row of
 * sums. */
typedef struct {
    int threads, fuse;
    size_t plane;   /* elements of one plane */
    size_t per_thread; /* bytes */
    char *mem;
} cpu_sweep;

/* The CPU's choice of steps per sweep: four, fewer when the rings would take more than a
 * quarter of the grid or 256 MiB: more steps per sweep save memory traffic only while the
 * rings stay small next to the grid. */
static int cpu_fuse(const tide_sweep *s, int threads, size_t plane_bytes)
{
    double grid = (double)plane_bytes * s->n[0];
    int k = 4;
    while (k > 1) {
        double rings = (double)threads * (k - 1) * (2 * s->radius + 1) * plane_bytes;
        if (rings <= grid / 4 && rings <= 256.0 * (1 << 20))
            break;
        k--;
    }
    return k;
}

enum { CPU_MAX_FUSE = 16 };

int tide_cpu_sweep_create(const tide_env *e, tide_sweep *s, int fuse, char *err, size_t len)
{
    size_t elem = s->dbl ? sizeof(double) : sizeof(float);
    size_t plane = (size_t)s->n[1] * (size_t)s->n[2];
    int threads = e->threads > s->n[0] ? s->n[0] : e->threads;
    if (threads < 1)
        threads = 1;
    if (fuse > CPU_MAX_FUSE)
        return snprintf(err, len, "the CPU backend fuses at most %d steps per sweep, not %d",
                        CPU_MAX_FUSE, fuse), TIDE_ERR_ARGUMENT;
    int k = fuse ? fuse : cpu_fuse(s, threads, plane * elem);
    cpu_sweep *c = calloc(1, sizeof *c);
    size_t per_thread = ((size_t)(k - 1) * (size_t)(2 * s->radius + 1) * plane + s->n[2]) * elem;
    char *mem = malloc((size_t)threads * per_thread);
    if (!c || !mem) {
        free(c);
        free(mem);
        return snprintf(err, len, "out of memory for the sweep's work memory (%zu bytes)",
                        (size_t)threads * per_thread), TIDE_ERR_NOMEM;
    }
    *c = (cpu_sweep){threads, k, plane, per_thread, mem};
    s->state = c;
    s->max_fuse = k;
    s->state_bytes = (size_t)threads * per_thread;
    return TIDE_SUCCESS;
}

void tide_cpu_sweep_destroy(tide_sweep *s)
{
    cpu_sweep *c = s->state;
    if (c)
        free(c->mem);
    free(c);
    s->state = NULL;
}

/* Where one level's planes are: src itself (level 0, any plane by its index modulo n[0]), or a
 * ring of 2 r + 1 dense planes indexed by the plane modulo 2 r + 1, or dst (the last level,
 * the planes from the out window's first on); plane and row: their pitches in bytes. */
typedef struct {
    char *base;
    int ring;       /* 0: planes at their place in the grid (src, dst) */
    int first;      /* not a ring: the plane at base */
    size_t plane, row;
} level_at;

static char *plane_at(const tide_sweep *s, const level_at *l, int q)
{
    int m = l->ring ? 2 * s->radius + 1 : s->n[0];
    int i = ((q % m) + m) % m - l->first;
    return l->base + (ptrdiff_t)i * (ptrdiff_t)l->plane;
}

/* A point's wrapped index along a dimension of n points: |d| <= r < n, so one correction. */
static inline int wrap(int i, int n) { return i < 0 ? i + n : i >= n ? i - n : i; }

/* Columns [c0, c1) of output row b of plane q: the stencil from the 2 r + 1 planes `in` of the
 * level below (in[dz + r] the plane at q + dz, rows rin bytes apart) into row `out`, or the
 * row copied where it is a boundary row; src_row is the row in src (boundary values), srow
 * the source's row or NULL. Each tap runs along the whole row before the next (acc holds the
 * row's sums), so the loops are vector loops while every point still sees its taps in order,
 * with one fma each (tide.h's arithmetic). The points whose tap wraps around a periodic row
 * are done one by one. Built twice: with FMA instructions where the CPU has them (fmaf and
 * fma then compile to one instruction and the loops vectorize), and without (libm's fmaf and
 * fma, the same results). */
#define SWEEP_ROW(NAME, T, FMA)                                                                  \
    __attribute__((target_clones("fma", "default"))) static void NAME(                           \
        const tide_sweep *s, char *const *in, size_t rin, int b, T *out, const T *src_row,       \
        const T *srow, int boundary_plane, T *acc, int c0, int c1)                               \
    {                                                                                            \
        int r = s->radius, n1 = s->n[1], n2 = s->n[2];                                           \
        int ulo = s->periodic[2] ? 0 : r, uhi = s->periodic[2] ? n2 : n2 - r;                    \
        if (boundary_plane || (!s->periodic[1] && (b < r || b >= n1 - r))) {                     \
            memcpy(out + c0, src_row + c0, (size_t)(c1 - c0) * sizeof(T));                       \
            return;                                                                              \
        }                                                                                        \
        int lo = ulo > c0 ? ulo : c0, hi = uhi < c1 ? uhi : c1; /* the updates to make */        \
        for (int i = 0; i < s->ntaps && lo < hi; i++) {                                          \
            const int *o = s->off[i];                                                            \
            const T *row = (const T *)(in[o[0] + r] + (size_t)wrap(b + o[1], n1) * rin);         \
            T w = (T)s->w[i];                                                                    \
            int dx = o[2], a = lo > -dx ? lo : -dx, e = hi < n2 - dx ? hi : n2 - dx;             \
            if (i == 0) {                                                                        \
                for (int c = a; c < e; c++)                                                      \
                    acc[c] = w * row[c + dx];                                                    \
                for (int c = lo; c < a && c < hi; c++)                                           \
                    acc[c] = w * row[wrap(c + dx, n2)];                                          \
                for (int c = e > a ? e : a; c < hi; c++)                                         \
                    acc[c] = w * row[wrap(c + dx, n2)];                                          \
            } else {                                                                             \
                for (int c = a; c < e; c++)                                                      \
                    acc[c] = FMA(w, row[c + dx], acc[c]);                                        \
                for (int c = lo; c < a && c < hi; c++)                                           \
                    acc[c] = FMA(w, row[wrap(c + dx, n2)], acc[c]);                              \
                for (int c = e > a ? e : a; c < hi; c++)                                         \
                    acc[c] = FMA(w, row[wrap(c + dx, n2)], acc[c]);                              \
            }                                                                                    \
        }                                                                                        \
        for (int c = c0; c < ulo && c < c1; c++)                                                 \
            out[c] = src_row[c];                                                                 \
        for (int c = uhi > c0 ? uhi : c0; c < c1; c++)                                           \
            out[c] = src_row[c];                                                                 \
        if (srow)                                                                                \
            for (int c = lo; c < hi; c++)                                                        \
                out[c] = acc[c] + srow[c];                                                       \
        else if (lo < hi)                                                                        \
            memcpy(out + lo, acc + lo, (size_t)(hi - lo) * sizeof(T));                           \
    }
SWEEP_ROW(row_f, float, fmaf)
SWEEP_ROW(row_d, double, fma)

/* Level t's plane q from level t - 1 (below), into `to`: its rows and columns in the out
 * window where `to` is dst (last), else all of them. */
static void make_plane(const tide_sweep *s, const char *src, const level_at *below,
                       const level_at *to, int last, int q, void *acc)
{
    int r = s->radius, n0 = s->n[0];
    char *in[2 * TIDE_STENCIL_MAX_RADIUS + 1];
    for (int dz = -r; dz <= r; dz++)
        in[dz + r] = plane_at(s, below, q + dz);
    int qs = ((q % n0) + n0) % n0; /* the grid plane (periodic: q may lie outside) */
    int boundary = !s->periodic[0] && (q < r || q >= n0 - r);
    long long pitch[2];
    tide_sweep_pitch(s, pitch);
    size_t elem = s->dbl ? sizeof(double) : sizeof(float);
    size_t pb = (size_t)pitch[0] * elem, rb = (size_t)pitch[1] * elem;
    const char *src_plane = src + (size_t)qs * pb;
    const char *spl = s->source ? (const char *)s->source + (size_t)qs * pb : NULL;
    char *out = plane_at(s, to, q);
    int b0 = 0, b1 = s->n[1], c0 = 0, c1 = s->n[2];
    if (last) {
        tide_sweep_out(s, 1, &b0, &b1);
        tide_sweep_out(s, 2, &c0, &c1);
    }
    for (int b = b0; b < b1; b++) {
        size_t at = (size_t)b * rb, ot = (size_t)b * to->row;
        if (s->dbl)
            row_d(s, in, below->row, b, (double *)(out + ot), (const double *)(src_plane + at),
                  spl ? (const double *)(spl + at) : NULL, boundary, acc, c0, c1);
        else
            row_f(s, in, below->row, b, (float *)(out + ot), (const float *)(src_plane + at),
                  spl ? (const float *)(spl + at) : NULL, boundary, acc, c0, c1);
    }
}

/* Level t's planes of the chunk [z0, z1) in a sweep of k steps: [lo, hi). */
static void level_range(const tide_sweep *s, int z0, int z1, int k, int t, int *lo, int *hi)
{
    int ext = (k - t) * s->radius;
    *lo = z0 - ext;
    *hi = z1 + ext;
    if (!s->periodic[0]) {
        *lo = *lo < 0 ? 0 : *lo;
        *hi = *hi > s->n[0] ? s->n[0] : *hi;
    }
}

/* One thread's chunk [z0, z1): planes stream through levels 1 .. k (backend.h). Wave w makes
 * level t's plane w - (t - 1) r, whose upper neighbour one level down was made earlier in the
 * same wave. */
static void sweep_chunk(const tide_sweep *s, const char *src, char *dst, int k, int z0, int z1,
                        char *mem)
{
    const cpu_sweep *c = s->state;
    size_t elem = s->dbl ? sizeof(double) : sizeof(float);
    size_t pb = c->plane * elem, rb = (size_t)s->n[2] * elem; /* a ring's plane and row */
    char *acc = mem + (size_t)(c->fuse - 1) * (2 * s->radius + 1) * pb; /* after the rings */
    long long pitch[2];
    tide_sweep_pitch(s, pitch);
    size_t gp = (size_t)pitch[0] * elem, gr = (size_t)pitch[1] * elem; /* src's and dst's */
    level_at lv[CPU_MAX_FUSE + 1];
    int out0, out1;
    tide_sweep_out(s, 0, &out0, &out1);
    lv[0] = (level_at){(char *)src, 0, 0, gp, gr};
    for (int t = 1; t < k; t++)
        lv[t] = (level_at){mem + (size_t)(t - 1) * (2 * s->radius + 1) * pb, 1, 0, pb, rb};
    lv[k] = (level_at){dst, 0, out0, gp, gr};
    int lo1, hi1, lok, hik;
    level_range(s, z0, z1, k, 1, &lo1, &hi1);
    level_range(s, z0, z1, k, k, &lok, &hik);
    for (int w = lo1; w < hik + (k - 1) * s->radius; w++)
        for (int t = 1; t <= k; t++) {
            int q = w - (t - 1) * s->radius, lo, hi;
            level_range(s, z0, z1, k, t, &lo, &hi);
            if (q >= lo && q < hi)
                make_plane(s, src, &lv[t - 1], &lv[t], t == k, q, acc);
        }
}

int tide_cpu_sweep(const tide_env *e, const tide_sweep *s, const void *src, void *dst,
                   int steps)
{
    (void)e;
    const cpu_sweep *c = s->state;
    int T = c->threads, lo, hi;
    tide_sweep_out(s, 0, &lo, &hi);
#pragma omp parallel for num_threads(T) schedule(static, 1)
    for (int i = 0; i < T; i++) {
        int z0 = lo + (int)((int64_t)i * (hi - lo) / T);
        int z1 = lo + (int)((int64_t)(i + 1) * (hi - lo) / T);
        if (z0 < z1)
            sweep_chunk(s, src, dst, steps, z0, z1, c->mem + (size_t)i * c->per_thread);
    }
    return TIDE_SUCCESS;
}
