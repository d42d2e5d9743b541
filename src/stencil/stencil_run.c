/*
 * stencil_run.c: a stencil plan's runs: the start agreed on every rank (the arrays, the
 * steps), the arrays moved where the passes run, then the passes, each the plan's pass
 * program (stencil_plan.h) run by the plan core's executor: on one rank between u and the
 * work array (even in number where the steps allow, so the result lands in u), on several
 * between the two grown arrays with one halo exchange before each sweep (or beside its inner
 * sweep: split passes), out of card and out of core slab by slab in u itself.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include "comm/region.h"
#include "stencil/stencil_plan.h"

/* ---- running --------------------------------------------------------------------------- */

/* The passes `steps` steps take at most p->fuse per pass, and the steps of pass i of n: as
 * even as they go, the first steps % n passes one more. */
static long long pass_count(const tide_stencil_plan *p, long long steps)
{
    return (steps + p->fuse - 1) / p->fuse;
}

static int pass_steps(long long steps, long long n, long long i)
{
    return (int)(steps / n + (i < steps % n));
}

/* Whether the pass program exchanges with other ranks: it then runs whatever failed. */
static int collective(const tide_program *prog)
{
    for (int i = 0; i < prog->nops; i++)
        if (prog->ops[i].cls->collective)
            return 1;
    return 0;
}

/* The passes of a run, each p->pass from a into b and back (in place in a where the pass
 * runs in place: the slabs), `steps` >= 1 split as evenly as the passes allow; on one rank
 * in card an even number of them where there are steps enough, so the result ends where it
 * began. Every rank takes part in every exchange even after a failure of its own. box:
 * NULL, or for split passes of two or more (split_bands done) u's own box, which the first
 * pass reads its own planes from and the last writes into, the result. status: the failure
 * so far. Returns the first failure; *in_b: the result is in b. */
static int passes(tide_stencil_plan *p, void *a, void *b, void *box, long long steps,
                  int status, int *in_b)
{
    long long n = pass_count(p, steps);
    int in_place = p->pass.nops && p->pass.ops[p->pass.nops - 1].in_place_ok;
    if (n % 2 && steps > n && !p->halo && !in_place) /* several ranks copy back anyway */
        n++;
    int st = status, all = collective(&p->pass);
    void *from = a, *to = in_place ? a : b;
    const char *failed_at = "";
    tide_progress prog; /* (in card on a GPU a pass is only enqueued here: no lines) */
    int queued = p->env.be->gpu && !p->out_of_core && !p->streamed;
    tide_progress_begin(&prog, p->ctx, "tide_stencil_run", "passes", queued ? 0 : n);
    for (long long i = 0; i < n && (!st || all); i++) {
        tide_progress_step(&prog, i);
        for (int k = 0; k < p->pass.nops; k++)
            p->pass.ops[k].steps = pass_steps(steps, n, i);
        int last = box && i == n - 1;
        p->ops.own = box && i == 0 ? box : NULL;
        p->ops.to_box = last;
        st = tide_program_run(&p->pass, &p->env, NULL, from, last ? box : to, st, &failed_at,
                              NULL, 0);
        if (!in_place) {
            void *t = from;
            from = to, to = t;
        }
    }
    tide_progress_end(&prog);
    *in_b = !in_place && n % 2;
    return st;
}

/* The source's halo (several ranks): once a run, its points first copied into the grown
 * array (on a GPU with host arrays uploaded first), or out of core exchanged into its parts
 * from the caller's. Every rank takes part in the exchange. */
static int source_halo(tide_stencil_plan *p, int status)
{
    const tide_env *e = &p->env;
    size_t elem = tide_stencil_elem_bytes(p);
    int host_gpu = e->be->gpu && p->o.location == TIDE_LOCATION_HOST && !p->out_of_core;
    int st = status, any = tide_box_count(&p->box) > 0;
    const void *sb = host_gpu ? p->dev_source : p->o.source;
    if (any && !st && host_gpu)
        st = e->be->copy(e, p->dev_source, p->o.source, p->bytes);
    if (any && !st && p->esrc)
        st = e->be->copy_region(e, elem, &p->box, sb, &p->box, p->esrc, &p->ext);
    const char *failed_at = "";
    void *arr = p->out_of_core ? (void *)p->o.source : p->esrc;
    return tide_program_run(&p->source_halo, e, NULL, arr, arr, st, &failed_at, NULL, 0);
}

/* Several ranks: u (this rank's box; on a GPU with host arrays uploaded first) into the
 * grown array, the source's halo, the passes, and the box of the result back into u; split
 * passes of two or more read u's box and write into it, so that only the planes next to the
 * halos are copied; out of core the passes run in u itself. */
static int run_ranks(tide_stencil_plan *p, void *u, long long steps)
{
    const tide_env *e = &p->env;
    size_t elem = tide_stencil_elem_bytes(p);
    int host_gpu = e->be->gpu && p->o.location == TIDE_LOCATION_HOST && !p->out_of_core;
    int any = tide_box_count(&p->box) > 0, st = TIDE_SUCCESS, in_b = 0;
    void *ub = host_gpu ? p->dev_u : u; /* u's box in the backend's memory */
    if (any && host_gpu)
        st = e->be->copy(e, ub, u, p->bytes);
    /* direct split passes of two or more read u's box and write the result into it */
    int direct = p->split && tide_stencil_split_direct(p->split) && pass_count(p, steps) >= 2;
    int grown = !p->out_of_core && !direct;
    if (any && !st && !p->out_of_core)
        st = direct ? tide_stencil_split_bands(e, p->split, ub, p->ea)
                    : e->be->copy_region(e, elem, &p->box, ub, &p->box, p->ea, &p->ext);
    if (p->source_halo.nops)
        st = source_halo(p, st);
    st = passes(p, p->out_of_core ? u : p->ea, p->eb, direct ? ub : NULL, steps, st, &in_b);
    if (any && !st && grown)
        st = e->be->copy_region(e, elem, &p->box, in_b ? p->eb : p->ea, &p->ext, ub, &p->box);
    if (any && !st && host_gpu)
        st = e->be->copy(e, u, ub, p->bytes);
    int sync = e->be->sync(e);
    return st ? st : sync;
}

/* One rank: the passes between u (on a GPU with host arrays its device copy, uploaded with
 * the source first) and the work array, the result copied back where it ends in the work
 * array; out of card the slabs in u itself. */
static int run_one(tide_stencil_plan *p, void *u, long long steps)
{
    const tide_env *e = &p->env;
    int host_gpu = e->be->gpu && p->o.location == TIDE_LOCATION_HOST && !p->streamed;
    int in_b = 0;
    void *a = host_gpu ? p->dev_u : u;
    int st = host_gpu ? e->be->copy(e, a, u, p->bytes) : TIDE_SUCCESS;
    if (!st && p->dev_source)
        st = e->be->copy(e, p->dev_source, p->o.source, p->bytes);
    if (!st)
        st = passes(p, a, p->work, NULL, steps, st, &in_b);
    if (!st && in_b)
        st = e->be->copy(e, a, p->work, p->bytes);
    if (!st && host_gpu)
        st = e->be->copy(e, u, a, p->bytes);
    int sync = e->be->sync(e);
    return st ? st : sync;
}

static int run(tide_stencil_plan *p, void *u, long long steps, int enter_st)
{
    char why[256] = "";
    int st = tide_run_checks(&p->env, p->o.location == TIDE_LOCATION_DEVICE, u, p->bytes > 0,
                             steps, enter_st, p->entry, p->o.stream, why, sizeof why);
    if (st)
        tide_fail(p->ctx, st, "%s tide_stencil_run", why);
    tide_call_arg agreed = tide_call_int("steps", steps);
    st = tide_agree_call(p->ctx, "tide_stencil_run", st, &agreed, 1);
    p->tally = (tide_halo_tally){0, 0};
    p->ops.err[0] = '\0';
    if (st || steps == 0)
        return st;
    const tide_env *e = &p->env;
    st = p->halo ? run_ranks(p, u, steps) : run_one(p, u, steps);
    if (st)
        tide_fail(p->ctx, st, "failure during tide_stencil_run: %s",
                  *p->ops.err ? p->ops.err
                  : st == TIDE_ERR_MPI ? "a halo exchange failed" : e->be->last_error());
    tide_log(p->ctx, TIDE_LOG_DEBUG, "stencil: %lld steps: %lld exchanges %.3g ms", steps,
             p->tally.exchanges, 1e3 * p->tally.seconds);
    return tide_agree(p->ctx, st);
}

int tide_stencil_run(tide_stencil_plan *p, void *u, long long steps)
{
    if (!p)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_stencil_run: plan is NULL");
    int prev, enter_st = tide_device_enter(p->ctx, &prev);
    int st = run(p, u, steps, enter_st);
    tide_device_leave(prev);
    return st;
}

