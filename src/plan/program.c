/* program.c: the op kinds, their placement in buffers, and the executor (see program.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "plan/program.h"
#include "core/args.h"
#include "comm/region.h"

/* ---- reshape --------------------------------------------------------------------------- */

static int reshape_execute(const tide_op *op, const tide_env *e, void *src, void *dst)
{
    return e->be->reshape_execute(e, op->reshape, src, dst, tide_reshape_flags(e, op->dst));
}

static void reshape_destroy(tide_op *op, const tide_env *e)
{
    (void)e;
    tide_reshape_destroy(op->reshape);
    op->reshape = NULL;
}

static const tide_op_class reshape_class = {reshape_execute, reshape_destroy, 1, 0, NULL};

tide_op_cost tide_op_reshape_cost(int rank, const tide_box *from, const tide_box *to,
                                  size_t elem, int batch)
{
    tide_box self;
    double in = (double)tide_box_count(&from[rank]), out = (double)tide_box_count(&to[rank]);
    double stay = (double)tide_box_intersect(&from[rank], &to[rank], &self);
    double b = (double)elem * batch;
    tide_op_cost c = {0};
    c.net_bytes = (in - stay) * b;
    c.mem_bytes = 2 * (in + out) * b; /* packs and unpacks: read and write each side */
    return c;
}

int tide_op_reshape(tide_op *op, const tide_env *e, const tide_box *from, const tide_box *to,
                    size_t elem, int batch, char *err, size_t len)
{
    op->cls = &reshape_class;
    op->kind = TIDE_OP_RESHAPE;
    int st = e->be->reshape_create(e, from, to, NULL, NULL, elem, batch, &op->reshape, err, len);
    if (st)
        return st;
    snprintf(op->what, sizeof op->what, "reshape[%s]",
             tide_exchange_name(tide_reshape_exchange(op->reshape)));
    op->cost = tide_op_reshape_cost(e->ctx->rank, from, to, elem, batch);
    return TIDE_SUCCESS;
}

/* ---- FFT ------------------------------------------------------------------------------- */

static int fft_execute(const tide_op *op, const tide_env *e, void *src, void *dst)
{
    return op->fft ? e->be->fft_execute(e, op->fft, src, dst) : TIDE_SUCCESS; /* empty box */
}

static void fft_destroy(tide_op *op, const tide_env *e)
{
    if (op->fft)
        e->be->fft_destroy(op->fft);
    op->fft = NULL;
}

static int fft_execute_staged(const tide_op *op, const tide_env *e, const void *src,
                              void *stage, void *dst)
{
    if (!op->fft)
        return TIDE_SUCCESS; /* empty box: nothing to read, nothing to stage */
    if (!e->be->fft_execute_staged)
        return TIDE_ERR_UNSUPPORTED;
    return e->be->fft_execute_staged(e, op->fft, src, stage, dst);
}

static const tide_op_class fft_class = {fft_execute, fft_destroy, 0, 0, fft_execute_staged};

/* d's name in what ("fft(y,z)", "r2r(x,y)" or both: the DFT's dimensions and the real-to-real
 * ones) and its cost. */
static tide_op_cost fft_name_cost(const tide_cpu_fft_desc *d, char *what, size_t wlen)
{
    /* the points of one transform of each kind */
    double lines[2] = {1, 1};
    int n = 0, r2r_only = d->kind == TIDE_KIND_R2R;
    for (int pass = 0; pass < 2; pass++) {
        int listed = 0;
        for (int k = 0; k < d->ndims; k++) {
            int dim = d->dims[k];
            if ((d->r2r[dim] != TIDE_R2R_NONE) != pass)
                continue;
            n += snprintf(what + n, wlen - (size_t)n, "%s%c",
                          listed++ ? "," : pass && n ? ")+r2r(" : pass ? "r2r(" : "fft(",
                          "xyz"[dim]);
            lines[pass] *= d->kind != TIDE_KIND_C2C && !pass && dim == d->half ? d->real_n
                           : d->kind == TIDE_KIND_C2R ? (double)tide_ext(d->obox, dim)
                                                        : (double)tide_ext(d->ibox, dim);
        }
    }
    snprintf(what + n, wlen - (size_t)n, ")");
    size_t scalar = d->precision == TIDE_DOUBLE ? sizeof(double) : sizeof(float);
    double cin = (double)tide_box_count(d->ibox) * d->batch;
    double cout = (double)tide_box_count(d->obox) * d->batch;
    int real_in = d->kind == TIDE_KIND_R2C || (r2r_only && !d->complex_elems);
    int real_out = d->kind == TIDE_KIND_C2R || (r2r_only && !d->complex_elems);
    double real_points = real_in ? cin : real_out ? cout : 0;
    /* the real-to-real transforms: on real data, or each part of the complex side */
    double r2r_reals = r2r_only ? cin * (real_in ? 1 : 2)
                                : 2 * (d->kind == TIDE_KIND_C2R ? cin : cout);
    double lg[2] = {log2(lines[0] > 1 ? lines[0] : 1), log2(lines[1] > 1 ? lines[1] : 1)};
    tide_op_cost c = {0};
    c.flops = r2r_only                    ? 0
              : d->kind == TIDE_KIND_C2C ? 5 * cin * lg[0]
                                         : 2.5 * real_points * lg[0];
    c.flops += 2.5 * r2r_reals * lg[1];
    c.mem_bytes = (cin * (real_in ? 1 : 2) + cout * (real_out ? 1 : 2)) * scalar;
    c.mem_bytes += !r2r_only && lines[1] > 1 ? 2 * r2r_reals * scalar : 0;
    return c;
}

void tide_op_fft_name(const tide_cpu_fft_desc *d, char *what, size_t len)
{
    fft_name_cost(d, what, len);
}

tide_op_cost tide_op_fft_cost(const tide_cpu_fft_desc *d)
{
    char what[sizeof ((tide_op *)0)->what];
    return fft_name_cost(d, what, sizeof what);
}

int tide_op_fft(tide_op *op, const tide_env *e, const tide_cpu_fft_desc *d, size_t *work,
                char *err, size_t len)
{
    op->cls = &fft_class;
    op->kind = TIDE_OP_FFT;
    op->cost = fft_name_cost(d, op->what, sizeof op->what);
    int real_in = d->kind == TIDE_KIND_R2C || (d->kind == TIDE_KIND_R2R && !d->complex_elems);
    size_t scalar = d->precision == TIDE_DOUBLE ? sizeof(double) : sizeof(float);
    op->stage_bytes = (size_t)tide_box_count(d->ibox) * d->batch * scalar * (real_in ? 1 : 2);
    if (tide_box_count(d->ibox) == 0)
        return TIDE_SUCCESS;
    int st = e->be->fft_create(d, &op->fft, work, err, len);
    if (st && st != TIDE_ERR_UNSUPPORTED) /* UNSUPPORTED comes with cuFFT's reason */
        snprintf(err, len, "the backend could not plan %s of the box [%d,%d)x[%d,%d)x[%d,%d)",
                 op->what, d->ibox->lo[0], d->ibox->hi[0], d->ibox->lo[1],
                 d->ibox->hi[1], d->ibox->lo[2], d->ibox->hi[2]);
    return st;
}

/* ---- pointwise ------------------------------------------------------------------------- */

static int scale_execute(const tide_op *op, const tide_env *e, void *src, void *dst)
{
    size_t bytes = (size_t)op->scalars * (op->dbl ? sizeof(double) : sizeof(float));
    int st = src == dst ? TIDE_SUCCESS : e->be->copy(e, dst, src, bytes);
    return st ? st : e->be->scale(e, op->dbl, dst, op->scalars, op->factor);
}

static void scale_destroy(tide_op *op, const tide_env *e) { (void)op, (void)e; }

static const tide_op_class scale_class = {scale_execute, scale_destroy, 0, 0, NULL};

void tide_op_scale(tide_op *op, int dbl, long long count, double factor)
{
    op->cls = &scale_class;
    op->kind = TIDE_OP_POINTWISE;
    op->in_place_ok = 1;
    op->dbl = dbl;
    op->scalars = count;
    op->factor = factor;
    op->cost.flops = (double)count;
    op->cost.mem_bytes = 2.0 * (double)count * (dbl ? sizeof(double) : sizeof(float));
    snprintf(op->what, sizeof op->what, "scale(%.3g)", factor);
}

/* ---- spectral operator ----------------------------------------------------------------- */

/* The origin's element: a complex double. */
enum { ORIGIN_ELEM = 2 * sizeof(double) };

static int spectral_execute(const tide_op *op, const tide_env *e, void *src, void *dst)
{
    const tide_spectral *d = op->spec;
    size_t bytes = (size_t)tide_box_count(tide_spectral_arr(d)) * (size_t)d->batch *
                   tide_spectral_elem(d);
    int st = src == dst ? TIDE_SUCCESS : e->be->copy(e, dst, src, bytes);
    return st || !tide_box_count(&d->box) || !d->batch ? st : e->be->spectral(e, d, dst);
}

/* The tables of d in the order spectral_tables fills them. */
static const double **spec_table(tide_spectral *d, int k)
{
    const double **t[] = {&d->lam[0],    &d->lam[1],    &d->lam[2], &d->lower, &d->diag,
                          &d->upper,     &d->weight,    &d->mean_w[0], &d->mean_w[1],
                          &d->mean_w[2]};
    return t[k];
}

enum { SPEC_TABLES = 10 };

/* The length of table k of d on grid n (0: d has none). */
static int spec_table_len(const tide_spectral *d, int k, const int n[3])
{
    if (k < 3)
        return n[k];
    if (k < 7)
        return d->line >= 0 && !d->line_fft ? n[d->line] : 0;
    return d->mean_w[k - 7] ? n[k - 7] : 0;
}

static void spectral_destroy(tide_op *op, const tide_env *e)
{
    tide_spectral *d = op->spec;
    if (!d)
        return;
    for (int k = 0; k < SPEC_TABLES; k++)
        e->be->free((void *)*spec_table(d, k));
    e->be->free(d->origin);
    e->be->free(d->scratch);
    free(d);
    op->spec = NULL;
}

static const tide_op_class spectral_class = {spectral_execute, spectral_destroy, 0, 0, NULL};

/* Copies d's tables (host memory, src) into the backend's memory (x), the lam tables of n[k]
 * doubles, with a tridiagonal line its four of n[line], and the mean weights given; zeroes
 * the origin and allocates the scratch (a tridiagonal line's). */
static int spectral_tables(const tide_env *e, const tide_spectral *src, tide_spectral *x,
                           const int n[3])
{
    size_t zb = (size_t)src->batch * ORIGIN_ELEM;
    int st = e->be->alloc(zb, &x->origin);
    void *zeros = st ? NULL : calloc(1, zb);
    st = st || !zeros ? TIDE_ERR_NOMEM : e->be->copy(e, x->origin, zeros, zb);
    free(zeros);
    for (int k = 0; k < SPEC_TABLES && !st; k++) {
        size_t bytes = (size_t)spec_table_len(src, k, n) * sizeof(double);
        void *t = NULL;
        if (!bytes)
            continue;
        st = e->be->alloc(bytes, &t);
        *spec_table(x, k) = t;
        if (!st)
            st = e->be->copy(e, t, *spec_table((tide_spectral *)src, k), bytes);
    }
    if (!st && src->line >= 0 && !src->line_fft) { /* a double per point (GPU), three per
                                                    * point of a block of lines (CPU) */
        void *s = NULL;
        st = e->be->alloc(tide_spectral_scratch(src, n[src->line]) * sizeof(double), &s);
        x->scratch = s;
    }
    return st ? st : e->be->sync(e); /* the host tables may go when this returns */
}

int tide_op_spectral(tide_op *op, const tide_env *e, const tide_spectral *d, const int n[3],
                     char *err, size_t len)
{
    op->cls = &spectral_class;
    op->in_place_ok = 1;
    op->dbl = d->dbl;
    int line = d->line >= 0 && !d->line_fft;
    op->kind = d->line >= 0 ? TIDE_OP_LINE_SOLVE : TIDE_OP_POINTWISE;
    if (line)
        snprintf(op->what, sizeof op->what, "tridiag(%c)", "xyz"[d->line]);
    else if (d->line_fft)
        snprintf(op->what, sizeof op->what, "fft+eigen(%c)", "xyz"[d->line]);
    else
        snprintf(op->what, sizeof op->what, "eigen");
    double points = (double)tide_box_count(&d->box) * d->batch;
    /* Diagonal: the sum, one division, two products; with the line's two transforms, 5 log2 n
     * flops per point each. Thomas: 8 flops per point on each of the real and imaginary
     * parts, with the eliminated diagonal written and read back. */
    op->cost.flops = (line ? 16 : 6) * points;
    if (d->line_fft && tide_ext(&d->box, d->line) > 1) /* (an empty box has no lines) */
        op->cost.flops += 10 * log2((double)tide_ext(&d->box, d->line)) * points;
    op->cost.mem_bytes = 2 * points * (double)tide_spectral_elem(d) * (line ? 2 : 1) +
                         (line ? 2 * points * sizeof(double) : 0);
    op->fields = d->batch; /* the fields origin holds, whatever batch a chunk runs with */
    tide_spectral *x = calloc(1, sizeof *x);
    if (!x)
        return snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM;
    *x = *d;
    for (int k = 0; k < SPEC_TABLES; k++)
        *spec_table(x, k) = NULL; /* until they are in the backend's memory */
    x->origin = NULL;
    x->scratch = NULL;
    op->spec = x;
    int st = spectral_tables(e, d, x, n);
    if (st)
        snprintf(err, len, "cannot hold the spectral operator's tables in %s memory: %s",
                 e->be->name, e->be->last_error());
    return st;
}

static int fused_execute(const tide_op *op, const tide_env *e, void *src, void *dst)
{
    (void)op, (void)e, (void)src, (void)dst; /* in place: the FFT before it did the work */
    return TIDE_SUCCESS;
}

static const tide_op_class spectral_fused_class = {fused_execute, spectral_destroy, 0, 0, NULL};

void tide_op_spectral_fused(tide_op *op)
{
    op->cls = &spectral_fused_class;
    op->cost.mem_bytes = 0;
    snprintf(op->what, sizeof op->what, "eigen(in fft)");
}

int tide_op_spectral_is_fused(const tide_op *op) { return op->cls == &spectral_fused_class; }

int tide_op_spectral_origin(const tide_op *op, const tide_env *e, void *dst)
{
    int st = e->be->copy(e, dst, op->spec->origin, (size_t)op->fields * ORIGIN_ELEM);
    return st ? st : e->be->sync(e);
}

int tide_op_spectral_clear(const tide_op *op, const tide_env *e)
{
    static const double zeros[512]; /* copied over the origin a block at a time, no allocation
                                     * per solve */
    size_t bytes = (size_t)op->fields * ORIGIN_ELEM;
    int st = TIDE_SUCCESS;
    for (size_t at = 0; at < bytes && !st; at += sizeof zeros)
        st = e->be->copy(e, (char *)op->spec->origin + at, zeros,
                         bytes - at < sizeof zeros ? bytes - at : sizeof zeros);
    return st ? st : e->be->sync(e);
}

void tide_op_spectral_chunk(const tide_op *op, const tide_box *box, const tide_box *arr,
                            int field)
{
    tide_spectral *d = op->spec;
    d->box = *box;
    d->arr = *arr;
    d->field = field;
    d->batch = 1;
    d->keep = 1;
}

/* ---- stencil sweep --------------------------------------------------------------------- */

static int sweep_execute(const tide_op *op, const tide_env *e, void *src, void *dst)
{
    return e->be->sweep(e, op->sweep, src, dst, op->steps);
}

static void sweep_destroy(tide_op *op, const tide_env *e) { (void)op, (void)e; }

static const tide_op_class sweep_class = {sweep_execute, sweep_destroy, 0, 0, NULL};

void tide_op_sweep(tide_op *op, tide_sweep *s, int fuse)
{
    op->cls = &sweep_class;
    op->kind = TIDE_OP_STENCIL;
    op->sweep = s;
    op->dbl = s->dbl;
    op->steps = fuse;
    double points = (double)s->n[0] * s->n[1] * s->n[2];
    double words = s->source ? 3 : 2; /* read and write once per pass, the source read */
    op->cost.flops = (2.0 * s->ntaps - 1 + (s->source ? 1 : 0)) * points * fuse;
    op->cost.mem_bytes = words * points * (s->dbl ? sizeof(double) : sizeof(float));
    snprintf(op->what, sizeof op->what, "sweep[%d step%s]", fuse, fuse > 1 ? "s" : "");
}

/* ---- halo exchange ----------------------------------------------------------------------- */

static int halo_execute(const tide_op *op, const tide_env *e, void *src, void *dst)
{
    (void)dst; /* in place */
    int st = e->failed ? TIDE_SUCCESS : e->be->sync(e);
    double t0 = MPI_Wtime();
    int x = e->be->halo(e, op->halo, src, TIDE_HALO_ALL);
    op->tally->seconds += MPI_Wtime() - t0;
    op->tally->exchanges++;
    return st ? st : x;
}

static void halo_destroy(tide_op *op, const tide_env *e) { (void)op, (void)e; }

static const tide_op_class halo_class = {halo_execute, halo_destroy, 1, 0, NULL};

void tide_op_halo(tide_op *op, const tide_halo *h, tide_halo_tally *tally)
{
    op->cls = &halo_class;
    op->kind = TIDE_OP_HALO;
    op->halo = h;
    op->tally = tally;
    op->in_place_ok = 1;
    op->cost.net_bytes = 0; /* the halo's points: the plan counts them (tide_halo_points) */
    snprintf(op->what, sizeof op->what, "halo");
}

/* ---- multiply update ------------------------------------------------------------------- */

static int gemm_execute(const tide_op *op, const tide_env *e, void *src, void *dst)
{
    (void)src; /* in place in C */
    const tide_gemm_operands *x = op->operands;
    return e->be->gemm(e, op->blas, &x->g, x->alpha, x->a, x->b, x->beta, dst);
}

static void gemm_destroy(tide_op *op, const tide_env *e) { (void)op, (void)e; }

static const tide_op_class gemm_class = {gemm_execute, gemm_destroy, 0, 0, NULL};

void tide_op_gemm(tide_op *op, void *h, const tide_gemm_desc *g, const tide_gemm_operands *x)
{
    op->cls = &gemm_class;
    op->kind = TIDE_OP_GEMM;
    op->in_place_ok = 1;
    op->dbl = g->dbl;
    op->blas = h;
    op->operands = x;
    double m = (double)g->m, n = (double)g->n, k = (double)g->k;
    op->cost.flops = tide_gemm_ops(g) * m * n * k;
    /* A and B read once, C read and written */
    op->cost.mem_bytes = (m * k + k * n + 2 * m * n) * (double)tide_gemm_elem(g);
    snprintf(op->what, sizeof op->what, "gemm[%lldx%lldx%lld]", g->m, g->n, g->k);
}

/* ---- copy ------------------------------------------------------------------------------ */

static int copy_execute(const tide_op *op, const tide_env *e, void *src, void *dst)
{
    return *op->bytes ? e->be->copy(e, dst, src, *op->bytes) : TIDE_SUCCESS;
}

static void copy_destroy(tide_op *op, const tide_env *e) { (void)op, (void)e; }

static const tide_op_class copy_class = {copy_execute, copy_destroy, 0, 0, NULL};

/* What every copy op is: its class, its kind, one read and one write of `most` bytes, and its
 * name with that count. */
static void copy_op(tide_op *op, const tide_op_class *cls, const char *name, size_t most)
{
    op->cls = cls;
    op->kind = TIDE_OP_COPY;
    op->cost.mem_bytes = 2.0 * (double)most;
    snprintf(op->what, sizeof op->what, "%s[%zu B]", name, most);
}

void tide_op_copy(tide_op *op, const size_t *bytes, size_t most)
{
    copy_op(op, &copy_class, "copy", most);
    op->bytes = bytes;
}

static int region_execute(const tide_op *op, const tide_env *e, void *src, void *dst)
{
    const tide_region_copy *x = op->region;
    return e->be->copy_region(e, x->elem, &x->region, src, &x->from, dst, &x->to);
}

static const tide_op_class region_class = {region_execute, copy_destroy, 0, 0, NULL};

void tide_op_copy_region(tide_op *op, const tide_region_copy *x, size_t most)
{
    copy_op(op, &region_class, "copy region", most);
    op->region = x;
}

/* ---- a pass's steps on one chunk ------------------------------------------------------ */

int tide_steps_run(const tide_step *s, int n, const tide_env *e, int *status,
                   const tide_op **failed_at)
{
    tide_env f = *e;
    int collective = 0;
    for (int k = 0; k < n; k++) {
        const tide_op *op = s[k].op;
        collective |= op->cls->collective;
        if (*status && !tide_op_runs_after_failure(op))
            continue;
        f.failed = *status;
        int st = op->cls->execute(op, &f, s[k].src, s[k].dst);
        if (st && !*status) {
            *status = st;
            if (failed_at)
                *failed_at = op;
        }
    }
    return collective;
}

/* ---- placement ------------------------------------------------------------------------- */

/* Where op k writes: OUT from `first_out` on, else in place in a work buffer, else the other
 * work buffer. */
static int next_loc(int src, int out, int in_place)
{
    if (out)
        return TIDE_LOC_OUT; /* in place when src is already OUT */
    if (in_place && (src == TIDE_LOC_W0 || src == TIDE_LOC_W1))
        return src;
    return src == TIDE_LOC_W0 ? TIDE_LOC_W1 : TIDE_LOC_W0;
}

int tide_run_checks(const tide_env *e, int device, const void *a, int has_data,
                    long long steps, int enter_st, void *entry, void *caller, char *why,
                    size_t len)
{
    if (enter_st)
        return snprintf(why, len, "could not make GPU %d current (%s) in", e->ctx->dev.device,
                        tide_backend_cuda()->last_error()), enter_st;
    if (steps < 0)
        return snprintf(why, len, "asked for %lld steps in", steps), TIDE_ERR_ARGUMENT;
    if (!a && has_data)
        return snprintf(why, len, "passed a NULL array to"), TIDE_ERR_ARGUMENT;
    const char *m = a ? tide_array_location(e->ctx, device, a) : "";
    if (*m)
        return snprintf(why, len, "passed %s to", m), TIDE_ERR_ARGUMENT;
    if (tide_order_after(entry, caller, e->be->gpu ? e->stream : NULL))
        return snprintf(why, len, "could not wait for the caller's earlier CUDA work (%s) in",
                        tide_backend_cuda()->last_error()), TIDE_ERR_BACKEND;
    return TIDE_SUCCESS;
}

void tide_program_place(tide_program *prog, int gpu)
{
    int n = prog->nops, last = n - 1;
    while (last > 0 && prog->ops[last].kind == TIDE_OP_POINTWISE)
        last--; /* trailing pointwise ops run in place in OUT */
    int last_reshape = -1;
    for (int i = 0; i <= last; i++)
        if (prog->ops[i].kind == TIDE_OP_RESHAPE)
            last_reshape = i;
    int first_out = last;
    if (last_reshape > 0) {
        first_out = last_reshape;
        for (int i = last_reshape + 1; i <= last; i++)
            if (!prog->ops[i].in_place_ok)
                first_out = last;
    }
    for (int i = 0; i < n; i++) {
        tide_op *o = &prog->ops[i];
        o->src = i == 0 ? TIDE_LOC_IN : prog->ops[i - 1].dst;
        int reshape = o->kind == TIDE_OP_RESHAPE;
        o->dst = i > last ? TIDE_LOC_OUT
                          : next_loc(o->src, i >= first_out, !reshape && o->in_place_ok);
        o->stage_input = !reshape && o->src == TIDE_LOC_IN &&
                         (o->dst == TIDE_LOC_OUT || o->overwrites_input);
        o->stage_loc = o->dst == TIDE_LOC_W0 ? TIDE_LOC_W1 : TIDE_LOC_W0;
        if (gpu && o->in_place_ok)
            o->stage_input = o->stage_input && o->overwrites_input;
    }
}

void *tide_program_stand_in(void *const w[2], int loc, int other)
{
    if (loc == TIDE_LOC_W0 || loc == TIDE_LOC_W1)
        return w[loc - TIDE_LOC_W0];
    return w[other == TIDE_LOC_W0 ? 1 : 0];
}

/* ---- execution ------------------------------------------------------------------------- */

static void *where(void *const w[2], int loc, const void *in, void *out)
{
    switch (loc) {
    case TIDE_LOC_IN: return (void *)in;
    case TIDE_LOC_OUT: return out;
    default: return w[loc - TIDE_LOC_W0];
    }
}

static int run_op(const tide_op *o, const tide_env *e, void *const w[2], const void *in,
                  void *out)
{
    void *src = where(w, o->src, in, out), *dst = where(w, o->dst, in, out);
    /* The staged copy keeps an op from writing where it still reads (in == out, or c2r,
     * which overwrites its input) and out-of-place inputs unmodified; an op that overwrites
     * its input may instead make its first pass write the stage (execute_staged). */
    if (o->stage_input && (src == dst || o->overwrites_input)) {
        void *stage = where(w, o->stage_loc, in, out);
        int st = o->overwrites_input && o->cls->execute_staged
                     ? o->cls->execute_staged(o, e, src, stage, dst)
                     : TIDE_ERR_UNSUPPORTED;
        if (st != TIDE_ERR_UNSUPPORTED)
            return st;
        st = e->be->copy(e, stage, src, o->stage_bytes);
        if (st)
            return st;
        src = stage;
    }
    return o->cls->execute(o, e, src, dst);
}

int tide_program_run(const tide_program *prog, const tide_env *e, void *const w[2],
                     const void *in, void *out, int status, const char **failed_at,
                     char *times, size_t tlen)
{
    int st = status;
    size_t used = 0;
    *failed_at = "";
    tide_env failed = *e; /* what a collective op runs with after a failure */
    for (int i = 0; i < prog->nops; i++) {
        const tide_op *o = &prog->ops[i];
        if (st && !tide_op_runs_after_failure(o))
            continue;
        failed.failed = st;
        double t0 = times ? MPI_Wtime() : 0;
        int rc = run_op(o, st ? &failed : e, w, in, out);
        if (rc && !st)
            *failed_at = o->what;
        st = st ? st : rc;
        if (times && !st)
            st = e->be->sync(e);
        if (times && used < tlen)
            used += (size_t)snprintf(times + used, tlen - used, " %s %.3g ms", o->what,
                                     (MPI_Wtime() - t0) * 1e3);
    }
    return st;
}

void tide_program_destroy(tide_program *prog, const tide_env *e)
{
    for (int i = 0; i < prog->nops; i++)
        if (prog->ops[i].cls)
            prog->ops[i].cls->destroy(&prog->ops[i], e);
    prog->nops = 0;
}
