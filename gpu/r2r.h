/*
 * r2r.h: real-to-real transforms (cosine and sine) along one dimension on the GPU, which cuFFT
 * lacks (gpu/r2r.cu; private, C linkage, no CUDA types).
 */
#ifndef TIDE_GPU_R2R_H
#define TIDE_GPU_R2R_H

#include <stddef.h>
#include "tide.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A real-to-real transform (tide_r2r_kind: kind 1..6, FFTW's REDFT/RODFT scaling) along
 * dimension dim of box, from an array laid out as sarr into one laid out as darr (the same
 * array allowed: in place), batch fields, on real elements or on both parts of complex ones,
 * by one batched cuFFT transform between pre- and post-processing kernels. Needs work_bytes of
 * work area (the processed lines and cuFFT's), attached with the stream (a cudaStream_t) by
 * bind. */
typedef struct tide_gpu_r2r tide_gpu_r2r;
int tide_gpu_r2r_create(int dbl, int kind, int dim, const tide_box *box, const tide_box *sarr,
                        const tide_box *darr, int batch, int complex_elems, tide_gpu_r2r **out,
                        size_t *work_bytes, char *why, size_t len);
int tide_gpu_r2r_bind(tide_gpu_r2r *r, void *work, void *stream);
int tide_gpu_r2r_execute(const tide_gpu_r2r *r, const void *src, void *dst, void *stream);
void tide_gpu_r2r_destroy(tide_gpu_r2r *r);

#ifdef __cplusplus
}
#endif
#endif
