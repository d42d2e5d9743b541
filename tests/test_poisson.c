/*
 * test_poisson.c: Poisson and Helmholtz solves (tide_poisson_*), with every dimension
 * periodic or any of them bounded (Neumann or Dirichlet faces, each face pair NN, DD, ND, DN;
 * uniform cells, or non-uniform ones along one dimension), checked against independent
 * oracles.
 *
 * Run under mpiexec with 1 to 6 ranks; with TIDE_TEST_BACKEND=cuda on the GPU (host arrays
 * moved through it, or with TIDE_TEST_LOCATION=device device arrays), skipped (77) where no GPU is
 * usable. There the test moves its data with plain CUDA calls on the legacy default stream
 * right before each solve (a pinned f written by a device-to-host copy queued behind a delay,
 * or device arrays written by a pageable cudaMemcpy or by a delayed device-to-device copy), so
 * a solve not ordered after the caller's earlier work reads a poisoned f and fails. Every
 * case runs on the GPU too, two or three bounded dimensions included.
 *
 *  a) the discrete equation, by the naive 7-point residual of the gathered f and u in double on
 *     rank 0 (tide_ref_poisson_residual, apps/reference.c): float and double, batches of 1 and
 *     3, the solver's boxes, slabs, pencils and random tilings with per-rank storage orders
 *     (ranks with empty boxes included), forced decompositions and measured ones (planning
 *     MEASURE: slabs timed against pencils), every exchange, in and out of
 *     place, Poisson (alpha 0, singular: the reported mean and the zero mean of u checked too)
 *     and Helmholtz, unit and per-dimension different spacings; plan box, info and cost; the
 *     reported mean of f (weighted by the cell volume) in every case. Three groups of cases:
 *     every dimension periodic; one bounded dimension: every face pair on x, y and z, uniform
 *     cells and random non-uniform ones (widths varying by up to a factor 3), the singular
 *     Neumann-Neumann problem against f less its volume-weighted mean (the weighted mean of u
 *     checked too); two or three bounded dimensions: every face pair on each of them, sizes
 *     of 1, 2, odd and prime along them, one of them non-uniform in some cases, Neumann on
 *     every face (singular), and random ones; and periodic grids with x a power of two from 8
 *     to 2048, whose x transforms the GPU runs inside the spectral op with device arrays in
 *     float, as the CPU does for every periodic grid (the plan checked to say so, and not to
 *     elsewhere), some with planes that Tide's real plane pass takes (with
 *     TIDE_FFT_ENGINE=plane on device arrays, some plan must have run it);
 *  b) second-order convergence on analytic trigonometric solutions (error ratio ~4 from n to
 *     2n): periodic, and along each bounded dimension a cosine or sine mode fitting its face
 *     pair, with one, two and three bounded dimensions, on uniform and tanh-stretched cells;
 *  c) TIDE_EIGEN_SPECTRAL recovers the same solution to rounding: periodic, and with two or
 *     three bounded dimensions (uniform cells: the real-to-real transformed ones spectral, the
 *     line's finite-volume factor known exactly);
 *  d) Helmholtz with a constant f: u = -f/alpha, the mean reported; Poisson with a constant f:
 *     u = 0; periodic, and Neumann faces on one, two or three dimensions on uniform and
 *     non-uniform cells;
 *  e) bad input: the same code and the same message on every rank, no hang, outputs left alone;
 *     bad faces (on a periodic dimension, not increasing, not finite, different between ranks,
 *     given on two dimensions) with a message naming the problem; on a GPU context, two or
 *     three bounded dimensions on backend cuda or device arrays; a streamed solve asked for
 *     device arrays, on the CPU backend or on boxes that are not its slabs;
 *  f) on the GPU with host arrays: solves streamed through it in chunks (tide_out_of_card),
 *     every shape of the streamed solve (periodic; z, y or x solved along lines; x the only
 *     periodic dimension; no periodic one; singular, Helmholtz, non-uniform cells), float and
 *     double, batches of 1 and 3, in and out of place, the plan's slabs or given ones, each on
 *     a context with a budget forcing one chunk per pass, about two, or (backend choosing by
 *     itself) many; the plan's box and info, then the checks of a). Then the CPU's x
 *     transforms around one pass (TIDE_OOC_STREAM_CPU_X) for every boundary set, with the
 *     default budget and a quarter of what one chunk takes: solved on one rank with x
 *     periodic, TIDE_ERR_UNSUPPORTED elsewhere. `test_poisson streamed` runs f) alone.
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

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static MPI_Comm comm;
static int rank, nranks;
static tt_tally tally;
static int gpu;       /* TIDE_TEST_BACKEND=cuda: the context runs on the GPU */
static int on_device; /* TIDE_TEST_LOCATION=device: f and u in device memory */
static int verbose;   /* TIDE_TEST_VERBOSE=1: name each case as it starts */
/* a): the largest residual and mean errors seen, as fractions of their tolerances. */
static double worst_residual, worst_mean;
static int empty_cases; /* a) cases with a rank whose box is empty */
static int plane_plans; /* plans whose description names Tide's plane pass */

/* ---- moving the data: plain C on the CPU, plain CUDA calls on the GPU ----------------------- */

#if TIDE_HAVE_CUDA
#define CU TT_CU

enum { DELAY_MS = 5 };

/* Host arrays on the GPU backend: f and u pinned (poisoned with NaN bytes), f written by a
 * device-to-host copy queued on the legacy default stream behind a delay and not waited for. */
static int solve_gpu_host(tide_poisson_plan *plan, const void *f0, size_t bytes, int inplace,
                          void *u_out, void *f_after)
{
    void *f = NULL, *u = NULL, *stage = NULL;
    CU(cudaMallocHost(&f, bytes));
    if (inplace)
        u = f;
    else
        CU(cudaMallocHost(&u, bytes));
    CU(cudaMalloc(&stage, bytes));
    CU(cudaMemcpy(stage, f0, bytes, cudaMemcpyHostToDevice));
    memset(f, 0xff, bytes); /* NaN in float and double: a read before the copy lands shows */
    if (!inplace)
        memset(u, 0xff, bytes);
    CU(cudaLaunchHostFunc(0, tt_sleep_on_stream, (void *)(intptr_t)DELAY_MS));
    CU(cudaMemcpyAsync(f, stage, bytes, cudaMemcpyDeviceToHost, 0));
    int st = tide_poisson_solve(plan, f, u);
    CU(cudaDeviceSynchronize()); /* (the solve is complete on return; the copy is ours) */
    memcpy(u_out, u, bytes);
    if (!inplace)
        memcpy(f_after, f, bytes);
    CU(cudaFree(stage));
    CU(cudaFreeHost(f));
    if (!inplace)
        CU(cudaFreeHost(u));
    return st;
}

/* Device arrays: f written right before the solve on the legacy default stream, alternately
 * by a pageable cudaMemcpy (which may return before the data has landed) and by a
 * device-to-device copy queued behind a delay; u read back by a plain cudaMemcpy. */
static int solve_gpu_device(tide_poisson_plan *plan, const void *f0, size_t bytes, int inplace,
                            void *u_out, void *f_after)
{
    static int calls;
    void *f = NULL, *u = NULL, *stage = NULL;
    CU(cudaMalloc(&f, bytes));
    if (inplace)
        u = f;
    else
        CU(cudaMalloc(&u, bytes));
    CU(cudaMemset(f, 0xff, bytes));
    if (!inplace)
        CU(cudaMemset(u, 0xff, bytes));
    if (calls++ % 2) {
        CU(cudaMalloc(&stage, bytes));
        CU(cudaMemcpy(stage, f0, bytes, cudaMemcpyHostToDevice));
        CU(cudaLaunchHostFunc(0, tt_sleep_on_stream, (void *)(intptr_t)DELAY_MS));
        CU(cudaMemcpyAsync(f, stage, bytes, cudaMemcpyDeviceToDevice, 0));
    } else {
        CU(cudaMemcpy(f, f0, bytes, cudaMemcpyHostToDevice));
    }
    int st = tide_poisson_solve(plan, f, u);
    CU(cudaMemcpy(u_out, u, bytes, cudaMemcpyDeviceToHost));
    if (!inplace)
        CU(cudaMemcpy(f_after, f, bytes, cudaMemcpyDeviceToHost));
    if (stage)
        CU(cudaFree(stage));
    CU(cudaFree(f));
    if (!inplace)
        CU(cudaFree(u));
    return st;
}
#endif

/*
 * One solve of f0 (this rank's bytes of right-hand sides, never handed to Tide itself) the way
 * the plan runs: through the GPU as above where its backend is cuda, else plain host arrays
 * (a plan on the CPU, also one on a GPU context). u_out receives u, f_after (out of place) f as
 * the solve left it. An empty box passes NULL arrays, which is legal there.
 */
static int run_solve(tide_poisson_plan *plan, const void *f0, size_t bytes, int inplace,
                     void *u_out, void *f_after)
{
    if (bytes == 0)
        return tide_poisson_solve(plan, NULL, NULL);
#if TIDE_HAVE_CUDA
    tide_poisson_info info;
    if (tide_poisson_plan_info(plan, &info) == 0 && info.backend == TIDE_BACKEND_CUDA)
        return info.location == TIDE_LOCATION_DEVICE
                   ? solve_gpu_device(plan, f0, bytes, inplace, u_out, f_after)
                   : solve_gpu_host(plan, f0, bytes, inplace, u_out, f_after);
#endif
    void *f = tt_xmalloc(bytes), *u = inplace ? f : tt_xmalloc(bytes);
    memcpy(f, f0, bytes);
    if (!inplace)
        memset(u, 0xff, bytes); /* NaN: a point the solve does not write poisons the residual */
    int st = tide_poisson_solve(plan, f, u);
    memcpy(u_out, u, bytes);
    if (!inplace) {
        memcpy(f_after, f, bytes);
        free(u);
    }
    free(f);
    return st;
}

/* ---- values --------------------------------------------------------------------------------- */

static double elem(const void *a, tide_precision prec, size_t i)
{
    return prec == TIDE_FLOAT ? (double)((const float *)a)[i] : ((const double *)a)[i];
}

static double eps_of(tide_precision prec) { return prec == TIDE_FLOAT ? FLT_EPSILON : DBL_EPSILON; }

/* Per field over all ranks (box b of this rank): the mean (to mean[f]) and max |value| (to
 * *maxabs, over all fields). The mean is weighted by the cell volume: along dimension sd by
 * the widths of the faces z (the non-uniform bounded dimension), uniform when z is NULL (the
 * uniform dimensions' widths are constant and cancel). */
static void field_stats(const void *a, const tide_box *b, tide_precision prec, int batch,
                        const int n[3], int sd, const double *z, double *mean, double *maxabs)
{
    long long count = tt_box_count(b);
    double loc[4] = {0, 0, 0, 0}, glob[4], mx = 0;
    int p[3];
    for (int f = 0; f < batch && count; f++)
        for (p[0] = b->lo[0]; p[0] < b->hi[0]; p[0]++)
            for (p[1] = b->lo[1]; p[1] < b->hi[1]; p[1]++)
                for (p[2] = b->lo[2]; p[2] < b->hi[2]; p[2]++) {
                    double v = elem(a, prec, (size_t)(f * count + tt_offset(b, p)));
                    loc[f] += v * (z ? z[p[sd] + 1] - z[p[sd]] : 1);
                    mx = tt_max_nan(mx, fabs(v));
                }
    MPI_Allreduce(loc, glob, 4, MPI_DOUBLE, MPI_SUM, comm);
    double N = (double)n[0] * n[1] * n[2], volume = z ? (z[n[sd]] - z[0]) * (N / n[sd]) : N;
    for (int f = 0; f < batch; f++)
        mean[f] = glob[f] / volume;
    *maxabs = tt_allmax_nan(comm, mx);
}

/* fn(field, global point) into this rank's box of batch fields. */
typedef double (*point_fn)(const void *arg, int field, const int p[3]);
static void fill_fn(void *data, const tide_box *b, int batch, tide_precision prec, point_fn fn,
                    const void *arg)
{
    long long count = tt_box_count(b);
    int p[3];
    for (int f = 0; f < batch && count; f++)
        for (p[0] = b->lo[0]; p[0] < b->hi[0]; p[0]++)
            for (p[1] = b->lo[1]; p[1] < b->hi[1]; p[1]++)
                for (p[2] = b->lo[2]; p[2] < b->hi[2]; p[2]++) {
                    long long e = f * count + tt_offset(b, p);
                    double v = fn(arg, f, p);
                    if (prec == TIDE_FLOAT)
                        ((float *)data)[e] = (float)v;
                    else
                        ((double *)data)[e] = v;
                }
}

/* Max over all ranks and fields of |u - fn| over this rank's box. */
static double max_dist(const void *u, const tide_box *b, int batch, tide_precision prec,
                       point_fn fn, const void *arg)
{
    long long count = tt_box_count(b);
    double mx = 0;
    int p[3];
    for (int f = 0; f < batch && count; f++)
        for (p[0] = b->lo[0]; p[0] < b->hi[0]; p[0]++)
            for (p[1] = b->lo[1]; p[1] < b->hi[1]; p[1]++)
                for (p[2] = b->lo[2]; p[2] < b->hi[2]; p[2]++) {
                    double d = fabs(elem(u, prec, (size_t)(f * count + tt_offset(b, p))) -
                                    fn(arg, f, p));
                    mx = tt_max_nan(mx, d);
                }
    return tt_allmax_nan(comm, mx);
}

/* ---- layouts -------------------------------------------------------------------------------- */

typedef enum {
    LAY_NULL,   /* box NULL: the solver's choice */
    LAY_SLAB,   /* slabs along param (tt_tiling_slabs) */
    LAY_PENCIL, /* pencils whole along param (tt_tiling_pencils) */
    LAY_RANDOM  /* random recursive bisection with random storage orders, seed param */
} lay_kind;

static const char *lay_names[] = {"null", "slab", "pencil", "random"};

/* This rank's box (computed here, not by the library). randorder: a per-rank storage order. */
static tide_box make_box(const int n[3], lay_kind kind, int param, int randorder, unsigned seed)
{
    tide_box *all = tt_xmalloc((size_t)nranks * sizeof *all), b;
    tt_rng rng;
    tt_rng_seed(&rng, (uint64_t)param * 7919u + seed);
    if (kind == LAY_SLAB)
        tt_tiling_slabs(n, param, nranks, all);
    else if (kind == LAY_PENCIL)
        tt_tiling_pencils(n, param, nranks, all);
    else {
        tt_tiling_random(n, nranks, &rng, all);
        tt_random_orders(nranks, &rng, all);
    }
    b = all[rank];
    free(all);
    if (randorder && kind != LAY_RANDOM) {
        tt_rng_seed(&rng, seed * 131u + (unsigned)rank * 17u + (unsigned)kind);
        tt_perm3(tt_rng_below(&rng, 6), b.order);
    }
    return b;
}

static int same_box(const tide_box *a, const tide_box *b) { return !memcmp(a, b, sizeof *a); }

/* Collective tt_check of a condition that may fail on some ranks only: the message (formatted
 * on every rank from its own values) is the lowest failing rank's. */
static int check_local(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int check_local(int ok, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int mine = ok ? nranks : rank, first = nranks;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
    if (first < nranks)
        MPI_Bcast(msg, sizeof msg, MPI_CHAR, first, comm);
    return tt_check(&tally, comm, ok, "%s (rank %d)", msg, first);
}

/* ---- a) the discrete equation --------------------------------------------------------------- */

enum { MAXF = 65 }; /* faces of a bounded dimension: n + 1, n <= 64 in every case here */

typedef struct {
    int n[3];
    tide_precision prec;
    int batch;
    lay_kind lay;
    int param, randorder;
    tide_decomposition decomp;
    tide_exchange exch;
    tide_planning planning;
    int inplace;
    double alpha;
    double h[3];
    unsigned seed;
    tide_bc bc[3][2]; /* all zero: every dimension periodic */
    int stretched;    /* the bounded dimension whose faces are z (non-uniform cells), -1: none
                       * (every bounded dimension's faces are k h) */
    double z[MAXF];
} pcase;

static const char *decomp_name[] = {"auto", "slabs", "pencils"};
static const char *exch_name[] = {"auto", "a2av", "p2p"};
static const char bc_letter[] = "PND"; /* by tide_bc */

static int is_bounded(const tide_bc bc[3][2], int d) { return bc[d][0] != TIDE_BC_PERIODIC; }

/* The line: the bounded dimension the solver solves by tridiagonal systems, the others it
 * transforms (DFT or real-to-real): the one with faces (non-uniform cells), else the last
 * bounded one; -1 when every dimension is periodic. */
static int line_dim(const tide_bc bc[3][2], int stretched)
{
    if (stretched >= 0)
        return stretched;
    for (int d = 2; d >= 0; d--)
        if (is_bounded(bc, d))
            return d;
    return -1;
}

/* The location every problem's arrays live in (on a GPU context the data goes through the
 * GPU, whatever the faces). */
static tide_location arrays_location(void)
{
    return on_device ? TIDE_LOCATION_DEVICE : TIDE_LOCATION_HOST;
}


/* alpha = 0 and no Dirichlet face: lap(u) = f fixes u only up to a constant (tide.h). */
static int is_singular(double alpha, const tide_bc bc[3][2])
{
    int dirichlet = 0;
    for (int d = 0; d < 3; d++)
        dirichlet |= bc[d][0] == TIDE_BC_DIRICHLET || bc[d][1] == TIDE_BC_DIRICHLET;
    return alpha == 0 && !dirichlet;
}

/* The faces a case hands the solver: its own along its non-uniform dimension, else NULL
 * (uniform). */
static void case_faces(const pcase *c, const double *faces[3])
{
    for (int d = 0; d < 3; d++)
        faces[d] = d == c->stretched ? c->z : NULL;
}

/* The n + 1 faces of bounded dimension d as the solver sees them: the given ones, or k h. */
static void dim_faces(const pcase *c, int d, double *z)
{
    const double *faces[3];
    case_faces(c, faces);
    for (int k = 0; k <= c->n[d]; k++)
        z[k] = faces[d] ? faces[d][k] : k * c->h[d];
}

/* n + 1 random increasing faces: widths h (0.5 + r), r uniform in [0, 1) (so up to a factor 3
 * apart), the first face anywhere in [-2, 2) (the solver must measure from it, not from 0). */
static void random_faces(double *z, int n, double h, tt_rng *rng)
{
    z[0] = tt_rng_below(rng, 4000) / 1000.0 - 2;
    for (int k = 1; k <= n; k++)
        z[k] = z[k - 1] + h * (0.5 + tt_rng_below(rng, 1000) / 1000.0);
}

/* The bounded dimensions' faces, e.g. " bc=x:DN,z:NN non-uniform=z" ("" when none). */
static void bc_str(const tide_bc bc[3][2], int stretched, char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = 0;
    for (int d = 0; d < 3; d++)
        if (is_bounded(bc, d) && k < len)
            k += (size_t)snprintf(buf + k, len - k, "%s%c:%c%c", k ? "," : " bc=", "xyz"[d],
                                  bc_letter[bc[d][0]], bc_letter[bc[d][1]]);
    if (stretched >= 0 && k < len)
        snprintf(buf + k, len - k, " non-uniform=%c", "xyz"[stretched]);
}

static void case_str(const pcase *c, char *buf, size_t len)
{
    char bcs[48];
    bc_str(c->bc, c->stretched, bcs, sizeof bcs);
    snprintf(buf, len,
             "n=%dx%dx%d %s batch=%d box=%s%d%s decomp=%s%s exch=%s %s alpha=%g "
             "h=(%g,%g,%g)%s seed=%u",
             c->n[0], c->n[1], c->n[2], c->prec == TIDE_FLOAT ? "float" : "double", c->batch,
             lay_names[c->lay], c->param, c->randorder ? "/ro" : "", decomp_name[c->decomp],
             c->planning == TIDE_PLAN_MEASURE ? " measured" : "",
             exch_name[c->exch], c->inplace ? "in-place" : "out-of-place", c->alpha, c->h[0],
             c->h[1], c->h[2], bcs, c->seed);
}

/*
 * Rounding of a solve: the forward and inverse transforms each add about eps relative error per
 * butterfly level, log2 N levels, and u is rounded once more to the data's precision. So
 * everything that is exact in exact arithmetic (the discrete equation, the means, a constant
 * f's solution) is checked to ROUND_C * (1 + log2 N) * eps of its scale. ROUND_C = 4: two
 * transforms, a factor 2 for the real/complex split and the oracle's own double arithmetic.
 * The largest errors measured on 1 to 6 ranks sit at a few percent of that (printed at the
 * end of a)), while the bugs it must catch are orders above (see residual_tol).
 */
#define ROUND_C 4.0

static double round_tol(tide_precision prec, const int n[3])
{
    double N = (double)n[0] * n[1] * n[2];
    return ROUND_C * (1 + log2(N)) * eps_of(prec);
}

/*
 * The residual's tolerance. A computed u carries rounding errors du of round_tol relative to
 * max|u|. The residual is (L - alpha) du, which the operator amplifies by at most its max-norm
 * (largest absolute row sum) mu_max + alpha, while max|u| <= G max|f'|. So the relative
 * residual max|L u - alpha u - f'| / max|f'| is bounded by about round_tol * kappa,
 * kappa = (mu_max + alpha) G, the operator's spread:
 *  - mu_max: the sum over the dimensions of -L's row sums along them: 4 / h^2 along a periodic
 *    one, along a bounded one the largest of (g(i-1/2) + g(i+1/2) + the off-diagonal ones) /
 *    w_i, computed from the faces (g the conductances, see bounded_rows; 4 / h^2 again on
 *    uniform cells, at most 4 / w_min^2 on non-uniform ones).
 *  - G, non-singular (alpha > 0 or a Dirichlet face): -L + alpha is an M-matrix (non-positive
 *    off-diagonal, positive diagonal, non-singular), its inverse has non-negative entries, so
 *    its max-norm is exactly max (-L + alpha)^{-1} 1, and any V with (-L + alpha) V >= 1
 *    bounds that vector from above. -L is the sum of the dimensions' operators -A_d, each
 *    with row sums >= 0 (0 along periodic and Neumann rows, > 0 at a Dirichlet face), so
 *    -A_d applied to a V >= 0 constant along d is >= 0. Hence two such V: 1 / alpha (alpha >
 *    0), and for each bounded dimension b whose own -A_b + alpha is non-singular (alpha > 0 or
 *    a Dirichlet face on b) the 1D solution v of (-A_b + alpha) v = 1 (v >= 0), extended
 *    constant along the other two. G is the smallest of their maxima (one bounded dimension,
 *    alpha = 0: max v, exact; every dimension periodic: 1 / alpha, exact).
 *  - G, singular: the zero mode is removed, and G is about 1 / mu_min, mu_min the smallest
 *    non-zero eigenvalue of -L, the smallest among the dimensions': 4 sin^2(pi / n) / h^2
 *    along a periodic one, 4 sin^2(pi / 2n) / h^2 along uniform Neumann-Neumann cells, and on
 *    non-uniform ones at least g_min / w_max times that with h = 1 (Courant-Fischer: the flux
 *    form sum g (u_i - u_i-1)^2 is at least g_min times the unit one, the mass form sum w u^2 at
 *    most w_max times the plain one, and both vanish on constants only).
 * With unit spacing and every dimension periodic kappa = 12 / (4 sin^2(pi / nmax)) ~ 0.3
 * nmax^2 (the eps * nmax^2 scale), so the bar is ~ 1.2 (1 + log2 N) eps nmax^2; spacings that
 * differ between dimensions, Dirichlet faces (the smallest eigenvalue along n cells is 4 to 16
 * times below the periodic one's) and non-uniform cells (up to (w_max / w_min)^2) widen it, and
 * Helmholtz shifts narrow it, which the formula takes in rather than a fixed nmax^2. The
 * line's tridiagonal solve adds a few eps, less than the log2 n levels of the transform it
 * replaces; the real-to-real transforms of the other bounded dimensions round like the FFTs
 * (log2 n levels). A wrong eigenvalue, spacing, boundary row, cell width or zero mode gives
 * residuals of order 1; double data solved with float eigenvalues or float pivots gives
 * ~1e-7, far above the double bar (< 1e-10 for every case here).
 */
/* Bounded dimension d of case c (n cells): the widths w and the conductances g[k] of face k,
 * 1 / (c_k - c_{k-1}) between centres, 1 / (half the cell) at a Dirichlet face, 0 at a Neumann
 * one: -A u at cell i is (g[i] (u_i - u_{i-1}) - g[i+1] (u_{i+1} - u_i)) / w_i. */
static void bounded_rows(const pcase *c, int d, double *w, double *g)
{
    int n = c->n[d];
    double z[MAXF];
    dim_faces(c, d, z);
    for (int i = 0; i < n; i++)
        w[i] = z[i + 1] - z[i];
    for (int k = 1; k < n; k++)
        g[k] = 2 / (w[k - 1] + w[k]); /* centres midway: their distance is the mean width */
    g[0] = c->bc[d][0] == TIDE_BC_DIRICHLET ? 2 / w[0] : 0;
    g[n] = c->bc[d][1] == TIDE_BC_DIRICHLET ? 2 / w[n - 1] : 0;
}

/* -L's max-norm: its largest absolute row sum (the bound on its eigenvalues too). */
static double mu_max(const pcase *c)
{
    double mu = 0;
    for (int d = 0; d < 3; d++) {
        int n = c->n[d];
        if (c->bc[d][0] == TIDE_BC_PERIODIC) {
            mu += n > 1 ? 4 / (c->h[d] * c->h[d]) : 0; /* n == 1: no second difference */
            continue;
        }
        double w[MAXF], g[MAXF], row = 0;
        bounded_rows(c, d, w, g);
        for (int i = 0; i < n; i++) /* an interior face's g is on the diagonal and off it */
            row = fmax(row, (g[i] * (i > 0 ? 2 : 1) + g[i + 1] * (i < n - 1 ? 2 : 1)) / w[i]);
        mu += row;
    }
    return mu;
}

/* A lower bound on the smallest non-zero eigenvalue of -L (INFINITY when it has none). */
static double mu_min_nonzero(const pcase *c)
{
    double mu = INFINITY;
    for (int d = 0; d < 3; d++) {
        int n = c->n[d];
        if (n == 1)
            continue; /* periodic: no term; Neumann-Neumann: the one eigenvalue is 0 */
        if (c->bc[d][0] == TIDE_BC_PERIODIC) {
            double s = sin(M_PI / n);
            mu = fmin(mu, 4 * s * s / (c->h[d] * c->h[d]));
            continue;
        }
        /* Only singular problems ask, so the faces are Neumann: g[1..n-1] between centres. */
        double w[MAXF], g[MAXF], gmin = INFINITY, wmax = 0, s = sin(M_PI / (2 * n));
        bounded_rows(c, d, w, g);
        for (int i = 0; i < n; i++)
            wmax = fmax(wmax, w[i]);
        for (int k = 1; k < n; k++)
            gmin = fmin(gmin, g[k]);
        mu = fmin(mu, gmin / wmax * 4 * s * s);
    }
    return mu;
}

/* max (-A + alpha)^{-1} 1 along the bounded dimension bd, non-singular there (Thomas'
 * algorithm; the matrix is diagonally dominant, so no pivoting is needed). */
static double inverse_norm_1d(const pcase *c, int bd)
{
    int n = c->n[bd];
    double w[MAXF], g[MAXF], cp[MAXF], v[MAXF], mx = 0;
    bounded_rows(c, bd, w, g);
    for (int i = 0; i < n; i++) {
        double diag = (g[i] + g[i + 1]) / w[i] + c->alpha, lower = -g[i] / w[i];
        double piv = i > 0 ? diag - lower * cp[i - 1] : diag;
        cp[i] = -g[i + 1] / w[i] / piv;
        v[i] = (1 - (i > 0 ? lower * v[i - 1] : 0)) / piv;
    }
    for (int i = n - 2; i >= 0; i--)
        v[i] -= cp[i] * v[i + 1];
    for (int i = 0; i < n; i++)
        mx = fmax(mx, v[i]);
    return mx;
}

/* G: max|u| / max|f'| at most (see above). */
static double inverse_bound(const pcase *c, int singular)
{
    if (singular)
        return 1 / mu_min_nonzero(c); /* 0 when there is no non-zero eigenvalue */
    double G = c->alpha > 0 ? 1 / c->alpha : INFINITY;
    for (int d = 0; d < 3; d++)
        if (is_bounded(c->bc, d) && (c->alpha > 0 || c->bc[d][0] == TIDE_BC_DIRICHLET ||
                                     c->bc[d][1] == TIDE_BC_DIRICHLET))
            G = fmin(G, inverse_norm_1d(c, d));
    return G;
}

static double kappa(const pcase *c, int singular)
{
    double k = (mu_max(c) + c->alpha) * inverse_bound(c, singular);
    /* Singular with no non-zero eigenvalue (every dimension 1): f' = 0 and u = 0, the residual
     * is rounding of nothing; keep the bar at round_tol. */
    return k > 0 ? k : 1;
}

static double residual_tol(const pcase *c, int singular)
{
    return round_tol(c->prec, c->n) * kappa(c, singular);
}

/* Whether the solve transforms x inside its spectral op, between the transforms of y and z,
 * on any ranks and boxes: every dimension periodic, and on the CPU always; on the GPU with
 * device arrays (gpu/poisson.cu) with n[0] a power of two from 8 to 2048. The plan says
 * fft+eigen(x). */
static int fused_line(const pcase *c)
{
    int n = c->n[0];
    if (is_bounded(c->bc, 0) || is_bounded(c->bc, 1) || is_bounded(c->bc, 2))
        return 0;
    return !gpu || (on_device && n >= 8 && n <= 2048 && (n & (n - 1)) == 0);
}

/* The plan's box, info, cost and description, against what the case asked for. */
static int check_plan(const pcase *c, const char *desc, tide_poisson_plan *plan,
                      const tide_box *want, tide_box *box)
{
    tide_poisson_info info;
    tide_fft_cost cost;
    char steps[512] = "";
    int sb = tide_poisson_plan_box(plan, box), si = tide_poisson_plan_info(plan, &info);
    int sc = tide_poisson_plan_cost(plan, &cost);
    int sd = tide_poisson_plan_describe(plan, steps, sizeof steps);
    if (!tt_check(&tally, comm, !sb && !si && !sc && !sd,
                  "%s: plan_box/info/cost/describe statuses %d %d %d %d", desc, sb, si, sc, sd))
        return 0;
    if (verbose && rank == 0)
        printf("    rank 0: %s\n", steps);
    plane_plans += strstr(steps, "plane pass") != NULL;

    /* The boxes: the ones given, or the solver's, which must tile the grid: x-slabs, or
     * pencils whole along z (tide.h), along y when z is the line (its transform is skipped,
     * so the solve starts in the y-pencils of y's transform): whole along `top`, the highest
     * transformed dimension (with at most one bounded dimension the halved one). Stored with
     * the line slowest, then the other bounded dimensions, then the periodic ones, each group
     * in order (so the halved one, the highest periodic, last). */
    int L = line_dim(c->bc, c->stretched), top = L == 2 ? 1 : 2, order[3], k = 0;
    for (int group = 0; group < 3; group++)
        for (int d = 0; d < 3; d++)
            if ((d == L ? 0 : is_bounded(c->bc, d) ? 1 : 2) == group)
                order[k++] = d;
    tide_box *all = tt_xmalloc((size_t)nranks * sizeof *all);
    MPI_Allgather(box, sizeof *box, MPI_BYTE, all, sizeof *box, MPI_BYTE, comm);
    int P = nranks, slabs_ok = P <= c->n[0] && P <= c->n[1];
    tide_decomposition want_dec = c->decomp != TIDE_DECOMP_AUTO ? c->decomp
                                  : slabs_ok                    ? TIDE_DECOMP_SLABS
                                                                : TIDE_DECOMP_PENCILS;
    /* measured: whichever decomposition solved faster */
    if (c->planning == TIDE_PLAN_MEASURE && c->decomp == TIDE_DECOMP_AUTO && !want && P > 1 &&
        (info.decomposition == TIDE_DECOMP_SLABS || info.decomposition == TIDE_DECOMP_PENCILS))
        want_dec = info.decomposition;
    int nonempty = 0;
    for (int r = 0; r < P; r++)
        nonempty += tt_box_count(&all[r]) > 0;
    empty_cases += nonempty < P;
    int box_ok = tt_boxes_tile(c->n, P, all);
    if (want)
        box_ok = box_ok && same_box(box, want);
    else if (P > 1 && want_dec == TIDE_DECOMP_SLABS) {
        tt_tiling_slabs(c->n, 0, P, all);
        memcpy(all[rank].order, order, sizeof order);
        box_ok = box_ok && same_box(box, &all[rank]);
    } else if (P > 1) {
        int whole = top;
        box_ok = box_ok && (tt_box_count(box) == 0 ||
                            (box->lo[whole] == 0 && box->hi[whole] == c->n[whole]));
    }
    free(all);
    char bs[96];
    check_local(box_ok, "%s: plan box %s not the given one / not a tiling of the expected "
                "layout", desc, tt_box_str(box, bs, sizeof bs));

    /* Counts and bytes of the box; the singular flag; exchanges: none on one rank (but see
     * below for the GPU), two for
     * slabs (forward to y-slabs, back to x-slabs), at most four for the solver's pencils, and
     * at least two wherever two ranks hold points (a dimension split between them must come
     * whole on one rank and go back). (The solver's pencils may hold every point on one rank:
     * tide_proc_grid splits a dimension of 1, e.g. 5x1x6 on 6 ranks gives a 1 x 6 grid.) */
    long long count = tt_box_count(box);
    size_t rsize = c->prec == TIDE_FLOAT ? sizeof(float) : sizeof(double);
    int singular = is_singular(c->alpha, c->bc);
    int ok = info.count == count && info.bytes == (size_t)count * (size_t)c->batch * rsize &&
             info.singular == singular &&
             info.location == arrays_location() &&
             info.backend == (gpu ? TIDE_BACKEND_CUDA : TIDE_BACKEND_CPU) &&
             info.passes > 0 && info.flops > 0 && steps[0] != 0;
    /* On the GPU a box not stored with the halved dimension (the highest periodic one, if
     * any) fastest and the line (bounded, or transformed inside the spectral op) slowest is
     * permuted locally first and back last (what cuFFT's real transforms want): two local
     * reshapes. */
    int half = -1, line = L >= 0 ? L : fused_line(c) ? 0 : -1;
    for (int d = 0; d < 3; d++)
        half = is_bounded(c->bc, d) ? half : d;
    int cufft_ok = (half < 0 || box->order[2] == half) && (line < 0 || box->order[0] == line);
    if (P == 1)
        ok = ok && (info.exchanges == 0 || (gpu && !cufft_ok && info.exchanges == 2));
    else if (!want && want_dec == TIDE_DECOMP_SLABS)
        ok = ok && info.exchanges == 2 && info.decomposition == TIDE_DECOMP_SLABS;
    else if (!want)
        ok = ok && info.exchanges <= 4 && info.decomposition == TIDE_DECOMP_PENCILS;
    if (P > 1 && nonempty >= 2)
        ok = ok && info.exchanges >= 2;
    if (c->decomp != TIDE_DECOMP_AUTO && P > 1)
        ok = ok && info.decomposition == c->decomp;
    if (c->exch != TIDE_EXCHANGE_AUTO && info.exchanges > 0 && !gpu)
        ok = ok && info.exchange == c->exch;
    /* The eigenvalue scaling inside the forward transform's store: never on the CPU; on one
     * GPU rank with every dimension periodic (one cuFFT call over the whole grid) always for
     * double data where the spectral op does not transform x itself (fused_line), in a build
     * with cuFFT's callbacks (float keeps its kernel: gpu/fft_callbacks.h says why). The steps
     * say so, and it is no pass of its own. */
    int periodic = half >= 0 && !is_bounded(c->bc, 0) && !is_bounded(c->bc, 1) &&
                   !is_bounded(c->bc, 2);
    if (!gpu)
        ok = ok && !info.fused_scaling;
    else if (P == 1 && periodic && c->prec == TIDE_DOUBLE && !fused_line(c) &&
             TIDE_HAVE_FFT_CALLBACKS)
        ok = ok && info.fused_scaling;
    ok = ok && info.fused_scaling == (strstr(steps, "eigen(in fft)") != NULL);
    ok = ok && fused_line(c) == (strstr(steps, "fft+eigen(x)") != NULL);
    /* A rank may hold points and still transform none (they all go to other ranks), so
     * only the sum of the ranks' flops must be positive (every grid here has a dimension of
     * more than one point). */
    double flops = 0;
    MPI_Allreduce(&cost.flops, &flops, 1, MPI_DOUBLE, MPI_SUM, comm);
    ok = ok && cost.exchanges == info.exchanges && (P > 1 || cost.exchange_bytes == 0) &&
         flops > 0;
    return check_local(ok,
                    "%s: plan info inconsistent: count %lld (box %lld), bytes %zu, "
                    "singular %d, location %d, backend %d, exchanges %d (cost %d), decomposition "
                    "%d, exchange %d, passes %d, flops %g (cost %g), steps \"%s\"",
                    desc, info.count, count, info.bytes, info.singular, (int)info.location,
                    (int)info.backend, info.exchanges, cost.exchanges, (int)info.decomposition,
                    (int)info.exchange, info.passes, info.flops, cost.flops, steps);
}

static void check_solve(tide_context *ctx, const pcase *c, const char *desc,
                        tide_poisson_plan *plan, const tide_box *bp,
                        const tide_poisson_options *op);

static void run_case(tide_context *ctx, const pcase *c)
{
    char desc[320];
    case_str(c, desc, sizeof desc);
    if (verbose && rank == 0) {
        printf("case: %s\n", desc);
        fflush(stdout);
    }
    tide_box want = {{0, 0, 0}, {0, 0, 0}, {0, 1, 2}};
    if (c->lay != LAY_NULL)
        want = make_box(c->n, c->lay, c->param, c->randorder, c->seed);
    tide_poisson_options o;
    tide_poisson_options_init(&o);
    o.precision = c->prec;
    o.batch = c->batch;
    o.decomposition = c->decomp;
    o.exchange = c->exch;
    o.planning = c->planning;
    o.alpha = c->alpha;
    memcpy(o.h, c->h, sizeof o.h);
    memcpy(o.bc, c->bc, sizeof o.bc);
    case_faces(c, o.faces);
    o.location = arrays_location();
    tide_poisson_plan *plan = NULL;
    int st = tide_poisson_plan_create(ctx, c->n, c->lay == LAY_NULL ? NULL : &want, &o, &plan);
    if (!tt_check(&tally, comm, st == 0, "%s: plan_create: %s: %s", desc, tide_strerror(st),
                  tide_last_error(ctx)))
        return;
    tide_box box;
    if (check_plan(c, desc, plan, c->lay == LAY_NULL ? NULL : &want, &box))
        check_solve(ctx, c, desc, plan, &box, &o);
    tide_poisson_plan_destroy(plan);
}

/* One solve of plan (this rank's box, options o) on case c's random f: the naive residual, f
 * left alone out of place, the reported mean of f and (singular) the zero mean of u. */
static void check_solve(tide_context *ctx, const pcase *c, const char *desc,
                        tide_poisson_plan *plan, const tide_box *bp,
                        const tide_poisson_options *op)
{
    tide_box box = *bp;
    tide_poisson_options o = *op;
    long long count = tt_box_count(&box);
    size_t bytes = (size_t)count * (size_t)c->batch *
                   (c->prec == TIDE_FLOAT ? sizeof(float) : sizeof(double));
    void *f0 = tt_xmalloc(bytes), *u = tt_xmalloc(bytes), *fa = tt_xmalloc(bytes);
    tide_ref_fill(f0, &box, c->batch, 0, c->prec, c->n, c->seed);
    int st = run_solve(plan, f0, bytes, c->inplace, u, fa);
    if (!tt_check(&tally, comm, st == 0, "%s: solve: %s: %s", desc, tide_strerror(st),
                  tide_last_error(ctx)))
        goto done;
    if (!c->inplace)
        check_local(bytes == 0 || memcmp(fa, f0, bytes) == 0,
                    "%s: out-of-place solve modified f", desc);

    int singular = is_singular(c->alpha, c->bc);
    tide_ref_error e = {0, 0, 0};
    st = tide_ref_poisson_residual(comm, c->n, c->h, c->bc, o.faces, c->alpha, singular, c->prec,
                                   c->batch, &box, f0, u, &e);
    double tol = residual_tol(c, singular);
    /* All-zero f' (every dimension 1 and singular): the residual is absolute. */
    double rel = e.max_ref > 0 ? e.max_abs / e.max_ref : e.max_abs;
    worst_residual = tt_max_nan(worst_residual, rel / tol);
    if (verbose && rank == 0)
        printf("    residual %.3g (tol %.3g, kappa %.3g)\n", rel, tol, kappa(c, singular));
    tt_check(&tally, comm, st == 0 && rel <= tol,
             "%s: residual: status %d, max %.3g / max|f'| %.3g = %.3g (tol %.3g), rel_l2 %.3g",
             desc, st, e.max_abs, e.max_ref, rel, tol, e.rel_l2);

    /* The mean of f as Tide reports it against the mean computed here (weighted by the cell
     * widths along a non-uniform dimension), and (singular) the zero mean of u. A sum of N
     * terms (pairwise, or the transform's zero mode) is accurate to about eps * log2(N) of the
     * largest term: round_tol * max|f| is ~5e-14 in double and ~2e-5 in float for these
     * grids, while a mean that is off by a field, a rank's share, a factor N or unweighted is
     * of order max|f| / sqrt(N) or more; u's mean is the inverse transform's rounding of its
     * zero mode, set to exactly 0. */
    double fmean[3], fmaxabs, lmean[3] = {NAN, NAN, NAN}, umean[3], umax;
    const double *sz = c->stretched >= 0 ? c->z : NULL;
    field_stats(f0, &box, c->prec, c->batch, c->n, c->stretched, sz, fmean, &fmaxabs);
    field_stats(u, &box, c->prec, c->batch, c->n, c->stretched, sz, umean, &umax);
    st = tide_poisson_mean(plan, lmean);
    double mtol = round_tol(c->prec, c->n);
    int mean_ok = st == 0, umean_ok = 1, bad = 0, ubad = 0; /* the first field failing */
    for (int f = 0; f < c->batch; f++) {
        if (mean_ok && !(fabs(lmean[f] - fmean[f]) <= mtol * fmaxabs))
            mean_ok = 0, bad = f;
        if (umean_ok && !(fabs(umean[f]) <= mtol * umax))
            umean_ok = 0, ubad = f;
        worst_mean = tt_max_nan(worst_mean, fabs(lmean[f] - fmean[f]) / (mtol * fmaxabs));
        if (singular)
            worst_mean = tt_max_nan(worst_mean, fabs(umean[f]) / (mtol * umax));
    }
    tt_check(&tally, comm, mean_ok,
             "%s: tide_poisson_mean: status %d, field %d %.17g, the test's %.17g (tol %.3g)",
             desc, st, bad, lmean[bad], fmean[bad], mtol * fmaxabs);
    if (singular)
        tt_check(&tally, comm, umean_ok, "%s: u of a singular problem has mean %.3g (field %d) "
                 "of max|u| %.3g (tol %.3g)", desc, umean[ubad], ubad, umax, mtol * umax);
done:
    free(f0);
    free(u);
    free(fa);
}

/* Odd, even and prime extents, dimensions of 1 and 2, grids with fewer planes than ranks. */
static const int sizes[][3] = {{7, 9, 11}, {13, 5, 8}, {16, 12, 10}, {5, 1, 6},
                               {2, 3, 4},  {11, 13, 17}, {17, 2, 7}, {1, 6, 5}};
enum { NSIZES = sizeof sizes / sizeof sizes[0], NCOMBOS = 9, NFUZZ = 24 };
/* Cases with one bounded dimension: one per size and layout (like the periodic ones), and
 * fuzz cases. */
enum { NBOUNDED = NSIZES * NCOMBOS, NBFUZZ = 24 };
/* Cases with two or three bounded dimensions: likewise. */
enum { NMULTI = NSIZES * NCOMBOS, NMFUZZ = 24 };
static const tide_bc face_pairs[4][2] = {{TIDE_BC_NEUMANN, TIDE_BC_NEUMANN},
                                         {TIDE_BC_DIRICHLET, TIDE_BC_DIRICHLET},
                                         {TIDE_BC_NEUMANN, TIDE_BC_DIRICHLET},
                                         {TIDE_BC_DIRICHLET, TIDE_BC_NEUMANN}};
static const double spacings[][3] = {{1, 1, 1}, {0.5, 1.3, 2.0}, {0.1, 0.1, 0.1},
                                     {2.5, 0.7, 1.1}};

/* Case k = s * NCOMBOS + j: size s, layout j; the other options rotate with k so that every
 * layout meets both precisions, both batch sizes, in and out of place, Poisson and Helmholtz,
 * and every spacing and exchange somewhere across the sizes. */
static pcase make_case(int s, int j)
{
    int k = s * NCOMBOS + j;
    pcase c;
    memset(&c, 0, sizeof c);
    c.stretched = -1;
    memcpy(c.n, sizes[s], sizeof c.n);
    c.prec = (k / 2) % 2 ? TIDE_FLOAT : TIDE_DOUBLE;
    c.batch = k % 5 == 3 ? 3 : 1;
    c.inplace = (k / 3) % 2;
    c.alpha = k % 4 == 1 ? 0.75 : k % 4 == 3 ? 3.0 : 0;
    memcpy(c.h, spacings[(k / 4) % 4], sizeof c.h);
    c.exch = (tide_exchange)((k / 7) % 3);
    c.seed = 2000u + (unsigned)k;
    int slabs_ok = nranks <= c.n[0] && nranks <= c.n[1];
    c.lay = LAY_NULL;
    switch (j) {
    case 0: /* the solver's boxes and decomposition */
        break;
    case 1: /* the solver's boxes, slabs forced where they are the valid choice */
        c.decomp = slabs_ok ? TIDE_DECOMP_SLABS : TIDE_DECOMP_AUTO;
        break;
    case 2: /* the solver's boxes, pencils forced */
        c.decomp = TIDE_DECOMP_PENCILS;
        break;
    case 3: /* x-slabs given (empty ones where ranks outnumber planes) */
        c.lay = LAY_SLAB;
        c.param = 0;
        break;
    case 4: /* slabs along another dimension, per-rank storage orders */
        c.lay = LAY_SLAB;
        c.param = (s + 1) % 3;
        c.randorder = 1;
        break;
    case 5:
        c.lay = LAY_PENCIL;
        c.param = s % 3;
        break;
    case 6: /* pencils with per-rank orders, pencil transforms forced */
        c.lay = LAY_PENCIL;
        c.param = (s + 2) % 3;
        c.randorder = 1;
        c.decomp = TIDE_DECOMP_PENCILS;
        break;
    case 7: /* random tilings with random orders: uneven and empty boxes */
        c.lay = LAY_RANDOM;
        c.param = 1;
        break;
    case 8:
        c.lay = LAY_RANDOM;
        c.param = 2;
        c.decomp = slabs_ok ? TIDE_DECOMP_SLABS : TIDE_DECOMP_PENCILS;
        break;
    }
    return c;
}

/* Fuzz case i: small random sizes (down to 1) and every option at random. */
static pcase make_fuzz_case(int i)
{
    tt_rng rng;
    tt_rng_seed(&rng, 0x9015500u + (unsigned)i);
    pcase c;
    memset(&c, 0, sizeof c);
    c.stretched = -1;
    for (int d = 0; d < 3; d++)
        c.n[d] = 1 + tt_rng_below(&rng, 12);
    c.prec = (tide_precision)tt_rng_below(&rng, 2);
    c.batch = 1 + tt_rng_below(&rng, 3);
    c.lay = (lay_kind)tt_rng_below(&rng, 4);
    c.param = c.lay == LAY_RANDOM ? 10 + i : tt_rng_below(&rng, 3);
    c.randorder = tt_rng_below(&rng, 2);
    c.decomp = (tide_decomposition)tt_rng_below(&rng, 3);
    if (c.decomp == TIDE_DECOMP_SLABS && (nranks > c.n[0] || nranks > c.n[1]))
        c.decomp = TIDE_DECOMP_AUTO;
    c.exch = (tide_exchange)tt_rng_below(&rng, 3);
    c.inplace = tt_rng_below(&rng, 2);
    c.alpha = tt_rng_below(&rng, 2) ? 0 : 0.1 + tt_rng_below(&rng, 40) * 0.1;
    for (int d = 0; d < 3; d++)
        c.h[d] = 0.3 + tt_rng_below(&rng, 23) * 0.1;
    c.seed = 6000u + (unsigned)i;
    if (i % 6 == 1) { /* the plan's own boxes, measured: slabs timed against pencils */
        c.lay = LAY_NULL;
        c.decomp = TIDE_DECOMP_AUTO;
        c.planning = TIDE_PLAN_MEASURE;
    }
    return c;
}

/* Dimension d bounded by face pair `pair` (face_pairs); when stretch, on random non-uniform
 * cells (the faces drawn from rng), the case's one stretched dimension. */
static void set_bounded(pcase *c, int d, int pair, int stretch, tt_rng *rng)
{
    c->bc[d][0] = face_pairs[pair][0];
    c->bc[d][1] = face_pairs[pair][1];
    if (stretch) {
        c->stretched = d;
        random_faces(c->z, c->n[d], c->h[d], rng);
    }
}

/* Bounded case k: size k / NCOMBOS and layout k % NCOMBOS as make_case (with its batch,
 * spacings and exchange); the face pair k % 4 on dimension (k / 4) % 3, so that every block
 * m = k / 12 has each of the 12 (dimension, pair) combinations once and every dimension meets
 * every layout. Across the six blocks each combination meets float and double on uniform and
 * non-uniform cells, Poisson and Helmholtz (Neumann-Neumann: the singular problem) and in and
 * out of place. */
static pcase make_bounded_case(int k)
{
    pcase c = make_case(k / NCOMBOS, k % NCOMBOS);
    int m = k / 12, pair = k % 4, d = (k / 4) % 3;
    c.prec = m % 2 ? TIDE_FLOAT : TIDE_DOUBLE;
    c.alpha = m == 2 ? 0.75 : m == 5 ? 3.0 : 0;
    c.inplace = (m + k / 4) % 2;
    c.seed = 3000u + (unsigned)k;
    tt_rng rng;
    tt_rng_seed(&rng, c.seed);
    set_bounded(&c, d, pair, (m / 2 + pair + d) % 2, &rng);
    return c;
}

/* Bounded fuzz case i: a fuzz case of its own seed with a random dimension bounded by a
 * random face pair, on uniform or random cells. */
static pcase make_bounded_fuzz_case(int i)
{
    pcase c = make_fuzz_case(NFUZZ + i);
    tt_rng rng;
    tt_rng_seed(&rng, 0xB0D0u + (unsigned)i);
    int d = tt_rng_below(&rng, 3), pair = tt_rng_below(&rng, 4);
    set_bounded(&c, d, pair, tt_rng_below(&rng, 2), &rng);
    return c;
}

/* Case k with two or three bounded dimensions: size k / NCOMBOS and layout k % NCOMBOS as
 * make_case (with its batch, in place or not and exchange). With q = k % 4 and m = k / 4:
 * dimension q periodic and the other two bounded, or (q = 3) all three bounded; dimension d
 * bounded by the face pair (m + d) % 4, so the bounded dimensions of one case have different
 * pairs (a Dirichlet face among them) and four consecutive m give each (set, dimension, pair)
 * once; precision, alpha (0, 0.75, 3) and the spacings rotate with m and q, and one bounded
 * dimension in three cases is non-uniform. Every fifth m instead has Neumann faces everywhere
 * and alpha 0: the singular problem. The sizes put extents of 1 and 2 (and odd and prime
 * ones) on bounded dimensions. */
static pcase make_multi_case(int k)
{
    pcase c = make_case(k / NCOMBOS, k % NCOMBOS);
    int q = k % 4, m = k / 4, singular = m % 5 == 4, nb = q == 3 ? 3 : 2;
    c.prec = (m + q) % 2 ? TIDE_FLOAT : TIDE_DOUBLE;
    c.alpha = singular || m % 3 == 0 ? 0 : m % 3 == 1 ? 0.75 : 3.0;
    memcpy(c.h, spacings[(k / 3) % 4], sizeof c.h);
    c.seed = 5000u + (unsigned)k;
    tt_rng rng;
    tt_rng_seed(&rng, c.seed);
    /* the stretched one: the ((m / 3) % nb)-th bounded dimension, in one case of three */
    int stretch = (m + q) % 3 == 1 ? (m / 3) % nb : -1;
    for (int d = 0, i = 0; d < 3; d++)
        if (d != q)
            set_bounded(&c, d, singular ? 0 : (m + d) % 4, i++ == stretch, &rng);
    return c;
}

/* Multi-bounded fuzz case i: a fuzz case of its own seed with two or three random dimensions
 * bounded by random face pairs (every sixth one Neumann everywhere and Poisson: singular), one
 * of them on random cells in one case of three. */
static pcase make_multi_fuzz_case(int i)
{
    pcase c = make_fuzz_case(NFUZZ + NBFUZZ + i);
    tt_rng rng;
    tt_rng_seed(&rng, 0x3B0D0u + (unsigned)i);
    int periodic = tt_rng_below(&rng, 4); /* 3: none */
    int nb = periodic == 3 ? 3 : 2, stretch = tt_rng_below(&rng, 3) ? -1 : tt_rng_below(&rng, nb);
    int singular = i % 6 == 5;
    if (singular)
        c.alpha = 0;
    for (int d = 0, j = 0; d < 3; d++)
        if (d != periodic)
            set_bounded(&c, d, singular ? 0 : tt_rng_below(&rng, 4), j++ == stretch, &rng);
    return c;
}

/* Periodic grids with x a power of two from 8 to 2048 beside odd, prime and unit extents,
 * two cases a size, one in float and one in double: on the GPU with device arrays the plan
 * transforms x inside its spectral op (fused_line), as on the CPU; with host arrays on the GPU
 * they are periodic cases like the others. The last three have planes that Tide's real plane
 * pass takes (64 to 256 rows of 128 or 256 reals), with x fused or not: with
 * TIDE_FFT_ENGINE=plane on device arrays some plan must run that pass (plane_plans).
 * Layouts, batches, alpha, spacings and in or out of place as make_case's. */
static const int line_sizes[][3] = {{8, 7, 5},    {16, 9, 13}, {32, 5, 1},  {64, 3, 7},
                                    {128, 6, 2},  {256, 1, 3}, {512, 2, 3}, {1024, 3, 1},
                                    {2048, 2, 5}, {8, 1, 1},   {16, 17, 4}, {16, 64, 128},
                                    {6, 128, 256}, {8, 256, 128}};
enum { NLINES = 2 * sizeof line_sizes / sizeof line_sizes[0] };

static pcase line_case(int k)
{
    pcase c = make_case(k % NSIZES, k % NCOMBOS);
    memcpy(c.n, line_sizes[k / 2], sizeof c.n);
    c.prec = k % 2 ? TIDE_DOUBLE : TIDE_FLOAT;
    c.seed = 7000u + (unsigned)k;
    if (c.decomp == TIDE_DECOMP_SLABS && (nranks > c.n[0] || nranks > c.n[1]))
        c.decomp = TIDE_DECOMP_AUTO;
    if (c.n[1] >= 64 && c.prec == TIDE_FLOAT) { /* the plane pass's: dense planes, one field */
        c.lay = LAY_NULL;
        c.decomp = TIDE_DECOMP_AUTO;
        c.batch = 1;
    }
    return c;
}

/* The groups of a): case k of each. */
static pcase periodic_case(int k)
{
    return k < NSIZES * NCOMBOS ? make_case(k / NCOMBOS, k % NCOMBOS)
                                : make_fuzz_case(k - NSIZES * NCOMBOS);
}

static pcase bounded_case(int k)
{
    return k < NBOUNDED ? make_bounded_case(k) : make_bounded_fuzz_case(k - NBOUNDED);
}

static pcase multi_case(int k)
{
    return k < NMULTI ? make_multi_case(k) : make_multi_fuzz_case(k - NMULTI);
}

/* Runs cases 0..count-1 of a group and prints its summary. */
static void run_group(tide_context *ctx, const char *name, int count, pcase (*make)(int))
{
    double t0 = MPI_Wtime();
    int before = tally.failed, ran = 0;
    empty_cases = 0;
    worst_residual = worst_mean = 0;
    for (int k = 0; k < count; k++) {
        pcase c = make(k);
        run_case(ctx, &c);
        ran++;
    }
    if (rank == 0)
        printf("  a) %d %s residual cases (%d with empty boxes): %d failed checks (%.1f s); "
               "largest residual %.2g and mean error %.2g of their tolerances\n",
               ran, name, empty_cases, tally.failed - before, MPI_Wtime() - t0, worst_residual,
               worst_mean);
}

/* ---- f) host arrays streamed through the GPU ------------------------------------------------ */

/* Streamed cases (host arrays on the GPU): boundary sets that exercise every shape of the
 * streamed solve: periodic (z halved), z the line (y halved), y the line and x the only
 * periodic dimension (slabs along y), x the line, no periodic dimension at all (real data
 * throughout), singular and Helmholtz problems, uniform and non-uniform cells. */
static const struct {
    const char *bc;  /* per dimension P, or the two faces' letters, e.g. "PPNN" is x and y
                      * periodic, z Neumann-Neumann */
    int stretched;   /* the non-uniform dimension, -1: none */
    double alpha;
} streamed_sets[] = {
    {"PPP", -1, 0},     {"PPNN", -1, 0},    {"PPDD", 2, 0},    {"PNNP", -1, 0.75},
    {"NDPP", -1, 0},    {"PDNDD", -1, 0},   {"NNDDNN", -1, 0}, {"NNNNNN", -1, 0},
    {"PPP", -1, 3.0},   {"DDPND", 2, 0},
};
static const int streamed_sizes[][3] = {{17, 19, 23}, {16, 12, 10}, {7, 9, 11}, {24, 8, 33},
                                        {13, 9, 8},   {31, 7, 20},  {9, 17, 5}, {12, 12, 12}};
/* Grids whose planes are small beside a rank's share of them (x and y long), so that a
 * quarter of the memory of one chunk per pass still holds the pipeline's slots of a plane. */
static const int auto_sizes[][3] = {{48, 48, 10}, {40, 44, 12}, {45, 47, 9}};
enum { NSETS = sizeof streamed_sets / sizeof streamed_sets[0], NSTREAMED = 3 * NSETS };

/* The budgets of the streamed cases: every boundary set meets each of them. */
enum { BUDGET_ALL, BUDGET_TWO, BUDGET_SMALL };

/* Streamed case i: boundary set i % NSETS, budget (i / NSETS) % 3, the sizes, precision,
 * batch, placement and boxes rotating with i. */
static pcase make_streamed_case(int i, int *budget)
{
    pcase c;
    memset(&c, 0, sizeof c);
    *budget = (i / NSETS) % 3;
    memcpy(c.n, *budget == BUDGET_SMALL ? auto_sizes[i % 3] : streamed_sizes[i % 8],
           sizeof c.n);
    c.prec = (i / 2) % 2 ? TIDE_FLOAT : TIDE_DOUBLE;
    c.batch = i % 7 == 3 ? 3 : 1;
    c.inplace = (i / 3) % 2;
    c.lay = i % 4 == 1 ? LAY_SLAB : LAY_NULL;
    memcpy(c.h, spacings[i % 4], sizeof c.h);
    c.seed = 7000u + (unsigned)i;
    c.stretched = -1;
    const char *b = streamed_sets[i % NSETS].bc;
    tt_rng rng;
    tt_rng_seed(&rng, c.seed);
    for (int d = 0; d < 3; d++) {
        if (*b == 'P') {
            b++;
            continue;
        }
        c.bc[d][0] = *b++ == 'N' ? TIDE_BC_NEUMANN : TIDE_BC_DIRICHLET;
        c.bc[d][1] = *b++ == 'N' ? TIDE_BC_NEUMANN : TIDE_BC_DIRICHLET;
        if (d == streamed_sets[i % NSETS].stretched) {
            c.stretched = d;
            random_faces(c.z, c.n[d], c.h[d], &rng);
        }
    }
    c.alpha = streamed_sets[i % NSETS].alpha;
    return c;
}

/* The dimension whose slabs a streamed solve takes (tide.h: tide_out_of_card): y when y is the
 * line or x the only periodic dimension, else x. */
static int streamed_outer(const pcase *c)
{
    int L = line_dim(c->bc, c->stretched), half = -1;
    for (int d = 0; d < 3; d++)
        half = is_bounded(c->bc, d) ? half : d;
    return L == 1 || (L != 0 && half == 0) ? 1 : 0;
}

/* Case c's options, streamed as mode says. */
static void streamed_options(const pcase *c, tide_out_of_card mode, tide_poisson_options *o)
{
    tide_poisson_options_init(o);
    o->precision = c->prec;
    o->batch = c->batch;
    o->alpha = c->alpha;
    memcpy(o->h, c->h, sizeof o->h);
    memcpy(o->bc, c->bc, sizeof o->bc);
    case_faces(c, o->faces);
    o->out_of_card = mode;
}

/* The device memory case c's solve takes streamed by scheme mode on ctx (the default budget:
 * one chunk per pass), the largest of the ranks' (0: no plan). */
static size_t one_chunk_bytes(tide_context *ctx, const pcase *c, tide_out_of_card mode)
{
    tide_poisson_options o;
    streamed_options(c, mode, &o);
    tide_poisson_plan *plan = NULL;
    unsigned long long b = 0;
    if (tide_poisson_plan_create(ctx, c->n, NULL, &o, &plan) == 0) {
        tide_poisson_info info;
        tide_poisson_plan_info(plan, &info);
        b = info.device_bytes;
        tide_poisson_plan_destroy(plan);
    }
    MPI_Allreduce(MPI_IN_PLACE, &b, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm);
    return (size_t)b;
}

/* f) The CPU's x transforms around one pass through the GPU (TIDE_OOC_STREAM_CPU_X): each
 * boundary set with the default budget and with a quarter of what one chunk per pass takes
 * (many chunks); on one rank with x periodic the plan's info and the checks of a), else
 * TIDE_ERR_UNSUPPORTED on every rank. Returns the solves that ran. */
static int streamed_cpu_x(tide_context *main_ctx)
{
    int ran = 0;
    for (int i = 0; i < 2 * NSETS; i++) {
        int budget;
        pcase c = make_streamed_case(i % NSETS + NSETS * (i / NSETS ? BUDGET_SMALL : 0),
                                     &budget);
        char desc[320];
        case_str(&c, desc, sizeof desc);
        snprintf(desc + strlen(desc), sizeof desc - strlen(desc), " streamed, the CPU's x "
                 "transforms (%s)", budget ? "a quarter budget" : "default budget");
        if (verbose && rank == 0) {
            printf("case: %s\n", desc);
            fflush(stdout);
        }
        int able = nranks == 1 && !is_bounded(c.bc, 0) && c.stretched != 0;
        tide_poisson_options opts;
        streamed_options(&c, TIDE_OOC_STREAM_CPU_X, &opts);
        tide_context_options copts;
        tide_context_options_init(&copts);
        copts.device_budget =
            budget && able ? one_chunk_bytes(main_ctx, &c, TIDE_OOC_STREAM_CPU_X) / 4 : 0;
        tide_context *ctx = NULL;
        int st = tide_context_create(comm, &copts, &ctx);
        if (!tt_check(&tally, comm, st == 0, "%s: context: %s", desc, tide_strerror(st)))
            continue;
        tide_poisson_plan *plan = NULL;
        st = tide_poisson_plan_create(ctx, c.n, NULL, &opts, &plan);
        if (!able) {
            const char *msg = tide_last_error(ctx);
            tt_check(&tally, comm, st == TIDE_ERR_UNSUPPORTED && strstr(msg, "x transforms"),
                     "%s: wanted TIDE_ERR_UNSUPPORTED (%d ranks, x %s), got %s: %s", desc,
                     nranks, is_bounded(c.bc, 0) ? "bounded" : "periodic", tide_strerror(st),
                     msg);
        } else if (tt_check(&tally, comm, st == 0, "%s: plan_create: %s: %s", desc,
                            tide_strerror(st), tide_last_error(ctx))) {
            tide_box box;
            tide_poisson_info info;
            tide_fft_cost cost;
            char steps[512] = "";
            tide_poisson_plan_box(plan, &box);
            tide_poisson_plan_info(plan, &info);
            tide_poisson_plan_cost(plan, &cost);
            tide_poisson_plan_describe(plan, steps, sizeof steps);
            if (verbose && rank == 0)
                printf("    rank 0: %s (%d chunks, CPU %.3g s)\n", steps, info.chunks,
                       cost.cpu_seconds);
            int ok = info.cpu_transforms == 1 && info.round_trips == 1 &&
                     info.backend == TIDE_BACKEND_CUDA && info.exchanges == 0 &&
                     (budget ? info.chunks >= 2 : info.chunks == 1) &&
                     cost.cpu_seconds > 0 && strncmp(steps, "cpu ", 4) == 0 &&
                     tt_box_count(&box) == (long long)c.n[0] * c.n[1] * c.n[2];
            if (check_local(ok, "%s: plan: cpu_transforms %d, %d round trips, backend %d, %d "
                            "exchanges, %d chunks, CPU %.3g s, steps \"%s\"", desc,
                            info.cpu_transforms, info.round_trips, (int)info.backend,
                            info.exchanges, info.chunks, cost.cpu_seconds, steps)) {
                check_solve(ctx, &c, desc, plan, &box, &opts);
                ran++;
            }
        }
        tide_poisson_plan_destroy(plan);
        tide_context_destroy(ctx);
    }
    return ran;
}

/* f) Streamed solves, each on a context of its own device budget: the whole solve forced to
 * stream with the default budget (one chunk per pass), with three quarters of what that takes
 * (two chunks or more), and with backend auto and a quarter of it, too small for the solve in
 * device memory, which then streams by itself in many chunks. The plan's box is the slabs,
 * its info says streamed; then the checks of a). */
static void streamed(tide_context *main_ctx)
{
    double t0 = MPI_Wtime();
    int before = tally.failed, fewest = 1 << 30, most = 0;
    worst_residual = worst_mean = 0;
    for (int i = 0; i < NSTREAMED; i++) {
        int budget;
        pcase c = make_streamed_case(i, &budget);
        char desc[320];
        case_str(&c, desc, sizeof desc);
        static const char *const bname[] = {"forced, default budget", "forced, two chunks",
                                            "auto, a small budget"};
        snprintf(desc + strlen(desc), sizeof desc - strlen(desc), " streamed (%s)",
                 bname[budget]);
        if (verbose && rank == 0) {
            printf("case: %s\n", desc);
            fflush(stdout);
        }
        size_t one = budget == BUDGET_ALL ? 0 : one_chunk_bytes(main_ctx, &c, TIDE_OOC_STREAM);
        tide_context_options copts;
        tide_context_options_init(&copts);
        copts.backend = TIDE_BACKEND_AUTO;
        copts.device_budget = budget == BUDGET_TWO ? one / 4 * 3 : one / 4;
        tide_context *ctx = NULL;
        int st = tide_context_create(comm, &copts, &ctx);
        if (!tt_check(&tally, comm, st == 0, "%s: context: %s", desc, tide_strerror(st)))
            continue;
        int o = streamed_outer(&c);
        tide_box *all = tt_xmalloc((size_t)nranks * sizeof *all), want;
        tt_tiling_slabs(c.n, o, nranks, all);
        want = all[rank];
        free(all);
        tide_poisson_options opts;
        streamed_options(&c, budget == BUDGET_SMALL ? TIDE_OOC_AUTO : TIDE_OOC_STREAM, &opts);
        tide_poisson_plan *plan = NULL;
        st = tide_poisson_plan_create(ctx, c.n, c.lay == LAY_NULL ? NULL : &want, &opts, &plan);
        if (tt_check(&tally, comm, st == 0, "%s: plan_create: %s: %s", desc, tide_strerror(st),
                     tide_last_error(ctx))) {
            tide_box box;
            tide_poisson_info info;
            char steps[512] = "";
            tide_poisson_plan_box(plan, &box);
            tide_poisson_plan_info(plan, &info);
            tide_poisson_plan_describe(plan, steps, sizeof steps);
            if (verbose && rank == 0)
                printf("    rank 0: %s (%d chunks, %zu device bytes, budget %zu)\n", steps,
                       info.chunks, info.device_bytes, copts.device_budget);
            int ok = same_box(&box, &want) && info.backend == TIDE_BACKEND_CUDA &&
                     info.location == TIDE_LOCATION_HOST && info.round_trips == 3 &&
                     info.exchanges == (nranks > 1 ? 2 : 0) &&
                     (budget == BUDGET_ALL ? info.chunks == 1 : info.chunks >= 2) &&
                     strncmp(steps, "stream[", 7) == 0;
            char bs[96];
            if (check_local(ok, "%s: streamed plan: box %s (slabs along %c wanted), backend %d, "
                            "location %d, %d round trips, %d exchanges, %d chunks, steps \"%s\"",
                            desc, tt_box_str(&box, bs, sizeof bs), "xy"[o], (int)info.backend,
                            (int)info.location, info.round_trips, info.exchanges, info.chunks,
                            steps)) {
                fewest = info.chunks < fewest ? info.chunks : fewest;
                most = info.chunks > most ? info.chunks : most;
                check_solve(ctx, &c, desc, plan, &box, &opts);
            }
        }
        tide_poisson_plan_destroy(plan);
        tide_context_destroy(ctx);
    }
    MPI_Allreduce(MPI_IN_PLACE, &fewest, 1, MPI_INT, MPI_MIN, comm);
    MPI_Allreduce(MPI_IN_PLACE, &most, 1, MPI_INT, MPI_MAX, comm);
    tt_check(&tally, comm, fewest == 1 && most >= 4, "f) streamed solves ran with %d to %d "
             "chunks per pass; one and at least four wanted", fewest, most);
    int cpu_x = streamed_cpu_x(main_ctx);
    if (rank == 0)
        printf("  f) %d streamed cases, %d to %d chunks per pass, %d with the CPU's x "
               "transforms: %d failed checks (%.1f s); largest residual %.2g and mean error "
               "%.2g of their tolerances\n", NSTREAMED + 2 * NSETS, fewest, most, cpu_x,
               tally.failed - before, MPI_Wtime() - t0, worst_residual, worst_mean);
}

/* ---- b), c) an analytic solution ------------------------------------------------------------ */

/*
 * u = s_f X(x) Y(y) Z(z), s_f = 1 for field 0 and -0.5 for field 1, f = (lap - alpha) u =
 * -(k2 + alpha) u. The mode numbers are m = 1, 2, 1 along x, y, z. Each dimension is periodic
 * or bounded by its own face pair. Along a periodic dimension (points x = i h, h = L / n):
 * sin(2 pi x / Lx), cos(4 pi y / Ly), sin(2 pi z / Lz + 0.3), k = 2 pi m / L. Along a bounded
 * one (cell centres, s = x - z_0 measured from the low face, L = z_n - z_0) the mode fitting
 * its faces: cos(pi m s / L) (NN), sin(pi m s / L) (DD), cos(pi (m + 1/2) s / L) (ND),
 * sin(pi (m + 1/2) s / L) (DN). One bounded dimension may have stretched cells.
 */
enum { PER = -1 }; /* trig.pair of a periodic dimension */

typedef struct {
    int n[3];
    double L[3], alpha;
    int pair[3];    /* per dimension its faces (face_pairs), PER: periodic */
    int sd;         /* the stretched dimension (a bounded one), -1: uniform cells everywhere */
    double stretch; /* b: sd's faces 0.25 + L (1 + tanh(b (2k/n - 1)) / tanh b) / 2 */
    double gain;    /* the solve must return gain u (1; see spectral) */
    double z[MAXF]; /* sd's faces */
} trig;

static const int trig_m[3] = {1, 2, 1};

static trig trig_make(const int n[3], double alpha, const int pair[3], int sd, double stretch)
{
    trig t = {{n[0], n[1], n[2]}, {1.0, 2.0, 1.5}, alpha, {pair[0], pair[1], pair[2]}, sd,
              stretch, 1.0, {0}};
    /* The stretched faces start at 0.25, not 0: the solver must measure from the low face. */
    for (int k = 0; sd >= 0 && k <= n[sd]; k++)
        t.z[k] = 0.25 + t.L[sd] * (1 + tanh(stretch * (2.0 * k / n[sd] - 1)) / tanh(stretch)) / 2;
    return t;
}

static void trig_bc(const trig *t, tide_bc bc[3][2])
{
    for (int d = 0; d < 3; d++)
        for (int f = 0; f < 2; f++)
            bc[d][f] = t->pair[d] == PER ? TIDE_BC_PERIODIC : face_pairs[t->pair[d]][f];
}

/* Face k of bounded dimension d. */
static double trig_face(const trig *t, int d, int k)
{
    return d == t->sd ? t->z[k] : k * (t->L[d] / t->n[d]);
}

static double trig_scale(int field) { return field ? -0.5 : 1.0; }

/* The wave number along d. */
static double trig_k(const trig *t, int d)
{
    if (t->pair[d] == PER)
        return 2 * M_PI * trig_m[d] / t->L[d];
    int quarter = t->pair[d] >= 2; /* ND, DN: a quarter wave more than a whole number of halves */
    return M_PI * (trig_m[d] + 0.5 * quarter) / t->L[d];
}

static double trig_k2(const trig *t)
{
    return trig_k(t, 0) * trig_k(t, 0) + trig_k(t, 1) * trig_k(t, 1) + trig_k(t, 2) * trig_k(t, 2);
}

/* The factor along d at index i. */
static double trig_factor(const trig *t, int d, int i)
{
    double k = trig_k(t, d);
    if (t->pair[d] == PER) {
        double x = i * (t->L[d] / t->n[d]);
        return d == 0 ? sin(k * x) : d == 1 ? cos(k * x) : sin(k * x + 0.3);
    }
    double s = (trig_face(t, d, i) + trig_face(t, d, i + 1)) / 2 - trig_face(t, d, 0);
    int cosine = face_pairs[t->pair[d]][0] == TIDE_BC_NEUMANN; /* zero slope at the low face */
    return cosine ? cos(k * s) : sin(k * s);
}

/* The analytic solution. */
static double trig_exact(const trig *t, int field, const int p[3])
{
    return trig_scale(field) * trig_factor(t, 0, p[0]) * trig_factor(t, 1, p[1]) *
           trig_factor(t, 2, p[2]);
}

/* What the solve must return. */
static double trig_u(const void *arg, int field, const int p[3])
{
    const trig *t = arg;
    return t->gain * trig_exact(t, field, p);
}

static double trig_f(const void *arg, int field, const int p[3])
{
    const trig *t = arg;
    return -(trig_k2(t) + t->alpha) * trig_exact(t, field, p);
}

/* Solves the trig problem on grid n (double, batch fields, eigen) in the given layout; returns
 * max |u - gain u_exact| over everything, or NAN when a step failed (reported as a check). */
static double trig_solve(tide_context *ctx, const trig *t, int batch, tide_eigen eigen,
                         lay_kind lay, const char *desc)
{
    tide_box want = make_box(t->n, lay, lay == LAY_RANDOM ? 3 : 1, 0, 77u); /* y-slabs, y-pencils */
    tide_poisson_options o;
    tide_poisson_options_init(&o);
    o.batch = batch;
    o.alpha = t->alpha;
    o.eigen = eigen;
    for (int d = 0; d < 3; d++)
        o.h[d] = t->L[d] / t->n[d];
    /* The same problem as a residual case, for the oracle and the tolerance. */
    pcase pc = {.prec = TIDE_DOUBLE, .alpha = t->alpha, .stretched = t->sd};
    memcpy(pc.n, t->n, sizeof pc.n);
    memcpy(pc.h, o.h, sizeof pc.h);
    trig_bc(t, pc.bc);
    memcpy(pc.z, t->z, sizeof pc.z);
    memcpy(o.bc, pc.bc, sizeof o.bc);
    case_faces(&pc, o.faces);
    o.location = arrays_location();
    tide_poisson_plan *plan = NULL;
    int st = tide_poisson_plan_create(ctx, t->n, lay == LAY_NULL ? NULL : &want, &o, &plan);
    if (!tt_check(&tally, comm, st == 0, "%s: plan_create: %s: %s", desc, tide_strerror(st),
                  tide_last_error(ctx)))
        return NAN;
    tide_box box;
    tide_poisson_plan_box(plan, &box);
    size_t bytes = (size_t)tt_box_count(&box) * (size_t)batch * sizeof(double);
    double *f = tt_xmalloc(bytes), *u = tt_xmalloc(bytes), *fa = tt_xmalloc(bytes);
    fill_fn(f, &box, batch, TIDE_DOUBLE, trig_f, t);
    st = run_solve(plan, f, bytes, 0, u, fa);
    double err = NAN;
    if (tt_check(&tally, comm, st == 0, "%s: solve: %s: %s", desc, tide_strerror(st),
                 tide_last_error(ctx))) {
        err = max_dist(u, &box, batch, TIDE_DOUBLE, trig_u, t);
        if (eigen == TIDE_EIGEN_FD2) {
            /* The discrete equation holds here too (smooth data rather than random). */
            tide_ref_error e = {0, 0, 0};
            int singular = is_singular(t->alpha, pc.bc);
            st = tide_ref_poisson_residual(comm, t->n, o.h, pc.bc, o.faces, t->alpha, singular,
                                           TIDE_DOUBLE, batch, &box, f, u, &e);
            double tol = residual_tol(&pc, singular);
            tt_check(&tally, comm, st == 0 && e.max_abs <= tol * e.max_ref,
                     "%s: residual: status %d, max %.3g of max|f| %.3g (tol %.3g relative)", desc,
                     st, e.max_abs, e.max_ref, tol);
        }
    }
    free(f);
    free(u);
    free(fa);
    tide_poisson_plan_destroy(plan);
    return err;
}

/* The face pairs of b) and c) (face_pairs' order). */
enum { NN, DD, ND, DN };

/*
 * b) Second order: for one Fourier mode the FD2 solution is u_exact times
 * (k2 + alpha) / (k2_h + alpha), k2_h = sum 4 sin^2(k_d h_d / 2) / h_d^2 = k2 (1 - O(h^2)), so
 * the error falls by 4 from n to 2n up to higher-order terms and the sampling of the maximum.
 * A bounded dimension's mode is an eigenvector of the uniform cell-centred operator as well
 * (eigenvalue 2 (cos(k h) - 1) / h^2, the faces' ghost values matching its symmetry), and on
 * the smoothly stretched cells the finite-volume scheme still converges at second order,
 * though its local truncation error is first order where neighbouring widths differ. The
 * ratios, computed beforehand from the discrete problem (the uniform dimensions' factors
 * scaled by their eigenvalues, times a 1D solve along the stretched one), lie in 3.96 to 4.06
 * (periodic), 3.77 to 3.99 (one to three uniform bounded dimensions) and 3.72 to 4.04 (one of
 * them stretched). [3.5, 4.5] admits those and nothing of another order (first order: 2,
 * spectral or exact: rounding, wrong: ~1).
 */
static void convergence(tide_context *ctx)
{
    static const struct {
        int n[3];
        double alpha;
        lay_kind lay;
        int pair[3];    /* per dimension (trig) */
        int sd;         /* the stretched dimension, -1: none */
        double stretch; /* its tanh stretching (trig) */
    } cfg[] = {{{12, 12, 12}, 0, LAY_NULL, {PER, PER, PER}, -1, 0},
               {{12, 16, 10}, 2.5, LAY_RANDOM, {PER, PER, PER}, -1, 0},
               {{12, 12, 12}, 0, LAY_NULL, {NN, PER, PER}, -1, 0},
               {{12, 16, 10}, 0, LAY_RANDOM, {PER, DD, PER}, -1, 0},
               {{10, 12, 12}, 2.5, LAY_SLAB, {PER, PER, ND}, -1, 0},
               {{12, 10, 8}, 0, LAY_PENCIL, {DN, PER, PER}, -1, 0},
               {{12, 16, 12}, 0, LAY_RANDOM, {PER, ND, PER}, 1, 1.2},
               {{12, 12, 16}, 0, LAY_NULL, {PER, PER, DD}, 2, 1.5},
               {{10, 12, 8}, 1.5, LAY_SLAB, {ND, DD, PER}, -1, 0},
               {{12, 10, 14}, 0, LAY_RANDOM, {DN, NN, DD}, -1, 0},
               {{12, 16, 10}, 0, LAY_PENCIL, {DD, PER, NN}, 0, 1.2},
               {{12, 12, 12}, 0, LAY_NULL, {NN, DN, ND}, 1, 1.5},
               {{10, 12, 12}, 0, LAY_RANDOM, {NN, NN, NN}, 2, 1.2}};
    for (size_t i = 0; i < sizeof cfg / sizeof cfg[0]; i++) {
        double err[2];
        char desc[200], bcs[48];
        for (int s = 0; s < 2; s++) {
            const int n[3] = {cfg[i].n[0] << s, cfg[i].n[1] << s, cfg[i].n[2] << s};
            trig t = trig_make(n, cfg[i].alpha, cfg[i].pair, cfg[i].sd, cfg[i].stretch);
            tide_bc bc[3][2];
            trig_bc(&t, bc);
            bc_str(bc, t.sd, bcs, sizeof bcs);
            snprintf(desc, sizeof desc, "b) convergence n=%dx%dx%d alpha=%g box=%s%s", t.n[0],
                     t.n[1], t.n[2], t.alpha, lay_names[cfg[i].lay], bcs);
            err[s] = trig_solve(ctx, &t, 2, TIDE_EIGEN_FD2, cfg[i].lay, desc);
            if (s == 0)
                continue;
            double ratio = err[0] / err[1];
            tt_check(&tally, comm, ratio >= 3.5 && ratio <= 4.5,
                     "%s: error %.4g at n, %.4g at 2n: ratio %.3f not in [3.5, 4.5]", desc,
                     err[0], err[1], ratio);
            if (rank == 0)
                printf("  b) alpha=%g%s: max error %.4g -> %.4g, ratio %.3f\n", cfg[i].alpha,
                       bcs, err[0], err[1], ratio);
        }
    }
}

/*
 * c) Spectral eigenvalues invert the continuous Laplacian exactly on the modes the grid
 * resolves (|k| < n/2 along a periodic dimension, k < n along a bounded one: here m = 1, 2, 1
 * with n >= 5), so u_exact comes back to rounding: the transforms' ~eps log2 N times the ratio
 * of the eigenvalue of the solution's modes to the smallest one (< 50 here), ~1e-13; 1e-11 of
 * max|u| = 1 leaves room and still fails any discretisation error (FD2 is off by 1e-2 on these
 * grids). Along the real-to-real transformed bounded dimensions the modes are the transforms'
 * basis functions (DCT-II cos(pi k (i + 1/2) / n), DST-II, DCT-IV, DST-IV with k' = k, k + 1,
 * k + 1/2 at the cell centres), with the continuous eigenvalues -(pi k' / L)^2. The bounded
 * dimension solved along lines (line_dim) keeps its finite-volume rows, whose
 * eigenvalue on the mode is 2 (cos(k h) - 1) / h^2 exactly (see b)): there the solve returns
 * u_exact times gain = (k2 + alpha) / (k2 - k_L^2 + 4 sin^2(k_L h_L / 2) / h_L^2 + alpha),
 * known to rounding as well, and gain differs from 1 by ~1e-2 on these grids.
 */
static void spectral(tide_context *ctx)
{
    static const struct {
        int n[3];
        double alpha;
        lay_kind lay;
        int pair[3]; /* per dimension (trig) */
    } cfg[] = {{{7, 9, 11}, 0, LAY_NULL, {PER, PER, PER}},
               {{13, 5, 8}, 1.25, LAY_RANDOM, {PER, PER, PER}},
               {{16, 12, 10}, 0, LAY_PENCIL, {PER, PER, PER}},
               {{6, 10, 5}, 4.0, LAY_SLAB, {PER, PER, PER}},
               {{9, 7, 8}, 0, LAY_RANDOM, {DN, PER, ND}},
               {{7, 6, 9}, 1.25, LAY_NULL, {NN, DD, DN}},
               {{8, 9, 6}, 0, LAY_PENCIL, {DD, ND, PER}}};
    for (size_t i = 0; i < sizeof cfg / sizeof cfg[0]; i++) {
        trig t = trig_make(cfg[i].n, cfg[i].alpha, cfg[i].pair, -1, 0);
        tide_bc bc[3][2];
        trig_bc(&t, bc);
        int L = line_dim(bc, -1);
        if (L >= 0) {
            double k = trig_k(&t, L), h = t.L[L] / t.n[L], s = sin(k * h / 2);
            t.gain = (trig_k2(&t) + t.alpha) /
                     (trig_k2(&t) - k * k + 4 * s * s / (h * h) + t.alpha);
        }
        char desc[200], bcs[48];
        bc_str(bc, -1, bcs, sizeof bcs);
        snprintf(desc, sizeof desc, "c) spectral n=%dx%dx%d alpha=%g box=%s%s", t.n[0], t.n[1],
                 t.n[2], t.alpha, lay_names[cfg[i].lay], bcs);
        double err = trig_solve(ctx, &t, i % 2 ? 2 : 1, TIDE_EIGEN_SPECTRAL, cfg[i].lay, desc);
        tt_check(&tally, comm, err <= 1e-11, "%s: max |u - gain u_exact| = %.3g (tol 1e-11, "
                 "gain %.6f)", desc, err, t.gain);
        if (verbose && rank == 0)
            printf("  %s: max |u - gain u_exact| %.3g (gain %.6f)\n", desc, err, t.gain);
    }
}

/* ---- d) constant right-hand sides ----------------------------------------------------------- */

static const double constants[] = {0.37, -1.25, 2.0};

static double const_f(const void *arg, int field, const int p[3])
{
    (void)arg, (void)p;
    return constants[field];
}

/* -f / alpha (Helmholtz), 0 (Poisson: f - mean(f) = 0). */
static double const_u(const void *arg, int field, const int p[3])
{
    (void)p;
    double alpha = *(const double *)arg;
    return alpha > 0 ? -constants[field] / alpha : 0;
}

/*
 * d) A constant f is the zero mode alone where every dimension is periodic or Neumann on both
 * faces, any number of them Neumann (constants are in the kernel of their operators, uniform
 * or not, and the weighted mean of a constant is the constant). Helmholtz: u = -f/alpha
 * exactly; Poisson: the zero mode is removed, u = 0. (A Dirichlet face makes u vary: a)
 * checks those.) The transforms spread rounding of ~eps log2(N) |f| over the other modes,
 * which the solve divides by at least alpha (Helmholtz) or mu_min (Poisson), so
 * max|u - u_exact| <= round_tol |f| G (inverse_bound: 1 / alpha or 1 / mu_min); the reported
 * mean must be the constant to round_tol relative.
 */
static void constant_rhs(tide_context *ctx)
{
    static const struct {
        int n[3];
        tide_precision prec;
        double alpha;
        lay_kind lay;
        int inplace;
        int neumann; /* bit d: dimension d Neumann on both faces, else periodic */
        int sd;      /* the one on random cells, -1: none */
    } cfg[] = {{{7, 9, 11}, TIDE_DOUBLE, 2.5, LAY_RANDOM, 0, 0, -1},
               {{13, 5, 8}, TIDE_FLOAT, 0.4, LAY_NULL, 1, 0, -1},
               {{11, 13, 17}, TIDE_DOUBLE, 0, LAY_SLAB, 1, 0, -1},
               {{5, 1, 6}, TIDE_FLOAT, 0, LAY_RANDOM, 0, 0, -1},
               {{9, 7, 6}, TIDE_DOUBLE, 0, LAY_RANDOM, 0, 2, 1},
               {{8, 6, 11}, TIDE_FLOAT, 1.5, LAY_PENCIL, 1, 4, 2},
               {{10, 7, 5}, TIDE_FLOAT, 0, LAY_NULL, 0, 1, -1},
               {{6, 7, 5}, TIDE_DOUBLE, 0, LAY_RANDOM, 0, 7, -1},
               {{7, 5, 9}, TIDE_FLOAT, 0, LAY_NULL, 1, 7, 0},
               {{9, 8, 6}, TIDE_DOUBLE, 1.5, LAY_PENCIL, 0, 5, 2},
               {{5, 6, 7}, TIDE_FLOAT, 0.8, LAY_SLAB, 1, 7, -1},
               {{2, 1, 9}, TIDE_DOUBLE, 0, LAY_RANDOM, 1, 3, 1}};
    for (size_t i = 0; i < sizeof cfg / sizeof cfg[0]; i++) {
        pcase pc = {.prec = cfg[i].prec, .alpha = cfg[i].alpha, .h = {1, 1, 1}, .stretched = -1};
        memcpy(pc.n, cfg[i].n, sizeof pc.n);
        tt_rng rng;
        tt_rng_seed(&rng, 4000u + (unsigned)i);
        for (int d = 0; d < 3; d++)
            if (cfg[i].neumann >> d & 1)
                set_bounded(&pc, d, 0, d == cfg[i].sd, &rng); /* Neumann-Neumann */
        char desc[200], bcs[48];
        bc_str(pc.bc, pc.stretched, bcs, sizeof bcs);
        snprintf(desc, sizeof desc, "d) constant f n=%dx%dx%d %s alpha=%g box=%s%s%s",
                 cfg[i].n[0], cfg[i].n[1], cfg[i].n[2],
                 cfg[i].prec == TIDE_FLOAT ? "float" : "double", cfg[i].alpha,
                 lay_names[cfg[i].lay], cfg[i].inplace ? " in-place" : "", bcs);
        const int batch = 3;
        tide_box want = make_box(cfg[i].n, cfg[i].lay, cfg[i].lay == LAY_RANDOM ? 4 : 2, 1, 99u);
        tide_poisson_options o;
        tide_poisson_options_init(&o);
        o.precision = cfg[i].prec;
        o.batch = batch;
        o.alpha = cfg[i].alpha;
        memcpy(o.bc, pc.bc, sizeof o.bc);
        case_faces(&pc, o.faces);
        o.location = arrays_location();
        tide_poisson_plan *plan = NULL;
        int st = tide_poisson_plan_create(ctx, cfg[i].n, cfg[i].lay == LAY_NULL ? NULL : &want,
                                          &o, &plan);
        if (!tt_check(&tally, comm, st == 0, "%s: plan_create: %s: %s", desc,
                      tide_strerror(st), tide_last_error(ctx)))
            continue;
        tide_box box;
        tide_poisson_plan_box(plan, &box);
        size_t rsize = cfg[i].prec == TIDE_FLOAT ? sizeof(float) : sizeof(double);
        size_t bytes = (size_t)tt_box_count(&box) * batch * rsize;
        void *f = tt_xmalloc(bytes), *u = tt_xmalloc(bytes), *fa = tt_xmalloc(bytes);
        fill_fn(f, &box, batch, cfg[i].prec, const_f, NULL);
        st = run_solve(plan, f, bytes, cfg[i].inplace, u, fa);
        if (tt_check(&tally, comm, st == 0, "%s: solve: %s: %s", desc, tide_strerror(st),
                     tide_last_error(ctx))) {
            double r = round_tol(cfg[i].prec, cfg[i].n), fbig = 2.0; /* max |f| */
            double err = max_dist(u, &box, batch, cfg[i].prec, const_u, &cfg[i].alpha);
            double utol = r * fbig * inverse_bound(&pc, cfg[i].alpha == 0);
            tt_check(&tally, comm, err <= utol, "%s: max |u - u_exact| = %.3g (tol %.3g)", desc,
                     err, utol);
            if (verbose && rank == 0)
                printf("  %s: max |u - u_exact| %.3g (tol %.3g)\n", desc, err, utol);
            double mean[3] = {NAN, NAN, NAN};
            st = tide_poisson_mean(plan, mean);
            int ok = st == 0;
            for (int k = 0; k < batch; k++)
                ok = ok && fabs(mean[k] - constants[k]) <= r * fabs(constants[k]);
            tt_check(&tally, comm, ok, "%s: tide_poisson_mean: status %d, %.17g %.17g %.17g, "
                     "want %g %g %g", desc, st, mean[0], mean[1], mean[2], constants[0],
                     constants[1], constants[2]);
        }
        free(f);
        free(u);
        free(fa);
        tide_poisson_plan_destroy(plan);
    }
}

/* ---- e) bad input --------------------------------------------------------------------------- */

#define BIT(code) (1u << (code))
/* What a failed create must leave in the plan pointer: an address no allocation returns. */
static char plan_sentinel_storage;
#define PLAN_SENTINEL ((tide_poisson_plan *)&plan_sentinel_storage)

/*
 * Collective: a call failed properly: every rank got the same status, one of allowed, and
 * the same non-empty tide_last_error() message; untouched: this rank's outputs were left alone.
 */
static void expect_error(const char *what, int st, const char *msg, unsigned allowed,
                         int untouched)
{
    tt_expect_error(&tally, comm, "e", what, st, msg, allowed, untouched, 1);
}

static const int EN[3] = {8, 6, 5}; /* x-slabs of 8 planes: no rank empty up to 6 ranks */

static void base_options(tide_poisson_options *o, tide_box *box)
{
    tide_poisson_options_init(o);
    tide_box *all = tt_xmalloc((size_t)nranks * sizeof *all);
    tt_tiling_slabs(EN, 0, nranks, all);
    *box = all[rank];
    free(all);
}

/* Whether msg names every '&'-separated group of words, a group by any of its '|'-separated
 * words, in any case (tt_mentions). */
static int mentions(const char *msg, const char *words)
{
    char group[64];
    for (const char *w = words; *w;) {
        size_t len = strcspn(w, "&");
        snprintf(group, sizeof group, "%.*s", (int)len, w);
        if (!tt_mentions(msg, group))
            return 0;
        w += len + (w[len] == '&');
    }
    return 1;
}

/* expect_error for a plan_create; words (NULL: no such check): the message must name the
 * problem with one of them (see mentions). */
static void expect_create_error_naming(tide_context *ctx, const char *what, const tide_box *box,
                                       const tide_poisson_options *o, unsigned allowed,
                                       const char *words)
{
    tide_poisson_plan *plan = PLAN_SENTINEL;
    int st = tide_poisson_plan_create(ctx, EN, box, o, &plan);
    /* A call that wrongly succeeded still must not leak. */
    if (st == 0 && plan != PLAN_SENTINEL)
        tide_poisson_plan_destroy(plan);
    const char *msg = tide_last_error(ctx);
    expect_error(what, st, msg, allowed, plan == PLAN_SENTINEL);
    if (words)
        check_local(mentions(msg, words), "e) %s: message \"%s\" names none of \"%s\"", what,
                    msg ? msg : "(null)", words);
}

static void expect_create_error(tide_context *ctx, const char *what, const tide_box *box,
                                const tide_poisson_options *o, unsigned allowed)
{
    expect_create_error_naming(ctx, what, box, o, allowed, NULL);
}

/* Bad faces and boundaries: faces on a periodic dimension, not strictly increasing, not
 * finite, different between ranks or missing on some, given on two dimensions; on a GPU
 * context, two or three bounded dimensions on backend cuda or device arrays. Every message
 * must name the problem. */
static void face_errors(tide_context *ctx)
{
    const unsigned ARG = BIT(TIDE_ERR_ARGUMENT), UNSUP = BIT(TIDE_ERR_UNSUPPORTED);
    const unsigned MISMATCH = BIT(TIDE_ERR_MISMATCH);
    const char *FACES = "faces";
    tide_poisson_options o;
    tide_box box;
    int last = nranks - 1;
    /* Valid faces for each dimension of EN (at most 8 cells), 0.1 apart and more. */
    double z[3][MAXF];
    for (int d = 0; d < 3; d++)
        for (int k = 0; k <= EN[d]; k++)
            z[d][k] = 0.1 * k + 0.01 * k * k;

    base_options(&o, &box);
    o.faces[1] = z[1];
    expect_create_error_naming(ctx, "faces[1] given, y periodic", &box, &o, ARG, FACES);
    base_options(&o, &box);
    o.bc[0][0] = o.bc[0][1] = TIDE_BC_NEUMANN;
    o.faces[0] = z[0];
    o.faces[2] = z[2];
    expect_create_error_naming(ctx, "x Neumann with faces[0], faces[2] given, z periodic", &box,
                               &o, ARG, FACES);
    base_options(&o, &box);
    o.bc[0][0] = o.bc[0][1] = TIDE_BC_DIRICHLET;
    z[0][4] = z[0][3];
    o.faces[0] = z[0];
    expect_create_error_naming(ctx, "x Dirichlet, faces[0] 3 and 4 equal", &box, &o, ARG, FACES);
    z[0][4] = 0.1 * 4 + 0.01 * 16;
    base_options(&o, &box);
    o.bc[1][0] = TIDE_BC_NEUMANN;
    o.bc[1][1] = TIDE_BC_DIRICHLET;
    double down[MAXF];
    for (int k = 0; k <= EN[1]; k++)
        down[k] = -z[1][k];
    o.faces[1] = down;
    expect_create_error_naming(ctx, "y Neumann-Dirichlet, faces[1] decreasing", &box, &o, ARG,
                               FACES);
    base_options(&o, &box);
    o.bc[2][0] = TIDE_BC_DIRICHLET;
    o.bc[2][1] = TIDE_BC_NEUMANN;
    double bad[MAXF];
    memcpy(bad, z[2], sizeof bad);
    bad[2] = NAN;
    o.faces[2] = bad;
    expect_create_error_naming(ctx, "z Dirichlet-Neumann, faces[2] with a NaN", &box, &o, ARG,
                               FACES);
    bad[2] = z[2][2];
    bad[EN[2]] = INFINITY;
    expect_create_error_naming(ctx, "z Dirichlet-Neumann, last of faces[2] inf", &box, &o, ARG,
                               FACES);

    /* Several bounded dimensions solve (a)), but at most one of them non-uniform. */
    base_options(&o, &box);
    o.bc[0][0] = o.bc[0][1] = TIDE_BC_NEUMANN;
    o.bc[2][0] = TIDE_BC_DIRICHLET;
    o.bc[2][1] = TIDE_BC_NEUMANN;
    o.faces[0] = z[0];
    o.faces[2] = z[2];
    expect_create_error_naming(ctx, "faces[0] and faces[2] given, x and z bounded", &box, &o,
                               UNSUP, "faces&0&2");
    base_options(&o, &box);
    for (int d = 0; d < 3; d++)
        o.bc[d][0] = o.bc[d][1] = TIDE_BC_DIRICHLET;
    o.faces[1] = z[1];
    o.faces[2] = z[2];
    expect_create_error_naming(ctx, "faces[1] and faces[2] given, every dimension bounded", &box,
                               &o, UNSUP, "faces&1&2");

    if (nranks > 1) {
        char what[96];
        base_options(&o, &box);
        o.bc[0][0] = o.bc[0][1] = TIDE_BC_NEUMANN;
        double mine[MAXF];
        memcpy(mine, z[0], sizeof mine);
        if (rank == last)
            mine[5] *= 1 + 1e-12;
        o.faces[0] = mine;
        snprintf(what, sizeof what, "faces[0][5] differing by 1e-12 on rank %d", last);
        expect_create_error_naming(ctx, what, &box, &o, MISMATCH, FACES);
        o.faces[0] = rank == 0 ? z[0] : NULL;
        expect_create_error_naming(ctx, "faces[0] given on rank 0 only", &box, &o, MISMATCH,
                                   FACES);
        memcpy(mine, z[0], sizeof mine);
        if (rank == last)
            mine[1] = NAN;
        o.faces[0] = mine;
        snprintf(what, sizeof what, "faces[0] with a NaN on rank %d only", last);
        expect_create_error_naming(ctx, what, &box, &o, ARG | MISMATCH, FACES);
    }
}

static void create_errors(tide_context *ctx)
{
    const unsigned ARG = BIT(TIDE_ERR_ARGUMENT), UNSUP = BIT(TIDE_ERR_UNSUPPORTED);
    tide_poisson_options o;
    tide_box box;
    int last = nranks - 1;

    base_options(&o, &box);
    o.alpha = -1;
    expect_create_error(ctx, "alpha = -1", &box, &o, ARG);
    base_options(&o, &box);
    o.alpha = NAN;
    expect_create_error(ctx, "alpha = NaN", &box, &o, ARG);
    base_options(&o, &box);
    o.alpha = INFINITY;
    expect_create_error(ctx, "alpha = inf", &box, &o, ARG);
    base_options(&o, &box);
    o.h[1] = 0;
    expect_create_error(ctx, "h[1] = 0", &box, &o, ARG);
    base_options(&o, &box);
    o.h[2] = -0.5;
    expect_create_error(ctx, "h[2] = -0.5", &box, &o, ARG);
    base_options(&o, &box);
    o.h[0] = NAN;
    expect_create_error(ctx, "h[0] = NaN", &box, &o, ARG);
    base_options(&o, &box);
    o.bc[0][1] = TIDE_BC_NEUMANN;
    expect_create_error(ctx, "bc x: periodic low face, Neumann high face", &box, &o, ARG);
    base_options(&o, &box);
    o.bc[2][0] = TIDE_BC_DIRICHLET;
    expect_create_error(ctx, "bc z: Dirichlet low face, periodic high face", &box, &o, ARG);
    base_options(&o, &box);
    o.bc[1][1] = (tide_bc)7;
    expect_create_error(ctx, "bc y high face 7 (no such bc)", &box, &o, ARG);
    base_options(&o, &box);
    o.eigen = (tide_eigen)5;
    expect_create_error(ctx, "eigen 5 (no such operator)", &box, &o, ARG);
    base_options(&o, &box);
    o.batch = 0;
    expect_create_error(ctx, "batch 0", &box, &o, ARG);
    base_options(&o, &box);
    o.size = 0;
    expect_create_error(ctx, "options size 0 (not from the init function)", &box, &o, ARG);
    base_options(&o, &box);
    o.location = TIDE_LOCATION_DEVICE;
    o.backend = TIDE_BACKEND_CPU;
    expect_create_error(ctx, "location device on the CPU backend", &box, &o, UNSUP);
    base_options(&o, &box);
    o.out_of_card = (tide_out_of_card)4;
    expect_create_error(ctx, "out_of_card 4 (no such mode)", &box, &o, ARG);
    base_options(&o, &box);
    o.out_of_card = TIDE_OOC_STREAM;
    o.location = TIDE_LOCATION_DEVICE;
    expect_create_error(ctx, "out_of_card stream with device arrays", &box, &o, ARG);
    base_options(&o, &box);
    o.out_of_card = TIDE_OOC_STREAM;
    o.backend = TIDE_BACKEND_CPU;
    expect_create_error(ctx, "out_of_card stream on the CPU backend", &box, &o, UNSUP);
    base_options(&o, &box);
    o.out_of_card = TIDE_OOC_STREAM_CPU_X;
    o.location = TIDE_LOCATION_DEVICE;
    expect_create_error(ctx, "out_of_card stream cpu-x with device arrays", &box, &o, ARG);
    if (nranks > 1) { /* z-slabs: a streamed solve takes x-slabs */
        base_options(&o, &box);
        o.out_of_card = TIDE_OOC_STREAM;
        tide_box *all = tt_xmalloc((size_t)nranks * sizeof *all);
        tt_tiling_slabs(EN, 2, nranks, all);
        box = all[rank];
        free(all);
        expect_create_error(ctx, "out_of_card stream with z-slabs", &box, &o, UNSUP);
    }

    if (nranks > 1) {
        char what[96];
        base_options(&o, &box);
        if (rank == last)
            o.alpha = 0.5;
        snprintf(what, sizeof what, "alpha 0.5 on rank %d, 0 elsewhere", last);
        expect_create_error(ctx, what, &box, &o, BIT(TIDE_ERR_MISMATCH));
        base_options(&o, &box);
        if (rank == last)
            o.h[2] = 1.0 + 1e-12;
        snprintf(what, sizeof what, "h[2] differing by 1e-12 on rank %d", last);
        expect_create_error(ctx, what, &box, &o, BIT(TIDE_ERR_MISMATCH));
        base_options(&o, &box);
        if (rank == 1)
            box.lo[0] -= 1; /* reaches into rank 0's planes */
        expect_create_error(ctx, "boxes overlapping (rank 1)", &box, &o, BIT(TIDE_ERR_BOX));
        base_options(&o, &box);
        expect_create_error(ctx, "box NULL on rank 0 only", rank == 0 ? NULL : &box, &o,
                            ARG | BIT(TIDE_ERR_MISMATCH));
    }
    base_options(&o, &box);
    if (rank == last)
        box.hi[0] -= 1; /* one plane of x nobody owns */
    expect_create_error(ctx, "boxes not covering the grid", &box, &o, BIT(TIDE_ERR_BOX));
    base_options(&o, &box);
    if (rank == last)
        box.order[1] = box.order[0]; /* not a permutation */
    expect_create_error(ctx, "storage order not a permutation", &box, &o,
                        ARG | BIT(TIDE_ERR_BOX));
}

/* At solve time: a NULL array where a rank has points fails on every rank, writes nothing,
 * and the plan still solves correctly afterwards. */
static void solve_errors(tide_context *ctx)
{
    tide_poisson_options o;
    tide_box box;
    base_options(&o, &box);
    tide_poisson_plan *plan = NULL;
    int st = tide_poisson_plan_create(ctx, EN, &box, &o, &plan);
    if (!tt_check(&tally, comm, st == 0, "e) plan for the solve errors: %s",
                  tide_last_error(ctx)))
        return;
    long long count = tt_box_count(&box);
    size_t bytes = (size_t)count * sizeof(double);
    double *f = tt_xmalloc(bytes), *u = tt_xmalloc(bytes), *u0 = tt_xmalloc(bytes);
    tide_ref_fill(f, &box, 1, 0, TIDE_DOUBLE, EN, 31);
    for (long long i = 0; i < count; i++)
        u0[i] = u[i] = 1234.5 + (double)i;
    int bad = nranks > 1 ? 1 : 0, last = nranks - 1;
    char what[96];

    snprintf(what, sizeof what, "solve with f NULL on rank %d (box not empty)", bad);
    st = tide_poisson_solve(plan, rank == bad ? NULL : f, u);
    expect_error(what, st, tide_last_error(ctx), BIT(TIDE_ERR_ARGUMENT),
                 memcmp(u, u0, bytes) == 0);
    snprintf(what, sizeof what, "solve with u NULL on rank %d (box not empty)", last);
    st = tide_poisson_solve(plan, f, rank == last ? NULL : u);
    expect_error(what, st, tide_last_error(ctx), BIT(TIDE_ERR_ARGUMENT),
                 memcmp(u, u0, bytes) == 0);
    st = tide_poisson_solve(NULL, f, u);
    tt_check(&tally, comm, st == TIDE_ERR_ARGUMENT, "e) solve with plan NULL: status %d (%s)",
             st, tide_strerror(st));
    st = tide_poisson_mean(plan, NULL);
    tt_check(&tally, comm, st == TIDE_ERR_ARGUMENT, "e) tide_poisson_mean(mean NULL): status %d",
             st);
    st = tide_poisson_plan_info(plan, NULL);
    tt_check(&tally, comm, st == TIDE_ERR_ARGUMENT, "e) plan_info(info NULL): status %d", st);

    /* The same plan still solves. */
    st = tide_poisson_solve(plan, f, u);
    tide_ref_error e = {0, 0, 0};
    const double h[3] = {1, 1, 1};
    int rst = tide_ref_poisson_residual(comm, EN, h, NULL, NULL, 0, 1, TIDE_DOUBLE, 1, &box, f, u,
                                        &e);
    pcase pc = {.n = {EN[0], EN[1], EN[2]}, .prec = TIDE_DOUBLE, .h = {1, 1, 1}, .stretched = -1};
    double tol = residual_tol(&pc, 1);
    tt_check(&tally, comm, st == 0 && rst == 0 && e.max_abs <= tol * e.max_ref,
             "e) solve after the failed ones: status %d (%s), residual %.3g of %.3g", st,
             tide_last_error(ctx), e.max_abs, e.max_ref);
    free(f);
    free(u);
    free(u0);
    tide_poisson_plan_destroy(plan);
}

/* ---- main ----------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    comm = MPI_COMM_WORLD;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nranks);
    if (rank == 0)
        printf("test_poisson on %d ranks (TIDE_TEST_VERBOSE=1 names each case as it starts)\n",
               nranks);

    /* TIDE_TEST_BACKEND=cuda: every solve on the GPU, host arrays streamed through it or (with
     * TIDE_TEST_LOCATION=device) device arrays; skipped (77) where no GPU is usable. */
    const char *be = getenv("TIDE_TEST_BACKEND"), *loc = getenv("TIDE_TEST_LOCATION");
    const char *verbose_env = getenv("TIDE_TEST_VERBOSE");
    verbose = verbose_env && verbose_env[0] && strcmp(verbose_env, "0") != 0;
    int cuda = be && !strcmp(be, "cuda");
    on_device = cuda && loc && !strcmp(loc, "device");
    if (cuda && !tt_all(comm, tt_gpus_or_skip() > 0)) {
        MPI_Finalize();
        return 77;
    }
    tide_context_options copts;
    tide_context_options_init(&copts);
    copts.backend = cuda ? TIDE_BACKEND_AUTO : TIDE_BACKEND_CPU;
    tide_context *ctx = NULL;
    int st = tide_context_create(comm, &copts, &ctx);
    tide_backend got = TIDE_BACKEND_CPU;
    if (st == 0)
        tide_context_backend(ctx, &got);
    if (!tt_all(comm, st == 0)) {
        if (rank == 0)
            printf("test_poisson: tide_context_create failed: %s: %s\n", tide_strerror(st),
                   tide_last_error(NULL));
        MPI_Finalize();
        return EXIT_FAILURE;
    }
    if (cuda && got != TIDE_BACKEND_CUDA) {
        if (rank == 0)
            printf("SKIP: no GPU for the CUDA backend: %s\n", tide_context_gpu_status(ctx));
        tide_context_destroy(ctx);
        MPI_Finalize();
        return 77;
    }
    gpu = got == TIDE_BACKEND_CUDA;
#if TIDE_HAVE_CUDA
    if (gpu) {
        tide_device_info d;
        tide_context_device(ctx, &d);
        CU(cudaSetDevice(d.device)); /* the plain CUDA calls use the context's GPU */
        if (rank == 0)
            printf("backend cuda, arrays in %s memory\n", on_device ? "device" : "host");
    }
#endif

    double t0 = MPI_Wtime();
    if (argc > 1 && !strcmp(argv[1], "streamed")) /* f) alone (`test_poisson streamed`) */
        goto streamed_only;
    run_group(ctx, "periodic", NSIZES * NCOMBOS + NFUZZ, periodic_case);
    run_group(ctx, "periodic-line", NLINES, line_case);
    run_group(ctx, "one-bounded", NBOUNDED + NBFUZZ, bounded_case);
    run_group(ctx, "multi-bounded", NMULTI + NMFUZZ, multi_case);
    convergence(ctx);
    spectral(ctx);
    constant_rhs(ctx);
    create_errors(ctx);
    face_errors(ctx);
    solve_errors(ctx);
    const char *engine = getenv("TIDE_FFT_ENGINE");
    if (on_device && engine && !strcmp(engine, "plane"))
        tt_check(&tally, comm, tt_allmax_nan(comm, plane_plans) > 0,
                 "TIDE_FFT_ENGINE=plane: no plan ran Tide's plane pass (%d on rank %d)",
                 plane_plans, rank);
streamed_only:
    if (gpu && !on_device)
        streamed(ctx);

    if (rank == 0)
        printf("(%d checks, %d failed, %.1f s)\n", tally.checks, tally.failed, MPI_Wtime() - t0);
    tide_context_destroy(ctx);
    int rc = tt_finish(&tally, comm, "test_poisson", "checks");
    MPI_Finalize();
    return rc;
}
