/*
 * test_threads.c: several contexts used at once from threads of one process (CPU backend).
 *
 * MPI_THREAD_MULTIPLE is required (exit 77, reported SKIP, where the MPI library does not
 * provide it). Each of NTHREADS threads has its own duplicate of MPI_COMM_WORLD (made on the
 * main thread, in the same order on every rank), creates a CPU context on it, creates several
 * FFT plans at once with the other threads (random odd sizes, c2c and r2c, double and float),
 * runs them forward and backward, checks each direction against the serial FFTW oracle
 * (apps/reference.c) over its communicator, and destroys everything. FFTW's planner is not
 * reentrant: this fails or crashes unless the library makes it thread-safe.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "reference.h"
#include "tide.h"

enum { NTHREADS = 4, NPLANS = 4 };

/* Fixed accuracy bar, as in test_fft. */
#define TOL_DOUBLE 1e-12
#define TOL_FLOAT 1e-5

typedef struct {
    int index;
    MPI_Comm comm;
    tt_tally tally;
} worker;

typedef struct {
    int n[3];
    tide_fft_type type;
    tide_precision prec;
    tide_fft_plan *plan;
    tide_box ib, ob;
    size_t in_bytes, out_bytes;
} job;

/* Case k of thread t: the same on every rank (it depends on t and k only). */
static void make_job(int t, int k, job *j)
{
    tt_rng rng;
    tt_rng_seed(&rng, 0x7E4D0000u + (uint64_t)t * 131u + (uint64_t)k);
    memset(j, 0, sizeof *j);
    for (int d = 0; d < 3; d++)
        j->n[d] = 2 * tt_rng_below(&rng, 9) + 3; /* odd, 3 to 19 */
    j->type = (k + t) % 2 ? TIDE_R2C : TIDE_C2C;
    j->prec = (k / 2 + t) % 2 ? TIDE_FLOAT : TIDE_DOUBLE;
}

static void job_str(const job *j, char *buf, size_t len)
{
    snprintf(buf, len, "n=%dx%dx%d %s %s", j->n[0], j->n[1], j->n[2],
             j->type == TIDE_R2C ? "r2c" : "c2c", j->prec == TIDE_FLOAT ? "float" : "double");
}

/* Transform src into dst in one direction and compare with the oracle. */
static void run_direction(worker *w, tide_context *ctx, const job *j, int dir, const void *src,
                          void *dst, const char *desc)
{
    const char *name = dir < 0 ? "forward" : "backward";
    int st = dir < 0 ? tide_fft_forward(j->plan, src, dst) : tide_fft_backward(j->plan, src, dst);
    if (!tt_check(&w->tally, w->comm, st == 0, "thread %d: %s: %s: %s", w->index, desc, name,
                  tide_last_error(ctx)))
        return;
    double N = (double)j->n[0] * j->n[1] * j->n[2];
    tide_ref_error e = {0, 0, 0};
    st = tide_ref_check(w->comm, j->n, j->type, j->prec, 1, dir, dir < 0 ? 1 : 1 / N,
                        dir < 0 ? &j->ib : &j->ob, src, dir < 0 ? &j->ob : &j->ib, dst, &e);
    double tol = j->prec == TIDE_FLOAT ? TOL_FLOAT : TOL_DOUBLE;
    tt_check(&w->tally, w->comm, st == 0 && e.rel_l2 <= tol,
             "thread %d: %s: %s vs oracle: status %d, rel_l2 %.3g (tol %.0e)", w->index, desc,
             name, st, e.rel_l2, tol);
}

static void *work(void *arg)
{
    worker *w = arg;
    tide_context_options co;
    tide_context_options_init(&co);
    co.backend = TIDE_BACKEND_CPU;
    co.threads = 1 + w->index % 2; /* threaded FFTW plans on some contexts */
    tide_context *ctx = NULL;
    int st = tide_context_create(w->comm, &co, &ctx);
    if (!tt_check(&w->tally, w->comm, st == 0, "thread %d: tide_context_create: %s", w->index,
                  tide_last_error(NULL)))
        return NULL;
    job jobs[NPLANS];
    /* Every plan first, so planning (and later destruction) overlaps the other threads'. */
    for (int k = 0; k < NPLANS; k++) {
        job *j = &jobs[k];
        char desc[96];
        make_job(w->index, k, j);
        job_str(j, desc, sizeof desc);
        tide_fft_options o;
        tide_fft_options_init(&o);
        o.type = j->type;
        o.precision = j->prec;
        o.scaling = TIDE_SCALE_FULL;
        o.planning = k % 3 == 2 ? TIDE_PLAN_MEASURE : TIDE_PLAN_ESTIMATE;
        st = tide_fft_plan_create(ctx, j->n, NULL, NULL, &o, &j->plan);
        tide_fft_info info;
        if (!st)
            st = tide_fft_plan_boxes(j->plan, &j->ib, &j->ob);
        if (!st)
            st = tide_fft_plan_info(j->plan, &info);
        if (!st) {
            j->in_bytes = info.in_bytes;
            j->out_bytes = info.out_bytes;
        }
        tt_check(&w->tally, w->comm, st == 0, "thread %d: %s: plan: %s", w->index, desc,
                 tide_last_error(ctx));
    }
    for (int k = 0; k < NPLANS; k++) {
        job *j = &jobs[k];
        if (!j->plan)
            continue;
        char desc[96];
        job_str(j, desc, sizeof desc);
        void *in = malloc(j->in_bytes + 1), *out = malloc(j->out_bytes + 1);
        void *back = malloc(j->in_bytes + 1);
        if (!in || !out || !back) {
            fprintf(stderr, "test_threads: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        tide_ref_fill(in, &j->ib, 1, j->type == TIDE_C2C, j->prec, j->n, 77u + (unsigned)k);
        run_direction(w, ctx, j, -1, in, out, desc);
        run_direction(w, ctx, j, +1, out, back, desc);
        free(in);
        free(out);
        free(back);
    }
    for (int k = 0; k < NPLANS; k++)
        tide_fft_plan_destroy(jobs[k].plan);
    tide_context_destroy(ctx);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = MPI_THREAD_SINGLE, rank;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0)
            printf("SKIP: the MPI library provides thread level %d, not MPI_THREAD_MULTIPLE "
                   "(%d)\n", provided, MPI_THREAD_MULTIPLE);
        MPI_Finalize();
        return 77;
    }
    worker w[NTHREADS];
    pthread_t th[NTHREADS];
    int started[NTHREADS];
    /* Communicators are made in one order on every rank, before any thread runs. */
    for (int t = 0; t < NTHREADS; t++) {
        w[t].index = t;
        w[t].tally = (tt_tally){0, 0};
        MPI_Comm_dup(MPI_COMM_WORLD, &w[t].comm);
    }
    /* A thread that cannot be started runs its work here instead, so its peers on the other
     * ranks are not left waiting. */
    for (int t = 0; t < NTHREADS; t++) {
        started[t] = pthread_create(&th[t], NULL, work, &w[t]) == 0;
        if (!started[t]) {
            printf("note: rank %d: thread %d not started, its work runs on the main thread\n",
                   rank, t);
            work(&w[t]);
        }
    }
    tt_tally all = {0, 0};
    for (int t = 0; t < NTHREADS; t++) {
        if (started[t])
            pthread_join(th[t], NULL);
        all.checks += w[t].tally.checks;
        all.failed += w[t].tally.failed;
        MPI_Comm_free(&w[t].comm);
    }
    int rc = tt_finish(&all, MPI_COMM_WORLD, "test_threads", "checks");
    MPI_Finalize();
    return rc;
}
