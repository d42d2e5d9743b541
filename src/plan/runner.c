/*
 * runner.c: the out-of-card runner (runner.h): the pipeline's work callback binds a chunk's
 * steps and runs them with the executor's failure rule.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "plan/runner.h"

struct tide_runner {
    tide_pipeline *pipe;
    int slots, max_steps;
    tide_env slot[TIDE_RUNNER_SLOTS];
    size_t fft_work;
    tide_step *steps;
    /* the run in flight */
    const tide_runner_pass *pass;
    tide_pipeline_job job;
    int busy;                /* started and not waited for */
    int status;              /* its first failure in a step or a binding */
    int chunk;               /* ... the chunk it came in */
    char what[40];           /* ... and the op that failed ("" a binding) */
};

int tide_runner_create(const tide_runner_desc *d, tide_runner **out, char *err, size_t len)
{
    *out = NULL;
    if (d->slots < 1 || d->slots > TIDE_RUNNER_SLOTS || d->max_steps < 1)
        return snprintf(err, len, "a runner of %d slots and %d steps a chunk", d->slots,
                        d->max_steps), TIDE_ERR_ARGUMENT;
    tide_runner *r = calloc(1, sizeof *r);
    if (r)
        r->steps = malloc((size_t)d->max_steps * sizeof *r->steps);
    if (!r || !r->steps) {
        free(r);
        return snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM;
    }
    r->slots = d->slots;
    r->max_steps = d->max_steps;
    r->fft_work = d->fft_work;
    tide_pipeline_config pc = {.nslots = d->slots, .nbufs = d->nbufs, .buf_bytes = d->buf_bytes,
                               .nresident = d->nresident, .resident_bytes = d->resident_bytes,
                               .stage_bytes = d->stage_bytes};
    int st = tide_pipeline_create_config(&pc, &r->pipe, err, len);
    for (int sl = 0; sl < d->slots && !st; sl++) {
        tide_env *e = &r->slot[sl];
        *e = *d->env;
        e->stream = tide_pipeline_stream(r->pipe, sl);
        e->fft_work = NULL;
        e->fft_work_bytes = d->fft_work;
        e->failed = 0;
        if (d->fft_work && e->be->alloc(d->fft_work, &e->fft_work))
            st = TIDE_ERR_NOMEM, snprintf(err, len, "cannot allocate an FFT work area of %zu "
                                          "bytes: %s", d->fft_work, e->be->last_error());
    }
    if (st) {
        tide_runner_destroy(r);
        return st;
    }
    *out = r;
    return TIDE_SUCCESS;
}

void tide_runner_destroy(tide_runner *r)
{
    if (!r)
        return;
    tide_pipeline_destroy(r->pipe); /* waits for a started run */
    for (int sl = 0; sl < r->slots; sl++)
        if (r->slot[sl].fft_work)
            r->slot[sl].be->free(r->slot[sl].fft_work);
    free(r->steps);
    free(r);
}

const tide_env *tide_runner_env(const tide_runner *r, int sl) { return &r->slot[sl]; }

void *tide_runner_resident(const tide_runner *r, int k)
{
    return tide_pipeline_resident(r->pipe, k);
}

size_t tide_runner_device_bytes(const tide_runner *r)
{
    return tide_pipeline_device_bytes(r->pipe) + (size_t)r->slots * r->fft_work;
}

size_t tide_runner_pinned_bytes(const tide_runner *r)
{
    return tide_pipeline_pinned_bytes(r->pipe);
}

int tide_runner_last_stats(const tide_runner *r, tide_pipeline_stats *s)
{
    return tide_pipeline_last_stats(r->pipe, s);
}

/* ---- a run ----------------------------------------------------------------------------- */

static int describe(void *user, int i, tide_xfer *up, int *nup, tide_xfer *down, int *ndown)
{
    const tide_runner *r = user;
    return r->pass->describe(r->pass->user, i, up, nup, down, ndown);
}

static int uploaded(void *user, int i, void *const *buf, void *stream)
{
    const tide_runner *r = user;
    return r->pass->uploaded(r->pass->user, i, buf, stream);
}

static void ended(void *user, int status)
{
    const tide_runner *r = user;
    r->pass->ended(r->pass->user, status);
}

static void note(tide_runner *r, int st, int i, const char *what)
{
    if (r->status)
        return;
    r->status = st;
    r->chunk = i;
    snprintf(r->what, sizeof r->what, "%s", what);
}

/* Chunk i: its steps bound and run on its slot under the executor's failure rule
 * (tide_steps_run). A failure (this chunk's or an earlier one's) ends the run unless the chunk
 * has a collective step, which then runs with e.failed set. */
static int work(void *user, int i, void *const *buf, void *stream)
{
    tide_runner *r = user;
    tide_env e = r->slot[i % r->slots];
    e.stream = stream;
    e.failed = r->status;
    int n = 0, st = r->pass->steps(r->pass->user, i, &e, buf, r->steps, &n);
    if (st || n > r->max_steps) {
        note(r, st ? st : TIDE_ERR_ARGUMENT, i, "");
        n = 0;
    }
    int status = r->status;
    const tide_op *at = NULL;
    int collective = tide_steps_run(r->steps, n, &e, &status, &at);
    if (status != r->status)
        note(r, status, i, at->what);
    return collective ? TIDE_SUCCESS : r->status;
}

static void begin(tide_runner *r, const tide_runner_pass *p)
{
    r->pass = p;
    r->status = 0;
    r->what[0] = '\0';
    r->job = (tide_pipeline_job){.nchunks = p->nchunks, .elem = p->elem, .batch = p->batch,
                                 .max_up = p->max_up, .max_down = p->max_down,
                                 .describe = describe, .work = work,
                                 .uploaded = p->uploaded ? uploaded : NULL,
                                 .ended = p->ended ? ended : NULL, .user = r,
                                 .pageable = TIDE_PAGEABLE_STAGE, .ordered = p->ordered,
                                 .after_caller = p->after_caller,
                                 .caller_stream = p->caller_stream};
}

/* The run's status: a step's failure first (the pipeline's own report of it says less). */
static int end(tide_runner *r, int rc, char *err, size_t len)
{
    if (!r->status)
        return rc;
    const char *why = r->slot[0].be->last_error();
    if (r->what[0])
        snprintf(err, len, "%s on chunk %d of %d failed%s%s", r->what, r->chunk,
                 r->pass->nchunks, why && why[0] ? ": " : "", why ? why : "");
    else
        snprintf(err, len, "binding the steps of chunk %d of %d failed", r->chunk,
                 r->pass->nchunks);
    return r->status;
}

int tide_runner_run(tide_runner *r, const tide_runner_pass *p, char *err, size_t len)
{
    if (r->busy)
        return snprintf(err, len, "a started run was not waited for"), TIDE_ERR_ARGUMENT;
    begin(r, p);
    return end(r, tide_pipeline_run(r->pipe, &r->job, err, len), err, len);
}

int tide_runner_start(tide_runner *r, const tide_runner_pass *p)
{
    if (r->busy)
        return TIDE_ERR_ARGUMENT;
    begin(r, p);
    int st = tide_pipeline_start(r->pipe, &r->job);
    r->busy = st == TIDE_SUCCESS;
    return st;
}

int tide_runner_wait(tide_runner *r, char *err, size_t len)
{
    if (!r->busy)
        return snprintf(err, len, "no run was started"), TIDE_ERR_ARGUMENT;
    r->busy = 0;
    return end(r, tide_pipeline_wait(r->pipe, err, len), err, len);
}
