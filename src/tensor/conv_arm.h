/* What the two NEON conv tiles (conv_neon.c, conv_neon_bf16.c) share: the
 * store of an 8-row register tile. Only for files built for AArch64. */
#ifndef QTTS_TENSOR_CONV_ARM_H
#define QTTS_TENSOR_CONV_ARM_H

#include <arm_neon.h>

#include "tensor/conv_kernels.h"

#define INLINE static inline __attribute__((always_inline))

/* y = acc + bias (+ add) for the block's rows below c_out. */
INLINE void store_rows(const qtts_conv *cv, int64_t rb, float32x4_t acc[8][3], int V, float *y, int64_t ldy,
                       const float *add, int64_t ldadd) {
    for (int r = 0; r < 8; r++) {
        const int64_t row = rb * QTTS_CONV_MR + r;
        if (row >= cv->c_out) break;
        const float32x4_t b = vdupq_n_f32(cv->bias[row]);
        for (int v = 0; v < V; v++) {
            float32x4_t o = vaddq_f32(acc[r][v], b);
            if (add) o = vaddq_f32(o, vld1q_f32(add + row * ldadd + 4 * v));
            vst1q_f32(y + row * ldy + 4 * v, o);
        }
    }
}

#endif
