/*
 * tide.h: the public C API of Tide: distributed 3D FFTs, FFT-based Poisson solvers,
 * temporal-blocked stencils, band matrix powers and matrix multiplies on MPI ranks.
 *
 * Conventions (see docs/api.md):
 *  - Every function returns a status: TIDE_SUCCESS (0) or a TIDE_ERR_* code. Outputs are written
 *    only on success. tide_strerror() names a code; tide_last_error() gives the detail.
 *  - Functions marked "collective" must be called by every rank of the context's communicator.
 *    A collective call that fails returns the same code and the same message on every rank.
 *  - Options structs are filled with defaults by their *_init function, then edited; this lets
 *    them grow without breaking callers.
 *  - Complex data is interleaved (re, im) pairs of float or double, the layout of C99
 *    `double complex` and `fftw_complex`.
 */
#ifndef TIDE_H
#define TIDE_H

#include <mpi.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TIDE_VERSION_MAJOR 0
#define TIDE_VERSION_MINOR 1
#define TIDE_VERSION_PATCH 0

/* Marks the functions of this interface: the shared library is built with hidden visibility
 * and exports these alone. */
#if defined(__GNUC__)
#define TIDE_API __attribute__((visibility("default")))
#else
#define TIDE_API
#endif

/* The library's version as "MAJOR.MINOR.PATCH". */
TIDE_API const char *tide_version(void);

/* ---------------------------------------------------------------------------------------------
 * Status codes
 * ------------------------------------------------------------------------------------------- */
enum {
    TIDE_SUCCESS = 0,
    TIDE_ERR_ARGUMENT = 1,    /* NULL pointer, unknown enum value, bad size or count */
    TIDE_ERR_BOX = 2,         /* boxes outside the grid, overlapping, or not covering it */
    TIDE_ERR_MISMATCH = 3,    /* arguments that must agree differ between ranks */
    TIDE_ERR_UNSUPPORTED = 4, /* a valid request this build or machine cannot do */
    TIDE_ERR_NOMEM = 5,       /* an allocation failed */
    TIDE_ERR_MPI = 6,         /* an MPI call failed */
    TIDE_ERR_BACKEND = 7,     /* FFTW (or another backend library) failed */
    TIDE_ERR_TOO_LARGE = 8    /* a size or count exceeds what the library can address */
};

/* A static, human-readable name for a status code. */
TIDE_API const char *tide_strerror(int status);

/* ---------------------------------------------------------------------------------------------
 * Context: one per communicator. Holds the duplicated communicator, the backend, threads and
 * the last error message. Every plan is made from a context.
 * ------------------------------------------------------------------------------------------- */
typedef struct tide_context tide_context;

typedef enum {
    TIDE_BACKEND_AUTO = 0, /* cuda when this build has it and every rank has a usable GPU */
    TIDE_BACKEND_CPU = 1,
    TIDE_BACKEND_CUDA = 2
} tide_backend;

/* Values of tide_context_options.device besides a device index (0, 1, ...). */
#define TIDE_DEVICE_AUTO (-1)    /* local rank on the node % GPUs on the node */
#define TIDE_DEVICE_CURRENT (-2) /* the device current (cudaSetDevice) in the creating thread */

typedef struct {
    size_t size;          /* sizeof the struct: set by the init function; lets a library built
                           * with a larger struct read an older caller's struct */
    tide_backend backend; /* default TIDE_BACKEND_AUTO */
    int threads;          /* CPU threads per rank; 0 (default) = the node's cores / ranks on it */
    size_t device_budget; /* bytes of device memory this rank's plans may hold; 0 (default) =
                           * the GPU's free memory at creation less 1 GiB, split evenly
                           * between the ranks of the node that use the same GPU */
    int bind;             /* 1 (default): on CUDA, bind each rank to the cores nearest its GPU,
                           * unless it is already bound to some cores (e.g. by mpirun
                           * --bind-to core), which are then kept */
    int device;           /* the rank's GPU: TIDE_DEVICE_AUTO (default), TIDE_DEVICE_CURRENT or
                           * an index (one that does not exist: TIDE_ERR_ARGUMENT) */
} tide_context_options;

TIDE_API void tide_context_options_init(tide_context_options *opts);

/* Collective over comm. opts may be NULL for defaults; a struct not filled by
 * tide_context_options_init (its size unset) is TIDE_ERR_ARGUMENT on every rank. */
TIDE_API int tide_context_create(MPI_Comm comm, const tide_context_options *opts,
                                 tide_context **ctx);
/* Collective. Plans made from ctx must be destroyed first: while any lives on any rank, every
 * rank returns TIDE_ERR_ARGUMENT naming their count and the context stays as it was. NULL is
 * accepted. */
TIDE_API int tide_context_destroy(tide_context *ctx);

/* The backend the context resolved AUTO to. */
TIDE_API int tide_context_backend(const tide_context *ctx, tide_backend *backend);
/* Why the context uses or does not use a GPU, e.g. "no usable GPU: ..." (never NULL). */
TIDE_API const char *tide_context_gpu_status(const tide_context *ctx);
/* Threads per rank the CPU backend uses. */
TIDE_API int tide_context_threads(const tide_context *ctx, int *threads);
/* Local: every `seconds` (0, the default: never) the calls of ctx's plans that run long write
 * a progress line on rank 0 through the log (stderr), whatever TIDE_LOG says:
 *   [tide 0/4 progress] tide_gemm_execute: 40% (4/10 panels), 12 s, about 18 s left
 * and a closing "done" line where any was written; nothing during a call's first `seconds`.
 * The calls: stencil runs (counted in passes) and multiplies over several ranks (in panels).
 * A negative or non-finite value is TIDE_ERR_ARGUMENT. */
TIDE_API int tide_context_set_progress(tide_context *ctx, double seconds);

/* The GPU a rank of a CUDA context uses (tide_context_options.device). */
typedef struct {
    int device;              /* CUDA device index on this node; -1 when the context is on the CPU */
    char name[128];
    char pci_bus_id[32];
    int cc_major, cc_minor;  /* compute capability */
    size_t total_bytes;      /* device memory */
    size_t free_bytes;       /* free at context creation */
    size_t budget_bytes;     /* what this rank's plans may hold (device_budget option) */
    char cpuset[128];        /* cores this rank is bound to (hwloc list, e.g. "0-7"): near the
                              * GPU by Tide, or the launcher's binding, kept; "" with bind 0 or
                              * when hwloc cannot bind */
    int cuda_aware_mpi;      /* the MPI library says it takes device pointers */
    int nccl_version;        /* NCCL's version code, e.g. 22803; 0 when this build has no NCCL */
} tide_device_info;

/* Local. Filled on any context; on a CPU context device is -1 and the GPU fields are empty,
 * while cuda_aware_mpi and nccl_version still describe the build and the MPI library. */
TIDE_API int tide_context_device(const tide_context *ctx, tide_device_info *info);

/* How exchanges move data between ranks (plans, tide_measure_exchange). */
typedef enum {
    TIDE_EXCHANGE_AUTO = 0, /* pairwise when every rank talks to under half the others, else a2av */
    TIDE_EXCHANGE_A2AV = 1, /* MPI_Alltoallv */
    TIDE_EXCHANGE_P2P = 2,  /* MPI_Isend/Irecv per peer, packing pipelined with the transfers */
    TIDE_EXCHANGE_NCCL = 3, /* GPU data: NCCL grouped send/recv, GPU to GPU */
    TIDE_EXCHANGE_CUDA_MPI = 4, /* GPU data: MPI on device pointers (CUDA-aware MPI only) */
    TIDE_EXCHANGE_DIRECT = 5   /* GPU data, every rank on one node: each GPU stores its blocks
                                * straight into the receiving GPU's memory (CUDA IPC) */
} tide_exchange;
/* On a plan whose data is on the GPU (TIDE_LOCATION_DEVICE), AUTO picks NCCL when this build
 * has it and every rank has a GPU of its own, else CUDA-aware MPI when the MPI library says
 * it takes device pointers, else DIRECT where every rank uses one and the same GPU, else A2AV
 * or P2P through pinned host buffers, which is also what A2AV and P2P mean there. Packing and
 * unpacking run on the GPU in every case. */

/* Transfer rates of this rank's machine, in GB/s (1e9 bytes per second), the ceilings that
 * performance figures are compared against. Copies count bytes read plus bytes written;
 * transfers count bytes moved. */
typedef struct {
    double host_copy;  /* memcpy between two host arrays */
    double h2d, d2h;   /* pinned host memory to / from the device, one direction at a time */
    double both;       /* both directions at once, total of the two */
    double d2d;        /* copy within device memory */
} tide_rates;

/* Local. Moves arrays of `bytes` (0: 256 MiB) several times and reports the median. GPU
 * fields are 0 on a CPU context. Several ranks calling it at once are not in step: each
 * rank's repetitions overlap others' at random, so shared links are not measured under a
 * known load. */
TIDE_API int tide_measure_rates(tide_context *ctx, size_t bytes, tide_rates *rates);

/* Collective: the same measurements on every rank at once, each repetition started together
 * after a barrier, so links the ranks share (the host side of PCIe, memory) are measured
 * under the load of all of them; each rank gets its own rates. Errors are agreed. */
TIDE_API int tide_measure_rates_together(tide_context *ctx, size_t bytes, tide_rates *rates);

/* Collective. The all-to-all rate of an exchange backend, `bytes` per rank (the same on every
 * rank; 0: 64 MiB), `bytes / P` to each rank, median of 5 barrier-aligned repetitions after a
 * warm-up, the slowest rank counting. how: TIDE_EXCHANGE_AUTO or _A2AV (MPI_Alltoall) and _P2P
 * (MPI_Isend/Irecv with every peer at once) in host memory from tide_host_alloc; _NCCL
 * (grouped send/recv between the GPUs) and _CUDA_MPI (MPI_Alltoall) on device memory.
 * Reported in GB/s leaving each rank (the bytes it sends to other ranks over the time); 0
 * with one rank. Every rank gets the same figure. */
TIDE_API int tide_measure_exchange(tide_context *ctx, tide_exchange how, size_t bytes,
                                   double *gbps);

/* Host memory for arrays that Tide will move: on a CUDA context pinned (page-locked, so
 * transfers run at full PCIe rate and can overlap compute), on the CPU aligned to 64 bytes.
 * The pages are touched by the calling rank, which a CUDA context has bound near its GPU, so
 * they land on the NUMA node nearest it. Contents are zero. Local. Free with tide_host_free
 * on the same context. */
TIDE_API int tide_host_alloc(tide_context *ctx, size_t bytes, void **ptr);
TIDE_API int tide_host_free(tide_context *ctx, void *ptr);

/* Device memory of the rank's GPU (CUDA contexts only, else TIDE_ERR_UNSUPPORTED), for
 * plans with TIDE_LOCATION_DEVICE, and a copy between any two arrays (host or device), so
 * that C callers need no CUDA headers. Local. tide_copy returns once the copy is done. */
TIDE_API int tide_device_alloc(tide_context *ctx, size_t bytes, void **ptr);
TIDE_API int tide_device_free(tide_context *ctx, void *ptr);
TIDE_API int tide_copy(tide_context *ctx, void *dst, const void *src, size_t bytes);

/* The message of the last failed call on ctx (or, with ctx NULL, of the last failed call that
 * had no context, such as tide_context_create). Empty when nothing failed. Never NULL. */
TIDE_API const char *tide_last_error(const tide_context *ctx);

/* ---------------------------------------------------------------------------------------------
 * Boxes: a rank's piece of a global grid of n[0] x n[1] x n[2] points, dimension 0 being x.
 * lo is inclusive, hi exclusive. order lists the dimensions from slowest to fastest varying
 * in memory: {0,1,2} is C order (x slowest, z contiguous), {2,1,0} is Fortran order.
 * A box with lo[d] == hi[d] for some d is empty, which is legal (more ranks than planes).
 * ------------------------------------------------------------------------------------------- */
typedef struct {
    int lo[3];
    int hi[3];
    int order[3];
} tide_box;

/* Number of points in the box (0 when empty). */
TIDE_API long long tide_box_count(const tide_box *box);

/* A process grid for nranks: grid[d] ranks along dimension d, product = nranks. Only the
 * dimensions with split[d] != 0 are divided; among those the grid with the smallest total
 * face area (communication surface) wins. split = {1,0,0} gives slabs along x. */
TIDE_API int tide_proc_grid(int nranks, const int n[3], const int split[3], int grid[3]);

/* The box of `rank` in a grid[0] x grid[1] x grid[2] process grid over n (ranks numbered
 * with dimension 2 fastest). Dimension d is cut into balanced blocks: block i is
 * [i*n/g, (i+1)*n/g). Storage order C ({0,1,2}). */
TIDE_API int tide_box_in_grid(const int n[3], const int grid[3], int rank, tide_box *box);

/* Slabs: dimension split_dim cut over nranks. */
TIDE_API int tide_box_slab(const int n[3], int split_dim, int nranks, int rank, tide_box *box);
/* Pencils: whole along whole_dim, the other two dimensions cut over an automatic grid. */
TIDE_API int tide_box_pencil(const int n[3], int whole_dim, int nranks, int rank, tide_box *box);

/* ---------------------------------------------------------------------------------------------
 * Distributed 3D FFT plans.
 *
 * A plan maps data in the input boxes to data in the output boxes: forward transforms input to
 * output, backward output to input. For TIDE_R2C the input grid is real, n[0] x n[1] x n[2],
 * and the output grid is complex, n[0] x n[1] x (n[2]/2 + 1) (dimension 2 halved); backward is
 * then the c2r transform. Forward uses exp(-2 pi i jk/n), backward exp(+2 pi i jk/n).
 *
 * A batch of B fields is stored field after field: field f of a rank's input starts at element
 * f * tide_box_count(inbox).
 * ------------------------------------------------------------------------------------------- */
typedef struct tide_fft_plan tide_fft_plan;

typedef enum { TIDE_C2C = 0, TIDE_R2C = 1 } tide_fft_type;
typedef enum { TIDE_DOUBLE = 0, TIDE_FLOAT = 1 } tide_precision;

typedef enum {
    TIDE_SCALE_NONE = 0,     /* neither direction scaled: backward(forward(x)) = N x */
    TIDE_SCALE_FULL = 1,     /* backward scaled by 1/N: backward(forward(x)) = x */
    TIDE_SCALE_SYMMETRIC = 2 /* both scaled by 1/sqrt(N) */
} tide_scaling;

typedef enum {
    TIDE_LOCATION_HOST = 0,  /* arrays in host memory (with backend cuda they stream through the
                              * GPU in chunks that fit the context's device budget) */
    TIDE_LOCATION_DEVICE = 1 /* arrays in device memory of the rank's GPU (backend cuda) */
} tide_location;

typedef enum {
    TIDE_DECOMP_AUTO = 0,   /* slabs when P <= n[0] and P <= n[1], else pencils; with both
                             * boxes given, whichever needs fewer exchanges (the rule on ties).
                             * One rank: a single 3D transform, no exchange. */
    TIDE_DECOMP_SLABS = 1,  /* 2D FFTs on x-slabs, then 1D FFTs on y-slabs: one exchange with
                             * transposed output, two back to x-slabs */
    TIDE_DECOMP_PENCILS = 2 /* 1D FFTs on z-, y-, then x-pencils: two exchanges with transposed
                             * output, three back to z-pencils */
} tide_decomposition;

typedef enum {
    TIDE_PLAN_ESTIMATE = 0, /* FFTW_ESTIMATE: fast planning */
    TIDE_PLAN_MEASURE = 1   /* FFTW_MEASURE: slower planning, faster execution; on several
                             * ranks with decomposition AUTO, no boxes given and slabs possible,
                             * the plan also times slabs against pencils (a forward and backward
                             * pair; a Poisson plan: a solve) and keeps the faster (the slowest
                             * rank's time decides) */
} tide_planning;

typedef struct {
    size_t size;                        /* sizeof the struct: set by the init function; lets a
                                         * library built with a larger struct read an older
                                         * caller's struct */
    tide_fft_type type;                 /* default TIDE_C2C */
    tide_precision precision;           /* default TIDE_DOUBLE */
    tide_backend backend;               /* default AUTO: the context's backend */
    tide_decomposition decomposition;   /* default AUTO */
    tide_exchange exchange;             /* default AUTO */
    tide_scaling scaling;               /* default TIDE_SCALE_NONE */
    tide_planning planning;             /* default TIDE_PLAN_ESTIMATE */
    int batch;                          /* fields per call, default 1 */
    int transposed_out;                 /* only with outbox NULL (else TIDE_ERR_ARGUMENT) */
    tide_location location;             /* default TIDE_LOCATION_HOST */
    void *stream;                       /* GPU: the caller's cudaStream_t the plan's work is
                                         * ordered after (and, with async, before); NULL
                                         * (default): the legacy default stream. Per rank:
                                         * not agreed between ranks */
    int async;                          /* GPU: 0 (default) complete when a call returns; 1
                                         * stream-ordered: may return before the work is
                                         * done, later work on `stream` runs after it */
} tide_fft_options;

TIDE_API void tide_fft_options_init(tide_fft_options *opts);

/*
 * Collective. n is the real-space grid size. inbox / outbox: this rank's boxes, any boxes that
 * tile the input (real for R2C) and output (complex) grids; each rank may choose its own
 * storage order. Either may be NULL on every rank:
 *   inbox NULL  -> the decomposition's first layout (x-slabs, or z-pencils), C order;
 *   outbox NULL -> the same decomposition of the output grid (natural layout), or, with
 *                  transposed_out, whatever layout the last 1D/2D FFT leaves (y-slabs or
 *                  x-pencils), which saves the final exchange (like FFTW_MPI_TRANSPOSED_OUT).
 * tide_fft_plan_boxes() tells which boxes were chosen. All validation, allocation and FFT
 * planning happen here; execution allocates no array (a plan streaming host arrays through the
 * GPU in chunks sizes its host bookkeeping, the chunks' transfer lists, in its first call and
 * keeps it for the later ones). opts may be NULL for defaults; a struct not filled by
 * tide_fft_options_init (its size unset) is TIDE_ERR_ARGUMENT on every rank.
 */
TIDE_API int tide_fft_plan_create(tide_context *ctx, const int n[3], const tide_box *inbox,
                                  const tide_box *outbox, const tide_fft_options *opts,
                                  tide_fft_plan **plan);

/* Local: frees the plan. NULL is accepted. */
TIDE_API int tide_fft_plan_destroy(tide_fft_plan *plan);

/* This rank's input and output boxes (either pointer may be NULL). */
TIDE_API int tide_fft_plan_boxes(const tide_fft_plan *plan, tide_box *inbox, tide_box *outbox);

typedef struct {
    long long in_count;      /* elements of one input field on this rank (real for R2C) */
    long long out_count;     /* elements of one output field on this rank (complex) */
    size_t in_bytes;         /* bytes of this rank's whole input (all fields) */
    size_t out_bytes;        /* bytes of this rank's whole output */
    size_t inplace_bytes;    /* bytes an array needs to be used as both in and out */
    size_t host_bytes;       /* work memory the plan holds in host memory */
    size_t pinned_bytes;     /* ... in pinned host memory */
    size_t device_bytes;     /* ... in device memory */
    int exchanges;           /* reshapes (all-to-all exchanges) per forward transform */
    int local_transforms;    /* local FFT passes per transform */
    double flops;            /* nominal flops of one transform of all fields: 5 N log2 N per
                              * field for c2c, 2.5 N log2 N for r2c */
    tide_backend backend;    /* backend the plan runs on */
    tide_exchange exchange;  /* exchange backend of the forward reshapes; AUTO when none */
    tide_decomposition decomposition; /* SLABS or PENCILS; AUTO for one rank (one 3D FFT) */
    tide_location location;  /* where the arrays live */
    int chunks;              /* host arrays on the GPU: chunks per pass (1: all at once) */
    int streams;             /* ... CUDA streams the pipeline runs on */
    int slots;               /* ... device slots (buffers) chunks rotate through */
    int round_trips;         /* ... times the data crosses PCIe each way per transform: 1 when
                              * it stays on the device between passes, 2 when it streams
                              * through host memory between them; 0 for device arrays */
} tide_fft_info;

TIDE_API int tide_fft_plan_info(const tide_fft_plan *plan, tide_fft_info *info);

/* What one transform of a plan does on this rank, summed over its steps: the figures a bound
 * is computed from (bytes over a link divided by the rate measured on that link). */
typedef struct {
    double flops;          /* local transforms (5 n log2 n per complex line of n points, half
                            * that for real ones) and scaling */
    double fft_bytes;      /* read plus written by the local transform passes, in the memory
                            * they run in (device memory on the GPU, host memory on the CPU) */
    double move_bytes;     /* read plus written by packing, unpacking and scaling */
    double exchange_bytes; /* sent to other ranks */
    double h2d_bytes;      /* host arrays on the GPU: host to device over PCIe */
    double d2h_bytes;      /* ... device to host */
    int exchanges;         /* reshapes (all-to-all exchanges) */
    int fft_passes;        /* local transform passes over the data */
    double cpu_seconds;    /* a solve streamed with the CPU's x transforms: their time,
                            * measured on a few planes when the plan was made; else 0 */
} tide_fft_cost;

/* Local. direction: -1 forward, +1 backward. */
TIDE_API int tide_fft_plan_cost(const tide_fft_plan *plan, int direction, tide_fft_cost *cost);

/* A one-line description of the plan's steps, e.g. "fft(y,z) > reshape[a2av] > fft(x)".
 * Writes at most len bytes including the terminating NUL. */
TIDE_API int tide_fft_plan_describe(const tide_fft_plan *plan, char *buf, size_t len);

/* Collective: every rank calls forward, or every rank backward (else TIDE_ERR_MISMATCH on
 * every rank). Forward: in holds the input boxes' data, out receives the output boxes' data.
 * in == out is an in-place transform (the array needs inplace_bytes). Out of place, in is
 * never modified. A pointer may be NULL only where its count on this rank is 0. Host arrays
 * may have any address their element type allows (a complex double at 8 mod 16); device
 * arrays, real ones too (cuFFT's rule), must be aligned to the complex element (16 bytes in
 * double precision, 8 in float), as cudaMalloc'd ones are, else TIDE_ERR_ARGUMENT. */
TIDE_API int tide_fft_forward(tide_fft_plan *plan, const void *in, void *out);
/* Collective. Backward: in holds output-box data, out receives input-box data.
 *
 * GPU execution: on a context with GPUs, every call (plan creation and destruction too) runs
 * with the context's GPU current and gives the calling thread its current device back. A
 * transform, whatever the plan's backend and array location, is ordered after all work the
 * caller queued on the plan's stream (the `stream` option; NULL: the legacy default stream)
 * before the call: pageable cudaMemcpy, kernels, copies. By default it is complete when it
 * returns. With `async`, a GPU plan on device arrays only enqueues its work and makes `stream`
 * wait for it: the caller synchronizes `stream` before reading the output on the host (an
 * exchange through host memory, host arrays and streamed plans still complete before the
 * call returns; a GPU failure of enqueued work shows at a later call or synchronization).
 * Work queued on the caller's other streams is not waited for. */
TIDE_API int tide_fft_backward(tide_fft_plan *plan, const void *in, void *out);

/* Local: the stream later calls of this plan order themselves after (see above); NULL is the
 * legacy default stream. Ignored on the CPU. */
TIDE_API int tide_fft_plan_set_stream(tide_fft_plan *plan, void *stream);

/* ---------------------------------------------------------------------------------------------
 * Poisson and Helmholtz solvers: lap(u) - alpha u = f on a uniform grid of n[0] x n[1] x n[2]
 * points with spacing h[d] along dimension d, for real f and u (float or double) distributed
 * over the ranks in boxes, in host or device memory. One call solves; a batch of B right-hand
 * sides is stored field after field, like the FFT's.
 *
 * Grid convention: along a periodic dimension point i sits at x = i h (the period is n h), the
 * vertex-centred grid of spectral codes. Along a bounded dimension (Neumann or Dirichlet
 * faces) the grid is cell-centred: n cells between faces at 0 and n h, point i at the cell
 * centre (i + 1/2) h. lap is the second-order 7-point finite-difference operator by default
 * (eigenvalues 2 (cos(2 pi k / n) - 1) / h^2 per periodic dimension), so the solution
 * satisfies the discrete equation to rounding; TIDE_EIGEN_SPECTRAL uses the exact eigenvalues
 * -(2 pi k' / (n h))^2 (k' the signed wavenumber) along the periodic dimensions instead: exact
 * for trigonometric polynomials; likewise -(pi k' / (n h))^2 along a bounded dimension solved
 * by a cosine or sine transform (below), k' = k (Neumann-Neumann), k + 1 (Dirichlet-Dirichlet)
 * or k + 1/2 (mixed faces).
 *
 * Bounded dimensions: a face holds the boundary condition on the face itself, through the
 * ghost value across it: u[-1] = u[0] on a Neumann face (zero normal derivative), u[-1] =
 * -u[0] on a Dirichlet face (zero value), likewise at the high face. Inhomogeneous values go
 * into f at the points next to the face: for a Dirichlet value g subtract 2 g / h^2, for a
 * Neumann face with outward normal derivative g subtract g / h. One dimension (bounded) may be
 * non-uniform: faces[d] gives its n[d] + 1 face positions
 * (increasing), the cells' centres midway; the operator is then the finite-volume one,
 * (flux(i + 1/2) - flux(i - 1/2)) / (width of cell i), each flux the difference of the
 * neighbouring centres over their distance (a Dirichlet face: the centre's value over half
 * the cell).
 *
 * Methods: with every dimension periodic, a 3D real FFT, the eigenvalue scaling and the
 * inverse transform. With bounded dimensions, one of them (the non-uniform one, else the last)
 * is solved along lines: one tridiagonal system per mode of the other two (Thomas' algorithm,
 * pivots in double precision even for float data). The periodic dimensions take a real FFT,
 * the other bounded ones (uniform cells) the cosine or sine transform whose basis meets their
 * faces: DCT-II for Neumann-Neumann, DST-II for Dirichlet-Dirichlet, DCT-IV for Neumann low and
 * Dirichlet high, DST-IV for the reverse (inverses DCT-III, DST-III, and themselves). Faces given
 * for two dimensions are TIDE_ERR_UNSUPPORTED. On the GPU (cuFFT has no real-to-real
 * transforms) each cosine or sine transform is one batched cuFFT transform between pre- and
 * post-processing kernels: a real FFT of the same length for types II and III (Makhoul), a
 * complex FFT of half the length for type IV of even length, of twice the length otherwise.
 *
 * Singular problems (alpha = 0 with no Dirichlet face: every dimension periodic or bounded by
 * Neumann faces): lap(u) = f has a solution only when f has zero mean, and then one up
 * to a constant. Tide solves lap(u) = f - mean(f) and returns the u of zero mean (means
 * weighted by the cell widths along a non-uniform dimension); tide_poisson_mean() gives
 * mean(f) of each field of the last solve, so a caller can check how far f was from
 * compatible.
 * ------------------------------------------------------------------------------------------- */
typedef struct tide_poisson_plan tide_poisson_plan;

typedef enum {
    TIDE_BC_PERIODIC = 0,  /* both faces of the dimension */
    TIDE_BC_NEUMANN = 1,   /* zero normal derivative on the face */
    TIDE_BC_DIRICHLET = 2  /* zero value on the face */
} tide_bc;

typedef enum {
    TIDE_EIGEN_FD2 = 0,     /* second-order finite differences (the 7-point Laplacian) */
    TIDE_EIGEN_SPECTRAL = 1 /* the continuous Laplacian's eigenvalues */
} tide_eigen;

/* Host arrays on the GPU backend. Copied whole, they cross PCIe once each way and the solve
 * runs in device memory. Streamed, chunks of them pass through the GPU while the next ones
 * travel, needing no more device memory than the budget, by one of two schemes: every
 * transform on the GPU in three passes, so the data crosses PCIe three times each way (the
 * outer transforms, the middle pass with the operator between the inner transforms, the
 * inverse outer ones), ranks holding slabs along x (y when y is the dimension solved along
 * lines, or when x is the only periodic one) in C order; or (one rank, x periodic) the CPU
 * doing the x transforms before and after one pass through the GPU, so the data crosses PCIe
 * once each way while the CPU transforms it twice. */
typedef enum {
    TIDE_OOC_AUTO = 0,        /* copied whole when the solve fits the context's device
                               * budget, else streamed by the scheme predicted faster from the
                               * CPU's x transform time and the PCIe rate, measured then */
    TIDE_OOC_STREAM = 1,      /* streamed, every transform on the GPU, whatever the budget
                               * (needs the GPU backend, host arrays, slabs) */
    TIDE_OOC_STREAM_CPU_X = 2 /* streamed, the CPU doing the x transforms (needs as much, one
                               * rank and x periodic) */
} tide_out_of_card;

typedef struct {
    size_t size;                      /* sizeof the struct: set by the init function */
    tide_precision precision;         /* default TIDE_DOUBLE */
    tide_backend backend;             /* default AUTO: the context's backend */
    tide_location location;           /* default TIDE_LOCATION_HOST */
    tide_decomposition decomposition; /* of the transforms, default AUTO (tide_fft_options) */
    tide_exchange exchange;           /* default AUTO */
    tide_planning planning;           /* default TIDE_PLAN_ESTIMATE */
    int batch;                        /* right-hand sides per call, default 1 */
    tide_bc bc[3][2];                 /* per dimension, low and high face; default periodic */
    double h[3];                      /* grid spacing per dimension, > 0; default 1 */
    double alpha;                     /* Helmholtz shift, >= 0; default 0 (Poisson) */
    tide_eigen eigen;                 /* default TIDE_EIGEN_FD2 */
    void *stream;                     /* GPU: the caller's cudaStream_t a solve is ordered
                                       * after (tide_fft_options); per rank */
    const double *faces[3];           /* a non-uniform bounded dimension d: its n[d] + 1 face
                                       * positions, increasing (h[d] is then unused); NULL:
                                       * uniform (the default). The same values on every rank */
    tide_out_of_card out_of_card;     /* host arrays on the GPU: default AUTO */
} tide_poisson_options;

TIDE_API void tide_poisson_options_init(tide_poisson_options *opts);

/* Collective. n: the grid; box: this rank's box of f and u (any boxes that tile the grid, each
 * rank its own storage order), or NULL on every rank for the solver's choice (x-slabs, or
 * z-pencils when there are more ranks than planes, C order; with z bounded, y-pencils and y
 * stored fastest; tide_poisson_plan_box tells). Validation, allocation and FFT planning happen
 * here. opts may be NULL for defaults; a struct not
 * filled by tide_poisson_options_init is TIDE_ERR_ARGUMENT on every rank. */
TIDE_API int tide_poisson_plan_create(tide_context *ctx, const int n[3], const tide_box *box,
                                      const tide_poisson_options *opts, tide_poisson_plan **plan);

/* Local: frees the plan. NULL is accepted. */
TIDE_API int tide_poisson_plan_destroy(tide_poisson_plan *plan);

/* This rank's box of f and u. */
TIDE_API int tide_poisson_plan_box(const tide_poisson_plan *plan, tide_box *box);

typedef struct {
    long long count;         /* points of one field on this rank */
    size_t bytes;            /* bytes of this rank's f (all fields); u is the same size */
    size_t host_bytes;       /* work memory the plan holds in host memory */
    size_t pinned_bytes;     /* ... in pinned host memory */
    size_t device_bytes;     /* ... in device memory */
    int exchanges;           /* all-to-all exchanges per solve */
    int passes;              /* local passes over the data per solve: transforms and the
                              * spectral scaling where it is a pass of its own */
    int fused_scaling;       /* 1: the eigenvalue scaling runs inside the forward transform,
                              * as it stores its output (the GPU, double precision: cuFFT's
                              * store callback, where the plan's last forward transform is one
                              * cuFFT call over its box), not as a pass of its own */
    int singular;            /* 1: alpha = 0 with every dimension periodic or Neumann on
                              * both faces (see above) */
    double flops;            /* nominal flops of one solve of all fields: the forward and
                              * inverse real transforms, 2.5 N log2 M each per field (M the
                              * points they transform at once: N, or N / n of the bounded
                              * dimension), and 8 N for the tridiagonal solves */
    tide_backend backend;
    tide_decomposition decomposition;
    tide_exchange exchange;
    tide_location location;
    int round_trips;         /* GPU, host arrays: times the data crosses PCIe each way per
                              * solve (1 copied whole or streamed with the CPU's x
                              * transforms, 3 streamed; 0 otherwise) */
    int cpu_transforms;      /* streamed: the CPU does the x transforms (tide_out_of_card) */
    int chunks;              /* GPU, host arrays: chunks per pass (streamed: the most of any
                              * pass; 1 copied whole), else 0 */
} tide_poisson_info;

TIDE_API int tide_poisson_plan_info(const tide_poisson_plan *plan, tide_poisson_info *info);

/* What one solve does on this rank (the figures a bound is computed from): the fields of
 * tide_fft_cost, summed over the solve's steps. */
TIDE_API int tide_poisson_plan_cost(const tide_poisson_plan *plan, tide_fft_cost *cost);

/* A one-line description of the solve's steps, e.g.
 * "fft(y,z) > reshape[a2av] > fft(x) > eigen > fft(x) > reshape[a2av] > fft(y,z)". */
TIDE_API int tide_poisson_plan_describe(const tide_poisson_plan *plan, char *buf, size_t len);

/* Collective. f: this rank's right-hand side(s) in its box; u receives the solution(s). f == u
 * solves in place; out of place, f is never modified. Arrays as for tide_fft_forward (host or
 * device memory as the plan's location says; device arrays aligned to the complex element).
 * The solve is ordered after the caller's earlier work on the plan's stream and complete on
 * return. */
TIDE_API int tide_poisson_solve(tide_poisson_plan *plan, const void *f, void *u);

/* Local: the mean of each field of f in the last solve (batch values; all ranks have them).
 * In a singular problem that mean was removed from f before solving. */
TIDE_API int tide_poisson_mean(const tide_poisson_plan *plan, double *mean);

/* Local: the stream later solves order themselves after; NULL: the legacy default stream. */
TIDE_API int tide_poisson_plan_set_stream(tide_poisson_plan *plan, void *stream);

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

/* ---------------------------------------------------------------------------------------------
 * Band matrices: x <- A^steps x for a real n x n band matrix A with kl diagonals below the main
 * one and ku above it (each 0 .. TIDE_BAND_MAX_BANDWIDTH), float or double, x in host or
 * device memory.
 *
 * Rows: every rank owns the contiguous rows [lo, hi) of A and of x; the ranks' ranges tile
 * 0 .. n in any order (empty ranges, lo == hi, allowed), else TIDE_ERR_BOX on every rank.
 *
 * The matrix is given once, at plan creation (option diagonals: host memory, read only there;
 * the plan keeps its own copy), each rank its own rows, stored diagonal-major as the user
 * holds them: with rows = hi - lo, for d = -kl .. ku and local row i = 0 .. rows - 1,
 *     A(lo + i, lo + i + d) = diagonals[(d + kl) * rows + i],
 * in the plan's precision. Entries whose column lo + i + d lies outside 0 .. n - 1 are never
 * read (they may hold anything, NaN included).
 *
 * Arithmetic: one step sets y(i) to acc after acc = 0 and, for j = i - kl .. i + ku in
 * increasing order with 0 <= j < n, acc = fma(A(i, j), x(j), acc) (one fused multiply-add per
 * term, so the first term is a correctly rounded product), in the plan's precision. Every
 * backend, every number of steps per pass and every rank count does exactly this, so results
 * are bitwise the same everywhere.
 *
 * Steps are fused: a pass does up to steps_per_pass steps over the memory x lives in
 * (temporal blocking; on the GPU inside one kernel, through shared memory). Before each pass a
 * rank receives a halo of steps_per_pass * kl rows above its rows and steps_per_pass * ku rows
 * below them (clipped to the matrix) from the ranks that own them, one exchange per pass; each
 * step recomputes a range that shrinks by kl rows at the top and ku at the bottom, so after the
 * pass this rank's rows are exactly those of one rank.
 *
 * Out of card (one rank, host x, with backend cuda when x's rows, the matrix and the work
 * arrays exceed the device budget, or with option slab_rows): each pass sends x and A through
 * the device in slabs of rows, each level of the pass one step on the slab, the rows a level
 * needs from the slab before kept on the device (Jin 2014's slab-and-border scheme): every
 * row goes up once and down once per pass, with the same bits.
 * ------------------------------------------------------------------------------------------- */
typedef struct tide_band_plan tide_band_plan;

enum {
    TIDE_BAND_MAX_BANDWIDTH = 64, /* the most diagonals below (kl) or above (ku) the main one */
    TIDE_BAND_MAX_STEPS = 1 << 16 /* the most steps option steps_per_pass may ask for */
};

typedef struct {
    size_t size;              /* sizeof the struct: set by the init function */
    tide_precision precision; /* default TIDE_DOUBLE: of x and the diagonals */
    tide_backend backend;     /* default AUTO: the context's backend */
    tide_location location;   /* where x lives; default TIDE_LOCATION_HOST */
    int kl, ku;               /* diagonals below and above the main one, 0 ..
                               * TIDE_BAND_MAX_BANDWIDTH; default 1 and 1 */
    const void *diagonals;    /* this rank's rows of A, diagonal-major (above), host memory;
                               * read during tide_band_plan_create only; NULL is
                               * TIDE_ERR_ARGUMENT unless the rank has no rows */
    int steps_per_pass;       /* steps a pass fuses, at most TIDE_BAND_MAX_STEPS (the GPU's
                               * kernel fewer: its shared memory); 0 (default): the plan's
                               * choice (tide_band_info tells) */
    void *stream;             /* GPU: the caller's cudaStream_t runs are ordered after
                               * (tide_fft_options); per rank */
    int slab_rows;            /* one rank, host x: each pass sends x and A through the
                               * backend's memory in slabs of this many rows (out of card,
                               * Jin 2014's slab-and-border scheme; on the CPU the same
                               * passes, for testing); 0 (default): in card where the
                               * arrays fit the device budget, else slabs as large as it
                               * allows; ignored on several ranks and for device arrays */
} tide_band_options;

TIDE_API void tide_band_options_init(tide_band_options *opts);

/* Collective. n: the matrix's rows (at least 1); [lo, hi): this rank's rows. All validation
 * and allocation happen here: n, the options (but the diagonals) and the range's tiling agreed
 * across ranks, the same error on every rank. opts may be NULL for defaults on a rank with no
 * rows (a rank with rows needs its diagonals); a struct not filled by tide_band_options_init is
 * TIDE_ERR_ARGUMENT on every rank. */
TIDE_API int tide_band_plan_create(tide_context *ctx, int n, int lo, int hi,
                                   const tide_band_options *opts, tide_band_plan **plan);

/* Local: frees the plan. NULL is accepted. */
TIDE_API int tide_band_plan_destroy(tide_band_plan *plan);

typedef struct {
    int lo, hi;              /* this rank's rows */
    size_t bytes;            /* bytes of this rank's x */
    size_t host_bytes;       /* memory the plan holds in host memory (the matrix on the CPU) */
    size_t pinned_bytes;     /* ... in pinned host memory (the halo's staging on the GPU) */
    size_t device_bytes;     /* ... in device memory (the matrix and x's two arrays) */
    int kl, ku;
    int steps_per_pass;      /* steps a pass fuses, the same on every rank */
    double flops;            /* per step on this rank: 2 per matrix entry of its rows */
    double bytes_per_step;   /* per step on this rank, unfused: x read and written and the
                              * diagonals read (the bound's measure) */
    tide_backend backend;
    tide_location location;
    long long halo_rows;     /* rows this rank receives per exchange (one per pass); 0 on one
                              * rank */
    long long exchanges;     /* the last run: the halo exchanges it made (one per pass on
                              * several ranks) */
    double halo_seconds;     /* ... and the seconds this rank spent in them */
    int slabs;               /* out of card: the slabs each pass sends through the backend's
                              * memory; 0 in card */
    int slab_rows;           /* ... and the rows of each (the last may have fewer) */
} tide_band_info;

TIDE_API int tide_band_plan_info(const tide_band_plan *plan, tide_band_info *info);

/* A one-line description, e.g. "band kl 2 ku 3 double cpu: halo 16+24 > band[8 steps]". */
TIDE_API int tide_band_plan_describe(const tide_band_plan *plan, char *buf, size_t len);

/* Collective. x <- A^steps x: x is this rank's rows (hi - lo elements, in place), steps >= 0
 * the same on every rank (else TIDE_ERR_MISMATCH on every rank, x unchanged). Host or device
 * memory as the plan's location says. Ordered after the caller's earlier work on the plan's
 * stream and complete on return. */
TIDE_API int tide_band_run(tide_band_plan *plan, void *x, long long steps);

/* Local: the stream later runs order themselves after; NULL: the legacy default stream. */
TIDE_API int tide_band_plan_set_stream(tide_band_plan *plan, void *stream);

/* ---------------------------------------------------------------------------------------------
 * Matrix multiply: C = alpha op(A) op(B) + beta C, with op(A) m x k, op(B) k x n and C m x n,
 * real or complex matrices (float or double) in host or device memory, as the BLAS's xGEMM
 * defines it (SGEMM, DGEMM, CGEMM, ZGEMM): beta = 0 sets C to alpha op(A) op(B) without reading
 * C (NaN in C is ignored); k = 0 scales C by beta; m = 0 or n = 0 does nothing. Complex
 * elements are (real, imaginary) pairs of the precision, interleaved: C99's double complex,
 * C++'s std::complex<double>, Fortran's COMPLEX*16; op may then be the conjugate transpose.
 *
 * With the cuda backend on host matrices the product is computed out of card (Wu's scheme):
 * C is cut into tiles that stay on the device across the whole k loop, and the panels of A and
 * B each tile needs stream in through the pipeline engine while the GPU multiplies, so the
 * matrices may be far larger than the device budget. Tile and panel sizes come from the PCIe
 * and GEMM rates the plan measures (tide_gemm_info says what it chose and its bound). Host
 * matrices in pinned memory (tide_host_alloc) move at full PCIe rate; pageable ones are staged
 * through pinned buffers by CPU threads. The cpu backend calls the CPU BLAS (OpenBLAS).
 *
 * On a context of P > 1 ranks the matrices are distributed in 2D blocks over a process grid of
 * grid[0] x grid[1] ranks (rank r at row r / grid[1], column r % grid[1]); block i of an
 * extent n over p parts is [i n / p, (i + 1) n / p). The rank at (row, col) holds, of C, rows
 * block row of m over grid[0] and columns block col of n over grid[1]; of A, the same rows and
 * columns block col of k over grid[1]; of B, rows block row of k over grid[0] and C's columns
 * (each block stored in the plan's order with the rank's own leading dimension). The product is
 * SUMMA: panels of op(A) broadcast along process rows, panels of op(B) along process columns,
 * each rank's update a local multiply (the CPU BLAS, or on the cuda backend the out-of-card
 * multiply of the broadcast panels through the rank's GPU or GPUs, while the next panels'
 * broadcasts travel); a transposed operand's blocks are those of op(X) stored transposed.
 * Blocks in device memory (TIDE_LOCATION_DEVICE) are multiplied in card by cuBLAS, the panels
 * broadcast through pinned host memory (MPI; device memory is not handed to MPI).
 * ------------------------------------------------------------------------------------------- */
typedef struct tide_gemm_plan tide_gemm_plan;

/* op(X): X, X^T, or X^H (the conjugate transpose; on real matrices the same as X^T) */
typedef enum { TIDE_NOTRANS = 0, TIDE_TRANS = 1, TIDE_CONJTRANS = 2 } tide_transpose;
typedef enum { TIDE_REAL = 0, TIDE_COMPLEX = 1 } tide_domain;
typedef enum {
    TIDE_COL_MAJOR = 0, /* element (i, j) at i + j * ld (Fortran, the BLAS) */
    TIDE_ROW_MAJOR = 1  /* element (i, j) at i * ld + j (C) */
} tide_matrix_order;

typedef struct {
    size_t size;                /* sizeof the struct: set by the init function */
    tide_precision precision;   /* default TIDE_DOUBLE */
    tide_backend backend;       /* default AUTO: the context's backend */
    tide_location location;     /* where A, B and C live; default TIDE_LOCATION_HOST */
    tide_matrix_order order;    /* of all three matrices; default TIDE_COL_MAJOR */
    tide_transpose transa, transb; /* op(A), op(B); default TIDE_NOTRANS */
    long long lda, ldb, ldc;    /* leading dimensions, at least the stored rows (column major)
                                 * or columns (row major) of each matrix (of this rank's block
                                 * on several ranks) and at least 1; 0 (default): exactly that;
                                 * per rank */
    int tile;                   /* cuda on host matrices: rows and columns of the C tiles kept
                                 * on the device; 0 (default): the plan's choice */
    int panel;                  /* ... columns of op(A) (rows of op(B)) per streamed panel
                                 * (one rank), or the most per broadcast (several ranks: the
                                 * streamed panels are then the plan's); 0 (default): the
                                 * plan's choice (on several ranks 256 on the cpu, 4096 on the
                                 * cuda backend) */
    int grid[2];                /* several ranks: the process grid, grid[0] x grid[1] = the
                                 * ranks; {0, 0} (default): the most square one */
    void *stream;               /* GPU: the caller's cudaStream_t runs are ordered after
                                 * (tide_fft_options); per rank */
    /* several ranks: the user's blocks, boundaries along each extent (NULL: balanced, block
     * i of n over p parts [i n / p, (i + 1) n / p)); each from 0 to the extent, never
     * decreasing, the same on every rank: blocks[0] C's and A's rows (grid[0] + 1 entries
     * over m), blocks[1] C's and B's columns (grid[1] + 1 over n), blocks[2] A's columns
     * (grid[1] + 1 over k), blocks[3] B's rows (grid[0] + 1 over k); read at plan creation */
    const long long *blocks[4];
    int gpus;                   /* host matrices on the GPU: how many GPUs this rank drives,
                                 * C's columns shared among them; 0 (default): where the
                                 * context chose the GPUs, the node's GPUs dealt among its ranks
                                 * (one rank on a node of four drives all four), else the
                                 * rank's own one; more than that is TIDE_ERR_ARGUMENT */
    int share_a;                /* several GPUs on host matrices: A uploaded once, each block by
                                 * one GPU, and copied between the GPUs (peer to peer, NVLink)
                                 * instead of read from host memory by each; 0 (default) where
                                 * the plan's model predicts it faster, 1 wherever the GPUs
                                 * reach each other and the plan keeps A whole on each, -1
                                 * never */
    tide_domain domain;         /* TIDE_REAL (default) or TIDE_COMPLEX elements */
} tide_gemm_options;

TIDE_API void tide_gemm_options_init(tide_gemm_options *opts);

/* Collective. m, n, k >= 0. All validation, allocation and rate measurement happen here. opts
 * may be NULL for defaults; a struct not filled by tide_gemm_options_init is TIDE_ERR_ARGUMENT
 * on every rank. */
TIDE_API int tide_gemm_plan_create(tide_context *ctx, long long m, long long n, long long k,
                                   const tide_gemm_options *opts, tide_gemm_plan **plan);

/* Local: frees the plan. NULL is accepted. */
TIDE_API int tide_gemm_plan_destroy(tide_gemm_plan *plan);

typedef struct {
    long long m, n, k;
    double flops;            /* of one multiply: 2 m n k, complex 8 m n k (a complex multiply
                              * and add being 8 real operations) */
    size_t host_bytes;       /* work memory the plan holds in host memory */
    size_t pinned_bytes;     /* ... in pinned host memory (staging for pageable matrices,
                              * allocated by the first run that needs it) */
    size_t device_bytes;     /* ... in device memory */
    /* cuda on host matrices (zero otherwise); on several ranks this rank's updates: the
     * shape of one broadcast panel's, the bytes and the bound of them all (its block's
     * flops 2 m n k over this rank's m and n, at rate_gemm) */
    long long tile_m, tile_n, panel; /* the largest C tile and op(A) panel */
    int tiles, panels;       /* C tiles, and panels per tile */
    int slots;               /* pipeline slots (transfers of one overlap the work of others) */
    double bytes_up;         /* host to device bytes of one multiply (beta != 0: C included) */
    double bytes_down;       /* device to host bytes of one multiply */
    double rate_up, rate_down, rate_both; /* measured PCIe rates, GB/s (tide_rates) */
    double rate_gemm;        /* measured in-card GEMM rate the tiles were sized with, GFLOP/s
                              * (of the plan's precision and domain) */
    double bound;            /* seconds: the largest of flops at rate_gemm, bytes_up at
                              * rate_up, bytes_down at rate_down and both at rate_both; with
                              * several GPUs the slowest GPU's (rate_gemm and the bytes are
                              * then the GPUs' sums, the PCIe rates the first GPU's) */
    int gpus;                /* GPUs the multiply runs on (0 on the CPU) */
    int shared_a;            /* 1 when A is uploaded once and copied between the GPUs (and
                              * bytes_up counts it once) */
    int grid[2];             /* the process grid the blocks are dealt over ({1, 1} on one
                              * rank) */
    tide_backend backend;
    tide_location location;
} tide_gemm_info;

TIDE_API int tide_gemm_plan_info(const tide_gemm_plan *plan, tide_gemm_info *info);

/* A one-line description, e.g. "gemm 1000x900x800 double NT col cuda host: 4 tiles of
 * 512x512, 2 panels of 512, 3 slots" ("complex double NC ..." for a complex plan whose op(B)
 * is the conjugate transpose). */
TIDE_API int tide_gemm_plan_describe(const tide_gemm_plan *plan, char *buf, size_t len);

/* Collective. C = alpha op(A) op(B) + beta C with the plan's shapes and leading dimensions
 * (alpha and beta rounded to the plan's precision; the same bits on every rank, else
 * TIDE_ERR_MISMATCH on every rank, C unchanged). A and B are only read; C may not overlap
 * them. Arrays in host or device memory as the plan's location says; a matrix without
 * elements may be NULL. Ordered after the caller's earlier work on the plan's stream and
 * complete on return. */
TIDE_API int tide_gemm_execute(tide_gemm_plan *plan, double alpha, const void *a, const void *b,
                               double beta, void *c);

/* Collective. The same with complex alpha and beta, {real, imaginary}: for a TIDE_COMPLEX plan
 * (tide_gemm_execute gives one real scalars); on a real plan their imaginary parts must be 0,
 * else TIDE_ERR_ARGUMENT on every rank. NULL alpha or beta is TIDE_ERR_ARGUMENT. */
TIDE_API int tide_gemm_execute_complex(tide_gemm_plan *plan, const double alpha[2], const void *a,
                                       const void *b, const double beta[2], void *c);

/* Local: the stream later runs order themselves after; NULL: the legacy default stream. */
TIDE_API int tide_gemm_plan_set_stream(tide_gemm_plan *plan, void *stream);

/* Collective: a plan made, executed once and destroyed (for a single multiply; a plan pays when
 * the same shapes are multiplied again, as it measures rates and allocates once). */
TIDE_API int tide_gemm(tide_context *ctx, long long m, long long n, long long k, double alpha,
                       const void *a, const void *b, double beta, void *c,
                       const tide_gemm_options *opts);

#ifdef __cplusplus
}
#endif
#endif /* TIDE_H */
