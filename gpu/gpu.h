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

/* Make device local_rank % count current, fill what tide_device_info says of it, and, when
 * bind is set, bind this process to the cores nearest the device (hwloc). budget: requested
 * bytes (0: free less 1 GiB). Returns 0, TIDE_ERR_BACKEND (no usable GPU) or TIDE_ERR_ARGUMENT
 * (budget larger than the free memory), with the reason in why. */
int tide_gpu_select(int local_rank, size_t budget, int bind, tide_device_info *info, char *why,
                    size_t len);

/* Device rates of tide_rates (h2d, d2h, both, d2d) with arrays of `bytes`, on the current
 * device. Returns 0 or TIDE_ERR_BACKEND / TIDE_ERR_NOMEM with the reason in why. */
int tide_gpu_measure(size_t bytes, tide_rates *rates, char *why, size_t len);

/* Pinned host memory (cudaHostAlloc) and its release. Return 0 or TIDE_ERR_NOMEM. */
int tide_gpu_host_alloc(size_t bytes, void **ptr);
int tide_gpu_host_free(void *ptr);

/* NCCL's version code, 0 when this build has no NCCL. */
int tide_nccl_version(void);

/* The permuting copy of comm/region.h on the device: region of every field from src (layout
 * sbox) to dst (layout dbox), both device pointers; elem 4, 8 or 16 bytes. Synchronous.
 * Returns 0 or TIDE_ERR_BACKEND. */
int tide_gpu_copy_region(size_t elem, int batch, const tide_box *region, const void *src,
                         const tide_box *sbox, void *dst, const tide_box *dbox);

#ifdef __cplusplus
}
#endif
#endif
