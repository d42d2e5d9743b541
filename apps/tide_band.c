/*
 * tide_band.c: `tide band`: plan, verify and time x <- A^S x for a band matrix A
 * (tide_band_*), printing heFFTe speed3d's keys like the other subcommands, and the rate
 * against the memory bound: the bytes one step reads and writes at the copy rate measured now.
 *
 * The check is bitwise, as tide.h promises: every backend, rank count and grouping of steps
 * computes each row with the same operations in the same order. Up to CHECK_TERMS matrix
 * entries times steps, the result is compared with the naive oracle (tide_ref_band, no Tide
 * code) on the whole matrix; beyond, with a second plan doing one step per pass.
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "app_common.h"
#include "reference.h"
#include "tide.h"
#include "tide_app.h"

/* The most entries x steps the oracle computes (a few seconds on one core). */
#define CHECK_TERMS (1LL << 31)

static const char *about =
    "Plans x <- A^S x for an N x N band matrix A with KL diagonals below the main one and KU\n"
    "above (tide_band_*), fills A and x with deterministic random values (a hash of each\n"
    "entry's row and diagonal, and of each row, with the seed; A's entries in\n"
    "[-1.7, 1.7) / sqrt(KL + KU + 1), so powers neither vanish nor blow up), checks the result\n"
    "bitwise, then times RUNS runs of S steps, each from the same x. On P > 1 ranks rank r\n"
    "holds the rows [r N / P, (r + 1) N / P), and the plan exchanges a halo of K KL rows above\n"
    "and K KU below before each pass of K steps. Time per run is the median of the slowest\n"
    "rank's. The check: up to 2^31 matrix entries times steps, the naive serial oracle\n"
    "(tide_ref_band) on the whole matrix, each rank comparing its rows; beyond, a second plan\n"
    "with one step per pass from the same x. Either must agree in every bit (tide.h: each row\n"
    "is one fused multiply-add per entry in column order, from 0).\n"
    "\n"
    "Figures: Performance counts 2 flops per matrix entry and step; Bandwidth is the unfused\n"
    "traffic (per row and step: x read and written, the row's entries read) over the time.\n"
    "The bound: that traffic at the copy rate measured now on arrays of x's and A's size\n"
    "(device copy rate on cuda, host copy rate on the cpu; on P ranks the sum of their rates,\n"
    "measured together). A plan fusing K steps per pass reads x once per pass, not once per\n"
    "step, but still reads A every step, so its figure stays near the bound. On P ranks a Halo\n"
    "line gives the last timed run's exchanges and the slowest rank's seconds in them.\n"
    "With backend cuda and host arrays, a matrix whose arrays exceed -budget on some rank\n"
    "streams through the GPUs in slabs of rows on every rank (each its rows grown by the halo),\n"
    "each pass sending x and A up and x down once; an Out of card line gives the slabs and the\n"
    "PCIe bound of those transfers at the measured rates.\n";

typedef struct {
    app_args c;
    int kl, ku, steps, fuse, check;
} args;

static int parse(int argc, char **argv, args *a)
{
    memset(a, 0, sizeof *a);
    app_args_init(&a->c);
    app_args *c = &a->c;
    a->kl = a->ku = 8;
    a->steps = 20;
    a->check = 1;
    c->n[1] = c->n[2] = 1;
    c->inplace = 1; /* a run updates x in place */
    app_opt opts[] = {
        APP_POS_BACKEND(c), APP_POS_PRECISION(c), APP_POS_SIZE("N", &c->n[0]),
        {"-kl", "KL", APP_INT, &a->kl, 0, TIDE_BAND_MAX_BANDWIDTH,
         .help = "diagonals below the main one, 0 to 64 (default 8)"},
        {"-ku", "KU", APP_INT, &a->ku, 0, TIDE_BAND_MAX_BANDWIDTH,
         .help = "diagonals above the main one, 0 to 64 (default 8)"},
        {"-steps", "S", APP_INT, &a->steps, 0, INT_MAX,
         .help = "matrix-vector products per run, 0 to 2^31 - 1 (default 20)"},
        {"-fuse", "K", APP_INT, &a->fuse, 0, APP_FUSE_MAX,
         .help = "steps per pass over memory, 0 to 1024 (default 0: the plan's choice; the "
                 "GPU's kernel has a limit, which it names when exceeded)"},
        APP_OPT_DEVICE(c), APP_OPT_BUDGET(c), APP_OPT_RUNS(c), APP_OPT_SEED(c), APP_OPT_NO_CHECK(&a->check),
        APP_OPT_PROGRESS(c), APP_OPT_JSON(c),
    };
    app_cmd cmd = {"tide band", about, NULL, opts, sizeof opts / sizeof opts[0]};
    return app_parse(&cmd, argc, argv);
}

/* ---- the data: the same values on every rank count ------------------------------------------ */

/* A value in [-1, 1) from the seed and two indices (splitmix64). */
static double hash(unsigned seed, long long i, long long d)
{
    uint64_t z = ((uint64_t)seed << 40) ^ ((uint64_t)i * 0x9E3779B97F4A7C15ull) ^
                 ((uint64_t)(d + 128) * 0xBF58476D1CE4E5B9ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-52 - 1.0;
}

static void put(void *a, size_t at, int dbl, double v)
{
    if (dbl)
        ((double *)a)[at] = v;
    else
        ((float *)a)[at] = (float)v;
}

/* The rows [lo, hi) of A, diagonal-major (tide.h), and of x. */
static void fill(const args *a, int lo, int hi, void *diag, void *x)
{
    int dbl = a->c.prec == TIDE_DOUBLE, rows = hi - lo, W = a->kl + a->ku + 1;
    double scale = 1.7 / sqrt((double)W);
    for (int d = -a->kl; d <= a->ku; d++)
        for (int i = lo; i < hi; i++)
            put(diag, (size_t)(d + a->kl) * rows + (i - lo), dbl,
                scale * hash(a->c.seed, i, d));
    for (int i = lo; i < hi; i++)
        put(x, (size_t)(i - lo), dbl, hash(a->c.seed + 1, i, 200));
}

/* ---- the run --------------------------------------------------------------------------------- */

#define CHECK(call) APP_CHECK("tide band", call)

typedef struct {
    tide_context *ctx;
    tide_band_plan *plan;
    const void *x0;
    void *xu;
    size_t bytes;
    long long steps;
} run_arg;

static int restart(void *p)
{
    run_arg *r = p;
    return tide_copy(r->ctx, r->xu, r->x0, r->bytes);
}

static int advance(void *p)
{
    run_arg *r = p;
    return tide_band_run(r->plan, r->xu, r->steps);
}

/* Collective: the reference for this rank's rows into ref: the oracle on the whole matrix, or
 * a plan of one step per pass. Returns 0, else 1 with why printed; *kind names it. */
static int reference(const args *a, tide_context *ctx, tide_band_options o, run_arg ra,
                     int lo, int hi, void *ref, const char **kind)
{
    int n = a->c.n[0], dbl = a->c.prec == TIDE_DOUBLE, W = a->kl + a->ku + 1;
    size_t es = dbl ? sizeof(double) : sizeof(float);
    int st = TIDE_SUCCESS;
    if ((double)n * W * a->steps <= (double)CHECK_TERMS) {
        *kind = "oracle";
        void *gd = malloc((size_t)n * W * es + 1), *gx = malloc((size_t)n * es + 1);
        st = gd && gx ? TIDE_SUCCESS : TIDE_ERR_NOMEM;
        if (!st) {
            fill(a, 0, n, gd, gx);
            st = tide_ref_band(n, dbl, a->kl, a->ku, gd, gx, a->steps);
        }
        if (!st)
            memcpy(ref, (char *)gx + (size_t)lo * es, (size_t)(hi - lo) * es);
        free(gd);
        free(gx);
    } else {
        *kind = "fuse1";
        o.steps_per_pass = 1;
        st = tide_band_plan_create(ctx, n, lo, hi, &o, &ra.plan);
        st = st ? st : restart(&ra);
        st = st ? st : advance(&ra);
        st = st ? st : tide_copy(ctx, ref, ra.xu, ra.bytes);
        tide_band_plan_destroy(ra.plan);
    }
    int bad = app_agree(st != 0, NULL, 0);
    if (bad)
        tide_warn("tide band: the reference (%s) failed\n", *kind);
    return bad;
}

/* Rows whose bits differ between x and y. */
static long long differ(const void *x, const void *y, int rows, size_t es)
{
    long long k = 0;
    for (int i = 0; i < rows; i++)
        k += memcmp((const char *)x + (size_t)i * es, (const char *)y + (size_t)i * es, es) != 0;
    return k;
}

/* What a run measured, for the -json file. */
typedef struct {
    double flops, traffic, rate, halo_s, halo_rows, mem, plan_s;
    long long bad_rows;
    const char *kind;
} figures;

/* Rank 0: the -json file (docs/api.md: every command's members, then tide band's). */
static int write_json(const args *a, int P, int threads, const tide_band_info *info,
                      const char *desc, const app_stats *ts, const tide_rates *rates,
                      const figures *f)
{
    const app_args *c = &a->c;
    double bound_s = f->rate > 0 ? app_seconds(f->traffic, f->rate) : NAN;
    cJSON *j = app_json_head("band", c, P, threads, info->backend, desc, info->exchanges);
    cJSON_AddNumberToObject(j, "kl", a->kl);
    cJSON_AddNumberToObject(j, "ku", a->ku);
    cJSON_AddNumberToObject(j, "steps", a->steps);
    cJSON_AddNumberToObject(j, "fuse", info->steps_per_pass);
    cJSON_AddStringToObject(j, "location", c->device ? "device" : "host");
    cJSON_AddNumberToObject(j, "slabs", info->slabs);
    cJSON_AddNumberToObject(j, "halo_rows_max", f->halo_rows);
    app_json_real(j, "halo_seconds", f->halo_s);
    app_json_rates(j, rates, 0);
    app_json_timing(j, f->plan_s, ts, f->flops, f->mem);
    app_json_real(j, "gbps", ts->median > 0 ? f->traffic / ts->median * 1e-9 : NAN);
    app_json_real(j, "traffic_bytes", f->traffic);
    app_json_real(j, "copy_rate_gbps", f->rate);
    app_json_real(j, "bound_seconds", bound_s);
    app_json_real(j, "bound_ratio", ts->median > 0 ? bound_s / ts->median : NAN);
    cJSON_AddNumberToObject(j, "host_bytes", (double)info->host_bytes);
    cJSON_AddNumberToObject(j, "pinned_bytes", (double)info->pinned_bytes);
    cJSON_AddNumberToObject(j, "device_bytes", (double)info->device_bytes);
    int checked = strcmp(f->kind, "none") != 0;
    cJSON_AddStringToObject(j, "check", f->kind);
    app_json_real(j, "differing_rows", checked ? (double)f->bad_rows : NAN);
    app_json_real(j, "max_error", NAN); /* the check is bitwise: differing_rows */
    if (checked)
        cJSON_AddBoolToObject(j, "verified", f->bad_rows == 0);
    else
        cJSON_AddNullToObject(j, "verified");
    return app_json_write("tide band", j, c->json);
}

int tide_cmd_band(int argc, char **argv)
{
    args a;
    int rc = parse(argc, argv, &a);
    if (rc)
        return rc == 1 ? 0 : rc;
    const app_args *c = &a.c;
    int rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    int n = c->n[0], dbl = c->prec == TIDE_DOUBLE, dev = c->device, W = a.kl + a.ku + 1;
    int lo = (int)((long long)rank * n / P), hi = (int)((long long)(rank + 1) * n / P);
    size_t es = dbl ? sizeof(double) : sizeof(float), bytes = (size_t)(hi - lo) * es;
    tide_context *ctx = NULL;
    tide_band_plan *plan = NULL;
    void *diag = NULL, *x0 = NULL, *xh = NULL, *xu = NULL, *ref = NULL;
    double *times = NULL;
    if (app_json_check("tide band", c) || app_context_create("tide band", c, &ctx))
        return 1;
    int threads = 1;
    tide_context_threads(ctx, &threads);
    tide_backend cb = TIDE_BACKEND_CPU;
    tide_context_backend(ctx, &cb);
    if (dev && cb != TIDE_BACKEND_CUDA) {
        tide_warn("tide band: -device needs GPU memory, but this run's backend is cpu (%s)\n",
                  tide_context_gpu_status(ctx));
        rc = 1;
        goto done;
    }
    /* the matrix's rows, x's initial values, a host copy of a result, x on the host, the
     * check's reference */
    double need = (double)bytes * (W + 3 + !dev + a.check);
    tide_say("Tide %s: band %d rows, kl %d ku %d, %s, %d rank%s x %d threads, backend %s, %d "
             "steps per run, %s arrays; %.4g GB of host memory per rank\n", tide_version(), n,
             a.kl, a.ku, dbl ? "double" : "float", P, P > 1 ? "s" : "", threads,
             cb == TIDE_BACKEND_CUDA ? "cuda" : "cpu", a.steps, dev ? "device" : "host",
             need / 1e9);
    if (app_memory_check("tide band", need)) {
        rc = 1;
        goto done;
    }
    int ok = !tide_host_alloc(ctx, bytes * W + 1, &diag) && !tide_host_alloc(ctx, bytes + 1, &x0) &&
             !tide_host_alloc(ctx, bytes + 1, &xh) && (ref = malloc(bytes + 1)) &&
             !(dev ? tide_device_alloc(ctx, bytes + 1, &xu) : tide_host_alloc(ctx, bytes + 1, &xu)) &&
             (times = malloc(sizeof(double) * (size_t)c->runs));
    if (app_agree(!ok, NULL, 0)) {
        tide_warn("tide band: out of memory allocating the arrays\n");
        rc = 1;
        goto done;
    }
    fill(&a, lo, hi, diag, x0);

    tide_band_options o;
    tide_band_options_init(&o);
    o.precision = c->prec;
    o.backend = c->backend;
    o.location = dev ? TIDE_LOCATION_DEVICE : TIDE_LOCATION_HOST;
    o.kl = a.kl, o.ku = a.ku, o.steps_per_pass = a.fuse;
    o.diagonals = diag;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    int st = tide_band_plan_create(ctx, n, lo, hi, &o, &plan);
    if (st) { /* the same on every rank: an argument it refuses is a bad argument */
        app_say_failure("tide band", st, ctx);
        rc = st == TIDE_ERR_ARGUMENT ? 2 : 1;
        goto done;
    }
    double tplan_max = app_max(MPI_Wtime() - t0);
    tide_band_info info;
    CHECK(tide_band_plan_info(plan, &info));
    char desc[256];
    CHECK(tide_band_plan_describe(plan, desc, sizeof desc));
    int gpu = info.backend == TIDE_BACKEND_CUDA;
    tide_say("Plan: %s (%d steps per pass; rank 0: %g flops and %g bytes per step)\n", desc,
             info.steps_per_pass, info.flops, info.bytes_per_step);

    /* ---- the check ---- */
    run_arg ra = {ctx, plan, x0, xu, bytes, a.steps};
    long long bad_rows = 0;
    const char *kind = "none";
    if (a.check) {
        CHECK(restart(&ra));
        CHECK(advance(&ra));
        CHECK(tide_copy(ctx, xh, xu, bytes));
        if (reference(&a, ctx, o, ra, lo, hi, ref, &kind)) {
            rc = 1;
            goto done;
        }
        long long mine = differ(xh, ref, hi - lo, es);
        MPI_Allreduce(&mine, &bad_rows, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    }

    /* ---- timing: one warm-up run, then RUNS runs, each from the initial x ---- */
    CHECK(restart(&ra));
    CHECK(advance(&ra));
    CHECK(app_time_runs("tide band", c->progress, c->runs, restart, advance, &ra, 1, times));
    app_stats ts;
    app_stats_of(times, c->runs, &ts);
    CHECK(tide_band_plan_info(plan, &info));
    double flops = 0, traffic = 0, mine[2] = {info.flops, info.bytes_per_step}, sum[2];
    MPI_Allreduce(mine, sum, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    flops = sum[0] * a.steps, traffic = sum[1] * a.steps;
    double mem = (double)info.host_bytes + info.pinned_bytes + info.device_bytes + bytes;
    tide_rates rates;
    CHECK(app_measure_rates(ctx, app_rate_bytes((double)bytes * W), &rates));
    double rate = app_sum_rates(ctx, gpu ? rates.d2d : rates.host_copy, gpu);
    app_say_timing(tplan_max, &ts, flops, mem);
    if (!a.check) {
        tide_say("Verification: skipped (-no-check)\n");
    } else {
        tide_say("Reference: %s, %d steps, compared bitwise: %lld of %d rows differ\n",
                 !strcmp(kind, "oracle") ? "the naive oracle (tide_ref_band) on the whole matrix"
                                          : "a second plan with one step per pass",
                 a.steps, bad_rows, n);
        tide_say("Verification: %s (%lld differing rows, bitwise)\n",
                 bad_rows ? "FAILED" : "passed", bad_rows);
    }
    if (a.steps > 0 && ts.median > 0 && rate > 0) {
        double bound_s = app_seconds(traffic, rate);
        tide_say("Bandwidth: %.6g GB/s (unfused traffic %.4g GB per run / time per run)\n",
                 traffic / ts.median * 1e-9, traffic * 1e-9);
        char what[200];
        snprintf(what, sizeof what, "%.4g GB per run read and written at the measured %s "
                 "copy rate %.4g GB/s", traffic * 1e-9, gpu ? "device" : "host", rate);
        app_say_bound(bound_s, what, ts.median);
    } else {
        tide_say("Bandwidth: not measured (%s)\n", a.steps ? "no time" : "0 steps per run");
    }
    if (gpu && info.slabs > 0) { /* each pass: x and A up, x down, on the grown rows */
        long long passes = (a.steps + info.steps_per_pass - 1) / info.steps_per_pass;
        double grown = (double)bytes + (double)info.halo_rows * (double)es;
        double up = grown * (1 + W), down = grown;
        double pass_s = fmax(fmax(app_seconds(up, rates.h2d), app_seconds(down, rates.d2h)),
                             app_seconds(up + down, rates.both));
        tide_say("Out of card: %d slabs of <= %d rows per pass, %d steps per pass, %lld passes; "
                 "PCIe bound %.4g s (each pass moves x and A up and x down: %.3g s at the "
                 "measured rates %.3g GB/s up, %.3g down, %.3g both ways), bound / time %.3f\n",
                 info.slabs, info.slab_rows, info.steps_per_pass, passes, passes * pass_s,
                 pass_s, rates.h2d, rates.d2h, rates.both,
                 ts.median > 0 ? passes * pass_s / ts.median : 0);
    }
    double halo_s = app_max(info.halo_seconds), halo_rows = app_max((double)info.halo_rows);
    if (P > 1)
        tide_say("Halo: %lld exchanges per run, %.4g s in them on the slowest rank, at most "
                 "%.0f rows received per exchange\n", info.exchanges, halo_s, halo_rows);
    if (c->json && rank == 0) {
        figures f = {flops, traffic, rate, halo_s, halo_rows, mem, tplan_max, bad_rows, kind};
        rc = write_json(&a, P, threads, &info, desc, &ts, &rates, &f);
    }
    if (bad_rows)
        rc = 1;
done:
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    tide_band_plan_destroy(plan);
    if (dev)
        tide_device_free(ctx, xu);
    else
        tide_host_free(ctx, xu);
    tide_host_free(ctx, diag);
    tide_host_free(ctx, x0);
    tide_host_free(ctx, xh);
    tide_context_destroy(ctx);
    free(ref);
    free(times);
    return rc;
}
