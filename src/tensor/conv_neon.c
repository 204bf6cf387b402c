/* NEON tiles of the channel-major conv, SnakeBeta and the bf16 channel-pair
 * packing, for every ARMv8-A core (only called after the hwcap check in
 * conv.c). Scalar twins: qtts_conv_tile_scalar, qtts_snake_row_ref,
 * qtts_bf16_pairs_row_scalar (tests/test_conv.c compares them). */
#include "tensor/conv_arm.h"

/* acc[r][v] += w[r] * x[v] for the 8 rows of a packed block (w0: rows 0-3,
 * w1: rows 4-7), by lane so each weight is loaded once. */
#define FMA_ROWS8(acc, v, xv, w0, w1)                                                                      \
    do {                                                                                                   \
        acc[0][v] = vfmaq_laneq_f32(acc[0][v], xv, w0, 0);                                                 \
        acc[1][v] = vfmaq_laneq_f32(acc[1][v], xv, w0, 1);                                                 \
        acc[2][v] = vfmaq_laneq_f32(acc[2][v], xv, w0, 2);                                                 \
        acc[3][v] = vfmaq_laneq_f32(acc[3][v], xv, w0, 3);                                                 \
        acc[4][v] = vfmaq_laneq_f32(acc[4][v], xv, w1, 0);                                                 \
        acc[5][v] = vfmaq_laneq_f32(acc[5][v], xv, w1, 1);                                                 \
        acc[6][v] = vfmaq_laneq_f32(acc[6][v], xv, w1, 2);                                                 \
        acc[7][v] = vfmaq_laneq_f32(acc[7][v], xv, w1, 3);                                                 \
    } while (0)

/* 8 rows x 4*V time samples (V <= 3: 24 accumulators of 32 registers). */
INLINE void tile8(const float *wb, const float *x, int64_t ldx, int64_t c_in, int64_t K, int64_t dil, const int V,
                  float32x4_t acc[8][3]) {
    for (int r = 0; r < 8; r++)
        for (int v = 0; v < V; v++) acc[r][v] = vdupq_n_f32(0.0f);
    const float *wp = wb;
    for (int64_t ci = 0; ci < c_in; ci++) {
        const float *xr = x + ci * ldx;
        for (int64_t kk = 0; kk < K; kk++, wp += QTTS_CONV_MR) {
            const float *xp = xr + kk * dil;
            const float32x4_t w0 = vld1q_f32(wp), w1 = vld1q_f32(wp + 4);
            for (int v = 0; v < V; v++) {
                const float32x4_t xv = vld1q_f32(xp + 4 * v);
                FMA_ROWS8(acc, v, xv, w0, w1);
            }
        }
    }
}

/* One time sample (a tail under 4): the 8 rows as two vectors. */
static void tile8_one(const float *wb, const float *x, int64_t ldx, int64_t c_in, int64_t K, int64_t dil,
                      float32x4_t out[2]) {
    float32x4_t a0 = vdupq_n_f32(0.0f), a1 = vdupq_n_f32(0.0f);
    const float *wp = wb;
    for (int64_t ci = 0; ci < c_in; ci++)
        for (int64_t kk = 0; kk < K; kk++, wp += QTTS_CONV_MR) {
            const float xv = x[ci * ldx + kk * dil];
            a0 = vfmaq_n_f32(a0, vld1q_f32(wp), xv);
            a1 = vfmaq_n_f32(a1, vld1q_f32(wp + 4), xv);
        }
    out[0] = a0;
    out[1] = a1;
}

void qtts_conv_tile_neon(const qtts_conv *cv, const float *x, int64_t ldx, int64_t nt, int64_t rb, float *y,
                         int64_t ldy, const float *add, int64_t ldadd) {
    const float *wb = cv->w + (size_t)rb * cv->c_in * cv->k * QTTS_CONV_MR;
    float32x4_t acc[8][3];
    int64_t ts = 0;
    for (; ts + 12 <= nt; ts += 12) {
        tile8(wb, x + ts, ldx, cv->c_in, cv->k, cv->dil, 3, acc);
        store_rows(cv, rb, acc, 3, y + ts, ldy, add ? add + ts : NULL, ldadd);
    }
    if (ts + 8 <= nt) {
        tile8(wb, x + ts, ldx, cv->c_in, cv->k, cv->dil, 2, acc);
        store_rows(cv, rb, acc, 2, y + ts, ldy, add ? add + ts : NULL, ldadd);
        ts += 8;
    }
    if (ts + 4 <= nt) {
        tile8(wb, x + ts, ldx, cv->c_in, cv->k, cv->dil, 1, acc);
        store_rows(cv, rb, acc, 1, y + ts, ldy, add ? add + ts : NULL, ldadd);
        ts += 4;
    }
    for (; ts < nt; ts++) {
        float32x4_t o[2];
        float v[8];
        tile8_one(wb, x + ts, ldx, cv->c_in, cv->k, cv->dil, o);
        vst1q_f32(v, o[0]);
        vst1q_f32(v + 4, o[1]);
        for (int r = 0; r < 8; r++) {
            const int64_t row = rb * QTTS_CONV_MR + r;
            if (row >= cv->c_out) break;
            y[row * ldy + ts] = v[r] + cv->bias[row] + (add ? add[row * ldadd + ts] : 0.0f);
        }
    }
}

/* ---- SnakeBeta ---- */

INLINE float32x4_t sin2_neon(float32x4_t v) {
    const float32x4_t q = vrndnq_f32(vmulq_n_f32(v, QTTS_SIN_2_OVER_PI));
    float32x4_t r = vfmsq_f32(v, q, vdupq_n_f32(QTTS_SIN_DP1));
    r = vfmsq_f32(r, q, vdupq_n_f32(QTTS_SIN_DP2));
    r = vfmsq_f32(r, q, vdupq_n_f32(QTTS_SIN_DP3));
    r = vminq_f32(vmaxq_f32(r, vdupq_n_f32(-QTTS_SIN_PI_4)), vdupq_n_f32(QTTS_SIN_PI_4));
    const float32x4_t z = vmulq_f32(r, r);
    float32x4_t ps = vfmaq_f32(vdupq_n_f32(QTTS_SIN_S2), z, vdupq_n_f32(QTTS_SIN_S3));
    ps = vfmaq_f32(vdupq_n_f32(QTTS_SIN_S1), z, ps);
    const float32x4_t s = vfmaq_f32(r, vmulq_f32(r, z), ps);
    float32x4_t pc = vfmaq_f32(vdupq_n_f32(QTTS_COS_C2), z, vdupq_n_f32(QTTS_COS_C3));
    pc = vfmaq_f32(vdupq_n_f32(QTTS_COS_C1), z, pc);
    const float32x4_t c = vfmaq_f32(vfmsq_f32(vdupq_n_f32(1.0f), vdupq_n_f32(0.5f), z), vmulq_f32(z, z), pc);
    const float32x4_t half_floor = vrndmq_f32(vmulq_n_f32(q, 0.5f));
    const float32x4_t odd = vfmsq_f32(q, vdupq_n_f32(2.0f), half_floor);
    const uint32x4_t is_odd = vmvnq_u32(vceqq_f32(odd, vdupq_n_f32(0.0f))); /* NaN: odd, as in the scalar twin */
    const float32x4_t m = vbslq_f32(is_odd, c, s);
    return vmulq_f32(m, m);
}

void qtts_snake_row_neon(const float *x, float *y, int64_t n, float ea, float inv_b) {
    const float32x4_t ib = vdupq_n_f32(inv_b);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t v = vld1q_f32(x + i);
        vst1q_f32(y + i, vfmaq_f32(v, ib, sin2_neon(vmulq_n_f32(v, ea))));
    }
    if (i < n) { /* the tail through a zero-padded copy */
        float buf[4] = {0, 0, 0, 0};
        for (int64_t k = i; k < n; k++) buf[k - i] = x[k];
        const float32x4_t v = vld1q_f32(buf);
        vst1q_f32(buf, vfmaq_f32(v, ib, sin2_neon(vmulq_n_f32(v, ea))));
        for (int64_t k = i; k < n; k++) y[k] = buf[k - i];
    }
}

/* ---- bf16 channel pairs ---- */

/* qtts_f32_to_bf16 on 4 lanes (round to nearest even, NaN kept quiet), in the low 16 bits. */
INLINE uint32x4_t bf16_bits(float32x4_t f) {
    const uint32x4_t u = vreinterpretq_u32_f32(f);
    const uint32x4_t is_nan = vcgtq_u32(vandq_u32(u, vdupq_n_u32(0x7fffffffu)), vdupq_n_u32(0x7f800000u));
    const uint32x4_t lsb = vandq_u32(vshrq_n_u32(u, 16), vdupq_n_u32(1));
    const uint32x4_t rounded = vshrq_n_u32(vaddq_u32(u, vaddq_u32(vdupq_n_u32(0x7fffu), lsb)), 16);
    const uint32x4_t quiet = vorrq_u32(vshrq_n_u32(u, 16), vdupq_n_u32(0x40));
    return vbslq_u32(is_nan, quiet, rounded);
}

void qtts_bf16_pairs_row_neon(const float *x0, const float *x1, uint32_t *pairs, int64_t n) {
    int64_t t = 0;
    for (; t + 4 <= n; t += 4) {
        uint32x4_t p = bf16_bits(vld1q_f32(x0 + t));
        if (x1) p = vorrq_u32(p, vshlq_n_u32(bf16_bits(vld1q_f32(x1 + t)), 16));
        vst1q_u32(pairs + t, p);
    }
    if (t < n) qtts_bf16_pairs_row_scalar(x0 + t, x1 ? x1 + t : NULL, pairs + t, n - t);
}
