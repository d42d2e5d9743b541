/* measure.c: the rates measured on the machine for the plans and for `tide info --measure`:
 * a rank's host copy and PCIe rates (tide_measure_rates, tide_measure_rates_together) and an
 * all-to-all over each exchange (tide_measure_exchange). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/args.h"
#include "tide_config.h"
#include "core/core.h"
#include "backend/device.h"
#include "backend/measure.h"
#include "backend/memory.h"
#include "comm/transport.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* tide_gpu_measure's step with the other ranks: whether every rank is ok (a barrier). */
static int barrier_agree(void *arg, int ok)
{
    tide_context *ctx = arg;
    int all = 0;
    if (MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, ctx->comm) != MPI_SUCCESS)
        return 0;
    return all;
}

/* The rank's rates of tide_rates. together: collective, every repetition of every
 * measurement started on all ranks at once (tide_measure_rates_together). */

static int measure_rates(tide_context *ctx, size_t bytes, int together, tide_rates *rates,
                         const char *fn)
{
    if (!ctx || !rates)
        return tide_fail(ctx, TIDE_ERR_ARGUMENT, "%s: NULL argument", fn);
    if (!bytes)
        bytes = (size_t)256 << 20;
    tide_rates r = {0, 0, 0, 0, 0};
    char *a = malloc(bytes), *b = malloc(bytes);
    int st = a && b ? TIDE_SUCCESS
                    : tide_fail(ctx, TIDE_ERR_NOMEM, "%s: cannot allocate 2 x %zu bytes", fn,
                                bytes);
    if (together)
        st = tide_agree(ctx, st);
    double t[5];
    if (!st) {
        memset(a, 0x5a, bytes); /* never measure on untouched or zero pages */
        memset(b, 0xa5, bytes);
        for (int i = 0; i < 5; i++) {
            if (together)
                MPI_Barrier(ctx->comm);
            double t0 = MPI_Wtime();
            memcpy(i % 2 ? a : b, i % 2 ? b : a, bytes);
            t[i] = MPI_Wtime() - t0;
        }
        qsort(t, 5, sizeof t[0], cmp_double);
        r.host_copy = 2.0 * (double)bytes / 1e9 / t[2];
    }
    free(a);
    free(b);
    if (!st && ctx->backend == TIDE_BACKEND_CUDA) {
        char why[TIDE_MSG_LEN];
        st = tide_gpu_measure(bytes, together ? barrier_agree : NULL, ctx, &r, why, sizeof why);
        if (st)
            tide_fail(ctx, st, "%s: %s", fn, why);
        if (together)
            st = tide_agree(ctx, st);
    }
    if (!st)
        *rates = r;
    return st;
}

int tide_measure_rates(tide_context *ctx, size_t bytes, tide_rates *rates)
{
    return measure_rates(ctx, bytes, 0, rates, "tide_measure_rates");
}

int tide_measure_rates_together(tide_context *ctx, size_t bytes, tide_rates *rates)
{
    if (!ctx)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_measure_rates_together: ctx is NULL");
    int st = rates ? TIDE_SUCCESS
                   : tide_fail(ctx, TIDE_ERR_ARGUMENT, "tide_measure_rates_together: rates is "
                               "NULL");
    st = tide_agree(ctx, st);
    return st ? st : measure_rates(ctx, bytes, 1, rates, "tide_measure_rates_together");
}

/* Buffers and one all-to-all of tide_measure_exchange: in host memory from tide_host_alloc
 * (pinned on a CUDA context, like the buffers plans exchange from), or on the GPU. */
typedef struct {
    tide_context *ctx;
    tide_exchange how;
    size_t block;
    char *a, *b;
    void *nccl, *stream;
    MPI_Request *req;
    char **peer_b;  /* DIRECT: each peer's b mapped here (CUDA IPC), then the starts of
                     * those mappings (where b lies in its allocation) */
    int *peer_dev;  /* DIRECT: the GPU holding each peer's b */
} xtest;

/* DIRECT's element: the stores copy complex floats, as a c2c float FFT's exchange does. */
enum { XTEST_ELEM = 8 };

static int on_host(const xtest *x)
{
    return x->how == TIDE_EXCHANGE_A2AV || x->how == TIDE_EXCHANGE_P2P;
}

static int xtest_once(const xtest *x)
{
    int P = x->ctx->nranks, me = x->ctx->rank;
    if (x->how == TIDE_EXCHANGE_NCCL) {
        int st = tide_transport_group_start();
        for (int q = 0; q < P && !st; q++) {
            if (q == me)
                continue;
            st = tide_transport_recv(x->nccl, x->b + (size_t)q * x->block, x->block, q,
                                     x->stream);
            if (!st)
                st = tide_transport_send(x->nccl, x->a + (size_t)q * x->block, x->block, q,
                                         x->stream);
        }
        int end = tide_transport_group_end();
        st = st ? st : end;
        return st ? st : tide_gpu_sync(x->stream);
    }
    if (x->how == TIDE_EXCHANGE_DIRECT) { /* the exchange's own store kernel, every peer */
        long long n = (long long)(x->block / XTEST_ELEM);
        tide_box run = {{0, 0, 0}, {1, 1, (int)n}, {0, 1, 2}};
        int st = 0;
        for (int q = 0; q < P && !st; q++)
            if (q != me)
                st = tide_transport_store(XTEST_ELEM, 1, &run, x->a + (size_t)q * x->block,
                                          &run, x->peer_b[q] + (size_t)me * x->block, &run,
                                          x->peer_dev[q], x->stream);
        int synced = tide_gpu_sync(x->stream);
        return st ? st : synced;
    }
    if (x->how == TIDE_EXCHANGE_P2P) { /* every peer at once, as the streamed exchange does */
        int n = 0, st = 0;
        for (int q = 0; q < P && !st; q++)
            if (q != me)
                st = MPI_Irecv(x->b + (size_t)q * x->block, (int)x->block, MPI_BYTE, q, 7312,
                               x->ctx->comm, &x->req[n++]);
        for (int q = 0; q < P && !st; q++)
            if (q != me)
                st = MPI_Isend(x->a + (size_t)q * x->block, (int)x->block, MPI_BYTE, q, 7312,
                               x->ctx->comm, &x->req[n++]);
        int w = MPI_Waitall(n, x->req, MPI_STATUSES_IGNORE);
        return st || w ? TIDE_ERR_MPI : 0;
    }
    return MPI_Alltoall(x->a, (int)x->block, MPI_BYTE, x->b, (int)x->block, MPI_BYTE,
                        x->ctx->comm) ? TIDE_ERR_MPI : 0;
}

static void xtest_free(xtest *x)
{
    free(x->req);
    for (int q = 0; x->peer_b && q < x->ctx->nranks; q++)
        tide_transport_ipc_mem_close(x->peer_b[x->ctx->nranks + q]);
    free(x->peer_b);
    free(x->peer_dev);
    if (on_host(x)) {
        tide_host_free(x->ctx, x->a);
        tide_host_free(x->ctx, x->b);
        return;
    }
    tide_gpu_free(x->a);
    tide_gpu_free(x->b);
    if (x->stream)
        tide_gpu_stream_destroy(x->stream);
}

/* Local: the buffers (and for NCCL the stream) of x; 0 or a code recorded on ctx. */
static int xtest_alloc(xtest *x)
{
    size_t bytes = x->block * (size_t)x->ctx->nranks;
    x->req = malloc(2 * (size_t)x->ctx->nranks * sizeof *x->req);
    if (!x->req)
        return tide_fail(x->ctx, TIDE_ERR_NOMEM, "tide_measure_exchange: out of memory");
    if (on_host(x)) {
        void *a = NULL, *b = NULL;
        int st = tide_host_alloc(x->ctx, bytes, &a);
        if (!st)
            st = tide_host_alloc(x->ctx, bytes, &b);
        x->a = a, x->b = b;
        if (st)
            return st;
        memset(x->a, 0x5a, bytes); /* never on zero pages */
        memset(x->b, 0xa5, bytes);
        return TIDE_SUCCESS;
    }
    void *a = NULL, *b = NULL;
    int st = tide_gpu_malloc(bytes + 1, &a);
    if (!st)
        st = tide_gpu_malloc(bytes + 1, &b);
    x->a = a, x->b = b;
    if (st)
        return tide_fail(x->ctx, st, "tide_measure_exchange: cannot allocate 2 x %zu bytes on "
                         "the device", bytes);
    int stream = x->how == TIDE_EXCHANGE_NCCL || x->how == TIDE_EXCHANGE_DIRECT;
    if (stream && tide_gpu_stream_create(&x->stream, 0))
        return tide_fail(x->ctx, TIDE_ERR_BACKEND, "tide_measure_exchange: cannot create a "
                         "stream: %s", tide_gpu_last_error());
    return TIDE_SUCCESS;
}

/* Collective, DIRECT: every peer's b mapped here; 0 or a code agreed. */
static int xtest_map(xtest *x)
{
    enum { H = TIDE_TRANSPORT_IPC_BYTES };
    int P = x->ctx->nranks;
    unsigned char mine[H + sizeof(size_t)], *all = malloc((size_t)P * sizeof mine);
    x->peer_b = calloc(2 * (size_t)P, sizeof *x->peer_b);
    x->peer_dev = calloc((size_t)P, sizeof *x->peer_dev);
    size_t off = 0;
    int st = all && x->peer_b && x->peer_dev ? tide_transport_ipc_mem_handle(x->b, mine, &off)
                                             : TIDE_ERR_NOMEM;
    memcpy(mine + H, &off, sizeof off);
    if (st)
        tide_fail(x->ctx, st, "tide_measure_exchange: cannot share the device buffer: %s",
                  tide_gpu_last_error());
    st = tide_agree(x->ctx, st);
    if (!st && MPI_Allgather(mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE,
                             x->ctx->comm))
        st = tide_fail(x->ctx, TIDE_ERR_MPI, "tide_measure_exchange: MPI failed");
    for (int q = 0; q < P && !st; q++) {
        void *base = NULL;
        if (q == x->ctx->rank)
            continue;
        st = tide_transport_ipc_mem_open(all + (size_t)q * sizeof mine, &base,
                                         &x->peer_dev[q]);
        memcpy(&off, all + (size_t)q * sizeof mine + H, sizeof off);
        x->peer_b[P + q] = base;
        x->peer_b[q] = st ? NULL : (char *)base + off;
        if (st)
            tide_fail(x->ctx, st, "tide_measure_exchange: cannot map rank %d's device buffer: "
                      "%s", q, tide_gpu_last_error());
    }
    free(all);
    return tide_agree(x->ctx, st);
}

int tide_measure_exchange(tide_context *ctx, tide_exchange how, size_t bytes, double *gbps)
{
    if (!ctx)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_measure_exchange: ctx is NULL");
    int P = ctx->nranks;
    xtest x = {ctx, how == TIDE_EXCHANGE_AUTO ? TIDE_EXCHANGE_A2AV : how,
               (bytes ? bytes : (size_t)64 << 20) / (size_t)P, NULL, NULL, NULL, NULL, NULL, NULL,
               NULL};
    /* every rank's bytes, largest and smallest (as the largest complement) */
    unsigned long long b[2] = {bytes, ~(unsigned long long)bytes}, most[2];
    int st = MPI_Allreduce(b, most, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, ctx->comm)
                 ? tide_fail(ctx, TIDE_ERR_MPI, "tide_measure_exchange: MPI failed")
                 : TIDE_SUCCESS;
    if (!st && !gbps)
        st = tide_fail(ctx, TIDE_ERR_ARGUMENT, "tide_measure_exchange: gbps is NULL");
    if (!st && (x.how < TIDE_EXCHANGE_A2AV || x.how > TIDE_EXCHANGE_DIRECT))
        st = tide_fail(ctx, TIDE_ERR_ARGUMENT, "tide_measure_exchange: no exchange %d",
                       (int)how);
    if (!st && x.how == TIDE_EXCHANGE_CUDA_MPI && !ctx->cuda_aware_mpi)
        st = tide_fail(ctx, TIDE_ERR_UNSUPPORTED, "tide_measure_exchange: the MPI library "
                       "is not CUDA-aware");
    if (!st && !on_host(&x) && ctx->backend != TIDE_BACKEND_CUDA)
        st = tide_fail(ctx, TIDE_ERR_UNSUPPORTED, "tide_measure_exchange: %s needs a GPU",
                       tide_exchange_name(x.how));
    if (!st && x.how == TIDE_EXCHANGE_DIRECT && !ctx->gpus_reach)
        st = tide_fail(ctx, TIDE_ERR_UNSUPPORTED, "tide_measure_exchange: direct stores need "
                       "every rank on one node, each GPU reaching every other");
    x.block = x.how == TIDE_EXCHANGE_DIRECT ? x.block / XTEST_ELEM * XTEST_ELEM : x.block;
    if (!st && most[0] != ~most[1])
        st = tide_fail(ctx, TIDE_ERR_MISMATCH, "tide_measure_exchange: bytes differ between "
                       "ranks (%llu to %llu)", ~most[1], most[0]);
    if (!st && x.block > (size_t)1 << 30)
        st = tide_fail(ctx, TIDE_ERR_TOO_LARGE, "tide_measure_exchange: %zu bytes per peer "
                       "exceed MPI's int counts", x.block);
    st = tide_agree(ctx, st);
    if (!st && x.how == TIDE_EXCHANGE_NCCL && P > 1)
        st = tide_context_nccl(ctx, 0, &x.nccl); /* collective, agreed */
    if (!st)
        st = tide_agree(ctx, xtest_alloc(&x));
    if (!st && x.how == TIDE_EXCHANGE_DIRECT)
        st = xtest_map(&x);
    double t[5];
    /* a warm-up (connections, NCCL channels), then five barrier-aligned repetitions */
    for (int i = -1; i < 5 && !st; i++) {
        double t0 = 0, dt = 0;
        int rc = MPI_Barrier(ctx->comm) ? TIDE_ERR_MPI : 0;
        if (!rc) {
            t0 = MPI_Wtime();
            rc = xtest_once(&x);
            dt = MPI_Wtime() - t0;
        }
        if (rc)
            tide_fail(ctx, rc, "tide_measure_exchange: the %s exchange failed",
                      tide_exchange_name(x.how));
        st = tide_agree(ctx, rc);
        if (!st && i >= 0 && MPI_Allreduce(&dt, &t[i], 1, MPI_DOUBLE, MPI_MAX, ctx->comm))
            st = tide_fail(ctx, TIDE_ERR_MPI, "tide_measure_exchange: MPI failed");
    }
    xtest_free(&x);
    if (st)
        return st;
    qsort(t, 5, sizeof t[0], cmp_double);
    *gbps = P > 1 ? (double)x.block * (P - 1) / 1e9 / t[2] : 0;
    return TIDE_SUCCESS;
}
