/* chunked.c: the exchanges of streamed passes (see chunked.h), moved by the exchange
 * (comm/exchange.h): one per chunk over NCCL, one after the pass over MPI. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "comm/chunked.h"
#include "comm/exchange.h"
#include "comm/region.h"

struct tide_chunked {
    MPI_Comm comm;
    int P, me, d, step, nchunks;
    size_t elem;
    tide_box *A, *B;
    size_t *soff;          /* [q]: element offset of q's send block in the staging; [P]: all */
    long long most;
    tide_xchg **chunk;     /* per chunk: its parts over NCCL */
    tide_xchg *pass;       /* the whole pass's blocks over MPI */
};

void tide_chunked_destroy(tide_chunked *x)
{
    if (!x)
        return;
    for (int i = 0; x->chunk && i < x->nchunks; i++)
        tide_xchg_destroy(x->chunk[i]);
    tide_xchg_destroy(x->pass);
    free(x->chunk);
    free(x->A);
    free(x->soff);
    free(x);
}

void tide_chunk_range(const tide_box *box, int d, int step, int i, int *a, int *b)
{
    long long lo = box->lo[d] + (long long)i * step, hi = lo + step;
    *a = (int)(lo < box->hi[d] ? lo : box->hi[d]);
    *b = (int)(hi < box->hi[d] ? hi : box->hi[d]);
}

int tide_chunk_count(const tide_box *boxes, int n, int d, int step)
{
    int most = 0;
    for (int r = 0; r < n; r++) {
        int c = (boxes[r].hi[d] - boxes[r].lo[d] + step - 1) / step;
        most = c > most ? c : most;
    }
    return most;
}

/* Of rank r's points [a, b) along d, those in B[q], with B[q]'s order. */
static long long part(const tide_chunked *x, int r, int a, int b, int q, tide_box *out)
{
    tide_box c = x->A[r];
    c.lo[x->d] = a;
    c.hi[x->d] = b;
    long long n = tide_box_intersect(&x->B[q], &c, out);
    return n;
}

long long tide_chunked_send(const tide_chunked *x, int i, int q, tide_box *out)
{
    int a, b;
    tide_chunk_range(&x->A[x->me], x->d, x->step, i, &a, &b);
    return part(x, x->me, a, b, q, out);
}

long long tide_chunked_recv(const tide_chunked *x, int i, int p, tide_box *out)
{
    int a, b;
    tide_chunk_range(&x->A[p], x->d, x->step, i, &a, &b);
    return part(x, p, a, b, x->me, out);
}

/* The whole pass's points of rank r in B[q], with A[r]'s order. */
static long long whole(const tide_chunked *x, int r, int q, tide_box *out)
{
    return tide_box_intersect(&x->A[r], &x->B[q], out);
}

long long tide_chunked_block(const tide_chunked *x, int q, tide_box *block, size_t *offset)
{
    *offset = x->soff[q];
    long long n = whole(x, x->me, q, block);
    return q == x->me ? 0 : n;
}

size_t tide_chunked_staging(const tide_chunked *x) { return x->soff[x->P]; }

long long tide_chunked_most(const tide_chunked *x) { return x->most; }

/* Chunk counts, send offsets and the most one chunk moves. */
static void measure(tide_chunked *x)
{
    x->nchunks = tide_chunk_count(x->A, x->P, x->d, x->step);
    for (int i = 0; i < x->nchunks; i++) {
        long long s = 0, r = 0;
        tide_box b;
        for (int q = 0; q < x->P; q++)
            if (q != x->me) {
                s += tide_chunked_send(x, i, q, &b);
                r += tide_chunked_recv(x, i, q, &b);
            }
        x->most = s > x->most ? s : x->most;
        x->most = r > x->most ? r : x->most;
    }
    for (int q = 0; q < x->P; q++) {
        tide_box b;
        size_t off;
        x->soff[q + 1] = x->soff[q] + (size_t)tide_chunked_block(x, q, &b, &off);
    }
}

/* The exchange of chunk i (i >= 0: its parts, each in the receiver's order, over NCCL on the
 * device) or of the whole pass (i < 0: every block, in A's order, over MPI in host memory,
 * received straight into the destination with subarray types). Local. */
static int make_exchange(const tide_chunked *x, int i, tide_xchg **out, char *err, size_t len)
{
    tide_xchg_list *l = tide_xchg_list_new();
    int st = l ? TIDE_SUCCESS : TIDE_ERR_NOMEM;
    for (int q = 0; q < x->P && !st; q++) {
        tide_box s, r;
        long long ns = q == x->me ? 0 : i >= 0 ? tide_chunked_send(x, i, q, &s)
                                               : tide_box_intersect(&x->A[x->me], &x->B[q], &s);
        long long nr = q == x->me ? 0 : i >= 0 ? tide_chunked_recv(x, i, q, &r)
                                               : tide_box_intersect(&x->A[q], &x->B[x->me], &r);
        if (ns > 0)
            st = tide_xchg_add(l, TIDE_XCHG_SEND, q, &s, s.order);
        if (!st && nr > 0)
            st = tide_xchg_add(l, TIDE_XCHG_RECV, q, &r, r.order);
    }
    if (st) {
        tide_xchg_list_free(l);
        return snprintf(err, len, "out of memory"), st;
    }
    tide_xchg_desc d = {.comm = x->comm, .elem = x->elem, .fields = 1,
                        .how = i >= 0 ? TIDE_EXCHANGE_NCCL : TIDE_EXCHANGE_P2P,
                        .device = i >= 0, .threads = 1, .typed = i < 0};
    return tide_xchg_create(&d, &l, out, err, len);
}

int tide_chunked_create(MPI_Comm comm, const tide_box *A, const tide_box *B, int d, int step,
                        size_t elem, tide_chunked **out, char *err, size_t len)
{
    *out = NULL;
    tide_chunked *x = calloc(1, sizeof *x);
    int P;
    if (!x)
        return snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM;
    if (MPI_Comm_size(comm, &P) || MPI_Comm_rank(comm, &x->me)) {
        tide_chunked_destroy(x);
        return snprintf(err, len, "MPI_Comm_size failed"), TIDE_ERR_MPI;
    }
    x->comm = comm;
    x->P = P;
    x->d = d;
    x->step = step;
    x->elem = elem;
    x->A = malloc(2 * (size_t)P * sizeof *x->A);
    x->soff = calloc((size_t)P + 1, sizeof *x->soff);
    int st = !x->A || !x->soff ? TIDE_ERR_NOMEM : TIDE_SUCCESS;
    if (st)
        snprintf(err, len, "out of memory");
    if (!st) {
        x->B = x->A + P;
        memcpy(x->A, A, (size_t)P * sizeof *A);
        memcpy(x->B, B, (size_t)P * sizeof *B);
        measure(x);
        x->chunk = calloc((size_t)x->nchunks + 1, sizeof *x->chunk);
        st = x->chunk ? TIDE_SUCCESS : TIDE_ERR_NOMEM;
        if (st)
            snprintf(err, len, "out of memory");
    }
    for (int i = -1; i < x->nchunks && !st; i++)
        st = make_exchange(x, i, i < 0 ? &x->pass : &x->chunk[i], err, len);
    if (!st) {
    }
    if (st) {
        tide_chunked_destroy(x);
        return st;
    }
    *out = x;
    return TIDE_SUCCESS;
}

int tide_chunked_nccl(const tide_chunked *x, int i, const void *chunk, const tide_box *cbox,
                      void *sendbuf, void *recvbuf, void *nccl, void *stream, int status)
{
    tide_xchg_io io = {.src = chunk, .src_box = cbox, .send = sendbuf, .recv = recvbuf,
                       .nccl = nccl, .stream = stream};
    int st = tide_xchg_start(x->chunk[i], &io, status);
    return tide_xchg_finish(x->chunk[i], &io, st);
}

int tide_chunked_mpi(const tide_chunked *x, const void *staging, void *dst, const tide_box *dl,
                     char *err, size_t len)
{
    const tide_parts to = {1, {*dl}, {dst}};
    tide_xchg_io io = {.dst = &to, .send = (void *)staging};
    int st = tide_xchg_start(x->pass, &io, TIDE_SUCCESS);
    st = tide_xchg_finish(x->pass, &io, st);
    if (st)
        snprintf(err, len, "the MPI exchange of a streamed pass failed");
    return st;
}
