/*
 * test_reshape.c: MPI test of comm/reshape.h (run under mpiexec with any number of ranks).
 *
 * Every element carries its own global coordinates: field f, point (x, y, z) holds the double
 * ((f*N0 + x)*N1 + y)*N2 + z (and, for 16-byte elements, -(value + 0.25) as the second half).
 * After a reshape every destination element must equal the value of its global index exactly,
 * wherever it came from, so a misplaced, missing, duplicated or half-copied element is seen.
 * Offsets come from tt_offset (common.c), never from the library's geometry code.
 *
 * Layouts: slabs along each dimension, pencils, random recursive bisections (with empty boxes),
 * a shifted assignment of the same boxes (pure exchange) and a same-boxes reshape that only
 * changes storage orders (pure local copy). Each is run with 8- and 16-byte elements, batch 1
 * and 2 and both exchange backends (plus 2 threads, and AUTO, on one combination), twice (a
 * reshape is reusable), and then reversed (B -> A must give back the original). With AUTO the
 * ranks must all pick the same backend, or the exchange would deadlock.
 *
 * TEST_RESHAPE_VERBOSE=1 makes rank 0 name each case before running it, to locate a hang.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "comm/reshape.h"

#define GUARD 64 /* bytes after each array that must stay untouched */
#define GUARD_BYTE 0x5A
#define MAX_SHOWN 3 /* wrong elements printed per rank per check */

static MPI_Comm comm = MPI_COMM_WORLD;
static int nranks, me;
static tt_tally tally;
static int layouts_printed;
static int verbose; /* TEST_RESHAPE_VERBOSE=1: name each case before running it (finds hangs) */

static void *xmalloc(size_t bytes)
{
    /* At least one byte: a rank with an empty box still passes a valid pointer. */
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "test_reshape: rank %d: out of memory (%zu bytes)\n", me, bytes);
        MPI_Abort(comm, 2);
    }
    return p;
}

static double value_at(int f, const int n[3], const int p[3])
{
    return (((double)f * n[0] + p[0]) * n[1] + p[1]) * n[2] + p[2];
}

/* Fill an array in layout b (batch fields, comps doubles per element) with the global values. */
static void fill(double *a, const tide_box *b, int batch, int comps, const int n[3])
{
    long long count = tt_box_count(b);
    int p[3];
    if (count == 0)
        return;
    for (int f = 0; f < batch; f++)
        for (p[0] = b->lo[0]; p[0] < b->hi[0]; p[0]++)
            for (p[1] = b->lo[1]; p[1] < b->hi[1]; p[1]++)
                for (p[2] = b->lo[2]; p[2] < b->hi[2]; p[2]++) {
                    double v = value_at(f, n, p);
                    double *e = a + (f * count + tt_offset(b, p)) * comps;
                    e[0] = v;
                    if (comps == 2)
                        e[1] = -(v + 0.25);
                }
}

/* A NaN whose payload differs per pass, so a value left over from an earlier pass is never
 * mistaken for a fresh one and no real value compares equal to it. */
static void fill_sentinel(double *a, long long ndoubles, int pass)
{
    double s = nan("");
    uint64_t bits;
    memcpy(&bits, &s, sizeof bits);
    bits |= 0xDEAD00ull + (uint64_t)pass;
    memcpy(&s, &bits, sizeof s);
    for (long long i = 0; i < ndoubles; i++)
        a[i] = s;
}

/* Number of elements of a (layout b) that differ from the global values; prints the first few
 * with this rank's number. */
static long long verify(const double *a, const tide_box *b, int batch, int comps, const int n[3],
                        const char *what)
{
    long long count = tt_box_count(b), bad = 0;
    int p[3];
    if (count == 0)
        return 0;
    for (int f = 0; f < batch; f++)
        for (p[0] = b->lo[0]; p[0] < b->hi[0]; p[0]++)
            for (p[1] = b->lo[1]; p[1] < b->hi[1]; p[1]++)
                for (p[2] = b->lo[2]; p[2] < b->hi[2]; p[2]++) {
                    double v = value_at(f, n, p);
                    const double *e = a + (f * count + tt_offset(b, p)) * comps;
                    int ok = e[0] == v && (comps == 1 || e[1] == -(v + 0.25));
                    if (ok)
                        continue;
                    if (bad++ < MAX_SHOWN) {
                        /* Decode where the wrong value came from: it names its own index. */
                        double g = e[0];
                        char from[96] = "not written (sentinel)";
                        if (!isnan(g) && g >= 0) {
                            long long gi = (long long)g;
                            int z = (int)(gi % n[2]), y = (int)(gi / n[2] % n[1]);
                            int x = (int)(gi / n[2] / n[1] % n[0]);
                            int gf = (int)(gi / n[2] / n[1] / n[0]);
                            snprintf(from, sizeof from, "the value of field %d point (%d,%d,%d)",
                                     gf, x, y, z);
                        } else if (!isnan(g)) {
                            snprintf(from, sizeof from, "%.17g", g);
                        }
                        printf("  rank %d: %s: field %d point (%d,%d,%d): want (%.17g, %.17g), "
                               "got (%.17g, %.17g) = %s\n",
                               me, what, f, p[0], p[1], p[2], v, comps == 2 ? -(v + 0.25) : 0.0,
                               e[0], comps == 2 ? e[1] : 0.0, from);
                    }
                }
    if (bad)
        printf("  rank %d: %s: %lld wrong elements of %lld\n", me, what, bad, count * batch);
    return bad;
}

static void set_guard(void *a, size_t bytes) { memset((char *)a + bytes, GUARD_BYTE, GUARD); }

static int guard_ok(const void *a, size_t bytes, const char *what)
{
    const unsigned char *g = (const unsigned char *)a + bytes;
    for (int i = 0; i < GUARD; i++)
        if (g[i] != GUARD_BYTE) {
            printf("  rank %d: %s: wrote past the end of the array (byte %d)\n", me, what, i);
            return 0;
        }
    return 1;
}

/* ---- layouts -------------------------------------------------------------------------------- */

enum { SLAB0, SLAB1, SLAB2, PEN0, PEN1, PEN2, RANDOM, SAME, SHIFT };
enum { OC, OF, ORAND };
static const char *const tiling_names[] = {"xslab", "yslab", "zslab", "xpencil", "ypencil",
                                           "zpencil", "random", "same", "shifted"};
static const char *const order_names[] = {"C", "F", "rand"};

typedef struct {
    int stile, sorder, dtile, dorder;
} spec;

/* dtile SAME: the source's boxes (only orders may change); SHIFT: the source's boxes moved
 * one rank along, so every block goes to a peer. */
static const spec specs[] = {
    {SLAB0, OC, SLAB1, OC},         /* the slab transpose */
    {SLAB0, OF, SLAB2, ORAND},      /* slabs to slabs, mixed orders */
    {PEN2, OC, PEN1, ORAND},        /* the pencil steps */
    {PEN1, OF, PEN0, OC},
    {PEN0, ORAND, SLAB0, ORAND},    /* pencils back to slabs */
    {RANDOM, ORAND, RANDOM, ORAND}, /* arbitrary tilings */
    {RANDOM, OC, SAME, ORAND},      /* local transposes only */
    {SLAB1, ORAND, SAME, -1},       /* identity: same boxes, same orders */
    {SLAB2, OC, SHIFT, OC},         /* exchange only, every block a whole box (direct) */
    {RANDOM, OF, PEN2, ORAND},
    {SLAB1, OC, RANDOM, OF},
};

static void make_tiling(int kind, const int n[3], tt_rng *rng, tide_box *boxes)
{
    switch (kind) {
    case SLAB0: case SLAB1: case SLAB2: tt_tiling_slabs(n, kind - SLAB0, nranks, boxes); break;
    case PEN0: case PEN1: case PEN2: tt_tiling_pencils(n, kind - PEN0, nranks, boxes); break;
    default: tt_tiling_random(n, nranks, rng, boxes); break;
    }
}

static void set_orders(int kind, tt_rng *rng, tide_box *boxes)
{
    static const int C[3] = {0, 1, 2}, F[3] = {2, 1, 0};
    if (kind == ORAND) {
        tt_random_orders(nranks, rng, boxes);
        return;
    }
    for (int r = 0; r < nranks; r++)
        memcpy(boxes[r].order, kind == OF ? F : C, sizeof C);
}

/* Rank 0 prints every rank's boxes, so a failing case can be rebuilt by hand. */
static void print_layout(const char *name, const tide_box *src, const tide_box *dst)
{
    if (me != 0 || layouts_printed >= 6)
        return;
    layouts_printed++;
    char a[80], b[80];
    printf("  layout %s:\n", name);
    for (int r = 0; r < nranks; r++)
        printf("    rank %d: src %s  dst %s\n", r, tt_box_str(&src[r], a, 80),
               tt_box_str(&dst[r], b, 80));
    fflush(stdout);
}

/* ---- one reshape case ----------------------------------------------------------------------- */

static const char *exchange_name(tide_exchange ex)
{
    return ex == TIDE_EXCHANGE_A2AV ? "a2av" : ex == TIDE_EXCHANGE_P2P ? "p2p" : "auto";
}

/* Peers this rank sends to / receives from, by the definition. */
static void count_peers(const tide_box *src, const tide_box *dst, int *nsend, int *nrecv,
                        int *nunion)
{
    *nsend = *nrecv = *nunion = 0;
    for (int q = 0; q < nranks; q++) {
        if (q == me)
            continue;
        int s = 1, r = 1;
        for (int d = 0; d < 3; d++) {
            s &= src[me].lo[d] < dst[q].hi[d] && dst[q].lo[d] < src[me].hi[d];
            r &= dst[me].lo[d] < src[q].hi[d] && src[q].lo[d] < dst[me].hi[d];
        }
        s &= tt_box_count(&src[me]) > 0 && tt_box_count(&dst[q]) > 0;
        r &= tt_box_count(&dst[me]) > 0 && tt_box_count(&src[q]) > 0;
        *nsend += s;
        *nrecv += r;
        *nunion += s || r;
    }
}

/* Create a reshape on every rank; all ranks agree on the outcome (NULL on every rank when any
 * failed, so nobody enters a collective execute alone). */
static tide_reshape *create(const char *desc, const char *dir, const tide_box *src,
                            const tide_box *dst, size_t elem, int batch, tide_exchange ex,
                            int threads)
{
    tide_reshape *r = NULL;
    char err[256] = "";
    int st = tide_reshape_create(comm, src, dst, NULL, NULL, elem, batch, ex, threads, &r, err,
                                 sizeof err);
    if (st != TIDE_SUCCESS)
        printf("  rank %d: %s: create %s failed: status %d: %s\n", me, desc, dir, st, err);
    if (!tt_check(&tally, comm, st == TIDE_SUCCESS && r != NULL, "%s: tide_reshape_create %s",
                  desc, dir)) {
        if (st == TIDE_SUCCESS && r)
            tide_reshape_destroy(r);
        return NULL;
    }
    /* The backend is part of the collective protocol: ranks that disagree (one in
     * MPI_Alltoallv, another waiting in MPI_Irecv) deadlock, so do not execute then. */
    int got = (int)tide_reshape_exchange(r), lo_ex = got, hi_ex = got;
    MPI_Allreduce(MPI_IN_PLACE, &lo_ex, 1, MPI_INT, MPI_MIN, comm);
    MPI_Allreduce(MPI_IN_PLACE, &hi_ex, 1, MPI_INT, MPI_MAX, comm);
    if (lo_ex != hi_ex)
        printf("  rank %d: %s: %s uses exchange %s\n", me, desc, dir,
               exchange_name((tide_exchange)got));
    if (!tt_check(&tally, comm, lo_ex == hi_ex,
                  "%s: %s: ranks chose different exchange backends (%s and %s); not executed",
                  desc, dir, exchange_name((tide_exchange)lo_ex),
                  exchange_name((tide_exchange)hi_ex))) {
        tide_reshape_destroy(r);
        return NULL;
    }
    return r;
}

/* Execute r from `in` to `out` (layout obox) with fresh staging and a sentinel-filled out;
 * checks every element of out and that `in` is untouched. Collective. */
static int execute_and_check(const char *desc, const char *what, const tide_reshape *r,
                             const double *in, const double *in_ref, size_t in_bytes, double *out,
                             const tide_box *obox, const int n[3], int batch, int comps, int pass)
{
    long long ocount = tt_box_count(obox) * batch * comps;
    size_t sb = tide_reshape_send_bytes(r), rb = tide_reshape_recv_bytes(r);
    unsigned char *sendbuf = xmalloc(sb), *recvbuf = xmalloc(rb);
    /* Stale staging from another pass must not leak into the result. */
    memset(sendbuf, 0xC3 + pass, sb ? sb : 1);
    memset(recvbuf, 0x3C + pass, rb ? rb : 1);
    fill_sentinel(out, ocount, pass);

    int rc = tide_reshape_execute(r, in, out, sendbuf, recvbuf);
    int ok = 1;
    if (rc != TIDE_SUCCESS) {
        printf("  rank %d: %s: %s: execute returned %d\n", me, desc, what, rc);
        ok = 0;
    } else {
        char label[320];
        snprintf(label, sizeof label, "%s: %s", desc, what);
        ok &= verify(out, obox, batch, comps, n, label) == 0;
        ok &= guard_ok(out, (size_t)ocount * sizeof(double), label);
        if (memcmp(in, in_ref, in_bytes) != 0) {
            printf("  rank %d: %s: execute modified its source array\n", me, label);
            ok = 0;
        }
    }
    free(sendbuf);
    free(recvbuf);
    return tt_check(&tally, comm, ok, "%s: %s", desc, what);
}

static void run_case(const char *lname, const int n[3], const tide_box *src, const tide_box *dst,
                     size_t elem, int batch, tide_exchange ex, int threads)
{
    char desc[256];
    snprintf(desc, sizeof desc, "grid %dx%dx%d %s elem=%zu batch=%d %s threads=%d", n[0], n[1],
             n[2], lname, elem, batch, exchange_name(ex), threads);
    if (verbose && me == 0)
        printf("case %s\n", desc);
    int comps = (int)(elem / sizeof(double));
    const tide_box *sb = &src[me], *db = &dst[me];
    size_t sbytes = (size_t)tt_box_count(sb) * batch * elem;
    size_t dbytes = (size_t)tt_box_count(db) * batch * elem;
    double *a = xmalloc(sbytes + GUARD), *a_ref = xmalloc(sbytes + GUARD);
    double *b = xmalloc(dbytes + GUARD), *a2 = xmalloc(sbytes + GUARD);
    fill(a, sb, batch, comps, n);
    memcpy(a_ref, a, sbytes);
    set_guard(b, dbytes);
    set_guard(a2, sbytes);
    int failed_before = tally.failed;

    tide_reshape *fw = create(desc, "src->dst", src, dst, elem, batch, ex, threads);
    if (fw) {
        /* The backend asked for is the one used (AUTO resolves to one of the two). */
        tide_exchange got = tide_reshape_exchange(fw);
        int ok = ex == TIDE_EXCHANGE_AUTO
                     ? (got == TIDE_EXCHANGE_A2AV || got == TIDE_EXCHANGE_P2P)
                     : got == ex;
        /* Peers: at least every rank it must send to or receive from, at most their union. */
        int ns, nr, nu, peers = tide_reshape_peers(fw);
        count_peers(src, dst, &ns, &nr, &nu);
        int pok = peers >= (ns > nr ? ns : nr) && peers <= nu;
        if (!ok || !pok)
            printf("  rank %d: %s: exchange %d (asked %d), peers %d (sends to %d, receives from "
                   "%d, %d distinct)\n", me, desc, (int)got, (int)ex, peers, ns, nr, nu);
        tt_check(&tally, comm, ok && pok, "%s: tide_reshape_exchange / tide_reshape_peers", desc);

        /* Twice: the plan must be reusable and keep no state between executions. */
        for (int pass = 0; pass < 2; pass++)
            execute_and_check(desc, pass ? "src->dst, second execute" : "src->dst", fw, a, a_ref,
                              sbytes, b, db, n, batch, comps, pass);

        /* And back: B -> A must give the original array (b still holds the second result). */
        tide_reshape *bw = create(desc, "dst->src", dst, src, elem, batch, ex, threads);
        if (bw) {
            double *b_ref = xmalloc(dbytes + 1);
            memcpy(b_ref, b, dbytes);
            if (execute_and_check(desc, "dst->src (round trip)", bw, b, b_ref, dbytes, a2, sb, n,
                                  batch, comps, 2))
                tt_check(&tally, comm, memcmp(a2, a_ref, sbytes) == 0,
                         "%s: round trip differs bitwise from the original", desc);
            free(b_ref);
            tide_reshape_destroy(bw);
        }
        tide_reshape_destroy(fw);
    }
    if (tally.failed != failed_before)
        print_layout(lname, src, dst);
    free(a);
    free(a_ref);
    free(b);
    free(a2);
}

static void run_grid(const int n[3], uint64_t seed)
{
    tide_box *src = xmalloc(sizeof(tide_box) * (size_t)nranks);
    tide_box *dst = xmalloc(sizeof(tide_box) * (size_t)nranks);
    for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
        const spec *sp = &specs[s];
        /* Same seed on every rank: every rank builds the same global layouts. */
        tt_rng rng;
        tt_rng_seed(&rng, seed * 1000 + s);
        make_tiling(sp->stile, n, &rng, src);
        set_orders(sp->sorder, &rng, src);
        if (sp->dtile == SAME) {
            memcpy(dst, src, sizeof(tide_box) * (size_t)nranks);
        } else if (sp->dtile == SHIFT) {
            for (int r = 0; r < nranks; r++)
                dst[r] = src[(r + 1) % nranks];
        } else {
            make_tiling(sp->dtile, n, &rng, dst);
        }
        if (sp->dorder >= 0)
            set_orders(sp->dorder, &rng, dst);
        char lname[96];
        snprintf(lname, sizeof lname, "%s/%s->%s/%s", tiling_names[sp->stile],
                 order_names[sp->sorder], tiling_names[sp->dtile],
                 sp->dorder >= 0 ? order_names[sp->dorder] : "same");
        /* A broken generator would make every failure below meaningless. */
        if (!tt_check(&tally, comm, tt_boxes_tile(n, nranks, src) && tt_boxes_tile(n, nranks, dst),
                      "grid %dx%dx%d %s: test bug: layouts do not tile the grid", n[0], n[1], n[2],
                      lname)) {
            print_layout(lname, src, dst);
            continue;
        }

        /* Threads: 2 only with one element size and batch. With ranks oversubscribed on a
         * small machine, every OpenMP parallel region costs milliseconds (idle threads spin
         * unless OMP_WAIT_POLICY=passive, which the tests set), and the threaded copy's partitioning does not depend
         * on the element size or batch anyway. */
        static const tide_exchange exs[] = {TIDE_EXCHANGE_A2AV, TIDE_EXCHANGE_P2P};
        for (int e = 0; e < 2; e++) {
            for (size_t elem = 8; elem <= 16; elem += 8)
                for (int batch = 1; batch <= 2; batch++)
                    run_case(lname, n, src, dst, elem, batch, exs[e], 1);
            run_case(lname, n, src, dst, 16, 2, exs[e], 2);
        }
        run_case(lname, n, src, dst, 16, 2, TIDE_EXCHANGE_AUTO, 1);
    }
    free(src);
    free(dst);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_size(comm, &nranks);
    MPI_Comm_rank(comm, &me);
    setvbuf(stdout, NULL, _IOLBF, 0);
    verbose = getenv("TEST_RESHAPE_VERBOSE") && atoi(getenv("TEST_RESHAPE_VERBOSE")) > 0;

    static const int grids[][3] = {{7, 11, 13}, {1, 1, 64}, {5, 3, 2}, {45, 36, 50}, {2, 9, 1}};
    for (size_t g = 0; g < sizeof grids / sizeof grids[0]; g++)
        run_grid(grids[g], 17 + g);

    int status = tt_finish(&tally, comm, "test_reshape", "checks");
    MPI_Finalize();
    return status;
}
