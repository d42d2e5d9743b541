/*
 * fft_callbacks.h: what cuFFT's store callbacks of gpu/fft_callbacks.cu read, and the index
 * arithmetic they share with gpu/fft.cu (private).
 *
 * The diagonal spectral operator of a Poisson solve (backend.h's tide_spectral, line < 0, on
 * complex data, no mean weights) applied inside the forward transform's store: each output
 * element is multiplied by norm / (lam sum - alpha), or cleared where that sum is 0, and the
 * value at the global origin (0, 0, 0) of each field, before the scaling, goes to sum[field]
 * (complex, double): that is the mean of f, up to norm.
 *
 * cuFFT gives the callback the output element's offset from the output pointer of the
 * execution; the output array is dense and laid out as the transform's output box, so the
 * offset is a field's times the field's count plus the offset r within the field, which
 * decomposes into the indices at the three storage positions (slowest first) by the strides of
 * the first two positions: divisions done as a multiply-high and a shift (Granlund and
 * Montgomery's division by invariant integers), exact for dividends below 2^31, which the plan
 * checks for the elements of one field.
 *
 * Double data: the callback decomposes r and sums the eigenvalues in double as gpu/poisson.cu's
 * kernel does (bitwise the same results); inside cuFFT's double kernels that costs nothing
 * measurable (512^3 on one H200: 1.893 against 1.888 ms for the bare forward transform).
 * Float data: the same arithmetic in the store costs cuFFT's float kernels 0.9 ms of their
 * 1.08 (the index work and the three table loads per element, not the store: a bare scaling
 * callback costs 0.04 ms), so the plan computes each point's factor once, in double, rounded to
 * float (factor[r], one field's count of them), and the callback multiplies by it in float.
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
    const float *factor;       /* float data: each point's factor (device memory) */
};

/* The symbols of the callbacks in the fatbin (float and double complex output). */
#define TIDE_FFT_SCALE_STORE_C "tide_fft_scale_store_c"
#define TIDE_FFT_SCALE_STORE_Z "tide_fft_scale_store_z"

#ifdef __CUDACC__
/* n / d for n < 2^31, d given by mul and shr (above). */
__device__ inline unsigned tide_quotient(unsigned n, unsigned mul, unsigned shr)
{
    return mul ? __umulhi(n, mul) >> shr : n;
}

/* The factor of the point at offset r of a field: norm / (lam sum - alpha), 0 where the sum
 * is 0. */
__device__ inline double tide_scale_factor(unsigned r, const tide_fft_scale_info *s)
{
    unsigned i0 = tide_quotient(r, s->mul[0], s->shr[0]), r1 = r - i0 * s->stride[0];
    unsigned i1 = tide_quotient(r1, s->mul[1], s->shr[1]), i2 = r1 - i1 * s->stride[1];
    double den = __ldg(&s->lam[0][i0]) + __ldg(&s->lam[1][i1]) - s->alpha + __ldg(&s->lam[2][i2]);
    return den == 0.0 ? 0.0 : s->norm / den;
}
#endif

#endif
