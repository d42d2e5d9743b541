/*
 * halo.c: the halo exchange of distributed stencils (see halo.h).
 *
 * The regions: for a receiver with extended box E, a sender with box O and a shift s (a
 * multiple of the grid's extent along each periodic dimension, as many as E reaches past the
 * faces), the points of E inside O + s come from the sender's points of that region less s.
 * Both sides list them in the same order (senders by rank, shifts from the lowest), each
 * dense in the receiver's storage order: the pieces of the exchange (comm/exchange.h), which
 * moves them. The receiver's own box with no shift is not a halo and is skipped; every other
 * region lies in the halo, since the boxes tile the grid and a shifted box lies outside it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "comm/exchange.h"
#include "comm/halo.h"
#include "comm/region.h"
#include "comm/transport.h"

struct tide_halo {
    tide_xchg *x;
    size_t elem;
    tide_box ext;        /* this rank's array */
    tide_exchange how;
    int device;          /* the arrays lie in GPU memory */
    void *sbuf, *rbuf;   /* host arrays: the staging; device arrays over MPI: pinned */
    void *dsbuf, *drbuf; /* device arrays: the staging on the device */
    int started;         /* the status START returned, for FINISH */
};

/* Staging of bytes (at least one): host memory, pinned host memory, or device memory. */
enum { HOST, PINNED, DEVICE };

static void *stage_alloc(int where, size_t bytes)
{
    return where == HOST ? malloc(bytes + 1) : tide_transport_stage_alloc(where == DEVICE, bytes);
}

static void stage_free(int where, void *p)
{
    if (where == HOST)
        free(p);
    else
        tide_transport_stage_free(where == DEVICE, p);
}

/* Where the staging that MPI or the CPU reads and writes lives (sbuf, rbuf). */
static int host_side(const tide_halo *h) { return h->device ? PINNED : HOST; }

void tide_halo_destroy(tide_halo *h)
{
    if (!h)
        return;
    tide_xchg_destroy(h->x);
    stage_free(host_side(h), h->sbuf), stage_free(host_side(h), h->rbuf);
    stage_free(DEVICE, h->dsbuf), stage_free(DEVICE, h->drbuf);
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

/* Adds to l the pieces between receiver box e (extended) and sender box o (own), for every
 * shift, as this rank's message to or from peer; a piece is in the receiver's coordinates, or
 * the sender's when `sending`, and travels in the receiver's order. skip_self: the unshifted
 * region (the receiver's own box) is left out. Returns 0 or TIDE_ERR_NOMEM. */
static int add_pieces(tide_xchg_list *l, int peer, const tide_box *e, const tide_box *o,
                      const int n[3], const int m[3], int sending, int skip_self)
{
    for (int a = -m[0]; a <= m[0]; a++)
        for (int b = -m[1]; b <= m[1]; b++)
            for (int c = -m[2]; c <= m[2]; c++) {
                int s[3] = {a * n[0], b * n[1], c * n[2]};
                if (skip_self && !a && !b && !c)
                    continue;
                tide_box shifted = *o, r;
                for (int d = 0; d < 3; d++)
                    shifted.lo[d] += s[d], shifted.hi[d] += s[d];
                if (tide_box_intersect(e, &shifted, &r) == 0)
                    continue;
                if (sending)
                    for (int d = 0; d < 3; d++)
                        r.lo[d] -= s[d], r.hi[d] -= s[d];
                if (tide_xchg_add(l, sending, peer, &r, e->order))
                    return TIDE_ERR_NOMEM;
            }
    return TIDE_SUCCESS;
}

/* The pieces of both sides: for each peer, those between its box and ours, in the same order
 * on both (senders by rank, shifts from the lowest). */
static int make_list(tide_xchg_list *l, int me, int P, const int n[3], const int m[3],
                     const tide_box *own, const tide_box *ext)
{
    int st = TIDE_SUCCESS;
    for (int q = 0; q < P && !st; q++) {
        st = add_pieces(l, q, &ext[q], &own[me], n, m, 1, q == me);
        if (!st)
            st = add_pieces(l, q, &ext[me], &own[q], n, m, 0, q == me);
    }
    return st;
}

/* The exchange of the pieces and its staging. */
static int make_exchange(tide_halo *h, MPI_Comm comm, tide_xchg_list **l, int threads,
                         char *err, size_t len)
{
    tide_xchg_desc d = {.comm = comm, .elem = h->elem, .fields = 1, .how = h->how,
                        .device = h->device, .threads = threads};
    if (h->device) /* the device calls send from and receive into a laid out as ext */
        d.src_box = d.dst_box = &h->ext;
    int st = tide_xchg_create(&d, l, &h->x, err, len);
    if (st)
        return st;
    size_t sb = tide_xchg_send_bytes(h->x), rb = tide_xchg_recv_bytes(h->x);
    int host = !h->device || h->how == TIDE_EXCHANGE_P2P;
    h->sbuf = host ? stage_alloc(host_side(h), sb) : NULL;
    h->rbuf = host ? stage_alloc(host_side(h), rb) : NULL;
    h->dsbuf = h->device ? stage_alloc(DEVICE, sb) : NULL;
    h->drbuf = h->device ? stage_alloc(DEVICE, rb) : NULL;
    if ((host && (!h->sbuf || !h->rbuf)) || (h->device && (!h->dsbuf || !h->drbuf)))
        return snprintf(err, len, "out of memory for the halo staging (%zu bytes%s)", sb + rb,
                        h->device && host ? ", pinned and on the device"
                        : h->device       ? " on the device" : ""), TIDE_ERR_NOMEM;
    return TIDE_SUCCESS;
}

int tide_halo_create(MPI_Comm comm, const int n[3], const int periodic[3],
                     const tide_box *own, const tide_box *ext, size_t elem, int threads,
                     tide_exchange how, int device, tide_halo **out, char *err, size_t len)
{
    *out = NULL;
    int P, me;
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &me);
    tide_halo *h = calloc(1, sizeof *h);
    tide_xchg_list *l = tide_xchg_list_new();
    int m[3], st = h && l ? TIDE_SUCCESS : TIDE_ERR_NOMEM;
    if (h) {
        h->elem = elem;
        h->how = how;
        h->device = device;
        h->ext = ext[me];
    }
    for (int d = 0; d < 3; d++)
        m[d] = reach(n, periodic, ext, P, d);
    if (!st)
        st = make_list(l, me, P, n, m, own, ext);
    if (st)
        snprintf(err, len, "out of memory");
    if (!st)
        st = make_exchange(h, comm, &l, threads, err, len);
    tide_xchg_list_free(l);
    if (st) {
        tide_halo_destroy(h);
        return st;
    }
    *out = h;
    return TIDE_SUCCESS;
}

long long tide_halo_points(const tide_halo *h)
{
    return (long long)tide_xchg_recv_elements(h->x);
}

size_t tide_halo_bytes(const tide_halo *h, int on_device)
{
    size_t b = tide_xchg_send_bytes(h->x) + tide_xchg_recv_bytes(h->x);
    return on_device ? (h->dsbuf ? b : 0) : (h->sbuf ? b : 0);
}

tide_exchange tide_halo_exchange(const tide_halo *h) { return h->how; }

/* One call's arrays: sent from `from` laid out as fbox, received into the parts of `to`. */
static tide_xchg_io io_of(const tide_halo *h, const void *from, const tide_box *fbox,
                          const tide_parts *to, void *nccl, void *stream)
{
    tide_xchg_io io = {.src = from, .src_box = fbox, .dst = to, .nccl = nccl, .stream = stream};
    io.send = h->device ? h->dsbuf : h->sbuf;
    io.recv = h->device ? h->drbuf : h->rbuf;
    io.hsend = h->device ? h->sbuf : NULL;
    io.hrecv = h->device ? h->rbuf : NULL;
    return io;
}

int tide_halo_run(const tide_halo *ch, void *a, void *nccl, void *stream, tide_halo_part part)
{
    tide_halo *h = (tide_halo *)ch; /* only the status between the halves changes */
    const tide_parts whole = {1, {h->ext}, {a}};
    tide_xchg_io io = io_of(h, a, &h->ext, &whole, nccl, stream);
    if (part & TIDE_HALO_START)
        h->started = tide_xchg_start(h->x, &io, TIDE_SUCCESS);
    return part & TIDE_HALO_FINISH ? tide_xchg_finish(h->x, &io, h->started) : h->started;
}

int tide_halo_run_from(const tide_halo *h, const void *from, const tide_box *from_box,
                       const tide_parts *to)
{
    if (h->device)
        return TIDE_ERR_UNSUPPORTED;
    tide_xchg_io io = io_of(h, from, from_box, to, NULL, NULL);
    int st = tide_xchg_start(h->x, &io, TIDE_SUCCESS);
    return tide_xchg_finish(h->x, &io, st);
}
