/*
 * stencil_span.h: the CPU's inner loop of a stencil update (private; stencil_span.c). A span
 * is columns [a, e) of `rows` output rows whose taps all lie in their input rows: p[i] is tap
 * i's input row for the first output row, offset by the tap's column shift, w[i] its weight,
 * src the source's first row or NULL, out the first output row; the rows after the first lie
 * pin, psrc and pout elements on from the one before in the inputs, the source and out. A
 * span of the class form (backend.h) takes the 27 rows in user order, p[9 (a + 1) + 3 (b + 1)
 * + c + 1] that of u(a, b, c), and w = {centre, face, edge, corner}; it ignores nt.
 */
#ifndef TIDE_STENCIL_SPAN_H
#define TIDE_STENCIL_SPAN_H

#include <stddef.h>

typedef void tide_stencil_span_f(int nt, const float *const *p, const float *w,
                                 const float *src, float *out, int a, int e, int rows,
                                 ptrdiff_t pin, ptrdiff_t psrc, ptrdiff_t pout);
typedef void tide_stencil_span_d(int nt, const double *const *p, const double *w,
                                 const double *src, double *out, int a, int e, int rows,
                                 ptrdiff_t pin, ptrdiff_t psrc, ptrdiff_t pout);

/* The fastest spans of the tap form (classes 0) or the class form this CPU runs (AVX-512, else
 * AVX2 and FMA, else point by point), the same results. */
void tide_stencil_spans(int classes, tide_stencil_span_f **f, tide_stencil_span_d **d);

#endif
