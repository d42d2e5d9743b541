// stencil_generic.cu: several steps of any taps in one pass over memory (sweep_generic;
// see stencil.cu), and its configuration for the shared memory an SM has.
#include "gpu/stencil_kernel.cuh"

namespace tide_stencil {
namespace {

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
                    if (a.classes) {
                        // The class form: u(i, i1, i2) at offsets i, i1, i2 along x, y, z,
                        // which lie along storage dimensions a.ax.
#pragma unroll
                        for (int m = 0; m < MY; m++)
                            if (m < rv)
                                acc[m] = box_classes(a.cw, [&](int i, int i1, int i2) {
                                    int o[3] = {0, 0, 0};
                                    o[a.ax[0]] += i, o[a.ax[1]] += i1, o[a.ax[2]] += i2;
                                    int slot = jm - (R - o[0]);
                                    slot += slot < 0 ? RD : 0;
                                    return p0[slot * planep + (m + o[1]) * Wp + o[2]];
                                });
                    }
                    for (int i = 0; i < (a.classes ? 0 : a.ntaps); i++) {
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

template <typename T, int R>
cudaError_t launch_generic(const tide_sweep *s, const sweep_state *st, const fused_cfg &f, int k,
                           const void *src, void *dst, cudaStream_t stream)
{
    sweep_generic<T, R><<<f.blocks, GEN_NT, f.smem, stream>>>(
        make_args<T>(s, st, f, src, dst, k));
    return cudaGetLastError();
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

} // namespace

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

} // namespace tide_stencil
