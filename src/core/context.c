/* context.c: one per communicator: communicators, threads, backend choice, logging level. */
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <hwloc.h>
#include <fftw3.h>
#include "core/args.h"
#include "tide_config.h"
#include "core/core.h"
#include "backend/device.h"
#include "backend/measure.h"
#include "backend/memory.h"
#include "comm/transport.h"

const char *tide_version(void) { return TIDE_VERSION_STRING; }

void tide_context_options_init(tide_context_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->size = sizeof *opts;
    opts->backend = TIDE_BACKEND_AUTO;
    opts->threads = 0;
    opts->device_budget = 0;
    opts->bind = 1;
    opts->device = TIDE_DEVICE_AUTO;
}

/* The caller's options over the defaults (tide_options_read); 0 when opts was not filled by
 * tide_context_options_init. */
static int read_options(const tide_context_options *opts, tide_context_options *o)
{
    tide_context_options_init(o);
    return tide_options_read(opts, o, sizeof *o, offsetof(tide_context_options, threads));
}

/* TIDE_FFT_CHUNKS: -1 when unset, else 0 (no overlap) or 2 .. 64; TIDE_ERR_ARGUMENT for other
 * values. */
static int fft_chunks_from_env(tide_context *ctx, int *chunks)
{
    const char *v = getenv("TIDE_FFT_CHUNKS");
    *chunks = -1;
    if (!v || !*v)
        return TIDE_SUCCESS;
    char *end;
    long n = strtol(v, &end, 10);
    if (*end || n < 0 || n == 1 || n > 64)
        return tide_fail(ctx, TIDE_ERR_ARGUMENT, "TIDE_FFT_CHUNKS=%s: expected 0 (no overlap) "
                         "or 2 .. 64", v);
    *chunks = (int)n;
    return TIDE_SUCCESS;
}

/* TIDE_FFT_ENGINE: -1 when unset, else 0 (cufft) or 1 (plane: Tide's plane pass where it
 * takes a transform); TIDE_ERR_ARGUMENT for other values. */
static int fft_engine_from_env(tide_context *ctx, int *engine)
{
    static const char *const names[] = {"cufft", "plane"};
    const char *v = getenv("TIDE_FFT_ENGINE");
    *engine = -1;
    if (!v || !*v)
        return TIDE_SUCCESS;
    for (int i = 0; i < 2; i++)
        if (!strcasecmp(v, names[i]))
            return *engine = i, TIDE_SUCCESS;
    return tide_fail(ctx, TIDE_ERR_ARGUMENT, "TIDE_FFT_ENGINE=%s: expected cufft or plane", v);
}

/* TIDE_LOG's level: warn (also when unset or empty), info or debug, in any case. Another value
 * is warned about once per process, by the first context's rank 0, and counts as warn. */
static int log_level_from_env(const tide_context *ctx)
{
    static int warned;
    static const char *const names[] = {"warn", "info", "debug"};
    static const int levels[] = {TIDE_LOG_WARN, TIDE_LOG_INFO, TIDE_LOG_DEBUG};
    const char *v = getenv("TIDE_LOG");
    if (!v || !*v)
        return TIDE_LOG_WARN;
    for (int i = 0; i < 3; i++)
        if (!strcasecmp(v, names[i]))
            return levels[i];
    if (!warned && ctx->rank == 0)
        fprintf(stderr, "[tide %d/%d warn] TIDE_LOG=%s is not a level: expected warn, info or "
                "debug; logging at warn\n", ctx->rank, ctx->nranks, v);
    warned = 1;
    return TIDE_LOG_WARN;
}

/* Physical cores of this node, and of them those this process is bound to (hwloc; PUs where
 * no whole core is: a binding to one hardware thread); 1 and 1 when the topology cannot be
 * read, node's count when the binding cannot. */
static void node_cores(int *node, int *bound)
{
    hwloc_topology_t topo;
    *node = *bound = 1;
    if (hwloc_topology_init(&topo) != 0)
        return;
    if (hwloc_topology_load(topo) == 0) {
        int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
        if (n <= 0)
            n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
        *node = *bound = n > 0 ? n : 1;
        hwloc_bitmap_t set = hwloc_bitmap_alloc();
        if (set && hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0) {
            int b = hwloc_get_nbobjs_inside_cpuset_by_type(topo, set, HWLOC_OBJ_CORE);
            if (b <= 0)
                b = hwloc_get_nbobjs_inside_cpuset_by_type(topo, set, HWLOC_OBJ_PU);
            if (b > 0 && b < *bound)
                *bound = b;
        }
        hwloc_bitmap_free(set);
    }
    hwloc_topology_destroy(topo);
}

/* The threads of the rank (collective): `given`, or where 0 its share of the node's cores
 * within the cores it is bound to (after select_gpu, which may bind it near its GPU). More
 * threads than cores only time-slice one another, every parallel region then waiting for the
 * slowest; a launcher's binding narrower than the share is most often its default (Open MPI
 * binds one or two ranks to one core each), so rank 0 says so. */
static void set_threads(tide_context *ctx, int given)
{
    int node, bound;
    node_cores(&node, &bound);
    int share = node / ctx->local_size > 0 ? node / ctx->local_size : 1;
    ctx->threads = given ? given : bound < share ? bound : share;
    int narrowed = ctx->threads < share && !given && !ctx->bound_near; /* by the launcher */
    /* for rank 0's line, in one reduction: the largest share narrowed, the fewest cores
     * (negated, so MAX finds it) */
    int mine[2] = {narrowed ? share : 0, narrowed ? -bound : INT_MIN}, most[2];
    if (MPI_Allreduce(mine, most, 2, MPI_INT, MPI_MAX, ctx->comm) == MPI_SUCCESS && most[0] &&
        ctx->rank == 0)
        tide_log(ctx, TIDE_LOG_WARN, "a rank is bound to %d core%s, fewer than its share of the "
                 "node (%d): its host-side work (copies, staging, CPU transforms) runs on that "
                 "many threads. Open MPI binds one or two ranks to a core each by default: "
                 "mpirun --bind-to none lets Tide bind each rank near its GPU, --map-by "
                 "slot:PE=N gives each rank N cores, option threads sets the count",
                 -most[1], -most[1] > 1 ? "s" : "", most[0]);
}

/* FFTW's planner (making and destroying plans, in either precision) is not reentrant, and
 * fftw_plan_with_nthreads sets a count the planner itself reads and changes while it plans.
 * FFTW calls a hook before and after each of those; Tide installs one recursive lock there,
 * process-wide, so contexts on several threads, and the caller's own FFTW planning, may run at
 * once, and tide_fftw_lock holds it around a thread count and the planning that uses it.
 * fftw_make_planner_thread_safe installs such hooks in FFTW's pthreads library but does
 * nothing in its OpenMP one, which Tide links; fftw_set_planner_hooks (FFTW >= 3.3.5, which it
 * calls) is exported but not declared in fftw3.h. Set up once, before any planning. */
void fftw_set_planner_hooks(void (*before)(void), void (*after)(void));
void fftwf_set_planner_hooks(void (*before)(void), void (*after)(void));

static pthread_once_t fftw_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t fftw_mutex;

static void fftw_hook_lock(void) { pthread_mutex_lock(&fftw_mutex); }
static void fftw_hook_unlock(void) { pthread_mutex_unlock(&fftw_mutex); }

static void fftw_setup(void)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&fftw_mutex, &a);
    pthread_mutexattr_destroy(&a);
    fftw_init_threads();
    fftwf_init_threads();
    fftw_set_planner_hooks(fftw_hook_lock, fftw_hook_unlock);
    fftwf_set_planner_hooks(fftw_hook_lock, fftw_hook_unlock);
}

void tide_fftw_lock(void)
{
    pthread_once(&fftw_once, fftw_setup);
    pthread_mutex_lock(&fftw_mutex);
}

void tide_fftw_unlock(void) { pthread_mutex_unlock(&fftw_mutex); }

/* Log how tide_gpu_select left the process's binding. */
static void log_binding(const tide_context *ctx, int binding)
{
    const tide_device_info *d = &ctx->dev;
    if (binding == TIDE_BIND_NEAR)
        tide_log(ctx, TIDE_LOG_DEBUG, "bound to cpus %s, near GPU %d", d->cpuset, d->device);
    else if (binding == TIDE_BIND_KEPT)
        tide_log(ctx, TIDE_LOG_INFO, "already bound to cpus %s (by the launcher?): binding kept",
                 d->cpuset);
    else if (binding == TIDE_BIND_KEPT_FAR)
        tide_log(ctx, TIDE_LOG_INFO, "already bound to cpus %s (by the launcher?): binding kept, "
                 "although none of them is near GPU %d", d->cpuset, d->device);
}

/* Choose this rank's GPU (and bind near it). Returns whether one is in use; a device that does
 * not exist is an error (*st), whatever the backend, not a reason to fall back (a build
 * without CUDA has none: the reason says so). */
static int select_gpu(tide_context *ctx, const tide_context_options *opts, int *st)
{
    int binding = TIDE_BIND_NONE;
    int rc = tide_gpu_select(ctx->local_rank, opts->device, opts->bind, &ctx->dev, &binding,
                             ctx->backend_reason, sizeof ctx->backend_reason);
    if (rc == TIDE_ERR_ARGUMENT)
        *st = tide_fail(ctx, rc, "%s", ctx->backend_reason);
    if (rc) {
        ctx->dev.device = -1;
        return 0;
    }
    log_binding(ctx, binding);
    ctx->bound_near = binding == TIDE_BIND_NEAR;
    ctx->dev_auto = opts->device == TIDE_DEVICE_AUTO;
    return 1;
}

/* Collective over the node: the ranks of this node using the same GPU as this one (same PCI
 * bus id) and the device budget. The default budget splits the smallest free memory any of
 * them saw (less 1 GiB) evenly between them, so that they agree and together fit; free memory
 * is read after every rank of the node has opened its context. An explicit budget is this
 * rank's and must fit its free memory. Ranks without a GPU take part with an empty id. */
static int share_gpu(tide_context *ctx, int gpu, size_t budget)
{
    enum { ID = sizeof ctx->dev.pci_bus_id };
    int L = ctx->local_size;
    char *ids = malloc((size_t)L * ID), id[ID] = "";
    unsigned long long *frees = malloc((size_t)L * sizeof *frees), mine = 0;
    int have = ids && frees, all_have = 0;
    if (gpu && ctx->dev.pci_bus_id[0])
        memcpy(id, ctx->dev.pci_bus_id, ID);
    else if (gpu) /* no bus id: the device index stands for it */
        snprintf(id, ID, "device %d", ctx->dev.device);
    /* Every step runs on every rank of the node, so no rank waits alone in a collective. The
     * first gather also waits for every rank's context to be open before free memory is read. */
    int ok = MPI_Allreduce(&have, &all_have, 1, MPI_INT, MPI_MIN, ctx->node_comm) == 0;
    if (ok && !all_have) {
        free(ids);
        free(frees);
        return tide_fail(ctx, TIDE_ERR_NOMEM, "out of memory");
    }
    ok = ok && MPI_Allgather(id, ID, MPI_CHAR, ids, ID, MPI_CHAR, ctx->node_comm) == 0;
    tide_gpu_props p;
    if (ok && gpu && tide_gpu_properties(ctx->dev.device, &p) == 0 && p.free_bytes)
        ctx->dev.free_bytes = p.free_bytes;
    mine = gpu ? ctx->dev.free_bytes : 0;
    ok = ok && MPI_Allgather(&mine, 1, MPI_UNSIGNED_LONG_LONG, frees, 1, MPI_UNSIGNED_LONG_LONG,
                             ctx->node_comm) == 0;
    unsigned long long least = mine;
    ctx->dev_sharers = 0;
    ctx->dev_reaches = ok && gpu;
    for (int r = 0; ok && gpu && r < L; r++)
        if (strncmp(ids + (size_t)r * ID, id, ID) == 0) {
            ctx->dev_sharers++;
            least = frees[r] < least ? frees[r] : least;
        } else {
            ctx->dev_reaches = ctx->dev_reaches &&
                               tide_gpu_reaches(ctx->dev.device, ids + (size_t)r * ID);
        }
    free(ids);
    free(frees);
    if (!ok)
        return tide_fail(ctx, TIDE_ERR_MPI, "MPI over the node communicator failed");
    if (!gpu)
        return TIDE_SUCCESS;
    if (budget > ctx->dev.free_bytes)
        return tide_fail(ctx, TIDE_ERR_ARGUMENT, "device budget %zu bytes exceeds the %zu bytes "
                         "free on GPU %d (%s)", budget, ctx->dev.free_bytes, ctx->dev.device,
                         ctx->dev.name);
    const unsigned long long margin = 1ull << 30;
    unsigned long long avail = least > margin ? least - margin : least / 2;
    ctx->dev.budget_bytes = budget ? budget : (size_t)(avail / (unsigned)ctx->dev_sharers);
    if (!budget && ctx->dev_sharers > 1)
        tide_log(ctx, TIDE_LOG_INFO, "GPU %d is shared by %d ranks of this node: device budget "
                 "%.2f GiB each", ctx->dev.device, ctx->dev_sharers,
                 ctx->dev.budget_bytes / 1073741824.0);
    return TIDE_SUCCESS;
}

/* What the GPU exchanges may use, the same on every rank: NCCL needs a GPU per rank (two
 * ranks on one GPU cannot share an NCCL communicator); CUDA-aware MPI must be so everywhere;
 * ranks of one node whose GPUs all reach each other (or are one) may store into each other's
 * memory. */
static int exchange_caps(tide_context *ctx)
{
    int mine[3] = {0, 0, 0}, all[3];
    if (ctx->backend == TIDE_BACKEND_CUDA) {
        mine[0] = tide_transport_nccl_version() > 0 && ctx->dev_sharers == 1;
        mine[1] = tide_transport_cuda_aware_mpi();
        mine[2] = ctx->dev_reaches && ctx->local_size == ctx->nranks;
    }
    if (MPI_Allreduce(mine, all, 3, MPI_INT, MPI_MIN, ctx->comm) != MPI_SUCCESS)
        return tide_fail(ctx, TIDE_ERR_MPI, "MPI_Allreduce failed");
    ctx->nccl_usable = all[0];
    ctx->cuda_aware_mpi = all[1];
    ctx->gpus_reach = all[2];
    return TIDE_SUCCESS;
}

int tide_context_nccl(tide_context *ctx, int beside, void **nccl)
{
    beside = !!beside;
    if (!ctx->nccl[beside] && ctx->nccl_usable) {
        char why[TIDE_MSG_LEN] = "";
        void *c = NULL;
        int st = tide_transport_nccl_create(ctx->comm, beside ? TIDE_NCCL_BESIDE_CTAS : 0, &c,
                                            why, sizeof why);
        if (st)
            tide_fail(ctx, st, "NCCL: %s", why);
        st = tide_agree(ctx, st);
        if (st) {
            tide_transport_nccl_destroy(c);
            return st;
        }
        ctx->nccl[beside] = c;
    }
    *nccl = ctx->nccl[beside];
    if (*nccl)
        return TIDE_SUCCESS;
    tide_device_info info;
    tide_context_device(ctx, &info);
    return tide_fail(ctx, TIDE_ERR_UNSUPPORTED, "NCCL is not usable: %s",
                     ctx->backend != TIDE_BACKEND_CUDA ? "the context has no GPU"
                     : info.nccl_version             ? "some ranks share a GPU"
                                                     : "this build has no NCCL");
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
    tide_context_options o;
    int filled = read_options(opts, &o);
    opts = &o;
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
    ctx->log_level = log_level_from_env(ctx);

    int st = TIDE_SUCCESS;
    if (!out)
        st = tide_fail(ctx, TIDE_ERR_ARGUMENT, "the context pointer is NULL");
    else if (!filled)
        st = tide_fail(ctx, TIDE_ERR_ARGUMENT, "tide_context_options not initialised: call "
                       "tide_context_options_init");
    else if (opts->backend < TIDE_BACKEND_AUTO || opts->backend > TIDE_BACKEND_CUDA)
        st = tide_fail(ctx, TIDE_ERR_ARGUMENT, "unknown backend %d", (int)opts->backend);
    else if (opts->threads < 0)
        st = tide_fail(ctx, TIDE_ERR_ARGUMENT, "threads must be >= 0, got %d", opts->threads);
    else if (opts->device < TIDE_DEVICE_CURRENT)
        st = tide_fail(ctx, TIDE_ERR_ARGUMENT, "device must be TIDE_DEVICE_AUTO (-1), "
                       "TIDE_DEVICE_CURRENT (-2) or an index >= 0, got %d", opts->device);
    int env_st = fft_chunks_from_env(ctx, &ctx->fft_chunks);
    st = st ? st : env_st;
    env_st = fft_engine_from_env(ctx, &ctx->fft_engine);
    st = st ? st : env_st;
    /* the backend is the one option every rank must give alike (threads, device, budget and
     * binding are each rank's own), and the environment's TIDE_FFT_CHUNKS and
     * TIDE_FFT_ENGINE */
    tide_call_arg agreed[] = {tide_call_int("option backend", opts->backend),
                              tide_call_int("TIDE_FFT_CHUNKS", ctx->fft_chunks),
                              tide_call_int("TIDE_FFT_ENGINE", ctx->fft_engine)};
    st = tide_agree_call(ctx, NULL, st, agreed, 3);
    if (!st && MPI_Comm_split_type(ctx->comm, MPI_COMM_TYPE_SHARED, ctx->rank, MPI_INFO_NULL,
                                   &ctx->node_comm) != MPI_SUCCESS)
        st = tide_fail(ctx, TIDE_ERR_MPI, "MPI_Comm_split_type failed");
    if (!st && !(st = tide_agree(ctx, st))) {
        MPI_Comm_rank(ctx->node_comm, &ctx->local_rank);
        MPI_Comm_size(ctx->node_comm, &ctx->local_size);
        /* A GPU is looked for only when one may be used; CUDA only when every rank has one. */
        int gpu = 0, all_gpu = 0;
        ctx->dev.device = -1;
        if (opts->backend == TIDE_BACKEND_CPU)
            snprintf(ctx->backend_reason, sizeof ctx->backend_reason, "backend cpu requested");
        else
            gpu = select_gpu(ctx, opts, &st);
        int rc = share_gpu(ctx, gpu, opts->device_budget);
        st = st ? st : rc;
        if (MPI_Allreduce(&gpu, &all_gpu, 1, MPI_INT, MPI_MIN, ctx->comm) != MPI_SUCCESS)
            st = tide_fail(ctx, TIDE_ERR_MPI, "MPI_Allreduce failed");
        else if (gpu && !all_gpu)
            snprintf(ctx->backend_reason, sizeof ctx->backend_reason,
                     "this rank has a GPU but another rank has none");
        if (!st && opts->backend == TIDE_BACKEND_CUDA && !gpu)
            st = tide_fail(ctx, TIDE_ERR_UNSUPPORTED, "backend cuda requested but %s",
                           ctx->backend_reason);
        ctx->backend = all_gpu ? TIDE_BACKEND_CUDA : TIDE_BACKEND_CPU;
        set_threads(ctx, opts->threads);
        /* agreed first: exchange_caps is collective, and a rank that failed must not skip it
         * while the others run it */
        st = tide_agree(ctx, st);
        if (!st)
            st = tide_agree(ctx, exchange_caps(ctx));
    }
    if (st != TIDE_SUCCESS) {
        tide_fail(NULL, st, "tide_context_create: %s", ctx->errmsg);
        tide_context_destroy(ctx);
        return st;
    }
    pthread_once(&fftw_once, fftw_setup);
    if (ctx->backend == TIDE_BACKEND_CPU && opts->backend == TIDE_BACKEND_AUTO)
        tide_log(ctx, TIDE_LOG_INFO, "backend cpu: %s", ctx->backend_reason);
    tide_log(ctx, TIDE_LOG_DEBUG, "context: %d ranks, %d on this node, %d threads per rank",
             ctx->nranks, ctx->local_size, ctx->threads);
    *out = ctx;
    return TIDE_SUCCESS;
}

void tide_context_hold(tide_context *ctx, int *held)
{
    __atomic_fetch_add(&ctx->plans, 1, __ATOMIC_RELAXED);
    *held = 1;
}

void tide_context_release(tide_context *ctx, int *held)
{
    if (ctx && *held)
        __atomic_fetch_sub(&ctx->plans, 1, __ATOMIC_RELAXED);
    *held = 0;
}

/* Collective: TIDE_ERR_ARGUMENT on every rank where any rank's context still has plans. */
static int refuse_live_plans(tide_context *ctx)
{
    struct {
        int live, rank;
    } mine = {__atomic_load_n(&ctx->plans, __ATOMIC_RELAXED), ctx->rank}, most;
    if (MPI_Allreduce(&mine, &most, 1, MPI_2INT, MPI_MAXLOC, ctx->comm) != MPI_SUCCESS)
        return tide_fail(ctx, TIDE_ERR_MPI, "tide_context_destroy: MPI_Allreduce failed");
    if (most.live > 0)
        return tide_fail(ctx, TIDE_ERR_ARGUMENT, "tide_context_destroy: %d plan%s made from the "
                         "context %s not destroyed (rank %d): destroy them first; the context "
                         "stays usable", most.live, most.live > 1 ? "s" : "",
                         most.live > 1 ? "are" : "is", most.rank);
    return TIDE_SUCCESS;
}

int tide_context_destroy(tide_context *ctx)
{
    if (!ctx)
        return TIDE_SUCCESS;
    if (ctx->comm != MPI_COMM_NULL) {
        int st = refuse_live_plans(ctx);
        if (st)
            return st;
    }
    for (int i = 0; i < 2; i++)
        tide_transport_nccl_destroy(ctx->nccl[i]);
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
        return tide_fail((tide_context *)ctx, TIDE_ERR_ARGUMENT,
                         "tide_context_backend: NULL argument");
    *backend = ctx->backend;
    return TIDE_SUCCESS;
}

int tide_context_device(const tide_context *ctx, tide_device_info *info)
{
    if (!ctx || !info)
        return tide_fail((tide_context *)ctx, TIDE_ERR_ARGUMENT,
                         "tide_context_device: NULL argument");
    *info = ctx->dev;
    if (ctx->backend != TIDE_BACKEND_CUDA) {
        memset(info, 0, sizeof *info);
        info->device = -1;
    }
    info->cuda_aware_mpi = tide_transport_cuda_aware_mpi();
    info->nccl_version = tide_transport_nccl_version();
    return TIDE_SUCCESS;
}

int tide_host_alloc(tide_context *ctx, size_t bytes, void **ptr)
{
    if (!ctx || !ptr)
        return tide_fail(ctx, TIDE_ERR_ARGUMENT, "tide_host_alloc: NULL argument");
    void *p = NULL;
    int st = TIDE_SUCCESS;
    if (ctx->backend == TIDE_BACKEND_CUDA)
        st = tide_gpu_host_alloc(bytes, &p);
    else
        st = posix_memalign(&p, 64, bytes ? bytes : 1) ? TIDE_ERR_NOMEM : TIDE_SUCCESS;
    if (st)
        return tide_fail(ctx, TIDE_ERR_NOMEM, "tide_host_alloc: cannot allocate %zu bytes%s",
                         bytes, ctx->backend == TIDE_BACKEND_CUDA ? " of pinned memory" : "");
    memset(p, 0, bytes); /* first touch: the pages land on this rank's NUMA node */
    *ptr = p;
    return TIDE_SUCCESS;
}

int tide_host_free(tide_context *ctx, void *ptr)
{
    if (!ctx)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_host_free: ctx is NULL");
    if (!ptr)
        return TIDE_SUCCESS;
    if (ctx->backend == TIDE_BACKEND_CUDA)
        return tide_gpu_host_free(ptr) ? tide_fail(ctx, TIDE_ERR_ARGUMENT, "tide_host_free: "
                                                   "not memory from tide_host_alloc") : 0;
    free(ptr);
    return TIDE_SUCCESS;
}

int tide_device_alloc(tide_context *ctx, size_t bytes, void **ptr)
{
    if (!ctx || !ptr)
        return tide_fail(ctx, TIDE_ERR_ARGUMENT, "tide_device_alloc: NULL argument");
    if (ctx->backend != TIDE_BACKEND_CUDA)
        return tide_fail(ctx, TIDE_ERR_UNSUPPORTED, "tide_device_alloc: the context has no "
                         "GPU (%s)", ctx->backend_reason);
    if (tide_gpu_malloc(bytes, ptr))
        return tide_fail(ctx, TIDE_ERR_NOMEM, "tide_device_alloc: cannot allocate %zu bytes on "
                         "GPU %d: %s", bytes, ctx->dev.device, tide_gpu_last_error());
    return TIDE_SUCCESS;
}

int tide_device_free(tide_context *ctx, void *ptr)
{
    if (!ctx)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_device_free: ctx is NULL");
    if (ptr)
        tide_gpu_free(ptr);
    return TIDE_SUCCESS;
}

int tide_copy(tide_context *ctx, void *dst, const void *src, size_t bytes)
{
    if (!ctx || ((!dst || !src) && bytes))
        return tide_fail(ctx, TIDE_ERR_ARGUMENT, "tide_copy: NULL argument");
    if (ctx->backend == TIDE_BACKEND_CUDA) {
        if (tide_gpu_memcpy_async(dst, src, bytes, NULL) || tide_gpu_sync(NULL))
            return tide_fail(ctx, TIDE_ERR_BACKEND, "tide_copy: %s", tide_gpu_last_error());
        return TIDE_SUCCESS;
    }
    if (bytes)
        memcpy(dst, src, bytes);
    return TIDE_SUCCESS;
}

int tide_context_pcie(tide_context *ctx, tide_rates *rates, char *err, size_t len)
{
    if (!ctx->pcie_known) {
        int st = tide_gpu_measure((size_t)64 << 20, NULL, NULL, &ctx->pcie, err, len);
        if (st)
            return st;
        ctx->pcie_known = 1;
    }
    *rates = ctx->pcie;
    return TIDE_SUCCESS;
}

int tide_context_gpus(const tide_context *ctx, int want, int *devs, int max, char *err,
                      size_t len)
{
    int own = ctx->dev.device, L = ctx->local_size, n = 1;
    if (own < 0)
        return snprintf(err, len, "this rank has no GPU"), -TIDE_ERR_UNSUPPORTED;
    char why[TIDE_MSG_LEN];
    int all = tide_gpu_count(why, sizeof why);
    if (ctx->dev_auto && all > L && own == ctx->local_rank % all)
        n = (all - own + L - 1) / L;
    n = n < max ? n : max;
    if (want > n)
        return snprintf(err, len, "option gpus = %d, but this rank drives at most %d GPU%s (%s)",
                        want, n, n > 1 ? "s" : "", ctx->dev_auto ? "its share of the node's "
                        "GPUs dealt among the node's ranks" : "the device option names one"),
               -TIDE_ERR_ARGUMENT;
    n = want ? want : n;
    for (int i = 0; i < n; i++)
        devs[i] = own + i * L;
    return n;
}

const char *tide_context_gpu_status(const tide_context *ctx)
{
    return ctx ? ctx->backend_reason : "no context";
}

int tide_context_threads(const tide_context *ctx, int *threads)
{
    if (!ctx || !threads)
        return tide_fail((tide_context *)ctx, TIDE_ERR_ARGUMENT,
                         "tide_context_threads: NULL argument");
    *threads = ctx->threads;
    return TIDE_SUCCESS;
}

