/*
 * tide.h: the public C API of Tide: distributed 3D FFTs, FFT-based Poisson solvers,
 * temporal-blocked stencils, band matrix powers and matrix multiplies on MPI ranks. This file
 * holds what every operation shares (the status codes, the context, boxes and memory); each
 * operation's plans are in a header of their own (tide_fft.h, tide_poisson.h, tide_stencil.h,
 * tide_band.h, tide_gemm.h), included at the end, so a program includes tide.h alone.
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
/* On a plan whose data is on the GPU (TIDE_LOCATION_DEVICE), AUTO picks DIRECT where every
 * rank runs on one node and every rank's GPU reaches every other's (peer access, or the same
 * GPU), else NCCL when this build has it and every rank has a GPU of its own, else CUDA-aware
 * MPI when the MPI library says it takes device pointers, else A2AV or P2P through pinned host
 * buffers, which is also what A2AV and P2P mean there. Packing and unpacking run on the GPU in
 * every case. */

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
 * (grouped send/recv between the GPUs), _CUDA_MPI (MPI_Alltoall) and _DIRECT (each GPU
 * storing into the others' memory with the exchanges' store kernel, CUDA IPC; every rank on
 * one node, each GPU reaching every other) on device memory.
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

#ifdef __cplusplus
}
#endif

/* The operations (each header included here; include tide.h alone). */
#include "tide_fft.h"
#include "tide_poisson.h"
#include "tide_stencil.h"
#include "tide_band.h"
#include "tide_gemm.h"

#endif /* TIDE_H */
