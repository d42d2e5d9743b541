// fft.cu: cuFFT plans for the local transforms of the CUDA backend (see gpu/fft.h).
//
// A box's transform is described the way cpu_fft.c describes it to FFTW's guru interface:
// transformed dimensions with their lengths and strides, and loop dimensions (untransformed
// dimensions and fields). cuFFT's advanced layout takes nested transformed dimensions (each
// stride a multiple of the next) and one batch dimension with one distance; loop dimensions
// that merge into one batch do, and the largest merged group becomes the batch while the
// others (at most two) are looped over at execution.
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cufft.h>
#include <cuda_runtime.h>
#include "backend/device.h"
#include "gpu/fft.h"
#include "gpu/fft_plane.h"
#include "gpu/r2r.h"
#include "tide_config.h"
extern "C" {
#include "backend/backend.h"
#include "comm/region.h"
}
#if TIDE_HAVE_FFT_CALLBACKS
#include <cufftXt.h>
#include "gpu/fft_callbacks.h"
#include "gpu/fft_callbacks_fatbin.h"
#endif

namespace {

struct axis {
    int64_t n, is, os; // length, input and output element strides
};

} // namespace

extern "C" const char *tide_cufft_name(int r)
{
    switch (r) {
    case CUFFT_SUCCESS: return "success";
    case CUFFT_INVALID_PLAN: return "invalid plan";
    case CUFFT_ALLOC_FAILED: return "allocation failed";
    case CUFFT_INVALID_VALUE: return "invalid value";
    case CUFFT_INTERNAL_ERROR: return "internal error";
    case CUFFT_EXEC_FAILED: return "execution failed";
    case CUFFT_SETUP_FAILED: return "setup failed";
    case CUFFT_INVALID_SIZE: return "invalid size";
    case CUFFT_NOT_SUPPORTED: return "not supported";
    default: return "error";
    }
}

struct tide_gpu_fft {
    cufftHandle plan;     // the DFT (none for kind 3)
    int planned;          // plan was created (a failure before cufftCreate leaves none)
    int kind, dbl, sign;
    int dft_kind;         // the DFT's kind (kind, or c2c beside a real plane pass)
    size_t ielem, oelem;  // bytes per input / output element
    int nloops;
    axis loop[2];         // looped at execution, outermost first
    // Real-to-real dimensions (r2r.cu): after the DFT on its output, before it on a c2r's
    // input; kind 3 has only these, the first from the input into the output
    tide_gpu_r2r *r2r[3];
    int nr2r;
    void *stream;
    void *scale_info;     // the store callback's tide_fft_scale_info (device memory), or NULL
    tide_gpu_plane *plane; // the two fastest dimensions by Tide's plane pass, before the DFT
                           // (the third dimension, in place on the output; none: planned 0)
    tide_gpu_strided *strided; // the third dimension by Tide's strided pass (no DFT then)
};

namespace {

// The DFT part of a transform: its plan over the dimensions r2r leaves to it.
int create_dft(const tide_gpu_fft_desc *d, tide_gpu_fft *f, size_t *work_bytes, char *why,
               size_t len);

// The real-to-real passes of d into f, each needing at most *work of work area.
int create_r2r(const tide_gpu_fft_desc *d, tide_gpu_fft *f, size_t *work, char *why,
               size_t len)
{
    const tide_box *ia = d->iarr ? d->iarr : d->ibox, *oa = d->oarr ? d->oarr : d->obox;
    for (int k = 0; k < d->ndims; k++) {
        int dim = d->dims[k];
        if (!d->r2r[dim])
            continue;
        const tide_box *box = d->obox, *sa = oa, *da = oa; // in place on the output
        if (d->kind == 2)
            box = d->ibox, sa = ia, da = ia;               // in place on c2r's input
        if (d->kind == 3 && f->nr2r == 0)
            box = d->ibox, sa = ia;                        // the input into the output
        size_t need = 0;
        int st = tide_gpu_r2r_create(d->dbl, d->r2r[dim], dim, box, sa, da, d->batch,
                                     d->kind != 3 || d->complex_elems, &f->r2r[f->nr2r],
                                     &need, why, len);
        if (st)
            return st;
        f->nr2r++;
        *work = need > *work ? need : *work;
    }
    return 0;
}

// Whether the box's points of a plane (along its slowest dimension o0) lie side by side in
// arr, as count lines of the strided pass whose points lie pitch apart: the box takes whole
// rows of arr (along o2), dense along o1.
bool lines_of(const tide_box *box, const tide_box *arr, int64_t *count, int64_t *pitch)
{
    int o0 = box->order[0], o1 = box->order[1], o2 = box->order[2];
    int64_t s[3];
    tide_box_strides(arr, s);
    *count = tide_ext(box, o1) * tide_ext(box, o2);
    *pitch = s[o0];
    return s[o2] == 1 && s[o1] == tide_ext(box, o2);
}

// Tide's strided pass for the slowest dimension of ibox in iarr into obox in oarr (the same
// lines in both), where it takes them: *took says whether it did (f->strided). Returns 0 or an
// error code.
int create_strided(const tide_gpu_fft_desc *d, const tide_box *ibox, const tide_box *iarr,
                   const tide_box *obox, const tide_box *oarr, tide_gpu_fft *f, bool *took,
                   char *why, size_t len)
{
    *took = false;
    int64_t count, pitch, ocount, opitch, n = tide_ext(ibox, ibox->order[0]);
    char no[160];
    if (!lines_of(ibox, iarr, &count, &pitch) || !lines_of(obox, oarr, &ocount, &opitch) ||
        count != ocount || pitch != opitch || n > INT32_MAX ||
        !tide_gpu_strided_supported(d->dbl, (int)n, count, no, sizeof no))
        return 0;
    int st = tide_gpu_strided_create(d->dbl, (int)n, count, pitch, d->sign, 0, &f->strided,
                                     why, len);
    if (st)
        return st == TIDE_ERR_UNSUPPORTED ? 0 : st;
    if (d->plane)
        *d->plane |= 2;
    *took = true;
    return 0;
}

// Whether d asks for Tide's passes (d->engine) on one field with no spectral step and no
// real-to-real dimension.
bool own_passes_asked(const tide_gpu_fft_desc *d)
{
    if (!d->engine || d->batch != 1 || d->then)
        return false;
    for (int k = 0; k < d->ndims; k++)
        if (d->r2r[d->dims[k]])
            return false;
    return true;
}

// Whether d (its boxes, where the arrays do not say) is a transform Tide's passes may take:
// asked for (own_passes_asked), complex to complex, the same dimensions and orders in and out.
bool own_passes_take(const tide_gpu_fft_desc *d)
{
    if (!own_passes_asked(d) || d->kind != 0)
        return false;
    for (int k = 0; k < 3; k++)
        if (d->ibox->order[k] != d->obox->order[k] || tide_ext(d->ibox, k) != tide_ext(d->obox, k))
            return false;
    return true;
}

// A 1D transform of the boxes' slowest dimension by Tide's strided pass, where d asks for
// Tide's passes and the pass takes the boxes' lines (a dense plane's, or a slice of its rows
// that an overlapped exchange's chunk cuts); *took says whether it did. Returns 0 or an error.
int create_lines(const tide_gpu_fft_desc *d, tide_gpu_fft *f, bool *took, char *why,
                 size_t len)
{
    *took = false;
    if (!own_passes_take(d) || d->ndims != 1 || d->dims[0] != d->ibox->order[0])
        return 0;
    return create_strided(d, d->ibox, d->iarr ? d->iarr : d->ibox, d->obox,
                          d->oarr ? d->oarr : d->obox, f, took, why, len);
}

// A real transform of three dimensions (r2c or c2r, one field, no real-to-real dimension, no
// spectral step) as cuFFT's 2D real transforms of the planes and Tide's strided pass along the
// slowest dimension, in place on the complex side (after the planes' r2c, before their c2r),
// where d->engine asks for Tide's passes and the strided pass takes the complex side's lines:
// *rest is then the planes' transform, for cuFFT. *took says whether it did. Returns 0 or an
// error code.
int create_real_lines(const tide_gpu_fft_desc *d, tide_gpu_fft *f, tide_gpu_fft_desc *rest,
                      bool *took, char *why, size_t len)
{
    *took = false;
    if (!own_passes_asked(d) || (d->kind != 1 && d->kind != 2) || d->ndims != 3)
        return 0;
    const tide_box *c = d->kind == 1 ? d->obox : d->ibox; // the complex side
    const tide_box *ca = d->kind == 1 ? (d->oarr ? d->oarr : d->obox)
                                      : (d->iarr ? d->iarr : d->ibox);
    int st = create_strided(d, c, ca, c, ca, f, took, why, len);
    if (st || !*took)
        return st;
    *rest = *d;
    rest->ndims = 0;
    for (int k = 0; k < 3; k++)
        if (k != c->order[0])
            rest->dims[rest->ndims++] = k;
    return 0;
}

// How many of d's transformed dimensions are the two fastest of a box in storage order o
// (*fast) and its slowest (*slow).
void plane_dims(const tide_gpu_fft_desc *d, const int o[3], int *fast, int *slow)
{
    *fast = *slow = 0;
    for (int k = 0; k < d->ndims; k++) {
        *fast += d->dims[k] == o[1] || d->dims[k] == o[2];
        *slow += d->dims[k] == o[0];
    }
}

// Once the plane pass has taken d's two fastest dimensions: the slowest, o0, where slow says
// it is transformed, as a c2c in place on box of arr, by Tide's strided pass where it takes
// those lines, else *rest (d's, with that dimension alone) for cuFFT; rest->ndims is 0 where
// nothing is left. Returns 0 or an error code.
int slowest_after_planes(const tide_gpu_fft_desc *d, int slow, int o0, const tide_box *box,
                         const tide_box *arr, tide_gpu_fft *f, tide_gpu_fft_desc *rest,
                         char *why, size_t len)
{
    *rest = *d;
    rest->kind = 0;
    rest->dims[0] = o0;
    rest->ibox = rest->obox = box, rest->iarr = rest->oarr = arr;
    bool third = false;
    int st = slow ? create_strided(d, box, arr, box, arr, f, &third, why, len) : 0;
    rest->ndims = slow && !third;
    return st;
}

// The plane pass for d's two fastest dimensions, where d->engine asks for it and it takes
// them (fft.h), and Tide's strided pass for the third where it takes that (none: *rest is
// that dimension, in place on the output, for cuFFT; else rest->ndims is 0). *took says
// whether the plane pass took the two. Returns 0 or an error code.
int create_plane(const tide_gpu_fft_desc *d, tide_gpu_fft *f, tide_gpu_fft_desc *rest,
                 bool *took, char *why, size_t len)
{
    *took = false;
    if (!own_passes_take(d) || d->ndims < 2)
        return 0;
    const tide_box *ia = d->iarr ? d->iarr : d->ibox, *oa = d->oarr ? d->oarr : d->obox;
    int o0 = d->ibox->order[0], o1 = d->ibox->order[1], o2 = d->ibox->order[2];
    int64_t nx = tide_ext(d->ibox, o2), ny = tide_ext(d->ibox, o1), is[3], os[3];
    tide_box_strides(ia, is);
    tide_box_strides(oa, os);
    int fast, slow;
    plane_dims(d, d->ibox->order, &fast, &slow);
    int dense = is[o2] == 1 && os[o2] == 1 && is[o1] == nx && os[o1] == nx &&
                (tide_ext(d->ibox, o0) == 1 || (is[o0] == nx * ny && os[o0] == nx * ny));
    char no[160];
    if (fast != 2 || !dense || nx > INT32_MAX || ny > INT32_MAX ||
        !tide_gpu_plane_supported(d->dbl, (int)nx, (int)ny, no, sizeof no))
        return 0;
    int st = tide_gpu_plane_create(d->dbl, (int)nx, (int)ny, (int)tide_ext(d->ibox, o0),
                                   d->sign, 0, &f->plane, why, len);
    if (st)
        return st == TIDE_ERR_UNSUPPORTED ? 0 : st;
    if (d->plane)
        *d->plane |= 1;
    *took = true;
    return slowest_after_planes(d, slow, o0, d->obox, oa, f, rest, why, len); // on the output
}

// A real transform (r2c or c2r, one field, no real-to-real dimension, no spectral step) whose
// two fastest dimensions are transformed, the halved one the fastest, by Tide's real plane
// pass where it takes the planes (dense planes in both arrays), its slowest dimension where
// transformed by Tide's strided pass in place on the complex side where it takes those lines,
// else by cuFFT (*rest: a c2c of that dimension in place on the complex side; else
// rest->ndims is 0): after the planes for r2c, before them for c2r. *took says whether the
// plane pass took the planes. Returns 0 or an error code.
int create_real_plane(const tide_gpu_fft_desc *d, tide_gpu_fft *f, tide_gpu_fft_desc *rest,
                      bool *took, char *why, size_t len)
{
    *took = false;
    if (!own_passes_asked(d) || (d->kind != 1 && d->kind != 2) || d->ndims < 2)
        return 0;
    const tide_box *ia = d->iarr ? d->iarr : d->ibox, *oa = d->oarr ? d->oarr : d->obox;
    const tide_box *r = d->kind == 1 ? d->ibox : d->obox, *ra = d->kind == 1 ? ia : oa;
    const tide_box *c = d->kind == 1 ? d->obox : d->ibox, *ca = d->kind == 1 ? oa : ia;
    int o0 = r->order[0], o1 = r->order[1], o2 = r->order[2];
    int64_t nx = tide_ext(r, o2), ny = tide_ext(r, o1), planes = tide_ext(r, o0), rs[3], cs[3];
    tide_box_strides(ra, rs);
    tide_box_strides(ca, cs);
    int fast, slow;
    plane_dims(d, r->order, &fast, &slow);
    for (int k = 0; k < 3; k++)
        if (c->order[k] != r->order[k] || (k != o2 && tide_ext(c, k) != tide_ext(r, k)))
            return 0;
    int dense = rs[o2] == 1 && cs[o2] == 1 && tide_ext(c, o2) == nx / 2 + 1 &&
                (planes == 1 || (rs[o0] == rs[o1] * ny && cs[o0] == cs[o1] * ny));
    // The column items' rows (an item's points / ny) must be 64 bytes or more: with 32-byte
    // rows (float, ny = 1024) the pass loses to cuFFT's planes (docs/performance.md), which
    // then take the planes beside the strided pass (create_real_lines).
    char no[160];
    if (fast != 2 || d->half != o2 || !dense || nx > INT32_MAX || ny > INT32_MAX ||
        planes > INT32_MAX || TIDE_GPU_PLANE_ITEM_POINTS / ny * (d->dbl ? 16 : 8) < 64 ||
        !tide_gpu_plane_real_supported(d->dbl, (int)nx, (int)ny, no, sizeof no))
        return 0;
    int st = tide_gpu_plane_create_real(d->dbl, (int)nx, (int)ny, (int)planes, d->sign, rs[o1],
                                        cs[o1], 0, &f->plane, why, len);
    if (st)
        return st == TIDE_ERR_UNSUPPORTED ? 0 : st;
    if (d->plane)
        *d->plane |= 1;
    *took = true;
    return slowest_after_planes(d, slow, o0, c, ca, f, rest, why, len); // on the complex side
}

} // namespace

extern "C" int tide_gpu_fft_create(const tide_gpu_fft_desc *d, tide_gpu_fft **out,
                                   size_t *work_bytes, char *why, size_t len)
{
    tide_gpu_fft *f = (tide_gpu_fft *)calloc(1, sizeof *f);
    if (!f) {
        snprintf(why, len, "out of memory");
        return TIDE_ERR_NOMEM;
    }
    if (d->fused)
        *d->fused = 0;
    f->kind = d->kind;
    f->dbl = d->dbl;
    f->sign = d->sign;
    size_t work = 0;
    tide_gpu_fft_desc rest;
    bool planes = false, lines = false, real = false;
    int st = create_plane(d, f, &rest, &planes, why, len);
    if (!st && !planes)
        st = create_real_plane(d, f, &rest, &planes, why, len);
    if (!st && !planes)
        st = create_real_lines(d, f, &rest, &real, why, len);
    if (!st && (planes || real)) // Tide's passes took part: cuFFT the rest, where any is left
        st = rest.ndims ? create_dft(&rest, f, &work, why, len) : 0;
    else if (!st && !(st = create_lines(d, f, &lines, why, len)) && !lines)
        st = d->kind == 3 ? 0 : create_dft(d, f, &work, why, len);
    if (!st)
        st = create_r2r(d, f, &work, why, len);
    if (st) {
        tide_gpu_fft_destroy(f);
        return st;
    }
    *work_bytes = work;
    *out = f;
    return 0;
}

namespace {

#if TIDE_HAVE_FFT_CALLBACKS
// n / d as umulhi(n, mul) >> shr for every n < 2^31: mul = ceil(2^(31 + l) / d), l = ceil(log2
// d), shr = l - 1; the quotient's error is below n / 2^(31 + l) < 1 / d (fft_callbacks.h).
void divisor(unsigned d, unsigned *mul, unsigned *shr)
{
    *mul = *shr = 0; // d 1: n itself
    if (d <= 1)
        return;
    unsigned l = 0;
    while ((1ull << l) < d)
        l++;
    *mul = (unsigned)(((1ull << (31 + l)) + d - 1) / d);
    *shr = l - 1;
}
#endif

// The store callback's description of d->then over the output (fft_callbacks.h), in device
// memory at f->scale_info; false where the callback cannot take it (fft.h: then), with the
// reason for tide_gpu_last_error.
bool scale_info(const tide_gpu_fft_desc *d, tide_gpu_fft *f)
{
#if TIDE_HAVE_FFT_CALLBACKS
    const tide_spectral *s = d->then;
    const tide_box *b = d->obox;
    if (!d->dbl)
        return tide_gpu_note_error("store callback", "float data: cuFFT's float kernels run "
                                   "slower with it than the separate kernel (fft_callbacks.h)",
                                   0), false;
    bool ok = s->line < 0 && !s->real && !s->mean_w[0] && !s->mean_w[1] && !s->mean_w[2] &&
              s->dbl == d->dbl && s->batch == d->batch;
    if (!ok)
        return tide_gpu_note_error("store callback", "not a diagonal operator on complex data "
                                   "without mean weights", 0), false;
    ok = (d->kind == 1 || (d->kind == 0 && d->sign < 0)) && f->nloops == 0;
    for (int k = 0; k < d->ndims; k++)
        ok = ok && !d->r2r[d->dims[k]];
    if (!ok)
        return tide_gpu_note_error("store callback", "the transform is no forward DFT done "
                                   "in one cuFFT call", 0), false;
    if (!tide_box_equal(&s->box, b) || (d->oarr && !tide_box_equal(d->oarr, b)) ||
        tide_box_count(b) >= (1ll << 31))
        return tide_gpu_note_error("store callback", "the output is not the operator's box "
                                   "(or 2^31 points or more)", 0), false;
    int64_t st[3];
    tide_box_strides(b, st);
    tide_fft_scale_info x = {};
    x.field = d->batch > 1 ? (unsigned long long)tide_box_count(b) : 0;
    x.inv_field = x.field ? 1.0 / (double)x.field : 0.0;
    for (int k = 0; k < 2; k++) {
        x.stride[k] = (unsigned)st[b->order[k]];
        divisor(x.stride[k], &x.mul[k], &x.shr[k]);
    }
    for (int k = 0; k < 3; k++)
        x.lam[k] = s->lam[b->order[k]] + b->lo[b->order[k]];
    x.alpha = s->alpha;
    x.norm = s->norm;
    x.origin = b->lo[0] == 0 && b->lo[1] == 0 && b->lo[2] == 0 ? 0 : ~0ull;
    x.sum = (double *)s->origin;
    cudaError_t e = cudaMalloc(&f->scale_info, sizeof x);
    if (e == cudaSuccess)
        e = cudaMemcpy(f->scale_info, &x, sizeof x, cudaMemcpyHostToDevice);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return tide_gpu_note_error("store callback's description", cudaGetErrorString(e),
                                   (int)e), false;
    }
    return true;
#else
    (void)d, (void)f;
    return tide_gpu_note_error("store callback", "this build has no cuFFT callbacks", 0), false;
#endif
}

cufftResult set_scale_callback(tide_gpu_fft *f)
{
#if TIDE_HAVE_FFT_CALLBACKS
    return cufftXtSetJITCallback(f->plan, TIDE_FFT_SCALE_STORE_Z, tide_fft_callbacks_fatbin,
                                 sizeof tide_fft_callbacks_fatbin, CUFFT_CB_ST_COMPLEX_DOUBLE,
                                 &f->scale_info);
#else
    (void)f;
    return CUFFT_NOT_SUPPORTED;
#endif
}

int create_dft(const tide_gpu_fft_desc *d, tide_gpu_fft *f, size_t *work_bytes, char *why,
               size_t len)
{
    int64_t is[3], os[3];
    const tide_box *ia = d->iarr ? d->iarr : d->ibox, *oa = d->oarr ? d->oarr : d->obox;
    tide_box_strides(ia, is);
    tide_box_strides(oa, os);
    size_t scalar = d->dbl ? sizeof(double) : sizeof(float);

    // Transformed dimensions, slowest first (cuFFT's n[0] is the outermost).
    // Dimensions of length 1 transform nothing and are left out (their strides would tie with
    // a neighbour's), except z of a real transform and the last one standing.
    axis t[3];
    int tdim[3], nt = 0, in_t[3] = {0, 0, 0}, hv = d->kind != 0 ? d->half : -1, last = -1;
    for (int k = 0; k < d->ndims; k++)
        last = d->r2r[d->dims[k]] ? last : k;
    for (int k = 0; k < d->ndims; k++) {
        int dim = d->dims[k];
        if (d->r2r[dim])
            continue; // a loop dimension of the DFT
        in_t[dim] = 1;
        int64_t n = tide_ext(d->kind == 2 ? d->obox : d->ibox, dim);
        int halved = dim == hv;
        if (halved)
            n = d->real_n;
        int keep = n > 1 || halved || (k == last && nt == 0);
        if (keep) {
            tdim[nt] = dim;
            t[nt++] = axis{n, is[dim], os[dim]};
        }
    }
    for (int a = 0; a < nt; a++) // by input stride, descending; on ties the halved one last
        for (int b = a + 1; b < nt; b++)
            if (t[b].is > t[a].is ||
                (t[b].is == t[a].is && (tdim[a] == hv || (tdim[b] < tdim[a] && tdim[b] != hv)))) {
                axis x = t[a];
                t[a] = t[b];
                t[b] = x;
                int y = tdim[a];
                tdim[a] = tdim[b];
                tdim[b] = y;
            }
    if (d->kind != 0) {
        if (tdim[nt - 1] != hv) {
            snprintf(why, len, "cuFFT real transforms need the halved dimension (%c) to be the "
                     "fastest of the transformed dimensions in the box's storage order",
                     "xyz"[d->half]);
            return TIDE_ERR_UNSUPPORTED;
        }
    }
    long long n[3], inembed[3], onembed[3];
    for (int k = 0; k < nt; k++) {
        n[k] = t[k].n;
        inembed[k] = k == 0 ? t[k].n : t[k - 1].is / t[k].is;
        onembed[k] = k == 0 ? t[k].n : t[k - 1].os / t[k].os;
        if (k > 0 && (t[k - 1].is % t[k].is || t[k - 1].os % t[k].os)) {
            snprintf(why, len, "transformed dimensions are not nested in memory");
            return TIDE_ERR_UNSUPPORTED;
        }
    }

    // Loop dimensions (length > 1), innermost first, merged where one stride continues the
    // other on both sides.
    axis l[4];
    int nl = 0;
    for (int dim = 0; dim < 3; dim++)
        if (!in_t[dim] && tide_ext(d->ibox, dim) > 1)
            l[nl++] = axis{tide_ext(d->ibox, dim), is[dim], os[dim]};
    if (d->batch > 1)
        l[nl++] = axis{d->batch, tide_box_count(ia), tide_box_count(oa)};
    for (int a = 0; a < nl; a++)
        for (int b = a + 1; b < nl; b++)
            if (l[b].is < l[a].is) {
                axis x = l[a];
                l[a] = l[b];
                l[b] = x;
            }
    axis g[4];
    int ng = 0;
    for (int k = 0; k < nl; k++) {
        if (ng && l[k].is == g[ng - 1].is * g[ng - 1].n && l[k].os == g[ng - 1].os * g[ng - 1].n)
            g[ng - 1].n *= l[k].n;
        else
            g[ng++] = l[k];
    }
    // The largest group is cuFFT's batch, the others looped over at execution. cuFFT wants
    // the real side of a real transform aligned like complex data (cufftExecR2C), so there a
    // group whose real stride is odd (a loop over it would start rows at odd scalars) is the
    // batch, if one is.
    int b = 0, real_in = d->kind == 1, real_out = d->kind == 2;
    for (int k = 1; k < ng; k++)
        if (g[k].n > g[b].n)
            b = k;
    for (int k = 0; k < ng; k++)
        if ((real_in && g[k].is % 2) || (real_out && g[k].os % 2))
            b = k;
    axis batch = ng ? g[b] : axis{1, 1, 1};

    f->dft_kind = d->kind;
    f->ielem = d->kind == 1 ? scalar : 2 * scalar;
    f->oelem = d->kind == 2 ? scalar : 2 * scalar;
    for (int k = ng - 1; k >= 0; k--)
        if (k != b)
            f->loop[f->nloops++] = g[k];
    static const cufftType types[2][3] = {{CUFFT_C2C, CUFFT_R2C, CUFFT_C2R},
                                          {CUFFT_Z2Z, CUFFT_D2Z, CUFFT_Z2D}};
    size_t work = 0;
    cufftResult r = CUFFT_SUCCESS;
    for (int cb = d->then && scale_info(d, f); cb >= 0; cb--) {
        if (f->planned)
            cufftDestroy(f->plan); // a callback, once set, stays: plan anew without it
        if (!cb && f->scale_info) { // ... and without its description
            cudaFree(f->scale_info);
            f->scale_info = NULL;
        }
        const char *step = "cufftCreate";
        r = cufftCreate(&f->plan);
        f->planned = r == CUFFT_SUCCESS;
        if (r == CUFFT_SUCCESS)
            r = cufftSetAutoAllocation(f->plan, 0);
        if (r == CUFFT_SUCCESS && cb) {
            step = "cufftXtSetJITCallback";
            r = set_scale_callback(f);
        }
        if (r == CUFFT_SUCCESS) {
            step = "cufftMakePlanMany64 with a store callback";
            r = cufftMakePlanMany64(f->plan, nt, n, inembed, t[nt - 1].is, batch.is, onembed,
                                    t[nt - 1].os, batch.os, types[d->dbl ? 1 : 0][d->kind],
                                    batch.n, &work);
        }
        if (r == CUFFT_SUCCESS) {
            if (d->fused)
                *d->fused = cb;
            break;
        }
        if (cb) // the reason the plan goes without it
            tide_gpu_note_error(step, tide_cufft_name(r), (int)r);
    }
    if (r != CUFFT_SUCCESS) {
        snprintf(why, len, "cuFFT could not plan the transform: %s (%d)", tide_cufft_name(r),
                 (int)r);
        return r == CUFFT_ALLOC_FAILED ? TIDE_ERR_NOMEM : TIDE_ERR_BACKEND;
    }
    *work_bytes = work > *work_bytes ? work : *work_bytes;
    return 0;
}

} // namespace

extern "C" int tide_gpu_fft_bind(tide_gpu_fft *f, void *work, void *stream)
{
    cufftResult r = CUFFT_SUCCESS;
    if (f->planned)
        r = cufftSetWorkArea(f->plan, work);
    if (r == CUFFT_SUCCESS && f->planned)
        r = cufftSetStream(f->plan, (cudaStream_t)stream);
    f->stream = stream;
    for (int k = 0; k < f->nr2r && r == CUFFT_SUCCESS; k++)
        if (tide_gpu_r2r_bind(f->r2r[k], work, stream))
            r = CUFFT_EXEC_FAILED;
    return r == CUFFT_SUCCESS ? 0 : TIDE_ERR_BACKEND;
}

namespace {

cufftResult exec_one(const tide_gpu_fft *f, char *in, char *out)
{
    switch (f->dft_kind * 2 + f->dbl) {
    case 0: return cufftExecC2C(f->plan, (cufftComplex *)in, (cufftComplex *)out, f->sign);
    case 1:
        return cufftExecZ2Z(f->plan, (cufftDoubleComplex *)in, (cufftDoubleComplex *)out,
                            f->sign);
    case 2: return cufftExecR2C(f->plan, (cufftReal *)in, (cufftComplex *)out);
    case 3: return cufftExecD2Z(f->plan, (cufftDoubleReal *)in, (cufftDoubleComplex *)out);
    case 4: return cufftExecC2R(f->plan, (cufftComplex *)in, (cufftReal *)out);
    default: return cufftExecZ2D(f->plan, (cufftDoubleComplex *)in, (cufftDoubleReal *)out);
    }
}

} // namespace

namespace {

int execute_dft(const tide_gpu_fft *f, void *in, void *out)
{
    int64_t n0 = f->nloops > 0 ? f->loop[0].n : 1, n1 = f->nloops > 1 ? f->loop[1].n : 1;
    for (int64_t a = 0; a < n0; a++)
        for (int64_t b = 0; b < n1; b++) {
            int64_t ioff = 0, ooff = 0;
            if (f->nloops > 0)
                ioff += a * f->loop[0].is, ooff += a * f->loop[0].os;
            if (f->nloops > 1)
                ioff += b * f->loop[1].is, ooff += b * f->loop[1].os;
            cufftResult r = exec_one(f, (char *)in + ioff * (int64_t)f->ielem,
                                     (char *)out + ooff * (int64_t)f->oelem);
            if (r != CUFFT_SUCCESS)
                return tide_gpu_note_error("cufftExec", tide_cufft_name(r), (int)r);
        }
    return 0;
}

} // namespace

extern "C" int tide_gpu_fft_execute(const tide_gpu_fft *f, void *in, void *out)
{
    int st = 0;
    if (f->kind == 3) { // real-to-real only: the first from in to out, the others in place
        for (int k = 0; k < f->nr2r && !st; k++)
            st = tide_gpu_r2r_execute(f->r2r[k], k ? out : in, out, f->stream);
        return st;
    }
    for (int k = 0; k < f->nr2r && !st && f->kind == 2; k++) // c2r: on its complex input
        st = tide_gpu_r2r_execute(f->r2r[k], in, in, f->stream);
    if (f->plane && f->kind == 2) { // c2r: the slowest dimension in place on the input first
        if (f->strided)
            st = tide_gpu_strided_execute(f->strided, in, in, f->stream);
        else if (f->planned)
            st = execute_dft(f, in, in);
        return st ? st : tide_gpu_plane_execute(f->plane, in, out, f->stream);
    }
    if (f->plane) { // the plane pass into the output, then its third dimension in place
        st = tide_gpu_plane_execute(f->plane, in, out, f->stream);
        if (!st && f->strided)
            st = tide_gpu_strided_execute(f->strided, out, out, f->stream);
        return st || !f->planned ? st : execute_dft(f, out, out);
    }
    if (f->strided && f->kind == 0) // the strided pass alone
        return tide_gpu_strided_execute(f->strided, in, out, f->stream);
    if (f->strided && f->kind == 2) // a c2r's slowest dimension, on its complex input
        st = tide_gpu_strided_execute(f->strided, in, in, f->stream);
    st = st ? st : execute_dft(f, in, out);
    if (!st && f->strided && f->kind == 1) // an r2c's slowest dimension, on its output
        st = tide_gpu_strided_execute(f->strided, out, out, f->stream);
    for (int k = 0; k < f->nr2r && !st && f->kind != 2; k++) // on the complex output
        st = tide_gpu_r2r_execute(f->r2r[k], out, out, f->stream);
    return st;
}

extern "C" int tide_gpu_fft_execute_staged(const tide_gpu_fft *f, const void *in, void *stage,
                                           void *out)
{
    // The strided pass writes stage, or the plane pass alone reads in (out of place)
    if (f->kind != 2 || f->nr2r || !(f->strided || (f->plane && !f->planned)))
        return TIDE_ERR_UNSUPPORTED;
    const void *from = in;
    int st = 0;
    if (f->strided) {
        st = tide_gpu_strided_execute(f->strided, in, stage, f->stream);
        from = stage;
    }
    if (st)
        return st;
    return f->plane ? tide_gpu_plane_execute(f->plane, from, out, f->stream)
                    : execute_dft(f, (void *)from, out);
}

extern "C" void tide_gpu_fft_destroy(tide_gpu_fft *f)
{
    if (!f)
        return;
    if (f->planned)
        cufftDestroy(f->plan);
    cudaFree(f->scale_info);
    tide_gpu_plane_destroy(f->plane);
    tide_gpu_strided_destroy(f->strided);
    for (int k = 0; k < f->nr2r; k++)
        tide_gpu_r2r_destroy(f->r2r[k]);
    free(f);
}
