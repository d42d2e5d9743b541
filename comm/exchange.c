/*
 * exchange.c: the one exchange of the library (see exchange.h): pieces packed, moved by the
 * transport and unpacked, with one failure rule. Device arrays are packed, copied and sent
 * through comm/transport.h (the GPU's packs, copies and NCCL).
 *
 * A piece's dense copy holds its fields one after another, each its region in the piece's
 * order. Over MPI a unit (host arrays: a piece; device arrays: a message, its pieces packed
 * one after another) travels in parts that both sides cut alike: runs of whole planes of the
 * piece along its slowest dimension where one plane fits the cap, else runs of the cap.
 */
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "comm/exchange_parts.h"
#include "comm/transport.h"


/* ---- test-only hooks (exchange.h) -------------------------------------------------------- */

static _Atomic long long max_message = INT_MAX;
static _Atomic long long posts_made = 0;
static _Atomic long long fault_post = -1; /* index of the post that fails; -1: none */

void tide_exchange_inject_fault(long long k)
{
    atomic_store(&fault_post, k < 0 ? -1 : atomic_load(&posts_made) + k);
}

int tide_exchange_fault_pending(void) { return atomic_load(&fault_post) >= 0; }
long long tide_exchange_posts(void) { return atomic_load(&posts_made); }

void tide_exchange_set_max_message(long long n)
{
    atomic_store(&max_message, n <= 0 || n > INT_MAX ? INT_MAX : n);
}

/* Counts one post; 1 when it is the one that must fail. */
static int post_fails(void)
{
    long long k = atomic_fetch_add(&posts_made, 1);
    return atomic_compare_exchange_strong(&fault_post, &k, -1);
}

int tide_xchg_post(int send, void *buf, int count, MPI_Datatype type, int peer, int tag,
                   MPI_Comm comm, MPI_Request *req)
{
    int null = type == MPI_DATATYPE_NULL;
    int rc = null ? MPI_ERR_TYPE
             : post_fails() ? MPI_ERR_OTHER
             : send ? MPI_Isend(buf, count, type, peer, tag, comm, req)
                    : MPI_Irecv(buf, count, type, peer, tag, comm, req);
    if (rc == MPI_SUCCESS)
        return rc;
    MPI_Datatype t = null ? MPI_BYTE : type;
    int again = send ? MPI_Isend(buf, 0, t, peer, tag, comm, req)
                     : MPI_Irecv(buf, null ? 0 : count, t, peer, tag, comm, req);
    if (again != MPI_SUCCESS)
        *req = MPI_REQUEST_NULL;
    return rc;
}

/* ---- the list ---------------------------------------------------------------------------- */


struct tide_xchg_list {
    side s[2]; /* [RECV], [SEND] */
};

tide_xchg_list *tide_xchg_list_new(void) { return calloc(1, sizeof(tide_xchg_list)); }

static void side_free(side *x)
{
    free(x->p);
    free(x->m);
    free(x->u);
}

void tide_xchg_list_free(tide_xchg_list *l)
{
    if (!l)
        return;
    side_free(&l->s[RECV]);
    side_free(&l->s[SEND]);
    free(l);
}

int tide_xchg_add(tide_xchg_list *l, int send, int peer, const tide_box *region,
                  const int order[3])
{
    side *x = &l->s[send ? SEND : RECV];
    if (x->np == x->room) {
        int room = x->room ? 2 * x->room : 8;
        piece *p = realloc(x->p, sizeof *p * (size_t)room);
        if (p)
            x->p = p;
        message *m = p ? realloc(x->m, sizeof *m * (size_t)room) : NULL;
        if (m)
            x->m = m;
        if (!p || !m)
            return TIDE_ERR_NOMEM;
        x->room = room;
    }
    piece *p = &x->p[x->np];
    memset(p, 0, sizeof *p);
    p->region = *region;
    memcpy(p->region.order, order, sizeof p->region.order);
    if (x->nm == 0 || x->m[x->nm - 1].peer != peer)
        x->m[x->nm++] = (message){peer, x->np, 0, 0};
    x->m[x->nm - 1].n++;
    x->np++;
    return TIDE_SUCCESS;
}

/* ---- the exchange ------------------------------------------------------------------------- */


static int over_mpi(const tide_xchg *x)
{
    return x->d.how != TIDE_EXCHANGE_NCCL && x->d.how != TIDE_EXCHANGE_DIRECT;
}
static int a2av(const tide_xchg *x) { return x->d.how == TIDE_EXCHANGE_A2AV; }
static int staged_host(const tide_xchg *x)
{
    return x->d.device && (x->d.how == TIDE_EXCHANGE_P2P || x->d.how == TIDE_EXCHANGE_A2AV);
}

/* How place() may send pieces direct. */
enum { ANY_DIRECT, ALL_OR_NONE, SINGLE_DIRECT, NONE_DIRECT };

/* The piece of an earlier message of side x that is alone in it and covers the same region
 * in the same order as message k's only piece, or NULL. */
static const piece *same_single(const side *x, int k)
{
    const piece *p = &x->p[x->m[k].first];
    for (int j = 0; j < k; j++) {
        const piece *q = &x->p[x->m[j].first];
        if (x->m[j].n == 1 && q->direct < 0 && tide_box_equal(&q->region, &p->region))
            return q;
    }
    return NULL;
}

/* Places side x's pieces: their counts, their direct offsets in the declared layout (box;
 * NULL: none), staging for the others, packed message after message. rule: ANY_DIRECT, every
 * piece that is one run of box goes direct (host arrays over P2P); ALL_OR_NONE, the side goes
 * direct only when every piece does (Alltoallv: one base per side); SINGLE_DIRECT, only a
 * piece that is a message by itself (NCCL: a message is one buffer); NONE_DIRECT, none (device
 * arrays over MPI). */
static void place(const tide_xchg *xc, side *x, const tide_box *box, int rule)
{
    int all = 1;
    for (int k = 0; k < x->nm; k++) {
        const message *m = &x->m[k];
        for (int i = m->first; i < m->first + m->n; i++) {
            piece *p = &x->p[i];
            p->count = (size_t)tide_box_count(&p->region) * (size_t)xc->d.fields;
            p->direct = -1;
            int may = rule == ANY_DIRECT || rule == ALL_OR_NONE ||
                      (rule == SINGLE_DIRECT && m->n == 1);
            if (box && may &&
                tide_region_is_run(&p->region, box, p->region.order, xc->d.fields))
                p->direct = tide_box_offset(box, &p->region);
            all = all && p->direct >= 0;
        }
    }
    x->all_direct = all && x->np > 0;
    x->staged = 0;
    for (int k = 0; k < x->nm; k++) {
        message *m = &x->m[k];
        m->count = 0;
        for (int i = m->first; i < m->first + m->n; i++) {
            piece *p = &x->p[i];
            if (rule == ALL_OR_NONE && !all)
                p->direct = -1;
            const piece *same = m->n == 1 && x == &xc->s[SEND] ? same_single(x, k) : NULL;
            p->copy = same != NULL && p->direct < 0;
            p->at = p->direct >= 0 ? NO_STAGING : p->copy ? same->at : x->staged;
            x->staged += p->direct >= 0 || p->copy ? 0 : p->count;
            m->count += p->count;
        }
    }
}

/* Cuts unit u into parts of at most cap elements: runs of whole planes of length `plane`
 * where one fits (plane 0: none), else runs of cap. */
static void cut(unit *u, long long cap, long long plane)
{
    u->part = plane > 0 && plane <= cap ? cap / plane * plane : cap;
    u->parts = u->count ? (int)((u->count + (size_t)u->part - 1) / (size_t)u->part) : 0;
}

/* The MPI units of side x: host arrays its pieces (a plane: the region's extent over its
 * slowest travel dimension's), device arrays its messages (packed in the staging). */
static int make_units(const tide_xchg *xc, side *x, long long cap)
{
    int host = !xc->d.device;
    x->nu = host ? x->np : x->nm;
    x->u = calloc((size_t)x->nu + 1, sizeof *x->u);
    if (!x->u)
        return TIDE_ERR_NOMEM;
    for (int k = 0; k < x->nm; k++) {
        const message *m = &x->m[k];
        for (int i = m->first; i < m->first + m->n; i++) {
            const piece *p = &x->p[i];
            if (!host && i > m->first)
                continue;
            unit *u = &x->u[host ? i : k];
            u->peer = m->peer;
            u->piece = host ? i : -1;
            u->count = host ? p->count : m->count;
            u->at = p->at;
            int d0 = p->region.order[0];
            long long ext = p->region.hi[d0] - p->region.lo[d0];
            long long plane = host && ext ? tide_box_count(&p->region) / ext : 0;
            cut(u, cap, plane);
        }
    }
    return TIDE_SUCCESS;
}

/* Alltoallv tables (elements): per peer its message's count and displacement, in the array
 * where the whole side goes direct, else in the staging. Refused where they do not fit an
 * int. */
static int setup_a2av(tide_xchg *x, char *err, size_t len)
{
    int P;
    MPI_Comm_size(x->d.comm, &P);
    x->counts = calloc(4 * (size_t)P + 1, sizeof *x->counts);
    if (!x->counts)
        return snprintf(err, len, "out of memory creating an exchange"), TIDE_ERR_NOMEM;
    for (int k = 0; k < 2; k++) {
        const side *s = &x->s[k];
        int *count = x->counts + (k == SEND ? 0 : 2 * P), *displ = count + P;
        for (int j = 0; j < s->nm; j++) {
            const message *m = &s->m[j];
            const piece *p = &s->p[m->first];
            long long at = p->direct >= 0 ? p->direct : (long long)p->at;
            if (m->count > INT_MAX || at > INT_MAX)
                return snprintf(err, len, "an exchange block of %zu elements at element %lld "
                                "exceeds MPI_Alltoallv's int counts and displacements: use "
                                "the P2P exchange%s, which splits large blocks", m->count, at,
                                x->d.device ? " (or NCCL)" : ""), TIDE_ERR_TOO_LARGE;
            count[m->peer] = (int)m->count;
            displ[m->peer] = (int)at;
        }
    }
    return TIDE_SUCCESS;
}

/* The requests of MPI point to point: one per part of every unit. */
static int setup_p2p(tide_xchg *x, char *err, size_t len)
{
    long long bytes_cap = (long long)(TIDE_EXCHANGE_MAX_MESSAGE / x->d.elem);
    long long cap = atomic_load(&max_message);
    cap = cap < bytes_cap ? cap : bytes_cap > 0 ? bytes_cap : 1;
    long long n[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        if (make_units(x, &x->s[k], cap))
            return snprintf(err, len, "out of memory creating an exchange"), TIDE_ERR_NOMEM;
        for (int i = 0; i < x->s[k].nu; i++)
            n[k] += x->s[k].u[i].parts;
    }
    if (n[0] + n[1] >= INT_MAX)
        return snprintf(err, len, "an exchange needs %lld messages of at most %lld elements, "
                        "more than MPI can count", n[0] + n[1], cap), TIDE_ERR_TOO_LARGE;
    x->nrecv_req = (int)n[RECV];
    x->nreq = (int)(n[RECV] + n[SEND]);
    size_t r = (size_t)n[RECV] + 1;
    x->req = malloc(sizeof *x->req * ((size_t)x->nreq + 1));
    x->rtype = calloc(r, sizeof *x->rtype);
    x->req_unit = malloc(sizeof *x->req_unit * r);
    x->want = malloc(sizeof *x->want * r);
    x->done = malloc(sizeof *x->done * r);
    x->stats = malloc(sizeof *x->stats * r);
    x->left = malloc(sizeof *x->left * ((size_t)x->s[RECV].nu + 1));
    if (!x->req || !x->rtype || !x->req_unit || !x->want || !x->done || !x->stats || !x->left)
        return snprintf(err, len, "out of memory creating an exchange"), TIDE_ERR_NOMEM;
    for (int i = 0, m = 0; i < x->s[RECV].nu; i++)
        for (int j = 0; j < x->s[RECV].u[i].parts; j++)
            x->req_unit[m++] = i;
    for (int i = 0; i < x->nrecv_req; i++)
        x->rtype[i] = MPI_DATATYPE_NULL;
    return TIDE_SUCCESS;
}

int tide_xchg_create(const tide_xchg_desc *d, tide_xchg_list **l, tide_xchg **out, char *err,
                     size_t len)
{
    *out = NULL;
    tide_xchg *x = calloc(1, sizeof *x);
    if (!x) {
        tide_xchg_list_free(*l);
        *l = NULL;
        return snprintf(err, len, "out of memory creating an exchange"), TIDE_ERR_NOMEM;
    }
    x->d = *d;
    x->type = MPI_DATATYPE_NULL;
    if (d->src_box)
        x->src_box = *d->src_box, x->d.src_box = &x->src_box;
    if (d->dst_box)
        x->dst_box = *d->dst_box, x->d.dst_box = &x->dst_box;
    x->s[RECV] = (*l)->s[RECV];
    x->s[SEND] = (*l)->s[SEND];
    free(*l);
    *l = NULL;
    /* device arrays: over NCCL a message that is one run goes direct; over MPI, and with
     * DIRECT (the senders store into the receive staging), none */
    int rule = !d->device                     ? (a2av(x) ? ALL_OR_NONE : ANY_DIRECT)
               : d->how == TIDE_EXCHANGE_NCCL ? SINGLE_DIRECT
                                              : NONE_DIRECT;
    place(x, &x->s[SEND], x->d.src_box, rule);
    place(x, &x->s[RECV], x->d.dst_box, rule);
    int st = TIDE_SUCCESS;
    if (over_mpi(x))
        st = a2av(x) ? setup_a2av(x, err, len) : setup_p2p(x, err, len);
    if (d->how == TIDE_EXCHANGE_DIRECT)
        st = tide_xchg_direct_setup(x, err, len);
    if (!st && (MPI_Type_contiguous((int)d->elem, MPI_BYTE, &x->type) != MPI_SUCCESS ||
                MPI_Type_commit(&x->type) != MPI_SUCCESS))
        st = TIDE_ERR_MPI, snprintf(err, len, "MPI_Type_contiguous failed");
    if (st) {
        tide_xchg_destroy(x);
        return st;
    }
    *out = x;
    return TIDE_SUCCESS;
}

void tide_xchg_destroy(tide_xchg *x)
{
    if (!x)
        return;
    tide_xchg_direct_free(x);
    tide_transport_event_destroy(x->landed);
    side_free(&x->s[RECV]);
    side_free(&x->s[SEND]);
    if (x->type != MPI_DATATYPE_NULL)
        MPI_Type_free(&x->type);
    free(x->req);
    free(x->rtype);
    free(x->req_unit);
    free(x->want);
    free(x->done);
    free(x->stats);
    free(x->left);
    free(x->counts);
    free(x);
}

size_t tide_xchg_send_bytes(const tide_xchg *x) { return x->s[SEND].staged * x->d.elem; }
size_t tide_xchg_recv_bytes(const tide_xchg *x) { return x->s[RECV].staged * x->d.elem; }

size_t tide_xchg_recv_elements(const tide_xchg *x)
{
    size_t n = 0;
    for (int i = 0; i < x->s[RECV].nm; i++)
        n += x->s[RECV].m[i].count;
    return n;
}

int tide_xchg_peers(const tide_xchg *x)
{
    return x->s[SEND].nm > x->s[RECV].nm ? x->s[SEND].nm : x->s[RECV].nm;
}

/* ---- host arrays --------------------------------------------------------------------------- */

/* Piece p's dense layout in the staging: its region in its travel order. */
static const tide_box *dense(const piece *p) { return &p->region; }


/* The part of `to` that holds piece p's region as one run (the element there in *at), or -1. */
static int run_part(const tide_xchg *x, const piece *p, const tide_parts *to, long long *at)
{
    for (int i = 0; to && i < to->n; i++) {
        if (tide_box_within(&p->region, &to->box[i]) &&
            tide_region_is_run(&p->region, &to->box[i], p->region.order, x->d.fields)) {
            *at = tide_box_offset(&to->box[i], &p->region);
            return i;
        }
    }
    return -1;
}

/* The part of `to` that holds piece p's region whole in p's own order, for a typed receive, or
 * -1. */
static int typed_part(const tide_xchg *x, const piece *p, const tide_parts *to)
{
    for (int i = 0; x->d.typed && x->d.fields == 1 && to && i < to->n; i++) {
        if (tide_box_within(&p->region, &to->box[i]) &&
            !memcmp(p->region.order, to->box[i].order, sizeof p->region.order))
            return i;
    }
    return -1;
}

/* An MPI type for the planes [a, a + n) of piece p's region along its slowest dimension,
 * inside an array laid out as box (its order the piece's). */
static MPI_Datatype plane_type(const tide_xchg *x, const piece *p, const tide_box *box,
                               long long a, long long n)
{
    int sizes[3], sub[3], starts[3];
    for (int k = 0; k < 3; k++) {
        int dim = box->order[k];
        sizes[k] = box->hi[dim] - box->lo[dim];
        sub[k] = p->region.hi[dim] - p->region.lo[dim];
        starts[k] = p->region.lo[dim] - box->lo[dim];
    }
    sub[0] = (int)n;
    starts[0] += (int)a;
    MPI_Datatype t;
    if (MPI_Type_create_subarray(3, sizes, sub, starts, MPI_ORDER_C, x->type, &t) !=
        MPI_SUCCESS)
        return MPI_DATATYPE_NULL;
    if (MPI_Type_commit(&t) != MPI_SUCCESS) {
        MPI_Type_free(&t);
        return MPI_DATATYPE_NULL;
    }
    return t;
}

/* The staging MPI reads and writes: host arrays and CUDA-aware MPI the exchange's own,
 * device arrays over plain MPI the pinned host copies. */
static void *mpi_staging(const tide_xchg *x, const tide_xchg_io *io, int send)
{
    if (staged_host(x))
        return send ? io->hsend : io->hrecv;
    return send ? io->send : io->recv;
}

/* The elements [from, from + n) of unit u, and of its piece p (NULL for a device message): a
 * part. */
typedef struct {
    size_t from, n;
} span;

static span part_of(const unit *u, int j)
{
    size_t from = (size_t)j * (size_t)u->part;
    return (span){from, u->count - from < (size_t)u->part ? u->count - from : (size_t)u->part};
}

/* Planes of piece p's region along its slowest travel dimension: the elements of one. */
static long long plane_elements(const piece *p)
{
    int d0 = p->region.order[0];
    long long ext = p->region.hi[d0] - p->region.lo[d0];
    return ext ? tide_box_count(&p->region) / ext : 0;
}

/* Where a unit's receives land: straight into part `part` of io->dst at element `at` (one
 * run of it), into that part with subarray types (its planes, in its order: typed), into the
 * staging, or nowhere (a layout the exchange was not made for, and no staging). */
enum { LAND_RUN, LAND_TYPED, LAND_STAGING, LAND_NONE };
typedef struct {
    int how, part;
    long long at;
} landing;

static landing land(const tide_xchg *x, const unit *u, const tide_xchg_io *io)
{
    landing l = {LAND_NONE, -1, 0};
    const piece *p = u->piece >= 0 ? &x->s[RECV].p[u->piece] : NULL;
    long long plane = p ? plane_elements(p) : 0;
    if (p && io->dst && (l.part = run_part(x, p, io->dst, &l.at)) >= 0)
        l.how = LAND_RUN;
    else if (p && plane && u->part % plane == 0 && (l.part = typed_part(x, p, io->dst)) >= 0)
        l.how = LAND_TYPED;
    else if (u->at != NO_STAGING && mpi_staging(x, io, 0))
        l.how = LAND_STAGING;
    return l;
}

/* Posts the receives of every unit: straight into the part of io->dst that holds a piece as
 * one run, or with a subarray type into one that holds it in its order (typed), else into the
 * staging. A piece that has none of these (a layout the exchange was not made for) gets a
 * null type: a stand-in, and a failure. Returns MPI_SUCCESS or the first failure's code. */
static int post_receives(tide_xchg *x, const tide_xchg_io *io)
{
    const side *s = &x->s[RECV];
    char *staging = mpi_staging(x, io, 0);
    int rc = MPI_SUCCESS, m = 0;
    for (int i = 0; i < s->nu; i++) {
        const unit *u = &s->u[i];
        const piece *p = u->piece >= 0 ? &s->p[u->piece] : NULL;
        landing l = land(x, u, io);
        x->left[i] = u->parts;
        for (int j = 0; j < u->parts; j++) {
            span q = part_of(u, j);
            MPI_Datatype t = l.how == LAND_NONE ? MPI_DATATYPE_NULL : x->type;
            void *buf = NULL;
            int count = (int)q.n;
            if (l.how == LAND_RUN) {
                buf = tide_xchg_at(x, io->dst->data[l.part], (size_t)l.at + q.from);
            } else if (l.how == LAND_TYPED) {
                long long plane = plane_elements(p);
                t = x->rtype[m] = plane_type(x, p, &io->dst->box[l.part],
                                             (long long)q.from / plane, (long long)q.n / plane);
                buf = io->dst->data[l.part];
                count = 1;
            } else if (l.how == LAND_STAGING) {
                buf = tide_xchg_at(x, staging, u->at + q.from);
            }
            x->want[m] = count;
            int e = tide_xchg_post(0, buf, count, t, u->peer, TAG, x->d.comm, &x->req[m++]);
            rc = rc == MPI_SUCCESS ? e : rc;
        }
    }
    return rc;
}

/* Host arrays: piece p packed from io->src into the staging (NULL src: packed already). */
static void pack(const tide_xchg *x, const piece *p, const tide_xchg_io *io)
{
    tide_copy_region(x->d.elem, x->d.fields, &p->region, io->src, io->src_box,
                     tide_xchg_at(x, io->send, p->at), dense(p), x->d.threads);
}

/* Where unit u's elements are sent from: the array where its piece is one run of it, else the
 * staging, packed first (host arrays, unless failed: nothing is packed); NULL where neither
 * holds it (a layout the exchange was not made for). */
static const char *send_base(const tide_xchg *x, const unit *u, const tide_xchg_io *io,
                             int failed)
{
    const piece *p = u->piece >= 0 ? &x->s[SEND].p[u->piece] : NULL;
    if (p && io->src &&
        tide_region_is_run(&p->region, io->src_box, p->region.order, x->d.fields))
        return tide_xchg_at(x, io->src, (size_t)tide_box_offset(io->src_box, &p->region));
    if (u->at == NO_STAGING)
        return NULL;
    if (p && io->src && !failed && !p->copy)
        pack(x, p, io);
    return tide_xchg_at(x, mpi_staging(x, io, 1), u->at);
}

/* Posts the sends of every unit (after the receives' requests), each packed just before it is
 * sent so that packing the next overlaps this one's transfer. Returns MPI_SUCCESS or the first
 * failure's code. */
static int post_sends(tide_xchg *x, const tide_xchg_io *io, int failed)
{
    const side *s = &x->s[SEND];
    int rc = MPI_SUCCESS, m = x->nrecv_req;
    for (int i = 0; i < s->nu; i++) {
        const unit *u = &s->u[i];
        const char *base = send_base(x, u, io, failed);
        for (int j = 0; j < u->parts; j++) {
            span q = part_of(u, j);
            int e = tide_xchg_post(1, base ? (void *)(base + q.from * x->d.elem) : NULL,
                                   (int)q.n, base ? x->type : MPI_DATATYPE_NULL, u->peer, TAG,
                                   x->d.comm, &x->req[m++]);
            rc = rc == MPI_SUCCESS ? e : rc;
        }
    }
    return rc;
}

/* MPI_Waitall that still completes the rest when some requests fail. */
static int wait_all(int n, MPI_Request *req)
{
    if (MPI_Waitall(n, req, MPI_STATUSES_IGNORE) == MPI_SUCCESS)
        return MPI_SUCCESS;
    MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
    return MPI_ERR_OTHER;
}

/* Host arrays: a piece received into the staging copied into every part of io->dst it meets
 * (none: it stays packed). */
static void unpack(const tide_xchg *x, const piece *p, const tide_xchg_io *io)
{
    if (!io->dst || !io->recv || p->at == NO_STAGING)
        return;
    for (int i = 0; i < io->dst->n; i++) {
        tide_box r;
        if (tide_box_intersect(&p->region, &io->dst->box[i], &r) > 0)
            tide_copy_region(x->d.elem, x->d.fields, &r, tide_xchg_at(x, io->recv, p->at), dense(p),
                             io->dst->data[i], &io->dst->box[i], x->d.threads);
    }
}

/* Waits for every receive; host arrays unpack each piece once all its parts are in, in the
 * order pieces complete (unless failed). A short message (a peer's stand-in) fails the
 * exchange. Returns MPI_SUCCESS or an error code. */
static int drain_receives(tide_xchg *x, const tide_xchg_io *io, int failed)
{
    const side *s = &x->s[RECV];
    int rc = MPI_SUCCESS;
    for (int left = x->nrecv_req; left > 0;) {
        int n = 0;
        if (MPI_Waitsome(x->nrecv_req, x->req, &n, x->done, x->stats) != MPI_SUCCESS)
            return wait_all(x->nrecv_req, x->req), MPI_ERR_OTHER;
        if (n == MPI_UNDEFINED)
            break; /* the rest are null: stand-ins that could not be posted */
        for (int k = 0; k < n; k++) {
            int m = x->done[k], i = x->req_unit[m], got = -1;
            const unit *u = &s->u[i];
            MPI_Datatype t = x->rtype[m] != MPI_DATATYPE_NULL ? x->rtype[m] : x->type;
            if (MPI_Get_count(&x->stats[k], t, &got) != MPI_SUCCESS || got != x->want[m])
                rc = MPI_ERR_TRUNCATE;
            if (--x->left[i] == 0 && !failed && rc == MPI_SUCCESS && u->piece >= 0 &&
                !x->d.device && land(x, u, io).how == LAND_STAGING)
                unpack(x, &s->p[u->piece], io);
        }
        left -= n;
    }
    return rc;
}

/* Frees the subarray types of the last receives. */
static void free_types(tide_xchg *x)
{
    for (int m = 0; m < x->nrecv_req; m++)
        if (x->rtype[m] != MPI_DATATYPE_NULL)
            MPI_Type_free(&x->rtype[m]);
}

/* The posted messages completed: every receive (host pieces unpacked as they arrive, unless
 * failed) and every send; the receive types freed. Returns an MPI code. */
static int complete(tide_xchg *x, const tide_xchg_io *io, int failed)
{
    int got = drain_receives(x, io, failed);
    int done = wait_all(x->nreq - x->nrecv_req, x->req + x->nrecv_req);
    free_types(x);
    return got == MPI_SUCCESS && done == MPI_SUCCESS ? MPI_SUCCESS : MPI_ERR_OTHER;
}

/* One Alltoallv of the tables from sb into rb. An injected failure still takes part in it. */
static int alltoallv(const tide_xchg *x, const void *sb, void *rb)
{
    int P;
    MPI_Comm_size(x->d.comm, &P);
    const int *sc = x->counts, *sd = sc + P, *rc = sd + P, *rd = rc + P;
    int fault = post_fails();
    int e = MPI_Alltoallv(sb, sc, sd, x->type, rb, rc, rd, x->type, x->d.comm);
    return e == MPI_SUCCESS && !fault ? MPI_SUCCESS : MPI_ERR_OTHER;
}

/* The MPI part of an exchange, every message posted and completed whatever failed: from the
 * staging (or the arrays where a side goes direct), host arrays' pieces unpacked as they
 * arrive. */
static int exchange_mpi(tide_xchg *x, const tide_xchg_io *io, int failed)
{
    if (a2av(x)) {
        const side *s = &x->s[SEND], *r = &x->s[RECV];
        const void *sb = s->all_direct && io->src ? io->src : mpi_staging(x, io, 1);
        void *rb = r->all_direct && io->dst ? io->dst->data[0] : mpi_staging(x, io, 0);
        return alltoallv(x, sb, rb);
    }
    int posted = post_receives(x, io);
    int sent = post_sends(x, io, failed);
    int done = complete(x, io, failed);
    return posted == MPI_SUCCESS && sent == MPI_SUCCESS ? done : MPI_ERR_OTHER;
}

/* ---- device arrays ------------------------------------------------------------------------ */

/* The staged send pieces packed from io->src into io->send, kernels on the stream. */
static int device_pack(const tide_xchg *x, const tide_xchg_io *io)
{
    const side *s = &x->s[SEND];
    int st = TIDE_SUCCESS;
    for (int i = 0; i < s->np && !st; i++) {
        const piece *p = &s->p[i];
        if (p->at != NO_STAGING && !p->copy)
            st = tide_transport_pack(x->d.elem, x->d.fields, &p->region, io->src,
                                            io->src_box, tide_xchg_at(x, io->send, p->at), dense(p),
                                            io->stream);
    }
    return st;
}

/* The staged receive pieces unpacked from io->recv into the parts of io->dst they meet,
 * kernels on the stream. */
int tide_xchg_device_unpack(const tide_xchg *x, const tide_xchg_io *io)
{
    const side *s = &x->s[RECV];
    int st = TIDE_SUCCESS;
    for (int i = 0; i < s->np && io->dst && !st; i++) {
        const piece *p = &s->p[i];
        for (int k = 0; k < io->dst->n && p->at != NO_STAGING && !st; k++) {
            tide_box r;
            if (tide_box_intersect(&p->region, &io->dst->box[k], &r) > 0)
                st = tide_transport_pack(x->d.elem, x->d.fields, &r,
                                                tide_xchg_at(x, io->recv, p->at), dense(p),
                                                io->dst->data[k], &io->dst->box[k],
                                                io->stream);
        }
    }
    return st;
}

/* Message m's buffer on side k: the array where it is one piece that goes direct, else its
 * packed pieces in the staging. */
static char *message_base(const tide_xchg *x, const side *s, const message *m, void *array,
                          void *staging)
{
    const piece *p = &s->p[m->first];
    if (p->direct >= 0)
        return tide_xchg_at(x, array, (size_t)p->direct);
    return tide_xchg_at(x, staging, p->at);
}

/* An NCCL call failed by tide_exchange_inject_fault, with its reason. */
static int injected(void)
{
    return tide_transport_fail("ncclSend/ncclRecv", "failed by tide_exchange_inject_fault");
}

/* Every message in one NCCL group on the stream. A failed call does not stop the others: the
 * peers' matching calls are in the same group. */
static int nccl_group(const tide_xchg *x, const tide_xchg_io *io)
{
    int st = tide_transport_group_start();
    const side *r = &x->s[RECV], *s = &x->s[SEND];
    void *dst = io->dst ? io->dst->data[0] : NULL;
    for (int k = 0; k < r->nm; k++) {
        const message *m = &r->m[k];
        int e = tide_transport_recv(io->nccl, message_base(x, r, m, dst, io->recv),
                                    m->count * x->d.elem, m->peer, io->stream);
        st = st ? st : e ? e : post_fails() ? injected() : 0;
    }
    for (int k = 0; k < s->nm; k++) {
        const message *m = &s->m[k];
        int e = tide_transport_send(io->nccl, message_base(x, s, m, (void *)io->src, io->send),
                                    m->count * x->d.elem, m->peer, io->stream);
        st = st ? st : e ? e : post_fails() ? injected() : 0;
    }
    int end = tide_transport_group_end(); /* ends the group even after a failed call in it */
    return st ? st : end;
}

/* Everything has landed on the stream: the unpacks now, or (io->defer) an event that
 * tide_xchg_land's stream waits for. */
static int device_landed(tide_xchg *x, const tide_xchg_io *io)
{
    if (!io->defer)
        return tide_xchg_device_unpack(x, io);
    int st = x->landed ? TIDE_SUCCESS : tide_transport_event_create(&x->landed);
    return st ? st : tide_transport_record(x->landed, io->stream);
}

static int device_start(tide_xchg *x, const tide_xchg_io *io, int status)
{
    if (x->d.how == TIDE_EXCHANGE_DIRECT)
        return tide_xchg_direct_run(x, io, status);
    int st = status ? status : device_pack(x, io);
    if (x->d.how == TIDE_EXCHANGE_NCCL) {
        int moved = nccl_group(x, io);
        st = st ? st : moved;
        return st ? st : device_landed(x, io);
    }
    size_t sb = tide_xchg_send_bytes(x);
    if (!st && staged_host(x) && sb)
        st = tide_transport_copy(io->hsend, io->send, sb, io->stream);
    if (!x->d.eager || a2av(x))
        return st;
    int synced = tide_transport_sync(io->stream); /* the packs and the copy down */
    st = st ? st : synced;
    int posted = post_receives(x, io), sent = post_sends(x, io, st);
    return st ? st : posted == MPI_SUCCESS && sent == MPI_SUCCESS ? 0 : TIDE_ERR_MPI;
}

static int device_finish(tide_xchg *x, const tide_xchg_io *io, int status)
{
    if (x->d.how == TIDE_EXCHANGE_NCCL || x->d.how == TIDE_EXCHANGE_DIRECT)
        return status;
    int st = status, mpi;
    if (x->d.eager && !a2av(x)) { /* posted by START */
        mpi = complete(x, io, st);
    } else {
        int synced = tide_transport_sync(io->stream); /* the packs (and the copy down) */
        st = st ? st : synced;
        mpi = exchange_mpi(x, io, st);
    }
    if (mpi != MPI_SUCCESS)
        return st ? st : TIDE_ERR_MPI; /* the first failure */
    size_t rb = tide_xchg_recv_bytes(x);
    if (!st && staged_host(x) && rb)
        st = tide_transport_copy(io->recv, io->hrecv, rb, io->stream);
    return st ? st : device_landed(x, io);
}

int tide_xchg_land(const tide_xchg *x, const tide_xchg_io *io, int status)
{
    if (status || !x->d.device)
        return status;
    if (x->d.how == TIDE_EXCHANGE_DIRECT)
        return tide_xchg_direct_land(x, io);
    int st = x->landed ? tide_transport_wait(io->stream, x->landed)
                       : TIDE_ERR_BACKEND; /* no FINISH deferred */
    return st ? st : tide_xchg_device_unpack(x, io);
}

/* ---- the two halves ------------------------------------------------------------------------ */

int tide_xchg_start(const tide_xchg *cx, const tide_xchg_io *io, int status)
{
    tide_xchg *x = (tide_xchg *)cx; /* only the request scratch changes */
    if (x->d.device)
        return device_start(x, io, status);
    if (a2av(x)) { /* packed now, moved by FINISH's Alltoallv */
        const side *s = &x->s[SEND];
        for (int i = 0; i < s->np && io->src && !status && !s->all_direct; i++)
            if (!s->p[i].copy)
                pack(x, &s->p[i], io);
        return status;
    }
    int posted = post_receives(x, io);
    int sent = post_sends(x, io, status);
    return status ? status : posted == MPI_SUCCESS && sent == MPI_SUCCESS ? 0 : TIDE_ERR_MPI;
}

int tide_xchg_finish(const tide_xchg *cx, const tide_xchg_io *io, int status)
{
    tide_xchg *x = (tide_xchg *)cx;
    if (x->d.device)
        return device_finish(x, io, status);
    int rc;
    if (a2av(x)) {
        rc = exchange_mpi(x, io, status);
        const side *r = &x->s[RECV];
        for (int i = 0; i < r->np && rc == MPI_SUCCESS && !status && !r->all_direct; i++)
            unpack(x, &r->p[i], io);
    } else {
        rc = complete(x, io, status);
    }
    return status ? status : rc == MPI_SUCCESS ? TIDE_SUCCESS : TIDE_ERR_MPI;
}
