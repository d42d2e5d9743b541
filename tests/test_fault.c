/*
 * test_fault.c: an MPI failure in the middle of an exchange gives every rank the same error,
 * never a hang; blocks split into many messages move exactly the same data; blocks over
 * INT_MAX elements are split or refused at creation, never cut short.
 *
 * Faults: tide_exchange_inject_fault (comm/exchange.h, test-only) makes one post of one rank
 * fail: the first, a middle and the last post that rank makes in a forward transform. Every
 * rank's tide_fft_forward must then return TIDE_ERR_MPI, within LIMIT_S seconds, with a
 * message naming the reshape; the next transform must give the bytes the plan gave before the
 * fault (that result checked against the serial FFTW oracle). C2C double on the CPU backend,
 * slabs and pencils, P2P and A2AV. With one rank there is no exchange: the fault never fires
 * and the transform works.
 *
 * Splitting: with tide_exchange_set_max_message(7) every pairwise block travels as messages of
 * at most 7 elements. Reshapes (every element holds its global index, checked exactly) and
 * FFTs must give the same bytes as without the cap.
 *
 * Counts: reshapes whose blocks exceed INT_MAX elements are only created (geometry, nothing
 * allocated): P2P and NCCL must accept them, A2AV must refuse them pointing to P2P.
 *
 * Halos and panels: SUMMA's panel moves, a stencil's halo exchanges (the halo before the sweep,
 * and beside the sweep of the own points) and a band matrix's, each with the first, a middle
 * and the last post of one rank failing: every rank's run returns TIDE_ERR_MPI within LIMIT_S
 * seconds, and the next run gives the bytes of the run before the fault.
 *
 * With TIDE_TEST_BACKEND=cuda (2 or more ranks, a GPU each) every exchange a GPU context makes,
 * the same faults in each: a forward of a plan on device arrays over NCCL (where every rank
 * has a GPU of its own), by direct stores, by MPI through pinned host staging, and with a
 * CUDA-aware MPI by MPI on the device staging: its first, a middle and its last post (an
 * ncclSend or ncclRecv, or an MPI post) of one rank made to fail. Then the four transforms
 * above on host arrays (uploaded whole: their reshapes run on the device copies, by MPI through
 * pinned host staging), and the halos and panels above on host arrays (SUMMA's panels move in
 * host memory, the halos from the device copies) and on device arrays. A failed ncclSend or
 * ncclRecv shows as TIDE_ERR_BACKEND, which counts as the failure (the same on every rank)
 * wherever the exchange may run over NCCL: device arrays, and a stencil's halos over NCCL.
 * Splitting and counts run on the CPU only. A case whose options the GPU's backend refuses
 * is skipped, the reason printed.
 *
 * A hang fails the test: alarm() ends the process after ALARM_S seconds.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "reference.h"
#include "comm/exchange.h"
#include "comm/reshape.h"
#include "tide_config.h"

enum { ALARM_S = 240, LIMIT_S = 60, SPLIT = 7 };

static MPI_Comm comm = MPI_COMM_WORLD;
static int nranks, me;
static int on_gpu; /* TIDE_TEST_BACKEND=cuda: the context is the GPU's */
static tt_tally tally;

static void *xmalloc(size_t bytes)
{
    void *p = calloc(1, bytes ? bytes : 1); /* an empty box still passes a valid pointer */
    if (!p) {
        fprintf(stderr, "test_fault: rank %d: out of memory (%zu bytes)\n", me, bytes);
        MPI_Abort(comm, 2);
    }
    return p;
}

static const char *exchange_name(tide_exchange e)
{
    static const char *const names[] = {"auto", "a2av", "p2p", "nccl", "cuda_mpi", "direct"};
    return e >= 0 && e <= TIDE_EXCHANGE_DIRECT ? names[e] : "?";
}

/* 1 when v is the same on every rank. */
static int same_everywhere(int v)
{
    int lo = 0, hi = 0;
    MPI_Allreduce(&v, &lo, 1, MPI_INT, MPI_MIN, comm);
    MPI_Allreduce(&v, &hi, 1, MPI_INT, MPI_MAX, comm);
    return lo == hi;
}

/* Collective, after a plan's creation returned st (agreed): 1 where the GPU's backend refused
 * the plan's options on every rank (TIDE_ERR_UNSUPPORTED): the case is skipped there, the
 * reason printed. Else 0: the caller checks st. */
static int refused(tide_context *ctx, int st, const char *what)
{
    if (!on_gpu || !tt_all(comm, st == TIDE_ERR_UNSUPPORTED))
        return 0;
    if (me == 0)
        printf("test_fault: %s skipped, the GPU's backend refuses it: %s\n", what,
               tide_last_error(ctx));
    return 1;
}

/* ---- faults in the middle of a transform ------------------------------------------------ */

typedef struct {
    tide_decomposition decomp;
    tide_exchange exch;
    const char *name;
} fft_case;

static const int grid[3] = {11, 9, 7};

static tide_fft_plan *make_plan(tide_context *ctx, const fft_case *c, const char *what)
{
    tide_fft_options o;
    tide_fft_options_init(&o);
    o.decomposition = c->decomp;
    o.exchange = c->exch;
    tide_fft_plan *plan = NULL;
    int st = tide_fft_plan_create(ctx, grid, NULL, NULL, &o, &plan);
    if (refused(ctx, st, c->name) ||
        !tt_check(&tally, comm, st == 0, "%s%s: plan_create: %s", c->name, what,
                  tide_last_error(ctx))) {
        tide_fft_plan_destroy(plan);
        return NULL;
    }
    return plan;
}

/* One forward with post k of rank victim failing (k < 0: none): the same TIDE_ERR_MPI on
 * every rank, in time, naming the reshape; then a clean forward giving the bytes of base. */
static void inject_once(tide_context *ctx, const fft_case *c, tide_fft_plan *plan, int victim,
                        long long k, const void *in, void *out, const void *base, size_t bytes)
{
    if (me == victim)
        tide_exchange_inject_fault(k);
    double t0 = MPI_Wtime();
    int st = tide_fft_forward(plan, in, out);
    double dt = MPI_Wtime() - t0;
    int fired = me != victim || !tide_exchange_fault_pending();
    tide_exchange_inject_fault(-1);
    const char *msg = tide_last_error(ctx);
    tt_check(&tally, comm, fired, "%s: post %lld of rank %d: the fault did not fire", c->name,
             k, victim);
    tt_check(&tally, comm, st == TIDE_ERR_MPI && same_everywhere(st),
             "%s: post %lld of rank %d failing: status %d (%s), want %d on every rank",
             c->name, k, victim, st, msg, TIDE_ERR_MPI);
    tt_check(&tally, comm, strstr(msg, "exchange") && strstr(msg, "reshape["),
             "%s: post %lld of rank %d failing: message \"%s\" does not name the exchange",
             c->name, k, victim, msg);
    tt_check(&tally, comm, dt < LIMIT_S, "%s: post %lld of rank %d failing took %.1f s",
             c->name, k, victim, dt);
    memset(out, 0, bytes);
    st = tide_fft_forward(plan, in, out);
    tt_check(&tally, comm, st == 0 && memcmp(out, base, bytes) == 0,
             "%s: the forward after a fault at post %lld of rank %d: status %d (%s), %s",
             c->name, k, victim, st, tide_last_error(ctx),
             st ? "" : "differs from the result before the fault");
}

static void fault_case(tide_context *ctx, const fft_case *c, int victim)
{
    tide_fft_plan *plan = make_plan(ctx, c, "");
    if (!plan)
        return;
    tide_box ib, ob;
    tide_fft_plan_boxes(plan, &ib, &ob);
    size_t ibytes = (size_t)tt_box_count(&ib) * 16, obytes = (size_t)tt_box_count(&ob) * 16;
    double *in = xmalloc(ibytes), *out = xmalloc(obytes), *base = xmalloc(obytes);
    tide_ref_fill(in, &ib, 1, 1, TIDE_DOUBLE, grid, 17);

    long long p0 = tide_exchange_posts();
    int st = tide_fft_forward(plan, in, base);
    long long posts = tide_exchange_posts() - p0;
    tide_ref_error e = {0, 0, 0};
    int ref = st ? st : tide_ref_check(comm, grid, TIDE_C2C, TIDE_DOUBLE, 1, -1, 1.0, &ib, in,
                                       &ob, base, &e);
    if (tt_check(&tally, comm, st == 0 && ref == 0 && e.rel_l2 < 1e-12,
                 "%s: forward: status %d (%s), vs oracle: %d, rel_l2 %.3g", c->name, st,
                 tide_last_error(ctx), ref, e.rel_l2)) {
        MPI_Bcast(&posts, 1, MPI_LONG_LONG, victim, comm);
        if (posts == 0) { /* no exchange: nothing to fail */
            if (me == victim)
                tide_exchange_inject_fault(0);
            st = tide_fft_forward(plan, in, out);
            int pending = me != victim || tide_exchange_fault_pending();
            tide_exchange_inject_fault(-1);
            tt_check(&tally, comm, st == 0 && pending && memcmp(out, base, obytes) == 0,
                     "%s: no exchange: status %d, fault pending %d, same result %d", c->name,
                     st, pending, memcmp(out, base, obytes) == 0);
        } else {
            const long long at[3] = {0, posts / 2, posts - 1};
            for (int i = 0; i < 3; i++)
                if (i == 0 || at[i] != at[i - 1])
                    inject_once(ctx, c, plan, victim, at[i], in, out, base, obytes);
        }
        if (me == 0 && posts)
            printf("%s: rank %d failing at post 0, %lld and %lld of the %lld of a forward\n",
                   c->name, victim, posts / 2, posts - 1, posts);
        else if (me == 0)
            printf("%s: no exchange, the fault never fires\n", c->name);
    }
    free(in);
    free(out);
    free(base);
    tide_fft_plan_destroy(plan);
}

/* ---- split messages --------------------------------------------------------------------- */

static double value_at(int f, const int n[3], const int p[3])
{
    return (((double)f * n[0] + p[0]) * n[1] + p[1]) * n[2] + p[2];
}

/* Each element of layout b (batch fields, 2 doubles an element) gets its global value, or,
 * check: the number of elements that do not hold it. */
static long long fill_or_check(double *a, const tide_box *b, int batch, const int n[3],
                               int check)
{
    long long count = tt_box_count(b), wrong = 0;
    int p[3];
    for (int f = 0; f < batch && count; f++)
        for (p[0] = b->lo[0]; p[0] < b->hi[0]; p[0]++)
            for (p[1] = b->lo[1]; p[1] < b->hi[1]; p[1]++)
                for (p[2] = b->lo[2]; p[2] < b->hi[2]; p[2]++) {
                    double v = value_at(f, n, p), *e = a + (f * count + tt_offset(b, p)) * 2;
                    if (!check)
                        e[0] = v, e[1] = -(v + 0.25);
                    else
                        wrong += e[0] != v || e[1] != -(v + 0.25);
                }
    return wrong;
}

/* Runs src -> dst once with the message cap max (0: the default); the result in *out and the
 * posts it made in *posts. */
static int reshape_once(const tide_box *src, const tide_box *dst, int batch, tide_exchange ex,
                        long long max, const double *in, double **out, long long *posts)
{
    char err[256] = "";
    tide_reshape *r = NULL;
    tide_exchange_set_max_message(max);
    int st = tide_reshape_create(comm, src, dst, NULL, NULL, 16, batch, ex, 1, &r, err,
                                 sizeof err);
    tide_exchange_set_max_message(0);
    *out = xmalloc((size_t)tt_box_count(&dst[me]) * 16 * (size_t)batch);
    if (st) {
        printf("test_fault: rank %d: tide_reshape_create: %s\n", me, err);
        return st;
    }
    void *sb = xmalloc(tide_reshape_send_bytes(r)), *rb = xmalloc(tide_reshape_recv_bytes(r));
    long long p0 = tide_exchange_posts();
    st = tide_reshape_execute(r, in, *out, sb, rb);
    *posts = tide_exchange_posts() - p0;
    free(sb);
    free(rb);
    tide_reshape_destroy(r);
    return st;
}

static void split_reshape(const char *name, const int n[3], const tide_box *src,
                          const tide_box *dst, int batch, tide_exchange ex)
{
    size_t in_bytes = (size_t)tt_box_count(&src[me]) * 16 * (size_t)batch;
    size_t out_bytes = (size_t)tt_box_count(&dst[me]) * 16 * (size_t)batch;
    double *in = xmalloc(in_bytes), *whole = NULL, *split = NULL;
    fill_or_check(in, &src[me], batch, n, 0);
    long long pw = 0, ps = 0;
    int st = reshape_once(src, dst, batch, ex, 0, in, &whole, &pw);
    st = st ? st : reshape_once(src, dst, batch, ex, SPLIT, in, &split, &ps);
    long long wrong = st ? -1 : fill_or_check(whole, &dst[me], batch, n, 1);
    tt_check(&tally, comm, st == 0 && wrong == 0 && memcmp(whole, split, out_bytes) == 0,
             "split reshape %s %s: status %d, %lld wrong elements, split result %s", name,
             exchange_name(ex), st, wrong,
             split && memcmp(whole, split, out_bytes) == 0 ? "the same" : "differs");
    /* Pairwise blocks over the cap really travel in more messages: no rank posts fewer, some
     * rank more (with one rank nothing is posted). */
    int mine[2] = {ps < pw, ps > pw}, any[2] = {0, 0};
    MPI_Allreduce(mine, any, 2, MPI_INT, MPI_MAX, comm);
    if (ex == TIDE_EXCHANGE_P2P && nranks > 1)
        tt_check(&tally, comm, !any[0] && any[1],
                 "split reshape %s: %lld posts with a cap of %d, %lld without", name, ps, SPLIT,
                 pw);
    free(in);
    free(whole);
    free(split);
}

static void split_reshapes(void)
{
    const int n[3] = {13, 11, 7};
    tide_box *a = malloc(sizeof *a * (size_t)nranks), *b = malloc(sizeof *b * (size_t)nranks);
    tt_rng rng;
    tt_rng_seed(&rng, 31);
    for (int ex = TIDE_EXCHANGE_A2AV; ex <= TIDE_EXCHANGE_P2P; ex++) {
        tt_tiling_slabs(n, 0, nranks, a);
        tt_tiling_slabs(n, 1, nranks, b);
        split_reshape("x-slabs > y-slabs", n, a, b, 1, (tide_exchange)ex);
        tt_tiling_pencils(n, 2, nranks, a);
        tt_tiling_random(n, nranks, &rng, b);
        tt_random_orders(nranks, &rng, b);
        split_reshape("z-pencils > random boxes", n, a, b, 2, (tide_exchange)ex);
    }
    free(a);
    free(b);
}

/* Forward and backward of a P2P plan made with the message cap give the same bytes as the
 * same plan without it. */
static void split_fft(tide_context *ctx, const fft_case *c)
{
    tide_fft_plan *whole = make_plan(ctx, c, " uncapped");
    tide_exchange_set_max_message(SPLIT);
    tide_fft_plan *split = make_plan(ctx, c, " split");
    tide_exchange_set_max_message(0);
    if (whole && split) {
        tide_box ib, ob;
        tide_fft_plan_boxes(whole, &ib, &ob);
        size_t ibytes = (size_t)tt_box_count(&ib) * 16, obytes = (size_t)tt_box_count(&ob) * 16;
        double *in = xmalloc(ibytes), *w = xmalloc(obytes), *s = xmalloc(obytes);
        double *wb = xmalloc(ibytes), *sb = xmalloc(ibytes);
        tide_ref_fill(in, &ib, 1, 1, TIDE_DOUBLE, grid, 23);
        long long p0 = tide_exchange_posts();
        int st = tide_fft_forward(whole, in, w);
        long long p1 = tide_exchange_posts();
        st = st ? st : tide_fft_forward(split, in, s);
        long long more = tide_exchange_posts() - p1 > p1 - p0, any = 0;
        MPI_Allreduce(&more, &any, 1, MPI_LONG_LONG, MPI_MAX, comm);
        tt_check(&tally, comm, nranks == 1 || any, "%s: the cap of %d split no message",
                 c->name, SPLIT);
        st = st ? st : tide_fft_backward(whole, w, wb);
        st = st ? st : tide_fft_backward(split, w, sb);
        tt_check(&tally, comm, st == 0 && !memcmp(w, s, obytes) && !memcmp(wb, sb, ibytes),
                 "%s split into messages of %d: status %d (%s), forward %s, backward %s",
                 c->name, SPLIT, st, tide_last_error(ctx),
                 memcmp(w, s, obytes) ? "differs" : "same",
                 memcmp(wb, sb, ibytes) ? "differs" : "same");
        free(in);
        free(w);
        free(s);
        free(wb);
        free(sb);
    }
    tide_fft_plan_destroy(whole);
    tide_fft_plan_destroy(split);
}

/* ---- counts over INT_MAX ---------------------------------------------------------------- */

/* Creates (and destroys) a reshape of 16-byte elements; device: through
 * tide_reshape_create_device. Returns the status, the message in err. */
static int create_only(const tide_box *src, const tide_box *dst, int batch, tide_exchange ex,
                       int device, char *err, size_t len)
{
    tide_reshape *r = NULL;
    int st = device ? tide_reshape_create_device(comm, src, dst, NULL, NULL, 16, batch, ex, NULL,
                                                 &r, err, len)
                    : tide_reshape_create(comm, src, dst, NULL, NULL, 16, batch, ex, 1, &r, err,
                                          len);
    if (!st && ex == TIDE_EXCHANGE_P2P && !device) {
        /* The staging covers every element that leaves: no size_t overflow on the way. */
        tide_box x;
        long long out = 0;
        for (int q = 0; q < nranks; q++) {
            x = src[me];
            for (int d = 0; d < 3; d++) {
                x.lo[d] = x.lo[d] > dst[q].lo[d] ? x.lo[d] : dst[q].lo[d];
                x.hi[d] = x.hi[d] < dst[q].hi[d] ? x.hi[d] : dst[q].hi[d];
            }
            out += q == me || x.hi[0] <= x.lo[0] || x.hi[1] <= x.lo[1] || x.hi[2] <= x.lo[2]
                       ? 0 : tt_box_count(&x) * batch;
        }
        if (tide_reshape_send_bytes(r) != (size_t)out * 16)
            snprintf(err, len, "send staging %zu bytes, want %lld", tide_reshape_send_bytes(r),
                     out * 16), st = -1;
    }
    tide_reshape_destroy(r);
    return st;
}

static void huge_counts(void)
{
    /* x-slabs to y-slabs of 8192 x 8192 x 512, 8 fields: a block between two ranks holds
     * over 3e9 elements with up to 6 ranks. */
    const int n[3] = {8192, 8192, 512};
    const int batch = 8;
    tide_box *a = malloc(sizeof *a * (size_t)nranks), *b = malloc(sizeof *b * (size_t)nranks);
    tt_tiling_slabs(n, 0, nranks, a);
    tt_tiling_slabs(n, 1, nranks, b);
    int peers = nranks > 1;
    char err[256] = "";
    int st = create_only(a, b, batch, TIDE_EXCHANGE_P2P, 0, err, sizeof err);
    tt_check(&tally, comm, st == 0, "blocks over INT_MAX, p2p: %d (%s)", st, err);
    err[0] = '\0';
    st = create_only(a, b, batch, TIDE_EXCHANGE_A2AV, 0, err, sizeof err);
    tt_check(&tally, comm, peers ? st == TIDE_ERR_TOO_LARGE && strstr(err, "P2P") : st == 0,
             "blocks over INT_MAX, a2av: %d (%s), want %s", st, err,
             peers ? "refused with a pointer to P2P" : "no block, accepted");
#if TIDE_HAVE_CUDA
    /* NCCL counts are size_t: no limit; staged P2P and CUDA-aware MPI (pairwise messages)
     * split; staged A2AV is one Alltoallv. */
    static const struct {
        tide_exchange ex;
        int refused;
    } dev[] = {{TIDE_EXCHANGE_NCCL, 0}, {TIDE_EXCHANGE_P2P, 0}, {TIDE_EXCHANGE_CUDA_MPI, 0},
               {TIDE_EXCHANGE_A2AV, 1}};
    for (int i = 0; i < 4; i++) {
        err[0] = '\0';
        st = create_only(a, b, batch, dev[i].ex, 1, err, sizeof err);
        int want = peers && dev[i].refused ? TIDE_ERR_TOO_LARGE : 0;
        tt_check(&tally, comm, st == want, "blocks over INT_MAX, device %s: %d (%s), want %d",
                 exchange_name(dev[i].ex), st, err, want);
    }
#endif
    free(a);
    free(b);
}

/* ---- runs of a plan with a failed post -------------------------------------------------- */

/* What the faults are tried on: one run of a plan (SUMMA's multiply, a stencil's or a band
 * matrix's steps) on this rank's array u, `bytes` of it. With dev set (a plan on device
 * arrays) the run goes on dev: u copied up before it and back after it, so that results
 * compare in host memory. a, b: SUMMA's operands where its plan reads them. backend: a failed
 * post may also show as TIDE_ERR_BACKEND (an ncclSend or ncclRecv of an exchange of device
 * memory), else only as TIDE_ERR_MPI. */
typedef struct subject subject;
struct subject {
    const char *what;
    int (*run)(const subject *s, void *u);
    void *plan;
    tide_context *ctx;
    void *dev;
    size_t bytes;
    long long steps;
    const void *a, *b;
    int backend;
};

/* One run of s on u (through s->dev where set). Every rank runs the plan whatever its copy
 * up returned: the run is collective. */
static int subject_run(const subject *s, void *u)
{
    int st = s->dev ? tide_copy(s->ctx, s->dev, u, s->bytes) : TIDE_SUCCESS;
    int ran = s->run(s, s->dev ? s->dev : u);
    st = st ? st : ran;
    return st || !s->dev ? st : tide_copy(s->ctx, u, s->dev, s->bytes);
}

/* Runs s from u0 once to count the posts of rank victim, then with its first, a middle and its
 * last post failing: every rank returns the same failure within LIMIT_S seconds, and the run
 * after each fault gives the bytes of the run before. */
static void run_faults(const subject *s, const void *u0, void *u)
{
    int victim = nranks - 1;
    char *ref = xmalloc(s->bytes);
    memcpy(ref, u0, s->bytes);
    long long p0 = tide_exchange_posts();
    int st = subject_run(s, ref);
    long long posts = tide_exchange_posts() - p0;
    MPI_Bcast(&posts, 1, MPI_LONG_LONG, victim, comm);
    if (!tt_check(&tally, comm, st == 0 && posts > 0, "%s before the faults: status %d (%s), "
                  "%lld posts of rank %d", s->what, st, tide_last_error(s->ctx), posts, victim)) {
        free(ref);
        return;
    }
    const long long at[3] = {0, posts / 2, posts - 1};
    for (int k = 0; k < 3; k++) {
        memcpy(u, u0, s->bytes);
        if (me == victim)
            tide_exchange_inject_fault(at[k]);
        double t0 = MPI_Wtime();
        st = subject_run(s, u);
        double dt = MPI_Wtime() - t0;
        tide_exchange_inject_fault(-1);
        int failed = st == TIDE_ERR_MPI || (s->backend && st == TIDE_ERR_BACKEND);
        tt_check(&tally, comm, failed && same_everywhere(st) && dt < LIMIT_S,
                 "%s with post %lld of rank %d failing: status %d (%s) after %.1f s, want %d%s "
                 "on every rank", s->what, at[k], victim, st, tide_last_error(s->ctx), dt,
                 TIDE_ERR_MPI, s->backend ? " or TIDE_ERR_BACKEND" : "");
        memcpy(u, u0, s->bytes);
        st = subject_run(s, u);
        tt_check(&tally, comm, st == 0 && !memcmp(u, ref, s->bytes),
                 "%s after the fault at post %lld: status %d, %s", s->what, at[k], st,
                 st ? tide_last_error(s->ctx) : "differs from the run before");
    }
    if (me == 0)
        printf("test_fault: %s, %lld posts of rank %d a run, faults at the first, a middle "
               "and the last\n", s->what, posts, victim);
    free(ref);
}

/* Where a subject's arrays live, for its name: nothing on the CPU. */
static const char *located(tide_location loc)
{
    return !on_gpu                        ? ""
           : loc == TIDE_LOCATION_DEVICE ? " (device arrays)"
                                         : " (host arrays on the GPU)";
}

/* Collective: for a plan on device arrays (loc DEVICE) n device arrays, dev[i] of bytes[i]
 * holding a copy of host[i] (host or host[i] NULL: nothing copied); for host arrays every
 * dev[i] NULL. Returns 1 when every rank has its arrays, else 0 with a failed check. */
static int device_arrays(tide_context *ctx, tide_location loc, const char *what, int n,
                         const void *const *host, const size_t *bytes, void **dev)
{
    int st = TIDE_SUCCESS;
    for (int i = 0; i < n; i++) {
        dev[i] = NULL;
        if (loc == TIDE_LOCATION_DEVICE && !st && /* one element more: never empty */
            (st = tide_device_alloc(ctx, bytes[i] + 16, &dev[i])))
            dev[i] = NULL; /* nothing to free */
        if (!st && dev[i] && host && host[i])
            st = tide_copy(ctx, dev[i], host[i], bytes[i]);
    }
    return loc != TIDE_LOCATION_DEVICE ||
           tt_check(&tally, comm, st == 0, "%s: device arrays: %s", what, tide_last_error(ctx));
}

static void device_arrays_free(tide_context *ctx, int n, void **dev)
{
    for (int i = 0; i < n; i++)
        tide_device_free(ctx, dev[i]);
}

static int summa_run(const subject *s, void *c)
{
    return tide_gemm_execute(s->plan, 1.0, s->a, s->b, 0.0, c);
}

static int stencil_run(const subject *s, void *u)
{
    return tide_stencil_run(s->plan, u, s->steps);
}

static int band_run(const subject *s, void *x)
{
    return tide_band_run(s->plan, x, s->steps);
}

/* SUMMA's panel moves: a multiply of 37 x 29 x 41 on the most square process grid, panels of
 * 4, arrays where loc says (device arrays: A and B copied up once, C each run). On the GPU
 * host arrays' panels move in host memory by MPI; device arrays' over NCCL where every rank
 * has a GPU of its own, else through pinned host memory. */
static void summa_faults(tide_context *ctx, tide_location loc)
{
    if (nranks == 1)
        return; /* no panel moves */
    enum { M = 37, N = 29, K = 41 };
    char what[64];
    snprintf(what, sizeof what, "SUMMA%s", located(loc));
    tide_gemm_options o;
    tide_gemm_options_init(&o);
    o.panel = 4;
    o.location = loc;
    tide_gemm_plan *plan = NULL;
    int st = tide_gemm_plan_create(ctx, M, N, K, &o, &plan);
    if (refused(ctx, st, what) ||
        !tt_check(&tally, comm, st == 0, "%s plan: %s", what, tide_last_error(ctx)))
        return;
    /* each rank's blocks fit the whole matrices' sizes */
    const size_t bytes[3] = {sizeof(double) * M * K, sizeof(double) * K * N,
                             sizeof(double) * M * N};
    double *a = xmalloc(bytes[0]), *b = xmalloc(bytes[1]);
    double *c0 = xmalloc(bytes[2]), *c = xmalloc(bytes[2]);
    for (int i = 0; i < M * K; i++)
        a[i] = (i * 7 + me) % 13 - 6;
    for (int i = 0; i < K * N; i++)
        b[i] = (i * 5 + me) % 11 - 5;
    const void *host[3] = {a, b, NULL};
    void *dev[3];
    if (device_arrays(ctx, loc, what, 3, host, bytes, dev)) {
        subject s = {what, summa_run, plan, ctx, dev[2], bytes[2], 0, dev[0] ? dev[0] : a,
                     dev[1] ? dev[1] : b, loc == TIDE_LOCATION_DEVICE};
        run_faults(&s, c0, c);
    }
    device_arrays_free(ctx, 3, dev);
    free(a), free(b), free(c0), free(c);
    tide_gemm_plan_destroy(plan);
}

/* A stencil's halo exchanges (the plan's blocks of a 23 x 19 x 17 grid, periodic along x, 7
 * steps in passes of 2), the halo travelling beside the sweep of the own points (split passes,
 * overlap 1) or before the sweep (overlap -1: on the CPU as the default, which on the GPU
 * would split), arrays where loc says. On the GPU the halos of host arrays move from their
 * device copies, as device arrays' do: over NCCL where every rank has a GPU of its own. */
static void stencil_faults(tide_context *ctx, int overlap, tide_location loc)
{
    if (nranks == 1)
        return;
    const int n[3] = {23, 19, 17};
    char what[96];
    snprintf(what, sizeof what, "stencil halos%s%s", overlap > 0 ? " beside the sweep" : "",
             located(loc));
    tide_stencil_options o;
    tide_stencil_options_init(&o);
    o.bc[0] = TIDE_BC_PERIODIC;
    o.fuse = 2;
    o.overlap = overlap;
    o.location = loc;
    tide_stencil_plan *plan = NULL;
    tide_stencil_info info;
    int st = tide_stencil_plan_create(ctx, n, NULL, &o, &plan);
    if (refused(ctx, st, what) ||
        !tt_check(&tally, comm, st == 0 && tide_stencil_plan_info(plan, &info) == 0,
                  "%s plan: %s", what, tide_last_error(ctx)))
        return;
    size_t bytes = (size_t)tt_box_count(&info.box) * sizeof(double);
    double *u0 = xmalloc(bytes), *u = xmalloc(bytes);
    tide_ref_fill(u0, &info.box, 1, 0, TIDE_DOUBLE, n, 23);
    void *du;
    if (device_arrays(ctx, loc, what, 1, NULL, &bytes, &du)) {
        subject s = {what, stencil_run, plan, ctx, du, bytes, 7, NULL, NULL,
                     loc == TIDE_LOCATION_DEVICE || info.halo_exchange == TIDE_EXCHANGE_NCCL};
        run_faults(&s, u0, u);
    }
    device_arrays_free(ctx, 1, &du);
    free(u0), free(u);
    tide_stencil_plan_destroy(plan);
}

/* A band matrix's halo exchanges: 301 rows, kl 2, ku 1, 9 steps in passes of 4, the rows
 * shared evenly, x where loc says. On the GPU the halo moves from the device copy of host x
 * as from device x: by MPI, on the device staging where the MPI library takes device pointers,
 * else through pinned host memory (never NCCL). */
static void band_faults(tide_context *ctx, tide_location loc)
{
    if (nranks == 1)
        return;
    enum { N = 301, KL = 2, KU = 1 };
    char what[64];
    snprintf(what, sizeof what, "band halos%s", located(loc));
    int lo = (int)((long long)N * me / nranks), hi = (int)((long long)N * (me + 1) / nranks);
    int rows = hi - lo;
    double *diag = xmalloc(sizeof(double) * (size_t)(KL + KU + 1) * (size_t)rows);
    for (int i = 0; i < (KL + KU + 1) * rows; i++)
        diag[i] = 0.25 + ((i * 7 + lo) % 11) / 64.0;
    tide_band_options o;
    tide_band_options_init(&o);
    o.kl = KL, o.ku = KU;
    o.diagonals = diag;
    o.steps_per_pass = 4;
    o.location = loc;
    tide_band_plan *plan = NULL;
    int st = tide_band_plan_create(ctx, N, lo, hi, &o, &plan);
    if (!refused(ctx, st, what) &&
        tt_check(&tally, comm, st == 0, "%s plan: %s", what, tide_last_error(ctx))) {
        size_t bytes = sizeof(double) * (size_t)rows;
        double *x0 = xmalloc(bytes), *x = xmalloc(bytes);
        for (int i = 0; i < rows; i++)
            x0[i] = ((lo + i) % 13 - 6) / 8.0;
        void *dx;
        if (device_arrays(ctx, loc, what, 1, NULL, &bytes, &dx)) {
            subject s = {what, band_run, plan, ctx, dx, bytes, 9, NULL, NULL,
                         loc == TIDE_LOCATION_DEVICE};
            run_faults(&s, x0, x);
        }
        device_arrays_free(ctx, 1, &dx);
        free(x0), free(x);
    }
    free(diag);
    tide_band_plan_destroy(plan);
}

/* ---- device arrays (TIDE_TEST_BACKEND=cuda) --------------------------------------------- */

/* One forward of a device plan with post k of rank victim failing (an ncclSend or ncclRecv,
 * or an MPI post: a message, or a note of the direct stores): the same error on every rank in
 * time, a TIDE_ERR_BACKEND naming its cause (the injected NCCL failure, or the peer that
 * failed), then a clean forward giving the bytes of the one before. Exchange x: NCCL (where
 * every rank has a GPU of its own, else refused and skipped), direct, P2P through pinned host
 * staging, or CUDA-aware MPI. Arrays in device memory, moved with tide_copy. */
static void device_faults(tide_context *ctx, tide_exchange x)
{
    if (nranks == 1)
        return;
    tide_fft_options o;
    tide_fft_options_init(&o);
    o.location = TIDE_LOCATION_DEVICE;
    o.exchange = x;
    tide_fft_plan *plan = NULL;
    int st = tide_fft_plan_create(ctx, grid, NULL, NULL, &o, &plan);
    tide_fft_info info;
    char what[64];
    snprintf(what, sizeof what, "the device forward over %s", exchange_name(x));
    if (refused(ctx, st, what) ||
        !tt_check(&tally, comm, st == 0 && tide_fft_plan_info(plan, &info) == 0,
                  "device plan: %s", tide_last_error(ctx)))
        return;
    tide_box ib, ob;
    tide_fft_plan_boxes(plan, &ib, &ob);
    size_t ibytes = (size_t)tt_box_count(&ib) * 16, obytes = (size_t)tt_box_count(&ob) * 16;
    double *in = xmalloc(ibytes), *base = xmalloc(obytes), *got = xmalloc(obytes);
    void *din = NULL, *dout = NULL;
    tide_ref_fill(in, &ib, 1, 1, TIDE_DOUBLE, grid, 19);
    st = tide_device_alloc(ctx, ibytes + 16, &din);
    st = st ? st : tide_device_alloc(ctx, obytes + 16, &dout);
    st = st ? st : tide_copy(ctx, din, in, ibytes);
    long long p0 = tide_exchange_posts();
    st = st ? st : tide_fft_forward(plan, din, dout);
    long long posts = tide_exchange_posts() - p0;
    st = st ? st : tide_copy(ctx, base, dout, obytes);
    tt_check(&tally, comm, st == 0, "device forward: %s", tide_last_error(ctx));
    MPI_Bcast(&posts, 1, MPI_LONG_LONG, nranks - 1, comm);
    const long long at[3] = {0, posts / 2, posts - 1};
    for (int i = 0; i < 3 && !st && posts > 0; i++) {
        if (me == nranks - 1)
            tide_exchange_inject_fault(at[i]);
        double t0 = MPI_Wtime();
        int x = tide_fft_forward(plan, din, dout);
        double dt = MPI_Wtime() - t0;
        tide_exchange_inject_fault(-1);
        const char *msg = tide_last_error(ctx);
        tt_check(&tally, comm, (x == TIDE_ERR_MPI || x == TIDE_ERR_BACKEND) &&
                 same_everywhere(x) && dt < LIMIT_S,
                 "device %s exchange, post %lld of rank %d failing: status %d (%s) after %.1f "
                 "s, want one failure on every rank", exchange_name(info.exchange), at[i],
                 nranks - 1, x, msg, dt);
        tt_check(&tally, comm, x != TIDE_ERR_BACKEND || strstr(msg, "inject_fault") ||
                 strstr(msg, "direct stores: rank"), "device %s exchange, post %lld of rank %d "
                 "failing: message \"%s\" does not name the cause", exchange_name(info.exchange),
                 at[i], nranks - 1, msg);
        x = tide_fft_forward(plan, din, dout);
        x = x ? x : tide_copy(ctx, got, dout, obytes);
        tt_check(&tally, comm, x == 0 && !memcmp(got, base, obytes),
                 "device forward after the fault at post %lld: status %d (%s), %s", at[i], x,
                 tide_last_error(ctx), x ? "" : "differs from the result before");
    }
    if (me == 0)
        printf("test_fault: device arrays over %s, %lld posts of rank %d a forward, faults at "
               "the first, a middle and the last\n", exchange_name(info.exchange), posts,
               nranks - 1);
    tide_device_free(ctx, din);
    tide_device_free(ctx, dout);
    free(in), free(base), free(got);
    tide_fft_plan_destroy(plan);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_size(comm, &nranks);
    MPI_Comm_rank(comm, &me);
    alarm(ALARM_S); /* a hang ends the process, and mpiexec the test */
    const char *be = getenv("TIDE_TEST_BACKEND");
    int cuda = be && !strcmp(be, "cuda");
    on_gpu = cuda;
    if (cuda && (nranks == 1 || !tt_all(comm, tt_gpus_or_skip() > 0))) {
        if (me == 0 && nranks == 1)
            printf("SKIP: one rank has no exchange to fail\n");
        MPI_Finalize();
        return 77;
    }
    tide_context_options co;
    tide_context_options_init(&co);
    co.backend = cuda ? TIDE_BACKEND_CUDA : TIDE_BACKEND_CPU;
    co.threads = cuda ? 0 : 1;
    tide_context *ctx = NULL;
    int st = tide_context_create(comm, &co, &ctx);
    if (!tt_check(&tally, comm, st == 0, "tide_context_create: %s", tide_last_error(ctx))) {
        MPI_Finalize();
        return 1;
    }
    static const fft_case cases[] = {
        {TIDE_DECOMP_SLABS, TIDE_EXCHANGE_P2P, "slabs p2p"},
        {TIDE_DECOMP_SLABS, TIDE_EXCHANGE_A2AV, "slabs a2av"},
        {TIDE_DECOMP_PENCILS, TIDE_EXCHANGE_P2P, "pencils p2p"},
        {TIDE_DECOMP_PENCILS, TIDE_EXCHANGE_A2AV, "pencils a2av"},
    };
    if (cuda) {
        device_faults(ctx, TIDE_EXCHANGE_NCCL);
        device_faults(ctx, TIDE_EXCHANGE_DIRECT);
        device_faults(ctx, TIDE_EXCHANGE_P2P);
        /* MPI on the device staging, where the MPI library takes device pointers on every
         * rank (auto takes NCCL where each rank has a GPU of its own) */
        tide_device_info dinfo;
        if (tt_all(comm, tide_context_device(ctx, &dinfo) == 0 && dinfo.cuda_aware_mpi))
            device_faults(ctx, TIDE_EXCHANGE_CUDA_MPI);
        else if (me == 0)
            printf("test_fault: no CUDA-aware MPI: the device exchange over it not tried\n");
    }
    /* on the GPU host arrays, their exchanges on the device copies */
    for (int i = 0; i < 4; i++)
        fault_case(ctx, &cases[i], (nranks - 1 + i) % nranks);
    if (!cuda) {
        split_reshapes();
        split_fft(ctx, &cases[0]);
        split_fft(ctx, &cases[2]);
        huge_counts();
    }
    /* host arrays; on the GPU device arrays too */
    static const tide_location locs[] = {TIDE_LOCATION_HOST, TIDE_LOCATION_DEVICE};
    for (int l = 0; l < (cuda ? 2 : 1); l++) {
        summa_faults(ctx, locs[l]);
        stencil_faults(ctx, -1, locs[l]);
        stencil_faults(ctx, 1, locs[l]);
        band_faults(ctx, locs[l]);
    }
    tide_context_destroy(ctx);
    int rc = tt_finish(&tally, comm, cuda ? "test_fault (GPU)" : "test_fault", "checks");
    MPI_Finalize();
    return rc;
}
