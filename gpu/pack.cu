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
// grid's x runs along it, y and z over the two outer loops; no index division anywhere. The
// general form, for geometries the two below do not take.
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

constexpr int ROW_THREADS = 256, ROW_UNROLL = 4;

// Rows contiguous on both sides (loop 2 has stride 1 in the source and the destination): the
// geometry's strides and n[2] here count vectors V (up to 16 bytes, as the rows' alignment
// allows), each thread loads ROW_UNROLL of them before it stores any, so that enough loads are
// in flight to keep HBM busy with few, long-lived blocks.
template <typename V>
__global__ void __launch_bounds__(ROW_THREADS)
rows_kernel(tide_copy_geom g, const V *__restrict__ src, V *__restrict__ dst)
{
    const int64_t step = (int64_t)gridDim.x * ROW_THREADS * ROW_UNROLL;
    for (int64_t i0 = blockIdx.z; i0 < g.n[0]; i0 += gridDim.z)
        for (int64_t i1 = blockIdx.y; i1 < g.n[1]; i1 += gridDim.y) {
            const V *s = src + i0 * g.s[0] + i1 * g.s[1];
            V *t = dst + i0 * g.t[0] + i1 * g.t[1];
            for (int64_t b = blockIdx.x * (int64_t)ROW_THREADS * ROW_UNROLL + threadIdx.x;
                 b < g.n[2]; b += step) {
                V v[ROW_UNROLL];
#pragma unroll
                for (int k = 0; k < ROW_UNROLL; k++)
                    if (b + k * ROW_THREADS < g.n[2])
                        v[k] = s[b + k * ROW_THREADS];
#pragma unroll
                for (int k = 0; k < ROW_UNROLL; k++)
                    if (b + k * ROW_THREADS < g.n[2])
                        t[b + k * ROW_THREADS] = v[k];
            }
        }
}

constexpr int TILE = 32, TILE_ROWS = 8;

// The source's fastest dimension is loop 0 (s[0] == 1), the destination's loop 2: a tile of
// TILE x TILE elements is read along loop 0 and written along loop 2 through shared memory, so
// both sides coalesce; the general form reads one sector a thread there, which neighbouring
// blocks do not share (bench/region_copy "xz": 0.21-0.38 of the device's copy, tiles 0.86-0.94).
// Where the source's fastest is loop 1 the general form stays: its neighbouring blocks along
// loop 1 read the rest of each sector from the L2 ("yz": 0.48-0.72). The row pitch TILE + 1
// puts a tile's column in distinct banks for 4-, 8- and 16-byte elements. Loop 1 runs over
// blockIdx.z.
template <typename T>
__global__ void __launch_bounds__(TILE * TILE_ROWS)
transpose_kernel(tide_copy_geom g, const T *__restrict__ src, T *__restrict__ dst)
{
    __shared__ T tile[TILE][TILE + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int64_t n0 = g.n[0], n2 = g.n[2];
    for (int64_t i1 = blockIdx.z; i1 < g.n[1]; i1 += gridDim.z)
        for (int64_t j0 = blockIdx.y * (int64_t)TILE; j0 < n0; j0 += gridDim.y * (int64_t)TILE)
            for (int64_t j2 = blockIdx.x * (int64_t)TILE; j2 < n2;
                 j2 += gridDim.x * (int64_t)TILE) {
                const T *s = src + i1 * g.s[1] + j0 + j2 * g.s[2];
                T *t = dst + i1 * g.t[1] + j0 * g.t[0] + j2;
#pragma unroll
                for (int r = 0; r < TILE; r += TILE_ROWS) /* a known count: all loads in flight */
                    if (j0 + tx < n0 && j2 + ty + r < n2)
                        tile[ty + r][tx] = s[tx + (ty + r) * g.s[2]];
                __syncthreads();
#pragma unroll
                for (int r = 0; r < TILE; r += TILE_ROWS)
                    if (j0 + ty + r < n0 && j2 + tx < n2)
                        t[(ty + r) * g.t[0] + tx] = tile[tx][ty + r];
                __syncthreads();
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

// A grid of bx x by x bz blocks within CUDA's limits, and (most > 0) of at most `most` blocks:
// x keeps what it asks for first, then y, then z (the kernels' loops stride over the rest).
dim3 grid_of(int64_t bx, int64_t by, int64_t bz, int64_t most)
{
    bx = std::min<int64_t>(bx, 1 << 20);
    by = std::min<int64_t>(by, 65535), bz = std::min<int64_t>(bz, 65535);
    if (most > 0) {
        bx = std::min(bx, most);
        by = std::min(by, std::max<int64_t>(1, most / bx));
        bz = std::min(bz, std::max<int64_t>(1, most / (bx * by)));
    }
    return dim3((unsigned)bx, (unsigned)by, (unsigned)bz);
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Rows of n[2] points contiguous on both sides (s[2] == t[2] == 1) that follow each other on
// both sides merge into one: a slice a row, longer rows, fewer of them.
tide_copy_geom merge_rows(tide_copy_geom g)
{
    if (g.s[1] == g.n[2] && g.t[1] == g.n[2])
        g.n[2] *= g.n[1], g.n[1] = g.n[0], g.s[1] = g.s[0], g.t[1] = g.t[0], g.n[0] = 1;
    return g;
}

// Elements of type T: tiles through shared memory where the source's fastest dimension is loop
// 0 of g (the destination's slowest), the general form otherwise.
template <typename T>
cudaError_t launch(const tide_copy_geom &g, const char *src, char *dst, int64_t most,
                   cudaStream_t stream)
{
    if (g.t[2] == 1 && g.s[0] == 1 && g.n[0] > 1) {
        dim3 grid = grid_of(ceil_div(g.n[2], TILE), ceil_div(g.n[0], TILE), g.n[1], most);
        transpose_kernel<T><<<grid, dim3(TILE, TILE_ROWS), 0, stream>>>(g, (const T *)src,
                                                                    (T *)dst);
    } else {
        const int threads = 256;
        copy_kernel<T><<<grid_of(std::min<int64_t>(ceil_div(g.n[2], threads), 1024), g.n[1],
                                 g.n[0], most),
                         threads, 0, stream>>>(g, (const T *)src, (T *)dst);
    }
    return cudaGetLastError();
}

// Rows contiguous on both sides (s[2] == t[2] == 1, merged), moved in vectors of V: g's
// counts and strides along the rows rescaled from elements of elem bytes to vectors.
template <typename V>
cudaError_t launch_rows(tide_copy_geom g, size_t elem, const char *src, char *dst, int64_t most,
                        cudaStream_t stream)
{
    const int64_t e = (int64_t)elem, v = (int64_t)sizeof(V);
    g.n[2] = g.n[2] * e / v;
    for (int k = 0; k < 2; k++)
        g.s[k] = g.s[k] * e / v, g.t[k] = g.t[k] * e / v;
    dim3 grid = grid_of(ceil_div(g.n[2], ROW_THREADS * ROW_UNROLL), g.n[1], g.n[0], most);
    rows_kernel<V><<<grid, ROW_THREADS, 0, stream>>>(g, (const V *)src, (V *)dst);
    return cudaGetLastError();
}

// The widest vector (16, 8 or 4 bytes; 0: none) that the rows' starts and lengths are whole
// multiples of, on both sides: the strides of loops of one iteration (merged away) move
// nothing, so they do not count.
int row_vector(const tide_copy_geom &g, size_t elem, const char *src, const char *dst)
{
    const int64_t e = (int64_t)elem;
    uint64_t all = (uint64_t)(uintptr_t)src | (uint64_t)(uintptr_t)dst | (uint64_t)(g.n[2] * e);
    for (int k = 0; k < 2; k++)
        if (g.n[k] > 1)
            all |= (uint64_t)(g.s[k] * e) | (uint64_t)(g.t[k] * e);
    return all % 16 == 0 ? 16 : all % 8 == 0 ? 8 : all % 4 == 0 ? 4 : 0;
}

// The copy of geometry g (tide_copy_geometry) of every field by the kernels. Rows contiguous
// on both sides go in vectors wider than the element where the rows' alignment allows
// (bench/region_copy "kept", 8-byte elements: 0.78 of the device's copy element by element,
// 0.96-0.98 in 16-byte vectors); 16-byte elements are whole vectors already (0.99-1.00).
int copy_kernels(const tide_copy_geom &g0, size_t elem, int batch, const void *src, void *dst,
                 int64_t most, cudaStream_t st)
{
    const bool rows = g0.s[2] == 1 && g0.t[2] == 1;
    const tide_copy_geom g = rows ? merge_rows(merge_rows(g0)) : g0;
    if (elem != 4 && elem != 8 && elem != 16)
        return TIDE_ERR_ARGUMENT;
    for (int f = 0; f < batch; f++) {
        const char *s = (const char *)src + (g.soff + f * g.scount) * (int64_t)elem;
        char *t = (char *)dst + (g.doff + f * g.dcount) * (int64_t)elem;
        cudaError_t e;
        int v = rows ? row_vector(g, elem, s, t) : 0;
        switch (v > (int)elem ? v : 0) {
        case 16: e = launch_rows<uint4>(g, elem, s, t, most, st); break;
        case 8: e = launch_rows<uint2>(g, elem, s, t, most, st); break;
        default:
            e = elem == 4   ? launch<uint32_t>(g, s, t, most, st)
                : elem == 8 ? launch<uint64_t>(g, s, t, most, st)
                            : launch<uint4>(g, s, t, most, st);
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
    if (g0.s[2] != 1 || g0.t[2] != 1)
        return 1;
    tide_copy_geom g = merge_rows(g0);
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
