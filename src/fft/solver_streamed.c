/*
 * solver_streamed.c: FFT solves (solver.h) of host arrays streamed through the GPU, for data
 * beyond the device budget, by one of two schemes (plan/streamed.h's passes).
 *
 * Every transform on the GPU: three passes, each crossing PCIe once each way.
 *
 * The ranks hold slabs along the outer dimension o (x or y) of the real data; m is the other
 * of the two. The passes cut o, m, o:
 *   A: chunks of o-planes get the forward transforms of m and z (a real transform first:
 *      the data becomes complex, halving its highest DFT dimension h), out of place;
 *   B: chunks of m-planes get the forward transform of o, the middle op (the eigenvalue
 *      scaling or the line solves, with the chunk's place in the spectral grid), and the
 *      inverse transform of o, in place;
 *   C: chunks of o-planes get the inverse transforms of m and z, out of place (the data
 *      becomes real again).
 * With several ranks A moves the data from o-slabs to m-slabs and B moves it back: two
 * exchanges. o is chosen so that the middle op has its line whole in B (x or z; y when o is
 * y) and the halved dimension is transformed in A (h is never o).
 *
 * The CPU's x transforms (Wu 2014's scheme, one rank, x periodic): the CPU transforms x (a
 * real transform, halving x, FFTW on all cores) from f into pinned host memory; one pass over
 * chunks of x-planes does the rest on the GPU in place (the transforms of y and z, the middle
 * op, their inverses), so the data crosses PCIe once each way; the CPU's inverse x transform
 * writes u.
 *
 * Units: the runner counts real scalars; complex data has twice as many along z. The passes
 * see the spectral grid as complex (or real, with no DFT at all) elements.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fft/solver_streamed.h"

typedef struct {
    tide_solver_streamed_desc d;
    int o, h;    /* the outer dimension, the halved one (-1: none) */
    int threads; /* the CPU's (host passes) */
} solver_user;

int tide_solver_streamed_cpu_x(const tide_fft_middle *mid, int P)
{
    return P == 1 && (mid->transform & 1) && mid->r2r[0] == TIDE_R2R_NONE;
}

int tide_solver_streamed_outer(const tide_fft_middle *mid, const int n[3], int P)
{
    int w = mid->whole, h = tide_middle_halved(mid);
    int o = w & 2 ? 1 : w & 1 ? 0 : h == 0 ? 1 : 0;
    for (int k = 0; k < 2; k++)
        if (P > (k == h ? n[k] / 2 + 1 : n[k]))
            return -1;
    return (w & 3) == 3 || h == o ? -1 : o;
}

/* A box counted in real scalars as the elements of the spectral grid (complex: half along z). */
static tide_box elements(const solver_user *u, tide_box b)
{
    if (u->h >= 0)
        b.hi[2] = b.lo[2] + (b.hi[2] - b.lo[2]) / 2;
    return b;
}

/* The transforms of the dimensions in bits, forward or inverse, from box i in chunk
 * buffer src (laid out as ia) to box o in buffer dst (laid out as oa): a real transform when
 * real (R2C or C2R on the real side i or o), else complex ones or real-to-real ones alone. */
static int add_fft(const solver_user *u, const tide_env *e, int bits, int inverse, int real,
                   const tide_box *i, const tide_box *ia, const tide_box *o,
                   const tide_box *oa, int src, int dst, tide_op *op, size_t *work, char *err,
                   size_t len)
{
    const tide_fft_middle *mid = u->d.mid;
    int dft = 0;
    tide_cpu_fft_desc f = {.precision = u->d.dbl ? TIDE_DOUBLE : TIDE_FLOAT,
                           .sign = inverse ? +1 : -1, .ibox = i, .obox = o, .iarr = ia,
                           .oarr = oa, .half = u->h, .real_n = u->h >= 0 ? u->d.n[u->h] : 0,
                           .batch = 1, .complex_elems = u->h >= 0, .threads = u->threads};
    for (int k = 0; k < 3; k++)
        if (bits & (1 << k)) {
            f.dims[f.ndims++] = k;
            f.r2r[k] = inverse ? (int)tide_r2r_inverse((tide_r2r_kind)mid->r2r[k]) : mid->r2r[k];
            dft = dft || mid->r2r[k] == TIDE_R2R_NONE;
        }
    f.kind = !dft ? TIDE_KIND_R2R : !real ? TIDE_KIND_C2C : inverse ? TIDE_KIND_C2R
                                                                    : TIDE_KIND_R2C;
    if (!dft)
        f.complex_elems = u->h >= 0 && !real;
    op->src = src, op->dst = dst;
    f.by_planes = !e->be->gpu; /* the CPU's x, plane by plane of y (cpu_fft.h) */
    f.plane_dim = 1;
    return tide_op_fft(op, e, &f, work, err, len);
}

/* The ops of pass k (see the top of the file). */
static int make_ops(void *user, int dir, int k, int slot, const tide_env *e, const tide_box *in,
                    const tide_box *out, tide_op *ops, int *nops, size_t *work, char *err,
                    size_t len)
{
    (void)dir;
    const solver_user *u = user;
    const tide_fft_middle *mid = u->d.mid;
    int n = 0, st = 0, outer = mid->transform & ~(1 << u->o) & 7, ob = 1 << u->o;
    if (u->d.cpu_x) /* the CPU's x transforms around the GPU's pass over x-planes */
        outer = 1, ob = mid->transform & 6;
    if (k != 1) { /* A and C: the real data's chunk (z padded to even), the spectral one */
        tide_box ra = k ? *out : *in, r = ra, c = elements(u, k ? *in : *out);
        r.hi[2] = u->d.n[2];
        st = k ? add_fft(u, e, outer, 1, u->h >= 0, &c, NULL, &r, &ra, 0, 1, &ops[n++], work,
                         err, len)
               : add_fft(u, e, outer, 0, u->h >= 0, &r, &ra, &c, NULL, 0, 1, &ops[n++], work,
                         err, len);
        *nops = n;
        return st;
    }
    tide_box c = elements(u, *in);
    int grid[3] = {u->d.n[0], u->d.n[1], u->d.n[2]};
    if (u->h >= 0)
        grid[u->h] = grid[u->h] / 2 + 1;
    if (mid->transform & ob)
        st = add_fft(u, e, ob, 0, 0, &c, NULL, &c, NULL, 0, 0, &ops[n++], work, err, len);
    if (!st) {
        ops[n].src = ops[n].dst = 0;
        st = mid->make(&ops[n++], e, &c, grid, slot, mid->user, err, len);
    }
    if (!st && (mid->transform & ob))
        st = add_fft(u, e, ob, 1, 0, &c, NULL, &c, NULL, 0, 0, &ops[n++], work, err, len);
    *nops = n;
    return st;
}

/* The middle op of pass B on the chunk at region (buffer laid out as chunk) of field f. */
static void at_chunk(void *user, int dir, int k, int field, const tide_box *region,
                     const tide_box *chunk, const tide_op *ops, int nops)
{
    (void)dir;
    const solver_user *u = user;
    for (int j = 0; j < nops && k == 1; j++)
        if (ops[j].spec) {
            tide_box r = elements(u, *region), c = elements(u, *chunk);
            tide_op_spectral_chunk(&ops[j], &r, &c, field);
        }
}

double tide_solver_streamed_cpu_seconds(const tide_env *env, const tide_solver_streamed_desc *d)
{
    /* The x transforms of four planes of y per thread (every x and z; so that the threads'
     * imbalance and sharing of cores shows as in the whole pass), at most 1 GiB of them,
     * forward and inverse, the best of three after a warm-up, scaled to all of them */
    int T = env->ctx->threads, n0 = d->n[0], sx = n0 / 2 + 1;
    size_t scalar = d->dbl ? sizeof(double) : sizeof(float);
    double plane = (double)sx * 2 * d->n[2] * scalar * 2, most = fmax(T, (1 << 30) / plane);
    int ns = (int)fmin(fmin(d->n[1], 4.0 * T), most);
    tide_box r = {{0, 0, 0}, {n0, ns, d->n[2]}, {0, 1, 2}}, c = r;
    c.hi[0] = sx;
    tide_env cpu = {.ctx = env->ctx, .be = &tide_backend_cpu, .threads = env->ctx->threads};
    solver_user u = {*d, 0, 0, env->ctx->threads};
    tide_op op[2];
    memset(op, 0, sizeof op);
    char err[TIDE_MSG_LEN];
    size_t none = 0;
    void *a = calloc((size_t)tide_box_count(&r), scalar);
    void *b = calloc((size_t)tide_box_count(&c), 2 * scalar);
    int st = !a || !b ? TIDE_ERR_NOMEM
                      : add_fft(&u, &cpu, 1, 0, 1, &r, NULL, &c, NULL, 0, 1, &op[0], &none, err,
                                sizeof err);
    st = st ? st : add_fft(&u, &cpu, 1, 1, 1, &c, NULL, &r, NULL, 0, 1, &op[1], &none, err,
                           sizeof err);
    double best = INFINITY;
    for (int rep = 0; rep < 4 && !st; rep++) {
        double t = MPI_Wtime();
        st = op[0].cls->execute(&op[0], &cpu, a, b);
        st = st ? st : op[1].cls->execute(&op[1], &cpu, b, a);
        t = MPI_Wtime() - t;
        best = rep && t < best ? t : best;
    }
    for (int k = 0; k < 2; k++)
        if (op[k].cls)
            op[k].cls->destroy(&op[k], &cpu);
    free(a);
    free(b);
    return st ? INFINITY : best * d->n[1] / ns * d->batch;
}

int tide_solver_streamed_create(const tide_env *env, const tide_solver_streamed_desc *d,
                              tide_streamed **out, char *err, size_t len)
{
    int P = env->ctx->nranks, cpu = d->cpu_x;
    int o = cpu ? 0 : tide_solver_streamed_outer(d->mid, d->n, P);
    solver_user u = {*d, o, cpu ? 0 : tide_middle_halved(d->mid), env->ctx->threads};
    if (o < 0 || (cpu && !tide_solver_streamed_cpu_x(d->mid, P)))
        return snprintf(err, len, "no streamed solve %sfor this problem on %d ranks",
                        cpu ? "with the CPU's x transforms " : "", P), TIDE_ERR_UNSUPPORTED;
    /* R: the real data's grid on the device, z padded to even so that a chunk's z rows start
     * aligned like complex data, as cuFFT's real transforms want them (gpu/fft.cu); the CPU's
     * transforms read and write it as it is */
    int R[3] = {d->n[0], d->n[1], d->n[2] + (cpu ? 0 : d->n[2] % 2)};
    int S[3] = {d->n[0], d->n[1], d->n[2]};
    if (u.h >= 0) {
        S[u.h] = S[u.h] / 2 + 1;
        S[2] *= 2;
    }
    tide_box *lay = malloc(3 * (size_t)P * sizeof *lay);
    if (!lay)
        return snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM;
    for (int r = 0; r < P; r++) {
        tide_box_slab(R, o, P, r, &lay[r]);         /* 0: the real data, o-slabs */
        tide_box_slab(S, o, P, r, &lay[P + r]);     /* 1: spectral, o-slabs */
        tide_box_slab(S, 1 - o, P, r, &lay[2 * P + r]); /* 2: spectral, m-slabs */
    }
    size_t scalar = d->dbl ? sizeof(double) : sizeof(float);
    tide_streamed_desc sd = {.env = env, .layout = {lay, lay + P, lay + 2 * P}, .elem = scalar,
                           .batch = d->batch, .ndirs = 1, .npasses = 3, .make_ops = make_ops,
                           .chunk = at_chunk, .user = &u, .user_bytes = sizeof u,
                           .budget = d->budget};
    sd.pass[0][0] = (tide_pass_desc){1, 2, o, d->n[2], S[2], 0, cpu};
    sd.pass[0][1] = cpu ? (tide_pass_desc){1, 1, 0, S[2], S[2], -1, 0}
                        : (tide_pass_desc){2, 1, 1 - o, S[2], S[2], -1, 0};
    sd.pass[0][2] = (tide_pass_desc){0, 0, o, S[2], d->n[2], 1, cpu};
    int st = tide_streamed_create(&sd, out, err, len);
    free(lay);
    return st;
}
