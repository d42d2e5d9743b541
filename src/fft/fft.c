/*
 * fft.c: distributed 3D FFT plans on the plan core: the request agreed on every rank
 * (core/args.c), then the plan the decomposition, the location and the device budget call
 * for: the program of reshapes, local FFTs and scaling (fft_build.c) that the executor runs on
 * the plan's backend, or, for host arrays in slabs on a GPU, streamed through it in chunks
 * (fft_streamed.c, solver_streamed.c): on one rank always, on several when they exceed the
 * device budget. Solver plans (plan/solver.h) are made here too.
 */
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/args.h"
#include "fft/fft_plan.h"
#include "fft/fft_streamed.h"
#include "fft/solver_streamed.h"
#include "plan/overlap.h"

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
    {"option exchange", TIDE_EXCHANGE_AUTO, TIDE_EXCHANGE_DIRECT},
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
    int st = tide_args_backend(ctx, v[F_BACKEND], v[F_LOCATION]);
    return st ? st : tide_args_exchange(ctx, v[F_EXCHANGE], tide_wants_cuda(ctx, v[F_BACKEND]));
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
static int streamed_options_ok(const tide_context *ctx, const tide_fft_options *o)
{
    tide_exchange e = o->exchange;
    return o->location == TIDE_LOCATION_HOST &&
           (o->decomposition == TIDE_DECOMP_AUTO || o->decomposition == TIDE_DECOMP_SLABS) &&
           (ctx->nranks == 1 || e == TIDE_EXCHANGE_AUTO || e == TIDE_EXCHANGE_P2P ||
            (e == TIDE_EXCHANGE_NCCL && ctx->nccl_usable));
}

static int streamed_ok(const tide_context *ctx, const int n[3], const int nout[3],
                       const tide_args *all, const tide_fft_options *o, int *transposed)
{
    int P = ctx->nranks, xs_out = 1, ys_out = 1, xs_in = 1;
    for (int r = 0; r < P; r++) {
        xs_in = xs_in && (!all[r].has[BOX_IN] || is_slab(n, P, r, 0, &all[r].box[BOX_IN]));
        xs_out = xs_out && (!all[r].has[BOX_OUT] || is_slab(nout, P, r, 0, &all[r].box[BOX_OUT]));
        ys_out = ys_out && all[r].has[BOX_OUT] && is_slab(nout, P, r, 1, &all[r].box[BOX_OUT]);
    }
    *transposed = all[0].has[BOX_OUT] ? !xs_out && ys_out : o->transposed_out;
    return xs_in && (xs_out || ys_out) && P <= n[0] && P <= n[1] && streamed_options_ok(ctx, o);
}

/* Whether a solver's host arrays too large for the device budget can stream through the GPU
 * in chunks (solver_streamed.c): slabs along its outer dimension (NULL boxes, or tide_box_slab's
 * on every rank). The same answer on every rank. */
static int solver_streamed_ok(const tide_context *ctx, const int n[3], const tide_args *all,
                              const tide_fft_options *o, const tide_fft_middle *mid)
{
    int P = ctx->nranks, d = tide_solver_streamed_outer(mid, n, P), ok = d >= 0;
    for (int r = 0; r < P && ok; r++)
        ok = !all[r].has[BOX_IN] || is_slab(n, P, r, d, &all[r].box[BOX_IN]);
    return ok && streamed_options_ok(ctx, o);
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
    p->env.out_kept = opts->location == TIDE_LOCATION_DEVICE && opts->arrays_kept;
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
static int streamed_plan_base(tide_context *ctx, const int n[3], const tide_fft_options *opts,
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
    p->streamed_exchanges = moves;
    p->env.nccl = nccl;
    *out = p;
    return TIDE_SUCCESS;
}

/* The exchange a streamed plan's description shows after a moving pass. */
static const char *streamed_exchange_name(const tide_fft_plan *p)
{
    return !p->streamed_exchanges ? "" : p->env.nccl ? " > nccl" : " > p2p";
}

/* Collective: the streamed plan (see streamed_ok). resident: the data may stay on the device
 * between the passes (one rank, when it fits). */
static int make_streamed_plan(tide_context *ctx, const int n[3], const tide_fft_options *opts,
                              int transposed, int resident, tide_fft_plan **out)
{
    int P = ctx->nranks, moves = P > 1 ? (transposed ? 1 : 2) : 0;
    char err[TIDE_MSG_LEN] = "";
    tide_fft_plan *p;
    int st = streamed_plan_base(ctx, n, opts, NULL, moves, 0, moves == 1 ? 1 : 0, &p, err,
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
        const char *x = streamed_exchange_name(p);
        snprintf(p->streamed_what, sizeof p->streamed_what, "stream[%d chunks, %d slots%s] "
                 "fft(y,z)%s > stream fft(x)%s", sh.chunks, sh.slots,
                 sh.resident ? ", resident" : "", x, moves == 2 ? x : "");
    }
    return agree_plan(ctx, st, err, p, out);
}

/* Collective: the streamed solver plan (see solver_streamed_ok), by the scheme cpu_x says,
 * exchanges as for make_streamed_plan; the CPU's x transforms take cpu_seconds (negative: not
 * measured yet). */
static int make_solver_streamed_plan(tide_context *ctx, const int n[3],
                                     const tide_fft_options *opts, const tide_fft_middle *mid,
                                     int cpu_x, double cpu_seconds, tide_fft_plan **out)
{
    int P = ctx->nranks, o = cpu_x ? 0 : tide_solver_streamed_outer(mid, n, P);
    char err[TIDE_MSG_LEN] = "";
    tide_fft_plan *p;
    int st = streamed_plan_base(ctx, n, opts, mid, P > 1 ? 2 : 0, o, 1 - o, &p, err, sizeof err);
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
        const char *x = streamed_exchange_name(p);
        if (cpu_x)
            snprintf(p->streamed_what, sizeof p->streamed_what, "cpu %s > stream[%d chunks, %d "
                     "slots] %s > cpu %s", w[0], sh.chunks, sh.slots, w[1], w[2]);
        else
            snprintf(p->streamed_what, sizeof p->streamed_what, "stream[%d chunks, %d slots] %s%s "
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
            t = tide_exchange_gpu_auto(ctx, 1);
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
        st = tide_fft_build(p, uin, uout, err, sizeof err);
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

/* Timed pairs after a warm-up of t seconds: enough for MEASURE_SPAN seconds, at least
 * MEASURE_REPS_MIN and at most MEASURE_REPS_MAX. The best of a few pairs of a few milliseconds
 * moves with the machine's noise (ranks sharing cores are descheduled for whole slices) by more
 * than the variants differ; more of them cost little next to one pair of a large grid. */
enum { MEASURE_REPS_MIN = 3, MEASURE_REPS_MAX = 30 };
static const double MEASURE_SPAN = 0.05;
static int measure_reps(double t)
{
    double n = t > 0 ? MEASURE_SPAN / t : MEASURE_REPS_MAX;
    return n < MEASURE_REPS_MIN ? MEASURE_REPS_MIN : n > MEASURE_REPS_MAX ? MEASURE_REPS_MAX
                                                                            : (int)n;
}

/* Collective: the seconds of one forward and backward pair of plan p (a solver's: one solve),
 * the best of measure_reps(the warm-up's time) after a warm-up, the slowest rank's (a failure:
 * INFINITY on every rank), on arrays made for it (zeros; device arrays copied from a zero host
 * array), each call complete on return. */
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
    int async = p->o.async, out_kept = p->env.out_kept;
    p->o.async = 0;        /* each timed call complete on return */
    p->env.out_kept = 0;   /* arrays freed below: no peer stores into them */
    st = tide_agree(ctx, st);
    for (int rep = 0, reps = 1; rep < reps && !st; rep++) {
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
        if (!rep) { /* the same count on every rank: the slowest rank's warm-up sets it */
            MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, ctx->comm);
            reps = 1 + measure_reps(t);
        }
    }
    p->o.async = async;
    p->env.out_kept = out_kept;
    for (int i = 0; i < 2; i++)
        if (a[i])
            dev ? tide_device_free(ctx, a[i]) : tide_host_free(ctx, a[i]);
    if (zero)
        tide_host_free(ctx, zero);
    double slowest = st ? INFINITY : best;
    MPI_Allreduce(MPI_IN_PLACE, &slowest, 1, MPI_DOUBLE, MPI_MAX, ctx->comm);
    return slowest;
}

enum { MEASURE_MAX = 5 }; /* the most plans one measured choice times */
/* A variant replaces the rule's choice (variant 0) only when faster by more than this share:
 * a difference within the timings' noise leaves the plan the rule makes. */
static const double MEASURE_MARGIN = 0.02;

/* Collective: plan *p, made from v[0], against plans made from the variants v[1 .. nv - 1],
 * each timed by time_pair on its own (one plan at a time: they need not fit the budget
 * together); *p becomes the fastest (the earliest on a tie; v[0] unless another is faster by
 * more than MEASURE_MARGIN), NULL where that one could not be made again. Variant k is made
 * with the context's chunk count and engine knob[k][0] and knob[k][1] (knob NULL: the
 * context's own). A variant that cannot be made, or whose plan `differs` (collective; NULL:
 * every plan) says is variant 0's in effect, is left out. The times go to the info log, what
 * naming the choice and name[k] variant k (no line where no variant but 0 was timed). Returns
 * the variant kept. */
static int measure_variants(tide_context *ctx, const int n[3], const tide_args *all,
                            const tide_fft_options *v, const int (*knob)[2],
                            int (*differs)(tide_context *, const tide_fft_plan *),
                            const char *const *name, int nv, const char *what, int cuda,
                            const tide_fft_middle *mid, tide_fft_plan **p)
{
    double t[MEASURE_MAX] = {time_pair(ctx, *p)};
    int best = 0, held = 0, timed = 0; /* held: the variant *p holds (-1: none) */
    int asked[2] = {ctx->fft_chunks, ctx->fft_engine};
    for (int k = 1; k < nv; k++) {
        tide_fft_plan_destroy(*p);
        ctx->fft_chunks = knob ? knob[k][0] : asked[0];
        ctx->fft_engine = knob ? knob[k][1] : asked[1];
        held = make_plan(ctx, n, all, &v[k], cuda, mid, p) ? -1 : k;
        int other = held == k && (!differs || differs(ctx, *p));
        t[k] = other ? time_pair(ctx, *p) : INFINITY;
        timed += other;
        best = t[k] < (best ? t[best] : (1 - MEASURE_MARGIN) * t[0]) ? k : best;
    }
    char line[256] = "";
    for (int k = 0, used = 0; k < nv && used < (int)sizeof line; k++)
        if (t[k] < INFINITY || !differs)
            used += snprintf(line + used, sizeof line - (size_t)used, "%s%s %.4g ms",
                             k ? ", " : "", name[k], t[k] * 1e3);
    if (ctx->rank == 0 && (timed || !differs))
        tide_log(ctx, TIDE_LOG_INFO, "%s: %s %s (%s, measured; %s kept)",
                 mid ? mid->call : "fft plan", what, line,
                 mid ? "a solve" : "a forward and backward pair", name[best]);
    if (held != best) {
        tide_fft_plan_destroy(*p); /* the fastest again: no two were ever held at once */
        ctx->fft_chunks = knob ? knob[best][0] : asked[0];
        ctx->fft_engine = knob ? knob[best][1] : asked[1];
        if (make_plan(ctx, n, all, &v[best], cuda, mid, p) != TIDE_SUCCESS)
            *p = NULL;
    }
    ctx->fft_chunks = asked[0];
    ctx->fft_engine = asked[1];
    return best;
}

/* Collective: with planning MEASURE on several ranks, decomposition AUTO and no boxes given,
 * where the rule takes slabs: slabs against pencils (the rule takes pencils only where slabs
 * would leave ranks idle: nothing to measure there). *o: the options that make *p again. */
static void measure_decomposition(tide_context *ctx, const int n[3], const tide_args *all,
                                  tide_fft_options *o, int cuda, const tide_fft_middle *mid,
                                  tide_fft_plan **p)
{
    if (o->decomposition != TIDE_DECOMP_AUTO || all[0].has[BOX_IN] || all[0].has[BOX_OUT] ||
        (*p)->decomp != TIDE_DECOMP_SLABS)
        return;
    tide_fft_options v[2] = {*o, *o};
    v[1].decomposition = TIDE_DECOMP_PENCILS;
    static const char *const name[] = {"slabs", "pencils"};
    *o = v[measure_variants(ctx, n, all, v, NULL, NULL, name, 2, "decomposition", cuda, mid,
                            p)];
}

/* Collective: with planning MEASURE on several ranks and exchange AUTO, the exchange AUTO
 * took against each other one this plan can use: on the GPU direct stores, NCCL, MPI on device
 * pointers and staging through host memory, on the CPU MPI_Alltoallv and point to point, on the
 * decomposition plan p has. Every rank knows alike which are usable (the context agreed them),
 * so every rank times the same variants. *o: the options that make *p again. */
static void measure_exchange(tide_context *ctx, const int n[3], const tide_args *all,
                             tide_fft_options *o, int cuda, const tide_fft_middle *mid,
                             tide_fft_plan **p)
{
    if (o->exchange != TIDE_EXCHANGE_AUTO)
        return;
    tide_fft_options v[MEASURE_MAX];
    const char *name[MEASURE_MAX];
    v[0] = *o;
    v[0].exchange = cuda ? (*p)->env.transport : TIDE_EXCHANGE_AUTO;
    name[0] = v[0].exchange == TIDE_EXCHANGE_AUTO ? "auto" : tide_exchange_name(v[0].exchange);
    /* the candidates (on the GPU, P2P stages through host memory), those usable here */
    static const tide_exchange gpu[] = {TIDE_EXCHANGE_DIRECT, TIDE_EXCHANGE_NCCL,
                                        TIDE_EXCHANGE_CUDA_MPI, TIDE_EXCHANGE_P2P};
    static const tide_exchange cpu[] = {TIDE_EXCHANGE_A2AV, TIDE_EXCHANGE_P2P};
    const tide_exchange *x = cuda ? gpu : cpu;
    int nx = cuda ? (int)(sizeof gpu / sizeof *gpu) : (int)(sizeof cpu / sizeof *cpu), nv = 1;
    for (int k = 0; k < nx; k++) {
        char why[TIDE_MSG_LEN];
        if (tide_exchange_unusable(ctx, x[k], cuda, why, sizeof why) || x[k] == v[0].exchange)
            continue;
        v[nv] = v[0];
        v[nv].exchange = x[k];
        name[nv++] = x[k] == TIDE_EXCHANGE_P2P && cuda ? "staged p2p" : tide_exchange_name(x[k]);
    }
    *o = v[measure_variants(ctx, n, all, v, NULL, NULL, name, nv, "exchange", cuda, mid, p)];
}

/* The chunks of plan p's exchanges overlapped with the FFTs beside them (0: none is). */
static int plan_chunks(const tide_fft_plan *p)
{
    const tide_program *prog[] = {&p->fwd, &p->bwd, &p->solve};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < prog[k]->nops; i++)
            if (prog[k]->ops[i].kind == TIDE_OP_OVERLAP)
                return tide_op_overlap_chunks(&prog[k]->ops[i]);
    return 0;
}

/* Collective: with planning MEASURE on several ranks and TIDE_FFT_CHUNKS unset, the chunks of
 * the exchanges overlapped with the FFTs beside them: the rule's count against none and 2, 4,
 * 8 and 16 chunks (the first four other than the rule's), on the decomposition and exchange of
 * o. The best count depends on the sizes, the GPUs and their links (on two H200, 4 chunks at
 * 512^3 and 8 at 1024^3), so it is timed rather than modelled. */
static void measure_chunks(tide_context *ctx, const int n[3], const tide_args *all,
                           const tide_fft_options *o, int cuda, const tide_fft_middle *mid,
                           tide_fft_plan **p)
{
    if (ctx->fft_chunks >= 0)
        return;
    static const int counts[] = {0, 2, 4, 8, 16};
    tide_fft_options v[MEASURE_MAX];
    const char *name[MEASURE_MAX];
    char names[MEASURE_MAX][16];
    int c[MEASURE_MAX][2] = {{-1, ctx->fft_engine}}, rule = plan_chunks(*p), nv = 1;
    for (int k = 0; k < (int)(sizeof counts / sizeof *counts) && nv < MEASURE_MAX; k++)
        if (counts[k] != rule)
            c[nv][0] = counts[k], c[nv++][1] = ctx->fft_engine;
    for (int k = 0; k < nv; k++) {
        int count = k ? c[k][0] : rule;
        v[k] = *o;
        snprintf(names[k], sizeof names[k], count ? "x%d" : "none", count);
        name[k] = names[k];
    }
    int kept = measure_variants(ctx, n, all, v, c, NULL, name, nv, "exchange chunks", cuda, mid,
                                p);
    ctx->fft_chunks = kept ? c[kept][0] : -1; /* for the engine's variants, then unset again */
}

/* Collective: whether plan p runs Tide's plane or strided pass on any rank. */
static int runs_plane_pass(tide_context *ctx, const tide_fft_plan *p)
{
    int any = p->plane_pass;
    MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, ctx->comm);
    return any;
}

/* Collective: with planning MEASURE on the GPU and TIDE_FFT_ENGINE unset, cuFFT alone against
 * Tide's plane and strided passes for the FFTs they take (gpu/fft_plane.h; the plan's other
 * FFTs stay cuFFT's), where they take any; on the decomposition and exchange of o and the chunk count
 * kept (the context's while the measurement runs). */
static void measure_engine(tide_context *ctx, const int n[3], const tide_args *all,
                           const tide_fft_options *o, int cuda, const tide_fft_middle *mid,
                           tide_fft_plan **p)
{
    if (ctx->fft_engine >= 0 || !cuda || (*p)->streamed)
        return;
    tide_fft_options v[2] = {*o, *o};
    static const char *const name[] = {"cufft", "plane pass"};
    const int knob[2][2] = {{ctx->fft_chunks, -1}, {ctx->fft_chunks, 1}};
    measure_variants(ctx, n, all, v, knob, runs_plane_pass, name, 2, "engine", cuda, mid, p);
}

/* Collective: make_plan, then with planning MEASURE on several ranks the measured
 * decomposition, exchange and chunks of the exchanges beside the FFTs. */
static int make_measured(tide_context *ctx, const int n[3], const tide_args *all,
                         const tide_fft_options *opts, int cuda, const tide_fft_middle *mid,
                         tide_fft_plan **p)
{
    int st = make_plan(ctx, n, all, opts, cuda, mid, p);
    if (st || opts->planning != TIDE_PLAN_MEASURE)
        return st;
    tide_fft_options kept = *opts;
    int chunks = ctx->fft_chunks;
    if (ctx->nranks > 1)
        measure_decomposition(ctx, n, all, &kept, cuda, mid, p);
    if (*p && ctx->nranks > 1)
        measure_exchange(ctx, n, all, &kept, cuda, mid, p);
    if (*p && ctx->nranks > 1)
        measure_chunks(ctx, n, all, &kept, cuda, mid, p);
    if (*p)
        measure_engine(ctx, n, all, &kept, cuda, mid, p);
    ctx->fft_chunks = chunks;
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
    int streams = cuda && streamed_ok(ctx, n, nout, all, opts, &transposed);
    if (streams && ctx->nranks == 1) {
        /* One rank: streamed, so the transfers overlap the transforms; the data stays on the
         * device between the passes when it fits. */
        st = make_streamed_plan(ctx, n, opts, transposed, 1, &p);
    } else {
        st = make_measured(ctx, n, all, opts, cuda, NULL, &p);
        if (st == TIDE_ERR_NOMEM && streams) {
            tide_log(ctx, TIDE_LOG_INFO, "fft plan streams host arrays through the GPU: %s",
                     ctx->errmsg);
            st = make_streamed_plan(ctx, n, opts, transposed, 0, &p);
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


/* ---- solver plans (plan/solver.h) -------------------------------------------------------- */

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
        if (!cuda || !solver_streamed_ok(ctx, n, all, &o, mid))
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
            st = make_solver_streamed_plan(ctx, n, &o, mid, cpu_x, -1, plan);
    } else if (!st) {
        st = make_measured(ctx, n, all, &o, cuda, mid, plan);
        if (st == TIDE_ERR_NOMEM && cuda && solver_streamed_ok(ctx, n, all, &o, mid)) {
            tide_log(ctx, TIDE_LOG_INFO, "%s streams host arrays through the GPU: %s",
                     mid->call, ctx->errmsg);
            double cpu;
            int faster = cpu_x_faster(ctx, n, &o, mid, &cpu);
            st = make_solver_streamed_plan(ctx, n, &o, mid, faster, cpu, plan);
        }
        st = or_on_cpu(ctx, st, n, all, &o, cuda, mid, plan);
    }
    free(all);
    tide_device_leave(prev);
    return st;
}

