/*
 * reshape.c: who sends which sub-box to whom; the exchange (comm/exchange.h) moves them.
 *
 * For every peer q: my send region is my source box cut with q's destination box, my receive
 * region q's source box cut with my destination box. A send block is packed in q's storage
 * order, so q unpacks with a strided copy (or not at all: a block that is one contiguous run
 * of the destination is received straight into it, and one that is a run of the source in the
 * receiver's order is sent straight from it).
 */
#include <stdio.h>
#include <stdlib.h>
#include "comm/exchange.h"
#include "comm/region.h"
#include "comm/reshape.h"
#include "comm/transport.h"

struct tide_reshape {
    tide_xchg *x;
    int rank, nranks, batch, threads;
    size_t elem;
    tide_exchange exchange; /* the MPI pattern: A2AV or P2P */
    tide_exchange how;      /* how blocks travel: that, or for device arrays NCCL, CUDA_MPI,
                             * DIRECT */
    int device;
    void *nccl;             /* device arrays: the NCCL communicator */
    tide_box src, dst;      /* this rank's boxes */
    int has_self;
    tide_box self_region;
    int peers;              /* the most peers this rank sends to or receives from */
};

/* Adds one side's blocks to l: for every peer q but this rank, this rank's box `mine` cut
 * with q's box on the other side, travelling in the receiver's order. Senders start with the
 * next rank (receivers with the previous) so that each rank talks to a different peer at a
 * time. Returns the number of peers, or -1 when out of memory. */
static int add_blocks(tide_xchg_list *l, int me, int nranks, const tide_box *mine,
                      const tide_box *theirs, int sending)
{
    int peers = 0;
    for (int i = 1; i < nranks; i++) {
        int q = sending ? (me + i) % nranks : (me - i + nranks) % nranks;
        tide_box r;
        if (tide_box_intersect(mine, &theirs[q], &r) == 0)
            continue;
        const int *travel = sending ? theirs[q].order : mine->order;
        if (tide_xchg_add(l, sending, q, &r, travel))
            return -1;
        peers++;
    }
    return peers;
}

/* Alltoallv walks every peer; pairwise messages pay only for the peers that talk. Every rank
 * must make the same choice, so it is made from all ranks' boxes: pairwise when even the
 * busiest rank sends to fewer than half of the others. */
static tide_exchange auto_exchange(const tide_box *src, const tide_box *dst, int nranks)
{
    int busiest = 0;
    for (int r = 0; r < nranks; r++) {
        int peers = 0;
        for (int q = 0; q < nranks; q++) {
            tide_box x;
            peers += q != r && tide_box_intersect(&src[r], &dst[q], &x) > 0;
        }
        busiest = peers > busiest ? peers : busiest;
    }
    return busiest * 2 < nranks - 1 ? TIDE_EXCHANGE_P2P : TIDE_EXCHANGE_A2AV;
}

/* device: arrays in device memory, moved by how (tide_reshape_create_device). */
static int create(MPI_Comm comm, const tide_box *src, const tide_box *dst,
                  const tide_box *part_src, const tide_box *part_dst, size_t elem,
                  int batch, tide_exchange exchange, int threads, int device,
                  tide_exchange how, void *nccl, tide_reshape **out, char *err,
                  size_t errlen)
{
    tide_reshape *r = calloc(1, sizeof *r);
    tide_xchg_list *l = tide_xchg_list_new();
    if (!r || !l) {
        free(r);
        tide_xchg_list_free(l);
        return snprintf(err, errlen, "out of memory creating a reshape"), TIDE_ERR_NOMEM;
    }
    MPI_Comm_rank(comm, &r->rank);
    MPI_Comm_size(comm, &r->nranks);
    r->elem = elem;
    r->batch = batch;
    r->threads = threads;
    r->device = device;
    r->nccl = nccl;
    r->src = src[r->rank];
    r->dst = dst[r->rank];
    const tide_box *ps = part_src ? part_src : src, *pd = part_dst ? part_dst : dst;
    r->has_self = tide_box_intersect(&ps[r->rank], &pd[r->rank], &r->self_region) > 0;
    r->exchange = exchange == TIDE_EXCHANGE_AUTO ? auto_exchange(ps, pd, r->nranks) : exchange;
    r->how = device && (how == TIDE_EXCHANGE_NCCL || how == TIDE_EXCHANGE_CUDA_MPI ||
                        how == TIDE_EXCHANGE_DIRECT)
                 ? how : r->exchange;
    int s = add_blocks(l, r->rank, r->nranks, &ps[r->rank], pd, 1);
    int v = s < 0 ? -1 : add_blocks(l, r->rank, r->nranks, &pd[r->rank], ps, 0);
    if (v < 0) {
        tide_xchg_list_free(l);
        tide_reshape_destroy(r);
        return snprintf(err, errlen, "out of memory creating a reshape"), TIDE_ERR_NOMEM;
    }
    r->peers = s > v ? s : v;
    tide_xchg_desc d = {.comm = comm, .elem = elem, .fields = batch, .how = r->how,
                        .device = device, .threads = threads, .src_box = &r->src,
                        .dst_box = &r->dst};
    int st = tide_xchg_create(&d, &l, &r->x, err, errlen);
    if (st) {
        tide_reshape_destroy(r);
        return st;
    }
    *out = r;
    return TIDE_SUCCESS;
}

int tide_reshape_create(MPI_Comm comm, const tide_box *src, const tide_box *dst,
                        const tide_box *part_src, const tide_box *part_dst, size_t elem,
                        int batch, tide_exchange exchange, int threads, tide_reshape **out,
                        char *err, size_t errlen)
{
    return create(comm, src, dst, part_src, part_dst, elem, batch, exchange, threads, 0,
                  TIDE_EXCHANGE_AUTO, NULL, out, err, errlen);
}

int tide_reshape_create_device(MPI_Comm comm, const tide_box *src, const tide_box *dst,
                               const tide_box *part_src, const tide_box *part_dst, size_t elem,
                               int batch, tide_exchange transport, void *nccl,
                               tide_reshape **out, char *err, size_t errlen)
{
    /* NCCL, CUDA-aware MPI and direct stores move every block pairwise (the MPI pattern they
     * are filed under, P2P, is theirs); staged transports keep the pattern asked for */
    tide_exchange mpi = transport == TIDE_EXCHANGE_NCCL || transport == TIDE_EXCHANGE_CUDA_MPI ||
                                transport == TIDE_EXCHANGE_DIRECT
                            ? TIDE_EXCHANGE_P2P : transport;
    return create(comm, src, dst, part_src, part_dst, elem, batch, mpi, 1, 1, transport, nccl,
                  out, err, errlen);
}

void tide_reshape_destroy(tide_reshape *r)
{
    if (!r)
        return;
    tide_xchg_destroy(r->x);
    free(r);
}

size_t tide_reshape_send_bytes(const tide_reshape *r) { return tide_xchg_send_bytes(r->x); }
size_t tide_reshape_recv_bytes(const tide_reshape *r) { return tide_xchg_recv_bytes(r->x); }
tide_exchange tide_reshape_exchange(const tide_reshape *r) { return r->how; }
int tide_reshape_peers(const tide_reshape *r) { return r->peers; }

/* The points this rank keeps: copied from src to dst, on the CPU or (device) on the stream. */
static int copy_self(const tide_reshape *r, const void *src, void *dst, void *stream)
{
    if (!r->has_self)
        return TIDE_SUCCESS;
    if (r->device)
        return tide_transport_pack(r->elem, r->batch, &r->self_region, src, &r->src, dst,
                                   &r->dst, stream);
    tide_copy_region(r->elem, r->batch, &r->self_region, src, &r->src, dst, &r->dst,
                     r->threads);
    return TIDE_SUCCESS;
}

/* The exchange, the own points copied while the messages travel (deferred: they are copied
 * when the rest lands). */
static int run(const tide_reshape *r, const tide_xchg_io *io)
{
    int st = tide_xchg_start(r->x, io, TIDE_SUCCESS);
    int self = io->defer ? TIDE_SUCCESS : copy_self(r, io->src, io->dst->data[0], io->stream);
    int fin = tide_xchg_finish(r->x, io, st ? st : self);
    return st ? st : fin ? fin : self;
}

int tide_reshape_execute(const tide_reshape *r, const void *src, void *dst, void *sendbuf,
                         void *recvbuf)
{
    const tide_parts to = {1, {r->dst}, {dst}};
    tide_xchg_io io = {.src = src, .src_box = &r->src, .dst = &to, .send = sendbuf,
                       .recv = recvbuf};
    return run(r, &io);
}

int tide_reshape_execute_device(const tide_reshape *r, const void *src, void *dst, void *dsend,
                                void *drecv, void *hsend, void *hrecv, void *stream, int flags)
{
    const tide_parts to = {1, {r->dst}, {dst}};
    tide_xchg_io io = {.src = src, .src_box = &r->src, .dst = &to, .send = dsend,
                       .recv = drecv, .hsend = hsend, .hrecv = hrecv, .nccl = r->nccl,
                       .stream = stream, .defer = !!(flags & TIDE_RESHAPE_DEFER),
                       .dst_kept = !!(flags & TIDE_RESHAPE_DST_KEPT)};
    return run(r, &io);
}

int tide_reshape_land_device(const tide_reshape *r, const void *src, void *dst, void *drecv,
                             void *stream, int status)
{
    const tide_parts to = {1, {r->dst}, {dst}};
    tide_xchg_io io = {.src = src, .src_box = &r->src, .dst = &to, .recv = drecv,
                       .stream = stream};
    int self = status ? status : copy_self(r, src, dst, stream);
    return tide_xchg_land(r->x, &io, self);
}
