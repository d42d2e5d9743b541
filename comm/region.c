/*
 * region.c: box geometry and the permuting copy behind every pack and unpack.
 *
 * The copy is where dimensions get permuted "on the fly" (Chen, Cui and Mei 2010): a block
 * leaves its sender already in the receiver's storage order, so no separate transposition pass
 * exists anywhere.
 */
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include "comm/region.h"

void tide_box_strides(const tide_box *b, int64_t stride[3])
{
    int64_t s = 1;
    for (int k = 2; k >= 0; k--) {
        int d = b->order[k];
        stride[d] = s;
        s *= tide_ext(b, d);
    }
}

int64_t tide_box_intersect(const tide_box *a, const tide_box *b, tide_box *out)
{
    int64_t count = 1;
    for (int d = 0; d < 3; d++) {
        out->lo[d] = a->lo[d] > b->lo[d] ? a->lo[d] : b->lo[d];
        out->hi[d] = a->hi[d] < b->hi[d] ? a->hi[d] : b->hi[d];
        if (out->hi[d] < out->lo[d])
            out->hi[d] = out->lo[d];
        count *= tide_ext(out, d);
        out->order[d] = a->order[d];
    }
    return count;
}

int tide_box_within(const tide_box *r, const tide_box *b)
{
    tide_box in;
    return tide_box_intersect(r, b, &in) == tide_box_count(r);
}

int tide_box_subtract(const tide_box *e, const tide_box *o, tide_box out[TIDE_PARTS_MAX])
{
    tide_box rest = *e;
    int n = 0;
    for (int d = 0; d < 3 && tide_box_count(&rest) > 0; d++) {
        if (rest.lo[d] < o->lo[d]) { /* below o along d */
            out[n] = rest;
            out[n].hi[d] = rest.hi[d] < o->lo[d] ? rest.hi[d] : o->lo[d];
            rest.lo[d] = out[n++].hi[d];
        }
        if (rest.hi[d] > o->hi[d] && rest.lo[d] < rest.hi[d]) { /* above it */
            out[n] = rest;
            out[n].lo[d] = rest.lo[d] > o->hi[d] ? rest.lo[d] : o->hi[d];
            rest.hi[d] = out[n++].lo[d];
        }
    }
    return n;
}

int tide_box_equal(const tide_box *a, const tide_box *b)
{
    for (int d = 0; d < 3; d++)
        if (a->lo[d] != b->lo[d] || a->hi[d] != b->hi[d] || a->order[d] != b->order[d])
            return 0;
    return 1;
}

int64_t tide_box_offset(const tide_box *b, const tide_box *region)
{
    int64_t stride[3], off = 0;
    tide_box_strides(b, stride);
    for (int d = 0; d < 3; d++)
        off += (int64_t)(region->lo[d] - b->lo[d]) * stride[d];
    return off;
}

int tide_region_is_run(const tide_box *region, const tide_box *b, const int order[3], int batch)
{
    int64_t n = 1, nb = 1;
    for (int d = 0; d < 3; d++) {
        n *= tide_ext(region, d);
        nb *= tide_ext(b, d);
    }
    if (n == 0)
        return 1;
    if (batch > 1 && n != nb)
        return 0;
    /* Contiguous in b: walking b's dimensions from fastest to slowest, once a dimension is
     * partial every slower dimension must have extent 1. */
    int partial = 0;
    for (int k = 2; k >= 0; k--) {
        int d = b->order[k];
        if (partial && tide_ext(region, d) > 1)
            return 0;
        if (tide_ext(region, d) < tide_ext(b, d))
            partial = 1;
    }
    /* Same sequence as a dense array in `order`: the dimensions of extent > 1 appear in the
     * same relative order in both. */
    int da[3], db[3], na = 0, nbk = 0;
    for (int k = 0; k < 3; k++) {
        if (tide_ext(region, b->order[k]) > 1)
            da[na++] = b->order[k];
        if (tide_ext(region, order[k]) > 1)
            db[nbk++] = order[k];
    }
    for (int k = 0; k < na; k++)
        if (da[k] != db[k])
            return 0;
    return 1;
}

int64_t tide_copy_geometry(const tide_box *region, const tide_box *sbox, const tide_box *dbox,
                           tide_copy_geom *g)
{
    int64_t ss[3], ds[3];
    tide_box_strides(sbox, ss);
    tide_box_strides(dbox, ds);
    g->scount = g->dcount = 1;
    for (int k = 0; k < 3; k++) {
        int d = dbox->order[k];
        g->n[k] = tide_ext(region, d);
        g->s[k] = ss[d];
        g->t[k] = ds[d];
        g->scount *= tide_ext(sbox, k);
        g->dcount *= tide_ext(dbox, k);
    }
    g->soff = tide_box_offset(sbox, region);
    g->doff = tide_box_offset(dbox, region);
    return g->n[0] * g->n[1] * g->n[2];
}

enum { TILE = 32 }; /* 32x32 elements of up to 16 B: 16 KiB per side, fits in L1 with both */

/* Below this many elements a copy stays on one thread: waking a team costs more. */
enum { PARALLEL_MIN = 1 << 14 };

/* Copies larger than this go around the cache (below). */
enum { STREAM_MIN_BYTES = 4 << 20 };

/* A row copy with non-temporal stores. A large pack or unpack writes data that will not be
 * read again before it has left the cache anyway; plain stores would first read every
 * destination line into the cache (read for ownership), three memory streams instead of two. */
static void stream_row(char *dst, const char *src, size_t bytes)
{
#if defined(__SSE2__)
    size_t head = (16 - ((uintptr_t)dst & 15)) & 15;
    if (head > bytes)
        head = bytes;
    memcpy(dst, src, head);
    size_t i = head;
    for (; i + 16 <= bytes; i += 16)
        _mm_stream_si128((__m128i *)(dst + i), _mm_loadu_si128((const __m128i *)(src + i)));
    memcpy(dst + i, src + i, bytes - i);
#else
    memcpy(dst, src, bytes);
#endif
}

static void stream_fence(void)
{
#if defined(__SSE2__)
    _mm_sfence(); /* streaming stores are weakly ordered: publish them before returning */
#endif
}

/* The fastest dimension is shared: whole rows, one memcpy (or streamed copy) each. */
static void copy_rows(const tide_copy_geom *g, size_t elem, const char *S, char *D, int threads)
{
    int64_t count = g->n[0] * g->n[1] * g->n[2];
    size_t row = (size_t)g->n[2] * elem;
    int par = threads > 1 && count >= PARALLEL_MIN;
    int stream = count * (int64_t)elem >= STREAM_MIN_BYTES && row >= 256;
    #pragma omp parallel num_threads(threads) if(par)
    {
        #pragma omp for collapse(2) schedule(static)
        for (int64_t i0 = 0; i0 < g->n[0]; i0++)
            for (int64_t i1 = 0; i1 < g->n[1]; i1++) {
                char *d = D + (i0 * g->t[0] + i1 * g->t[1]) * (int64_t)elem;
                const char *s = S + (i0 * g->s[0] + i1 * g->s[1]) * (int64_t)elem;
                if (stream)
                    stream_row(d, s, row);
                else
                    memcpy(d, s, row);
            }
        if (stream)
            stream_fence(); /* each thread orders its own streaming stores */
    }
}

/* One instance of the tiled transpose per element size: the two dimensions involved are
 * walked in tiles so both sides stay in cache. Elements move with fixed-size memcpy, which
 * compiles to plain (unaligned) loads and stores: a complex float array is only 4-byte
 * aligned. The outer loops are split across threads. */
#define DEFINE_COPY(NAME, SIZE)                                                                 \
    static void NAME(const tide_copy_geom *g, const char *S, char *D, int threads)              \
    {                                                                                           \
        int par = threads > 1 && g->n[0] * g->n[1] * g->n[2] >= PARALLEL_MIN;                  \
        /* The source's fastest dimension is loop dimension a (0 or 1); b is the other. */      \
        int a = g->s[0] < g->s[1] ? 0 : 1, b = 1 - a;                                          \
        _Pragma("omp parallel for collapse(2) schedule(static) num_threads(threads) if(par)")   \
        for (int64_t ib = 0; ib < g->n[b]; ib++)                                                \
            for (int64_t a0 = 0; a0 < g->n[a]; a0 += TILE) {                                    \
                int64_t a1 = a0 + TILE < g->n[a] ? a0 + TILE : g->n[a];                          \
                for (int64_t c0 = 0; c0 < g->n[2]; c0 += TILE) {                                \
                    int64_t c1 = c0 + TILE < g->n[2] ? c0 + TILE : g->n[2];                      \
                    for (int64_t ia = a0; ia < a1; ia++) {                                      \
                        const char *sp = S + (ib * g->s[b] + ia * g->s[a]) * SIZE;              \
                        char *dp = D + (ib * g->t[b] + ia * g->t[a]) * SIZE;                    \
                        for (int64_t c = c0; c < c1; c++)                                       \
                            memcpy(dp + c * g->t[2] * SIZE, sp + c * g->s[2] * SIZE, SIZE);     \
                    }                                                                           \
                }                                                                               \
            }                                                                                   \
    }

DEFINE_COPY(copy4, 4)
DEFINE_COPY(copy8, 8)
DEFINE_COPY(copy16, 16)

/* Any other element size: the same loops, one element at a time. */
static void copy_any(const tide_copy_geom *g, size_t elem, const char *src, char *dst, int threads)
{
    int par = threads > 1 && g->n[0] * g->n[1] * g->n[2] >= PARALLEL_MIN;
    #pragma omp parallel for collapse(2) schedule(static) num_threads(threads) if(par)
    for (int64_t i0 = 0; i0 < g->n[0]; i0++)
        for (int64_t i1 = 0; i1 < g->n[1]; i1++)
            for (int64_t i2 = 0; i2 < g->n[2]; i2++)
                memcpy(dst + (i0 * g->t[0] + i1 * g->t[1] + i2 * g->t[2]) * elem,
                       src + (i0 * g->s[0] + i1 * g->s[1] + i2 * g->s[2]) * elem, elem);
}

void tide_copy_region(size_t elem, int batch, const tide_box *region, const void *src,
                      const tide_box *sbox, void *dst, const tide_box *dbox, int threads)
{
    tide_copy_geom g;
    if (tide_copy_geometry(region, sbox, dbox, &g) == 0)
        return;
    if (threads < 1)
        threads = 1;
    for (int f = 0; f < batch; f++) {
        const char *s = (const char *)src + (size_t)(g.soff + f * g.scount) * elem;
        char *t = (char *)dst + (size_t)(g.doff + f * g.dcount) * elem;
        if (g.s[2] == 1) {
            copy_rows(&g, elem, s, t, threads);
            continue;
        }
        switch (elem) {
        case 4: copy4(&g, s, t, threads); break;
        case 8: copy8(&g, s, t, threads); break;
        case 16: copy16(&g, s, t, threads); break;
        default: copy_any(&g, elem, s, t, threads); break;
        }
    }
}
