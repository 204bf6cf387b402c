/* AVX2+FMA twins of ops.c's elementwise kernels (built with -mavx2 -mfma). */
#include <math.h>

#include "tensor/ops_kernels.h"
#include "tensor/vexp.h"

void qtts_swiglu_avx2(float *gate, const float *up, int64_t n) {
    const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 g = _mm256_loadu_ps(gate + i);
        const __m256 e = qtts_exp_avx2(_mm256_sub_ps(zero, g));
        _mm256_storeu_ps(gate + i, _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(one, e)), _mm256_loadu_ps(up + i)));
    }
    for (; i < n; i++) gate[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}

void qtts_f32_to_f16_row_avx2(const float *x, uint16_t *y, int64_t n) {
    const __m256 lim = _mm256_set1_ps(65504.0f), nlim = _mm256_set1_ps(-65504.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_max_ps(_mm256_min_ps(_mm256_loadu_ps(x + i), lim), nlim);
        _mm_storeu_si128((__m128i *)(void *)(y + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    }
    if (i < n) { /* the tail through a padded vector: the same rounding as the body */
        _Alignas(32) float t[8] = {0};
        _Alignas(16) uint16_t h[8];
        for (int64_t j = i; j < n; j++) t[j - i] = x[j];
        const __m256 v = _mm256_max_ps(_mm256_min_ps(_mm256_load_ps(t), lim), nlim);
        _mm_store_si128((__m128i *)(void *)h, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
        for (int64_t j = i; j < n; j++) y[j] = h[j - i];
    }
}

void qtts_f16_to_f32_row_avx2(const uint16_t *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(x + i))));
    if (i < n) {
        _Alignas(16) uint16_t h[8] = {0};
        _Alignas(32) float f[8];
        for (int64_t j = i; j < n; j++) h[j - i] = x[j];
        _mm256_store_ps(f, _mm256_cvtph_ps(_mm_load_si128((const __m128i *)(const void *)h)));
        for (int64_t j = i; j < n; j++) y[j] = f[j - i];
    }
}
