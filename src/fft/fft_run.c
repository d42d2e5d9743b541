/*
 * fft_run.c: an FFT plan's queries (boxes, info, cost, description) and its execution: the
 * start agreed on every rank, then the program on the plan's backend, or the streamed passes.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/args.h"
#include "fft/fft_plan.h"
#include "plan/overlap.h"

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

/* Ops of a kind; an overlapped op counts as an FFT and a reshape. */
static int count_ops(const tide_program *prog, tide_op_kind kind)
{
    int n = 0;
    for (int i = 0; i < prog->nops; i++)
        n += prog->ops[i].kind == kind || prog->ops[i].kind == TIDE_OP_OVERLAP;
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
        info->device_bytes = tide_fft_device_need(p);
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
        info->exchanges = p->streamed_exchanges;
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
static void streamed_cost(const tide_fft_plan *p, int direction, tide_fft_cost *c)
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
        c->exchanges = p->streamed_exchanges;
        c->exchange_bytes = p->streamed_exchanges * out * (P - 1) / P;
        c->fft_passes = 4;
        return;
    }
    c->flops = info.flops / P;
    c->h2d_bytes = src + (resident ? 0 : out);
    c->d2h_bytes = dst + (resident ? 0 : out);
    c->fft_bytes = in + 3 * out; /* each pass's transforms read and write their chunks once */
    c->move_bytes = resident ? 4 * out : 0;
    c->exchanges = p->streamed_exchanges;
    c->exchange_bytes = p->streamed_exchanges * out * (P - 1) / P;
    c->fft_passes = 2;
}

/* The cost of one run of a program, summed over its ops; host arrays on the GPU add their
 * copies to and from the device. */
static void program_cost(const tide_fft_plan *p, const tide_program *prog, tide_fft_cost *c)
{
    memset(c, 0, sizeof *c);
    for (int i = 0; i < prog->nops; i++) {
        const tide_op *o = &prog->ops[i];
        tide_op_cost fft = {0}, move = {0};
        if (o->kind == TIDE_OP_OVERLAP)
            tide_op_overlap_costs(o, &fft, &move);
        else
            *(o->kind == TIDE_OP_FFT ? &fft : &move) = o->cost;
        c->flops += o->cost.flops;
        c->exchange_bytes += o->cost.net_bytes;
        c->fft_bytes += fft.mem_bytes;
        c->move_bytes += move.mem_bytes;
        c->exchanges += o->kind == TIDE_OP_RESHAPE || o->kind == TIDE_OP_OVERLAP;
        c->fft_passes += o->kind == TIDE_OP_FFT || o->kind == TIDE_OP_OVERLAP;
    }
    if (p->env.be->gpu && p->o.location == TIDE_LOCATION_HOST) {
        double ib = (double)tide_fft_box_bytes(p, &p->inbox, p->o.type == TIDE_R2C);
        double ob = (double)tide_fft_box_bytes(p, &p->outbox, 0);
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
        streamed_cost(p, direction, &c);
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
        snprintf(buf, len, "%s", p->streamed_what);
    const tide_program *prog = p->mid ? &p->solve : &p->fwd;
    for (int i = 0; i < prog->nops && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? " > " : "",
                                 prog->ops[i].what);
    if (p->plane_pass && used < len)
        snprintf(buf + used, len - used, "%s",
                 p->plane_pass == 3   ? " [plane and strided passes]"
                 : p->plane_pass == 2 ? " [strided pass]"
                                      : " [plane pass]");
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
    size_t ib = tide_fft_box_bytes(p, &p->inbox, p->o.type == TIDE_R2C);
    size_t ob = tide_fft_box_bytes(p, &p->outbox, 0);
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
        streamed_cost(p, 0, cost);
    else
        program_cost(p, &p->solve, cost);
}

int tide_fft_solver_cpu_x(const tide_fft_plan *p) { return p->streamed && p->cpu_x; }

