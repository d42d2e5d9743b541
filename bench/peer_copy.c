/*
 * peer_copy.c: the rate at which one GPU stores into another's memory over NVLink by the copy
 * engine, one direction and both at once, with each direction's bytes cut over 1, 2 or 4
 * streams (copies on streams of their own may go to copy engines of their own). The question
 * it answers: whether the direct stores of the exchanges (comm/direct.c, one stream a rank)
 * leave link rate unused.
 *
 *   peer_copy [MIB [RUNS]]      (MIB: a direction's source array, default 1024; the median of
 *                                RUNS after a warm-up, default 9)
 *
 * Shapes: "linear" (the whole array, contiguous), "4MiB-runs" (runs of 4 MiB one in two: the
 * half of each 8 MiB plane a two-rank slab exchange of 1024^3 complex float sends), "8KiB-rows"
 * (rows of 8 KiB one in two). Rates are the bytes moved a direction over the wall time (both
 * GPUs synchronized on both sides), in GB/s. Every destination is compared with its source
 * after the last run; a difference fails the program. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cuda_runtime.h>

#define CK(x)                                                                                   \
    do {                                                                                        \
        cudaError_t e_ = (x);                                                                   \
        if (e_ != cudaSuccess) {                                                                \
            fprintf(stderr, "peer_copy: %s: %s\n", #x, cudaGetErrorString(e_));                \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)

enum { MAXS = 4 };

typedef struct {
    char *src, *dst;  /* on this GPU; dst receives the other GPU's stores */
    cudaStream_t s[MAXS];
} gpu;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Copy `bytes` in runs of `run` bytes one in two (run == bytes: linear) from g[from].src to
 * g[to].dst, split over `ns` streams of GPU `from`. */
static void enqueue(gpu *g, int from, int to, size_t bytes, size_t run, int ns)
{
    size_t rows = run == bytes ? (size_t)ns : bytes / (2 * run);
    size_t per = (rows + ns - 1) / ns, piece = bytes / (size_t)ns;
    CK(cudaSetDevice(from));
    for (int k = 0; k < ns; k++) {
        size_t r0 = k * per, r1 = r0 + per < rows ? r0 + per : rows;
        if (run == bytes)
            CK(cudaMemcpyPeerAsync(g[to].dst + k * piece, to, g[from].src + k * piece, from,
                                   piece, g[from].s[k]));
        else if (r1 > r0)
            CK(cudaMemcpy2DAsync(g[to].dst + r0 * 2 * run, 2 * run, g[from].src + r0 * 2 * run,
                                 2 * run, run, r1 - r0, cudaMemcpyDefault, g[from].s[k]));
    }
}

static void sync_both(void)
{
    for (int d = 0; d < 2; d++) {
        CK(cudaSetDevice(d));
        CK(cudaDeviceSynchronize());
    }
}

static double run_case(gpu *g, int both, size_t bytes, size_t run, int ns, int runs)
{
    double t[64];
    for (int i = 0; i <= runs; i++) {
        sync_both();
        double t0 = now();
        enqueue(g, 0, 1, bytes, run, ns);
        if (both)
            enqueue(g, 1, 0, bytes, run, ns);
        sync_both();
        if (i) /* the first run warms up */
            t[i - 1] = now() - t0;
    }
    qsort(t, (size_t)runs, sizeof *t, cmp);
    return (run == bytes ? bytes : bytes / 2) / t[runs / 2] * 1e-9;
}

static int check(gpu *g, int both, size_t bytes, size_t run)
{
    size_t n = run == bytes ? bytes : bytes / 2;
    char *a = malloc(n), *b = malloc(n);
    int bad = 0;
    for (int d = 0; d < (both ? 2 : 1) && a && b; d++) {
        size_t step = run == bytes ? bytes : 2 * run, len = run == bytes ? bytes : run;
        for (size_t o = 0, k = 0; o < bytes; o += step, k += len) {
            CK(cudaMemcpy(a + k, g[d].src + o, len, cudaMemcpyDefault));
            CK(cudaMemcpy(b + k, g[1 - d].dst + o, len, cudaMemcpyDefault));
        }
        bad |= memcmp(a, b, n) != 0;
    }
    free(a), free(b);
    return bad || !a || !b;
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 1024;
    int runs = argc > 2 ? atoi(argv[2]) : 9, n = 0;
    runs = runs < 1 ? 1 : runs > 64 ? 64 : runs;
    if (cudaGetDeviceCount(&n) != cudaSuccess)
        n = 0;
    if (n < 2) {
        printf("peer_copy: %d GPU(s): needs two\n", n);
        return 0;
    }
    int ok = 0;
    CK(cudaDeviceCanAccessPeer(&ok, 0, 1));
    if (!ok) {
        printf("peer_copy: GPUs 0 and 1 cannot reach each other\n");
        return 0;
    }
    size_t bytes = mib << 20;
    gpu g[2];
    for (int d = 0; d < 2; d++) {
        CK(cudaSetDevice(d));
        CK(cudaDeviceEnablePeerAccess(1 - d, 0));
        CK(cudaMalloc((void **)&g[d].src, bytes));
        CK(cudaMalloc((void **)&g[d].dst, bytes));
        unsigned *h = malloc(bytes);
        for (size_t i = 0; h && i < bytes / 4; i++)
            h[i] = (unsigned)(i * 2654435761u + d);
        CK(cudaMemcpy(g[d].src, h, bytes, cudaMemcpyHostToDevice));
        CK(cudaMemset(g[d].dst, 0, bytes));
        free(h);
        for (int k = 0; k < MAXS; k++)
            CK(cudaStreamCreateWithFlags(&g[d].s[k], cudaStreamNonBlocking));
    }
    printf("peer_copy: %zu MiB a direction, median of %d, GB/s a direction\n", mib, runs);
    printf("%-10s %-5s %8s %8s %8s\n", "shape", "dir", "1 str", "2 str", "4 str");
    const struct { const char *name; size_t run; } shapes[] = {
        {"linear", bytes}, {"4MiB-runs", 4u << 20}, {"8KiB-rows", 8u << 10}};
    int bad = 0;
    for (int s = 0; s < 3; s++)
        for (int both = 0; both < 2; both++) {
            printf("%-10s %-5s", shapes[s].name, both ? "both" : "one");
            for (int ns = 1; ns <= MAXS; ns *= 2)
                printf(" %8.1f", run_case(g, both, bytes, shapes[s].run, ns, runs));
            int b = check(g, both, bytes, shapes[s].run);
            printf("%s\n", b ? "  FAIL: destination differs" : "");
            bad |= b;
        }
    return bad;
}
