/*
 * tide_band.h: band matrix powers: one part of Tide's public C API.
 * A program includes tide.h, which includes this header after the context, the boxes and
 * the status codes it uses.
 */
#ifndef TIDE_BAND_H
#define TIDE_BAND_H

#include "tide.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Band matrices: x <- A^steps x for a real n x n band matrix A with kl diagonals below the main
 * one and ku above it (each 0 .. TIDE_BAND_MAX_BANDWIDTH), float or double, x in host or
 * device memory.
 *
 * Rows: every rank owns the contiguous rows [lo, hi) of A and of x; the ranks' ranges tile
 * 0 .. n in any order (empty ranges, lo == hi, allowed), else TIDE_ERR_BOX on every rank.
 *
 * The matrix is given once, at plan creation (option diagonals: host memory, read only there;
 * the plan keeps its own copy), each rank its own rows, stored diagonal-major as the user
 * holds them: with rows = hi - lo, for d = -kl .. ku and local row i = 0 .. rows - 1,
 *     A(lo + i, lo + i + d) = diagonals[(d + kl) * rows + i],
 * in the plan's precision. Entries whose column lo + i + d lies outside 0 .. n - 1 are never
 * read (they may hold anything, NaN included).
 *
 * Arithmetic: one step sets y(i) to acc after acc = 0 and, for j = i - kl .. i + ku in
 * increasing order with 0 <= j < n, acc = fma(A(i, j), x(j), acc) (one fused multiply-add per
 * term, so the first term is a correctly rounded product), in the plan's precision. Every
 * backend, every number of steps per pass and every rank count does exactly this, so results
 * are bitwise the same everywhere.
 *
 * Steps are fused: a pass does up to steps_per_pass steps over the memory x lives in
 * (temporal blocking; on the GPU inside one kernel, through shared memory). Before each pass a
 * rank receives a halo of steps_per_pass * kl rows above its rows and steps_per_pass * ku rows
 * below them (clipped to the matrix) from the ranks that own them, one exchange per pass; each
 * step recomputes a range that shrinks by kl rows at the top and ku at the bottom, so after the
 * pass this rank's rows are exactly those of one rank.
 *
 * Out of card (host x, with backend cuda when on some rank x's grown rows, their matrix and
 * the work arrays exceed the device budget, or with option slab_rows; every rank then streams):
 * each pass sends x and A through the device in slabs of rows, each level of the pass one step
 * on the slab, the rows a level needs from the slab before kept on the device (Jin 2014's
 * slab-and-border scheme): every row goes up once and down once per pass, with the same bits.
 * On several ranks the slabs cover a rank's rows grown by the halo, kept in host memory
 * between passes, the halo received into them before each pass as in card.
 * ------------------------------------------------------------------------------------------- */
typedef struct tide_band_plan tide_band_plan;

enum {
    TIDE_BAND_MAX_BANDWIDTH = 64, /* the most diagonals below (kl) or above (ku) the main one */
    TIDE_BAND_MAX_STEPS = 1 << 16 /* the most steps option steps_per_pass may ask for */
};

typedef struct {
    size_t size;              /* sizeof the struct: set by the init function */
    tide_precision precision; /* default TIDE_DOUBLE: of x and the diagonals */
    tide_backend backend;     /* default AUTO: the context's backend */
    tide_location location;   /* where x lives; default TIDE_LOCATION_HOST */
    int kl, ku;               /* diagonals below and above the main one, 0 ..
                               * TIDE_BAND_MAX_BANDWIDTH; default 1 and 1 */
    const void *diagonals;    /* this rank's rows of A, diagonal-major (above), host memory;
                               * read during tide_band_plan_create only; NULL is
                               * TIDE_ERR_ARGUMENT unless the rank has no rows */
    int steps_per_pass;       /* steps a pass fuses, at most TIDE_BAND_MAX_STEPS (the GPU's
                               * kernel fewer: its shared memory); 0 (default): the plan's
                               * choice (tide_band_info tells) */
    void *stream;             /* GPU: the caller's cudaStream_t runs are ordered after
                               * (tide_fft_options); per rank */
    int slab_rows;            /* host x: each pass sends x and A through the backend's
                               * memory in slabs of this many rows of the rank's grown rows
                               * (out of card, Jin 2014's slab-and-border scheme; on the CPU
                               * the same passes, for testing); 0 (default): in card where
                               * every rank's arrays fit its device budget, else slabs as
                               * large as it allows; ignored for device arrays */
} tide_band_options;

TIDE_API void tide_band_options_init(tide_band_options *opts);

/* Collective. n: the matrix's rows (at least 1); [lo, hi): this rank's rows. All validation
 * and allocation happen here: n, the options (but the diagonals) and the range's tiling agreed
 * across ranks, the same error on every rank. opts may be NULL for defaults on a rank with no
 * rows (a rank with rows needs its diagonals); a struct not filled by tide_band_options_init is
 * TIDE_ERR_ARGUMENT on every rank. */
TIDE_API int tide_band_plan_create(tide_context *ctx, int n, int lo, int hi,
                                   const tide_band_options *opts, tide_band_plan **plan);

/* Local: frees the plan. NULL is accepted. */
TIDE_API int tide_band_plan_destroy(tide_band_plan *plan);

typedef struct {
    int lo, hi;              /* this rank's rows */
    size_t bytes;            /* bytes of this rank's x */
    size_t host_bytes;       /* memory the plan holds in host memory (the matrix on the CPU) */
    size_t pinned_bytes;     /* ... in pinned host memory (on the GPU the halo's staging;
                              * out of card the slabs' staging and the matrix) */
    size_t device_bytes;     /* ... in device memory (the matrix and x's two arrays; out of
                              * card the slabs' buffers) */
    int kl, ku;
    int steps_per_pass;      /* steps a pass fuses, the same on every rank */
    double flops;            /* per step on this rank: 2 per matrix entry of its rows */
    double bytes_per_step;   /* per step on this rank, unfused: x read and written and the
                              * diagonals read (the bound's measure) */
    tide_backend backend;
    tide_location location;
    long long halo_rows;     /* rows this rank receives per exchange (one per pass); 0 on one
                              * rank */
    long long exchanges;     /* the last run: the halo exchanges it made (one per pass on
                              * several ranks) */
    double halo_seconds;     /* ... and the seconds this rank spent in them */
    int slabs;               /* out of card: the slabs each pass sends through the backend's
                              * memory (of this rank's grown rows); 0 in card and on a rank
                              * without rows */
    int slab_rows;           /* ... and the rows of each (the last may have fewer) */
} tide_band_info;

TIDE_API int tide_band_plan_info(const tide_band_plan *plan, tide_band_info *info);

/* A one-line description, e.g. "band kl 2 ku 3 double cpu: halo 16+24 > band[8 steps]". */
TIDE_API int tide_band_plan_describe(const tide_band_plan *plan, char *buf, size_t len);

/* Collective. x <- A^steps x: x is this rank's rows (hi - lo elements, in place), steps >= 0
 * the same on every rank (else TIDE_ERR_MISMATCH on every rank, x unchanged). Host or device
 * memory as the plan's location says. Ordered after the caller's earlier work on the plan's
 * stream and complete on return. */
TIDE_API int tide_band_run(tide_band_plan *plan, void *x, long long steps);

/* Local: the stream later runs order themselves after; NULL: the legacy default stream. */
TIDE_API int tide_band_plan_set_stream(tide_band_plan *plan, void *stream);

#ifdef __cplusplus
}
#endif
#endif /* TIDE_BAND_H */
