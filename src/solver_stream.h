/*
 * solver_stream.h: FFT solver plans (solver.h) of host arrays streamed through the GPU
 * (private; see solver_stream.c): a solve's passes and ops for the pass runner (stream.h).
 */
#ifndef TIDE_SOLVER_STREAM_H
#define TIDE_SOLVER_STREAM_H

#include "solver.h"
#include "stream.h"

typedef struct {
    int n[3];                   /* the real grid */
    int dbl, batch;
    const tide_fft_middle *mid; /* the transforms and the op between them */
    size_t budget;
} tide_solver_stream_desc;

/* The dimension (0 or 1) whose slabs the ranks hold the data in, the one the outer passes
 * cut, for grid n on P ranks; -1 when the middle op needs dimensions whole that no pass has
 * whole, or P exceeds the length of x or y on the spectral grid. */
int tide_solver_stream_outer(const tide_fft_middle *mid, const int n[3], int P);

/* Local: the streamed solve of env's ranks (env: the CUDA backend, nccl or NULL). Ranks hold
 * slabs (tide_box_slab along tide_solver_stream_outer, C order) of the real data; P is at
 * most the length of either slab dimension on the spectral grid. Returns 0 or a code with the
 * reason in err. */
int tide_solver_stream_create(const tide_env *env, const tide_solver_stream_desc *d,
                              tide_stream **out, char *err, size_t len);

#endif
