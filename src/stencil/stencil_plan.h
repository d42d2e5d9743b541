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
    long long exchanges;   /* ... made by the last run, and its seconds in them */
    double halo_seconds;
    void *ea, *eb, *esrc;  /* ... arrays laid out as ext: the passes' two, and the source's */
    int radius, taps;
    int (*off)[3];         /* the taps in storage order (sweep.off) */
    double *w;
    tide_env env;
    tide_sweep sweep;
    tide_op op;            /* the sweep op; count set for each pass */
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
};

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
