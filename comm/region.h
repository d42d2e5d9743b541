/*
 * region.h: box geometry and the permuting copy that every pack and unpack uses (private).
 *
 * A "layout" is a box plus its storage order (tide_box carries both). A region is a box whose
 * order is irrelevant; it must lie inside the boxes it is copied between.
 */
#ifndef TIDE_COMM_REGION_H
#define TIDE_COMM_REGION_H

#include <stddef.h>
#include <stdint.h>
#include "tide.h"

/* Extent of dimension d (0 when hi < lo never happens: boxes are validated first). */
static inline int64_t tide_ext(const tide_box *b, int d) { return (int64_t)b->hi[d] - b->lo[d]; }

/* Element strides of each dimension of box b in its storage order. */
void tide_box_strides(const tide_box *b, int64_t stride[3]);

/* Intersection of a and b (lo/hi), with a's order. Returns its point count (0: empty). */
int64_t tide_box_intersect(const tide_box *a, const tide_box *b, tide_box *out);

/* Nonzero when every point of region r lies inside box b. */
int tide_box_within(const tide_box *r, const tide_box *b);

/* The points of e outside o as disjoint boxes with e's order: along each dimension in turn, the
 * part of what is left below o, then above it (at most six). Returns their count (0: e lies
 * inside o). */
enum { TIDE_PARTS_MAX = 6 };
int tide_box_subtract(const tide_box *e, const tide_box *o, tide_box out[TIDE_PARTS_MAX]);

/* A region held in parts, each a box dense in its storage order: the halo of a rank's grown
 * box without the own box inside it (tide_box_subtract), where the own points live apart. */
typedef struct {
    int n;
    tide_box box[TIDE_PARTS_MAX];
    void *data[TIDE_PARTS_MAX];
} tide_parts;

/* Same lo, hi and order. */
int tide_box_equal(const tide_box *a, const tide_box *b);

/* Element offset of the region's first point inside box b. */
int64_t tide_box_offset(const tide_box *b, const tide_box *region);

/* Nonzero when the region's points form one contiguous run of box b's memory, in the same
 * sequence as a dense array of the region stored in order `order`. With batch > 1 fields laid
 * field after field, the run must also continue across fields (region == whole box). */
int tide_region_is_run(const tide_box *region, const tide_box *b, const int order[3], int batch);

/* One copy of a region between two layouts, as loops in the destination's order: loop k runs
 * over dimension dbox->order[k], n[k] points, with element strides s[k] in the source and t[k]
 * in the destination. Field f starts at element soff + f * scount (source) and doff +
 * f * dcount (destination). */
typedef struct {
    int64_t n[3], s[3], t[3];
    int64_t soff, doff, scount, dcount;
} tide_copy_geom;

/* The geometry of copying region from layout sbox to layout dbox. Returns its point count. */
int64_t tide_copy_geometry(const tide_box *region, const tide_box *sbox, const tide_box *dbox,
                           tide_copy_geom *g);

/* Copy the points of `region` of every field from src (layout sbox, fields sbox-count apart)
 * to dst (layout dbox, fields dbox-count apart). Writes follow dst's order; when the fastest
 * dimensions differ the copy is tiled so both sides stay in cache. elem is the element size in
 * bytes (4, 8 and 16 have fast paths). Uses up to `threads` OpenMP threads. */
void tide_copy_region(size_t elem, int batch, const tide_box *region, const void *src,
                      const tide_box *sbox, void *dst, const tide_box *dbox, int threads);

#endif
