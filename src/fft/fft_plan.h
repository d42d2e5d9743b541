/*
 * fft_plan.h: the FFT plan's parts shared by its files (private): fft.c makes plans (the
 * request agreed on every rank, the choice of decomposition, streamed or in-memory plans),
 * fft_build.c builds a plan's stage chain, programs and buffers, fft_run.c answers queries and
 * executes.
 */
#ifndef TIDE_FFT_PLAN_H
#define TIDE_FFT_PLAN_H

#include "plan/layout.h"
#include "plan/program.h"
#include "plan/solver.h"
#include "plan/streamed.h"

struct tide_fft_plan {
    tide_context *ctx;
    int held;             /* counted on ctx (tide_context_hold) */
    int n[3], nout[3];    /* input (real for R2C) and output grid */
    int half;             /* R2C: the dimension halved (2; a solver's highest transformed by a
                           * DFT; -1 when it has none: real data throughout) */
    tide_fft_options o;
    tide_box inbox, outbox;
    size_t in_elem, out_elem;
    tide_program fwd, bwd;
    tide_program solve;   /* a solver plan's only program (solver.h) */
    const tide_fft_middle *mid; /* a solver plan's middle op; NULL for transforms */
    tide_env env;         /* what the ops run with (backend, buffers, stream) */
    void *w[2];
    size_t wbytes;
    tide_decomposition decomp;
    tide_exchange exchange;
    void *entry;          /* event: execution waits for the caller's earlier CUDA work */
    void *din, *dout;     /* host arrays on the GPU: their device copies */
    size_t dio_bytes;
    /* Host arrays streamed through the GPU in chunks instead of the program. */
    tide_streamed *streamed;
    char streamed_what[384];
    int streamed_exchanges; /* per transform: 0 (one rank), 1 (transposed) or 2 */
    int cpu_x;            /* a streamed solve: the CPU does the x transforms ... */
    double cpu_seconds;   /* ... in this time (tide_solver_streamed_cpu_seconds) */
    double fwd_scale, bwd_scale;
    int plane_pass;       /* FFTs of the plan run Tide's plane pass (bit 1), its strided
                           * pass (bit 2) (gpu/fft_plane.h) */
};

/* Bytes of every field of box b on this rank (real: the real side of an r2c plan). */
size_t tide_fft_box_bytes(const tide_fft_plan *p, const tide_box *b, int real);

/* The device memory a GPU plan needs, checked against the context's budget. */
size_t tide_fft_device_need(const tide_fft_plan *p);

/* The chain, buffers and programs of a validated request (the layouts the caller's boxes ask
 * for, uin and uout). Local failures only, the reason in err. */
int tide_fft_build(tide_fft_plan *p, tide_layout uin, tide_layout uout, char *err, size_t len);

#endif
