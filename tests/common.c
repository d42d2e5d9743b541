/*
 * common.c: helpers shared by the tests. See common.h.
 */
#include "common.h"
#include "tide_config.h"
#if TIDE_HAVE_CUDA
#include "backend/device.h"
#endif

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- RNG ------------------------------------------------------------------------------------ */

void tt_rng_seed(tt_rng *rng, uint64_t seed) { rng->state = seed; }

uint64_t tt_rng_next(tt_rng *rng)
{
    /* splitmix64: tiny, full period, good enough to pick test cases. */
    uint64_t z = (rng->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int tt_rng_below(tt_rng *rng, int n)
{
    /* The modulo bias is irrelevant for test-case selection with n far below 2^64. */
    return n <= 1 ? 0 : (int)(tt_rng_next(rng) % (uint64_t)n);
}

/* ---- orders --------------------------------------------------------------------------------- */

static const int tt_perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                   {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
static const char *const tt_perm_names[6] = {"012", "021", "102", "120", "201", "210"};

void tt_perm3(int k, int order[3])
{
    for (int i = 0; i < 3; i++)
        order[i] = tt_perms[k][i];
}

const char *tt_order_name(const int order[3])
{
    for (int k = 0; k < 6; k++)
        if (order[0] == tt_perms[k][0] && order[1] == tt_perms[k][1] && order[2] == tt_perms[k][2])
            return tt_perm_names[k];
    return "???";
}

/* ---- geometry ------------------------------------------------------------------------------- */

long long tt_box_count(const tide_box *b)
{
    long long c = 1;
    for (int d = 0; d < 3; d++) {
        if (b->hi[d] <= b->lo[d])
            return 0;
        c *= (long long)(b->hi[d] - b->lo[d]);
    }
    return c;
}

int tt_inside(const tide_box *b, const int p[3])
{
    for (int d = 0; d < 3; d++)
        if (p[d] < b->lo[d] || p[d] >= b->hi[d])
            return 0;
    return 1;
}

long long tt_offset(const tide_box *b, const int p[3])
{
    /* Horner over the dimensions from slowest to fastest: the definition of the layout. */
    long long off = 0;
    for (int i = 0; i < 3; i++) {
        int d = b->order[i];
        off = off * (long long)(b->hi[d] - b->lo[d]) + (long long)(p[d] - b->lo[d]);
    }
    return off;
}

tide_box tt_box(int lo0, int lo1, int lo2, int hi0, int hi1, int hi2, const int *order)
{
    tide_box b = {{lo0, lo1, lo2}, {hi0, hi1, hi2}, {0, 1, 2}};
    if (order)
        for (int i = 0; i < 3; i++)
            b.order[i] = order[i];
    return b;
}

const char *tt_box_str(const tide_box *b, char *buf, int len)
{
    snprintf(buf, (size_t)len, "[%d,%d)x[%d,%d)x[%d,%d) o%d%d%d", b->lo[0], b->hi[0], b->lo[1],
             b->hi[1], b->lo[2], b->hi[2], b->order[0], b->order[1], b->order[2]);
    return buf;
}

/* ---- tilings -------------------------------------------------------------------------------- */

static tide_box tt_whole(const int n[3]) { return tt_box(0, 0, 0, n[0], n[1], n[2], NULL); }

void tt_tiling_slabs(const int n[3], int dim, int nranks, tide_box *boxes)
{
    for (int r = 0; r < nranks; r++) {
        boxes[r] = tt_whole(n);
        boxes[r].lo[dim] = (int)((long long)r * n[dim] / nranks);
        boxes[r].hi[dim] = (int)((long long)(r + 1) * n[dim] / nranks);
    }
}

void tt_tiling_pencils(const int n[3], int whole_dim, int nranks, tide_box *boxes)
{
    int p1 = 1;
    for (int q = 1; q * q <= nranks; q++)
        if (nranks % q == 0)
            p1 = q;
    int p2 = nranks / p1;
    int d1 = whole_dim == 0 ? 1 : 0;
    int d2 = whole_dim == 2 ? 1 : 2;
    for (int r = 0; r < nranks; r++) {
        int i1 = r / p2, i2 = r % p2;
        boxes[r] = tt_whole(n);
        boxes[r].lo[d1] = (int)((long long)i1 * n[d1] / p1);
        boxes[r].hi[d1] = (int)((long long)(i1 + 1) * n[d1] / p1);
        boxes[r].lo[d2] = (int)((long long)i2 * n[d2] / p2);
        boxes[r].hi[d2] = (int)((long long)(i2 + 1) * n[d2] / p2);
    }
}

/* Split `box` into `count` boxes written to out[0..count). */
static void tt_bisect(tide_box box, int count, tt_rng *rng, tide_box *out)
{
    if (count == 1) {
        out[0] = box;
        return;
    }
    int left = 1 + tt_rng_below(rng, count - 1);
    /* Prefer a dimension that can actually be cut; fall back to any (giving an empty side). */
    int d = tt_rng_below(rng, 3);
    for (int t = 0; t < 3 && box.hi[d] - box.lo[d] < 2; t++)
        d = (d + 1) % 3;
    int ext = box.hi[d] - box.lo[d];
    int cut;
    if (tt_rng_below(rng, 8) == 0) {
        cut = box.lo[d] + tt_rng_below(rng, ext + 1); /* anywhere, edges included: empties */
    } else {
        /* Roughly proportional to the ranks on each side, with jitter, so boxes stay mostly
         * non-empty and of uneven size. */
        int jitter = ext / 4;
        cut = box.lo[d] + (int)((long long)ext * left / count) - jitter +
              tt_rng_below(rng, 2 * jitter + 1);
        if (cut < box.lo[d])
            cut = box.lo[d];
        if (cut > box.hi[d])
            cut = box.hi[d];
    }
    tide_box a = box, b = box;
    a.hi[d] = cut;
    b.lo[d] = cut;
    tt_bisect(a, left, rng, out);
    tt_bisect(b, count - left, rng, out + left);
}

void tt_tiling_random(const int n[3], int nranks, tt_rng *rng, tide_box *boxes)
{
    tt_bisect(tt_whole(n), nranks, rng, boxes);
    /* Fisher-Yates shuffle of the rank assignment. */
    for (int i = nranks - 1; i > 0; i--) {
        int j = tt_rng_below(rng, i + 1);
        tide_box t = boxes[i];
        boxes[i] = boxes[j];
        boxes[j] = t;
    }
}

/* ---- random orders, tiling check, agreement and tallies (used by test_fft and test_errors) -- */

void tt_random_orders(int nboxes, tt_rng *rng, tide_box *boxes)
{
    for (int r = 0; r < nboxes; r++)
        tt_perm3(tt_rng_below(rng, 6), boxes[r].order);
}

int tt_boxes_tile(const int n[3], int nboxes, const tide_box *boxes)
{
    long long total = 0;
    for (int r = 0; r < nboxes; r++) {
        const tide_box *b = &boxes[r];
        int seen[3] = {0, 0, 0};
        for (int i = 0; i < 3; i++) {
            if (b->order[i] < 0 || b->order[i] > 2 || seen[b->order[i]]++)
                return 0;
            if (b->lo[i] < 0 || b->hi[i] > n[i] || b->hi[i] < b->lo[i])
                return 0;
        }
        total += tt_box_count(b);
    }
    if (total != (long long)n[0] * n[1] * n[2])
        return 0;
    /* Disjoint boxes whose counts add up to the grid's cover it, so overlap is enough. */
    for (int a = 0; a < nboxes; a++)
        for (int c = a + 1; c < nboxes; c++) {
            int overlap = tt_box_count(&boxes[a]) > 0 && tt_box_count(&boxes[c]) > 0;
            for (int d = 0; d < 3 && overlap; d++)
                overlap = boxes[a].lo[d] < boxes[c].hi[d] && boxes[c].lo[d] < boxes[a].hi[d];
            if (overlap)
                return 0;
        }
    return 1;
}

int tt_exchange_env(void)
{
    static const char *const names[] = {"nccl", "cuda-mpi", "p2p", "direct"};
    static const int values[] = {TIDE_EXCHANGE_NCCL, TIDE_EXCHANGE_CUDA_MPI, TIDE_EXCHANGE_P2P,
                                 TIDE_EXCHANGE_DIRECT};
    const char *v = getenv("TIDE_TEST_EXCHANGE");
    if (!v || !*v)
        return -1;
    for (int i = 0; i < 4; i++)
        if (!strcmp(v, names[i]))
            return values[i];
    return -2;
}

int tt_cuda_aware(MPI_Comm comm, tide_context *ctx)
{
    tide_device_info di;
    return tt_all(comm, ctx && tide_context_device(ctx, &di) == 0 && di.cuda_aware_mpi);
}

int tt_stop_early(MPI_Comm comm, tide_context *ctx, int code, const char *fmt, ...)
{
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) {
        va_list ap;
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        fflush(stdout);
    }
    tide_context_destroy(ctx);
    MPI_Finalize();
    return code;
}

int tt_all(MPI_Comm comm, int ok)
{
    int in = ok != 0, out = 0;
    MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LAND, comm);
    return out;
}

void tt_vfail(const char *fmt, va_list ap)
{
    printf("FAIL: ");
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
}

int tt_local(tt_tally *t, int ok, const char *fmt, ...)
{
    t->checks++;
    if (!ok) {
        t->failed++;
        va_list ap;
        va_start(ap, fmt);
        tt_vfail(fmt, ap);
        va_end(ap);
    }
    return ok;
}

int tt_check(tt_tally *t, MPI_Comm comm, int ok, const char *fmt, ...)
{
    int all = tt_all(comm, ok), rank;
    MPI_Comm_rank(comm, &rank);
    t->checks++;
    if (!all) {
        t->failed++;
        if (rank == 0) {
            va_list ap;
            va_start(ap, fmt);
            tt_vfail(fmt, ap);
            va_end(ap);
        }
    }
    return all;
}

/* The verdict on counts every rank agrees on, printed by rank 0. */
static int tt_verdict(int rank, const char *name, int checks, int any_checks, const char *noun,
                      int failed)
{
    if (rank == 0) {
        if (any_checks)
            printf("%s: %d %s, %d failed\n", name, checks, noun, failed);
        else
            printf("FAIL: %s: no %s ran, so nothing was tested\n", name, noun);
        fflush(stdout);
    }
    return failed || !any_checks ? EXIT_FAILURE : EXIT_SUCCESS;
}

int tt_finish(const tt_tally *t, MPI_Comm comm, const char *name, const char *noun)
{
    int rank, mine[2] = {t->failed, t->checks}, most[2] = {0, 0};
    MPI_Comm_rank(comm, &rank);
    /* Ranks count the same checks, but take the max so a miscount cannot make them disagree;
     * a rank may count none of its own (cases shared out among the ranks). */
    MPI_Allreduce(mine, most, 2, MPI_INT, MPI_MAX, comm);
    return tt_verdict(rank, name, t->checks, most[1] > 0, noun, most[0]);
}

int tt_finish_local(const tt_tally *t, const char *name, const char *noun)
{
    return tt_verdict(0, name, t->checks, t->checks > 0, noun, t->failed);
}

double tt_max_nan(double a, double b) { return isnan(a) || a > b ? a : b; }

double tt_allmax_nan(MPI_Comm comm, double x)
{
    double mine[2] = {isnan(x), isnan(x) ? 0 : x}, all[2];
    MPI_Allreduce(mine, all, 2, MPI_DOUBLE, MPI_MAX, comm);
    return all[0] > 0 ? NAN : all[1];
}

int tt_gpus_or_skip(void)
{
#if TIDE_HAVE_CUDA
    char why[256];
    int n = tide_gpu_count(why, sizeof why);
    if (n <= 0)
        printf("SKIP: %s\n", why);
    return n > 0 ? n : 0;
#else
    printf("SKIP: this build has no CUDA (gpu/ not compiled)\n");
    return 0;
#endif
}

#if TIDE_HAVE_CUDA
void CUDART_CB tt_sleep_on_stream(void *ms)
{
    long n = (long)(intptr_t)ms;
    struct timespec t = {n / 1000, n % 1000 * 1000000L};
    nanosleep(&t, NULL);
}

int tt_stencil_run_device(tide_context *ctx, tide_stencil_plan *plan, void *u, size_t bytes,
                          long long steps, cudaStream_t stream, int queued)
{
    void *d = NULL, *stage = NULL;
    if (tide_device_alloc(ctx, bytes ? bytes : 1, &d) != 0) {
        fprintf(stderr, "tt_stencil_run_device: tide_device_alloc: %s\n", tide_last_error(ctx));
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    TT_CU(cudaMemset(d, 0xff, bytes)); /* NaN in float and double */
    TT_CU(cudaDeviceSynchronize());
    if (queued || stream) {
        TT_CU(cudaMalloc(&stage, bytes ? bytes : 1));
        TT_CU(cudaMemcpy(stage, u, bytes, cudaMemcpyHostToDevice));
        TT_CU(cudaLaunchHostFunc(stream, tt_sleep_on_stream, (void *)(intptr_t)5));
        TT_CU(cudaMemcpyAsync(d, stage, bytes, cudaMemcpyDeviceToDevice, stream));
    } else {
        TT_CU(cudaMemcpy(d, u, bytes, cudaMemcpyHostToDevice));
    }
    int st = tide_stencil_run(plan, d, steps);
    if (st != 0 || steps == 0) /* the run need not have waited for the copy */
        TT_CU(cudaStreamSynchronize(stream));
    TT_CU(cudaMemcpy(u, d, bytes, cudaMemcpyDeviceToHost));
    TT_CU(cudaDeviceSynchronize());
    if (stage)
        TT_CU(cudaFree(stage));
    tide_device_free(ctx, d);
    return st;
}
#endif

void tt_expect_error(tt_tally *t, MPI_Comm comm, const char *tag, const char *what, int st,
                     const char *msg, unsigned allowed, int untouched, int same_msg)
{
    enum { LEN = 512 };
    int rank, nranks;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nranks);
    int *sts = malloc((size_t)nranks * sizeof *sts);
    char *msgs = malloc((size_t)nranks * LEN), mine[LEN];
    if (!sts || !msgs) {
        fprintf(stderr, "tt_expect_error: out of memory\n");
        MPI_Abort(comm, 2);
    }
    snprintf(mine, sizeof mine, "%s", msg ? msg : "");
    MPI_Allgather(&st, 1, MPI_INT, sts, 1, MPI_INT, comm);
    MPI_Allgather(mine, LEN, MPI_CHAR, msgs, LEN, MPI_CHAR, comm);
    int same = 1, msg_same = 1, differ = -1;
    char got[128] = "", want[128] = "";
    for (int r = 0; r < nranks; r++) {
        size_t used = strlen(got);
        snprintf(got + used, sizeof got - used, "%s%d", r ? "," : "", sts[r]);
        same = same && sts[r] == sts[0];
        if (msg_same && strcmp(msgs + (size_t)r * LEN, mine) != 0)
            msg_same = 0, differ = r;
    }
    for (int c = 1; c < 32; c++)
        if (allowed & (1u << c)) {
            size_t used = strlen(want);
            snprintf(want + used, sizeof want - used, "%s%s", used ? " or " : "",
                     tide_strerror(c));
        }
    tt_check(t, comm, same && st > 0 && st < 32 && (allowed & (1u << st)),
             "%s) %s: statuses per rank [%s], want %s on every rank (rank 0: \"%s\")", tag, what,
             got, want, msgs);
    tt_check(t, comm, mine[0] && (msg_same || !same_msg),
             "%s) %s: message empty or different between ranks: rank 0 \"%s\", rank %d \"%s\"",
             tag, what, msgs, differ, differ >= 0 ? msgs + (size_t)differ * LEN : "");
    tt_check(t, comm, untouched, "%s) %s: output written although the call failed", tag, what);
    if (rank == 0)
        printf("  %s) %-52s -> %s: %s\n", tag, what, tide_strerror(st), mine);
    free(sts);
    free(msgs);
}

void *tt_xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "out of memory allocating %zu bytes\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

double tt_rnd(tt_rng *rng)
{
    return (double)(tt_rng_next(rng) >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0;
}

void tt_fill_random(void *a, size_t count, int dbl, double scale, tt_rng *rng)
{
    for (size_t i = 0; i < count; i++) {
        double v = tt_rnd(rng) * scale;
        if (dbl)
            ((double *)a)[i] = v;
        else
            ((float *)a)[i] = (float)v;
    }
}

double tt_elem(const void *a, int dbl, size_t i)
{
    return dbl ? ((const double *)a)[i] : (double)((const float *)a)[i];
}

int tt_mentions(const char *msg, const char *words)
{
    for (const char *p = words; msg && *p;) {
        size_t len = strcspn(p, "|");
        for (const char *m = msg; *m; m++) {
            size_t i = 0;
            while (i < len && m[i] &&
                   tolower((unsigned char)m[i]) == tolower((unsigned char)p[i]))
                i++;
            if (i == len)
                return 1;
        }
        p += len + (p[len] == '|');
    }
    return 0;
}

/* Random weights: sum of magnitudes up to 1.5, so values neither vanish nor blow up. */
void tt_stencil_weights(tt_rng *rng, int ntaps, double *w)
{
    for (int t = 0; t < ntaps; t++)
        w[t] = tt_rnd(rng) * 1.5 / ntaps;
}

static int chebyshev(const int o[3])
{
    int r = 0;
    for (int d = 0; d < 3; d++)
        r = abs(o[d]) > r ? abs(o[d]) : r;
    return r;
}

void tt_pick_taps(tt_rng *rng, int (*off)[3], int all, int count, int r)
{
    for (int i = all - 1; i > 0; i--) {
        int j = tt_rng_below(rng, i + 1), t[3];
        memcpy(t, off[i], sizeof t);
        memcpy(off[i], off[j], sizeof t);
        memcpy(off[j], t, sizeof t);
    }
    for (int i = 0; i < count; i++)
        if (chebyshev(off[i]) == r)
            return;
    for (int i = count; i < all; i++)
        if (chebyshev(off[i]) == r) {
            int j = tt_rng_below(rng, count), t[3];
            memcpy(t, off[i], sizeof t);
            memcpy(off[i], off[j], sizeof t);
            memcpy(off[j], t, sizeof t);
            return;
        }
}

/* STAR radius r: a random non-empty subset of the 6 r + 1 axis offsets, random order, one of
 * them at distance r. */
int tt_star_taps(tt_rng *rng, int r, int (*off)[3])
{
    int all = 0;
    off[all][0] = off[all][1] = off[all][2] = 0;
    all++;
    for (int d = 0; d < 3; d++)
        for (int k = -r; k <= r; k++)
            if (k) {
                off[all][0] = off[all][1] = off[all][2] = 0;
                off[all][d] = k;
                all++;
            }
    int count = 1 + tt_rng_below(rng, all);
    tt_pick_taps(rng, off, all, count, r);
    return count;
}

/* BOX radius r: count (0: random up to 40) of the (2 r + 1)^3 offsets, random order, one at
 * distance r. */
int tt_box_taps(tt_rng *rng, int r, int count, int (*off)[3])
{
    int all = 0;
    for (int x = -r; x <= r; x++)
        for (int y = -r; y <= r; y++)
            for (int z = -r; z <= r; z++) {
                off[all][0] = x;
                off[all][1] = y;
                off[all][2] = z;
                all++;
            }
    if (count <= 0)
        count = 1 + tt_rng_below(rng, all < 40 ? all : 40);
    if (count > all)
        count = all;
    tt_pick_taps(rng, off, all, count, r);
    return count;
}
