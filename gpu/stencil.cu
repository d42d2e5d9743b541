// stencil.cu: the stencil sweeps of the CUDA backend (backend.h's tide_sweep; gpu/stencil.h).
//
// A sweep does `steps` time steps of a constant-coefficient stencil from src into dst (two
// distinct arrays holding the whole grid, in storage order: n[0] the slowest dimension, whose
// planes we stream, n[2] the fastest). Four kernels, all computing every update in the
// contract's order (backend.h) with explicit roundings, so the results are bitwise those of the
// CPU loop however the steps are grouped:
//
//  - sweep_one<T, S>: one step, the reference and the fallback. A thread per point of the
//    (n[1], n[2]) plane, marching along ONE_Z planes of n[0] (the planes it and its neighbours
//    read stay in L1); the built-in stencils' taps are compiled in (S), any other list is read
//    from device memory; the neighbours' indices wrapped along periodic dimensions.
//
//  - sweep_generic<T, R>: `steps` >= 2 steps in one pass over memory for any taps of radius R
//    (in any order, up to 729), by the plane streaming of backend.h. A block owns an output
//    tile of TX x TY points of the plane and a chunk [z0, z1) of planes. Level t (the data after
//    t steps) is computed on the tile grown by (K - t) R on each side (the halo, computed
//    redundantly by the neighbouring blocks too), and on the planes [z0 - (K - t) R,
//    z1 + (K - t) R). Planes enter in order: at pipeline step j level 0 loads plane
//    z0 - K R + j from src (prefetched into registers one step ahead, so the loads of the next
//    plane overlap this step's arithmetic), then level t = 1 .. K computes its plane
//    q = z0 - K R + j - t R from the 2 R + 1 planes q - R .. q + R that level t - 1 keeps in a
//    ring in shared memory, and level K writes its plane to dst. One __syncthreads separates
//    the levels (K per pipeline step).
//
//  - sweep_fast<T, Taps, K, TY, MY>: the same pipeline, with the tap list known at compile time
//    (the built-in 27-point stencil in the storage order of tide's Fortran layout, its taps
//    not sorted by dz) and K a template parameter, so each level's state lives in registers.
//    A thread owns a column strip of MY rows at a fixed x in every level's tile and keeps,
//    across pipeline steps:
//      * the values of level t - 1 in its own column for the planes still needed (so for a
//        7-point update each plane of the own column is read from shared memory once, and of
//        the neighbours only the two along x and, at the strip's ends, those along y);
//      * the partial sums of the updates in progress: the taps of an update are applied as soon
//        as every tap before them in the list can be (each at the arrival of the plane of the
//        largest dz so far).
//    The schedule (which tap at which arrival, which value from registers, how deep the rings)
//    is computed at compile time from the tap list (struct sched).
//
//  - sweep_relay<T, Taps, K, RY, NW, VEC>: the same pipeline for the built-in 7-point stencils
//    (both orders) and the 27-point stencil in C order (taps sorted by dz), one barrier per
//    pipeline step instead of K: each level hands its plane to the next through a
//    double-buffered shared plane, a lane owns four consecutive columns (moved as one vector)
//    and the x neighbours come by warp shuffles; the 27-point update is three groups of nine
//    taps, one per plane, carried as partial sums from plane to plane (see its section).
//
// Tiles and chunks: a block's threads are 64 lanes along x (a warp reads 32 consecutive elements
// of a row: no bank conflicts) times rows of strips of MY rows. Level 1's tile is 64 wide, so
// TX = 64 - 2 (K - 1) R; TY is the fast kernels' fast_tile (the most rows whose per-thread state
// fits the registers without spilling) or generic_entry's (the most rows whose rings fit shared
// memory). The slowest dimension is cut into chunks by plan_chunks (waves of blocks x planes a
// block streams), and blocks run chunk-major so that neighbouring tiles, which share halos,
// are resident together and find them in L2.
//
// Views and windows (backend.h): the arrays are indexed with the sweep's pitches, so a sweep
// may run on a box of a larger array, and its tiles and chunks cover its out window alone
// (along n2 from the window's first column rounded down to a multiple of 4); level K's points
// outside the window are computed with the tile but not written.
//
// Boundaries: a point within R of a face of a non-periodic dimension keeps its value (the value
// in src, which the sweep never changes: kept points are copied from src); points of a halo
// beyond a non-periodic face do not exist (zeros, never read into a result); along periodic
// dimensions the halos hold the wrapped planes, rows and columns (a halo can wrap more than
// once around a short dimension: indices are reduced with a true modulo).
#include <climits>
#include <cstdint>
#include <cstdio>
#include <new>
#include <utility>
#include <cuda_runtime.h>
#include "gpu/device.h"
#include "gpu/stencil.h"
extern "C" {
#include "backend/backend.h"
}

namespace {

// ---- Arithmetic of an update (backend.h): a rounded product, fused multiply-adds, a rounded
// sum for the source; explicit intrinsics so that nvcc does not contract or reassociate.
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float fma_rn(float a, float b, float c) { return __fmaf_rn(a, b, c); }
__device__ __forceinline__ double fma_rn(double a, double b, double c) { return __fma_rn(a, b, c); }
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }

__host__ __device__ constexpr int imin(int a, int b) { return a < b ? a : b; }
__host__ __device__ constexpr int imax(int a, int b) { return a > b ? a : b; }
// i modulo n in [0, n), for any sign of i (a halo may wrap more than once around a short
// dimension).
__host__ __device__ __forceinline__ int wrap(int i, int n)
{
    int m = i % n;
    return m < 0 ? m + n : m;
}

// Compile-time loops: f(cint<0>{}), ..., f(cint<N - 1>{}), each index a constant expression, so
// that register arrays are indexed at compile time and `if constexpr` prunes the schedule.
template <int I>
struct cint {
    static constexpr int value = I;
    __host__ __device__ constexpr operator int() const { return I; }
};
template <int... I, class F>
__device__ __forceinline__ void static_for_(std::integer_sequence<int, I...>, F &&f)
{
    (f(cint<I>{}), ...);
}
template <int N, class F>
__device__ __forceinline__ void static_for(F &&f)
{
    static_for_(std::make_integer_sequence<int, N>{}, static_cast<F &&>(f));
}

// Hides a value from the optimizer: what the pipeline loops derive from the block's and thread's
// coordinates (addresses, masks) is then recomputed in every step, where it is cheap, instead of
// hoisted out of the loop and kept in registers, which the unrolled levels need for their state.
__device__ __forceinline__ int opaque(int v)
{
    asm volatile("" : "+r"(v));
    return v;
}
__device__ __forceinline__ unsigned opaque(unsigned v)
{
    asm volatile("" : "+r"(v));
    return v;
}
__device__ __forceinline__ int64_t opaque(int64_t v)
{
    asm volatile("" : "+l"(v));
    return v;
}

// ---- What every kernel gets -----------------------------------------------------------------

// Point kinds: updated, kept (a boundary point: its value in src), or outside a non-periodic
// grid (a halo point that does not exist).
constexpr int PT_UPDATE = 0, PT_KEEP = 1, PT_OUTSIDE = 2;

template <typename T>
struct sweep_args {
    const T *src;
    T *dst;
    const T *source;        // NULL or laid out like the data
    int n0, n1, n2;         // storage order, n0 slowest
    int per0, per1, per2;   // periodic flags
    int radius;
    int64_t plane, row;     // elements from a plane to the next, a row to the next
    // Fused kernels: steps, tile (TX along n2, TY along n1), tiles along n2 and n1, chunk
    // length along n0.
    int k, tx, ty, ntx, nty, zlen;
    // The points written (tide_sweep's out window): [zlo, zhi) along n0 (the chunks cover
    // them), [ylo, yhi) along n1, [xlo, xhi) along n2. The tiles start at row ylo and column
    // xb, xlo rounded down to a multiple of 4 (sweep_relay's vectors stay aligned).
    int zlo, zhi, ylo, yhi, xlo, xhi, xb;
    // sweep_relay: n2, the pitches and the window's columns are multiples of 4 and src, dst
    // and source are 16-byte aligned, so a lane's four columns can move as vectors.
    int vec;
    // sweep_one and sweep_generic: the taps in device memory, (dz, dy, dx, R - dz) and w.
    int ntaps;
    const int4 *off;
    const T *w;
};

// The weights of a compile-time tap list, passed by value (they end up in the constant bank,
// an operand of the multiply-adds).
template <typename T, int N>
struct tap_weights {
    T w[N];
};

// A compile-time tap list's weights from the plan's (in double) rounded to the data's precision.
template <typename T, int N>
tap_weights<T, N> weights_of(const double *wh, int n)
{
    tap_weights<T, N> w = {};
    for (int i = 0; i < n; i++)
        w.w[i] = (T)wh[i];
    return w;
}

__device__ __forceinline__ int zkind(int q, int n0, int per0, int R)
{
    if (per0)
        return PT_UPDATE;
    if (q < 0 || q >= n0)
        return PT_OUTSIDE;
    return q < R || q >= n0 - R ? PT_KEEP : PT_UPDATE;
}

// Element offset of plane q (wrapped along a periodic n0; 0 for a plane outside the grid).
__device__ __forceinline__ int64_t zoffset(int q, int n0, int per0, int64_t plane)
{
    if (per0)
        return (int64_t)wrap(q, n0) * plane;
    return q >= 0 && q < n0 ? (int64_t)q * plane : 0;
}

// A block of a fused kernel: its tile and chunk, and how its level-0 region (the tile grown by
// K R on each side: H0 rows x W0 columns) maps to the grid. A "flat" block's region lies in the
// grid away from every non-periodic face (rows and columns need no wrap and hold no kept or
// missing points), so its offsets are linear; other blocks use the tables.
struct tile_ctx {
    int gx0, gy0, z0, z1, a0;  // tile origin (n2, n1), chunk [z0, z1), a0 = z0 - K R
    int flat;
    int64_t lin0;              // flat: in-plane offset of region element (0, 0)

    __device__ __forceinline__ tile_ctx opaque_copy() const
    {
        tile_ctx o = *this;
        o.gx0 = opaque(gx0), o.gy0 = opaque(gy0), o.a0 = opaque(a0), o.flat = opaque(flat);
        o.lin0 = opaque(lin0);
        return o;
    }
};

// Shared-memory tables of the region's rows and columns: in-plane offsets (wrapped along
// periodic dimensions; -1 outside the grid) and kinds.
struct tables {
    int64_t *rowoff;
    int *colidx;
    signed char *rowk, *colk;
};

__host__ __device__ constexpr size_t align16(size_t b) { return (b + 15) & ~(size_t)15; }
__host__ __device__ constexpr size_t table_bytes(int H0, int W0)
{
    return align16((size_t)H0 * 8 + (size_t)W0 * 4 + (size_t)H0 + (size_t)W0);
}

__device__ __forceinline__ tables tables_at(unsigned char *smem, int H0, int W0)
{
    tables tb;
    tb.rowoff = (int64_t *)smem;
    tb.colidx = (int *)(smem + (size_t)H0 * 8);
    tb.rowk = (signed char *)(smem + (size_t)H0 * 8 + (size_t)W0 * 4);
    tb.colk = tb.rowk + H0;
    return tb;
}

// This block's tile and chunk (blocks run chunk-major: the blocks resident together work on
// neighbouring tiles of the same planes, whose halos they share through L2).
template <typename T>
__device__ __forceinline__ tile_ctx tile_of(const sweep_args<T> &a, int TX, int TY, int KR)
{
    tile_ctx c;
    const int tiles = a.ntx * a.nty, b = (int)blockIdx.x;
    const int chunk = b / tiles, rest = b - chunk * tiles, by = rest / a.ntx;
    c.gx0 = a.xb + (rest - by * a.ntx) * TX;
    c.gy0 = a.ylo + by * TY;
    c.z0 = a.zlo + chunk * a.zlen;
    c.z1 = imin(a.zhi, c.z0 + a.zlen);
    c.a0 = c.z0 - KR;
    const int R = a.radius;
    const int ylo = c.gy0 - KR, yhi = c.gy0 + TY + KR, xlo = c.gx0 - KR, xhi = c.gx0 + TX + KR;
    const bool fy = a.per1 ? ylo >= 0 && yhi <= a.n1 : ylo >= R && yhi <= a.n1 - R;
    const bool fx = a.per2 ? xlo >= 0 && xhi <= a.n2 : xlo >= R && xhi <= a.n2 - R;
    c.flat = fy && fx;
    c.lin0 = (int64_t)ylo * a.row + xlo;
    return c;
}

template <typename T>
__device__ void build_tables(const sweep_args<T> &a, const tile_ctx &c, int KR, int H0, int W0,
                             const tables &tb)
{
    const int R = a.radius;
    for (int i = threadIdx.x; i < H0; i += blockDim.x) {
        const int gy = c.gy0 - KR + i;
        int64_t off = -1;
        int k = PT_OUTSIDE;
        if (a.per1)
            off = (int64_t)wrap(gy, a.n1) * a.row, k = PT_UPDATE;
        else if (gy >= 0 && gy < a.n1)
            off = (int64_t)gy * a.row, k = gy < R || gy >= a.n1 - R ? PT_KEEP : PT_UPDATE;
        tb.rowoff[i] = off;
        tb.rowk[i] = (signed char)k;
    }
    for (int i = threadIdx.x; i < W0; i += blockDim.x) {
        const int gx = c.gx0 - KR + i;
        int off = -1, k = PT_OUTSIDE;
        if (a.per2)
            off = wrap(gx, a.n2), k = PT_UPDATE;
        else if (gx >= 0 && gx < a.n2)
            off = gx, k = gx < R || gx >= a.n2 - R ? PT_KEEP : PT_UPDATE;
        tb.colidx[i] = off;
        tb.colk[i] = (signed char)k;
    }
}

// In-plane offset of region element (y0, x0) (a point that exists).
template <typename T>
__device__ __forceinline__ int64_t goff(const sweep_args<T> &a, const tile_ctx &c,
                                        const tables &tb, int y0, int x0)
{
    return c.flat ? c.lin0 + (int64_t)y0 * a.row + x0 : tb.rowoff[y0] + tb.colidx[x0];
}

// Level 0: one plane of the region (W0 x H0, stored with pitch W0) from src, EL elements per
// thread (element e = tid + i NT), fetched into registers a pipeline step before they are stored
// into the ring, so that the global loads' latency hides behind a step of arithmetic.
template <typename T, int EL, int NT>
struct plane_loader {
    T v[EL];

    __device__ __forceinline__ void init()
    {
#pragma unroll
        for (int i = 0; i < EL; i++)
            v[i] = T(0);
    }

    // Plane p (unwrapped index) of src: zeros for a plane outside a non-periodic grid and for
    // region points outside it.
    __device__ __forceinline__ void fetch(const sweep_args<T> &a, const tile_ctx &c,
                                          const tables &tb, int p, int W0, int count)
    {
        const bool zin = a.per0 || (p >= 0 && p < a.n0);
        const T *s = a.src + zoffset(p, a.n0, a.per0, a.plane);
        // (row, column) of element tid, and the step NT = dr W0 + dc between a thread's
        // elements (constants in the fast kernels, where W0 is).
        const int dr = NT / W0, dc = NT - dr * W0;
        int r = (int)threadIdx.x / W0, col = (int)threadIdx.x - r * W0;
#pragma unroll
        for (int i = 0; i < EL; i++) {
            T x = T(0);
            if (zin && (int)threadIdx.x + i * NT < count) {
                if (c.flat) {
                    x = __ldg(s + c.lin0 + (int64_t)r * a.row + col);
                } else {
                    const int64_t ro = tb.rowoff[r];
                    const int ci = tb.colidx[col];
                    if (ro >= 0 && ci >= 0)
                        x = __ldg(s + ro + ci);
                }
            }
            v[i] = x;
            r += dr, col += dc;
            if (col >= W0)
                col -= W0, r++;
        }
    }

    __device__ __forceinline__ void store(T *plane, int count) const
    {
#pragma unroll
        for (int i = 0; i < EL; i++) {
            const int e = (int)threadIdx.x + i * NT;
            if (e < count)
                plane[e] = v[i];
        }
    }
};

// The value a finished point may need from memory, loaded before the update's arithmetic so
// that the load's latency overlaps it: the source term of an updated point, or the value in src
// of a kept point. Region element (y0, x0), plane offset zoff.
template <typename T>
__device__ __forceinline__ T point_extra(const sweep_args<T> &a, const tile_ctx &c,
                                         const tables &tb, int kind, int64_t zoff, int y0,
                                         int x0)
{
    if (kind == PT_UPDATE && a.source)
        return __ldg(a.source + zoff + goff(a, c, tb, y0, x0));
    if (kind == PT_KEEP)
        return __ldg(a.src + zoff + goff(a, c, tb, y0, x0));
    return T(0);
}

// The kind of strip row m given the bit masks of kept points and points outside the grid.
__device__ __forceinline__ int point_kind(unsigned keep, unsigned gone, int m)
{
    return (gone >> m & 1) ? PT_OUTSIDE : (keep >> m & 1) ? PT_KEEP : PT_UPDATE;
}

// The finished value: the update (plus the source), the kept value, or 0 outside the grid.
template <typename T>
__device__ __forceinline__ T point_value(const sweep_args<T> &a, int kind, T acc, T extra)
{
    if (kind == PT_UPDATE)
        return a.source ? add_rn(acc, extra) : acc;
    return kind == PT_KEEP ? extra : T(0);
}

// Compile-time tap lists: off(i, d) is tap i's offset along storage dimension d (0: dz, the
// streamed one; 1: dy; 2: dx). They are tide's built-in stencils as the C side lists them in
// storage order for a C-order grid (dimension 0 slowest) and for the reversed order.
struct taps_7c {  // centre, -d0, +d0, -d1, +d1, -d2, +d2
    static constexpr int n = 7, radius = 1;
    __host__ __device__ static constexpr int off(int i, int d)
    {
        return i == 0 || (i - 1) / 2 != d ? 0 : (i & 1) ? -1 : 1;
    }
};
struct taps_7f {  // centre, -d2, +d2, -d1, +d1, -d0, +d0
    static constexpr int n = 7, radius = 1;
    __host__ __device__ static constexpr int off(int i, int d)
    {
        return i == 0 || 2 - (i - 1) / 2 != d ? 0 : (i & 1) ? -1 : 1;
    }
};
struct taps_27c {  // the 3x3x3 box, d0 slowest: tap 9 (d0 + 1) + 3 (d1 + 1) + (d2 + 1)
    static constexpr int n = 27, radius = 1;
    __host__ __device__ static constexpr int off(int i, int d)
    {
        return d == 0 ? i / 9 - 1 : d == 1 ? i / 3 % 3 - 1 : i % 3 - 1;
    }
};
struct taps_27f {  // the 3x3x3 box, d2 slowest: tap 9 (d2 + 1) + 3 (d1 + 1) + (d0 + 1)
    static constexpr int n = 27, radius = 1;
    __host__ __device__ static constexpr int off(int i, int d)
    {
        return d == 2 ? i / 9 - 1 : d == 1 ? i / 3 % 3 - 1 : i % 3 - 1;
    }
};
struct taps_any { // any taps, read from device memory at run time (sweep_args' off and w)
    static constexpr int n = 0;
    __host__ __device__ static constexpr int off(int, int) { return 0; }
};

// ---- One step ---------------------------------------------------------------------------------

constexpr int ONE_BX = 32, ONE_BY = 8, ONE_Z = 16;

// S: a compile-time tap list (the weights in w, offsets folded into the loads), or taps_any.
template <typename T, class S>
__global__ void __launch_bounds__(ONE_BX *ONE_BY)
    sweep_one(const sweep_args<T> a, const tap_weights<T, S::n ? S::n : 1> w)
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
                if (inner && S::n) {
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

// ---- Fused steps, any taps ----------------------------------------------------------------------
//
// Threads: V = 64 lanes along x (two warps per row of a level's tile, so a warp's shared-memory
// accesses are 32 consecutive elements: no bank conflicts whatever the pitch) times NS strip
// rows; a thread computes strips of MY rows at one x, and loops over the strips of a level.
// Level t's tile is W(t) = TX + 2 (K - t) R wide (TX = 64 - 2 (K - 1) R, so W(1) = 64) and H(t) =
// TY + 2 (K - t) R high; level t < K keeps a ring of 2 R + 1 planes (pitch W(t)) in shared
// memory; the planes of level K go to dst. At pipeline step j the ring slot j mod (2 R + 1) of
// every level receives its new plane, so level t's plane of age a (made a steps ago) is in slot
// (j - a) mod (2 R + 1), and the update of plane q reads tap i's plane q + dz_i at age R - dz_i.

constexpr int GEN_V = 64, GEN_MY = 4, GEN_NS = 4, GEN_NT = GEN_V * GEN_NS;
constexpr int GEN_EL = 12;  // region elements per thread: W0 H0 <= GEN_EL GEN_NT

template <typename T, int R>
__global__ void __launch_bounds__(GEN_NT, 2) sweep_generic(const sweep_args<T> a)
{
    constexpr int RD = 2 * R + 1, MY = GEN_MY;
    const int K = a.k, TX = a.tx, TY = a.ty, KR = K * R;
    const int W0 = TX + 2 * KR, H0 = TY + 2 * KR, count0 = W0 * H0;
    extern __shared__ __align__(16) unsigned char smem[];
    const tables tb = tables_at(smem, H0, W0);
    int4 *toff = (int4 *)(smem + table_bytes(H0, W0));
    T *tw = (T *)(toff + a.ntaps);
    T *ring = (T *)(smem + table_bytes(H0, W0) +
                    align16((size_t)a.ntaps * (sizeof(int4) + sizeof(T))));

    const tile_ctx c0 = tile_of(a, TX, TY, KR);
    build_tables(a, c0, KR, H0, W0, tb);
    for (int i = threadIdx.x; i < a.ntaps; i += blockDim.x)
        toff[i] = a.off[i], tw[i] = a.w[i];
    __syncthreads();

    const int x0 = threadIdx.x % GEN_V, g0 = threadIdx.x / GEN_V;
    // Pipeline steps: level 0 receives plane a0 + j; [jb, je) covers every plane any level
    // needs (planes below a non-periodic grid are skipped).
    const int je = (c0.z1 - c0.z0) + 2 * KR;
    const int jb = a.per0 ? 0 : imax(0, KR - c0.z0);
    plane_loader<T, GEN_EL, GEN_NT> ld;
    ld.init();
    ld.fetch(a, c0, tb, c0.a0 + jb, W0, count0);

    for (int j = jb; j < je; j++) {
        const int jm = j % RD;
        const tile_ctx c = c0.opaque_copy();
        const int x = opaque(x0), g = opaque(g0);
        ld.store(ring + (size_t)jm * count0, count0);
        if (j + 1 < je)
            ld.fetch(a, c, tb, c.a0 + j + 1, W0, count0);
        __syncthreads();

        int poff = 0;  // ring offset of level t - 1
        for (int t = 1; t <= K; t++) {
            const int Wp = TX + 2 * (K - t + 1) * R, Hp = TY + 2 * (K - t + 1) * R;
            const int Wt = Wp - 2 * R, Ht = Hp - 2 * R, planep = Wp * Hp;
            const int toff_ring = poff + RD * planep;
            // Level t's first plane z0 - (K - t) R comes at step 2 t R.
            if (j >= 2 * t * R && x < Wt) {
                const T *prev = ring + poff;
                const int q = c.a0 + j - t * R;
                const int zk = zkind(q, a.n0, a.per0, R);
                const int64_t zoff = zoffset(q, a.n0, a.per0, a.plane);
                const int ck = c.flat ? PT_UPDATE : tb.colk[x + t * R];
                for (int s = g; s * MY < Ht; s += GEN_NS) {
                    const int rv = imin(MY, Ht - s * MY);
                    // Bit m of keep / gone: strip row m is a kept point / outside the grid.
                    unsigned keep = zk != PT_UPDATE ? ~0u : 0u, gone = zk == PT_OUTSIDE ? ~0u : 0u;
                    T extra[MY], acc[MY];
#pragma unroll
                    for (int m = 0; m < MY; m++) {
                        const int y0 = s * MY + m + t * R;
                        const int k = c.flat || m >= rv ? ck : imax(ck, tb.rowk[y0]);
                        keep |= (k != PT_UPDATE ? 1u : 0u) << m;
                        gone |= (k == PT_OUTSIDE ? 1u : 0u) << m;
                        extra[m] = T(0);
                        if (m < rv && (keep >> m & 1 || a.source))
                            extra[m] = point_extra(a, c, tb, point_kind(keep, gone, m), zoff, y0,
                                                   x + t * R);
                        acc[m] = T(0);
                    }
                    // Row 0 of the strip in level t - 1's plane.
                    const T *p0 = prev + (s * MY + R) * Wp + x + R;
                    for (int i = 0; i < a.ntaps; i++) {
                        const int4 o = toff[i];
                        int slot = jm - o.w;
                        slot += slot < 0 ? RD : 0;
                        const T *b = p0 + slot * planep + o.y * Wp + o.z;
                        const T wi = tw[i];
#pragma unroll
                        for (int m = 0; m < MY; m++)
                            if (m < rv)
                                acc[m] = i == 0 ? mul_rn(wi, b[m * Wp]) : fma_rn(wi, b[m * Wp], acc[m]);
                    }
#pragma unroll
                    for (int m = 0; m < MY; m++) {
                        if (m >= rv)
                            continue;
                        const T v = point_value(a, point_kind(keep, gone, m), acc[m], extra[m]);
                        const int y = s * MY + m;
                        if (t < K) {
                            ring[toff_ring + jm * Wt * Ht + y * Wt + x] = v;
                        } else if (j >= 2 * KR && c.gy0 + y < a.yhi && c.gx0 + x >= a.xlo &&
                                   c.gx0 + x < a.xhi) {
                            // Level K is the tile itself: plane q in [z0, z1) from step 2 K R.
                            a.dst[zoff + (int64_t)(c.gy0 + y) * a.row + c.gx0 + x] = v;
                        }
                    }
                }
            }
            if (t < K)
                __syncthreads();
            poff = toff_ring;
        }
    }
}

// ---- Fused steps, compile-time taps -------------------------------------------------------------

// The streaming schedule of a tap list. Level t's plane p arriving (from level t - 1) is the
// last plane the update of plane q needs for taps 0 .. i when p = q + arrive(i), arrive(i) the
// largest dz among taps 0 .. i: those taps are applied then, in order, the others later, so an
// update is in progress from the arrival of q + dz_0 to that of q + R (where it finishes, the
// pipeline's lag: arrivals past the largest dz only carry the sum). Tap i's value comes from the
// plane of age age(i) = arrive(i) - dz_i at that arrival: from the thread's registers when it
// lies in its own column strip (dx = 0, row inside the strip), else from level t - 1's ring in
// shared memory, which must hold rd planes.
template <class S>
struct sched {
    static constexpr int n = S::n, R = S::radius;
    __host__ __device__ static constexpr int dz(int i) { return S::off(i, 0); }
    __host__ __device__ static constexpr int dy(int i) { return S::off(i, 1); }
    __host__ __device__ static constexpr int dx(int i) { return S::off(i, 2); }
    __host__ __device__ static constexpr int arrive(int i)
    {
        int a = dz(0);
        for (int k = 1; k <= i; k++)
            a = dz(k) > a ? dz(k) : a;
        return a;
    }
    __host__ __device__ static constexpr int age(int i) { return arrive(i) - dz(i); }
    __host__ __device__ static constexpr int max_column_age()
    {
        int m = 0;
        for (int i = 0; i < n; i++)
            if (dx(i) == 0 && age(i) > m)
                m = age(i);
        return m;
    }
    __host__ __device__ static constexpr bool own(int i, int m, int my)
    {
        return dx(i) == 0 && m + dy(i) >= 0 && m + dy(i) < my;
    }
    __host__ __device__ static constexpr bool uses_own(int my)
    {
        for (int i = 0; i < n; i++)
            for (int m = 0; m < my; m++)
                if (own(i, m, my))
                    return true;
        return false;
    }
    // Whether the window element of age a, strip row rho - R, column c - R is read from shared
    // memory.
    __host__ __device__ static constexpr bool needed(int a, int rho, int c, int my)
    {
        for (int i = 0; i < n; i++)
            for (int m = 0; m < my; m++)
                if (age(i) == a && m + dy(i) == rho - R && dx(i) == c - R && !own(i, m, my))
                    return true;
        return false;
    }
    // Planes of level t - 1 the ring must hold: 1 + the largest age read from shared memory.
    __host__ __device__ static constexpr int rd(int my)
    {
        int m = 0;
        for (int i = 0; i < n; i++)
            for (int r = 0; r < my; r++)
                if (!own(i, r, my) && age(i) > m)
                    m = age(i);
        return 1 + m;
    }
    static constexpr int first = S::off(0, 0);  // the stage of tap 0
    static constexpr int sd = R - first;       // sums carried from one arrival to the next
    static constexpr int od = 1 + max_column_age();  // planes of the own column kept
};

// A fast kernel's shape: as sweep_generic's (V = 64 lanes along x, strips of MY rows), but the
// threads are NS = ceil(H(1) / MY) strip rows, so that each thread has exactly one strip in
// every level (its carried registers), and the rings are sched::rd deep. A level's planes have
// MY - 1 spare rows: the last strip of a level may then read and write whole strips (the rows
// past the tile are garbage no valid point reads), without a predicate per row.
template <typename T, class S, int K, int TY, int MY>
struct fast_cfg {
    static constexpr int R = S::radius, V = 64, TX = V - 2 * (K - 1) * R;
    __host__ __device__ static constexpr int W(int t) { return TX + 2 * (K - t) * R; }
    __host__ __device__ static constexpr int H(int t) { return TY + 2 * (K - t) * R; }
    __host__ __device__ static constexpr int plane(int t) { return W(t) * (H(t) + MY - 1); }
    static constexpr int NS = (H(1) + MY - 1) / MY, NT = V * NS;
    static constexpr int RD = sched<S>::rd(MY), OD = sched<S>::od;
    static constexpr int W0 = W(0), H0 = H(0), EL = (W0 * H0 + NT - 1) / NT;
    // Element offset of level t's ring.
    __host__ __device__ static constexpr int ring(int t)
    {
        int o = 0;
        for (int u = 0; u < t; u++)
            o += RD * plane(u);
        return o;
    }
    static constexpr size_t tbytes = table_bytes(H0, W0);
    static constexpr size_t smem = tbytes + (size_t)ring(K) * sizeof(T);
    static_assert(TX >= 1 && NT <= 1024 && MY <= 16, "fast kernel shape");
};

// Level t of a fast kernel at pipeline step j: level t - 1's plane p = a0 + j - (t - 1) R has
// arrived (ring slot jm); advance the updates in progress and finish plane q = p - R.
template <typename T, class S, int K, int TY, int MY, int t>
__device__ __forceinline__ void fast_level(const sweep_args<T> &a, const tap_weights<T, S::n> &w,
                                           const tile_ctx &c, const tables &tb, T *ring, int j,
                                           int jm, int x, int g, unsigned wr,
                                           T (&own)[fast_cfg<T, S, K, TY, MY>::OD][MY],
                                           T (&sum)[imax(1, sched<S>::sd)][MY])
{
    using C = fast_cfg<T, S, K, TY, MY>;
    using Q = sched<S>;
    constexpr int R = S::radius, RD = C::RD, OD = C::OD, SD = Q::sd;
    constexpr int Wp = C::W(t - 1), Wt = C::W(t), Ht = C::H(t);
    if (x >= Wt || g * MY >= Ht)
        return;
    const int rv = imin(MY, Ht - g * MY);  // rows of the strip inside the tile
    const int q = c.a0 + j - t * R;
    const int zk = zkind(q, a.n0, a.per0, R);
    const int64_t zoff = zoffset(q, a.n0, a.per0, a.plane);

    // Bit m of keep / gone: strip row m is a kept point / outside the grid (the tables are read
    // by edge blocks only).
    unsigned keep = zk != PT_UPDATE ? ~0u : 0u, gone = zk == PT_OUTSIDE ? ~0u : 0u;
    if (!c.flat) {
        const int ck = tb.colk[x + t * R];
#pragma unroll
        for (int m = 0; m < MY; m++) {
            const int k = m < rv ? imax(ck, tb.rowk[g * MY + m + t * R]) : ck;
            keep |= (k != PT_UPDATE ? 1u : 0u) << m;
            gone |= (k == PT_OUTSIDE ? 1u : 0u) << m;
        }
    }
    T extra[MY];
    // Plain: every point of the strip is updated, without a source (the common case).
    const bool plain = keep == 0 && !a.source;
#pragma unroll
    for (int m = 0; m < MY; m++) {
        extra[m] = T(0);
        if (!plain && m < rv)
            extra[m] = point_extra(a, c, tb, point_kind(keep, gone, m), zoff, g * MY + m + t * R,
                                   x + t * R);
    }

    // Level t - 1's plane of age a (0 .. RD - 1) is in ring slot (j - a) mod RD.
    const T *prev = ring + C::ring(t - 1);
    int slot[RD];
#pragma unroll
    for (int ag = 0; ag < RD; ag++)
        slot[ag] = (jm >= ag ? jm - ag : jm - ag + RD) * C::plane(t - 1);
    const int rowbase = (g * MY + R) * Wp + x + R;  // strip row 0, column x

    // The own column: shift the kept planes, read the new one.
    if constexpr (Q::uses_own(MY)) {
#pragma unroll
        for (int ag = OD - 1; ag > 0; ag--)
#pragma unroll
            for (int m = 0; m < MY; m++)
                own[ag][m] = own[ag - 1][m];
#pragma unroll
        for (int m = 0; m < MY; m++)
            own[0][m] = prev[slot[0] + rowbase + m * Wp];
    }
    // The other values this arrival's taps read, each once.
    T win[RD][MY + 2 * R][2 * R + 1];
    static_for<RD>([&](auto agc) {
        constexpr int ag = decltype(agc)::value;
        static_for<MY + 2 * R>([&](auto rhoc) {
            constexpr int rho = decltype(rhoc)::value;
            static_for<2 * R + 1>([&](auto cc) {
                constexpr int col = decltype(cc)::value;
                if constexpr (Q::needed(ag, rho, col, MY))
                    win[ag][rho][col] = prev[slot[ag] + rowbase + (rho - R) * Wp + (col - R)];
            });
        });
    });

    // Stages, latest first so that each carried sum is read before it is replaced: at stage st
    // (arrival offset first + st) the update of plane p - (first + st) applies its taps; stage
    // 0 starts an update, stage SD finishes plane q = p - R.
    T fin[MY];
    static_for<SD + 1>([&](auto idx) {
        constexpr int st = SD - decltype(idx)::value, A = Q::first + st;
        static_for<MY>([&](auto mc) {
            constexpr int m = decltype(mc)::value;
            auto val = [&](auto ic) -> T {
                constexpr int i = decltype(ic)::value;
                if constexpr (Q::own(i, m, MY))
                    return own[Q::age(i)][m + Q::dy(i)];
                else
                    return win[Q::age(i)][m + Q::dy(i) + R][Q::dx(i) + R];
            };
            T v;
            if constexpr (st == 0)
                v = mul_rn(w.w[0], val(cint<0>{}));
            else
                v = sum[st - 1][m];
            static_for<S::n>([&](auto ic) {
                constexpr int i = decltype(ic)::value;
                if constexpr (i > 0 && Q::arrive(i) == A)
                    v = fma_rn(w.w[i], val(ic), v);
            });
            if constexpr (st < SD)
                sum[st][m] = v;
            else
                fin[m] = v;
        });
    });

    // The finished plane q: into level t's ring slot jm (whole strips), or for level K, the
    // tile's rows, into dst (from step 2 K R on, when q has reached z0).
    if (!plain) {
#pragma unroll
        for (int m = 0; m < MY; m++)
            fin[m] = point_value(a, point_kind(keep, gone, m), fin[m], extra[m]);
    }
    if constexpr (t < K) {
        T *out = ring + C::ring(t) + jm * C::plane(t) + g * MY * Wt + x;
#pragma unroll
        for (int m = 0; m < MY; m++)
            out[m * Wt] = fin[m];
    } else if (j >= 2 * K * R) {
        T *out = a.dst + zoff + (int64_t)(c.gy0 + g * MY) * a.row + c.gx0 + x;
#pragma unroll
        for (int m = 0; m < MY; m++)
            if (wr >> m & 1)
                out[(int64_t)m * a.row] = fin[m];
    }
}

template <typename T, class S, int K, int TY, int MY>
__global__ void __launch_bounds__(fast_cfg<T, S, K, TY, MY>::NT, 1)
    sweep_fast(const sweep_args<T> a, const tap_weights<T, S::n> w)
{
    using C = fast_cfg<T, S, K, TY, MY>;
    constexpr int R = S::radius, KR = K * R, OD = C::OD, SD = imax(1, sched<S>::sd);
    constexpr int W0 = C::W0, H0 = C::H0, count0 = W0 * H0;
    extern __shared__ __align__(16) unsigned char smem[];
    const tables tb = tables_at(smem, H0, W0);
    T *ring = (T *)(smem + C::tbytes);
    const tile_ctx c0 = tile_of(a, C::TX, TY, KR);
    build_tables(a, c0, KR, H0, W0, tb);
    __syncthreads();

    const int x0 = threadIdx.x % C::V, g0 = threadIdx.x / C::V;
    unsigned wr0 = 0;  // bit m: strip row m of level K (the tile) is this block's to write
#pragma unroll
    for (int m = 0; m < MY; m++) {
        const int y = g0 * MY + m;
        if (x0 < C::TX && y < TY && c0.gx0 + x0 >= a.xlo && c0.gx0 + x0 < a.xhi &&
            c0.gy0 + y < a.yhi)
            wr0 |= 1u << m;
    }

    T own[K][OD][MY], sum[K][SD][MY];
#pragma unroll
    for (int t = 0; t < K; t++)
#pragma unroll
        for (int m = 0; m < MY; m++) {
#pragma unroll
            for (int ag = 0; ag < OD; ag++)
                own[t][ag][m] = T(0);
#pragma unroll
            for (int st = 0; st < SD; st++)
                sum[t][st][m] = T(0);
        }

    const int je = (c0.z1 - c0.z0) + 2 * KR;
    const int jb = a.per0 ? 0 : imax(0, KR - c0.z0);
    plane_loader<T, C::EL, C::NT> ld;
    ld.init();
    ld.fetch(a, c0, tb, c0.a0 + jb, W0, count0);
    for (int j = jb; j < je; j++) {
        const int jm = j % C::RD;
        const tile_ctx c = c0.opaque_copy();
        const int x = opaque(x0), g = opaque(g0);
        const unsigned wr = opaque(wr0);
        ld.store(ring + jm * C::plane(0), count0);
        if (j + 1 < je)
            ld.fetch(a, c, tb, c.a0 + j + 1, W0, count0);
        __syncthreads();
        static_for<K>([&](auto tc) {
            constexpr int t = decltype(tc)::value + 1;
            // Level t needs the planes of level t - 1 from its first one, which comes at step
            // 2 (t - 1) R (updates finished before are of planes no one needs).
            if (j >= 2 * (t - 1) * R)
                fast_level<T, S, K, TY, MY, t>(a, w, c, tb, ring, j, jm, x, g, wr, own[t - 1],
                                               sum[t - 1]);
            if constexpr (t < K)
                __syncthreads();
        });
    }
}

// ---- Fused steps, one barrier per plane: 7-point stars and the 27-point box -----------------
//
// sweep_relay<T, S, K, RY, NW, VEC>: K >= 2 steps of a radius-1 stencil S in one pass by the
// same plane streaming, shaped so that a pipeline step costs one barrier instead of K and an
// update few instructions besides its multiply-adds. S is a 7-point star (the centre and the
// six face neighbours, in either order) or the 27-point box with its taps sorted by dz
// (taps_27c). A block is NW warps over a region of W = 32 V columns by H0 = NW RY rows, the
// same at every level, V = 4: lane l of warp g owns columns V l .. V l + V - 1 of rows g RY ..
// g RY + RY - 1. Level t is valid on the region less t points on each side; level K on the
// tile, TX = W - 2 KV columns (KV: K rounded up to V, so that a lane's columns are 16-byte
// aligned in the grid) by TY = H0 - 2 K rows. At pipeline step j level 0 receives plane j of
// the chunk's range [z0 - K, z1 + K) and each level t = 1 .. K reads one plane of level t - 1
// from shared memory (written at step j - 1 into its slot of that step's parity: the own and
// y-neighbour rows at the lane's columns, the x neighbours past them by warp shuffles), and
// writes one plane into its slot of parity j. The levels of a step read one parity and write
// the other, so one barrier ends a step.
//
//   * Star: level t computes plane p = j - t from level t - 1's plane p in shared memory and
//     the own columns of its planes p - 1 (kept in registers since step j - 1) and p + 1
//     (computed by level t - 1 earlier in this step).
//   * Box: the taps come in three groups of nine by dz, so the plane q = j - 2 t + 1 of level
//     t - 1 read at step j starts the update of plane q + 1 (taps 0 - 8, dz = -1), continues
//     that of q (taps 9 - 17) and finishes that of p = q - 1 (taps 18 - 26): each update is its
//     taps in the contract's order, two partial sums per point carried from step to step, and
//     a plane of level t - 1 is read once. Level t lags two planes behind level t - 1.
//
// Points outside a level's valid part compute garbage from the pad rows and the shuffles' ends,
// which no valid point reads. On rows of a multiple of V points in 16-byte aligned arrays a
// lane's points move as vectors (wrapped along periodic dimensions), else element by element.
// Points outside the grid are zeros at level 0 and kept boundary points src's values, and both
// keep that value at every level (the star reads it with the centre, the box loads it from
// src); the source term is read per level.

// A lane's four consecutive elements, one 16-byte vector of floats or two of doubles: from
// global memory (read-only path), to global memory, and from and to a shared row, where
// doubles lie in two halves (elements 0, 1 at 2 l, 2 and 3 at 64 + 2 l) so that a warp's
// 16-byte accesses are consecutive.
__device__ __forceinline__ void ld4g(const float *p, float (&v)[4])
{
    const float4 q = __ldg(reinterpret_cast<const float4 *>(p));
    v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
}
__device__ __forceinline__ void ld4g(const double *p, double (&v)[4])
{
    const double2 q = __ldg(reinterpret_cast<const double2 *>(p)),
                  r = __ldg(reinterpret_cast<const double2 *>(p) + 1);
    v[0] = q.x, v[1] = q.y, v[2] = r.x, v[3] = r.y;
}
__device__ __forceinline__ void st4g(float *p, const float (&v)[4])
{
    *reinterpret_cast<float4 *>(p) = make_float4(v[0], v[1], v[2], v[3]);
}
__device__ __forceinline__ void st4g(double *p, const double (&v)[4])
{
    reinterpret_cast<double2 *>(p)[0] = make_double2(v[0], v[1]);
    reinterpret_cast<double2 *>(p)[1] = make_double2(v[2], v[3]);
}
__device__ __forceinline__ int lane_at(const float *, int lane) { return 4 * lane; }
__device__ __forceinline__ int lane_at(const double *, int lane) { return 2 * lane; }
__device__ __forceinline__ void ld4s(const float *p, float (&v)[4])
{
    const float4 q = *reinterpret_cast<const float4 *>(p);
    v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
}
__device__ __forceinline__ void ld4s(const double *p, double (&v)[4])
{
    const double2 q = *reinterpret_cast<const double2 *>(p),
                  r = *reinterpret_cast<const double2 *>(p + 64);
    v[0] = q.x, v[1] = q.y, v[2] = r.x, v[3] = r.y;
}
__device__ __forceinline__ void st4s(float *p, const float (&v)[4]) { st4g(p, v); }
__device__ __forceinline__ void st4s(double *p, const double (&v)[4])
{
    *reinterpret_cast<double2 *>(p) = make_double2(v[0], v[1]);
    *reinterpret_cast<double2 *>(p + 64) = make_double2(v[2], v[3]);
}

// Which tap lists sweep_relay takes: a 7-point star of radius 1, or 27 taps of radius 1 whose
// dz never decreases along the list and whose nine of each dz come together (the box in C
// order).
template <class S>
struct relay_taps {
    __host__ __device__ static constexpr bool by_dz()
    {
        for (int i = 0; i < S::n; i++)
            if (S::off(i, 0) != i / 9 - 1)
                return false;
        return true;
    }
    static constexpr bool star = S::n == 7 && S::radius == 1;
    static constexpr bool box = S::n == 27 && S::radius == 1 && by_dz();
};

// A region of W = 32 V columns (V = 4 a lane) by H0 = NW RY rows; KV: K rounded up to V, the
// columns left of the tile, so that a lane's points are 16-byte aligned in the grid.
template <typename T, int K, int RY, int NW>
struct relay_cfg {
    static constexpr int V = 4, W = 32 * V, KV = (K + V - 1) / V * V;
    static constexpr int H0 = NW * RY, NT = 32 * NW;
    static constexpr int TX = W - 2 * KV, TY = H0 - 2 * K;
    static constexpr int PL = (H0 + 2) * W; // a shared plane: H0 rows and a pad row above and
                                            // below (zeros, read as the neighbours of the
                                            // region's edge rows)
    static constexpr size_t smem = (size_t)K * 2 * PL * sizeof(T); // K levels x 2 parities
};

// VEC: rows of a multiple of 4 points in 16-byte aligned arrays (sweep_args' vec): a lane's
// four columns are all in the grid or all out (wrapped along a periodic n2, never straddling
// the wrap), so they move as one vector; else element by element.
template <typename T, class S, int K, int RY, int NW, bool VEC>
__global__ void __launch_bounds__(32 * NW, 1)
    sweep_relay(const sweep_args<T> a, const tap_weights<T, S::n> w)
{
    using C = relay_cfg<T, K, RY, NW>;
    using Q = relay_taps<S>;
    constexpr int V = C::V, W = C::W, KV = C::KV, PL = C::PL;
    constexpr int LAG = Q::star ? 1 : 2;     // planes level t lags behind level t - 1
    constexpr int CARRIED = Q::star ? 1 : 2; // planes of values a level keeps per point
    static_assert(Q::star || Q::box, "sweep_relay takes 7-point stars and the 27-point box");
    extern __shared__ __align__(16) unsigned char smem[];
    T *const sm = (T *)smem; // [K][2][H0 + 2][W]: level t's planes by step parity
    for (int i = threadIdx.x; i < K * 2 * PL; i += C::NT)
        sm[i] = T(0); // the slots read before their first plane hold zeros, not garbage

    const int tiles = a.ntx * a.nty, b = (int)blockIdx.x, chunk = b / tiles;
    const int rest = b - chunk * tiles, by = rest / a.ntx, bx = rest - by * a.ntx;
    const int tx0 = a.xb + bx * C::TX, ty0 = a.ylo + by * C::TY;
    const int z0 = a.zlo + chunk * a.zlen, z1 = imin(a.zhi, z0 + a.zlen);
    const int lane = (int)threadIdx.x & 31, row0 = ((int)threadIdx.x >> 5) * RY;
    const int cx = tx0 - KV + V * lane, gy = ty0 - K + row0; // the thread's first point
    // The thread's shared row row0 + r - 1 (r = 0 .. RY + 1) at the lane's columns: srow +
    // r W (the pad rows serve r = 0 in the first warp and RY + 1 in the last).
    const int srow = row0 * W + lane_at(sm, lane);

    // The thread's rows and columns, and bit masks of its points kept (at a non-periodic face)
    // or missing (outside the grid), apart from the plane: most threads have none. In-plane
    // offsets are ints (sweep_create takes this kernel for planes of fewer than 2^31 points).
    const int xcol = a.per2 ? wrap(cx, a.n2) : cx;
    const bool xgone = !a.per2 && (cx + V - 1 < 0 || cx >= a.n2);
    int roff[RY]; // row r's in-plane offset, wrapped along a periodic n1 (-1: outside)
    unsigned keep = 0, gone = 0; // bit V r + c: point (r, c)
#pragma unroll
    for (int r = 0; r < RY; r++) {
        const int y = gy + r;
        const bool yg = !a.per1 && (y < 0 || y >= a.n1);
        roff[r] = yg ? -1 : (a.per1 ? wrap(y, a.n1) : y) * (int)a.row;
#pragma unroll
        for (int c = 0; c < V; c++) {
            const int x = cx + c;
            const unsigned bit = 1u << (V * r + c);
            if (yg || (!a.per2 && (x < 0 || x >= a.n2)))
                gone |= bit;
            else if ((!a.per1 && (y < 1 || y >= a.n1 - 1)) ||
                     (!a.per2 && (x < 1 || x >= a.n2 - 1)))
                keep |= bit;
        }
    }
    // The thread's points of plane p of array s (src or the source; zeros outside the grid).
    auto fetch = [&](const T *s, int p, T (&v)[RY][V]) {
        const bool zin = a.per0 || (p >= 0 && p < a.n0);
        const T *sp = s + zoffset(p, a.n0, a.per0, a.plane);
#pragma unroll
        for (int r = 0; r < RY; r++) {
            if constexpr (VEC) {
                if (zin && roff[r] >= 0 && !xgone)
                    ld4g(sp + roff[r] + xcol, v[r]);
                else
                    for (int c = 0; c < V; c++)
                        v[r][c] = T(0);
            } else {
#pragma unroll
                for (int c = 0; c < V; c++)
                    v[r][c] = zin && !(gone >> (V * r + c) & 1)
                                  ? __ldg(sp + roff[r] + (a.per2 ? wrap(cx + c, a.n2) : cx + c))
                                  : T(0);
            }
        }
    };

    // Carried from step to step, per level t (car[t - 1]): the star's level t - 1 plane p - 1
    // in the own columns; the box's partial sums of the updates of planes q and q + 1.
    T car[K][CARRIED][RY][V];
    T pf[RY][V]; // level 0's next plane, loaded a step ahead
#pragma unroll
    for (int t = 0; t < K; t++)
#pragma unroll
        for (int h = 0; h < CARRIED; h++)
#pragma unroll
            for (int r = 0; r < RY; r++)
#pragma unroll
                for (int c = 0; c < V; c++)
                    car[t][h][r][c] = T(0);
    const int j0 = z0 - K, jf = z1 + K, j1 = z1 + LAG * K; // level 0's planes: [j0, jf)
    fetch(a.src, j0, pf);
    __syncthreads();
#pragma unroll 1
    for (int j = j0; j < j1; j++) {
        const int cur = (j & 1) * PL, prv = PL - cur;
        T nx[RY][V]; // the star's level t - 1 plane p + 1, for level t
#pragma unroll
        for (int r = 0; r < RY; r++) {
#pragma unroll
            for (int c = 0; c < V; c++)
                nx[r][c] = pf[r][c];
            st4s(sm + cur + srow + (r + 1) * W, pf[r]);
        }
        if (j + 1 < jf)
            fetch(a.src, j + 1, pf);
        static_for<K>([&](auto tc) {
            constexpr int t = decltype(tc)::value + 1;
            const int p = j - LAG * t; // the plane level t finishes
            const T *plane = sm + (t - 1) * 2 * PL + prv;
            T rw[RY + 2][V], out[RY][V];
#pragma unroll
            for (int r = 0; r < RY + 2; r++)
                ld4s(plane + srow + r * W, rw[r]);
            if constexpr (Q::star) {
#pragma unroll
                for (int r = 0; r < RY; r++) {
                    const T *ce = rw[r + 1];
                    const T xl = __shfl_up_sync(0xffffffffu, ce[V - 1], 1),
                            xr = __shfl_down_sync(0xffffffffu, ce[0], 1);
#pragma unroll
                    for (int c = 0; c < V; c++) {
                        T acc = T(0);
                        static_for<7>([&](auto i) {
                            constexpr int dz = S::off(i, 0), dy = S::off(i, 1),
                                          dx = S::off(i, 2);
                            T v;
                            if constexpr (dz < 0)
                                v = car[t - 1][0][r][c];
                            else if constexpr (dz > 0)
                                v = nx[r][c];
                            else if constexpr (dy != 0)
                                v = rw[r + 1 + dy][c];
                            else if constexpr (dx < 0)
                                v = c > 0 ? ce[c - 1] : xl;
                            else if constexpr (dx > 0)
                                v = c < V - 1 ? ce[c + 1] : xr;
                            else
                                v = ce[c];
                            acc = i == 0 ? mul_rn(w.w[i], v) : fma_rn(w.w[i], v, acc);
                        });
                        out[r][c] = acc;
                        car[t - 1][0][r][c] = ce[c];
                    }
                }
            } else {
                T xl[RY + 2], xr[RY + 2]; // the x neighbours past the lane's columns
#pragma unroll
                for (int r = 0; r < RY + 2; r++) {
                    xl[r] = __shfl_up_sync(0xffffffffu, rw[r][V - 1], 1);
                    xr[r] = __shfl_down_sync(0xffffffffu, rw[r][0], 1);
                }
                static_for<RY>([&](auto rc) {
                    constexpr int r = decltype(rc)::value;
                    static_for<V>([&](auto cc) {
                        constexpr int c = decltype(cc)::value;
                        T fin = car[t - 1][0][r][c], mid = car[t - 1][1][r][c], nw = T(0);
                        static_for<27>([&](auto i) {
                            constexpr int dz = S::off(i, 0), dy = S::off(i, 1),
                                          dx = S::off(i, 2), y = r + 1 + dy, x = c + dx;
                            T v;
                            if constexpr (x < 0)
                                v = xl[y];
                            else if constexpr (x >= V)
                                v = xr[y];
                            else
                                v = rw[y][x];
                            if constexpr (i == 0)
                                nw = mul_rn(w.w[i], v);
                            else if constexpr (dz < 0)
                                nw = fma_rn(w.w[i], v, nw);
                            else if constexpr (dz == 0)
                                mid = fma_rn(w.w[i], v, mid);
                            else
                                fin = fma_rn(w.w[i], v, fin);
                        });
                        out[r][c] = fin;
                        car[t - 1][0][r][c] = mid;
                        car[t - 1][1][r][c] = nw;
                    });
                });
            }
            // Kept and missing points (a plane outside the grid or kept, or the thread's points
            // at a non-periodic face) keep src's value (zero where missing).
            const int zk = zkind(p, a.n0, a.per0, 1);
            const unsigned fixed = zk != PT_UPDATE ? ~0u : keep | gone;
            if (fixed) {
                T kv[RY][V];
                if constexpr (Q::star) { // level t - 1's value, read with the centre
#pragma unroll
                    for (int r = 0; r < RY; r++)
#pragma unroll
                        for (int c = 0; c < V; c++)
                            kv[r][c] = rw[r + 1][c];
                } else {
                    fetch(a.src, p, kv);
                }
#pragma unroll
                for (int r = 0; r < RY; r++)
#pragma unroll
                    for (int c = 0; c < V; c++)
                        out[r][c] = fixed >> (V * r + c) & 1 ? kv[r][c] : out[r][c];
            }
            if (a.source && zk == PT_UPDATE) {
                T sv[RY][V];
                fetch(a.source, p, sv);
#pragma unroll
                for (int r = 0; r < RY; r++)
#pragma unroll
                    for (int c = 0; c < V; c++)
                        out[r][c] = fixed >> (V * r + c) & 1 ? out[r][c]
                                                             : add_rn(out[r][c], sv[r][c]);
            }
            if constexpr (t < K) {
#pragma unroll
                for (int r = 0; r < RY; r++) {
#pragma unroll
                    for (int c = 0; c < V; c++)
                        nx[r][c] = out[r][c];
                    st4s(sm + t * 2 * PL + cur + srow + (r + 1) * W, out[r]);
                }
            } else if (p >= z0) { // level K: plane p of the chunk, the tile's points to dst
                T *dp = a.dst + (int64_t)p * a.plane;
#pragma unroll
                for (int r = 0; r < RY; r++) {
                    const int oy = row0 + r - K;
                    if (oy < 0 || oy >= C::TY || ty0 + oy >= a.yhi)
                        continue;
                    // the tile's points lie in the grid: roff[r] and cx unwrapped
                    if constexpr (VEC) {
                        const int ox = V * lane - KV;
                        if (ox >= 0 && ox < C::TX && tx0 + ox >= a.xlo && tx0 + ox < a.xhi)
                            st4g(dp + roff[r] + cx, out[r]);
                    } else {
#pragma unroll
                        for (int c = 0; c < V; c++) {
                            const int ox = V * lane + c - KV;
                            if (ox >= 0 && ox < C::TX && tx0 + ox >= a.xlo && tx0 + ox < a.xhi)
                                dp[roff[r] + cx + c] = out[r][c];
                        }
                    }
                }
            }
        });
        __syncthreads();
    }
}

// ---- Host side: configurations and launches -------------------------------------------------

constexpr int KMAX = 8;  // the most steps one fused sweep does

enum { SHAPE_GENERIC = -1, SHAPE_7C = 0, SHAPE_7F = 1, SHAPE_27C = 2, SHAPE_27F = 3 };

struct sweep_state;
struct fused_cfg;
typedef cudaError_t (*launch_fn)(const tide_sweep *s, const sweep_state *st,
                                 const fused_cfg &f, int k, const void *src, void *dst,
                                 cudaStream_t stream);

// How sweeps of k steps run: the kernel, its block and tile, the blocks an SM holds, and the
// tiles and chunks for the grid the plan was made for.
struct fused_cfg {
    const void *func;
    const void *alt;  // NULL, or another kernel launch may run instead, of the same shape
    launch_fn launch;
    int nt;
    size_t smem;
    int tx, ty, bps;
    int ntx, nty, zlen, blocks;
};

struct sweep_state {
    int shape;
    int sms;              // multiprocessors of the device
    int n[3], out[3][2];  // the grid and the window written the chunks were planned for
    int4 *off;            // device: (dz, dy, dx, R - dz) per tap
    void *w;              // device: the weights in the data's precision
    double wh[27];        // a fast shape's weights (kernel parameters)
    fused_cfg cfg[KMAX + 1];
};

// The most steps the fast kernels are instantiated for (beyond, sweep_generic), for the
// 7-point stars (sweep_relay) and the 27-point box (sweep_relay in C order, sweep_fast
// reversed) per precision, and sweep_fast's tiles (strip rows MY, tile height TY) per
// precision and steps k. A block has one thread per strip of level 1's 64 x H(1) tile, NT =
// 64 ceil(H(1) / MY), and each thread carries, per level, MY values per kept plane of its own
// column and per partial sum (2 + 2), plus an arrival's window and the next plane's prefetch.
// ptxas gives a block of NT threads 65536 / roundup(NT, 128) registers a thread; the tiles
// below are the tallest whose register needs (measured with ptxas for sm_90) fit that without
// spilling: H(1) = 24 (NT 384, 168 registers) or 16 (NT 256, 255) rows for MY = 4.
struct tile_choice {
    int my, ty;
};
__host__ __device__ constexpr int fast_kmax(bool star, bool dbl)
{
    return star ? (dbl ? 4 : 6) : (dbl ? 2 : 4);
}
__host__ __device__ constexpr tile_choice fast_tile(bool dbl, int k)
{
    if (!dbl)              // H(1) = 24 for 2 steps, then 16
        return tile_choice{4, k == 2 ? 22 : 18 - 2 * k};
    return tile_choice{2, 6};  // H(1) = 8 in strips of 2 (NT 256)
}
template <typename T, class S>
struct fast_shape {
    static constexpr int kmax = fast_kmax(S::n == 7, sizeof(T) == 8);
    static constexpr int my(int k) { return fast_tile(sizeof(T) == 8, k).my; }
    static constexpr int ty(int k) { return fast_tile(sizeof(T) == 8, k).ty; }
};

template <typename T>
sweep_args<T> make_args(const tide_sweep *s, const sweep_state *st, const fused_cfg &f,
                        const void *src, void *dst, int k)
{
    sweep_args<T> a;
    a.n0 = s->n[0], a.n1 = s->n[1], a.n2 = s->n[2];
    long long pitch[2];
    tide_sweep_pitch(s, pitch);
    a.plane = pitch[0], a.row = pitch[1];
    tide_sweep_out(s, 0, &a.zlo, &a.zhi);
    tide_sweep_out(s, 1, &a.ylo, &a.yhi);
    tide_sweep_out(s, 2, &a.xlo, &a.xhi);
    a.xb = a.xlo & ~3;
    // dst holds planes zlo .. zhi - 1: the kernels index it as laid out like src
    a.src = (const T *)src, a.source = (const T *)s->source;
    a.dst = (T *)((uintptr_t)dst - (uintptr_t)a.zlo * (uintptr_t)a.plane * sizeof(T));
    a.per0 = s->periodic[0] != 0, a.per1 = s->periodic[1] != 0, a.per2 = s->periodic[2] != 0;
    a.radius = s->radius;
    a.k = k, a.tx = f.tx, a.ty = f.ty, a.ntx = f.ntx, a.nty = f.nty, a.zlen = f.zlen;
    auto aligned = [](const void *p) { return ((uintptr_t)p & 15) == 0; };
    a.vec = a.n2 % 4 == 0 && pitch[0] % 4 == 0 && pitch[1] % 4 == 0 && a.xlo % 4 == 0 &&
            a.xhi % 4 == 0 && aligned(src) && aligned(dst) && aligned(s->source);
    a.ntaps = s->ntaps, a.off = st->off, a.w = (const T *)st->w;
    return a;
}

template <typename T, class S>
cudaError_t launch_one(const tide_sweep *s, const sweep_state *st, const void *src, void *dst,
                       cudaStream_t stream)
{
    const sweep_args<T> a = make_args<T>(s, st, st->cfg[0], src, dst, 1);
    const tap_weights<T, S::n ? S::n : 1> w = weights_of<T, S::n ? S::n : 1>(st->wh, S::n);
    const dim3 grid((unsigned)((a.xhi - a.xlo + ONE_BX - 1) / ONE_BX),
                    (unsigned)imin((a.yhi - a.ylo + ONE_BY - 1) / ONE_BY, 65535),
                    (unsigned)imin((a.zhi - a.zlo + ONE_Z - 1) / ONE_Z, 65535));
    sweep_one<T, S><<<grid, ONE_BX * ONE_BY, 0, stream>>>(a, w);
    return cudaGetLastError();
}

// The one-step kernel for the plan's taps: compiled for them when they are a built-in shape.
template <typename T>
cudaError_t launch_one(const tide_sweep *s, const sweep_state *st, const void *src, void *dst,
                       cudaStream_t stream)
{
    switch (st->shape) {
    case SHAPE_7C: return launch_one<T, taps_7c>(s, st, src, dst, stream);
    case SHAPE_7F: return launch_one<T, taps_7f>(s, st, src, dst, stream);
    case SHAPE_27C: return launch_one<T, taps_27c>(s, st, src, dst, stream);
    case SHAPE_27F: return launch_one<T, taps_27f>(s, st, src, dst, stream);
    default: return launch_one<T, taps_any>(s, st, src, dst, stream);
    }
}

template <typename T, int R>
cudaError_t launch_generic(const tide_sweep *s, const sweep_state *st, const fused_cfg &f, int k,
                           const void *src, void *dst, cudaStream_t stream)
{
    sweep_generic<T, R><<<f.blocks, GEN_NT, f.smem, stream>>>(
        make_args<T>(s, st, f, src, dst, k));
    return cudaGetLastError();
}

template <typename T, class S, int K, int TY, int MY>
cudaError_t launch_fast(const tide_sweep *s, const sweep_state *st, const fused_cfg &f, int k,
                        const void *src, void *dst, cudaStream_t stream)
{
    sweep_fast<T, S, K, TY, MY><<<f.blocks, f.nt, f.smem, stream>>>(
        make_args<T>(s, st, f, src, dst, k), weights_of<T, S::n>(st->wh, S::n));
    return cudaGetLastError();
}

template <typename T, class S, int K, int RY, int NW>
cudaError_t launch_relay(const tide_sweep *s, const sweep_state *st, const fused_cfg &f, int k,
                         const void *src, void *dst, cudaStream_t stream)
{
    const sweep_args<T> a = make_args<T>(s, st, f, src, dst, k);
    const tap_weights<T, S::n> w = weights_of<T, S::n>(st->wh, S::n);
    if (a.vec)
        sweep_relay<T, S, K, RY, NW, true><<<f.blocks, f.nt, f.smem, stream>>>(a, w);
    else
        sweep_relay<T, S, K, RY, NW, false><<<f.blocks, f.nt, f.smem, stream>>>(a, w);
    return cudaGetLastError();
}

// sweep_relay's rows per thread and warps per block for k steps: the tallest region whose
// shared planes fit an SM (one block per SM, at most 227 KB) and whose thread state fits the
// registers without spilling (ptxas for sm_90).
//   * Star, float: 48 rows of 3 a thread up to 4 steps (98-124 registers of 128), then 32
//     rows of 2; double: 24 rows of 2 (124-156 of 168; 32 rows of 2 spill at 128). One H100,
//     512^3 double: 24 rows of 4 points a lane ran 300 GCell/s (3 steps, half the grid), 48
//     rows of 2 points a lane (one 16-byte vector) 103-115.
//   * Box: float 32 rows of 2 a thread, 16 warps, up to 4 steps (94-128 registers of 128);
//     double 24 rows of 2, 12 warps, 2 steps (142-168 of 168; 3 steps in 24 rows of 3 and 8
//     warps ran 143 GCell/s against 183 for 2 steps on an H200).
struct relay_choice {
    int ry, nw;
};
__host__ __device__ constexpr relay_choice relay_shape(bool box, bool dbl, int k)
{
    if (box)
        return !dbl ? relay_choice{2, 16} : relay_choice{2, 12};
    return dbl ? relay_choice{2, 12} : k <= 4 ? relay_choice{3, 16} : relay_choice{2, 16};
}

template <typename T, class S, int K>
fused_cfg fast_entry()
{
    fused_cfg f = {};
    if constexpr (relay_taps<S>::star || relay_taps<S>::box) {
        if constexpr (K >= 2 && K <= fast_shape<T, S>::kmax) {
            constexpr relay_choice sh = relay_shape(relay_taps<S>::box, sizeof(T) == 8, K);
            using C = relay_cfg<T, K, sh.ry, sh.nw>;
            f.func = (const void *)sweep_relay<T, S, K, sh.ry, sh.nw, true>;
            f.alt = (const void *)sweep_relay<T, S, K, sh.ry, sh.nw, false>;
            f.launch = launch_relay<T, S, K, sh.ry, sh.nw>;
            f.nt = C::NT, f.smem = C::smem, f.tx = C::TX, f.ty = C::TY;
        }
    } else if constexpr (K >= 2 && K <= fast_shape<T, S>::kmax) {
        constexpr int TY = fast_shape<T, S>::ty(K), MY = fast_shape<T, S>::my(K);
        using C = fast_cfg<T, S, K, TY, MY>;
        f.func = (const void *)sweep_fast<T, S, K, TY, MY>;
        f.launch = launch_fast<T, S, K, TY, MY>;
        f.nt = C::NT, f.smem = C::smem, f.tx = C::TX, f.ty = TY;
    }
    return f;
}

template <typename T, class S>
fused_cfg fast_entry(int k)
{
    switch (k) {
    case 2: return fast_entry<T, S, 2>();
    case 3: return fast_entry<T, S, 3>();
    case 4: return fast_entry<T, S, 4>();
    case 5: return fast_entry<T, S, 5>();
    case 6: return fast_entry<T, S, 6>();
    case 7: return fast_entry<T, S, 7>();
    case 8: return fast_entry<T, S, 8>();
    default: return fused_cfg{};
    }
}

template <typename T>
fused_cfg fast_entry(int shape, int k)
{
    switch (shape) {
    case SHAPE_7C: return fast_entry<T, taps_7c>(k);
    case SHAPE_7F: return fast_entry<T, taps_7f>(k);
    case SHAPE_27C: return fast_entry<T, taps_27c>(k);
    case SHAPE_27F: return fast_entry<T, taps_27f>(k);
    default: return fused_cfg{};
    }
}

// Which compile-time tap list s's taps are (radius 1 and the very same offsets in the same
// order), or SHAPE_GENERIC.
template <class S>
bool same_taps(const tide_sweep *s)
{
    if (s->radius != S::radius || s->ntaps != S::n)
        return false;
    for (int i = 0; i < S::n; i++)
        for (int d = 0; d < 3; d++)
            if (s->off[i][d] != S::off(i, d))
                return false;
    return true;
}

int match_shape(const tide_sweep *s)
{
    return same_taps<taps_7c>(s)    ? SHAPE_7C
           : same_taps<taps_7f>(s)  ? SHAPE_7F
           : same_taps<taps_27c>(s) ? SHAPE_27C
           : same_taps<taps_27f>(s) ? SHAPE_27F
                                    : SHAPE_GENERIC;
}

// sweep_generic's shared memory for k steps with tiles of height ty.
size_t generic_smem(const tide_sweep *s, int k, int ty)
{
    const int R = s->radius, tx = GEN_V - 2 * (k - 1) * R;
    const size_t elem = s->dbl ? sizeof(double) : sizeof(float);
    size_t rings = 0;
    for (int t = 0; t < k; t++)
        rings += (size_t)(2 * R + 1) * (tx + 2 * (k - t) * R) * (ty + 2 * (k - t) * R);
    return table_bytes(ty + 2 * k * R, tx + 2 * k * R) +
           align16((size_t)s->ntaps * (sizeof(int4) + elem)) + rings * elem;
}

// sweep_generic's configuration for k steps: the tallest tile (up to 32 rows) whose rings fit
// shared memory, or, when it is at least half as tall, the tallest that leaves room for two
// blocks per SM (latency hiding against redundant halo rows); none when even one row does not
// fit (or the tile would have no column, or the region more elements than the loader holds).
fused_cfg generic_entry(const tide_sweep *s, int k, size_t smem_block, size_t smem_sm)
{
    fused_cfg f = {};
    const int R = s->radius, tx = GEN_V - 2 * (k - 1) * R;
    if (tx < 1)
        return f;
    auto tallest = [&](size_t limit) {
        for (int ty = 32; ty >= 1; ty--)
            if ((tx + 2 * k * R) * (ty + 2 * k * R) <= GEN_EL * GEN_NT &&
                generic_smem(s, k, ty) <= limit)
                return ty;
        return 0;
    };
    const int one = tallest(smem_block);
    const int two = tallest(imin((int)smem_block, (int)(smem_sm / 2) - 1024));
    const int best = 2 * two >= one ? two : one;
    if (!best)
        return f;
    static const launch_fn fn[2][4] = {
        {launch_generic<float, 1>, launch_generic<float, 2>, launch_generic<float, 3>,
         launch_generic<float, 4>},
        {launch_generic<double, 1>, launch_generic<double, 2>, launch_generic<double, 3>,
         launch_generic<double, 4>}};
    static const void *const fu[2][4] = {
        {(const void *)sweep_generic<float, 1>, (const void *)sweep_generic<float, 2>,
         (const void *)sweep_generic<float, 3>, (const void *)sweep_generic<float, 4>},
        {(const void *)sweep_generic<double, 1>, (const void *)sweep_generic<double, 2>,
         (const void *)sweep_generic<double, 3>, (const void *)sweep_generic<double, 4>}};
    f.func = fu[s->dbl ? 1 : 0][R - 1];
    f.launch = fn[s->dbl ? 1 : 0][R - 1];
    f.nt = GEN_NT, f.smem = generic_smem(s, k, best), f.tx = tx, f.ty = best;
    return f;
}

// The configuration for k steps: the fast kernel when there is one for these taps, else the
// generic one; func NULL when neither fits.
fused_cfg entry_for(const tide_sweep *s, int shape, int k, size_t smem_block, size_t smem_sm)
{
    fused_cfg f = {};
    // sweep_relay counts in-plane offsets in int
    const bool relay = shape == SHAPE_7C || shape == SHAPE_7F || shape == SHAPE_27C;
    long long pitch[2];
    tide_sweep_pitch(s, pitch);
    if (shape != SHAPE_GENERIC && (!relay || pitch[0] <= INT_MAX))
        f = s->dbl ? fast_entry<double>(shape, k) : fast_entry<float>(shape, k);
    if (f.func && f.smem <= smem_block)
        return f;
    return generic_entry(s, k, smem_block, smem_sm);
}

// Chunks of the planes written along n0 for k steps: the count that minimises waves x (chunk +
// 2 k R), the halo planes being the chunk's redundant work and a partial last wave idle SMs,
// the waves counted on the sweep's share of the SMs (tide_sweep's beside).
int plan_chunks(fused_cfg &f, const tide_sweep *s, int k, int sms)
{
    int lo, hi, ylo, yhi, xlo, xhi;
    tide_sweep_out(s, 0, &lo, &hi);
    tide_sweep_out(s, 1, &ylo, &yhi);
    tide_sweep_out(s, 2, &xlo, &xhi);
    const int n0 = hi - lo, R = s->radius;
    f.ntx = (xhi - (xlo & ~3) + f.tx - 1) / f.tx;  // from make_args's xb
    f.nty = (yhi - ylo + f.ty - 1) / f.ty;
    const long long tiles = (long long)f.ntx * f.nty,
                    conc = imax(1, sms * f.bps / (1 + imax(0, s->beside)));
    if (tiles > INT_MAX)
        return TIDE_ERR_TOO_LARGE;
    long long best = LLONG_MAX;
    int zlen = n0;
    for (int nc = 1; nc <= n0; nc++) {
        const int z = (n0 + nc - 1) / nc;
        if ((n0 + z - 1) / z != nc)
            continue;  // the same chunks as a smaller count
        if (tiles * nc > INT_MAX)
            break;
        const long long cost = (tiles * nc + conc - 1) / conc * (z + 2LL * k * R);
        if (cost < best)
            best = cost, zlen = z;
    }
    f.zlen = zlen;
    f.blocks = (int)(tiles * ((n0 + zlen - 1) / zlen));
    return 0;
}

int cuda_fail(const char *call, cudaError_t e)
{
    return tide_gpu_note_error(call, cudaGetErrorString(e), (int)e);
}

} // namespace

extern "C" void tide_gpu_sweep_destroy(tide_sweep *s)
{
    sweep_state *st = (sweep_state *)s->state;
    if (!st)
        return;
    cudaFree(st->off);
    cudaFree(st->w);
    delete st;
    s->state = nullptr;
    s->state_bytes = 0;
}

extern "C" int tide_gpu_sweep_create(tide_sweep *s, int fuse, char *err, size_t len)
{
    const int R = s->radius;
    const char *prec = s->dbl ? "double" : "float";
    s->state = nullptr;
    if (R < 1 || R > TIDE_STENCIL_MAX_RADIUS || s->ntaps < 1 || !s->off || !s->w || fuse < 0) {
        snprintf(err, len, "stencil sweep: radius %d, %d taps, fuse %d", R, s->ntaps, fuse);
        return TIDE_ERR_ARGUMENT;
    }
    for (int d = 0; d < 3; d++)
        if (s->n[d] < 2 * R + 1) {
            snprintf(err, len, "stencil sweep: %d points along dimension %d, radius %d", s->n[d],
                     d, R);
            return TIDE_ERR_ARGUMENT;
        }
    for (int i = 0; i < s->ntaps; i++)
        for (int d = 0; d < 3; d++)
            if (s->off[i][d] < -R || s->off[i][d] > R) {
                snprintf(err, len, "stencil sweep: tap %d lies beyond radius %d", i, R);
                return TIDE_ERR_ARGUMENT;
            }

    int dev = 0, sms = 0, optin = 0, per_sm = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev);
    if (e != cudaSuccess)
        return cuda_fail("cudaDeviceGetAttribute", e);

    sweep_state *st = new (std::nothrow) sweep_state();
    if (!st)
        return TIDE_ERR_NOMEM;
    s->state = st;
    s->state_bytes = sizeof *st;
    st->shape = match_shape(s);
    st->sms = sms;
    for (int d = 0; d < 3; d++)
        st->n[d] = s->n[d];
    for (int d = 0; d < 3; d++)
        tide_sweep_out(s, d, &st->out[d][0], &st->out[d][1]);
    if (st->shape != SHAPE_GENERIC)
        for (int i = 0; i < s->ntaps; i++)
            st->wh[i] = s->w[i];

    // The most steps: every count from 2 up needs a kernel that fits.
    int limit = 1;
    for (int k = 2; k <= KMAX; k++) {
        st->cfg[k] = entry_for(s, st->shape, k, (size_t)optin, (size_t)per_sm);
        if (!st->cfg[k].func)
            break;
        limit = k;
    }
    if (fuse > limit) {
        snprintf(err, len, "the GPU kernels fuse at most %d steps at radius %d in %s", limit, R,
                 prec);
        tide_gpu_sweep_destroy(s);
        return TIDE_ERR_ARGUMENT;
    }
    // fuse 0: every count the kernels can do (the plan times them and keeps the best).
    const int use = fuse > 0 ? fuse : limit;

    // The taps for sweep_one and sweep_generic.
    const size_t elem = s->dbl ? sizeof(double) : sizeof(float);
    int4 *hoff = new (std::nothrow) int4[s->ntaps];
    unsigned char *hw = new (std::nothrow) unsigned char[(size_t)s->ntaps * elem];
    int rc = 0;
    if (!hoff || !hw) {
        rc = TIDE_ERR_NOMEM;
    } else {
        for (int i = 0; i < s->ntaps; i++) {
            hoff[i] = make_int4(s->off[i][0], s->off[i][1], s->off[i][2], R - s->off[i][0]);
            if (s->dbl)
                ((double *)hw)[i] = s->w[i];
            else
                ((float *)hw)[i] = (float)s->w[i];
        }
        if ((e = cudaMalloc((void **)&st->off, s->ntaps * sizeof(int4))) != cudaSuccess ||
            (e = cudaMalloc(&st->w, s->ntaps * elem)) != cudaSuccess)
            rc = e == cudaErrorMemoryAllocation ? TIDE_ERR_NOMEM : cuda_fail("cudaMalloc", e);
        else if ((e = cudaMemcpy(st->off, hoff, s->ntaps * sizeof(int4),
                                 cudaMemcpyHostToDevice)) != cudaSuccess ||
                 (e = cudaMemcpy(st->w, hw, s->ntaps * elem, cudaMemcpyHostToDevice)) !=
                     cudaSuccess)
            rc = cuda_fail("cudaMemcpy", e);
    }
    delete[] hoff;
    delete[] hw;

    // Shared memory beyond 48 KB is opted into per kernel, up to the device's limit: one kernel
    // (sweep_generic) serves several step counts with different needs, so the attribute must
    // cover the largest. The blocks an SM holds size the chunks.
    for (int k = 2; k <= use && rc == 0; k++) {
        fused_cfg &f = st->cfg[k];
        if ((e = cudaFuncSetAttribute(f.func, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      optin)) != cudaSuccess ||
            (f.alt && (e = cudaFuncSetAttribute(f.alt,
                                                cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                optin)) != cudaSuccess))
            rc = cuda_fail("cudaFuncSetAttribute", e);
        else if ((e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&f.bps, f.func, f.nt,
                                                                    f.smem)) != cudaSuccess)
            rc = cuda_fail("cudaOccupancyMaxActiveBlocksPerMultiprocessor", e);
        else if (f.bps < 1)
            rc = tide_gpu_note_error("cudaOccupancyMaxActiveBlocksPerMultiprocessor",
                                     "a fused stencil kernel cannot run on this GPU", 0);
        else
            rc = plan_chunks(f, s, k, sms);
    }
    if (rc) {
        if (rc == TIDE_ERR_TOO_LARGE)
            snprintf(err, len, "stencil sweep: too many tiles");
        else if (rc == TIDE_ERR_NOMEM)
            snprintf(err, len, "stencil sweep: out of memory for the taps");
        else
            snprintf(err, len, "stencil sweep: %s", tide_gpu_last_error());
        tide_gpu_sweep_destroy(s);
        return rc;
    }
    s->max_fuse = use;
    return 0;
}

extern "C" int tide_gpu_sweep(const tide_sweep *s, const void *src, void *dst, int steps,
                              void *stream)
{
    const sweep_state *st = (const sweep_state *)s->state;
    if (!st || steps < 1 || steps > s->max_fuse)
        return TIDE_ERR_ARGUMENT;
    const cudaStream_t cs = (cudaStream_t)stream;
    cudaError_t e;
    if (steps == 1) {
        e = s->dbl ? launch_one<double>(s, st, src, dst, cs) : launch_one<float>(s, st, src, dst, cs);
    } else {
        // The tiles and chunks were planned for the grid and planes written of sweep_create; a
        // sweep over others (the plan's tuning runs on half of n[0]) plans its own.
        fused_cfg f = st->cfg[steps];
        bool same = true;
        for (int d = 0; d < 3; d++) {
            int lo, hi;
            tide_sweep_out(s, d, &lo, &hi);
            same = same && s->n[d] == st->n[d] && lo == st->out[d][0] && hi == st->out[d][1];
        }
        if (!same) {
            for (int d = 0; d < 3; d++)
                if (s->n[d] < 2 * s->radius + 1)
                    return TIDE_ERR_ARGUMENT;
            if (plan_chunks(f, s, steps, st->sms))
                return TIDE_ERR_TOO_LARGE;
        }
        e = f.launch(s, st, f, steps, src, dst, cs);
    }
    return e == cudaSuccess ? 0
                            : cuda_fail(steps == 1 ? "one-step stencil kernel"
                                                   : "fused stencil kernel",
                                        e);
}
