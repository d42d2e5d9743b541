/*
 * fft.c: distributed 3D FFT plans on the plan core: the request agreed on every rank
 * (args.c), the stage chain of the decomposition (layout.c), and the program of reshapes,
 * local FFTs and scaling (program.c) that the executor runs on the plan's backend
 * (backend_cpu.c, backend_cuda.c). Host arrays in slabs stream through the GPU in chunks
 * instead (fft_streamed.c): on one rank always, on several when they exceed the device budget.
 *
 * Stage s transforms a group of dimensions (y,z then x for slabs; z, y, x for pencils; all
 * three on one rank) in a layout where every rank holds whole lines along them; a real
 * transform's first stage takes dimension 2 from n to n/2+1. Backward runs the same chain in
 * reverse.
 */
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/args.h"
#include "fft/fft_streamed.h"
#include "fft/solver_streamed.h"
#include "plan/layout.h"
#include "plan/program.h"
#include "comm/region.h"
#include "plan/solver.h"

struct tide_fft_plan {
    tide_context *ctx;
    int held;             /* counted on ctx (tide_context_hold) */
    int n[3], nout[3];    /* input (real for R2C) and output grid */
    int half;             /* R2C: the dimension halved (2; a solver's highest transformed by a
                           * DFT; -1 when it has none: real data throughout) */
    tide_fft_options o;
    tide_box inbox, outbox;
    size_t in_elem, out_elem;
    tide_program fwd, bwd;
    tide_program solve;   /* a solver plan's only program (solver.h) */
    const tide_fft_middle *mid; /* a solver plan's middle op; NULL for transforms */
    tide_env env;         /* what the ops run with (backend, buffers, stream) */
    void *w[2];
    size_t wbytes;
    tide_decomposition decomp;
    tide_exchange exchange;
    void *entry;          /* event: execution waits for the caller's earlier CUDA work */
    void *din, *dout;     /* host arrays on the GPU: their device copies */
    size_t dio_bytes;
    /* Host arrays streamed through the GPU in chunks instead of the program. */
    tide_streamed *streamed;
    char stream_what[384];
    int stream_exchanges; /* per transform: 0 (one rank), 1 (transposed) or 2 */
    int cpu_x;            /* a streamed solve: the CPU does the x transforms ... */
    double cpu_seconds;   /* ... in this time (tide_solver_streamed_cpu_seconds) */
    double fwd_scale, bwd_scale;
};

/* ---- the request ----------------------------------------------------------------------- */

enum {
    F_N0, F_N1, F_N2, F_TYPE, F_PRECISION, F_BACKEND, F_DECOMP, F_EXCHANGE, F_SCALING,
    F_PLANNING, F_BATCH, F_TRANSPOSED, F_LOCATION, F_ASYNC, NFIELDS
};
static const tide_arg_field fields[NFIELDS] = {
    {"n[0]", 1, INT_MAX},
    {"n[1]", 1, INT_MAX},
    {"n[2]", 1, INT_MAX},
    {"option type", TIDE_C2C, TIDE_R2C},
    {"option precision", TIDE_DOUBLE, TIDE_FLOAT},
    {"option backend", TIDE_BACKEND_AUTO, TIDE_BACKEND_CUDA},
    {"option decomposition", TIDE_DECOMP_AUTO, TIDE_DECOMP_PENCILS},
    {"option exchange", TIDE_EXCHANGE_AUTO, TIDE_EXCHANGE_CUDA_MPI},
    {"option scaling", TIDE_SCALE_NONE, TIDE_SCALE_SYMMETRIC},
    {"option planning", TIDE_PLAN_ESTIMATE, TIDE_PLAN_MEASURE},
    {"option batch", 1, INT_MAX},
    {"option transposed_out", INT_MIN, INT_MAX},
    {"option location", TIDE_LOCATION_HOST, TIDE_LOCATION_DEVICE},
    {"option async", 0, 1},
};
enum { BOX_IN, BOX_OUT };
static const char *const box_names[] = {"input", "output"};
static const tide_args_spec spec = {"tide_fft_plan_create", fields, NFIELDS, NULL, 0,
                                    box_names, 2};

static void make_request(const tide_context *ctx, const int n[3], const tide_box *inbox,
                         const tide_box *outbox, const tide_fft_options *o,
                         tide_fft_plan **plan, int enter_st, tide_args *r)
{
    memset(r, 0, sizeof *r);
    if (enter_st)
        tide_args_fail(r, TIDE_ERR_BACKEND, "cannot make GPU %d current: %s", ctx->dev.device,
                       tide_backend_cuda()->last_error());
    if (!plan)
        tide_args_fail(r, TIDE_ERR_ARGUMENT, "plan pointer is NULL");
    if (!n)
        tide_args_fail(r, TIDE_ERR_ARGUMENT, "n is NULL");
    else
        memcpy(r->v, n, 3 * sizeof(int));
    int v[] = {o->type,    o->precision, o->backend, o->decomposition,  o->exchange,
               o->scaling, o->planning,  o->batch,   o->transposed_out, o->location,
               o->async};
    memcpy(r->v + F_TYPE, v, sizeof v);
    tide_args_check_ranges(&spec, r);
    r->has[BOX_IN] = inbox != NULL;
    r->has[BOX_OUT] = outbox != NULL;
    if (inbox)
        r->box[BOX_IN] = *inbox;
    if (outbox)
        r->box[BOX_OUT] = *outbox;
}

/* Backend, location and exchange against what the context has (agreed at its creation). */
static int judge_backend(tide_context *ctx, const int *v)
{
    int cuda = tide_wants_cuda(ctx, v[F_BACKEND]), x = v[F_EXCHANGE];
    int st = tide_args_backend(ctx, v[F_BACKEND], v[F_LOCATION]);
    if (st)
        return st;
    if ((x == TIDE_EXCHANGE_NCCL || x == TIDE_EXCHANGE_CUDA_MPI) && !cuda)
        return tide_fail(ctx, TIDE_ERR_UNSUPPORTED, "exchange %s moves GPU data; this plan runs "
                         "on the CPU", tide_exchange_name(x));
    if (x == TIDE_EXCHANGE_NCCL && !ctx->nccl_usable)
        return tide_fail(ctx, TIDE_ERR_UNSUPPORTED, "exchange nccl: NCCL needs a build with NCCL "
                         "and a GPU of its own for every rank");
    if (x == TIDE_EXCHANGE_CUDA_MPI && !ctx->cuda_aware_mpi)
        return tide_fail(ctx, TIDE_ERR_UNSUPPORTED, "exchange cuda-mpi: the MPI library does not "
                         "take device pointers (MPIX_Query_cuda_support)");
    return TIDE_SUCCESS;
}

/* The verdict on the agreed request, the same on every rank. */
static int judge(tide_context *ctx, const tide_args *all)
{
    const int *v = all[0].v;
    if ((double)v[F_N0] * v[F_N1] * v[F_N2] * v[F_BATCH] > 4.0e18)
        return tide_fail(ctx, TIDE_ERR_TOO_LARGE, "%dx%dx%d x %d fields is too many points",
                         v[F_N0], v[F_N1], v[F_N2], v[F_BATCH]);
    int nout[3] = {v[F_N0], v[F_N1], v[F_TYPE] == TIDE_R2C ? v[F_N2] / 2 + 1 : v[F_N2]};
    int st = all[0].has[BOX_IN] ? tide_args_check_tiling(ctx, &spec, all, BOX_IN, v)
                                : TIDE_SUCCESS;
    if (!st && all[0].has[BOX_OUT])
        st = tide_args_check_tiling(ctx, &spec, all, BOX_OUT, nout);
    if (!st && v[F_TRANSPOSED] && all[0].has[BOX_OUT])
        st = tide_fail(ctx, TIDE_ERR_ARGUMENT, "transposed_out asks Tide to choose the output "
                       "boxes, but outbox was given");
    return st ? st : judge_backend(ctx, v);
}

/* ---- the stage chain ------------------------------------------------------------------- */

typedef struct {
    tide_decomposition mode;
    int pg[2];                 /* pencils: the process grid of the two cut dimensions */
    int cut2;                  /* slabs: the dimension the second layout cuts (y; z when a
                                * solver's middle op needs y whole) */
    int transform;             /* the transformed dimensions, as bits (a solver's may omit one) */
    int rstage;                /* R2C: the stage of the real transform (its grids up to it are
                                * real; a solver with no DFT: past the last) */
    int r2r[3];                /* a solver's real-to-real dimensions (tide_fft_middle) */
    int solver;                /* the chain has a solver's middle op */
    int gpu;                   /* the backend runs on the GPU */
    /* Per stage: the transformed dimensions, as bits (0: a solver's middle op), and which of
     * the decomposition's layouts it runs in by default (default_layout). */
    int dims[TIDE_CHAIN_STAGES], lay[TIDE_CHAIN_STAGES];
} fft_chain;

/* The decomposition's layouts, each with the dimensions it holds whole (whole[]) and the group
 * of dimensions it transforms (group[]): slabs transform (y,z) in x-slabs, then x in y-slabs
 * (or z-slabs, see cut2); pencils z, y, x in z-, y- and x-pencils; one rank all three at
 * once. Returns the number of layouts. */
static int layouts(const fft_chain *f, int whole[3], int group[3])
{
    if (f->mode == TIDE_DECOMP_SLABS) {
        whole[0] = 6, whole[1] = 7 & ~(1 << f->cut2);
        group[0] = 6, group[1] = 1;
        return 2;
    }
    if (f->mode == TIDE_DECOMP_PENCILS) {
        for (int ds = 0; ds < 3; ds++)
            whole[ds] = group[ds] = 4 >> ds;
        return 3;
    }
    whole[0] = group[0] = 7;
    return 1;
}

/* The layout the decomposition uses for stage s, on grid g, C order: z stays contiguous, so
 * packs copy whole z rows, and y-slabs receive each peer's block as one contiguous run. A
 * solver's layouts store the untransformed (bounded) dimension slowest instead, then the
 * others in order, the halved one last: cuFFT's real transforms want that (tide_stage's
 * gpu_real), and the line solves then read neighbouring lines from neighbouring addresses.
 * On the GPU, in a solver's second slab layout x, which it transforms there, is stored fastest
 * when it would lie between the other two (a bounded z): its lines then form one batch of
 * contiguous lines, where between the others the batch spans two strides that do not merge
 * and cuFFT, which takes one batch stride, is launched once per plane of z (nine times the time
 * per point of the transform along y on two H200). The exchange into that layout permutes as
 * it packs. FFTW takes both strides in one plan, and on the CPU the permuting pack cost more
 * than the transform gained (128^3, two ranks), so the CPU keeps the order. */
static tide_layout default_layout(tide_chain *c, int s, const int g[3])
{
    const fft_chain *f = c->user;
    tide_layout l = tide_layout_new(c);
    if (!l)
        return NULL;
    int grid[3] = {1, 1, 1}, ds = f->lay[s];
    if (f->mode == TIDE_DECOMP_SLABS) {
        grid[ds == 0 ? 0 : f->cut2] = c->P; /* x-slabs, y- (or z-) slabs */
    } else if (f->mode == TIDE_DECOMP_PENCILS) {
        int whole = 2 - ds, k = 0;          /* z-, y-, x-pencils */
        for (int d = 0; d < 3; d++)
            if (d != whole)
                grid[d] = f->pg[k++];
    }
    int order[3], k = 0;
    for (int pass = 0; pass < 3; pass++) /* untransformed, real-to-real, then DFT dimensions */
        for (int d = 0; d < 3; d++)
            if ((!(f->transform & (1 << d)) ? 0 : f->r2r[d] ? 1 : 2) == pass)
                order[k++] = d;
    if (f->solver && f->gpu && f->mode == TIDE_DECOMP_SLABS && ds == 1 && order[1] == 0 &&
        (f->transform & 1) && f->r2r[0] == TIDE_R2R_NONE)
        order[1] = order[2], order[2] = 0;
    for (int r = 0; r < c->P; r++) {
        tide_box_in_grid(g, grid, r, &l[r]);
        memcpy(l[r].order, order, sizeof order);
    }
    return l;
}

/* The stages of a decomposition (AUTO here: one rank): its groups of the transformed
 * dimensions, the first one real when the plan is; a solver's middle op last, in the layout
 * nearest the last transform's that holds the lines the op needs. */
static void set_stages(tide_chain *c, fft_chain *f, const tide_fft_plan *p)
{
    int mask = f->transform = p->mid ? p->mid->transform : 7, r2c = p->o.type == TIDE_R2C;
    for (int d = 0; d < 3; d++)
        f->r2r[d] = p->mid ? p->mid->r2r[d] : TIDE_R2R_NONE;
    f->rstage = !r2c ? -1 : p->half < 0 ? TIDE_CHAIN_STAGES : 0;
    f->cut2 = p->mid && (p->mid->whole & 2) && c->P <= p->nout[2] ? 2 : 1;
    f->solver = p->mid != NULL;
    f->gpu = p->env.be->gpu;
    int whole[3], group[3], nl = layouts(f, whole, group);
    c->nstages = 0;
    for (int ds = 0; ds < nl; ds++) {
        int s = c->nstages, dims = group[ds] & mask;
        if (!dims)
            continue;
        c->nstages++;
        f->dims[s] = dims;
        f->lay[s] = ds;
        int real = r2c && p->half >= 0 && (dims & (1 << p->half));
        if (real)
            f->rstage = s;
        c->stage[s] = (tide_stage){.whole = dims, .resize_dim = real ? p->half : -1,
                                   .resize_to = real ? p->nout[p->half] : 0,
                                   .gpu_real = real && p->env.be->gpu};
    }
    if (p->mid) {
        int s = c->nstages++, need = p->mid->whole, last = f->lay[s - 1], ds = last;
        while (ds >= 0 && (whole[ds] & need) != need)
            ds--;
        if (ds < 0) /* every dimension is whole in one of the layouts */
            for (ds = last; ds < nl - 1 && (whole[ds] & need) != need;)
                ds++;
        f->dims[s] = 0;
        f->lay[s] = ds;
        c->stage[s] = (tide_stage){.whole = need, .resize_dim = -1};
    }
    f->pg[0] = f->pg[1] = 1;
    if (f->mode == TIDE_DECOMP_PENCILS) {
        int split[3] = {1, 1, 0}, g3[3];
        tide_proc_grid(c->P, p->n, split, g3);
        f->pg[0] = g3[0], f->pg[1] = g3[1];
    }
    c->deflt = default_layout;
    c->user = f;
}

/* Builds the chain of one decomposition. uin/uout: the users' layouts or NULL. */
static int build_chain(tide_chain *c, fft_chain *f, const tide_fft_plan *p,
                       tide_decomposition mode, tide_layout uin, tide_layout uout)
{
    tide_chain_free(c);
    memset(c, 0, sizeof *c);
    c->P = p->ctx->nranks;
    c->rank = p->ctx->rank;
    f->mode = mode;
    set_stages(c, f, p);
    tide_layout in = uin ? uin : default_layout(c, 0, p->n);
    tide_layout out = uout                ? uout
                      : p->o.transposed_out ? NULL
                                            : default_layout(c, 0, p->nout);
    if (!in || (!out && !p->o.transposed_out))
        return TIDE_ERR_NOMEM;
    return tide_chain_build(c, p->n, in, out);
}

/* The decomposition: slabs unless ranks would sit idle, or, with both boxes given, whichever
 * needs fewer exchanges (the rule on ties); one rank: a single 3D transform. */
static int choose_chain(tide_chain *c, fft_chain *f, tide_fft_plan *p, tide_layout uin,
                        tide_layout uout)
{
    int P = p->ctx->nranks;
    tide_decomposition mode = p->o.decomposition;
    if (P == 1)
        mode = TIDE_DECOMP_AUTO;
    else if (mode == TIDE_DECOMP_AUTO) {
        mode = P <= p->n[0] && P <= p->n[1] ? TIDE_DECOMP_SLABS : TIDE_DECOMP_PENCILS;
        if (uin && uout) {
            tide_decomposition other = mode == TIDE_DECOMP_SLABS ? TIDE_DECOMP_PENCILS
                                                                 : TIDE_DECOMP_SLABS;
            int st = build_chain(c, f, p, other, uin, uout);
            int alt = c->exchanges;
            if (!st)
                st = build_chain(c, f, p, mode, uin, uout);
            if (st)
                return st;
            if (alt >= c->exchanges)
                return (p->decomp = mode), TIDE_SUCCESS;
            mode = other;
        }
    }
    p->decomp = mode;
    return build_chain(c, f, p, mode, uin, uout);
}

/* ---- the programs ---------------------------------------------------------------------- */

/* Bytes of every field of box b on this rank (real: the real side of an r2c plan). */
static size_t box_bytes(const tide_fft_plan *p, const tide_box *b, int real)
{
    return (size_t)tide_box_count(b) * (size_t)p->o.batch * (real ? p->in_elem : p->out_elem);
}

/* Whether grid g of the chain holds the real side of an r2c plan. */
static int grid_real(const tide_fft_plan *p, const fft_chain *f, int g)
{
    return p->o.type == TIDE_R2C && g <= f->rstage;
}

/* The steps of a program: the forward steps (dir -1), the backward ones (+1), or both with
 * the middle op between them (0: a solver, solver.h; its op is the chain's last stage, the
 * last forward step, *mid its index, else -1). Steps from *back on belong to the backward
 * transform. Returns the number of steps. */
static int program_steps(const tide_chain *c, int dir, tide_chain_step *steps, int *back,
                         int *mid)
{
    int ns = dir <= 0 ? tide_chain_steps(c, 0, steps) : 0;
    *mid = dir == 0 ? ns - 1 : -1;
    *back = ns;
    if (dir < 0)
        return ns;
    tide_chain_step rev[TIDE_CHAIN_STEPS];
    int nr = tide_chain_steps(c, 1, rev), skip = dir == 0; /* the middle stage, reversed */
    memcpy(steps + ns, rev + skip, (size_t)(nr - skip) * sizeof *rev);
    return ns + nr - skip;
}

/* Step i's local FFT: its transformed dimensions, direction and kind, planned on the buffers
 * its placement says. */
static int make_fft(tide_fft_plan *p, const tide_chain *c, const fft_chain *f,
                    const tide_chain_step *s, int reverse, tide_op *o, tide_op *then,
                    char *err, size_t len)
{
    int real = p->o.type == TIDE_R2C && s->stage == f->rstage, me = p->ctx->rank, dft = 0;
    for (int k = 0; k < 3; k++)
        dft = dft || ((f->dims[s->stage] & (1 << k)) && f->r2r[k] == TIDE_R2R_NONE);
    tide_cpu_fft_desc d = {
        .precision = p->o.precision, .sign = reverse ? +1 : -1,
        .kind = !dft    ? TIDE_KIND_R2R
                : !real ? TIDE_KIND_C2C
                : reverse ? TIDE_KIND_C2R
                          : TIDE_KIND_R2C,
        .complex_elems = !grid_real(p, f, s->stage),
        .ibox = &s->from[me], .obox = &s->to[me], .half = c->stage[s->stage].resize_dim,
        .real_n = p->half >= 0 ? p->n[p->half] : 0,
        .batch = p->o.batch, .measure = p->o.planning == TIDE_PLAN_MEASURE,
        .threads = p->env.threads,
        .user_memory = o->src == TIDE_LOC_IN || o->dst == TIDE_LOC_OUT};
    int fused = 0;
    if (then) {
        d.then = then->spec;
        d.fused = &fused;
    }
    for (int k = 0; k < 3; k++)
        if (f->dims[s->stage] & (1 << k)) {
            d.dims[d.ndims++] = k;
            d.r2r[k] = reverse ? (int)tide_r2r_inverse((tide_r2r_kind)f->r2r[k]) : f->r2r[k];
        }
    if (o->stage_input) {
        d.in = p->w[o->stage_loc - TIDE_LOC_W0];
        d.out = p->w[TIDE_LOC_W1 - o->stage_loc];
    } else {
        d.in = tide_program_stand_in(p->w, o->src, o->dst);
        d.out = o->dst == o->src ? d.in : tide_program_stand_in(p->w, o->dst, o->src);
    }
    int st = tide_op_fft(o, &p->env, &d, &p->env.fft_work_bytes, err, len);
    if (!st && fused)
        tide_op_spectral_fused(then);
    else if (!st && then && p->env.be->gpu && tide_box_count(d.ibox) > 0)
        tide_log(p->ctx, TIDE_LOG_DEBUG, "%s > %s: the scaling stays a pass of its own: %s",
                 o->what, then->what, p->env.be->last_error());
    return st;
}

/* The ops of a program (program_steps): step shapes first (kind, in place), then placement,
 * then the ops themselves, FFTs planned on the buffers they will use. */
static int make_program(tide_fft_plan *p, const tide_chain *c, const fft_chain *f, int dir,
                        tide_program *prog, char *err, size_t len)
{
    tide_chain_step steps[2 * TIDE_CHAIN_STEPS + 1];
    int back, mid;
    int ns = program_steps(c, dir, steps, &back, &mid), r2c = p->o.type == TIDE_R2C;
    double scale = dir < 0 ? p->fwd_scale : dir > 0 ? p->bwd_scale : 1.0;
    memset(prog, 0, sizeof *prog);
    for (int i = 0; i < ns; i++) {
        tide_op *o = &prog->ops[i];
        if (i == mid) {
            o->kind = TIDE_OP_POINTWISE;
            o->in_place_ok = 1;
            continue;
        }
        o->kind = steps[i].stage < 0 ? TIDE_OP_RESHAPE : TIDE_OP_FFT;
        int real = r2c && steps[i].stage == f->rstage;
        o->in_place_ok = o->kind == TIDE_OP_FFT && !real && steps[i].from == steps[i].to;
        o->overwrites_input = real && i >= back; /* c2r */
    }
    prog->nops = ns + (scale != 1.0);
    if (scale != 1.0) {
        long long count = tide_box_count(dir > 0 ? &p->inbox : &p->outbox) * p->o.batch;
        tide_op_scale(&prog->ops[ns], p->o.precision == TIDE_DOUBLE,
                      count * (dir > 0 && r2c ? 1 : 2), scale);
    }
    tide_program_place(prog, p->env.be->gpu);
    /* The middle op first: the local FFT right before it may apply it as it stores its
     * output (a diagonal op in place; make_fft's then), and then it runs as nothing. */
    tide_op *then = NULL;
    if (mid >= 0) {
        const tide_chain_step *s = &steps[mid];
        tide_op *o = &prog->ops[mid];
        int st = p->mid->make(o, &p->env, &s->from[p->ctx->rank], c->grid[s->from_grid], 0,
                              p->mid->user, err, len);
        if (st)
            return st;
        if (mid > 0 && steps[mid - 1].stage >= 0 && o->kind == TIDE_OP_POINTWISE &&
            o->src == o->dst)
            then = o;
    }
    for (int i = 0; i < ns; i++) {
        const tide_chain_step *s = &steps[i];
        tide_op *o = &prog->ops[i];
        int st;
        if (i == mid)
            continue;
        if (s->stage < 0) {
            int real = grid_real(p, f, s->from_grid);
            st = tide_op_reshape(o, &p->env, s->from, s->to, real ? p->in_elem : p->out_elem,
                                 p->o.batch, err, len);
        } else {
            st = make_fft(p, c, f, s, i >= back, o, i == mid - 1 ? then : NULL, err, len);
        }
        if (st)
            return st;
        if (o->kind == TIDE_OP_RESHAPE) {
            size_t sb = tide_reshape_send_bytes(o->reshape);
            size_t rb = tide_reshape_recv_bytes(o->reshape);
            p->env.sbytes = sb > p->env.sbytes ? sb : p->env.sbytes;
            p->env.rbytes = rb > p->env.rbytes ? rb : p->env.rbytes;
            if (i < back)
                p->exchange = tide_reshape_exchange(o->reshape);
        }
    }
    return TIDE_SUCCESS;
}

/* Allocates the work buffers (before planning: FFTW plans on them). */
static int alloc_work(tide_fft_plan *p, char *err, size_t len)
{
    const tide_backend_ops *be = p->env.be;
    if (be->alloc(p->wbytes, &p->w[0]) || be->alloc(p->wbytes, &p->w[1]))
        return snprintf(err, len, "out of memory: 2 work arrays of %zu bytes", p->wbytes),
               TIDE_ERR_NOMEM;
    return TIDE_SUCCESS;
}

/* The device memory a GPU plan needs, checked against the context's budget. */
static size_t device_need(const tide_fft_plan *p)
{
    return 2 * p->wbytes + p->env.sbytes + p->env.rbytes + p->env.fft_work_bytes +
           2 * p->dio_bytes;
}

/* The exchange staging (and, on the GPU, the FFT work area, the device copies of host arrays
 * and pinned staging), after planning; the FFTs get their work area and stream. */
static int alloc_rest(tide_fft_plan *p, char *err, size_t len)
{
    tide_context *ctx = p->ctx;
    tide_env *e = &p->env;
    const tide_backend_ops *be = e->be;
    if (be->gpu) {
        if (p->o.location == TIDE_LOCATION_HOST) {
            size_t ib = box_bytes(p, &p->inbox, p->o.type == TIDE_R2C);
            size_t ob = box_bytes(p, &p->outbox, 0);
            p->dio_bytes = ib > ob ? ib : ob;
        }
        if (device_need(p) > ctx->dev.budget_bytes)
            return snprintf(err, len, "the plan needs %.3g GB of device memory on GPU %d, more "
                            "than the context's budget of %.3g GB", device_need(p) / 1e9,
                            ctx->dev.device, ctx->dev.budget_bytes / 1e9), TIDE_ERR_NOMEM;
        if (alloc_work(p, err, len))
            return TIDE_ERR_NOMEM;
    }
    void **ptr[] = {&e->sendbuf, &e->recvbuf, &e->fft_work, &p->din, &p->dout};
    size_t size[] = {e->sbytes, e->rbytes, e->fft_work_bytes, p->dio_bytes, p->dio_bytes};
    for (int i = 0; i < (be->gpu ? 5 : 2); i++)
        if (be->alloc(size[i], ptr[i]))
            return snprintf(err, len, "cannot allocate %zu bytes of work memory (%s): %s",
                            size[i], be->name, be->last_error()), TIDE_ERR_NOMEM;
    int staged = be->gpu && e->transport != TIDE_EXCHANGE_NCCL &&
                 e->transport != TIDE_EXCHANGE_CUDA_MPI;
    if (staged && (be->host_alloc(e->sbytes, &e->hsend) || be->host_alloc(e->rbytes, &e->hrecv)))
        return snprintf(err, len, "cannot allocate %zu + %zu bytes of pinned host memory",
                        e->sbytes, e->rbytes), TIDE_ERR_NOMEM;
    tide_program *progs[3] = {&p->fwd, &p->bwd, &p->solve};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < progs[k]->nops; i++)
            if (progs[k]->ops[i].fft && be->fft_bind(e, progs[k]->ops[i].fft))
                return snprintf(err, len, "the backend rejected an FFT's work area or stream "
                                "(%s)", be->last_error()), TIDE_ERR_BACKEND;
    return TIDE_SUCCESS;
}

/* The chain, buffers and programs of a validated request. Local failures only. */
static int build_plan(tide_fft_plan *p, tide_layout uin, tide_layout uout, char *err,
                      size_t len)
{
    tide_chain c = {0};
    fft_chain f;
    int st = choose_chain(&c, &f, p, uin, uout);
    if (st) {
        tide_chain_free(&c);
        return snprintf(err, len, "out of memory planning"), st;
    }
    p->inbox = c.in[p->ctx->rank];
    p->outbox = c.out[p->ctx->rank];
    /* Work buffers hold any layout of the chain, and the input when it must be staged. */
    tide_chain_step steps[TIDE_CHAIN_STEPS];
    int ns = tide_chain_steps(&c, 0, steps);
    for (int i = 0; i < ns; i++) {
        int me = p->ctx->rank;
        size_t a = box_bytes(p, &steps[i].from[me], grid_real(p, &f, steps[i].from_grid));
        size_t b = box_bytes(p, &steps[i].to[me], grid_real(p, &f, steps[i].to_grid));
        p->wbytes = a > p->wbytes ? a : p->wbytes;
        p->wbytes = b > p->wbytes ? b : p->wbytes;
    }
    p->exchange = TIDE_EXCHANGE_AUTO; /* until a forward reshape says which */
    if (!p->env.be->gpu)
        st = alloc_work(p, err, len);
    if (!st && p->mid)
        st = make_program(p, &c, &f, 0, &p->solve, err, len);
    if (!st && !p->mid)
        st = make_program(p, &c, &f, -1, &p->fwd, err, len);
    if (!st && !p->mid)
        st = make_program(p, &c, &f, 1, &p->bwd, err, len);
    if (!st)
        st = alloc_rest(p, err, len);
    tide_chain_free(&c);
    return st;
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
 * (fft_streamed.c): x-slabs in and x-slabs or y-slabs out (NULL boxes, or boxes equal to
 * tide_box_slab's on every rank), slabs that fit, and between several ranks NCCL or MPI point
 * to point in host memory. *transposed: the output is y-slabs. The same answer on every
 * rank (all holds every rank's request). */
/* Whether the options let host arrays stream: host location, slabs, and between several ranks
 * NCCL or MPI point to point in host memory. */
static int stream_options_ok(const tide_context *ctx, const tide_fft_options *o)
{
    tide_exchange e = o->exchange;
    return o->location == TIDE_LOCATION_HOST &&
           (o->decomposition == TIDE_DECOMP_AUTO || o->decomposition == TIDE_DECOMP_SLABS) &&
           (ctx->nranks == 1 || e == TIDE_EXCHANGE_AUTO || e == TIDE_EXCHANGE_P2P ||
            (e == TIDE_EXCHANGE_NCCL && ctx->nccl_usable));
}

static int streams_ok(const tide_context *ctx, const int n[3], const int nout[3],
                      const tide_args *all, const tide_fft_options *o, int *transposed)
{
    int P = ctx->nranks, xs_out = 1, ys_out = 1, xs_in = 1;
    for (int r = 0; r < P; r++) {
        xs_in = xs_in && (!all[r].has[BOX_IN] || is_slab(n, P, r, 0, &all[r].box[BOX_IN]));
        xs_out = xs_out && (!all[r].has[BOX_OUT] || is_slab(nout, P, r, 0, &all[r].box[BOX_OUT]));
        ys_out = ys_out && all[r].has[BOX_OUT] && is_slab(nout, P, r, 1, &all[r].box[BOX_OUT]);
    }
    *transposed = all[0].has[BOX_OUT] ? !xs_out && ys_out : o->transposed_out;
    return xs_in && (xs_out || ys_out) && P <= n[0] && P <= n[1] && stream_options_ok(ctx, o);
}

/* Whether a solver's host arrays too large for the device budget can stream through the GPU
 * in chunks (solver_streamed.c): slabs along its outer dimension (NULL boxes, or tide_box_slab's
 * on every rank). The same answer on every rank. */
static int solver_streams_ok(const tide_context *ctx, const int n[3], const tide_args *all,
                             const tide_fft_options *o, const tide_fft_middle *mid)
{
    int P = ctx->nranks, d = tide_solver_streamed_outer(mid, n, P), ok = d >= 0;
    for (int r = 0; r < P && ok; r++)
        ok = !all[r].has[BOX_IN] || is_slab(n, P, r, d, &all[r].box[BOX_IN]);
    return ok && stream_options_ok(ctx, o);
}

/* A plan with what every plan has: the request, its backend, the grid and element sizes, the
 * scale factors of both directions, and the event that orders execution after the caller's
 * CUDA work. NULL on failure (the message in err). */
static tide_fft_plan *new_plan(tide_context *ctx, const int n[3], const tide_fft_options *opts,
                               int cuda, const tide_fft_middle *mid, char *err, size_t len)
{
    tide_fft_plan *p = calloc(1, sizeof *p);
    if (!p)
        return snprintf(err, len, "out of memory creating the plan"), NULL;
    p->ctx = ctx;
    p->o = *opts;
    p->mid = mid;
    p->half = mid ? tide_middle_halved(mid) : 2;
    p->o.backend = cuda ? TIDE_BACKEND_CUDA : TIDE_BACKEND_CPU;
    p->env.ctx = ctx;
    p->env.be = cuda ? tide_backend_cuda() : &tide_backend_cpu;
    p->env.threads = ctx->threads;
    p->env.exchange = opts->exchange;
    memcpy(p->n, n, sizeof p->n);
    memcpy(p->nout, n, sizeof p->nout);
    if (opts->type == TIDE_R2C && p->half >= 0)
        p->nout[p->half] = n[p->half] / 2 + 1;
    size_t scalar = opts->precision == TIDE_DOUBLE ? sizeof(double) : sizeof(float);
    p->out_elem = p->half >= 0 ? 2 * scalar : scalar;
    p->in_elem = opts->type == TIDE_R2C ? scalar : 2 * scalar;
    double N = (double)n[0] * n[1] * n[2], sym = 1.0 / sqrt(N);
    p->fwd_scale = opts->scaling == TIDE_SCALE_SYMMETRIC ? sym : 1.0;
    p->bwd_scale = opts->scaling == TIDE_SCALE_SYMMETRIC ? sym
                   : opts->scaling == TIDE_SCALE_FULL    ? 1.0 / N
                                                         : 1.0;
    if (tide_order_create(ctx, &p->entry)) {
        snprintf(err, len, "cannot create a CUDA event: %s", tide_backend_cuda()->last_error());
        free(p);
        return NULL;
    }
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

/* Collective start of a streamed plan that moves the data `moves` times: the exchange (NCCL
 * where the GPUs reach each other, unless P2P was asked for, else MPI point to point in host
 * memory), and the plan with this rank's slab of the input along din and of the output along
 * dout. Returns 0 with *out set, or a code with *out NULL: NCCL's, agreed already (err
 * empty), or a local failure's with its reason in err, to be agreed. */
static int stream_plan_base(tide_context *ctx, const int n[3], const tide_fft_options *opts,
                            const tide_fft_middle *mid, int moves, int din, int dout,
                            tide_fft_plan **out, char *err, size_t len)
{
    *out = NULL;
    int P = ctx->nranks;
    int nccl_on = P > 1 && ctx->nccl_usable && opts->exchange != TIDE_EXCHANGE_P2P;
    void *nccl = NULL;
    int st = nccl_on ? tide_context_nccl(ctx, 0, &nccl) : TIDE_SUCCESS;
    if (st)
        return st;
    tide_fft_plan *p = new_plan(ctx, n, opts, 1, mid, err, len);
    if (!p)
        return TIDE_ERR_NOMEM;
    tide_box_slab(n, din, P, ctx->rank, &p->inbox);
    tide_box_slab(p->nout, dout, P, ctx->rank, &p->outbox);
    p->decomp = P > 1 ? TIDE_DECOMP_SLABS : TIDE_DECOMP_AUTO;
    p->exchange = !moves ? TIDE_EXCHANGE_AUTO : nccl ? TIDE_EXCHANGE_NCCL : TIDE_EXCHANGE_P2P;
    p->env.transport = p->exchange;
    p->stream_exchanges = moves;
    p->env.nccl = nccl;
    *out = p;
    return TIDE_SUCCESS;
}

/* The exchange a streamed plan's description shows after a moving pass. */
static const char *stream_exchange_name(const tide_fft_plan *p)
{
    return !p->stream_exchanges ? "" : p->env.nccl ? " > nccl" : " > p2p";
}

/* Collective: the streamed plan (see streams_ok). resident: the data may stay on the device
 * between the passes (one rank, when it fits). */
static int make_stream_plan(tide_context *ctx, const int n[3], const tide_fft_options *opts,
                            int transposed, int resident, tide_fft_plan **out)
{
    int P = ctx->nranks, moves = P > 1 ? (transposed ? 1 : 2) : 0;
    char err[TIDE_MSG_LEN] = "";
    tide_fft_plan *p;
    int st = stream_plan_base(ctx, n, opts, NULL, moves, 0, moves == 1 ? 1 : 0, &p, err,
                              sizeof err);
    if (st && !*err)
        return st; /* NCCL's failure, agreed already */
    if (!st) {
        tide_fft_streamed_desc d = {{n[0], n[1], n[2]}, opts->precision == TIDE_DOUBLE,
                                  opts->type == TIDE_R2C, opts->batch, transposed,
                                  {p->fwd_scale, p->bwd_scale}, ctx->dev.budget_bytes,
                                  resident};
        st = tide_fft_streamed_create(&p->env, &d, &p->streamed, err, sizeof err);
    }
    if (!st) {
        tide_streamed_shape sh;
        tide_streamed_shape_of(p->streamed, &sh);
        const char *x = stream_exchange_name(p);
        snprintf(p->stream_what, sizeof p->stream_what, "stream[%d chunks, %d slots%s] "
                 "fft(y,z)%s > stream fft(x)%s", sh.chunks, sh.slots,
                 sh.resident ? ", resident" : "", x, moves == 2 ? x : "");
    }
    return agree_plan(ctx, st, err, p, out);
}

/* Collective: the streamed solver plan (see solver_streams_ok), by the scheme cpu_x says,
 * exchanges as for make_stream_plan; the CPU's x transforms take cpu_seconds (negative: not
 * measured yet). */
static int make_solver_stream_plan(tide_context *ctx, const int n[3],
                                   const tide_fft_options *opts, const tide_fft_middle *mid,
                                   int cpu_x, double cpu_seconds, tide_fft_plan **out)
{
    int P = ctx->nranks, o = cpu_x ? 0 : tide_solver_streamed_outer(mid, n, P);
    char err[TIDE_MSG_LEN] = "";
    tide_fft_plan *p;
    int st = stream_plan_base(ctx, n, opts, mid, P > 1 ? 2 : 0, o, 1 - o, &p, err, sizeof err);
    if (st && !*err)
        return st;
    if (!st) {
        p->cpu_x = cpu_x;
        tide_solver_streamed_desc d = {{n[0], n[1], n[2]}, opts->precision == TIDE_DOUBLE,
                                     opts->batch, mid, ctx->dev.budget_bytes, cpu_x};
        st = tide_solver_streamed_create(&p->env, &d, &p->streamed, err, sizeof err);
        p->cpu_seconds = !st && cpu_x ? cpu_seconds >= 0
                                             ? cpu_seconds
                                             : tide_solver_streamed_cpu_seconds(&p->env, &d)
                                      : 0;
    }
    if (!st) {
        tide_streamed_shape sh;
        tide_streamed_shape_of(p->streamed, &sh);
        char w[3][64];
        for (int k = 0; k < 3; k++)
            tide_streamed_describe_pass(p->streamed, 0, k, w[k], sizeof w[k]);
        const char *x = stream_exchange_name(p);
        if (cpu_x)
            snprintf(p->stream_what, sizeof p->stream_what, "cpu %s > stream[%d chunks, %d "
                     "slots] %s > cpu %s", w[0], sh.chunks, sh.slots, w[1], w[2]);
        else
            snprintf(p->stream_what, sizeof p->stream_what, "stream[%d chunks, %d slots] %s%s "
                     "> stream %s%s > stream %s", sh.chunks, sh.slots, w[0], x, w[1], x, w[2]);
    }
    return agree_plan(ctx, st, err, p, out);
}

/* Collective: whether a solve streamed with the CPU's x transforms is predicted faster than
 * one with every transform on the GPU: the CPU's transforms (measured on a few planes, into
 * *cpu) plus the spectral data up and down once, against the three passes' transfers, both
 * at the both-directions PCIe rate measured now. One rank. */
static int cpu_x_faster(tide_context *ctx, const int n[3], const tide_fft_options *opts,
                        const tide_fft_middle *mid, double *cpu_seconds)
{
    *cpu_seconds = -1;
    if (!tide_solver_streamed_cpu_x(mid, ctx->nranks))
        return 0;
    tide_env e = {.ctx = ctx};
    tide_solver_streamed_desc d = {{n[0], n[1], n[2]}, opts->precision == TIDE_DOUBLE,
                                 opts->batch, mid, ctx->dev.budget_bytes, 1};
    tide_rates r;
    double cpu = *cpu_seconds = tide_solver_streamed_cpu_seconds(&e, &d);
    if (tide_measure_rates(ctx, (size_t)64 << 20, &r) || !(r.both > 0) || !isfinite(cpu))
        return 0;
    double scalar = d.dbl ? sizeof(double) : sizeof(float), N = (double)n[0] * n[1] * n[2];
    int h = tide_middle_halved(mid); /* the GPU's halved dimension */
    double real = N * scalar * d.batch;
    double gpu_spec = h < 0 ? real : real / n[h] * 2 * (n[h] / 2 + 1);
    double cpu_spec = real / n[0] * 2 * (n[0] / 2 + 1);
    double t_gpu = 2 * (real + 2 * gpu_spec) / (r.both * 1e9);
    double t_cpu = cpu + 2 * cpu_spec / (r.both * 1e9);
    tide_log(ctx, TIDE_LOG_INFO, "%s streams host arrays: predicted %.3g s with every transform "
             "on the GPU, %.3g s with the CPU's x transforms (%.3g s of them)", mid->call,
             t_gpu, t_cpu, cpu);
    return t_cpu < t_gpu;
}

/* Every rank's box k from the gathered requests, or NULL when not given. */
static tide_layout user_layout(const tide_context *ctx, const tide_args *all, int k)
{
    if (!all[0].has[k])
        return NULL;
    tide_layout l = calloc((size_t)ctx->nranks, sizeof(tide_box));
    for (int r = 0; l && r < ctx->nranks; r++)
        l[r] = all[r].box[k];
    return l;
}

/* Collective: the plan of a validated request, on the GPU (cuda) or the CPU. Failures are
 * agreed; *out is NULL then. */
static int make_plan(tide_context *ctx, const int n[3], const tide_args *all,
                     const tide_fft_options *opts, int cuda, const tide_fft_middle *mid,
                     tide_fft_plan **out)
{
    *out = NULL;
    char err[TIDE_MSG_LEN] = "";
    tide_fft_plan *p = new_plan(ctx, n, opts, cuda, mid, err, sizeof err);
    if (p && cuda) {
        tide_exchange t = opts->exchange;
        if (t == TIDE_EXCHANGE_AUTO && ctx->nranks > 1)
            t = ctx->nccl_usable      ? TIDE_EXCHANGE_NCCL
                : ctx->cuda_aware_mpi ? TIDE_EXCHANGE_CUDA_MPI
                                      : TIDE_EXCHANGE_AUTO;
        p->env.transport = t;
    }
    /* Collective steps first, on every rank alike. */
    int st = tide_agree(ctx, p ? TIDE_SUCCESS : tide_fail(ctx, TIDE_ERR_NOMEM, "%s", err));
    if (!st && p->env.transport == TIDE_EXCHANGE_NCCL)
        st = tide_context_nccl(ctx, 0, &p->env.nccl);
    if (st) {
        tide_fft_plan_destroy(p);
        return st;
    }
    /* The users' layouts live outside the chain's pool: AUTO builds chains twice. */
    tide_layout uin = user_layout(ctx, all, BOX_IN), uout = user_layout(ctx, all, BOX_OUT);
    if ((all[0].has[BOX_IN] && !uin) || (all[0].has[BOX_OUT] && !uout))
        st = TIDE_ERR_NOMEM, snprintf(err, sizeof err, "out of memory creating the plan");
    else if (cuda && p->env.be->stream_create(&p->env.stream, 0))
        st = TIDE_ERR_BACKEND, snprintf(err, sizeof err, "%s", p->env.be->last_error());
    else
        st = build_plan(p, uin, uout, err, sizeof err);
    free(uin);
    free(uout);
    return agree_plan(ctx, st, err, p, out);
}

void tide_fft_options_init(tide_fft_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
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

/* The caller's options over the defaults (tide_options_read); 0 when opts was not filled by
 * tide_fft_options_init. */
static int read_options(const tide_fft_options *opts, tide_fft_options *o)
{
    tide_fft_options_init(o);
    return tide_options_read(opts, o, sizeof *o, offsetof(tide_fft_options, precision));
}

/* Collective: the request gathered from every rank and judged (filled: the options struct
 * was made by its init function). On success *all holds every rank's request (free() it). */
static int agree_request(tide_context *ctx, const int n[3], const tide_box *inbox,
                         const tide_box *outbox, const tide_fft_options *o,
                         tide_fft_plan **plan, int enter_st, int filled, tide_args **all)
{
    tide_args me;
    make_request(ctx, n, inbox, outbox, o, plan, enter_st, &me);
    if (!filled)
        tide_args_fail(&me, TIDE_ERR_ARGUMENT, "tide_fft_options not initialised: call "
                       "tide_fft_options_init");
    int st = tide_args_agree(ctx, &spec, &me, all);
    if (!st)
        st = judge(ctx, *all);
    if (st) {
        free(*all);
        *all = NULL;
    }
    return st;
}

/* Collective: after a GPU plan failed for want of device memory (st) on host arrays with
 * backend auto, the plan on the CPU; otherwise st. */
static int or_on_cpu(tide_context *ctx, int st, const int n[3], const tide_args *all,
                     const tide_fft_options *o, int cuda, const tide_fft_middle *mid,
                     tide_fft_plan **p)
{
    if (st != TIDE_ERR_NOMEM || !cuda || o->backend != TIDE_BACKEND_AUTO ||
        o->location != TIDE_LOCATION_HOST)
        return st;
    tide_log(ctx, TIDE_LOG_INFO, "%s on the CPU: %s", mid ? mid->call : "fft plan",
             ctx->errmsg);
    return make_plan(ctx, n, all, o, 0, mid, p);
}

/* Collective: the seconds of one forward and backward pair of plan p (a solver's: one solve),
 * the best of three after a warm-up, the slowest rank's (a failure: INFINITY on every rank),
 * on arrays made for it (zeros; device arrays copied from a zero host array), each call
 * complete on return. */
static double time_pair(tide_context *ctx, tide_fft_plan *p)
{
    tide_fft_info info;
    tide_fft_plan_info(p, &info);
    int dev = p->o.location == TIDE_LOCATION_DEVICE;
    size_t bytes[2] = {info.in_bytes, info.out_bytes};
    void *a[2] = {NULL, NULL}, *zero = NULL; /* host arrays come zeroed */
    int st = dev ? tide_host_alloc(ctx, bytes[0] > bytes[1] ? bytes[0] : bytes[1], &zero) : 0;
    for (int i = 0; i < 2 && !st; i++) {
        st = dev ? tide_device_alloc(ctx, bytes[i], &a[i]) : tide_host_alloc(ctx, bytes[i], &a[i]);
        if (!st && dev)
            st = tide_copy(ctx, a[i], zero, bytes[i]);
    }
    double best = INFINITY;
    int async = p->o.async;
    p->o.async = 0; /* each timed call complete on return */
    st = tide_agree(ctx, st);
    for (int rep = 0; rep < 4 && !st; rep++) {
        MPI_Barrier(ctx->comm);
        double t0 = MPI_Wtime();
        if (p->mid) { /* a solver: one solve, in place */
            st = tide_fft_solver_run(p, a[0], a[0]);
        } else {
            st = tide_fft_forward(p, a[0], a[1]);
            st = st ? st : tide_fft_backward(p, a[1], a[0]);
        }
        double t = MPI_Wtime() - t0;
        if (rep && t < best) /* rep 0 warms up */
            best = t;
    }
    p->o.async = async;
    for (int i = 0; i < 2; i++)
        if (a[i])
            dev ? tide_device_free(ctx, a[i]) : tide_host_free(ctx, a[i]);
    if (zero)
        tide_host_free(ctx, zero);
    double slowest = st ? INFINITY : best;
    MPI_Allreduce(MPI_IN_PLACE, &slowest, 1, MPI_DOUBLE, MPI_MAX, ctx->comm);
    return slowest;
}

/* Collective: with planning MEASURE on several ranks, decomposition AUTO and no boxes given,
 * where the rule takes slabs: plan p against pencils, each timed on its own (one plan at a
 * time: the two need not fit the budget together); *p becomes the faster. A pencil plan that
 * cannot be made leaves p. */
static void measure_decomposition(tide_context *ctx, const int n[3], const tide_args *all,
                                  const tide_fft_options *opts, int cuda,
                                  const tide_fft_middle *mid, tide_fft_plan **p)
{
    /* the rule takes pencils only where slabs would leave ranks idle: nothing to measure */
    if (ctx->nranks == 1 || opts->planning != TIDE_PLAN_MEASURE ||
        opts->decomposition != TIDE_DECOMP_AUTO || all[0].has[BOX_IN] ||
        all[0].has[BOX_OUT] || (*p)->decomp != TIDE_DECOMP_SLABS)
        return;
    tide_fft_options o = *opts;
    o.decomposition = TIDE_DECOMP_PENCILS;
    double t[2] = {time_pair(ctx, *p), INFINITY};
    tide_fft_plan_destroy(*p);
    *p = NULL;
    tide_fft_plan *q = NULL;
    if (make_plan(ctx, n, all, &o, cuda, mid, &q) == TIDE_SUCCESS)
        t[1] = time_pair(ctx, q);
    if (ctx->rank == 0)
        tide_log(ctx, TIDE_LOG_INFO, "%s: slabs %.4g ms, pencils %.4g ms (%s, measured)",
                 mid ? mid->call : "fft plan", t[0] * 1e3, t[1] * 1e3,
                 mid ? "a solve" : "a forward and backward pair");
    if (q && t[1] < t[0]) {
        *p = q;
        return;
    }
    tide_fft_plan_destroy(q); /* the slab plan again: the two were never held at once */
    o.decomposition = TIDE_DECOMP_SLABS;
    if (make_plan(ctx, n, all, &o, cuda, mid, p) != TIDE_SUCCESS)
        *p = NULL;
}

/* Collective: make_plan, then with planning MEASURE the measured decomposition. */
static int make_measured(tide_context *ctx, const int n[3], const tide_args *all,
                         const tide_fft_options *opts, int cuda, const tide_fft_middle *mid,
                         tide_fft_plan **p)
{
    int st = make_plan(ctx, n, all, opts, cuda, mid, p);
    if (st)
        return st;
    measure_decomposition(ctx, n, all, opts, cuda, mid, p);
    return *p ? TIDE_SUCCESS : tide_fail(ctx, TIDE_ERR_NOMEM, "%s: the plan could not be made "
                                         "again after timing", mid ? mid->call
                                                                   : "tide_fft_plan_create");
}

/* tide_fft_plan_create with the context's GPU current (enter_st: 0, or why it could not
 * be made current). */
static int create(tide_context *ctx, const int n[3], const tide_box *inbox,
                  const tide_box *outbox, const tide_fft_options *opts, tide_fft_plan **plan,
                  int enter_st)
{
    tide_fft_options o;
    int filled = read_options(opts, &o);
    opts = &o;
    tide_args *all = NULL;
    int st = agree_request(ctx, n, inbox, outbox, opts, plan, enter_st, filled, &all);
    if (st)
        return st;
    int cuda = tide_wants_cuda(ctx, opts->backend);
    tide_fft_plan *p = NULL;
    int transposed = 0, nout[3] = {n[0], n[1], opts->type == TIDE_R2C ? n[2] / 2 + 1 : n[2]};
    int streams = cuda && streams_ok(ctx, n, nout, all, opts, &transposed);
    if (streams && ctx->nranks == 1) {
        /* One rank: streamed, so the transfers overlap the transforms; the data stays on the
         * device between the passes when it fits. */
        st = make_stream_plan(ctx, n, opts, transposed, 1, &p);
    } else {
        st = make_measured(ctx, n, all, opts, cuda, NULL, &p);
        if (st == TIDE_ERR_NOMEM && streams) {
            tide_log(ctx, TIDE_LOG_INFO, "fft plan streams host arrays through the GPU: %s",
                     ctx->errmsg);
            st = make_stream_plan(ctx, n, opts, transposed, 0, &p);
        }
    }
    st = or_on_cpu(ctx, st, n, all, opts, cuda, NULL, &p);
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

int tide_fft_plan_create(tide_context *ctx, const int n[3], const tide_box *inbox,
                         const tide_box *outbox, const tide_fft_options *opts,
                         tide_fft_plan **plan)
{
    if (!ctx)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_fft_plan_create: ctx is NULL");
    int prev, enter_st = tide_device_enter(ctx, &prev);
    int st = create(ctx, n, inbox, outbox, opts, plan, enter_st);
    if (!st)
        tide_context_hold(ctx, &(*plan)->held);
    tide_device_leave(prev);
    return st;
}

int tide_fft_plan_set_stream(tide_fft_plan *p, void *stream)
{
    if (!p)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_fft_plan_set_stream: plan is NULL");
    p->o.stream = stream;
    return TIDE_SUCCESS;
}

int tide_fft_plan_destroy(tide_fft_plan *p)
{
    if (!p)
        return TIDE_SUCCESS;
    tide_context_release(p->ctx, &p->held);
    int prev;
    tide_device_enter(p->ctx, &prev); /* a failure here shows in the frees, which return none */
    tide_env *e = &p->env;
    tide_program_destroy(&p->fwd, e);
    tide_program_destroy(&p->bwd, e);
    tide_program_destroy(&p->solve, e);
    tide_streamed_destroy(p->streamed);
    tide_order_destroy(p->entry);
    void *mem[] = {p->w[0], p->w[1], e->sendbuf, e->recvbuf, e->fft_work, p->din, p->dout};
    for (int i = 0; i < 7; i++)
        if (mem[i])
            e->be->free(mem[i]);
    if (e->be->host_free) {
        e->be->host_free(e->hsend);
        e->be->host_free(e->hrecv);
    }
    if (e->be->stream_destroy)
        e->be->stream_destroy(e->stream);
    free(p);
    tide_device_leave(prev);
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

static int count_ops(const tide_program *prog, tide_op_kind kind)
{
    int n = 0;
    for (int i = 0; i < prog->nops; i++)
        n += prog->ops[i].kind == kind;
    return n;
}

int tide_fft_plan_info(const tide_fft_plan *p, tide_fft_info *info)
{
    if (!p || !info)
        return tide_fail(p ? p->ctx : NULL, TIDE_ERR_ARGUMENT, "tide_fft_plan_info: NULL argument");
    const tide_env *e = &p->env;
    int gpu = e->be->gpu;
    memset(info, 0, sizeof *info);
    info->in_count = tide_box_count(&p->inbox);
    info->out_count = tide_box_count(&p->outbox);
    info->in_bytes = (size_t)info->in_count * p->o.batch * p->in_elem;
    info->out_bytes = (size_t)info->out_count * p->o.batch * p->out_elem;
    info->inplace_bytes = info->in_bytes > info->out_bytes ? info->in_bytes : info->out_bytes;
    size_t work = 2 * p->wbytes + e->sbytes + e->rbytes;
    if (gpu) {
        info->device_bytes = device_need(p);
        info->pinned_bytes = e->hsend ? e->sbytes + e->rbytes : 0;
    } else {
        info->host_bytes = work;
    }
    info->location = p->o.location;
    info->chunks = info->streams = info->slots = gpu;
    const tide_program *prog = p->mid ? &p->solve : &p->fwd;
    info->exchanges = count_ops(prog, TIDE_OP_RESHAPE);
    info->local_transforms = count_ops(prog, TIDE_OP_FFT);
    info->round_trips = gpu && p->o.location == TIDE_LOCATION_HOST;
    if (p->streamed) {
        tide_streamed_shape sh;
        tide_streamed_shape_of(p->streamed, &sh);
        info->chunks = sh.chunks;
        info->streams = info->slots = sh.slots;
        info->device_bytes = sh.device_bytes;
        info->pinned_bytes = sh.pinned_bytes;
        info->round_trips = sh.trips;
        info->exchanges = p->stream_exchanges;
        info->local_transforms = p->mid ? 4 : 2;
    }
    double N = (double)p->n[0] * p->n[1] * p->n[2];
    info->flops = (p->o.type == TIDE_R2C ? 2.5 : 5.0) * N * log2(N) * p->o.batch;
    info->backend = p->o.backend;
    info->exchange = p->exchange;
    if (gpu && info->exchanges == 0)
        info->exchange = TIDE_EXCHANGE_AUTO;
    info->decomposition = p->decomp;
    return TIDE_SUCCESS;
}

/* A streamed plan's cost: two passes through the GPU; going forward the first reads the
 * input and writes an output-sized slab, the second reads and writes output-sized data (going
 * back the reverse); each moving pass sends the part of it that belongs to other ranks. Data
 * resident between the passes crosses PCIe once each way, and is copied into and out of its
 * device array (read and written each time). A solve (direction 0): the passes of its scheme
 * (solver_streamed.h), three through the GPU, or one with the CPU's two before and after it;
 * the transforms read and write the real data twice and the spectral data six times (the
 * CPU's count too); the middle op's memory traffic is the solver's to add. */
static void stream_cost(const tide_fft_plan *p, int direction, tide_fft_cost *c)
{
    tide_fft_info info;
    tide_fft_plan_info(p, &info);
    double in = (double)info.in_bytes, out = (double)info.out_bytes, P = p->ctx->nranks;
    double src = direction < 0 ? in : out, dst = direction < 0 ? out : in;
    int resident = info.round_trips == 1;
    if (p->mid) { /* the transfers of its passes through the GPU, as they are */
        tide_streamed_transfers(p->streamed, 0, &c->h2d_bytes, &c->d2h_bytes);
        c->cpu_seconds = p->cpu_seconds;
        c->flops = 2 * info.flops / P;
        c->fft_bytes = 2 * in + 6 * out;
        c->exchanges = p->stream_exchanges;
        c->exchange_bytes = p->stream_exchanges * out * (P - 1) / P;
        c->fft_passes = 4;
        return;
    }
    c->flops = info.flops / P;
    c->h2d_bytes = src + (resident ? 0 : out);
    c->d2h_bytes = dst + (resident ? 0 : out);
    c->fft_bytes = in + 3 * out; /* each pass's transforms read and write their chunks once */
    c->move_bytes = resident ? 4 * out : 0;
    c->exchanges = p->stream_exchanges;
    c->exchange_bytes = p->stream_exchanges * out * (P - 1) / P;
    c->fft_passes = 2;
}

/* The cost of one run of a program, summed over its ops; host arrays on the GPU add their
 * copies to and from the device. */
static void program_cost(const tide_fft_plan *p, const tide_program *prog, tide_fft_cost *c)
{
    memset(c, 0, sizeof *c);
    for (int i = 0; i < prog->nops; i++) {
        const tide_op *o = &prog->ops[i];
        c->flops += o->cost.flops;
        c->exchange_bytes += o->cost.net_bytes;
        *(o->kind == TIDE_OP_FFT ? &c->fft_bytes : &c->move_bytes) += o->cost.mem_bytes;
        c->exchanges += o->kind == TIDE_OP_RESHAPE;
        c->fft_passes += o->kind == TIDE_OP_FFT;
    }
    if (p->env.be->gpu && p->o.location == TIDE_LOCATION_HOST) {
        double ib = (double)box_bytes(p, &p->inbox, p->o.type == TIDE_R2C);
        double ob = (double)box_bytes(p, &p->outbox, 0);
        c->h2d_bytes = prog == &p->bwd ? ob : ib;
        c->d2h_bytes = prog == &p->fwd ? ob : ib;
    }
}

int tide_fft_plan_cost(const tide_fft_plan *p, int direction, tide_fft_cost *cost)
{
    if (!p || !cost || (direction != -1 && direction != 1))
        return tide_fail(p ? p->ctx : NULL, TIDE_ERR_ARGUMENT, "tide_fft_plan_cost: %s",
                         p && cost ? "direction must be -1 or +1" : "NULL argument");
    tide_fft_cost c;
    memset(&c, 0, sizeof c);
    if (p->streamed)
        stream_cost(p, direction, &c);
    else
        program_cost(p, direction < 0 ? &p->fwd : &p->bwd, &c);
    *cost = c;
    return TIDE_SUCCESS;
}

int tide_fft_plan_describe(const tide_fft_plan *p, char *buf, size_t len)
{
    if (!p || !buf || !len)
        return tide_fail(p ? p->ctx : NULL, TIDE_ERR_ARGUMENT,
                         "tide_fft_plan_describe: NULL argument");
    size_t used = 0;
    buf[0] = '\0';
    if (p->streamed)
        snprintf(buf, len, "%s", p->stream_what);
    const tide_program *prog = p->mid ? &p->solve : &p->fwd;
    for (int i = 0; i < prog->nops && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? " > " : "",
                                 prog->ops[i].what);
    return TIDE_SUCCESS;
}

/* ---- execution ------------------------------------------------------------------------- */

/* Why device array a, the call's side (input or output) with elements of elem bytes, cannot
 * serve ("" when it can). cuFFT and the copy kernels load whole complex elements, and cuFFT
 * wants real data aligned like complex too (cufftExecD2Z), so every array must sit at a
 * multiple of the complex element size, as a cudaMalloc'd array does. */
static const char *misaligned(const tide_fft_plan *p, const char *side, const void *a,
                              size_t elem)
{
    static _Thread_local char why[160];
    size_t align = p->out_elem; /* the complex element */
    if ((uintptr_t)a % align == 0)
        return "";
    const char *prec = p->o.precision == TIDE_DOUBLE ? "double" : "float";
    snprintf(why, sizeof why, "a device %s array at %p that is not aligned to %zu bytes "
             "(%s %s%s; cudaMalloc'd arrays are)", side, a, align,
             elem == align ? "complex" : "cuFFT needs real", prec,
             elem == align ? " elements" : " data aligned like complex");
    return why;
}

/* Why in or out cannot serve this plan on this rank ("" when they can). */
static const char *bad_array(const tide_fft_plan *p, int dir, const void *in, void *out)
{
    const tide_box *ib = dir > 0 ? &p->outbox : &p->inbox, *ob = dir < 0 ? &p->outbox : &p->inbox;
    int in_needed = tide_box_count(ib) > 0, out_needed = tide_box_count(ob) > 0;
    if ((in_needed && !in) || (out_needed && !out))
        return "a NULL array";
    int dev = p->o.location == TIDE_LOCATION_DEVICE;
    const char *where = in_needed ? tide_array_location(p->ctx, dev, in) : "";
    if (!*where && out_needed)
        where = tide_array_location(p->ctx, dev, out);
    if (*where || !dev || p->ctx->backend != TIDE_BACKEND_CUDA)
        return where; /* host arrays are copied or staged by cudaMemcpy: any address */
    size_t ein = dir > 0 ? p->out_elem : p->in_elem, eout = dir < 0 ? p->out_elem : p->in_elem;
    const char *m = in_needed ? misaligned(p, "input", in, ein) : "";
    return *m || !out_needed ? m : misaligned(p, "output", out, eout);
}

/* Execution on a CUDA context is ordered after the work the caller queued on the legacy
 * default stream before the call (a pageable cudaMemcpy may return before its data has
 * landed; a kernel or copy may still be queued). The plan's stream waits for it on the
 * device; the streamed path and CPU plans, whose CPU threads also read and write host arrays,
 * wait for it on the host. Returns 0 or a code with the reason in why. */
static int after_caller(const tide_fft_plan *p, char *why, size_t len)
{
    void *stream = p->env.be->gpu && !p->streamed ? p->env.stream : NULL;
    if (tide_order_after(p->entry, p->o.stream, stream))
        return snprintf(why, len, "could not wait for the caller's earlier CUDA work (%s) in",
                        tide_backend_cuda()->last_error()), TIDE_ERR_BACKEND;
    return TIDE_SUCCESS;
}

/* Collective: the arrays are right on every rank, every rank made the same call, and the call
 * is ordered after the caller's work, or the same error on every rank. */
static int agree_start(tide_fft_plan *p, int dir, const void *in, void *out, const char *fn,
                       int enter_st)
{
    tide_context *ctx = p->ctx;
    char why[200] = "";
    const char *bad = bad_array(p, dir, in, out);
    int st = TIDE_SUCCESS;
    if (enter_st)
        st = enter_st, snprintf(why, sizeof why, "could not make GPU %d current (%s) in",
                                ctx->dev.device, tide_backend_cuda()->last_error());
    else if (*bad)
        st = TIDE_ERR_ARGUMENT, snprintf(why, sizeof why, "passed %s to", bad);
    else
        st = after_caller(p, why, sizeof why);
    if (st)
        tide_fail(ctx, st, "%s %s", why, fn);
    /* the same words on every rank, whichever direction it asked for */
    tide_call_arg way = tide_call_int("the direction (-1 forward, 1 backward)", dir);
    return tide_agree_call(ctx, dir ? "tide_fft_forward/backward" : fn, st, &way, 1);
}

/* One transform (dir -1 forward, +1 backward) or solve (0), with the context's GPU current
 * (enter_st: 0, or why it could not be made current). */
static int run(tide_fft_plan *p, int dir, const void *in, void *out, int enter_st)
{
    tide_context *ctx = p->ctx;
    const tide_program *prog = dir < 0 ? &p->fwd : dir > 0 ? &p->bwd : &p->solve;
    const char *fn = dir < 0 ? "tide_fft_forward" : dir > 0 ? "tide_fft_backward" : p->mid->call;
    int st = agree_start(p, dir, in, out, fn, enter_st);
    if (st)
        return st;
    if (p->streamed) {
        char err[TIDE_MSG_LEN] = "";
        int rc = tide_streamed_execute(p->streamed, dir > 0, in, out, err, sizeof err);
        if (rc)
            tide_fail(ctx, rc, "streaming %s through the GPU: %s", fn, err);
        return tide_agree(ctx, rc);
    }
    const tide_env *e = &p->env;
    /* Host arrays on the GPU: the whole input goes up, the program runs on its device copies,
     * the output comes down. */
    void *uout = out;
    int host_gpu = e->be->gpu && p->o.location == TIDE_LOCATION_HOST;
    size_t ib = box_bytes(p, &p->inbox, p->o.type == TIDE_R2C);
    size_t ob = box_bytes(p, &p->outbox, 0);
    size_t up = dir > 0 ? ob : ib, down = dir < 0 ? ob : ib;
    if (host_gpu) {
        st = e->be->copy(e, p->din, in, up);
        in = p->din;
        out = p->dout;
    }
    char times[256] = "", *timed = ctx->log_level >= TIDE_LOG_DEBUG ? times : NULL;
    const char *failed_at = "";
    st = tide_program_run(prog, e, p->w, in, out, st, &failed_at, timed, sizeof times);
    if (timed)
        tide_log(ctx, TIDE_LOG_DEBUG, "%s:%s", fn, times);
    if (!st && host_gpu)
        st = e->be->copy(e, uout, p->dout, down);
    /* Complete on return, or, async on device arrays, ordered before the caller's later work. */
    int async = p->o.async && e->be->gpu && !host_gpu;
    int sync = async ? tide_order_after(p->entry, e->stream, p->o.stream) : e->be->sync(e);
    st = st ? st : sync;
    if (st == TIDE_ERR_MPI)
        tide_fail(ctx, st, "an MPI exchange failed during %s%s%s", fn,
                  *failed_at ? " in " : "", failed_at);
    else if (st)
        tide_fail(ctx, st, "%s failure during %s%s%s: %s", e->be->name, fn,
                  *failed_at ? " in " : "", failed_at, e->be->last_error());
    return tide_agree(ctx, st);
}

static int transform(tide_fft_plan *p, int dir, const void *in, void *out)
{
    int prev, enter_st = tide_device_enter(p->ctx, &prev);
    int st = run(p, dir, in, out, enter_st);
    tide_device_leave(prev);
    return st;
}

int tide_fft_forward(tide_fft_plan *plan, const void *in, void *out)
{
    if (!plan)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_fft_forward: plan is NULL");
    return transform(plan, -1, in, out);
}

int tide_fft_backward(tide_fft_plan *plan, const void *in, void *out)
{
    if (!plan)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_fft_backward: plan is NULL");
    return transform(plan, +1, in, out);
}

/* ---- solver plans (solver.h) ----------------------------------------------------------- */

int tide_fft_solver_run(tide_fft_plan *p, const void *in, void *out)
{
    return transform(p, 0, in, out);
}

void tide_fft_solver_cost(const tide_fft_plan *p, tide_fft_cost *cost)
{
    if (p->streamed)
        stream_cost(p, 0, cost);
    else
        program_cost(p, &p->solve, cost);
}

int tide_fft_solver_cpu_x(const tide_fft_plan *p) { return p->streamed && p->cpu_x; }

int tide_fft_solver_create(tide_context *ctx, const int n[3], const tide_box *box,
                           const tide_fft_options *opts, const tide_fft_middle *mid,
                           tide_out_of_card ooc, tide_fft_plan **plan)
{
    tide_fft_options o = *opts;
    o.type = TIDE_R2C;
    o.transposed_out = 1;
    o.scaling = TIDE_SCALE_NONE;
    o.async = 0;
    int prev, enter_st = tide_device_enter(ctx, &prev);
    tide_args *all = NULL;
    int cuda = tide_wants_cuda(ctx, o.backend);
    int st = agree_request(ctx, n, box, NULL, &o, plan, enter_st, 1, &all);
    int cpu_x = ooc == TIDE_OOC_STREAM_CPU_X;
    if (!st && ooc != TIDE_OOC_AUTO) {
        int d = cpu_x ? 0 : tide_solver_streamed_outer(mid, n, ctx->nranks);
        if (!cuda || !solver_streams_ok(ctx, n, all, &o, mid))
            st = tide_fail(ctx, TIDE_ERR_UNSUPPORTED, "the plan of %s: host arrays stream "
                           "through the GPU only on the CUDA backend, as slabs along %s (NULL "
                           "boxes or tide_box_slab's), with decomposition auto or slabs and "
                           "exchange auto, p2p or nccl", mid->call,
                           d == 0 ? "x" : d == 1 ? "y" : "x or y, no more ranks than planes");
        else if (cpu_x && !tide_solver_streamed_cpu_x(mid, ctx->nranks))
            st = tide_fail(ctx, TIDE_ERR_UNSUPPORTED, "the plan of %s: the CPU does the x "
                           "transforms of a streamed solve on one rank with x periodic (%d "
                           "ranks, x %s)", mid->call, ctx->nranks,
                           tide_solver_streamed_cpu_x(mid, 1) ? "periodic" : "bounded");
        else
            st = make_solver_stream_plan(ctx, n, &o, mid, cpu_x, -1, plan);
    } else if (!st) {
        st = make_measured(ctx, n, all, &o, cuda, mid, plan);
        if (st == TIDE_ERR_NOMEM && cuda && solver_streams_ok(ctx, n, all, &o, mid)) {
            tide_log(ctx, TIDE_LOG_INFO, "%s streams host arrays through the GPU: %s",
                     mid->call, ctx->errmsg);
            double cpu;
            int faster = cpu_x_faster(ctx, n, &o, mid, &cpu);
            st = make_solver_stream_plan(ctx, n, &o, mid, faster, cpu, plan);
        }
        st = or_on_cpu(ctx, st, n, all, &o, cuda, mid, plan);
    }
    free(all);
    tide_device_leave(prev);
    return st;
}
