/* app_common.c: arguments, -json files, timing and bounds shared by the `tide` subcommands. */
#include "app_common.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "tide_app.h"
#include "tide_config.h"
#if TIDE_HAVE_CBLAS
#include <cblas.h>
#endif

/* ---- arguments ------------------------------------------------------------------------------- */

const char *const app_backend_names[3] = {"auto", "cpu", "cuda"};
const int app_backend_values[3] = {TIDE_BACKEND_AUTO, TIDE_BACKEND_CPU, TIDE_BACKEND_CUDA};
const char *const app_precision_names[2] = {"float", "double"};
const int app_precision_values[2] = {TIDE_FLOAT, TIDE_DOUBLE};

void app_args_init(app_args *a)
{
    memset(a, 0, sizeof *a);
    a->batch = 1;
    a->runs = 5;
    a->seed = 2026;
    a->progress = APP_PROGRESS_EVERY;
}

int app_check_points(const app_cmd *cmd, const app_args *a, const char *dims)
{
    if (app_product(a->n, 3, APP_POINTS_MAX) >= 0)
        return 0;
    return app_usage_error(cmd->name, "%s %d %d %d: %d x %d x %d points, more than 2^62", dims,
                           a->n[0], a->n[1], a->n[2], a->n[0], a->n[1], a->n[2]);
}

int app_json_check(const char *who, const app_args *a)
{
    char err[512] = "";
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int bad = a->json && rank == 0 && app_probe_file(a->json, err, sizeof err);
    if (!app_agree(bad, NULL, 0))
        return 0;
    tide_warn("%s: -json: %s\n", who, err);
    return 1;
}

int app_json_write(const char *who, cJSON *o, const char *path)
{
    char *text = o ? cJSON_Print(o) : NULL, err[512];
    cJSON_Delete(o);
    if (!text) {
        tide_warn("%s: -json: out of memory making the JSON text\n", who);
        return 1;
    }
    FILE *f = fopen(path, "w");
    int bad = !f;
    if (!f)
        tide_warn("%s: -json: cannot create %s: %s\n", who, path, strerror(errno));
    else if (fprintf(f, "%s\n", text), app_close_file(f, path, err, sizeof err))
        bad = 1, tide_warn("%s: -json: %s\n", who, err); /* a failed print shows at the close */
    cJSON_free(text);
    return bad;
}

void app_say_failure(const char *who, int st, const tide_context *ctx)
{
    const char *why = tide_last_error(ctx);
    tide_warn("%s: %s%s%s\n", who, tide_strerror(st), why && *why ? ": " : "", why ? why : "");
}

int app_context_create(const char *who, const app_args *a, tide_context **ctx)
{
    tide_context_options copts;
    tide_context_options_init(&copts);
    copts.backend = a->backend;
    copts.device_budget = (size_t)(a->budget_gb * 1e9);
    int st = tide_context_create(MPI_COMM_WORLD, &copts, ctx);
    if (st)
        app_say_failure(who, st, NULL);
    else /* the library's lines inside long calls, as often as the app's own */
        tide_context_set_progress(*ctx, a->progress);
    return st;
}

int app_exchange_gpu(tide_exchange x)
{
    return x == TIDE_EXCHANGE_NCCL || x == TIDE_EXCHANGE_CUDA_MPI || x == TIDE_EXCHANGE_DIRECT;
}

/* ---- the CPU's BLAS ------------------------------------------------------------------------- */

void app_blas(char *what, size_t len, char *note, size_t nlen)
{
    note[0] = '\0';
#if TIDE_HAVE_OPENBLAS
    const char *core = openblas_get_corename();
    snprintf(what, len, "%s, kernels %s", openblas_get_config(), core);
    /* OpenBLAS's kernel sets for x86 CPUs without AVX: a CPU with AVX2 or AVX-512 running
     * one of them runs its multiplies at a fraction of its speed */
    static const char *const sse[] = {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem",
                                      "Atom", "Opteron", "Opteron(SSE3)", "Barcelona"};
    int old = 0;
    for (size_t i = 0; i < sizeof sse / sizeof sse[0]; i++)
        old |= !strcasecmp(core, sse[i]);
#if defined(__x86_64__)
    __builtin_cpu_init();
    int avx512 = __builtin_cpu_supports("avx512f"), avx2 = __builtin_cpu_supports("avx2");
#else
    int avx512 = 0, avx2 = 0;
#endif
    if (old && (avx512 || avx2))
        snprintf(note, nlen, "OpenBLAS runs its %s (SSE) kernels on this CPU, which has %s: "
                 "its multiplies run at a fraction of the CPU's speed; OPENBLAS_CORETYPE=%s "
                 "picks kernels for it", core, avx512 ? "AVX-512" : "AVX2",
                 avx512 ? "SkylakeX" : "Haswell");
#elif TIDE_HAVE_CBLAS
    snprintf(what, len, "a CBLAS");
#else
    snprintf(what, len, "none (built without a CBLAS)");
#endif
}

/* ---- timing ---------------------------------------------------------------------------------- */

int app_time_runs(const char *who, double every, int runs, app_step prepare, app_step run,
                  void *arg, double per, double *times)
{
    app_progress p;
    app_progress_begin(&p, who, "timed runs", runs, every);
    for (int r = 0; r < runs; r++) {
        int st = prepare ? prepare(arg) : 0;
        if (st)
            return st;
        MPI_Barrier(MPI_COMM_WORLD);
        double s = MPI_Wtime();
        if ((st = run(arg)))
            return st;
        double t = (MPI_Wtime() - s) / per, tmax;
        MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        times[r] = tmax;
        app_progress_step(&p, r + 1);
    }
    app_progress_end(&p);
    return 0;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

void app_stats_of(double *times, int runs, app_stats *s)
{
    double tmin = times[0], tmax = times[0], tsum = 0;
    for (int r = 0; r < runs; r++) { /* in run order, before sorting */
        tmin = fmin(tmin, times[r]);
        tmax = fmax(tmax, times[r]);
        tsum += times[r];
    }
    qsort(times, (size_t)runs, sizeof(double), cmp_double);
    s->median = runs % 2 ? times[runs / 2] : (times[runs / 2 - 1] + times[runs / 2]) / 2;
    s->min = tmin;
    s->max = tmax;
    s->avg = tsum / runs;
}

void app_say_timing(double plan_s, const app_stats *s, double flops, double mem_bytes)
{
    tide_say("Plan creation time: %.6g (s)\n", plan_s);
    tide_say("Time per run: %.6g (s)\n", s->median);
    tide_say("Min/Max/Avg: %.6g %.6g %.6g (s)\n", s->min, s->max, s->avg);
    tide_say("Performance: %.6g GFlop/s\n", flops / s->median * 1e-9);
    tide_say("Memory usage: %.1f MB/rank\n", mem_bytes / 1e6);
}

cJSON *app_json_head(const char *command, const app_args *a, int ranks, int threads,
                     tide_backend backend, const char *plan, long long exchanges)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "version", tide_version());
    cJSON_AddStringToObject(o, "command", command);
    cJSON_AddStringToObject(o, "precision", a->prec == TIDE_DOUBLE ? "double" : "float");
    cJSON_AddItemToObject(o, "size", cJSON_CreateIntArray(a->n, 3));
    cJSON_AddNumberToObject(o, "ranks", ranks);
    cJSON_AddNumberToObject(o, "threads", threads);
    cJSON_AddNumberToObject(o, "batch", a->batch);
    cJSON_AddStringToObject(o, "backend", backend == TIDE_BACKEND_CUDA ? "cuda" : "cpu");
    cJSON_AddStringToObject(o, "plan", plan);
    cJSON_AddNumberToObject(o, "exchanges", (double)exchanges);
    cJSON_AddBoolToObject(o, "inplace", a->inplace);
    cJSON_AddNumberToObject(o, "runs", a->runs);
    return o;
}

void app_json_timing(cJSON *o, double plan_s, const app_stats *s, double flops,
                     double mem_bytes)
{
    app_json_real(o, "plan_seconds", plan_s);
    app_json_real(o, "time_per_run", s->median);
    app_json_real(o, "min", s->min);
    app_json_real(o, "max", s->max);
    app_json_real(o, "avg", s->avg);
    app_json_real(o, "gflops", flops / s->median * 1e-9);
    app_json_real(o, "memory_mb_per_rank", mem_bytes / 1e6);
}

/* ---- the bound a run is measured against ----------------------------------------------------- */

int app_measure_rates(tide_context *ctx, size_t bytes, tide_rates *r)
{
    return tide_measure_rates_together(ctx, bytes, r);
}

size_t app_rate_bytes(double data)
{
    double most = app_max(data), lo = (double)(1 << 20), hi = (double)APP_RATE_BYTES;
    return (size_t)(most < lo ? lo : most > hi ? hi : most);
}

int app_node_peers(int device, double value, app_node *nd)
{
    MPI_Comm node;
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &nd->n);
    MPI_Comm_rank(node, &nd->me);
    nd->device = malloc(sizeof(int) * (size_t)nd->n);
    nd->value = malloc(sizeof(double) * (size_t)nd->n);
    int ok = nd->device && nd->value, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, node);
    if (all) {
        MPI_Allgather(&device, 1, MPI_INT, nd->device, 1, MPI_INT, node);
        MPI_Allgather(&value, 1, MPI_DOUBLE, nd->value, 1, MPI_DOUBLE, node);
    }
    MPI_Comm_free(&node);
    if (!all)
        app_node_free(nd);
    return all;
}

void app_node_free(app_node *nd)
{
    free(nd->device);
    free(nd->value);
    nd->device = NULL, nd->value = NULL;
}

double app_sum_rates(tide_context *ctx, double rate, int gpu)
{
    tide_device_info dev = {.device = -1};
    if (gpu)
        tide_context_device(ctx, &dev);
    int first = 1;
    double mine = rate, sum = 0;
    app_node nd;
    if (app_node_peers(dev.device, rate, &nd)) {
        for (int i = 0; i < nd.n && dev.device >= 0; i++)
            if (nd.device[i] == dev.device) {
                first = first && i >= nd.me; /* the node's first rank on this GPU speaks */
                mine = nd.value[i] > mine ? nd.value[i] : mine;
            }
        app_node_free(&nd);
    }
    double part = first ? mine : 0;
    MPI_Allreduce(&part, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return sum;
}

double app_seconds(double bytes, double gbps)
{
    return bytes / (gbps * 1e9);
}

double app_bound_local(double fft_bytes, int device, const tide_rates *r)
{
    return app_seconds(fft_bytes, device ? r->d2d : r->host_copy);
}

double app_bound_pcie(double up, double down, int batch, int trips, const tide_rates *r)
{
    if (trips >= 2)
        return (up + down) / (r->both * 1e9);
    return (up + down) * (batch - 1) / batch / (r->both * 1e9) + up / batch / (r->h2d * 1e9) +
           down / batch / (r->d2h * 1e9);
}

int app_bound_exchange(tide_context *ctx, tide_exchange how, double data, double bytes,
                       double *seconds, double *gbps)
{
    double cap = 512.0 * (1 << 20), most = app_max(data), rate = 0;
    int st = tide_measure_exchange(ctx, how, (size_t)(most < cap ? most : cap), &rate);
    if (st)
        return st;
    *seconds = app_seconds(bytes, rate);
    *gbps = rate;
    return 0;
}

void app_say_bound(double bound, const char *what, double time)
{
    tide_say("Bound: %.6g (s) (%s); bound / time %.3f\n", bound, what, bound / time);
}

void app_cost_of(const tide_fft_cost *a, const tide_fft_cost *b, tide_fft_cost *out)
{
    const tide_fft_cost *c = b ? b : a;
    double v[9] = {(a->flops + c->flops) / 2, (a->fft_bytes + c->fft_bytes) / 2,
                   (a->move_bytes + c->move_bytes) / 2,
                   (a->exchange_bytes + c->exchange_bytes) / 2,
                   (a->h2d_bytes + c->h2d_bytes) / 2, (a->d2h_bytes + c->d2h_bytes) / 2,
                   (a->exchanges + c->exchanges) / 2.0, (a->fft_passes + c->fft_passes) / 2.0,
                   (a->cpu_seconds + c->cpu_seconds) / 2};
    double m[9];
    MPI_Allreduce(v, m, 9, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    *out = (tide_fft_cost){m[0], m[1], m[2], m[3], m[4], m[5], (int)m[6], (int)m[7], m[8]};
}

void app_json_real(cJSON *o, const char *name, double v)
{
    if (isfinite(v))
        cJSON_AddNumberToObject(o, name, v);
    else
        cJSON_AddNullToObject(o, name);
}

/* A rate or time that was measured (> 0), else NaN: null in JSON. */
static double measured(double v) { return v > 0 ? v : NAN; }

void app_json_figures(cJSON *o, tide_location loc, tide_exchange x, const tide_fft_cost *c,
                      const tide_rates *r, double xrate, double bound, double time)
{
    cJSON_AddStringToObject(o, "location", loc == TIDE_LOCATION_DEVICE ? "device" : "host");
    cJSON_AddStringToObject(o, "exchange", c->exchanges > 0 ? app_exchange_name(x) : "none");
    app_json_real(o, "bound_seconds", measured(bound));
    app_json_real(o, "bound_ratio", measured(bound) / time);
    cJSON *k = cJSON_AddObjectToObject(o, "cost");
    cJSON_AddNumberToObject(k, "flops", c->flops);
    cJSON_AddNumberToObject(k, "fft_bytes", c->fft_bytes);
    cJSON_AddNumberToObject(k, "move_bytes", c->move_bytes);
    cJSON_AddNumberToObject(k, "exchange_bytes", c->exchange_bytes);
    cJSON_AddNumberToObject(k, "h2d_bytes", c->h2d_bytes);
    cJSON_AddNumberToObject(k, "d2h_bytes", c->d2h_bytes);
    cJSON_AddNumberToObject(k, "exchanges", c->exchanges);
    cJSON_AddNumberToObject(k, "fft_passes", c->fft_passes);
    app_json_rates(o, r, xrate);
}

void app_json_rates(cJSON *o, const tide_rates *r, double xrate)
{
    tide_rates none = {0, 0, 0, 0, 0};
    const tide_rates *q = r ? r : &none;
    cJSON *k = cJSON_AddObjectToObject(o, "rates");
    app_json_real(k, "host_copy", measured(q->host_copy));
    app_json_real(k, "h2d", measured(q->h2d));
    app_json_real(k, "d2h", measured(q->d2h));
    app_json_real(k, "both", measured(q->both));
    app_json_real(k, "d2d", measured(q->d2d));
    app_json_real(k, "exchange", measured(xrate));
}
