/*
 * gemm_dist.c: the distributed matrix multiply, SUMMA (see gemm_dist.h). The k dimension is
 * cut where A's column blocks (over the process columns) or B's row blocks (over the process
 * rows) change owner, and at most `panel` wide in between, so each panel has one owner of
 * each kind. For each panel: the owner column packs its columns of op(A) (its block's rows)
 * and broadcasts them along its process row, the owner row packs its rows of op(B) and
 * broadcasts them along its process column, and every rank multiplies the two into its block
 * of C (beta at the first panel, then 1), the next panel's broadcasts under way meanwhile
 * (two buffer pairs, MPI_Ibcast). A transposed operand's block is stored transposed:
 * its panel is packed as stored (rows of A^T's storage, columns of B^T's) and the local
 * multiply reads it transposed. Every rank takes part in every broadcast, empty blocks
 * included.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "gemm_dist.h"

struct tide_gemm_dist {
    tide_gemm_dist_desc d;
    size_t elem;
    long long rows[2], cols[2]; /* this rank's rows of A and C, and columns of B and C */
    long long ka[2], kb[2];     /* its columns of A (of k), and rows of B (of k) */
    MPI_Comm row, col;          /* its process row (ranked by column), and column */
    void *pa[2], *pb[2];        /* two panels of op(A) (rows x panel), of op(B) (panel x cols) */
};

void tide_gemm_block(long long n, int p, int i, long long *lo, long long *hi)
{
    *lo = n * i / p;
    *hi = n * (i + 1) / p;
}

void tide_gemm_splits(const long long *given, long long n, int p, long long *out)
{
    for (int i = 0; i <= p; i++)
        out[i] = given ? given[i] : n * i / p;
}

static long long span(const long long r[2]) { return r[1] - r[0]; }

/* The part of the p parts with boundaries split that holds index x, and where it ends. */
static int owner(const long long *split, int p, long long x, long long *end)
{
    for (int i = 0; i < p; i++)
        if (x < split[i + 1]) {
            *end = split[i + 1];
            return i;
        }
    *end = split[p];
    return p - 1;
}

void tide_gemm_dist_destroy(tide_gemm_dist *s)
{
    if (!s)
        return;
    if (s->row != MPI_COMM_NULL)
        MPI_Comm_free(&s->row);
    if (s->col != MPI_COMM_NULL)
        MPI_Comm_free(&s->col);
    for (int i = 0; i < 2; i++) {
        free(s->pa[i]);
        free(s->pb[i]);
    }
    free(s);
}

int tide_gemm_dist_create(const tide_gemm_dist_desc *d, tide_gemm_dist **out, char *err,
                          size_t len)
{
    *out = NULL;
    tide_gemm_dist *s = calloc(1, sizeof *s);
    if (!s)
        return snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM;
    s->d = *d;
    s->row = s->col = MPI_COMM_NULL;
    s->elem = d->dbl ? sizeof(double) : sizeof(float);
    long long *mine[4] = {s->rows, s->cols, s->ka, s->kb};
    for (int x = 0; x < 4; x++) {
        int at = d->me[tide_gemm_split_dim(x)];
        mine[x][0] = d->split[x][at], mine[x][1] = d->split[x][at + 1];
    }
    /* a broadcast counts elements in int: panels narrow enough for the widest block */
    long long wide = span(s->rows) > span(s->cols) ? span(s->rows) : span(s->cols);
    long long most = wide ? INT_MAX / wide : INT_MAX;
    s->d.panel = d->panel < most ? d->panel : (int)most;
    MPI_Comm comm = d->env->ctx->comm;
    int st = MPI_Comm_split(comm, d->me[0], d->me[1], &s->row) != MPI_SUCCESS ||
             MPI_Comm_split(comm, d->me[1], d->me[0], &s->col) != MPI_SUCCESS;
    if (st) {
        tide_gemm_dist_destroy(s);
        return snprintf(err, len, "MPI_Comm_split failed"), TIDE_ERR_MPI;
    }
    int ok = 1;
    for (int i = 0; i < 2; i++) {
        s->pa[i] = malloc(s->elem * (size_t)(span(s->rows) * s->d.panel) + 1);
        s->pb[i] = malloc(s->elem * (size_t)(span(s->cols) * s->d.panel) + 1);
        ok = ok && s->pa[i] && s->pb[i];
    }
    if (!ok) {
        tide_gemm_dist_destroy(s);
        return snprintf(err, len, "cannot allocate the panel buffers"), TIDE_ERR_NOMEM;
    }
    *out = s;
    return TIDE_SUCCESS;
}

/* Columns c0..c0 + w of a column-major block of `rows` rows (leading dimension ld) into dst,
 * densely. */
static void pack(const char *src, long long ld, long long rows, long long r0, long long c0,
                 long long w, char *dst, size_t elem)
{
    if (rows == 0 || w == 0)
        return; /* an empty block may come as NULL */
    for (long long j = 0; j < w; j++)
        memcpy(dst + elem * (size_t)(j * rows), src + elem * (size_t)((c0 + j) * ld + r0),
               elem * (size_t)rows);
}

/* Panel i of k: [k0, k1), the process column owning op(A)'s columns there, the process row
 * owning op(B)'s rows. */
typedef struct {
    long long k0, k1;
    int pc, pr;
} panel_t;

/* The panel that starts at k0 (one at k0 = 0 when k = 0: C = beta C still runs). */
static panel_t panel_at(const tide_gemm_dist *s, long long k0)
{
    const tide_gemm_dist_desc *d = &s->d;
    long long ea, eb;
    panel_t p = {k0, k0, owner(d->split[2], d->grid[1], k0, &ea),
                 owner(d->split[3], d->grid[0], k0, &eb)};
    p.k1 = ea < eb ? ea : eb;
    p.k1 = p.k1 < k0 + d->panel ? p.k1 : k0 + d->panel;
    return p;
}

/* The owners pack panel p into buffer pair b and every rank starts its two broadcasts. The
 * pair was last read by the multiply two panels back, complete on return on the CPU backend
 * (a backend that multiplies asynchronously would wait for it first). */
static int start_panel(tide_gemm_dist *s, const panel_t *p, int b, const void *a,
                       const void *bm, MPI_Request req[2])
{
    const tide_gemm_dist_desc *d = &s->d;
    long long m = span(s->rows), n = span(s->cols), w = p->k1 - p->k0;
    long long ra = p->k0 - s->ka[0], rb = p->k0 - s->kb[0];
    if (d->me[1] == p->pc && !d->transa) /* op(A)'s columns k0..k1: m x w */
        pack(a, d->lda, m, 0, ra, w, s->pa[b], s->elem);
    else if (d->me[1] == p->pc) /* A^T stored: its rows k0..k1 of each column, w x m */
        pack(a, d->lda, w, ra, 0, m, s->pa[b], s->elem);
    if (d->me[0] == p->pr && !d->transb) /* op(B)'s rows k0..k1 of each column: w x n */
        pack(bm, d->ldb, w, rb, 0, n, s->pb[b], s->elem);
    else if (d->me[0] == p->pr) /* B^T stored: its columns k0..k1, n x w */
        pack(bm, d->ldb, n, 0, rb, w, s->pb[b], s->elem);
    MPI_Datatype type = d->dbl ? MPI_DOUBLE : MPI_FLOAT;
    return MPI_Ibcast(s->pa[b], (int)(m * w), type, p->pc, s->row, &req[0]) != MPI_SUCCESS ||
           MPI_Ibcast(s->pb[b], (int)(w * n), type, p->pr, s->col, &req[1]) != MPI_SUCCESS;
}

/* Panels go through two buffer pairs: panel i + 1 is packed and its broadcasts started
 * before panel i's multiply, so they travel while it runs (as far as the MPI library
 * progresses them meanwhile). */
int tide_gemm_dist_execute(tide_gemm_dist *s, double alpha, const void *a, const void *b,
                           double beta, void *c, char *err, size_t len)
{
    const tide_gemm_dist_desc *d = &s->d;
    const tide_env *e = d->env;
    long long m = span(s->rows), n = span(s->cols);
    MPI_Request req[2][2] = {{MPI_REQUEST_NULL, MPI_REQUEST_NULL},
                             {MPI_REQUEST_NULL, MPI_REQUEST_NULL}};
    panel_t p = panel_at(s, 0);
    int st = TIDE_SUCCESS, mpi = start_panel(s, &p, 0, a, b, req[0]);
    for (int i = 0; !mpi; i++) {
        int cur = i % 2, last = p.k1 >= d->k;
        panel_t next = last ? p : panel_at(s, p.k1);
        mpi = !last && start_panel(s, &next, 1 - cur, a, b, req[1 - cur]);
        mpi = MPI_Waitall(2, req[cur], MPI_STATUSES_IGNORE) != MPI_SUCCESS || mpi;
        long long w = p.k1 - p.k0, la = d->transa ? w : m, lb = d->transb ? n : w;
        tide_gemm_desc g = {d->dbl, d->transa, d->transb, m, n, w, la > 1 ? la : 1,
                            lb > 1 ? lb : 1, d->ldc};
        /* after a failed multiply the rank still takes part in every broadcast, so that no
         * other rank waits for it */
        if (!mpi && !st &&
            (st = e->be->gemm(e, d->blas, &g, alpha, s->pa[cur], s->pb[cur], i ? 1.0 : beta,
                              c)))
            snprintf(err, len, "the local multiply failed");
        if (last)
            break;
        p = next;
    }
    MPI_Waitall(4, &req[0][0], MPI_STATUSES_IGNORE);
    if (mpi)
        return snprintf(err, len, "a panel broadcast failed"), TIDE_ERR_MPI;
    return st;
}
