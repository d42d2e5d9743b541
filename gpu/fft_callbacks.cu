// fft_callbacks.cu: cuFFT store callbacks, compiled to LTO-IR (not into the library's own
// objects): cuFFT links them into its kernels when a plan is made (gpu/fft.cu), finding them
// by name as C++ functions of its callback signatures (so no extern "C"). What they compute:
// fft_callbacks.h.
#include <cufftXt.h>
#include "fft_callbacks.h"

namespace {

__device__ inline unsigned quotient(unsigned n, unsigned mul, unsigned shr)
{
    return mul ? __umulhi(n, mul) >> shr : n;
}

// The scale of the element at offset off (fft_callbacks.h), with the origin's value kept.
template <typename C>
__device__ inline C scale(unsigned long long off, C v, const tide_fft_scale_info *s)
{
    unsigned long long field = s->field ? off / s->field : 0;
    unsigned r = (unsigned)(off - field * s->field);
    unsigned i0 = quotient(r, s->mul[0], s->shr[0]), r1 = r - i0 * s->stride[0];
    unsigned i1 = quotient(r1, s->mul[1], s->shr[1]), i2 = r1 - i1 * s->stride[1];
    if (r == s->origin) {
        s->sum[2 * field] = v.x;
        s->sum[2 * field + 1] = v.y;
    }
    double den = s->lam[0][i0] + s->lam[1][i1] - s->alpha + s->lam[2][i2];
    double k = den == 0.0 ? 0.0 : s->norm / den;
    C out;
    out.x = den == 0.0 ? 0.0 : v.x * k;
    out.y = den == 0.0 ? 0.0 : v.y * k;
    return out;
}

} // namespace

__device__ void tide_fft_scale_store_c(void *out, unsigned long long off, cufftComplex v,
                                       void *info, void *shared)
{
    (void)shared;
    ((cufftComplex *)out)[off] = scale(off, v, (const tide_fft_scale_info *)info);
}

__device__ void tide_fft_scale_store_z(void *out, unsigned long long off,
                                       cufftDoubleComplex v, void *info, void *shared)
{
    (void)shared;
    ((cufftDoubleComplex *)out)[off] = scale(off, v, (const tide_fft_scale_info *)info);
}
