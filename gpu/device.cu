// device.cu: GPU discovery and the device-side permuting copy (C entry points for src/).
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <cuda_runtime.h>
#include <hwloc.h>
#include <hwloc/cudart.h>
#include "tide_config.h"
#if TIDE_HAVE_NCCL
#include <nccl.h>
#endif
#include "gpu.h"
extern "C" {
#include "region.h"
}

extern "C" int tide_gpu_count(char *why, size_t len)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(why, len, "no usable GPU: %s (CUDA error %d)", cudaGetErrorString(e), (int)e);
        cudaGetLastError();
        return 0;
    }
    if (n == 0) {
        snprintf(why, len, "no GPU found");
        return 0;
    }
    // A driver that lists devices but cannot allocate is no usable GPU either.
    void *probe = nullptr;
    e = cudaMalloc(&probe, 256);
    if (e != cudaSuccess) {
        snprintf(why, len, "no usable GPU: cudaMalloc failed: %s (CUDA error %d)",
                 cudaGetErrorString(e), (int)e);
        cudaGetLastError();
        return 0;
    }
    cudaFree(probe);
    snprintf(why, len, "%d GPU(s) usable", n);
    return n;
}

extern "C" int tide_gpu_properties(int device, tide_gpu_props *props)
{
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, device) != cudaSuccess)
        return TIDE_ERR_BACKEND;
    memset(props, 0, sizeof *props);
    snprintf(props->name, sizeof props->name, "%.127s", p.name);
    props->major = p.major;
    props->minor = p.minor;
    props->total_bytes = p.totalGlobalMem;
    int cur = 0;
    cudaGetDevice(&cur);
    if (cudaSetDevice(device) == cudaSuccess) {
        size_t f = 0, t = 0;
        if (cudaMemGetInfo(&f, &t) == cudaSuccess)
            props->free_bytes = f;
        cudaSetDevice(cur);
    }
    cudaDeviceGetPCIBusId(props->pci_bus_id, (int)sizeof props->pci_bus_id, device);
    return 0;
}

namespace {

// One thread per element, indexed in destination order so writes coalesce.
template <typename T>
__global__ void copy_kernel(tide_copy_geom g, const T *__restrict__ src, T *__restrict__ dst, int64_t total)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t i2 = i % g.n[2], r = i / g.n[2];
        int64_t i1 = r % g.n[1], i0 = r / g.n[1];
        dst[i0 * g.t[0] + i1 * g.t[1] + i2 * g.t[2]] = src[i0 * g.s[0] + i1 * g.s[1] + i2 * g.s[2]];
    }
}

template <typename T>
cudaError_t launch(const tide_copy_geom &g, const char *src, char *dst, int64_t total)
{
    int threads = 256;
    int64_t blocks = (total + threads - 1) / threads;
    if (blocks > 65535 * 8)
        blocks = 65535 * 8;
    copy_kernel<T><<<(unsigned)blocks, threads>>>(g, (const T *)src, (T *)dst, total);
    return cudaGetLastError();
}

} // namespace

extern "C" int tide_gpu_copy_region(size_t elem, int batch, const tide_box *region,
                                    const void *src, const tide_box *sbox, void *dst,
                                    const tide_box *dbox)
{
    tide_copy_geom g;
    int64_t total = tide_copy_geometry(region, sbox, dbox, &g);
    if (total == 0)
        return 0;
    for (int f = 0; f < batch; f++) {
        const char *s = (const char *)src + (g.soff + f * g.scount) * (int64_t)elem;
        char *t = (char *)dst + (g.doff + f * g.dcount) * (int64_t)elem;
        cudaError_t e;
        switch (elem) {
        case 4: e = launch<uint32_t>(g, s, t, total); break;
        case 8: e = launch<uint64_t>(g, s, t, total); break;
        case 16: e = launch<uint4>(g, s, t, total); break;
        default: return TIDE_ERR_ARGUMENT;
        }
        if (e != cudaSuccess)
            return TIDE_ERR_BACKEND;
    }
    return cudaDeviceSynchronize() == cudaSuccess ? 0 : TIDE_ERR_BACKEND;
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

// Bind this process to the cores hwloc finds nearest the device (its PCI locality).
static void bind_near(int device, char *cpuset, size_t len)
{
    cpuset[0] = '\0';
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo))
        return;
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (set && hwloc_topology_load(topo) == 0 &&
        hwloc_cudart_get_device_cpuset(topo, device, set) == 0 && !hwloc_bitmap_iszero(set) &&
        hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0)
        hwloc_bitmap_list_snprintf(cpuset, len, set);
    hwloc_bitmap_free(set);
    hwloc_topology_destroy(topo);
}

extern "C" int tide_gpu_select(int local_rank, size_t budget, int bind, tide_device_info *info,
                               char *why, size_t len)
{
    int n = tide_gpu_count(why, len);
    if (n <= 0)
        return TIDE_ERR_BACKEND;
    int dev = local_rank % n;
    cudaError_t e = cudaSetDevice(dev);
    tide_gpu_props p;
    if (e != cudaSuccess || tide_gpu_properties(dev, &p)) {
        snprintf(why, len, "cannot use GPU %d: %s", dev, cudaGetErrorString(e));
        return TIDE_ERR_BACKEND;
    }
    info->device = dev;
    snprintf(info->name, sizeof info->name, "%s", p.name);
    snprintf(info->pci_bus_id, sizeof info->pci_bus_id, "%s", p.pci_bus_id);
    info->cc_major = p.major;
    info->cc_minor = p.minor;
    info->total_bytes = p.total_bytes;
    info->free_bytes = p.free_bytes;
    const size_t margin = (size_t)1 << 30;
    size_t deflt = p.free_bytes > margin ? p.free_bytes - margin : p.free_bytes / 2;
    if (budget > p.free_bytes) {
        snprintf(why, len, "device budget %zu bytes exceeds the %zu bytes free on GPU %d (%s)",
                 budget, p.free_bytes, dev, p.name);
        return TIDE_ERR_ARGUMENT;
    }
    info->budget_bytes = budget ? budget : deflt;
    if (bind)
        bind_near(dev, info->cpuset, sizeof info->cpuset);
    snprintf(why, len, "GPU %d of %d: %s", dev, n, p.name);
    return 0;
}

namespace {

// Median of 5 timings (ms) of fn() recorded between two events on stream s, after a warm-up.
template <typename F> float median_ms(cudaStream_t s, F fn)
{
    constexpr int reps = 5;
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    float t[reps];
    fn();
    for (int i = 0; i < reps; i++) {
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

} // namespace

extern "C" int tide_gpu_measure(size_t bytes, tide_rates *r, char *why, size_t len)
{
    void *h0 = nullptr, *h1 = nullptr, *d0 = nullptr, *d1 = nullptr;
    cudaStream_t s0 = nullptr, s1 = nullptr;
    int st = 0;
    if (cudaHostAlloc(&h0, bytes, cudaHostAllocDefault) != cudaSuccess ||
        cudaHostAlloc(&h1, bytes, cudaHostAllocDefault) != cudaSuccess ||
        cudaMalloc(&d0, bytes) != cudaSuccess || cudaMalloc(&d1, bytes) != cudaSuccess ||
        cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking) != cudaSuccess ||
        cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking) != cudaSuccess) {
        snprintf(why, len, "cannot allocate 2 x %zu bytes pinned and on the device: %s", bytes,
                 cudaGetErrorString(cudaGetLastError()));
        st = TIDE_ERR_NOMEM;
    } else {
        // Never measure on zeros: fill with a pattern.
        memset(h0, 0x5a, bytes);
        memset(h1, 0xa5, bytes);
        cudaMemcpy(d0, h0, bytes, cudaMemcpyHostToDevice);
        cudaMemcpy(d1, h1, bytes, cudaMemcpyHostToDevice);
        double gb = (double)bytes / 1e9;
        float t = median_ms(s0, [&] { cudaMemcpyAsync(d0, h0, bytes, cudaMemcpyHostToDevice, s0); });
        r->h2d = gb / (t * 1e-3);
        t = median_ms(s0, [&] { cudaMemcpyAsync(h1, d1, bytes, cudaMemcpyDeviceToHost, s0); });
        r->d2h = gb / (t * 1e-3);
        // Both directions: the second stream joins the first through events.
        cudaEvent_t fork, join;
        cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
        cudaEventCreateWithFlags(&join, cudaEventDisableTiming);
        t = median_ms(s0, [&] {
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
        t = median_ms(s0, [&] { cudaMemcpyAsync(d1, d0, bytes, cudaMemcpyDeviceToDevice, s0); });
        r->d2d = 2 * gb / (t * 1e-3);
        cudaError_t e = cudaDeviceSynchronize();
        if (e == cudaSuccess)
            e = cudaGetLastError();
        if (e != cudaSuccess) {
            snprintf(why, len, "measuring rates failed: %s", cudaGetErrorString(e));
            st = TIDE_ERR_BACKEND;
        }
    }
    if (s0)
        cudaStreamDestroy(s0);
    if (s1)
        cudaStreamDestroy(s1);
    cudaFree(d0);
    cudaFree(d1);
    cudaFreeHost(h0);
    cudaFreeHost(h1);
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
