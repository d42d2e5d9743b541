/*
 * reshape.c: who sends which sub-box to whom, and the two exchange backends.
 *
 * For every peer q: my send region is my source box cut with q's destination box, my receive
 * region q's source box cut with my destination box. A send block is packed in q's storage
 * order, so q unpacks with a strided copy (or not at all: a block that is one contiguous run
 * of the destination is received straight into it, and one that is a run of the source in the
 * receiver's order is sent straight from it).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include "tide_config.h"
#include "region.h"
#include "reshape.h"
#if TIDE_HAVE_CUDA
#include "gpu.h"
#endif

typedef struct {
    int peer;
    tide_box region;  /* points exchanged with this peer */
    int64_t count;    /* elements, all fields */
    int direct;       /* send from the source / receive into the destination, no copy */
    int64_t offset;   /* direct: element offset in the array; else in the staging buffer */
} peer_block;

struct tide_reshape {
    MPI_Comm comm;
    int rank, nranks, batch, threads;
    size_t elem;
    MPI_Datatype type;      /* elem bytes, contiguous */
    tide_exchange exchange;
    tide_box src, dst;      /* this rank's boxes */
    int has_self;
    tide_box self_region;
    int nsend, nrecv;       /* blocks with peers other than self, count > 0 */
    peer_block *send, *recv;
    int all_send_direct, all_recv_direct;
    size_t send_bytes, recv_bytes;
    /* a2av tables (elements), built only for that backend */
    int *scounts, *sdispls, *rcounts, *rdispls;
    /* device arrays: how blocks travel (NCCL, CUDA_MPI, or staged A2AV/P2P), NCCL
     * communicator and stream */
    int device;
    tide_exchange transport;
    void *nccl, *stream;
    /* p2p requests */
    MPI_Request *reqs;
    int *done;
};

static int64_t box_volume(const tide_box *b)
{
    return tide_ext(b, 0) * tide_ext(b, 1) * tide_ext(b, 2);
}

/* Build the block list for one side. mine: this rank's box on that side; theirs: the peers'
 * boxes on the other side; layout_order: for each peer, the order the block travels in. */
static int make_blocks(int me, int nranks, const tide_box *mine, const tide_box *theirs,
                       int batch, int sending, peer_block **out, int *nout, size_t *staging,
                       int *all_direct)
{
    peer_block *b = calloc((size_t)nranks, sizeof *b);
    if (!b)
        return TIDE_ERR_NOMEM;
    int n = 0;
    int64_t staged = 0;
    *all_direct = 1;
    for (int i = 1; i < nranks; i++) {
        /* Start with the next rank so each rank talks to a different peer at a time. */
        int q = sending ? (me + i) % nranks : (me - i + nranks) % nranks;
        tide_box r;
        int64_t cnt = tide_box_intersect(mine, &theirs[q], &r) * batch;
        if (cnt == 0)
            continue;
        /* The block travels in the receiver's order (the destination box's), kept in the
         * region's order field: a staged block is a dense box of the region in that order. */
        const int *travel = sending ? theirs[q].order : mine->order;
        for (int k = 0; k < 3; k++)
            r.order[k] = travel[k];
        peer_block *p = &b[n++];
        p->peer = q;
        p->region = r;
        p->count = cnt;
        p->direct = tide_region_is_run(&r, mine, travel, batch);
        if (p->direct) {
            p->offset = tide_box_offset(mine, &r);
        } else {
            p->offset = staged;
            staged += cnt;
            *all_direct = 0;
        }
    }
    *out = b;
    *nout = n;
    *staging = (size_t)staged;
    return TIDE_SUCCESS;
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

/* Give every block of one side a place in the staging buffer, in peer-list order. */
static void stage_all(peer_block *b, int n)
{
    int64_t off = 0;
    for (int i = 0; i < n; i++) {
        b[i].direct = 0;
        b[i].offset = off;
        off += b[i].count;
    }
}

/* device: arrays in device memory, moved by transport (tide_reshape_create_device). */
static int create(MPI_Comm comm, const tide_box *src, const tide_box *dst, size_t elem,
                  int batch, tide_exchange exchange, int threads, int device,
                  tide_exchange transport, void *nccl, void *stream, tide_reshape **out,
                  char *err, size_t errlen)
{
    tide_reshape *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory creating a reshape");
        return TIDE_ERR_NOMEM;
    }
    r->comm = comm;
    MPI_Comm_rank(comm, &r->rank);
    MPI_Comm_size(comm, &r->nranks);
    r->elem = elem;
    r->batch = batch;
    r->threads = threads;
    r->device = device;
    r->nccl = nccl;
    r->stream = stream;
    r->src = src[r->rank];
    r->dst = dst[r->rank];
    r->type = MPI_DATATYPE_NULL;
    r->has_self = tide_box_intersect(&r->src, &r->dst, &r->self_region) > 0;

    size_t sstage = 0, rstage = 0;
    int st = make_blocks(r->rank, r->nranks, &r->src, dst, batch, 1, &r->send, &r->nsend,
                         &sstage, &r->all_send_direct);
    if (st == TIDE_SUCCESS)
        st = make_blocks(r->rank, r->nranks, &r->dst, src, batch, 0, &r->recv, &r->nrecv,
                         &rstage, &r->all_recv_direct);
    if (st != TIDE_SUCCESS) {
        snprintf(err, errlen, "out of memory creating a reshape");
        tide_reshape_destroy(r);
        return st;
    }

    if (exchange == TIDE_EXCHANGE_AUTO)
        exchange = auto_exchange(src, dst, r->nranks);
    r->exchange = exchange;
    /* Device data: NCCL and CUDA-aware MPI as asked, else host staging with this exchange. */
    r->transport = device && (transport == TIDE_EXCHANGE_NCCL ||
                              transport == TIDE_EXCHANGE_CUDA_MPI) ? transport : exchange;
    if (device && r->transport != TIDE_EXCHANGE_NCCL) {
        /* Device data over MPI: every block is packed on the device and moved as one piece. */
        stage_all(r->send, r->nsend);
        stage_all(r->recv, r->nrecv);
        r->all_send_direct = r->all_recv_direct = 0;
    }

    int64_t max_count = 0;
    for (int i = 0; i < r->nsend; i++)
        max_count = r->send[i].count > max_count ? r->send[i].count : max_count;
    for (int i = 0; i < r->nrecv; i++)
        max_count = r->recv[i].count > max_count ? r->recv[i].count : max_count;
    int64_t whole = box_volume(&r->src) * batch, whole_d = box_volume(&r->dst) * batch;
    if (whole_d > whole)
        whole = whole_d;
    if (max_count > INT_MAX || (exchange == TIDE_EXCHANGE_A2AV && whole > INT_MAX)) {
        snprintf(err, errlen, "a reshape block of %lld elements exceeds MPI's int counts",
                 (long long)(max_count > whole ? max_count : whole));
        tide_reshape_destroy(r);
        return TIDE_ERR_TOO_LARGE;
    }

    if (exchange == TIDE_EXCHANGE_A2AV) {
        /* One Alltoallv takes one send and one receive base: a side goes direct only when all
         * its blocks do; otherwise every block of that side is staged. */
        if (!r->all_send_direct)
            stage_all(r->send, r->nsend);
        if (!r->all_recv_direct)
            stage_all(r->recv, r->nrecv);
        r->scounts = calloc((size_t)r->nranks * 4, sizeof(int));
        if (!r->scounts) {
            snprintf(err, errlen, "out of memory creating a reshape");
            tide_reshape_destroy(r);
            return TIDE_ERR_NOMEM;
        }
        r->sdispls = r->scounts + r->nranks;
        r->rcounts = r->sdispls + r->nranks;
        r->rdispls = r->rcounts + r->nranks;
        for (int i = 0; i < r->nsend; i++) {
            r->scounts[r->send[i].peer] = (int)r->send[i].count;
            r->sdispls[r->send[i].peer] = (int)r->send[i].offset;
        }
        for (int i = 0; i < r->nrecv; i++) {
            r->rcounts[r->recv[i].peer] = (int)r->recv[i].count;
            r->rdispls[r->recv[i].peer] = (int)r->recv[i].offset;
        }
    } else {
        r->reqs = malloc(sizeof(MPI_Request) * (size_t)(r->nsend + r->nrecv + 1));
        r->done = malloc(sizeof(int) * (size_t)(r->nrecv + 1));
        if (!r->reqs || !r->done) {
            snprintf(err, errlen, "out of memory creating a reshape");
            tide_reshape_destroy(r);
            return TIDE_ERR_NOMEM;
        }
    }
    sstage = rstage = 0;
    for (int i = 0; i < r->nsend; i++)
        if (!r->send[i].direct)
            sstage += (size_t)r->send[i].count;
    for (int i = 0; i < r->nrecv; i++)
        if (!r->recv[i].direct)
            rstage += (size_t)r->recv[i].count;
    r->send_bytes = sstage * elem;
    r->recv_bytes = rstage * elem;

    if (MPI_Type_contiguous((int)elem, MPI_BYTE, &r->type) != MPI_SUCCESS ||
        MPI_Type_commit(&r->type) != MPI_SUCCESS) {
        snprintf(err, errlen, "MPI_Type_contiguous failed");
        tide_reshape_destroy(r);
        return TIDE_ERR_MPI;
    }
    *out = r;
    return TIDE_SUCCESS;
}

int tide_reshape_create(MPI_Comm comm, const tide_box *src, const tide_box *dst, size_t elem,
                        int batch, tide_exchange exchange, int threads, tide_reshape **out,
                        char *err, size_t errlen)
{
    return create(comm, src, dst, elem, batch, exchange, threads, 0, TIDE_EXCHANGE_AUTO, NULL,
                  NULL, out, err, errlen);
}

int tide_reshape_create_device(MPI_Comm comm, const tide_box *src, const tide_box *dst,
                               size_t elem, int batch, tide_exchange transport, void *nccl,
                               void *stream, tide_reshape **out, char *err, size_t errlen)
{
#if TIDE_HAVE_CUDA
    /* CUDA-aware MPI moves the packed blocks with one Alltoallv; NCCL needs no MPI tables
     * (P2P's are the smallest). */
    tide_exchange mpi = transport == TIDE_EXCHANGE_CUDA_MPI ? TIDE_EXCHANGE_A2AV
                        : transport == TIDE_EXCHANGE_NCCL   ? TIDE_EXCHANGE_P2P : transport;
    return create(comm, src, dst, elem, batch, mpi, 1, 1, transport, nccl, stream, out, err,
                  errlen);
#else
    (void)comm, (void)src, (void)dst, (void)elem, (void)batch, (void)transport, (void)nccl;
    (void)stream, (void)out;
    snprintf(err, errlen, "this build has no CUDA");
    return TIDE_ERR_UNSUPPORTED;
#endif
}

void tide_reshape_destroy(tide_reshape *r)
{
    if (!r)
        return;
    if (r->type != MPI_DATATYPE_NULL)
        MPI_Type_free(&r->type);
    free(r->send);
    free(r->recv);
    free(r->scounts);
    free(r->reqs);
    free(r->done);
    free(r);
}

size_t tide_reshape_send_bytes(const tide_reshape *r) { return r->send_bytes; }
size_t tide_reshape_recv_bytes(const tide_reshape *r) { return r->recv_bytes; }
tide_exchange tide_reshape_exchange(const tide_reshape *r)
{
    return r->device ? r->transport : r->exchange;
}
int tide_reshape_peers(const tide_reshape *r)
{
    return r->nsend > r->nrecv ? r->nsend : r->nrecv;
}

/* A staged block is the region as a dense box in the receiver's order (p->region.order). */
static void pack(const tide_reshape *r, const peer_block *p, const void *src, void *sendbuf)
{
    tide_copy_region(r->elem, r->batch, &p->region, src, &r->src,
                     (char *)sendbuf + p->offset * r->elem, &p->region, r->threads);
}

static void unpack(const tide_reshape *r, const peer_block *p, const void *recvbuf, void *dst)
{
    tide_copy_region(r->elem, r->batch, &p->region, (const char *)recvbuf + p->offset * r->elem,
                     &p->region, dst, &r->dst, r->threads);
}

static void copy_self(const tide_reshape *r, const void *src, void *dst)
{
    if (r->has_self)
        tide_copy_region(r->elem, r->batch, &r->self_region, src, &r->src, dst, &r->dst,
                         r->threads);
}

static int exec_a2av(const tide_reshape *r, const void *src, void *dst, void *sendbuf,
                     void *recvbuf)
{
    if (!r->all_send_direct)
        for (int i = 0; i < r->nsend; i++)
            pack(r, &r->send[i], src, sendbuf);
    const void *sb = r->all_send_direct ? src : sendbuf;
    void *rb = r->all_recv_direct ? dst : recvbuf;
    int rc = MPI_Alltoallv(sb, r->scounts, r->sdispls, r->type, rb, r->rcounts, r->rdispls,
                           r->type, r->comm);
    copy_self(r, src, dst);
    if (rc != MPI_SUCCESS)
        return TIDE_ERR_MPI;
    if (!r->all_recv_direct)
        for (int i = 0; i < r->nrecv; i++)
            unpack(r, &r->recv[i], recvbuf, dst);
    return TIDE_SUCCESS;
}

enum { P2P_TAG = 7301 };

/* Post every receive of a pairwise exchange (requests r->reqs[0..nrecv)): direct blocks into
 * dst, staged ones into recvbuf. */
static int post_receives(const tide_reshape *r, void *dst, void *recvbuf)
{
    int rc = MPI_SUCCESS;
    for (int i = 0; i < r->nrecv && rc == MPI_SUCCESS; i++) {
        const peer_block *p = &r->recv[i];
        char *base = p->direct ? (char *)dst : (char *)recvbuf;
        rc = MPI_Irecv(base + p->offset * r->elem, (int)p->count, r->type, p->peer, P2P_TAG,
                       r->comm, &r->reqs[i]);
    }
    return rc;
}

static int exec_p2p(const tide_reshape *r, const void *src, void *dst, void *sendbuf,
                    void *recvbuf)
{
    MPI_Request *rreq = r->reqs, *sreq = r->reqs + r->nrecv;
    int rc = post_receives(r, dst, recvbuf);
    if (rc != MPI_SUCCESS)
        return TIDE_ERR_MPI;
    /* Pack peer by peer and send each block as soon as it is ready, so the packing of the
     * next block overlaps the transfer of the previous one. */
    for (int i = 0; i < r->nsend && rc == MPI_SUCCESS; i++) {
        const peer_block *p = &r->send[i];
        const char *base;
        if (p->direct) {
            base = (const char *)src;
        } else {
            pack(r, p, src, sendbuf);
            base = (const char *)sendbuf;
        }
        rc = MPI_Isend(base + p->offset * r->elem, (int)p->count, r->type, p->peer, P2P_TAG,
                       r->comm, &sreq[i]);
    }
    copy_self(r, src, dst);
    /* Unpack blocks in the order they arrive. */
    for (int left = r->nrecv; left > 0 && rc == MPI_SUCCESS;) {
        int n = 0;
        rc = MPI_Waitsome(r->nrecv, rreq, &n, r->done, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS || n == MPI_UNDEFINED)
            break;
        for (int k = 0; k < n; k++)
            if (!r->recv[r->done[k]].direct)
                unpack(r, &r->recv[r->done[k]], recvbuf, dst);
        left -= n;
    }
    if (rc == MPI_SUCCESS)
        rc = MPI_Waitall(r->nsend, sreq, MPI_STATUSES_IGNORE);
    return rc == MPI_SUCCESS ? TIDE_SUCCESS : TIDE_ERR_MPI;
}

int tide_reshape_execute(const tide_reshape *r, const void *src, void *dst, void *sendbuf,
                         void *recvbuf)
{
    if (r->exchange == TIDE_EXCHANGE_A2AV)
        return exec_a2av(r, src, dst, sendbuf, recvbuf);
    return exec_p2p(r, src, dst, sendbuf, recvbuf);
}

/* ---- device arrays ---------------------------------------------------------------------- */

#if TIDE_HAVE_CUDA
/* Every block packed: one Alltoallv, or one Isend/Irecv per peer, on the staging buffers. */
static int mpi_staged(const tide_reshape *r, const char *sbuf, char *rbuf)
{
    if (r->exchange == TIDE_EXCHANGE_A2AV)
        return MPI_Alltoallv(sbuf, r->scounts, r->sdispls, r->type, rbuf, r->rcounts,
                             r->rdispls, r->type, r->comm) == MPI_SUCCESS ? 0 : TIDE_ERR_MPI;
    MPI_Request *sreq = r->reqs + r->nrecv;
    int rc = post_receives(r, NULL, rbuf); /* every block is staged */
    for (int i = 0; i < r->nsend && rc == MPI_SUCCESS; i++)
        rc = MPI_Isend(sbuf + r->send[i].offset * r->elem, (int)r->send[i].count, r->type,
                       r->send[i].peer, P2P_TAG, r->comm, &sreq[i]);
    if (rc == MPI_SUCCESS)
        rc = MPI_Waitall(r->nrecv + r->nsend, r->reqs, MPI_STATUSES_IGNORE);
    return rc == MPI_SUCCESS ? 0 : TIDE_ERR_MPI;
}

int tide_reshape_execute_device(const tide_reshape *r, const void *src, void *dst, void *dsend,
                                void *drecv, void *hsend, void *hrecv)
{
    void *s = r->stream;
    int st = 0;
    for (int i = 0; i < r->nsend && !st; i++)
        if (!r->send[i].direct)
            st = tide_gpu_copy_region_async(r->elem, r->batch, &r->send[i].region, src, &r->src,
                                            (char *)dsend + r->send[i].offset * r->elem,
                                            &r->send[i].region, s);
    if (!st && r->has_self)
        st = tide_gpu_copy_region_async(r->elem, r->batch, &r->self_region, src, &r->src, dst,
                                        &r->dst, s);
    if (st && r->transport == TIDE_EXCHANGE_NCCL)
        return st;
    if (r->transport == TIDE_EXCHANGE_NCCL) {
        st = tide_nccl_group_start();
        for (int i = 0; i < r->nrecv && !st; i++) {
            const peer_block *p = &r->recv[i];
            char *base = p->direct ? (char *)dst : (char *)drecv;
            st = tide_nccl_recv(r->nccl, base + p->offset * r->elem, (size_t)p->count * r->elem,
                                p->peer, s);
        }
        for (int i = 0; i < r->nsend && !st; i++) {
            const peer_block *p = &r->send[i];
            const char *base = p->direct ? (const char *)src : (const char *)dsend;
            st = tide_nccl_send(r->nccl, base + p->offset * r->elem,
                                (size_t)p->count * r->elem, p->peer, s);
        }
        int end = tide_nccl_group_end();
        st = st ? st : end;
    } else {
        /* A local device failure still takes part in the exchange, so peers do not hang. */
        int staged = r->transport != TIDE_EXCHANGE_CUDA_MPI;
        if (staged && !st)
            st = tide_gpu_memcpy_async(hsend, dsend, r->send_bytes, s);
        int synced = tide_gpu_sync(s);
        st = st ? st : synced;
        int moved = mpi_staged(r, staged ? hsend : dsend, staged ? hrecv : drecv);
        st = st ? st : moved;
        if (!st && staged)
            st = tide_gpu_memcpy_async(drecv, hrecv, r->recv_bytes, s);
    }
    for (int i = 0; i < r->nrecv && !st; i++)
        if (!r->recv[i].direct)
            st = tide_gpu_copy_region_async(r->elem, r->batch, &r->recv[i].region,
                                            (const char *)drecv + r->recv[i].offset * r->elem,
                                            &r->recv[i].region, dst, &r->dst, s);
    return st;
}
#else
int tide_reshape_execute_device(const tide_reshape *r, const void *src, void *dst, void *dsend,
                                void *drecv, void *hsend, void *hrecv)
{
    (void)r, (void)src, (void)dst, (void)dsend, (void)drecv, (void)hsend, (void)hrecv;
    return TIDE_ERR_UNSUPPORTED;
}
#endif
