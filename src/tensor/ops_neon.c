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
