// stencil_one.cu: one step of a stencil (sweep_one), the reference and the fallback of
// the fused kernels; its taps compiled in for the built-in shapes (see stencil.cu).
#include "gpu/stencil_kernel.cuh"

namespace tide_stencil {
namespace {

// ---- One step ---------------------------------------------------------------------------------

constexpr int ONE_BX = 32, ONE_BY = 8, ONE_Z = 16;

// S: a compile-time tap list (the weights in w, offsets folded into the loads), the class form
// (taps_box_classes: x, y and z along a.ax), or taps_any.
template <typename T, class S>
__global__ void __launch_bounds__(ONE_BX *ONE_BY)
    sweep_one(const sweep_args<T> a, const tap_weights<T, S::nw ? S::nw : 1> w)
{
    // Any taps: their linear offsets and weights, worked out once per block into shared
    // memory: per point a tap is then a shared load, a global load and an fma, not 64-bit
    // index arithmetic.
    __shared__ int64_t delta[S::n ? 1 : TIDE_SWEEP_MAX_TAPS];
    __shared__ T wt[S::n ? 1 : TIDE_SWEEP_MAX_TAPS];
    if constexpr (S::n == 0) {
        for (int i = threadIdx.x; i < a.ntaps; i += blockDim.x) {
            const int4 o = __ldg(a.off + i);
            delta[i] = (int64_t)o.x * a.plane + (int64_t)o.y * a.row + o.z;
            wt[i] = __ldg(a.w + i);
        }
        __syncthreads();
    }
    const int R = a.radius;
    const int x = a.xlo + blockIdx.x * ONE_BX + threadIdx.x % ONE_BX;
    if (x >= a.xhi)
        return;
    const bool xk = !a.per2 && (x < R || x >= a.n2 - R);
    for (int y = a.ylo + blockIdx.y * ONE_BY + threadIdx.x / ONE_BX; y < a.yhi;
         y += gridDim.y * ONE_BY) {
        const bool yk = !a.per1 && (y < R || y >= a.n1 - R);
        for (int z0 = a.zlo + blockIdx.z * ONE_Z; z0 < a.zhi; z0 += gridDim.z * ONE_Z) {
            for (int z = z0; z < imin(z0 + ONE_Z, a.zhi); z++) {
                const int64_t idx = (int64_t)z * a.plane + (int64_t)y * a.row + x;
                if (xk || yk || (!a.per0 && (z < R || z >= a.n0 - R))) {
                    a.dst[idx] = __ldg(a.src + idx);
                    continue;
                }
                // Points R or more from every face (most) need no wrap: linear offsets.
                const bool inner = z >= R && z < a.n0 - R && y >= R && y < a.n1 - R && x >= R &&
                                   x < a.n2 - R;
                T acc = T(0);
                if constexpr (S::classes) {
                    // The class form: the neighbours along x, y, z at these storage offsets.
                    const int64_t pitch[3] = {a.plane, a.row, 1};
                    const int64_t sx = pitch[a.ax[0]], sy = pitch[a.ax[1]], sz = pitch[a.ax[2]];
                    const T *p = a.src + idx;
                    if (inner) {
                        acc = box_classes(w.w, [&](int i, int j, int l) {
                            return __ldg(p + i * sx + j * sy + l * sz);
                        });
                    } else {
                        acc = box_classes(w.w, [&](int i, int j, int l) {
                            int o[3] = {0, 0, 0};
                            o[a.ax[0]] += i, o[a.ax[1]] += j, o[a.ax[2]] += l;
                            const int zz = wrap(z + o[0], a.n0), yy = wrap(y + o[1], a.n1),
                                      xx = wrap(x + o[2], a.n2);
                            return __ldg(a.src + ((int64_t)zz * a.plane + (int64_t)yy * a.row +
                                                  xx));
                        });
                    }
                } else if (inner && S::n) {
                    const T *p = a.src + idx;
                    static_for<S::n>([&](auto i) {
                        const T v = __ldg(p + S::off(i, 0) * a.plane + S::off(i, 1) * a.row +
                                          S::off(i, 2));
                        acc = i == 0 ? mul_rn(w.w[i], v) : fma_rn(w.w[i], v, acc);
                    });
                } else if (inner) {
                    const T *p = a.src + idx;
                    acc = mul_rn(wt[0], __ldg(p + delta[0]));
                    for (int i = 1; i < a.ntaps; i++)
                        acc = fma_rn(wt[i], __ldg(p + delta[i]), acc);
                } else {
                    for (int i = 0; i < a.ntaps; i++) {
                        // |offset| <= R < n: one correction wraps a neighbour of an updated
                        // point.
                        const int4 o = __ldg(a.off + i);
                        int zz = z + o.x, yy = y + o.y, xx = x + o.z;
                        zz += zz < 0 ? a.n0 : zz >= a.n0 ? -a.n0 : 0;
                        yy += yy < 0 ? a.n1 : yy >= a.n1 ? -a.n1 : 0;
                        xx += xx < 0 ? a.n2 : xx >= a.n2 ? -a.n2 : 0;
                        const T v =
                            __ldg(a.src + ((int64_t)zz * a.plane + (int64_t)yy * a.row + xx));
                        const T wi = S::n ? __ldg(a.w + i) : wt[i];
                        acc = i == 0 ? mul_rn(wi, v) : fma_rn(wi, v, acc);
                    }
                }
                if (a.source)
                    acc = add_rn(acc, __ldg(a.source + idx));
                a.dst[idx] = acc;
            }
        }
    }
}

template <typename T, class S>
cudaError_t launch_taps(const tide_sweep *s, const sweep_state *st, const void *src, void *dst,
                        cudaStream_t stream)
{
    const sweep_args<T> a = make_args<T>(s, st, st->cfg[0], src, dst, 1);
    const tap_weights<T, S::nw ? S::nw : 1> w = weights_of<T, S::nw ? S::nw : 1>(st->wh, S::nw);
    const dim3 grid((unsigned)((a.xhi - a.xlo + ONE_BX - 1) / ONE_BX),
                    (unsigned)imin((a.yhi - a.ylo + ONE_BY - 1) / ONE_BY, 65535),
                    (unsigned)imin((a.zhi - a.zlo + ONE_Z - 1) / ONE_Z, 65535));
    sweep_one<T, S><<<grid, ONE_BX * ONE_BY, 0, stream>>>(a, w);
    return cudaGetLastError();
}

// The one-step kernel for the plan's taps: compiled for them when they are a built-in shape.
template <typename T>
cudaError_t launch_shape(const tide_sweep *s, const sweep_state *st, const void *src,
                         void *dst, cudaStream_t stream)
{
    switch (st->shape) {
    case SHAPE_7C: return launch_taps<T, taps_7c>(s, st, src, dst, stream);
    case SHAPE_7F: return launch_taps<T, taps_7f>(s, st, src, dst, stream);
    case SHAPE_27C: return launch_taps<T, taps_27c>(s, st, src, dst, stream);
    case SHAPE_27F: return launch_taps<T, taps_27f>(s, st, src, dst, stream);
    case SHAPE_BOX_C:
    case SHAPE_BOX_F:
    case SHAPE_BOX_ANY: return launch_taps<T, taps_box_classes>(s, st, src, dst, stream);
    default: return launch_taps<T, taps_any>(s, st, src, dst, stream);
    }
}

} // namespace

cudaError_t launch_one(const tide_sweep *s, const sweep_state *st, const void *src, void *dst,
                       cudaStream_t stream)
{
    return s->dbl ? launch_shape<double>(s, st, src, dst, stream)
                  : launch_shape<float>(s, st, src, dst, stream);
}

} // namespace tide_stencil
