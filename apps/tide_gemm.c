/*
 * tide_gemm.c: `tide gemm`: plan, time and verify a matrix multiply C = alpha op(A) op(B) +
 * beta C (tide_gemm_*) on one rank or several, printing heFFTe speed3d's keys like the other
 * subcommands, the PCIe traffic and measured rates the plan is bounded by, and on the GPU the
 * in-card cuBLAS rate measured in the same run: the figure an out-of-card multiply is judged
 * against.
 *
 * Real or complex (-complex) matrices. On P ranks the matrices are tide.h's 2D blocks over a
 * process grid (one rank: a 1 x 1 grid, the whole matrices); every entry (each part of a
 * complex one) is a hash of its matrix, global row and column, the part and the seed,
 * so each rank fills its own blocks, and regenerates whatever the check needs, without
 * communication. The check is the naive oracle (tide_ref_gemm, no Tide code): every entry of C
 * for small products, else 4 rows and 4 columns of it, each rank checking those in its block of
 * C, each entry's error measured in units of a rigorous rounding bound (tide_ref_gemm_error; at
 * most 1 passes), the largest over the ranks reported.
 */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "app_common.h"
#include "reference.h"
#include "tide.h"
#include "tide_app.h"

/* The largest product (M N K) whose every entry is checked. */
#define CHECK_FULL (1LL << 27)
/* Rows and columns of C the check samples above that. */
#define CHECK_LINES 4
/* Entries of C one oracle call computes (bounds its buffers). */
#define CHECK_BLOCK (1LL << 20)
/* Elements of op(A) or op(B) regenerated for one oracle call, unless one row or column of k
 * is more. */
#define CHECK_OPERAND (1LL << 22)
/* The most GPUs -gpus asks one rank to drive: far above any node's. */
#define GPUS_MAX 1024

static const char *about =
    "Plans C = alpha op(A) op(B) + beta C with op(A) M x K, op(B) K x N and C M x N (one\n"
    "size: M = N = K) of real or, with -complex, complex elements of the precision, fills A,\n"
    "B and C with deterministic random values in [-1, 1) (each part of a complex entry: a\n"
    "hash of the matrix, the entry's global row and column, the part and the seed), then\n"
    "times RUNS multiplies after one warm-up. On P > 1 ranks the matrices are distributed\n"
    "in 2D blocks over an R x C process grid (-grid; rank r at row r / C, column r % C), as\n"
    "tide.h's tide_gemm_plan_create describes: C's block rows of M over R and columns of N\n"
    "over C, A's the same rows and K over C, B's K over R and C's columns (a transposed\n"
    "operand's block is op(X)'s block stored transposed). Each rank allocates and fills only\n"
    "its blocks, and the library multiplies them by SUMMA (on backend cuda each rank's\n"
    "updates streamed through its GPU as on one rank). Every multiply starts from the same C:\n"
    "it is restored from a saved copy before each one, outside the timed region, so each does\n"
    "the same work on the same data (also with beta 0, where a multiply that left C alone\n"
    "would keep the random values and fail the check). Time per run\n"
    "is the median over the runs of the slowest rank's time; the library call is complete on\n"
    "return. The result of the last timed multiply is checked against the naive serial oracle\n"
    "(tide_ref_gemm, long double dot products): every entry when M N K <= 2^27 (\"full\"),\n"
    "else 4 rows and 4 columns of C, the last row and column and 3 random others, the same on\n"
    "every rank (\"sampled\"). Each rank checks the entries of its block of C, regenerating\n"
    "the rows of op(A) and columns of op(B) they need from the fill. Max error is the largest\n"
    "error of an entry over the ranks in units of a rigorous bound of its rounding\n"
    "(tide_ref_gemm_error; complex: each part against its own bound): at most 1 passes.\n"
    "\n"
    "Figures: Performance = 2 M N K (complex: 8 M N K) / time per run, also in TFLOP/s;\n"
    "Memory usage is the largest rank's. With backend cuda on host matrices the plan streams\n"
    "them through the GPU (C tiles kept on the device, panels of A and B streamed in) and\n"
    "reports the bytes it moves over PCIe each way, the rates it measured and its bound: the\n"
    "largest of its flops at the in-card GEMM rate and its bytes at the PCIe rates (up, down,\n"
    "both ways at once); printed with the term that dominates and bound / time. On P > 1\n"
    "ranks these are each rank's, for its updates (its block of C times K), and each term of\n"
    "the bound the largest rank's: a bound for ranks with a GPU each (ranks sharing a GPU\n"
    "share its rate, which the bound does not count). With backend cuda on one rank the\n"
    "in-card cuBLAS rate is measured in the same run: a device-resident plan on device copies\n"
    "of the matrices (when the three fit the device budget), timed and checked the same way,\n"
    "and the out-of-card rate is given as a fraction of it (with -device the run itself is in\n"
    "card).\n";

static const char *after =
    "With -device on P > 1 ranks each rank's blocks are in device memory: SUMMA with cuBLAS\n"
    "updates, the panels over NCCL where every rank has a GPU of its own, else broadcast\n"
    "through pinned host memory.\n";

typedef struct {
    app_args c;             /* backend, precision, sizes (n[] = M N K), the common options */
    tide_transpose ta, tb;
    tide_matrix_order order;
    double alpha[2], beta[2]; /* {real, imaginary} */
    int cplx;               /* -complex */
    int tile, panel, pageable, check, gpus, share_a;
    int grid[2];            /* -grid RxC; {0, 0}: the library's choice */
    int has_n, has_k;       /* N and K given (else M) */
} args;

/* ---- arguments ------------------------------------------------------------------------------- */

/* -ta/-tb's value: N, T or C (either case) into dest (a tide_transpose): 0, else -1 with why
 * in err. */
static int parse_trans(const char *name, char **v, void *dest, char *err, size_t len)
{
    const char *s = v[0];
    const char *at = strlen(s) == 1 ? strchr("NTCntc", s[0]) : NULL;
    if (!at)
        return snprintf(err, len, "%s %s: expected N (op = the matrix), T (its transpose) or C "
                        "(its conjugate transpose)", name, app_shown(s)), -1;
    *(tide_transpose *)dest = (tide_transpose)((at - "NTCntc") % 3);
    return 0;
}

/* -alpha/-beta's value: A or A,I, finite, into dest (double[2], the imaginary part 0 without
 * ,I): 0, else -1 with why in err. */
static int parse_scalar(const char *name, char **v, void *dest, char *err, size_t len)
{
    const char *s = v[0];
    char buf[128], *comma = NULL;
    double x[2] = {0, 0};
    int bad = strlen(s) >= sizeof buf;
    if (!bad) {
        strcpy(buf, s);
        if ((comma = strchr(buf, ',')))
            *comma = 0; /* buf the real part, comma + 1 the imaginary one */
        bad = app_to_real(buf, -HUGE_VAL, HUGE_VAL, &x[0]) ||
              (comma && app_to_real(comma + 1, -HUGE_VAL, HUGE_VAL, &x[1]));
    }
    if (bad)
        return snprintf(err, len, "%s %s: expected a finite number A, or A,I (real and "
                        "imaginary parts)", name, app_shown(s)), -1;
    memcpy(dest, x, sizeof x);
    return 0;
}

/* Fills a from the option table; 0, 1 after --help, else APP_USAGE with why printed. Every
 * rank parses the same argv, so every rank stops alike. */
static int parse(int argc, char **argv, args *a)
{
    static const char *const orders[] = {"col", "row"}, *const modes[] = {"auto", "on", "off"};
    static const int order_values[] = {TIDE_COL_MAJOR, TIDE_ROW_MAJOR}, mode_values[] = {0, 1, -1};
    memset(a, 0, sizeof *a);
    app_args_init(&a->c);
    app_args *c = &a->c;
    a->alpha[0] = 1;
    a->check = 1;
    app_opt opts[] = {
        APP_POS_BACKEND(c), APP_POS_PRECISION(c), APP_POS_SIZE("M", &c->n[0]),
        {.meta = "N", .kind = APP_INT, .dest = &c->n[1], .lo = 1, .hi = APP_SIZE_MAX,
         .optional = 1, .given = &a->has_n},
        {.meta = "K", .kind = APP_INT, .dest = &c->n[2], .lo = 1, .hi = APP_SIZE_MAX,
         .optional = 1, .given = &a->has_k},
        {"-complex", .kind = APP_FLAG, .dest = &a->cplx, .count = 1,
         .help = "complex elements, (real, imaginary) pairs of the precision (CGEMM, ZGEMM); "
                 "multiplied by tide_gemm_execute_complex"},
        {"-ta", "N|T|C", APP_CUSTOM, &a->ta, .parse = parse_trans,
         .help = "op(A) = A (N, the default), its transpose (T) or its conjugate transpose (C; "
                 "on real matrices the transpose)"},
        {"-tb", "N|T|C", APP_CUSTOM, &a->tb, .parse = parse_trans, .help = "op(B) likewise"},
        {"-order", NULL, APP_NAME, &a->order, .count = 2, .names = orders,
         .values = order_values,
         .help = "storage of all three matrices: column major (the default, the BLAS's) or row "
                 "major (C's)"},
        {"-alpha", "A[,I]", APP_CUSTOM, a->alpha, .parse = parse_scalar},
        {"-beta", "B[,I]", APP_CUSTOM, a->beta, .parse = parse_scalar,
         .help = "the scalars (default 1 and 0), finite; with -complex ,I gives an imaginary "
                 "part (e.g. -alpha 0.5,-2)"},
        {"-grid", "RxC", APP_GRID, a->grid, .count = 2,
         .help = "the process grid, R C = P (default: the library's choice, the most square "
                 "grid with R <= C)"},
        {"-tile", "T", APP_INT, &a->tile, 0, APP_SIZE_MAX,
         .help = "rows and columns of the C tiles kept on the device, 0 to 2^30 (cuda on host "
                 "matrices; default 0: the plan's choice)"},
        {"-panel", "P", APP_INT, &a->panel, 0, APP_SIZE_MAX,
         .help = "columns of op(A) per streamed panel, and on several ranks the most per "
                 "broadcast, 0 to 2^30 (default 0: the plan's)"},
        {"-gpus", "G", APP_INT, &a->gpus, 0, GPUS_MAX,
         .help = "GPUs the rank drives, 0 to 1024, C's columns shared among them (cuda on host "
                 "matrices; default 0: the node's GPUs dealt among its ranks)"},
        {"-share-a", NULL, APP_NAME, &a->share_a, .count = 3, .names = modes,
         .values = mode_values,
         .help = "on several GPUs, A uploaded once and copied between them: auto (default: "
                 "where the plan's model predicts it faster), on, off"},
        {"-p2p", .kind = APP_FLAG, .dest = &c->exchange, .count = TIDE_EXCHANGE_P2P},
        {"-nccl", .kind = APP_FLAG, .dest = &c->exchange, .count = TIDE_EXCHANGE_NCCL},
        {"-cuda-mpi", .kind = APP_FLAG, .dest = &c->exchange, .count = TIDE_EXCHANGE_CUDA_MPI,
         .help = "P > 1: the panels by MPI (device matrices' through pinned host buffers), over "
                 "NCCL, or by MPI on device pointers (default: the plan's choice)"},
        {"-pageable", .kind = APP_FLAG, .dest = &a->pageable, .count = 1,
         .help = "host matrices from malloc (pageable) instead of tide_host_alloc (pinned), "
                 "which the plan stages through pinned buffers"},
        APP_OPT_DEVICE(c), APP_OPT_BUDGET(c), APP_OPT_RUNS(c), APP_OPT_SEED(c),
        APP_OPT_NO_CHECK(&a->check),
        APP_OPT_PROGRESS(c), APP_OPT_JSON(c),
    };
    app_cmd cmd = {"tide gemm", about, after, opts, sizeof opts / sizeof opts[0]};
    int rc = app_parse(&cmd, argc, argv);
    if (rc)
        return rc;
    if (a->has_n && !a->has_k)
        return app_usage_error(cmd.name, "M N %d %d without K: expected M alone (M = N = K) or "
                               "M N K", c->n[0], c->n[1]);
    if (!a->has_n)
        c->n[1] = c->n[2] = c->n[0];
    if ((rc = app_check_points(&cmd, c, "M N K")))
        return rc;
    if (!a->cplx && (a->alpha[1] != 0 || a->beta[1] != 0))
        return app_usage_error(cmd.name, "an imaginary part of -alpha or -beta needs -complex "
                               "(complex matrices)");
    if (a->pageable && c->device)
        return app_usage_error(cmd.name, "-pageable is about host matrices, -device puts them "
                               "in device memory: give one of them");
    return 0;
}

/* A rank's own trouble (tide_warn speaks for rank 0 only), with its rank on several. */
static void rank_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void rank_warn(const char *fmt, ...)
{
    int rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (P > 1)
        fprintf(stderr, "tide gemm: rank %d: %s", rank, what);
    else
        fprintf(stderr, "tide gemm: %s", what);
    fflush(stderr);
}

/* Collective: the worst (largest) of the ranks' statuses, on every rank. */
static int agree(int st)
{
    int worst = st;
    MPI_Allreduce(&st, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

/* ---- the distribution ------------------------------------------------------------------------ */

/* Whether X (0 A, 1 B, 2 C) is stored transposed: op(X) = X^T. */
static int transposed(const args *a, int x)
{
    return x == 0 ? a->ta != TIDE_NOTRANS : x == 1 ? a->tb != TIDE_NOTRANS : 0;
}

/* The block of op(X) (op(C) = C) that the rank at (row, col) of the grid holds: global rows
 * [lo[0], hi[0]) and columns [lo[1], hi[1]). Block i of an extent n over p parts is
 * [i n / p, (i + 1) n / p); C's rows are cut over the grid's rows and its columns over its
 * columns, op(A) has C's rows and k cut over the columns, op(B) k cut over the rows and C's
 * columns (tide.h). A 1 x 1 grid holds the whole matrices. */
static void op_block(const args *a, const int grid[2], int row, int col, int x, long long lo[2],
                     long long hi[2])
{
    long long m = a->c.n[0], n = a->c.n[1], k = a->c.n[2];
    long long ext[3][2] = {{m, k}, {k, n}, {m, n}};
    lo[0] = ext[x][0] * row / grid[0], hi[0] = ext[x][0] * (row + 1) / grid[0];
    lo[1] = ext[x][1] * col / grid[1], hi[1] = ext[x][1] * (col + 1) / grid[1];
}

/* The stored rows and columns of a block of op(X) of h x w. */
static void stored(const args *a, int x, long long h, long long w, long long *rows,
                   long long *cols)
{
    int t = transposed(a, x);
    *rows = t ? w : h;
    *cols = t ? h : w;
}

/* ---- the matrices ---------------------------------------------------------------------------- */

/* This rank's blocks of A, B and C (index 0, 1, 2) as stored: op(A) = A^T stores A's block as
 * op(A)'s block transposed. */
typedef struct {
    int ranks, grid[2], row, col; /* the process grid and this rank's place in it */
    long long lo[3][2], hi[3][2]; /* the block of op(X) this rank holds (global indices) */
    long long rows[3], cols[3], ld[3]; /* X's block as stored */
    size_t bytes[3];
    void *host[3]; /* in host memory: pinned (tide_host_alloc) or pageable (malloc); host[2]
                    * also receives the result of a device-resident run */
    void *dev[3];  /* device copies (-device, and the in-card figure) */
    void *c0;      /* the original C, restored before each multiply */
    int pageable;
} matrices;

/* Values (float or double) per element: 1, complex 2. */
static int elem_vals(const args *a) { return a->cplx ? 2 : 1; }

static size_t elem_size(const args *a)
{
    return (size_t)elem_vals(a) * (a->c.prec == TIDE_DOUBLE ? sizeof(double) : sizeof(float));
}

/* This rank's blocks of op(A), op(B) and C on the plan's process grid (tide.h's rule), as
 * stored, with their least leading dimensions and bytes. */
static void shapes(const args *a, const int grid[2], int ranks, int rank, matrices *mx)
{
    mx->ranks = ranks;
    mx->grid[0] = grid[0], mx->grid[1] = grid[1];
    mx->row = rank / mx->grid[1];
    mx->col = rank % mx->grid[1];
    for (int x = 0; x < 3; x++) {
        op_block(a, mx->grid, mx->row, mx->col, x, mx->lo[x], mx->hi[x]);
        stored(a, x, mx->hi[x][0] - mx->lo[x][0], mx->hi[x][1] - mx->lo[x][1], &mx->rows[x],
               &mx->cols[x]);
        mx->ld[x] = a->order == TIDE_COL_MAJOR ? mx->rows[x] : mx->cols[x];
        mx->bytes[x] = (size_t)mx->rows[x] * (size_t)mx->cols[x] * elem_size(a);
    }
}

/* Global indices: n of them, lo + t, or at[t] where at is given. */
typedef struct {
    long long n, lo;
    const long long *at;
} indices;

static long long index_at(const indices *l, long long t)
{
    return l->at ? l->at[t] : l->lo + t;
}

/* Indices t0 .. t0 + n - 1 of l. */
static indices sub_indices(indices l, long long t0, long long n)
{
    return l.at ? (indices){n, 0, l.at + t0} : (indices){n, l.lo + t0, NULL};
}

/* Part part (0 real, 1 imaginary) of entry (i, j) of the global op(X) (x: 0 A, 1 B, 2 C), in
 * [-1, 1): a hash of the seed, the matrix, the global indices and the part (tide_ref_value),
 * so any rank makes any entry. */
static double entry(unsigned seed, int x, long long i, long long j, int part)
{
    static const int unused[3] = {0, 0, 0};
    return tide_ref_value(seed, x, unused, (int)i, (int)j, 0, part);
}

/* Writes the entries of op(X) at global rows `rows` and columns `cols` into p as X is stored:
 * in the run's order with leading dimension ld (0: the least), transposed when op(X) = X^T,
 * also conjugated when op(X) = X^H; on the context's threads. The one fill: of the rank's
 * blocks and of the check's operands. */
static void fill(void *p, const args *a, int x, indices rows, indices cols, long long ld,
                 int threads)
{
    int t = transposed(a, x), colmajor = a->order == TIDE_COL_MAJOR, w = elem_vals(a);
    tide_transpose op = x == 0 ? a->ta : x == 1 ? a->tb : TIDE_NOTRANS;
    double conj = op == TIDE_CONJTRANS ? -1 : 1; /* the stored imaginary parts' sign */
    long long sr, sc;
    stored(a, x, rows.n, cols.n, &sr, &sc);
    long long outer = colmajor ? sc : sr, inner = colmajor ? sr : sc, count = outer * inner;
    if (!ld)
        ld = inner;
    int dbl = a->c.prec == TIDE_DOUBLE;
    unsigned seed = a->c.seed;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (long long e = 0; e < count; e++) {
        long long o = e / inner, q = e % inner;
        long long r = colmajor ? q : o, c = colmajor ? o : q; /* stored row and column */
        long long i = index_at(&rows, t ? c : r), j = index_at(&cols, t ? r : c);
        for (int part = 0; part < w; part++) {
            double v = entry(seed, x, i, j, part) * (part ? conj : 1);
            size_t at = (size_t)(o * ld + q) * (size_t)w + (size_t)part;
            if (dbl)
                ((double *)p)[at] = v;
            else
                ((float *)p)[at] = (float)v;
        }
    }
}

/* Allocates the rank's blocks (device copies with dev) and C0, and fills A, B and C0: 0, else
 * 1 after saying why (local: the caller agrees). */
static int matrices_make(tide_context *ctx, const args *a, int dev, int threads, matrices *mx)
{
    for (int i = 0; i < 3; i++) {
        size_t bytes = mx->bytes[i] ? mx->bytes[i] : 1; /* an empty block: a valid pointer */
        int st = a->pageable ? (mx->host[i] = malloc(bytes)) == NULL
                             : tide_host_alloc(ctx, bytes, &mx->host[i]);
        if (st || (dev && tide_device_alloc(ctx, bytes, &mx->dev[i]))) {
            rank_warn("cannot allocate %c (%.4g GB in %s memory)\n", "ABC"[i],
                      mx->bytes[i] / 1e9, st ? "host" : "device");
            return 1;
        }
    }
    if (!(mx->c0 = malloc(mx->bytes[2] ? mx->bytes[2] : 1))) {
        rank_warn("cannot allocate the copy of C (%.4g GB)\n", mx->bytes[2] / 1e9);
        return 1;
    }
    void *dst[3] = {mx->host[0], mx->host[1], mx->c0};
    app_progress p;
    app_progress_begin(&p, "tide gemm", "filling A, B and C", 3, a->c.progress);
    for (int x = 0; x < 3; x++) {
        indices rows = {mx->hi[x][0] - mx->lo[x][0], mx->lo[x][0], NULL};
        indices cols = {mx->hi[x][1] - mx->lo[x][1], mx->lo[x][1], NULL};
        fill(dst[x], a, x, rows, cols, mx->ld[x], threads);
        app_progress_step(&p, x + 1);
    }
    app_progress_end(&p);
    for (int i = 0; dev && i < 2; i++)
        if (tide_copy(ctx, mx->dev[i], mx->host[i], mx->bytes[i]))
            return 1;
    return 0;
}

static void device_free(tide_context *ctx, matrices *mx)
{
    for (int i = 0; i < 3; i++) {
        tide_device_free(ctx, mx->dev[i]);
        mx->dev[i] = NULL;
    }
}

static void matrices_free(tide_context *ctx, matrices *mx)
{
    device_free(ctx, mx);
    for (int i = 0; i < 3; i++)
        if (mx->pageable)
            free(mx->host[i]);
        else
            tide_host_free(ctx, mx->host[i]);
    free(mx->c0);
}

/* ---- the runs -------------------------------------------------------------------------------- */

/* A timed multiply on the plan's matrices, C restored (untimed) from C0 first. */
typedef struct {
    tide_context *ctx;
    tide_gemm_plan *plan;
    const double *alpha, *beta; /* {real, imaginary} */
    int cplx;                   /* through tide_gemm_execute_complex */
    const void *a, *b, *c0;
    void *c;
    size_t cbytes;
} run_arg;

static int restore(void *p)
{
    run_arg *r = p;
    return tide_copy(r->ctx, r->c, r->c0, r->cbytes);
}

static int multiply(void *p)
{
    run_arg *r = p;
    if (r->cplx)
        return tide_gemm_execute_complex(r->plan, r->alpha, r->a, r->b, r->beta, r->c);
    return tide_gemm_execute(r->plan, r->alpha[0], r->a, r->b, r->beta[0], r->c);
}

/* Collective: a warm-up, then runs timed multiplies into times (the slowest rank's); C's
 * result is left in mx->host[2]. */
static int time_plan(tide_context *ctx, tide_gemm_plan *plan, const args *a,
                     const matrices *mx, int dev, double *times)
{
    void *const *x = dev ? mx->dev : mx->host;
    run_arg r = {ctx,  plan,    a->alpha, a->beta, a->cplx,
                 x[0], x[1],    mx->c0,   x[2],    mx->bytes[2]};
    int st;
    if ((st = restore(&r)) || (st = multiply(&r)) ||
        (st = app_time_runs("tide gemm", a->c.progress, a->c.runs, restore, multiply, &r, 1,
                            times)))
        return st;
    return dev ? tide_copy(ctx, mx->host[2], mx->dev[2], mx->bytes[2]) : 0;
}

/* ---- the check ------------------------------------------------------------------------------- */

typedef struct {
    const char *kind;  /* "full", "sampled" or "none" */
    long long entries; /* of C checked, over all ranks */
    double max_error;  /* in units of the rigorous bound, the largest over the ranks; NaN: a
                        * bad argument to the oracle */
    int nrows, ncols;  /* sampled: the rows and columns of C checked */
    long long rows[CHECK_LINES], cols[CHECK_LINES];
} check_result;

static long long min_ll(long long x, long long y)
{
    return x < y ? x : y;
}

/* Checks the entries of C at global rows `rows` and columns `cols` (all in this rank's block;
 * c is the rank's result): the oracle on the sub-problem they make, those rows of op(A) and
 * columns of op(B) (all of k) and those entries of C0, regenerated by fill, in tiles that keep
 * the operands and entries small; the computed entries gathered in the same layout. The
 * largest error goes into *worst (NaN: the oracle failed, said). Returns 0, else -1 after
 * saying why (out of memory). */
static int check_part(const args *a, const matrices *mx, const void *c, indices rows,
                      indices cols, int threads, double *worst)
{
    if (rows.n == 0 || cols.n == 0)
        return 0;
    int dbl = a->c.prec == TIDE_DOUBLE, colmajor = a->order == TIDE_COL_MAJOR;
    long long k = a->c.n[2], per = CHECK_OPERAND / k > 0 ? CHECK_OPERAND / k : 1;
    long long tw = min_ll(cols.n, per);
    long long th = min_ll(min_ll(rows.n, per), CHECK_BLOCK / tw > 0 ? CHECK_BLOCK / tw : 1);
    size_t es = elem_size(a), tile = (size_t)th * (size_t)tw, vals = tile * (size_t)elem_vals(a);
    char *ap = malloc((size_t)th * (size_t)k * es), *bp = malloc((size_t)k * (size_t)tw * es);
    char *cp = malloc(tile * es), *got = malloc(tile * es);
    double *ref = malloc(sizeof(double) * vals), *scale = malloc(sizeof(double) * vals);
    int st = ap && bp && cp && got && ref && scale ? 0 : -1;
    if (st)
        rank_warn("out of memory for the check (%lld x %lld entries, k %lld)\n", th, tw, k);
    indices all_k = {k, 0, NULL};
    const char *cb = c;
    for (long long i0 = 0; i0 < rows.n && !st; i0 += th)
        for (long long j0 = 0; j0 < cols.n && !st; j0 += tw) {
            long long h = min_ll(th, rows.n - i0), w = min_ll(tw, cols.n - j0);
            indices r = sub_indices(rows, i0, h), cl = sub_indices(cols, j0, w);
            fill(ap, a, 0, r, all_k, 0, threads);
            fill(bp, a, 1, all_k, cl, 0, threads);
            fill(cp, a, 2, r, cl, 0, threads);
            int ost = tide_ref_gemm(dbl, a->cplx, a->order, a->ta, a->tb, h, w, k, a->alpha, ap,
                                    0, bp, 0, a->beta, cp, 0, 0, h, 0, w, ref, scale);
            if (ost) {
                rank_warn("the oracle failed: %s\n", tide_strerror(ost));
                *worst = NAN;
                continue;
            }
            for (long long i = 0; i < h; i++) /* the rank's result, laid out like cp */
                for (long long j = 0; j < w; j++) {
                    long long li = index_at(&r, i) - mx->lo[2][0];
                    long long lj = index_at(&cl, j) - mx->lo[2][1];
                    long long from = colmajor ? li + lj * mx->ld[2] : li * mx->ld[2] + lj;
                    long long to = colmajor ? i + j * h : i * w + j;
                    memcpy(got + (size_t)to * es, cb + (size_t)from * es, es);
                }
            *worst = app_max_nan(*worst, tide_ref_gemm_error(dbl, a->cplx, a->order, k, got,
                                                             colmajor ? h : w, 0, h, 0, w, ref,
                                                             scale));
        }
    free(ap);
    free(bp);
    free(cp);
    free(got);
    free(ref);
    free(scale);
    return st;
}

/* lines distinct indices below count: the last, then random ones (xorshift from seed). */
static int pick_lines(long long count, unsigned seed, long long *idx)
{
    int lines = count < CHECK_LINES ? (int)count : CHECK_LINES;
    unsigned long long x = 0x9e3779b97f4a7c15ull ^ seed;
    idx[0] = count - 1;
    for (int i = 1; i < lines; i++) {
        int dup;
        do {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            idx[i] = (long long)(x % (unsigned long long)count);
            dup = 0;
            for (int j = 0; j < i; j++)
                dup |= idx[j] == idx[i];
        } while (dup);
    }
    return lines;
}

/* Those of the count indices idx in [lo, hi) into mine; returns how many. */
static int lines_in(const long long *idx, int count, long long lo, long long hi,
                    long long *mine)
{
    int n = 0;
    for (int i = 0; i < count; i++)
        if (idx[i] >= lo && idx[i] < hi)
            mine[n++] = idx[i];
    return n;
}

/* Collective: checks the result c (this rank's block of C, as stored) against the oracle, each
 * rank the checked entries of its block: every entry, or those of the sampled rows and columns
 * (the same on every rank). r gets the largest error over the ranks and the entries checked.
 * Returns 0, else -1 on every rank after saying why. */
static int check(const args *a, const matrices *mx, const void *c, int threads,
                 check_result *r)
{
    long long m = a->c.n[0], n = a->c.n[1];
    int full = (double)m * n * a->c.n[2] <= (double)CHECK_FULL;
    indices brows = {mx->hi[2][0] - mx->lo[2][0], mx->lo[2][0], NULL};
    indices bcols = {mx->hi[2][1] - mx->lo[2][1], mx->lo[2][1], NULL};
    double worst = 0;
    long long entries;
    int st;
    app_progress p;
    app_progress_begin(&p, "tide gemm", "checking C against the oracle", full ? 1 : 2,
                       a->c.progress);
    r->kind = full ? "full" : "sampled";
    r->nrows = r->ncols = 0;
    if (full) {
        st = check_part(a, mx, c, brows, bcols, threads, &worst);
        entries = brows.n * bcols.n;
    } else {
        long long rows[CHECK_LINES], cols[CHECK_LINES];
        r->nrows = pick_lines(m, a->c.seed, r->rows);
        r->ncols = pick_lines(n, a->c.seed + 1, r->cols);
        indices mr = {lines_in(r->rows, r->nrows, mx->lo[2][0], mx->hi[2][0], rows), 0, rows};
        indices mc = {lines_in(r->cols, r->ncols, mx->lo[2][1], mx->hi[2][1], cols), 0, cols};
        st = check_part(a, mx, c, mr, bcols, threads, &worst);
        app_progress_step(&p, 1);
        if (!st)
            st = check_part(a, mx, c, brows, mc, threads, &worst);
        entries = mr.n * bcols.n + mc.n * brows.n - mr.n * mc.n;
    }
    app_progress_end(&p);
    /* the largest error over the ranks, a failed oracle (NaN) on any winning */
    r->max_error = app_max(worst);
    MPI_Allreduce(&entries, &r->entries, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return agree(st ? 1 : 0) ? -1 : 0;
}

/* ---- the bound and the in-card figure -------------------------------------------------------- */

/* The bound split into its terms, the largest naming it: the flops at the in-card GEMM rate
 * (gflops: the rate of this run's in-card multiply of the whole matrices where it was
 * measured, a sustained rate, times the plan's GPUs; else the plan's, measured on one chunk's
 * multiply per GPU in a short burst, which runs at higher clocks than a long multiply keeps),
 * the PCIe bytes at the plan's measured rates (with several GPUs, one GPU's part of them at
 * its link's rates). */
typedef struct {
    double seconds;    /* the largest term */
    double term[4];    /* flops at the GEMM rate, up at rate_up, down at rate_down, both ways */
    const char *what;  /* the largest term's name, or NULL without a bound */
} bound_terms;

static void bound_of(const tide_gemm_info *info, double flops, double gflops, bound_terms *b)
{
    static const char *names[] = {"in-card GEMM", "PCIe up", "PCIe down", "PCIe both ways"};
    /* several GPUs: each moves its equal part of the bytes over its own link */
    double g = info->gpus > 1 ? info->gpus : 1;
    double rate[4] = {gflops, info->rate_up, info->rate_down, info->rate_both};
    double amount[4] = {flops, info->bytes_up / g, info->bytes_down / g,
                        (info->bytes_up + info->bytes_down) / g};
    memset(b, 0, sizeof *b);
    /* several ranks: each term the largest rank's (every rank takes part) */
    if (!(app_max(info->bound) > 0))
        return;
    int top = 0;
    for (int t = 0; t < 4; t++) {
        b->term[t] = app_max(rate[t] > 0 ? app_seconds(amount[t], rate[t]) : 0);
        if (b->term[t] > b->term[top])
            top = t;
    }
    b->seconds = b->term[top];
    b->what = names[top];
}

/* The in-card figure: why it is missing, else its median time and check. */
typedef struct {
    int measured;
    char why[160];     /* when not measured */
    app_stats ts;
    check_result cr;
} incard;

/* With the out-of-card plan destroyed: a device-resident plan on device copies of the
 * matrices, timed and checked like the run. A failure that only stops the figure is said in
 * in->why (0 returned); -1: the check could not run (said). */
static int incard_measure(tide_context *ctx, const args *a, matrices *mx, int threads,
                          double *times, incard *in)
{
    tide_device_info di;
    int st = tide_context_device(ctx, &di);
    double need = (double)mx->bytes[0] + (double)mx->bytes[1] + (double)mx->bytes[2];
    if (mx->ranks > 1)
        snprintf(in->why, sizeof in->why, "several ranks: the in-card figure is taken on "
                 "one rank; run -np 1 for it");
    else if (st)
        snprintf(in->why, sizeof in->why, "tide_context_device: %s", tide_strerror(st));
    else if (need > (double)di.budget_bytes)
        snprintf(in->why, sizeof in->why, "A, B and C (%.4g GB) exceed the device budget "
                 "(%.4g GB)", need / 1e9, di.budget_bytes / 1e9);
    if (mx->ranks > 1 || st || need > (double)di.budget_bytes)
        return 0;
    tide_gemm_options o;
    tide_gemm_options_init(&o);
    o.precision = a->c.prec;
    o.domain = a->cplx ? TIDE_COMPLEX : TIDE_REAL;
    o.backend = TIDE_BACKEND_CUDA;
    o.location = TIDE_LOCATION_DEVICE;
    o.order = a->order;
    o.transa = a->ta;
    o.transb = a->tb;
    tide_gemm_plan *plan = NULL;
    for (int i = 0; i < 3 && !st; i++)
        st = tide_device_alloc(ctx, mx->bytes[i], &mx->dev[i]);
    for (int i = 0; i < 2 && !st; i++)
        st = tide_copy(ctx, mx->dev[i], mx->host[i], mx->bytes[i]);
    if (!st && !(st = tide_gemm_plan_create(ctx, a->c.n[0], a->c.n[1], a->c.n[2], &o, &plan)))
        st = time_plan(ctx, plan, a, mx, 1, times);
    if (st) {
        snprintf(in->why, sizeof in->why, "the device-resident plan: %s: %s",
                 tide_strerror(st), tide_last_error(ctx));
        st = 0;
    } else {
        in->measured = 1;
        app_stats_of(times, a->c.runs, &in->ts);
        in->cr.kind = "none";
        st = a->check ? check(a, mx, mx->host[2], threads, &in->cr) : 0;
    }
    tide_gemm_plan_destroy(plan);
    device_free(ctx, mx);
    return st;
}

/* ---- the report ------------------------------------------------------------------------------ */

static const char *trans_name(tide_transpose t)
{
    return t == TIDE_CONJTRANS ? "C" : t == TIDE_TRANS ? "T" : "N";
}

/* The elements: "double", "complex float", ... */
static const char *elem_name(const args *a)
{
    int dbl = a->c.prec == TIDE_DOUBLE;
    return a->cplx ? (dbl ? "complex double" : "complex float") : dbl ? "double" : "float";
}

/* A scalar for the report: "1.5", complex "1.5-2i". */
static const char *scalar_name(const args *a, const double v[2], char *buf, size_t len)
{
    if (a->cplx)
        snprintf(buf, len, "%g%+gi", v[0], v[1]);
    else
        snprintf(buf, len, "%g", v[0]);
    return buf;
}

/* Where the matrices live: tide_host_alloc pins host memory on a CUDA context only. */
static const char *where(const args *a, tide_backend backend)
{
    return a->c.device ? "device" : a->pageable ? "pageable host"
           : backend == TIDE_BACKEND_CUDA ? "pinned host" : "host";
}

/* The ranks listed by name on the Blocks line (the rest counted). */
#define BLOCKS_LISTED 16

/* Several ranks: the process grid and each rank's blocks as stored (rank 0 works them out for
 * every rank from the distribution's rule), the largest rank's bytes. */
static void say_blocks(const args *a, const matrices *mx)
{
    char list[BLOCKS_LISTED * 64] = "";
    size_t used = 0, most = 0;
    for (int r = 0; r < mx->ranks; r++) {
        long long sr[3], sc[3];
        size_t bytes = 0;
        for (int x = 0; x < 3; x++) {
            long long lo[2], hi[2];
            op_block(a, mx->grid, r / mx->grid[1], r % mx->grid[1], x, lo, hi);
            stored(a, x, hi[0] - lo[0], hi[1] - lo[1], &sr[x], &sc[x]);
            bytes += (size_t)sr[x] * (size_t)sc[x] * elem_size(a);
        }
        most = bytes > most ? bytes : most;
        if (r < BLOCKS_LISTED && used < sizeof list)
            used += (size_t)snprintf(list + used, sizeof list - used, "%srank %d A %lldx%lld B "
                                     "%lldx%lld C %lldx%lld", r ? "; " : "", r, sr[0], sc[0],
                                     sr[1], sc[1], sr[2], sc[2]);
    }
    char more[48] = "";
    if (mx->ranks > BLOCKS_LISTED)
        snprintf(more, sizeof more, "; and %d more ranks", mx->ranks - BLOCKS_LISTED);
    tide_say("Blocks: %dx%d process grid (rank r at row r / %d, column r %% %d), each rank's "
             "blocks as stored: %s%s; the largest rank's %.4g GB\n", mx->grid[0], mx->grid[1],
             mx->grid[1], mx->grid[1], list, more, most / 1e9);
}

/* The matrices, the plan and the data movement, before the timing keys. */
static void say_setup(const args *a, const matrices *mx, const tide_gemm_info *info,
                      const char *desc, int threads)
{
    const app_args *c = &a->c;
    int gpu = info->backend == TIDE_BACKEND_CUDA;
    const char *at = where(a, info->backend);
    char al[64], be[64];
    tide_say("Tide %s: gemm %s %dx%dx%d (M N K), C = alpha op(A) op(B) + beta C, op %s%s, "
             "%s major, alpha %s, beta %s, %d rank%s x %d threads, backend %s, %s matrices\n",
             tide_version(), elem_name(a), c->n[0], c->n[1], c->n[2], trans_name(a->ta),
             trans_name(a->tb), a->order == TIDE_COL_MAJOR ? "column" : "row",
             scalar_name(a, a->alpha, al, sizeof al), scalar_name(a, a->beta, be, sizeof be),
             mx->ranks, mx->ranks > 1 ? "s" : "", threads, gpu ? "cuda" : "cpu", at);
    tide_say("Plan: %s\n", desc);
    if (!gpu) { /* the multiplies' speed is the BLAS's */
        char blas[320], note[320];
        app_blas(blas, sizeof blas, note, sizeof note);
        tide_say("BLAS: %s\n", blas);
        if (note[0])
            tide_say("Note: %s\n", note);
    }
    long long sr[3], sc[3], n[3][2] = {{c->n[0], c->n[2]}, {c->n[2], c->n[1]},
                                       {c->n[0], c->n[1]}};
    double bytes = 0;
    for (int x = 0; x < 3; x++) {
        stored(a, x, n[x][0], n[x][1], &sr[x], &sc[x]);
        bytes += (double)sr[x] * (double)sc[x] * (double)elem_size(a);
    }
    tide_say("Matrices: A %lldx%lld, B %lldx%lld, C %lldx%lld as stored, %.4g GB in all in %s "
             "memory (%s)%s\n", sr[0], sc[0], sr[1], sc[1], sr[2], sc[2], bytes / 1e9, at,
             c->device ? "tide_device_alloc" : a->pageable ? "malloc" : "tide_host_alloc",
             mx->ranks > 1 ? ", in 2D blocks over the ranks" : "");
    if (mx->ranks > 1)
        say_blocks(a, mx);
    if (info->tiles > 0)
        tide_say("Tiles: %d C tiles of up to %lldx%lld kept on the device, %d panels of up to "
                 "%lld per tile, %d pipeline slots\n", info->tiles, info->tile_m, info->tile_n,
                 info->panels, info->panel, info->slots);
}

/* The check's Reference line: what was checked and how many entries. */
static void say_reference(const args *a, const matrices *mx, const check_result *cr)
{
    char which[320] = "";
    if (cr->nrows > 0) {
        size_t used = (size_t)snprintf(which, sizeof which, " (rows");
        for (int i = 0; i < cr->nrows; i++)
            used += (size_t)snprintf(which + used, sizeof which - used, "%s %lld",
                                     i ? "," : "", cr->rows[i]);
        used += (size_t)snprintf(which + used, sizeof which - used, " and columns");
        for (int j = 0; j < cr->ncols; j++)
            used += (size_t)snprintf(which + used, sizeof which - used, "%s %lld",
                                     j ? "," : "", cr->cols[j]);
        snprintf(which + used, sizeof which - used, ": the last row and column and random "
                 "others)");
    }
    tide_say("Reference: the naive oracle (tide_ref_gemm) on the last multiply, %s: %lld of "
             "%lld entries%s%s\n", cr->kind, cr->entries, (long long)a->c.n[0] * a->c.n[1],
             which, mx->ranks > 1 ? "; each rank checks those of its block of C, the rows of "
             "op(A) and columns of op(B) regenerated from the fill" : "");
}

/* The figures after the timing keys: rate, the check, PCIe, the bound, the in-card figure. */
static void say_figures(const args *a, const matrices *mx, const tide_gemm_info *info,
                        const app_stats *ts, const check_result *cr, const bound_terms *b,
                        const incard *in)
{
    tide_say("Rate: %.4g TFLOP/s (%d M N K / time per run)\n", info->flops / ts->median * 1e-12,
             a->cplx ? 8 : 2);
    if (!a->check) {
        tide_say("Verification: skipped (-no-check)\n");
    } else {
        tide_say("Max error: %.6g (units of the rigorous rounding bound; <= 1 passes)\n",
                 cr->max_error);
        say_reference(a, mx, cr);
        tide_say("Verification: %s\n", cr->max_error <= 1 ? "passed" : "FAILED");
    }
    if (info->bytes_up > 0 || info->bytes_down > 0)
        tide_say("PCIe: %.4g GB up, %.4g GB down per multiply; measured rates %.4g GB/s up, "
                 "%.4g GB/s down, %.4g GB/s both ways; in-card GEMM %.4g TFLOP/s\n",
                 info->bytes_up / 1e9, info->bytes_down / 1e9, info->rate_up, info->rate_down,
                 info->rate_both, info->rate_gemm * 1e-3);
    if (b->what) {
        char what[300];
        snprintf(what, sizeof what, "the largest of gemm %.4g s (%s rate), up %.4g s, down "
                 "%.4g s, both ways %.4g s: %s dominates", b->term[0],
                 in->measured ? "this run's in-card" : "the plan's chunk", b->term[1],
                 b->term[2], b->term[3], b->what);
        app_say_bound(b->seconds, what, ts->median);
    } else {
        tide_say("Bound: none (the plan bounds host matrices on the cuda backend)\n");
    }
    if (a->c.device)
        tide_say("In-card cuBLAS rate: %.4g TFLOP/s (this run: device matrices)\n",
                 info->flops / ts->median * 1e-12);
    else if (info->backend == TIDE_BACKEND_CUDA && !in->measured)
        tide_say("In-card cuBLAS rate: not measured (%s)\n", in->why);
    else if (in->measured && info->gpus > 1)
        tide_say("In-card cuBLAS rate: %.4g TFLOP/s on one GPU (a device-resident plan on "
                 "device copies, median of %d), %.4g TFLOP/s on %d; out-of-card / in-card "
                 "%.3f\n", info->flops / in->ts.median * 1e-12, a->c.runs,
                 info->gpus * info->flops / in->ts.median * 1e-12, info->gpus,
                 in->ts.median / info->gpus / ts->median);
    else if (in->measured)
        tide_say("In-card cuBLAS rate: %.4g TFLOP/s (a device-resident plan on device copies, "
                 "median of %d); out-of-card / in-card %.3f\n",
                 info->flops / in->ts.median * 1e-12, a->c.runs, in->ts.median / ts->median);
    if (in->measured && a->check)
        tide_say("In-card verification: %s (max error %.6g, %s: %lld entries)\n",
                 in->cr.max_error <= 1 ? "passed" : "FAILED", in->cr.max_error, in->cr.kind,
                 in->cr.entries);
}

static int write_json(const args *a, const matrices *mx, const tide_gemm_info *info,
                      const char *desc, int threads, double plan_s, const app_stats *ts,
                      double mem, const check_result *cr, const bound_terms *b,
                      const incard *in)
{
    cJSON *j = app_json_head("gemm", &a->c, mx->ranks, threads, info->backend, desc, 0);
    cJSON_AddNumberToObject(j, "m", a->c.n[0]);
    cJSON_AddNumberToObject(j, "n", a->c.n[1]);
    cJSON_AddNumberToObject(j, "k", a->c.n[2]);
    cJSON_AddStringToObject(j, "domain", a->cplx ? "complex" : "real");
    cJSON_AddStringToObject(j, "transa", trans_name(a->ta));
    cJSON_AddStringToObject(j, "transb", trans_name(a->tb));
    cJSON_AddStringToObject(j, "order", a->order == TIDE_COL_MAJOR ? "col" : "row");
    cJSON_AddNumberToObject(j, "alpha", a->alpha[0]);
    cJSON_AddNumberToObject(j, "alpha_im", a->alpha[1]);
    cJSON_AddNumberToObject(j, "beta", a->beta[0]);
    cJSON_AddNumberToObject(j, "beta_im", a->beta[1]);
    cJSON_AddStringToObject(j, "location", where(a, info->backend));
    cJSON_AddNumberToObject(j, "gpus", info->gpus);
    cJSON_AddBoolToObject(j, "shared_a", info->shared_a);
    cJSON_AddNumberToObject(j, "tiles", info->tiles);
    cJSON_AddNumberToObject(j, "tile_m", (double)info->tile_m);
    cJSON_AddNumberToObject(j, "tile_n", (double)info->tile_n);
    cJSON_AddNumberToObject(j, "panels", info->panels);
    cJSON_AddNumberToObject(j, "panel", (double)info->panel);
    cJSON_AddNumberToObject(j, "slots", info->slots);
    cJSON_AddItemToObject(j, "grid", cJSON_CreateIntArray(mx->grid, 2));
    app_json_timing(j, plan_s, ts, info->flops, mem);
    app_json_real(j, "tflops", info->flops / ts->median * 1e-12);
    app_json_real(j, "bytes_up", info->bytes_up);
    app_json_real(j, "bytes_down", info->bytes_down);
    app_json_real(j, "rate_up_gbps", info->rate_up);
    app_json_real(j, "rate_down_gbps", info->rate_down);
    app_json_real(j, "rate_both_gbps", info->rate_both);
    app_json_real(j, "rate_gemm_gflops", info->rate_gemm);
    app_json_real(j, "bound_seconds", b->what ? b->seconds : NAN);
    if (b->what)
        cJSON_AddStringToObject(j, "bound_term", b->what);
    else
        cJSON_AddNullToObject(j, "bound_term");
    app_json_real(j, "bound_ratio", b->what ? b->seconds / ts->median : NAN);
    /* the in-card figure on as many GPUs as the plan's */
    double in_t = a->c.device ? ts->median
                  : in->measured ? in->ts.median / (info->gpus > 1 ? info->gpus : 1) : NAN;
    app_json_real(j, "incard_tflops", info->flops / in_t * 1e-12);
    app_json_real(j, "incard_ratio", in->measured ? in_t / ts->median : NAN);
    app_json_real(j, "incard_max_error", in->measured && a->check ? in->cr.max_error : NAN);
    cJSON_AddNumberToObject(j, "host_bytes", (double)info->host_bytes);
    cJSON_AddNumberToObject(j, "pinned_bytes", (double)info->pinned_bytes);
    cJSON_AddNumberToObject(j, "device_bytes", (double)info->device_bytes);
    cJSON_AddStringToObject(j, "check", a->check ? cr->kind : "none");
    cJSON_AddNumberToObject(j, "checked_entries", a->check ? (double)cr->entries : 0);
    app_json_real(j, "max_error", a->check ? cr->max_error : NAN);
    if (a->check)
        cJSON_AddBoolToObject(j, "verified", cr->max_error <= 1);
    else
        cJSON_AddNullToObject(j, "verified");
    return app_json_write("tide gemm", j, a->c.json);
}

/* ---- the command ----------------------------------------------------------------------------- */

#define CHECK(call) APP_CHECK("tide gemm", call)

/* Collective: the plan the arguments ask for and its creation time (slowest rank): 0, else
 * why and the exit status (2 for a refused argument). */
static int plan_make(tide_context *ctx, const args *a, tide_gemm_plan **plan, double *plan_s)
{
    tide_gemm_options o;
    tide_gemm_options_init(&o);
    o.precision = a->c.prec;
    o.domain = a->cplx ? TIDE_COMPLEX : TIDE_REAL;
    o.backend = a->c.backend;
    o.location = a->c.device ? TIDE_LOCATION_DEVICE : TIDE_LOCATION_HOST;
    o.order = a->order;
    o.transa = a->ta;
    o.transb = a->tb;
    o.tile = a->tile;
    o.panel = a->panel;
    o.gpus = a->gpus;
    o.share_a = a->share_a;
    o.exchange = (tide_exchange)a->c.exchange;
    o.grid[0] = a->grid[0];
    o.grid[1] = a->grid[1];
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    int st = tide_gemm_plan_create(ctx, a->c.n[0], a->c.n[1], a->c.n[2], &o, plan);
    if (st) { /* the same on every rank: an argument it refuses is a bad argument */
        app_say_failure("tide gemm", st, ctx);
        return st == TIDE_ERR_ARGUMENT ? 2 : 1;
    }
    *plan_s = app_max(MPI_Wtime() - t0);
    return 0;
}

int tide_cmd_gemm(int argc, char **argv)
{
    args a;
    int rc = parse(argc, argv, &a);
    if (rc)
        return rc == 1 ? 0 : rc;
    int rank, threads = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    tide_context *ctx = NULL;
    tide_gemm_plan *plan = NULL;
    matrices mx = {.pageable = a.pageable};
    double *times = NULL, plan_s = 0;
    if (app_json_check("tide gemm", &a.c) || app_context_create("tide gemm", &a.c, &ctx))
        return 1;
    tide_context_threads(ctx, &threads);
    tide_backend cb = TIDE_BACKEND_CPU;
    tide_context_backend(ctx, &cb);
    if (a.c.device && cb != TIDE_BACKEND_CUDA) { /* the backend is the same on every rank */
        tide_warn("tide gemm: -device needs GPU memory, but this run's backend is cpu (%s)\n",
                  tide_context_gpu_status(ctx));
        rc = 1;
        goto done;
    }
    int nranks;
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if ((rc = plan_make(ctx, &a, &plan, &plan_s))) /* a refused grid or backend: every rank */
        goto done;
    tide_gemm_info info;
    char desc[256];
    CHECK(tide_gemm_plan_info(plan, &info));
    CHECK(tide_gemm_plan_describe(plan, desc, sizeof desc));
    shapes(&a, info.grid, nranks, rank, &mx); /* the blocks of the plan's process grid */
    say_setup(&a, &mx, &info, desc, threads);
    /* A, B, C and C's saved copy in host memory (also with -device), before any is made */
    double need = app_max((double)mx.bytes[0] + (double)mx.bytes[1] + 2.0 * (double)mx.bytes[2]);
    tide_say("Memory: %.4g GB of host memory per rank (A, B, C and a copy of C)\n", need / 1e9);
    if (app_memory_check("tide gemm", need)) {
        rc = 1;
        goto done;
    }
    rc = !(times = malloc(sizeof(double) * (size_t)a.c.runs)) ||
         matrices_make(ctx, &a, a.c.device, threads, &mx);
    if ((rc = agree(rc))) /* every rank stops if one cannot go on */
        goto done;

    CHECK(time_plan(ctx, plan, &a, &mx, a.c.device, times));
    app_stats ts;
    app_stats_of(times, a.c.runs, &ts);
    CHECK(tide_gemm_plan_info(plan, &info)); /* pinned staging appears with the first run */
    check_result cr = {.kind = "none"};
    if (a.check && check(&a, &mx, mx.host[2], threads, &cr)) {
        rc = 1;
        goto done;
    }
    /* Memory usage: what the plan holds anywhere and the rank's blocks wherever they live (not
     * the app's copy of C), the largest rank's. */
    double mem = app_max((double)info.host_bytes + (double)info.pinned_bytes +
                         (double)info.device_bytes + (double)mx.bytes[0] + mx.bytes[1] +
                         mx.bytes[2]);
    device_free(ctx, &mx);
    tide_gemm_plan_destroy(plan);
    plan = NULL;

    incard in = {0};
    if (info.backend == TIDE_BACKEND_CUDA && !a.c.device &&
        incard_measure(ctx, &a, &mx, threads, times, &in)) {
        rc = 1;
        goto done;
    }
    bound_terms b;
    double gpus = info.gpus > 1 ? info.gpus : 1; /* the in-card plan runs on one GPU */
    /* several ranks: each rank's updates, its block of C times k, at its plan's rate */
    double flops = (a.cplx ? 8.0 : 2.0) * (double)(mx.hi[2][0] - mx.lo[2][0]) *
                   (double)(mx.hi[2][1] - mx.lo[2][1]) * (double)a.c.n[2];
    bound_of(&info, flops, in.measured ? gpus * info.flops / in.ts.median / 1e9 : info.rate_gemm,
             &b);
    app_say_timing(plan_s, &ts, info.flops, mem);
    say_figures(&a, &mx, &info, &ts, &cr, &b, &in);
    if (a.c.json && rank == 0)
        rc = write_json(&a, &mx, &info, desc, threads, plan_s, &ts, mem, &cr, &b, &in);
    if (!(cr.max_error <= 1) || (in.measured && !(in.cr.max_error <= 1)))
        rc = 1;
done:
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    tide_gemm_plan_destroy(plan);
    matrices_free(ctx, &mx);
    tide_context_destroy(ctx);
    free(times);
    return rc;
}
