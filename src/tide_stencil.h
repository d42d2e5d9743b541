/*
 * tide_stencil.h: stencil time steps: one part of Tide's public C API.
 * A program includes tide.h, which includes this header after the context, the boxes and
 * the status codes it uses.
 */
#ifndef TIDE_STENCIL_H
#define TIDE_STENCIL_H

#include "tide.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Stencils: explicit time steps of a constant-coefficient stencil on a grid of n[0] x n[1] x
 * n[2] points, u(t + 1) = S u(t) + s, for real u (float or double) in host or device memory.
 *
 * S is a list of taps, each an offset (dx, dy, dz) and a weight: (S u)(p) = sum_i w_i u(p +
 * o_i). Built-in shapes take the weights of fixed offsets; user shapes take offsets and weights.
 * The radius r is the largest |offset| component of the taps (at least 1).
 *
 * Arithmetic: every update computes w_0 u(p + o_0) (a rounded product), then adds w_i u(p + o_i)
 * for i = 1, 2, ... in the taps' order, each with one fused multiply-add, then adds the source
 * value (a rounded sum), in the plan's precision (weights rounded to it); TIDE_STENCIL_27PT with
 * one weight per class (centre, faces, edges, corners; the defaults) in docs/api.md's class
 * form instead. Every backend, storage order and number of steps fused per pass does exactly
 * this, so results are bitwise the same on the CPU and the GPU, however the steps are grouped.
 *
 * Boundaries, per dimension: periodic (offsets wrap around), or Dirichlet: the r outermost
 * planes at each face hold fixed boundary values, the user's (whatever u holds there), which
 * the steps read and never change; the source is not added there.
 *
 * Steps are fused: a pass over the memory the array lives in does several steps (temporal
 * blocking: on the GPU inside one kernel, through shared memory), the count chosen by the plan
 * or by the `fuse` option.
 *
 * On a context of several ranks (either backend, host or device arrays; ranks may share a GPU)
 * each rank holds a box of u: its own (the boxes of all
 * ranks tiling the grid, any storage orders), or with box NULL on every rank the plan's
 * choice, a block of a process grid (tide_stencil_info's box and grid tell). Before each pass
 * every rank receives a halo of fuse r points around its box from the ranks that hold them
 * (along the dimensions it does not hold whole; across periodic faces too), so it exchanges
 * once per fuse steps, and the results are bitwise those of one rank on the whole grid. Each
 * box grown by its halo (up to the faces along Dirichlet dimensions) must have at least 2 r + 1
 * points along every dimension (an empty box is allowed), else TIDE_ERR_ARGUMENT on every
 * rank. The steps per pass are the same on every rank: the option, or the fewest the ranks'
 * boxes would each take. On the GPU the halo's regions are packed and unpacked by kernels on
 * the device and travel through pinned host memory by MPI: only halo points cross PCIe.
 * ------------------------------------------------------------------------------------------- */
typedef struct tide_stencil_plan tide_stencil_plan;

typedef enum {
    TIDE_STENCIL_7PT = 0,  /* radius 1: weights[7] of the offsets centre, -x, +x, -y, +y, -z, +z */
    TIDE_STENCIL_27PT = 1, /* radius 1, the 3x3x3 box: weights[27], offset (dx,dy,dz) at index
                            * 9 (dx + 1) + 3 (dy + 1) + (dz + 1) */
    TIDE_STENCIL_STAR = 2, /* user taps on the axes: offsets with at most one nonzero component */
    TIDE_STENCIL_BOX = 3   /* user taps anywhere in the (2 r + 1)^3 box */
} tide_stencil_shape;

enum {
    TIDE_STENCIL_MAX_RADIUS = 4,
    TIDE_STENCIL_MAX_FUSE = 1 << 16 /* the most steps options fuse and level_steps may ask for
                                     * (per pass: beyond it the halo alone outgrows any grid) */
};

typedef struct {
    size_t size;                /* sizeof the struct: set by the init function */
    tide_precision precision;   /* default TIDE_DOUBLE */
    tide_backend backend;       /* default AUTO: the context's backend */
    tide_location location;     /* default TIDE_LOCATION_HOST */
    tide_stencil_shape shape;   /* default TIDE_STENCIL_7PT */
    const double *weights;      /* the taps' weights (7 or 27 for the built-in shapes, npoints
                                 * for user shapes); NULL with a built-in shape: a diffusion
                                 * step that keeps the sum of u, 7PT centre 1/4 and faces 1/8,
                                 * 27PT the product over x, y, z of 1/4, 1/2, 1/4 at offsets
                                 * -1, 0, +1 */
    int radius;                 /* user shapes: a bound 1 .. TIDE_STENCIL_MAX_RADIUS every
                                 * offset lies within (the stencil's r is its largest
                                 * offset); ignored for the built-in shapes */
    int npoints;                /* user shapes: the number of taps, no offset twice */
    const int (*offsets)[3];    /* user shapes: tap i's offset (dx, dy, dz) */
    tide_bc bc[3];              /* per dimension TIDE_BC_DIRICHLET (default) or PERIODIC */
    const void *source;         /* NULL (default), or s: an array like u (same box, location
                                 * and precision), added at every step; read during runs, so
                                 * it must stay valid while the plan runs */
    int fuse;                   /* steps per pass over the array's memory, at most
                                 * TIDE_STENCIL_MAX_FUSE; 0 (default): the plan's choice
                                 * (tide_stencil_plan_info tells) */
    void *stream;               /* GPU: the caller's cudaStream_t runs are ordered after
                                 * (tide_fft_options); per rank */
    int level_steps;            /* GPU, host arrays beyond the device budget: the steps each
                                 * level of a pass takes in one fused sweep, at most this many
                                 * (the most up to it that divide the pass's steps; 1: one step
                                 * a sweep, Jin 2014's scheme; at most TIDE_STENCIL_MAX_FUSE);
                                 * 0 (default): the plan's choice (tide_stencil_plan_info
                                 * tells); ignored in card */
    int overlap;                /* several ranks: 1 where a pass sweeps the own points whose
                                 * update needs no halo while the halo travels, then the
                                 * points next to it (the messages posted before and waited for
                                 * after on the CPU, in host memory); -1 never (each pass
                                 * exchanges, then sweeps the grown box); 0 (default): on the
                                 * GPU; not out of core. Either way the same results */
    tide_exchange exchange;     /* several ranks: how the halos move. AUTO (default): in host
                                 * memory by MPI; in device memory over NCCL where every rank
                                 * has a GPU of its own, else by MPI on device pointers where
                                 * the MPI library takes them, else by MPI through pinned host
                                 * buffers. P2P (or A2AV: halos go pairwise): by MPI, through
                                 * pinned host buffers for device memory. NCCL or CUDA_MPI:
                                 * that transport, where the plan's halos lie in device memory
                                 * (else TIDE_ERR_UNSUPPORTED: a CPU plan, or host arrays
                                 * beyond the device budget) and the context has it. DIRECT:
                                 * TIDE_ERR_UNSUPPORTED. tide_stencil_plan_info says which */
} tide_stencil_options;

TIDE_API void tide_stencil_options_init(tide_stencil_options *opts);

/* Collective. n: the grid, at least 2 r + 1 points along every dimension; box: this rank's
 * box of u (on one rank the whole grid; any storage order), or NULL on every rank: on one rank
 * the whole grid in C order, on several the plan's blocks. All validation and allocation
 * happen here. opts may be NULL for defaults; a struct not filled by
 * tide_stencil_options_init is TIDE_ERR_ARGUMENT on every rank. */
TIDE_API int tide_stencil_plan_create(tide_context *ctx, const int n[3], const tide_box *box,
                                      const tide_stencil_options *opts, tide_stencil_plan **plan);

/* Local: frees the plan. NULL is accepted. */
TIDE_API int tide_stencil_plan_destroy(tide_stencil_plan *plan);

typedef struct {
    long long count;         /* points on this rank */
    size_t bytes;            /* bytes of this rank's u */
    size_t host_bytes;       /* work memory the plan holds in host memory */
    size_t pinned_bytes;     /* ... in pinned host memory */
    size_t device_bytes;     /* ... in device memory */
    int taps;                /* points of the stencil */
    int radius;
    int fuse;                /* steps per pass over the array's memory */
    double flops;            /* per point and step, nominal: 2 taps - 1 (the tap order's
                              * product and taps - 1 multiply-adds), plus 1 for a source */
    double bytes_per_step;   /* the memory traffic of one unfused step per point: u read and
                              * written once (and the source read), the bound's measure */
    tide_backend backend;
    tide_location location;
    tide_box box;            /* this rank's box of u */
    int grid[3];             /* several ranks with the plan's boxes: its process grid (rank r
                              * at (r / (g1 g2), r / g2 % g1, r % g2), blocks [i n / p,
                              * (i + 1) n / p)); else {0, 0, 0} */
    long long halo_points;   /* several ranks: points this rank receives per exchange (one
                              * per pass); 0 on one rank */
    long long exchanges;     /* several ranks, the last run: the halo exchanges it made (one
                              * per pass, one more for the source's halo) */
    double halo_seconds;     /* ... and the seconds this rank spent in them (packing, waiting
                              * for its peers, unpacking) */
    int slabs;               /* GPU, host arrays beyond the device budget (one rank, or each
                              * rank out of core): the slabs each pass sends through the GPU;
                              * 0 in card */
    int level_steps;         /* ... and the steps each level of a pass fuses (a pass whose
                              * steps it does not divide: the most below it that do); 0 in
                              * card */
    tide_exchange halo_exchange; /* several ranks: how halos move, TIDE_EXCHANGE_NCCL (GPU
                              * to GPU, every rank a GPU of its own), _CUDA_MPI (MPI_Isend/
                              * Irecv on device memory, where the MPI library takes it on every
                              * rank) or _P2P (MPI_Isend/Irecv, on the GPU through pinned host
                              * memory); _AUTO on one rank */
    int overlapped;          /* several ranks: 1 where each pass sweeps this rank's own
                              * points that need no halo while its halo travels (option
                              * overlap; halo_seconds then run beside that sweep) */
} tide_stencil_info;

TIDE_API int tide_stencil_plan_info(const tide_stencil_plan *plan, tide_stencil_info *info);

/* A one-line description, e.g. "stencil 7pt r1 7 taps float cuda: sweep[4 steps]". */
TIDE_API int tide_stencil_plan_describe(const tide_stencil_plan *plan, char *buf, size_t len);

/* Collective. Advances u (this rank's box, in place) by steps >= 0 time steps, the same on
 * every rank (else TIDE_ERR_MISMATCH on every rank, u unchanged). Arrays as for
 * tide_fft_forward (host or device memory as the plan's location says). Ordered after the
 * caller's earlier work on the plan's stream and complete on return. */
TIDE_API int tide_stencil_run(tide_stencil_plan *plan, void *u, long long steps);

/* Local: the stream later runs order themselves after; NULL: the legacy default stream. */
TIDE_API int tide_stencil_plan_set_stream(tide_stencil_plan *plan, void *stream);

#ifdef __cplusplus
}
#endif
#endif /* TIDE_STENCIL_H */
