/*
 * band_plan.h: the band plan's parts shared by its files (private): band.c takes the request
 * and makes, describes and frees plans, band_build.c builds what a plan holds (its rows and
 * their halo, the matrix on the grown rows, the arrays, the pass program, or out of card the
 * slabs of band_streamed.c, on several ranks fed by the same halo exchange), band_run.c runs
 * the steps.
 */
#ifndef TIDE_BAND_PLAN_H
#define TIDE_BAND_PLAN_H

#include "backend/backend.h"
#include "comm/halo.h"
#include "core/args.h"
#include "band/band_streamed.h"
#include "plan/program.h"

struct tide_band_plan {
    tide_context *ctx;
    int held;              /* counted on ctx (tide_context_hold) */
    tide_band_options o;   /* o.diagonals is not kept: it is read at creation alone */
    int n, lo, hi;         /* the matrix's rows and this rank's */
    int elo, ehi;          /* this rank's rows grown by their halo (the arrays' rows) */
    int steps_per_pass;
    tide_env env;
    tide_band_pass pass;   /* the backend's pass on the grown rows */
    tide_op band_op;       /* its op (its steps set for each pass) */
    tide_program prog;     /* one pass: [halo, band] on several ranks, [band] on one; out of
                            * card [halo] or nothing, the slabs' pass run after it */
    tide_halo *halo;       /* several ranks: fills the grown rows around this rank's */
    tide_halo_tally tally; /* ... the last run's exchanges and its seconds in them */
    void *ea, *eb;         /* the passes' two arrays of the grown rows (backend memory) */
    void *diag;            /* the grown rows of A, diagonal-major (backend memory) */
    void *entry;           /* orders runs after the caller's CUDA work */
    int out_of_card;       /* the passes stream in slabs (agreed: the same on every rank) */
    tide_band_streamed *streamed; /* ... the slabs (band_streamed.h); NULL on a rank without
                                   * rows */
    void *host_matrix;     /* ... the grown rows of A they stream from (host memory; on a
                            * GPU pinned where it could be had: matrix_pinned) */
    int matrix_pinned;
    void *host_x;          /* ... several ranks: x's grown rows between passes (host memory) */
    int slab;              /* ... the rows of a slab */
};

/* Bytes of one element. */
size_t tide_band_elem(const tide_band_plan *p);

/* Collective over ctx (st: this rank's status so far; every rank comes here, p may be NULL
 * on a rank that failed): the plan's steps per pass, grown rows, halo, matrix on the grown
 * rows from the caller's diagonals, arrays and pass program. every[r] holds rank r's [lo, hi).
 * Returns this rank's status, with the reason in err (0 on a rank that is fine while another
 * failed: the caller agrees on the first failure, and the plan is then incomplete). */
int tide_band_build(tide_context *ctx, tide_band_plan *p, const int (*every)[2],
                    const void *diagonals, int st, char *err, size_t len);

/* The pass op of the plan's backend pass (band_run.c). */
void tide_band_op(tide_op *op, tide_band_pass *b, int steps);

#endif
