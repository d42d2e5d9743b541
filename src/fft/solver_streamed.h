/*
 * solver_streamed.h: FFT solver plans (solver.h) of host arrays streamed through the GPU
 * (private; see solver_streamed.c): a solve's passes and ops for the pass runner (plan/streamed.h).
 */
#ifndef TIDE_SOLVER_STREAMED_H
#define TIDE_SOLVER_STREAMED_H

#include "plan/solver.h"
#include "plan/streamed.h"

typedef struct {
    int n[3];                   /* the real grid */
    int dbl, batch;
    const tide_fft_middle *mid; /* the transforms and the op between them */
    size_t budget;
    int cpu_x;                  /* the CPU does the x transforms (tide_solver_streamed_cpu_x) */
} tide_solver_streamed_desc;

/* Whether the CPU can do the x transforms, one pass through the GPU doing the rest (see
 * solver_streamed.c): one rank, x periodic. */
int tide_solver_streamed_cpu_x(const tide_fft_middle *mid, int P);

/* Local: the seconds the CPU takes for the x transforms of one solve of d, forward and
 * inverse, every field, measured on a few of the planes and scaled (INFINITY when that
 * fails). */
double tide_solver_streamed_cpu_seconds(const tide_env *env, const tide_solver_streamed_desc *d);

/* The dimension (0 or 1) whose slabs the ranks hold the data in, the one the outer passes
 * cut, for grid n on P ranks; -1 when the middle op needs dimensions whole that no pass has
 * whole, or P exceeds the length of x or y on the spectral grid. (The CPU's scheme: x.) */
int tide_solver_streamed_outer(const tide_fft_middle *mid, const int n[3], int P);

/* Local: the streamed solve of env's ranks (env: the CUDA backend, nccl or NULL). Ranks hold
 * slabs (tide_box_slab along tide_solver_streamed_outer, C order) of the real data; P is at
 * most the length of either slab dimension on the spectral grid. Returns 0 or a code with the
 * reason in err. */
int tide_solver_streamed_create(const tide_env *env, const tide_solver_streamed_desc *d,
                              tide_streamed **out, char *err, size_t len);

#endif
