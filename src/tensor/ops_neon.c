/* NEON twins of ops.c's elementwise kernels (AArch64 baseline). */
#include <math.h>

#include "tensor/ops_kernels.h"
#include "tensor/vexp.h"

void qtts_swiglu_neon(float *gate, const float *up, int64_t n) {
    const float32x4_t one = vdupq_n_f32(1.0f);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t g = vld1q_f32(gate + i);
        const float32x4_t e = qtts_exp_neon(vnegq_f32(g));
        vst1q_f32(gate + i, vmulq_f32(vdivq_f32(g, vaddq_f32(one, e)), vld1q_f32(up + i)));
    }
    for (; i < n; i++) gate[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}

void qtts_f32_to_f16_row_neon(const float *x, uint16_t *y, int64_t n) {
    const float32x4_t lim = vdupq_n_f32(65504.0f), nlim = vdupq_n_f32(-65504.0f);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) { /* vcvt rounds as FPCR says: to nearest even unless changed */
        const float32x4_t v = vmaxq_f32(vminq_f32(vld1q_f32(x + i), lim), nlim);
        vst1_u16(y + i, vreinterpret_u16_f16(vcvt_f16_f32(v)));
    }
    if (i < n) {
        float t[4] = {0};
        uint16_t h[4];
        for (int64_t j = i; j < n; j++) t[j - i] = x[j];
        vst1_u16(h, vreinterpret_u16_f16(vcvt_f16_f32(vmaxq_f32(vminq_f32(vld1q_f32(t), lim), nlim))));
        for (int64_t j = i; j < n; j++) y[j] = h[j - i];
    }
}

void qtts_f16_to_f32_row_neon(const uint16_t *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(x + i))));
    if (i < n) {
        uint16_t h[4] = {0};
        float f[4];
        for (int64_t j = i; j < n; j++) h[j - i] = x[j];
        vst1q_f32(f, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(h))));
        for (int64_t j = i; j < n; j++) y[j] = f[j - i];
    }
}
