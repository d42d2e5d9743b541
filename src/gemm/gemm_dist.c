/*
 * gemm_dist.c: the distributed matrix multiply, SUMMA (see gemm_dist.h). The k dimension is
 * cut where A's column blocks (over the process columns) or B's row blocks (over the process
 * rows) change owner, and at most `panel` wide in between, so each panel has one owner of
 * each kind. For each panel: the owner column sends its columns of op(A) (its block's rows)
 * to the other ranks of its process row, the owner row its rows of op(B) along its process
 * column, and every rank multiplies the two into its block of C (beta at the first panel,
 * then 1), the next panel's moves under way meanwhile (two buffer pairs). Each move is an
 * exchange of the one exchange layer (comm/exchange.h), made at creation for every panel: the
 * owner's panel is one piece, a region of its block, sent to each other rank (packed once
 * where it is not contiguous: columns of a block whose leading dimension is its row count go
 * straight from it), the others receive it densely into the pair's buffer; an owner's update
 * reads its panel in place in its block. A process row or column of one rank moves nothing.
 * An update that runs on threads of its own (the out-of-card multiply through the GPU) leaves
 * this thread completing the next panel's moves, which drives them while the GPU works. A
 * transposed operand's block is stored transposed: its panel moves as stored (rows of A^T's
 * storage, columns of B^T's) and the local multiply reads it transposed. Every rank takes
 * part in every move whatever failed (the exchange's failure rule), empty blocks included.
 *
 * The multiply is a program of ops run by the plan core's executor (plan/program.h): the
 * moves' halves, START and FINISH of both moves of a panel, are collective ops of this file's
 * classes, and the update is the core's multiply op (or, on threads of its own, a begin op and
 * an end op that waits for it). A program `first` starts panel 0's moves; then a pass program
 * runs once per panel, the panel's operands bound before it: [finish, start next, update], or
 * with the update on threads of its own [begin, start next, finish next, end]. After a failure
 * the executor skips the updates and still runs every move (and the end of an update begun),
 * so every rank takes part in every move and returns the first failure.
 *
 * Blocks in device memory (desc's device): the moves go through the pinned host panels (an
 * MPI library not handed device memory): the owner's panel is packed on the device into the
 * pair's device panel, copied down and sent as the move starts; the others receive it in host
 * memory and copy it up into the pair's device panel when it completes, before the update,
 * which the backend runs on the plan's stream (cuBLAS). With desc's cuda_mpi (the MPI library
 * takes device pointers) the same moves send from and receive into the pair's device panels
 * themselves: no host panels, no copies. A pair's buffers are reused two panels later, after
 * the stream has finished with them (the move's start waits for it).
 *
 * Device blocks where every rank has a GPU of its own (desc's nccl): the panels move GPU to
 * GPU over NCCL instead, on a stream of their own (bstream) so that panel i + 1's move overlaps
 * panel i's update on the plan's stream. Events order the two streams: a pair's move waits for
 * the update that last read it (done, recorded on the plan's stream as the move starts), a
 * pair's update for its move (landed, waited for as the move finishes). No host panels, no
 * host synchronization between panels.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "gemm/gemm_dist.h"
#include "backend/memory.h"
#include "plan/program.h"
#include "comm/exchange.h"
#include "comm/transport.h"

/* Panel i of k: [k0, k1), the process column owning op(A)'s columns there, the process row
 * owning op(B)'s rows. */
typedef struct {
    long long k0, k1;
    int pc, pr;
} panel_t;

struct tide_gemm_dist {
    tide_gemm_dist_desc d;
    size_t elem;
    long long rows[2], cols[2]; /* this rank's rows of A and C, and columns of B and C */
    long long ka[2], kb[2];     /* its columns of A (of k), and rows of B (of k) */
    int *peer[2];               /* the context ranks of this rank's process row, by column
                                 * (op(A)'s panels), and of its column, by row (op(B)'s) */
    int panels;                 /* of k */
    panel_t *panel;             /* ... in order */
    tide_xchg **move;           /* [2 i + x]: panel i of op(A) (x 0) or op(B) (x 1) moved from
                                 * its owner to the other ranks of its process row (column) */
    void *pa[2], *pb[2];        /* two panels of op(A) (rows x panel), of op(B) (panel x cols),
                                 * pinned where the backend has pinned memory: what the moves
                                 * receive into or pack in (device blocks: through) */
    void *da[2], *db[2];        /* device blocks: the same panels in device memory */
    size_t panel_bytes;         /* all four (host, none over NCCL), and as much on the device
                                 * when device */
    struct {
        const void *at;
        long long ld;
    } use[2][2];                /* where the update of each pair reads op(A)'s and op(B)'s
                                 * panels: in place in the owner's block, or the pair's buffer */
    tide_xchg_io io[2][2];      /* the moves of the panels in each pair: their arrays, */
    tide_box box[2][2];         /* ... the owners' block layouts, */
    tide_parts into[2][2];      /* ... the pair's buffers as the others receive into them, */
    int started[2][2];          /* ... and what their starts returned */
    int copy_failed;            /* device blocks: a copy of a panel failed (the run goes on) */
    void *bstream;              /* NCCL: the stream the panels move on */
    void *landed[2], *done[2];  /* ... pair b's panels arrived; the plan's stream is done with
                                 * pair b's last update */
    /* The program (plan/program.h) the executor runs: first before panel 0, then pass once
     * for each panel `at` (its operands bound before it). */
    tide_program first, pass;
    int at;
    struct mover {
        tide_gemm_dist *s;
        int ahead;              /* a move op's panel: the pass's (0) or the next one (1) */
    } mover[2];
    tide_gemm_operands bound;   /* panel at's update: its multiply, scalars and panels */
    const void *a, *b;          /* the run's blocks of A and B */
    char *err;                  /* where the run's own ops say why they failed */
    size_t len;
    int began;                  /* an update on threads of its own is under way */
};

void tide_gemm_block(long long n, int p, int i, long long *lo, long long *hi)
{
    *lo = n * i / p;
    *hi = n * (i + 1) / p;
}

void tide_gemm_splits(const long long *given, long long n, int p, long long *out)
{
    for (int i = 0; i <= p; i++)
        out[i] = given ? given[i] : n * i / p;
}

static long long span(const long long r[2]) { return r[1] - r[0]; }

/* The part of the p parts with boundaries split that holds index x, and where it ends. */
static int owner(const long long *split, int p, long long x, long long *end)
{
    for (int i = 0; i < p; i++)
        if (x < split[i + 1]) {
            *end = split[i + 1];
            return i;
        }
    *end = split[p];
    return p - 1;
}

/* Host memory for panels: pinned where the backend has it (uploads at full PCIe rate). */
static void *panel_alloc(const tide_env *e, size_t bytes)
{
    void *p = NULL;
    if (!e->be->host_alloc)
        return malloc(bytes);
    return e->be->host_alloc(bytes, &p) ? NULL : p;
}

static void panel_free(const tide_env *e, void *p)
{
    if (e->be->host_free)
        e->be->host_free(p);
    else
        free(p);
}

void tide_gemm_dist_destroy(tide_gemm_dist *s)
{
    if (!s)
        return;
    tide_program_destroy(&s->first, s->d.env);
    tide_program_destroy(&s->pass, s->d.env);
    for (int i = 0; s->move && i < 2 * s->panels; i++)
        tide_xchg_destroy(s->move[i]);
    free(s->move);
    free(s->panel);
    for (int i = 0; i < 2; i++) {
        panel_free(s->d.env, s->pa[i]);
        panel_free(s->d.env, s->pb[i]);
        s->d.env->be->free(s->da[i]);
        s->d.env->be->free(s->db[i]);
        free(s->peer[i]);
        if (s->landed[i])
            tide_gpu_event_destroy(s->landed[i]);
        if (s->done[i])
            tide_gpu_event_destroy(s->done[i]);
    }
    if (s->bstream)
        s->d.env->be->stream_destroy(s->bstream);
    free(s);
}

/* Collective: the context ranks of this rank's process row, by column, and of its column,
 * by row (every rank's place in the grid gathered). */
static int peers_setup(tide_gemm_dist *s, char *err, size_t len)
{
    const tide_gemm_dist_desc *d = &s->d;
    MPI_Comm comm = d->env->ctx->comm;
    int P = d->env->ctx->nranks, *at = malloc(sizeof *at * 2 * (size_t)P);
    s->peer[0] = malloc(sizeof *s->peer[0] * (size_t)d->grid[1]);
    s->peer[1] = malloc(sizeof *s->peer[1] * (size_t)d->grid[0]);
    int ok = at && s->peer[0] && s->peer[1], all = 0;
    int st = MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS ? TIDE_ERR_MPI
             : !ok                                                      ? TIDE_ERR_NOMEM
                                                                        : TIDE_SUCCESS;
    if (all && MPI_Allgather(d->me, 2, MPI_INT, at, 2, MPI_INT, comm) != MPI_SUCCESS)
        st = TIDE_ERR_MPI;
    st = st ? st : all ? TIDE_SUCCESS : TIDE_ERR_NOMEM;
    for (int r = 0; r < P && !st; r++) {
        if (at[2 * r] == d->me[0])
            s->peer[0][at[2 * r + 1]] = r;
        if (at[2 * r + 1] == d->me[1])
            s->peer[1][at[2 * r]] = r;
    }
    free(at);
    if (st)
        snprintf(err, len, st == TIDE_ERR_NOMEM ? "out of memory"
                           : "MPI could not gather the process grid");
    return st;
}

/* NCCL: the panels' stream and the events ordering it with the plan's (the reason in err). */
static int nccl_setup(tide_gemm_dist *s, char *err, size_t len)
{
    const tide_gemm_dist_desc *d = &s->d;
    int bad = 0;
    for (int i = 0; i < 2 && !bad; i++)
        bad = tide_gpu_event_create(&s->landed[i]) || tide_gpu_event_create(&s->done[i]);
    if (bad || d->env->be->stream_create(&s->bstream, 0))
        return snprintf(err, len, "%s", d->env->be->last_error()), TIDE_ERR_BACKEND;
    return TIDE_SUCCESS;
}

/* The panel that starts at k0 (one at k0 = 0 when k = 0: C = beta C still runs). */
static panel_t panel_at(const tide_gemm_dist *s, long long k0)
{
    const tide_gemm_dist_desc *d = &s->d;
    long long ea, eb;
    panel_t p = {k0, k0, owner(d->split[2], d->grid[1], k0, &ea),
                 owner(d->split[3], d->grid[0], k0, &eb)};
    p.k1 = ea < eb ? ea : eb;
    p.k1 = p.k1 < k0 + d->panel ? p.k1 : k0 + d->panel;
    return p;
}

/* The local update of a panel w wide: the dense panels as received (a transposed operand's
 * as stored), into this rank's block of C; the update of a pair sets the leading dimensions of
 * where it reads them. */
static tide_gemm_desc panel_desc(const tide_gemm_dist *s, long long w)
{
    const tide_gemm_dist_desc *d = &s->d;
    long long m = span(s->rows), n = span(s->cols), la = d->transa ? w : m,
              lb = d->transb ? n : w;
    return (tide_gemm_desc){d->dbl, d->cplx, d->transa, d->transb, m, n, w, la > 1 ? la : 1,
                            lb > 1 ? lb : 1, d->ldc};
}

size_t tide_gemm_dist_panel_bytes(const tide_gemm_dist *s, int on_device)
{
    int no_host = s->d.device && (s->d.nccl || s->d.cuda_mpi);
    return on_device ? (s->d.device ? s->panel_bytes : 0) : no_host ? 0 : s->panel_bytes;
}

tide_gemm_desc tide_gemm_dist_local(const tide_gemm_dist *s, int *panels)
{
    long long widest = 0;
    for (int i = 0; i < s->panels; i++)
        if (s->panel[i].k1 - s->panel[i].k0 > widest)
            widest = s->panel[i].k1 - s->panel[i].k0;
    *panels = s->panels;
    return panel_desc(s, widest);
}

/* Where panel p's operand x lies in its owner's block: rows x cols as stored (a transposed
 * operand's block stored transposed), from stored row r0 and column c0, in a block of ncols
 * columns and leading dimension ld. */
typedef struct {
    long long rows, cols, r0, c0, ncols, ld;
} stored;

static stored panel_stored(const tide_gemm_dist *s, const panel_t *p, int x)
{
    const tide_gemm_dist_desc *d = &s->d;
    long long w = p->k1 - p->k0;
    if (x == 0) { /* op(A)'s columns k0..k1 (m x w), or A^T's rows of each column (w x m) */
        long long m = span(s->rows), ra = p->k0 - s->ka[0], nk = span(s->ka);
        return d->transa ? (stored){w, m, ra, 0, m, d->lda} : (stored){m, w, 0, ra, nk, d->lda};
    } /* op(B)'s rows k0..k1 of each column (w x n), or B^T's columns (n x w) */
    long long n = span(s->cols), rb = p->k0 - s->kb[0], nk = span(s->kb);
    return d->transb ? (stored){n, w, 0, rb, nk, d->ldb} : (stored){w, n, rb, 0, n, d->ldb};
}

/* A column-major block as a layout (region.h): columns along dimension 1, rows along 2. */
static tide_box block_box(long long ncols, long long ld)
{
    return (tide_box){{0, 0, 0}, {1, (int)ncols, (int)ld}, {0, 1, 2}};
}

/* The move of panel p's operand x: its owner sends it, a region of its block, to every other
 * rank of its process row (x 0) or column (x 1), which receive it dense (rows x cols). */
static int make_move(const tide_gemm_dist *s, const panel_t *p, int x, tide_xchg **out,
                     char *err, size_t len)
{
    const tide_gemm_dist_desc *d = &s->d;
    stored g = panel_stored(s, p, x);
    int ranks = x ? d->grid[0] : d->grid[1], me = x ? d->me[0] : d->me[1];
    int root = x ? p->pr : p->pc;
    tide_box box = block_box(g.ncols, g.ld);
    tide_box at = {{0, (int)g.c0, (int)g.r0}, {1, (int)(g.c0 + g.cols), (int)(g.r0 + g.rows)},
                   {0, 1, 2}};
    tide_box dense = {{0, 0, 0}, {1, (int)g.cols, (int)g.rows}, {0, 1, 2}};
    tide_xchg_list *l = tide_xchg_list_new();
    int st = l ? TIDE_SUCCESS : TIDE_ERR_NOMEM;
    for (int q = 0; q < ranks && !st && g.rows * g.cols > 0; q++)
        if (me == root && q != root)
            st = tide_xchg_add(l, TIDE_XCHG_SEND, s->peer[x][q], &at, at.order);
        else if (me != root && q == root)
            st = tide_xchg_add(l, TIDE_XCHG_RECV, s->peer[x][q], &dense, dense.order);
    if (st) {
        tide_xchg_list_free(l);
        return snprintf(err, len, "out of memory"), st;
    }
    tide_xchg_desc xd = {.comm = d->env->ctx->comm, .elem = s->elem, .fields = 1,
                         .how = d->nccl       ? TIDE_EXCHANGE_NCCL
                                : d->cuda_mpi ? TIDE_EXCHANGE_CUDA_MPI
                                              : TIDE_EXCHANGE_P2P,
                         .device = d->device, .threads = d->env->threads, .src_box = &box,
                         .dst_box = &dense, .eager = 1};
    return tide_xchg_create(&xd, &l, out, err, len);
}

/* The panels of k and every panel's two moves (local). */
static int make_moves(tide_gemm_dist *s, char *err, size_t len)
{
    for (panel_t p = panel_at(s, 0);; p = panel_at(s, p.k1)) {
        s->panels++;
        if (p.k1 >= s->d.k)
            break;
    }
    s->panel = malloc(sizeof *s->panel * (size_t)s->panels);
    s->move = calloc(2 * (size_t)s->panels, sizeof *s->move);
    if (!s->panel || !s->move)
        return snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM;
    s->panel[0] = panel_at(s, 0);
    for (int i = 1; i < s->panels; i++)
        s->panel[i] = panel_at(s, s->panel[i - 1].k1);
    int st = TIDE_SUCCESS;
    for (int i = 0; i < s->panels && !st; i++)
        for (int x = 0; x < 2 && !st; x++)
            st = make_move(s, &s->panel[i], x, &s->move[2 * i + x], err, len);
    return st;
}

/* Panel i's operand x moved into buffer pair b: where the update reads it (the owner in its
 * block, the others in the pair's buffer) and the arrays of its move. */
static tide_xchg_io panel_io(tide_gemm_dist *s, const panel_t *p, int b, int x,
                             const void *block)
{
    const tide_gemm_dist_desc *d = &s->d;
    stored g = panel_stored(s, p, x);
    int mine = (x ? d->me[0] : d->me[1]) == (x ? p->pr : p->pc);
    void *host = x ? s->pb[b] : s->pa[b], *dev = x ? s->db[b] : s->da[b];
    void *buf = d->device ? dev : host;
    s->use[b][x].at = mine ? (block ? (const char *)block +
                                          s->elem * (size_t)(g.c0 * g.ld + g.r0) : NULL)
                           : buf;
    s->use[b][x].ld = mine ? g.ld : g.rows > 1 ? g.rows : 1;
    static const tide_box none = {{0, 0, 0}, {0, 0, 0}, {0, 1, 2}};
    tide_box box = block ? block_box(g.ncols, g.ld) : none;
    tide_box dense = {{0, 0, 0}, {1, (int)g.cols, (int)g.rows}, {0, 1, 2}};
    s->box[b][x] = box;
    s->into[b][x] = (tide_parts){1, {dense}, {buf}};
    /* the others receive straight into the pair's buffer; device blocks over MPI into the
     * device staging, which is that buffer */
    int into = !d->device || d->nccl;
    return (tide_xchg_io){.src = block, .src_box = &s->box[b][x],
                          .dst = into ? &s->into[b][x] : NULL, .send = buf, .recv = buf,
                          .hsend = host, .hrecv = host, .nccl = d->nccl,
                          .stream = d->nccl ? s->bstream : d->env->stream};
}

/* The moves of panel i into its buffer pair b = i % 2 start (last read by the update two
 * panels back, ended by then; device blocks: over MPI that update is waited for by the moves'
 * packs on the plan's stream; over NCCL the panels' stream waits for the plan's stream, where
 * that update is the last work enqueued); the failure so far given (status: they take part
 * without moving data). */
static int start_panel(tide_gemm_dist *s, int i, int status)
{
    const tide_gemm_dist_desc *d = &s->d;
    int st = status, b = i % 2;
    if (d->nccl)
        s->copy_failed |= tide_gpu_event_record(s->done[b], d->env->stream) != 0 ||
                          tide_gpu_stream_wait(s->bstream, s->done[b]) != 0;
    for (int x = 0; x < 2; x++) {
        s->io[b][x] = panel_io(s, &s->panel[i], b, x, x ? s->b : s->a);
        int y = tide_xchg_start(s->move[2 * i + x], &s->io[b][x], status);
        s->started[b][x] = y;
        st = st ? st : y;
    }
    if (d->nccl)
        s->copy_failed |= tide_gpu_event_record(s->landed[b], s->bstream) != 0;
    return st;
}

/* The moves of panel i in pair b completed (device blocks over MPI: copied up and unpacked on
 * the plan's stream, before the update; over NCCL the plan's stream waits for them there). */
static int finish_panel(tide_gemm_dist *s, int i)
{
    int st = TIDE_SUCCESS, b = i % 2;
    for (int x = 0; x < 2; x++) {
        int y = tide_xchg_finish(s->move[2 * i + x], &s->io[b][x], s->started[b][x]);
        st = st ? st : y;
    }
    if (s->d.nccl)
        s->copy_failed |= tide_gpu_stream_wait(s->d.env->stream, s->landed[b]) != 0;
    return st;
}

/* ---- SUMMA's ops and its program ------------------------------------------------------- */

static void nothing(tide_op *op, const tide_env *e) { (void)op, (void)e; }

/* A move op's panel this pass (op->state: its mover), or -1 past the last panel. */
static int moving(const tide_op *op)
{
    const struct mover *m = op->state;
    int i = m->s->at + m->ahead;
    return i < m->s->panels ? i : -1;
}

/* A move's result, with the reason in the run's err where it failed of itself (failed: the
 * failure it was given). */
static int moved(tide_gemm_dist *s, int failed, int st)
{
    if (!st || failed)
        return st;
    if (st == TIDE_ERR_MPI)
        snprintf(s->err, s->len, "a panel's move between the ranks failed");
    else
        snprintf(s->err, s->len, "a panel's %s failed: %s", s->d.nccl ? "move over NCCL"
                 : s->d.cuda_mpi ? "pack on the device" : "copy between device and host memory",
                 s->d.env->be->last_error());
    return st;
}

static int start_execute(const tide_op *op, const tide_env *e, void *src, void *dst)
{
    (void)src, (void)dst;
    tide_gemm_dist *s = ((const struct mover *)op->state)->s;
    int i = moving(op);
    return i < 0 ? TIDE_SUCCESS : moved(s, e->failed, start_panel(s, i, e->failed));
}

static int finish_execute(const tide_op *op, const tide_env *e, void *src, void *dst)
{
    (void)src, (void)dst;
    tide_gemm_dist *s = ((const struct mover *)op->state)->s;
    int i = moving(op);
    return i < 0 ? TIDE_SUCCESS : moved(s, e->failed, finish_panel(s, i));
}

static const tide_op_class start_class = {start_execute, nothing, 1, 0, NULL};
static const tide_op_class finish_class = {finish_execute, nothing, 1, 0, NULL};

/* An update on threads of its own (desc's update): begun with panel at's operands into C
 * (the destination), then waited for; the wait runs after a failure too where it began. */
static int begin_execute(const tide_op *op, const tide_env *e, void *src, void *dst)
{
    (void)e, (void)src;
    tide_gemm_dist *s = op->state;
    const tide_gemm_update *u = &s->d.update;
    const tide_gemm_operands *x = &s->bound;
    int st = u->begin(u->user, &x->g, s->at == 0, s->at == s->panels - 1, x->alpha, x->a,
                      x->b, x->beta, dst, s->err, s->len);
    s->began = !st;
    return st;
}

static int end_execute(const tide_op *op, const tide_env *e, void *src, void *dst)
{
    (void)src, (void)dst;
    tide_gemm_dist *s = op->state;
    char why[TIDE_MSG_LEN]; /* an earlier failure keeps its reason */
    if (!s->began)
        return TIDE_SUCCESS;
    s->began = 0;
    return s->d.update.end(s->d.update.user, e->failed ? why : s->err,
                           e->failed ? sizeof why : s->len);
}

static const tide_op_class begin_class = {begin_execute, nothing, 0, 0, NULL};
static const tide_op_class end_class = {end_execute, nothing, 0, 1, NULL};

/* Adds an op of class cls on state to prog, in place in C (the program's output). */
static void add(tide_program *prog, const tide_op_class *cls, tide_op_kind kind, void *state,
                const char *what)
{
    tide_op *o = &prog->ops[prog->nops++];
    memset(o, 0, sizeof *o);
    o->cls = cls;
    o->kind = kind;
    o->state = state;
    o->in_place_ok = 1;
    o->src = o->dst = TIDE_LOC_OUT;
    snprintf(o->what, sizeof o->what, "%s", what);
}

/* first: [start] with the update on this thread, which goes after the next panel's moves have
 * started and before they complete (as far as the MPI library progresses them meanwhile), so
 * a pass is [finish, start next, update]; an update on threads of its own is begun before the
 * next panel's moves start (the GPU need not wait) and this thread completes them while it
 * runs: first [start, finish], a pass [begin, start next, finish next, end]. */
static void make_programs(tide_gemm_dist *s)
{
    for (int x = 0; x < 2; x++)
        s->mover[x] = (struct mover){s, x};
    add(&s->first, &start_class, TIDE_OP_EXCHANGE, &s->mover[0], "panel moves start");
    if (s->d.update.begin) {
        add(&s->first, &finish_class, TIDE_OP_EXCHANGE, &s->mover[0], "panel moves finish");
        add(&s->pass, &begin_class, TIDE_OP_GEMM, s, "panel update begin");
        add(&s->pass, &start_class, TIDE_OP_EXCHANGE, &s->mover[1], "next panel moves start");
        add(&s->pass, &finish_class, TIDE_OP_EXCHANGE, &s->mover[1], "next panel moves finish");
        add(&s->pass, &end_class, TIDE_OP_GEMM, s, "panel update end");
        return;
    }
    int n;
    tide_gemm_desc g = tide_gemm_dist_local(s, &n);
    add(&s->pass, &finish_class, TIDE_OP_EXCHANGE, &s->mover[0], "panel moves finish");
    add(&s->pass, &start_class, TIDE_OP_EXCHANGE, &s->mover[1], "next panel moves start");
    tide_op *u = &s->pass.ops[s->pass.nops++];
    memset(u, 0, sizeof *u);
    tide_op_gemm(u, s->d.blas, &g, &s->bound);
    u->src = u->dst = TIDE_LOC_OUT;
}

int tide_gemm_dist_create(const tide_gemm_dist_desc *d, tide_gemm_dist **out, char *err,
                          size_t len)
{
    *out = NULL;
    tide_gemm_dist *s = calloc(1, sizeof *s);
    if (!s)
        return snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM;
    s->d = *d;
    s->elem = tide_gemm_elem(&(tide_gemm_desc){.dbl = d->dbl, .cplx = d->cplx});
    long long *mine[4] = {s->rows, s->cols, s->ka, s->kb};
    for (int x = 0; x < 4; x++) {
        int at = d->me[tide_gemm_split_dim(x)];
        mine[x][0] = d->split[x][at], mine[x][1] = d->split[x][at + 1];
    }
    int st = peers_setup(s, err, len);
    if (!st && d->nccl)
        st = nccl_setup(s, err, len);
    if (!st)
        st = make_moves(s, err, len);
    if (st) {
        tide_gemm_dist_destroy(s);
        return st;
    }
    int ok = 1;
    size_t ab = s->elem * (size_t)(span(s->rows) * s->d.panel) + 1,
           bb = s->elem * (size_t)(span(s->cols) * s->d.panel) + 1;
    for (int i = 0; i < 2; i++) {
        if (!d->nccl && !d->cuda_mpi) {
            s->pa[i] = panel_alloc(d->env, ab);
            s->pb[i] = panel_alloc(d->env, bb);
            ok = ok && s->pa[i] && s->pb[i];
        }
        if (d->device)
            ok = ok && !d->env->be->alloc(ab, &s->da[i]) && !d->env->be->alloc(bb, &s->db[i]);
    }
    s->panel_bytes = 2 * (ab + bb);
    if (!ok) {
        tide_gemm_dist_destroy(s);
        return snprintf(err, len, "cannot allocate the panel buffers"), TIDE_ERR_NOMEM;
    }
    make_programs(s);
    *out = s;
    return TIDE_SUCCESS;
}

/* Panel i's update: its multiply, where it reads the two panels (pair i % 2), the scalars
 * (beta at the first panel, then 1). */
static void bind(tide_gemm_dist *s, int i, tide_scalar alpha, tide_scalar beta)
{
    int b = i % 2;
    const panel_t *p = &s->panel[i];
    tide_gemm_operands *x = &s->bound;
    x->g = panel_desc(s, p->k1 - p->k0);
    x->g.lda = s->use[b][0].ld, x->g.ldb = s->use[b][1].ld;
    x->a = s->use[b][0].at, x->b = s->use[b][1].at;
    x->alpha = alpha;
    x->beta = i ? tide_scalar_real(1) : beta;
    s->at = i;
}

/* The program run by the executor: first, then pass once per panel, every rank through every
 * move whatever failed (the move ops are collective), so that no other rank waits for it. */
int tide_gemm_dist_execute(tide_gemm_dist *s, tide_scalar alpha, const void *a, const void *b,
                           tide_scalar beta, void *c, char *err, size_t len)
{
    const tide_gemm_dist_desc *d = &s->d;
    const tide_env *e = d->env;
    s->a = a, s->b = b, s->err = err, s->len = len;
    *err = '\0';
    s->copy_failed = 0;
    s->at = 0;
    const char *failed_at = "", *at = "";
    int st = tide_program_run(&s->first, e, NULL, NULL, c, TIDE_SUCCESS, &failed_at, NULL, 0);
    tide_progress prog; /* (device matrices: an update is only enqueued here: no lines) */
    tide_progress_begin(&prog, e->ctx, "tide_gemm_execute", "panels", d->device ? 0 : s->panels);
    for (int i = 0; i < s->panels; i++) {
        tide_progress_step(&prog, i);
        bind(s, i, alpha, beta);
        int y = tide_program_run(&s->pass, e, NULL, NULL, c, st, &at, NULL, 0);
        failed_at = st ? failed_at : at;
        st = y;
    }
    tide_progress_end(&prog);
    if (d->nccl) /* the panels' stream, and NCCL's asynchronous errors */
        s->copy_failed |=
            tide_gpu_sync(s->bstream) != 0 || tide_transport_nccl_check(d->nccl) != 0;
    if (st && !*err) /* the backend's multiply: the op says nothing itself */
        snprintf(err, len, "the local multiply %s failed: %s", failed_at, e->be->last_error());
    if (!st && s->copy_failed)
        st = moved(s, 0, TIDE_ERR_BACKEND);
    if (!st && d->device && e->be->sync(e)) /* the updates on the plan's stream */
        return snprintf(err, len, "%s", e->be->last_error()), TIDE_ERR_BACKEND;
    return st;
}
