/*
 * stream.h: streamed programs (private). An operation on host arrays runs as passes through
 * the GPU: each pass cuts this rank's box of one layout into chunks along one dimension, and
 * the out-of-card pipeline engine (gpu/pipeline.h) uploads each chunk, runs the pass's ops on
 * it in device memory, and downloads the result, overlapping the three. A pass may move the
 * data to the other layout on the way (comm/chunked.h: over NCCL inside the pipeline, or over
 * MPI in host memory after it). Between passes the data waits in a pinned host array W, or,
 * when it fits the device budget (one rank), in device memory, so it crosses PCIe once each
 * way. The ops are the plan core's (program.h), one copy per pipeline slot, each bound to its
 * slot's stream; the operation says which ops a pass runs, the runner does the rest.
 */
#ifndef TIDE_STREAM_H
#define TIDE_STREAM_H

#include "program.h"

enum { TIDE_STREAM_SLOTS = 3, TIDE_STREAM_PASSES = 2, TIDE_PASS_OPS = 4 };

/* One pass. Its chunks have the full extent of layout `from` in every dimension but d, and
 * dimension 2 at its full extent (the complex rows of a real transform, real rows landing
 * padded); zin and zout say how much of dimension 2 the data it reads and writes has. */
typedef struct {
    int from, to;  /* the layouts it reads and writes (0 or 1); different: it moves the data */
    int d;         /* the dimension its chunks cut */
    int zin, zout;
} tide_pass_desc;

/* Makes the ops pass k of direction dir runs on every chunk, in place in device memory laid out
 * as cbox (a chunk's shape; the ops see only its extents), for one slot whose environment is e
 * (its stream): ops[0..*nops), at most TIDE_PASS_OPS. Raises *work to the FFT work area they
 * need. Returns 0 or a code with the reason in err. */
typedef int (*tide_pass_ops)(void *user, int dir, int k, const tide_env *e,
                             const tide_box *cbox, tide_op *ops, int *nops, size_t *work,
                             char *err, size_t len);

typedef struct {
    const tide_env *env;       /* the plan's: context, the CUDA backend, nccl (NULL: MPI) */
    const tide_box *layout[2]; /* every rank's boxes of the two layouts (C order), dimension 2
                                * at the chunks' extent */
    size_t elem;               /* bytes per transferred element */
    int batch;                 /* fields, one after the other on each side */
    tide_pass_desc pass[2][TIDE_STREAM_PASSES]; /* [0 forward, 1 backward][k] */
    tide_pass_ops make_ops;
    void *user;
    size_t budget;             /* device bytes the runner may hold */
    int resident;              /* keep the data on the device between passes when it fits */
} tide_stream_desc;

typedef struct tide_stream tide_stream;

/* Local: chunk sizes for the budget, the ops of every slot, the pipeline, pinned and device
 * work memory. Returns 0 or a code with the reason in err. */
int tide_stream_create(const tide_stream_desc *d, tide_stream **out, char *err, size_t len);
void tide_stream_destroy(tide_stream *s);

typedef struct {
    int chunks;             /* per pass, the larger pass */
    int slots;
    int resident;           /* the data stays on the device between passes */
    size_t device_bytes, pinned_bytes;
} tide_stream_shape;
void tide_stream_shape_of(const tide_stream *s, tide_stream_shape *sh);

/* Collective: direction dir (0 or 1) from in (laid out as the first pass's `from` layout) to
 * out (the last pass's `to`); field f at f * (one field's count) on each side; in == out
 * allowed. After a failure it still takes part in every exchange. Returns 0 or a code with the
 * reason in err. Writes nothing but the arrays and the engine's scratch. */
int tide_stream_execute(const tide_stream *s, int dir, const void *in, void *out, char *err,
                        size_t len);

#endif
