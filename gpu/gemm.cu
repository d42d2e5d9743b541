// gemm.cu: matrix multiplies of device matrices with cuBLAS (see gpu.h). One handle per plan;
// each call names its stream, so the slots of an out-of-card multiply share the handle (their
// multiplies are ordered one after another, never concurrent).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include "gpu.h"
extern "C" {
#include "backend.h"
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

cublasOperation_t op(int trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }

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
int scale_only(cublasHandle_t h, const tide_gemm_desc *d, double beta, void *c,
               cudaStream_t stream)
{
    size_t elem = d->dbl ? sizeof(double) : sizeof(float);
    int m = (int)d->m, n = (int)d->n, ldc = (int)d->ldc;
    if (beta == 0) {
        cudaError_t e = cudaMemset2DAsync(c, elem * (size_t)ldc, 0, elem * (size_t)m,
                                          (size_t)n, stream);
        return e == cudaSuccess ? 0 : tide_gpu_note_error("cudaMemset2DAsync",
                                                          cudaGetErrorString(e), (int)e);
    }
    double zero = 0;
    float fb = (float)beta, fzero = 0;
    if (d->dbl)
        return check(cublasDgeam(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, &beta, (double *)c, ldc,
                                 &zero, (double *)c, ldc, (double *)c, ldc), "cublasDgeam");
    return check(cublasSgeam(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, &fb, (float *)c, ldc, &fzero,
                             (float *)c, ldc, (float *)c, ldc), "cublasSgeam");
}

} // namespace

extern "C" int tide_gpu_gemm(void *handle, const tide_gemm_desc *d, double alpha, const void *a,
                             const void *b, double beta, void *c, void *stream)
{
    cublasHandle_t h = (cublasHandle_t)handle;
    int st = check(cublasSetStream(h, (cudaStream_t)stream), "cublasSetStream");
    if (st || d->m == 0 || d->n == 0)
        return st;
    if (d->k == 0)
        return scale_only(h, d, beta, c, (cudaStream_t)stream);
    // cuBLAS takes int sizes; the plan keeps every dimension within INT_MAX.
    int m = (int)d->m, n = (int)d->n, k = (int)d->k;
    int lda = (int)d->lda, ldb = (int)d->ldb, ldc = (int)d->ldc;
    if (d->dbl)
        return check(cublasDgemm(h, op(d->transa), op(d->transb), m, n, k, &alpha,
                                 (const double *)a, lda, (const double *)b, ldb, &beta,
                                 (double *)c, ldc), "cublasDgemm");
    float fa = (float)alpha, fb = (float)beta;
    return check(cublasSgemm(h, op(d->transa), op(d->transb), m, n, k, &fa, (const float *)a,
                             lda, (const float *)b, ldb, &fb, (float *)c, ldc), "cublasSgemm");
}
