/*
 * gemm_dist.h: the distributed matrix multiply (private): SUMMA over a 2D process grid, a
 * program of ops (plan/program.h) whose panel moves are exchanges (comm/exchange.h) and whose
 * updates are the plan core's multiply op (the backend's gemm entry), or the caller's update
 * on threads of its own (the out-of-card multiply of host panels through the GPU).
 */
#ifndef TIDE_GEMM_DIST_H
#define TIDE_GEMM_DIST_H

#include "backend/backend.h"

/* Block i of n over p parts, balanced: [i n / p, (i + 1) n / p). */
void tide_gemm_block(long long n, int p, int i, long long *lo, long long *hi);

/* The p + 1 boundaries of n over p parts: the caller's (given, not NULL) or balanced. */
void tide_gemm_splits(const long long *given, long long n, int p, long long *out);

/* The process-grid dimension boundaries x (tide.h's blocks[x]) are dealt over: 0 (process
 * rows) for m and B's rows of k, 1 (process columns) for n and A's columns of k. */
static inline int tide_gemm_split_dim(int x) { return x == 0 || x == 3 ? 0 : 1; }

/* A local update of one panel that runs on threads of its own, C = alpha op(A) op(B) + beta C
 * on the dense host panels a and b (g: the panel's multiply; first, last: whether it is the
 * multiply's first and last). begin may return before it is done (its memory untouched until
 * end returns; C complete in host memory only after the last update's end); end waits for it.
 * Each returns 0 or a code with the reason in err. */
typedef struct {
    int (*begin)(void *user, const tide_gemm_desc *g, int first, int last, tide_scalar alpha,
                 const void *a, const void *b, tide_scalar beta, void *c, char *err,
                 size_t len);
    int (*end)(void *user, char *err, size_t len);
    void *user;
} tide_gemm_update;

typedef struct {
    int dbl, cplx;              /* the elements (tide_gemm_desc) */
    int transa, transb;         /* op(A) = A^T or A^H, op(B) = B^T or B^H: their blocks stored
                                 * transposed */
    long long m, n, k;          /* the global column-major multiply */
    int grid[2];                /* process rows and columns of the column-major multiply */
    /* block boundaries (tide_gemm_splits): of C's and A's rows (m, grid[0] + 1 of them), of
     * C's and B's columns (n, grid[1] + 1), of k for A's columns (grid[1] + 1) and for B's
     * rows (grid[0] + 1); the caller keeps them while the multiply lives */
    const long long *split[4];
    int me[2];                  /* this rank's row and column in that grid */
    long long lda, ldb, ldc;    /* of this rank's blocks (column major) */
    int panel;                  /* most columns of A moved at once */
    const tide_env *env;        /* the plan's; panels in pinned memory where its backend has it */
    int device;                 /* the blocks are in env's device memory (the updates run on
                                 * env's stream) */
    void *blas;
    tide_gemm_update update;    /* begin NULL: the plan core's multiply op (env's gemm entry
                                 * on blas) on this thread */
    void *nccl;                 /* device blocks, every rank a GPU of its own: the context's
                                 * tide_nccl, the panels then sent GPU to GPU; NULL: by MPI, */
    int cuda_mpi;               /* ... on device pointers (the MPI library takes them), else
                                 * through pinned host memory */
} tide_gemm_dist_desc;

typedef struct tide_gemm_dist tide_gemm_dist;

/* Collective over env->ctx->comm: the row and column communicators and the panel buffers.
 * Returns 0 or a code with the reason in err (not agreed: the caller agrees). */
int tide_gemm_dist_create(const tide_gemm_dist_desc *d, tide_gemm_dist **out, char *err,
                          size_t len);
void tide_gemm_dist_destroy(tide_gemm_dist *s);

/* Memory the panels hold: in host memory (pinned where the backend has it; none when device
 * blocks move over NCCL or by MPI on device pointers), or with on_device in device memory
 * (device blocks). */
size_t tide_gemm_dist_panel_bytes(const tide_gemm_dist *s, int on_device);

/* The local update of this rank's widest panel (k its width; 0 when k = 0), and how many
 * panels there are: what an update (desc's) must be able to run. */
tide_gemm_desc tide_gemm_dist_local(const tide_gemm_dist *s, int *panels);

/* Collective: C = alpha op(A) op(B) + beta C on this rank's blocks a, b, c (host memory, or
 * device memory with desc's device), complete on return. For
 * each panel of k, the rank column owning op(A)'s columns sends them to the other ranks of its
 * process row, the rank row owning op(B)'s rows to the other ranks of its column, and every
 * rank adds the product of the two panels to its block of C. Returns 0 or a code with the
 * reason in err. */
int tide_gemm_dist_execute(tide_gemm_dist *s, tide_scalar alpha, const void *a, const void *b,
                           tide_scalar beta, void *c, char *err, size_t len);

#endif
