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
