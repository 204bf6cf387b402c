/* The NEON dense-layer kernels, written once over the integer dot product
 * of 32 int8 pairs: linear_neon.c instantiates them with widening multiplies
 * (every ARMv8-A core), linear_neon_dotprod.c with SDOT (FEAT_DotProd). The
 * including file defines dot32(acc, w0, w1, x): acc + 4 int32 partial sums
 * of w0 . x[0..16) + w1 . x[16..32). Activations as in linear_impl.h (the
 * scalar packers of linear.c). Not for model code: call qtts_linear. */
#ifndef QTTS_TENSOR_LINEAR_ARM_H
#define QTTS_TENSOR_LINEAR_ARM_H

#include <arm_neon.h>
#include <stdint.h>

#include "tensor/linear_rows.h"
#include "tensor/quant.h"

/* 4 weights of a float-like row as f32. */
INLINE float32x4_t load_w4(const void *w, int64_t i, qtts_dtype type) {
    if (type == QTTS_F32) return vld1q_f32((const float *)w + i);
    uint16x4_t h = vld1_u16((const uint16_t *)w + i);
    if (type == QTTS_F16) return vcvt_f32_f16(vreinterpret_f16_u16(h));
    return vreinterpretq_f32_u32(vshll_n_u16(h, 16)); /* bf16: the top half of an f32 */
}

INLINE float load_w1(const void *w, int64_t i, qtts_dtype type) {
    if (type == QTTS_F32) return ((const float *)w)[i];
    if (type == QTTS_F16) return qtts_f16_to_f32(((const uint16_t *)w)[i]);
    return qtts_bf16_to_f32(((const uint16_t *)w)[i]);
}

/* One row x nt tokens; 4 accumulators per token (16 values per step) cover
 * the FMA latency at n = 1. */
INLINE void dense_tile(const qtts_mat *w, const qtts_act *a, int64_t r, int64_t t0, int nt, float *out,
                       qtts_dtype type) {
    const void *wr = w_row(w, r);
    const int64_t cols = w->cols;
    const float *x = a->x + t0 * cols;
    float32x4_t acc[QTTS_TILE_TOKENS][4];
    for (int t = 0; t < nt; t++)
        for (int v = 0; v < 4; v++) acc[t][v] = vdupq_n_f32(0.0f);
    int64_t i = 0;
    for (; i + 16 <= cols; i += 16) {
        float32x4_t wv[4];
        for (int v = 0; v < 4; v++) wv[v] = load_w4(wr, i + 4 * v, type);
        for (int t = 0; t < nt; t++)
            for (int v = 0; v < 4; v++) acc[t][v] = vfmaq_f32(acc[t][v], wv[v], vld1q_f32(x + t * cols + i + 4 * v));
    }
    for (; i + 4 <= cols; i += 4) {
        float32x4_t wv = load_w4(wr, i, type);
        for (int t = 0; t < nt; t++) acc[t][0] = vfmaq_f32(acc[t][0], wv, vld1q_f32(x + t * cols + i));
    }
    for (int t = 0; t < nt; t++) {
        float s = vaddvq_f32(vaddq_f32(vaddq_f32(acc[t][0], acc[t][1]), vaddq_f32(acc[t][2], acc[t][3])));
        for (int64_t k = i; k < cols; k++) s += load_w1(wr, k, type) * x[t * cols + k];
        out[t] = s;
    }
}

/* DENSE_ROWS rows x nt tokens: each x load feeds 2 rows, each weight load up
 * to 4 tokens (16 accumulators of the 32 vector registers). */
enum { DENSE_ROWS = 2 };
INLINE void dense_tile_rows(const qtts_mat *w, const qtts_act *a, int64_t r, int64_t t0, int nt, float *out,
                            qtts_dtype type) {
    const void *wr[DENSE_ROWS];
    for (int rr = 0; rr < DENSE_ROWS; rr++) wr[rr] = w_row(w, r + rr);
    const int64_t cols = w->cols;
    const float *x = a->x + t0 * cols;
    float32x4_t acc[DENSE_ROWS][QTTS_TILE_TOKENS][2];
    for (int rr = 0; rr < DENSE_ROWS; rr++)
        for (int t = 0; t < nt; t++) acc[rr][t][0] = acc[rr][t][1] = vdupq_n_f32(0.0f);
    int64_t i = 0;
    for (; i + 8 <= cols; i += 8) {
        float32x4_t wv[DENSE_ROWS][2];
        for (int rr = 0; rr < DENSE_ROWS; rr++) {
            wv[rr][0] = load_w4(wr[rr], i, type);
            wv[rr][1] = load_w4(wr[rr], i + 4, type);
        }
        for (int t = 0; t < nt; t++) {
            float32x4_t x0 = vld1q_f32(x + t * cols + i), x1 = vld1q_f32(x + t * cols + i + 4);
            for (int rr = 0; rr < DENSE_ROWS; rr++) {
                acc[rr][t][0] = vfmaq_f32(acc[rr][t][0], wv[rr][0], x0);
                acc[rr][t][1] = vfmaq_f32(acc[rr][t][1], wv[rr][1], x1);
            }
        }
    }
    for (int rr = 0; rr < DENSE_ROWS; rr++)
        for (int t = 0; t < nt; t++) {
            float s = vaddvq_f32(vaddq_f32(acc[rr][t][0], acc[rr][t][1]));
            for (int64_t k = i; k < cols; k++) s += load_w1(wr[rr], k, type) * x[t * cols + k];
            out[rr * QTTS_TILE_TOKENS + t] = s;
        }
}

/* One Q8_0 block against nt tokens, accumulating into acc[0..nt). */
INLINE void q8_0_block(const qtts_block_q8_0 *blk, const qtts_act *a, int64_t t0, int nt, int64_t b,
                       float32x4_t *acc) {
    const int8x16_t w0 = vld1q_s8(blk->qs), w1 = vld1q_s8(blk->qs + 16);
    const float dw = qtts_f16_to_f32(blk->d);
    for (int t = 0; t < nt; t++) {
        const int8_t *xq = a->q + (t0 + t) * a->cols + 32 * b;
        int32x4_t p = dot32(vdupq_n_s32(0), w0, w1, xq);
        acc[t] = vfmaq_n_f32(acc[t], vcvtq_f32_s32(p), dw * a->qd[(t0 + t) * a->nb + b]);
    }
}

INLINE void q8_0_tile(const qtts_mat *w, const qtts_act *a, int64_t r, int64_t t0, int nt, float *out) {
    const qtts_block_q8_0 *wb = w_row(w, r);
    const int64_t nb = a->nb;
    float32x4_t acc0[QTTS_TILE_TOKENS], acc1[QTTS_TILE_TOKENS]; /* two chains hide the FMA latency at n = 1 */
    for (int t = 0; t < nt; t++) acc0[t] = acc1[t] = vdupq_n_f32(0.0f);
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        q8_0_block(&wb[b], a, t0, nt, b, acc0);
        q8_0_block(&wb[b + 1], a, t0, nt, b + 1, acc1);
    }
    if (b < nb) q8_0_block(&wb[b], a, t0, nt, b, acc0);
    for (int t = 0; t < nt; t++) out[t] = vaddvq_f32(vaddq_f32(acc0[t], acc1[t]));
}

/* Q4_K: per 32-byte chunk c of the nibbles, the low nibbles are sub-block 2c
 * and the high ones 2c+1; the activations are in the nibble order of
 * linear_impl.h, so their offsets are those of the x86 kernels. */
INLINE void q4_k_tile(const qtts_mat *w, const qtts_act *a, int64_t r, int64_t t0, int nt, float *out) {
    const qtts_block_q4_k *wb = w_row(w, r);
    const int64_t nb = a->nb, cols = a->cols;
    const uint8x16_t m4 = vdupq_n_u8(0x0F);
    float32x4_t acc[QTTS_TILE_TOKENS];
    float accm[QTTS_TILE_TOKENS];
    for (int t = 0; t < nt; t++) {
        acc[t] = vdupq_n_f32(0.0f);
        accm[t] = 0.0f;
    }
    for (int64_t b = 0; b < nb; b++) {
        const qtts_block_q4_k *blk = &wb[b];
        uint8_t sc[8], mn[8];
        for (int j = 0; j < 8; j++) qtts_q4_k_scale_min(j, blk->scales, &sc[j], &mn[j]);
        const float d = qtts_f16_to_f32(blk->d), dmin = qtts_f16_to_f32(blk->dmin);
        int32x4_t isum[QTTS_TILE_TOKENS];
        for (int t = 0; t < nt; t++) isum[t] = vdupq_n_s32(0);
        for (int c = 0; c < 4; c++) {
            const uint8x16_t q0 = vld1q_u8(blk->qs + 32 * c), q1 = vld1q_u8(blk->qs + 32 * c + 16);
            const int8x16_t lo0 = vreinterpretq_s8_u8(vandq_u8(q0, m4)), lo1 = vreinterpretq_s8_u8(vandq_u8(q1, m4));
            const int8x16_t hi0 = vreinterpretq_s8_u8(vshrq_n_u8(q0, 4)), hi1 = vreinterpretq_s8_u8(vshrq_n_u8(q1, 4));
            const int64_t off_lo = 128 * (c >> 1) + 32 * (c & 1), off_hi = off_lo + 64;
            for (int t = 0; t < nt; t++) {
                const int8_t *xq = a->q + (t0 + t) * cols + 256 * b;
                int32x4_t plo = dot32(vdupq_n_s32(0), lo0, lo1, xq + off_lo);
                int32x4_t phi = dot32(vdupq_n_s32(0), hi0, hi1, xq + off_hi);
                isum[t] = vmlaq_n_s32(vmlaq_n_s32(isum[t], plo, sc[2 * c]), phi, sc[2 * c + 1]);
            }
        }
        for (int t = 0; t < nt; t++) {
            const float dx = a->qd[(t0 + t) * nb + b];
            const int16_t *bs = a->bsum + (t0 + t) * a->nsub + 8 * b;
            int32_t m = 0;
            for (int j = 0; j < 8; j++) m += (int32_t)mn[j] * bs[j];
            acc[t] = vfmaq_n_f32(acc[t], vcvtq_f32_s32(isum[t]), d * dx);
            accm[t] += (float)m * (dmin * dx);
        }
    }
    for (int t = 0; t < nt; t++) out[t] = vaddvq_f32(acc[t]) - accm[t];
}

DEFINE_STANDARD_ROWS()

/* The row kernel of one weight type (the body of each file's entry point). */
#define ARM_ROWS_SWITCH()                                                                                  \
    switch (w->type) {                                                                                     \
    case QTTS_F32: rows_f32(w, a, bias, y, r0, r1); break;                                                 \
    case QTTS_F16: rows_f16(w, a, bias, y, r0, r1); break;                                                 \
    case QTTS_BF16: rows_bf16(w, a, bias, y, r0, r1); break;                                               \
    case QTTS_Q8_0: rows_q8_0(w, a, bias, y, r0, r1); break;                                               \
    case QTTS_Q4_K: rows_q4_k(w, a, bias, y, r0, r1); break;                                               \
    default: break;                                                                                        \
    }

#endif
