/*
 * cpu_fft.h: the CPU backend's local transforms: FFTW guru plans of one, two or three
 * dimensions of a box, batched over the box's other dimensions and over fields, with whatever
 * strides the box's storage order gives (private).
 */
#ifndef TIDE_CPU_FFT_H
#define TIDE_CPU_FFT_H

#include "tide.h"

typedef enum { TIDE_KIND_C2C, TIDE_KIND_R2C, TIDE_KIND_C2R } tide_fft_kind;

typedef struct tide_cpu_fft tide_cpu_fft;

typedef struct {
    tide_precision precision;
    tide_fft_kind kind;
    int sign;               /* -1 forward, +1 backward (C2C only; R2C is -1, C2R +1) */
    const tide_box *ibox;   /* input layout (real box for R2C) */
    const tide_box *obox;   /* output layout (real box for C2R); same points, other grid */
    int dims[3], ndims;     /* transformed dimensions, ascending (dimension 2 last for R2C/C2R) */
    int nz_real;            /* real length of dimension 2 (R2C/C2R) */
    int batch;
    int measure;            /* FFTW_MEASURE instead of FFTW_ESTIMATE */
    int threads;
    int user_memory;        /* also plan an unaligned variant: in or out may be a user array */
    void *in, *out;         /* arrays to plan with (overwritten when measuring); in == out plans
                             * an in-place transform */
} tide_cpu_fft_desc;

/* Returns 0, TIDE_ERR_BACKEND (FFTW returned no plan) or TIDE_ERR_NOMEM. */
int tide_cpu_fft_create(const tide_cpu_fft_desc *d, tide_cpu_fft **out);
void tide_cpu_fft_destroy(tide_cpu_fft *f);
/* Run on new arrays (same in-placeness as planned). */
void tide_cpu_fft_execute(const tide_cpu_fft *f, void *in, void *out);

#endif
