// band.cu: the band matrix pass of the CUDA backend (backend.h: tide_band_pass). One kernel
// does all the steps of a pass: each block owns a tile of TILE out rows, loads the rows its
// tile needs at step 0 (the tile grown by s kl above and s ku below) into shared memory, and
// runs the s steps between two shared buffers, each step on a range that shrinks by kl and
// ku (temporal blocking, the CPU's scheme), so x is read once and written once per pass. A
// thread computes a row: acc = 0, then one __fma_rn per term in increasing column order,
// tide.h's arithmetic, which the CPU's fma() matches bit for bit.
#include <cstdio>
#include <cuda_runtime.h>
#include "backend/backend.h"
#include "gpu/band.h"
#include "gpu/cuda_error.h"

namespace {

constexpr int TILE = 1024;          // out rows per block
constexpr int THREADS = 256;
constexpr size_t SHARED = 48 << 10; // bytes of shared memory a block may take without opting in
constexpr int CHOICE = 8;           // the kernel's choice of steps per pass, where they fit

__device__ inline double fma_rn(double a, double b, double c) { return __fma_rn(a, b, c); }
__device__ inline float fma_rn(float a, float b, float c) { return __fmaf_rn(a, b, c); }

// Rows a block's buffers hold at most, for elements of elem bytes.
int width_max(size_t elem) { return (int)(SHARED / (2 * elem)); }

// The most steps a pass fits in shared memory.
int fit(const tide_band_pass *b)
{
    size_t elem = b->dbl ? sizeof(double) : sizeof(float);
    int spread = b->kl + b->ku;
    return spread ? (width_max(elem) - TILE) / spread : TIDE_BAND_MAX_STEPS;
}

template <typename T>
__global__ void band_pass(const T *__restrict__ src, T *__restrict__ dst,
                          const T *__restrict__ diag, int rows, int kl, int ku, int out_lo,
                          int out_hi, int s)
{
    extern __shared__ __align__(16) unsigned char raw[];
    int a = out_lo + blockIdx.x * TILE, z = min(a + TILE, out_hi);
    int base = max(0, a - s * kl), top = min(rows, z + s * ku);
    T *u = reinterpret_cast<T *>(raw), *v = u + (top - base);
    for (int i = base + threadIdx.x; i < top; i += blockDim.x)
        u[i - base] = src[i];
    __syncthreads();
    for (int t = 1; t <= s; t++) {
        int lo = max(0, a - (s - t) * kl), hi = min(rows, z + (s - t) * ku);
        for (int i = lo + threadIdx.x; i < hi; i += blockDim.x) {
            int j0 = max(0, i - kl), j1 = min(rows - 1, i + ku);
            T acc = 0;
            for (int j = j0; j <= j1; j++)
                acc = fma_rn(diag[(size_t)(j - i + kl) * rows + i], u[j - base], acc);
            if (t == s)
                dst[i] = acc;
            else
                v[i - base] = acc;
        }
        __syncthreads();
        T *w = u;
        u = v, v = w;
    }
}

template <typename T>
cudaError_t launch(const tide_band_pass *b, const void *src, void *dst, int s,
                   cudaStream_t stream)
{
    int span = b->out_hi - b->out_lo;
    if (span <= 0)
        return cudaSuccess;
    unsigned tiles = (unsigned)((span + TILE - 1) / TILE);
    size_t shared = 2 * sizeof(T) * ((size_t)TILE + (size_t)s * (b->kl + b->ku));
    band_pass<T><<<tiles, THREADS, shared, stream>>>(
        static_cast<const T *>(src), static_cast<T *>(dst), static_cast<const T *>(b->diag),
        b->rows, b->kl, b->ku, b->out_lo, b->out_hi, s);
    return cudaGetLastError();
}

} // namespace

extern "C" int tide_gpu_band_create(tide_band_pass *b, int steps, char *err, size_t len)
{
    int most = fit(b);
    if (most < 1 || steps > most) {
        snprintf(err, len, "the GPU's band kernel fits at most %d steps per pass with kl %d and "
                 "ku %d in %s, not %d", most, b->kl, b->ku, b->dbl ? "double" : "float", steps);
        return TIDE_ERR_ARGUMENT;
    }
    b->max_steps = steps ? steps : (most < CHOICE ? most : CHOICE);
    b->state = nullptr;
    b->state_bytes = 0;
    return 0;
}

extern "C" int tide_gpu_band(const tide_band_pass *b, const void *src, void *dst, int steps,
                             void *stream)
{
    if (steps < 1 || steps > b->max_steps)
        return TIDE_ERR_ARGUMENT;
    cudaStream_t cs = static_cast<cudaStream_t>(stream);
    cudaError_t e = b->dbl ? launch<double>(b, src, dst, steps, cs)
                           : launch<float>(b, src, dst, steps, cs);
    return e == cudaSuccess ? 0 : tide_cuda_fail(e, "band kernel");
}
