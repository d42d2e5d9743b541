/*
 * halo.h: the halo exchange of distributed stencils (private).
 *
 * Every rank owns a box of a grid (the boxes tile it) and works on a larger array: its box
 * grown by a halo (its "extended" box, which may reach past the grid's faces along periodic
 * dimensions). An exchange gives every halo point the value that the point it stands for
 * (the same point, or its periodic image) has in its owner's array. Made once from every
 * rank's boxes; says, for each peer, which regions of its own box it sends and which regions
 * of its halo it receives, each region dense in the receiver's storage order (the same region
 * and copy geometry as the reshapes, region.h): in host memory one MPI message per region,
 * sent from the array and received into it without a copy where the region is one run of
 * both, else through a staging; on the device one message per peer, packed by kernels.
 */
#ifndef TIDE_COMM_HALO_H
#define TIDE_COMM_HALO_H

#include <stddef.h>
#include <mpi.h>
#include "comm/region.h"
#include "tide.h"

typedef struct tide_halo tide_halo;

/* How a halo moves: arrays in host memory, MPI; arrays in GPU memory, packed on the device and
 * sent by MPI through pinned host staging, or sent GPU to GPU by NCCL, or sent by a CUDA-aware
 * MPI straight from the device staging (tide_halo_run says more). */
typedef enum {
    TIDE_HALO_HOST, TIDE_HALO_STAGED, TIDE_HALO_NCCL, TIDE_HALO_CUDA_MPI
} tide_halo_transport;

/* Local (no communication): own[r] and ext[r] for every rank r of comm, own[r] inside ext[r]
 * (an empty own box has an empty extended box); n, periodic: the grid and the dimensions that
 * wrap around. elem: bytes per element. The staging: host memory (HOST), pinned host memory
 * and the same again on the device (STAGED), on the device only (NCCL, CUDA_MPI). Returns 0
 * or a TIDE_ERR_* code with the reason in err (a message over INT_MAX elements:
 * TIDE_ERR_TOO_LARGE; a device transport in a build without CUDA: TIDE_ERR_UNSUPPORTED). */
int tide_halo_create(MPI_Comm comm, const int n[3], const int periodic[3],
                     const tide_box *own, const tide_box *ext, size_t elem, int threads,
                     tide_halo_transport transport, tide_halo **out, char *err, size_t len);
void tide_halo_destroy(tide_halo *h);

/* Points this rank receives per exchange; the bytes of staging it holds in host memory
 * (pinned for STAGED), or with on_device on the device. */
long long tide_halo_points(const tide_halo *h);
size_t tide_halo_bytes(const tide_halo *h, int on_device);
tide_halo_transport tide_halo_transport_of(const tide_halo *h);

/* Collective: fills the halo of a (this rank's array, laid out as its extended box) from the
 * owners' arrays (laid out as theirs), by the halo's transport; the points of a's own box are
 * only read. Every rank posts every message whatever fails, so none waits forever.
 *   HOST: a in host memory, MPI. Returns 0 or TIDE_ERR_MPI.
 *   STAGED: a in GPU memory; the regions sent packed by kernels on stream (a cudaStream_t)
 *     into the device staging, copied to the pinned host staging in one copy, exchanged by
 *     MPI, copied back up in one and unpacked by kernels on stream, so only the halo's points
 *     cross PCIe. Returns once the messages have arrived, the unpacks enqueued on stream: 0,
 *     TIDE_ERR_MPI or TIDE_ERR_BACKEND.
 *   CUDA_MPI: as STAGED, MPI moving the device staging itself (an MPI library that takes
 *     device pointers): nothing crosses PCIe.
 *   NCCL: a in GPU memory, nccl a tide_nccl * over the halo's communicator (each rank with a
 *     GPU of its own): the packs, one group of ncclSend/ncclRecv between the device stagings
 *     and the unpacks, all enqueued on stream; nothing crosses PCIe and the host waits for
 *     nothing. Returns 0 or TIDE_ERR_BACKEND (NCCL's asynchronous errors show at the stream's
 *     synchronization: tide_nccl_check).
 * part splits the exchange so that other work can be done or issued between its halves
 * (ALL: both). START issues what needs no peer: STAGED the packs and the copy down, NCCL the
 * whole exchange, HOST the messages posted (the sends packed where they need it). FINISH
 * does the rest: STAGED (CUDA_MPI) waits for the packs, exchanges by MPI and enqueues the copy
 * up and the unpacks, HOST waits for the messages and unpacks, NCCL nothing. In between, a's own
 * points may be read but not changed, and its halo neither read nor changed. Every rank
 * calls FINISH after START, whatever START returned. */
typedef enum { TIDE_HALO_START = 1, TIDE_HALO_FINISH = 2, TIDE_HALO_ALL = 3 } tide_halo_part;
int tide_halo_run(const tide_halo *h, void *a, void *nccl, void *stream,
                  tide_halo_part part);

/* Collective, the HOST transport: as tide_halo_run, the points sent read from `from` (host
 * memory laid out as from_box, which holds this rank's own box) and the halo received into
 * the parts of `to` (host memory; together they hold the extended box less the own box, or
 * more), so a rank keeps its own points and its halo apart and holds no array of its
 * extended box. Returns 0, TIDE_ERR_MPI, or TIDE_ERR_UNSUPPORTED for another transport. */
int tide_halo_run_from(const tide_halo *h, const void *from, const tide_box *from_box,
                       const tide_parts *to);

#endif
