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

/* Element i of a key or value array (f32, or f16 where f16). */
static inline const void *qtts_attn_kv_at(const void *base, int64_t i, int f16) {
    return (const char *)base + i * (f16 ? 2 : 4);
}

/* The first key query t sees (the window's start, else 0). */
static inline int64_t qtts_attn_first_key(const qtts_attn_args *a, int64_t t) {
    const int64_t qi = a->q_first + t;
    return a->window > 0 && qi - a->window + 1 > 0 ? qi - a->window + 1 : 0;
}

#endif
