/*
 * band_streamed.c: a band plan's passes out of card (band_streamed.h): the slabs, the frames
 * that keep each level's border rows, and the levels as one-step backend passes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "band/band_streamed.h"

struct tide_band_streamed {
    tide_band_streamed_desc d;
    tide_band_pass b;   /* the backend's pass, its geometry set per level */
    size_t elem;
    int cap;            /* rows of a frame: R + k ku + kl */
    void *lv[2];        /* two frames of the levels 0 .. k, cap rows each, one after another */
    void *a[2];         /* two frames of A, diagonal-major with the frame's rows as stride */
    int *done;          /* per level: the rows it has finished so far */
};

static int imin(int a, int b) { return a < b ? a : b; }
static int imax(int a, int b) { return a > b ? a : b; }

size_t tide_band_streamed_bytes(const tide_band_streamed_desc *d)
{
    size_t elem = d->dbl ? sizeof(double) : sizeof(float);
    size_t cap = (size_t)d->slab + (size_t)d->k * d->ku + d->kl;
    return 2 * cap * elem * ((size_t)d->k + 1 + (size_t)(d->kl + d->ku + 1));
}

void tide_band_streamed_destroy(const tide_env *e, tide_band_streamed *s)
{
    if (!s)
        return;
    for (int f = 0; f < 2; f++) {
        e->be->free(s->lv[f]);
        e->be->free(s->a[f]);
    }
    free(s->done);
    free(s);
}

int tide_band_streamed_create(const tide_env *e, const tide_band_streamed_desc *d,
                              const tide_band_pass *b, tide_band_streamed **out, char *err,
                              size_t len)
{
    tide_band_streamed *s = calloc(1, sizeof *s);
    int *done = malloc(sizeof(int) * ((size_t)d->k + 1));
    if (!s || !done) {
        free(s), free(done);
        return snprintf(err, len, "out of memory for the slabs"), TIDE_ERR_NOMEM;
    }
    s->d = *d, s->b = *b, s->done = done;
    s->elem = d->dbl ? sizeof(double) : sizeof(float);
    s->cap = d->slab + d->k * d->ku + d->kl;
    size_t lv = (size_t)s->cap * s->elem * ((size_t)d->k + 1);
    size_t a = (size_t)s->cap * s->elem * (size_t)(d->kl + d->ku + 1);
    for (int f = 0; f < 2; f++)
        if (e->be->alloc(lv, &s->lv[f]) || e->be->alloc(a, &s->a[f])) {
            tide_band_streamed_destroy(e, s);
            return snprintf(err, len, "out of %s memory for the slabs' frames (%zu bytes)",
                            e->be->gpu ? "device" : "host", 2 * (lv + a)), TIDE_ERR_NOMEM;
        }
    *out = s;
    return TIDE_SUCCESS;
}

int tide_band_streamed_slabs(const tide_band_streamed *s)
{
    return (s->d.n + s->d.slab - 1) / s->d.slab;
}

/* Level t's rows in frame f. */
static char *level(const tide_band_streamed *s, int f, int t)
{
    return (char *)s->lv[f] + (size_t)t * s->cap * s->elem;
}

/* One frame: its first row and its rows. */
typedef struct {
    int lo, rows;
} frame;

/* The rows [from, to) of A into frame g (its diagonals: from the host matrix, or from frame
 * h of the other buffer, laid out as fh). */
static int put_a(const tide_env *e, const tide_band_streamed *s, int g, const frame *fg,
                 const void *src, const frame *fs, int from, int to)
{
    int st = TIDE_SUCCESS, W = s->d.kl + s->d.ku + 1;
    size_t es = s->elem;
    for (int d = 0; d < W && !st && to > from; d++) {
        const char *p = (const char *)src +
                        ((size_t)d * fs->rows + (size_t)(from - fs->lo)) * es;
        char *q = (char *)s->a[g] + ((size_t)d * fg->rows + (size_t)(from - fg->lo)) * es;
        st = e->be->copy(e, q, p, (size_t)(to - from) * es);
    }
    return st;
}

/* Moving from frame `old` (buffer 1 - g) to frame `now` (buffer g): the rows [now.lo, keep)
 * of the levels below `steps` and of A copied over. */
static int shift(const tide_env *e, const tide_band_streamed *s, int g, const frame *old,
                 const frame *now, int keep, int steps)
{
    int st = TIDE_SUCCESS;
    size_t es = s->elem;
    if (keep <= now->lo)
        return st;
    for (int t = 0; t < steps && !st; t++)
        st = e->be->copy(e, level(s, g, t), level(s, 1 - g, t) + (size_t)(now->lo - old->lo) * es,
                         (size_t)(keep - now->lo) * es);
    return st ? st : put_a(e, s, g, now, s->a[1 - g], old, now->lo, keep);
}

/* Slab i of a pass of `steps` steps in frame buffer g (the slab before in 1 - g, *old). */
static int slab(const tide_env *e, tide_band_streamed *s, void *x, int steps, int i, int g,
                frame *old)
{
    const tide_band_streamed_desc *d = &s->d;
    size_t es = s->elem;
    int top = imin(d->n, (i + 1) * d->slab), last = top == d->n, first = i * d->slab;
    frame now = {imax(0, first - steps * d->ku - d->kl), 0};
    now.rows = top - now.lo;
    int keep = i ? old->lo + old->rows : 0; /* the rows the frame before held */
    int st = i ? shift(e, s, g, old, &now, keep, steps) : TIDE_SUCCESS;
    frame host = {0, d->n};
    if (!st)
        st = put_a(e, s, g, &now, d->matrix, &host, keep, top);
    if (!st)
        st = e->be->copy(e, level(s, g, 0) + (size_t)(first - now.lo) * es,
                         (const char *)x + (size_t)first * es, (size_t)(top - first) * es);
    tide_band_pass b = s->b;
    b.rows = now.rows;
    b.diag = s->a[g];
    for (int t = 1; t <= steps && !st; t++) {
        int hi = last ? d->n : imax(0, top - t * d->ku);
        b.out_lo = s->done[t] - now.lo, b.out_hi = hi - now.lo;
        if (hi > s->done[t])
            st = e->be->band(e, &b, level(s, g, t - 1), level(s, g, t), 1);
        if (t == steps && !st && hi > s->done[t]) /* finished rows: down into x */
            st = e->be->copy(e, (char *)x + (size_t)s->done[t] * es,
                             level(s, g, t) + (size_t)(s->done[t] - now.lo) * es,
                             (size_t)(hi - s->done[t]) * es);
        s->done[t] = hi;
    }
    *old = now;
    return st;
}

int tide_band_streamed_pass(const tide_env *e, tide_band_streamed *s, void *x, int steps)
{
    if (steps < 1 || steps > s->d.k)
        return TIDE_ERR_ARGUMENT;
    memset(s->done, 0, sizeof(int) * ((size_t)s->d.k + 1));
    frame old = {0, 0};
    int st = TIDE_SUCCESS, slabs = tide_band_streamed_slabs(s);
    for (int i = 0; i < slabs && !st; i++)
        st = slab(e, s, x, steps, i, i % 2, &old);
    int sync = e->be->sync(e);
    return st ? st : sync;
}
