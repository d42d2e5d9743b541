/*
 * band.h: the band matrix passes of the CUDA backend (gpu/band.cu; private, C linkage, no
 * CUDA types).
 */
#ifndef TIDE_GPU_BAND_H
#define TIDE_GPU_BAND_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* backend.h's tide_band_pass: create checks that passes of `steps` steps fit the kernel's
 * shared memory (0: the kernel's choice) and sets b->max_steps; more than fit is
 * TIDE_ERR_ARGUMENT with the limit in err. It reads b's dbl, kl and ku alone and holds no
 * memory. band enqueues one pass of steps (1 .. b->max_steps) from src into dst on stream (a
 * cudaStream_t). */
struct tide_band_pass;
int tide_gpu_band_create(struct tide_band_pass *b, int steps, char *err, size_t len);
int tide_gpu_band(const struct tide_band_pass *b, const void *src, void *dst, int steps,
                  void *stream);

#ifdef __cplusplus
}
#endif
#endif
