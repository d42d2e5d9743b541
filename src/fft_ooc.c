/*
 * fft_ooc.c: distributed 3D C2C FFTs of host arrays larger than the device budget, streamed
 * through the GPU by the out-of-card pipeline engine (gpu/pipeline.h): the slab algorithm of
 * seed 003, with the exchange done GPU to GPU inside the pipeline.
 *
 * Ranks hold x-slabs (C order) of the input and of the output. Two passes, each one pipeline
 * job, each touching host memory only through PCIe transfers:
 *   A. chunks of k x-planes: upload, 2D FFTs over (y,z), pack each peer's y-range in the
 *      receiver's order, grouped NCCL send/recv, download what arrives (and this rank's own
 *      y-range, straight from the chunk) into a pinned host y-slab W;
 *   B. chunks of m y-rows of W: upload, 1D FFTs over x, scale, pack each peer's x-range, NCCL,
 *      download into the output x-slab.
 * One rank needs no W and no exchange: pass A writes the output, pass B transforms it in
 * place. Chunk i of every rank runs together (the same chunk rule everywhere; ranks with fewer
 * planes have empty chunks), so the NCCL groups match. Both directions use the same passes
 * (the DFT is separable), only the sign differs.
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

enum { NSLOTS = 3 };

struct tide_ooc {
    const tide_context *ctx; /* for logging */
    int P, me, n[3], dbl;
    size_t elem;
    tide_box *xs, *ys;    /* every rank's x-slab and y-slab */
    int xmax, ymax;       /* the thickest x-slab and y-slab */
    int k, m;             /* planes per pass-A chunk, rows per pass-B chunk */
    int nA, nB;           /* chunks per pass (the most any rank has) */
    tide_pipeline *pipe;
    size_t buf_bytes;
    tide_gpu_fft *fa[NSLOTS][2], *fb[NSLOTS][2]; /* per slot, [0] forward, [1] backward */
    size_t work_bytes;
    void *work[NSLOTS];
    void *W;              /* pinned host y-slab (P > 1) */
    size_t wbytes;
    void *nccl;
    /* the run in progress */
    int sign, pass;
    double scale;
    const void *in;
    void *out;
    char why[TIDE_MSG_LEN];
};

/* This rank's (or rank r's) chunk i of a pass: [a, b) along x (pass A) or y (pass B). */
static void chunk_range(const tide_ooc *o, int pass, int r, int i, int *a, int *b)
{
    const tide_box *s = pass == 0 ? &o->xs[r] : &o->ys[r];
    int d = pass == 0 ? 0 : 1, step = pass == 0 ? o->k : o->m;
    long lo = s->lo[d] + (long)i * step, hi = lo + step;
    if (lo > s->hi[d])
        lo = s->hi[d];
    if (hi > s->hi[d])
        hi = s->hi[d];
    *a = (int)lo;
    *b = (int)hi;
}

static tide_box mkbox(int x0, int x1, int y0, int y1, int z0, int z1)
{
    tide_box b = {{x0, y0, z0}, {x1, y1, z1}, {0, 1, 2}};
    return b;
}

/* The device layout of a chunk in buffer 0: the full chunk shape from its first point, so one
 * cuFFT plan serves every chunk (a short last chunk transforms some unused planes too). */
static tide_box chunk_box(const tide_ooc *o, int pass, int a)
{
    return pass == 0 ? mkbox(a, a + o->k, 0, o->n[1], 0, o->n[2])
                     : mkbox(0, o->n[0], a, a + o->m, 0, o->n[2]);
}

/* What chunk i sends to peer q and receives from peer p (points of one region each). */
static tide_box send_region(const tide_ooc *o, int pass, int i, int q)
{
    int a, b;
    chunk_range(o, pass, o->me, i, &a, &b);
    return pass == 0 ? mkbox(a, b, o->ys[q].lo[1], o->ys[q].hi[1], 0, o->n[2])
                     : mkbox(o->xs[q].lo[0], o->xs[q].hi[0], a, b, 0, o->n[2]);
}

static tide_box recv_region(const tide_ooc *o, int pass, int i, int p)
{
    int a, b;
    chunk_range(o, pass, p, i, &a, &b);
    const tide_box *me = pass == 0 ? &o->ys[o->me] : &o->xs[o->me];
    return pass == 0 ? mkbox(a, b, me->lo[1], me->hi[1], 0, o->n[2])
                     : mkbox(me->lo[0], me->hi[0], a, b, 0, o->n[2]);
}

/* The host array a pass writes, and its layout. */
static void *pass_dst(const tide_ooc *o, int pass, tide_box *layout)
{
    if (pass == 0 && o->P > 1) {
        *layout = o->ys[o->me];
        return o->W;
    }
    *layout = o->xs[o->me];
    return o->out;
}

static int describe(void *user, int i, tide_xfer *up, int *nup, tide_xfer *down, int *ndown)
{
    tide_ooc *o = user;
    int pass = o->pass, a, b;
    chunk_range(o, pass, o->me, i, &a, &b);
    tide_box cbox = chunk_box(o, pass, a), dl;
    void *dst = pass_dst(o, pass, &dl);
    *nup = *ndown = 0;
    if (b > a) {
        /* Upload: the chunk's region of the pass's source. */
        tide_box reg = pass == 0 ? mkbox(a, b, 0, o->n[1], 0, o->n[2])
                                 : mkbox(0, o->n[0], a, b, 0, o->n[2]);
        tide_box sl;
        void *src = pass == 0 ? (void *)o->in : pass_dst(o, 0, &sl);
        up[(*nup)++] = (tide_xfer){src, pass == 0 ? o->xs[o->me] : sl, reg, 0, 0, cbox};
        /* Download of this rank's own part, straight from the chunk. */
        tide_box own = send_region(o, pass, i, o->me);
        if (tide_box_count(&own) > 0)
            down[(*ndown)++] = (tide_xfer){dst, dl, own, 0, 0, cbox};
    }
    /* Downloads of what the peers sent, from buffer 2. */
    size_t off = 0;
    for (int p = 0; p < o->P; p++) {
        if (p == o->me)
            continue;
        tide_box r = recv_region(o, pass, i, p);
        long long cnt = tide_box_count(&r);
        if (cnt > 0) {
            down[(*ndown)++] = (tide_xfer){dst, dl, r, 2, off * o->elem, r};
            off += (size_t)cnt;
        }
    }
    return 0;
}

static int work(void *user, int i, void *const *buf, void *stream)
{
    tide_ooc *o = user;
    int pass = o->pass, s = i % NSLOTS, a, b, st = 0;
    chunk_range(o, pass, o->me, i, &a, &b);
    tide_box cbox = chunk_box(o, pass, a);
    if (b > a) {
        tide_gpu_fft *f = pass == 0 ? o->fa[s][o->sign > 0] : o->fb[s][o->sign > 0];
        st = tide_gpu_fft_bind(f, o->work[s], stream); /* the slot's stream and work area */
        if (!st)
            st = tide_gpu_fft_execute(f, buf[0], buf[0]);
        if (!st && pass == 1 && o->scale != 1.0)
            st = tide_gpu_scale(o->dbl, buf[0], tide_box_count(&cbox) * 2, o->scale, stream);
    }
    if (st || o->P == 1)
        return st;
    /* Pack every peer's part in its order (C order: the region as a dense box), then one
     * NCCL group for the chunk; every rank issues chunk i's group in the same place. */
    size_t soff = 0, roff = 0;
    for (int q = 0; q < o->P && !st; q++) {
        tide_box r = send_region(o, pass, i, q);
        long long cnt = tide_box_count(&r);
        if (q == o->me || cnt == 0)
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
        tide_box sr = send_region(o, pass, i, q), rr = recv_region(o, pass, i, q);
        long long sc = tide_box_count(&sr), rc = tide_box_count(&rr);
        if (rc > 0)
            st = tide_nccl_recv(o->nccl, (char *)buf[2] + roff * o->elem, (size_t)rc * o->elem,
                                q, stream);
        if (!st && sc > 0)
            st = tide_nccl_send(o->nccl, (char *)buf[1] + soff * o->elem, (size_t)sc * o->elem,
                                q, stream);
        soff += (size_t)(sc > 0 ? sc : 0);
        roff += (size_t)(rc > 0 ? rc : 0);
    }
    int end = st ? 0 : tide_nccl_group_end();
    return st ? st : end;
}

void tide_ooc_destroy(tide_ooc *o)
{
    if (!o)
        return;
    for (int s = 0; s < NSLOTS; s++) {
        for (int d = 0; d < 2; d++) {
            tide_gpu_fft_destroy(o->fa[s][d]);
            tide_gpu_fft_destroy(o->fb[s][d]);
        }
        tide_gpu_free(o->work[s]);
    }
    tide_pipeline_destroy(o->pipe);
    if (o->W)
        tide_gpu_host_free(o->W);
    free(o->xs);
    free(o->ys);
    free(o);
}

/* cuFFT plans of both passes for every slot at the current k and m; their work size. */
static int make_ffts(tide_ooc *o, char *err, size_t len)
{
    o->work_bytes = 0;
    for (int s = 0; s < NSLOTS; s++)
        for (int d = 0; d < 2; d++) {
            tide_box ba = chunk_box(o, 0, 0), bb = chunk_box(o, 1, 0);
            tide_gpu_fft_desc fa = {.dbl = o->dbl, .kind = 0, .sign = d ? 1 : -1, .ibox = &ba,
                                    .obox = &ba, .dims = {1, 2}, .ndims = 2, .batch = 1};
            tide_gpu_fft_desc fb = {.dbl = o->dbl, .kind = 0, .sign = d ? 1 : -1, .ibox = &bb,
                                    .obox = &bb, .dims = {0}, .ndims = 1, .batch = 1};
            size_t wa = 0, wb = 0;
            int st = tide_gpu_fft_create(&fa, &o->fa[s][d], &wa, err, len);
            if (!st)
                st = tide_gpu_fft_create(&fb, &o->fb[s][d], &wb, err, len);
            if (st)
                return st;
            o->work_bytes = wa > o->work_bytes ? wa : o->work_bytes;
            o->work_bytes = wb > o->work_bytes ? wb : o->work_bytes;
        }
    return 0;
}

static void free_ffts(tide_ooc *o)
{
    for (int s = 0; s < NSLOTS; s++)
        for (int d = 0; d < 2; d++) {
            tide_gpu_fft_destroy(o->fa[s][d]);
            tide_gpu_fft_destroy(o->fb[s][d]);
            o->fa[s][d] = o->fb[s][d] = NULL;
        }
}

/* Bytes of each slot buffer at the current k and m: a chunk, or all a chunk sends or
 * receives. */
static size_t slot_buffer_bytes(const tide_ooc *o)
{
    long long xmax = o->xmax, ymax = o->ymax;
    long long a = (long long)o->k * o->n[1] * o->n[2], b = (long long)o->n[0] * o->m * o->n[2];
    long long ra = o->P * (long long)o->k * ymax * o->n[2];
    long long rb = o->P * (long long)o->m * xmax * o->n[2];
    long long most = a > b ? a : b;
    most = ra > most ? ra : most;
    most = rb > most ? rb : most;
    return (size_t)most * o->elem;
}

size_t tide_ooc_device_bytes(const tide_ooc *o)
{
    int nbufs = o->P > 1 ? 3 : 1;
    return NSLOTS * (nbufs * o->buf_bytes + o->work_bytes);
}

int tide_ooc_create(const tide_context *ctx, const int n[3], int dbl, void *nccl, size_t budget,
                    tide_ooc **out, char *err, size_t len)
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
    o->elem = dbl ? 16 : 8;
    o->nccl = nccl;
    o->xs = calloc((size_t)o->P, sizeof(tide_box));
    o->ys = calloc((size_t)o->P, sizeof(tide_box));
    if (!o->xs || !o->ys) {
        tide_ooc_destroy(o);
        return snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM;
    }
    for (int r = 0; r < o->P; r++) {
        tide_box_slab(n, 0, o->P, r, &o->xs[r]);
        tide_box_slab(n, 1, o->P, r, &o->ys[r]);
        int dx = o->xs[r].hi[0] - o->xs[r].lo[0], dy = o->ys[r].hi[1] - o->ys[r].lo[1];
        o->xmax = dx > o->xmax ? dx : o->xmax;
        o->ymax = dy > o->ymax ? dy : o->ymax;
    }
    /* Chunk sizes: three slots of (buffers + a cuFFT work area about a chunk's size) within
     * the budget; halved until the plans' real work areas fit too. */
    int nbufs = o->P > 1 ? 3 : 1;
    int xmax = o->xmax, ymax = o->ymax;
    double target = (double)budget / (NSLOTS * (nbufs + 1));
    double plane = (double)n[1] * n[2] * o->elem, row = (double)n[0] * n[2] * o->elem;
    o->k = target / plane < xmax ? (int)(target / plane) : xmax;
    o->m = target / row < ymax ? (int)(target / row) : ymax;
    int st = TIDE_SUCCESS;
    for (;;) {
        if (o->k < 1 || o->m < 1) {
            snprintf(err, len, "a device budget of %.3g GB cannot hold three pipeline slots of "
                     "one %dx%d plane (%.3g GB each) and their cuFFT work areas",
                     budget / 1e9, n[1], n[2], plane / 1e9);
            st = TIDE_ERR_NOMEM;
            break;
        }
        o->buf_bytes = slot_buffer_bytes(o);
        st = make_ffts(o, err, len);
        if (st)
            break;
        if (tide_ooc_device_bytes(o) <= budget)
            break;
        free_ffts(o);
        o->k /= 2;
        o->m /= 2;
    }
    if (!st) {
        o->nA = (xmax + o->k - 1) / o->k;
        o->nB = (ymax + o->m - 1) / o->m;
        st = tide_pipeline_create(o->buf_bytes, nbufs, NSLOTS, 0, &o->pipe, err, len);
    }
    for (int s = 0; s < NSLOTS && !st; s++) {
        st = tide_gpu_malloc(o->work_bytes, &o->work[s]);
        if (st)
            snprintf(err, len, "cannot allocate a cuFFT work area: %s", tide_gpu_last_error());
    }
    if (!st && o->P > 1) {
        o->wbytes = (size_t)tide_box_count(&o->ys[o->me]) * o->elem;
        if (tide_gpu_host_alloc(o->wbytes, &o->W))
            st = TIDE_ERR_NOMEM, snprintf(err, len, "cannot allocate %zu bytes of pinned host "
                                          "memory for the y-slab", o->wbytes);
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
    *chunks = o->nA > o->nB ? o->nA : o->nB;
    *slots = NSLOTS;
    *device_bytes = tide_ooc_device_bytes(o);
    *pinned_bytes = o->wbytes + tide_pipeline_pinned_bytes(o->pipe);
}

int tide_ooc_execute(tide_ooc *o, int sign, double scale, const void *in, void *out, char *err,
                     size_t len)
{
    o->sign = sign;
    o->scale = scale;
    o->in = in;
    o->out = out;
    int st = TIDE_SUCCESS;
    for (int pass = 0; pass < 2; pass++) {
        o->pass = pass;
        tide_pipeline_job job = {.nchunks = pass == 0 ? o->nA : o->nB, .elem = o->elem,
                                 .batch = 1, .max_up = 1, .max_down = o->P, .describe = describe,
                                 .work = work, .user = o, .pageable = TIDE_PAGEABLE_STAGE};
        /* Keep going after a failure so the NCCL groups of the peers still match. */
        int rc = tide_pipeline_run(o->pipe, &job, st ? o->why : err, st ? sizeof o->why : len);
        st = st ? st : rc;
        tide_pipeline_stats ps;
        if (!rc && o->ctx->log_level >= TIDE_LOG_DEBUG &&
            tide_pipeline_last_stats(o->pipe, &ps) == 0)
            tide_log(o->ctx, TIDE_LOG_DEBUG, "streamed pass %c: %d chunks, %.3g ms; summed over "
                     "chunks: uploads %.3g ms, work %.3g ms, downloads %.3g ms; %.3g GB up, "
                     "%.3g GB down", pass ? 'B' : 'A', job.nchunks, ps.total * 1e3,
                     ps.upload * 1e3, ps.work * 1e3, ps.download * 1e3, ps.bytes_up / 1e9,
                     ps.bytes_down / 1e9);
    }
    return st;
}

#else /* no CUDA: fft.c never asks for one (streams_ok needs a CUDA context) */

int tide_ooc_create(const tide_context *ctx, const int n[3], int dbl, void *nccl, size_t budget,
                    tide_ooc **out, char *err, size_t len)
{
    (void)ctx, (void)n, (void)dbl, (void)nccl, (void)budget;
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
