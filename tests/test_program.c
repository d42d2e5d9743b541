/*
 * test_program.c: the plan core's executor (plan/program.h) on the CPU backend, one process.
 *
 *  a) the multiply op in a program of one op, in place in C, its operands bound before each
 *     run: every transpose pair, real and complex, float and double, beta zero and not, leading
 *     dimensions larger than the matrices, against a naive loop; a second run with operands
 *     bound anew (another k, lda and beta) gives that multiply (skipped in a build without a
 *     CBLAS);
 *  b) the failure rule: after a local op fails, the later local ops are skipped, the collective
 *     ops and those that complete earlier work still run, with tide_env.failed set to the
 *     failure, and the program returns the first failure and names its op; a failure given by
 *     the caller is returned with no op named, and no local op runs;
 *  c) a pass's steps on one chunk (tide_steps_run, what the out-of-card runner does for each
 *     chunk) as the out-of-card multiply runs them: a C tile loaded into an accumulator by a
 *     copy op whose byte count is bound per run, updated twice (two panels, beta then 1),
 *     stored back, against a naive loop; the same failure rule as b) on steps, over one chunk
 *     and over a second chunk after the failure (only its collective and completing steps
 *     run), the first failing op named;
 *  d) an op that overwrites its input, reading the caller's input: run by its execute_staged
 *     with the stage as its work space where it has one that takes the run, else from a copy
 *     of the input in the stage; either way the input is left as it was and the output right.
 */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common.h"
#include "plan/program.h"

static tt_tally tally;

/* ---- a) the multiply op ------------------------------------------------------------------ */

/* Element (i, j) of op(X) of an rows x cols column-major X with leading dimension ld (trans:
 * tide.h's transposes; X stored as op(X)'s transpose when trans). */
static double complex elem_of(const void *x, int dbl, int cplx, long long ld, int trans,
                              long long i, long long j)
{
    long long r = trans ? j : i, c = trans ? i : j, at = c * ld + r;
    double complex v;
    if (cplx)
        v = dbl ? ((const double complex *)x)[at] : ((const float complex *)x)[at];
    else
        v = dbl ? ((const double *)x)[at] : ((const float *)x)[at];
    return trans == TIDE_CONJTRANS ? conj(v) : v;
}

static void elem_set(void *x, int dbl, int cplx, long long at, double complex v)
{
    if (cplx && dbl)
        ((double complex *)x)[at] = v;
    else if (cplx)
        ((float complex *)x)[at] = (float complex)v;
    else if (dbl)
        ((double *)x)[at] = creal(v);
    else
        ((float *)x)[at] = (float)creal(v);
}

/* count random elements (imaginary parts zero for real matrices). */
static void *random_matrix(tt_rng *rng, int dbl, int cplx, long long count)
{
    size_t elem = (dbl ? sizeof(double) : sizeof(float)) * (cplx ? 2 : 1);
    void *x = tt_xmalloc(elem * (size_t)count);
    for (long long i = 0; i < count; i++)
        elem_set(x, dbl, cplx, i, tt_rnd(rng) + (cplx ? I * tt_rnd(rng) : 0));
    return x;
}

/* Runs prog (one multiply op bound to x) on c and compares C with alpha op(A) op(B) + beta C0
 * worked naively (c0: C before the run). Returns 1 when every element is within the
 * precision's tolerance. */
static int run_and_compare(const tide_program *prog, const tide_env *e,
                           const tide_gemm_operands *x, void *c, const void *c0)
{
    const tide_gemm_desc *g = &x->g;
    const char *failed_at = "";
    int st = tide_program_run(prog, e, NULL, NULL, c, TIDE_SUCCESS, &failed_at, NULL, 0);
    if (!tt_local(&tally, st == 0, "multiply op: status %d at %s", st, failed_at))
        return 0;
    double complex al = x->alpha.re + I * x->alpha.im, be = x->beta.re + I * x->beta.im;
    double tol = (g->dbl ? 1e-13 : 1e-5) * (double)(g->k + 2), worst = 0;
    for (long long j = 0; j < g->n; j++)
        for (long long i = 0; i < g->m; i++) {
            double complex s = 0;
            for (long long l = 0; l < g->k; l++)
                s += elem_of(x->a, g->dbl, g->cplx, g->lda, g->transa, i, l) *
                     elem_of(x->b, g->dbl, g->cplx, g->ldb, g->transb, l, j);
            double complex want = al * s + be * elem_of(c0, g->dbl, g->cplx, g->ldc, 0, i, j);
            double complex got = elem_of(c, g->dbl, g->cplx, g->ldc, 0, i, j);
            worst = tt_max_nan(worst, cabs(got - want));
        }
    return tt_local(&tally, worst <= tol, "multiply op %s%s %c%c %lldx%lldx%lld: error %.3g",
                    g->cplx ? "complex " : "", g->dbl ? "double" : "float",
                    "NTC"[g->transa], "NTC"[g->transb], g->m, g->n, g->k, worst);
}

/* One case: a program of one multiply op made for g, run twice with operands bound anew. */
static void multiply_case(tt_rng *rng, int dbl, int cplx, int ta, int tb)
{
    const long long m = 7, n = 5, kmax = 6, pad = 2;
    tide_env e = {.be = &tide_backend_cpu, .threads = 1};
    tide_gemm_desc g = {.dbl = dbl, .cplx = cplx, .transa = ta, .transb = tb, .m = m, .n = n,
                        .k = kmax, .ldc = m + pad};
    g.lda = (ta ? kmax : m) + pad, g.ldb = (tb ? n : kmax) + pad;
    void *a = random_matrix(rng, dbl, cplx, g.lda * (ta ? m : kmax));
    void *b = random_matrix(rng, dbl, cplx, g.ldb * (tb ? kmax : n));
    void *c = random_matrix(rng, dbl, cplx, g.ldc * n);
    size_t elem = (dbl ? sizeof(double) : sizeof(float)) * (cplx ? 2 : 1);
    size_t cbytes = elem * (size_t)(g.ldc * n);
    void *c0 = tt_xmalloc(cbytes);
    void *blas = NULL;
    e.be->gemm_create(&blas);
    tide_gemm_operands x = {.g = g, .alpha = {0.75, cplx ? -0.5 : 0}, .beta = {0, 0},
                            .a = a, .b = b};
    tide_program prog = {.nops = 1};
    tide_op_gemm(&prog.ops[0], blas, &g, &x);
    prog.ops[0].src = prog.ops[0].dst = TIDE_LOC_OUT;
    tt_local(&tally, prog.ops[0].kind == TIDE_OP_GEMM && !prog.ops[0].cls->collective &&
             prog.ops[0].cost.flops == tide_gemm_ops(&g) * m * n * kmax,
             "multiply op: kind %d, its cost %g flops", prog.ops[0].kind,
             prog.ops[0].cost.flops);
    memcpy(c0, c, cbytes);
    run_and_compare(&prog, &e, &x, c, c0);
    /* bound anew: k 3, its operands read from further into A and B with the same leading
     * dimensions, and a beta that keeps C */
    x.g.k = 3;
    x.a = (const char *)a + (size_t)(ta ? 1 : g.lda) * elem;
    x.beta = (tide_scalar){-1.5, cplx ? 0.25 : 0};
    memcpy(c0, c, cbytes);
    run_and_compare(&prog, &e, &x, c, c0);
    tide_program_destroy(&prog, &e);
    e.be->gemm_destroy(blas);
    free(a), free(b), free(c), free(c0);
}

static void test_multiply(void)
{
    void *h = NULL;
    if (tide_backend_cpu.gemm_create(&h) == TIDE_ERR_UNSUPPORTED) {
        printf("test_program: a) skipped: this build has no CBLAS\n");
        return;
    }
    tide_backend_cpu.gemm_destroy(h);
    tt_rng rng;
    tt_rng_seed(&rng, 40);
    for (int prec = 0; prec < 2; prec++)
        for (int cplx = 0; cplx < 2; cplx++)
            for (int ta = TIDE_NOTRANS; ta <= TIDE_CONJTRANS; ta++)
                for (int tb = TIDE_NOTRANS; tb <= TIDE_CONJTRANS; tb++)
                    multiply_case(&rng, prec, cplx, ta, tb);
    printf("test_program: a) the multiply op: %d checks so far\n", tally.checks);
}

/* ---- b) the failure rule ----------------------------------------------------------------- */

/* What each test op saw: ran, and e->failed when it ran. */
static int ran[8], saw[8];

static int record(const tide_op *op, const tide_env *e)
{
    int i = op->steps; /* the op's index in the program */
    ran[i]++;
    saw[i] = e->failed;
    return TIDE_SUCCESS;
}

static int ok_execute(const tide_op *op, const tide_env *e, void *src, void *dst)
{
    (void)src, (void)dst;
    return record(op, e);
}

static int fail_execute(const tide_op *op, const tide_env *e, void *src, void *dst)
{
    (void)src, (void)dst;
    record(op, e);
    return TIDE_ERR_BACKEND;
}

static void none(tide_op *op, const tide_env *e) { (void)op, (void)e; }

static const tide_op_class local_class = {ok_execute, none, 0, 0, NULL};
static const tide_op_class failing_class = {fail_execute, none, 0, 0, NULL};
static const tide_op_class collective_class = {ok_execute, none, 1, 0, NULL};
static const tide_op_class completes_class = {ok_execute, none, 0, 1, NULL};

static void test_failure_rule(void)
{
    const tide_op_class *cls[] = {&local_class,      &failing_class, &local_class,
                                  &collective_class, &completes_class, &local_class};
    const char *what[] = {"local", "failing", "skipped", "collective", "completes", "skipped"};
    int n = 6;
    tide_program prog = {.nops = n};
    for (int i = 0; i < n; i++) {
        prog.ops[i].cls = cls[i];
        prog.ops[i].steps = i;
        prog.ops[i].src = prog.ops[i].dst = TIDE_LOC_OUT;
        snprintf(prog.ops[i].what, sizeof prog.ops[i].what, "%s", what[i]);
    }
    tide_env e = {.be = &tide_backend_cpu, .threads = 1};
    char out[8];
    for (int given = 0; given < 2; given++) {
        memset(ran, 0, sizeof ran), memset(saw, 0, sizeof saw);
        const char *failed_at = "";
        int status = given ? TIDE_ERR_MPI : TIDE_SUCCESS;
        int st = tide_program_run(&prog, &e, NULL, NULL, out, status, &failed_at, NULL, 0);
        int want = given ? TIDE_ERR_MPI : TIDE_ERR_BACKEND, first = given ? 0 : 1;
        tt_local(&tally, st == want && !strcmp(failed_at, given ? "" : "failing"),
                 "failure rule (status %d given): returned %d at \"%s\", want %d at \"%s\"",
                 status, st, failed_at, want, given ? "" : "failing");
        tt_local(&tally, ran[0] == first && ran[1] == first && !ran[2] && !ran[5],
                 "failure rule (status %d given): local ops ran %d %d %d %d times, want %d %d "
                 "0 0", status, ran[0], ran[1], ran[2], ran[5], first, first);
        tt_local(&tally, ran[3] == 1 && saw[3] == want && ran[4] == 1 && saw[4] == want,
                 "failure rule (status %d given): the collective op ran %d times seeing %d, "
                 "the completing op %d times seeing %d, want once each seeing %d", status,
                 ran[3], saw[3], ran[4], saw[4], want);
    }
    printf("test_program: b) the failure rule\n");
}

/* ---- c) a chunk's ops ---------------------------------------------------------------- */

static void test_chunk(void)
{
    void *h = NULL;
    if (tide_backend_cpu.gemm_create(&h) == TIDE_ERR_UNSUPPORTED) {
        printf("test_program: c) skipped: this build has no CBLAS\n");
        return;
    }
    tt_rng rng;
    tt_rng_seed(&rng, 41);
    const long long m = 5, n = 4, k = 6, ld = 8; /* the accumulator's ld, larger than m */
    tide_env e = {.be = &tide_backend_cpu, .threads = 1};
    tide_gemm_desc g = {.dbl = 1, .m = m, .n = n, .k = k / 2, .lda = m, .ldb = k, .ldc = ld};
    double *a = random_matrix(&rng, 1, 0, m * k), *b = random_matrix(&rng, 1, 0, k * n);
    double *tile = random_matrix(&rng, 1, 0, ld * n), *acc = random_matrix(&rng, 1, 0, ld * n);
    double *c0 = tt_xmalloc(sizeof(double) * ld * n);
    memcpy(c0, tile, sizeof(double) * ld * n);
    size_t bytes = 0, most = sizeof(double) * (size_t)(ld * n);
    tide_gemm_operands x = {.g = g, .alpha = {0.5, 0}, .beta = {-2, 0}, .a = a, .b = b};
    tide_op ops[3] = {{.src = 0, .dst = 1}, {.src = 1, .dst = 1}, {.src = 1, .dst = 0}};
    tide_op_copy(&ops[0], &bytes, most);
    tide_op_gemm(&ops[1], h, &g, &x);
    tide_op_copy(&ops[2], &bytes, most);
    void *chunk[2] = {tile, acc};
    tide_step step[3];
    bytes = most;
    const tide_op *failed = NULL;
    int st = 0; /* panel 0: load, update; panel 1: update, store */
    tide_steps_run(step, tide_steps_of(ops, 2, chunk, step), &e, &st, &failed);
    x.beta = tide_scalar_real(1);
    x.a = a + m * (k / 2), x.b = b + k / 2;
    tide_steps_run(step, tide_steps_of(ops + 1, 2, chunk, step), &e, &st, &failed);
    double worst = 0;
    for (long long j = 0; j < n; j++)
        for (long long i = 0; i < m; i++) {
            double s = 0;
            for (long long l = 0; l < k; l++)
                s += a[i + l * m] * b[l + j * k];
            worst = tt_max_nan(worst, fabs(tile[i + j * ld] - (0.5 * s - 2 * c0[i + j * ld])));
        }
    tt_local(&tally, st == 0 && !failed && worst <= 1e-13 * (k + 2) &&
             ops[0].kind == TIDE_OP_COPY && ops[0].cost.mem_bytes == 2.0 * (double)most,
             "chunk ops: status %d (failed op %s), error %.3g", st, failed ? failed->what : "",
             worst);
    /* the failure rule on steps: after op 1 fails the local op 2 is skipped, the collective
     * op 3 and the completing op 4 run with e->failed set; a chunk after it runs only those */
    tide_op bad[5] = {{.cls = &local_class, .steps = 0}, {.cls = &failing_class, .steps = 1},
                      {.cls = &local_class, .steps = 2}, {.cls = &collective_class, .steps = 3},
                      {.cls = &completes_class, .steps = 4}};
    for (int chunks = 1; chunks <= 2; chunks++) {
        memset(ran, 0, sizeof ran);
        memset(saw, 0, sizeof saw);
        st = 0;
        failed = NULL;
        int coll = 0;
        tide_step bs[5];
        for (int c = 0; c < chunks; c++)
            coll = tide_steps_run(bs, tide_steps_of(bad, 5, chunk, bs), &e, &st, &failed);
        tt_local(&tally, st == TIDE_ERR_BACKEND && failed == &bad[1] && coll &&
                         ran[0] == 1 && ran[1] == 1 && !ran[2] && ran[3] == chunks &&
                         ran[4] == chunks && saw[3] == st && saw[4] == st,
                 "chunk steps over %d chunks: a failing op returned %d at %s, the ops ran "
                 "%d %d %d %d %d times, the last two seeing failed %d %d", chunks, st,
                 failed ? failed->what : "none", ran[0], ran[1], ran[2], ran[3], ran[4],
                 saw[3], saw[4]);
    }
    tide_backend_cpu.gemm_destroy(h);
    free(a), free(b), free(tile), free(acc), free(c0);
    printf("test_program: c) a chunk's ops\n");
}

/* ---- d) an op that overwrites its input ---------------------------------------------- */

enum { STAGED_N = 37 };
static int staged_runs, plain_runs;

/* dst = 2 src + 1 through src, which it overwrites (as a c2r does). */
static int overwriting_execute(const tide_op *op, const tide_env *e, void *src, void *dst)
{
    (void)op, (void)e;
    double *s = src, *d = dst;
    for (int i = 0; i < STAGED_N; i++)
        s[i] = 2 * s[i], d[i] = s[i] + 1;
    plain_runs++;
    return TIDE_SUCCESS;
}

/* The same with its first pass into the stage; where op->steps is 1 it cannot. */
static int staging_execute(const tide_op *op, const tide_env *e, const void *src, void *stage,
                           void *dst)
{
    (void)e;
    if (op->steps == 1)
        return TIDE_ERR_UNSUPPORTED;
    const double *s = src;
    double *w = stage, *d = dst;
    for (int i = 0; i < STAGED_N; i++)
        w[i] = 2 * s[i], d[i] = w[i] + 1;
    staged_runs++;
    return TIDE_SUCCESS;
}

static void test_staged(void)
{
    static const tide_op_class staging_class = {overwriting_execute, none, 0, 0,
                                                 staging_execute};
    static const tide_op_class plain_class = {overwriting_execute, none, 0, 0, NULL};
    const tide_op_class *cls[3] = {&staging_class, &staging_class, &plain_class};
    const char *how[3] = {"its execute_staged", "a refusing execute_staged", "no execute_staged"};
    int want_staged[3] = {1, 0, 0};
    tide_env e = {.be = &tide_backend_cpu, .threads = 1};
    tt_rng rng;
    tt_rng_seed(&rng, 43);
    for (int c = 0; c < 3; c++) {
        double in[STAGED_N], kept[STAGED_N], out[STAGED_N], w0[STAGED_N], w1[STAGED_N];
        for (int i = 0; i < STAGED_N; i++)
            in[i] = kept[i] = tt_rnd(&rng), out[i] = w0[i] = w1[i] = NAN;
        tide_program prog = {.nops = 1};
        tide_op *o = &prog.ops[0];
        *o = (tide_op){.cls = cls[c], .kind = TIDE_OP_FFT, .overwrites_input = 1, .steps = c};
        tide_program_place(&prog, 0);
        o->stage_bytes = sizeof in;
        void *w[2] = {w0, w1};
        const char *failed_at = "";
        staged_runs = plain_runs = 0;
        int st = tide_program_run(&prog, &e, w, in, out, TIDE_SUCCESS, &failed_at, NULL, 0);
        double worst = 0;
        for (int i = 0; i < STAGED_N; i++)
            worst = tt_max_nan(worst, fabs(out[i] - (2 * kept[i] + 1)));
        tt_local(&tally, st == 0 && o->src == TIDE_LOC_IN && o->dst == TIDE_LOC_OUT &&
                         o->stage_input && !memcmp(in, kept, sizeof in) && worst == 0 &&
                         staged_runs == want_staged[c] && plain_runs == 1 - want_staged[c],
                 "an op overwriting its input, by %s: status %d, placed %d -> %d (staged %d), "
                 "input %s, output error %.3g, ran staged %d and plain %d times", how[c], st,
                 o->src, o->dst, o->stage_input,
                 memcmp(in, kept, sizeof in) ? "modified" : "kept", worst, staged_runs,
                 plain_runs);
    }
    printf("test_program: d) an op that overwrites its input\n");
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    test_multiply();
    test_failure_rule();
    test_chunk();
    test_staged();
    return tt_finish_local(&tally, "test_program", "checks");
}
