/*
 * pipeline.h: the out-of-card streaming engine (private; C linkage, no CUDA types).
 *
 * One engine serves every operation whose data lives in host memory and passes through the GPU
 * in pieces (FFT, Poisson, stencils, DGEMM). A job is a list of chunks. Chunk i:
 *   1. uploads: regions of host arrays copied into the device buffers of a slot,
 *   2. work: whatever the operation does to those buffers (kernels, cuFFT, NCCL), enqueued on
 *      the slot's stream by a callback,
 *   3. downloads: regions of the slot's buffers copied into host arrays.
 * Chunk i runs on slot i % nslots, each slot with its own stream and its own device buffers,
 * so the upload of chunk i+1, the work of chunk i and the download of chunk i-1 overlap, in
 * both PCIe directions at once. Work callbacks are called in chunk order from the calling
 * thread, so collective work (NCCL group calls) is issued in the same order on every rank.
 *
 * Host arrays may be pinned (tide_host_alloc, cudaHostAlloc, cudaHostRegister) or pageable.
 * Pinned arrays are transferred directly with cudaMemcpy2D/3DAsync. Pageable ones go through
 * the engine's pinned staging slots, copied by CPU threads, as the run's `pageable` mode says.
 * No host transposition happens anywhere: a transfer moves a region between a host layout and
 * a device layout with the same storage order; permutations are the work's business.
 *
 * Host-side ordering: the engine orders nothing between chunks of different slots on the host
 * side. A host point that one chunk downloads must not be uploaded or downloaded by another
 * chunk of the same run (chunks own disjoint destination points; in-place jobs are fine when
 * each chunk reads and writes back its own points).
 */
#ifndef TIDE_GPU_PIPELINE_H
#define TIDE_GPU_PIPELINE_H

#include <stddef.h>
#include "tide.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One transfer between host and device: the points of `region` (of every field) between a
 * host array laid out as hbox and device buffer `buf` of the slot laid out as dbox, whose
 * first point is dbyte bytes into that buffer. region lies inside both boxes; hbox and dbox
 * have the same storage order (order field). Field f of the host array starts at element
 * f * count(hbox), of the device side at f * count(dbox). The whole device layout, every
 * field, must fit: dbyte + batch * count(dbox) * elem <= buf_bytes. An empty region is allowed
 * and moves nothing. Copies are 1D, 2D or 3D cudaMemcpy*Async calls on the dimensions left
 * after merging those that are contiguous on both sides (short rows are slow: prefer device
 * layouts whose fastest dimension is whole). */
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
     * depend on the results of earlier chunks. */
    int (*describe)(void *user, int i, tide_xfer *up, int *nup, tide_xfer *down, int *ndown);
    /* Enqueue chunk i's device work on `stream` (a cudaStream_t) using the slot's buffers
     * buf[0..nbufs). NULL: no work (a plain host<->device round trip). Returns 0 or a
     * TIDE_ERR_* code. Called in chunk order from the calling thread, after the chunk's uploads
     * were enqueued on `stream` and before its downloads are; work on other streams must be
     * joined back into `stream` (events) before returning. The buffers of a slot are reused by
     * chunks i, i + nslots, ...; nothing is cleared between them. */
    int (*work)(void *user, int i, void *const *buf, void *stream);
    void *user;
    tide_pageable_mode pageable;
} tide_pipeline_job;

typedef struct tide_pipeline tide_pipeline;

/* nslots slots (>= 1; 3 or more overlap both directions with compute), each with its own
 * stream and nbufs device buffers of buf_bytes, on the current device. Pinned staging for
 * pageable arrays is allocated on first need (by the first run that stages in that
 * direction), stage_bytes per slot and direction (0: nbufs * buf_bytes), and kept until
 * tide_pipeline_destroy. Returns 0, TIDE_ERR_ARGUMENT, TIDE_ERR_NOMEM or TIDE_ERR_BACKEND with
 * the reason in why; *out is set only on success. */
int tide_pipeline_create(size_t buf_bytes, int nbufs, int nslots, size_t stage_bytes,
                         tide_pipeline **out, char *why, size_t len);
void tide_pipeline_destroy(tide_pipeline *p);

/* Run every chunk of the job; returns when the last download has landed in host memory.
 * Returns 0 or a TIDE_ERR_* code with the reason in why (a transfer outside the slot's
 * buffers, layouts of different orders, more staged bytes in a chunk than stage_bytes, a CUDA
 * failure, a failing callback: its own code). Every transfer is validated before anything is
 * enqueued, so a bad description changes nothing. After a failure that happens later (CUDA,
 * work callback) the run still waits for everything already enqueued and unregisters what it
 * registered before returning; the destinations then hold partial results. Runs on the device
 * that was current at tide_pipeline_create (made current for the run, then restored). The
 * host lists a run builds are kept for the next: a run with no more chunks and transfers than
 * an earlier one allocates nothing. */
int tide_pipeline_run(tide_pipeline *p, const tide_pipeline_job *job, char *why, size_t len);

/* Memory the engine holds (device buffers; pinned staging allocated so far), and its shape.
 * tide_pipeline_stream: slot's stream (a cudaStream_t), the one chunks i % nslots == slot
 * run on, for binding work (cuFFT plans) to it once; NULL for a slot that does not exist. */
size_t tide_pipeline_device_bytes(const tide_pipeline *p);
size_t tide_pipeline_pinned_bytes(const tide_pipeline *p);
int tide_pipeline_slots(const tide_pipeline *p);
void *tide_pipeline_stream(const tide_pipeline *p, int slot);

/* What the last successful run took (all zero after a failed one), so callers can report how
 * well it overlapped:
 *   total: wall seconds of tide_pipeline_run (describing, registering, packing included);
 *   upload, work, download: sums over chunks of the device time between events recorded on the
 *     slot's stream before and after the chunk's uploads, its work and its downloads. A phase
 *     also counts time it waits for the copy engine behind other slots' copies; CPU packing
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
