/*
 * fft_streamed.c: distributed 3D FFTs (C2C, R2C) of host arrays streamed through the GPU: the
 * slab algorithm of Chen, Cui and Mei (2010) as a streamed program (plan/streamed.h).
 *
 * Ranks hold x-slabs (C order) of the input; the output is in x-slabs too, or, transposed, in
 * y-slabs. A transform is two passes:
 *   the pass over x-planes: chunks of x-planes get their FFTs over (y,z);
 *   the pass over y-rows:   chunks of y-rows get their FFTs over x.
 * With several ranks the first pass moves the data from x-slabs to y-slabs (or back), and the
 * second moves it back unless the output is transposed. A transposed backward transform
 * starts from y-slabs, so it runs the y-row pass first.
 *
 * Real transforms: the r2c over z is done first, with the 2D transform over (y,z) of the
 * x-plane pass; the c2r over z last, with the x transform of the y-row pass (natural output:
 * the x-plane pass then transforms y alone) or with the 2D c2r over (y,z) of the x-plane pass
 * (transposed). Every transfer then counts in real scalars, complex data having twice as many
 * along z; a chunk always has the complex chunk's shape on the device, so real rows land
 * padded, as cuFFT's in-place real transforms want them. Scaling runs in the first pass.
 */
#include <stdio.h>
#include <stdlib.h>
#include "fft/fft_streamed.h"

typedef struct {
    const tide_fft_streamed_desc *d;
    int zc;                     /* scalars (r2c) or elements along z of complex data */
} fft_user;

/* The dimension pass k of direction dir cuts: 0 (x-planes) or 1 (y-rows). */
static int pass_dim(const tide_fft_streamed_desc *d, int dir, int k)
{
    int first = d->transposed && dir ? 1 : 0;
    return k ? 1 - first : first;
}

/* One cuFFT transform of a chunk laid out as cbox: kind, transformed dimensions d0 (and d1
 * when nd is 2). A real transform's complex side has zc / 2 elements along z. */
static int add_fft(const fft_user *u, const tide_env *e, const tide_box *cbox, int dir,
                   tide_fft_kind kind, int nd, int d0, int d1, tide_op *op, size_t *work,
                   char *err, size_t len)
{
    const tide_fft_streamed_desc *d = u->d;
    tide_box c = *cbox;
    if (d->r2c)
        c.hi[2] = c.lo[2] + u->zc / 2;
    tide_cpu_fft_desc f = {.precision = d->dbl ? TIDE_DOUBLE : TIDE_FLOAT, .kind = kind,
                           .sign = dir ? +1 : -1,
                           .ibox = kind == TIDE_KIND_R2C ? cbox : &c,
                           .obox = kind == TIDE_KIND_C2R ? cbox : &c, .dims = {d0, d1},
                           .ndims = nd, .half = 2, .real_n = d->n[2], .batch = 1};
    return tide_op_fft(op, e, &f, work, err, len);
}

/* The ops of pass k of direction dir (see the top of the file). */
static int make_ops(void *user, int dir, int k, int slot, const tide_env *e,
                    const tide_box *cbox, const tide_box *out, tide_op *ops, int *nops,
                    size_t *work, char *err, size_t len)
{
    (void)slot, (void)out; /* in place: cbox */
    const fft_user *u = user;
    const tide_fft_streamed_desc *d = u->d;
    int n = 0, st, xrows = pass_dim(d, dir, k) == 1;
    if (!d->r2c)
        st = xrows ? add_fft(u, e, cbox, dir, TIDE_KIND_C2C, 1, 0, 0, &ops[n++], work, err, len)
                   : add_fft(u, e, cbox, dir, TIDE_KIND_C2C, 2, 1, 2, &ops[n++], work, err, len);
    else if (!dir)
        st = xrows ? add_fft(u, e, cbox, dir, TIDE_KIND_C2C, 1, 0, 0, &ops[n++], work, err, len)
                   : add_fft(u, e, cbox, dir, TIDE_KIND_R2C, 2, 1, 2, &ops[n++], work, err, len);
    else if (xrows) {
        st = add_fft(u, e, cbox, dir, TIDE_KIND_C2C, 1, 0, 0, &ops[n++], work, err, len);
        if (!st && !d->transposed)
            st = add_fft(u, e, cbox, dir, TIDE_KIND_C2R, 1, 2, 0, &ops[n++], work, err, len);
    } else {
        st = d->transposed
                 ? add_fft(u, e, cbox, dir, TIDE_KIND_C2R, 2, 1, 2, &ops[n++], work, err, len)
                 : add_fft(u, e, cbox, dir, TIDE_KIND_C2C, 1, 1, 0, &ops[n++], work, err, len);
    }
    if (!st && k == 0 && d->scale[dir] != 1.0) /* padding and all: every scalar of the box */
        tide_op_scale(&ops[n++], d->dbl, tide_box_count(cbox) * (d->r2c ? 1 : 2),
                      d->scale[dir]);
    *nops = n;
    return st;
}

int tide_fft_streamed_create(const tide_env *env, const tide_fft_streamed_desc *d,
                           tide_streamed **out, char *err, size_t len)
{
    int P = env->ctx->nranks, T = d->transposed;
    fft_user u = {d, d->r2c ? 2 * (d->n[2] / 2 + 1) : d->n[2]};
    int zreal = d->r2c ? d->n[2] : u.zc, grid[3] = {d->n[0], d->n[1], u.zc};
    tide_box *lay = malloc(2 * (size_t)P * sizeof *lay);
    if (!lay)
        return snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM;
    for (int r = 0; r < P; r++) {
        tide_box_slab(grid, 0, P, r, &lay[r]);
        tide_box_slab(grid, 1, P, r, &lay[P + r]);
    }
    size_t scalar = d->dbl ? sizeof(double) : sizeof(float);
    tide_streamed_desc sd = {.env = env, .layout = {lay, lay + P},
                           .elem = d->r2c ? scalar : 2 * scalar, .batch = d->batch,
                           .ndirs = 2, .npasses = 2, .make_ops = make_ops, .user = &u,
                           .budget = d->budget, .resident = d->resident};
    for (int dir = 0; dir < 2; dir++) {
        int first = pass_dim(d, dir, 0), second = 1 - first;
        sd.pass[dir][0] = (tide_pass_desc){first, P > 1 ? second : first, first,
                                           dir ? u.zc : zreal, u.zc, -1, 0};
        sd.pass[dir][1] = (tide_pass_desc){second, P > 1 && !T ? first : second, second, u.zc,
                                           dir ? zreal : u.zc, -1, 0};
    }
    int st = tide_streamed_create(&sd, out, err, len);
    free(lay);
    return st;
}
