/* AVX-512 loops of the machine probe (see probe_kernels.h). */
#include <immintrin.h>

#include "bench/probe_kernels.h"

float qtts_probe_read_avx512(const float *p, size_t n) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i + 64 <= n; i += 64) {
        a0 = _mm512_add_ps(a0, _mm512_loadu_ps(p + i));
        a1 = _mm512_add_ps(a1, _mm512_loadu_ps(p + i + 16));
        a2 = _mm512_add_ps(a2, _mm512_loadu_ps(p + i + 32));
        a3 = _mm512_add_ps(a3, _mm512_loadu_ps(p + i + 48));
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

float qtts_probe_fma_avx512(int64_t iters) {
    __m512 a[QTTS_PROBE_CHAINS_AVX512];
    for (int i = 0; i < QTTS_PROBE_CHAINS_AVX512; i++) a[i] = _mm512_set1_ps(1e-3f * (float)i);
    const __m512 m = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    for (int64_t it = 0; it < iters; it++)
        for (int i = 0; i < QTTS_PROBE_CHAINS_AVX512; i++) a[i] = _mm512_fmadd_ps(a[i], m, b);
    __m512 s = _mm512_setzero_ps();
    for (int i = 0; i < QTTS_PROBE_CHAINS_AVX512; i++) s = _mm512_add_ps(s, a[i]);
    return _mm512_reduce_add_ps(s);
}
