/* layout: prints the size of each public struct of tide.h and the offset of each member, one
 * "struct member offset" line each ("struct sizeof size" for the size), for the bindings'
 * tests to compare their own declarations with. */
#include <stddef.h>
#include <stdio.h>

#include "tide.h"

#define SIZE(s) printf(#s " sizeof %zu\n", sizeof(s))
#define AT(s, m) printf(#s " " #m " %zu\n", offsetof(s, m))

int main(void)
{
    SIZE(tide_box); AT(tide_box, lo); AT(tide_box, hi); AT(tide_box, order);
    SIZE(tide_context_options); AT(tide_context_options, backend);
    AT(tide_context_options, threads); AT(tide_context_options, device_budget);
    AT(tide_context_options, bind); AT(tide_context_options, device);
    SIZE(tide_device_info); AT(tide_device_info, cc_major); AT(tide_device_info, total_bytes);
    AT(tide_device_info, cpuset); AT(tide_device_info, nccl_version);
    SIZE(tide_rates); AT(tide_rates, d2d);
    SIZE(tide_fft_options); AT(tide_fft_options, type); AT(tide_fft_options, batch);
    AT(tide_fft_options, location); AT(tide_fft_options, stream); AT(tide_fft_options, async);
    AT(tide_fft_options, arrays_kept);
    SIZE(tide_fft_info); AT(tide_fft_info, inplace_bytes); AT(tide_fft_info, flops);
    AT(tide_fft_info, location); AT(tide_fft_info, round_trips);
    SIZE(tide_fft_cost); AT(tide_fft_cost, exchanges); AT(tide_fft_cost, cpu_seconds);
    SIZE(tide_poisson_options); AT(tide_poisson_options, batch); AT(tide_poisson_options, bc);
    AT(tide_poisson_options, h); AT(tide_poisson_options, alpha);
    AT(tide_poisson_options, eigen); AT(tide_poisson_options, stream);
    AT(tide_poisson_options, faces); AT(tide_poisson_options, out_of_card);
    SIZE(tide_poisson_info); AT(tide_poisson_info, flops); AT(tide_poisson_info, chunks);
    SIZE(tide_stencil_options); AT(tide_stencil_options, weights);
    AT(tide_stencil_options, offsets); AT(tide_stencil_options, bc);
    AT(tide_stencil_options, source); AT(tide_stencil_options, fuse);
    AT(tide_stencil_options, stream); AT(tide_stencil_options, level_steps);
    AT(tide_stencil_options, overlap);
    SIZE(tide_stencil_info); AT(tide_stencil_info, box); AT(tide_stencil_info, halo_points);
    AT(tide_stencil_info, halo_seconds); AT(tide_stencil_info, overlapped);
    SIZE(tide_band_options); AT(tide_band_options, kl); AT(tide_band_options, diagonals);
    AT(tide_band_options, steps_per_pass); AT(tide_band_options, stream);
    AT(tide_band_options, slab_rows);
    SIZE(tide_band_info); AT(tide_band_info, bytes); AT(tide_band_info, flops);
    AT(tide_band_info, halo_rows); AT(tide_band_info, halo_seconds);
    AT(tide_band_info, slab_rows);
    SIZE(tide_gemm_options); AT(tide_gemm_options, lda); AT(tide_gemm_options, grid);
    AT(tide_gemm_options, stream); AT(tide_gemm_options, blocks); AT(tide_gemm_options, gpus);
    AT(tide_gemm_options, domain);
    SIZE(tide_gemm_info); AT(tide_gemm_info, tile_m); AT(tide_gemm_info, bytes_up);
    AT(tide_gemm_info, bound); AT(tide_gemm_info, grid); AT(tide_gemm_info, location);
    return 0;
}
