/*
 * reference.c: the independent oracle (see reference.h).
 *
 * Deliberately shares no code with the library: box offsets are computed here from lo/hi/order,
 * the data travels with plain MPI point-to-point messages, the reference transform is one call
 * of FFTW's serial 3D interface in double precision, and the Poisson check applies the 7-point
 * operator (finite-volume fluxes along bounded dimensions) by a naive loop (no transform, no
 * tridiagonal solve). A bug in Tide's box handling, reshapes, FFT sequencing, eigenvalues or
 * boundary rows therefore cannot cancel out in the comparison. Both checks gather through the
 * same path (gather_pair).
 */
#include "reference.h"

#include <fftw3.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Largest message, in doubles: MPI counts are int, and smaller chunks keep rank 0's staging
 * buffer small. */
#define REF_CHUNK ((int64_t)1 << 22)
/* Budget for the arrays rank 0 holds during the check. */
#define REF_BYTES_LIMIT ((double)(1u << 30))

enum { TAG_SRC = 7101, TAG_DST = 7102 };

/* ---- values ---------------------------------------------------------------------------------- */

static uint64_t mix64(uint64_t z)
{
    /* splitmix64's finaliser: every input bit affects every output bit. */
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double tide_ref_value(unsigned seed, int field, const int n[3], int x, int y, int z, int comp)
{
    (void)n; /* the value depends on the point only, so it is the same on every grid size */
    /* Chain the coordinates through the mixer one at a time (not XORed together), so that
     * permuted coordinates or neighbouring seeds give unrelated values. */
    uint64_t h = mix64((uint64_t)seed);
    h = mix64(h ^ (uint64_t)(uint32_t)field);
    h = mix64(h ^ (uint64_t)(uint32_t)x);
    h = mix64(h ^ (uint64_t)(uint32_t)y);
    h = mix64(h ^ (uint64_t)(uint32_t)z);
    h = mix64(h ^ (uint64_t)(uint32_t)comp);
    /* 53 random bits -> [0, 1) exactly representable, then to [-1, 1). */
    return (double)(h >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0;
}

/* ---- layout ---------------------------------------------------------------------------------- */

static int64_t box_ext(const tide_box *b, int d)
{
    return b->hi[d] > b->lo[d] ? (int64_t)b->hi[d] - b->lo[d] : 0;
}

static int64_t box_points(const tide_box *b)
{
    return box_ext(b, 0) * box_ext(b, 1) * box_ext(b, 2);
}

/* Element strides of each dimension: order[2] is contiguous, order[0] slowest. */
static void box_strides(const tide_box *b, int64_t stride[3])
{
    stride[b->order[2]] = 1;
    stride[b->order[1]] = box_ext(b, b->order[2]);
    stride[b->order[0]] = box_ext(b, b->order[2]) * box_ext(b, b->order[1]);
}

static int order_valid(const int order[3])
{
    int seen[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) {
        if (order[i] < 0 || order[i] > 2 || seen[order[i]])
            return 0;
        seen[order[i]] = 1;
    }
    return 1;
}

void tide_ref_fill(void *data, const tide_box *box, int batch, int is_complex,
                   tide_precision prec, const int n[3], unsigned seed)
{
    int64_t count = box_points(box);
    if (count == 0 || batch <= 0)
        return;
    int64_t stride[3];
    box_strides(box, stride);
    int comps = is_complex ? 2 : 1;
    for (int f = 0; f < batch; f++) {
        int64_t base = (int64_t)f * count;
        for (int x = box->lo[0]; x < box->hi[0]; x++)
            for (int y = box->lo[1]; y < box->hi[1]; y++)
                for (int z = box->lo[2]; z < box->hi[2]; z++) {
                    int64_t e = base + (x - box->lo[0]) * stride[0] +
                                (y - box->lo[1]) * stride[1] + (z - box->lo[2]) * stride[2];
                    for (int c = 0; c < comps; c++) {
                        double v = tide_ref_value(seed, f, n, x, y, z, c);
                        if (prec == TIDE_FLOAT)
                            ((float *)data)[e * comps + c] = (float)v;
                        else
                            ((double *)data)[e * comps + c] = v;
                    }
                }
    }
}

/* ---- size limit ------------------------------------------------------------------------------ */

int tide_ref_fits(const int n[3], int batch)
{
    if (n[0] <= 0 || n[1] <= 0 || n[2] <= 0 || batch <= 0)
        return 0;
    /* Rank 0 holds the gathered source and result of all fields as double complex (an upper
     * bound for the real and half-size sides), plus one field of FFTW input and output. Doubles
     * avoid integer overflow for absurd sizes. */
    double points = (double)n[0] * (double)n[1] * (double)n[2];
    double bytes = points * 16.0 * (2.0 * batch + 2.0);
    return bytes <= REF_BYTES_LIMIT;
}

/* ---- the check ------------------------------------------------------------------------------- */

/* One side (source or result) of the transform, as rank 0 assembles it. */
typedef struct {
    int grid[3];    /* the grid the data lives on */
    int comps;      /* 1 real, 2 complex */
    int64_t points; /* grid points of one field */
    double *all;    /* batch fields, dense C order, comps doubles per point */
} side;

static void side_init(side *s, const int n[3], int half, int comps)
{
    s->grid[0] = n[0];
    s->grid[1] = n[1];
    s->grid[2] = half ? n[2] / 2 + 1 : n[2];
    s->comps = comps;
    s->points = (int64_t)s->grid[0] * s->grid[1] * s->grid[2];
    s->all = NULL;
}

static int box_inside(const tide_box *b, const int grid[3])
{
    if (!order_valid(b->order))
        return 0;
    if (box_points(b) == 0)
        return 1; /* empty boxes may sit anywhere */
    for (int d = 0; d < 3; d++)
        if (b->lo[d] < 0 || b->hi[d] > grid[d])
            return 0;
    return 1;
}

/* Element `e` (linear index in box b's storage sequence) -> its dense C-order global index. */
static int64_t global_index(const tide_box *b, const int grid[3], int64_t e)
{
    int p[3];
    int64_t rest = e;
    for (int i = 2; i >= 0; i--) {
        int d = b->order[i];
        int64_t ext = box_ext(b, d);
        p[d] = b->lo[d] + (int)(rest % ext);
        rest /= ext;
    }
    return ((int64_t)p[0] * grid[1] + p[1]) * grid[2] + p[2];
}

/* Scatter doubles [first, first + len) of field f (counted in doubles, comps per element) of a
 * rank's block, laid out as box b, into the global array. */
static void scatter(side *s, const tide_box *b, int f, int64_t first, int64_t len,
                    const double *buf)
{
    double *field = s->all + (int64_t)f * s->points * s->comps;
    for (int64_t i = 0; i < len; i++) {
        int64_t k = first + i;
        int64_t g = global_index(b, s->grid, k / s->comps);
        field[g * s->comps + k % s->comps] = buf[i];
    }
}

/* Convert doubles [first, first + len) of field f of this rank's local data to double. */
static void to_double(const void *data, tide_precision prec, int64_t count, int comps, int f,
                      int64_t first, int64_t len, double *buf)
{
    int64_t base = (int64_t)f * count * comps + first;
    if (prec == TIDE_FLOAT) {
        const float *p = (const float *)data + base;
        for (int64_t i = 0; i < len; i++)
            buf[i] = p[i];
    } else {
        memcpy(buf, (const double *)data + base, (size_t)len * sizeof(double));
    }
}

/* Move one side's data of every rank to rank 0, chunk by chunk (both ends derive the same
 * chunking from the box, so messages match without a size exchange). */
static void gather_side(MPI_Comm comm, int rank, int nranks, const tide_box *boxes, side *s,
                        const void *data, tide_precision prec, int batch, int tag, double *buf)
{
    if (rank != 0) {
        int64_t count = box_points(&boxes[rank]);
        for (int f = 0; f < batch; f++)
            for (int64_t first = 0; first < count * s->comps; first += REF_CHUNK) {
                int64_t len = count * s->comps - first;
                len = len < REF_CHUNK ? len : REF_CHUNK;
                to_double(data, prec, count, s->comps, f, first, len, buf);
                MPI_Send(buf, (int)len, MPI_DOUBLE, 0, tag, comm);
            }
        return;
    }
    for (int r = 0; r < nranks; r++) {
        int64_t count = box_points(&boxes[r]);
        for (int f = 0; f < batch; f++)
            for (int64_t first = 0; first < count * s->comps; first += REF_CHUNK) {
                int64_t len = count * s->comps - first;
                len = len < REF_CHUNK ? len : REF_CHUNK;
                if (r == 0)
                    to_double(data, prec, count, s->comps, f, first, len, buf);
                else
                    MPI_Recv(buf, (int)len, MPI_DOUBLE, r, tag, comm, MPI_STATUS_IGNORE);
                scatter(s, &boxes[r], f, first, len, buf);
            }
    }
}

/* Rank 0: run the reference transform of every field and compare with the result. */
static int compare(const int n[3], tide_fft_type type, int batch, int direction, double scale,
                   const side *src, const side *dst, tide_ref_error *err)
{
    /* One field of FFTW input and output, sized for the larger (complex) side. */
    int64_t work_points = src->points > dst->points ? src->points : dst->points;
    double *win = fftw_malloc((size_t)work_points * 2 * sizeof(double));
    double *wout = fftw_malloc((size_t)work_points * 2 * sizeof(double));
    if (!win || !wout) {
        fftw_free(win);
        fftw_free(wout);
        return TIDE_ERR_NOMEM;
    }
    /* Planned before the data is copied in: FFTW_ESTIMATE never touches the arrays, but the
     * order makes that irrelevant anyway. */
    fftw_plan p;
    if (type == TIDE_C2C)
        p = fftw_plan_dft_3d(n[0], n[1], n[2], (fftw_complex *)win, (fftw_complex *)wout,
                             direction < 0 ? FFTW_FORWARD : FFTW_BACKWARD, FFTW_ESTIMATE);
    else if (direction < 0)
        p = fftw_plan_dft_r2c_3d(n[0], n[1], n[2], win, (fftw_complex *)wout, FFTW_ESTIMATE);
    else
        p = fftw_plan_dft_c2r_3d(n[0], n[1], n[2], (fftw_complex *)win, wout, FFTW_ESTIMATE);
    if (!p) {
        fftw_free(win);
        fftw_free(wout);
        return TIDE_ERR_BACKEND;
    }

    double diff2 = 0, ref2 = 0, max_abs = 0, max_ref = 0;
    int64_t in_doubles = src->points * src->comps, out_doubles = dst->points * dst->comps;
    for (int f = 0; f < batch; f++) {
        /* A copy, because c2r destroys its input and the gathered source must survive. */
        memcpy(win, src->all + f * in_doubles, (size_t)in_doubles * sizeof(double));
        fftw_execute(p);
        const double *got = dst->all + f * out_doubles;
        for (int64_t i = 0; i < dst->points; i++) {
            double d2 = 0, r2 = 0;
            for (int c = 0; c < dst->comps; c++) {
                double ref = wout[i * dst->comps + c] * scale;
                double dlt = got[i * dst->comps + c] - ref;
                d2 += dlt * dlt;
                r2 += ref * ref;
            }
            diff2 += d2;
            ref2 += r2;
            /* fmax would drop a NaN (a point nobody wrote); keep it visible instead. */
            double da = sqrt(d2), ra = sqrt(r2);
            if (da > max_abs || isnan(da))
                max_abs = isnan(max_abs) ? max_abs : da;
            if (ra > max_ref)
                max_ref = ra;
        }
    }
    fftw_destroy_plan(p);
    fftw_free(win);
    fftw_free(wout);
    /* An all-zero reference has no scale to be relative to: report the absolute error. */
    err->rel_l2 = ref2 > 0 ? sqrt(diff2 / ref2) : sqrt(diff2);
    err->max_abs = max_abs;
    err->max_ref = max_ref;
    return 0;
}

static void pack_box(const tide_box *b, int *v)
{
    memcpy(v, b->lo, 3 * sizeof(int));
    memcpy(v + 3, b->hi, 3 * sizeof(int));
    memcpy(v + 6, b->order, 3 * sizeof(int));
}

static void unpack_box(const int *v, tide_box *b)
{
    memcpy(b->lo, v, 3 * sizeof(int));
    memcpy(b->hi, v + 3, 3 * sizeof(int));
    memcpy(b->order, v + 6, 3 * sizeof(int));
}

/* The result rank 0 computed, given to every rank: the agreed status, and err on success. */
static int share_result(MPI_Comm c, int status, const tide_ref_error *e, tide_ref_error *err)
{
    double res[3] = {e->rel_l2, e->max_abs, e->max_ref};
    MPI_Bcast(&status, 1, MPI_INT, 0, c);
    MPI_Bcast(res, 3, MPI_DOUBLE, 0, c);
    if (status == 0) {
        err->rel_l2 = res[0];
        err->max_abs = res[1];
        err->max_ref = res[2];
    }
    return status;
}

/*
 * Collective over c (a communicator of our own): gathers two sides of a check to rank 0.
 * box[k] and data[k] are this rank's layout and data of side k (s[k], set up by side_init).
 * Rank 0 validates everybody's boxes and pointers, and arg_status is its verdict on the
 * caller's other arguments; the worst status of all ranks is everybody's answer. On success
 * rank 0's s[k].all hold the gathered fields, NaN where no box covers a point (so that a hole
 * poisons the comparison); the caller frees them (NULL elsewhere, and on failure).
 */
static int gather_pair(MPI_Comm c, const int n[3], int batch, tide_precision prec,
                       int arg_status, side s[2], const tide_box *const box[2],
                       const void *const data[2])
{
    static const int tags[2] = {TAG_SRC, TAG_DST};
    int rank, nranks;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &nranks);

    /* Every rank's two boxes and whether its local part is usable, in one gather. */
    enum { NV = 19 };
    int mine[NV];
    pack_box(box[0], mine);
    pack_box(box[1], mine + 9);
    mine[18] = (data[0] || box_points(box[0]) == 0) && (data[1] || box_points(box[1]) == 0);
    int *all = malloc((size_t)nranks * NV * sizeof(int));
    tide_box *boxes = malloc((size_t)nranks * 2 * sizeof(tide_box));
    int have = all && boxes, everyone = 0;
    MPI_Allreduce(&have, &everyone, 1, MPI_INT, MPI_LAND, c);
    int status = everyone ? 0 : TIDE_ERR_NOMEM;
    double *buf = NULL;
    tide_box *bx[2] = {boxes, boxes ? boxes + nranks : NULL};
    if (status == 0) {
        MPI_Allgather(mine, NV, MPI_INT, all, NV, MPI_INT, c);
        /* Staging for one message: as large as the largest block this rank sends (or, on
         * rank 0, receives), at most one chunk. Sized exactly because the check runs often and
         * a needlessly large buffer costs time where malloc fills memory (MALLOC_PERTURB_,
         * which meson sets for tests). */
        int64_t stage = 1;
        for (int r = 0; r < nranks; r++) {
            unpack_box(all + NV * r, &bx[0][r]);
            unpack_box(all + NV * r + 9, &bx[1][r]);
            if (r != rank && rank != 0)
                continue;
            for (int k = 0; k < 2; k++) {
                int64_t need = box_points(&bx[k][r]) * s[k].comps;
                stage = need > stage ? need : stage;
            }
        }
        buf = malloc((size_t)(stage < REF_CHUNK ? stage : REF_CHUNK) * sizeof(double));
        if (!buf)
            status = TIDE_ERR_NOMEM;
    }

    /* Every rank sees the same boxes; rank 0 validates them (it also has to find the memory
     * for the global arrays), and the worst status of all ranks is everybody's answer. */
    if (rank == 0 && status == 0) {
        status = arg_status;
        if (status == 0 && !tide_ref_fits(n, batch))
            status = TIDE_ERR_TOO_LARGE;
        for (int r = 0; r < nranks && status == 0; r++) {
            if (!all[NV * r + 18])
                status = TIDE_ERR_ARGUMENT; /* NULL data where the box has points */
            else if (!box_inside(&bx[0][r], s[0].grid) || !box_inside(&bx[1][r], s[1].grid))
                status = TIDE_ERR_BOX;
        }
        for (int k = 0; k < 2 && status == 0; k++) {
            size_t doubles = (size_t)(s[k].points * s[k].comps * batch);
            s[k].all = malloc(doubles * sizeof(double));
            if (!s[k].all)
                status = TIDE_ERR_NOMEM;
            for (size_t i = 0; i < doubles && s[k].all; i++)
                s[k].all[i] = NAN;
        }
    }
    int worst = status;
    MPI_Allreduce(&worst, &status, 1, MPI_INT, MPI_MAX, c);

    for (int k = 0; k < 2 && status == 0; k++)
        gather_side(c, rank, nranks, bx[k], &s[k], data[k], prec, batch, tags[k], buf);
    if (status != 0) {
        free(s[0].all);
        free(s[1].all);
        s[0].all = s[1].all = NULL;
    }
    free(boxes);
    free(all);
    free(buf);
    return status;
}

int tide_ref_check(MPI_Comm comm, const int n[3], tide_fft_type type, tide_precision prec,
                   int batch, int direction, double scale, const tide_box *srcbox,
                   const void *src, const tide_box *dstbox, const void *dst,
                   tide_ref_error *err)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    /* Our own communicator, so that our messages can never match the caller's. */
    MPI_Comm c;
    MPI_Comm_dup(comm, &c);

    /* Forward: src on the real/complex grid n, dst complex (halved for R2C); backward the
     * reverse. */
    int r2c = type == TIDE_R2C;
    side s[2];
    side_init(&s[0], n, r2c && direction > 0, r2c && direction < 0 ? 1 : 2);
    side_init(&s[1], n, r2c && direction < 0, r2c && direction > 0 ? 1 : 2);
    const tide_box *const boxes[2] = {srcbox, dstbox};
    const void *const data[2] = {src, dst};
    int args = n[0] <= 0 || n[1] <= 0 || n[2] <= 0 || batch <= 0 || direction == 0
                   ? TIDE_ERR_ARGUMENT
                   : 0;
    int status = gather_pair(c, n, batch, prec, args, s, boxes, data);
    if (status == 0) {
        tide_ref_error e = {0, 0, 0};
        if (rank == 0)
            status = compare(n, type, batch, direction, scale, &s[0], &s[1], &e);
        status = share_result(c, status, &e, err);
    }
    free(s[0].all);
    free(s[1].all);
    MPI_Comm_free(&c);
    return status;
}

/* ---- the Poisson residual -------------------------------------------------------------------- */

/* One dimension of the operator as the oracle applies it (see reference.h). */
typedef struct {
    int n;
    int bounded;  /* 0: periodic, point i at i h; 1: cells between faces z */
    tide_bc bc[2];
    double h;     /* periodic spacing */
    double *z;    /* bounded: the n + 1 faces (given, or k h) */
    double *c;    /* bounded: the n centres, midway between faces */
} ref_axis;

static int bc_valid(tide_bc b)
{
    return b == TIDE_BC_PERIODIC || b == TIDE_BC_NEUMANN || b == TIDE_BC_DIRICHLET;
}

/* TIDE_ERR_ARGUMENT unless the problem is well formed: sizes, spacings where they are used,
 * boundaries (periodic on both faces or on neither), faces only on bounded dimensions, finite
 * and strictly increasing. */
static int poisson_args(const int n[3], const double h[3], const tide_bc bc[3][2],
                        const double *const faces[3], double alpha, int batch)
{
    if (n[0] <= 0 || n[1] <= 0 || n[2] <= 0 || batch <= 0 || !h || !isfinite(alpha))
        return TIDE_ERR_ARGUMENT;
    for (int d = 0; d < 3; d++) {
        tide_bc lo = bc ? bc[d][0] : TIDE_BC_PERIODIC, hi = bc ? bc[d][1] : TIDE_BC_PERIODIC;
        const double *z = faces ? faces[d] : NULL;
        if (!bc_valid(lo) || !bc_valid(hi) || (lo == TIDE_BC_PERIODIC) != (hi == TIDE_BC_PERIODIC))
            return TIDE_ERR_ARGUMENT;
        if (z && lo == TIDE_BC_PERIODIC)
            return TIDE_ERR_ARGUMENT;
        if (!z && (!(h[d] > 0) || !isfinite(h[d])))
            return TIDE_ERR_ARGUMENT;
        for (int k = 0; z && k <= n[d]; k++)
            if (!isfinite(z[k]) || (k > 0 && !(z[k] > z[k - 1])))
                return TIDE_ERR_ARGUMENT;
    }
    return 0;
}

/* Rank 0: dimension d's axis (faces and centres of a bounded one). Returns 0 or NOMEM. */
static int axis_init(ref_axis *a, int d, const int n[3], const double h[3],
                     const tide_bc bc[3][2], const double *const faces[3])
{
    a->n = n[d];
    a->bc[0] = bc ? bc[d][0] : TIDE_BC_PERIODIC;
    a->bc[1] = bc ? bc[d][1] : TIDE_BC_PERIODIC;
    a->bounded = a->bc[0] != TIDE_BC_PERIODIC;
    a->h = h[d];
    a->z = a->c = NULL;
    if (!a->bounded)
        return 0;
    a->z = malloc((size_t)(2 * n[d] + 1) * sizeof(double));
    if (!a->z)
        return TIDE_ERR_NOMEM;
    a->c = a->z + n[d] + 1;
    const double *given = faces ? faces[d] : NULL;
    for (int k = 0; k <= n[d]; k++)
        a->z[k] = given ? given[k] : k * h[d];
    for (int i = 0; i < n[d]; i++)
        a->c[i] = (a->z[i] + a->z[i + 1]) / 2;
    return 0;
}

/* The second difference of U along axis a at point i (index p along a, stride s): the
 * periodic 7-point one, or the finite-volume (F(p + 1/2) - F(p - 1/2)) / width(p) with each
 * flux the difference of neighbouring centres over their distance, at a face 0 (Neumann) or
 * the value over the half-cell to a zero face value (Dirichlet). */
static double axis_term(const ref_axis *a, const double *U, int64_t i, int p, int64_t s)
{
    int n = a->n;
    if (!a->bounded) {
        if (n == 1)
            return 0; /* no neighbours along the dimension: no second difference */
        /* Periodic neighbours; with n == 2 both are the same point. */
        int64_t up = p + 1 < n ? i + s : i - (n - 1) * s;
        int64_t dn = p > 0 ? i - s : i + (n - 1) * s;
        return (U[up] - 2 * U[i] + U[dn]) / (a->h * a->h);
    }
    const double *z = a->z, *c = a->c;
    double lo, hi;
    if (p > 0)
        lo = (U[i] - U[i - s]) / (c[p] - c[p - 1]);
    else
        lo = a->bc[0] == TIDE_BC_DIRICHLET ? (U[i] - 0) / (c[0] - z[0]) : 0;
    if (p < n - 1)
        hi = (U[i + s] - U[i]) / (c[p + 1] - c[p]);
    else
        hi = a->bc[1] == TIDE_BC_DIRICHLET ? (0 - U[i]) / (z[n] - c[n - 1]) : 0;
    return (hi - lo) / (z[p + 1] - z[p]);
}

/* The volume of cell p: the product of its widths along the bounded dimensions (1 when all
 * are periodic: the uniform weights of a plain mean). */
static double cell_volume(const ref_axis ax[3], const int p[3])
{
    double v = 1;
    for (int d = 0; d < 3; d++)
        if (ax[d].bounded)
            v *= ax[d].z[p[d] + 1] - ax[d].z[p[d]];
    return v;
}

/* The volume-weighted mean of one gathered field F. */
static double weighted_mean(const ref_axis ax[3], const double *F)
{
    double sum = 0, vol = 0;
    int p[3];
    int64_t i = 0;
    for (p[0] = 0; p[0] < ax[0].n; p[0]++)
        for (p[1] = 0; p[1] < ax[1].n; p[1]++)
            for (p[2] = 0; p[2] < ax[2].n; p[2]++, i++) {
                double v = cell_volume(ax, p);
                sum += v * F[i];
                vol += v;
            }
    return sum / vol;
}

/* Rank 0: max and L2 of L_h u - alpha u - f' over every field, f' = f less its weighted mean
 * when singular (see reference.h). f and u: the gathered real fields, dense C order. */
static void poisson_residual(const ref_axis ax[3], double alpha, int singular, int batch,
                             const side *f, const side *u, tide_ref_error *err)
{
    const int64_t stride[3] = {(int64_t)ax[1].n * ax[2].n, ax[2].n, 1};
    double diff2 = 0, ref2 = 0, max_abs = 0, max_ref = 0;
    for (int fld = 0; fld < batch; fld++) {
        const double *F = f->all + fld * f->points, *U = u->all + fld * u->points;
        double mean = singular ? weighted_mean(ax, F) : 0;
        int p[3];
        int64_t i = 0;
        for (p[0] = 0; p[0] < ax[0].n; p[0]++)
            for (p[1] = 0; p[1] < ax[1].n; p[1]++)
                for (p[2] = 0; p[2] < ax[2].n; p[2]++, i++) {
                    double lap = 0;
                    for (int d = 0; d < 3; d++)
                        lap += axis_term(&ax[d], U, i, p[d], stride[d]);
                    double ref = F[i] - mean, r = lap - alpha * U[i] - ref;
                    diff2 += r * r;
                    ref2 += ref * ref;
                    /* A NaN (a point nobody wrote) stays visible, as in compare. */
                    double da = fabs(r), ra = fabs(ref);
                    if (da > max_abs || isnan(da))
                        max_abs = isnan(max_abs) ? max_abs : da;
                    if (ra > max_ref)
                        max_ref = ra;
                }
    }
    err->rel_l2 = ref2 > 0 ? sqrt(diff2 / ref2) : sqrt(diff2);
    err->max_abs = max_abs;
    err->max_ref = max_ref;
}

/* Rank 0: the axes, then the residual. Returns 0 or NOMEM. */
static int residual_on_root(const int n[3], const double h[3], const tide_bc bc[3][2],
                            const double *const faces[3], double alpha, int singular,
                            int batch, const side s[2], tide_ref_error *e)
{
    ref_axis ax[3] = {{0}};
    int status = 0;
    for (int d = 0; d < 3 && status == 0; d++)
        status = axis_init(&ax[d], d, n, h, bc, faces);
    if (status == 0)
        poisson_residual(ax, alpha, singular, batch, &s[0], &s[1], e);
    for (int d = 0; d < 3; d++)
        free(ax[d].z);
    return status;
}

int tide_ref_poisson_residual(MPI_Comm comm, const int n[3], const double h[3],
                              const tide_bc bc[3][2], const double *const faces[3],
                              double alpha, int singular, tide_precision prec, int batch,
                              const tide_box *box, const void *f, const void *u,
                              tide_ref_error *err)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm c;
    MPI_Comm_dup(comm, &c);

    side s[2]; /* f and u: real, on grid n */
    side_init(&s[0], n, 0, 1);
    side_init(&s[1], n, 0, 1);
    const tide_box *const boxes[2] = {box, box};
    const void *const data[2] = {f, u};
    int args = poisson_args(n, h, bc, faces, alpha, batch);
    int status = gather_pair(c, n, batch, prec, args, s, boxes, data);
    if (status == 0) {
        tide_ref_error e = {0, 0, 0};
        if (rank == 0)
            status = residual_on_root(n, h, bc, faces, alpha, singular, batch, s, &e);
        status = share_result(c, status, &e, err);
    }
    free(s[0].all);
    free(s[1].all);
    MPI_Comm_free(&c);
    return status;
}

/* ---- the stencil ----------------------------------------------------------------------------- */

/* Written from tide.h's contract alone: taps (dx, dy, dz) with weights, the update of point p
 * w_0 u(p + o_0) as a rounded product, then one fused multiply-add per further tap in the taps'
 * order, then the source's rounded add, in the data's precision (weights rounded to it first).
 * The 27-point shape whose weights take one value per class (centre, face, edge, corner) goes
 * in the class form instead (docs/api.md: sums of pairs along y and z in each plane of x, then
 * three multiply-add chains, then their sum). Dirichlet: the r outermost planes at each face of
 * that dimension keep their values (and get no source); periodic: indices wrap with a true
 * modulo. One step at a time into a second array, the whole grid in C order. */

/* i mod n in [0, n) for any sign of i (n > 0). */
static int64_t wrap_index(int64_t i, int64_t n)
{
    int64_t m = i % n;
    return m < 0 ? m + n : m;
}

/* The C-order index of the neighbour of (x, y, z) at offset o. Only called for points whose
 * neighbours lie inside the grid along Dirichlet dimensions (checked by the caller), so the
 * wrap changes nothing there. */
static int64_t neighbour(const int n[3], int x, int y, int z, const int o[3])
{
    int64_t a = wrap_index((int64_t)x + o[0], n[0]);
    int64_t b = wrap_index((int64_t)y + o[1], n[1]);
    int64_t c = wrap_index((int64_t)z + o[2], n[2]);
    return (a * n[1] + b) * n[2] + c;
}

/* Whether point (x, y, z) is a Dirichlet boundary point: within r of a face of a dimension
 * with a Dirichlet boundary. */
static int fixed_point(const int n[3], const tide_bc bc[3], int r, const int p[3])
{
    for (int d = 0; d < 3; d++)
        if (bc[d] == TIDE_BC_DIRICHLET && (p[d] < r || p[d] >= n[d] - r))
            return 1;
    return 0;
}

/* The class of each of the 27 taps of the 3x3x3 box (its count of nonzero offsets: 0 centre,
 * 1 face, 2 edge, 3 corner), and whether every class has one weight: then cw gets them. */
static int box_classes(int ntaps, const int (*off)[3], const double *w, double cw[4])
{
    int seen[4] = {0}, hit[27] = {0};
    if (ntaps != 27)
        return 0;
    for (int t = 0; t < 27; t++) {
        int k = 0, i = 0;
        for (int d = 0; d < 3; d++) {
            if (off[t][d] < -1 || off[t][d] > 1)
                return 0;
            k += off[t][d] != 0;
            i = 3 * i + off[t][d] + 1;
        }
        if (hit[i]++ || (seen[k] && cw[k] != w[t]))
            return 0;
        seen[k] = 1;
        cw[k] = w[t];
    }
    return 1;
}

/* The value at offset (a, b, c) from point p, the grid's neighbour index wrapped. */
#define AT(a, b, c) in[neighbour(n, p[0], p[1], p[2], (const int[3]){a, b, c})]

/* One step from in to out, every point, in type T with the multiply-add FMA. A point not kept
 * fixed is, with cw (the 27-point class form): in each plane a of x, pair sums along y (v),
 * the face and edge sums f and k; S(a) = cw3 k + (cw2 f + cw1 u) for a = -1, +1, M = cw2 k +
 * (cw1 f + cw0 u) at a = 0, each a rounded product then two fused multiply-adds;
 * (S(-1) + M) + S(1); without cw the taps in order, a rounded product then multiply-adds;
 * then the source. For float the products and sums are rounded to float: C17 evaluates float
 * expressions in float on the targets we build for (FLT_EVAL_METHOD 0), and meson's -std=c17
 * turns off contraction. */
#define STENCIL_STEP(NAME, T, FMA)                                                               \
    static void NAME(const int n[3], int ntaps, const int (*off)[3], const T *w, const T *cw,    \
                     const tide_bc bc[3], int r, const T *src, const T *in, T *out)              \
    {                                                                                            \
        int p[3];                                                                                \
        int64_t i = 0;                                                                           \
        for (p[0] = 0; p[0] < n[0]; p[0]++)                                                      \
            for (p[1] = 0; p[1] < n[1]; p[1]++)                                                  \
                for (p[2] = 0; p[2] < n[2]; p[2]++, i++) {                                       \
                    if (fixed_point(n, bc, r, p)) {                                              \
                        out[i] = in[i];                                                          \
                        continue;                                                                \
                    }                                                                            \
                    T acc;                                                                       \
                    if (cw) {                                                                    \
                        T s[3];                                                                  \
                        for (int a = -1; a <= 1; a++) {                                          \
                            T vm = AT(a, -1, -1) + AT(a, 1, -1);                                 \
                            T v0 = AT(a, -1, 0) + AT(a, 1, 0);                                   \
                            T vp = AT(a, -1, 1) + AT(a, 1, 1);                                   \
                            T f = v0 + (AT(a, 0, -1) + AT(a, 0, 1)), k = vm + vp;                \
                            s[a + 1] = a ? FMA(cw[3], k, FMA(cw[2], f, cw[1] * AT(a, 0, 0)))     \
                                         : FMA(cw[2], k, FMA(cw[1], f, cw[0] * AT(a, 0, 0)));    \
                        }                                                                        \
                        acc = (s[0] + s[1]) + s[2];                                              \
                    } else {                                                                     \
                        acc = w[0] * in[neighbour(n, p[0], p[1], p[2], off[0])];                 \
                        for (int t = 1; t < ntaps; t++)                                          \
                            acc = FMA(w[t], in[neighbour(n, p[0], p[1], p[2], off[t])], acc);    \
                    }                                                                            \
                    out[i] = src ? acc + src[i] : acc;                                           \
                }                                                                                \
    }
STENCIL_STEP(stencil_step_double, double, fma)
STENCIL_STEP(stencil_step_float, float, fmaf)
#undef AT

int tide_ref_stencil(const int n[3], int dbl, tide_stencil_shape shape, int ntaps,
                     const int (*off)[3], const double *w, const tide_bc bc[3],
                     const void *source, void *u, long long steps)
{
    if (!n || ntaps < 1 || !off || !w || !bc || !u || steps < 0)
        return TIDE_ERR_ARGUMENT;
    int r = 1; /* tide.h: the largest |offset| component, at least 1 */
    for (int t = 0; t < ntaps; t++)
        for (int d = 0; d < 3; d++) {
            int a = off[t][d] < 0 ? -off[t][d] : off[t][d];
            r = a > r ? a : r;
        }
    for (int d = 0; d < 3; d++) {
        if (bc[d] != TIDE_BC_PERIODIC && bc[d] != TIDE_BC_DIRICHLET)
            return TIDE_ERR_ARGUMENT;
        if (n[d] < 2 * r + 1)
            return TIDE_ERR_ARGUMENT;
    }
    if (steps == 0)
        return 0;
    int64_t points = (int64_t)n[0] * n[1] * n[2];
    size_t elem = dbl ? sizeof(double) : sizeof(float);
    void *other = malloc((size_t)points * elem);
    float *wf = dbl ? NULL : malloc((size_t)ntaps * sizeof(float));
    if (!other || (!dbl && !wf)) {
        free(other);
        free(wf);
        return TIDE_ERR_NOMEM;
    }
    for (int t = 0; t < ntaps && wf; t++)
        wf[t] = (float)w[t]; /* the weights in the plan's precision */
    double cw[4] = {0};
    int classes = shape == TIDE_STENCIL_27PT && box_classes(ntaps, off, w, cw);
    float cwf[4] = {(float)cw[0], (float)cw[1], (float)cw[2], (float)cw[3]};
    /* Ping-pong between u and the second array; the last step's result ends in u. */
    void *cur = u, *next = other;
    for (long long s = 0; s < steps; s++) {
        if (dbl)
            stencil_step_double(n, ntaps, off, w, classes ? cw : NULL, bc, r, source, cur, next);
        else
            stencil_step_float(n, ntaps, off, wf, classes ? cwf : NULL, bc, r, source, cur,
                               next);
        void *t = cur;
        cur = next;
        next = t;
    }
    if (cur != u)
        memcpy(u, cur, (size_t)points * elem);
    free(other);
    free(wf);
    return 0;
}

int tide_ref_stencil_taps(tide_stencil_shape shape, const double *w, int (*off)[3],
                          double *wout)
{
    if (shape == TIDE_STENCIL_7PT) {
        /* tide.h: centre, -x, +x, -y, +y, -z, +z; defaults centre 1/4, faces 1/8. */
        static const int o7[7][3] = {{0, 0, 0},  {-1, 0, 0}, {1, 0, 0}, {0, -1, 0},
                                     {0, 1, 0},  {0, 0, -1}, {0, 0, 1}};
        for (int t = 0; t < 7; t++) {
            memcpy(off[t], o7[t], sizeof o7[t]);
            wout[t] = w ? w[t] : (t == 0 ? 0.25 : 0.125);
        }
        return 7;
    }
    if (shape == TIDE_STENCIL_27PT) {
        /* tide.h: offset (dx, dy, dz) at index 9 (dx + 1) + 3 (dy + 1) + (dz + 1); defaults the
         * product over x, y, z of 1/4, 1/2, 1/4 at offsets -1, 0, +1. */
        static const double f[3] = {0.25, 0.5, 0.25};
        for (int dx = -1; dx <= 1; dx++)
            for (int dy = -1; dy <= 1; dy++)
                for (int dz = -1; dz <= 1; dz++) {
                    int t = 9 * (dx + 1) + 3 * (dy + 1) + (dz + 1);
                    off[t][0] = dx;
                    off[t][1] = dy;
                    off[t][2] = dz;
                    wout[t] = w ? w[t] : f[dx + 1] * f[dy + 1] * f[dz + 1];
                }
        return 27;
    }
    return 0;
}

int tide_ref_stencil_binomial_taps(tide_stencil_shape shape, int R, int (*off)[3], double *w)
{
    if ((shape != TIDE_STENCIL_STAR && shape != TIDE_STENCIL_BOX) || R < 1 ||
        R > TIDE_STENCIL_MAX_RADIUS)
        return 0;
    int n = 0;
    double b[2 * TIDE_STENCIL_MAX_RADIUS + 1] = {0}, q = 1;
    for (int k = 0; k < R; k++)
        q *= 4;
    for (int k = -R; k <= R; k++) { /* C(2R, R + k) / 4^R: exact in binary */
        double c = 1;
        for (int j = 1; j <= R + k; j++)
            c = c * (2 * R - j + 1) / j;
        b[k + R] = c / q;
    }
    if (shape == TIDE_STENCIL_STAR) { /* the centre, then +-k along x, y, z, k = 1..R */
        off[n][0] = off[n][1] = off[n][2] = 0;
        w[n++] = b[R];
        for (int k = 1; k <= R; k++)
            for (int d = 0; d < 3; d++)
                for (int s = -1; s <= 1; s += 2) {
                    off[n][0] = off[n][1] = off[n][2] = 0;
                    off[n][d] = s * k;
                    w[n++] = b[R + k] / 3;
                }
    } else { /* dx slowest, dz fastest, as 27pt */
        for (int dx = -R; dx <= R; dx++)
            for (int dy = -R; dy <= R; dy++)
                for (int dz = -R; dz <= R; dz++) {
                    off[n][0] = dx, off[n][1] = dy, off[n][2] = dz;
                    w[n++] = b[R + dx] * b[R + dy] * b[R + dz];
                }
    }
    return n;
}

/* ---- the matrix multiply --------------------------------------------------------------------- */

/* Written from tide.h's contract alone: element (i, j) of a column-major matrix at i + j ld, of
 * a row-major one at i ld + j (complex elements: two values, the real part first); op(X) = X^T
 * reads X(j, i) for (i, j), op(X) = X^H the same conjugated. Products and sums in long double,
 * in the order of p, whatever the loop order around them. */

/* op(X) as strides: element (r, c) at r * rs + c * cs, its imaginary part times conj. */
typedef struct {
    const void *x;
    long long rs, cs;
    double conj;
} ref_mat;

static ref_mat ref_mat_of(const void *x, tide_matrix_order order, tide_transpose t, long long ld)
{
    long long rs = order == TIDE_COL_MAJOR ? 1 : ld, cs = order == TIDE_COL_MAJOR ? ld : 1;
    double conj = t == TIDE_CONJTRANS ? -1 : 1;
    return t != TIDE_NOTRANS ? (ref_mat){x, cs, rs, conj} : (ref_mat){x, rs, cs, conj};
}

static ref_mat ref_mat_t(ref_mat a) { return (ref_mat){a.x, a.cs, a.rs, a.conj}; }

static double ref_get(const void *x, int dbl, long long i)
{
    return dbl ? ((const double *)x)[i] : (double)((const float *)x)[i];
}

/* Element e of a real (cplx 0) or complex matrix into v[0] (real part) and v[1] (imaginary
 * part, 0 for a real one), the imaginary part times conj. */
static void ref_elem(const void *x, int dbl, int cplx, long long e, double conj, double v[2])
{
    v[0] = ref_get(x, dbl, cplx ? 2 * e : e);
    v[1] = cplx ? conj * ref_get(x, dbl, 2 * e + 1) : 0;
}

/* Rows of G per pass: long enough that the accumulators are loaded rarely, short enough that
 * these rows of G stay in cache across neighbouring columns whichever index is contiguous. */
#define REF_PASS 64

/*
 * The sums for rows [s0, s1) of S times columns [g0, g1) of G (S r x k, G k x c), an entry's
 * values at w = 1 + cplx times (r - s0) ors + (c - g0) ocs (acc and mag zeroed by the caller):
 * acc gets sum_p S_rp G_pc (real, or its real and imaginary parts), mag the magnitudes of the
 * real products it sums: sum_p |S_rp G_pc| (real), or sum_p |Re S Re G| + |Im S Im G| (the
 * products making the real part) and sum_p |Re S Im G| + |Im S Re G| (the imaginary part's),
 * each in the order of p. S, the small side, is gathered into sbuf (rows of k, w values per
 * element) in its storage order; G is then read once, REF_PASS rows at a time, column after
 * column, each piece used for every row of S while it is in cache.
 */
static void ref_sums(int dbl, int cplx, long long k, ref_mat s, long long s0, long long s1,
                     ref_mat g, long long g0, long long g1, long long ors, long long ocs,
                     double *sbuf, long double *acc, long double *mag)
{
    long long h = s1 - s0, w = 1 + cplx;
    int rows_inner = s.rs < s.cs; /* gather in storage order: S's rows are contiguous */
    for (long long o = 0; o < (rows_inner ? k : h); o++)
        for (long long q = 0; q < (rows_inner ? h : k); q++) {
            long long r = rows_inner ? q : o, p = rows_inner ? o : q;
            double v[2];
            ref_elem(s.x, dbl, cplx, (s0 + r) * s.rs + p * s.cs, s.conj, v);
            memcpy(sbuf + (r * k + p) * w, v, sizeof(double) * (size_t)w);
        }
    for (long long p0 = 0; p0 < k; p0 += REF_PASS) {
        long long p1 = p0 + REF_PASS < k ? p0 + REF_PASS : k;
        for (long long c = g0; c < g1; c++)
            for (long long r = 0; r < h; r++) {
                long long e = (r * ors + (c - g0) * ocs) * w;
                const double *sr = sbuf + r * k * w;
                if (!cplx) {
                    long double d = acc[e], t = mag[e];
                    for (long long p = p0; p < p1; p++) {
                        long double x = (long double)sr[p] *
                                        ref_get(g.x, dbl, p * g.rs + c * g.cs);
                        d += x;
                        t += fabsl(x);
                    }
                    acc[e] = d;
                    mag[e] = t;
                    continue;
                }
                /* complex: the sums, then the magnitudes over the same piece of G (in cache):
                 * fewer long doubles live in each loop (x86: the x87 has eight registers) */
                long double re = acc[e], im = acc[e + 1], mre = mag[e], mim = mag[e + 1];
                for (long long p = p0; p < p1; p++) {
                    double y[2];
                    ref_elem(g.x, dbl, 1, p * g.rs + c * g.cs, g.conj, y);
                    long double xr = sr[2 * p], xi = sr[2 * p + 1];
                    re += xr * y[0] - xi * y[1];
                    im += xr * y[1] + xi * y[0];
                }
                for (long long p = p0; p < p1; p++) {
                    double y[2];
                    ref_elem(g.x, dbl, 1, p * g.rs + c * g.cs, 1, y);
                    long double xr = fabs(sr[2 * p]), xi = fabs(sr[2 * p + 1]);
                    mre += xr * fabs(y[0]) + xi * fabs(y[1]);
                    mim += xr * fabs(y[1]) + xi * fabs(y[0]);
                }
                acc[e] = re, acc[e + 1] = im;
                mag[e] = mre, mag[e + 1] = mim;
            }
    }
}

/* Stored rows and columns of a matrix used as an r x c op(X) with transpose t. */
static long long ref_min_ld(tide_matrix_order order, tide_transpose t, long long r, long long c)
{
    long long rows = t != TIDE_NOTRANS ? c : r, cols = t != TIDE_NOTRANS ? r : c;
    long long need = order == TIDE_COL_MAJOR ? rows : cols;
    return need > 1 ? need : 1;
}

/* Resolves a leading dimension (0: the minimum); 0 when it is below the minimum. */
static long long ref_ld(long long ld, tide_matrix_order order, tide_transpose t, long long r,
                        long long c)
{
    long long need = ref_min_ld(order, t, r, c);
    return ld == 0 ? need : ld >= need ? ld : 0;
}

static int ref_trans_ok(tide_transpose t)
{
    return t == TIDE_NOTRANS || t == TIDE_TRANS || t == TIDE_CONJTRANS;
}

int tide_ref_gemm(int dbl, int cplx, tide_matrix_order order, tide_transpose ta,
                  tide_transpose tb, long long m, long long n, long long k,
                  const double alpha[2], const void *a, long long lda, const void *b,
                  long long ldb, const double beta[2], const void *c0, long long ldc,
                  long long i0, long long i1, long long j0, long long j1, double *ref,
                  double *scale)
{
    if ((order != TIDE_COL_MAJOR && order != TIDE_ROW_MAJOR) || !ref_trans_ok(ta) ||
        !ref_trans_ok(tb) || (cplx != 0 && cplx != 1) || !alpha || !beta ||
        (!cplx && (alpha[1] != 0 || beta[1] != 0)) || m < 0 || n < 0 || k < 0 || i0 < 0 ||
        i0 > i1 || i1 > m || j0 < 0 || j0 > j1 || j1 > n)
        return TIDE_ERR_ARGUMENT;
    lda = ref_ld(lda, order, ta, m, k);
    ldb = ref_ld(ldb, order, tb, k, n);
    ldc = ref_ld(ldc, order, TIDE_NOTRANS, m, n);
    if (!lda || !ldb || !ldc)
        return TIDE_ERR_ARGUMENT;
    long long h = i1 - i0, w = j1 - j0, vals = 1 + cplx;
    /* the plan's precision */
    double al[2] = {alpha[0], alpha[1]}, be[2] = {beta[0], beta[1]};
    for (int q = 0; q < 2 && !dbl; q++) {
        al[q] = (float)al[q];
        be[q] = (float)be[q];
    }
    int use_c = be[0] != 0 || be[1] != 0;
    int products = (al[0] != 0 || al[1] != 0) && k > 0 && h > 0 && w > 0;
    if ((products && (!a || !b)) || (use_c && h && w && !c0) || (h && w && (!ref || !scale)))
        return TIDE_ERR_ARGUMENT;
    size_t values = (size_t)h * (size_t)w * (size_t)vals;
    long double *acc = calloc(values ? values : 1, sizeof *acc);
    long double *mag = calloc(values ? values : 1, sizeof *mag);
    size_t side = (size_t)(h < w ? h : w) * (size_t)k * (size_t)vals;
    double *sbuf = products ? malloc(side * sizeof *sbuf) : NULL;
    int status = acc && mag && (sbuf || !products) ? 0 : TIDE_ERR_NOMEM;
    ref_mat ma = ref_mat_of(a, order, ta, lda), mb = ref_mat_of(b, order, tb, ldb);
    /* The block's smaller side is gathered: rows of op(A), or columns of op(B) (rows of
     * op(B)^T, with op(A)^T streamed and the results transposed back). */
    if (!status && products && h <= w)
        ref_sums(dbl, cplx, k, ma, i0, i1, mb, j0, j1, w, 1, sbuf, acc, mag);
    else if (!status && products)
        ref_sums(dbl, cplx, k, ref_mat_t(mb), j0, j1, ref_mat_t(ma), i0, i1, 1, w, sbuf, acc,
                 mag);
    /* alpha s + beta C0 with s = acc: a complex product in each (real: imaginary parts 0). The
     * real part's real products sum to |ar| mag_re + |ai| mag_im + |br cr| + |bi ci|, the
     * imaginary part's to |ar| mag_im + |ai| mag_re + |br ci| + |bi cr|. */
    for (long long i = 0; i < h && !status; i++)
        for (long long j = 0; j < w; j++) {
            long long e = (i * w + j) * vals;
            long double s[2] = {acc[e], cplx ? acc[e + 1] : 0};
            long double u[2] = {mag[e], cplx ? mag[e + 1] : 0};
            long double v[2], t[2];
            for (int q = 0; q < 2; q++) { /* q 0 the real part, 1 the imaginary */
                v[q] = q ? (long double)al[0] * s[1] + (long double)al[1] * s[0]
                         : (long double)al[0] * s[0] - (long double)al[1] * s[1];
                t[q] = fabs(al[0]) * u[q] + fabs(al[1]) * u[1 - q];
            }
            if (use_c) {
                long long at = order == TIDE_COL_MAJOR ? (i0 + i) + (j0 + j) * ldc
                                                       : (i0 + i) * ldc + (j0 + j);
                double c[2];
                ref_elem(c0, dbl, cplx, at, 1, c);
                long double rr = (long double)be[0] * c[0], ii = (long double)be[1] * c[1];
                long double ri = (long double)be[0] * c[1], ir = (long double)be[1] * c[0];
                v[0] += rr - ii;
                v[1] += ri + ir;
                t[0] += fabsl(rr) + fabsl(ii);
                t[1] += fabsl(ri) + fabsl(ir);
            }
            for (int q = 0; q < vals; q++) {
                ref[e + q] = (double)v[q];
                scale[e + q] = (double)t[q];
            }
        }
    free(acc);
    free(mag);
    free(sbuf);
    return status;
}

double tide_ref_gemm_error(int dbl, int cplx, tide_matrix_order order, long long k,
                           const void *c, long long ldc, long long i0, long long i1,
                           long long j0, long long j1, const double *ref, const double *scale)
{
    long long h = i1 - i0, w = j1 - j0, vals = 1 + cplx;
    if ((order != TIDE_COL_MAJOR && order != TIDE_ROW_MAJOR) || (cplx != 0 && cplx != 1) ||
        k < 0 || ldc < 1 || i0 < 0 || h < 0 || j0 < 0 || w < 0 || (h && w && (!c || !ref ||
        !scale)))
        return NAN;
    /* roundings on the path of one real product: real, 1 product, k additions (the dot
     * product's k - 1 and beta C's), 1 for alpha; complex, one more for each complex product
     * (x y's and alpha's real part a difference, its imaginary part a sum of two products) */
    double depth = (double)k + (cplx ? 4 : 2);
    double u = dbl ? 0x1p-53 : 0x1p-24, u_ref = dbl ? 0x1p-53 : 0;
    double worst = 0;
    for (long long i = 0; i < h; i++)
        for (long long j = 0; j < w; j++)
            for (long long q = 0; q < vals; q++) {
                long long at = order == TIDE_COL_MAJOR ? (i0 + i) + (j0 + j) * ldc
                                                       : (i0 + i) * ldc + (j0 + j);
                long long e = (i * w + j) * vals + q;
                double got = ref_get(c, dbl, at * vals + q), want = ref[e];
                if (got == want)
                    continue;
                double bound = depth * u * scale[e] + u_ref * fabs(want);
                double diff = fabs(got - want); /* NaN when got or want is NaN */
                if (isnan(diff) || bound == 0)
                    return INFINITY;
                worst = diff / bound > worst ? diff / bound : worst;
            }
    return worst;
}

/* ---- band matrix powers ------------------------------------------------------------------ */

#define BAND_STEP(NAME, T, F)                                                                   \
    static void NAME(int n, int kl, int ku, const T *diag, const T *x, T *y)                   \
    {                                                                                          \
        for (int i = 0; i < n; i++) {                                                          \
            T acc = 0;                                                                         \
            for (int j = i - kl; j <= i + ku; j++)                                             \
                if (j >= 0 && j < n)                                                           \
                    acc = F(diag[(size_t)(j - i + kl) * (size_t)n + (size_t)i], x[j], acc);    \
            y[i] = acc;                                                                        \
        }                                                                                      \
    }

BAND_STEP(band_step_double, double, fma)
BAND_STEP(band_step_float, float, fmaf)

int tide_ref_band(int n, int dbl, int kl, int ku, const void *diag, void *x, long long steps)
{
    size_t elem = dbl ? sizeof(double) : sizeof(float);
    char *y = malloc((size_t)n * elem + 1);
    if (!y)
        return TIDE_ERR_NOMEM;
    for (long long s = 0; s < steps; s++) {
        if (dbl)
            band_step_double(n, kl, ku, diag, x, (double *)y);
        else
            band_step_float(n, kl, ku, diag, x, (float *)y);
        memcpy(x, y, (size_t)n * elem);
    }
    free(y);
    return TIDE_SUCCESS;
}
