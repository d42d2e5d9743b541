/*
 * test_stencil_dist.c: stencil plans on a context of every rank (MPI_COMM_WORLD), each rank's
 * box of u checked BITWISE against the naive oracle (tide_ref_stencil, apps/reference.c: a
 * plain loop on the whole grid, no Tide code involved), which every rank runs on the whole
 * grid from the same seed.
 *
 * Run under mpiexec with 1 to 6 ranks: the CPU backend on host arrays. With
 * TIDE_TEST_BACKEND=cuda the same cases on a context on the GPU (the ranks may share it): host
 * arrays, or with TIDE_TEST_LOCATION=device device arrays, each u uploaded by a cudaMemcpyAsync
 * on the legacy default stream queued behind a delay and not waited for (a run not ordered
 * after the caller's work reads stale data), the source copied to its device array once per
 * case by a plain cudaMemcpy, and the result downloaded
 * by a plain cudaMemcpy; on one rank there is nothing distributed to check (SKIPPED, exit 77),
 * nor where no GPU is usable (77).
 *
 *  a) decompositions: every ordered factorization p0 x p1 x p2 = P given as user boxes
 *     (balanced blocks [i n / p, (i + 1) n / p), C order, ranks numbered with dimension 2
 *     fastest), each grid also once with permuted storage orders (a different one on each
 *     rank); box NULL on every rank (the library's choice: info.box and info.grid read back,
 *     the boxes gathered must tile the grid, each rank's the C-order balanced block of
 *     info.grid (product P) at its place in tide.h's numbering; on one rank the whole grid
 *     and grid {0,0,0}); random tilings (random orders, some boxes empty); and boxes exactly as
 *     thick as their halo needs, the other ranks' boxes empty;
 *  b) stencils: 7pt with the default and random weights, 27pt with random, class-constant
 *     (the class form) and the default weights, user STAR radius 2 (a random subset of the axis taps) and user BOX radius 2 (a
 *     few random taps), random weights; boundaries PPP, DDD, PDP, DPD, DDP; float and double;
 *     odd, prime and non-cubic grids (13x11x9, 17x7x19, 10x12x8); with and without a source
 *     (random, the same on every rank, each passing its box of it; never written);
 *  c) fuse 1, 2, 3 and the plan's choice (agreed over the ranks); runs of 1, 0, 5 and 7 steps
 *     one after another on the same u (not multiples of the fuse), compared after each; 0
 *     steps leave u unchanged. Halos of fuse r: a non-empty box grown by its halo along each
 *     dimension it does not span (clipped at Dirichlet faces) below 2 r + 1 points along some
 *     dimension is TIDE_ERR_ARGUMENT on every rank with a message naming the cause, the plan
 *     pointer untouched (the plan's own choice of fuse may then work or fail that way; with
 *     box NULL, wherever some process grid of P would be too thin); such a case then runs with
 *     the smallest fuse that is thick enough, so no case is skipped silently. The cases take
 *     the option overlap -1, 0 and 1 in turn: passes that sweep the points needing no halo
 *     while it travels (on the CPU with 1, on the GPU with 0 and 1) must give the same bits,
 *     and some case must split; and the option exchange auto and p2p in turn (with
 *     TIDE_TEST_EXCHANGE=nccl, cuda-mpi or p2p and device arrays, that exchange in every case);
 *  d) info: count and bytes of the rank's box, box, grid ({0,0,0} for user boxes), taps,
 *     radius, fuse (the one asked, the same on every rank, thick enough for every box),
 *     after each run exchanges (one per pass of fuse steps, one more for the source's halo; 0
 *     on one rank and after 0 steps) and halo_seconds (>= 0, 0 without exchanges);
 *     halo_exchange: the one asked (p2p where the halos lie in host memory), else MPI in host
 *     memory, NCCL or MPI on device pointers;
 *     overlapped exactly on the ranks the option asks it of whose box has a halo and at
 *     least 3 fuse r points along each dimension with one;
 *     halo_points (0 on one rank and on an empty box, at most the points the grown box adds,
 *     more than 0 for the built-in shapes on a box that does not span the grid);
 *  e) bad input, the same status and message on every rank, the plan pointer or u left
 *     untouched: boxes that overlap (one rank: a box past the grid), leave a gap, or have an
 *     order that is not a permutation (tiling errors: TIDE_ERR_ARGUMENT or TIDE_ERR_BOX, the
 *     code tide.h gives them), box NULL on rank 0 only, a box one point wide along a split
 *     Dirichlet dimension (radius 2, fuse 1), fuse or the source given differently between
 *     ranks, location device on the CPU backend, backend cuda on the CPU context, option
 *     exchange direct, out of range, nccl or cuda-mpi on the CPU, or differing between ranks,
 *     a run of -1 steps; then a plan still works;
 *  f) on the GPU with host arrays, out of core: a context whose device budget is below what
 *     every rank's box needs in card (0.9 of u, the grown arrays and the source's copies), so
 *     each pass exchanges the halo in host memory and streams the grown box through the GPU
 *     in slabs, its own points read from and written to u (the source's from the caller's),
 *     its halo from the plan's parts that hold the halo alone: the boxes cut along z (the slabs' dimension) over P ranks, 7pt, 27pt (a
 *     source, double) and a radius-2 star, periodic and Dirichlet along z, fuse 2 and 3 and
 *     the plan's choice; then cut along y and along x (the halo a frame around each plane's
 *     own points); the checks of c) and d) (bitwise against the oracle), info.slabs at least 2
 *     on every non-empty box;
 *  g) on four ranks, the library's process grid (7pt, Dirichlet): slabs where a grid cutting
 *     two dimensions has a largest grown box only a few per cent smaller (64x32x32, fuse 1:
 *     2x2x1 grows to 33x17x32 points, 2.6% fewer than the slabs' 18x32x32), two dimensions cut
 *     where that saves more (64^3, fuse 4: 36x36x64 against 24x64x64, 16% fewer).
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "reference.h"
#include "tide.h"

static MPI_Comm world;
static int rank, nranks;
static tt_tally tally;     /* collective checks over MPI_COMM_WORLD */
static int verbose;        /* TIDE_TEST_VERBOSE=1: name each case as it starts */
static tide_context *ctx;  /* the context of every rank */
static int ncases, nthin, nrefused; /* cases run; too thin refused; runnable with no fuse */
static int overlap;        /* the cases' option overlap: -1, 0, 1 in turn */
static tide_exchange exchange; /* the cases' option exchange: auto and p2p in turn */
static int forced = -1;    /* TIDE_TEST_EXCHANGE's exchange for every case, or -1 */
static int nsplit;         /* cases whose plans split some rank's passes (info.overlapped) */
static int out_of_core;    /* f): the cases run on a context whose budget forces it */
static int gpu;            /* TIDE_TEST_BACKEND=cuda: the context runs on the GPU */
static int on_device;      /* TIDE_TEST_LOCATION=device: u and the source in device memory */

/* ---- moving the data: plain C on the CPU, plain CUDA calls for device arrays ---------------- */

/* Where the plan reads the source: src itself, or for device arrays a device copy of its bytes
 * (zeroed; source_copy fills it). */
static void *source_for_plan(void *src, size_t bytes)
{
#if TIDE_HAVE_CUDA
    if (on_device && src) {
        void *d = NULL;
        TT_CU(cudaMalloc(&d, bytes));
        TT_CU(cudaMemset(d, 0, bytes));
        return d;
    }
#endif
    (void)bytes;
    return src;
}

/* Bytes from one to the other of the caller's source and the plan's `given`
 * (source_for_plan's: the same array in host memory, a device copy for device arrays). */
static void source_copy(void *dst, const void *from, size_t bytes)
{
#if TIDE_HAVE_CUDA
    if (on_device) {
        TT_CU(cudaMemcpy(dst, from, bytes, cudaMemcpyDefault));
        return;
    }
#endif
    if (dst != from)
        memcpy(dst, from, bytes);
}

static void source_free(void *given, void *src)
{
#if TIDE_HAVE_CUDA
    if (given != src)
        TT_CU(cudaFree(given));
#endif
    (void)given, (void)src;
}

/* tide_stencil_run on u (bytes, host memory) as a caller would: device arrays written by a
 * copy queued on the legacy default stream behind a delay, not waited for
 * (tt_stencil_run_device); host arrays passed as they are. */
static int run_steps(tide_stencil_plan *plan, void *u, size_t bytes, long long steps)
{
#if TIDE_HAVE_CUDA
    if (on_device)
        return tt_stencil_run_device(ctx, plan, u, bytes, steps, 0, 1);
#endif
    (void)bytes;
    return tide_stencil_run(plan, u, steps);
}

#define BIT(code) (1u << (code))
static const unsigned ARG = BIT(TIDE_ERR_ARGUMENT), UNSUP = BIT(TIDE_ERR_UNSUPPORTED),
                      BOXE = BIT(TIDE_ERR_BOX), MISM = BIT(TIDE_ERR_MISMATCH);
/* What a failed create must leave in the plan pointer: an address no allocation returns. */
static char plan_sentinel_storage;
#define PLAN_SENTINEL ((tide_stencil_plan *)&plan_sentinel_storage)
/* Words a "too thin for its halo" message names one of. */
static const char *const THIN_WORDS = "thin|halo|narrow|thick|small";

/* ---- values and layouts --------------------------------------------------------------------- */

/* Element offset of global point p in the C-order whole grid n. */
static size_t global_index(const int n[3], const int p[3])
{
    return ((size_t)p[0] * (size_t)n[1] + (size_t)p[1]) * (size_t)n[2] + (size_t)p[2];
}

/* The box b of the C-order whole-grid array g, laid out as b says (its storage order). */
static void global_to_box(void *dst, const void *g, const int n[3], const tide_box *b, size_t es)
{
    if (tt_box_count(b) == 0)
        return;
    int p[3];
    for (p[0] = b->lo[0]; p[0] < b->hi[0]; p[0]++)
        for (p[1] = b->lo[1]; p[1] < b->hi[1]; p[1]++)
            for (p[2] = b->lo[2]; p[2] < b->hi[2]; p[2]++)
                memcpy((char *)dst + (size_t)tt_offset(b, p) * es,
                       (const char *)g + global_index(n, p) * es, es);
}

/* ---- decompositions and the halo rule ------------------------------------------------------- */

/* Every ordered factorization g[0] g[1] g[2] = p; returns how many (at most 32 for p <= 64). */
static int factorizations(int p, int (*g)[3])
{
    int k = 0;
    for (int a = 1; a <= p; a++)
        for (int b = 1; a * b <= p; b++)
            if (p % (a * b) == 0 && k < 32) {
                g[k][0] = a, g[k][1] = b, g[k][2] = p / (a * b);
                k++;
            }
    return k;
}

/* boxes[r] for every rank r of process grid g over n: balanced blocks, dimension 2 fastest,
 * C order (written independently of tide_box_in_grid). */
static void balanced_boxes(const int n[3], const int g[3], tide_box *boxes)
{
    for (int r = 0; r < g[0] * g[1] * g[2]; r++) {
        int i[3] = {r / (g[1] * g[2]), r / g[2] % g[1], r % g[2]};
        tide_box *b = &boxes[r];
        for (int d = 0; d < 3; d++) {
            b->lo[d] = (int)((long long)i[d] * n[d] / g[d]);
            b->hi[d] = (int)((long long)(i[d] + 1) * n[d] / g[d]);
            b->order[d] = d;
        }
    }
}

/* The extents of non-empty box b grown by h along each dimension it does not span whole,
 * clipped at Dirichlet faces (tide.h's halo). */
static void grown_extents(const tide_box *b, const int n[3], const tide_bc bc[3], int h,
                          int ext[3])
{
    for (int d = 0; d < 3; d++) {
        int lo = b->lo[d], hi = b->hi[d];
        if (lo > 0 || hi < n[d]) {
            lo -= h;
            hi += h;
            if (bc[d] == TIDE_BC_DIRICHLET) {
                lo = lo < 0 ? 0 : lo;
                hi = hi > n[d] ? n[d] : hi;
            }
        }
        ext[d] = hi - lo;
    }
}

/* Whether some non-empty box of the P boxes, grown by its halo fuse r, is below 2 r + 1 points
 * along some dimension (the plan is then TIDE_ERR_ARGUMENT). */
static int too_thin(const tide_box *boxes, const int n[3], const tide_bc bc[3], int r, int fuse)
{
    for (int q = 0; q < nranks; q++) {
        if (tt_box_count(&boxes[q]) == 0)
            continue;
        int ext[3];
        grown_extents(&boxes[q], n, bc, fuse * r, ext);
        for (int d = 0; d < 3; d++)
            if (ext[d] < 2 * r + 1)
                return 1;
    }
    return 0;
}

/* ---- stencils ------------------------------------------------------------------------------- */

enum { MAXT = 125 };
enum { S7 = TIDE_STENCIL_7PT, S27 = TIDE_STENCIL_27PT, SS = TIDE_STENCIL_STAR,
       SB = TIDE_STENCIL_BOX };

typedef struct {
    int shape;      /* tide_stencil_shape */
    int r;          /* user shapes: the radius (one tap reaches it) */
    int count;      /* user shapes: taps */
    int n[3];
    int dbl;
    const char *bc; /* per dimension P or D */
    int source;
    int fuse;       /* 0: the plan's choice */
    int rw;         /* built-in shapes: random weights (2: one per class; else NULL, the
                     * defaults) */
} dspec;

static const dspec specs[] = {
    {S7, 1, 0, {13, 11, 9}, 1, "DDD", 0, 1, 0},
    {S7, 1, 0, {17, 7, 19}, 0, "PPP", 1, 2, 1},
    {S27, 1, 0, {10, 12, 8}, 1, "PDP", 1, 0, 1},
    {S27, 1, 0, {13, 11, 9}, 0, "DPD", 0, 3, 1},
    {S27, 1, 0, {13, 11, 9}, 0, "PDP", 1, 2, 2},
    {S27, 1, 0, {17, 7, 19}, 1, "DDP", 1, 1, 0},
    {SS, 2, 9, {17, 7, 19}, 1, "DDP", 1, 1, 0},
    {SS, 2, 7, {13, 11, 9}, 0, "PPP", 0, 2, 0},
    {SS, 2, 13, {10, 12, 8}, 1, "DPD", 0, 0, 0},
    {SB, 2, 6, {10, 12, 8}, 1, "DDD", 1, 3, 0},
    {SB, 2, 5, {17, 7, 19}, 0, "PDP", 0, 0, 0},
    {S7, 1, 0, {10, 12, 8}, 0, "DDP", 1, 3, 0},
};
enum { NSPECS = (int)(sizeof specs / sizeof specs[0]) };

typedef struct {
    char name[200];
    int shape, r, ntaps;   /* r: the stencil's radius, its largest offset */
    int n[3];
    int dbl, source, fuse, rw;
    tide_bc bc[3];
    int off[MAXT][3];      /* user shapes: the plan's taps */
    double w[MAXT];        /* the plan's weights (user shapes; built-in ones with rw) */
    int toff[MAXT][3];     /* the oracle's taps and weights */
    double tw[MAXT];
    unsigned seed;
} stencil;

static const char *shape_name[] = {"7pt", "27pt", "star", "box"};

static void build_stencil(const dspec *sp, unsigned seed, stencil *s)
{
    tt_rng rng;
    tt_rng_seed(&rng, seed);
    memset(s, 0, sizeof *s);
    s->shape = sp->shape;
    memcpy(s->n, sp->n, sizeof s->n);
    s->dbl = sp->dbl;
    s->source = sp->source;
    s->fuse = sp->fuse;
    s->rw = sp->rw;
    s->seed = seed;
    for (int d = 0; d < 3; d++)
        s->bc[d] = sp->bc[d] == 'P' ? TIDE_BC_PERIODIC : TIDE_BC_DIRICHLET;
    if (s->shape == S7 || s->shape == S27) {
        s->r = 1;
        s->ntaps = s->shape == S7 ? 7 : 27;
        tt_stencil_weights(&rng, s->ntaps, s->w);
        double cw[4] = {s->w[0], s->w[1], s->w[2], s->w[3]};
        tide_ref_stencil_taps(s->shape, NULL, s->toff, s->tw);
        for (int t = 0; t < s->ntaps && s->rw == 2; t++) /* one weight per class */
            s->w[t] = cw[!!s->toff[t][0] + !!s->toff[t][1] + !!s->toff[t][2]];
        tide_ref_stencil_taps(s->shape, s->rw ? s->w : NULL, s->toff, s->tw);
    } else {
        int all = 0, r = sp->r;
        for (int x = -r; x <= r; x++)
            for (int y = -r; y <= r; y++)
                for (int z = -r; z <= r; z++)
                    if (s->shape == SB || (x != 0) + (y != 0) + (z != 0) <= 1) {
                        s->off[all][0] = x, s->off[all][1] = y, s->off[all][2] = z;
                        all++;
                    }
        s->r = r;
        s->ntaps = sp->count < all ? sp->count : all;
        tt_pick_taps(&rng, s->off, all, s->ntaps, r);
        tt_stencil_weights(&rng, s->ntaps, s->w);
        memcpy(s->toff, s->off, sizeof s->toff);
        memcpy(s->tw, s->w, sizeof s->tw);
    }
    snprintf(s->name, sizeof s->name, "%s r%d %d taps%s %dx%dx%d %s bc %s%s fuse %d seed %u",
             shape_name[s->shape], s->r, s->ntaps,
             s->shape > S27 ? "" : s->rw == 2 ? " (class weights)"
                                 : s->rw      ? " (random weights)" : " (defaults)", s->n[0],
             s->n[1], s->n[2], s->dbl ? "double" : "float", sp->bc, s->source ? " source" : "",
             s->fuse, seed);
}

static int create_plan(const stencil *s, const tide_box *mine, int fuse, const void *source,
                       tide_stencil_plan **plan)
{
    tide_stencil_options o;
    tide_stencil_options_init(&o);
    o.precision = s->dbl ? TIDE_DOUBLE : TIDE_FLOAT;
    o.shape = (tide_stencil_shape)s->shape;
    if (s->shape == S7 || s->shape == S27) {
        o.weights = s->rw ? s->w : NULL;
    } else {
        o.weights = s->w;
        o.radius = s->r;
        o.npoints = s->ntaps;
        o.offsets = (const int(*)[3])s->off;
    }
    for (int d = 0; d < 3; d++)
        o.bc[d] = s->bc[d];
    o.source = source;
    o.fuse = fuse;
    o.overlap = overlap;
    o.exchange = exchange;
    o.location = on_device ? TIDE_LOCATION_DEVICE : TIDE_LOCATION_HOST;
    return tide_stencil_plan_create(ctx, s->n, mine, &o, plan);
}

/* g) the library's process grid on four ranks. */
static void grid_choice(void)
{
    static const struct {
        int n[3], fuse, want[3];
    } cases[] = {{{64, 32, 32}, 1, {4, 1, 1}}, {{64, 64, 64}, 4, {2, 2, 1}}};
    for (int i = 0; i < 2 && nranks == 4; i++) {
        stencil s = {.shape = S7, .bc = {TIDE_BC_DIRICHLET, TIDE_BC_DIRICHLET, TIDE_BC_DIRICHLET}};
        memcpy(s.n, cases[i].n, sizeof s.n);
        tide_stencil_plan *plan = NULL;
        tide_stencil_info info = {0};
        int st = create_plan(&s, NULL, cases[i].fuse, NULL, &plan);
        if (!st)
            st = tide_stencil_plan_info(plan, &info);
        tt_check(&tally, world, !st && !memcmp(info.grid, cases[i].want, sizeof info.grid),
                 "g) %dx%dx%d, fuse %d on 4 ranks: status %d, grid %dx%dx%d (want %dx%dx%d)",
                 s.n[0], s.n[1], s.n[2], cases[i].fuse, st, info.grid[0], info.grid[1],
                 info.grid[2], cases[i].want[0], cases[i].want[1], cases[i].want[2]);
        tide_stencil_plan_destroy(plan);
    }
}

/* ---- expected outcomes ---------------------------------------------------------------------- */

enum { MUST_WORK, MUST_FAIL, EITHER };

/* What a plan with this fuse (0: the plan's choice) must do: boxes given: too thin at that fuse
 * (at 1 for the plan's choice, which may pick a thicker halo) fails; box NULL: the library's
 * process grid is unknown, so it must work only when no grid of P is too thin, and fail only
 * when every one is. */
static int outcome(const stencil *s, const tide_box *boxes, int fuse)
{
    int f = fuse ? fuse : 1;
    if (boxes)
        return !too_thin(boxes, s->n, s->bc, s->r, f) ? MUST_WORK : fuse ? MUST_FAIL : EITHER;
    int grids[32][3], ng = factorizations(nranks, grids), thin = 0;
    tide_box *b = tt_xmalloc((size_t)nranks * sizeof *b);
    for (int g = 0; g < ng; g++) {
        balanced_boxes(s->n, grids[g], b);
        thin += too_thin(b, s->n, s->bc, s->r, f);
    }
    free(b);
    return !thin ? MUST_WORK : thin == ng && fuse ? MUST_FAIL : EITHER;
}

/* The smallest fuse from `from` up to 8 with which the plan must work; 0: none. */
static int thick_fuse(const stencil *s, const tide_box *boxes, int from)
{
    for (int f = from; f <= 8; f++)
        if (outcome(s, boxes, f) == MUST_WORK)
            return f;
    return 0;
}

/* Collective: a call that should fail failed the same way on every rank (tt_expect_error's
 * three checks), and its message mentions one of words (NULL: no check). */
static void expect_error(const char *what, int st, unsigned allowed, int untouched,
                         const char *words)
{
    const char *msg = tide_last_error(ctx);
    tt_expect_error(&tally, world, "e", what, st, msg, allowed, untouched, 1);
    if (words)
        tt_check(&tally, world, tt_mentions(msg, words),
                 "e) %s: message \"%s\" names none of \"%s\"", what, msg, words);
}

/* ---- one case ------------------------------------------------------------------------------- */

/* This rank's first point that differs: a readable report, printed by the rank that has it. */
static void report_mismatch(const char *name, const stencil *s, const tide_box *b, const void *got,
                            const void *want, long long steps, long long total, int fuse)
{
    size_t es = s->dbl ? 8 : 4, count = (size_t)tt_box_count(b), bad = 0;
    int first[3] = {0, 0, 0}, p[3];
    double g = 0, w = 0;
    for (p[0] = b->lo[0]; p[0] < b->hi[0]; p[0]++)
        for (p[1] = b->lo[1]; p[1] < b->hi[1]; p[1]++)
            for (p[2] = b->lo[2]; p[2] < b->hi[2]; p[2]++) {
                size_t i = (size_t)tt_offset(b, p);
                if (memcmp((const char *)got + i * es, (const char *)want + i * es, es)) {
                    if (!bad++) {
                        memcpy(first, p, sizeof first);
                        g = tt_elem(got, s->dbl, i);
                        w = tt_elem(want, s->dbl, i);
                    }
                }
            }
    int fixed = 0;
    for (int d = 0; d < 3; d++)
        fixed |= s->bc[d] == TIDE_BC_DIRICHLET &&
                 (first[d] < s->r || first[d] >= s->n[d] - s->r);
    char bs[96];
    printf("  [rank %d] %s: run of %lld steps (%lld in all, fuse %d): %zu of the %zu points of "
           "box %s differ from the oracle; first (%d,%d,%d)%s: got %.17g (%a) want %.17g (%a)\n",
           rank, name, steps, total, fuse, bad, count, tt_box_str(b, bs, sizeof bs), first[0],
           first[1], first[2], fixed ? " (a Dirichlet boundary point)" : "", g, g, w, w);
    fflush(stdout);
}

/* Collective: info of a created plan, then runs of 1, 0, 5 and 7 steps compared with the
 * oracle. boxes: the user's (NULL: the library's choice, read from info); src: the host copy of
 * the source and given_src the plan's (source_for_plan's; both large enough for any box,
 * filled here once the box is known). */
static void check_and_run(const char *name, const stencil *s, tide_stencil_plan *plan,
                          const tide_box *boxes, int fuse, void *src, void *given_src)
{
    size_t es = s->dbl ? 8 : 4, gcount = (size_t)s->n[0] * s->n[1] * s->n[2];
    tide_stencil_info info;
    memset(&info, 0xab, sizeof info);
    int st = tide_stencil_plan_info(plan, &info);
    if (!tt_check(&tally, world, st == 0, "d) %s: plan_info: status %d", name, st))
        return;
    tide_box mine = boxes ? boxes[rank] : info.box;
    long long count = tt_box_count(&mine);
    tide_box *all = tt_xmalloc((size_t)nranks * sizeof *all);
    MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, world);
    char bs[96];
    tt_box_str(&info.box, bs, sizeof bs);
    if (boxes) {
        tt_check(&tally, world, !memcmp(&info.box, &boxes[rank], sizeof info.box),
                 "d) %s: info.box %s is not the rank's box", name, bs);
        tt_check(&tally, world, info.grid[0] == 0 && info.grid[1] == 0 && info.grid[2] == 0,
                 "d) %s: info.grid %dx%dx%d with user boxes (want 0x0x0)", name, info.grid[0],
                 info.grid[1], info.grid[2]);
    } else if (nranks == 1) {
        /* tide.h: one rank has the whole grid in C order, and no process grid ({0,0,0}). */
        tide_box whole = tt_box(0, 0, 0, s->n[0], s->n[1], s->n[2], NULL);
        tt_check(&tally, world, !memcmp(&info.box, &whole, sizeof whole) && info.grid[0] == 0 &&
                 info.grid[1] == 0 && info.grid[2] == 0, "d) %s: one rank: info.box %s, "
                 "info.grid %dx%dx%d (want the whole grid in C order, 0x0x0)", name, bs,
                 info.grid[0], info.grid[1], info.grid[2]);
        mine = whole;
    } else {
        /* The library's choice: a process grid of P, the same on every rank, its balanced
         * C-order blocks tiling the grid. */
        int g[3] = {info.grid[0], info.grid[1], info.grid[2]}, gmin[3], gmax[3];
        MPI_Allreduce(g, gmin, 3, MPI_INT, MPI_MIN, world);
        MPI_Allreduce(g, gmax, 3, MPI_INT, MPI_MAX, world);
        int grid_ok = g[0] >= 1 && g[1] >= 1 && g[2] >= 1 &&
                      (long long)g[0] * g[1] * g[2] == nranks && !memcmp(gmin, gmax, sizeof g);
        tt_check(&tally, world, grid_ok, "d) %s: info.grid %dx%dx%d: not a process grid of %d "
                 "ranks, or not the same on every rank", name, g[0], g[1], g[2], nranks);
        /* tide.h: rank r at (r / (g1 g2), r / g2 % g1, r % g2) of the grid. */
        int blocks = 0;
        if (grid_ok) {
            tide_box *grid_boxes = tt_xmalloc((size_t)nranks * sizeof *grid_boxes);
            balanced_boxes(s->n, g, grid_boxes);
            blocks = !memcmp(&mine, &grid_boxes[rank], sizeof mine);
            free(grid_boxes);
        }
        tt_check(&tally, world, blocks, "d) %s: info.box %s is not the rank's C-order balanced "
                 "block of info.grid %dx%dx%d", name, bs, g[0], g[1], g[2]);
        int ok = tt_check(&tally, world, tt_boxes_tile(s->n, nranks, all),
                      "d) %s: the library's boxes (rank 0's %s) do not tile the grid", name, bs);
        if (!ok) {
            free(all); /* no box to lay the data out in */
            return;
        }
    }
    int f = info.fuse, fmin = 0, fmax = 0;
    MPI_Allreduce(&f, &fmin, 1, MPI_INT, MPI_MIN, world);
    MPI_Allreduce(&f, &fmax, 1, MPI_INT, MPI_MAX, world);
    tt_check(&tally, world, f >= 1 && (fuse == 0 || f == fuse) && fmin == fmax,
             "d) %s: info.fuse %d (asked %d), %d..%d over the ranks", name, f, fuse, fmin, fmax);
    int plan_fuse = f >= 1 && f <= 64 ? f : 1;
    tt_check(&tally, world, !too_thin(all, s->n, s->bc, s->r, plan_fuse),
             "d) %s: the plan works with fuse %d, whose halo leaves a box too thin", name, f);
    tt_check(&tally, world,
             info.count == count && info.bytes == (size_t)count * es && info.taps == s->ntaps &&
                 info.radius == s->r &&
                 info.backend == (gpu ? TIDE_BACKEND_CUDA : TIDE_BACKEND_CPU) &&
                 info.location == (on_device ? TIDE_LOCATION_DEVICE : TIDE_LOCATION_HOST),
             "d) %s: info: count %lld (want %lld), bytes %zu (want %zu), taps %d (want %d), "
             "radius %d (want %d), backend %d, location %d", name, info.count, count, info.bytes,
             (size_t)count * es, info.taps, s->ntaps, info.radius, s->r, (int)info.backend,
             (int)info.location);
    /* halo_points: 0 on one rank and on an empty box; at most what the halo adds to the box;
     * some for the built-in shapes (a tap along every axis) on a box that does not span the
     * grid. */
    long long extra = 0;
    int spans = 1, thick = 0;
    if (count > 0) {
        int ext[3];
        grown_extents(&mine, s->n, s->bc, plan_fuse * s->r, ext);
        extra = (long long)ext[0] * ext[1] * ext[2] - count;
        /* a halo, and at least 3 fuse r own points along each dimension it lies along */
        thick = 1;
        for (int d = 0; d < 3; d++) {
            int own = mine.hi[d] - mine.lo[d];
            spans = spans && mine.lo[d] == 0 && mine.hi[d] == s->n[d];
            thick = thick && (ext[d] == own || own >= 3 * plan_fuse * s->r);
        }
        thick = thick && !spans;
    }
    /* overlapped: exactly the ranks in card with such a box where option overlap asks (1, or
     * 0 on the GPU); out of core, slabs through the GPU on every non-empty box */
    int asked = overlap > 0 || (overlap == 0 && gpu);
    tt_check(&tally, world,
             info.overlapped == (asked && nranks > 1 && thick && !out_of_core) &&
                 (out_of_core ? count == 0 || info.slabs >= 2 : info.slabs == 0),
             "d) %s: info.overlapped %d, slabs %d on rank %d's box %s (option overlap %d, GPU "
             "%d, %d ranks, thick enough %d, out of core %d)", name, info.overlapped,
             info.slabs, rank, bs, overlap, gpu, nranks, thick, out_of_core);
    int split = 0;
    MPI_Allreduce(&info.overlapped, &split, 1, MPI_INT, MPI_MAX, world);
    nsplit += split;
    /* halos as asked (MPI where they lie in host memory), else over MPI, on GPUs of their own
     * over NCCL, or by an MPI that takes device memory */
    tide_exchange hx = info.halo_exchange;
    tide_device_info di;
    int aware = tide_context_device(ctx, &di) == 0 && di.cuda_aware_mpi;
    int host_halos = !gpu || out_of_core;
    tt_check(&tally, world,
             nranks == 1                       ? hx == TIDE_EXCHANGE_AUTO
             : host_halos || exchange == TIDE_EXCHANGE_P2P ? hx == TIDE_EXCHANGE_P2P
             : exchange != TIDE_EXCHANGE_AUTO  ? hx == exchange
                                               : hx == TIDE_EXCHANGE_P2P ||
                                                     hx == TIDE_EXCHANGE_NCCL ||
                                                     (aware && hx == TIDE_EXCHANGE_CUDA_MPI),
             "d) %s: info.halo_exchange %d on %d ranks (asked %d, GPU %d, out of core %d, "
             "CUDA-aware MPI %d)", name, (int)hx, nranks, (int)exchange, gpu, out_of_core,
             aware);
    int need = count > 0 && !spans && s->shape <= S27;
    long long hp = info.halo_points;
    tt_check(&tally, world,
             hp >= 0 && (nranks > 1 || hp == 0) && (count > 0 || hp == 0) && hp <= extra &&
                 (!need || hp > 0),
             "d) %s: info.halo_points %lld on rank %d's box %s (%lld points, the halo adds at "
             "most %lld)", name, hp, rank, bs, count, extra);
    free(all);

    /* The data: the same global arrays on every rank, each rank its box. */
    tt_rng rng;
    tt_rng_seed(&rng, s->seed * 31u + 7u);
    void *ref = tt_xmalloc(gcount * es), *gsrc = s->source ? tt_xmalloc(gcount * es) : NULL;
    tt_fill_random(ref, gcount, s->dbl, 1.0, &rng);
    if (gsrc) {
        tt_fill_random(gsrc, gcount, s->dbl, 0.1, &rng);
        global_to_box(src, gsrc, s->n, &mine, es);
        source_copy(given_src, src, (size_t)count * es);
    }
    size_t bytes = (size_t)count * es;
    void *u = tt_xmalloc(bytes), *want = tt_xmalloc(bytes), *before = tt_xmalloc(bytes);
    global_to_box(u, ref, s->n, &mine, es);
    static const long long seq[4] = {1, 0, 5, 7};
    long long total = 0;
    for (int k = 0; k < 4; k++) {
        memcpy(before, u, bytes);
        st = run_steps(plan, u, bytes, seq[k]);
        if (!tt_check(&tally, world, st == 0, "c) %s: run of %lld steps: %s: %s", name, seq[k],
                      tide_strerror(st), tide_last_error(ctx)))
            break;
        total += seq[k];
        tide_stencil_info ri;
        tide_stencil_plan_info(plan, &ri);
        long long want_x = nranks == 1 || seq[k] == 0
                               ? 0
                               : (seq[k] + plan_fuse - 1) / plan_fuse + (s->source != 0);
        tt_check(&tally, world, ri.exchanges == want_x && ri.halo_seconds >= 0 &&
                                    (want_x > 0 || ri.halo_seconds == 0),
                 "d) %s: run of %lld steps: info.exchanges %lld (want %lld: one per pass of %d "
                 "steps, one for the source's halo), halo_seconds %g", name, seq[k],
                 ri.exchanges, want_x, plan_fuse, ri.halo_seconds);
        int rst = seq[k] ? tide_ref_stencil(s->n, s->dbl, (tide_stencil_shape)s->shape,
                                            s->ntaps, (const int(*)[3])s->toff, s->tw, s->bc,
                                            gsrc, ref, seq[k])
                         : 0;
        global_to_box(want, ref, s->n, &mine, es);
        int same = rst == 0 && !memcmp(u, want, bytes) && (seq[k] || !memcmp(u, before, bytes));
        if (!same && rst == 0)
            report_mismatch(name, s, &mine, u, want, seq[k], total, plan_fuse);
        if (!tt_check(&tally, world, same, "c) %s: run of %lld steps (%lld in all, fuse %d): "
                      "differs from the oracle%s (see the ranks' reports)", name, seq[k], total,
                      plan_fuse, rst ? " (the oracle failed)" : ""))
            break;
    }
    if (gsrc) {
        global_to_box(want, gsrc, s->n, &mine, es);
        source_copy(src, given_src, bytes);
        tt_check(&tally, world, !memcmp(src, want, bytes), "c) %s: the source was written",
                 name);
    }
    free(ref);
    free(gsrc);
    free(u);
    free(want);
    free(before);
}

/* Collective: one case on the P boxes (NULL: box NULL, the library's choice), with the
 * stencil's fuse; when that is too thin, the error, then the smallest thick enough fuse. */
static void dist_case(const stencil *s, const tide_box *boxes, const char *layout)
{
    char name[320];
    static int turn;
    int t = turn++;
    overlap = t % 3 - 1;
    exchange = forced >= 0 ? (tide_exchange)forced
                           : t % 2 ? TIDE_EXCHANGE_P2P : TIDE_EXCHANGE_AUTO;
    snprintf(name, sizeof name, "%s | %s | overlap %d | exchange %d", layout, s->name, overlap,
             (int)exchange);
    if (verbose && rank == 0) {
        printf("  case: %s\n", name);
        fflush(stdout);
    }
    size_t es = s->dbl ? 8 : 4, gcount = (size_t)s->n[0] * s->n[1] * s->n[2];
    /* The source: given at creation, before a box NULL is known; large enough for any box. */
    void *src = s->source ? tt_xmalloc(gcount * es) : NULL;
    if (src)
        memset(src, 0, gcount * es);
    void *given = source_for_plan(src, gcount * es);
    const tide_box *mine = boxes ? &boxes[rank] : NULL;
    int fuse = s->fuse, want = outcome(s, boxes, fuse);
    tide_stencil_plan *plan = PLAN_SENTINEL;
    int st = create_plan(s, mine, fuse, given, &plan);
    if (want == MUST_WORK || (want == EITHER && tt_all(world, st == 0))) {
        if (!tt_check(&tally, world, st == 0 && plan != PLAN_SENTINEL, "c) %s: plan (fuse %d): "
                      "%s: %s", name, fuse, tide_strerror(st), tide_last_error(ctx)))
            goto done;
    } else {
        char what[400];
        snprintf(what, sizeof what, "%s: fuse %d too thin", name, fuse);
        expect_error(what, st, ARG, plan == PLAN_SENTINEL, THIN_WORDS);
        if (st == 0 && plan != PLAN_SENTINEL)
            tide_stencil_plan_destroy(plan); /* a call that wrongly worked must not leak */
        nthin++;
        fuse = thick_fuse(s, boxes, fuse + 1 > 2 ? fuse + 1 : 2);
        if (!fuse) {
            nrefused++;
            if (rank == 0)
                printf("  %s: no fuse up to 8 is thick enough: only the refusal checked\n", name);
            plan = NULL;
            goto done;
        }
        if (verbose && rank == 0)
            printf("  case: %s again with fuse %d\n", name, fuse);
        plan = PLAN_SENTINEL;
        st = create_plan(s, mine, fuse, given, &plan);
        if (!tt_check(&tally, world, st == 0 && plan != PLAN_SENTINEL, "c) %s: plan with the "
                      "thick enough fuse %d: %s: %s", name, fuse, tide_strerror(st),
                      tide_last_error(ctx)))
            goto done;
    }
    ncases++;
    check_and_run(name, s, plan, boxes, fuse, src, given);
done:
    if (st == 0 && plan != PLAN_SENTINEL)
        tide_stencil_plan_destroy(plan);
    source_free(given, src);
    free(src);
}

/* ---- a) .. d): the decompositions ----------------------------------------------------------- */

static void decompositions(void)
{
    int grids[32][3], ng = factorizations(nranks, grids);
    tide_box *boxes = tt_xmalloc((size_t)nranks * sizeof *boxes);
    stencil *s = tt_xmalloc(sizeof *s);
    char layout[128];
    /* Every process grid as user boxes in C order, every stencil; then one stencil with a
     * permuted storage order on every rank (a different one from rank to rank). */
    for (int g = 0; g < ng; g++) {
        for (int c = 0; c < NSPECS; c++) {
            build_stencil(&specs[c], 1000u + 37u * (unsigned)c + 1009u * (unsigned)g, s);
            balanced_boxes(s->n, grids[g], boxes);
            snprintf(layout, sizeof layout, "grid %dx%dx%d C order", grids[g][0], grids[g][1],
                     grids[g][2]);
            dist_case(s, boxes, layout);
        }
        int c = (g * 5 + nranks) % NSPECS;
        build_stencil(&specs[c], 5000u + 13u * (unsigned)g, s);
        balanced_boxes(s->n, grids[g], boxes);
        for (int q = 0; q < nranks; q++)
            tt_perm3((g + q) % 5 + 1, boxes[q].order);
        snprintf(layout, sizeof layout, "grid %dx%dx%d orders permuted (rank 0 %s)", grids[g][0],
                 grids[g][1], grids[g][2], tt_order_name(boxes[0].order));
        dist_case(s, boxes, layout);
    }
    /* box NULL: the library's choice. */
    for (int c = 0; c < NSPECS; c++) {
        build_stencil(&specs[c], 7000u + 41u * (unsigned)c, s);
        dist_case(s, NULL, "box NULL");
    }
    /* Random tilings with random orders, some boxes empty; fuse 1, 2, 3 and the plan's. */
    for (int t = 0; t < 12; t++) {
        tt_rng rng;
        tt_rng_seed(&rng, 424242u + 97u * (unsigned)t + 7u * (unsigned)nranks);
        dspec sp = specs[(3 * t + 1) % NSPECS];
        sp.fuse = (t + 1) % 4;
        build_stencil(&sp, 9000u + 3u * (unsigned)t, s);
        tt_tiling_random(s->n, nranks, &rng, boxes);
        tt_random_orders(nranks, &rng, boxes);
        int empty = 0;
        for (int q = 0; q < nranks; q++)
            empty += tt_box_count(&boxes[q]) == 0;
        snprintf(layout, sizeof layout, "random tiling %d (%d empty)", t, empty);
        dist_case(s, boxes, layout);
    }
    /* Just thick enough, Dirichlet along the split dimension z, STAR radius 2, fuse 1: rank
     * 0's [0,3) grows to [0,5), 2 r + 1 points; the last rank has [3,7); the others are
     * empty. */
    if (nranks > 1) {
        static const dspec edge[2] = {{SS, 2, 6, {9, 8, 7}, 1, "PDD", 1, 1, 0},
                                      {SB, 2, 8, {9, 8, 7}, 0, "DPD", 0, 1, 0}};
        for (int e = 0; e < 2; e++) {
            build_stencil(&edge[e], 11000u + (unsigned)e, s);
            for (int q = 0; q < nranks; q++)
                boxes[q] = tt_box(0, 0, 0, 9, 8, 0, NULL);
            boxes[0] = tt_box(0, 0, 0, 9, 8, 3, NULL);
            boxes[nranks - 1] = tt_box(0, 0, 3, 9, 8, 7, e ? (const int[]){2, 0, 1} : NULL);
            tt_check(&tally, world, !too_thin(boxes, s->n, s->bc, s->r, 1),
                     "a) the test's halo rule: z [0,3) and [3,7) of 7 thick enough for r 2");
            dist_case(s, boxes, "z [0,3) and [3,7), other ranks empty");
        }
    }
    free(s);
    free(boxes);
}

/* ---- f) out of core ------------------------------------------------------------------------ */

static void out_of_core_cases(void)
{
    /* the ranks' boxes cut along the dimension the slabs cross (the halo whole planes of the
     * grown box), then along the other two (the halo a frame around each plane's own points,
     * which the streamed pass uploads from the halo array in pieces beside u's) */
    static const dspec oc[] = {
        {S7, 1, 0, {240, 9, 8}, 0, "DPP", 0, 3, 0},
        {S27, 1, 0, {240, 7, 9}, 1, "PDD", 1, 2, 1},
        {SS, 2, 5, {240, 8, 7}, 0, "PPP", 0, 2, 0},
        {S7, 1, 0, {240, 9, 8}, 1, "PPP", 0, 0, 1},
        {S7, 1, 0, {240, 24, 9}, 0, "DPD", 1, 0, 0},
        {S27, 1, 0, {240, 8, 24}, 1, "PDP", 0, 2, 1},
    };
    static const char *how[] = {"out of core, slabs along z", "out of core, boxes cut along y",
                                "out of core, boxes cut along x"};
    tide_context *all = ctx;
    tide_box *boxes = tt_xmalloc((size_t)nranks * sizeof *boxes);
    stencil *s = tt_xmalloc(sizeof *s);
    for (int c = 0; c < (int)(sizeof oc / sizeof oc[0]); c++) {
        int cut = c < 4 ? 0 : c - 3, g[3] = {1, 1, 1};
        g[cut] = nranks;
        build_stencil(&oc[c], 13000u + 7u * (unsigned)c, s);
        balanced_boxes(s->n, g, boxes);
        long long most = 0;
        for (int q = 0; q < nranks; q++)
            most = tt_box_count(&boxes[q]) > most ? tt_box_count(&boxes[q]) : most;
        tide_context_options o;
        tide_context_options_init(&o);
        o.device_budget = (size_t)(0.9 * (double)most * (s->dbl ? 8 : 4) * (3 + 2 * s->source));
        int st = tide_context_create(world, &o, &ctx);
        if (!tt_check(&tally, world, st == 0, "f) %s: a context with a budget of %zu bytes: "
                      "%s: %s", s->name, o.device_budget, tide_strerror(st),
                      tide_last_error(NULL))) {
            ctx = all;
            continue;
        }
        out_of_core = 1;
        dist_case(s, boxes, how[cut]);
        out_of_core = 0;
        tide_context_destroy(ctx);
        ctx = all;
    }
    free(s);
    free(boxes);
}

/* ---- e) bad input --------------------------------------------------------------------------- */

static const int EN[3] = {9, 8, 7};
static int star_off[5][3];
static double star_w[5];

/* A valid user STAR of radius 2, x periodic, y and z Dirichlet, double. */
static void base_options(tide_stencil_options *o)
{
    static const int so[5][3] = {{0, 0, 0}, {-2, 0, 0}, {0, 1, 0}, {0, 0, 2}, {0, -1, 0}};
    memcpy(star_off, so, sizeof so);
    for (int t = 0; t < 5; t++)
        star_w[t] = 0.1 * (t + 1);
    tide_stencil_options_init(o);
    o->shape = TIDE_STENCIL_STAR;
    o->radius = 2;
    o->npoints = 5;
    o->offsets = (const int(*)[3])star_off;
    o->weights = star_w;
    o->bc[0] = TIDE_BC_PERIODIC;
}

static void expect_create(const char *what, const tide_box *box, const tide_stencil_options *o,
                          unsigned allowed, const char *words)
{
    tide_stencil_plan *plan = PLAN_SENTINEL;
    int st = tide_stencil_plan_create(ctx, EN, box, o, &plan);
    if (st == 0 && plan != PLAN_SENTINEL)
        tide_stencil_plan_destroy(plan); /* a call that wrongly succeeded must not leak */
    expect_error(what, st, allowed, plan == PLAN_SENTINEL, words);
}

static void bad_input(void)
{
    tide_stencil_options o;
    tide_box *slabs = tt_xmalloc((size_t)nranks * sizeof *slabs);
    tt_tiling_slabs(EN, 0, nranks, slabs); /* x periodic: slabs of 1 point are thick enough */
    tide_box b = slabs[rank];

    base_options(&o);
    if (nranks > 1) {
        if (rank == nranks - 1)
            b.lo[0]--;
        expect_create("boxes that overlap (the last rank's one plane lower)", &b, &o,
                      ARG | BOXE, NULL);
    } else {
        b.hi[0]++;
        expect_create("a box one plane past the grid", &b, &o, ARG | BOXE, NULL);
    }
    b = slabs[rank];
    if (rank == nranks - 1)
        b.hi[0]--;
    expect_create("boxes that leave a gap (the last x plane)", &b, &o, ARG | BOXE, NULL);
    b = slabs[rank];
    if (rank == nranks - 1)
        b.order[1] = b.order[0];
    expect_create("a box order {0,0,2} on the last rank", &b, &o, ARG | BOXE, NULL);
    o.location = TIDE_LOCATION_DEVICE;
    o.backend = TIDE_BACKEND_CPU;
    expect_create("location device on the CPU backend", &slabs[rank], &o, UNSUP | ARG, NULL);
    base_options(&o);
    o.backend = TIDE_BACKEND_CUDA;
    if (!gpu)
        expect_create("backend cuda on the CPU context", &slabs[rank], &o, UNSUP | ARG, NULL);
    base_options(&o);
    o.exchange = TIDE_EXCHANGE_DIRECT;
    expect_create("option exchange direct", &slabs[rank], &o, UNSUP, "direct stores");
    o.exchange = (tide_exchange)9;
    expect_create("option exchange 9", &slabs[rank], &o, ARG, "exchange");
    o.backend = TIDE_BACKEND_CPU;
    o.exchange = TIDE_EXCHANGE_NCCL;
    expect_create("option exchange nccl on the CPU backend", &slabs[rank], &o, UNSUP, "nccl");
    o.exchange = TIDE_EXCHANGE_CUDA_MPI;
    expect_create("option exchange cuda-mpi on the CPU backend", &slabs[rank], &o, UNSUP,
                  "cuda-mpi");

    if (nranks > 1) {
        base_options(&o);
        expect_create("box NULL on rank 0 only", rank == 0 ? NULL : &slabs[rank], &o,
                      MISM | ARG, NULL);
        /* z Dirichlet split 1 x 1 x P: rank 0 has z [0,1), which grows by its halo of 2 to
         * [0,3), below 2 r + 1 = 5; the others share [1,7). */
        tide_box *thin = tt_xmalloc((size_t)nranks * sizeof *thin);
        for (int q = 0; q < nranks; q++) {
            int lo = q == 0 ? 0 : 1 + (q - 1) * 6 / (nranks - 1);
            int hi = q == 0 ? 1 : 1 + q * 6 / (nranks - 1);
            thin[q] = tt_box(0, 0, lo, EN[0], EN[1], hi, NULL);
        }
        const tide_bc bc[3] = {TIDE_BC_PERIODIC, TIDE_BC_DIRICHLET, TIDE_BC_DIRICHLET};
        tt_check(&tally, world, tt_boxes_tile(EN, nranks, thin) && too_thin(thin, EN, bc, 2, 1),
                 "e) the test's halo rule: z [0,1) of 7 too thin for r 2, fuse 1");
        o.fuse = 1;
        expect_create("z [0,1) on rank 0 (Dirichlet), radius 2, fuse 1: too thin", &thin[rank],
                      &o, ARG, THIN_WORDS);
        free(thin);
        base_options(&o);
        o.fuse = rank == 0 ? 1 : 2;
        expect_create("fuse 1 on rank 0, 2 on the others", &slabs[rank], &o, MISM | ARG, NULL);
        base_options(&o);
        double src[1];
        o.source = rank == 0 ? src : NULL;
        expect_create("a source on rank 0 only", &slabs[rank], &o, MISM | ARG, NULL);
        base_options(&o);
        o.exchange = rank == 0 ? TIDE_EXCHANGE_P2P : TIDE_EXCHANGE_AUTO;
        expect_create("exchange p2p on rank 0, auto on the others", &slabs[rank], &o,
                      MISM | ARG, "exchange");
    } else if (rank == 0) {
        printf("  e) box NULL on rank 0 only, a box too thin for its halo, fuse or source "
               "differing between ranks: need 2 ranks (one rank's box is the whole grid)\n");
    }

    /* A plan still works: a run of -1 steps refused, u untouched, then 3 steps right. */
    base_options(&o);
    o.fuse = 1;
    tide_stencil_plan *plan = PLAN_SENTINEL;
    int st = tide_stencil_plan_create(ctx, EN, &slabs[rank], &o, &plan);
    if (tt_check(&tally, world, st == 0 && plan != PLAN_SENTINEL, "e) a plan after the bad "
                 "input: %s: %s", tide_strerror(st), tide_last_error(ctx))) {
        size_t gcount = (size_t)EN[0] * EN[1] * EN[2];
        size_t bytes = (size_t)tt_box_count(&slabs[rank]) * sizeof(double);
        double *ref = tt_xmalloc(gcount * sizeof *ref), *u = tt_xmalloc(bytes);
        double *u0 = tt_xmalloc(bytes), *want = tt_xmalloc(bytes);
        tt_rng rng;
        tt_rng_seed(&rng, 5151);
        tt_fill_random(ref, gcount, 1, 1, &rng);
        global_to_box(u0, ref, EN, &slabs[rank], sizeof(double));
        memcpy(u, u0, bytes);
        st = tide_stencil_run(plan, u, -1);
        expect_error("run of -1 steps", st, ARG, !memcmp(u, u0, bytes), NULL);
        st = tide_stencil_run(plan, u, 3);
        const tide_bc bc[3] = {TIDE_BC_PERIODIC, TIDE_BC_DIRICHLET, TIDE_BC_DIRICHLET};
        int rst = tide_ref_stencil(EN, 1, TIDE_STENCIL_STAR, 5, (const int(*)[3])star_off, star_w,
                               bc, NULL, ref, 3);
        global_to_box(want, ref, EN, &slabs[rank], sizeof(double));
        tt_check(&tally, world, st == 0 && rst == 0 && !memcmp(u, want, bytes),
                 "e) 3 steps after the bad input: status %d (%s)%s", st, tide_last_error(ctx),
                 st == 0 ? ", differs from the oracle" : "");
        tide_stencil_plan_destroy(plan);
        free(ref);
        free(u);
        free(u0);
        free(want);
    }
    free(slabs);
}

/* ---- main ----------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    world = MPI_COMM_WORLD;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &nranks);
    if (rank == 0)
        printf("test_stencil_dist on %d ranks (TIDE_TEST_VERBOSE=1 names each case as it "
               "starts)\n", nranks);
    const char *be = getenv("TIDE_TEST_BACKEND"), *verbose_env = getenv("TIDE_TEST_VERBOSE");
    verbose = verbose_env && verbose_env[0] && strcmp(verbose_env, "0") != 0;
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
            printf("test_stencil_dist: tide_context_create(MPI_COMM_WORLD) failed: %s: %s\n",
                   tide_strerror(st), tide_last_error(NULL));
        MPI_Finalize();
        return EXIT_FAILURE;
    }
    if (cuda && !tt_all(world, backend == TIDE_BACKEND_CUDA))
        return tt_stop_early(world, ctx, 77, "SKIP: no GPU for the CUDA backend: %s\n",
                             tide_context_gpu_status(ctx));
    double t0 = MPI_Wtime();
    gpu = backend == TIDE_BACKEND_CUDA;
    const char *loc = getenv("TIDE_TEST_LOCATION");
    on_device = gpu && loc && !strcmp(loc, "device");
    /* TIDE_TEST_EXCHANGE (device arrays, never out of core): every case's halos that way */
    forced = tt_exchange_env();
    if (forced != -1) {
        if (forced < 0 || forced == TIDE_EXCHANGE_DIRECT ||
            (forced != TIDE_EXCHANGE_P2P && !on_device))
            return tt_stop_early(world, ctx, EXIT_FAILURE, "test_stencil_dist: "
                                 "TIDE_TEST_EXCHANGE=%s: want p2p, or nccl or cuda-mpi with "
                                 "TIDE_TEST_LOCATION=device on the GPU\n",
                                 getenv("TIDE_TEST_EXCHANGE"));
        if (forced == TIDE_EXCHANGE_CUDA_MPI && !tt_cuda_aware(world, ctx))
            return tt_stop_early(world, ctx, 77, "SKIP: TIDE_TEST_EXCHANGE=cuda-mpi, but the MPI "
                                 "library does not take device pointers on every rank\n");
    }
    if (gpu && nranks == 1)
        return tt_stop_early(world, ctx, 77, "SKIPPED: on one rank on the GPU there is nothing "
                             "distributed to check (test_stencil does it)\n");
    if (rank == 0 && gpu)
        printf("  on the GPU (%s arrays)\n", on_device ? "device" : "host");
    decompositions();
    if (rank == 0)
        printf("  a)-d) %d cases run on %d ranks, %d refused as too thin (%d of them then "
               "without a thick enough fuse), %d with split passes (%.1f s)\n",
               ncases, nranks, nthin, nrefused, nsplit, MPI_Wtime() - t0);
    tt_check(&tally, world, nranks == 1 || nsplit > 0, "a)-d) no case split its passes");
    grid_choice();
    if (gpu && !on_device) {
        out_of_core_cases();
        if (rank == 0)
            printf("  f) out of core: 6 cases (%.1f s)\n", MPI_Wtime() - t0);
    }
    bad_input();
    if (rank == 0)
        printf("(%d checks, %d failed, %.1f s)\n", tally.checks, tally.failed,
               MPI_Wtime() - t0);
    tide_context_destroy(ctx);
    int rc = tt_finish(&tally, world, "test_stencil_dist", "checks");
    MPI_Finalize();
    return rc;
}
