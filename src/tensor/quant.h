/* Block quantization in the GGML layouts (Q8_0: 32 elements, f16 scale + 32
 * int8; Q4_K: 256 elements in 8 sub-blocks with 6-bit scales and mins), so
 * GGUF files written by other tools load here and vice versa. */
#ifndef QTTS_TENSOR_QUANT_H
#define QTTS_TENSOR_QUANT_H

#include <stdint.h>

#include "tensor/tensor.h"

typedef struct {
    uint16_t d; /* f16 */
    int8_t qs[32];
} qtts_block_q8_0;

typedef struct {
    uint16_t d;    /* f16 super-block scale for the scales */
    uint16_t dmin; /* f16 super-block scale for the mins */
    uint8_t scales[12];
    uint8_t qs[128];
} qtts_block_q4_k;

/* n must be a multiple of the type's block size. qtts_dequantize_row also
 * converts the plain types (F32, BF16, F16) to f32. */
void qtts_quantize_row(qtts_dtype t, const float *src, void *dst, int64_t n);
/* The scalar twin of qtts_quantize_row (its Q4_K fit uses SSE2 where built
 * for it): the same bytes, which tests check. */
void qtts_quantize_row_ref(qtts_dtype t, const float *src, void *dst, int64_t n);
void qtts_dequantize_row(qtts_dtype t, const void *src, float *dst, int64_t n);

/* The storage-only GGML types (Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q5_K,
 * Q6_K, and I32 as integers: tensor/dequant_ggml.c); other types are left untouched. */
void qtts_dequantize_ggml_row(qtts_dtype t, const void *src, float *dst, int64_t n);

/* Q4_K: the 6-bit scale and min codes of sub-block j (0..7) from the 12-byte field. */
void qtts_q4_k_scale_min(int j, const uint8_t *scales, uint8_t *sc, uint8_t *m);

#endif
