/*
 * halo.c: the halo exchange of distributed stencils (see halo.h).
 *
 * The regions: for a receiver with extended box E, a sender with box O and a shift s (a
 * multiple of the grid's extent along each periodic dimension, as many as E reaches past the
 * faces), the points of E inside O + s come from the sender's points of that region less s.
 * Both sides list them in the same order (senders by rank, shifts from the lowest), so a
 * message of the staging is the concatenation of its regions, each dense in the receiver's
 * storage order, and MPI matches the host transport's messages of one region each in order.
 * The receiver's own box with no shift is not a halo and is skipped; every other region lies
 * in the halo, since the boxes tile the grid and a shifted box lies outside it.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "comm/halo.h"
#include "comm/region.h"
#include "comm/reshape.h"
#include "comm/transport.h"

enum { HALO_TAG = 7302 };

/* A region of one message: its box (the sender's coordinates on the send side, the
 * receiver's on the receive side), its dense layout's order (the receiver's) and where it
 * starts in the staging, in elements. */
typedef struct {
    tide_box region;
    int order[3];
    size_t at;
} piece;

/* One message: its peer and its pieces [first, first + n), count elements from at. */
typedef struct {
    int peer, first, n;
    size_t at, count;
} message;

typedef struct {
    piece *p;
    message *m;
    int np, nm;
    size_t elements;
} side;

struct tide_halo {
    MPI_Comm comm;
    MPI_Datatype type;
    size_t elem;
    int threads;
    tide_box ext;     /* this rank's array */
    side send, recv;
    char *sbuf, *rbuf; /* the staging in host memory (HOST; pinned for STAGED) */
    char *dsbuf, *drbuf; /* a device halo's staging on the device */
    char *msend, *mrecv; /* the staging MPI sends from and receives into (sbuf and rbuf, or
                          * with CUDA_MPI dsbuf and drbuf) */
    tide_halo_transport transport;
    MPI_Request *req;
};

/* Staging of bytes (at least one): host memory, pinned for a device halo, or on the device. */
static void *stage_alloc(int device, int on_device, size_t bytes)
{
    return device ? tide_transport_stage_alloc(on_device, bytes) : malloc(bytes + 1);
}

static void stage_free(int device, int on_device, void *p)
{
    if (device)
        tide_transport_stage_free(on_device, p);
    else
        free(p);
}

void tide_halo_destroy(tide_halo *h)
{
    if (!h)
        return;
    if (h->type != MPI_DATATYPE_NULL)
        MPI_Type_free(&h->type);
    free(h->send.p), free(h->send.m), free(h->recv.p), free(h->recv.m);
    int device = h->transport != TIDE_HALO_HOST; /* the arrays live in GPU memory */
    stage_free(device, 0, h->sbuf), stage_free(device, 0, h->rbuf);
    stage_free(device, 1, h->dsbuf), stage_free(device, 1, h->drbuf);
    free(h->req);
    free(h);
}

/* The shifts along dimension d: multiples -m .. m of n[d], with m the most any extended box
 * reaches past a face of a periodic dimension (0 otherwise). */
static int reach(const int n[3], const int periodic[3], const tide_box *ext, int P, int d)
{
    int m = 0;
    for (int r = 0; periodic[d] && r < P; r++) {
        int past = -ext[r].lo[d] > ext[r].hi[d] - n[d] ? -ext[r].lo[d] : ext[r].hi[d] - n[d];
        int k = past > 0 ? (past + n[d] - 1) / n[d] : 0;
        m = k > m ? k : m;
    }
    return m;
}

/* Adds the pieces between receiver box e (extended) and sender box o (own) to side x, for
 * every shift; the pieces are in the receiver's coordinates, or the sender's when `sending`.
 * skip_self: the unshifted region (the receiver's own box) is left out. Returns the elements
 * added, or -1 when out of memory. */
static long long add_pieces(side *x, const tide_box *e, const tide_box *o, const int n[3],
                            const int m[3], int sending, int skip_self)
{
    long long added = 0;
    for (int a = -m[0]; a <= m[0]; a++)
        for (int b = -m[1]; b <= m[1]; b++)
            for (int c = -m[2]; c <= m[2]; c++) {
                int s[3] = {a * n[0], b * n[1], c * n[2]};
                if (skip_self && !a && !b && !c)
                    continue;
                tide_box shifted = *o, r;
                for (int d = 0; d < 3; d++)
                    shifted.lo[d] += s[d], shifted.hi[d] += s[d];
                long long count = tide_box_intersect(e, &shifted, &r);
                if (count == 0)
                    continue;
                piece *grown = realloc(x->p, sizeof *x->p * (size_t)(x->np + 1));
                if (!grown)
                    return -1;
                x->p = grown;
                if (sending)
                    for (int d = 0; d < 3; d++)
                        r.lo[d] -= s[d], r.hi[d] -= s[d];
                piece *p = &x->p[x->np++];
                p->region = r;
                memcpy(p->order, e->order, sizeof p->order);
                p->at = x->elements + (size_t)added;
                added += count;
            }
    return added;
}

/* The messages of one side: for each peer, the pieces between its box and ours. */
static int make_side(side *x, int me, int P, const int n[3], const int m[3],
                     const tide_box *own, const tide_box *ext, int sending, char *err,
                     size_t len)
{
    x->m = calloc((size_t)P, sizeof *x->m);
    if (!x->m)
        return snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM;
    for (int q = 0; q < P; q++) {
        int first = x->np;
        long long got = sending ? add_pieces(x, &ext[q], &own[me], n, m, 1, q == me)
                                : add_pieces(x, &ext[me], &own[q], n, m, 0, q == me);
        if (got < 0)
            return snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM;
        if (got == 0)
            continue;
        if (got > INT_MAX)
            return snprintf(err, len, "the halo between ranks %d and %d has %lld points, more "
                            "than one message carries (%d)", sending ? me : q, sending ? q : me,
                            got, INT_MAX), TIDE_ERR_TOO_LARGE;
        x->m[x->nm++] = (message){q, first, x->np - first, x->elements, (size_t)got};
        x->elements += (size_t)got;
    }
    return TIDE_SUCCESS;
}

int tide_halo_create(MPI_Comm comm, const int n[3], const int periodic[3],
                     const tide_box *own, const tide_box *ext, size_t elem, int threads,
                     tide_halo_transport transport, tide_halo **out, char *err, size_t len)
{
    *out = NULL;
    int device = transport != TIDE_HALO_HOST;
    int host = transport == TIDE_HALO_HOST || transport == TIDE_HALO_STAGED;
    int P, me;
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &me);
    tide_halo *h = calloc(1, sizeof *h);
    if (!h)
        return snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM;
    h->comm = comm;
    h->type = MPI_DATATYPE_NULL;
    h->elem = elem;
    h->threads = threads;
    h->transport = transport;
    h->ext = ext[me];
    int m[3];
    for (int d = 0; d < 3; d++)
        m[d] = reach(n, periodic, ext, P, d);
    int st = make_side(&h->send, me, P, n, m, own, ext, 1, err, len);
    if (!st)
        st = make_side(&h->recv, me, P, n, m, own, ext, 0, err, len);
    if (!st) {
        size_t sb = elem * h->send.elements, rb = elem * h->recv.elements;
        h->sbuf = host ? stage_alloc(device, 0, sb) : NULL;
        h->rbuf = host ? stage_alloc(device, 0, rb) : NULL;
        h->dsbuf = device ? stage_alloc(device, 1, sb) : NULL;
        h->drbuf = device ? stage_alloc(device, 1, rb) : NULL;
        h->msend = host ? h->sbuf : h->dsbuf;
        h->mrecv = host ? h->rbuf : h->drbuf;
        h->req = malloc(sizeof *h->req * (size_t)(h->send.np + h->recv.np + 1));
        if ((host && (!h->sbuf || !h->rbuf)) || !h->req || (device && (!h->dsbuf || !h->drbuf)))
            st = TIDE_ERR_NOMEM, snprintf(err, len, "out of memory for the halo staging "
                                          "(%zu bytes%s)", sb + rb,
                                          transport == TIDE_HALO_STAGED ? ", pinned and on the "
                                          "device" : device ? " on the device" : "");
    }
    if (!st && (MPI_Type_contiguous((int)elem, MPI_BYTE, &h->type) != MPI_SUCCESS ||
                MPI_Type_commit(&h->type) != MPI_SUCCESS))
        st = TIDE_ERR_MPI, snprintf(err, len, "MPI_Type_contiguous failed");
    if (st) {
        tide_halo_destroy(h);
        return st;
    }
    *out = h;
    return TIDE_SUCCESS;
}

long long tide_halo_points(const tide_halo *h) { return (long long)h->recv.elements; }

size_t tide_halo_bytes(const tide_halo *h, int on_device)
{
    int held = on_device ? h->transport != TIDE_HALO_HOST
                         : h->transport == TIDE_HALO_HOST || h->transport == TIDE_HALO_STAGED;
    return held ? h->elem * (h->send.elements + h->recv.elements) : 0;
}

tide_halo_transport tide_halo_transport_of(const tide_halo *h) { return h->transport; }

/* A piece's dense layout in the staging: its region in the receiver's order. */
static tide_box dense(const piece *p)
{
    tide_box b = p->region;
    memcpy(b.order, p->order, sizeof b.order);
    return b;
}

/* The element offset in layout b of piece p's region when the region lies inside b as one run
 * in the receiver's order (region.h: tide_region_is_run), so that MPI can send it from there or
 * receive it there without a copy through the staging; else -1. */
static int64_t direct(const piece *p, const tide_box *b)
{
    tide_box r;
    if (tide_box_intersect(&p->region, b, &r) != tide_box_count(&p->region) ||
        !tide_region_is_run(&p->region, b, p->order, 1))
        return -1;
    return tide_box_offset(b, &p->region);
}

/* Where piece p of the receive side lands directly: in the part of `to` that holds its region
 * as one run, or NULL (through the staging). */
static char *direct_in(const tide_halo *h, const piece *p, const tide_parts *to)
{
    for (int i = 0; to && i < to->n; i++) {
        int64_t at = direct(p, &to->box[i]);
        if (at >= 0)
            return (char *)to->data[i] + (size_t)at * h->elem;
    }
    return NULL;
}

/* The messages between this rank and its peers, one per piece (both sides list the pieces in
 * the same order, so MPI's ordering matches them), posted: each receive into its part of `to`
 * where it lands there as one run, else into the staging; each send from `a` (laid out as
 * abox) where its region is one run of it, else packed into the staging first (a NULL: the
 * staging is filled already). Every piece gets a request (complete waits for them all).
 * Returns an MPI code. */
static int post(const tide_halo *h, const void *a, const tide_box *abox, const tide_parts *to)
{
    int rc = MPI_SUCCESS, k = 0;
    for (int i = 0; i < h->recv.nm; i++) {
        const message *x = &h->recv.m[i];
        for (int j = x->first; j < x->first + x->n; j++) {
            const piece *p = &h->recv.p[j];
            char *in = direct_in(h, p, to);
            int e = tide_comm_post(0, in ? in : h->mrecv + p->at * h->elem,
                                   (int)tide_box_count(&p->region), h->type, x->peer, HALO_TAG,
                                   h->comm, &h->req[k++]);
            rc = rc == MPI_SUCCESS ? e : rc;
        }
    }
    for (int i = 0; i < h->send.nm; i++) {
        const message *x = &h->send.m[i];
        for (int j = x->first; j < x->first + x->n; j++) {
            const piece *p = &h->send.p[j];
            int64_t at = a ? direct(p, abox) : -1;
            const char *out = at >= 0 ? (const char *)a + (size_t)at * h->elem
                                      : h->msend + p->at * h->elem;
            if (a && at < 0) {
                tide_box dst = dense(p);
                tide_copy_region(h->elem, 1, &p->region, a, abox, h->msend + p->at * h->elem,
                                 &dst, h->threads);
            }
            int e = tide_comm_post(1, (void *)out, (int)tide_box_count(&p->region), h->type,
                                   x->peer, HALO_TAG, h->comm, &h->req[k++]);
            rc = rc == MPI_SUCCESS ? e : rc;
        }
    }
    return rc;
}

/* The posted messages waited for, then the pieces that arrived in the staging unpacked into
 * the parts of `to` they meet. Returns an MPI code. */
static int complete(const tide_halo *h, const tide_parts *to)
{
    int w = MPI_Waitall(h->recv.np + h->send.np, h->req, MPI_STATUSES_IGNORE);
    for (int j = 0; to && j < h->recv.np; j++) {
        const piece *p = &h->recv.p[j];
        if (direct_in(h, p, to)) /* arrived in place */
            continue;
        tide_box from = dense(p), r;
        for (int i = 0; i < to->n; i++)
            if (tide_box_intersect(&p->region, &to->box[i], &r) > 0)
                tide_copy_region(h->elem, 1, &r, h->mrecv + p->at * h->elem, &from,
                                 to->data[i], &to->box[i], h->threads);
    }
    return w;
}

/* The HOST transport (halo.h: tide_halo_run, tide_halo_run_from): sent from `from` laid out
 * as fbox, received into the parts of `to`; part: the posts, the wait, or both. */
static int execute_host(const tide_halo *h, const void *from, const tide_box *fbox,
                        const tide_parts *to, tide_halo_part part)
{
    int rc = part & TIDE_HALO_START ? post(h, from, fbox, to) : MPI_SUCCESS;
    int w = part & TIDE_HALO_FINISH ? complete(h, to) : MPI_SUCCESS;
    return rc == MPI_SUCCESS && w == MPI_SUCCESS ? TIDE_SUCCESS : TIDE_ERR_MPI;
}

/* A device halo's sends packed from a into the device staging, kernels on stream. */
static int device_pack(const tide_halo *h, const void *a, void *stream)
{
    int st = TIDE_SUCCESS;
    for (int j = 0; j < h->send.np && !st; j++) {
        const piece *p = &h->send.p[j];
        tide_box to = dense(p);
        st = tide_transport_pack(h->elem, 1, &p->region, a, &h->ext,
                                 h->dsbuf + p->at * h->elem, &to, stream);
    }
    return st;
}

/* ... and its receives unpacked from the device staging into a. */
static int device_unpack(const tide_halo *h, void *a, void *stream)
{
    int st = TIDE_SUCCESS;
    for (int j = 0; j < h->recv.np && !st; j++) {
        const piece *p = &h->recv.p[j];
        tide_box from = dense(p);
        st = tide_transport_pack(h->elem, 1, &p->region, h->drbuf + p->at * h->elem,
                                 &from, a, &h->ext, stream);
    }
    return st;
}

/* The STAGED and CUDA_MPI transports (halo.h: tide_halo_run): CUDA_MPI without the copies
 * through host memory. */
static int execute_staged(const tide_halo *h, void *a, void *stream, tide_halo_part part)
{
    int st = TIDE_SUCCESS, host = h->transport == TIDE_HALO_STAGED;
    size_t sb = h->elem * h->send.elements, rb = h->elem * h->recv.elements;
    if (part & TIDE_HALO_START) {
        st = device_pack(h, a, stream);
        if (!st && sb && host)
            st = tide_transport_copy(h->sbuf, h->dsbuf, sb, stream);
    }
    if (!(part & TIDE_HALO_FINISH))
        return st;
    int synced = tide_transport_sync(stream); /* the packs (and the copy down), before the sends */
    st = st ? st : synced;
    /* a failed pack still takes part in the exchange (its peers then get what the staging
     * held, and this rank reports the failure) */
    if (execute_host(h, NULL, NULL, NULL, TIDE_HALO_ALL))
        return TIDE_ERR_MPI;
    if (!st && rb && host)
        st = tide_transport_copy(h->drbuf, h->rbuf, rb, stream);
    return st ? st : device_unpack(h, a, stream);
}

/* The NCCL transport (halo.h: tide_halo_run): all of it asynchronous, issued by START. */
static int execute_nccl(const tide_halo *h, void *a, void *nccl, void *stream)
{
    int st = device_pack(h, a, stream);
    /* every rank posts its whole group whatever failed, so that no peer waits (a failed
     * pack sends what the staging held, and this rank reports the failure) */
    int g = tide_transport_group_start();
    for (int i = 0; i < h->recv.nm; i++) {
        const message *x = &h->recv.m[i];
        int e = tide_transport_recv(nccl, h->drbuf + x->at * h->elem, x->count * h->elem, x->peer,
                                    stream);
        g = g ? g : e;
    }
    for (int i = 0; i < h->send.nm; i++) {
        const message *x = &h->send.m[i];
        int e = tide_transport_send(nccl, h->dsbuf + x->at * h->elem, x->count * h->elem, x->peer,
                                    stream);
        g = g ? g : e;
    }
    int e = tide_transport_group_end();
    st = st ? st : g ? g : e;
    return st ? st : device_unpack(h, a, stream);
}

int tide_halo_run(const tide_halo *h, void *a, void *nccl, void *stream, tide_halo_part part)
{
    switch (h->transport) {
    case TIDE_HALO_STAGED:
    case TIDE_HALO_CUDA_MPI: return execute_staged(h, a, stream, part);
    case TIDE_HALO_NCCL:
        return part & TIDE_HALO_START ? execute_nccl(h, a, nccl, stream) : TIDE_SUCCESS;
    default: {
        const tide_parts whole = {1, {h->ext}, {a}};
        return execute_host(h, a, &h->ext, &whole, part);
    }
    }
}

int tide_halo_run_from(const tide_halo *h, const void *from, const tide_box *from_box,
                       const tide_parts *to)
{
    return h->transport == TIDE_HALO_HOST ? execute_host(h, from, from_box, to, TIDE_HALO_ALL)
                                          : TIDE_ERR_UNSUPPORTED;
}
