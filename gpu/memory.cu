// memory.cu: device and pinned host memory, streams, events and copies (backend/memory.h).
#include <cstring>
#include <cuda.h>
#include <cuda_runtime.h>
#include "backend/memory.h"
#include "gpu/cuda_error.h"

extern "C" int tide_gpu_malloc(size_t bytes, void **ptr)
{
    cudaError_t e = cudaMalloc(ptr, bytes ? bytes : 1);
    return e == cudaSuccess ? 0 : tide_cuda_fail(e, "cudaMalloc", TIDE_ERR_NOMEM);
}

extern "C" void tide_gpu_free(void *ptr) { cudaFree(ptr); }

extern "C" int tide_gpu_stream_create(void **stream, int urgent)
{
    cudaStream_t s;
    int least = 0, greatest = 0;
    cudaError_t e = urgent ? cudaDeviceGetStreamPriorityRange(&least, &greatest) : cudaSuccess;
    if (e == cudaSuccess)
        e = cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, urgent ? greatest : least);
    *stream = e == cudaSuccess ? (void *)s : nullptr;
    return e == cudaSuccess ? 0 : tide_cuda_fail(e, "cudaStreamCreate");
}

extern "C" void tide_gpu_stream_destroy(void *stream)
{
    if (stream)
        cudaStreamDestroy((cudaStream_t)stream);
}

extern "C" int tide_gpu_sync(void *stream)
{
    cudaError_t e = cudaStreamSynchronize((cudaStream_t)stream);
    if (e == cudaSuccess)
        e = cudaGetLastError();
    return e == cudaSuccess ? 0 : tide_cuda_fail(e, "device work");
}

extern "C" int tide_gpu_event_create(void **event)
{
    cudaEvent_t e;
    cudaError_t r = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    *event = r == cudaSuccess ? (void *)e : nullptr;
    return r == cudaSuccess ? 0 : tide_cuda_fail(r, "cudaEventCreate");
}

extern "C" void tide_gpu_event_destroy(void *event)
{
    if (event)
        cudaEventDestroy((cudaEvent_t)event);
}

extern "C" int tide_gpu_event_record(void *event, void *stream)
{
    cudaError_t e = cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream);
    return e == cudaSuccess ? 0 : tide_cuda_fail(e, "cudaEventRecord");
}

extern "C" int tide_gpu_timer_create(void **event)
{
    cudaEvent_t e;
    cudaError_t r = cudaEventCreate(&e);
    *event = r == cudaSuccess ? (void *)e : nullptr;
    return r == cudaSuccess ? 0 : tide_cuda_fail(r, "cudaEventCreate");
}

extern "C" int tide_gpu_timer_ms(void *from, void *to, float *ms)
{
    cudaError_t e = cudaEventSynchronize((cudaEvent_t)to);
    if (e == cudaSuccess)
        e = cudaEventElapsedTime(ms, (cudaEvent_t)from, (cudaEvent_t)to);
    return e == cudaSuccess ? 0 : tide_cuda_fail(e, "cudaEventElapsedTime");
}

extern "C" int tide_gpu_stream_wait(void *stream, void *event)
{
    cudaError_t e = cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0);
    return e == cudaSuccess ? 0 : tide_cuda_fail(e, "cudaStreamWaitEvent");
}

static_assert(sizeof(cudaIpcMemHandle_t) == TIDE_GPU_IPC_BYTES &&
                  sizeof(cudaIpcEventHandle_t) == TIDE_GPU_IPC_BYTES,
              "CUDA IPC handles of TIDE_GPU_IPC_BYTES");

// The first byte of the allocation p lies in (the runtime has no call for it: the driver's
// cuMemGetAddressRange, reached through the runtime, so nothing links the driver library).
static cudaError_t allocation_start(const void *p, const char **base)
{
    typedef CUresult (*range_fn)(CUdeviceptr *, size_t *, CUdeviceptr);
    static range_fn range;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    cudaError_t e = cudaSuccess;
    if (!range)
#if CUDART_VERSION >= 12050
        e = cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", (void **)&range, 12000,
                                             cudaEnableDefault, &found);
#else
        e = cudaGetDriverEntryPoint("cuMemGetAddressRange", (void **)&range, cudaEnableDefault,
                                    &found);
#endif
    if (e == cudaSuccess && !range)
        e = cudaErrorSymbolNotFound;
    CUdeviceptr start = 0;
    size_t bytes = 0;
    if (e == cudaSuccess && range(&start, &bytes, (CUdeviceptr)p) != CUDA_SUCCESS)
        e = cudaErrorInvalidDevicePointer;
    *base = (const char *)start;
    return e;
}

extern "C" int tide_gpu_ipc_mem_handle(const void *p, void *handle, size_t *offset)
{
    cudaIpcMemHandle_t h;
    const char *base = nullptr;
    cudaError_t e = allocation_start(p, &base);
    if (e == cudaSuccess)
        e = cudaIpcGetMemHandle(&h, const_cast<char *>(base));
    if (e == cudaSuccess)
        memcpy(handle, &h, sizeof h);
    *offset = e == cudaSuccess ? (size_t)((const char *)p - base) : 0;
    return e == cudaSuccess ? 0 : tide_cuda_fail(e, "cudaIpcGetMemHandle");
}

extern "C" int tide_gpu_ipc_mem_open(const void *handle, void **base, int *device)
{
    cudaIpcMemHandle_t h;
    memcpy(&h, handle, sizeof h);
    cudaError_t e = cudaIpcOpenMemHandle(base, h, cudaIpcMemLazyEnablePeerAccess);
    cudaPointerAttributes a;
    if (e == cudaSuccess && (e = cudaPointerGetAttributes(&a, *base)) != cudaSuccess)
        cudaIpcCloseMemHandle(*base);
    *device = e == cudaSuccess ? a.device : -1;
    if (e != cudaSuccess)
        *base = nullptr;
    return e == cudaSuccess ? 0 : tide_cuda_fail(e, "cudaIpcOpenMemHandle");
}

extern "C" void tide_gpu_ipc_mem_close(void *base)
{
    if (base)
        cudaIpcCloseMemHandle(base);
}

extern "C" int tide_gpu_ipc_event_create(void **event, void *handle)
{
    cudaEvent_t ev;
    cudaIpcEventHandle_t h;
    cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming | cudaEventInterprocess);
    if (e == cudaSuccess && (e = cudaIpcGetEventHandle(&h, ev)) != cudaSuccess)
        cudaEventDestroy(ev);
    *event = e == cudaSuccess ? (void *)ev : nullptr;
    if (e == cudaSuccess)
        memcpy(handle, &h, sizeof h);
    return e == cudaSuccess ? 0 : tide_cuda_fail(e, "cudaIpcGetEventHandle");
}

extern "C" int tide_gpu_ipc_event_open(const void *handle, void **event)
{
    cudaIpcEventHandle_t h;
    cudaEvent_t ev;
    memcpy(&h, handle, sizeof h);
    cudaError_t e = cudaIpcOpenEventHandle(&ev, h);
    *event = e == cudaSuccess ? (void *)ev : nullptr;
    return e == cudaSuccess ? 0 : tide_cuda_fail(e, "cudaIpcOpenEventHandle");
}

extern "C" int tide_gpu_copy_peer_2d(void *dst, int dst_device, const void *src, int src_device,
                                     size_t pitch, size_t width, size_t rows, void *stream)
{
    if (!width || !rows)
        return 0;
    cudaMemcpy3DPeerParms m = {};
    m.srcPtr = make_cudaPitchedPtr((void *)src, pitch, width, rows);
    m.srcDevice = src_device;
    m.dstPtr = make_cudaPitchedPtr(dst, pitch, width, rows);
    m.dstDevice = dst_device;
    m.extent = make_cudaExtent(width, rows, 1);
    cudaError_t e = cudaMemcpy3DPeerAsync(&m, (cudaStream_t)stream);
    return e == cudaSuccess ? 0 : tide_cuda_fail(e, "cudaMemcpy3DPeerAsync");
}

extern "C" int tide_gpu_after(void *caller, void *event, void *stream)
{
    // cudaStreamLegacy names the legacy default stream whatever default-stream mode the
    // caller's code was compiled with; 0 would mean the per-thread stream under
    // --default-stream per-thread.
    cudaStream_t from = caller ? (cudaStream_t)caller : cudaStreamLegacy;
    cudaError_t e = cudaEventRecord((cudaEvent_t)event, from);
    if (e != cudaSuccess)
        return tide_cuda_fail(e, "recording the caller's stream");
    e = stream ? cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0)
               : cudaEventSynchronize((cudaEvent_t)event);
    return e == cudaSuccess ? 0 : tide_cuda_fail(e, "waiting for the caller's earlier work");
}

extern "C" int tide_gpu_memcpy_async(void *dst, const void *src, size_t bytes, void *stream)
{
    if (!bytes)
        return 0;
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)stream);
    return e == cudaSuccess ? 0 : tide_cuda_fail(e, "cudaMemcpyAsync");
}

extern "C" int tide_gpu_host_alloc(size_t bytes, void **ptr)
{
    return cudaHostAlloc(ptr, bytes ? bytes : 1, cudaHostAllocPortable) == cudaSuccess
               ? 0 : TIDE_ERR_NOMEM;
}

extern "C" int tide_gpu_host_free(void *ptr)
{
    return cudaFreeHost(ptr) == cudaSuccess ? 0 : TIDE_ERR_ARGUMENT;
}

extern "C" int tide_gpu_pointer_kind(const void *p)
{
    cudaPointerAttributes a;
    if (!p)
        return TIDE_MEM_PAGEABLE;
    cudaError_t e = cudaPointerGetAttributes(&a, p);
    if (e != cudaSuccess)
        return tide_cuda_fail(e, "cudaPointerGetAttributes", -1);
    switch (a.type) {
    case cudaMemoryTypeDevice:
    case cudaMemoryTypeManaged: return TIDE_MEM_DEVICE;
    case cudaMemoryTypeHost: return TIDE_MEM_PINNED;
    default: return TIDE_MEM_PAGEABLE;
    }
}
