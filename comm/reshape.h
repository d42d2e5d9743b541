/*
 * reshape.h: move a distributed array from one set of boxes to another (private).
 *
 * Made once from every rank's source and destination boxes; says for each peer which sub-box
 * it sends and receives. The pack writes each peer's block already in the receiver's storage
 * order, so the receiver's unpack is a plain strided copy and no transposition pass exists.
 * Where a peer's block is one contiguous run of the source (or destination) array it is sent
 * from (or received into) the array directly, without any copy.
 */
#ifndef TIDE_COMM_RESHAPE_H
#define TIDE_COMM_RESHAPE_H

#include <stddef.h>
#include <mpi.h>
#include "tide.h"

typedef struct tide_reshape tide_reshape;

/* Collective-free: every rank passes the same src[]/dst[] arrays of nranks boxes (gathered by
 * the caller). elem: bytes per element; batch: fields. exchange: TIDE_EXCHANGE_A2AV or _P2P;
 * AUTO picks from all ranks' boxes, so every rank picks the same. On failure returns a
 * TIDE_ERR_* code and writes a message to err. */
int tide_reshape_create(MPI_Comm comm, const tide_box *src, const tide_box *dst, size_t elem,
                        int batch, tide_exchange exchange, int threads, tide_reshape **out,
                        char *err, size_t errlen);
void tide_reshape_destroy(tide_reshape *r);

/* The same reshape for arrays in device memory (CUDA builds). Packs, unpacks and the self copy
 * run as kernels on stream (a cudaStream_t); transport says how blocks travel:
 *   TIDE_EXCHANGE_NCCL      grouped ncclSend/ncclRecv on stream (nccl: a tide_nccl *); blocks
 *                           that are contiguous runs go straight from src / into dst;
 *   TIDE_EXCHANGE_CUDA_MPI  MPI on device pointers (a CUDA-aware MPI library);
 *   TIDE_EXCHANGE_A2AV/P2P  through pinned host staging with that MPI exchange.
 * Except with NCCL every block is packed, so the staging sizes below cover the whole data. */
int tide_reshape_create_device(MPI_Comm comm, const tide_box *src, const tide_box *dst,
                               size_t elem, int batch, tide_exchange transport, void *nccl,
                               void *stream, tide_reshape **out, char *err, size_t errlen);

/* Bytes of send and receive staging the reshape needs (0 when all peers go direct). */
size_t tide_reshape_send_bytes(const tide_reshape *r);
size_t tide_reshape_recv_bytes(const tide_reshape *r);
/* The exchange backend it uses, and the larger of its send and receive peer counts (self
 * excluded). */
tide_exchange tide_reshape_exchange(const tide_reshape *r);
int tide_reshape_peers(const tide_reshape *r);

/* Collective: src (laid out as this rank's src box) -> dst (this rank's dst box). src and dst
 * must not overlap. sendbuf/recvbuf: staging of at least the sizes above. Returns 0 or
 * TIDE_ERR_MPI. A failed MPI post does not end the exchange early: the rank still posts every
 * other message and a stand-in for the failed one (a receive posted again, an empty send the
 * receiver sees as a short block), waits for all of them, then returns TIDE_ERR_MPI, so no
 * peer waits for a message that never comes and no message is left to match a later exchange.
 * Pairwise blocks over the message cap (INT_MAX elements) travel as several messages; an
 * Alltoallv whose counts or displacements exceed INT_MAX is refused at creation. */
int tide_reshape_execute(const tide_reshape *r, const void *src, void *dst, void *sendbuf,
                         void *recvbuf);

/* Collective, for a reshape made by tide_reshape_create_device: src and dst are device arrays;
 * dsend/drecv device staging of the sizes above; hsend/hrecv pinned host staging of the same
 * sizes (A2AV/P2P transports only, else NULL). With NCCL everything is only enqueued on the
 * stream; the MPI transports return once the data has left and arrived (unpacks enqueued).
 * A failed pack still takes part in the exchange. Returns 0, TIDE_ERR_MPI or
 * TIDE_ERR_BACKEND. */
int tide_reshape_execute_device(const tide_reshape *r, const void *src, void *dst, void *dsend,
                                void *drecv, void *hsend, void *hrecv);

/* One nonblocking point-to-point post of every exchange: a send (send != 0) or a receive of
 * count elements of type at buf. A post that fails (type MPI_DATATYPE_NULL counts as failed:
 * the caller could not build it) is replaced by a stand-in, so the peer still sees exactly one
 * matching message and nobody waits: a receive posted again (an empty one for a null type),
 * an empty send (the receiver sees a short message and fails there). Returns MPI_SUCCESS or
 * the failure's code; *req is MPI_REQUEST_NULL only where the stand-in failed too. */
int tide_comm_post(int send, void *buf, int count, MPI_Datatype type, int peer, int tag,
                   MPI_Comm comm, MPI_Request *req);

/* ---- test-only hooks (not for the library's own use) --------------------------------------
 * Not exported by the shared library (only tide.h's functions are); the tests link the static
 * one. Process-wide, for the reshapes of every context. An exchange "post" is one MPI_Irecv,
 * MPI_Isend or MPI_Alltoallv call of tide_reshape_execute(_device) or tide_comm_post (NCCL
 * calls are not counted; stand-ins for failed posts are not posts). */

/* Makes the post k posts from now (0: the next one) fail once as if MPI had returned an error;
 * k < 0 disarms. MPI itself is not touched: a failed Isend/Irecv is not made, and an injected
 * failure of an Alltoallv is reported after the rank has taken part in it (a rank that left
 * the collective out would stall the others). */
void tide_reshape_inject_fault(long long k);
/* 1 while an injected failure has not fired yet. */
int tide_reshape_fault_pending(void);
/* Posts made so far by this process. */
long long tide_reshape_posts(void);
/* The most elements one pairwise message carries, for reshapes created afterwards (at most 1
 * GiB of them in any case); n <= 0 (or over INT_MAX) restores the default, INT_MAX. */
void tide_reshape_set_max_message(long long n);

#endif
