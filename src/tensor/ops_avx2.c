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
