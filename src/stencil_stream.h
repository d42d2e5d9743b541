/*
 * stencil_stream.h: stencil time steps on a host grid larger than the GPU (private).
 *
 * The grid is cut into slabs along its slowest storage dimension. A pass of K steps sends
 * every slab through the GPU once, in order, on the out-of-card pipeline engine
 * (gpu/pipeline.h): the slab's own planes and K r planes on each side go up, K steps are swept
 * on the device (in sweeps of up to the kernels' fused count), and the own planes come back
 * into the host grid in place. This is the slab scheme of Jin 2014 (1D-TBM) with each slab
 * grown by its K r ghost planes, whose K steps are computed again on the device (a sweep of K
 * steps spoils K r planes inward from a face that is not the grid's, so the own planes are
 * right); the own planes are the same values computed in the same order as in card, bitwise.
 *
 * No point is read from the host after another slab has written it: the planes below a
 * slab, already written back by the slab before, come from a resident device buffer that slab
 * filled; a periodic grid's first planes, which the last slab reads above it, likewise. The
 * job is ordered (slab i's work after slab i-1's), so uploads overlap the sweeps and the
 * downloads in both directions at once.
 */
#ifndef TIDE_STENCIL_STREAM_H
#define TIDE_STENCIL_STREAM_H

#include "backend.h"

typedef struct {
    const tide_env *env;      /* the plan's (CUDA backend); runs follow work on its stream */
    const tide_sweep *sweep;  /* the whole grid's (storage order), its state created: every
                               * slab's sweeps use it */
    tide_box box;             /* the host grid u and the source are laid out as */
    int source;               /* a source is added: its planes go up with each slab */
    size_t budget;            /* device bytes the pipeline may hold */
    int fuse;                 /* steps per pass (K, at least 1); 0: the model's choice */
    tide_rates pcie;          /* the rank's measured transfer rates (the model's) */
} tide_stencil_stream_desc;

typedef struct tide_stencil_stream tide_stencil_stream;

/* Local: times the sweeps on a few slab-sized planes, chooses K (desc fuse, else the model in
 * stencil_stream.c) and the slab thickness the budget allows, and makes the pipeline.
 * Returns 0 or a code with the reason in err. */
int tide_stencil_stream_create(const tide_stencil_stream_desc *d, tide_stencil_stream **out,
                               char *err, size_t len);
void tide_stencil_stream_destroy(tide_stencil_stream *s);

/* One pass: `steps` (1 .. K) steps on host grid u in place, source (a host array laid out
 * like u, or NULL when the plan has none) added at each. Complete on return. Returns 0 or a
 * code with the reason in err; after a failure u holds a partial result. */
int tide_stencil_stream_pass(tide_stencil_stream *s, void *u, const void *source, int steps,
                             char *err, size_t len);

typedef struct {
    int fuse;                 /* K: steps per pass */
    int sweep_fuse;           /* steps per sweep on the device (K's are done in sweeps of
                               * this many, the last fewer) */
    int slabs;                /* per pass */
    int planes;               /* own planes of the thickest slab */
    size_t device_bytes, pinned_bytes;
    double model_rate;        /* cell steps per second the model expects */
} tide_stencil_stream_shape;

void tide_stencil_stream_shape_of(const tide_stencil_stream *s, tide_stencil_stream_shape *sh);

/* Seconds one sweep of k steps takes on the grid of s from src to dst (the backend's memory):
 * the mean of three after a warm-up; INFINITY with the failure in *st (stencil.c). */
double tide_stencil_time_sweep(const tide_env *e, const tide_sweep *s, const void *src,
                               void *dst, int k, int *st);

#endif
