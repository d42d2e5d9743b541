/*
 * chunked.h: who sends what to whom in a streamed pass (private).
 *
 * A streamed pass reads this rank's box of layout A in chunks along one dimension d and moves
 * the data into layout B. Chunk i of rank r covers [A[r].lo[d] + i * step, + step) along d,
 * clipped to A[r] (ranks with fewer points have empty chunks), the same rule on every rank, so
 * chunk i of every rank runs at the same point of the pass and the per-chunk exchanges pair
 * up. A chunk sends each peer q its points inside B[q]. Two ways to move them:
 *   per chunk over NCCL (tide_chunked_nccl): the parts are packed on the GPU, each as a dense
 *     box in the receiver's storage order, and sent in one NCCL group per chunk;
 *   after the pass over MPI (tide_chunked_mpi): the parts a rank sends q in all its chunks are
 *     gathered (by the caller, as the chunks' results are downloaded) into one send block per
 *     peer, the points of A[me] in B[q] stored densely in A's order, and one point-to-point
 *     exchange moves the blocks into the receivers' arrays with subarray types, so nothing is
 *     packed on the host (the blocks travel in A's order, which must be every rank's and the
 *     destination's: C order). Blocks over the message cap go as several messages.
 * The geometry is the reshape layer's: box intersections (region.h); the exchange
 * (comm/exchange.h) moves the parts.
 */
#ifndef TIDE_COMM_CHUNKED_H
#define TIDE_COMM_CHUNKED_H

#include <stddef.h>
#include <mpi.h>
#include "tide.h"

typedef struct tide_chunked tide_chunked;

/* The chunk rule, for every streamed pass: chunk i of box b along d is [*a, *b) =
 * [b->lo[d] + i * step, + step) clipped to b (a == b: empty). */
void tide_chunk_range(const tide_box *box, int d, int step, int i, int *a, int *b);
/* Chunks a pass over the n boxes takes: the most any box has. */
int tide_chunk_count(const tide_box *boxes, int n, int d, int step);

/* A and B: every rank's boxes (comm's size of them, the grids' extents of the moved data);
 * chunks of step >= 1 points along d; elem bytes per element. Local; returns 0,
 * TIDE_ERR_NOMEM, TIDE_ERR_TOO_LARGE (more messages than MPI counts) or
 * TIDE_ERR_MPI, with the reason in err. */
int tide_chunked_create(MPI_Comm comm, const tide_box *A, const tide_box *B, int d, int step,
                        size_t elem, tide_chunked **out, char *err, size_t len);
void tide_chunked_destroy(tide_chunked *x);

/* This rank's chunk i's part for peer q, and peer p's chunk i's part for this rank, with
 * B[q]'s (B[me]'s) storage order. Return their point counts. */
long long tide_chunked_send(const tide_chunked *x, int i, int q, tide_box *part);
long long tide_chunked_recv(const tide_chunked *x, int i, int p, tide_box *part);
/* The most points one chunk sends to, or receives from, all its peers together. */
long long tide_chunked_most(const tide_chunked *x);

/* MPI: the send block for peer q (A[me] in B[q], A's order, empty for q == me) and its element
 * offset in the send staging; the staging's elements. */
long long tide_chunked_block(const tide_chunked *x, int q, tide_box *block, size_t *offset);
size_t tide_chunked_staging(const tide_chunked *x);

/* Chunk i over NCCL (a tide_nccl *), enqueued on stream: packs this rank's parts for every
 * other peer from chunk (device memory, laid out as cbox) into sendbuf, peer after peer, and
 * receives the peers' parts into recvbuf, peer after peer (each dense in this rank's B order),
 * in one group. Every rank calls it for every chunk, in order, whatever failed before (status:
 * the caller's failure so far; the exchange still takes part, packing nothing). Returns the
 * first failure: status, or TIDE_ERR_BACKEND. */
int tide_chunked_nccl(const tide_chunked *x, int i, const void *chunk, const tide_box *cbox,
                      void *sendbuf, void *recvbuf, void *nccl, void *stream, int status);

/* Collective, after the pass: every peer's block goes from staging (host) into dst (laid out
 * as dl, B[me] or a box holding it). A rank whose pass failed still calls it (send blocks
 * then hold garbage), so no peer waits. Returns 0 or TIDE_ERR_MPI with the reason in err. */
int tide_chunked_mpi(const tide_chunked *x, const void *staging, void *dst, const tide_box *dl,
                     char *err, size_t len);

#endif
