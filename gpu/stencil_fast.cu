// stencil_fast.cu: several steps of a compile-time tap list, each level's state in
// registers (sweep_fast; see stencil.cu): the 27-point box in the reversed storage order.
#include "gpu/stencil_kernel.cuh"

namespace tide_stencil {
namespace {

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

// sweep_fast's tiles (strip rows MY, tile height TY) per precision and steps k. A block has one
// thread per strip of level 1's 64 x H(1) tile, NT = 64 ceil(H(1) / MY), and each thread
// carries, per level, MY values per kept plane of its own column and per partial sum (2 + 2),
// plus an arrival's window and the next plane's prefetch. ptxas gives a block of NT threads
// 65536 / roundup(NT, 128) registers a thread; the tiles below are the tallest whose register
// needs (measured with ptxas for sm_90) fit that without spilling: H(1) = 24 (NT 384, 168
// registers) or 16 (NT 256, 255) rows for MY = 4.
struct tile_choice {
    int my, ty;
};
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

template <typename T, class S, int K, int TY, int MY>
cudaError_t launch_fast(const tide_sweep *s, const sweep_state *st, const fused_cfg &f, int k,
                        const void *src, void *dst, cudaStream_t stream)
{
    sweep_fast<T, S, K, TY, MY><<<f.blocks, f.nt, f.smem, stream>>>(
        make_args<T>(s, st, f, src, dst, k), weights_of<T, S::n>(st->wh, S::n));
    return cudaGetLastError();
}

// sweep_fast's configuration for K steps of taps S (none beyond fast_shape's kmax).
template <typename T, class S, int K>
fused_cfg config_k()
{
    fused_cfg f = {};
    if constexpr (K >= 2 && K <= fast_shape<T, S>::kmax) {
        constexpr int TY = fast_shape<T, S>::ty(K), MY = fast_shape<T, S>::my(K);
        using C = fast_cfg<T, S, K, TY, MY>;
        f.func = (const void *)sweep_fast<T, S, K, TY, MY>;
        f.launch = launch_fast<T, S, K, TY, MY>;
        f.nt = C::NT, f.smem = C::smem, f.tx = C::TX, f.ty = TY;
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

fused_cfg fast_entry(bool dbl, int shape, int k)
{
    return shape == SHAPE_27F ? config<taps_27f>(dbl, k) : fused_cfg{};
}

} // namespace tide_stencil
