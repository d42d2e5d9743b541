/*
 * plan/streamed.h: streamed programs (private). An operation on host arrays runs as passes through
 * the GPU: each pass cuts this rank's box of one layout into chunks along one dimension, and
 * out-of-card runner (runner.h) uploads each chunk, runs the pass's ops on
 * it in device memory, and downloads the result, overlapping the three. A pass may move the
 * data to another layout on the way (comm/chunked.h: over NCCL inside the pipeline, or over
 * MPI in host memory after it). Between passes the data waits in pinned host arrays W, or,
 * when it fits the device budget (one rank, two passes), in device memory, so it crosses PCIe
 * once each way. The ops are the plan core's (program.h), one copy per runner slot, each
 * bound to its slot's stream; the operation says which ops a pass runs, the runner does the
 * rest. A direction of a program has two passes (a transform) or three (a solve: the outer
 * transforms, the middle pass with the operator between them, the outer inverses).
 */
#ifndef TIDE_STREAMED_H
#define TIDE_STREAMED_H

#include "plan/program.h"

enum { TIDE_STREAM_SLOTS = 3, TIDE_STREAM_PASSES = 3, TIDE_STREAM_LAYOUTS = 4, TIDE_PASS_OPS = 4 };

/* One pass. Its chunks have the full extent of layout `from` in every dimension but d, and
 * dimension 2 at its full extent (the complex rows of a real transform, real rows landing
 * padded); zin and zout say how much of dimension 2 the data it reads and writes has. An
 * in-place pass (src < 0) reads layout `from` too, its chunks in one device buffer. An
 * out-of-place pass reads layout src (cut along d like `from`, its chunks in a buffer of their
 * own) and its ops write the chunk of `from` in a second buffer: a real transform along a
 * dimension other than the fastest changes the data's shape. */
typedef struct {
    int from, to;  /* the layouts its results have and go to; different: it moves the data */
    int d;         /* the dimension its chunks cut */
    int zin, zout;
    int src;       /* the layout it reads, or -1: `from` (in place) */
    int host;      /* the CPU runs it over the rank's whole box, no chunks, with the CPU
                    * backend's ops (the pipeline idle); one rank */
} tide_pass_desc;

/* Makes the ops pass k of direction dir runs on every chunk, in device memory laid out as in
 * (the chunk it reads) and out (the chunk of its results; the same box and buffer in place):
 * chunk shapes at the rank's first chunk; FFTs see only their extents. An op reads and writes
 * the chunk buffers its src and dst say: 0 the input chunk, 1 the output chunk (both 0 in
 * place). For pipeline slot `slot` (slot 0 first) whose environment is e (its stream):
 * ops[0..*nops), at most TIDE_PASS_OPS. Raises *work to the FFT work area they need. A host
 * pass's ops: made once (slot 0) with the CPU backend's environment, on the rank's whole
 * boxes of its arrays (in, out), src and dst 0 the pass's input array, 1 its output array;
 * FFTs planned for any arrays (user_memory). Returns 0 or a code with the reason in err. */
typedef int (*tide_pass_ops)(void *user, int dir, int k, int slot, const tide_env *e,
                             const tide_box *in, const tide_box *out, tide_op *ops, int *nops,
                             size_t *work, char *err, size_t len);

/* NULL, or called before the ops of every chunk that has points, with the chunk's points
 * (region, global indices on layout `from`'s grid), its buffer's layout (chunk) and the field,
 * for ops whose work depends on where the chunk lies (a solve's operator, whose tables are
 * indexed by global indices). It may change what the ops point to, not the ops. */
typedef void (*tide_pass_chunk)(void *user, int dir, int k, int field, const tide_box *region,
                                const tide_box *chunk, const tide_op *ops, int nops);

typedef struct {
    const tide_env *env;       /* the plan's: context, the CUDA backend, nccl (NULL: MPI) */
    const tide_box *layout[TIDE_STREAM_LAYOUTS]; /* every rank's boxes of each layout (C
                                * order), dimension 2 at the chunks' extent */
    size_t elem;               /* bytes per transferred element */
    int batch;                 /* fields, one after the other on each side */
    int ndirs, npasses;        /* directions (1 or 2) and passes per direction (2 or 3) */
    tide_pass_desc pass[2][TIDE_STREAM_PASSES]; /* [direction][k] */
    tide_pass_ops make_ops;
    tide_pass_chunk chunk;
    void *user;                /* passed to both; user_bytes of it are copied into the stream
                                * (0: passed as is, to make_ops alone) */
    size_t user_bytes;
    size_t budget;             /* device bytes the runner may hold */
    int resident;              /* keep the data on the device between passes when it fits
                                * (two passes) */
} tide_streamed_desc;

typedef struct tide_streamed tide_streamed;

/* Local: chunk sizes for the budget, the ops of every slot, the runner, pinned and device
 * work memory. Returns 0 or a code with the reason in err. */
int tide_streamed_create(const tide_streamed_desc *d, tide_streamed **out, char *err, size_t len);
void tide_streamed_destroy(tide_streamed *s);

typedef struct {
    int chunks;             /* per pass, the larger pass */
    int slots;
    int resident;           /* the data stays on the device between passes */
    int trips;              /* times the data crosses PCIe each way: the passes through the
                             * GPU (1 resident) */
    size_t device_bytes, pinned_bytes;
} tide_streamed_shape;
void tide_streamed_shape_of(const tide_streamed *s, tide_streamed_shape *sh);

/* Bytes one execution of direction dir moves over PCIe on this rank, every field: each pass
 * through the GPU uploads its input and downloads its results (resident: the first only up,
 * the last only down). */
void tide_streamed_transfers(const tide_streamed *s, int dir, double *up, double *down);

/* The ops of pass k of direction dir, as "fft(x) > eigen > fft(x)". */
void tide_streamed_describe_pass(const tide_streamed *s, int dir, int k, char *buf, size_t len);

/* Collective: direction dir (0 or 1) from in (laid out as the layout the first pass reads) to
 * out (the last pass's `to`); field f at f * (one field's count) on each side; in == out
 * allowed. After a failure it still takes part in every exchange. Returns 0 or a code with the
 * reason in err. Writes nothing but the arrays and the engine's scratch. */
int tide_streamed_execute(const tide_streamed *s, int dir, const void *in, void *out, char *err,
                        size_t len);

#endif
