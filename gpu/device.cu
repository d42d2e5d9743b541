// device.cu: the GPUs of the process (backend/device.h): counting the usable ones, their
// properties, choosing this rank's and binding near it, the current device, peer access, and
// the thread's last CUDA failure that every gpu/ call records.
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
#include <hwloc.h>
#include <hwloc/cudart.h>
#include "backend/device.h"
#include "gpu/cuda_error.h"

namespace {
thread_local char last_error[256];
} // namespace

int tide_cuda_fail(cudaError_t e, const char *what, int code)
{
    snprintf(last_error, sizeof last_error, "%s: %s (CUDA error %d)", what,
             cudaGetErrorString(e), (int)e);
    cudaGetLastError();
    return code;
}

extern "C" const char *tide_gpu_last_error(void) { return last_error; }

extern "C" int tide_gpu_note_error(const char *call, const char *what, int code)
{
    snprintf(last_error, sizeof last_error, "%s: %s (%d)", call, what, code);
    return TIDE_ERR_BACKEND;
}

// The devices CUDA lists, without opening any context (0 with the reason in why).
static int count_devices(char *why, size_t len)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(why, len, "no usable GPU: %s (CUDA error %d)", cudaGetErrorString(e), (int)e);
        cudaGetLastError();
        return 0;
    }
    if (n == 0)
        snprintf(why, len, "no GPU found");
    return n;
}

// A driver that lists devices but cannot allocate is no usable GPU either. Allocates on the
// current device, opening its context.
static int probe_current(int device, char *why, size_t len)
{
    void *probe = nullptr;
    cudaError_t e = cudaMalloc(&probe, 256);
    if (e != cudaSuccess) {
        snprintf(why, len, "no usable GPU: cudaMalloc on GPU %d failed: %s (CUDA error %d)",
                 device, cudaGetErrorString(e), (int)e);
        cudaGetLastError();
        return TIDE_ERR_BACKEND;
    }
    cudaFree(probe);
    return 0;
}

extern "C" int tide_gpu_count(char *why, size_t len)
{
    int n = count_devices(why, len), cur = 0;
    if (n <= 0)
        return 0;
    cudaGetDevice(&cur);
    if (probe_current(cur, why, len))
        return 0;
    snprintf(why, len, "%d GPU(s) usable", n);
    return n;
}

extern "C" int tide_gpu_properties(int device, tide_gpu_props *props)
{
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, device) != cudaSuccess) {
        cudaGetLastError();
        return TIDE_ERR_BACKEND;
    }
    memset(props, 0, sizeof *props);
    snprintf(props->name, sizeof props->name, "%.127s", p.name);
    props->major = p.major;
    props->minor = p.minor;
    props->total_bytes = p.totalGlobalMem;
    int cur = -1;
    size_t f = 0, t = 0;
    if (cudaGetDevice(&cur) == cudaSuccess && cur == device &&
        cudaMemGetInfo(&f, &t) == cudaSuccess)
        props->free_bytes = f;
    cudaGetLastError();
    cudaDeviceGetPCIBusId(props->pci_bus_id, (int)sizeof props->pci_bus_id, device);
    return 0;
}

extern "C" int tide_gpu_reaches(int device, const char *pci_bus_id)
{
    int other = -1, can = 0;
    if (cudaDeviceGetByPCIBusId(&other, pci_bus_id) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    if (other == device)
        return 1;
    if (cudaDeviceCanAccessPeer(&can, device, other) != cudaSuccess)
        cudaGetLastError(), can = 0;
    return can;
}

// With bind, bind this process to the cores hwloc finds nearest the device (its PCI locality),
// unless it is already bound to part of the machine (mpirun --bind-to ..., taskset, numactl):
// that binding is the launcher's choice and is kept. cpuset receives the binding in force.
// Returns TIDE_BIND_*.
static int bind_near(int device, int bind, char *cpuset, size_t len)
{
    cpuset[0] = '\0';
    if (!bind)
        return TIDE_BIND_NONE;
    int how = TIDE_BIND_NONE;
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo))
        return how;
    hwloc_bitmap_t near = hwloc_bitmap_alloc(), cur = hwloc_bitmap_alloc();
    if (near && cur && hwloc_topology_load(topo) == 0) {
        int located = hwloc_cudart_get_device_cpuset(topo, device, near) == 0 &&
                      !hwloc_bitmap_iszero(near);
        hwloc_const_cpuset_t all = hwloc_topology_get_topology_cpuset(topo);
        if (hwloc_get_cpubind(topo, cur, HWLOC_CPUBIND_PROCESS) == 0 &&
            !hwloc_bitmap_iszero(cur) && !hwloc_bitmap_isincluded(all, cur)) {
            how = located && !hwloc_bitmap_intersects(cur, near) ? TIDE_BIND_KEPT_FAR
                                                                  : TIDE_BIND_KEPT;
            hwloc_bitmap_list_snprintf(cpuset, len, cur);
        } else if (located && hwloc_set_cpubind(topo, near, HWLOC_CPUBIND_PROCESS) == 0) {
            how = TIDE_BIND_NEAR;
            hwloc_bitmap_list_snprintf(cpuset, len, near);
        }
    }
    hwloc_bitmap_free(near);
    hwloc_bitmap_free(cur);
    hwloc_topology_destroy(topo);
    return how;
}

// The device a rank asked for (TIDE_DEVICE_AUTO, _CURRENT or an index) among n; -1 with the
// reason in why when there is none.
static int choose_device(int local_rank, int want, int n, char *why, size_t len)
{
    if (want == TIDE_DEVICE_AUTO)
        return local_rank % n;
    if (want == TIDE_DEVICE_CURRENT) {
        int cur = -1;
        cudaError_t e = cudaGetDevice(&cur);
        if (e == cudaSuccess)
            return cur;
        snprintf(why, len, "cannot tell the current device: %s (CUDA error %d)",
                 cudaGetErrorString(e), (int)e);
        cudaGetLastError();
        return -1;
    }
    if (want >= 0 && want < n)
        return want;
    snprintf(why, len, "device %d does not exist (this node has %d GPU%s)", want, n,
             n == 1 ? "" : "s");
    return -1;
}

extern "C" int tide_gpu_select(int local_rank, int want, int bind, tide_device_info *info,
                               int *binding, char *why, size_t len)
{
    int n = count_devices(why, len);
    if (n <= 0)
        return TIDE_ERR_BACKEND;
    int dev = choose_device(local_rank, want, n, why, len);
    if (dev < 0)
        return want >= 0 ? TIDE_ERR_ARGUMENT : TIDE_ERR_BACKEND;
    // Only now does a context open, and only on the chosen device.
    cudaError_t e = cudaSetDevice(dev);
    if (e != cudaSuccess) {
        snprintf(why, len, "no usable GPU: cannot use GPU %d: %s (CUDA error %d)", dev,
                 cudaGetErrorString(e), (int)e);
        cudaGetLastError();
        return TIDE_ERR_BACKEND;
    }
    if (probe_current(dev, why, len))
        return TIDE_ERR_BACKEND;
    tide_gpu_props p;
    if (tide_gpu_properties(dev, &p)) {
        snprintf(why, len, "no usable GPU: cannot read the properties of GPU %d", dev);
        return TIDE_ERR_BACKEND;
    }
    info->device = dev;
    snprintf(info->name, sizeof info->name, "%s", p.name);
    snprintf(info->pci_bus_id, sizeof info->pci_bus_id, "%s", p.pci_bus_id);
    info->cc_major = p.major;
    info->cc_minor = p.minor;
    info->total_bytes = p.total_bytes;
    info->free_bytes = p.free_bytes;
    info->budget_bytes = 0;
    *binding = bind_near(dev, bind, info->cpuset, sizeof info->cpuset);
    snprintf(why, len, "GPU %d of %d: %s", dev, n, p.name);
    return 0;
}

extern "C" int tide_gpu_device_enter(int device, int *prev)
{
    cudaError_t e = cudaGetDevice(prev);
    if (e == cudaSuccess && *prev != device)
        e = cudaSetDevice(device);
    return e == cudaSuccess ? 0 : tide_cuda_fail(e, "making the context's GPU current");
}

extern "C" void tide_gpu_device_leave(int prev)
{
    int cur = -1;
    if (prev >= 0 && cudaGetDevice(&cur) == cudaSuccess && cur != prev)
        cudaSetDevice(prev);
}

extern "C" int tide_gpu_peer(int device, int peer, int enable)
{
    int can = 0, prev = -1;
    cudaError_t e = cudaDeviceCanAccessPeer(&can, device, peer);
    if (e != cudaSuccess)
        return tide_cuda_fail(e, "cudaDeviceCanAccessPeer");
    if (!can)
        return TIDE_ERR_UNSUPPORTED;
    if (!enable)
        return 0;
    if (tide_gpu_device_enter(device, &prev))
        return TIDE_ERR_BACKEND;
    e = cudaDeviceEnablePeerAccess(peer, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) {
        cudaGetLastError(); // not an error: clear it
        e = cudaSuccess;
    }
    tide_gpu_device_leave(prev);
    return e == cudaSuccess ? 0 : tide_cuda_fail(e, "cudaDeviceEnablePeerAccess");
}
