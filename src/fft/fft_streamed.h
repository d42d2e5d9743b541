/*
 * fft_streamed.h: 3D C2C and R2C FFTs of host arrays streamed through the GPU (private; see
 * fft_streamed.c): the FFT's passes and ops for the pass runner (plan/streamed.h).
 */
#ifndef TIDE_FFT_STREAMED_H
#define TIDE_FFT_STREAMED_H

#include "plan/streamed.h"

typedef struct {
    int n[3];          /* the input grid (real for r2c) */
    int dbl, r2c, batch;
    int transposed;    /* the output (forward) is in y-slabs */
    double scale[2];   /* forward, backward */
    size_t budget;
    int resident;      /* the data may stay on the device between the passes */
} tide_fft_streamed_desc;

/* Local: the streamed transform of env's ranks (env: the CUDA backend, nccl or NULL). Ranks
 * hold x-slabs (tide_box_slab along 0, C order) of the input, x-slabs or (transposed) y-slabs
 * of the output; P <= n[0], n[1]. Returns 0 or a code with the reason in err. */
int tide_fft_streamed_create(const tide_env *env, const tide_fft_streamed_desc *d,
                           tide_streamed **out, char *err, size_t len);

#endif
