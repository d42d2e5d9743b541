/*
 * tide_gemm.h: the matrix multiply: one part of Tide's public C API.
 * A program includes tide.h, which includes this header after the context, the boxes and
 * the status codes it uses.
 */
#ifndef TIDE_GEMM_H
#define TIDE_GEMM_H

#include "tide.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Matrix multiply: C = alpha op(A) op(B) + beta C, with op(A) m x k, op(B) k x n and C m x n,
 * real or complex matrices (float or double) in host or device memory, as the BLAS's xGEMM
 * defines it (SGEMM, DGEMM, CGEMM, ZGEMM): beta = 0 sets C to alpha op(A) op(B) without reading
 * C (NaN in C is ignored); k = 0 scales C by beta; m = 0 or n = 0 does nothing. Complex
 * elements are (real, imaginary) pairs of the precision, interleaved: C99's double complex,
 * C++'s std::complex<double>, Fortran's COMPLEX*16; op may then be the conjugate transpose.
 *
 * With the cuda backend on host matrices the product is computed out of card (Wu's scheme):
 * C is cut into tiles that stay on the device across the whole k loop, and the panels of A and
 * B each tile needs stream in through the pipeline engine while the GPU multiplies, so the
 * matrices may be far larger than the device budget. Tile and panel sizes come from the PCIe
 * and GEMM rates the plan measures (tide_gemm_info says what it chose and its bound). Host
 * matrices in pinned memory (tide_host_alloc) move at full PCIe rate; pageable ones are staged
 * through pinned buffers by CPU threads. The cpu backend calls the CPU BLAS (OpenBLAS).
 *
 * On a context of P > 1 ranks the matrices are distributed in 2D blocks over a process grid of
 * grid[0] x grid[1] ranks (rank r at row r / grid[1], column r % grid[1]); block i of an
 * extent n over p parts is [i n / p, (i + 1) n / p). The rank at (row, col) holds, of C, rows
 * block row of m over grid[0] and columns block col of n over grid[1]; of A, the same rows and
 * columns block col of k over grid[1]; of B, rows block row of k over grid[0] and C's columns
 * (each block stored in the plan's order with the rank's own leading dimension). The product is
 * SUMMA: panels of op(A) broadcast along process rows, panels of op(B) along process columns,
 * each rank's update a local multiply (the CPU BLAS, or on the cuda backend the out-of-card
 * multiply of the broadcast panels through the rank's GPU or GPUs, while the next panels'
 * broadcasts travel); a transposed operand's blocks are those of op(X) stored transposed.
 * Blocks in device memory (TIDE_LOCATION_DEVICE) are multiplied in card by cuBLAS, the panels
 * broadcast GPU to GPU (NCCL, or MPI on device pointers) or through pinned host memory (option
 * exchange).
 * ------------------------------------------------------------------------------------------- */
typedef struct tide_gemm_plan tide_gemm_plan;

/* op(X): X, X^T, or X^H (the conjugate transpose; on real matrices the same as X^T) */
typedef enum { TIDE_NOTRANS = 0, TIDE_TRANS = 1, TIDE_CONJTRANS = 2 } tide_transpose;
typedef enum { TIDE_REAL = 0, TIDE_COMPLEX = 1 } tide_domain;
typedef enum {
    TIDE_COL_MAJOR = 0, /* element (i, j) at i + j * ld (Fortran, the BLAS) */
    TIDE_ROW_MAJOR = 1  /* element (i, j) at i * ld + j (C) */
} tide_matrix_order;

typedef struct {
    size_t size;                /* sizeof the struct: set by the init function */
    tide_precision precision;   /* default TIDE_DOUBLE */
    tide_backend backend;       /* default AUTO: the context's backend */
    tide_location location;     /* where A, B and C live; default TIDE_LOCATION_HOST */
    tide_matrix_order order;    /* of all three matrices; default TIDE_COL_MAJOR */
    tide_transpose transa, transb; /* op(A), op(B); default TIDE_NOTRANS */
    long long lda, ldb, ldc;    /* leading dimensions, at least the stored rows (column major)
                                 * or columns (row major) of each matrix (of this rank's block
                                 * on several ranks) and at least 1; 0 (default): exactly that;
                                 * per rank */
    int tile;                   /* cuda on host matrices: rows and columns of the C tiles kept
                                 * on the device; 0 (default): the plan's choice */
    int panel;                  /* ... columns of op(A) (rows of op(B)) per streamed panel
                                 * (one rank), or the most per broadcast (several ranks: the
                                 * streamed panels are then the plan's); 0 (default): the
                                 * plan's choice (on several ranks 256 on the cpu, 4096 on the
                                 * cuda backend) */
    int grid[2];                /* several ranks: the process grid, grid[0] x grid[1] = the
                                 * ranks; {0, 0} (default): the most square one */
    void *stream;               /* GPU: the caller's cudaStream_t runs are ordered after
                                 * (tide_fft_options); per rank */
    /* several ranks: the user's blocks, boundaries along each extent (NULL: balanced, block
     * i of n over p parts [i n / p, (i + 1) n / p)); each from 0 to the extent, never
     * decreasing, the same on every rank: blocks[0] C's and A's rows (grid[0] + 1 entries
     * over m), blocks[1] C's and B's columns (grid[1] + 1 over n), blocks[2] A's columns
     * (grid[1] + 1 over k), blocks[3] B's rows (grid[0] + 1 over k); read at plan creation */
    const long long *blocks[4];
    int gpus;                   /* host matrices on the GPU: how many GPUs this rank drives,
                                 * C's columns shared among them; 0 (default): where the
                                 * context chose the GPUs, the node's GPUs dealt among its ranks
                                 * (one rank on a node of four drives all four), else the
                                 * rank's own one; more than that is TIDE_ERR_ARGUMENT */
    int share_a;                /* several GPUs on host matrices: A uploaded once, each block by
                                 * one GPU, and copied between the GPUs (peer to peer, NVLink)
                                 * instead of read from host memory by each; 0 (default) where
                                 * the plan's model predicts it faster, 1 wherever the GPUs
                                 * reach each other and the plan keeps A whole on each, -1
                                 * never */
    tide_domain domain;         /* TIDE_REAL (default) or TIDE_COMPLEX elements */
    tide_exchange exchange;     /* several ranks: how the panels move. AUTO (default): host
                                 * matrices' by MPI in host memory; device matrices' over NCCL
                                 * where every rank has a GPU of its own, else by MPI on device
                                 * pointers where the MPI library takes them, else by MPI
                                 * through pinned host buffers. P2P (or A2AV: panels go
                                 * pairwise): by MPI, through pinned host buffers for device
                                 * matrices. NCCL or CUDA_MPI: that transport, for device
                                 * matrices on a context that has it (else
                                 * TIDE_ERR_UNSUPPORTED). DIRECT: TIDE_ERR_UNSUPPORTED.
                                 * tide_gemm_plan_describe names it */
} tide_gemm_options;

TIDE_API void tide_gemm_options_init(tide_gemm_options *opts);

/* Collective. m, n, k >= 0. All validation, allocation and rate measurement happen here. opts
 * may be NULL for defaults; a struct not filled by tide_gemm_options_init is TIDE_ERR_ARGUMENT
 * on every rank. */
TIDE_API int tide_gemm_plan_create(tide_context *ctx, long long m, long long n, long long k,
                                   const tide_gemm_options *opts, tide_gemm_plan **plan);

/* Local: frees the plan. NULL is accepted. */
TIDE_API int tide_gemm_plan_destroy(tide_gemm_plan *plan);

typedef struct {
    long long m, n, k;
    double flops;            /* of one multiply: 2 m n k, complex 8 m n k (a complex multiply
                              * and add being 8 real operations) */
    size_t host_bytes;       /* work memory the plan holds in host memory */
    size_t pinned_bytes;     /* ... in pinned host memory (staging for pageable matrices,
                              * allocated by the first run that needs it) */
    size_t device_bytes;     /* ... in device memory */
    /* cuda on host matrices (zero otherwise); on several ranks this rank's updates: the
     * shape of one broadcast panel's, the bytes and the bound of them all (its block's
     * flops 2 m n k over this rank's m and n, at rate_gemm) */
    long long tile_m, tile_n, panel; /* the largest C tile and op(A) panel */
    int tiles, panels;       /* C tiles, and panels per tile */
    int slots;               /* pipeline slots (transfers of one overlap the work of others) */
    double bytes_up;         /* host to device bytes of one multiply (beta != 0: C included) */
    double bytes_down;       /* device to host bytes of one multiply */
    double rate_up, rate_down, rate_both; /* measured PCIe rates, GB/s (tide_rates) */
    double rate_gemm;        /* measured in-card GEMM rate the tiles were sized with, GFLOP/s
                              * (of the plan's precision and domain) */
    double bound;            /* seconds: the largest of flops at rate_gemm, bytes_up at
                              * rate_up, bytes_down at rate_down and both at rate_both; with
                              * several GPUs the slowest GPU's (rate_gemm and the bytes are
                              * then the GPUs' sums, the PCIe rates the first GPU's) */
    int gpus;                /* GPUs the multiply runs on (0 on the CPU) */
    int shared_a;            /* 1 when A is uploaded once and copied between the GPUs (and
                              * bytes_up counts it once) */
    int grid[2];             /* the process grid the blocks are dealt over ({1, 1} on one
                              * rank) */
    tide_backend backend;
    tide_location location;
} tide_gemm_info;

TIDE_API int tide_gemm_plan_info(const tide_gemm_plan *plan, tide_gemm_info *info);

/* A one-line description, e.g. "gemm 1000x900x800 double NT col cuda host: 4 tiles of
 * 512x512, 2 panels of 512, 3 slots" ("complex double NC ..." for a complex plan whose op(B)
 * is the conjugate transpose). */
TIDE_API int tide_gemm_plan_describe(const tide_gemm_plan *plan, char *buf, size_t len);

/* Collective. C = alpha op(A) op(B) + beta C with the plan's shapes and leading dimensions
 * (alpha and beta rounded to the plan's precision; the same bits on every rank, else
 * TIDE_ERR_MISMATCH on every rank, C unchanged). A and B are only read; C may not overlap
 * them. Arrays in host or device memory as the plan's location says; a matrix without
 * elements may be NULL. Ordered after the caller's earlier work on the plan's stream and
 * complete on return. */
TIDE_API int tide_gemm_execute(tide_gemm_plan *plan, double alpha, const void *a, const void *b,
                               double beta, void *c);

/* Collective. The same with complex alpha and beta, {real, imaginary}: for a TIDE_COMPLEX plan
 * (tide_gemm_execute gives one real scalars); on a real plan their imaginary parts must be 0,
 * else TIDE_ERR_ARGUMENT on every rank. NULL alpha or beta is TIDE_ERR_ARGUMENT. */
TIDE_API int tide_gemm_execute_complex(tide_gemm_plan *plan, const double alpha[2], const void *a,
                                       const void *b, const double beta[2], void *c);

/* Local: the stream later runs order themselves after; NULL: the legacy default stream. */
TIDE_API int tide_gemm_plan_set_stream(tide_gemm_plan *plan, void *stream);

/* Collective: a plan made, executed once and destroyed (for a single multiply; a plan pays when
 * the same shapes are multiplied again, as it measures rates and allocates once). */
TIDE_API int tide_gemm(tide_context *ctx, long long m, long long n, long long k, double alpha,
                       const void *a, const void *b, double beta, void *c,
                       const tide_gemm_options *opts);

#ifdef __cplusplus
}
#endif
#endif /* TIDE_GEMM_H */
