/*
 * stream.c: the pass runner of streamed programs (see stream.h).
 *
 * Chunk i of a pass on this rank is the planes [lo + i * step, + step) of its box along the
 * pass's dimension d, the same rule on every rank, so a moving pass's per-chunk NCCL groups
 * pair up (ranks with fewer planes run empty chunks). A chunk's device buffers, per slot:
 *   0: the chunk, uploaded, transformed in place by the pass's ops;
 *   1, 2 (moving passes over NCCL): the parts for the other ranks, packed in their order; the
 *      parts received from them.
 * Where a chunk's results go: this rank's own points straight into the destination; other
 * ranks' points into their per-peer send blocks (MPI after the pass) or over NCCL (buffer 2,
 * then into the destination). With the data resident on the device (one rank), the first pass
 * writes its chunks into a device array W with a device copy instead of a download, and the
 * second copies its chunks out of W instead of uploading them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tide_config.h"
#include "stream.h"
#include "chunked.h"
#include "region.h"
#if TIDE_HAVE_CUDA
#include "gpu.h"
#include "pipeline.h"

struct tide_stream {
    tide_stream_desc d;
    tide_box *lay[2];
    const tide_context *ctx;
    int P, me;
    int step[3];             /* chunk thickness along each dimension that passes cut */
    int nchunks[2][TIDE_STREAM_PASSES];
    tide_chunked *x[2][TIDE_STREAM_PASSES];     /* the moving passes' exchanges */
    tide_op ops[2][TIDE_STREAM_PASSES][TIDE_STREAM_SLOTS][TIDE_PASS_OPS];
    int nops[2][TIDE_STREAM_PASSES];
    tide_env slot[TIDE_STREAM_SLOTS];           /* each slot's stream and FFT work area */
    size_t work_bytes;
    size_t buf_bytes[3];
    int nbufs;
    tide_pipeline *pipe;
    void *W, *S;             /* between passes (host, or device when resident); MPI blocks */
    size_t wbytes, sbytes;
    int wfields, resident;
    int overlap;             /* resident with a batch: see overlapped() */
};

/* What one pass of one execution works on (the job's user data; the plan stays unchanged). */
typedef struct {
    const tide_stream *s;
    int dir, k;
    const tide_pass_desc *pd;
    const tide_chunked *x;   /* NULL: the pass does not move the data */
    const void *src;
    void *dst;
    int src_dev, dst_dev;    /* src or dst is W on the device */
    tide_box sl, dl;         /* this rank's layouts of src and dst */
    int buf;                 /* the slot buffer its chunks go through */
} pass_run;

static tide_box zcut(tide_box b, int z)
{
    b.hi[2] = z;
    return b;
}

/* Rank r's chunk i of pass k of direction dir: [*a, *b) along the pass's dimension. */
static void range(const tide_stream *s, int dir, int k, int r, int i, int *a, int *b)
{
    const tide_pass_desc *pd = &s->d.pass[dir][k];
    tide_chunk_range(&s->lay[pd->from][r], pd->d, s->step[pd->d], i, a, b);
}

/* The device layout of this rank's chunk starting at a: step planes from a, whatever the
 * chunk's length, so one set of ops serves every chunk. */
static tide_box chunk_box(const tide_stream *s, const tide_pass_desc *pd, int a)
{
    tide_box c = s->lay[pd->from][s->me];
    c.lo[pd->d] = a;
    c.hi[pd->d] = a + s->step[pd->d];
    return c;
}

/* The points [a, b) of the chunk, dimension 2 cut to z. */
static tide_box chunk_region(const tide_stream *s, const tide_pass_desc *pd, int a, int b, int z)
{
    tide_box c = zcut(s->lay[pd->from][s->me], z);
    c.lo[pd->d] = a;
    c.hi[pd->d] = b;
    return c;
}

/* Appends part pr's transfers of chunk i (see the top of the file). */
static void describe_part(const pass_run *pr, int i, tide_xfer *up, int *nup, tide_xfer *down,
                          int *ndown)
{
    const tide_stream *s = pr->s;
    const tide_pass_desc *pd = pr->pd;
    int a, b, cb = pr->buf;
    range(s, pr->dir, pr->k, s->me, i, &a, &b);
    tide_box cbox = chunk_box(s, pd, a), r, blk;
    if (b > a && !pr->src_dev)
        up[(*nup)++] = (tide_xfer){(void *)pr->src, pr->sl, chunk_region(s, pd, a, b, pd->zin),
                                   cb, 0, cbox};
    if (b > a && !pr->dst_dev && !pr->x)
        down[(*ndown)++] = (tide_xfer){pr->dst, pr->dl, chunk_region(s, pd, a, b, pd->zout), cb,
                                       0, cbox};
    if (!pr->x)
        return;
    int nccl = s->d.env->nccl != NULL;
    for (int q = 0; q < s->P && b > a; q++) {
        size_t off;
        if (tide_chunked_send(pr->x, i, q, &r) == 0)
            continue;
        if (q == s->me)
            down[(*ndown)++] = (tide_xfer){pr->dst, pr->dl, r, cb, 0, cbox};
        else if (!nccl && tide_chunked_block(pr->x, q, &blk, &off) > 0)
            down[(*ndown)++] = (tide_xfer){(char *)s->S + off * s->d.elem, blk, r, cb, 0, cbox};
    }
    size_t off = 0; /* NCCL: what the peers sent, from buffer 2 */
    for (int p = 0; p < s->P && nccl; p++) {
        long long cnt = p == s->me ? 0 : tide_chunked_recv(pr->x, i, p, &r);
        if (cnt > 0) {
            down[(*ndown)++] = (tide_xfer){pr->dst, pr->dl, r, 2, off * s->d.elem, r};
            off += (size_t)cnt;
        }
    }
}

/* Enqueues part pr's work on chunk i in its chunk buffer. */
static int work_part(const pass_run *pr, int i, void *const *buf, void *stream)
{
    const tide_stream *s = pr->s;
    const tide_pass_desc *pd = pr->pd;
    int a, b, st = 0, slot = i % TIDE_STREAM_SLOTS;
    range(s, pr->dir, pr->k, s->me, i, &a, &b);
    tide_box cbox = chunk_box(s, pd, a);
    size_t elem = s->d.elem;
    void *chunk = buf[pr->buf];
    if (b > a && pr->src_dev) {
        tide_box r = chunk_region(s, pd, a, b, pd->zin);
        st = tide_gpu_copy_region_async(elem, 1, &r, pr->src, &pr->sl, chunk, &cbox, stream);
    }
    const tide_op *ops = s->ops[pr->dir][pr->k][slot];
    for (int k = 0; k < s->nops[pr->dir][pr->k] && b > a && !st; k++)
        st = ops[k].cls->execute(&ops[k], &s->slot[slot], chunk, chunk);
    if (b > a && !st && pr->dst_dev) {
        tide_box r = chunk_region(s, pd, a, b, pd->zout);
        st = tide_gpu_copy_region_async(elem, 1, &r, chunk, &cbox, pr->dst, &pr->dl, stream);
    }
    if (st || !pr->x || !s->d.env->nccl)
        return st;
    return tide_chunked_nccl(pr->x, i, chunk, &cbox, buf[1], buf[2], s->d.env->nccl, stream);
}

static int chunks(const pass_run *pr) { return pr->s->nchunks[pr->dir][pr->k]; }

/* One pipeline job runs one pass, or two at once (parts): chunk i of each part that has one. */
typedef struct {
    const pass_run *part;
    int nparts;
} job_parts;

static int describe(void *user, int i, tide_xfer *up, int *nup, tide_xfer *down, int *ndown)
{
    const job_parts *j = user;
    *nup = *ndown = 0;
    for (int p = 0; p < j->nparts; p++)
        if (i < chunks(&j->part[p]))
            describe_part(&j->part[p], i, up, nup, down, ndown);
    return 0;
}

static int work(void *user, int i, void *const *buf, void *stream)
{
    const job_parts *j = user;
    int st = 0;
    for (int p = 0; p < j->nparts && !st; p++)
        if (i < chunks(&j->part[p]))
            st = work_part(&j->part[p], i, buf, stream);
    return st;
}

/* Pass k of direction dir from src to dst, its chunks in buffer buf. */
static pass_run part_of(const tide_stream *s, int dir, int k, const void *src, void *dst,
                        int buf)
{
    const tide_pass_desc *pd = &s->d.pass[dir][k];
    return (pass_run){s, dir, k, pd, s->x[dir][k], src, dst, s->resident && k > 0,
                      s->resident && k == 0, zcut(s->lay[pd->from][s->me], pd->zin),
                      zcut(s->lay[pd->to][s->me], pd->zout), buf};
}

/* Runs the parts as one job, then a moving part's MPI exchange. After a failure (st) it still
 * exchanges. */
static int run_parts(const tide_stream *s, const pass_run *part, int nparts, int st, char *err,
                     size_t len)
{
    job_parts j = {part, nparts};
    int n = 0;
    for (int p = 0; p < nparts; p++)
        n = chunks(&part[p]) > n ? chunks(&part[p]) : n;
    tide_pipeline_job job = {.nchunks = n, .elem = s->d.elem, .batch = 1,
                             .max_up = nparts, .max_down = s->P + nparts, .describe = describe,
                             .work = work, .user = &j, .pageable = TIDE_PAGEABLE_STAGE};
    char why[TIDE_MSG_LEN];
    /* After a failure keep going, so that the peers' NCCL groups and messages still match;
     * err keeps the first failure's reason. */
    int rc = tide_pipeline_run(s->pipe, &job, st ? why : err, st ? sizeof why : len);
    tide_pipeline_stats ps;
    int stats = !rc && tide_pipeline_last_stats(s->pipe, &ps) == 0;
    st = st ? st : rc;
    double t = MPI_Wtime();
    for (int p = 0; p < nparts; p++)
        if (part[p].x && !s->d.env->nccl) {
            int mc = tide_chunked_mpi(part[p].x, s->S, part[p].dst, &part[p].dl,
                                      st ? why : err, st ? sizeof why : len);
            st = st ? st : mc;
        }
    t = MPI_Wtime() - t;
    if (stats && s->ctx->log_level >= TIDE_LOG_DEBUG)
        tide_log(s->ctx, TIDE_LOG_DEBUG, "streamed pass%s over %c%s: %d chunks, %.3g ms; summed "
                 "over chunks: uploads %.3g ms, work %.3g ms, downloads %.3g ms; %.3g GB up, "
                 "%.3g GB down; MPI exchange %.3g ms", nparts > 1 ? "es" : "",
                 "xyz"[part[0].pd->d], nparts > 1 ? (part[1].pd->d ? " and y" : " and x") : "",
                 job.nchunks, ps.total * 1e3, ps.upload * 1e3, ps.work * 1e3,
                 ps.download * 1e3, ps.bytes_up / 1e9, ps.bytes_down / 1e9, t * 1e3);
    return st;
}

static int pass(const tide_stream *s, int dir, int k, const void *src, void *dst, int st,
                char *err, size_t len)
{
    pass_run pr = part_of(s, dir, k, src, dst, 0);
    return run_parts(s, &pr, 1, st, err, len);
}

/* ---- the fields ------------------------------------------------------------------------ */

/* Bytes of one field of direction dir's input and output on rank r. */
static void field_bytes(const tide_stream *s, int r, int dir, size_t *in, size_t *out)
{
    const tide_pass_desc *f = &s->d.pass[dir][0], *l = &s->d.pass[dir][TIDE_STREAM_PASSES - 1];
    tide_box bi = zcut(s->lay[f->from][r], f->zin), bo = zcut(s->lay[l->to][r], l->zout);
    *in = (size_t)tide_box_count(&bi) * s->d.elem;
    *out = (size_t)tide_box_count(&bo) * s->d.elem;
}

/* The order fields go in, the same on every rank since their exchanges pair up: a field is
 * read whole (into W) before its output is written, so in place, fields go backwards when
 * the output's fields are longer (*reverse) and forwards when shorter. Where ranks differ
 * (transposed slabs of uneven thickness) no order suits all: then W holds every field, all
 * are read before any is written, and the function returns the batch; else 1. */
static int field_order(const tide_stream *s, int dir, int *reverse)
{
    int longer = 0, shorter = 0;
    for (int r = 0; r < s->P; r++) {
        size_t in, out;
        field_bytes(s, r, dir, &in, &out);
        longer |= out > in;
        shorter |= out < in;
    }
    *reverse = longer;
    return longer && shorter ? s->d.batch : 1;
}

/* Where field slot w waits between the passes: W, else the output (at byte off). */
static void *mid(const tide_stream *s, int w, void *out, size_t off)
{
    return s->W ? (char *)s->W + (size_t)w * s->wbytes : (char *)out + off;
}

/* Resident with a batch: the second pass of one field runs in one job with the first pass of
 * the next (its chunks in slot buffer 1), so one field's downloads overlap the next one's
 * uploads, in both PCIe directions at once. W holds two fields, used in turn. Within a job the
 * output written and the input read are different fields, apart even in place (field_order's
 * direction). */
static int overlapped(const tide_stream *s, int dir, int reverse, const char *in, char *out,
                      char *err, size_t len)
{
    int st = TIDE_SUCCESS, B = s->d.batch;
    size_t cin, cout;
    field_bytes(s, s->me, dir, &cin, &cout);
    for (int k = 0; k <= B; k++) {
        int f = reverse ? B - 1 - k : k, prev = reverse ? B - k : k - 1;
        char *w = (char *)s->W + (size_t)(k % 2) * s->wbytes;
        char *wprev = (char *)s->W + (size_t)((k + 1) % 2) * s->wbytes;
        pass_run part[2];
        int n = 0;
        if (k < B)
            part[n++] = part_of(s, dir, 0, in + f * cin, w, 0);
        if (k > 0)
            part[n++] = part_of(s, dir, 1, wprev, out + prev * cout, 1);
        st = run_parts(s, part, n, st, err, len);
    }
    return st;
}

int tide_stream_execute(const tide_stream *s, int dir, const void *in, void *out, char *err,
                        size_t len)
{
    /* Fields f at f * (one field's bytes) on each side, wf at a time through W: the first pass
     * of each into W, then the second of each. */
    int reverse, wf = field_order(s, dir, &reverse), st = TIDE_SUCCESS;
    size_t cin, cout;
    if (s->overlap)
        return overlapped(s, dir, reverse, in, out, err, len);
    field_bytes(s, s->me, dir, &cin, &cout);
    for (int f0 = 0; f0 < s->d.batch; f0 += wf) {
        for (int k = f0; k < f0 + wf; k++) {
            int f = reverse ? s->d.batch - 1 - k : k;
            st = pass(s, dir, 0, (const char *)in + f * cin, mid(s, k - f0, out, f * cout), st,
                      err, len);
        }
        for (int k = f0; k < f0 + wf; k++) {
            int f = reverse ? s->d.batch - 1 - k : k;
            st = pass(s, dir, 1, mid(s, k - f0, out, f * cout), (char *)out + f * cout, st, err,
                      len);
        }
    }
    return st;
}

/* ---- creation -------------------------------------------------------------------------- */

static void free_ops(tide_stream *s)
{
    for (int g = 0; g < 2; g++)
        for (int k = 0; k < TIDE_STREAM_PASSES; k++) {
            for (int sl = 0; sl < TIDE_STREAM_SLOTS; sl++)
                for (int j = 0; j < s->nops[g][k]; j++)
                    s->ops[g][k][sl][j].cls->destroy(&s->ops[g][k][sl][j], &s->slot[sl]);
            s->nops[g][k] = 0;
            tide_chunked_destroy(s->x[g][k]);
            s->x[g][k] = NULL;
        }
    memset(s->ops, 0, sizeof s->ops);
}

void tide_stream_destroy(tide_stream *s)
{
    if (!s)
        return;
    free_ops(s);
    for (int sl = 0; sl < TIDE_STREAM_SLOTS; sl++)
        tide_gpu_free(s->slot[sl].fft_work);
    tide_pipeline_destroy(s->pipe);
    if (s->resident)
        tide_gpu_free(s->W);
    else if (s->W)
        tide_gpu_host_free(s->W);
    if (s->S)
        tide_gpu_host_free(s->S);
    free(s->lay[0]);
    free(s);
}

/* The ops of every pass and slot, the moving passes' exchanges and the buffer sizes, at the
 * current chunk thicknesses. */
static int make_passes(tide_stream *s, char *err, size_t len)
{
    s->work_bytes = 0;
    memset(s->buf_bytes, 0, sizeof s->buf_bytes);
    int st = TIDE_SUCCESS;
    for (int g = 0; g < 2 && !st; g++)
        for (int k = 0; k < TIDE_STREAM_PASSES && !st; k++) {
            const tide_pass_desc *pd = &s->d.pass[g][k];
            tide_box cbox = chunk_box(s, pd, s->lay[pd->from][s->me].lo[pd->d]);
            size_t cb = (size_t)tide_box_count(&cbox) * s->d.elem;
            for (int b = 0; b <= s->overlap; b++) /* overlapped: buffer 1 holds chunks too */
                s->buf_bytes[b] = cb > s->buf_bytes[b] ? cb : s->buf_bytes[b];
            s->nchunks[g][k] = tide_chunk_count(s->lay[pd->from], s->P, pd->d, s->step[pd->d]);
            if (pd->from != pd->to && s->P > 1) {
                tide_box *A = malloc(2 * (size_t)s->P * sizeof *A);
                for (int r = 0; A && r < s->P; r++) {
                    A[r] = zcut(s->lay[pd->from][r], pd->zout);
                    A[s->P + r] = zcut(s->lay[pd->to][r], pd->zout);
                }
                st = !A ? (snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM)
                        : tide_chunked_create(s->ctx->comm, A, A + s->P, pd->d,
                                              s->step[pd->d], s->d.elem, &s->x[g][k], err, len);
                free(A);
                size_t m = st ? 0 : (size_t)tide_chunked_most(s->x[g][k]) * s->d.elem;
                for (int b = 1; b < 3; b++)
                    s->buf_bytes[b] = m > s->buf_bytes[b] ? m : s->buf_bytes[b];
            }
            for (int sl = 0; sl < TIDE_STREAM_SLOTS && !st; sl++)
                st = s->d.make_ops(s->d.user, g, k, &s->slot[sl], &cbox, s->ops[g][k][sl],
                                   &s->nops[g][k], &s->work_bytes, err, len);
        }
    for (int b = 0; b < 3; b++)
        s->buf_bytes[b] = s->buf_bytes[b] ? s->buf_bytes[b] : 1;
    return st;
}

static size_t slots_bytes(const tide_stream *s)
{
    size_t b = s->work_bytes;
    for (int k = 0; k < s->nbufs; k++)
        b += s->buf_bytes[k];
    return TIDE_STREAM_SLOTS * b;
}

/* Chunks per pass that let the transfers overlap the work (the first upload and the last
 * download are all that is left exposed), unless that makes chunks smaller than MIN_CHUNK bytes,
 * whose fixed per-chunk costs would show. */
enum { CHUNKS = 32 };
#define MIN_CHUNK ((double)(16 << 20))

/* Chunk thicknesses for a budget: three slots of (buffers + an FFT work area about a chunk's
 * size), at most CHUNKS per pass, halved until the ops' real work areas fit too. */
static int fit(tide_stream *s, size_t budget, char *err, size_t len)
{
    double target = (double)budget / (TIDE_STREAM_SLOTS * (s->nbufs + 1));
    double plane[3] = {0, 0, 0};
    int thick[3] = {0, 0, 0};
    for (int g = 0; g < 2; g++)
        for (int k = 0; k < TIDE_STREAM_PASSES; k++) {
            const tide_pass_desc *pd = &s->d.pass[g][k];
            for (int r = 0; r < s->P; r++) {
                const tide_box *b = &s->lay[pd->from][r];
                int t = b->hi[pd->d] - b->lo[pd->d];
                double pl = (double)tide_box_count(b) / (t ? t : 1) * (double)s->d.elem;
                thick[pd->d] = t > thick[pd->d] ? t : thick[pd->d];
                plane[pd->d] = pl > plane[pd->d] ? pl : plane[pd->d];
            }
        }
    for (int d = 0; d < 3; d++) {
        double pl = plane[d] ? plane[d] : 1;
        double want = fmax((thick[d] + CHUNKS - 1) / CHUNKS, ceil(MIN_CHUNK / pl));
        double most = fmin(target / pl, want);
        s->step[d] = !thick[d] ? 1 : most < thick[d] ? (int)most : thick[d];
    }
    for (;;) {
        for (int d = 0; d < 3; d++)
            if (s->step[d] < 1)
                return snprintf(err, len, "a device budget of %.3g GB cannot hold %d pipeline "
                                "slots of one plane (%.3g GB) and its FFT work area",
                                budget / 1e9, TIDE_STREAM_SLOTS, plane[d] / 1e9),
                       TIDE_ERR_NOMEM;
        int st = make_passes(s, err, len);
        if (st)
            return st;
        if (slots_bytes(s) <= budget)
            return TIDE_SUCCESS;
        free_ops(s);
        for (int d = 0; d < 3; d++)
            s->step[d] /= 2;
    }
}

/* W (between the passes: every field's worth when field_order says so), on the device when
 * resident, and the MPI send blocks S. */
static int alloc_mid(tide_stream *s, char *err, size_t len)
{
    /* One rank transforming between arrays of one size needs no W: the first pass writes
     * the output, the second transforms it in place. */
    int need = s->resident, most = 1 + s->overlap;
    for (int g = 0; g < 2; g++) {
        const tide_pass_desc *pd = &s->d.pass[g][0];
        tide_box w = zcut(s->lay[pd->to][s->me], pd->zout);
        size_t b = (size_t)tide_box_count(&w) * s->d.elem, in, out;
        s->wbytes = b > s->wbytes ? b : s->wbytes;
        field_bytes(s, s->me, g, &in, &out);
        int reverse, wf = field_order(s, g, &reverse);
        most = wf > most ? wf : most;
        need = need || s->P > 1 || in != out;
    }
    s->wfields = need ? most : 0;
    size_t wall = s->wbytes * (size_t)s->wfields;
    if (s->resident) {
        if (tide_gpu_malloc(wall, &s->W))
            return snprintf(err, len, "cannot allocate %zu bytes of device memory for the "
                            "streamed data", wall), TIDE_ERR_NOMEM;
    } else if (wall && tide_gpu_host_alloc(wall, &s->W)) {
        return snprintf(err, len, "cannot allocate %zu bytes of pinned host memory for the "
                        "streamed data", wall), TIDE_ERR_NOMEM;
    }
    for (int g = 0; g < 2; g++)
        for (int k = 0; k < TIDE_STREAM_PASSES; k++)
            if (s->x[g][k] && !s->d.env->nccl) {
                size_t b = tide_chunked_staging(s->x[g][k]) * s->d.elem;
                s->sbytes = b > s->sbytes ? b : s->sbytes;
            }
    if (s->sbytes && tide_gpu_host_alloc(s->sbytes, &s->S))
        return snprintf(err, len, "cannot allocate %zu bytes of pinned host memory for the "
                        "exchange", s->sbytes), TIDE_ERR_NOMEM;
    return TIDE_SUCCESS;
}

/* The pipeline, each slot's FFT work area, and every op bound to its slot's stream. */
static int make_engine(tide_stream *s, char *err, size_t len)
{
    tide_pipeline_config pc = {.nslots = TIDE_STREAM_SLOTS, .nbufs = s->nbufs,
                               .buf_bytes = s->buf_bytes};
    int st = tide_pipeline_create_config(&pc, &s->pipe, err, len);
    for (int sl = 0; sl < TIDE_STREAM_SLOTS && !st; sl++) {
        tide_env *e = &s->slot[sl];
        e->stream = tide_pipeline_stream(s->pipe, sl);
        if (tide_gpu_malloc(s->work_bytes ? s->work_bytes : 1, &e->fft_work))
            return snprintf(err, len, "cannot allocate an FFT work area: %s",
                            tide_gpu_last_error()), TIDE_ERR_NOMEM;
        e->fft_work_bytes = s->work_bytes;
        for (int g = 0; g < 2 && !st; g++)
            for (int k = 0; k < TIDE_STREAM_PASSES && !st; k++)
                for (int j = 0; j < s->nops[g][k] && !st; j++) {
                    const tide_op *op = &s->ops[g][k][sl][j];
                    if (op->kind == TIDE_OP_FFT && op->fft && e->be->fft_bind(e, op->fft))
                        st = TIDE_ERR_BACKEND, snprintf(err, len, "cannot bind %s to its "
                                                        "stream", op->what);
                }
    }
    return st;
}

/* One rank whose data fits beside the slots: it stays on the device between the passes (two
 * fields of it with a batch, see overlapped()). */
static int try_resident(tide_stream *s, char *err, size_t len)
{
    size_t in, out, most = 0;
    for (int g = 0; g < 2; g++) {
        field_bytes(s, s->me, g, &in, &out);
        most = in > most ? in : most;
        most = out > most ? out : most;
    }
    int overlap = s->d.batch > 1;
    size_t wall = most * (size_t)(1 + overlap), budget = s->d.budget;
    if (!s->d.resident || s->P > 1 || wall >= budget / 2)
        return 1;
    s->resident = 1;
    s->overlap = overlap;
    s->nbufs = 1 + overlap;
    if (fit(s, budget - wall, err, len) == TIDE_SUCCESS)
        return 0;
    s->resident = s->overlap = 0;
    s->nbufs = 1;
    free_ops(s);
    return 1;
}

int tide_stream_create(const tide_stream_desc *d, tide_stream **out, char *err, size_t len)
{
    *out = NULL;
    tide_stream *s = calloc(1, sizeof *s);
    int P = d->env->ctx->nranks;
    if (s)
        s->lay[0] = malloc(2 * (size_t)P * sizeof(tide_box));
    if (!s || !s->lay[0]) {
        free(s);
        return snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM;
    }
    s->d = *d;
    s->ctx = d->env->ctx;
    s->P = P;
    s->me = s->ctx->rank;
    s->lay[1] = s->lay[0] + P;
    for (int l = 0; l < 2; l++)
        memcpy(s->lay[l], d->layout[l], (size_t)P * sizeof(tide_box));
    for (int sl = 0; sl < TIDE_STREAM_SLOTS; sl++) { /* stream and work area: make_engine */
        s->slot[sl] = *d->env;
        s->slot[sl].fft_work = NULL;
        s->slot[sl].fft_work_bytes = 0;
    }
    s->nbufs = d->env->nccl && P > 1 ? 3 : 1;
    int st = try_resident(s, err, len) ? fit(s, d->budget, err, len) : TIDE_SUCCESS;
    if (!st)
        st = alloc_mid(s, err, len);
    if (!st)
        st = make_engine(s, err, len);
    if (st) {
        tide_stream_destroy(s);
        return st;
    }
    *out = s;
    return TIDE_SUCCESS;
}

void tide_stream_shape_of(const tide_stream *s, tide_stream_shape *sh)
{
    sh->chunks = 0;
    for (int g = 0; g < 2; g++)
        for (int k = 0; k < TIDE_STREAM_PASSES; k++)
            sh->chunks = s->nchunks[g][k] > sh->chunks ? s->nchunks[g][k] : sh->chunks;
    sh->slots = TIDE_STREAM_SLOTS;
    sh->resident = s->resident;
    sh->device_bytes = slots_bytes(s) + (s->resident ? s->wbytes * (size_t)s->wfields : 0);
    sh->pinned_bytes = (s->resident ? 0 : s->wbytes * (size_t)s->wfields) + s->sbytes +
                       tide_pipeline_pinned_bytes(s->pipe);
}

#else /* no CUDA: plans never stream (fft.c asks only on a context with GPUs) */

int tide_stream_create(const tide_stream_desc *d, tide_stream **out, char *err, size_t len)
{
    (void)d;
    *out = NULL;
    snprintf(err, len, "this build has no CUDA");
    return TIDE_ERR_UNSUPPORTED;
}

void tide_stream_destroy(tide_stream *s) { (void)s; }

void tide_stream_shape_of(const tide_stream *s, tide_stream_shape *sh)
{
    (void)s;
    memset(sh, 0, sizeof *sh);
}

int tide_stream_execute(const tide_stream *s, int dir, const void *in, void *out, char *err,
                        size_t len)
{
    (void)s, (void)dir, (void)in, (void)out;
    snprintf(err, len, "this build has no CUDA");
    return TIDE_ERR_UNSUPPORTED;
}

#endif
