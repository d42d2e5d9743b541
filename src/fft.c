/*
 * fft.c: distributed 3D FFT plans: argument agreement, the choice of intermediate layouts,
 * the sequence of reshapes and local transforms, buffers, and execution.
 *
 * A transform is a chain of stages. Stage s transforms a group of dimensions (y,z then x for
 * slabs; z, y, x for pencils; all three on one rank) in a layout where every rank holds whole
 * lines along them. Between stages a reshape (comm/) moves the data, packed in the receiving
 * layout's storage order. A stage reuses the current layout when it already holds whole lines,
 * and the last stage uses the output layout when it can, so no exchange is ever spent on a
 * layout change nobody needs. Backward runs the same chain in reverse.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fftw3.h>
#include "tide_config.h"
#include "cpu_fft.h"
#include "fft_ooc.h"
#include "region.h"
#include "reshape.h"
#include "tide_internal.h"
#if TIDE_HAVE_CUDA
#include "gpu.h"
#endif

enum { LOC_IN, LOC_OUT, LOC_W0, LOC_W1 };
enum { OP_RESHAPE, OP_FFT };
enum { MAX_OPS = 8, MAX_STAGES = 3 };

typedef struct {
    int kind, src, dst;
    int stage_input;      /* transform reading IN: copy IN to stage_loc first when IN and the
                           * destination alias, or always when the transform overwrites its
                           * input (c2r), so that out-of-place inputs stay unmodified */
    int overwrites_input, stage_loc;
    int runs_in_place;    /* c2c between equal layouts: cuFFT takes in == out as it is */
    size_t stage_bytes;   /* bytes of that copy */
    tide_reshape *reshape;
    tide_cpu_fft *fft;    /* NULL when this rank's box is empty */
    void *gfft;           /* the same on the GPU (tide_gpu_fft) */
    char what[40];
} op;

typedef struct {
    op ops[MAX_OPS];
    int nops;
    double scale;         /* applied to the output at the end (1: none) */
    long long out_scalars;
} program;

struct tide_fft_plan {
    tide_context *ctx;
    int n[3], nout[3];    /* input (real for R2C) and output grid */
    tide_fft_options o;
    tide_box inbox, outbox;
    size_t in_elem, out_elem;
    program fwd, bwd;
    void *w[2], *sendbuf, *recvbuf;
    size_t wbytes, sbytes, rbytes;
    tide_decomposition decomp;
    tide_exchange exchange;
    int local_passes;
    /* The GPU path: every buffer above is device memory, plus these. */
    int gpu;
    tide_exchange transport;  /* how reshapes move device data */
    void *nccl, *stream;
    void *entry;              /* event: execution waits for the caller's earlier CUDA work */
    void *fft_work;           /* cuFFT work area shared by the plan's transforms */
    size_t fft_work_bytes;
    void *hsend, *hrecv;      /* pinned staging for host-staged exchanges */
    void *din, *dout;         /* host arrays on the GPU: their device copies */
    size_t dio_bytes;
    /* Host arrays larger than the device budget: streamed in chunks instead of the program. */
    tide_ooc *ooc;
    char ooc_what[160];
    int ooc_exchanges;    /* per transform: 0 (one rank), 1 (transposed) or 2 */
};

/* ---- argument agreement ---------------------------------------------------------------- */

/* What each rank asked for, gathered on every rank so all reach the same verdict. */
typedef struct {
    int status;
    char msg[200];
    int n[3];
    int opt[10];
    int has_in, has_out;
    tide_box in, out;
} request;

enum { NOPTS = 10 };
static const char *opt_names[NOPTS] = {"type",     "precision", "backend", "decomposition",
                                       "exchange", "scaling",   "planning", "batch",
                                       "transposed_out", "location"};

static void pack_opts(const tide_fft_options *o, int v[NOPTS])
{
    int t[NOPTS] = {(int)o->type,     (int)o->precision, (int)o->backend,
                    (int)o->decomposition, (int)o->exchange, (int)o->scaling,
                    (int)o->planning, o->batch,          o->transposed_out,
                    (int)o->location};
    memcpy(v, t, sizeof t);
}

static int local_checks(const int n[3], const tide_fft_options *o, tide_fft_plan **plan,
                        char *msg, size_t len)
{
    if (!plan)
        return snprintf(msg, len, "plan pointer is NULL"), TIDE_ERR_ARGUMENT;
    if (!n)
        return snprintf(msg, len, "n is NULL"), TIDE_ERR_ARGUMENT;
    for (int d = 0; d < 3; d++)
        if (n[d] <= 0)
            return snprintf(msg, len, "n[%d] = %d must be positive", d, n[d]), TIDE_ERR_ARGUMENT;
    int v[NOPTS];
    pack_opts(o, v);
    static const int max[NOPTS] = {TIDE_R2C, TIDE_FLOAT, TIDE_BACKEND_CUDA, TIDE_DECOMP_PENCILS,
                                   TIDE_EXCHANGE_CUDA_MPI, TIDE_SCALE_SYMMETRIC,
                                   TIDE_PLAN_MEASURE, 0, 0, TIDE_LOCATION_DEVICE};
    for (int k = 0; k < NOPTS; k++)
        if (max[k] && (v[k] < 0 || v[k] > max[k]))
            return snprintf(msg, len, "option %s = %d is not a known value (0..%d)", opt_names[k],
                            v[k], max[k]), TIDE_ERR_ARGUMENT;
    if (o->batch < 1)
        return snprintf(msg, len, "batch = %d must be at least 1", o->batch), TIDE_ERR_ARGUMENT;
    return TIDE_SUCCESS;
}

/* Every box inside the grid with a valid order, no two overlapping, all points covered. */
static int check_layout(tide_context *ctx, const request *all, int which, const int g[3])
{
    const char *side = which ? "output" : "input";
    int P = ctx->nranks;
    long long total = 0;
    for (int r = 0; r < P; r++) {
        const tide_box *b = which ? &all[r].out : &all[r].in;
        int seen = 0;
        for (int k = 0; k < 3; k++)
            if (b->order[k] < 0 || b->order[k] > 2 || (seen & (1 << b->order[k])))
                return tide_fail(ctx, TIDE_ERR_BOX,
                                 "%s box of rank %d: order {%d,%d,%d} is not a permutation of "
                                 "{0,1,2}", side, r, b->order[0], b->order[1], b->order[2]);
            else
                seen |= 1 << b->order[k];
        for (int d = 0; d < 3; d++)
            if (b->hi[d] < b->lo[d])
                return tide_fail(ctx, TIDE_ERR_BOX, "%s box of rank %d: hi %d < lo %d in "
                                 "dimension %d", side, r, b->hi[d], b->lo[d], d);
            else if (b->lo[d] < 0 || b->hi[d] > g[d])
                return tide_fail(ctx, TIDE_ERR_BOX,
                                 "%s box of rank %d: [%d,%d) in dimension %d is outside the "
                                 "grid 0..%d", side, r, b->lo[d], b->hi[d], d, g[d]);
        total += tide_box_count(b);
    }
    for (int r = 0; r < P; r++)
        for (int q = 0; q < r; q++) {
            tide_box x;
            const tide_box *a = which ? &all[r].out : &all[r].in;
            const tide_box *b = which ? &all[q].out : &all[q].in;
            if (tide_box_intersect(a, b, &x) > 0)
                return tide_fail(ctx, TIDE_ERR_BOX, "%s box of rank %d overlaps rank %d at "
                                 "(%d,%d,%d)", side, r, q, x.lo[0], x.lo[1], x.lo[2]);
        }
    long long want = (long long)g[0] * g[1] * g[2];
    if (total != want)
        return tide_fail(ctx, TIDE_ERR_BOX, "%s boxes cover %lld of the %lld points of the "
                         "%dx%dx%d grid", side, total, want, g[0], g[1], g[2]);
    return TIDE_SUCCESS;
}

/* Backend, location and exchange against what the context has (agreed at its creation). */
static int judge_backend(tide_context *ctx, const int *opt)
{
    int cuda = opt[2] == TIDE_BACKEND_CUDA ||
               (opt[2] == TIDE_BACKEND_AUTO && ctx->backend == TIDE_BACKEND_CUDA);
    if (cuda && ctx->backend != TIDE_BACKEND_CUDA)
        return tide_fail(ctx, TIDE_ERR_UNSUPPORTED, "backend cuda requested, but the context "
                         "runs on the CPU: %s", ctx->backend_reason);
    if (opt[9] == TIDE_LOCATION_DEVICE && !cuda)
        return tide_fail(ctx, TIDE_ERR_UNSUPPORTED, "arrays on the device need backend cuda or "
                         "auto on a context with GPUs (%s)", ctx->backend_reason);
    if ((opt[4] == TIDE_EXCHANGE_NCCL || opt[4] == TIDE_EXCHANGE_CUDA_MPI) && !cuda)
        return tide_fail(ctx, TIDE_ERR_UNSUPPORTED, "exchange %s moves GPU data; this plan runs "
                         "on the CPU", tide_exchange_name(opt[4]));
    if (opt[4] == TIDE_EXCHANGE_NCCL && !ctx->nccl_usable)
        return tide_fail(ctx, TIDE_ERR_UNSUPPORTED, "exchange nccl: NCCL needs a build with NCCL "
                         "and a GPU of its own for every rank");
    if (opt[4] == TIDE_EXCHANGE_CUDA_MPI && !ctx->cuda_aware_mpi)
        return tide_fail(ctx, TIDE_ERR_UNSUPPORTED, "exchange cuda-mpi: the MPI library does not "
                         "take device pointers (MPIX_Query_cuda_support)");
    return TIDE_SUCCESS;
}

/* The verdict every rank computes from the same gathered requests. */
static int judge(tide_context *ctx, const request *all)
{
    int P = ctx->nranks;
    for (int r = 0; r < P; r++)
        if (all[r].status)
            return tide_fail(ctx, all[r].status, "rank %d: %s", r, all[r].msg);
    for (int r = 1; r < P; r++) {
        for (int d = 0; d < 3; d++)
            if (all[r].n[d] != all[0].n[d])
                return tide_fail(ctx, TIDE_ERR_MISMATCH,
                                 "grid size differs between ranks: rank 0 has %dx%dx%d, rank %d "
                                 "has %dx%dx%d", all[0].n[0], all[0].n[1], all[0].n[2], r,
                                 all[r].n[0], all[r].n[1], all[r].n[2]);
        for (int k = 0; k < NOPTS; k++)
            if (all[r].opt[k] != all[0].opt[k])
                return tide_fail(ctx, TIDE_ERR_MISMATCH,
                                 "option %s differs between ranks: rank 0 has %d, rank %d has %d",
                                 opt_names[k], all[0].opt[k], r, all[r].opt[k]);
        if (all[r].has_in != all[0].has_in || all[r].has_out != all[0].has_out)
            return tide_fail(ctx, TIDE_ERR_MISMATCH,
                             "%s box is NULL on rank %d but not on rank %d",
                             all[r].has_in != all[0].has_in ? "input" : "output",
                             all[r].has_in != all[0].has_in ? (all[r].has_in ? 0 : r)
                                                            : (all[r].has_out ? 0 : r),
                             all[r].has_in != all[0].has_in ? (all[r].has_in ? r : 0)
                                                            : (all[r].has_out ? r : 0));
    }
    const int *n = all[0].n;
    if ((double)n[0] * n[1] * n[2] * all[0].opt[7] > 4.0e18)
        return tide_fail(ctx, TIDE_ERR_TOO_LARGE, "%dx%dx%d x %d fields is too many points",
                         n[0], n[1], n[2], all[0].opt[7]);
    int nout[3] = {n[0], n[1], all[0].opt[0] == TIDE_R2C ? n[2] / 2 + 1 : n[2]};
    int st = all[0].has_in ? check_layout(ctx, all, 0, n) : TIDE_SUCCESS;
    if (!st && all[0].has_out)
        st = check_layout(ctx, all, 1, nout);
    if (!st && all[0].opt[8] && all[0].has_out)
        st = tide_fail(ctx, TIDE_ERR_ARGUMENT, "transposed_out asks Tide to choose the output "
                       "boxes, but outbox was given");
    if (!st)
        st = judge_backend(ctx, all[0].opt);
    return st;
}

/* ---- layouts and the stage chain ------------------------------------------------------- */

/* A layout: every rank's box (P of them). */
typedef tide_box *layout;

typedef struct {
    int P;
    int ngroups;
    int group[MAX_STAGES][3], gsize[MAX_STAGES];
    layout A[MAX_STAGES], B[MAX_STAGES]; /* stage s transforms layout A[s] into B[s] */
    layout in, out;
    int exchanges;
    layout pool[2 * MAX_STAGES + 4];      /* every layout allocated, freed together */
    int npool;
    int zlast;  /* real transforms on the GPU: stage 0 runs on boxes stored with z fastest
                 * (cuFFT rejects some strided real layouts at execution) */
} chain;

static layout new_layout(chain *c)
{
    layout l = calloc((size_t)c->P, sizeof(tide_box));
    if (l)
        c->pool[c->npool++] = l;
    return l;
}

static void free_chain(chain *c)
{
    for (int i = 0; i < c->npool; i++)
        free(c->pool[i]);
    c->npool = 0;
}

static int box_empty(const tide_box *b) { return tide_box_count(b) == 0; }

/* Same data placement: equal boxes, or both empty. */
static int same_layout(int P, const layout a, const layout b)
{
    for (int r = 0; r < P; r++)
        if (!(box_empty(&a[r]) && box_empty(&b[r])) && !tide_box_equal(&a[r], &b[r]))
            return 0;
    return 1;
}

/* Every non-empty box holds whole lines along the dimensions of group s (stored so the
 * local transform can take them). */
static int holds_lines(const chain *c, const layout l, int s, const int g[3])
{
    for (int r = 0; r < c->P; r++) {
        if (box_empty(&l[r]))
            continue;
        for (int k = 0; k < c->gsize[s]; k++) {
            int d = c->group[s][k];
            if (l[r].lo[d] != 0 || l[r].hi[d] != g[d])
                return 0;
            if (c->zlast && s == 0 && l[r].order[2] != 2)
                return 0;
        }
    }
    return 1;
}

/* The same boxes on a grid whose dimension 2 has length nz (real <-> complex). */
static layout regrid(chain *c, const layout l, int nz)
{
    layout t = new_layout(c);
    if (!t)
        return NULL;
    for (int r = 0; r < c->P; r++) {
        t[r] = l[r];
        if (!box_empty(&l[r]) || l[r].lo[2] == 0) {
            t[r].lo[2] = 0;
            t[r].hi[2] = box_empty(&l[r]) && l[r].hi[2] == 0 ? 0 : nz;
        } else {
            t[r].lo[2] = t[r].hi[2] = l[r].lo[2] < nz ? l[r].lo[2] : nz;
        }
    }
    return t;
}

/* The layout the decomposition uses for stage s, on grid g, C order: z stays contiguous, so
 * packs copy whole z rows, and y-slabs receive each peer's block as one contiguous run. */
static layout default_layout(chain *c, tide_decomposition mode, int s, const int g[3],
                             const int pgrid[2])
{
    layout l = new_layout(c);
    if (!l)
        return NULL;
    int grid[3] = {1, 1, 1};
    if (mode == TIDE_DECOMP_SLABS) {
        grid[s == 0 ? 0 : 1] = c->P;        /* x-slabs for (y,z), then y-slabs for x */
    } else if (mode == TIDE_DECOMP_PENCILS) {
        int whole = 2 - s;                  /* z-, then y-, then x-pencils */
        int k = 0;
        for (int d = 0; d < 3; d++)
            if (d != whole)
                grid[d] = pgrid[k++];
    }
    for (int r = 0; r < c->P; r++)
        tide_box_in_grid(g, grid, r, &l[r]);
    return l;
}

static void set_groups(chain *c, tide_decomposition mode)
{
    static const int slabs[2][3] = {{1, 2}, {0}}, pencils[3][3] = {{2}, {1}, {0}};
    memset(c->group, 0, sizeof c->group);
    if (mode == TIDE_DECOMP_SLABS) {
        c->ngroups = 2;
        memcpy(c->group, slabs, sizeof slabs);
        c->gsize[0] = 2, c->gsize[1] = 1;
    } else if (mode == TIDE_DECOMP_PENCILS) {
        c->ngroups = 3;
        memcpy(c->group, pencils, sizeof pencils);
        c->gsize[0] = c->gsize[1] = c->gsize[2] = 1;
    } else { /* one rank: all three dimensions at once */
        c->ngroups = 1;
        c->group[0][0] = 0, c->group[0][1] = 1, c->group[0][2] = 2;
        c->gsize[0] = 3;
    }
}

/* Build the chain for one decomposition. in/out: the users' layouts or NULL. Returns 0 or
 * TIDE_ERR_NOMEM. mode AUTO here means "one rank, one group". */
static int build_chain(chain *c, tide_decomposition mode, const int n[3], const int nout[3],
                       int r2c, layout user_in, layout user_out, int transposed)
{
    set_groups(c, mode);
    int pg[2] = {1, 1};
    if (mode == TIDE_DECOMP_PENCILS) {
        int split[3] = {1, 1, 0}, g3[3];
        tide_proc_grid(c->P, n, split, g3);
        pg[0] = g3[0], pg[1] = g3[1];
    }
    c->in = user_in ? user_in : default_layout(c, mode, 0, n, pg);
    c->out = user_out ? user_out : transposed ? NULL : default_layout(c, mode, 0, nout, pg);
    if (!c->in || (!c->out && !transposed))
        return TIDE_ERR_NOMEM;
    layout cur = c->in;
    const int *g = n;
    c->exchanges = 0;
    for (int s = 0; s < c->ngroups; s++) {
        int last = s == c->ngroups - 1;
        layout a;
        if (holds_lines(c, cur, s, g))
            a = cur;
        else if (last && c->out && holds_lines(c, c->out, s, nout))
            a = r2c && s == 0 ? regrid(c, c->out, n[2]) : c->out;
        else
            a = default_layout(c, mode, s, g, pg);
        if (!a)
            return TIDE_ERR_NOMEM;
        c->exchanges += !same_layout(c->P, cur, a);
        c->A[s] = a;
        c->B[s] = r2c && s == 0 ? regrid(c, a, nout[2]) : a;
        if (!c->B[s])
            return TIDE_ERR_NOMEM;
        cur = c->B[s];
        g = nout;
    }
    if (!c->out)
        c->out = cur;
    c->exchanges += !same_layout(c->P, cur, c->out);
    return TIDE_SUCCESS;
}

/* ---- programs: the chain as operations on buffers -------------------------------------- */

static const char *dim_names = "xyz";

/* Where the next result goes: the last op, and every op from out_from on, writes OUT; c2c
 * transforms stay in place (in a work buffer, or in OUT once the data is there); everything
 * else goes to the work buffer not holding the source. */
static int next_loc(int src, int out, int in_place)
{
    if (out)
        return LOC_OUT; /* in place when src is already OUT (see out_from) */
    if (in_place && (src == LOC_W0 || src == LOC_W1))
        return src;
    return src == LOC_W0 ? LOC_W1 : LOC_W0;
}

/* Work arrays to plan an FFTW op with, standing in for the user's arrays. */
static void *stand_in(tide_fft_plan *p, int loc, int other)
{
    if (loc == LOC_W0 || loc == LOC_W1)
        return p->w[loc - LOC_W0];
    int o = other == LOC_W0 ? 1 : 0; /* the work buffer the other side does not use */
    return p->w[o];
}

typedef struct {
    int kind;            /* OP_RESHAPE or OP_FFT */
    layout from, to;
    int from_complex, to_complex;
    int dims;            /* OP_FFT: transformed dimensions, bit d for dimension d */
    tide_fft_kind fkind;
    int sign;
} step;

/* A c2c transform between identical layouts, which FFTW can run in place. */
static int in_place_ok(const step *s)
{
    return s->kind == OP_FFT && s->fkind == TIDE_KIND_C2C && s->from == s->to;
}

/* The first op from which results go to OUT. Normally only the last op writes there. When c2c
 * transforms follow the last exchange, that exchange delivers into OUT and they run in place
 * in it: the caller's output array is free to serve as work space, and an out-of-place
 * transform along a strided dimension costs FFTW far more than an in-place one (128^3 double,
 * x along y-slabs: 6.2 ms against about 4 ms). Not when the exchange reads IN: in and out may be
 * the same array. */
static int out_from(const step *steps, int n)
{
    int last_reshape = -1;
    for (int i = 0; i < n; i++)
        if (steps[i].kind == OP_RESHAPE)
            last_reshape = i;
    if (last_reshape <= 0)
        return n - 1;
    for (int i = last_reshape + 1; i < n; i++)
        if (!in_place_ok(&steps[i]))
            return n - 1;
    return last_reshape;
}

/* The local transform of an op on the GPU; the plan keeps the largest work area. */
static int gpu_fft_create(tide_fft_plan *p, const tide_cpu_fft_desc *d, void **out, char *err,
                          size_t errlen)
{
#if TIDE_HAVE_CUDA
    tide_gpu_fft_desc g = {.dbl = d->precision == TIDE_DOUBLE, .kind = (int)d->kind,
                           .sign = d->sign, .ibox = d->ibox, .obox = d->obox,
                           .ndims = d->ndims, .nz_real = d->nz_real, .batch = d->batch};
    memcpy(g.dims, d->dims, sizeof g.dims);
    size_t work = 0;
    int st = tide_gpu_fft_create(&g, (tide_gpu_fft **)out, &work, err, errlen);
    if (!st && work > p->fft_work_bytes)
        p->fft_work_bytes = work;
    return st;
#else
    (void)p, (void)d, (void)out;
    snprintf(err, errlen, "this build has no CUDA");
    return TIDE_ERR_UNSUPPORTED;
#endif
}

static int add_op(tide_fft_plan *p, program *prog, const step *s, int out, char *err,
                  size_t errlen)
{
    tide_context *ctx = p->ctx;
    op *o = &prog->ops[prog->nops];
    int src = prog->nops == 0 ? LOC_IN : prog->ops[prog->nops - 1].dst;
    o->kind = s->kind;
    o->src = src;
    size_t ein = s->from_complex ? p->out_elem : p->in_elem;
    if (s->kind == OP_RESHAPE) {
        o->dst = next_loc(src, out, 0);
        int st = p->gpu ? tide_reshape_create_device(ctx->comm, s->from, s->to, ein, p->o.batch,
                                                     p->transport, p->nccl, p->stream,
                                                     &o->reshape, err, errlen)
                        : tide_reshape_create(ctx->comm, s->from, s->to, ein, p->o.batch,
                                              p->o.exchange, ctx->threads, &o->reshape, err,
                                              errlen);
        if (st)
            return st;
        if (prog == &p->fwd)
            p->exchange = tide_reshape_exchange(o->reshape);
        size_t sb = tide_reshape_send_bytes(o->reshape), rb = tide_reshape_recv_bytes(o->reshape);
        p->sbytes = sb > p->sbytes ? sb : p->sbytes;
        p->rbytes = rb > p->rbytes ? rb : p->rbytes;
        snprintf(o->what, sizeof o->what, "reshape[%s]",
                 tide_exchange_name(tide_reshape_exchange(o->reshape)));
    } else {
        const tide_box *ib = &s->from[ctx->rank], *ob = &s->to[ctx->rank];
        o->dst = next_loc(src, out, in_place_ok(s));
        o->overwrites_input = s->fkind == TIDE_KIND_C2R;
        o->stage_input = src == LOC_IN && (o->dst == LOC_OUT || o->overwrites_input);
        o->stage_loc = o->dst == LOC_W0 ? LOC_W1 : LOC_W0;
        o->runs_in_place = p->gpu && in_place_ok(s);
        o->stage_bytes = (size_t)tide_box_count(ib) * p->o.batch * ein;
        char *w = o->what;
        w += sprintf(w, "fft(");
        tide_cpu_fft_desc d = {
            .precision = p->o.precision, .kind = s->fkind, .sign = s->sign, .ibox = ib,
            .obox = ob, .nz_real = p->n[2], .batch = p->o.batch,
            .measure = p->o.planning == TIDE_PLAN_MEASURE, .threads = ctx->threads,
            .user_memory = src == LOC_IN || o->dst == LOC_OUT};
        d.ndims = 0;
        for (int k = 0; k < 3; k++)
            if (s->dims & (1 << k))
                d.dims[d.ndims++] = k;
        for (int k = 0; k < d.ndims; k++)
            w += sprintf(w, "%s%c", k ? "," : "", dim_names[d.dims[k]]);
        sprintf(w, ")");
        if (o->stage_input) {
            d.in = p->w[o->stage_loc - LOC_W0];
            d.out = p->w[LOC_W1 - o->stage_loc];
        } else {
            d.in = stand_in(p, src, o->dst);
            d.out = o->dst == src ? d.in : stand_in(p, o->dst, src);
        }
        if (tide_box_count(ib) > 0) {
            int st = p->gpu ? gpu_fft_create(p, &d, &o->gfft, err, errlen)
                            : tide_cpu_fft_create(&d, &o->fft);
            if (st == TIDE_ERR_UNSUPPORTED) /* the message is cuFFT's reason */
                return st;
            if (st) {
                snprintf(err, errlen, "FFTW could not plan %s of the box [%d,%d)x[%d,%d)x[%d,%d)",
                         o->what, ib->lo[0], ib->hi[0], ib->lo[1], ib->hi[1], ib->lo[2],
                         ib->hi[2]);
                return st;
            }
        }
        p->local_passes++;
    }
    prog->nops++;
    return TIDE_SUCCESS;
}

/* The dimensions stage s transforms, as bits. */
static int group_dims(const chain *c, int s)
{
    int dims = 0;
    for (int k = 0; k < c->gsize[s]; k++)
        dims |= 1 << c->group[s][k];
    return dims;
}

/* The steps of one direction. */
static int make_steps(const chain *c, int forward, int r2c, step *steps)
{
    int ns = 0;
    if (forward) {
        layout cur = c->in;
        int cplx = !r2c;
        for (int s = 0; s < c->ngroups; s++) {
            if (!same_layout(c->P, cur, c->A[s]))
                steps[ns++] = (step){OP_RESHAPE, cur, c->A[s], cplx, cplx, 0, 0, 0};
            tide_fft_kind fk = r2c && s == 0 ? TIDE_KIND_R2C : TIDE_KIND_C2C;
            steps[ns++] = (step){OP_FFT, c->A[s], c->B[s], cplx, 1, group_dims(c, s), fk, -1};
            cur = c->B[s];
            cplx = 1;
        }
        if (!same_layout(c->P, cur, c->out))
            steps[ns++] = (step){OP_RESHAPE, cur, c->out, 1, 1, 0, 0, 0};
    } else {
        layout cur = c->out;
        int cplx = 1;
        for (int s = c->ngroups - 1; s >= 0; s--) {
            if (!same_layout(c->P, cur, c->B[s]))
                steps[ns++] = (step){OP_RESHAPE, cur, c->B[s], 1, 1, 0, 0, 0};
            tide_fft_kind fk = r2c && s == 0 ? TIDE_KIND_C2R : TIDE_KIND_C2C;
            cplx = fk != TIDE_KIND_C2R;
            steps[ns++] = (step){OP_FFT, c->B[s], c->A[s], 1, cplx, group_dims(c, s), fk, +1};
            cur = c->A[s];
        }
        if (!same_layout(c->P, cur, c->in))
            steps[ns++] = (step){OP_RESHAPE, cur, c->in, cplx, cplx, 0, 0, 0};
    }
    return ns;
}

/* ---- plan creation --------------------------------------------------------------------- */

/* Whether rank r's box b is its slab along d of grid n, in C order (tide_box_slab's). */
static int is_slab(const int n[3], int P, int r, int d, const tide_box *b)
{
    tide_box s;
    tide_box_slab(n, d, P, r, &s);
    return tide_box_equal(&s, b);
}

/* Whether host arrays too large for the device budget can stream through the GPU in chunks
 * (fft_ooc.c): x-slabs in and x-slabs or y-slabs out (NULL boxes, or boxes equal to
 * tide_box_slab's on every rank), slabs that fit, and between several ranks NCCL or MPI point
 * to point in host memory. *transposed: the output is y-slabs. The same answer on every
 * rank (all holds every rank's request). */
static int streams_ok(const tide_context *ctx, const int n[3], const int nout[3],
                      const request *all, const tide_fft_options *o, int *transposed)
{
    int P = ctx->nranks, xs_out = 1, ys_out = 1, xs_in = 1;
    tide_exchange e = o->exchange;
    for (int r = 0; r < P; r++) {
        xs_in = xs_in && (!all[r].has_in || is_slab(n, P, r, 0, &all[r].in));
        xs_out = xs_out && (!all[r].has_out || is_slab(nout, P, r, 0, &all[r].out));
        ys_out = ys_out && all[r].has_out && is_slab(nout, P, r, 1, &all[r].out);
    }
    *transposed = all[0].has_out ? !xs_out && ys_out : o->transposed_out;
    return o->location == TIDE_LOCATION_HOST && xs_in &&
           (xs_out || ys_out) && P <= n[0] && P <= n[1] &&
           (o->decomposition == TIDE_DECOMP_AUTO || o->decomposition == TIDE_DECOMP_SLABS) &&
           (P == 1 || e == TIDE_EXCHANGE_AUTO || e == TIDE_EXCHANGE_P2P ||
            (e == TIDE_EXCHANGE_NCCL && ctx->nccl_usable));
}

/* A plan with what every plan has: the request, where it runs, the grid and element sizes,
 * the scale factors of both directions. NULL when out of memory. */
static tide_fft_plan *new_plan(tide_context *ctx, const int n[3], const tide_fft_options *opts,
                               int cuda)
{
    tide_fft_plan *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->ctx = ctx;
    p->o = *opts;
    p->o.backend = cuda ? TIDE_BACKEND_CUDA : TIDE_BACKEND_CPU;
    p->gpu = cuda;
    memcpy(p->n, n, sizeof p->n);
    memcpy(p->nout, n, sizeof p->nout);
    if (opts->type == TIDE_R2C)
        p->nout[2] = n[2] / 2 + 1;
    size_t scalar = opts->precision == TIDE_DOUBLE ? sizeof(double) : sizeof(float);
    p->out_elem = 2 * scalar;
    p->in_elem = opts->type == TIDE_R2C ? scalar : 2 * scalar;
    double N = (double)n[0] * n[1] * n[2], sym = 1.0 / sqrt(N);
    p->fwd.scale = opts->scaling == TIDE_SCALE_SYMMETRIC ? sym : 1.0;
    p->bwd.scale = opts->scaling == TIDE_SCALE_SYMMETRIC ? sym
                   : opts->scaling == TIDE_SCALE_FULL    ? 1.0 / N : 1.0;
    return p;
}

/* Collective end of plan creation: a local failure (message err) is agreed; on failure the
 * plan is destroyed, on success handed out. */
static int agree_plan(tide_context *ctx, int st, const char *err, tide_fft_plan *p,
                      tide_fft_plan **out)
{
    if (st)
        tide_fail(ctx, st, "%s", err);
    st = tide_agree(ctx, st);
    if (st) {
        tide_fft_plan_destroy(p);
        return st;
    }
    *out = p;
    return TIDE_SUCCESS;
}

/* Collective: the streamed plan (see streams_ok). The exchange is NCCL where the GPUs reach
 * each other (unless P2P was asked for), else MPI point to point in host memory. */
static int make_ooc_plan(tide_context *ctx, const int n[3], const tide_fft_options *opts,
                         int transposed, tide_fft_plan **out)
{
    *out = NULL;
    int P = ctx->nranks, moves = P > 1 ? (transposed ? 1 : 2) : 0;
    int nccl_on = P > 1 && ctx->nccl_usable && opts->exchange != TIDE_EXCHANGE_P2P;
    void *nccl = NULL;
    int st = nccl_on ? tide_context_nccl(ctx, &nccl) : TIDE_SUCCESS;
    if (st)
        return st;
    tide_fft_plan *p = new_plan(ctx, n, opts, 1);
    char err[TIDE_MSG_LEN] = "out of memory creating the plan";
    st = p ? TIDE_SUCCESS : TIDE_ERR_NOMEM;
    if (p) {
        tide_box_slab(n, 0, P, ctx->rank, &p->inbox);
        tide_box_slab(p->nout, moves == 1 ? 1 : 0, P, ctx->rank, &p->outbox);
        p->decomp = P > 1 ? TIDE_DECOMP_SLABS : TIDE_DECOMP_AUTO;
        p->exchange = !moves ? TIDE_EXCHANGE_AUTO : nccl ? TIDE_EXCHANGE_NCCL : TIDE_EXCHANGE_P2P;
        p->transport = p->exchange;
        p->local_passes = 2;
        p->ooc_exchanges = moves;
#if TIDE_HAVE_CUDA
        if (tide_gpu_event_create(&p->entry))
            st = TIDE_ERR_BACKEND, snprintf(err, sizeof err, "%s", tide_gpu_last_error());
#endif
    }
    if (!st)
        st = tide_ooc_create(ctx, n, opts->precision == TIDE_DOUBLE, opts->type == TIDE_R2C,
                             opts->batch, transposed, nccl, ctx->dev.budget_bytes, &p->ooc, err,
                             sizeof err);
    if (!st) {
        int chunks, slots;
        size_t dev, pin;
        tide_ooc_shape(p->ooc, &chunks, &slots, &dev, &pin);
        const char *x = !moves ? "" : nccl ? " > nccl" : " > p2p";
        snprintf(p->ooc_what, sizeof p->ooc_what, "stream[%d chunks, %d slots] fft(y,z)%s > "
                 "stream fft(x)%s", chunks, slots, x, moves == 2 ? x : "");
    }
    return agree_plan(ctx, st, err, p, out);
}

static int build_plan(tide_fft_plan *p, chain *c, layout user_in, layout user_out, char *err,
                      size_t errlen);

/* Collective: the plan of a validated request, on the GPU (cuda) or the CPU. Failures are
 * agreed; p is NULL then. */
static int make_plan(tide_context *ctx, const int n[3], const request *all, int has_in,
                     int has_out, const tide_fft_options *opts, int cuda, tide_fft_plan **out)
{
    *out = NULL;
    tide_fft_plan *p = new_plan(ctx, n, opts, cuda);
    int st = TIDE_SUCCESS;
    if (p) {
        p->transport = opts->exchange;
        if (cuda && p->transport == TIDE_EXCHANGE_AUTO && ctx->nranks > 1)
            p->transport = ctx->nccl_usable      ? TIDE_EXCHANGE_NCCL
                           : ctx->cuda_aware_mpi ? TIDE_EXCHANGE_CUDA_MPI
                                                 : TIDE_EXCHANGE_AUTO;
    }
    /* Collective steps first, on every rank alike. */
    int nccl = p && cuda && p->transport == TIDE_EXCHANGE_NCCL;
    st = tide_agree(ctx, p ? TIDE_SUCCESS
                           : tide_fail(ctx, TIDE_ERR_NOMEM, "out of memory creating the plan"));
    if (!st && nccl)
        st = tide_context_nccl(ctx, &p->nccl);
    if (st) {
        tide_fft_plan_destroy(p);
        return st;
    }
    layout uin = NULL, uout = NULL;
    chain c = {.P = ctx->nranks, .zlast = cuda && opts->type == TIDE_R2C};
    char err[TIDE_MSG_LEN] = "out of memory creating the plan";
    /* The users' layouts live outside the chain's pool: AUTO builds chains twice. */
    if (has_in && (uin = calloc((size_t)ctx->nranks, sizeof(tide_box))))
        for (int r = 0; r < ctx->nranks; r++)
            uin[r] = all[r].in;
    if (has_out && (uout = calloc((size_t)ctx->nranks, sizeof(tide_box))))
        for (int r = 0; r < ctx->nranks; r++)
            uout[r] = all[r].out;
    if ((has_in && !uin) || (has_out && !uout))
        st = TIDE_ERR_NOMEM;
#if TIDE_HAVE_CUDA
    else if ((cuda && tide_gpu_stream_create(&p->stream)) ||
             (ctx->backend == TIDE_BACKEND_CUDA && tide_gpu_event_create(&p->entry)))
        st = TIDE_ERR_BACKEND, snprintf(err, sizeof err, "%s", tide_gpu_last_error());
#endif
    else
        st = build_plan(p, &c, uin, uout, err, sizeof err);
    free(uin);
    free(uout);
    free_chain(&c);
    return agree_plan(ctx, st, err, p, out);
}

void tide_fft_options_init(tide_fft_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->type = TIDE_C2C;
    o->precision = TIDE_DOUBLE;
    o->backend = TIDE_BACKEND_AUTO;
    o->decomposition = TIDE_DECOMP_AUTO;
    o->exchange = TIDE_EXCHANGE_AUTO;
    o->scaling = TIDE_SCALE_NONE;
    o->planning = TIDE_PLAN_ESTIMATE;
    o->batch = 1;
    o->transposed_out = 0;
    o->location = TIDE_LOCATION_HOST;
}

static void *work_alloc(size_t bytes)
{
    /* fftw_malloc: SIMD-aligned, the alignment the transforms were planned for. */
    return fftw_malloc(bytes ? bytes : 1);
}

#if TIDE_HAVE_CUDA
/* Device memory the GPU path needs, checked against the context's budget, then allocated;
 * the cuFFT plans get their work area and stream. */
static int gpu_buffers(tide_fft_plan *p, char *err, size_t errlen)
{
    tide_context *ctx = p->ctx;
    int host = p->o.location == TIDE_LOCATION_HOST;
    size_t in_b = (size_t)tide_box_count(&p->inbox) * p->o.batch * p->in_elem;
    size_t out_b = (size_t)tide_box_count(&p->outbox) * p->o.batch * p->out_elem;
    p->dio_bytes = host ? (in_b > out_b ? in_b : out_b) : 0;
    size_t need = 2 * p->wbytes + p->sbytes + p->rbytes + p->fft_work_bytes + 2 * p->dio_bytes;
    if (need > ctx->dev.budget_bytes)
        return snprintf(err, errlen, "the plan needs %.3g GB of device memory on GPU %d, more "
                        "than the context's budget of %.3g GB", need / 1e9, ctx->dev.device,
                        ctx->dev.budget_bytes / 1e9), TIDE_ERR_NOMEM;
    void **dev[] = {&p->w[0], &p->w[1], &p->sendbuf, &p->recvbuf, &p->fft_work, &p->din,
                    &p->dout};
    size_t size[] = {p->wbytes, p->wbytes, p->sbytes, p->rbytes, p->fft_work_bytes,
                     p->dio_bytes, p->dio_bytes};
    for (int i = 0; i < 7; i++)
        if (tide_gpu_malloc(size[i], dev[i]))
            return snprintf(err, errlen, "cannot allocate %zu bytes on GPU %d: %s", size[i],
                            ctx->dev.device, tide_gpu_last_error()), TIDE_ERR_NOMEM;
    int staged = p->transport != TIDE_EXCHANGE_NCCL && p->transport != TIDE_EXCHANGE_CUDA_MPI;
    if (staged && (tide_gpu_host_alloc(p->sbytes, &p->hsend) ||
                   tide_gpu_host_alloc(p->rbytes, &p->hrecv)))
        return snprintf(err, errlen, "cannot allocate %zu + %zu bytes of pinned host memory",
                        p->sbytes, p->rbytes), TIDE_ERR_NOMEM;
    program *progs[2] = {&p->fwd, &p->bwd};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < progs[k]->nops; i++)
            if (progs[k]->ops[i].gfft &&
                tide_gpu_fft_bind(progs[k]->ops[i].gfft, p->fft_work, p->stream))
                return snprintf(err, errlen, "cuFFT rejected its work area or stream"),
                       TIDE_ERR_BACKEND;
    return TIDE_SUCCESS;
}
#endif

static size_t layout_bytes(const tide_fft_plan *p, const layout l, int cplx)
{
    return (size_t)tide_box_count(&l[p->ctx->rank]) * (size_t)p->o.batch *
           (cplx ? p->out_elem : p->in_elem);
}

/* The chain, steps, buffers and operations of a validated request. Local failures only. */
static int build_plan(tide_fft_plan *p, chain *c, layout user_in, layout user_out, char *err,
                      size_t errlen)
{
    tide_context *ctx = p->ctx;
    int r2c = p->o.type == TIDE_R2C;
    tide_decomposition mode = p->o.decomposition;
    if (ctx->nranks == 1) {
        mode = TIDE_DECOMP_AUTO; /* one group, all three dimensions */
    } else if (mode == TIDE_DECOMP_AUTO) {
        /* Slabs leave ranks idle when there are more ranks than planes. */
        int slabs_fit = ctx->nranks <= p->n[0] && ctx->nranks <= p->n[1];
        mode = slabs_fit ? TIDE_DECOMP_SLABS : TIDE_DECOMP_PENCILS;
        if (user_in && user_out) { /* fewest exchanges for these boxes; the rule on ties */
            chain alt = {.P = ctx->nranks, .zlast = c->zlast};
            tide_decomposition other = mode == TIDE_DECOMP_SLABS ? TIDE_DECOMP_PENCILS
                                                                 : TIDE_DECOMP_SLABS;
            int st = build_chain(c, mode, p->n, p->nout, r2c, user_in, user_out, 0);
            if (!st)
                st = build_chain(&alt, other, p->n, p->nout, r2c, user_in, user_out, 0);
            if (!st && alt.exchanges < c->exchanges)
                mode = other;
            free_chain(&alt);
            free_chain(c);
            if (st)
                return snprintf(err, errlen, "out of memory planning"), st;
        }
    }
    p->decomp = mode;
    int st = build_chain(c, mode, p->n, p->nout, r2c, user_in, user_out, p->o.transposed_out);
    if (st)
        return snprintf(err, errlen, "out of memory planning"), st;
    p->inbox = c->in[ctx->rank];
    p->outbox = c->out[ctx->rank];

    step fs[MAX_OPS], bs[MAX_OPS];
    int nf = make_steps(c, 1, r2c, fs), nb = make_steps(c, 0, r2c, bs);
    /* Work buffers hold any layout of the chain, and the input when it must be staged. */
    p->wbytes = 0;
    for (int i = 0; i < nf; i++) {
        size_t a = layout_bytes(p, fs[i].from, fs[i].from_complex);
        size_t b = layout_bytes(p, fs[i].to, fs[i].to_complex);
        p->wbytes = a > p->wbytes ? a : p->wbytes;
        p->wbytes = b > p->wbytes ? b : p->wbytes;
    }
    if (!p->gpu) { /* FFTW plans on the arrays: allocated first (the GPU's after planning) */
        p->w[0] = work_alloc(p->wbytes);
        p->w[1] = work_alloc(p->wbytes);
        if (!p->w[0] || !p->w[1])
            return snprintf(err, errlen, "out of memory: 2 work arrays of %zu bytes",
                            p->wbytes), TIDE_ERR_NOMEM;
    }
    p->exchange = TIDE_EXCHANGE_AUTO; /* until a forward reshape says which */
    int fout = out_from(fs, nf), bout = out_from(bs, nb);
    for (int i = 0; i < nf && !st; i++)
        st = add_op(p, &p->fwd, &fs[i], i >= fout, err, errlen);
    int passes = p->local_passes;
    for (int i = 0; i < nb && !st; i++)
        st = add_op(p, &p->bwd, &bs[i], i >= bout, err, errlen);
    p->local_passes = passes;
    if (st)
        return st;
#if TIDE_HAVE_CUDA
    if (p->gpu)
        st = gpu_buffers(p, err, errlen);
    else
#endif
    {
        p->sendbuf = work_alloc(p->sbytes);
        p->recvbuf = work_alloc(p->rbytes);
        if (!p->sendbuf || !p->recvbuf)
            return snprintf(err, errlen, "out of memory: exchange buffers of %zu + %zu bytes",
                            p->sbytes, p->rbytes), TIDE_ERR_NOMEM;
    }
    if (st)
        return st;

    p->fwd.out_scalars = tide_box_count(&p->outbox) * p->o.batch * 2;
    p->bwd.out_scalars = tide_box_count(&p->inbox) * p->o.batch * (r2c ? 1 : 2);
    return TIDE_SUCCESS;
}

int tide_fft_plan_create(tide_context *ctx, const int n[3], const tide_box *inbox,
                         const tide_box *outbox, const tide_fft_options *opts,
                         tide_fft_plan **plan)
{
    if (!ctx)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_fft_plan_create: ctx is NULL");
    tide_fft_options defaults;
    if (!opts) {
        tide_fft_options_init(&defaults);
        opts = &defaults;
    }
    request me;
    memset(&me, 0, sizeof me);
    me.status = local_checks(n, opts, plan, me.msg, sizeof me.msg);
    if (n)
        memcpy(me.n, n, sizeof me.n);
    pack_opts(opts, me.opt);
    me.has_in = inbox != NULL;
    me.has_out = outbox != NULL;
    if (inbox)
        me.in = *inbox;
    if (outbox)
        me.out = *outbox;

    request *all = malloc(sizeof(request) * (size_t)ctx->nranks);
    int st = tide_agree(ctx, all ? TIDE_SUCCESS
                                 : tide_fail(ctx, TIDE_ERR_NOMEM, "out of memory gathering "
                                             "the plan's arguments"));
    if (st) {
        free(all);
        return st;
    }
    if (MPI_Allgather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE, ctx->comm)) {
        free(all);
        return tide_fail(ctx, TIDE_ERR_MPI, "MPI_Allgather of the plan's arguments failed");
    }
    st = judge(ctx, all);
    if (st) {
        free(all);
        return st;
    }

    int cuda = opts->backend == TIDE_BACKEND_CUDA ||
               (opts->backend == TIDE_BACKEND_AUTO && ctx->backend == TIDE_BACKEND_CUDA);
    tide_fft_plan *p = NULL;
    st = make_plan(ctx, n, all, inbox != NULL, outbox != NULL, opts, cuda, &p);
    int transposed = 0, nout[3] = {n[0], n[1], opts->type == TIDE_R2C ? n[2] / 2 + 1 : n[2]};
    if (st == TIDE_ERR_NOMEM && cuda && streams_ok(ctx, n, nout, all, opts, &transposed)) {
        tide_log(ctx, TIDE_LOG_INFO, "fft plan streams host arrays through the GPU: %s",
                 ctx->errmsg);
        st = make_ooc_plan(ctx, n, opts, transposed, &p);
    }
    if (st == TIDE_ERR_NOMEM && cuda && opts->backend == TIDE_BACKEND_AUTO &&
        opts->location == TIDE_LOCATION_HOST) {
        /* Host arrays too large for the device budget in one piece: the CPU takes them. */
        tide_log(ctx, TIDE_LOG_INFO, "fft plan on the CPU: %s", ctx->errmsg);
        st = make_plan(ctx, n, all, inbox != NULL, outbox != NULL, opts, 0, &p);
    }
    free(all);
    if (st)
        return st;
    if (ctx->log_level >= TIDE_LOG_INFO && ctx->rank == 0) {
        char d[256];
        tide_fft_plan_describe(p, d, sizeof d);
        tide_log(ctx, TIDE_LOG_INFO, "fft plan %dx%dx%d: %s", n[0], n[1], n[2], d);
    }
    *plan = p;
    return TIDE_SUCCESS;
}

static void free_program(program *prog)
{
    for (int i = 0; i < prog->nops; i++) {
        tide_reshape_destroy(prog->ops[i].reshape);
        tide_cpu_fft_destroy(prog->ops[i].fft);
#if TIDE_HAVE_CUDA
        tide_gpu_fft_destroy(prog->ops[i].gfft);
#endif
    }
    prog->nops = 0;
}

int tide_fft_plan_destroy(tide_fft_plan *p)
{
    if (!p)
        return TIDE_SUCCESS;
    free_program(&p->fwd);
    free_program(&p->bwd);
    tide_ooc_destroy(p->ooc);
#if TIDE_HAVE_CUDA
    tide_gpu_event_destroy(p->entry);
    if (p->gpu) {
        void *dev[] = {p->w[0], p->w[1], p->sendbuf, p->recvbuf, p->fft_work, p->din, p->dout};
        for (int i = 0; i < 7; i++)
            tide_gpu_free(dev[i]);
        if (p->hsend)
            tide_gpu_host_free(p->hsend);
        if (p->hrecv)
            tide_gpu_host_free(p->hrecv);
        tide_gpu_stream_destroy(p->stream);
        free(p);
        return TIDE_SUCCESS;
    }
#endif
    fftw_free(p->w[0]);
    fftw_free(p->w[1]);
    fftw_free(p->sendbuf);
    fftw_free(p->recvbuf);
    free(p);
    return TIDE_SUCCESS;
}

/* ---- queries --------------------------------------------------------------------------- */

int tide_fft_plan_boxes(const tide_fft_plan *p, tide_box *inbox, tide_box *outbox)
{
    if (!p)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_fft_plan_boxes: plan is NULL");
    if (inbox)
        *inbox = p->inbox;
    if (outbox)
        *outbox = p->outbox;
    return TIDE_SUCCESS;
}

int tide_fft_plan_info(const tide_fft_plan *p, tide_fft_info *info)
{
    if (!p || !info)
        return tide_fail(p ? p->ctx : NULL, TIDE_ERR_ARGUMENT, "tide_fft_plan_info: NULL argument");
    memset(info, 0, sizeof *info);
    info->in_count = tide_box_count(&p->inbox);
    info->out_count = tide_box_count(&p->outbox);
    info->in_bytes = (size_t)info->in_count * p->o.batch * p->in_elem;
    info->out_bytes = (size_t)info->out_count * p->o.batch * p->out_elem;
    info->inplace_bytes = info->in_bytes > info->out_bytes ? info->in_bytes : info->out_bytes;
    if (p->gpu) {
        info->device_bytes = 2 * p->wbytes + p->sbytes + p->rbytes + p->fft_work_bytes +
                             2 * p->dio_bytes;
        info->pinned_bytes = p->hsend ? p->sbytes + p->rbytes : 0;
    } else {
        info->host_bytes = 2 * p->wbytes + p->sbytes + p->rbytes;
    }
    info->location = p->o.location;
    info->chunks = info->streams = info->slots = p->gpu;
    if (p->ooc) {
        tide_ooc_shape(p->ooc, &info->chunks, &info->slots, &info->device_bytes,
                       &info->pinned_bytes);
        info->streams = info->slots;
        info->exchanges = p->ooc_exchanges;
    }
    for (int i = 0; i < p->fwd.nops; i++)
        info->exchanges += p->fwd.ops[i].kind == OP_RESHAPE;
    info->local_transforms = p->local_passes;
    double N = (double)p->n[0] * p->n[1] * p->n[2];
    info->flops = (p->o.type == TIDE_R2C ? 2.5 : 5.0) * N * log2(N) * p->o.batch;
    info->backend = p->o.backend;
    info->exchange = p->exchange;
    if (p->gpu && info->exchanges == 0)
        info->exchange = TIDE_EXCHANGE_AUTO;
    info->decomposition = p->decomp;
    return TIDE_SUCCESS;
}

int tide_fft_plan_describe(const tide_fft_plan *p, char *buf, size_t len)
{
    if (!p || !buf || !len)
        return tide_fail(p ? p->ctx : NULL, TIDE_ERR_ARGUMENT,
                         "tide_fft_plan_describe: NULL argument");
    size_t used = 0;
    buf[0] = '\0';
    if (p->ooc)
        snprintf(buf, len, "%s", p->ooc_what);
    for (int i = 0; i < p->fwd.nops && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? " > " : "",
                                 p->fwd.ops[i].what);
    return TIDE_SUCCESS;
}

/* ---- execution ------------------------------------------------------------------------- */

static void *where(const tide_fft_plan *p, int loc, const void *in, void *out)
{
    switch (loc) {
    case LOC_IN: return (void *)in;
    case LOC_OUT: return out;
    default: return p->w[loc - LOC_W0];
    }
}

static void scale(tide_precision prec, void *data, long long count, double s)
{
    if (prec == TIDE_DOUBLE) {
        double *d = data;
        for (long long i = 0; i < count; i++)
            d[i] *= s;
    } else {
        float *f = data, fs = (float)s;
        for (long long i = 0; i < count; i++)
            f[i] *= fs;
    }
}

/* Why in or out cannot serve this plan on this rank ("" when they can). */
static const char *bad_array(const tide_fft_plan *p, int dir, const void *in, void *out)
{
    int in_needed = dir < 0 ? tide_box_count(&p->inbox) > 0 : tide_box_count(&p->outbox) > 0;
    int out_needed = dir < 0 ? tide_box_count(&p->outbox) > 0 : tide_box_count(&p->inbox) > 0;
    if ((in_needed && !in) || (out_needed && !out))
        return "a NULL array";
#if TIDE_HAVE_CUDA
    if (p->ctx->backend == TIDE_BACKEND_CUDA) {
        int dev = p->o.location == TIDE_LOCATION_DEVICE;
        int kin = in_needed ? tide_gpu_pointer_kind(in) : dev * TIDE_MEM_DEVICE;
        int kout = out_needed ? tide_gpu_pointer_kind(out) : dev * TIDE_MEM_DEVICE;
        static _Thread_local char why[160];
        if (kin < 0 || kout < 0)
            return snprintf(why, sizeof why, "an array CUDA cannot identify (%s)",
                            tide_gpu_last_error()), why;
        if (dev && (kin != TIDE_MEM_DEVICE || kout != TIDE_MEM_DEVICE))
            return "a host array to a plan whose arrays are on the device";
        if (!dev && (kin == TIDE_MEM_DEVICE || kout == TIDE_MEM_DEVICE))
            return "a device array to a plan whose arrays are in host memory";
    }
#endif
    return "";
}

/* One op on the CPU or the GPU. */
static int run_op(tide_fft_plan *p, const op *o, void *src, void *dst, const void *in, void *out)
{
    if (o->kind == OP_RESHAPE)
        return p->gpu ? tide_reshape_execute_device(o->reshape, src, dst, p->sendbuf,
                                                    p->recvbuf, p->hsend, p->hrecv)
                      : tide_reshape_execute(o->reshape, src, dst, p->sendbuf, p->recvbuf);
    if (!o->fft && !o->gfft)
        return TIDE_SUCCESS; /* empty box */
    /* The staged copy keeps the transform from writing where it still reads (in == out, or
     * c2r, which overwrites its input) and out-of-place inputs unmodified. */
    if (o->stage_input && ((src == dst && !o->runs_in_place) || o->overwrites_input)) {
        void *stage = where(p, o->stage_loc, in, out);
#if TIDE_HAVE_CUDA
        if (p->gpu) {
            int st = tide_gpu_memcpy_async(stage, src, o->stage_bytes, p->stream);
            if (st)
                return st;
        } else
#endif
            memcpy(stage, src, o->stage_bytes);
        src = stage;
    }
#if TIDE_HAVE_CUDA
    if (p->gpu)
        return tide_gpu_fft_execute(o->gfft, src, dst);
#endif
    tide_cpu_fft_execute(o->fft, src, dst);
    return TIDE_SUCCESS;
}

/* Execution on a CUDA context is ordered after the work the caller queued on the legacy
 * default stream before the call (a pageable cudaMemcpy may return before its data has
 * landed; a kernel or copy may still be queued). The plan's stream waits for it on the
 * device; the streamed path and CPU plans, whose CPU threads also read and write host arrays,
 * wait for it on the host. Returns 0 or a code with the reason in why. */
static int after_caller(const tide_fft_plan *p, char *why, size_t len)
{
#if TIDE_HAVE_CUDA
    if (p->entry && tide_gpu_after(NULL, p->entry, p->gpu && !p->ooc ? p->stream : NULL))
        return snprintf(why, len, "could not wait for the caller's earlier CUDA work (%s) in",
                        tide_gpu_last_error()), TIDE_ERR_BACKEND;
#else
    (void)p, (void)why, (void)len;
#endif
    return TIDE_SUCCESS;
}

static int run(tide_fft_plan *p, const program *prog, int dir, const void *in, void *out)
{
    tide_context *ctx = p->ctx;
    const char *fn = dir < 0 ? "forward" : "backward";
    /* Agree first, so a bad pointer on one rank is an error on all instead of a hang. */
    struct {
        int code;
        char why[200];
    } mine = {TIDE_SUCCESS, ""};
    const char *bad = bad_array(p, dir, in, out);
    if (*bad)
        mine.code = TIDE_ERR_ARGUMENT, snprintf(mine.why, sizeof mine.why, "passed %s to", bad);
    else
        mine.code = after_caller(p, mine.why, sizeof mine.why);
    int v[3] = {mine.code ? ctx->rank : ctx->nranks, dir, -dir}, agreed[3];
    if (MPI_Allreduce(v, agreed, 3, MPI_INT, MPI_MIN, ctx->comm) != MPI_SUCCESS)
        return tide_fail(ctx, TIDE_ERR_MPI, "MPI_Allreduce failed at the start of a transform");
    if (agreed[0] < ctx->nranks) {
        MPI_Bcast(&mine, (int)sizeof mine, MPI_BYTE, agreed[0], ctx->comm);
        return tide_fail(ctx, mine.code, "rank %d %s tide_fft_%s", agreed[0], mine.why, fn);
    }
    if (agreed[1] != -agreed[2])
        return tide_fail(ctx, TIDE_ERR_MISMATCH,
                         "some ranks called tide_fft_forward and others tide_fft_backward");
    if (p->ooc) {
        char err[TIDE_MSG_LEN] = "";
        int rc = tide_ooc_execute(p->ooc, dir, prog->scale, in, out, err, sizeof err);
        if (rc)
            tide_fail(ctx, rc, "streaming tide_fft_%s through the GPU: %s", fn, err);
        return tide_agree(ctx, rc);
    }
    /* Host arrays on the GPU: the whole input goes up, the program runs on its device copies,
     * the output comes down. */
    void *uout = out;
    size_t in_b = 0, out_b = 0;
    int host_gpu = p->gpu && p->o.location == TIDE_LOCATION_HOST;
    int st = TIDE_SUCCESS, timed = ctx->log_level >= TIDE_LOG_DEBUG;
#if TIDE_HAVE_CUDA
    if (host_gpu) {
        size_t ib = (size_t)tide_box_count(&p->inbox) * p->o.batch * p->in_elem;
        size_t ob = (size_t)tide_box_count(&p->outbox) * p->o.batch * p->out_elem;
        in_b = dir < 0 ? ib : ob;
        out_b = dir < 0 ? ob : ib;
        st = tide_gpu_memcpy_async(p->din, in, in_b, p->stream);
        in = p->din;
        out = p->dout;
    }
#endif
    /* After a local failure a rank skips its local work but still takes part in every
     * exchange, so that no peer waits for it; the failure is agreed at the end. */
    char times[256] = "";
    const char *failed_at = "";
    for (int i = 0, used = 0; i < prog->nops; i++) {
        const op *o = &prog->ops[i];
        if (st && o->kind != OP_RESHAPE)
            continue;
        double t0 = timed ? MPI_Wtime() : 0;
        int rc = run_op(p, o, where(p, o->src, in, out), where(p, o->dst, in, out), in, out);
        if (rc && !st)
            failed_at = o->what;
        st = st ? st : rc;
#if TIDE_HAVE_CUDA
        if (timed && p->gpu && !st)
            st = tide_gpu_sync(p->stream);
#endif
        if (timed && used < (int)sizeof times)
            used += snprintf(times + used, sizeof times - (size_t)used, " %s %.3g ms", o->what,
                             (MPI_Wtime() - t0) * 1e3);
    }
    if (timed)
        tide_log(ctx, TIDE_LOG_DEBUG, "%s:%s", fn, times);
    if (!st && prog->scale != 1.0) {
#if TIDE_HAVE_CUDA
        if (p->gpu)
            st = tide_gpu_scale(p->o.precision == TIDE_DOUBLE, out, prog->out_scalars,
                                prog->scale, p->stream);
        else
#endif
            scale(p->o.precision, out, prog->out_scalars, prog->scale);
    }
#if TIDE_HAVE_CUDA
    if (!st && host_gpu)
        st = tide_gpu_memcpy_async(uout, p->dout, out_b, p->stream);
    if (p->gpu) {
        int sync = tide_gpu_sync(p->stream);
        st = st ? st : sync;
    }
    if (st && st != TIDE_ERR_MPI)
        tide_fail(ctx, st, "GPU failure during tide_fft_%s%s%s: %s", fn, *failed_at ? " in " : "",
                  failed_at, tide_gpu_last_error());
    else
#else
    (void)uout, (void)in_b, (void)out_b, (void)host_gpu;
#endif
    if (st)
        tide_fail(ctx, st, "an MPI exchange failed during tide_fft_%s%s%s", fn,
                  *failed_at ? " in " : "", failed_at);
    return tide_agree(ctx, st);
}

int tide_fft_forward(tide_fft_plan *plan, const void *in, void *out)
{
    if (!plan)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_fft_forward: plan is NULL");
    return run(plan, &plan->fwd, -1, in, out);
}

int tide_fft_backward(tide_fft_plan *plan, const void *in, void *out)
{
    if (!plan)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_fft_backward: plan is NULL");
    return run(plan, &plan->bwd, +1, in, out);
}
