/*
 * tide_poisson.c: `tide poisson`: plan, verify and time a distributed Poisson/Helmholtz solve
 * (tide_poisson_*) on a manufactured problem, printing heFFTe speed3d's keys like `tide fft`
 * so the same parsers read the output.
 *
 * The problem: u_exact is a product of one trigonometric mode per dimension, each following
 * that dimension's boundaries (a periodic mode, or a cosine or sine whose derivative or value
 * vanishes on the faces), and f = lap(u_exact) - alpha u_exact, analytically. On a uniform
 * grid each such product is an eigenfunction of both the continuous Laplacian and the discrete
 * operator, so the discrete solution is u_exact times a known ratio: the error is pure
 * truncation, checked against its second-order estimate, and the discrete equation itself is
 * checked by applying the operator to u with a naive loop (tide_ref_poisson_residual, no Tide
 * code). With -stretch the bounded dimension's cells vary in width: the mode is no longer an
 * eigenvector, and the error is checked against the estimate at the widest cell.
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

#define PI 3.14159265358979323846

static const char *about =
    "Solves lap(u) - alpha u = f on an NX x NY x NZ grid for a manufactured solution u, the\n"
    "product of one mode per dimension, x measured from the low face, L = n h the length:\n"
    "  periodic, points x = i h:              sin(2 pi k x/L + p) (cos along y)\n"
    "  bounded, cell centres x = (i + 1/2) h: Neumann-Neumann cos(pi m x/L),\n"
    "      Dirichlet-Dirichlet sin(pi m x/L), Neumann-Dirichlet (low, high face)\n"
    "      cos(pi (m+1/2) x/L), Dirichlet-Neumann sin(pi (m+1/2) x/L)\n"
    "with (k or m) = (1,2,1) along x, y, z where the grid resolves it (periodic k <= (n-1)/2,\n"
    "bounded m <= n-1 and m >= 1 for Dirichlet-Dirichlet), the phases p from the seed and\n"
    "different for each field of a batch (bounded dimensions have none: the faces fix it);\n"
    "f = lap(u) - alpha u analytically. Checks the max error against u (relative to max|u|)\n"
    "and the residual of the discrete equation (the 7-point operator, finite-volume along a\n"
    "stretched dimension, applied to u by a naive serial loop on the gathered array), then\n"
    "times RUNS solves. Time per run is the median solve, the slowest rank counting.\n"
    "Verification passes when the residual's relative L2 is below 1e-8 (double) or 1e-3 (float)\n"
    "or, where larger, the rounding floor (1 + log2 N) u mu max|u| / max|f| (u the unit\n"
    "roundoff, N the grid's points, mu = sum_d 4 / w_d^2 + |alpha| the operator's norm, w_d the\n"
    "narrowest cell along d), and the max error below the operator's truncation estimate plus\n"
    "1e-9 (double) or 1e-4 (float). Each mode is an eigenvector of the discrete operator on a\n"
    "uniform grid, eigenvalue 2 (cos(t) - 1)/h^2 with t = kappa h the mode's wavenumber times\n"
    "the spacing: t = 2 pi k/n periodic, pi m/n Neumann-Neumann or Dirichlet-Dirichlet,\n"
    "pi (m+1/2)/n mixed. Against -kappa^2 that is a relative truncation of t^2/12 to leading\n"
    "order, so the estimate is 2 x sum_d t_d^2/12 (safety factor 2). -spectral drops the terms\n"
    "whose eigenvalues are then exact: the periodic dimensions and the bounded ones but the\n"
    "line (the stretched one, else the last bounded); -stretch takes the stretched dimension's\n"
    "t at its widest cell, kappa times the largest width.\n";

typedef struct {
    app_args c;      /* backend, precision, grid and the options every subcommand takes */
    char bc[7];      /* per dimension its low and high face, each p, n or d ("pp" or n/d) */
    int has_h, spectral, has_grid, grid[3], stream;
    int stretched;   /* the dimension -stretch applies to, or -1 */
    double h[3], alpha, stretch;
} args;

/* Reads -bc's value into bc (char[7]): XYZ (one letter for both faces) or XxYyZz (per face);
 * a periodic face needs a periodic partner. 0, else -1 with why in err. */
static int parse_bc(const char *name, char **v, void *dest, char *err, size_t len)
{
    const char *s = v[0];
    size_t n = strlen(s);
    char bc[7];
    int bad = (n != 3 && n != 6) || strspn(s, "pnd") != n;
    for (int d = 0; d < 3 && !bad; d++) {
        bc[2 * d] = n == 3 ? s[d] : s[2 * d];
        bc[2 * d + 1] = n == 3 ? s[d] : s[2 * d + 1];
        bad = (bc[2 * d] == 'p') != (bc[2 * d + 1] == 'p');
    }
    if (bad)
        return snprintf(err, len, "%s %s: expected XYZ or XxYyZz, each letter p, n or d (a "
                        "periodic face's partner periodic too)", name, app_shown(s)), -1;
    bc[6] = 0;
    memcpy(dest, bc, sizeof bc);
    return 0;
}

static int bounded(const char bc[7], int d)
{
    return bc[2 * d] != 'p';
}

/* The boundaries as a user writes them: XYZ when each dimension's faces agree, else XxYyZz. */
static void bc_label(const char bc[7], char out[7])
{
    int pairs = 1;
    for (int d = 0; d < 3; d++)
        pairs = pairs && bc[2 * d] == bc[2 * d + 1];
    for (int d = 0; d < 3; d++)
        if (pairs)
            out[d] = bc[2 * d], out[d + 1] = 0;
        else
            out[2 * d] = bc[2 * d], out[2 * d + 1] = bc[2 * d + 1], out[2 * d + 2] = 0;
}

/* Fills a from the option table; 0, 1 after --help, else APP_USAGE with why printed. Every
 * rank parses the same argv. */
static int parse(int argc, char **argv, args *a)
{
    static const char *const streams[] = {"gpu", "cpu-x"};
    static const int schemes[] = {TIDE_OOC_STREAM, TIDE_OOC_STREAM_CPU_X};
    memset(a, 0, sizeof *a);
    app_args_init(&a->c);
    app_args *c = &a->c;
    strcpy(a->bc, "pppppp");
    app_opt opts[] = {
        APP_POS_BACKEND(c), APP_POS_PRECISION(c), APP_POS_GRID(c),
        {"-bc", "XYZ|XxYyZz", APP_CUSTOM, a->bc, .parse = parse_bc,
         .help = "boundaries, one letter per dimension, or per face (low, high): p periodic "
                 "(both faces), n Neumann, d Dirichlet (default ppp; e.g. ppn: z bounded by "
                 "Neumann faces, ppppnd: Neumann low, Dirichlet high)"},
        {"-stretch", "S", APP_REAL, &a->stretch, 0, HUGE_VAL,
         .help = "S > 0: the bounded dimension's faces (the last, if several) clustered at both "
                 "ends, z_k = L (1 + tanh(S (2k/n - 1)) / tanh(S)) / 2 (L = n h), cell centres "
                 "midway (passed as the solver's faces)"},
        {"-h", "HX HY HZ", APP_REALS, a->h, 0, HUGE_VAL, .count = 3, .given = &a->has_h,
         .help = "grid spacings, each from 1e-150 to 1e150 (double) or 1e-18 to 1e18 (float) "
                 "(default 1/NX 1/NY 1/NZ: the unit box)"},
        {"-alpha", "A", APP_REAL, &a->alpha, -HUGE_VAL, HUGE_VAL,
         .help = "Helmholtz shift, finite (default 0: Poisson; f's mean removed when no face is "
                 "Dirichlet)"},
        {"-spectral", .kind = APP_FLAG, .dest = &a->spectral, .count = 1,
         .help = "exact eigenvalues of the continuous Laplacian along the periodic dimensions "
                 "and the bounded ones the library transforms (all but one; default: the "
                 "7-point finite-difference operator's)"},
        APP_OPT_DECOMP(c), APP_OPT_EXCHANGE(c), APP_OPT_DEVICE(c), APP_OPT_BUDGET(c),
        {"-stream", NULL, APP_NAME, &a->stream, .count = 2, .names = streams, .values = schemes,
         .help = "host arrays stream through the GPU in chunks whatever the budget: three "
                 "passes, every transform on the GPU; or (one rank, x periodic) the CPU doing "
                 "the x transforms around one pass (default: streamed only beyond the budget, "
                 "by the scheme predicted faster)"},
        {"-grid", "AxBxC", APP_GRID, a->grid, .count = 3, .given = &a->has_grid,
         .help = "boxes from an A x B x C process grid, A B C = P (default: the solver's "
                 "choice)"},
        APP_OPT_BATCH(c), APP_OPT_INPLACE(c), APP_OPT_MEASURE(c), APP_OPT_RUNS(c),
        APP_OPT_SEED(c), APP_OPT_PROGRESS(c), APP_OPT_JSON(c),
    };
    app_cmd cmd = {"tide poisson", about, NULL, opts, sizeof opts / sizeof opts[0]};
    int rc = app_parse(&cmd, argc, argv);
    if (rc || (rc = app_check_points(&cmd, c, "NX NY NZ")))
        return rc;
    double hmin = c->prec == TIDE_DOUBLE ? 1e-150 : 1e-18, hmax = 1 / hmin;
    for (int d = 0; d < 3; d++) {
        if (!a->has_h)
            a->h[d] = 1.0 / c->n[d];
        if (a->has_h && !(a->h[d] >= hmin && a->h[d] <= hmax)) /* 1/h^2 and kappa^2 finite */
            return app_usage_error(cmd.name, "-h %g %g %g: expected spacings from %g to %g in %s "
                                   "precision (%c's is %g)", a->h[0], a->h[1], a->h[2], hmin,
                                   hmax, c->prec == TIDE_DOUBLE ? "double" : "float", "xyz"[d],
                                   a->h[d]);
    }
    a->stretched = -1; /* the library takes one non-uniform dimension: the last bounded one */
    for (int d = 0; d < 3; d++)
        if (a->stretch > 0 && bounded(a->bc, d))
            a->stretched = d;
    if (a->stretch > 0 && a->stretched < 0)
        return app_usage_error(cmd.name, "-stretch %g needs a bounded dimension (n or d in -bc), "
                               "but every dimension is periodic", a->stretch);
    return 0;
}

/* ---- the manufactured solution --------------------------------------------------------------- */

/* u_exact of field f is prod_d g_d at each point, g_d tabulated per field and point. Periodic
 * dimension (x = i h): g = sin, cos, sin (along x, y, z) of 2 pi k x / L + phase[f][d].
 * Bounded (x the cell centre from the low face): cos of kappa x on a Neumann low face, sin on
 * a Dirichlet one, kappa = pi m / L, or pi (m + 1/2) / L when the high face differs, so the
 * derivative or the value vanishes on both faces. The wanted modes are lowered to what the
 * grid resolves without aliasing. */
typedef struct {
    int n[3], k[3], batch;
    double kappa[3];  /* per dimension: lap(u) = -sum_d kappa[d]^2 u */
    double width[3];  /* the largest spacing (cell width) per dimension */
    double kappa2;    /* sum_d kappa[d]^2 */
    double *faces[3]; /* the stretched dimension's n + 1 face positions (from 0), else NULL */
    double *g[3];     /* batch x n[d]: the factor along d of each field at each point */
    double *mean;     /* per field: the mean of u_exact over the grid, cells weighted by width */
} solution;

/* Faces clustered at both ends of [0, L] by a tanh stretching of strength S > 0. */
static double *stretched_faces(int n, double L, double S)
{
    double *z = malloc(sizeof(double) * ((size_t)n + 1));
    if (!z)
        return NULL;
    for (int k = 0; k <= n; k++)
        z[k] = L * (1 + tanh(S * (2.0 * k / n - 1)) / tanh(S)) / 2;
    z[0] = 0, z[n] = L; /* exactly, whatever the rounding */
    return z;
}

/* Dimension d's mode: k[d], kappa[d], width[d], the faces if stretched, and the table g[d]. */
static int solution_dim(solution *s, const args *a, int d)
{
    static const int want[3] = {1, 2, 1};
    const char *bc = a->bc + 2 * d;
    int n = s->n[d], per = !bounded(a->bc, d);
    double L = n * a->h[d], half = bc[0] != bc[1] ? 0.5 : 0;
    if (per) {
        s->k[d] = want[d] < (n - 1) / 2 ? want[d] : (n - 1) / 2;
        s->kappa[d] = 2 * PI * s->k[d] / L;
    } else { /* m <= n - 1; a Dirichlet-Dirichlet sine needs m >= 1 not to vanish */
        s->k[d] = want[d] < n - 1 ? want[d] : n - 1;
        if (s->k[d] < 1 && bc[0] == 'd' && bc[1] == 'd')
            s->k[d] = 1;
        s->kappa[d] = PI * (s->k[d] + half) / L;
    }
    s->kappa2 += s->kappa[d] * s->kappa[d];
    s->width[d] = a->h[d];
    const double *z = NULL;
    if (d == a->stretched) {
        if (!(z = s->faces[d] = stretched_faces(n, L, a->stretch)))
            return -1;
        s->width[d] = 0;
        for (int i = 0; i < n; i++)
            s->width[d] = fmax(s->width[d], z[i + 1] - z[i]);
    }
    if (!(s->g[d] = malloc(sizeof(double) * (size_t)n * (size_t)s->batch)))
        return -1;
    for (int f = 0; f < s->batch; f++) {
        /* Deterministic phases in [-pi, pi): the same on every rank and decomposition. */
        double phase = PI * tide_ref_value(a->c.seed, f, s->n, d, 0, 0, 0), sum = 0;
        for (int i = 0; i < n; i++) {
            double t, w = 1.0 / n, *g = &s->g[d][(size_t)f * n + i];
            if (per) {
                t = 2 * PI * s->k[d] * (double)i / n + phase;
            } else if (z) {
                t = s->kappa[d] * (z[i] + z[i + 1]) / 2;
                w = (z[i + 1] - z[i]) / L;
            } else {
                t = PI * (s->k[d] + half) * (i + 0.5) / n;
            }
            *g = per ? (d == 1 ? cos(t) : sin(t)) : (bc[0] == 'n' ? cos(t) : sin(t));
            sum += w * *g;
        }
        s->mean[f] *= sum; /* the mean is separable: the product of the 1D means */
    }
    return 0;
}

static int solution_init(solution *s, const args *a)
{
    memset(s, 0, sizeof *s);
    s->batch = a->c.batch;
    memcpy(s->n, a->c.n, sizeof s->n);
    if (!(s->mean = malloc(sizeof(double) * (size_t)s->batch)))
        return -1;
    for (int f = 0; f < s->batch; f++)
        s->mean[f] = 1;
    for (int d = 0; d < 3; d++)
        if (solution_dim(s, a, d))
            return -1;
    return 0;
}

static void solution_free(solution *s)
{
    for (int d = 0; d < 3; d++) {
        free(s->faces[d]);
        free(s->g[d]);
    }
    free(s->mean);
}

/* Whether the problem can be solved and checked as asked: the stretched faces increasing
 * (a strong -stretch leaves cells of no width at the faces) and a solution that is not
 * constant where the solve fixes the mean. 0, else APP_USAGE with why printed. */
static int problem_check(const solution *s, const args *a)
{
    int d = a->stretched, dirichlet = strchr(a->bc, 'd') != NULL;
    for (int i = 0; d >= 0 && i < s->n[d]; i++)
        if (!(s->faces[d][i + 1] > s->faces[d][i]))
            return app_usage_error("tide poisson", "-stretch %g: cells of no width at %c's faces "
                                   "(face %d at %.17g, as the one before it): expected a "
                                   "smaller S", a->stretch, "xyz"[d], i + 1, s->faces[d][i + 1]);
    if (!s->k[0] && !s->k[1] && !s->k[2] && a->alpha == 0 && !dirichlet)
        return app_usage_error("tide poisson", "NX NY NZ %d %d %d: no mode fits the grid, so u "
                               "is constant and the solve, which fixes its mean, leaves nothing "
                               "to check: expected a dimension of at least 3 points (periodic) "
                               "or 2 (bounded)", s->n[0], s->n[1], s->n[2]);
    return 0;
}

/* The narrowest cell (the spacing, uniform) along d. */
static double min_width(const solution *s, int d)
{
    double w = s->width[d];
    for (int i = 0; s->faces[d] && i < s->n[d]; i++)
        w = fmin(w, s->faces[d][i + 1] - s->faces[d][i]);
    return w;
}

/* ", stretch S along z (cell widths w_min to w_max)": the stretched dimension. */
static void stretch_text(const solution *s, const args *a, char *buf, size_t len)
{
    int d = a->stretched;
    snprintf(buf, len, ", stretch %g along %c (tanh faces, cell widths %.3g to %.3g)",
             a->stretch, "xyz"[d], min_width(s, d), s->width[d]);
}

/* The residual's bar (relative L2): the fixed one, or where it is larger the rounding floor.
 * A computed u within (1 + log2 N) unit roundoffs of the discrete solution in the 2-norm (the
 * FFT's error bound) leaves a residual of at most the operator's norm times that error: the
 * operator's rows sum to at most mu = sum_d 4 / w_d^2 + |alpha| in absolute value (w_d the
 * narrowest cell), and f is a multiple of u_exact, so relative to f the floor is
 * (1 + log2 N) unit mu max|u| / max|f|. On fine grids it passes the fixed bar: at h = 1/1024
 * in float the rounding of the exact discrete solution to float alone can leave about 1e-3. */
static double residual_tol(const solution *s, const args *a, int dbl, double max_u, double max_f)
{
    double fixed = dbl ? 1e-8 : 1e-3, unit = dbl ? 0x1p-53 : 0x1p-24, mu = fabs(a->alpha), N = 1;
    for (int d = 0; d < 3; d++) {
        double w = min_width(s, d);
        mu += 4 / (w * w);
        N *= s->n[d];
    }
    return max_f > 0 ? fmax(fixed, (1 + log2(N)) * unit * mu * max_u / max_f) : fixed;
}

/* "sin(2 pi 1 x/Lx + p0)", "cos(pi 2 z/Lz)", "sin(pi 1.5 z/Lz)": dimension d's factor. */
static void mode_text(const solution *s, const args *a, int d, char *buf, size_t len)
{
    const char *bc = a->bc + 2 * d, xyz = "xyz"[d];
    if (!bounded(a->bc, d))
        snprintf(buf, len, "%s(2 pi %d %c/L%c + p%d)", d == 1 ? "cos" : "sin", s->k[d], xyz,
                 xyz, d);
    else
        snprintf(buf, len, "%s(pi %g %c/L%c)", bc[0] == 'n' ? "cos" : "sin",
                 s->k[d] + (bc[0] != bc[1] ? 0.5 : 0), xyz, xyz);
}

/* Element strides of the box's dimensions (order[2] contiguous). */
static void strides(const tide_box *b, long long st[3])
{
    long long ext[3];
    for (int d = 0; d < 3; d++)
        ext[d] = b->hi[d] > b->lo[d] ? b->hi[d] - b->lo[d] : 0;
    st[b->order[2]] = 1;
    st[b->order[1]] = ext[b->order[2]];
    st[b->order[0]] = ext[b->order[2]] * ext[b->order[1]];
}

/* Calls fn(arg, element index, u_exact) for each point of each field of the rank's box. */
static void each_point(const solution *s, const tide_box *b, long long count,
                       void (*fn)(void *, long long, int, double), void *arg)
{
    long long st[3];
    strides(b, st);
    for (int f = 0; f < s->batch; f++)
        for (int x = b->lo[0]; x < b->hi[0]; x++) {
            double gx = s->g[0][(size_t)f * s->n[0] + x];
            for (int y = b->lo[1]; y < b->hi[1]; y++) {
                double gxy = gx * s->g[1][(size_t)f * s->n[1] + y];
                for (int z = b->lo[2]; z < b->hi[2]; z++) {
                    long long e = f * count + (x - b->lo[0]) * st[0] + (y - b->lo[1]) * st[1] +
                                  (z - b->lo[2]) * st[2];
                    fn(arg, e, f, gxy * s->g[2][(size_t)f * s->n[2] + z]);
                }
            }
        }
}

typedef struct {
    void *data;
    int dbl;
    double factor;                   /* fill: f = factor u_exact */
    const double *mean;              /* compare: u_exact less this per field (NULL: none) */
    double max_abs, max_ref;
} visit;

static void fill_one(void *p, long long e, int f, double u)
{
    (void)f;
    visit *v = p;
    if (v->dbl)
        ((double *)v->data)[e] = v->factor * u;
    else
        ((float *)v->data)[e] = (float)(v->factor * u);
}

static void compare_one(void *p, long long e, int f, double u)
{
    visit *v = p;
    if (v->mean)
        u -= v->mean[f];
    double got = v->dbl ? ((double *)v->data)[e] : ((float *)v->data)[e];
    v->max_abs = app_max_nan(v->max_abs, fabs(got - u));
    v->max_ref = app_max_nan(v->max_ref, fabs(u));
}

/* The parameter of dimension d's truncation, t_d = kappa_d times its largest spacing: on a
 * uniform grid 2 pi k/n periodic, pi m/n or pi (m + 1/2)/n bounded, the mode's eigenvalue
 * 2 (cos(t_d) - 1)/h_d^2 against -kappa_d^2. 0 where the eigenvalue is exact: -spectral
 * along every dimension but the line the library solves by tridiagonal systems (tide.h: the
 * non-uniform one, else the last bounded one). */
static double trunc_t(const solution *s, const args *a, int d)
{
    int line = a->stretched;
    for (int k = 0; k < 3 && line < 0; k++)
        line = bounded(a->bc, 2 - k) ? 2 - k : -1;
    return a->spectral && d != line ? 0 : s->kappa[d] * s->width[d];
}

/* The relative truncation error of the operator on these modes on a uniform grid: the
 * discrete solution is u_exact (kappa2 + alpha) / (sum_d lam_d + alpha), lam_d the mode's
 * eigenvalue 2 (1 - cos(t_d)) / h_d^2 (kappa_d^2 where exact). -1 with a stretched dimension,
 * where the mode is no eigenvector and the error has no closed form. */
static double fd2_error(const solution *s, const args *a)
{
    if (a->stretched >= 0)
        return -1;
    double lam = a->alpha;
    for (int d = 0; d < 3; d++) {
        double t = trunc_t(s, a, d);
        lam += t > 0 ? 2 * (1 - cos(t)) / (a->h[d] * a->h[d]) : s->kappa[d] * s->kappa[d];
    }
    return lam > 0 ? fabs((s->kappa2 + a->alpha) / lam - 1) : 0;
}

/* Its second-order estimate: sum_d t_d^2 / 12, the leading term per dimension (the relative
 * error of each eigenvalue), which bounds the relative error at any alpha >= 0. */
static double fd2_estimate(const solution *s, const args *a)
{
    double e = 0;
    for (int d = 0; d < 3; d++) {
        double t = trunc_t(s, a, d);
        e += t * t / 12;
    }
    return e;
}

/* ---- the run --------------------------------------------------------------------------------- */

#define CHECK(call) APP_CHECK("tide poisson", call)

/* The timed run: one solve (in place: restarted from f first). */
typedef struct {
    tide_context *ctx;
    tide_poisson_plan *plan;
    const void *f, *xf;
    void *xu;
    size_t bytes;
} run_arg;

static int restart(void *p)
{
    run_arg *r = p;
    return tide_copy(r->ctx, r->xu, r->f, r->bytes);
}

static int solve(void *p)
{
    run_arg *r = p;
    return tide_poisson_solve(r->plan, r->xf, r->xu);
}

/* The bound of one solve (DESIGN.md, "Performance discipline"), as `tide fft` computes it for
 * runs that are not streamed, from the plan's own cost: its local passes reading and writing
 * the data at the copy rate of the memory they run in (device arrays, or host arrays' device
 * copies, on the GPU; host memory on the CPU), plus the exchanges that do not overlap the
 * local work at the all-to-all rate measured now (on the CPU all of them; on the GPU those
 * over NCCL or CUDA-aware MPI). Host arrays on the GPU also cross PCIe, whole, before and
 * after the solve (tide_poisson_solve copies f up and u down without overlap): at the
 * one-direction rates. Rates are measured now on arrays of the data's size. Collective. */
/* What the bound is made of, for the JSON figures. */
typedef struct {
    tide_fft_cost cost; /* the busiest rank's */
    tide_rates rates;   /* this rank's, measured now */
    double xrate;       /* the exchange's rate, GB/s; 0: not counted */
} figures;

static int bound_of(tide_context *ctx, tide_poisson_plan *plan, const tide_poisson_info *info,
                    double *bound, char *what, size_t len, figures *fig)
{
    tide_rates r;
    tide_fft_cost c;
    int st = app_measure_rates(ctx, app_rate_bytes((double)info->bytes), &r);
    if (st || (st = tide_poisson_plan_cost(plan, &c)))
        return st;
    fig->rates = r;
    fig->xrate = 0;
    app_cost_of(&c, NULL, &fig->cost);
    /* Host arrays streamed through the GPU: the device work overlaps the transfers, a chunk's
     * upload beside another's download (the both-directions rate); with the CPU's x transforms
     * their time adds. Copied whole: f up and u down at the one-direction rates around the
     * local passes in device memory. */
    int gpu = info->backend == TIDE_BACKEND_CUDA, host = info->location == TIDE_LOCATION_HOST;
    int streamed = gpu && host && (info->round_trips > 1 || info->cpu_transforms);
    double b = streamed ? app_bound_pcie(c.h2d_bytes, c.d2h_bytes, 1, 2, &r) + c.cpu_seconds
                        : app_bound_local(c.fft_bytes, gpu, &r);
    char pcie[320] = "";
    if (gpu && host && !streamed)
        b += app_bound_pcie(c.h2d_bytes, c.d2h_bytes, 1, 1, &r);
    if (streamed && info->cpu_transforms)
        snprintf(pcie, sizeof pcie, "the CPU's x transforms (%.3g s, measured on a few planes "
                 "when the plan was made) + one PCIe round trip of the spectral data (%.3g GB "
                 "up, %.3g GB down) at the measured both-directions rate (%.3g GB/s), the "
                 "device work overlapping it", c.cpu_seconds, c.h2d_bytes / 1e9,
                 c.d2h_bytes / 1e9, r.both);
    else if (streamed)
        snprintf(pcie, sizeof pcie, "%d PCIe round trips of the rank's data (%.3g GB up, %.3g "
                 "GB down) at the measured both-directions rate (%.3g GB/s), the device work "
                 "overlapping them", info->round_trips, c.h2d_bytes / 1e9, c.d2h_bytes / 1e9,
                 r.both);
    else if (gpu && host)
        snprintf(pcie, sizeof pcie, "f up and u down over PCIe at the measured one-direction "
                 "rates (%.3g, %.3g GB/s), then ", r.h2d, r.d2h);
    tide_exchange x = info->exchange;
    /* exchanges inside the streamed passes (NCCL) overlap them; over MPI they follow */
    int counted = info->exchanges > 0 &&
                  (streamed ? x == TIDE_EXCHANGE_P2P
                            : !gpu || app_exchange_gpu(x));
    char xpart[200] = "";
    if (counted) {
        double xs = 0, xrate = 0;
        if ((st = app_bound_exchange(ctx, x, (double)info->bytes, c.exchange_bytes, &xs,
                                     &xrate)))
            return st;
        b += xs;
        fig->xrate = xrate;
        snprintf(xpart, sizeof xpart, " + %d exchange%s of the data leaving the rank at the "
                 "measured %s all-to-all rate (%.3g GB/s)", info->exchanges,
                 info->exchanges > 1 ? "s" : "", app_exchange_name(x), xrate);
    } else if (info->exchanges > 0) {
        snprintf(xpart, sizeof xpart, "; exchanges through pinned host buffers not counted");
    }
    if (streamed)
        snprintf(what, len, "%s%s", pcie, xpart);
    else
        snprintf(what, len, "%seach local pass reading and writing the rank's data once at the "
                 "measured %s copy rate (%.3g GB/s)%s", pcie, gpu ? "device" : "host",
                 gpu ? r.d2d : r.host_copy, xpart);
    *bound = app_max(b);
    return 0;
}

int tide_cmd_poisson(int argc, char **argv)
{
    args a;
    int rc = parse(argc, argv, &a);
    if (rc)
        return rc == 1 ? 0 : rc;
    const app_args *c = &a.c;
    int rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    if (app_json_check("tide poisson", c))
        return 1;

    tide_context *ctx = NULL;
    tide_poisson_plan *plan = NULL;
    void *f = NULL, *u = NULL, *xf = NULL, *xu = NULL;
    double *times = NULL, *mean = NULL;
    solution sol;
    int sol_ok = solution_init(&sol, &a) == 0;
    if (sol_ok && (rc = problem_check(&sol, &a))) {
        solution_free(&sol);
        return rc;
    }
    if (app_context_create("tide poisson", c, &ctx)) {
        solution_free(&sol);
        return 1;
    }
    tide_poisson_options o;
    tide_poisson_options_init(&o);
    o.precision = c->prec;
    o.backend = c->backend;
    o.location = c->device ? TIDE_LOCATION_DEVICE : TIDE_LOCATION_HOST;
    o.decomposition = c->decomp;
    o.exchange = c->exchange;
    o.planning = c->measure ? TIDE_PLAN_MEASURE : TIDE_PLAN_ESTIMATE;
    o.batch = c->batch;
    for (int d = 0; d < 3; d++) {
        for (int side = 0; side < 2; side++) {
            char b = a.bc[2 * d + side];
            o.bc[d][side] = b == 'n' ? TIDE_BC_NEUMANN
                            : b == 'd' ? TIDE_BC_DIRICHLET
                                       : TIDE_BC_PERIODIC;
        }
        o.h[d] = a.h[d];
        o.faces[d] = sol.faces[d];
    }
    o.alpha = a.alpha;
    o.eigen = a.spectral ? TIDE_EIGEN_SPECTRAL : TIDE_EIGEN_FD2;
    o.out_of_card = (tide_out_of_card)a.stream;
    tide_box box;
    if (a.has_grid)
        tide_box_in_grid(c->n, a.grid, rank, &box);

    /* Before planning, which allocates the plan's work memory: the least the run takes, an
     * even share of f and of u; refused where even that exceeds the node's memory (the exact
     * figure follows once the plan exists). */
    double scalar = c->prec == TIDE_DOUBLE ? sizeof(double) : sizeof(float);
    double share = (double)c->n[0] * c->n[1] * c->n[2] * scalar * c->batch / P;
    if (app_memory_check("tide poisson", 2 * share)) {
        rc = 1;
        goto done;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    int st = tide_poisson_plan_create(ctx, c->n, a.has_grid ? &box : NULL, &o, &plan);
    if (st) { /* the same on every rank: an argument it refuses is a bad argument */
        app_say_failure("tide poisson", st, ctx);
        rc = st == TIDE_ERR_ARGUMENT ? 2 : 1;
        goto done;
    }
    double tplan_max = app_max(MPI_Wtime() - t0);

    tide_poisson_info info;
    CHECK(tide_poisson_plan_info(plan, &info));
    CHECK(tide_poisson_plan_box(plan, &box));
    char desc[256];
    CHECK(tide_poisson_plan_describe(plan, desc, sizeof desc));
    int threads = 1;
    tide_context_threads(ctx, &threads);

    /* Arrays: f (kept for the checks) and u in host memory; the solves run on xf and xu, the
     * same arrays, or device copies with -device. In place, xu alone holds f then u. */
    size_t bytes = info.bytes;
    int dbl = c->prec == TIDE_DOUBLE;
    double need = app_max(2.0 * (double)bytes + (double)(info.host_bytes + info.pinned_bytes));
    tide_say("Tide %s: poisson %s %dx%dx%d, %d ranks x %d threads, backend %s, batch %d%s; "
             "f, u and plan %.4g GB of host memory per rank\n", tide_version(),
             dbl ? "double" : "float", c->n[0], c->n[1], c->n[2], P, threads,
             info.backend == TIDE_BACKEND_CUDA ? "cuda" : "cpu", c->batch,
             c->inplace ? ", in place" : "", need / 1e9);
    if (app_memory_check("tide poisson", need)) {
        rc = 1;
        goto done;
    }
    int ok = sol_ok && !tide_host_alloc(ctx, bytes, &f) && !tide_host_alloc(ctx, bytes, &u);
    if (ok && c->device)
        ok = (c->inplace || !tide_device_alloc(ctx, bytes, &xf)) &&
             !tide_device_alloc(ctx, bytes, &xu);
    else if (ok)
        xf = f, xu = u;
    times = malloc(sizeof(double) * (size_t)c->runs);
    mean = malloc(sizeof(double) * (size_t)c->batch);
    ok = ok && times && mean;
    int all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        tide_warn("tide poisson: out of memory allocating the arrays\n");
        rc = 1;
        goto done;
    }
    visit fv = {f, dbl, -(sol.kappa2 + a.alpha), NULL, 0, 0};
    each_point(&sol, &box, info.count, fill_one, &fv);

    char bcl[7], stretch[160] = "", ut[3][48];
    bc_label(a.bc, bcl);
    if (a.stretched >= 0)
        stretch_text(&sol, &a, stretch, sizeof stretch);
    for (int d = 0; d < 3; d++)
        mode_text(&sol, &a, d, ut[d], sizeof ut[d]);
    tide_say("Problem: lap(u) - alpha u = f, alpha %g, h %g %g %g, boundaries %s%s, %s; "
             "u = %s %s %s, phases from seed %u\n", a.alpha, a.h[0], a.h[1], a.h[2], bcl,
             stretch, a.spectral ? "spectral eigenvalues" : "7-point (FD2) operator", ut[0],
             ut[1], ut[2], c->seed);
    int staged = info.backend == TIDE_BACKEND_CUDA && info.exchange != TIDE_EXCHANGE_NCCL &&
                 info.exchange != TIDE_EXCHANGE_CUDA_MPI &&
                 info.exchange != TIDE_EXCHANGE_DIRECT && info.exchanges > 0;
    tide_say("Plan: %s (%s, exchange %s%s, %d exchanges, %d local passes%s)\n", desc,
             info.decomposition == TIDE_DECOMP_PENCILS ? "pencils"
             : info.decomposition == TIDE_DECOMP_SLABS ? "slabs" : "one rank",
             app_exchange_name(info.exchange), staged ? " through pinned host buffers" : "",
             info.exchanges, info.passes, info.singular ? "; singular: f's mean removed" : "");
    if (info.backend == TIDE_BACKEND_CUDA)
        tide_say("Data: %s; device memory %.3g GB/rank\n",
                 c->device ? "device arrays" : "host arrays", info.device_bytes / 1e9);

    /* ---- verification: the first solve against u_exact, and its discrete residual ---- */
    if (c->device || c->inplace)
        CHECK(tide_copy(ctx, c->inplace ? xu : xf, f, bytes));
    CHECK(tide_poisson_solve(plan, c->inplace ? xu : xf, xu));
    if (xu != u)
        CHECK(tide_copy(ctx, u, xu, bytes));
    CHECK(tide_poisson_mean(plan, mean));
    /* In a singular problem Tide returns the u of zero mean: compare with u_exact less its
     * discrete mean, cells weighted by width (0 to rounding on a uniform grid unless one too
     * small for any mode made u constant). */
    visit uv = {u, dbl, 0, info.singular ? sol.mean : NULL, 0, 0};
    each_point(&sol, &box, info.count, compare_one, &uv);
    double max_abs = app_max(uv.max_abs), max_ref = app_max(uv.max_ref);
    double max_error = max_ref > 0 ? max_abs / max_ref : max_abs;
    double floor_tol = dbl ? 1e-9 : 1e-4;
    double predicted = fd2_error(&sol, &a), estimate = fd2_estimate(&sol, &a);
    double err_tol = 2 * estimate + floor_tol;
    tide_ref_error re = {0, 0, 0};
    int residual = !a.spectral && tide_ref_fits(c->n, c->batch);
    if (residual)
        CHECK(tide_ref_poisson_residual(MPI_COMM_WORLD, c->n, a.h, o.bc, o.faces, a.alpha,
                                        info.singular, c->prec, c->batch, &box, f, u, &re));
    double res_tol = residual_tol(&sol, &a, dbl, max_ref + max_abs, re.max_ref);
    int passed = max_error <= err_tol && (!residual || re.rel_l2 <= res_tol);
    double mean_max = 0;
    for (int k = 0; k < c->batch; k++)
        mean_max = app_max_nan(mean_max, fabs(mean[k]));

    /* ---- timing: the verification solve was the warm-up ---- */
    run_arg ra = {ctx, plan, f, c->inplace ? xu : xf, xu, bytes};
    CHECK(app_time_runs("tide poisson", c->progress, c->runs, c->inplace ? restart : NULL, solve,
                        &ra, 1, times));
    app_stats ts;
    app_stats_of(times, c->runs, &ts);
    double memmax = app_max((double)(info.host_bytes + bytes + (c->inplace ? 0 : bytes)));
    double bound = 0;
    char bound_what[400] = "";
    figures fig;
    CHECK(bound_of(ctx, plan, &info, &bound, bound_what, sizeof bound_what, &fig));

    app_say_timing(tplan_max, &ts, info.flops, memmax);
    tide_say("Max error: %.6g\n", max_error);
    char what[64] = "";
    if (a.stretched >= 0)
        snprintf(what, sizeof what, ", finite-volume along %c,", "xyz"[a.stretched]);
    if (a.spectral && estimate == 0) {
        tide_say("Error: relative to max|u_exact|; spectral eigenvalues are exact for these "
                 "modes: tolerance %.0e\n", err_tol);
    } else {
        char pred[96] = "has no closed form on the stretched grid (the modes are not its "
                        "eigenvectors)";
        if (a.stretched < 0)
            snprintf(pred, sizeof pred, "is %.6g", predicted);
        tide_say("Error: relative to max|u_exact|; the operator's truncation on these modes "
                 "%s; tolerance %.3g = 2 x sum_d t_d^2/12 + %.0e (t_d = kappa_d h_d%s%s)\n",
                 pred, err_tol, floor_tol, a.spectral ? ", the line only" : "",
                 a.stretched >= 0 ? ", the widest cell along a stretched dimension" : "");
    }
    if (residual)
        tide_say("Residual: relative L2 %.3g, max %.3g of max|f| %.3g (the 7-point operator%s "
                 "applied to u by a naive loop on the gathered array)\n", re.rel_l2,
                 re.max_abs, re.max_ref, what);
    else
        tide_say("Residual: not computed (%s)\n", a.spectral
                 ? "the reference applies the 7-point operator, not the spectral one"
                 : "the grid is too large to gather on one rank");
    tide_say("Mean of f: %.3g (largest |mean| over %d field%s, tide_poisson_mean%s)\n",
             mean_max, c->batch, c->batch > 1 ? "s" : "",
             info.singular ? "; removed before solving" : "");
    tide_say("Verification: %s (max error %.3g, tolerance %.3g", passed ? "passed" : "FAILED",
             max_error, err_tol);
    if (residual)
        tide_say("; residual relative L2 %.3g, tolerance %.3g", re.rel_l2, res_tol);
    tide_say(")\n");
    if (bound > 0)
        app_say_bound(bound, bound_what, ts.median);

    if (c->json && rank == 0) {
        cJSON *j = app_json_head("poisson", c, P, threads, info.backend, desc, info.exchanges);
        cJSON_AddStringToObject(j, "bc", bcl);
        cJSON_AddItemToObject(j, "h", cJSON_CreateDoubleArray(a.h, 3));
        cJSON_AddNumberToObject(j, "alpha", a.alpha);
        cJSON_AddStringToObject(j, "eigen", a.spectral ? "spectral" : "fd2");
        /* the stretched dimension and its widest cell; null on a uniform grid */
        int str = a.stretched >= 0;
        app_json_real(j, "stretch", str ? a.stretch : NAN);
        app_json_real(j, "stretch_dim", str ? a.stretched : NAN);
        app_json_real(j, "max_width", str ? sol.width[a.stretched] : NAN);
        app_json_timing(j, tplan_max, &ts, info.flops, memmax);
        app_json_figures(j, info.location, info.exchange, &fig.cost, &fig.rates, fig.xrate,
                         bound, ts.median);
        app_json_real(j, "max_error", max_error);
        app_json_real(j, "error_tolerance", err_tol);
        app_json_real(j, "residual_rel_l2", residual ? re.rel_l2 : NAN);
        app_json_real(j, "residual_tolerance", residual ? res_tol : NAN);
        app_json_real(j, "mean_f_max", mean_max);
        cJSON_AddBoolToObject(j, "verified", passed);
        rc = app_json_write("tide poisson", j, c->json);
    }
    if (!passed)
        rc = 1;
done:
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    tide_poisson_plan_destroy(plan);
    tide_host_free(ctx, f);
    tide_host_free(ctx, u);
    if (c->device) {
        tide_device_free(ctx, xf);
        tide_device_free(ctx, xu);
    }
    tide_context_destroy(ctx);
    solution_free(&sol);
    free(times);
    free(mean);
    return rc;
}
