/*
 * test_gpu.c: the GPU pieces, checked against the CPU ones. Exits 77 (reported SKIP by meson)
 * where the build has no CUDA or no GPU is usable, saying why, so CI shows it as skipped.
 *
 * Checks: device discovery; the device permuting copy (gpu/) against the CPU copy
 * (comm/region.c, itself checked against naive loops in test_region) for every pair of storage
 * orders, element sizes 4, 8 and 16, batches 1 and 2, odd sizes; the CUDA context (device,
 * budget, binding) and the measured rates.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tide_config.h"
#include "region.h"

#if !TIDE_HAVE_CUDA
int main(void)
{
    printf("SKIP: this build has no CUDA (gpu/ not compiled)\n");
    return 77;
}
#else
#include <cuda_runtime.h>
#include "common.h"
#include "gpu.h"
#include "tide.h"

static const int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};

static tide_box mk(int x0, int x1, int y0, int y1, int z0, int z1, const int *order)
{
    tide_box b = {{x0, y0, z0}, {x1, y1, z1}, {order[0], order[1], order[2]}};
    return b;
}

int main(void)
{
    int n = tt_gpus_or_skip();
    if (n == 0)
        return 77;
    tide_gpu_props props;
    if (tide_gpu_properties(0, &props) || props.total_bytes == 0 || !props.name[0]) {
        printf("FAIL: tide_gpu_properties\n");
        return 1;
    }
    printf("%d GPU(s); GPU 0: %s, %.1f GiB, sm_%d%d\n", n, props.name,
           props.total_bytes / 1073741824.0, props.major, props.minor);
    int checks = 0, failed = 0;
    const size_t elems[3] = {4, 8, 16};
    for (int e = 0; e < 3; e++)
        for (int batch = 1; batch <= 2; batch++)
            for (int so = 0; so < 6; so++)
                for (int dor = 0; dor < 6; dor++) {
                    size_t elem = elems[e];
                    tide_box sb = mk(0, 37, 3, 14, 1, 45, perms[so]);
                    tide_box db = mk(5, 41, 2, 13, 0, 29, perms[dor]);
                    tide_box region = mk(5, 37, 3, 13, 1, 29, perms[0]);
                    size_t sn = (size_t)tide_box_count(&sb) * batch * elem;
                    size_t dn = (size_t)tide_box_count(&db) * batch * elem;
                    unsigned char *hs = malloc(sn), *hd = malloc(dn), *hg = malloc(dn);
                    void *ds = NULL, *dd = NULL;
                    for (size_t i = 0; i < sn; i++)
                        hs[i] = (unsigned char)(i * 2654435761u >> 13);
                    memset(hd, 0xab, dn);
                    tide_copy_region(elem, batch, &region, hs, &sb, hd, &db, 1);
                    int ok = cudaMalloc(&ds, sn) == cudaSuccess && cudaMalloc(&dd, dn) == cudaSuccess &&
                             cudaMemcpy(ds, hs, sn, cudaMemcpyHostToDevice) == cudaSuccess &&
                             cudaMemset(dd, 0xab, dn) == cudaSuccess &&
                             tide_gpu_copy_region(elem, batch, &region, ds, &sb, dd, &db) == 0 &&
                             cudaMemcpy(hg, dd, dn, cudaMemcpyDeviceToHost) == cudaSuccess &&
                             memcmp(hg, hd, dn) == 0;
                    checks++;
                    if (!ok) {
                        failed++;
                        printf("FAIL: device copy elem %zu batch %d src order %d%d%d dst order "
                               "%d%d%d\n", elem, batch, perms[so][0], perms[so][1], perms[so][2],
                               perms[dor][0], perms[dor][1], perms[dor][2]);
                    }
                    cudaFree(ds);
                    cudaFree(dd);
                    free(hs);
                    free(hd);
                    free(hg);
                }
    /* The context on a GPU machine: every rank on a device, a budget within the free memory,
     * bound near the GPU where hwloc knows its locality, and rates that are plausible. */
    MPI_Init(NULL, NULL);
    tide_context *ctx = NULL;
    tide_context_options co;
    tide_context_options_init(&co);
    co.backend = TIDE_BACKEND_CUDA;
    int st = tide_context_create(MPI_COMM_WORLD, &co, &ctx);
    checks++;
    if (st) {
        failed++;
        printf("FAIL: cuda context: %s\n", tide_last_error(NULL));
    } else {
        tide_device_info d;
        tide_rates r;
        tide_context_device(ctx, &d);
        printf("context: GPU %d %s, %s, budget %.1f GiB of %.1f free, bound to cpus '%s', "
               "CUDA-aware MPI %d, NCCL %d\n", d.device, d.name, d.pci_bus_id,
               d.budget_bytes / 1073741824.0, d.free_bytes / 1073741824.0, d.cpuset,
               d.cuda_aware_mpi, d.nccl_version);
        int ok = d.device >= 0 && d.device < n && d.name[0] && d.budget_bytes > 0 &&
                 d.budget_bytes <= d.free_bytes && d.free_bytes <= d.total_bytes;
        checks++;
        if (!ok) {
            failed++;
            printf("FAIL: device info\n");
        }
        st = tide_measure_rates(ctx, (size_t)64 << 20, &r);
        printf("rates (GB/s): host copy %.1f, h2d %.1f, d2h %.1f, both %.1f, device copy %.0f\n",
               r.host_copy, r.h2d, r.d2h, r.both, r.d2d);
        /* Loose bounds: PCIe 3 x16 moves over 5 GB/s, HBM copies over 200 GB/s. */
        ok = !st && r.h2d > 5 && r.d2h > 5 && r.both > r.h2d * 0.9 && r.d2d > 200 &&
             r.host_copy > 0.5;
        checks++;
        if (!ok) {
            failed++;
            printf("FAIL: rates implausible or failed: %s\n", st ? tide_last_error(ctx) : "");
        }
        /* tide_host_alloc on a CUDA context gives pinned, zeroed memory. */
        void *h = NULL;
        struct cudaPointerAttributes pa;
        st = tide_host_alloc(ctx, (size_t)8 << 20, &h);
        ok = !st && h && cudaPointerGetAttributes(&pa, h) == cudaSuccess &&
             pa.type == cudaMemoryTypeHost && ((unsigned char *)h)[12345] == 0;
        checks++;
        if (!ok) {
            failed++;
            printf("FAIL: tide_host_alloc did not give pinned zeroed memory\n");
        }
        if (tide_host_free(ctx, h)) {
            failed++;
            printf("FAIL: tide_host_free\n");
        }
        /* A budget the GPU cannot give is an error, not a silent fallback. */
        tide_context *c2 = NULL;
        co.device_budget = d.total_bytes + 1;
        st = tide_context_create(MPI_COMM_WORLD, &co, &c2);
        checks++;
        if (st != TIDE_ERR_ARGUMENT || c2) {
            failed++;
            printf("FAIL: oversized budget gave status %d\n", st);
        }
        tide_context_destroy(ctx);
    }
    MPI_Finalize();
    printf("test_gpu: %d checks, %d failed\n", checks, failed);
    return failed ? 1 : 0;
}
#endif
