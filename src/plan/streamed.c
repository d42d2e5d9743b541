/*
 * plan/streamed.c: the pass runner of streamed programs (see plan/streamed.h).
 *
 * Chunk i of a pass on this rank is the planes [lo + i * step, + step) of its box along the
 * pass's dimension d, the same rule on every rank, so a moving pass's per-chunk NCCL groups
 * pair up (ranks with fewer planes run empty chunks). A chunk's device buffers, per slot:
 *   0: the chunk, uploaded, transformed in place by the pass's ops;
 *   1, 2 (moving passes over NCCL): the parts for the other ranks, packed in their order; the
 *      parts received from them;
 *   the last (out-of-place passes): the chunk of results the ops write.
 * Where a chunk's results go: this rank's own points straight into the destination; other
 * ranks' points into their per-peer send blocks (MPI after the pass) or over NCCL (buffer 2,
 * then into the destination). Between passes the data waits in W: pass k writes W array
 * wat[dir][k], a pass that neither moves the data nor changes its shape in place where it
 * read. With the data resident on the device (one rank, two passes), the first pass writes
 * its chunks into a device array W with a device copy instead of a download, and the second
 * copies its chunks out of W instead of uploading them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "plan/streamed.h"
#include "comm/chunked.h"
#include "comm/region.h"
#include "plan/runner.h"

enum { NDIRS = 2 };

struct tide_streamed {
    tide_streamed_desc d;
    tide_box *lay[TIDE_STREAM_LAYOUTS];
    const tide_context *ctx;
    int P, me;
    int step[3];             /* chunk thickness along each dimension that passes cut */
    int nchunks[NDIRS][TIDE_STREAM_PASSES];
    tide_chunked *x[NDIRS][TIDE_STREAM_PASSES];     /* the moving passes' exchanges */
    tide_op ops[NDIRS][TIDE_STREAM_PASSES][TIDE_STREAM_SLOTS][TIDE_PASS_OPS];
    int nops[NDIRS][TIDE_STREAM_PASSES];
    int wat[NDIRS][TIDE_STREAM_PASSES]; /* the W array pass k writes (-1: the output) */
    tide_env slot[TIDE_STREAM_SLOTS];           /* what the ops are made with: each slot's
                                                 * environment, the runner's once it exists */
    tide_env host_env;                          /* host passes: the CPU backend */
    size_t work_bytes;
    size_t buf_bytes[4];
    int nbufs, obuf;         /* slot buffers; the out-of-place passes' results (-1: none) */
    tide_runner *run;        /* TIDE_STREAM_SLOTS deep */
    void *W, *S;             /* between passes (host, or device when resident); MPI blocks */
    size_t wbytes, sbytes;
    int nw, wfields, resident;
    int overlap;             /* resident with a batch: see overlapped() */
};

/* What one pass of one execution works on (the job's user data; the plan stays unchanged). */
typedef struct {
    const tide_streamed *s;
    int dir, k, field;
    const tide_pass_desc *pd;
    int in;                  /* the layout it reads */
    const tide_chunked *x;   /* NULL: the pass does not move the data */
    const void *src;
    void *dst;
    int src_dev, dst_dev;    /* src or dst is W on the device */
    tide_box sl, dl;         /* this rank's layouts of src and dst */
    int buf, obuf;           /* the slot buffers of its input and output chunks */
} pass_run;

static tide_box zcut(tide_box b, int z)
{
    b.hi[2] = z;
    return b;
}

static int input_layout(const tide_pass_desc *pd) { return pd->src >= 0 ? pd->src : pd->from; }

/* Rank r's chunk i of pass k of direction dir: [*a, *b) along the pass's dimension. */
static void range(const tide_streamed *s, int dir, int k, int r, int i, int *a, int *b)
{
    const tide_pass_desc *pd = &s->d.pass[dir][k];
    tide_chunk_range(&s->lay[pd->from][r], pd->d, s->step[pd->d], i, a, b);
}

/* The device layout of this rank's chunk of layout l starting at a along d: step planes from
 * a, whatever the chunk's length, so one set of ops serves every chunk. */
static tide_box chunk_box(const tide_streamed *s, int l, int d, int a)
{
    tide_box c = s->lay[l][s->me];
    c.lo[d] = a;
    c.hi[d] = a + s->step[d];
    return c;
}

/* The points [a, b) along d of layout l, dimension 2 cut to z. */
static tide_box chunk_region(const tide_streamed *s, int l, int d, int a, int b, int z)
{
    tide_box c = zcut(s->lay[l][s->me], z);
    c.lo[d] = a;
    c.hi[d] = b;
    return c;
}

/* Appends part pr's transfers of chunk i (see the top of the file). */
static void describe_part(const pass_run *pr, int i, tide_xfer *up, int *nup, tide_xfer *down,
                          int *ndown)
{
    const tide_streamed *s = pr->s;
    const tide_pass_desc *pd = pr->pd;
    int a, b, ob = pr->obuf;
    range(s, pr->dir, pr->k, s->me, i, &a, &b);
    tide_box cin = chunk_box(s, pr->in, pd->d, a), cout = chunk_box(s, pd->from, pd->d, a);
    tide_box r, blk;
    if (b > a && !pr->src_dev)
        up[(*nup)++] = (tide_xfer){(void *)pr->src, pr->sl,
                                   chunk_region(s, pr->in, pd->d, a, b, pd->zin), pr->buf, 0, cin};
    if (b > a && !pr->dst_dev && !pr->x)
        down[(*ndown)++] = (tide_xfer){pr->dst, pr->dl,
                                       chunk_region(s, pd->from, pd->d, a, b, pd->zout), ob, 0,
                                       cout};
    if (!pr->x)
        return;
    int nccl = s->d.env->nccl != NULL;
    for (int q = 0; q < s->P && b > a; q++) {
        size_t off;
        if (tide_chunked_send(pr->x, i, q, &r) == 0)
            continue;
        if (q == s->me)
            down[(*ndown)++] = (tide_xfer){pr->dst, pr->dl, r, ob, 0, cout};
        else if (!nccl && tide_chunked_block(pr->x, q, &blk, &off) > 0)
            down[(*ndown)++] = (tide_xfer){(char *)s->S + off * s->d.elem, blk, r, ob, 0, cout};
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

/* What a part's own steps are bound to, per chunk: the copies between W on the device and
 * the chunk buffers, and the chunk's exchange. */
typedef struct {
    tide_region_copy pre, post;
    tide_op pre_op, post_op, xop;
    const pass_run *pr;
    int i;                   /* the chunk the exchange moves */
    tide_box cout;
    void *send, *recv;
} part_bind;

/* The chunk's exchange over NCCL: collective, so it runs after a failure too (packing
 * nothing). */
static int exchange_execute(const tide_op *op, const tide_env *e, void *src, void *dst)
{
    (void)dst;
    const part_bind *b = op->state;
    return tide_chunked_nccl(b->pr->x, b->i, src, &b->cout, b->send, b->recv, e->nccl,
                             e->stream, e->failed);
}

static void nothing(tide_op *op, const tide_env *e) { (void)op, (void)e; }

static const tide_op_class exchange_class = {exchange_execute, nothing, 1, 0, NULL};

/* The part's own ops on b (made once per run). */
static void part_ops(const pass_run *pr, part_bind *b)
{
    size_t most = pr->s->buf_bytes[pr->buf];
    *b = (part_bind){.pr = pr};
    tide_op_copy_region(&b->pre_op, &b->pre, most);
    tide_op_copy_region(&b->post_op, &b->post, most);
    b->xop = (tide_op){.cls = &exchange_class, .kind = TIDE_OP_EXCHANGE, .state = b};
    snprintf(b->xop.what, sizeof b->xop.what, "nccl chunk exchange");
}

/* Appends part pr's steps on chunk i in its chunk buffers to step[*n]: W's chunk copied in
 * from the device, the pass's ops, the results copied into W on the device, the exchange. */
static void part_steps(part_bind *pb, int i, void *const *buf, tide_step *step, int *n)
{
    const pass_run *pr = pb->pr;
    const tide_streamed *s = pr->s;
    const tide_pass_desc *pd = pr->pd;
    int a, b, slot = i % TIDE_STREAM_SLOTS;
    range(s, pr->dir, pr->k, s->me, i, &a, &b);
    tide_box cin = chunk_box(s, pr->in, pd->d, a), cout = chunk_box(s, pd->from, pd->d, a);
    void *chunk[2] = {buf[pr->buf], buf[pr->obuf]};
    const tide_op *ops = s->ops[pr->dir][pr->k][slot];
    int nops = s->nops[pr->dir][pr->k];
    if (b > a && pr->src_dev) {
        pb->pre = (tide_region_copy){s->d.elem, chunk_region(s, pr->in, pd->d, a, b, pd->zin),
                                     pr->sl, cin};
        step[(*n)++] = (tide_step){&pb->pre_op, (void *)pr->src, chunk[0]};
    }
    if (b > a && s->d.chunk) {
        tide_box r = chunk_region(s, pd->from, pd->d, a, b, pd->zout);
        s->d.chunk(s->d.user, pr->dir, pr->k, pr->field, &r, &cout, ops, nops);
    }
    if (b > a)
        *n += tide_steps_of(ops, nops, chunk, step + *n);
    if (b > a && pr->dst_dev) {
        pb->post = (tide_region_copy){s->d.elem,
                                      chunk_region(s, pd->from, pd->d, a, b, pd->zout), cout,
                                      pr->dl};
        step[(*n)++] = (tide_step){&pb->post_op, chunk[1], pr->dst};
    }
    if (pr->x && s->d.env->nccl) {
        pb->i = i, pb->cout = cout, pb->send = buf[1], pb->recv = buf[2];
        step[(*n)++] = (tide_step){&pb->xop, chunk[1], NULL};
    }
}

static int chunks(const pass_run *pr) { return pr->s->nchunks[pr->dir][pr->k]; }

/* One run of the runner runs one pass, or two at once (parts): chunk i of each part that has
 * one. */
typedef struct {
    const pass_run *part;
    int nparts;
    part_bind bind[2];
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

static int chunk_steps(void *user, int i, const tide_env *e, void *const *buf, tide_step *step,
                       int *n)
{
    (void)e;
    job_parts *j = user;
    *n = 0;
    for (int p = 0; p < j->nparts; p++)
        if (i < chunks(&j->part[p]))
            part_steps(&j->bind[p], i, buf, step, n);
    return TIDE_SUCCESS;
}

/* Pass k of direction dir on field f from src to dst, its input chunks in buffer buf. */
static pass_run part_of(const tide_streamed *s, int dir, int k, int f, const void *src,
                        void *dst, int buf)
{
    const tide_pass_desc *pd = &s->d.pass[dir][k];
    int in = input_layout(pd);
    return (pass_run){s, dir, k, f, pd, in, s->x[dir][k], src, dst, s->resident && k > 0,
                      s->resident && k == 0, zcut(s->lay[in][s->me], pd->zin),
                      zcut(s->lay[pd->to][s->me], pd->zout), buf,
                      pd->src >= 0 ? s->obuf : buf};
}

/* Runs the parts as one job, then a moving part's MPI exchange. After a failure (st) it still
 * exchanges. */
static int run_parts(const tide_streamed *s, const pass_run *part, int nparts, int st, char *err,
                     size_t len)
{
    job_parts j = {.part = part, .nparts = nparts};
    int n = 0;
    for (int p = 0; p < nparts; p++) {
        n = chunks(&part[p]) > n ? chunks(&part[p]) : n;
        part_ops(&part[p], &j.bind[p]);
    }
    tide_runner_pass rp = {.nchunks = n, .elem = s->d.elem, .batch = 1, .max_up = nparts,
                           .max_down = s->P + nparts, .describe = describe,
                           .steps = chunk_steps, .user = &j};
    char why[TIDE_MSG_LEN];
    /* After a failure keep going, so that the peers' NCCL groups and messages still match;
     * err keeps the first failure's reason. */
    int rc = tide_runner_run(s->run, &rp, st ? why : err, st ? sizeof why : len);
    tide_pipeline_stats ps;
    int stats = !rc && tide_runner_last_stats(s->run, &ps) == 0;
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
                 rp.nchunks, ps.total * 1e3, ps.upload * 1e3, ps.work * 1e3,
                 ps.download * 1e3, ps.bytes_up / 1e9, ps.bytes_down / 1e9, t * 1e3);
    return st;
}

/* A host pass: its ops, in order, from src to dst on the CPU (nothing collective). */
static int host_pass(const tide_streamed *s, int dir, int k, const void *src, void *dst, int st,
                     char *err, size_t len)
{
    void *arr[2] = {(void *)src, dst};
    tide_step step[TIDE_PASS_OPS];
    const tide_op *at = NULL;
    double t = MPI_Wtime();
    if (!st) {
        tide_steps_run(step, tide_steps_of(s->ops[dir][k][0], s->nops[dir][k], arr, step),
                       &s->host_env, &st, &at);
        if (st)
            snprintf(err, len, "%s on the CPU failed", at->what);
    }
    if (!st && s->ctx->log_level >= TIDE_LOG_DEBUG)
        tide_log(s->ctx, TIDE_LOG_DEBUG, "host pass %d: %.3g ms", k, (MPI_Wtime() - t) * 1e3);
    return st;
}

static int pass(const tide_streamed *s, int dir, int k, int f, const void *src, void *dst, int st,
                char *err, size_t len)
{
    if (s->d.pass[dir][k].host)
        return host_pass(s, dir, k, src, dst, st, err, len);
    pass_run pr = part_of(s, dir, k, f, src, dst, 0);
    return run_parts(s, &pr, 1, st, err, len);
}

/* ---- the fields ------------------------------------------------------------------------ */

/* Bytes of one field of direction dir's input and output on rank r. */
static void field_bytes(const tide_streamed *s, int r, int dir, size_t *in, size_t *out)
{
    const tide_pass_desc *f = &s->d.pass[dir][0], *l = &s->d.pass[dir][s->d.npasses - 1];
    tide_box bi = zcut(s->lay[input_layout(f)][r], f->zin), bo = zcut(s->lay[l->to][r], l->zout);
    *in = (size_t)tide_box_count(&bi) * s->d.elem;
    *out = (size_t)tide_box_count(&bo) * s->d.elem;
}

/* The order fields go in, the same on every rank since their exchanges pair up: a field is
 * read whole (into W) before its output is written, so in place, fields go backwards when
 * the output's fields are longer (*reverse) and forwards when shorter. Where ranks differ
 * (transposed slabs of uneven thickness) no order suits all: then W holds every field, all
 * are read before any is written, and the function returns the batch; else 1. */
static int field_order(const tide_streamed *s, int dir, int *reverse)
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

/* Where field slot w of pass k's results waits for pass k + 1: its W array, else the output
 * (at byte off). */
static void *mid(const tide_streamed *s, int dir, int k, int w, void *out, size_t off)
{
    int a = s->wat[dir][k];
    return a >= 0 ? (char *)s->W + ((size_t)a * s->wfields + (size_t)w) * s->wbytes
                  : (char *)out + off;
}

/* Resident with a batch: the second pass of one field runs in one job with the first pass of
 * the next (its chunks in slot buffer 1), so one field's downloads overlap the next one's
 * uploads, in both PCIe directions at once. W holds two fields, used in turn. Within a job the
 * output written and the input read are different fields, apart even in place (field_order's
 * direction). */
static int overlapped(const tide_streamed *s, int dir, int reverse, const char *in, char *out,
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
            part[n++] = part_of(s, dir, 0, f, in + f * cin, w, 0);
        if (k > 0)
            part[n++] = part_of(s, dir, 1, prev, wprev, out + prev * cout, 1);
        st = run_parts(s, part, n, st, err, len);
    }
    return st;
}

int tide_streamed_execute(const tide_streamed *s, int dir, const void *in, void *out, char *err,
                        size_t len)
{
    /* Fields f at f * (one field's bytes) on each side, wf at a time: pass k of each of them,
     * then pass k + 1 of each. */
    int reverse, wf = field_order(s, dir, &reverse), st = TIDE_SUCCESS, np = s->d.npasses;
    size_t cin, cout;
    if (s->overlap)
        return overlapped(s, dir, reverse, in, out, err, len);
    field_bytes(s, s->me, dir, &cin, &cout);
    for (int f0 = 0; f0 < s->d.batch; f0 += wf)
        for (int k = 0; k < np; k++)
            for (int j = f0; j < f0 + wf; j++) {
                int f = reverse ? s->d.batch - 1 - j : j;
                const void *src = k ? mid(s, dir, k - 1, j - f0, out, f * cout)
                                    : (const char *)in + f * cin;
                void *dst = k < np - 1 ? mid(s, dir, k, j - f0, out, f * cout)
                                       : (char *)out + f * cout;
                st = pass(s, dir, k, f, src, dst, st, err, len);
            }
    return st;
}

/* ---- creation -------------------------------------------------------------------------- */

/* Frees the ops (and exchanges) of the passes through the GPU, and with host those of the
 * host passes too: they do not depend on the chunk sizes, so fit() keeps them. */
static void free_ops(tide_streamed *s, int host)
{
    for (int g = 0; g < s->d.ndirs; g++)
        for (int k = 0; k < s->d.npasses; k++) {
            int h = s->d.pass[g][k].host;
            if (h && !host)
                continue;
            for (int sl = 0; sl < (h ? 1 : TIDE_STREAM_SLOTS); sl++)
                for (int j = 0; j < s->nops[g][k]; j++)
                    s->ops[g][k][sl][j].cls->destroy(&s->ops[g][k][sl][j],
                                                     h ? &s->host_env : &s->slot[sl]);
            s->nops[g][k] = 0;
            memset(s->ops[g][k], 0, sizeof s->ops[g][k]);
            tide_chunked_destroy(s->x[g][k]);
            s->x[g][k] = NULL;
        }
}

void tide_streamed_destroy(tide_streamed *s)
{
    if (!s)
        return;
    const tide_backend_ops *be = s->d.env->be;
    free_ops(s, 1);
    tide_runner_destroy(s->run);
    if (s->resident)
        be->free(s->W);
    else
        be->host_free(s->W);
    be->host_free(s->S);
    free(s->lay[0]);
    if (s->d.user_bytes)
        free(s->d.user);
    free(s);
}

static void raise_to(size_t *x, size_t v) { *x = v > *x ? v : *x; }

/* The ops of the host passes, on the whole arrays, once. */
static int make_host_passes(tide_streamed *s, char *err, size_t len)
{
    int st = TIDE_SUCCESS;
    for (int g = 0; g < s->d.ndirs && !st; g++)
        for (int k = 0; k < s->d.npasses && !st; k++) {
            const tide_pass_desc *pd = &s->d.pass[g][k];
            if (!pd->host)
                continue;
            tide_box in = zcut(s->lay[input_layout(pd)][s->me], pd->zin);
            tide_box out = zcut(s->lay[pd->from][s->me], pd->zout);
            size_t none = 0;
            st = s->d.make_ops(s->d.user, g, k, 0, &s->host_env, &in, &out, s->ops[g][k][0],
                               &s->nops[g][k], &none, err, len);
        }
    return st;
}

/* The ops of every pass through the GPU and slot, the moving passes' exchanges and the buffer
 * sizes, at the current chunk thicknesses. */
static int make_passes(tide_streamed *s, char *err, size_t len)
{
    s->work_bytes = 0;
    memset(s->buf_bytes, 0, sizeof s->buf_bytes);
    int st = TIDE_SUCCESS;
    for (int g = 0; g < s->d.ndirs && !st; g++)
        for (int k = 0; k < s->d.npasses && !st; k++) {
            const tide_pass_desc *pd = &s->d.pass[g][k];
            if (pd->host) /* make_host_passes */
                continue;
            int lo = s->lay[pd->from][s->me].lo[pd->d];
            tide_box cin = chunk_box(s, input_layout(pd), pd->d, lo);
            tide_box cout = chunk_box(s, pd->from, pd->d, lo);
            size_t cb = (size_t)tide_box_count(&cin) * s->d.elem;
            for (int b = 0; b <= s->overlap; b++) /* overlapped: buffer 1 holds chunks too */
                raise_to(&s->buf_bytes[b], cb);
            if (pd->src >= 0)
                raise_to(&s->buf_bytes[s->obuf], (size_t)tide_box_count(&cout) * s->d.elem);
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
                    raise_to(&s->buf_bytes[b], m);
            }
            for (int sl = 0; sl < TIDE_STREAM_SLOTS && !st; sl++)
                st = s->d.make_ops(s->d.user, g, k, sl, &s->slot[sl], &cin, &cout, s->ops[g][k][sl],
                                   &s->nops[g][k], &s->work_bytes, err, len);
        }
    for (int b = 0; b < s->nbufs; b++)
        s->buf_bytes[b] = s->buf_bytes[b] ? s->buf_bytes[b] : 1;
    return st;
}

static size_t slots_bytes(const tide_streamed *s)
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
 * size), at most CHUNKS per pass, then cut in the ratio of the budget to what the slots with
 * the ops' real work areas take, until they fit (a plane per chunk at the least). */
static int fit(tide_streamed *s, size_t budget, char *err, size_t len)
{
    double target = (double)budget / (TIDE_STREAM_SLOTS * (s->nbufs + 1));
    double plane[3] = {0, 0, 0};
    int thick[3] = {0, 0, 0};
    for (int g = 0; g < s->d.ndirs; g++)
        for (int k = 0; k < s->d.npasses; k++) {
            const tide_pass_desc *pd = &s->d.pass[g][k];
            for (int r = 0; r < s->P && !pd->host; r++)
                for (int side = 0; side < 2; side++) {
                    const tide_box *b = &s->lay[side ? input_layout(pd) : pd->from][r];
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
        s->step[d] = !thick[d] || most < 1 ? 1 : most < thick[d] ? (int)most : thick[d];
    }
    for (;;) {
        int st = make_passes(s, err, len);
        if (st)
            return st;
        size_t need = slots_bytes(s);
        if (need <= budget)
            return TIDE_SUCCESS;
        free_ops(s, 0);
        double ratio = (double)budget / (double)need, most = 0;
        int fewer = 0;
        for (int d = 0; d < 3; d++) /* fewer planes each time, one at the least */
            if (thick[d]) {
                int cut = (int)(s->step[d] * ratio);
                cut = cut < s->step[d] ? cut : s->step[d] - 1;
                cut = cut < 1 ? 1 : cut;
                fewer |= cut < s->step[d];
                s->step[d] = cut;
                most = fmax(most, plane[d]);
            }
        if (!fewer)
            return snprintf(err, len, "a device budget of %.3g GB cannot hold %d pipeline slots "
                            "of one plane (%.3g GB) and its FFT work area (%.3g GB in all)",
                            budget / 1e9, TIDE_STREAM_SLOTS, most / 1e9, need / 1e9),
                   TIDE_ERR_NOMEM;
    }
}

/* Where each pass but the last leaves its results (wat, see the top of the file). One rank
 * transforming in two passes between arrays of one size needs no W: the first pass writes
 * the output, the second transforms it in place. Returns the number of W arrays. */
static int place_passes(tide_streamed *s)
{
    int nw = 0, np = s->d.npasses;
    for (int g = 0; g < s->d.ndirs; g++) {
        size_t in, out;
        field_bytes(s, s->me, g, &in, &out);
        int reverse, none = !s->resident && s->P == 1 && in == out && np == 2 &&
                            field_order(s, g, &reverse) == 1;
        for (int k = 0; k < np - 1; k++) {
            const tide_pass_desc *pd = &s->d.pass[g][k];
            int stays = k > 0 && pd->src < 0 && pd->zin == pd->zout &&
                        (pd->from == pd->to || s->P == 1);
            s->wat[g][k] = none ? -1 : !k ? 0 : stays ? s->wat[g][k - 1] : 1 - s->wat[g][k - 1];
            nw = s->wat[g][k] + 1 > nw ? s->wat[g][k] + 1 : nw;
        }
    }
    return nw;
}

/* W (between the passes: every field's worth when field_order says so), on the device when
 * resident, and the MPI send blocks S. */
static int alloc_mid(tide_streamed *s, char *err, size_t len)
{
    int most = 1 + s->overlap;
    s->nw = place_passes(s);
    for (int g = 0; g < s->d.ndirs; g++) {
        for (int k = 0; k < s->d.npasses - 1; k++) {
            const tide_pass_desc *pd = &s->d.pass[g][k];
            tide_box w = zcut(s->lay[pd->to][s->me], pd->zout);
            raise_to(&s->wbytes, (size_t)tide_box_count(&w) * s->d.elem);
        }
        int reverse, wf = field_order(s, g, &reverse);
        most = wf > most ? wf : most;
    }
    s->wfields = s->nw ? most : 0;
    size_t wall = s->wbytes * (size_t)s->wfields * (size_t)s->nw;
    const tide_backend_ops *be = s->d.env->be;
    if (s->resident) {
        if (be->alloc(wall, &s->W))
            return snprintf(err, len, "cannot allocate %zu bytes of device memory for the "
                            "streamed data", wall), TIDE_ERR_NOMEM;
    } else if (wall && be->host_alloc(wall, &s->W)) {
        return snprintf(err, len, "cannot allocate %zu bytes of pinned host memory for the "
                        "streamed data", wall), TIDE_ERR_NOMEM;
    }
    for (int g = 0; g < s->d.ndirs; g++)
        for (int k = 0; k < s->d.npasses; k++)
            if (s->x[g][k] && !s->d.env->nccl)
                raise_to(&s->sbytes, tide_chunked_staging(s->x[g][k]) * s->d.elem);
    if (s->sbytes && be->host_alloc(s->sbytes, &s->S))
        return snprintf(err, len, "cannot allocate %zu bytes of pinned host memory for the "
                        "exchange", s->sbytes), TIDE_ERR_NOMEM;
    return TIDE_SUCCESS;
}

/* The runner (each slot's stream and FFT work area), and every op bound to its slot's
 * stream. The ops keep the environment they were made with (s->slot: an operation may hold on
 * to it), which becomes the runner's slot's. */
static int make_engine(tide_streamed *s, char *err, size_t len)
{
    int steps = 0;
    for (int g = 0; g < s->d.ndirs; g++)
        for (int k = 0; k < s->d.npasses; k++)
            steps = s->nops[g][k] > steps ? s->nops[g][k] : steps;
    /* two parts at once, each its ops and up to three steps of its own */
    tide_runner_desc rd = {.env = s->d.env, .slots = TIDE_STREAM_SLOTS, .nbufs = s->nbufs,
                           .buf_bytes = s->buf_bytes, .max_steps = 2 * (steps + 3),
                           .fft_work = s->work_bytes ? s->work_bytes : 1};
    int st = tide_runner_create(&rd, &s->run, err, len);
    for (int sl = 0; sl < TIDE_STREAM_SLOTS && !st; sl++) {
        const tide_env *e = tide_runner_env(s->run, sl);
        s->slot[sl] = *e;
        for (int g = 0; g < s->d.ndirs && !st; g++)
            for (int k = 0; k < s->d.npasses && !st; k++)
                for (int j = 0; j < s->nops[g][k] && !st && !s->d.pass[g][k].host; j++) {
                    const tide_op *op = &s->ops[g][k][sl][j];
                    if (op->kind == TIDE_OP_FFT && op->fft && e->be->fft_bind(e, op->fft))
                        st = TIDE_ERR_BACKEND, snprintf(err, len, "cannot bind %s to its "
                                                        "stream", op->what);
                }
    }
    return st;
}

/* One rank of a two-pass program whose passes work in place, with data that fits beside the
 * slots: it stays on the device between the passes (two fields of it with a batch, see
 * overlapped()). */
static int try_resident(tide_streamed *s, char *err, size_t len)
{
    size_t in, out, most = 0;
    for (int g = 0; g < s->d.ndirs; g++) {
        field_bytes(s, s->me, g, &in, &out);
        most = in > most ? in : most;
        most = out > most ? out : most;
    }
    int overlap = s->d.batch > 1;
    size_t wall = most * (size_t)(1 + overlap), budget = s->d.budget;
    int host = 0;
    for (int g = 0; g < s->d.ndirs; g++)
        for (int k = 0; k < s->d.npasses; k++)
            host |= s->d.pass[g][k].host;
    if (!s->d.resident || s->P > 1 || s->d.npasses != 2 || s->obuf >= 0 || host ||
        wall >= budget / 2)
        return 1;
    s->resident = 1;
    s->overlap = overlap;
    s->nbufs = 1 + overlap;
    if (fit(s, budget - wall, err, len) == TIDE_SUCCESS)
        return 0;
    s->resident = s->overlap = 0;
    s->nbufs = 1;
    free_ops(s, 0);
    return 1;
}

/* Whether every pass of d is one the runner takes: its layouts given, an out-of-place pass's
 * input cut along d like its output. */
static int check_desc(const tide_streamed_desc *d, int P, char *err, size_t len)
{
    if (d->ndirs < 1 || d->ndirs > NDIRS || d->npasses < 2 || d->npasses > TIDE_STREAM_PASSES)
        return snprintf(err, len, "a streamed program of %d directions of %d passes", d->ndirs,
                        d->npasses), TIDE_ERR_ARGUMENT;
    for (int g = 0; g < d->ndirs; g++)
        for (int k = 0; k < d->npasses; k++) {
            const tide_pass_desc *pd = &d->pass[g][k];
            int in = input_layout(pd), bad = 0;
            for (int l = 0; l < 3; l++) {
                int x = l == 0 ? pd->from : l == 1 ? pd->to : in;
                bad |= x < 0 || x >= TIDE_STREAM_LAYOUTS || !d->layout[x];
            }
            for (int r = 0; r < P && !bad && !pd->host; r++)
                bad |= d->layout[in][r].lo[pd->d] != d->layout[pd->from][r].lo[pd->d] ||
                       d->layout[in][r].hi[pd->d] != d->layout[pd->from][r].hi[pd->d];
            bad |= pd->host && P > 1;
            if (bad)
                return snprintf(err, len, "pass %d of direction %d names a missing layout, "
                                "reads chunks its results do not match or runs on the host "
                                "of one rank among %d", k, g, P),
                       TIDE_ERR_ARGUMENT;
        }
    return TIDE_SUCCESS;
}

int tide_streamed_create(const tide_streamed_desc *d, tide_streamed **out, char *err, size_t len)
{
    *out = NULL;
    int P = d->env->ctx->nranks, st = check_desc(d, P, err, len);
    if (st)
        return st;
    tide_streamed *s = calloc(1, sizeof *s);
    if (s)
        s->lay[0] = calloc(TIDE_STREAM_LAYOUTS * (size_t)P, sizeof(tide_box));
    if (!s || !s->lay[0]) {
        free(s);
        return snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM;
    }
    s->d = *d;
    if (d->user_bytes) {
        s->d.user = malloc(d->user_bytes);
        if (!s->d.user) {
            free(s->lay[0]);
            free(s);
            return snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM;
        }
        memcpy(s->d.user, d->user, d->user_bytes);
    }
    s->ctx = d->env->ctx;
    s->P = P;
    s->me = s->ctx->rank;
    for (int l = 0; l < TIDE_STREAM_LAYOUTS; l++) {
        s->lay[l] = s->lay[0] + (size_t)l * P;
        if (d->layout[l])
            memcpy(s->lay[l], d->layout[l], (size_t)P * sizeof(tide_box));
    }
    s->host_env = (tide_env){.ctx = d->env->ctx, .be = &tide_backend_cpu,
                             .threads = d->env->ctx->threads};
    for (int sl = 0; sl < TIDE_STREAM_SLOTS; sl++) { /* stream and work area: make_engine */
        s->slot[sl] = *d->env;
        s->slot[sl].fft_work = NULL;
        s->slot[sl].fft_work_bytes = 0;
    }
    int oop = 0;
    for (int g = 0; g < d->ndirs; g++)
        for (int k = 0; k < d->npasses; k++)
            oop |= d->pass[g][k].src >= 0 && !d->pass[g][k].host;
    s->nbufs = d->env->nccl && P > 1 ? 3 : 1;
    s->obuf = oop ? s->nbufs++ : -1;
    st = make_host_passes(s, err, len);
    if (!st)
        st = try_resident(s, err, len) ? fit(s, d->budget, err, len) : TIDE_SUCCESS;
    if (!st)
        st = alloc_mid(s, err, len);
    if (!st)
        st = make_engine(s, err, len);
    if (st) {
        tide_streamed_destroy(s);
        return st;
    }
    *out = s;
    return TIDE_SUCCESS;
}

void tide_streamed_transfers(const tide_streamed *s, int dir, double *up, double *down)
{
    *up = *down = 0;
    for (int k = 0; k < s->d.npasses; k++) {
        const tide_pass_desc *pd = &s->d.pass[dir][k];
        tide_box i = zcut(s->lay[input_layout(pd)][s->me], pd->zin);
        tide_box o = zcut(s->lay[pd->from][s->me], pd->zout);
        double B = s->d.batch * (double)s->d.elem;
        *up += pd->host || (s->resident && k > 0) ? 0 : (double)tide_box_count(&i) * B;
        *down += pd->host || (s->resident && k == 0) ? 0 : (double)tide_box_count(&o) * B;
    }
}

void tide_streamed_describe_pass(const tide_streamed *s, int dir, int k, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int j = 0; j < s->nops[dir][k] && used < len; j++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", j ? " > " : "",
                                 s->ops[dir][k][0][j].what);
}

void tide_streamed_shape_of(const tide_streamed *s, tide_streamed_shape *sh)
{
    sh->chunks = 0;
    for (int g = 0; g < s->d.ndirs; g++)
        for (int k = 0; k < s->d.npasses; k++)
            sh->chunks = s->nchunks[g][k] > sh->chunks ? s->nchunks[g][k] : sh->chunks;
    sh->slots = TIDE_STREAM_SLOTS;
    sh->resident = s->resident;
    sh->trips = 0;
    for (int k = 0; k < s->d.npasses; k++)
        sh->trips += !s->d.pass[0][k].host;
    sh->trips = s->resident ? 1 : sh->trips;
    size_t wall = s->wbytes * (size_t)s->wfields * (size_t)s->nw;
    sh->device_bytes = slots_bytes(s) + (s->resident ? wall : 0);
    sh->pinned_bytes = (s->resident ? 0 : wall) + s->sbytes +
                       tide_runner_pinned_bytes(s->run);
}
