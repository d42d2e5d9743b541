/*
 * measure.h: the transfer rates of GPUs, measured (private, C linkage, no CUDA types), which
 * plans bound their times with and size their chunks by. One of the GPU services the backend
 * layer offers; gpu/measure.cu implements it (gpu/none.c in a build without CUDA).
 */
#ifndef TIDE_BACKEND_MEASURE_H
#define TIDE_BACKEND_MEASURE_H

#include <stddef.h>
#include "tide.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Device rates of tide_rates (h2d, d2h, both, d2d) with arrays of `bytes`, on the current
 * device. align, when given, makes the measurement collective: align(arg, ok) is called once
 * after the allocations with whether they succeeded and must return whether they did on every
 * rank, then align(arg, 1) before every timed repetition (a barrier), the same number of times
 * on every rank. Returns 0 or TIDE_ERR_BACKEND / TIDE_ERR_NOMEM with the reason in why. */
int tide_gpu_measure(size_t bytes, int (*align)(void *arg, int ok), void *arg,
                     tide_rates *rates, char *why, size_t len);

/* PCIe rates of n GPUs (of this process) copying at once, summed over them (h2d, d2h, both;
 * d2d and host_copy 0), with arrays of `bytes` per GPU: what host memory gives them together,
 * which may be less than the sum of their rates alone. The current device is kept. Returns 0,
 * TIDE_ERR_NOMEM or TIDE_ERR_BACKEND with the reason in why. */
int tide_gpu_measure_gpus(const int *devices, int n, size_t bytes, tide_rates *rates, char *why,
                          size_t len);

#ifdef __cplusplus
}
#endif
#endif
