/*
 * tide_fft.h: distributed 3D FFT plans: one part of Tide's public C API.
 * A program includes tide.h, which includes this header after the context, the boxes and
 * the status codes it uses.
 */
#ifndef TIDE_FFT_H
#define TIDE_FFT_H

#include "tide.h"

#ifdef __cplusplus
extern "C" {
#endif

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
    int arrays_kept;                    /* device arrays: 1 promises that every array passed
                                         * to the plan's calls stays allocated until the plan
                                         * is destroyed, so that where the ranks' GPUs store
                                         * into each other's memory (direct stores) the peers
                                         * store straight into the caller's output, with no
                                         * unpack; default 0. Per rank */
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

#ifdef __cplusplus
}
#endif
#endif /* TIDE_FFT_H */
