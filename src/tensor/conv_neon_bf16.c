/* The bf16 tile of the channel-major conv with BFDOT (FEAT_BF16; built with
 * -march=armv8.2-a+dotprod+bf16, called only when the CPU reports it). One
 * BFDOT lane multiplies a channel pair of 4 time samples by one row's weight
 * pair, which is exactly the layout of qtts_conv_to_bf16 and the pair
 * packing. Scalar twin: qtts_conv_tile_bf16_scalar. */
#include "tensor/conv_arm.h"

#define BFDOT_ROWS8(acc, v, xv, w0, w1)                                                                    \
    do {                                                                                                   \
        acc[0][v] = vbfdotq_laneq_f32(acc[0][v], xv, w0, 0);                                               \
        acc[1][v] = vbfdotq_laneq_f32(acc[1][v], xv, w0, 1);                                               \
        acc[2][v] = vbfdotq_laneq_f32(acc[2][v], xv, w0, 2);                                               \
        acc[3][v] = vbfdotq_laneq_f32(acc[3][v], xv, w0, 3);                                               \
        acc[4][v] = vbfdotq_laneq_f32(acc[4][v], xv, w1, 0);                                               \
        acc[5][v] = vbfdotq_laneq_f32(acc[5][v], xv, w1, 1);                                               \
        acc[6][v] = vbfdotq_laneq_f32(acc[6][v], xv, w1, 2);                                               \
        acc[7][v] = vbfdotq_laneq_f32(acc[7][v], xv, w1, 3);                                               \
    } while (0)

INLINE bfloat16x8_t load_pairs(const uint32_t *p) { return vreinterpretq_bf16_u32(vld1q_u32(p)); }

/* 8 rows x 4*V time samples over all channel pairs. */
INLINE void tile8_bf16(const uint32_t *wb, const uint32_t *x, int64_t ldx, int64_t c2n, int64_t K, int64_t dil,
                       const int V, float32x4_t acc[8][3]) {
    for (int r = 0; r < 8; r++)
        for (int v = 0; v < V; v++) acc[r][v] = vdupq_n_f32(0.0f);
    const uint32_t *wp = wb;
    for (int64_t c2 = 0; c2 < c2n; c2++) {
        const uint32_t *xr = x + c2 * ldx;
        for (int64_t kk = 0; kk < K; kk++, wp += QTTS_CONV_MR) {
            const uint32_t *xp = xr + kk * dil;
            const bfloat16x8_t w0 = load_pairs(wp), w1 = load_pairs(wp + 4);
            for (int v = 0; v < V; v++) {
                const bfloat16x8_t xv = load_pairs(xp + 4 * v);
                BFDOT_ROWS8(acc, v, xv, w0, w1);
            }
        }
    }
}

/* One time sample: each row's weight pairs against the sample's pair, in all lanes. */
static void tile8_bf16_one(const uint32_t *wb, const uint32_t *x, int64_t ldx, int64_t c2n, int64_t K, int64_t dil,
                           float *out) {
    float32x4_t a0 = vdupq_n_f32(0.0f), a1 = vdupq_n_f32(0.0f);
    const uint32_t *wp = wb;
    for (int64_t c2 = 0; c2 < c2n; c2++)
        for (int64_t kk = 0; kk < K; kk++, wp += QTTS_CONV_MR) {
            const bfloat16x8_t xv = vreinterpretq_bf16_u32(vdupq_n_u32(x[c2 * ldx + kk * dil]));
            a0 = vbfdotq_f32(a0, load_pairs(wp), xv);
            a1 = vbfdotq_f32(a1, load_pairs(wp + 4), xv);
        }
    vst1q_f32(out, a0);
    vst1q_f32(out + 4, a1);
}

void qtts_conv_tile_bf16_neon(const qtts_conv *cv, const uint32_t *x, int64_t ldx, int64_t nt, int64_t rb,
                              float *y, int64_t ldy, const float *add, int64_t ldadd) {
    const int64_t c2n = (cv->c_in + 1) / 2;
    const uint32_t *wb = cv->wbf + (size_t)rb * c2n * cv->k * QTTS_CONV_MR;
    float32x4_t acc[8][3];
    int64_t ts = 0;
    for (; ts + 12 <= nt; ts += 12) {
        tile8_bf16(wb, x + ts, ldx, c2n, cv->k, cv->dil, 3, acc);
        store_rows(cv, rb, acc, 3, y + ts, ldy, add ? add + ts : NULL, ldadd);
    }
    if (ts + 8 <= nt) {
        tile8_bf16(wb, x + ts, ldx, c2n, cv->k, cv->dil, 2, acc);
        store_rows(cv, rb, acc, 2, y + ts, ldy, add ? add + ts : NULL, ldadd);
        ts += 8;
    }
    if (ts + 4 <= nt) {
        tile8_bf16(wb, x + ts, ldx, c2n, cv->k, cv->dil, 1, acc);
        store_rows(cv, rb, acc, 1, y + ts, ldy, add ? add + ts : NULL, ldadd);
        ts += 4;
    }
    for (; ts < nt; ts++) {
        float v[8];
        tile8_bf16_one(wb, x + ts, ldx, c2n, cv->k, cv->dil, v);
        for (int r = 0; r < 8; r++) {
            const int64_t row = rb * QTTS_CONV_MR + r;
            if (row >= cv->c_out) break;
            y[row * ldy + ts] = v[r] + cv->bias[row] + (add ? add[row * ldadd + ts] : 0.0f);
        }
    }
}
