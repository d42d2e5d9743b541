/*
 * mpi_waits.c: where an MPI program's ranks spend their time inside MPI, per call kind.
 *
 *   mpirun -np P -x LD_PRELOAD=build/bench/libmpi_waits.so PROGRAM ARGS...
 *
 * A PMPI interposer: each wrapped call (the collectives and the point-to-point completions
 * Tide and the peers in bench/ use) adds its wall time and one to its count; MPI_Finalize then
 * prints one line a rank on stderr:
 *
 *   mpi_waits rank R: Allreduce N calls S s, Alltoallv N calls S s, ...
 *
 * (kinds never called are left out). On ranks that share cores the time inside a call is mostly
 * waiting for the ranks it needs, descheduled, so comparing two programs' lines says which
 * spends more of its time synchronising, and at which calls (docs/performance.md, the CPU FFT
 * on four ranks).
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

enum { ALLREDUCE, BCAST, BARRIER, ALLTOALL, ALLTOALLV, SENDRECV, WAIT, WAITALL, KINDS };
static const char *const names[KINDS] = {"Allreduce", "Bcast",    "Barrier", "Alltoall",
                                         "Alltoallv", "Sendrecv", "Wait",    "Waitall"};
static double spent[KINDS];
static long calls[KINDS];

static void add(int k, double t0)
{
    spent[k] += MPI_Wtime() - t0;
    calls[k]++;
}

int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
    double t0 = MPI_Wtime();
    int e = PMPI_Allreduce(s, r, n, t, op, c);
    return add(ALLREDUCE, t0), e;
}

int MPI_Bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm c)
{
    double t0 = MPI_Wtime();
    int e = PMPI_Bcast(b, n, t, root, c);
    return add(BCAST, t0), e;
}

int MPI_Barrier(MPI_Comm c)
{
    double t0 = MPI_Wtime();
    int e = PMPI_Barrier(c);
    return add(BARRIER, t0), e;
}

int MPI_Alltoall(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
                 MPI_Comm c)
{
    double t0 = MPI_Wtime();
    int e = PMPI_Alltoall(s, sn, st, r, rn, rt, c);
    return add(ALLTOALL, t0), e;
}

int MPI_Alltoallv(const void *s, const int sn[], const int sd[], MPI_Datatype st, void *r,
                  const int rn[], const int rd[], MPI_Datatype rt, MPI_Comm c)
{
    double t0 = MPI_Wtime();
    int e = PMPI_Alltoallv(s, sn, sd, st, r, rn, rd, rt, c);
    return add(ALLTOALLV, t0), e;
}

int MPI_Sendrecv(const void *s, int sn, MPI_Datatype st, int dest, int stag, void *r, int rn,
                 MPI_Datatype rt, int src, int rtag, MPI_Comm c, MPI_Status *status)
{
    double t0 = MPI_Wtime();
    int e = PMPI_Sendrecv(s, sn, st, dest, stag, r, rn, rt, src, rtag, c, status);
    return add(SENDRECV, t0), e;
}

int MPI_Wait(MPI_Request *q, MPI_Status *status)
{
    double t0 = MPI_Wtime();
    int e = PMPI_Wait(q, status);
    return add(WAIT, t0), e;
}

int MPI_Waitall(int n, MPI_Request q[], MPI_Status s[])
{
    double t0 = MPI_Wtime();
    int e = PMPI_Waitall(n, q, s);
    return add(WAITALL, t0), e;
}

int MPI_Finalize(void)
{
    int rank;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char line[512];
    int at = snprintf(line, sizeof line, "mpi_waits rank %d:", rank);
    for (int k = 0, first = 1; k < KINDS; k++) {
        if (!calls[k] || at >= (int)sizeof line)
            continue;
        at += snprintf(line + at, sizeof line - (size_t)at, "%s %s %ld calls %.6f s",
                       first ? "" : ",", names[k], calls[k], spent[k]);
        first = 0;
    }
    fprintf(stderr, "%s\n", line);
    return PMPI_Finalize();
}
