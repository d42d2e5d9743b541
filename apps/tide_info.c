/* tide_info.c: `tide info`: what this run has: ranks, nodes, threads, binding, backend. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fftw3.h>
#include <hwloc.h>
#include "tide.h"
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

int tide_cmd_info(int argc, char **argv)
{
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            tide_say("usage: mpirun -np P tide info\n\nPrints the MPI library, FFTW, and for "
                     "each rank its host, CPU binding, NUMA nodes, threads and backend.\n");
            return 0;
        }
        tide_warn("tide info: unknown argument '%s' (see tide info --help)\n", argv[i]);
        return 2;
    }
    int rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    tide_context *ctx = NULL;
    int st = tide_context_create(MPI_COMM_WORLD, NULL, &ctx);
    if (st) {
        tide_warn("tide info: %s: %s\n", tide_strerror(st), tide_last_error(NULL));
        return 1;
    }
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    char *nl = strchr(lib, '\n');
    if (nl)
        *nl = '\0';
    tide_say("Tide %s\nMPI: %s\nFFTW: %s\nRanks: %d\n", tide_version(), lib, fftw_version, P);

    enum { LINE = 512 };
    char line[LINE], host[128] = "?", cpus[128], numa[64];
    gethostname(host, sizeof host);
    binding(cpus, sizeof cpus, numa, sizeof numa);
    tide_backend b = TIDE_BACKEND_CPU;
    int threads = 1;
    tide_context_backend(ctx, &b);
    tide_context_threads(ctx, &threads);
    snprintf(line, LINE, "rank %d: host %s, cpus %s, numa %s, %d threads, backend %s (%s)",
             rank, host, cpus, numa, threads, b == TIDE_BACKEND_CUDA ? "cuda" : "cpu",
             tide_context_gpu_status(ctx));
    char *all = rank == 0 ? malloc((size_t)P * LINE) : NULL;
    MPI_Gather(line, LINE, MPI_CHAR, all, LINE, MPI_CHAR, 0, MPI_COMM_WORLD);
    for (int r = 0; rank == 0 && all && r < P; r++)
        tide_say("%s\n", all + (size_t)r * LINE);
    free(all);
    tide_context_destroy(ctx);
    return 0;
}
