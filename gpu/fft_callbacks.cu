// fft_callbacks.cu: cuFFT store callbacks, compiled to LTO-IR (not into the library's own
// objects): cuFFT links them into its kernels when a plan is made (gpu/fft.cu), finding them
// by name as C++ functions of its callback signatures (so no extern "C"). What they compute:
// fft_callbacks.h.
#include <cufftXt.h>
#include "fft_callbacks.h"

namespace {

// The field of the element at offset off and its offset *r within the field; the origin's
// value kept when it is that element. The field is off / s->field by a product in double
// (exact for off < 2^53) corrected by one either way: a 64-bit division is a subroutine whose
// registers cuFFT's kernels cannot spare.
template <typename C>
__device__ inline void locate(unsigned long long off, C v, const tide_fft_scale_info *s,
                              unsigned *r)
{
    unsigned long long field = 0;
    if (s->field) {
        field = (unsigned long long)((double)off * s->inv_field);
        if (field * s->field > off)
            field--;
        else if ((field + 1) * s->field <= off)
            field++;
    }
    *r = (unsigned)(off - field * s->field);
    if (*r == s->origin) {
        s->sum[2 * field] = v.x;
        s->sum[2 * field + 1] = v.y;
    }
}

} // namespace

__device__ void tide_fft_scale_store_c(void *out, unsigned long long off, cufftComplex v,
                                       void *info, void *shared)
{
    (void)shared;
    const tide_fft_scale_info *s = (const tide_fft_scale_info *)info;
    unsigned r;
    locate(off, v, s, &r);
    float k = __ldg(&s->factor[r]);
    ((cufftComplex *)out)[off] = make_cuComplex(v.x * k, v.y * k);
}

__device__ void tide_fft_scale_store_z(void *out, unsigned long long off,
                                       cufftDoubleComplex v, void *info, void *shared)
{
    (void)shared;
    const tide_fft_scale_info *s = (const tide_fft_scale_info *)info;
    unsigned r;
    locate(off, v, s, &r);
    double k = tide_scale_factor(r, s);
    ((cufftDoubleComplex *)out)[off] = make_cuDoubleComplex(k == 0.0 ? 0.0 : v.x * k,
                                                            k == 0.0 ? 0.0 : v.y * k);
}
