/*
 * test_halo.c: the halo exchange in host memory (comm/halo.c) against the values it must
 * bring. Every rank's box holds f(global point); after an exchange every halo point of its
 * grown box holds f of the point it stands for (wrapped along the periodic dimensions), by
 * tide_halo_run (the own points inside the grown array, left as they were) and by
 * tide_halo_run_from (the own points in an array of their own, the grown array's own part
 * left untouched). Random tilings (some boxes empty), random storage orders, halos of 1 to 3
 * points, each dimension periodic or not, on 1 to 6 ranks.
 */
#include <stdio.h>
#include <stdlib.h>
#include "common.h"
#include "halo.h"

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

static int inside(const tide_box *b, const int p[3])
{
    for (int d = 0; d < 3; d++)
        if (p[d] < b->lo[d] || p[d] >= b->hi[d])
            return 0;
    return 1;
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
                double want = inside(own, p) && !own_f ? v : f(w);
                bad += a[tt_offset(e, p)] != want;
            }
    return bad;
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
                                  TIDE_HALO_HOST, &halo, err, sizeof err);
        if (!tt_check(&tally, MPI_COMM_WORLD, st == 0, "%s: tide_halo_create: %s (%s)", name,
                      tide_strerror(st), err))
            continue;
        const tide_box *o = &own[rank], *e = &ext[rank];
        double *a = tt_xmalloc(sizeof(double) * (size_t)tt_box_count(e));
        double *u = tt_xmalloc(sizeof(double) * (size_t)tt_box_count(o));
        /* the own points in the grown array, the halo poisoned */
        fill(a, e, e, 0, -7);
        fill(a, e, o, 1, 0);
        st = tide_halo_run(halo, a, NULL, NULL);
        long long bad = st ? -1 : wrong(a, e, o, n, 1, 0);
        tt_check(&tally, MPI_COMM_WORLD, st == 0 && bad == 0, "%s: tide_halo_run: status %d, "
                 "%lld wrong points on rank %d", name, st, bad, rank);
        /* the own points apart: the grown array's own part holds -3 and must keep it */
        fill(a, e, e, 0, -3);
        fill(u, o, o, 1, 0);
        st = tide_halo_run_from(halo, u, o, a);
        bad = st ? -1 : wrong(a, e, o, n, 0, -3);
        tt_check(&tally, MPI_COMM_WORLD, st == 0 && bad == 0, "%s: tide_halo_run_from: status "
                 "%d, %lld wrong points on rank %d", name, st, bad, rank);
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
