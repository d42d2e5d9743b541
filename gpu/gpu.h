/*
 * gpu.h: what src/ may ask of the CUDA side (private; C linkage, no CUDA types).
 */
#ifndef TIDE_GPU_H
#define TIDE_GPU_H

#include <stddef.h>
#include "tide.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    char name[128];
    size_t total_bytes, free_bytes;
    int major, minor;         /* compute capability */
    char pci_bus_id[32];
} tide_gpu_props;

/* Number of GPUs this process can use (0 with the reason in why). A GPU counts as usable only
 * when a small allocation on it succeeds, which is how a machine without a driver shows. */
int tide_gpu_count(char *why, size_t len);
int tide_gpu_properties(int device, tide_gpu_props *props);

/* The permuting copy of comm/region.h on the device: region of every field from src (layout
 * sbox) to dst (layout dbox), both device pointers; elem 4, 8 or 16 bytes. Synchronous.
 * Returns 0 or TIDE_ERR_BACKEND. */
int tide_gpu_copy_region(size_t elem, int batch, const tide_box *region, const void *src,
                         const tide_box *sbox, void *dst, const tide_box *dbox);

#ifdef __cplusplus
}
#endif
#endif
