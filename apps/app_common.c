/* app_common.c: arguments, -json files, timing and bounds shared by the `tide` subcommands. */
#include "app_common.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tide_app.h"

/* ---- arguments ------------------------------------------------------------------------------- */

void app_args_init(app_args *a)
{
    memset(a, 0, sizeof *a);
    a->batch = 1;
    a->runs = 5;
    a->seed = 2026;
}

int app_pick(const char *s, const char *const *names, int count)
{
    for (int i = 0; i < count; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

int app_wants_help(int argc, char **argv, int dash_h)
{
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-help") ||
            (dash_h && !strcmp(argv[i], "-h")))
            return 1;
    return 0;
}

int app_parse_head(int argc, char **argv, const char *cmd, const char *usage, int dash_h,
                   int lead, int lead_bad, app_args *a)
{
    static const char *const grid[3] = {"NX", "NY", "NZ"}, *const mnk[3] = {"M", "N", "K"};
    if (app_wants_help(argc, argv, dash_h)) {
        tide_say("%s", usage);
        return 1;
    }
    int want = lead + 5;
    if (argc < want) {
        tide_warn("tide %s: expected %d positional arguments, got %d\n\n%s", cmd, want, argc,
                  usage);
        return 2;
    }
    char why[200] = "";
    if (lead_bad ||
        app_parse_positional(argv + lead, strcmp(cmd, "gemm") ? grid : mnk, a, why, sizeof why)) {
        char got[256] = "";
        for (int i = 0, used = 0; i < want && used < (int)sizeof got; i++)
            used += snprintf(got + used, sizeof got - (size_t)used, "%s%s", i ? " " : "",
                             argv[i]);
        tide_warn("tide %s: bad positional arguments '%s'%s%s\n\n%s", cmd, got, *why ? ": " : "",
                  why, usage);
        return 2;
    }
    return 0;
}

int app_parse_positional(char **argv, const char *const dims[3], app_args *a, char *err,
                         size_t len)
{
    static const char *const backends[] = {"auto", "cpu", "cuda"}, *precs[] = {"double", "float"};
    static const tide_backend by_name[] = {TIDE_BACKEND_AUTO, TIDE_BACKEND_CPU,
                                           TIDE_BACKEND_CUDA};
    int b = 0;
    if (app_name_opt("backend", argv[0], backends, 3, &b, err, len) ||
        app_name_opt("precision", argv[1], precs, 2, &a->prec, err, len))
        return -1;
    for (int d = 0; d < 3; d++)
        if (app_int_opt(dims[d], argv[2 + d], 1, APP_SIZE_MAX, &a->n[d], err, len))
            return -1;
    if (app_product(a->n, 3, APP_POINTS_MAX) < 0)
        return snprintf(err, len, "%s %s %s: %d x %d x %d points, more than 2^62", dims[0], dims[1],
                        dims[2], a->n[0], a->n[1], a->n[2]), -1;
    a->backend = by_name[b];
    return 0;
}

/* Options without a value: the field they set and the value. */
typedef struct {
    const char *name;
    size_t field;
    int value;
} flag;

static const flag flags[] = {
    {"-slabs", offsetof(app_args, decomp), TIDE_DECOMP_SLABS},
    {"-pencils", offsetof(app_args, decomp), TIDE_DECOMP_PENCILS},
    {"-a2av", offsetof(app_args, exchange), TIDE_EXCHANGE_A2AV},
    {"-p2p", offsetof(app_args, exchange), TIDE_EXCHANGE_P2P},
    {"-nccl", offsetof(app_args, exchange), TIDE_EXCHANGE_NCCL},
    {"-cuda-mpi", offsetof(app_args, exchange), TIDE_EXCHANGE_CUDA_MPI},
    {"-device", offsetof(app_args, device), 1},
    {"-inplace", offsetof(app_args, inplace), 1},
    {"-measure", offsetof(app_args, measure), 1},
};

int app_parse_option(int argc, char **argv, int *i, app_args *a, char *err, size_t len)
{
    const char *o = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++)
        if (!strcmp(o, flags[k].name)) {
            *(int *)((char *)a + flags[k].field) = flags[k].value;
            return 1;
        }
    long long seed = a->seed;
    int bad;
    if (!strcmp(o, "-batch"))
        bad = app_int_opt(o, v, 1, APP_SIZE_MAX, &a->batch, err, len);
    else if (!strcmp(o, "-budget"))
        bad = app_real_opt(o, v, 0, APP_BUDGET_MAX, &a->budget_gb, err, len);
    else if (!strcmp(o, "-n"))
        bad = app_int_opt(o, v, 1, APP_RUNS_MAX, &a->runs, err, len);
    else if (!strcmp(o, "-seed"))
        bad = app_ll_opt(o, v, 0, UINT_MAX, &seed, err, len);
    else if (!strcmp(o, "-json") && v)
        bad = !(a->json = v);
    else if (!strcmp(o, "-json"))
        bad = snprintf(err, len, "-json needs a file name") != 0;
    else
        return 0;
    a->seed = (unsigned)seed;
    *i += v != NULL;
    return bad ? -1 : 1;
}

int app_grid_ranks(const char *name, char sep, const int *g, int k, char *err, size_t len)
{
    int P;
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    long long ranks = app_product(g, k, LLONG_MAX);
    if (ranks == P)
        return 0;
    char typed[96] = "", count[48], between[2] = {sep, 0};
    for (int d = 0, used = 0; d < k && used >= 0 && used < (int)sizeof typed; d++)
        used += snprintf(typed + used, sizeof typed - (size_t)used, "%s%d", d ? between : "",
                         g[d]);
    if (ranks < 0)
        snprintf(count, sizeof count, "more than %lld", LLONG_MAX);
    else
        snprintf(count, sizeof count, "%lld", ranks);
    snprintf(err, len, "%s %s has %s ranks, the run has %d", name, typed, count, P);
    return -1;
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

FILE *app_json_open(const char *who, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        tide_warn("%s: -json: cannot create %s: %s\n", who, path, strerror(errno));
    return f;
}

int app_json_close(const char *who, FILE *f, const char *path)
{
    char err[512];
    if (!app_close_file(f, path, err, sizeof err))
        return 0;
    tide_warn("%s: -json: %s\n", who, err);
    return 1;
}

int app_context_create(const char *who, const app_args *a, tide_context **ctx)
{
    tide_context_options copts;
    tide_context_options_init(&copts);
    copts.backend = a->backend;
    copts.device_budget = (size_t)(a->budget_gb * 1e9);
    int st = tide_context_create(MPI_COMM_WORLD, &copts, ctx);
    if (st)
        tide_warn("%s: %s: %s\n", who, tide_strerror(st), tide_last_error(NULL));
    return st;
}

const char *app_exchange_name(tide_exchange x)
{
    static const char *names[] = {"none", "a2av", "p2p", "nccl", "cuda-mpi"};
    return (unsigned)x < sizeof names / sizeof names[0] ? names[x] : "?";
}

/* ---- timing ---------------------------------------------------------------------------------- */

int app_time_runs(int runs, app_step prepare, app_step run, void *arg, double per,
                  double *times)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int progress = rank == 0 && isatty(STDERR_FILENO) && runs > 1;
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
        if (progress)
            fprintf(stderr, "\rrun %d/%d: %.4g s", r + 1, runs, tmax);
    }
    if (progress)
        fprintf(stderr, "\r%40s\r", "");
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

void app_json_head(FILE *f, const char *command, const app_args *a, int ranks, int threads,
                   tide_backend backend, const char *plan, int exchanges)
{
    fprintf(f,
            "{\"version\": \"%s\", \"command\": \"%s\", \"precision\": \"%s\", "
            "\"size\": [%d, %d, %d], \"ranks\": %d, \"threads\": %d, \"batch\": %d, "
            "\"backend\": \"%s\", \"plan\": \"%s\", \"exchanges\": %d, \"inplace\": %s, "
            "\"runs\": %d, ",
            tide_version(), command, a->prec == TIDE_DOUBLE ? "double" : "float", a->n[0],
            a->n[1], a->n[2], ranks, threads, a->batch,
            backend == TIDE_BACKEND_CUDA ? "cuda" : "cpu", plan, exchanges,
            a->inplace ? "true" : "false", a->runs);
}

void app_json_timing(FILE *f, double plan_s, const app_stats *s, double flops,
                     double mem_bytes)
{
    fprintf(f,
            " \"plan_seconds\": %.9g, \"time_per_run\": %.9g, \"min\": %.9g, \"max\": %.9g, "
            "\"avg\": %.9g, \"gflops\": %.6g, \"memory_mb_per_rank\": %.3f,\n",
            plan_s, s->median, s->min, s->max, s->avg, flops / s->median * 1e-9,
            mem_bytes / 1e6);
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

void app_json_real(FILE *f, const char *name, double v, const char *sep)
{
    if (isfinite(v))
        fprintf(f, "\"%s\": %.9g%s", name, v, sep);
    else
        fprintf(f, "\"%s\": null%s", name, sep);
}

/* A rate or time that was measured (> 0), else NaN: null in JSON. */
static double measured(double v) { return v > 0 ? v : NAN; }

void app_json_figures(FILE *f, tide_location loc, tide_exchange x, const tide_fft_cost *c,
                      const tide_rates *r, double xrate, double bound, double time)
{
    fprintf(f, " \"location\": \"%s\", \"exchange\": \"%s\", ",
            loc == TIDE_LOCATION_DEVICE ? "device" : "host",
            c->exchanges > 0 ? app_exchange_name(x) : "none");
    app_json_real(f, "bound_seconds", measured(bound), ", ");
    app_json_real(f, "bound_ratio", measured(bound) / time, ",\n");
    fprintf(f, " \"cost\": {\"flops\": %.17g, \"fft_bytes\": %.17g, \"move_bytes\": %.17g, "
            "\"exchange_bytes\": %.17g, \"h2d_bytes\": %.17g, \"d2h_bytes\": %.17g, "
            "\"exchanges\": %d, \"fft_passes\": %d},\n", c->flops, c->fft_bytes,
            c->move_bytes, c->exchange_bytes, c->h2d_bytes, c->d2h_bytes, c->exchanges,
            c->fft_passes);
    app_json_rates(f, r, xrate);
}

void app_json_rates(FILE *f, const tide_rates *r, double xrate)
{
    tide_rates none = {0, 0, 0, 0, 0};
    const tide_rates *q = r ? r : &none;
    fprintf(f, " \"rates\": {");
    app_json_real(f, "host_copy", measured(q->host_copy), ", ");
    app_json_real(f, "h2d", measured(q->h2d), ", ");
    app_json_real(f, "d2h", measured(q->d2h), ", ");
    app_json_real(f, "both", measured(q->both), ", ");
    app_json_real(f, "d2d", measured(q->d2d), ", ");
    app_json_real(f, "exchange", measured(xrate), "},\n");
}
