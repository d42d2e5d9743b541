/*
 * gemm_streamed.c: the out-of-card matrix multiply on the runner (see gemm_streamed.h).
 *
 * C is cut into tm x tn tiles (at most mb x nb), the k dimension into np panels (at most kb).
 * Chunk i of a run is panel p = i % np of tile t = i / np, tiles taken row by row. Each slot
 * has three device buffers: 0 the panel of op(A) and 1 the panel of op(B), both as the host
 * stores them (a transposed operand is uploaded untransposed and cuBLAS reads it transposed),
 * 2 a C tile; one resident buffer holds the tile being accumulated. Chunk (t, 0) uploads C's
 * tile into buffer 2 (when beta != 0) and its work copies it into the resident tile; every
 * chunk multiplies its panels into the resident tile (beta at p = 0, then 1); chunk (t, np - 1)
 * copies the resident tile into buffer 2 and downloads it. The job is ordered (each chunk's work
 * starts after the previous chunk's), so one multiply at a time touches the resident tile, and
 * buffer 2 belongs to the slot, so a tile's upload never races the previous tile's download.
 * An operand that fits the budget is kept whole in a resident buffer of its own instead: the
 * first chunk that needs a block of it uploads the block to its place there, and later chunks
 * read it (every later chunk's work follows that chunk's work, hence its upload).
 * A multiply that comes in a sequence of runs into one C (SUMMA's updates, one per broadcast
 * panel) may keep the whole of C in a resident buffer instead: the first run uploads each tile
 * to its place there, every run multiplies into it, the last downloads it, so C crosses PCIe
 * once per sequence instead of once per run.
 * Uploads run up to SLOTS - 1 chunks ahead of the work: the PCIe traffic hides behind the
 * multiplies when the tiles are large enough (Wu 2014, eqs. 5.3-5.5: the bytes a chunk moves
 * over its flops below the PCIe rate over the GEMM rate). The plan measures both rates and
 * takes, among the shapes that fit the budget, the one the model of predict() says ends first.
 *
 * Several GPUs driven by one rank share C's columns, one equal part each, with their own
 * streams, cuBLAS handles, rates and runners, run at once (tide_runner_start, then wait).
 * Each reads its columns of B and C straight from the caller's matrices: one rank per node keeps
 * the matrices in one address space, where a rank per GPU would first copy panels between
 * ranks' host memories at the speed of a memcpy, as slow as the PCIe traffic itself. Every part
 * needs all of A. Where the GPUs reach each other's memory (NVLink, peer to peer) and A is kept
 * whole on each, A crosses PCIe once in all, not once per GPU: the parts take part 0's tiles
 * and panels, block (ti, p) of A (tile row ti, panel p) is uploaded by one GPU, its owner
 * (blocks dealt round robin), a tile row before it is needed, and the owner copies it from its
 * copy of A into the others' on a push stream as soon as it has landed; a part's first chunk
 * that needs a block it does not own waits (on the host) until the owner has enqueued that
 * copy, then (on the device) for the copy. Four GPUs loading host memory at once share its
 * bandwidth (about 188 GB/s in all on a node of four H200), so reading A four times held them
 * up; NVLink moves the copies at several times that. The parts' PCIe rates are scaled to what
 * the GPUs measure copying all at once, and part 0 shares A where the model predicts that at
 * least 2% faster than its best shape without (choose_sharing), or as share_a says.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "gemm/gemm_engine.h"
#include "backend/device.h"
#include "backend/measure.h"
#include "backend/memory.h"

/* Block i of blocks of `size` along 0..n (the last one shorter): [*lo, *hi). */
static void block_range(long long n, long long size, int i, long long *lo, long long *hi)
{
    *lo = size * i;
    *hi = *lo + size < n ? *lo + size : n;
}

/* A column-major host matrix of `cols` columns, leading dimension ld, as a box (dimension 0 the
 * column, 1 the row), and its rows r0..r1 of columns c0..c1. The plan keeps both within int. */
static tide_box matrix(long long cols, long long ld)
{
    return (tide_box){{0, 0, 0}, {(int)cols, (int)ld, 1}, {0, 1, 2}};
}

static tide_box block(long long r0, long long r1, long long c0, long long c1)
{
    return (tide_box){{(int)c0, (int)r0, 0}, {(int)c1, (int)r1, 1}, {0, 1, 2}};
}

/* Chunk i's tile rows, columns and panel in run r: q[0..2) rows of C, q[2..4) its columns,
 * q[4..6) the panel of k; *ti, *tj its tile's row and column, *p the panel. */
static void chunk_ranges(const run_t *r, int i, long long q[6], int *ti, int *tj, int *p)
{
    const shape *h = &r->s->sh;
    int t = i / r->np;
    *ti = t / h->tn, *tj = t % h->tn, *p = i % r->np;
    block_range(r->g.m, h->mb, *ti, &q[0], &q[1]);
    block_range(r->g.n, h->nb, *tj, &q[2], &q[3]);
    block_range(r->g.k, h->kb, *p, &q[4], &q[5]);
}

/* The upload of a block of a host matrix into buffer buf: densely (leading dimension dev_ld
 * of its rows) at the start of a slot's buffer, or with `whole` into a resident copy of the
 * whole matrix (leading dimension dev_ld of its rows) at the block's own place. An empty block
 * adds nothing. */
static void add_xfer(tide_xfer *x, int *n, const void *host, long long ld, stored b, int buf,
                     int whole)
{
    tide_box region = block(b.r0, b.r1, b.c0, b.c1);
    if (tide_box_count(&region) == 0)
        return;
    tide_box dbox = whole ? matrix(b.cols, dev_ld(b.rows)) : region;
    if (!whole)
        dbox.hi[1] = (int)(dbox.lo[1] + dev_ld(b.r1 - b.r0));
    x[(*n)++] = (tide_xfer){(void *)host, matrix(b.cols, ld), region, buf, 0, dbox};
}


/* A shared: block (ti, p) of A, its number and the part that uploads it (the only part, when
 * A is not shared). */
static int a_block(const engine *s, int ti, int p) { return ti * s->sh.np + p; }

static int owner(const engine *s, int ti, int p)
{
    return s->all->share.on ? a_block(s, ti, p) % s->all->n : s->index;
}

/* The device address of another part's copy of A. */
static void *copy_of_a(const engine *s) { return tide_runner_resident(s->runner, RES_A - RES_C); }

/* A kept: the tile rows whose block of A (panel p) a chunk of tile (ti, tj) uploads, the k-th
 * (k = 0, 1; -1: none). Tiles go row by row. Not shared: its own row's, at the row's first tile
 * (column 0), where it is first needed. Shared: only the blocks this part owns, a row ahead (at
 * the first tile of row ti those of row ti + 1, and row 0's there too), so that their copies
 * to the other GPUs have landed when the row starts. */
static int a_row(const engine *s, int ti, int tj, int p, int k)
{
    if (tj != 0)
        return -1;
    if (!s->all->share.on)
        return k ? -1 : ti;
    int row = k ? ti + 1 : ti == 0 ? 0 : -1;
    return row >= 0 && row < s->sh.tm && owner(s, row, p) == s->index ? row : -1;
}

/* The block of A, as stored, of tile row `row` and the panel of chunk ranges q. */
static stored a_of_row(const run_t *r, int row, const long long q[6])
{
    long long qr[6];
    memcpy(qr, q, sizeof qr);
    block_range(r->g.m, r->s->sh.mb, row, &qr[0], &qr[1]);
    return operand(&r->g, 0, qr);
}

static int describe(void *user, int i, tide_xfer *up, int *nup, tide_xfer *down, int *ndown)
{
    const run_t *r = user;
    const engine *s = r->s;
    const tide_gemm_desc *g = &r->g;
    const void *host[2] = {r->a, r->b};
    long long q[6], ld[2] = {g->lda, g->ldb};
    int ti, tj, p;
    chunk_ranges(r, i, q, &ti, &tj, &p);
    *nup = *ndown = 0;
    for (int x = 0; x < 2; x++)
        if (!s->sh.keep[x])
            add_xfer(up, nup, host[x], ld[x], operand(g, x, q), BUF_A + x, 0);
    for (int k = 0; k < 2 && s->sh.keep[0]; k++) {
        int row = a_row(s, ti, tj, p, k);
        if (row >= 0)
            add_xfer(up, nup, r->a, g->lda, a_of_row(r, row, q), RES_A, 1);
    }
    if (s->sh.keep[1] && ti == 0) /* B's blocks are first needed in tile row 0 */
        add_xfer(up, nup, r->b, g->ldb, operand(g, 1, q), RES_B, 1);
    stored c = {g->m, g->n, q[0], q[1], q[2], q[3]};
    int kc = s->sh.keep[2];
    if (p == 0 && !tide_scalar_is_zero(r->beta) && (!kc || r->load))
        add_xfer(up, nup, r->c, g->ldc, c, kc ? RES_C : BUF_C, kc);
    if (p == r->np - 1 && (!kc || r->store))
        add_xfer(down, ndown, r->c, g->ldc, c, kc ? RES_C : BUF_C, kc);
    return TIDE_SUCCESS;
}

/* Where a chunk's block of operand x lies on the device in run r, and its leading dimension
 * (a kept operand's: that of its whole matrix in this run, within the planned one's). */
static const void *on_device(const run_t *r, int x, const long long q[6], void *const *buf,
                             long long *ld)
{
    const engine *s = r->s;
    stored b = operand(&r->g, x, q);
    if (!s->sh.keep[x])
        return *ld = dev_ld(b.r1 - b.r0), buf[BUF_A + x];
    *ld = dev_ld(b.rows);
    return (const char *)buf[RES_A + x] + s->elem * (size_t)(b.c0 * *ld + b.r0);
}

/* Stops the parts' waits for blocks of A: part `part`'s run has failed or did not start. */
static void stop_sharing(gemm_stream *all, int part)
{
    sharing *sh = &all->share;
    pthread_mutex_lock(&sh->lock);
    if (sh->first_failed < 0)
        sh->first_failed = part;
    pthread_cond_broadcast(&sh->cond);
    pthread_mutex_unlock(&sh->lock);
}

static void ended(void *user, int status)
{
    const run_t *r = user;
    if (status)
        stop_sharing(r->s->all, r->s->index);
}

/* A shared, just after chunk i's uploads: each block of A it uploaded (a_row) goes, on the
 * push stream once it has landed, into the same place of every other part's copy of A; the
 * block is then marked ready for this run. The block's event is recorded twice: where the
 * upload lands (the push stream waits for that record) and after the copies (the other parts
 * wait for that one: a wait takes the last record before it). */
static int uploaded(void *user, int i, void *const *buf, void *stream)
{
    const run_t *r = user;
    const engine *s = r->s;
    gemm_stream *all = s->all;
    long long q[6];
    int ti, tj, p, st = TIDE_SUCCESS;
    chunk_ranges(r, i, q, &ti, &tj, &p);
    for (int k = 0; k < 2 && !st; k++) {
        int row = a_row(s, ti, tj, p, k);
        if (row < 0)
            continue;
        int b = a_block(s, row, p);
        stored a = a_of_row(r, row, q);
        size_t ld = (size_t)dev_ld(a.rows), off = s->elem * ((size_t)a.c0 * ld + (size_t)a.r0);
        const char *src = (const char *)buf[RES_A] + off;
        st = tide_gpu_event_record(s->pushed[b], stream);
        st = st ? st : tide_gpu_stream_wait(s->push, s->pushed[b]);
        for (int o = 0; o < all->n && !st; o++)
            if (o != s->index)
                st = tide_gpu_copy_peer_2d((char *)copy_of_a(all->e[o]) + off,
                                           all->e[o]->device, src, s->device, s->elem * ld,
                                           s->elem * (size_t)(a.r1 - a.r0),
                                           (size_t)(a.c1 - a.c0), s->push);
        st = st ? st : tide_gpu_event_record(s->pushed[b], s->push);
        if (st)
            break;
        pthread_mutex_lock(&all->share.lock);
        all->share.ready[b] = r->gen;
        pthread_cond_broadcast(&all->share.cond);
        pthread_mutex_unlock(&all->share.lock);
    }
    return st;
}

/* A shared: before the first chunk that reads block (ti, p) of A, which another part owns,
 * wait until the owner has enqueued the block's copies in this run (on the host), then for
 * them (on the device). TIDE_ERR_BACKEND when a part's run has failed first. */
static int await_block(const run_t *r, int ti, int p, void *stream)
{
    gemm_stream *all = r->s->all;
    sharing *sh = &all->share;
    int b = a_block(r->s, ti, p);
    pthread_mutex_lock(&sh->lock);
    while (sh->ready[b] != r->gen && sh->first_failed < 0)
        pthread_cond_wait(&sh->cond, &sh->lock);
    int ok = sh->ready[b] == r->gen;
    pthread_mutex_unlock(&sh->lock);
    if (!ok)
        return TIDE_ERR_BACKEND;
    return tide_gpu_stream_wait(stream, all->e[owner(r->s, ti, p)]->pushed[b]);
}

/* Binds chunk i's update (its tile, its panels where they lie on the device, beta 1 after
 * the first panel): the steps of its ops. */
static int chunk_steps(void *user, int i, const tide_env *e, void *const *buf,
                       tide_step *step, int *n)
{
    run_t *r = user;
    const engine *s = r->s;
    long long q[6];
    int ti, tj, p, st;
    chunk_ranges(r, i, q, &ti, &tj, &p);
    if (tj == 0 && owner(s, ti, p) != s->index && (st = await_block(r, ti, p, e->stream)))
        return st;
    tide_gemm_operands *x = &r->bound;
    x->g = r->g;
    x->g.m = q[1] - q[0], x->g.n = q[3] - q[2], x->g.k = q[5] - q[4];
    x->alpha = r->alpha;
    x->beta = p ? tide_scalar_real(1) : r->beta;
    x->a = on_device(r, 0, q, buf, &x->g.lda);
    x->b = on_device(r, 1, q, buf, &x->g.ldb);
    void *chunk[2] = {buf[BUF_C], buf[RES_C]};
    int first = OP_UPDATE, last = OP_UPDATE;
    if (s->sh.keep[2]) {
        x->g.ldc = dev_ld(r->g.m);
        chunk[1] = (char *)buf[RES_C] + s->elem * (size_t)(q[2] * x->g.ldc + q[0]);
    } else {
        x->g.ldc = dev_ld(x->g.m);
        r->tile = s->elem * (size_t)(x->g.ldc * x->g.n);
        first = p == 0 && !tide_scalar_is_zero(r->beta) ? OP_LOAD : OP_UPDATE;
        last = p == r->np - 1 ? OP_STORE : OP_UPDATE;
    }
    *n = tide_steps_of(s->ops + first, last - first + 1, chunk, step);
    return TIDE_SUCCESS;
}

/* Starts GPU part s of C = alpha op(A) op(B) + beta C with k, lda and ldb of the run (the
 * planned ones when run is NULL): its columns of op(B) and of C, after the caller's work when
 * `after`. */
static int start_part(engine *s, const tide_gemm_desc *run, int which, tide_scalar alpha,
                      const void *a, const void *b, tide_scalar beta, void *c, void *caller,
                      int after)
{
    tide_gemm_desc g = s->d.d;
    if (run)
        g.k = run->k, g.lda = run->lda, g.ldb = run->ldb;
    size_t ob = s->elem * (size_t)(g.transb ? s->col0 : s->col0 * g.ldb);
    int shared = s->all->share.on;
    s->run = (run_t){.s = s, .g = g, .np = (int)ceil_div(at_least_1(g.k), s->sh.kb),
                     .load = !!(which & TIDE_GEMM_RUN_FIRST),
                     .store = !!(which & TIDE_GEMM_RUN_LAST), .gen = s->all->share.gen,
                     .alpha = alpha, .beta = beta, .a = a,
                     .b = b ? (const char *)b + ob : NULL,
                     .c = (char *)c + s->elem * (size_t)(s->col0 * g.ldc)};
    s->pass = (tide_runner_pass){.nchunks = s->sh.tm * s->sh.tn * s->run.np, .elem = s->elem,
                                 .batch = 1, .max_up = 4, .max_down = 1, .describe = describe,
                                 .steps = chunk_steps, .uploaded = shared ? uploaded : NULL,
                                 .ended = shared ? ended : NULL, .user = &s->run, .ordered = 1,
                                 .after_caller = after, .caller_stream = caller};
    return tide_runner_start(s->runner, &s->pass);
}

int tide_gemm_streamed_start(tide_gemm_streamed *s, const tide_gemm_desc *run, int which,
                           tide_scalar alpha, const void *a, const void *b, tide_scalar beta,
                           void *c, void *caller, char *err, size_t len)
{
    s->started = 0;
    /* Another GPU's streams cannot wait for an event recorded on the caller's stream, so with
     * several GPUs the host waits for the caller's work before any of them starts. */
    if (s->n > 1 && tide_gpu_sync(caller))
        return snprintf(err, len, "could not wait for the caller's earlier CUDA work: %s",
                        tide_gpu_last_error()), TIDE_ERR_BACKEND;
    sharing *sh = &s->share;
    if (sh->on) { /* a new run: no block of A is ready */
        pthread_mutex_lock(&sh->lock);
        sh->gen++;
        sh->first_failed = -1;
        pthread_mutex_unlock(&sh->lock);
    }
    int st = TIDE_SUCCESS;
    for (int i = 0; i < s->n && !st; i++) {
        st = start_part(s->e[i], run, which, alpha, a, b, beta, c, caller, s->n == 1);
        if (st)
            snprintf(err, len, "could not start the multiply on GPU %d", s->e[i]->device);
        else
            s->started++;
    }
    if (st) {
        char why[TIDE_MSG_LEN];
        if (sh->on) /* the parts started wait for no block from those that did not */
            stop_sharing(s, s->started);
        tide_gemm_streamed_wait(s, why, sizeof why);
    }
    return st;
}

/* Waits for every part; the failure reported is that of the part whose run failed first (a
 * part waiting for a block of A that will not come fails after it). */
int tide_gemm_streamed_wait(tide_gemm_streamed *s, char *err, size_t len)
{
    int st = TIDE_SUCCESS, w[TIDE_GEMM_MAX_GPUS] = {0}, first = -1;
    char why[TIDE_GEMM_MAX_GPUS][TIDE_MSG_LEN];
    for (int i = 0; i < s->started; i++) {
        w[i] = tide_runner_wait(s->e[i]->runner, why[i], sizeof why[i]);
        /* the copies of A a failed run may have left in flight */
        if (s->share.on && tide_gpu_sync(s->e[i]->push) && !w[i])
            w[i] = TIDE_ERR_BACKEND, snprintf(why[i], sizeof why[i], "copying blocks of A to "
                                              "the other GPUs: %s", tide_gpu_last_error());
        if (w[i] && first < 0)
            first = i;
    }
    int f = s->share.on ? s->share.first_failed : -1;
    if (f >= 0 && f < s->started && w[f])
        first = f;
    if (first >= 0)
        st = w[first], snprintf(err, len, "GPU %d: %s", s->e[first]->device, why[first]);
    s->started = 0;
    return st;
}

int tide_gemm_streamed_execute(tide_gemm_streamed *s, tide_scalar alpha, const void *a,
                             const void *b, tide_scalar beta, void *c, void *caller, char *err,
                             size_t len)
{
    int st = tide_gemm_streamed_start(s, NULL, TIDE_GEMM_RUN_FIRST | TIDE_GEMM_RUN_LAST, alpha, a,
                                    b, beta, c, caller, err, len);
    return st ? st : tide_gemm_streamed_wait(s, err, len);
}
