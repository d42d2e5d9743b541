// complex.cuh: complex arithmetic on CUDA's float2 and double2 (x the real part, y the
// imaginary), shared by the in-card FFT kernels (gpu/fft_plane.cu, gpu/poisson.cu).
#ifndef TIDE_GPU_COMPLEX_CUH
#define TIDE_GPU_COMPLEX_CUH
#include <cuda_runtime.h>

namespace tide_complex {
template <class T> __device__ __forceinline__ T add(T a, T b) { return {a.x + b.x, a.y + b.y}; }
template <class T> __device__ __forceinline__ T sub(T a, T b) { return {a.x - b.x, a.y - b.y}; }
template <class T> __device__ __forceinline__ T mul(T a, T b)
{
    return {a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x};
}
} // namespace tide_complex

#endif
