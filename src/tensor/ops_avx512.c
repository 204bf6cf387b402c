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
