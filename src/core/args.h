/*
 * args.h: argument agreement for collective create calls (private).
 *
 * Every rank describes what it asked for as a table of named integer fields and a few boxes;
 * the requests are gathered once, and every rank judges the same gathered data the same way,
 * so one rank's bad argument, or two ranks asking for different things, is the same error with
 * the same message everywhere, never a hang. An operation lists its fields (each must be equal
 * on every rank, within its valid range) and names its boxes (each given on every rank or on
 * none; given boxes must tile a grid).
 */
#ifndef TIDE_ARGS_H
#define TIDE_ARGS_H

#include "core/core.h"

enum { TIDE_ARGS_FIELDS = 24, TIDE_ARGS_REALS = 8, TIDE_ARGS_BOXES = 2, TIDE_ARGS_MSG = 200 };

/* A field every rank must give the same value, and its valid values lo..hi. */
typedef struct {
    const char *name;
    int lo, hi;
} tide_arg_field;

/* A real-valued field every rank must give the same value: lo < x <= hi (lo <= x <= hi with
 * closed); NaN is never valid. */
typedef struct {
    const char *name;
    double lo, hi;
    int closed;
} tide_arg_real;

typedef struct {
    const char *call;                /* the create call, for messages */
    const tide_arg_field *fields;
    int nfields;
    const tide_arg_real *reals;
    int nreals;
    const char *const *boxes;        /* box names ("input", "output") */
    int nboxes;
} tide_args_spec;

/* One rank's request. */
typedef struct {
    int status;                      /* a failure this rank found before the gather */
    char msg[TIDE_ARGS_MSG];
    int v[TIDE_ARGS_FIELDS];
    double x[TIDE_ARGS_REALS];
    int has[TIDE_ARGS_BOXES];        /* box k was given (not NULL) */
    tide_box box[TIDE_ARGS_BOXES];
} tide_args;

/* Local: records a failure in r unless it has one already. Returns r's status. */
int tide_args_fail(tide_args *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Local: the first field (integer, then real) outside its range becomes r's failure
 * (TIDE_ERR_ARGUMENT). */
void tide_args_check_ranges(const tide_args_spec *s, tide_args *r);

/* Collective: gathers every rank's request and judges it the same way on every rank: a local
 * failure (the lowest failing rank's, "rank R: ..."), then a field that differs between ranks,
 * then a box given on some ranks only. On success *all holds the P requests (free() it);
 * otherwise returns the agreed code with the message on ctx and *all is NULL. */
int tide_args_agree(tide_context *ctx, const tide_args_spec *s, const tide_args *mine,
                    tide_args **all);

/* Collective: the first entry of a[0..count) (elements of `elem` bytes of MPI type `type`,
 * MPI_DOUBLE compared as values, anything else as bytes) that differs between ranks, in *at
 * (-1: none), with its smallest and largest values over the ranks in *lo and *hi (elem bytes
 * each). Returns 0, or TIDE_ERR_NOMEM or TIDE_ERR_MPI agreed on every rank, the message on
 * ctx naming `call`. */
int tide_args_first_difference(tide_context *ctx, const char *call, const void *a, int count,
                               MPI_Datatype type, size_t elem, int *at, void *lo, void *hi);

/* Same verdict on every rank (no communication): box k of every rank is a valid tiling of
 * grid g: orders are permutations of {0,1,2}, boxes lie inside the grid, no two overlap, and
 * together they cover it (TIDE_ERR_BOX naming the rank, and the point of an overlap). */
int tide_args_check_tiling(tide_context *ctx, const tide_args_spec *s, const tide_args *all,
                           int k, const int g[3]);

/* A value among a call's arguments that every rank must give alike: an integer, or a real
 * compared bit for bit (so 0 and -0 differ, and a NaN equals only the same NaN). */
typedef struct {
    const char *name;                /* as the caller wrote it, for messages: "steps", "alpha" */
    long long v;                     /* the integer, or the real's bits */
    int real;
} tide_call_arg;

enum { TIDE_CALL_ARGS = 8 };

tide_call_arg tide_call_int(const char *name, long long v);
tide_call_arg tide_call_real(const char *name, double x);

/* Collective, the start of every execute, run and solve: one reduction carries this rank's
 * status (a failure it found in its own arguments, the message on ctx) and the n <=
 * TIDE_CALL_ARGS values args[] that must agree. Every rank returns the same verdict: the lowest
 * failing rank's status and message (tide_agree), else TIDE_ERR_MISMATCH naming `call` (NULL:
 * none) and the first value that differs between ranks with two of its values, else 0. */
int tide_agree_call(tide_context *ctx, const char *call, int status, const tide_call_arg *args,
                    int n);

/* Collective, first in a create call (`call`, for the message): makes the context's GPU
 * current, its previous device in *prev (tide_device_enter). A failure is the agreed failure
 * on every rank, with the previous device given back. */
int tide_create_enter(tide_context *ctx, const char *call, int *prev);

/* Whether a plan with option backend runs on the GPU (cuda, or auto on a context with GPUs). */
int tide_wants_cuda(const tide_context *ctx, int backend);

/* The same verdict on every rank (no communication): the agreed backend and location options
 * against what the context has (UNSUPPORTED: cuda on a CPU context, device arrays without a
 * GPU). */
int tide_args_backend(tide_context *ctx, int backend, int location);

/* Whether exchange x cannot serve a plan running on the GPU (cuda) or the CPU on this context
 * (1, the reason in why) or can (0): a GPU-to-GPU exchange on the CPU, NCCL without NCCL
 * usable, CUDA_MPI without a CUDA-aware MPI, DIRECT where the GPUs do not all reach each
 * other. The same answer on every rank (the context agreed what it has). */
int tide_exchange_unusable(const tide_context *ctx, int x, int cuda, char *why, size_t len);

/* The GPU-to-GPU exchange option AUTO takes for a GPU plan's device data on several ranks,
 * the same on every rank: DIRECT where direct (the plan takes direct stores) and every rank's
 * GPU reaches every other's, else NCCL where usable, else CUDA_MPI where the MPI takes device
 * pointers, else AUTO (staging through host memory, by the plan's own rule). */
tide_exchange tide_exchange_gpu_auto(const tide_context *ctx, int direct);

/* The same verdict on every rank (no communication): an agreed exchange option against what
 * the plan runs on and what the context has (tide_exchange_unusable: UNSUPPORTED). */
int tide_args_exchange(tide_context *ctx, int exchange, int cuda);

/* Local: "" when ptr (not NULL) lies where a plan's arrays live (device: device memory, else
 * host memory), or on a CPU context; else why not, e.g. "a host array to a plan whose arrays
 * are on the device" (a static, thread-local string). */
const char *tide_array_location(const tide_context *ctx, int device, const void *ptr);

/* A caller's options struct (opts, whose first member is its size_t size; NULL: defaults)
 * over the defaults in *o (size bytes, filled by the struct's init function): only the bytes
 * the caller's struct has, so members an older, shorter struct lacks keep their defaults; then
 * o's size is size. Returns 0 when opts was not filled by its init function: its size is below
 * first (the offset of the member after size) or absurd. */
int tide_options_read(const void *opts, void *o, size_t size, size_t first);

#endif
