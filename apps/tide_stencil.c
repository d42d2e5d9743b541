/*
 * tide_stencil.c: `tide stencil`: plan, verify and time explicit stencil time steps
 * (tide_stencil_*), printing heFFTe speed3d's keys like `tide fft` so the same parsers read the
 * output, and the figure stencil codes are measured by: GCell/s against the memory roofline.
 *
 * The check is bitwise, as tide.h promises: every backend and every grouping of steps computes
 * each update with the same operations in the same order. Up to CHECK_POINTS points the result
 * is compared with the naive oracle (tide_ref_stencil, no Tide code); beyond, with a second
 * plan that does one step per pass (fuse 1) from the same initial data.
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

/* The largest grid checked against the naive oracle (2^21 points). */
#define CHECK_POINTS (1LL << 21)

static const char *about =
    "Plans STEPS explicit time steps u <- S u (+ s) of a constant-coefficient stencil S on an\n"
    "NX x NY x NZ grid, fills u with deterministic random values in [-1, 1) (a hash of each\n"
    "point's global indices), checks the result bitwise, then times RUNS runs of STEPS steps,\n"
    "each from the same initial u. On P > 1 ranks each rank holds its block of the process\n"
    "grid (-grid, or the plan's choice), and the plan exchanges a halo of fuse r points\n"
    "before each pass. Time per run is the median of the slowest rank's; the library call\n"
    "is complete on return. The check: up to 2^21 points,\n"
    "the naive serial oracle (tide_ref_stencil) on the whole grid for the same steps, each\n"
    "rank comparing its block; beyond, a second plan with fuse 1 (one step per pass, on the\n"
    "same blocks) from the same initial data. Either must agree in every bit (tide.h: each\n"
    "update is a product, then one fused multiply-add per further tap in order, then the\n"
    "source's add; 27pt in the class form of docs/api.md), however the grid is cut.\n"
    "\n"
    "Figures: GCell/s = NX NY NZ x STEPS / time. The bound (roofline) of one step per pass:\n"
    "the plan's bytes per point and step (u read and written, the source read) at the copy\n"
    "rate measured now on arrays of u's size (device copy rate on cuda, host copy rate on the\n"
    "cpu; on P ranks the sum of their rates, measured together); a plan fusing K steps per\n"
    "pass moves 1/K of that, so its figure may exceed the one-step bound: both bounds and both\n"
    "ratios are printed (on P ranks neither counts the halos' exchange and recomputation).\n"
    "On P ranks a Halo line gives the last timed run's exchanges and the slowest rank's seconds\n"
    "in them (waiting for its peers included), against the most bytes a rank receives per\n"
    "exchange at the rate of the halos' transport (MPI_Isend/Irecv, or NCCL between GPUs of\n"
    "their own) measured now with that many bytes.\n"
    "With backend cuda, host arrays and one rank, a grid whose arrays exceed -budget streams\n"
    "through the GPU in slabs, each pass of fuse steps sending every slab up and back once;\n"
    "an Out of card line gives the slabs, steps per pass and passes, and the PCIe bound: each\n"
    "pass moves u (and the source) up and u down at the measured rates.\n";

typedef struct {
    app_args c;        /* backend, precision, grid and the common options taken here */
    int shape, radius; /* tide_stencil_shape and R (1 for the built-in shapes) */
    char shape_name[16];
    char bc[4];        /* p or d per dimension */
    int steps, fuse, levels, source, check;
    int grid[3];       /* -grid, or 0 0 0: the plan's */
    int overlap;
} args;

/* Reads -shape's value into the args at dest: 7pt, 27pt, star:R or box:R. 0, else -1 with
 * why in err. */
static int parse_shape(const char *name, char **v, void *dest, char *err, size_t len)
{
    const char *s = v[0];
    args *a = dest;
    int radius = 1, user = !strncmp(s, "star:", 5) || !strncmp(s, "box:", 4);
    if ((!user && strcmp(s, "7pt") && strcmp(s, "27pt")) ||
        (user && app_to_int(strchr(s, ':') + 1, 1, TIDE_STENCIL_MAX_RADIUS, &radius)))
        return snprintf(err, len, "%s %s: expected 7pt, 27pt, star:R or box:R with R 1..%d",
                        name, app_shown(s), TIDE_STENCIL_MAX_RADIUS), -1;
    a->shape = user ? s[0] == 's' ? TIDE_STENCIL_STAR : TIDE_STENCIL_BOX
                    : s[0] == '7' ? TIDE_STENCIL_7PT : TIDE_STENCIL_27PT;
    a->radius = radius;
    snprintf(a->shape_name, sizeof a->shape_name, "%s", s);
    return 0;
}

/* Reads -bc's value into dest (char[4]), one letter p or d per dimension. 0, else -1 with why
 * in err. */
static int parse_bc(const char *name, char **v, void *dest, char *err, size_t len)
{
    const char *s = v[0];
    if (strlen(s) != 3 || strspn(s, "pd") != 3)
        return snprintf(err, len, "%s %s: expected XYZ, one letter per dimension, p (periodic) "
                        "or d (Dirichlet), e.g. -bc pdp", name, app_shown(s)), -1;
    strcpy(dest, s);
    return 0;
}

/* Fills a from the option table; 0, 1 after --help, else APP_USAGE with why printed. Every
 * rank parses the same argv, so every rank stops alike. */
static int parse(int argc, char **argv, args *a)
{
    memset(a, 0, sizeof *a);
    app_args_init(&a->c);
    app_args *c = &a->c;
    c->inplace = 1; /* a stencil run updates u in place */
    a->shape = TIDE_STENCIL_7PT;
    a->radius = 1;
    strcpy(a->shape_name, "7pt");
    strcpy(a->bc, "ddd");
    a->steps = 20;
    a->check = 1;
    app_opt opts[] = {
        APP_POS_BACKEND(c), APP_POS_PRECISION(c), APP_POS_GRID(c),
        {"-shape", "SHAPE", APP_CUSTOM, a, .parse = parse_shape,
         .help = "the stencil, weights of a diffusion step that keeps the sum of u: 7pt (the "
                 "default) centre 1/4, the 6 face neighbours 1/8; 27pt the 3x3x3 box, the "
                 "product over x, y, z of 1/4, 1/2, 1/4 at offsets -1, 0, +1; star:R the 6R+1 "
                 "points on the axes within radius R, (Bx + By + Bz)/3; box:R the (2R+1)^3 "
                 "points within radius R, Bx By Bz; B the 1D binomial smoothing of radius R, "
                 "weight C(2R, R+k)/4^R at offset k = -R..R, R = 1..4 (box:1 has 27pt's "
                 "weights)"},
        {"-bc", "XYZ", APP_CUSTOM, a->bc, .parse = parse_bc,
         .help = "boundaries, one letter per dimension: p periodic, d Dirichlet (the R "
                 "outermost planes at each face keep their values; default ddd)"},
        {"-steps", "S", APP_INT, &a->steps, 0, INT_MAX,
         .help = "time steps per run, 0 to 2^31 - 1 (default 20)"},
        {"-fuse", "K", APP_INT, &a->fuse, 0, APP_FUSE_MAX,
         .help = "steps per pass over memory, 0 to 1024 (default 0: the plan's choice; each "
                 "backend has a limit, which it names when exceeded; out of card 1 to 256)"},
        {"-levels", "F", APP_INT, &a->levels, 0, APP_FUSE_MAX,
         .help = "out of card: the steps each level of a pass takes in one fused sweep, at "
                 "most F, dividing the pass's steps, 0 to 1024 (default 0: the plan's choice)"},
        {"-grid", "AxBxC", APP_GRID, a->grid, .count = 3,
         .help = "P > 1: the process grid, A B C = P (rank r the block at (r / (B C), r / C "
                 "mod B, r mod C), balanced blocks; default: the plan's choice)"},
        {"-overlap", "-1|0|1", APP_INT, &a->overlap, -1, 1,
         .help = "P > 1: sweep the points that need no halo while it travels: 1 always, -1 "
                 "never, 0 (default) the plan's choice (on the GPU)"},
        {"-p2p", .kind = APP_FLAG, .dest = &c->exchange, .count = TIDE_EXCHANGE_P2P},
        {"-nccl", .kind = APP_FLAG, .dest = &c->exchange, .count = TIDE_EXCHANGE_NCCL},
        {"-cuda-mpi", .kind = APP_FLAG, .dest = &c->exchange, .count = TIDE_EXCHANGE_CUDA_MPI,
         .help = "P > 1: the halos by MPI (GPU data through pinned host buffers), over NCCL, "
                 "or by MPI on device pointers (default: the plan's choice)"},
        {"-source", .kind = APP_FLAG, .dest = &a->source, .count = 1,
         .help = "add a source term s (random values in [-1, 1)) at every step"},
        APP_OPT_DEVICE(c), APP_OPT_BUDGET(c), APP_OPT_RUNS(c), APP_OPT_SEED(c),
        APP_OPT_NO_CHECK(&a->check),
        APP_OPT_PROGRESS(c), APP_OPT_JSON(c),
    };
    app_cmd cmd = {"tide stencil", about, NULL, opts, sizeof opts / sizeof opts[0]};
    int rc = app_parse(&cmd, argc, argv);
    if (rc || (rc = app_check_points(&cmd, c, "NX NY NZ")))
        return rc;
    for (int d = 0; d < 3; d++)
        if (c->n[d] < 2 * a->radius + 1)
            return app_usage_error(cmd.name, "NX NY NZ %d %d %d: too small for radius %d: every "
                                   "dimension needs at least 2R+1 = %d points (%c has %d)",
                                   c->n[0], c->n[1], c->n[2], a->radius, 2 * a->radius + 1,
                                   "xyz"[d], c->n[d]);
    return 0;
}

/* ---- the taps -------------------------------------------------------------------------------- */

/* The taps of the shape: off and w (room for (2 R + 1)^3), their count; for the built-in
 * shapes the library's defaults (weights NULL in the plan), written out by the oracle's own
 * tide_ref_stencil_taps; for star:R and box:R tide_ref_stencil_binomial_taps' (shared with
 * bench/stencil_loop_peer). Returns 0 when the shape has none. */
static int make_taps(const args *a, int (*off)[3], double *w)
{
    if (a->shape == TIDE_STENCIL_7PT || a->shape == TIDE_STENCIL_27PT)
        return tide_ref_stencil_taps(a->shape, NULL, off, w);
    return tide_ref_stencil_binomial_taps((tide_stencil_shape)a->shape, a->radius, off, w);
}

/* ---- the check ------------------------------------------------------------------------------- */

typedef struct {
    long long differ; /* points whose bits differ */
    double max_abs;   /* max |x - y| over them */
    int nan;          /* a difference that is not finite (NaN or infinity) */
} compare_result;

static void compare(const void *x, const void *y, long long count, int dbl, compare_result *r)
{
    size_t es = dbl ? sizeof(double) : sizeof(float);
    memset(r, 0, sizeof *r);
    for (long long i = 0; i < count; i++) {
        const char *p = (const char *)x + i * es, *q = (const char *)y + i * es;
        if (!memcmp(p, q, es))
            continue;
        r->differ++;
        double d = dbl ? fabs(*(const double *)p - *(const double *)q)
                       : fabs((double)*(const float *)p - (double)*(const float *)q);
        if (!isfinite(d))
            r->nan = 1;
        else if (d > r->max_abs)
            r->max_abs = d;
    }
}

/* ---- the run --------------------------------------------------------------------------------- */

#define CHECK(call) APP_CHECK("tide stencil", call)

/* A timed run: STEPS steps of u, restarted (untimed) from the initial values first. */
typedef struct {
    tide_context *ctx;
    tide_stencil_plan *plan;
    const void *u0;
    void *xu;
    size_t bytes;
    long long steps;
} run_arg;

static int restart(void *p)
{
    run_arg *r = p;
    return tide_copy(r->ctx, r->xu, r->u0, r->bytes);
}

static int advance(void *p)
{
    run_arg *r = p;
    return tide_stencil_run(r->plan, r->xu, r->steps);
}

/* The box b (C order) of the C-order array g of the whole grid n, into dst. */
static void box_of(void *dst, const void *g, const int n[3], const tide_box *b, size_t es)
{
    size_t row = (size_t)(b->hi[2] - b->lo[2]) * es, at = 0;
    for (int i = b->lo[0]; i < b->hi[0]; i++)
        for (int j = b->lo[1]; j < b->hi[1]; j++, at += row)
            memcpy((char *)dst + at,
                   (const char *)g + (((size_t)i * n[1] + j) * n[2] + b->lo[2]) * es, row);
}

/* "1.5 MB": bytes in a short human form. */
static void mb(double bytes, char *buf, size_t len)
{
    snprintf(buf, len, "%.4g MB", bytes / 1e6);
}

int tide_cmd_stencil(int argc, char **argv)
{
    args a;
    int rc = parse(argc, argv, &a);
    if (rc)
        return rc == 1 ? 0 : rc;
    const app_args *c = &a.c;
    int rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    if (app_json_check("tide stencil", c))
        return 1;
    int dbl = c->prec == TIDE_DOUBLE, dev = c->device;
    long long points = (long long)c->n[0] * c->n[1] * c->n[2];

    int ntaps_max = (2 * a.radius + 1) * (2 * a.radius + 1) * (2 * a.radius + 1);
    int (*off)[3] = malloc(sizeof *off * (size_t)ntaps_max);
    double *w = malloc(sizeof(double) * (size_t)ntaps_max);
    if (!off || !w) {
        tide_warn("tide stencil: out of memory\n");
        free(off);
        free(w);
        return 1;
    }
    int ntaps = make_taps(&a, off, w);

    tide_context *ctx = NULL;
    tide_stencil_plan *plan = NULL, *plan1 = NULL;
    void *u0 = NULL, *uh = NULL, *xu = NULL, *s0 = NULL, *xs = NULL, *uref = NULL;
    double *times = NULL;
    if (app_context_create("tide stencil", c, &ctx)) {
        free(off);
        free(w);
        return 1;
    }
    int threads = 1;
    tide_context_threads(ctx, &threads);
    tide_backend cb = TIDE_BACKEND_CPU;
    tide_context_backend(ctx, &cb);
    if (dev && cb != TIDE_BACKEND_CUDA) { /* the backend is the same on every rank */
        tide_warn("tide stencil: -device needs GPU memory, but this run's backend is cpu "
                  "(%s)\n", tide_context_gpu_status(ctx));
        rc = 1;
        goto done;
    }
    size_t es = dbl ? sizeof(double) : sizeof(float);
    tide_box whole = {{0, 0, 0}, {c->n[0], c->n[1], c->n[2]}, {0, 1, 2}}, box = whole;
    /* u's initial values, a host copy of a result, u itself on the host, the source, the
     * check's reference, on a rank's share of the grid (the blocks are balanced): the header
     * says what they take before anything is allocated, the plans' buffers included. */
    double need = (double)points / P * (double)es * (2 + !dev + a.source + a.check);
    tide_say("Tide %s: stencil %s %s %dx%dx%d, %d rank%s x %d threads, backend %s, bc %s, "
             "%d steps per run, %s arrays%s; %.4g GB of host memory per rank\n", tide_version(),
             a.shape_name, dbl ? "double" : "float", c->n[0], c->n[1], c->n[2], P,
             P > 1 ? "s" : "", threads, cb == TIDE_BACKEND_CUDA ? "cuda" : "cpu", a.bc, a.steps,
             dev ? "device" : "host", a.source ? ", with a source" : "", need / 1e9);
    if (app_memory_check("tide stencil", need)) {
        rc = 1;
        goto done;
    }

    tide_stencil_options o;
    tide_stencil_options_init(&o);
    o.precision = c->prec;
    o.backend = c->backend;
    o.location = dev ? TIDE_LOCATION_DEVICE : TIDE_LOCATION_HOST;
    o.shape = a.shape;
    int user = a.shape == TIDE_STENCIL_STAR || a.shape == TIDE_STENCIL_BOX;
    o.weights = user ? w : NULL;
    o.radius = a.radius;
    o.npoints = user ? ntaps : 0;
    o.offsets = user ? (const int (*)[3])off : NULL;
    tide_bc bc[3];
    for (int d = 0; d < 3; d++)
        o.bc[d] = bc[d] = a.bc[d] == 'p' ? TIDE_BC_PERIODIC : TIDE_BC_DIRICHLET;
    o.fuse = a.fuse;
    o.level_steps = a.levels;
    o.overlap = a.overlap;
    o.exchange = (tide_exchange)c->exchange;
    /* Several ranks: the blocks of -grid, or the plan's: a first plan (no source yet) says this
     * rank's box. The timed plan is then made on the same boxes, with the source sized to the
     * box. */
    int st = TIDE_SUCCESS, grid[3] = {1, 1, 1};
    if (P > 1 && a.grid[0]) {
        int *g = a.grid, at[3] = {rank / (g[1] * g[2]), rank / g[2] % g[1], rank % g[2]};
        for (int d = 0; d < 3; d++) {
            box.lo[d] = (int)((long long)c->n[d] * at[d] / g[d]);
            box.hi[d] = (int)((long long)c->n[d] * (at[d] + 1) / g[d]);
        }
        memcpy(grid, g, sizeof grid);
    } else if (P > 1) {
        tide_stencil_info pi;
        if (!(st = tide_stencil_plan_create(ctx, c->n, NULL, &o, &plan))) {
            CHECK(tide_stencil_plan_info(plan, &pi));
            box = pi.box;
            memcpy(grid, pi.grid, sizeof grid);
        }
        tide_stencil_plan_destroy(plan);
        plan = NULL;
    }
    size_t count = (size_t)tide_box_count(&box), bytes = count * es;
    /* The source must exist when the plan is made: allocate it first (host, and its device
     * copy with -device). Every rank agrees before going on. */
    int ok = 1;
    if (a.source) {
        ok = !tide_host_alloc(ctx, bytes, &s0);
        if (ok && dev)
            ok = !tide_device_alloc(ctx, bytes, &xs);
        else if (ok)
            xs = s0;
    }
    int all_ok = ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        tide_warn("tide stencil: cannot allocate the source array (%zu bytes%s)\n", bytes,
                  dev ? ", host and device" : "");
        rc = 1;
        goto done;
    }
    if (a.source && !st) {
        tide_ref_fill(s0, &box, 1, 0, c->prec, c->n, c->seed + 1);
        if (dev)
            CHECK(tide_copy(ctx, xs, s0, bytes));
    }

    o.source = a.source ? xs : NULL;

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (!st)
        st = tide_stencil_plan_create(ctx, c->n, P > 1 ? &box : NULL, &o, &plan);
    if (st) { /* the same on every rank: an argument it refuses is a bad argument */
        app_say_failure("tide stencil", st, ctx);
        rc = st == TIDE_ERR_ARGUMENT ? 2 : 1;
        goto done;
    }
    double tplan_max = app_max(MPI_Wtime() - t0);

    tide_stencil_info info;
    CHECK(tide_stencil_plan_info(plan, &info));
    char desc[256];
    CHECK(tide_stencil_plan_describe(plan, desc, sizeof desc));
    int gpu = info.backend == TIDE_BACKEND_CUDA;

    /* Arrays: u0 the initial values (kept for restarts and the check), uh a host copy of a
     * result, xu the array the runs advance (device memory with -device). */
    ok = !tide_host_alloc(ctx, bytes, &u0) && !tide_host_alloc(ctx, bytes, &uh) &&
         !(dev ? tide_device_alloc(ctx, bytes, &xu) : tide_host_alloc(ctx, bytes, &xu));
    times = malloc(sizeof(double) * (size_t)c->runs);
    ok = ok && times;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        tide_warn("tide stencil: out of memory allocating the arrays (%zu bytes each)\n", bytes);
        rc = 1;
        goto done;
    }
    tide_ref_fill(u0, &box, 1, 0, c->prec, c->n, c->seed);

    double wsum = 0;
    for (int i = 0; i < ntaps; i++)
        wsum += w[i];
    char wtext[160];
    if (a.shape == TIDE_STENCIL_7PT)
        snprintf(wtext, sizeof wtext, "centre 1/4, faces 1/8 (the library's default)");
    else if (a.shape == TIDE_STENCIL_27PT)
        snprintf(wtext, sizeof wtext, "products of 1/4, 1/2, 1/4 (the library's default)");
    else
        snprintf(wtext, sizeof wtext, "%s with B the binomial smoothing of radius %d, "
                 "centre weight %.6g", a.shape == TIDE_STENCIL_STAR ? "(Bx + By + Bz)/3"
                                                                     : "Bx By Bz",
                 a.radius, a.shape == TIDE_STENCIL_STAR ? w[0] : w[ntaps / 2]);
    tide_say("Stencil: %d taps, radius %d, weights %s, sum %.15g\n", ntaps, a.radius, wtext,
             wsum);
    tide_say("Plan: %s (%d taps, radius %d, fuse %d step%s per pass, %g flops and %g bytes per "
             "point and step)\n", desc, info.taps, info.radius, info.fuse,
             info.fuse == 1 ? "" : "s", info.flops, info.bytes_per_step);
    double halo_most = app_max((double)info.halo_points);
    if (P > 1)
        tide_say("Ranks: the %s%dx%dx%d process grid, rank 0's block [%d,%d)x[%d,%d)x"
                 "[%d,%d); a halo of %d points (fuse %d x radius %d) filled before each pass, "
                 "at most %.0f points received per exchange\n", a.grid[0] ? "" : "plan's ",
                 grid[0], grid[1], grid[2],
                 box.lo[0], box.hi[0], box.lo[1], box.hi[1], box.lo[2],
                 box.hi[2], info.fuse * info.radius, info.fuse, info.radius, halo_most);
    char mu[32], mh[32], mp[32], md[32];
    mb((double)info.bytes, mu, sizeof mu);
    mb((double)info.host_bytes, mh, sizeof mh);
    mb((double)info.pinned_bytes, mp, sizeof mp);
    mb((double)info.device_bytes, md, sizeof md);
    tide_say("Memory: u %s%s in %s memory; the plan holds %s host, %s pinned, %s device\n", mu,
             a.source ? " and the source as much" : "", dev ? "device" : "host", mh, mp, md);
    if (info.taps != ntaps)
        tide_warn("tide stencil: the plan reports %d taps, the shape has %d\n", info.taps,
                  ntaps);

    /* ---- the check: the plan's steps against the oracle's, or a one-step plan's ---- */
    const char *check_kind = "none";
    compare_result cr = {0, 0, 0};
    int passed = 1;
    run_arg ra = {ctx, plan, u0, xu, bytes, a.steps};
    if (a.check) {
        CHECK(restart(&ra));
        CHECK(advance(&ra));
        CHECK(tide_copy(ctx, uh, xu, bytes));
        if (!(uref = malloc(bytes + 1)))
            ok = 0;
        if (ok && points <= CHECK_POINTS) { /* every rank: the whole grid, then its box */
            check_kind = "oracle";
            size_t wbytes = (size_t)points * es;
            void *gu = malloc(wbytes), *gs = a.source ? malloc(wbytes) : NULL;
            int rst = !gu || (a.source && !gs) ? TIDE_ERR_NOMEM : TIDE_SUCCESS;
            if (!rst) {
                tide_ref_fill(gu, &whole, 1, 0, c->prec, c->n, c->seed);
                if (gs)
                    tide_ref_fill(gs, &whole, 1, 0, c->prec, c->n, c->seed + 1);
                rst = tide_ref_stencil(c->n, dbl, (tide_stencil_shape)a.shape, ntaps,
                                       (const int (*)[3])off, w, bc, gs, gu, a.steps);
            }
            if (!rst)
                box_of(uref, gu, c->n, &box, es);
            if (rst) {
                tide_warn("tide stencil: the oracle failed: %s\n", tide_strerror(rst));
                ok = 0;
            }
            free(gu);
            free(gs);
        } else if (ok) { /* a one-step plan advances xu from u0 again, then into uref */
            check_kind = "fuse1";
            tide_stencil_options o1 = o;
            o1.fuse = 1;
            run_arg r1 = {ctx, NULL, u0, xu, bytes, a.steps};
            if ((st = tide_stencil_plan_create(ctx, c->n, P > 1 ? &box : NULL, &o1, &plan1)) ||
                (r1.plan = plan1, st = restart(&r1)) || (st = advance(&r1)) ||
                (st = tide_copy(ctx, uref, xu, bytes))) {
                tide_warn("tide stencil: the one-step plan of the check: %s: %s\n",
                          tide_strerror(st), tide_last_error(ctx));
                ok = 0;
            }
            tide_stencil_plan_destroy(plan1);
            plan1 = NULL;
        }
        MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (!all_ok) {
            if (!uref)
                tide_warn("tide stencil: out of memory for the check's copy (%zu bytes)\n",
                          bytes);
            rc = 1;
            goto done;
        }
        compare(uh, uref, (long long)count, dbl, &cr);
        long long differ = cr.differ;
        MPI_Allreduce(&differ, &cr.differ, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        cr.max_abs = app_max(cr.max_abs);
        cr.nan = app_max(cr.nan) > 0;
        passed = cr.differ == 0;
        free(uref);
        uref = NULL;
    }

    /* ---- timing: one warm-up run, then RUNS runs, each from the initial values ---- */
    CHECK(restart(&ra));
    CHECK(advance(&ra));
    CHECK(app_time_runs("tide stencil", c->progress, c->runs, restart, advance, &ra, 1, times));
    app_stats ts;
    app_stats_of(times, c->runs, &ts);
    /* Several ranks: the last timed run's halo exchanges, against the bytes the busiest
     * receiver takes at the rate of MPI_Isend/Irecv between every pair of ranks, measured
     * now with that many bytes per rank */
    CHECK(tide_stencil_plan_info(plan, &info));
    double halo_s = app_max(info.halo_seconds), halo_bytes = halo_most * (double)es, xrate = 0;
    int overlapped = app_max(info.overlapped) > 0;
    int nccl = info.halo_exchange == TIDE_EXCHANGE_NCCL;
    if (P > 1)
        CHECK(tide_measure_exchange(ctx, info.halo_exchange, (size_t)halo_bytes + 1, &xrate));
    double halo_bound = P > 1 && xrate > 0 ? info.exchanges * app_seconds(halo_bytes, xrate)
                                           : NAN; /* JSON null on one rank */
    /* Memory usage: what the plan holds anywhere, and u and the source wherever they live
     * (not the app's host copies for restarts and the check). */
    double mem = (double)info.host_bytes + (double)info.pinned_bytes +
                 (double)info.device_bytes + (double)bytes * (a.source ? 2 : 1);

    /* ---- the figures against the memory roofline ---- */
    tide_rates rates;
    CHECK(app_measure_rates(ctx, app_rate_bytes((double)bytes), &rates));
    /* several ranks copy at once (measured together): their rates add up, a shared GPU's
     * counted once */
    double rate = app_sum_rates(ctx, gpu ? rates.d2d : rates.host_copy, gpu);
    double cells = (double)points * a.steps;
    double gcells = ts.median > 0 ? cells / ts.median * 1e-9 : 0;
    double bound_gcells = info.bytes_per_step > 0 ? rate / info.bytes_per_step : 0;
    double fused_gcells = bound_gcells * (info.fuse > 0 ? info.fuse : 1);
    double ratio = bound_gcells > 0 ? gcells / bound_gcells : 0;
    double fused_ratio = fused_gcells > 0 ? gcells / fused_gcells : 0;
    double bound_s = bound_gcells > 0 ? cells / (bound_gcells * 1e9) : 0;

    double max_error = cr.nan ? NAN : cr.max_abs; /* null in JSON where not finite */
    app_say_timing(tplan_max, &ts, info.flops * cells, mem);
    if (!a.check) {
        tide_say("Verification: skipped (-no-check)\n");
    } else {
        if (cr.nan)
            tide_say("Max error: nan (a difference is not finite)\n");
        else
            tide_say("Max error: %.6g\n", max_error);
        if (!strcmp(check_kind, "oracle"))
            tide_say("Reference: the naive oracle (tide_ref_stencil) on a host copy of the whole "
                     "grid, %d steps, compared bitwise%s: %lld of %lld points differ\n", a.steps,
                     P > 1 ? " (each rank its block)" : "", cr.differ, points);
        else
            tide_say("Reference: a second plan with fuse 1 (one step per pass) from the same "
                     "initial data, %d steps, compared bitwise (the grid is above 2^21 points "
                     "for the oracle)%s: %lld of %lld points differ\n", a.steps,
                     info.fuse == 1 ? "; the timed plan also does one step per pass" : "",
                     cr.differ, points);
        tide_say("Verification: %s (%lld differing points, bitwise)\n",
                 passed ? "passed" : "FAILED", cr.differ);
    }
    if (a.steps > 0 && bound_gcells > 0) {
        tide_say("Throughput: %.6g GCell/s (%lld points x %d steps / time per run)\n", gcells,
                 points, a.steps);
        char what[300];
        snprintf(what, sizeof what, "one step per pass: %g bytes per point and step at the "
                 "measured %s copy rate %.4g GB/s, %.4g GCell/s", info.bytes_per_step,
                 gpu ? "device" : "host", rate, bound_gcells);
        app_say_bound(bound_s, what, ts.median);
        tide_say("Roofline: bound %.4g GCell/s (one step per pass), figure / bound %.3g%s; "
                 "fused bound %.4g GCell/s (%d step%s per pass, %g bytes per point and step), "
                 "figure / fused bound %.3g\n", bound_gcells, ratio,
                 ratio > 1 ? " (above 1: the fused passes beat one pass per step)" : "",
                 fused_gcells, info.fuse, info.fuse == 1 ? "" : "s",
                 info.bytes_per_step / (info.fuse > 0 ? info.fuse : 1), fused_ratio);
        if (gpu && !dev && info.slabs > 0) {
            /* out of card: each pass sends u up (the source too) and back down once */
            long long passes = (a.steps + info.fuse - 1) / info.fuse;
            double up = (double)bytes * (a.source ? 2 : 1), down = (double)bytes;
            double pass_s = fmax(fmax(app_seconds(up, rates.h2d), app_seconds(down, rates.d2h)),
                                 app_seconds(up + down, rates.both));
            double pcie_gcells = pass_s > 0 ? cells / (passes * pass_s) * 1e-9 : 0;
            tide_say("Out of card: %d slabs per pass through the GPU, %d steps per pass, %lld "
                     "passes; PCIe bound %.4g GCell/s (each pass moves u%s up and u down: %.3g "
                     "s at the measured rates %.3g GB/s up, %.3g down, %.3g both ways), figure "
                     "/ PCIe bound %.3g\n", info.slabs, info.fuse, passes, pcie_gcells,
                     a.source ? " and the source" : "", pass_s, rates.h2d, rates.d2h,
                     rates.both, pcie_gcells > 0 ? gcells / pcie_gcells : 0);
        } else if (gpu && !dev)
            tide_say("Host arrays: each run also copies u up and down%s over PCIe, %.3g s at "
                     "the measured one-direction rates (%.3g GB/s up, %.3g GB/s down), not in "
                     "the bounds\n", a.source ? " and the source up" : "",
                     app_seconds((double)bytes * (a.source ? 2 : 1), rates.h2d) +
                     app_seconds((double)bytes, rates.d2h), rates.h2d, rates.d2h);
    } else {
        tide_say("Throughput: not measured (%s)\n", a.steps == 0 ? "0 steps per run"
                                                                 : "no bytes per step");
    }
    if (P > 1)
        tide_say("Halo: %lld exchanges per run%s, %.4g s in them on the slowest rank (%.3g of "
                 "the run); at most %.4g MB received per exchange: %.4g s at the measured "
                 "exchange rate %.4g GB/s (%s, every pair of ranks), exchange time / that "
                 "%.3g\n", info.exchanges,
                 overlapped ? " beside the sweeps of the points that need no halo" : "", halo_s,
                 ts.median > 0 ? halo_s / ts.median : 0,
                 halo_bytes / 1e6, halo_bound, xrate,
                 nccl ? "NCCL send/recv, GPU to GPU" : "MPI_Isend/Irecv", halo_s / halo_bound);

    if (c->json && rank == 0) {
        cJSON *j = app_json_head("stencil", c, P, threads, info.backend, desc, info.exchanges);
        cJSON_AddStringToObject(j, "shape", a.shape_name);
        cJSON_AddNumberToObject(j, "radius", info.radius);
        cJSON_AddNumberToObject(j, "taps", info.taps);
        cJSON_AddStringToObject(j, "bc", a.bc);
        cJSON_AddNumberToObject(j, "steps", a.steps);
        cJSON_AddNumberToObject(j, "fuse", info.fuse);
        cJSON_AddNumberToObject(j, "slabs", info.slabs);
        cJSON_AddStringToObject(j, "location", dev ? "device" : "host");
        cJSON_AddBoolToObject(j, "source", a.source);
        cJSON_AddItemToObject(j, "grid", cJSON_CreateIntArray(grid, 3));
        cJSON_AddNumberToObject(j, "halo_points_max", halo_most);
        app_json_real(j, "halo_seconds", halo_s);
        cJSON_AddBoolToObject(j, "overlapped", overlapped);
        cJSON_AddStringToObject(j, "halo_exchange",
                                P > 1 ? app_exchange_name(info.halo_exchange) : "none");
        app_json_real(j, "exchange_rate_gbps", P > 1 ? xrate : NAN);
        app_json_real(j, "halo_bound_seconds", halo_bound);
        app_json_rates(j, &rates, P > 1 ? xrate : 0); /* the halos' transport's rate */
        app_json_timing(j, tplan_max, &ts, info.flops * cells, mem);
        app_json_real(j, "gcells", gcells);
        app_json_real(j, "bytes_per_step", info.bytes_per_step);
        app_json_real(j, "copy_rate_gbps", rate);
        app_json_real(j, "bound_gcells", bound_gcells);
        app_json_real(j, "bound_ratio", ratio);
        app_json_real(j, "fused_bound_gcells", fused_gcells);
        app_json_real(j, "fused_bound_ratio", fused_ratio);
        app_json_real(j, "bound_seconds", bound_s);
        cJSON_AddNumberToObject(j, "array_bytes", (double)bytes);
        cJSON_AddNumberToObject(j, "host_bytes", (double)info.host_bytes);
        cJSON_AddNumberToObject(j, "pinned_bytes", (double)info.pinned_bytes);
        cJSON_AddNumberToObject(j, "device_bytes", (double)info.device_bytes);
        cJSON_AddStringToObject(j, "check", a.check ? check_kind : "none");
        app_json_real(j, "differing_points", a.check ? (double)cr.differ : NAN);
        app_json_real(j, "max_error", a.check ? max_error : NAN);
        if (a.check)
            cJSON_AddBoolToObject(j, "verified", passed);
        else
            cJSON_AddNullToObject(j, "verified");
        rc = app_json_write("tide stencil", j, c->json);
    }
    if (!passed)
        rc = 1;
done:
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    tide_stencil_plan_destroy(plan);
    tide_stencil_plan_destroy(plan1);
    if (dev) {
        tide_device_free(ctx, xu);
        tide_device_free(ctx, xs);
    } else {
        tide_host_free(ctx, xu);
    }
    tide_host_free(ctx, u0);
    tide_host_free(ctx, uh);
    tide_host_free(ctx, s0);
    tide_context_destroy(ctx);
    free(uref);
    free(times);
    free(off);
    free(w);
    return rc;
}
