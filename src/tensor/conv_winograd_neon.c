/* NEON twins of the Winograd transforms (conv_winograd.c has the scalar
 * ones): 8 tiles as two vectors, the same fused multiply-adds in the same
 * order, so the results are the scalar twins' bits. */
#include <arm_neon.h>

#include "tensor/conv_winograd.h"

void qtts_winograd_input_neon(const qtts_winograd_plan *p, const float *const *X, int64_t dil, int64_t ntp,
                              float *U, int64_t ldu, int64_t c_in, int64_t ci) {
    const float *src[QTTS_WINOGRAD_NMAX];
    for (int i = 0; i < p->n; i++) src[i] = X[i % p->m] + (i / p->m) * dil;
    for (int64_t t = 0; t < ntp; t += 8) {
        float32x4_t x0[QTTS_WINOGRAD_NMAX], x1[QTTS_WINOGRAD_NMAX];
        for (int i = 0; i < p->n; i++) {
            x0[i] = vld1q_f32(src[i] + t);
            x1[i] = vld1q_f32(src[i] + t + 4);
        }
        float *u = U + qtts_winograd_u_index(t, ntp, c_in, ci);
        for (int q = 0; q < p->n; q++) {
            float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0;
            for (int i = 0; i < p->n; i++) {
                a0 = vfmaq_n_f32(a0, x0[i], p->bt[q][i]);
                a1 = vfmaq_n_f32(a1, x1[i], p->bt[q][i]);
            }
            vst1q_f32(u + q * ldu, a0);
            vst1q_f32(u + q * ldu + 4, a1);
        }
    }
}

void qtts_winograd_output_neon(const qtts_winograd_plan *p, const float *M, int64_t ldm, int64_t ntp, float *Y,
                               int64_t ldyp) {
    for (int64_t t = 0; t < ntp; t += 8)
        for (int j = 0; j < p->m; j++) {
            float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0;
            for (int q = 0; q < p->n; q++) {
                const float *mr = M + q * ldm + t;
                a0 = vfmaq_n_f32(a0, vld1q_f32(mr), p->at[j][q]);
                a1 = vfmaq_n_f32(a1, vld1q_f32(mr + 4), p->at[j][q]);
            }
            vst1q_f32(Y + j * ldyp + t, a0);
            vst1q_f32(Y + j * ldyp + t + 4, a1);
        }
}
