/*
 * nccl.h: NCCL communicators and grouped point-to-point transfers between GPUs (gpu/nccl.cu;
 * private, C linkage, no CUDA types). In a CUDA build without NCCL the version is 0, creation
 * is TIDE_ERR_UNSUPPORTED and so is every transfer.
 */
#ifndef TIDE_GPU_NCCL_H
#define TIDE_GPU_NCCL_H

#include <stddef.h>
#include "tide.h"

#ifdef __cplusplus
extern "C" {
#endif

/* NCCL's version code, 0 when this build has no NCCL. */
int tide_nccl_version(void);

/* NCCL communicators over an MPI communicator (collective: ncclGetUniqueId on rank 0, sent to
 * all with MPI_Bcast). Each rank must use its own GPU. max_ctas > 0: the communicator's
 * kernels take at most that many thread blocks (SMs); 0: NCCL's choice. Returns 0,
 * TIDE_ERR_UNSUPPORTED (no NCCL in this build), TIDE_ERR_MPI or TIDE_ERR_BACKEND with the
 * reason in why. */
typedef struct tide_nccl tide_nccl;
int tide_nccl_create(MPI_Comm comm, int max_ctas, tide_nccl **out, char *why, size_t len);
void tide_nccl_destroy(tide_nccl *c);
/* One grouped exchange: the sends and receives between start and end form one NCCL group,
 * enqueued on stream (a cudaStream_t). Byte counts. Failures are described by
 * tide_gpu_last_error (backend/device.h). */
int tide_nccl_group_start(void);
int tide_nccl_send(tide_nccl *c, const void *buf, size_t bytes, int peer, void *stream);
int tide_nccl_recv(tide_nccl *c, void *buf, size_t bytes, int peer, void *stream);
int tide_nccl_group_end(void);
/* An error NCCL hit asynchronously on c (a peer gone, a network failure), which its calls
 * never return: 0, or TIDE_ERR_BACKEND with the reason for tide_gpu_last_error. 0 for NULL and
 * in builds without NCCL. */
int tide_nccl_check(tide_nccl *c);

#ifdef __cplusplus
}
#endif
#endif
