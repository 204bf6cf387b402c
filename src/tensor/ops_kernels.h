/* Per-ISA twins of ops.c's elementwise kernels (private to src/tensor);
 * each is only called after a cpuid check in ops.c. */
#ifndef QTTS_TENSOR_OPS_KERNELS_H
#define QTTS_TENSOR_OPS_KERNELS_H

#include <stdint.h>

/* gate[i] = silu(gate[i]) * up[i], with the vector exp of tensor/vexp.h */
void qtts_swiglu_avx2(float *gate, const float *up, int64_t n);
void qtts_swiglu_avx512(float *gate, const float *up, int64_t n);
void qtts_swiglu_neon(float *gate, const float *up, int64_t n);

/* y[i] = f16 bits of x[i] clamped to [-65504, 65504], round to nearest even */
void qtts_f32_to_f16_row_avx2(const float *x, uint16_t *y, int64_t n);
void qtts_f32_to_f16_row_avx512(const float *x, uint16_t *y, int64_t n);
void qtts_f32_to_f16_row_neon(const float *x, uint16_t *y, int64_t n);
/* y[i] = f32 of the f16 bits x[i] (exact) */
void qtts_f16_to_f32_row_avx2(const uint16_t *x, float *y, int64_t n);
void qtts_f16_to_f32_row_avx512(const uint16_t *x, float *y, int64_t n);
void qtts_f16_to_f32_row_neon(const uint16_t *x, float *y, int64_t n);

#endif
