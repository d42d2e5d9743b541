/*
 * exchange_parts.h: what comm/exchange.c and comm/direct.c share of an exchange's insides
 * (private to comm/): its pieces, messages and sides, the exchange itself, and the entry
 * points of the direct stores (direct.c) and of the device unpack they end with.
 */
#ifndef TIDE_COMM_EXCHANGE_PARTS_H
#define TIDE_COMM_EXCHANGE_PARTS_H

#include "comm/exchange.h"

enum { TAG = 7301, RECV = TIDE_XCHG_RECV, SEND = TIDE_XCHG_SEND };
#define NO_STAGING ((size_t)-1)

typedef struct {
    tide_box region;   /* region.order: the order it travels in */
    size_t count;      /* elements, every field */
    size_t at;         /* its dense copy's first element in the staging, or NO_STAGING */
    long long direct;  /* the element of the declared layout where it is one run of it, or -1 */
    int copy;          /* sent as a message of its own, the same region as an earlier such
                        * piece: it shares that one's staging (packed once: a broadcast's) */
} piece;

typedef struct {
    int peer, first, n; /* pieces [first, first + n) */
    size_t count;       /* elements */
} message;

/* What MPI moves as one sequence of parts: a host piece, or a device message. */
typedef struct {
    int peer;
    int piece;          /* host: its piece; device: -1 */
    size_t count, at;   /* elements; where in the staging (device: the message's first) */
    long long part;     /* elements of each part but the last */
    int parts;
} unit;

typedef struct {
    piece *p;
    message *m;
    unit *u;
    int np, nm, nu, room;
    size_t staged;      /* elements of staging */
    int all_direct;     /* every piece goes direct (A2AV: the side's base is the array) */
} side;

struct direct;

struct tide_xchg {
    tide_xchg_desc d;
    tide_box src_box, dst_box;  /* the declared layouts (d's pointers point here or are NULL) */
    side s[2];
    MPI_Datatype type;          /* one element */
    /* MPI point to point: the receives' requests, then the sends' */
    int nreq, nrecv_req;
    MPI_Request *req;
    MPI_Datatype *rtype;        /* per receive request: its subarray type, or NULL */
    int *req_unit;              /* receive request -> its unit */
    int *want;                  /* receive request -> the elements it must bring (of its
                                 * type: 1 for a typed receive) */
    int *left;                  /* per receive unit: parts still to arrive */
    int *done;
    MPI_Status *stats;
    int *counts;                /* Alltoallv: send counts and displacements, receive counts
                                 * and displacements (elements) */
    struct direct *dx;          /* DIRECT: the events and the peers' staging mapped here */
    void *landed;               /* device, deferred unpacks: everything has landed (made at
                                 * the first such exchange; DIRECT waits for the peers' own) */
};

/* Element e of a staging or array at base. */
static inline char *tide_xchg_at(const tide_xchg *x, const void *base, size_t e)
{
    return (char *)base + e * x->d.elem;
}

/* The staged receive pieces unpacked from io->recv into the parts of io->dst they meet,
 * kernels on the stream (exchange.c). */
int tide_xchg_device_unpack(const tide_xchg *x, const tide_xchg_io *io);

/* DIRECT (direct.c): its state made at creation (the send side needs no staging), freed with
 * the exchange, one exchange run whole (START's part; FINISH has nothing left; with io->defer
 * it stops before the landing), and the landing of the last run: io->stream waits for every
 * sender's stores, then unpacks where they went into the staging (tide_xchg_land's part). */
int tide_xchg_direct_setup(tide_xchg *x, char *err, size_t len);
int tide_xchg_direct_land(const tide_xchg *x, const tide_xchg_io *io);
void tide_xchg_direct_free(tide_xchg *x);
int tide_xchg_direct_run(tide_xchg *x, const tide_xchg_io *io, int status);

#endif
