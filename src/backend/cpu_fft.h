/*
 * cpu_fft.h: the CPU backend's local transforms: FFTW guru plans of one, two or three
 * dimensions of a box, batched over the box's other dimensions and over fields, with whatever
 * strides the box's storage order gives (private).
 */
#ifndef TIDE_CPU_FFT_H
#define TIDE_CPU_FFT_H

#include "tide.h"

/* R2R: every transformed dimension real-to-real (r2r[]), on real elements or, with
 * complex_elems, on the real and imaginary parts of complex ones. */
typedef enum { TIDE_KIND_C2C, TIDE_KIND_R2C, TIDE_KIND_C2R, TIDE_KIND_R2R } tide_fft_kind;

/* Real-to-real transforms of a bounded dimension (FFTW's REDFT and RODFT kinds, unnormalized:
 * a transform and its inverse multiply by 2 n): DCT-II and DCT-III (REDFT10, REDFT01), DST-II
 * and DST-III (RODFT10, RODFT01), DCT-IV and DST-IV (REDFT11, RODFT11; their own inverses). */
typedef enum {
    TIDE_R2R_NONE,
    TIDE_R2R_DCT2,
    TIDE_R2R_DCT3,
    TIDE_R2R_DST2,
    TIDE_R2R_DST3,
    TIDE_R2R_DCT4,
    TIDE_R2R_DST4
} tide_r2r_kind;

/* The inverse of kind k (up to the factor 2 n). */
tide_r2r_kind tide_r2r_inverse(tide_r2r_kind k);

typedef struct tide_cpu_fft tide_cpu_fft;

typedef struct {
    tide_precision precision;
    tide_fft_kind kind;
    int sign;               /* -1 forward, +1 backward (C2C only; R2C is -1, C2R +1) */
    const tide_box *ibox;   /* the points transformed, on the input grid (real for R2C) */
    const tide_box *obox;   /* the same points on the output grid (real for C2R) */
    const tide_box *iarr;   /* layouts of the input and output arrays, of which ibox and obox */
    const tide_box *oarr;   /* are parts (NULL: ibox, obox); in and out point at the parts'
                             * first points. Strides and field distances are the arrays'. */
    int dims[3], ndims;     /* transformed dimensions, ascending */
    int r2r[3];             /* per dimension of the grid: the real-to-real transform along it
                             * (tide_r2r_kind; NONE: a DFT, or not transformed). In a C2C, R2C
                             * or C2R transform those dimensions are transformed in place on
                             * the complex side (after the DFT, before it for C2R) */
    int complex_elems;      /* R2R: the elements are complex */
    int half;               /* R2C/C2R: the dimension halved, n -> n / 2 + 1 complex points;
                             * it must be the fastest of the transformed dimensions in the
                             * storage order */
    int real_n;             /* R2C/C2R: its real length */
    int batch;
    int measure;            /* FFTW_MEASURE instead of FFTW_ESTIMATE */
    int threads;
    int user_memory;        /* also plan an unaligned variant: in or out may be a user array */
    int by_planes;          /* one transformed dimension, no real-to-real one, one field:
                             * transform the planes of dimension plane_dim one at a time, in
                             * parallel over `threads` threads, each plane staged transposed
                             * in a buffer of its thread so that its lines are contiguous
                             * there (a plan measured for one thread): where the transformed
                             * dimension is strided far apart in memory, FFTW's plan over the
                             * whole box reads its lines a cache line per element. The plan is
                             * made on the thread buffers: in, out and user_memory unused */
    int plane_dim;
    void *in, *out;         /* arrays to plan with (overwritten when measuring); in == out plans
                             * an in-place transform */
    /* A forward C2C or an R2C: a diagonal spectral operator (backend.h, its tables in the
     * backend's memory) that the backend may apply to the output as the transform stores it,
     * in the same pass, or NULL. The caller zeroes *fused; a backend that does it sets it to
     * 1 (the GPU, through cuFFT's store callbacks; FFTW has none). */
    const struct tide_spectral *then;
    int *fused;
    /* The GPU: 1 asks for Tide's plane pass where it takes the transform (gpu/fft.h), which
     * then sets *plane to 1 (where not NULL); the CPU ignores both. */
    int engine;
    int *plane;
} tide_cpu_fft_desc;

/* Returns 0, TIDE_ERR_BACKEND (FFTW returned no plan) or TIDE_ERR_NOMEM. */
int tide_cpu_fft_create(const tide_cpu_fft_desc *d, tide_cpu_fft **out);
void tide_cpu_fft_destroy(tide_cpu_fft *f);
/* Run on new arrays (same in-placeness as planned). */
void tide_cpu_fft_execute(const tide_cpu_fft *f, void *in, void *out);

#endif
