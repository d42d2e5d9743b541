/* box.c: box counts and the slab / pencil / process-grid decomposition helpers. */
#include "core/core.h"

long long tide_box_count(const tide_box *box)
{
    if (!box)
        return 0;
    long long c = 1;
    for (int d = 0; d < 3; d++)
        c *= box->hi[d] > box->lo[d] ? (long long)(box->hi[d] - box->lo[d]) : 0;
    return c;
}

static int check_n(const char *fn, const int n[3])
{
    if (!n)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "%s: n is NULL", fn);
    for (int d = 0; d < 3; d++)
        if (n[d] <= 0)
            return tide_fail(NULL, TIDE_ERR_ARGUMENT, "%s: n[%d] = %d must be positive", fn, d,
                             n[d]);
    return TIDE_SUCCESS;
}

/* Surface of a local block of n/grid: the sum of its three face areas, the data a pencil or
 * slab exchange moves per rank grows with it. Ranks beyond a dimension's size (empty boxes)
 * are penalised so they are chosen only when nothing else divides nranks. */
static double surface(const int n[3], const int g[3])
{
    double b[3], s;
    int idle = 0;
    for (int d = 0; d < 3; d++) {
        b[d] = (double)n[d] / g[d];
        idle |= g[d] > n[d];
    }
    s = b[0] * b[1] + b[1] * b[2] + b[0] * b[2];
    return idle ? s + 1e300 / 2 : s;
}

int tide_proc_grid(int nranks, const int n[3], const int split[3], int grid[3])
{
    int st = check_n("tide_proc_grid", n);
    if (st)
        return st;
    if (!split || !grid)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_proc_grid: NULL argument");
    if (nranks < 1)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_proc_grid: nranks = %d", nranks);
    if (nranks > 1 && !split[0] && !split[1] && !split[2])
        return tide_fail(NULL, TIDE_ERR_ARGUMENT,
                         "tide_proc_grid: %d ranks but no dimension may be split", nranks);
    int best[3] = {0, 0, 0};
    double best_s = 0;
    for (int a = 1; a <= nranks; a++) {
        if (nranks % a || (a > 1 && !split[0]))
            continue;
        for (int b = 1; b <= nranks / a; b++) {
            if ((nranks / a) % b || (b > 1 && !split[1]))
                continue;
            int c = nranks / a / b;
            if (c > 1 && !split[2])
                continue;
            int g[3] = {a, b, c};
            double s = surface(n, g);
            if (!best[0] || s < best_s) {
                best_s = s;
                best[0] = a, best[1] = b, best[2] = c;
            }
        }
    }
    for (int d = 0; d < 3; d++)
        grid[d] = best[d];
    return TIDE_SUCCESS;
}

/* tide_box_in_grid's work; fn names the function the user called, for messages. */
static int box_in_grid(const char *fn, const int n[3], const int grid[3], int rank,
                       tide_box *box)
{
    int st = check_n(fn, n);
    if (st)
        return st;
    if (!grid || !box)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "%s: NULL argument", fn);
    long long p = 1;
    for (int d = 0; d < 3; d++) {
        if (grid[d] < 1)
            return tide_fail(NULL, TIDE_ERR_ARGUMENT, "%s: grid[%d] = %d", fn, d, grid[d]);
        p *= grid[d];
    }
    if (rank < 0 || rank >= p)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "%s: rank %d outside a grid of %lld ranks",
                         fn, rank, p);
    int c[3] = {rank / (grid[1] * grid[2]), rank / grid[2] % grid[1], rank % grid[2]};
    for (int d = 0; d < 3; d++) {
        box->lo[d] = (int)((long long)c[d] * n[d] / grid[d]);
        box->hi[d] = (int)((long long)(c[d] + 1) * n[d] / grid[d]);
        box->order[d] = d;
    }
    return TIDE_SUCCESS;
}

int tide_box_in_grid(const int n[3], const int grid[3], int rank, tide_box *box)
{
    return box_in_grid("tide_box_in_grid", n, grid, rank, box);
}

int tide_box_slab(const int n[3], int split_dim, int nranks, int rank, tide_box *box)
{
    if (split_dim < 0 || split_dim > 2)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_box_slab: split_dim = %d", split_dim);
    if (nranks < 1)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_box_slab: nranks = %d", nranks);
    int grid[3] = {1, 1, 1};
    grid[split_dim] = nranks;
    return box_in_grid("tide_box_slab", n, grid, rank, box);
}

int tide_box_pencil(const int n[3], int whole_dim, int nranks, int rank, tide_box *box)
{
    if (whole_dim < 0 || whole_dim > 2)
        return tide_fail(NULL, TIDE_ERR_ARGUMENT, "tide_box_pencil: whole_dim = %d", whole_dim);
    int split[3] = {1, 1, 1}, grid[3];
    split[whole_dim] = 0;
    int st = tide_proc_grid(nranks, n, split, grid);
    return st ? st : box_in_grid("tide_box_pencil", n, grid, rank, box);
}
