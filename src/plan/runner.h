/*
 * plan/runner.h: the out-of-card runner (private), the one engine every operation on host
 * arrays larger than the device runs its passes on: the streamed FFT and Poisson programs
 * (plan/streamed.h), the stencil's slabs (stencil/stencil_streamed.h), the band matrix's slabs
 * (band/band_streamed.h) and the multiply's tiles (gemm/gemm_streamed.h).
 *
 * A runner is a pipeline (backend/pipeline.h) of `slots` slots, the operation's depth, and one
 * environment per slot: the plan's, on the slot's stream, with an FFT work area of its own. A
 * pass is a pipeline job's chunks and transfers (describe) and, for every chunk, the steps the
 * operation binds (steps): ops of the plan core (plan/program.h), each run from one device
 * address to another, in order, on the chunk's slot. The operation says what a chunk moves
 * and which ops it runs; the runner does the rest, running a chunk's steps through
 * tide_steps_run (plan/program.h) with the executor's failure rule: after a step fails, the
 * rank runs no local step of the pass again but still runs every collective one (a chunk's
 * exchange, with e->failed set), so no peer waits for it; a chunk with a collective step keeps
 * the run going (its peers' chunks still exchange), a run without one ends at the failure. The
 * run returns the first failure.
 *
 * On the CPU backend there is no pipeline: the runner keeps one set of the buffers in host
 * memory and runs the chunks one after another (each chunk's uploads copied in, its steps, its
 * downloads copied out), so an operation's out-of-card passes run there too, as the tests do.
 */
#ifndef TIDE_RUNNER_H
#define TIDE_RUNNER_H

#include "plan/program.h"
#include "backend/pipeline.h"

enum { TIDE_RUNNER_SLOTS = 4 }; /* the deepest pipeline an operation asks for */

typedef struct {
    const tide_env *env;     /* the plan's (a part's on another GPU: its own); the pipeline is
                              * made on the current GPU */
    int slots;               /* 1 .. TIDE_RUNNER_SLOTS: chunks in flight at once */
    int nbufs;               /* each slot's device buffers, of buf_bytes[b] bytes */
    const size_t *buf_bytes;
    int nresident;           /* buffers every slot shares, of resident_bytes[r] bytes */
    const size_t *resident_bytes;
    size_t stage_bytes;      /* pinned staging per slot and direction (0: the slot's buffers) */
    size_t fft_work;         /* bytes of each slot's FFT work area (0: none) */
    int max_steps;           /* the most steps a chunk binds */
} tide_runner_desc;

/* A pass. describe, uploaded and ended as the pipeline job's (pipeline.h), with user. */
typedef struct {
    int nchunks;
    size_t elem;
    int batch;
    int max_up, max_down;
    int (*describe)(void *user, int i, tide_xfer *up, int *nup, tide_xfer *down, int *ndown);
    /* Chunk i's steps on the slot's buffers buf (then the resident ones), through the slot's
     * environment e: steps[0..*n). Called for every chunk, after a failure too (e->failed set:
     * the runner then runs only the collective steps). Returns 0, or a code that counts as the
     * chunk's failure (its steps then do not run). */
    int (*steps)(void *user, int i, const tide_env *e, void *const *buf, tide_step *steps,
                 int *n);
    int (*uploaded)(void *user, int i, void *const *buf, void *stream);
    void (*ended)(void *user, int status);
    void *user;
    int ordered;             /* chunk i's steps start after chunk i - 1's have finished */
    int after_caller;        /* the run follows the work enqueued on caller_stream */
    void *caller_stream;
} tide_runner_pass;

typedef struct tide_runner tide_runner;

/* Local. Returns 0 or a code with the reason in err. */
int tide_runner_create(const tide_runner_desc *d, tide_runner **out, char *err, size_t len);
/* Waits for a started run first. */
void tide_runner_destroy(tide_runner *r);

/* Slot sl's environment (its stream and FFT work area), to bind FFT plans to once. */
const tide_env *tide_runner_env(const tide_runner *r, int sl);
/* Device pointer of resident buffer k. */
void *tide_runner_resident(const tide_runner *r, int k);
/* Device bytes (slot, resident buffers and FFT work areas; on the CPU its buffers in host
 * memory) and pinned bytes it holds. */
size_t tide_runner_device_bytes(const tide_runner *r);
size_t tide_runner_pinned_bytes(const tide_runner *r);
/* What the last successful run took (pipeline.h; TIDE_ERR_UNSUPPORTED on the CPU). */
int tide_runner_last_stats(const tide_runner *r, tide_pipeline_stats *s);

/* Runs every chunk of pass p (which must stay valid until the run ends); returns when the
 * last download has landed. Returns 0 or the first failure with the reason in err. */
int tide_runner_run(tide_runner *r, const tide_runner_pass *p, char *err, size_t len);
/* The same in two halves: start hands the run to the pipeline's thread (TIDE_ERR_ARGUMENT,
 * starting nothing, while a run has not been waited for); wait returns its status. */
int tide_runner_start(tide_runner *r, const tide_runner_pass *p);
int tide_runner_wait(tide_runner *r, char *err, size_t len);

#endif
