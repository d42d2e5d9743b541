// poisson.cu: the Poisson kernels of the CUDA backend (see gpu.h): the operator in spectral
// space, the eigenvalue scaling or the tridiagonal solves along a bounded dimension.
#include <cstdint>
#include <algorithm>
#include <cuda_runtime.h>
#include "gpu.h"
extern "C" {
#include "backend.h"
#include "region.h"
}

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
cudaError_t launch_diag(void *data, const diag_geom &g, int batch, double alpha, double norm,
                        void *origin, cudaStream_t stream)
{
    const int threads = g.e[2] >= 512 ? 256 : 128; /* few idle threads on the last lap */
    int64_t rows = g.e[0] * g.e[1] * batch;
    unsigned blocks = (unsigned)std::min<int64_t>(rows, 1 << 20);
    diag_kernel<C><<<blocks, threads, 0, stream>>>((C *)data, g, rows, alpha, norm, (C *)origin);
    return cudaGetLastError();
}

cudaError_t diag(const tide_spectral *d, void *data, cudaStream_t stream)
{
    diag_geom g;
    for (int k = 0; k < 3; k++) {
        int dim = d->box.order[k];
        g.e[k] = d->box.hi[dim] - d->box.lo[dim];
        g.lo[k] = d->box.lo[dim];
        g.lam[k] = d->lam[dim];
    }
    return d->dbl ? launch_diag<double2>(data, g, d->batch, d->alpha, d->norm, d->origin, stream)
                  : launch_diag<float2>(data, g, d->batch, d->alpha, d->norm, d->origin, stream);
}

// One field's lines along the bounded dimension: the two other dimensions (p slower, q faster
// in storage) with their extents, first indices, strides and eigenvalue tables; the line's
// length and stride. Strides in elements.
struct line_geom {
    int64_t ep, eq, sp, sq, sl, lines;
    int lop, loq, n;
    const double *lamp, *lamq;
};

// One thread per line (adjacent threads on adjacent q, so the scratch accesses coalesce, and
// the data's too where the line dimension is not the fastest): Thomas' algorithm in double
// precision, the eliminated upper diagonal kept in scratch (k-major) and the eliminated
// right-hand side in the data, then back substitution in place (backend.h: tide_spectral).
template <typename C>
__global__ void line_kernel(C *data, line_geom g, tide_spectral d, C *origin)
{
    int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= g.lines)
        return;
    int64_t q = t % g.eq, p = t / g.eq;
    double s = g.lamp[g.lop + p] + g.lamq[g.loq + q] - d.alpha;
    C *v = data + p * g.sp + q * g.sq;
    int pinned = d.pin && s == 0.0, m = pinned ? g.n - 1 : g.n;
    int corner = g.lop + p == 0 && g.loq + q == 0;
    double mr = 0, mi = 0;
    if (corner || pinned)
        for (int k = 0; k < g.n; k++) {
            C x = v[k * g.sl];
            mr += d.weight[k] * x.x, mi += d.weight[k] * x.y;
        }
    if (corner)
        origin->x = (decltype(origin->x))mr, origin->y = (decltype(origin->y))mi;
    if (!pinned)
        mr = mi = 0;
    double cp = 0, ur = 0, ui = 0;
    for (int k = 0; k < m; k++) {
        double lo = k ? d.lower[k] : 0.0, den = d.diag[k] + s - lo * cp;
        C x = v[k * g.sl];
        ur = (d.norm * (x.x - mr) - lo * ur) / den;
        ui = (d.norm * (x.y - mi) - lo * ui) / den;
        cp = d.upper[k] / den;
        d.scratch[k * g.lines + t] = cp;
        x.x = (decltype(x.x))ur, x.y = (decltype(x.y))ui;
        v[k * g.sl] = x;
    }
    if (pinned) {
        C z;
        z.x = 0, z.y = 0;
        v[(g.n - 1) * g.sl] = z;
        ur = ui = 0;
    }
    double nr = 0, ni = 0; // u at k + 1
    for (int k = m - 1; k >= 0; k--) {
        C x = v[k * g.sl];
        double c = d.scratch[k * g.lines + t];
        nr = (k == m - 1 && !pinned ? ur : x.x) - c * nr;
        ni = (k == m - 1 && !pinned ? ui : x.y) - c * ni;
        x.x = (decltype(x.x))nr, x.y = (decltype(x.y))ni;
        v[k * g.sl] = x;
    }
    if (!pinned)
        return;
    double sr = 0, si = 0;
    for (int k = 0; k < g.n; k++) {
        C x = v[k * g.sl];
        sr += d.weight[k] * x.x, si += d.weight[k] * x.y;
    }
    for (int k = 0; k < g.n; k++) {
        C x = v[k * g.sl];
        x.x = (decltype(x.x))(x.x - sr), x.y = (decltype(x.y))(x.y - si);
        v[k * g.sl] = x;
    }
}

// The line solves, one launch per field (the fields share the scratch).
template <typename C>
cudaError_t lines(const tide_spectral *d, void *data, cudaStream_t stream)
{
    const tide_box *b = &d->box;
    int64_t st[3];
    tide_box_strides(b, st);
    int other[2], k = 0;
    for (int i = 0; i < 3; i++) // the other two dimensions, slower first
        if (b->order[i] != d->line)
            other[k++] = b->order[i];
    int P = other[0], Q = other[1];
    line_geom g;
    g.ep = b->hi[P] - b->lo[P], g.eq = b->hi[Q] - b->lo[Q];
    g.sp = st[P], g.sq = st[Q], g.sl = st[d->line];
    g.lop = b->lo[P], g.loq = b->lo[Q];
    g.n = b->hi[d->line] - b->lo[d->line];
    g.lamp = d->lam[P], g.lamq = d->lam[Q];
    g.lines = g.ep * g.eq;
    int64_t count = g.lines * g.n;
    const int threads = 128;
    unsigned blocks = (unsigned)((g.lines + threads - 1) / threads);
    for (int f = 0; f < d->batch; f++) {
        line_kernel<C><<<blocks, threads, 0, stream>>>((C *)data + f * count, g, *d,
                                                      (C *)d->origin + f);
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess)
            return e;
    }
    return cudaSuccess;
}

} // namespace

extern "C" int tide_gpu_spectral(const tide_spectral *d, void *data, void *stream)
{
    if (tide_box_count(&d->box) <= 0)
        return 0;
    cudaStream_t st = (cudaStream_t)stream;
    cudaError_t e = d->line < 0 ? diag(d, data, st)
                    : d->dbl    ? lines<double2>(d, data, st)
                                : lines<float2>(d, data, st);
    return e == cudaSuccess ? 0
                            : tide_gpu_note_error(d->line < 0 ? "eigenvalue scaling kernel"
                                                              : "tridiagonal solve kernel",
                                                  cudaGetErrorString(e), (int)e);
}
