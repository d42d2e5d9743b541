/*
 * test_errors.c: bad input gives the same clear error on every rank and never hangs.
 *
 * Run under mpiexec with 1, 3 and 4 ranks. For every bad call: all ranks get the same non-zero
 * status of the expected kind, the same non-empty tide_last_error() message (naming the
 * offending rank for a box that only one rank got wrong), and outputs stay untouched. A hang is
 * a failure too: meson's timeout catches it. Finally a valid plan proves the context survived.
 */
#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "reference.h"
#include "tide.h"

enum { MSGLEN = 512 };

#define BIT(code) (1u << (code))
#define E_ARG BIT(TIDE_ERR_ARGUMENT)
#define E_BOX BIT(TIDE_ERR_BOX)
#define E_MISMATCH BIT(TIDE_ERR_MISMATCH)
#define E_UNSUP BIT(TIDE_ERR_UNSUPPORTED)

static MPI_Comm comm;
static int rank, nranks;
static tt_tally tally;
/* What a failed call must leave in the plan pointer: an address no allocation returns. */
static char plan_sentinel_storage;
#define PLAN_SENTINEL ((tide_fft_plan *)&plan_sentinel_storage)

static const int N[3] = {8, 6, 5};

/* Whether msg names rank r: "rank" (any case) followed later by r as a whole number. */
static int mentions_rank(const char *msg, int r)
{
    const char *p = msg;
    for (; *p; p++) {
        int k = 0;
        while (k < 4 && p[k] && tolower((unsigned char)p[k]) == "rank"[k])
            k++;
        if (k == 4)
            break;
    }
    if (!*p)
        return 0;
    for (; *p; p++) {
        if (!isdigit((unsigned char)*p) || (p > msg && isdigit((unsigned char)p[-1])))
            continue;
        char *end;
        long v = strtol(p, &end, 10);
        if (v == r)
            return 1;
        p = end - 1;
    }
    return 0;
}

static void codes_str(unsigned allowed, char *buf, size_t len)
{
    buf[0] = 0;
    for (int c = 1; c < 32; c++)
        if (allowed & BIT(c)) {
            size_t used = strlen(buf);
            snprintf(buf + used, len - used, "%s%s", used ? " or " : "", tide_strerror(c));
        }
}

/*
 * Collective: checks that a call failed properly. st: this rank's status; msg: this rank's
 * tide_last_error(); allowed: acceptable codes; name1/name2: ranks of which the message must
 * name at least one (-1: no requirement); untouched: this rank's outputs were left alone.
 */
static void expect_error(const char *what, int st, const char *msg, unsigned allowed, int name1,
                         int name2, int untouched)
{
    int *sts = malloc((size_t)nranks * sizeof *sts);
    char *msgs = malloc((size_t)nranks * MSGLEN);
    char mine[MSGLEN];
    snprintf(mine, sizeof mine, "%s", msg ? msg : "(null)");
    MPI_Allgather(&st, 1, MPI_INT, sts, 1, MPI_INT, comm);
    MPI_Gather(mine, MSGLEN, MPI_CHAR, msgs, MSGLEN, MPI_CHAR, 0, comm);

    char want[128], got[256] = "";
    codes_str(allowed, want, sizeof want);
    int same = 1;
    for (int r = 0; r < nranks; r++) {
        size_t used = strlen(got);
        snprintf(got + used, sizeof got - used, "%s%d", r ? "," : "", sts[r]);
        same = same && sts[r] == sts[0];
    }
    int code_ok = same && st != 0 && st < 32 && (allowed & BIT(st));
    tt_check(&tally, comm, code_ok, "%s: statuses per rank [%s], want %s on every rank", what,
             got, want);

    /* Rank 0 compares everybody's message with its own; the verdict is agreed in tt_check. */
    int msg_same = 1, differ = -1;
    if (rank == 0)
        for (int r = 1; r < nranks && msg_same; r++)
            if (strcmp(msgs + (size_t)r * MSGLEN, msgs) != 0)
                msg_same = 0, differ = r;
    tt_check(&tally, comm, mine[0] != 0 && msg_same,
             "%s: message empty or different between ranks: rank 0 \"%s\"%s%s%s", what, mine,
             differ >= 0 ? ", other rank \"" : "", differ >= 0 ? msgs + differ * MSGLEN : "",
             differ >= 0 ? "\"" : "");
    if (name1 >= 0)
        tt_check(&tally, comm,
                 rank != 0 || mentions_rank(mine, name1) ||
                     (name2 >= 0 && mentions_rank(mine, name2)),
                 "%s: message does not name the offending rank %d: \"%s\"", what, name1, mine);
    tt_check(&tally, comm, untouched, "%s: output written although the call failed", what);
    if (rank == 0)
        printf("  %-52s -> %s: %s\n", what, tide_strerror(st), mine);
    free(sts);
    free(msgs);
}

/* Plan creation variants: every field can differ per rank. */
typedef struct {
    int n[3];
    const int *np;   /* the n argument: n, or NULL */
    tide_box in, out;
    int in_null, out_null;
    tide_fft_options o;
    int plan_null;   /* pass NULL as the plan pointer */
    tide_context *ctx;
} create_args;

static void base_args(create_args *a, tide_context *ctx)
{
    memset(a, 0, sizeof *a);
    memcpy(a->n, N, sizeof a->n);
    a->np = a->n;
    /* Slabs along x in and along y out, computed here rather than by the library. */
    tide_box *all = malloc((size_t)nranks * sizeof *all);
    tt_tiling_slabs(N, 0, nranks, all);
    a->in = all[rank];
    tt_tiling_slabs(N, 1, nranks, all);
    a->out = all[rank];
    free(all);
    tide_fft_options_init(&a->o);
    a->ctx = ctx;
}

/* Collective: the agreed message msg mentions word (the same on every rank, so rank 0's
 * verdict is everybody's). */
static void expect_mention(const char *what, const char *msg, const char *word)
{
    tt_check(&tally, comm, msg && strstr(msg, word), "%s: message does not mention %s: \"%s\"",
             what, word, msg ? msg : "(null)");
}

static void expect_create_error(const char *what, create_args *a, unsigned allowed, int name1,
                                int name2)
{
    tide_fft_plan *plan = PLAN_SENTINEL;
    int st = tide_fft_plan_create(a->ctx, a->np, a->in_null ? NULL : &a->in,
                                  a->out_null ? NULL : &a->out, &a->o, a->plan_null ? NULL : &plan);
    /* A call that wrongly succeeded still must not leak or leave the others waiting. */
    if (st == 0 && plan != PLAN_SENTINEL)
        tide_fft_plan_destroy(plan);
    expect_error(what, st, tide_last_error(a->ctx), allowed, name1, name2, plan == PLAN_SENTINEL);
}

static void plan_create_errors(tide_context *ctx)
{
    create_args a;
    int bad = nranks > 1 ? 1 : 0; /* the rank that gets it wrong alone */
    int last = nranks - 1;
    char what[128];

    if (nranks > 1) {
        base_args(&a, ctx);
        if (rank == bad)
            a.in.lo[0] -= 1; /* reaches into rank 0's planes */
        snprintf(what, sizeof what, "overlapping inboxes (rank %d)", bad);
        expect_create_error(what, &a, E_BOX, bad, bad - 1);

        /* Shifted down one plane: an overlap and a hole, but the point count is right, so
         * counting points alone cannot catch it. */
        base_args(&a, ctx);
        if (rank == bad) {
            a.out.lo[1] -= 1;
            a.out.hi[1] -= 1;
        }
        snprintf(what, sizeof what, "outboxes shifted: overlap + hole (rank %d)", bad);
        expect_create_error(what, &a, E_BOX, -1, -1);
    }

    base_args(&a, ctx);
    if (rank == last)
        a.in.hi[0] -= 1; /* one plane of x nobody owns */
    expect_create_error("inboxes not covering the grid", &a, E_BOX, -1, -1);

    base_args(&a, ctx);
    if (rank == last)
        a.out.lo[2] += 1;
    expect_create_error("outboxes not covering the grid", &a, E_BOX, -1, -1);

    base_args(&a, ctx);
    if (rank == bad)
        a.in.hi[2] = N[2] + 2;
    snprintf(what, sizeof what, "inbox outside the grid (rank %d, hi)", bad);
    expect_create_error(what, &a, E_BOX, bad, -1);

    base_args(&a, ctx);
    if (rank == last)
        a.out.lo[0] = -1;
    snprintf(what, sizeof what, "outbox outside the grid (rank %d, lo)", last);
    expect_create_error(what, &a, E_BOX, last, -1);

    base_args(&a, ctx);
    if (rank == bad) {
        a.in.lo[1] = 4;
        a.in.hi[1] = 2;
    }
    snprintf(what, sizeof what, "inbox with hi < lo (rank %d)", bad);
    expect_create_error(what, &a, E_BOX | E_ARG, bad, -1);

    base_args(&a, ctx);
    if (rank == bad) {
        a.in.order[0] = 0;
        a.in.order[1] = 0;
        a.in.order[2] = 2;
    }
    snprintf(what, sizeof what, "inbox order {0,0,2} (rank %d)", bad);
    expect_create_error(what, &a, E_BOX | E_ARG, bad, -1);

    base_args(&a, ctx);
    if (rank == 0)
        a.out.order[2] = 3;
    expect_create_error("outbox order {0,1,3} (rank 0)", &a, E_BOX | E_ARG, 0, -1);

    /* R2C with outboxes on the real grid: z reaches past n2/2+1 on every rank. */
    base_args(&a, ctx);
    a.o.type = TIDE_R2C;
    a.out_null = 0;
    {
        tide_box *all = malloc((size_t)nranks * sizeof *all);
        tt_tiling_slabs(N, 0, nranks, all);
        a.out = all[rank];
        free(all);
    }
    expect_create_error("r2c outboxes on the real grid", &a, E_BOX, -1, -1);

    /* Sizes. */
    base_args(&a, ctx);
    a.in_null = a.out_null = 1;
    a.n[1] = 0;
    expect_create_error("n[1] = 0", &a, E_ARG, -1, -1);

    base_args(&a, ctx);
    a.in_null = a.out_null = 1;
    a.n[0] = -8;
    expect_create_error("n[0] = -8", &a, E_ARG, -1, -1);

    if (nranks > 1) {
        base_args(&a, ctx);
        a.in_null = a.out_null = 1;
        if (rank == bad)
            a.n[2] += 1;
        expect_create_error("n differs on one rank", &a, E_MISMATCH, -1, -1);

        base_args(&a, ctx);
        a.in_null = a.out_null = 1;
        if (rank == last)
            a.n[0] = 0;
        expect_create_error("n[0] = 0 on the last rank only", &a, E_ARG | E_MISMATCH, -1, -1);
    }

    base_args(&a, ctx);
    a.o.batch = 0;
    expect_create_error("batch 0", &a, E_ARG, -1, -1);

    base_args(&a, ctx);
    a.o.batch = -3;
    expect_create_error("batch -3", &a, E_ARG, -1, -1);

    /* Unknown enum values, one option at a time, every rank. */
    static const struct {
        const char *what;
        int field;
        int value;
    } enums[] = {
        {"type 2", 0, 2},           {"precision 2", 1, 2}, {"backend 7", 2, 7},
        {"decomposition 3", 3, 3},  {"exchange 6", 4, 6},  {"exchange -1", 4, -1},
        {"scaling 3", 5, 3},        {"planning 2", 6, 2},  {"transposed_out 2", 7, 2},
        {"location 2", 8, 2},       {"location -1", 8, -1}, {"async 2", 9, 2},
        {"async -1", 9, -1},
    };
    for (size_t i = 0; i < sizeof enums / sizeof enums[0]; i++) {
        base_args(&a, ctx);
        a.in_null = a.out_null = 1;
        tide_fft_options *o = &a.o;
        switch (enums[i].field) {
        case 0: o->type = (tide_fft_type)enums[i].value; break;
        case 1: o->precision = (tide_precision)enums[i].value; break;
        case 2: o->backend = (tide_backend)enums[i].value; break;
        case 3: o->decomposition = (tide_decomposition)enums[i].value; break;
        case 4: o->exchange = (tide_exchange)enums[i].value; break;
        case 5: o->scaling = (tide_scaling)enums[i].value; break;
        case 6: o->planning = (tide_planning)enums[i].value; break;
        case 7: o->transposed_out = enums[i].value; break;
        case 8: o->location = (tide_location)enums[i].value; break;
        case 9: o->async = enums[i].value; break;
        }
        /* transposed_out is a flag: 2 may reasonably mean "true", so only that one may pass. */
        if (enums[i].field == 7) {
            tide_fft_plan *plan = PLAN_SENTINEL;
            int st = tide_fft_plan_create(ctx, a.n, NULL, NULL, &a.o, &plan);
            int agree = 0, all = 0;
            MPI_Allreduce(&st, &agree, 1, MPI_INT, MPI_MAX, comm);
            MPI_Allreduce(&st, &all, 1, MPI_INT, MPI_MIN, comm);
            tt_check(&tally, comm, agree == all, "options %s: statuses differ between ranks",
                     enums[i].what);
            if (st == 0)
                tide_fft_plan_destroy(plan);
            continue;
        }
        snprintf(what, sizeof what, "options %s", enums[i].what);
        expect_create_error(what, &a, E_ARG, -1, -1);
    }

    /* GPU requests on this CPU context: refused on every rank, saying why. */
    static const struct {
        const char *what;
        int field, value;
    } gpu_only[] = {{"backend cuda on a CPU context", 2, TIDE_BACKEND_CUDA},
                    {"location device on a CPU context", 8, TIDE_LOCATION_DEVICE},
                    {"exchange nccl on a CPU plan", 4, TIDE_EXCHANGE_NCCL},
                    {"exchange cuda-mpi on a CPU plan", 4, TIDE_EXCHANGE_CUDA_MPI},
                    {"exchange direct on a CPU plan", 4, TIDE_EXCHANGE_DIRECT}};
    for (size_t i = 0; i < sizeof gpu_only / sizeof gpu_only[0]; i++) {
        base_args(&a, ctx);
        a.in_null = a.out_null = 1;
        if (gpu_only[i].field == 2)
            a.o.backend = (tide_backend)gpu_only[i].value;
        else if (gpu_only[i].field == 8)
            a.o.location = (tide_location)gpu_only[i].value;
        else
            a.o.exchange = (tide_exchange)gpu_only[i].value;
        expect_create_error(gpu_only[i].what, &a, E_UNSUP, -1, -1);
    }

    if (nranks > 1) {
        base_args(&a, ctx);
        a.in_null = a.out_null = 1;
        if (rank == bad)
            a.o.exchange = (tide_exchange)77;
        expect_create_error("exchange 77 on one rank", &a, E_ARG | E_MISMATCH, -1, -1);

        base_args(&a, ctx);
        a.in_null = a.out_null = 1;
        if (rank == bad)
            a.o.type = TIDE_R2C;
        expect_create_error("type differs on one rank", &a, E_MISMATCH, -1, -1);

        base_args(&a, ctx);
        a.in_null = a.out_null = 1;
        if (rank == last)
            a.o.precision = TIDE_FLOAT;
        expect_create_error("precision differs on one rank", &a, E_MISMATCH, -1, -1);

        base_args(&a, ctx);
        a.in_null = a.out_null = 1;
        if (rank == bad)
            a.o.batch = 2;
        expect_create_error("batch differs on one rank", &a, E_MISMATCH, -1, -1);

        base_args(&a, ctx);
        a.in_null = a.out_null = 1;
        if (rank == 0)
            a.o.scaling = TIDE_SCALE_FULL;
        expect_create_error("scaling differs on one rank", &a, E_MISMATCH, -1, -1);
    }

    /* Options the init function did not fill (size 0, or garbage), on one rank only. */
    base_args(&a, ctx);
    a.in_null = a.out_null = 1;
    if (rank == bad)
        memset(&a.o, 0, sizeof a.o);
    snprintf(what, sizeof what, "fft options zeroed (rank %d)", bad);
    expect_create_error(what, &a, E_ARG, bad, -1);
    expect_mention(what, tide_last_error(ctx), "tide_fft_options_init");

    base_args(&a, ctx);
    a.in_null = a.out_null = 1;
    if (rank == last)
        a.o.size = (size_t)1 << 40;
    snprintf(what, sizeof what, "fft options size 2^40 (rank %d)", last);
    expect_create_error(what, &a, E_ARG, last, -1);
    expect_mention(what, tide_last_error(ctx), "tide_fft_options_init");

    /* NULL pointers. */
    base_args(&a, ctx);
    a.np = NULL;
    expect_create_error("n NULL", &a, E_ARG, -1, -1);

    base_args(&a, ctx);
    a.plan_null = 1;
    expect_create_error("plan pointer NULL", &a, E_ARG, -1, -1);

    if (nranks > 1) {
        base_args(&a, ctx);
        if (rank == bad)
            a.np = NULL;
        expect_create_error("n NULL on one rank", &a, E_ARG | E_MISMATCH, -1, -1);

        base_args(&a, ctx);
        if (rank == last)
            a.plan_null = 1;
        expect_create_error("plan pointer NULL on one rank", &a, E_ARG | E_MISMATCH, -1, -1);

        base_args(&a, ctx);
        if (rank == bad)
            a.in_null = 1;
        expect_create_error("inbox NULL on one rank only", &a, E_MISMATCH, -1, -1);

        base_args(&a, ctx);
        if (rank != 0)
            a.out_null = 1;
        expect_create_error("outbox NULL on all ranks but 0", &a, E_MISMATCH, -1, -1);
    }

    /* No context: the message is the context-less one. */
    {
        tide_fft_options o;
        tide_fft_options_init(&o);
        tide_fft_plan *plan = PLAN_SENTINEL;
        int st = tide_fft_plan_create(NULL, N, NULL, NULL, &o, &plan);
        if (st == 0 && plan != PLAN_SENTINEL)
            tide_fft_plan_destroy(plan);
        expect_error("plan_create with ctx NULL", st, tide_last_error(NULL), E_ARG, -1, -1,
                     plan == PLAN_SENTINEL);
    }
}

static void context_errors(void)
{
    int st = tide_context_create(comm, NULL, NULL);
    expect_error("context_create with NULL output", st, tide_last_error(NULL), E_ARG, -1, -1, 1);

    tide_context_options co;
    tide_context_options_init(&co);
    co.backend = (tide_backend)9;
    tide_context *ctx = (tide_context *)PLAN_SENTINEL;
    st = tide_context_create(comm, &co, &ctx);
    if (st == 0 && ctx != (tide_context *)PLAN_SENTINEL)
        tide_context_destroy(ctx);
    expect_error("context_create with backend 9", st, tide_last_error(NULL), E_ARG, -1, -1,
                 ctx == (tide_context *)PLAN_SENTINEL);

    tide_context_options_init(&co);
    co.threads = -2;
    ctx = (tide_context *)PLAN_SENTINEL;
    st = tide_context_create(comm, &co, &ctx);
    if (st == 0 && ctx != (tide_context *)PLAN_SENTINEL)
        tide_context_destroy(ctx);
    expect_error("context_create with threads -2", st, tide_last_error(NULL), E_ARG, -1, -1,
                 ctx == (tide_context *)PLAN_SENTINEL);

    if (nranks > 1) { /* a CPU context on rank 0 and one of its choice elsewhere */
        tide_context_options_init(&co);
        co.backend = rank == 0 ? TIDE_BACKEND_CPU : TIDE_BACKEND_AUTO;
        ctx = (tide_context *)PLAN_SENTINEL;
        st = tide_context_create(comm, &co, &ctx);
        if (st == 0 && ctx != (tide_context *)PLAN_SENTINEL)
            tide_context_destroy(ctx);
        expect_error("context_create with backend cpu on rank 0, auto elsewhere", st,
                     tide_last_error(NULL), E_MISMATCH, -1, -1,
                     ctx == (tide_context *)PLAN_SENTINEL);
    }

    /* TIDE_FFT_CHUNKS out of range on the last rank, then (several ranks) differing. */
    const char *chunks[][2] = {{"1", "bad value"}, {"x3", "bad value"}, {"4", "differing"}};
    for (int i = 0; i < 3; i++) {
        int differ = i == 2;
        if (differ && nranks < 2)
            continue;
        setenv("TIDE_FFT_CHUNKS", rank == nranks - 1 ? chunks[i][0] : "3", 1);
        tide_context_options_init(&co);
        co.backend = TIDE_BACKEND_CPU;
        ctx = (tide_context *)PLAN_SENTINEL;
        st = tide_context_create(comm, &co, &ctx);
        if (st == 0 && ctx != (tide_context *)PLAN_SENTINEL)
            tide_context_destroy(ctx);
        char what[96];
        snprintf(what, sizeof what, "context_create with TIDE_FFT_CHUNKS=%s on the last rank",
                 chunks[i][0]);
        expect_error(what, st, tide_last_error(NULL), differ ? E_MISMATCH : E_ARG,
                     differ ? -1 : nranks - 1, -1, ctx == (tide_context *)PLAN_SENTINEL);
        expect_mention(what, tide_last_error(NULL), "TIDE_FFT_CHUNKS");
    }
    unsetenv("TIDE_FFT_CHUNKS");

    /* Options the init function did not fill, on one rank only. */
    int bad = nranks > 1 ? 1 : 0;
    char what[96];
    snprintf(what, sizeof what, "context_create with options zeroed (rank %d)", bad);
    tide_context_options_init(&co);
    co.backend = TIDE_BACKEND_CPU;
    if (rank == bad)
        memset(&co, 0, sizeof co);
    ctx = (tide_context *)PLAN_SENTINEL;
    st = tide_context_create(comm, &co, &ctx);
    if (st == 0 && ctx != (tide_context *)PLAN_SENTINEL)
        tide_context_destroy(ctx);
    expect_error(what, st, tide_last_error(NULL), E_ARG, bad, -1,
                 ctx == (tide_context *)PLAN_SENTINEL);
    expect_mention(what, tide_last_error(NULL), "tide_context_options_init");

    /* An older caller's struct that ends before `device`: the bytes past its size are not read
     * (device -77 would be refused), so device keeps its default. */
    tide_context_options_init(&co);
    co.backend = TIDE_BACKEND_CPU;
    co.device = -77;
    co.size = offsetof(tide_context_options, device);
    ctx = NULL;
    st = tide_context_create(comm, &co, &ctx);
    tt_check(&tally, comm, st == 0, "context_create with an older, shorter options struct: "
             "%s: %s", tide_strerror(st), tide_last_error(NULL));
    if (st == 0)
        tide_context_destroy(ctx);
}

/* Local helpers: they fail alone, so only the code, the message and the output are checked. */
static void expect_local(const char *what, int st, const void *out, const void *before,
                         size_t len)
{
    const char *msg = tide_last_error(NULL);
    tt_check(&tally, comm, st == TIDE_ERR_ARGUMENT, "%s: status %d (%s), want %s", what, st,
             tide_strerror(st), tide_strerror(TIDE_ERR_ARGUMENT));
    tt_check(&tally, comm, msg && msg[0], "%s: empty tide_last_error(NULL)", what);
    tt_check(&tally, comm, !out || memcmp(out, before, len) == 0,
             "%s: output written although the call failed", what);
    if (rank == 0)
        printf("  %-52s -> %s: %s\n", what, tide_strerror(st), msg ? msg : "(null)");
}

static void helper_errors(void)
{
    tide_box box, fresh;
    memset(&fresh, 0x5A, sizeof fresh);
    int grid[3], gfresh[3] = {-7, -7, -7};
    const int zero_n[3] = {8, 0, 5};

#define BOX_CALL(what, call)                                                                    \
    do {                                                                                        \
        box = fresh;                                                                            \
        int st_ = (call);                                                                       \
        expect_local(what, st_, &box, &fresh, sizeof box);                                      \
    } while (0)
#define GRID_CALL(what, call)                                                                   \
    do {                                                                                        \
        memcpy(grid, gfresh, sizeof grid);                                                      \
        int st_ = (call);                                                                       \
        expect_local(what, st_, grid, gfresh, sizeof grid);                                     \
    } while (0)

    BOX_CALL("box_slab split_dim 3", tide_box_slab(N, 3, 4, 0, &box));
    BOX_CALL("box_slab split_dim -1", tide_box_slab(N, -1, 4, 0, &box));
    BOX_CALL("box_slab nranks 0", tide_box_slab(N, 0, 0, 0, &box));
    BOX_CALL("box_slab rank == nranks", tide_box_slab(N, 0, 4, 4, &box));
    BOX_CALL("box_slab rank -1", tide_box_slab(N, 0, 4, -1, &box));
    BOX_CALL("box_slab n NULL", tide_box_slab(NULL, 0, 4, 0, &box));
    BOX_CALL("box_slab n[1] = 0", tide_box_slab(zero_n, 0, 4, 0, &box));
    expect_local("box_slab box NULL", tide_box_slab(N, 0, 4, 0, NULL), NULL, NULL, 0);
    BOX_CALL("box_pencil whole_dim 3", tide_box_pencil(N, 3, 4, 0, &box));
    BOX_CALL("box_pencil rank 9 of 4", tide_box_pencil(N, 2, 4, 9, &box));
    BOX_CALL("box_pencil nranks -2", tide_box_pencil(N, 2, -2, 0, &box));
    {
        const int g1[3] = {2, 0, 1}, g2[3] = {2, 2, 1};
        BOX_CALL("box_in_grid grid {2,0,1}", tide_box_in_grid(N, g1, 0, &box));
        BOX_CALL("box_in_grid rank 4 of grid {2,2,1}", tide_box_in_grid(N, g2, 4, &box));
        BOX_CALL("box_in_grid grid NULL", tide_box_in_grid(N, NULL, 0, &box));
    }
    {
        const int s100[3] = {1, 0, 0}, s000[3] = {0, 0, 0};
        GRID_CALL("proc_grid nranks 0", tide_proc_grid(0, N, s100, grid));
        GRID_CALL("proc_grid nranks -3", tide_proc_grid(-3, N, s100, grid));
        GRID_CALL("proc_grid 4 ranks, no dimension to split", tide_proc_grid(4, N, s000, grid));
        GRID_CALL("proc_grid n NULL", tide_proc_grid(4, NULL, s100, grid));
        GRID_CALL("proc_grid split NULL", tide_proc_grid(4, N, NULL, grid));
        GRID_CALL("proc_grid n[1] = 0", tide_proc_grid(4, zero_n, s100, grid));
        expect_local("proc_grid grid NULL", tide_proc_grid(4, N, s100, NULL), NULL, NULL, 0);
    }
#undef BOX_CALL
#undef GRID_CALL
}

/* A valid C2C plan with slabs; run it once and check the result. */
/* A plan over N and this rank's arrays: the input filled from a seed, the output. */
typedef struct {
    tide_fft_plan *plan;
    tide_box ib, ob;
    double *in, *out;
} plan_run;

static int make_run(tide_context *ctx, const tide_fft_options *o, unsigned seed, const char *what,
                    plan_run *r)
{
    memset(r, 0, sizeof *r);
    int st = tide_fft_plan_create(ctx, N, NULL, NULL, o, &r->plan);
    if (!tt_check(&tally, comm, st == 0, "%s: plan_create failed: %s: %s", what,
                  tide_strerror(st), tide_last_error(ctx)))
        return 0;
    tide_fft_info info;
    tide_fft_plan_info(r->plan, &info);
    tide_fft_plan_boxes(r->plan, &r->ib, &r->ob);
    r->in = malloc(info.in_bytes + 16);
    r->out = malloc(info.out_bytes + 16);
    tide_ref_fill(r->in, &r->ib, 1, 1, TIDE_DOUBLE, N, seed);
    return 1;
}

/* Forward, checked against the oracle. */
static int forward_checked(tide_context *ctx, plan_run *r, const char *what)
{
    int st = tide_fft_forward(r->plan, r->in, r->out);
    if (!tt_check(&tally, comm, st == 0, "%s: forward failed: %s: %s", what, tide_strerror(st),
                  tide_last_error(ctx)))
        return 0;
    tide_ref_error e = {0, 0, 0};
    st = tide_ref_check(comm, N, TIDE_C2C, TIDE_DOUBLE, 1, -1, 1.0, &r->ib, r->in, &r->ob, r->out,
                        &e);
    return tt_check(&tally, comm, st == 0 && e.rel_l2 <= 1e-12,
                    "%s: forward wrong: status %d, rel_l2 %.3g", what, st, e.rel_l2);
}

static void free_run(plan_run *r)
{
    free(r->in);
    free(r->out);
    tide_fft_plan_destroy(r->plan);
}

static int valid_run(tide_context *ctx, const char *what)
{
    tide_fft_options o;
    tide_fft_options_init(&o);
    plan_run r;
    int ok = make_run(ctx, &o, 42, what, &r) && forward_checked(ctx, &r, what);
    free_run(&r);
    return ok;
}

/* Options structs of other sizes than this build's. An older caller's shorter struct: the
 * members past its size keep their defaults, whatever the bytes there hold (0x55 bytes make
 * location and async out of range, so reading them fails the plan, and a batch read from
 * them would show in the input bytes). A newer caller's longer struct: the members this build
 * does not know are ignored. */
static void options_sizes(tide_context *ctx)
{
    static const struct {
        const char *what;
        size_t size;
    } older[] = {
        {"older fft options without async", offsetof(tide_fft_options, async)},
        {"older fft options without batch and later", offsetof(tide_fft_options, batch)},
    };
    for (size_t i = 0; i < sizeof older / sizeof older[0]; i++) {
        tide_fft_options o;
        tide_fft_options_init(&o);
        memset((char *)&o + older[i].size, 0x55, sizeof o - older[i].size);
        o.size = older[i].size;
        plan_run r;
        if (make_run(ctx, &o, 11, older[i].what, &r)) {
            tide_fft_info info;
            int st = tide_fft_plan_info(r.plan, &info);
            tt_check(&tally, comm, st == 0 && info.in_bytes == (size_t)info.in_count * 16,
                     "%s: %zu input bytes for %lld points: batch is not its default 1",
                     older[i].what, info.in_bytes, info.in_count);
            forward_checked(ctx, &r, older[i].what);
        }
        free_run(&r);
    }
    struct {
        tide_fft_options o;
        int later[4]; /* members of a later version */
    } newer;
    memset(&newer, 0x55, sizeof newer);
    tide_fft_options_init(&newer.o);
    newer.o.size = sizeof newer;
    plan_run r;
    if (make_run(ctx, &newer.o, 12, "newer, longer fft options", &r))
        forward_checked(ctx, &r, "newer, longer fft options");
    free_run(&r);
}

/* A stencil plan over every rank on a periodic 16x12x10 grid (the plan's blocks), or NULL
 * (the failure checked). taps/off/w: a user star of radius 1, or 0 for the 7-point default. */
static tide_stencil_plan *stencil_plan(tide_context *ctx, int taps, const int (*off)[3],
                                       const double *w, int *st)
{
    static const int n[3] = {16, 12, 10};
    tide_stencil_options o;
    tide_stencil_options_init(&o);
    for (int d = 0; d < 3; d++)
        o.bc[d] = TIDE_BC_PERIODIC;
    if (taps) {
        o.shape = TIDE_STENCIL_STAR;
        o.radius = 1;
        o.npoints = taps;
        o.offsets = off;
        o.weights = w;
    }
    tide_stencil_plan *plan = NULL;
    *st = tide_stencil_plan_create(ctx, n, NULL, &o, &plan);
    return *st ? NULL : plan;
}

/* Stencil arguments that differ between ranks: the weights, the offsets (same radius, same
 * count), the steps of a run; each the same TIDE_ERR_MISMATCH on every rank, u untouched by
 * the refused run, and the plan right afterwards. */
static void stencil_agreement(tide_context *ctx)
{
    static const int star[3][3] = {{0, 0, 0}, {-1, 0, 0}, {1, 0, 0}};
    static const int turned[3][3] = {{0, 0, 0}, {0, -1, 0}, {0, 1, 0}};
    int last = nranks - 1, st;
    tide_stencil_plan *plan = NULL;
    if (nranks > 1) {
        double w[3] = {0.5, 0.25, rank == last ? 0.1 : 0.25};
        plan = stencil_plan(ctx, 3, star, w, &st);
        expect_error("stencil weight 2 differing on the last rank", st, tide_last_error(ctx),
                     E_MISMATCH, -1, -1, plan == NULL);
        tide_stencil_plan_destroy(plan);
        w[2] = 0.25;
        plan = stencil_plan(ctx, 3, rank == last ? turned : star, w, &st);
        expect_error("stencil offsets along y on the last rank, x elsewhere", st,
                     tide_last_error(ctx), E_MISMATCH, -1, -1, plan == NULL);
        tide_stencil_plan_destroy(plan);
    }
    tide_stencil_options o;
    tide_stencil_options_init(&o);
    o.fuse = 2147483647;
    static const int n[3] = {16, 12, 10};
    st = tide_stencil_plan_create(ctx, n, NULL, &o, &plan);
    expect_error("stencil option fuse 2147483647", st, tide_last_error(ctx), E_ARG, -1, -1,
                 plan == NULL);
    tide_stencil_plan_destroy(plan);

    plan = stencil_plan(ctx, 0, NULL, NULL, &st);
    tide_stencil_info info;
    if (!tt_check(&tally, comm, st == 0 && tide_stencil_plan_info(plan, &info) == 0,
                  "stencil plan for the steps check: %s", tide_last_error(ctx)))
        return;
    double *u = tt_xmalloc((size_t)info.count * sizeof *u + 1);
    double *u0 = tt_xmalloc((size_t)info.count * sizeof *u0 + 1);
    tt_rng rng;
    tt_rng_seed(&rng, 39 + (uint64_t)rank);
    tt_fill_random(u, (size_t)info.count, 1, 1.0, &rng);
    memcpy(u0, u, (size_t)info.count * sizeof *u);
    if (nranks > 1) {
        st = tide_stencil_run(plan, u, rank == 0 ? 4 : 5);
        expect_error("stencil run of 4 steps on rank 0, 5 elsewhere", st, tide_last_error(ctx),
                     E_MISMATCH, -1, -1, !memcmp(u, u0, (size_t)info.count * sizeof *u));
    }
    st = tide_stencil_run(plan, u, rank == last ? -1 : 3);
    expect_error("stencil run of -1 steps on the last rank", st, tide_last_error(ctx), E_ARG,
                 last, -1, !memcmp(u, u0, (size_t)info.count * sizeof *u));
    st = tide_stencil_run(plan, u, 3);
    tt_check(&tally, comm, st == 0, "stencil run after the refused ones: %s",
             tide_last_error(ctx));
    free(u);
    free(u0);
    tide_stencil_plan_destroy(plan);
}

/* A multiply whose scalars differ between ranks: TIDE_ERR_MISMATCH on every rank, C
 * untouched; the same plan then multiplies. */
static void gemm_agreement(tide_context *ctx)
{
    enum { M = 12, NN = 10, K = 8 };
    tide_gemm_plan *plan = NULL;
    int st = tide_gemm_plan_create(ctx, M, NN, K, NULL, &plan);
    if (!tt_check(&tally, comm, st == 0, "gemm plan for the scalars check: %s",
                  tide_last_error(ctx)))
        return;
    /* each rank's blocks fit the whole matrices' sizes */
    size_t ca = (size_t)M * K, cb = (size_t)K * NN, cc = (size_t)M * NN;
    double *a = tt_xmalloc(ca * sizeof *a + 1), *b = tt_xmalloc(cb * sizeof *b + 1);
    double *c = tt_xmalloc(cc * sizeof *c + 1), *c0 = tt_xmalloc(cc * sizeof *c0 + 1);
    tt_rng rng;
    tt_rng_seed(&rng, 4039 + (uint64_t)rank);
    tt_fill_random(a, ca, 1, 1.0, &rng);
    tt_fill_random(b, cb, 1, 1.0, &rng);
    tt_fill_random(c, cc, 1, 1.0, &rng);
    memcpy(c0, c, cc * sizeof *c);
    int last = nranks - 1;
    if (nranks > 1) {
        st = tide_gemm_execute(plan, rank == last ? 2.0 : 1.0, a, b, 0.5, c);
        expect_error("gemm alpha 2 on the last rank, 1 elsewhere", st, tide_last_error(ctx),
                     E_MISMATCH, -1, -1, !memcmp(c, c0, cc * sizeof *c));
        st = tide_gemm_execute(plan, 1.0, a, b, rank == 0 ? -0.0 : 0.0, c);
        expect_error("gemm beta -0 on rank 0, +0 elsewhere", st, tide_last_error(ctx),
                     E_MISMATCH, -1, -1, !memcmp(c, c0, cc * sizeof *c));
        const double al[2] = {1, 0}, be[2] = {0.5, rank == 0 ? 0.0 : 1.0};
        st = tide_gemm_execute_complex(plan, al, a, b, be, c);
        expect_error("gemm complex beta differing in its imaginary part", st,
                     tide_last_error(ctx), E_ARG | E_MISMATCH, -1, -1,
                     !memcmp(c, c0, cc * sizeof *c));
    }
    st = tide_gemm_execute(plan, 1.0, a, b, 0.5, c);
    tt_check(&tally, comm, st == 0, "gemm after the refused ones: %s", tide_last_error(ctx));
    free(a);
    free(b);
    free(c);
    free(c0);
    tide_gemm_plan_destroy(plan);
}

/* Some ranks calling forward and the others backward on one plan: refused on every rank. */
static void direction_agreement(tide_context *ctx)
{
    if (nranks < 2)
        return;
    tide_fft_options o;
    tide_fft_options_init(&o);
    plan_run r;
    if (make_run(ctx, &o, 5, "direction agreement", &r)) {
        int st = rank == 0 ? tide_fft_backward(r.plan, r.out, r.in)
                           : tide_fft_forward(r.plan, r.in, r.out);
        expect_error("backward on rank 0, forward elsewhere", st, tide_last_error(ctx),
                     E_MISMATCH, -1, -1, 1);
        forward_checked(ctx, &r, "forward after the mixed calls");
    }
    free_run(&r);
}

/* A context with live plans refuses to be destroyed, on every rank alike (also where only the
 * last rank still holds one), and stays usable; once they are destroyed, it goes. */
static void context_lifetime(tide_context *ctx)
{
    tide_fft_options o;
    tide_fft_options_init(&o);
    plan_run r;
    if (!make_run(ctx, &o, 3, "context lifetime", &r)) {
        free_run(&r);
        return;
    }
    int st = tide_context_destroy(ctx);
    expect_error("context destroyed with a plan live", st, tide_last_error(ctx), E_ARG, -1, -1,
                 1);
    tt_check(&tally, comm, strstr(tide_last_error(ctx), "1 plan") != NULL,
             "the refusal names the count: \"%s\"", tide_last_error(ctx));
    forward_checked(ctx, &r, "forward after the refused destroy");
    tide_fft_plan *kept = rank == nranks - 1 ? r.plan : NULL;
    if (kept)
        r.plan = NULL;
    free_run(&r);
    st = tide_context_destroy(ctx);
    expect_error("context destroyed with a plan live on the last rank", st,
                 tide_last_error(ctx), E_ARG, nranks - 1, -1, 1);
    tide_fft_plan_destroy(kept);
}

/* Execution with a NULL array where this rank has data: every rank must fail, nobody hang. */
static void execute_errors(tide_context *ctx)
{
    tide_fft_options o;
    tide_fft_options_init(&o);
    o.decomposition = TIDE_DECOMP_SLABS;
    /* x-slabs of 8 planes and y-slabs of 6 over at most 4 ranks: every rank holds data on both
     * sides, so a NULL array is always an error. */
    plan_run r;
    if (!make_run(ctx, &o, 7, "execute errors", &r)) {
        free_run(&r);
        return;
    }
    tide_fft_plan *plan = r.plan;
    double *in = r.in, *out = r.out;
    int st;
    int bad = nranks > 1 ? 1 : 0, last = nranks - 1;
    char what[96];

    snprintf(what, sizeof what, "forward with in NULL on rank %d", bad);
    st = tide_fft_forward(plan, rank == bad ? NULL : in, out);
    expect_error(what, st, tide_last_error(ctx), E_ARG, -1, -1, 1);

    snprintf(what, sizeof what, "forward with out NULL on rank %d", last);
    st = tide_fft_forward(plan, in, rank == last ? NULL : out);
    expect_error(what, st, tide_last_error(ctx), E_ARG, -1, -1, 1);

    snprintf(what, sizeof what, "backward with in NULL on rank 0");
    st = tide_fft_backward(plan, rank == 0 ? NULL : out, in);
    expect_error(what, st, tide_last_error(ctx), E_ARG, -1, -1, 1);

    st = tide_fft_forward(NULL, in, out);
    tt_check(&tally, comm, st == TIDE_ERR_ARGUMENT, "forward with plan NULL: status %d (%s)", st,
             tide_strerror(st));

    /* The same plan still works after the failures. */
    tide_ref_fill(in, &r.ib, 1, 1, TIDE_DOUBLE, N, 7);
    forward_checked(ctx, &r, "forward after failed executions");
    free_run(&r);
}

/* tide_host_alloc: NULL arguments are errors; memory comes zeroed and 64-byte aligned (the
 * CPU context's promise), and frees; freeing NULL is fine. */
static void host_alloc_checks(tide_context *ctx)
{
    void *p = (void *)&p;
    tt_check(&tally, comm, tide_host_alloc(NULL, 64, &p) == TIDE_ERR_ARGUMENT && p == (void *)&p,
             "tide_host_alloc(NULL ctx) must fail and leave *ptr alone");
    tt_check(&tally, comm, tide_host_alloc(ctx, 64, NULL) == TIDE_ERR_ARGUMENT,
             "tide_host_alloc(ptr NULL) must fail");
    int st = tide_host_alloc(ctx, 100003, &p);
    int ok = st == 0 && p && ((uintptr_t)p & 63) == 0;
    for (size_t i = 0; ok && i < 100003; i++)
        ok = ((unsigned char *)p)[i] == 0;
    tt_check(&tally, comm, ok, "tide_host_alloc(100003 bytes): status %d, not zeroed or aligned",
             st);
    tt_check(&tally, comm, st != 0 || tide_host_free(ctx, p) == 0, "tide_host_free failed");
    tt_check(&tally, comm, tide_host_free(ctx, NULL) == 0, "tide_host_free(NULL) must succeed");

    /* The collective measurements: a NULL result on one rank fails on all of them, and so do
     * exchanges that do not exist or need a GPU (this is a CPU context). */
    double g = -1;
    st = tide_measure_exchange(ctx, TIDE_EXCHANGE_AUTO, 1 << 16, rank == nranks - 1 ? NULL : &g);
    expect_error("tide_measure_exchange with gbps NULL on the last rank", st,
                 tide_last_error(ctx), E_ARG, nranks - 1, -1, 1);
    st = tide_measure_exchange(ctx, (tide_exchange)9, 1 << 16, &g);
    expect_error("tide_measure_exchange of exchange 9", st, tide_last_error(ctx), E_ARG, -1, -1,
                 g == -1);
    st = tide_measure_exchange(ctx, TIDE_EXCHANGE_NCCL, 1 << 16, &g);
    expect_error("tide_measure_exchange of nccl on a CPU context", st, tide_last_error(ctx),
                 E_UNSUP, -1, -1, g == -1);
    st = tide_measure_exchange(ctx, TIDE_EXCHANGE_A2AV, rank == 0 ? 1 << 16 : 1 << 17, &g);
    if (nranks > 1)
        expect_error("tide_measure_exchange with bytes differing between ranks", st,
                     tide_last_error(ctx), BIT(TIDE_ERR_MISMATCH), -1, -1, g == -1);
    for (int how = TIDE_EXCHANGE_AUTO; how <= TIDE_EXCHANGE_P2P; how++) {
        st = tide_measure_exchange(ctx, (tide_exchange)how, 1 << 16, &g);
        tt_check(&tally, comm, st == 0 && (nranks == 1 ? g == 0 : g > 0),
                 "tide_measure_exchange of exchange %d: status %d, %g GB/s", how, st, g);
    }
    tide_rates r = {-1, -1, -1, -1, -1};
    st = tide_measure_rates_together(ctx, 1 << 20, rank == nranks - 1 ? NULL : &r);
    expect_error("tide_measure_rates_together with rates NULL on the last rank", st,
                 tide_last_error(ctx), E_ARG, nranks - 1, -1, r.host_copy == -1);
    st = tide_measure_rates_together(ctx, 1 << 20, &r);
    tt_check(&tally, comm, st == 0 && r.host_copy > 0 && r.h2d == 0,
             "tide_measure_rates_together on a CPU context: status %d, host copy %g GB/s, "
             "h2d %g", st, r.host_copy, r.h2d);
}

/* Collective: the agreement checks on a context on the GPU; the exit status. */
/* tide_context_set_progress: a negative or non-finite interval refused with the call named,
 * 0 (none) and a NULL context handled. */
static void progress_errors(tide_context *ctx)
{
    const double bad[] = {-1, NAN, INFINITY};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int st = tide_context_set_progress(ctx, bad[i]);
        const char *msg = tide_last_error(ctx);
        tt_check(&tally, comm, st == TIDE_ERR_ARGUMENT && strstr(msg, "set_progress"),
                 "tide_context_set_progress(%g): status %d (%s), want TIDE_ERR_ARGUMENT",
                 bad[i], st, msg);
    }
    tt_check(&tally, comm, tide_context_set_progress(NULL, 1) == TIDE_ERR_ARGUMENT,
             "tide_context_set_progress(NULL, 1) not refused");
    tt_check(&tally, comm, tide_context_set_progress(ctx, 0) == TIDE_SUCCESS,
             "tide_context_set_progress(ctx, 0) refused");
}

static int gpu_agreement(void)
{
    tide_context_options co;
    tide_context_options_init(&co);
    co.backend = TIDE_BACKEND_CUDA;
    tide_context *ctx = NULL;
    int st = tide_context_create(comm, &co, &ctx);
    if (tt_check(&tally, comm, st == 0, "cuda context_create failed: %s: %s",
                 tide_strerror(st), tide_last_error(NULL))) {
        stencil_agreement(ctx);
        gemm_agreement(ctx);
        direction_agreement(ctx);
        context_lifetime(ctx);
        st = tide_context_destroy(ctx);
        tt_check(&tally, comm, st == 0, "context destroy once its plans are gone: %s",
                 tide_last_error(ctx));
    }
    int rc = tt_finish(&tally, comm, "test_errors (cuda)", "checks");
    MPI_Finalize();
    return rc;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    comm = MPI_COMM_WORLD;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nranks);
    if (rank == 0)
        printf("test_errors on %d ranks (each line: the call, then the error every rank got)\n",
               nranks);

    /* TIDE_TEST_BACKEND=cuda: the agreement of run and execute arguments on a context on the
     * GPU (host arrays through it), whose paths differ from the CPU's after the agreement */
    const char *be = getenv("TIDE_TEST_BACKEND");
    if (be && !strcmp(be, "cuda")) {
        if (!tt_all(comm, tt_gpus_or_skip() > 0)) {
            MPI_Finalize();
            return 77;
        }
        return gpu_agreement();
    }
    context_errors();
    helper_errors();

    tide_context_options co;
    tide_context_options_init(&co);
    co.backend = TIDE_BACKEND_CPU;
    tide_context *ctx = NULL;
    int st = tide_context_create(comm, &co, &ctx);
    if (tt_check(&tally, comm, st == 0, "context_create failed: %s: %s", tide_strerror(st),
                 tide_last_error(NULL))) {
        plan_create_errors(ctx);
        execute_errors(ctx);
        options_sizes(ctx);
        host_alloc_checks(ctx);
        stencil_agreement(ctx);
        gemm_agreement(ctx);
        direction_agreement(ctx);
        context_lifetime(ctx);
        progress_errors(ctx);
        valid_run(ctx, "after all failures");
        st = tide_context_destroy(ctx);
        tt_check(&tally, comm, st == 0, "context destroy once its plans are gone: %s",
                 tide_last_error(ctx));
    }

    int rc = tt_finish(&tally, comm, "test_errors", "checks");
    MPI_Finalize();
    return rc;
}
