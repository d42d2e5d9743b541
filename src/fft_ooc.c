/*
 * fft_ooc.c: distributed 3D FFTs (C2C, R2C) of host arrays larger than the device budget,
 * streamed through the GPU by the out-of-card pipeline engine (gpu/pipeline.h): the slab
 * algorithm of Chen, Cui and Mei (2010).
 *
 * Ranks hold x-slabs (C order) of the input; the output is in x-slabs too, or, transposed, in
 * y-slabs (C order). A transform is two passes, each one pipeline job that touches host
 * memory only through PCIe transfers:
 *   pass over x-planes: chunks of k x-planes are uploaded and get their FFTs over (y,z);
 *   pass over y-rows:   chunks of m y-rows are uploaded and get their FFTs over x.
 * The first pass reads the input and moves the data to the other slab layout (x-slabs to
 * y-slabs or back) into a pinned host slab W; the second reads W and writes the output, moving
 * the data back to x-slabs unless the output is transposed. A transposed backward transform
 * starts from y-slabs, so it runs the y-row pass first. One rank needs no exchange: the first
 * pass writes the output and the second transforms it in place (a real transform goes through
 * W, since its input and output differ in size and may share memory).
 *
 * Real transforms: the r2c over z is done first, with the 2D transform over (y,z) of the
 * x-plane pass; the c2r over z last, with the x transform of the y-row pass (natural output:
 * the x-plane pass then transforms y alone) or with the 2D c2r over (y,z) of the x-plane pass
 * (transposed). Every transfer and buffer then counts in real scalars, complex data having
 * twice as many along z. On the device a chunk always has the complex chunk's shape, so real
 * rows land padded, as cuFFT's in-place real transforms want them.
 *
 * A moving pass sends each peer the part of every chunk that lies in the peer's slab:
 *   NCCL (the GPUs reach each other): the chunk's parts are packed on the GPU in the receiver's
 *     order and exchanged in one NCCL group per chunk inside the pipeline; what arrives is
 *     downloaded into the destination. Chunk i of every rank runs together (the same chunk
 *     rule everywhere; ranks with fewer planes have empty chunks), so the groups match.
 *   MPI in host memory (the fallback): the chunk's parts are downloaded straight into pinned
 *     per-peer send blocks S, and after the pass one point-to-point exchange moves the blocks
 *     into the destination (received with subarray types, so nothing is packed on the host).
 * Either way this rank's own part is downloaded straight into the destination.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tide_config.h"
#include "fft_ooc.h"
#include "region.h"
#if TIDE_HAVE_CUDA
#include "gpu.h"
#include "pipeline.h"

enum { NSLOTS = 3, TAG = 7311, NOPS = 2 };

/* The cuFFT transforms of one pass on one slot in one direction, run in order. */
typedef struct {
    tide_gpu_fft *f[NOPS];
    int n;
    int real_in, real_out; /* the chunk is real before the first, after the last */
} pass_ffts;

struct tide_ooc {
    const tide_context *ctx; /* for logging and the MPI exchange */
    int P, me, n[3], dbl, r2c, batch, transposed;
    size_t elem;          /* bytes per transferred element: a complex (c2c), a real (r2c) */
    int zc;               /* elements along z of complex data (real data: n[2]) */
    tide_box *slab[2];    /* every rank's x-slab [0] and y-slab [1] of complex data */
    size_t *soff;         /* [q]: element offset of peer q's send block in S (the pass's) */
    int thick[2];         /* the thickest x-slab and y-slab */
    int step[2];          /* k planes per x-plane chunk, m rows per y-row chunk */
    int nchunks[2];       /* chunks per pass (the most any rank has) */
    tide_pipeline *pipe;
    size_t buf_bytes;
    pass_ffts fft[2][NSLOTS][2]; /* [pass over d][slot][0 forward, 1 backward] */
    size_t work_bytes;
    void *work[NSLOTS];
    void *W, *S;          /* pinned host: the intermediate slab; send blocks (MPI) */
    size_t wbytes, sbytes;
    int wfields;          /* fields W holds (see field_order) */
    void *nccl;           /* NULL: one rank, or the MPI exchange */
    MPI_Datatype etype;   /* one element, for the MPI exchange */
    MPI_Request *req;     /* the MPI exchange's messages (2P) and their types */
    MPI_Datatype *types;
    /* the pass in progress */
    int sign, d, moves, scaled, zsrc, zdst; /* z extents of what it reads and writes */
    double scale;
    const void *src;      /* read, laid out as this rank's slab d (z: zsrc) */
    void *dst;            /* written, laid out as dl (z: zdst) */
    tide_box dl;
    char why[TIDE_MSG_LEN];
};

/* Rank r's chunk i of the pass over d: [a, b) along d. */
static void chunk_range(const tide_ooc *o, int d, int r, int i, int *a, int *b)
{
    const tide_box *s = &o->slab[d][r];
    long lo = s->lo[d] + (long)i * o->step[d], hi = lo + o->step[d];
    if (lo > s->hi[d])
        lo = s->hi[d];
    if (hi > s->hi[d])
        hi = s->hi[d];
    *a = (int)lo;
    *b = (int)hi;
}

/* b with z cut to [0, z): the same points of real data (z = n[2]) or complex data. */
static tide_box zcut(tide_box b, int z)
{
    b.hi[2] = z;
    return b;
}

/* The points [a, b) along d: whole planes (d = 0) or rows (d = 1), z extent z. */
static tide_box chunk_region(const tide_ooc *o, int d, int a, int b, int z)
{
    tide_box r = {{0, 0, 0}, {o->n[0], o->n[1], z}, {0, 1, 2}};
    r.lo[d] = a;
    r.hi[d] = b;
    return r;
}

/* The device layout of a chunk in buffer 0: the full complex chunk from its first point, so
 * one cuFFT plan serves every chunk (a short last chunk transforms some unused planes too). */
static tide_box chunk_box(const tide_ooc *o, int d, int a)
{
    return chunk_region(o, d, a, a + o->step[d], o->zc);
}

/* Of rank r's points [a, b) along d, those in rank q's slab of the other dimension: what r
 * sends q in a moving pass (z extent of the data moved). Returns the count. */
static long long part(const tide_ooc *o, int d, int a, int b, int q, tide_box *out)
{
    tide_box c = chunk_region(o, d, a, b, o->zdst);
    return tide_box_intersect(&c, &o->slab[1 - d][q], out);
}

/* What this rank sends peer q, and receives from peer p, in chunk i of the pass over d. */
static long long send_part(const tide_ooc *o, int d, int i, int q, tide_box *out)
{
    int a, b;
    chunk_range(o, d, o->me, i, &a, &b);
    return part(o, d, a, b, q, out);
}

static long long recv_part(const tide_ooc *o, int d, int i, int p, tide_box *out)
{
    int a, b;
    chunk_range(o, d, p, i, &a, &b);
    return part(o, d, a, b, o->me, out);
}

/* The send block for peer q of a whole pass over d: this rank's slab d in q's other slab. */
static long long block(const tide_ooc *o, int d, int q, tide_box *out)
{
    const tide_box *s = &o->slab[d][o->me];
    return part(o, d, s->lo[d], s->hi[d], q, out);
}

static int describe(void *user, int i, tide_xfer *up, int *nup, tide_xfer *down, int *ndown)
{
    tide_ooc *o = user;
    int d = o->d, a, b;
    chunk_range(o, d, o->me, i, &a, &b);
    tide_box cbox = chunk_box(o, d, a), r;
    *nup = *ndown = 0;
    if (b > a) {
        /* Upload the chunk; download what stays here straight into the destination, and in
         * the MPI exchange every peer's part into its send block. */
        tide_box sl = zcut(o->slab[d][o->me], o->zsrc);
        up[(*nup)++] = (tide_xfer){(void *)o->src, sl, chunk_region(o, d, a, b, o->zsrc), 0, 0,
                                   cbox};
        if (!o->moves) {
            down[(*ndown)++] = (tide_xfer){o->dst, o->dl, chunk_region(o, d, a, b, o->zdst), 0,
                                           0, cbox};
            return 0;
        }
        for (int q = 0; q < o->P; q++) {
            tide_box blk;
            if (send_part(o, d, i, q, &r) == 0)
                continue;
            if (q == o->me)
                down[(*ndown)++] = (tide_xfer){o->dst, o->dl, r, 0, 0, cbox};
            else if (!o->nccl && block(o, d, q, &blk) > 0)
                down[(*ndown)++] = (tide_xfer){(char *)o->S + o->soff[q] * o->elem, blk, r, 0,
                                               0, cbox};
        }
    }
    if (!o->moves || !o->nccl)
        return 0;
    /* NCCL: download what the peers sent, from buffer 2. */
    size_t off = 0;
    for (int p = 0; p < o->P; p++) {
        long long cnt = p == o->me ? 0 : recv_part(o, d, i, p, &r);
        if (cnt > 0) {
            down[(*ndown)++] = (tide_xfer){o->dst, o->dl, r, 2, off * o->elem, r};
            off += (size_t)cnt;
        }
    }
    return 0;
}

static int work(void *user, int i, void *const *buf, void *stream)
{
    tide_ooc *o = user;
    int d = o->d, s = i % NSLOTS, a, b, st = 0;
    chunk_range(o, d, o->me, i, &a, &b);
    tide_box cbox = chunk_box(o, d, a), r;
    const pass_ffts *pf = &o->fft[d][s][o->sign > 0]; /* bound to this slot's stream */
    for (int k = 0; k < pf->n && b > a && !st; k++)
        st = tide_gpu_fft_execute(pf->f[k], buf[0], buf[0]);
    if (b > a && !st && o->scaled && o->scale != 1.0) /* padding and all: scalars of the box */
        st = tide_gpu_scale(o->dbl, buf[0], tide_box_count(&cbox) * (o->r2c ? 1 : 2), o->scale,
                            stream);
    if (st || !o->moves || !o->nccl)
        return st;
    /* Pack every peer's part in its order (C order: the part as a dense box), then one NCCL
     * group for the chunk; every rank issues chunk i's group in the same place. */
    size_t soff = 0, roff = 0;
    for (int q = 0; q < o->P && !st; q++) {
        long long cnt = q == o->me ? 0 : send_part(o, d, i, q, &r);
        if (cnt == 0)
            continue;
        st = tide_gpu_copy_region_async(o->elem, 1, &r, buf[0], &cbox,
                                        (char *)buf[1] + soff * o->elem, &r, stream);
        soff += (size_t)cnt;
    }
    if (!st)
        st = tide_nccl_group_start();
    soff = 0;
    for (int q = 0; q < o->P && !st; q++) {
        if (q == o->me)
            continue;
        long long sc = send_part(o, d, i, q, &r), rc = recv_part(o, d, i, q, &r);
        if (rc > 0)
            st = tide_nccl_recv(o->nccl, (char *)buf[2] + roff * o->elem, (size_t)rc * o->elem,
                                q, stream);
        if (!st && sc > 0)
            st = tide_nccl_send(o->nccl, (char *)buf[1] + soff * o->elem, (size_t)sc * o->elem,
                                q, stream);
        soff += (size_t)sc;
        roff += (size_t)rc;
    }
    int end = st ? 0 : tide_nccl_group_end();
    return st ? st : end;
}

/* An MPI type for the points of region inside a C-order array laid out as box. */
static int region_type(const tide_ooc *o, const tide_box *box, const tide_box *region,
                       MPI_Datatype *t)
{
    int sizes[3], sub[3], starts[3];
    for (int d = 0; d < 3; d++) {
        sizes[d] = box->hi[d] - box->lo[d];
        sub[d] = region->hi[d] - region->lo[d];
        starts[d] = region->lo[d] - box->lo[d];
    }
    if (MPI_Type_create_subarray(3, sizes, sub, starts, MPI_ORDER_C, o->etype, t))
        return TIDE_ERR_MPI;
    return MPI_Type_commit(t) ? TIDE_ERR_MPI : 0;
}

/* After a moving pass over d without NCCL: every peer's send block goes from S straight into
 * its place in the peer's destination. Called after a local failure too, so no peer waits. */
static int mpi_exchange(tide_ooc *o, char *err, size_t len)
{
    int d = o->d, n = 0, st = 0;
    MPI_Request *req = o->req;
    MPI_Datatype *type = o->types;
    for (int p = 0; p < o->P && !st; p++) {
        tide_box r;
        const tide_box *ps = &o->slab[d][p];
        if (p == o->me || part(o, d, ps->lo[d], ps->hi[d], o->me, &r) == 0)
            continue;
        st = region_type(o, &o->dl, &r, &type[n]);
        if (!st && MPI_Irecv(o->dst, 1, type[n], p, TAG, o->ctx->comm, &req[n]))
            st = TIDE_ERR_MPI;
        n += !st;
    }
    for (int q = 0; q < o->P && !st; q++) {
        tide_box r;
        if (q == o->me || block(o, d, q, &r) == 0)
            continue;
        st = region_type(o, &r, &r, &type[n]);
        if (!st && MPI_Isend((char *)o->S + o->soff[q] * o->elem, 1, type[n], q, TAG,
                             o->ctx->comm, &req[n]))
            st = TIDE_ERR_MPI;
        n += !st;
    }
    if (MPI_Waitall(n, req, MPI_STATUSES_IGNORE))
        st = TIDE_ERR_MPI;
    for (int i = 0; i < n; i++)
        MPI_Type_free(&type[i]);
    if (st)
        snprintf(err, len, "the MPI exchange of the pass over %c failed", "xy"[d]);
    return st;
}

/* Bytes of one field of the transform's input and output on rank r (sign: the direction). */
static void field_bytes(const tide_ooc *o, int r, int sign, size_t *in, size_t *out)
{
    int to = o->transposed ? (sign < 0 ? 1 : 0) : 0, from = o->transposed ? 1 - to : 0;
    int zin = o->r2c && sign < 0 ? o->n[2] : o->zc, zout = o->r2c && sign > 0 ? o->n[2] : o->zc;
    tide_box bin = zcut(o->slab[from][r], zin), bout = zcut(o->slab[to][r], zout);
    *in = (size_t)tide_box_count(&bin) * o->elem;
    *out = (size_t)tide_box_count(&bout) * o->elem;
}

/* The order fields go in, the same on every rank since their exchanges pair up: a field is
 * read whole (into W) before its output is written, so in place, fields go backwards when
 * the output's fields are longer (*reverse) and forwards when shorter. Where ranks differ
 * (transposed slabs of uneven thickness) no order suits all: then W holds every field, all
 * are read before any is written, and the function returns the batch; else 1. */
static int field_order(const tide_ooc *o, int sign, int *reverse)
{
    int longer = 0, shorter = 0;
    for (int r = 0; r < o->P; r++) {
        size_t in, out;
        field_bytes(o, r, sign, &in, &out);
        longer |= out > in;
        shorter |= out < in;
    }
    *reverse = longer;
    return longer && shorter ? o->batch : 1;
}

static void free_ffts(tide_ooc *o)
{
    for (int d = 0; d < 2; d++)
        for (int s = 0; s < NSLOTS; s++)
            for (int g = 0; g < 2; g++) {
                pass_ffts *pf = &o->fft[d][s][g];
                for (int k = 0; k < pf->n; k++)
                    tide_gpu_fft_destroy(pf->f[k]);
                memset(pf, 0, sizeof *pf);
            }
}

void tide_ooc_destroy(tide_ooc *o)
{
    if (!o)
        return;
    free_ffts(o);
    for (int s = 0; s < NSLOTS; s++)
        tide_gpu_free(o->work[s]);
    tide_pipeline_destroy(o->pipe);
    if (o->W)
        tide_gpu_host_free(o->W);
    if (o->S)
        tide_gpu_host_free(o->S);
    if (o->etype != MPI_DATATYPE_NULL)
        MPI_Type_free(&o->etype);
    for (int d = 0; d < 2; d++)
        free(o->slab[d]);
    free(o->soff);
    free(o->req);
    free(o->types);
    free(o);
}

/* Add one cuFFT transform of the chunk of the pass over d to pf: kind (tide_gpu_fft_desc's),
 * sign, transformed dimensions dims[0..nd). Complex chunks have nz = zc / (r2c ? 2 : 1)
 * elements along z, real ones (padded) 2 * nz. */
static int add_fft(tide_ooc *o, pass_ffts *pf, int d, int kind, int sign, int nd, int d0,
                   int d1, char *err, size_t len)
{
    int nz = o->r2c ? o->zc / 2 : o->zc;
    tide_box c = chunk_region(o, d, 0, o->step[d], nz), r = zcut(c, 2 * nz);
    tide_gpu_fft_desc f = {.dbl = o->dbl, .kind = kind, .sign = sign,
                           .ibox = kind == 1 ? &r : &c, .obox = kind == 2 ? &r : &c,
                           .dims = {d0, d1}, .ndims = nd, .nz_real = o->n[2], .batch = 1};
    size_t w = 0;
    int st = tide_gpu_fft_create(&f, &pf->f[pf->n], &w, err, len);
    if (st)
        return st;
    pf->n++;
    pf->real_in = pf->real_in || (pf->n == 1 && kind == 1);
    pf->real_out = kind == 2;
    o->work_bytes = w > o->work_bytes ? w : o->work_bytes;
    return 0;
}

/* The cuFFT plans of both passes, both directions, every slot, at the current chunk sizes
 * (see the top of the file for what each pass transforms), and the largest work size. */
static int make_ffts(tide_ooc *o, char *err, size_t len)
{
    o->work_bytes = 0;
    int st = 0;
    for (int s = 0; s < NSLOTS && !st; s++) {
        pass_ffts *x = o->fft[0][s], *y = o->fft[1][s]; /* [0] forward, [1] backward */
        if (!o->r2c) {
            for (int g = 0; g < 2 && !st; g++) {
                st = add_fft(o, &x[g], 0, 0, g ? 1 : -1, 2, 1, 2, err, len);
                if (!st)
                    st = add_fft(o, &y[g], 1, 0, g ? 1 : -1, 1, 0, 0, err, len);
            }
            continue;
        }
        st = add_fft(o, &x[0], 0, 1, -1, 2, 1, 2, err, len);          /* r2c (y,z) */
        if (!st)
            st = add_fft(o, &y[0], 1, 0, -1, 1, 0, 0, err, len);      /* c2c x */
        if (!st)
            st = add_fft(o, &y[1], 1, 0, 1, 1, 0, 0, err, len);       /* c2c x, back */
        if (!st && o->transposed)
            st = add_fft(o, &x[1], 0, 2, 1, 2, 1, 2, err, len);       /* c2r (y,z) */
        if (!st && !o->transposed) {
            st = add_fft(o, &x[1], 0, 0, 1, 1, 1, 0, err, len);       /* c2c y */
            if (!st)
                st = add_fft(o, &y[1], 1, 2, 1, 1, 2, 0, err, len);   /* then c2r z */
        }
    }
    return st;
}

/* Elements of a chunk of the pass over d, and (NCCL) of all it sends or receives. */
static long long chunk_elems(const tide_ooc *o, int d)
{
    tide_box c = chunk_box(o, d, 0);
    long long most = tide_box_count(&c);
    long long moved = o->P * (long long)o->step[d] * o->thick[1 - d] * o->zc;
    return o->nccl && moved > most ? moved : most;
}

static int nbufs(const tide_ooc *o) { return o->nccl ? 3 : 1; }

static size_t tide_ooc_device_bytes(const tide_ooc *o)
{
    return NSLOTS * (nbufs(o) * o->buf_bytes + o->work_bytes);
}

int tide_ooc_create(const tide_context *ctx, const int n[3], int dbl, int r2c, int batch,
                    int transposed, void *nccl, size_t budget, tide_ooc **out, char *err,
                    size_t len)
{
    *out = NULL;
    tide_ooc *o = calloc(1, sizeof *o);
    if (!o)
        return snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM;
    o->ctx = ctx;
    o->P = ctx->nranks;
    o->me = ctx->rank;
    memcpy(o->n, n, sizeof o->n);
    o->dbl = dbl;
    o->r2c = r2c;
    o->batch = batch;
    o->transposed = transposed;
    o->elem = (dbl ? 8 : 4) * (r2c ? 1 : 2);
    o->zc = r2c ? 2 * (n[2] / 2 + 1) : n[2];
    o->zdst = o->zc;
    o->nccl = nccl;
    o->etype = MPI_DATATYPE_NULL;
    o->soff = calloc((size_t)o->P + 1, sizeof(size_t));
    for (int d = 0; d < 2; d++)
        o->slab[d] = calloc((size_t)o->P, sizeof(tide_box));
    if (!o->slab[0] || !o->slab[1] || !o->soff) {
        tide_ooc_destroy(o);
        return snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM;
    }
    int zgrid[3] = {n[0], n[1], o->zc};
    for (int r = 0; r < o->P; r++)
        for (int d = 0; d < 2; d++) {
            tide_box_slab(zgrid, d, o->P, r, &o->slab[d][r]);
            int t = o->slab[d][r].hi[d] - o->slab[d][r].lo[d];
            o->thick[d] = t > o->thick[d] ? t : o->thick[d];
        }
    /* Chunk sizes: three slots of (buffers + a cuFFT work area about a chunk's size) within
     * the budget; halved until the plans' real work areas fit too. */
    double target = (double)budget / (NSLOTS * (nbufs(o) + 1));
    double plane = (double)n[1] * o->zc * o->elem, row = (double)n[0] * o->zc * o->elem;
    o->step[0] = target / plane < o->thick[0] ? (int)(target / plane) : o->thick[0];
    o->step[1] = target / row < o->thick[1] ? (int)(target / row) : o->thick[1];
    int st = TIDE_SUCCESS;
    for (;;) {
        if (o->step[0] < 1 || o->step[1] < 1) {
            snprintf(err, len, "a device budget of %.3g GB cannot hold three pipeline slots of "
                     "one %dx%d plane (%.3g GB each) and their cuFFT work areas",
                     budget / 1e9, n[1], n[2], plane / 1e9);
            st = TIDE_ERR_NOMEM;
            break;
        }
        long long a = chunk_elems(o, 0), b = chunk_elems(o, 1);
        o->buf_bytes = (size_t)(a > b ? a : b) * o->elem;
        st = make_ffts(o, err, len);
        if (st)
            break;
        if (tide_ooc_device_bytes(o) <= budget)
            break;
        free_ffts(o);
        o->step[0] /= 2;
        o->step[1] /= 2;
    }
    for (int d = 0; d < 2 && !st; d++)
        o->nchunks[d] = (o->thick[d] + o->step[d] - 1) / o->step[d];
    if (!st)
        st = tide_pipeline_create(o->buf_bytes, nbufs(o), NSLOTS, 0, &o->pipe, err, len);
    for (int s = 0; s < NSLOTS && !st; s++) {
        st = tide_gpu_malloc(o->work_bytes, &o->work[s]);
        if (st)
            snprintf(err, len, "cannot allocate a cuFFT work area: %s", tide_gpu_last_error());
        /* every transform of slot s runs on its stream (chunks i % NSLOTS == s), in its area */
        for (int d = 0; d < 2 && !st; d++)
            for (int g = 0; g < 2 && !st; g++)
                for (int k = 0; k < o->fft[d][s][g].n && !st; k++)
                    if (tide_gpu_fft_bind(o->fft[d][s][g].f[k], o->work[s],
                                          tide_pipeline_stream(o->pipe, s)))
                        st = TIDE_ERR_BACKEND, snprintf(err, len, "cannot bind a cuFFT plan "
                                                        "to its stream");
    }
    /* W holds a complex y-slab (or, transposed backward, x-slab; one rank with a real
     * transform: the whole complex grid); S all this rank sends in a pass. */
    size_t xb = (size_t)tide_box_count(&o->slab[0][o->me]) * o->elem;
    size_t yb = (size_t)tide_box_count(&o->slab[1][o->me]) * o->elem;
    if (!st && (o->P > 1 || r2c)) {
        int reverse;
        o->wfields = field_order(o, -1, &reverse); /* the same both ways */
        o->wbytes = transposed && xb > yb ? xb : yb;
        o->sbytes = o->nccl || o->P == 1 ? 0 : xb > yb ? xb : yb;
        if (tide_gpu_host_alloc(o->wbytes * (size_t)o->wfields, &o->W) ||
            (o->sbytes && tide_gpu_host_alloc(o->sbytes, &o->S)))
            st = TIDE_ERR_NOMEM, snprintf(err, len, "cannot allocate %zu bytes of pinned host "
                                          "memory for the streamed transform",
                                          o->wbytes * (size_t)o->wfields + o->sbytes);
    }
    if (!st && o->P > 1 && !o->nccl) {
        o->req = malloc(2 * (size_t)o->P * sizeof *o->req);
        o->types = malloc(2 * (size_t)o->P * sizeof *o->types);
        if (!o->req || !o->types)
            st = TIDE_ERR_NOMEM, snprintf(err, len, "out of memory");
        else if (MPI_Type_contiguous((int)o->elem, MPI_BYTE, &o->etype) ||
                 MPI_Type_commit(&o->etype))
            st = TIDE_ERR_MPI, snprintf(err, len, "cannot make an MPI element type");
    }
    if (st) {
        tide_ooc_destroy(o);
        return st;
    }
    *out = o;
    return TIDE_SUCCESS;
}

void tide_ooc_shape(const tide_ooc *o, int *chunks, int *slots, size_t *device_bytes,
                    size_t *pinned_bytes)
{
    *chunks = o->nchunks[0] > o->nchunks[1] ? o->nchunks[0] : o->nchunks[1];
    *slots = NSLOTS;
    *device_bytes = tide_ooc_device_bytes(o);
    *pinned_bytes = o->wbytes * (size_t)o->wfields + o->sbytes +
                    tide_pipeline_pinned_bytes(o->pipe);
}

/* Run the pass over d from src to dst (laid out as this rank's slab `to`); moves: dst is the
 * other slab layout, and the pass exchanges. After a failure (st) it still exchanges. */
static int pass(tide_ooc *o, int d, const void *src, void *dst, int to, int scaled, int st,
                char *err, size_t len)
{
    const pass_ffts *pf = &o->fft[d][0][o->sign > 0];
    o->d = d;
    o->src = src;
    o->dst = dst;
    o->zsrc = pf->real_in ? o->n[2] : o->zc;
    o->zdst = pf->real_out ? o->n[2] : o->zc;
    o->dl = zcut(o->slab[to][o->me], o->zdst);
    o->moves = to != d && o->P > 1;
    o->scaled = scaled;
    for (int q = 0; q < o->P; q++) { /* the send blocks of this pass in S */
        tide_box r;
        o->soff[q + 1] = o->soff[q] + (q == o->me ? 0 : (size_t)block(o, d, q, &r));
    }
    tide_pipeline_job job = {.nchunks = o->nchunks[d], .elem = o->elem, .batch = 1,
                             .max_up = 1, .max_down = o->P, .describe = describe, .work = work,
                             .user = o, .pageable = TIDE_PAGEABLE_STAGE};
    /* After a failure (st, or this pass's) keep going, so that the peers' NCCL groups and
     * messages still match; err keeps the first failure's reason. */
    int rc = tide_pipeline_run(o->pipe, &job, st ? o->why : err, st ? sizeof o->why : len);
    tide_pipeline_stats ps;
    int stats = !rc && tide_pipeline_last_stats(o->pipe, &ps) == 0;
    st = st ? st : rc;
    double t = MPI_Wtime();
    if (o->moves && !o->nccl) {
        int mc = mpi_exchange(o, st ? o->why : err, st ? sizeof o->why : len);
        st = st ? st : mc;
    }
    t = MPI_Wtime() - t;
    if (stats && o->ctx->log_level >= TIDE_LOG_DEBUG)
        tide_log(o->ctx, TIDE_LOG_DEBUG, "streamed pass over %c: %d chunks, %.3g ms; summed "
                 "over chunks: uploads %.3g ms, work %.3g ms, downloads %.3g ms; %.3g GB up, "
                 "%.3g GB down; MPI exchange %.3g ms", "xy"[d], job.nchunks, ps.total * 1e3,
                 ps.upload * 1e3, ps.work * 1e3, ps.download * 1e3, ps.bytes_up / 1e9,
                 ps.bytes_down / 1e9, t * 1e3);
    return st;
}

/* Where a field goes between the passes: its place w in W, else the output (at byte off). */
static void *mid(const tide_ooc *o, int w, void *out, size_t off)
{
    return o->W ? (char *)o->W + (size_t)w * o->wbytes : (char *)out + off;
}

int tide_ooc_execute(tide_ooc *o, int sign, double scale, const void *in, void *out, char *err,
                     size_t len)
{
    o->sign = sign;
    o->scale = scale;
    /* Fields f at f * (one field's bytes) on each side, wf at a time through W: the first pass
     * of each into W (one field's worth apart), then the second of each. The first pass chunks
     * the input's slabs: x-planes, or y-rows of a transposed spectrum going back; with one
     * rank and a complex transform there is no W and it writes the output directly. */
    int reverse, wf = field_order(o, sign, &reverse), st = TIDE_SUCCESS;
    int first = o->transposed && sign > 0 ? 1 : 0, second = 1 - first;
    int moved = o->P > 1 ? second : first, to = o->P > 1 && !o->transposed ? first : second;
    size_t cin, cout;
    field_bytes(o, o->me, sign, &cin, &cout);
    for (int f0 = 0; f0 < o->batch; f0 += wf) {
        for (int k = f0; k < f0 + wf; k++) {
            int f = reverse ? o->batch - 1 - k : k;
            st = pass(o, first, (const char *)in + f * cin, mid(o, k - f0, out, f * cout),
                      moved, 0, st, err, len);
        }
        for (int k = f0; k < f0 + wf; k++) {
            int f = reverse ? o->batch - 1 - k : k;
            st = pass(o, second, mid(o, k - f0, out, f * cout), (char *)out + f * cout, to, 1,
                      st, err, len);
        }
    }
    return st;
}

#else /* no CUDA: fft.c never asks for one (streams_ok needs a CUDA context) */

int tide_ooc_create(const tide_context *ctx, const int n[3], int dbl, int r2c, int batch,
                    int transposed, void *nccl, size_t budget, tide_ooc **out, char *err,
                    size_t len)
{
    (void)ctx, (void)n, (void)dbl, (void)r2c, (void)batch, (void)transposed, (void)nccl;
    (void)budget;
    *out = NULL;
    snprintf(err, len, "this build has no CUDA");
    return TIDE_ERR_UNSUPPORTED;
}

void tide_ooc_destroy(tide_ooc *o) { (void)o; }

void tide_ooc_shape(const tide_ooc *o, int *chunks, int *slots, size_t *device_bytes,
                    size_t *pinned_bytes)
{
    (void)o;
    *chunks = *slots = 0;
    *device_bytes = *pinned_bytes = 0;
}

int tide_ooc_execute(tide_ooc *o, int sign, double scale, const void *in, void *out, char *err,
                     size_t len)
{
    (void)o, (void)sign, (void)scale, (void)in, (void)out;
    snprintf(err, len, "this build has no CUDA");
    return TIDE_ERR_UNSUPPORTED;
}

#endif
