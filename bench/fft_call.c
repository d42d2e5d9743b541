/* fft_call: a C loop of forward transforms, loaded by bench/python_overhead.py (ctypes), so
 * that the same plan on the same arrays is timed from C and from Python in turns, in one
 * process, under the same load. */
#include <mpi.h>

#include "tide.h"

double fft_call_seconds(tide_fft_plan *plan, const void *in, void *out, int calls);

/* Seconds per call of `calls` forward transforms; negative when one fails. */
double fft_call_seconds(tide_fft_plan *plan, const void *in, void *out, int calls)
{
    double t0 = MPI_Wtime();
    for (int c = 0; c < calls; c++)
        if (tide_fft_forward(plan, in, out) != TIDE_SUCCESS)
            return -1.0;
    return (MPI_Wtime() - t0) / (calls > 0 ? calls : 1);
}
