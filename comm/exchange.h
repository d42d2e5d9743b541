/*
 * exchange.h: the one exchange of the library (private).
 *
 * An exchange is the list of messages between this rank and its peers. A message is a list of
 * pieces: a region of an array (the sender's on the send side, the receiver's on the receive
 * side) that travels dense in one storage order, the receiver's, so the pack permutes the
 * dimensions on the fly and the unpack is a plain strided copy (Chen, Cui and Mei 2010). The
 * geometry files say which pieces travel (reshape.c: one set of boxes into another; halo.c: a
 * stencil's halos; chunked.c: the chunks of a streamed pass); this file moves them, by one of
 * the transports of tide_exchange:
 *   P2P       MPI_Isend/Irecv: host arrays one message per piece (direct from or into the
 *             array where the piece is one run of it, else through the staging); device
 *             arrays one message per peer, packed on the device, through pinned host staging
 *   A2AV      one MPI_Alltoallv of the staging (host arrays; device arrays through pinned host
 *             staging): a side goes direct only when all its pieces do
 *   NCCL      device arrays: one group of ncclSend/ncclRecv, one message per peer (direct
 *             where it is a single piece that is one run of the array), all on the stream
 *   CUDA_MPI  device arrays: MPI_Isend/Irecv of the device staging itself, one message per
 *             peer
 *   DIRECT    device arrays, ranks of one node: each message packed by its sender straight
 *             into the receiver's receive staging (CUDA IPC: io->recv must start an allocation
 *             of its own), ordered by events and two rounds of small MPI notes; no send
 *             staging
 * Messages over the cap (TIDE_EXCHANGE_MAX_MESSAGE bytes, tide_exchange_set_max_message)
 * travel as several, each a run of whole planes of the piece where a plane fits.
 *
 * One failure rule for every transport: a rank posts every message whatever failed before
 * (a failed pack, a failed post: a failed MPI post is replaced by a stand-in, an empty send
 * the receiver sees as a short message, or a receive posted again), completes all of them,
 * and returns the first failure. Callers agree on the status afterwards, so every rank
 * reports the same error and no message is left to match a later exchange.
 */
#ifndef TIDE_COMM_EXCHANGE_H
#define TIDE_COMM_EXCHANGE_H

#include <stddef.h>
#include <mpi.h>
#include "comm/region.h"
#include "tide.h"

typedef struct tide_xchg tide_xchg;
typedef struct tide_xchg_list tide_xchg_list;

enum { TIDE_XCHG_SEND = 1, TIDE_XCHG_RECV = 0 };

/* The pieces of an exchange, added message by message. Both sides of every pair of ranks
 * must list their pieces in the same order (the sender's sends to q as q's receives from it).
 * Returns 0 or TIDE_ERR_NOMEM. */
tide_xchg_list *tide_xchg_list_new(void);
void tide_xchg_list_free(tide_xchg_list *l);
/* A piece of this rank's message to (send) or from peer: region (in the coordinates of the
 * array it is read from or written to) dense in storage order order[]. A piece for the peer
 * of the piece before it joins that message; another peer starts a new message. */
int tide_xchg_add(tide_xchg_list *l, int send, int peer, const tide_box *region,
                  const int order[3]);

typedef struct {
    MPI_Comm comm;
    size_t elem;          /* bytes per element */
    int fields;           /* fields of every array, one after another (a batch) */
    tide_exchange how;    /* P2P, A2AV, NCCL, CUDA_MPI or DIRECT (not AUTO) */
    int device;           /* the arrays lie in device memory */
    int threads;          /* host arrays: the threads of the packs and unpacks */
    /* Host arrays, where every call reads from an array laid out as src_box and writes into
     * one laid out as dst_box (NULL: not known): pieces that are one run of them get no
     * staging (the sizes below count only the others). */
    const tide_box *src_box, *dst_box;
    int typed;            /* host arrays, P2P: receive a piece that is not a run straight
                           * into its array with an MPI subarray type where its order is the
                           * array's (no staging for it, no unpack) */
    int eager;            /* device arrays over P2P or CUDA_MPI: START also waits for the packs
                           * and posts the messages, so they travel while the caller's next
                           * work runs (FINISH waits for them); 0: START only enqueues */
} tide_xchg_desc;

/* Local: the exchange of list l (which it keeps; NULL after the call). Returns 0 or a code
 * with the reason in err (TIDE_ERR_TOO_LARGE: an Alltoallv whose counts or displacements do
 * not fit an int). */
int tide_xchg_create(const tide_xchg_desc *d, tide_xchg_list **l, tide_xchg **out, char *err,
                     size_t len);
void tide_xchg_destroy(tide_xchg *x);

/* Bytes of send and receive staging the exchange needs (host arrays: host memory; device
 * arrays: device memory and, over P2P and A2AV, as much pinned host memory). */
size_t tide_xchg_send_bytes(const tide_xchg *x);
size_t tide_xchg_recv_bytes(const tide_xchg *x);
/* Elements this rank receives, and the most peers it sends to or receives from. */
size_t tide_xchg_recv_elements(const tide_xchg *x);
int tide_xchg_peers(const tide_xchg *x);

/* One call's arrays and staging. */
typedef struct {
    const void *src;       /* the array the sends read, laid out as src_box (NULL: the send
                            * staging holds every piece packed already) */
    const tide_box *src_box;
    const tide_parts *dst; /* the parts the receives land in (NULL: they stay packed in the
                            * receive staging, message after message) */
    void *send, *recv;     /* staging: host memory for host arrays, device memory for device
                            * arrays */
    void *hsend, *hrecv;   /* device arrays over P2P or A2AV: pinned host staging */
    void *nccl;            /* NCCL: the tide_nccl * over the exchange's communicator */
    void *stream;          /* device arrays: the cudaStream_t the packs, copies, unpacks and
                            * NCCL calls are enqueued on */
    int defer;             /* device arrays: 1 leaves the unpacks to tide_xchg_land */
    int dst_kept;          /* device arrays: 1 when dst's array stays allocated as long as
                            * the exchange (a plan's work buffer): DIRECT's senders then store
                            * into it, in its layout, with no staging nor unpack */
} tide_xchg_io;

/* Collective, in two halves so that other work can run between them: START packs and posts
 * what needs no peer (host P2P: the receives posted, each send packed and posted; device
 * arrays: the packs enqueued and, staged, copied down; NCCL: the whole exchange enqueued);
 * FINISH completes it (host: waits and unpacks; device MPI transports: synchronizes the
 * stream, exchanges, and enqueues the copy up and the unpacks). In between the sends' points
 * may be read but not changed and the receiving regions neither read nor changed. Every rank
 * calls FINISH after START, whatever START returned; status: the caller's failure so far, and
 * for FINISH START's too (the exchange still takes part, packing and unpacking nothing).
 * Return the first failure: the status given, TIDE_ERR_MPI or TIDE_ERR_BACKEND. */
int tide_xchg_start(const tide_xchg *x, const tide_xchg_io *io, int status);
int tide_xchg_finish(const tide_xchg *x, const tide_xchg_io *io, int status);

/* Device arrays, after a FINISH with io->defer set (status: what it returned): the unpacks
 * enqueued on io->stream, which may be another stream than the exchange's, once everything
 * has landed (that stream waits for it on the device, never the host); io->recv is the receive
 * staging the exchange used. In between the receive staging may not be reused nor the
 * receiving regions read. Not collective. Returns status or the first failure. */
int tide_xchg_land(const tide_xchg *x, const tide_xchg_io *io, int status);

/* One MPI point-to-point post of every exchange: a send (send != 0) or a receive of count
 * elements of type at buf. A post that fails (type MPI_DATATYPE_NULL counts as failed: the
 * caller could not build it) is replaced by a stand-in, so the peer still sees exactly one
 * matching message and nobody waits: a receive posted again (an empty one for a null type),
 * an empty send (the receiver sees a short message and fails there). Returns MPI_SUCCESS or
 * the failure's code; *req is MPI_REQUEST_NULL only where the stand-in failed too. */
int tide_xchg_post(int send, void *buf, int count, MPI_Datatype type, int peer, int tag,
                   MPI_Comm comm, MPI_Request *req);

/* Bytes one MPI message carries at most by default: counts are ints, and messages over 2 GiB
 * are where MPI libraries and their transports are least tried. */
#define TIDE_EXCHANGE_MAX_MESSAGE ((size_t)1 << 30)

/* ---- test-only hooks (not for the library's own use) --------------------------------------
 * Not exported by the shared library (only tide.h's functions are); the tests link the static
 * one. Process-wide, for every exchange. A "post" is one MPI_Irecv, MPI_Isend or MPI_Alltoallv
 * call, or one ncclSend or ncclRecv, of an exchange or of tide_xchg_post (stand-ins for failed
 * posts are not posts). */

/* Makes the post k posts from now (0: the next one) fail once as if MPI (NCCL) had returned an
 * error; k < 0 disarms. MPI itself is not touched: a failed Isend/Irecv is not made, and an
 * injected failure of an Alltoallv or of an NCCL call is reported after the rank has made it
 * (TIDE_ERR_BACKEND for NCCL's). */
void tide_exchange_inject_fault(long long k);
/* 1 while an injected failure has not fired yet. */
int tide_exchange_fault_pending(void);
/* Posts made so far by this process. */
long long tide_exchange_posts(void);
/* The most elements one MPI message carries, for exchanges created afterwards (at most the
 * byte cap's worth in any case); n <= 0 (or over INT_MAX) restores the default. */
void tide_exchange_set_max_message(long long n);

#endif
