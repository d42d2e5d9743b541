/* context.c: one per communicator: communicators, threads, backend choice, logging level. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <hwloc.h>
#include <fftw3.h>
#include "tide_config.h"
#include "tide_internal.h"
#if TIDE_HAVE_CUDA
#include "gpu.h"
#endif

const char *tide_version(void) { return TIDE_VERSION_STRING; }

void tide_context_options_init(tide_context_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->backend = TIDE_BACKEND_AUTO;
    opts->threads = 0;
}

static int log_level_from_env(void)
{
    const char *v = getenv("TIDE_LOG");
    if (!v || !*v)
        return TIDE_LOG_WARN;
    if (!strcasecmp(v, "debug"))
        return TIDE_LOG_DEBUG;
    if (!strcasecmp(v, "info"))
        return TIDE_LOG_INFO;
    return TIDE_LOG_WARN;
}

/* Physical cores of this node (hwloc), or 1 when the topology cannot be read. */
static int node_cores(void)
{
    hwloc_topology_t topo;
    int cores = 1;
    if (hwloc_topology_init(&topo) != 0)
        return 1;
    if (hwloc_topology_load(topo) == 0) {
        int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
        if (n <= 0)
            n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
        cores = n > 0 ? n : 1;
    }
    hwloc_topology_destroy(topo);
    return cores;
}

/* FFTW's thread support is process-wide and must be set up once before any planning. */
static void fftw_threads_once(void)
{
    static int done;
    if (!done) {
        fftw_init_threads();
        fftwf_init_threads();
        done = 1;
    }
}

int tide_context_create(MPI_Comm comm, const tide_context_options *opts, tide_context **out)
{
    /* Without an initialized MPI and a communicator nothing can be agreed: say so locally. */
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited)
        return tide_fail(NULL, TIDE_ERR_MPI, "tide_context_create: MPI is not initialized");
    if (comm == MPI_COMM_NULL)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_context_create: communicator is NULL");
    tide_context_options defaults;
    if (!opts) {
        tide_context_options_init(&defaults);
        opts = &defaults;
    }
    /* Every later check is agreed over the duplicated communicator, so an error on one rank is
     * the same error on all of them. Only an allocation failure here stays local. */
    tide_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return tide_fail(NULL, TIDE_ERR_NOMEM, "tide_context_create: out of memory");
    ctx->comm = ctx->node_comm = MPI_COMM_NULL;
    if (MPI_Comm_dup(comm, &ctx->comm) != MPI_SUCCESS) {
        free(ctx);
        return tide_fail(NULL, TIDE_ERR_MPI, "tide_context_create: MPI_Comm_dup failed");
    }
    MPI_Comm_set_errhandler(ctx->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(ctx->comm, &ctx->rank);
    MPI_Comm_size(ctx->comm, &ctx->nranks);
    ctx->log_level = log_level_from_env();

    int st = TIDE_SUCCESS;
    if (!out)
        st = tide_fail(ctx, TIDE_ERR_ARGUMENT, "the context pointer is NULL");
    else if (opts->backend < TIDE_BACKEND_AUTO || opts->backend > TIDE_BACKEND_CUDA)
        st = tide_fail(ctx, TIDE_ERR_ARGUMENT, "unknown backend %d", (int)opts->backend);
    else if (opts->threads < 0)
        st = tide_fail(ctx, TIDE_ERR_ARGUMENT, "threads must be >= 0, got %d", opts->threads);
    st = tide_agree(ctx, st);
    if (!st && MPI_Comm_split_type(ctx->comm, MPI_COMM_TYPE_SHARED, ctx->rank, MPI_INFO_NULL,
                                   &ctx->node_comm) != MPI_SUCCESS)
        st = tide_fail(ctx, TIDE_ERR_MPI, "MPI_Comm_split_type failed");
    if (!st) {
        MPI_Comm_rank(ctx->node_comm, &ctx->local_rank);
        MPI_Comm_size(ctx->node_comm, &ctx->local_size);
        ctx->threads = opts->threads;
        if (ctx->threads == 0) {
            ctx->threads = node_cores() / ctx->local_size;
            if (ctx->threads < 1)
                ctx->threads = 1;
        }
        /* A GPU is looked for only when one may be used; CUDA only when every rank has one. */
        int gpu = 0, all_gpu = 0;
        if (opts->backend == TIDE_BACKEND_CPU)
            snprintf(ctx->backend_reason, sizeof ctx->backend_reason, "backend cpu requested");
        else
            gpu = tide_gpu_usable(ctx->backend_reason, sizeof ctx->backend_reason);
        if (MPI_Allreduce(&gpu, &all_gpu, 1, MPI_INT, MPI_MIN, ctx->comm) != MPI_SUCCESS)
            st = tide_fail(ctx, TIDE_ERR_MPI, "MPI_Allreduce failed");
        else if (gpu && !all_gpu)
            snprintf(ctx->backend_reason, sizeof ctx->backend_reason,
                     "this rank has a GPU but another rank has none");
        if (!st && opts->backend == TIDE_BACKEND_CUDA && !gpu)
            st = tide_fail(ctx, TIDE_ERR_UNSUPPORTED, "backend cuda requested but %s",
                           ctx->backend_reason);
        ctx->backend = all_gpu ? TIDE_BACKEND_CUDA : TIDE_BACKEND_CPU;
    }
    st = tide_agree(ctx, st);
    if (st != TIDE_SUCCESS) {
        tide_fail(NULL, st, "tide_context_create: %s", ctx->errmsg);
        tide_context_destroy(ctx);
        return st;
    }
    fftw_threads_once();
    if (ctx->backend == TIDE_BACKEND_CPU && opts->backend == TIDE_BACKEND_AUTO)
        tide_log(ctx, TIDE_LOG_INFO, "backend cpu: %s", ctx->backend_reason);
    tide_log(ctx, TIDE_LOG_DEBUG, "context: %d ranks, %d on this node, %d threads per rank",
             ctx->nranks, ctx->local_size, ctx->threads);
    *out = ctx;
    return TIDE_SUCCESS;
}

int tide_context_destroy(tide_context *ctx)
{
    if (!ctx)
        return TIDE_SUCCESS;
    if (ctx->node_comm != MPI_COMM_NULL)
        MPI_Comm_free(&ctx->node_comm);
    if (ctx->comm != MPI_COMM_NULL)
        MPI_Comm_free(&ctx->comm);
    free(ctx);
    return TIDE_SUCCESS;
}

int tide_context_backend(const tide_context *ctx, tide_backend *backend)
{
    if (!ctx || !backend)
        return tide_fail((tide_context *)ctx, TIDE_ERR_ARGUMENT, "tide_context_backend: NULL argument");
    *backend = ctx->backend;
    return TIDE_SUCCESS;
}

const char *tide_context_gpu_status(const tide_context *ctx)
{
    return ctx ? ctx->backend_reason : "no context";
}

int tide_context_threads(const tide_context *ctx, int *threads)
{
    if (!ctx || !threads)
        return tide_fail((tide_context *)ctx, TIDE_ERR_ARGUMENT, "tide_context_threads: NULL argument");
    *threads = ctx->threads;
    return TIDE_SUCCESS;
}

int tide_gpu_usable(char *why, size_t len)
{
#if TIDE_HAVE_CUDA
    return tide_gpu_count(why, len) > 0;
#else
    snprintf(why, len, "this build has no CUDA (configured with -Dcuda=disabled or no nvcc)");
    return 0;
#endif
}
