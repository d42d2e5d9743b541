// stencil_relay.cu: several steps of the 7-point stars and the 27-point box in C order
// in one pass, one barrier per plane (sweep_relay; see stencil.cu).
#include "gpu/stencil_kernel.cuh"

namespace tide_stencil {
namespace {

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
//   * Box in the class form (backend.h; x, y, z the storage dimensions 0, 1, 2): the same
//     schedule, plane q's sums (y pairs, their x neighbours by shuffles) made once and shared by
//     the updates of planes q + 1, q and q - 1; the two values carried per point are the partial
//     sum of plane q's update and plane q - 1's side part.
//
// A tile of a narrow strip (relay_cfg) is the same with 16 lanes a row, each warp on two rows
// of lanes. A block runs one tile over one chunk of planes, or (the stars) a share of the
// tiles' planes as consecutive runs of planes of one tile each (plan_chunks in stencil.cu).
//
// Points outside a level's valid part compute garbage from the pad rows and the shuffles' ends,
// which no valid point reads. On rows of a multiple of V points in 16-byte aligned arrays a
// lane's points move as vectors (wrapped along periodic dimensions), else element by element.
// Points outside the grid are zeros at level 0 and kept boundary points src's values, and both
// keep that value at every level (the star reads it with the centre, the box loads it from
// src); the source term is read per level.

// A lane's four consecutive elements, one 16-byte vector of floats or two of doubles: from
// global memory (read-only path), to global memory, and from and to a shared row of W
// elements, where doubles lie in two halves (elements 0, 1 at 2 l, 2 and 3 at W / 2 + 2 l) so
// that a warp's 16-byte accesses are consecutive.
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
template <int W> __device__ __forceinline__ void ld4s(const float *p, float (&v)[4])
{
    const float4 q = *reinterpret_cast<const float4 *>(p);
    v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
}
template <int W> __device__ __forceinline__ void ld4s(const double *p, double (&v)[4])
{
    const double2 q = *reinterpret_cast<const double2 *>(p),
                  r = *reinterpret_cast<const double2 *>(p + W / 2);
    v[0] = q.x, v[1] = q.y, v[2] = r.x, v[3] = r.y;
}
template <int W> __device__ __forceinline__ void st4s(float *p, const float (&v)[4])
{
    st4g(p, v);
}
template <int W> __device__ __forceinline__ void st4s(double *p, const double (&v)[4])
{
    *reinterpret_cast<double2 *>(p) = make_double2(v[0], v[1]);
    *reinterpret_cast<double2 *>(p + W / 2) = make_double2(v[2], v[3]);
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
// columns left of the tile, so that a lane's points are 16-byte aligned in the grid. The
// narrow form (LW = 16 lanes a row, each warp's two halves on rows RY apart) takes regions of
// WN = W / 2 columns by H0N = 2 H0 rows, the same points and threads: where the columns left
// after the last whole tile fit a narrow tile (TXN), a strip of narrow tiles covers them at
// about half the cost of a strip of wide ones (512 columns, 2 to 4 steps: 4 wide tiles and a
// narrow one instead of 5 wide ones).
template <typename T, int K, int RY, int NW>
struct relay_cfg {
    static constexpr int V = 4, W = 32 * V, KV = (K + V - 1) / V * V;
    static constexpr int H0 = NW * RY, NT = 32 * NW;
    static constexpr int TX = W - 2 * KV, TY = H0 - 2 * K;
    static constexpr int WN = W / 2, H0N = 2 * H0, TXN = WN - 2 * KV, TYN = H0N - 2 * K;
    static constexpr int PL = (H0 + 2) * W; // a shared plane: H0 rows and a pad row above and
                                            // below (zeros, read as the neighbours of the
                                            // region's edge rows); a narrow one takes less
    static_assert((H0N + 2) * WN <= PL, "a narrow region's plane fits a wide one's");
    static constexpr size_t smem = (size_t)K * 2 * PL * sizeof(T); // K levels x 2 parities
};

// VEC: rows of a multiple of 4 points in 16-byte aligned arrays (sweep_args' vec): a lane's
// four columns are all in the grid or all out (wrapped along a periodic n2, never straddling
// the wrap), so they move as one vector; else element by element.
// The most steps for which the double star keeps its own rows in registers (OWN below): 2
// steps take 140-158 registers of 168, 3 steps 168 (rows not of vectors spill 24-28 bytes), 4
// would spill 200-370 bytes (ptxas for sm_90).
constexpr int OWN_KMAX = 3;

// One tile of a block of sweep_relay: the region's lanes LW to a row (32: a wide region; 16: a
// narrow one, see relay_cfg), the tile's first column tx0 and row ty0, the chunk's planes
// [z0, z1).
template <typename T, class S, int K, int RY, int NW, bool VEC, int LW>
__device__ __forceinline__ void relay_tile(const sweep_args<T> &a,
                                           const tap_weights<T, S::nw> &w, T *const sm,
                                           const int tx0, const int ty0, const int z0,
                                           const int z1)
{
    using C = relay_cfg<T, K, RY, NW>;
    using Q = relay_taps<S>;
    constexpr int V = C::V, W = LW * V, KV = C::KV, PL = C::PL;
    static_assert(LW == 32 || LW == 16, "a region is wide (32 lanes a row) or narrow (16)");
    constexpr int TX = LW == 32 ? C::TX : C::TXN, TY = LW == 32 ? C::TY : C::TYN;
    constexpr int LAG = Q::star ? 1 : 2;     // planes level t lags behind level t - 1
    // The star in double keeps level t - 1's plane p in registers too (it was level t - 1's
    // output, or level 0's load, a step earlier), so a level reads only the two rows beside
    // the thread's from shared memory: the kernel is bound by its shared-memory traffic, and
    // one block of 12 warps has registers to spare (K <= OWN_KMAX without spilling).
    constexpr bool OWN = Q::star && sizeof(T) == 8 && K <= OWN_KMAX;
    // Where level t - 1's plane of a step goes to its shared slot of parity cur: at the end of
    // level t - 1 (level 0's at the step's start), or (LOADS_FIRST) after level t has read its
    // rows of parity prv. One H200, 512^3, 24 steps, the plan's steps a pass, both in one call
    // (docs/performance.md): loads first, the float box ran 478-486 GCell/s against 453-459,
    // the float star 882-903 against 907-921. The doubles ran 443-448 GCell/s (star) and 245-246
    // (box) as they are, 162-348 in every other order tried (loads first; the next level's rows
    // loaded ahead of a level's arithmetic; the store moved to the next level).
    constexpr bool LOADS_FIRST = Q::box && sizeof(T) == 4;
    constexpr int CARRIED = Q::star ? (OWN ? 2 : 1) : S::x_fastest ? 4 : 2; // values a level
                                                                            // keeps a point
    static_assert(Q::star || Q::box, "sweep_relay takes 7-point stars and the 27-point box");
    // Lane `lane` of the row of rows row0 .. row0 + RY - 1 (a warp holds 32 / LW such rows).
    const int wl = (int)threadIdx.x & 31, lane = wl % LW;
    const int row0 = (((int)threadIdx.x >> 5) * (32 / LW) + wl / LW) * RY;
    const int cx = tx0 - KV + V * lane, gy = ty0 - K + row0; // the thread's first point
    // The thread's shared row row0 + r - 1 (r = 0 .. RY + 1) at the lane's columns: srow +
    // r W (the pad rows serve r = 0 in the first row and RY + 1 in the last).
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
    // in the own columns (with OWN also plane p, car[t - 1][1]); the box's partial sums of the
    // updates of planes q and q + 1 (in the class form, x along the rows: the values and y
    // pairs of planes q - 1 and q).
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
        T nx[RY][V]; // level t - 1's plane of this step, for level t (the star's plane p + 1)
#pragma unroll
        for (int r = 0; r < RY; r++) {
#pragma unroll
            for (int c = 0; c < V; c++)
                nx[r][c] = pf[r][c];
            if constexpr (!LOADS_FIRST)
                st4s<W>(sm + cur + srow + (r + 1) * W, pf[r]);
        }
        if (j + 1 < jf)
            fetch(a.src, j + 1, pf);
        static_for<K>([&](auto tc) {
            constexpr int t = decltype(tc)::value + 1;
            const int p = j - LAG * t; // the plane level t finishes
            const T *plane = sm + (t - 1) * 2 * PL + prv;
            T rw[RY + 2][V], out[RY][V];
#pragma unroll
            for (int r = 0; r < RY + 2; r++) {
                if (!OWN || r == 0 || r == RY + 1) {
                    ld4s<W>(plane + srow + r * W, rw[r]);
                } else {
#pragma unroll
                    for (int c = 0; c < V; c++)
                        rw[r][c] = car[t - 1][OWN][r - 1][c];
                }
            }
            if constexpr (LOADS_FIRST) {
#pragma unroll
                for (int r = 0; r < RY; r++)
                    st4s<W>(sm + (t - 1) * 2 * PL + cur + srow + (r + 1) * W, nx[r]);
            }
            if constexpr (Q::star) {
#pragma unroll
                for (int r = 0; r < RY; r++) {
                    const T *ce = rw[r + 1];
                    const T xl = __shfl_up_sync(0xffffffffu, ce[V - 1], 1, LW),
                            xr = __shfl_down_sync(0xffffffffu, ce[0], 1, LW);
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
                        if constexpr (OWN)
                            car[t - 1][1][r][c] = nx[r][c];
                    }
                }
            } else if constexpr (S::x_fastest) {
                // The class form, x along the rows: plane q's values and y pairs, with those of
                // planes q - 2 and q - 1 (carried), make the plane sums of plane q - 1's update
                // at every column; the side parts of the x neighbours come by shuffles.
                T side[RY][V], mid[RY][V];
#pragma unroll
                for (int r = 0; r < RY; r++) {
#pragma unroll
                    for (int c = 0; c < V; c++) {
                        T &u2 = car[t - 1][0][r][c], &v2 = car[t - 1][1][r][c]; // plane q - 2
                        T &u1 = car[t - 1][2][r][c], &v1 = car[t - 1][3][r][c]; // plane q - 1
                        const T u = rw[r + 1][c], v = add_rn(rw[r][c], rw[r + 2][c]);
                        T f, k;
                        box_plane(v1, u2, u, v2, v, f, k);
                        side[r][c] = box_side(w.w, u1, f, k);
                        mid[r][c] = box_middle(w.w, u1, f, k);
                        u2 = u1, v2 = v1, u1 = u, v1 = v;
                    }
                    const T sl = __shfl_up_sync(0xffffffffu, side[r][V - 1], 1, LW),
                            sr = __shfl_down_sync(0xffffffffu, side[r][0], 1, LW);
#pragma unroll
                    for (int c = 0; c < V; c++)
                        out[r][c] = add_rn(add_rn(c > 0 ? side[r][c - 1] : sl, mid[r][c]),
                                           c < V - 1 ? side[r][c + 1] : sr);
                }
            } else if constexpr (S::classes) {
                // The class form: plane q's part of the update of plane q - 1 finishes it
                // (its partial sum S(q - 2) + M(q - 1), carried, plus S(q)), its middle part
                // joins S(q - 1) for plane q, and S(q) waits for plane q + 1.
                T v[RY][V], ul[RY], ur[RY], vl[RY], vr[RY]; // y pair sums; x neighbours
#pragma unroll
                for (int r = 0; r < RY; r++) {
#pragma unroll
                    for (int c = 0; c < V; c++)
                        v[r][c] = add_rn(rw[r][c], rw[r + 2][c]);
                    ul[r] = __shfl_up_sync(0xffffffffu, rw[r + 1][V - 1], 1, LW);
                    ur[r] = __shfl_down_sync(0xffffffffu, rw[r + 1][0], 1, LW);
                    vl[r] = __shfl_up_sync(0xffffffffu, v[r][V - 1], 1, LW);
                    vr[r] = __shfl_down_sync(0xffffffffu, v[r][0], 1, LW);
                }
                static_for<RY>([&](auto rc) {
                    constexpr int r = decltype(rc)::value;
                    static_for<V>([&](auto cc) {
                        constexpr int c = decltype(cc)::value;
                        T f, k;
                        box_plane(v[r][c], c > 0 ? rw[r + 1][c - 1] : ul[r],
                                  c < V - 1 ? rw[r + 1][c + 1] : ur[r],
                                  c > 0 ? v[r][c - 1] : vl[r], c < V - 1 ? v[r][c + 1] : vr[r], f,
                                  k);
                        const T side = box_side(w.w, rw[r + 1][c], f, k);
                        out[r][c] = add_rn(car[t - 1][0][r][c], side);
                        car[t - 1][0][r][c] =
                            add_rn(car[t - 1][1][r][c], box_middle(w.w, rw[r + 1][c], f, k));
                        car[t - 1][1][r][c] = side;
                    });
                });
            } else {
                T xl[RY + 2], xr[RY + 2]; // the x neighbours past the lane's columns
#pragma unroll
                for (int r = 0; r < RY + 2; r++) {
                    xl[r] = __shfl_up_sync(0xffffffffu, rw[r][V - 1], 1, LW);
                    xr[r] = __shfl_down_sync(0xffffffffu, rw[r][0], 1, LW);
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
                    if constexpr (!LOADS_FIRST)
                        st4s<W>(sm + t * 2 * PL + cur + srow + (r + 1) * W, out[r]);
                }
            } else if (p >= z0) { // level K: plane p of the chunk, the tile's points to dst
                T *dp = a.dst + (int64_t)p * a.plane;
#pragma unroll
                for (int r = 0; r < RY; r++) {
                    const int oy = row0 + r - K;
                    if (oy < 0 || oy >= TY || ty0 + oy >= a.yhi)
                        continue;
                    // the tile's points lie in the grid: roff[r] and cx unwrapped
                    if constexpr (VEC) {
                        const int ox = V * lane - KV;
                        if (ox >= 0 && ox < TX && tx0 + ox >= a.xlo && tx0 + ox < a.xhi)
                            st4g(dp + roff[r] + cx, out[r]);
                    } else {
#pragma unroll
                        for (int c = 0; c < V; c++) {
                            const int ox = V * lane + c - KV;
                            if (ox >= 0 && ox < TX && tx0 + ox >= a.xlo && tx0 + ox < a.xhi)
                                dp[roff[r] + cx + c] = out[r][c];
                        }
                    }
                }
            }
        });
        __syncthreads();
    }
}

template <typename T, class S, int K, int RY, int NW, bool VEC>
__global__ void __launch_bounds__(32 * NW, 1)
    sweep_relay(const sweep_args<T> a, const tap_weights<T, S::nw> w)
{
    using C = relay_cfg<T, K, RY, NW>;
    extern __shared__ __align__(16) unsigned char smem[];
    T *const sm = (T *)smem; // [K][2][H0 + 2][W]: level t's planes by step parity
    // The tiles: the wide ones row after row, then the narrow strip's.
    const int wide = a.ntx * a.nty, tiles = wide + a.ntyn, n0 = a.zhi - a.zlo;
    auto run = [&](int tile, int z0, int z1) {
        for (int i = threadIdx.x; i < K * 2 * C::PL; i += C::NT)
            sm[i] = T(0); // the slots read before their first plane hold zeros, not garbage
        if (tile < wide) {
            const int by = tile / a.ntx, bx = tile - by * a.ntx;
            relay_tile<T, S, K, RY, NW, VEC, 32>(a, w, sm, a.xb + bx * C::TX,
                                                 a.ylo + by * C::TY, z0, z1);
        } else {
            relay_tile<T, S, K, RY, NW, VEC, 16>(a, w, sm, a.xb + a.ntx * C::TX,
                                                 a.ylo + (tile - wide) * C::TYN, z0, z1);
        }
    };
    if (a.share) { // this block's share of the pairs (tile, plane), tile after tile
        const long long w1 = imin((long long)tiles * n0, (blockIdx.x + 1LL) * a.share);
        for (long long q = blockIdx.x * a.share; q < w1;) {
            const int tile = (int)(q / n0), zs = (int)(q - (long long)tile * n0);
            const int ze = (int)imin((long long)n0, w1 - (long long)tile * n0);
            run(tile, a.zlo + zs, a.zlo + ze);
            q = (long long)tile * n0 + ze;
        }
    } else { // chunk-major: tile blockIdx.x mod tiles of chunk blockIdx.x / tiles
        const int b = (int)blockIdx.x, chunk = b / tiles, z0 = a.zlo + chunk * a.zlen;
        run(b - chunk * tiles, z0, imin(a.zhi, z0 + a.zlen));
    }
}

template <typename T, class S, int K, int RY, int NW>
cudaError_t launch_relay(const tide_sweep *s, const sweep_state *st, const fused_cfg &f, int k,
                         const void *src, void *dst, cudaStream_t stream)
{
    const sweep_args<T> a = make_args<T>(s, st, f, src, dst, k);
    const tap_weights<T, S::nw> w = weights_of<T, S::nw>(st->wh, S::nw);
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
//     rows of 2; double: 24 rows of 2, 12 warps (140-168 of 168 with the own rows kept, up to
//     3 steps; 152-162 for 4). One H100, 512^3 double: 24
//     rows of 4 points a lane ran 300 GCell/s (3 steps, half the grid), 48 rows of 2 points a
//     lane (one 16-byte vector) 103-115; one H200, 2 steps in 32 rows of 2 and 16 warps
//     (112-120 registers of 128, no spills) ran 351 GCell/s against 359 for 24 rows.
//   * Box: float 2 steps in 40 rows of 2 a thread, 20 warps (80-96 registers of 102), up to 4
//     in 32 rows of 2, 16 warps (109-128 of 128); double 24 rows of 2, 12 warps, 2 steps
//     (142-168 of 168; 3 steps in 24 rows of 3 and 8 warps ran 143 GCell/s against 183 for 2
//     steps on an H200). The box is latency-bound: the most warps whose registers fit one
//     block an SM, and the taller regions have fewer redundant rows (one H200, 512^3 float, 2
//     steps in 40 rows: 438 GCell/s against 404 for 3 steps in 32). The class form in C
//     order the same; x along the rows carries four values a point instead of two: float 24
//     rows of 2, 12 warps, double 16 rows of 2, 8 warps.
struct relay_choice {
    int ry, nw;
};
__host__ __device__ constexpr relay_choice relay_shape(bool box, bool dbl, int k,
                                                      bool x_fastest = false)
{
    if (box && x_fastest)
        return !dbl ? relay_choice{2, 12} : relay_choice{2, 8};
    if (box)
        return dbl ? relay_choice{2, 12} : k <= 2 ? relay_choice{2, 20} : relay_choice{2, 16};
    return dbl ? relay_choice{2, 12} : k <= 4 ? relay_choice{3, 16} : relay_choice{2, 16};
}

// The most steps sweep_relay is instantiated for: fast_kmax's for taps; for the class form,
// what fits the registers without spilling much (x along the rows carries twice the values).
template <typename T, class S>
constexpr int relay_kmax()
{
    constexpr bool dbl = sizeof(T) == 8;
    if constexpr (S::classes)
        return S::x_fastest ? (dbl ? 2 : 3) : (dbl ? 3 : 4);
    else
        return fast_kmax(S::n == 7, dbl);
}

// sweep_relay's configuration for K steps of taps S (none beyond relay_kmax).
template <typename T, class S, int K>
fused_cfg config_k()
{
    fused_cfg f = {};
    if constexpr (K >= 2 && K <= relay_kmax<T, S>()) {
        constexpr relay_choice sh =
            relay_shape(relay_taps<S>::box, sizeof(T) == 8, K, S::x_fastest);
        using C = relay_cfg<T, K, sh.ry, sh.nw>;
        f.func = (const void *)sweep_relay<T, S, K, sh.ry, sh.nw, true>;
        f.alt = (const void *)sweep_relay<T, S, K, sh.ry, sh.nw, false>;
        f.launch = launch_relay<T, S, K, sh.ry, sh.nw>;
        f.nt = C::NT, f.smem = C::smem, f.tx = C::TX, f.ty = C::TY;
        // Shares for the stars only: one H200, 512^3, the plan's steps, against chunks (both
        // with the narrow strip): 7-point float 912 GCell/s against 876, double 444-448
        // against 440; the 27-point box lost, float 418 against 455, double 233-235 against
        // 250 (docs/performance.md).
        f.txn = C::TXN, f.tyn = C::TYN, f.shares = relay_taps<S>::star;
    }
    return f;
}

template <class S>
fused_cfg config(bool dbl, int k)
{
    return with_steps(k, [dbl](auto kc) {
        constexpr int K = decltype(kc)::value;
        return dbl ? config_k<double, S, K>() : config_k<float, S, K>();
    });
}

} // namespace

fused_cfg relay_entry(bool dbl, int shape, int k)
{
    switch (shape) {
    case SHAPE_7C: return config<taps_7c>(dbl, k);
    case SHAPE_7F: return config<taps_7f>(dbl, k);
    case SHAPE_27C: return config<taps_27c>(dbl, k);
    case SHAPE_BOX_C: return config<taps_box_classes>(dbl, k);
    case SHAPE_BOX_F: return config<taps_box_classes_r>(dbl, k);
    default: return fused_cfg{};
    }
}

} // namespace tide_stencil
