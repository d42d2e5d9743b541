/*
 * band_streamed.c: a band plan's passes out of card (band_streamed.h) on the out-of-card
 * runner (plan/runner.h): each slab a chunk, its rows of x and of A uploaded, its levels
 * computed as one-step backend passes, its finished rows downloaded, while the next slab's rows
 * go up and the last one's come down.
 *
 * Slab i owns the rows [f, t) = [i R, min(n, (i + 1) R)). A slot's buffer LV holds levels 0 ..
 * k of the rows [f - D, f - D + C), D = k ku + kl, C = R + D (level l at l C rows in), and
 * buffer A the slab's rows [lo, t) of A's diagonals, lo = max(0, f - D), diagonal-major with
 * t - lo as their stride. Level l (1 .. s in a pass of s steps) computes the rows from where
 * the slab before left it, max(0, f - l ku) (slab 0: 0), to t - l ku (the last slab: n), from
 * level l - 1's rows kl below and ku above: the slab's own computed rows, its uploaded x at
 * level 0, and below f the kl + ku rows [f - l ku - kl, f - (l - 1) ku) of level l - 1 that
 * the slab before left in resident buffer BORDER (one band a level). Each slab leaves the
 * same bands of its own top for the next at its end. Rows below 0 do not exist: the frame then
 * starts at row 0, where the backend's pass takes the matrix's first row, as in card. The job
 * is ordered (slab i's steps after slab i - 1's), so the bands pass from one slab to the next
 * through BORDER; a slab downloads rows of x that earlier slabs uploaded, which an ordered job
 * allows (backend/pipeline.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "band/band_plan.h"
#include "plan/runner.h"

enum { SLOTS = 3 };            /* upload, levels and download of three slabs at once */
enum { LV = 0, A = 1, NBUFS = 2 }; /* a slot's buffers */
enum { BORDER = 0 };               /* the resident one */

struct tide_band_streamed {
    tide_band_streamed_desc d;
    size_t elem;
    int D, C;                  /* rows below a slab's first its frame holds; rows of a level */
    int steps;                 /* the pass in flight: its steps, */
    void *x;                   /* ... and x */
    tide_band_pass *lev;       /* per level 1 .. k (lev[l - 1]): the backend's pass, */
    tide_op *band;             /* ... its op, */
    tide_op *copy;             /* ... the copies of level l - 1's band in (copy[l - 1]) and
                                * out (copy[k + l - 1]), */
    size_t *band_bytes;        /* ... whose bytes each slab sets */
    tide_runner *runner;
    tide_runner_pass pass;
};

static int imin(int a, int b) { return a < b ? a : b; }
static int imax(int a, int b) { return a > b ? a : b; }

/* Rows of one band: kl + ku. */
static int band_rows(const tide_band_streamed_desc *d) { return d->kl + d->ku; }

int tide_band_streamed_rows(const tide_band_streamed_desc *d, size_t budget)
{
    size_t elem = d->dbl ? sizeof(double) : sizeof(float), W = (size_t)band_rows(d) + 1;
    double per_row = (double)SLOTS * (double)elem * ((double)d->k + 1 + (double)W);
    double border = (double)elem * imax(1, d->k * band_rows(d));
    double r = ((double)budget - border) / per_row - (double)d->k * d->ku - d->kl;
    return r < 1 ? 0 : r > d->n ? d->n : (int)r;
}

void tide_band_streamed_destroy(const tide_env *e, tide_band_streamed *s)
{
    (void)e;
    if (!s)
        return;
    tide_runner_destroy(s->runner);
    free(s->lev);
    free(s->band);
    free(s->copy);
    free(s->band_bytes);
    free(s);
}

int tide_band_streamed_slabs(const tide_band_streamed *s)
{
    return (s->d.n + s->d.slab - 1) / s->d.slab;
}

void tide_band_streamed_memory(const tide_band_streamed *s, size_t *device, size_t *pinned)
{
    *device = tide_runner_device_bytes(s->runner);
    *pinned = tide_runner_pinned_bytes(s->runner);
}

/* Slab i: its rows [*f, *t), and whether it is the last. */
static int slab_rows(const tide_band_streamed *s, int i, int *f, int *t)
{
    *f = i * s->d.slab;
    *t = imin(s->d.n, *f + s->d.slab);
    return *t == s->d.n;
}

/* The rows level l of slab i computes: [*a, *b). */
static void level_rows(const tide_band_streamed *s, int i, int l, int *a, int *b)
{
    int f, t, last = slab_rows(s, i, &f, &t);
    *a = i ? imax(0, f - l * s->d.ku) : 0;
    *b = last ? s->d.n : imax(*a, t - l * s->d.ku);
}

/* A box of the rows [lo, hi) of `cols` columns, the rows fastest (x: one column; A: its
 * diagonals, diagonal-major). */
static tide_box rows_box(int lo, int hi, int cols)
{
    return (tide_box){{lo, 0, 0}, {hi, cols, 1}, {1, 2, 0}};
}

static int describe(void *user, int i, tide_xfer *up, int *nup, tide_xfer *down, int *ndown)
{
    const tide_band_streamed *s = user;
    int f, t, a, b, n = s->d.n, W = band_rows(&s->d) + 1;
    slab_rows(s, i, &f, &t);
    int base = f - s->D, lo = imax(0, base);
    tide_box frame = rows_box(base, base + s->C, 1);
    up[0] = (tide_xfer){s->x, rows_box(0, n, 1), rows_box(f, t, 1), LV, 0, frame};
    up[1] = (tide_xfer){(void *)s->d.matrix, rows_box(0, n, W), rows_box(lo, t, W), A, 0,
                        rows_box(lo, t, W)};
    level_rows(s, i, s->steps, &a, &b);
    down[0] = (tide_xfer){s->x, rows_box(0, n, 1), rows_box(a, b, 1), LV,
                          (size_t)s->steps * s->C * s->elem, frame};
    *nup = 2;
    *ndown = 1;
    return TIDE_SUCCESS;
}

/* Level l - 1's band below row e, [e - l ku - kl, e - (l - 1) ku) (rows below 0 left out),
 * copied between the slab's level rows (row g at lv_row(g)) and BORDER: in, from BORDER
 * (copy op l - 1), or out, into it (copy op k + l - 1). Appended to step at *k where it has
 * rows. */
static void band_copy(tide_band_streamed *s, int l, int e, int in, char *lv_row0, int base,
                      char *border, tide_step *step, int *k)
{
    int b0 = e - l * s->d.ku - s->d.kl, b1 = e - (l - 1) * s->d.ku, c0 = imax(0, b0);
    int c = in ? l - 1 : s->d.k + l - 1;
    size_t es = s->elem;
    char *row = lv_row0 + (size_t)(c0 - base) * es;
    char *band = border + ((size_t)(l - 1) * band_rows(&s->d) + (size_t)(c0 - b0)) * es;
    s->band_bytes[c] = (size_t)imax(0, b1 - c0) * es;
    if (s->band_bytes[c])
        step[(*k)++] = (tide_step){&s->copy[c], in ? band : row, in ? row : band};
}

/* Slab i's steps: level l - 1's band from the slab before, for l = 1 .. s; the levels; the
 * same bands of its own top for the next slab. */
static int slab_steps(void *user, int i, const tide_env *e, void *const *buf, tide_step *step,
                      int *n)
{
    (void)e;
    tide_band_streamed *s = user;
    int f, t, last = slab_rows(s, i, &f, &t), k = 0;
    int base = f - s->D, lo = imax(0, base);
    char *border = buf[NBUFS + BORDER];
#define LEVEL(l) ((char *)buf[LV] + (size_t)(l) * s->C * s->elem) /* level l's row base */
    for (int l = 1; l <= s->steps && i; l++)
        band_copy(s, l, f, 1, LEVEL(l - 1), base, border, step, &k);
    for (int l = 1; l <= s->steps; l++) {
        int a, b;
        level_rows(s, i, l, &a, &b);
        tide_band_pass *p = &s->lev[l - 1];
        p->rows = t - lo;
        p->diag = buf[A];
        p->out_lo = a - lo, p->out_hi = b - lo;
        size_t at = (size_t)(lo - base) * s->elem;
        if (b > a)
            step[k++] = (tide_step){&s->band[l - 1], LEVEL(l - 1) + at, LEVEL(l) + at};
    }
    for (int l = 1; l <= s->steps && !last; l++)
        band_copy(s, l, t, 0, LEVEL(l - 1), base, border, step, &k);
#undef LEVEL
    *n = k;
    return TIDE_SUCCESS;
}

int tide_band_streamed_create(const tide_env *e, const tide_band_streamed_desc *d,
                              const tide_band_pass *b, tide_band_streamed **out, char *err,
                              size_t len)
{
    *out = NULL;
    tide_band_streamed *s = calloc(1, sizeof *s);
    if (s) {
        s->lev = calloc((size_t)d->k, sizeof *s->lev);
        s->band = calloc((size_t)d->k, sizeof *s->band);
        s->copy = calloc(2 * (size_t)d->k, sizeof *s->copy);
        s->band_bytes = calloc(2 * (size_t)d->k, sizeof *s->band_bytes);
    }
    if (!s || !s->lev || !s->band || !s->copy || !s->band_bytes) {
        tide_band_streamed_destroy(e, s);
        return snprintf(err, len, "out of memory for the slabs"), TIDE_ERR_NOMEM;
    }
    s->d = *d;
    s->elem = d->dbl ? sizeof(double) : sizeof(float);
    s->D = d->k * d->ku + d->kl;
    s->C = d->slab + s->D;
    int B = band_rows(d), W = B + 1;
    for (int l = 0; l < d->k; l++) {
        s->lev[l] = *b;
        tide_band_op(&s->band[l], &s->lev[l], 1);
    }
    for (int c = 0; c < 2 * d->k; c++)
        tide_op_copy(&s->copy[c], &s->band_bytes[c], (size_t)B * s->elem);
    size_t C = (size_t)s->C;
    size_t bufs[NBUFS] = {C * ((size_t)d->k + 1) * s->elem, C * (size_t)W * s->elem};
    size_t border = (size_t)imax(1, d->k * B) * s->elem;
    /* a slab's uploads: its x rows and its rows of A, staged through pinned memory */
    tide_runner_desc rd = {.env = e, .slots = SLOTS, .nbufs = NBUFS, .buf_bytes = bufs,
                           .nresident = 1, .resident_bytes = &border,
                           .stage_bytes = C * ((size_t)W + 1) * s->elem,
                           .max_steps = 3 * d->k};
    int st = tide_runner_create(&rd, &s->runner, err, len);
    if (st) {
        tide_band_streamed_destroy(e, s);
        return st;
    }
    *out = s;
    return TIDE_SUCCESS;
}

int tide_band_streamed_pass(const tide_env *e, tide_band_streamed *s, void *x, int steps)
{
    if (steps < 1 || steps > s->d.k)
        return TIDE_ERR_ARGUMENT;
    s->x = x;
    s->steps = steps;
    s->pass = (tide_runner_pass){.nchunks = tide_band_streamed_slabs(s), .elem = s->elem,
                                 .batch = 1, .max_up = 2, .max_down = 1,
                                 .describe = describe, .steps = slab_steps, .user = s,
                                 .ordered = 1, .after_caller = 1, .caller_stream = e->stream};
    char err[256];
    return tide_runner_run(s->runner, &s->pass, err, sizeof err);
}
