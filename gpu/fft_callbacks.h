/*
 * fft_callbacks.h: what cuFFT's store callback of gpu/fft_callbacks.cu reads (private;
 * gpu/fft.cu fills it in device memory when it plans the transform).
 *
 * The diagonal spectral operator of a Poisson solve (backend.h's tide_spectral, line < 0, on
 * complex double data, no mean weights) applied inside the forward transform's store: each
 * output element is multiplied by norm / (lam sum - alpha), or cleared where that sum is 0, in
 * the double arithmetic of gpu/poisson.cu's kernel (bitwise the same results), and the value at
 * the global origin (0, 0, 0) of each field, before the scaling, goes to sum[field] (complex):
 * that is the mean of f, up to norm.
 *
 * cuFFT gives the callback the output element's offset from the output pointer of the
 * execution; the output array is dense and laid out as the transform's output box, so the
 * offset is a field's times the field's count plus the offset r within the field, which
 * decomposes into the indices at the three storage positions (slowest first) by the strides of
 * the first two positions: divisions done as a multiply-high and a shift (Granlund and
 * Montgomery's division by invariant integers), exact for dividends below 2^31, which the plan
 * checks for the elements of one field.
 *
 * Double data only, and used where the solve's spectral op does not transform x itself (with device
 * arrays and n[0] a power of two from 8 to 2048 it does: gpu/poisson.cu's line kernel, one pass
 * over the spectrum where the 3D transforms take more). Measured on one H200, the forward R2C of
 * 512^3 alone: in double the callback costs nothing measurable (1.893 against 1.888 ms bare), and
 * the solve drops from 4.22 to 3.76 ms. In float every variant tried made cuFFT's kernels slower
 * than the separate kernel pass they replace (0.47 ms): the offset decomposed and three table loads
 * 1.87 ms against 1.08 bare; a precomputed factor per point, one coalesced load, 1.63 ms; the
 * eigenvalues computed from the indices (sinpif, nothing loaded) 2.16 ms; the same in the inverse
 * C2R's load callback 1.61 ms (tables) and 1.97 ms (computed) against 1.08 bare. Only a constant
 * factor stays near bare (1.11 ms): any work per element slows cuFFT's float kernels by more than
 * the separate pass costs (docs/performance.md).
 */
#ifndef TIDE_FFT_CALLBACKS_H
#define TIDE_FFT_CALLBACKS_H

struct tide_fft_scale_info {
    unsigned long long field;  /* elements of one field; 0: one field */
    double inv_field;          /* 1 / field */
    unsigned stride[2];        /* of storage positions 0 and 1 (position 2: 1) */
    unsigned mul[2], shr[2];   /* n / stride[k] = umulhi(n, mul[k]) >> shr[k] (mul 0: n) */
    const double *lam[3];      /* eigenvalue tables by storage position, from the box's first
                                * index on (device memory) */
    double alpha, norm;
    unsigned long long origin; /* offset in a field of the global origin; ~0: not in the box */
    double *sum;               /* per field the origin's value, complex (device memory) */
};

/* The symbol of the callback in the fatbin (double complex output). */
#define TIDE_FFT_SCALE_STORE_Z "tide_fft_scale_store_z"

#endif
