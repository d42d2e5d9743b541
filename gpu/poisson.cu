// poisson.cu: the Poisson kernels of the CUDA backend (see gpu/poisson.h): the operator in spectral
// space, the eigenvalue scaling or the tridiagonal solves along a bounded dimension, on
// complex data or (every transformed dimension real-to-real) real data.
#include <cstdint>
#include <algorithm>
#include <cuda_runtime.h>
#include "backend/device.h"
#include "gpu/complex.cuh"
#include "gpu/poisson.h"
extern "C" {
#include "backend/backend.h"
#include "comm/region.h"
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

// The lines along d->line: the two other dimensions (p slower, q faster in storage) with
// their extents, first indices, strides, eigenvalue tables and the mean's weights; the line's
// length and stride; line (p, q) is number p eq + q of `lines`. Strides in elements.
struct line_geom {
    int64_t ep, eq, sp, sq, sl, lines;
    int lop, loq, n;
    const double *lamp, *lamq, *wp, *wq;
    const double *laml; // the line's eigenvalues (a periodic line: line_fft)
    int64_t fs, at;     // the distance between fields; the box's first point in the array
};

// The geometry of the lines of d's box within its array.
line_geom line_geometry(const tide_spectral *d)
{
    const tide_box *b = &d->box, *arr = tide_spectral_arr(d);
    int64_t st[3];
    tide_box_strides(arr, st);
    int other[2], k = 0;
    for (int i = 0; i < 3; i++) // the other two dimensions, slower first
        if (b->order[i] != d->line)
            other[k++] = b->order[i];
    int P = other[0], Q = other[1], L = d->line;
    line_geom g;
    g.ep = b->hi[P] - b->lo[P], g.eq = b->hi[Q] - b->lo[Q];
    g.sp = st[P], g.sq = st[Q], g.sl = st[L];
    g.lop = b->lo[P], g.loq = b->lo[Q];
    g.n = b->hi[L] - b->lo[L];
    g.lamp = d->lam[P], g.lamq = d->lam[Q], g.laml = d->lam[L];
    g.wp = d->mean_w[P], g.wq = d->mean_w[Q];
    g.lines = g.ep * g.eq;
    g.fs = tide_box_count(arr), g.at = tide_box_offset(arr, b);
    return g;
}

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
    line_geom g = line_geometry(d);
    const int threads = 128;
    unsigned blocks = (unsigned)((g.lines + threads - 1) / threads);
    for (int f = 0; f < d->batch; f++) {
        line_kernel<T, NC><<<blocks, threads, 0, stream>>>((T *)data + NC * (f * g.fs + g.at), g,
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

// ---- a periodic line transformed inside the op (tide_spectral's line_fft) ----
//
// A block loads COLS whole lines (columns) of one field into shared memory, runs a Stockham FFT
// along each (a radix-P stage, radix-8 stages, then one radix-2 or radix-4 stage where log2 (n / P)
// is not a multiple of 3), scales each point as the diagonal operator does, runs the inverse FFT
// and stores the columns back: one pass over the data in place of the line's two cuFFT passes and
// the scaling's. N / P threads work on a column (P points a thread: 8, or 16 in float at N =
// 128 and 1024, whose stages are then 16 x 8 and 16 x 8 x 8), each on one butterfly of a radix-8
// stage (P / 8 of them); a block holds THREADS P / N columns (lf_shape). Neighbouring threads
// load neighbouring columns (lines that are neighbours along the faster other dimension), so each
// plane's loads coalesce, and each thread has its P loads in flight at once. The kernel is bound by
// the latency of its loads and of its trips through shared memory (each with two barriers), so the
// forward's first stage (radix P) runs on the points as loaded, the inverse's last stores its
// outputs to the line, and the forward's last stage, the scaling and the inverse's first run on one
// thread's points in registers (the turn: the outputs of the forward's last butterflies j + b N / P
// are the inputs of the inverse's first butterfly j): between these steps a point goes through
// shared memory (written, then read), in float 6 times at N = 2048, 4 at 1024 and 512, twice at 128
// (in double 6 at 2048 and 1024, 4 at 512, 256 and 128). Each time a column is written it is laid
// out afresh (lf_at), so that both that write and the next read keep a half warp's points in
// different banks.

// The twiddle table: padded by one slot every 8 entries, which spreads a stage's reads of
// entries 8 or 16 apart over the banks.
__device__ __forceinline__ int lf_pad(int i) { return i + (i >> 3); }

// A layout of a column's points in shared memory: each aligned block of 16 points permuted
// within itself (lf_at), so a column of N points takes N places (N >= 16), and columns lie N + 1
// apart. A shared access of 8-byte points serves a half warp at a time, and it does so in one
// pass where its 16 points fall into 16 different places modulo 16 (lf_at's value plus the
// column's). The accesses of a column are: a stage's reads, 16 consecutive butterflies j (or
// TPC < 16 of each of 16 / TPC columns) reading points j + r N / R; a stage's writes, points
// d + r Ns of those butterflies, d = (j - j mod Ns) R + j mod Ns: for Ns = 1 (the turn's) the
// points P j + r, for Ns = 8 two runs of 8 points 64 apart, for Ns >= 16 consecutive points;
// and in the loads' thread map (line_fft_kernel: 16 / COLS rows of COLS columns a half warp
// where COLS < 16) the first stage's writes, points P lz + r, and the last stage's reads,
// consecutive points. lf_at: the 4 low bits of i rotated left by a, then exclusive-or'ed with
// bits 4-6 (into bits 0-2, which spreads the 8 j + r of 16 consecutive j) and bit 6 (into bit
// 3, which parts the two runs of Ns = 8), or where P = 16 (wide) with bits 4-7 (into bits 0-3:
// the 16 j + r of 16 consecutive j), then rotated left by b (which, where TPC < 16 or in the
// map of the loads, puts one column's consecutive points 16 / TPC or COLS places apart and the
// other columns of the half warp between them). a and b by where the layout is written and
// read (lf_stages): a model of the banks over these accesses (tools/line-fft-banks) finds every
// half warp's 16 points in 16 different places for every N and precision (docs/performance.md
// has the counters).
struct lf_layout {
    int a, b;
    bool wide;
};
__device__ __forceinline__ int lf_rot(int i, int k)
{
    int lo = i & 15;
    return (i & ~15) | ((lo << k | lo >> (4 - k)) & 15);
}
__device__ __forceinline__ int lf_at(int i, lf_layout l)
{
    i = lf_rot(i, l.a);
    i ^= l.wide ? (i >> 4) & 15 : ((i >> 4) & 7) ^ ((i >> 3) & 8);
    return lf_rot(i, l.b);
}
// lf_at(i + o) where i and o have no bit in common and o is a constant: lf_at is linear in the
// bits (rotations and exclusive-ors), so lf_at(i) (p, worked out once for all o) ^ lf_at(o)
// (folded by the compiler). Where o has no bit below 7 (8 where wide), lf_at(o) = o and p, whose
// bits above 3 are i's, has none of o's: p + o, which the compiler folds into the address.
__device__ __forceinline__ int lf_at_plus(int p, int o, lf_layout l)
{
    return o % (l.wide ? 256 : 128) == 0 ? p + o : p ^ lf_at(o, l);
}

// The kernel's complex types: float2 for float data, double2 for double; cpx makes one.
__device__ __forceinline__ float2 cpx(float re, float im) { return make_float2(re, im); }
__device__ __forceinline__ double2 cpx(double re, double im) { return make_double2(re, im); }
using tide_complex::add;
using tide_complex::mul;
using tide_complex::sub;
// a times S i (S = -1: forward, +1: inverse)
template <int S, typename C> __device__ __forceinline__ C times_i(C a)
{
    return cpx(-S * a.y, S * a.x);
}

// The DFT of R points in registers, natural order out, exp(S 2 pi i j k / R).
template <int R, int S> struct dft;
template <int S> struct dft<2, S> {
    template <typename C> static __device__ __forceinline__ void run(C *v)
    {
        C a = v[0];
        v[0] = add(a, v[1]), v[1] = sub(a, v[1]);
    }
};
template <int S> struct dft<4, S> {
    template <typename C> static __device__ __forceinline__ void run(C *v)
    {
        C a0 = add(v[0], v[2]), a1 = sub(v[0], v[2]), a2 = add(v[1], v[3]);
        C b3 = times_i<S>(sub(v[1], v[3]));
        v[0] = add(a0, a2), v[2] = sub(a0, a2), v[1] = add(a1, b3), v[3] = sub(a1, b3);
    }
};
template <int S> struct dft<8, S> { // radix 2 x 2 x 2, decimation in frequency
    template <typename C> static __device__ __forceinline__ void run(C *v)
    {
        using T = decltype(C::x);
        const T h = (T)0.70710678118654752;
        const C w1 = cpx(h, S * h), w3 = cpx(-h, S * h);
        C a[8], b[8];
#pragma unroll
        for (int r = 0; r < 4; r++)
            a[r] = add(v[r], v[r + 4]), a[r + 4] = sub(v[r], v[r + 4]);
        a[5] = mul(a[5], w1), a[6] = times_i<S>(a[6]), a[7] = mul(a[7], w3);
#pragma unroll
        for (int h4 = 0; h4 < 8; h4 += 4) {
            b[h4] = add(a[h4], a[h4 + 2]), b[h4 + 1] = add(a[h4 + 1], a[h4 + 3]);
            b[h4 + 2] = sub(a[h4], a[h4 + 2]);
            b[h4 + 3] = times_i<S>(sub(a[h4 + 1], a[h4 + 3]));
        }
        v[0] = add(b[0], b[1]), v[4] = sub(b[0], b[1]), v[2] = add(b[2], b[3]);
        v[6] = sub(b[2], b[3]), v[1] = add(b[4], b[5]), v[5] = sub(b[4], b[5]);
        v[3] = add(b[6], b[7]), v[7] = sub(b[6], b[7]);
    }
};

template <int S> struct dft<16, S> { // radix 4 x 4: x[4 a + b] -> X[c + 4 d]
    template <typename C> static __device__ __forceinline__ void run(C *v)
    {
        using T = decltype(C::x);
        const T c1 = (T)0.92387953251128674, s1 = (T)0.38268343236508980,
                h = (T)0.70710678118654752;
        // exp(S 2 pi i m / 16) for the products m = b c (b, c < 4) of the inner twiddles
        const C w1 = cpx(c1, S * s1), w2 = cpx(h, S * h), w3 = cpx(s1, S * c1),
                w6 = cpx(-h, S * h), w9 = cpx(-c1, -S * s1);
        C y[4][4];
#pragma unroll
        for (int b = 0; b < 4; b++) {
#pragma unroll
            for (int a = 0; a < 4; a++)
                y[b][a] = v[4 * a + b];
            dft<4, S>::run(y[b]);
        }
        y[1][1] = mul(y[1][1], w1), y[1][2] = mul(y[1][2], w2), y[1][3] = mul(y[1][3], w3);
        y[2][1] = mul(y[2][1], w2), y[2][2] = times_i<S>(y[2][2]), y[2][3] = mul(y[2][3], w6);
        y[3][1] = mul(y[3][1], w3), y[3][2] = mul(y[3][2], w6), y[3][3] = mul(y[3][3], w9);
#pragma unroll
        for (int c = 0; c < 4; c++) {
            C z[4] = {y[0][c], y[1][c], y[2][c], y[3][c]};
            dft<4, S>::run(z);
#pragma unroll
            for (int d = 0; d < 4; d++)
                v[c + 4 * d] = z[d];
        }
    }
};

// a scaled by f in double, rounded back to a's precision
template <typename C> __device__ __forceinline__ C lf_scaled(C a, double f)
{
    using T = decltype(C::x);
    return cpx((T)(a.x * f), (T)(a.y * f));
}

// exp(-2 pi i k / n) in C's precision
__device__ __forceinline__ void lf_twiddle(int k, int n, float2 &w)
{
    sincospif(-2.0f * k / n, &w.y, &w.x);
}
__device__ __forceinline__ void lf_twiddle(int k, int n, double2 &w)
{
    sincospi(-2.0 * k / n, &w.y, &w.x);
}

// Columns of points (or the twiddle table) in shared memory: float2 points as they are;
// double2 points as two arrays of doubles im apart (real parts, then imaginary), so that each
// shared access moves 8 bytes a thread, the accesses the layouts' bank model (lf_at) is
// built on. at(base, first, count): count points from point `first` of the block's dynamic
// shared memory on.
template <typename C> struct lf_mem;
template <> struct lf_mem<float2> {
    float2 *p;
    static __device__ __forceinline__ lf_mem at(float2 *base, int first, int count)
    {
        return {base + first};
    }
    __device__ __forceinline__ lf_mem plus(int o) const { return {p + o}; }
    __device__ __forceinline__ float2 get(int i) const { return p[i]; }
    __device__ __forceinline__ void put(int i, float2 v) const { p[i] = v; }
};
template <> struct lf_mem<double2> {
    double *p;
    int im;
    static __device__ __forceinline__ lf_mem at(float2 *base, int first, int count)
    {
        return {(double *)base + 2 * first, count};
    }
    __device__ __forceinline__ lf_mem plus(int o) const { return {p + o, im}; }
    __device__ __forceinline__ double2 get(int i) const { return make_double2(p[i], p[i + im]); }
    __device__ __forceinline__ void put(int i, double2 v) const { p[i] = v.x, p[i + im] = v.y; }
};

// Point z's scaling factor: norm / (exy + lam[z]) (0 where that is 0), in double as the
// diagonal operator does, as norm times the reciprocal (within an ulp of the quotient: a
// division's slow path is a call, which would spill the points the thread holds); exy: the
// other two eigenvalues less alpha.
__device__ __forceinline__ double lf_factor(double exy, const double *laml, int z, double norm)
{
    double den = exy + __ldg(&laml[z]);
    return den == 0.0 ? 0.0 : norm * __drcp_rn(den);
}

// Points j + r N / R (r < R) of a column in layout l, the input of butterfly j of a radix-R
// stage, into x.
template <int N, int R, typename C>
__device__ __forceinline__ void lf_read(lf_mem<C> col, lf_layout l, int j, C *x)
{
    int p = lf_at(j, l); // j < N / R
#pragma unroll
    for (int r = 0; r < R; r++)
        x[r] = col.get(lf_at_plus(p, r * (N / R), l));
}

// Butterfly j of a radix-R stage on its points x (lf_read's), in place; Ns: the product of
// the earlier stages' radices. Output r belongs at point d + r Ns, d = (j - k) R + k,
// k = j mod Ns. Point r's twiddle is w^r, w = exp(S 2 pi i k / (Ns R)): one table read (the
// table padded, lf_pad), its powers by products (at most four deep); the first stage (Ns = 1)
// has none.
template <int N, int R, int S, typename C>
__device__ __forceinline__ void lf_butterfly(C *x, lf_mem<C> tw, int j, int Ns)
{
    if (Ns > 1) {
        C w[R];
        w[1] = tw.get(lf_pad((j & (Ns - 1)) * (N / (Ns * R))));
        w[1].y = S < 0 ? w[1].y : -w[1].y;
#pragma unroll
        for (int r = 2; r < R; r++)
            w[r] = r % 2 ? mul(w[r - 1], w[1]) : mul(w[r / 2], w[r / 2]);
#pragma unroll
        for (int r = 1; r < R; r++)
            x[r] = mul(x[r], w[r]);
    }
    dft<R, S>::run(x);
}

// Butterflies j = jt + b TPC (b < BF = N / R / TPC) of a radix-R stage of a column of N points
// in shared memory (in layout l), read into v and run there.
template <int N, int R, int S, int TPC, typename C>
__device__ __forceinline__ void lf_butterflies(lf_mem<C> col, lf_layout l, lf_mem<C> tw, int jt,
                                               int Ns, C (*v)[R])
{
#pragma unroll
    for (int b = 0; b < N / R / TPC; b++) {
        lf_read<N, R>(col, l, jt + b * TPC, v[b]);
        lf_butterfly<N, R, S>(v[b], tw, jt + b * TPC, Ns);
    }
}

// One radix-R stage of a column of N points in shared memory (in place: read in layout in,
// barrier, write in layout out, barrier); this thread's butterflies j = jt, jt + TPC, ...
template <int N, int R, int S, int TPC, typename C>
__device__ __forceinline__ void lf_stage(lf_mem<C> col, lf_layout in, lf_layout out,
                                         lf_mem<C> tw, int jt, int Ns)
{
    constexpr int BF = N / R / TPC;
    C v[BF][R];
    lf_butterflies<N, R, S, TPC>(col, in, tw, jt, Ns, v);
    __syncthreads();
#pragma unroll
    for (int b = 0; b < BF; b++) {
        int j = jt + b * TPC, k = j & (Ns - 1), p = lf_at((j - k) * R + k, out);
#pragma unroll
        for (int r = 0; r < R; r++)
            col.put(lf_at_plus(p, r * Ns, out), v[b][r]);
    }
    __syncthreads();
}

__host__ __device__ constexpr int lf_log2(int n) { return n > 1 ? 1 + lf_log2(n / 2) : 0; }

// A block: COLS columns of N points, TPC threads each (P points a thread), CS apart (lf_at); the
// twiddle table's PADN entries; THREADS a block, BLOCKS an SM, which the registers bound (64 a
// thread at 1024 threads an SM, 85 at three blocks of 256). P is 16 where that takes a stage
// fewer, two trips through shared memory fewer, than 8 (128: 16 x 8, 1024: 16 x 8 x 8); at
// 32 .. 512 and 2048 the stages are as many either way (at 16, a column a thread, they would
// not be: not tried). A block holds at least WIDE columns, 32 bytes of each plane it reads
// (in float four; two, 16 bytes, cost a fifth more at 1024), so at 2048 it has 1024 threads; 16
// points a thread there, in blocks of 512 (92 registers, stages 16 x 8 x 8 x 2), ran 2-4%
// slower on an H200. Double points (C = double2) take twice the registers: 8 points a thread
// at every N, 512 threads an SM (at most 128 registers a thread; 56-96 used, no spills),
// blocks of 256 threads, or of 512 at 2048 (two columns, again 32 bytes of each plane).
template <typename C, int N> struct lf_shape { // N: 8 .. 2048 (tide_gpu_line_fft_ok)
    static constexpr bool DBL = sizeof(C) == 16;
    static constexpr int P = !DBL && (N == 1024 || N == 128) ? 16 : 8, TPC = N / P,
                         WIDE = 32 / (int)sizeof(C), // columns that make 32 bytes a plane
                         THREADS = std::max(P == 16 || DBL ? 256 : 512, WIDE * TPC),
                         BLOCKS = P == 16 ? 3 : (DBL ? 512 : 1024) / THREADS,
                         COLS = THREADS / TPC, PADN = N + N / 8, CS = N + 1;
    static size_t smem() { return (size_t)(COLS * CS + PADN) * sizeof(C); }
};

// The stages of a column's FFT of N points: the first of radix P, A of radix 8 (stage s: Ns =
// P 8^(s - 1)), then one of radix LAST_R = 2 or 4 where log2 (N / P) is not a multiple of 3
// (STAGES in all). The forward's first stage, the turn and the inverse's last run outside
// these (line_fft_kernel); these are the stages between, all in shared memory.
template <typename C, int N> struct lf_stages {
    using sh = lf_shape<C, N>;
    static constexpr int P = sh::P, A = (lf_log2(N) - lf_log2(P)) / 3,
                         B = (lf_log2(N) - lf_log2(P)) % 3, STAGES = 1 + A + (B != 0),
                         LAST_R = B == 0 ? 8 : B == 1 ? 2 : 4;
    // The layouts (lf_at): first() written by the first stage in the loads' thread map and
    // read by the next; last() written by the stage before the last and read by the last in
    // the loads' map; inner() the others. rs: the rotation the stages' map needs where a half
    // warp spans several columns (TPC < 16); lc: the one the loads' map needs (COLS < 16; any
    // where COLS >= 16, the half warp's 16 columns being N + 1 apart). first() rotates by -lc
    // before the exclusive-or and by rs + lc after it (the first stage's writes, 16 / COLS
    // butterflies' P points in COLS columns a half warp, then spread over the 16 places; lc
    // itself leaves two columns four ways in conflict). last(), where it is also the turn's
    // (COLS >= 16, TPC < 16: the half warp 16 / TPC columns of TPC threads writing P
    // consecutive points each), rotates by rs + 4 - log2 P. tools/line-fft-banks models every
    // shared access of the kernel and finds these rules free of conflicts at every N and
    // precision.
    static __device__ __forceinline__ constexpr int rs()
    {
        return sh::TPC < 16 ? 4 - lf_log2(sh::TPC) : 0;
    }
    static __device__ __forceinline__ constexpr int lc() { return lf_log2(sh::COLS) % 4; }
    static __device__ __forceinline__ constexpr lf_layout rotated(int a, int b)
    {
        return {a, b, P == 16};
    }
    static __device__ __forceinline__ constexpr lf_layout first()
    {
        return rotated((4 - lc()) % 4, (rs() + lc()) % 4);
    }
    static __device__ __forceinline__ constexpr lf_layout inner() { return rotated(0, rs()); }
    static __device__ __forceinline__ constexpr lf_layout last()
    {
        return rotated(0, sh::COLS >= 16 && sh::TPC < 16 ? (rs() + 4 - lf_log2(P)) % 4 : lc());
    }
    // the layout of the column's g-th writing: 0 the first stage's, STAGES - 1 the turn's,
    // 2 STAGES - 3 the one the last stage reads
    static __device__ __forceinline__ constexpr lf_layout written(int g)
    {
        return g == 0 ? first() : g == 2 * STAGES - 3 ? last() : inner();
    }
    // the forward's stages after the first, its last (the turn's) excepted: Ns = P .. N / 64
    // (B = 0) or N / 8 / LAST_R
    static __device__ __forceinline__ void forward_middle(lf_mem<C> col, lf_mem<C> tw, int jt)
    {
#pragma unroll
        for (int s = 1, Ns = P; s < STAGES - 1; s++, Ns *= 8)
            lf_stage<N, 8, -1, sh::TPC>(col, written(s - 1), written(s), tw, jt, Ns);
    }
    // the inverse's stages after the first (the turn's), its last excepted: the same Ns
    static __device__ __forceinline__ void inverse_middle(lf_mem<C> col, lf_mem<C> tw, int jt)
    {
#pragma unroll
        for (int s = 1, Ns = P; s < STAGES - 1; s++, Ns *= 8)
            lf_stage<N, 8, 1, sh::TPC>(col, written(STAGES - 2 + s), written(STAGES - 1 + s),
                                       tw, jt, Ns);
    }
};

// The turn (STAGES > 1): the forward's last stage (radix R, Ns = N / R) on this thread's
// butterflies j = jt + b TPC, whose outputs j + r Ns are the points jt + i TPC (i = b + r P / R
// < P), the inputs of the inverse's first butterfly jt (radix P, Ns = 1); in between each
// point z is scaled (lf_factor, the column's exy). Point 0 of the forward's output (thread
// jt = 0: the column's mode 0, for the mean's sum) into zero. In place: read in layout in,
// barrier, write in layout out, barrier.
template <int N, int R, typename C>
__device__ __forceinline__ void lf_turn(lf_mem<C> col, lf_layout in, lf_layout out,
                                        lf_mem<C> tw, int jt, double exy, const double *laml,
                                        double norm, C &zero)
{
    constexpr int P = lf_shape<C, N>::P, TPC = lf_shape<C, N>::TPC;
    C v[P / R][R], x[P];
    lf_butterflies<N, R, -1, TPC>(col, in, tw, jt, N / R, v);
    zero = v[0][0];
#pragma unroll
    for (int b = 0; b < P / R; b++)
#pragma unroll
        for (int r = 0; r < R; r++) {
            int i = b + r * (P / R);
            x[i] = lf_scaled(v[b][r], lf_factor(exy, laml, jt + i * TPC, norm));
        }
    lf_butterfly<N, P, 1>(x, tw, jt, 1);
    __syncthreads();
    int p = lf_at(P * jt, out);
#pragma unroll
    for (int r = 0; r < P; r++)
        col.put(lf_at_plus(p, r, out), x[r]);
    __syncthreads();
}

// The inverse's last stage (radix R, Ns = N / R) in the load's thread map: butterflies
// j = lz + b TPC of column col (in layout in), whose outputs j + r Ns are its points lz + i
// TPC (i < P), stored straight into the line at `at` (where ok).
template <int N, int R, typename C>
__device__ __forceinline__ void lf_last_store(lf_mem<C> col, lf_layout in, lf_mem<C> tw, int lz,
                                              C *at, int64_t sl, bool ok)
{
    constexpr int TPC = lf_shape<C, N>::TPC, Ns = N / R;
    C v[Ns / TPC][R];
    lf_butterflies<N, R, 1, TPC>(col, in, tw, lz, Ns, v);
#pragma unroll
    for (int b = 0; b < Ns / TPC; b++)
#pragma unroll
        for (int r = 0; r < R; r++)
            if (ok)
                at[(int64_t)(lz + b * TPC + r * Ns) * sl] = v[b][r];
}

// Point 0 of line c of field blockIdx.y of data (of line 0 where c is past the last).
template <typename C>
__device__ __forceinline__ C *line_start(C *data, const line_geom &g, int64_t c)
{
    c = c < g.lines ? c : 0;
    return data + blockIdx.y * g.fs + (c / g.eq) * g.sp + (c % g.eq) * g.sq;
}

// Line c's mode 0 (point 0 of the forward's output) times its weight in the mean's sum, added
// to origin (the field's entry).
template <typename C>
__device__ __forceinline__ void lf_mean(const line_geom &g, int64_t c, C zero, double *origin)
{
    int64_t p = c / g.eq, q = c % g.eq;
    double w = weight(g.wp, g.lop + (int)p) * weight(g.wq, g.loq + (int)q);
    if (w != 0.0) {
        atomicAdd(&origin[0], w * zero.x);
        atomicAdd(&origin[1], w * zero.y);
    }
}

// Field blockIdx.y of data (its origin entry 2 blockIdx.y on), columns COLS blockIdx.x on.
// The data passes through shared memory between the forward's first stage and the inverse's
// last, which run on the points in registers: thread t loads points t / COLS + i TPC (i < P)
// of column t % COLS, the inputs of the first stage's butterfly t / COLS (neighbouring
// threads on neighbouring columns: each plane's loads coalesce, all P in flight at once), and
// the last stage's butterflies in the same map end with the same points, which it stores.
template <typename C, int N>
__global__ void __launch_bounds__(lf_shape<C, N>::THREADS, lf_shape<C, N>::BLOCKS)
    line_fft_kernel(C *data, line_geom g, double alpha, double norm, double *origin)
{
    using sh = lf_shape<C, N>;
    using st = lf_stages<C, N>;
    constexpr int P = sh::P, TPC = sh::TPC, COLS = sh::COLS, CS = sh::CS;
    extern __shared__ float2 lf_dyn[];
    lf_mem<C> tw = lf_mem<C>::at(lf_dyn, 0, sh::PADN),
              s = lf_mem<C>::at(lf_dyn, sh::PADN, COLS * CS);
    int t = threadIdx.x;
    for (int i = t; i < N; i += blockDim.x) {
        C w;
        lf_twiddle(i, N, w);
        tw.put(lf_pad(i), w);
    }
    // the stages in shared memory and the turn: thread t on butterflies t % TPC,
    // t % TPC + TPC, ... of column t / TPC
    int64_t c0 = (int64_t)blockIdx.x * COLS;
    int col = t / TPC, jt = t % TPC;
    int64_t cc = c0 + col;
    bool mine = cc < g.lines;
    int lc = t % COLS, lz = t / COLS;
    bool ok = c0 + lc < g.lines;
    C *at = line_start(data, g, c0 + lc);
    C v[P];
#pragma unroll
    for (int i = 0; i < P; i++)
        v[i] = ok ? at[(int64_t)(lz + i * TPC) * g.sl] : C{};
    lf_butterfly<N, P, -1>(v, tw, lz, 1);
    if constexpr (st::STAGES > 1) {
        lf_mem<C> cl = s.plus(lc * CS);
        int p = lf_at(P * lz, st::first());
#pragma unroll
        for (int r = 0; r < P; r++)
            cl.put(lf_at_plus(p, r, st::first()), v[r]);
    }
    double exy = mine ? g.lamp[g.lop + cc / g.eq] + g.lamq[g.loq + cc % g.eq] - alpha : 1.0;
    if constexpr (st::STAGES == 1) { // N = 8: a thread a column (lz = jt = 0, lc = col)
        static_assert(P == 8 && st::LAST_R == 8, "one stage: the first is the last");
        if (mine)
            lf_mean(g, cc, v[0], origin + 2 * blockIdx.y);
#pragma unroll
        for (int z = 0; z < 8; z++)
            v[z] = lf_scaled(v[z], lf_factor(exy, g.laml, z, norm));
        lf_butterfly<N, 8, 1>(v, tw, 0, 1);
#pragma unroll
        for (int z = 0; z < 8; z++)
            if (ok)
                at[z * g.sl] = v[z];
    } else {
        __syncthreads();
        lf_mem<C> cp = s.plus(col * CS);
        C zero;
        st::forward_middle(cp, tw, jt);
        lf_turn<N, st::LAST_R>(cp, st::written(st::STAGES - 2), st::written(st::STAGES - 1), tw,
                               jt, exy, g.laml, norm, zero);
        if (jt == 0 && mine)
            lf_mean(g, cc, zero, origin + 2 * blockIdx.y);
        st::inverse_middle(cp, tw, jt);
        lf_last_store<N, st::LAST_R>(s.plus(lc * CS), st::last(), tw, lz,
                                     line_start(data, g, c0 + lc), g.sl, ok);
    }
}

template <typename C, int N>
cudaError_t launch_line_fft(C *data, const line_geom &g, int batch, double alpha, double norm,
                            double *origin, cudaStream_t stream)
{
    using sh = lf_shape<C, N>;
    cudaError_t e = cudaFuncSetAttribute(line_fft_kernel<C, N>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)sh::smem());
    int64_t blocks = (g.lines + sh::COLS - 1) / sh::COLS;
    for (int f0 = 0; f0 < batch && e == cudaSuccess; f0 += 65535) {
        dim3 grid((unsigned)blocks, (unsigned)std::min(batch - f0, 65535));
        line_fft_kernel<C, N><<<grid, sh::THREADS, sh::smem(), stream>>>(
            data + f0 * g.fs, g, alpha, norm, origin + 2 * (size_t)f0);
        e = cudaGetLastError();
    }
    return e;
}

// The line transforms of C points on the box within d's array; origin: the entry of d's
// first field.
template <typename C>
cudaError_t line_ffts_of(const tide_spectral *d, void *data, double *origin, cudaStream_t stream)
{
    line_geom g = line_geometry(d);
    C *v = (C *)data + g.at;
    int b = d->batch;
    double a = d->alpha, n = d->norm;
    switch (g.n) {
    case 8: return launch_line_fft<C, 8>(v, g, b, a, n, origin, stream);
    case 16: return launch_line_fft<C, 16>(v, g, b, a, n, origin, stream);
    case 32: return launch_line_fft<C, 32>(v, g, b, a, n, origin, stream);
    case 64: return launch_line_fft<C, 64>(v, g, b, a, n, origin, stream);
    case 128: return launch_line_fft<C, 128>(v, g, b, a, n, origin, stream);
    case 256: return launch_line_fft<C, 256>(v, g, b, a, n, origin, stream);
    case 512: return launch_line_fft<C, 512>(v, g, b, a, n, origin, stream);
    case 1024: return launch_line_fft<C, 1024>(v, g, b, a, n, origin, stream);
    case 2048: return launch_line_fft<C, 2048>(v, g, b, a, n, origin, stream);
    }
    return cudaErrorInvalidValue; // tide_gpu_line_fft_ok said no
}

cudaError_t line_ffts(const tide_spectral *d, void *data, double *origin, cudaStream_t stream)
{
    return d->dbl ? line_ffts_of<double2>(d, data, origin, stream)
                  : line_ffts_of<float2>(d, data, origin, stream);
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
        e = d->line < 0  ? diag(d, data, origin, st)
            : d->line_fft ? line_ffts(d, data, origin, st)
                          : line_solves(d, data, origin, st);
    return e == cudaSuccess ? 0
                            : tide_gpu_note_error(d->line < 0    ? "eigenvalue scaling kernel"
                                                  : d->line_fft ? "line transform kernel"
                                                                : "tridiagonal solve kernel",
                                                  cudaGetErrorString(e), (int)e);
}

extern "C" int tide_gpu_line_fft_ok(int n, int dbl)
{
    (void)dbl;
    return n >= 8 && n <= 2048 && (n & (n - 1)) == 0;
}
