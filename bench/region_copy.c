/*
 * region_copy.c: the rate of the device's permuting copy (gpu/pack.h), which packs, unpacks and
 * keeps the points of every exchange on the GPU, against the device's own copy of the same
 * bytes (cudaMemcpyAsync, device to device) in the same run.
 *
 *   region_copy [N [RUNS]]      (N: the grid's edge, default 1024; the median of RUNS after a
 *                                warm-up, default 9)
 *
 * Cases, each the part of one chunk (an eighth) of a two-rank slab exchange of an N^3 complex
 * grid (N / 16 planes of x): "kept" the half of each plane a rank keeps, rows contiguous on
 * both sides (its landing); "yz" the same points into the layout with y fastest; "xz" with x
 * fastest (the exchanges that permute as they pack, a tile through shared memory). Elements
 * of 8 bytes (complex float) and 16 (complex double). Rates count each byte read and written
 * (GB/s); the bound is the device copy of the same bytes. Each destination is compared with
 * the CPU's copy of the same region (comm/region.h) after the last run; a difference fails the
 * program.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#define PEER_NAME "region_copy"
#include "peer.h"
#include "comm/region.h"
#include "gpu/pack.h"

static tide_box box(int x1, int y1, int z1, int o0, int o1, int o2)
{
    tide_box b = {{0, 0, 0}, {x1, y1, z1}, {o0, o1, o2}};
    return b;
}

/* One case: the median time of RUNS copies, the device copy's, and the check. */
static int run_case(const char *name, size_t elem, const tide_box *sb, const tide_box *db,
                    const tide_box *region, int runs)
{
    size_t sn = (size_t)tide_box_count(sb) * elem, dn = (size_t)tide_box_count(db) * elem;
    size_t bytes = (size_t)tide_box_count(region) * elem;
    unsigned char *hs = malloc(sn), *hd = malloc(dn), *hg = malloc(dn);
    double *t = malloc(2 * (size_t)runs * sizeof *t);
    void *ds = NULL, *dd = NULL;
    if (!hs || !hd || !hg || !t)
        return fprintf(stderr, "region_copy: out of memory\n"), 1;
    unsigned long long x = PEER_SEED;
    for (size_t i = 0; i < sn; i++)
        hs[i] = (unsigned char)peer_rand(&x);
    memset(hd, 0, dn);
    tide_copy_region(elem, 1, region, hs, sb, hd, db, 1);
    CK(cudaMalloc(&ds, sn));
    CK(cudaMalloc(&dd, dn));
    CK(cudaMemcpy(ds, hs, sn, cudaMemcpyHostToDevice));
    CK(cudaMemset(dd, 0, dn));
    for (int r = -1; r < runs; r++) {
        double t0 = peer_now();
        CK(tide_gpu_copy_region_async(elem, 1, region, ds, sb, dd, db, NULL));
        double t1 = peer_now();
        CK(cudaMemcpyAsync(dd, ds, bytes, cudaMemcpyDeviceToDevice, NULL));
        double t2 = peer_now();
        if (r >= 0)
            t[r] = t1 - t0, t[runs + r] = t2 - t1;
    }
    CK(cudaMemset(dd, 0, dn));
    CK(tide_gpu_copy_region_async(elem, 1, region, ds, sb, dd, db, NULL));
    CK(cudaMemcpy(hg, dd, dn, cudaMemcpyDeviceToHost));
    int bad = memcmp(hg, hd, dn) != 0;
    double ours = peer_median(t, runs), dev = peer_median(t + runs, runs);
    printf("%-5s %2zu B %8.1f MB %8.3f ms %7.0f GB/s   device copy %7.0f GB/s   ratio %.3f%s\n",
           name, elem, bytes / 1e6, 1e3 * ours, 2 * bytes / ours / 1e9, 2 * bytes / dev / 1e9,
           dev / ours, bad ? "   WRONG" : "");
    cudaFree(ds);
    cudaFree(dd);
    free(hs), free(hd), free(hg), free(t);
    return bad;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int n = argc > 1 ? atoi(argv[1]) : 1024, runs = argc > 2 ? atoi(argv[2]) : 9;
    if (n < 16 || runs < 1) {
        fprintf(stderr, "usage: region_copy [N >= 16 [RUNS >= 1]]\n");
        MPI_Finalize();
        return 2;
    }
    int planes = n / 16, half = n / 2, bad = 0;
    printf("region_copy: %d planes of %d x %d, the kept half of each and its permutations\n",
           planes, n, n);
    for (size_t elem = 8; elem <= 16; elem *= 2) {
        tide_box src = box(planes, n, n, 0, 1, 2), kept = box(planes, half, n, 0, 1, 2);
        tide_box yz = box(planes, half, n, 0, 2, 1), xz = box(planes, half, n, 2, 1, 0);
        bad += run_case("kept", elem, &src, &kept, &kept, runs);
        bad += run_case("yz", elem, &kept, &yz, &kept, runs);
        bad += run_case("xz", elem, &kept, &xz, &kept, runs);
    }
    MPI_Finalize();
    return bad != 0;
}
