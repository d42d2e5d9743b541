/* backend_cpu.c: the CPU backend table: FFTW local transforms, threaded permuting copies and
 * MPI exchanges in host memory (see backend.h). */
#include <string.h>
#include <fftw3.h>
#include "backend.h"
#include "region.h"
#include "tide_config.h"
#if TIDE_HAVE_CBLAS
#include <cblas.h>
#endif

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

/* The diagonal operator (backend.h: tide_spectral without a line). */
static void cpu_diag(const tide_spectral *d, char *v)
{
    const tide_box *b = &d->box;
    int o0 = b->order[0], o1 = b->order[1], o2 = b->order[2];
    size_t elem = 2 * (d->dbl ? sizeof(double) : sizeof(float));
    for (int f = 0; f < d->batch; f++)
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
}

/* Complex element k of a line (double or float) at v with stride st elements: load into
 * z[0], z[1] (double), store from them. */
static void line_load(int dbl, const char *v, int64_t st, int k, double *z)
{
    if (dbl) {
        const double *x = (const double *)v + 2 * st * k;
        z[0] = x[0], z[1] = x[1];
    } else {
        const float *x = (const float *)v + 2 * st * k;
        z[0] = x[0], z[1] = x[1];
    }
}

static void line_store(int dbl, char *v, int64_t st, int k, const double *z)
{
    if (dbl) {
        double *x = (double *)v + 2 * st * k;
        x[0] = z[0], x[1] = z[1];
    } else {
        float *x = (float *)v + 2 * st * k;
        x[0] = (float)z[0], x[1] = (float)z[1];
    }
}

/* One line of n points at v (stride st) solved in place (backend.h: tide_spectral with a line),
 * in double precision throughout: cp holds the eliminated upper diagonal, u the right-hand
 * side, then the solution (2 n doubles). origin: where the line's weighted mean goes, or NULL. */
static void solve_line(const tide_spectral *d, char *v, int64_t st, int n, double s,
                       double *cp, double *u, void *origin)
{
    int pinned = d->pin && s == 0.0, m = pinned ? n - 1 : n; /* rows eliminated */
    double mean[2] = {0, 0};
    for (int k = 0; k < n; k++)
        line_load(d->dbl, v, st, k, &u[2 * k]);
    for (int k = 0; k < n && (origin || pinned); k++) /* one line in the whole grid */
        mean[0] += d->weight[k] * u[2 * k], mean[1] += d->weight[k] * u[2 * k + 1];
    if (origin)
        line_store(d->dbl, origin, 0, 0, mean);
    for (int k = 0; k < n; k++) {
        u[2 * k] = d->norm * (u[2 * k] - (pinned ? mean[0] : 0));
        u[2 * k + 1] = d->norm * (u[2 * k + 1] - (pinned ? mean[1] : 0));
    }
    for (int k = 0; k < m; k++) {
        double lo = k ? d->lower[k] : 0, den = d->diag[k] + s - (k ? lo * cp[k - 1] : 0);
        cp[k] = d->upper[k] / den;
        u[2 * k] = (u[2 * k] - (k ? lo * u[2 * k - 2] : 0)) / den;
        u[2 * k + 1] = (u[2 * k + 1] - (k ? lo * u[2 * k - 1] : 0)) / den;
    }
    for (int k = m; k < n; k++)
        u[2 * k] = u[2 * k + 1] = 0; /* the pinned point */
    for (int k = m - 2; k >= 0; k--) {
        u[2 * k] -= cp[k] * u[2 * k + 2];
        u[2 * k + 1] -= cp[k] * u[2 * k + 3];
    }
    double shift[2] = {0, 0};
    for (int k = 0; k < n && pinned; k++)
        shift[0] += d->weight[k] * u[2 * k], shift[1] += d->weight[k] * u[2 * k + 1];
    for (int k = 0; k < n; k++) {
        double z[2] = {u[2 * k] - shift[0], u[2 * k + 1] - shift[1]};
        line_store(d->dbl, v, st, k, z);
    }
}

/* The line solves (backend.h: tide_spectral with a line): every line along d->line of every
 * field, each at (i, j) of the other two dimensions a < b. */
static void cpu_lines(const tide_spectral *d, char *v)
{
    const tide_box *b = &d->box;
    int L = d->line, a = L == 0 ? 1 : 0, c = L == 2 ? 1 : 2, n = tide_ext(b, L);
    int64_t st[3];
    tide_box_strides(b, st);
    double *cp = d->scratch;
    size_t elem = 2 * (d->dbl ? sizeof(double) : sizeof(float));
    int64_t count = tide_box_count(b);
    for (int f = 0; f < d->batch; f++)
        for (int i = b->lo[a]; i < b->hi[a]; i++)
            for (int j = b->lo[c]; j < b->hi[c]; j++) {
                char *line = v + (size_t)(f * count + (i - b->lo[a]) * st[a] +
                                          (j - b->lo[c]) * st[c]) * elem;
                void *origin = !i && !j ? (char *)d->origin + (size_t)f * elem : NULL;
                double s = d->lam[a][i] + d->lam[c][j] - d->alpha;
                solve_line(d, line, st[L], n, s, cp, cp + n, origin);
            }
}

static int cpu_spectral(const tide_env *e, const tide_spectral *d, void *data)
{
    (void)e;
    if (tide_box_count(&d->box) == 0)
        return TIDE_SUCCESS;
    if (d->line >= 0)
        cpu_lines(d, data);
    else
        cpu_diag(d, data);
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

/* Matrix multiplies by the CBLAS on e's threads; TIDE_ERR_UNSUPPORTED in a build without. */
static int cpu_gemm_create(void **h)
{
    *h = NULL;
    return TIDE_HAVE_CBLAS ? TIDE_SUCCESS : TIDE_ERR_UNSUPPORTED;
}

static int cpu_gemm(const tide_env *e, void *h, const tide_gemm_desc *d, double alpha,
                    const void *a, const void *b, double beta, void *c)
{
    (void)h;
#if TIDE_HAVE_CBLAS
#if TIDE_HAVE_OPENBLAS
    openblas_set_num_threads(e->threads);
#else
    (void)e;
#endif
    if (d->m == 0 || d->n == 0)
        return TIDE_SUCCESS;
    enum CBLAS_TRANSPOSE ta = d->transa ? CblasTrans : CblasNoTrans;
    enum CBLAS_TRANSPOSE tb = d->transb ? CblasTrans : CblasNoTrans;
    if (d->dbl)
        cblas_dgemm(CblasColMajor, ta, tb, d->m, d->n, d->k, alpha, a, d->lda, b, d->ldb, beta,
                    c, d->ldc);
    else
        cblas_sgemm(CblasColMajor, ta, tb, d->m, d->n, d->k, (float)alpha, a, d->lda, b,
                    d->ldb, (float)beta, c, d->ldc);
    return TIDE_SUCCESS;
#else
    (void)e, (void)d, (void)alpha, (void)a, (void)b, (void)beta, (void)c;
    return TIDE_ERR_UNSUPPORTED;
#endif
}

static void cpu_gemm_destroy(void *h) { (void)h; }

static void cpu_sweep_destroy(const tide_env *e, tide_sweep *s)
{
    (void)e;
    tide_cpu_sweep_destroy(s);
}

const tide_backend_ops tide_backend_cpu = {
    .name = "cpu",
    .gpu = 0,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy = cpu_copy,
    .scale = cpu_scale,
    .spectral = cpu_spectral,
    .sweep_create = tide_cpu_sweep_create,
    .sweep = tide_cpu_sweep,
    .sweep_destroy = cpu_sweep_destroy,
    .gemm_create = cpu_gemm_create,
    .gemm = cpu_gemm,
    .gemm_destroy = cpu_gemm_destroy,
    .fft_create = cpu_fft_create,
    .fft_bind = cpu_fft_bind,
    .fft_execute = cpu_fft_execute,
    .fft_destroy = cpu_fft_destroy,
    .reshape_create = cpu_reshape_create,
    .reshape_execute = cpu_reshape_execute,
    .sync = cpu_sync,
    .last_error = cpu_last_error,
};
