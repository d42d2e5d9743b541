/*
 * stencil_ops.c: the stencil's own op classes on the plan core's programs (stencil_plan.h):
 * the split pass, the slabs through the GPU, the halo exchanged into parts. The sweep and the
 * halo exchange in place are the plan core's (plan/program.h).
 */
#include <mpi.h>
#include <stdio.h>
#include "stencil/stencil_plan.h"

static void nothing(tide_op *op, const tide_env *e) { (void)op, (void)e; }

static int split_execute(const tide_op *op, const tide_env *e, void *src, void *dst)
{
    const tide_stencil_ops *s = op->state;
    op->tally->exchanges++;
    return tide_stencil_split_pass(e, s->split, op->halo, src, s->own, dst, s->to_box,
                                   op->steps, e->failed, &op->tally->seconds);
}

static const tide_op_class split_class = {split_execute, nothing, 1, 0, NULL};

void tide_stencil_op_split(tide_op *op, tide_stencil_ops *s, const tide_halo *h,
                           tide_halo_tally *tally)
{
    op->cls = &split_class;
    op->kind = TIDE_OP_STENCIL;
    op->state = s;
    op->halo = h;
    op->tally = tally;
    snprintf(op->what, sizeof op->what, "split sweep");
}

static int slabs_execute(const tide_op *op, const tide_env *e, void *src, void *dst)
{
    (void)e, (void)dst; /* in place in u */
    tide_stencil_ops *s = op->state;
    return tide_stencil_streamed_pass(s->streamed, src, s->halo_u, s->source, s->halo_src,
                                      op->steps, s->err, sizeof s->err);
}

static const tide_op_class slabs_class = {slabs_execute, nothing, 0, 0, NULL};

void tide_stencil_op_slabs(tide_op *op, tide_stencil_ops *s)
{
    op->cls = &slabs_class;
    op->kind = TIDE_OP_STENCIL;
    op->state = s;
    op->in_place_ok = 1;
    snprintf(op->what, sizeof op->what, "slabs");
}

static int parts_execute(const tide_op *op, const tide_env *e, void *src, void *dst)
{
    (void)e, (void)dst;
    const tide_stencil_parts *x = op->state;
    double t0 = MPI_Wtime();
    int st = tide_halo_run_from(op->halo, src, x->from, x->to);
    op->tally->seconds += MPI_Wtime() - t0;
    op->tally->exchanges++;
    return st;
}

static const tide_op_class parts_class = {parts_execute, nothing, 1, 0, NULL};

void tide_stencil_op_halo_parts(tide_op *op, const tide_stencil_parts *x, const tide_halo *h,
                                tide_halo_tally *tally)
{
    op->cls = &parts_class;
    op->kind = TIDE_OP_HALO;
    op->state = (void *)x;
    op->halo = h;
    op->tally = tally;
    op->in_place_ok = 1;
    snprintf(op->what, sizeof op->what, "halo into parts");
}
