#!/usr/bin/env bash
# test_mpi_waits.sh MPIEXEC LIB TIDE: libmpi_waits.so preloaded into `tide fft` on 3 ranks
# prints one line a rank at MPI_Finalize, with the calls the transform makes (its status
# agreements are Allreduces, its reshapes an Alltoallv each) counted and timed.
set -euo pipefail
mpiexec=$1 lib=$(realpath "$2") tide=$3
# a build with AddressSanitizer wants its runtime first among the preloaded libraries
asan=$(ldd "$tide" | awk '/libasan/ {print $3; exit}')
log=$("$mpiexec" -n 3 -x LD_PRELOAD="${asan:+$asan:}$lib" "$tide" fft c2c cpu double 12 10 9 \
    -slabs -a2av -n 2 2>&1) || { echo "$log"; echo "test_mpi_waits: the run failed" >&2; exit 1; }
for r in 0 1 2; do
    line=$(grep "^mpi_waits rank $r:" <<<"$log") ||
        { echo "$log"; echo "test_mpi_waits: no line for rank $r" >&2; exit 1; }
    for kind in Allreduce Alltoallv; do
        grep -Eq " $kind [1-9][0-9]* calls [0-9]+\.[0-9]{6} s" <<<"$line" ||
            { echo "$line"; echo "test_mpi_waits: rank $r counted no $kind" >&2; exit 1; }
    done
done
echo "test_mpi_waits: 3 lines, each with its Allreduce and Alltoallv calls"
