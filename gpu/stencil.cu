// stencil.cu: the stencil sweeps of the CUDA backend (backend.h's tide_sweep; gpu/stencil.h):
// which kernel runs a sweep of k steps, its tiles and chunks, the taps in device memory, and
// the launch. The kernels are in files of their own, with what they share in
// stencil_kernel.cuh.
//
// A sweep does `steps` time steps of a constant-coefficient stencil from src into dst (two
// distinct arrays holding the whole grid, in storage order: n[0] the slowest dimension, whose
// planes we stream, n[2] the fastest). Four kernels, all computing every update in the
// contract's order (backend.h) with explicit roundings, so the results are bitwise those of the
// CPU loop however the steps are grouped:
//
//  - sweep_one<T, S> (stencil_one.cu): one step, the reference and the fallback. A thread per point
//    of the (n[1], n[2]) plane, marching along ONE_Z planes of n[0] (the planes it and its
//    neighbours read stay in L1); the built-in stencils' taps are compiled in (S), any other list
//    is read from device memory; the neighbours' indices wrapped along periodic dimensions.
//
//  - sweep_generic<T, R> (stencil_generic.cu): `steps` >= 2 steps in one pass over memory for any
//    taps of radius R (in any order, up to 729), by the plane streaming of backend.h. A block owns
//    an output tile of TX x TY points of the plane and a chunk [z0, z1) of planes. Level t (the
//    data after t steps) is computed on the tile grown by (K - t) R on each side (the halo,
//    computed redundantly by the neighbouring blocks too), and on the planes
//    [z0 - (K - t) R, z1 + (K - t) R). Planes enter in order: at pipeline step j level 0 loads
//    plane z0 - K R + j from src (prefetched into registers one step ahead, so the loads of the
//    next plane overlap this step's arithmetic), then level t = 1 .. K computes its plane
//    q = z0 - K R + j - t R from the 2 R + 1 planes q - R .. q + R that level t - 1 keeps in a
//    ring in shared memory, and level K writes its plane to dst. One __syncthreads separates the
//    levels (K per pipeline step).
//
//  - sweep_fast<T, Taps, K, TY, MY> (stencil_fast.cu): the same pipeline, with the tap list known
//    at compile time (the built-in 27-point stencil in the storage order of tide's Fortran layout,
//    its taps not sorted by dz) and K a template parameter, so each level's state lives in
//    registers. A thread owns a column strip of MY rows at a fixed x in every level's tile and
//    keeps, across pipeline steps:
//      * the values of level t - 1 in its own column for the planes still needed (so for a
//        7-point update each plane of the own column is read from shared memory once, and of
//        the neighbours only the two along x and, at the strip's ends, those along y);
//      * the partial sums of the updates in progress: the taps of an update are applied as soon
//        as every tap before them in the list can be (each at the arrival of the plane of the
//        largest dz so far).
//    The schedule (which tap at which arrival, which value from registers, how deep the rings)
//    is computed at compile time from the tap list (struct sched).
//
//  - sweep_relay<T, Taps, K, RY, NW, VEC> (stencil_relay.cu): the same pipeline for the built-in
//    7-point stencils (both orders) and the 27-point stencil in C order (taps sorted by dz), one
//    barrier per pipeline step instead of K: each level hands its plane to the next through a
//    double-buffered shared plane, a lane owns four consecutive columns (moved as one vector) and
//    the x neighbours come by warp shuffles; the 27-point update is three groups of nine taps, one
//    per plane, carried as partial sums from plane to plane (see its section), or in the class
//    form (backend.h) each plane's sums shared by the three updates that read it.
//
// The class form of the 27-point box with x, y, z along storage dimensions 0, 1, 2 or 2, 1, 0
// is fused by sweep_relay, along other axes by sweep_generic (which takes either form);
// sweep_fast applies taps.
//
// Tiles and chunks: a block's threads are 64 lanes along x (a warp reads 32 consecutive elements
// of a row: no bank conflicts) times rows of strips of MY rows. Level 1's tile is 64 wide, so
// TX = 64 - 2 (K - 1) R; TY is the fast kernels' fast_tile (the most rows whose per-thread state
// fits the registers without spilling) or generic_entry's (the most rows whose rings fit shared
// memory). The slowest dimension is cut into chunks by plan_chunks (waves of blocks x planes a
// block streams), and blocks run chunk-major so that neighbouring tiles, which share halos,
// are resident together and find them in L2. sweep_relay's tiles are 128 columns wide, with a
// strip of narrow tiles (half the columns, twice the rows) where the columns left fit one; for
// the stars its blocks, one wave of them, each take an equal share of the tiles' planes, tile
// after tile, so that no SM idles in a partial last wave (plan_chunks; the box keeps chunks:
// docs/performance.md, "Stencils").
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
#include <cstdio>
#include <new>
#include <cuda_runtime.h>
#include "backend/device.h"
#include "gpu/stencil.h"
#include "gpu/stencil_kernel.cuh"

namespace tide_stencil {
namespace {

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
    if (s->classes)
        return s->axis[1] != 1                                 ? SHAPE_BOX_ANY
               : s->axis[0] == 0 && s->axis[2] == 2            ? SHAPE_BOX_C
                                                               : SHAPE_BOX_F;
    return same_taps<taps_7c>(s)    ? SHAPE_7C
           : same_taps<taps_7f>(s)  ? SHAPE_7F
           : same_taps<taps_27c>(s) ? SHAPE_27C
           : same_taps<taps_27f>(s) ? SHAPE_27F
                                    : SHAPE_GENERIC;
}

// The configuration for k steps: the fast kernel when there is one for these taps, else the
// generic one; func NULL when neither fits.
fused_cfg entry_for(const tide_sweep *s, int shape, int k, size_t smem_block, size_t smem_sm)
{
    fused_cfg f = {};
    // sweep_relay counts in-plane offsets in int
    const bool relay = shape == SHAPE_7C || shape == SHAPE_7F || shape == SHAPE_27C ||
                       shape == SHAPE_BOX_C || shape == SHAPE_BOX_F;
    long long pitch[2];
    tide_sweep_pitch(s, pitch);
    if (shape != SHAPE_GENERIC && (!relay || pitch[0] <= INT_MAX))
        f = relay ? relay_entry(s->dbl, shape, k) : fast_entry(s->dbl, shape, k);
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
    const int width = xhi - (xlo & ~3); // from make_args's xb
    f.ntx = (width + f.tx - 1) / f.tx;
    f.nty = (yhi - ylo + f.ty - 1) / f.ty;
    f.ntyn = 0;
    if (f.txn > 0 && width % f.tx && width % f.tx <= f.txn) { // the rest in a narrow strip
        f.ntx = width / f.tx;
        f.ntyn = (yhi - ylo + f.tyn - 1) / f.tyn;
    }
    const long long tiles = (long long)f.ntx * f.nty + f.ntyn,
                    conc = imax(1, sms * f.bps / (1 + imax(0, s->beside)));
    if (tiles > INT_MAX)
        return TIDE_ERR_TOO_LARGE;
    f.share = 0;
    if (f.shares) {
        // Equal shares of the tiles' planes, one a block, tile after tile, as many blocks as
        // one wave holds: a block's time, its share's planes and the halo planes of the runs
        // it cuts the share into (at most 2 + share / n0), only falls as the shares shrink.
        const long long work = tiles * n0, g = conc < work ? conc : work;
        f.share = (work + g - 1) / g;
        f.zlen = n0;
        f.blocks = (int)((work + f.share - 1) / f.share);
        return 0;
    }
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
} // namespace tide_stencil

using namespace tide_stencil;

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
    if (s->classes)
        for (int i = 0; i < 4; i++)
            st->wh[i] = s->cw[i];
    else if (st->shape != SHAPE_GENERIC)
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
        e = launch_one(s, st, src, dst, cs);
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

