/*
 * poisson.h: the spectral operator of a Poisson solve on the GPU (gpu/poisson.cu; private, C
 * linkage, no CUDA types): the eigenvalue scaling, or the tridiagonal solves along a line.
 */
#ifndef TIDE_GPU_POISSON_H
#define TIDE_GPU_POISSON_H

#ifdef __cplusplus
extern "C" {
#endif

/* backend.h's tide_spectral on data laid out as d->box, enqueued on stream (a cudaStream_t);
 * d's tables, origin and scratch in device memory. */
struct tide_spectral;
int tide_gpu_spectral(const struct tide_spectral *d, void *data, void *stream);
/* Whether tide_gpu_spectral transforms a periodic line of n points itself (line_fft): n a
 * power of two from 8 to 2048 (the line's columns in shared memory), float or double data. */
int tide_gpu_line_fft_ok(int n, int dbl);

#ifdef __cplusplus
}
#endif
#endif
