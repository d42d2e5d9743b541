/*
 * tide_fft.c: `tide fft`: plan, verify against an independent reference, and time a
 * distributed 3D FFT, printing heFFTe speed3d's keys so existing parsers read the output.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "reference.h"
#include "tide.h"
#include "tide_app.h"

static const char *usage =
    "usage: mpirun -np P tide fft <c2c|r2c> <auto|cpu|cuda> <float|double> NX NY NZ [options]\n"
    "\n"
    "Plans a distributed 3D FFT of an NX x NY x NZ grid, checks it against a serial FFTW\n"
    "transform of the gathered array (or the round trip when the grid does not fit on one\n"
    "rank), then times RUNS forward+backward pairs. Time per run is one transform: the median\n"
    "over runs of (forward + backward) / 2, the slowest rank counting.\n"
    "\n"
    "options:\n"
    "  -slabs | -pencils      decomposition (default: automatic)\n"
    "  -a2av | -p2p           exchange: MPI_Alltoallv or pipelined Isend/Irecv (default: auto;\n"
    "                         for GPU data these go through pinned host buffers)\n"
    "  -nccl | -cuda-mpi      GPU data: NCCL send/recv, or MPI on device pointers\n"
    "  -device                arrays in GPU memory (backend cuda or auto with GPUs); otherwise\n"
    "                         host arrays, which backend cuda streams through the GPU\n"
    "  -budget GB             device memory the plan may use (default: free less 1 GiB)\n"
    "  -transposed            output in the layout of the last local FFT (saves an exchange)\n"
    "  -ingrid A B C          input boxes from an A x B x C process grid (A*B*C = P)\n"
    "  -outgrid A B C         output boxes from an A x B x C process grid\n"
    "  -batch B               transform B fields per call (default 1)\n"
    "  -inplace               in == out\n"
    "  -measure               FFTW_MEASURE planning (default FFTW_ESTIMATE)\n"
    "  -scale none|full|symmetric   scaling (default none)\n"
    "  -n RUNS                timed runs (default 5)\n"
    "  -seed S                input seed (default 2026)\n"
    "  -json FILE             also write the results as JSON\n";

typedef struct {
    int type, backend, prec, n[3];
    int decomp, exchange, transposed, batch, inplace, measure, scaling, runs, device;
    double budget_gb;
    unsigned seed;
    int has_ingrid, ingrid[3], has_outgrid, outgrid[3];
    const char *json;
} args;

static int pick(const char *s, const char *const *names, int count)
{
    for (int i = 0; i < count; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

static int to_int(const char *s, int lo, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > 1L << 30)
        return -1;
    *out = (int)v;
    return 0;
}

/* Fills a; on error prints why (rank 0) and returns 2. Every rank parses the same argv. */
static int parse(int argc, char **argv, args *a)
{
    static const char *types[] = {"c2c", "r2c"}, *backends[] = {"auto", "cpu", "cuda"},
                      *precs[] = {"double", "float"}, *scales[] = {"none", "full", "symmetric"};
    memset(a, 0, sizeof *a);
    a->batch = 1;
    a->runs = 5;
    a->seed = 2026;
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-help") || !strcmp(argv[i], "-h")) {
            tide_say("%s", usage);
            return 1;
        }
    if (argc < 6) {
        tide_warn("tide fft: expected 6 positional arguments, got %d\n\n%s", argc, usage);
        return 2;
    }
    if ((a->type = pick(argv[0], types, 2)) < 0 ||
        (a->backend = pick(argv[1], backends, 3)) < 0 ||
        (a->prec = pick(argv[2], precs, 2)) < 0 || to_int(argv[3], 1, &a->n[0]) ||
        to_int(argv[4], 1, &a->n[1]) || to_int(argv[5], 1, &a->n[2])) {
        tide_warn("tide fft: bad positional arguments '%s %s %s %s %s %s'\n\n%s", argv[0],
                  argv[1], argv[2], argv[3], argv[4], argv[5], usage);
        return 2;
    }
    a->backend = a->backend == 0 ? TIDE_BACKEND_AUTO : a->backend == 1 ? TIDE_BACKEND_CPU
                                                                        : TIDE_BACKEND_CUDA;
    for (int i = 6; i < argc; i++) {
        const char *o = argv[i];
        int more = argc - i - 1, bad = 0;
        if (!strcmp(o, "-slabs"))
            a->decomp = TIDE_DECOMP_SLABS;
        else if (!strcmp(o, "-pencils"))
            a->decomp = TIDE_DECOMP_PENCILS;
        else if (!strcmp(o, "-a2av"))
            a->exchange = TIDE_EXCHANGE_A2AV;
        else if (!strcmp(o, "-p2p"))
            a->exchange = TIDE_EXCHANGE_P2P;
        else if (!strcmp(o, "-nccl"))
            a->exchange = TIDE_EXCHANGE_NCCL;
        else if (!strcmp(o, "-cuda-mpi"))
            a->exchange = TIDE_EXCHANGE_CUDA_MPI;
        else if (!strcmp(o, "-device"))
            a->device = 1;
        else if (!strcmp(o, "-transposed"))
            a->transposed = 1;
        else if (!strcmp(o, "-inplace"))
            a->inplace = 1;
        else if (!strcmp(o, "-measure"))
            a->measure = 1;
        else if (!strcmp(o, "-ingrid") || !strcmp(o, "-outgrid")) {
            int *g = o[1] == 'i' ? a->ingrid : a->outgrid;
            bad = more < 3 || to_int(argv[i + 1], 1, &g[0]) || to_int(argv[i + 2], 1, &g[1]) ||
                  to_int(argv[i + 3], 1, &g[2]);
            *(o[1] == 'i' ? &a->has_ingrid : &a->has_outgrid) = 1;
            i += 3;
        } else if (!strcmp(o, "-batch")) {
            bad = more < 1 || to_int(argv[++i], 1, &a->batch);
        } else if (!strcmp(o, "-budget")) {
            char *end = NULL;
            a->budget_gb = more < 1 ? 0 : strtod(argv[++i], &end);
            bad = more < 1 || !end || *end || !(a->budget_gb > 0);
        } else if (!strcmp(o, "-n")) {
            bad = more < 1 || to_int(argv[++i], 1, &a->runs);
        } else if (!strcmp(o, "-seed")) {
            int s = 0;
            bad = more < 1 || to_int(argv[++i], 0, &s);
            a->seed = (unsigned)s;
        } else if (!strcmp(o, "-scale")) {
            bad = more < 1 || (a->scaling = pick(argv[++i], scales, 3)) < 0;
        } else if (!strcmp(o, "-json")) {
            bad = more < 1;
            a->json = bad ? NULL : argv[++i];
        } else {
            tide_warn("tide fft: unknown option '%s'\n\n%s", o, usage);
            return 2;
        }
        if (bad) {
            tide_warn("tide fft: option %s needs a valid value\n\n%s", o, usage);
            return 2;
        }
    }
    return 0;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* Stops on every rank alike: st is the same everywhere for Tide's collective calls. */
#define CHECK(call)                                                                             \
    do {                                                                                        \
        int st_ = (call);                                                                       \
        if (st_) {                                                                              \
            tide_warn("tide fft: %s: %s\n", tide_strerror(st_), tide_last_error(ctx));           \
            rc = 1;                                                                             \
            goto done;                                                                          \
        }                                                                                       \
    } while (0)

int tide_cmd_fft(int argc, char **argv)
{
    args a;
    int rc = parse(argc, argv, &a);
    if (rc)
        return rc == 1 ? 0 : rc;
    int rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    int nout[3] = {a.n[0], a.n[1], a.type == TIDE_R2C ? a.n[2] / 2 + 1 : a.n[2]};
    for (int k = 0; k < 2; k++) {
        const int *g = k ? a.outgrid : a.ingrid;
        if ((k ? a.has_outgrid : a.has_ingrid) && g[0] * g[1] * g[2] != P) {
            tide_warn("tide fft: -%sgrid %d %d %d has %d ranks, the run has %d\n", k ? "out" : "in",
                      g[0], g[1], g[2], g[0] * g[1] * g[2], P);
            return 2;
        }
    }

    tide_context *ctx = NULL;
    tide_fft_plan *plan = NULL;
    void *in = NULL, *out = NULL, *back = NULL, *xin = NULL, *xout = NULL, *xback = NULL;
    double *times = NULL;
    tide_context_options copts;
    tide_context_options_init(&copts);
    copts.backend = a.backend;
    copts.device_budget = (size_t)(a.budget_gb * 1e9);
    int st = tide_context_create(MPI_COMM_WORLD, &copts, &ctx);
    if (st) {
        tide_warn("tide fft: %s: %s\n", tide_strerror(st), tide_last_error(NULL));
        return 1;
    }
    tide_fft_options o;
    tide_fft_options_init(&o);
    o.type = a.type;
    o.precision = a.prec;
    o.backend = a.backend;
    o.decomposition = a.decomp;
    o.exchange = a.exchange;
    o.scaling = a.scaling;
    o.planning = a.measure ? TIDE_PLAN_MEASURE : TIDE_PLAN_ESTIMATE;
    o.batch = a.batch;
    o.transposed_out = a.transposed;
    o.location = a.device ? TIDE_LOCATION_DEVICE : TIDE_LOCATION_HOST;
    tide_box ib, ob;
    if (a.has_ingrid)
        tide_box_in_grid(a.n, a.ingrid, rank, &ib);
    if (a.has_outgrid)
        tide_box_in_grid(nout, a.outgrid, rank, &ob);

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    CHECK(tide_fft_plan_create(ctx, a.n, a.has_ingrid ? &ib : NULL, a.has_outgrid ? &ob : NULL,
                               &o, &plan));
    double tplan = MPI_Wtime() - t0, tplan_max;
    MPI_Reduce(&tplan, &tplan_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

    tide_fft_info info;
    tide_fft_plan_info(plan, &info);
    tide_fft_plan_boxes(plan, &ib, &ob);
    char desc[256];
    tide_fft_plan_describe(plan, desc, sizeof desc);
    int threads = 1;
    tide_context_threads(ctx, &threads);

    /* Arrays: in (kept for checks), out, back (backward result). In place: out aliases in.
     * With -device the transforms run on device copies (x*), copied back for the checks. */
    size_t in_b = info.in_bytes, out_b = a.inplace ? info.inplace_bytes : info.out_bytes;
    size_t back_b = a.inplace ? info.inplace_bytes : in_b;
    int ok = !tide_host_alloc(ctx, in_b, &in) && !tide_host_alloc(ctx, out_b, &out) &&
             !tide_host_alloc(ctx, back_b, &back);
    if (ok && a.device)
        ok = !tide_device_alloc(ctx, in_b, &xin) && !tide_device_alloc(ctx, out_b, &xout) &&
             !tide_device_alloc(ctx, back_b, &xback);
    else if (ok)
        xin = in, xout = out, xback = back;
    times = malloc(sizeof(double) * (size_t)a.runs);
    ok = ok && times;
    int all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        tide_warn("tide fft: out of memory allocating the arrays\n");
        rc = 1;
        goto done;
    }
    int cplx_in = a.type == TIDE_C2C;
    tide_ref_fill(in, &ib, a.batch, cplx_in, a.prec, a.n, a.seed);

    tide_say("Tide %s: fft %s %s %dx%dx%d, %d ranks x %d threads, backend %s, batch %d%s\n",
             tide_version(), a.type == TIDE_R2C ? "r2c" : "c2c",
             a.prec == TIDE_DOUBLE ? "double" : "float", a.n[0], a.n[1], a.n[2], P, threads,
             info.backend == TIDE_BACKEND_CUDA ? "cuda" : "cpu", a.batch,
             a.inplace ? ", in place" : "");
    static const char *exch_names[] = {"none", "a2av", "p2p", "nccl", "cuda-mpi"};
    int staged = info.backend == TIDE_BACKEND_CUDA && info.exchange != TIDE_EXCHANGE_NCCL &&
                 info.exchange != TIDE_EXCHANGE_CUDA_MPI && info.exchanges > 0;
    tide_say("Plan: %s (%s, exchange %s%s, %d exchanges, %d local FFT passes)\n", desc,
             info.decomposition == TIDE_DECOMP_PENCILS ? "pencils"
             : info.decomposition == TIDE_DECOMP_SLABS ? "slabs" : "one rank",
             exch_names[info.exchange], staged ? " through pinned host buffers" : "",
             info.exchanges, info.local_transforms);
    if (info.backend == TIDE_BACKEND_CUDA)
        tide_say("Data: %s; pipeline: %d chunk(s) per pass, %d stream(s), %d slot(s); device "
                 "memory %.3g GB/rank\n", a.device ? "device arrays" : "host arrays",
                 info.chunks, info.streams, info.slots, info.device_bytes / 1e9);

    /* ---- verification: forward against serial FFTW, backward, and the round trip ---- */
    double N = (double)a.n[0] * a.n[1] * a.n[2];
    double fscale = a.scaling == TIDE_SCALE_SYMMETRIC ? 1 / sqrt(N) : 1;
    double bscale = a.scaling == TIDE_SCALE_SYMMETRIC ? 1 / sqrt(N)
                    : a.scaling == TIDE_SCALE_FULL    ? 1 / N : 1;
    double tol = a.prec == TIDE_DOUBLE ? 1e-12 : 1e-5;
    CHECK(tide_copy(ctx, a.inplace ? xout : xin, in, in_b));
    CHECK(tide_fft_forward(plan, a.inplace ? xout : xin, xout));
    CHECK(tide_copy(ctx, out, xout, info.out_bytes));
    tide_ref_error fe = {0, 0, 0}, be = {0, 0, 0};
    int reference = tide_ref_fits(a.n, a.batch);
    if (reference)
        CHECK(tide_ref_check(MPI_COMM_WORLD, a.n, a.type, a.prec, a.batch, -1, fscale, &ib, in,
                             &ob, out, &fe));
    CHECK(tide_fft_backward(plan, xout, a.inplace ? xout : xback));
    void *rt = a.inplace ? out : back;
    CHECK(tide_copy(ctx, rt, a.inplace ? xout : xback, in_b));
    /* Round trip: compare back / (fscale * bscale * N) with the input, on every rank. */
    {
        double rt_scale = fscale * bscale * N, num = 0, den = 0, maxabs = 0, maxref = 0;
        long long cnt = info.in_count * a.batch * (cplx_in ? 2 : 1);
        for (long long i = 0; i < cnt; i++) {
            double x = a.prec == TIDE_DOUBLE ? ((double *)in)[i] : ((float *)in)[i];
            double y = (a.prec == TIDE_DOUBLE ? ((double *)rt)[i] : ((float *)rt)[i]) / rt_scale;
            num += (x - y) * (x - y);
            den += x * x;
            maxabs = fmax(maxabs, fabs(x - y));
            maxref = fmax(maxref, fabs(x));
        }
        double l[2] = {num, den}, g[2], m[2] = {maxabs, maxref}, gm[2];
        MPI_Allreduce(l, g, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(m, gm, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        be.rel_l2 = g[1] > 0 ? sqrt(g[0] / g[1]) : sqrt(g[0]);
        be.max_abs = gm[0];
        be.max_ref = gm[1];
    }
    double max_error = reference ? fe.max_abs / fe.max_ref : be.max_abs / be.max_ref;
    double checked_l2 = reference ? fmax(fe.rel_l2, be.rel_l2) : be.rel_l2;
    int passed = checked_l2 <= tol;

    /* ---- timing ---- */
    const void *fin = a.inplace ? xout : xin;
    void *bout = a.inplace ? xout : xback;
    CHECK(tide_fft_forward(plan, fin, xout)); /* warm-up */
    CHECK(tide_fft_backward(plan, xout, bout));
    int progress = rank == 0 && isatty(STDERR_FILENO) && a.runs > 1;
    for (int r = 0; r < a.runs; r++) {
        if (a.inplace) /* keep the data bounded: restart from the input each run */
            CHECK(tide_copy(ctx, xout, in, in_b));
        MPI_Barrier(MPI_COMM_WORLD);
        double s = MPI_Wtime();
        CHECK(tide_fft_forward(plan, fin, xout));
        CHECK(tide_fft_backward(plan, xout, bout));
        double t = (MPI_Wtime() - s) / 2, tmax;
        MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        times[r] = tmax;
        if (progress)
            fprintf(stderr, "\rrun %d/%d: %.4g s", r + 1, a.runs, tmax);
    }
    if (progress)
        fprintf(stderr, "\r%40s\r", "");
    double tmin = times[0], tmaxr = times[0], tsum = 0;
    for (int r = 0; r < a.runs; r++) {
        tmin = fmin(tmin, times[r]);
        tmaxr = fmax(tmaxr, times[r]);
        tsum += times[r];
    }
    qsort(times, (size_t)a.runs, sizeof(double), cmp_double);
    double tmed = a.runs % 2 ? times[a.runs / 2] : (times[a.runs / 2 - 1] + times[a.runs / 2]) / 2;
    double mem = (double)(info.host_bytes + in_b + out_b + (a.inplace ? 0 : in_b)), memmax;
    MPI_Reduce(&mem, &memmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

    /* The bound a GPU run is measured against, from rates measured now on every rank at once
     * (each repetition started together, as the run loads the shared links). */
    double bound = 0;
    char bound_what[400] = "";
    if (info.backend == TIDE_BACKEND_CUDA) {
        tide_rates rt_;
        CHECK(tide_measure_rates_together(ctx, (size_t)512 << 20, &rt_));
        double data = (double)(info.in_bytes > info.out_bytes ? info.in_bytes : info.out_bytes);
        /* The plan's own counts, forward and backward averaged (a run is half a pair): host
         * arrays go up and down once, or, streamed through host memory, once per pass. One
         * round trip of a field cannot overlap its two directions (the first output point
         * needs the last input point): the first field's upload and the last one's download
         * run alone, each at its own rate; the rest, another field's download beside each
         * upload, at the both-directions rate. Two round trips overlap the second pass's
         * upload with the first's download: both directions at once. */
        tide_fft_cost cf, cb;
        CHECK(tide_fft_plan_cost(plan, -1, &cf));
        CHECK(tide_fft_plan_cost(plan, +1, &cb));
        int trips = info.round_trips;
        double up = (cf.h2d_bytes + cb.h2d_bytes) / 2, down = (cf.d2h_bytes + cb.d2h_bytes) / 2;
        double b = a.device    ? (cf.fft_bytes + cb.fft_bytes) / 2 / (rt_.d2d * 1e9)
                   : trips == 2 ? (up + down) / (rt_.both * 1e9)
                                : (up + down) * (a.batch - 1) / a.batch / (rt_.both * 1e9) +
                                      up / a.batch / (rt_.h2d * 1e9) +
                                      down / a.batch / (rt_.d2h * 1e9);
        /* Exchanges that do not overlap the local work: device arrays over NCCL or CUDA-aware
         * MPI, and host arrays streamed over MPI in host memory (after each pass), each moving
         * the (P-1)/P of the data that leaves the rank at the all-to-all rate measured now. */
        tide_exchange x = info.exchange;
        int streamed = !a.device && trips == 2;
        int counted = info.exchanges > 0 &&
                      (a.device ? x == TIDE_EXCHANGE_NCCL || x == TIDE_EXCHANGE_CUDA_MPI
                                : streamed && x == TIDE_EXCHANGE_P2P);
        char xpart[200] = "";
        if (counted) {
            double cap = 512.0 * (1 << 20), most, xrate = 0; /* the same size on every rank */
            MPI_Allreduce(&data, &most, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            CHECK(tide_measure_exchange(ctx, x, (size_t)(most < cap ? most : cap), &xrate));
            b += (cf.exchange_bytes + cb.exchange_bytes) / 2 / (xrate * 1e9); /* after passes */
            snprintf(xpart, sizeof xpart, " + %d exchange%s of the data leaving the rank at the "
                     "measured %s all-to-all rate (%.3g GB/s)", info.exchanges,
                     info.exchanges > 1 ? "s" : "", a.device ? exch_names[x] : "MPI p2p "
                     "host-memory", xrate);
        } else if (info.exchanges > 0) {
            snprintf(xpart, sizeof xpart, "; %s", streamed ? "the exchanges run inside the "
                     "pipeline, not counted" : "exchanges not counted");
        }
        if (a.device)
            snprintf(bound_what, sizeof bound_what, "each local FFT pass reading and writing "
                     "the rank's data once at the measured device copy rate%s", xpart);
        else
            snprintf(bound_what, sizeof bound_what, "%s%s", trips == 2
                     ? "two PCIe round trips of the rank's data at the both-directions rate"
                     : a.batch > 1 ? "one PCIe round trip of the rank's data, the first field's "
                                     "upload and the last one's download at the one-direction "
                                     "rates, the rest at the both-directions rate"
                                   : "one PCIe round trip of the rank's data, up then down at "
                                     "the one-direction rates", xpart);
        MPI_Allreduce(&b, &bound, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }

    tide_say("Plan creation time: %.6g (s)\n", tplan_max);
    tide_say("Time per run: %.6g (s)\n", tmed);
    tide_say("Min/Max/Avg: %.6g %.6g %.6g (s)\n", tmin, tmaxr, tsum / a.runs);
    tide_say("Performance: %.6g GFlop/s\n", info.flops / tmed * 1e-9);
    tide_say("Memory usage: %.1f MB/rank\n", memmax / 1e6);
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
        tide_say("Bound: %.6g (s) (%s); bound / time %.3f\n", bound, bound_what, bound / tmed);

    if (a.json && rank == 0) {
        FILE *f = fopen(a.json, "w");
        if (!f) {
            tide_warn("tide fft: cannot write %s\n", a.json);
            rc = 1;
        } else {
            fprintf(f,
                    "{\"version\": \"%s\", \"type\": \"%s\", \"precision\": \"%s\", "
                    "\"size\": [%d, %d, %d], \"ranks\": %d, \"threads\": %d, \"batch\": %d, "
                    "\"backend\": \"%s\", \"plan\": \"%s\", \"exchanges\": %d, "
                    "\"inplace\": %s, \"transposed\": %s, \"runs\": %d,\n"
                    " \"plan_seconds\": %.9g, \"time_per_run\": %.9g, \"min\": %.9g, "
                    "\"max\": %.9g, \"avg\": %.9g, \"gflops\": %.6g, \"memory_mb_per_rank\": "
                    "%.3f,\n \"max_error\": %.6g, \"reference\": \"%s\", \"rel_l2\": %.6g, "
                    "\"verified\": %s}\n",
                    tide_version(), a.type == TIDE_R2C ? "r2c" : "c2c",
                    a.prec == TIDE_DOUBLE ? "double" : "float", a.n[0], a.n[1], a.n[2], P,
                    threads, a.batch, info.backend == TIDE_BACKEND_CUDA ? "cuda" : "cpu", desc,
                    info.exchanges, a.inplace ? "true" : "false",
                    a.transposed ? "true" : "false", a.runs, tplan_max, tmed, tmin, tmaxr,
                    tsum / a.runs, info.flops / tmed * 1e-9, memmax / 1e6, max_error,
                    reference ? "serial-fftw" : "round-trip", checked_l2,
                    passed ? "true" : "false");
            fclose(f);
        }
    }
    if (!passed)
        rc = 1;
done:
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    tide_fft_plan_destroy(plan);
    tide_host_free(ctx, in);
    tide_host_free(ctx, out);
    tide_host_free(ctx, back);
    if (a.device) {
        tide_device_free(ctx, xin);
        tide_device_free(ctx, xout);
        tide_device_free(ctx, xback);
    }
    tide_context_destroy(ctx);
    free(times);
    return rc;
}
