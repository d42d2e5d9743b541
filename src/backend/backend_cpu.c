/* backend_cpu.c: the CPU backend table: FFTW local transforms, threaded permuting copies and
 * MPI exchanges in host memory (see backend.h). */
#include <string.h>
#include <fftw3.h>
#include <omp.h>
#include "backend/backend.h"
#include "comm/region.h"
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

static int cpu_copy_region(const tide_env *e, size_t elem, const tide_box *region,
                           const void *src, const tide_box *sbox, void *dst,
                           const tide_box *dbox)
{
    tide_copy_region(elem, 1, region, src, sbox, dst, dbox, e->threads);
    return TIDE_SUCCESS;
}

static int cpu_halo(const tide_env *e, const tide_halo *h, void *a, tide_halo_part part)
{
    (void)e;
    return tide_halo_run(h, a, NULL, NULL, part);
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

/* Element k (its nc parts: 2 complex, 1 real; double or float) of a line at v with stride st
 * elements: load into z[0], z[1] (double; z[1] = 0 for a real one), store from them. */
static void elem_load(int dbl, int nc, const char *v, int64_t st, int64_t k, double *z)
{
    z[1] = 0;
    for (int c = 0; c < nc; c++)
        z[c] = dbl ? ((const double *)v)[nc * st * k + c] : ((const float *)v)[nc * st * k + c];
}

static void elem_store(int dbl, int nc, char *v, int64_t st, int64_t k, const double *z)
{
    for (int c = 0; c < nc; c++)
        if (dbl)
            ((double *)v)[nc * st * k + c] = z[c];
        else
            ((float *)v)[nc * st * k + c] = (float)z[c];
}

/* The weight of global index i of dimension k in the origin's sum (backend.h): mean_w where
 * given, else 1 at index 0 alone. */
static double dim_weight(const tide_spectral *d, int k, int i)
{
    return d->mean_w[k] ? d->mean_w[k][i] : i == 0;
}

/* The weight of point p, over the dimensions other than skip (the line; -1: none). */
static double mean_weight(const tide_spectral *d, const int p[3], int skip)
{
    double w = 1;
    for (int k = 0; k < 3; k++)
        if (k != skip)
            w *= dim_weight(d, k, p[k]);
    return w;
}

/* Field f's sum into d's origin (backend.h: field, keep): added to its entry, or stored. */
static void origin_put(const tide_spectral *d, int f, const double sum[2])
{
    double *o = (double *)d->origin + 2 * ((size_t)d->field + f);
    o[0] = d->keep ? o[0] + sum[0] : sum[0];
    o[1] = d->keep ? o[1] + sum[1] : sum[1];
}

/* The diagonal operator (backend.h: tide_spectral without a line) on the box within d's array
 * (data: the array). Each row's place in the array, the eigenvalue sum and the mean's weight
 * of the two slower dimensions are worked out once per row; the row is contiguous. */
static void cpu_diag(const tide_spectral *d, char *data)
{
    const tide_box *b = &d->box, *arr = tide_spectral_arr(d);
    int o0 = b->order[0], o1 = b->order[1], o2 = b->order[2], nc = d->real ? 1 : 2;
    size_t elem = tide_spectral_elem(d);
    int64_t st[3], fs = tide_box_count(arr), at = tide_box_offset(arr, b);
    tide_box_strides(arr, st);
    int p[3] = {0, 0, 0};
    for (int f = 0; f < d->batch; f++) {
        double sum[2] = {0, 0}, z[2];
        for (p[o0] = b->lo[o0]; p[o0] < b->hi[o0]; p[o0]++)
            for (p[o1] = b->lo[o1]; p[o1] < b->hi[o1]; p[o1]++) {
                double l01 = d->lam[o0][p[o0]] + d->lam[o1][p[o1]] - d->alpha;
                double w01 = mean_weight(d, p, o2);
                char *v = data + (size_t)(f * fs + at + (p[o0] - b->lo[o0]) * st[o0] +
                                          (p[o1] - b->lo[o1]) * st[o1]) * elem;
                for (int k = b->lo[o2]; k < b->hi[o2]; k++, v += elem) {
                    double den = l01 + d->lam[o2][k];
                    elem_load(d->dbl, nc, v, 0, 0, z);
                    if (w01 != 0.0) {
                        double w = w01 * dim_weight(d, o2, k);
                        sum[0] += w * z[0], sum[1] += w * z[1];
                    }
                    double s = den != 0.0 ? d->norm / den : 0.0; /* cleared, NaN or not */
                    z[0] = s != 0.0 ? z[0] * s : 0.0, z[1] = s != 0.0 ? z[1] * s : 0.0;
                    elem_store(d->dbl, nc, v, 0, 0, z);
                }
            }
        origin_put(d, f, sum);
    }
}

/* Lines b < nb (up to TIDE_LINE_BLOCK neighbours, solved together so that the elimination's
 * inner loops run across them, at unit stride where they are neighbours in memory, instead of
 * down one line at a time, a stride of a whole plane apart) at v + b sc elements (stride st
 * along them, n points, shifts s[b]) solved in place (backend.h: tide_spectral with a line)
 * in double: u holds them point by point, each point's real parts of the nb lines, then their
 * imaginary parts (2 n nb doubles), so the inner loops run across the lines at unit stride
 * and real data does one part only; cp the eliminated upper diagonals (n nb). Each line with a
 * weight w[b] adds w[b] times its weighted mean to sum. A pinned line (pin, s == 0) has that
 * mean removed, its last point fixed at 0 (its last row eliminated as u = 0) and the solution
 * shifted to zero weighted mean. */
static void solve_block(const tide_spectral *d, char *v, int64_t st, int64_t sc, int n, int nb,
                        const double *s, const double *w, double sum[2], double *cp, double *u)
{
    int nc = d->real ? 1 : 2, pinned[TIDE_LINE_BLOCK], any = 0;
    /* rm: each pinned line's mean, removed */
    double z[2], den[TIDE_LINE_BLOCK], rm[2][TIDE_LINE_BLOCK];
    for (int k = 0; k < n; k++)
        for (int b = 0; b < nb; b++) {
            elem_load(d->dbl, nc, v, 1, k * st + b * sc, z);
            u[2 * k * nb + b] = z[0], u[(2 * k + 1) * nb + b] = z[1];
        }
    for (int b = 0; b < nb; b++) {
        pinned[b] = d->pin && s[b] == 0.0;
        any = any || pinned[b];
        double mean[2] = {0, 0};
        for (int k = 0; k < n && (w[b] != 0 || pinned[b]); k++) {
            mean[0] += d->weight[k] * u[2 * k * nb + b];
            mean[1] += d->weight[k] * u[(2 * k + 1) * nb + b];
        }
        if (w[b] != 0)
            sum[0] += w[b] * mean[0], sum[1] += w[b] * mean[1];
        rm[0][b] = pinned[b] ? mean[0] : 0, rm[1][b] = pinned[b] ? mean[1] : 0;
    }
    for (int k = 0; k < n; k++) {
        double lo = k ? d->lower[k] : 0, *c = cp + k * nb;
        for (int b = 0; b < nb; b++) {
            den[b] = d->diag[k] + s[b] - (k ? lo * c[b - nb] : 0);
            c[b] = d->upper[k] / den[b];
        }
        int fix = any && k == n - 1; /* the pinned lines' last row: u = 0 (singular as it was) */
        for (int b = 0; b < nb && fix; b++)
            den[b] = pinned[b] ? 1 : den[b], c[b] = pinned[b] ? 0 : c[b];
        for (int part = 0; part < nc; part++) {
            double *x = u + (2 * k + part) * nb;
            for (int b = 0; b < nb; b++)
                x[b] = (d->norm * (x[b] - rm[part][b]) - (k ? lo * x[b - 2 * nb] : 0)) / den[b];
            for (int b = 0; b < nb && fix; b++)
                x[b] = pinned[b] ? 0 : x[b];
        }
    }
    for (int k = n - 2; k >= 0; k--)
        for (int part = 0; part < nc; part++) {
            double *x = u + (2 * k + part) * nb, *c = cp + k * nb;
            for (int b = 0; b < nb; b++)
                x[b] -= c[b] * x[b + 2 * nb];
        }
    for (int b = 0; b < nb && any; b++) /* the pinned lines to zero weighted mean */
        for (int part = 0; part < nc && pinned[b]; part++) {
            double shift = 0;
            for (int k = 0; k < n; k++)
                shift += d->weight[k] * u[(2 * k + part) * nb + b];
            for (int k = 0; k < n; k++)
                u[(2 * k + part) * nb + b] -= shift;
        }
    for (int k = 0; k < n; k++)
        for (int b = 0; b < nb; b++) {
            z[0] = u[2 * k * nb + b], z[1] = u[(2 * k + 1) * nb + b];
            elem_store(d->dbl, nc, v, 1, k * st + b * sc, z);
        }
}

/* The line solves (backend.h: tide_spectral with a line): every line along d->line of every
 * field, at (i, j) of the other two dimensions a and c, c the one stored faster, in blocks
 * of neighbours along c, on the box within d's array (v: the array); the blocks shared out
 * over up to `threads` threads, each eliminating in its own part of the scratch. */
static void cpu_lines(const tide_spectral *d, char *v, int threads)
{
    const tide_box *bx = &d->box, *arr = tide_spectral_arr(d);
    int L = d->line, a = L == 0 ? 1 : 0, c = L == 2 ? 1 : 2, n = tide_ext(bx, L);
    int64_t st[3];
    tide_box_strides(arr, st);
    if (st[a] < st[c]) {
        int t = a;
        a = c, c = t;
    }
    size_t elem = tide_spectral_elem(d), row = tide_spectral_line_block(n);
    int64_t count = tide_box_count(arr), at = tide_box_offset(arr, bx);
    int na = tide_ext(bx, a), nq = (tide_ext(bx, c) + TIDE_LINE_BLOCK - 1) / TIDE_LINE_BLOCK;
    int fit = (int)(tide_spectral_scratch(d, n) / row), T = threads < fit ? threads : fit;
    T = T < 1 ? 1 : T;
    for (int f = 0; f < d->batch; f++) {
        double sr = 0, si = 0;
        #pragma omp parallel for num_threads(T) reduction(+ : sr, si) schedule(static)
        for (int64_t q = 0; q < (int64_t)na * nq; q++) {
            int i = bx->lo[a] + (int)(q / nq), j0 = bx->lo[c] + (int)(q % nq) * TIDE_LINE_BLOCK;
            int nb = bx->hi[c] - j0 < TIDE_LINE_BLOCK ? bx->hi[c] - j0 : TIDE_LINE_BLOCK;
            double s[TIDE_LINE_BLOCK], w[TIDE_LINE_BLOCK], sum[2] = {0, 0};
            double *cp = d->scratch + row * (size_t)omp_get_thread_num();
            char *line = v + (size_t)(f * count + at + (i - bx->lo[a]) * st[a] +
                                      (j0 - bx->lo[c]) * st[c]) * elem;
            for (int b = 0; b < nb; b++) {
                int p[3] = {0, 0, 0};
                p[a] = i, p[c] = j0 + b;
                w[b] = mean_weight(d, p, L);
                s[b] = d->lam[a][i] + d->lam[c][j0 + b] - d->alpha;
            }
            solve_block(d, line, st[L], st[c], n, nb, s, w, sum, cp,
                        cp + (size_t)n * TIDE_LINE_BLOCK);
            sr += sum[0], si += sum[1];
        }
        origin_put(d, f, (const double[2]){sr, si});
    }
}

/* s_k = norm / (v[k] + s0) for k < m, 0 where that denominator is 0 (the singular mode; the
 * division is then by 1, so that no lane traps), stored twice (s[2 k] and s[2 k + 1]: the
 * factor of both parts of complex value k); vectorized and cloned for the machine's widest
 * vectors. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
factors(double *s, int m, const double *v, double s0, double norm)
{
    for (int k = 0; k < m; k++) {
        double den = v[k] + s0, zero = den == 0.0; /* no branch: every clone vectorizes */
        s[2 * k] = s[2 * k + 1] = norm / (den + zero) * (1.0 - zero);
    }
}

/* The m complex values x times the factors s (2 m of them: factors'; a factor 0 gives a zero,
 * whose sign is the value's), in double as elem_load and elem_store would: one loop over the
 * 2 m parts, cloned as factors. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
apply_f(float *x, int m, const double *s)
{
    for (int i = 0; i < 2 * m; i++)
        x[i] = (float)(x[i] * s[i]);
}

__attribute__((target_clones("avx512f", "avx2", "default"))) static void
apply_d(double *x, int m, const double *s)
{
    for (int i = 0; i < 2 * m; i++)
        x[i] *= s[i];
}

/* n complex values x_k (float or double) times s_k = norm / (v[k] + s0), 0 where s_k is 0:
 * along a line (v its eigenvalues, s0 its l01) or across the lines of a buffer row (v the
 * lines' l01, s0 the row's eigenvalue), in blocks of B. The division a point is most of the
 * line pass's scaling. */
static void scale(int dbl, char *x, int n, const double *v, double s0, double norm)
{
    enum { B = 128 };
    double s[2 * B];
    for (int k0 = 0; k0 < n; k0 += B) {
        int m = n - k0 < B ? n - k0 : B;
        factors(s, m, v + k0, s0, norm);
        if (dbl)
            apply_d((double *)x + 2 * k0, m, s);
        else
            apply_f((float *)x + 2 * k0, m, s);
    }
}

/* The periodic lines transformed inside the op (backend.h: tide_spectral with line_fft), a
 * plane of the slower other dimension a at a time, the planes shared out over `threads`
 * threads: the plane copied into the thread's buffer in the array's own order (no transpose:
 * the lines contiguous, or side by side with FFTW's transforms strided across them),
 * transformed forward by FFTW, scaled as the diagonal operator does (the mean's sum taken from
 * their modes 0), transformed back and copied back, so the data is read and written once.
 * Returns 0, TIDE_ERR_NOMEM or TIDE_ERR_BACKEND. */
static int cpu_line_ffts(const tide_spectral *d, char *v, int threads)
{
    const tide_box *bx = &d->box, *arr = tide_spectral_arr(d);
    int L = d->line, a = L == 0 ? 1 : 0, c = L == 2 ? 1 : 2;
    int64_t st[3];
    tide_box_strides(arr, st);
    if (st[a] < st[c]) {
        int t = a;
        a = c, c = t;
    }
    int n = (int)tide_ext(bx, L), nq = (int)tide_ext(bx, c), na = (int)tide_ext(bx, a);
    int T = threads < 1 ? 1 : threads > na ? na : threads;
    /* across: the line is the slower of L and c in the array, so a row of the buffer holds
     * point k of every line of the plane (the scaling then vectorized across the lines); else
     * the lines lie one after the other. Either way the copy is a copy of rows; lines made
     * contiguous whatever the array's order would make it a transpose, which costs nearly what
     * a transform does. */
    int across = st[L] > st[c];
    /* a buffer a thread, each as aligned as the first: the plane, then its lines' l01 */
    size_t elem = tide_spectral_elem(d), plane_bytes = (size_t)n * (size_t)nq * elem;
    size_t pb = (plane_bytes + sizeof(double) * (size_t)nq + 63) / 64 * 64;
    char *bufs = fftw_malloc(pb * (size_t)T);
    tide_box lines = {{0, 0, 0}, {1, across ? n : nq, across ? nq : n}, {0, 1, 2}};
    int64_t count = tide_box_count(arr);
    tide_cpu_fft *fw = NULL, *bw = NULL;
    tide_cpu_fft_desc fd = {.precision = d->dbl ? TIDE_DOUBLE : TIDE_FLOAT,
                            .kind = TIDE_KIND_C2C, .sign = -1, .ibox = &lines, .obox = &lines,
                            .dims = {across ? 1 : 2}, .ndims = 1, .batch = 1, .threads = 1,
                            .in = bufs, .out = bufs};
    int st0 = bufs ? tide_cpu_fft_create(&fd, &fw) : TIDE_ERR_NOMEM;
    fd.sign = 1;
    if (!st0)
        st0 = tide_cpu_fft_create(&fd, &bw);
    for (int f = 0; f < d->batch && !st0; f++) {
        double sr = 0, si = 0;
        #pragma omp parallel for num_threads(T) reduction(+ : sr, si) schedule(static)
        for (int i = bx->lo[a]; i < bx->hi[a]; i++) {
            char *buf = bufs + pb * (size_t)omp_get_thread_num();
            double *l01 = (double *)(buf + (plane_bytes + 7) / 8 * 8);
            char *field = v + (size_t)(f * count) * elem;
            /* the plane, and the buffer: the same points in the same order */
            tide_box plane = *bx;
            plane.lo[a] = i, plane.hi[a] = i + 1;
            tide_box dense = plane;
            dense.order[0] = a, dense.order[1] = across ? L : c, dense.order[2] = across ? c : L;
            double z[2];
            tide_copy_region(elem, 1, &plane, field, arr, buf, &dense, 1);
            tide_cpu_fft_execute(fw, buf, buf);
            const double *lam = d->lam[L] + bx->lo[L];
            for (int j = 0; j < nq; j++) { /* line j's l01, and its point 0 in the mean */
                int p[3] = {0, 0, 0}, q = bx->lo[c] + j;
                p[a] = i, p[c] = q;
                double w = mean_weight(d, p, L) * dim_weight(d, L, bx->lo[L]);
                l01[j] = d->lam[a][i] + d->lam[c][q] - d->alpha;
                elem_load(d->dbl, 2, buf, 1, across ? j : (int64_t)j * n, z);
                if (w != 0.0)
                    sr += w * z[0], si += w * z[1];
            }
            /* across: row k (point k of every line); else line j */
            for (int r = 0; r < (across ? n : nq); r++) {
                char *x = buf + (size_t)r * (size_t)(across ? nq : n) * elem;
                scale(d->dbl, x, across ? nq : n, across ? l01 : lam, across ? lam[r] : l01[r],
                      d->norm);
            }
            tide_cpu_fft_execute(bw, buf, buf);
            tide_copy_region(elem, 1, &plane, buf, &dense, field, arr, 1);
        }
        origin_put(d, f, (const double[2]){sr, si});
    }
    tide_cpu_fft_destroy(fw);
    tide_cpu_fft_destroy(bw);
    fftw_free(bufs);
    return st0;
}

/* Any line length: FFTW transforms it. */
static int cpu_line_fft_ok(int n, int dbl)
{
    (void)dbl;
    return n >= 1;
}

static int cpu_spectral(const tide_env *e, const tide_spectral *d, void *data)
{
    if (tide_box_count(&d->box) == 0) { /* sums of 0: stored as the GPU's clear does */
        for (int f = 0; f < d->batch; f++)
            origin_put(d, f, (const double[2]){0, 0});
        return TIDE_SUCCESS;
    }
    if (d->line_fft)
        return cpu_line_ffts(d, data, e->threads);
    if (d->line >= 0)
        cpu_lines(d, data, e->threads);
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
                              const tide_box *part_from, const tide_box *part_to, size_t elem,
                              int batch, tide_reshape **r, char *err, size_t len)
{
    return tide_reshape_create(e->ctx->comm, from, to, part_from, part_to, elem, batch,
                               e->exchange, e->threads, r, err, len);
}

static int cpu_reshape_execute(const tide_env *e, const tide_reshape *r, const void *src,
                               void *dst, int flags)
{
    (void)flags; /* 0 on the CPU: nothing runs beside the exchange, nothing stores directly */
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

#if TIDE_HAVE_CBLAS
static enum CBLAS_TRANSPOSE cblas_op(int trans)
{
    return trans == TIDE_CONJTRANS ? CblasConjTrans : trans ? CblasTrans : CblasNoTrans;
}
#endif

static int cpu_gemm(const tide_env *e, void *h, const tide_gemm_desc *d, tide_scalar alpha,
                    const void *a, const void *b, tide_scalar beta, void *c)
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
    enum CBLAS_TRANSPOSE ta = cblas_op(d->transa), tb = cblas_op(d->transb);
    int m = (int)d->m, n = (int)d->n, k = (int)d->k;
    int lda = (int)d->lda, ldb = (int)d->ldb, ldc = (int)d->ldc;
    if (d->cplx && d->dbl) {
        double za[2] = {alpha.re, alpha.im}, zb[2] = {beta.re, beta.im};
        cblas_zgemm(CblasColMajor, ta, tb, m, n, k, za, a, lda, b, ldb, zb, c, ldc);
    } else if (d->cplx) {
        float ca[2] = {(float)alpha.re, (float)alpha.im}, cb[2] = {(float)beta.re,
                                                                   (float)beta.im};
        cblas_cgemm(CblasColMajor, ta, tb, m, n, k, ca, a, lda, b, ldb, cb, c, ldc);
    } else if (d->dbl) {
        cblas_dgemm(CblasColMajor, ta, tb, m, n, k, alpha.re, a, lda, b, ldb, beta.re, c, ldc);
    } else {
        cblas_sgemm(CblasColMajor, ta, tb, m, n, k, (float)alpha.re, a, lda, b, ldb,
                    (float)beta.re, c, ldc);
    }
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
    .copy_region = cpu_copy_region,
    .halo = cpu_halo,
    .scale = cpu_scale,
    .spectral = cpu_spectral,
    .spectral_line_fft = cpu_line_fft_ok,
    .sweep_create = tide_cpu_sweep_create,
    .sweep = tide_cpu_sweep,
    .sweep_destroy = cpu_sweep_destroy,
    .band_create = tide_cpu_band_create,
    .band = tide_cpu_band,
    .band_destroy = tide_cpu_band_destroy,
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
