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

/* Local (no communication): own[r] and ext[r] for every rank r of comm, own[r] inside ext[r]
 * (an empty own box has an empty extended box); n, periodic: the grid and the dimensions that
 * wrap around. elem: bytes per element. how (tide_exchange, not AUTO) and device say how the
 * halo moves (comm/exchange.h): host arrays over P2P, MPI in host memory; arrays in GPU memory
 * packed on the device and sent by P2P through pinned host staging, by NCCL GPU to GPU, or by
 * CUDA_MPI from the device staging. The staging it holds: host memory for host arrays, the
 * device's for device arrays and over P2P as much pinned. Returns 0 or a TIDE_ERR_* code with
 * the reason in err. */
int tide_halo_create(MPI_Comm comm, const int n[3], const int periodic[3],
                     const tide_box *own, const tide_box *ext, size_t elem, int threads,
                     tide_exchange how, int device, tide_halo **out, char *err, size_t len);
void tide_halo_destroy(tide_halo *h);

/* Points this rank receives per exchange; the bytes of staging it holds in host memory
 * (pinned for device arrays over P2P), or with on_device on the device. */
long long tide_halo_points(const tide_halo *h);
size_t tide_halo_bytes(const tide_halo *h, int on_device);
tide_exchange tide_halo_exchange(const tide_halo *h);

/* Collective: fills the halo of a (this rank's array, laid out as its extended box) from the
 * owners' arrays (laid out as theirs), by the halo's exchange; the points of a's own box are
 * only read. Every rank posts every message whatever fails, so none waits forever. nccl (a
 * tide_nccl * over the halo's communicator) and stream (a cudaStream_t): device arrays. Host
 * arrays return once the halo is in; device arrays once the messages have arrived with the
 * unpacks enqueued on stream (NCCL: everything enqueued, the host waits for nothing; its
 * asynchronous errors show at the stream's synchronization: tide_nccl_check). Returns 0,
 * TIDE_ERR_MPI or TIDE_ERR_BACKEND.
 * part splits the exchange so that other work can be done or issued between its halves
 * (ALL: both): START issues what needs no peer (tide_xchg_start), FINISH the rest. In between,
 * a's own points may be read but not changed, and its halo neither read nor changed. Every
 * rank calls FINISH after START, whatever START returned. */
typedef enum { TIDE_HALO_START = 1, TIDE_HALO_FINISH = 2, TIDE_HALO_ALL = 3 } tide_halo_part;
int tide_halo_run(const tide_halo *h, void *a, void *nccl, void *stream,
                  tide_halo_part part);

/* Collective, host arrays: as tide_halo_run, the points sent read from `from` (host
 * memory laid out as from_box, which holds this rank's own box) and the halo received into
 * the parts of `to` (host memory; together they hold the extended box less the own box, or
 * more), so a rank keeps its own points and its halo apart and holds no array of its
 * extended box. Returns 0, TIDE_ERR_MPI, or TIDE_ERR_UNSUPPORTED for device arrays. */
int tide_halo_run_from(const tide_halo *h, const void *from, const tide_box *from_box,
                       const tide_parts *to);

#endif
