/*
 * stencil_streamed.h: stencil time steps on a host grid larger than the GPU (private).
 *
 * The grid is cut into slabs along its slowest storage dimension. A pass of K steps sends
 * every slab through the GPU once, in order, on the out-of-card runner
 * (plan/runner.h): the slab's planes go up, K / F levels of F steps each are computed on
 * the device one after another (one fused sweep a level), each lagging the one before by F r
 * planes, and the finished planes come back into the host grid in place. The 2 F r planes of
 * every intermediate level that the next slab needs stay on the device between slabs (Jin
 * 2014's 1D-TBM with buffer copy): no plane crosses PCIe twice, only a level's sweep
 * recomputes points (its inner steps near the window's faces), and every point is computed
 * from the same values in the same order as in card, so the result is bitwise the same.
 */
#ifndef TIDE_STENCIL_STREAMED_H
#define TIDE_STENCIL_STREAMED_H

#include "backend/backend.h"
#include "comm/region.h"

typedef struct {
    const tide_env *env;      /* the plan's (CUDA backend); runs follow work on its stream */
    const tide_sweep *sweep;  /* the whole grid's (storage order), its state created: every
                               * slab's sweeps use it */
    tide_box box;             /* the host grid the passes run on */
    tide_box own;             /* the part of box that u and the source hold, laid out as own
                               * (box when they hold it all); the rest, a halo, comes from
                               * parts of its own (comm/region.h) */
    int source;               /* a source is added: its planes go up with each slab */
    size_t budget;            /* device bytes the pipeline may hold */
    int fuse;                 /* steps per pass (K, at least 1); 0: the model's choice */
    int level_steps;          /* steps of a level's sweep: the most up to it dividing K;
                               * 0: the model's choice */
    tide_rates pcie;          /* the rank's measured transfer rates (the model's) */
} tide_stencil_streamed_desc;

typedef struct tide_stencil_streamed tide_stencil_streamed;

/* Local: times sweeps of each step count the kernels fuse on a few planes, chooses K and F
 * (desc fuse and level_steps, else the model in stencil_streamed.c) and the slabs the budget
 * allows, and makes the runner. d's sweep must be created for every step count (fuse 0).
 * Returns 0 or a code with the reason in err. */
int tide_stencil_streamed_create(const tide_stencil_streamed_desc *d, tide_stencil_streamed **out,
                               char *err, size_t len);
void tide_stencil_streamed_destroy(tide_stencil_streamed *s);
/* Local: the K that create would choose for d (the sweep timed, the model run; no runner
 * made) in *fuse. Returns 0 or a code with the reason in err. */
int tide_stencil_streamed_fuse(const tide_stencil_streamed_desc *d, int *fuse, char *err,
                             size_t len);

/* Local, no timing: whether the grid of d streams with K steps per pass (slabs that fit d's
 * budget, each thick enough for K). */
int tide_stencil_streamed_fits(const tide_stencil_streamed_desc *d, int K);

/* One pass: `steps` (1 .. K) steps on the host grid in place: the points of the own box in u,
 * the rest of box (a halo) read from the parts of `halo` (NULL where own is box), source
 * (laid out as own, its halo in source_halo; NULL when the plan has none) added at each.
 * Only u is written: the halo's results are not brought back. Complete on return. Returns 0
 * or a code with the reason in err; after a failure u holds a partial result. */
int tide_stencil_streamed_pass(tide_stencil_streamed *s, void *u, const tide_parts *halo,
                             const void *source, const tide_parts *source_halo, int steps,
                             char *err, size_t len);

typedef struct {
    int fuse;                 /* K: steps per pass */
    int level_steps;          /* F: steps of each level's sweep */
    int slabs;                /* per pass */
    int planes;               /* own planes of the thickest slab */
    size_t device_bytes, pinned_bytes;
    double model_rate;        /* cell steps per second the model expects */
} tide_stencil_streamed_shape;

void tide_stencil_streamed_shape_of(const tide_stencil_streamed *s,
                                    tide_stencil_streamed_shape *sh);

/* Seconds one sweep of k steps takes on the grid of s from src to dst (the backend's memory):
 * the mean of three after a warm-up; INFINITY with the failure in *st (stencil.c). */
double tide_stencil_time_sweep(const tide_env *e, const tide_sweep *s, const void *src,
                               void *dst, int k, int *st);

#endif
