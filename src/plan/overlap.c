/* overlap.c: a reshape and its neighbouring FFT in chunks on two streams (see overlap.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "comm/region.h"
#include "comm/reshape.h"
#include "backend/memory.h"
#include "plan/overlap.h"

enum { OVERLAP_MAX_CHUNKS = 64 };
/* The debug log's timeline (GPU, TIDE_LOG=debug): a mark at the op's start, and per chunk
 * six, around its FFT and its landing on the plan's stream and its exchange on the side
 * stream. */
enum { MARK_FFT, MARK_FFT_END, MARK_MOVE, MARK_MOVE_END, MARK_LAND, MARK_LAND_END,
       MARKS_PER_CHUNK };

typedef struct {
    int chunks, fft_first, mid;
    int align;                              /* chunk boundaries lie this many points apart */
    void *const *w;
    void *fft[OVERLAP_MAX_CHUNKS];          /* chunk c's FFT plan (NULL: no points here) */
    size_t fin[OVERLAP_MAX_CHUNKS];         /* ... its first point's byte in the FFT's input */
    size_t fout[OVERLAP_MAX_CHUNKS];        /* ... and output arrays */
    tide_reshape *move[OVERLAP_MAX_CHUNKS]; /* chunk c's part of the reshape, on `side` */
    void *side;                             /* GPU: the exchanges' stream (NULL: the CPU) */
    void *to_side, *to_main;                /* GPU: events ordering the two streams */
    size_t half;                            /* GPU: bytes of each half of the receive staging,
                                             * which chunks c and c + 1 share out */
    void *landed[2];                        /* GPU: half c % 2 free again: chunk c landed */
    int into;                               /* the location the chunks' reshapes land in */
    tide_op_cost fft_cost, move_cost;
    int marks;                              /* 1: the timeline below is kept */
    void *mark[1 + MARKS_PER_CHUNK * OVERLAP_MAX_CHUNKS];
} overlap_state;

int tide_overlap_cut(const tide_cpu_fft_desc *fft, const int order[3], int gpu)
{
    int real = fft->kind == TIDE_KIND_R2C || fft->kind == TIDE_KIND_C2R;
    if (real && gpu && fft->batch > 1)
        return -1;
    for (int i = 0; i < 3; i++) {
        int d = order[i], done = 0;
        for (int k = 0; k < fft->ndims; k++)
            done = done || fft->dims[k] == d;
        if (!done)
            return d;
    }
    return -1;
}

/* Chunk c of s's chunks of box b along dimension d: the c-th of nearly equal slices, each
 * boundary inside b a multiple of s->align points from b's first. */
static tide_box chunk_of(const overlap_state *s, const tide_box *b, int d, int c)
{
    tide_box k = *b;
    int64_t n = tide_ext(b, d), a = s->align;
    int64_t lo = n * c / s->chunks / a * a, hi = n * (c + 1) / s->chunks / a * a;
    k.lo[d] = b->lo[d] + (int)lo;
    k.hi[d] = c + 1 == s->chunks ? b->hi[d] : b->lo[d] + (int)hi;
    return k;
}

static void *at(void *base, size_t bytes) { return base ? (char *)base + bytes : NULL; }

/* The array between the two steps, from its location. */
static void *mid_array(const overlap_state *s, int src_loc, int dst_loc, void *src, void *dst)
{
    if (s->mid == src_loc)
        return src;
    if (s->mid == dst_loc)
        return dst;
    return s->w[s->mid - TIDE_LOC_W0];
}

/* Mark k of chunk c (or the start, c < 0) on stream, where the timeline is kept. */
static void mark(const overlap_state *s, int c, int k, void *stream)
{
    if (s->marks)
        tide_gpu_event_record(s->mark[c < 0 ? 0 : 1 + MARKS_PER_CHUNK * c + k], stream);
}

static int run_fft(const overlap_state *s, const tide_env *e, int c, void *in, void *out)
{
    mark(s, c, MARK_FFT, e->stream);
    int st = !s->fft[c] || e->failed ? TIDE_SUCCESS
             : e->be->fft_execute(e, s->fft[c], at(in, s->fin[c]), at(out, s->fout[c]));
    mark(s, c, MARK_FFT_END, e->stream);
    return st;
}

/* Chunk c's half of the receive staging (GPU). */
static tide_env with_staging(const overlap_state *s, const tide_env *e, int c)
{
    tide_env h = *e;
    h.recvbuf = at(e->recvbuf, (size_t)(c & 1) * s->half);
    return h;
}

/* Chunk c's exchange on the side stream (every rank takes part, whatever failed before). On
 * the GPU it stops once the data travels, its half of the staging free again (chunk c - 2
 * landed), and run_land finishes it on the plan's stream: the side stream carries nothing
 * but the transfers. */
static int run_move(const overlap_state *s, const tide_env *e, int c, const void *src,
                    void *dst)
{
    if (!s->side)
        return e->be->reshape_execute(e, s->move[c], src, dst, 0);
    tide_env side = with_staging(s, e, c);
    side.stream = s->side;
    int st = c >= 2 ? tide_gpu_stream_wait(s->side, s->landed[c & 1]) : TIDE_SUCCESS;
    mark(s, c, MARK_MOVE, side.stream);
    int x = e->be->reshape_execute(&side, s->move[c], src, dst,
                                   TIDE_RESHAPE_DEFER | tide_reshape_flags(e, s->into));
    mark(s, c, MARK_MOVE_END, side.stream);
    return st ? st : x;
}

/* Chunk c's landing on the plan's stream (GPU; status: its exchange's): the points kept
 * copied and what arrived unpacked, once it has arrived; then its half of the staging is
 * free. */
static int run_land(const overlap_state *s, const tide_env *e, int c, const void *src,
                    void *dst, int status)
{
    if (!s->side)
        return status;
    tide_env h = with_staging(s, e, c);
    mark(s, c, MARK_LAND, e->stream);
    int st = e->be->reshape_land(&h, s->move[c], src, dst, status);
    mark(s, c, MARK_LAND_END, e->stream);
    int r = tide_gpu_event_record(s->landed[c & 1], e->stream);
    return st ? st : r;
}

/* The timeline of the execution just queued, in the debug log: when each chunk's FFT and
 * exchange ran, in ms from the op's start (waits for the op's end). */
static void log_timeline(const tide_op *op, const tide_env *e)
{
    const overlap_state *s = op->state;
    char line[2048] = "";
    size_t at = 0;
    float fft = 0, move = 0, land = 0, end = 0;
    for (int c = 0; c < s->chunks; c++) {
        float t[MARKS_PER_CHUNK] = {0};
        for (int k = 0; k < MARKS_PER_CHUNK; k++)
            tide_gpu_timer_ms(s->mark[0], s->mark[1 + MARKS_PER_CHUNK * c + k], &t[k]);
        fft += t[MARK_FFT_END] - t[MARK_FFT];
        move += t[MARK_MOVE_END] - t[MARK_MOVE];
        land += t[MARK_LAND_END] - t[MARK_LAND];
        for (int k = MARK_FFT_END; k < MARKS_PER_CHUNK; k += 2)
            end = t[k] > end ? t[k] : end;
        if (at < sizeof line)
            at += (size_t)snprintf(line + at, sizeof line - at, " %d: fft %.2f-%.2f move "
                                   "%.2f-%.2f land %.2f-%.2f;", c, t[MARK_FFT], t[MARK_FFT_END],
                                   t[MARK_MOVE], t[MARK_MOVE_END], t[MARK_LAND],
                                   t[MARK_LAND_END]);
    }
    tide_log(e->ctx, TIDE_LOG_DEBUG, "%s: %.3f ms; FFTs %.3f ms, exchanges %.3f ms, landings "
             "%.3f ms; chunk (ms from the start):%s", op->what, end, fft, move, land, line);
}

/* FFT first: chunk c's FFT on the plan's stream, then its exchange on the side stream once
 * that FFT is done, while the FFT of chunk c + 1 runs, and then (GPU) chunk c's landing on the
 * plan's stream. Exchange first: chunk c travels on the side stream, lands, and its FFT runs
 * on the plan's stream while chunk c + 1 travels. When the op's source and destination are
 * one array (a caller's in-place call, or a placement that returns to the buffer the op
 * started from), the second step may not write it before the first has read all of it: every
 * chunk's first step comes first. The plan's stream waits for the side stream at the end, so
 * the op ends as one op on it would. */
static int overlap_execute(const tide_op *op, const tide_env *e, void *src, void *dst)
{
    const overlap_state *s = op->state;
    void *mid = mid_array(s, op->src, op->dst, src, dst);
    int st = TIDE_SUCCESS, n = s->chunks, one_array = src == dst, moved = TIDE_SUCCESS;
    mark(s, -1, 0, e->stream);
    if (s->fft_first) {
        for (int c = 0; c < n && one_array; c++)
            st = st ? st : run_fft(s, e, c, src, mid);
        for (int c = 0; c < n; c++) {
            if (!one_array)
                st = st ? st : run_fft(s, e, c, src, mid);
            int o = tide_order_after(s->to_side, e->stream, s->side);
            int x = run_move(s, e, c, mid, dst);
            int l = c ? run_land(s, e, c - 1, mid, dst, moved) : TIDE_SUCCESS;
            moved = x;
            st = st ? st : o ? o : x ? x : l;
        }
        int l = run_land(s, e, n - 1, mid, dst, moved);
        st = st ? st : l;
    } else {
        st = tide_order_after(s->to_side, e->stream, s->side);
        for (int c = 0; c < n; c++) {
            int x = run_move(s, e, c, src, mid);
            int l = run_land(s, e, c, src, mid, x);
            int o = one_array || s->side ? TIDE_SUCCESS
                                         : tide_order_after(s->to_main, s->side, e->stream);
            st = st ? st : x ? x : l ? l : o;
            if (!one_array)
                st = st ? st : run_fft(s, e, c, mid, dst);
        }
        int o = one_array ? tide_order_after(s->to_main, s->side, e->stream) : TIDE_SUCCESS;
        st = st ? st : o;
        for (int c = 0; c < n && one_array; c++)
            st = st ? st : run_fft(s, e, c, mid, dst);
    }
    int o = tide_order_after(s->to_main, s->side, e->stream);
    if (s->marks)
        log_timeline(op, e);
    return st ? st : o;
}

static void overlap_destroy(tide_op *op, const tide_env *e)
{
    overlap_state *s = op->state;
    if (!s)
        return;
    for (int c = 0; c < s->chunks; c++) {
        if (s->fft[c])
            e->be->fft_destroy(s->fft[c]);
        tide_reshape_destroy(s->move[c]);
    }
    if (s->to_side)
        tide_order_destroy(s->to_side);
    if (s->to_main)
        tide_order_destroy(s->to_main);
    if (s->side)
        e->be->stream_destroy(s->side);
    for (int k = 0; k < 2; k++)
        tide_gpu_event_destroy(s->landed[k]);
    for (int k = 0; k < 1 + MARKS_PER_CHUNK * s->chunks; k++)
        tide_gpu_event_destroy(s->mark[k]);
    free(s);
    op->state = NULL;
}

static const tide_op_class overlap_class = {overlap_execute, overlap_destroy, 1, 0, NULL};

/* Bytes of one element of f's input (in) or output: real on the real side of R2C and C2R, and
 * in real-to-real transforms of real data. */
static size_t elem_bytes(const tide_cpu_fft_desc *f, int in)
{
    size_t real = f->precision == TIDE_DOUBLE ? sizeof(double) : sizeof(float);
    int is_real = f->kind == (in ? TIDE_KIND_R2C : TIDE_KIND_C2R) ||
                  (f->kind == TIDE_KIND_R2R && !f->complex_elems);
    return is_real ? real : 2 * real;
}

/* Chunk c's FFT: d's transform on the slice c of its boxes, in arrays laid out as the whole
 * boxes. */
static int make_fft(overlap_state *s, const tide_env *e, const tide_overlap_desc *d, int dim,
                    int c, size_t *work, char *err, size_t len)
{
    tide_box ib = chunk_of(s, d->fft.ibox, dim, c);
    tide_box ob = chunk_of(s, d->fft.obox, dim, c);
    if (tide_box_count(&ib) == 0)
        return TIDE_SUCCESS;
    s->fin[c] = (size_t)tide_box_offset(d->fft.ibox, &ib) * elem_bytes(&d->fft, 1);
    s->fout[c] = (size_t)tide_box_offset(d->fft.obox, &ob) * elem_bytes(&d->fft, 0);
    tide_cpu_fft_desc f = d->fft;
    f.ibox = &ib, f.obox = &ob;
    f.iarr = d->fft.ibox, f.oarr = d->fft.obox;
    f.in = at(d->fft.in, s->fin[c]);
    f.out = at(d->fft.out, s->fout[c]);
    return e->be->fft_create(&f, &s->fft[c], work, err, len);
}

/* Chunk c's part of the reshape: the slice c of every rank's source boxes (FFT first) or
 * destination boxes (exchange first). */
static int make_move(overlap_state *s, const tide_env *e, const tide_overlap_desc *d, int dim,
                     int c, char *err, size_t len)
{
    int P = e->ctx->nranks;
    const tide_box *cut = s->fft_first ? d->from : d->to;
    tide_box *part = malloc((size_t)P * sizeof *part);
    if (!part)
        return snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM;
    for (int q = 0; q < P; q++)
        part[q] = chunk_of(s, &cut[q], dim, c);
    tide_env side = *e;
    side.stream = s->side ? s->side : e->stream;
    int st = e->be->reshape_create(&side, d->from, d->to, s->fft_first ? part : NULL,
                                   s->fft_first ? NULL : part, d->elem, d->batch, &s->move[c],
                                   err, len);
    free(part);
    return st;
}

int tide_op_overlap(tide_op *op, const tide_env *e, const tide_overlap_desc *d, size_t *work,
                    size_t *sbytes, size_t *rbytes, char *err, size_t len)
{
    int dim = tide_overlap_cut(&d->fft, (d->fft_first ? d->from : d->to)[0].order, e->be->gpu);
    if (dim < 0 || d->chunks < 2 || d->chunks > OVERLAP_MAX_CHUNKS || d->fft.then)
        return snprintf(err, len, "overlap: no dimension to cut, or %d chunks", d->chunks),
               TIDE_ERR_ARGUMENT;
    overlap_state *s = calloc(1, sizeof *s);
    if (!s)
        return snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM;
    op->cls = &overlap_class;
    op->kind = TIDE_OP_OVERLAP;
    op->state = s;
    op->src = d->src, op->dst = d->dst;
    s->chunks = d->chunks, s->fft_first = d->fft_first, s->mid = d->mid, s->w = d->w;
    s->into = d->fft_first ? d->dst : d->mid;
    /* A real array's slices start an even number of planes (rows, ...) in, so each slice is
     * aligned as its complex numbers are wherever the whole array is (cuFFT requires it) */
    s->align = d->fft.kind == TIDE_KIND_R2C || d->fft.kind == TIDE_KIND_C2R ? 2 : 1;
    s->fft_cost = tide_op_fft_cost(&d->fft);
    s->move_cost = tide_op_reshape_cost(e->ctx->rank, d->from, d->to, d->elem, d->batch);
    op->cost.flops = s->fft_cost.flops + s->move_cost.flops;
    op->cost.mem_bytes = s->fft_cost.mem_bytes + s->move_cost.mem_bytes;
    op->cost.net_bytes = s->fft_cost.net_bytes + s->move_cost.net_bytes;
    int st = TIDE_SUCCESS;
    if (e->be->gpu) {
        st = e->be->stream_create(&s->side, 1);
        for (int k = 0; k < 2 && !st; k++)
            st = tide_gpu_event_create(&s->landed[k]);
        st = st ? st : tide_order_create(e->ctx, &s->to_side);
        st = st ? st : tide_order_create(e->ctx, &s->to_main);
        s->marks = e->ctx->log_level >= TIDE_LOG_DEBUG;
        for (int k = 0; k < 1 + MARKS_PER_CHUNK * d->chunks && s->marks && !st; k++)
            st = tide_gpu_timer_create(&s->mark[k]);
        if (st)
            snprintf(err, len, "overlap: cannot make a stream and events: %s",
                     e->be->last_error());
    }
    size_t rb = 0;
    for (int c = 0; c < d->chunks && !st; c++) {
        st = make_fft(s, e, d, dim, c, work, err, len);
        st = st ? st : make_move(s, e, d, dim, c, err, len);
        if (!st) {
            size_t sb = tide_reshape_send_bytes(s->move[c]);
            size_t r = tide_reshape_recv_bytes(s->move[c]);
            *sbytes = sb > *sbytes ? sb : *sbytes;
            rb = r > rb ? r : rb;
        }
    }
    if (st)
        return st;
    /* GPU: two halves, each of whole 256-byte lines (so each is aligned as the staging is) */
    s->half = s->side ? (rb + 255) / 256 * 256 : 0;
    rb = s->side ? 2 * s->half : rb;
    *rbytes = rb > *rbytes ? rb : *rbytes;
    /* the transform's name and the reshape's (every chunk moves alike), in their order */
    char f[sizeof op->what], name[3 * sizeof op->what];
    tide_op_fft_name(&d->fft, f, sizeof f);
    const char *x = tide_exchange_name(tide_reshape_exchange(s->move[0]));
    snprintf(name, sizeof name, "%s+%s x%d", d->fft_first ? f : x, d->fft_first ? x : f,
             d->chunks);
    snprintf(op->what, sizeof op->what, "%.39s", name);
    return TIDE_SUCCESS;
}

int tide_op_overlap_bind(const tide_op *op, const tide_env *e)
{
    const overlap_state *s = op->kind == TIDE_OP_OVERLAP ? op->state : NULL;
    for (int c = 0; s && c < s->chunks; c++)
        if (s->fft[c] && e->be->fft_bind(e, s->fft[c]))
            return TIDE_ERR_BACKEND;
    return TIDE_SUCCESS;
}

tide_exchange tide_op_overlap_exchange(const tide_op *op)
{
    const overlap_state *s = op->state;
    return tide_reshape_exchange(s->move[0]);
}

int tide_op_overlap_chunks(const tide_op *op)
{
    const overlap_state *s = op->state;
    return s->chunks;
}

void tide_op_overlap_costs(const tide_op *op, tide_op_cost *fft, tide_op_cost *move)
{
    const overlap_state *s = op->state;
    *fft = s->fft_cost;
    *move = s->move_cost;
}
