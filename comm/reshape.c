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
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include "comm/region.h"
#include "comm/reshape.h"
#include "comm/transport.h"

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
    /* pairwise messages: a block over max_msg elements travels as several, in order (one
     * tag: MPI keeps the order of messages between two ranks) */
    int64_t max_msg;
    int nrmsg, nsmsg;       /* receive and send messages */
    MPI_Request *reqs;      /* nrmsg receives, then nsmsg sends */
    MPI_Status *stats;      /* of the receives completed by one MPI_Waitsome */
    int *done;              /* their indices */
    int *msg_block;         /* receive message -> its block in recv[] */
    int *first_msg;         /* per receive block (and one past): its first message */
    int *left;              /* per receive block: messages still to arrive */
};

/* ---- test-only hooks (reshape.h) -------------------------------------------------------- */

static _Atomic long long max_message = INT_MAX;
static _Atomic long long posts_made = 0;
static _Atomic long long fault_post = -1; /* index of the post that fails; -1: none */

void tide_reshape_inject_fault(long long k)
{
    atomic_store(&fault_post, k < 0 ? -1 : atomic_load(&posts_made) + k);
}

int tide_reshape_fault_pending(void) { return atomic_load(&fault_post) >= 0; }
long long tide_reshape_posts(void) { return atomic_load(&posts_made); }

void tide_reshape_set_max_message(long long n)
{
    atomic_store(&max_message, n <= 0 || n > INT_MAX ? INT_MAX : n);
}

/* Counts one post; 1 when it is the one that must fail. */
static int post_fails(void)
{
    long long k = atomic_fetch_add(&posts_made, 1);
    return atomic_compare_exchange_strong(&fault_post, &k, -1);
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

/* The first block whose count or offset does not fit an int, or NULL. */
static const peer_block *over_int(const peer_block *b, int n)
{
    for (int i = 0; i < n; i++)
        if (b[i].count > INT_MAX || b[i].offset > INT_MAX)
            return &b[i];
    return NULL;
}

/* Alltoallv tables (elements). One call takes one send and one receive base: a side goes
 * direct only when all its blocks do; otherwise every block of that side is staged. The
 * counts and displacements are ints, so larger blocks are refused here. */
static int setup_a2av(tide_reshape *r, char *err, size_t errlen)
{
    if (!r->all_send_direct)
        stage_all(r->send, r->nsend);
    if (!r->all_recv_direct)
        stage_all(r->recv, r->nrecv);
    const peer_block *big = over_int(r->send, r->nsend);
    big = big ? big : over_int(r->recv, r->nrecv);
    if (big) {
        snprintf(err, errlen, "a reshape block of %lld elements at element %lld exceeds "
                 "MPI_Alltoallv's int counts and displacements: use the P2P exchange%s, which "
                 "splits large blocks", (long long)big->count, (long long)big->offset,
                 r->device ? " (or NCCL)" : "");
        return TIDE_ERR_TOO_LARGE;
    }
    r->scounts = calloc((size_t)r->nranks * 4, sizeof(int));
    if (!r->scounts) {
        snprintf(err, errlen, "out of memory creating a reshape");
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
    return TIDE_SUCCESS;
}

/* Messages a block of count elements travels in. */
static int64_t pieces(int64_t count, int64_t cap) { return (count + cap - 1) / cap; }

static int64_t messages(const peer_block *b, int n, int64_t cap)
{
    int64_t m = 0;
    for (int i = 0; i < n; i++)
        m += pieces(b[i].count, cap);
    return m;
}

/* Bytes one pairwise message carries at most: MPI counts are ints, and messages over 2 GiB
 * are where MPI libraries and their transports are least tried. */
#define MESSAGE_BYTES ((int64_t)1 << 30)

/* Pairwise tables: every block in messages of at most max_msg elements (max_message, and
 * MESSAGE_BYTES), one request per message. */
static int setup_p2p(tide_reshape *r, char *err, size_t errlen)
{
    int64_t cap = MESSAGE_BYTES / (int64_t)r->elem;
    r->max_msg = atomic_load(&max_message);
    r->max_msg = r->max_msg < cap ? r->max_msg : (cap > 0 ? cap : 1);
    int64_t nr = messages(r->recv, r->nrecv, r->max_msg);
    int64_t ns = messages(r->send, r->nsend, r->max_msg);
    if (nr + ns >= INT_MAX) {
        snprintf(err, errlen, "a reshape needs %lld messages of at most %lld elements, more "
                 "than MPI can count", (long long)(nr + ns), (long long)r->max_msg);
        return TIDE_ERR_TOO_LARGE;
    }
    r->nrmsg = (int)nr;
    r->nsmsg = (int)ns;
    r->reqs = malloc(sizeof *r->reqs * (size_t)(nr + ns + 1));
    r->stats = malloc(sizeof *r->stats * (size_t)(nr + 1));
    r->done = malloc(sizeof *r->done * (size_t)(nr + 1));
    r->msg_block = malloc(sizeof *r->msg_block * (size_t)(nr + 1));
    r->first_msg = malloc(sizeof *r->first_msg * (size_t)(r->nrecv + 1));
    r->left = malloc(sizeof *r->left * (size_t)(r->nrecv + 1));
    if (!r->reqs || !r->stats || !r->done || !r->msg_block || !r->first_msg || !r->left) {
        snprintf(err, errlen, "out of memory creating a reshape");
        return TIDE_ERR_NOMEM;
    }
    int m = 0;
    for (int i = 0; i < r->nrecv; i++) {
        r->first_msg[i] = m;
        for (int64_t j = pieces(r->recv[i].count, r->max_msg); j > 0; j--)
            r->msg_block[m++] = i;
    }
    r->first_msg[r->nrecv] = m;
    return TIDE_SUCCESS;
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
        /* Device data over MPI: every block is packed on the device, none goes direct. */
        stage_all(r->send, r->nsend);
        stage_all(r->recv, r->nrecv);
        r->all_send_direct = r->all_recv_direct = 0;
    }

    /* NCCL counts are size_t: no MPI tables and no int limit. */
    if (!(device && r->transport == TIDE_EXCHANGE_NCCL)) {
        st = exchange == TIDE_EXCHANGE_A2AV ? setup_a2av(r, err, errlen)
                                            : setup_p2p(r, err, errlen);
        if (st) {
            tide_reshape_destroy(r);
            return st;
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
    /* CUDA-aware MPI moves the packed blocks with one Alltoallv; NCCL makes no MPI tables
     * (the exchange it is filed under, P2P, is never run). */
    tide_exchange mpi = transport == TIDE_EXCHANGE_CUDA_MPI ? TIDE_EXCHANGE_A2AV
                        : transport == TIDE_EXCHANGE_NCCL   ? TIDE_EXCHANGE_P2P : transport;
    return create(comm, src, dst, elem, batch, mpi, 1, 1, transport, nccl, stream, out, err,
                  errlen);
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
    free(r->stats);
    free(r->done);
    free(r->msg_block);
    free(r->first_msg);
    free(r->left);
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

/* One Alltoallv on the tables. An injected failure still takes part in it (reshape.h). */
static int alltoallv(const tide_reshape *r, const void *sb, void *rb)
{
    int fault = post_fails();
    int rc = MPI_Alltoallv(sb, r->scounts, r->sdispls, r->type, rb, r->rcounts, r->rdispls,
                           r->type, r->comm);
    return rc == MPI_SUCCESS && !fault ? TIDE_SUCCESS : TIDE_ERR_MPI;
}

static int exec_a2av(const tide_reshape *r, const void *src, void *dst, void *sendbuf,
                     void *recvbuf)
{
    if (!r->all_send_direct)
        for (int i = 0; i < r->nsend; i++)
            pack(r, &r->send[i], src, sendbuf);
    const void *sb = r->all_send_direct ? src : sendbuf;
    void *rb = r->all_recv_direct ? dst : recvbuf;
    int st = alltoallv(r, sb, rb);
    copy_self(r, src, dst);
    if (st)
        return st;
    if (!r->all_recv_direct)
        for (int i = 0; i < r->nrecv; i++)
            unpack(r, &r->recv[i], recvbuf, dst);
    return TIDE_SUCCESS;
}

enum { P2P_TAG = 7301 };

/* Elements of message j of block p: max_msg, less for the last. */
static int piece_count(const tide_reshape *r, const peer_block *p, int64_t j)
{
    int64_t rest = p->count - j * r->max_msg;
    return (int)(rest < r->max_msg ? rest : r->max_msg);
}

int tide_comm_post(int send, void *buf, int count, MPI_Datatype type, int peer, int tag,
                   MPI_Comm comm, MPI_Request *req)
{
    int null = type == MPI_DATATYPE_NULL;
    int rc = null ? MPI_ERR_TYPE
             : post_fails() ? MPI_ERR_OTHER
             : send ? MPI_Isend(buf, count, type, peer, tag, comm, req)
                    : MPI_Irecv(buf, count, type, peer, tag, comm, req);
    if (rc == MPI_SUCCESS)
        return rc;
    MPI_Datatype t = null ? MPI_BYTE : type;
    int again = send ? MPI_Isend(buf, 0, t, peer, tag, comm, req)
                     : MPI_Irecv(buf, null ? 0 : count, t, peer, tag, comm, req);
    if (again != MPI_SUCCESS)
        *req = MPI_REQUEST_NULL;
    return rc;
}

/* Posts message j of block p at *req: a receive into buf (the block's array or staging) or a
 * send from it. Returns MPI_SUCCESS or the failure's code (tide_comm_post). */
static int post(const tide_reshape *r, const peer_block *p, int64_t j, const char *buf,
                int send, MPI_Request *req)
{
    const char *at = buf + (size_t)(p->offset + j * r->max_msg) * r->elem;
    return tide_comm_post(send, (char *)at, piece_count(r, p, j), r->type, p->peer, P2P_TAG,
                          r->comm, req);
}

/* Posts every receive message (requests r->reqs[0..nrmsg)): direct blocks into dst, staged
 * ones into recvbuf. Returns MPI_SUCCESS or the first failure's code. */
static int post_receives(const tide_reshape *r, void *dst, void *recvbuf)
{
    int rc = MPI_SUCCESS, m = 0;
    for (int i = 0; i < r->nrecv; i++) {
        const peer_block *p = &r->recv[i];
        r->left[i] = r->first_msg[i + 1] - r->first_msg[i];
        for (int64_t j = 0; j < r->left[i]; j++) {
            int e = post(r, p, j, p->direct ? dst : recvbuf, 0, &r->reqs[m++]);
            rc = rc == MPI_SUCCESS ? e : rc;
        }
    }
    return rc;
}

/* Posts every send message (requests after the receives). pack_blocks: the CPU packs each
 * staged block just before sending it, so packing the next block overlaps the transfer of
 * this one. Returns MPI_SUCCESS or the first failure's code. */
static int post_sends(const tide_reshape *r, const void *src, void *sendbuf, int pack_blocks)
{
    MPI_Request *req = r->reqs + r->nrmsg;
    int rc = MPI_SUCCESS;
    for (int i = 0; i < r->nsend; i++) {
        const peer_block *p = &r->send[i];
        if (pack_blocks && !p->direct)
            pack(r, p, src, sendbuf);
        for (int64_t j = 0, n = pieces(p->count, r->max_msg); j < n; j++) {
            int e = post(r, p, j, p->direct ? src : sendbuf, 1, req++);
            rc = rc == MPI_SUCCESS ? e : rc;
        }
    }
    return rc;
}

/* MPI_Waitall that still completes the rest when some requests fail: the second call waits
 * for those the first left pending. */
static int wait_all(int n, MPI_Request *req)
{
    if (MPI_Waitall(n, req, MPI_STATUSES_IGNORE) == MPI_SUCCESS)
        return MPI_SUCCESS;
    MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
    return MPI_ERR_OTHER;
}

/* Whether receive message m brought every element it was posted for. */
static int arrived_whole(const tide_reshape *r, int m, MPI_Status *status)
{
    int b = r->msg_block[m], got = -1;
    int want = piece_count(r, &r->recv[b], m - r->first_msg[b]);
    return MPI_Get_count(status, r->type, &got) == MPI_SUCCESS && got == want;
}

/* Waits for every receive message. unpack_blocks: the CPU unpacks each staged block once all
 * its messages are in, in the order blocks complete. A short message (a peer's stand-in for a
 * failed send) fails the exchange. Returns MPI_SUCCESS or an error code. */
static int drain_receives(const tide_reshape *r, void *recvbuf, void *dst, int unpack_blocks)
{
    int rc = MPI_SUCCESS;
    for (int left = r->nrmsg; left > 0;) {
        int n = 0;
        if (MPI_Waitsome(r->nrmsg, r->reqs, &n, r->done, r->stats) != MPI_SUCCESS)
            return wait_all(r->nrmsg, r->reqs), MPI_ERR_OTHER;
        if (n == MPI_UNDEFINED)
            break; /* the rest are null: stand-ins that could not be posted */
        for (int k = 0; k < n; k++) {
            int b = r->msg_block[r->done[k]];
            if (!arrived_whole(r, r->done[k], &r->stats[k]))
                rc = MPI_ERR_TRUNCATE;
            if (--r->left[b] == 0 && unpack_blocks && !r->recv[b].direct)
                unpack(r, &r->recv[b], recvbuf, dst);
        }
        left -= n;
    }
    return rc;
}

/* A pairwise exchange. cpu: host arrays, the CPU packs, copies the self block and unpacks;
 * else every block is already packed in sendbuf and is left in recvbuf. Every message is
 * posted and completed even after a failure (reshape.h). */
static int exec_p2p(const tide_reshape *r, const void *src, void *dst, void *sendbuf,
                    void *recvbuf, int cpu)
{
    int posted = post_receives(r, dst, recvbuf);
    int sent = post_sends(r, src, sendbuf, cpu);
    if (cpu)
        copy_self(r, src, dst);
    int got = drain_receives(r, recvbuf, dst, cpu);
    int done = wait_all(r->nsmsg, r->reqs + r->nrmsg);
    int ok = posted == MPI_SUCCESS && sent == MPI_SUCCESS && got == MPI_SUCCESS;
    return ok && done == MPI_SUCCESS ? TIDE_SUCCESS : TIDE_ERR_MPI;
}

int tide_reshape_execute(const tide_reshape *r, const void *src, void *dst, void *sendbuf,
                         void *recvbuf)
{
    if (r->exchange == TIDE_EXCHANGE_A2AV)
        return exec_a2av(r, src, dst, sendbuf, recvbuf);
    return exec_p2p(r, src, dst, sendbuf, recvbuf, 1);
}

/* ---- device arrays ---------------------------------------------------------------------- */

/* Every block packed: one Alltoallv, or pairwise messages, on the staging buffers. */
static int mpi_staged(const tide_reshape *r, void *sbuf, void *rbuf)
{
    if (r->exchange == TIDE_EXCHANGE_A2AV)
        return alltoallv(r, sbuf, rbuf);
    return exec_p2p(r, NULL, NULL, sbuf, rbuf, 0); /* no block goes direct */
}

/* Every block over NCCL in one group. A failed call does not stop the others: the peers'
 * matching calls are in the same group. */
static int nccl_exchange(const tide_reshape *r, const void *src, void *dst, void *dsend,
                         void *drecv)
{
    int st = tide_transport_group_start();
    for (int i = 0; i < r->nrecv; i++) {
        const peer_block *p = &r->recv[i];
        char *base = p->direct ? (char *)dst : (char *)drecv;
        int e = tide_transport_recv(r->nccl, base + (size_t)p->offset * r->elem,
                                    (size_t)p->count * r->elem, p->peer, r->stream);
        st = st ? st : e;
    }
    for (int i = 0; i < r->nsend; i++) {
        const peer_block *p = &r->send[i];
        const char *base = p->direct ? (const char *)src : (const char *)dsend;
        int e = tide_transport_send(r->nccl, base + (size_t)p->offset * r->elem,
                                    (size_t)p->count * r->elem, p->peer, r->stream);
        st = st ? st : e;
    }
    int end = tide_transport_group_end();
    return st ? st : end;
}

int tide_reshape_execute_device(const tide_reshape *r, const void *src, void *dst, void *dsend,
                                void *drecv, void *hsend, void *hrecv)
{
    void *s = r->stream;
    int st = 0;
    for (int i = 0; i < r->nsend && !st; i++)
        if (!r->send[i].direct)
            st = tide_transport_pack(r->elem, r->batch, &r->send[i].region, src, &r->src,
                                     (char *)dsend + r->send[i].offset * r->elem,
                                     &r->send[i].region, s);
    if (!st && r->has_self)
        st = tide_transport_pack(r->elem, r->batch, &r->self_region, src, &r->src, dst,
                                 &r->dst, s);
    /* A failed pack still takes part in the exchange, so peers do not hang. */
    if (r->transport == TIDE_EXCHANGE_NCCL) {
        int moved = nccl_exchange(r, src, dst, dsend, drecv);
        st = st ? st : moved;
    } else {
        int staged = r->transport != TIDE_EXCHANGE_CUDA_MPI;
        if (staged && !st)
            st = tide_transport_copy(hsend, dsend, r->send_bytes, s);
        int synced = tide_transport_sync(s);
        st = st ? st : synced;
        int moved = mpi_staged(r, staged ? hsend : dsend, staged ? hrecv : drecv);
        st = st ? st : moved;
        if (!st && staged)
            st = tide_transport_copy(drecv, hrecv, r->recv_bytes, s);
    }
    for (int i = 0; i < r->nrecv && !st; i++)
        if (!r->recv[i].direct)
            st = tide_transport_pack(r->elem, r->batch, &r->recv[i].region,
                                     (const char *)drecv + r->recv[i].offset * r->elem,
                                     &r->recv[i].region, dst, &r->dst, s);
    return st;
}
