/*
 * transport.h: what the exchanges of device data need from the GPU (private): packs on the
 * device, copies between device and pinned host staging, that staging's memory, NCCL
 * communicators and groups, and whether the MPI library takes device pointers. The one file of
 * comm/ that reaches gpu/ (transport.c); the exchange (exchange.c), the halo's staging and the
 * context's NCCL communicators reach the GPU through it. Streams are cudaStream_t and NCCL
 * communicators tide_nccl behind void *. In a build without CUDA every call that needs a
 * device fails with TIDE_ERR_UNSUPPORTED (gpu/none.c), NCCL's version is 0 and no MPI takes
 * device pointers.
 */
#ifndef TIDE_COMM_TRANSPORT_H
#define TIDE_COMM_TRANSPORT_H

#include <stddef.h>
#include <mpi.h>
#include "tide.h"

/* The permuting copy of comm/region.h between device arrays, enqueued on stream: region of
 * batch fields from src (laid out as sbox) into dst (laid out as dbox). Returns 0,
 * TIDE_ERR_ARGUMENT (element size other than 4, 8 or 16) or TIDE_ERR_BACKEND. */
int tide_transport_pack(size_t elem, int batch, const tide_box *region, const void *src,
                        const tide_box *sbox, void *dst, const tide_box *dbox, void *stream);
/* The same copy into another GPU's memory (the direct stores; dst on GPU dst_device, src on
 * this process's), by the copy engine or on few of this GPU's SMs so that the kernels beside
 * it keep the others (gpu/pack.h). */
int tide_transport_store(size_t elem, int batch, const tide_box *region, const void *src,
                         const tide_box *sbox, void *dst, const tide_box *dbox, int dst_device,
                         void *stream);

/* Copy bytes between any memories (device, pinned, pageable), enqueued on stream; wait for
 * everything enqueued on stream (and learn of any earlier asynchronous failure). */
int tide_transport_copy(void *dst, const void *src, size_t bytes, void *stream);
int tide_transport_sync(void *stream);

/* Staging of at least `bytes` (one byte more, so that empty staging is a valid pointer) in
 * device memory, or with on_device 0 in pinned host memory; NULL when it cannot be had. free
 * accepts NULL. */
void *tide_transport_stage_alloc(int on_device, size_t bytes);
void tide_transport_stage_free(int on_device, void *p);

/* NCCL: its version code (0: not in this build); a communicator over comm (collective;
 * max_ctas as gpu/nccl.h says; the reason in why), and its release (NULL accepted). */
int tide_transport_nccl_version(void);
int tide_transport_nccl_create(MPI_Comm comm, int max_ctas, void **nccl, char *why,
                               size_t len);
void tide_transport_nccl_destroy(void *nccl);
/* One NCCL group: the sends and receives (bytes, to or from peer, on stream) between start
 * and end. A failed call does not end the group: end still closes it. */
int tide_transport_group_start(void);
int tide_transport_send(void *nccl, const void *buf, size_t bytes, int peer, void *stream);
int tide_transport_recv(void *nccl, void *buf, size_t bytes, int peer, void *stream);
int tide_transport_group_end(void);
/* An error NCCL hit asynchronously on nccl (a peer gone): 0 or TIDE_ERR_BACKEND. 0 for NULL. */
int tide_transport_nccl_check(void *nccl);
/* A failure of a device exchange that no GPU call returned (a peer's, an injected one): its
 * reason kept as the backend's last error, which the failure's message quotes. Returns
 * TIDE_ERR_BACKEND. */
int tide_transport_fail(const char *what, const char *why);

/* Direct stores between the GPUs of a node (the exchange's DIRECT transport, CUDA IPC); a
 * handle is TIDE_TRANSPORT_IPC_BYTES bytes. mem_handle: the handle of the device allocation
 * (staging) that p lies in, and p's byte offset there; mem_open: a peer's allocation mapped
 * here (*base: its start; *device: the GPU holding it), each handle mapped once per process
 * however many exchanges open it (the opens counted, mem_close undoes one). ipc_event_create:
 * an event peers may wait for, and its handle; ipc_event_open: a peer's such event;
 * event_create: an event of this process alone; event_destroy releases any. record and wait:
 * an event recorded on a stream, a stream waiting for an event's last record (a peer's once
 * the peer has recorded it). Return 0 or TIDE_ERR_BACKEND (TIDE_ERR_UNSUPPORTED without
 * CUDA). */
enum { TIDE_TRANSPORT_IPC_BYTES = 64 };
int tide_transport_ipc_mem_handle(const void *p, void *handle, size_t *offset);
int tide_transport_ipc_mem_open(const void *handle, void **base, int *device);
void tide_transport_ipc_mem_close(void *base);
int tide_transport_ipc_event_create(void **event, void *handle);
int tide_transport_ipc_event_open(const void *handle, void **event);
int tide_transport_event_create(void **event);
void tide_transport_event_destroy(void *event);
int tide_transport_record(void *event, void *stream);
int tide_transport_wait(void *stream, void *event);

/* Whether this rank's MPI library takes device pointers (MPIX_Query_cuda_support where the
 * library has it, else no). */
int tide_transport_cuda_aware_mpi(void);

#endif
