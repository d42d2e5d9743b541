/* backend_cpu.c: the CPU backend table: FFTW local transforms, threaded permuting copies and
 * MPI exchanges in host memory (see backend.h). */
#include <string.h>
#include <fftw3.h>
#include "backend.h"

static int cpu_alloc(size_t bytes, void **ptr)
{
    /* fftw_malloc: SIMD-aligned, the alignment the transforms were planned for. */
    *ptr = fftw_malloc(bytes ? bytes : 1);
    return *ptr ? TIDE_SUCCESS : TIDE_ERR_NOMEM;
}

static void cpu_free(void *ptr) { fftw_free(ptr); }

static int cpu_copy(const tide_env *e, void *dst, const void *src, size_t bytes)
{
    (void)e;
    memcpy(dst, src, bytes);
    return TIDE_SUCCESS;
}

static int cpu_scale(const tide_env *e, int dbl, void *data, long long count, double s)
{
    (void)e;
    if (dbl) {
        double *d = data;
        for (long long i = 0; i < count; i++)
            d[i] *= s;
    } else {
        float *f = data, fs = (float)s;
        for (long long i = 0; i < count; i++)
            f[i] *= fs;
    }
    return TIDE_SUCCESS;
}

/* Multiplies the complex number at v (double or float) by s. */
static void scale_complex(int dbl, void *v, double s)
{
    if (dbl) {
        double *x = v;
        x[0] *= s, x[1] *= s;
    } else {
        float *x = v;
        x[0] = (float)(x[0] * s), x[1] = (float)(x[1] * s);
    }
}

static int cpu_diag(const tide_env *e, const tide_diag *d, void *data)
{
    (void)e;
    const tide_box *b = &d->box;
    int o0 = b->order[0], o1 = b->order[1], o2 = b->order[2];
    size_t elem = 2 * (d->dbl ? sizeof(double) : sizeof(float));
    char *v = data;
    for (int f = 0; f < d->batch && tide_box_count(b) > 0; f++)
        for (int i = b->lo[o0]; i < b->hi[o0]; i++)
            for (int j = b->lo[o1]; j < b->hi[o1]; j++)
                for (int k = b->lo[o2]; k < b->hi[o2]; k++, v += elem) {
                    int p[3];
                    p[o0] = i, p[o1] = j, p[o2] = k;
                    double den = d->lam[0][p[0]] + d->lam[1][p[1]] + d->lam[2][p[2]] - d->alpha;
                    if (!p[0] && !p[1] && !p[2])
                        memcpy((char *)d->origin + (size_t)f * elem, v, elem);
                    if (den != 0.0)
                        scale_complex(d->dbl, v, d->norm / den);
                    else
                        memset(v, 0, elem);
                }
    return TIDE_SUCCESS;
}

static int cpu_fft_create(const tide_cpu_fft_desc *d, void **f, size_t *work, char *err,
                          size_t len)
{
    (void)work, (void)err, (void)len;
    return tide_cpu_fft_create(d, (tide_cpu_fft **)f);
}

static int cpu_fft_bind(const tide_env *e, void *f)
{
    (void)e, (void)f;
    return TIDE_SUCCESS;
}

static int cpu_fft_execute(const tide_env *e, const void *f, void *in, void *out)
{
    (void)e;
    tide_cpu_fft_execute(f, in, out);
    return TIDE_SUCCESS;
}

static void cpu_fft_destroy(void *f) { tide_cpu_fft_destroy(f); }

static int cpu_reshape_create(const tide_env *e, const tide_box *from, const tide_box *to,
                              size_t elem, int batch, tide_reshape **r, char *err, size_t len)
{
    return tide_reshape_create(e->ctx->comm, from, to, elem, batch, e->exchange, e->threads, r,
                               err, len);
}

static int cpu_reshape_execute(const tide_env *e, const tide_reshape *r, const void *src,
                               void *dst)
{
    return tide_reshape_execute(r, src, dst, e->sendbuf, e->recvbuf);
}

static int cpu_sync(const tide_env *e)
{
    (void)e;
    return TIDE_SUCCESS;
}

static const char *cpu_last_error(void) { return ""; }

const tide_backend_ops tide_backend_cpu = {
    .name = "cpu",
    .gpu = 0,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy = cpu_copy,
    .scale = cpu_scale,
    .diag = cpu_diag,
    .fft_create = cpu_fft_create,
    .fft_bind = cpu_fft_bind,
    .fft_execute = cpu_fft_execute,
    .fft_destroy = cpu_fft_destroy,
    .reshape_create = cpu_reshape_create,
    .reshape_execute = cpu_reshape_execute,
    .sync = cpu_sync,
    .last_error = cpu_last_error,
};
