// poisson.cu: the Poisson kernels of the CUDA backend (see gpu.h): the eigenvalue scaling in
// spectral space.
#include <cstdint>
#include <algorithm>
#include <cuda_runtime.h>
#include "gpu.h"

namespace {

// A box's points in storage order: extents and first global index, slowest first, and the
// eigenvalue table of the dimension stored at each position.
struct diag_geom {
    int64_t e[3];
    int lo[3];
    const double *lam[3];
};

// Each point of each field is scaled by norm / (lam sum - alpha), or cleared where that is
// 0; point (0,0,0)'s value before goes to origin[field]. A block takes whole rows along the
// fastest dimension (its threads along the row, so loads coalesce), so the row's indices
// and the sum of its two slower eigenvalues are worked out once per row, not per point: with
// 64-bit divisions per point the kernel would be bound by integer arithmetic, not memory.
template <typename C>
__global__ void diag_kernel(C *data, diag_geom g, int64_t rows, double alpha, double norm,
                            C *origin)
{
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) { /* r = (field, a, m) */
        int64_t m = r % g.e[1], s = r / g.e[1], a = s % g.e[0], field = s / g.e[0];
        double l01 = g.lam[0][g.lo[0] + a] + g.lam[1][g.lo[1] + m] - alpha;
        int corner = g.lo[0] + a == 0 && g.lo[1] + m == 0;
        const double *l2 = g.lam[2] + g.lo[2];
        C *row = data + r * g.e[2];
        for (int f = threadIdx.x; f < g.e[2]; f += blockDim.x) {
            double den = l01 + __ldg(&l2[f]);
            C v = row[f];
            if (corner && g.lo[2] + f == 0)
                origin[field] = v;
            if (den == 0.0) {
                v.x = 0, v.y = 0;
            } else {
                double k = norm / den;
                v.x = (decltype(v.x))(v.x * k), v.y = (decltype(v.y))(v.y * k);
            }
            row[f] = v;
        }
    }
}

template <typename C>
cudaError_t launch(void *data, const diag_geom &g, int batch, double alpha, double norm,
                   void *origin, cudaStream_t stream)
{
    const int threads = g.e[2] >= 512 ? 256 : 128; /* few idle threads on the last lap */
    int64_t rows = g.e[0] * g.e[1] * batch;
    unsigned blocks = (unsigned)std::min<int64_t>(rows, 1 << 20);
    diag_kernel<C><<<blocks, threads, 0, stream>>>((C *)data, g, rows, alpha, norm, (C *)origin);
    return cudaGetLastError();
}

} // namespace

extern "C" int tide_gpu_diag(int dbl, const tide_box *box, int batch, const double *const lam[3],
                             double alpha, double norm, void *data, void *origin,
                             void *stream)
{
    diag_geom g;
    for (int k = 0; k < 3; k++) {
        int d = box->order[k];
        g.e[k] = box->hi[d] - box->lo[d];
        g.lo[k] = box->lo[d];
        g.lam[k] = lam[d];
        if (g.e[k] <= 0)
            return 0;
    }
    cudaStream_t st = (cudaStream_t)stream;
    cudaError_t e = dbl ? launch<double2>(data, g, batch, alpha, norm, origin, st)
                        : launch<float2>(data, g, batch, alpha, norm, origin, st);
    return e == cudaSuccess ? 0
                            : tide_gpu_note_error("eigenvalue scaling kernel",
                                                  cudaGetErrorString(e), (int)e);
}
