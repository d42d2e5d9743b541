/*
 * memory.h: device and pinned host memory, streams, events and copies of the GPU (private, C
 * linkage, no CUDA types: streams are cudaStream_t and events cudaEvent_t behind void *).
 * Failures are described by tide_gpu_last_error (backend/device.h). One of the GPU services
 * the backend layer offers; gpu/memory.cu implements it (gpu/none.c in a build without CUDA).
 */
#ifndef TIDE_BACKEND_MEMORY_H
#define TIDE_BACKEND_MEMORY_H

#include <stddef.h>
#include "tide.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Device memory. Returns 0 or TIDE_ERR_NOMEM. */
int tide_gpu_malloc(size_t bytes, void **ptr);
void tide_gpu_free(void *ptr);
/* Pinned host memory (cudaHostAlloc) and its release. Return 0 or TIDE_ERR_NOMEM, and
 * TIDE_ERR_ARGUMENT for a pointer that is no such memory. */
int tide_gpu_host_alloc(size_t bytes, void **ptr);
int tide_gpu_host_free(void *ptr);

/* Where a pointer points; -1 when CUDA cannot tell (tide_gpu_last_error says why). */
enum { TIDE_MEM_PAGEABLE = 0, TIDE_MEM_PINNED = 1, TIDE_MEM_DEVICE = 2 };
int tide_gpu_pointer_kind(const void *p);

/* Streams. urgent: the device's greatest priority, whose kernels' blocks the GPU starts before
 * those of other streams as SMs come free (a short kernel beside a long one need not wait for
 * its end). Returns 0 or TIDE_ERR_BACKEND. */
int tide_gpu_stream_create(void **stream, int urgent);
void tide_gpu_stream_destroy(void *stream);
/* Wait for everything enqueued on stream; reports any earlier asynchronous failure. */
int tide_gpu_sync(void *stream);

/* Events (without timing). */
int tide_gpu_event_create(void **event);
void tide_gpu_event_destroy(void *event);
/* Order what comes next after the work queued on `caller` (a cudaStream_t; NULL: the legacy
 * default stream) before this call: event is recorded there, then `stream` waits for it on the
 * device, or, with stream NULL, the calling thread waits for it. */
int tide_gpu_after(void *caller, void *event, void *stream);
/* Record event on stream; make stream wait for the work before event's last record (the
 * event may be another device's). */
int tide_gpu_event_record(void *event, void *stream);
int tide_gpu_stream_wait(void *stream, void *event);
/* Events that keep their time, for the timelines of the debug log: timer_create makes one
 * (recorded with tide_gpu_event_record, released by tide_gpu_event_destroy); timer_ms waits for
 * `to` and gives the milliseconds from `from` to `to`. */
int tide_gpu_timer_create(void **event);
int tide_gpu_timer_ms(void *from, void *to, float *ms);

/* Device memory and events another process of the node may use (CUDA IPC); a handle is
 * TIDE_GPU_IPC_BYTES bytes. ipc_mem_handle: the handle of the allocation p lies in, and p's
 * byte offset there; ipc_mem_open maps a peer's handle here (*base: its
 * start, reachable from this GPU where the GPUs reach each other; *device: the GPU that holds
 * it), ipc_mem_close unmaps it.
 * ipc_event_create: an event (without timing) other processes may wait for, and its handle;
 * ipc_event_open: a peer's such event here (released by tide_gpu_event_destroy). A stream may
 * wait for a peer's event once the peer has recorded it (tide_gpu_stream_wait). */
enum { TIDE_GPU_IPC_BYTES = 64 };
int tide_gpu_ipc_mem_handle(const void *p, void *handle, size_t *offset);
int tide_gpu_ipc_mem_open(const void *handle, void **base, int *device);
void tide_gpu_ipc_mem_close(void *base);
int tide_gpu_ipc_event_create(void **event, void *handle);
int tide_gpu_ipc_event_open(const void *handle, void **event);

/* Copy bytes in any direction (cudaMemcpyDefault), enqueued on stream. */
int tide_gpu_memcpy_async(void *dst, const void *src, size_t bytes, void *stream);
/* Copy `rows` rows of `width` bytes, `pitch` bytes apart on both sides, from src on
 * src_device to dst on dst_device, enqueued on stream (a stream of either device). */
int tide_gpu_copy_peer_2d(void *dst, int dst_device, const void *src, int src_device,
                          size_t pitch, size_t width, size_t rows, void *stream);

#ifdef __cplusplus
}
#endif
#endif
