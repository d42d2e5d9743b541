/*
 * layout.h: layouts and the layout chain (private).
 *
 * A layout is every rank's box of one grid (P boxes, empty ones allowed). An operation is a
 * chain of stages. Stage s runs one op that needs every non-empty box to hold whole lines along
 * some dimensions (`whole`: a 2D FFT over (y,z) needs y and z whole; a tridiagonal solve along
 * z needs z whole; a pointwise op needs nothing), and may change the grid's length along one
 * dimension (a real-to-complex FFT takes dimension 2 from n to n/2+1). The chain picks the
 * layout each stage runs in: the current one when it already holds the stage's lines, else the
 * output layout when this is the last stage and that one does, else the operation's default
 * layout for the stage. Between stages a reshape (comm/) moves the data, so no exchange is ever
 * spent on a layout change nobody needs.
 */
#ifndef TIDE_LAYOUT_H
#define TIDE_LAYOUT_H

#include "core/core.h"

typedef tide_box *tide_layout;

typedef struct {
    int whole;        /* bits: dimensions every non-empty box must hold whole */
    int resize_dim;   /* the dimension whose length the op changes, or -1 */
    int resize_to;    /* its length after the op */
    int gpu_real;     /* non-empty boxes must store resize_dim fastest and the dimensions
                       * outside `whole` slowest: cuFFT's real transforms reject some strided
                       * layouts of the halved dimension, and the untransformed dimensions
                       * then form one cuFFT batch with the fields, so that no loop starts a
                       * transform at a real element not aligned like a complex one */
} tide_stage;

enum { TIDE_CHAIN_STAGES = 8, TIDE_CHAIN_POOL = 2 * TIDE_CHAIN_STAGES + 4 };

typedef struct tide_chain tide_chain;
struct tide_chain {
    int P, rank;
    int nstages;
    tide_stage stage[TIDE_CHAIN_STAGES];
    /* The operation's default layout of stage s on grid g (C order; NULL: out of memory),
     * allocated with tide_layout_new. */
    tide_layout (*deflt)(tide_chain *c, int s, const int g[3]);
    void *user;
    /* Results of tide_chain_build: stage s takes A[s] on grid[s] to B[s] on grid[s + 1]. */
    int grid[TIDE_CHAIN_STAGES + 1][3];
    tide_layout A[TIDE_CHAIN_STAGES], B[TIDE_CHAIN_STAGES];
    tide_layout in, out;
    int exchanges;
    tide_layout pool[TIDE_CHAIN_POOL]; /* every layout the chain allocated */
    int npool;
};

/* A zeroed layout of c->P boxes owned by the chain (freed by tide_chain_free); NULL when out
 * of memory or the pool is full. */
tide_layout tide_layout_new(tide_chain *c);
/* Same data placement: equal boxes on every rank, or both empty. */
int tide_layout_same(int P, const tide_layout a, const tide_layout b);

/* Builds the chain on input grid n from layout in (input side) to layout out (output grid,
 * i.e. after every resize), or, with out NULL, to whatever layout the last stage leaves (one
 * exchange fewer, like FFTW_MPI_TRANSPOSED_OUT). in and out are not copied: they must outlive
 * the chain. Returns 0 or TIDE_ERR_NOMEM. */
int tide_chain_build(tide_chain *c, const int n[3], tide_layout in, tide_layout out);
void tide_chain_free(tide_chain *c);

/* The chain as a sequence of steps: reshapes between layouts and the stages' ops. */
typedef struct {
    int stage;                 /* the stage whose op runs, or -1 for a reshape */
    tide_layout from, to;
    int from_grid, to_grid;    /* indices into c->grid: the grids of from and to */
} tide_chain_step;

enum { TIDE_CHAIN_STEPS = 2 * TIDE_CHAIN_STAGES + 1 };

/* Forward: in, the stages in order, out. Reverse (the inverse operation): out, the stages
 * backwards (each from B[s] to A[s]), in. Returns the number of steps. */
int tide_chain_steps(const tide_chain *c, int reverse, tide_chain_step *steps);

#endif
