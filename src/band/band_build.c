/*
 * band_build.c: what a band plan holds (band_plan.h). The steps per pass k come first (the
 * option, or the backend's choice: the same on every rank, since they agreed on the backend,
 * precision and bandwidths); then each rank's rows grown by k kl rows above and k ku below,
 * clipped to the matrix (the redundant ghost rows of Jin 2014: one exchange per k steps); the
 * halo exchange that fills them (comm/halo.h, on the n x 1 x 1 grid of rows); the matrix on
 * the grown rows, the caller's diagonals copied in and the rows of the halo's filled by one
 * exchange of the same kind on the n x (kl + ku + 1) x 1 grid of (row, diagonal) entries,
 * stored with the rows fastest: diagonal-major, as the caller gives them; the passes' two
 * arrays; and the pass program. Out of card (host x, option slab_rows or some rank's arrays
 * beyond its GPU's budget: agreed, so every rank's halo moves the same way) the grown rows
 * stream through the backend's memory in slabs instead (band_streamed.h), x's grown rows kept
 * in host memory between passes and their halo exchanged there.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "band/band_plan.h"

/* Collective: whether every rank is fine so far (a failed MPI call counts as not). */
static int all_fine(tide_context *ctx, int st)
{
    int ok = !st, all = 0;
    if (MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, ctx->comm) != MPI_SUCCESS)
        return 0;
    return all;
}

/* Rank r's rows grown by the halo of k steps, as a box of the grid of rows times `width`
 * entries (rows fastest); an empty range stays empty. */
static tide_box grown(const tide_band_plan *p, const int *rows, int k, int width)
{
    int lo = rows[0], hi = rows[1];
    if (hi > lo) {
        lo = lo - k * p->o.kl < 0 ? 0 : lo - k * p->o.kl;
        hi = hi + k * p->o.ku > p->n ? p->n : hi + k * p->o.ku;
    }
    return (tide_box){{lo, 0, 0}, {hi, width, 1}, {2, 1, 0}};
}

/* A halo of every rank's rows (k 0: the rows themselves) by k steps, `width` entries per row.
 * Local. */
static int make_halo(const tide_band_plan *p, const int (*every)[2], int k, int width,
                     int device, tide_exchange how, tide_halo **h, char *err, size_t len)
{
    int P = p->ctx->nranks;
    tide_box *b = malloc(2 * sizeof *b * (size_t)P);
    if (!b)
        return snprintf(err, len, "out of memory for the halo"), TIDE_ERR_NOMEM;
    for (int r = 0; r < P; r++) {
        b[r] = grown(p, every[r], 0, width);
        b[P + r] = grown(p, every[r], k, width);
    }
    int g[3] = {p->n, width, 1}, periodic[3] = {0, 0, 0};
    int st = tide_halo_create(p->ctx->comm, g, periodic, b, b + P, tide_band_elem(p),
                              p->env.threads, how, device, h, err, len);
    free(b);
    return st;
}

/* The grown rows of A in host memory (*hd, malloc'd): the caller's diagonals in this rank's
 * rows, the rest from their owners (on several ranks). Collective (st: the status so far);
 * returns this rank's status, with *hd left NULL where another rank failed. */
static int matrix_rows(tide_band_plan *p, const int (*every)[2], const void *diagonals,
                       void **hd, int st, char *err, size_t len)
{
    int W = p->o.kl + p->o.ku + 1, rows = p->hi - p->lo, grown_rows = p->ehi - p->elo;
    size_t elem = tide_band_elem(p);
    tide_halo *h = NULL;
    char *a = st ? NULL : malloc((size_t)W * (size_t)grown_rows * elem + 1);
    if (!st && !a)
        st = TIDE_ERR_NOMEM, snprintf(err, len, "out of memory for the matrix's rows");
    for (int d = 0; a && rows > 0 && d < W; d++) /* a rank without rows may have no diagonals */
        memcpy(a + ((size_t)d * grown_rows + (size_t)(p->lo - p->elo)) * elem,
               (const char *)diagonals + (size_t)d * rows * elem, (size_t)rows * elem);
    if (p->ctx->nranks > 1) {
        if (!st)
            st = make_halo(p, every, p->steps_per_pass, W, 0, TIDE_EXCHANGE_P2P, &h, err, len);
        if (all_fine(p->ctx, st)) {
            st = tide_halo_run(h, a, NULL, NULL, TIDE_HALO_ALL);
            if (st)
                snprintf(err, len, "the exchange of the matrix's halo rows failed");
        } else if (!st) {
            free(a), a = NULL;
        }
    }
    tide_halo_destroy(h);
    if (st || !a)
        free(a);
    else
        *hd = a;
    return st;
}

/* The arrays and the matrix in the backend's memory (local). */
static int backend_memory(tide_band_plan *p, const void *hd, char *err, size_t len)
{
    const tide_env *e = &p->env;
    size_t elem = tide_band_elem(p), grown_rows = (size_t)(p->ehi - p->elo);
    size_t bytes = grown_rows * elem, dbytes = bytes * (size_t)(p->o.kl + p->o.ku + 1);
    if (e->be->gpu && 2 * bytes + dbytes > p->ctx->dev.budget_bytes) /* device x */
        return snprintf(err, len, "the plan needs %.3g GB of device memory on GPU %d, more than "
                        "the context's budget of %.3g GB (band plans on device arrays run in "
                        "card)", (2 * bytes + dbytes) / 1e9, p->ctx->dev.device,
                        p->ctx->dev.budget_bytes / 1e9), TIDE_ERR_NOMEM;
    if (e->be->alloc(bytes + elem, &p->ea) || e->be->alloc(bytes + elem, &p->eb) ||
        e->be->alloc(dbytes + elem, &p->diag))
        return snprintf(err, len, "out of %s memory for the plan's arrays (%zu bytes)",
                        e->be->gpu ? "device" : "host", 2 * bytes + dbytes), TIDE_ERR_NOMEM;
    int st = dbytes ? e->be->copy(e, p->diag, hd, dbytes) : TIDE_SUCCESS;
    st = st ? st : e->be->sync(e);
    if (st)
        return snprintf(err, len, "copying the matrix: %s", e->be->last_error()), st;
    return TIDE_SUCCESS;
}

/* Collective: whether the passes stream through the backend's memory in slabs (tide_band.h:
 * host x, and option slab_rows or some rank's arrays beyond its GPU's budget), agreed with an
 * allreduce so that no rank streams while another runs in card (their halos would move
 * differently: host memory by MPI against device staging). */
static int agree_out_of_card(tide_band_plan *p, char *err, size_t len)
{
    size_t elem = tide_band_elem(p), rows = (size_t)(p->ehi - p->elo);
    size_t in_card = rows * elem * (size_t)(3 + p->o.kl + p->o.ku);
    int mine = p->o.location == TIDE_LOCATION_HOST &&
               (p->o.slab_rows > 0 || (p->env.be->gpu && in_card > p->ctx->dev.budget_bytes));
    if (MPI_Allreduce(&mine, &p->out_of_card, 1, MPI_INT, MPI_MAX, p->ctx->comm) != MPI_SUCCESS)
        return snprintf(err, len, "MPI_Allreduce failed"), TIDE_ERR_MPI;
    return TIDE_SUCCESS;
}

/* The slabs over the grown rows: their rows (the option, or as many as the budget holds), their
 * runner; the plan keeps the host matrix for them to stream from (*hd, set to NULL, or its
 * pinned copy), and on several ranks an array of x's grown rows. A rank without rows holds no
 * slabs. Local. */
static int build_slabs(tide_band_plan *p, void **hd, char *err, size_t len)
{
    size_t elem = tide_band_elem(p);
    int kl = p->o.kl, ku = p->o.ku, k = p->steps_per_pass, rows = p->ehi - p->elo;
    if (p->halo && !(p->host_x = malloc((size_t)rows * elem + elem)))
        return snprintf(err, len, "out of memory for x's grown rows"), TIDE_ERR_NOMEM;
    if (rows == 0)
        return TIDE_SUCCESS;
    tide_band_streamed_desc d = {.n = rows, .kl = kl, .ku = ku, .k = k,
                                 .dbl = p->o.precision == TIDE_DOUBLE, .matrix = *hd};
    if (p->o.slab_rows > 0) {
        d.slab = p->o.slab_rows < rows ? p->o.slab_rows : rows;
    } else if (!(d.slab = tide_band_streamed_rows(&d, p->ctx->dev.budget_bytes))) {
        return snprintf(err, len, "the device budget of %.3g GB holds no slab of %d steps "
                        "per pass with kl %d and ku %d", p->ctx->dev.budget_bytes / 1e9, k,
                        kl, ku), TIDE_ERR_NOMEM;
    }
    /* On a GPU the matrix is copied into pinned memory, so that its slabs go up as direct
     * copies: a pageable array is packed into the runner's pinned staging by the CPU, at the
     * host's copy rate, below PCIe's. Where pinned memory cannot be had the pageable one
     * serves. */
    size_t bytes = (size_t)rows * elem * (size_t)(kl + ku + 1);
    if (p->env.be->gpu && !p->env.be->host_alloc(bytes, &p->host_matrix)) {
        memcpy(p->host_matrix, *hd, bytes);
        p->matrix_pinned = 1;
        d.matrix = p->host_matrix;
    } else {
        p->host_matrix = *hd, *hd = NULL;
    }
    int st = tide_band_streamed_create(&p->env, &d, &p->pass, &p->streamed, err, len);
    if (st)
        return st;
    p->slab = d.slab;
    return TIDE_SUCCESS;
}

/* The pass program: the halo exchange (several ranks), then the pass (rows to compute; out of
 * card the slabs' pass, which band_run.c runs after the program). */
static void make_program(tide_band_plan *p)
{
    tide_op op = {0};
    if (p->halo) {
        tide_op_halo(&op, p->halo, &p->tally);
        op.src = op.dst = TIDE_LOC_IN;
        p->prog.ops[p->prog.nops++] = op;
    }
    if (p->hi > p->lo && !p->out_of_card) {
        op = p->band_op;
        op.src = TIDE_LOC_IN, op.dst = TIDE_LOC_OUT;
        p->prog.ops[p->prog.nops++] = op;
    }
}

/* Whether x's halo lies in device memory: on the GPU in card. */
static int halo_on_device(const tide_band_plan *p)
{
    return p->env.be->gpu && !p->out_of_card;
}

/* How x's halo moves: in host memory over MPI; in device memory by MPI on the device staging
 * where every rank's MPI library takes device pointers, else through pinned host staging. */
static tide_exchange halo_how(const tide_band_plan *p)
{
    return halo_on_device(p) && p->ctx->cuda_aware_mpi ? TIDE_EXCHANGE_CUDA_MPI
                                                       : TIDE_EXCHANGE_P2P;
}

int tide_band_build(tide_context *ctx, tide_band_plan *p, const int (*every)[2],
                    const void *diagonals, int st, char *err, size_t len)
{
    const tide_env *e = p ? &p->env : NULL;
    if (!st) {
        p->pass = (tide_band_pass){.dbl = p->o.precision == TIDE_DOUBLE, .kl = p->o.kl,
                                   .ku = p->o.ku};
        st = e->be->band_create(e, &p->pass, p->o.steps_per_pass, err, len);
    }
    if (!all_fine(ctx, st)) /* collective: every rank, whatever its status */
        return st; /* this rank's; the caller agrees on the first failure */
    p->steps_per_pass = p->pass.max_steps;
    int mine[2] = {p->lo, p->hi};
    tide_box g = grown(p, mine, p->steps_per_pass, 1);
    p->elo = g.lo[0], p->ehi = g.hi[0];
    p->pass.rows = p->ehi - p->elo;
    p->pass.out_lo = p->lo - p->elo, p->pass.out_hi = p->hi - p->elo;
    st = agree_out_of_card(p, err, len);
    if (!st && p->ctx->nranks > 1)
        st = make_halo(p, every, p->steps_per_pass, 1, halo_on_device(p), halo_how(p), &p->halo,
                       err, len);
    void *hd = NULL;
    st = matrix_rows(p, every, diagonals, &hd, st, err, len);
    if (!st && hd)
        st = p->out_of_card ? build_slabs(p, &hd, err, len) : backend_memory(p, hd, err, len);
    free(hd);
    p->pass.diag = p->diag;
    tide_band_op(&p->band_op, &p->pass, p->steps_per_pass);
    make_program(p);
    return st;
}
