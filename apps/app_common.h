/*
 * app_common.h: what the computing subcommands of `tide` (fft, poisson, stencil, gemm) share:
 * the arguments they all take and their option table entries, the timing of runs and its
 * statistics, the heFFTe-style timing keys, the bound a run is measured against (rates
 * measured in the same run), and the -json object (cJSON) with its common members.
 */
#ifndef TIDE_APP_COMMON_H
#define TIDE_APP_COMMON_H

#include <stdio.h>
#include <cJSON.h> /* libcjson: pkg-config gives its include directory */
#include "app_util.h"
#include "tide.h"

/* ---- arguments ------------------------------------------------------------------------------- */

/* The arguments every computing subcommand takes: the positional backend, precision and grid,
 * and the options of the APP_OPT_* table entries. */
typedef struct {
    int backend, prec, n[3];
    int decomp, exchange, device, inplace, measure, batch, runs;
    double budget_gb, progress;
    unsigned seed;
    const char *json;
} app_args;

/* Zero, with batch 1, 5 runs, seed 2026 and progress every APP_PROGRESS_EVERY seconds. */
void app_args_init(app_args *a);

extern const char *const app_backend_names[3], *const app_precision_names[2];
extern const int app_backend_values[3], app_precision_values[2];

/* Table entries (app_util.h's app_opt) shared by the subcommands, one spelling and one text
 * each. The positional backend and precision, and a size named by meta: */
#define APP_POS_BACKEND(c)                                                                         \
    {.meta = "backend", .kind = APP_NAME, .dest = &(c)->backend, .count = 3,                       \
     .names = app_backend_names, .values = app_backend_values}
#define APP_POS_PRECISION(c)                                                                       \
    {.meta = "precision", .kind = APP_NAME, .dest = &(c)->prec, .count = 2,                        \
     .names = app_precision_names, .values = app_precision_values}
#define APP_POS_SIZE(label, where)                                                                 \
    {.meta = label, .kind = APP_INT, .dest = where, .lo = 1, .hi = APP_SIZE_MAX}
#define APP_POS_GRID(c)                                                                            \
    APP_POS_SIZE("NX", &(c)->n[0]), APP_POS_SIZE("NY", &(c)->n[1]), APP_POS_SIZE("NZ", &(c)->n[2])
#define APP_OPT_DECOMP(c)                                                                          \
    {"-slabs", .kind = APP_FLAG, .dest = &(c)->decomp, .count = TIDE_DECOMP_SLABS},                \
    {"-pencils", .kind = APP_FLAG, .dest = &(c)->decomp, .count = TIDE_DECOMP_PENCILS,             \
     .help = "decomposition (default: automatic)"}
#define APP_OPT_EXCHANGE(c)                                                                        \
    {"-a2av", .kind = APP_FLAG, .dest = &(c)->exchange, .count = TIDE_EXCHANGE_A2AV},              \
    {"-p2p", .kind = APP_FLAG, .dest = &(c)->exchange, .count = TIDE_EXCHANGE_P2P,                 \
     .help = "exchange: MPI_Alltoallv or pipelined Isend/Irecv (default: auto; for GPU data "      \
             "through pinned host buffers)"},                                                      \
    {"-nccl", .kind = APP_FLAG, .dest = &(c)->exchange, .count = TIDE_EXCHANGE_NCCL},              \
    {"-cuda-mpi", .kind = APP_FLAG, .dest = &(c)->exchange, .count = TIDE_EXCHANGE_CUDA_MPI},      \
    {"-direct", .kind = APP_FLAG, .dest = &(c)->exchange, .count = TIDE_EXCHANGE_DIRECT,           \
     .help = "GPU data: NCCL send/recv, MPI on device pointers, or each GPU storing straight "     \
             "into the others' memory (ranks of one node)"}
#define APP_OPT_DEVICE(c)                                                                          \
    {"-device", .kind = APP_FLAG, .dest = &(c)->device, .count = 1,                                \
     .help = "arrays in GPU memory (backend cuda, or auto with GPUs; exit status 1 where the "     \
             "run has none); otherwise host arrays, which backend cuda streams through the GPU"}
#define APP_OPT_BUDGET(c)                                                                          \
    {"-budget", "GB", APP_REAL, &(c)->budget_gb, 0, APP_BUDGET_MAX,                                \
     .help = "device memory the plan may use, above 0 and at most 10^6 (default: free less 1 "    \
             "GiB)"}
#define APP_OPT_BATCH(c)                                                                           \
    {"-batch", "B", APP_INT, &(c)->batch, 1, APP_SIZE_MAX,                                         \
     .help = "fields per call, 1 to 2^30 (default 1)"}
#define APP_OPT_INPLACE(c)                                                                         \
    {"-inplace", .kind = APP_FLAG, .dest = &(c)->inplace, .count = 1,                              \
     .help = "the output overwrites the input"}
#define APP_OPT_MEASURE(c)                                                                         \
    {"-measure", .kind = APP_FLAG, .dest = &(c)->measure, .count = 1,                              \
     .help = "measured planning: FFTW_MEASURE, and on several ranks the decomposition and "    \
     "exchange timed (default FFTW_ESTIMATE)"}
#define APP_OPT_RUNS(c)                                                                            \
    {"-n", "RUNS", APP_INT, &(c)->runs, 1, APP_RUNS_MAX,                                           \
     .help = "timed runs after the check, 1 to 10^6 (default 5)"}
#define APP_OPT_SEED(c)                                                                            \
    {"-seed", "S", APP_UINT, &(c)->seed, 0, UINT_MAX,                                              \
     .help = "the input's seed, 0 to 2^32 - 1 (default 2026)"}
/* -no-check: clears the int at flag (a command's "check the result" switch). */
#define APP_OPT_NO_CHECK(flag)                                                                     \
    {"-no-check", .kind = APP_FLAG, .dest = (flag), .count = 0, .help = "skip the check"}
#define APP_OPT_PROGRESS(c)                                                                        \
    {"-progress", "S", APP_CUSTOM, &(c)->progress, .parse = app_parse_seconds,                     \
     .help = APP_PROGRESS_HELP}
#define APP_PROGRESS_HELP                                                                          \
    "progress on stderr every S seconds (from 0, none, to 86400; default 5), after the first S: "  \
    "a line with percent and time left, a bar on a terminal; inside long library calls too "      \
    "(a stencil run's passes, a multiply's panels over ranks)"
#define APP_OPT_JSON(c)                                                                            \
    {"-json", "FILE", APP_TEXT, &(c)->json,                                                        \
     .help = "also write the results as JSON (docs/api.md gives each command's keys); a place "    \
             "that cannot be written stops the run before the work"}

/* Rank 0, a usage error when the grid's points exceed APP_POINTS_MAX: APP_USAGE, else 0. */
int app_check_points(const app_cmd *cmd, const app_args *a, const char *dims);

/* Collective, before the work: whether rank 0 can write the -json file (when one is given):
 * 0, else 1 with why printed, prefixed by who. */
int app_json_check(const char *who, const app_args *a);

/* Rank 0: writes the JSON object o (NULL: none could be made) to path and deletes o, every
 * status checked: 0, else 1 with why printed, prefixed by who (a regular file left half
 * written is removed). */
int app_json_write(const char *who, cJSON *o, const char *path);

/* Rank 0: "who: the status's name: the context's last error" (ctx NULL: the last error of no
 * context), the last part left out when there is none. */
void app_say_failure(const char *who, int st, const tide_context *ctx);

/* Collective: the context the arguments ask for (backend, device budget); prints why it could
 * not be made, prefixed by who. */
int app_context_create(const char *who, const app_args *a, tide_context **ctx);

/* 1 for the exchanges of device arrays GPU to GPU whose all-to-all rate tide_measure_exchange
 * measures on device memory (NCCL, CUDA-aware MPI, direct stores). */
int app_exchange_gpu(tide_exchange x);

/* What runs the CPU backend's matrix multiplies, into what: "OpenBLAS <its configuration>,
 * kernels <the kernels it picked>", "a CBLAS" or "none (built without a CBLAS)". When OpenBLAS
 * runs kernels older than the CPU's vector units (it picks them by the CPU model it knows, and
 * falls back on SSE3 kernels for a model it does not), note gets a sentence saying so and how
 * to pick others (OPENBLAS_CORETYPE), else "". Local. */
void app_blas(char *what, size_t len, char *note, size_t nlen);

/* Stops on every rank alike (a collective Tide call fails the same way everywhere): prints
 * the status and the context's message, sets rc to 1 and goes to done. */
#define APP_CHECK(who, call)                                                                    \
    do {                                                                                        \
        int st_ = (call);                                                                       \
        if (st_) {                                                                              \
            app_say_failure(who, st_, ctx);                                               \
            rc = 1;                                                                             \
            goto done;                                                                          \
        }                                                                                       \
    } while (0)

/* ---- timing ---------------------------------------------------------------------------------- */

/* One step of a timed run: a Tide status. */
typedef int (*app_step)(void *arg);

/* Collective: runs times `run`, each after `prepare` (not timed; may be NULL) and a barrier;
 * times[r] is the slowest rank's time of run r divided by per (the calls one run makes).
 * Progress on rank 0's stderr every `every` seconds (0: none), named who. Returns the first
 * failing status (0 on success). */
int app_time_runs(const char *who, double every, int runs, app_step prepare, app_step run,
                  void *arg, double per, double *times);

typedef struct {
    double median, min, max, avg;
} app_stats;

/* The statistics of times[0..runs) (runs >= 1); sorts times. */
void app_stats_of(double *times, int runs, app_stats *s);

/* Rank 0: the heFFTe speed3d timing keys: Plan creation time, Time per run, Min/Max/Avg,
 * Performance (flops per run), Memory usage (bytes per rank). */
void app_say_timing(double plan_s, const app_stats *s, double flops, double mem_bytes);

/* A -json file's object (docs/api.md) with the members every subcommand writes: version,
 * command, precision, size, ranks, threads, batch, backend, plan, exchanges, inplace and
 * runs. The app_json_* functions add members to it; cJSON makes the text (strings escaped). */
cJSON *app_json_head(const char *command, const app_args *a, int ranks, int threads,
                     tide_backend backend, const char *plan, long long exchanges);

/* The timing keys as members: plan_seconds, time_per_run, min, max, avg, gflops (flops per
 * run) and memory_mb_per_rank. */
void app_json_timing(cJSON *o, double plan_s, const app_stats *s, double flops,
                     double mem_bytes);

/* ---- the bound a run is measured against ----------------------------------------------------- */

/* The array size `tide fft` measures rates on. */
#define APP_RATE_BYTES ((size_t)512 << 20)

/* Collective: this rank's rates, measured now on every rank at once on arrays of `bytes`
 * (each repetition started together, as a run loads the shared links). */
int app_measure_rates(tide_context *ctx, size_t bytes, tide_rates *r);

/* Collective: an array size for app_measure_rates that matches the run's data: the largest
 * rank's bytes, at least 1 MiB (timer resolution), at most APP_RATE_BYTES; the same on every
 * rank. */
size_t app_rate_bytes(double data);

/* The ranks of this rank's node: their GPU indices (-1: none) and one value each, in node
 * rank order, me this rank's place. */
typedef struct {
    int n, me;
    int *device;
    double *value;
} app_node;

/* Collective over MPI_COMM_WORLD: *nd for this rank's device and value; 0 (nothing held) where
 * a rank of the node could not allocate. app_node_free releases it. */
int app_node_peers(int device, double value, app_node *nd);
void app_node_free(app_node *nd);

/* Collective: the sum over the ranks of rate, a rate of this rank's GPU when gpu (each GPU
 * counted once: ranks of a node sharing one time-slice it, each measuring the card alone, so
 * the largest of theirs stands for it), else of memory the ranks load at once. */
double app_sum_rates(tide_context *ctx, double rate, int gpu);

/* Seconds to move bytes at gbps GB/s. */
double app_seconds(double bytes, double gbps);

/* Seconds of the local passes of a run whose data stays in the memory they run in: the
 * cost's fft_bytes read and written at the device copy rate (device arrays) or the host copy
 * rate (host memory on the CPU). */
double app_bound_local(double fft_bytes, int device, const tide_rates *r);

/* Seconds of host arrays crossing PCIe: up and down bytes per run, batch fields. One round
 * trip (trips 1) cannot overlap a field's two directions: the first field's upload and the
 * last one's download run alone at the one-direction rates, the rest beside another field's
 * transfer at the both-directions rate. Two or more round trips overlap one pass's download
 * with the next one's upload: all at the both-directions rate. */
double app_bound_pcie(double up, double down, int batch, int trips, const tide_rates *r);

/* Collective: seconds of exchanges that do not overlap the local work: bytes leaving the rank
 * at the all-to-all rate of `how` measured now (*gbps), on arrays of the largest rank's data
 * (capped at 512 MiB, the same size on every rank). */
int app_bound_exchange(tide_context *ctx, tide_exchange how, double data, double bytes,
                       double *seconds, double *gbps);

/* Rank 0: "Bound: ... (s) (what); bound / time ..." */
void app_say_bound(double bound, const char *what, double time);

/* A member name: v, or null when v is not finite. */
void app_json_real(cJSON *o, const char *name, double v);

/* Collective: the mean of a run's two costs (b NULL: a alone), each field the largest over
 * the ranks, on every rank: what one run costs the busiest rank. */
void app_cost_of(const tide_fft_cost *a, const tide_fft_cost *b, tide_fft_cost *out);

/* The figures a performance model needs, as members: location and exchange, bound_seconds
 * and bound_ratio (null without a bound), the plan's cost ("cost") and the rates measured in
 * the run ("rates", GB/s; r NULL: none measured, exchange <= 0: not measured). */
void app_json_figures(cJSON *o, tide_location loc, tide_exchange x, const tide_fft_cost *c,
                      const tide_rates *r, double xrate, double bound, double time);
/* ... its "rates" object alone: r's rates (NULL: none) and the exchange rate xrate (GB/s;
 * null where not measured). */
void app_json_rates(cJSON *o, const tide_rates *r, double xrate);

#endif
