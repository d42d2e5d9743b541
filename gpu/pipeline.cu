// pipeline.cu: the out-of-card streaming engine (see pipeline.h).
//
// A run goes in three steps:
//   1. describe every chunk, validate every transfer and classify every host array: pinned (or
//      device/managed) memory is copied directly; pageable memory is either registered for the
//      run (TIDE_PAGEABLE_REGISTER, falling back to staging where registration fails) or staged;
//   2. for each chunk, on the stream of its slot: pack staged uploads (CPU threads) into the
//      slot's pinned upload staging, enqueue the uploads, call work, enqueue the downloads
//      (staged ones into the slot's pinned download staging, unpacked by CPU threads once they
//      have landed);
//   3. unpack what is left, wait for every stream, unregister.
//
// Ordering (each slot has one stream, so chunk i + nslots follows chunk i on the device):
//   - slot s's upload staging is rewritten (host packing) only after up_done[s], recorded after
//     the previous chunk of that slot enqueued its uploads, has completed;
//   - slot s's download staging is rewritten (by the device) only after the host has unpacked
//     the previous chunk of that slot: downloads of chunk i are enqueued after every pending
//     unpack of chunks <= i - nslots is done (in chunk order), so the down_done event of a
//     pending chunk is never re-recorded before that chunk is unpacked.
#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <vector>
#include <unistd.h>
#include <omp.h>
#include <cuda_runtime.h>
#if defined(__has_include)
#if __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#define TIDE_NVTX 1
#endif
#endif
#include "pipeline.h"
extern "C" {
#include "region.h"
}

namespace {

// NVTX ranges (visible in Nsight Systems); nothing when the header is missing.
struct Range {
#if TIDE_NVTX
    explicit Range(const char *name) { nvtxRangePushA(name); }
    ~Range() { nvtxRangePop(); }
#else
    explicit Range(const char *) {}
#endif
    Range(const Range &) = delete;
    Range &operator=(const Range &) = delete;
};

__attribute__((format(printf, 4, 5))) int fail(char *why, size_t len, int code, const char *fmt,
                                                ...)
{
    if (why && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, len, fmt, ap);
        va_end(ap);
    }
    return code;
}

int cuda_fail(char *why, size_t len, cudaError_t e, const char *what)
{
    cudaGetLastError(); // clear a non-sticky error so later calls do not see it
    return fail(why, len, e == cudaErrorMemoryAllocation ? TIDE_ERR_NOMEM : TIDE_ERR_BACKEND,
                "%s failed: %s (CUDA error %d)", what, cudaGetErrorString(e), (int)e);
}

struct Slot {
    cudaStream_t stream = nullptr;
    std::vector<void *> buf;
    cudaEvent_t up_done = nullptr;   // the slot's last uploads have read their sources
    cudaEvent_t down_done = nullptr; // the slot's last downloads have landed
    void *stage[2] = {nullptr, nullptr}; // pinned staging: [0] uploads, [1] downloads
};

// Events around one chunk's phases: before uploads, after uploads, after work, after downloads.
struct Timing {
    cudaEvent_t e[4];
};

// One transfer of a run, validated, with where its host side lives.
struct Xfer {
    tide_xfer x;
    bool staged;      // through the slot's staging (pageable and not registered)
    size_t stage_off; // bytes into the staging of its direction
    size_t bytes;     // region bytes, every field
};

struct Chunk {
    size_t up0, nup, down0, ndown; // ranges in Run::xf
    size_t stage_up, stage_down;  // staged bytes in each direction
};

enum HostKind { HOST_DIRECT = 0, HOST_PAGEABLE = 1 };

struct Pending {
    int chunk, slot;
};

// A page-aligned host span a transfer touches (REGISTER mode).
struct Span {
    uintptr_t lo, hi;
    size_t xfer;
};

// What a run builds on the host, kept by the pipeline from one run to the next (see Run), so
// that runs of a shape it has run before allocate nothing.
struct Lists {
    std::vector<Xfer> xf;
    std::vector<Chunk> ch;
    std::vector<std::pair<const void *, int>> kind;
    std::vector<std::pair<void *, size_t>> registered;
    std::vector<Pending> pending;
    std::vector<Timing> timing;
    std::vector<tide_xfer> up, down;
    std::vector<Span> spans;
};

} // namespace

struct tide_pipeline {
    size_t buf_bytes = 0, stage_bytes = 0;
    int nbufs = 0, device = 0;
    size_t max_pitch = 0;
    std::vector<Slot> slots;
    std::vector<Timing> timing_pool; // completed event sets, reused across chunks and runs
    Lists lists;                     // a run's lists, between runs
    tide_pipeline_stats stats = {};
};

namespace {

void destroy(tide_pipeline *p)
{
    for (Slot &s : p->slots) {
        for (void *b : s.buf)
            if (b)
                cudaFree(b);
        if (s.up_done)
            cudaEventDestroy(s.up_done);
        if (s.down_done)
            cudaEventDestroy(s.down_done);
        if (s.stream)
            cudaStreamDestroy(s.stream);
        for (void *h : s.stage)
            if (h)
                cudaFreeHost(h);
    }
    for (Timing &t : p->timing_pool)
        for (cudaEvent_t e : t.e)
            cudaEventDestroy(e);
    delete p;
}

const char *box_str(const tide_box &b, char *s, size_t n)
{
    snprintf(s, n, "[%d,%d)x[%d,%d)x[%d,%d) order %d%d%d", b.lo[0], b.hi[0], b.lo[1], b.hi[1],
             b.lo[2], b.hi[2], b.order[0], b.order[1], b.order[2]);
    return s;
}

bool valid_order(const int o[3])
{
    int seen = 0;
    for (int k = 0; k < 3; k++) {
        if (o[k] < 0 || o[k] > 2)
            return false;
        seen |= 1 << o[k];
    }
    return seen == 7;
}

bool same_order(const tide_box &a, const tide_box &b)
{
    return a.order[0] == b.order[0] && a.order[1] == b.order[1] && a.order[2] == b.order[2];
}

int64_t count(const tide_box &b)
{
    int64_t n = 1;
    for (int d = 0; d < 3; d++)
        n *= tide_ext(&b, d);
    return n;
}

// The region stored densely in layout `like`'s storage order: the staging side of a transfer.
tide_box dense(const tide_box &region, const tide_box &like)
{
    tide_box b = region;
    for (int k = 0; k < 3; k++)
        b.order[k] = like.order[k];
    return b;
}

// One transfer's copy, reduced to as few dimensions as both sides allow. Dimension 0 is the
// fastest (unit stride on both sides: hbox and dbox share their storage order); strides and
// offsets count elements.
struct Geom {
    int nd;
    int64_t n[3];
    int64_t hs[3], ds[3];
    int64_t hoff, doff;
    int64_t hfield, dfield; // elements between fields on each side
    int copies;             // fields copied one at a time (1 when the fields are a dimension)
};

Geom geometry(const tide_box &region, const tide_box &hbox, const tide_box &dbox, int batch)
{
    Geom g;
    int64_t hst[3], dst[3];
    tide_box_strides(&hbox, hst);
    tide_box_strides(&dbox, dst);
    g.nd = 0;
    for (int k = 2; k >= 0; k--) {
        int d = hbox.order[k];
        int64_t n = tide_ext(&region, d);
        if (g.nd > 0 && n == 1)
            continue; // one point adds no dimension (the fastest stays: it has unit stride)
        g.n[g.nd] = n;
        g.hs[g.nd] = hst[d];
        g.ds[g.nd] = dst[d];
        g.nd++;
    }
    // Merge the next dimension into the fastest while both sides are contiguous across it.
    while (g.nd >= 2 && g.hs[1] == g.n[0] && g.ds[1] == g.n[0]) {
        g.n[0] *= g.n[1];
        for (int k = 1; k + 1 < g.nd; k++) {
            g.n[k] = g.n[k + 1];
            g.hs[k] = g.hs[k + 1];
            g.ds[k] = g.ds[k + 1];
        }
        g.nd--;
    }
    g.hoff = tide_box_offset(&hbox, &region);
    g.doff = tide_box_offset(&dbox, &region);
    g.hfield = count(hbox);
    g.dfield = count(dbox);
    g.copies = batch;
    if (batch > 1 && g.nd == 1 && g.hfield == g.n[0] && g.dfield == g.n[0]) {
        g.n[0] *= batch; // whole boxes, contiguous: every field in one run
        g.copies = 1;
    } else if (batch > 1 && g.nd < 3) {
        g.n[g.nd] = batch; // the fields as one more (outermost) dimension
        g.hs[g.nd] = g.hfield;
        g.ds[g.nd] = g.dfield;
        g.nd++;
        g.copies = 1;
    }
    return g;
}

// Copy nd dimensions (n, strides ss on the source and ts on the destination, in elements) from
// src to dst on stream st, as one 1D, 2D or 3D copy where the pitches allow, else as several.
cudaError_t emit(int nd, const int64_t *n, const char *src, const int64_t *ss, char *dst,
                 const int64_t *ts, size_t elem, size_t max_pitch, cudaStream_t st)
{
    const size_t width = (size_t)n[0] * elem;
    if (nd == 1)
        return cudaMemcpyAsync(dst, src, width, cudaMemcpyDefault, st);
    const size_t sp = (size_t)ss[1] * elem, tp = (size_t)ts[1] * elem;
    if (nd == 2) {
        if (sp <= max_pitch && tp <= max_pitch)
            return cudaMemcpy2DAsync(dst, tp, src, sp, width, (size_t)n[1], cudaMemcpyDefault, st);
        for (int64_t j = 0; j < n[1]; j++) {
            cudaError_t e = cudaMemcpyAsync(dst + j * tp, src + j * sp, width, cudaMemcpyDefault, st);
            if (e != cudaSuccess)
                return e;
        }
        return cudaSuccess;
    }
    // 3D: the slice stride must be a whole number of rows, at least as many as are copied.
    if (sp <= max_pitch && tp <= max_pitch && ss[2] % ss[1] == 0 && ts[2] % ts[1] == 0 &&
        ss[2] / ss[1] >= n[1] && ts[2] / ts[1] >= n[1]) {
        cudaMemcpy3DParms m;
        memset(&m, 0, sizeof m);
        m.srcPtr = make_cudaPitchedPtr(const_cast<char *>(src), sp, width, (size_t)(ss[2] / ss[1]));
        m.dstPtr = make_cudaPitchedPtr(dst, tp, width, (size_t)(ts[2] / ts[1]));
        m.extent = make_cudaExtent(width, (size_t)n[1], (size_t)n[2]);
        m.kind = cudaMemcpyDefault;
        return cudaMemcpy3DAsync(&m, st);
    }
    for (int64_t j = 0; j < n[2]; j++) {
        cudaError_t e = emit(2, n, src + j * ss[2] * (int64_t)elem, ss, dst + j * ts[2] * (int64_t)elem,
                             ts, elem, max_pitch, st);
        if (e != cudaSuccess)
            return e;
    }
    return cudaSuccess;
}

// One run. Its lists are swapped in from the pipeline at the start and back at the end, so
// their capacity carries over from run to run; each is cleared before it is filled.
struct Run {
    tide_pipeline *p;
    const tide_pipeline_job *job;
    char *why;
    size_t len;
    int threads = 1;
    std::vector<Xfer> xf;
    std::vector<Chunk> ch;
    std::vector<std::pair<const void *, int>> kind; // host pointer -> HostKind, each once
    std::vector<std::pair<void *, size_t>> registered; // ranges registered for this run
    // Sized before the first chunk is enqueued, so that nothing allocates from then on:
    std::vector<Pending> pending; // chunks whose staged downloads await unpacking, in order
    size_t pend_head = 0;         // pending[pend_head..) are still to unpack
    std::vector<Timing> timing;   // the event set of each enqueued chunk
    size_t tim_head = 0, tim_n = 0; // timing[tim_head..tim_n) still hold events
    std::vector<tide_xfer> up, down; // one chunk's description
    std::vector<Span> spans;
    double t_up = 0, t_work = 0, t_down = 0;
    size_t bytes_up = 0, bytes_down = 0;

    void swap_lists(Lists &l)
    {
        xf.swap(l.xf);
        ch.swap(l.ch);
        kind.swap(l.kind);
        registered.swap(l.registered);
        pending.swap(l.pending);
        timing.swap(l.timing);
        up.swap(l.up);
        down.swap(l.down);
        spans.swap(l.spans);
    }
    int &kind_of(const void *host)
    {
        for (auto &k : kind)
            if (k.first == host)
                return k.second;
        kind.emplace_back(host, HOST_DIRECT);
        return kind.back().second;
    }
    int describe_all();
    void reserve();
    int classify();
    int stage_check();
    int chunk(int i);
    int enqueue(Slot &s, size_t first, size_t n, bool up);
    int drain(int upto, bool block);
    int acquire(Timing &t);
    int harvest(const Timing &t);
    int finish();
    void abandon();
    void unregister();
};

int Run::describe_all()
{
    const tide_pipeline_job &j = *job;
    up.resize((size_t)j.max_up + 1);
    down.resize((size_t)j.max_down + 1);
    xf.clear();
    kind.clear();
    ch.resize((size_t)j.nchunks);
    char b1[96], b2[96];
    if (j.elem > SIZE_MAX / (size_t)j.batch)
        return fail(why, len, TIDE_ERR_TOO_LARGE, "pipeline: %d fields of %zu bytes", j.batch,
                    j.elem);
    const size_t field_unit = j.elem * (size_t)j.batch; // bytes per point, every field
    for (int i = 0; i < j.nchunks; i++) {
        int nup = 0, ndown = 0;
        int st = j.describe(j.user, i, up.data(), &nup, down.data(), &ndown);
        if (st)
            return fail(why, len, st, "describing chunk %d failed with code %d", i, st);
        if (nup < 0 || nup > j.max_up || ndown < 0 || ndown > j.max_down)
            return fail(why, len, TIDE_ERR_ARGUMENT,
                        "chunk %d has %d uploads and %d downloads; the job allows %d and %d", i,
                        nup, ndown, j.max_up, j.max_down);
        Chunk &c = ch[(size_t)i];
        c.up0 = xf.size();
        c.nup = (size_t)nup;
        c.down0 = c.up0 + c.nup;
        c.ndown = (size_t)ndown;
        c.stage_up = c.stage_down = 0;
        for (int k = 0; k < nup + ndown; k++) {
            const tide_xfer &x = k < nup ? up[(size_t)k] : down[(size_t)(k - nup)];
            const char *dir = k < nup ? "upload" : "download";
            int kk = k < nup ? k : k - nup;
            if (!x.host)
                return fail(why, len, TIDE_ERR_ARGUMENT, "chunk %d %s %d: no host array", i, dir,
                            kk);
            if (x.buf < 0 || x.buf >= p->nbufs)
                return fail(why, len, TIDE_ERR_ARGUMENT,
                            "chunk %d %s %d: device buffer %d, the slots have %d", i, dir, kk,
                            x.buf, p->nbufs);
            if (!valid_order(x.hbox.order) || !valid_order(x.dbox.order) ||
                !same_order(x.hbox, x.dbox))
                return fail(why, len, TIDE_ERR_ARGUMENT,
                            "chunk %d %s %d: host layout %s and device layout %s must have the "
                            "same storage order (a permutation of 0 1 2)",
                            i, dir, kk, box_str(x.hbox, b1, sizeof b1),
                            box_str(x.dbox, b2, sizeof b2));
            for (int d = 0; d < 3; d++)
                if (x.region.hi[d] < x.region.lo[d] || x.hbox.hi[d] < x.hbox.lo[d] ||
                    x.dbox.hi[d] < x.dbox.lo[d])
                    return fail(why, len, TIDE_ERR_ARGUMENT,
                                "chunk %d %s %d: a box with hi < lo in dimension %d", i, dir, kk,
                                d);
            const int64_t n = count(x.region);
            tide_box tmp;
            if (n > 0 && tide_box_intersect(&x.region, &x.hbox, &tmp) != n)
                return fail(why, len, TIDE_ERR_ARGUMENT,
                            "chunk %d %s %d: region %s is not inside the host layout %s", i, dir,
                            kk, box_str(x.region, b1, sizeof b1), box_str(x.hbox, b2, sizeof b2));
            if (n > 0 && tide_box_intersect(&x.region, &x.dbox, &tmp) != n)
                return fail(why, len, TIDE_ERR_ARGUMENT,
                            "chunk %d %s %d: region %s is not inside the device layout %s", i,
                            dir, kk, box_str(x.region, b1, sizeof b1),
                            box_str(x.dbox, b2, sizeof b2));
            // The device layout, every field, must lie inside the buffer.
            if (x.dbyte > p->buf_bytes ||
                (uint64_t)count(x.dbox) > (p->buf_bytes - x.dbyte) / field_unit)
                return fail(why, len, TIDE_ERR_ARGUMENT,
                            "chunk %d %s %d: device layout %s of %d field(s) of %zu bytes at byte "
                            "%zu ends past the %zu-byte buffer",
                            i, dir, kk, box_str(x.dbox, b1, sizeof b1), j.batch, j.elem, x.dbyte,
                            p->buf_bytes);
            Xfer e;
            e.x = x;
            e.staged = false;
            e.stage_off = 0;
            e.bytes = (size_t)n * (size_t)j.batch * j.elem;
            xf.push_back(e);
            kind_of(x.host);
        }
    }
    return 0;
}

// Which host arrays are pageable; in REGISTER mode, register the page-aligned spans the job
// touches (overlapping spans merged), staging the transfers whose span cannot be registered.
int Run::classify()
{
    for (auto &k : kind) {
        cudaPointerAttributes a;
        cudaError_t e = cudaPointerGetAttributes(&a, k.first);
        if (e != cudaSuccess) {
            cudaGetLastError(); // unknown to CUDA: plain pageable memory
            k.second = HOST_PAGEABLE;
        } else {
            // Pinned or registered host memory, device or managed memory: copied directly.
            k.second = a.type == cudaMemoryTypeUnregistered ? HOST_PAGEABLE : HOST_DIRECT;
        }
    }
    for (Xfer &e : xf)
        e.staged = e.bytes > 0 && kind_of(e.x.host) == HOST_PAGEABLE;
    if (job->pageable != TIDE_PAGEABLE_REGISTER)
        return 0;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    spans.clear();
    for (size_t k = 0; k < xf.size(); k++) {
        const Xfer &e = xf[k];
        if (!e.staged)
            continue;
        // First and last byte of the region's points, every field, in the host array.
        int64_t stride[3], last = 0;
        tide_box_strides(&e.x.hbox, stride);
        for (int d = 0; d < 3; d++)
            last += (int64_t)(e.x.region.hi[d] - 1 - e.x.hbox.lo[d]) * stride[d];
        last += (int64_t)(job->batch - 1) * count(e.x.hbox);
        const uintptr_t base = (uintptr_t)e.x.host;
        const uintptr_t lo = base + (uintptr_t)tide_box_offset(&e.x.hbox, &e.x.region) * job->elem;
        const uintptr_t hi = base + (uintptr_t)(last + 1) * job->elem;
        spans.push_back({lo / page * page, (hi + page - 1) / page * page, k});
    }
    std::sort(spans.begin(), spans.end(), [](const Span &a, const Span &b) { return a.lo < b.lo; });
    registered.reserve(spans.size());
    for (size_t a = 0; a < spans.size();) {
        uintptr_t lo = spans[a].lo, hi = spans[a].hi;
        size_t b = a + 1;
        while (b < spans.size() && spans[b].lo <= hi) {
            hi = std::max(hi, spans[b].hi);
            b++;
        }
        cudaError_t e = cudaHostRegister((void *)lo, hi - lo, cudaHostRegisterDefault);
        if (e == cudaSuccess) {
            registered.emplace_back((void *)lo, (size_t)(hi - lo)); // capacity reserved
            for (size_t c = a; c < b; c++)
                xf[spans[c].xfer].staged = false;
        } else {
            cudaGetLastError(); // not fatal: these transfers go through the staging
        }
        a = b;
    }
    return 0;
}

// Staging offsets, the staging size check, and the lazy allocation of the staging.
int Run::stage_check()
{
    bool need[2] = {false, false};
    for (size_t i = 0; i < ch.size(); i++) {
        Chunk &c = ch[i];
        for (int dir = 0; dir < 2; dir++) {
            size_t first = dir ? c.down0 : c.up0, n = dir ? c.ndown : c.nup, off = 0;
            for (size_t k = first; k < first + n; k++) {
                Xfer &e = xf[k];
                if (!e.staged || e.bytes == 0)
                    continue;
                e.stage_off = off;
                off += e.bytes;
                if (off > p->stage_bytes)
                    return fail(why, len, TIDE_ERR_ARGUMENT,
                                "chunk %zu stages more than the %zu bytes of %s staging of a "
                                "slot (pageable host arrays; a larger stage_bytes, pinned "
                                "arrays or smaller chunks avoid this)",
                                i, p->stage_bytes, dir ? "download" : "upload");
            }
            (dir ? c.stage_down : c.stage_up) = off;
            need[dir] = need[dir] || off > 0;
        }
    }
    for (int dir = 0; dir < 2; dir++) {
        if (!need[dir])
            continue;
        for (Slot &s : p->slots) {
            if (s.stage[dir])
                continue;
            cudaError_t e = cudaHostAlloc(&s.stage[dir], p->stage_bytes, cudaHostAllocDefault);
            if (e != cudaSuccess) {
                s.stage[dir] = nullptr;
                cudaGetLastError();
                return fail(why, len, TIDE_ERR_NOMEM,
                            "cannot allocate %zu bytes of pinned staging: %s", p->stage_bytes,
                            cudaGetErrorString(e));
            }
        }
    }
    return 0;
}

int Run::harvest(const Timing &t)
{
    float ms[3];
    for (int k = 0; k < 3; k++) {
        cudaError_t e = cudaEventElapsedTime(&ms[k], t.e[k], t.e[k + 1]);
        if (e != cudaSuccess)
            return cuda_fail(why, len, e, "cudaEventElapsedTime");
    }
    t_up += ms[0] * 1e-3;
    t_work += ms[1] * 1e-3;
    t_down += ms[2] * 1e-3;
    return 0;
}

// An event set for the next chunk: from the pool, else the oldest in-flight one if it has
// completed (its times harvested), else a new one.
int Run::acquire(Timing &t)
{
    if (!p->timing_pool.empty()) {
        t = p->timing_pool.back();
        p->timing_pool.pop_back();
        return 0;
    }
    if (tim_head < tim_n && cudaEventQuery(timing[tim_head].e[3]) == cudaSuccess) {
        t = timing[tim_head++];
        return harvest(t);
    }
    cudaGetLastError(); // cudaEventQuery's cudaErrorNotReady
    for (int k = 0; k < 4; k++) {
        cudaError_t e = cudaEventCreate(&t.e[k]);
        if (e != cudaSuccess) {
            while (k-- > 0)
                cudaEventDestroy(t.e[k]);
            return cuda_fail(why, len, e, "cudaEventCreate");
        }
    }
    return 0;
}

// Unpack the staged downloads of pending chunks <= upto, in chunk order. block: wait for each;
// else stop at the first that has not landed yet.
int Run::drain(int upto, bool block)
{
    while (pend_head < pending.size() && pending[pend_head].chunk <= upto) {
        const Pending q = pending[pend_head];
        Slot &s = p->slots[(size_t)q.slot];
        cudaError_t e;
        if (block) {
            e = cudaEventSynchronize(s.down_done);
        } else {
            e = cudaEventQuery(s.down_done);
            if (e == cudaErrorNotReady) {
                cudaGetLastError();
                return 0;
            }
        }
        if (e != cudaSuccess)
            return cuda_fail(why, len, e, "waiting for a download");
        Range r("tide pipeline: unpack downloads");
        const Chunk &c = ch[(size_t)q.chunk];
        for (size_t k = c.down0; k < c.down0 + c.ndown; k++) {
            const Xfer &x = xf[k];
            if (!x.staged || x.bytes == 0)
                continue;
            const tide_box src = dense(x.x.region, x.x.hbox);
            tide_copy_region(job->elem, job->batch, &x.x.region, (char *)s.stage[1] + x.stage_off,
                             &src, x.x.host, &x.x.hbox, threads);
        }
        pend_head++;
    }
    return 0;
}

// Everything the enqueueing loop will store, allocated now (may throw std::bad_alloc).
void Run::reserve()
{
    pending.clear();
    pending.reserve(ch.size());
    timing.resize(ch.size());
    p->timing_pool.reserve(p->timing_pool.size() + ch.size());
}

// Enqueue the transfers [first, first + n) of one direction on the slot's stream: each
// between the host side (the array, or its dense copy in the slot's staging) and the device
// buffer, as merged 1D/2D/3D copies.
int Run::enqueue(Slot &s, size_t first, size_t n, bool up)
{
    Range r(up ? "tide pipeline: enqueue uploads" : "tide pipeline: enqueue downloads");
    const size_t elem = job->elem;
    for (size_t k = first; k < first + n; k++) {
        const Xfer &x = xf[k];
        if (x.bytes == 0)
            continue;
        const tide_box hb = x.staged ? dense(x.x.region, x.x.hbox) : x.x.hbox;
        char *hbase = x.staged ? (char *)s.stage[up ? 0 : 1] + x.stage_off : (char *)x.x.host;
        const Geom g = geometry(x.x.region, hb, x.x.dbox, job->batch);
        char *dbase = (char *)s.buf[(size_t)x.x.buf] + x.x.dbyte;
        for (int f = 0; f < g.copies; f++) {
            char *h = hbase + (g.hoff + f * g.hfield) * (int64_t)elem;
            char *d = dbase + (g.doff + f * g.dfield) * (int64_t)elem;
            cudaError_t e = up ? emit(g.nd, g.n, h, g.hs, d, g.ds, elem, p->max_pitch, s.stream)
                               : emit(g.nd, g.n, d, g.ds, h, g.hs, elem, p->max_pitch, s.stream);
            if (e != cudaSuccess)
                return cuda_fail(why, len, e, up ? "enqueueing an upload" : "enqueueing a download");
        }
        (up ? bytes_up : bytes_down) += x.bytes;
    }
    return 0;
}

int Run::chunk(int i)
{
    const size_t ns = p->slots.size();
    const int si = (int)((size_t)i % ns);
    Slot &s = p->slots[(size_t)si];
    const Chunk &c = ch[(size_t)i];
    const size_t elem = job->elem;
    cudaError_t e;
    int st = drain(i - 1, false); // opportunistic: whatever has landed already
    if (st)
        return st;
    if (c.stage_up) {
        // The previous chunk of this slot must be done reading the upload staging.
        if ((e = cudaEventSynchronize(s.up_done)) != cudaSuccess)
            return cuda_fail(why, len, e, "waiting for the upload staging");
        Range r("tide pipeline: pack uploads");
        for (size_t k = c.up0; k < c.up0 + c.nup; k++) {
            const Xfer &x = xf[k];
            if (!x.staged || x.bytes == 0)
                continue;
            const tide_box dst = dense(x.x.region, x.x.hbox);
            tide_copy_region(elem, job->batch, &x.x.region, x.x.host, &x.x.hbox,
                             (char *)s.stage[0] + x.stage_off, &dst, threads);
        }
    }
    Timing &t = timing[tim_n];
    if ((st = acquire(t)))
        return st;
    tim_n++; // from here on, finish() or abandon() returns its events to the pool
    if ((e = cudaEventRecord(t.e[0], s.stream)) != cudaSuccess)
        return cuda_fail(why, len, e, "cudaEventRecord");
    if ((st = enqueue(s, c.up0, c.nup, true)))
        return st;
    if ((e = cudaEventRecord(s.up_done, s.stream)) != cudaSuccess ||
        (e = cudaEventRecord(t.e[1], s.stream)) != cudaSuccess)
        return cuda_fail(why, len, e, "cudaEventRecord");
    if (job->work) {
        Range r("tide pipeline: work");
        st = job->work(job->user, i, s.buf.data(), (void *)s.stream);
        if (st)
            return fail(why, len, st, "the work of chunk %d failed with code %d", i, st);
    }
    if ((e = cudaEventRecord(t.e[2], s.stream)) != cudaSuccess)
        return cuda_fail(why, len, e, "cudaEventRecord");
    // The previous chunk of this slot must be unpacked before its download staging is reused
    // (and before down_done of this slot is recorded again).
    if ((st = drain(i - (int)ns, true)))
        return st;
    if ((st = enqueue(s, c.down0, c.ndown, false)))
        return st;
    if ((e = cudaEventRecord(s.down_done, s.stream)) != cudaSuccess ||
        (e = cudaEventRecord(t.e[3], s.stream)) != cudaSuccess)
        return cuda_fail(why, len, e, "cudaEventRecord");
    if (c.stage_down)
        pending.push_back({i, si}); // capacity reserved: no allocation
    return 0;
}

void Run::unregister()
{
    for (auto &r : registered)
        if (cudaHostUnregister(r.first) != cudaSuccess)
            cudaGetLastError();
    registered.clear();
}

// Normal end: unpack what is left, wait for every stream, collect the phase times.
int Run::finish()
{
    int st = drain(job->nchunks, true);
    for (Slot &s : p->slots) {
        cudaError_t e = cudaStreamSynchronize(s.stream);
        if (e != cudaSuccess && !st)
            st = cuda_fail(why, len, e, "cudaStreamSynchronize");
    }
    for (; tim_head < tim_n; tim_head++) {
        if (!st)
            st = harvest(timing[tim_head]);
        p->timing_pool.push_back(timing[tim_head]); // capacity reserved: no allocation
    }
    unregister();
    return st;
}

// After an error: nothing may still be in flight into the staging or host arrays on return.
void Run::abandon()
{
    for (Slot &s : p->slots)
        if (cudaStreamSynchronize(s.stream) != cudaSuccess)
            cudaGetLastError();
    pend_head = pending.size();
    for (; tim_head < tim_n; tim_head++)
        p->timing_pool.push_back(timing[tim_head]); // capacity reserved: no allocation
    unregister();
}

int run(tide_pipeline *p, const tide_pipeline_job *job, char *why, size_t len)
{
    const auto t0 = std::chrono::steady_clock::now();
    p->stats = tide_pipeline_stats{};
    if (!job->describe || job->elem == 0 || job->batch < 1 || job->nchunks < 0 ||
        job->max_up < 0 || job->max_down < 0 ||
        (job->pageable != TIDE_PAGEABLE_STAGE && job->pageable != TIDE_PAGEABLE_REGISTER))
        return fail(why, len, TIDE_ERR_ARGUMENT,
                    "bad pipeline job: describe %s, elem %zu, batch %d, %d chunks, at most %d "
                    "uploads and %d downloads a chunk, pageable mode %d",
                    job->describe ? "set" : "NULL", job->elem, job->batch, job->nchunks,
                    job->max_up, job->max_down, (int)job->pageable);
    int prev = -1;
    cudaError_t e = cudaGetDevice(&prev);
    if (e != cudaSuccess)
        return cuda_fail(why, len, e, "cudaGetDevice");
    if (prev != p->device && (e = cudaSetDevice(p->device)) != cudaSuccess)
        return cuda_fail(why, len, e, "cudaSetDevice");
    Run r;
    r.p = p;
    r.job = job;
    r.why = why;
    r.len = len;
    r.threads = std::max(1, omp_get_max_threads());
    r.swap_lists(p->lists);
    int st = 0;
    try {
        // Allocations (std::bad_alloc) happen here only, before anything is enqueued.
        st = r.describe_all();
        if (!st)
            st = r.classify();
        if (!st)
            st = r.stage_check();
        if (!st)
            r.reserve();
    } catch (const std::bad_alloc &) {
        st = fail(why, len, TIDE_ERR_NOMEM, "pipeline run: out of host memory");
    }
    if (!st) {
        for (int i = 0; i < job->nchunks && !st; i++)
            st = r.chunk(i);
        if (st)
            r.abandon();
        else
            st = r.finish();
    } else {
        r.unregister();
    }
    r.swap_lists(p->lists); // kept for the next run
    if (prev != p->device)
        cudaSetDevice(prev);
    if (!st) {
        p->stats.total =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        p->stats.upload = r.t_up;
        p->stats.work = r.t_work;
        p->stats.download = r.t_down;
        p->stats.bytes_up = r.bytes_up;
        p->stats.bytes_down = r.bytes_down;
    }
    return st;
}

} // namespace

extern "C" int tide_pipeline_create(size_t buf_bytes, int nbufs, int nslots, size_t stage_bytes,
                                    tide_pipeline **out, char *why, size_t len)
{
    if (!out || buf_bytes == 0 || nbufs < 1 || nslots < 1)
        return fail(why, len, TIDE_ERR_ARGUMENT,
                    "pipeline: %d slots of %d buffers of %zu bytes (each must be at least 1)%s",
                    nslots, nbufs, buf_bytes, out ? "" : ", no output pointer");
    if (stage_bytes == 0) {
        if (buf_bytes > SIZE_MAX / (size_t)nbufs)
            return fail(why, len, TIDE_ERR_TOO_LARGE, "pipeline: %d buffers of %zu bytes",
                        nbufs, buf_bytes);
        stage_bytes = (size_t)nbufs * buf_bytes;
    }
    tide_pipeline *p = new (std::nothrow) tide_pipeline;
    if (!p)
        return fail(why, len, TIDE_ERR_NOMEM, "pipeline: out of host memory");
    p->buf_bytes = buf_bytes;
    p->stage_bytes = stage_bytes;
    p->nbufs = nbufs;
    try {
        p->slots.resize((size_t)nslots);
        for (Slot &s : p->slots)
            s.buf.assign((size_t)nbufs, nullptr);
    } catch (const std::bad_alloc &) {
        destroy(p);
        return fail(why, len, TIDE_ERR_NOMEM, "pipeline: out of host memory");
    }
    int st = 0, pitch = 0;
    cudaError_t e = cudaGetDevice(&p->device);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&pitch, cudaDevAttrMaxPitch, p->device);
    if (e != cudaSuccess)
        st = cuda_fail(why, len, e, "pipeline: querying the device");
    p->max_pitch = pitch > 0 ? (size_t)pitch : 0;
    for (size_t k = 0; k < p->slots.size() && !st; k++) {
        Slot &s = p->slots[k];
        if ((e = cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking)) != cudaSuccess) {
            s.stream = nullptr;
            st = cuda_fail(why, len, e, "pipeline: cudaStreamCreate");
        } else if ((e = cudaEventCreateWithFlags(&s.up_done, cudaEventDisableTiming)) !=
                   cudaSuccess) {
            s.up_done = nullptr;
            st = cuda_fail(why, len, e, "pipeline: cudaEventCreate");
        } else if ((e = cudaEventCreateWithFlags(&s.down_done, cudaEventDisableTiming)) !=
                   cudaSuccess) {
            s.down_done = nullptr;
            st = cuda_fail(why, len, e, "pipeline: cudaEventCreate");
        }
        for (size_t b = 0; b < s.buf.size() && !st; b++) {
            if ((e = cudaMalloc(&s.buf[b], buf_bytes)) != cudaSuccess) {
                s.buf[b] = nullptr;
                cudaGetLastError();
                st = fail(why, len, e == cudaErrorMemoryAllocation ? TIDE_ERR_NOMEM
                                                                    : TIDE_ERR_BACKEND,
                          "pipeline: cannot allocate %d slots x %d buffers of %zu bytes on the "
                          "device: %s (CUDA error %d)",
                          nslots, nbufs, buf_bytes, cudaGetErrorString(e), (int)e);
            }
        }
    }
    if (st) {
        destroy(p);
        return st;
    }
    *out = p;
    return 0;
}

extern "C" void tide_pipeline_destroy(tide_pipeline *p)
{
    if (p)
        destroy(p);
}

extern "C" int tide_pipeline_run(tide_pipeline *p, const tide_pipeline_job *job, char *why,
                                 size_t len)
{
    if (!p || !job)
        return fail(why, len, TIDE_ERR_ARGUMENT, "pipeline run: %s is NULL",
                    p ? "the job" : "the pipeline");
    return run(p, job, why, len);
}

extern "C" size_t tide_pipeline_device_bytes(const tide_pipeline *p)
{
    return p ? p->slots.size() * (size_t)p->nbufs * p->buf_bytes : 0;
}

extern "C" size_t tide_pipeline_pinned_bytes(const tide_pipeline *p)
{
    size_t n = 0;
    if (p)
        for (const Slot &s : p->slots)
            for (void *h : s.stage)
                if (h)
                    n += p->stage_bytes;
    return n;
}

extern "C" int tide_pipeline_slots(const tide_pipeline *p)
{
    return p ? (int)p->slots.size() : 0;
}

extern "C" void *tide_pipeline_stream(const tide_pipeline *p, int slot)
{
    return p && slot >= 0 && (size_t)slot < p->slots.size() ? (void *)p->slots[(size_t)slot].stream
                                                            : nullptr;
}

extern "C" int tide_pipeline_last_stats(const tide_pipeline *p, tide_pipeline_stats *s)
{
    if (!p || !s)
        return TIDE_ERR_ARGUMENT;
    *s = p->stats;
    return 0;
}
