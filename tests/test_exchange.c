/*
 * test_exchange.c: the exchange (comm/exchange.h) in host memory against the values it must
 * bring. Every rank holds a random box of a grid (random tilings, some boxes empty, random
 * storage orders) with each point of every field holding g(field, point); the exchange moves
 * each rank's points into the boxes of another random tiling, and every point received must
 * hold g of itself. Each case runs the exchange's host paths:
 *   - P2P and A2AV, with the layouts declared (runs sent and received in place) or not;
 *   - the receives into two parts of the destination (a box split in two along one
 *     dimension) and, P2P with the orders equal, typed (subarray) receives;
 *   - the sends from a staging packed by the caller (src NULL), the receives left packed in
 *     the staging (dst NULL), checked piece by piece at their offsets;
 *   - 1 and 3 fields, and every message cut into parts of at most 5 elements;
 *   - a post of one rank made to fail (the first, a middle, the last): every rank returns a
 *     failure, within a time limit, and the next exchange is right.
 * On 1 to 6 ranks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common.h"
#include "comm/exchange.h"
#include "comm/region.h"

enum { CASES = 40, ALARM_S = 240 };

static MPI_Comm comm = MPI_COMM_WORLD;
static int me, P;
static tt_tally tally;

/* The value of field f at global point p: exact in a double. */
static double g(int f, const int p[3]) { return f * 1e9 + p[0] * 1e6 + p[1] * 1e3 + p[2]; }

/* Array a laid out as box b (fields one after another): every point of region r set to g, or
 * to v where use_g is 0. */
static void fill(double *a, const tide_box *b, const tide_box *r, int fields, int use_g,
                 double v)
{
    long long n = tt_box_count(b);
    int p[3];
    for (int f = 0; f < fields; f++)
        for (p[0] = r->lo[0]; p[0] < r->hi[0]; p[0]++)
            for (p[1] = r->lo[1]; p[1] < r->hi[1]; p[1]++)
                for (p[2] = r->lo[2]; p[2] < r->hi[2]; p[2]++)
                    a[f * n + tt_offset(b, p)] = use_g ? g(f, p) : v;
}

/* Points of region r in array a (laid out as b) that do not hold g. */
static long long wrong(const double *a, const tide_box *b, const tide_box *r, int fields)
{
    long long n = tt_box_count(b), bad = 0;
    int p[3];
    for (int f = 0; f < fields; f++)
        for (p[0] = r->lo[0]; p[0] < r->hi[0]; p[0]++)
            for (p[1] = r->lo[1]; p[1] < r->hi[1]; p[1]++)
                for (p[2] = r->lo[2]; p[2] < r->hi[2]; p[2]++)
                    bad += a[f * n + tt_offset(b, p)] != g(f, p);
    return bad;
}

typedef struct {
    const char *name;
    tide_exchange how;
    int declared, parts, typed, packed, fields, cap;
} mode;

/* The pieces of src -> dst (reshape's geometry): this rank's box cut with every other rank's
 * on the other side, travelling in the receiver's order: to[q] and from[q], with that order. */
static tide_xchg_list *pieces(const tide_box *src, const tide_box *dst, tide_box *to,
                              tide_box *from)
{
    tide_xchg_list *l = tide_xchg_list_new();
    for (int q = 0; q < P && l; q++) {
        if (q == me)
            continue;
        int sends = tide_box_intersect(&src[me], &dst[q], &to[q]) > 0;
        memcpy(to[q].order, dst[q].order, sizeof to[q].order);
        if (sends && tide_xchg_add(l, TIDE_XCHG_SEND, q, &to[q], dst[q].order))
            return tide_xchg_list_free(l), NULL;
        if (tide_box_intersect(&dst[me], &src[q], &from[q]) > 0 &&
            tide_xchg_add(l, TIDE_XCHG_RECV, q, &from[q], dst[me].order))
            return tide_xchg_list_free(l), NULL;
    }
    return l;
}

/* The destination box split in two along its slowest dimension (or one part). */
static int split_parts(const tide_box *b, int two, tide_box part[2])
{
    part[0] = part[1] = *b;
    int d = b->order[0], mid = (b->lo[d] + b->hi[d]) / 2;
    if (!two || b->hi[d] - b->lo[d] < 2)
        return 1;
    part[0].hi[d] = mid;
    part[1].lo[d] = mid;
    return 2;
}

/* One exchange of the case in mode m (fault: the post that fails on rank `victim`, -1: none);
 * returns this rank's status, counts its wrong points in *bad and says in *fired whether the
 * fault was injected here. */
static int run(const tide_box *src, const tide_box *dst, const mode *m, long long fault,
               int victim, long long *bad, int *fired)
{
    tide_box *to = calloc((size_t)P, sizeof *to), *from = calloc((size_t)P, sizeof *from);
    tide_xchg_list *l = pieces(src, dst, to, from);
    tide_exchange_set_max_message(m->cap);
    tide_xchg_desc d = {.comm = comm, .elem = sizeof(double), .fields = m->fields,
                        .how = m->how, .threads = 2, .typed = m->typed,
                        .src_box = m->declared ? &src[me] : NULL,
                        .dst_box = m->declared ? &dst[me] : NULL};
    tide_xchg *x = NULL;
    char err[256] = "";
    int st = l ? tide_xchg_create(&d, &l, &x, err, sizeof err) : TIDE_ERR_NOMEM;
    tide_exchange_set_max_message(0);
    tide_xchg_list_free(l);
    if (st) {
        printf("rank %d: %s: tide_xchg_create: %s\n", me, m->name, err);
        free(to), free(from);
        return st;
    }
    long long ns = tt_box_count(&src[me]), nd = tt_box_count(&dst[me]);
    tide_box part[2];
    int np = split_parts(&dst[me], m->parts, part);
    double *a = tt_xmalloc(sizeof(double) * (size_t)(ns * m->fields + 1));
    double *b[2];
    for (int k = 0; k < np; k++) {
        b[k] = tt_xmalloc(sizeof(double) * (size_t)(tt_box_count(&part[k]) * m->fields + 1));
        fill(b[k], &part[k], &part[k], m->fields, 0, -1);
    }
    fill(a, &src[me], &src[me], m->fields, 1, 0);
    size_t sb = tide_xchg_send_bytes(x), rb = tide_xchg_recv_bytes(x);
    char *send = tt_xmalloc(sb + 1), *recv = tt_xmalloc(rb + 1);
    /* packed: the caller fills the staging, piece after piece (every piece staged: no layout
     * declared), and reads the received pieces from it */
    size_t at = 0;
    for (int q = 0; q < P && m->packed; q++)
        if (q != me && tt_box_count(&to[q]) > 0) {
            tide_copy_region(sizeof(double), m->fields, &to[q], a, &src[me],
                             (double *)send + at, &to[q], 1);
            at += (size_t)tt_box_count(&to[q]) * (size_t)m->fields;
        }
    tide_parts parts = {np, {part[0], part[1]}, {b[0], b[1]}};
    tide_xchg_io io = {.src = m->packed ? NULL : a, .src_box = &src[me],
                       .dst = m->packed ? NULL : &parts, .send = send, .recv = recv};
    if (me == victim && fault >= 0)
        tide_exchange_inject_fault(fault);
    st = tide_xchg_start(x, &io, TIDE_SUCCESS);
    st = tide_xchg_finish(x, &io, st);
    *fired = me == victim && fault >= 0 && !tide_exchange_fault_pending();
    tide_exchange_inject_fault(-1);
    *bad = 0;
    at = 0;
    for (int q = 0; q < P && !st; q++) {
        tide_box r;
        if (q == me || tide_box_intersect(&dst[me], &src[q], &r) == 0)
            continue;
        if (m->packed) { /* left packed: the piece's dense copy in the staging */
            *bad += wrong((double *)recv + at, &from[q], &from[q], m->fields);
            at += (size_t)tt_box_count(&from[q]) * (size_t)m->fields;
            continue;
        }
        for (int k = 0; k < np; k++) {
            tide_box in;
            if (tide_box_intersect(&r, &part[k], &in) > 0)
                *bad += wrong(b[k], &part[k], &in, m->fields);
        }
    }
    (void)nd;
    free(a), free(send), free(recv), free(to), free(from);
    for (int k = 0; k < np; k++)
        free(b[k]);
    tide_xchg_destroy(x);
    return st;
}

static void one_case(const tide_box *src, const tide_box *dst, const mode *m, int c)
{
    long long bad = 0;
    int fired = 0, st = run(src, dst, m, -1, -1, &bad, &fired);
    tt_check(&tally, comm, st == 0 && bad == 0, "case %d %s: status %d, %lld points wrong", c,
             m->name, st, bad);
    if (P == 1 || c % 4)
        return;
    /* a post made to fail: the first, a middle one, the last of the victim's */
    for (int k = 0; k < 3; k++) {
        long long fault = k == 0 ? 0 : k == 1 ? 1 : 3;
        int victim = (c / 4 + k) % P;
        double t0 = MPI_Wtime();
        st = run(src, dst, m, fault, victim, &bad, &fired);
        double dt = MPI_Wtime() - t0;
        tt_check(&tally, comm, dt < 60 && (!fired || st == TIDE_ERR_MPI),
                 "case %d %s: post %lld of rank %d failing: %.1f s, status %d there", c,
                 m->name, fault, victim, dt, st);
        st = run(src, dst, m, -1, -1, &bad, &fired);
        tt_check(&tally, comm, st == 0 && bad == 0, "case %d %s: after a failed post: status "
                 "%d, %lld points wrong", c, m->name, st, bad);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &P);
    alarm(ALARM_S);
    static const mode modes[] = {
        {"p2p", TIDE_EXCHANGE_P2P, 0, 0, 0, 0, 1, 0},
        {"p2p declared", TIDE_EXCHANGE_P2P, 1, 0, 0, 0, 3, 0},
        {"p2p two parts", TIDE_EXCHANGE_P2P, 0, 1, 0, 0, 1, 0},
        {"p2p cut in 5s", TIDE_EXCHANGE_P2P, 0, 1, 0, 0, 3, 5},
        {"p2p typed", TIDE_EXCHANGE_P2P, 0, 1, 1, 0, 1, 0},
        {"p2p typed, cut in 5s", TIDE_EXCHANGE_P2P, 0, 0, 1, 0, 1, 5},
        {"p2p packed", TIDE_EXCHANGE_P2P, 0, 0, 0, 1, 3, 7},
        {"a2av", TIDE_EXCHANGE_A2AV, 0, 0, 0, 0, 1, 0},
        {"a2av declared", TIDE_EXCHANGE_A2AV, 1, 0, 0, 0, 3, 0},
        {"a2av packed", TIDE_EXCHANGE_A2AV, 0, 0, 0, 1, 1, 0},
    };
    tt_rng rng;
    tt_rng_seed(&rng, 2026);
    tide_box *src = malloc(sizeof *src * (size_t)P), *dst = malloc(sizeof *dst * (size_t)P);
    for (int c = 0; c < CASES; c++) {
        int n[3] = {1 + tt_rng_below(&rng, 9), 1 + tt_rng_below(&rng, 8),
                    1 + tt_rng_below(&rng, 7)};
        tt_tiling_random(n, P, &rng, src);
        tt_tiling_random(n, P, &rng, dst);
        tt_random_orders(P, &rng, src);
        tt_random_orders(P, &rng, dst);
        const mode *m = &modes[c % (int)(sizeof modes / sizeof modes[0])];
        one_case(src, dst, m, c);
    }
    free(src);
    free(dst);
    int rc = tt_finish(&tally, comm, "test_exchange", "checks");
    MPI_Finalize();
    return rc;
}
