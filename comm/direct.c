/*
 * direct.c: the DIRECT transport of the exchange (comm/exchange.h): direct stores between the
 * GPUs of a node.
 *
 * Each sender packs its blocks straight into the receivers' receive staging, mapped into its
 * address space (CUDA IPC), so no send staging, send or receive pass runs; where the receiver's
 * destination stays allocated as long as the exchange (io->dst_kept: a plan's work buffer),
 * straight into the destination itself, in its layout, and no unpack runs. Two rounds of small
 * MPI notes order it without synchronizing any GPU with its host: each receiver records an
 * event once its staging is free (the work before the exchange on its stream done) and tells
 * each sender (hello: the staging's handle, that event's, and where the message goes); each
 * sender's stream waits for that event, stores, records its own event and tells the receiver
 * (done); each receiver's stream waits for the senders' events, then unpacks (deferred: a
 * stream of the caller's choosing waits for them and unpacks, in tide_xchg_land). A peer that
 * failed says so in its note (ok 0): nothing is stored into or waited for from it (a sender
 * that failed waits for the stores it made on the host first), every note is still exchanged,
 * and the failure is returned.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "comm/exchange_parts.h"
#include "comm/region.h"
#include "comm/transport.h"

enum { TAG_HELLO = TAG + 1, TAG_DONE = TAG + 2 };

typedef struct {
    unsigned char mem[TIDE_TRANSPORT_IPC_BYTES];   /* hello: the allocation of the
                                                    * receiver's staging (or destination) */
    unsigned char event[TIDE_TRANSPORT_IPC_BYTES]; /* hello: its "free"; done: the sender's
                                                    * "stored" */
    long long off;                                 /* hello: the staging's (destination's)
                                                    * first byte there */
    long long at;                                  /* hello: the message's first element in
                                                    * the staging */
    tide_box box;                                  /* hello, into: the destination's layout */
    int into;                                      /* hello: 1 stores into the destination */
    int ok;                                        /* 0: the peer failed */
} direct_note;

typedef struct {
    unsigned char mem[TIDE_TRANSPORT_IPC_BYTES], event[TIDE_TRANSPORT_IPC_BYTES];
    void *base, *ev; /* the peer's staging and event as mapped and opened here */
    int dev;         /* the GPU that holds base */
} direct_peer;

struct direct {
    void *free_ev, *stored_ev; /* this rank's (made at the first exchange) */
    unsigned char free_h[TIDE_TRANSPORT_IPC_BYTES], stored_h[TIDE_TRANSPORT_IPC_BYTES];
    direct_peer *to, *from;    /* per send message, per receive message */
    direct_note *out, *in;     /* the notes of one round, [receive messages + send messages] */
    const void *recv;          /* the receive staging (or destination) whose allocation's
                                * handle recv_h is */
    unsigned char recv_h[TIDE_TRANSPORT_IPC_BYTES];
    size_t recv_off;           /* ... and its first byte there */
    int into;                  /* the last run's stores went into the destination */
    MPI_Request *req;
    MPI_Status *stats;
};

int tide_xchg_direct_setup(tide_xchg *x, char *err, size_t len)
{
    int nr = x->s[RECV].nm, ns = x->s[SEND].nm, n = nr + ns + 1;
    struct direct *d = x->dx = calloc(1, sizeof *d);
    if (d) {
        d->to = calloc((size_t)ns + 1, sizeof *d->to);
        d->from = calloc((size_t)nr + 1, sizeof *d->from);
        d->out = calloc((size_t)n, sizeof *d->out);
        d->in = calloc((size_t)n, sizeof *d->in);
        d->req = calloc((size_t)n, sizeof *d->req);
        d->stats = calloc((size_t)n, sizeof *d->stats);
    }
    x->s[SEND].staged = 0; /* the blocks are packed into the receivers' staging */
    if (!d || !d->to || !d->from || !d->out || !d->in || !d->req || !d->stats)
        return snprintf(err, len, "out of memory creating an exchange"), TIDE_ERR_NOMEM;
    return TIDE_SUCCESS;
}

void tide_xchg_direct_free(tide_xchg *x)
{
    struct direct *d = x->dx;
    if (!d)
        return;
    for (int k = 0; d->to && k < x->s[SEND].nm; k++) {
        tide_transport_ipc_mem_close(d->to[k].base);
        tide_transport_event_destroy(d->to[k].ev);
    }
    for (int k = 0; d->from && k < x->s[RECV].nm; k++)
        tide_transport_event_destroy(d->from[k].ev);
    tide_transport_event_destroy(d->free_ev);
    tide_transport_event_destroy(d->stored_ev);
    free(d->to), free(d->from), free(d->out), free(d->in), free(d->req), free(d->stats);
    free(d);
    x->dx = NULL;
}

/* One round of notes: out[k] to the peer of message k of side `to`, in[k] from the peer of
 * message k of side `from`, every one posted and completed whatever failed (a stand-in for a
 * failed post); a note that did not arrive whole reads ok 0. Returns MPI_SUCCESS or the first
 * failure. */
static int direct_notes(tide_xchg *x, const side *to, const side *from, int tag)
{
    struct direct *d = x->dx;
    int nf = from->nm, rc = MPI_SUCCESS;
    memset(d->in, 0, sizeof *d->in * (size_t)nf);
    for (int k = 0; k < nf; k++) {
        int e = tide_xchg_post(0, &d->in[k], (int)sizeof *d->in, MPI_BYTE, from->m[k].peer, tag,
                               x->d.comm, &d->req[k]);
        rc = rc ? rc : e;
    }
    for (int k = 0; k < to->nm; k++) {
        int e = tide_xchg_post(1, &d->out[k], (int)sizeof *d->out, MPI_BYTE, to->m[k].peer,
                               tag, x->d.comm, &d->req[nf + k]);
        rc = rc ? rc : e;
    }
    int w = MPI_Waitall(nf + to->nm, d->req, d->stats);
    for (int k = 0; k < nf; k++) {
        int got = 0;
        if (w != MPI_SUCCESS || MPI_Get_count(&d->stats[k], MPI_BYTE, &got) != MPI_SUCCESS ||
            got != (int)sizeof *d->in)
            d->in[k].ok = 0, rc = rc ? rc : MPI_ERR_TRUNCATE;
    }
    return rc ? rc : w;
}

/* A peer that said it failed, as the reason of this rank's failure. */
static int peer_failed(int peer)
{
    char why[64];
    snprintf(why, sizeof why, "rank %d failed", peer);
    return tide_transport_fail("direct stores", why);
}

/* Peer q's staging's allocation mapped and its event opened here, from its note (again only
 * when they changed). */
static int direct_reach(direct_peer *q, const direct_note *n, int mem)
{
    int st = TIDE_SUCCESS;
    if (mem && (!q->base || memcmp(q->mem, n->mem, sizeof q->mem))) {
        tide_transport_ipc_mem_close(q->base);
        q->base = NULL;
        st = tide_transport_ipc_mem_open(n->mem, &q->base, &q->dev);
        memcpy(q->mem, n->mem, sizeof q->mem);
    }
    if (!st && (!q->ev || memcmp(q->event, n->event, sizeof q->event))) {
        tide_transport_event_destroy(q->ev);
        q->ev = NULL;
        st = tide_transport_ipc_event_open(n->event, &q->ev);
        memcpy(q->event, n->event, sizeof q->event);
    }
    return st;
}

/* Send message k's pieces packed into its receiver's staging (hello n), once the receiver's
 * staging is free. */
static int direct_store(tide_xchg *x, const tide_xchg_io *io, int k, const direct_note *n)
{
    const side *s = &x->s[SEND];
    direct_peer *q = &x->dx->to[k];
    int st = direct_reach(q, n, 1);
    st = st ? st : tide_transport_wait(io->stream, q->ev);
    size_t at = (size_t)n->at;
    char *base = (char *)q->base + n->off;
    for (int i = s->m[k].first; i < s->m[k].first + s->m[k].n && !st; i++) {
        const piece *p = &s->p[i];
        st = tide_transport_store(x->d.elem, x->d.fields, &p->region, io->src, io->src_box,
                                  n->into ? base : tide_xchg_at(x, base, at),
                                  n->into ? &n->box : &p->region, q->dev, io->stream);
        at += p->count;
    }
    return st;
}

/* The senders may store into the destination itself: it stays allocated as long as the
 * exchange and is one part that holds every piece this rank receives. */
static int into_destination(const tide_xchg *x, const tide_xchg_io *io)
{
    const side *r = &x->s[RECV];
    int into = io->dst_kept && io->dst && io->dst->n == 1;
    for (int i = 0; i < r->np && into; i++)
        into = tide_box_within(&r->p[i].region, &io->dst->box[0]);
    return into;
}

int tide_xchg_direct_run(tide_xchg *x, const tide_xchg_io *io, int status)
{
    struct direct *d = x->dx;
    const side *r = &x->s[RECV], *s = &x->s[SEND];
    int st = status;
    if (!st && !d->free_ev)
        st = tide_transport_ipc_event_create(&d->free_ev, d->free_h);
    if (!st && !d->stored_ev)
        st = tide_transport_ipc_event_create(&d->stored_ev, d->stored_h);
    /* hello: this rank's staging (destination) is free once the work before on its stream
     * is done */
    if (!st && r->nm)
        st = tide_transport_record(d->free_ev, io->stream);
    d->into = into_destination(x, io);
    const void *to = d->into ? io->dst->data[0] : io->recv;
    unsigned char h[TIDE_TRANSPORT_IPC_BYTES] = {0};
    size_t off = 0;
    int hs = !st && r->nm && d->recv != to ? tide_transport_ipc_mem_handle(to, h, &off) : -1;
    if (hs > 0 && d->into) { /* a caller's array CUDA IPC cannot export (a pool's, say) */
        d->into = 0;
        to = io->recv;
        hs = d->recv != to ? tide_transport_ipc_mem_handle(to, h, &off) : -1;
    }
    if (hs >= 0) { /* a new handle (or none: a failure) */
        memcpy(d->recv_h, h, sizeof h);
        d->recv_off = off;
        d->recv = hs ? NULL : to;
        st = hs;
    }
    for (int k = 0; k < r->nm; k++) {
        direct_note *n = &d->out[k];
        memcpy(n->mem, d->recv_h, sizeof n->mem);
        memcpy(n->event, d->free_h, sizeof n->event);
        n->off = (long long)d->recv_off;
        n->at = (long long)r->p[r->m[k].first].at;
        n->into = d->into;
        if (d->into)
            n->box = io->dst->box[0];
        n->ok = !st;
    }
    int mpi = direct_notes(x, r, s, TAG_HELLO);
    /* the stores, into every receiver that can take them */
    int stored = TIDE_SUCCESS;
    for (int k = 0; k < s->nm; k++) {
        int e = st               ? TIDE_ERR_BACKEND
                : !d->in[k].ok ? peer_failed(s->m[k].peer)
                               : direct_store(x, io, k, &d->in[k]);
        stored = stored ? stored : e;
    }
    stored = stored ? stored : s->nm ? tide_transport_record(d->stored_ev, io->stream) : 0;
    if (st || stored) /* a failure: the stores made are done before any receiver goes on */
        tide_transport_sync(io->stream);
    for (int k = 0; k < s->nm; k++) {
        direct_note *n = &d->out[k];
        memcpy(n->event, d->stored_h, sizeof n->event);
        n->ok = !st && !stored;
    }
    int mpi2 = direct_notes(x, s, r, TAG_DONE);
    mpi = mpi ? mpi : mpi2;
    st = st ? st : mpi != MPI_SUCCESS ? TIDE_ERR_MPI : stored;
    return st || io->defer ? st : tide_xchg_direct_land(x, io);
}

int tide_xchg_direct_land(const tide_xchg *x, const tide_xchg_io *io)
{
    struct direct *d = x->dx;
    int landed = TIDE_SUCCESS;
    for (int k = 0; k < x->s[RECV].nm; k++) {
        int e = !d->in[k].ok ? peer_failed(x->s[RECV].m[k].peer)
                             : direct_reach(&d->from[k], &d->in[k], 0);
        e = e ? e : tide_transport_wait(io->stream, d->from[k].ev);
        landed = landed ? landed : e;
    }
    return landed || d->into ? landed : tide_xchg_device_unpack(x, io);
}
