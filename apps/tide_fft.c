/*
 * tide_fft.c: `tide fft`: plan, verify against an independent reference, and time a
 * distributed 3D FFT, printing heFFTe speed3d's keys so existing parsers read the output.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "app_common.h"
#include "reference.h"
#include "tide.h"
#include "tide_app.h"

static const char *about =
    "Plans a distributed 3D FFT of an NX x NY x NZ grid (sizes 1 to 2^30, at most 2^62 points),\n"
    "checks it against a serial FFTW transform of the gathered array (or the round trip when\n"
    "the grid does not fit on one rank, or with -roundtrip), then times RUNS forward+backward\n"
    "pairs. Time per run is one transform: the median over runs of (forward + backward) / 2,\n"
    "the slowest rank counting.\n";

typedef struct {
    app_args c; /* backend, precision, grid and the options every subcommand takes */
    int type, transposed, scaling, roundtrip, unkept;
    int has_ingrid, ingrid[3], has_outgrid, outgrid[3];
} args;

/* Fills a from the option table; 0, 1 after --help, else APP_USAGE with why printed. Every
 * rank parses the same argv. */
static int parse(int argc, char **argv, args *a)
{
    static const char *const types[] = {"c2c", "r2c"}, *const scales[] = {"none", "full",
                                                                          "symmetric"};
    memset(a, 0, sizeof *a);
    app_args_init(&a->c);
    app_args *c = &a->c;
    app_opt opts[] = {
        {.meta = "type", .kind = APP_NAME, .dest = &a->type, .count = 2, .names = types},
        APP_POS_BACKEND(c), APP_POS_PRECISION(c), APP_POS_GRID(c),
        APP_OPT_DECOMP(c), APP_OPT_EXCHANGE(c), APP_OPT_DEVICE(c), APP_OPT_BUDGET(c),
        {"-transposed", .kind = APP_FLAG, .dest = &a->transposed, .count = 1,
         .help = "output in the layout of the last local FFT (saves an exchange)"},
        {"-roundtrip", .kind = APP_FLAG, .dest = &a->roundtrip, .count = 1,
         .help = "check by the round trip alone (the serial reference takes about a minute at "
                 "1024^3)"},
        {"-unkept", .kind = APP_FLAG, .dest = &a->unkept, .count = 1,
         .help = "device arrays: do not tell the plan that they stay allocated as long as it "
                 "(arrays_kept 0), so no peer stores into the output"},
        {"-ingrid", "AxBxC", APP_GRID, a->ingrid, .count = 3, .given = &a->has_ingrid,
         .help = "input boxes from an A x B x C process grid, A B C = P (default: the plan's "
                 "slabs or pencils)"},
        {"-outgrid", "AxBxC", APP_GRID, a->outgrid, .count = 3, .given = &a->has_outgrid,
         .help = "output boxes from an A x B x C process grid"},
        APP_OPT_BATCH(c), APP_OPT_INPLACE(c), APP_OPT_MEASURE(c),
        {"-scale", NULL, APP_NAME, &a->scaling, .count = 3, .names = scales,
         .help = "scaling: none, 1/N on the backward transform, 1/sqrt(N) on both (default "
                 "none)"},
        APP_OPT_RUNS(c), APP_OPT_SEED(c), APP_OPT_PROGRESS(c), APP_OPT_JSON(c),
    };
    app_cmd cmd = {"tide fft", about, NULL, opts, sizeof opts / sizeof opts[0]};
    int rc = app_parse(&cmd, argc, argv);
    return rc ? rc : app_check_points(&cmd, c, "NX NY NZ");
}

#define CHECK(call) APP_CHECK("tide fft", call)

/* The timed run: forward then backward (in place: restarted from the input first). */
typedef struct {
    tide_context *ctx;
    tide_fft_plan *plan;
    const void *fin, *in;
    void *xout, *bout;
    size_t in_b;
} run_arg;

static int restart(void *p)
{
    run_arg *r = p;
    return tide_copy(r->ctx, r->xout, r->in, r->in_b);
}

static int pair(void *p)
{
    run_arg *r = p;
    int st = tide_fft_forward(r->plan, r->fin, r->xout);
    return st ? st : tide_fft_backward(r->plan, r->xout, r->bout);
}

int tide_cmd_fft(int argc, char **argv)
{
    args a;
    int rc = parse(argc, argv, &a);
    if (rc)
        return rc == 1 ? 0 : rc;
    const app_args *c = &a.c;
    int rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    int nout[3] = {c->n[0], c->n[1], a.type == TIDE_R2C ? c->n[2] / 2 + 1 : c->n[2]};
    if (app_json_check("tide fft", c))
        return 1;

    tide_context *ctx = NULL;
    tide_fft_plan *plan = NULL;
    void *in = NULL, *out = NULL, *back = NULL, *xin = NULL, *xout = NULL, *xback = NULL;
    double *times = NULL;
    if (app_context_create("tide fft", c, &ctx))
        return 1;
    tide_fft_options o;
    tide_fft_options_init(&o);
    o.type = a.type;
    o.precision = c->prec;
    o.backend = c->backend;
    o.decomposition = c->decomp;
    o.exchange = c->exchange;
    o.scaling = a.scaling;
    o.planning = c->measure ? TIDE_PLAN_MEASURE : TIDE_PLAN_ESTIMATE;
    o.batch = c->batch;
    o.transposed_out = a.transposed;
    o.location = c->device ? TIDE_LOCATION_DEVICE : TIDE_LOCATION_HOST;
    o.arrays_kept = !a.unkept; /* the arrays are freed after the plan is destroyed */
    tide_box ib, ob;
    if (a.has_ingrid)
        tide_box_in_grid(c->n, a.ingrid, rank, &ib);
    if (a.has_outgrid)
        tide_box_in_grid(nout, a.outgrid, rank, &ob);

    /* Before planning, which allocates the plan's work memory: the least the run takes, an
     * even share of the larger side's data for each of the three arrays and, on the CPU, for
     * each of the plan's two work buffers; refused where even that exceeds the node's memory
     * (the exact figure follows once the plan exists). */
    tide_backend backend = TIDE_BACKEND_CPU;
    tide_context_backend(ctx, &backend);
    double scalar = c->prec == TIDE_DOUBLE ? sizeof(double) : sizeof(float);
    double points = (double)c->n[0] * c->n[1] * c->n[2];
    double side = fmax(points * (a.type == TIDE_R2C ? 1 : 2),
                       2.0 * nout[0] * nout[1] * nout[2]) * scalar * c->batch / P;
    if (app_memory_check("tide fft", side * (backend == TIDE_BACKEND_CPU ? 5 : 3))) {
        rc = 1;
        goto done;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    CHECK(tide_fft_plan_create(ctx, c->n, a.has_ingrid ? &ib : NULL, a.has_outgrid ? &ob : NULL,
                               &o, &plan));
    double tplan_max = app_max(MPI_Wtime() - t0);

    tide_fft_info info;
    tide_fft_plan_info(plan, &info);
    tide_fft_plan_boxes(plan, &ib, &ob);
    char desc[256];
    tide_fft_plan_describe(plan, desc, sizeof desc);
    int threads = 1;
    tide_context_threads(ctx, &threads);

    /* Arrays: in (kept for checks), out, back (backward result). In place: out aliases in.
     * With -device the transforms run on device copies (x*), copied back for the checks. */
    size_t in_b = info.in_bytes, out_b = c->inplace ? info.inplace_bytes : info.out_bytes;
    size_t back_b = c->inplace ? info.inplace_bytes : in_b;
    double need = app_max((double)(in_b + out_b + back_b + info.host_bytes + info.pinned_bytes));
    tide_say("Tide %s: fft %s %s %dx%dx%d, %d ranks x %d threads, backend %s, batch %d%s; "
             "arrays and plan %.4g GB of host memory per rank\n", tide_version(),
             a.type == TIDE_R2C ? "r2c" : "c2c", c->prec == TIDE_DOUBLE ? "double" : "float",
             c->n[0], c->n[1], c->n[2], P, threads,
             info.backend == TIDE_BACKEND_CUDA ? "cuda" : "cpu", c->batch,
             c->inplace ? ", in place" : "", need / 1e9);
    if (app_memory_check("tide fft", need)) {
        rc = 1;
        goto done;
    }
    int ok = !tide_host_alloc(ctx, in_b, &in) && !tide_host_alloc(ctx, out_b, &out) &&
             !tide_host_alloc(ctx, back_b, &back);
    if (ok && c->device)
        ok = !tide_device_alloc(ctx, in_b, &xin) && !tide_device_alloc(ctx, out_b, &xout) &&
             !tide_device_alloc(ctx, back_b, &xback);
    else if (ok)
        xin = in, xout = out, xback = back;
    times = malloc(sizeof(double) * (size_t)c->runs);
    ok = ok && times;
    int all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        tide_warn("tide fft: out of memory allocating the arrays\n");
        rc = 1;
        goto done;
    }
    int cplx_in = a.type == TIDE_C2C;
    tide_ref_fill(in, &ib, c->batch, cplx_in, c->prec, c->n, c->seed);

    int staged = info.backend == TIDE_BACKEND_CUDA && info.exchange != TIDE_EXCHANGE_NCCL &&
                 info.exchange != TIDE_EXCHANGE_CUDA_MPI &&
                 info.exchange != TIDE_EXCHANGE_DIRECT && info.exchanges > 0;
    tide_say("Plan: %s (%s, exchange %s%s, %d exchanges, %d local FFT passes)\n", desc,
             info.decomposition == TIDE_DECOMP_PENCILS ? "pencils"
             : info.decomposition == TIDE_DECOMP_SLABS ? "slabs" : "one rank",
             app_exchange_name(info.exchange), staged ? " through pinned host buffers" : "",
             info.exchanges, info.local_transforms);
    if (info.backend == TIDE_BACKEND_CUDA)
        tide_say("Data: %s; pipeline: %d chunk(s) per pass, %d stream(s), %d slot(s); device "
                 "memory %.3g GB/rank\n", c->device ? "device arrays" : "host arrays",
                 info.chunks, info.streams, info.slots, info.device_bytes / 1e9);

    /* ---- verification: forward against serial FFTW, backward, and the round trip ---- */
    double N = (double)c->n[0] * c->n[1] * c->n[2];
    double fscale = a.scaling == TIDE_SCALE_SYMMETRIC ? 1 / sqrt(N) : 1;
    double bscale = a.scaling == TIDE_SCALE_SYMMETRIC ? 1 / sqrt(N)
                    : a.scaling == TIDE_SCALE_FULL    ? 1 / N : 1;
    double tol = c->prec == TIDE_DOUBLE ? 1e-12 : 1e-5;
    CHECK(tide_copy(ctx, c->inplace ? xout : xin, in, in_b));
    CHECK(tide_fft_forward(plan, c->inplace ? xout : xin, xout));
    CHECK(tide_copy(ctx, out, xout, info.out_bytes));
    tide_ref_error fe = {0, 0, 0}, be = {0, 0, 0};
    int reference = !a.roundtrip && tide_ref_fits(c->n, c->batch);
    if (reference)
        CHECK(tide_ref_check(MPI_COMM_WORLD, c->n, a.type, c->prec, c->batch, -1, fscale, &ib, in,
                             &ob, out, &fe));
    CHECK(tide_fft_backward(plan, xout, c->inplace ? xout : xback));
    void *rt = c->inplace ? out : back;
    CHECK(tide_copy(ctx, rt, c->inplace ? xout : xback, in_b));
    /* Round trip: compare back / (fscale * bscale * N) with the input, on every rank. */
    {
        double rt_scale = fscale * bscale * N, num = 0, den = 0, maxabs = 0, maxref = 0;
        long long cnt = info.in_count * c->batch * (cplx_in ? 2 : 1);
        for (long long i = 0; i < cnt; i++) {
            double x = c->prec == TIDE_DOUBLE ? ((double *)in)[i] : ((float *)in)[i];
            double y = (c->prec == TIDE_DOUBLE ? ((double *)rt)[i] : ((float *)rt)[i]) / rt_scale;
            num += (x - y) * (x - y);
            den += x * x;
            maxabs = app_max_nan(maxabs, fabs(x - y));
            maxref = app_max_nan(maxref, fabs(x));
        }
        double l[2] = {num, den}, g[2];
        MPI_Allreduce(l, g, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        be.rel_l2 = g[1] > 0 ? sqrt(g[0] / g[1]) : sqrt(g[0]);
        be.max_abs = app_max(maxabs);
        be.max_ref = app_max(maxref);
    }
    double max_error = reference ? fe.max_abs / fe.max_ref : be.max_abs / be.max_ref;
    double checked_l2 = reference ? app_max_nan(fe.rel_l2, be.rel_l2) : be.rel_l2;
    int passed = checked_l2 <= tol;

    /* ---- timing ---- */
    const void *fin = c->inplace ? xout : xin;
    void *bout = c->inplace ? xout : xback;
    CHECK(tide_fft_forward(plan, fin, xout)); /* warm-up */
    CHECK(tide_fft_backward(plan, xout, bout));
    /* In place, keep the data bounded: restart from the input each run. */
    run_arg ra = {ctx, plan, fin, in, xout, bout, in_b};
    CHECK(app_time_runs("tide fft", c->progress, c->runs, c->inplace ? restart : NULL, pair, &ra,
                        2, times));
    app_stats ts;
    app_stats_of(times, c->runs, &ts);
    double memmax = app_max((double)(info.host_bytes + in_b + out_b + (c->inplace ? 0 : in_b)));

    /* The bound a GPU run is measured against, from rates measured now on every rank at once
     * (each repetition started together, as the run loads the shared links). */
    double bound = 0, xrate = 0, xonly = 0, xbound = 0;
    char bound_what[400] = "";
    tide_fft_cost cf, cb, cost;
    CHECK(tide_fft_plan_cost(plan, -1, &cf));
    CHECK(tide_fft_plan_cost(plan, +1, &cb));
    app_cost_of(&cf, &cb, &cost);
    tide_rates rt_;
    int gpu = info.backend == TIDE_BACKEND_CUDA;
    if (gpu) {
        CHECK(app_measure_rates(ctx, APP_RATE_BYTES, &rt_));
        double data = (double)(info.in_bytes > info.out_bytes ? info.in_bytes : info.out_bytes);
        /* The plan's own counts, forward and backward averaged (a run is half a pair): host
         * arrays go up and down once, or, streamed through host memory, once per pass. One
         * round trip of a field cannot overlap its two directions (the first output point
         * needs the last input point): the first field's upload and the last one's download
         * run alone, each at its own rate; the rest, another field's download beside each
         * upload, at the both-directions rate. Two round trips overlap the second pass's
         * upload with the first's download: both directions at once. */
        int trips = info.round_trips;
        double up = (cf.h2d_bytes + cb.h2d_bytes) / 2, down = (cf.d2h_bytes + cb.d2h_bytes) / 2;
        double b = c->device ? app_bound_local((cf.fft_bytes + cb.fft_bytes) / 2, 1, &rt_)
                             : app_bound_pcie(up, down, c->batch, trips, &rt_);
        /* Exchanges that do not overlap the local work: device arrays GPU to GPU (NCCL,
         * CUDA-aware MPI, direct stores), and host arrays streamed over MPI in host memory
         * (after each pass), each moving the (P-1)/P of the data that leaves the rank at the
         * all-to-all rate measured now. */
        tide_exchange x = info.exchange;
        int streamed = !c->device && trips == 2;
        int counted = info.exchanges > 0 &&
                      (c->device ? app_exchange_gpu(x) : streamed && x == TIDE_EXCHANGE_P2P);
        char xpart[200] = "";
        if (counted) {
            double xs = 0;
            CHECK(app_bound_exchange(ctx, x, data, (cf.exchange_bytes + cb.exchange_bytes) / 2,
                                     &xs, &xrate));
            b += xs; /* after the passes */
            xonly = xs;
            snprintf(xpart, sizeof xpart, " + %d exchange%s of the data leaving the rank at the "
                     "measured %s all-to-all rate (%.3g GB/s)", info.exchanges,
                     info.exchanges > 1 ? "s" : "", c->device ? app_exchange_name(x) : "MPI p2p "
                     "host-memory", xrate);
        } else if (info.exchanges > 0) {
            snprintf(xpart, sizeof xpart, "; %s", streamed ? "the exchanges run inside the "
                     "pipeline, not counted" : "exchanges not counted");
        }
        if (c->device)
            snprintf(bound_what, sizeof bound_what, "each local FFT pass reading and writing "
                     "the rank's data once at the measured device copy rate%s", xpart);
        else
            snprintf(bound_what, sizeof bound_what, "%s%s", trips == 2
                     ? "two PCIe round trips of the rank's data at the both-directions rate"
                     : c->batch > 1 ? "one PCIe round trip of the rank's data, the first field's "
                                     "upload and the last one's download at the one-direction "
                                     "rates, the rest at the both-directions rate"
                                   : "one PCIe round trip of the rank's data, up then down at "
                                     "the one-direction rates", xpart);
        MPI_Allreduce(&b, &bound, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        MPI_Allreduce(&xonly, &xbound, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }

    app_say_timing(tplan_max, &ts, info.flops, memmax);
    tide_say("Max error: %.6g\n", max_error);
    if (reference)
        tide_say("Reference: serial FFTW of the gathered array: forward relative L2 %.3g, "
                 "backward round trip relative L2 %.3g\n", fe.rel_l2, be.rel_l2);
    else
        tide_say("Reference: round trip only (the grid is too large to gather on one rank): "
                 "relative L2 %.3g\n", be.rel_l2);
    tide_say("Verification: %s (relative L2 error %.3g, tolerance %.0e)\n",
             passed ? "passed" : "FAILED", checked_l2, tol);
    if (bound > 0)
        app_say_bound(bound, bound_what, ts.median);
    /* The limit of a plan that hides all its local work behind its exchanges (plan/overlap.h) */
    if (xbound > 0)
        tide_say("Exchange bound: %.6g (s) (the exchanges alone, everything else hidden behind "
                 "them); exchange bound / time %.3f\n", xbound, xbound / ts.median);

    if (c->json && rank == 0) {
        cJSON *j = app_json_head("fft", c, P, threads, info.backend, desc, info.exchanges);
        cJSON_AddStringToObject(j, "type", a.type == TIDE_R2C ? "r2c" : "c2c");
        cJSON_AddBoolToObject(j, "transposed", a.transposed);
        app_json_timing(j, tplan_max, &ts, info.flops, memmax);
        app_json_figures(j, o.location, info.exchange, &cost, gpu ? &rt_ : NULL, xrate, bound,
                         ts.median);
        app_json_real(j, "max_error", max_error);
        cJSON_AddStringToObject(j, "reference", reference ? "serial-fftw" : "round-trip");
        app_json_real(j, "rel_l2", checked_l2);
        cJSON_AddBoolToObject(j, "verified", passed);
        rc = app_json_write("tide fft", j, c->json);
    }
    if (!passed)
        rc = 1;
done:
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    tide_fft_plan_destroy(plan);
    tide_host_free(ctx, in);
    tide_host_free(ctx, out);
    tide_host_free(ctx, back);
    if (c->device) {
        tide_device_free(ctx, xin);
        tide_device_free(ctx, xout);
        tide_device_free(ctx, xback);
    }
    tide_context_destroy(ctx);
    free(times);
    return rc;
}
