/*
 * gemm_dist.c: the distributed matrix multiply, SUMMA (see gemm_dist.h). The k dimension is
 * cut where A's column blocks (over the process columns) or B's row blocks (over the process
 * rows) change owner, and at most `panel` wide in between, so each panel has one owner of
 * each kind. For each panel: the owner column broadcasts its columns of op(A) (its block's
 * rows) along its process row, the owner row its rows of op(B) along its process column, and
 * every rank multiplies the two into its block of C (beta at the first panel, then 1), the
 * next panel's broadcasts under way meanwhile (two buffer pairs, MPI_Ibcast). An owner's
 * update reads its panel in place in its block, and it sends the panel from there where it is
 * contiguous (columns of a block whose leading dimension is its row count), else packed; a
 * process row or column of one rank broadcasts nothing. The others receive it densely. An
 * update that runs on threads of its own (the out-of-card multiply through the GPU) leaves
 * this thread inside MPI_Waitall on those broadcasts, which drives them while the GPU works.
 * A transposed operand's block is stored transposed: its panel is sent as stored (rows of
 * A^T's storage, columns of B^T's) and the local multiply reads it transposed. Every rank
 * takes part in every broadcast, empty blocks included.
 *
 * Blocks in device memory (desc's device): the broadcasts go through the pinned host panels
 * (MPI here is not CUDA-aware): an owner packs its panel on the device where it is not
 * contiguous, copies it down and broadcasts it; the others receive it in host memory and copy
 * it up into a device panel of the pair before the update, which the backend runs on the
 * plan's stream (cuBLAS). A pair's buffers are reused two panels later, after the stream has
 * finished with them (start_panel waits for it).
 *
 * Device blocks where every rank has a GPU of its own (desc's nccl): the panels move GPU to
 * GPU over NCCL instead, on a stream of their own (bstream) so that panel i + 1's move overlaps
 * panel i's update on the plan's stream: the owner packs its panel on the device where it is
 * not contiguous and sends it to every other rank of its process row (op(A)) or column
 * (op(B)), which receive it into the pair's device panel; the two operands' sends and
 * receives form one NCCL group. Events order the two streams: a pair's move waits for the
 * update that last read it (done), a pair's update for its move (landed). No host panels, no
 * host synchronization between panels.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "gemm/gemm_dist.h"
#include "backend/memory.h"
#include "comm/transport.h"

struct tide_gemm_dist {
    tide_gemm_dist_desc d;
    size_t elem;
    long long rows[2], cols[2]; /* this rank's rows of A and C, and columns of B and C */
    long long ka[2], kb[2];     /* its columns of A (of k), and rows of B (of k) */
    MPI_Comm row, col;          /* its process row (ranked by column), and column */
    void *pa[2], *pb[2];        /* two panels of op(A) (rows x panel), of op(B) (panel x cols),
                                 * pinned where the backend has pinned memory */
    void *da[2], *db[2];        /* device blocks: the same panels in device memory */
    size_t panel_bytes;         /* all four (host, none over NCCL), and as much on the device
                                 * when device */
    struct {
        const void *at;
        long long ld;
        size_t land;            /* device blocks: bytes to copy up from the host panel */
    } use[2][2];                /* where the update of each pair reads op(A)'s and op(B)'s
                                 * panels: in place in the owner's block, or the pair's buffer */
    int copy_failed;            /* device blocks: a copy of a panel failed (the run goes on) */
    int *peer[2];               /* NCCL: the context ranks of this rank's process row, by
                                 * column (op(A)'s panels), and of its column, by row (op(B)'s) */
    void *bstream;              /* ... the stream the panels move on */
    void *landed[2], *done[2];  /* ... pair b's panels arrived; pair b's update finished */
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
    if (s->row != MPI_COMM_NULL)
        MPI_Comm_free(&s->row);
    if (s->col != MPI_COMM_NULL)
        MPI_Comm_free(&s->col);
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

/* NCCL: the context ranks of this rank's process row and column, the panels' stream and the
 * events (the reason in err). */
static int nccl_setup(tide_gemm_dist *s, char *err, size_t len)
{
    const tide_gemm_dist_desc *d = &s->d;
    MPI_Comm comm[2] = {s->row, s->col};
    int size[2] = {d->grid[1], d->grid[0]}, bad = 0;
    MPI_Group world;
    if (MPI_Comm_group(d->env->ctx->comm, &world) != MPI_SUCCESS)
        return snprintf(err, len, "MPI_Comm_group failed"), TIDE_ERR_MPI;
    for (int x = 0; x < 2 && !bad; x++) {
        int *in = malloc(sizeof *in * (size_t)size[x]);
        s->peer[x] = malloc(sizeof *s->peer[x] * (size_t)size[x]);
        MPI_Group g;
        bad = !in || !s->peer[x] ? TIDE_ERR_NOMEM
              : MPI_Comm_group(comm[x], &g) != MPI_SUCCESS ? TIDE_ERR_MPI : 0;
        for (int q = 0; !bad && q < size[x]; q++)
            in[q] = q;
        if (!bad) {
            bad = MPI_Group_translate_ranks(g, size[x], in, world, s->peer[x]) != MPI_SUCCESS
                      ? TIDE_ERR_MPI : 0;
            MPI_Group_free(&g);
        }
        free(in);
    }
    MPI_Group_free(&world);
    if (bad)
        return snprintf(err, len, bad == TIDE_ERR_NOMEM ? "out of memory"
                                  : "MPI could not name the ranks of the process grid"), bad;
    for (int i = 0; i < 2 && !bad; i++)
        bad = tide_gpu_event_create(&s->landed[i]) || tide_gpu_event_create(&s->done[i]);
    if (bad || d->env->be->stream_create(&s->bstream, 0))
        return snprintf(err, len, "%s", d->env->be->last_error()), TIDE_ERR_BACKEND;
    return TIDE_SUCCESS;
}

/* The default update: the backend's gemm entry on the plan's handle, complete on return. */
static int backend_update(void *user, const tide_gemm_desc *g, int first, int last,
                          tide_scalar alpha, const void *a, const void *b, tide_scalar beta,
                          void *c, char *err, size_t len)
{
    const tide_gemm_dist_desc *d = user;
    (void)first, (void)last;
    const tide_env *e = d->env;
    int st = e->be->gemm(e, d->blas, g, alpha, a, b, beta, c);
    if (st)
        snprintf(err, len, "the local multiply failed: %s", e->be->last_error());
    return st;
}

int tide_gemm_dist_create(const tide_gemm_dist_desc *d, tide_gemm_dist **out, char *err,
                          size_t len)
{
    *out = NULL;
    tide_gemm_dist *s = calloc(1, sizeof *s);
    if (!s)
        return snprintf(err, len, "out of memory"), TIDE_ERR_NOMEM;
    s->d = *d;
    if (!d->update.begin)
        s->d.update = (tide_gemm_update){backend_update, NULL, &s->d};
    s->row = s->col = MPI_COMM_NULL;
    s->elem = tide_gemm_elem(&(tide_gemm_desc){.dbl = d->dbl, .cplx = d->cplx});
    long long *mine[4] = {s->rows, s->cols, s->ka, s->kb};
    for (int x = 0; x < 4; x++) {
        int at = d->me[tide_gemm_split_dim(x)];
        mine[x][0] = d->split[x][at], mine[x][1] = d->split[x][at + 1];
    }
    /* a broadcast counts elements in int: panels narrow enough for the widest block */
    long long wide = span(s->rows) > span(s->cols) ? span(s->rows) : span(s->cols);
    long long most = wide ? INT_MAX / wide : INT_MAX;
    s->d.panel = d->panel < most ? d->panel : (int)most;
    MPI_Comm comm = d->env->ctx->comm;
    int st = MPI_Comm_split(comm, d->me[0], d->me[1], &s->row) != MPI_SUCCESS ||
             MPI_Comm_split(comm, d->me[1], d->me[0], &s->col) != MPI_SUCCESS;
    if (st) {
        tide_gemm_dist_destroy(s);
        return snprintf(err, len, "MPI_Comm_split failed"), TIDE_ERR_MPI;
    }
    if (d->nccl && (st = nccl_setup(s, err, len))) {
        tide_gemm_dist_destroy(s);
        return st;
    }
    int ok = 1;
    size_t ab = s->elem * (size_t)(span(s->rows) * s->d.panel) + 1,
           bb = s->elem * (size_t)(span(s->cols) * s->d.panel) + 1;
    for (int i = 0; i < 2; i++) {
        if (!d->nccl) {
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
    *out = s;
    return TIDE_SUCCESS;
}

/* Columns c0..c0 + w of a column-major block of `rows` rows (leading dimension ld) into dst,
 * densely. */
static void pack(const char *src, long long ld, long long rows, long long r0, long long c0,
                 long long w, char *dst, size_t elem)
{
    if (rows == 0 || w == 0)
        return; /* an empty block may come as NULL */
    for (long long j = 0; j < w; j++)
        memcpy(dst + elem * (size_t)(j * rows), src + elem * (size_t)((c0 + j) * ld + r0),
               elem * (size_t)rows);
}

/* Panel i of k: [k0, k1), the process column owning op(A)'s columns there, the process row
 * owning op(B)'s rows. */
typedef struct {
    long long k0, k1;
    int pc, pr;
} panel_t;

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
    return on_device ? (s->d.device ? s->panel_bytes : 0) : s->d.nccl ? 0 : s->panel_bytes;
}

tide_gemm_desc tide_gemm_dist_local(const tide_gemm_dist *s, int *panels)
{
    long long widest = 0;
    *panels = 0;
    for (panel_t p = panel_at(s, 0);; p = panel_at(s, p.k1)) {
        ++*panels;
        widest = p.k1 - p.k0 > widest ? p.k1 - p.k0 : widest;
        if (p.k1 >= s->d.k)
            break;
    }
    return panel_desc(s, widest);
}

/* Columns 0..cols of a column-major block at `at` (rows used, leading dimension ld) densely
 * into dst, both in device memory. */
static int pack_device(const tide_gemm_dist *s, const tide_env *e, const void *at, long long ld,
                       long long rows, long long cols, void *dst)
{
    tide_box sb = {{0, 0, 0}, {1, (int)cols, (int)ld}, {0, 1, 2}}, db = sb;
    db.hi[2] = (int)rows;
    return e->be->copy_region(e, s->elem, &db, at, &sb, dst, &db);
}

/* Device blocks: the owner's panel into the host panel buf, packed on the device into dev
 * first where it is not contiguous; complete on return. */
static void send_down(tide_gemm_dist *s, const char *at, long long ld, long long rows,
                      long long cols, void *dev, void *buf)
{
    const tide_env *e = s->d.env;
    const void *from = at;
    if (ld != rows && cols > 1) {
        s->copy_failed |= pack_device(s, e, at, ld, rows, cols, dev) != 0;
        from = dev;
    }
    s->copy_failed |= e->be->copy(e, buf, from, s->elem * (size_t)(rows * cols)) != 0 ||
                      e->be->sync(e) != 0;
}

/* One operand's panel, rows x cols as stored, at `at` in its owner's block (leading dimension
 * ld; NULL on an empty block): the owner (mine) reads it there, the others receive it into buf
 * from rank `root` of comm (of `ranks` ranks), with device blocks to be copied up into the
 * pair's device panel (land). Returns nonzero when MPI fails. */
static int share(tide_gemm_dist *s, int b, int x, const char *at, long long ld, long long rows,
                 long long cols, int mine, int root, int ranks, MPI_Comm comm, void *buf,
                 MPI_Request *req)
{
    void *dev = x ? s->db[b] : s->da[b];
    size_t bytes = s->elem * (size_t)(rows * cols);
    s->use[b][x].at = mine ? (const void *)at : s->d.device ? dev : buf;
    s->use[b][x].ld = mine ? ld : rows > 1 ? rows : 1;
    s->use[b][x].land = !mine && s->d.device && ranks > 1 ? bytes : 0;
    if (ranks == 1)
        return 0;
    void *send = buf;
    if (mine && at && s->d.device && bytes)
        send_down(s, at, ld, rows, cols, dev, buf);
    else if (mine && at && (ld == rows || cols == 1))
        send = (void *)at; /* read only: the root's buffer of a broadcast */
    else if (mine)
        pack(at, ld, rows, 0, 0, cols, buf, s->elem);
    MPI_Datatype type = s->d.cplx ? (s->d.dbl ? MPI_C_DOUBLE_COMPLEX : MPI_C_FLOAT_COMPLEX)
                                  : (s->d.dbl ? MPI_DOUBLE : MPI_FLOAT);
    return MPI_Ibcast(send, (int)(rows * cols), type, root, comm, req) != MPI_SUCCESS;
}

/* NCCL: both operands of panel p into pair b on the panels' stream, once pair b's last update
 * has finished: each owner packs its panel on the device where it is not contiguous and sends
 * it to the other ranks of its process row (op(A)) or column (op(B)), which receive it into
 * the pair's device panel; one NCCL group; `landed` recorded after it. at[x], ld[x], rows[x],
 * cols[x]: each operand as share takes it; root[x], me[x], ranks[x]: in its row or column.
 * Every rank posts its part whatever failed (copy_failed remembers it). */
static void nccl_panel(tide_gemm_dist *s, int b, const char *const at[2], const long long ld[2],
                       const long long rows[2], const long long cols[2], const int root[2],
                       const int me[2], const int ranks[2])
{
    tide_env e = *s->d.env;
    e.stream = s->bstream;
    int bad = tide_gpu_stream_wait(s->bstream, s->done[b]) != 0;
    const void *send[2];
    size_t bytes[2];
    for (int x = 0; x < 2; x++) {
        void *dev = x ? s->db[b] : s->da[b];
        int mine = me[x] == root[x];
        bytes[x] = s->elem * (size_t)(rows[x] * cols[x]);
        s->use[b][x].at = mine ? (const void *)at[x] : dev;
        s->use[b][x].ld = mine ? ld[x] : rows[x] > 1 ? rows[x] : 1;
        s->use[b][x].land = 0;
        send[x] = at[x];
        if (mine && at[x] && bytes[x] && ranks[x] > 1 && ld[x] != rows[x] && cols[x] > 1) {
            bad |= pack_device(s, &e, at[x], ld[x], rows[x], cols[x], dev) != 0;
            send[x] = dev;
        }
    }
    bad |= tide_transport_group_start() != 0;
    for (int x = 0; x < 2; x++)
        for (int q = 0; bytes[x] && q < ranks[x]; q++) {
            if (me[x] == root[x] && q != root[x])
                bad |= tide_transport_send(s->d.nccl, send[x], bytes[x], s->peer[x][q],
                                           s->bstream) != 0;
            else if (me[x] != root[x] && q == root[x])
                bad |= tide_transport_recv(s->d.nccl, x ? s->db[b] : s->da[b], bytes[x],
                                           s->peer[x][q], s->bstream) != 0;
        }
    bad |= tide_transport_group_end() != 0;
    bad |= tide_gpu_event_record(s->landed[b], s->bstream) != 0;
    s->copy_failed |= bad;
}

/* The owners of panel p send it and every rank starts its two broadcasts into buffer pair b
 * (last read by the update two panels back, ended by then; device blocks: that update and the
 * copies before it are waited for here, or over NCCL by the panels' stream). */
static int start_panel(tide_gemm_dist *s, const panel_t *p, int b, const void *a,
                       const void *bm, MPI_Request req[2])
{
    const tide_gemm_dist_desc *d = &s->d;
    long long m = span(s->rows), n = span(s->cols), w = p->k1 - p->k0;
    long long ra = p->k0 - s->ka[0], rb = p->k0 - s->kb[0];
    /* op(A)'s columns k0..k1 (m x w), or A^T's rows k0..k1 of each column (w x m) */
    size_t oa = s->elem * (size_t)(d->transa ? ra : ra * d->lda);
    const char *at = d->me[1] == p->pc && a ? (const char *)a + oa : NULL;
    /* op(B)'s rows k0..k1 of each column (w x n), or B^T's columns k0..k1 (n x w) */
    size_t ob = s->elem * (size_t)(d->transb ? rb * d->ldb : rb);
    const char *bt = d->me[0] == p->pr && bm ? (const char *)bm + ob : NULL;
    if (d->nccl) {
        const char *ats[2] = {at, bt};
        long long ld[2] = {d->lda, d->ldb}, rows[2] = {d->transa ? w : m, d->transb ? n : w},
                  cols[2] = {d->transa ? m : w, d->transb ? w : n};
        int root[2] = {p->pc, p->pr}, me[2] = {d->me[1], d->me[0]},
            ranks[2] = {d->grid[1], d->grid[0]};
        nccl_panel(s, b, ats, ld, rows, cols, root, me, ranks);
        return 0;
    }
    if (d->device)
        s->copy_failed |= d->env->be->sync(d->env) != 0;
    int st = share(s, b, 0, at, d->lda, d->transa ? w : m, d->transa ? m : w,
                   d->me[1] == p->pc, p->pc, d->grid[1], s->row, s->pa[b], &req[0]);
    return share(s, b, 1, bt, d->ldb, d->transb ? n : w, d->transb ? w : n,
                 d->me[0] == p->pr, p->pr, d->grid[0], s->col, s->pb[b], &req[1]) || st;
}

/* NCCL: the plan's stream waits for pair b's panels before its update (after: done). */
static void order_streams(tide_gemm_dist *s, int b, int after)
{
    void *stream = s->d.env->stream;
    if (s->d.nccl)
        s->copy_failed |= (after ? tide_gpu_event_record(s->done[b], stream)
                                 : tide_gpu_stream_wait(stream, s->landed[b])) != 0;
}

/* Panels go through two buffer pairs: panel i + 1 is packed and its broadcasts started
 * before panel i's update, and waited for while it runs (as far as the MPI library progresses
 * them meanwhile when the update runs on this thread). */
int tide_gemm_dist_execute(tide_gemm_dist *s, tide_scalar alpha, const void *a, const void *b,
                           tide_scalar beta, void *c, char *err, size_t len)
{
    const tide_gemm_dist_desc *d = &s->d;
    const tide_gemm_update *u = &d->update;
    MPI_Request req[2][2] = {{MPI_REQUEST_NULL, MPI_REQUEST_NULL},
                             {MPI_REQUEST_NULL, MPI_REQUEST_NULL}};
    panel_t p = panel_at(s, 0);
    s->copy_failed = 0;
    int st = TIDE_SUCCESS, mpi = start_panel(s, &p, 0, a, b, req[0]);
    for (int i = 0; !mpi; i++) {
        int cur = i % 2, last = p.k1 >= d->k;
        panel_t next = last ? p : panel_at(s, p.k1);
        mpi = MPI_Waitall(2, req[cur], MPI_STATUSES_IGNORE) != MPI_SUCCESS;
        /* an update on this thread goes after the next panel's broadcasts have started, one
         * on threads of its own before the next panel is packed (the GPU need not wait) */
        int async = u->end != NULL, began = 0;
        if (!async)
            mpi = mpi || (!last && start_panel(s, &next, 1 - cur, a, b, req[1 - cur]));
        /* device blocks: the received panels up, on the stream before the update (after the
         * next panel's start, whose sync need not wait for them) */
        for (int x = 0; x < 2 && !mpi; x++)
            if (s->use[cur][x].land)
                s->copy_failed |= d->env->be->copy(d->env, (void *)s->use[cur][x].at,
                                                   x ? s->pb[cur] : s->pa[cur],
                                                   s->use[cur][x].land) != 0;
        order_streams(s, cur, 0);
        /* after a failed update the rank still takes part in every broadcast, so that no
         * other rank waits for it */
        if (!mpi && !st) {
            tide_gemm_desc g = panel_desc(s, p.k1 - p.k0);
            g.lda = s->use[cur][0].ld, g.ldb = s->use[cur][1].ld;
            st = u->begin(u->user, &g, i == 0, last, alpha, s->use[cur][0].at,
                          s->use[cur][1].at, i ? tide_scalar_real(1) : beta, c, err, len);
            began = !st;
        }
        order_streams(s, cur, 1);
        if (async)
            mpi = mpi || (!last && start_panel(s, &next, 1 - cur, a, b, req[1 - cur]));
        if (!mpi && !last)
            mpi = MPI_Waitall(2, req[1 - cur], MPI_STATUSES_IGNORE) != MPI_SUCCESS;
        if (began && u->end)
            st = u->end(u->user, err, len);
        if (last)
            break;
        p = next;
    }
    MPI_Waitall(4, &req[0][0], MPI_STATUSES_IGNORE);
    if (d->nccl) /* the panels' stream, and NCCL's asynchronous errors */
        s->copy_failed |=
            tide_gpu_sync(s->bstream) != 0 || tide_transport_nccl_check(d->nccl) != 0;
    if (mpi)
        return snprintf(err, len, "a panel broadcast failed"), TIDE_ERR_MPI;
    if (!st && s->copy_failed)
        return snprintf(err, len, "a panel's %s failed: %s", d->nccl ? "move over NCCL" :
                        "copy between device and host memory", d->env->be->last_error()),
               TIDE_ERR_BACKEND;
    if (!st && d->device && d->env->be->sync(d->env)) /* the updates on the plan's stream */
        return snprintf(err, len, "%s", d->env->be->last_error()), TIDE_ERR_BACKEND;
    return st;
}
