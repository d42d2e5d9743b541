/*
 * test_fft.c: distributed 3D FFTs checked against the serial FFTW oracle (apps/reference.c).
 *
 * Run under mpiexec with 1, 2, 3, 4 and 6 ranks. Each case makes a plan, transforms forward and
 * backward, and checks: forward against the oracle, backward (fed with the forward output,
 * Hermitian for R2C) against the oracle, the round trip against the input, and that
 * out-of-place transforms leave their input alone. The option matrix is covered by rotating
 * the options across the sizes and layouts instead of taking the full cartesian product, which
 * would not fit the time budget of an oversubscribed 6-rank run.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "reference.h"
#include "tide.h"

/* Fixed accuracy bar: a failure here is a bug, not a tolerance to loosen. */
#define TOL_DOUBLE 1e-12
#define TOL_FLOAT 1e-5

/* How a side's boxes are chosen. */
typedef enum {
    LAY_NULL,   /* pass NULL: the plan picks (the decomposition's layout) */
    LAY_SLAB,   /* tide_box_slab along param */
    LAY_PENCIL, /* tide_box_pencil, whole along param */
    LAY_GRID,   /* tide_proc_grid with split mask param (bit d: split d), tide_box_in_grid */
    LAY_RANDOM  /* random recursive bisection with random orders, seed param */
} lay_kind;

typedef struct {
    lay_kind kind;
    int param;
    int randorder; /* each rank stores its box in a random order */
} lay;

typedef struct {
    int n[3];
    tide_fft_type type;
    tide_precision prec;
    lay in, out;
    tide_decomposition decomp;
    int transposed;
    tide_exchange exch;
    int batch;
    int inplace;
    tide_scaling scaling;
    tide_planning planning;
    unsigned seed;
    size_t offset; /* host arrays start this many bytes past a 64-byte boundary */
} fft_case;

static const char *decomp_name[] = {"auto", "slabs", "pencils"};
static const char *exch_name[] = {"auto", "a2av", "p2p"};
static const char *scale_name[] = {"none", "full", "symmetric"};

static const char *lay_str(const lay *l, char *buf, size_t len)
{
    static const char *names[] = {"null", "slab", "pencil", "grid", "random"};
    if (l->kind == LAY_NULL)
        snprintf(buf, len, "null");
    else
        snprintf(buf, len, "%s%d%s", names[l->kind], l->param, l->randorder ? "/ro" : "");
    return buf;
}

static void case_str(const fft_case *c, char *buf, size_t len)
{
    char a[32], b[32], off[32] = "";
    if (c->offset)
        snprintf(off, sizeof off, " offset=%zu", c->offset);
    snprintf(buf, len,
             "n=%dx%dx%d %s %s in=%s out=%s decomp=%s%s exch=%s batch=%d %s scale=%s%s seed=%u%s",
             c->n[0], c->n[1], c->n[2], c->type == TIDE_R2C ? "r2c" : "c2c",
             c->prec == TIDE_FLOAT ? "float" : "double", lay_str(&c->in, a, sizeof a),
             lay_str(&c->out, b, sizeof b), decomp_name[c->decomp],
             c->transposed ? "+transposed_out" : "", exch_name[c->exch], c->batch,
             c->inplace ? "in-place" : "out-of-place", scale_name[c->scaling],
             c->planning == TIDE_PLAN_MEASURE ? " measure" : "", c->seed, off);
}

/* This rank's box of grid g for layout l. Returns 0 on success (the helpers can fail only on
 * a bug, which the caller reports). */
static int make_box(const lay *l, const int g[3], int rank, int nranks, unsigned seed,
                    tide_box *box)
{
    int st = 0;
    switch (l->kind) {
    case LAY_NULL:
        return 0;
    case LAY_SLAB:
        st = tide_box_slab(g, l->param, nranks, rank, box);
        break;
    case LAY_PENCIL:
        st = tide_box_pencil(g, l->param, nranks, rank, box);
        break;
    case LAY_GRID: {
        int split[3] = {l->param & 1, (l->param >> 1) & 1, (l->param >> 2) & 1}, grid[3];
        st = tide_proc_grid(nranks, g, split, grid);
        if (st == 0)
            st = tide_box_in_grid(g, grid, rank, box);
        break;
    }
    case LAY_RANDOM: {
        tide_box *all = malloc((size_t)nranks * sizeof *all);
        tt_rng rng;
        tt_rng_seed(&rng, (uint64_t)l->param * 7919u + seed);
        tt_tiling_random(g, nranks, &rng, all);
        tt_random_orders(nranks, &rng, all);
        *box = all[rank];
        free(all);
        return 0;
    }
    }
    if (st == 0 && l->randorder) {
        /* Per-rank orders: ranks disagreeing on storage order is part of what is tested. */
        tt_rng rng;
        tt_rng_seed(&rng, seed * 131u + (unsigned)rank * 17u + (unsigned)l->kind);
        tt_perm3(tt_rng_below(&rng, 6), box->order);
    }
    return st;
}

/* Element value i (counted in reals) of an array of the given precision. */
static double elem(const void *a, tide_precision prec, size_t i)
{
    return prec == TIDE_FLOAT ? (double)((const float *)a)[i] : ((const double *)a)[i];
}

/* Relative L2 distance over all ranks between got and factor * want (n reals each). */
static double rel_dist(MPI_Comm comm, const void *got, const void *want, size_t n, double factor,
                       tide_precision prec)
{
    double loc[2] = {0, 0}, glob[2];
    for (size_t i = 0; i < n; i++) {
        double w = factor * elem(want, prec, i), d = elem(got, prec, i) - w;
        loc[0] += d * d;
        loc[1] += w * w;
    }
    MPI_Allreduce(loc, glob, 2, MPI_DOUBLE, MPI_SUM, comm);
    return glob[1] > 0 ? sqrt(glob[0] / glob[1]) : sqrt(glob[0]);
}

static int same_box(const tide_box *a, const tide_box *b)
{
    return memcmp(a, b, sizeof *a) == 0;
}

/* Arrays on the GPU (TIDE_TEST_LOCATION=device): each direction runs on device copies. */
static int on_device;
static int forced_exchange = -1; /* TIDE_TEST_EXCHANGE: every plan's exchange, or -1 */
/* Plans that streamed host arrays through the GPU in chunks, those of them that exchanged over
 * MPI in host memory, and their fewest and most chunks per pass (TIDE_TEST_BUDGET makes the
 * device budget small enough for that). */
static int streamed, streamed_mpi, fewest_chunks, most_chunks;
/* ... those that kept the data on the device between the passes, and their most chunks. */
static int resident, resident_chunks;
/* Plans that ran Tide's own passes on this rank (tide_fft_plan_describe: "[plane pass]",
 * "[strided pass]" or "[plane and strided passes]"), those of them that ran the strided pass
 * (and were real transforms), and the real transforms that ran the plane pass. */
static int plane_plans, strided_plans, real_strided_plans, real_plane_plans;

/* bytes of host memory starting offset bytes past a 64-byte boundary; NULL for 0 bytes or
 * when out of memory. *base gets what to free. */
static void *at_offset(size_t bytes, size_t offset, void **base)
{
    *base = bytes ? malloc(bytes + 64 + offset) : NULL;
    if (!*base)
        return NULL;
    size_t pad = (64 - (uintptr_t)*base % 64) % 64;
    return (char *)*base + pad + offset;
}

/* A device array of bytes, or NULL (bytes 0, or host mode). Aborts when out of memory. */
static void *device_array(tide_context *ctx, MPI_Comm comm, size_t bytes)
{
    void *d = NULL;
    if (on_device && bytes && tide_device_alloc(ctx, bytes, &d)) {
        fprintf(stderr, "test_fft: %s\n", tide_last_error(ctx));
        MPI_Abort(comm, 2);
    }
    return d;
}

/* One direction of a case: transform src into dst (through the device copies dsrc/ddst when
 * given), check that an out-of-place transform left its input as ref_in, and compare dst with
 * the oracle's transform of ref_in. Returns 0 when the transform itself failed (nothing later
 * can be checked). */
static int check_direction(tt_tally *t, MPI_Comm comm, tide_context *ctx, const fft_case *c,
                           const char *desc, tide_fft_plan *plan, int dir, const void *src,
                           void *dst, void *dsrc, void *ddst, const void *ref_in,
                           size_t in_bytes, size_t out_bytes, const tide_box *sbox,
                           const tide_box *dbox, double scale, double tol)
{
    const char *name = dir < 0 ? "forward" : "backward";
    int st = 0;
    if (on_device)
        st = tide_copy(ctx, dsrc, src, in_bytes);
    const void *xs = on_device ? dsrc : src;
    void *xd = on_device ? ddst : dst;
    if (!st)
        st = dir < 0 ? tide_fft_forward(plan, xs, xd) : tide_fft_backward(plan, xs, xd);
    if (!tt_check(t, comm, st == 0, "%s: %s: %s: %s", desc, name, tide_strerror(st),
                  tide_last_error(ctx)))
        return 0;
    void *kept = NULL; /* the input as the transform left it */
    if (on_device) {
        kept = in_bytes && !c->inplace ? malloc(in_bytes) : NULL;
        st = tide_copy(ctx, dst, ddst, out_bytes);
        if (!st && kept)
            st = tide_copy(ctx, kept, dsrc, in_bytes);
        tt_check(t, comm, st == 0, "%s: %s: copying the results back failed: %s", desc, name,
                 tide_last_error(ctx));
    }
    if (!c->inplace)
        tt_check(t, comm, in_bytes == 0 || memcmp(kept ? kept : src, ref_in, in_bytes) == 0,
                 "%s: out-of-place %s modified its input", desc, name);
    free(kept);
    tide_ref_error e = {0, 0, 0};
    st = tide_ref_check(comm, c->n, c->type, c->prec, c->batch, dir, scale, sbox, ref_in, dbox,
                        dst, &e);
    tt_check(t, comm, st == 0 && e.rel_l2 <= tol,
             "%s: %s vs oracle: status %d, rel_l2 %.3g (tol %.0e), max_abs %.3g, max_ref %.3g",
             desc, name, st, e.rel_l2, tol, e.max_abs, e.max_ref);
    return 1;
}

/* Runs one case; returns 1 when every check passed (the same on every rank). */
static int run_case(tide_context *ctx, MPI_Comm comm, const fft_case *c, tt_tally *t,
                    int verbose)
{
    int rank, nranks;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nranks);
    char desc[256];
    case_str(c, desc, sizeof desc);
    int failed_before = t->failed;

    int r2c = c->type == TIDE_R2C;
    int cn[3] = {c->n[0], c->n[1], r2c ? c->n[2] / 2 + 1 : c->n[2]}; /* the output grid */
    tide_box want_in = {{0, 0, 0}, {0, 0, 0}, {0, 1, 2}}, want_out = want_in;
    int st_in = make_box(&c->in, c->n, rank, nranks, c->seed, &want_in);
    int st_out = make_box(&c->out, cn, rank, nranks, c->seed + 1, &want_out);
    if (!tt_check(t, comm, st_in == 0 && st_out == 0, "%s: box helper failed (%d, %d)", desc,
                  st_in, st_out))
        return 0;

    tide_fft_options o;
    tide_fft_options_init(&o);
    o.type = c->type;
    o.precision = c->prec;
    o.decomposition = c->decomp;
    o.exchange = forced_exchange >= 0 ? (tide_exchange)forced_exchange : c->exch;
    o.scaling = c->scaling;
    o.batch = c->batch;
    o.transposed_out = c->transposed;
    o.planning = c->planning;
    o.location = on_device ? TIDE_LOCATION_DEVICE : TIDE_LOCATION_HOST;
    /* every other case's device arrays (made after the plan, freed after it is destroyed)
     * promised to outlive it: direct stores then go into the output */
    o.arrays_kept = on_device && c->seed % 2;
    tide_fft_plan *plan = NULL;
    int st = tide_fft_plan_create(ctx, c->n, c->in.kind == LAY_NULL ? NULL : &want_in,
                                  c->out.kind == LAY_NULL ? NULL : &want_out, &o, &plan);
    if (!tt_check(t, comm, st == 0, "%s: plan_create: %s: %s", desc, tide_strerror(st),
                  tide_last_error(ctx))) {
        tide_fft_plan_destroy(plan);
        return 0;
    }

    if (verbose) {
        /* Every rank's steps: a rank running a different chain than the others hangs. */
        char mine[160], *all = rank == 0 ? malloc((size_t)nranks * sizeof mine) : NULL;
        if (tide_fft_plan_describe(plan, mine, sizeof mine) != 0)
            snprintf(mine, sizeof mine, "(describe failed)");
        MPI_Gather(mine, sizeof mine, MPI_CHAR, all, sizeof mine, MPI_CHAR, 0, comm);
        for (int r = 0; rank == 0 && r < nranks; r++)
            printf("    rank %d: %s\n", r, all + (size_t)r * sizeof mine);
        fflush(stdout);
        free(all);
    }

    char steps[512];
    if (tide_fft_plan_describe(plan, steps, sizeof steps) == 0) {
        int strided = strstr(steps, "[plane and strided passes]") != NULL ||
                      strstr(steps, "[strided pass]") != NULL;
        plane_plans += strided || strstr(steps, "[plane pass]") != NULL;
        strided_plans += strided;
        real_strided_plans += strided && c->type == TIDE_R2C;
        real_plane_plans += c->type == TIDE_R2C && (strstr(steps, "[plane pass]") != NULL ||
                                                    strstr(steps, "[plane and strided") != NULL);
    }
    tide_box ib, ob;
    tide_fft_info info;
    int st_b = tide_fft_plan_boxes(plan, &ib, &ob), st_i = tide_fft_plan_info(plan, &info);
    size_t rsize = c->prec == TIDE_FLOAT ? sizeof(float) : sizeof(double);
    size_t in_reals = (size_t)tide_box_count(&ib) * (size_t)c->batch * (r2c ? 1 : 2);
    size_t out_reals = (size_t)tide_box_count(&ob) * (size_t)c->batch * 2;
    int consistent = st_b == 0 && st_i == 0 && info.in_count == tide_box_count(&ib) &&
                     info.out_count == tide_box_count(&ob) &&
                     info.in_bytes == in_reals * rsize && info.out_bytes == out_reals * rsize &&
                     info.inplace_bytes >= info.in_bytes && info.inplace_bytes >= info.out_bytes;
    /* An explicit exchange is what the reshapes use; transposed_out skips the final exchange
     * of the decomposition's chain (slabs: one in all, pencils: two). */
    if (o.exchange != TIDE_EXCHANGE_AUTO && info.exchanges > 0)
        consistent = consistent && info.exchange == o.exchange;
    if (c->transposed && c->in.kind == LAY_NULL && c->decomp != TIDE_DECOMP_AUTO)
        consistent = consistent && info.exchanges <= (c->decomp == TIDE_DECOMP_SLABS ? 1 : 2);
    if (c->in.kind != LAY_NULL)
        consistent = consistent && same_box(&ib, &want_in);
    if (c->out.kind != LAY_NULL)
        consistent = consistent && same_box(&ob, &want_out);
    if (info.slots > 1) { /* in-card GPU plans use one slot */
        /* streamed: two exchanges, one when the output is left in y-slabs, none alone */
        tide_box xslab;
        tide_box_slab(cn, 0, nranks, rank, &xslab);
        consistent = consistent &&
                     info.exchanges == (nranks == 1 ? 0 : same_box(&ob, &xslab) ? 2 : 1);
        streamed++;
        if (info.round_trips == 1) {
            resident++;
            resident_chunks = info.chunks > resident_chunks ? info.chunks : resident_chunks;
        }
        streamed_mpi += info.exchanges > 0 && info.exchange == TIDE_EXCHANGE_P2P;
        if (!fewest_chunks || info.chunks < fewest_chunks)
            fewest_chunks = info.chunks;
        if (info.chunks > most_chunks)
            most_chunks = info.chunks;
    }
    /* The plan's cost agrees with its info; a c2c transform's flops add up over the ranks to
     * the nominal 5 N log2 N per field (a forward transform is unscaled unless symmetric). */
    tide_fft_cost cost;
    int st_c = tide_fft_plan_cost(plan, -1, &cost);
    consistent = consistent && st_c == 0 && cost.exchanges == info.exchanges &&
                 cost.fft_passes == info.local_transforms &&
                 (nranks > 1 || cost.exchange_bytes == 0) &&
                 (on_device || info.backend == TIDE_BACKEND_CPU ||
                  cost.h2d_bytes == (double)(info.round_trips == 2
                                                 ? info.in_bytes + info.out_bytes
                                                 : info.in_bytes));
    double flops = 0, nominal = 0;
    MPI_Allreduce(&cost.flops, &flops, 1, MPI_DOUBLE, MPI_SUM, comm);
    if (!r2c && c->scaling != TIDE_SCALE_SYMMETRIC && info.slots <= 1) {
        double N = (double)c->n[0] * c->n[1] * c->n[2];
        nominal = 5 * N * log2(N) * c->batch;
        consistent = consistent && fabs(flops - nominal) <= 1e-9 * nominal;
    }
    if (!tt_check(t, comm, consistent,
                  "%s: plan_boxes/plan_info/plan_cost inconsistent (in_count %lld, out_count "
                  "%lld, in_bytes %zu, out_bytes %zu, inplace_bytes %zu, exchange %d, "
                  "exchanges %d, cost: %d exchanges, %d passes, flops %g of nominal %g)",
                  desc, info.in_count, info.out_count, info.in_bytes, info.out_bytes,
                  info.inplace_bytes, (int)info.exchange, info.exchanges, cost.exchanges,
                  cost.fft_passes, flops, nominal)) {
        tide_fft_plan_destroy(plan);
        return 0;
    }

    /* orig: the input, never handed to Tide; fwd: the forward output as Tide produced it. */
    size_t in_bytes = in_reals * rsize, out_bytes = out_reals * rsize;
    size_t big = info.inplace_bytes;
    if (big < in_bytes)
        big = in_bytes;
    if (big < out_bytes)
        big = out_bytes;
    void *orig = in_bytes ? malloc(in_bytes) : NULL;
    void *fwd = out_bytes ? malloc(out_bytes) : NULL;
    void *a = NULL, *b = NULL; /* in-place: a == b; else a input side, b output side */
    void *abase = NULL, *bbase = NULL; /* their allocations */
    if (c->inplace) {
        a = b = at_offset(big, c->offset, &abase);
    } else {
        a = at_offset(in_bytes, c->offset, &abase);
        b = at_offset(out_bytes, c->offset, &bbase);
    }
    if ((in_bytes && (!orig || !a)) || (out_bytes && (!fwd || !b))) {
        fprintf(stderr, "test_fft: out of memory\n");
        MPI_Abort(comm, 2);
    }
    void *da = device_array(ctx, comm, c->inplace ? big : in_bytes);
    void *db = c->inplace ? da : device_array(ctx, comm, out_bytes);
    tide_ref_fill(orig, &ib, c->batch, !r2c, c->prec, c->n, c->seed);
    if (in_bytes)
        memcpy(a, orig, in_bytes);

    double N = (double)c->n[0] * c->n[1] * c->n[2];
    double fscale = c->scaling == TIDE_SCALE_SYMMETRIC ? 1 / sqrt(N) : 1;
    double bscale = c->scaling == TIDE_SCALE_FULL        ? 1 / N
                    : c->scaling == TIDE_SCALE_SYMMETRIC ? 1 / sqrt(N)
                                                         : 1;
    double tol = c->prec == TIDE_FLOAT ? TOL_FLOAT : TOL_DOUBLE;
    /* ---- forward, then backward fed with the forward output (Hermitian for R2C) ---- */
    if (!check_direction(t, comm, ctx, c, desc, plan, -1, a, b, da, db, orig, in_bytes,
                         out_bytes, &ib, &ob, fscale, tol))
        goto done;
    if (out_bytes)
        memcpy(fwd, b, out_bytes);
    if (!check_direction(t, comm, ctx, c, desc, plan, +1, b, a, db, da, fwd, out_bytes, in_bytes,
                         &ob, &ib, bscale, tol))
        goto done;

    /* ---- round trip: backward(forward(x)) = x, times N when unscaled ---- */
    double factor = c->scaling == TIDE_SCALE_NONE ? N : 1;
    double rt = rel_dist(comm, a, orig, in_reals, factor, c->prec);
    tt_check(t, comm, rt <= tol, "%s: round trip: rel_l2 %.3g (tol %.0e)", desc, rt, tol);

done:
    tide_fft_plan_destroy(plan);
    tide_device_free(ctx, da);
    if (!c->inplace)
        tide_device_free(ctx, db);
    free(orig);
    free(fwd);
    free(abase);
    free(bbase);
    return t->failed == failed_before;
}

/* Odd, even and prime extents; degenerate dimensions of 1 in every position (the R2C halved
 * dimension included); grids smaller than the rank count, so some boxes are empty. */
static const int sizes[][3] = {
    {7, 11, 13}, {45, 36, 50}, {1, 1, 64}, {64, 1, 1},  {16, 16, 16}, {5, 3, 2},
    {12, 18, 10}, {2, 2, 2},   {17, 19, 23}, {1, 1, 1}, {4, 9, 2},    {6, 5, 7},
    {32, 24, 40}, {9, 1, 12},  {13, 8, 1},  {3, 50, 4}, {60, 2, 33},
};
enum { NSIZES = sizeof sizes / sizeof sizes[0], NCOMBOS = 17 };

/* Case k: size s, layout combination j; the other options rotate with k. NCOMBOS is prime and
 * so coprime to the rotation periods, so across the sizes every layout combination meets both
 * types, both precisions, every exchange and every scaling. */
static fft_case make_case(int s, int j)
{
    int k = s * NCOMBOS + j;
    fft_case c;
    memset(&c, 0, sizeof c);
    memcpy(c.n, sizes[s], sizeof c.n);
    c.type = k % 2 ? TIDE_R2C : TIDE_C2C;
    c.prec = (k / 2) % 2 ? TIDE_FLOAT : TIDE_DOUBLE;
    c.exch = (tide_exchange)((k / 4) % 3);
    c.inplace = (k / 3) % 2;
    c.scaling = (tide_scaling)((k / 6) % 3);
    c.batch = k % 5 == 3 ? 3 : 1;
    c.decomp = (tide_decomposition)(k % 3);
    c.seed = 1000u + (unsigned)k;
    /* FFTW_MEASURE now and then, on grids small enough for it to plan quickly; with
     * decomposition AUTO and the plan's own layouts (16^3 and 64 x 1 x 1 among them) several
     * ranks also time slabs against pencils and keep the faster, whose boxes the case uses. */
    c.planning = k % 7 == 5 && (long long)c.n[0] * c.n[1] * c.n[2] <= 4096 ? TIDE_PLAN_MEASURE
                                                                          : TIDE_PLAN_ESTIMATE;
    lay null = {LAY_NULL, 0, 0};
    c.in = c.out = null;
    switch (j) {
    case 0: /* the plan's own layouts, natural and transposed, for each decomposition */
    case 1:
    case 2:
    case 3:
    case 4:
    case 5:
        c.decomp = (tide_decomposition)(j % 3);
        c.transposed = j >= 3;
        break;
    case 6: /* slabs along one dimension in, another out */
        c.in = (lay){LAY_SLAB, s % 3, 0};
        c.out = (lay){LAY_SLAB, (s + 1) % 3, 0};
        break;
    case 7: /* pencils, with per-rank storage orders on the output */
        c.in = (lay){LAY_PENCIL, s % 3, 0};
        c.out = (lay){LAY_PENCIL, (s + 2) % 3, 1};
        break;
    case 8: { /* process grids split over different dimension sets */
        static const int masks[] = {3, 6, 5, 7, 1, 4};
        c.in = (lay){LAY_GRID, masks[s % 6], 0};
        c.out = (lay){LAY_GRID, masks[(s + 2) % 6], 0};
        break;
    }
    case 9: /* arbitrary tilings, different in and out */
        c.in = (lay){LAY_RANDOM, 1, 0};
        c.out = (lay){LAY_RANDOM, 2, 0};
        break;
    case 10: /* own input boxes, the plan's output layout */
        c.in = (lay){LAY_RANDOM, 3, 0};
        c.transposed = s % 2;
        break;
    case 11:
        c.out = (lay){LAY_RANDOM, 4, 0};
        break;
    case 12:
        c.in = (lay){LAY_SLAB, (s + 2) % 3, 1};
        c.out = (lay){LAY_RANDOM, 5, 0};
        break;
    case 13: /* more random tilings: the reshapes' hardest inputs */
        c.in = (lay){LAY_RANDOM, 6, 0};
        c.out = (lay){LAY_RANDOM, 7, 0};
        break;
    case 14:
        c.in = (lay){LAY_GRID, 7, 1};
        c.out = (lay){LAY_PENCIL, s % 3, 0};
        break;
    case 15:
        c.in = (lay){LAY_RANDOM, 8, 0};
        c.out = (lay){LAY_SLAB, (s + 1) % 3, 1};
        break;
    case 16: /* transposed output of a batch */
        c.transposed = 1;
        c.batch = 3;
        break;
    }
    return c;
}

/* Fuzz case i: small random sizes (down to 1) and every option drawn at random, to reach
 * corners the rotation above misses. Deterministic: the same i always gives the same case. */
static fft_case make_fuzz_case(int i)
{
    tt_rng rng;
    tt_rng_seed(&rng, 0xF0220000u + (unsigned)i);
    fft_case c;
    memset(&c, 0, sizeof c);
    for (int d = 0; d < 3; d++)
        c.n[d] = 1 + tt_rng_below(&rng, tt_rng_below(&rng, 4) ? 12 : 40);
    c.type = (tide_fft_type)tt_rng_below(&rng, 2);
    c.prec = (tide_precision)tt_rng_below(&rng, 2);
    c.exch = (tide_exchange)tt_rng_below(&rng, 3);
    c.decomp = (tide_decomposition)tt_rng_below(&rng, 3);
    c.scaling = (tide_scaling)tt_rng_below(&rng, 3);
    c.batch = 1 + tt_rng_below(&rng, 3);
    c.inplace = tt_rng_below(&rng, 2);
    c.planning = TIDE_PLAN_ESTIMATE;
    c.seed = 5000u + (unsigned)i;
    lay *sides[2] = {&c.in, &c.out};
    for (int k = 0; k < 2; k++) {
        sides[k]->kind = (lay_kind)tt_rng_below(&rng, 5);
        sides[k]->param = sides[k]->kind == LAY_GRID     ? 1 + tt_rng_below(&rng, 7)
                          : sides[k]->kind == LAY_RANDOM ? 10 + k
                                                         : tt_rng_below(&rng, 3);
        sides[k]->randorder = sides[k]->kind != LAY_NULL && tt_rng_below(&rng, 2);
    }
    c.transposed = c.out.kind == LAY_NULL && tt_rng_below(&rng, 2);
    return c;
}
/* Cases a streamed plan takes (c2c and r2c, x-slabs in and x- or y-slabs out, NULL or given
 * boxes, natural or transposed output, one or three fields, the automatic exchange or p2p),
 * on odd, prime and even sizes, run only with TIDE_TEST_BUDGET: with a small device budget
 * their host arrays stream through the GPU in chunks that do not divide the slabs. */
static fft_case make_streamed_case(int i)
{
    static const int n[][3] = {{7, 11, 13}, {16, 16, 16}, {9, 17, 5},  {31, 6, 20},
                               {12, 12, 12}, {5, 40, 3},  {24, 8, 33}, {17, 19, 23}};
    fft_case c;
    memset(&c, 0, sizeof c);
    memcpy(c.n, n[i % 8], sizeof c.n);
    c.type = (i / 3) % 3 == 1 ? TIDE_R2C : TIDE_C2C; /* with each of the options below */
    c.prec = i % 2 ? TIDE_FLOAT : TIDE_DOUBLE;
    c.inplace = (i / 2) % 2;
    c.scaling = (tide_scaling)(i % 3);
    c.decomp = i % 3 == 1 ? TIDE_DECOMP_SLABS : TIDE_DECOMP_AUTO;
    c.transposed = (i / 4) % 2;
    c.exch = i % 5 == 3 ? TIDE_EXCHANGE_P2P : TIDE_EXCHANGE_AUTO;
    c.batch = i % 9 == 5 ? 3 : 1; /* 14 and 23: transposed in place, fields of two lengths */
    c.in = c.out = (lay){LAY_NULL, 0, 0};
    if (i % 6 == 4) { /* the slabs given as boxes: x-slabs out, then y-slabs */
        c.in = (lay){LAY_SLAB, 0, 0};
        c.out = (lay){LAY_SLAB, (i / 6) % 2, 0};
        c.transposed = 0; /* only with outbox NULL */
    }
    c.seed = 5000u + (unsigned)i;
    return c;
}
enum { NSTREAMED = 24 };

/* Host arrays at addresses only their element type's alignment allows: complex double at 8
 * mod 16, real and complex float at 4 or 8 mod 16. FFTW's unaligned plans, the permuting
 * copies and the copies to and from the GPU take them; every rank count runs them. */
static fft_case make_misaligned_case(int i)
{
    static const struct {
        tide_fft_type type;
        tide_precision prec;
        size_t offset;
        int n[3];
    } m[] = {
        {TIDE_C2C, TIDE_DOUBLE, 8, {7, 11, 13}}, {TIDE_R2C, TIDE_DOUBLE, 8, {9, 17, 5}},
        {TIDE_R2C, TIDE_FLOAT, 4, {12, 6, 20}},  {TIDE_R2C, TIDE_FLOAT, 8, {5, 8, 9}},
        {TIDE_C2C, TIDE_FLOAT, 4, {6, 10, 7}},
    };
    fft_case c;
    memset(&c, 0, sizeof c);
    memcpy(c.n, m[i % 5].n, sizeof c.n);
    c.type = m[i % 5].type;
    c.prec = m[i % 5].prec;
    c.offset = m[i % 5].offset;
    c.inplace = i >= 5;
    c.decomp = (tide_decomposition)(i % 3);
    c.scaling = (tide_scaling)(i % 3);
    c.exch = TIDE_EXCHANGE_AUTO;
    c.batch = i % 4 == 3 ? 2 : 1;
    c.planning = TIDE_PLAN_ESTIMATE;
    c.in = c.out = (lay){LAY_NULL, 0, 0};
    if (i % 5 == 2) { /* arbitrary tilings with per-rank orders: strided copies */
        c.in = (lay){LAY_RANDOM, 20, 0};
        c.out = (lay){LAY_RANDOM, 21, 1};
    }
    c.transposed = i == 6;
    c.seed = 7000u + (unsigned)i;
    return c;
}
enum { NMISALIGNED = 10 };

/* Complex transforms whose planes Tide's plane pass takes on the GPU (powers of two from 64 in
 * the two fastest dimensions, one field), which it does with TIDE_FFT_ENGINE=plane (and a
 * measured plan where it is the faster): one rank's 3D transform (planes, then x by Tide's
 * strided pass where x has 64 to 1024 points, a power of two, else by cuFFT), the
 * slabs' fft(y,z) on several; a batch of two and pencils, which it does not take; in place and
 * not, natural and transposed, both precisions, planned with FFTW_MEASURE once. Cases 8 to 13:
 * real transforms; 8 to 11 those whose x the strided pass takes on one rank (x on the complex
 * side by Tide's strided pass; the planes by cuFFT's 2D real transforms where the real plane
 * pass does not take them), 9, 12 and 13 with planes the real plane pass takes (128 to 2048
 * reals along z, a power of two; 13 with x by cuFFT beside it). */
static fft_case make_plane_case(int i)
{
    static const int n[][3] = {{64, 64, 64},  {5, 64, 128},  {12, 128, 64}, {7, 64, 64},
                               {64, 64, 64},  {128, 64, 128}, {256, 32, 16}, {64, 64, 30},
                               {128, 64, 512}, {16, 128, 256}};
    fft_case c;
    memset(&c, 0, sizeof c);
    memcpy(c.n, n[i >= 12 ? i - 4 : i % 4 + 4 * (i >= 8)], sizeof c.n);
    c.type = i >= 8 ? TIDE_R2C : TIDE_C2C;
    c.prec = i % 2 ? TIDE_FLOAT : TIDE_DOUBLE;
    c.inplace = (i / 2) % 2;
    c.scaling = (tide_scaling)(i % 3);
    c.decomp = i == 6 ? TIDE_DECOMP_PENCILS : i % 3 ? TIDE_DECOMP_SLABS : TIDE_DECOMP_AUTO;
    c.transposed = i % 4 == 1;
    c.exch = TIDE_EXCHANGE_AUTO;
    c.batch = i == 5 ? 2 : 1;
    c.planning = i == 7 ? TIDE_PLAN_MEASURE : TIDE_PLAN_ESTIMATE;
    c.in = c.out = (lay){LAY_NULL, 0, 0};
    c.seed = 9000u + (unsigned)i;
    return c;
}
enum { NPLANE = 14 };

enum { NFUZZ = 80 };

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm comm = MPI_COMM_WORLD;
    int rank;
    MPI_Comm_rank(comm, &rank);

    int nranks;
    MPI_Comm_size(comm, &nranks);
    if (rank == 0)
        printf("test_fft on %d ranks (TIDE_TEST_VERBOSE=1 names each case as it starts)\n",
               nranks);

    /* TIDE_TEST_BACKEND=cuda runs every case on the GPU (host arrays streamed through it, or,
     * with TIDE_TEST_LOCATION=device, arrays in device memory); it skips (77) where no GPU is
     * usable. The default is the CPU backend. */
    const char *be = getenv("TIDE_TEST_BACKEND"), *loc = getenv("TIDE_TEST_LOCATION");
    int cuda = be && !strcmp(be, "cuda");
    on_device = loc && !strcmp(loc, "device");
    /* TIDE_TEST_EXCHANGE=direct (with device arrays): every case's plan exchanges by direct
     * stores between the GPUs; =cuda-mpi: by MPI on the device staging (a CUDA-aware MPI,
     * else the test skips) */
    const char *xe = getenv("TIDE_TEST_EXCHANGE");
    forced_exchange = tt_exchange_env();
    if (forced_exchange != -1 && forced_exchange != TIDE_EXCHANGE_DIRECT &&
        forced_exchange != TIDE_EXCHANGE_CUDA_MPI)
        return tt_stop_early(comm, NULL, EXIT_FAILURE, "test_fft: TIDE_TEST_EXCHANGE=%s: want "
                             "direct or cuda-mpi\n", xe);
    tide_context_options copts;
    tide_context_options_init(&copts);
    copts.backend = cuda ? TIDE_BACKEND_AUTO : TIDE_BACKEND_CPU;
    const char *budget = getenv("TIDE_TEST_BUDGET");
    copts.device_budget = budget ? (size_t)strtoull(budget, NULL, 10) : 0;
    tide_context *ctx = NULL;
    int st = tide_context_create(comm, &copts, &ctx);
    tide_backend got = TIDE_BACKEND_CPU;
    if (st == 0)
        tide_context_backend(ctx, &got);
    if (st == 0 && cuda && got != TIDE_BACKEND_CUDA) {
        if (rank == 0)
            printf("SKIP: no GPU for the CUDA backend: %s\n", tide_context_gpu_status(ctx));
        tide_context_destroy(ctx);
        MPI_Finalize();
        return 77;
    }
    /* The exchange over a CUDA-aware MPI wants one on every rank (MPIX_Query_cuda_support,
     * as tide_context_device reports it): without, the case is not this MPI's to run. (A
     * rank whose context failed does not ask to skip: the failure is reported below.) */
    if (forced_exchange == TIDE_EXCHANGE_CUDA_MPI) {
        tide_device_info dinfo;
        int aware = st != 0 || (tide_context_device(ctx, &dinfo) == 0 && dinfo.cuda_aware_mpi);
        if (!tt_all(comm, aware))
            return tt_stop_early(comm, ctx, 77, "SKIP: TIDE_TEST_EXCHANGE=cuda-mpi, but the MPI "
                                 "library does not take device pointers on every rank "
                                 "(MPIX_Query_cuda_support; tools/build-cuda-mpi builds one "
                                 "that does)\n");
    }
    if (rank == 0 && cuda)
        printf("backend cuda, arrays in %s memory%s%s\n", on_device ? "device" : "host",
               forced_exchange < 0 ? "" : ", every exchange ",
               forced_exchange < 0 ? "" : xe);
    if (!tt_all(comm, st == 0)) {
        if (rank == 0)
            printf("test_fft: tide_context_create failed: %s: %s\n", tide_strerror(st),
                   tide_last_error(NULL));
        MPI_Finalize();
        return EXIT_FAILURE;
    }

    /* Only the selected case (e.g. `test_fft 57`), to reproduce a failure quickly. */
    int only = argc > 1 ? atoi(argv[1]) : -1;
    /* TIDE_TEST_VERBOSE=1: name each case before running it, to see which one hangs. */
    const char *verbose_env = getenv("TIDE_TEST_VERBOSE");
    int verbose = verbose_env && verbose_env[0] && strcmp(verbose_env, "0") != 0;
    tt_tally checks = {0, 0}, cases = {0, 0};
    double t0 = MPI_Wtime();
    int ncases = NSIZES * NCOMBOS + NFUZZ + NMISALIGNED + NPLANE + (budget ? NSTREAMED : 0);
    for (int k = 0; k < ncases; k++) {
        if (only >= 0 && k != only)
            continue;
        int table = k < NSIZES * NCOMBOS, fuzz = k - NSIZES * NCOMBOS;
        fft_case c = table ? make_case(k / NCOMBOS, k % NCOMBOS)
                     : fuzz < NFUZZ               ? make_fuzz_case(fuzz)
                     : fuzz < NFUZZ + NMISALIGNED ? make_misaligned_case(fuzz - NFUZZ)
                     : fuzz < NFUZZ + NMISALIGNED + NPLANE
                         ? make_plane_case(fuzz - NFUZZ - NMISALIGNED)
                         : make_streamed_case(fuzz - NFUZZ - NMISALIGNED - NPLANE);
        if (verbose && rank == 0) {
            char desc[256];
            case_str(&c, desc, sizeof desc);
            printf("case %d: %s\n", k, desc);
            fflush(stdout);
        }
        int ok = run_case(ctx, comm, &c, &checks, verbose);
        cases.checks++;
        if (!ok) {
            cases.failed++;
            if (rank == 0)
                printf("  (%scase %d; rerun alone with: test_fft %d)\n", table ? "" : "fuzz ", k,
                       k);
        }
    }
    if (rank == 0)
        printf("(%d checks, %d failed, %.1f s)\n", checks.checks, checks.failed,
               MPI_Wtime() - t0);
    if (rank == 0 && cuda)
        printf("%d plans streamed host arrays through the GPU (%d of them exchanging over MPI "
               "in host memory), %d to %d chunks per pass; %d kept the data on the device "
               "between the passes (up to %d chunks per pass)\n", streamed, streamed_mpi,
               fewest_chunks, most_chunks, resident, resident_chunks);
    /* TIDE_FFT_ENGINE=plane on device arrays: the plane cases must have run the plane pass,
     * and on one rank (a 3D transform of one plan) the strided pass too, and the real plane
     * pass */
    const char *engine = getenv("TIDE_FFT_ENGINE");
    if (cuda && on_device && engine && !strcmp(engine, "plane") && only < 0) {
        cases.checks += 4;
        if (tt_all(comm, plane_plans == 0)) { /* on no rank */
            cases.failed++;
            if (rank == 0)
                printf("FAIL: TIDE_FFT_ENGINE=plane, and no plan ran Tide's own passes\n");
        }
        if (nranks == 1 && strided_plans == 0) {
            cases.failed++;
            printf("FAIL: TIDE_FFT_ENGINE=plane on one rank, and no plan ran Tide's strided "
                   "pass\n");
        }
        if (nranks == 1 && real_strided_plans == 0) {
            cases.failed++;
            printf("FAIL: TIDE_FFT_ENGINE=plane on one rank, and no real transform ran Tide's "
                   "strided pass\n");
        }
        if (nranks == 1 && real_plane_plans == 0) {
            cases.failed++;
            printf("FAIL: TIDE_FFT_ENGINE=plane on one rank, and no real transform ran Tide's "
                   "plane pass\n");
        }
    }
    if (rank == 0 && cuda)
        printf("%d plans ran Tide's own passes on rank 0, %d of them its strided pass (%d real "
               "transforms), %d real transforms its plane pass\n", plane_plans, strided_plans,
               real_strided_plans, real_plane_plans);
    tide_context_destroy(ctx);
    int rc = tt_finish(&cases, comm, "test_fft", "cases");
    MPI_Finalize();
    return rc;
}
