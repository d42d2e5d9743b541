// device.cu: GPU discovery and the device-side permuting copy (C entry points for src/).
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <chrono>
#include <vector>
#include <cstdlib>
#include <cuda_runtime.h>
#include <hwloc.h>
#include <hwloc/cudart.h>
#include "tide_config.h"
#if TIDE_HAVE_NCCL
#include <nccl.h>
#endif
#include "gpu/gpu.h"
extern "C" {
#include "comm/region.h"
}

// The devices CUDA lists, without opening any context (0 with the reason in why).
static int count_devices(char *why, size_t len)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(why, len, "no usable GPU: %s (CUDA error %d)", cudaGetErrorString(e), (int)e);
        cudaGetLastError();
        return 0;
    }
    if (n == 0)
        snprintf(why, len, "no GPU found");
    return n;
}

// A driver that lists devices but cannot allocate is no usable GPU either. Allocates on the
// current device, opening its context.
static int probe_current(int device, char *why, size_t len)
{
    void *probe = nullptr;
    cudaError_t e = cudaMalloc(&probe, 256);
    if (e != cudaSuccess) {
        snprintf(why, len, "no usable GPU: cudaMalloc on GPU %d failed: %s (CUDA error %d)",
                 device, cudaGetErrorString(e), (int)e);
        cudaGetLastError();
        return TIDE_ERR_BACKEND;
    }
    cudaFree(probe);
    return 0;
}

extern "C" int tide_gpu_count(char *why, size_t len)
{
    int n = count_devices(why, len), cur = 0;
    if (n <= 0)
        return 0;
    cudaGetDevice(&cur);
    if (probe_current(cur, why, len))
        return 0;
    snprintf(why, len, "%d GPU(s) usable", n);
    return n;
}

extern "C" int tide_gpu_properties(int device, tide_gpu_props *props)
{
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, device) != cudaSuccess) {
        cudaGetLastError();
        return TIDE_ERR_BACKEND;
    }
    memset(props, 0, sizeof *props);
    snprintf(props->name, sizeof props->name, "%.127s", p.name);
    props->major = p.major;
    props->minor = p.minor;
    props->total_bytes = p.totalGlobalMem;
    int cur = -1;
    size_t f = 0, t = 0;
    if (cudaGetDevice(&cur) == cudaSuccess && cur == device &&
        cudaMemGetInfo(&f, &t) == cudaSuccess)
        props->free_bytes = f;
    cudaGetLastError();
    cudaDeviceGetPCIBusId(props->pci_bus_id, (int)sizeof props->pci_bus_id, device);
    return 0;
}

namespace {

// Loops in destination order (dimension 2 of the geometry fastest, so writes coalesce): the
// grid's x runs along it, y and z over the two outer loops; no index division anywhere.
template <typename T>
__global__ void copy_kernel(tide_copy_geom g, const T *__restrict__ src, T *__restrict__ dst)
{
    for (int64_t i0 = blockIdx.z; i0 < g.n[0]; i0 += gridDim.z)
        for (int64_t i1 = blockIdx.y; i1 < g.n[1]; i1 += gridDim.y) {
            const T *s = src + i0 * g.s[0] + i1 * g.s[1];
            T *t = dst + i0 * g.t[0] + i1 * g.t[1];
            for (int64_t i2 = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i2 < g.n[2];
                 i2 += (int64_t)gridDim.x * blockDim.x)
                t[i2 * g.t[2]] = s[i2 * g.s[2]];
        }
}

// Grid size for a grid-stride loop over total elements.
unsigned blocks_for(int64_t total, int threads)
{
    int64_t blocks = (total + threads - 1) / threads;
    return (unsigned)(blocks > 65535 * 8 ? 65535 * 8 : blocks);
}

template <typename T>
cudaError_t launch(const tide_copy_geom &g, const char *src, char *dst, cudaStream_t stream)
{
    const int threads = 256;
    int64_t bx = (g.n[2] + threads - 1) / threads;
    dim3 grid((unsigned)std::min<int64_t>(bx, 1024), (unsigned)std::min<int64_t>(g.n[1], 65535),
              (unsigned)std::min<int64_t>(g.n[0], 65535));
    copy_kernel<T><<<grid, threads, 0, stream>>>(g, (const T *)src, (T *)dst);
    return cudaGetLastError();
}

thread_local char last_error[256];

// Record a CUDA failure for tide_gpu_last_error and turn it into a status.
int fail(cudaError_t e, const char *what, int code = TIDE_ERR_BACKEND)
{
    snprintf(last_error, sizeof last_error, "%s: %s (CUDA error %d)", what,
             cudaGetErrorString(e), (int)e);
    cudaGetLastError();
    return code;
}

} // namespace

extern "C" const char *tide_gpu_last_error(void) { return last_error; }

extern "C" int tide_gpu_note_error(const char *call, const char *what, int code)
{
    snprintf(last_error, sizeof last_error, "%s: %s (%d)", call, what, code);
    return TIDE_ERR_BACKEND;
}

extern "C" int tide_gpu_copy_region_async(size_t elem, int batch, const tide_box *region,
                                          const void *src, const tide_box *sbox, void *dst,
                                          const tide_box *dbox, void *stream)
{
    tide_copy_geom g;
    int64_t total = tide_copy_geometry(region, sbox, dbox, &g);
    if (total == 0)
        return 0;
    cudaStream_t st = (cudaStream_t)stream;
    for (int f = 0; f < batch; f++) {
        const char *s = (const char *)src + (g.soff + f * g.scount) * (int64_t)elem;
        char *t = (char *)dst + (g.doff + f * g.dcount) * (int64_t)elem;
        cudaError_t e;
        switch (elem) {
        case 4: e = launch<uint32_t>(g, s, t, st); break;
        case 8: e = launch<uint64_t>(g, s, t, st); break;
        case 16: e = launch<uint4>(g, s, t, st); break;
        default: return TIDE_ERR_ARGUMENT;
        }
        if (e != cudaSuccess)
            return fail(e, "permuting copy kernel");
    }
    return 0;
}

extern "C" int tide_gpu_copy_region(size_t elem, int batch, const tide_box *region,
                                    const void *src, const tide_box *sbox, void *dst,
                                    const tide_box *dbox)
{
    int st = tide_gpu_copy_region_async(elem, batch, region, src, sbox, dst, dbox, nullptr);
    return st ? st : tide_gpu_sync(nullptr);
}

extern "C" int tide_gpu_malloc(size_t bytes, void **ptr)
{
    cudaError_t e = cudaMalloc(ptr, bytes ? bytes : 1);
    return e == cudaSuccess ? 0 : fail(e, "cudaMalloc", TIDE_ERR_NOMEM);
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
    return e == cudaSuccess ? 0 : fail(e, "cudaStreamCreate");
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
    return e == cudaSuccess ? 0 : fail(e, "device work");
}

extern "C" int tide_gpu_event_create(void **event)
{
    cudaEvent_t e;
    cudaError_t r = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    *event = r == cudaSuccess ? (void *)e : nullptr;
    return r == cudaSuccess ? 0 : fail(r, "cudaEventCreate");
}

extern "C" void tide_gpu_event_destroy(void *event)
{
    if (event)
        cudaEventDestroy((cudaEvent_t)event);
}

extern "C" int tide_gpu_event_record(void *event, void *stream)
{
    cudaError_t e = cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream);
    return e == cudaSuccess ? 0 : fail(e, "cudaEventRecord");
}

extern "C" int tide_gpu_stream_wait(void *stream, void *event)
{
    cudaError_t e = cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0);
    return e == cudaSuccess ? 0 : fail(e, "cudaStreamWaitEvent");
}

extern "C" int tide_gpu_peer(int device, int peer, int enable)
{
    int can = 0, prev = -1;
    cudaError_t e = cudaDeviceCanAccessPeer(&can, device, peer);
    if (e != cudaSuccess)
        return fail(e, "cudaDeviceCanAccessPeer");
    if (!can)
        return TIDE_ERR_UNSUPPORTED;
    if (!enable)
        return 0;
    if (tide_gpu_device_enter(device, &prev))
        return TIDE_ERR_BACKEND;
    e = cudaDeviceEnablePeerAccess(peer, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) {
        cudaGetLastError(); // not an error: clear it
        e = cudaSuccess;
    }
    tide_gpu_device_leave(prev);
    return e == cudaSuccess ? 0 : fail(e, "cudaDeviceEnablePeerAccess");
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
    return e == cudaSuccess ? 0 : fail(e, "cudaMemcpy3DPeerAsync");
}

extern "C" int tide_gpu_after(void *caller, void *event, void *stream)
{
    // cudaStreamLegacy names the legacy default stream whatever default-stream mode the
    // caller's code was compiled with; 0 would mean the per-thread stream under
    // --default-stream per-thread.
    cudaStream_t from = caller ? (cudaStream_t)caller : cudaStreamLegacy;
    cudaError_t e = cudaEventRecord((cudaEvent_t)event, from);
    if (e != cudaSuccess)
        return fail(e, "recording the caller's stream");
    e = stream ? cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0)
               : cudaEventSynchronize((cudaEvent_t)event);
    return e == cudaSuccess ? 0 : fail(e, "waiting for the caller's earlier work");
}

extern "C" int tide_gpu_memcpy_async(void *dst, const void *src, size_t bytes, void *stream)
{
    if (!bytes)
        return 0;
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)stream);
    return e == cudaSuccess ? 0 : fail(e, "cudaMemcpyAsync");
}

namespace {
template <typename T> __global__ void scale_kernel(T *d, int64_t n, T s)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        d[i] *= s;
}
} // namespace

extern "C" int tide_gpu_scale(int dbl, void *data, long long count, double s, void *stream)
{
    if (count <= 0)
        return 0;
    cudaStream_t st = (cudaStream_t)stream;
    if (dbl)
        scale_kernel<double><<<blocks_for(count, 256), 256, 0, st>>>((double *)data, count, s);
    else
        scale_kernel<float><<<blocks_for(count, 256), 256, 0, st>>>((float *)data, count,
                                                                    (float)s);
    cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? 0 : fail(e, "scaling kernel");
}

extern "C" int tide_gpu_pointer_kind(const void *p)
{
    cudaPointerAttributes a;
    if (!p)
        return TIDE_MEM_PAGEABLE;
    cudaError_t e = cudaPointerGetAttributes(&a, p);
    if (e != cudaSuccess)
        return fail(e, "cudaPointerGetAttributes", -1);
    switch (a.type) {
    case cudaMemoryTypeDevice:
    case cudaMemoryTypeManaged: return TIDE_MEM_DEVICE;
    case cudaMemoryTypeHost: return TIDE_MEM_PINNED;
    default: return TIDE_MEM_PAGEABLE;
    }
}

// ---- NCCL -----------------------------------------------------------------------------------

struct tide_nccl {
#if TIDE_HAVE_NCCL
    ncclComm_t comm;
#endif
    int rank;
};

extern "C" int tide_nccl_create(MPI_Comm comm, int max_ctas, tide_nccl **out, char *why,
                                size_t len)
{
#if TIDE_HAVE_NCCL
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    ncclUniqueId id;
    ncclResult_t r = ncclSuccess;
    if (rank == 0)
        r = ncclGetUniqueId(&id);
    // Rank 0's failure travels with the id, so no rank waits in ncclCommInitRank alone.
    int ok = r == ncclSuccess, all_ok = 0;
    if (MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, comm) != MPI_SUCCESS ||
        MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) {
        snprintf(why, len, "MPI failed while setting up NCCL");
        return TIDE_ERR_MPI;
    }
    if (!all_ok) {
        snprintf(why, len, "ncclGetUniqueId failed on rank 0");
        return TIDE_ERR_BACKEND;
    }
    tide_nccl *c = (tide_nccl *)calloc(1, sizeof *c);
    if (!c) {
        snprintf(why, len, "out of memory");
        return TIDE_ERR_NOMEM;
    }
    c->rank = rank;
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 14, 0)
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    if (max_ctas > 0)
        config.minCTAs = 1, config.maxCTAs = max_ctas;
    r = ncclCommInitRankConfig(&c->comm, size, id, rank, &config);
#else // no configurations before NCCL 2.14: NCCL's own CTA counts
    (void)max_ctas;
    r = ncclCommInitRank(&c->comm, size, id, rank);
#endif
    if (r != ncclSuccess) {
        snprintf(why, len, "NCCL's communicator initialization failed: %s",
                 ncclGetErrorString(r));
        free(c);
        return TIDE_ERR_BACKEND;
    }
    *out = c;
    return 0;
#else
    (void)comm, (void)max_ctas;
    *out = nullptr;
    snprintf(why, len, "this build has no NCCL");
    return TIDE_ERR_UNSUPPORTED;
#endif
}

extern "C" void tide_nccl_destroy(tide_nccl *c)
{
    if (!c)
        return;
#if TIDE_HAVE_NCCL
    ncclCommDestroy(c->comm);
#endif
    free(c);
}

#if TIDE_HAVE_NCCL
static int nccl_status(ncclResult_t r, const char *what)
{
    return r == ncclSuccess ? 0 : tide_gpu_note_error(what, ncclGetErrorString(r), (int)r);
}
#endif

extern "C" int tide_nccl_check(tide_nccl *c)
{
#if TIDE_HAVE_NCCL
    if (!c)
        return 0;
    ncclResult_t async = ncclSuccess;
    int st = nccl_status(ncclCommGetAsyncError(c->comm, &async), "ncclCommGetAsyncError");
    if (st)
        return st;
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 14, 0)
    if (async == ncclInProgress) // a nonblocking operation still running, no failure
        return 0;
#endif
    return nccl_status(async, "NCCL (asynchronous error)");
#else
    (void)c;
    return 0;
#endif
}

extern "C" int tide_nccl_group_start(void)
{
#if TIDE_HAVE_NCCL
    return nccl_status(ncclGroupStart(), "ncclGroupStart");
#else
    return TIDE_ERR_UNSUPPORTED;
#endif
}

extern "C" int tide_nccl_group_end(void)
{
#if TIDE_HAVE_NCCL
    return nccl_status(ncclGroupEnd(), "ncclGroupEnd");
#else
    return TIDE_ERR_UNSUPPORTED;
#endif
}

extern "C" int tide_nccl_send(tide_nccl *c, const void *buf, size_t bytes, int peer,
                              void *stream)
{
#if TIDE_HAVE_NCCL
    return nccl_status(ncclSend(buf, bytes, ncclInt8, peer, c->comm, (cudaStream_t)stream),
                       "ncclSend");
#else
    (void)c, (void)buf, (void)bytes, (void)peer, (void)stream;
    return TIDE_ERR_UNSUPPORTED;
#endif
}

extern "C" int tide_nccl_recv(tide_nccl *c, void *buf, size_t bytes, int peer, void *stream)
{
#if TIDE_HAVE_NCCL
    return nccl_status(ncclRecv(buf, bytes, ncclInt8, peer, c->comm, (cudaStream_t)stream),
                       "ncclRecv");
#else
    (void)c, (void)buf, (void)bytes, (void)peer, (void)stream;
    return TIDE_ERR_UNSUPPORTED;
#endif
}

extern "C" int tide_nccl_version(void)
{
#if TIDE_HAVE_NCCL
    int v = 0;
    return ncclGetVersion(&v) == ncclSuccess ? v : 0;
#else
    return 0;
#endif
}

// With bind, bind this process to the cores hwloc finds nearest the device (its PCI locality),
// unless it is already bound to part of the machine (mpirun --bind-to ..., taskset, numactl):
// that binding is the launcher's choice and is kept. cpuset receives the binding in force.
// Returns TIDE_BIND_*.
static int bind_near(int device, int bind, char *cpuset, size_t len)
{
    cpuset[0] = '\0';
    if (!bind)
        return TIDE_BIND_NONE;
    int how = TIDE_BIND_NONE;
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo))
        return how;
    hwloc_bitmap_t near = hwloc_bitmap_alloc(), cur = hwloc_bitmap_alloc();
    if (near && cur && hwloc_topology_load(topo) == 0) {
        int located = hwloc_cudart_get_device_cpuset(topo, device, near) == 0 &&
                      !hwloc_bitmap_iszero(near);
        hwloc_const_cpuset_t all = hwloc_topology_get_topology_cpuset(topo);
        if (hwloc_get_cpubind(topo, cur, HWLOC_CPUBIND_PROCESS) == 0 &&
            !hwloc_bitmap_iszero(cur) && !hwloc_bitmap_isincluded(all, cur)) {
            how = located && !hwloc_bitmap_intersects(cur, near) ? TIDE_BIND_KEPT_FAR
                                                                  : TIDE_BIND_KEPT;
            hwloc_bitmap_list_snprintf(cpuset, len, cur);
        } else if (located && hwloc_set_cpubind(topo, near, HWLOC_CPUBIND_PROCESS) == 0) {
            how = TIDE_BIND_NEAR;
            hwloc_bitmap_list_snprintf(cpuset, len, near);
        }
    }
    hwloc_bitmap_free(near);
    hwloc_bitmap_free(cur);
    hwloc_topology_destroy(topo);
    return how;
}

// The device a rank asked for (TIDE_DEVICE_AUTO, _CURRENT or an index) among n; -1 with the
// reason in why when there is none.
static int choose_device(int local_rank, int want, int n, char *why, size_t len)
{
    if (want == TIDE_DEVICE_AUTO)
        return local_rank % n;
    if (want == TIDE_DEVICE_CURRENT) {
        int cur = -1;
        cudaError_t e = cudaGetDevice(&cur);
        if (e == cudaSuccess)
            return cur;
        snprintf(why, len, "cannot tell the current device: %s (CUDA error %d)",
                 cudaGetErrorString(e), (int)e);
        cudaGetLastError();
        return -1;
    }
    if (want >= 0 && want < n)
        return want;
    snprintf(why, len, "device %d does not exist (this node has %d GPU%s)", want, n,
             n == 1 ? "" : "s");
    return -1;
}

extern "C" int tide_gpu_select(int local_rank, int want, int bind, tide_device_info *info,
                               int *binding, char *why, size_t len)
{
    int n = count_devices(why, len);
    if (n <= 0)
        return TIDE_ERR_BACKEND;
    int dev = choose_device(local_rank, want, n, why, len);
    if (dev < 0)
        return want >= 0 ? TIDE_ERR_ARGUMENT : TIDE_ERR_BACKEND;
    // Only now does a context open, and only on the chosen device.
    cudaError_t e = cudaSetDevice(dev);
    if (e != cudaSuccess) {
        snprintf(why, len, "no usable GPU: cannot use GPU %d: %s (CUDA error %d)", dev,
                 cudaGetErrorString(e), (int)e);
        cudaGetLastError();
        return TIDE_ERR_BACKEND;
    }
    if (probe_current(dev, why, len))
        return TIDE_ERR_BACKEND;
    tide_gpu_props p;
    if (tide_gpu_properties(dev, &p)) {
        snprintf(why, len, "no usable GPU: cannot read the properties of GPU %d", dev);
        return TIDE_ERR_BACKEND;
    }
    info->device = dev;
    snprintf(info->name, sizeof info->name, "%s", p.name);
    snprintf(info->pci_bus_id, sizeof info->pci_bus_id, "%s", p.pci_bus_id);
    info->cc_major = p.major;
    info->cc_minor = p.minor;
    info->total_bytes = p.total_bytes;
    info->free_bytes = p.free_bytes;
    info->budget_bytes = 0;
    *binding = bind_near(dev, bind, info->cpuset, sizeof info->cpuset);
    snprintf(why, len, "GPU %d of %d: %s", dev, n, p.name);
    return 0;
}

namespace {

// Median of 5 timings (ms) of fn() recorded between two events on stream s, after a warm-up;
// align (when given) is called before each repetition, once the previous one is done.
template <typename F> float median_ms(cudaStream_t s, int (*align)(void *, int), void *arg, F fn)
{
    constexpr int reps = 5;
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    float t[reps];
    fn();
    cudaStreamSynchronize(s);
    for (int i = 0; i < reps; i++) {
        if (align)
            align(arg, 1);
        cudaEventRecord(a, s);
        fn();
        cudaEventRecord(b, s);
        cudaEventSynchronize(b);
        cudaEventElapsedTime(&t[i], a, b);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    std::sort(t, t + reps);
    return t[reps / 2];
}

// What a rate measurement copies between on one GPU (the current one when made): two pinned
// host buffers (portable), two device buffers and two streams of `bytes`, the host buffers
// filled with a pattern (never measure on zeros).
struct Buffers {
    void *h[2] = {nullptr, nullptr}, *d[2] = {nullptr, nullptr};
    cudaStream_t s[2] = {nullptr, nullptr};
    bool make(size_t bytes)
    {
        for (int k = 0; k < 2; k++)
            if (cudaHostAlloc(&h[k], bytes, cudaHostAllocPortable) != cudaSuccess ||
                cudaMalloc(&d[k], bytes) != cudaSuccess ||
                cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking) != cudaSuccess)
                return false;
        memset(h[0], 0x5a, bytes);
        memset(h[1], 0xa5, bytes);
        return true;
    }
    // On the GPU they were made on.
    void release()
    {
        for (int k = 0; k < 2; k++) {
            if (s[k])
                cudaStreamDestroy(s[k]);
            cudaFree(d[k]);
            cudaFreeHost(h[k]);
        }
    }
};

} // namespace

extern "C" int tide_gpu_measure(size_t bytes, int (*align)(void *, int), void *arg,
                                tide_rates *r, char *why, size_t len)
{
    Buffers x;
    int st = 0;
    if (!x.make(bytes)) {
        snprintf(why, len, "cannot allocate 2 x %zu bytes pinned and on the device: %s", bytes,
                 cudaGetErrorString(cudaGetLastError()));
        st = TIDE_ERR_NOMEM;
    }
    if (align && !align(arg, st == 0) && !st) {
        snprintf(why, len, "another rank could not allocate its arrays");
        st = TIDE_ERR_NOMEM;
    }
    void *h0 = x.h[0], *h1 = x.h[1], *d0 = x.d[0], *d1 = x.d[1];
    cudaStream_t s0 = x.s[0], s1 = x.s[1];
    if (!st) {
        cudaMemcpy(d0, h0, bytes, cudaMemcpyHostToDevice);
        cudaMemcpy(d1, h1, bytes, cudaMemcpyHostToDevice);
        double gb = (double)bytes / 1e9;
        float t = median_ms(s0, align, arg, [&] {
            cudaMemcpyAsync(d0, h0, bytes, cudaMemcpyHostToDevice, s0);
        });
        r->h2d = gb / (t * 1e-3);
        t = median_ms(s0, align, arg, [&] {
            cudaMemcpyAsync(h1, d1, bytes, cudaMemcpyDeviceToHost, s0);
        });
        r->d2h = gb / (t * 1e-3);
        // Both directions: the second stream joins the first through events.
        cudaEvent_t fork, join;
        cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
        cudaEventCreateWithFlags(&join, cudaEventDisableTiming);
        t = median_ms(s0, align, arg, [&] {
            cudaEventRecord(fork, s0);
            cudaStreamWaitEvent(s1, fork, 0);
            cudaMemcpyAsync(d0, h0, bytes, cudaMemcpyHostToDevice, s0);
            cudaMemcpyAsync(h1, d1, bytes, cudaMemcpyDeviceToHost, s1);
            cudaEventRecord(join, s1);
            cudaStreamWaitEvent(s0, join, 0);
        });
        r->both = 2 * gb / (t * 1e-3);
        cudaEventDestroy(fork);
        cudaEventDestroy(join);
        t = median_ms(s0, align, arg, [&] {
            cudaMemcpyAsync(d1, d0, bytes, cudaMemcpyDeviceToDevice, s0);
        });
        r->d2d = 2 * gb / (t * 1e-3);
        cudaError_t e = cudaDeviceSynchronize();
        if (e == cudaSuccess)
            e = cudaGetLastError();
        if (e != cudaSuccess) {
            snprintf(why, len, "measuring rates failed: %s", cudaGetErrorString(e));
            st = TIDE_ERR_BACKEND;
        }
    }
    x.release();
    return st;
}

extern "C" int tide_gpu_measure_gpus(const int *devices, int n, size_t bytes, tide_rates *r,
                                     char *why, size_t len)
{
    std::vector<Buffers> g((size_t)n);
    int prev = -1, st = 0;
    cudaGetDevice(&prev);
    for (int i = 0; i < n && !st; i++) {
        if (cudaSetDevice(devices[i]) != cudaSuccess || !g[(size_t)i].make(bytes)) {
            snprintf(why, len, "GPU %d: cannot allocate 2 x %zu bytes pinned and on the device: "
                     "%s", devices[i], bytes, cudaGetErrorString(cudaGetLastError()));
            st = TIDE_ERR_NOMEM;
        }
    }
    // Seconds of the fastest of three repetitions after a warm-up, every GPU copying at once:
    // up (host to device), down, or both directions on two streams.
    auto time_all = [&](bool up, bool down) {
        double best = 1e30;
        for (int rep = 0; rep < 4; rep++) {
            auto t0 = std::chrono::steady_clock::now();
            for (Buffers &x : g) {
                if (up)
                    cudaMemcpyAsync(x.d[0], x.h[0], bytes, cudaMemcpyHostToDevice, x.s[0]);
                if (down)
                    cudaMemcpyAsync(x.h[1], x.d[1], bytes, cudaMemcpyDeviceToHost, x.s[1]);
            }
            for (Buffers &x : g)
                for (cudaStream_t s : x.s)
                    cudaStreamSynchronize(s);
            double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                           .count();
            if (rep)
                best = std::min(best, t);
        }
        return best;
    };
    if (!st) {
        double gb = (double)bytes * n / 1e9;
        r->h2d = gb / time_all(true, false);
        r->d2h = gb / time_all(false, true);
        r->both = 2 * gb / time_all(true, true);
        r->d2d = r->host_copy = 0;
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess) {
            snprintf(why, len, "measuring the GPUs' rates together failed: %s",
                     cudaGetErrorString(e));
            st = TIDE_ERR_BACKEND;
        }
    }
    for (int i = 0; i < n; i++) {
        cudaSetDevice(devices[i]);
        g[(size_t)i].release();
    }
    if (prev >= 0)
        cudaSetDevice(prev);
    return st;
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

extern "C" int tide_gpu_device_enter(int device, int *prev)
{
    cudaError_t e = cudaGetDevice(prev);
    if (e == cudaSuccess && *prev != device)
        e = cudaSetDevice(device);
    return e == cudaSuccess ? 0 : fail(e, "making the context's GPU current");
}

extern "C" void tide_gpu_device_leave(int prev)
{
    int cur = -1;
    if (prev >= 0 && cudaGetDevice(&cur) == cudaSuccess && cur != prev)
        cudaSetDevice(prev);
}
