/* args.c: argument agreement for collective create calls (see args.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/args.h"
#include "backend/backend.h"
#include "comm/region.h"

/* A size beyond this is no options struct, more likely stack garbage. */
enum { OPTIONS_MAX = 64 << 10 };

int tide_options_read(const void *opts, void *o, size_t size, size_t first)
{
    size_t have;
    if (!opts)
        return 1;
    memcpy(&have, opts, sizeof have);
    if (have < first || have > OPTIONS_MAX)
        return 0;
    memcpy(o, opts, have < size ? have : size);
    memcpy(o, &size, sizeof size);
    return 1;
}

int tide_args_fail(tide_args *r, int code, const char *fmt, ...)
{
    if (r->status)
        return r->status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msg, sizeof r->msg, fmt, ap);
    va_end(ap);
    return r->status = code;
}

void tide_args_check_ranges(const tide_args_spec *s, tide_args *r)
{
    for (int k = 0; k < s->nfields; k++) {
        const tide_arg_field *f = &s->fields[k];
        if (r->v[k] < f->lo || r->v[k] > f->hi) {
            tide_args_fail(r, TIDE_ERR_ARGUMENT, "%s = %d is not valid (expected %d..%d)",
                           f->name, r->v[k], f->lo, f->hi);
            return;
        }
    }
    for (int k = 0; k < s->nreals; k++) {
        const tide_arg_real *f = &s->reals[k];
        double x = r->x[k];
        if (!(x <= f->hi && (f->closed ? x >= f->lo : x > f->lo))) {
            tide_args_fail(r, TIDE_ERR_ARGUMENT, "%s = %g is not valid (expected %g %s %s <= %g)",
                           f->name, x, f->lo, f->closed ? "<=" : "<", f->name, f->hi);
            return;
        }
    }
}

/* The verdict from the gathered requests, the same on every rank. */
static int judge(tide_context *ctx, const tide_args_spec *s, const tide_args *all)
{
    int P = ctx->nranks;
    for (int r = 0; r < P; r++)
        if (all[r].status)
            return tide_fail(ctx, all[r].status, "rank %d: %s", r, all[r].msg);
    for (int r = 1; r < P; r++) {
        for (int k = 0; k < s->nfields; k++)
            if (all[r].v[k] != all[0].v[k])
                return tide_fail(ctx, TIDE_ERR_MISMATCH,
                                 "%s: %s differs between ranks: rank 0 has %d, rank %d has %d",
                                 s->call, s->fields[k].name, all[0].v[k], r, all[r].v[k]);
        for (int k = 0; k < s->nreals; k++)
            if (all[r].x[k] != all[0].x[k])
                return tide_fail(ctx, TIDE_ERR_MISMATCH,
                                 "%s: %s differs between ranks: rank 0 has %.17g, rank %d has "
                                 "%.17g", s->call, s->reals[k].name, all[0].x[k], r, all[r].x[k]);
        for (int k = 0; k < s->nboxes; k++)
            if (all[r].has[k] != all[0].has[k])
                return tide_fail(ctx, TIDE_ERR_MISMATCH,
                                 "%s: the %s box is NULL on rank %d but not on rank %d", s->call,
                                 s->boxes[k], all[r].has[k] ? 0 : r, all[r].has[k] ? r : 0);
    }
    return TIDE_SUCCESS;
}

int tide_args_agree(tide_context *ctx, const tide_args_spec *s, const tide_args *mine,
                    tide_args **all)
{
    *all = NULL;
    tide_args *a = malloc(sizeof(tide_args) * (size_t)ctx->nranks);
    int st = tide_agree(ctx, a ? TIDE_SUCCESS
                               : tide_fail(ctx, TIDE_ERR_NOMEM, "%s: out of memory gathering "
                                           "the arguments", s->call));
    if (!st && MPI_Allgather(mine, (int)sizeof *mine, MPI_BYTE, a, (int)sizeof *mine, MPI_BYTE,
                             ctx->comm) != MPI_SUCCESS)
        st = tide_fail(ctx, TIDE_ERR_MPI, "%s: MPI_Allgather of the arguments failed", s->call);
    if (!st)
        st = judge(ctx, s, a);
    if (st) {
        free(a);
        return st;
    }
    *all = a;
    return TIDE_SUCCESS;
}

/* The order is a permutation of {0,1,2} and the box lies inside grid g. */
static int check_box(tide_context *ctx, const char *side, int r, const tide_box *b,
                     const int g[3])
{
    int seen = 0;
    for (int k = 0; k < 3; k++) {
        if (b->order[k] < 0 || b->order[k] > 2 || (seen & (1 << b->order[k])))
            return tide_fail(ctx, TIDE_ERR_BOX, "%s box of rank %d: order {%d,%d,%d} is not a "
                             "permutation of {0,1,2}", side, r, b->order[0], b->order[1],
                             b->order[2]);
        seen |= 1 << b->order[k];
    }
    for (int d = 0; d < 3; d++) {
        if (b->hi[d] < b->lo[d])
            return tide_fail(ctx, TIDE_ERR_BOX, "%s box of rank %d: hi %d < lo %d in dimension "
                             "%d", side, r, b->hi[d], b->lo[d], d);
        if (b->lo[d] < 0 || b->hi[d] > g[d])
            return tide_fail(ctx, TIDE_ERR_BOX, "%s box of rank %d: [%d,%d) in dimension %d is "
                             "outside the grid 0..%d", side, r, b->lo[d], b->hi[d], d, g[d]);
    }
    return TIDE_SUCCESS;
}

int tide_args_check_tiling(tide_context *ctx, const tide_args_spec *s, const tide_args *all,
                           int k, const int g[3])
{
    const char *side = s->boxes[k];
    long long total = 0;
    for (int r = 0; r < ctx->nranks; r++) {
        int st = check_box(ctx, side, r, &all[r].box[k], g);
        if (st)
            return st;
        total += tide_box_count(&all[r].box[k]);
    }
    for (int r = 0; r < ctx->nranks; r++)
        for (int q = 0; q < r; q++) {
            tide_box x;
            if (tide_box_intersect(&all[r].box[k], &all[q].box[k], &x) > 0)
                return tide_fail(ctx, TIDE_ERR_BOX, "%s box of rank %d overlaps rank %d at "
                                 "(%d,%d,%d)", side, r, q, x.lo[0], x.lo[1], x.lo[2]);
        }
    long long want = (long long)g[0] * g[1] * g[2];
    if (total != want)
        return tide_fail(ctx, TIDE_ERR_BOX, "%s boxes cover %lld of the %lld points of the "
                         "%dx%dx%d grid", side, total, want, g[0], g[1], g[2]);
    return TIDE_SUCCESS;
}

int tide_wants_cuda(const tide_context *ctx, int backend)
{
    return backend == TIDE_BACKEND_CUDA ||
           (backend == TIDE_BACKEND_AUTO && ctx->backend == TIDE_BACKEND_CUDA);
}

int tide_create_enter(tide_context *ctx, const char *call, int *prev)
{
    int st = tide_device_enter(ctx, prev);
    if (!st)
        return TIDE_SUCCESS;
    tide_fail(ctx, st, "%s: could not make GPU %d current", call, ctx->dev.device);
    st = tide_agree(ctx, st);
    tide_device_leave(*prev);
    return st;
}

int tide_args_backend(tide_context *ctx, int backend, int location)
{
    int cuda = tide_wants_cuda(ctx, backend);
    if (cuda && ctx->backend != TIDE_BACKEND_CUDA)
        return tide_fail(ctx, TIDE_ERR_UNSUPPORTED, "backend cuda requested, but the context "
                         "runs on the CPU: %s", ctx->backend_reason);
    /* The context's reason names each rank's own GPU, so it is quoted only where the context
     * runs on the CPU: the message stays the same on every rank. */
    if (location == TIDE_LOCATION_DEVICE && !cuda)
        return tide_fail(ctx, TIDE_ERR_UNSUPPORTED, "arrays on the device need backend cuda or "
                         "auto on a context with GPUs (%s)", ctx->backend == TIDE_BACKEND_CUDA
                         ? "the plan asked for backend cpu" : ctx->backend_reason);
    return TIDE_SUCCESS;
}

int tide_exchange_unusable(const tide_context *ctx, int x, int cuda, char *why, size_t len)
{
    if ((x == TIDE_EXCHANGE_NCCL || x == TIDE_EXCHANGE_CUDA_MPI || x == TIDE_EXCHANGE_DIRECT) &&
        !cuda)
        return snprintf(why, len, "exchange %s moves GPU data; this plan runs on the CPU",
                        tide_exchange_name(x)), 1;
    if (x == TIDE_EXCHANGE_NCCL && !ctx->nccl_usable)
        return snprintf(why, len, "exchange nccl: NCCL needs a build with NCCL and a GPU of its "
                        "own for every rank"), 1;
    if (x == TIDE_EXCHANGE_CUDA_MPI && !ctx->cuda_aware_mpi)
        return snprintf(why, len, "exchange cuda-mpi: the MPI library does not take device "
                        "pointers (MPIX_Query_cuda_support)"), 1;
    if (x == TIDE_EXCHANGE_DIRECT && !ctx->gpus_reach)
        return snprintf(why, len, "exchange direct: the GPUs store into each other's memory, so "
                        "every rank must be on one node (%d of %d are) and every rank's GPU "
                        "reach every other's (CUDA peer access)", ctx->local_size,
                        ctx->nranks), 1;
    return 0;
}

tide_exchange tide_exchange_gpu_auto(const tide_context *ctx, int direct)
{
    return direct && ctx->gpus_reach ? TIDE_EXCHANGE_DIRECT
           : ctx->nccl_usable        ? TIDE_EXCHANGE_NCCL
           : ctx->cuda_aware_mpi     ? TIDE_EXCHANGE_CUDA_MPI
                                     : TIDE_EXCHANGE_AUTO;
}

int tide_args_exchange(tide_context *ctx, int exchange, int cuda)
{
    char why[TIDE_MSG_LEN];
    return tide_exchange_unusable(ctx, exchange, cuda, why, sizeof why)
               ? tide_fail(ctx, TIDE_ERR_UNSUPPORTED, "%s", why)
               : TIDE_SUCCESS;
}

const char *tide_array_location(const tide_context *ctx, int device, const void *ptr)
{
    if (ctx->backend != TIDE_BACKEND_CUDA)
        return "";
    const tide_backend_ops *cuda = tide_backend_cuda();
    int k = cuda->pointer_kind(ptr);
    static _Thread_local char why[160];
    if (k < 0)
        return snprintf(why, sizeof why, "an array CUDA cannot identify (%s)",
                        cuda->last_error()), why;
    if (device && !k)
        return "a host array to a plan whose arrays are on the device";
    if (!device && k)
        return "a device array to a plan whose arrays are in host memory";
    return "";
}

tide_call_arg tide_call_int(const char *name, long long v)
{
    return (tide_call_arg){name, v, 0};
}

_Static_assert(sizeof(long long) == sizeof(double), "a real's bits fit a long long");

tide_call_arg tide_call_real(const char *name, double x)
{
    tide_call_arg a = {name, 0, 1};
    memcpy(&a.v, &x, sizeof x);
    return a;
}

/* A value of an argument for a message: the integer, or the real its bits hold. */
static void format_value(const tide_call_arg *a, long long v, char *buf, size_t len)
{
    double x;
    memcpy(&x, &v, sizeof x);
    if (a->real)
        snprintf(buf, len, "%.17g", x);
    else
        snprintf(buf, len, "%lld", v);
}

int tide_agree_call(tide_context *ctx, const char *call, int status, const tide_call_arg *args,
                    int n)
{
    /* MAX over the ranks of -(first failing rank), of each value and of its complement (the
     * complement of its minimum: no overflow, unlike negation) */
    long long mine[1 + 2 * TIDE_CALL_ARGS], most[1 + 2 * TIDE_CALL_ARGS];
    if (n > TIDE_CALL_ARGS)
        n = TIDE_CALL_ARGS;
    mine[0] = -(long long)(status ? ctx->rank : ctx->nranks);
    for (int i = 0; i < n; i++) {
        mine[1 + 2 * i] = args[i].v;
        mine[2 + 2 * i] = ~args[i].v;
    }
    if (MPI_Allreduce(mine, most, 1 + 2 * n, MPI_LONG_LONG, MPI_MAX, ctx->comm) != MPI_SUCCESS)
        return tide_fail(ctx, TIDE_ERR_MPI, "%s: MPI_Allreduce failed while agreeing on the "
                         "arguments", call);
    int first = (int)-most[0];
    if (first < ctx->nranks)
        return tide_agree_from(ctx, first, status);
    for (int i = 0; i < n; i++) {
        long long hi = most[1 + 2 * i], lo = ~most[2 + 2 * i];
        if (hi == lo)
            continue;
        char a[32], b[32];
        format_value(&args[i], lo, a, sizeof a);
        format_value(&args[i], hi, b, sizeof b);
        return tide_fail(ctx, TIDE_ERR_MISMATCH, "%s%s%s differs between ranks: %s on some, %s "
                         "on others", call ? call : "", call ? ": " : "", args[i].name, a, b);
    }
    return TIDE_SUCCESS;
}

int tide_args_first_difference(tide_context *ctx, const char *call, const void *a, int count,
                               MPI_Datatype type, size_t elem, int *at, void *lo, void *hi)
{
    char *min = malloc(2 * elem * (size_t)count + 1), *max = min + elem * (size_t)count;
    int st = tide_agree(ctx, min ? TIDE_SUCCESS
                                 : tide_fail(ctx, TIDE_ERR_NOMEM, "%s: out of memory", call));
    if (!st && (MPI_Allreduce(a, min, count, type, MPI_MIN, ctx->comm) != MPI_SUCCESS ||
                MPI_Allreduce(a, max, count, type, MPI_MAX, ctx->comm) != MPI_SUCCESS))
        st = tide_agree(ctx, tide_fail(ctx, TIDE_ERR_MPI, "%s: MPI_Allreduce failed", call));
    *at = -1;
    for (int i = 0; i < count && !st && *at < 0; i++) {
        const char *x = min + elem * (size_t)i, *y = max + elem * (size_t)i;
        int same = type == MPI_DOUBLE ? *(const double *)x == *(const double *)y
                                      : memcmp(x, y, elem) == 0;
        if (!same) {
            *at = i;
            memcpy(lo, x, elem);
            memcpy(hi, y, elem);
        }
    }
    free(min);
    return st;
}
