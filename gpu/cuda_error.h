// cuda_error.h: a failed CUDA runtime call recorded for tide_gpu_last_error (backend/device.h),
// for the .cu files only (it names a CUDA type; gpu/device.cu defines it).
#ifndef TIDE_GPU_CUDA_ERROR_H
#define TIDE_GPU_CUDA_ERROR_H

#include <cuda_runtime.h>
#include "tide.h"

// Records "what: <CUDA's message> (CUDA error N)", clears CUDA's sticky last error, and
// returns code.
int tide_cuda_fail(cudaError_t e, const char *what, int code = TIDE_ERR_BACKEND);

#endif
