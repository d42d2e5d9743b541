/* progress.c: progress lines of long calls, through the logger on rank 0 (core.h). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include "core/core.h"

int tide_context_set_progress(tide_context *ctx, double seconds)
{
    if (!ctx)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_context_set_progress: ctx is NULL");
    if (!isfinite(seconds) || seconds < 0)
        return tide_fail(ctx, TIDE_ERR_ARGUMENT,
                         "tide_context_set_progress: seconds %g: expected 0 (never) or more",
                         seconds);
    ctx->progress_every = seconds;
    return TIDE_SUCCESS;
}

void tide_progress_begin(tide_progress *p, const tide_context *ctx, const char *call,
                         const char *unit, long long total)
{
    double every = ctx && ctx->rank == 0 ? ctx->progress_every : 0;
    *p = (tide_progress){.ctx = ctx, .call = call, .unit = unit, .total = total,
                         .on = every > 0 && total > 1, .every = every};
    if (p->on)
        p->start = p->next = MPI_Wtime(), p->next += every;
}

void tide_progress_step(tide_progress *p, long long done)
{
    if (!p->on || done <= 0)
        return;
    double now = MPI_Wtime();
    if (now < p->next || done >= p->total)
        return;
    double t = now - p->start, left = t * (double)(p->total - done) / (double)done;
    tide_log_line(p->ctx, "progress", "%s: %.0f%% (%lld/%lld %s), %.0f s, about %.0f s left",
                  p->call, 100.0 * (double)done / (double)p->total, done, p->total, p->unit, t,
                  left);
    p->shown = 1;
    p->next = now + p->every;
}

void tide_progress_end(tide_progress *p)
{
    if (p->on && p->shown)
        tide_log_line(p->ctx, "progress", "%s: done (%lld %s) in %.0f s", p->call, p->total,
                      p->unit, MPI_Wtime() - p->start);
    p->on = 0;
}
