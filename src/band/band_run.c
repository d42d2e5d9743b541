/*
 * band_run.c: a band plan's runs: the start agreed on every rank (the array, the steps),
 * this rank's rows of x copied into the first of the two arrays of its grown rows (on a GPU
 * with host arrays that is the upload), then the passes, each the plan's pass program run by
 * the plan core's executor from one array into the other (several ranks: the halo exchange,
 * then the backend's pass of up to steps_per_pass steps), and the rows of the result copied
 * back into x. Every rank takes part in every exchange, even after a failure of its own.
 * Out of card the passes run slab by slab in host memory (band_streamed.h): on one rank in x
 * itself; on several in an array of x's grown rows, each pass the program's halo exchange
 * into it, then the slabs' pass over all of it.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include "band/band_plan.h"

/* ---- the pass op ----------------------------------------------------------------------- */

static int band_execute(const tide_op *op, const tide_env *e, void *src, void *dst)
{
    return e->be->band(e, op->state, src, dst, op->steps);
}

static void nothing(tide_op *op, const tide_env *e) { (void)op, (void)e; }

static const tide_op_class band_class = {band_execute, nothing, 0, 0, NULL};

void tide_band_op(tide_op *op, tide_band_pass *b, int steps)
{
    op->cls = &band_class;
    op->kind = TIDE_OP_STENCIL;
    op->state = b;
    op->dbl = b->dbl;
    op->steps = steps;
    double rows = b->out_hi - b->out_lo, elem = b->dbl ? sizeof(double) : sizeof(float);
    op->cost.flops = 2.0 * (b->kl + b->ku + 1) * rows * steps;
    op->cost.mem_bytes = (2.0 + steps * (b->kl + b->ku + 1.0)) * rows * elem;
    snprintf(op->what, sizeof op->what, "band[%d step%s]", steps, steps > 1 ? "s" : "");
}

/* ---- running --------------------------------------------------------------------------- */

/* The steps of pass i of n passes over `steps`: as even as they go, the first steps % n
 * passes one more. */
static int pass_steps(long long steps, long long n, long long i)
{
    return (int)(steps / n + (i < steps % n));
}

/* The passes of a run from ea into eb and back. Returns the first failure (status: the one so
 * far); *in_b: the result is in eb. */
static int passes(tide_band_plan *p, long long steps, int status, int *in_b)
{
    long long n = (steps + p->steps_per_pass - 1) / p->steps_per_pass;
    void *from = p->ea, *to = p->eb;
    int st = status;
    const char *failed_at = "";
    for (long long i = 0; i < n && (!st || p->halo); i++) {
        for (int k = 0; k < p->prog.nops; k++)
            p->prog.ops[k].steps = pass_steps(steps, n, i);
        st = tide_program_run(&p->prog, &p->env, NULL, from, to, st, &failed_at, NULL, 0);
        void *t = from;
        from = to, to = t;
    }
    *in_b = n % 2;
    return st;
}

/* Out of card: this rank's rows of x into the host array of its grown rows (one rank: x
 * itself), the passes (each the program, then the slabs' pass in place), the rows back. The
 * slabs take the grown rows' ends for the matrix's: where they are not (the values beyond are
 * unknown, not zero), after s steps the first s kl rows or the last s ku are wrong, no more
 * than the halo's k kl and k ku, so this rank's rows are exact. */
static int run_slabs(tide_band_plan *p, void *x, long long steps)
{
    long long n = (steps + p->steps_per_pass - 1) / p->steps_per_pass;
    size_t elem = tide_band_elem(p), bytes = (size_t)(p->hi - p->lo) * elem;
    char *g = p->host_x ? p->host_x : x, *mine = g + (size_t)(p->lo - p->elo) * elem;
    const char *failed_at = "";
    int st = TIDE_SUCCESS;
    if (mine != x && bytes)
        memcpy(mine, x, bytes);
    for (long long i = 0; i < n && (!st || p->halo); i++) {
        st = tide_program_run(&p->prog, &p->env, NULL, g, g, st, &failed_at, NULL, 0);
        if (!st && p->streamed)
            st = tide_band_streamed_pass(&p->env, p->streamed, g, pass_steps(steps, n, i));
    }
    if (mine != x && bytes && !st)
        memcpy(x, mine, bytes);
    return st;
}

/* x's rows into the first array, the passes, the result's rows back into x. */
static int run_steps(tide_band_plan *p, void *x, long long steps)
{
    const tide_env *e = &p->env;
    size_t elem = tide_band_elem(p), bytes = (size_t)(p->hi - p->lo) * elem;
    size_t at = (size_t)(p->lo - p->elo) * elem;
    int st = TIDE_SUCCESS, in_b = 0;
    if (bytes)
        st = e->be->copy(e, (char *)p->ea + at, x, bytes);
    st = passes(p, steps, st, &in_b);
    if (bytes && !st)
        st = e->be->copy(e, x, (char *)(in_b ? p->eb : p->ea) + at, bytes);
    int sync = e->be->sync(e);
    return st ? st : sync;
}

static int run(tide_band_plan *p, void *x, long long steps, int enter_st)
{
    char why[256] = "";
    int st = tide_run_checks(&p->env, p->o.location == TIDE_LOCATION_DEVICE, x, p->hi > p->lo,
                             steps, enter_st, p->entry, p->o.stream, why, sizeof why);
    if (st)
        tide_fail(p->ctx, st, "%s tide_band_run", why);
    tide_call_arg agreed = tide_call_int("steps", steps);
    st = tide_agree_call(p->ctx, "tide_band_run", st, &agreed, 1);
    p->tally = (tide_halo_tally){0, 0};
    if (st || steps == 0)
        return st;
    st = p->out_of_card ? run_slabs(p, x, steps) : run_steps(p, x, steps);
    if (st)
        tide_fail(p->ctx, st, "failure during tide_band_run: %s",
                  st == TIDE_ERR_MPI ? "a halo exchange failed" : p->env.be->last_error());
    return tide_agree(p->ctx, st);
}

int tide_band_run(tide_band_plan *p, void *x, long long steps)
{
    if (!p)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_band_run: plan is NULL");
    int prev, enter_st = tide_device_enter(p->ctx, &prev);
    int st = run(p, x, steps, enter_st);
    tide_device_leave(prev);
    return st;
}
