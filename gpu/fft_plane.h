/*
 * fft_plane.h: Tide's own plane pass (gpu/fft_plane.cu; private, C linkage, no CUDA types):
 * the 2D C2C transforms of a stack of planes (and R2C and C2R of real planes, below) in one
 * kernel that reads each plane from device memory once and writes it once, its second
 * dimension's lines read back from the L2 cache.
 *
 * The planes are dense, ny rows of nx points each (x fastest), planes * nx * ny points in all.
 * One persistent kernel takes work items in a fixed order from a counter: the row items of a
 * plane (rows of nx points, transformed along x, stored to the output) come a few planes ahead
 * of its column items (blocks of columns, transformed along y in place in the output), which
 * wait on the plane's count of finished row items; a plane's rows are therefore still in the L2
 * when its columns read them. Each item transforms its lines with Stockham radix-8 stages
 * (and one radix-2 or radix-4 stage) through shared memory, the first stage reading device
 * memory and the last writing it. No normalization (cuFFT's convention).
 */
#ifndef TIDE_GPU_FFT_PLANE_H
#define TIDE_GPU_FFT_PLANE_H

#include <stddef.h>
#include <stdint.h>
#include "tide.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tide_gpu_plane tide_gpu_plane;

/* The points of a work item: a row item's rows, or a column item's block of columns, take
 * this many points (a column item's rows: this / ny points). */
#define TIDE_GPU_PLANE_ITEM_POINTS 4096

/* Whether the pass takes planes of nx x ny points (powers of two from 64 to 1024, a plane of at
 * most 8 MiB); if not, why says which. */
int tide_gpu_plane_supported(int dbl, int nx, int ny, char *why, size_t len);
/* A plane pass for planes planes, sign -1 (forward) or +1. lag: how many planes the row items
 * run ahead of the column items (0: chosen from the grid's size). Returns 0,
 * TIDE_ERR_UNSUPPORTED or TIDE_ERR_BACKEND, with the reason in why. */
int tide_gpu_plane_create(int dbl, int nx, int ny, int planes, int sign, int lag,
                          tide_gpu_plane **out, char *why, size_t len);
/* Real planes, nx reals a row (x fastest), ny rows, dense planes (each ny row pitches after the
 * last): sign -1, the R2C transforms of real planes (rows rpitch reals apart) into their
 * spectra (nx / 2 + 1 complex points a row, rows cpitch points apart); sign +1, the C2R
 * transforms of such spectra into real planes, unnormalized (cuFFT's convention; of a spectrum
 * that is not Hermitian, what its Hermitian part transforms to). The pass takes the real rows
 * as complex rows of nx / 2 points (even and odd points), transforms them as the complex pass
 * does and makes each row's spectrum from its points k and nx / 2 - k before it stores the row
 * (R2C; after it loads it for C2R, whose columns go first, the rows after them in place in the
 * output), the real points 0 and nx / 2 of a row's spectrum kept as one complex point between
 * the rows and the columns, which column item 0 parts (joins). Out of place only: the input is
 * left as it is. Supported: nx / 2 and ny as the complex pass takes them. */
int tide_gpu_plane_real_supported(int dbl, int nx, int ny, char *why, size_t len);
int tide_gpu_plane_create_real(int dbl, int nx, int ny, int planes, int sign, int64_t rpitch,
                               int64_t cpitch, int lag, tide_gpu_plane **out, char *why,
                               size_t len);
/* Enqueue the transforms of in into out (in == out: in place; real planes: never) on stream
 * (a cudaStream_t). Executions of one plan must not overlap (they share its counters). */
int tide_gpu_plane_execute(const tide_gpu_plane *p, const void *in, void *out, void *stream);
void tide_gpu_plane_destroy(tide_gpu_plane *p);

/* The strided pass: 1D C2C transforms of count lines of n points that lie side by side, point
 * pos of line m at pos * pitch + m (pitch >= count: the slowest dimension of a dense array of
 * count points a plane, or of a slice of its planes' rows). Each block takes points / n
 * neighbouring lines, as the plane pass's column items do: reads each point from device
 * memory once, transforms the lines through shared memory with the same stages, writes each
 * point once. No normalization. */
typedef struct tide_gpu_strided tide_gpu_strided;

/* Whether the pass takes such lines with the rule's block size (n a power of two from 64 to
 * 1024, count a multiple of the lines a block takes); if not, why says which. */
int tide_gpu_strided_supported(int dbl, int n, int64_t count, char *why, size_t len);
/* A strided pass, sign -1 (forward) or +1, blocks of points points: 4096, 8192 or (float)
 * 16384; 0: the rule's (lines enough for 128-byte rows, 4096 to 8192 points). Returns 0,
 * TIDE_ERR_UNSUPPORTED, TIDE_ERR_NOMEM or TIDE_ERR_BACKEND, with the reason in why. */
int tide_gpu_strided_create(int dbl, int n, int64_t count, int64_t pitch, int sign, int points,
                            tide_gpu_strided **out, char *why, size_t len);
/* Enqueue the transforms of in into out (in == out: in place) on stream (a cudaStream_t). */
int tide_gpu_strided_execute(const tide_gpu_strided *p, const void *in, void *out,
                             void *stream);
void tide_gpu_strided_destroy(tide_gpu_strided *p);

#ifdef __cplusplus
}
#endif
#endif
