/* error.c: status names, per-context messages, collective agreement on failures, logging. */
#include <stdio.h>
#include <string.h>
#include "core/core.h"

static _Thread_local char context_free_msg[TIDE_MSG_LEN];

const char *tide_strerror(int status)
{
    switch (status) {
    case TIDE_SUCCESS: return "success";
    case TIDE_ERR_ARGUMENT: return "invalid argument";
    case TIDE_ERR_BOX: return "invalid boxes";
    case TIDE_ERR_MISMATCH: return "arguments differ between ranks";
    case TIDE_ERR_UNSUPPORTED: return "not supported by this build or machine";
    case TIDE_ERR_NOMEM: return "out of memory";
    case TIDE_ERR_MPI: return "MPI error";
    case TIDE_ERR_BACKEND: return "backend library error";
    case TIDE_ERR_TOO_LARGE: return "size too large";
    default: return "unknown status";
    }
}

const char *tide_last_error(const tide_context *ctx)
{
    return ctx ? ctx->errmsg : context_free_msg;
}

int tide_fail(tide_context *ctx, int code, const char *fmt, ...)
{
    char *dst = ctx ? ctx->errmsg : context_free_msg;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, TIDE_MSG_LEN, fmt, ap);
    va_end(ap);
    return code;
}

int tide_agree(tide_context *ctx, int status)
{
    int mine = status != TIDE_SUCCESS ? ctx->rank : ctx->nranks, first = mine;
    if (MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, ctx->comm) != MPI_SUCCESS)
        return tide_fail(ctx, TIDE_ERR_MPI, "MPI_Allreduce failed while agreeing on a status");
    return first == ctx->nranks ? TIDE_SUCCESS : tide_agree_from(ctx, first, status);
}

int tide_agree_from(tide_context *ctx, int first, int status)
{
    struct {
        int code;
        char msg[TIDE_MSG_LEN];
    } what = {status, ""};
    if (ctx->rank == first)
        memcpy(what.msg, ctx->errmsg, TIDE_MSG_LEN);
    if (MPI_Bcast(&what, (int)sizeof what, MPI_BYTE, first, ctx->comm) != MPI_SUCCESS)
        return tide_fail(ctx, TIDE_ERR_MPI, "MPI_Bcast failed while agreeing on a status");
    what.msg[TIDE_MSG_LEN - 1] = '\0';
    if (strncmp(what.msg, "rank ", 5) == 0)
        return tide_fail(ctx, what.code, "%s", what.msg);
    return tide_fail(ctx, what.code, "rank %d: %.*s", first, TIDE_MSG_LEN - 16, what.msg);
}

static void log_line(const tide_context *ctx, const char *tag, const char *fmt, va_list ap)
{
    char line[1024];
    vsnprintf(line, sizeof line, fmt, ap);
    fprintf(stderr, "[tide %d/%d %s] %s\n", ctx->rank, ctx->nranks, tag, line);
}

void tide_log(const tide_context *ctx, int level, const char *fmt, ...)
{
    if (!ctx || level > ctx->log_level)
        return;
    static const char *names[] = {"", "warn", "info", "debug"};
    va_list ap;
    va_start(ap, fmt);
    log_line(ctx, names[level], fmt, ap);
    va_end(ap);
}

void tide_log_line(const tide_context *ctx, const char *tag, const char *fmt, ...)
{
    if (!ctx)
        return;
    va_list ap;
    va_start(ap, fmt);
    log_line(ctx, tag, fmt, ap);
    va_end(ap);
}

const char *tide_backend_name(tide_backend b)
{
    return b == TIDE_BACKEND_CPU ? "cpu" : b == TIDE_BACKEND_CUDA ? "cuda" : "auto";
}

const char *tide_exchange_name(tide_exchange e)
{
    switch (e) {
    case TIDE_EXCHANGE_A2AV: return "a2av";
    case TIDE_EXCHANGE_P2P: return "p2p";
    case TIDE_EXCHANGE_NCCL: return "nccl";
    case TIDE_EXCHANGE_CUDA_MPI: return "cuda-mpi";
    case TIDE_EXCHANGE_DIRECT: return "direct";
    default: return "auto";
    }
}

const char *tide_decomposition_name(tide_decomposition d)
{
    return d == TIDE_DECOMP_SLABS ? "slabs" : d == TIDE_DECOMP_PENCILS ? "pencils" : "auto";
}
