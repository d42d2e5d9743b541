/*
 * core/core.h: what the src/ files share (private; never installed).
 */
#ifndef TIDE_INTERNAL_H
#define TIDE_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include "tide.h"

enum { TIDE_MSG_LEN = 512 };
enum { TIDE_LOG_WARN = 1, TIDE_LOG_INFO = 2, TIDE_LOG_DEBUG = 3 };

struct tide_context {
    MPI_Comm comm;       /* duplicated from the user's; errors return instead of aborting */
    MPI_Comm node_comm;  /* ranks sharing this node's memory */
    int rank, nranks, local_rank, local_size;
    tide_backend backend;            /* resolved: CPU or CUDA */
    char backend_reason[TIDE_MSG_LEN]; /* why a GPU is not used, when it is not */
    int threads;
    tide_device_info dev;  /* the GPU in use (device -1 on the CPU backend) */
    int dev_sharers;       /* ranks of this node (this context) using the same GPU, this one
                            * included; 0 without a GPU */
    int dev_auto;          /* the GPU was the library's choice (device option AUTO) */
    int bound_near;        /* the library bound the process near its GPU (not the launcher) */
    int nccl_usable;       /* CUDA, NCCL built in, and every rank has a GPU of its own */
    int cuda_aware_mpi;    /* every rank's MPI library takes device pointers */
    int dev_reaches;       /* this rank's GPU reaches those of the others of its node (peer
                            * access, or the same GPU) */
    int gpus_reach;        /* CUDA, one node, and every rank's GPU reaches every other's */
    void *nccl[2];         /* tide_nccl *, made by the first plan that needs it: NCCL's
                            * choice of SMs, and the few of TIDE_NCCL_BESIDE_CTAS */
    tide_rates pcie;       /* this rank's GPU transfer rates, measured by the first plan that
                            * needs them (tide_context_pcie); pcie_known says it was */
    int pcie_known;
    int log_level;
    int fft_chunks;        /* TIDE_FFT_CHUNKS (agreed): the chunks of an FFT's exchange
                            * overlapped with its local transforms (plan/overlap.h); 0: none,
                            * -1: unset, the plan's choice; while a measured plan times a
                            * count, that count */
    int fft_engine;        /* TIDE_FFT_ENGINE (agreed): 1 the GPU's FFTs by Tide's plane pass
                            * where it takes them (gpu/fft_plane.h), 0 cuFFT alone, -1 unset
                            * (cuFFT; a measured plan times both); while a measured plan times
                            * one, that one */
    double progress_every; /* seconds between progress lines of long calls; 0: none
                            * (tide_context_set_progress) */
    int plans;             /* plans made from the context and not destroyed yet (changed
                            * atomically: plans may be made and freed on several threads) */
    char errmsg[TIDE_MSG_LEN];
};

/* A plan counts on its context from its create's success to its destroy, so that
 * tide_context_destroy refuses while any lives: hold sets *held, release undoes it where *held
 * is set (a plan its failed create frees was never counted) and clears it. */
void tide_context_hold(tide_context *ctx, int *held);
void tide_context_release(tide_context *ctx, int *held);

/* Record a failure (printf-style message) on ctx, or in the thread's context-free slot when
 * ctx is NULL, and return code. */
int tide_fail(tide_context *ctx, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Collective over ctx->comm: agree on a status. If any rank failed, every rank returns the
 * code of the lowest failing rank with its message, prefixed "rank R: ". */
int tide_agree(tide_context *ctx, int status);

/* Collective over ctx->comm, once every rank knows rank `first` (< nranks) failed: the status
 * and message of that rank, "rank R: "-prefixed, returned on every rank (tide_agree's end). */
int tide_agree_from(tide_context *ctx, int first, int status);

/* Local: the rank's pinned-host/device transfer rates (tide_rates' h2d, d2h, both, d2d),
 * measured with 64 MiB transfers by the first call on a CUDA context and kept. Returns 0 or a
 * code with the reason in err. */
int tide_context_pcie(tide_context *ctx, tide_rates *rates, char *err, size_t len);

/* Local: the GPUs this rank may drive by itself, devs[0] its own (ctx->dev.device): where
 * the library chose the GPUs and the node has more GPUs than ranks, the node's GPUs dealt
 * among its ranks (local rank i gets GPUs i, i + L, i + 2L, ... of the node's L ranks), else
 * its own one. want 0: all of them; want > 0: the first want, TIDE_ERR_ARGUMENT with the
 * reason in err when there are fewer. Returns the count (at most max) or a negative code. */
int tide_context_gpus(const tide_context *ctx, int want, int *devs, int max, char *err,
                      size_t len);

/* Rank-prefixed logging to stderr, filtered by TIDE_LOG=warn|info|debug. */
void tide_log(const tide_context *ctx, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A line of the same log tagged `tag`, whatever TIDE_LOG says (lines a caller asked for). */
void tide_log_line(const tide_context *ctx, const char *tag, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Progress of a long call (progress.c): on rank 0 of a context whose progress_every is set,
 * a line "CALL: 40% (4/10 UNIT), 12 s, about 18 s left" every progress_every seconds through
 * the log, none during the first ones, and a closing line where any was written. step takes
 * the units done so far. */
typedef struct {
    const tide_context *ctx;
    const char *call, *unit;
    long long total;
    double start, next, every;
    int on, shown;
} tide_progress;
void tide_progress_begin(tide_progress *p, const tide_context *ctx, const char *call,
                         const char *unit, long long total);
void tide_progress_step(tide_progress *p, long long done);
void tide_progress_end(tide_progress *p);

/* The process-wide lock FFTW's planner takes while it makes or destroys a plan (recursive;
 * context.c). Hold it around fftw_plan_with_nthreads and the planner calls that must use that
 * count: the count belongs to the planner, not to the thread. */
void tide_fftw_lock(void);
void tide_fftw_unlock(void);

/* Collective: the context's NCCL communicator, created on first use. beside: for exchanges
 * that run beside a kernel of the plan's own (the stencil's halos beside its sweep), whose
 * kernels take at most TIDE_NCCL_BESIDE_CTAS SMs: NCCL's default takes up to 32 for a
 * transfer of a few MB, which the kernel beside it needs more (measured on four H200: the
 * 7-point stencil's weak-scaling efficiency 0.838 with NCCL's choice, 0.876 with 2). Returns 0
 * or a code (with the message on ctx); the same on every rank. */
enum { TIDE_NCCL_BESIDE_CTAS = 2 };
int tide_context_nccl(tide_context *ctx, int beside, void **nccl);

/* Names for messages and the command line. */
const char *tide_backend_name(tide_backend b);
const char *tide_exchange_name(tide_exchange e);
const char *tide_decomposition_name(tide_decomposition d);


#endif
