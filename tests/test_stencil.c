/*
 * test_stencil.c: explicit stencil time steps (tide_stencil_*), checked BITWISE against the
 * naive oracle (tide_ref_stencil, apps/reference.c: one step at a time by a plain loop, written
 * from tide.h's arithmetic contract, no Tide code involved).
 *
 * Run under mpiexec with 1 to 6 ranks; with TIDE_TEST_BACKEND=cuda on the GPU (host arrays
 * moved through it, or with TIDE_TEST_LOCATION=device device arrays from tide_device_alloc),
 * skipped (77) where no GPU is usable. On the GPU the test moves its data with plain CUDA calls
 * right before each run: a pinned u written by a device-to-host copy queued on the plan's
 * stream behind a delay (alternating with plain pageable host arrays), or device arrays
 * written by a device-to-device copy queued the same way (alternating with a pageable
 * cudaMemcpy on the legacy stream), u poisoned with NaN bytes first; the plan's stream is the
 * legacy default stream, or the test's own non-blocking stream (given as the stream option or
 * by tide_stencil_plan_set_stream). A run not ordered after that work reads NaNs and fails.
 *
 *  a) the oracle's own conventions (a shift by one tap, Dirichlet planes held, the built-in
 *     taps' order and default weights, the source's add, the 27-point class form and when it
 *     applies), independently of the library;
 *  b) a plan on MPI_COMM_WORLD: on one rank it works; on several ranks a plan with
 *     the defaults works (box NULL: each rank's box read from tide_stencil_plan_info, the boxes
 *     tiling the grid, 4 steps on each box equal to the oracle's on the whole grid; the full
 *     distributed checks are test_stencil_dist's), a whole-grid box on every rank (boxes that
 *     overlap) and bad or rank-dependent options fail the same way on every rank with the same
 *     message, no hang; the same on the GPU (host arrays);
 *  c) cases on a context of MPI_COMM_SELF, each rank its own share (so 1..6 ranks run them
 *     concurrently and share the GPU): 7pt (default and random weights), 27pt (default,
 *     class-constant and random), user STAR radius 1..4 (random subsets of the axis offsets in
 *     random order, random weights), user BOX radius 1..3 and radius 4 with many taps; periodic, Dirichlet
 *     and mixed boundaries per dimension; odd, prime, non-cubic and minimal (2 r + 1) sizes;
 *     float and double; with and without a source; fuse 1, 2, 3, 4 to 8 (a backend limit
 *     below them, refused with a message naming fuse, accepted) and the plan's choice (asked
 *     back from tide_stencil_plan_info and passed explicitly); run after run of 1, 0, fuse + 1,
 *     2 fuse, 5 steps on the same u, each compared bitwise; C order (box NULL or given) and the
 *     other storage orders (a whole-grid box, the data permuted for the oracle); info
 *     (count, bytes, taps, radius, fuse, flops, bytes per step, backend, location) and
 *     describe (non-empty, never past its buffer); the source never written;
 *  d) bad input, every rank making the same calls: the same code and message on every rank,
 *     messages naming the offending value, the plan pointer or u left alone;
 *  e) on the GPU with host arrays, out of card: cases of c) on contexts whose device budget is
 *     below what the grid needs in card (a fraction of it), so the grid streams through the
 *     GPU in slabs: 5 to 20 slabs, periodic and Dirichlet along the slabs' dimension, radius 1
 *     to 3, a source, storage orders, 2 to 40 steps per pass and the plan's choice, levels of 1
 *     to 6 steps a sweep (option level_steps, also not dividing the steps per pass) and the
 *     plan's choice; info.slabs at least 2, the device memory within the budget and
 *     info.level_steps the most up to level_steps dividing the steps per pass, each run
 *     compared bitwise as in c). In card, info.slabs and info.level_steps are 0. The budget's
 *     edge: a budget of exactly the in-card need runs in card (the whole grid one piece), one
 *     byte less streams, in the fewest slabs that budget holds (never 2: two slabs' buffers,
 *     in and out for each of the pipeline's three, hold more than the in-card arrays do).
 */
#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tide_config.h"
#if TIDE_HAVE_CUDA
#include <cuda_runtime.h>
#endif
#include "common.h"
#include "reference.h"
#include "tide.h"

static MPI_Comm world;
static int rank, nranks;
static tt_tally tally;       /* collective checks over MPI_COMM_WORLD */
static int lchecks, lfailed; /* this rank's local checks (its own cases) */
static int gpu;              /* TIDE_TEST_BACKEND=cuda: the contexts run on the GPU */
static int on_device;        /* TIDE_TEST_LOCATION=device: u (and the source) in device memory */
static int verbose;          /* TIDE_TEST_VERBOSE=1: name each case as it starts */
static tide_context *sctx;   /* this rank's context on MPI_COMM_SELF (the cases run on it) */
static size_t oc_budget;     /* e): its device budget, which the case's grid exceeds; 0: c) */
static int oc_levels;        /* e): option level_steps */
static tide_backend sbackend;

/* A local check (this rank's own cases): printed by the rank that fails it. */
static int lcheck(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int lcheck(int ok, const char *fmt, ...)
{
    lchecks++;
    if (!ok) {
        lfailed++;
        char msg[2048];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        printf("FAIL: [rank %d] %s\n", rank, msg);
        fflush(stdout);
    }
    return ok;
}

/* ---- moving the data: plain C on the CPU, plain CUDA calls on the GPU ----------------------- */

#if TIDE_HAVE_CUDA
#define CU TT_CU

enum { DELAY_MS = 5 };

/* Host arrays on the GPU: a plain pageable array (the library moves it), or a pinned one
 * poisoned with NaN bytes and written by a device-to-host copy queued on the plan's stream
 * behind a delay, not waited for. cur: u before, u after. */
static int run_gpu_host(tide_stencil_plan *plan, void *cur, size_t bytes, long long steps,
                        cudaStream_t stream, int pinned)
{
    if (!pinned) {
        void *u = tt_xmalloc(bytes);
        memcpy(u, cur, bytes);
        int st = tide_stencil_run(plan, u, steps);
        memcpy(cur, u, bytes);
        free(u);
        return st;
    }
    void *u = NULL, *stage = NULL;
    CU(cudaMallocHost(&u, bytes));
    CU(cudaMalloc(&stage, bytes));
    CU(cudaMemcpy(stage, cur, bytes, cudaMemcpyHostToDevice));
    memset(u, 0xff, bytes); /* NaN in float and double: a read before the copy lands shows */
    CU(cudaLaunchHostFunc(stream, tt_sleep_on_stream, (void *)(intptr_t)DELAY_MS));
    CU(cudaMemcpyAsync(u, stage, bytes, cudaMemcpyDeviceToHost, stream));
    int st = tide_stencil_run(plan, u, steps);
    /* Steps > 0: the run read u after the copy and is complete on return, so u is final.
     * 0 steps (or a failure) need not wait for the caller's copy: we do. */
    if (st != 0 || steps == 0)
        CU(cudaStreamSynchronize(stream));
    memcpy(cur, u, bytes);
    CU(cudaStreamSynchronize(stream));
    CU(cudaFree(stage));
    CU(cudaFreeHost(u));
    return st;
}

#endif

/* One run of `steps` on u (cur: this rank's array in the plan's box layout, host memory; the
 * result replaces it) the way the mode under test moves data. call: a counter picking the
 * variant. */
static int run_steps(tide_stencil_plan *plan, void *cur, size_t bytes, long long steps,
                     void *stream, int call)
{
#if TIDE_HAVE_CUDA
    if (gpu)
        return on_device ? tt_stencil_run_device(sctx, plan, cur, bytes, steps,
                                                 (cudaStream_t)stream, call % 2)
                         : run_gpu_host(plan, cur, bytes, steps, (cudaStream_t)stream, call % 2);
#else
    (void)stream;
    (void)call;
#endif
    void *u = tt_xmalloc(bytes);
    memcpy(u, cur, bytes);
    int st = tide_stencil_run(plan, u, steps);
    memcpy(cur, u, bytes);
    free(u);
    return st;
}

/* ---- layouts and values --------------------------------------------------------------------- */

static tide_box whole(const int n[3], const int order[3])
{
    return tt_box(0, 0, 0, n[0], n[1], n[2], order);
}

/* C-order array c <-> array b laid out as box (the whole grid). */
static void c_to_box(void *b, const void *c, const tide_box *box, size_t es)
{
    int p[3];
    size_t i = 0;
    for (p[0] = 0; p[0] < box->hi[0]; p[0]++)
        for (p[1] = 0; p[1] < box->hi[1]; p[1]++)
            for (p[2] = 0; p[2] < box->hi[2]; p[2]++, i++)
                memcpy((char *)b + (size_t)tt_offset(box, p) * es, (const char *)c + i * es, es);
}

static void box_to_c(void *c, const void *b, const tide_box *box, size_t es)
{
    int p[3];
    size_t i = 0;
    for (p[0] = 0; p[0] < box->hi[0]; p[0]++)
        for (p[1] = 0; p[1] < box->hi[1]; p[1]++)
            for (p[2] = 0; p[2] < box->hi[2]; p[2]++, i++)
                memcpy((char *)c + i * es, (const char *)b + (size_t)tt_offset(box, p) * es, es);
}

/* Whether msg contains needle, ignoring case. */
static int contains(const char *msg, const char *needle)
{
    size_t len = strlen(needle);
    for (const char *m = msg; m && *m; m++) {
        size_t k = 0;
        while (k < len && m[k] && tolower((unsigned char)m[k]) == tolower((unsigned char)needle[k]))
            k++;
        if (k == len)
            return 1;
    }
    return 0;
}

/* Whether msg contains one of the '|'-separated words, in any case. */
static int mentions(const char *msg, const char *words)
{
    char w[64];
    for (const char *p = words; *p;) {
        size_t len = strcspn(p, "|");
        snprintf(w, sizeof w, "%.*s", (int)len, p);
        if (contains(msg, w))
            return 1;
        p += len + (p[len] == '|');
    }
    return 0;
}

/* Whether msg contains the integer v as a number of its own (no digit right before or after). */
static int has_number(const char *msg, long long v)
{
    char num[32];
    snprintf(num, sizeof num, "%lld", v);
    size_t len = strlen(num);
    for (const char *m = msg; m && *m; m++)
        if (!strncmp(m, num, len) && (m == msg || !isdigit((unsigned char)m[-1])) &&
            !isdigit((unsigned char)m[len]))
            return 1;
    return 0;
}

/* ---- a) the oracle's own conventions -------------------------------------------------------- */

/* u at (x + a, y + b, z + c) of the float grid n, every dimension wrapped. */
static float at_wrapped(const float *u, const int n[3], int x, int y, int z, int a, int b, int c)
{
    x = (x + a + n[0]) % n[0], y = (y + b + n[1]) % n[1], z = (z + c + n[2]) % n[2];
    return u[(x * n[1] + y) * n[2] + z];
}

/* The class form at (x, y, z), written out: plane a of x gives cc u + cf (face sum) + ce (edge
 * sum) as cw's chain of a product and two multiply-adds, the planes summed left to right. */
static float class_by_hand(const float *u, const int n[3], int x, int y, int z,
                           const float cw[4])
{
    float plane[3];
    for (int a = -1; a <= 1; a++) {
        float f = (at_wrapped(u, n, x, y, z, a, -1, 0) + at_wrapped(u, n, x, y, z, a, 1, 0)) +
                  (at_wrapped(u, n, x, y, z, a, 0, -1) + at_wrapped(u, n, x, y, z, a, 0, 1));
        float k = (at_wrapped(u, n, x, y, z, a, -1, -1) + at_wrapped(u, n, x, y, z, a, 1, -1)) +
                  (at_wrapped(u, n, x, y, z, a, -1, 1) + at_wrapped(u, n, x, y, z, a, 1, 1));
        const float *c = a == 0 ? cw : cw + 1; /* the middle plane holds the centre */
        plane[a + 1] = fmaf(c[2], k, fmaf(c[1], f, c[0] * at_wrapped(u, n, x, y, z, a, 0, 0)));
    }
    return (plane[0] + plane[1]) + plane[2];
}

/* The tap order at (x, y, z): a product, then a multiply-add per further tap. */
static float taps_by_hand(const float *u, const int n[3], int x, int y, int z, int ntaps,
                          const int (*off)[3], const double *w)
{
    float acc = (float)w[0] * at_wrapped(u, n, x, y, z, off[0][0], off[0][1], off[0][2]);
    for (int t = 1; t < ntaps; t++)
        acc = fmaf((float)w[t], at_wrapped(u, n, x, y, z, off[t][0], off[t][1], off[t][2]),
                   acc);
    return acc;
}

/* The 27-point shape with one weight per class goes in the class form: within a few ulps of
 * the plain 27-term sum everywhere (of the sum of the terms' magnitudes), bitwise the formula
 * written out at every fifth point, and not the tap order everywhere; the same taps and
 * weights as a user BOX, or with one weight off its class, go in the tap order. Periodic,
 * float. */
static void oracle_classes(tt_rng *rng)
{
    const int n[3] = {5, 4, 6};
    const tide_bc bc[3] = {TIDE_BC_PERIODIC, TIDE_BC_PERIODIC, TIDE_BC_PERIODIC};
    int off[27][3];
    double w[27];
    const double cw[4] = {0.3, -0.0712890625, 0.04541015625, 0.0107421875}; /* floats */
    const float cwf[4] = {(float)cw[0], (float)cw[1], (float)cw[2], (float)cw[3]};
    tide_ref_stencil_taps(TIDE_STENCIL_27PT, NULL, off, w);
    for (int t = 0; t < 27; t++)
        w[t] = cw[!!off[t][0] + !!off[t][1] + !!off[t][2]];
    float u0[120], u[120], b[120];
    tt_fill_random(u0, 120, 0, 1, rng);
    memcpy(u, u0, sizeof u);
    memcpy(b, u0, sizeof b);
    int st = tide_ref_stencil(n, 0, TIDE_STENCIL_27PT, 27, (const int(*)[3])off, w, bc, NULL,
                              u, 1);
    st |= tide_ref_stencil(n, 0, TIDE_STENCIL_BOX, 27, (const int(*)[3])off, w, bc, NULL, b, 1);
    double worst = 0;
    int hand = 1, box = 1, taps_everywhere = 1;
    for (int x = 0; x < n[0]; x++)
        for (int y = 0; y < n[1]; y++)
            for (int z = 0; z < n[2]; z++) {
                int i = (x * n[1] + y) * n[2] + z;
                double sum = 0, mag = 0;
                for (int t = 0; t < 27; t++) {
                    double term = w[t] * at_wrapped(u0, n, x, y, z, off[t][0], off[t][1],
                                                    off[t][2]);
                    sum += term, mag += fabs(term);
                }
                double e = fabs(u[i] - sum) / (mag * FLT_EPSILON);
                worst = e > worst ? e : worst;
                float tap = taps_by_hand(u0, n, x, y, z, 27, (const int(*)[3])off, w);
                taps_everywhere &= u[i] == tap;
                box &= b[i] == tap;
                if (i % 5 == 0)
                    hand &= u[i] == class_by_hand(u0, n, x, y, z, cwf);
            }
    lcheck(st == 0 && worst <= 4 && hand && !taps_everywhere,
           "a) oracle: 27pt with class weights: %g ulps of the sum's magnitude from the plain "
           "sum (at most 4), the formula written out %s, the tap order everywhere %d",
           worst, hand ? "matched" : "differs", taps_everywhere);
    lcheck(box, "a) oracle: a user BOX of the 27 taps with class weights not in the tap order");
    /* one weight off its class: the tap order */
    w[0] *= 1.5;
    memcpy(u, u0, sizeof u);
    st = tide_ref_stencil(n, 0, TIDE_STENCIL_27PT, 27, (const int(*)[3])off, w, bc, NULL, u, 1);
    int taps = st == 0;
    for (int i = 0; i < 120; i += 7)
        taps &= u[i] == taps_by_hand(u0, n, i / 24, i / 6 % 4, i % 6, 27,
                                     (const int(*)[3])off, w);
    lcheck(taps, "a) oracle: 27pt with one weight off its class not in the tap order");
}

static void oracle_selftest(void)
{
    tt_rng rng;
    tt_rng_seed(&rng, 4242);
    /* A single tap (1, -2, 0) of weight 1, periodic: u'(x, y, z) = u(x + 1, y - 2, z), wrapped. */
    {
        const int n[3] = {5, 6, 7};
        const int off[1][3] = {{1, -2, 0}};
        const double w[1] = {1};
        const tide_bc bc[3] = {TIDE_BC_PERIODIC, TIDE_BC_PERIODIC, TIDE_BC_PERIODIC};
        double u0[210], u[210];
        tt_fill_random(u0, 210, 1, 1, &rng);
        memcpy(u, u0, sizeof u);
        int st = tide_ref_stencil(n, 1, TIDE_STENCIL_BOX, 1, off, w, bc, NULL, u, 1), ok = st == 0;
        for (int x = 0; x < 5; x++)
            for (int y = 0; y < 6; y++)
                for (int z = 0; z < 7; z++)
                    ok = ok && u[(x * 6 + y) * 7 + z] ==
                                   u0[(((x + 1) % 5) * 6 + (y + 4) % 6) * 7 + z];
        /* Two steps: the shift twice. */
        memcpy(u, u0, sizeof u);
        st = tide_ref_stencil(n, 1, TIDE_STENCIL_BOX, 1, off, w, bc, NULL, u, 2);
        for (int x = 0; x < 5; x++)
            for (int y = 0; y < 6; y++)
                for (int z = 0; z < 7; z++)
                    ok = ok && st == 0 &&
                         u[(x * 6 + y) * 7 + z] == u0[(((x + 2) % 5) * 6 + (y + 2) % 6) * 7 + z];
        lcheck(ok, "a) oracle: a periodic shift by tap (1,-2,0) is not u(x+1, y-2, z)");
    }
    /* Dirichlet everywhere, one tap (0, 0, 1) (r = 1), float: the outer planes keep their
     * values, inside u(x, y, z + 1); and a grid below 2 r + 1 is refused. */
    {
        const int n[3] = {4, 3, 5};
        const int off[1][3] = {{0, 0, 1}};
        const double w[1] = {1};
        const tide_bc bc[3] = {TIDE_BC_DIRICHLET, TIDE_BC_DIRICHLET, TIDE_BC_DIRICHLET};
        float u0[60], u[60];
        tt_fill_random(u0, 60, 0, 1, &rng);
        memcpy(u, u0, sizeof u);
        int st = tide_ref_stencil(n, 0, TIDE_STENCIL_BOX, 1, off, w, bc, NULL, u, 1), ok = st == 0;
        for (int x = 0; x < 4; x++)
            for (int y = 0; y < 3; y++)
                for (int z = 0; z < 5; z++) {
                    int i = (x * 3 + y) * 5 + z;
                    int edge = x == 0 || x == 3 || y == 0 || y == 2 || z == 0 || z == 4;
                    ok = ok && u[i] == (edge ? u0[i] : u0[i + 1]);
                }
        lcheck(ok, "a) oracle: Dirichlet planes not held, or the interior not u(x, y, z+1)");
        const int small[3] = {4, 2, 5};
        lcheck(tide_ref_stencil(small, 0, TIDE_STENCIL_BOX, 1, off, w, bc, NULL, u, 1) ==
                   TIDE_ERR_ARGUMENT,
               "a) oracle: a grid of 2 points along y with r = 1 accepted");
    }
    /* The source: one tap (0,0,0) of weight 0.5 and a source: 0.5 u + s, rounded once each;
     * float weights rounded to float first. */
    {
        const int n[3] = {3, 3, 3};
        const int off[1][3] = {{0, 0, 0}};
        const double w[1] = {0.1};
        const tide_bc bc[3] = {TIDE_BC_PERIODIC, TIDE_BC_PERIODIC, TIDE_BC_PERIODIC};
        float u0[27], u[27], s[27];
        tt_fill_random(u0, 27, 0, 1, &rng);
        tt_fill_random(s, 27, 0, 1, &rng);
        memcpy(u, u0, sizeof u);
        int st = tide_ref_stencil(n, 0, TIDE_STENCIL_BOX, 1, off, w, bc, s, u, 1), ok = st == 0;
        volatile float wf = (float)0.1;
        for (int i = 0; i < 27; i++) {
            volatile float prod = wf * u0[i];
            volatile float sum = prod + s[i];
            ok = ok && u[i] == sum;
        }
        lcheck(ok, "a) oracle: one tap plus source is not the float (w u) + s");
    }
    /* Built-in taps: the documented orders and default weights (sum 1: a diffusion step). */
    {
        int off[27][3];
        double w[27], sum = 0;
        int k = tide_ref_stencil_taps(TIDE_STENCIL_7PT, NULL, off, w), ok = k == 7;
        for (int t = 0; t < k; t++)
            sum += w[t];
        ok = ok && sum == 1 && w[0] == 0.25 && off[1][0] == -1 && off[4][1] == 1 &&
             off[5][2] == -1 && w[6] == 0.125;
        lcheck(ok, "a) oracle: 7pt taps or default weights");
        k = tide_ref_stencil_taps(TIDE_STENCIL_27PT, NULL, off, w);
        sum = 0;
        ok = k == 27;
        for (int t = 0; t < k; t++)
            sum += w[t];
        /* index 19 = 9*2 + 3*0 + 1: (1, -1, 0), weight 1/4 * 1/4 * 1/2; the centre 13. */
        ok = ok && sum == 1 && off[19][0] == 1 && off[19][1] == -1 && off[19][2] == 0 &&
             w[19] == 0.03125 && off[13][0] == 0 && off[13][1] == 0 && off[13][2] == 0 &&
             w[13] == 0.125 && w[0] == 1.0 / 64;
        lcheck(ok, "a) oracle: 27pt taps or default weights");
        lcheck(tide_ref_stencil_taps(TIDE_STENCIL_STAR, NULL, off, w) == 0,
               "a) oracle: taps of a user shape");
    }
    oracle_classes(&rng);
}

/* ---- c) cases ------------------------------------------------------------------------------- */

enum { MAXTAPS = 729 };

typedef struct {
    char name[160];
    int n[3];
    int dbl;
    tide_stencil_shape shape;
    int radius;   /* the stencil's radius (the declared one of a user shape) */
    int ntaps;    /* user shapes: the taps; built-in: 7 or 27 */
    int off[MAXTAPS][3];
    double w[MAXTAPS];
    int weights;  /* built-in shapes: pass w (else NULL: the defaults) */
    tide_bc bc[3];
    int source;
    int fuse;     /* > 0: that; 0: the plan's choice; -1: the plan's choice asked back and given */
    int order[3];
    int null_box; /* C order given as box NULL */
    unsigned seed;
} scase;

static const char *shape_name[] = {"7pt", "27pt", "star", "box"};


typedef struct {
    int shape;    /* tide_stencil_shape */
    int r;        /* user shapes */
    int count;    /* BOX: taps (0: random up to 40) */
    int n[3];
    int dbl;
    const char *bc; /* per dimension P or D */
    int source;
    int fuse;
    int order;    /* 0: box NULL; 1..6: a whole-grid box in order tt_perm3(order - 1) */
    int rw;       /* built-in shapes: random weights (2: one random weight per class) */
} spec;

enum { O012 = 1, O021 = 2, O102 = 3, O120 = 4, O201 = 5, O210 = 6 };
enum { S7 = TIDE_STENCIL_7PT, S27 = TIDE_STENCIL_27PT, SS = TIDE_STENCIL_STAR,
       SB = TIDE_STENCIL_BOX };

static const spec specs[] = {
    /* 7pt: default and random weights */
    {S7, 1, 0, {7, 11, 13}, 1, "DDD", 0, 0, 0, 0},
    {S7, 1, 0, {17, 5, 19}, 0, "PPP", 0, 1, O012, 0},
    {S7, 1, 0, {3, 3, 3}, 1, "PDP", 1, 2, O210, 0},
    {S7, 1, 0, {11, 13, 7}, 1, "PDP", 1, 2, O210, 1},
    {S7, 1, 0, {3, 4, 5}, 0, "DPD", 0, 3, O120, 1},
    {S7, 1, 0, {19, 17, 5}, 0, "DDP", 1, -1, O012, 1},
    {S7, 1, 0, {13, 3, 11}, 1, "PPP", 1, -1, O201, 1},
    /* 27pt */
    {S27, 1, 0, {7, 11, 13}, 1, "PPP", 0, -1, 0, 0},
    {S27, 1, 0, {5, 3, 7}, 0, "DDD", 1, 1, O021, 0},
    {S27, 1, 0, {17, 5, 19}, 0, "DDP", 1, 2, O210, 1},
    {S27, 1, 0, {3, 3, 3}, 1, "PPD", 0, 3, O120, 1},
    {S27, 1, 0, {13, 7, 11}, 1, "PDD", 0, 0, O102, 1},
    /* user STAR radius 1..4 */
    {SS, 1, 0, {7, 11, 13}, 1, "PDP", 0, 1, O012, 0},
    {SS, 2, 0, {17, 5, 19}, 0, "DPD", 1, 2, O210, 0},
    {SS, 3, 0, {7, 11, 13}, 1, "PPP", 1, 3, O120, 0},
    {SS, 4, 0, {11, 9, 13}, 0, "DDD", 0, -1, 0, 0},
    {SS, 4, 0, {13, 17, 9}, 1, "PDP", 1, 2, O210, 0},
    /* ... at the minimal size 2 r + 1 (along every dimension, or along one) */
    {SS, 1, 0, {3, 3, 3}, 0, "DDP", 1, 2, 0, 0},
    {SS, 2, 0, {5, 5, 5}, 1, "PPD", 0, 3, O210, 0},
    {SS, 3, 0, {7, 7, 7}, 0, "PDP", 1, 1, O120, 0},
    {SS, 4, 0, {9, 9, 9}, 1, "DPD", 1, -1, O012, 0},
    {SS, 4, 0, {9, 9, 9}, 0, "PPP", 0, 3, O201, 0},
    {SS, 3, 0, {11, 7, 13}, 1, "PPP", 0, 2, O021, 0},
    /* user BOX radius 1..3 */
    {SB, 1, 0, {7, 11, 13}, 1, "DDD", 1, 2, O012, 0},
    {SB, 2, 0, {17, 5, 19}, 0, "PDP", 0, 3, O210, 0},
    {SB, 3, 0, {13, 11, 7}, 1, "DPP", 1, 1, O120, 0},
    {SB, 3, 0, {19, 7, 17}, 0, "PPD", 0, -1, 0, 0},
    {SB, 1, 27, {3, 3, 3}, 0, "PPP", 0, -1, O102, 0},
    {SB, 2, 60, {5, 6, 5}, 1, "DPD", 1, 2, 0, 0},
    {SB, 3, 0, {7, 7, 7}, 1, "PPD", 0, 3, O201, 0},
    /* BOX radius 4 with many taps on small grids */
    {SB, 4, 400, {9, 10, 11}, 1, "PDP", 1, -1, O210, 0},
    {SB, 4, 729, {9, 10, 11}, 0, "DPP", 0, 2, 0, 0},
    {SB, 4, 60, {9, 9, 9}, 0, "PPP", 1, 3, O120, 0},
    /* larger grids: several GPU tiles along every dimension */
    {S7, 1, 0, {45, 33, 29}, 0, "PPP", 0, -1, 0, 0},
    {S27, 1, 0, {41, 37, 31}, 1, "DPD", 1, 0, O210, 1},
    {SS, 2, 0, {40, 36, 35}, 0, "DDD", 0, 2, 0, 0},
    {SB, 2, 30, {37, 29, 31}, 1, "PDP", 1, 3, O012, 0},
    {S7, 1, 0, {70, 67, 33}, 0, "PDP", 1, -1, O201, 1},
    {SS, 3, 0, {66, 35, 47}, 1, "DDD", 0, -1, O012, 0},
    {S27, 1, 0, {53, 71, 34}, 0, "PPP", 0, 3, 0, 0},
    /* 27pt in C order on rows of a multiple of 4 points (the GPU's vector path), several tiles
     * and chunks, 2 to 4 steps per pass (on the GPU double fuses 3 in the generic kernel) */
    {S27, 1, 0, {37, 61, 132}, 0, "DDD", 1, 4, O012, 1},
    {S27, 1, 0, {29, 45, 128}, 1, "PDP", 1, 3, 0, 0},
    {S27, 1, 0, {21, 50, 136}, 1, "PPP", 0, 2, O012, 1},
    {S27, 1, 0, {19, 40, 124}, 0, "DPD", 0, -1, 0, 1},
    /* larger fuse counts (a GPU kernel limit below them is accepted, see run_case) */
    {S7, 1, 0, {23, 19, 29}, 0, "PPP", 0, 8, 0, 0},
    {S27, 1, 0, {17, 21, 13}, 1, "DPD", 1, 5, O210, 1},
    {SS, 4, 0, {9, 11, 10}, 0, "PPD", 1, 6, O120, 0},
    {SB, 2, 40, {11, 13, 5}, 1, "PPP", 0, 4, 0, 0},
};
enum { NSPECS = (int)(sizeof specs / sizeof specs[0]), NFUZZ = 96 };

/* e) out of card: a case, the fraction of its in-card device memory (u, the work array and
 * the source) the budget allows, and option level_steps (0: the plan's choice). The slowest
 * storage dimension is the long one. */
typedef struct {
    spec s;
    double frac;
    int levels;
} oc_spec;

static const oc_spec oc_specs[] = {
    {{S7, 1, 0, {61, 29, 23}, 0, "DDD", 0, -1, 0, 0}, 0.9, 4},
    {{S7, 1, 0, {64, 19, 17}, 1, "PPP", 1, 3, O012, 1}, 0.9, 3},
    {{S27, 1, 0, {17, 19, 71}, 0, "PDP", 0, 2, O210, 1}, 0.9, 2},
    {{SS, 2, 0, {90, 13, 11}, 1, "PPD", 1, 2, 0, 0}, 0.95, 0},
    {{SB, 1, 0, {200, 17, 23}, 0, "DPP", 0, 12, 0, 0}, 0.95, 3},
    {{SS, 3, 0, {151, 7, 9}, 0, "PPP", 1, 4, 0, 0}, 0.99, 0},
    {{S7, 1, 0, {200, 9, 7}, 0, "PDD", 0, 8, 0, 1}, 0.5, 5},
    {{S27, 1, 0, {97, 12, 10}, 1, "PPP", 1, -1, O012, 0}, 0.7, 2},
    {{S7, 1, 0, {400, 5, 6}, 0, "DPD", 0, 40, 0, 1}, 0.95, 6},
    {{S7, 1, 0, {600, 4, 5}, 1, "PPD", 1, 40, O012, 1}, 0.95, 4},
    {{S7, 1, 0, {300, 6, 7}, 0, "PDD", 1, 24, 0, 1}, 0.9, 1},
    {{S7, 1, 0, {300, 6, 7}, 0, "DDD", 1, 0, 0, 1}, 0.9, 0},
};
enum { NOC = (int)(sizeof oc_specs / sizeof oc_specs[0]) };

static tide_bc bc_of(char c) { return c == 'P' ? TIDE_BC_PERIODIC : TIDE_BC_DIRICHLET; }

static void name_case(scase *c, const char *kind)
{
    char ord[8];
    snprintf(ord, sizeof ord, "%s", c->null_box ? "NULL" : tt_order_name(c->order));
    snprintf(c->name, sizeof c->name,
             "%s %s r%d %d taps%s %dx%dx%d %s bc %c%c%c%s fuse %d box %s seed %u", kind,
             shape_name[c->shape], c->radius, c->ntaps,
             c->shape > TIDE_STENCIL_27PT ? ""
             : c->weights == 2 && c->shape == TIDE_STENCIL_27PT ? " (class weights)"
             : c->weights                                       ? " (random weights)"
                                                                : " (defaults)",
             c->n[0], c->n[1], c->n[2], c->dbl ? "double" : "float",
             c->bc[0] == TIDE_BC_PERIODIC ? 'P' : 'D', c->bc[1] == TIDE_BC_PERIODIC ? 'P' : 'D',
             c->bc[2] == TIDE_BC_PERIODIC ? 'P' : 'D', c->source ? " source" : "", c->fuse, ord,
             c->seed);
}

static void build_case(const spec *s, unsigned seed, const char *kind, scase *c)
{
    tt_rng rng;
    tt_rng_seed(&rng, seed);
    memset(c, 0, sizeof *c);
    memcpy(c->n, s->n, sizeof c->n);
    c->dbl = s->dbl;
    c->shape = (tide_stencil_shape)s->shape;
    for (int d = 0; d < 3; d++)
        c->bc[d] = bc_of(s->bc[d]);
    c->source = s->source;
    c->fuse = s->fuse;
    c->null_box = s->order == 0;
    tt_perm3(s->order ? s->order - 1 : 0, c->order);
    c->seed = seed;
    if (c->shape == TIDE_STENCIL_7PT || c->shape == TIDE_STENCIL_27PT) {
        c->radius = 1;
        c->weights = s->rw;
        double dummy[27];
        c->ntaps = tide_ref_stencil_taps(c->shape, NULL, c->off, dummy);
        if (s->rw)
            tt_stencil_weights(&rng, c->ntaps, c->w);
        double cw[4] = {c->w[0], c->w[1], c->w[2], c->w[3]};
        for (int t = 0; t < 27 && s->rw == 2 && c->shape == TIDE_STENCIL_27PT; t++)
            c->w[t] = cw[!!c->off[t][0] + !!c->off[t][1] + !!c->off[t][2]]; /* the class form */
    } else {
        c->radius = s->r;
        c->ntaps = c->shape == TIDE_STENCIL_STAR ? tt_star_taps(&rng, s->r, c->off)
                                                 : tt_box_taps(&rng, s->r, s->count, c->off);
        tt_stencil_weights(&rng, c->ntaps, c->w);
    }
    name_case(c, kind);
}

/* A random case: shape, radius, sizes from 2 r + 1 up, precision, boundaries, source, fuse,
 * storage order. */
static void fuzz_case(int k, scase *c)
{
    unsigned seed = 900001u + 7919u * (unsigned)k;
    tt_rng rng;
    tt_rng_seed(&rng, seed);
    spec s;
    memset(&s, 0, sizeof s);
    s.shape = tt_rng_below(&rng, 4);
    s.r = s.shape == TIDE_STENCIL_STAR  ? 1 + tt_rng_below(&rng, 4)
          : s.shape == TIDE_STENCIL_BOX ? (tt_rng_below(&rng, 6) ? 1 + tt_rng_below(&rng, 3) : 4)
                                        : 1;
    s.count = 0;
    int r = s.r;
    for (int d = 0; d < 3; d++)
        s.n[d] = 2 * r + 1 + (tt_rng_below(&rng, 3) ? tt_rng_below(&rng, 14) : 0);
    s.dbl = tt_rng_below(&rng, 2);
    static char bcs[8][4];
    for (int d = 0; d < 3; d++)
        bcs[k % 8][d] = tt_rng_below(&rng, 2) ? 'P' : 'D';
    bcs[k % 8][3] = 0;
    s.bc = bcs[k % 8];
    s.source = tt_rng_below(&rng, 2);
    static const int fuses[] = {0, 1, 2, 3, -1, 4, 1, 2, -1, 7};
    s.fuse = fuses[tt_rng_below(&rng, 10)];
    s.order = tt_rng_below(&rng, 7);
    s.rw = tt_rng_below(&rng, 3);
    build_case(&s, seed + 1, "fuzz", c);
}

/* Where the library's result first differs from the oracle's: a readable report. */
static void report_mismatch(const scase *c, const void *got, const void *want, long long step_run,
                            long long total, int fuse)
{
    size_t count = (size_t)c->n[0] * c->n[1] * c->n[2], es = c->dbl ? 8 : 4, bad = 0, first = 0;
    for (size_t i = 0; i < count; i++)
        if (memcmp((const char *)got + i * es, (const char *)want + i * es, es)) {
            if (!bad)
                first = i;
            bad++;
        }
    int p[3] = {(int)(first / ((size_t)c->n[1] * c->n[2])),
                (int)(first / (size_t)c->n[2] % (size_t)c->n[1]), (int)(first % (size_t)c->n[2])};
    int fixed = 0;
    for (int d = 0; d < 3; d++)
        fixed |= c->bc[d] == TIDE_BC_DIRICHLET &&
                 (p[d] < c->radius || p[d] >= c->n[d] - c->radius);
    double g = tt_elem(got, c->dbl, first), w = tt_elem(want, c->dbl, first);
    lcheck(0,
           "c) %s: run of %lld steps (%lld in all, plan fuse %d): %zu of %zu points differ from "
           "the oracle; first (%d,%d,%d)%s: got %.17g (%a) want %.17g (%a), diff %.3g",
           c->name, step_run, total, fuse, bad, count, p[0], p[1], p[2],
           fixed ? " (a Dirichlet boundary point)" : "", g, g, w, w, g - w);
}

static tide_stencil_plan *PLAN_NONE = NULL;

static int create_plan(const scase *c, int fuse, void *source, void *stream,
                       tide_stencil_plan **plan)
{
    tide_stencil_options o;
    tide_stencil_options_init(&o);
    o.precision = c->dbl ? TIDE_DOUBLE : TIDE_FLOAT;
    o.location = on_device ? TIDE_LOCATION_DEVICE : TIDE_LOCATION_HOST;
    o.shape = c->shape;
    if (c->shape == TIDE_STENCIL_7PT || c->shape == TIDE_STENCIL_27PT) {
        o.weights = c->weights ? c->w : NULL;
    } else {
        o.weights = c->w;
        o.radius = c->radius;
        o.npoints = c->ntaps;
        o.offsets = (const int(*)[3])c->off;
    }
    for (int d = 0; d < 3; d++)
        o.bc[d] = c->bc[d];
    o.source = source;
    o.fuse = fuse;
    o.stream = stream;
    o.level_steps = oc_levels;
    tide_box box = whole(c->n, c->order);
    *plan = PLAN_NONE;
    return tide_stencil_plan_create(sctx, c->n, c->null_box ? NULL : &box, &o, plan);
}

static void run_case(const scase *c, int index)
{
    if (verbose) {
        printf("  [rank %d] case %d: %s\n", rank, index, c->name);
        fflush(stdout);
    }
    size_t count = (size_t)c->n[0] * c->n[1] * c->n[2], es = c->dbl ? 8 : 4;
    size_t bytes = count * es;
    tide_box box = whole(c->n, c->order);
    tt_rng rng;
    tt_rng_seed(&rng, c->seed * 31u + 7u);
    void *ref = tt_xmalloc(bytes), *cur = tt_xmalloc(bytes), *got = tt_xmalloc(bytes);
    void *src_c = c->source ? tt_xmalloc(bytes) : NULL, *src_b = c->source ? tt_xmalloc(bytes) : NULL;
    tt_fill_random(ref, count, c->dbl, 1.0, &rng);
    c_to_box(cur, ref, &box, es);
    if (c->source) {
        tt_fill_random(src_c, count, c->dbl, 0.1, &rng);
        c_to_box(src_b, src_c, &box, es);
    }
    /* The oracle's taps. */
    int (*toff)[3] = tt_xmalloc(MAXTAPS * sizeof *toff);
    double *tw = tt_xmalloc(MAXTAPS * sizeof *tw);
    int ntaps = c->ntaps;
    if (c->shape == TIDE_STENCIL_7PT || c->shape == TIDE_STENCIL_27PT)
        ntaps = tide_ref_stencil_taps(c->shape, c->weights ? c->w : NULL, toff, tw);
    else {
        memcpy(toff, c->off, (size_t)ntaps * sizeof *toff);
        memcpy(tw, c->w, (size_t)ntaps * sizeof *tw);
    }

    /* The stream the plan orders itself after: the legacy one, or the test's own (given as
     * the option on every 4th case + 1, by set_stream on every 4th + 3). */
    void *stream = NULL, *dsrc = NULL;
    int own_stream = 0, by_set = 0;
#if TIDE_HAVE_CUDA
    if (gpu && index % 2) {
        cudaStream_t s;
        CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        stream = s;
        own_stream = 1;
        by_set = index % 4 == 3;
    }
    if (gpu && on_device && c->source) {
        if (tide_device_alloc(sctx, bytes, &dsrc) != 0) {
            fprintf(stderr, "test_stencil: tide_device_alloc: %s\n", tide_last_error(sctx));
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        CU(cudaMemcpy(dsrc, src_b, bytes, cudaMemcpyHostToDevice));
        CU(cudaDeviceSynchronize());
    }
#endif
    void *source = dsrc ? dsrc : src_b;

    tide_stencil_plan *plan = NULL;
    tide_stencil_info info;
    int fuse = c->fuse, st;
    if (fuse < 0) {
        /* The plan's own choice, asked back and then given explicitly. */
        st = create_plan(c, 0, source, by_set ? NULL : stream, &plan);
        if (!lcheck(st == 0, "c) %s: plan (fuse 0, to read the choice): %s: %s", c->name,
                    tide_strerror(st), tide_last_error(sctx)))
            goto done;
        st = tide_stencil_plan_info(plan, &info);
        fuse = st == 0 ? info.fuse : 1;
        lcheck(st == 0 && info.fuse >= 1, "c) %s: info of the fuse-0 plan: status %d, fuse %d",
               c->name, st, st == 0 ? info.fuse : -1);
        tide_stencil_plan_destroy(plan);
        plan = NULL;
        if (fuse < 1)
            fuse = 1;
    }
    st = create_plan(c, fuse, source, by_set ? NULL : stream, &plan);
    if (st == TIDE_ERR_ARGUMENT && fuse > 3 && contains(tide_last_error(sctx), "fuse")) {
        /* tide.h sets no limit on fuse, but a backend may (the GPU kernels' limit): a refusal
         * that names it is fine; the case then runs with the plan's choice. */
        if (verbose)
            printf("  [rank %d] %s: fuse %d refused: %s\n", rank, c->name, fuse,
                   tide_last_error(sctx));
        fuse = 0;
        st = create_plan(c, fuse, source, by_set ? NULL : stream, &plan);
    }
    if (!lcheck(st == 0 && plan, "c) %s: plan (fuse %d): %s: %s", c->name, fuse,
                tide_strerror(st), tide_last_error(sctx)))
        goto done;
    if (by_set) {
        st = tide_stencil_plan_set_stream(plan, stream);
        lcheck(st == 0, "c) %s: set_stream: %s: %s", c->name, tide_strerror(st),
               tide_last_error(sctx));
    }

    /* info and describe */
    memset(&info, 0xab, sizeof info);
    st = tide_stencil_plan_info(plan, &info);
    double flops = 2.0 * ntaps - 1 + (c->source ? 1 : 0);
    double bps = (double)es * (2 + (c->source ? 1 : 0));
    tide_location loc = on_device ? TIDE_LOCATION_DEVICE : TIDE_LOCATION_HOST;
    lcheck(st == 0 && info.count == (long long)count && info.bytes == bytes &&
               info.taps == ntaps && info.radius == c->radius && info.fuse >= 1 &&
               (fuse == 0 || info.fuse == fuse) && info.flops == flops &&
               info.bytes_per_step == bps && info.backend == sbackend && info.location == loc,
           "c) %s: info: status %d, count %lld (want %zu), bytes %zu (want %zu), taps %d (want "
           "%d), radius %d (want %d), fuse %d (asked %d), flops %g (want %g), bytes/step %g "
           "(want %g), backend %d (want %d), location %d (want %d)",
           c->name, st, info.count, count, info.bytes, bytes, info.taps, ntaps, info.radius,
           c->radius, info.fuse, fuse, info.flops, flops, info.bytes_per_step, bps,
           (int)info.backend, (int)sbackend, (int)info.location, (int)loc);
    /* in card, or out of card (e): slabs through the GPU within the budget, levels of the
     * most steps up to level_steps that divide the steps per pass */
    int levels = oc_levels;
    while (levels > 1 && st == 0 && info.fuse % levels)
        levels--;
    if (oc_budget)
        lcheck(st == 0 && info.slabs >= 2 && info.device_bytes <= oc_budget &&
                   info.level_steps >= 1 && info.fuse % info.level_steps == 0 &&
                   (!oc_levels || info.level_steps == levels),
               "e) %s: info: %d slabs (want 2 or more), %zu device bytes (budget %zu), levels "
               "of %d steps (level_steps %d, want %d)", c->name, info.slabs, info.device_bytes,
               oc_budget, info.level_steps, oc_levels, oc_levels ? levels : -1);
    else
        lcheck(st == 0 && info.slabs == 0 && info.level_steps == 0,
               "c) %s: info: %d slabs in card, levels of %d steps", c->name, info.slabs,
               info.level_steps);
    int plan_fuse = st == 0 && info.fuse >= 1 && info.fuse < 1000 ? info.fuse : 1;
    char desc[512], tiny[16];
    memset(desc, 0, sizeof desc);
    st = tide_stencil_plan_describe(plan, desc, sizeof desc);
    lcheck(st == 0 && desc[0] && memchr(desc, 0, sizeof desc),
           "c) %s: describe: status %d, \"%s\"", c->name, st, desc);
    if (verbose && index < 2)
        printf("  [rank %d] describe: %s\n", rank, desc);
    memset(tiny, 'Z', sizeof tiny);
    st = tide_stencil_plan_describe(plan, tiny, 10);
    int intact = 1;
    for (int i = 10; i < 16; i++)
        intact = intact && tiny[i] == 'Z';
    lcheck(intact && (st != 0 || memchr(tiny, 0, 10)),
           "c) %s: describe into 10 bytes wrote past them or left no terminator (status %d)",
           c->name, st);

    /* Runs on the same u: 1, 0, fuse + 1, 2 fuse and 5 steps, each compared bitwise. */
    long long seq[5] = {1, 0, plan_fuse + 1, 2LL * plan_fuse, 5}, total = 0;
    for (int k = 0; k < 5; k++) {
        st = run_steps(plan, cur, bytes, seq[k], stream, index + k);
        if (!lcheck(st == 0, "c) %s: run of %lld steps: %s: %s", c->name, seq[k],
                    tide_strerror(st), tide_last_error(sctx)))
            break;
        total += seq[k];
        int rst = tide_ref_stencil(c->n, c->dbl, c->shape, ntaps, (const int(*)[3])toff, tw,
                                   c->bc, src_c, ref, seq[k]);
        if (!lcheck(rst == 0, "c) %s: oracle failed: %d", c->name, rst))
            break;
        box_to_c(got, cur, &box, es);
        lchecks++;
        if (memcmp(got, ref, bytes)) {
            lchecks--;
            report_mismatch(c, got, ref, seq[k], total, plan_fuse);
            break;
        }
    }
    /* The source is read, never written. */
    if (c->source) {
        void *s_after = tt_xmalloc(bytes);
#if TIDE_HAVE_CUDA
        if (dsrc)
            CU(cudaMemcpy(s_after, dsrc, bytes, cudaMemcpyDeviceToHost));
        else
#endif
            memcpy(s_after, src_b, bytes);
        box_to_c(got, s_after, &box, es);
        lcheck(!memcmp(got, src_c, bytes), "c) %s: the source array was modified", c->name);
        free(s_after);
    }
done:
    tide_stencil_plan_destroy(plan);
#if TIDE_HAVE_CUDA
    if (own_stream)
        CU(cudaStreamDestroy((cudaStream_t)stream));
    if (dsrc)
        tide_device_free(sctx, dsrc);
#endif
    (void)own_stream;
    free(toff);
    free(tw);
    free(ref);
    free(cur);
    free(got);
    free(src_c);
    free(src_b);
}

/* ---- b) and d) errors ----------------------------------------------------------------------- */

#define BIT(code) (1u << (code))
static const unsigned ARG = BIT(TIDE_ERR_ARGUMENT), UNSUP = BIT(TIDE_ERR_UNSUPPORTED),
                      BOXE = BIT(TIDE_ERR_BOX), MISM = BIT(TIDE_ERR_MISMATCH);
/* What a failed create must leave in the plan pointer: an address no allocation returns. */
static char plan_sentinel_storage;
#define PLAN_SENTINEL ((tide_stencil_plan *)&plan_sentinel_storage)

/*
 * Collective over MPI_COMM_WORLD (every rank made the same call, on the world context or on
 * its own): every rank got the same status, one of allowed, and a non-empty message, the same
 * on every rank when same_msg; untouched: this rank's outputs were left alone; words (NULL: no
 * check): the message mentions one of them; number (with check_number): the message contains
 * it.
 */
static void expect_error(const char *what, int st, const char *msg, unsigned allowed,
                         int untouched, int same_msg, const char *words, int check_number,
                         long long number)
{
    tt_expect_error(&tally, world, "d", what, st, msg, allowed, untouched, same_msg);
    const char *mine = msg ? msg : "";
    if (words)
        tt_check(&tally, world, mentions(mine, words),
                 "d) %s: message \"%s\" names none of \"%s\"", what, mine, words);
    if (check_number)
        tt_check(&tally, world, has_number(mine, number),
                 "d) %s: message \"%s\" does not give the offending value %lld", what, mine,
                 number);
}

static const int EN[3] = {9, 8, 7};

/* A valid user STAR of radius 2 (5 taps) and its weights, for the error cases to spoil. */
static int star_off[16][3];
static double star_w[27]; /* 27: enough for a built-in shape given these weights too */

static void base_options(tide_stencil_options *o)
{
    static const int so[5][3] = {{0, 0, 0}, {-2, 0, 0}, {0, 1, 0}, {0, 0, 2}, {0, -1, 0}};
    memcpy(star_off, so, sizeof so);
    for (int t = 0; t < 27; t++)
        star_w[t] = 0.1 * (t % 5 + 1);
    tide_stencil_options_init(o);
    o->shape = TIDE_STENCIL_STAR;
    o->radius = 2;
    o->npoints = 5;
    o->offsets = (const int(*)[3])star_off;
    o->weights = star_w;
    o->location = on_device ? TIDE_LOCATION_DEVICE : TIDE_LOCATION_HOST;
    o->bc[0] = TIDE_BC_PERIODIC;
}

static void expect_create(tide_context *ctx, const char *what, const int n[3],
                          const tide_box *box, const tide_stencil_options *o, unsigned allowed,
                          const char *words, int check_number, long long number)
{
    tide_stencil_plan *plan = PLAN_SENTINEL;
    int st = tide_stencil_plan_create(ctx, n, box, o, &plan);
    if (st == 0 && plan != PLAN_SENTINEL)
        tide_stencil_plan_destroy(plan); /* a call that wrongly succeeded must not leak */
    expect_error(what, st, tide_last_error(ctx), allowed, plan == PLAN_SENTINEL, 1, words,
                 check_number, number);
}

/* b) on several ranks on the CPU: a plan with the defaults (7pt, Dirichlet, box NULL) on the
 * world context, 4 steps on each rank's box (the plan's choice) equal to the oracle's on the
 * whole grid. The grid gives every block at least 2 points along each dimension for up to 6
 * ranks, so no box is too thin for its halo whatever process grid the plan picks. */
static void world_plan(tide_context *wctx)
{
    static const int WN[3] = {13, 12, 12};
    tide_stencil_plan *plan = NULL;
    int st = tide_stencil_plan_create(wctx, WN, NULL, NULL, &plan);
    if (!tt_check(&tally, world, st == 0, "b) a plan with the defaults on a world context of %d "
                  "ranks: %s: %s", nranks, tide_strerror(st), tide_last_error(wctx)))
        return;
    tide_stencil_info info;
    memset(&info, 0, sizeof info);
    st = tide_stencil_plan_info(plan, &info);
    tide_box *all = tt_xmalloc((size_t)nranks * sizeof *all);
    MPI_Allgather(&info.box, (int)sizeof info.box, MPI_BYTE, all, (int)sizeof info.box, MPI_BYTE,
                  world);
    int tiles = tt_check(&tally, world, st == 0 && tt_boxes_tile(WN, nranks, all) &&
                         info.count == tt_box_count(&info.box),
                         "b) world plan: info status %d, the boxes in info.box do not tile the "
                         "grid or count %lld is not the box's", st, info.count);
    if (tiles) {
        size_t count = (size_t)WN[0] * WN[1] * WN[2], mine = (size_t)info.count;
        double *ref = tt_xmalloc(count * sizeof *ref), *g = tt_xmalloc(count * sizeof *g);
        double *u = tt_xmalloc(mine * sizeof *u), *want = tt_xmalloc(mine * sizeof *want);
        tt_rng rng;
        tt_rng_seed(&rng, 78);
        tt_fill_random(ref, count, 1, 1, &rng);
        /* The box of the C-order whole grid, in the box's order (C order here). */
        const tide_box *b = &info.box;
        int p[3];
        for (p[0] = b->lo[0]; p[0] < b->hi[0]; p[0]++)
            for (p[1] = b->lo[1]; p[1] < b->hi[1]; p[1]++)
                for (p[2] = b->lo[2]; p[2] < b->hi[2]; p[2]++)
                    u[tt_offset(b, p)] = ref[((size_t)p[0] * WN[1] + p[1]) * WN[2] + p[2]];
        int off[7][3];
        double w[7];
        tide_ref_stencil_taps(TIDE_STENCIL_7PT, NULL, off, w);
        const tide_bc bc[3] = {TIDE_BC_DIRICHLET, TIDE_BC_DIRICHLET, TIDE_BC_DIRICHLET};
        st = tide_stencil_run(plan, u, 4);
        memcpy(g, ref, count * sizeof *g);
        int rst = tide_ref_stencil(WN, 1, TIDE_STENCIL_7PT, 7, (const int(*)[3])off, w, bc, NULL, g,
                                   4);
        for (p[0] = b->lo[0]; p[0] < b->hi[0]; p[0]++)
            for (p[1] = b->lo[1]; p[1] < b->hi[1]; p[1]++)
                for (p[2] = b->lo[2]; p[2] < b->hi[2]; p[2]++)
                    want[tt_offset(b, p)] = g[((size_t)p[0] * WN[1] + p[1]) * WN[2] + p[2]];
        tt_check(&tally, world, st == 0 && rst == 0 && !memcmp(u, want, mine * sizeof *u),
                 "b) 4 steps on the world context of %d ranks: status %d (%s)%s", nranks, st,
                 tide_last_error(wctx), st == 0 ? ", differs from the oracle" : "");
        free(ref);
        free(g);
        free(u);
        free(want);
    }
    free(all);
    tide_stencil_plan_destroy(plan);
}

/* b) a plan on MPI_COMM_WORLD. */
static void world_context(tide_context *wctx)
{
    int st;
    tide_stencil_options o;
    tide_stencil_options_init(&o);
    o.location = on_device ? TIDE_LOCATION_DEVICE : TIDE_LOCATION_HOST;
    if (nranks == 1) {
        /* One rank: a plan works (host arrays: checked with plain memory on the CPU). */
        tide_stencil_plan *plan = NULL;
        st = tide_stencil_plan_create(wctx, EN, NULL, &o, &plan);
        tt_check(&tally, world, st == 0, "b) a plan on a world context of one rank: %s: %s",
                 tide_strerror(st), tide_last_error(wctx));
        if (st == 0 && !on_device) {
            size_t count = (size_t)EN[0] * EN[1] * EN[2];
            double *u = tt_xmalloc(count * sizeof *u), *r = tt_xmalloc(count * sizeof *r);
            tt_rng rng;
            tt_rng_seed(&rng, 77);
            tt_fill_random(u, count, 1, 1, &rng);
            memcpy(r, u, count * sizeof *u);
            int off[7][3];
            double w[7];
            tide_ref_stencil_taps(TIDE_STENCIL_7PT, NULL, off, w);
            const tide_bc bc[3] = {TIDE_BC_DIRICHLET, TIDE_BC_DIRICHLET, TIDE_BC_DIRICHLET};
            st = tide_stencil_run(plan, u, 4);
            tide_ref_stencil(EN, 1, TIDE_STENCIL_7PT, 7, (const int(*)[3])off, w, bc, NULL, r, 4);
            tt_check(&tally, world, st == 0 && !memcmp(u, r, count * sizeof *u),
                     "b) 4 steps on the world context of one rank: status %d (%s), %s", st,
                     tide_last_error(wctx), st == 0 ? "differs from the oracle" : "");
            free(u);
            free(r);
        }
        tide_stencil_plan_destroy(plan);
    } else {
        /* Several ranks: either backend runs them (host arrays here). */
        tide_box box = whole(EN, NULL);
        world_plan(wctx);
        expect_create(wctx, "plan on MPI_COMM_WORLD, a whole-grid box on every rank", EN, &box,
                      &o, ARG | BOXE, NULL, 0, 0);
        /* Bad or rank-dependent options: the same agreed argument error as on one rank. */
        const unsigned AM = ARG | MISM, BAD = AM;
        base_options(&o);
        o.radius = 0;
        expect_create(wctx, "plan on MPI_COMM_WORLD, radius 0", EN, NULL, &o, BAD, NULL, 0, 0);
        base_options(&o);
        if (rank == nranks - 1)
            o.shape = TIDE_STENCIL_27PT;
        expect_create(wctx, "plan on MPI_COMM_WORLD, shape 27pt on the last rank", EN, NULL, &o,
                      BAD, NULL, 0, 0);
        base_options(&o);
        if (rank == nranks - 1)
            o.npoints = 0;
        expect_create(wctx, "plan on MPI_COMM_WORLD, npoints 0 on the last rank", EN, NULL, &o,
                      BAD, NULL, 0, 0);
        base_options(&o);
        expect_create(wctx, "plan on MPI_COMM_WORLD, box NULL on rank 0 only", EN,
                      rank == 0 ? NULL : &box, &o, gpu ? BAD | BOXE : AM, NULL, 0, 0);
        /* The context still works after all that: a barrier through it would hang otherwise;
         * a plain MPI barrier shows every rank got here. */
        MPI_Barrier(world);
    }
}

/* d) bad input on this rank's own context, the same calls on every rank. */
static void create_errors(void)
{
    tide_stencil_options o;
    int n[3];
    memcpy(n, EN, sizeof n);

    base_options(&o);
    o.radius = 0;
    expect_create(sctx, "star radius 0", EN, NULL, &o, ARG, NULL, 1, 0);
    base_options(&o);
    o.shape = TIDE_STENCIL_BOX;
    o.radius = 5;
    expect_create(sctx, "box radius 5 (max 4)", EN, NULL, &o, ARG, NULL, 1, 5);
    base_options(&o);
    n[1] = 4; /* radius 2 needs 5 */
    expect_create(sctx, "grid 9x4x7 with radius 2 (n < 2r+1)", n, NULL, &o, ARG | UNSUP, NULL,
                  1, 4);
    memcpy(n, EN, sizeof n);
    tide_stencil_options_init(&o);
    o.location = on_device ? TIDE_LOCATION_DEVICE : TIDE_LOCATION_HOST;
    const int tiny[3] = {2, 7, 7};
    expect_create(sctx, "7pt on a grid 2x7x7 (n < 3)", tiny, NULL, &o, ARG | UNSUP, NULL, 1, 2);
    base_options(&o);
    star_w[3] = NAN;
    expect_create(sctx, "star weights[3] NaN", EN, NULL, &o, ARG, "nan|finite", 0, 0);
    base_options(&o);
    star_w[1] = -INFINITY;
    expect_create(sctx, "star weights[1] -Inf", EN, NULL, &o, ARG, "inf", 0, 0);
    {
        double w7[7] = {0.25, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125};
        w7[5] = INFINITY;
        tide_stencil_options_init(&o);
        o.location = on_device ? TIDE_LOCATION_DEVICE : TIDE_LOCATION_HOST;
        o.weights = w7;
        expect_create(sctx, "7pt weights[5] Inf", EN, NULL, &o, ARG, "inf", 0, 0);
        double w27[27];
        for (int t = 0; t < 27; t++)
            w27[t] = 1.0 / 27;
        w27[26] = NAN;
        o.shape = TIDE_STENCIL_27PT;
        o.weights = w27;
        expect_create(sctx, "27pt weights[26] NaN", EN, NULL, &o, ARG, "nan|finite", 0, 0);
    }
    base_options(&o);
    o.weights = NULL;
    expect_create(sctx, "star with weights NULL", EN, NULL, &o, ARG, "weight", 0, 0);
    base_options(&o);
    o.shape = TIDE_STENCIL_BOX;
    o.offsets = NULL;
    expect_create(sctx, "box with offsets NULL", EN, NULL, &o, ARG, "offset", 0, 0);
    base_options(&o);
    o.npoints = 0;
    expect_create(sctx, "star npoints 0", EN, NULL, &o, ARG, NULL, 1, 0);
    base_options(&o);
    o.npoints = -3;
    expect_create(sctx, "star npoints -3", EN, NULL, &o, ARG, NULL, 1, -3);
    base_options(&o);
    star_off[4][0] = 0, star_off[4][1] = 0, star_off[4][2] = 2; /* = tap 3 */
    expect_create(sctx, "star offset (0,0,2) twice (taps 3 and 4)", EN, NULL, &o, ARG, NULL, 0,
                  0);
    base_options(&o);
    o.shape = TIDE_STENCIL_BOX;
    star_off[2][0] = -2, star_off[2][1] = 0, star_off[2][2] = 0; /* = tap 1 */
    expect_create(sctx, "box offset (-2,0,0) twice (taps 1 and 2)", EN, NULL, &o, ARG, NULL, 0,
                  0);
    base_options(&o);
    star_off[2][0] = 1, star_off[2][1] = -2, star_off[2][2] = 0;
    expect_create(sctx, "star offset (1,-2,0) off the axes", EN, NULL, &o, ARG, NULL, 1, -2);
    base_options(&o);
    star_off[3][2] = 3;
    expect_create(sctx, "star offset (0,0,3) beyond radius 2", EN, NULL, &o, ARG, NULL, 1, 3);
    base_options(&o);
    o.shape = TIDE_STENCIL_BOX;
    star_off[1][0] = -1, star_off[1][1] = 3, star_off[1][2] = 1;
    expect_create(sctx, "box offset (-1,3,1) beyond radius 2", EN, NULL, &o, ARG, NULL, 1, 3);
    base_options(&o);
    o.bc[1] = TIDE_BC_NEUMANN;
    expect_create(sctx, "bc y Neumann", EN, NULL, &o, UNSUP, "neumann|bc|boundar", 0, 0);
    base_options(&o);
    o.bc[2] = (tide_bc)7;
    expect_create(sctx, "bc z 7 (no such bc)", EN, NULL, &o, ARG, NULL, 0, 0);
    base_options(&o);
    o.shape = (tide_stencil_shape)9;
    expect_create(sctx, "shape 9 (no such shape)", EN, NULL, &o, ARG, NULL, 1, 9);
    base_options(&o);
    o.precision = (tide_precision)5;
    expect_create(sctx, "precision 5", EN, NULL, &o, ARG, NULL, 0, 0);
    base_options(&o);
    o.fuse = -1;
    expect_create(sctx, "fuse -1", EN, NULL, &o, ARG, NULL, 1, -1);
    base_options(&o);
    o.level_steps = -2;
    expect_create(sctx, "level_steps -2", EN, NULL, &o, ARG, "level_steps", 1, -2);
    base_options(&o);
    o.size = 0;
    expect_create(sctx, "options size 0", EN, NULL, &o, ARG, NULL, 0, 0);
    memset(&o, 0, sizeof o);
    o.shape = TIDE_STENCIL_7PT;
    expect_create(sctx, "options zeroed, not from the init function", EN, NULL, &o, ARG, NULL,
                  0, 0);
    base_options(&o);
    tide_box box = whole(EN, NULL);
    box.hi[0] = EN[0] - 1;
    expect_create(sctx, "box [0,8)x[0,8)x[0,7) (not the whole grid)", EN, &box, &o,
                  ARG | BOXE | UNSUP, NULL, 0, 0);
    box = whole(EN, NULL);
    box.lo[2] = 1, box.hi[2] = EN[2] + 1;
    expect_create(sctx, "box z [1,8) (shifted off the grid)", EN, &box, &o, ARG | BOXE | UNSUP,
                  NULL, 0, 0);
    box = whole(EN, NULL);
    box.order[2] = box.order[0];
    expect_create(sctx, "box order {0,1,0} (not a permutation)", EN, &box, &o, ARG | BOXE, NULL,
                  0, 0);
    const int negative[3] = {9, -8, 7};
    expect_create(sctx, "grid 9x-8x7", negative, NULL, &o, ARG | BOXE, NULL, 0, 0);
    base_options(&o);
    expect_create(sctx, "grid n NULL", NULL, NULL, &o, ARG, NULL, 0, 0);
    if (!gpu) {
        base_options(&o);
        o.location = TIDE_LOCATION_DEVICE;
        expect_create(sctx, "location device on the CPU backend", EN, NULL, &o, UNSUP | ARG,
                      NULL, 0, 0);
    }
    {
        base_options(&o);
        int st = tide_stencil_plan_create(sctx, EN, NULL, &o, NULL);
        expect_error("plan pointer NULL", st, tide_last_error(sctx), ARG, 1, 1, NULL, 0, 0);
    }
}

/* Run-time errors: u left alone, the plan still right afterwards. */
static void run_errors(void)
{
    tide_stencil_options o;
    base_options(&o);
    tide_stencil_plan *plan = NULL;
    int st = tide_stencil_plan_create(sctx, EN, NULL, &o, &plan);
    if (!tt_check(&tally, world, st == 0, "d) plan for the run errors: %s",
                  tide_last_error(sctx)))
        return;
    size_t count = (size_t)EN[0] * EN[1] * EN[2], bytes = count * sizeof(double);
    double *u0 = tt_xmalloc(bytes), *ref = tt_xmalloc(bytes), *h = tt_xmalloc(bytes);
    tt_rng rng;
    tt_rng_seed(&rng, 5151);
    tt_fill_random(u0, count, 1, 1, &rng);
    memcpy(ref, u0, bytes);
    void *u = h; /* where the plan's u lives: host, or device memory on device plans */
    memcpy(h, u0, bytes);
#if TIDE_HAVE_CUDA
    void *d = NULL;
    if (on_device) {
        if (tide_device_alloc(sctx, bytes, &d) != 0)
            MPI_Abort(MPI_COMM_WORLD, 2);
        CU(cudaMemcpy(d, u0, bytes, cudaMemcpyHostToDevice));
        u = d;
    }
#endif
    /* Reads u back into h (device plans). */
#if TIDE_HAVE_CUDA
#define READ_BACK()                                                                               \
    do {                                                                                          \
        if (on_device)                                                                            \
            CU(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));                                  \
    } while (0)
#else
#define READ_BACK() ((void)0)
#endif

    st = tide_stencil_run(plan, u, -7);
    READ_BACK();
    expect_error("run with steps -7", st, tide_last_error(sctx), ARG, !memcmp(h, u0, bytes), 1,
                 NULL, 1, -7);
    st = tide_stencil_run(plan, NULL, 3);
    expect_error("run with u NULL", st, tide_last_error(sctx), ARG, 1, 1, NULL, 0, 0);
    st = tide_stencil_run(NULL, u, 3);
    READ_BACK();
    tt_check(&tally, world, st == TIDE_ERR_ARGUMENT && !memcmp(h, u0, bytes),
             "d) run with plan NULL: status %d (%s)", st, tide_strerror(st));
    tide_stencil_info info;
    st = tide_stencil_plan_info(plan, NULL);
    tt_check(&tally, world, st == TIDE_ERR_ARGUMENT, "d) plan_info(info NULL): status %d", st);
    st = tide_stencil_plan_info(NULL, &info);
    tt_check(&tally, world, st == TIDE_ERR_ARGUMENT, "d) plan_info(plan NULL): status %d", st);
    char buf[64];
    st = tide_stencil_plan_describe(NULL, buf, sizeof buf);
    tt_check(&tally, world, st == TIDE_ERR_ARGUMENT, "d) describe(plan NULL): status %d", st);
    st = tide_stencil_plan_destroy(NULL);
    tt_check(&tally, world, st == 0, "d) plan_destroy(NULL): status %d", st);
#if TIDE_HAVE_CUDA
    if (on_device) {
        /* A host array given to a device plan. */
        memcpy(h, u0, bytes);
        st = tide_stencil_run(plan, h, 2);
        expect_error("device plan, run with a malloc'd host u", st, tide_last_error(sctx), ARG,
                     !memcmp(h, u0, bytes), 0, NULL, 0, 0);
    }
#endif

    /* The plan still runs right. */
    st = tide_stencil_run(plan, u, 3);
    READ_BACK();
    const tide_bc bc[3] = {TIDE_BC_PERIODIC, TIDE_BC_DIRICHLET, TIDE_BC_DIRICHLET};
    int rst = tide_ref_stencil(EN, 1, TIDE_STENCIL_STAR, 5, (const int(*)[3])star_off, star_w,
                               bc, NULL, ref, 3);
    tt_check(&tally, world, st == 0 && rst == 0 && !memcmp(h, ref, bytes),
             "d) 3 steps after the failed runs: status %d (%s)%s", st, tide_last_error(sctx),
             st == 0 ? ", differs from the oracle" : "");
#if TIDE_HAVE_CUDA
    if (d)
        tide_device_free(sctx, d);
#endif
    free(u0);
    free(ref);
    free(h);
    tide_stencil_plan_destroy(plan);
#undef READ_BACK
}

/* The radius option of a built-in shape is ignored (tide.h). */
static void builtin_radius_ignored(void)
{
    tide_stencil_options o;
    tide_stencil_options_init(&o);
    o.location = on_device ? TIDE_LOCATION_DEVICE : TIDE_LOCATION_HOST;
    o.shape = TIDE_STENCIL_27PT;
    o.radius = 3;
    tide_stencil_plan *plan = NULL;
    int st = tide_stencil_plan_create(sctx, EN, NULL, &o, &plan);
    tide_stencil_info info;
    memset(&info, 0, sizeof info);
    if (st == 0)
        tide_stencil_plan_info(plan, &info);
    tt_check(&tally, world, st == 0 && info.radius == 1 && info.taps == 27,
             "d) 27pt with radius option 3 (ignored): status %d (%s), radius %d, taps %d", st,
             tide_last_error(sctx), info.radius, info.taps);
    tide_stencil_plan_destroy(plan);
}

/* A user shape's radius option is a bound: the stencil's radius is its largest offset (tide.h),
 * which sets the Dirichlet planes and the smallest grid. Declared 3, reaching 1: a 3x5x4 grid
 * is accepted and two steps hold one plane at each face, like the oracle. */
static void user_radius_is_the_reach(void)
{
    static const int off[3][3] = {{0, 0, 0}, {1, 0, 0}, {0, -1, 0}};
    static const double w[3] = {0.5, 0.25, 0.25};
    const int n[3] = {3, 5, 4};
    tide_stencil_options o;
    tide_stencil_options_init(&o);
    o.location = on_device ? TIDE_LOCATION_DEVICE : TIDE_LOCATION_HOST;
    o.precision = TIDE_FLOAT;
    o.shape = TIDE_STENCIL_STAR;
    o.radius = 3;
    o.npoints = 3;
    o.offsets = off;
    o.weights = w;
    tide_stencil_plan *plan = NULL;
    int st = tide_stencil_plan_create(sctx, n, NULL, &o, &plan);
    tide_stencil_info info;
    memset(&info, 0, sizeof info);
    float u[60], ref[60];
    tt_rng rng;
    tt_rng_seed(&rng, 77);
    tt_fill_random(u, 60, 0, 1.0, &rng);
    memcpy(ref, u, sizeof u);
    if (st == 0) {
        tide_stencil_plan_info(plan, &info);
        st = run_steps(plan, u, sizeof u, 2, NULL, 0);
    }
    tide_bc bc[3] = {TIDE_BC_DIRICHLET, TIDE_BC_DIRICHLET, TIDE_BC_DIRICHLET};
    int rst = tide_ref_stencil(n, 0, TIDE_STENCIL_STAR, 3, off, w, bc, NULL, ref, 2);
    tt_check(&tally, world, st == 0 && rst == 0 && info.radius == 1 && !memcmp(u, ref, sizeof u),
             "d) star with radius option 3 reaching 1: status %d (%s), radius %d, %s", st,
             tide_last_error(sctx), info.radius,
             memcmp(u, ref, sizeof u) ? "differs from the oracle" : "equals the oracle");
    tide_stencil_plan_destroy(plan);
}

/* ---- main ----------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    world = MPI_COMM_WORLD;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &nranks);
    if (rank == 0)
        printf("test_stencil on %d ranks (TIDE_TEST_VERBOSE=1 names each case as it starts)\n",
               nranks);
    const char *be = getenv("TIDE_TEST_BACKEND"), *loc = getenv("TIDE_TEST_LOCATION");
    const char *verbose_env = getenv("TIDE_TEST_VERBOSE");
    verbose = verbose_env && verbose_env[0] && strcmp(verbose_env, "0") != 0;
    int cuda = be && !strcmp(be, "cuda");
    if (cuda && !tt_all(world, tt_gpus_or_skip() > 0)) {
        MPI_Finalize();
        return 77;
    }

    /* b) first a context of every rank (MPI_COMM_WORLD). */
    tide_context_options copts;
    tide_context_options_init(&copts);
    copts.backend = cuda ? TIDE_BACKEND_AUTO : TIDE_BACKEND_CPU;
    tide_context *wctx = NULL;
    int st = tide_context_create(world, &copts, &wctx);
    tide_backend wbackend = TIDE_BACKEND_CPU;
    if (st == 0)
        tide_context_backend(wctx, &wbackend);
    if (!tt_all(world, st == 0)) {
        if (rank == 0)
            printf("test_stencil: tide_context_create(MPI_COMM_WORLD) failed: %s: %s\n",
                   tide_strerror(st), tide_last_error(NULL));
        MPI_Finalize();
        return EXIT_FAILURE;
    }
    if (cuda && wbackend != TIDE_BACKEND_CUDA) {
        if (rank == 0)
            printf("SKIP: no GPU for the CUDA backend: %s\n", tide_context_gpu_status(wctx));
        tide_context_destroy(wctx);
        MPI_Finalize();
        return 77;
    }
    gpu = wbackend == TIDE_BACKEND_CUDA;
    on_device = gpu && loc && !strcmp(loc, "device");
#if TIDE_HAVE_CUDA
    if (gpu) {
        tide_device_info d;
        tide_context_device(wctx, &d);
        CU(cudaSetDevice(d.device)); /* the plain CUDA calls use the context's GPU */
        if (rank == 0)
            printf("backend cuda, arrays in %s memory\n", on_device ? "device" : "host");
    }
#endif
    double t0 = MPI_Wtime();
    oracle_selftest();
    world_context(wctx);
    tide_context_destroy(wctx);

    /* Then every rank's own context (MPI_COMM_SELF): the cases and the bad input run on it. */
    st = tide_context_create(MPI_COMM_SELF, &copts, &sctx);
    sbackend = TIDE_BACKEND_CPU;
    if (st == 0)
        tide_context_backend(sctx, &sbackend);
    if (!tt_all(world, st == 0 && sbackend == wbackend)) {
        printf("test_stencil: [rank %d] tide_context_create(MPI_COMM_SELF): %s: %s (backend %d, "
               "the world context's %d)\n",
               rank, tide_strerror(st), st ? tide_last_error(NULL) : "", (int)sbackend,
               (int)wbackend);
        MPI_Finalize();
        return EXIT_FAILURE;
    }
#if TIDE_HAVE_CUDA
    if (gpu) {
        tide_device_info d;
        tide_context_device(sctx, &d);
        CU(cudaSetDevice(d.device));
    }
#endif

    /* c) this rank's share of the cases: case k runs on rank k mod nranks. */
    int ncases = NSPECS + NFUZZ;
    int before = lfailed;
    scase *c = tt_xmalloc(sizeof *c);
    for (int k = rank; k < ncases; k += nranks) {
        if (k < NSPECS)
            build_case(&specs[k], 1000u + 17u * (unsigned)k, "case", c);
        else
            fuzz_case(k - NSPECS, c);
        run_case(c, k);
    }
    free(c);
    double tc = MPI_Wtime() - t0;
    int fails = lfailed - before, allfails = 0;
    MPI_Allreduce(&fails, &allfails, 1, MPI_INT, MPI_SUM, world);
    if (rank == 0)
        printf("  c) %d cases (%d structured, %d random) over %d ranks: %d failed checks (%.1f s "
               "on rank 0)\n",
               ncases, NSPECS, NFUZZ, nranks, allfails, tc);

    /* e) out of card: this rank's share, each case on a context with its own budget */
    if (gpu && !on_device) {
        tide_context *own = sctx;
        scase *e = tt_xmalloc(sizeof *e);
        /* the specs, then the budget's edge on the first spec: the in-card need exactly (in
         * card), one byte less (the fewest slabs the budget allows) */
        for (int k = rank; k < NOC + 2; k += nranks) {
            int edge = k >= NOC;
            const oc_spec *sp = &oc_specs[edge ? 0 : k];
            build_case(&sp->s, 5000u + 13u * (unsigned)k,
                       k == NOC ? "the in-card need" : k > NOC ? "a byte below the in-card need"
                                                           : "out of card", e);
            size_t need = (size_t)e->n[0] * e->n[1] * e->n[2] * (e->dbl ? 8 : 4) *
                          (2 + (e->source ? 1 : 0));
            tide_context_options o = copts;
            o.device_budget = edge ? need - (k > NOC) : (size_t)(sp->frac * (double)need);
            st = tide_context_create(MPI_COMM_SELF, &o, &sctx);
            if (lcheck(st == 0, "e) %s: a context with a budget of %zu bytes: %s: %s", e->name,
                       o.device_budget, tide_strerror(st), tide_last_error(NULL))) {
                oc_budget = k == NOC ? 0 : o.device_budget; /* 0: in card */
                oc_levels = sp->levels;
                run_case(e, k);
                oc_budget = 0;
                oc_levels = 0;
                tide_context_destroy(sctx);
            }
            sctx = own;
        }
        free(e);
        if (rank == 0)
            printf("  e) %d out-of-card cases and the budget's edge over %d ranks\n", NOC,
                   nranks);
    }

    create_errors();
    run_errors();
    builtin_radius_ignored();
    user_radius_is_the_reach();

    /* The local checks of every rank join the collective ones. */
    int loc2[2] = {lchecks, lfailed}, sum[2] = {0, 0};
    MPI_Allreduce(loc2, sum, 2, MPI_INT, MPI_SUM, world);
    tally.checks += sum[0];
    tally.failed += sum[1];
    if (rank == 0)
        printf("(%d checks, %d failed, %.1f s)\n", tally.checks, tally.failed, MPI_Wtime() - t0);
    tide_context_destroy(sctx);
    int rc = tt_finish(&tally, world, "test_stencil", "checks");
    MPI_Finalize();
    return rc;
}
