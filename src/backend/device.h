/*
 * device.h: the GPUs of the process (private, C linkage, no CUDA types): how many are usable,
 * their properties, choosing and binding near this rank's, the current device, peer access,
 * and the message of the last CUDA failure of any gpu/ call. One of the GPU services the
 * backend layer offers the context and the operations; gpu/device.cu implements it (gpu/none.c
 * in a build without CUDA).
 */
#ifndef TIDE_BACKEND_DEVICE_H
#define TIDE_BACKEND_DEVICE_H

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

/* Number of GPUs this process can use (0 with the reason in why), for tests deciding whether
 * to skip. A GPU counts as usable only when a small allocation on the calling thread's current
 * device succeeds, which is how a machine without a driver shows; that probe opens the current
 * device's CUDA context (device 0 unless cudaSetDevice was called). tide_gpu_select opens
 * none but the chosen device's. */
int tide_gpu_count(char *why, size_t len);
/* Name, memory, compute capability and PCI bus id of a device, without opening its context.
 * free_bytes is filled only when device is the calling thread's current device (cudaMemGetInfo
 * needs it current, and opens its context), else 0. */
int tide_gpu_properties(int device, tide_gpu_props *props);
/* 1 when the GPU of that PCI bus id is device or device may read and write its memory (peer
 * access: NVLink or PCIe), else 0, also when this process cannot see that GPU. */
int tide_gpu_reaches(int device, const char *pci_bus_id);

/* How tide_gpu_select left the process's CPU binding. */
enum {
    TIDE_BIND_NONE = 0, /* not bound (bind 0, or hwloc cannot bind or tell the GPU's cores) */
    TIDE_BIND_NEAR = 1, /* bound by tide_gpu_select to the cores nearest the device */
    TIDE_BIND_KEPT = 2, /* already bound to part of the machine (e.g. by mpirun): left alone */
    TIDE_BIND_KEPT_FAR = 3 /* as KEPT, but none of those cores is near the device */
};

/* Choose this rank's device without opening any other device's context: device is
 * TIDE_DEVICE_AUTO (local_rank % count), TIDE_DEVICE_CURRENT (the calling thread's current
 * device) or an index. Make it current, probe a small allocation on it, fill what
 * tide_device_info says of it except budget_bytes, and, when bind is set and the process is not
 * already bound to part of the machine, bind it to the cores nearest the device (hwloc);
 * info->cpuset then names the binding, Tide's or the one found, and *binding says which
 * (TIDE_BIND_*). Returns 0, TIDE_ERR_BACKEND (no usable GPU) or TIDE_ERR_ARGUMENT (no such
 * device), with the reason in why. */
int tide_gpu_select(int local_rank, int device, int bind, tide_device_info *info, int *binding,
                    char *why, size_t len);

/* Make device current, remembering the current one in *prev; and make prev current again. */
int tide_gpu_device_enter(int device, int *prev);
void tide_gpu_device_leave(int prev);

/* Whether device can read and write peer's memory directly (NVLink or PCIe peer to peer),
 * and with enable, let it from now on, for every thread of the process. Returns 0 (also when
 * already enabled), TIDE_ERR_UNSUPPORTED when the two cannot access each other, or
 * TIDE_ERR_BACKEND. */
int tide_gpu_peer(int device, int peer, int enable);

/* A message for the last CUDA failure seen by the gpu/ calls (thread-local). */
const char *tide_gpu_last_error(void);
/* Record a failure of a CUDA library call for tide_gpu_last_error; returns TIDE_ERR_BACKEND. */
int tide_gpu_note_error(const char *call, const char *what, int code);

#ifdef __cplusplus
}
#endif
#endif
