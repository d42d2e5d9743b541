/* tide_f.c: what the Fortran module cannot do in Fortran: turn a Fortran MPI handle into the C
 * communicator (MPI_Comm_f2c may be a macro, and MPI_Comm's C type differs between MPI
 * libraries). Lives in libtide_f, beside the module, so libtide exports tide.h alone. */
#include <mpi.h>

#include "tide.h"

int tide_f_context_create(MPI_Fint comm, const tide_context_options *opts, tide_context **ctx);

int tide_f_context_create(MPI_Fint comm, const tide_context_options *opts, tide_context **ctx)
{
    return tide_context_create(MPI_Comm_f2c(comm), opts, ctx);
}
