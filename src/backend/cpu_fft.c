/* cpu_fft.c: FFTW guru plans for the local transforms of the CPU backend. */
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <fftw3.h>
#include "backend/cpu_fft.h"
#include "core/core.h"
#include "comm/region.h"

struct tide_cpu_fft {
    tide_precision precision;
    tide_fft_kind kind;
    /* The transform (a DFT, or kind R2R its real-to-real transform), planned for SIMD-aligned
     * arrays (our buffers, fftw_malloc'ed ones) and for any alignment (user arrays). */
    void *aligned, *unaligned;
    /* A DFT with real-to-real dimensions too: their transform, in place on the complex side. */
    void *pass_aligned, *pass_unaligned;
    /* by_planes (tide_cpu_fft_desc): the planes and the bytes from one to the next in the
     * input and output; each plane's lines along the transformed dimension t (len elements on
     * each side) at `rows` places along the third dimension r (strides in elements); per
     * thread a staging block of the rows transposed (input, then output) */
    int planes, threads, rows, ilen, olen;
    size_t istep, ostep, ielem, oelem, iblock, block; /* iblock: the input's part of block */
    int64_t ist, isr, ost, osr;
    char *stage;
};

tide_r2r_kind tide_r2r_inverse(tide_r2r_kind k)
{
    switch (k) {
    case TIDE_R2R_DCT2:
        return TIDE_R2R_DCT3;
    case TIDE_R2R_DCT3:
        return TIDE_R2R_DCT2;
    case TIDE_R2R_DST2:
        return TIDE_R2R_DST3;
    case TIDE_R2R_DST3:
        return TIDE_R2R_DST2;
    default:
        return k; /* DCT-IV, DST-IV, NONE */
    }
}

static fftw_r2r_kind fftw_kind(int k)
{
    static const fftw_r2r_kind kinds[] = {FFTW_R2HC, FFTW_REDFT10, FFTW_REDFT01, FFTW_RODFT10,
                                          FFTW_RODFT01, FFTW_REDFT11, FFTW_RODFT11};
    return kinds[k];
}

/* Guru dimensions of one plan: transformed dims (with their kinds, for a real-to-real plan)
 * and the batch loops (box dims, the two parts of complex elements seen as reals, fields). */
typedef struct {
    int rank, howmany_rank;
    fftw_iodim64 dims[3], howmany[5];
    fftw_r2r_kind kinds[3];
} guru_shape;

/* The plan over the dimensions of d in mask: lengths from box lb, the halved dimension `half`
 * (-1: none) real_n long and last (FFTW halves the last guru dimension), strides from the
 * arrays ia and oa, in units of their elements times `unit` (2: complex elements seen as pairs
 * of reals, which adds a loop of 2). */
static void make_shape(const tide_cpu_fft_desc *d, int mask, const tide_box *lb,
                       const tide_box *ia, const tide_box *oa, int half, int unit, guru_shape *g)
{
    int64_t is[3], os[3];
    tide_box_strides(ia, is);
    tide_box_strides(oa, os);
    g->rank = 0;
    for (int k = 0; k < d->ndims; k++)
        g->rank += (mask >> d->dims[k]) & 1;
    for (int k = 0, j = 0; k < d->ndims; k++) {
        int dim = d->dims[k];
        if (!((mask >> dim) & 1))
            continue;
        int at = dim == half ? g->rank - 1 : j++;
        g->dims[at] = (fftw_iodim64){.n = dim == half ? d->real_n : tide_ext(lb, dim),
                                     .is = unit * is[dim], .os = unit * os[dim]};
        g->kinds[at] = fftw_kind(d->r2r[dim]);
    }
    g->howmany_rank = 0;
    for (int dim = 0; dim < 3; dim++)
        if (!((mask >> dim) & 1) && tide_ext(lb, dim) > 1)
            g->howmany[g->howmany_rank++] = (fftw_iodim64){.n = tide_ext(lb, dim),
                                                           .is = unit * is[dim],
                                                           .os = unit * os[dim]};
    if (unit == 2)
        g->howmany[g->howmany_rank++] = (fftw_iodim64){.n = 2, .is = 1, .os = 1};
    if (d->batch > 1) {
        int64_t iv = tide_box_count(ia), ov = tide_box_count(oa);
        g->howmany[g->howmany_rank++] = (fftw_iodim64){.n = d->batch, .is = unit * iv,
                                                       .os = unit * ov};
    }
}

/* fftwf_iodim64 has the same layout as fftw_iodim64 (three ptrdiff_t), and both precisions
 * share fftw_r2r_kind. */
static void *plan_one(const tide_cpu_fft_desc *d, tide_fft_kind kind, const guru_shape *g,
                      void *in, void *out, unsigned flags)
{
    fftw_iodim64 *dims = (fftw_iodim64 *)g->dims, *hm = (fftw_iodim64 *)g->howmany;
    const fftw_r2r_kind *rk = g->kinds;
    if (d->precision == TIDE_DOUBLE) {
        fftw_plan_with_nthreads(d->threads);
        switch (kind) {
        case TIDE_KIND_C2C:
            return fftw_plan_guru64_dft(g->rank, dims, g->howmany_rank, hm, in, out, d->sign,
                                        flags);
        case TIDE_KIND_R2C:
            return fftw_plan_guru64_dft_r2c(g->rank, dims, g->howmany_rank, hm, in, out,
                                            flags);
        case TIDE_KIND_C2R:
            return fftw_plan_guru64_dft_c2r(g->rank, dims, g->howmany_rank, hm, in, out,
                                            flags);
        case TIDE_KIND_R2R:
            return fftw_plan_guru64_r2r(g->rank, dims, g->howmany_rank, hm, in, out, rk, flags);
        }
    } else {
        fftwf_plan_with_nthreads(d->threads);
        fftwf_iodim64 *fd = (fftwf_iodim64 *)dims, *fh = (fftwf_iodim64 *)hm;
        switch (kind) {
        case TIDE_KIND_C2C:
            return fftwf_plan_guru64_dft(g->rank, fd, g->howmany_rank, fh, in, out, d->sign,
                                         flags);
        case TIDE_KIND_R2C:
            return fftwf_plan_guru64_dft_r2c(g->rank, fd, g->howmany_rank, fh, in, out,
                                             flags);
        case TIDE_KIND_C2R:
            return fftwf_plan_guru64_dft_c2r(g->rank, fd, g->howmany_rank, fh, in, out,
                                             flags);
        case TIDE_KIND_R2R:
            return fftwf_plan_guru64_r2r(g->rank, fd, g->howmany_rank, fh, in, out, rk, flags);
        }
    }
    return NULL;
}

static void destroy_one(tide_precision p, void *plan)
{
    if (!plan)
        return;
    if (p == TIDE_DOUBLE)
        fftw_destroy_plan(plan);
    else
        fftwf_destroy_plan(plan);
}

/* Plans kind over g on in and out, and with user memory its unaligned variant. */
static int plan_pair(const tide_cpu_fft_desc *d, tide_fft_kind kind, const guru_shape *g,
                     void *in, void *out, void **aligned, void **unaligned)
{
    unsigned base = d->measure ? FFTW_MEASURE : FFTW_ESTIMATE;
    *aligned = plan_one(d, kind, g, in, out, base);
    if (*aligned && d->user_memory)
        *unaligned = plan_one(d, kind, g, in, out, FFTW_ESTIMATE | FFTW_UNALIGNED);
    return *aligned && (!d->user_memory || *unaligned);
}

/* The bytes of one element of the input (in) or output of d. */
static size_t elem_bytes(const tide_cpu_fft_desc *d, int in)
{
    size_t scalar = d->precision == TIDE_DOUBLE ? sizeof(double) : sizeof(float);
    int real = d->kind == TIDE_KIND_R2R ? !d->complex_elems
                                        : d->kind == (in ? TIDE_KIND_R2C : TIDE_KIND_C2R);
    return real ? scalar : 2 * scalar;
}

/* by_planes: the plane staging of d into f and the plan of one plane's contiguous rows. */
static int create_by_planes(const tide_cpu_fft_desc *d, tide_cpu_fft *f)
{
    int t = d->dims[0], p = d->plane_dim, r = 3 - t - p;
    if (d->ndims != 1 || p == t || p < 0 || p > 2 || d->r2r[t] != TIDE_R2R_NONE ||
        d->batch > 1)
        return TIDE_ERR_ARGUMENT;
    const tide_box *ia = d->iarr ? d->iarr : d->ibox, *oa = d->oarr ? d->oarr : d->obox;
    int64_t is[3], os[3];
    tide_box_strides(ia, is);
    tide_box_strides(oa, os);
    f->planes = tide_ext(d->ibox, p);
    f->threads = d->threads > 0 ? d->threads : 1;
    f->rows = tide_ext(d->ibox, r);
    f->ilen = tide_ext(d->ibox, t), f->olen = tide_ext(d->obox, t);
    f->ielem = elem_bytes(d, 1), f->oelem = elem_bytes(d, 0);
    f->istep = (size_t)is[p] * f->ielem, f->ostep = (size_t)os[p] * f->oelem;
    f->ist = is[t], f->isr = is[r], f->ost = os[t], f->osr = os[r];
    size_t ib = (size_t)f->rows * f->ilen * f->ielem, ob = (size_t)f->rows * f->olen * f->oelem;
    ib = (ib + 63) / 64 * 64, ob = (ob + 63) / 64 * 64; /* every block SIMD aligned */
    f->iblock = ib;
    f->block = ib + ob;
    f->stage = fftw_malloc(f->block * (size_t)f->threads);
    if (!f->stage)
        return TIDE_ERR_NOMEM;
    int n = d->kind == TIDE_KIND_C2C ? f->ilen : d->real_n;
    guru_shape g = {.rank = 1, .howmany_rank = 1};
    g.dims[0] = (fftw_iodim64){.n = n, .is = 1, .os = 1};
    g.howmany[0] = (fftw_iodim64){.n = f->rows, .is = f->ilen, .os = f->olen};
    tide_cpu_fft_desc one = *d;
    one.threads = 1;
    tide_fftw_lock();
    f->aligned = plan_one(&one, d->kind, &g, f->stage, f->stage + ib, FFTW_MEASURE);
    tide_fftw_unlock();
    return f->aligned ? TIDE_SUCCESS : TIDE_ERR_BACKEND;
}

int tide_cpu_fft_create(const tide_cpu_fft_desc *d, tide_cpu_fft **out)
{
    tide_cpu_fft *f = calloc(1, sizeof *f);
    if (!f)
        return TIDE_ERR_NOMEM;
    f->precision = d->precision;
    f->kind = d->kind;
    if (d->by_planes) {
        int st = create_by_planes(d, f);
        if (st)
            tide_cpu_fft_destroy(f);
        else
            *out = f;
        return st;
    }
    int all = 0, r2r = 0; /* the transformed and the real-to-real dimensions, as bits */
    for (int k = 0; k < d->ndims; k++) {
        all |= 1 << d->dims[k];
        r2r |= d->r2r[d->dims[k]] != TIDE_R2R_NONE ? 1 << d->dims[k] : 0;
    }
    const tide_box *ia = d->iarr ? d->iarr : d->ibox, *oa = d->oarr ? d->oarr : d->obox;
    guru_shape g, pass;
    if (d->kind == TIDE_KIND_R2R) {
        make_shape(d, r2r, d->ibox, ia, oa, -1, d->complex_elems ? 2 : 1, &g);
    } else {
        int real = d->kind != TIDE_KIND_C2C;
        make_shape(d, all & ~r2r, d->ibox, ia, oa, real ? d->half : -1, 1, &g);
        /* the complex side: the output, or C2R's input */
        int c2r = d->kind == TIDE_KIND_C2R;
        const tide_box *cb = c2r ? d->ibox : d->obox, *ca = c2r ? ia : oa;
        make_shape(d, r2r, cb, ca, ca, -1, 2, &pass);
    }
    /* c2r may overwrite its input: only ever given a work buffer (tide_program_place). */
    /* the thread count belongs to FFTW's planner: set and used under its lock */
    tide_fftw_lock();
    int ok = plan_pair(d, d->kind, &g, d->in, d->out, &f->aligned, &f->unaligned);
    if (ok && r2r && d->kind != TIDE_KIND_R2R) {
        void *side = d->kind == TIDE_KIND_C2R ? d->in : d->out;
        ok = plan_pair(d, TIDE_KIND_R2R, &pass, side, side, &f->pass_aligned,
                       &f->pass_unaligned);
    }
    tide_fftw_unlock();
    if (!ok) {
        tide_cpu_fft_destroy(f);
        return TIDE_ERR_BACKEND;
    }
    *out = f;
    return 0;
}

void tide_cpu_fft_destroy(tide_cpu_fft *f)
{
    if (!f)
        return;
    void *plans[] = {f->aligned, f->unaligned, f->pass_aligned, f->pass_unaligned};
    for (int k = 0; k < 4; k++)
        destroy_one(f->precision, plans[k]);
    fftw_free(f->stage);
    free(f);
}

/* Runs kind's plan (aligned, or the unaligned variant where in or out is not aligned like
 * FFTW's own memory) from in to out. */
static void execute_one(tide_precision precision, tide_fft_kind kind, void *aligned,
                        void *unaligned, void *in, void *out)
{
    if (precision == TIDE_DOUBLE) {
        int ok = fftw_alignment_of(in) == 0 && fftw_alignment_of(out) == 0;
        fftw_plan p = ok || !unaligned ? aligned : unaligned;
        if (kind == TIDE_KIND_C2C)
            fftw_execute_dft(p, in, out);
        else if (kind == TIDE_KIND_R2C)
            fftw_execute_dft_r2c(p, in, out);
        else if (kind == TIDE_KIND_C2R)
            fftw_execute_dft_c2r(p, in, out);
        else
            fftw_execute_r2r(p, in, out);
    } else {
        int ok = fftwf_alignment_of(in) == 0 && fftwf_alignment_of(out) == 0;
        fftwf_plan p = ok || !unaligned ? aligned : unaligned;
        if (kind == TIDE_KIND_C2C)
            fftwf_execute_dft(p, in, out);
        else if (kind == TIDE_KIND_R2C)
            fftwf_execute_dft_r2c(p, in, out);
        else if (kind == TIDE_KIND_C2R)
            fftwf_execute_dft_c2r(p, in, out);
        else
            fftwf_execute_r2r(p, in, out);
    }
}

/* The transform of the whole box (and the real-to-real pass of a DFT with some). */
static void execute_box(const tide_cpu_fft *f, void *in, void *out)
{
    int c2r = f->kind == TIDE_KIND_C2R;
    if (f->pass_aligned && c2r)
        execute_one(f->precision, TIDE_KIND_R2R, f->pass_aligned, f->pass_unaligned, in, in);
    execute_one(f->precision, f->kind, f->aligned, f->unaligned, in, out);
    if (f->pass_aligned && !c2r)
        execute_one(f->precision, TIDE_KIND_R2R, f->pass_aligned, f->pass_unaligned, out, out);
}

/* Copies n elements of `size` bytes (4, 8 or 16) from src at stride ss to dst at stride ds
 * (strides in elements). */
static inline void copy_elems(char *dst, int64_t ds, const char *src, int64_t ss, int n,
                              size_t size)
{
    switch (size) {
    case 4:
        for (int i = 0; i < n; i++)
            ((uint32_t *)dst)[i * ds] = ((const uint32_t *)src)[i * ss];
        break;
    case 8:
        for (int i = 0; i < n; i++)
            ((uint64_t *)dst)[i * ds] = ((const uint64_t *)src)[i * ss];
        break;
    default:
        for (int i = 0; i < n; i++) {
            ((uint64_t *)dst)[2 * i * ds] = ((const uint64_t *)src)[2 * i * ss];
            ((uint64_t *)dst)[2 * i * ds + 1] = ((const uint64_t *)src)[2 * i * ss + 1];
        }
    }
}

enum { TILE = 32 }; /* the transposing copies go by tiles of TILE x TILE elements */

/* One plane: its rows gathered transposed into the thread's block, transformed there, and
 * scattered back transposed. */
static void execute_staged(const tide_cpu_fft *f, const char *in, char *out, char *block)
{
    char *si = block, *so = block + f->iblock;
    for (int t0 = 0; t0 < f->ilen; t0 += TILE) /* along r in memory, t in the block */
        for (int r0 = 0; r0 < f->rows; r0 += TILE)
            for (int t = t0; t < t0 + TILE && t < f->ilen; t++) {
                int n = f->rows - r0 < TILE ? f->rows - r0 : TILE;
                copy_elems(si + ((size_t)r0 * f->ilen + t) * f->ielem, f->ilen,
                           in + (size_t)(t * f->ist + r0 * f->isr) * f->ielem, f->isr, n,
                           f->ielem);
            }
    execute_one(f->precision, f->kind, f->aligned, NULL, si, so);
    for (int t0 = 0; t0 < f->olen; t0 += TILE)
        for (int r0 = 0; r0 < f->rows; r0 += TILE)
            for (int t = t0; t < t0 + TILE && t < f->olen; t++) {
                int n = f->rows - r0 < TILE ? f->rows - r0 : TILE;
                copy_elems(out + (size_t)(t * f->ost + r0 * f->osr) * f->oelem, f->osr,
                           so + ((size_t)r0 * f->olen + t) * f->oelem, f->olen, n, f->oelem);
            }
}

void tide_cpu_fft_execute(const tide_cpu_fft *f, void *in, void *out)
{
    if (!f->stage) {
        execute_box(f, in, out);
        return;
    }
    /* each thread its planes, through its own block */
#pragma omp parallel for num_threads(f->threads) schedule(static)
    for (int p = 0; p < f->planes; p++)
        execute_staged(f, (const char *)in + (size_t)p * f->istep,
                       (char *)out + (size_t)p * f->ostep,
                       f->stage + (size_t)omp_get_thread_num() * f->block);
}
