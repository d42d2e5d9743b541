// pipeline.cu: the out-of-card streaming engine (see pipeline.h).
//
// A run goes in three steps:
//   1. describe every chunk, validate every transfer and classify every host array: pinned (or
//      device/managed) memory is copied directly; pageable memory is either registered for the
//      run (TIDE_PAGEABLE_REGISTER, falling back to staging where registration fails) or staged;
//   2. for each chunk, on the stream of its slot: call before_upload, pack staged uploads (CPU
//      threads) into the slot's pinned upload staging, enqueue the uploads, call work, enqueue
//      the downloads (staged ones into the slot's pinned download staging); chunks whose
//      downloads are staged or who have an after_download callback become pending: once their
//      downloads have landed, CPU threads unpack them and after_download is called, in chunk
//      order;
//   3. finish the pending chunks, wait for every stream, unregister.
// tide_pipeline_run does all of it on the calling thread; tide_pipeline_start does what must
// happen on the caller's thread (recording the after_caller event) and hands the rest to the
// pipeline's worker thread, which tide_pipeline_wait joins.
//
// Ordering (each slot has one stream, so chunk i + nslots follows chunk i on the device):
//   - slot s's upload staging is rewritten (host packing) only after up_done[s], recorded after
//     the previous chunk of that slot enqueued its uploads, has completed;
//   - slot s's download staging is rewritten (by the device) only after the host has finished
//     the previous chunk of that slot: downloads of chunk i are enqueued after every pending
//     chunk <= i - nslots is finished (in chunk order), so the down_done event of a pending
//     chunk is never re-recorded before that chunk is finished;
//   - ordered jobs: work_done is recorded after each chunk's work and waited for by the next
//     chunk's stream before its work (one event suffices: the wait captures its last record);
//   - after_caller: caller_done, recorded on the caller's stream when the run starts, is waited
//     for by every slot stream before anything else, and by the host before the first packing
//     or before_upload.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <thread>
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
#include "backend/pipeline.h"
extern "C" {
#include "comm/region.h"
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
    std::vector<void *> buf; // the slot's own buffers, then the resident ones (shared)
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

// The pipeline's host thread and what it shares with the caller (under mu).
struct Worker {
    std::thread thread; // started by the first tide_pipeline_start
    std::mutex mu;
    std::condition_variable cv;
    const tide_pipeline_job *job = nullptr; // handed to the thread, not yet taken
    bool done = false;                      // the run started last has ended
    bool quit = false;                      // destroy: the thread returns
    int status = 0;                         // of the run started last
    char why[512] = "";
    bool busy = false; // caller side only: started and not waited for
};

// Makes a device current for the life of the object, then restores the previous one; e is the
// CUDA error of the switch (nothing is restored after a failure).
struct OnDevice {
    int prev = -1, dev;
    cudaError_t e;
    explicit OnDevice(int d) : dev(d)
    {
        e = cudaGetDevice(&prev);
        if (e == cudaSuccess && prev != dev)
            e = cudaSetDevice(dev);
        if (e != cudaSuccess)
            prev = dev;
    }
    ~OnDevice()
    {
        if (prev != dev)
            cudaSetDevice(prev);
    }
    OnDevice(const OnDevice &) = delete;
    OnDevice &operator=(const OnDevice &) = delete;
};

} // namespace

struct tide_pipeline {
    std::vector<size_t> bytes; // of every buffer a transfer names: nbufs per slot, then resident
    std::vector<void *> resident;
    size_t stage_bytes = 0, device_bytes = 0;
    int nbufs = 0, device = 0;
    size_t max_pitch = 0;
    std::vector<Slot> slots;
    cudaEvent_t work_done = nullptr;   // ordered jobs: the last chunk's work has finished
    cudaEvent_t caller_done = nullptr; // after_caller: recorded on the caller's stream at start
    std::vector<Timing> timing_pool; // completed event sets, reused across chunks and runs
    Lists lists;                     // a run's lists, between runs
    tide_pipeline_stats stats = {};
    Worker w;
};

namespace {

// Frees what the pipeline holds; its worker thread, if any, has been stopped.
void release(tide_pipeline *p)
{
    for (Slot &s : p->slots) {
        for (size_t b = 0; b < s.buf.size() && b < (size_t)p->nbufs; b++)
            if (s.buf[b])
                cudaFree(s.buf[b]);
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
    for (void *b : p->resident)
        if (b)
            cudaFree(b);
    for (cudaEvent_t e : {p->work_done, p->caller_done})
        if (e)
            cudaEventDestroy(e);
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
    bool caller_waited = false; // the host has waited for the after_caller event
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
    int setup();
    int describe_all();
    void reserve();
    int classify();
    int stage_check();
    int follow_caller();
    int host_ready();
    int chunk(int i);
    int host_input(Slot &s, int i);
    int do_work(Slot &s, int i);
    int enqueue(Slot &s, size_t first, size_t n, bool up);
    int drain(int upto, bool block);
    void unpack(const Pending &q);
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
            if (x.buf < 0 || (size_t)x.buf >= p->bytes.size())
                return fail(why, len, TIDE_ERR_ARGUMENT,
                            "chunk %d %s %d: device buffer %d, the pipeline has %d per slot and "
                            "%zu resident",
                            i, dir, kk, x.buf, p->nbufs, p->resident.size());
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
            // The device layout, every field, must lie inside the buffer it names.
            const size_t bb = p->bytes[(size_t)x.buf];
            if (x.dbyte > bb || (uint64_t)count(x.dbox) > (bb - x.dbyte) / field_unit)
                return fail(why, len, TIDE_ERR_ARGUMENT,
                            "chunk %d %s %d: device layout %s of %d field(s) of %zu bytes at byte "
                            "%zu ends past the %zu bytes of buffer %d",
                            i, dir, kk, box_str(x.dbox, b1, sizeof b1), j.batch, j.elem, x.dbyte,
                            bb, x.buf);
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

// Finish the pending chunks <= upto, in chunk order: unpack their staged downloads and call
// after_download. block: wait for each to land; else stop at the first that has not yet.
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
        unpack(q);
        pend_head++;
        if (job->after_download) {
            Range r("tide pipeline: after_download");
            int st = job->after_download(job->user, q.chunk);
            if (st)
                return fail(why, len, st, "after_download of chunk %d failed with code %d",
                            q.chunk, st);
        }
    }
    return 0;
}

// Copy a landed chunk's staged downloads from the slot's staging into their host arrays.
void Run::unpack(const Pending &q)
{
    const Chunk &c = ch[(size_t)q.chunk];
    if (!c.stage_down)
        return;
    Range r("tide pipeline: unpack downloads");
    const Slot &s = p->slots[(size_t)q.slot];
    for (size_t k = c.down0; k < c.down0 + c.ndown; k++) {
        const Xfer &x = xf[k];
        if (!x.staged || x.bytes == 0)
            continue;
        const tide_box src = dense(x.x.region, x.x.hbox);
        tide_copy_region(job->elem, job->batch, &x.x.region, (char *)s.stage[1] + x.stage_off,
                         &src, x.x.host, &x.x.hbox, threads);
    }
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

// after_caller: every slot stream waits for the caller's stream before anything else.
int Run::follow_caller()
{
    for (Slot &s : p->slots) {
        cudaError_t e = cudaStreamWaitEvent(s.stream, p->caller_done, 0);
        if (e != cudaSuccess)
            return cuda_fail(why, len, e, "waiting for the caller's stream");
    }
    return 0;
}

// after_caller: the host waits for the caller's stream once, before CPU threads first touch a
// host array (the caller's stream may still be writing it).
int Run::host_ready()
{
    if (!job->after_caller || caller_waited)
        return 0;
    cudaError_t e = cudaEventSynchronize(p->caller_done);
    if (e != cudaSuccess)
        return cuda_fail(why, len, e, "waiting for the caller's stream");
    caller_waited = true;
    return 0;
}

// The host side of chunk i's uploads: before_upload, then packing its staged uploads into the
// slot's upload staging once the slot's previous chunk has read it.
int Run::host_input(Slot &s, int i)
{
    const Chunk &c = ch[(size_t)i];
    if (!job->before_upload && !c.stage_up)
        return 0;
    int st = host_ready();
    if (st)
        return st;
    if (job->before_upload) {
        Range r("tide pipeline: before_upload");
        if ((st = job->before_upload(job->user, i)))
            return fail(why, len, st, "before_upload of chunk %d failed with code %d", i, st);
    }
    if (!c.stage_up)
        return 0;
    cudaError_t e = cudaEventSynchronize(s.up_done);
    if (e != cudaSuccess)
        return cuda_fail(why, len, e, "waiting for the upload staging");
    Range r("tide pipeline: pack uploads");
    for (size_t k = c.up0; k < c.up0 + c.nup; k++) {
        const Xfer &x = xf[k];
        if (!x.staged || x.bytes == 0)
            continue;
        const tide_box dst = dense(x.x.region, x.x.hbox);
        tide_copy_region(job->elem, job->batch, &x.x.region, x.x.host, &x.x.hbox,
                         (char *)s.stage[0] + x.stage_off, &dst, threads);
    }
    return 0;
}

// Chunk i's work on the slot's stream; in an ordered job after chunk i-1's work, and marking
// its own end for chunk i+1.
int Run::do_work(Slot &s, int i)
{
    cudaError_t e;
    if (job->ordered && i > 0 &&
        (e = cudaStreamWaitEvent(s.stream, p->work_done, 0)) != cudaSuccess)
        return cuda_fail(why, len, e, "waiting for the previous chunk's work");
    if (job->work) {
        Range r("tide pipeline: work");
        int st = job->work(job->user, i, s.buf.data(), (void *)s.stream);
        if (st)
            return fail(why, len, st, "the work of chunk %d failed with code %d", i, st);
    }
    if (job->ordered && (e = cudaEventRecord(p->work_done, s.stream)) != cudaSuccess)
        return cuda_fail(why, len, e, "cudaEventRecord");
    return 0;
}

int Run::chunk(int i)
{
    const size_t ns = p->slots.size();
    const int si = (int)((size_t)i % ns);
    Slot &s = p->slots[(size_t)si];
    const Chunk &c = ch[(size_t)i];
    cudaError_t e;
    int st = drain(i - 1, false); // opportunistic: whatever has landed already
    if (!st)
        st = host_input(s, i);
    if (st)
        return st;
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
    if (job->uploaded && (st = job->uploaded(job->user, i, s.buf.data(), (void *)s.stream)))
        return fail(why, len, st, "the uploaded callback of chunk %d failed with code %d", i, st);
    if ((st = do_work(s, i)))
        return st;
    if ((e = cudaEventRecord(t.e[2], s.stream)) != cudaSuccess)
        return cuda_fail(why, len, e, "cudaEventRecord");
    // The previous chunk of this slot must be finished before its download staging is reused
    // (and before down_done of this slot is recorded again).
    if ((st = drain(i - (int)ns, true)))
        return st;
    if ((st = enqueue(s, c.down0, c.ndown, false)))
        return st;
    if ((e = cudaEventRecord(s.down_done, s.stream)) != cudaSuccess ||
        (e = cudaEventRecord(t.e[3], s.stream)) != cudaSuccess)
        return cuda_fail(why, len, e, "cudaEventRecord");
    if (c.stage_down || job->after_download)
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

// Everything a run builds before the first chunk is enqueued (std::bad_alloc caught here: no
// allocation happens later).
int Run::setup()
{
    try {
        int st = describe_all();
        if (!st)
            st = classify();
        if (!st)
            st = stage_check();
        if (!st)
            reserve();
        return st;
    } catch (const std::bad_alloc &) {
        return fail(why, len, TIDE_ERR_NOMEM, "pipeline run: out of host memory");
    }
}

int check_job(const tide_pipeline_job *job, char *why, size_t len)
{
    if (!job->describe || job->elem == 0 || job->batch < 1 || job->nchunks < 0 ||
        job->max_up < 0 || job->max_down < 0 ||
        (job->pageable != TIDE_PAGEABLE_STAGE && job->pageable != TIDE_PAGEABLE_REGISTER))
        return fail(why, len, TIDE_ERR_ARGUMENT,
                    "bad pipeline job: describe %s, elem %zu, batch %d, %d chunks, at most %d "
                    "uploads and %d downloads a chunk, pageable mode %d",
                    job->describe ? "set" : "NULL", job->elem, job->batch, job->nchunks,
                    job->max_up, job->max_down, (int)job->pageable);
    return 0;
}

// What happens on the caller's thread before a run: the job checked, and the after_caller
// event recorded behind what the caller has enqueued so far.
int prepare(tide_pipeline *p, const tide_pipeline_job *job, char *why, size_t len)
{
    int st = check_job(job, why, len);
    if (st || !job->after_caller)
        return st;
    OnDevice on(p->device);
    if (on.e != cudaSuccess)
        return cuda_fail(why, len, on.e, "making the pipeline's device current");
    cudaStream_t cs = job->caller_stream ? (cudaStream_t)job->caller_stream : cudaStreamLegacy;
    cudaError_t e = cudaEventRecord(p->caller_done, cs);
    if (e != cudaSuccess)
        return cuda_fail(why, len, e, "recording an event on the caller's stream");
    return 0;
}

// The run itself, on the pipeline's device, from whichever thread calls it; sets p->stats.
int execute(tide_pipeline *p, const tide_pipeline_job *job, char *why, size_t len)
{
    const auto t0 = std::chrono::steady_clock::now();
    p->stats = tide_pipeline_stats{};
    OnDevice on(p->device);
    if (on.e != cudaSuccess)
        return cuda_fail(why, len, on.e, "making the pipeline's device current");
    Run r;
    r.p = p;
    r.job = job;
    r.why = why;
    r.len = len;
    r.threads = std::max(1, omp_get_max_threads());
    r.swap_lists(p->lists);
    int st = r.setup();
    if (st) {
        r.unregister();
    } else {
        if (job->after_caller)
            st = r.follow_caller();
        for (int i = 0; i < job->nchunks && !st; i++)
            st = r.chunk(i);
        if (st)
            r.abandon();
        else
            st = r.finish();
    }
    r.swap_lists(p->lists); // kept for the next run
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

// The worker thread: runs each job handed to it, until destroy asks it to quit.
void serve(tide_pipeline *p)
{
    Worker &w = p->w;
    std::unique_lock<std::mutex> lk(w.mu);
    for (;;) {
        w.cv.wait(lk, [&w] { return w.job || w.quit; });
        if (!w.job)
            return;
        const tide_pipeline_job *job = w.job;
        w.job = nullptr;
        lk.unlock();
        const int st = execute(p, job, w.why, sizeof w.why);
        if (job->ended)
            job->ended(job->user, st);
        lk.lock();
        w.status = st;
        w.done = true;
        w.cv.notify_all();
    }
}

int start(tide_pipeline *p, const tide_pipeline_job *job)
{
    Worker &w = p->w;
    if (w.busy)
        return TIDE_ERR_ARGUMENT;
    w.why[0] = '\0';
    int st = prepare(p, job, w.why, sizeof w.why);
    if (!st && !w.thread.joinable()) {
        try {
            w.thread = std::thread(serve, p);
        } catch (const std::exception &x) {
            st = fail(w.why, sizeof w.why, TIDE_ERR_BACKEND,
                      "pipeline: cannot start its host thread: %s", x.what());
        }
    }
    w.busy = true;
    if (st && job->ended)
        job->ended(job->user, st);
    std::lock_guard<std::mutex> lk(w.mu);
    if (st) { // nothing runs; wait reports the failure
        w.status = st;
        w.done = true;
    } else {
        w.job = job;
        w.done = false;
        w.cv.notify_all();
    }
    return 0;
}

int wait_run(tide_pipeline *p, char *why, size_t len)
{
    Worker &w = p->w;
    if (!w.busy)
        return fail(why, len, TIDE_ERR_ARGUMENT, "pipeline wait: no run was started");
    std::unique_lock<std::mutex> lk(w.mu);
    w.cv.wait(lk, [&w] { return w.done; });
    w.busy = false;
    if (w.status)
        fail(why, len, w.status, "%s", w.why);
    return w.status;
}

// Waits for a started run, then ends the worker thread.
void stop(tide_pipeline *p)
{
    Worker &w = p->w;
    if (w.busy)
        wait_run(p, nullptr, 0);
    if (!w.thread.joinable())
        return;
    {
        std::lock_guard<std::mutex> lk(w.mu);
        w.quit = true;
    }
    w.cv.notify_all();
    w.thread.join();
}

// Checks a configuration; *device: the bytes of every device buffer, *stage: staging bytes.
int check_config(const tide_pipeline_config *c, tide_pipeline **out, size_t *device,
                 size_t *stage, char *why, size_t len)
{
    if (!c || !out)
        return fail(why, len, TIDE_ERR_ARGUMENT, "pipeline: no %s",
                    c ? "output pointer" : "configuration");
    if (c->nslots < 1 || c->nbufs < 0 || c->nresident < 0 ||
        (long long)c->nbufs + c->nresident < 1 || (c->nbufs > 0 && !c->buf_bytes) ||
        (c->nresident > 0 && !c->resident_bytes))
        return fail(why, len, TIDE_ERR_ARGUMENT,
                    "pipeline: %d slots, %d buffers per slot (sizes %s), %d resident buffers "
                    "(sizes %s); at least one slot and one buffer are needed",
                    c->nslots, c->nbufs, c->buf_bytes ? "given" : "NULL", c->nresident,
                    c->resident_bytes ? "given" : "NULL");
    size_t sum[2] = {0, 0}; // per slot, resident
    for (int k = 0; k < 2; k++) {
        const int n = k ? c->nresident : c->nbufs;
        const size_t *b = k ? c->resident_bytes : c->buf_bytes;
        for (int i = 0; i < n; i++) {
            if (b[i] == 0)
                return fail(why, len, TIDE_ERR_ARGUMENT, "pipeline: %s buffer %d has 0 bytes",
                            k ? "resident" : "slot", i);
            if (b[i] > SIZE_MAX - sum[k])
                return fail(why, len, TIDE_ERR_TOO_LARGE, "pipeline: buffers too large");
            sum[k] += b[i];
        }
    }
    if (sum[0] > (SIZE_MAX - sum[1]) / (size_t)c->nslots)
        return fail(why, len, TIDE_ERR_TOO_LARGE, "pipeline: %d slots of %zu bytes", c->nslots,
                    sum[0]);
    *device = sum[0] * (size_t)c->nslots + sum[1];
    *stage = c->stage_bytes ? c->stage_bytes : sum[0];
    return 0;
}

cudaError_t new_event(cudaEvent_t *ev)
{
    cudaError_t e = cudaEventCreateWithFlags(ev, cudaEventDisableTiming);
    if (e != cudaSuccess)
        *ev = nullptr;
    return e;
}

// cudaMalloc, with the reason of a failure in why.
int new_buffer(tide_pipeline *p, void **b, size_t bytes, const char *name, int index,
               char *why, size_t len)
{
    cudaError_t e = cudaMalloc(b, bytes);
    if (e == cudaSuccess)
        return 0;
    *b = nullptr;
    char what[160];
    snprintf(what, sizeof what, "pipeline: cudaMalloc of %zu bytes for %s %d (%zu device bytes "
             "in all)", bytes, name, index, p->device_bytes);
    return cuda_fail(why, len, e, what);
}

// Slot k's stream, events and buffers; the resident buffers are allocated already.
int setup_slot(tide_pipeline *p, size_t k, char *why, size_t len)
{
    Slot &s = p->slots[k];
    cudaError_t e = cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        s.stream = nullptr;
        return cuda_fail(why, len, e, "pipeline: cudaStreamCreate");
    }
    if ((e = new_event(&s.up_done)) != cudaSuccess || (e = new_event(&s.down_done)) != cudaSuccess)
        return cuda_fail(why, len, e, "pipeline: cudaEventCreate");
    for (int b = 0; b < p->nbufs; b++) {
        int st = new_buffer(p, &s.buf[(size_t)b], p->bytes[(size_t)b], "the buffer of slot",
                            b, why, len);
        if (st)
            return st;
    }
    for (size_t r = 0; r < p->resident.size(); r++)
        s.buf[(size_t)p->nbufs + r] = p->resident[r];
    return 0;
}

// Everything on the device: the pipeline's events, the resident buffers, the slots.
int setup_device(tide_pipeline *p, char *why, size_t len)
{
    int pitch = 0;
    cudaError_t e = cudaGetDevice(&p->device);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&pitch, cudaDevAttrMaxPitch, p->device);
    if (e != cudaSuccess)
        return cuda_fail(why, len, e, "pipeline: querying the device");
    p->max_pitch = pitch > 0 ? (size_t)pitch : 0;
    if ((e = new_event(&p->work_done)) != cudaSuccess ||
        (e = new_event(&p->caller_done)) != cudaSuccess)
        return cuda_fail(why, len, e, "pipeline: cudaEventCreate");
    for (size_t r = 0; r < p->resident.size(); r++) {
        int st = new_buffer(p, &p->resident[r], p->bytes[(size_t)p->nbufs + r], "resident buffer",
                            (int)r, why, len);
        if (st)
            return st;
    }
    for (size_t k = 0; k < p->slots.size(); k++) {
        int st = setup_slot(p, k, why, len);
        if (st)
            return st;
    }
    return 0;
}

} // namespace

extern "C" int tide_pipeline_create_config(const tide_pipeline_config *c, tide_pipeline **out,
                                           char *why, size_t len)
{
    size_t device = 0, stage = 0;
    int st = check_config(c, out, &device, &stage, why, len);
    if (st)
        return st;
    tide_pipeline *p = new (std::nothrow) tide_pipeline;
    if (!p)
        return fail(why, len, TIDE_ERR_NOMEM, "pipeline: out of host memory");
    p->stage_bytes = stage;
    p->device_bytes = device;
    p->nbufs = c->nbufs;
    try {
        p->bytes.assign(c->buf_bytes, c->buf_bytes + c->nbufs);
        p->bytes.insert(p->bytes.end(), c->resident_bytes, c->resident_bytes + c->nresident);
        p->resident.assign((size_t)c->nresident, nullptr);
        p->slots.resize((size_t)c->nslots);
        for (Slot &s : p->slots)
            s.buf.assign(p->bytes.size(), nullptr);
    } catch (const std::bad_alloc &) {
        release(p);
        return fail(why, len, TIDE_ERR_NOMEM, "pipeline: out of host memory");
    }
    if ((st = setup_device(p, why, len))) {
        release(p);
        return st;
    }
    *out = p;
    return 0;
}

extern "C" int tide_pipeline_create(size_t buf_bytes, int nbufs, int nslots, size_t stage_bytes,
                                    tide_pipeline **out, char *why, size_t len)
{
    if (!out || buf_bytes == 0 || nbufs < 1 || nslots < 1)
        return fail(why, len, TIDE_ERR_ARGUMENT,
                    "pipeline: %d slots of %d buffers of %zu bytes (each must be at least 1)%s",
                    nslots, nbufs, buf_bytes, out ? "" : ", no output pointer");
    std::vector<size_t> sizes;
    try {
        sizes.assign((size_t)nbufs, buf_bytes);
    } catch (const std::bad_alloc &) {
        return fail(why, len, TIDE_ERR_NOMEM, "pipeline: out of host memory");
    }
    tide_pipeline_config c = {nslots, nbufs, sizes.data(), 0, nullptr, stage_bytes};
    return tide_pipeline_create_config(&c, out, why, len);
}

extern "C" void tide_pipeline_destroy(tide_pipeline *p)
{
    if (!p)
        return;
    stop(p);
    release(p);
}

extern "C" int tide_pipeline_run(tide_pipeline *p, const tide_pipeline_job *job, char *why,
                                 size_t len)
{
    if (!p || !job)
        return fail(why, len, TIDE_ERR_ARGUMENT, "pipeline run: %s is NULL",
                    p ? "the job" : "the pipeline");
    if (p->w.busy)
        return fail(why, len, TIDE_ERR_ARGUMENT,
                    "pipeline run: a started run has not been waited for");
    int st = prepare(p, job, why, len);
    return st ? st : execute(p, job, why, len);
}

extern "C" int tide_pipeline_start(tide_pipeline *p, const tide_pipeline_job *job)
{
    return p && job ? start(p, job) : TIDE_ERR_ARGUMENT;
}

extern "C" int tide_pipeline_wait(tide_pipeline *p, char *why, size_t len)
{
    if (!p)
        return fail(why, len, TIDE_ERR_ARGUMENT, "pipeline wait: the pipeline is NULL");
    return wait_run(p, why, len);
}

extern "C" void *tide_pipeline_resident(const tide_pipeline *p, int r)
{
    return p && r >= 0 && (size_t)r < p->resident.size() ? p->resident[(size_t)r] : nullptr;
}

extern "C" size_t tide_pipeline_device_bytes(const tide_pipeline *p)
{
    return p ? p->device_bytes : 0;
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
