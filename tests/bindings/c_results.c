/* c_results.c: the C library's own answers for a context or plan the Fortran test made, for
 * it to compare its module's calls with (tests/bindings/test_fortran.f90, test_c_api). Each
 * returns what tide.h returns: scalars and text copied out, so no Fortran type is involved. */
#include <stddef.h>
#include <string.h>

#include "tide.h"

int tide_test_threads(const tide_context *ctx);
void tide_test_gpu_status(const tide_context *ctx, char *buf, size_t len);
int tide_test_device(const tide_context *ctx, int *device, int *cuda_aware, int *nccl,
                     char *name, size_t len);
int tide_test_fft_cost(const tide_fft_plan *plan, int direction, double out[9]);
int tide_test_poisson_cost(const tide_poisson_plan *plan, double out[9]);
int tide_test_describe(int kind, const void *plan, char *buf, size_t len);

static void copy_text(char *buf, size_t len, const char *s)
{
    size_t n = strlen(s);
    if (n >= len)
        n = len - 1;
    memcpy(buf, s, n);
    buf[n] = '\0';
}

int tide_test_threads(const tide_context *ctx)
{
    int t;
    return tide_context_threads(ctx, &t) == TIDE_SUCCESS ? t : -1;
}

void tide_test_gpu_status(const tide_context *ctx, char *buf, size_t len)
{
    copy_text(buf, len, tide_context_gpu_status(ctx));
}

int tide_test_device(const tide_context *ctx, int *device, int *cuda_aware, int *nccl,
                     char *name, size_t len)
{
    tide_device_info d;
    int st = tide_context_device(ctx, &d);
    if (st == TIDE_SUCCESS) {
        *device = d.device;
        *cuda_aware = d.cuda_aware_mpi;
        *nccl = d.nccl_version;
        copy_text(name, len, d.name);
    }
    return st;
}

static void cost_out(const tide_fft_cost *c, double out[9])
{
    const double v[9] = {c->flops, c->fft_bytes, c->move_bytes, c->exchange_bytes,
                         c->h2d_bytes, c->d2h_bytes, c->exchanges, c->fft_passes,
                         c->cpu_seconds};
    memcpy(out, v, sizeof v);
}

int tide_test_fft_cost(const tide_fft_plan *plan, int direction, double out[9])
{
    tide_fft_cost c;
    int st = tide_fft_plan_cost(plan, direction, &c);
    if (st == TIDE_SUCCESS)
        cost_out(&c, out);
    return st;
}

int tide_test_poisson_cost(const tide_poisson_plan *plan, double out[9])
{
    tide_fft_cost c;
    int st = tide_poisson_plan_cost(plan, &c);
    if (st == TIDE_SUCCESS)
        cost_out(&c, out);
    return st;
}

/* kind: 0 FFT, 1 Poisson, 2 stencil, 3 GEMM. */
int tide_test_describe(int kind, const void *plan, char *buf, size_t len)
{
    switch (kind) {
    case 0: return tide_fft_plan_describe(plan, buf, len);
    case 1: return tide_poisson_plan_describe(plan, buf, len);
    case 2: return tide_stencil_plan_describe(plan, buf, len);
    case 3: return tide_gemm_plan_describe(plan, buf, len);
    default: return TIDE_ERR_ARGUMENT;
    }
}
