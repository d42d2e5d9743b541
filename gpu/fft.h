/*
 * fft.h: local transforms with cuFFT (gpu/fft.cu; private, C linkage, no CUDA types): one, two
 * or three dimensions of a box, batched over its other dimensions and over fields, with the
 * strides the box's storage order gives.
 */
#ifndef TIDE_GPU_FFT_H
#define TIDE_GPU_FFT_H

#include <stddef.h>
#include "tide.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Input and output boxes have the same storage order (same points; dimension 2 real for the
 * real side of R2C/C2R). Where the untransformed dimensions cannot be expressed as one cuFFT
 * batch, the plan loops over the outermost of them. Work areas are not allocated by cuFFT: the
 * caller gives one of at least work_bytes (shared by every transform of a plan). */
struct tide_spectral;
typedef struct {
    int dbl;                /* double precision */
    int kind;               /* 0 c2c, 1 r2c, 2 c2r, 3 real-to-real only (tide_fft_kind) */
    int sign;               /* -1 forward, +1 backward (c2c) */
    const tide_box *ibox, *obox;
    const tide_box *iarr, *oarr; /* the arrays' layouts, of which ibox and obox are parts
                                  * (NULL: the boxes themselves): tide_cpu_fft_desc's */
    int dims[3], ndims;     /* transformed dimensions, ascending */
    int half, real_n;       /* r2c/c2r: the halved dimension and its real length */
    int batch;              /* fields, count(box) elements apart */
    int r2r[3];             /* tide_cpu_fft_desc's: per dimension a real-to-real kind, done by
                             * tide_gpu_r2r passes (gpu/r2r.h; kind 3: only those) */
    int complex_elems;      /* kind 3: the elements are complex */
    /* A forward c2c or an r2c: the diagonal spectral operator (backend.h's tide_spectral, in
     * device memory) to apply to the output as cuFFT stores it (a store callback, linked in
     * when the plan is made), or NULL. *fused says whether the plan does: only for double
     * data (fft_callbacks.h says why), one batch over a dense output laid out as then->box,
     * complex, without mean weights, and where cuFFT takes the callback. */
    const struct tide_spectral *then;
    int *fused;
    /* 1: the transform of the two fastest dimensions by Tide's plane pass (fft_plane.h) where
     * it takes it (c2c, one field, no real-to-real dimension, no then, planes dense in both
     * arrays, sizes it supports), a third transformed dimension then in place on the output
     * by Tide's strided pass where it takes it (fft_plane.h), else by cuFFT; of an r2c or c2r
     * (one field, no real-to-real dimension, no then) the two fastest dimensions by the real
     * plane pass where it takes them (the halved dimension the fastest, planes dense in both
     * arrays, at most 512 rows in float), a third then in place on the complex side (after
     * the planes for r2c, before them for c2r) by the strided pass where it takes it, else by
     * cuFFT; a 1D transform
     * of the boxes' slowest dimension by the strided pass where it takes the lines; and of a
     * 3D r2c or c2r whose planes the real plane pass does not take, the slowest dimension by
     * the strided pass in place on the complex side where it takes those lines, the planes'
     * 2D real transforms by cuFFT (after it for c2r, before it for r2c). *plane
     * (where not NULL) gets bit 1 where the plane pass runs, bit 2 where the strided pass
     * does, and is left alone elsewhere. */
    int engine;
    int *plane;
} tide_gpu_fft_desc;

typedef struct tide_gpu_fft tide_gpu_fft;
/* Returns 0, TIDE_ERR_UNSUPPORTED (a layout cuFFT cannot take: for r2c/c2r dimension 2 must
 * be the fastest transformed dimension) or TIDE_ERR_BACKEND, with the reason in why. */
int tide_gpu_fft_create(const tide_gpu_fft_desc *d, tide_gpu_fft **out, size_t *work_bytes,
                        char *why, size_t len);
/* Attach the work area and the stream (a cudaStream_t) the transforms run on. */
int tide_gpu_fft_bind(tide_gpu_fft *f, void *work, void *stream);
/* Enqueue the transform of in into out (in == out: in place). */
int tide_gpu_fft_execute(const tide_gpu_fft *f, void *in, void *out);
/* A c2r whose first pass can write elsewhere (the strided pass of its slowest dimension, or a
 * real plane pass that has no slowest dimension to do) from in into out, that pass writing
 * stage (in's size and layout), in left as it is; TIDE_ERR_UNSUPPORTED, nothing enqueued,
 * for any other transform. */
int tide_gpu_fft_execute_staged(const tide_gpu_fft *f, const void *in, void *stage, void *out);
void tide_gpu_fft_destroy(tide_gpu_fft *f);

/* cuFFT's status r in words. */
const char *tide_cufft_name(int r);

#ifdef __cplusplus
}
#endif
#endif
