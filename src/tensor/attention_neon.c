/* NEON attention kernel (AArch64 baseline). Scalar twin: qtts_attn_item_scalar. */
#include <arm_neon.h>
#include <math.h>

#include "tensor/attention_kernels.h"
#include "tensor/vexp.h"

/* Four key or value elements from index i: f32, or f16 widened exactly. */
static inline float32x4_t load_kv(const void *p, int64_t i, int f16) {
    return f16 ? vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)p + i))) : vld1q_f32((const float *)p + i);
}

/* scale * q.k for n <= 8 key rows (stride apart): one FMA chain per key, so
 * eight keys keep eight chains in flight; a key's sum does not depend on n. */
static inline void scores(const float *q, const void *k, int64_t stride, int64_t n, int64_t hd, float scale,
                          float *out, int f16) {
    float32x4_t acc[8];
    for (int i = 0; i < 8; i++) acc[i] = vdupq_n_f32(0.0f);
    if (n == 8) {
        for (int64_t d = 0; d < hd; d += 4) {
            const float32x4_t qv = vld1q_f32(q + d);
            for (int i = 0; i < 8; i++) acc[i] = vfmaq_f32(acc[i], qv, load_kv(k, i * stride + d, f16));
        }
    } else {
        for (int64_t i = 0; i < n; i++)
            for (int64_t d = 0; d < hd; d += 4)
                acc[i] = vfmaq_f32(acc[i], vld1q_f32(q + d), load_kv(k, i * stride + d, f16));
    }
    /* pairwise sums: lane i of r0 is key i's ((l0+l1)+(l2+l3)) */
    const float32x4_t r0 = vpaddq_f32(vpaddq_f32(acc[0], acc[1]), vpaddq_f32(acc[2], acc[3]));
    const float32x4_t r1 = vpaddq_f32(vpaddq_f32(acc[4], acc[5]), vpaddq_f32(acc[6], acc[7]));
    float r[8];
    vst1q_f32(r, vmulq_n_f32(r0, scale));
    vst1q_f32(r + 4, vmulq_n_f32(r1, scale));
    for (int64_t i = 0; i < n; i++) out[i] = r[i];
}

static inline void scale_row(float *o, int64_t hd, float c) {
    for (int64_t d = 0; d < hd; d += 4) vst1q_f32(o + d, vmulq_n_f32(vld1q_f32(o + d), c));
}

/* o += sum_j w[j] * v_j over nb value rows, 32 columns at a time in eight
 * registers (eight independent FMA chains hide the FMA latency). */
static inline void add_values(float *o, const float *w, const void *v, int64_t stride, int64_t nb, int64_t hd,
                              int f16) {
    int64_t d = 0;
    for (; d + 32 <= hd; d += 32) {
        float32x4_t acc[8];
        for (int i = 0; i < 8; i++) acc[i] = vld1q_f32(o + d + 4 * i);
        for (int64_t j = 0; j < nb; j++) {
            const int64_t vr = j * stride + d;
            for (int i = 0; i < 8; i++) acc[i] = vfmaq_n_f32(acc[i], load_kv(v, vr + 4 * i, f16), w[j]);
        }
        for (int i = 0; i < 8; i++) vst1q_f32(o + d + 4 * i, acc[i]);
    }
    for (; d < hd; d += 4) {
        float32x4_t a0 = vld1q_f32(o + d);
        for (int64_t j = 0; j < nb; j++) a0 = vfmaq_n_f32(a0, load_kv(v, j * stride + d, f16), w[j]);
        vst1q_f32(o + d, a0);
    }
}

static inline float exp_shifted_sum(float *s, int64_t n, float m) {
    const float32x4_t mv = vdupq_n_f32(m);
    float32x4_t sum = vdupq_n_f32(0.0f);
    for (int64_t j = 0; j < n; j += 4) {
        const float32x4_t e = qtts_exp_neon(vsubq_f32(vld1q_f32(s + j), mv));
        vst1q_f32(s + j, e);
        sum = vaddq_f32(sum, e);
    }
    return vaddvq_f32(sum);
}

#define ATTN_VW 4
#define ATTN_ITEM_FN qtts_attn_item_neon
#include "tensor/attention_item.h"
