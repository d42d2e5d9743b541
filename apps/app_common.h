/*
 * app_common.h: what the computing subcommands of `tide` (fft, poisson) share: the arguments
 * they all take, the timing of runs and its statistics, the heFFTe-style timing keys, and the
 * bound a run is measured against (rates measured in the same run).
 */
#ifndef TIDE_APP_COMMON_H
#define TIDE_APP_COMMON_H

#include <stdio.h>
#include "app_util.h"
#include "tide.h"

/* ---- arguments ------------------------------------------------------------------------------- */

/* The arguments every computing subcommand takes: the positional backend, precision and grid,
 * and the options of app_parse_option. */
typedef struct {
    int backend, prec, n[3];
    int decomp, exchange, device, inplace, measure, batch, runs;
    double budget_gb;
    unsigned seed;
    const char *json;
} app_args;

/* The usage's paragraph on the values every subcommand takes, and on -json's file. */
#define APP_USAGE_VALUES                                                                           \
    "Values: sizes 1 to 2^30 (their product at most 2^62), -batch 1 to 2^30, -n (-runs) 1 to\n"    \
    "10^6, -seed 0 to 2^32 - 1, -budget above 0 and at most 10^6 GB, process grids' factors\n"     \
    "1 to 2^31 - 1; a value out of range stops every rank with its range (exit status 2).\n"       \
    "-json's file is checked before the work (created and removed, or opened when it\n"            \
    "exists): a place that cannot be written stops the run at once (exit status 1); a write\n"     \
    "that fails at the end (a full disk) is exit status 1 too, a part written removed.\n"

/* Zero, with batch 1, 5 runs and seed 2026. */
void app_args_init(app_args *a);

/* The index of s in names, or -1. */
int app_pick(const char *s, const char *const *names, int count);

/* Whether argv holds --help or -help, or, with dash_h, -h. */
int app_wants_help(int argc, char **argv, int dash_h);

/* "auto|cpu|cuda float|double NX NY NZ" from argv[0..4] (sizes 1..APP_SIZE_MAX, their product
 * at most APP_POINTS_MAX; dims names them in messages): 0, else -1 with why in err. */
int app_parse_positional(char **argv, const char *const dims[3], app_args *a, char *err,
                         size_t len);

/* The start of every subcommand's parse. --help or -help (and -h with dash_h): the usage on
 * stdout, 1. Fewer than lead + 5 arguments, lead_bad (the caller's verdict on its `lead`
 * leading arguments), or a bad "auto|cpu|cuda float|double NX NY NZ" after them (M N K for
 * gemm): the reason and the usage on stderr, 2. Else 0, a filled. */
int app_parse_head(int argc, char **argv, const char *cmd, const char *usage, int dash_h,
                   int lead, int lead_bad, app_args *a);

/* The option at argv[*i] when it is one every subcommand takes (-slabs, -pencils, -a2av, -p2p,
 * -nccl, -cuda-mpi, -device, -inplace, -measure, -batch B, -budget GB, -n RUNS, -seed S,
 * -json FILE): 1 taken (*i moved to its last value), 0 not one of them, -1 taken but its value
 * is missing or out of range (why in err: the option, its value and the valid range). */
int app_parse_option(int argc, char **argv, int *i, app_args *a, char *err, size_t len);

/* Whether the process grid g[0..k) has exactly the ranks of the run: 0, else -1 with
 * "NAME A B C has N ranks, the run has P" in err, the factors joined by sep (the product is
 * never formed past LLONG_MAX: no overflow). */
int app_grid_ranks(const char *name, char sep, const int *g, int k, char *err, size_t len);

/* Collective, before the work: whether rank 0 can write the -json file (when one is given):
 * 0, else 1 with why printed, prefixed by who. */
int app_json_check(const char *who, const app_args *a);

/* Rank 0: the -json file path opened for writing, else NULL with why printed. */
FILE *app_json_open(const char *who, const char *path);

/* Rank 0: closes the -json file f, every status checked: 0, else 1 with why printed (a
 * regular file removed: no half-written JSON is left). */
int app_json_close(const char *who, FILE *f, const char *path);

/* Collective: the context the arguments ask for (backend, device budget); prints why it could
 * not be made, prefixed by who. */
int app_context_create(const char *who, const app_args *a, tide_context **ctx);

/* The name of an exchange backend: none (AUTO, no exchange), a2av, p2p, nccl, cuda-mpi. */
const char *app_exchange_name(tide_exchange x);

/* Stops on every rank alike (a collective Tide call fails the same way everywhere): prints
 * the status and the context's message, sets rc to 1 and goes to done. */
#define APP_CHECK(who, call)                                                                    \
    do {                                                                                        \
        int st_ = (call);                                                                       \
        if (st_) {                                                                              \
            tide_warn("%s: %s: %s\n", who, tide_strerror(st_), tide_last_error(ctx));           \
            rc = 1;                                                                             \
            goto done;                                                                          \
        }                                                                                       \
    } while (0)

/* ---- timing ---------------------------------------------------------------------------------- */

/* One step of a timed run: a Tide status. */
typedef int (*app_step)(void *arg);

/* Collective: runs times `run`, each after `prepare` (not timed; may be NULL) and a barrier;
 * times[r] is the slowest rank's time of run r divided by per (the calls one run makes).
 * Shows progress on rank 0's terminal. Returns the first failing status (0 on success). */
int app_time_runs(int runs, app_step prepare, app_step run, void *arg, double per,
                  double *times);

typedef struct {
    double median, min, max, avg;
} app_stats;

/* The statistics of times[0..runs) (runs >= 1); sorts times. */
void app_stats_of(double *times, int runs, app_stats *s);

/* Rank 0: the heFFTe speed3d timing keys: Plan creation time, Time per run, Min/Max/Avg,
 * Performance (flops per run), Memory usage (bytes per rank). */
void app_say_timing(double plan_s, const app_stats *s, double flops, double mem_bytes);

/* Opens a -json file's object with the members every subcommand writes: version, command,
 * precision, size, ranks, threads, batch, backend, plan, exchanges, inplace and runs, one
 * line ending with ", ". */
void app_json_head(FILE *f, const char *command, const app_args *a, int ranks, int threads,
                   tide_backend backend, const char *plan, int exchanges);

/* The same figures as JSON members, one line, ending with ",\n". */
void app_json_timing(FILE *f, double plan_s, const app_stats *s, double flops,
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

/* A JSON member "name": v, or null when v is not finite, then sep. */
void app_json_real(FILE *f, const char *name, double v, const char *sep);

/* Collective: the mean of a run's two costs (b NULL: a alone), each field the largest over
 * the ranks, on every rank: what one run costs the busiest rank. */
void app_cost_of(const tide_fft_cost *a, const tide_fft_cost *b, tide_fft_cost *out);

/* The figures a performance model needs, as JSON members ending with ",\n": location and
 * exchange, bound_seconds and bound_ratio (null without a bound), the plan's cost ("cost")
 * and the rates measured in the run ("rates", GB/s; r NULL: none measured, exchange <= 0:
 * not measured). */
void app_json_figures(FILE *f, tide_location loc, tide_exchange x, const tide_fft_cost *c,
                      const tide_rates *r, double xrate, double bound, double time);
/* ... its "rates" object alone: r's rates (NULL: none) and the exchange rate xrate (GB/s;
 * null where not measured), then ",\n". */
void app_json_rates(FILE *f, const tide_rates *r, double xrate);

#endif
