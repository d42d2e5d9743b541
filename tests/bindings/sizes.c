/* sizes.c: the C sizes of tide.h's structs, for the Fortran test to compare its module's
 * types with (tide_test_sizeof(i), i in the order of the test's list). */
#include <stddef.h>

#include "tide.h"

size_t tide_test_sizeof(int i);

size_t tide_test_sizeof(int i)
{
    static const size_t sizes[] = {
        sizeof(tide_box), sizeof(tide_context_options), sizeof(tide_fft_options),
        sizeof(tide_fft_info), sizeof(tide_poisson_options), sizeof(tide_poisson_info),
        sizeof(tide_stencil_options), sizeof(tide_stencil_info), sizeof(tide_gemm_options),
        sizeof(tide_gemm_info), sizeof(tide_band_options), sizeof(tide_band_info)};
    return i >= 0 && i < (int)(sizeof sizes / sizeof sizes[0]) ? sizes[i] : 0;
}
