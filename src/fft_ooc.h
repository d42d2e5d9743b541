/*
 * fft_ooc.h: 3D C2C and R2C FFTs of host arrays larger than the device budget, streamed
 * through the GPU in chunks (private; see fft_ooc.c). Slabs in C order: every rank's input
 * box is its x-slab (tide_box_slab along dimension 0), its output box the x-slab too or,
 * transposed, its y-slab (along dimension 1), of the complex grid for r2c (n[2] / 2 + 1 along
 * z); P <= n[0] and P <= n[1].
 */
#ifndef TIDE_FFT_OOC_H
#define TIDE_FFT_OOC_H

#include <stddef.h>
#include "tide_internal.h"

typedef struct tide_ooc tide_ooc;

/* Local: chunk sizes for the budget (bytes of device memory), cuFFT plans, the pipeline,
 * pinned work memory, for the ranks of ctx. nccl: the context's tide_nccl, or NULL (one rank,
 * or several exchanging over MPI in host memory). Returns 0 or a code with the reason in
 * err. */
int tide_ooc_create(const tide_context *ctx, const int n[3], int dbl, int r2c, int batch,
                    int transposed, void *nccl, size_t budget, tide_ooc **out, char *err,
                    size_t len);
void tide_ooc_destroy(tide_ooc *o);
/* Chunks per pass (the larger pass), slots, device and pinned bytes held. */
void tide_ooc_shape(const tide_ooc *o, int *chunks, int *slots, size_t *device_bytes,
                    size_t *pinned_bytes);
/* Collective: sign -1 forward (in: x-slab, out: the output slab) or +1 backward (in: the
 * output slab, out: x-slab), output scaled by scale; batch fields, field f at f * count(box)
 * elements on each side. in == out is allowed. Returns 0 or a code
 * with the reason in err; after a local failure it still takes part in every exchange. */
int tide_ooc_execute(tide_ooc *o, int sign, double scale, const void *in, void *out, char *err,
                     size_t len);

#endif
