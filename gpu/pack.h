/*
 * pack.h: element-wise kernels on device arrays (gpu/pack.cu; private, C linkage, no CUDA
 * types): the permuting copy that packs and unpacks exchanges, and scaling.
 */
#ifndef TIDE_GPU_PACK_H
#define TIDE_GPU_PACK_H

#include <stddef.h>
#include "tide.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The permuting copy of comm/region.h on the device: region of every field from src (layout
 * sbox) to dst (layout dbox), both device pointers; elem 4, 8 or 16 bytes. The _async form is
 * enqueued on stream (a cudaStream_t; NULL: the default stream); the plain form synchronizes.
 * Returns 0, TIDE_ERR_ARGUMENT (element size) or TIDE_ERR_BACKEND. */
int tide_gpu_copy_region(size_t elem, int batch, const tide_box *region, const void *src,
                         const tide_box *sbox, void *dst, const tide_box *dbox);
int tide_gpu_copy_region_async(size_t elem, int batch, const tide_box *region, const void *src,
                               const tide_box *sbox, void *dst, const tide_box *dbox,
                               void *stream);
/* The _async copy storing into another GPU's memory (dst mapped from a peer's, on GPU
 * dst_device; src on the current GPU: the direct exchange's stores over NVLink). Where the
 * region's rows are contiguous on both sides (no permutation of the fastest dimension) the
 * copy engine moves it, one 3D copy a field, and no SM is taken from the kernels beside it
 * (TIDE_STORE_ENGINE=0: never); otherwise a kernel on at most TIDE_STORE_BLOCKS blocks
 * (default 2 an SM of this GPU; 0: no limit): the link, not the SMs, sets its rate, and the
 * kernels on other streams keep the SMs it leaves. */
int tide_gpu_store_region_async(size_t elem, int batch, const tide_box *region, const void *src,
                                const tide_box *sbox, void *dst, const tide_box *dbox,
                                int dst_device, void *stream);

/* Multiply count scalars (double when dbl, else float) by s, on stream. */
int tide_gpu_scale(int dbl, void *data, long long count, double s, void *stream);

#ifdef __cplusplus
}
#endif
#endif
