/*
 * pipeline.h: the out-of-card streaming engine (private; C linkage, no CUDA types), the
 * backend's engine for operations on host arrays larger than the device; gpu/pipeline.cu
 * implements it (gpu/none.c in a build without CUDA, where every run fails).
 *
 * One engine serves every operation whose data lives in host memory and passes through the GPU
 * in pieces (FFT, Poisson, stencils, DGEMM). A job is a list of chunks. Chunk i:
 *   1. uploads: regions of host arrays copied into device buffers,
 *   2. work: whatever the operation does to those buffers (kernels, cuFFT, NCCL), enqueued on
 *      the slot's stream by a callback,
 *   3. downloads: regions of device buffers copied into host arrays.
 * Chunk i runs on slot i % nslots, each slot with its own stream and its own device buffers
 * (each buffer its own size), so the upload of chunk i+1, the work of chunk i and the download
 * of chunk i-1 overlap, in both PCIe directions at once. Work callbacks are called in chunk
 * order from one thread, so collective work (NCCL group calls) is issued in the same order on
 * every rank.
 *
 * Resident buffers are device buffers shared by every slot and kept across chunks and runs
 * (stencil border planes, a GEMM's C tile). Nothing orders the chunks' use of them unless the
 * job asks: an `ordered` job starts chunk i's work (and the downloads after it) only once chunk
 * i-1's work has finished on the device; uploads still overlap. Transfers into or out of a
 * resident buffer are ordered only within their chunk (uploads, work, downloads on the slot's
 * stream), so which chunks upload or download which parts of it is the job's business.
 *
 * Host arrays may be pinned (tide_host_alloc, cudaHostAlloc, cudaHostRegister) or pageable.
 * Pinned arrays are transferred directly with cudaMemcpy2D/3DAsync. Pageable ones go through
 * the engine's pinned staging slots, copied by CPU threads, as the run's `pageable` mode says.
 * No host transposition happens anywhere: a transfer moves a region between a host layout and
 * a device layout with the same storage order; permutations are the work's business. Optional
 * host callbacks let CPU code produce a chunk's input just before it is uploaded and consume a
 * chunk's output as soon as it has landed, while the GPU works on other chunks.
 *
 * A run either blocks (tide_pipeline_run: callbacks from the calling thread) or is handed to a
 * host thread the pipeline owns (tide_pipeline_start, then tide_pipeline_wait: callbacks from
 * that thread), so several pipelines, on one GPU or several, run at once from one caller. The
 * slot streams do not synchronize with the legacy default stream; a job that must follow work
 * the caller enqueued (filling a host source or a resident buffer) sets after_caller.
 * Calls on one pipeline must not be made from several threads at once.
 *
 * Host-side ordering: the engine orders nothing between chunks of different slots on the host
 * side. A host point that one chunk downloads must not be uploaded or downloaded by another
 * chunk of the same run (chunks own disjoint destination points; in-place jobs are fine when
 * each chunk reads and writes back its own points), with one exception: in an ordered job a
 * chunk may download points an earlier chunk uploaded. Its downloads follow its work, which
 * follows the earlier chunk's work, which follows that chunk's uploads on its stream, and a
 * staged upload is packed before it is enqueued (chunks are enqueued in order), so the host
 * has read those points before they are written.
 */
#ifndef TIDE_BACKEND_PIPELINE_H
#define TIDE_BACKEND_PIPELINE_H

#include <stddef.h>
#include "tide.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One transfer between host and device: the points of `region` (of every field) between a
 * host array laid out as hbox and device buffer `buf` laid out as dbox, whose first point is
 * dbyte bytes into that buffer. buf 0..nbufs-1 are the slot's own buffers, nbufs + r is resident
 * buffer r. region lies inside both boxes; hbox and dbox have the same storage order (order
 * field). Field f of the host array starts at element f * count(hbox), of the device side at
 * f * count(dbox). The whole device layout, every field, must fit the buffer it names:
 * dbyte + batch * count(dbox) * elem <= that buffer's bytes. An empty region is allowed and
 * moves nothing. Copies are 1D, 2D or 3D cudaMemcpy*Async calls on the dimensions left after
 * merging those that are contiguous on both sides (short rows are slow: prefer device layouts
 * whose fastest dimension is whole). */
typedef struct {
    void *host;
    tide_box hbox;
    tide_box region;
    int buf;
    size_t dbyte;
    tide_box dbox;
} tide_xfer;

/* How pageable host arrays are handled. Pinned, registered, managed and device memory is
 * copied directly in either mode (cudaPointerGetAttributes tells them apart). */
typedef enum {
    /* CPU threads (OpenMP, all of them) pack each chunk's uploads densely into the slot's pinned
     * upload staging, and unpack its downloads from the slot's pinned download staging once
     * they have landed; the staging of a slot is reused only when the device (uploads) or the
     * host (downloads) is done with its previous chunk. */
    TIDE_PAGEABLE_STAGE = 0,
    /* cudaHostRegister the page-aligned span each pageable array has in the job (overlapping
     * spans merged) for the duration of the run, then copy directly; spans that cannot be
     * registered (read-only memory, already registered pages) fall back to staging. */
    TIDE_PAGEABLE_REGISTER = 1
} tide_pageable_mode;

typedef struct {
    int nchunks;
    size_t elem;               /* bytes per element of every transfer */
    int batch;                 /* fields per transfer (1 normally) */
    int max_up, max_down;      /* most transfers one chunk may have in each direction */
    /* Describe chunk i: fill up[0..*nup) and down[0..*ndown). Returns 0 or a TIDE_ERR_* code.
     * Called once per chunk, in chunk order, for every chunk before the first transfer starts
     * (the run validates everything and registers pageable arrays up front), so it must not
     * depend on the results of earlier chunks, nor on what before_upload writes. */
    int (*describe)(void *user, int i, tide_xfer *up, int *nup, tide_xfer *down, int *ndown);
    /* Enqueue chunk i's device work on `stream` (a cudaStream_t) using buf[0..nbufs) (the
     * slot's buffers) and buf[nbufs..nbufs + nresident) (the resident buffers). NULL: no work (a
     * plain host<->device round trip). Returns 0 or a TIDE_ERR_* code. Called in chunk order,
     * after the chunk's uploads were enqueued on `stream` and before its downloads are; work on
     * other streams must start after an event recorded on `stream` (in an ordered job) and be
     * joined back into `stream` (events) before returning. The buffers of a slot are reused by
     * chunks i, i + nslots, ...; nothing is cleared between them. */
    int (*work)(void *user, int i, void *const *buf, void *stream);
    /* NULL, or called in chunk order just after chunk i's uploads were enqueued on `stream` and
     * before anything else of the chunk (in an ordered job, before the wait for chunk i-1's
     * work), with the buffers as work sees them: what needs only the uploads (a copy of them
     * to another GPU, on a stream of the job's) waits for an event recorded here, not for the
     * work before them. Returns 0 or a TIDE_ERR_* code that ends the run like a failing work
     * callback. */
    int (*uploaded)(void *user, int i, void *const *buf, void *stream);
    /* NULL, or, for a run handed over by tide_pipeline_start, called once with the run's
     * status when it has ended (from the pipeline's thread, or from start itself when the job
     * is bad), before tide_pipeline_wait can return it: jobs whose callbacks wait for another
     * pipeline's progress learn there that it will not come. */
    void (*ended)(void *user, int status);
    void *user;
    tide_pageable_mode pageable;
    /* Nonzero: chunk i's work, and the downloads after it, start on the device only once chunk
     * i-1's work has finished (an event recorded on chunk i-1's stream after its work, waited
     * for on chunk i's stream after its uploads were enqueued, so uploads still overlap). */
    int ordered;
    /* Host callbacks, NULL for none, returning 0 or a TIDE_ERR_* code that ends the run like a
     * failing work callback. before_upload(user, i) is called in chunk order just before chunk
     * i's uploads read their host sources (staged packing or direct copies), so CPU code can
     * produce chunk i's input while the GPU works on earlier chunks. after_download(user, i) is
     * called exactly once per chunk, in chunk order, once chunk i's downloads have landed in
     * host memory (staged ones unpacked): during the run as the engine notices (at the latest
     * before chunk i + nslots's downloads are enqueued, so a slow callback slows the run) and at
     * its end. A chunk's host destinations may be read and rewritten from then on. */
    int (*before_upload)(void *user, int i);
    int (*after_download)(void *user, int i);
    /* Nonzero: the run follows what was enqueued on caller_stream (a cudaStream_t of the
     * pipeline's device; NULL: the legacy default stream) before it started: an event recorded
     * there at tide_pipeline_run or tide_pipeline_start is waited for by every slot stream
     * before its first operation, and by the host before CPU threads first read or write a host
     * array (staged packing, before_upload). */
    int after_caller;
    void *caller_stream;
} tide_pipeline_job;

typedef struct tide_pipeline tide_pipeline;

/* The shape of a pipeline: nslots slots (>= 1; 3 or more overlap both directions with compute),
 * each with its own stream and nbufs device buffers, buffer b of buf_bytes[b] bytes; nresident
 * resident buffers, r of resident_bytes[r] bytes, shared by every slot (contents undefined
 * until the caller or a job writes them). Every size is at least 1; nbufs + nresident >= 1.
 * stage_bytes: pinned staging for pageable arrays per slot and direction (0: the sum of
 * buf_bytes), allocated on first need (by the first run that stages in that direction) and
 * kept until tide_pipeline_destroy. */
typedef struct {
    int nslots;
    int nbufs;
    const size_t *buf_bytes;
    int nresident;
    const size_t *resident_bytes;
    size_t stage_bytes;
} tide_pipeline_config;

/* A pipeline of shape *c on the current device. Returns 0, TIDE_ERR_ARGUMENT, TIDE_ERR_NOMEM,
 * TIDE_ERR_TOO_LARGE or TIDE_ERR_BACKEND with the reason in why; *out is set only on success. */
int tide_pipeline_create_config(const tide_pipeline_config *c, tide_pipeline **out, char *why,
                                size_t len);
/* The same with nbufs buffers of buf_bytes each and no resident buffer. */
int tide_pipeline_create(size_t buf_bytes, int nbufs, int nslots, size_t stage_bytes,
                         tide_pipeline **out, char *why, size_t len);
/* Waits for a started run first (its status is lost). */
void tide_pipeline_destroy(tide_pipeline *p);

/* Run every chunk of the job; returns when the last download has landed in host memory.
 * Returns 0 or a TIDE_ERR_* code with the reason in why (a transfer outside the buffer it
 * names, layouts of different orders, more staged bytes in a chunk than stage_bytes, a CUDA
 * failure, a failing callback: its own code; TIDE_ERR_ARGUMENT while a started run has not
 * been waited for). Every transfer is validated before anything is enqueued, so a bad
 * description changes nothing. After a failure that happens later (CUDA, a callback) the run
 * still waits for everything already enqueued and unregisters what it registered before
 * returning; the destinations then hold partial results. Runs on the device that was current at
 * creation (made current for the run, then restored); callbacks are called from the calling
 * thread. The host lists a run builds are kept for the next: a run with no more chunks and
 * transfers than an earlier one allocates nothing. */
int tide_pipeline_run(tide_pipeline *p, const tide_pipeline_job *job, char *why, size_t len);

/* tide_pipeline_run in two halves. start records the after_caller event and hands the run to
 * the pipeline's host thread (created by the first start, kept until destroy), which makes the
 * pipeline's device current and calls the job's callbacks; it returns TIDE_ERR_ARGUMENT, and
 * starts nothing, when p or job is NULL or a started run has not been waited for, else 0. The
 * job and everything it points to must stay valid, and the host arrays untouched except
 * through the callbacks, until wait returns. wait returns the run's status as
 * tide_pipeline_run would (a bad job included), with the reason in why; TIDE_ERR_ARGUMENT when
 * no run was started. */
int tide_pipeline_start(tide_pipeline *p, const tide_pipeline_job *job);
int tide_pipeline_wait(tide_pipeline *p, char *why, size_t len);

/* Device pointer of resident buffer r (NULL when there is none), for the caller's own CUDA
 * calls. Between runs the slot streams are idle; work the caller enqueues on its streams is
 * ordered before a run only with after_caller (or a synchronize). */
void *tide_pipeline_resident(const tide_pipeline *p, int r);

/* Memory the engine holds (slot and resident device buffers; pinned staging allocated so far),
 * and its shape.
 * tide_pipeline_stream: slot's stream (a cudaStream_t), the one chunks i % nslots == slot
 * run on, for binding work (cuFFT plans) to it once; NULL for a slot that does not exist. */
size_t tide_pipeline_device_bytes(const tide_pipeline *p);
size_t tide_pipeline_pinned_bytes(const tide_pipeline *p);
int tide_pipeline_slots(const tide_pipeline *p);
void *tide_pipeline_stream(const tide_pipeline *p, int slot);

/* What the last successful run took (all zero after a failed one; read it after wait), so
 * callers can report how well it overlapped:
 *   total: wall seconds of the run (describing, registering, packing, callbacks included);
 *   upload, work, download: sums over chunks of the device time between events recorded on the
 *     slot's stream before and after the chunk's uploads, its work and its downloads. A phase
 *     also counts time it waits for the copy engine behind other slots' copies (and work, in
 *     an ordered job, the wait for the previous chunk's work); CPU packing
 *     and unpacking of staged arrays is not in them (it happens before the first event and
 *     after the last). With several slots the sums can exceed total; each is at most
 *     nslots * total;
 *   bytes_up, bytes_down: region bytes moved (every field), however they travelled. */
typedef struct {
    double total, upload, work, download;
    size_t bytes_up, bytes_down;
} tide_pipeline_stats;
int tide_pipeline_last_stats(const tide_pipeline *p, tide_pipeline_stats *s);

#ifdef __cplusplus
}
#endif
#endif
