/*
 * stencil_split.c: passes of a stencil on several ranks that hide the halo exchange
 * (stencil_split.h says how). The geometry is worked out in the arrays' storage order, in
 * points of the grown box: the own box [olo, ohi) along each dimension, halos below it (olo
 * points) and above it (n - ohi).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "stencil/stencil_split.h"
#include "core/core.h"

enum { SIDES = 6, SWEEPS = 1 + SIDES };

struct tide_stencil_split {
    int direct;
    long long below;          /* halo planes below the own box along the slowest dimension */
    long long band;           /* fuse r */
    size_t elem;
    long long pitch[2];       /* the grown array's */
    tide_sweep sweep[SWEEPS]; /* the inner box's, then box 2 d of the shell (below along
                               * dimension d) and 2 d + 1 (above); state NULL: none */
    long long view[SWEEPS];   /* element of the grown array each one's view starts at */
    long long dst[SWEEPS];    /* ... and of its first point written */
    void *stream[2];          /* GPU: the shell below, the shell above and the exchange */
    void *ev[2], *ev_plan;    /* recorded on stream[i], on the plan's stream */
};

void tide_stencil_split_destroy(const tide_env *e, tide_stencil_split *s)
{
    if (!s)
        return;
    for (int i = 0; i < SWEEPS; i++)
        if (s->sweep[i].state)
            e->be->sweep_destroy(e, &s->sweep[i]);
    for (int i = 0; i < 2; i++) {
        if (s->stream[i])
            e->be->stream_destroy(s->stream[i]);
        tide_order_destroy(s->ev[i]);
    }
    tide_order_destroy(s->ev_plan);
    free(s);
}

/* The sweep of box b (lo, hi in the grown box's points) in s->sweep[i]: on b grown by band
 * (clipped to the grown box; periodic along a dimension it then holds whole), writing b. */
static int make_sweep(const tide_env *e, tide_stencil_split *s, const tide_sweep *whole, int i,
                      const long long lo[3], const long long hi[3], int fuse, int beside,
                      char *err, size_t len)
{
    tide_sweep *t = &s->sweep[i];
    long long v0[3];
    *t = *whole;
    t->state = NULL;
    for (int k = 0; k < 3; k++) {
        long long a = lo[k] - s->band, b = hi[k] + s->band;
        a = a < 0 ? 0 : a;
        b = b > whole->n[k] ? whole->n[k] : b;
        v0[k] = a;
        t->n[k] = (int)(b - a);
        t->periodic[k] = whole->periodic[k] && t->n[k] == whole->n[k];
        t->out[k][0] = (int)(lo[k] - a), t->out[k][1] = (int)(hi[k] - a);
    }
    t->pitch[0] = s->pitch[0], t->pitch[1] = s->pitch[1];
    t->beside = beside;
    s->view[i] = v0[0] * s->pitch[0] + v0[1] * s->pitch[1] + v0[2];
    s->dst[i] = lo[0] * s->pitch[0] + v0[1] * s->pitch[1] + v0[2];
    if (t->source)
        t->source = (const char *)whole->source + (size_t)s->view[i] * s->elem;
    return e->be->sweep_create(e, t, fuse, err, len);
}

/* The geometry (storage order): the own box's extent [olo, ohi) along each dimension of the
 * grown box. 0 where passes do not split. */
static int geometry(const tide_sweep *w, const tide_box *own, const tide_box *ext, int band,
                    long long olo[3], long long ohi[3])
{
    int halo = 0;
    for (int k = 0; k < 3; k++) {
        int d = own->order[k];
        olo[k] = own->lo[d] - ext->lo[d];
        ohi[k] = own->hi[d] - ext->lo[d];
        int here = olo[k] > 0 || ohi[k] < w->n[k];
        if (here && ohi[k] - olo[k] < 3LL * band)
            return 0;
        halo |= here;
    }
    return halo && tide_box_count(own) > 0;
}

int tide_stencil_split_create(const tide_env *e, const tide_sweep *sweep, const tide_box *own,
                              const tide_box *ext, int fuse, tide_stencil_split **out,
                              char *err, size_t len)
{
    long long olo[3], ohi[3], band = (long long)fuse * sweep->radius;
    *out = NULL;
    if (!geometry(sweep, own, ext, (int)band, olo, ohi))
        return TIDE_SUCCESS;
    tide_stencil_split *s = calloc(1, sizeof *s);
    if (!s)
        return snprintf(err, len, "out of memory creating the plan"), TIDE_ERR_NOMEM;
    s->band = band;
    s->below = olo[0];
    s->elem = sweep->dbl ? sizeof(double) : sizeof(float);
    tide_sweep_pitch(sweep, s->pitch);
    s->direct = olo[1] == 0 && ohi[1] == sweep->n[1] && olo[2] == 0 && ohi[2] == sweep->n[2];
    /* the inner box, and the shell's boxes on each stream (beside: both streams have some) */
    long long in_lo[3], in_hi[3];
    int on[2] = {0, 0};
    for (int k = 0; k < 3; k++) {
        in_lo[k] = olo[k] + (olo[k] > 0 ? band : 0);
        in_hi[k] = ohi[k] - (ohi[k] < sweep->n[k] ? band : 0);
        on[0] |= olo[k] > 0, on[1] |= ohi[k] < sweep->n[k];
    }
    int st = make_sweep(e, s, sweep, 0, in_lo, in_hi, fuse, 0, err, len);
    /* the shell: along each dimension in turn the band next to each halo, over the own box's
     * extent along later dimensions and the inner box's along earlier ones */
    long long lo[3], hi[3];
    memcpy(lo, olo, sizeof lo);
    memcpy(hi, ohi, sizeof hi);
    for (int k = 0; k < 3 && !st; k++) {
        for (int side = 0; side < 2 && !st; side++) {
            if (side == 0 ? olo[k] == 0 : ohi[k] == sweep->n[k])
                continue;
            long long a[3], b[3];
            memcpy(a, lo, sizeof a);
            memcpy(b, hi, sizeof b);
            a[k] = side == 0 ? olo[k] : ohi[k] - band;
            b[k] = side == 0 ? olo[k] + band : ohi[k];
            st = make_sweep(e, s, sweep, 1 + 2 * k + side, a, b, fuse, on[0] && on[1], err,
                            len);
        }
        lo[k] = in_lo[k], hi[k] = in_hi[k];
    }
    for (int i = 0; i < 2 && !st && e->be->gpu; i++)
        if ((st = e->be->stream_create(&s->stream[i], 1)) ||
            (st = tide_order_create(e->ctx, &s->ev[i])))
            snprintf(err, len, "cannot create the split passes' streams: %s",
                     e->be->last_error());
    if (!st && e->be->gpu && (st = tide_order_create(e->ctx, &s->ev_plan)))
        snprintf(err, len, "cannot create the split passes' events: %s", e->be->last_error());
    if (st) {
        tide_stencil_split_destroy(e, s);
        return st;
    }
    tide_log(e->ctx, TIDE_LOG_DEBUG, "stencil: passes split: inner box %lldx%lldx%lld swept "
             "while the halo travels, then a shell of %lld-point bands", in_hi[0] - in_lo[0],
             in_hi[1] - in_lo[1], in_hi[2] - in_lo[2], band);
    *out = s;
    return TIDE_SUCCESS;
}

size_t tide_stencil_split_host_bytes(const tide_stencil_split *s)
{
    size_t b = 0;
    for (int i = 0; s && i < SWEEPS; i++)
        b += s->sweep[i].state ? s->sweep[i].state_bytes : 0;
    return b;
}

int tide_stencil_split_direct(const tide_stencil_split *s) { return s->direct; }

int tide_stencil_split_bands(const tide_env *e, const tide_stencil_split *s, const void *box,
                             void *a)
{
    const tide_sweep *w = &s->sweep[0]; /* the inner box's view: the own planes */
    long long own = w->n[0], n = 2 * s->band;
    size_t pl = (size_t)s->pitch[0] * s->elem;
    int st = TIDE_SUCCESS;
    if (s->below)
        st = e->be->copy(e, (char *)a + s->below * pl, box, (size_t)n * pl);
    if (!st && s->sweep[2].state) /* a halo above */
        st = e->be->copy(e, (char *)a + (s->below + own - n) * pl,
                         (const char *)box + (own - n) * pl, (size_t)n * pl);
    return st;
}

int tide_stencil_split_pass(const tide_env *e, const tide_stencil_split *s, const tide_halo *h,
                            void *from, const void *own, void *to, int to_box, int count,
                            int failed, double *seconds)
{
    tide_env se[2] = {*e, *e}; /* the shell below's, above's (also the exchange's) */
    se[0].stream = s->stream[0], se[1].stream = s->stream[1];
    char *f = from, *t = to;
    size_t es = s->elem;
    long long t0 = to_box ? s->below * s->pitch[0] : 0; /* the grown array's element of to's
                                                         * first */
    /* the exchange reads points the pass before wrote */
    int st = failed ? failed : tide_order_after(s->ev_plan, e->stream, s->stream[1]);
    double a = MPI_Wtime();
    int x = e->be->halo(&se[1], h, from, TIDE_HALO_START);
    double b = MPI_Wtime();
    if (!st)
        st = e->be->sweep(e, &s->sweep[0], own ? own : f + s->view[0] * es,
                          t + (s->dst[0] - t0) * es, count);
    double c = MPI_Wtime();
    int fin = e->be->halo(&se[1], h, from, TIDE_HALO_FINISH);
    x = x ? x : fin;
    *seconds += b - a + MPI_Wtime() - c;
    /* the halo in, the shell on its streams */
    st = st ? st : x;
    int below = 0;
    for (int i = 1; i < SWEEPS; i += 2)
        below |= s->sweep[i].state != NULL;
    if (!st && below)
        st = tide_order_after(s->ev[1], s->stream[1], s->stream[0]);
    for (int i = 1; i < SWEEPS && !st; i++)
        if (s->sweep[i].state)
            st = e->be->sweep(&se[(i - 1) % 2], &s->sweep[i], f + s->view[i] * es,
                              t + (s->dst[i] - t0) * es, count);
    /* the plan's stream after the exchange and the shell, whatever failed */
    for (int i = 0; i < 2; i++)
        if (i == 1 || below) {
            int o = tide_order_after(s->ev[i], s->stream[i], e->stream);
            st = st ? st : o;
        }
    return st;
}
