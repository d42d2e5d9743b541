/*
 * test_runner.c: the out-of-card runner (plan/runner.h) on the GPU, on 1 to 3 ranks sharing
 * it; exits 77 (SKIP) where the build has no CUDA or no GPU is usable. `test_runner cpu`: the
 * same checks on the CPU backend, where the runner runs the chunks one after another in host
 * memory without a pipeline.
 *
 * A pass of CHUNKS chunks moves a random host array through the device: chunk i is uploaded
 * into slot buffer 0, its steps copy it into buffer 1 (a copy op), run a probe (a local op that
 * counts its runs and fails where told) and take part in an exchange (a collective op: one
 * MPI_Allreduce with the other ranks per chunk, recording e->failed), and buffer 1 comes back
 * into the output. Checks:
 *   a) no failure: the output equals the input, every rank's exchange ran once per chunk;
 *   b) the probe of the last rank fails at its first, a middle and its last chunk: that rank
 *      returns the probe's code with a message naming the op and the chunk, the others
 *      succeed, every rank's exchange ran once per chunk (a hang fails by alarm), the failing
 *      rank's from the failing chunk on seeing the failure, its probe not run after it; the
 *      next run is right;
 *   c) the same pass without the exchange: the run ends at the failure (the probe ran up to
 *      the failing chunk and no further);
 *   d) a binding that fails: its code, "binding the steps of chunk";
 *   e) start and wait: a second start while a run is in flight and a wait with none are
 *      refused; the started run is right; a runner of bad shape is refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common.h"
#include "plan/runner.h"

enum { CHUNKS = 9, CH = 4099, ALARM_S = 120 };

static tt_tally tally;
static int me, nranks;

/* The pass under test and what its ops saw. */
typedef struct {
    float *in, *out;
    size_t bytes;             /* one chunk's */
    tide_op copy, probe, exchange;
    int with_exchange;
    int fail_at;              /* the probe fails on this chunk (-1: never) */
    int bind_fail_at;         /* the binding fails on this chunk (-1: never) */
    int chunk;                /* the chunk being bound (the probe reads it) */
    int probes, exchanges, saw_failed;
} job;

static int describe(void *user, int i, tide_xfer *up, int *nup, tide_xfer *down, int *ndown)
{
    const job *j = user;
    tide_box whole = {{0, 0, 0}, {CHUNKS * CH, 1, 1}, {0, 1, 2}};
    tide_box region = {{i * CH, 0, 0}, {(i + 1) * CH, 1, 1}, {0, 1, 2}};
    up[0] = (tide_xfer){j->in, whole, region, 0, 0, region};
    down[0] = (tide_xfer){j->out, whole, region, 1, 0, region};
    *nup = *ndown = 1;
    return TIDE_SUCCESS;
}

static int probe_execute(const tide_op *op, const tide_env *e, void *src, void *dst)
{
    (void)e, (void)src, (void)dst;
    job *j = op->state;
    j->probes++;
    return j->chunk == j->fail_at ? TIDE_ERR_BACKEND : TIDE_SUCCESS;
}

static int exchange_execute(const tide_op *op, const tide_env *e, void *src, void *dst)
{
    (void)src, (void)dst;
    job *j = op->state;
    int one = 1, sum = 0;
    j->exchanges++;
    j->saw_failed = e->failed;
    return MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS &&
                   sum == nranks
               ? TIDE_SUCCESS
               : TIDE_ERR_MPI;
}

static void none(tide_op *op, const tide_env *e) { (void)op, (void)e; }

static const tide_op_class probe_class = {probe_execute, none, 0, 0, NULL};
static const tide_op_class exchange_class = {exchange_execute, none, 1, 0, NULL};

static int steps(void *user, int i, const tide_env *e, void *const *buf, tide_step *step, int *n)
{
    job *j = user;
    j->chunk = i;
    if (i == j->bind_fail_at)
        return TIDE_ERR_NOMEM;
    (void)e;
    int k = 0;
    step[k++] = (tide_step){&j->copy, buf[0], buf[1]};
    step[k++] = (tide_step){&j->probe, buf[1], buf[1]};
    if (j->with_exchange)
        step[k++] = (tide_step){&j->exchange, buf[1], buf[1]};
    *n = k;
    return TIDE_SUCCESS;
}

static void job_init(job *j, float *in, float *out, int with_exchange, int fail_at)
{
    memset(j, 0, sizeof *j);
    j->in = in, j->out = out, j->bytes = CH * sizeof(float);
    j->with_exchange = with_exchange, j->fail_at = fail_at, j->bind_fail_at = -1;
    tide_op_copy(&j->copy, &j->bytes, j->bytes);
    j->probe = (tide_op){.cls = &probe_class, .state = j};
    snprintf(j->probe.what, sizeof j->probe.what, "probe");
    j->exchange = (tide_op){.cls = &exchange_class, .state = j};
    snprintf(j->exchange.what, sizeof j->exchange.what, "exchange");
    for (int k = 0; k < CHUNKS * CH; k++)
        out[k] = -1.0f;
}

static tide_runner_pass pass_of(job *j)
{
    return (tide_runner_pass){.nchunks = CHUNKS, .elem = sizeof(float), .batch = 1,
                              .max_up = 1, .max_down = 1, .describe = describe, .steps = steps,
                              .user = j};
}

static int same(const float *a, const float *b)
{
    return memcmp(a, b, CHUNKS * CH * sizeof(float)) == 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    setvbuf(stdout, NULL, _IOLBF, 0);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    int cpu = argc > 1 && !strcmp(argv[1], "cpu");
    if (!cpu && !tt_all(MPI_COMM_WORLD, tt_gpus_or_skip() > 0)) {
        MPI_Finalize();
        return 77;
    }
    alarm(ALARM_S);
    tide_env env = {.be = cpu ? &tide_backend_cpu : tide_backend_cuda(), .threads = 1};
    size_t bufs[2] = {CH * sizeof(float), CH * sizeof(float)};
    tide_runner_desc rd = {.env = &env, .slots = 3, .nbufs = 2, .buf_bytes = bufs,
                           .max_steps = 3};
    tide_runner *r = NULL;
    char err[TIDE_MSG_LEN] = "";
    int st = tide_runner_create(&rd, &r, err, sizeof err);
    if (!tt_check(&tally, MPI_COMM_WORLD, st == 0, "runner: create: %d %s", st, err)) {
        MPI_Finalize();
        return 1;
    }
    tt_rng rng;
    tt_rng_seed(&rng, 1234 + (uint64_t)me);
    float *in = tt_xmalloc(CHUNKS * CH * sizeof(float)), *out = tt_xmalloc(CHUNKS * CH * 4);
    for (int k = 0; k < CHUNKS * CH; k++)
        in[k] = (float)tt_rnd(&rng);
    job j;

    /* a) */
    job_init(&j, in, out, 1, -1);
    tide_runner_pass p = pass_of(&j);
    st = tide_runner_run(r, &p, err, sizeof err);
    tt_check(&tally, MPI_COMM_WORLD, st == 0 && same(in, out) && j.exchanges == CHUNKS,
             "a) a pass: status %d (%s), exchanges %d of %d", st, err, j.exchanges, CHUNKS);

    /* b) */
    const int at[3] = {0, CHUNKS / 2, CHUNKS - 1};
    int last = me == nranks - 1;
    for (int c = 0; c < 3; c++) {
        job_init(&j, in, out, 1, last ? at[c] : -1);
        p = pass_of(&j);
        err[0] = '\0';
        st = tide_runner_run(r, &p, err, sizeof err);
        char want[64];
        snprintf(want, sizeof want, "probe on chunk %d of %d failed", at[c], CHUNKS);
        int ok = last ? st == TIDE_ERR_BACKEND && strstr(err, want) &&
                            j.probes == at[c] + 1 && j.saw_failed == TIDE_ERR_BACKEND
                      : st == 0 && same(in, out) && j.saw_failed == 0;
        tt_check(&tally, MPI_COMM_WORLD, ok && j.exchanges == CHUNKS,
                 "b) the probe fails at chunk %d on rank %d: status %d (%s), probes %d, "
                 "exchanges %d of %d, the last one seeing failure %d", at[c], nranks - 1, st,
                 err, j.probes, j.exchanges, CHUNKS, j.saw_failed);
        job_init(&j, in, out, 1, -1);
        p = pass_of(&j);
        st = tide_runner_run(r, &p, err, sizeof err);
        tt_check(&tally, MPI_COMM_WORLD, st == 0 && same(in, out),
                 "b) the run after the failure at chunk %d: status %d (%s)", at[c], st, err);
    }

    /* c) */
    job_init(&j, in, out, 0, CHUNKS / 2);
    p = pass_of(&j);
    st = tide_runner_run(r, &p, err, sizeof err);
    tt_check(&tally, MPI_COMM_WORLD, st == TIDE_ERR_BACKEND && j.probes == CHUNKS / 2 + 1,
             "c) a local pass failing at chunk %d: status %d (%s), probes %d", CHUNKS / 2, st,
             err, j.probes);

    /* d) */
    job_init(&j, in, out, 0, -1);
    j.bind_fail_at = 2;
    p = pass_of(&j);
    st = tide_runner_run(r, &p, err, sizeof err);
    tt_check(&tally, MPI_COMM_WORLD,
             st == TIDE_ERR_NOMEM && strstr(err, "binding the steps of chunk 2") && j.probes == 2,
             "d) a failing binding: status %d (%s), probes %d", st, err, j.probes);

    /* e) */
    job_init(&j, in, out, 0, -1);
    p = pass_of(&j);
    int s1 = tide_runner_start(r, &p), s2 = tide_runner_start(r, &p);
    int w1 = tide_runner_wait(r, err, sizeof err), w2 = tide_runner_wait(r, err, sizeof err);
    tt_check(&tally, MPI_COMM_WORLD,
             !s1 && s2 == TIDE_ERR_ARGUMENT && !w1 && w2 == TIDE_ERR_ARGUMENT && same(in, out),
             "e) start %d, again %d, wait %d, again %d", s1, s2, w1, w2);
    tide_runner *bad = NULL;
    rd.slots = TIDE_RUNNER_SLOTS + 1;
    st = tide_runner_create(&rd, &bad, err, sizeof err);
    tt_check(&tally, MPI_COMM_WORLD, st == TIDE_ERR_ARGUMENT && !bad && err[0],
             "e) a runner of %d slots: status %d", rd.slots, st);

    tide_runner_destroy(r);
    free(in), free(out);
    int rc = tt_finish(&tally, MPI_COMM_WORLD, "test_runner", "checks");
    MPI_Finalize();
    return rc;
}
