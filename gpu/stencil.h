/*
 * stencil.h: the stencil sweeps of the CUDA backend (gpu/stencil.cu and the kernels it
 * launches; private, C linkage, no CUDA types).
 */
#ifndef TIDE_GPU_STENCIL_H
#define TIDE_GPU_STENCIL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* backend.h's tide_sweep: create prepares s for sweeps of up to fuse steps (0: as many as the
 * kernels can fuse for its radius and precision) with the taps in device memory (s->state) and
 * sets s->max_fuse; a fuse beyond the kernels' limit is TIDE_ERR_ARGUMENT with the limit in
 * err. sweep enqueues one sweep of steps (1 .. s->max_fuse) from src into dst on stream (a
 * cudaStream_t): one step by the one-step kernel, several by a temporal-blocked one. destroy
 * frees s->state (NULL accepted). */
struct tide_sweep;
int tide_gpu_sweep_create(struct tide_sweep *s, int fuse, char *err, size_t len);
int tide_gpu_sweep(const struct tide_sweep *s, const void *src, void *dst, int steps,
                   void *stream);
void tide_gpu_sweep_destroy(struct tide_sweep *s);

#ifdef __cplusplus
}
#endif
#endif
