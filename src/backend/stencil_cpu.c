/*
 * stencil_cpu.c: stencil sweeps on the CPU (backend.h: tide_sweep). The rows of a plane are
 * cut into tiles; the threads share out the tiles (or, where there are fewer tiles than
 * threads, the planes: a chunk of the slowest dimension each), and each streams its tiles'
 * planes through the levels of the sweep: level 0 is read from src where it lies, levels 1 .. k - 1
 * live in the thread's rings of 2 r + 1 tile planes, level k goes to dst. A plane of a level
 * is made once, from the 2 r + 1 planes around it one level down, while those are still in
 * the core's own cache, so k steps cost one read of src and one write of dst. A tile of rows
 * [y0, y1) needs level t on rows [y0 - (k - t) r, y1 + (k - t) r): the tiles overlap by
 * their halos, whose rows are made twice; tiles as tall as the cache allows keep that small.
 *
 * The 27-point class form (backend.h) with the user's x the slowest dimension goes another
 * way (sweep_tile_shared), as the GPU's kernels do: a plane's sums f and k, and its parts S
 * and M, serve the three planes that read it, so each plane of each level is passed through
 * once (stencil_span.h: the plane pass, about 14 operations a point instead of 29), its S and
 * M kept in two planes a level; the levels go through a wave's rows together, so a level's
 * plane lives in three rows only. Other storage orders take the class form's span, each
 * point from its 27 values.
 */
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <omp.h>
#include "backend/backend.h"
#include "backend/stencil_span.h"

/* Each thread's work memory: rings of (fuse - 1) levels x (2 r + 1) planes of a tile's rows;
 * the spans this CPU runs fastest, of the tap form or the class form, the taps whose rows they
 * take in their order (slot i: tap tap[i]) and their weights in the data's precision (the
 * class form's four). */
typedef struct {
    int threads, fuse;
    int tile;          /* rows of dst per tile; n[1] or more: one tile of whole planes */
    int by_tiles;      /* the threads share out the tiles, each streaming every plane (else
                        * a chunk of the planes each, whose edge planes both neighbours make) */
    int ring_rows;     /* rows of a ring plane */
    size_t ring_row;   /* bytes of a ring's row, padded to a multiple of 64 (the work memory
                        * is aligned to 64, so are its rows) */
    size_t ring_plane; /* bytes from a ring's plane to the next (ring_pitch) */
    size_t per_thread; /* bytes */
    char *mem;
    int tap[TIDE_SWEEP_MAX_TAPS];
    float wf[TIDE_SWEEP_MAX_TAPS];
    double wd[TIDE_SWEEP_MAX_TAPS];
    tide_stencil_span_f *span_f;
    tide_stencil_span_d *span_d;
    tide_stencil_star_f *star_f, *last_f; /* the star's spans where they apply (else */
    tide_stencil_star_d *star_d, *last_d; /* NULL), last: those into dst */
    int shared;        /* the class form with planes of x: each plane's sums made once */
    tide_stencil_plane_f *plane_f, *plane_f1;
    tide_stencil_plane_d *plane_d, *plane_d1;
} cpu_sweep;

enum { CPU_MAX_FUSE = 16 };

/* The cache a thread's rings should fit: half the core's L2 (the rest holds the planes
 * streaming in from src and out to dst), or 512 KiB where the C library does not say. */
static double thread_cache(const tide_sweep *s)
{
    if (s->cache)
        return (double)s->cache;
    long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return l2 > 0 ? l2 / 2.0 : 512.0 * 1024;
}

/* Whether s goes in the class form with its planes perpendicular to the user's x: then each
 * level keeps two planes of the class form's partial sums instead of a ring
 * (sweep_tile_shared). */
static int shares_planes(const tide_sweep *s)
{
    return s->classes && s->axis[0] == 0 && s->radius == 1;
}

/* Planes of a tile a thread keeps for k steps: the rings, or the shared sums' S and P. */
static int kept_planes(const tide_sweep *s, int k)
{
    return shares_planes(s) ? 2 * k : (k - 1) * (2 * s->radius + 1);
}

/* Planes of a tile that should stay in the thread's cache for k steps: the kept planes; for
 * one step a pass (no rings) the 2 r + 1 planes of src a plane of dst reads, each of which the
 * next 2 r planes read again (whole planes of a large grid and radius would leave the L2
 * between those reads: star:4 in double reads 9 planes of 512 KiB at 256^3). */
static int cached_planes(const tide_sweep *s, int k)
{
    return k == 1 && !shares_planes(s) ? 2 * s->radius + 1 : kept_planes(s, k);
}

/* Bytes of L3 cache the threads share: the kernel's figure (sysfs), else the C library's (a
 * KVM guest on an AMD EPYC host: the kernel 32 MiB, sysconf ten times that), else 32 MiB. */
static double l3_cache(void)
{
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
    long kib = 0;
    if (f) {
        if (fscanf(f, "%ldK", &kib) != 1)
            kib = 0;
        fclose(f);
    }
    long l3 = kib > 0 ? kib * 1024 : sysconf(_SC_LEVEL3_CACHE_SIZE);
    return l3 > 0 ? (double)l3 : 32.0 * 1024 * 1024;
}

/* Rows per tile for k steps on `threads` threads: as many as keep the cached planes' rows in
 * the thread's cache, at least 8 (k - 1) r so that the made-twice halos stay under a quarter
 * of the rows made (and at least 8); all the rows when the planes fit whole. Where the rings
 * of the least tile outgrow the whole L2 they sit in the L3 whether the tile is tall or not,
 * and fewer halo rows win: then (unless `cache` is given) a tile is a thread's share of the
 * rows, as long as the threads' rings take at most half the L3. Measured on a 2-core machine
 * with 1 MiB of L2 a core (two threads, 256^3, 8 steps a pass, docs/performance.md): tiles of
 * 168 rows made star:3 float 1.1 times faster than tiles of 84, and tiles of 127 rows made the
 * 7-point float star 1.1-1.4 times faster than tiles of 43. */
static int tile_rows(const tide_sweep *s, int k, size_t row_bytes, int threads)
{
    int r = s->radius, b0, b1;
    tide_sweep_out(s, 1, &b0, &b1);
    double per_row = (double)cached_planes(s, k) * row_bytes, halo = 2.0 * (k - 1) * r;
    double fit = per_row > 0 ? thread_cache(s) / per_row - halo : 1e9;
    int least = 8 * (k - 1) * r > 8 ? 8 * (k - 1) * r : 8;
    if (!s->cache && (least + halo) * per_row > 2 * thread_cache(s)) { /* beyond the L2 */
        int share = (b1 - b0 + threads - 1) / threads;
        double fit3 = l3_cache() / 2 / threads / per_row - halo;
        fit = fit3 < share ? fit3 : share;
    }
    int t = fit < least ? least : fit > 1e9 ? 1000000000 : (int)fit;
    return t >= b1 - b0 ? s->n[1] : t;
}

/* The radius R of s's taps where they are a star in the documented tap order along the
 * columns, else 0: 6 R + 1 taps, the centre first, then for each k = 1 .. R four taps in
 * their own column (any rows) and the columns k before and k after the centre in its row
 * (stencil_span.h: the star's spans; the 7-point star and star:R with the user's z the
 * fastest dimension, or user taps in that order). */
static int star_radius(const tide_sweep *s)
{
    int R = s->radius;
    if (s->classes || R < 1 || s->ntaps != 6 * R + 1)
        return 0;
    const int(*o)[3] = s->off;
    if (o[0][0] || o[0][1] || o[0][2])
        return 0;
    for (int k = 1; k <= R; k++) {
        for (int i = 6 * k - 5; i < 6 * k - 1; i++)
            if (o[i][2] != 0)
                return 0;
        const int *m = o[6 * k - 1], *p = o[6 * k];
        if (m[0] || m[1] || m[2] != -k || p[0] || p[1] || p[2] != k)
            return 0;
    }
    return R;
}

/* The radius R of s's taps where they are the whole box of radius R in lexicographic order of
 * their plane, row and column offsets (stencil_span.h: the box's spans; box:R and the 27-point
 * stencil with weights of their own, with the user's x the slowest dimension and z the
 * fastest), else 0. */
static int box_radius(const tide_sweep *s)
{
    int R = s->radius, D = 2 * R + 1;
    if (s->classes || R < 1 || s->ntaps != D * D * D)
        return 0;
    for (int i = 0; i < s->ntaps; i++)
        if (s->off[i][0] != i / (D * D) - R || s->off[i][1] != i / D % D - R ||
            s->off[i][2] != i % D - R)
            return 0;
    return R;
}

/* The most steps per sweep the CPU offers (the plan times 1 to that many and keeps the
 * fastest): eight for the stars (their levels cost little next to the memory traffic more
 * steps save), four otherwise, fewer when the rings would take more than a quarter of the
 * grid: more steps per sweep save memory traffic only while the rings stay small next to the
 * grid. Measured on a 2-core machine (two threads, 256^3, docs/performance.md): eight steps
 * against four made star:3 float 1.2 times faster; star:4 in double ran fastest at five. */
static int cpu_fuse(const tide_sweep *s, int threads, size_t row_bytes)
{
    double grid = (double)row_bytes * s->n[1] * s->n[0];
    int k = star_radius(s) ? 8 : 4;
    while (k > 1) {
        int tile = tile_rows(s, k, row_bytes, threads);
        int rows = tile >= s->n[1] ? s->n[1] : tile + 2 * (k - 1) * s->radius;
        double rings = (double)threads * kept_planes(s, k) * rows * row_bytes;
        if (rings <= grid / 4)
            break;
        k--;
    }
    return k;
}

/* Whether the last level's stores go around the caches (non-temporal): where src and dst
 * together exceed twice the L3 (measured on 2 cores sharing 32 MiB of L3: a copy of 64 MiB
 * arrays 1.5 times faster so, of 32 MiB ones 1.1 times slower). A store around the caches
 * skips the read of the line it overwrites, a third of the traffic of a plane into dst, and
 * leaves the cache to the rings. */
static int streams_dst(const tide_sweep *s)
{
    if (s->stream_dst)
        return s->stream_dst > 0;
    double grid = (double)s->n[0] * s->n[1] * s->n[2] * (s->dbl ? sizeof(double) : sizeof(float));
    return 2 * grid > 2 * l3_cache();
}

/* Bytes from a ring plane of `rows` rows of rb bytes to the next: the rows, padded so that
 * consecutive planes start 17 cache lines apart modulo 4 KiB. The L1 maps an address to its
 * set by its bits 6 to 11, so planes a multiple of 4 KiB apart put the same row and column of
 * every plane in one set: the three planes a level reads and the one it writes would compete
 * for its ways (measured: 0.55-0.7 ns a point and level instead of 0.3, 7-point float 256^3,
 * one thread). */
static size_t ring_pitch(int rows, size_t rb)
{
    size_t lines = ((size_t)rows * rb + 63) / 64;
    return (lines + (64 + 17 - lines % 64) % 64) * 64;
}

int tide_cpu_sweep_create(const tide_env *e, tide_sweep *s, int fuse, char *err, size_t len)
{
    size_t elem = s->dbl ? sizeof(double) : sizeof(float);
    size_t row_bytes = ((size_t)s->n[2] * elem + 63) / 64 * 64;
    int threads = e->threads > s->n[0] ? s->n[0] : e->threads;
    if (threads < 1)
        threads = 1;
    if (fuse > CPU_MAX_FUSE)
        return snprintf(err, len, "the CPU backend fuses at most %d steps per sweep, not %d",
                        CPU_MAX_FUSE, fuse), TIDE_ERR_ARGUMENT;
    int k = fuse ? fuse : cpu_fuse(s, threads, row_bytes);
    int tile = tile_rows(s, k, row_bytes, threads), b0, b1;
    tide_sweep_out(s, 1, &b0, &b1);
    int tiles = (b1 - b0 + tile - 1) / tile, by_tiles = tile < s->n[1] && tiles >= threads;
    if (by_tiles) { /* as many tiles a thread, none taller than tile_rows's */
        tiles = (tiles + threads - 1) / threads * threads;
        tile = (b1 - b0 + tiles - 1) / tiles;
    }
    int rows = tile >= s->n[1] ? s->n[1] : tile + 2 * (k - 1) * s->radius;
    if (shares_planes(s)) /* whole planes too carry the rows beyond a periodic face */
        rows = (tile < s->n[1] ? tile : s->n[1]) + 2 * (k - 1) * s->radius;
    cpu_sweep *c = calloc(1, sizeof *c);
    size_t plane = shares_planes(s) ? (size_t)rows * row_bytes : ring_pitch(rows, row_bytes);
    size_t per_thread = (size_t)kept_planes(s, k) * plane + row_bytes;
    if (shares_planes(s)) /* and each level's three rolling rows, and k + 1 planes' edges */
        per_thread += (size_t)3 * k * row_bytes + (size_t)(k + 1) * rows * 2 * elem;
    per_thread = (per_thread + 63) / 64 * 64;
    char *mem = aligned_alloc(64, (size_t)threads * per_thread);
    if (!c || !mem) {
        free(c);
        free(mem);
        return snprintf(err, len, "out of memory for the sweep's work memory (%zu bytes)",
                        (size_t)threads * per_thread), TIDE_ERR_NOMEM;
    }
    c->threads = threads, c->fuse = k, c->tile = tile, c->by_tiles = by_tiles, c->ring_rows = rows;
    c->per_thread = per_thread, c->mem = mem, c->ring_row = row_bytes, c->ring_plane = plane;
    for (int i = 0; i < s->ntaps; i++) {
        c->tap[i] = i;
        c->wf[i] = (float)s->w[i], c->wd[i] = s->w[i];
    }
    /* the class form's slots in user order: u(a, b, c) at 9 (a + 1) + 3 (b + 1) + c + 1 */
    if (s->classes)
        for (int i = 0; i < 27; i++) {
            const int *o = s->off[i];
            c->tap[9 * (o[s->axis[0]] + 1) + 3 * (o[s->axis[1]] + 1) + o[s->axis[2]] + 1] = i;
        }
    for (int k = 0; k < 4 && s->classes; k++)
        c->wf[k] = (float)s->cw[k], c->wd[k] = s->cw[k];
    tide_stencil_spans(s->classes, &c->span_f, &c->span_d);
    tide_stencil_span_f *box_f;
    tide_stencil_span_d *box_d;
    tide_stencil_box_spans(box_radius(s), &box_f, &box_d);
    if (box_f)
        c->span_f = box_f, c->span_d = box_d;
    if (star_radius(s)) {
        tide_stencil_star_spans(star_radius(s), 0, &c->star_f, &c->star_d);
        tide_stencil_star_spans(star_radius(s), streams_dst(s), &c->last_f, &c->last_d);
    }
    c->shared = shares_planes(s);
    tide_stencil_planes(&c->plane_f, &c->plane_d, &c->plane_f1, &c->plane_d1);
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

/* i modulo n, in [0, n), for the i of a sweep: within a few n of [0, n), mostly inside it, so
 * compares rather than divisions (which per row and tap would cost as much as the row's
 * arithmetic). */
static inline int mod(int i, int n)
{
    while (i < 0)
        i += n;
    while (i >= n)
        i -= n;
    return i;
}

/* Where one level's planes are: src itself (level 0, any plane by its index modulo n[0]), or a
 * ring of 2 r + 1 planes indexed by the plane modulo 2 r + 1, or dst (the last level, the
 * planes from the out window's first on); plane and row: their pitches in bytes. The rows of
 * src, dst and a ring of whole planes are the grid's (row b at b modulo n[1]); a tile's ring
 * holds the rows from row0 on. */
typedef struct {
    char *base;
    int ring;       /* 0: planes at their place in the grid (src, dst) */
    int first;      /* not a ring: the plane at base */
    size_t plane, row;
    int tiled, row0;
} level_at;

static char *plane_at(const tide_sweep *s, const level_at *l, int q)
{
    int m = l->ring ? 2 * s->radius + 1 : s->n[0];
    int i = mod(q, m) - l->first;
    return l->base + (ptrdiff_t)i * (ptrdiff_t)l->plane;
}

static size_t row_at(const tide_sweep *s, const level_at *l, int b)
{
    return (size_t)(l->tiled ? b - l->row0 : mod(b, s->n[1])) * l->row;
}

/* Rows of one plane of a level that a row function makes: tap i's input row for the first
 * (before its column shift), the first row of out, the level below's row at out's place (keep:
 * the boundary points' values, src's at every level, and read from the cache, not from src)
 * and the source (or NULL), and the elements from a row to the next in the inputs (and keep),
 * out and the source. */
typedef struct {
    const void *row[TIDE_SWEEP_MAX_TAPS];
    void *out;
    const void *keep, *srow;
    int rows, last; /* last: out is dst's */
    const char *pf; /* the star's: pfb bytes a row from pf on to prefetch, or NULL */
    size_t pfb;
    ptrdiff_t pin, pout, psrc;
} row_run;

/* Columns [c0, c1) of run u's rows: the stencil, or the rows copied where they are boundary
 * rows. The span's slot i takes tap cs->tap[i]'s rows. The columns whose taps all lie in their
 * rows go as one span of all the rows (stencil_span.h; the star's where it applies, which also
 * prefetches u's slice of src); the few whose tap wraps around a periodic row point by point,
 * each tap's column wrapped, the same arithmetic. */
#define SWEEP_ROWS(NAME, T, SPAN, STAR, LAST, W)                                                 \
    static void NAME(const tide_sweep *s, const row_run *u, int boundary, int c0, int c1)        \
    {                                                                                            \
        const cpu_sweep *cs = s->state;                                                          \
        int r = s->radius, n2 = s->n[2], nt = s->ntaps;                                          \
        int ulo = s->periodic[2] ? 0 : r, uhi = s->periodic[2] ? n2 : n2 - r;                    \
        T *out = u->out;                                                                         \
        const T *keep = u->keep, *srow = u->srow;                                                \
        if (boundary) {                                                                          \
            for (int y = 0; y < u->rows; y++)                                                    \
                memcpy(out + y * u->pout + c0, keep + y * u->pin + c0,                           \
                       (size_t)(c1 - c0) * sizeof(T));                                           \
            return;                                                                              \
        }                                                                                        \
        const T *p[TIDE_SWEEP_MAX_TAPS];                                                         \
        int lo = ulo > c0 ? ulo : c0, hi = uhi < c1 ? uhi : c1; /* the updates to make */        \
        int a = lo, e = hi; /* ... of them, those whose taps all lie in their rows */            \
        for (int i = 0; i < nt; i++) {                                                           \
            int dx = s->off[cs->tap[i]][2];                                                      \
            p[i] = (const T *)u->row[cs->tap[i]] + dx;                                           \
            a = a > -dx ? a : -dx;                                                               \
            e = e < n2 - dx ? e : n2 - dx;                                                       \
        }                                                                                        \
        if (e < a)                                                                               \
            a = e = hi;                                                                          \
        if (a < e && cs->STAR)                                                                   \
            (u->last ? cs->LAST : cs->STAR)(p, cs->W, srow, out, a, e, u->rows, u->pin, u->psrc, \
                                            u->pout, u->pf, u->pfb);                             \
        else if (a < e)                                                                          \
            cs->SPAN(nt, p, cs->W, srow, out, a, e, u->rows, u->pin, u->psrc, u->pout);          \
        /* then each row's edge columns (keep's values and the wrapping columns' updates) */     \
        for (int y = 0; y < u->rows; y++) {                                                      \
            T *o = out + y * u->pout;                                                            \
            const T *kr = keep + y * u->pin, *so = srow ? srow + y * u->psrc : NULL;             \
            for (int c = c0; c < ulo && c < c1; c++)                                             \
                o[c] = kr[c];                                                                    \
            for (int c = uhi > c0 ? uhi : c0; c < c1; c++)                                       \
                o[c] = kr[c];                                                                    \
            for (int c = lo; c < hi; c++) { /* the columns whose taps wrap: one by one */        \
                if (c == a)                                                                      \
                    c = e;                                                                       \
                if (c >= hi)                                                                     \
                    break;                                                                       \
                const T *q[TIDE_SWEEP_MAX_TAPS];                                                 \
                for (int i = 0; i < nt; i++) {                                                   \
                    int t = cs->tap[i];                                                          \
                    q[i] = (const T *)u->row[t] + y * u->pin + mod(c + s->off[t][2], n2) - c;    \
                }                                                                                \
                cs->SPAN(nt, q, cs->W, so, o, c, c + 1, 1, 0, 0, 0);                             \
            }                                                                                    \
        }                                                                                        \
    }
SWEEP_ROWS(rows_f, float, span_f, star_f, last_f, wf)
SWEEP_ROWS(rows_d, double, span_d, star_d, last_d, wd)

/* Level t's plane q, rows [b0, b1), from level t - 1 (below), into `to`: the out window's
 * columns where `to` is dst (last), else all of them. The rows go in runs over which every
 * row the run reads and writes lies a row pitch on from the one before: all rows whose taps'
 * rows are in the grid (or in a tile's ring), and the rows on either side one by one. The
 * star's span of a run of several rows also prefetches the pfn bytes from pf on into the L2,
 * spread over the rows (or none: pf NULL). */
static void make_plane(const tide_sweep *s, const level_at *below, const level_at *to, int last,
                       int q, int b0, int b1, const char *pf, size_t pfn)
{
    int r = s->radius, n0 = s->n[0], n1 = s->n[1], nt = s->ntaps;
    char *in[2 * TIDE_STENCIL_MAX_RADIUS + 1];
    for (int dz = -r; dz <= r; dz++)
        in[dz + r] = plane_at(s, below, q + dz);
    int qs = mod(q, n0); /* the grid plane (periodic: q may lie outside) */
    int boundary = !s->periodic[0] && (q < r || q >= n0 - r);
    long long pitch[2];
    tide_sweep_pitch(s, pitch);
    size_t elem = s->dbl ? sizeof(double) : sizeof(float);
    size_t pb = (size_t)pitch[0] * elem, rb = (size_t)pitch[1] * elem;
    const char *spl = s->source ? (const char *)s->source + (size_t)qs * pb : NULL;
    char *out = plane_at(s, to, q);
    int c0 = 0, c1 = s->n[2];
    if (last)
        tide_sweep_out(s, 2, &c0, &c1);
    /* the rows of a run: in the grid, not boundary rows, their taps' rows in the grid too
     * where the level below holds grid rows */
    int run0 = below->tiled && s->periodic[1] ? 0 : r;
    int run1 = below->tiled && s->periodic[1] ? n1 : n1 - r;
    row_run u;
    u.last = last;
    u.pin = (ptrdiff_t)(below->row / elem), u.pout = (ptrdiff_t)(to->row / elem);
    u.psrc = (ptrdiff_t)(rb / elem);
    for (int b = b0; b < b1; b += u.rows) {
        int edge = boundary || (!s->periodic[1] && (b < r || b >= n1 - r));
        u.rows = b >= run0 && b < run1 ? (b1 < run1 ? b1 : run1) - b : 1;
        u.pf = u.rows > 1 ? pf : NULL, u.pfb = pfn / (size_t)u.rows / 64 * 64;
        size_t at = (size_t)mod(b, n1) * rb;
        for (int i = 0; i < nt && !edge; i++)
            u.row[i] = in[s->off[i][0] + r] + row_at(s, below, b + s->off[i][1]);
        u.out = out + row_at(s, to, b);
        u.keep = in[r] + row_at(s, below, b);
        u.srow = spl ? spl + at : NULL;
        if (s->dbl)
            rows_d(s, &u, edge, c0, c1);
        else
            rows_f(s, &u, edge, c0, c1);
    }
}

/* Columns [a, e) of one row of the plane pass (stencil_span.h): the fast pass on the columns
 * whose neighbours lie in the row, the point by point one on those that wrap. */
#define PLANE_COLS(NAME, T, FAST, ONE, W)                                                        \
    static void NAME(const cpu_sweep *cs, const void *const *rv, void *Sv, void *Pv, void *ov,   \
                     const void *srcv, int a, int e, int n2, int swap, int mode)                 \
    {                                                                                            \
        const T *const *r = (const T *const *)rv;                                                \
        T *S = Sv, *P = Pv, *out = ov;                                                           \
        const T *src = srcv;                                                                     \
        int fa = a > 1 ? a : 1, fe = e < n2 - 1 ? e : n2 - 1;                                    \
        if (fa < fe)                                                                             \
            cs->FAST(r, cs->W, S, P, out, src, fa, fe, n2, swap, mode);                          \
        else                                                                                     \
            fa = fe = e;                                                                         \
        if (a < fa)                                                                              \
            cs->ONE(r, cs->W, S, P, out, src, a, fa, n2, swap, mode);                            \
        if (fe < e)                                                                              \
            cs->ONE(r, cs->W, S, P, out, src, fe > a ? fe : a, e, n2, swap, mode);               \
    }
PLANE_COLS(cols_f, float, plane_f, plane_f1, wf)
PLANE_COLS(cols_d, double, plane_d, plane_d1, wd)

/* Level t's range [lo, hi) along dimension d (0: planes, 1: rows) for the chunk [x0, x1) of
 * level k in a sweep of k steps. */
static void level_range(const tide_sweep *s, int d, int x0, int x1, int k, int t, int *lo,
                        int *hi)
{
    int ext = (k - t) * s->radius;
    *lo = x0 - ext;
    *hi = x1 + ext;
    if (!s->periodic[d]) {
        *lo = *lo < 0 ? 0 : *lo;
        *hi = *hi > s->n[d] ? s->n[d] : *hi;
    }
}

/* One thread's chunk [z0, z1) of rows [y0, y1): planes stream through levels 1 .. k
 * (backend.h). Wave w makes level t's plane w - (t - 1) r, whose upper neighbour one level
 * down was made earlier in the same wave. Level 1 reads a new plane of src each wave and
 * level k writes one of dst, from and to memory, while levels 2 .. k - 1 work in the cache:
 * with the star's spans the middle levels prefetch the next wave's src plane, a slice each,
 * so that the memory traffic overlaps their work (measured, 7-point float 256^3 at 6 steps,
 * one thread: level 1 from 0.87 to 0.41 ns a point, the middle levels 0.30 to 0.36). */
static void sweep_tile(const tide_sweep *s, const char *src, char *dst, int k, int z0, int z1,
                       int y0, int y1, char *mem)
{
    const cpu_sweep *c = s->state;
    size_t elem = s->dbl ? sizeof(double) : sizeof(float);
    size_t rb = c->ring_row, pb = c->ring_plane; /* a ring's row, plane */
    int tiled = c->tile < s->n[1], row0 = y0 - (k - 1) * s->radius;
    long long pitch[2];
    tide_sweep_pitch(s, pitch);
    size_t gp = (size_t)pitch[0] * elem, gr = (size_t)pitch[1] * elem; /* src's and dst's */
    level_at lv[CPU_MAX_FUSE + 1];
    int out0, out1;
    tide_sweep_out(s, 0, &out0, &out1);
    lv[0] = (level_at){(char *)src, 0, 0, gp, gr, 0, 0};
    for (int t = 1; t < k; t++)
        lv[t] = (level_at){mem + (size_t)(t - 1) * (2 * s->radius + 1) * pb, 1, 0, pb, rb,
                           tiled, row0};
    lv[k] = (level_at){dst, 0, out0, gp, gr, 0, 0};
    int rows[CPU_MAX_FUSE + 1][2];
    for (int t = 1; t <= k; t++) {
        level_range(s, 1, y0, y1, k, t, &rows[t][0], &rows[t][1]);
        if (!tiled && t < k && s->periodic[1]) /* whole planes: every row */
            rows[t][0] = 0, rows[t][1] = s->n[1];
    }
    int lo1, hi1, lok, hik;
    level_range(s, 0, z0, z1, k, 1, &lo1, &hi1);
    level_range(s, 0, z0, z1, k, k, &lok, &hik);
    /* the rows of src level 1 reads (the tile's, r more on each side, within the grid) */
    int p0 = rows[1][0] - s->radius > 0 ? rows[1][0] - s->radius : 0;
    int p1 = rows[1][1] + s->radius < s->n[1] ? rows[1][1] + s->radius : s->n[1];
    size_t pfn = (size_t)(p1 - p0) * gr / 64 * 64;
    for (int w = lo1; w < hik + (k - 1) * s->radius; w++) {
        /* the src plane level 1 reads first in the next wave, fetched into the L2 a slice at a
         * time while the middle levels compute, so that its memory traffic overlaps them */
        int next = w + 1 + s->radius;
        const char *pf = next - s->radius < hi1 && (s->periodic[0] || next < s->n[0]) && k > 2
                             ? src + (size_t)mod(next, s->n[0]) * gp + (size_t)p0 * gr
                             : NULL;
        for (int t = 1; t <= k; t++) {
            int q = w - (t - 1) * s->radius, lo, hi;
            level_range(s, 0, z0, z1, k, t, &lo, &hi);
            size_t f0 = pfn * (size_t)(t - 2) / (size_t)(k - 2 > 0 ? k - 2 : 1) / 64 * 64;
            size_t f1 = pfn * (size_t)(t - 1) / (size_t)(k - 2 > 0 ? k - 2 : 1) / 64 * 64;
            int mid = pf && t > 1 && t < k;
            if (q >= lo && q < hi)
                make_plane(s, &lv[t - 1], &lv[t], t == k, q, rows[t][0], rows[t][1],
                           mid ? pf + f0 : NULL, mid ? f1 - f0 : 0);
        }
    }
}

/* The class form with shared sums (shares_planes): one thread's chunk [z0, z1) of rows
 * [y0, y1). Level t keeps the rows of its S and P (stencil_span.h) and passes each plane of
 * the level below through them once, in order: the first two planes of its range fill them,
 * each further plane p completes the level's plane p - 1. Level t takes plane p of level t - 1
 * in wave p + t - 1, the wave in which level t - 1 completes it, and the levels go through a
 * wave's rows together, level t a row behind level t - 1: so a level's plane lives only in
 * three rows (of a rolling buffer; the last level's go to dst), read while in the core's L1.
 * Level 0 and the boundary planes of a face are src's planes (never made). The rows of level
 * t span (k - t) r beyond the tile's (clipped at a Dirichlet face), so no row wraps but src's. */
typedef struct {
    const tide_sweep *s;
    const cpu_sweep *cs;
    size_t gp, gr, rb, elem; /* src's and dst's plane and row, a buffer's row (bytes) */
    int k, row0, n1, n2, dbl, swap;
    char *S[CPU_MAX_FUSE + 1], *P[CPU_MAX_FUSE + 1], *roll[CPU_MAX_FUSE + 1];
    int rlo[CPU_MAX_FUSE + 1], rhi[CPU_MAX_FUSE + 1];
    int c0[CPU_MAX_FUSE + 1], c1[CPU_MAX_FUSE + 1]; /* the columns a level makes */
    int ulo[CPU_MAX_FUSE + 1], uhi[CPU_MAX_FUSE + 1]; /* ... of them, the updated ones */
    char *edge; /* along a Dirichlet z: src's first and last column of each row of the last
                 * k + 1 planes level 1 read (plane q at q modulo k + 1), so that a level
                 * writes its boundary columns without reading src's planes out of order */
} shared_tile;

/* What level t does in a wave: whether it works (on), the mode of its pass (stencil_span.h),
 * the plane it reads (in: src's plane, or NULL: level t - 1's rolling rows), whether it emits a
 * plane (emit: into its rolling rows, or into out, dst's plane, for the last level), and that
 * plane's src and source planes and edges. */
typedef struct {
    int on, mode, emit;
    const char *in, *sr, *so, *ed;
    char *out;
} wave_level;

/* Row b's slot in a level's three rolling rows. */
static inline int slot3(int b)
{
    return (b % 3 + 3) % 3;
}

/* Plane q's slot among the k + 1 planes' edges. */
static inline size_t slot_edge(int q, int k)
{
    return (size_t)((q % (k + 1) + k + 1) % (k + 1));
}

static inline void copy_elem(char *to, const char *from, int dbl)
{
    if (dbl)
        memcpy(to, from, sizeof(double));
    else
        memcpy(to, from, sizeof(float));
}

/* Whether plane q of a level is a boundary plane (the values of src). */
static int boundary_plane(const tide_sweep *s, int q)
{
    return !s->periodic[0] && (q < 1 || q >= s->n[0] - 1);
}

/* Row b of level t in a wave (l): the plane it reads into the level's sums, and the row of
 * the plane it emits; a boundary row or column of that plane: src's values. */
static void shared_row(const shared_tile *g, int t, const wave_level *l, int b)
{
    size_t elem = g->elem, brow = (size_t)mod(b, g->n1) * g->gr;
    int c0 = g->c0[t], c1 = g->c1[t], ulo = g->ulo[t], uhi = g->uhi[t], n2 = g->n2;
    char *o = !l->emit ? NULL : t < g->k ? g->roll[t] + (size_t)slot3(b) * g->rb : l->out + brow;
    if ((!g->s->periodic[1] && (b < 1 || b >= g->n1 - 1)) || ulo >= uhi) { /* a boundary row */
        if (o)
            memcpy(o + c0 * elem, l->sr + brow + c0 * elem, (size_t)(c1 - c0) * elem);
        return;
    }
    if (o && c0 < ulo) /* boundary columns: 0 and n2 - 1 */
        copy_elem(o, l->ed + (size_t)(b - g->row0) * 2 * elem, g->dbl);
    if (o && uhi < c1)
        copy_elem(o + (size_t)(n2 - 1) * elem, l->ed + ((size_t)(b - g->row0) * 2 + 1) * elem,
                  g->dbl);
    const void *r[3];
    for (int i = 0; i < 3; i++)
        r[i] = l->in ? l->in + (size_t)mod(b - 1 + i, g->n1) * g->gr
                     : g->roll[t - 1] + (size_t)slot3(b - 1 + i) * g->rb;
    char *S = g->S[t] + (size_t)(b - g->row0) * g->rb, *P = g->P[t] + (size_t)(b - g->row0) * g->rb;
    const char *so = o && l->so ? l->so + brow : NULL;
    if (g->dbl)
        cols_d(g->cs, r, S, P, o, so, ulo, uhi, n2, g->swap, l->mode);
    else
        cols_f(g->cs, r, S, P, o, so, ulo, uhi, n2, g->swap, l->mode);
}

static void sweep_tile_shared(const tide_sweep *s, const char *src, char *dst, int k, int z0,
                              int z1, int y0, int y1, char *mem)
{
    const cpu_sweep *c = s->state;
    int n0 = s->n[0], n2 = s->n[2];
    shared_tile g = {.s = s, .cs = c, .k = k, .n1 = s->n[1], .n2 = n2, .dbl = s->dbl};
    g.swap = s->axis[1] == 2;
    g.elem = s->dbl ? sizeof(double) : sizeof(float);
    long long pitch[2];
    tide_sweep_pitch(s, pitch);
    g.gp = (size_t)pitch[0] * g.elem, g.gr = (size_t)pitch[1] * g.elem, g.rb = c->ring_row;
    int out0, out1, plo[CPU_MAX_FUSE + 1], phi[CPU_MAX_FUSE + 1], count[CPU_MAX_FUSE + 1];
    tide_sweep_out(s, 0, &out0, &out1);
    size_t sp = (size_t)c->ring_rows * g.rb; /* a plane of S or P */
    for (int t = 0; t <= k; t++) {
        level_range(s, 0, z0, z1, k, t, &plo[t], &phi[t]);
        count[t] = 0;
        if (t == 0)
            continue;
        level_range(s, 1, y0, y1, k, t, &g.rlo[t], &g.rhi[t]);
        g.S[t] = mem + (size_t)(2 * t - 2) * sp, g.P[t] = mem + (size_t)(2 * t - 1) * sp;
        g.roll[t] = mem + (size_t)2 * k * sp + (size_t)(t - 1) * 3 * g.rb;
        g.c0[t] = 0, g.c1[t] = n2;
        if (t == k)
            tide_sweep_out(s, 2, &g.c0[t], &g.c1[t]);
        g.ulo[t] = s->periodic[2] || g.c0[t] > 1 ? g.c0[t] : 1;
        g.uhi[t] = s->periodic[2] || g.c1[t] < n2 - 1 ? g.c1[t] : n2 - 1;
    }
    g.edge = mem + (size_t)2 * k * sp + (size_t)3 * k * g.rb;
    int edges = !s->periodic[2] && n2 >= 3;
    size_t edge_plane = (size_t)c->ring_rows * 2 * g.elem;
    g.row0 = g.rlo[1];
    /* the last level's boundary planes: src's */
    level_at first = {(char *)src, 0, 0, g.gp, g.gr, 0, 0};
    level_at last = {dst, 0, out0, g.gp, g.gr, 0, 0};
    for (int q = plo[k]; q < phi[k]; q++)
        if (boundary_plane(s, q))
            make_plane(s, &first, &last, 1, q, g.rlo[k], g.rhi[k], NULL, 0);
    for (int w = plo[0]; w < phi[0] + k - 1; w++) {
        wave_level l[CPU_MAX_FUSE + 1];
        int imin = INT_MAX, imax = INT_MIN;
        for (int t = 1; t <= k; t++) {
            int p = w - (t - 1), q = p - 1; /* the plane read, the plane emitted */
            l[t].on = p >= plo[t - 1] && p < phi[t - 1];
            if (!l[t].on)
                continue;
            l[t].emit = count[t] >= 2 && q >= plo[t] && q < phi[t] && !boundary_plane(s, q);
            l[t].mode = l[t].emit ? 2 : count[t] < 1 ? 0 : 1;
            l[t].in = t == 1 || boundary_plane(s, p) ? src + (size_t)mod(p, n0) * g.gp : NULL;
            l[t].sr = src + (size_t)mod(q, n0) * g.gp;
            l[t].so = s->source ? (const char *)s->source + (size_t)mod(q, n0) * g.gp : NULL;
            l[t].out = t == k && l[t].emit ? dst + (size_t)(mod(q, n0) - out0) * g.gp : NULL;
            l[t].ed = g.edge + slot_edge(q, k) * edge_plane;
            imin = g.rlo[t] + t - 1 < imin ? g.rlo[t] + t - 1 : imin;
            imax = g.rhi[t] + t - 1 > imax ? g.rhi[t] + t - 1 : imax;
        }
        const char *pl = src + (size_t)mod(w, n0) * g.gp;
        char *ed = g.edge + slot_edge(w, k) * edge_plane;
        for (int i = imin; i < imax; i++)
            for (int t = 1; t <= k; t++) {
                int b = i - (t - 1);
                if (!l[t].on || b < g.rlo[t] || b >= g.rhi[t])
                    continue;
                shared_row(&g, t, &l[t], b);
                if (t == 1 && edges) { /* src plane w's row b, just read: its edges */
                    const char *row = pl + (size_t)mod(b, g.n1) * g.gr;
                    char *at = ed + (size_t)(b - g.row0) * 2 * g.elem;
                    copy_elem(at, row, g.dbl);
                    copy_elem(at + g.elem, row + (size_t)(n2 - 1) * g.elem, g.dbl);
                }
            }
        for (int t = 1; t <= k; t++)
            count[t] += l[t].on;
    }
}

int tide_cpu_sweep(const tide_env *e, const tide_sweep *s, const void *src, void *dst,
                   int steps)
{
    (void)e;
    const cpu_sweep *c = s->state;
    int T = c->threads, lo, hi, b0, b1;
    tide_sweep_out(s, 0, &lo, &hi);
    tide_sweep_out(s, 1, &b0, &b1);
    int tile = c->tile < s->n[1] ? c->tile : b1 - b0, by_tiles = c->by_tiles;
#pragma omp parallel for num_threads(T) schedule(static, 1)
    for (int i = 0; i < T; i++) {
        int z0 = by_tiles ? lo : lo + (int)((int64_t)i * (hi - lo) / T);
        int z1 = by_tiles ? hi : lo + (int)((int64_t)(i + 1) * (hi - lo) / T);
        int step = by_tiles ? T * tile : tile;
        for (int y = b0 + (by_tiles ? i * tile : 0); y < b1 && z0 < z1; y += step)
            (c->shared ? sweep_tile_shared : sweep_tile)(
                s, src, dst, steps, z0, z1, y, y + tile < b1 ? y + tile : b1,
                c->mem + (size_t)i * c->per_thread);
    }
    return TIDE_SUCCESS;
}
