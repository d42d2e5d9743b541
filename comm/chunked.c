/* chunked.c: the exchanges of streamed passes (see chunked.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "comm/chunked.h"
#include "comm/region.h"
#include "comm/reshape.h"
#include "comm/transport.h"

enum { TAG = 7311 };

struct tide_chunked {
    MPI_Comm comm;
    int P, me, d, step, nchunks;
    size_t elem;
    tide_box *A, *B;
    size_t *soff;          /* [q]: element offset of q's send block in the staging; [P]: all */
    long long most;
    int *pieces;           /* [q]: messages of the block this rank sends q, [P + p]: receives */
    int nreq;
    MPI_Request *req;      /* scratch of tide_chunked_mpi */
    MPI_Datatype *types;
    MPI_Datatype etype;
};

void tide_chunked_destroy(tide_chunked *x)
{
    if (!x)
        return;
    if (x->etype != MPI_DATATYPE_NULL)
        MPI_Type_free(&x->etype);
    free(x->A);
    free(x->soff);
    free(x->pieces);
    free(x->req);
    free(x->types);
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

/* Planes of region r along d per MPI message, and the messages it takes (0: a plane alone is
 * over the limit). */
static int thickness(const tide_chunked *x, const tide_box *r, int *messages)
{
    long long n = tide_box_count(r), ext = r->hi[x->d] - r->lo[x->d];
    size_t plane = ext ? (size_t)(n / ext) * x->elem : 0;
    if (!n) {
        *messages = 0;
        return 1;
    }
    if (plane > TIDE_CHUNKED_MAX_MESSAGE) {
        *messages = 0;
        return 0;
    }
    int t = (int)(TIDE_CHUNKED_MAX_MESSAGE / plane < (size_t)ext ? TIDE_CHUNKED_MAX_MESSAGE / plane
                                                                  : (size_t)ext);
    *messages = (int)((ext + t - 1) / t);
    return t;
}

/* Chunk counts, send offsets, message counts and the scratch of the MPI exchange. */
static int measure(tide_chunked *x, char *err, size_t len)
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
        long long n = tide_chunked_block(x, q, &b, &off);
        x->soff[q + 1] = x->soff[q] + (size_t)n;
        for (int side = 0; side < 2; side++) {
            if (q == x->me)
                continue;
            int *m = &x->pieces[side * x->P + q];
            whole(x, side ? q : x->me, side ? x->me : q, &b);
            if (!thickness(x, &b, m))
                return snprintf(err, len, "a plane of the block exchanged with rank %d is over "
                                "the %zu-byte MPI message limit", q, TIDE_CHUNKED_MAX_MESSAGE),
                       TIDE_ERR_TOO_LARGE;
            x->nreq += *m;
        }
    }
    x->req = malloc(((size_t)x->nreq + 1) * sizeof *x->req);
    x->types = malloc(((size_t)x->nreq + 1) * sizeof *x->types);
    if (!x->req || !x->types)
        return snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM;
    if (MPI_Type_contiguous((int)x->elem, MPI_BYTE, &x->etype) || MPI_Type_commit(&x->etype))
        return snprintf(err, len, "cannot make an MPI element type"), TIDE_ERR_MPI;
    return TIDE_SUCCESS;
}

int tide_chunked_create(MPI_Comm comm, const tide_box *A, const tide_box *B, int d, int step,
                        size_t elem, tide_chunked **out, char *err, size_t len)
{
    *out = NULL;
    tide_chunked *x = calloc(1, sizeof *x);
    int P;
    if (!x)
        return snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM;
    x->etype = MPI_DATATYPE_NULL;
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
    x->pieces = calloc(2 * (size_t)P, sizeof *x->pieces);
    int st = !x->A || !x->soff || !x->pieces ? TIDE_ERR_NOMEM : TIDE_SUCCESS;
    if (st)
        snprintf(err, len, "out of memory");
    if (!st) {
        x->B = x->A + P;
        memcpy(x->A, A, (size_t)P * sizeof *A);
        memcpy(x->B, B, (size_t)P * sizeof *B);
        st = measure(x, err, len);
    }
    if (st) {
        tide_chunked_destroy(x);
        return st;
    }
    *out = x;
    return TIDE_SUCCESS;
}

int tide_chunked_nccl(const tide_chunked *x, int i, const void *chunk, const tide_box *cbox,
                      void *sendbuf, void *recvbuf, void *nccl, void *stream)
{
    size_t soff = 0, roff = 0;
    int st = 0;
    tide_box r;
    for (int q = 0; q < x->P && !st; q++) {
        long long cnt = q == x->me ? 0 : tide_chunked_send(x, i, q, &r);
        if (cnt == 0)
            continue;
        st = tide_transport_pack(x->elem, 1, &r, chunk, cbox, (char *)sendbuf + soff * x->elem,
                                 &r, stream);
        soff += (size_t)cnt;
    }
    if (!st)
        st = tide_transport_group_start();
    if (st)
        return st;
    soff = 0;
    for (int q = 0; q < x->P && !st; q++) {
        if (q == x->me)
            continue;
        long long sc = tide_chunked_send(x, i, q, &r), rc = tide_chunked_recv(x, i, q, &r);
        if (rc > 0)
            st = tide_transport_recv(nccl, (char *)recvbuf + roff * x->elem,
                                     (size_t)rc * x->elem, q, stream);
        if (!st && sc > 0)
            st = tide_transport_send(nccl, (char *)sendbuf + soff * x->elem,
                                     (size_t)sc * x->elem, q, stream);
        soff += (size_t)sc;
        roff += (size_t)rc;
    }
    int end = tide_transport_group_end(); /* ends the group even after a failed call in it */
    return st ? st : end;
}

/* An MPI type for the planes [a, b) along d of region inside an array laid out as box. */
static int piece_type(const tide_chunked *x, const tide_box *box, const tide_box *region, int a,
                      int b, MPI_Datatype *t)
{
    int sizes[3], sub[3], starts[3];
    tide_box r = *region;
    r.lo[x->d] = a;
    r.hi[x->d] = b;
    for (int k = 0; k < 3; k++) { /* slowest first, as MPI_ORDER_C wants */
        int dim = box->order[k];
        sizes[k] = box->hi[dim] - box->lo[dim];
        sub[k] = r.hi[dim] - r.lo[dim];
        starts[k] = r.lo[dim] - box->lo[dim];
    }
    if (MPI_Type_create_subarray(3, sizes, sub, starts, MPI_ORDER_C, x->etype, t))
        return TIDE_ERR_MPI;
    return MPI_Type_commit(t) ? TIDE_ERR_MPI : TIDE_SUCCESS;
}

/* Posts the messages of region (inside an array laid out as box at base) to or from peer,
 * planes along d at a time (tide_comm_post: a failed one leaves a stand-in); *n counts the
 * requests and types made (MPI_DATATYPE_NULL for none). */
static int post(tide_chunked *x, int recv, int peer, void *base, const tide_box *box,
                const tide_box *region, int *n)
{
    int m, t = thickness(x, region, &m), st = TIDE_SUCCESS;
    for (int a = region->lo[x->d]; a < region->hi[x->d]; a += t) {
        int b = a + t < region->hi[x->d] ? a + t : region->hi[x->d];
        MPI_Datatype *type = &x->types[*n];
        if (piece_type(x, box, region, a, b, type))
            *type = MPI_DATATYPE_NULL;
        if (tide_comm_post(!recv, base, 1, *type, peer, TAG, x->comm, &x->req[*n]))
            st = TIDE_ERR_MPI;
        if (x->req[*n] != MPI_REQUEST_NULL || *type != MPI_DATATYPE_NULL)
            (*n)++;
    }
    return st;
}

int tide_chunked_mpi(const tide_chunked *cx, const void *staging, void *dst, const tide_box *dl,
                     char *err, size_t len)
{
    tide_chunked *x = (tide_chunked *)cx; /* only the request scratch changes */
    int n = 0, st = TIDE_SUCCESS;
    for (int p = 0; p < x->P; p++) {
        tide_box r;
        if (p != x->me && whole(x, p, x->me, &r) > 0 && post(x, 1, p, dst, dl, &r, &n))
            st = TIDE_ERR_MPI;
    }
    for (int q = 0; q < x->P; q++) {
        tide_box r;
        size_t off;
        if (tide_chunked_block(x, q, &r, &off) > 0 &&
            post(x, 0, q, (char *)staging + off * x->elem, &r, &r, &n))
            st = TIDE_ERR_MPI;
    }
    if (MPI_Waitall(n, x->req, MPI_STATUSES_IGNORE))
        st = TIDE_ERR_MPI;
    for (int k = 0; k < n; k++)
        if (x->types[k] != MPI_DATATYPE_NULL)
            MPI_Type_free(&x->types[k]);
    if (st)
        snprintf(err, len, "the MPI exchange of a streamed pass failed");
    return st;
}
