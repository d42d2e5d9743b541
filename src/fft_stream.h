/*
 * fft_stream.h: 3D C2C and R2C FFTs of host arrays streamed through the GPU (private; see
 * fft_stream.c): the FFT's passes and ops for the pass runner (stream.h).
 */
#ifndef TIDE_FFT_STREAM_H
#define TIDE_FFT_STREAM_H

#include "stream.h"

typedef struct {
    int n[3];          /* the input grid (real for r2c) */
    int dbl, r2c, batch;
    int transposed;    /* the output (forward) is in y-slabs */
    double scale[2];   /* forward, backward */
    size_t budget;
    int resident;      /* the data may stay on the device between the passes */
} tide_fft_stream_desc;

/* Local: the streamed transform of env's ranks (env: the CUDA backend, nccl or NULL). Ranks
 * hold x-slabs (tide_box_slab along 0, C order) of the input, x-slabs or (transposed) y-slabs
 * of the output; P <= n[0], n[1]. Returns 0 or a code with the reason in err. */
int tide_fft_stream_create(const tide_env *env, const tide_fft_stream_desc *d,
                           tide_stream **out, char *err, size_t len);

#endif
