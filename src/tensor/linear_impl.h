/* Internal to the dense-layer kernels: the activation pack that qtts_linear
 * builds once per call (f32 rows plus, depending on the weight type, an int8
 * quantized copy or a bf16 copy) and the per-ISA row kernels that consume it.
 * Not for model code: call qtts_linear (linear.h). */
#ifndef QTTS_TENSOR_LINEAR_IMPL_H
#define QTTS_TENSOR_LINEAR_IMPL_H

#include <stdint.h>

#include "tensor/tensor.h"

/* Activations of one call, n rows of `cols` values.
 * - Q8_0 weights: q holds x quantized per 32 values (scale qd[t*nb + b],
 *   q = round(x / scale), |q| <= 127), natural order.
 * - Q4_K weights: one scale per 256 values; within each 256 block the int8
 *   values are stored in the order of the Q4_K nibbles as two 128-value
 *   halves, each [sub 4p | sub 4p+2 | sub 4p+1 | sub 4p+3] (sub = 32 values),
 *   so one 64-byte load of weight bytes pairs with one 64-byte load of x for
 *   its low nibbles and the next for its high nibbles. bsum[t*nsub + j] is
 *   the sum of the int8 values of natural sub-block j (for the mins term).
 * - Interleaved weights (tensor/interleave.h): q in natural order; for Q8_0
 *   also xsum; for Q4_K bsum as above (natural order, so sub-blocks 2p and
 *   2p+1 are adjacent int16s).
 * - BF16 weights with the fast option: xbf = x rounded to bf16. */
typedef struct qtts_act {
    int64_t n, cols;
    const float *x;
    const int8_t *q;
    const float *qd;
    const int16_t *bsum;
    const int32_t *xsum; /* interleaved Q8_0 weights: 128 * sum of each 32-block of q */
    const uint16_t *xbf;
    int64_t nb;  /* scales per row in qd */
    int64_t nsub; /* bsum entries per row */
    int prefetch; /* the weights' qtts_mat.prefetch (AVX2 kernels) */
    int lockstep; /* the weights' qtts_mat.lockstep (AVX2 kernels) */
} qtts_act;

enum { QTTS_TILE_TOKENS = 4, QTTS_TILE_ROWS = 16 };

/* The 32-value slot of natural sub-block j in a packed Q8_K block: j itself
 * in natural order, else its place in the Q4_K nibble order above (which
 * swaps sub-blocks 1-2 and 5-6, so the map is its own inverse). */
static inline int qtts_q8_k_slot(int j, int natural) {
    static const int8_t nibble_slot[8] = {0, 2, 1, 3, 4, 6, 5, 7};
    return natural ? j : nibble_slot[j];
}

/* y[t*rows + r] = dot(w row r, x row t) + bias[r] for r in [r0, r1), all t. */
void qtts_linear_rows_avx2(const qtts_mat *w, const qtts_act *a, const float *bias, float *y, int64_t r0,
                           int64_t r1);
void qtts_linear_rows_avx512(const qtts_mat *w, const qtts_act *a, const float *bias, float *y, int64_t r0,
                             int64_t r1, int bf16_dot);

void qtts_linear_rows_neon(const qtts_mat *w, const qtts_act *a, const float *bias, float *y, int64_t r0,
                           int64_t r1);
void qtts_linear_rows_neon_dotprod(const qtts_mat *w, const qtts_act *a, const float *bias, float *y, int64_t r0,
                                   int64_t r1);

/* Activation packing, AVX-512 (bit-identical to the scalar packers in linear.c):
 * per 32 values for Q8_0; per 256 in natural order (interleaved Q4_K). */
void qtts_pack_q8_0_avx512(const float *x, int64_t cols, int8_t *q, float *qd);
void qtts_pack_q8_k_natural_avx512(const float *x, int64_t cols, int8_t *q, float *qd, int16_t *bsum);
/* AVX2, every layout: Q8_0 with xsum (128 * each block's sum, for interleaved
 * Q8_0; NULL: none), Q8_K in natural or the Q4_K nibble order. */
void qtts_pack_q8_0_avx2(const float *x, int64_t cols, int8_t *q, float *qd, int32_t *xsum);
void qtts_pack_q8_k_avx2(const float *x, int64_t cols, int8_t *q, float *qd, int16_t *bsum, int natural);
/* NEON (every AArch64 core), the same two. */
void qtts_pack_q8_0_neon(const float *x, int64_t cols, int8_t *q, float *qd, int32_t *xsum);
void qtts_pack_q8_k_neon(const float *x, int64_t cols, int8_t *q, float *qd, int16_t *bsum, int natural);

#endif
