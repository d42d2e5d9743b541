/*
 * fft_build.c: an FFT plan's stage chain (the decomposition's layouts, each stage's
 * transformed dimensions, the caller's boxes at the ends), its programs of reshapes, local
 * FFTs, scaling and a solver's middle op (plan/program.h), and the buffers they run in.
 *
 * Stage s transforms a group of dimensions (y,z then x for slabs; z, y, x for pencils; all
 * three on one rank) in a layout where every rank holds whole lines along them; a real
 * transform's first stage takes dimension 2 from n to n/2+1. Backward runs the same chain in
 * reverse.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "comm/region.h"
#include "fft/fft_plan.h"
#include "plan/overlap.h"

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
size_t tide_fft_box_bytes(const tide_fft_plan *p, const tide_box *b, int real)
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

/* Step s's local FFT: its transformed dimensions, direction and kind, on the buffers op o's
 * placement says. */
static tide_cpu_fft_desc fft_desc(const tide_fft_plan *p, const tide_chain *c,
                                  const fft_chain *f, const tide_chain_step *s, int reverse,
                                  const tide_op *o)
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
        .user_memory = o->src == TIDE_LOC_IN || o->dst == TIDE_LOC_OUT,
        .engine = p->ctx->fft_engine == 1};
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
    return d;
}

/* Step s's local FFT as op o, planned on the buffers its placement says; then: the spectral
 * op after it, which it may apply as it stores its output. */
static int make_fft(tide_fft_plan *p, const tide_chain *c, const fft_chain *f,
                    const tide_chain_step *s, int reverse, tide_op *o, tide_op *then,
                    char *err, size_t len)
{
    tide_cpu_fft_desc d = fft_desc(p, c, f, s, reverse, o);
    d.plane = &p->plane_pass;
    int fused = 0;
    if (then) {
        d.then = then->spec;
        d.fused = &fused;
    }
    int st = tide_op_fft(o, &p->env, &d, &p->env.fft_work_bytes, err, len);
    if (!st && fused)
        tide_op_spectral_fused(then);
    else if (!st && then && p->env.be->gpu && tide_box_count(d.ibox) > 0)
        tide_log(p->ctx, TIDE_LOG_DEBUG, "%s > %s: the scaling stays a pass of its own: %s",
                 o->what, then->what, p->env.be->last_error());
    return st;
}

/* The chunks of an exchange overlapped with the FFT beside it: TIDE_FFT_CHUNKS where set (or
 * the count a measured plan is timing, fft.c), else 8 on GPUs exchanging GPU to GPU, over NCCL
 * or by direct stores (the chunks' messages stay large enough to keep the links busy at 512^3
 * on 8 GPUs, and the pipeline's fill, an eighth of one FFT, stays small), else none: the CPU
 * would run the chunks one after the other. */
static int overlap_chunks(const tide_fft_plan *p)
{
    if (p->ctx->fft_chunks >= 0)
        return p->ctx->fft_chunks;
    tide_exchange x = p->env.transport;
    int gpu_to_gpu = x == TIDE_EXCHANGE_NCCL || x == TIDE_EXCHANGE_DIRECT;
    return p->env.be->gpu && gpu_to_gpu ? 8 : 0;
}

/* The size of an FFT, the same on every rank: the lines' lengths along its dimensions
 * multiplied (its flops over the whole grid grow with it). */
static double fft_size(const tide_fft_plan *p, const fft_chain *f, const tide_chain_step *s)
{
    double n = 1;
    for (int k = 0; k < 3; k++)
        if (f->dims[s->stage] & (1 << k))
            n *= p->n[k];
    return n;
}

/* The steps that run as one overlapped op (plan/overlap.h): partner[j] = i and partner[i] = j
 * where reshape j joins FFT i beside it, else -1. Each reshape takes the larger of the two
 * FFTs still free (the earlier on a tie), so that its exchange overlaps that FFT. FFTs that
 * stage their input stay apart, and so does the one before a solver's middle op (it may apply
 * that op as it stores its output: make_fft's then). Decided from the ops' placement alone,
 * before any is made. Every rank makes the same choice from what every rank knows alike
 * (placements, steps, the grid, the options), never from its own boxes: the ops must pair
 * alike on every rank. */
static void overlap_pairs(const tide_fft_plan *p, const tide_chain *c, const fft_chain *f,
                          const tide_chain_step *steps, int ns, int back, int mid,
                          const tide_program *flat, int *partner)
{
    for (int i = 0; i < ns; i++)
        partner[i] = -1;
    if (overlap_chunks(p) < 2 || p->ctx->nranks < 2)
        return;
    for (int j = 0; j < ns; j++) {
        if (flat->ops[j].kind != TIDE_OP_RESHAPE)
            continue;
        int best = -1;
        for (int i = j - 1; i <= j + 1; i += 2) {
            if (i < 0 || i >= ns || partner[i] >= 0 || flat->ops[i].kind != TIDE_OP_FFT ||
                flat->ops[i].stage_input || (mid >= 0 && i == mid - 1))
                continue;
            tide_cpu_fft_desc d = fft_desc(p, c, f, &steps[i], i >= back, &flat->ops[i]);
            const tide_box *cut = i < j ? steps[j].from : steps[j].to;
            if (tide_overlap_cut(&d, cut[0].order, p->env.be->gpu) >= 0 &&
                (best < 0 || fft_size(p, f, &steps[i]) > fft_size(p, f, &steps[best])))
                best = i;
        }
        if (best >= 0)
            partner[j] = best, partner[best] = j;
    }
}

/* Steps i (an FFT) and j (the reshape next to it) as one overlapped op o, from their
 * placement in the flat program. */
static int make_overlap(tide_fft_plan *p, const tide_chain *c, const fft_chain *f,
                        const tide_chain_step *steps, int back, const tide_program *flat, int i,
                        int j, tide_op *o, char *err, size_t len)
{
    const tide_op *fo = &flat->ops[i], *ro = &flat->ops[j];
    const tide_chain_step *rs = &steps[j];
    tide_overlap_desc d = {
        .from = rs->from, .to = rs->to, .batch = p->o.batch, .chunks = overlap_chunks(p),
        .fft = fft_desc(p, c, f, &steps[i], i >= back, fo), .fft_first = i < j, .w = p->w,
        .elem = grid_real(p, f, rs->from_grid) ? p->in_elem : p->out_elem};
    d.fft.plane = &p->plane_pass;
    d.src = i < j ? fo->src : ro->src;
    d.mid = i < j ? fo->dst : ro->dst;
    d.dst = i < j ? ro->dst : fo->dst;
    return tide_op_overlap(o, &p->env, &d, &p->env.fft_work_bytes, &p->env.sbytes,
                           &p->env.rbytes, err, len);
}

/* The ops of a program as placed in flat, each pair of steps that overlap (partner) one op in
 * place of the first of the two: at[i] is step i's op. */
static void join_pairs(const tide_program *flat, int ns, const int *partner, tide_program *prog,
                       int *at)
{
    int k = 0;
    for (int i = 0; i < flat->nops; i++) {
        int q = i < ns ? partner[i] : -1;
        if (q >= 0 && q < i) {
            at[i] = at[q];
            continue;
        }
        at[i] = k;
        prog->ops[k] = flat->ops[i];
        if (q > i)
            prog->ops[k].dst = flat->ops[q].dst;
        k++;
    }
    prog->nops = k;
}

/* Step i's op o: a reshape, an FFT (then: the middle op it may apply), or with its partner q
 * (-1: none) an overlapped op. */
static int make_step(tide_fft_plan *p, const tide_chain *c, const fft_chain *f,
                     const tide_chain_step *steps, int back, const tide_program *flat, int i,
                     int q, tide_op *o, tide_op *then, char *err, size_t len)
{
    const tide_chain_step *s = &steps[i];
    if (q >= 0) {
        int fi = s->stage < 0 ? q : i, ri = s->stage < 0 ? i : q;
        int st = make_overlap(p, c, f, steps, back, flat, fi, ri, o, err, len);
        if (!st && i < back)
            p->exchange = tide_op_overlap_exchange(o);
        return st;
    }
    if (s->stage >= 0)
        return make_fft(p, c, f, s, i >= back, o, then, err, len);
    int real = grid_real(p, f, s->from_grid);
    int st = tide_op_reshape(o, &p->env, s->from, s->to, real ? p->in_elem : p->out_elem,
                             p->o.batch, err, len);
    if (st)
        return st;
    size_t sb = tide_reshape_send_bytes(o->reshape), rb = tide_reshape_recv_bytes(o->reshape);
    p->env.sbytes = sb > p->env.sbytes ? sb : p->env.sbytes;
    p->env.rbytes = rb > p->env.rbytes ? rb : p->env.rbytes;
    if (i < back)
        p->exchange = tide_reshape_exchange(o->reshape);
    return TIDE_SUCCESS;
}

/* The ops of a program (program_steps): step shapes first (kind, in place), then placement,
 * then which exchanges join an FFT beside them (overlap_pairs), then the ops themselves, FFTs
 * planned on the buffers they will use. */
static int make_program(tide_fft_plan *p, const tide_chain *c, const fft_chain *f, int dir,
                        tide_program *prog, char *err, size_t len)
{
    tide_chain_step steps[2 * TIDE_CHAIN_STEPS + 1];
    int back, mid;
    int ns = program_steps(c, dir, steps, &back, &mid), r2c = p->o.type == TIDE_R2C;
    double scale = dir < 0 ? p->fwd_scale : dir > 0 ? p->bwd_scale : 1.0;
    tide_program flat;
    memset(&flat, 0, sizeof flat);
    memset(prog, 0, sizeof *prog);
    for (int i = 0; i < ns; i++) {
        tide_op *o = &flat.ops[i];
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
    flat.nops = ns + (scale != 1.0);
    if (scale != 1.0) {
        long long count = tide_box_count(dir > 0 ? &p->inbox : &p->outbox) * p->o.batch;
        tide_op_scale(&flat.ops[ns], p->o.precision == TIDE_DOUBLE,
                      count * (dir > 0 && r2c ? 1 : 2), scale);
    }
    tide_program_place(&flat, p->env.be->gpu);
    int partner[2 * TIDE_CHAIN_STEPS + 1], at[TIDE_PROGRAM_OPS];
    overlap_pairs(p, c, f, steps, ns, back, mid, &flat, partner);
    join_pairs(&flat, ns, partner, prog, at);
    /* The middle op first: the local FFT right before it may apply it as it stores its
     * output (a diagonal op in place; make_fft's then), and then it runs as nothing. */
    tide_op *then = NULL;
    if (mid >= 0) {
        const tide_chain_step *s = &steps[mid];
        tide_op *o = &prog->ops[at[mid]];
        int st = p->mid->make(o, &p->env, &s->from[p->ctx->rank], c->grid[s->from_grid], 0,
                              p->mid->user, err, len);
        if (st)
            return st;
        if (mid > 0 && steps[mid - 1].stage >= 0 && o->kind == TIDE_OP_POINTWISE &&
            o->src == o->dst)
            then = o;
    }
    for (int i = 0; i < ns; i++) {
        if (i == mid || (partner[i] >= 0 && partner[i] < i))
            continue;
        int st = make_step(p, c, f, steps, back, &flat, i, partner[i], &prog->ops[at[i]],
                           i == mid - 1 ? then : NULL, err, len);
        if (st)
            return st;
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
size_t tide_fft_device_need(const tide_fft_plan *p)
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
            size_t ib = tide_fft_box_bytes(p, &p->inbox, p->o.type == TIDE_R2C);
            size_t ob = tide_fft_box_bytes(p, &p->outbox, 0);
            p->dio_bytes = ib > ob ? ib : ob;
        }
        if (tide_fft_device_need(p) > ctx->dev.budget_bytes)
            return snprintf(err, len, "the plan needs %.3g GB of device memory on GPU %d, more "
                            "than the context's budget of %.3g GB", tide_fft_device_need(p) / 1e9,
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
                 e->transport != TIDE_EXCHANGE_CUDA_MPI && e->transport != TIDE_EXCHANGE_DIRECT;
    if (staged && (be->host_alloc(e->sbytes, &e->hsend) || be->host_alloc(e->rbytes, &e->hrecv)))
        return snprintf(err, len, "cannot allocate %zu + %zu bytes of pinned host memory",
                        e->sbytes, e->rbytes), TIDE_ERR_NOMEM;
    tide_program *progs[3] = {&p->fwd, &p->bwd, &p->solve};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < progs[k]->nops; i++)
            if ((progs[k]->ops[i].fft && be->fft_bind(e, progs[k]->ops[i].fft)) ||
                tide_op_overlap_bind(&progs[k]->ops[i], e))
                return snprintf(err, len, "the backend rejected an FFT's work area or stream "
                                "(%s)", be->last_error()), TIDE_ERR_BACKEND;
    return TIDE_SUCCESS;
}

/* The chain, buffers and programs of a validated request. Local failures only. */
int tide_fft_build(tide_fft_plan *p, tide_layout uin, tide_layout uout, char *err,
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
        size_t a = tide_fft_box_bytes(p, &steps[i].from[me], grid_real(p, &f, steps[i].from_grid));
        size_t b = tide_fft_box_bytes(p, &steps[i].to[me], grid_real(p, &f, steps[i].to_grid));
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

