/* exp(x) on SIMD vectors for the kernels built with ISA flags (attention
 * weights, SwiGLU): Cody-Waite reduction by ln 2 and the Cephes expf
 * polynomial on [-ln2/2, ln2/2], within 2 ulp of expf. Inputs are clamped to
 * [QTTS_EXP_MIN, QTTS_EXP_MAX]; below QTTS_EXP_MIN the result is 0 (under
 * 1e-37: a softmax weight nobody can see), above QTTS_EXP_MAX it is
 * exp(QTTS_EXP_MAX) (1.6e38, where 1 + e^x already dwarfs any activation).
 * Each function exists only in a file compiled for its ISA. Scalar twins use
 * libm's expf. */
#ifndef QTTS_TENSOR_VEXP_H
#define QTTS_TENSOR_VEXP_H

#define QTTS_EXP_MIN (-87.0f)
#define QTTS_EXP_MAX 88.0f
#define QTTS_EXP_LOG2E 1.44269504088896341f
#define QTTS_EXP_C1 0.693359375f
#define QTTS_EXP_C2 (-2.12194440e-4f)
#define QTTS_EXP_P0 1.9875691500e-4f
#define QTTS_EXP_P1 1.3981999507e-3f
#define QTTS_EXP_P2 8.3334519073e-3f
#define QTTS_EXP_P3 4.1665795894e-2f
#define QTTS_EXP_P4 1.6666665459e-1f
#define QTTS_EXP_P5 5.0000001201e-1f

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
static inline __m256 qtts_exp_avx2(__m256 x) {
    const __m256 valid = _mm256_cmp_ps(x, _mm256_set1_ps(QTTS_EXP_MIN), _CMP_GE_OQ);
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(QTTS_EXP_MIN)), _mm256_set1_ps(QTTS_EXP_MAX));
    const __m256 fx = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(QTTS_EXP_LOG2E)),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(fx, _mm256_set1_ps(QTTS_EXP_C1), x);
    r = _mm256_fnmadd_ps(fx, _mm256_set1_ps(QTTS_EXP_C2), r);
    __m256 y = _mm256_set1_ps(QTTS_EXP_P0);
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(QTTS_EXP_P1));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(QTTS_EXP_P2));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(QTTS_EXP_P3));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(QTTS_EXP_P4));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(QTTS_EXP_P5));
    y = _mm256_add_ps(_mm256_fmadd_ps(y, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)), 23);
    return _mm256_and_ps(_mm256_mul_ps(y, _mm256_castsi256_ps(e)), valid);
}
#endif

#if defined(__AVX512F__) || defined(QTTS_SIMDE_AVX512)
#include "tensor/x86_simd.h" /* SIMDe in the emulated AVX-512 test build */
static inline __m512 qtts_exp_avx512(__m512 x) {
    const __mmask16 valid = _mm512_cmp_ps_mask(x, _mm512_set1_ps(QTTS_EXP_MIN), _CMP_GE_OQ);
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(QTTS_EXP_MIN)), _mm512_set1_ps(QTTS_EXP_MAX));
    const __m512 fx = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(QTTS_EXP_LOG2E)),
                                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(fx, _mm512_set1_ps(QTTS_EXP_C1), x);
    r = _mm512_fnmadd_ps(fx, _mm512_set1_ps(QTTS_EXP_C2), r);
    __m512 y = _mm512_set1_ps(QTTS_EXP_P0);
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(QTTS_EXP_P1));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(QTTS_EXP_P2));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(QTTS_EXP_P3));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(QTTS_EXP_P4));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(QTTS_EXP_P5));
    y = _mm512_add_ps(_mm512_fmadd_ps(y, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
    const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvttps_epi32(fx), _mm512_set1_epi32(127)), 23);
    return _mm512_maskz_mul_ps(valid, y, _mm512_castsi512_ps(e));
}
#endif

#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
static inline float32x4_t qtts_exp_neon(float32x4_t x) {
    const uint32x4_t valid = vcgeq_f32(x, vdupq_n_f32(QTTS_EXP_MIN));
    x = vminq_f32(vmaxq_f32(x, vdupq_n_f32(QTTS_EXP_MIN)), vdupq_n_f32(QTTS_EXP_MAX));
    const float32x4_t fx = vrndnq_f32(vmulq_n_f32(x, QTTS_EXP_LOG2E));
    float32x4_t r = vfmsq_f32(x, fx, vdupq_n_f32(QTTS_EXP_C1));
    r = vfmsq_f32(r, fx, vdupq_n_f32(QTTS_EXP_C2));
    float32x4_t y = vdupq_n_f32(QTTS_EXP_P0);
    y = vfmaq_f32(vdupq_n_f32(QTTS_EXP_P1), y, r);
    y = vfmaq_f32(vdupq_n_f32(QTTS_EXP_P2), y, r);
    y = vfmaq_f32(vdupq_n_f32(QTTS_EXP_P3), y, r);
    y = vfmaq_f32(vdupq_n_f32(QTTS_EXP_P4), y, r);
    y = vfmaq_f32(vdupq_n_f32(QTTS_EXP_P5), y, r);
    y = vaddq_f32(vfmaq_f32(r, y, vmulq_f32(r, r)), vdupq_n_f32(1.0f));
    const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(fx), vdupq_n_s32(127)), 23);
    const float32x4_t p = vmulq_f32(y, vreinterpretq_f32_s32(e));
    return vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(p), valid));
}
#endif

#endif
