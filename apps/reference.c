/*
 * reference.c: the independent oracle (see reference.h).
 *
 * Deliberately shares no code with the library: box offsets are computed here from lo/hi/order,
 * the data travels with plain MPI point-to-point messages, and the reference transform is one
 * call of FFTW's serial 3D interface in double precision. A bug in Tide's box handling, reshapes
 * or FFT sequencing therefore cannot cancel out in the comparison.
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

int tide_ref_check(MPI_Comm comm, const int n[3], tide_fft_type type, tide_precision prec,
                   int batch, int direction, double scale, const tide_box *srcbox,
                   const void *src, const tide_box *dstbox, const void *dst,
                   tide_ref_error *err)
{
    int rank, nranks;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nranks);
    /* Our own communicator, so that our messages can never match the caller's. */
    MPI_Comm c;
    MPI_Comm_dup(comm, &c);

    /* Forward: src on the real/complex grid n, dst complex (halved for R2C); backward the
     * reverse. */
    int r2c = type == TIDE_R2C;
    side s_src, s_dst;
    side_init(&s_src, n, r2c && direction > 0, r2c && direction < 0 ? 1 : 2);
    side_init(&s_dst, n, r2c && direction < 0, r2c && direction > 0 ? 1 : 2);

    /* Every rank's two boxes and whether its local part is usable, in one gather. */
    enum { NV = 19 };
    int mine[NV];
    pack_box(srcbox, mine);
    pack_box(dstbox, mine + 9);
    mine[18] = (src || box_points(srcbox) == 0) && (dst || box_points(dstbox) == 0);
    int *all = malloc((size_t)nranks * NV * sizeof(int));
    tide_box *boxes = malloc((size_t)nranks * 2 * sizeof(tide_box));
    int have = all && boxes, everyone = 0;
    MPI_Allreduce(&have, &everyone, 1, MPI_INT, MPI_LAND, c);
    int status = everyone ? 0 : TIDE_ERR_NOMEM;
    double *buf = NULL;
    tide_box *sboxes = boxes, *dboxes = boxes ? boxes + nranks : NULL;
    if (status == 0) {
        MPI_Allgather(mine, NV, MPI_INT, all, NV, MPI_INT, c);
        /* Staging for one message: as large as the largest block this rank sends (or, on
         * rank 0, receives), at most one chunk. Sized exactly because the check runs often and
         * a needlessly large buffer costs time where malloc fills memory (MALLOC_PERTURB_,
         * which meson sets for tests). */
        int64_t stage = 1;
        for (int r = 0; r < nranks; r++) {
            unpack_box(all + NV * r, &sboxes[r]);
            unpack_box(all + NV * r + 9, &dboxes[r]);
            if (r != rank && rank != 0)
                continue;
            int64_t need = box_points(&sboxes[r]) * s_src.comps;
            if (box_points(&dboxes[r]) * s_dst.comps > need)
                need = box_points(&dboxes[r]) * s_dst.comps;
            stage = need > stage ? need : stage;
        }
        buf = malloc((size_t)(stage < REF_CHUNK ? stage : REF_CHUNK) * sizeof(double));
        if (!buf)
            status = TIDE_ERR_NOMEM;
    }

    /* Every rank sees the same boxes; rank 0 validates them (it also has to find the memory
     * for the global arrays), and the worst status of all ranks is everybody's answer. */
    if (rank == 0 && status == 0) {
        if (n[0] <= 0 || n[1] <= 0 || n[2] <= 0 || batch <= 0 || direction == 0)
            status = TIDE_ERR_ARGUMENT;
        else if (!tide_ref_fits(n, batch))
            status = TIDE_ERR_TOO_LARGE;
        for (int r = 0; r < nranks && status == 0; r++) {
            if (!all[NV * r + 18])
                status = TIDE_ERR_ARGUMENT; /* NULL data where the box has points */
            else if (!box_inside(&sboxes[r], s_src.grid) || !box_inside(&dboxes[r], s_dst.grid))
                status = TIDE_ERR_BOX;
        }
        if (status == 0) {
            size_t sd = (size_t)(s_src.points * s_src.comps * batch);
            size_t dd = (size_t)(s_dst.points * s_dst.comps * batch);
            s_src.all = malloc(sd * sizeof(double));
            s_dst.all = malloc(dd * sizeof(double));
            if (!s_src.all || !s_dst.all) {
                status = TIDE_ERR_NOMEM;
            } else {
                /* NaN marks points no box covers: they poison the error, so a hole fails. */
                for (size_t i = 0; i < sd; i++)
                    s_src.all[i] = NAN;
                for (size_t i = 0; i < dd; i++)
                    s_dst.all[i] = NAN;
            }
        }
    }
    int worst = status;
    MPI_Allreduce(&worst, &status, 1, MPI_INT, MPI_MAX, c);

    double res[3] = {0, 0, 0};
    if (status == 0) {
        gather_side(c, rank, nranks, sboxes, &s_src, src, prec, batch, TAG_SRC, buf);
        gather_side(c, rank, nranks, dboxes, &s_dst, dst, prec, batch, TAG_DST, buf);
        if (rank == 0) {
            tide_ref_error e = {0, 0, 0};
            status = compare(n, type, batch, direction, scale, &s_src, &s_dst, &e);
            res[0] = e.rel_l2;
            res[1] = e.max_abs;
            res[2] = e.max_ref;
        }
        MPI_Bcast(&status, 1, MPI_INT, 0, c);
        MPI_Bcast(res, 3, MPI_DOUBLE, 0, c);
        if (status == 0) {
            err->rel_l2 = res[0];
            err->max_abs = res[1];
            err->max_ref = res[2];
        }
    }
    free(boxes);
    free(all);
    free(buf);
    free(s_src.all);
    free(s_dst.all);
    MPI_Comm_free(&c);
    return status;
}
