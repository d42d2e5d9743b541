// poisson.cu: the Poisson kernels of the CUDA backend (see gpu.h): the operator in spectral
// space, the eigenvalue scaling or the tridiagonal solves along a bounded dimension, on
// complex data or (every transformed dimension real-to-real) real data.
#include <cstdint>
#include <algorithm>
#include <cuda_runtime.h>
#include "gpu.h"
extern "C" {
#include "backend.h"
#include "region.h"
}

namespace {

// Element i of data with NC parts (2: complex, 1: real), in double; the missing part is 0.
template <typename T, int NC>
__device__ inline void load(const T *data, int64_t i, double &re, double &im)
{
    re = data[NC * i], im = NC == 2 ? data[NC * i + 1] : 0.0;
}

template <typename T, int NC>
__device__ inline void store(T *data, int64_t i, double re, double im)
{
    data[NC * i] = (T)re;
    if (NC == 2)
        data[NC * i + 1] = (T)im;
}

// The weight of global index k along a dimension in the mean's sum: the table's, or 1 at
// index 0 alone where there is none (backend.h: tide_spectral's mean_w).
__device__ inline double weight(const double *w, int k)
{
    return w ? __ldg(&w[k]) : (k == 0 ? 1.0 : 0.0);
}

// A box's points in storage order: extents and first global index, slowest first, the
// eigenvalue table and the mean's weights of the dimension stored at each position; the
// array's strides of the two slower positions (the fastest is contiguous: tide_box_strides)
// and the distance between fields, in elements (backend.h: tide_spectral's arr).
struct diag_geom {
    int64_t e[3], st[2], fs;
    int lo[3];
    const double *lam[3], *w[3];
};

// Each point of each field is scaled by norm / (lam sum - alpha), or cleared where that is
// 0; the weighted sum of the values before adds to origin[field] (one atomic add per row
// that has a weight; tide_gpu_spectral clears it first unless keep). A block takes whole rows
// along the fastest dimension (its threads along the row, so loads coalesce), so the row's
// indices, its base in the array, the sum of its two slower eigenvalues and its weight are
// worked out once per row, not per point: with 64-bit divisions per point the kernel would be
// bound by integer arithmetic, not memory. data: the box's first point.
constexpr int DIAG_ILP = 4;

template <typename T, int NC>
__global__ void diag_kernel(T *data, diag_geom g, int64_t rows, double alpha, double norm,
                            double *origin)
{
    __shared__ double part[2][32];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) { /* r = (field, a, m) */
        int64_t m = r % g.e[1], s = r / g.e[1], a = s % g.e[0], field = s / g.e[0];
        double l01 = g.lam[0][g.lo[0] + a] + g.lam[1][g.lo[1] + m] - alpha;
        double w01 = weight(g.w[0], g.lo[0] + (int)a) * weight(g.w[1], g.lo[1] + (int)m);
        const double *l2 = g.lam[2] + g.lo[2];
        T *row = data + NC * (field * g.fs + a * g.st[0] + m * g.st[1]);
        double sr = 0, si = 0;
        /* DIAG_ILP points per thread loaded before any is scaled: more bytes in flight than
         * one load, wait, store at a time */
        for (int f0 = threadIdx.x; f0 < g.e[2]; f0 += DIAG_ILP * blockDim.x) {
            double re[DIAG_ILP], im[DIAG_ILP];
#pragma unroll
            for (int u = 0; u < DIAG_ILP; u++) {
                int f = f0 + u * blockDim.x;
                re[u] = im[u] = 0.0;
                if (f < g.e[2])
                    load<T, NC>(row, f, re[u], im[u]);
            }
#pragma unroll
            for (int u = 0; u < DIAG_ILP; u++) {
                int f = f0 + u * blockDim.x;
                if (f >= g.e[2])
                    break;
                double den = l01 + __ldg(&l2[f]);
                if (w01 != 0.0) {
                    double w = w01 * weight(g.w[2], g.lo[2] + f);
                    sr += w * re[u], si += w * im[u];
                }
                double k = den == 0.0 ? 0.0 : norm / den;
                store<T, NC>(row, f, den == 0.0 ? 0.0 : re[u] * k, den == 0.0 ? 0.0 : im[u] * k);
            }
        }
        if (w01 == 0.0) /* the same for every thread of the block */
            continue;
        for (int o = 16; o > 0; o /= 2) {
            sr += __shfl_down_sync(0xffffffffu, sr, o);
            si += __shfl_down_sync(0xffffffffu, si, o);
        }
        int lane = threadIdx.x % 32, wid = threadIdx.x / 32, nw = blockDim.x / 32;
        if (lane == 0)
            part[0][wid] = sr, part[1][wid] = si;
        __syncthreads();
        if (threadIdx.x == 0) {
            for (int k = 1; k < nw; k++)
                sr += part[0][k], si += part[1][k];
            if (sr != 0.0 || si != 0.0) {
                atomicAdd(&origin[2 * field], sr);
                atomicAdd(&origin[2 * field + 1], si);
            }
        }
        __syncthreads();
    }
}

template <typename T, int NC>
cudaError_t launch_diag(void *data, const diag_geom &g, int batch, double alpha, double norm,
                        void *origin, cudaStream_t stream)
{
    const int threads = g.e[2] >= 512 ? 256 : 128; /* few idle threads on the last lap */
    int64_t rows = g.e[0] * g.e[1] * batch;
    unsigned blocks = (unsigned)std::min<int64_t>(rows, 1 << 20);
    diag_kernel<T, NC><<<blocks, threads, 0, stream>>>((T *)data, g, rows, alpha, norm,
                                                       (double *)origin);
    return cudaGetLastError();
}

// origin: the entry of d's first field.
cudaError_t diag(const tide_spectral *d, void *data, double *origin, cudaStream_t stream)
{
    const tide_box *arr = tide_spectral_arr(d);
    int64_t st[3];
    tide_box_strides(arr, st);
    diag_geom g;
    for (int k = 0; k < 3; k++) {
        int dim = d->box.order[k];
        g.e[k] = d->box.hi[dim] - d->box.lo[dim];
        g.lo[k] = d->box.lo[dim];
        g.lam[k] = d->lam[dim];
        g.w[k] = d->mean_w[dim];
        if (k < 2)
            g.st[k] = st[dim];
    }
    g.fs = tide_box_count(arr);
    size_t at = (size_t)tide_box_offset(arr, &d->box) * tide_spectral_elem(d);
    void *v = (char *)data + at;
    if (d->dbl)
        return d->real ? launch_diag<double, 1>(v, g, d->batch, d->alpha, d->norm, origin, stream)
                       : launch_diag<double, 2>(v, g, d->batch, d->alpha, d->norm, origin, stream);
    return d->real ? launch_diag<float, 1>(v, g, d->batch, d->alpha, d->norm, origin, stream)
                   : launch_diag<float, 2>(v, g, d->batch, d->alpha, d->norm, origin, stream);
}

// One field's lines along the bounded dimension: the two other dimensions (p slower, q faster
// in storage) with their extents, first indices, strides, eigenvalue tables and the mean's
// weights; the line's length and stride. Strides in elements.
struct line_geom {
    int64_t ep, eq, sp, sq, sl, lines;
    int lop, loq, n;
    const double *lamp, *lamq, *wp, *wq;
};

// One thread per line (adjacent threads on adjacent q, so the scratch accesses coalesce, and
// the data's too where the line dimension is not the fastest): Thomas' algorithm in double
// precision, the eliminated upper diagonal kept in scratch (k-major) and the eliminated
// right-hand side in the data, then back substitution in place (backend.h: tide_spectral).
// A line with a weight adds its weighted mean times that weight to origin (cleared before
// unless keep).
template <typename T, int NC>
__global__ void line_kernel(T *data, line_geom g, tide_spectral d, double *origin)
{
    int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= g.lines)
        return;
    int64_t q = t % g.eq, p = t / g.eq;
    double s = g.lamp[g.lop + p] + g.lamq[g.loq + q] - d.alpha;
    T *v = data + NC * (p * g.sp + q * g.sq);
    int pinned = d.pin && s == 0.0, m = pinned ? g.n - 1 : g.n;
    double wl = weight(g.wp, g.lop + (int)p) * weight(g.wq, g.loq + (int)q);
    double mr = 0, mi = 0, xr, xi;
    if (wl != 0.0 || pinned)
        for (int k = 0; k < g.n; k++) {
            load<T, NC>(v, k * g.sl, xr, xi);
            mr += d.weight[k] * xr, mi += d.weight[k] * xi;
        }
    if (wl != 0.0) {
        atomicAdd(&origin[0], wl * mr);
        atomicAdd(&origin[1], wl * mi);
    }
    if (!pinned)
        mr = mi = 0;
    double cp = 0, ur = 0, ui = 0;
    for (int k = 0; k < m; k++) {
        double lo = k ? d.lower[k] : 0.0, den = d.diag[k] + s - lo * cp;
        load<T, NC>(v, k * g.sl, xr, xi);
        ur = (d.norm * (xr - mr) - lo * ur) / den;
        ui = (d.norm * (xi - mi) - lo * ui) / den;
        cp = d.upper[k] / den;
        d.scratch[k * g.lines + t] = cp;
        store<T, NC>(v, k * g.sl, ur, ui);
    }
    if (pinned) {
        store<T, NC>(v, (g.n - 1) * g.sl, 0.0, 0.0);
        ur = ui = 0;
    }
    double nr = 0, ni = 0; // u at k + 1
    for (int k = m - 1; k >= 0; k--) {
        load<T, NC>(v, k * g.sl, xr, xi);
        double c = d.scratch[k * g.lines + t];
        nr = (k == m - 1 && !pinned ? ur : xr) - c * nr;
        ni = (k == m - 1 && !pinned ? ui : xi) - c * ni;
        store<T, NC>(v, k * g.sl, nr, ni);
    }
    if (!pinned)
        return;
    double sr = 0, si = 0;
    for (int k = 0; k < g.n; k++) {
        load<T, NC>(v, k * g.sl, xr, xi);
        sr += d.weight[k] * xr, si += d.weight[k] * xi;
    }
    for (int k = 0; k < g.n; k++) {
        load<T, NC>(v, k * g.sl, xr, xi);
        store<T, NC>(v, k * g.sl, xr - sr, xi - si);
    }
}

// The line solves, one launch per field (the fields share the scratch), on the box within
// d's array (its strides, its distance between fields); origin: the entry of d's first field.
template <typename T, int NC>
cudaError_t lines(const tide_spectral *d, void *data, double *origin, cudaStream_t stream)
{
    const tide_box *b = &d->box, *arr = tide_spectral_arr(d);
    int64_t st[3];
    tide_box_strides(arr, st);
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
    g.wp = d->mean_w[P], g.wq = d->mean_w[Q];
    g.lines = g.ep * g.eq;
    int64_t count = tide_box_count(arr), at = tide_box_offset(arr, b);
    const int threads = 128;
    unsigned blocks = (unsigned)((g.lines + threads - 1) / threads);
    for (int f = 0; f < d->batch; f++) {
        line_kernel<T, NC><<<blocks, threads, 0, stream>>>((T *)data + NC * (f * count + at), g,
                                                          *d, origin + 2 * f);
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess)
            return e;
    }
    return cudaSuccess;
}

cudaError_t line_solves(const tide_spectral *d, void *data, double *origin,
                        cudaStream_t stream)
{
    if (d->dbl)
        return d->real ? lines<double, 1>(d, data, origin, stream)
                       : lines<double, 2>(d, data, origin, stream);
    return d->real ? lines<float, 1>(d, data, origin, stream)
                   : lines<float, 2>(d, data, origin, stream);
}

} // namespace

// The kernels add to the origin entries of the fields processed, cleared first unless keep
// (an empty box clears them too, and adds nothing: its sums are 0).
extern "C" int tide_gpu_spectral(const tide_spectral *d, void *data, void *stream)
{
    cudaStream_t st = (cudaStream_t)stream;
    double *origin = (double *)d->origin + 2 * (size_t)d->field;
    cudaError_t e = cudaSuccess;
    if (!d->keep)
        e = cudaMemsetAsync(origin, 0, (size_t)d->batch * 2 * sizeof(double), st);
    if (e == cudaSuccess && tide_box_count(&d->box) <= 0)
        return 0;
    if (e == cudaSuccess)
        e = d->line < 0 ? diag(d, data, origin, st) : line_solves(d, data, origin, st);
    return e == cudaSuccess ? 0
                            : tide_gpu_note_error(d->line < 0 ? "eigenvalue scaling kernel"
                                                              : "tridiagonal solve kernel",
                                                  cudaGetErrorString(e), (int)e);
}
