/* The BFDOT loop of the machine probe (FEAT_BF16; see probe_kernels.h). */
#include <arm_neon.h>

#include "bench/probe_kernels.h"

float qtts_probe_bf16dot_neon(int64_t iters) {
    float32x4_t a[QTTS_PROBE_CHAINS_NEON];
    for (int i = 0; i < QTTS_PROBE_CHAINS_NEON; i++) a[i] = vdupq_n_f32(1e-3f * (float)i);
    /* bf16 pairs of 0.5 (0x3f00) and 1e-3-ish values: the sums stay finite */
    uint16x8_t mu = vdupq_n_u16(0x3f00), bu = vdupq_n_u16(0x3a83);
    /* opaque to the optimiser: GCC 12 otherwise materialises them with an FP16 fmov (not in +bf16) */
    __asm__("" : "+w"(mu), "+w"(bu));
    const bfloat16x8_t m = vreinterpretq_bf16_u16(mu), b = vreinterpretq_bf16_u16(bu);
    for (int64_t it = 0; it < iters; it++)
        for (int i = 0; i < QTTS_PROBE_CHAINS_NEON; i++) a[i] = vbfdotq_f32(a[i], m, b);
    float32x4_t s = vdupq_n_f32(0.0f);
    for (int i = 0; i < QTTS_PROBE_CHAINS_NEON; i++) s = vaddq_f32(s, a[i]);
    return vaddvq_f32(s);
}
