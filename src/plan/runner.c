/*
 * runner.c: the out-of-card runner (runner.h): the pipeline's work callback binds a chunk's
 * steps and runs them with the executor's failure rule. On the CPU backend the same passes
 * run without a pipeline: one set of buffers in host memory, each chunk's uploads copied in,
 * its steps run and its downloads copied out before the next chunk begins.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "plan/runner.h"
#include "comm/region.h"

/* The CPU's stand-in for the pipeline: its buffers, then the resident ones (host memory). */
typedef struct {
    int nbufs, nresident;
    void **buf;
    size_t *size;            /* of each buffer */
    size_t bytes;
    tide_xfer *xfer;         /* a chunk's transfers (up, then down), grown to the most a pass
                              * has asked for */
    int nxfer;
    int status;              /* of a run started (tide_runner_start) and not waited for */
    char why[160];           /* ... and its reason */
} serial;

struct tide_runner {
    tide_pipeline *pipe;     /* GPU; NULL on the CPU, which runs `cpu` */
    serial cpu;
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

static void serial_destroy(serial *c)
{
    for (int b = 0; c->buf && b < c->nbufs + c->nresident; b++)
        free(c->buf[b]);
    free(c->buf);
    free(c->size);
    free(c->xfer);
    c->buf = NULL;
    c->size = NULL;
    c->xfer = NULL;
    c->nxfer = 0;
}

static int serial_create(serial *c, const tide_runner_desc *d, char *err, size_t len)
{
    c->nbufs = d->nbufs, c->nresident = d->nresident;
    int nb = d->nbufs + d->nresident;
    c->buf = calloc((size_t)nb + 1, sizeof *c->buf);
    c->size = calloc((size_t)nb + 1, sizeof *c->size);
    for (int b = 0; c->buf && c->size && b < nb; b++) {
        size_t n = b < d->nbufs ? d->buf_bytes[b] : d->resident_bytes[b - d->nbufs];
        c->bytes += n;
        c->size[b] = n;
        if (!(c->buf[b] = malloc(n ? n : 1)))
            break;
    }
    if (!c->buf || !c->size || (nb && !c->buf[nb - 1])) {
        serial_destroy(c);
        return snprintf(err, len, "out of memory for the passes' buffers"), TIDE_ERR_NOMEM;
    }
    return TIDE_SUCCESS;
}

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
    int st = d->env->be->gpu ? tide_pipeline_create_config(&pc, &r->pipe, err, len)
                             : serial_create(&r->cpu, d, err, len);
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
    serial_destroy(&r->cpu);
    for (int sl = 0; sl < r->slots; sl++)
        if (r->slot[sl].fft_work)
            r->slot[sl].be->free(r->slot[sl].fft_work);
    free(r->steps);
    free(r);
}

const tide_env *tide_runner_env(const tide_runner *r, int sl) { return &r->slot[sl]; }

void *tide_runner_resident(const tide_runner *r, int k)
{
    return r->pipe ? tide_pipeline_resident(r->pipe, k) : r->cpu.buf[r->cpu.nbufs + k];
}

size_t tide_runner_device_bytes(const tide_runner *r)
{
    return (r->pipe ? tide_pipeline_device_bytes(r->pipe) : r->cpu.bytes) +
           (size_t)r->slots * r->fft_work;
}

size_t tide_runner_pinned_bytes(const tide_runner *r)
{
    return r->pipe ? tide_pipeline_pinned_bytes(r->pipe) : 0;
}

int tide_runner_last_stats(const tide_runner *r, tide_pipeline_stats *s)
{
    return r->pipe ? tide_pipeline_last_stats(r->pipe, s) : TIDE_ERR_UNSUPPORTED;
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

/* Transfer x between the host and the CPU's buffers (up: into them); 0, or TIDE_ERR_ARGUMENT
 * where the buffer it names cannot hold its layout. */
static int serial_move(const tide_runner *r, const tide_xfer *x, int up)
{
    const serial *c = &r->cpu;
    const tide_pipeline_job *j = &r->job;
    size_t need = x->dbyte + (size_t)j->batch * (size_t)tide_box_count(&x->dbox) * j->elem;
    if (x->buf < 0 || x->buf >= c->nbufs + c->nresident || need > c->size[x->buf])
        return TIDE_ERR_ARGUMENT;
    char *d = (char *)c->buf[x->buf] + x->dbyte;
    int threads = r->slot[0].threads;
    if (up)
        tide_copy_region(j->elem, j->batch, &x->region, x->host, &x->hbox, d, &x->dbox, threads);
    else
        tide_copy_region(j->elem, j->batch, &x->region, d, &x->dbox, x->host, &x->hbox, threads);
    return TIDE_SUCCESS;
}

/* The CPU's run of r->job: chunk after chunk, its uploads, its work, its downloads. A chunk
 * whose work fails ends the run (the runner's work returns 0 for a chunk that still had a
 * collective step to run). */
static int serial_run(tide_runner *r, char *err, size_t len)
{
    const tide_pipeline_job *j = &r->job;
    if (len)
        err[0] = '\0';
    int need = j->max_up + j->max_down + 1;
    if (need > r->cpu.nxfer) { /* the first pass of its size: later ones allocate nothing */
        tide_xfer *x = realloc(r->cpu.xfer, sizeof *x * (size_t)need);
        if (!x)
            return snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM;
        r->cpu.xfer = x, r->cpu.nxfer = need;
    }
    tide_xfer *up = r->cpu.xfer, *down = up + j->max_up;
    int st = TIDE_SUCCESS;
    for (int i = 0; i < j->nchunks && !st; i++) {
        int nup = 0, ndown = 0;
        st = j->describe(j->user, i, up, &nup, down, &ndown);
        if (!st && (nup < 0 || nup > j->max_up || ndown < 0 || ndown > j->max_down))
            st = TIDE_ERR_ARGUMENT;
        for (int k = 0; k < nup && !st; k++)
            st = serial_move(r, &up[k], 1);
        if (st) {
            snprintf(err, len, "chunk %d of %d: its transfers are not valid", i, j->nchunks);
            break;
        }
        if (j->uploaded)
            st = j->uploaded(j->user, i, r->cpu.buf, NULL);
        if (!st && j->work)
            st = j->work(j->user, i, r->cpu.buf, NULL);
        for (int k = 0; k < ndown && !st; k++)
            st = serial_move(r, &down[k], 0);
        if (st && len && !err[0])
            snprintf(err, len, "chunk %d of %d failed", i, j->nchunks);
    }
    return st;
}

int tide_runner_run(tide_runner *r, const tide_runner_pass *p, char *err, size_t len)
{
    if (r->busy)
        return snprintf(err, len, "a started run was not waited for"), TIDE_ERR_ARGUMENT;
    begin(r, p);
    return end(r, r->pipe ? tide_pipeline_run(r->pipe, &r->job, err, len)
                          : serial_run(r, err, len), err, len);
}

/* On the CPU the run happens here, its status kept for wait. */
int tide_runner_start(tide_runner *r, const tide_runner_pass *p)
{
    if (r->busy)
        return TIDE_ERR_ARGUMENT;
    begin(r, p);
    int st = TIDE_SUCCESS;
    if (r->pipe) {
        st = tide_pipeline_start(r->pipe, &r->job);
    } else {
        r->cpu.status = serial_run(r, r->cpu.why, sizeof r->cpu.why);
        if (p->ended)
            p->ended(p->user, r->cpu.status);
    }
    r->busy = st == TIDE_SUCCESS;
    return st;
}

int tide_runner_wait(tide_runner *r, char *err, size_t len)
{
    if (!r->busy)
        return snprintf(err, len, "no run was started"), TIDE_ERR_ARGUMENT;
    r->busy = 0;
    if (!r->pipe) {
        snprintf(err, len, "%s", r->cpu.why);
        return end(r, r->cpu.status, err, len);
    }
    return end(r, tide_pipeline_wait(r->pipe, err, len), err, len);
}
