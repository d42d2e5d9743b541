/* cpu_fft.c: FFTW guru plans for the local transforms of the CPU backend. */
#include <stdlib.h>
#include <fftw3.h>
#include "cpu_fft.h"
#include "tide_internal.h"
#include "region.h"

struct tide_cpu_fft {
    tide_precision precision;
    tide_fft_kind kind;
    void *aligned;   /* planned for SIMD-aligned arrays (our buffers, fftw_malloc'ed ones) */
    void *unaligned; /* any alignment: user arrays that are not aligned like FFTW's */
};

/* Guru dimensions of one plan: transformed dims and the batch loops (box dims + fields). */
typedef struct {
    int rank, howmany_rank;
    fftw_iodim64 dims[3], howmany[4];
} guru_shape;

static void make_shape(const tide_cpu_fft_desc *d, guru_shape *g)
{
    int64_t is[3], os[3];
    const tide_box *ia = d->iarr ? d->iarr : d->ibox, *oa = d->oarr ? d->oarr : d->obox;
    tide_box_strides(ia, is);
    tide_box_strides(oa, os);
    int in_g[3] = {0, 0, 0}, real = d->kind != TIDE_KIND_C2C;
    g->rank = d->ndims;
    /* FFTW halves the last of the guru dimensions: the halved one goes last. */
    for (int k = 0, j = 0; k < d->ndims; k++) {
        int dim = d->dims[k];
        in_g[dim] = 1;
        int64_t len = tide_ext(d->kind == TIDE_KIND_C2R ? d->obox : d->ibox, dim);
        if (real && dim == d->half)
            len = d->real_n;
        int at = real && dim == d->half ? d->ndims - 1 : j++;
        g->dims[at] = (fftw_iodim64){.n = len, .is = is[dim], .os = os[dim]};
    }
    g->howmany_rank = 0;
    for (int dim = 0; dim < 3; dim++)
        if (!in_g[dim] && tide_ext(d->ibox, dim) > 1)
            g->howmany[g->howmany_rank++] =
                (fftw_iodim64){.n = tide_ext(d->ibox, dim), .is = is[dim], .os = os[dim]};
    if (d->batch > 1) {
        int64_t iv = tide_box_count(ia), ov = tide_box_count(oa);
        g->howmany[g->howmany_rank++] = (fftw_iodim64){.n = d->batch, .is = iv, .os = ov};
    }
}

/* fftwf_iodim64 has the same layout as fftw_iodim64 (three ptrdiff_t). */
static void *plan_one(const tide_cpu_fft_desc *d, const guru_shape *g, unsigned flags)
{
    fftw_iodim64 *dims = (fftw_iodim64 *)g->dims, *hm = (fftw_iodim64 *)g->howmany;
    if (d->precision == TIDE_DOUBLE) {
        fftw_plan_with_nthreads(d->threads);
        switch (d->kind) {
        case TIDE_KIND_C2C:
            return fftw_plan_guru64_dft(g->rank, dims, g->howmany_rank, hm, d->in, d->out,
                                        d->sign, flags);
        case TIDE_KIND_R2C:
            return fftw_plan_guru64_dft_r2c(g->rank, dims, g->howmany_rank, hm, d->in, d->out,
                                            flags);
        case TIDE_KIND_C2R:
            return fftw_plan_guru64_dft_c2r(g->rank, dims, g->howmany_rank, hm, d->in, d->out,
                                            flags);
        }
    } else {
        fftwf_plan_with_nthreads(d->threads);
        fftwf_iodim64 *fd = (fftwf_iodim64 *)dims, *fh = (fftwf_iodim64 *)hm;
        switch (d->kind) {
        case TIDE_KIND_C2C:
            return fftwf_plan_guru64_dft(g->rank, fd, g->howmany_rank, fh, d->in, d->out,
                                         d->sign, flags);
        case TIDE_KIND_R2C:
            return fftwf_plan_guru64_dft_r2c(g->rank, fd, g->howmany_rank, fh, d->in, d->out,
                                             flags);
        case TIDE_KIND_C2R:
            return fftwf_plan_guru64_dft_c2r(g->rank, fd, g->howmany_rank, fh, d->in, d->out,
                                             flags);
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

int tide_cpu_fft_create(const tide_cpu_fft_desc *d, tide_cpu_fft **out)
{
    tide_cpu_fft *f = calloc(1, sizeof *f);
    if (!f)
        return TIDE_ERR_NOMEM;
    f->precision = d->precision;
    f->kind = d->kind;
    guru_shape g;
    make_shape(d, &g);
    /* c2r may overwrite its input: only ever given a work buffer (tide_program_place). */
    unsigned base = d->measure ? FFTW_MEASURE : FFTW_ESTIMATE;
    /* the thread count belongs to FFTW's planner: set and used under its lock */
    tide_fftw_lock();
    f->aligned = plan_one(d, &g, base);
    if (f->aligned && d->user_memory)
        f->unaligned = plan_one(d, &g, FFTW_ESTIMATE | FFTW_UNALIGNED);
    tide_fftw_unlock();
    if (!f->aligned || (d->user_memory && !f->unaligned)) {
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
    destroy_one(f->precision, f->aligned);
    destroy_one(f->precision, f->unaligned);
    free(f);
}

void tide_cpu_fft_execute(const tide_cpu_fft *f, void *in, void *out)
{
    if (f->precision == TIDE_DOUBLE) {
        int ok = fftw_alignment_of(in) == 0 && fftw_alignment_of(out) == 0;
        fftw_plan p = ok || !f->unaligned ? f->aligned : f->unaligned;
        if (f->kind == TIDE_KIND_C2C)
            fftw_execute_dft(p, in, out);
        else if (f->kind == TIDE_KIND_R2C)
            fftw_execute_dft_r2c(p, in, out);
        else
            fftw_execute_dft_c2r(p, in, out);
    } else {
        int ok = fftwf_alignment_of(in) == 0 && fftwf_alignment_of(out) == 0;
        fftwf_plan p = ok || !f->unaligned ? f->aligned : f->unaligned;
        if (f->kind == TIDE_KIND_C2C)
            fftwf_execute_dft(p, in, out);
        else if (f->kind == TIDE_KIND_R2C)
            fftwf_execute_dft_r2c(p, in, out);
        else
            fftwf_execute_dft_c2r(p, in, out);
    }
}
