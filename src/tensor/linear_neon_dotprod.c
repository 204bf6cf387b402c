/* NEON dense-layer kernels with SDOT (FEAT_DotProd; built with
 * -march=armv8.2-a+dotprod, called only when the CPU reports it). Same tiles
 * as linear_neon.c; only the int8 dot product differs. */
#include <arm_neon.h>

static inline int32x4_t dot32(int32x4_t acc, int8x16_t w0, int8x16_t w1, const int8_t *x) {
    return vdotq_s32(vdotq_s32(acc, w0, vld1q_s8(x)), w1, vld1q_s8(x + 16));
}

#include "tensor/linear_arm.h"

void qtts_linear_rows_neon_dotprod(const qtts_mat *w, const qtts_act *a, const float *bias, float *y, int64_t r0,
                                   int64_t r1) {
    ARM_ROWS_SWITCH()
}
