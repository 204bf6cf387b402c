/* AVX-512 twins of ops.c's elementwise kernels (built with the AVX-512 flags). */
#include <math.h>

#include "tensor/ops_kernels.h"
#include "tensor/vexp.h"

void qtts_swiglu_avx512(float *gate, const float *up, int64_t n) {
    const __m512 one = _mm512_set1_ps(1.0f), zero = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 g = _mm512_loadu_ps(gate + i);
        const __m512 e = qtts_exp_avx512(_mm512_sub_ps(zero, g));
        _mm512_storeu_ps(gate + i, _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(one, e)), _mm512_loadu_ps(up + i)));
    }
    for (; i < n; i++) gate[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}

void qtts_f32_to_f16_row_avx512(const float *x, uint16_t *y, int64_t n) {
    const __m512 lim = _mm512_set1_ps(65504.0f), nlim = _mm512_set1_ps(-65504.0f);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 v = _mm512_max_ps(_mm512_min_ps(_mm512_loadu_ps(x + i), lim), nlim);
        _mm256_storeu_si256((__m256i *)(void *)(y + i), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    }
    if (i < n) { /* the tail under a mask: the same rounding as the body */
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
        const __m512 v = _mm512_max_ps(_mm512_min_ps(_mm512_maskz_loadu_ps(m, x + i), lim), nlim);
        _mm256_mask_storeu_epi16((void *)(y + i), m, _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    }
}

void qtts_f16_to_f32_row_avx512(const uint16_t *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(x + i))));
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
        _mm512_mask_storeu_ps(y + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const void *)(x + i))));
    }
}
