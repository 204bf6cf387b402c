/* Per-ISA twins of quant.c's Q4_K quantizer and the helpers they share
 * (private to src/tensor); each is only called after a cpuid check in
 * quant.c. */
#ifndef QTTS_TENSOR_QUANT_KERNELS_H
#define QTTS_TENSOR_QUANT_KERNELS_H

#include <stdint.h>

#include "tensor/quant.h"

static inline int qtts_q4_k_clamp63(int v) { return v < 0 ? 0 : v > 63 ? 63 : v; }
/* The 12-byte field of eight 6-bit scale codes ls and min codes lm. */
void qtts_q4_k_pack_scales(uint8_t *s, const uint8_t *ls, const uint8_t *lm);

/* n_blocks super-blocks of 256 values: the bytes of quant.c's scalar twin. */
void qtts_quantize_q4_k_avx2(const float *src, qtts_block_q4_k *y, int64_t n_blocks);

#endif
