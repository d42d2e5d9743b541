/*
 * none.c: the GPU entry points of a build without CUDA, compiled instead of the .cu files
 * (gpu/meson.build): every function the gpu/ headers and the GPU services of the backend
 * layer (backend/device.h, memory.h, measure.h, pipeline.h) declare. Nothing here touches a
 * device: no GPU is counted or selected, NCCL has version 0, and every call that needs a
 * device fails with TIDE_ERR_UNSUPPORTED, the reason (NO_CUDA) in its why or err argument and
 * in tide_gpu_last_error. Calls that free or destroy accept what the failing calls left (NULL).
 * So the callers need no #if: a context falls back to the CPU, and plans reach the rest only
 * on a context with a GPU, which this build never makes.
 */
#include <stdio.h>
#include <string.h>
#include "backend/backend.h"
#include "backend/device.h"
#include "backend/measure.h"
#include "backend/memory.h"
#include "backend/pipeline.h"
#include "gpu/band.h"
#include "gpu/fft.h"
#include "gpu/gemm.h"
#include "gpu/nccl.h"
#include "gpu/pack.h"
#include "gpu/poisson.h"
#include "gpu/r2r.h"
#include "gpu/stencil.h"

static const char NO_CUDA[] = "this build has no CUDA (configured with -Dcuda=disabled or no nvcc)";

/* TIDE_ERR_UNSUPPORTED, with the reason in why (when given). */
static int none(char *why, size_t len)
{
    if (why && len)
        snprintf(why, len, "%s", NO_CUDA);
    return TIDE_ERR_UNSUPPORTED;
}

/* ---- backend/device.h: the GPUs of the process ---------------------------------------------- */

int tide_gpu_count(char *why, size_t len)
{
    none(why, len);
    return 0;
}

int tide_gpu_properties(int device, tide_gpu_props *props)
{
    (void)device, (void)props;
    return TIDE_ERR_UNSUPPORTED;
}

int tide_gpu_reaches(int device, const char *pci_bus_id)
{
    (void)device, (void)pci_bus_id;
    return 0;
}

/* No usable GPU (not TIDE_ERR_ARGUMENT: the context falls back to the CPU, as on a machine
 * without one). */
int tide_gpu_select(int local_rank, int device, int bind, tide_device_info *info, int *binding,
                    char *why, size_t len)
{
    (void)local_rank, (void)device, (void)bind, (void)info;
    *binding = TIDE_BIND_NONE;
    none(why, len);
    return TIDE_ERR_BACKEND;
}

int tide_gpu_device_enter(int device, int *prev)
{
    (void)device;
    *prev = -1;
    return TIDE_ERR_UNSUPPORTED;
}

void tide_gpu_device_leave(int prev) { (void)prev; }

int tide_gpu_peer(int device, int peer, int enable)
{
    (void)device, (void)peer, (void)enable;
    return TIDE_ERR_UNSUPPORTED;
}

const char *tide_gpu_last_error(void) { return NO_CUDA; }

int tide_gpu_note_error(const char *call, const char *what, int code)
{
    (void)call, (void)what, (void)code;
    return TIDE_ERR_BACKEND;
}

/* ---- backend/memory.h: memory, streams, events, copies -------------------------------------- */

int tide_gpu_malloc(size_t bytes, void **ptr)
{
    (void)bytes;
    *ptr = NULL;
    return TIDE_ERR_UNSUPPORTED;
}

void tide_gpu_free(void *ptr) { (void)ptr; }

int tide_gpu_host_alloc(size_t bytes, void **ptr)
{
    (void)bytes;
    *ptr = NULL;
    return TIDE_ERR_UNSUPPORTED;
}

int tide_gpu_host_free(void *ptr) { return ptr ? TIDE_ERR_ARGUMENT : 0; }

int tide_gpu_pointer_kind(const void *p)
{
    (void)p;
    return -1;
}

int tide_gpu_stream_create(void **stream, int urgent)
{
    (void)urgent;
    *stream = NULL;
    return TIDE_ERR_UNSUPPORTED;
}

void tide_gpu_stream_destroy(void *stream) { (void)stream; }

int tide_gpu_sync(void *stream)
{
    (void)stream;
    return TIDE_ERR_UNSUPPORTED;
}

int tide_gpu_event_create(void **event)
{
    *event = NULL;
    return TIDE_ERR_UNSUPPORTED;
}

void tide_gpu_event_destroy(void *event) { (void)event; }

int tide_gpu_after(void *caller, void *event, void *stream)
{
    (void)caller, (void)event, (void)stream;
    return TIDE_ERR_UNSUPPORTED;
}

int tide_gpu_event_record(void *event, void *stream)
{
    (void)event, (void)stream;
    return TIDE_ERR_UNSUPPORTED;
}

int tide_gpu_timer_create(void **event)
{
    *event = NULL;
    return TIDE_ERR_UNSUPPORTED;
}

int tide_gpu_timer_ms(void *from, void *to, float *ms)
{
    (void)from, (void)to;
    *ms = 0;
    return TIDE_ERR_UNSUPPORTED;
}

int tide_gpu_stream_wait(void *stream, void *event)
{
    (void)stream, (void)event;
    return TIDE_ERR_UNSUPPORTED;
}

int tide_gpu_ipc_mem_handle(const void *p, void *handle, size_t *offset)
{
    (void)p, (void)handle, *offset = 0;
    return TIDE_ERR_UNSUPPORTED;
}

int tide_gpu_ipc_mem_open(const void *handle, void **base, int *device)
{
    (void)handle;
    *base = NULL, *device = -1;
    return TIDE_ERR_UNSUPPORTED;
}

void tide_gpu_ipc_mem_close(void *base) { (void)base; }

int tide_gpu_ipc_event_create(void **event, void *handle)
{
    (void)handle;
    *event = NULL;
    return TIDE_ERR_UNSUPPORTED;
}

int tide_gpu_ipc_event_open(const void *handle, void **event)
{
    (void)handle;
    *event = NULL;
    return TIDE_ERR_UNSUPPORTED;
}

int tide_gpu_memcpy_async(void *dst, const void *src, size_t bytes, void *stream)
{
    (void)dst, (void)src, (void)bytes, (void)stream;
    return TIDE_ERR_UNSUPPORTED;
}

int tide_gpu_copy_peer_2d(void *dst, int dst_device, const void *src, int src_device,
                          size_t pitch, size_t width, size_t rows, void *stream)
{
    (void)dst, (void)dst_device, (void)src, (void)src_device, (void)pitch, (void)width;
    (void)rows, (void)stream;
    return TIDE_ERR_UNSUPPORTED;
}

/* ---- backend/measure.h: transfer rates ------------------------------------------------------ */

int tide_gpu_measure(size_t bytes, int (*align)(void *arg, int ok), void *arg,
                     tide_rates *rates, char *why, size_t len)
{
    (void)bytes, (void)align, (void)arg, (void)rates;
    return none(why, len);
}

int tide_gpu_measure_gpus(const int *devices, int n, size_t bytes, tide_rates *rates, char *why,
                          size_t len)
{
    (void)devices, (void)n, (void)bytes, (void)rates;
    return none(why, len);
}

/* ---- gpu/pack.h: the permuting copy and scaling --------------------------------------------- */

int tide_gpu_copy_region(size_t elem, int batch, const tide_box *region, const void *src,
                         const tide_box *sbox, void *dst, const tide_box *dbox)
{
    (void)elem, (void)batch, (void)region, (void)src, (void)sbox, (void)dst, (void)dbox;
    return TIDE_ERR_UNSUPPORTED;
}

int tide_gpu_copy_region_async(size_t elem, int batch, const tide_box *region, const void *src,
                               const tide_box *sbox, void *dst, const tide_box *dbox,
                               void *stream)
{
    (void)stream;
    return tide_gpu_copy_region(elem, batch, region, src, sbox, dst, dbox);
}

int tide_gpu_store_region_async(size_t elem, int batch, const tide_box *region, const void *src,
                                const tide_box *sbox, void *dst, const tide_box *dbox,
                                int dst_device, void *stream)
{
    (void)dst_device;
    return tide_gpu_copy_region_async(elem, batch, region, src, sbox, dst, dbox, stream);
}

int tide_gpu_scale(int dbl, void *data, long long count, double s, void *stream)
{
    (void)dbl, (void)data, (void)count, (void)s, (void)stream;
    return TIDE_ERR_UNSUPPORTED;
}

/* ---- gpu/nccl.h: NCCL ----------------------------------------------------------------------- */

int tide_nccl_version(void) { return 0; }

int tide_nccl_create(MPI_Comm comm, int max_ctas, tide_nccl **out, char *why, size_t len)
{
    (void)comm, (void)max_ctas;
    *out = NULL;
    return none(why, len);
}

void tide_nccl_destroy(tide_nccl *c) { (void)c; }

int tide_nccl_group_start(void) { return TIDE_ERR_UNSUPPORTED; }

int tide_nccl_send(tide_nccl *c, const void *buf, size_t bytes, int peer, void *stream)
{
    (void)c, (void)buf, (void)bytes, (void)peer, (void)stream;
    return TIDE_ERR_UNSUPPORTED;
}

int tide_nccl_recv(tide_nccl *c, void *buf, size_t bytes, int peer, void *stream)
{
    (void)c, (void)buf, (void)bytes, (void)peer, (void)stream;
    return TIDE_ERR_UNSUPPORTED;
}

int tide_nccl_group_end(void) { return TIDE_ERR_UNSUPPORTED; }

int tide_nccl_check(tide_nccl *c)
{
    (void)c;
    return 0;
}

/* ---- gpu/fft.h: cuFFT transforms ------------------------------------------------------------ */

int tide_gpu_fft_create(const tide_gpu_fft_desc *d, tide_gpu_fft **out, size_t *work_bytes,
                        char *why, size_t len)
{
    (void)d, (void)out, (void)work_bytes;
    return none(why, len);
}

int tide_gpu_fft_bind(tide_gpu_fft *f, void *work, void *stream)
{
    (void)f, (void)work, (void)stream;
    return TIDE_ERR_UNSUPPORTED;
}

int tide_gpu_fft_execute(const tide_gpu_fft *f, void *in, void *out)
{
    (void)f, (void)in, (void)out;
    return TIDE_ERR_UNSUPPORTED;
}

int tide_gpu_fft_execute_staged(const tide_gpu_fft *f, const void *in, void *stage, void *out)
{
    (void)f, (void)in, (void)stage, (void)out;
    return TIDE_ERR_UNSUPPORTED;
}

void tide_gpu_fft_destroy(tide_gpu_fft *f) { (void)f; }

const char *tide_cufft_name(int r)
{
    (void)r;
    return NO_CUDA;
}

/* ---- gpu/r2r.h: cosine and sine transforms -------------------------------------------------- */

int tide_gpu_r2r_create(int dbl, int kind, int dim, const tide_box *box, const tide_box *sarr,
                        const tide_box *darr, int batch, int complex_elems, tide_gpu_r2r **out,
                        size_t *work_bytes, char *why, size_t len)
{
    (void)dbl, (void)kind, (void)dim, (void)box, (void)sarr, (void)darr, (void)batch;
    (void)complex_elems, (void)out, (void)work_bytes;
    return none(why, len);
}

int tide_gpu_r2r_bind(tide_gpu_r2r *r, void *work, void *stream)
{
    (void)r, (void)work, (void)stream;
    return TIDE_ERR_UNSUPPORTED;
}

int tide_gpu_r2r_execute(const tide_gpu_r2r *r, const void *src, void *dst, void *stream)
{
    (void)r, (void)src, (void)dst, (void)stream;
    return TIDE_ERR_UNSUPPORTED;
}

void tide_gpu_r2r_destroy(tide_gpu_r2r *r) { (void)r; }

/* ---- gpu/poisson.h: the spectral operator --------------------------------------------------- */

int tide_gpu_spectral(const struct tide_spectral *d, void *data, void *stream)
{
    (void)d, (void)data, (void)stream;
    return TIDE_ERR_UNSUPPORTED;
}

int tide_gpu_line_fft_ok(int n, int dbl)
{
    (void)n, (void)dbl;
    return 0;
}

/* ---- gpu/band.h: band matrix passes --------------------------------------------------------- */

int tide_gpu_band_create(struct tide_band_pass *b, int steps, char *err, size_t len)
{
    (void)b, (void)steps;
    return none(err, len);
}

int tide_gpu_band(const struct tide_band_pass *b, const void *src, void *dst, int steps,
                  void *stream)
{
    (void)b, (void)src, (void)dst, (void)steps, (void)stream;
    return TIDE_ERR_UNSUPPORTED;
}

/* ---- gpu/stencil.h: stencil sweeps ---------------------------------------------------------- */

int tide_gpu_sweep_create(struct tide_sweep *s, int fuse, char *err, size_t len)
{
    (void)fuse;
    s->state = NULL;
    return none(err, len);
}

int tide_gpu_sweep(const struct tide_sweep *s, const void *src, void *dst, int steps,
                   void *stream)
{
    (void)s, (void)src, (void)dst, (void)steps, (void)stream;
    return TIDE_ERR_UNSUPPORTED;
}

void tide_gpu_sweep_destroy(struct tide_sweep *s) { (void)s; }

/* ---- gpu/gemm.h: cuBLAS multiplies ---------------------------------------------------------- */

int tide_gpu_gemm_create(void **handle)
{
    *handle = NULL;
    return TIDE_ERR_UNSUPPORTED;
}

int tide_gpu_gemm(void *handle, const struct tide_gemm_desc *d, const struct tide_scalar *alpha,
                  const void *a, const void *b, const struct tide_scalar *beta, void *c,
                  void *stream)
{
    (void)handle, (void)d, (void)alpha, (void)a, (void)b, (void)beta, (void)c, (void)stream;
    return TIDE_ERR_UNSUPPORTED;
}

void tide_gpu_gemm_destroy(void *handle) { (void)handle; }

/* ---- backend/pipeline.h: the out-of-card pipeline engine ------------------------------------ */

int tide_pipeline_create_config(const tide_pipeline_config *c, tide_pipeline **out, char *why,
                                size_t len)
{
    (void)c, (void)out;
    return none(why, len);
}

int tide_pipeline_create(size_t buf_bytes, int nbufs, int nslots, size_t stage_bytes,
                         tide_pipeline **out, char *why, size_t len)
{
    (void)buf_bytes, (void)nbufs, (void)nslots, (void)stage_bytes, (void)out;
    return none(why, len);
}

void tide_pipeline_destroy(tide_pipeline *p) { (void)p; }

int tide_pipeline_run(tide_pipeline *p, const tide_pipeline_job *job, char *why, size_t len)
{
    (void)p, (void)job;
    return none(why, len);
}

int tide_pipeline_start(tide_pipeline *p, const tide_pipeline_job *job)
{
    (void)p, (void)job;
    return TIDE_ERR_UNSUPPORTED;
}

int tide_pipeline_wait(tide_pipeline *p, char *why, size_t len)
{
    (void)p;
    return none(why, len);
}

void *tide_pipeline_resident(const tide_pipeline *p, int r)
{
    (void)p, (void)r;
    return NULL;
}

size_t tide_pipeline_device_bytes(const tide_pipeline *p)
{
    (void)p;
    return 0;
}

size_t tide_pipeline_pinned_bytes(const tide_pipeline *p)
{
    (void)p;
    return 0;
}

int tide_pipeline_slots(const tide_pipeline *p)
{
    (void)p;
    return 0;
}

void *tide_pipeline_stream(const tide_pipeline *p, int slot)
{
    (void)p, (void)slot;
    return NULL;
}

int tide_pipeline_last_stats(const tide_pipeline *p, tide_pipeline_stats *s)
{
    (void)p;
    memset(s, 0, sizeof *s);
    return TIDE_ERR_UNSUPPORTED;
}
