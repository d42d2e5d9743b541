/*
 * test_gpu.c: the GPU pieces, checked against the CPU ones. Exits 77 (reported SKIP by meson)
 * where the build has no CUDA or no GPU is usable, saying why, so CI shows it as skipped.
 * Runs on one rank and on several (then ranks share GPUs where there are fewer GPUs).
 *
 * Checks: device discovery; the device permuting copy (gpu/) against the CPU copy
 * (comm/region.c, itself checked against naive loops in test_region) for every pair of storage
 * orders, element sizes 4, 8 and 16, batches 1 and 2, odd sizes; the CUDA context: the device
 * option (AUTO, CURRENT, an index, an index that does not exist failing on every rank), the
 * default budget split between the ranks sharing a GPU, the measured rates, pinned host memory,
 * an oversized budget failing, NCCL's asynchronous error check; a device array misaligned for
 * its elements refused by an FFT on every rank.
 * Two checks need what a machine may lack and run alone, by an argument, exiting 77 where they
 * cannot run: several-gpus, that a context on device 1 opens no CUDA context on device 0 (one
 * GPU, or device 0's context open before any context is made: SKIP); binding, that a binding
 * made before the context is kept (hwloc cannot bind the process: SKIP).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tide_config.h"
#include "comm/region.h"

#if !TIDE_HAVE_CUDA
int main(void)
{
    printf("SKIP: this build has no CUDA (gpu/ not compiled)\n");
    return 77;
}
#else
#include <dlfcn.h>
#include <hwloc.h>
#include <cuda_runtime.h>
#include "common.h"
#include "backend/device.h"
#include "gpu/nccl.h"
#include "gpu/pack.h"
#include "tide.h"
#include "core/core.h"

static const int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
static int rank, nranks;

static tide_box mk(int x0, int x1, int y0, int y1, int z0, int z1, const int *order)
{
    tide_box b = {{x0, y0, z0}, {x1, y1, z1}, {order[0], order[1], order[2]}};
    return b;
}

/* Whether the primary CUDA context of device dev is open in this process: 1, 0, or -1 when
 * the driver cannot tell. Asked of the driver API (cuDevicePrimaryCtxGetState), looked up at
 * run time so that the test needs no libcuda when it is linked. */
static int primary_context_open(int dev)
{
    typedef int (*get_fn)(int *device, int ordinal);
    typedef int (*state_fn)(int device, unsigned *flags, int *active);
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    get_fn get = NULL;
    state_fn state = NULL;
    if (!lib)
        return -1;
    *(void **)&get = dlsym(lib, "cuDeviceGet");
    *(void **)&state = dlsym(lib, "cuDevicePrimaryCtxGetState");
    int d = 0, active = 0;
    unsigned flags = 0;
    int ok = get && state && get(&d, dev) == 0 && state(d, &flags, &active) == 0;
    dlclose(lib);
    return ok ? active != 0 : -1;
}

/* Whether the device's copy of region (batch fields of elem bytes) from layout sb to db writes
 * what the CPU's does, every point of the destination compared. */
static int copy_matches(size_t elem, int batch, const tide_box *sb, const tide_box *db,
                        const tide_box *region)
{
    size_t sn = (size_t)tide_box_count(sb) * batch * elem;
    size_t dn = (size_t)tide_box_count(db) * batch * elem;
    unsigned char *hs = malloc(sn), *hd = malloc(dn), *hg = malloc(dn);
    void *ds = NULL, *dd = NULL;
    int ok = hs && hd && hg;
    for (size_t i = 0; ok && i < sn; i++)
        hs[i] = (unsigned char)(i * 2654435761u >> 13);
    if (ok) {
        memset(hd, 0xab, dn);
        tide_copy_region(elem, batch, region, hs, sb, hd, db, 1);
    }
    ok = ok && cudaMalloc(&ds, sn) == cudaSuccess && cudaMalloc(&dd, dn) == cudaSuccess &&
         cudaMemcpy(ds, hs, sn, cudaMemcpyHostToDevice) == cudaSuccess &&
         cudaMemset(dd, 0xab, dn) == cudaSuccess &&
         tide_gpu_copy_region(elem, batch, region, ds, sb, dd, db) == 0 &&
         cudaMemcpy(hg, dd, dn, cudaMemcpyDeviceToHost) == cudaSuccess &&
         memcmp(hg, hd, dn) == 0;
    cudaFree(ds);
    cudaFree(dd);
    free(hs);
    free(hd);
    free(hg);
    return ok;
}

/* The device permuting copy against the CPU one, every order of both layouts, elements of 4,
 * 8 and 16 bytes, one and two fields; returns the number of failures (local). Geometries
 * (source box, destination box, region: x, y, z ranges): a region inside both boxes, extents
 * below one tile of the transposing form; one of several tiles with partial ones at every
 * edge; and whole planes of both boxes (in one order, rows that merge into one). */
static int check_copies(int *checks)
{
    int failed = 0;
    const size_t elems[3] = {4, 8, 16};
    const int geo[3][3][6] = {
        {{0, 37, 3, 14, 1, 45}, {5, 41, 2, 13, 0, 29}, {5, 37, 3, 13, 1, 29}},
        {{0, 70, 3, 40, 1, 45}, {5, 71, 2, 41, 0, 47}, {5, 70, 3, 40, 1, 45}},
        {{0, 9, 0, 33, 0, 65}, {2, 7, 0, 33, 0, 65}, {2, 7, 0, 33, 0, 65}}};
    enum { NGEO = 3, NELEM = 3, NBATCH = 2, NORD = 6 }; /* the case index's digits, slowest first */
    for (int c = 0; c < NGEO * NELEM * NBATCH * NORD * NORD; c++) {
        int dor = c % NORD, so = c / NORD % NORD, batch = 1 + c / (NORD * NORD) % NBATCH,
            e = c / (NORD * NORD * NBATCH) % NELEM, gi = c / (NORD * NORD * NBATCH * NELEM);
        const int *a = geo[gi][0], *b = geo[gi][1], *r = geo[gi][2];
        tide_box sb = mk(a[0], a[1], a[2], a[3], a[4], a[5], perms[so]);
        tide_box db = mk(b[0], b[1], b[2], b[3], b[4], b[5], perms[dor]);
        tide_box region = mk(r[0], r[1], r[2], r[3], r[4], r[5], perms[0]);
        (*checks)++;
        if (!copy_matches(elems[e], batch, &sb, &db, &region)) {
            failed++;
            printf("FAIL: rank %d: device copy geometry %d elem %zu batch %d src order %d%d%d "
                   "dst order %d%d%d\n", rank, gi, elems[e], batch, perms[so][0], perms[so][1],
                   perms[so][2], perms[dor][0], perms[dor][1], perms[dor][2]);
        }
    }
    return failed;
}

/* A CUDA context with the given device option (default options otherwise); NULL when it
 * failed, with the status in *st. */
static tide_context *cuda_context(int device, size_t budget, int *st)
{
    tide_context *ctx = NULL;
    tide_context_options co;
    tide_context_options_init(&co);
    co.backend = TIDE_BACKEND_CUDA;
    co.device = device;
    co.device_budget = budget;
    *st = tide_context_create(MPI_COMM_WORLD, &co, &ctx);
    return *st ? NULL : ctx;
}

/* With several GPUs: a context on device 1 opens no context on device 0. Run before anything
 * else touches device 0 (main made device 1 current before the first CUDA call). Returns 0
 * after a SKIP line where it cannot run, else 1. */
static int check_device_1_alone(tt_tally *t, int n)
{
    if (n < 2) {
        if (rank == 0)
            printf("SKIP: one GPU: no device 1 to make a context on\n");
        return 0;
    }
    int before = primary_context_open(0);
    if (!tt_all(MPI_COMM_WORLD, before == 0)) {
        if (rank == 0)
            printf("SKIP: device 0's context was open before any context was made (state %d on "
                   "rank 0; the MPI library?)\n", before);
        return 0;
    }
    int st;
    tide_context *ctx = cuda_context(1, 0, &st);
    tide_device_info d = {.device = -1};
    if (ctx)
        tide_context_device(ctx, &d);
    tt_check(t, MPI_COMM_WORLD, ctx && d.device == 1, "device 1: status %d, device %d: %s", st,
             d.device, ctx ? "" : tide_last_error(NULL));
    int after = primary_context_open(0);
    tt_check(t, MPI_COMM_WORLD, after == 0, "a context on device 1 opened device 0's context "
             "(state %d on rank %d)", after, rank);
    tide_context_destroy(ctx);
    return 1;
}

/* The default context (device AUTO): the device local_rank % n, a budget within the free
 * memory, rates that are plausible, pinned host memory, an oversized budget failing. */
static void check_default_context(tt_tally *t, int n, int local_rank)
{
    int st;
    tide_context *ctx = cuda_context(TIDE_DEVICE_AUTO, 0, &st);
    if (!tt_check(t, MPI_COMM_WORLD, ctx != NULL, "cuda context: %s", tide_last_error(NULL)))
        return;
    tide_device_info d;
    tide_rates r = {0, 0, 0, 0, 0};
    tide_context_device(ctx, &d);
    printf("rank %d: GPU %d %s, %s, budget %.2f GiB of %.1f free, bound to cpus '%s', "
           "CUDA-aware MPI %d, NCCL %d\n", rank, d.device, d.name, d.pci_bus_id,
           d.budget_bytes / 1073741824.0, d.free_bytes / 1073741824.0, d.cpuset,
           d.cuda_aware_mpi, d.nccl_version);
    fflush(stdout);
    tt_check(t, MPI_COMM_WORLD,
             d.device == local_rank % n && d.name[0] && d.budget_bytes > 0 &&
                 d.budget_bytes <= d.free_bytes && d.free_bytes <= d.total_bytes,
             "device info (rank %d: device %d, budget %zu, free %zu)", rank, d.device,
             d.budget_bytes, d.free_bytes);
    st = tide_measure_rates(ctx, (size_t)64 << 20, &r);
    printf("rank %d: rates (GB/s): host copy %.1f, h2d %.1f, d2h %.1f, both %.1f, device copy "
           "%.0f\n", rank, r.host_copy, r.h2d, r.d2h, r.both, r.d2d);
    /* Loose bounds: PCIe 3 x16 moves over 5 GB/s, HBM copies over 200 GB/s (ranks sharing a
     * GPU measure one after another or together, so only one rank's figures are held to it). */
    int alone = nranks == 1;
    tt_check(t, MPI_COMM_WORLD,
             !st && (!alone || (r.h2d > 5 && r.d2h > 5 && r.both > r.h2d * 0.9 && r.d2d > 200)) &&
                 r.host_copy > 0.5,
             "rates implausible or failed: %s", st ? tide_last_error(ctx) : "");
    /* tide_host_alloc on a CUDA context gives pinned, zeroed memory. */
    void *h = NULL;
    struct cudaPointerAttributes pa;
    st = tide_host_alloc(ctx, (size_t)8 << 20, &h);
    tt_check(t, MPI_COMM_WORLD,
             !st && h && cudaPointerGetAttributes(&pa, h) == cudaSuccess &&
                 pa.type == cudaMemoryTypeHost && ((unsigned char *)h)[12345] == 0,
             "tide_host_alloc did not give pinned zeroed memory");
    tt_check(t, MPI_COMM_WORLD, tide_host_free(ctx, h) == 0, "tide_host_free");
    /* NCCL's asynchronous error check: nothing to report on a healthy communicator. */
    void *nccl = NULL;
    st = tide_context_nccl(ctx, 0, &nccl);
    if (st == 0)
        tt_check(t, MPI_COMM_WORLD, tide_nccl_check(nccl) == 0 && tide_nccl_check(NULL) == 0,
                 "tide_nccl_check on a healthy communicator: %s", tide_gpu_last_error());
    else if (rank == 0)
        printf("(no NCCL communicator: %s; tide_nccl_check not exercised)\n",
               tide_last_error(ctx));
    tide_context_destroy(ctx);
    /* A budget the GPU cannot give is an error on every rank, not a silent fallback. */
    ctx = cuda_context(TIDE_DEVICE_AUTO, rank == nranks - 1 ? d.total_bytes + 1 : 0, &st);
    tt_check(t, MPI_COMM_WORLD, st == TIDE_ERR_ARGUMENT && !ctx,
             "oversized budget on rank %d gave status %d", nranks - 1, st);
    tide_context_destroy(ctx);
}

/* TIDE_DEVICE_CURRENT, an index, and an index that does not exist. */
static void check_device_option(tt_tally *t, int n)
{
    int st, want = n - 1 - rank % n;
    tide_device_info d = {.device = -1};
    cudaSetDevice(want);
    tide_context *ctx = cuda_context(TIDE_DEVICE_CURRENT, 0, &st);
    if (ctx)
        tide_context_device(ctx, &d);
    tt_check(t, MPI_COMM_WORLD, ctx && d.device == want, "TIDE_DEVICE_CURRENT after "
             "cudaSetDevice(%d) on rank %d: status %d, device %d", want, rank, st, d.device);
    tide_context_destroy(ctx);

    want = (rank + 1) % n;
    d.device = -1;
    ctx = cuda_context(want, 0, &st);
    if (ctx)
        tide_context_device(ctx, &d);
    int current = -1;
    cudaGetDevice(&current);
    tt_check(t, MPI_COMM_WORLD, ctx && d.device == want && current == want,
             "device %d on rank %d: status %d, device %d, current %d", want, rank, st, d.device,
             current);
    tide_context_destroy(ctx);

    /* Only the last rank asks for a device that does not exist; every rank fails alike. */
    ctx = cuda_context(rank == nranks - 1 ? n + 3 : TIDE_DEVICE_AUTO, 0, &st);
    char expect[96];
    snprintf(expect, sizeof expect, "rank %d: device %d does not exist", nranks - 1, n + 3);
    const char *msg = tide_last_error(NULL);
    tt_check(t, MPI_COMM_WORLD, st == TIDE_ERR_ARGUMENT && !ctx && strstr(msg, expect),
             "device %d on rank %d: status %d, message '%s'", n + 3, nranks - 1, st, msg);
    tide_context_destroy(ctx);
    if (rank == 0)
        printf("out-of-range device: %s\n", msg);
}

/* The default budget of ranks sharing one GPU: (free - 1 GiB) / sharers each, the same for
 * all of them. Every rank of the node on device 0, then AUTO (shared when ranks outnumber
 * GPUs). */
static void check_budget_split(tt_tally *t, MPI_Comm node, int n, int local_rank)
{
    int local_size;
    MPI_Comm_size(node, &local_size);
    for (int pass = 0; pass < 2; pass++) {
        int st, dev = pass == 0 ? 0 : local_rank % n;
        int sharers = pass == 0 ? local_size : (local_size - 1 - dev) / n + 1;
        tide_context *ctx = cuda_context(pass == 0 ? 0 : TIDE_DEVICE_AUTO, 0, &st);
        tide_device_info d = {.device = -1};
        if (ctx)
            tide_context_device(ctx, &d);
        /* the sharers' budgets and free memory, over the ranks of the node on this device */
        MPI_Comm same;
        MPI_Comm_split(node, dev, local_rank, &same);
        unsigned long long mine[3] = {d.budget_bytes, ~(unsigned long long)d.budget_bytes,
                                      d.free_bytes}, most[3];
        MPI_Allreduce(mine, most, 3, MPI_UNSIGNED_LONG_LONG, MPI_MAX, same);
        MPI_Comm_free(&same);
        const double gib = 1073741824.0;
        double expect = ((double)d.free_bytes - gib) / sharers;
        int ok = ctx && d.device == dev && most[0] == ~most[1] && expect > 0 &&
                 d.budget_bytes <= expect * 1.001 && d.budget_bytes >= expect * 0.95;
        if (rank == 0)
            printf("budget on GPU %d shared by %d rank(s): %.2f GiB each of %.2f GiB free\n", dev,
                   sharers, d.budget_bytes / gib, d.free_bytes / gib);
        tt_check(t, MPI_COMM_WORLD, ok, "budget split (rank %d, device %d, %d sharers): status "
                 "%d, budget %zu, expected about %.0f, sharers' budgets differ: %d", rank, dev,
                 sharers, st, d.budget_bytes, expect, most[0] != ~most[1]);
        tide_context_destroy(ctx);
    }
}

/* A process bound to one core before the context is made stays bound there, and the context
 * reports that binding. The original binding is restored afterwards. Returns 0 after a SKIP
 * line where hwloc cannot bind the process, else 1. */
static int check_binding_kept(tt_tally *t, int local_rank)
{
    hwloc_topology_t topo;
    hwloc_topology_init(&topo);
    hwloc_topology_load(topo);
    hwloc_bitmap_t old = hwloc_bitmap_alloc(), one = hwloc_bitmap_alloc(),
                   now = hwloc_bitmap_alloc();
    int npu = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    hwloc_obj_t pu = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, (unsigned)(local_rank % npu));
    int ok = pu && hwloc_get_cpubind(topo, old, HWLOC_CPUBIND_PROCESS) == 0;
    if (ok) {
        hwloc_bitmap_copy(one, pu->cpuset);
        ok = hwloc_set_cpubind(topo, one, HWLOC_CPUBIND_PROCESS) == 0;
    }
    int all = tt_all(MPI_COMM_WORLD, ok);
    if (!all) {
        if (rank == 0)
            printf("SKIP: hwloc cannot bind this process to one core here\n");
    } else {
        char want[128];
        hwloc_bitmap_list_snprintf(want, sizeof want, one);
        int st;
        tide_context *ctx = cuda_context(TIDE_DEVICE_AUTO, 0, &st);
        tide_device_info d = {.device = -1};
        if (ctx)
            tide_context_device(ctx, &d);
        hwloc_get_cpubind(topo, now, HWLOC_CPUBIND_PROCESS);
        tt_check(t, MPI_COMM_WORLD,
                 ctx && !strcmp(d.cpuset, want) && hwloc_bitmap_isequal(now, one),
                 "pre-bound to cpu %s, rank %d reports '%s' (status %d) and is bound to %s",
                 want, rank, d.cpuset, st, hwloc_bitmap_isequal(now, one) ? "it" : "others");
        tide_context_destroy(ctx);
    }
    if (ok) /* bound here, whether or not every rank could be */
        hwloc_set_cpubind(topo, old, HWLOC_CPUBIND_PROCESS);
    hwloc_bitmap_free(old);
    hwloc_bitmap_free(one);
    hwloc_bitmap_free(now);
    hwloc_topology_destroy(topo);
    return all;
}

/* One rank's call of a device c2c double plan with a device array 8 bytes past a 16-byte
 * boundary (legal C for complex double, but not for cuFFT's and the copy kernels' 16-byte
 * loads): TIDE_ERR_ARGUMENT on every rank, naming the rank, the side and the alignment. */
static void expect_misaligned(tt_tally *t, tide_context *ctx, int st, int bad, const char *side)
{
    const char *msg = tide_last_error(ctx);
    char who[32];
    snprintf(who, sizeof who, "rank %d: ", bad);
    tt_check(t, MPI_COMM_WORLD,
             st == TIDE_ERR_ARGUMENT && strstr(msg, who) && strstr(msg, side) &&
                 strstr(msg, "not aligned to 16 bytes"),
             "misaligned device %s array on rank %d: status %d (want %d), message '%s'", side,
             bad, st, TIDE_ERR_ARGUMENT, msg);
    if (rank == 0)
        printf("misaligned device %s array: %s\n", side, msg);
}

/* Device arrays misaligned for their elements are refused before any kernel runs, on every
 * rank (the input on the last rank, then the output on rank 0); the aligned arrays then still
 * work, so nothing faulted on the GPU. On the 8x6x5 grid every rank (up to 6) holds data on
 * both sides, so every array is checked. */
static void check_misaligned_device(tt_tally *t)
{
    int st;
    tide_context *ctx = cuda_context(TIDE_DEVICE_AUTO, 0, &st);
    if (!tt_check(t, MPI_COMM_WORLD, ctx != NULL, "cuda context: %s", tide_last_error(NULL)))
        return;
    const int n[3] = {8, 6, 5};
    tide_fft_options o;
    tide_fft_options_init(&o); /* c2c double */
    o.location = TIDE_LOCATION_DEVICE;
    tide_fft_plan *plan = NULL;
    tide_fft_info info = {0};
    char *din = NULL, *dout = NULL;
    st = tide_fft_plan_create(ctx, n, NULL, NULL, &o, &plan);
    if (!st)
        st = tide_fft_plan_info(plan, &info);
    size_t bytes = info.inplace_bytes + 16;
    if (!st)
        st = tide_device_alloc(ctx, bytes, (void **)&din);
    if (!st)
        st = tide_device_alloc(ctx, bytes, (void **)&dout);
    if (!st)
        st = cudaMemset(din, 0, bytes) == cudaSuccess ? 0 : TIDE_ERR_BACKEND;
    if (tt_check(t, MPI_COMM_WORLD, st == 0, "device c2c plan and arrays: %s",
                 tide_last_error(ctx))) {
        int last = nranks - 1;
        st = tide_fft_forward(plan, rank == last ? din + 8 : din, dout);
        expect_misaligned(t, ctx, st, last, "input");
        st = tide_fft_backward(plan, dout, rank == 0 ? din + 8 : din);
        expect_misaligned(t, ctx, st, 0, "output");
        st = tide_fft_forward(plan, din, dout);
        tt_check(t, MPI_COMM_WORLD, st == 0, "aligned device arrays after the refusals: %s",
                 tide_last_error(ctx));
    }
    tide_device_free(ctx, din);
    tide_device_free(ctx, dout);
    tide_fft_plan_destroy(plan);
    tide_context_destroy(ctx);
}

/* Arguments: several-gpus or binding, the check of that name alone (see the top). */
int main(int argc, char **argv)
{
    int several = argc == 2 && !strcmp(argv[1], "several-gpus");
    int binding = argc == 2 && !strcmp(argv[1], "binding");
    if (argc > 1 && !several && !binding) {
        printf("FAIL: usage: test_gpu [several-gpus|binding]\n");
        return 1;
    }
    /* Before the first CUDA call that opens a context: with several GPUs make device 1
     * current, so nothing before check_device_1_alone opens device 0's context. */
    int listed = 0;
    if (several && cudaGetDeviceCount(&listed) == cudaSuccess && listed >= 2)
        cudaSetDevice(1);
    int n = tt_gpus_or_skip();
    if (n == 0)
        return 77;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPI_Comm node;
    int local_rank;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local_rank);
    tide_gpu_props props;
    int current = 0;
    cudaGetDevice(&current);
    if (rank == 0 && tide_gpu_properties(current, &props) == 0)
        printf("%d GPU(s), %d rank(s); GPU %d: %s, %.1f GiB (%.1f free), sm_%d%d\n", n, nranks,
               current, props.name, props.total_bytes / 1073741824.0,
               props.free_bytes / 1073741824.0, props.major, props.minor);
    tt_tally t = {0, 0};
    int ran = 1;
    if (several) {
        ran = check_device_1_alone(&t, n);
    } else if (binding) {
        ran = check_binding_kept(&t, local_rank);
    } else {
        int copies = 0, failed = check_copies(&copies);
        tt_check(&t, MPI_COMM_WORLD, failed == 0, "device copies: %d of %d failed on rank 0",
                 failed, copies);
        check_default_context(&t, n, local_rank);
        check_device_option(&t, n);
        check_budget_split(&t, node, n, local_rank);
        check_misaligned_device(&t);
    }
    MPI_Comm_free(&node);
    int rc = ran ? tt_finish(&t, MPI_COMM_WORLD, "test_gpu", "checks") : 77;
    MPI_Finalize();
    return rc;
}
#endif
