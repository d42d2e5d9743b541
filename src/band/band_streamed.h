/*
 * band_streamed.h: a band plan's passes out of card (private): host x and the host matrix
 * sent through the backend's memory in slabs of rows on the out-of-card runner (plan/runner.h),
 * Jin 2014's slab-and-border scheme (chapter 6) for a band matrix. Its n rows are the whole
 * matrix on one rank; on several a rank's grown rows, whose ends it takes for the matrix's
 * (band_run.c: the halo is deep enough that the rows this makes wrong are not the rank's).
 *
 * A pass of s steps visits the slabs [i R, (i + 1) R) in order, three at once on a GPU (one
 * uploading, one computing, one downloading). Slab i uploads its rows of x (level 0) and of
 * A; level l (1 .. s) then computes the rows from where the slab before left it to (i + 1) R -
 * l ku (each level lags the one below by ku rows: the rows it needs above are not there yet),
 * the last slab up to n; the rows level s finished go down into x in place (every row of x
 * they cover was uploaded already). The kl + ku rows a level needs from the slab before stay
 * on the device (a resident band a level), so no row of x goes up twice and no step is
 * computed twice; A's rows that two slabs need go up with each. Each level is one backend pass
 * of one step.
 */
#ifndef TIDE_BAND_STREAMED_H
#define TIDE_BAND_STREAMED_H

#include "backend/backend.h"

typedef struct tide_band_streamed tide_band_streamed;

/* What a streamed pass works with: the matrix (n rows, kl and ku, host memory, diagonal-major
 * with stride n, kept by the caller while the passes run), the most steps per pass k, slab
 * rows R (at least 1) and the backend pass b (made by band_create for k steps; its geometry
 * is set per level). */
typedef struct {
    int n, kl, ku, k, slab, dbl;
    const void *matrix;
} tide_band_streamed_desc;

/* Local: the runner and its buffers. Returns 0 or a code with the reason in err. */
int tide_band_streamed_create(const tide_env *e, const tide_band_streamed_desc *d,
                              const tide_band_pass *b, tide_band_streamed **out, char *err,
                              size_t len);
void tide_band_streamed_destroy(const tide_env *e, tide_band_streamed *s);

/* The most rows a slab of d (its slab ignored) may have for the passes to hold at most budget
 * bytes, at most d's n; 0 where not one row fits. */
int tide_band_streamed_rows(const tide_band_streamed_desc *d, size_t budget);
/* Bytes of the backend's memory and of pinned host memory s holds. */
void tide_band_streamed_memory(const tide_band_streamed *s, size_t *device, size_t *pinned);

/* The slabs of one pass: x (host memory, n rows) <- A^steps x in place, steps 1 .. k.
 * Returns 0 or the backend's failure. */
int tide_band_streamed_pass(const tide_env *e, tide_band_streamed *s, void *x, int steps);

/* The slabs a pass visits. */
int tide_band_streamed_slabs(const tide_band_streamed *s);

#endif
