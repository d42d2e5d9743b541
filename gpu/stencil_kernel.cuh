// stencil_kernel.cuh: what the stencil sweep kernels (stencil_one.cu, stencil_generic.cu,
// stencil_fast.cu, stencil_relay.cu) and their driver (stencil.cu) share: the arithmetic of an
// update, compile-time loops, the kernels' arguments, a fused kernel's tile, tables and level-0
// loader, the built-in tap lists, and on the host side how a sweep of k steps runs (fused_cfg),
// the sweep's state, and each kernel file's entry. stencil.cu says how the kernels work.
#ifndef TIDE_GPU_STENCIL_KERNEL_CUH
#define TIDE_GPU_STENCIL_KERNEL_CUH

#include <cstdint>
#include <utility>
#include <cuda_runtime.h>
extern "C" {
#include "backend/backend.h"
}

namespace tide_stencil {

// ---- Arithmetic of an update (backend.h): a rounded product, fused multiply-adds, a rounded
// sum for the source; explicit intrinsics so that nvcc does not contract or reassociate.
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float fma_rn(float a, float b, float c) { return __fmaf_rn(a, b, c); }
__device__ __forceinline__ double fma_rn(double a, double b, double c) { return __fma_rn(a, b, c); }
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }

__host__ __device__ constexpr int imin(int a, int b) { return a < b ? a : b; }
__host__ __device__ constexpr long long imin(long long a, long long b) { return a < b ? a : b; }
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
    // length along n0; sweep_relay: the narrow tiles of a strip right of the wide ones (0:
    // none; fused_cfg).
    int k, tx, ty, ntx, nty, zlen, ntyn;
    long long share; // sweep_relay: each block's pairs of a tile and a plane (fused_cfg)
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
    // The class form (tide_sweep's classes): the storage dimensions of x, y and z, and the
    // centre, face, edge and corner weights (sweep_one and sweep_generic; sweep_relay's come
    // as kernel parameters).
    int classes;
    int ax[3];
    T cw[4];
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
    static constexpr int n = 7, radius = 1, nw = n; // nw: the weights the kernels get
    static constexpr bool classes = false, x_fastest = false;
    __host__ __device__ static constexpr int off(int i, int d)
    {
        return i == 0 || (i - 1) / 2 != d ? 0 : (i & 1) ? -1 : 1;
    }
};
struct taps_7f {  // centre, -d2, +d2, -d1, +d1, -d0, +d0
    static constexpr int n = 7, radius = 1, nw = n;
    static constexpr bool classes = false, x_fastest = false;
    __host__ __device__ static constexpr int off(int i, int d)
    {
        return i == 0 || 2 - (i - 1) / 2 != d ? 0 : (i & 1) ? -1 : 1;
    }
};
struct taps_27c {  // the 3x3x3 box, d0 slowest: tap 9 (d0 + 1) + 3 (d1 + 1) + (d2 + 1)
    static constexpr int n = 27, radius = 1, nw = n;
    static constexpr bool classes = false, x_fastest = false;
    __host__ __device__ static constexpr int off(int i, int d)
    {
        return d == 0 ? i / 9 - 1 : d == 1 ? i / 3 % 3 - 1 : i % 3 - 1;
    }
};
struct taps_27f {  // the 3x3x3 box, d2 slowest: tap 9 (d2 + 1) + 3 (d1 + 1) + (d0 + 1)
    static constexpr int n = 27, radius = 1, nw = n;
    static constexpr bool classes = false, x_fastest = false;
    __host__ __device__ static constexpr int off(int i, int d)
    {
        return d == 2 ? i / 9 - 1 : d == 1 ? i / 3 % 3 - 1 : i % 3 - 1;
    }
};
// The 27-point box in the class form (backend.h): its taps in C order (what sweep_relay's
// shape checks read) and four weights, centre, face, edge and corner. The user's x, y and z lie
// along sweep_args' ax (sweep_one); sweep_relay takes them along storage dimensions 0, 1, 2
// (taps_box_classes) or 2, 1, 0 (taps_box_classes_r, x_fastest).
struct taps_box_classes : taps_27c {
    static constexpr int nw = 4;
    static constexpr bool classes = true, x_fastest = false;
};
struct taps_box_classes_r : taps_box_classes {
    static constexpr bool x_fastest = true;
};
struct taps_any { // any taps, read from device memory at run time (sweep_args' off and w)
    static constexpr int n = 0, nw = 0;
    static constexpr bool classes = false, x_fastest = false;
    __host__ __device__ static constexpr int off(int, int) { return 0; }
};

// ---- The class form's arithmetic (backend.h), each operation rounded ---------------------------
// Of a plane perpendicular to x: f, the sum of its four neighbours of the point along y and z
// (the y pair v0, then the z pair zl + zr), and k, of its four corners (the y pairs left and
// right of the point along z, vl and vr).
template <typename T>
__device__ __forceinline__ void box_plane(T v0, T zl, T zr, T vl, T vr, T &f, T &k)
{
    f = add_rn(v0, add_rn(zl, zr));
    k = add_rn(vl, vr);
}
// The part of a side plane (x offset -1 or 1) and of the middle plane, c the plane's value at
// the point's y and z; cw: centre, face, edge and corner weights.
template <typename T>
__device__ __forceinline__ T box_side(const T *cw, T c, T f, T k)
{
    return fma_rn(cw[3], k, fma_rn(cw[2], f, mul_rn(cw[1], c)));
}
template <typename T>
__device__ __forceinline__ T box_middle(const T *cw, T c, T f, T k)
{
    return fma_rn(cw[2], k, fma_rn(cw[1], f, mul_rn(cw[0], c)));
}
// One update, u(i, j, l) the value at offsets i, j, l along x, y, z: (S(-1) + M) + S(1).
template <typename T, class U>
__device__ __forceinline__ T box_classes(const T *cw, U u)
{
    T part[3];
#pragma unroll
    for (int i = -1; i <= 1; i++) {
        T f, k;
        box_plane(add_rn(u(i, -1, 0), u(i, 1, 0)), u(i, 0, -1), u(i, 0, 1),
                  add_rn(u(i, -1, -1), u(i, 1, -1)), add_rn(u(i, -1, 1), u(i, 1, 1)), f, k);
        part[i + 1] = i ? box_side(cw, u(i, 0, 0), f, k) : box_middle(cw, u(i, 0, 0), f, k);
    }
    return add_rn(add_rn(part[0], part[1]), part[2]);
}

// ---- Host side: how a sweep runs ---------------------------------------------------------------

constexpr int KMAX = 8;  // the most steps one fused sweep does

// The class form with x, y, z along storage dimensions 0, 1, 2 (SHAPE_BOX_C) or 2, 1, 0
// (SHAPE_BOX_F), fused by sweep_relay; along others (SHAPE_BOX_ANY) by sweep_generic.
enum {
    SHAPE_GENERIC = -1, SHAPE_7C = 0, SHAPE_7F = 1, SHAPE_27C = 2, SHAPE_27F = 3,
    SHAPE_BOX_C = 4, SHAPE_BOX_F = 5, SHAPE_BOX_ANY = 6
};

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
    // sweep_relay's narrow tile (0: none), for a strip of them right of the wide tiles where
    // the columns left over fit one: ntyn tiles along n1 (0: no strip).
    int txn, tyn;
    // sweep_relay: blocks take equal shares of the tiles' planes (share pairs of a tile and a
    // plane each, tile after tile) instead of one chunk of one tile each (share 0).
    bool shares;
    int ntx, nty, ntyn, zlen, blocks;
    long long share;
};

struct sweep_state {
    int shape;
    int sms;              // multiprocessors of the device
    int n[3], out[3][2];  // the grid and the window written the chunks were planned for
    int4 *off;            // device: (dz, dy, dx, R - dz) per tap
    void *w;              // device: the weights in the data's precision
    double wh[27];        // a fast shape's weights (kernel parameters; the class form's four)
    fused_cfg cfg[KMAX + 1];
};

// The most steps the compile-time kernels are instantiated for (beyond, sweep_generic), for the
// 7-point stars (sweep_relay) and the 27-point box (sweep_relay in C order, sweep_fast
// reversed) per precision.
__host__ __device__ constexpr int fast_kmax(bool star, bool dbl)
{
    return star ? (dbl ? 4 : 6) : (dbl ? 2 : 4);
}

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
    a.ntyn = f.ntyn, a.share = f.share;
    auto aligned = [](const void *p) { return ((uintptr_t)p & 15) == 0; };
    a.vec = a.n2 % 4 == 0 && pitch[0] % 4 == 0 && pitch[1] % 4 == 0 && a.xlo % 4 == 0 &&
            a.xhi % 4 == 0 && aligned(src) && aligned(dst) && aligned(s->source);
    a.ntaps = s->ntaps, a.off = st->off, a.w = (const T *)st->w;
    a.classes = s->classes;
    for (int d = 0; d < 3; d++)
        a.ax[d] = s->classes ? s->axis[d] : d;
    for (int i = 0; i < 4; i++)
        a.cw[i] = s->classes ? (T)s->cw[i] : T(0);
    return a;
}

// f(cint<k>{}) for k from 2 to KMAX (each a constant expression, so f can instantiate a kernel
// for it), an empty configuration for any other k.
template <int K = 2, class F>
fused_cfg with_steps(int k, F f)
{
    if constexpr (K > KMAX)
        return fused_cfg{};
    else
        return k == K ? f(cint<K>{}) : with_steps<K + 1>(k, f);
}

// The entries of the kernel files. One step of s's taps (stencil_one.cu).
cudaError_t launch_one(const tide_sweep *s, const sweep_state *st, const void *src, void *dst,
                       cudaStream_t stream);
// The configuration of sweeps of k >= 2 steps, func NULL when none fits: any taps by
// sweep_generic within the shared memory given (stencil_generic.cu); a built-in shape by its
// compile-time kernel, the 7-point stars and the 27-point box in C order, by taps or by classes
// (SHAPE_7C, _7F, _27C, _BOX_C, _BOX_F) by sweep_relay (stencil_relay.cu), the box reversed
// (SHAPE_27F) by sweep_fast (stencil_fast.cu).
fused_cfg generic_entry(const tide_sweep *s, int k, size_t smem_block, size_t smem_sm);
fused_cfg relay_entry(bool dbl, int shape, int k);
fused_cfg fast_entry(bool dbl, int shape, int k);

} // namespace tide_stencil

#endif
