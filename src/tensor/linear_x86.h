/* Helpers shared by linear_avx2.c and linear_avx512.c (both compiled with
 * AVX2): SSE helpers for reductions and the Q4_K scale field. Not to be
 * included from files built without ISA flags. */
#ifndef QTTS_TENSOR_LINEAR_X86_H
#define QTTS_TENSOR_LINEAR_X86_H

#include "tensor/x86_simd.h"
#include <stdint.h>

#include "tensor/linear_impl.h"
#include "tensor/linear_rows.h"

INLINE float hsum4(__m128 s) {
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

INLINE float f16_to_f32(uint16_t h) { return _cvtsh_ss(h); }

/* The Q4_K 12-byte scale field (s points at it inside a block) unpacked to
 * 16 bytes: scales 0-7, then mins 0-7, all 0..63. Reads 16 bytes (the last 4
 * belong to the block's nibbles), all in registers. */
INLINE __m128i qtts_q4k_scales_vec(const uint8_t *s) {
    const __m128i v = _mm_loadu_si128((const __m128i *)s);            /* dwords A B C . */
    const __m128i t1 = _mm_shuffle_epi32(v, _MM_SHUFFLE(2, 1, 2, 0)); /* A C B C */
    const __m128i t2 = _mm_shuffle_epi32(v, _MM_SHUFFLE(1, 1, 0, 0)); /* A A B B */
    const __m128i lo = _mm_and_si128(_mm_srlv_epi32(t1, _mm_set_epi32(4, 0, 0, 0)),
                                     _mm_set_epi32(0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f));
    /* top two bits of A (scales) / B (mins) become bits 4-5 of entries 4-7 */
    const __m128i hi = _mm_and_si128(_mm_srli_epi32(t2, 2), _mm_set_epi32(0x30303030, 0, 0x30303030, 0));
    return _mm_or_si128(lo, hi);
}

/* The Q4_K mins term of block b for token t: acc + (mins . bsum) * s, in 4
 * lanes (m16: the block's 8 mins as int16; s = dmin * the token's scale). */
INLINE __m128 qtts_q4k_mins_fma(const qtts_act *a, int64_t t, int64_t b, __m128i m16, float s, __m128 acc) {
    const __m128i bs = _mm_loadu_si128((const __m128i *)(a->bsum + t * a->nsub + 8 * b));
    return _mm_fmadd_ps(_mm_cvtepi32_ps(_mm_madd_epi16(m16, bs)), _mm_set1_ps(s), acc);
}

#endif
