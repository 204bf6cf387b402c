/* NEON loops of the machine probe (see probe_kernels.h). */
#include <arm_neon.h>

#include "bench/probe_kernels.h"

float qtts_probe_read_neon(const float *p, size_t n) {
    /* eight streams far apart, read in lockstep (see probe_avx512.c) */
    enum { S = 8 };
    const size_t q = (n / S) & ~(size_t)7;
    float32x4_t a[S][2];
    for (int k = 0; k < S; k++) a[k][0] = a[k][1] = vdupq_n_f32(0.0f);
    for (size_t i = 0; i < q; i += 8)
        for (int k = 0; k < S; k++) {
            a[k][0] = vaddq_f32(a[k][0], vld1q_f32(p + (size_t)k * q + i));
            a[k][1] = vaddq_f32(a[k][1], vld1q_f32(p + (size_t)k * q + i + 4));
        }
    float32x4_t s = vdupq_n_f32(0.0f);
    for (int k = 0; k < S; k++) s = vaddq_f32(s, vaddq_f32(a[k][0], a[k][1]));
    return vaddvq_f32(s);
}

float qtts_probe_fma_neon(int64_t iters) {
    float32x4_t a[QTTS_PROBE_CHAINS_NEON];
    for (int i = 0; i < QTTS_PROBE_CHAINS_NEON; i++) a[i] = vdupq_n_f32(1e-3f * (float)i);
    const float32x4_t m = vdupq_n_f32(0.999999f), b = vdupq_n_f32(1e-7f);
    for (int64_t it = 0; it < iters; it++)
        for (int i = 0; i < QTTS_PROBE_CHAINS_NEON; i++) a[i] = vfmaq_f32(b, a[i], m);
    float32x4_t s = vdupq_n_f32(0.0f);
    for (int i = 0; i < QTTS_PROBE_CHAINS_NEON; i++) s = vaddq_f32(s, a[i]);
    return vaddvq_f32(s);
}
