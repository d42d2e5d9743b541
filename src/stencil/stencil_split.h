/*
 * stencil_split.h: passes of a stencil on several ranks that hide the halo exchange (private).
 *
 * A rank sweeps its box grown by a halo of band = fuse r points (stencil.c). A sweep of fuse
 * steps spoils band points inward from a face that is not the grid's, so the own points at
 * least band from every halo (the inner box) need no halo at all: a split pass sweeps them
 * while the halo travels, and once it is in sweeps the shell of own points around them, the
 * points within band of a halo, cut into up to six boxes (below and above along each
 * dimension with a halo, each over the inner box's extent along the dimensions before its own
 * and the own box's along those after it). Each
 * sweep runs on a view of the grown array (backend.h: tide_sweep's pitches): its box grown by
 * band (clipped to the grown box), writing its box alone (its out window), so its points are
 * computed from the same values in the same order as by the sweep of the whole grown box:
 * bitwise the same result. The writes do not overlap, so nothing orders the shell after the
 * inner sweep: on the GPU the boxes below run on one urgent stream, those above on another,
 * which also carries the exchange, each from when the halo is in, their blocks taking SMs as
 * the inner sweep frees them. On the CPU the exchange's messages are posted before the inner
 * sweep and waited for after it.
 */
#ifndef TIDE_STENCIL_SPLIT_H
#define TIDE_STENCIL_SPLIT_H

#include "backend/backend.h"
#include "comm/halo.h"

typedef struct tide_stencil_split tide_stencil_split;

/* Local: the split passes of a rank whose grown box ext holds its own box own (both in the
 * grid's coordinates; the arrays laid out as ext in own's storage order), sweep the sweep over
 * ext (its taps and boundaries, its source laid out as ext), fuse steps per pass. *out NULL
 * where passes do not split: no halo, or own fewer than 3 band points along a dimension with
 * a halo (the shell would be most of the work). 0 or an error with the reason in err. */
int tide_stencil_split_create(const tide_env *e, const tide_sweep *sweep, const tide_box *own,
                              const tide_box *ext, int fuse, tide_stencil_split **out,
                              char *err, size_t len);
void tide_stencil_split_destroy(const tide_env *e, tide_stencil_split *s);

/* Host memory the split passes' sweeps hold (their state: on the CPU each one's rings). */
size_t tide_stencil_split_host_bytes(const tide_stencil_split *s);

/* Whether the halo lies along the slowest storage dimension alone, so that u's own box is laid
 * out as the grown array's own planes: a run's first pass may then read its own points from u
 * and its last write into u (tide_stencil_split_bands first). */
int tide_stencil_split_direct(const tide_stencil_split *s);

/* Direct passes: into the grown array a, the own points of box (u's own box in the backend's
 * memory) that the first pass reads from a: the 2 band planes next to each halo (the
 * exchange's sends and the shell's sweeps). */
int tide_stencil_split_bands(const tide_env *e, const tide_stencil_split *s, const void *box,
                             void *a);

/* Collective: one pass of count steps from `from` (laid out as ext) into `to` (laid out as
 * ext, or with to_box as the own box: direct passes), its halo filled by h as the inner box
 * is swept; own: NULL, or (direct) u's own box, which the inner sweep reads instead of from's
 * own points. failed: skip the sweeps (every rank takes part in the exchange whatever
 * failed). *seconds: the time this thread spent in the exchange, added. Returns the first
 * failure. */
int tide_stencil_split_pass(const tide_env *e, const tide_stencil_split *s, const tide_halo *h,
                            void *from, const void *own, void *to, int to_box, int count,
                            int failed, double *seconds);

#endif
