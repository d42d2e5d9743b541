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

/* The spans of the star of radius R = 1 .. 4 where this CPU runs them faster than the tap
 * form's (AVX-512), else NULL: a span's arguments for 6 R + 1 taps whose slots 6k - 5 .. 6k - 2
 * (k = 1 .. R) read rows at their own columns (p[i] the row itself), slots 6k - 1 and 6k the
 * columns c - k and c + k of slot 0's row (p[6k - 1] = p[0] - k, p[6k] = p[0] + k), and a
 * region to prefetch into the L2 for a later span (pf, or NULL: none), pfb bytes a row: row y's
 * share from pf + y pfb on, so that memory traffic overlaps the span's work. The same results
 * as the tap form's spans; with stream, their stores of whole aligned vectors go around the
 * caches (non-temporal, for rows nothing reads soon). */
typedef void tide_stencil_star_f(const float *const *p, const float *w, const float *src,
                                 float *out, int a, int e, int rows, ptrdiff_t pin,
                                 ptrdiff_t psrc, ptrdiff_t pout, const char *pf, size_t pfb);
typedef void tide_stencil_star_d(const double *const *p, const double *w, const double *src,
                                 double *out, int a, int e, int rows, ptrdiff_t pin,
                                 ptrdiff_t psrc, ptrdiff_t pout, const char *pf, size_t pfb);
void tide_stencil_star_spans(int radius, int stream, tide_stencil_star_f **f,
                             tide_stencil_star_d **d);

/* The spans of the box of radius R = 1 .. 4 in lexicographic tap order where this CPU runs
 * them faster than the tap form's (AVX-512), else NULL: a span's arguments for (2 R + 1)^3
 * taps, tap (dx, dy, dz) (offsets + R, plane, row and column) in slot (dx (2 R + 1) + dy)
 * (2 R + 1) + dz; the same results as the tap form's. */
void tide_stencil_box_spans(int radius, tide_stencil_span_f **f, tide_stencil_span_d **d);

/* The class form's plane pass (backend.h) along one row, for the CPU sweep that shares each
 * plane's sums among the three planes that read them. r[0], r[1], r[2]: rows b - 1, b, b + 1 of
 * plane p of the level below (the user's y along the rows and z along the columns, or with swap
 * the other way round); w = {centre, face, edge, corner}; S, P, out, src: rows b of the
 * level's S and P rows (P = S(p - 2) + M(p - 1) before, S = S(p - 1)), of the output plane
 * p - 1 and of the source (or NULL); all indexed by column. At each column c of [a, e): plane
 * p's S and M; mode 0: S = S(p); mode 1: P = S + M(p), then S = S(p); mode 2 also first out
 * = P + S(p) (+ src), the update of plane p - 1 in the documented order. The columns' own
 * neighbours lie within [0, n2): the fast pass needs [a, e) within [1, n2 - 1), the point by
 * point pass (f1, d1) takes any columns, their neighbours modulo n2. */
typedef void tide_stencil_plane_f(const float *const *r, const float *w, float *S, float *P,
                                  float *out, const float *src, int a, int e, int n2, int swap,
                                  int mode);
typedef void tide_stencil_plane_d(const double *const *r, const double *w, double *S,
                                  double *P, double *out, const double *src, int a, int e,
                                  int n2, int swap, int mode);

/* The fastest plane passes this CPU runs (f, d) and the point by point ones (f1, d1). */
void tide_stencil_planes(tide_stencil_plane_f **f, tide_stencil_plane_d **d,
                         tide_stencil_plane_f **f1, tide_stencil_plane_d **d1);

#endif
