/* Per-ISA kernels of attention.c (private to src/tensor). One call computes
 * query token t for heads [h0, h0 + gh), which all read KV head
 * h0 / (n_heads / n_kv_heads); gh <= QTTS_ATTN_MAX_GROUP. Keys are taken in
 * blocks of QTTS_ATTN_BLOCK with an online softmax (any context fits in a
 * small stack buffer); within a block: scores, their exponentials, then the
 * weighted sum of the value rows. */
#ifndef QTTS_TENSOR_ATTENTION_KERNELS_H
#define QTTS_TENSOR_ATTENTION_KERNELS_H

#include "tensor/attention.h"

enum { QTTS_ATTN_BLOCK = 64, QTTS_ATTN_MAX_GROUP = 8 };

typedef void (*qtts_attn_item_fn)(const qtts_attn_args *a, int64_t t, int64_t h0, int64_t gh);

void qtts_attn_item_scalar(const qtts_attn_args *a, int64_t t, int64_t h0, int64_t gh); /* any head_dim */
void qtts_attn_item_avx2(const qtts_attn_args *a, int64_t t, int64_t h0, int64_t gh); /* head_dim % 8 == 0 */
void qtts_attn_item_avx512(const qtts_attn_args *a, int64_t t, int64_t h0, int64_t gh); /* head_dim % 16 == 0 */
void qtts_attn_item_neon(const qtts_attn_args *a, int64_t t, int64_t h0, int64_t gh); /* head_dim % 4 == 0 */

/* The first key query t sees (the window's start, else 0). */
static inline int64_t qtts_attn_first_key(const qtts_attn_args *a, int64_t t) {
    const int64_t qi = a->q_first + t;
    return a->window > 0 && qi - a->window + 1 > 0 ? qi - a->window + 1 : 0;
}

/* exp(x) for the SIMD kernels: Cody-Waite reduction by ln 2 and the Cephes
 * expf polynomial on [-ln2/2, ln2/2] (within 2 ulp of expf); inputs below
 * QTTS_EXP_MIN give 0 (a softmax weight under 1e-38 of the largest). */
#define QTTS_EXP_MIN (-87.0f)
#define QTTS_EXP_LOG2E 1.44269504088896341f
#define QTTS_EXP_C1 0.693359375f
#define QTTS_EXP_C2 (-2.12194440e-4f)
#define QTTS_EXP_P0 1.9875691500e-4f
#define QTTS_EXP_P1 1.3981999507e-3f
#define QTTS_EXP_P2 8.3334519073e-3f
#define QTTS_EXP_P3 4.1665795894e-2f
#define QTTS_EXP_P4 1.6666665459e-1f
#define QTTS_EXP_P5 5.0000001201e-1f

#endif
