/* tide_info.c: `tide info`: what this run has: ranks, nodes, threads, binding, backend. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fftw3.h>
#include <hwloc.h>
#include "tide.h"
#include "app_common.h"
#include "tide_app.h"

/* This rank's CPU binding as a list like "0-3" (or "unbound"), and its NUMA nodes. */
static void binding(char *cpus, size_t clen, char *numa, size_t nlen)
{
    snprintf(cpus, clen, "unknown");
    snprintf(numa, nlen, "unknown");
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) || hwloc_topology_load(topo))
        return;
    hwloc_bitmap_t set = hwloc_bitmap_alloc(), nodes = hwloc_bitmap_alloc();
    if (set && nodes && hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0) {
        hwloc_bitmap_list_snprintf(cpus, clen, set);
        hwloc_cpuset_to_nodeset(topo, set, nodes);
        hwloc_bitmap_list_snprintf(numa, nlen, nodes);
    }
    hwloc_bitmap_free(set);
    hwloc_bitmap_free(nodes);
    hwloc_topology_destroy(topo);
}

/* Collective: whether two ranks of one node use the same GPU. */
static int gpus_shared(int device)
{
    int shared = 0, any = 0;
    app_node nd;
    if (app_node_peers(device, 0, &nd)) {
        for (int i = 0; i < nd.n; i++)
            for (int j = 0; j < i; j++)
                shared |= nd.device[i] >= 0 && nd.device[i] == nd.device[j];
        app_node_free(&nd);
    }
    MPI_Allreduce(&shared, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return any;
}

int tide_cmd_info(int argc, char **argv)
{
    int measure = 0;
    app_opt opts[] = {
        {"--measure", .kind = APP_FLAG, .dest = &measure, .count = 1,
         .help = "also measure each rank's transfer rates (all ranks at once, each repetition "
                 "started together, as a job loads the links): host memcpy, host<->device each "
                 "way and both at once, device copy, and with several ranks the all-to-all "
                 "rates of MPI in host memory (MPI_Alltoall and point to point) and, between "
                 "GPUs, of NCCL and CUDA-aware MPI"},
    };
    app_cmd cmd = {"tide info",
                   "Prints the MPI library (and whether it takes device pointers), FFTW, NCCL,\n"
                   "and for each rank its host, CPU binding, NUMA nodes, threads, backend and\n"
                   "GPU.\n", NULL, opts, 1};
    int parsed = app_parse(&cmd, argc, argv);
    if (parsed)
        return parsed == 1 ? 0 : parsed;
    int rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    tide_context *ctx = NULL;
    int st = tide_context_create(MPI_COMM_WORLD, NULL, &ctx);
    if (st) {
        app_say_failure("tide info", st, NULL);
        return 1;
    }
    tide_device_info dev;
    tide_context_device(ctx, &dev);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    char *nl = strchr(lib, '\n');
    if (nl)
        *nl = '\0';
    char nccl[32] = "not in this build";
    if (dev.nccl_version)
        snprintf(nccl, sizeof nccl, "%d", dev.nccl_version);
    char blas[320], note[320];
    app_blas(blas, sizeof blas, note, sizeof note);
    tide_say("Tide %s\nMPI: %s (device pointers: %s)\nFFTW: %s\nBLAS: %s\nNCCL: %s\n"
             "Ranks: %d\n", tide_version(), lib, dev.cuda_aware_mpi ? "yes" : "no", fftw_version,
             blas, nccl, P);
    if (note[0])
        tide_say("Note: %s\n", note);

    enum { LINE = 768 };
    char line[LINE], host[128] = "?", cpus[128], numa[64], gpu[320] = "";
    gethostname(host, sizeof host);
    binding(cpus, sizeof cpus, numa, sizeof numa);
    tide_backend b = TIDE_BACKEND_CPU;
    int threads = 1;
    tide_context_backend(ctx, &b);
    tide_context_threads(ctx, &threads);
    if (dev.device >= 0)
        snprintf(gpu, sizeof gpu, "; GPU %d %s (%s, sm_%d%d), %.1f of %.1f GiB free, budget "
                 "%.1f GiB", dev.device, dev.name, dev.pci_bus_id, dev.cc_major, dev.cc_minor,
                 dev.free_bytes / 1073741824.0, dev.total_bytes / 1073741824.0,
                 dev.budget_bytes / 1073741824.0);
    snprintf(line, LINE, "rank %d: host %s, cpus %s, numa %s, %d threads, backend %s (%s)%s",
             rank, host, cpus, numa, threads, b == TIDE_BACKEND_CUDA ? "cuda" : "cpu",
             tide_context_gpu_status(ctx), gpu);
    int rc = 0;
    if (measure) {
        tide_rates r;
        st = tide_measure_rates_together(ctx, 0, &r);
        if (st) {
            tide_warn("tide info: measuring failed: %s\n", tide_last_error(ctx));
            rc = 1;
        } else {
            size_t used = strlen(line);
            snprintf(line + used, LINE - used, "\n  rates (GB/s): host copy %.1f", r.host_copy);
            if (dev.device >= 0) {
                used = strlen(line);
                snprintf(line + used, LINE - used, ", h2d %.1f, d2h %.1f, both %.1f, device copy "
                         "%.0f", r.h2d, r.d2h, r.both, r.d2d);
            }
            double v[5] = {r.host_copy, r.h2d, r.d2h, r.both, r.d2d}, sum[5];
            MPI_Reduce(v, sum, 5, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
            int shared = gpus_shared(dev.device);
            if (rank == 0 && b == TIDE_BACKEND_CUDA)
                snprintf(gpu, sizeof gpu, "Aggregate rates (GB/s, all ranks at once): host copy "
                         "%.1f, h2d %.1f, d2h %.1f, both %.1f, device copy %.0f%s\n", sum[0],
                         sum[1], sum[2], sum[3], sum[4], shared ? " (ranks share GPUs, which "
                         "time-slice between them: the GPU figures do not add up)" : "");
            else if (rank == 0)
                snprintf(gpu, sizeof gpu, "Aggregate rates (GB/s, all ranks at once): host copy "
                         "%.1f\n", sum[0]);
        }
    }
    char *all = rank == 0 ? malloc((size_t)P * LINE) : NULL;
    MPI_Gather(line, LINE, MPI_CHAR, all, LINE, MPI_CHAR, 0, MPI_COMM_WORLD);
    for (int r = 0; rank == 0 && all && r < P; r++)
        tide_say("%s\n", all + (size_t)r * LINE);
    if (measure && !rc)
        tide_say("%s", gpu);
    /* All-to-all rates, 64 MiB per rank: MPI in host memory, and between GPUs what this
     * machine has (an exchange it cannot measure says why, on every rank alike). */
    static const struct {
        tide_exchange how;
        const char *what;
    } xs[] = {{TIDE_EXCHANGE_A2AV, "MPI_Alltoall in host memory"},
              {TIDE_EXCHANGE_P2P, "MPI_Isend/Irecv in host memory"},
              {TIDE_EXCHANGE_NCCL, "NCCL send/recv between the GPUs"},
              {TIDE_EXCHANGE_CUDA_MPI, "MPI_Alltoall on device memory"},
              {TIDE_EXCHANGE_DIRECT, "direct stores between the GPUs"}};
    for (int i = 0; measure && !rc && P > 1 && i < (int)(sizeof xs / sizeof xs[0]); i++) {
        double xr = 0;
        if (i > 1 && b != TIDE_BACKEND_CUDA)
            break;
        st = tide_measure_exchange(ctx, xs[i].how, 0, &xr);
        if (st == TIDE_ERR_UNSUPPORTED) {
            tide_say("Exchange rate, %s: not measured (%s)\n", xs[i].what, tide_last_error(ctx));
        } else if (st) {
            tide_warn("tide info: measuring the exchange failed: %s\n", tide_last_error(ctx));
            rc = 1;
        } else {
            tide_say("Exchange rate (GB/s leaving each rank, %s, 64 MiB per rank): %.2f\n",
                     xs[i].what, xr);
        }
    }
    free(all);
    tide_context_destroy(ctx);
    return rc;
}
