// fft_callbacks.cu: cuFFT's store callback for the Poisson solve's eigenvalue scaling, compiled
// to LTO-IR (not into the library's own objects): cuFFT links it into its kernels when a plan
// is made (gpu/fft.cu), finding it by name as a C++ function of its callback signature (so no
// extern "C"). What it computes: fft_callbacks.h.
#include <cufftXt.h>
#include "fft_callbacks.h"

namespace {

// n / d for n < 2^31, d given by mul and shr (fft_callbacks.h).
__device__ inline unsigned quotient(unsigned n, unsigned mul, unsigned shr)
{
    return mul ? __umulhi(n, mul) >> shr : n;
}

} // namespace

// The field of the element is off / s->field by a product in double (exact for off < 2^53)
// corrected by one either way: a 64-bit division is a subroutine whose registers cuFFT's
// kernels cannot spare.
__device__ void tide_fft_scale_store_z(void *out, unsigned long long off,
                                       cufftDoubleComplex v, void *info, void *shared)
{
    (void)shared;
    const tide_fft_scale_info *s = (const tide_fft_scale_info *)info;
    unsigned long long field = 0;
    if (s->field) {
        field = (unsigned long long)((double)off * s->inv_field);
        if (field * s->field > off)
            field--;
        else if ((field + 1) * s->field <= off)
            field++;
    }
    unsigned r = (unsigned)(off - field * s->field);
    if (r == s->origin) {
        s->sum[2 * field] = v.x;
        s->sum[2 * field + 1] = v.y;
    }
    unsigned i0 = quotient(r, s->mul[0], s->shr[0]), r1 = r - i0 * s->stride[0];
    unsigned i1 = quotient(r1, s->mul[1], s->shr[1]), i2 = r1 - i1 * s->stride[1];
    double den = __ldg(&s->lam[0][i0]) + __ldg(&s->lam[1][i1]) - s->alpha +
                 __ldg(&s->lam[2][i2]);
    double k = den == 0.0 ? 0.0 : s->norm / den;
    ((cufftDoubleComplex *)out)[off] = make_cuDoubleComplex(den == 0.0 ? 0.0 : v.x * k,
                                                            den == 0.0 ? 0.0 : v.y * k);
}
