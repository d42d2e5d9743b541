/*
 * fft_callbacks.h: what cuFFT's store callbacks of gpu/fft_callbacks.cu read (private; shared
 * with gpu/fft.cu, which fills it in device memory).
 *
 * The diagonal spectral operator of a Poisson solve (backend.h's tide_spectral, line < 0, on
 * complex data, no mean weights) applied inside the forward transform's store: each output
 * element is multiplied by norm / (lam sum - alpha), or cleared where that sum is 0, as
 * gpu/poisson.cu's eigenvalue kernel does it (the same double arithmetic, so the results are
 * bitwise equal), and the value at the global origin (0, 0, 0) of each field, before the
 * scaling, goes to sum[field] (complex, double): that is the mean of f, up to norm.
 *
 * cuFFT gives the callback the output element's offset from the output pointer of the
 * execution; the output array is dense and laid out as the transform's output box, so the
 * offset decomposes into the field and the indices at the three storage positions (slowest
 * first) by the strides of the first two positions. Those divisions run per element, as a
 * multiply-high and a shift (Granlund and Montgomery's division by invariant integers): exact
 * for dividends below 2^31, which the plan checks for the elements of one field.
 */
#ifndef TIDE_FFT_CALLBACKS_H
#define TIDE_FFT_CALLBACKS_H

struct tide_fft_scale_info {
    unsigned long long field;  /* elements of one field; 0: one field */
    unsigned stride[2];        /* of storage positions 0 and 1 (position 2: 1) */
    unsigned mul[2], shr[2];   /* n / stride[k] = umulhi(n, mul[k]) >> shr[k] (mul 0: n) */
    const double *lam[3];      /* eigenvalue tables by storage position, from the box's first
                                * index on (device memory) */
    double alpha, norm;
    unsigned long long origin; /* offset in a field of the global origin; ~0: not in the box */
    double *sum;               /* per field the origin's value, complex (device memory) */
};

/* The symbols of the callbacks in the fatbin (float and double complex output). */
#define TIDE_FFT_SCALE_STORE_C "tide_fft_scale_store_c"
#define TIDE_FFT_SCALE_STORE_Z "tide_fft_scale_store_z"

#endif
