// pack.cu: element-wise kernels on device arrays (gpu/pack.h): the permuting copy of
// comm/region.h, which packs and unpacks the exchanges on the device, and scaling.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
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

// most > 0: the grid holds at most that many blocks (the loops stride over the rest).
template <typename T>
cudaError_t launch(const tide_copy_geom &g, const char *src, char *dst, int64_t most,
                   cudaStream_t stream)
{
    const int threads = 256;
    int64_t bx = std::min<int64_t>((g.n[2] + threads - 1) / threads, 1024);
    int64_t by = std::min<int64_t>(g.n[1], 65535), bz = std::min<int64_t>(g.n[0], 65535);
    if (most > 0) {
        bx = std::min(bx, most);
        by = std::min(by, std::max<int64_t>(1, most / bx));
        bz = std::min(bz, std::max<int64_t>(1, most / (bx * by)));
    }
    copy_kernel<T><<<dim3((unsigned)bx, (unsigned)by, (unsigned)bz), threads, 0, stream>>>(
        g, (const T *)src, (T *)dst);
    return cudaGetLastError();
}

// The copy of geometry g (tide_copy_geometry) of every field by the kernel.
int copy_kernels(const tide_copy_geom &g, size_t elem, int batch, const void *src, void *dst,
                 int64_t most, cudaStream_t st)
{
    for (int f = 0; f < batch; f++) {
        const char *s = (const char *)src + (g.soff + f * g.scount) * (int64_t)elem;
        char *t = (char *)dst + (g.doff + f * g.dcount) * (int64_t)elem;
        cudaError_t e;
        switch (elem) {
        case 4: e = launch<uint32_t>(g, s, t, most, st); break;
        case 8: e = launch<uint64_t>(g, s, t, most, st); break;
        case 16: e = launch<uint4>(g, s, t, most, st); break;
        default: return TIDE_ERR_ARGUMENT;
        }
        if (e != cudaSuccess)
            return tide_cuda_fail(e, "permuting copy kernel");
    }
    return 0;
}

// An integer environment variable read as atoll, or `unset` when it is absent or empty.
static long long env_integer(const char *name, long long unset)
{
    const char *v = getenv(name);
    return v && *v ? atoll(v) : unset;
}

// The blocks of a store into another GPU's memory (gpu/pack.h): TIDE_STORE_BLOCKS, else 2 an
// SM of the current GPU (read once: a process drives one GPU at a time here).
int64_t store_blocks()
{
    static int64_t most = -1;
    if (most < 0) {
        int dev = 0, sms = 0;
        long long v = env_integer("TIDE_STORE_BLOCKS", -1);
        if (v >= 0)
            most = v;
        else if (cudaGetDevice(&dev) == cudaSuccess &&
                 cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) == cudaSuccess)
            most = 2 * (int64_t)sms;
        else
            most = 0;
    }
    return most;
}

// The store's copy engine (gpu/pack.h): TIDE_STORE_ENGINE=0 keeps every store on the SMs.
bool store_engine()
{
    static int on = -1;
    if (on < 0)
        on = env_integer("TIDE_STORE_ENGINE", 1) != 0;
    return on != 0;
}

// The region of every field copied by the copy engine, as one 3D copy a field: rows of n[2]
// points contiguous on both sides, n[1] rows a slice, n[0] slices, the strides between them
// whole multiples of the row strides. Rows that follow each other on both sides merge into one
// (longer rows, fewer of them). Returns 1 when the geometry does not take that form (nothing
// enqueued), else 0 or TIDE_ERR_BACKEND.
int copy_by_engine(const tide_copy_geom &g0, size_t elem, int batch, const void *src,
                   void *dst, int dst_device, cudaStream_t stream)
{
    tide_copy_geom g = g0;
    if (g.s[2] != 1 || g.t[2] != 1)
        return 1;
    if (g.s[1] == g.n[2] && g.t[1] == g.n[2]) /* whole slices are runs: a slice a row */
        g.n[2] *= g.n[1], g.n[1] = g.n[0], g.s[1] = g.s[0], g.t[1] = g.t[0], g.n[0] = 1;
    if (g.n[0] > 1 && (g.s[0] % g.s[1] || g.t[0] % g.t[1]))
        return 1;
    if (g.s[1] < g.n[2] || g.t[1] < g.n[2])
        return 1;
    const int64_t e = (int64_t)elem;
    int src_device = 0;
    cudaError_t err = cudaGetDevice(&src_device);
    if (err != cudaSuccess)
        return tide_cuda_fail(err, "store by the copy engine");
    for (int f = 0; f < batch; f++) {
        cudaMemcpy3DPeerParms m = {};
        m.srcDevice = src_device, m.dstDevice = dst_device;
        m.srcPtr = make_cudaPitchedPtr((char *)src + (g.soff + f * g.scount) * e,
                                       (size_t)(g.s[1] * e), (size_t)(g.n[2] * e),
                                       (size_t)(g.n[0] > 1 ? g.s[0] / g.s[1] : g.n[1]));
        m.dstPtr = make_cudaPitchedPtr((char *)dst + (g.doff + f * g.dcount) * e,
                                       (size_t)(g.t[1] * e), (size_t)(g.n[2] * e),
                                       (size_t)(g.n[0] > 1 ? g.t[0] / g.t[1] : g.n[1]));
        m.extent = make_cudaExtent((size_t)(g.n[2] * e), (size_t)g.n[1], (size_t)g.n[0]);
        err = cudaMemcpy3DPeerAsync(&m, stream);
        if (err != cudaSuccess)
            return tide_cuda_fail(err, "store by the copy engine");
    }
    return 0;
}

} // namespace

extern "C" int tide_gpu_copy_region_async(size_t elem, int batch, const tide_box *region,
                                          const void *src, const tide_box *sbox, void *dst,
                                          const tide_box *dbox, void *stream)
{
    tide_copy_geom g;
    if (tide_copy_geometry(region, sbox, dbox, &g) == 0)
        return 0;
    return copy_kernels(g, elem, batch, src, dst, 0, (cudaStream_t)stream);
}

extern "C" int tide_gpu_store_region_async(size_t elem, int batch, const tide_box *region,
                                           const void *src, const tide_box *sbox, void *dst,
                                           const tide_box *dbox, int dst_device, void *stream)
{
    tide_copy_geom g;
    if (tide_copy_geometry(region, sbox, dbox, &g) == 0)
        return 0;
    int st = store_engine() ? copy_by_engine(g, elem, batch, src, dst, dst_device,
                                             (cudaStream_t)stream)
                            : 1;
    return st != 1 ? st : copy_kernels(g, elem, batch, src, dst, store_blocks(),
                                       (cudaStream_t)stream);
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
