/*
 * gemm.h: matrix multiplies of device matrices with cuBLAS (gpu/gemm.cu; private, C linkage, no
 * CUDA types).
 */
#ifndef TIDE_GPU_GEMM_H
#define TIDE_GPU_GEMM_H

#ifdef __cplusplus
extern "C" {
#endif

/* A handle, and one multiply (backend.h's tide_gemm_desc and tide_scalar) of device matrices
 * enqueued on stream (a cudaStream_t). */
struct tide_gemm_desc;
struct tide_scalar;
int tide_gpu_gemm_create(void **handle);
int tide_gpu_gemm(void *handle, const struct tide_gemm_desc *d, const struct tide_scalar *alpha,
                  const void *a, const void *b, const struct tide_scalar *beta, void *c,
                  void *stream);
void tide_gpu_gemm_destroy(void *handle);

#ifdef __cplusplus
}
#endif
#endif
