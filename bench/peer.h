/*
 * peer.h: what the one-GPU benchmarks (cufft_peer, fft_passes, poisson_peer) share: the
 * error check, the random input, the synchronized clock, the median of the runs and the
 * relative L2 distance of two device arrays.
 *
 * Define PEER_NAME (the program's name, a string literal) before including it; CK's messages
 * start with it.
 */
#ifndef TIDE_BENCH_PEER_H
#define TIDE_BENCH_PEER_H

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime.h>
#include "tide.h"

#ifndef PEER_NAME
#error "define PEER_NAME before including peer.h"
#endif

/* Inside a function returning int: a nonzero status (CUDA, cuFFT or Tide) prints the call
 * and returns 1. */
#define CK(call)                                                                                \
    do {                                                                                        \
        int e_ = (int)(call);                                                                   \
        if (e_) {                                                                               \
            fprintf(stderr, PEER_NAME ": %s failed (%d) at line %d\n", #call, e_, __LINE__);    \
            return 1;                                                                           \
        }                                                                                       \
    } while (0)

static inline int peer_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sorts the runs' times t[0..runs) and returns their median; t[0] is then the minimum. */
static inline double peer_median(double *t, int runs)
{
    qsort(t, (size_t)runs, sizeof(double), peer_cmp);
    return t[runs / 2];
}

/* Wall-clock seconds after the device has finished all queued work. */
static inline double peer_now(void)
{
    cudaDeviceSynchronize();
    return MPI_Wtime();
}

/* The xorshift64 stream of the peers' inputs; the first seed value. */
#define PEER_SEED 88172645463325252ull

static inline unsigned long long peer_rand(unsigned long long *x)
{
    *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
    return *x;
}

/* Uniform in [-0.5, 0.5): never all zeros. */
static inline double peer_uniform(unsigned long long *x)
{
    return (double)(peer_rand(x) >> 11) / 9007199254740992.0 - 0.5;
}

/* Fills count scalars (float, or double when dbl) of h with peer_uniform values and returns
 * their sum (of the values stored, in double). */
static inline double peer_fill(void *h, size_t count, int dbl, unsigned long long *x)
{
    double sum = 0;
    for (size_t i = 0; i < count; i++) {
        double v = peer_uniform(x);
        if (dbl) {
            ((double *)h)[i] = v;
        } else {
            float f = (float)v;
            ((float *)h)[i] = f;
            v = f;
        }
        sum += v;
    }
    return sum;
}

/* *d: count scalars (float, or double when dbl) of peer_fill's random values from PEER_SEED,
 * in new device memory. Returns 0 or 1 (with the reason on stderr). */
static inline int peer_random_device(void **d, size_t count, int dbl)
{
    size_t bytes = count * (dbl ? 8 : 4);
    char *h = malloc(bytes);
    if (!h)
        return fprintf(stderr, PEER_NAME ": out of memory\n"), 1;
    unsigned long long x = PEER_SEED;
    peer_fill(h, count, dbl, &x);
    int st = cudaMalloc(d, bytes) || cudaMemcpy(*d, h, bytes, cudaMemcpyHostToDevice);
    free(h);
    if (st)
        fprintf(stderr, PEER_NAME ": cannot place %zu bytes of input on the device\n", bytes);
    return st;
}

/* The three device arrays of a complex N^3 bench (n3 points): *pristine the random input
 * (peer_random_device: never zeros), *d the one transformed, *ref an output kept to compare
 * with. Returns 0 or 1 (with the reason on stderr). */
static inline int peer_device_arrays(size_t n3, int dbl, void **pristine, void **d, void **ref)
{
    size_t bytes = n3 * (dbl ? 16 : 8);
    if (peer_random_device(pristine, 2 * n3, dbl))
        return 1;
    if (cudaMalloc(d, bytes) || cudaMalloc(ref, bytes))
        return fprintf(stderr, PEER_NAME ": cannot allocate 2 x %zu bytes on the device\n",
                       bytes), 1;
    return 0;
}

/* Relative L2 distance of two arrays of n scalars (float, or double when dbl) in device
 * memory, on the host (NAN when they cannot be copied). */
static inline double peer_rel_l2(const void *da, const void *db, size_t n, int dbl)
{
    size_t bytes = n * (dbl ? 8 : 4);
    char *a = malloc(bytes), *b = malloc(bytes);
    double num = 0, den = 0;
    if (a && b && cudaMemcpy(a, da, bytes, cudaMemcpyDeviceToHost) == cudaSuccess &&
        cudaMemcpy(b, db, bytes, cudaMemcpyDeviceToHost) == cudaSuccess)
        for (size_t i = 0; i < n; i++) {
            double x = dbl ? ((double *)a)[i] : ((float *)a)[i];
            double y = dbl ? ((double *)b)[i] : ((float *)b)[i];
            num += (x - y) * (x - y);
            den += y * y;
        }
    else
        num = den = NAN;
    free(a);
    free(b);
    return sqrt(num / den);
}

#endif
