/*
 * gemm_streamed_plan.c: the out-of-card multiply's plan (gemm_streamed.c runs it): among the
 * shapes of tiles and panels that fit the device budget, the one the model predicts ends
 * first with the PCIe and GEMM rates measured here (Wu 2014, chapter 5); the parts of C's
 * columns on several GPUs, their rates scaled to what host memory gives them together, and A
 * shared between them where the model predicts it faster; the queries.
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

/* ---- planning -------------------------------------------------------------------------- */

/* Bytes of each slot's buffers (op(A)'s panel and op(B)'s as stored, unless kept; a C tile)
 * and of the resident ones (the C tile, op(A) and op(B) whole when kept). */
static void buffer_bytes(const engine *s, const shape *h, double b[6])
{
    const tide_gemm_desc *g = &s->d.d;
    double e = (double)s->elem;
    b[BUF_A] = h->keep[0] ? 0 : e * (g->transa ? dev_ld(h->kb) * h->mb : dev_ld(h->mb) * h->kb);
    b[BUF_B] = h->keep[1] ? 0 : e * (g->transb ? dev_ld(h->nb) * h->kb : dev_ld(h->kb) * h->nb);
    b[BUF_C] = h->keep[2] ? 0 : e * dev_ld(h->mb) * h->nb;
    b[RES_C] = h->keep[2] ? e * dev_ld(g->m) * g->n : e * dev_ld(h->mb) * h->nb;
    b[RES_A] = !h->keep[0] ? 0 : e * (g->transa ? dev_ld(g->k) * g->m : dev_ld(g->m) * g->k);
    b[RES_B] = !h->keep[1] ? 0 : e * (g->transb ? dev_ld(g->n) * g->k : dev_ld(g->k) * g->n);
}

static size_t device_need(const engine *s, const shape *h)
{
    double b[6];
    buffer_bytes(s, h, b);
    double all = SLOTS * (b[BUF_A] + b[BUF_B] + b[BUF_C]) + b[RES_C] + b[RES_A] + b[RES_B];
    return all > 1e18 ? (size_t)-1 : (size_t)all;
}

/* Bytes moved up (C included: beta != 0) and down by `runs` runs whose k add up to k (one
 * planned multiply: its k, 1). A panel of op(A) goes up once per tile column (once when kept;
 * a share of it when A is kept and shared: the GPU uploads its blocks, the others copy them),
 * a panel of op(B) once per tile row, C's tiles up and down once per run (once when kept). */
static void traffic(const engine *s, const shape *h, double k, double runs, double *up,
                    double *down)
{
    const tide_gemm_desc *g = &s->d.d;
    double e = (double)s->elem, a = (double)g->m * k, b = k * (double)g->n;
    double cs = h->keep[2] ? 1 : runs;
    *up = e * ((h->keep[0] ? 1.0 / s->sharers : h->tn) * a + (h->keep[1] ? 1 : h->tm) * b +
               cs * (double)g->m * g->n);
    *down = e * cs * (double)g->m * g->n;
}

/* Seconds of the busiest resource over those runs: the GPU at `rate` flop/s, or PCIe up,
 * down, or both ways at once at `pcie` times the measured rates (GB/s). */
static double busiest(const engine *s, const shape *h, double k, double runs, double rate,
                      double pcie)
{
    const tide_gemm_desc *g = &s->d.d;
    const tide_rates *r = &s->rates;
    double up, down;
    traffic(s, h, k, runs, &up, &down);
    double t = tide_gemm_ops(g) * g->m * g->n * k / rate;
    t = fmax(t, up / (pcie * r->h2d * 1e9));
    t = fmax(t, down / (pcie * r->d2h * 1e9));
    return fmax(t, (up + down) / (pcie * r->both * 1e9));
}

/* The efficiency of multiplies on small blocks relative to a large one, x / (x + 128) for
 * each dimension x of a chunk's multiply (near what cuBLAS shows on Hopper): used only to rank
 * shapes before their rates are measured. */
static double small_blocks(const shape *h)
{
    return (double)h->mb / (h->mb + 128) * ((double)h->nb / (h->nb + 128)) *
           ((double)h->kb / (h->kb + 128));
}

/* The model a shape is chosen by, over the plan's sequence of R runs (d.runs) of the planned
 * k each, with chunk multiplies at `rate` flop/s: the busiest resource, PCIe counted at 90% of
 * its measured rates (a transfer stream that must keep up with the multiplies all run long
 * falls behind at 100%: measured, a shape whose uploads equal its multiplies ran 14% slower
 * than one with 15% to spare); plus what cannot overlap, in each run: the first chunk's
 * uploads (its panels, and its C tile unless C is kept) and the last tile's download (unless
 * C is kept); plus, per tile, the part of its first chunk's uploads that the SLOTS - 1
 * multiplies before it cannot hide (uploads run at most that far ahead); plus 10 us per
 * chunk; plus 2% of the PCIe time, so that of two shapes the multiplies bound alike the one
 * that moves less wins. */
static double predict(const engine *s, const shape *h, double rate)
{
    double e = (double)s->elem, tile = e * (double)h->mb * h->nb, bytes_up, bytes_down;
    double R = s->d.runs > 1 ? s->d.runs : 1, k = (double)s->d.d.k * R, tiles = R;
    if (h->keep[2])
        tiles = 1;
    double panels = e * (double)h->kb * (h->mb + h->nb) / (s->rates.h2d * 1e9);
    double up = panels + tile / (s->rates.h2d * 1e9), down = tile / (s->rates.d2h * 1e9);
    double chunk = tide_gemm_ops(&s->d.d) * h->mb * h->nb * h->kb / rate;
    double stall = fmax(0, up - (SLOTS - 1) * chunk) * h->tm * h->tn * R;
    traffic(s, h, k, R, &bytes_up, &bytes_down);
    return busiest(s, h, k, R, rate, 0.9) + R * panels + tiles * (up - panels + down) + stall +
           1e-5 * h->tm * h->tn * h->np * R +
           0.02 * (bytes_up + bytes_down) / (s->rates.both * 1e9);
}

/* Candidate block sizes along an extent n: for about 2^(i/4) blocks, their balanced size
 * rounded up to a multiple of 1024 (from 4096 on), 256 (from 1024) or 32, and n whole; *count
 * of them (at most 64). Aligned blocks keep cuBLAS on its full-size thread-block tiles:
 * measured on one H200, tiles of 6554 x 8192 ran 11% slower, over a whole multiply, than
 * tiles of 8192 x 8192 (short timings of single chunks did not show it). */
static int candidates(long long n, long long fixed, long long out[64])
{
    if (fixed)
        return out[0] = fixed < n ? fixed : n, 1;
    int c = 0;
    for (double t = 1; c < 63 && ceil(t) <= n; t *= 1.189207115) { /* 2^(1/4) */
        long long b = ceil_div(n, (long long)ceil(t)), a = b >= 4096 ? 1024 : b >= 1024 ? 256
                                                                                        : 32;
        b = ceil_div(b, a) * a;
        if (b < 16)
            break;
        if (b < n && (c == 0 || b != out[c - 1]))
            out[c++] = b;
    }
    out[c++] = n;
    return c;
}

/* keep: bit x set keeps operand x (0 A, 1 B, 2 C) */
static shape make_shape(const tide_gemm_desc *g, long long mb, long long nb, long long kb,
                        int keep)
{
    return (shape){mb, nb, kb, (int)ceil_div(g->m, mb), (int)ceil_div(g->n, nb),
                   (int)ceil_div(at_least_1(g->k), kb), {keep & 1, keep >> 1 & 1, keep >> 2}};
}

static int same_shape(const shape *a, const shape *b)
{
    return a->mb == b->mb && a->nb == b->nb && a->kb == b->kb &&
           !memcmp(a->keep, b->keep, sizeof a->keep);
}

/* Puts shape h predicted at v among the finalists fin[0..*n) (best first, at most FINALISTS,
 * no shape twice: candidate sizes that balance to the same blocks make the same shape). */
static void keep_finalist(shape *fin, double *t, int *n, const shape *h, double v)
{
    int at = 0;
    while (at < *n && !same_shape(&fin[at], h))
        at++;
    if (at < *n)
        return;
    at = *n < FINALISTS ? (*n)++ : FINALISTS;
    for (; at > 0 && t[at - 1] > v; at--)
        if (at < FINALISTS)
            fin[at] = fin[at - 1], t[at] = t[at - 1];
    if (at < FINALISTS)
        fin[at] = *h, t[at] = v;
}

/* The FINALISTS shapes that fit the budget and are predicted to end first at `rate` (scaled
 * by small_blocks), best first, in fin[0..*n). */
static void rank_shapes(const engine *s, double rate, shape *fin, double *t, int *n)
{
    const tide_gemm_desc *g = &s->d.d;
    long long cm[64], cn[64], ck[64];
    int nm = candidates(g->m, s->d.tile, cm), nn = candidates(g->n, s->d.tile, cn);
    int nk = candidates(at_least_1(g->k), s->d.panel, ck);
    *n = 0;
    for (int keep = 0; keep < (s->d.runs > 1 ? 8 : 4); keep++)
        for (int a = 0; a < nm; a++)
            for (int b = 0; b < nn; b++)
                for (int c = 0; c < nk; c++) {
                    shape h = make_shape(g, cm[a], cn[b], ck[c], keep);
                    if ((double)h.tm * h.tn * h.np > MAX_CHUNKS ||
                        device_need(s, &h) > s->d.budget)
                        continue;
                    keep_finalist(fin, t, n, &h, predict(s, &h, rate * small_blocks(&h)));
                }
}

static int measure_gemm(engine *s, const tide_gemm_desc *c, double *rate, char *err,
                        size_t len);
static int measure_chunk(engine *s, const tide_gemm_desc *c, double *rate, char *err,
                         size_t len);

/* The multiply of a chunk of shape h as it runs: the largest blocks, transposed as the plan's,
 * with the leading dimensions they have on the device (a kept operand's: its whole matrix's). */
static tide_gemm_desc chunk_desc(const engine *s, const shape *h)
{
    const tide_gemm_desc *g = &s->d.d;
    long long q[6] = {0, h->mb, 0, h->nb, 0, at_least_1(h->kb)}, ld[2];
    for (int x = 0; x < 2; x++) {
        stored b = operand(g, x, q);
        ld[x] = dev_ld(h->keep[x] ? b.rows : b.r1 - b.r0);
    }
    tide_gemm_desc c = *g;
    c.m = h->mb, c.n = h->nb, c.k = q[5], c.lda = ld[0], c.ldb = ld[1], c.ldc = dev_ld(h->mb);
    return c;
}

/* The shape that fits the budget and is predicted to end first: the finalists of the model
 * with the probe's rate, each then predicted again at the rate measured for its own chunk
 * multiply; *predicted: its time. */
static int choose(engine *s, double probe, double *predicted, char *err, size_t len)
{
    shape fin[FINALISTS];
    double t[FINALISTS], best = INFINITY;
    int n, st = TIDE_SUCCESS;
    rank_shapes(s, probe, fin, t, &n);
    for (int i = 0; i < n && !st; i++) {
        double rate;
        tide_gemm_desc c = chunk_desc(s, &fin[i]);
        st = measure_chunk(s, &c, &rate, err, len);
        double v = st ? INFINITY : predict(s, &fin[i], rate);
        tide_log(s->d.env->ctx, TIDE_LOG_DEBUG, "gemm: tiles %lldx%lld, panels %lld, kept "
                 "%d%d%d: %.4g TFLOP/s, predicted %.4g s (%.4g s at the probe's rate)",
                 fin[i].mb, fin[i].nb, fin[i].kb, fin[i].keep[0], fin[i].keep[1],
                 fin[i].keep[2], rate * 1e-12, v, t[i]);
        if (v < best)
            best = v, s->sh = fin[i], s->rate_gemm = rate;
    }
    *predicted = best;
    if (st || n > 0)
        return st;
    if (s->d.tile || s->d.panel)
        return snprintf(err, len, "tiles of %d and panels of %d need more than the device "
                        "budget of %zu bytes or more than %d chunks", s->d.tile, s->d.panel,
                        s->d.budget, MAX_CHUNKS), TIDE_ERR_NOMEM;
    return snprintf(err, len, "the device budget of %zu bytes is too small for the smallest "
                    "tiles (32 x 32 and panels of 32, or the whole matrix where smaller)",
                    s->d.budget), TIDE_ERR_NOMEM;
}

/* The device's rate (flop/s) for the multiply c on the plan's stream: the best of three after
 * a warm-up, on device buffers made for it (contents irrelevant: the rate of the GEMM does not
 * depend on them). */
static int measure_gemm(engine *s, const tide_gemm_desc *c, double *rate, char *err,
                        size_t len)
{
    const tide_env *e = s->d.env;
    long long acols = c->transa ? c->m : c->k, bcols = c->transb ? c->k : c->n;
    void *a = NULL, *b = NULL, *cc = NULL;
    int st = e->be->alloc(s->elem * (size_t)(c->lda * acols), &a);
    st = st ? st : e->be->alloc(s->elem * (size_t)(c->ldb * bcols), &b);
    st = st ? st : e->be->alloc(s->elem * (size_t)(c->ldc * c->n), &cc);
    double best = INFINITY;
    for (int rep = 0; rep < 4 && !st; rep++) {
        double t0 = MPI_Wtime();
        st = e->be->gemm(e, s->d.blas, c, tide_scalar_real(1), a, b, tide_scalar_real(0), cc);
        st = st ? st : e->be->sync(e);
        double t = MPI_Wtime() - t0;
        if (rep && t < best)
            best = t;
    }
    e->be->free(a);
    e->be->free(b);
    e->be->free(cc);
    if (st)
        return snprintf(err, len, "timing a %lldx%lldx%lld multiply on the device failed: %s",
                        c->m, c->n, c->k, e->be->last_error()), st;
    *rate = tide_gemm_ops(c) * c->m * c->n * c->k / best;
    return TIDE_SUCCESS;
}

/* The rate of chunk multiply c, measured once per plan: the candidates with A shared and
 * without are mostly the same shapes. */
static int measure_chunk(engine *s, const tide_gemm_desc *c, double *rate, char *err,
                         size_t len)
{
    for (int i = 0; i < s->ntimed; i++) {
        const tide_gemm_desc *t = &s->timed[i];
        if (t->dbl == c->dbl && t->cplx == c->cplx && t->transa == c->transa &&
            t->transb == c->transb &&
            t->m == c->m && t->n == c->n && t->k == c->k && t->lda == c->lda &&
            t->ldb == c->ldb && t->ldc == c->ldc) {
            *rate = s->timed_rate[i];
            return TIDE_SUCCESS;
        }
    }
    int st = measure_gemm(s, c, rate, err, len);
    if (!st && s->ntimed < 2 * FINALISTS)
        s->timed[s->ntimed] = *c, s->timed_rate[s->ntimed++] = *rate;
    return st;
}

/* A probe multiply no larger than PROBE along any dimension nor than a third of the budget. */
static long long probe_size(const engine *s, long long n)
{
    long long q = (long long)sqrt((double)s->d.budget / 3.0 / (double)s->elem);
    q = q < PROBE ? q : PROBE;
    q = q < n ? q : n;
    return at_least_1(q);
}

static int make_runner(engine *s, char *err, size_t len)
{
    double b[6];
    buffer_bytes(s, &s->sh, b);
    size_t buf[6];
    for (int i = 0; i < 6; i++) /* an unused buffer of one byte keeps the numbering */
        buf[i] = b[i] > 0 ? (size_t)b[i] : 1;
    /* pageable matrices: a chunk's uploads packed densely (a kept operand's block is as large
     * as a panel, though it lands in a resident buffer) */
    const shape *h = &s->sh;
    size_t stage = s->elem * (size_t)((s->sharers > 1 ? 2 : 1) * h->mb * h->kb + h->kb * h->nb +
                                      h->mb * h->nb); /* A shared: two of its blocks (a_row) */
    tide_runner_desc rd = {.env = s->d.env, .slots = SLOTS, .nbufs = 3, .buf_bytes = buf,
                           .nresident = 3, .resident_bytes = buf + RES_C, .stage_bytes = stage,
                           .max_steps = NOPS};
    return tide_runner_create(&rd, &s->runner, err, len);
}

/* Part s's chunk ops (gemm_engine.h), costed at its largest chunk. */
static void make_ops(engine *s)
{
    tide_gemm_desc c = chunk_desc(s, &s->sh);
    size_t most = s->elem * (size_t)(dev_ld(s->sh.mb) * s->sh.nb);
    tide_op *o = s->ops;
    o[OP_LOAD] = (tide_op){.src = 0, .dst = 1};
    tide_op_copy(&o[OP_LOAD], &s->run.tile, most);
    o[OP_UPDATE] = (tide_op){.src = 1, .dst = 1};
    tide_op_gemm(&o[OP_UPDATE], s->d.blas, &c, &s->run.bound);
    o[OP_STORE] = (tide_op){.src = 1, .dst = 0};
    tide_op_copy(&o[OP_STORE], &s->run.tile, most);
}

/* Part s's runner and ops, made on its GPU once make_sharing has decided (a second staged
 * block of A only where A is shared). */
static int part_runner(engine *s, char *err, size_t len)
{
    int prev;
    if (tide_gpu_device_enter(s->device, &prev))
        return snprintf(err, len, "could not make GPU %d current: %s", s->device,
                        tide_gpu_last_error()), TIDE_ERR_BACKEND;
    make_ops(s);
    int st = make_runner(s, err, len);
    tide_gpu_device_leave(prev);
    return st;
}

static void destroy_part(engine *s)
{
    if (!s)
        return;
    int prev = -1, entered = tide_gpu_device_enter(s->device, &prev) == 0;
    if (s->push) {
        tide_gpu_sync(s->push);
        tide_gpu_stream_destroy(s->push);
    }
    for (int b = 0; s->pushed && b < s->all->share.nblocks; b++)
        tide_gpu_event_destroy(s->pushed[b]);
    free(s->pushed);
    tide_runner_destroy(s->runner);
    if (s->blas)
        s->env.be->gemm_destroy(s->blas);
    if (s->env.stream)
        s->env.be->stream_destroy(s->env.stream);
    if (entered)
        tide_gpu_device_leave(prev);
    free(s);
}

/* The GPU of the plan's context: its stream, handle and rates (measured once per context). A
 * GPU of its own: its stream and handle, its rates measured now, and the plan's budget or, if
 * smaller, what the GPU has free less 1 GiB. The PCIe rates are then scaled to what the GPU gets
 * with the others copying too (tide_gemm_streamed.pcie). The GPU is current. */
static int own_gpu(engine *s, char *err, size_t len)
{
    const tide_env *e = s->d.env;
    int st;
    if (s->device == e->ctx->dev.device) {
        st = tide_context_pcie(e->ctx, &s->rates, err, len);
    } else {
        s->env = *e;
        s->env.stream = NULL;
        s->d.env = &s->env;
        if (e->be->stream_create(&s->env.stream, 0) || e->be->gemm_create(&s->blas))
            return snprintf(err, len, "GPU %d: %s", s->device, e->be->last_error()),
                   TIDE_ERR_BACKEND;
        s->d.blas = s->blas;
        tide_gpu_props p;
        const size_t margin = (size_t)1 << 30;
        if (tide_gpu_properties(s->device, &p) == 0 && p.free_bytes) {
            size_t avail = p.free_bytes > margin ? p.free_bytes - margin : p.free_bytes / 2;
            s->d.budget = avail < s->d.budget ? avail : s->d.budget;
        }
        st = tide_gpu_measure((size_t)64 << 20, NULL, NULL, &s->rates, err, len);
    }
    s->rates.h2d *= s->all->pcie[0];
    s->rates.d2h *= s->all->pcie[1];
    s->rates.both *= s->all->pcie[2];
    return st;
}

/* The shape of a part that chooses its own, and, for part 0 when the GPUs reach each other
 * (s->sharers > 1), whether A is shared (s->sharers left so) or not (set to 1): the best shape
 * with A shared and the best without, sharing kept when the caller asks for it (share_a 1)
 * or when the model predicts it at least 2% faster. A shared ties the GPUs' progress to each
 * other's (a part waits for blocks of A from the others): on two H200, where PCIe kept up
 * without it, it cost 5%. */
static int choose_sharing(engine *s, double probe, char *err, size_t len)
{
    double shared, alone;
    int n = s->sharers;
    int st = choose(s, probe, &shared, err, len);
    if (st || n == 1 || s->d.share_a > 0)
        return st;
    shape h = s->sh;
    double rate = s->rate_gemm;
    s->sharers = 1;
    st = choose(s, probe, &alone, err, len);
    if (!st && shared < 0.98 * alone)
        s->sharers = n, s->sh = h, s->rate_gemm = rate;
    tide_log(s->d.env->ctx, TIDE_LOG_DEBUG, "gemm: predicted %.4g s with A shared among %d "
             "GPUs, %.4g s without: %s", shared, n, alone, s->sharers > 1 ? "shared" : "not");
    return st;
}

/* Part 0's tiles, panels and kept operands for part s (its tiles no wider than its columns),
 * so that the parts' blocks of A match; 0 when they do not fit its budget. */
static int adopt(engine *s, const engine *lead)
{
    const shape *l = &lead->sh;
    long long nb = l->nb < s->d.d.n ? l->nb : at_least_1(s->d.d.n);
    shape h = make_shape(&s->d.d, l->mb, nb, l->kb, l->keep[0] | l->keep[1] << 1 |
                         l->keep[2] << 2);
    if ((double)h.tm * h.tn * h.np > MAX_CHUNKS || device_need(s, &h) > s->d.budget)
        return 0;
    s->sh = h;
    return 1;
}

/* GPU part `index` (of the parts of `all`), columns c0..c1 of C on device dev: rates and the
 * shape (part 0's when lead is part 0 and it fits, else its own); its pipeline comes later
 * (part_runner). The model spreads A's uploads over `sharers` GPUs. */
static int make_part(const tide_gemm_streamed_desc *d, gemm_stream *all, int index, int sharers,
                     int dev, long long c0, long long c1, char *err, size_t len)
{
    engine *s = calloc(1, sizeof *s);
    if (!s)
        return snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM;
    all->e[index] = s;
    s->all = all;
    s->index = index;
    s->sharers = sharers;
    s->d = *d;
    s->d.d.n = c1 - c0;
    s->device = dev;
    s->col0 = c0;
    s->elem = tide_gemm_elem(&d->d);
    int prev;
    if (tide_gpu_device_enter(dev, &prev))
        return snprintf(err, len, "could not make GPU %d current: %s", dev,
                        tide_gpu_last_error()), TIDE_ERR_BACKEND;
    const tide_gemm_desc *g = &s->d.d;
    int st = own_gpu(s, err, len);
    if (!st && index > 0 && adopt(s, all->e[0])) {
        tide_gemm_desc c = chunk_desc(s, &s->sh);
        st = measure_gemm(s, &c, &s->rate_gemm, err, len);
    } else if (!st) {
        double probe = 0;
        long long pm = probe_size(s, g->m), pn = probe_size(s, g->n), pk = probe_size(s, g->k);
        tide_gemm_desc pc = {g->dbl, g->cplx, 0, 0, pm, pn, pk, dev_ld(pm), dev_ld(pk),
                             dev_ld(pm)};
        st = measure_gemm(s, &pc, &probe, err, len);
        if (!st)
            st = choose_sharing(s, probe, err, len);
    }
    tide_gpu_device_leave(prev);
    return st;
}

/* The share of their PCIe rates alone (the plan's GPU's, times n) that host memory gives n GPUs
 * copying at once, each direction and both, at most 1. */
static int together(const tide_gemm_streamed_desc *d, int n, double scale[3], char *err,
                    size_t len)
{
    tide_rates alone, all;
    char why[TIDE_MSG_LEN];
    int st = tide_context_pcie(d->env->ctx, &alone, err, len);
    if (!st && tide_gpu_measure_gpus(d->devices, n, (size_t)64 << 20, &all, why, sizeof why)) {
        tide_log(d->env->ctx, TIDE_LOG_WARN, "gemm: the GPUs' PCIe rates together were not "
                 "measured (%s): the model takes each GPU's alone", why);
        all.h2d = n * alone.h2d, all.d2h = n * alone.d2h, all.both = n * alone.both;
    }
    if (st)
        return st;
    scale[0] = fmin(1, all.h2d / (n * alone.h2d));
    scale[1] = fmin(1, all.d2h / (n * alone.d2h));
    scale[2] = fmin(1, all.both / (n * alone.both));
    tide_log(d->env->ctx, TIDE_LOG_DEBUG, "gemm: %d GPUs copying at once: %.4g GB/s up, %.4g "
             "down, %.4g both ways in all (%.3g, %.3g, %.3g of %d times one GPU's alone)", n,
             all.h2d, all.d2h, all.both, scale[0], scale[1], scale[2], n);
    return TIDE_SUCCESS;
}

/* Whether the n GPUs devices[] can reach each other's memory directly; with enable, also
 * enables it (only once A is shared: make_sharing). */
static int peers_reach(const int *devices, int n, int enable)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (i != j && tide_gpu_peer(devices[i], devices[j], enable))
                return 0;
    return 1;
}

/* A is shared when the model spread it over the parts (their GPUs reach each other) and every
 * part keeps it whole, with part 0's tile rows and panels: then each part gets its push stream
 * and an event per block it owns. */
static int make_sharing(gemm_stream *s, char *err, size_t len)
{
    const shape *h0 = &s->e[0]->sh;
    sharing *sh = &s->share;
    int on = h0->keep[0] && (long long)h0->tm * h0->np <= MAX_BLOCKS;
    /* every part planned for it, and the GPUs enabled to reach each other */
    for (int i = 0; i < s->n && on; i++)
        on = s->e[i]->sharers > 1 && s->e[i]->sh.keep[0] && s->e[i]->sh.mb == h0->mb &&
             s->e[i]->sh.kb == h0->kb;
    on = on && peers_reach(s->e[0]->d.devices, s->n, 1);
    tide_log(s->e[0]->d.env->ctx, TIDE_LOG_DEBUG, "gemm: A %s", on ? "uploaded once, its blocks "
             "copied between the GPUs" : "uploaded by every GPU");
    if (!on) {
        for (int i = 0; i < s->n; i++)
            s->e[i]->sharers = 1;
        return TIDE_SUCCESS;
    }
    sh->nblocks = h0->tm * h0->np;
    sh->ready = calloc((size_t)sh->nblocks, sizeof *sh->ready);
    if (!sh->ready)
        return snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM;
    pthread_mutex_init(&sh->lock, NULL);
    pthread_cond_init(&sh->cond, NULL);
    int st = TIDE_SUCCESS;
    for (int i = 0; i < s->n && !st; i++) {
        engine *e = s->e[i];
        int prev;
        if (tide_gpu_device_enter(e->device, &prev))
            return snprintf(err, len, "could not make GPU %d current: %s", e->device,
                            tide_gpu_last_error()), TIDE_ERR_BACKEND;
        e->pushed = calloc((size_t)sh->nblocks, sizeof *e->pushed);
        st = e->pushed ? tide_gpu_stream_create(&e->push, 0) : TIDE_ERR_NOMEM;
        for (int b = i; b < sh->nblocks && !st; b += s->n)
            st = tide_gpu_event_create(&e->pushed[b]);
        if (st)
            snprintf(err, len, "GPU %d: %s", e->device,
                     st == TIDE_ERR_NOMEM ? "out of memory" : tide_gpu_last_error());
        tide_gpu_device_leave(prev);
    }
    sh->on = !st;
    return st;
}

int tide_gemm_streamed_create(const tide_gemm_streamed_desc *d, tide_gemm_streamed **out, char *err,
                            size_t len)
{
    *out = NULL;
    tide_gemm_streamed *s = calloc(1, sizeof *s);
    if (!s)
        return snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM;
    /* C's columns in equal parts, one per GPU, aligned as tiles are (candidates()) */
    long long n = d->d.n, w = ceil_div(n, d->ngpus);
    w = w >= 4096 ? ceil_div(w, 1024) * 1024 : w >= 1024 ? ceil_div(w, 256) * 256 : w;
    int parts = (int)ceil_div(at_least_1(n), at_least_1(w));
    int sharers = parts > 1 && d->share_a >= 0 && peers_reach(d->devices, parts, 0) ? parts : 1;
    int st = parts > 1 ? together(d, parts, s->pcie, err, len) : TIDE_SUCCESS;
    if (parts == 1)
        s->pcie[0] = s->pcie[1] = s->pcie[2] = 1;
    for (long long c0 = 0; c0 < n && !st; c0 += w) {
        int i = s->n++;
        st = make_part(d, s, i, i ? s->e[0]->sharers : sharers, d->devices[i], c0,
                       c0 + w < n ? c0 + w : n, err, len);
    }
    if (!st && s->n > 1)
        st = make_sharing(s, err, len);
    for (int i = 0; i < s->n && !st; i++)
        st = part_runner(s->e[i], err, len);
    if (st) {
        tide_gemm_streamed_destroy(s);
        return st;
    }
    *out = s;
    return TIDE_SUCCESS;
}

void tide_gemm_streamed_destroy(tide_gemm_streamed *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++)
        destroy_part(s->e[i]);
    if (s->share.ready) {
        pthread_mutex_destroy(&s->share.lock);
        pthread_cond_destroy(&s->share.cond);
    }
    free(s->share.ready);
    free(s);
}

/* The parts' figures: the first part's shape and rates; tiles, bytes and memory summed; the
 * GEMM rate summed (the GPUs run at once); the bound, the slowest part's (each part's PCIe
 * rates scaled to what the GPUs reached copying together: together()). */
void tide_gemm_streamed_info(const tide_gemm_streamed *s, long long k, int runs,
                           tide_gemm_info *info)
{
    const engine *e0 = s->e[0];
    const shape *h = &e0->sh;
    info->gpus = s->n;
    info->shared_a = s->share.on;
    info->tile_m = h->mb;
    info->tile_n = h->nb;
    info->panel = h->kb;
    info->panels = h->np;
    info->slots = SLOTS;
    info->rate_up = e0->rates.h2d;
    info->rate_down = e0->rates.d2h;
    info->rate_both = e0->rates.both;
    for (int i = 0; i < s->n; i++) {
        const engine *e = s->e[i];
        double up, down;
        traffic(e, &e->sh, (double)k, runs, &up, &down);
        info->tiles += e->sh.tm * e->sh.tn;
        info->bytes_up += up;
        info->bytes_down += down;
        info->rate_gemm += e->rate_gemm / 1e9;
        info->bound = fmax(info->bound, busiest(e, &e->sh, (double)k, runs, e->rate_gemm, 1));
        info->device_bytes += tide_runner_device_bytes(e->runner);
        info->pinned_bytes += tide_runner_pinned_bytes(e->runner);
    }
}

void tide_gemm_streamed_describe(const tide_gemm_streamed *s, char *buf, size_t len)
{
    const shape *h = &s->e[0]->sh;
    static const char *const kept[] = {"", ", A kept", ", B kept", ", A and B kept"};
    char gpus[64] = "";
    if (s->n > 1)
        snprintf(gpus, sizeof gpus, "%d GPUs, the first: ", s->n);
    snprintf(buf, len, "%s%d tile%s of %lldx%lld, %d panel%s of %lld%s%s%s, %d slots", gpus,
             h->tm * h->tn, h->tm * h->tn > 1 ? "s" : "", h->mb, h->nb, h->np,
             h->np > 1 ? "s" : "", h->kb, kept[h->keep[0] + 2 * h->keep[1]],
             s->share.on ? " (A shared between the GPUs)" : "",
             h->keep[2] ? ", C kept across the runs" : "", SLOTS);
}
