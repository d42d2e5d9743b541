// device.cu: GPU discovery and the device-side permuting copy (C entry points for src/).
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <cuda_runtime.h>
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

struct geom {
    int64_t n[3], s[3], t[3]; // extents in the destination's order, source / destination strides
};

// One thread per element, indexed in destination order so writes coalesce.
template <typename T>
__global__ void copy_kernel(geom g, const T *__restrict__ src, T *__restrict__ dst, int64_t total)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t i2 = i % g.n[2], r = i / g.n[2];
        int64_t i1 = r % g.n[1], i0 = r / g.n[1];
        dst[i0 * g.t[0] + i1 * g.t[1] + i2 * g.t[2]] = src[i0 * g.s[0] + i1 * g.s[1] + i2 * g.s[2]];
    }
}

template <typename T>
cudaError_t launch(const geom &g, const char *src, char *dst, int64_t total)
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
    int64_t ss[3], ds[3], sc = 1, dc = 1;
    tide_box_strides(sbox, ss);
    tide_box_strides(dbox, ds);
    geom g;
    for (int k = 0; k < 3; k++) {
        int d = dbox->order[k];
        g.n[k] = region->hi[d] - region->lo[d];
        g.s[k] = ss[d];
        g.t[k] = ds[d];
        sc *= sbox->hi[k] - sbox->lo[k];
        dc *= dbox->hi[k] - dbox->lo[k];
    }
    int64_t total = g.n[0] * g.n[1] * g.n[2];
    if (total == 0)
        return 0;
    for (int f = 0; f < batch; f++) {
        const char *s = (const char *)src + (f * sc + tide_box_offset(sbox, region)) * (int64_t)elem;
        char *t = (char *)dst + (f * dc + tide_box_offset(dbox, region)) * (int64_t)elem;
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
