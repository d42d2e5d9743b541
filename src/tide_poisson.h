/*
 * tide_poisson.h: the Poisson and Helmholtz solvers: one part of Tide's public C API.
 * A program includes tide.h, which includes this header after the context, the boxes and
 * the status codes it uses.
 */
#ifndef TIDE_POISSON_H
#define TIDE_POISSON_H

#include "tide.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Poisson and Helmholtz solvers: lap(u) - alpha u = f on a uniform grid of n[0] x n[1] x n[2]
 * points with spacing h[d] along dimension d, for real f and u (float or double) distributed
 * over the ranks in boxes, in host or device memory. One call solves; a batch of B right-hand
 * sides is stored field after field, like the FFT's.
 *
 * Grid convention: along a periodic dimension point i sits at x = i h (the period is n h), the
 * vertex-centred grid of spectral codes. Along a bounded dimension (Neumann or Dirichlet
 * faces) the grid is cell-centred: n cells between faces at 0 and n h, point i at the cell
 * centre (i + 1/2) h. lap is the second-order 7-point finite-difference operator by default
 * (eigenvalues 2 (cos(2 pi k / n) - 1) / h^2 per periodic dimension), so the solution
 * satisfies the discrete equation to rounding; TIDE_EIGEN_SPECTRAL uses the exact eigenvalues
 * -(2 pi k' / (n h))^2 (k' the signed wavenumber) along the periodic dimensions instead: exact
 * for trigonometric polynomials; likewise -(pi k' / (n h))^2 along a bounded dimension solved
 * by a cosine or sine transform (below), k' = k (Neumann-Neumann), k + 1 (Dirichlet-Dirichlet)
 * or k + 1/2 (mixed faces).
 *
 * Bounded dimensions: a face holds the boundary condition on the face itself, through the
 * ghost value across it: u[-1] = u[0] on a Neumann face (zero normal derivative), u[-1] =
 * -u[0] on a Dirichlet face (zero value), likewise at the high face. Inhomogeneous values go
 * into f at the points next to the face: for a Dirichlet value g subtract 2 g / h^2, for a
 * Neumann face with outward normal derivative g subtract g / h. One dimension (bounded) may be
 * non-uniform: faces[d] gives its n[d] + 1 face positions
 * (increasing), the cells' centres midway; the operator is then the finite-volume one,
 * (flux(i + 1/2) - flux(i - 1/2)) / (width of cell i), each flux the difference of the
 * neighbouring centres over their distance (a Dirichlet face: the centre's value over half
 * the cell).
 *
 * Methods: with every dimension periodic, a 3D real FFT, the eigenvalue scaling and the
 * inverse transform. With bounded dimensions, one of them (the non-uniform one, else the last)
 * is solved along lines: one tridiagonal system per mode of the other two (Thomas' algorithm,
 * pivots in double precision even for float data). The periodic dimensions take a real FFT,
 * the other bounded ones (uniform cells) the cosine or sine transform whose basis meets their
 * faces: DCT-II for Neumann-Neumann, DST-II for Dirichlet-Dirichlet, DCT-IV for Neumann low and
 * Dirichlet high, DST-IV for the reverse (inverses DCT-III, DST-III, and themselves). Faces given
 * for two dimensions are TIDE_ERR_UNSUPPORTED. On the GPU (cuFFT has no real-to-real
 * transforms) each cosine or sine transform is one batched cuFFT transform between pre- and
 * post-processing kernels: a real FFT of the same length for types II and III (Makhoul), a
 * complex FFT of half the length for type IV of even length, of twice the length otherwise.
 *
 * Singular problems (alpha = 0 with no Dirichlet face: every dimension periodic or bounded by
 * Neumann faces): lap(u) = f has a solution only when f has zero mean, and then one up
 * to a constant. Tide solves lap(u) = f - mean(f) and returns the u of zero mean (means
 * weighted by the cell widths along a non-uniform dimension); tide_poisson_mean() gives
 * mean(f) of each field of the last solve, so a caller can check how far f was from
 * compatible.
 * ------------------------------------------------------------------------------------------- */
typedef struct tide_poisson_plan tide_poisson_plan;

typedef enum {
    TIDE_BC_PERIODIC = 0,  /* both faces of the dimension */
    TIDE_BC_NEUMANN = 1,   /* zero normal derivative on the face */
    TIDE_BC_DIRICHLET = 2  /* zero value on the face */
} tide_bc;

typedef enum {
    TIDE_EIGEN_FD2 = 0,     /* second-order finite differences (the 7-point Laplacian) */
    TIDE_EIGEN_SPECTRAL = 1 /* the continuous Laplacian's eigenvalues */
} tide_eigen;

/* Host arrays on the GPU backend. Copied whole, they cross PCIe once each way and the solve
 * runs in device memory. Streamed, chunks of them pass through the GPU while the next ones
 * travel, needing no more device memory than the budget, by one of two schemes: every
 * transform on the GPU in three passes, so the data crosses PCIe three times each way (the
 * outer transforms, the middle pass with the operator between the inner transforms, the
 * inverse outer ones), ranks holding slabs along x (y when y is the dimension solved along
 * lines, or when x is the only periodic one) in C order; or (one rank, x periodic) the CPU
 * doing the x transforms before and after one pass through the GPU, so the data crosses PCIe
 * once each way while the CPU transforms it twice. */
typedef enum {
    TIDE_OOC_AUTO = 0,        /* copied whole when the solve fits the context's device
                               * budget, else streamed by the scheme predicted faster from the
                               * CPU's x transform time and the PCIe rate, measured then */
    TIDE_OOC_STREAM = 1,      /* streamed, every transform on the GPU, whatever the budget
                               * (needs the GPU backend, host arrays, slabs) */
    TIDE_OOC_STREAM_CPU_X = 2 /* streamed, the CPU doing the x transforms (needs as much, one
                               * rank and x periodic) */
} tide_out_of_card;

typedef struct {
    size_t size;                      /* sizeof the struct: set by the init function */
    tide_precision precision;         /* default TIDE_DOUBLE */
    tide_backend backend;             /* default AUTO: the context's backend */
    tide_location location;           /* default TIDE_LOCATION_HOST */
    tide_decomposition decomposition; /* of the transforms, default AUTO (tide_fft_options) */
    tide_exchange exchange;           /* default AUTO */
    tide_planning planning;           /* default TIDE_PLAN_ESTIMATE */
    int batch;                        /* right-hand sides per call, default 1 */
    tide_bc bc[3][2];                 /* per dimension, low and high face; default periodic */
    double h[3];                      /* grid spacing per dimension, > 0; default 1 */
    double alpha;                     /* Helmholtz shift, >= 0; default 0 (Poisson) */
    tide_eigen eigen;                 /* default TIDE_EIGEN_FD2 */
    void *stream;                     /* GPU: the caller's cudaStream_t a solve is ordered
                                       * after (tide_fft_options); per rank */
    const double *faces[3];           /* a non-uniform bounded dimension d: its n[d] + 1 face
                                       * positions, increasing (h[d] is then unused); NULL:
                                       * uniform (the default). The same values on every rank */
    tide_out_of_card out_of_card;     /* host arrays on the GPU: default AUTO */
} tide_poisson_options;

TIDE_API void tide_poisson_options_init(tide_poisson_options *opts);

/* Collective. n: the grid; box: this rank's box of f and u (any boxes that tile the grid, each
 * rank its own storage order), or NULL on every rank for the solver's choice (x-slabs, or
 * z-pencils when there are more ranks than planes, C order; with z bounded, y-pencils and y
 * stored fastest; tide_poisson_plan_box tells). Validation, allocation and FFT planning happen
 * here. opts may be NULL for defaults; a struct not
 * filled by tide_poisson_options_init is TIDE_ERR_ARGUMENT on every rank. */
TIDE_API int tide_poisson_plan_create(tide_context *ctx, const int n[3], const tide_box *box,
                                      const tide_poisson_options *opts, tide_poisson_plan **plan);

/* Local: frees the plan. NULL is accepted. */
TIDE_API int tide_poisson_plan_destroy(tide_poisson_plan *plan);

/* This rank's box of f and u. */
TIDE_API int tide_poisson_plan_box(const tide_poisson_plan *plan, tide_box *box);

typedef struct {
    long long count;         /* points of one field on this rank */
    size_t bytes;            /* bytes of this rank's f (all fields); u is the same size */
    size_t host_bytes;       /* work memory the plan holds in host memory */
    size_t pinned_bytes;     /* ... in pinned host memory */
    size_t device_bytes;     /* ... in device memory */
    int exchanges;           /* all-to-all exchanges per solve */
    int passes;              /* local passes over the data per solve: transforms and the
                              * spectral scaling where it is a pass of its own */
    int fused_scaling;       /* 1: the eigenvalue scaling runs inside the forward transform,
                              * as it stores its output (the GPU, double precision: cuFFT's
                              * store callback, where the plan's last forward transform is one
                              * cuFFT call over its box), not as a pass of its own */
    int singular;            /* 1: alpha = 0 with every dimension periodic or Neumann on
                              * both faces (see above) */
    double flops;            /* nominal flops of one solve of all fields: the forward and
                              * inverse real transforms, 2.5 N log2 M each per field (M the
                              * points they transform at once: N, or N / n of the bounded
                              * dimension), and 8 N for the tridiagonal solves */
    tide_backend backend;
    tide_decomposition decomposition;
    tide_exchange exchange;
    tide_location location;
    int round_trips;         /* GPU, host arrays: times the data crosses PCIe each way per
                              * solve (1 copied whole or streamed with the CPU's x
                              * transforms, 3 streamed; 0 otherwise) */
    int cpu_transforms;      /* streamed: the CPU does the x transforms (tide_out_of_card) */
    int chunks;              /* GPU, host arrays: chunks per pass (streamed: the most of any
                              * pass; 1 copied whole), else 0 */
} tide_poisson_info;

TIDE_API int tide_poisson_plan_info(const tide_poisson_plan *plan, tide_poisson_info *info);

/* What one solve does on this rank (the figures a bound is computed from): the fields of
 * tide_fft_cost, summed over the solve's steps. */
TIDE_API int tide_poisson_plan_cost(const tide_poisson_plan *plan, tide_fft_cost *cost);

/* A one-line description of the solve's steps, e.g.
 * "fft(y,z) > reshape[a2av] > fft(x) > eigen > fft(x) > reshape[a2av] > fft(y,z)". */
TIDE_API int tide_poisson_plan_describe(const tide_poisson_plan *plan, char *buf, size_t len);

/* Collective. f: this rank's right-hand side(s) in its box; u receives the solution(s). f == u
 * solves in place; out of place, f is never modified. Arrays as for tide_fft_forward (host or
 * device memory as the plan's location says; device arrays aligned to the complex element).
 * The solve is ordered after the caller's earlier work on the plan's stream and complete on
 * return. */
TIDE_API int tide_poisson_solve(tide_poisson_plan *plan, const void *f, void *u);

/* Local: the mean of each field of f in the last solve (batch values; all ranks have them).
 * In a singular problem that mean was removed from f before solving. */
TIDE_API int tide_poisson_mean(const tide_poisson_plan *plan, double *mean);

/* Local: the stream later solves order themselves after; NULL: the legacy default stream. */
TIDE_API int tide_poisson_plan_set_stream(tide_poisson_plan *plan, void *stream);

#ifdef __cplusplus
}
#endif
#endif /* TIDE_POISSON_H */
