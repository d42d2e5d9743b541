// r2r.cu: real-to-real transforms (cosine and sine, FFTW's REDFT/RODFT kinds and scaling)
// along one dimension of a box on the GPU, which cuFFT lacks (see gpu/r2r.h).
//
// Each line of n values is pre-processed into a work buffer, transformed there by one batched
// cuFFT plan, and post-processed into place (x' below: x, or x reversed where named):
//   DCT-II  (Makhoul 1980) v_j = x_{2j}, v_{n-1-j} = x_{2j+1}; real FFT V of length n:
//                                                    X_k = 2 Re(e^{-i pi k / 2n} V_k)
//   DST-II  DCT-II of (-1)^j x_j, read backwards:    X_k = DCT-II_{n-1-k}
//   DCT-III the inverse of DCT-II's steps: V_k = e^{i pi k / 2n} (x_k - i x_{n-k}), k <= n/2
//           (x_n = 0); inverse real FFT v of length n; X_{2j} = v_j, X_{2j+1} = v_{n-1-j}
//   DST-III (-1)^k DCT-III of x reversed
//   DCT-IV  n even, 4 or more: u_p = (x'_{2p} + i x'_{n-1-2p}) e^{-i pi p / n}, complex FFT Z
//           of length n/2, c_p = e^{-i pi (4p + 1) / 4n} Z_p: X_{2p} = 2 Re c_p,
//           X_{n-1-2p} = -2 Im c_p
//           n odd or 2: z_j = x_j e^{-i pi j / 2n} (j < n), 0 above, complex FFT Z of length
//           2n:                                      X_k = 2 Re(e^{-i pi (k + 1/2) / 2n} Z_k)
//   DST-IV  n even, 4 or more: (-1)^k DCT-IV of x reversed; else the same Z,
//                                                    X_k = -2 Im(e^{-i pi (k + 1/2) / 2n} Z_k)
//   n = 1   a factor: 2 for the II kinds, 1 for the III kinds, 2 cos(pi / 4) for the IV kinds
// Every transform but DCT-IV and DST-IV of odd length (or 2) moves the data about as often as
// a real FFT of length n does; those take a complex FFT of length 2n, four times the work.
//
// The work buffer holds each line's values with the lines interleaved (value j of line l at
// j L + l, L lines) unless the line is the array's fastest dimension (then line after line):
// consecutive threads then read and write consecutive addresses of both the array and the
// work buffer, and cuFFT reads the lines with the same strides.
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cufft.h>
#include <cuda_runtime.h>
#include "backend/device.h"
#include "gpu/fft.h"
#include "gpu/r2r.h"
extern "C" {
#include "backend/cpu_fft.h"
#include "comm/region.h"
}
enum {
    A_NONE,   // n = 1: a scale factor
    A_REAL,   // DCT/DST-II and -III: a real FFT of length n
    A_HALF,   // DCT/DST-IV, n even: a complex FFT of length n / 2
    A_DOUBLE, // DCT/DST-IV, n odd or 2: a complex FFT of length 2n
};

struct tide_gpu_r2r {
    int dbl, kind, alg, n, parts;
    int64_t lines;             // batch x the other two extents x parts
    int64_t e[2];              // extents of the other two dimensions, slower first
    int64_t ss[3], ds[3];      // src and dst scalar strides: line dimension, the other two
    int64_t sfield, dfield;    // scalar distance between fields
    int inter;                 // the work's lines interleaved (else one after the other)
    int64_t rlen, clen;        // real values (A_REAL) and complex values per line of the work
    size_t rbytes, cbytes;     // the work's real lines (A_REAL), then its complex lines
    int planned;
    cufftHandle plan;
    void *w;                   // set by bind
};

namespace {

template <typename T> struct cpx;
template <> struct cpx<float> { typedef float2 t; };
template <> struct cpx<double> { typedef double2 t; };

__device__ inline void sc_pi(float x, float *s, float *c) { sincospif(x, s, c); }
__device__ inline void sc_pi(double x, double *s, double *c) { sincospi(x, s, c); }

// Value j of line l in the work's lines of len values each.
__device__ inline int64_t wat(const tide_gpu_r2r &r, int64_t l, int64_t j, int64_t len)
{
    return r.inter ? j * r.lines + l : l * len + j;
}

// The passes walk rows along the array's fastest dimension, so that the index arithmetic
// (divisions, dear on a GPU) is done once per row, not once per value. With the lines
// interleaved a row is value j of the lines of one (field, a) and runs over (c, part); else it
// is one line and runs along it. Lines are numbered l = ((f e0 + a) e1 + c) parts + part.
__host__ __device__ inline int64_t rows_of(const tide_gpu_r2r &r, int64_t len)
{
    return r.inter ? r.lines / (r.e[1] * r.parts) * len : r.lines;
}

__host__ __device__ inline int64_t row_len(const tide_gpu_r2r &r, int64_t len)
{
    return r.inter ? r.e[1] * r.parts : len;
}

struct walk {
    int64_t l0, j0, s, d; // the row's first line and index, its first offsets in src and dst
};

// Row `row` of a pass over lines of len values (create checks that rows fit 32 bits).
__device__ inline walk row_at(const tide_gpu_r2r &r, uint32_t row, uint32_t len)
{
    uint32_t j = 0, q = row, c = 0, part = 0;
    if (r.inter) {
        j = row % len, q = row / len; // q = f e0 + a
    } else {
        part = row & (r.parts - 1), q = row >> (r.parts - 1);
        c = q % (uint32_t)r.e[1], q /= (uint32_t)r.e[1];
    }
    uint32_t a = q % (uint32_t)r.e[0], f = q / (uint32_t)r.e[0];
    walk w;
    w.l0 = r.inter ? (int64_t)q * r.e[1] * r.parts : (int64_t)row;
    w.j0 = j;
    w.s = r.sfield * f + r.ss[1] * a + r.ss[2] * c + part;
    w.d = r.dfield * f + r.ds[1] * a + r.ds[2] * c + part;
    return w;
}

// Value idx of a row: its line *l and index *j, and the scalar offsets of that line's value 0
// in src (*s) and dst (*d).
__device__ inline void row_value(const tide_gpu_r2r &r, const walk &w, int64_t idx, int64_t *l,
                                 int64_t *j, int64_t *s, int64_t *d)
{
    if (r.inter) {
        int64_t c = idx >> (r.parts - 1), part = idx & (r.parts - 1);
        *l = w.l0 + idx, *j = w.j0;
        *s = w.s + r.ss[2] * c + part, *d = w.d + r.ds[2] * c + part;
    } else {
        *l = w.l0, *j = idx, *s = w.s, *d = w.d;
    }
}

// The work's values from x: real ones into wr (A_REAL forward), else complex ones into wc.
template <typename T>
__global__ void gather(tide_gpu_r2r r, const T *x, T *wr, typename cpx<T>::t *wc)
{
    typedef typename cpx<T>::t C;
    int64_t n = r.n, len = r.alg == A_REAL && wr ? r.rlen : r.clen, st = r.ss[0];
    int64_t rows = rows_of(r, len), rl = row_len(r, len);
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        walk w = row_at(r, (uint32_t)row, (uint32_t)len);
        for (int64_t idx = threadIdx.x; idx < rl; idx += blockDim.x) {
            int64_t l, j, o, unused; // x's line at o, stride st
            row_value(r, w, idx, &l, &j, &o, &unused);
            T s, c;
            C z;
            switch (r.kind) {
            case TIDE_R2R_DCT2:
            case TIDE_R2R_DST2: { // v_j: x_{2j}, or x_{2(n-1-j)+1} in the upper part
                int64_t i = 2 * j < n ? 2 * j : 2 * (n - 1 - j) + 1;
                T v = x[o + st * i];
                wr[wat(r, l, j, len)] = r.kind == TIDE_R2R_DST2 && (i & 1) ? -v : v;
                continue;
            }
            case TIDE_R2R_DCT3:
            case TIDE_R2R_DST3: { // V_j = e^{i pi j / 2n} (x'_j - i x'_{n-j})
                int rev = r.kind == TIDE_R2R_DST3;
                T a = x[o + st * (rev ? n - 1 - j : j)];
                T b = j ? x[o + st * (rev ? j - 1 : n - j)] : (T)0;
                sc_pi((T)j / (T)(2 * n), &s, &c);
                z.x = a * c + b * s, z.y = a * s - b * c;
                break;
            }
            default:
                if (r.alg == A_HALF) { // u_j = (x'_{2j} + i x'_{n-1-2j}) e^{-i pi j / n}
                    int rev = r.kind == TIDE_R2R_DST4;
                    T a = x[o + st * (rev ? n - 1 - 2 * j : 2 * j)];
                    T b = x[o + st * (rev ? 2 * j : n - 1 - 2 * j)];
                    sc_pi((T)j / (T)n, &s, &c);
                    z.x = a * c + b * s, z.y = b * c - a * s;
                } else { // A_DOUBLE: z_j = x_j e^{-i pi j / 2n}, 0 above n
                    T v = j < n ? x[o + st * j] : (T)0;
                    sc_pi((T)j / (T)(2 * n), &s, &c);
                    z.x = v * c, z.y = -v * s;
                }
            }
            wc[wat(r, l, j, len)] = z;
        }
    }
}

// Each output value k of x from the transformed work (wr real, wc complex); src: A_NONE's
// input.
template <typename T>
__global__ void scatter(tide_gpu_r2r r, const T *wr, const typename cpx<T>::t *wc,
                        const T *src, T *x)
{
    typedef typename cpx<T>::t C;
    int64_t n = r.n, rows = rows_of(r, n), rl = row_len(r, n);
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        walk w = row_at(r, (uint32_t)row, (uint32_t)n);
        for (int64_t idx = threadIdx.x; idx < rl; idx += blockDim.x) {
            int64_t l, k, from, to; // src's line at from, x's at to
            row_value(r, w, idx, &l, &k, &from, &to);
            T v, s, c;
            if (r.alg == A_NONE) { // n = 1: II doubles, III keeps, IV scales by 2 cos(pi / 4)
                int two = r.kind == TIDE_R2R_DCT2 || r.kind == TIDE_R2R_DST2;
                int iv = r.kind >= TIDE_R2R_DCT4;
                v = src[from] * (two ? (T)2 : iv ? (T)1.4142135623730950488 : (T)1);
            } else if (r.kind == TIDE_R2R_DCT2 || r.kind == TIDE_R2R_DST2) {
                // 2 Re(e^{-i pi q / 2n} V_q)
                int64_t q = r.kind == TIDE_R2R_DST2 ? n - 1 - k : k, h = q <= n / 2 ? q : n - q;
                C y = wc[wat(r, l, h, r.clen)];
                if (h != q)
                    y.y = -y.y; // V_{n-q} conjugated
                sc_pi((T)q / (T)(2 * n), &s, &c);
                v = 2 * (y.x * c + y.y * s);
            } else if (r.kind == TIDE_R2R_DCT3 || r.kind == TIDE_R2R_DST3) {
                // X_2j = v_j, X_2j+1 = v_n-1-j
                v = wr[wat(r, l, k & 1 ? n - 1 - k / 2 : k / 2, r.rlen)];
                if (r.kind == TIDE_R2R_DST3 && (k & 1))
                    v = -v;
            } else if (r.alg == A_HALF) { // 2 Re c_p at 2p, -2 Im c_p at n-1-2p
                int64_t p = k & 1 ? (n - 1 - k) / 2 : k / 2;
                C y = wc[wat(r, l, p, r.clen)];
                sc_pi((T)(4 * p + 1) / (T)(4 * n), &s, &c);
                v = k & 1 ? -2 * (y.y * c - y.x * s) : 2 * (y.x * c + y.y * s);
                if (r.kind == TIDE_R2R_DST4 && (k & 1))
                    v = -v;
            } else { // A_DOUBLE
                C y = wc[wat(r, l, k, r.clen)];
                sc_pi((T)(2 * k + 1) / (T)(4 * n), &s, &c);
                v = r.kind == TIDE_R2R_DCT4 ? 2 * (y.x * c + y.y * s) : -2 * (y.y * c - y.x * s);
            }
            x[to + r.ds[0] * k] = v;
        }
    }
}

// A pass's launch: one block per row at a time, its threads along the row.
void shape(const tide_gpu_r2r *r, int64_t len, unsigned *blocks, unsigned *threads)
{
    int64_t rows = rows_of(*r, len), rl = row_len(*r, len);
    *blocks = (unsigned)(rows < (1 << 20) ? rows : 1 << 20);
    *threads = rl >= 128 ? 128 : (unsigned)((rl + 31) / 32 * 32);
}

template <typename T>
int run(const tide_gpu_r2r *r, const T *src, T *dst, cudaStream_t s)
{
    typedef typename cpx<T>::t C;
    T *wr = (T *)r->w;
    C *wc = (C *)((char *)r->w + r->rbytes);
    int forward = r->kind == TIDE_R2R_DCT2 || r->kind == TIDE_R2R_DST2;
    unsigned blocks, threads;
    cufftResult e = CUFFT_SUCCESS;
    if (r->alg != A_NONE) {
        shape(r, forward ? r->rlen : r->clen, &blocks, &threads);
        gather<T><<<blocks, threads, 0, s>>>(*r, src, forward ? wr : NULL, wc);
        if (r->alg == A_REAL && forward)
            e = r->dbl ? cufftExecD2Z(r->plan, (cufftDoubleReal *)wr, (cufftDoubleComplex *)wc)
                       : cufftExecR2C(r->plan, (cufftReal *)wr, (cufftComplex *)wc);
        else if (r->alg == A_REAL)
            e = r->dbl ? cufftExecZ2D(r->plan, (cufftDoubleComplex *)wc, (cufftDoubleReal *)wr)
                       : cufftExecC2R(r->plan, (cufftComplex *)wc, (cufftReal *)wr);
        else
            e = r->dbl ? cufftExecZ2Z(r->plan, (cufftDoubleComplex *)wc,
                                      (cufftDoubleComplex *)wc, CUFFT_FORWARD)
                       : cufftExecC2C(r->plan, (cufftComplex *)wc, (cufftComplex *)wc,
                                      CUFFT_FORWARD);
    }
    if (e != CUFFT_SUCCESS)
        return tide_gpu_note_error("cufftExec (cosine or sine transform)", tide_cufft_name(e),
                                   (int)e);
    shape(r, r->n, &blocks, &threads);
    scatter<T><<<blocks, threads, 0, s>>>(*r, wr, wc, src, dst);
    cudaError_t c = cudaGetLastError();
    return c == cudaSuccess ? 0
                            : tide_gpu_note_error("cosine or sine transform kernel",
                                                  cudaGetErrorString(c), (int)c);
}

// r's cuFFT plan over its work lines; returns cuFFT's status and its work size in *work.
cufftResult make_plan(tide_gpu_r2r *r, size_t *work)
{
    long long n = r->n, L = r->lines, rl = r->rlen, cl = r->clen;
    long long st = r->inter ? L : 1, rdist = r->inter ? 1 : rl, cdist = r->inter ? 1 : cl;
    cufftResult e = cufftCreate(&r->plan);
    if (e != CUFFT_SUCCESS)
        return e;
    r->planned = 1;
    e = cufftSetAutoAllocation(r->plan, 0);
    if (e != CUFFT_SUCCESS)
        return e;
    if (r->alg == A_REAL && (r->kind == TIDE_R2R_DCT2 || r->kind == TIDE_R2R_DST2))
        return cufftMakePlanMany64(r->plan, 1, &n, &rl, st, rdist, &cl, st, cdist,
                                   r->dbl ? CUFFT_D2Z : CUFFT_R2C, L, work);
    if (r->alg == A_REAL)
        return cufftMakePlanMany64(r->plan, 1, &n, &cl, st, cdist, &rl, st, rdist,
                                   r->dbl ? CUFFT_Z2D : CUFFT_C2R, L, work);
    return cufftMakePlanMany64(r->plan, 1, &cl, &cl, st, cdist, &cl, st, cdist,
                               r->dbl ? CUFFT_Z2Z : CUFFT_C2C, L, work);
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
    r->dbl = dbl, r->kind = kind;
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
    r->inter = ss[dim] != 1;
    int n = r->n, iv = kind == TIDE_R2R_DCT4 || kind == TIDE_R2R_DST4;
    r->alg = n <= 1 ? A_NONE : !iv ? A_REAL : n % 2 == 0 && n >= 4 ? A_HALF : A_DOUBLE;
    r->rlen = r->alg == A_REAL ? n : 0;
    r->clen = r->alg == A_REAL ? n / 2 + 1 : r->alg == A_HALF ? n / 2 : 2 * n;
    int64_t longest = r->clen > n ? r->clen : n;
    if (r->lines && rows_of(*r, longest) >= (int64_t)1 << 32) {
        snprintf(why, len, "a cosine or sine transform of more than 2^32 rows of lines");
        tide_gpu_r2r_destroy(r);
        return TIDE_ERR_UNSUPPORTED;
    }
    size_t scalar = dbl ? sizeof(double) : sizeof(float);
    r->rbytes = ((size_t)r->lines * (size_t)r->rlen * scalar + 255) / 256 * 256;
    r->cbytes = ((size_t)r->lines * (size_t)r->clen * 2 * scalar + 255) / 256 * 256;
    size_t work = 0;
    cufftResult e = r->alg == A_NONE || r->lines == 0 ? CUFFT_SUCCESS : make_plan(r, &work);
    if (e != CUFFT_SUCCESS) {
        snprintf(why, len, "cuFFT could not plan the transforms of a cosine or sine transform "
                 "of length %d: %s (%d)", n, tide_cufft_name(e), (int)e);
        tide_gpu_r2r_destroy(r);
        return e == CUFFT_ALLOC_FAILED ? TIDE_ERR_NOMEM : TIDE_ERR_BACKEND;
    }
    *work_bytes = r->alg == A_NONE ? 0 : r->rbytes + r->cbytes + work;
    *out = r;
    return 0;
}

extern "C" int tide_gpu_r2r_bind(tide_gpu_r2r *r, void *work, void *stream)
{
    r->w = work;
    if (!r->planned)
        return 0;
    cufftResult e = cufftSetWorkArea(r->plan, (char *)work + r->rbytes + r->cbytes);
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
    return r->dbl ? run<double>(r, (const double *)src, (double *)dst, s)
                  : run<float>(r, (const float *)src, (float *)dst, s);
}

extern "C" void tide_gpu_r2r_destroy(tide_gpu_r2r *r)
{
    if (!r)
        return;
    if (r->planned)
        cufftDestroy(r->plan);
    free(r);
}
