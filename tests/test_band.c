/*
 * test_band.c: band matrix power plans (tide.h: tide_band_*) on a context of every rank
 * (MPI_COMM_WORLD), each rank's rows of x checked BITWISE against the naive oracle
 * (tide_ref_band, apps/reference.c: a plain loop on the whole matrix, no Tide code involved),
 * which every rank runs on the whole matrix from the same seed.
 *
 * Run under mpiexec with 1 to 6 ranks: the CPU backend on host arrays. With
 * TIDE_TEST_BACKEND=cuda the same cases on a context on the GPU (the ranks may share it): host
 * arrays, or with TIDE_TEST_LOCATION=device device arrays moved by plain cudaMemcpy; exit 77
 * (SKIP) where no GPU is usable.
 *
 *  a) matrices: n = 1, 2, 3, 5, 13, 97, 1000 and 5003 (prime, more than one of the CPU's
 *     tiles), so several rank counts have ranks with no rows; bandwidths (kl, ku) = (0, 0),
 *     (1, 1), (7, 7), (64, 64), (0, 5), (3, 0), (64, 1), (2, 64) (clipped to what the matrix
 *     holds is not needed: entries past the matrix are NaN, which must never be read); float
 *     and double; random entries scaled so that powers neither vanish nor blow up;
 *  b) rows: balanced blocks in rank order, blocks dealt to the ranks in a shuffled order, and
 *     random cuts with empty ranges;
 *  c) steps per pass 1, 3 and the plan's choice; runs of 1, 0, 5 and 7 steps one after another
 *     on the same x (not multiples of the steps per pass), compared after each; 0 steps leave
 *     x unchanged;
 *  d) info: lo, hi, bytes, kl, ku, steps_per_pass (the option, the same on every rank),
 *     exchanges after a run (one per pass on several ranks, 0 on one), halo_rows (0 on one
 *     rank), flops; describe names the bandwidths;
 *  f) out of card: each rank, on a context of its own, plans with option slab_rows 1, 3, 17,
 *     64 and 1000 (slabs of one row, slabs thinner than the bandwidth, and one slab for the
 *     whole matrix) for the sizes and bandwidths of a), steps per pass 1, 3 and the plan's,
 *     the oracle's bits after runs of 1, 0, 5 and 7 steps, info slabs ceil(n / R) (0 with
 *     device arrays, which ignore the option); on the GPU a context whose 1 MB budget the
 *     arrays exceed streams by itself on one rank (host arrays);
 *  g) out of card on every rank (the context of every rank): option slab_rows 1, 3, 7 and
 *     1000 (more than any rank's grown rows), n = 1, 2, 5, 13, 40, 97 and 300, bandwidths
 *     from (0, 0) to (7, 2), steps per pass 1 to 4, the rows of b) and thin ranges (ranks of
 *     one or two rows, fewer than the halo's depth, so that the halo comes from several
 *     ranks, and empty ones), float and double, the oracle's bits after runs of 1, 0, 5 and
 *     7 steps; info slabs ceil(G / R) and slab_rows min(R, G) for G grown rows (0 and 0 on a
 *     rank without rows), halo_rows G less the rank's rows; describe names the slabs (and
 *     the halo on several ranks); on the GPU a context whose 1 MB budget the arrays exceed
 *     streams by itself on every rank count (host arrays);
 *  e) bad input, the same status and message on every rank, the plan pointer or x left
 *     untouched: kl 65, ku -1, kl differing between ranks, n differing, rows with a gap, rows
 *     overlapping, lo > hi, rows past n, diagonals NULL on a rank with rows, steps per pass
 *     -1, options not filled by the init function, a device location on a CPU context, the
 *     GPU's kernel asked for more steps per pass than fit, on the GPU device arrays beyond a
 *     1 MB device budget (TIDE_ERR_NOMEM: plans on device arrays run in card); runs of -1
 *     steps and of steps that differ between ranks; then a plan still works.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "reference.h"
#include "tide.h"

static MPI_Comm world;
static int rank, nranks;
static tide_context *ctx;
static tt_tally tally;
static int gpu, on_device;

/* ---- data ----------------------------------------------------------------------------------- */

/* The whole matrix, diagonal-major (A(i, i + d) at (d + kl) n + i), random entries in
 * [-1/(kl + ku + 1), 1/(kl + ku + 1)) times 1.3 in the matrix, NaN past its edges. */
static void *make_matrix(int n, int kl, int ku, int dbl, tt_rng *rng)
{
    int W = kl + ku + 1;
    size_t elem = dbl ? sizeof(double) : sizeof(float);
    char *a = tt_xmalloc((size_t)W * n * elem);
    for (int d = -kl; d <= ku; d++)
        for (int i = 0; i < n; i++) {
            double v = i + d >= 0 && i + d < n ? 1.3 * tt_rnd(rng) / W : NAN;
            size_t at = (size_t)(d + kl) * n + i;
            if (dbl)
                ((double *)a)[at] = v;
            else
                ((float *)a)[at] = (float)v;
        }
    return a;
}

/* The rows [lo, hi) of the whole matrix a, in tide.h's layout for a rank owning them. */
static void *rank_rows(const void *a, int n, int kl, int ku, int dbl, int lo, int hi)
{
    size_t elem = dbl ? sizeof(double) : sizeof(float);
    int W = kl + ku + 1, rows = hi - lo;
    char *m = tt_xmalloc((size_t)W * rows * elem);
    for (int d = 0; d < W; d++)
        memcpy(m + (size_t)d * rows * elem, (const char *)a + ((size_t)d * n + lo) * elem,
               (size_t)rows * elem);
    return m;
}

/* ---- rows ----------------------------------------------------------------------------------- */

/* Every rank's [lo, hi) of n rows: 0 balanced blocks in rank order, 1 the blocks dealt in a
 * shuffled order, 2 random cuts (some ranges empty), 3 thin ranges (one or two rows each, the
 * last rank the rest; empty ones where n runs out). */
static void tiling(int n, int kind, tt_rng *rng, int (*r)[2])
{
    int perm[8];
    for (int q = 0; q < nranks; q++)
        perm[q] = q;
    if (kind == 1)
        for (int q = nranks - 1; q > 0; q--) {
            int k = tt_rng_below(rng, q + 1), t = perm[q];
            perm[q] = perm[k], perm[k] = t;
        }
    int cut[9];
    cut[0] = 0, cut[nranks] = n;
    for (int q = 1; q < nranks; q++)
        cut[q] = kind == 2   ? tt_rng_below(rng, n + 1)
                 : kind == 3 ? (3 * q / 2 < n ? 3 * q / 2 : n)
                             : (int)((long long)q * n / nranks);
    for (int q = 1; q < nranks && kind == 2; q++) /* sorted cuts */
        for (int k = q; k > 1 && cut[k] < cut[k - 1]; k--) {
            int t = cut[k];
            cut[k] = cut[k - 1], cut[k - 1] = t;
        }
    for (int q = 0; q < nranks; q++)
        r[perm[q]][0] = cut[q], r[perm[q]][1] = cut[q + 1];
}

/* ---- runs ----------------------------------------------------------------------------------- */

/* One run of the plan on this rank's rows x (host memory; on device arrays through a device
 * copy). Returns the run's status. */
static int run_x(tide_band_plan *plan, void *x, size_t bytes, long long steps)
{
#if TIDE_HAVE_CUDA
    if (on_device) {
        void *d = NULL;
        TT_CU(cudaMalloc(&d, bytes + 8));
        TT_CU(cudaMemcpy(d, x, bytes, cudaMemcpyHostToDevice));
        int st = tide_band_run(plan, d, steps);
        TT_CU(cudaMemcpy(x, d, bytes, cudaMemcpyDeviceToHost));
        TT_CU(cudaFree(d));
        return st;
    }
#endif
    (void)bytes;
    return tide_band_run(plan, x, steps);
}

/* Whether this rank's rows x equal the oracle's bits. */
static int same_bits(const void *x, const void *ref, int lo, int hi, size_t elem)
{
    return memcmp(x, (const char *)ref + (size_t)lo * elem, (size_t)(hi - lo) * elem) == 0;
}

typedef struct {
    int n, kl, ku, dbl, spp, kind, slab; /* slab: option slab_rows */
} band_case;

/* The checks of d) after a run of `steps` (the passes it made). */
static void check_info(const tide_band_plan *plan, const band_case *c, int lo, int hi,
                       long long steps, const char *name)
{
    tide_band_info info;
    int st = tide_band_plan_info(plan, &info);
    int k = info.steps_per_pass, kmax = k, kmin = k;
    MPI_Allreduce(&k, &kmax, 1, MPI_INT, MPI_MAX, world);
    MPI_Allreduce(&k, &kmin, 1, MPI_INT, MPI_MIN, world);
    long long passes = k > 0 ? (steps + k - 1) / k : -1;
    size_t elem = c->dbl ? sizeof(double) : sizeof(float);
    int glo = lo - k * c->kl > 0 ? lo - k * c->kl : 0, ghi = hi + k * c->ku < c->n ? hi + k * c->ku
                                                                                   : c->n;
    int grown = hi > lo ? ghi - glo : 0, R = c->slab < grown ? c->slab : grown;
    int slabs = c->slab && !on_device && grown ? (grown + R - 1) / R : 0;
    int ok = st == 0 && info.lo == lo && info.hi == hi &&
             info.bytes == (size_t)(hi - lo) * elem && info.kl == c->kl && info.ku == c->ku &&
             k >= 1 && kmin == kmax && (!c->spp || k == c->spp) &&
             info.exchanges == (nranks > 1 ? passes : 0) &&
             info.halo_rows == (nranks > 1 ? grown - (hi - lo) : 0) && info.halo_seconds >= 0 &&
             (hi > lo ? info.flops >= 2.0 * (hi - lo) : info.flops == 0) &&
             info.slabs == slabs && info.slab_rows == (slabs ? R : 0);
    tt_check(&tally, world, ok, "d) %s: info after %lld steps: lo %d hi %d bytes %zu spp %d "
             "(%d..%d) exchanges %lld halo_rows %lld flops %g slabs %d of %d rows (want %d "
             "of %d)", name, steps, info.lo, info.hi, info.bytes, k, kmin, kmax,
             info.exchanges, info.halo_rows, info.flops, info.slabs, info.slab_rows, slabs,
             slabs ? R : 0);
    char buf[160];
    char want[32];
    snprintf(want, sizeof want, "kl %d ku %d", c->kl, c->ku);
    st = tide_band_plan_describe(plan, buf, sizeof buf);
    int named = strstr(buf, want) != NULL && (!slabs || strstr(buf, "slabs")) &&
                (nranks == 1 || strstr(buf, "halo"));
    tt_check(&tally, world, st == 0 && named, "d) %s: describe \"%s\"", name, buf);
}

/* One case: the plan on this rank's rows, runs of 1, 0, 5 and 7 steps compared with the
 * oracle after each. */
static void run_case(const band_case *c, tt_rng *rng)
{
    char name[128];
    static const char *const kinds[] = {"blocks", "shuffled", "random", "thin"};
    snprintf(name, sizeof name, "n %d kl %d ku %d %s spp %d rows %s slab_rows %d", c->n, c->kl,
             c->ku, c->dbl ? "double" : "float", c->spp, kinds[c->kind], c->slab);
    size_t elem = c->dbl ? sizeof(double) : sizeof(float);
    int(*r)[2] = tt_xmalloc(sizeof *r * (size_t)nranks);
    tiling(c->n, c->kind, rng, r);
    int lo = r[rank][0], hi = r[rank][1];
    void *a = make_matrix(c->n, c->kl, c->ku, c->dbl, rng);
    void *ref = tt_xmalloc((size_t)c->n * elem);
    tt_fill_random(ref, (size_t)c->n, c->dbl, 1.0, rng);
    void *mine = rank_rows(a, c->n, c->kl, c->ku, c->dbl, lo, hi);
    void *x = tt_xmalloc((size_t)(hi - lo) * elem);
    memcpy(x, (char *)ref + (size_t)lo * elem, (size_t)(hi - lo) * elem);
    tide_band_options o;
    tide_band_options_init(&o);
    o.precision = c->dbl ? TIDE_DOUBLE : TIDE_FLOAT;
    o.location = on_device ? TIDE_LOCATION_DEVICE : TIDE_LOCATION_HOST;
    o.kl = c->kl, o.ku = c->ku, o.steps_per_pass = c->spp, o.slab_rows = c->slab;
    o.diagonals = mine;
    tide_band_plan *plan = NULL;
    int st = tide_band_plan_create(ctx, c->n, lo, hi, &o, &plan);
    free(mine); /* read at creation alone */
    if (tt_check(&tally, world, st == 0, "a) %s: create: %s: %s", name, tide_strerror(st),
                 tide_last_error(ctx))) {
        static const long long runs[] = {1, 0, 5, 7};
        for (int k = 0; k < 4; k++) {
            st = run_x(plan, x, (size_t)(hi - lo) * elem, runs[k]);
            tide_ref_band(c->n, c->dbl, c->kl, c->ku, a, ref, runs[k]);
            tt_check(&tally, world, st == 0 && same_bits(x, ref, lo, hi, elem),
                     "c) %s: run of %lld steps: %s, bits %s", name, runs[k], tide_strerror(st),
                     same_bits(x, ref, lo, hi, elem) ? "equal" : "differ");
            check_info(plan, c, lo, hi, runs[k], name);
        }
    }
    tide_band_plan_destroy(plan);
    free(a), free(ref), free(x), free(r);
}

static int ncases;

static void cases(void)
{
    static const int ns[] = {1, 2, 3, 5, 13, 97, 1000, 5003};
    static const int bands[][2] = {{0, 0}, {1, 1}, {7, 7}, {64, 64},
                                   {0, 5}, {3, 0}, {64, 1}, {2, 64}};
    static const int spps[] = {1, 3, 0};
    tt_rng rng;
    tt_rng_seed(&rng, 20261129);
    int k = 0;
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
        for (size_t b = 0; b < sizeof bands / sizeof *bands; b++, k++) {
            band_case c = {ns[i], bands[b][0], bands[b][1], k % 2, spps[k % 3], k % 5 % 3, 0};
            run_case(&c, &rng);
            c.dbl = !c.dbl, c.spp = spps[(k + 1) % 3], c.kind = (k + 1) % 3;
            run_case(&c, &rng);
            ncases += 2;
        }
}

/* ---- out of card ---------------------------------------------------------------------------- */

/* f) One rank's plan on a context of its own streaming through the backend's memory in slabs
 * of R rows (option slab_rows): the oracle's bits after runs of 1, 0, 5 and 7 steps, info
 * slabs ceil(n / R) (0 with device arrays, which ignore the option). */
static int slab_case(tide_context *self, int n, int kl, int ku, int dbl, int spp, int R,
                     tt_rng *rng)
{
    size_t elem = dbl ? sizeof(double) : sizeof(float);
    void *a = make_matrix(n, kl, ku, dbl, rng), *ref = tt_xmalloc((size_t)n * elem);
    void *x = tt_xmalloc((size_t)n * elem);
    tt_fill_random(ref, (size_t)n, dbl, 1.0, rng);
    memcpy(x, ref, (size_t)n * elem);
    tide_band_options o;
    tide_band_options_init(&o);
    o.precision = dbl ? TIDE_DOUBLE : TIDE_FLOAT;
    o.location = on_device ? TIDE_LOCATION_DEVICE : TIDE_LOCATION_HOST;
    o.kl = kl, o.ku = ku, o.steps_per_pass = spp, o.slab_rows = R, o.diagonals = a;
    tide_band_plan *plan = NULL;
    int st = tide_band_plan_create(self, n, 0, n, &o, &plan), ok = st == 0;
    char name[96];
    snprintf(name, sizeof name, "n %d kl %d ku %d %s spp %d slab_rows %d", n, kl, ku,
             dbl ? "double" : "float", spp, R);
    tt_local(&tally, ok, "f) %s: create: %s", name, tide_last_error(self));
    static const long long runs[] = {1, 0, 5, 7};
    for (int k = 0; k < 4 && ok; k++) {
        st = run_x(plan, x, (size_t)n * elem, runs[k]);
        tide_ref_band(n, dbl, kl, ku, a, ref, runs[k]);
        tide_band_info info;
        tide_band_plan_info(plan, &info);
        int slabs = on_device ? 0 : (n + R - 1) / R;
        char desc[160];
        tide_band_plan_describe(plan, desc, sizeof desc);
        ok = tt_local(&tally, st == 0 && !memcmp(x, ref, (size_t)n * elem) &&
                      info.slabs == slabs && (on_device || strstr(desc, "slabs")),
                      "f) %s: run of %lld steps: %s, bits %s, %d slabs (want %d), \"%s\"",
                      name, runs[k], tide_strerror(st),
                      memcmp(x, ref, (size_t)n * elem) ? "differ" : "equal", info.slabs, slabs,
                      desc);
    }
    tide_band_plan_destroy(plan);
    free(a), free(ref), free(x);
    return 1;
}

static void slab_cases(void)
{
    static const int ns[] = {1, 7, 97, 1000, 5003};
    static const int bands[][2] = {{0, 0}, {1, 1}, {7, 7}, {64, 64}, {0, 5}, {3, 0}, {64, 1}};
    static const int slabs[] = {1, 3, 64, 1000};
    static const int spps[] = {1, 3, 0};
    tide_context_options copts;
    tide_context_options_init(&copts);
    copts.backend = gpu ? TIDE_BACKEND_AUTO : TIDE_BACKEND_CPU;
    tide_context *self = NULL;
    int st = tide_context_create(MPI_COMM_SELF, &copts, &self);
    if (!tt_check(&tally, world, st == 0, "f) a context of one rank: %s", tide_last_error(NULL)))
        return;
    tt_rng rng;
    tt_rng_seed(&rng, 77);
    int k = 0, mine = 0;
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
        for (size_t b = 0; b < sizeof bands / sizeof *bands; b++, k++) {
            int R = slabs[k % 4], spp = spps[k % 3], dbl = k % 2;
            if (ns[i] > 1000 && R == 1)
                R = 17; /* 5003 one-row slabs: slow, and no new case */
            if (k % nranks == rank) /* each rank its share, on its own context */
                mine += slab_case(self, ns[i], bands[b][0], bands[b][1], dbl, spp, R, &rng);
        }
    tide_context_destroy(self);
    int all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, world);
    if (rank == 0)
        printf("  f) %d out-of-card cases\n", all);
    tt_check(&tally, world, tally.failed == 0, "f) some rank's out-of-card case failed");
}

/* g) Out of card on every rank: the cases of a)-d) with option slab_rows on the context of
 * every rank. */
static void spread_slab_cases(void)
{
    static const int ns[] = {1, 2, 5, 13, 40, 97, 300};
    static const int bands[][2] = {{0, 0}, {1, 1}, {3, 0}, {0, 3}, {2, 3}, {4, 1}, {7, 2}};
    static const int slabs[] = {1, 3, 7, 1000};
    tt_rng rng;
    tt_rng_seed(&rng, 5150);
    int k = 0, before = ncases;
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
        for (size_t b = 0; b < sizeof bands / sizeof *bands; b++, k++) {
            band_case c = {ns[i], bands[b][0], bands[b][1], k % 2, 1 + k / 4 % 4,
                           (k + k / 16) % 4, slabs[k % 4]};
            run_case(&c, &rng);
            c.dbl = !c.dbl, c.spp = 1 + (c.spp + 1) % 4, c.kind = (c.kind + 3) % 4;
            c.slab = slabs[(k + 2) % 4];
            run_case(&c, &rng);
            ncases += 2;
        }
    if (rank == 0)
        printf("  g) %d out-of-card cases on %d ranks\n", ncases - before, nranks);
}

/* ---- bad input ------------------------------------------------------------------------------ */

static void expect_error(const char *what, int st, unsigned allowed, int untouched)
{
    const char *msg = tide_last_error(ctx);
    tt_expect_error(&tally, world, "e", what, st, msg, allowed, untouched, 1);
}

#define BIT(code) (1u << (code))

/* A create with every rank's rows the balanced block of n but for the changes made by `edit`
 * (this rank's lo and hi, the options), which must fail with one of allowed. */
static void bad_create(const char *what, int n, void (*edit)(int *lo, int *hi, int *n,
                       tide_band_options *o), unsigned allowed)
{
    int lo = (int)((long long)rank * n / nranks), hi = (int)((long long)(rank + 1) * n / nranks);
    static double diag[129 * 16]; /* room for any bandwidth on the few rows of a rank */
    for (int i = 0; i < 129 * 16; i++)
        diag[i] = 0.5;
    tide_band_options o;
    tide_band_options_init(&o);
    o.diagonals = diag;
    o.location = on_device ? TIDE_LOCATION_DEVICE : TIDE_LOCATION_HOST;
    edit(&lo, &hi, &n, &o);
    tide_band_plan *plan = (tide_band_plan *)&o; /* must stay as it is */
    int st = tide_band_plan_create(ctx, n, lo, hi, &o, &plan);
    expect_error(what, st, allowed, plan == (tide_band_plan *)&o);
}

static void e_kl(int *lo, int *hi, int *n, tide_band_options *o) { (void)lo, (void)hi, (void)n, o->kl = 65; }
static void e_ku(int *lo, int *hi, int *n, tide_band_options *o) { (void)lo, (void)hi, (void)n, o->ku = -1; }
static void e_kl_differs(int *lo, int *hi, int *n, tide_band_options *o)
{
    (void)lo, (void)hi, (void)n;
    o->kl = rank == nranks - 1 ? 2 : 1;
}
static void e_n_differs(int *lo, int *hi, int *n, tide_band_options *o)
{
    (void)lo, (void)hi, (void)o;
    *n += rank == nranks - 1;
}
static void e_gap(int *lo, int *hi, int *n, tide_band_options *o)
{
    (void)n, (void)o;
    if (rank == 0)
        *hi = *hi - 1 > *lo ? *hi - 1 : *lo;
    (void)lo;
}
static void e_overlap(int *lo, int *hi, int *n, tide_band_options *o)
{
    (void)o;
    if (rank == nranks - 1)
        *lo = 0, *hi = *n;
}
static void e_reversed(int *lo, int *hi, int *n, tide_band_options *o)
{
    (void)n, (void)o;
    if (rank == 0) {
        int t = *lo;
        *lo = *hi, *hi = t;
    }
}
static void e_past(int *lo, int *hi, int *n, tide_band_options *o)
{
    (void)lo, (void)o;
    if (rank == nranks - 1)
        *hi = *n + 3;
}
static void e_null_diag(int *lo, int *hi, int *n, tide_band_options *o)
{
    (void)lo, (void)hi, (void)n;
    if (rank == nranks - 1)
        o->diagonals = NULL;
}
static void e_spp(int *lo, int *hi, int *n, tide_band_options *o) { (void)lo, (void)hi, (void)n, o->steps_per_pass = -1; }
static void e_size(int *lo, int *hi, int *n, tide_band_options *o) { (void)lo, (void)hi, (void)n, o->size = 0; }
static void e_device(int *lo, int *hi, int *n, tide_band_options *o) { (void)lo, (void)hi, (void)n, o->location = TIDE_LOCATION_DEVICE; }
static void e_gpu_spp(int *lo, int *hi, int *n, tide_band_options *o)
{
    (void)lo, (void)hi, (void)n;
    o->kl = o->ku = 64, o->steps_per_pass = 1000;
}

static void bad_runs(void)
{
    int n = 3 * nranks + 2;
    int lo = (int)((long long)rank * n / nranks), hi = (int)((long long)(rank + 1) * n / nranks);
    double *diag = tt_xmalloc(3 * (size_t)n * sizeof *diag), *x = tt_xmalloc((size_t)n * 8);
    for (int i = 0; i < 3 * n; i++)
        diag[i] = 0.25;
    for (int i = 0; i < n; i++)
        x[i] = 1.0;
    tide_band_options o;
    tide_band_options_init(&o);
    o.diagonals = diag;
    o.location = on_device ? TIDE_LOCATION_DEVICE : TIDE_LOCATION_HOST;
    tide_band_plan *plan = NULL;
    int st = tide_band_plan_create(ctx, n, lo, hi, &o, &plan);
    if (!tt_check(&tally, world, st == 0, "e) plan for bad runs: %s", tide_last_error(ctx)))
        return;
    size_t bytes = (size_t)(hi - lo) * sizeof(double);
    st = run_x(plan, x, bytes, -1);
    int same = 1;
    for (int i = 0; i < hi - lo; i++)
        same = same && x[i] == 1.0;
    expect_error("a run of -1 steps", st, BIT(TIDE_ERR_ARGUMENT), same);
    if (nranks > 1) {
        st = run_x(plan, x, bytes, rank == nranks - 1 ? 3 : 2);
        same = 1;
        for (int i = 0; i < hi - lo; i++)
            same = same && x[i] == 1.0;
        expect_error("steps differing between ranks", st, BIT(TIDE_ERR_MISMATCH), same);
    }
    st = run_x(plan, x, bytes, 2); /* A 1 = 0.75 inside, 0.5 at the ends: then twice */
    int ok = st == 0;
    for (int i = lo; i < hi; i++) {
        double y1[3];
        for (int s = -1; s <= 1; s++) {
            int j = i + s;
            y1[s + 1] = j < 0 || j >= n ? 0 : (j == 0 || j == n - 1) ? 0.5 : 0.75;
        }
        double want = 0.25 * ((i > 0 ? y1[0] : 0) + y1[1] + (i < n - 1 ? y1[2] : 0));
        ok = ok && x[i - lo] == want;
    }
    tt_check(&tally, world, ok, "e) the plan works after the bad runs: %s",
             tide_last_error(ctx));
    tide_band_plan_destroy(plan);
    free(diag), free(x);
}

/* On the GPU: a plan whose arrays exceed the context's device budget is refused where it
 * cannot stream (device arrays); with host arrays every rank streams in slabs its budget holds
 * and gives the oracle's bits. */
static void over_budget(void)
{
    tide_context_options copts;
    tide_context_options_init(&copts);
    copts.device_budget = (size_t)1 << 20;
    tide_context *small = NULL;
    int st = tide_context_create(world, &copts, &small);
    if (!tt_check(&tally, world, st == 0, "e) a context with a 1 MB budget: %s",
                  tide_last_error(NULL)))
        return;
    int n = 200000, lo = (int)((long long)rank * n / nranks);
    int hi = (int)((long long)(rank + 1) * n / nranks);
    double *diag = tt_xmalloc(3 * (size_t)n * sizeof *diag); /* every rank's: all 0.25 */
    for (long long i = 0; i < 3LL * n; i++)
        diag[i] = 0.25;
    tide_band_options o;
    tide_band_options_init(&o);
    o.diagonals = diag;
    o.location = on_device ? TIDE_LOCATION_DEVICE : TIDE_LOCATION_HOST;
    tide_band_plan *plan = (tide_band_plan *)&o;
    st = tide_band_plan_create(small, n, lo, hi, &o, &plan);
    const char *msg = tide_last_error(small);
    if (on_device) {
        tt_expect_error(&tally, world, "e", "arrays beyond the device budget", st, msg,
                        1u << TIDE_ERR_NOMEM, plan == (tide_band_plan *)&o, 1);
        tt_check(&tally, world, tt_mentions(msg, "budget"), "e) beyond the budget: \"%s\"",
                 msg);
    } else if (tt_check(&tally, world, st == 0, "g) slabs the budget holds: %s", msg)) {
        double *x = tt_xmalloc((size_t)n * sizeof *x), *ref = tt_xmalloc((size_t)n * sizeof *x);
        for (int i = 0; i < n; i++)
            ref[i] = (i % 7) - 3.0;
        memcpy(x, ref + lo, (size_t)(hi - lo) * sizeof *x);
        st = tide_band_run(plan, x, 11);
        tide_ref_band(n, 1, 1, 1, diag, ref, 11);
        tide_band_info info;
        tide_band_plan_info(plan, &info);
        tt_check(&tally, world, st == 0 && same_bits(x, ref, lo, hi, sizeof *x) &&
                 info.slabs > 1 && info.device_bytes <= copts.device_budget,
                 "g) slabs the budget holds: %s, %d slabs, %zu device bytes", tide_strerror(st),
                 info.slabs, info.device_bytes);
        free(x), free(ref);
        tide_band_plan_destroy(plan);
    }
    tide_context_destroy(small);
    free(diag);
}

static void bad_input(void)
{
    int n = 4 * nranks + 3;
    unsigned arg = BIT(TIDE_ERR_ARGUMENT), box = BIT(TIDE_ERR_BOX);
    bad_create("kl 65", n, e_kl, arg);
    bad_create("ku -1", n, e_ku, arg);
    if (nranks > 1) {
        bad_create("kl differing between ranks", n, e_kl_differs, BIT(TIDE_ERR_MISMATCH));
        bad_create("n differing between ranks", n, e_n_differs, BIT(TIDE_ERR_MISMATCH));
        bad_create("rows overlapping", n, e_overlap, box);
    }
    bad_create("rows with a gap", n, e_gap, box);
    bad_create("lo > hi", n, e_reversed, box);
    bad_create("rows past n", n, e_past, box);
    bad_create("diagonals NULL", n, e_null_diag, arg);
    bad_create("steps per pass -1", n, e_spp, arg);
    bad_create("options not initialized", n, e_size, arg);
    if (!gpu)
        bad_create("device location on a CPU context", n, e_device, BIT(TIDE_ERR_UNSUPPORTED));
    else
        bad_create("more steps per pass than the GPU's kernel fits", n, e_gpu_spp, arg);
    if (gpu)
        over_budget();
    bad_runs();
}

/* ---- main ----------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    world = MPI_COMM_WORLD;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &nranks);
    if (nranks > 8) {
        if (rank == 0)
            printf("test_band takes at most 8 ranks\n");
        MPI_Finalize();
        return EXIT_FAILURE;
    }
    const char *be = getenv("TIDE_TEST_BACKEND");
    int cuda = be && !strcmp(be, "cuda");
    if (cuda && !tt_all(world, tt_gpus_or_skip() > 0)) {
        MPI_Finalize();
        return 77;
    }
    tide_context_options copts;
    tide_context_options_init(&copts);
    copts.backend = cuda ? TIDE_BACKEND_AUTO : TIDE_BACKEND_CPU;
    int st = tide_context_create(world, &copts, &ctx);
    tide_backend backend = TIDE_BACKEND_CPU;
    if (st == 0)
        tide_context_backend(ctx, &backend);
    if (!tt_all(world, st == 0)) {
        if (rank == 0)
            printf("test_band: tide_context_create failed: %s\n", tide_last_error(NULL));
        MPI_Finalize();
        return EXIT_FAILURE;
    }
    if (cuda && !tt_all(world, backend == TIDE_BACKEND_CUDA)) {
        if (rank == 0)
            printf("SKIP: no GPU for the CUDA backend: %s\n", tide_context_gpu_status(ctx));
        tide_context_destroy(ctx);
        MPI_Finalize();
        return 77;
    }
    gpu = backend == TIDE_BACKEND_CUDA;
    const char *loc = getenv("TIDE_TEST_LOCATION");
    on_device = gpu && loc && !strcmp(loc, "device");
    double t0 = MPI_Wtime();
    if (rank == 0)
        printf("test_band on %d ranks%s\n", nranks,
               gpu ? on_device ? " (GPU, device arrays)" : " (GPU, host arrays)" : "");
    cases();
    if (rank == 0)
        printf("  a)-d) %d cases (%.1f s)\n", ncases, MPI_Wtime() - t0);
    slab_cases();
    spread_slab_cases();
    bad_input();
    tide_context_destroy(ctx);
    int rc = tt_finish(&tally, world, "test_band", "checks");
    MPI_Finalize();
    return rc;
}
