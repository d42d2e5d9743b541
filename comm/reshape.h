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
 * the caller). part_src[]/part_dst[] (NULL: src[], dst[]): the reshape moves only the points
 * of part_src[q] (a part of src[q]) that lie in part_dst[r] (a part of dst[r]) from each rank
 * q to each rank r, the arrays laid out as src[] and dst[]; the parts of one reshape cut along
 * a dimension move it in several calls (plan/overlap.h). elem: bytes per element; batch:
 * fields. exchange: TIDE_EXCHANGE_A2AV or _P2P; AUTO picks from all ranks' boxes, so every
 * rank picks the same. On failure returns a TIDE_ERR_* code and writes a message to err. */
int tide_reshape_create(MPI_Comm comm, const tide_box *src, const tide_box *dst,
                        const tide_box *part_src, const tide_box *part_dst, size_t elem,
                        int batch, tide_exchange exchange, int threads, tide_reshape **out,
                        char *err, size_t errlen);
void tide_reshape_destroy(tide_reshape *r);

/* The same reshape for arrays in device memory (CUDA builds). Packs, unpacks and the self copy
 * run as kernels on the stream given to each execution (a cudaStream_t); transport says how
 * blocks travel:
 *   TIDE_EXCHANGE_NCCL      grouped ncclSend/ncclRecv on that stream (nccl: a tide_nccl *);
 *                           blocks that are contiguous runs go straight from src / into dst;
 *   TIDE_EXCHANGE_CUDA_MPI  MPI_Isend/Irecv of the device staging (a CUDA-aware MPI
 *                           library);
 *   TIDE_EXCHANGE_DIRECT    each block packed straight into the receiver's receive staging
 *                           (comm/exchange.h; ranks of one node), which must be an allocation
 *                           of its own (tide_transport_stage_alloc's, a plan's staging);
 *   TIDE_EXCHANGE_A2AV/P2P  through pinned host staging with that MPI exchange.
 * Except with NCCL every block is packed, so the staging sizes below cover the whole data
 * (DIRECT needs no send staging). */
int tide_reshape_create_device(MPI_Comm comm, const tide_box *src, const tide_box *dst,
                               const tide_box *part_src, const tide_box *part_dst, size_t elem,
                               int batch, tide_exchange transport, void *nccl,
                               tide_reshape **out, char *err, size_t errlen);

/* Bytes of send and receive staging the reshape needs (0 when all peers go direct). */
size_t tide_reshape_send_bytes(const tide_reshape *r);
size_t tide_reshape_recv_bytes(const tide_reshape *r);
/* The exchange backend it uses, and the larger of its send and receive peer counts (self
 * excluded). */
tide_exchange tide_reshape_exchange(const tide_reshape *r);
int tide_reshape_peers(const tide_reshape *r);

/* Collective: src (laid out as this rank's src box) -> dst (this rank's dst box). src and dst
 * must not overlap. sendbuf/recvbuf: staging of at least the sizes above. Returns 0 or
 * TIDE_ERR_MPI, by the exchange's failure rule (comm/exchange.h): a failed MPI post does not
 * end the exchange early, so no peer waits for a message that never comes and no message is
 * left to match a later exchange. Pairwise blocks over the message cap travel as several
 * messages; an Alltoallv whose counts or displacements exceed INT_MAX is refused at
 * creation. */
int tide_reshape_execute(const tide_reshape *r, const void *src, void *dst, void *sendbuf,
                         void *recvbuf);

/* Collective, for a reshape made by tide_reshape_create_device: src and dst are device arrays;
 * dsend/drecv device staging of the sizes above; hsend/hrecv pinned host staging of the same
 * sizes (A2AV/P2P transports only, else NULL); the packs, copies and NCCL calls go on stream,
 * which may differ from call to call. With NCCL everything is only enqueued on the
 * stream; the MPI transports return once the data has left and arrived (unpacks enqueued).
 * A failed pack still takes part in the exchange. flags: TIDE_RESHAPE_DEFER leaves the points
 * this rank keeps and the unpacks to tide_reshape_land_device, so that they may run on another
 * stream while the next exchange travels; TIDE_RESHAPE_DST_KEPT says dst stays allocated as
 * long as the reshape (a plan's work buffer), so that direct stores may go into it (no
 * unpack). Returns 0, TIDE_ERR_MPI or TIDE_ERR_BACKEND. */
enum { TIDE_RESHAPE_DEFER = 1, TIDE_RESHAPE_DST_KEPT = 2 };
int tide_reshape_execute_device(const tide_reshape *r, const void *src, void *dst, void *dsend,
                                void *drecv, void *hsend, void *hrecv, void *stream, int flags);
/* After tide_reshape_execute_device with TIDE_RESHAPE_DEFER (status: what it returned; the
 * same src, dst and drecv): the points kept copied and the unpacks enqueued on stream, which
 * waits on the device for what the exchange brings. Until then drecv may not be reused nor dst
 * read. Not collective. Returns status or the first failure. */
int tide_reshape_land_device(const tide_reshape *r, const void *src, void *dst, void *drecv,
                             void *stream, int status);

#endif
