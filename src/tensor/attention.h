/* Causal multi-head attention with grouped KV heads and an optional sliding
 * window, for every model stage (talker, code predictor, codec decoder and
 * encoder transformers). Query i is at key index q_first + i and sees keys j
 * with j <= q_first + i and (window == 0 or q_first + i - j < window).
 *
 * The heads that share a KV head are computed together, so each key and
 * value row is read once per group (the talker's GQA halves its KV reads).
 * Keys and values are f32 or f16 (kv_f16: the talker's KV cache, which a
 * long utterance reads once per step); either way the arithmetic is f32.
 * Kernels: scalar twin, AVX2+FMA, AVX-512, NEON (attention_*.c), chosen at
 * run time; each head's result does not depend on the thread count or on how
 * heads are grouped into work items. */
#ifndef QTTS_TENSOR_ATTENTION_H
#define QTTS_TENSOR_ATTENTION_H

#include <stdint.h>

#include "core/threadpool.h"
#include "tensor/cpu.h"

typedef struct {
    const float *q;
    int64_t q_stride; /* floats between consecutive query tokens */
    const void *k, *v; /* f32, or f16 bits where kv_f16 (a KV cache kept in half precision) */
    int64_t kv_stride; /* elements between consecutive key positions */
    int kv_f16;
    float *out;
    int64_t out_stride;
    int64_t n_q, q_first;
    int64_t n_heads, n_kv_heads, head_dim;
    int64_t window;
    float scale;
} qtts_attn_args;

/* 1 where one work item per (query token, KV head), `items` of them, leaves
 * every thread of the pool work (the heads of a group then share their key
 * and value reads); 0 where items of one head each are needed for that. A
 * NULL pool (inline) always groups. */
int qtts_attention_group_items(const qtts_pool *pool, int64_t items);

/* pool may be NULL: runs inline on the caller (a pool thread itself). */
void qtts_attention(qtts_pool *pool, const qtts_attn_args *a);

/* The same with the kernels of `isa` (tests compare each family with the
 * scalar twin); an ISA this CPU lacks, or a head_dim its vectors do not
 * divide, falls back to the next family down. */
void qtts_attention_isa(qtts_pool *pool, const qtts_attn_args *a, qtts_isa isa);

#endif
