/* Dequantization of the GGML block types that other converters write and no
 * qtts kernel runs (see QTTS_Q4_0 ... QTTS_Q6_K in tensor.h). Written from the
 * GGML block layouts: every block is little-endian, scales are f16; the
 * loaders turn such matrices into a runnable type once, so these run at load
 * time and on single embedding rows only. */
#include <string.h>

#include "tensor/quant.h"

static float half(const uint8_t *p) { return qtts_f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

/* 32 values: d, [m,] [4 high-bit bytes,] 16 nibble bytes; element j < 16 in the
 * low nibble of byte j, element j + 16 in its high nibble. */
static void deq_32(qtts_dtype t, const uint8_t *b, float *y) {
    const int has_min = t == QTTS_Q4_1 || t == QTTS_Q5_1, has_high = t == QTTS_Q5_0 || t == QTTS_Q5_1;
    const float d = half(b), m = has_min ? half(b + 2) : 0.0f;
    const uint8_t *p = b + 2 + 2 * has_min;
    uint32_t qh = 0;
    if (has_high) {
        qh = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        p += 4;
    }
    /* the symmetric types centre their codes: 4 bits around 8, 5 bits around 16 */
    const int offset = has_min ? 0 : has_high ? 16 : 8;
    for (int j = 0; j < 16; j++) {
        int lo = p[j] & 0xF, hi = p[j] >> 4;
        if (has_high) {
            lo |= (int)((qh >> j) & 1) << 4;
            hi |= (int)((qh >> (j + 16)) & 1) << 4;
        }
        y[j] = (float)(lo - offset) * d + m;
        y[j + 16] = (float)(hi - offset) * d + m;
    }
}

/* Q2_K: 16 sub-blocks of 16, each a 4-bit scale (low) and min (high) code;
 * 2-bit values, four per byte, interleaved by shift over 32-byte runs. */
static void deq_q2_k(const uint8_t *b, float *y) {
    const uint8_t *sc = b, *q = b + 16;
    const float d = half(b + 80), dmin = half(b + 82);
    int is = 0;
    for (int n = 0; n < 256; n += 128, q += 32)
        for (int shift = 0; shift < 8; shift += 2)
            for (int h = 0; h < 2; h++, is++) {
                const float dl = d * (float)(sc[is] & 0xF), ml = dmin * (float)(sc[is] >> 4);
                for (int l = 0; l < 16; l++) *y++ = dl * (float)((q[l + 16 * h] >> shift) & 3) - ml;
            }
}

/* Q3_K: 2 low bits as in Q2_K plus one high bit from hmask (a clear bit
 * subtracts 4); sixteen 6-bit signed scales packed into 12 bytes. */
static void deq_q3_k(const uint8_t *b, float *y) {
    const uint8_t *hm = b, *q = b + 32, *packed = b + 96;
    const float d = half(b + 108);
    int8_t scale[16];
    for (int i = 0; i < 16; i++) {
        int low = i < 8 ? packed[i] & 0xF : packed[i - 8] >> 4;
        int high = (packed[8 + i % 4] >> (2 * (i / 4))) & 3;
        scale[i] = (int8_t)((low | high << 4) - 32);
    }
    int is = 0;
    uint8_t bit = 1;
    for (int n = 0; n < 256; n += 128, q += 32)
        for (int shift = 0; shift < 8; shift += 2, bit = (uint8_t)(bit << 1))
            for (int h = 0; h < 2; h++, is++) {
                const float dl = d * (float)scale[is];
                for (int l = 0; l < 16; l++) {
                    int v = (q[l + 16 * h] >> shift) & 3;
                    if (!(hm[l + 16 * h] & bit)) v -= 4;
                    *y++ = dl * (float)v;
                }
            }
}

/* Q5_K: Q4_K's scales and nibbles plus one high bit per value from qh. */
static void deq_q5_k(const uint8_t *b, float *y) {
    const float d = half(b), dmin = half(b + 2);
    const uint8_t *scales = b + 4, *qh = b + 16, *ql = b + 48;
    uint8_t u1 = 1, u2 = 2;
    for (int j = 0, is = 0; j < 256; j += 64, is += 2, ql += 32, u1 = (uint8_t)(u1 << 2), u2 = (uint8_t)(u2 << 2)) {
        uint8_t sc, m;
        qtts_q4_k_scale_min(is, scales, &sc, &m);
        const float d1 = d * sc, m1 = dmin * m;
        qtts_q4_k_scale_min(is + 1, scales, &sc, &m);
        const float d2 = d * sc, m2 = dmin * m;
        for (int l = 0; l < 32; l++) *y++ = d1 * (float)((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
        for (int l = 0; l < 32; l++) *y++ = d2 * (float)((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
    }
}

/* Q6_K: 4 low bits (ql) + 2 high bits (qh) around 32, an int8 scale per 16. */
static void deq_q6_k(const uint8_t *b, float *y) {
    const uint8_t *ql = b, *qh = b + 128;
    const int8_t *sc = (const int8_t *)(b + 192);
    const float d = half(b + 208);
    for (int n = 0; n < 256; n += 128, y += 128, ql += 64, qh += 32, sc += 8)
        for (int l = 0; l < 32; l++) {
            const int is = l / 16;
            const int q1 = ((ql[l] & 0xF) | ((qh[l] >> 0) & 3) << 4) - 32;
            const int q2 = ((ql[l + 32] & 0xF) | ((qh[l] >> 2) & 3) << 4) - 32;
            const int q3 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
            const int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
            y[l] = d * (float)sc[is] * (float)q1;
            y[l + 32] = d * (float)sc[is + 2] * (float)q2;
            y[l + 64] = d * (float)sc[is + 4] * (float)q3;
            y[l + 96] = d * (float)sc[is + 6] * (float)q4;
        }
}

void qtts_dequantize_ggml_row(qtts_dtype t, const void *src, float *dst, int64_t n) {
    const int64_t be = qtts_dtype_block_elems(t);
    const size_t bb = qtts_dtype_block_bytes(t);
    if (!bb || qtts_dtype_runs(t)) return;
    const uint8_t *b = src;
    if (t == QTTS_I32) {
        for (int64_t i = 0; i < n; i++, b += 4) {
            int32_t v;
            memcpy(&v, b, 4);
            dst[i] = (float)v;
        }
        return;
    }
    for (int64_t i = 0; i < n / be; i++, b += bb, dst += be) {
        switch (t) {
        case QTTS_Q4_0:
        case QTTS_Q4_1:
        case QTTS_Q5_0:
        case QTTS_Q5_1: deq_32(t, b, dst); break;
        case QTTS_Q2_K: deq_q2_k(b, dst); break;
        case QTTS_Q3_K: deq_q3_k(b, dst); break;
        case QTTS_Q5_K: deq_q5_k(b, dst); break;
        case QTTS_Q6_K: deq_q6_k(b, dst); break;
        default: memset(dst, 0, (size_t)be * sizeof *dst); break;
        }
    }
}
