/*
 * stencil_run.c: a stencil plan's runs: the start agreed on every rank (the arrays, the
 * steps), then the passes: on one rank between u and the work array (even in number where the
 * steps allow, so the result lands in u), on several with one halo exchange before each pass
 * (or beside its inner sweep, split passes), out of card and out of core slab by slab.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include "comm/region.h"
#include "stencil/stencil_plan.h"

/* ---- running --------------------------------------------------------------------------- */

/* One halo exchange into a (laid out as ext), the points sent read from `from` (a itself, or
 * out of core u, laid out as the rank's box), counted and timed (on the GPU from the end of
 * the work before it). */
static int exchange(tide_stencil_plan *p, void *a, const void *from, const tide_parts *to)
{
    const tide_env *e = &p->env;
    int st = e->be->sync(e);
    double t0 = MPI_Wtime();
    int x = to ? tide_halo_run_from(p->halo, from, &p->box, to)
               : e->be->halo(e, p->halo, a, TIDE_HALO_ALL);
    p->halo_seconds += MPI_Wtime() - t0;
    p->exchanges++;
    return st ? st : x;
}

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

/* The passes of a run from a to b and back, `steps` >= 1 split as evenly as the passes allow;
 * on one rank an even number of them where there are steps enough, so the result ends where
 * it began. On several ranks each pass starts by filling the halo of its input, and every
 * rank takes part in every exchange even after a failure of its own. box: NULL, or for split
 * passes of two or more (split_bands done) u's own box, which the first pass reads its own
 * planes from and the last writes into, the result. Returns 0, a backend failure or
 * TIDE_ERR_MPI; *in_b: the result is in b. */
static int passes(tide_stencil_plan *p, void *a, void *b, void *box, long long steps,
                  int *in_b)
{
    long long n = pass_count(p, steps);
    if (n % 2 && steps > n && !p->halo) /* several ranks copy the result back anyway */
        n++;
    void *from = a, *to = b;
    int st = TIDE_SUCCESS, sweep = tide_box_count(&p->box) > 0;
    for (long long i = 0; i < n && (!st || p->halo); i++) {
        p->op.steps = pass_steps(steps, n, i);
        if (p->split) {
            int last = box && i == n - 1;
            st = tide_stencil_split_pass(&p->env, p->split, p->halo, from, box && i == 0 ? box
                                         : NULL, last ? box : to, last, p->op.steps, st,
                                         &p->halo_seconds);
            p->exchanges++;
        } else {
            int x = p->halo ? exchange(p, from, NULL, NULL) : TIDE_SUCCESS;
            st = st ? st : x;
            if (!st && sweep)
                st = p->op.cls->execute(&p->op, &p->env, from, to);
        }
        void *t = from;
        from = to, to = t;
    }
    *in_b = n % 2;
    return st;
}

/* Several ranks out of core: the source's halo exchanged into its parts, then each pass: the
 * halo of u exchanged into its parts (sent from u), and the grown box streamed through the
 * GPU, its own points read from and written back into u (the source's from the caller's), its
 * halo read from the parts. Every rank takes part in every exchange whatever failed before. */
static int run_out_of_core(tide_stencil_plan *p, void *u, long long steps)
{
    int any = tide_box_count(&p->box) > 0, st = TIDE_SUCCESS;
    char err[TIDE_MSG_LEN] = "";
    double t_pass = 0;
    if (p->o.source) {
        int x = exchange(p, NULL, p->o.source, &p->halo_src);
        st = st ? st : x;
    }
    long long n = pass_count(p, steps);
    for (long long i = 0; i < n; i++) {
        int x = exchange(p, NULL, u, &p->halo_u);
        st = st ? st : x;
        double t1 = MPI_Wtime();
        if (!st && any)
            st = tide_stencil_streamed_pass(p->streamed, u, &p->halo_u, p->o.source, &p->halo_src,
                                          pass_steps(steps, n, i), err, sizeof err);
        t_pass += MPI_Wtime() - t1;
    }
    tide_log(p->ctx, TIDE_LOG_DEBUG, "stencil: out of core, %lld steps: %lld exchanges %.3g ms, "
             "%lld passes %.3g ms", steps, p->exchanges, 1e3 * p->halo_seconds, n,
             1e3 * t_pass);
    if (st)
        tide_fail(p->ctx, st, "failure during tide_stencil_run: %s",
                  *err ? err : "a halo exchange failed");
    return st;
}

/* Several ranks: u (this rank's box; on a GPU with host arrays uploaded first) into the
 * grown array, the source likewise with its halo filled, the passes, and the box of the
 * result back into u; split passes of two or more read u's box and write into it, so that
 * only the planes next to the halos are copied. Every rank takes part in every exchange
 * whatever failed before. */
static int run_ranks(tide_stencil_plan *p, void *u, long long steps)
{
    const tide_env *e = &p->env;
    size_t elem = tide_stencil_elem_bytes(p);
    int host_gpu = e->be->gpu && p->o.location == TIDE_LOCATION_HOST, in_b = 0;
    int any = tide_box_count(&p->box) > 0, st = TIDE_SUCCESS;
    void *ub = host_gpu ? p->dev_u : u; /* u's box in the backend's memory */
    if (any && host_gpu)
        st = e->be->copy(e, ub, u, p->bytes);
    /* direct split passes of two or more read u's box and write the result into it */
    int direct = p->split && tide_stencil_split_direct(p->split) && pass_count(p, steps) >= 2;
    if (any && !st)
        st = direct ? tide_stencil_split_bands(e, p->split, ub, p->ea)
                    : e->be->copy_region(e, elem, &p->box, ub, &p->box, p->ea, &p->ext);
    if (p->esrc) {
        const void *sb = host_gpu ? p->dev_source : p->o.source;
        if (any && !st && host_gpu)
            st = e->be->copy(e, p->dev_source, p->o.source, p->bytes);
        if (any && !st)
            st = e->be->copy_region(e, elem, &p->box, sb, &p->box, p->esrc, &p->ext);
        int x = exchange(p, p->esrc, NULL, NULL);
        st = st ? st : x;
    }
    int x = passes(p, p->ea, p->eb, direct ? ub : NULL, steps, &in_b);
    st = st ? st : x;
    if (any && !st && !direct)
        st = e->be->copy_region(e, elem, &p->box, in_b ? p->eb : p->ea, &p->ext, ub, &p->box);
    if (any && !st && host_gpu)
        st = e->be->copy(e, u, ub, p->bytes);
    int sync = e->be->sync(e);
    return st ? st : sync;
}

/* Local checks of a run's arguments and the ordering after the caller's work (the reason in
 * why, worded to be followed by the call's name). */
static int start(tide_stencil_plan *p, void *u, long long steps, int enter_st, char *why,
                 size_t len)
{
    if (enter_st)
        return snprintf(why, len, "could not make GPU %d current (%s) in", p->ctx->dev.device,
                        tide_backend_cuda()->last_error()), enter_st;
    if (steps < 0)
        return snprintf(why, len, "asked for %lld steps in", steps), TIDE_ERR_ARGUMENT;
    if (!u && p->bytes)
        return snprintf(why, len, "passed a NULL array to"), TIDE_ERR_ARGUMENT;
    const char *m = u ? tide_array_location(p->ctx, p->o.location == TIDE_LOCATION_DEVICE, u)
                      : "";
    if (*m)
        return snprintf(why, len, "passed %s to", m), TIDE_ERR_ARGUMENT;
    void *stream = p->env.be->gpu ? p->env.stream : NULL;
    if (tide_order_after(p->entry, p->o.stream, stream))
        return snprintf(why, len, "could not wait for the caller's earlier CUDA work (%s) in",
                        tide_backend_cuda()->last_error()), TIDE_ERR_BACKEND;
    return TIDE_SUCCESS;
}

static int run(tide_stencil_plan *p, void *u, long long steps, int enter_st)
{
    char why[256] = "";
    int st = start(p, u, steps, enter_st, why, sizeof why);
    if (st)
        tide_fail(p->ctx, st, "%s tide_stencil_run", why);
    tide_call_arg agreed = tide_call_int("steps", steps);
    st = tide_agree_call(p->ctx, "tide_stencil_run", st, &agreed, 1);
    p->exchanges = 0;
    p->halo_seconds = 0;
    if (st || steps == 0)
        return st;
    const tide_env *e = &p->env;
    if (p->halo) {
        st = p->out_of_core ? run_out_of_core(p, u, steps) : run_ranks(p, u, steps);
        if (st && !p->out_of_core) /* out of core says why itself */
            tide_fail(p->ctx, st, "failure during tide_stencil_run: %s",
                      st == TIDE_ERR_MPI ? "a halo exchange failed" : e->be->last_error());
        return tide_agree(p->ctx, st);
    }
    if (p->streamed) {
        char err[TIDE_MSG_LEN] = "";
        long long n = pass_count(p, steps);
        for (long long i = 0; i < n && !st; i++)
            st = tide_stencil_streamed_pass(p->streamed, u, NULL, p->o.source, NULL,
                                          pass_steps(steps, n, i), err, sizeof err);
        if (st)
            tide_fail(p->ctx, st, "failure during tide_stencil_run: %s", err);
        return tide_agree(p->ctx, st);
    }
    int host_gpu = e->be->gpu && p->o.location == TIDE_LOCATION_HOST, in_b = 0;
    void *a = host_gpu ? p->dev_u : u;
    st = host_gpu ? e->be->copy(e, a, u, p->bytes) : TIDE_SUCCESS;
    if (!st && p->dev_source)
        st = e->be->copy(e, p->dev_source, p->o.source, p->bytes);
    if (!st)
        st = passes(p, a, p->work, NULL, steps, &in_b);
    if (!st && in_b)
        st = e->be->copy(e, a, p->work, p->bytes);
    if (!st && host_gpu)
        st = e->be->copy(e, u, a, p->bytes);
    int sync = e->be->sync(e);
    st = st ? st : sync;
    if (st)
        tide_fail(p->ctx, st, "%s failure during tide_stencil_run: %s", e->be->name,
                  e->be->last_error());
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

