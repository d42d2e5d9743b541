// pack.cu: element-wise kernels on device arrays (gpu/pack.h): the permuting copy of
// comm/region.h, which packs and unpacks the exchanges on the device, and scaling.
#include <algorithm>
#include <cstdint>
#include <cuda_runtime.h>
#include "backend/memory.h"
#include "gpu/cuda_error.h"
#include "gpu/pack.h"
extern "C" {
#include "comm/region.h"
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

template <typename T> __global__ void scale_kernel(T *d, int64_t n, T s)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        d[i] *= s;
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

} // namespace

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
            return tide_cuda_fail(e, "permuting copy kernel");
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
    return e == cudaSuccess ? 0 : tide_cuda_fail(e, "scaling kernel");
}
