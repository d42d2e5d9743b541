/*
 * gpu.h: what src/ may ask of the CUDA side (private; C linkage, no CUDA types).
 */
#ifndef TIDE_GPU_H
#define TIDE_GPU_H

#include <stddef.h>
#include "tide.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    char name[128];
    size_t total_bytes, free_bytes;
    int major, minor;         /* compute capability */
    char pci_bus_id[32];
} tide_gpu_props;

/* Number of GPUs this process can use (0 with the reason in why), for tests deciding whether
 * to skip. A GPU counts as usable only when a small allocation on the calling thread's current
 * device succeeds, which is how a machine without a driver shows; that probe opens the current
 * device's CUDA context (device 0 unless cudaSetDevice was called). tide_gpu_select opens
 * none but the chosen device's. */
int tide_gpu_count(char *why, size_t len);
/* Name, memory, compute capability and PCI bus id of a device, without opening its context.
 * free_bytes is filled only when device is the calling thread's current device (cudaMemGetInfo
 * needs it current, and opens its context), else 0. */
int tide_gpu_properties(int device, tide_gpu_props *props);

/* How tide_gpu_select left the process's CPU binding. */
enum {
    TIDE_BIND_NONE = 0, /* not bound (bind 0, or hwloc cannot bind or tell the GPU's cores) */
    TIDE_BIND_NEAR = 1, /* bound by tide_gpu_select to the cores nearest the device */
    TIDE_BIND_KEPT = 2, /* already bound to part of the machine (e.g. by mpirun): left alone */
    TIDE_BIND_KEPT_FAR = 3 /* as KEPT, but none of those cores is near the device */
};

/* Choose this rank's device without opening any other device's context: device is
 * TIDE_DEVICE_AUTO (local_rank % count), TIDE_DEVICE_CURRENT (the calling thread's current
 * device) or an index. Make it current, probe a small allocation on it, fill what
 * tide_device_info says of it except budget_bytes, and, when bind is set and the process is not
 * already bound to part of the machine, bind it to the cores nearest the device (hwloc);
 * info->cpuset then names the binding, Tide's or the one found, and *binding says which
 * (TIDE_BIND_*). Returns 0, TIDE_ERR_BACKEND (no usable GPU) or TIDE_ERR_ARGUMENT (no such
 * device), with the reason in why. */
int tide_gpu_select(int local_rank, int device, int bind, tide_device_info *info, int *binding,
                    char *why, size_t len);

/* Device rates of tide_rates (h2d, d2h, both, d2d) with arrays of `bytes`, on the current
 * device. align, when given, makes the measurement collective: align(arg, ok) is called once
 * after the allocations with whether they succeeded and must return whether they did on every
 * rank, then align(arg, 1) before every timed repetition (a barrier), the same number of times
 * on every rank. Returns 0 or TIDE_ERR_BACKEND / TIDE_ERR_NOMEM with the reason in why. */
int tide_gpu_measure(size_t bytes, int (*align)(void *arg, int ok), void *arg,
                     tide_rates *rates, char *why, size_t len);

/* PCIe rates of n GPUs (of this process) copying at once, summed over them (h2d, d2h, both;
 * d2d and host_copy 0), with arrays of `bytes` per GPU: what host memory gives them together,
 * which may be less than the sum of their rates alone. The current device is kept. Returns 0,
 * TIDE_ERR_NOMEM or TIDE_ERR_BACKEND with the reason in why. */
int tide_gpu_measure_gpus(const int *devices, int n, size_t bytes, tide_rates *rates, char *why,
                          size_t len);
/* Pinned host memory (cudaHostAlloc) and its release. Return 0 or TIDE_ERR_NOMEM. */
int tide_gpu_host_alloc(size_t bytes, void **ptr);
int tide_gpu_host_free(void *ptr);

/* NCCL's version code, 0 when this build has no NCCL. */
int tide_nccl_version(void);

/* The permuting copy of comm/region.h on the device: region of every field from src (layout
 * sbox) to dst (layout dbox), both device pointers; elem 4, 8 or 16 bytes. The _async form is
 * enqueued on stream (a cudaStream_t; NULL: the default stream); the plain form synchronizes.
 * Returns 0, TIDE_ERR_ARGUMENT (element size) or TIDE_ERR_BACKEND. */
int tide_gpu_copy_region(size_t elem, int batch, const tide_box *region, const void *src,
                         const tide_box *sbox, void *dst, const tide_box *dbox);
int tide_gpu_copy_region_async(size_t elem, int batch, const tide_box *region, const void *src,
                               const tide_box *sbox, void *dst, const tide_box *dbox,
                               void *stream);

/* Device memory and streams. Streams are cudaStream_t behind void *. Return 0,
 * TIDE_ERR_NOMEM (allocation) or TIDE_ERR_BACKEND (any other CUDA failure). */
int tide_gpu_malloc(size_t bytes, void **ptr);
void tide_gpu_free(void *ptr);
/* urgent: the device's greatest priority, whose kernels' blocks the GPU starts before those of
 * other streams as SMs come free (a short kernel beside a long one need not wait for its end). */
int tide_gpu_stream_create(void **stream, int urgent);
void tide_gpu_stream_destroy(void *stream);
/* Wait for everything enqueued on stream; reports any earlier asynchronous failure. */
int tide_gpu_sync(void *stream);
/* Events (cudaEvent_t behind void *, without timing). */
int tide_gpu_event_create(void **event);
void tide_gpu_event_destroy(void *event);
/* Order what comes next after the work queued on `caller` (a cudaStream_t; NULL: the legacy
 * default stream) before this call: event is recorded there, then `stream` waits for it on the
 * device, or, with stream NULL, the calling thread waits for it. */
int tide_gpu_after(void *caller, void *event, void *stream);
/* Record event on stream; make stream wait for the work before event's last record (the
 * event may be another device's). */
int tide_gpu_event_record(void *event, void *stream);
int tide_gpu_stream_wait(void *stream, void *event);
/* Whether device can read and write peer's memory directly (NVLink or PCIe peer to peer),
 * and with enable, let it from now on, for every thread of the process. Returns 0 (also when
 * already enabled), TIDE_ERR_UNSUPPORTED when the two cannot access each other, or
 * TIDE_ERR_BACKEND. */
int tide_gpu_peer(int device, int peer, int enable);
/* Copy `rows` rows of `width` bytes, `pitch` bytes apart on both sides, from src on
 * src_device to dst on dst_device, enqueued on stream (a stream of either device). */
int tide_gpu_copy_peer_2d(void *dst, int dst_device, const void *src, int src_device,
                          size_t pitch, size_t width, size_t rows, void *stream);
/* Make device current, remembering the current one in *prev; and make prev current again. */
int tide_gpu_device_enter(int device, int *prev);
void tide_gpu_device_leave(int prev);
/* Copy bytes in any direction (cudaMemcpyDefault), enqueued on stream. */
int tide_gpu_memcpy_async(void *dst, const void *src, size_t bytes, void *stream);
/* Multiply count scalars (double when dbl, else float) by s, on stream. */
int tide_gpu_scale(int dbl, void *data, long long count, double s, void *stream);
/* The spectral operator of a Poisson solve (backend.h's tide_spectral: the eigenvalue
 * scaling, or the tridiagonal solves along a line) on data laid out as d->box, on stream;
 * d's tables, origin and scratch in device memory. */
struct tide_spectral;
int tide_gpu_spectral(const struct tide_spectral *d, void *data, void *stream);
/* Whether tide_gpu_spectral transforms a periodic line of n points itself (line_fft): float
 * data, n a power of two from 8 to 1024 (the line's columns in shared memory). */
int tide_gpu_line_fft_ok(int n, int dbl);
/* Stencil sweeps (backend.h's tide_sweep; gpu/stencil.cu): create prepares s for sweeps of up
 * to fuse steps (0: as many as the kernels can fuse for its radius and precision) with the
 * taps in device memory (s->state) and sets s->max_fuse; a fuse beyond the kernels' limit is
 * TIDE_ERR_ARGUMENT with the limit in err. sweep enqueues one sweep of steps (1 ..
 * s->max_fuse) from src into dst on stream: one step by the one-step kernel, several by the
 * temporal-blocked one. destroy frees s->state (NULL accepted). */
struct tide_sweep;
int tide_gpu_sweep_create(struct tide_sweep *s, int fuse, char *err, size_t len);
int tide_gpu_sweep(const struct tide_sweep *s, const void *src, void *dst, int steps,
                   void *stream);
void tide_gpu_sweep_destroy(struct tide_sweep *s);
/* Matrix multiplies with cuBLAS (backend.h's tide_gemm_desc and tide_scalar; gpu/gemm.cu): a
 * handle, and one multiply of device matrices enqueued on stream. */
struct tide_gemm_desc;
struct tide_scalar;
int tide_gpu_gemm_create(void **handle);
int tide_gpu_gemm(void *handle, const struct tide_gemm_desc *d, const struct tide_scalar *alpha,
                  const void *a, const void *b, const struct tide_scalar *beta, void *c,
                  void *stream);
void tide_gpu_gemm_destroy(void *handle);
/* cuFFT's status r in words. */
const char *tide_cufft_name(int r);
/* A message for the last CUDA failure seen by the calls above (thread-local). */
const char *tide_gpu_last_error(void);
/* Record a failure of a CUDA library call for tide_gpu_last_error; returns TIDE_ERR_BACKEND. */
int tide_gpu_note_error(const char *call, const char *what, int code);

/* Where a pointer points; -1 when CUDA cannot tell (tide_gpu_last_error says why). */
enum { TIDE_MEM_PAGEABLE = 0, TIDE_MEM_PINNED = 1, TIDE_MEM_DEVICE = 2 };
int tide_gpu_pointer_kind(const void *p);

/* NCCL communicators over an MPI communicator (collective: ncclGetUniqueId on rank 0, sent to
 * all with MPI_Bcast). Each rank must use its own GPU. max_ctas > 0: the communicator's
 * kernels take at most that many thread blocks (SMs); 0: NCCL's choice. Returns 0,
 * TIDE_ERR_UNSUPPORTED (no NCCL in this build), TIDE_ERR_MPI or TIDE_ERR_BACKEND with the
 * reason in why. */
typedef struct tide_nccl tide_nccl;
int tide_nccl_create(MPI_Comm comm, int max_ctas, tide_nccl **out, char *why, size_t len);
void tide_nccl_destroy(tide_nccl *c);
/* One grouped exchange: the sends and receives between start and end form one NCCL group,
 * enqueued on stream. Byte counts. */
int tide_nccl_group_start(void);
int tide_nccl_send(tide_nccl *c, const void *buf, size_t bytes, int peer, void *stream);
int tide_nccl_recv(tide_nccl *c, void *buf, size_t bytes, int peer, void *stream);
int tide_nccl_group_end(void);
/* An error NCCL hit asynchronously on c (a peer gone, a network failure), which its calls
 * never return: 0, or TIDE_ERR_BACKEND with the reason for tide_gpu_last_error. 0 for NULL and
 * in builds without NCCL. */
int tide_nccl_check(tide_nccl *c);

/* Local transforms with cuFFT: one, two or three dimensions of a box, batched over its other
 * dimensions and over fields, with the strides the box's storage order gives. Input and
 * output boxes have the same storage order (same points; dimension 2 real for the real side
 * of R2C/C2R). Where the untransformed dimensions cannot be expressed as one cuFFT batch, the
 * plan loops over the outermost of them. Work areas are not allocated by cuFFT: the caller
 * gives one of at least work_bytes (shared by every transform of a plan). */
typedef struct {
    int dbl;                /* double precision */
    int kind;               /* 0 c2c, 1 r2c, 2 c2r, 3 real-to-real only (tide_fft_kind) */
    int sign;               /* -1 forward, +1 backward (c2c) */
    const tide_box *ibox, *obox;
    const tide_box *iarr, *oarr; /* the arrays' layouts, of which ibox and obox are parts
                                  * (NULL: the boxes themselves): tide_cpu_fft_desc's */
    int dims[3], ndims;     /* transformed dimensions, ascending */
    int half, real_n;       /* r2c/c2r: the halved dimension and its real length */
    int batch;              /* fields, count(box) elements apart */
    int r2r[3];             /* tide_cpu_fft_desc's: per dimension a real-to-real kind, done by
                             * tide_gpu_r2r passes (kind 3: only those) */
    int complex_elems;      /* kind 3: the elements are complex */
    /* A forward c2c or an r2c: the diagonal spectral operator (backend.h's tide_spectral, in
     * device memory) to apply to the output as cuFFT stores it (a store callback, linked in
     * when the plan is made), or NULL. *fused says whether the plan does: only for double
     * data (fft_callbacks.h says why), one batch over a dense output laid out as then->box,
     * complex, without mean weights, and where cuFFT takes the callback. */
    const struct tide_spectral *then;
    int *fused;
} tide_gpu_fft_desc;

typedef struct tide_gpu_fft tide_gpu_fft;
/* Returns 0, TIDE_ERR_UNSUPPORTED (a layout cuFFT cannot take: for r2c/c2r dimension 2 must
 * be the fastest transformed dimension) or TIDE_ERR_BACKEND, with the reason in why. */
int tide_gpu_fft_create(const tide_gpu_fft_desc *d, tide_gpu_fft **out, size_t *work_bytes,
                        char *why, size_t len);
/* Attach the work area and the stream the transforms run on. */
int tide_gpu_fft_bind(tide_gpu_fft *f, void *work, void *stream);

/* A real-to-real transform (tide_r2r_kind: kind 1..6, FFTW's REDFT/RODFT scaling) along
 * dimension dim of box, from an array laid out as sarr into one laid out as darr (the same
 * array allowed: in place), batch fields, on real elements or on both parts of complex ones,
 * by one batched cuFFT transform between pre- and post-processing kernels (r2r.cu). Needs
 * work_bytes of work area (the processed lines and cuFFT's). */
typedef struct tide_gpu_r2r tide_gpu_r2r;
int tide_gpu_r2r_create(int dbl, int kind, int dim, const tide_box *box, const tide_box *sarr,
                        const tide_box *darr, int batch, int complex_elems, tide_gpu_r2r **out,
                        size_t *work_bytes, char *why, size_t len);
int tide_gpu_r2r_bind(tide_gpu_r2r *r, void *work, void *stream);
int tide_gpu_r2r_execute(const tide_gpu_r2r *r, const void *src, void *dst, void *stream);
void tide_gpu_r2r_destroy(tide_gpu_r2r *r);
/* Enqueue the transform of in into out (in == out: in place). */
int tide_gpu_fft_execute(const tide_gpu_fft *f, void *in, void *out);
void tide_gpu_fft_destroy(tide_gpu_fft *f);

#ifdef __cplusplus
}
#endif
#endif
