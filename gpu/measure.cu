// measure.cu: the transfer rates of GPUs (backend/measure.h): one GPU's copies each way, both
// ways at once and within the device, timed with events; several GPUs copying at once.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include "backend/measure.h"

namespace {

// Median of 5 timings (ms) of fn() recorded between two events on stream s, after a warm-up;
// align (when given) is called before each repetition, once the previous one is done.
template <typename F> float median_ms(cudaStream_t s, int (*align)(void *, int), void *arg, F fn)
{
    constexpr int reps = 5;
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    float t[reps];
    fn();
    cudaStreamSynchronize(s);
    for (int i = 0; i < reps; i++) {
        if (align)
            align(arg, 1);
        cudaEventRecord(a, s);
        fn();
        cudaEventRecord(b, s);
        cudaEventSynchronize(b);
        cudaEventElapsedTime(&t[i], a, b);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    std::sort(t, t + reps);
    return t[reps / 2];
}

// What a rate measurement copies between on one GPU (the current one when made): two pinned
// host buffers (portable), two device buffers and two streams of `bytes`, the host buffers
// filled with a pattern (never measure on zeros).
struct Buffers {
    void *h[2] = {nullptr, nullptr}, *d[2] = {nullptr, nullptr};
    cudaStream_t s[2] = {nullptr, nullptr};
    bool make(size_t bytes)
    {
        for (int k = 0; k < 2; k++)
            if (cudaHostAlloc(&h[k], bytes, cudaHostAllocPortable) != cudaSuccess ||
                cudaMalloc(&d[k], bytes) != cudaSuccess ||
                cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking) != cudaSuccess)
                return false;
        memset(h[0], 0x5a, bytes);
        memset(h[1], 0xa5, bytes);
        return true;
    }
    // On the GPU they were made on.
    void release()
    {
        for (int k = 0; k < 2; k++) {
            if (s[k])
                cudaStreamDestroy(s[k]);
            cudaFree(d[k]);
            cudaFreeHost(h[k]);
        }
    }
};

} // namespace

extern "C" int tide_gpu_measure(size_t bytes, int (*align)(void *, int), void *arg,
                                tide_rates *r, char *why, size_t len)
{
    Buffers x;
    int st = 0;
    if (!x.make(bytes)) {
        snprintf(why, len, "cannot allocate 2 x %zu bytes pinned and on the device: %s", bytes,
                 cudaGetErrorString(cudaGetLastError()));
        st = TIDE_ERR_NOMEM;
    }
    if (align && !align(arg, st == 0) && !st) {
        snprintf(why, len, "another rank could not allocate its arrays");
        st = TIDE_ERR_NOMEM;
    }
    void *h0 = x.h[0], *h1 = x.h[1], *d0 = x.d[0], *d1 = x.d[1];
    cudaStream_t s0 = x.s[0], s1 = x.s[1];
    if (!st) {
        cudaMemcpy(d0, h0, bytes, cudaMemcpyHostToDevice);
        cudaMemcpy(d1, h1, bytes, cudaMemcpyHostToDevice);
        double gb = (double)bytes / 1e9;
        float t = median_ms(s0, align, arg, [&] {
            cudaMemcpyAsync(d0, h0, bytes, cudaMemcpyHostToDevice, s0);
        });
        r->h2d = gb / (t * 1e-3);
        t = median_ms(s0, align, arg, [&] {
            cudaMemcpyAsync(h1, d1, bytes, cudaMemcpyDeviceToHost, s0);
        });
        r->d2h = gb / (t * 1e-3);
        // Both directions: the second stream joins the first through events.
        cudaEvent_t fork, join;
        cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
        cudaEventCreateWithFlags(&join, cudaEventDisableTiming);
        t = median_ms(s0, align, arg, [&] {
            cudaEventRecord(fork, s0);
            cudaStreamWaitEvent(s1, fork, 0);
            cudaMemcpyAsync(d0, h0, bytes, cudaMemcpyHostToDevice, s0);
            cudaMemcpyAsync(h1, d1, bytes, cudaMemcpyDeviceToHost, s1);
            cudaEventRecord(join, s1);
            cudaStreamWaitEvent(s0, join, 0);
        });
        r->both = 2 * gb / (t * 1e-3);
        cudaEventDestroy(fork);
        cudaEventDestroy(join);
        t = median_ms(s0, align, arg, [&] {
            cudaMemcpyAsync(d1, d0, bytes, cudaMemcpyDeviceToDevice, s0);
        });
        r->d2d = 2 * gb / (t * 1e-3);
        cudaError_t e = cudaDeviceSynchronize();
        if (e == cudaSuccess)
            e = cudaGetLastError();
        if (e != cudaSuccess) {
            snprintf(why, len, "measuring rates failed: %s", cudaGetErrorString(e));
            st = TIDE_ERR_BACKEND;
        }
    }
    x.release();
    return st;
}

extern "C" int tide_gpu_measure_gpus(const int *devices, int n, size_t bytes, tide_rates *r,
                                     char *why, size_t len)
{
    std::vector<Buffers> g((size_t)n);
    int prev = -1, st = 0;
    cudaGetDevice(&prev);
    for (int i = 0; i < n && !st; i++) {
        if (cudaSetDevice(devices[i]) != cudaSuccess || !g[(size_t)i].make(bytes)) {
            snprintf(why, len, "GPU %d: cannot allocate 2 x %zu bytes pinned and on the device: "
                     "%s", devices[i], bytes, cudaGetErrorString(cudaGetLastError()));
            st = TIDE_ERR_NOMEM;
        }
    }
    // Seconds of the fastest of three repetitions after a warm-up, every GPU copying at once:
    // up (host to device), down, or both directions on two streams.
    auto time_all = [&](bool up, bool down) {
        double best = 1e30;
        for (int rep = 0; rep < 4; rep++) {
            auto t0 = std::chrono::steady_clock::now();
            for (Buffers &x : g) {
                if (up)
                    cudaMemcpyAsync(x.d[0], x.h[0], bytes, cudaMemcpyHostToDevice, x.s[0]);
                if (down)
                    cudaMemcpyAsync(x.h[1], x.d[1], bytes, cudaMemcpyDeviceToHost, x.s[1]);
            }
            for (Buffers &x : g)
                for (cudaStream_t s : x.s)
                    cudaStreamSynchronize(s);
            double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                           .count();
            if (rep)
                best = std::min(best, t);
        }
        return best;
    };
    if (!st) {
        double gb = (double)bytes * n / 1e9;
        r->h2d = gb / time_all(true, false);
        r->d2h = gb / time_all(false, true);
        r->both = 2 * gb / time_all(true, true);
        r->d2d = r->host_copy = 0;
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess) {
            snprintf(why, len, "measuring the GPUs' rates together failed: %s",
                     cudaGetErrorString(e));
            st = TIDE_ERR_BACKEND;
        }
    }
    for (int i = 0; i < n; i++) {
        cudaSetDevice(devices[i]);
        g[(size_t)i].release();
    }
    if (prev >= 0)
        cudaSetDevice(prev);
    return st;
}

