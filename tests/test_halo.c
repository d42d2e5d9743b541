/*
 * test_halo.c: the halo exchange in host memory (comm/halo.c) against the values it must
 * bring. Every rank's box holds f(global point); after an exchange every halo point of its
 * grown box holds f of the point it stands for (wrapped along the periodic dimensions), by
 * tide_halo_run (the own points inside the grown array, left as they were; whole, or started
 * and finished in two calls) and by
 * tide_halo_run_from, the own points in an array of their own and the halo received into
 * the grown array as one part (its own part left untouched) or into the parts of
 * tide_box_subtract, each an array of its own (checked against the grown box less the own one
 * point by point: disjoint, covering it). Random tilings (some boxes empty), random storage
 * orders, halos of 1 to 3 points, each dimension periodic or not, on 1 to 6 ranks.
 */
#include <stdio.h>
#include <stdlib.h>
#include "common.h"
#include "comm/halo.h"
#include "comm/region.h"

enum { CASES = 40 };

/* The value of global point p (inside the grid): exact in a double. */
static double f(const int p[3]) { return p[0] * 1e6 + p[1] * 1e3 + p[2] + 0.5; }

/* Box b grown by h along each dimension it does not span whole, clipped at the faces of the
 * dimensions that do not wrap (an empty box stays empty). */
static tide_box grow(const tide_box *b, const int n[3], const int periodic[3], int h)
{
    tide_box e = *b;
    if (tt_box_count(b) == 0)
        return e;
    for (int d = 0; d < 3; d++) {
        if (b->lo[d] == 0 && b->hi[d] == n[d])
            continue;
        e.lo[d] = b->lo[d] - h;
        e.hi[d] = b->hi[d] + h;
        if (!periodic[d]) {
            e.lo[d] = e.lo[d] < 0 ? 0 : e.lo[d];
            e.hi[d] = e.hi[d] > n[d] ? n[d] : e.hi[d];
        }
    }
    return e;
}

/* Fills the points of box b in array a (laid out as layout) with f, or with v where f_of is 0. */
static void fill(double *a, const tide_box *layout, const tide_box *b, int f_of, double v)
{
    int p[3];
    for (p[0] = b->lo[0]; p[0] < b->hi[0]; p[0]++)
        for (p[1] = b->lo[1]; p[1] < b->hi[1]; p[1]++)
            for (p[2] = b->lo[2]; p[2] < b->hi[2]; p[2]++)
                a[tt_offset(layout, p)] = f_of ? f(p) : v;
}

/* Points of grown array a (laid out as e) that are wrong: the halo's against f of the wrapped
 * point, the own box's against f (own_f) or the value v it was left with. */
static long long wrong(const double *a, const tide_box *e, const tide_box *own, const int n[3],
                       int own_f, double v)
{
    long long bad = 0;
    int p[3], w[3];
    for (p[0] = e->lo[0]; p[0] < e->hi[0]; p[0]++)
        for (p[1] = e->lo[1]; p[1] < e->hi[1]; p[1]++)
            for (p[2] = e->lo[2]; p[2] < e->hi[2]; p[2]++) {
                for (int d = 0; d < 3; d++)
                    w[d] = ((p[d] % n[d]) + n[d]) % n[d];
                double want = tt_inside(own, p) && !own_f ? v : f(w);
                bad += a[tt_offset(e, p)] != want;
            }
    return bad;
}

/* Points of grown box e wrong in the parts x of e less own: a halo point in no part or in
 * several, a part's point inside own or outside e, or a value other than f of the wrapped
 * point. */
static long long wrong_parts(const tide_parts *x, const tide_box *e, const tide_box *own,
                             const int n[3])
{
    long long bad = 0;
    int p[3], w[3];
    for (p[0] = e->lo[0]; p[0] < e->hi[0]; p[0]++)
        for (p[1] = e->lo[1]; p[1] < e->hi[1]; p[1]++)
            for (p[2] = e->lo[2]; p[2] < e->hi[2]; p[2]++) {
                int in = 0;
                for (int d = 0; d < 3; d++)
                    w[d] = ((p[d] % n[d]) + n[d]) % n[d];
                for (int i = 0; i < x->n; i++)
                    if (tt_inside(&x->box[i], p)) {
                        in++;
                        bad += ((double *)x->data[i])[tt_offset(&x->box[i], p)] != f(w);
                    }
                bad += in != !tt_inside(own, p);
            }
    long long held = 0;
    for (int i = 0; i < x->n; i++)
        held += tt_box_count(&x->box[i]);
    long long halo = tt_box_count(e) - (tt_box_count(own) > 0 ? tt_box_count(own) : 0);
    return bad + (held != halo);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    tt_tally tally = {0, 0};
    tide_box *own = tt_xmalloc(sizeof *own * (size_t)nranks);
    tide_box *ext = tt_xmalloc(sizeof *ext * (size_t)nranks);
    for (int c = 0; c < CASES; c++) {
        tt_rng rng;
        tt_rng_seed(&rng, 4100u + (unsigned)c);
        int n[3], periodic[3], h = 1 + tt_rng_below(&rng, 3);
        for (int d = 0; d < 3; d++) {
            n[d] = 8 + tt_rng_below(&rng, 8);
            periodic[d] = tt_rng_below(&rng, 2);
        }
        tt_tiling_random(n, nranks, &rng, own);
        tt_random_orders(nranks, &rng, own);
        for (int r = 0; r < nranks; r++)
            ext[r] = grow(&own[r], n, periodic, h);
        char name[160], err[512] = "";
        snprintf(name, sizeof name, "case %d: %dx%dx%d, periodic %d%d%d, halo %d", c, n[0], n[1],
                 n[2], periodic[0], periodic[1], periodic[2], h);
        tide_halo *halo = NULL;
        int st = tide_halo_create(MPI_COMM_WORLD, n, periodic, own, ext, sizeof(double), 2,
                                  TIDE_EXCHANGE_P2P, 0, &halo, err, sizeof err);
        if (!tt_check(&tally, MPI_COMM_WORLD, st == 0, "%s: tide_halo_create: %s (%s)", name,
                      tide_strerror(st), err))
            continue;
        const tide_box *o = &own[rank], *e = &ext[rank];
        double *a = tt_xmalloc(sizeof(double) * (size_t)tt_box_count(e));
        double *u = tt_xmalloc(sizeof(double) * (size_t)tt_box_count(o));
        /* the own points in the grown array, the halo poisoned */
        fill(a, e, e, 0, -7);
        fill(a, e, o, 1, 0);
        /* odd cases in two halves, as a pass that works between them issues it */
        if (c % 2) {
            st = tide_halo_run(halo, a, NULL, NULL, TIDE_HALO_START);
            int fin = tide_halo_run(halo, a, NULL, NULL, TIDE_HALO_FINISH);
            st = st ? st : fin;
        } else {
            st = tide_halo_run(halo, a, NULL, NULL, TIDE_HALO_ALL);
        }
        long long bad = st ? -1 : wrong(a, e, o, n, 1, 0);
        tt_check(&tally, MPI_COMM_WORLD, st == 0 && bad == 0, "%s: tide_halo_run%s: status %d, "
                 "%lld wrong points on rank %d", name, c % 2 ? " in halves" : "", st, bad, rank);
        /* the own points apart: the grown array's own part holds -3 and must keep it */
        fill(a, e, e, 0, -3);
        fill(u, o, o, 1, 0);
        tide_parts whole = {1, {*e}, {a}};
        st = tide_halo_run_from(halo, u, o, &whole);
        bad = st ? -1 : wrong(a, e, o, n, 0, -3);
        tt_check(&tally, MPI_COMM_WORLD, st == 0 && bad == 0, "%s: tide_halo_run_from: status "
                 "%d, %lld wrong points on rank %d", name, st, bad, rank);
        /* ... into the parts of the halo alone, poisoned */
        tide_parts x = {0};
        x.n = tide_box_subtract(e, o, x.box);
        for (int i = 0; i < x.n; i++) {
            x.data[i] = tt_xmalloc(sizeof(double) * (size_t)tt_box_count(&x.box[i]));
            fill(x.data[i], &x.box[i], &x.box[i], 0, -5);
        }
        st = tide_halo_run_from(halo, u, o, &x);
        bad = st ? -1 : wrong_parts(&x, e, o, n);
        tt_check(&tally, MPI_COMM_WORLD, st == 0 && bad == 0, "%s: tide_halo_run_from into %d "
                 "parts: status %d, %lld wrong points on rank %d", name, x.n, st, bad, rank);
        for (int i = 0; i < x.n; i++)
            free(x.data[i]);
        free(a);
        free(u);
        tide_halo_destroy(halo);
    }
    free(own);
    free(ext);
    int rc = tt_finish(&tally, MPI_COMM_WORLD, "test_halo", "checks");
    MPI_Finalize();
    return rc;
}
