// r2r.cu: real-to-real transforms (cosine and sine, FFTW's REDFT/RODFT kinds and scaling)
// along one dimension of a box on the GPU, which cuFFT lacks (see gpu.h).
//
// Each line of n values is gathered into a work buffer of 2n complex values, pre-twiddled,
// transformed by one batched complex FFT of length 2n, and post-twiddled into place:
//   DCT-II  x mirrored to 2n, forward FFT Y:         X_k = Re(e^{-i pi k / 2n} Y_k)
//   DST-II  DCT-II of (-1)^j x_j, read backwards:    X_k = DCT-II_{n-1-k}
//   DCT-III V_j = x_j e^{i pi j / 2n} (j < n), 0 at n, Hermitian above; inverse FFT y:
//                                                    X_k = Re(y_k)
//   DST-III (-1)^k DCT-III of x reversed
//   DCT-IV  z_j = x_j e^{-i pi j / 2n} (j < n), 0 above; forward FFT Z:
//                                                    X_k = 2 Re(e^{-i pi (k + 1/2) / 2n} Z_k)
//   DST-IV  the same Z:                              X_k = -2 Im(e^{-i pi (k + 1/2) / 2n} Z_k)
// The FFT is four times the work of the best real-to-real algorithms, and the buffer twice
// the data's size in complex values: simple and exact to rounding for any n.
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cufft.h>
#include <cuda_runtime.h>
#include "gpu.h"
extern "C" {
#include "region.h"
}

enum { K_DCT2 = 1, K_DCT3, K_DST2, K_DST3, K_DCT4, K_DST4 }; // tide_r2r_kind's values

struct tide_gpu_r2r {
    int dbl, kind, n, parts;
    int64_t lines;             // batch x the other two extents x parts
    int64_t e[2];              // extents of the other two dimensions, slower first
    int64_t ss[3], ds[3];      // src and dst scalar strides: line dimension, the other two
    int64_t sfield, dfield;    // scalar distance between fields
    int batch;
    size_t wbytes;             // the gathered lines, at the start of the work area
    cufftHandle plan;
    void *w;                   // set by bind
};

namespace {

template <typename T> struct cpx;
template <> struct cpx<float> { typedef float2 t; };
template <> struct cpx<double> { typedef double2 t; };

// The scalar offset of value j of line l (in src when src, else dst): l = ((f e0 + a) e1 + c)
// parts + part.
__device__ inline int64_t at(const tide_gpu_r2r &r, int64_t l, int64_t j, int src)
{
    int64_t part = l % r.parts, q = l / r.parts, c = q % r.e[1], s = q / r.e[1];
    int64_t a = s % r.e[0], f = s / r.e[0];
    const int64_t *st = src ? r.ss : r.ds;
    return (src ? r.sfield : r.dfield) * f + st[1] * a + st[2] * c + st[0] * j + part;
}

template <typename T>
__global__ void gather(tide_gpu_r2r r, const T *x, typename cpx<T>::t *w)
{
    int64_t n = r.n, m = 2 * n, total = r.lines * m;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t l = i / m, j = i % m;
        double re = 0, im = 0;
        switch (r.kind) {
        case K_DCT2:
        case K_DST2: {
            int64_t jj = j < n ? j : m - 1 - j;
            re = x[at(r, l, jj, 1)];
            if (r.kind == K_DST2 && (jj & 1))
                re = -re;
            break;
        }
        case K_DCT3:
        case K_DST3: {
            if (j == n)
                break;
            int64_t jj = j < n ? j : m - j; // the Hermitian half mirrors the first
            double v = x[at(r, l, r.kind == K_DST3 ? n - 1 - jj : jj, 1)], s, c;
            sincospi((double)jj / m, &s, &c);
            re = v * c, im = j < n ? v * s : -v * s;
            break;
        }
        default: { // DCT-IV, DST-IV
            if (j >= n)
                break;
            double v = x[at(r, l, j, 1)], s, c;
            sincospi((double)j / m, &s, &c);
            re = v * c, im = -v * s;
        }
        }
        typename cpx<T>::t z;
        z.x = (T)re, z.y = (T)im;
        w[i] = z;
    }
}

template <typename T>
__global__ void scatter(tide_gpu_r2r r, const typename cpx<T>::t *w, T *x)
{
    int64_t n = r.n, m = 2 * n, total = r.lines * n;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t l = i / n, k = i % n;
        double v, s, c;
        switch (r.kind) {
        case K_DCT2:
        case K_DST2: {
            int64_t kk = r.kind == K_DST2 ? n - 1 - k : k;
            typename cpx<T>::t y = w[l * m + kk];
            sincospi((double)kk / m, &s, &c);
            v = y.x * c + y.y * s; // Re(e^{-i pi kk / 2n} Y)
            break;
        }
        case K_DCT3:
        case K_DST3:
            v = w[l * m + k].x;
            if (r.kind == K_DST3 && (k & 1))
                v = -v;
            break;
        default: { // DCT-IV, DST-IV
            typename cpx<T>::t y = w[l * m + k];
            sincospi((k + 0.5) / m, &s, &c);
            v = r.kind == K_DCT4 ? 2 * (y.x * c + y.y * s) : -2 * (y.y * c - y.x * s);
        }
        }
        x[at(r, l, k, 0)] = (T)v;
    }
}

unsigned blocks_for(int64_t work)
{
    int64_t b = (work + 255) / 256;
    return (unsigned)(b < 65535 * 8 ? (b > 0 ? b : 1) : 65535 * 8);
}

} // namespace

extern "C" int tide_gpu_r2r_create(int dbl, int kind, int dim, const tide_box *box,
                                   const tide_box *sarr, const tide_box *darr, int batch,
                                   int complex_elems, tide_gpu_r2r **out, size_t *work_bytes,
                                   char *why, size_t len)
{
    tide_gpu_r2r *r = (tide_gpu_r2r *)calloc(1, sizeof *r);
    if (!r) {
        snprintf(why, len, "out of memory");
        return TIDE_ERR_NOMEM;
    }
    int64_t ss[3], ds[3];
    tide_box_strides(sarr, ss);
    tide_box_strides(darr, ds);
    r->dbl = dbl, r->kind = kind, r->batch = batch;
    r->parts = complex_elems ? 2 : 1;
    r->n = (int)tide_ext(box, dim);
    int other[2], k = 0;
    for (int i = 0; i < 3; i++)
        if (box->order[i] != dim)
            other[k++] = box->order[i];
    for (int i = 0; i < 2; i++) {
        r->e[i] = tide_ext(box, other[i]);
        r->ss[i + 1] = r->parts * ss[other[i]];
        r->ds[i + 1] = r->parts * ds[other[i]];
    }
    r->ss[0] = r->parts * ss[dim], r->ds[0] = r->parts * ds[dim];
    r->sfield = r->parts * tide_box_count(sarr), r->dfield = r->parts * tide_box_count(darr);
    r->lines = (int64_t)batch * r->e[0] * r->e[1] * r->parts;
    size_t cplx = dbl ? sizeof(double2) : sizeof(float2);
    r->wbytes = ((size_t)r->lines * 2 * (size_t)r->n * cplx + 255) / 256 * 256;
    long long m = 2LL * r->n;
    size_t work = 0;
    cufftResult e = cufftCreate(&r->plan);
    if (e == CUFFT_SUCCESS)
        e = cufftSetAutoAllocation(r->plan, 0);
    if (e == CUFFT_SUCCESS)
        e = cufftMakePlanMany64(r->plan, 1, &m, NULL, 1, m, NULL, 1, m,
                                dbl ? CUFFT_Z2Z : CUFFT_C2C, r->lines, &work);
    if (e != CUFFT_SUCCESS) {
        snprintf(why, len, "cuFFT could not plan the length-%lld transforms of a cosine or "
                 "sine transform (%d)", m, (int)e);
        cufftDestroy(r->plan);
        free(r);
        return e == CUFFT_ALLOC_FAILED ? TIDE_ERR_NOMEM : TIDE_ERR_BACKEND;
    }
    *work_bytes = r->wbytes + work;
    *out = r;
    return 0;
}

extern "C" int tide_gpu_r2r_bind(tide_gpu_r2r *r, void *work, void *stream)
{
    r->w = work;
    cufftResult e = cufftSetWorkArea(r->plan, (char *)work + r->wbytes);
    if (e == CUFFT_SUCCESS)
        e = cufftSetStream(r->plan, (cudaStream_t)stream);
    return e == CUFFT_SUCCESS ? 0 : TIDE_ERR_BACKEND;
}

extern "C" int tide_gpu_r2r_execute(const tide_gpu_r2r *r, const void *src, void *dst,
                                    void *stream)
{
    if (r->lines == 0 || r->n == 0)
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
    int inverse = r->kind == K_DCT3 || r->kind == K_DST3;
    int64_t m = 2LL * r->n;
    cufftResult e;
    if (r->dbl) {
        gather<double><<<blocks_for(r->lines * m), 256, 0, s>>>(*r, (const double *)src,
                                                                 (double2 *)r->w);
        e = cufftExecZ2Z(r->plan, (cufftDoubleComplex *)r->w, (cufftDoubleComplex *)r->w,
                         inverse ? CUFFT_INVERSE : CUFFT_FORWARD);
        if (e == CUFFT_SUCCESS)
            scatter<double><<<blocks_for(r->lines * r->n), 256, 0, s>>>(
                *r, (const double2 *)r->w, (double *)dst);
    } else {
        gather<float><<<blocks_for(r->lines * m), 256, 0, s>>>(*r, (const float *)src,
                                                               (float2 *)r->w);
        e = cufftExecC2C(r->plan, (cufftComplex *)r->w, (cufftComplex *)r->w,
                         inverse ? CUFFT_INVERSE : CUFFT_FORWARD);
        if (e == CUFFT_SUCCESS)
            scatter<float><<<blocks_for(r->lines * r->n), 256, 0, s>>>(
                *r, (const float2 *)r->w, (float *)dst);
    }
    if (e != CUFFT_SUCCESS)
        return tide_gpu_note_error("cufftExec (cosine or sine transform)", "failed", (int)e);
    cudaError_t c = cudaGetLastError();
    return c == cudaSuccess ? 0
                            : tide_gpu_note_error("cosine or sine transform kernel",
                                                  cudaGetErrorString(c), (int)c);
}

extern "C" void tide_gpu_r2r_destroy(tide_gpu_r2r *r)
{
    if (!r)
        return;
    cufftDestroy(r->plan);
    free(r);
}
