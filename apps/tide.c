/* tide.c: the `tide` command: subcommand dispatch, --help, --version. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <mpi.h>
#include "app_util.h"
#include "tide.h"
#include "tide_app.h"

static const char *usage =
    "usage: mpirun -np P tide <command> [arguments]\n"
    "\n"
    "commands:\n"
    "  fft      time and verify a distributed 3D FFT (tide fft --help)\n"
    "  poisson  time and verify a Poisson/Helmholtz solve, each dimension periodic or\n"
    "           bounded by Neumann or Dirichlet faces, one optionally stretched\n"
    "           (tide poisson --help)\n"
    "  stencil  time and verify explicit stencil time steps (tide stencil --help)\n"
    "  band     time and verify band matrix powers x <- A^S x (tide band --help)\n"
    "  gemm     time and verify a matrix multiply, in or out of card (tide gemm --help)\n"
    "  info     ranks, threads, backend and GPU status of this run\n"
    "\n"
    "  tide --help      this text\n"
    "  tide --version   the library version\n"
    "\n"
    "environment: TIDE_LOG=warn|info|debug (rank-prefixed messages on stderr; another value\n"
    "is warned about and means warn)\n"
    "\n" APP_EXIT_TEXT;

/* Rank 0: the first failure writing stdout, its errno (0: none). */
static int out_failed;

static int rank0(void)
{
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r == 0;
}

void tide_say(const char *fmt, ...)
{
    if (!rank0())
        return;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    app_flush_out(&out_failed);
}

void tide_warn(const char *fmt, ...)
{
    if (!rank0())
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fflush(stderr);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rc;
    if (argc < 2) {
        tide_warn("tide: missing the command (fft, poisson, stencil, band, gemm or info)\nTry 'tide "
                  "--help'.\n");
        rc = APP_USAGE;
    } else if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        tide_say("%s", usage);
        rc = 0;
    } else if (!strcmp(argv[1], "--version")) {
        tide_say("tide %s\n", tide_version());
        rc = 0;
    } else if (!strcmp(argv[1], "fft")) {
        rc = tide_cmd_fft(argc - 2, argv + 2);
    } else if (!strcmp(argv[1], "poisson")) {
        rc = tide_cmd_poisson(argc - 2, argv + 2);
    } else if (!strcmp(argv[1], "stencil")) {
        rc = tide_cmd_stencil(argc - 2, argv + 2);
    } else if (!strcmp(argv[1], "band")) {
        rc = tide_cmd_band(argc - 2, argv + 2);
    } else if (!strcmp(argv[1], "gemm")) {
        rc = tide_cmd_gemm(argc - 2, argv + 2);
    } else if (!strcmp(argv[1], "info")) {
        rc = tide_cmd_info(argc - 2, argv + 2);
    } else {
        tide_warn("tide: unknown command '%s': expected fft, poisson, stencil, band, gemm "
                  "or info\nTry 'tide --help'.\n", argv[1]);
        rc = APP_USAGE;
    }
    if (rank0())
        app_flush_out(&out_failed);
    if (out_failed) {
        tide_warn("tide: cannot write the standard output: %s\n", strerror(out_failed));
        rc = 1;
    }
    MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return rc;
}
