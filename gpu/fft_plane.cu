// fft_plane.cu: the plane pass, 2D C2C transforms of a stack of planes in one persistent
// kernel that reads and writes each plane's points in device memory once (see gpu/fft_plane.h;
// the fewer passes over device memory of Wu 2014's in-card 3D FFT), and through them the R2C
// and C2R transforms of real planes (real_rows, below).
//
// Work items, taken in the order of a table made at plan creation:
//   row item    (plane p, rows y0 .. y0 + MR - 1): the rows' transforms along x, read from the
//               input, stored to the output through the L2 (st.global.cg); then the plane's
//               count of finished row items goes up (a fence first);
//   column item (plane p, columns x0 .. x0 + MC - 1): waits until the plane's row items are all
//               done, then reads the columns from the output through the L2 (ld.global.cg:
//               other SMs wrote them), transforms them along y and stores them in place.
// A plane's row items come `lag` planes ahead of its column items, about as many items as the
// grid holds at once, so a column item seldom waits and its plane's rows are still in the L2.
// An item waits only on row items taken before it, which never wait: the order cannot
// deadlock, whatever the grid's size.
//
// An item is 4096 points: MR = 4096 / nx rows or MC = 4096 / ny columns. Its lines go through
// the Stockham formulation (no bit reversal; as in Govindaraju et al. 2006): with N the line
// length and Ns the length already transformed, butterfly j of radix R reads points
// j + r N/R (r < R), multiplies point r by W_N^(r k N/(Ns R)) with k = j mod Ns, transforms the
// R points in registers and writes them to (j - k) R + k + r Ns; Ns grows by R a stage, from 1
// to N. The stages are one radix-2 or radix-4 stage where log2 N is not a multiple of 3, then
// radix-8 stages. The first stage reads device memory and the last writes it, so shared
// memory sees only the stages between. A stage's twiddles lie in a table of its own,
// W_(Ns R)^(r k) at (r - 1) Ns + k, so that the threads of a warp read consecutive entries
// (rows) or one entry (columns); they are computed in long double on the host at creation.
// Shared memory holds point a at a + a / 8: the first stage's stores, R points apart for
// consecutive threads, then fall in distinct banks.
//
// The strided pass (the slowest dimension of a stack of planes: lines whose points lie pitch
// apart) takes blocks of neighbouring lines as column items, one block each, with the same
// stages.
//
// Measured on an H200 (docs/performance.md): each plane read from and written to device
// memory once (Nsight Compute's DRAM bytes), but the points go through the L2 four times
// (filled, the rows stored, read back, the columns stored), and the L2's throughput, not
// device memory's, bounds the plane pass.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <vector>
#include <cuda_runtime.h>
#include "gpu/complex.cuh"
#include "gpu/cuda_error.h"
#include "gpu/fft_plane.h"

namespace {

constexpr int THREADS = 256;                 // the strided pass's unit of threads
constexpr int LG_ITEM = 12;
constexpr int ITEM_POINTS = 1 << LG_ITEM;     // a plane item's points
static_assert(ITEM_POINTS == TIDE_GPU_PLANE_ITEM_POINTS, "fft_plane.h's item size");
constexpr int POINTS_PER_THREAD = ITEM_POINTS / THREADS; // the strided pass's
constexpr size_t MAX_PLANE_BYTES = 8u << 20;  // a plane must fit the L2 with room to spare

// log2 of n, or -1 where n is not a power of two.
__host__ __device__ constexpr int ilog2(int n)
{
    int l = 0;
    while ((1 << l) < n)
        l++;
    return (1 << l) == n ? l : -1;
}
// Bytes of shared memory for points points of elem bytes, padded (see above).
constexpr size_t padded_bytes(size_t points, size_t elem) { return points * elem * 9 / 8; }

// An item in shared memory, padded (see above): 36 KiB (float), 72 KiB (double); blocks an SM
// holds: 4 (float, 64 registers a thread: half the threads it can hold) or 2 (double). The
// plane pass's threads a block: 256 (float: 16 points a thread) or 512 (double: 8 points a
// thread, 64 registers). Measured on an H200 at 512^3: 4096 points an item beat 8192 for
// float, 2 blocks of 4096 beat 4 of 2048 for double; 512 threads beat 256 for double (1.93
// against 2.00 ms) and lose for float (1.07 against 0.97: 3 blocks of 40 registers).
template <class T> constexpr size_t smem_bytes() { return padded_bytes(ITEM_POINTS, sizeof(T)); }
template <class T> constexpr int blocks_per_sm() { return sizeof(T) == 8 ? 4 : 2; }
template <class T> constexpr int PLANE_THREADS = sizeof(T) == 8 ? 256 : 512;

template <class T> struct real_of;
template <> struct real_of<float2> { typedef float type; };
template <> struct real_of<double2> { typedef double type; };

using tide_complex::add;
using tide_complex::mul;
using tide_complex::sub;
// a times s i (s = +-1: the transform's sign)
template <class T, class S> __device__ __forceinline__ T rot(T a, S s)
{
    return {-s * a.y, s * a.x};
}

// The DFT of R points in registers, exp(s 2 pi i jk / R).
template <class T, int R> struct dft;
template <class T> struct dft<T, 2> {
    template <class S> __device__ static void run(T *v, S)
    {
        T t = v[0];
        v[0] = add(t, v[1]);
        v[1] = sub(t, v[1]);
    }
};
template <class T> struct dft<T, 4> {
    template <class S> __device__ static void run(T *v, S s)
    {
        T t0 = add(v[0], v[2]), t1 = sub(v[0], v[2]);
        T t2 = add(v[1], v[3]), t3 = rot(sub(v[1], v[3]), s);
        v[0] = add(t0, t2);
        v[2] = sub(t0, t2);
        v[1] = add(t1, t3);
        v[3] = sub(t1, t3);
    }
};
template <class T> struct dft<T, 8> {
    template <class S> __device__ static void run(T *v, S s)
    {
        const S c = (S)0.70710678118654752440;
        T e[4] = {v[0], v[2], v[4], v[6]}, o[4] = {v[1], v[3], v[5], v[7]};
        dft<T, 4>::run(e, s);
        dft<T, 4>::run(o, s);
        // o[k] times exp(s 2 pi i k / 8): c (1 + s i), s i, c (-1 + s i)
        o[1] = {c * (o[1].x - s * o[1].y), c * (o[1].y + s * o[1].x)};
        o[2] = rot(o[2], s);
        o[3] = {c * (-o[3].x - s * o[3].y), c * (s * o[3].x - o[3].y)};
        for (int k = 0; k < 4; k++) {
            v[k] = add(e[k], o[k]);
            v[k + 4] = sub(e[k], o[k]);
        }
    }
};

// Where a stage reads and writes: shared memory, or device memory (the first phase's items,
// rows unless REV: the input read streaming, the output stored through the L2; the second
// phase's: both through the L2, the stores streaming: nothing reads them again in this pass).
enum { SMEM, GLOBAL };

template <class T, bool SECOND> __device__ __forceinline__ T gload(const T *p)
{
    return SECOND ? __ldcg(p) : __ldcs(p);
}
template <class T, bool SECOND> __device__ __forceinline__ void gstore(T *p, T v)
{
    if (SECOND)
        __stcs(p, v);
    else
        __stcg(p, v);
}

// An item's lines: M lines of N points. Point pos of line m lies in device memory at
// m * pitch + pos (rows) or pos * pitch + m (columns), read at the pitch ip and written at op,
// and in shared memory at m N + pos (rows) or pos M + m (columns), padded (pad). LGN and LGM,
// where not 0, fix log2 N and log2 M at compile time: every index of a stage then folds into a
// constant and threadIdx.x, and the stages unroll (measured on an H200: about a third of the
// plane pass's instructions are index arithmetic when the sizes are read at run time). REV:
// the columns are the first phase and the rows the second (gload, gstore).
template <class T, int LGN = 0, int LGM = 0, bool REV = false> struct lines {
    typedef T type;
    static constexpr bool rev = REV;
    const T *gin;
    T *gout, *sm;
    const T *tw;            // the stages' twiddles, stage after stage (see the top)
    int lgn, lgm, ip, op;
    __device__ __forceinline__ int lgN() const { return LGN ? LGN : lgn; }
    __device__ __forceinline__ int lgM() const { return LGM ? LGM : lgm; }
    __device__ __forceinline__ int N() const { return 1 << lgN(); }
    __device__ __forceinline__ int M() const { return 1 << lgM(); }
};

__device__ __forceinline__ int pad(int a) { return a + (a >> 3); }

// Points pos0 + r c (r < R) of line m: where they lie, as a first address and a step (device
// memory), or as the R padded addresses in shared memory. c is a multiple of 8 (the padding is
// then a step too) or, with pos0 a multiple of 8, 1.
template <class T, bool COL> struct at {
    long g0, gc;
    int s[8];
    template <int R, class Ln>
    __device__ __forceinline__ void place(const Ln &L, int m, int pos0, int c, bool smem,
                                          bool store)
    {
        if (!smem) {
            const int pitch = store ? L.op : L.ip;
            g0 = COL ? (long)pos0 * pitch + m : (long)m * pitch + pos0;
            gc = COL ? (long)c * pitch : c;
            return;
        }
        int a0 = COL ? pos0 * L.M() + m : m * L.N() + pos0, ac = COL ? c * L.M() : c;
        if (!(ac & 7) || ((ac == 1) & !(a0 & 7))) { // a step: one padding for all R
            int p0 = pad(a0), pc = ac + (ac >> 3);
#pragma unroll
            for (int r = 0; r < R; r++)
                s[r] = p0 + r * pc;
        } else {
#pragma unroll
            for (int r = 0; r < R; r++)
                s[r] = pad(a0 + r * ac);
        }
    }
};

// One stage of radix R (see the top of the file). Rows: consecutive threads take consecutive
// butterflies j of one line; columns: consecutive lines m at the same j (the columns of a row
// lie side by side).
template <class T, int R, bool COL, int SRC, int TH, class Ln>
__device__ __forceinline__ void load(const Ln &L, int q, T *v, int &j, int &m)
{
    const int NR = L.N() / R, lgNR = L.lgN() - (R == 8 ? 3 : R == 4 ? 2 : 1);
    int b = threadIdx.x + q * TH;
    j = COL ? b >> L.lgM() : b & (NR - 1);
    m = COL ? b & (L.M() - 1) : b >> lgNR;
    at<T, COL> x;
    x.template place<R>(L, m, j, NR, SRC == SMEM, false);
#pragma unroll
    for (int r = 0; r < R; r++)
        v[r] = SRC == GLOBAL ? gload<T, COL != Ln::rev>(L.gin + x.g0 + r * x.gc)
                             : L.sm[x.s[r]];
}

template <class T, int R, bool COL, int DST, class Ln>
__device__ __forceinline__ void finish(const Ln &L, T *v, int j, int m, int Ns,
                                       const T *tw, typename real_of<T>::type s)
{
    int k = j & (Ns - 1);
    if (Ns > 1) {
#pragma unroll
        for (int r = 1; r < R; r++)
            v[r] = mul(v[r], __ldg(tw + (r - 1) * Ns + k));
    }
    dft<T, R>::run(v, s);
    at<T, COL> x;
    x.template place<R>(L, m, (j - k) * R + k, Ns, DST == SMEM, true);
#pragma unroll
    for (int r = 0; r < R; r++) {
        if (DST == GLOBAL)
            gstore<T, COL != Ln::rev>(L.gout + x.g0 + r * x.gc, v[r]);
        else
            L.sm[x.s[r]] = v[r];
    }
}

// A stage between shared memory and shared memory, in place, holds all its points in
// registers between its loads and its stores; the first and the last stage take one group of
// butterflies at a time. TH threads a block, each taking PPT points.
template <class T, int R, bool COL, int SRC, int DST, int TH, int PPT, class Ln>
__device__ __forceinline__ void stage(const Ln &L, int Ns, const T *tw,
                                      typename real_of<T>::type s)
{
    constexpr int Q = PPT / R;
    if (SRC == SMEM && DST == SMEM) {
        T v[Q][R];
        int j[Q], m[Q];
#pragma unroll
        for (int q = 0; q < Q; q++)
            load<T, R, COL, SRC, TH>(L, q, v[q], j[q], m[q]);
        __syncthreads();
#pragma unroll
        for (int q = 0; q < Q; q++)
            finish<T, R, COL, DST>(L, v[q], j[q], m[q], Ns, tw, s);
    } else { // groups of butterflies: 128 bytes of loads in flight a thread, no spills
        constexpr int G = 128 / (int)sizeof(T) / R, U = G < 1 ? 1 : G < Q ? G : Q;
#pragma unroll 1
        for (int q0 = 0; q0 < Q; q0 += U) {
            T v[U][R];
            int j[U], m[U];
#pragma unroll
            for (int u = 0; u < U; u++)
                load<T, R, COL, SRC, TH>(L, q0 + u, v[u], j[u], m[u]);
#pragma unroll
            for (int u = 0; u < U; u++)
                finish<T, R, COL, DST>(L, v[u], j[u], m[u], Ns, tw, s);
        }
    }
    if (DST == SMEM)
        __syncthreads();
}

// All stages of an item's lines: the first from device memory (or, FIRST == SMEM, shared
// memory) into shared memory, the last from shared memory into device memory (or LAST ==
// SMEM: shared memory), N >= 64: at least two stages.
template <bool COL, int TH, int PPT, int FIRST = GLOBAL, int LAST = GLOBAL, class Ln>
__device__ __forceinline__ void transform(const Ln &L, typename real_of<typename Ln::type>::type s)
{
    typedef typename Ln::type T;
    int small = L.lgN() % 3, Ns = 1;
    const T *tw = L.tw;
    switch (small) { // the first stage's twiddles are all 1
    case 1: stage<T, 2, COL, FIRST, SMEM, TH, PPT>(L, Ns, tw, s); Ns = 2; break;
    case 2: stage<T, 4, COL, FIRST, SMEM, TH, PPT>(L, Ns, tw, s); Ns = 4; break;
    default: stage<T, 8, COL, FIRST, SMEM, TH, PPT>(L, Ns, tw, s); Ns = 8; break;
    }
#pragma unroll
    for (; Ns * 8 < L.N(); tw += 7 * Ns, Ns *= 8)
        stage<T, 8, COL, SMEM, SMEM, TH, PPT>(L, Ns, tw, s);
    stage<T, 8, COL, SMEM, LAST, TH, PPT>(L, Ns, tw, s);
}

// Real planes (plane_kernel's RK 1 and 2). A real row of 2 rz points goes as a complex row z
// of rz points, z[m] = x[2m] + i x[2m + 1]; with Z its transform and a, b the points Z[k],
// Z[rz - k] (k < rz, indices mod rz) and w = exp(s 2 pi i k / 2rz) (wr[k], k <= rz / 2), the
// transform X of the real row is, for k and rz - k,
//   p = (a + b*) / 2, t = i w (a - b*) / 2:  X[k] = p - t, X[rz - k] = (p + t)*
// (Z = E + i O, E and O the transforms of the even and odd points, each of real data: E =
// (a + b*) / 2, O = (a - b*) / 2i, X = E + w O at k and E - w O at k + rz), and back, with a, b
// the points X[k], X[rz - k] and the sign of the inverse in w,
//   p = a + b*, t = i w (a - b*):  Z[k] = p + t, Z[rz - k] = (p - t)*.
// X[0] and X[rz] are real: a row stores them as one point, X[0] + i X[rz], in column 0, so the
// spectrum's rows have rz points between the passes, and the columns' transforms are the
// complex pass's; column 0 holds the transform along y of two real columns, C = F0 + i Fn,
// which column item 0 parts as it stores (F0 = (C[ky] + C[-ky]*) / 2 in column 0, Fn = (C[ky] -
// C[-ky]*) / 2i in column rz) and joins as it loads (C = F0 + i Fn) for a C2R.

// A real plane's item: its lines' stages and fix, the spectrum's part of it, after them
// into device memory (R2C: fix(true)) or before them from device memory (C2R: fix(false)).
template <int RK, bool COL, int TH, int PPT, class Ln, class Fix>
__device__ __forceinline__ void real_item(const Ln &L,
                                          typename real_of<typename Ln::type>::type s, Fix fix)
{
    if (RK == 1) {
        transform<COL, TH, PPT, GLOBAL, SMEM>(L, s);
        fix(std::true_type());
    } else {
        fix(std::false_type());
        __syncthreads();
        transform<COL, TH, PPT, SMEM, GLOBAL>(L, s);
    }
}

// A real plane's row item: TO_X, the rows' transforms in shared memory (line m's point k at
// pad(m N + k)) into their spectra, stored to L.gout (pitch L.op); else the spectra's rows read
// from L.gin (pitch L.ip; written by the column items in this pass: through the L2) into the
// complex rows for the inverse transforms, in shared memory.
template <bool TO_X, int TH, class Ln>
__device__ __forceinline__ void real_rows(const Ln &L, const typename Ln::type *wr)
{
    typedef typename Ln::type T;
    typedef decltype(T().x) real;
    const int N = L.N(), half = N >> 1, lgh = L.lgN() - 1, units = L.M() << lgh;
    const real f = TO_X ? (real)0.5 : (real)1;
    for (int u = threadIdx.x; u < units; u += TH) {
        const int m = u >> lgh, k0 = u & (half - 1);
        for (int e = 0; e < 1 + (k0 == 0); e++) { // k0; after k0 = 0, rz / 2, its own pair
            const int k = e ? half : k0, kp = (N - k) & (N - 1);
            T a, b;
            if (TO_X) {
                a = L.sm[pad(m * N + k)];
                b = L.sm[pad(m * N + kp)];
            } else {
                a = __ldcg(L.gin + (long)m * L.ip + k);
                b = __ldcg(L.gin + (long)m * L.ip + kp);
                if (k == 0) { // X[0] + i X[rz]
                    b = {a.y, 0};
                    a.y = 0;
                }
            }
            const T w = __ldg(wr + k);
            T p = {f * (a.x + b.x), f * (a.y - b.y)}, q = {f * (a.x - b.x), f * (a.y + b.y)};
            T wq = mul(w, q), t = {-wq.y, wq.x};
            if (TO_X) {
                T x1 = sub(p, t), x2 = add(p, t);
                T *o = L.gout + (long)m * L.op;
                if (k == 0)
                    __stcg(o, T{x1.x, x2.x});
                else
                    __stcg(o + k, x1);
                if (k && !e)
                    __stcg(o + kp, T{x2.x, -x2.y});
            } else {
                T z1 = add(p, t), z2 = sub(p, t);
                L.sm[pad(m * N + k)] = z1;
                if (k && !e)
                    L.sm[pad(m * N + kp)] = T{z2.x, -z2.y};
            }
        }
    }
}

// A real plane's column item 0 (columns 0 .. M - 1, N points each): TO_X, the transformed
// columns in shared memory (pad(ky M + m)) stored to L.gout, column 0 parted into columns 0
// and rz; else the columns read from L.gin, columns 0 and rz joined into column 0, into shared
// memory.
template <bool TO_X, int TH, class Ln>
__device__ __forceinline__ void real_column0(const Ln &L, int rz)
{
    typedef typename Ln::type T;
    typedef decltype(T().x) real;
    const int M = L.M(), N = L.N(), units = M << L.lgN();
    for (int u = threadIdx.x; u < units; u += TH) {
        const int m = u & (M - 1), ky = u >> L.lgM();
        if (TO_X) {
            T c = L.sm[pad(ky * M + m)];
            T *o = L.gout + (long)ky * L.op;
            if (m) {
                __stcs(o + m, c);
                continue;
            }
            T cm = L.sm[pad(((N - ky) & (N - 1)) * M)];
            const real h = (real)0.5;
            __stcs(o, T{h * (c.x + cm.x), h * (c.y - cm.y)});
            __stcs(o + rz, T{h * (c.y + cm.y), h * (cm.x - c.x)});
        } else {
            const T *g = L.gin + (long)ky * L.ip;
            T c = __ldcs(g + m);
            if (!m) {
                T n = __ldcs(g + rz);
                c = {c.x - n.y, c.y + n.x};
            }
            L.sm[pad(ky * M + m)] = c;
        }
    }
}

struct args {
    int nx, ny, lgx, lgy;               // complex points: nx a row (real planes: rz)
    int first_items, items;             // a plane's items of the first phase; items in all
    const int *order;                   // item codes: plane << 12 | column << 11 | block
    int *next, *done;                   // the item counter; first-phase items done, per plane
    const void *twx, *twy, *twr;        // twr: real planes' w (real_rows)
    double sign;
    int rp, cp;                         // real planes: the real side's rows and the complex
                                        // side's, pitches in complex points
};

// Until *done reaches count (thread 0 waits, the block with it), then the writes the count
// stands for seen.
__device__ __forceinline__ void wait_for(const int *done, int count)
{
    if (threadIdx.x == 0) {
        while (*(volatile const int *)done < count)
            __nanosleep(100);
        __threadfence();
    }
    __syncthreads();
}

// The plane kernel. RK: 0 complex planes (row items, then column items); 1 real planes to
// their spectra (row items of the planes taken as complex rows of nx points (real_rows) read
// at pitch rp and stored at pitch cp, then column items in place at cp); 2 spectra to real
// planes (column items first, from the spectra at pitch cp into the output at rp, then the row
// items in place at rp). LGX and LGY, where not 0, fix the plane's size at compile time
// (complex points; see lines).
template <class T, int LGX, int LGY, int RK>
__global__ void __launch_bounds__(PLANE_THREADS<T>, blocks_per_sm<T>())
    plane_kernel(const T *in, T *out, args a)
{
    extern __shared__ __align__(16) unsigned char raw[];
    __shared__ int item;
    T *sm = (T *)raw;
    typedef typename real_of<T>::type real;
    constexpr int TH = PLANE_THREADS<T>, PPT = ITEM_POINTS / TH;
    constexpr bool REV = RK == 2;
    const real s = (real)a.sign;
    const int lgx = LGX ? LGX : a.lgx, lgy = LGY ? LGY : a.lgy, nx = 1 << lgx;
    // real planes: pitches of the rows read and written, and of the columns read and written
    const int rip = a.rp, rop = RK == 1 ? a.cp : rip, cip = a.cp, cop = RK == 2 ? a.rp : cip;
    const T *rin = REV ? out : in, *cin = REV ? in : out, *wr = (const T *)a.twr;
    for (;;) {
        if (threadIdx.x == 0)
            item = atomicAdd(a.next, 1);
        __syncthreads(); // also: the previous item's last reads of shared memory are done
        int i = item;
        if (i >= a.items)
            return;
        int code = a.order[i], p = code >> 12, col = code >> 11 & 1, blk = code & 2047;
        if constexpr (RK == 0) { // complex planes: a plane's rows, then its columns
            size_t plane = (size_t)p << (lgx + lgy);
            if (!col) {
                long off = (long)plane + ((long)blk << LG_ITEM);
                lines<T, LGX, LGX ? LG_ITEM - LGX : 0> L = {in + off, out + off, sm,
                                                             (const T *)a.twx, lgx,
                                                             LG_ITEM - lgx, nx, nx};
                transform<false, TH, PPT>(L, s);
                __threadfence();
                __syncthreads();
                if (threadIdx.x == 0)
                    atomicAdd(a.done + p, 1);
            } else {
                wait_for(a.done + p, a.first_items);
                long off = (long)plane + ((long)blk << (LG_ITEM - lgy));
                lines<T, LGY, LGY ? LG_ITEM - LGY : 0> L = {out + off, out + off, sm,
                                                             (const T *)a.twy, lgy,
                                                             LG_ITEM - lgy, nx, nx};
                transform<true, TH, PPT>(L, s);
            }
            continue;
        }
        bool second = col != REV; // waits on the plane's first-phase items
        if (second)
            wait_for(a.done + p, a.first_items);
        if (!col) {
            long y0 = (long)blk << (LG_ITEM - lgx), ri = ((long)p << lgy) * rip + y0 * rip,
                 ro = ((long)p << lgy) * rop + y0 * rop;
            lines<T, LGX, LGX ? LG_ITEM - LGX : 0, REV> L = {rin + ri, out + ro, sm,
                                                              (const T *)a.twx, lgx,
                                                              LG_ITEM - lgx, rip, rop};
            real_item<RK, false, TH, PPT>(
                L, s, [&](auto to_x) { real_rows<decltype(to_x)::value, TH>(L, wr); });
        } else {
            long x0 = (long)blk << (LG_ITEM - lgy);
            lines<T, LGY, LGY ? LG_ITEM - LGY : 0, REV> L = {
                cin + ((long)p << lgy) * cip + x0, out + ((long)p << lgy) * cop + x0, sm,
                (const T *)a.twy, lgy, LG_ITEM - lgy, cip, cop};
            if (blk)
                transform<true, TH, PPT>(L, s);
            else
                real_item<RK, true, TH, PPT>(
                    L, s, [&](auto to_x) { real_column0<decltype(to_x)::value, TH>(L, nx); });
        }
        if (!second) {
            __threadfence();
            __syncthreads();
            if (threadIdx.x == 0)
                atomicAdd(a.done + p, 1);
        }
    }
}

// The strided pass: block b transforms the M = 2^lgm lines m = b M .. b M + M - 1 that lie
// side by side (point pos of line m at pos * pitch + m), as a plane's column item does,
// reading each point once and writing it once; TH threads, TH * POINTS_PER_THREAD points a
// block, padded in shared memory as a plane item is. The registers a thread may take as in the
// plane pass: 64 (float), 128 (double). LGN, where not 0, fixes the lines' length at compile
// time (see lines).
template <class T, int TH, int LGN>
__global__ void __launch_bounds__(TH, blocks_per_sm<T>() * THREADS / TH)
    strided_kernel(const T *in, T *out, int lgn, int lgm, int pitch, const T *tw, double sign)
{
    extern __shared__ __align__(16) unsigned char raw[];
    typedef typename real_of<T>::type real;
    constexpr int LGB = ilog2(TH * POINTS_PER_THREAD); // log2 points a block
    const long off = (long)blockIdx.x << (LGN ? LGB - LGN : lgm);
    lines<T, LGN, LGN ? LGB - LGN : 0> L = {in + off, out + off, (T *)raw, tw, lgn, lgm, pitch,
                                             pitch};
    transform<true, TH, POINTS_PER_THREAD>(L, (real)sign);
}

// The twiddle tables of a line of n = 2^lg points, appended to t: n entries (the stages take
// fewer; the rest unused).
template <class T> void tables(int lg, double sign, std::vector<T> &t)
{
    typedef decltype(T().x) real;
    size_t end = t.size() + ((size_t)1 << lg);
    int Ns = 1 << (lg % 3 ? lg % 3 : 3);
    for (; Ns < 1 << lg; Ns *= 8)
        for (int r = 1; r < 8; r++)
            for (int k = 0; k < Ns; k++) {
                long double a = 2 * M_PIl * r * k / (8.0L * Ns);
                t.push_back({(real)cosl(a), (real)(sign * sinl(a))});
            }
    t.resize(end);
}

// The tables of lines of 2^lg[0] and 2^lg[1] points (lg[1] < 0: one line), one after the
// other, then, where real, a real plane's w (real_rows: exp(sign 2 pi i k / 2^(lg[0] + 1)),
// k = 0 .. 2^(lg[0] - 1)), copied to dst in device memory.
template <class T> cudaError_t upload_tables(const int lg[2], double sign, bool real, void *dst)
{
    typedef decltype(T().x) R;
    std::vector<T> t;
    for (int k = 0; k < 2 && lg[k] >= 0; k++)
        tables(lg[k], sign, t);
    for (long k = 0; real && k <= 1L << (lg[0] - 1); k++) {
        long double a = 2 * M_PIl * k / (long double)(2L << lg[0]);
        t.push_back({(R)cosl(a), (R)(sign * sinl(a))});
    }
    return cudaMemcpy(dst, t.data(), t.size() * sizeof(T), cudaMemcpyHostToDevice);
}

cudaError_t upload_tables(int dbl, const int lg[2], double sign, bool real, void *dst)
{
    return dbl ? upload_tables<double2>(lg, sign, real, dst)
               : upload_tables<float2>(lg, sign, real, dst);
}

} // namespace

struct tide_gpu_plane {
    int grid, threads;
    const void *fn;     // the kernel (plane_fn)
    size_t smem;
    args a;
    void *mem;      // twiddles, order, counters
    size_t counters_bytes;
};

// Whether the pass takes planes of nx x ny complex points (what is wrong in why where not);
// real: the complex rows of real planes twice as long.
static int supported(int dbl, int nx, int ny, bool real, char *why, size_t len)
{
    int lx = ilog2(nx), ly = ilog2(ny), f = real ? 2 : 1;
    if (lx < 6 || lx > 10 || ly < 6 || ly > 10) { // 64 x 64: one item, ITEM_POINTS
        snprintf(why, len, "the plane pass takes %splanes of powers of two from %d to %d "
                 "(%d x %d)", real ? "real " : "", 64 * f, 1024 * f, nx * f, ny);
        return 0;
    }
    if ((size_t)nx * ny * (dbl ? 16 : 8) > MAX_PLANE_BYTES) {
        snprintf(why, len, "the plane pass takes %splanes of up to %zu MiB (%d x %d %s)",
                 real ? "real " : "", MAX_PLANE_BYTES >> 20, nx * f, ny,
                 dbl ? "double" : "float");
        return 0;
    }
    return 1;
}

extern "C" int tide_gpu_plane_supported(int dbl, int nx, int ny, char *why, size_t len)
{
    return supported(dbl, nx, ny, false, why, len);
}

extern "C" int tide_gpu_plane_real_supported(int dbl, int nx, int ny, char *why, size_t len)
{
    if (nx & 1) {
        snprintf(why, len, "the plane pass takes real planes of an even length (%d)", nx);
        return 0;
    }
    return supported(dbl, nx / 2, ny, true, why, len);
}

// The plane kernel for planes of 2^lx x 2^ly complex points, RK as plane_kernel's: compiled
// for that size where the planes are squares of 128 to 1024 points a side (double: to 512, a
// plane of at most 8 MiB) or real squares of 256 to 1024 (double: to 512), for any size
// otherwise.
template <class T, int RK> static const void *plane_fn(int lx, int ly)
{
    constexpr int d = RK ? 1 : 0; // real squares: rows of half the points
    if constexpr (sizeof(T) == sizeof(float2))
        if (lx == 10 - d && ly == 10)
            return (const void *)plane_kernel<T, 10 - d, 10, RK>;
    if (lx + d == ly)
        switch (ly) {
        case 7:
            if constexpr (!RK)
                return (const void *)plane_kernel<T, 7, 7, RK>;
            break;
        case 8: return (const void *)plane_kernel<T, 8 - d, 8, RK>;
        case 9: return (const void *)plane_kernel<T, 9 - d, 9, RK>;
        }
    return (const void *)plane_kernel<T, 0, 0, RK>;
}

template <class T> static const void *plane_fn(int rk, int lx, int ly)
{
    return rk == 0 ? plane_fn<T, 0>(lx, ly) : rk == 1 ? plane_fn<T, 1>(lx, ly)
                                                     : plane_fn<T, 2>(lx, ly);
}

template <class T>
static int configure(tide_gpu_plane *p, int rk, int lx, int ly, char *why, size_t len)
{
    p->fn = plane_fn<T>(rk, lx, ly);
    p->threads = PLANE_THREADS<T>;
    p->smem = smem_bytes<T>();
    cudaError_t e = cudaFuncSetAttribute(p->fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)p->smem);
    int per_sm = 0, dev = 0, sms = 0;
    if (!e)
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, p->fn, PLANE_THREADS<T>,
                                                          p->smem);
    if (!e)
        e = cudaGetDevice(&dev);
    if (!e)
        e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e || per_sm < 1) {
        snprintf(why, len, "the plane pass's kernel cannot run here (%s)",
                 e ? cudaGetErrorString(e) : "no block fits an SM");
        return e ? tide_cuda_fail(e, "plane pass: occupancy") : TIDE_ERR_BACKEND;
    }
    p->grid = per_sm * sms;
    return 0;
}

// A plane pass over planes of nx x ny complex points, rk as plane_kernel's RK (real planes:
// the complex rows of the real side at pitch rp, the spectrum's rows at pitch cp).
static int create(int dbl, int rk, int nx, int ny, int planes, int sign, int lag, int rp,
                  int cp, tide_gpu_plane **out, char *why, size_t len)
{
    *out = NULL;
    if (!supported(dbl, nx, ny, rk != 0, why, len))
        return TIDE_ERR_UNSUPPORTED;
    if (planes < 1 || planes >= 1 << 19) { // the item codes' plane field
        snprintf(why, len, "the plane pass takes 1 to 2^19 - 1 planes (%d)", planes);
        return TIDE_ERR_UNSUPPORTED;
    }
    tide_gpu_plane *p = (tide_gpu_plane *)calloc(1, sizeof *p);
    if (!p) {
        snprintf(why, len, "out of memory");
        return TIDE_ERR_NOMEM;
    }
    int lx = ilog2(nx), ly = ilog2(ny);
    int r = dbl ? configure<double2>(p, rk, lx, ly, why, len)
                : configure<float2>(p, rk, lx, ly, why, len);
    if (r) {
        free(p);
        return r;
    }
    size_t elem = dbl ? 16 : 8, pts = ITEM_POINTS;
    // a plane's items of each phase: rows first (c2r: columns first), as many of each
    int items = (int)((size_t)nx * ny / pts), first = rk == 2 ? 1 << 11 : 0, then = first ^ 1 << 11;
    if (lag < 1) // about a grid's worth of items between a plane's first phase and its second
        lag = p->grid / (2 * items) + 1;
    std::vector<int> order;
    for (int q = 0; q < lag && q < planes; q++)
        for (int b = 0; b < items; b++)
            order.push_back(q << 12 | first | b);
    for (int q = 0; q < planes; q++) {
        for (int b = 0; q + lag < planes && b < items; b++)
            order.push_back((q + lag) << 12 | first | b);
        for (int b = 0; b < items; b++)
            order.push_back(q << 12 | then | b);
    }
    size_t tw_bytes = (size_t)(nx + ny + (rk ? nx / 2 + 1 : 0)) * elem;
    size_t order_bytes = order.size() * sizeof(int);
    p->counters_bytes = (size_t)(planes + 1) * sizeof(int);
    cudaError_t e = cudaMalloc(&p->mem, tw_bytes + order_bytes + p->counters_bytes);
    if (e) {
        free(p);
        snprintf(why, len, "out of device memory for the plane pass's tables");
        return tide_cuda_fail(e, "plane pass: cudaMalloc", TIDE_ERR_NOMEM);
    }
    char *mem = (char *)p->mem;
    const int lg[2] = {lx, ly};
    e = upload_tables(dbl, lg, sign, rk != 0, mem);
    if (!e)
        e = cudaMemcpy(mem + tw_bytes, order.data(), order_bytes, cudaMemcpyHostToDevice);
    if (e) {
        snprintf(why, len, "could not copy the plane pass's tables: %s", cudaGetErrorString(e));
        tide_gpu_plane_destroy(p);
        return tide_cuda_fail(e, "plane pass: tables");
    }
    int *counters = (int *)(mem + tw_bytes + order_bytes);
    p->a = {nx, ny, lx, ly, items, (int)order.size(), (const int *)(mem + tw_bytes), counters,
            counters + 1, mem, mem + (size_t)nx * elem, mem + (size_t)(nx + ny) * elem,
            (double)sign, rp, cp};
    *out = p;
    return 0;
}

extern "C" int tide_gpu_plane_create(int dbl, int nx, int ny, int planes, int sign, int lag,
                                     tide_gpu_plane **out, char *why, size_t len)
{
    return create(dbl, 0, nx, ny, planes, sign, lag, nx, nx, out, why, len);
}

extern "C" int tide_gpu_plane_create_real(int dbl, int nx, int ny, int planes, int sign,
                                          int64_t rpitch, int64_t cpitch, int lag,
                                          tide_gpu_plane **out, char *why, size_t len)
{
    *out = NULL;
    if (!tide_gpu_plane_real_supported(dbl, nx, ny, why, len))
        return TIDE_ERR_UNSUPPORTED;
    if (rpitch < nx || rpitch % 2 || cpitch < nx / 2 + 1 || rpitch > INT32_MAX / 2 ||
        cpitch > INT32_MAX) {
        snprintf(why, len, "the plane pass takes real rows at an even pitch of at least %d "
                 "reals and complex rows at a pitch of at least %d (%lld, %lld)", nx,
                 nx / 2 + 1, (long long)rpitch, (long long)cpitch);
        return TIDE_ERR_UNSUPPORTED;
    }
    return create(dbl, sign < 0 ? 1 : 2, nx / 2, ny, planes, sign, lag, (int)(rpitch / 2),
                  (int)cpitch, out, why, len);
}

extern "C" int tide_gpu_plane_execute(const tide_gpu_plane *p, const void *in, void *out,
                                      void *stream)
{
    cudaStream_t st = (cudaStream_t)stream;
    cudaError_t e = cudaMemsetAsync(p->a.next, 0, p->counters_bytes, st);
    if (e)
        return tide_cuda_fail(e, "plane pass: clearing the counters");
    args a = p->a;
    void *params[] = {(void *)&in, (void *)&out, (void *)&a};
    e = cudaLaunchKernel(p->fn, p->grid, p->threads, params, p->smem, st);
    return e ? tide_cuda_fail(e, "plane pass: launch") : 0;
}

extern "C" void tide_gpu_plane_destroy(tide_gpu_plane *p)
{
    if (!p)
        return;
    cudaFree(p->mem);
    free(p);
}

// The strided pass (fft_plane.h): a plane pass's column items over lines pitch points apart,
// in blocks of 4096, 8192 or 16384 points (float; double: up to 8192) with 256, 512 or 1024
// threads.
struct tide_gpu_strided {
    int lgn, lgm, count, pitch, threads;
    double sign;
    void *tw;
    const void *fn;     // the kernel (strided_fn)
    size_t smem;
};

// A block's points where the caller leaves them (0): enough lines that each of their rows is
// 128 bytes, a whole cache line, within 4096 to 8192 points. Measured on an H200, passes over
// the array (docs/performance.md): blocks of 4096 points, 1.15 at 256^3 float (128-byte rows),
// 1.41 at 512^3 (64-byte rows), 2.96 at 1024^3 (32-byte rows); 8192 points, 1.23 at 512^3
// and 1.69 at 1024^3 (64-byte rows); 16384 (1024 threads, one block an SM), 1.32 and 1.82.
static int block_points(int dbl, int n, int points)
{
    if (points)
        return points;
    int rows = 128 / (dbl ? 16 : 8) * n;
    return rows < ITEM_POINTS ? ITEM_POINTS : rows > 2 * ITEM_POINTS ? 2 * ITEM_POINTS : rows;
}

// Whether the pass takes count lines of n points in blocks of points points (0: the rule's).
static int strided_takes(int dbl, int n, int64_t count, int points, char *why, size_t len)
{
    int lg = ilog2(n);
    if (lg < 6 || lg > 10) {
        snprintf(why, len, "the strided pass takes lines of 64 to 1024 points, a power of two "
                 "(%d)", n);
        return 0;
    }
    points = block_points(dbl, n, points);
    if (points != 4096 && points != 8192 && (points != 16384 || dbl)) {
        snprintf(why, len, "the strided pass takes blocks of 4096 or 8192 points%s (%d)",
                 dbl ? "" : " or 16384", points);
        return 0;
    }
    int64_t m = points / n;
    if (count < m || count % m || count > INT32_MAX) {
        snprintf(why, len, "the strided pass takes a multiple of %lld lines side by side, at "
                 "most 2^31 - 1 (%lld)", (long long)m, (long long)count);
        return 0;
    }
    return 1;
}

extern "C" int tide_gpu_strided_supported(int dbl, int n, int64_t count, char *why, size_t len)
{
    return strided_takes(dbl, n, count, 0, why, len);
}

// The strided kernel for lines of 2^lgn points: compiled for that length from 256 to 1024
// points, for any length otherwise.
template <class T, int TH> static const void *strided_fn(int lgn)
{
    switch (lgn) {
    case 8: return (const void *)strided_kernel<T, TH, 8>;
    case 9: return (const void *)strided_kernel<T, TH, 9>;
    case 10: return (const void *)strided_kernel<T, TH, 10>;
    }
    return (const void *)strided_kernel<T, TH, 0>;
}

static const void *strided_fn(int dbl, int threads, int lgn)
{
    if (dbl)
        return threads == 256 ? strided_fn<double2, 256>(lgn) : strided_fn<double2, 512>(lgn);
    return threads == 256   ? strided_fn<float2, 256>(lgn)
           : threads == 512 ? strided_fn<float2, 512>(lgn)
                            : strided_fn<float2, 1024>(lgn);
}

extern "C" int tide_gpu_strided_create(int dbl, int n, int64_t count, int64_t pitch, int sign,
                                       int points, tide_gpu_strided **out, char *why,
                                       size_t len)
{
    *out = NULL;
    if (!strided_takes(dbl, n, count, points, why, len))
        return TIDE_ERR_UNSUPPORTED;
    if (pitch < count || pitch > INT32_MAX) {
        snprintf(why, len, "the strided pass takes lines whose points lie %lld to 2^31 - 1 "
                 "points apart (%lld)", (long long)count, (long long)pitch);
        return TIDE_ERR_UNSUPPORTED;
    }
    points = block_points(dbl, n, points);
    int threads = points / POINTS_PER_THREAD;
    const void *fn = strided_fn(dbl, threads, ilog2(n));
    size_t smem = padded_bytes((size_t)points, dbl ? 16 : 8);
    cudaError_t e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)smem);
    if (e) {
        snprintf(why, len, "the strided pass's kernel cannot run here (%s)",
                 cudaGetErrorString(e));
        return tide_cuda_fail(e, "strided pass: shared memory");
    }
    tide_gpu_strided *p = (tide_gpu_strided *)calloc(1, sizeof *p);
    if (!p) {
        snprintf(why, len, "out of memory");
        return TIDE_ERR_NOMEM;
    }
    *p = {ilog2(n), ilog2(points / n), (int)count, (int)pitch, threads, (double)sign, NULL, fn,
          smem};
    size_t bytes = (size_t)n * (dbl ? 16 : 8);
    e = cudaMalloc(&p->tw, bytes);
    const int lg[2] = {p->lgn, -1};
    if (!e)
        e = upload_tables(dbl, lg, sign, false, p->tw);
    if (e) {
        snprintf(why, len, "could not make the strided pass's twiddles: %s",
                 cudaGetErrorString(e));
        tide_gpu_strided_destroy(p);
        return tide_cuda_fail(e, "strided pass: twiddles", TIDE_ERR_NOMEM);
    }
    *out = p;
    return 0;
}

extern "C" int tide_gpu_strided_execute(const tide_gpu_strided *p, const void *in, void *out,
                                        void *stream)
{
    const void *tw = p->tw;
    int lgn = p->lgn, lgm = p->lgm, pitch = p->pitch;
    double sign = p->sign;
    void *params[] = {(void *)&in, (void *)&out, &lgn, &lgm, &pitch, (void *)&tw, &sign};
    cudaError_t e = cudaLaunchKernel(p->fn, (unsigned)(p->count >> p->lgm), p->threads, params,
                                     p->smem, (cudaStream_t)stream);
    return e ? tide_cuda_fail(e, "strided pass: launch") : 0;
}

extern "C" void tide_gpu_strided_destroy(tide_gpu_strided *p)
{
    if (!p)
        return;
    cudaFree(p->tw);
    free(p);
}
