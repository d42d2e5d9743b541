// gemm.cu: matrix multiplies of device matrices with cuBLAS (see gpu/gemm.h). One handle per plan;
// each call names its stream, so the slots of an out-of-card multiply share the handle (their
// multiplies are ordered one after another, never concurrent).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include "backend/device.h"
#include "gpu/gemm.h"
extern "C" {
#include "backend/backend.h"
}

namespace {

const char *cublas_name(cublasStatus_t r)
{
    switch (r) {
    case CUBLAS_STATUS_NOT_INITIALIZED: return "not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "invalid value";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "architecture mismatch";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "execution failed";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "internal error";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "not supported";
    default: return "failure";
    }
}

int check(cublasStatus_t r, const char *call)
{
    return r == CUBLAS_STATUS_SUCCESS ? 0 : tide_gpu_note_error(call, cublas_name(r), (int)r);
}

cublasOperation_t op(int trans)
{
    return trans == TIDE_CONJTRANS ? CUBLAS_OP_C : trans ? CUBLAS_OP_T : CUBLAS_OP_N;
}

extern "C" int tide_gpu_gemm_create(void **handle)
{
    cublasHandle_t h;
    *handle = nullptr;
    int st = check(cublasCreate(&h), "cublasCreate");
    if (!st)
        *handle = h;
    return st;
}

extern "C" void tide_gpu_gemm_destroy(void *handle)
{
    if (handle)
        cublasDestroy((cublasHandle_t)handle);
}

// C = beta C of a multiply with k = 0, which the BLAS defines (C zeroed without being read
// when beta = 0) and cuBLAS's GEMM does not promise: a 2D memset, or an in-place geam.
int scale_only(cublasHandle_t h, const tide_gemm_desc *d, tide_scalar beta, void *c,
               cudaStream_t stream)
{
    size_t elem = tide_gemm_elem(d);
    int m = (int)d->m, n = (int)d->n, ldc = (int)d->ldc;
    if (tide_scalar_is_zero(beta)) {
        cudaError_t e = cudaMemset2DAsync(c, elem * (size_t)ldc, 0, elem * (size_t)m,
                                          (size_t)n, stream);
        return e == cudaSuccess ? 0 : tide_gpu_note_error("cudaMemset2DAsync",
                                                          cudaGetErrorString(e), (int)e);
    }
    cublasOperation_t N = CUBLAS_OP_N;
    if (d->cplx && d->dbl) {
        cuDoubleComplex b = make_cuDoubleComplex(beta.re, beta.im), zero = {0, 0};
        auto *z = (cuDoubleComplex *)c;
        return check(cublasZgeam(h, N, N, m, n, &b, z, ldc, &zero, z, ldc, z, ldc),
                     "cublasZgeam");
    }
    if (d->cplx) {
        cuComplex b = make_cuComplex((float)beta.re, (float)beta.im), zero = {0, 0};
        auto *z = (cuComplex *)c;
        return check(cublasCgeam(h, N, N, m, n, &b, z, ldc, &zero, z, ldc, z, ldc),
                     "cublasCgeam");
    }
    if (d->dbl) {
        double b = beta.re, zero = 0;
        auto *z = (double *)c;
        return check(cublasDgeam(h, N, N, m, n, &b, z, ldc, &zero, z, ldc, z, ldc),
                     "cublasDgeam");
    }
    float b = (float)beta.re, zero = 0;
    auto *z = (float *)c;
    return check(cublasSgeam(h, N, N, m, n, &b, z, ldc, &zero, z, ldc, z, ldc), "cublasSgeam");
}

} // namespace

extern "C" int tide_gpu_gemm(void *handle, const tide_gemm_desc *d, const tide_scalar *pa,
                             const void *a, const void *b, const tide_scalar *pb, void *c,
                             void *stream)
{
    tide_scalar alpha = *pa, beta = *pb;
    cublasHandle_t h = (cublasHandle_t)handle;
    int st = check(cublasSetStream(h, (cudaStream_t)stream), "cublasSetStream");
    if (st || d->m == 0 || d->n == 0)
        return st;
    if (d->k == 0)
        return scale_only(h, d, beta, c, (cudaStream_t)stream);
    // cuBLAS takes int sizes; the plan keeps every dimension within INT_MAX.
    int m = (int)d->m, n = (int)d->n, k = (int)d->k;
    int lda = (int)d->lda, ldb = (int)d->ldb, ldc = (int)d->ldc;
    cublasOperation_t ta = op(d->transa), tb = op(d->transb);
    if (d->cplx && d->dbl) {
        cuDoubleComplex za = make_cuDoubleComplex(alpha.re, alpha.im),
                        zb = make_cuDoubleComplex(beta.re, beta.im);
        return check(cublasZgemm(h, ta, tb, m, n, k, &za, (const cuDoubleComplex *)a, lda,
                                 (const cuDoubleComplex *)b, ldb, &zb, (cuDoubleComplex *)c,
                                 ldc), "cublasZgemm");
    }
    if (d->cplx) {
        cuComplex ca = make_cuComplex((float)alpha.re, (float)alpha.im),
                  cb = make_cuComplex((float)beta.re, (float)beta.im);
        return check(cublasCgemm(h, ta, tb, m, n, k, &ca, (const cuComplex *)a, lda,
                                 (const cuComplex *)b, ldb, &cb, (cuComplex *)c, ldc),
                     "cublasCgemm");
    }
    if (d->dbl)
        return check(cublasDgemm(h, ta, tb, m, n, k, &alpha.re, (const double *)a, lda,
                                 (const double *)b, ldb, &beta.re, (double *)c, ldc),
                     "cublasDgemm");
    float fa = (float)alpha.re, fb = (float)beta.re;
    return check(cublasSgemm(h, ta, tb, m, n, k, &fa, (const float *)a, lda, (const float *)b,
                             ldb, &fb, (float *)c, ldc), "cublasSgemm");
}
