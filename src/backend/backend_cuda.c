/* backend_cuda.c: the CUDA backend table: cuFFT local transforms, permuting-copy kernels, and
 * reshapes over NCCL, CUDA-aware MPI or pinned host staging, all enqueued on the plan's stream
 * (see backend.h). In a build without CUDA the table's entries fail (gpu/none.c), and only a
 * context with a GPU, which that build never makes, uses it. */
#include <string.h>
#include "backend/backend.h"
#include "backend/device.h"
#include "backend/memory.h"
#include "gpu/band.h"
#include "gpu/fft.h"
#include "gpu/gemm.h"
#include "gpu/nccl.h"
#include "gpu/pack.h"
#include "gpu/poisson.h"
#include "gpu/stencil.h"

static int cuda_alloc(size_t bytes, void **ptr) { return tide_gpu_malloc(bytes, ptr); }

static void cuda_free(void *ptr) { tide_gpu_free(ptr); }

static int cuda_host_alloc(size_t bytes, void **ptr) { return tide_gpu_host_alloc(bytes, ptr); }

static void cuda_host_free(void *ptr)
{
    if (ptr)
        tide_gpu_host_free(ptr);
}

static int cuda_stream_create(void **stream, int urgent)
{
    return tide_gpu_stream_create(stream, urgent);
}

static void cuda_stream_destroy(void *stream) { tide_gpu_stream_destroy(stream); }

static int cuda_pointer_kind(const void *ptr)
{
    int k = tide_gpu_pointer_kind(ptr);
    return k < 0 ? -1 : k == TIDE_MEM_DEVICE;
}

static int cuda_copy(const tide_env *e, void *dst, const void *src, size_t bytes)
{
    return tide_gpu_memcpy_async(dst, src, bytes, e->stream);
}

static int cuda_copy_region(const tide_env *e, size_t elem, const tide_box *region,
                            const void *src, const tide_box *sbox, void *dst,
                            const tide_box *dbox)
{
    return tide_gpu_copy_region_async(elem, 1, region, src, sbox, dst, dbox, e->stream);
}

static int cuda_halo(const tide_env *e, const tide_halo *h, void *a, tide_halo_part part)
{
    return tide_halo_run(h, a, e->nccl, e->stream, part);
}

static int cuda_scale(const tide_env *e, int dbl, void *data, long long count, double s)
{
    return tide_gpu_scale(dbl, data, count, s, e->stream);
}

static int cuda_spectral(const tide_env *e, const tide_spectral *d, void *data)
{
    return tide_gpu_spectral(d, data, e->stream);
}

static int cuda_sweep_create(const tide_env *e, tide_sweep *s, int fuse, char *err, size_t len)
{
    (void)e;
    return tide_gpu_sweep_create(s, fuse, err, len);
}

static int cuda_sweep(const tide_env *e, const tide_sweep *s, const void *src, void *dst,
                      int steps)
{
    return tide_gpu_sweep(s, src, dst, steps, e->stream);
}

static int cuda_band_create(const tide_env *e, tide_band_pass *b, int steps, char *err,
                            size_t len)
{
    (void)e;
    return tide_gpu_band_create(b, steps, err, len);
}

static int cuda_band(const tide_env *e, const tide_band_pass *b, const void *src, void *dst,
                     int steps)
{
    return tide_gpu_band(b, src, dst, steps, e->stream);
}

/* The kernel holds no memory of its own (band.h). */
static void cuda_band_destroy(const tide_env *e, tide_band_pass *b) { (void)e, (void)b; }

static void cuda_sweep_destroy(const tide_env *e, tide_sweep *s)
{
    (void)e;
    tide_gpu_sweep_destroy(s);
}

static int cuda_gemm(const tide_env *e, void *h, const tide_gemm_desc *d, tide_scalar alpha,
                     const void *a, const void *b, tide_scalar beta, void *c)
{
    return tide_gpu_gemm(h, d, &alpha, a, b, &beta, c, e->stream);
}

static int cuda_fft_create(const tide_cpu_fft_desc *d, void **f, size_t *work, char *err,
                           size_t len)
{
    tide_gpu_fft_desc g = {.dbl = d->precision == TIDE_DOUBLE, .kind = (int)d->kind,
                           .sign = d->sign, .ibox = d->ibox, .obox = d->obox,
                           .iarr = d->iarr, .oarr = d->oarr, .ndims = d->ndims,
                           .half = d->half, .real_n = d->real_n, .batch = d->batch,
                           .complex_elems = d->complex_elems, .then = d->then,
                           .fused = d->fused, .engine = d->engine, .plane = d->plane};
    memcpy(g.dims, d->dims, sizeof g.dims);
    memcpy(g.r2r, d->r2r, sizeof g.r2r);
    size_t need = 0;
    int st = tide_gpu_fft_create(&g, (tide_gpu_fft **)f, &need, err, len);
    if (!st && need > *work)
        *work = need;
    return st;
}

static int cuda_fft_bind(const tide_env *e, void *f)
{
    return tide_gpu_fft_bind(f, e->fft_work, e->stream);
}

static int cuda_fft_execute(const tide_env *e, const void *f, void *in, void *out)
{
    (void)e;
    return tide_gpu_fft_execute(f, in, out);
}

static int cuda_fft_execute_staged(const tide_env *e, const void *f, const void *in,
                                   void *stage, void *out)
{
    (void)e;
    return tide_gpu_fft_execute_staged(f, in, stage, out);
}

static void cuda_fft_destroy(void *f) { tide_gpu_fft_destroy(f); }

static int cuda_reshape_create(const tide_env *e, const tide_box *from, const tide_box *to,
                               const tide_box *part_from, const tide_box *part_to, size_t elem,
                               int batch, tide_reshape **r, char *err, size_t len)
{
    return tide_reshape_create_device(e->ctx->comm, from, to, part_from, part_to, elem, batch,
                                      e->transport, e->nccl, r, err, len);
}

static int cuda_reshape_execute(const tide_env *e, const tide_reshape *r, const void *src,
                                void *dst, int flags)
{
    return tide_reshape_execute_device(r, src, dst, e->sendbuf, e->recvbuf, e->hsend,
                                       e->hrecv, e->stream, flags);
}

static int cuda_reshape_land(const tide_env *e, const tide_reshape *r, const void *src,
                             void *dst, int status)
{
    return tide_reshape_land_device(r, src, dst, e->recvbuf, e->stream, status);
}

/* The plan's stream drained, and NCCL's asynchronous errors (a peer that failed) checked. */
static int cuda_sync(const tide_env *e)
{
    int st = tide_gpu_sync(e->stream);
    return st || !e->nccl ? st : tide_nccl_check(e->nccl);
}

static const tide_backend_ops cuda_ops = {
    .name = "cuda",
    .gpu = 1,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .host_alloc = cuda_host_alloc,
    .host_free = cuda_host_free,
    .stream_create = cuda_stream_create,
    .stream_destroy = cuda_stream_destroy,
    .pointer_kind = cuda_pointer_kind,
    .copy = cuda_copy,
    .copy_region = cuda_copy_region,
    .halo = cuda_halo,
    .scale = cuda_scale,
    .spectral = cuda_spectral,
    .spectral_line_fft = tide_gpu_line_fft_ok,
    .sweep_create = cuda_sweep_create,
    .sweep = cuda_sweep,
    .sweep_destroy = cuda_sweep_destroy,
    .band_create = cuda_band_create,
    .band = cuda_band,
    .band_destroy = cuda_band_destroy,
    .gemm_create = tide_gpu_gemm_create,
    .gemm = cuda_gemm,
    .gemm_destroy = tide_gpu_gemm_destroy,
    .fft_create = cuda_fft_create,
    .fft_bind = cuda_fft_bind,
    .fft_execute = cuda_fft_execute,
    .fft_execute_staged = cuda_fft_execute_staged,
    .fft_destroy = cuda_fft_destroy,
    .reshape_create = cuda_reshape_create,
    .reshape_execute = cuda_reshape_execute,
    .reshape_land = cuda_reshape_land,
    .sync = cuda_sync,
    .last_error = tide_gpu_last_error,
};

const tide_backend_ops *tide_backend_cuda(void) { return &cuda_ops; }

int tide_order_create(const tide_context *ctx, void **event)
{
    *event = NULL;
    return ctx->backend == TIDE_BACKEND_CUDA ? tide_gpu_event_create(event) : TIDE_SUCCESS;
}

void tide_order_destroy(void *event) { tide_gpu_event_destroy(event); }

int tide_order_after(void *event, void *caller, void *stream)
{
    return event ? tide_gpu_after(caller, event, stream) : TIDE_SUCCESS;
}

int tide_device_enter(const tide_context *ctx, int *prev)
{
    *prev = -1;
    return ctx->backend == TIDE_BACKEND_CUDA ? tide_gpu_device_enter(ctx->dev.device, prev)
                                             : TIDE_SUCCESS;
}

void tide_device_leave(int prev) { tide_gpu_device_leave(prev); }
