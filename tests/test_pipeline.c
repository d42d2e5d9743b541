/*
 * test_pipeline.c: the out-of-card streaming engine (gpu/pipeline.cu) against the CPU. Exits 77
 * (reported SKIP by meson) where the build has no CUDA or no GPU is usable, saying why.
 *
 * Every job runs on random data (never zeros) with the host destinations pre-filled with a
 * poison pattern, and is checked twice: against a sequential CPU simulation of the same job
 * (tide_copy_region into simulated device buffers and back, comm/region.c being checked against
 * naive loops in test_region), which covers every byte of every host array (inputs unchanged,
 * destinations right, points outside the downloaded regions untouched); and against naive
 * index loops written out here. Jobs:
 *   a) round trip of a 37x11x13 array in 5 chunks along its slowest dimension, 1 to 4 slots;
 *   b) chunks along the middle dimension (strided host regions) into device layouts with halos
 *      (2D and 3D copies), work copying buffer 0 to buffer 1 on the slot's stream, downloads
 *      into a larger host array;
 *   c) two uploads from two host arrays and four downloads per chunk: three pieces into per-peer
 *      blocks of one send buffer, one from the other device buffer, storage order 2,0,1;
 *   d) element sizes 8 and 16, batch 1 and 2 (in a, b, c);
 *   e) pinned arrays, pageable ones staged and registered, and mixes, in every job;
 *   f) bad transfers, bad jobs and bad pipelines: an error code, a reason, nothing written;
 *   g) a failing work callback (and a failing describe): its code comes back;
 *   h) rows further apart than the largest copy pitch (device memory as the host side): alone
 *      with the argument far-rows, which exits 77 where 8 GiB of device memory cannot be had;
 *   i) per-buffer sizes and resident buffers (tide_pipeline_create_config): work copying a slot
 *      buffer into a resident one and a caller-filled resident one out through a slot buffer
 *      of another size, uploads and downloads naming a resident buffer, a pipeline with
 *      resident buffers only, transfers checked against the size of the buffer they name, bad
 *      configurations;
 *   j) ordered work: a shift register through a resident buffer, each chunk's work reading the
 *      previous chunk's result, against a CPU oracle (unordered runs reported for information);
 *   k) host callbacks: before_upload producing each chunk's input (host input poisoned),
 *      after_download checking and rewriting each chunk's output; each called once, in chunk
 *      order, at most nslots + 1 chunks late, from the calling thread; a failing one's code;
 *      uploaded called once per chunk in order, after before_upload, its stream holding the
 *      chunk's uploads (it copies the slot buffer out on that stream: the copies equal the
 *      input); no ended call from tide_pipeline_run;
 *   l) start and wait: two pipelines (on two GPUs where there are two) started back to back,
 *      callbacks on the pipelines' threads and devices; a second start, a run in flight, a bad
 *      job, destroy while running; ended called once per started run, before wait returns,
 *      with its status (0, a bad job's from start itself, a failing callback's code);
 *   m) after_caller: inputs written on the caller's stream behind a 50 ms sleep (pinned, by a
 *      copy on the legacy default stream; pageable staged, by a host function on a stream).
 * For information only, it times a 1 GiB pinned round trip against tide_gpu_measure's rate of
 * both directions at once, and a 512 MiB pageable round trip staged and registered.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tide_config.h"

#if !TIDE_HAVE_CUDA
int main(void)
{
    printf("SKIP: this build has no CUDA (gpu/ not compiled)\n");
    return 77;
}
#else
#include <omp.h>
#include <cuda_runtime.h>
#include "common.h"
#include "backend/measure.h"
#include "backend/pipeline.h"
#include "comm/region.h"
#include "tide.h"

enum { POISON = 0xdb };

static tt_tally tally;

/* One check: counted, and a "FAIL: ..." line unless cond holds. */
#define CHECK(cond, ...) tt_local(&tally, (cond) != 0, __VA_ARGS__)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

/* Random bytes, none of them zero. */
static void fill_random(unsigned char *p, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        uint64_t w = rng | 0x0101010101010101ull;
        memcpy(p + i, &w, 8);
    }
    for (; i < n; i++)
        p[i] = (unsigned char)(0x11 + i % 200);
}

static tide_box mkbox(int x0, int x1, int y0, int y1, int z0, int z1, const int order[3])
{
    tide_box b = {{x0, y0, z0}, {x1, y1, z1}, {order[0], order[1], order[2]}};
    return b;
}

static tide_box inter(const tide_box *a, const tide_box *b)
{
    tide_box r;
    tide_box_intersect(a, b, &r);
    return r;
}

static size_t nbytes(const tide_box *b, size_t elem, int batch)
{
    return (size_t)tide_box_count(b) * elem * (size_t)batch;
}

/* ---- host arrays, each with an expected twin for the simulation --------------------------- */

enum { PINNED = 0, PAGEABLE = 1 };
enum { MAXARR = 8 };

typedef struct {
    unsigned char *act[MAXARR], *exp[MAXARR];
    size_t bytes[MAXARR];
    int pinned[MAXARR], n;
} arrays;

static unsigned char *arr_new(arrays *as, size_t bytes, int kind, int input)
{
    unsigned char *a = NULL;
    if (kind == PINNED) {
        if (cudaHostAlloc((void **)&a, bytes, cudaHostAllocDefault) != cudaSuccess)
            a = NULL;
    } else {
        a = malloc(bytes);
    }
    unsigned char *e = malloc(bytes);
    if (!a || !e || as->n == MAXARR) {
        printf("FAIL: cannot allocate %zu bytes of test arrays\n", bytes);
        exit(1);
    }
    if (input)
        fill_random(a, bytes);
    else
        memset(a, POISON, bytes);
    memcpy(e, a, bytes);
    as->act[as->n] = a;
    as->exp[as->n] = e;
    as->bytes[as->n] = bytes;
    as->pinned[as->n] = kind == PINNED;
    as->n++;
    return a;
}

static void arr_free(arrays *as)
{
    for (int i = 0; i < as->n; i++) {
        if (as->pinned[i])
            cudaFreeHost(as->act[i]);
        else
            free(as->act[i]);
        free(as->exp[i]);
    }
    as->n = 0;
}

/* The expected twin of a pointer into one of the arrays. */
static unsigned char *twin(const arrays *as, const void *p)
{
    const unsigned char *q = p;
    for (int i = 0; i < as->n; i++)
        if (q >= as->act[i] && q < as->act[i] + as->bytes[i])
            return as->exp[i] + (q - as->act[i]);
    printf("FAIL: pointer outside the test arrays\n");
    exit(1);
}

/* ---- a job as data: describe and work read it ------------------------------------------- */

enum { MAXC = 16, MAXX = 6 };

typedef struct {
    int nchunks;
    int nup[MAXC], ndown[MAXC];
    tide_xfer up[MAXC][MAXX], down[MAXC][MAXX];
    size_t copy_bytes;     /* work copies buf 0 to buf 1, this many bytes (0: nothing) */
    int fail_at, fail_code; /* work returns fail_code at chunk fail_at (-1: never) */
    int describe_fail_at;  /* describe returns TIDE_ERR_UNSUPPORTED at this chunk (-1: never) */
    int calls[64], ncalls;  /* chunks the work was called for, in call order */
    void *buf0[64];         /* buf[0] the work saw at each call */
} plan;

static void plan_init(plan *p)
{
    memset(p, 0, sizeof *p);
    p->fail_at = -1;
    p->describe_fail_at = -1;
}

static int describe(void *user, int i, tide_xfer *up, int *nup, tide_xfer *down, int *ndown)
{
    const plan *p = user;
    if (i == p->describe_fail_at)
        return TIDE_ERR_UNSUPPORTED;
    memcpy(up, p->up[i], (size_t)p->nup[i] * sizeof *up);
    memcpy(down, p->down[i], (size_t)p->ndown[i] * sizeof *down);
    *nup = p->nup[i];
    *ndown = p->ndown[i];
    return 0;
}

static int work(void *user, int i, void *const *buf, void *stream)
{
    plan *p = user;
    if (p->ncalls < 64) {
        p->calls[p->ncalls] = i;
        p->buf0[p->ncalls] = buf[0];
    }
    p->ncalls++;
    if (i == p->fail_at)
        return p->fail_code;
    if (p->copy_bytes && cudaMemcpyAsync(buf[1], buf[0], p->copy_bytes, cudaMemcpyDeviceToDevice,
                                         (cudaStream_t)stream) != cudaSuccess)
        return TIDE_ERR_BACKEND;
    return 0;
}

/* Device bytes the plan's transfers need in a buffer. */
static size_t plan_buf_bytes(const plan *p, size_t elem, int batch)
{
    size_t need = 0;
    for (int i = 0; i < p->nchunks; i++)
        for (int k = 0; k < p->nup[i] + p->ndown[i]; k++) {
            const tide_xfer *x = k < p->nup[i] ? &p->up[i][k] : &p->down[i][k - p->nup[i]];
            size_t n = x->dbyte + nbytes(&x->dbox, elem, batch);
            if (n > need)
                need = n;
        }
    return need;
}

/* The job, run sequentially on the CPU into the expected twins. */
static void simulate(const plan *p, const arrays *as, size_t elem, int batch, int nslots,
                     int nbufs, size_t buf_bytes)
{
    unsigned char *sim = calloc((size_t)nslots * nbufs, buf_bytes);
    if (!sim) {
        printf("FAIL: out of memory\n");
        exit(1);
    }
    for (int i = 0; i < p->nchunks; i++) {
        unsigned char *slot = sim + (size_t)(i % nslots) * nbufs * buf_bytes;
        for (int k = 0; k < p->nup[i]; k++) {
            const tide_xfer *x = &p->up[i][k];
            tide_copy_region(elem, batch, &x->region, twin(as, x->host), &x->hbox,
                             slot + (size_t)x->buf * buf_bytes + x->dbyte, &x->dbox, 1);
        }
        if (p->copy_bytes)
            memcpy(slot + buf_bytes, slot, p->copy_bytes);
        for (int k = 0; k < p->ndown[i]; k++) {
            const tide_xfer *x = &p->down[i][k];
            tide_copy_region(elem, batch, &x->region, slot + (size_t)x->buf * buf_bytes + x->dbyte,
                             &x->dbox, twin(as, x->host), &x->hbox, 1);
        }
    }
    free(sim);
}

/* Every byte of every array equal to its twin. */
static int compare_all(const char *what, const arrays *as)
{
    int bad = 0;
    for (int i = 0; i < as->n; i++) {
        if (memcmp(as->act[i], as->exp[i], as->bytes[i]) == 0)
            continue;
        size_t k = 0;
        while (as->act[i][k] == as->exp[i][k])
            k++;
        printf("  %s: array %d differs from the simulation first at byte %zu of %zu "
               "(got 0x%02x, want 0x%02x)\n", what, i, k, as->bytes[i], as->act[i][k],
               as->exp[i][k]);
        bad++;
    }
    return bad;
}

/* ---- naive oracle: index arithmetic written out, independent of comm/region.c ------------ */

static int64_t naive_index(const tide_box *b, int f, const int pt[3])
{
    int64_t idx = f;
    for (int k = 0; k < 3; k++) {
        int d = b->order[k];
        idx = idx * (b->hi[d] - b->lo[d]) + (pt[d] - b->lo[d]);
    }
    return idx;
}

typedef struct {
    const unsigned char *data;
    tide_box box;
} source;

/* dst (layout dbox) must hold, at the points of cov, the value of the first source whose box
 * holds the point, and poison everywhere else. */
static int naive_check(size_t elem, int batch, const unsigned char *dst, const tide_box *dbox,
                       const tide_box *cov, const source *src, int nsrc)
{
    long long bad = 0;
    int pt[3];
    for (int f = 0; f < batch; f++)
        for (pt[0] = dbox->lo[0]; pt[0] < dbox->hi[0]; pt[0]++)
            for (pt[1] = dbox->lo[1]; pt[1] < dbox->hi[1]; pt[1]++)
                for (pt[2] = dbox->lo[2]; pt[2] < dbox->hi[2]; pt[2]++) {
                    const unsigned char *d = dst + naive_index(dbox, f, pt) * (int64_t)elem;
                    int ok = 1;
                    if (tt_inside(cov, pt)) {
                        int s = 0;
                        while (s < nsrc && !tt_inside(&src[s].box, pt))
                            s++;
                        ok = s < nsrc &&
                             memcmp(d, src[s].data + naive_index(&src[s].box, f, pt) * (int64_t)elem,
                                    elem) == 0;
                    } else {
                        for (size_t b = 0; b < elem; b++)
                            ok &= d[b] == POISON;
                    }
                    if (!ok && bad++ == 0)
                        printf("  first wrong point (%d,%d,%d) field %d%s\n", pt[0], pt[1],
                               pt[2], f, tt_inside(cov, pt) ? "" : " (should be untouched)");
                }
    return bad == 0;
}

/* ---- running a plan ------------------------------------------------------------------------ */

typedef struct {
    int in_kind, out_kind;
    tide_pageable_mode mode;
    const char *name;
} memkind;

static const memkind kinds[] = {
    {PINNED, PINNED, TIDE_PAGEABLE_STAGE, "pinned"},
    {PAGEABLE, PAGEABLE, TIDE_PAGEABLE_STAGE, "pageable staged"},
    {PAGEABLE, PAGEABLE, TIDE_PAGEABLE_REGISTER, "pageable registered"},
    {PINNED, PAGEABLE, TIDE_PAGEABLE_STAGE, "pinned in, pageable out, staged"},
    {PAGEABLE, PINNED, TIDE_PAGEABLE_REGISTER, "pageable in registered, pinned out"},
};
enum { NKINDS = sizeof kinds / sizeof kinds[0] };

static tide_pipeline_job make_job(plan *p, size_t elem, int batch, tide_pageable_mode mode,
                                  int with_work)
{
    tide_pipeline_job j;
    memset(&j, 0, sizeof j);
    j.nchunks = p->nchunks;
    j.elem = elem;
    j.batch = batch;
    j.max_up = MAXX;
    j.max_down = MAXX;
    j.describe = describe;
    j.work = with_work ? work : NULL;
    j.user = p;
    j.pageable = mode;
    return j;
}

/* Run the plan on a fresh pipeline; check status, callbacks, stats and every byte against the
 * simulation. Returns nonzero when the run went through (the caller adds its naive checks). */
static int run_plan(const char *what, plan *p, arrays *as, size_t elem, int batch, int nslots,
                    int nbufs, const memkind *mk, int with_work)
{
    char why[512] = "";
    size_t buf_bytes = plan_buf_bytes(p, elem, batch);
    if (with_work && p->copy_bytes)
        p->copy_bytes = buf_bytes;
    tide_pipeline *pl = NULL;
    int st = tide_pipeline_create(buf_bytes, nbufs, nslots, 0, &pl, why, sizeof why);
    CHECK(st == 0 && pl, "%s: create: %d %s", what, st, why);
    if (st)
        return 0;
    CHECK(tide_pipeline_slots(pl) == nslots &&
          tide_pipeline_device_bytes(pl) == (size_t)nslots * nbufs * buf_bytes &&
          tide_pipeline_pinned_bytes(pl) == 0, "%s: pipeline shape", what);
    tide_pipeline_job job = make_job(p, elem, batch, mk->mode, with_work);
    p->ncalls = 0;
    st = tide_pipeline_run(pl, &job, why, sizeof why);
    CHECK(st == 0, "%s: run: %d %s", what, st, why);
    if (st) {
        tide_pipeline_destroy(pl);
        return 0;
    }
    if (with_work) {
        /* Called once per chunk, in chunk order; chunk i on slot i % nslots. */
        int ok = p->ncalls == p->nchunks;
        for (int i = 0; ok && i < p->nchunks; i++) {
            ok = p->calls[i] == i && p->buf0[i] == p->buf0[i % nslots];
            for (int k = 0; ok && k < i && i < nslots; k++)
                ok = p->buf0[k] != p->buf0[i];
        }
        CHECK(ok, "%s: work callbacks out of order or on the wrong slot (%d calls)", what,
              p->ncalls);
    }
    size_t up = 0, down = 0;
    for (int i = 0; i < p->nchunks; i++) {
        for (int k = 0; k < p->nup[i]; k++)
            up += nbytes(&p->up[i][k].region, elem, batch);
        for (int k = 0; k < p->ndown[i]; k++)
            down += nbytes(&p->down[i][k].region, elem, batch);
    }
    tide_pipeline_stats s;
    st = tide_pipeline_last_stats(pl, &s);
    CHECK(st == 0 && s.bytes_up == up && s.bytes_down == down && s.total > 0 && s.upload >= 0 &&
          s.work >= 0 && s.download >= 0 && s.upload + s.work + s.download <= s.total * nslots + 1e-3,
          "%s: stats: %zu/%zu bytes up, %zu/%zu down, %.3g s total, %.3g up %.3g work %.3g down",
          what, s.bytes_up, up, s.bytes_down, down, s.total, s.upload, s.work, s.download);
    /* Staging is allocated only when something is staged. */
    size_t pinned = tide_pipeline_pinned_bytes(pl);
    int staged = (mk->in_kind == PAGEABLE || mk->out_kind == PAGEABLE) &&
                 mk->mode == TIDE_PAGEABLE_STAGE;
    if (staged)
        CHECK(pinned > 0, "%s: staged run without staging", what);
    else if (mk->in_kind == PINNED && mk->out_kind == PINNED)
        CHECK(pinned == 0, "%s: %zu bytes of staging for pinned arrays", what, pinned);
    else if (pinned)
        printf("  note: %s: registration fell back to staging\n", what);
    /* Registered arrays are unregistered after the run. */
    for (int i = 0; i < as->n; i++) {
        struct cudaPointerAttributes a;
        if (!as->pinned[i]) {
            cudaError_t e = cudaPointerGetAttributes(&a, as->act[i]);
            CHECK(e != cudaSuccess || a.type == cudaMemoryTypeUnregistered,
                  "%s: pageable array %d still registered after the run", what, i);
            cudaGetLastError();
        }
    }
    tide_pipeline_destroy(pl);
    simulate(p, as, elem, batch, nslots, nbufs, buf_bytes);
    CHECK(compare_all(what, as) == 0, "%s: result differs from the CPU simulation", what);
    return 1;
}

/* ---- a) round trip, chunks along the slowest dimension --------------------------------------- */

static const int C_ORDER[3] = {0, 1, 2};

static void build_roundtrip(plan *p, const unsigned char *A, unsigned char *B, const tide_box *box,
                            int nchunks)
{
    plan_init(p);
    p->nchunks = nchunks;
    int n0 = box->hi[0] - box->lo[0];
    for (int i = 0; i < nchunks; i++) {
        tide_box r = *box;
        r.lo[0] = box->lo[0] + n0 * i / nchunks;
        r.hi[0] = box->lo[0] + n0 * (i + 1) / nchunks;
        tide_xfer u = {(void *)A, *box, r, 0, 0, r};
        tide_xfer d = {B, *box, r, 0, 0, r};
        p->up[i][0] = u;
        p->down[i][0] = d;
        p->nup[i] = p->ndown[i] = 1;
    }
}

static void test_roundtrip(void)
{
    static const size_t eb[2][2] = {{8, 1}, {16, 2}};
    for (int m = 0; m < NKINDS; m++)
        for (int e = 0; e < 2; e++)
            for (int nslots = 1; nslots <= 4; nslots++) {
                size_t elem = eb[e][0];
                int batch = (int)eb[e][1];
                tide_box box = mkbox(0, 37, 0, 11, 0, 13, C_ORDER);
                arrays as = {0};
                size_t n = nbytes(&box, elem, batch);
                unsigned char *A = arr_new(&as, n, kinds[m].in_kind, 1);
                unsigned char *B = arr_new(&as, n, kinds[m].out_kind, 0);
                plan *p = malloc(sizeof *p);
                build_roundtrip(p, A, B, &box, 5);
                char what[160];
                snprintf(what, sizeof what, "a) round trip, %s, elem %zu batch %d, %d slots",
                         kinds[m].name, elem, batch, nslots);
                if (run_plan(what, p, &as, elem, batch, nslots, 1, &kinds[m], 0))
                    CHECK(memcmp(A, B, n) == 0, "%s: output differs from input", what);
                free(p);
                arr_free(&as);
            }
}

/* ---- b) chunks along the middle dimension, halos, work --------------------------------------- */

static void test_middle(void)
{
    static const size_t eb[4][2] = {{8, 1}, {8, 2}, {16, 1}, {16, 2}};
    static const int slots[2] = {1, 3};
    for (int m = 0; m < NKINDS; m++)
        for (int e = 0; e < 4; e++)
            for (int s = 0; s < 2; s++)
                for (int hz = 0; hz <= 1; hz++) {
                    size_t elem = eb[e][0];
                    int batch = (int)eb[e][1];
                    tide_box abox = mkbox(2, 39, 1, 12, 0, 13, C_ORDER);
                    tide_box bbox = mkbox(0, 40, 0, 13, -1, 14, C_ORDER);
                    arrays as = {0};
                    unsigned char *A = arr_new(&as, nbytes(&abox, elem, batch), kinds[m].in_kind, 1);
                    unsigned char *B = arr_new(&as, nbytes(&bbox, elem, batch), kinds[m].out_kind, 0);
                    plan *p = malloc(sizeof *p);
                    plan_init(p);
                    p->nchunks = 4;
                    p->copy_bytes = 1;
                    for (int i = 0; i < 4; i++) {
                        tide_box r = abox;
                        r.lo[1] = 1 + 11 * i / 4;
                        r.hi[1] = 1 + 11 * (i + 1) / 4;
                        tide_box d = mkbox(2, 39, r.lo[1] - 1, r.hi[1] + 1, -hz, 13 + hz, C_ORDER);
                        tide_xfer u = {A, abox, r, 0, 24, d};
                        tide_xfer w = {B, bbox, r, 1, 24, d};
                        p->up[i][0] = u;
                        p->down[i][0] = w;
                        p->nup[i] = p->ndown[i] = 1;
                    }
                    char what[160];
                    snprintf(what, sizeof what,
                             "b) middle-dimension chunks, %s, elem %zu batch %d, %d slots, halo "
                             "%s", kinds[m].name, elem, batch, slots[s], hz ? "y,z" : "y");
                    if (run_plan(what, p, &as, elem, batch, slots[s], 2, &kinds[m], 1)) {
                        source src = {A, abox};
                        CHECK(naive_check(elem, batch, B, &bbox, &abox, &src, 1),
                              "%s: naive check", what);
                    }
                    free(p);
                    arr_free(&as);
                }
}

/* ---- c) several uploads and downloads per chunk, per-peer blocks, order 2,0,1 ---------------- */

static void test_multi(void)
{
    static const size_t eb[4][2] = {{8, 1}, {8, 2}, {16, 1}, {16, 2}};
    static const int slots[2] = {2, 4};
    static const int O[3] = {2, 0, 1};
    for (int m = 0; m < NKINDS; m++)
        for (int e = 0; e < 4; e++)
            for (int s = 0; s < 2; s++) {
                size_t elem = eb[e][0];
                int batch = (int)eb[e][1];
                tide_box g = mkbox(0, 23, 0, 17, 0, 19, O);
                tide_box ub[2] = {mkbox(0, 23, 0, 17, 0, 8, O), mkbox(0, 23, 0, 17, 8, 19, O)};
                tide_box pb[3] = {mkbox(0, 23, 0, 5, 0, 19, O), mkbox(0, 23, 5, 11, 0, 19, O),
                                  mkbox(0, 23, 11, 17, 0, 19, O)};
                arrays as = {0};
                unsigned char *U[2], *P[3];
                for (int k = 0; k < 2; k++)
                    U[k] = arr_new(&as, nbytes(&ub[k], elem, batch), kinds[m].in_kind, 1);
                /* The per-peer blocks: one send buffer, 3 elements of gap between blocks. */
                size_t off[3], total = 0;
                for (int k = 0; k < 3; k++) {
                    off[k] = total;
                    total += nbytes(&pb[k], elem, batch) + 3 * elem;
                }
                unsigned char *S = arr_new(&as, total, kinds[m].out_kind, 0);
                for (int k = 0; k < 3; k++)
                    P[k] = S + off[k];
                unsigned char *Q = arr_new(&as, nbytes(&g, elem, batch), kinds[m].out_kind, 0);
                plan *p = malloc(sizeof *p);
                plan_init(p);
                p->nchunks = 5;
                p->copy_bytes = 1;
                for (int i = 0; i < 5; i++) {
                    tide_box r = g;
                    r.lo[0] = 23 * i / 5;
                    r.hi[0] = 23 * (i + 1) / 5;
                    for (int k = 0; k < 2; k++) {
                        tide_xfer x = {U[k], ub[k], inter(&r, &ub[k]), 0, 0, r};
                        p->up[i][k] = x;
                    }
                    for (int k = 0; k < 3; k++) {
                        tide_xfer x = {P[k], pb[k], inter(&r, &pb[k]), 1, 0, r};
                        p->down[i][k] = x;
                    }
                    tide_xfer q = {Q, g, r, 0, 0, r};
                    p->down[i][3] = q;
                    p->nup[i] = 2;
                    p->ndown[i] = 4;
                }
                char what[160];
                snprintf(what, sizeof what,
                         "c) 2 uploads, 4 downloads a chunk, %s, elem %zu batch %d, %d slots",
                         kinds[m].name, elem, batch, slots[s]);
                if (run_plan(what, p, &as, elem, batch, slots[s], 2, &kinds[m], 1)) {
                    source src[2] = {{U[0], ub[0]}, {U[1], ub[1]}};
                    for (int k = 0; k < 3; k++)
                        CHECK(naive_check(elem, batch, P[k], &pb[k], &pb[k], src, 2),
                              "%s: naive check of block %d", what, k);
                    CHECK(naive_check(elem, batch, Q, &g, &g, src, 2), "%s: naive check of Q",
                          what);
                    int gaps = 1;
                    for (int k = 0; k < 3; k++)
                        for (size_t b = 0; b < 3 * elem; b++)
                            gaps &= P[k][nbytes(&pb[k], elem, batch) + b] == POISON;
                    CHECK(gaps, "%s: the gaps between the send blocks were written", what);
                }
                free(p);
                arr_free(&as);
            }
}

/* ---- f, g) errors ---------------------------------------------------------------------------- */

static int all_poison(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != POISON)
            return 0;
    return 1;
}

/* One bad run: an error code (want, or any nonzero when want is 0), a reason, B untouched. */
static void expect_error(const char *what, tide_pipeline *pl, const tide_pipeline_job *job,
                         int want, const unsigned char *B, size_t n)
{
    char why[512] = "";
    int st = tide_pipeline_run(pl, job, why, sizeof why);
    CHECK(st != 0 && (want == 0 || st == want) && why[0], "%s: status %d (want %d), reason '%s'",
          what, st, want, why);
    if (B)
        CHECK(all_poison(B, n), "%s: output written by a failing run", what);
    if (st)
        printf("  expected error (%s): %s\n", what, why);
}

static void test_errors(void)
{
    const size_t elem = 8;
    tide_box box = mkbox(0, 37, 0, 11, 0, 13, C_ORDER);
    size_t n = nbytes(&box, elem, 1);
    arrays as = {0};
    unsigned char *A = arr_new(&as, n, PINNED, 1);
    unsigned char *B = arr_new(&as, n, PINNED, 0);
    unsigned char *Ap = arr_new(&as, n, PAGEABLE, 1);
    unsigned char *Bp = arr_new(&as, n, PAGEABLE, 0);
    plan *p = malloc(sizeof *p);
    build_roundtrip(p, A, B, &box, 5);
    size_t buf_bytes = plan_buf_bytes(p, elem, 1);
    char why[512] = "";
    tide_pipeline *pl = NULL;
    int st = tide_pipeline_create(buf_bytes, 2, 2, 0, &pl, why, sizeof why);
    CHECK(st == 0, "f) create: %s", why);
    if (st) {
        free(p);
        arr_free(&as);
        return;
    }
    tide_pipeline_job job = make_job(p, elem, 1, TIDE_PAGEABLE_STAGE, 1);

    p->down[2][0].dbyte = buf_bytes - 8;
    expect_error("f) device extent past the buffer", pl, &job, TIDE_ERR_ARGUMENT, B, n);
    build_roundtrip(p, A, B, &box, 5);
    p->up[1][0].region.hi[0] = 38;
    p->up[1][0].dbox.hi[0] = 38;
    expect_error("f) region outside the host box", pl, &job, TIDE_ERR_ARGUMENT, B, n);
    build_roundtrip(p, A, B, &box, 5);
    p->up[3][0].dbox.lo[2] = 1;
    expect_error("f) region outside the device box", pl, &job, TIDE_ERR_ARGUMENT, B, n);
    build_roundtrip(p, A, B, &box, 5);
    p->up[0][0].dbox.order[1] = 2;
    p->up[0][0].dbox.order[2] = 1;
    expect_error("f) different storage orders", pl, &job, TIDE_ERR_ARGUMENT, B, n);
    build_roundtrip(p, A, B, &box, 5);
    p->down[4][0].buf = 2;
    expect_error("f) buffer index out of range", pl, &job, TIDE_ERR_ARGUMENT, B, n);
    build_roundtrip(p, A, B, &box, 5);
    job.max_up = 0;
    expect_error("f) more uploads than max_up", pl, &job, TIDE_ERR_ARGUMENT, B, n);
    job.max_up = MAXX;
    job.elem = 0;
    expect_error("f) element size 0", pl, &job, TIDE_ERR_ARGUMENT, B, n);
    job.elem = elem;
    p->describe_fail_at = 3;
    expect_error("g) describe failing at chunk 3", pl, &job, TIDE_ERR_UNSUPPORTED, B, n);
    p->describe_fail_at = -1;

    /* g) work failing at chunk 2: its code comes back, no later work is called. */
    p->fail_at = 2;
    p->fail_code = TIDE_ERR_MISMATCH;
    p->ncalls = 0;
    expect_error("g) work failing at chunk 2 (pinned)", pl, &job, TIDE_ERR_MISMATCH, NULL, 0);
    CHECK(p->ncalls == 3 && p->calls[0] == 0 && p->calls[1] == 1 && p->calls[2] == 2,
          "g) work called %d times after failing at chunk 2", p->ncalls);
    build_roundtrip(p, Ap, Bp, &box, 5);
    p->fail_at = 3;
    p->fail_code = TIDE_ERR_BACKEND;
    expect_error("g) work failing at chunk 3 (pageable staged)", pl, &job, TIDE_ERR_BACKEND, NULL,
                 0);
    job.pageable = TIDE_PAGEABLE_REGISTER;
    expect_error("g) work failing at chunk 3 (pageable registered)", pl, &job, TIDE_ERR_BACKEND,
                 NULL, 0);
    struct cudaPointerAttributes a;
    CHECK(cudaPointerGetAttributes(&a, Ap) != cudaSuccess || a.type == cudaMemoryTypeUnregistered,
          "g) a pageable array stayed registered after a failing run");
    cudaGetLastError();
    job.pageable = TIDE_PAGEABLE_STAGE;

    /* The pipeline still works after all that, pinned and staged. */
    for (int k = 0; k < 2; k++) {
        unsigned char *in = k ? Ap : A, *out = k ? Bp : B;
        build_roundtrip(p, in, out, &box, 5);
        memset(out, POISON, n);
        st = tide_pipeline_run(pl, &job, why, sizeof why);
        CHECK(st == 0 && memcmp(in, out, n) == 0, "f) %s run after errors: %d %s",
              k ? "staged" : "pinned", st, st ? why : "wrong result");
    }
    tide_pipeline_destroy(pl);

    /* Staging smaller than a chunk: an error for staged arrays, fine for pinned ones. */
    st = tide_pipeline_create(buf_bytes, 1, 2, 1024, &pl, why, sizeof why);
    CHECK(st == 0, "f) create with small staging: %s", why);
    if (!st) {
        build_roundtrip(p, Ap, Bp, &box, 5);
        memset(Bp, POISON, n);
        job.work = NULL;
        expect_error("f) staging smaller than a chunk", pl, &job, TIDE_ERR_ARGUMENT, Bp, n);
        build_roundtrip(p, A, B, &box, 5);
        memset(B, POISON, n);
        st = tide_pipeline_run(pl, &job, why, sizeof why);
        CHECK(st == 0 && memcmp(A, B, n) == 0, "f) pinned run with small staging: %d %s", st,
              st ? why : "wrong result");
        tide_pipeline_destroy(pl);
    }

    /* Bad pipelines: an error and a reason, no pipeline. */
    struct {
        size_t bytes;
        int nbufs, nslots;
        const char *what;
    } bad[] = {{buf_bytes, 1, 0, "no slots"},
               {0, 1, 1, "empty buffers"},
               {buf_bytes, 0, 1, "no buffers"},
               {(size_t)1 << 60, 1, 1, "an exabyte of device memory"}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        tide_pipeline *q = NULL;
        why[0] = '\0';
        st = tide_pipeline_create(bad[k].bytes, bad[k].nbufs, bad[k].nslots, 0, &q, why, sizeof why);
        CHECK(st != 0 && q == NULL && why[0], "f) create with %s: status %d", bad[k].what, st);
        if (st)
            printf("  expected error (f) create with %s): %s\n", bad[k].what, why);
        tide_pipeline_destroy(q);
    }
    free(p);
    arr_free(&as);
}

/* ---- h) rows further apart than the largest pitch a copy takes ------------------------------- */

/* Device memory passed as the "host" array (copied directly, like pinned memory) whose rows are
 * 2 GiB apart: too far for cudaMemcpy2D/3D, so the engine falls back to row copies. Returns 0
 * after a SKIP line where 8 GiB of device memory cannot be had, else 1. */
static int test_far_rows(void)
{
    const size_t elem = 8;
    const int far = 1 << 28; /* 2^28 elements of 8 bytes: rows 2 GiB apart */
    const tide_box hbox = mkbox(0, 2, 0, 2, 0, far, C_ORDER);
    const tide_box region = mkbox(0, 2, 0, 2, 0, 100, C_ORDER);
    size_t hbytes = nbytes(&hbox, elem, 1), rbytes = nbytes(&region, elem, 1);
    int max_pitch = 0, dev = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&max_pitch, cudaDevAttrMaxPitch, dev);
    unsigned char *D = NULL, *src = malloc(rbytes), *H = NULL;
    if (cudaMalloc((void **)&D, hbytes) != cudaSuccess) {
        cudaGetLastError();
        printf("SKIP: h) rows 2 GiB apart: cannot allocate %zu bytes on the device\n", hbytes);
        free(src);
        return 0;
    }
    if (cudaHostAlloc((void **)&H, rbytes, cudaHostAllocDefault) != cudaSuccess) {
        CHECK(0, "h) cannot allocate pinned memory");
        cudaFree(D);
        free(src);
        return 1;
    }
    fill_random(src, rbytes);
    memset(H, POISON, rbytes);
    int ok = 1;
    for (int r = 0; r < 4; r++) /* row (x, y) = (r / 2, r % 2) starts at element r * far */
        ok &= cudaMemcpy(D + (size_t)r * far * elem, src + (size_t)r * 100 * elem, 100 * elem,
                         cudaMemcpyHostToDevice) == cudaSuccess;
    char why[512] = "";
    tide_pipeline *pl = NULL;
    ok &= tide_pipeline_create(rbytes, 1, 1, 0, &pl, why, sizeof why) == 0;
    if (ok) {
        plan *p = malloc(sizeof *p);
        plan_init(p);
        p->nchunks = 1;
        tide_xfer u = {D, hbox, region, 0, 0, region};
        tide_xfer d = {H, region, region, 0, 0, region};
        p->up[0][0] = u;
        p->down[0][0] = d;
        p->nup[0] = p->ndown[0] = 1;
        tide_pipeline_job job = make_job(p, elem, 1, TIDE_PAGEABLE_STAGE, 0);
        int st = tide_pipeline_run(pl, &job, why, sizeof why);
        CHECK(st == 0 && memcmp(H, src, rbytes) == 0 && tide_pipeline_pinned_bytes(pl) == 0,
              "h) rows 2 GiB apart (max pitch %d): %d %s", max_pitch, st,
              st ? why : "wrong result or staged");
        printf("info: h) rows 2^31 bytes apart, device max copy pitch %d bytes: %s\n", max_pitch,
               st ? "failed" : "copied by the row fallback");
        free(p);
    } else {
        CHECK(0, "h) setup: %s", why);
    }
    tide_pipeline_destroy(pl);
    cudaFree(D);
    cudaFreeHost(H);
    free(src);
    return 1;
}

/* ---- helpers for the jobs below -------------------------------------------------------------- */

/* Copy to the device, then synchronize: the pipeline's streams do not wait for the legacy
 * default stream, and a copy from pageable memory may return before it has landed. */
static int dev_put(void *d, const void *h, size_t n)
{
    return cudaMemcpy(d, h, n, cudaMemcpyHostToDevice) == cudaSuccess &&
           cudaDeviceSynchronize() == cudaSuccess;
}

/* Device memory d holds exactly want[0..n). */
static int dev_equals(const void *d, const unsigned char *want, size_t n)
{
    unsigned char *h = malloc(n);
    int ok = h && cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost) == cudaSuccess &&
             memcmp(h, want, n) == 0;
    free(h);
    return ok;
}

/* Byte range of each chunk of a build_roundtrip plan in its (C-order, batch 1) arrays. */
static void chunk_ranges(const plan *p, const tide_box *box, size_t elem, size_t *off,
                         size_t *bytes)
{
    for (int i = 0; i < p->nchunks; i++) {
        const tide_box *r = &p->up[i][0].region;
        off[i] = (size_t)tide_box_offset(box, r) * elem;
        bytes[i] = nbytes(r, elem, 1);
    }
}

/* ---- i) per-buffer sizes and resident buffers ------------------------------------------------ */

typedef struct {
    plan p;                         /* first: describe and work see a plan */
    size_t off[MAXC], bytes[MAXC];  /* chunk i's part of the arrays and of the resident buffers */
    size_t b0;                      /* bytes of slot buffer 0; buffer 1 has 2 * b0 */
    void *res[2];                   /* tide_pipeline_resident's pointers */
    void *seen[MAXC][2];            /* slot buffers 0 and 1 as each work call saw them */
    int ptrs_bad;                   /* work calls given other resident pointers */
} resjob;

/* Chunk i (slot buffers 0, 1, residents 2, 3): buffer 0 holds its part of A; copy it into its
 * part of resident 0 and into buffer 1 at byte b0, and its part of resident 1 into buffer 1 at
 * byte 0; both halves of buffer 1 are downloaded. */
static int res_work(void *user, int i, void *const *buf, void *stream)
{
    resjob *r = user;
    cudaStream_t st = stream;
    r->seen[i][0] = buf[0];
    r->seen[i][1] = buf[1];
    if (buf[2] != r->res[0] || buf[3] != r->res[1])
        r->ptrs_bad++;
    char *b0 = buf[0], *b1 = buf[1], *r0 = buf[2], *r1 = buf[3];
    const size_t n = r->bytes[i], o = r->off[i];
    const enum cudaMemcpyKind dd = cudaMemcpyDeviceToDevice;
    return cudaMemcpyAsync(r0 + o, b0, n, dd, st) == cudaSuccess &&
                   cudaMemcpyAsync(b1 + r->b0, b0, n, dd, st) == cudaSuccess &&
                   cudaMemcpyAsync(b1, r1 + o, n, dd, st) == cudaSuccess
               ? 0
               : TIDE_ERR_BACKEND;
}

/* A -> buffer 0 -> (work) -> buffer 1 at b0 -> B, and resident 1 -> buffer 1 at 0 -> D; b0 is
 * the largest chunk's bytes. */
static void res_plan(resjob *r, unsigned char *A, unsigned char *B, unsigned char *D,
                     const tide_box *box, int nchunks, size_t elem)
{
    build_roundtrip(&r->p, A, B, box, nchunks);
    chunk_ranges(&r->p, box, elem, r->off, r->bytes);
    r->b0 = 0;
    for (int i = 0; i < nchunks; i++)
        r->b0 = r->bytes[i] > r->b0 ? r->bytes[i] : r->b0;
    for (int i = 0; i < nchunks; i++) {
        const tide_box reg = r->p.up[i][0].region;
        r->p.down[i][0].buf = 1;
        r->p.down[i][0].dbyte = r->b0;
        tide_xfer d = {D, *box, reg, 1, 0, reg};
        r->p.down[i][1] = d;
        r->p.ndown[i] = 2;
    }
}

/* Each chunk uploads its part of A straight into resident buffer `rb` at the part's offset and
 * downloads it back into C (no work). */
static void direct_plan(plan *p, unsigned char *A, unsigned char *C, const tide_box *box,
                        int nchunks, int rb, const size_t *off)
{
    build_roundtrip(p, A, C, box, nchunks);
    for (int i = 0; i < nchunks; i++) {
        p->up[i][0].buf = p->down[i][0].buf = rb;
        p->up[i][0].dbyte = p->down[i][0].dbyte = off[i];
    }
}

/* Bad transfers checked against the size of the buffer they name; bad configurations. */
static void resident_errors(resjob *r, tide_pipeline *pl, tide_pipeline_job *job,
                            unsigned char *A, unsigned char *B, unsigned char *D,
                            const tide_box *box, size_t elem, size_t n)
{
    memset(B, POISON, n);
    res_plan(r, A, B, D, box, 5, elem);
    r->p.up[1][0].dbyte = r->b0; /* fits buffer 1 (2 * b0 bytes), not buffer 0 */
    expect_error("i) upload past the end of the smaller buffer 0", pl, job, TIDE_ERR_ARGUMENT, B,
                 n);
    res_plan(r, A, B, D, box, 5, elem);
    r->p.down[2][1].buf = 4; /* 2 slot buffers + 2 resident ones */
    expect_error("i) buffer index past the resident buffers", pl, job, TIDE_ERR_ARGUMENT, B, n);
    res_plan(r, A, B, D, box, 5, elem);
    r->p.down[3][0].buf = 2;
    r->p.down[3][0].dbyte = n - 8;
    expect_error("i) download past the end of a resident buffer", pl, job, TIDE_ERR_ARGUMENT, B,
                 n);

    const size_t sz[2] = {64, 0}, one[1] = {64};
    struct {
        tide_pipeline_config c;
        const char *what;
    } bad[] = {{{0, 1, one, 0, NULL, 0}, "no slots"},
               {{2, 0, NULL, 0, NULL, 0}, "no buffers at all"},
               {{2, 2, sz, 0, NULL, 0}, "a slot buffer of 0 bytes"},
               {{2, 1, one, 2, sz, 0}, "a resident buffer of 0 bytes"},
               {{2, 1, one, 1, NULL, 0}, "resident sizes missing"},
               {{2, -1, one, 1, one, 0}, "-1 slot buffers"}};
    char why[512];
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        tide_pipeline *q = NULL;
        why[0] = '\0';
        int st = tide_pipeline_create_config(&bad[k].c, &q, why, sizeof why);
        CHECK(st == TIDE_ERR_ARGUMENT && q == NULL && why[0], "i) config with %s: status %d",
              bad[k].what, st);
        tide_pipeline_destroy(q);
    }
    tide_pipeline *q = NULL;
    const size_t huge[1] = {(size_t)1 << 60};
    tide_pipeline_config c = {1, 1, one, 1, huge, 0};
    int st = tide_pipeline_create_config(&c, &q, why, sizeof why);
    CHECK(st == TIDE_ERR_NOMEM && q == NULL, "i) an exabyte resident buffer: status %d", st);
    st = tide_pipeline_create_config(NULL, &q, why, sizeof why);
    CHECK(st == TIDE_ERR_ARGUMENT && q == NULL, "i) no configuration: status %d", st);
}

/* The pipeline of job i: slot buffers of b0 and 2 * b0 bytes, residents of n bytes each. */
static tide_pipeline *resident_pipeline(int nslots, size_t b0, size_t n, const char *what)
{
    const size_t bufs[2] = {b0, 2 * b0}, res[2] = {n, n};
    tide_pipeline_config c = {nslots, 2, bufs, 2, res, 0};
    tide_pipeline *pl = NULL;
    char why[512] = "";
    int st = tide_pipeline_create_config(&c, &pl, why, sizeof why);
    CHECK(st == 0 && pl, "%s: create: %d %s", what, st, why);
    if (st)
        return NULL;
    CHECK(tide_pipeline_device_bytes(pl) == (size_t)nslots * 3 * b0 + 2 * n &&
              tide_pipeline_slots(pl) == nslots && tide_pipeline_resident(pl, 0) &&
              tide_pipeline_resident(pl, 1) &&
              tide_pipeline_resident(pl, 0) != tide_pipeline_resident(pl, 1) &&
              !tide_pipeline_resident(pl, 2) && !tide_pipeline_resident(pl, -1),
          "%s: pipeline shape (%zu device bytes)", what, tide_pipeline_device_bytes(pl));
    return pl;
}

/* Slot buffers distinct within a slot and across slots, the same for chunks i and i + nslots,
 * never a resident buffer. */
static int slot_buffers_ok(const resjob *r, int nchunks, int nslots)
{
    for (int i = 0; i < nchunks; i++)
        for (int k = 0; k < 2; k++) {
            const void *b = r->seen[i][k];
            if (!b || b == r->res[0] || b == r->res[1] || b == r->seen[i][1 - k] ||
                b != r->seen[i % nslots][k])
                return 0;
            for (int j = 0; j < i && j < nslots && i < nslots; j++)
                if (b == r->seen[j][0] || b == r->seen[j][1])
                    return 0;
        }
    return 1;
}

/* The direct job (uploads into and downloads out of a resident buffer) on pl: C right and the
 * resident buffer holding A2. */
static void run_direct(const char *what, tide_pipeline *pl, plan *p, unsigned char *A2,
                       unsigned char *C, const tide_box *box, int rb, const size_t *off,
                       tide_pageable_mode mode, size_t n)
{
    char why[512];
    direct_plan(p, A2, C, box, 5, rb, off);
    tide_pipeline_job job = make_job(p, 8, 1, mode, 0);
    memset(C, POISON, n);
    int st = tide_pipeline_run(pl, &job, why, sizeof why);
    CHECK(st == 0 && memcmp(C, A2, n) == 0, "%s: %d %s", what, st, st ? why : "wrong result");
    CHECK(dev_equals(tide_pipeline_resident(pl, 0), A2, n),
          "%s: the resident buffer does not hold the uploads", what);
}

static void test_resident(void)
{
    static const int slots[2] = {1, 3};
    const size_t elem = 8;
    const tide_box box = mkbox(0, 37, 0, 11, 0, 13, C_ORDER);
    const size_t n = nbytes(&box, elem, 1);
    resjob *r = malloc(sizeof *r);
    for (int m = 0; m < NKINDS; m++)
        for (int s = 0; s < 2; s++) {
            char what[160];
            snprintf(what, sizeof what, "i) resident buffers, %s, %d slots", kinds[m].name,
                     slots[s]);
            arrays as = {0};
            unsigned char *A = arr_new(&as, n, kinds[m].in_kind, 1);
            unsigned char *A2 = arr_new(&as, n, kinds[m].in_kind, 1);
            unsigned char *B = arr_new(&as, n, kinds[m].out_kind, 0);
            unsigned char *C = arr_new(&as, n, kinds[m].out_kind, 0);
            unsigned char *D = arr_new(&as, n, kinds[m].out_kind, 0);
            unsigned char *R = malloc(n);
            fill_random(R, n);
            memset(r, 0, sizeof *r);
            res_plan(r, A, B, D, &box, 5, elem);
            tide_pipeline *pl = resident_pipeline(slots[s], r->b0, n, what);
            if (!pl) {
                free(R);
                arr_free(&as);
                continue;
            }
            r->res[0] = tide_pipeline_resident(pl, 0);
            r->res[1] = tide_pipeline_resident(pl, 1);
            CHECK(dev_put(r->res[1], R, n), "%s: filling resident 1", what);
            tide_pipeline_job job = make_job(&r->p, elem, 1, kinds[m].mode, 0);
            job.work = res_work;
            job.user = r;
            char why[512];
            int st = tide_pipeline_run(pl, &job, why, sizeof why);
            CHECK(st == 0, "%s: run: %d %s", what, st, why);
            if (!st) {
                CHECK(memcmp(B, A, n) == 0, "%s: B (through buffer 1 at byte b0) differs", what);
                CHECK(memcmp(D, R, n) == 0, "%s: D (resident 1, caller-filled) differs", what);
                CHECK(dev_equals(r->res[0], A, n), "%s: resident 0 does not hold A", what);
                CHECK(r->ptrs_bad == 0 && slot_buffers_ok(r, 5, slots[s]),
                      "%s: work saw wrong buffer pointers", what);
            }
            run_direct(what, pl, &r->p, A2, C, &box, 2, r->off, kinds[m].mode, n);
            CHECK(dev_equals(r->res[1], R, n), "%s: resident 1 changed across runs", what);
            if (m == 0 && s == 1)
                resident_errors(r, pl, &job, A, B, D, &box, elem, n);
            tide_pipeline_destroy(pl);

            /* No slot buffers at all: a round trip through one resident buffer (staging sized
             * explicitly: its default, the sum of the slot buffers, is 0). */
            tide_pipeline_config c = {slots[s], 0, NULL, 1, &n, n};
            st = tide_pipeline_create_config(&c, &pl, why, sizeof why);
            CHECK(st == 0 && tide_pipeline_device_bytes(pl) == n, "%s: resident-only: %d %s",
                  what, st, why);
            if (!st) {
                snprintf(what, sizeof what, "i) resident buffer only, %s, %d slots",
                         kinds[m].name, slots[s]);
                run_direct(what, pl, &r->p, A2, C, &box, 0, r->off, kinds[m].mode, n);
                tide_pipeline_destroy(pl);
            }
            free(R);
            arr_free(&as);
        }
    free(r);
}

/* ---- j) ordered work: a chain through a resident buffer -------------------------------------- */

/* Resident buffer R holds NCH + 1 parts of PART bytes; part 0 is seeded by the caller. Chunk i
 * uploads SHIFT bytes X_i into slot buffer 0 and its work sets part i+1 to part i shifted left
 * by SHIFT bytes with X_i appended: a shift register, right only when every chunk's work sees
 * the previous chunk's result. Before that step the work copies (NCH - i) * BUSY bytes inside
 * slot buffer 1, so that earlier chunks take longer: unordered, later chunks' steps would tend
 * to run first. Chunk i downloads part i+1 into row i of O. */
enum { NCH = 8, PART = 1 << 20, SHIFT = PART / 4, BUSY = 8 << 20 };

static int chain_work(void *user, int i, void *const *buf, void *stream)
{
    (void)user;
    cudaStream_t st = stream;
    const enum cudaMemcpyKind dd = cudaMemcpyDeviceToDevice;
    char *x = buf[0], *busy = buf[1], *R = buf[2];
    const size_t b = (size_t)(NCH - i) * BUSY;
    return cudaMemcpyAsync(busy + (size_t)NCH * BUSY, busy, b, dd, st) == cudaSuccess &&
                   cudaMemcpyAsync(R + (size_t)(i + 1) * PART, R + (size_t)i * PART + SHIFT,
                                   PART - SHIFT, dd, st) == cudaSuccess &&
                   cudaMemcpyAsync(R + (size_t)(i + 1) * PART + (PART - SHIFT), x, SHIFT, dd,
                                   st) == cudaSuccess
               ? 0
               : TIDE_ERR_BACKEND;
}

static void chain_plan(plan *p, unsigned char *X, unsigned char *O)
{
    const tide_box xb = mkbox(0, 1, 0, NCH, 0, SHIFT / 8, C_ORDER);
    const tide_box ob = mkbox(0, 1, 0, NCH, 0, PART / 8, C_ORDER);
    plan_init(p);
    p->nchunks = NCH;
    for (int i = 0; i < NCH; i++) {
        tide_box xr = xb, orow = ob;
        xr.lo[1] = orow.lo[1] = i;
        xr.hi[1] = orow.hi[1] = i + 1;
        tide_xfer u = {X, xb, xr, 0, 0, xr};
        tide_xfer d = {O, ob, orow, 2, (size_t)(i + 1) * PART, orow};
        p->up[i][0] = u;
        p->down[i][0] = d;
        p->nup[i] = p->ndown[i] = 1;
    }
}

/* One chained run on pl with part 0 = S and the other parts poisoned first; 1 when O and the
 * resident buffer equal the CPU shift register `want` (NCH + 1 parts). */
static int chain_run(const char *what, tide_pipeline *pl, plan *p, int ordered,
                     tide_pageable_mode mode,
                     const unsigned char *want, unsigned char *O, int report)
{
    void *R = tide_pipeline_resident(pl, 0);
    char why[512];
    memset(O, POISON, (size_t)NCH * PART);
    if (cudaMemset((char *)R + PART, POISON, (size_t)NCH * PART) != cudaSuccess ||
        !dev_put(R, want, PART)) {
        CHECK(0, "%s: seeding the resident buffer", what);
        return 0;
    }
    tide_pipeline_job job = make_job(p, 8, 1, mode, 0);
    job.work = chain_work;
    job.ordered = ordered;
    int st = tide_pipeline_run(pl, &job, why, sizeof why);
    if (report)
        CHECK(st == 0, "%s: run: %d %s", what, st, why);
    return st == 0 && memcmp(O, want + PART, (size_t)NCH * PART) == 0 &&
           dev_equals(R, want, (size_t)(NCH + 1) * PART);
}

static void test_ordered(void)
{
    static const int slots[3] = {1, 3, 4};
    const size_t bufs[2] = {SHIFT, 2 * (size_t)NCH * BUSY}, res = (size_t)(NCH + 1) * PART;
    plan *p = malloc(sizeof *p);
    unsigned char *want = malloc(res);
    fill_random(want, PART); /* the seed, part 0 */
    for (int m = 0; m < 2; m++) { /* pinned, pageable staged */
        arrays as = {0};
        unsigned char *X = arr_new(&as, (size_t)NCH * SHIFT, kinds[m].in_kind, 1);
        unsigned char *O = arr_new(&as, (size_t)NCH * PART, kinds[m].out_kind, 0);
        for (int i = 0; i < NCH; i++) { /* the CPU oracle */
            unsigned char *to = want + (size_t)(i + 1) * PART;
            memcpy(to, want + (size_t)i * PART + SHIFT, PART - SHIFT);
            memcpy(to + PART - SHIFT, X + (size_t)i * SHIFT, SHIFT);
        }
        chain_plan(p, X, O);
        for (int s = 0; s < 3; s++) {
            char what[160];
            snprintf(what, sizeof what, "j) ordered chain, %s, %d slots", kinds[m].name,
                     slots[s]);
            tide_pipeline_config c = {slots[s], 2, bufs, 1, &res, PART};
            tide_pipeline *pl = NULL;
            char why[512] = "";
            int st = tide_pipeline_create_config(&c, &pl, why, sizeof why);
            CHECK(st == 0, "%s: create: %d %s", what, st, why);
            if (st)
                continue;
            for (int rep = 0; rep < 3; rep++)
                CHECK(chain_run(what, pl, p, 1, kinds[m].mode, want, O, 1),
                      "%s: run %d: the chain differs from the CPU shift register", what, rep);
            if (slots[s] > 1) { /* for information: how sensitive the job is */
                int right = 0;
                for (int rep = 0; rep < 5; rep++)
                    right += chain_run(what, pl, p, 0, kinds[m].mode, want, O, 0);
                printf("info: %s: unordered, the chain came out right in %d of 5 runs\n", what,
                       right);
            }
            tide_pipeline_destroy(pl);
        }
        arr_free(&as);
    }
    free(want);
    free(p);
}

/* ---- k) host callbacks ----------------------------------------------------------------------- */

typedef struct {
    plan p;                        /* first: describe and work see a plan */
    const unsigned char *ref;      /* what the input must hold */
    unsigned char *in, *out;
    size_t off[MAXC], bytes[MAXC]; /* chunk i's byte range in ref, in and out */
    int produce;                   /* before_upload writes chunk i's input (else checks it) */
    int log[2 * MAXC], nlog;       /* +(i+1): before_upload(i); -(i+1): after_download(i) */
    int in_ok[MAXC];               /* before_upload(i) found the input already there */
    int out_ok[MAXC];              /* after_download(i) found chunk i's output right */
    int fail_before, fail_after, fail_code; /* a callback failing at a chunk (-1: never) */
    pthread_t main;                /* the test's thread */
    int on_main, off_main;         /* callbacks called on it and on other threads */
    int device, wrong_device;      /* the pipeline's device; callbacks that found another */
    atomic_int *gate;              /* before_upload(0) waits (at most 5 s) until it is 1 */
    int gate_seen;
    int befores;                   /* before_upload calls */
    unsigned char *snap;           /* pinned; uploaded(i) copies slot buffer 0's chunk here */
    int uploads, uploaded_bad;     /* uploaded calls; those out of order or on another device */
    int ended, ended_status, ended_on_main; /* ended calls, the last one's status, on main */
} cbjob;

enum { FLIP = 0x5a }; /* after_download xors chunk i's output with this */

static void cb_note(cbjob *c, int entry)
{
    if (c->nlog < 2 * MAXC)
        c->log[c->nlog] = entry;
    c->nlog++;
    if (pthread_equal(pthread_self(), c->main))
        c->on_main++;
    else
        c->off_main++;
    int d = -1;
    if (cudaGetDevice(&d) != cudaSuccess || d != c->device)
        c->wrong_device++;
}

static int cb_before(void *user, int i)
{
    cbjob *c = user;
    cb_note(c, i + 1);
    c->befores++;
    if (i == 0 && c->gate) {
        double t0 = now();
        while (!atomic_load(c->gate) && now() - t0 < 5)
            ;
        c->gate_seen = atomic_load(c->gate);
    }
    if (i == c->fail_before)
        return c->fail_code;
    if (c->produce)
        memcpy(c->in + c->off[i], c->ref + c->off[i], c->bytes[i]);
    else
        c->in_ok[i] = memcmp(c->in + c->off[i], c->ref + c->off[i], c->bytes[i]) == 0;
    return 0;
}

static int cb_after(void *user, int i)
{
    cbjob *c = user;
    cb_note(c, -(i + 1));
    unsigned char *o = c->out + c->off[i];
    c->out_ok[i] = memcmp(o, c->ref + c->off[i], c->bytes[i]) == 0;
    for (size_t k = 0; k < c->bytes[i]; k++)
        o[k] ^= FLIP;
    return i == c->fail_after ? c->fail_code : 0;
}

/* After chunk i's uploads on its stream: slot buffer 0 holds the chunk (build_roundtrip puts
 * it there densely); copy it out behind them. */
static int cb_uploaded(void *user, int i, void *const *buf, void *stream)
{
    cbjob *c = user;
    int d = -1;
    if (i != c->uploads++ || c->befores != i + 1 || cudaGetDevice(&d) != cudaSuccess ||
        d != c->device)
        c->uploaded_bad++;
    if (c->snap && cudaMemcpyAsync(c->snap + c->off[i], buf[0], c->bytes[i],
                                   cudaMemcpyDeviceToHost, (cudaStream_t)stream) != cudaSuccess)
        return TIDE_ERR_BACKEND;
    return 0;
}

static void cb_ended(void *user, int status)
{
    cbjob *c = user;
    c->ended++;
    c->ended_status = status;
    c->ended_on_main += pthread_equal(pthread_self(), c->main) != 0;
}

/* A round trip of in to out in nchunks chunks with every callback (uploaded copying into snap
 * when given); the input starts poisoned when before_upload produces it. */
static tide_pipeline_job cb_setup(cbjob *c, const unsigned char *ref, unsigned char *in,
                                  unsigned char *out, const tide_box *box, int nchunks,
                                  tide_pageable_mode mode, int produce, unsigned char *snap)
{
    const size_t n = nbytes(box, 8, 1);
    memset(c, 0, sizeof *c);
    c->snap = snap;
    if (snap)
        memset(snap, POISON, n);
    build_roundtrip(&c->p, in, out, box, nchunks);
    chunk_ranges(&c->p, box, 8, c->off, c->bytes);
    c->ref = ref;
    c->in = in;
    c->out = out;
    c->produce = produce;
    c->fail_before = c->fail_after = -1;
    c->main = pthread_self();
    cudaGetDevice(&c->device);
    if (produce)
        memset(in, POISON, n);
    memset(out, POISON, n);
    tide_pipeline_job job = make_job(&c->p, 8, 1, mode, 0);
    job.user = c;
    job.before_upload = cb_before;
    job.after_download = cb_after;
    job.uploaded = cb_uploaded;
    job.ended = cb_ended;
    return job;
}

/* Every callback once, in chunk order, after_download(i) after before_upload(i) and, at the
 * latest, before before_upload(i + nslots + 1); every output seen right, then flipped. */
static int cb_ok(const char *what, const cbjob *c, int nchunks, int nslots, size_t n)
{
    int nb = 0, na = 0, ok = c->nlog == 2 * nchunks;
    for (int k = 0; ok && k < c->nlog; k++) {
        const int e = c->log[k];
        if (e > 0)
            ok = e - 1 == nb++ && na >= e - 1 - nslots;
        else
            ok = -e - 1 == na++ && na <= nb;
    }
    CHECK(ok && nb == nchunks && na == nchunks,
          "%s: callbacks out of order, missing or late (%d logged)", what, c->nlog);
    int right = 1, flipped = 1;
    for (int i = 0; i < nchunks; i++) {
        right &= c->out_ok[i];
        right &= c->produce || c->in_ok[i];
    }
    for (size_t k = 0; k < n; k++)
        flipped &= c->out[k] == (unsigned char)(c->ref[k] ^ FLIP) && c->in[k] == c->ref[k];
    CHECK(right, "%s: a callback found its chunk's data wrong", what);
    CHECK(flipped, "%s: final output is not the flipped input", what);
    return ok && right && flipped;
}

static void test_callbacks(void)
{
    static const int slots[2] = {1, 3};
    const tide_box box = mkbox(0, 37, 0, 11, 0, 13, C_ORDER);
    const size_t n = nbytes(&box, 8, 1);
    unsigned char *ref = malloc(n);
    fill_random(ref, n);
    cbjob *c = malloc(sizeof *c);
    unsigned char *snap = NULL;
    char why[512];
    CHECK(cudaMallocHost((void **)&snap, n) == cudaSuccess, "k) cudaMallocHost");
    for (int m = 0; m < NKINDS && snap; m++)
        for (int s = 0; s < 2; s++) {
            char what[160];
            snprintf(what, sizeof what, "k) callbacks, %s, %d slots", kinds[m].name, slots[s]);
            arrays as = {0};
            unsigned char *in = arr_new(&as, n, kinds[m].in_kind, 0);
            unsigned char *out = arr_new(&as, n, kinds[m].out_kind, 0);
            tide_pipeline *pl = NULL;
            int st = tide_pipeline_create(n, 1, slots[s], 0, &pl, why, sizeof why);
            CHECK(st == 0, "%s: create: %d %s", what, st, why);
            if (st) {
                arr_free(&as);
                continue;
            }
            tide_pipeline_job job = cb_setup(c, ref, in, out, &box, 8, kinds[m].mode, 1, snap);
            st = tide_pipeline_run(pl, &job, why, sizeof why);
            CHECK(st == 0, "%s: run: %d %s", what, st, why);
            if (!st)
                cb_ok(what, c, 8, slots[s], n);
            CHECK(c->uploads == 8 && !c->uploaded_bad && !memcmp(snap, ref, n),
                  "%s: uploaded: %d calls, %d out of order or on another device, its copies "
                  "%s the input", what, c->uploads, c->uploaded_bad,
                  memcmp(snap, ref, n) ? "differ from" : "equal");
            CHECK(c->ended == 0, "%s: tide_pipeline_run called ended", what);
            CHECK(c->off_main == 0 && c->wrong_device == 0,
                  "%s: tide_pipeline_run called %d callbacks off the calling thread, %d on "
                  "another device", what, c->off_main, c->wrong_device);

            /* A failing callback: its code comes back, no callback after it. */
            job = cb_setup(c, ref, in, out, &box, 8, kinds[m].mode, 1, NULL);
            c->fail_before = 3;
            c->fail_code = TIDE_ERR_MISMATCH;
            st = tide_pipeline_run(pl, &job, why, sizeof why);
            CHECK(st == TIDE_ERR_MISMATCH && c->nlog > 0 && c->log[c->nlog - 1] == 4 &&
                      c->uploads == 3,
                  "%s: before_upload failing at chunk 3: status %d, last callback %d, %d "
                  "uploaded calls", what, st, c->nlog ? c->log[c->nlog - 1] : 0, c->uploads);
            job = cb_setup(c, ref, in, out, &box, 8, kinds[m].mode, 1, NULL);
            c->fail_after = 2;
            c->fail_code = TIDE_ERR_BACKEND;
            st = tide_pipeline_run(pl, &job, why, sizeof why);
            CHECK(st == TIDE_ERR_BACKEND && c->nlog > 0 && c->log[c->nlog - 1] == -3,
                  "%s: after_download failing at chunk 2: status %d, last callback %d", what,
                  st, c->nlog ? c->log[c->nlog - 1] : 0);
            tide_pipeline_destroy(pl);
            arr_free(&as);
        }
    cudaFreeHost(snap);
    free(c);
    free(ref);
}

/* ---- l) start and wait ----------------------------------------------------------------------- */

/* Two pipelines (on devices 0 and 1 where there are two GPUs) started back to back from this
 * thread, then waited for; the first run's before_upload(0) holds until both starts have
 * returned, so a start that ran the job itself would be seen. */
static void test_start_wait(int ngpus)
{
    const tide_box box = mkbox(0, 37, 0, 11, 0, 13, C_ORDER);
    const size_t n = nbytes(&box, 8, 1);
    unsigned char *ref = malloc(n);
    fill_random(ref, n);
    cbjob *c[2] = {malloc(sizeof(cbjob)), malloc(sizeof(cbjob))};
    tide_pipeline *pl[2] = {NULL, NULL};
    arrays as = {0};
    unsigned char *in[2], *out[2];
    char why[512] = "";
    atomic_int gate;
    atomic_init(&gate, 0);
    int ok = 1;
    for (int k = 0; k < 2; k++) {
        in[k] = arr_new(&as, n, k ? PAGEABLE : PINNED, 0);
        out[k] = arr_new(&as, n, k ? PAGEABLE : PINNED, 0);
        ok &= cudaSetDevice(ngpus > 1 ? k : 0) == cudaSuccess &&
              tide_pipeline_create(n, 1, 3, 0, &pl[k], why, sizeof why) == 0;
        cudaSetDevice(0);
    }
    CHECK(ok, "l) creating two pipelines: %s", why);
    tide_pipeline_job job[2];
    for (int k = 0; k < 2 && ok; k++) {
        job[k] = cb_setup(c[k], ref, in[k], out[k], &box, 8, TIDE_PAGEABLE_STAGE, 1, NULL);
        c[k]->device = ngpus > 1 ? k : 0;
    }
    if (ok) {
        c[0]->gate = &gate;
        int s0 = tide_pipeline_start(pl[0], &job[0]);
        int s1 = tide_pipeline_start(pl[1], &job[1]);
        atomic_store(&gate, 1);
        CHECK(s0 == 0 && s1 == 0, "l) start: %d, %d", s0, s1);
        CHECK(tide_pipeline_start(pl[0], &job[0]) == TIDE_ERR_ARGUMENT,
              "l) a second start before wait was accepted");
        CHECK(tide_pipeline_run(pl[1], &job[1], why, sizeof why) == TIDE_ERR_ARGUMENT,
              "l) a run while a started one is in flight was accepted");
        for (int k = 0; k < 2; k++) {
            char what[64];
            snprintf(what, sizeof what, "l) started run %d (device %d)", k, c[k]->device);
            int st = tide_pipeline_wait(pl[k], why, sizeof why);
            CHECK(st == 0, "%s: wait: %d %s", what, st, why);
            if (!st)
                cb_ok(what, c[k], 8, 3, n);
            CHECK(c[k]->on_main == 0 && c[k]->wrong_device == 0,
                  "%s: %d callbacks on the starting thread, %d on the wrong device", what,
                  c[k]->on_main, c[k]->wrong_device);
            CHECK(c[k]->ended == 1 && c[k]->ended_status == 0 && c[k]->ended_on_main == 0 &&
                      c[k]->uploads == 8 && c[k]->uploaded_bad == 0,
                  "%s: ended called %d times (status %d, %d on the starting thread), uploaded "
                  "%d times (%d out of order or on another device)", what, c[k]->ended,
                  c[k]->ended_status, c[k]->ended_on_main, c[k]->uploads, c[k]->uploaded_bad);
        }
        CHECK(c[0]->gate_seen, "l) start returned only after the run had ended");
        CHECK(tide_pipeline_wait(pl[0], why, sizeof why) == TIDE_ERR_ARGUMENT,
              "l) a second wait was accepted");

        /* A bad job: start accepts it (and says so to ended), wait reports it. */
        job[0].elem = 0;
        c[0]->ended = 0;
        int st = tide_pipeline_start(pl[0], &job[0]);
        why[0] = '\0';
        int sw = tide_pipeline_wait(pl[0], why, sizeof why);
        CHECK(st == 0 && sw == TIDE_ERR_ARGUMENT && why[0], "l) bad job: start %d, wait %d '%s'",
              st, sw, why);
        CHECK(c[0]->ended == 1 && c[0]->ended_status == TIDE_ERR_ARGUMENT,
              "l) bad job: ended called %d times, status %d", c[0]->ended, c[0]->ended_status);

        /* A started run whose callback fails: ended has its code before wait returns. */
        job[0] = cb_setup(c[0], ref, in[0], out[0], &box, 8, TIDE_PAGEABLE_STAGE, 1, NULL);
        c[0]->device = 0;
        c[0]->fail_before = 3;
        c[0]->fail_code = TIDE_ERR_MISMATCH;
        st = tide_pipeline_start(pl[0], &job[0]);
        sw = tide_pipeline_wait(pl[0], why, sizeof why);
        CHECK(st == 0 && sw == TIDE_ERR_MISMATCH && c[0]->ended == 1 &&
                  c[0]->ended_status == TIDE_ERR_MISMATCH,
              "l) failing started run: start %d, wait %d, ended called %d times with %d", st,
              sw, c[0]->ended, c[0]->ended_status);
        CHECK(tide_pipeline_start(NULL, &job[0]) == TIDE_ERR_ARGUMENT &&
                  tide_pipeline_start(pl[0], NULL) == TIDE_ERR_ARGUMENT,
              "l) start with NULL arguments");

        /* Destroy while a run is in flight: it waits for the run first. */
        job[1] = cb_setup(c[1], ref, in[1], out[1], &box, 8, TIDE_PAGEABLE_STAGE, 1, NULL);
        c[1]->device = ngpus > 1 ? 1 : 0;
        st = tide_pipeline_start(pl[1], &job[1]);
        tide_pipeline_destroy(pl[1]);
        pl[1] = NULL;
        CHECK(st == 0, "l) start before destroy: %d", st);
        if (!st)
            cb_ok("l) destroyed while running", c[1], 8, 3, n);
    }
    for (int k = 0; k < 2; k++) {
        tide_pipeline_destroy(pl[k]);
        free(c[k]);
    }
    arr_free(&as);
    free(ref);
}

/* ---- m) after the caller's stream ------------------------------------------------------------ */

typedef struct {
    unsigned char *dst;
    const unsigned char *src;
    size_t n;
} delayed;

static void sleep_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* Host functions on a stream: sleep 50 ms; sleep 50 ms, then copy. */
static void CUDART_CB sleep_50(void *arg)
{
    (void)arg;
    sleep_ms(50);
}

static void CUDART_CB sleep_then_copy(void *arg)
{
    delayed *d = arg;
    sleep_ms(50);
    memcpy(d->dst, d->src, d->n);
}

/* The input of a round trip is written on the caller's stream behind a 50 ms sleep; the run,
 * with after_caller, must see it: (A) pinned, written by cudaMemcpyAsync from device memory on
 * the legacy default stream, started; (B) pageable and staged, written by a host function on a
 * stream of the caller's, run, with a before_upload that checks the input is already there. */
static void test_after_caller(void)
{
    const tide_box box = mkbox(0, 37, 0, 11, 0, 13, C_ORDER);
    const size_t n = nbytes(&box, 8, 1);
    unsigned char *ref = malloc(n), *D = NULL;
    fill_random(ref, n);
    arrays as = {0};
    unsigned char *Ah = arr_new(&as, n, PINNED, 0), *Bh = arr_new(&as, n, PINNED, 0);
    unsigned char *Ap = arr_new(&as, n, PAGEABLE, 0), *Bp = arr_new(&as, n, PAGEABLE, 0);
    cbjob *c = malloc(sizeof *c);
    tide_pipeline *pl = NULL;
    cudaStream_t cs = NULL;
    char why[512] = "";
    int ok = cudaMalloc((void **)&D, n) == cudaSuccess && dev_put(D, ref, n) &&
             cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking) == cudaSuccess &&
             tide_pipeline_create(n, 1, 3, 0, &pl, why, sizeof why) == 0;
    CHECK(ok, "m) setup: %s", why);
    if (ok) {
        plan *p = &c->p;
        build_roundtrip(p, Ah, Bh, &box, 5);
        tide_pipeline_job job = make_job(p, 8, 1, TIDE_PAGEABLE_STAGE, 0);
        job.after_caller = 1;
        job.caller_stream = NULL;
        int st = cudaLaunchHostFunc(cudaStreamLegacy, sleep_50, NULL) == cudaSuccess &&
                         cudaMemcpyAsync(Ah, D, n, cudaMemcpyDeviceToHost, cudaStreamLegacy) ==
                             cudaSuccess
                     ? tide_pipeline_start(pl, &job)
                     : -1;
        int sw = st ? st : tide_pipeline_wait(pl, why, sizeof why);
        CHECK(sw == 0 && memcmp(Bh, ref, n) == 0,
              "m) pinned input written on the legacy stream: %d %s", sw,
              sw ? why : "the run read the input before the caller's stream wrote it");

        delayed d = {Ap, ref, n};
        job = cb_setup(c, ref, Ap, Bp, &box, 5, TIDE_PAGEABLE_STAGE, 0, NULL);
        job.after_caller = 1;
        job.caller_stream = cs;
        st = cudaLaunchHostFunc(cs, sleep_then_copy, &d) == cudaSuccess
                 ? tide_pipeline_run(pl, &job, why, sizeof why)
                 : -1;
        CHECK(st == 0, "m) pageable input written on a caller's stream: %d %s", st, why);
        if (!st)
            cb_ok("m) pageable input written on a caller's stream", c, 5, 3, n);
    }
    cudaDeviceSynchronize();
    tide_pipeline_destroy(pl);
    if (cs)
        cudaStreamDestroy(cs);
    cudaFree(D);
    cudaGetLastError();
    free(c);
    arr_free(&as);
    free(ref);
}

/* ---- timings, for information -------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median wall time of reps runs (after one warm-up when warm), each checked (B poisoned
 * before it, compared with A after it, both untimed). */
static double time_roundtrip(tide_pipeline *pl, unsigned char *A, unsigned char *B, size_t n,
                             const tide_box *box, int nchunks, tide_pageable_mode mode, int reps,
                             int warm, tide_pipeline_stats *stats)
{
    plan *p = malloc(sizeof *p);
    build_roundtrip(p, A, B, box, nchunks);
    tide_pipeline_job job = make_job(p, 16, 1, mode, 0);
    double t[8];
    char why[512];
    int ok = 1;
    for (int r = -warm; r < reps && ok; r++) {
        memset(B, POISON, n);
        double t0 = now();
        int st = tide_pipeline_run(pl, &job, why, sizeof why);
        double t1 = now();
        if (st || memcmp(A, B, n)) {
            CHECK(0, "timed run %d: %s", r, st ? why : "wrong result");
            ok = 0;
        } else if (r >= 0) {
            t[r] = t1 - t0;
        }
    }
    free(p);
    if (!ok)
        return 0;
    tide_pipeline_last_stats(pl, stats);
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    return t[reps / 2];
}

static void timings(void)
{
    char why[512];
    tide_rates rates;
    memset(&rates, 0, sizeof rates);
    if (tide_gpu_measure((size_t)256 << 20, NULL, NULL, &rates, why, sizeof why)) {
        printf("info: tide_gpu_measure failed: %s\n", why);
    } else {
        printf("info: measured PCIe (256 MiB copies): h2d %.1f GB/s, d2h %.1f GB/s, both "
               "directions at once %.1f GB/s\n", rates.h2d, rates.d2h, rates.both);
    }
    /* 1 GiB pinned, 8 chunks of 128 MiB, 3 slots, no work. */
    tide_box box = mkbox(0, 8, 0, 1024, 0, 8192, C_ORDER);
    size_t n = nbytes(&box, 16, 1), chunk = n / 8;
    unsigned char *A = NULL, *B = NULL;
    tide_pipeline *pl = NULL;
    if (cudaHostAlloc((void **)&A, n, cudaHostAllocDefault) != cudaSuccess ||
        cudaHostAlloc((void **)&B, n, cudaHostAllocDefault) != cudaSuccess) {
        printf("info: cannot allocate 2 GiB pinned: no pinned timing\n");
        cudaGetLastError();
    } else if (tide_pipeline_create(chunk, 1, 3, 0, &pl, why, sizeof why)) {
        printf("info: cannot create a 3 x 128 MiB pipeline (%s): no pinned timing\n", why);
    } else {
        fill_random(A, n);
        tide_pipeline_stats s;
        double t = time_roundtrip(pl, A, B, n, &box, 8, TIDE_PAGEABLE_STAGE, 3, 1, &s);
        if (t > 0)
            printf("info: 1 GiB pinned round trip, 8 chunks, 3 slots: %.1f ms, %.1f GB/s up+down "
                   "(tide_gpu_measure both: %.1f GB/s); phases summed over chunks: up %.1f ms, "
                   "down %.1f ms\n", t * 1e3, 2.0 * n / t / 1e9, rates.both, s.upload * 1e3,
                   s.download * 1e3);
    }
    tide_pipeline_destroy(pl);
    pl = NULL;
    cudaFreeHost(A);
    cudaFreeHost(B);
    cudaGetLastError();

    /* 512 MiB pageable, 8 chunks of 64 MiB, 3 slots: staged versus registered. */
    box = mkbox(0, 8, 0, 512, 0, 8192, C_ORDER);
    n = nbytes(&box, 16, 1);
    chunk = n / 8;
    A = malloc(n);
    B = malloc(n);
    if (!A || !B || tide_pipeline_create(chunk, 1, 3, 0, &pl, why, sizeof why)) {
        printf("info: cannot set up the pageable timing\n");
    } else {
        fill_random(A, n);
        tide_pipeline_stats s1, s2;
        double ts = time_roundtrip(pl, A, B, n, &box, 8, TIDE_PAGEABLE_STAGE, 3, 1, &s1);
        double tr = time_roundtrip(pl, A, B, n, &box, 8, TIDE_PAGEABLE_REGISTER, 3, 0, &s2);
        /* What registering and unregistering both arrays costs by itself. */
        double t0 = now();
        int reg = cudaHostRegister(A, n, cudaHostRegisterDefault) == cudaSuccess &&
                  cudaHostRegister(B, n, cudaHostRegisterDefault) == cudaSuccess;
        double t1 = now();
        cudaHostUnregister(A);
        cudaHostUnregister(B);
        double t2 = now();
        cudaGetLastError();
        if (ts > 0 && tr > 0)
            printf("info: 512 MiB pageable round trip, 8 chunks, 3 slots, %d CPU threads: "
                   "staged %.1f ms (%.1f GB/s up+down, %.0f MiB pinned staging), registered "
                   "%.1f ms (%.1f GB/s, registration included; registering both arrays alone "
                   "%s %.1f ms, unregistering %.1f ms)\n", omp_get_max_threads(), ts * 1e3,
                   2.0 * n / ts / 1e9, tide_pipeline_pinned_bytes(pl) / 1048576.0, tr * 1e3,
                   2.0 * n / tr / 1e9, reg ? "takes" : "FAILED after", (t1 - t0) * 1e3,
                   (t2 - t1) * 1e3);
    }
    tide_pipeline_destroy(pl);
    free(A);
    free(B);
}

/* Argument far-rows: h) alone, which needs 8 GiB of device memory (SKIP without). */
int main(int argc, char **argv)
{
    int far_rows = argc == 2 && !strcmp(argv[1], "far-rows");
    if (argc > 1 && !far_rows) {
        printf("FAIL: usage: test_pipeline [far-rows]\n");
        return 1;
    }
    int n = tt_gpus_or_skip();
    if (n == 0)
        return 77;
    if (far_rows)
        return test_far_rows() ? tt_finish_local(&tally, "test_pipeline far-rows", "checks")
                               : 77;
    double t0 = now();
    test_roundtrip();
    test_middle();
    test_multi();
    test_errors();
    printf("info: checks a) to g) took %.2f s\n", now() - t0);
    t0 = now();
    test_resident();
    test_ordered();
    test_callbacks();
    test_start_wait(n);
    test_after_caller();
    printf("info: checks i) to m) took %.2f s\n", now() - t0);
    timings();
    return tt_finish_local(&tally, "test_pipeline", "checks");
}
#endif
