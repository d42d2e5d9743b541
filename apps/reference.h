/*
 * reference.h: the independent oracle used by `tide fft` (Max error) and by the tests.
 *
 * Inputs are a deterministic function of the global point and the seed, so every decomposition
 * sees the same global array. The check gathers the whole input and output to rank 0, runs one
 * serial FFTW transform of the whole grid in double precision (FFTW's plain 3D interface, no
 * Tide code involved) and compares.
 */
#ifndef TIDE_APPS_REFERENCE_H
#define TIDE_APPS_REFERENCE_H

#include <mpi.h>
#include "tide.h"

/* Value in [-1, 1) of component comp (0 real, 1 imaginary) of global point (x, y, z) of field
 * f of a grid of size n (the grid the data lives on), for the given seed. */
double tide_ref_value(unsigned seed, int field, const int n[3], int x, int y, int z, int comp);

/* Fill this rank's array (box layout, batch fields one after another) with those values.
 * is_complex: interleaved (re, im) elements; prec: float or double elements. */
void tide_ref_fill(void *data, const tide_box *box, int batch, int is_complex,
                   tide_precision prec, const int n[3], unsigned seed);

/* Whether the gathered global input and output of a transform of size n with batch fields fit
 * comfortably in one rank's memory (the check's limit, about 1 GiB of double complex). */
int tide_ref_fits(const int n[3], int batch);

typedef struct {
    double rel_l2;  /* ||out - ref||_2 / ||ref||_2 over all fields */
    double max_abs; /* max |out - ref| over all points (complex modulus) */
    double max_ref; /* max |ref| */
} tide_ref_error;

/*
 * Collective over comm. Checks one transform computed by Tide: src holds this rank's input in
 * layout srcbox, dst this rank's result in layout dstbox. direction: -1 forward, +1 backward.
 * For R2C, forward src is real on grid n and dst complex on n[0] x n[1] x (n[2]/2+1); backward
 * the reverse (the reference is FFTW's c2r, so the backward input must be Hermitian, e.g. the
 * output of a forward transform). scale multiplies the reference (1, 1/N, 1/sqrt N).
 * Every rank gets the same err. Returns 0, or TIDE_ERR_TOO_LARGE when !tide_ref_fits.
 */
int tide_ref_check(MPI_Comm comm, const int n[3], tide_fft_type type, tide_precision prec,
                   int batch, int direction, double scale, const tide_box *srcbox,
                   const void *src, const tide_box *dstbox, const void *dst,
                   tide_ref_error *err);

/*
 * Collective over comm. Checks a Poisson/Helmholtz solve computed by Tide (tide_poisson_solve
 * with the default TIDE_EIGEN_FD2 operator): f holds this rank's right-hand sides, u its
 * solutions, both real (prec), batch fields, laid out as box. Both are gathered to rank 0,
 * which applies the operator to u by a naive loop in double precision, subtracts alpha u, and
 * compares with f (less f's mean when singular, as Tide solves then).
 *
 * The operator, per dimension d (tide.h's conventions): bc NULL, or bc[d] periodic on both
 * faces: the periodic second difference with spacing h[d] (none when n[d] == 1). Neumann or
 * Dirichlet faces: cells between faces z_0 < ... < z_n (faces[d], or z_k = k h[d] when faces
 * or faces[d] is NULL), centres c_i midway; at cell i (F(i+1/2) - F(i-1/2)) / (z_{i+1} - z_i)
 * with F(i+1/2) = (u[i+1] - u[i]) / (c_{i+1} - c_i) inside, and on a face F = 0 (Neumann) or
 * the difference to a zero face value over the half-cell, u[0] / (c_0 - z_0) and
 * -u[n-1] / (z_n - c_{n-1}) (Dirichlet). Any number of dimensions may be bounded. The mean of
 * a singular problem is weighted by the cell volume (the product of the widths along the
 * bounded dimensions; uniform cells: the plain mean). Rank 0's n, h, bc, faces and alpha are
 * the ones used.
 *
 * err->max_abs: max |L_h u - alpha u - f'|, err->max_ref: max |f'|, err->rel_l2:
 * ||L_h u - alpha u - f'||_2 / ||f'||_2, over all fields. Every rank gets the same err. Returns
 * 0; TIDE_ERR_ARGUMENT for bad sizes, spacings, boundaries (a dimension periodic on one face
 * only) or faces (given for a periodic dimension, not finite, not strictly increasing);
 * TIDE_ERR_TOO_LARGE when the grid does not fit on one rank (tide_ref_fits).
 */
int tide_ref_poisson_residual(MPI_Comm comm, const int n[3], const double h[3],
                              const tide_bc bc[3][2], const double *const faces[3],
                              double alpha, int singular, tide_precision prec, int batch,
                              const tide_box *box, const void *f, const void *u,
                              tide_ref_error *err);

/*
 * Local. The naive stencil reference: `steps` time steps of a stencil on the whole grid n, u in
 * C order (x slowest, z contiguous), host memory, float (dbl 0) or double, updated in place,
 * one step at a time by a plain loop into a second array (no Tide code involved). The taps are
 * off[i] = (dx, dy, dz) with weights w[i] of a stencil of shape `shape`; bc[d] is
 * TIDE_BC_PERIODIC or TIDE_BC_DIRICHLET. The arithmetic is tide.h's (a product for tap 0, a
 * fused multiply-add per further tap in order, then the source's add, in the data's
 * precision; for TIDE_STENCIL_27PT whose 27 weights take one value per class, the class form
 * of docs/api.md), so Tide's result must equal this one bitwise. Dirichlet: points within r (the largest |offset| component, at least 1) of a
 * face of that dimension keep their values; periodic: indices wrap. source: NULL or an array
 * like u.
 * Returns 0, or TIDE_ERR_NOMEM / TIDE_ERR_ARGUMENT (ntaps < 1, a grid smaller than 2 r + 1
 * along some dimension).
 */
int tide_ref_stencil(const int n[3], int dbl, tide_stencil_shape shape, int ntaps,
                     const int (*off)[3], const double *w, const tide_bc bc[3],
                     const void *source, void *u, long long steps);

/* The taps of a built-in shape (TIDE_STENCIL_7PT or _27PT) in tide.h's documented order, with
 * weights w (NULL: tide.h's defaults), written independently of the library: off and wout
 * receive 7 or 27 entries. Returns the number of taps, 0 for another shape. */
int tide_ref_stencil_taps(tide_stencil_shape shape, const double *w, int (*off)[3],
                          double *wout);

/* The taps of `tide stencil -shape star:R` and `-shape box:R` (shape TIDE_STENCIL_STAR or _BOX,
 * R = 1..TIDE_STENCIL_MAX_RADIUS), B the binomial smoothing of radius R, B(k) = C(2R, R+k)/4^R
 * at offset k = -R..R (exact in binary). Star: the centre (weight B(0)), then for k = 1..R, for
 * x, y, z, the offsets -k and +k (weight B(k)/3 each): 6R + 1 taps, (Bx + By + Bz)/3. Box: the
 * (2R+1)^3 offsets, dx slowest and dz fastest (as TIDE_STENCIL_27PT), weight B(dx) B(dy) B(dz).
 * off and w receive the taps in that order (room for (2R+1)^3). Returns their count, 0 for
 * another shape or R. */
int tide_ref_stencil_binomial_taps(tide_stencil_shape shape, int R, int (*off)[3], double *w);

/*
 * Local. Naive reference for C = alpha op(A) op(B) + beta C0 on the block of rows [i0, i1) and
 * columns [j0, j1) of C, real (cplx 0) or complex (cplx 1: elements (real, imaginary) pairs,
 * interleaved) matrices of precision dbl (1 double, 0 float) stored in `order` with leading
 * dimensions lda, ldb, ldc (in elements) as tide_gemm_options defines them (0: the minimum);
 * op(X) = X, X^T or X^H (TIDE_CONJTRANS: the conjugate transpose; on real matrices X^T).
 * alpha and beta are {real, imaginary} (on real matrices the imaginary parts must be 0), first
 * rounded to the precision, as tide_gemm_execute(_complex) does. Each entry is a dot product
 * in index order accumulated in long double; entry (i, j) at e = (i - i0) * (j1 - j0) + (j - j0):
 * real, ref[e] gets the entry and scale[e] |alpha| sum_p |op(A)_ip op(B)_pj| + |beta C0_ij|;
 * complex, ref[2 e] and ref[2 e + 1] its real and imaginary parts and scale[2 e], scale[2 e + 1]
 * a bound for each: the sum of the magnitudes of the real products that make that part when
 * every complex product is expanded (with alpha = ar + i ai and beta = br + i bi, the real
 * part of alpha sum_p x_p y_p + beta c sums ar xr yr, -ar xi yi, -ai xr yi and -ai xi yr over
 * p, br cr and -bi ci). C0 is not read for beta == 0 (it may hold NaN), nor are A and B for
 * alpha == 0. Cost: the smaller side of the block times k values gathered, then one streaming
 * pass over the other matrix, so a few full rows or columns of a large product are cheap
 * (complex: about three times the real cost). Returns 0, TIDE_ERR_ARGUMENT for a bad block
 * (or size, enum, leading dimension, NULL array or scalar, a real problem with complex
 * scalars) or TIDE_ERR_NOMEM.
 */
int tide_ref_gemm(int dbl, int cplx, tide_matrix_order order, tide_transpose ta,
                  tide_transpose tb, long long m, long long n, long long k,
                  const double alpha[2], const void *a, long long lda, const void *b,
                  long long ldb, const double beta[2], const void *c0, long long ldc,
                  long long i0, long long i1, long long j0, long long j1, double *ref,
                  double *scale);

/*
 * Local. The largest |C_ij - ref| / (d u scale + u_ref |ref|) over the block, per real value
 * (complex: the real and imaginary parts each against its own scale), C being the computed
 * matrix laid out as above (ldc its actual leading dimension, at least 1), u the unit roundoff
 * of the precision (2^-53 or 2^-24) and u_ref the reference's own rounding to double (2^-53 for
 * double, 0 for float, whose reference is exact to far below u). d is the most roundings on
 * the path of one real product into the entry, whatever the order of the sums (the dot
 * product's, the BLAS's blocking, the panels added into C): real, d = k + 2 (the product, k
 * additions, alpha), Higham's deterministic first-order bound for a dot product of length k
 * plus the scaling; complex, d = k + 4, as each of the two complex products (x y and alpha
 * times the sum) adds the difference or sum of two real products. The bound per part holds
 * for the textbook complex multiply-add and for kernels that accumulate the real products
 * separately and combine them at the end alike (Higham's bound on the modulus, gamma_{k+2}
 * sum_p |x_p| |y_p|, assumes the former). A correct result gives at most 1. A value with
 * scale 0 must be exactly equal (else the result is +inf). NaN in C gives +inf; bad
 * arguments give NaN.
 */
double tide_ref_gemm_error(int dbl, int cplx, tide_matrix_order order, long long k,
                           const void *c, long long ldc, long long i0, long long i1,
                           long long j0, long long j1, const double *ref, const double *scale);

/*
 * Local. The naive band reference: x <- A^steps x for the n x n band matrix A with kl
 * diagonals below the main one and ku above, on the whole matrix, float (dbl 0) or double,
 * host memory, one step at a time by a plain loop into a second array (no Tide code involved).
 * diag holds A diagonal-major, tide.h's layout for one rank owning every row: A(i, i + d) at
 * diag[(d + kl) n + i]; entries whose column lies outside the matrix are not read. The
 * arithmetic is tide.h's (acc = 0, then a fused multiply-add per term in increasing column
 * order), so Tide's result must equal this one bitwise. Returns 0 or TIDE_ERR_NOMEM.
 */
int tide_ref_band(int n, int dbl, int kl, int ku, const void *diag, void *x, long long steps);

#endif
