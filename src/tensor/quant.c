#include "tensor/quant.h"

#include <math.h>
#include <string.h>

_Static_assert(sizeof(qtts_block_q8_0) == 34, "Q8_0 block must be 34 bytes");
_Static_assert(sizeof(qtts_block_q4_k) == 144, "Q4_K block must be 144 bytes");

static void quantize_q8_0(const float *x, qtts_block_q8_0 *y, int64_t n) {
    for (int64_t b = 0; b < n / 32; b++, x += 32) {
        float amax = 0.0f;
        for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[i]));
        float d = amax / 127.0f;
        float id = d ? 1.0f / d : 0.0f;
        y[b].d = qtts_f32_to_f16(d);
        for (int i = 0; i < 32; i++) y[b].qs[i] = (int8_t)lrintf(x[i] * id);
    }
}

static void dequantize_q8_0(const qtts_block_q8_0 *x, float *y, int64_t n) {
    for (int64_t b = 0; b < n / 32; b++) {
        float d = qtts_f16_to_f32(x[b].d);
        for (int i = 0; i < 32; i++) *y++ = d * (float)x[b].qs[i];
    }
}

static void get_scale_min_k4(int j, const uint8_t *q, uint8_t *sc, uint8_t *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

/* Per 32-element sub-block: value ~= scale*q - min with q in 0..15, found by
 * a min/max fit refined with a few least-squares passes. */
static void fit_subblock(const float *x, float *scale, float *min) {
    float lo = x[0], hi = x[0];
    for (int i = 1; i < 32; i++) {
        lo = fminf(lo, x[i]);
        hi = fmaxf(hi, x[i]);
    }
    if (lo > 0) lo = 0;
    if (hi == lo) {
        *scale = 0;
        *min = -lo;
        return;
    }
    float s = (hi - lo) / 15.0f, m = lo;
    for (int iter = 0; iter < 4; iter++) {
        /* assign levels, then solve the 2x2 least squares for (s, m) */
        double sq = 0, sqq = 0, sx = 0, sxq = 0;
        for (int i = 0; i < 32; i++) {
            int q = (int)lrintf((x[i] - m) / s);
            q = q < 0 ? 0 : q > 15 ? 15 : q;
            sq += q;
            sqq += (double)q * q;
            sx += x[i];
            sxq += (double)x[i] * q;
        }
        double det = 32.0 * sqq - sq * sq;
        if (det <= 0) break;
        double ns = (32.0 * sxq - sq * sx) / det;
        double nm = (sx - ns * sq) / 32.0;
        if (ns <= 0 || nm > 0) break; /* keep the format's min <= 0 */
        s = (float)ns;
        m = (float)nm;
    }
    *scale = s;
    *min = -m;
}

static void quantize_q4_k(const float *x, qtts_block_q4_k *y, int64_t n) {
    for (int64_t b = 0; b < n / 256; b++, x += 256) {
        float scales[8], mins[8], max_scale = 0, max_min = 0;
        for (int j = 0; j < 8; j++) {
            fit_subblock(x + 32 * j, &scales[j], &mins[j]);
            max_scale = fmaxf(max_scale, scales[j]);
            max_min = fmaxf(max_min, mins[j]);
        }
        float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
        float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
        uint8_t ls[8], lm[8];
        for (int j = 0; j < 8; j++) {
            int a = (int)lrintf(inv_scale * scales[j]), c = (int)lrintf(inv_min * mins[j]);
            ls[j] = (uint8_t)(a > 63 ? 63 : a);
            lm[j] = (uint8_t)(c > 63 ? 63 : c);
        }
        qtts_block_q4_k *blk = &y[b];
        memset(blk->scales, 0, sizeof blk->scales);
        for (int j = 0; j < 8; j++) {
            if (j < 4) {
                blk->scales[j] = ls[j];
                blk->scales[j + 4] = lm[j];
            } else {
                blk->scales[j + 4] = (uint8_t)((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
                blk->scales[j - 4] |= (uint8_t)((ls[j] >> 4) << 6);
                blk->scales[j] |= (uint8_t)((lm[j] >> 4) << 6);
            }
        }
        float d = max_scale / 63.0f, dmin = max_min / 63.0f;
        blk->d = qtts_f32_to_f16(d);
        blk->dmin = qtts_f32_to_f16(dmin);
        d = qtts_f16_to_f32(blk->d);
        dmin = qtts_f16_to_f32(blk->dmin);
        uint8_t q[256];
        for (int j = 0; j < 8; j++) {
            uint8_t sc, m;
            get_scale_min_k4(j, blk->scales, &sc, &m);
            float ds = d * sc, dm = dmin * m;
            for (int i = 0; i < 32; i++) {
                int v = ds > 0 ? (int)lrintf((x[32 * j + i] + dm) / ds) : 0;
                q[32 * j + i] = (uint8_t)(v < 0 ? 0 : v > 15 ? 15 : v);
            }
        }
        for (int j = 0; j < 256; j += 64)
            for (int l = 0; l < 32; l++) blk->qs[j / 2 + l] = (uint8_t)(q[j + l] | (q[j + l + 32] << 4));
    }
}

static void dequantize_q4_k(const qtts_block_q4_k *x, float *y, int64_t n) {
    for (int64_t b = 0; b < n / 256; b++) {
        const float d = qtts_f16_to_f32(x[b].d), dmin = qtts_f16_to_f32(x[b].dmin);
        const uint8_t *q = x[b].qs;
        for (int j = 0, is = 0; j < 256; j += 64, is += 2, q += 32) {
            uint8_t sc, m;
            get_scale_min_k4(is, x[b].scales, &sc, &m);
            float d1 = d * sc, m1 = dmin * m;
            get_scale_min_k4(is + 1, x[b].scales, &sc, &m);
            float d2 = d * sc, m2 = dmin * m;
            for (int l = 0; l < 32; l++) *y++ = d1 * (float)(q[l] & 0xF) - m1;
            for (int l = 0; l < 32; l++) *y++ = d2 * (float)(q[l] >> 4) - m2;
        }
    }
}

void qtts_quantize_row(qtts_dtype t, const float *src, void *dst, int64_t n) {
    if (t == QTTS_Q8_0) quantize_q8_0(src, dst, n);
    else if (t == QTTS_Q4_K) quantize_q4_k(src, dst, n);
}

void qtts_dequantize_row(qtts_dtype t, const void *src, float *dst, int64_t n) {
    if (t == QTTS_Q8_0) dequantize_q8_0(src, dst, n);
    else if (t == QTTS_Q4_K) dequantize_q4_k(src, dst, n);
}
