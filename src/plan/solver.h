/*
 * solver.h: FFT plans that solve (private). A solver plan runs the forward transform, one op
 * in spectral space (a Poisson solve's eigenvalue scaling or tridiagonal solves), and the
 * backward transform as one program on the plan core (fft.c). The op is the last stage of the
 * plan's layout chain: the forward transform ends where its last stage leaves the data (like
 * transposed output), the op runs there when that layout holds the lines it needs (else one
 * reshape brings them), and the backward transform starts from it. So a slab solve costs two
 * exchanges and the three middle steps run on one layout.
 */
#ifndef TIDE_SOLVER_H
#define TIDE_SOLVER_H

#include "plan/program.h"

typedef struct {
    const char *call; /* the public solve call, for messages ("tide_poisson_solve") */
    /* Builds the op between the transforms, on this rank's box of the spectral grid `grid`
     * (stored as box says), with the op's placement (src, dst) already set: keep it. Called
     * on every rank while the plan is made, once, or (a streamed solve, solver_streamed.h) for
     * copies 0, 1, ... of it, one per pipeline slot, each made for the rank's first chunk and
     * run chunk by chunk (tide_op_spectral_chunk), copy 0 first; the op lives as long as the
     * plan and runs with env e. Returns 0 or a code with the reason in err. */
    int (*make)(tide_op *op, const tide_env *e, const tide_box *box, const int grid[3],
                int copy, void *user, char *err, size_t len);
    void *user;
    int transform; /* the transformed dimensions, as bits (7: all three); the real transform
                    * halves the highest of them that r2r leaves to a DFT */
    int r2r[3];    /* per dimension: the forward real-to-real transform along a transformed
                    * one (tide_r2r_kind, cpu_fft.h), or NONE for a DFT. With no DFT left the
                    * data stays real throughout */
    int whole;     /* the dimensions the op needs whole on a rank, as bits */
} tide_fft_middle;

/* The dimension mid's real transform halves: the highest one a DFT transforms, -1 when
 * every transformed one is real-to-real. */
static inline int tide_middle_halved(const tide_fft_middle *mid)
{
    int h = 2;
    while (h >= 0 && (!(mid->transform & (1 << h)) || mid->r2r[h] != TIDE_R2R_NONE))
        h--;
    return h;
}

/* Collective, like tide_fft_plan_create with type r2c over mid's transformed dimensions (the
 * request already validated by the caller): box is this rank's box of the real data (NULL on
 * every rank: the decomposition's first layout); opts' type, transposed_out, scaling and
 * async are set here. Host arrays on a GPU are copied to the device whole, or streamed through
 * it (solver_streamed.h) as ooc says (tide_out_of_card; AUTO: when copying does not fit the
 * budget, by the scheme predicted faster). A plan that cannot stream falls back to the CPU
 * with ooc and backend auto, and is TIDE_ERR_UNSUPPORTED with a scheme named. */
int tide_fft_solver_create(tide_context *ctx, const int n[3], const tide_box *box,
                           const tide_fft_options *opts, const tide_fft_middle *mid,
                           tide_out_of_card ooc, tide_fft_plan **plan);

/* Whether the plan streams with the CPU doing the x transforms. */
int tide_fft_solver_cpu_x(const tide_fft_plan *p);

/* Collective: one solve from in to out (both real, this rank's box; in == out allowed). */
int tide_fft_solver_run(tide_fft_plan *p, const void *in, void *out);

/* The solve's cost on this rank (the fields of tide_fft_plan_cost). */
void tide_fft_solver_cost(const tide_fft_plan *p, tide_fft_cost *cost);

#endif
