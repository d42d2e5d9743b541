/*
 * gemm_dist.c: the distributed matrix multiply, SUMMA (see gemm_dist.h). The k dimension is
 * cut where A's column blocks (over the process columns) or B's row blocks (over the process
 * rows) change owner, and at most `panel` wide in between, so each panel has one owner of
 * each kind. For each panel: the owner column packs its columns of op(A) (its block's rows)
 * and broadcasts them along its process row, the owner row packs its rows of op(B) and
 * broadcasts them along its process column, and every rank multiplies the two into its block
 * of C (beta at the first panel, then 1). A transposed operand's block is stored transposed:
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
    void *pa, *pb;              /* a panel of A (rows x panel), of B (panel x cols) */
};

void tide_gemm_block(long long n, int p, int i, long long *lo, long long *hi)
{
    *lo = n * i / p;
    *hi = n * (i + 1) / p;
}

static long long span(const long long r[2]) { return r[1] - r[0]; }

/* The part of 0..n over p that holds index x, and where that part ends. */
static int owner(long long n, int p, long long x, long long *end)
{
    long long lo, hi;
    for (int i = 0; i < p; i++) {
        tide_gemm_block(n, p, i, &lo, &hi);
        if (x < hi) {
            *end = hi;
            return i;
        }
    }
    *end = n;
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
    free(s->pa);
    free(s->pb);
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
    tide_gemm_block(d->m, d->grid[0], d->me[0], &s->rows[0], &s->rows[1]);
    tide_gemm_block(d->n, d->grid[1], d->me[1], &s->cols[0], &s->cols[1]);
    tide_gemm_block(d->k, d->grid[1], d->me[1], &s->ka[0], &s->ka[1]);
    tide_gemm_block(d->k, d->grid[0], d->me[0], &s->kb[0], &s->kb[1]);
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
    s->pa = malloc(s->elem * (size_t)(span(s->rows) * s->d.panel) + 1);
    s->pb = malloc(s->elem * (size_t)(span(s->cols) * s->d.panel) + 1);
    if (!s->pa || !s->pb) {
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

int tide_gemm_dist_execute(tide_gemm_dist *s, double alpha, const void *a, const void *b,
                           double beta, void *c, char *err, size_t len)
{
    const tide_gemm_dist_desc *d = &s->d;
    const tide_env *e = d->env;
    MPI_Datatype type = d->dbl ? MPI_DOUBLE : MPI_FLOAT;
    long long m = span(s->rows), n = span(s->cols), k0 = 0;
    int first = 1;
    do { /* k = 0 still runs once: C = beta C */
        long long ea, eb;
        int pc = owner(d->k, d->grid[1], k0, &ea), pr = owner(d->k, d->grid[0], k0, &eb);
        long long k1 = ea < eb ? ea : eb;
        k1 = k1 < k0 + d->panel ? k1 : k0 + d->panel;
        long long w = k1 - k0;
        long long ra = k0 - s->ka[0], rb = k0 - s->kb[0];
        if (d->me[1] == pc && !d->transa) /* op(A)'s columns k0..k1: m x w */
            pack(a, d->lda, m, 0, ra, w, s->pa, s->elem);
        else if (d->me[1] == pc) /* A^T stored: its rows k0..k1 of each column, w x m */
            pack(a, d->lda, w, ra, 0, m, s->pa, s->elem);
        if (d->me[0] == pr && !d->transb) /* op(B)'s rows k0..k1 of each column: w x n */
            pack(b, d->ldb, w, rb, 0, n, s->pb, s->elem);
        else if (d->me[0] == pr) /* B^T stored: its columns k0..k1, n x w */
            pack(b, d->ldb, n, 0, rb, w, s->pb, s->elem);
        if (MPI_Bcast(s->pa, (int)(m * w), type, pc, s->row) != MPI_SUCCESS ||
            MPI_Bcast(s->pb, (int)(w * n), type, pr, s->col) != MPI_SUCCESS)
            return snprintf(err, len, "a panel broadcast failed"), TIDE_ERR_MPI;
        long long la = d->transa ? w : m, lb = d->transb ? n : w;
        tide_gemm_desc g = {d->dbl, d->transa, d->transb, m, n, w, la > 1 ? la : 1,
                            lb > 1 ? lb : 1, d->ldc};
        int st = e->be->gemm(e, d->blas, &g, alpha, s->pa, s->pb, first ? beta : 1.0, c);
        if (st)
            return snprintf(err, len, "the local multiply failed"), st;
        first = 0;
        k0 = k1;
    } while (k0 < d->k);
    return TIDE_SUCCESS;
}
