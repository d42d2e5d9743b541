/*
 * heat3d.c: a diffusion simulation on Tide's stencils, a starting point to copy into an MPI
 * code: explicit time steps on a grid the library splits over the ranks, progress lines,
 * checkpoints and restarts with MPI-IO, PNG images of a slice, and a check against the exact
 * solution. Built beside `tide` and run by the tests (tests/test_heat3d.sh):
 *
 *   mpirun -np 4 build/apps/heat3d -n 128 128 128 -steps 1000 -checkpoint-every 500 -checkpoint h
 *   mpirun -np 2 build/apps/heat3d -n 128 128 128 -steps 2000 -restart h.1000.chk
 *
 * The problem: u(t + 1) = S u(t) with S the library's default diffusion weights (7pt: centre
 * 1/4, six faces 1/8; 27pt: the product over x, y, z of 1/4, 1/2, 1/4 at offsets -1, 0, +1),
 * from u = m + A prod_d f_d(i_d), A = 1, with f_d(i) = cos(2 pi k_d i / n_d) along a periodic
 * dimension and f_d(i) = sin(pi k_d i / (n_d - 1)) along a Dirichlet one (0 on both face
 * planes, which the library keeps fixed); m = 0.5 when every dimension is periodic, else 0 so
 * that the face planes are exactly 0.
 *
 * The exact discrete solution: along a dimension, f(i - 1) + f(i + 1) = 2 cos(t) f(i) with
 * t = 2 pi k / n (periodic, the neighbours wrapping around) or t = pi k / (n - 1) (Dirichlet,
 * at every point the steps change: the neighbours on the faces are 0 = f(0) = f(n - 1)). So
 * the 7pt step maps the mode to 1/4 + 2 (cos tx + cos ty + cos tz) / 8 times itself, and the
 * 27pt step, a product of 1D steps 1/4, 1/2, 1/4, to prod_d (1/2 + cos(t_d) / 2) times
 * itself; both map the constant m to itself (the weights sum to 1). After s steps u is
 * m + A g^s prod_d f_d exactly, up to rounding; heat3d checks that at the end.
 *
 * The steps run with box NULL: on several ranks each rank holds the block of the plan's
 * process grid (C order) that tide_stencil_plan_info reports, and fills, checks, writes and
 * reads only that block.
 */
#include <dirent.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "app_util.h"
#include "tide.h"
#ifdef HEAT3D_PNG
#include <png.h>
#endif

/*
 * Checkpoint files (format version 2): a 512-byte header, then the whole grid in C order
 * (z fastest), n0 n1 n2 elements of 4 (float) or 8 (double) bytes, IEEE little-endian. The
 * header, every integer little-endian, unused bytes 0:
 *
 *     0  char[8]  magic "TIDEHEAT"
 *     8  u32      format version, 2
 *    12  u32      header bytes, 512
 *    16  i64[3]   n: the grid
 *    40  u32      element bytes: 4 (float) or 8 (double)
 *    44  u32      stencil: 7 or 27 (points)
 *    48  i64      step: the steps done since the initial condition
 *    56  char[4]  bc: 'p' or 'd' per dimension, then 0
 *    64  i64[3]   mode: k per dimension
 *    88  i32[3]   the writer's process grid (informational: any rank count may restart)
 *   100  i32      the writer's rank count (informational)
 *   104  u64      data checksum: splitmix64(S ^ H), S the wrapping sum over all points of
 *                 splitmix64(splitmix64(i) ^ b), i the point's C-order index in the grid,
 *                 b its element's bits (a float's 32 zero-extended), the same however the
 *                 grid is cut; H the FNV-1a (64 bit) of bytes 0 to 87 (magic to mode), so
 *                 that data whose header was changed to another grid, precision, stencil,
 *                 step, bc or mode (e.g. permuted dimensions, the same size) do not match
 *   112  u64      data bytes: n0 n1 n2 x element bytes
 *   504  u64      header checksum: FNV-1a (64 bit) of bytes 0 to 503
 *
 * A checkpoint is written to PREFIX.STEP.chk.tmp (each rank its block, collectively, through
 * a subarray file view) and renamed to PREFIX.STEP.chk once every rank has closed it, so an
 * existing checkpoint is never left half-written. A PREFIX.STEP.chk.tmp found at the start
 * was left by a run killed while writing it, and is removed (with a note on stderr).
 */
#define HDR_BYTES 512
#define HDR_VERSION 2
/* The header's bytes the data checksum binds: those that describe the data. */
#define HDR_BOUND 88

static const char *about =
    "Explicit diffusion steps u <- S u of Tide's 7-point or 27-point stencil on an NX x NY x NZ\n"
    "grid split over the P ranks by the library, from a Fourier mode whose exact discrete\n"
    "evolution is known: u = m + A prod_d f_d, A = 1, f_d(i) = cos(2 pi k_d i / n_d) along a\n"
    "periodic dimension, sin(pi k_d i / (n_d - 1)) along a Dirichlet one; m = 0.5 when all\n"
    "dimensions are periodic, else 0. Each step multiplies the mode by g = 1/4 + (cos tx +\n"
    "cos ty + cos tz)/4 (7pt) or prod_d (1/2 + cos(t_d)/2) (27pt), t_d = 2 pi k_d / n_d\n"
    "(periodic) or pi k_d / (n_d - 1) (Dirichlet).\n";

static const char *after =
    "The check: max |u - (m + A g^s prod_d f_d)| over all points after s steps, against the\n"
    "tolerance (s + 1) x taps x eps x (m + A), eps the precision's machine epsilon: a step\n"
    "rounds each update at most taps times by eps/2 of at most m + A, positive weights\n"
    "summing to 1 never amplify earlier errors, and the factor 2 covers the rounding of the\n"
    "initial values and of the exact solution (computed in double).\n"
    "\n"
    "Outputs: where -checkpoint's and -png's files cannot be created (a probe file beside\n"
    "them), heat3d stops before the first step with the system's reason; a checkpoint or\n"
    "image that fails during the run (a full disk) stops every rank with the reason, no file\n"
    "left half-written.\n"
    "\n"
#ifdef HEAT3D_PNG
    "This build: PNG images available (libpng).\n";
#else
    "This build: PNG images not available (built without libpng).\n";
#endif

typedef struct {
    int n[3], n_given;
    long long steps;
    int shape;                 /* tide_stencil_shape */
    int prec;                  /* tide_precision */
    int backend;               /* tide_backend */
    char bc[4];                /* 'p' or 'd' per dimension */
    int mode[3];
    int fuse;
    int exchange;              /* tide_exchange of the halos: AUTO, P2P, NCCL or CUDA_MPI */
    double budget_gb;
    long long ckpt_every;      /* 0: only at the end, when ckpt is set */
    const char *ckpt;          /* checkpoint prefix, NULL: none */
    const char *restart;
    long long png_every;
    const char *png;           /* image prefix, NULL: none */
    int slice_axis, slice_at;  /* slice_at -1: the middle */
    double progress;           /* seconds between progress lines, 0: none */
    int quiet;
} options;

/* The run's state on this rank. */
typedef struct {
    options o;
    int rank, P, dbl;
    size_t es;                 /* element bytes */
    tide_box box;              /* this rank's block, C order */
    int grid[3];               /* the plan's process grid ({1, 1, 1} on one rank) */
    tide_box *boxes;           /* every rank's block (images) */
    double *f[3];              /* f_d(i), i < n[d] */
    double m, A, g, eps;
    int taps;
    void *u;
} sim;

/* ---- helpers ------------------------------------------------------------------------------ */

static int g_rank;
/* Rank 0: the first failure writing stdout, its errno (0: none). */
static int out_failed;

/* Rank 0 prints to stderr. */
static void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warn(const char *fmt, ...)
{
    if (g_rank)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

/* Why a library call failed: the context's last error, or the status's name without one. */
static const char *why(int st, const tide_context *ctx)
{
    const char *e = tide_last_error(ctx);
    return e && *e ? e : tide_strerror(st);
}

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t fnv1a(const unsigned char *p, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static int little_endian(void)
{
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* Element i of u as a double, and its bits. */
static double value(const sim *s, size_t i)
{
    return s->dbl ? ((const double *)s->u)[i] : ((const float *)s->u)[i];
}

static uint64_t bits(const sim *s, size_t i)
{
    if (s->dbl) {
        uint64_t b;
        memcpy(&b, (const double *)s->u + i, 8);
        return b;
    }
    uint32_t b;
    memcpy(&b, (const float *)s->u + i, 4);
    return b;
}

/* ---- options ------------------------------------------------------------------------------ */

/* Steps, and the counts of steps between checkpoints, images and progress lines: up to 2^53,
 * exact in the doubles that rates and tolerances are computed in (and a step plus a count
 * never overflows). */
#define STEPS_MAX (1LL << 53)

/* -bc's value: p or d per dimension, or one letter for all three, into dest (char[4]): 0,
 * else -1 with why in err. */
static int parse_bc(const char *name, char **v, void *dest, char *err, size_t len)
{
    const char *s = v[0];
    size_t l = strlen(s);
    char *bc = dest;
    if ((l != 1 && l != 3) || strspn(s, "pd") != l)
        return snprintf(err, len, "%s %s: expected p (periodic) or d (Dirichlet) per dimension, "
                        "or one letter for all three", name, app_shown(s)), -1;
    for (int d = 0; d < 3; d++)
        bc[d] = s[l == 1 ? 0 : d];
    return 0;
}

/* -png-slice's axis and plane v[0], v[1] into the options at dest: 0, else -1 with why in
 * err. */
static int parse_slice(const char *name, char **v, void *dest, char *err, size_t len)
{
    options *o = dest;
    int axis = strlen(v[0]) == 1 && v[0][0] >= 'x' && v[0][0] <= 'z' ? v[0][0] - 'x' : -1;
    if (axis < 0 || app_to_int(v[1], 0, APP_SIZE_MAX, &o->slice_at))
        return snprintf(err, len, "%s %s %s: expected an axis x, y or z and a plane 0..%d",
                        name, app_shown(v[0]), app_shown(v[1]), APP_SIZE_MAX), -1;
    o->slice_axis = axis;
    return 0;
}

/* Parses argv the same way on every rank: 0 run, 1 help shown, APP_USAGE (why printed). */
static int parse(int argc, char **argv, options *o)
{
    static const char *const shapes[] = {"7pt", "27pt"}, *const precs[] = {"float", "double"},
                             *const backends[] = {"auto", "cpu", "cuda"},
                             *const exchanges[] = {"auto", "p2p", "nccl", "cuda-mpi"};
    static const int shape_v[] = {TIDE_STENCIL_7PT, TIDE_STENCIL_27PT},
                     prec_v[] = {TIDE_FLOAT, TIDE_DOUBLE},
                     backend_v[] = {TIDE_BACKEND_AUTO, TIDE_BACKEND_CPU, TIDE_BACKEND_CUDA},
                     exchange_v[] = {TIDE_EXCHANGE_AUTO, TIDE_EXCHANGE_P2P, TIDE_EXCHANGE_NCCL,
                                     TIDE_EXCHANGE_CUDA_MPI};
    *o = (options){.n = {64, 64, 64}, .steps = 100, .shape = TIDE_STENCIL_7PT,
                   .prec = TIDE_DOUBLE, .backend = TIDE_BACKEND_AUTO, .bc = "ppp",
                   .mode = {1, 1, 1}, .slice_axis = 2, .slice_at = -1,
                   .progress = APP_PROGRESS_EVERY};
    app_opt opts[] = {
        {"-n", "NX NY NZ", APP_INTS, o->n, 3, APP_SIZE_MAX, .count = 3, .given = &o->n_given,
         .help = "the grid, each 3 to 2^30, at most 2^62 points (default 64 64 64; with "
                 "-restart and no -n, the checkpoint's)"},
        {"-steps", "S", APP_LL, &o->steps, 0, STEPS_MAX,
         .help = "the total steps from the initial condition, also after a restart, 0 to 2^53 "
                 "(default 100)"},
        {"-stencil", NULL, APP_NAME, &o->shape, .count = 2, .names = shapes, .values = shape_v,
         .help = "the library's default weights: 7pt centre 1/4, the six faces 1/8; 27pt the "
                 "products of 1/4, 1/2, 1/4 (default 7pt)"},
        {"-precision", NULL, APP_NAME, &o->prec, .count = 2, .names = precs, .values = prec_v,
         .help = "(default double)"},
        {"-backend", NULL, APP_NAME, &o->backend, .count = 3, .names = backends,
         .values = backend_v,
         .help = "auto (default): the library's choice (cuda where the ranks have GPUs; several "
                 "ranks may share one)"},
        {"-bc", "XYZ", APP_CUSTOM, o->bc, .parse = parse_bc,
         .help = "p (periodic) or d (Dirichlet: the face planes keep their values) per "
                 "dimension, or one letter for all three (default ppp)"},
        {"-mode", "KX KY KZ", APP_INTS, o->mode, 0, APP_SIZE_MAX, .count = 3,
         .help = "the initial Fourier mode, 0 to 2^30 each, along a Dirichlet dimension not a "
                 "multiple of n - 1 (the mode would be 0 on every point; default 1 1 1)"},
        {"-exchange", NULL, APP_NAME, &o->exchange, .count = 4, .names = exchanges,
         .values = exchange_v,
         .help = "several ranks: the halos by MPI (GPU data through pinned host buffers), over "
                 "NCCL, or by MPI on device pointers (default auto: the plan's choice)"},
        {"-fuse", "K", APP_INT, &o->fuse, 0, APP_FUSE_MAX,
         .help = "steps per pass over memory, 0 to 1024 (default 0: the plan's choice)"},
        {"-budget", "GB", APP_REAL, &o->budget_gb, 0, APP_BUDGET_MAX,
         .help = "device memory the context may hold, above 0 and at most 10^6 (cuda; default "
                 "the library's)"},
        {"-checkpoint", "PREFIX", APP_TEXT, &o->ckpt,
         .help = "write PREFIX.STEP.chk at the end (default prefix with -checkpoint-every "
                 "alone: heat3d); PREFIX.STEP.chk.tmp files, left by a run killed while writing "
                 "one, are removed at the start"},
        {"-checkpoint-every", "C", APP_LL, &o->ckpt_every, 1, STEPS_MAX,
         .help = "... and after every C steps (1 to 2^53)"},
        {"-restart", "FILE", APP_TEXT, &o->restart,
         .help = "continue from a checkpoint to -steps, on any rank count: the file's grid (-n, "
                 "when given, must equal it); precision, stencil, bc and mode must equal this "
                 "run's, the size and the checksum (of the data and the header's description "
                 "of them) must be right; the result is bitwise that of a run that never "
                 "stopped"},
        {"-png", "PREFIX", APP_TEXT, &o->png,
         .help = "write PREFIX.STEP.png, a slice in blue-white-red over [m - A, m + A], at the "
                 "end (default prefix with -png-every alone: heat3d)"},
        {"-png-every", "N", APP_LL, &o->png_every, 1, STEPS_MAX,
         .help = "... and at every multiple of N steps (step 0 included; 1 to 2^53)"},
        {"-png-slice", "x|y|z K", APP_CUSTOM, o, .count = 2, .parse = parse_slice,
         .help = "the slice: plane K across that axis (default z at NZ/2); rows along the "
                 "lower of the other two dimensions"},
        {"-progress", "S", APP_CUSTOM, &o->progress, .parse = app_parse_seconds,
         .help = "progress on stderr every S seconds (from 0, none, to 86400; default 5), "
                 "after the first S: a line with the step, percent, GCell/s, time left and the "
                 "error, updated in place on a terminal"},
        {"-quiet", .kind = APP_FLAG, .dest = &o->quiet, .count = 1,
         .help = "print only the check (and errors, and the removal of unfinished "
                 "checkpoints)"},
    };
    app_cmd cmd = {"heat3d", about, after, opts, sizeof opts / sizeof opts[0]};
    int rc = app_parse(&cmd, argc, argv);
    if (rc)
        return rc;
    if (app_product(o->n, 3, APP_POINTS_MAX) < 0)
        return app_usage_error(cmd.name, "-n %d %d %d: more than 2^62 points", o->n[0], o->n[1],
                               o->n[2]);
    if (o->ckpt_every && !o->ckpt)
        o->ckpt = "heat3d";
    if (o->png_every && !o->png)
        o->png = "heat3d";
#ifndef HEAT3D_PNG
    if (o->png)
        return app_usage_error(cmd.name, "-png: this heat3d was built without libpng (install "
                               "libpng-dev, then reconfigure and rebuild)");
#endif
    if ((o->ckpt || o->restart) && !little_endian())
        return app_usage_error(cmd.name, "checkpoints are little-endian; this machine is not");
    return 0;
}

/* Checks that need the grid (known after a restart's header): 0, else 2 with err. */
static int check_grid(options *o, char *err, size_t len)
{
    int a = o->slice_axis, d1 = a == 0 ? 1 : 0, d2 = a == 2 ? 1 : 2;
    for (int d = 0; d < 3; d++) /* sin(pi k i / (n - 1)) is 0 at every point: nothing to check */
        if (o->bc[d] == 'd' && o->mode[d] % (o->n[d] - 1) == 0)
            return snprintf(err, len, "-mode: k = %d along Dirichlet dimension %c is zero on all "
                            "%d points; give k not a multiple of %d", o->mode[d], 'x' + d,
                            o->n[d], o->n[d] - 1), 2;
    if (o->slice_at < 0)
        o->slice_at = o->n[a] / 2;
    if (o->png && o->slice_at >= o->n[a])
        return snprintf(err, len, "-png-slice %c %d: the grid has %d planes across %c",
                        'x' + a, o->slice_at, o->n[a], 'x' + a), 2;
    if (o->png && (long long)o->n[d1] * o->n[d2] > INT_MAX / 4)
        return snprintf(err, len, "-png: a slice of %dx%d points is too large", o->n[d1],
                        o->n[d2]), 2;
    return 0;
}

/* ---- the mode and its exact evolution ----------------------------------------------------- */

/* f_d, m, A and g of the options' mode. 0, else -1 (out of memory). */
static int make_mode(sim *s)
{
    const double pi = 3.14159265358979323846;
    const options *o = &s->o;
    int dirichlet = 0;
    double gsum = 0, gprod = 1;
    for (int d = 0; d < 3; d++) {
        int n = o->n[d], k = o->mode[d], per = o->bc[d] == 'p';
        dirichlet |= !per;
        if (!(s->f[d] = malloc(sizeof(double) * (size_t)n)))
            return -1;
        for (int i = 0; i < n; i++) /* exact 0 on the Dirichlet faces */
            s->f[d][i] = per ? cos(2 * pi * k * (double)i / n)
                             : i == 0 || i == n - 1 ? 0 : sin(pi * k * (double)i / (n - 1));
        double t = per ? 2 * pi * k / n : pi * k / (n - 1);
        gsum += cos(t);
        gprod *= 0.5 + 0.5 * cos(t);
    }
    s->m = dirichlet ? 0 : 0.5;
    s->A = 1;
    s->g = o->shape == TIDE_STENCIL_7PT ? 0.25 + gsum / 4 : gprod;
    s->taps = o->shape == TIDE_STENCIL_7PT ? 7 : 27;
    s->eps = s->dbl ? DBL_EPSILON : FLT_EPSILON;
    return 0;
}

/* The initial condition on this rank's block. */
static void fill(sim *s)
{
    const tide_box *b = &s->box;
    size_t i = 0;
    for (int x = b->lo[0]; x < b->hi[0]; x++)
        for (int y = b->lo[1]; y < b->hi[1]; y++) {
            double fxy = s->f[0][x] * s->f[1][y];
            for (int z = b->lo[2]; z < b->hi[2]; z++, i++) {
                double v = s->m + s->A * (fxy * s->f[2][z]);
                if (s->dbl)
                    ((double *)s->u)[i] = v;
                else
                    ((float *)s->u)[i] = (float)v;
            }
        }
}

/* Collective: after `step` steps, out[0] = max |u - exact| over all points (NaN where one is
 * NaN), out[1] the mean of u, out[2] the exact mean. */
static void measure(const sim *s, long long step, double out[3])
{
    const tide_box *b = &s->box;
    double amp = s->A * pow(s->g, (double)step), err = 0, sum = 0;
    size_t i = 0;
    for (int x = b->lo[0]; x < b->hi[0]; x++)
        for (int y = b->lo[1]; y < b->hi[1]; y++) {
            double fxy = s->f[0][x] * s->f[1][y];
            for (int z = b->lo[2]; z < b->hi[2]; z++, i++) {
                double v = value(s, i), e = fabs(v - (s->m + amp * (fxy * s->f[2][z])));
                err = app_max_nan(err, e);
                sum += v;
            }
        }
    err = app_max(err);
    MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double points = (double)s->o.n[0] * s->o.n[1] * s->o.n[2], fmean = 1;
    for (int d = 0; d < 3; d++) {
        double fs = 0;
        for (int j = 0; j < s->o.n[d]; j++)
            fs += s->f[d][j];
        fmean *= fs / s->o.n[d];
    }
    out[0] = err;
    out[1] = sum / points;
    out[2] = s->m + amp * fmean;
}

/* ---- checkpoints -------------------------------------------------------------------------- */

typedef struct {
    uint32_t version;
    long long n[3], step, mode[3];
    int elem, stencil, grid[3], ranks;
    char bc[4];
    uint64_t sum, data_bytes;
} header;

static void header_put(const header *h, unsigned char *p)
{
    memset(p, 0, HDR_BYTES);
    memcpy(p, "TIDEHEAT", 8);
    put_u32(p + 8, h->version);
    put_u32(p + 12, HDR_BYTES);
    for (int d = 0; d < 3; d++) {
        put_u64(p + 16 + 8 * d, (uint64_t)h->n[d]);
        put_u64(p + 64 + 8 * d, (uint64_t)h->mode[d]);
        put_u32(p + 88 + 4 * d, (uint32_t)h->grid[d]);
    }
    put_u32(p + 40, (uint32_t)h->elem);
    put_u32(p + 44, (uint32_t)h->stencil);
    put_u64(p + 48, (uint64_t)h->step);
    memcpy(p + 56, h->bc, 3);
    put_u32(p + 100, (uint32_t)h->ranks);
    put_u64(p + 104, h->sum);
    put_u64(p + 112, h->data_bytes);
    put_u64(p + HDR_BYTES - 8, fnv1a(p, HDR_BYTES - 8));
}

static void header_get(const unsigned char *p, header *h)
{
    h->version = get_u32(p + 8);
    for (int d = 0; d < 3; d++) {
        h->n[d] = (long long)get_u64(p + 16 + 8 * d);
        h->mode[d] = (long long)get_u64(p + 64 + 8 * d);
        h->grid[d] = (int)get_u32(p + 88 + 4 * d);
    }
    h->elem = (int)get_u32(p + 40);
    h->stencil = (int)get_u32(p + 44);
    h->step = (long long)get_u64(p + 48);
    memcpy(h->bc, p + 56, 3);
    h->bc[3] = 0;
    h->ranks = (int)get_u32(p + 100);
    h->sum = get_u64(p + 104);
    h->data_bytes = get_u64(p + 112);
}

/* Collective: the wrapping sum over all points that the data checksum starts from (see the
 * format above). */
static uint64_t point_sum(const sim *s)
{
    const tide_box *b = &s->box;
    uint64_t sum = 0;
    size_t i = 0;
    for (int x = b->lo[0]; x < b->hi[0]; x++)
        for (int y = b->lo[1]; y < b->hi[1]; y++) {
            uint64_t row = ((uint64_t)x * (uint64_t)s->o.n[1] + (uint64_t)y) *
                           (uint64_t)s->o.n[2];
            for (int z = b->lo[2]; z < b->hi[2]; z++, i++)
                sum += splitmix64(splitmix64(row + (uint64_t)z) ^ bits(s, i));
        }
    MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    return sum;
}

/* Collective: the data checksum of u described by the header hdr (see the format above). */
static uint64_t checksum(const sim *s, const unsigned char *hdr)
{
    return splitmix64(point_sum(s) ^ fnv1a(hdr, HDR_BOUND));
}

/* The MPI types of this rank's block: in the file a subarray of the grid, in memory the
 * whole block; an empty block moves count 0 elements. */
typedef struct {
    MPI_Datatype file, mem;
    int count;
} io_types;

static void io_types_make(const sim *s, io_types *t)
{
    MPI_Datatype et = s->dbl ? MPI_DOUBLE : MPI_FLOAT;
    int sub[3], lo[3], zero[3] = {0, 0, 0};
    for (int d = 0; d < 3; d++) {
        sub[d] = s->box.hi[d] - s->box.lo[d];
        lo[d] = s->box.lo[d];
    }
    t->file = t->mem = et;
    t->count = 0;
    if (tide_box_count(&s->box) == 0)
        return;
    MPI_Type_create_subarray(3, s->o.n, sub, lo, MPI_ORDER_C, et, &t->file);
    MPI_Type_commit(&t->file);
    MPI_Type_create_subarray(3, sub, sub, zero, MPI_ORDER_C, et, &t->mem);
    MPI_Type_commit(&t->mem);
    t->count = 1;
}

static void io_types_free(io_types *t)
{
    if (t->count) {
        MPI_Type_free(&t->file);
        MPI_Type_free(&t->mem);
    }
}

/* "what: the MPI error's text" into msg (when rc is an error and msg holds none yet). */
static int mpi_failed(int rc, const char *what, char *msg, size_t len)
{
    if (rc == MPI_SUCCESS)
        return 0;
    if (!*msg) {
        char e[MPI_MAX_ERROR_STRING];
        int el = 0;
        MPI_Error_string(rc, e, &el);
        snprintf(msg, len, "%s: %s", what, e);
    }
    return 1;
}

/* Collective: writes PREFIX.STEP.chk (see the format above). 0, else 1 with the message
 * printed and no file left but an earlier one of that name. */
static int write_checkpoint(sim *s, long long step)
{
    size_t plen = strlen(s->o.ckpt) + 48;
    char *path = malloc(plen), *tmp = malloc(plen + 4), msg[512] = "";
    if (app_agree(!path || !tmp, NULL, 0)) {
        warn("heat3d: out of memory writing a checkpoint\n");
        free(path);
        free(tmp);
        return 1;
    }
    snprintf(path, plen, "%s.%lld.chk", s->o.ckpt, step);
    snprintf(tmp, plen + 4, "%s.tmp", path);
    header h = {.version = HDR_VERSION, .step = step, .elem = (int)s->es, .stencil = s->taps,
                .ranks = s->P};
    for (int d = 0; d < 3; d++) {
        h.n[d] = s->o.n[d];
        h.mode[d] = s->o.mode[d];
        h.grid[d] = s->grid[d];
    }
    memcpy(h.bc, s->o.bc, 4);
    h.data_bytes = (uint64_t)h.n[0] * (uint64_t)h.n[1] * (uint64_t)h.n[2] * s->es;
    unsigned char hdr[HDR_BYTES];
    header_put(&h, hdr);
    h.sum = checksum(s, hdr); /* of the data as this header describes them */
    header_put(&h, hdr);

    MPI_File fh;
    int rc = MPI_File_open(MPI_COMM_WORLD, tmp, MPI_MODE_CREATE | MPI_MODE_WRONLY,
                           MPI_INFO_NULL, &fh);
    int bad = mpi_failed(rc, "cannot create", msg, sizeof msg);
    if (app_agree(bad, msg, sizeof msg)) { /* opening is collective: it fails on every rank */
        warn("heat3d: %s: %s\n", tmp, msg);
        free(path);
        free(tmp);
        return 1;
    }
    io_types t;
    io_types_make(s, &t);
    rc = MPI_File_set_size(fh, (MPI_Offset)(HDR_BYTES + h.data_bytes));
    bad = mpi_failed(rc, "cannot size", msg, sizeof msg);
    if (!bad && s->rank == 0) {
        rc = MPI_File_write_at(fh, 0, hdr, HDR_BYTES, MPI_BYTE, MPI_STATUS_IGNORE);
        bad = mpi_failed(rc, "cannot write the header", msg, sizeof msg);
    }
    /* The collective calls below run on every rank whatever happened above. */
    rc = MPI_File_set_view(fh, HDR_BYTES, s->dbl ? MPI_DOUBLE : MPI_FLOAT, t.file, "native",
                           MPI_INFO_NULL);
    bad |= mpi_failed(rc, "cannot set the view", msg, sizeof msg);
    rc = MPI_File_write_all(fh, s->u, t.count, t.mem, MPI_STATUS_IGNORE);
    bad |= mpi_failed(rc, "cannot write the data", msg, sizeof msg);
    rc = MPI_File_close(&fh);
    bad |= mpi_failed(rc, "cannot close", msg, sizeof msg);
    io_types_free(&t);
    /* Every rank has closed the file: rank 0 renames it into place. */
    bad = app_agree(bad, msg, sizeof msg);
    if (!bad && s->rank == 0 && rename(tmp, path))
        bad = snprintf(msg, sizeof msg, "cannot rename to %s: %s", path, strerror(errno)) > 0;
    bad = app_agree(bad, msg, sizeof msg);
    if (bad) {
        warn("heat3d: %s: %s\n", tmp, msg);
        if (s->rank == 0)
            remove(tmp);
    } else if (!s->o.quiet && s->rank == 0) {
        printf("Checkpoint: %s (step %lld, checksum %016llx)\n", path, step,
               (unsigned long long)h.sum);
        app_flush_out(&out_failed);
    }
    free(path);
    free(tmp);
    return bad;
}

static const char *prec_name(int elem)
{
    return elem == 8 ? "double" : elem == 4 ? "float" : "unknown";
}

/* Rank 0: reads and checks FILE's header against the options (n taken from the file when -n
 * was not given). 0, else 1 with the reason (prefixed by the file's name) in msg. */
static int read_header(const options *o, unsigned char *hdr, header *h, char *msg,
                       size_t len)
{
    const char *file = o->restart;
    FILE *f = fopen(file, "rb");
    struct stat sb;
    if (!f)
        return snprintf(msg, len, "%s: cannot open: %s", file, strerror(errno)), 1;
    if (fstat(fileno(f), &sb) || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return snprintf(msg, len, "%s: not a regular file", file), 1;
    }
    long long size = (long long)sb.st_size;
    size_t got = fread(hdr, 1, HDR_BYTES, f);
    fclose(f);
    if (size < HDR_BYTES || got != HDR_BYTES)
        return snprintf(msg, len, "%s: truncated: %lld bytes, shorter than the %d-byte header",
                        file, size, HDR_BYTES), 1;
    if (memcmp(hdr, "TIDEHEAT", 8))
        return snprintf(msg, len, "%s: not a heat3d checkpoint (no TIDEHEAT magic)", file), 1;
    header_get(hdr, h);
    if (h->version != HDR_VERSION || get_u32(hdr + 12) != HDR_BYTES)
        return snprintf(msg, len, "%s: checkpoint format version %u, this heat3d reads "
                        "version %d only", file, h->version, HDR_VERSION), 1;
    if (get_u64(hdr + HDR_BYTES - 8) != fnv1a(hdr, HDR_BYTES - 8))
        return snprintf(msg, len, "%s: header checksum mismatch: corrupted header", file), 1;
    char fn[80], rn[80];
    snprintf(fn, sizeof fn, "%lldx%lldx%lld", h->n[0], h->n[1], h->n[2]);
    snprintf(rn, sizeof rn, "%dx%dx%d", o->n[0], o->n[1], o->n[2]);
    int nbad = 0, mbad = 0;
    for (int d = 0; d < 3; d++) {
        if (h->n[d] < 3 || h->n[d] > APP_SIZE_MAX)
            return snprintf(msg, len, "%s: checkpoint of a %s grid, not a grid heat3d runs",
                            file, fn), 1;
        nbad |= o->n_given && h->n[d] != o->n[d];
        mbad |= h->mode[d] != o->mode[d];
    }
    if (nbad)
        return snprintf(msg, len, "%s: checkpoint of a %s grid, this run is %s", file, fn, rn),
               1;
    const char *pn = o->prec == TIDE_DOUBLE ? "double" : "float";
    if (h->elem != (o->prec == TIDE_DOUBLE ? 8 : 4))
        return snprintf(msg, len, "%s: checkpoint in %s precision, this run is %s", file,
                        prec_name(h->elem), pn), 1;
    int taps = o->shape == TIDE_STENCIL_7PT ? 7 : 27;
    if (h->stencil != taps)
        return snprintf(msg, len, "%s: checkpoint of the %dpt stencil, this run uses %dpt",
                        file, h->stencil, taps), 1;
    if (memcmp(h->bc, o->bc, 3))
        return snprintf(msg, len, "%s: checkpoint with boundaries %.3s, this run has %.3s",
                        file, h->bc, o->bc), 1;
    if (mbad)
        return snprintf(msg, len, "%s: checkpoint of mode %lld %lld %lld, this run has mode "
                        "%d %d %d", file, h->mode[0], h->mode[1], h->mode[2], o->mode[0],
                        o->mode[1], o->mode[2]), 1;
    if ((double)h->n[0] * (double)h->n[1] * (double)h->n[2] * h->elem > 1e18)
        return snprintf(msg, len, "%s: checkpoint of a %s grid, too large", file, fn), 1;
    uint64_t data = (uint64_t)h->n[0] * (uint64_t)h->n[1] * (uint64_t)h->n[2] *
                    (uint64_t)h->elem;
    long long want = (long long)(HDR_BYTES + data);
    if (size != want || h->data_bytes != data)
        return snprintf(msg, len, "%s: %s: %lld bytes, a %s %s checkpoint has %lld", file,
                        size < want ? "truncated" : "wrong size", size, fn, pn, want), 1;
    if (h->step < 0 || h->step > o->steps)
        return snprintf(msg, len, "%s: checkpoint at step %lld, past this run's last step "
                        "(-steps %lld)", file, h->step, o->steps), 1;
    return 0;
}

/* Collective: reads this rank's block of the checkpoint whose header hdr read_header accepted,
 * and checks the data's checksum. 0, else 1 with the message printed. */
static int read_data(sim *s, const unsigned char *hdr, const header *h)
{
    char msg[512] = "";
    MPI_File fh;
    int rc = MPI_File_open(MPI_COMM_WORLD, s->o.restart, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    int bad = mpi_failed(rc, "cannot open", msg, sizeof msg);
    if (app_agree(bad, msg, sizeof msg)) {
        warn("heat3d: %s: %s\n", s->o.restart, msg);
        return 1;
    }
    io_types t;
    io_types_make(s, &t);
    rc = MPI_File_set_view(fh, HDR_BYTES, s->dbl ? MPI_DOUBLE : MPI_FLOAT, t.file, "native",
                           MPI_INFO_NULL);
    bad |= mpi_failed(rc, "cannot set the view", msg, sizeof msg);
    rc = MPI_File_read_all(fh, s->u, t.count, t.mem, MPI_STATUS_IGNORE);
    bad |= mpi_failed(rc, "cannot read the data", msg, sizeof msg);
    MPI_File_close(&fh);
    io_types_free(&t);
    if (app_agree(bad, msg, sizeof msg)) {
        warn("heat3d: %s: %s\n", s->o.restart, msg);
        return 1;
    }
    uint64_t sum = checksum(s, hdr);
    if (sum != h->sum) {
        warn("heat3d: %s: checksum mismatch: corrupted data, or a header changed to describe "
             "them otherwise (grid, precision, stencil, step, bc or mode): the header says "
             "%016llx, the data sum to %016llx\n", s->o.restart, (unsigned long long)h->sum,
             (unsigned long long)sum);
        return 1;
    }
    return 0;
}

/* ---- images ------------------------------------------------------------------------------- */

#ifdef HEAT3D_PNG
/* Where libpng's error handler puts its message. */
typedef struct {
    const char *path;
    char *msg;
    size_t len;
} png_fail;

/* libpng's error handler: the message (and the system's reason of a failed write), then back
 * to png_file's setjmp. */
static void png_error_to_msg(png_structp png, png_const_charp what)
{
    png_fail *e = png_get_error_ptr(png);
    int err = errno;
    snprintf(e->msg, e->len, "cannot write %s: %s%s%s", e->path, what, err ? ": " : "",
             err ? strerror(err) : "");
    png_longjmp(png, 1);
}

/* Rank 0: an 8-bit RGB PNG of w x h pixels. 0, else 1 with the reason in msg and no file
 * left half-written. */
static int png_file(const char *path, const unsigned char *rgb, int w, int h, char *msg,
                    size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return snprintf(msg, len, "cannot create %s: %s", path, strerror(errno)), 1;
    png_fail e = {path, msg, len};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &e, png_error_to_msg, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    errno = 0;
    if (!png || !info || setjmp(png_jmpbuf(png))) {
        if (!png || !info)
            snprintf(msg, len, "cannot write %s: out of memory in libpng", path);
        png_destroy_write_struct(&png, &info);
        fclose(f);
        app_discard(path);
        return 1;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < h; y++)
        png_write_row(png, rgb + (size_t)y * (size_t)w * 3);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return app_close_file(f, path, msg, len) ? 1 : 0;
}
#else
static int png_file(const char *path, const unsigned char *rgb, int w, int h, char *msg,
                    size_t len)
{
    (void)rgb, (void)w, (void)h;
    return snprintf(msg, len, "%s: this heat3d was built without libpng", path), 1;
}
#endif

/* The part of the slice in box b: its points, 0 when the slice misses b. */
static int slice_part(const sim *s, const tide_box *b, int d1, int d2)
{
    int a = s->o.slice_axis, k = s->o.slice_at;
    if (k < b->lo[a] || k >= b->hi[a])
        return 0;
    return (b->hi[d1] - b->lo[d1]) * (b->hi[d2] - b->lo[d2]);
}

/* Collective: PREFIX.STEP.png of the slice, gathered to rank 0 (each rank sends its part,
 * rows along d1, columns along d2), in blue (m - A) - white (m) - red (m + A). 0, else 1
 * with the message printed. */
static int write_png(sim *s, long long step)
{
    int a = s->o.slice_axis, d1 = a == 0 ? 1 : 0, d2 = a == 2 ? 1 : 2, P = s->P;
    int rows = s->o.n[d1], cols = s->o.n[d2], k = s->o.slice_at;
    int mine = slice_part(s, &s->box, d1, d2), *counts = NULL, *displs = NULL, total = 0;
    float *part = malloc(sizeof(float) * (size_t)(mine ? mine : 1)), *recv = NULL;
    float *plane = NULL;
    unsigned char *rgb = NULL;
    char msg[512] = "", *path = NULL;
    size_t plen = strlen(s->o.png) + 48;
    int bad = !part;
    /* The image: each grid point a square of scale pixels, at least ~256 pixels across. */
    int big = rows > cols ? rows : cols, scale = big >= 256 ? 1 : 256 / big;
    scale = scale > 8 ? 8 : scale;
    if (s->rank == 0) {
        counts = malloc(sizeof(int) * (size_t)P);
        displs = malloc(sizeof(int) * (size_t)P);
        plane = malloc(sizeof(float) * (size_t)rows * (size_t)cols);
        recv = malloc(sizeof(float) * (size_t)rows * (size_t)cols);
        rgb = malloc((size_t)rows * (size_t)cols * 3 * (size_t)scale * (size_t)scale);
        path = malloc(plen);
        bad |= !counts || !displs || !plane || !recv || !rgb || !path;
        for (int r = 0; !bad && r < P; r++) {
            counts[r] = slice_part(s, &s->boxes[r], d1, d2);
            displs[r] = total;
            total += counts[r];
        }
    }
    if (app_agree(bad, NULL, 0)) {
        warn("heat3d: out of memory writing an image\n");
        bad = 1;
        goto done;
    }
    if (mine) { /* this block's part of the plane, in the block's C order */
        const tide_box *b = &s->box;
        int e[3] = {b->hi[0] - b->lo[0], b->hi[1] - b->lo[1], b->hi[2] - b->lo[2]}, p[3];
        size_t j = 0;
        p[a] = k;
        for (p[d1] = b->lo[d1]; p[d1] < b->hi[d1]; p[d1]++)
            for (p[d2] = b->lo[d2]; p[d2] < b->hi[d2]; p[d2]++) {
                size_t i = ((size_t)(p[0] - b->lo[0]) * (size_t)e[1] +
                            (size_t)(p[1] - b->lo[1])) * (size_t)e[2] + (size_t)(p[2] - b->lo[2]);
                part[j++] = (float)value(s, i);
            }
    }
    MPI_Gatherv(part, mine, MPI_FLOAT, recv, counts, displs, MPI_FLOAT, 0, MPI_COMM_WORLD);
    if (s->rank == 0) {
        for (int r = 0; r < P; r++) {
            const tide_box *b = &s->boxes[r];
            const float *q = recv + displs[r];
            if (!counts[r])
                continue;
            for (int i = b->lo[d1]; i < b->hi[d1]; i++)
                for (int j = b->lo[d2]; j < b->hi[d2]; j++)
                    plane[(size_t)i * (size_t)cols + (size_t)j] = *q++;
        }
        int w = cols * scale, h = rows * scale;
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                double v = plane[(size_t)(y / scale) * (size_t)cols + (size_t)(x / scale)];
                double t = (v - (s->m - s->A)) / (2 * s->A); /* 0 blue, 1/2 white, 1 red */
                t = t < 0 || isnan(t) ? 0 : t > 1 ? 1 : t;
                unsigned char lo = (unsigned char)lround(255 * (t < 0.5 ? 2 * t : 2 - 2 * t));
                unsigned char *px = rgb + ((size_t)y * (size_t)w + (size_t)x) * 3;
                px[0] = t < 0.5 ? lo : 255;
                px[1] = lo;
                px[2] = t < 0.5 ? 255 : lo;
            }
        snprintf(path, plen, "%s.%lld.png", s->o.png, step);
        bad = png_file(path, rgb, w, h, msg, sizeof msg);
    }
    bad = app_agree(bad, msg, sizeof msg); /* rank 0's verdict on the file, on every rank */
    if (bad)
        warn("heat3d: %s\n", msg);
    else if (!s->o.quiet && s->rank == 0) {
        printf("Image: %s (step %lld, slice %c = %d, %dx%d pixels)\n", path, step, 'x' + a, k,
               cols * scale, rows * scale);
        app_flush_out(&out_failed);
    }
done:
    free(part);
    free(counts);
    free(displs);
    free(plane);
    free(recv);
    free(rgb);
    free(path);
    return bad;
}

/* ---- outputs ------------------------------------------------------------------------------ */

/* Rank 0: whether files PREFIX.* of option opt can be created: 0, else 1 with why in err. */
static int probe(const char *opt, const char *prefix, char *err, size_t len)
{
    char why[400];
    if (!app_probe_prefix(prefix, why, sizeof why))
        return 0;
    snprintf(err, len, "%s: %s", opt, why);
    return 1;
}

/* Whether name is PREFIX.STEP.chk.tmp's last component, base that of PREFIX. */
static int stale_name(const char *name, const char *base)
{
    size_t b = strlen(base);
    if (strncmp(name, base, b) || name[b] != '.')
        return 0;
    const char *step = name + b + 1;
    size_t digits = strspn(step, "0123456789");
    return digits && !strcmp(step + digits, ".chk.tmp");
}

/* Rank 0: removes the PREFIX.STEP.chk.tmp files a run killed while writing a checkpoint left
 * (a finished checkpoint is renamed to PREFIX.STEP.chk), each with a note on stderr. */
static void remove_stale(const char *prefix)
{
    const char *slash = strrchr(prefix, '/'), *base = slash ? slash + 1 : prefix;
    size_t dlen = slash ? (size_t)(slash - prefix) + 1 : 0;
    char *dir = dlen ? strndup(prefix, dlen) : strdup(".");
    DIR *d = dir ? opendir(dir) : NULL;
    for (struct dirent *e; d && (e = readdir(d));) {
        if (!stale_name(e->d_name, base))
            continue;
        size_t plen = dlen + strlen(e->d_name) + 1;
        char *path = malloc(plen);
        if (path && snprintf(path, plen, "%.*s%s", (int)dlen, prefix, e->d_name) > 0 &&
            !unlink(path))
            warn("heat3d: removed %s, a checkpoint an interrupted run left unfinished\n", path);
        free(path);
    }
    if (d)
        closedir(d);
    free(dir);
}

/* Collective, before the work: whether rank 0 can create the checkpoints and the images (a
 * probe file beside them), and the removal of unfinished checkpoints. 0, else 1 with why in
 * err on every rank. */
static int check_outputs(const options *o, char *err, size_t len)
{
    int bad = 0;
    if (g_rank == 0) {
        bad = (o->ckpt && probe("-checkpoint", o->ckpt, err, len)) ||
              (o->png && probe("-png", o->png, err, len));
        if (!bad && o->ckpt)
            remove_stale(o->ckpt);
    }
    return app_agree(bad, err, len);
}

/* ---- the run ------------------------------------------------------------------------------ */

/* The smallest multiple of every (> 0) above step. */
static long long next_multiple(long long step, long long every)
{
    return (step / every + 1) * every;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    sim s = {0};
    MPI_Comm_rank(MPI_COMM_WORLD, &s.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &s.P);
    g_rank = s.rank;
    tide_context *ctx = NULL;
    tide_stencil_plan *plan = NULL;
    int rc = 0;
    char err[512] = "";

    /* 1. Options: argv is the same on every rank, so every rank takes the same exit. */
    options *o = &s.o;
    int pr = parse(argc - 1, argv + 1, o);
    if (pr) {
        MPI_Finalize();
        return pr == 1 ? 0 : pr;
    }

    /* 2. A restart: rank 0 reads and checks the header, every rank gets its verdict. */
    unsigned char hdr[HDR_BYTES];
    header h = {0};
    if (o->restart) {
        int bad = s.rank == 0 ? read_header(o, hdr, &h, err, sizeof err) : 0;
        if (app_agree(bad, err, sizeof err)) {
            warn("heat3d: %s\n", err);
            MPI_Finalize();
            return 1;
        }
        MPI_Bcast(hdr, HDR_BYTES, MPI_BYTE, 0, MPI_COMM_WORLD);
        header_get(hdr, &h);
        for (int d = 0; d < 3; d++)
            o->n[d] = (int)h.n[d];
    }
    if (check_grid(o, err, sizeof err)) {
        app_usage_error("heat3d", "%s", err);
        MPI_Finalize();
        return APP_USAGE;
    }

    /* 3. Outputs, before any work: rank 0 checks that the checkpoints and images can be
     *    created where asked, and removes checkpoints an interrupted run left unfinished. */
    if (check_outputs(o, err, sizeof err)) {
        warn("heat3d: %s\n", err);
        MPI_Finalize();
        return 1;
    }
    s.dbl = o->prec == TIDE_DOUBLE;
    s.es = s.dbl ? sizeof(double) : sizeof(float);
    long long start = o->restart ? h.step : 0;

    /* 4. The context: the backend asked for, auto the library's choice. */
    tide_context_options co;
    tide_context_options_init(&co);
    co.backend = o->backend;
    co.device_budget = (size_t)(o->budget_gb * 1e9);
    int st = tide_context_create(MPI_COMM_WORLD, &co, &ctx);
    if (st) {
        warn("heat3d: %s\n", why(st, NULL));
        MPI_Finalize();
        return st == TIDE_ERR_ARGUMENT ? APP_USAGE : 1;
    }

    /* 5. The plan, box NULL: one rank the whole grid, several the plan's blocks. A request
     *    it refuses fails on every rank with the same message. */
    tide_stencil_options so;
    tide_stencil_options_init(&so);
    so.precision = o->prec;
    so.shape = o->shape;
    so.fuse = o->fuse;
    so.exchange = (tide_exchange)o->exchange;
    for (int d = 0; d < 3; d++)
        so.bc[d] = o->bc[d] == 'p' ? TIDE_BC_PERIODIC : TIDE_BC_DIRICHLET;
    if ((st = tide_stencil_plan_create(ctx, o->n, NULL, &so, &plan))) {
        warn("heat3d: %s\n", why(st, ctx));
        rc = st == TIDE_ERR_ARGUMENT ? APP_USAGE : 1;
        goto done;
    }
    tide_stencil_info info;
    tide_stencil_plan_info(plan, &info);
    char desc[256];
    tide_stencil_plan_describe(plan, desc, sizeof desc);
    s.box = info.box;
    for (int d = 0; d < 3; d++)
        s.grid[d] = info.grid[d] ? info.grid[d] : 1;

    /* 6. The mode's 1D factors and the header, with the memory u takes, before u is
     *    allocated; then u (pinned on a cuda context) and every rank's block for the images. */
    int bad = make_mode(&s) != 0;
    int threads = 1;
    tide_context_threads(ctx, &threads);
    double points = (double)o->n[0] * o->n[1] * o->n[2];
    if (s.rank == 0 && !o->quiet) {
        printf("heat3d: %dx%dx%d grid, %s stencil, %s, bc %.3s, mode %d %d %d (g = %.17g); "
               "%d rank%s x %d thread%s, backend %s; u %.4g GB of host memory per rank\n",
               o->n[0], o->n[1], o->n[2], s.taps == 7 ? "7pt" : "27pt",
               s.dbl ? "double" : "float", o->bc, o->mode[0], o->mode[1], o->mode[2], s.g, s.P,
               s.P > 1 ? "s" : "", threads, threads > 1 ? "s" : "",
               info.backend == TIDE_BACKEND_CUDA ? "cuda" : "cpu", (double)info.bytes / 1e9);
        app_flush_out(&out_failed);
    }
    if (app_memory_check("heat3d", (double)info.bytes)) {
        rc = 1;
        goto done;
    }
    bad |= tide_host_alloc(ctx, info.bytes ? info.bytes : 64, &s.u) != TIDE_SUCCESS;
    if (!bad && o->png) {
        s.boxes = malloc(sizeof(tide_box) * (size_t)s.P);
        bad = !s.boxes;
    }
    if (app_agree(bad, NULL, 0)) {
        warn("heat3d: out of memory (%zu bytes of u per rank)\n", info.bytes);
        rc = 1;
        goto done;
    }
    if (o->png)
        MPI_Allgather(&s.box, (int)sizeof(tide_box), MPI_BYTE, s.boxes, (int)sizeof(tide_box),
                      MPI_BYTE, MPI_COMM_WORLD);

    /* 7. The initial condition, or the checkpoint's data. */
    if (o->restart) {
        if (read_data(&s, hdr, &h)) {
            rc = 1;
            goto done;
        }
    } else {
        fill(&s);
    }
    if (s.rank == 0 && !o->quiet && o->restart) {
        printf("Restart: %s at step %lld (written by %d rank%s, grid %dx%dx%d), checksum "
               "%016llx verified\n", o->restart, start, h.ranks, h.ranks == 1 ? "" : "s",
               h.grid[0], h.grid[1], h.grid[2], (unsigned long long)h.sum);
        app_flush_out(&out_failed);
    }

    /* 8. The steps, in chunks between checkpoints, images and progress lines. Progress: after
     *    each `every` seconds of steps (the slowest rank's time, the same on every rank, so
     *    every rank measures the error together), a line on rank 0's stderr, updated in place
     *    on a terminal. With progress on, a chunk is the steps of about one interval at the
     *    rate so far (one step to start with); the result is the same bits however the steps
     *    are grouped. */
    int tty = s.rank == 0 && isatty(STDERR_FILENO);
    double every = o->quiet ? 0 : o->progress, shown = 0;
    if (o->png && (o->png_every && start % o->png_every == 0) && write_png(&s, start)) {
        rc = 1;
        goto done;
    }
    double elapsed = 0;
    for (long long step = start; step < o->steps;) {
        long long next = o->steps;
        if (every > 0) {
            double per = step > start ? elapsed / (double)(step - start) : 0;
            double chunk = per > 0 ? (every - (elapsed - shown)) / per : 1;
            if (chunk < (double)(next - step))
                next = step + (chunk < 1 ? 1 : (long long)chunk);
        }
        if (o->ckpt && o->ckpt_every && next_multiple(step, o->ckpt_every) < next)
            next = next_multiple(step, o->ckpt_every);
        if (o->png && o->png_every && next_multiple(step, o->png_every) < next)
            next = next_multiple(step, o->png_every);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        st = tide_stencil_run(plan, s.u, next - step);
        double dt = MPI_Wtime() - t0;
        if (st) { /* agreed by the library: the same on every rank */
            if (tty && shown > 0)
                warn("\n");
            warn("heat3d: %s\n", why(st, ctx));
            rc = 1;
            goto done;
        }
        MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        elapsed += dt;
        step = next;
        int end = step == o->steps;
        if (o->ckpt && (end || (o->ckpt_every && step % o->ckpt_every == 0)) &&
            write_checkpoint(&s, step)) {
            rc = 1;
            goto done;
        }
        if (o->png && (end || (o->png_every && step % o->png_every == 0)) &&
            write_png(&s, step)) {
            rc = 1;
            goto done;
        }
        if (every > 0 && elapsed - shown >= every) {
            double m[3], done_steps = (double)(step - start);
            measure(&s, step, m);
            shown = elapsed;
            double rate = points * done_steps / elapsed / 1e9;
            double left = elapsed / done_steps * (double)(o->steps - step);
            if (s.rank == 0) {
                fprintf(stderr, "%sheat3d: step %lld/%lld (%.0f%%), %.3g s, %.3g GCell/s, about "
                        "%.3g s left, error %.2g%s", tty ? "\r" : "", step, o->steps,
                        100.0 * (double)step / (double)o->steps, elapsed, rate, left, m[0],
                        tty ? (end ? "\033[K\n" : "\033[K") : "\n");
                fflush(stderr);
            }
        }
    }
    if (tty && shown > 0 && shown < elapsed) /* the bar's line ends */
        warn("\n");
    if (o->png && start == o->steps && !(o->png_every && start % o->png_every == 0) &&
        write_png(&s, start)) { /* nothing to run: the image of the state read */
        rc = 1;
        goto done;
    }

    /* 9. The summary and the check. */
    double m[3];
    measure(&s, o->steps, m);
    double tol = (double)(o->steps + 1) * s.taps * s.eps * (fabs(s.m) + s.A);
    int passed = m[0] <= tol;
    long long halo = info.halo_points;
    MPI_Allreduce(MPI_IN_PLACE, &halo, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (s.rank == 0) {
        long long ran = o->steps - start;
        if (!o->quiet) {
            printf("Plan: %s (fuse %d step%s per pass)\n", desc, info.fuse,
                   info.fuse == 1 ? "" : "s");
            int hw = info.fuse * info.radius; /* the halo's width */
            if (s.P > 1)
                printf("Ranks: the plan's %dx%dx%d process grid, a halo of %d point%s (fuse %d "
                       "x radius %d) over %s, at most %lld points received per exchange\n",
                       s.grid[0], s.grid[1], s.grid[2], hw, hw == 1 ? "" : "s", info.fuse,
                       info.radius, app_exchange_name(info.halo_exchange), halo);
            else
                printf("Ranks: 1, the whole grid (no halo)\n");
            printf("Time: %.6g s for %lld steps (steps %lld to %lld, the slowest rank)\n",
                   elapsed, ran, start, o->steps);
            if (elapsed > 0)
                printf("Throughput: %.4g GCell/s (%dx%dx%d points x %lld steps / time)\n",
                       points * (double)ran / elapsed / 1e9, o->n[0], o->n[1], o->n[2], ran);
            else
                printf("Throughput: not measured (no steps run)\n");
            printf("Mean: %.17g (exact %.17g)\n", m[1], m[2]);
        }
        printf("Check: max error %.3g against the exact discrete mode (tolerance %.3g): %s\n",
               m[0], tol, passed ? "passed" : "FAILED");
        app_flush_out(&out_failed);
    }
    rc = passed ? 0 : 1;

done:
    if (s.rank == 0)
        app_flush_out(&out_failed);
    if (out_failed) {
        warn("heat3d: cannot write the standard output: %s\n", strerror(out_failed));
        rc = 1;
    }
    MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (s.u)
        tide_host_free(ctx, s.u);
    for (int d = 0; d < 3; d++)
        free(s.f[d]);
    free(s.boxes);
    tide_stencil_plan_destroy(plan);
    tide_context_destroy(ctx);
    MPI_Finalize();
    return rc;
}
