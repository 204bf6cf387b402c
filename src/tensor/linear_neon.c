/* NEON dense-layer kernels for every ARMv8-A core (no extension needed):
 * int8 dot products by widening multiplies (SMULL/SMLAL2, then pairwise
 * adds). linear_neon_dotprod.c is the same with SDOT. Scalar twin: the
 * portable path of linear.c (tests/test_linear.c compares them). */
#include <arm_neon.h>

/* |w| <= 128 and |x| <= 127, so two products fit an int16 lane */
static inline int32x4_t dot32(int32x4_t acc, int8x16_t w0, int8x16_t w1, const int8_t *x) {
    const int8x16_t x0 = vld1q_s8(x), x1 = vld1q_s8(x + 16);
    int16x8_t p0 = vmlal_high_s8(vmull_s8(vget_low_s8(w0), vget_low_s8(x0)), w0, x0);
    int16x8_t p1 = vmlal_high_s8(vmull_s8(vget_low_s8(w1), vget_low_s8(x1)), w1, x1);
    return vpadalq_s16(vpadalq_s16(acc, p0), p1);
}

#include "tensor/linear_arm.h"

void qtts_linear_rows_neon(const qtts_mat *w, const qtts_act *a, const float *bias, float *y, int64_t r0,
                           int64_t r1) {
    ARM_ROWS_SWITCH()
}

/* ---- activation packing (the scalar twins are pack_q8_0 / pack_q8_k in
 * linear.c; same operations in f32, so the results are bit-identical) ---- */

/* 16 values times id, rounded to nearest even (as lrintf), clamped to
 * +-127, stored as int8; returns their sum. */
static inline int32_t quant16_neon(const float *x, float32x4_t id, int8_t *q) {
    const int32x4_t lo = vdupq_n_s32(-127), hi = vdupq_n_s32(127);
    int32x4_t v[4];
    for (int i = 0; i < 4; i++) v[i] = vminq_s32(vmaxq_s32(vcvtnq_s32_f32(vmulq_f32(vld1q_f32(x + 4 * i), id)), lo), hi);
    const int16x8_t a = vcombine_s16(vmovn_s32(v[0]), vmovn_s32(v[1])), b = vcombine_s16(vmovn_s32(v[2]), vmovn_s32(v[3]));
    vst1q_s8(q, vcombine_s8(vmovn_s16(a), vmovn_s16(b)));
    return vaddvq_s32(vaddq_s32(vaddq_s32(v[0], v[1]), vaddq_s32(v[2], v[3])));
}

static inline float amax_neon(const float *x, int64_t n) {
    float32x4_t m = vdupq_n_f32(0.0f);
    for (int64_t i = 0; i < n; i += 4) m = vmaxq_f32(m, vabsq_f32(vld1q_f32(x + i)));
    return vmaxvq_f32(m);
}

void qtts_pack_q8_0_neon(const float *x, int64_t cols, int8_t *q, float *qd, int32_t *xsum) {
    for (int64_t b = 0; b < cols / 32; b++, x += 32, q += 32) {
        const float amax = amax_neon(x, 32);
        qd[b] = amax / 127.0f;
        const float32x4_t id = vdupq_n_f32(amax > 0 ? 127.0f / amax : 0.0f);
        const int32_t s = quant16_neon(x, id, q) + quant16_neon(x + 16, id, q + 16);
        if (xsum) xsum[b] = 128 * s;
    }
}

void qtts_pack_q8_k_neon(const float *x, int64_t cols, int8_t *q, float *qd, int16_t *bsum, int natural) {
    for (int64_t b = 0; b < cols / 256; b++, x += 256, q += 256) {
        const float amax = amax_neon(x, 256);
        qd[b] = amax / 127.0f;
        const float32x4_t id = vdupq_n_f32(amax > 0 ? 127.0f / amax : 0.0f);
        for (int j = 0; j < 8; j++) {
            int8_t *dst = q + 32 * qtts_q8_k_slot(j, natural);
            bsum[8 * b + j] = (int16_t)(quant16_neon(x + 32 * j, id, dst) + quant16_neon(x + 32 * j + 16, id, dst + 16));
        }
    }
}
