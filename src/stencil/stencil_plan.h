/*
 * stencil_plan.h: the stencil plan's parts shared by its files (private): stencil.c takes the
 * request, makes and describes plans, stencil_build.c builds a plan's boxes, halos, sweeps
 * and memory (one rank, several ranks, split passes, out of card and out of core),
 * stencil_run.c runs the steps.
 */
#ifndef TIDE_STENCIL_PLAN_H
#define TIDE_STENCIL_PLAN_H

#include "core/args.h"
#include "backend/backend.h"
#include "comm/halo.h"
#include "plan/program.h"
#include "stencil/stencil_split.h"
#include "stencil/stencil_streamed.h"

/* The state of the stencil's own op classes (stencil_ops.c), in the plan. */
typedef struct {
    tide_stencil_split *split;       /* split passes */
    const void *own;                 /* ... where this pass reads its own points (direct
                                      * first pass), or NULL */
    int to_box;                      /* ... this pass writes into u's box (direct last pass) */
    tide_stencil_streamed *streamed; /* slabs through the GPU */
    const tide_parts *halo_u, *halo_src; /* ... out of core: the halo's parts */
    const void *source;              /* ... the caller's source */
    char err[TIDE_MSG_LEN];          /* ... why a pass failed */
} tide_stencil_ops;

/* A halo exchanged into parts: the points sent read from an array laid out as from. */
typedef struct {
    const tide_box *from;
    const tide_parts *to;
} tide_stencil_parts;

struct tide_stencil_plan {
    tide_context *ctx;
    int held;             /* counted on ctx (tide_context_hold) */
    tide_stencil_options o;
    int n[3];
    tide_box box;          /* this rank's of u */
    tide_box ext;          /* the box the sweep runs on: box, grown by its halo on several
                            * ranks */
    int grid[3];           /* several ranks, boxes of the plan's choice: its process grid */
    tide_halo *halo;       /* several ranks: the exchange that fills ext around box */
    tide_halo_tally tally; /* ... the last run's exchanges and its seconds in them */
    void *ea, *eb, *esrc;  /* ... arrays laid out as ext: the passes' two, and the source's */
    int radius, taps;
    int (*off)[3];         /* the taps in storage order (sweep.off) */
    double *w;
    tide_env env;
    tide_sweep sweep;
    tide_op sweep_op;      /* the sweep op (its steps set for each pass) */
    tide_program pass;     /* one pass's ops: [sweep] (one rank), [halo, sweep] or [split]
                            * (several ranks; no sweep on an empty box), [slabs] (out of
                            * card), [halo into parts, slabs] (out of core) */
    tide_program source_halo; /* several ranks with a source: its halo, once a run */
    tide_stencil_ops ops;  /* the state of the stencil's own op classes */
    int fuse;              /* steps per pass */
    size_t bytes;          /* of u */
    void *work;            /* the second array of the passes, in the backend's memory */
    void *dev_u;           /* a GPU plan on host arrays: u on the device */
    void *dev_source;      /* ... and the source, uploaded at each run */
    void *entry;           /* orders runs after the caller's CUDA work */
    int tuned;             /* fuse chosen by timing sweeps */
    tide_stencil_split *split; /* several ranks: passes that hide the exchange
                                * (stencil_split.h), or NULL */
    tide_stencil_streamed *streamed; /* GPU, host arrays beyond the device budget: slabs
                                      * through the GPU (stencil_streamed.h) */
    int out_of_core;       /* several GPU ranks, each streaming: each pass's halo exchanged
                            * in host memory into halo_u (and the source's once into
                            * halo_src) and this rank's grown box streamed through the GPU
                            * from u, the source and them */
    tide_parts halo_u, halo_src; /* ... the parts of the halo alone, pinned host memory */
    tide_stencil_parts into[2]; /* ... the halo into parts: u's and the source's */
};

/* The stencil's own op classes (stencil_ops.c), on the plan core's programs. */

/* Split passes (stencil_split.h): the pass reads from its source (laid out as the grown box)
 * and writes its destination, or, direct, reads its own points from `own` and writes into u's
 * box (to_box); set for each pass. Collective. */
void tide_stencil_op_split(tide_op *op, tide_stencil_ops *s, const tide_halo *h,
                           tide_halo_tally *tally);
/* The slabs of one pass through the GPU (stencil_streamed.h), in place in u: out of card, or
 * out of core with the halo's parts (s->halo_u, s->halo_src). */
void tide_stencil_op_slabs(tide_op *op, tide_stencil_ops *s);
/* The halo of the points its source holds (laid out as x->from) exchanged into the parts
 * x->to (out of core). Collective. */
void tide_stencil_op_halo_parts(tide_op *op, const tide_stencil_parts *x, const tide_halo *h,
                                tide_halo_tally *tally);

/* Bytes of one point of u. */
size_t tide_stencil_elem_bytes(const tide_stencil_plan *p);

/* What the plan holds in its backend's memory: on one rank the work array; on several the
 * arrays on the grown box (three with a source) and the halo's device staging; on a GPU with
 * host arrays also the device copies of u and the source. */
size_t tide_stencil_backend_bytes(const tide_stencil_plan *p);

/* Bytes of the parts of this rank's halo (its grown box less its box), of u or the source. */
size_t tide_stencil_halo_bytes(const tide_stencil_plan *p);

/* Collective, on several ranks (st: this rank's status so far; every rank comes here): every
 * rank's box, the agreed steps per pass, every rank's grown box and the halo exchange; a box
 * too thin for its halo fails on every rank alike. Returns the agreed status, the reason in
 * err. */
int tide_stencil_plan_ranks(tide_context *ctx, tide_stencil_plan *p, const tide_args *all,
                            const int (*off)[3], const double *w, int st, char *err,
                            size_t len);

/* The plan's memory, its sweep and its steps per pass (local; the reason in err). */
int tide_stencil_build(tide_stencil_plan *p, const int (*off)[3], const double *w, char *err,
                       size_t len);

#endif
