/*
 * overlap.h: a reshape and the local FFT beside it as one op, in chunks, so that the exchange
 * of one chunk travels while the FFT of another runs (private).
 *
 * The chunks cut the FFT's array along a dimension it does not transform, the same way on
 * every rank (chunk c of a box: the c-th of `chunks` nearly equal slices of its extent). With
 * the FFT first, chunk c of every rank's source box moves once its FFT is done: the FFT of
 * chunk c + 1 runs on the plan's stream while chunk c's packs, messages and unpacks run on a
 * stream of the op's own. With the exchange first, chunk c of every rank's destination box
 * arrives, then its FFT runs while chunk c + 1 travels. Each chunk's exchange is a part of the
 * reshape (comm/reshape.h), the arrays laid out as the whole boxes; each chunk's FFT is planned
 * on its slice of the whole array (backend.h's iarr, oarr). The points and the arithmetic are
 * the unchunked ops', so the results are the same bits.
 */
#ifndef TIDE_PLAN_OVERLAP_H
#define TIDE_PLAN_OVERLAP_H

#include "plan/program.h"

typedef struct {
    const tide_box *from, *to; /* every rank's boxes of the reshape */
    size_t elem;               /* the reshape's bytes per element */
    int batch;                 /* fields */
    tide_cpu_fft_desc fft;     /* the FFT on this rank's whole boxes (ibox, obox, no `then`);
                                * in and out: the buffers it is planned on (the CPU's) */
    int fft_first;             /* 1: FFT, then its output reshaped; 0: reshape, then the FFT
                                * of what arrived */
    int chunks;                /* 2 or more */
    int src, mid, dst;         /* locations (program.h): the op's source and destination, and
                                * the array between the two steps */
    void *const *w;            /* the plan's two work buffers (for a mid of W0 or W1) */
} tide_overlap_desc;

/* The dimension the chunks cut: the slowest in storage order `order` that fft does not
 * transform; -1 where fft cannot be cut: it transforms all three dimensions, or on the GPU
 * (gpu) it is a real-to-complex transform of several fields (a slice's fields are cuFFT calls
 * of their own, and a field of an odd count of real points would start where cuFFT refuses
 * it). Every rank must cut alike, so the order is the one of rank 0's box on the cut side (d's
 * from with the FFT first, else to). */
int tide_overlap_cut(const tide_cpu_fft_desc *fft, const int order[3], int gpu);

/* An op of kind TIDE_OP_OVERLAP from d (placement src and dst set from d; its cost the sum of
 * the FFT's and the reshape's, tide_op_fft_cost and tide_op_reshape_cost). The FFT plans' work
 * areas add to *work, and the exchanges' staging raises *sbytes and *rbytes where a chunk needs
 * more than they hold (a piece that is one run of an array may be cut into pieces that are
 * not); the FFTs' streams are bound by tide_op_overlap_bind once the plan's work area exists.
 * Returns 0 or a code with the reason in err. Collective: the op exchanges. */
int tide_op_overlap(tide_op *op, const tide_env *e, const tide_overlap_desc *d, size_t *work,
                    size_t *sbytes, size_t *rbytes, char *err, size_t len);
int tide_op_overlap_bind(const tide_op *op, const tide_env *e);
/* The exchange its chunks travel by, their count, and the costs of its FFT and of its
 * exchange. */
tide_exchange tide_op_overlap_exchange(const tide_op *op);
int tide_op_overlap_chunks(const tide_op *op);
void tide_op_overlap_costs(const tide_op *op, tide_op_cost *fft, tide_op_cost *move);

#endif
