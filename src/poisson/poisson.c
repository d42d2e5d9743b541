/*
 * poisson.c: FFT-based Poisson and Helmholtz solvers on the plan core. A solve is an FFT
 * solver plan (solver.h): the forward real transform of the periodic dimensions and the
 * cosine or sine transforms of all bounded dimensions but one, the spectral operator
 * (program.h: the eigenvalue scaling, or tridiagonal solves along that remaining bounded
 * dimension, the line, or the transforms of one periodic dimension with the scaling between
 * them) and the inverse transforms, as one program; this file validates the
 * request, builds the tables of the discrete operator and reports the mean of f.
 *
 * Periodic dimension d of n points and spacing h: mode k of the 7-point operator has the
 * eigenvalue 2 (cos(2 pi k / n) - 1) / h^2, the continuous Laplacian -(2 pi k' / (n h))^2 with
 * k' the signed wavenumber. A bounded dimension transformed real-to-real (uniform cells) is
 * diagonal in the basis its faces fix, cos(pi k (i + 1/2) / n) (Neumann-Neumann: DCT-II),
 * sin(pi (k + 1) (i + 1/2) / n) (Dirichlet-Dirichlet: DST-II), cos or sin(pi (k + 1/2)
 * (i + 1/2) / n) (Neumann-Dirichlet: DCT-IV, Dirichlet-Neumann: DST-IV), with the eigenvalue
 * 2 (cos(pi k' / n) - 1) / h^2, k' = k, k + 1 or k + 1/2 (spectral: -(pi k' / (n h))^2). The
 * line (Neumann or Dirichlet faces, cell-centred, uniform or not) keeps its finite-volume
 * rows: flux differences over the cell width, a flux the difference of neighbouring centres
 * over their distance, zero through a Neumann face, the centre's value over half the cell
 * through a Dirichlet one (tide.h). Mode (0,0,0) of a singular problem
 * (alpha = 0, no Dirichlet face) has eigenvalue 0: the diagonal op clears it, which removes
 * f's mean and gives u zero mean; a Neumann-Neumann line of mode (0,0) is solved the same way
 * (backend.h: tide_spectral's pin). The mean of f is a weighted sum of the spectral data
 * (mean_weights), gathered over the ranks.
 */
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/args.h"
#include "backend/backend.h"
#include "plan/solver.h"
#include "plan/streamed.h"

struct tide_poisson_plan {
    tide_context *ctx;
    int held;             /* counted on ctx (tide_context_hold) */
    tide_poisson_options o;
    int n[3];
    int singular;
    int line;              /* the bounded dimension solved along lines, or -1 (none) */
    int fft_line;          /* the periodic dimension the spectral op transforms itself
                            * (tide_spectral's line_fft), or -1 (none) */
    double norm;           /* 1 / the factor a forward and an inverse transform multiply by */
    tide_fft_plan *fft;
    tide_fft_middle mid;   /* fft's middle op (make_spectral) */
    int nspec;             /* the spectral op's copies inside fft's plan (several: streamed,
                            * their sums added over the chunks, cleared before each solve) */
    const tide_op *spec[TIDE_STREAM_SLOTS]; /* and what each runs with */
    const tide_env *env[TIDE_STREAM_SLOTS];
    int has_origin;        /* this rank's spectral box adds to the mean (tide_spectral) */
    double *mean;          /* of each field of f in the last solve */
    double *scratch;       /* gather_mean's, after mean in its allocation: the origin of
                            * each field, the local and the summed means and failure flags */
};

/* ---- the request ----------------------------------------------------------------------- */

enum {
    F_N0, F_N1, F_N2, F_PRECISION, F_BACKEND, F_LOCATION, F_DECOMP, F_EXCHANGE, F_PLANNING,
    F_BATCH, F_BC, F_EIGEN = F_BC + 6, F_FACES, F_OOC = F_FACES + 3, NFIELDS
};
static const tide_arg_field fields[NFIELDS] = {
    {"n[0]", 1, INT_MAX},
    {"n[1]", 1, INT_MAX},
    {"n[2]", 1, INT_MAX},
    {"option precision", TIDE_DOUBLE, TIDE_FLOAT},
    {"option backend", TIDE_BACKEND_AUTO, TIDE_BACKEND_CUDA},
    {"option location", TIDE_LOCATION_HOST, TIDE_LOCATION_DEVICE},
    {"option decomposition", TIDE_DECOMP_AUTO, TIDE_DECOMP_PENCILS},
    {"option exchange", TIDE_EXCHANGE_AUTO, TIDE_EXCHANGE_DIRECT},
    {"option planning", TIDE_PLAN_ESTIMATE, TIDE_PLAN_MEASURE},
    {"option batch", 1, INT_MAX},
    {"option bc[0][0]", TIDE_BC_PERIODIC, TIDE_BC_DIRICHLET},
    {"option bc[0][1]", TIDE_BC_PERIODIC, TIDE_BC_DIRICHLET},
    {"option bc[1][0]", TIDE_BC_PERIODIC, TIDE_BC_DIRICHLET},
    {"option bc[1][1]", TIDE_BC_PERIODIC, TIDE_BC_DIRICHLET},
    {"option bc[2][0]", TIDE_BC_PERIODIC, TIDE_BC_DIRICHLET},
    {"option bc[2][1]", TIDE_BC_PERIODIC, TIDE_BC_DIRICHLET},
    {"option eigen", TIDE_EIGEN_FD2, TIDE_EIGEN_SPECTRAL},
    {"option faces[0] given", 0, 1},
    {"option faces[1] given", 0, 1},
    {"option faces[2] given", 0, 1},
    {"option out_of_card", TIDE_OOC_AUTO, TIDE_OOC_STREAM_CPU_X},
};
enum { X_H0, X_H1, X_H2, X_ALPHA, NREALS };
static const tide_arg_real reals[NREALS] = {
    {"option h[0]", 0, 1e300, 0},
    {"option h[1]", 0, 1e300, 0},
    {"option h[2]", 0, 1e300, 0},
    {"option alpha", 0, 1e300, 1},
};
static const char *const box_names[] = {"data"};
static const tide_args_spec spec = {"tide_poisson_plan_create", fields, NFIELDS, reals, NREALS,
                                    box_names, 1};

static void make_request(const int n[3], const tide_box *box, const tide_poisson_options *o,
                         tide_poisson_plan **plan, tide_args *r)
{
    memset(r, 0, sizeof *r);
    if (!plan)
        tide_args_fail(r, TIDE_ERR_ARGUMENT, "plan pointer is NULL");
    if (!n)
        tide_args_fail(r, TIDE_ERR_ARGUMENT, "n is NULL");
    else
        memcpy(r->v, n, 3 * sizeof(int));
    int v[] = {o->precision, o->backend, o->location,
               o->decomposition, o->exchange, o->planning, o->batch};
    memcpy(r->v + F_PRECISION, v, sizeof v);
    for (int d = 0; d < 3; d++)
        for (int f = 0; f < 2; f++)
            r->v[F_BC + 2 * d + f] = o->bc[d][f];
    r->v[F_EIGEN] = o->eigen;
    for (int d = 0; d < 3; d++)
        r->v[F_FACES + d] = o->faces[d] != NULL;
    r->v[F_OOC] = o->out_of_card;
    memcpy(r->x, o->h, sizeof o->h);
    r->x[X_ALPHA] = o->alpha;
    tide_args_check_ranges(&spec, r);
    r->has[0] = box != NULL;
    if (box)
        r->box[0] = *box;
}

/* The verdict on the agreed request, the same on every rank: faces only along one bounded
 * dimension. */
static int judge(tide_context *ctx, const tide_args *all)
{
    const int *v = all[0].v;
    static const char *const names[] = {"periodic", "neumann", "dirichlet"};
    int faced = -1;
    for (int d = 0; d < 3; d++) {
        int lo = v[F_BC + 2 * d], hi = v[F_BC + 2 * d + 1];
        if ((lo == TIDE_BC_PERIODIC) != (hi == TIDE_BC_PERIODIC))
            return tide_fail(ctx, TIDE_ERR_ARGUMENT, "tide_poisson_plan_create: dimension %d is "
                             "%s on the low face and %s on the high face; a periodic dimension "
                             "is periodic on both", d, names[lo], names[hi]);
        if (lo == TIDE_BC_PERIODIC && v[F_FACES + d])
            return tide_fail(ctx, TIDE_ERR_ARGUMENT, "tide_poisson_plan_create: option faces[%d] "
                             "given for a periodic dimension (faces describe a bounded one)", d);
        if (v[F_FACES + d] && faced >= 0)
            return tide_fail(ctx, TIDE_ERR_UNSUPPORTED, "tide_poisson_plan_create: option "
                             "faces given for dimensions %d and %d; cells may be non-uniform "
                             "along one dimension only", faced, d);
        faced = v[F_FACES + d] ? d : faced;
    }
    if (v[F_OOC] != TIDE_OOC_AUTO && v[F_LOCATION] != TIDE_LOCATION_HOST)
        return tide_fail(ctx, TIDE_ERR_ARGUMENT, "tide_poisson_plan_create: option out_of_card "
                         "%s streams host arrays; the arrays are in device memory",
                         v[F_OOC] == TIDE_OOC_STREAM ? "TIDE_OOC_STREAM"
                                                     : "TIDE_OOC_STREAM_CPU_X");
    return all[0].has[0] ? tide_args_check_tiling(ctx, &spec, all, 0, v) : TIDE_SUCCESS;
}

/* Collective, after judge: the face positions of dimension d (given on every rank) are finite,
 * increasing and the same everywhere, or the same error on every rank. */
static int agree_faces(tide_context *ctx, int d, int n, const double *faces)
{
    int bad = 0;
    for (int k = 0; k <= n; k++)
        bad = bad || !isfinite(faces[k]) || (k && !(faces[k] > faces[k - 1]));
    int st = tide_agree(ctx, bad ? tide_fail(ctx, TIDE_ERR_ARGUMENT, "tide_poisson_plan_create: "
                                             "option faces[%d] must hold %d finite, strictly "
                                             "increasing positions", d, n + 1)
                                 : TIDE_SUCCESS);
    int at;
    double lo, hi;
    if (!st)
        st = tide_args_first_difference(ctx, "tide_poisson_plan_create", faces, n + 1,
                                        MPI_DOUBLE, sizeof(double), &at, &lo, &hi);
    if (!st && at >= 0)
        st = tide_fail(ctx, TIDE_ERR_MISMATCH, "tide_poisson_plan_create: option faces[%d][%d] "
                       "differs between ranks (%.17g and %.17g)", d, at, lo, hi);
    return st;
}

/* ---- the eigenvalue scaling ------------------------------------------------------------ */

static const double pi = 3.14159265358979323846264338327950;
static const double two_pi = 6.283185307179586476925286766559;

/* The real-to-real transform that diagonalizes a bounded dimension with faces lo and hi. */
static tide_r2r_kind r2r_kind(int lo, int hi)
{
    if (lo == TIDE_BC_NEUMANN)
        return hi == TIDE_BC_NEUMANN ? TIDE_R2R_DCT2 : TIDE_R2R_DCT4;
    return hi == TIDE_BC_DIRICHLET ? TIDE_R2R_DST2 : TIDE_R2R_DST4;
}

/* Mode k of a real-to-real transform of kind r along n cells: k' = k + this in its
 * eigenvector cos or sin(pi k' (i + 1/2) / n). */
static double r2r_shift(int r)
{
    return r == TIDE_R2R_DCT2 ? 0 : r == TIDE_R2R_DST2 ? 1 : 0.5;
}

/* The eigenvalues of dimension d at spectral indices 0..g-1 (g: n, or n/2+1 halved). */
static void eigenvalues(const tide_poisson_plan *p, int d, int g, double *lam)
{
    int n = p->n[d], r = p->mid.r2r[d];
    double h = p->o.h[d];
    for (int k = 0; k < g; k++) {
        if (r != TIDE_R2R_NONE) {
            double kk = k + r2r_shift(r), w = pi * kk / (n * h); /* exactly 0 at k' = 0 */
            lam[k] = p->o.eigen == TIDE_EIGEN_SPECTRAL ? -w * w
                                                       : 2 * (cos(pi * kk / n) - 1) / (h * h);
        } else if (p->o.eigen == TIDE_EIGEN_SPECTRAL) {
            double w = two_pi * (k <= n / 2 ? k : k - n) / (n * h);
            lam[k] = -w * w;
        } else {
            lam[k] = k ? 2 * (cos(two_pi * k / n) - 1) / (h * h) : 0.0; /* exactly 0 at 0 */
        }
    }
}

/* The weights w[k] of the n modes of a dimension transformed by r (not DCT-II, whose mode 0
 * alone holds the sum) with which sum_k w[k] X[k] / (2 n) is the mean of the n values whose
 * transform X is: the sums over the cells of the inverse transform's basis functions, over
 * n. FFTW's inverses: DST-III x_i = sum_k c_k X_k sin(pi (k+1)(i+1/2)/n), c_k = 2 but 1 for
 * the last mode; DCT-IV and DST-IV 2 sum_k X_k cos or sin(pi (k+1/2)(i+1/2)/n). The sums of
 * sin((i + 1/2) t) and cos((i + 1/2) t) over i < n are sin^2(n t / 2) / sin(t / 2) and
 * sin(n t) / (2 sin(t / 2)). */
static void mean_weights(int r, int n, double *w)
{
    for (int k = 0; k < n; k++)
        if (r == TIDE_R2R_DST2)
            w[k] = k % 2 ? 0 : (k < n - 1 ? 2 : 1) / (sin(pi * (k + 1) / (2.0 * n)) * n);
        else /* DCT-IV, DST-IV */
            w[k] = (r == TIDE_R2R_DCT4 && k % 2 ? -1 : 1) / (sin(pi * (2 * k + 1) / (4.0 * n)) * n);
}

/* The rows of the bounded dimension d (n cells): lower, diag, upper and the cell weights
 * (widths over the length), from its faces (o->faces[d], or uniform with h[d]). Face k sits at
 * z[k]; flux through an interior face: the difference of the centres over their distance;
 * through a Dirichlet face: the centre's value over half the cell; none through a Neumann one. */
static void line_rows(const tide_poisson_options *o, int d, int n, double *rows)
{
    double *lower = rows, *diag = rows + n, *upper = rows + 2 * n, *w = rows + 3 * n;
    const double *z = o->faces[d];
    double h = o->h[d];
#define FACE(k) (z ? z[k] : (k) * h)
    double len = FACE(n) - FACE(0);
    for (int k = 0; k < n; k++) {
        double width = FACE(k + 1) - FACE(k), c = (FACE(k) + FACE(k + 1)) / 2;
        double down = k ? 1 / ((c - (FACE(k - 1) + FACE(k)) / 2) * width) : 0;
        double up = k + 1 < n ? 1 / (((FACE(k + 1) + FACE(k + 2)) / 2 - c) * width) : 0;
        lower[k] = down, upper[k] = up, diag[k] = -(down + up);
        if (!k && o->bc[d][0] == TIDE_BC_DIRICHLET)
            diag[k] -= 2 / (width * width);
        if (k == n - 1 && o->bc[d][1] == TIDE_BC_DIRICHLET)
            diag[k] -= 2 / (width * width);
        w[k] = width / len;
    }
#undef FACE
}

/* The solver's middle op (tide_fft_middle.make): the spectral op on this rank's box of the
 * spectral grid: the eigenvalue tables of the transformed dimensions (zeros along the line),
 * the line's rows, and the weights of the mean along the dimensions that need them. */
static int make_spectral(tide_op *op, const tide_env *e, const tide_box *box, const int grid[3],
                         int copy, void *user, char *err, size_t len)
{
    tide_poisson_plan *p = user;
    int L = p->line, F = p->fft_line, periodic = 0;
    size_t all = (size_t)grid[0] + grid[1] + grid[2];
    double *t = calloc(2 * all + (L >= 0 ? 4 * (size_t)grid[L] : 0), sizeof *t);
    if (!t)
        return snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM;
    double *lam[3] = {t, t + grid[0], t + grid[0] + grid[1]}, *rows = t + 2 * all;
    tide_spectral d = {.dbl = p->o.precision == TIDE_DOUBLE, .box = *box, .batch = p->o.batch,
                       .lam = {lam[0], lam[1], lam[2]}, .alpha = p->o.alpha, .norm = p->norm,
                       .line = L >= 0 ? L : F, .line_fft = F >= 0};
    p->has_origin = tide_box_count(box) > 0;
    for (int k = 0; k < 3; k++) {
        if (k == L)
            continue;
        eigenvalues(p, k, grid[k], lam[k]);
        periodic += p->mid.r2r[k] == TIDE_R2R_NONE;
        if (p->mid.r2r[k] != TIDE_R2R_NONE && p->mid.r2r[k] != TIDE_R2R_DCT2) {
            mean_weights(p->mid.r2r[k], grid[k], lam[k] + all);
            d.mean_w[k] = lam[k] + all;
        }
        p->has_origin = p->has_origin && (d.mean_w[k] || box->lo[k] == 0);
    }
    d.real = !periodic;
    if (L >= 0) {
        int n = grid[L];
        line_rows(&p->o, L, grid[L], rows);
        d.lower = rows, d.diag = rows + n, d.upper = rows + 2 * n, d.weight = rows + 3 * n;
        d.pin = p->o.bc[L][0] == TIDE_BC_NEUMANN && p->o.bc[L][1] == TIDE_BC_NEUMANN;
    }
    int st = tide_op_spectral(op, e, &d, grid, err, len);
    free(t);
    p->spec[copy] = op;
    p->env[copy] = e;
    p->nspec = copy + 1;
    return st;
}

/* ---- plan creation --------------------------------------------------------------------- */

void tide_poisson_options_init(tide_poisson_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
    o->precision = TIDE_DOUBLE;
    o->backend = TIDE_BACKEND_AUTO;
    o->location = TIDE_LOCATION_HOST;
    o->decomposition = TIDE_DECOMP_AUTO;
    o->exchange = TIDE_EXCHANGE_AUTO;
    o->planning = TIDE_PLAN_ESTIMATE;
    o->batch = 1;
    for (int d = 0; d < 3; d++) {
        o->bc[d][0] = o->bc[d][1] = TIDE_BC_PERIODIC;
        o->h[d] = 1.0;
    }
    o->alpha = 0.0;
    o->eigen = TIDE_EIGEN_FD2;
    o->out_of_card = TIDE_OOC_AUTO;
}

/* The FFT options of the solver plan. */
static void fft_options(const tide_poisson_options *o, tide_fft_options *f)
{
    tide_fft_options_init(f);
    f->precision = o->precision;
    f->backend = o->backend;
    f->location = o->location;
    f->decomposition = o->decomposition;
    f->exchange = o->exchange;
    f->planning = o->planning;
    f->batch = o->batch;
    f->stream = o->stream;
}

/* The periodic dimension whose transforms the spectral op runs itself, between the other two
 * dimensions' (tide_spectral's line_fft), or -1: with every dimension periodic, where the
 * backend can: the CPU (FFTW on a plane of lines at a time, in a buffer of its thread), and
 * the GPU with device arrays (host arrays cross PCIe, which the solve's passes do not
 * change). Dimension 0: on one rank the slowest in the plan's layout, so the transforms of y
 * and z run over whole contiguous planes and neighbouring x lines are neighbours in memory;
 * on slabs the x-whole layout is the one the transforms of x ran in. The data is then read
 * and written once around the scaling, where transforms of x and a scaling of their own
 * take two passes (the scaling in cuFFT's store) or three. */
static int choose_fft_line(const tide_context *ctx, const int n[3],
                           const tide_poisson_options *o)
{
    int cuda = tide_wants_cuda(ctx, o->backend);
    const tide_backend_ops *be = cuda ? tide_backend_cuda() : &tide_backend_cpu;
    if (!be || !be->spectral_line_fft || (cuda && o->location != TIDE_LOCATION_DEVICE))
        return -1;
    for (int d = 0; d < 3; d++)
        if (o->bc[d][0] != TIDE_BC_PERIODIC)
            return -1;
    return be->spectral_line_fft(n[0], o->precision == TIDE_DOUBLE) ? 0 : -1;
}

/* Collective, with the request agreed. */
static int make_plan(tide_context *ctx, const int n[3], const tide_box *box,
                     const tide_poisson_options *o, tide_poisson_plan **out)
{
    tide_poisson_plan *p = calloc(1, sizeof *p);
    double *mean = calloc(5 * (size_t)o->batch + 2, sizeof *mean); /* and the scratch */
    int st = tide_agree(ctx, p && mean ? TIDE_SUCCESS
                                       : tide_fail(ctx, TIDE_ERR_NOMEM, "tide_poisson_plan_"
                                                   "create: out of memory"));
    if (!st) {
        p->ctx = ctx;
        p->o = *o;
        p->mean = mean;
        p->scratch = mean + o->batch;
        memcpy(p->n, n, sizeof p->n);
        /* The line: the dimension with faces, else the last bounded one; the other bounded
         * ones are transformed real-to-real. */
        int dirichlet = 0;
        p->line = -1;
        for (int d = 0; d < 3; d++) {
            if (o->bc[d][0] == TIDE_BC_PERIODIC)
                continue;
            dirichlet |= o->bc[d][0] == TIDE_BC_DIRICHLET || o->bc[d][1] == TIDE_BC_DIRICHLET;
            if (p->line < 0 || !o->faces[p->line])
                p->line = d;
        }
        int L = p->line;
        p->fft_line = choose_fft_line(ctx, n, o);
        p->singular = o->alpha == 0.0 && !dirichlet;
        p->norm = 1.0;
        int all = 7, bit = L >= 0 ? 1 << L : p->fft_line >= 0 ? 1 << p->fft_line : 0;
        p->mid = (tide_fft_middle){.call = "tide_poisson_solve", .make = make_spectral,
                                   .user = p, .transform = all & ~bit, .whole = bit};
        for (int d = 0; d < 3; d++) { /* the middle's r2r: per dimension its forward kind */
            int bc = d != L && o->bc[d][0] != TIDE_BC_PERIODIC;
            p->mid.r2r[d] = bc ? r2r_kind(o->bc[d][0], o->bc[d][1]) : TIDE_R2R_NONE;
            p->norm /= d == L ? 1.0 : (bc ? 2.0 : 1.0) * n[d];
        }
        tide_fft_options f;
        fft_options(o, &f);
        st = tide_fft_solver_create(ctx, n, box, &f, &p->mid, o->out_of_card, &p->fft);
    }
    if (st) {
        free(mean);
        free(p);
        return st;
    }
    *out = p;
    return TIDE_SUCCESS;
}

int tide_poisson_plan_create(tide_context *ctx, const int n[3], const tide_box *box,
                             const tide_poisson_options *opts, tide_poisson_plan **plan)
{
    if (!ctx)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_poisson_plan_create: ctx is NULL");
    tide_poisson_options o;
    tide_poisson_options_init(&o);
    int filled = tide_options_read(opts, &o, sizeof o,
                                   offsetof(tide_poisson_options, precision));
    tide_args me, *all = NULL;
    make_request(n, box, &o, plan, &me);
    if (!filled)
        tide_args_fail(&me, TIDE_ERR_ARGUMENT, "tide_poisson_options not initialised: call "
                       "tide_poisson_options_init");
    int st = tide_args_agree(ctx, &spec, &me, &all);
    if (!st)
        st = judge(ctx, all);
    for (int d = 0; d < 3 && !st; d++)
        if (all[0].v[F_FACES + d])
            st = agree_faces(ctx, d, all[0].v[F_N0 + d], o.faces[d]);
    free(all);
    st = st ? st : make_plan(ctx, n, box, &o, plan);
    if (!st)
        tide_context_hold(ctx, &(*plan)->held);
    return st;
}

int tide_poisson_plan_destroy(tide_poisson_plan *p)
{
    if (!p)
        return TIDE_SUCCESS;
    tide_context_release(p->ctx, &p->held);
    tide_fft_plan_destroy(p->fft);
    free(p->mean);
    free(p);
    return TIDE_SUCCESS;
}

/* ---- queries --------------------------------------------------------------------------- */

int tide_poisson_plan_box(const tide_poisson_plan *p, tide_box *box)
{
    if (!p || !box)
        return tide_fail(p ? p->ctx : NULL, TIDE_ERR_ARGUMENT,
                         "tide_poisson_plan_box: NULL argument");
    return tide_fft_plan_boxes(p->fft, box, NULL);
}

int tide_poisson_plan_cost(const tide_poisson_plan *p, tide_fft_cost *cost)
{
    if (!p || !cost)
        return tide_fail(p ? p->ctx : NULL, TIDE_ERR_ARGUMENT,
                         "tide_poisson_plan_cost: NULL argument");
    tide_fft_solver_cost(p->fft, cost);
    return TIDE_SUCCESS;
}

int tide_poisson_plan_info(const tide_poisson_plan *p, tide_poisson_info *info)
{
    if (!p || !info)
        return tide_fail(p ? p->ctx : NULL, TIDE_ERR_ARGUMENT,
                         "tide_poisson_plan_info: NULL argument");
    tide_fft_info fi;
    tide_fft_cost c;
    tide_fft_plan_info(p->fft, &fi);
    tide_fft_solver_cost(p->fft, &c);
    memset(info, 0, sizeof *info);
    info->count = fi.in_count;
    info->bytes = fi.in_bytes;
    info->host_bytes = fi.host_bytes;
    info->pinned_bytes = fi.pinned_bytes;
    info->device_bytes = fi.device_bytes;
    info->exchanges = c.exchanges;
    info->fused_scaling = p->nspec && tide_op_spectral_is_fused(p->spec[0]);
    info->passes = c.fft_passes + !info->fused_scaling;
    info->singular = p->singular;
    double N = (double)p->n[0] * p->n[1] * p->n[2], M = p->line < 0 ? N : N / p->n[p->line];
    info->flops = (5 * N * log2(M) + (p->line < 0 ? 0 : 8 * N)) * p->o.batch;
    info->backend = fi.backend;
    info->decomposition = fi.decomposition;
    info->exchange = fi.exchange;
    info->location = fi.location;
    info->round_trips = fi.round_trips;
    info->chunks = fi.round_trips ? fi.chunks : 0;
    info->cpu_transforms = tide_fft_solver_cpu_x(p->fft);
    return TIDE_SUCCESS;
}

int tide_poisson_plan_describe(const tide_poisson_plan *p, char *buf, size_t len)
{
    if (!p)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_poisson_plan_describe: plan is NULL");
    return tide_fft_plan_describe(p->fft, buf, len);
}

int tide_poisson_plan_set_stream(tide_poisson_plan *p, void *stream)
{
    if (!p)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_poisson_plan_set_stream: plan is NULL");
    p->o.stream = stream;
    return tide_fft_plan_set_stream(p->fft, stream);
}

/* ---- solving --------------------------------------------------------------------------- */

/* Collective, after a successful solve: every field's mean from the spectral op's origin,
 * the weighted sum of the transformed values that each rank with a weight (has_origin) adds
 * before the solve, summed over the ranks. One reduction carries the means and
 * whether reading them failed anywhere; only then does a second, tide_agree, spread the
 * message. */
static int gather_mean(tide_poisson_plan *p)
{
    tide_context *ctx = p->ctx;
    int B = p->o.batch, prev, st = TIDE_SUCCESS;
    double *origin = p->scratch, *mine = origin + 2 * B, *all = mine + B + 1;
    memset(mine, 0, (size_t)(B + 1) * sizeof *mine);
    tide_device_enter(ctx, &prev); /* tide_fft_solver_run made it current and gave it back */
    for (int c = 0; c < p->nspec && p->has_origin && !st; c++) {
        st = tide_op_spectral_origin(p->spec[c], p->env[c], origin);
        for (int f = 0; f < B && !st; f++)
            mine[f] += origin[2 * f] * p->norm;
    }
    tide_device_leave(prev);
    if (st)
        tide_fail(ctx, st, "tide_poisson_solve: cannot read the mean of f (%s)",
                  p->env[0]->be->last_error());
    mine[B] = st != TIDE_SUCCESS;
    if (MPI_Allreduce(mine, all, B + 1, MPI_DOUBLE, MPI_SUM, ctx->comm) != MPI_SUCCESS)
        return tide_fail(ctx, TIDE_ERR_MPI, "tide_poisson_solve: MPI_Allreduce of the mean "
                         "failed");
    if (all[B] > 0)
        return tide_agree(ctx, st);
    memcpy(p->mean, all, (size_t)B * sizeof *all);
    return TIDE_SUCCESS;
}

/* Collective: a streamed solve's copies of the spectral op add their sums over the chunks:
 * cleared before it, or the same error on every rank. */
static int clear_means(tide_poisson_plan *p)
{
    int prev, st = TIDE_SUCCESS;
    if (p->nspec < 2)
        return st;
    tide_device_enter(p->ctx, &prev);
    for (int c = 0; c < p->nspec && !st; c++)
        st = tide_op_spectral_clear(p->spec[c], p->env[c]);
    tide_device_leave(prev);
    if (st)
        tide_fail(p->ctx, st, "tide_poisson_solve: cannot clear the sums of the mean of f (%s)",
                  p->env[0]->be->last_error());
    return tide_agree(p->ctx, st);
}

int tide_poisson_solve(tide_poisson_plan *p, const void *f, void *u)
{
    if (!p)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_poisson_solve: plan is NULL");
    int st = clear_means(p);
    st = st ? st : tide_fft_solver_run(p->fft, f, u);
    return st ? st : gather_mean(p);
}

int tide_poisson_mean(const tide_poisson_plan *p, double *mean)
{
    if (!p || !mean)
        return tide_fail(p ? p->ctx : NULL, TIDE_ERR_ARGUMENT, "tide_poisson_mean: NULL argument");
    memcpy(mean, p->mean, (size_t)p->o.batch * sizeof *mean);
    return TIDE_SUCCESS;
}
