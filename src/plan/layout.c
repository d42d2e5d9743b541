/* layout.c: layouts and the layout chain (see layout.h). */
#include <stdlib.h>
#include <string.h>
#include "plan/layout.h"
#include "comm/region.h"

tide_layout tide_layout_new(tide_chain *c)
{
    if (c->npool == TIDE_CHAIN_POOL)
        return NULL;
    tide_layout l = calloc((size_t)c->P, sizeof(tide_box));
    if (l)
        c->pool[c->npool++] = l;
    return l;
}

void tide_chain_free(tide_chain *c)
{
    for (int i = 0; i < c->npool; i++)
        free(c->pool[i]);
    c->npool = 0;
}

static int box_empty(const tide_box *b) { return tide_box_count(b) == 0; }

int tide_layout_same(int P, const tide_layout a, const tide_layout b)
{
    for (int r = 0; r < P; r++)
        if (!(box_empty(&a[r]) && box_empty(&b[r])) && !tide_box_equal(&a[r], &b[r]))
            return 0;
    return 1;
}

/* Every non-empty box of l (on grid g) holds whole lines along stage s's dimensions, stored
 * as the stage's op can take them. */
static int holds_lines(const tide_chain *c, const tide_layout l, int s, const int g[3])
{
    const tide_stage *st = &c->stage[s];
    for (int r = 0; r < c->P; r++) {
        if (box_empty(&l[r]))
            continue;
        for (int d = 0; d < 3; d++)
            if ((st->whole & (1 << d)) && (l[r].lo[d] != 0 || l[r].hi[d] != g[d]))
                return 0;
        if (st->gpu_real && l[r].order[2] != st->resize_dim)
            return 0;
        for (int k = 1; st->gpu_real && k < 3; k++)
            if (!(st->whole & (1 << l[r].order[k])) && (st->whole & (1 << l[r].order[k - 1])))
                return 0; /* an untransformed dimension stored faster than a transformed one */
    }
    return 1;
}

/* The same boxes on a grid whose dimension d has length len: boxes whole along d stay whole,
 * empty ones stay empty. */
static tide_layout regrid(tide_chain *c, const tide_layout l, int d, int len)
{
    tide_layout t = tide_layout_new(c);
    if (!t)
        return NULL;
    for (int r = 0; r < c->P; r++) {
        t[r] = l[r];
        if (!box_empty(&l[r]) || l[r].lo[d] == 0) {
            t[r].lo[d] = 0;
            t[r].hi[d] = box_empty(&l[r]) && l[r].hi[d] == 0 ? 0 : len;
        } else {
            t[r].lo[d] = t[r].hi[d] = l[r].lo[d] < len ? l[r].lo[d] : len;
        }
    }
    return t;
}

/* l after (dir > 0) or before (dir < 0) stage s's resize; l itself when it has none. */
static tide_layout across(tide_chain *c, const tide_layout l, int s, int dir)
{
    const tide_stage *st = &c->stage[s];
    if (st->resize_dim < 0)
        return l;
    int d = st->resize_dim;
    return regrid(c, l, d, dir > 0 ? c->grid[s + 1][d] : c->grid[s][d]);
}

int tide_chain_build(tide_chain *c, const int n[3], tide_layout in, tide_layout out)
{
    memcpy(c->grid[0], n, sizeof c->grid[0]);
    for (int s = 0; s < c->nstages; s++) {
        memcpy(c->grid[s + 1], c->grid[s], sizeof c->grid[s]);
        if (c->stage[s].resize_dim >= 0)
            c->grid[s + 1][c->stage[s].resize_dim] = c->stage[s].resize_to;
    }
    tide_layout cur = in;
    c->exchanges = 0;
    for (int s = 0; s < c->nstages; s++) {
        int last = s == c->nstages - 1;
        tide_layout a;
        if (holds_lines(c, cur, s, c->grid[s]))
            a = cur;
        else if (last && out && holds_lines(c, out, s, c->grid[s + 1]))
            a = across(c, out, s, -1);
        else
            a = c->deflt(c, s, c->grid[s]);
        if (!a)
            return TIDE_ERR_NOMEM;
        c->exchanges += !tide_layout_same(c->P, cur, a);
        c->A[s] = a;
        c->B[s] = across(c, a, s, +1);
        if (!c->B[s])
            return TIDE_ERR_NOMEM;
        cur = c->B[s];
    }
    c->in = in;
    c->out = out ? out : cur;
    c->exchanges += !tide_layout_same(c->P, cur, c->out);
    return TIDE_SUCCESS;
}

int tide_chain_steps(const tide_chain *c, int reverse, tide_chain_step *steps)
{
    int ns = 0, S = c->nstages;
    tide_layout cur = reverse ? c->out : c->in;
    int g = reverse ? S : 0;
    for (int k = 0; k < S; k++) {
        int s = reverse ? S - 1 - k : k;
        tide_layout from = reverse ? c->B[s] : c->A[s], to = reverse ? c->A[s] : c->B[s];
        if (!tide_layout_same(c->P, cur, from))
            steps[ns++] = (tide_chain_step){-1, cur, from, g, g};
        int g2 = reverse ? s : s + 1;
        steps[ns++] = (tide_chain_step){s, from, to, g, g2};
        cur = to;
        g = g2;
    }
    tide_layout end = reverse ? c->in : c->out;
    if (!tide_layout_same(c->P, cur, end))
        steps[ns++] = (tide_chain_step){-1, cur, end, g, g};
    return ns;
}
