/* AVX-512 loops of the machine probe (see probe_kernels.h). */
#include "tensor/x86_simd.h"

#include "bench/probe_kernels.h"

float qtts_probe_read_avx512(const float *p, size_t n) {
    /* eight streams far apart, read in lockstep: more misses in flight than
     * one sequential stream, as a matrix-vector kernel reading several rows has */
    enum { S = 8 };
    const size_t q = (n / S) & ~(size_t)15;
    __m512 a[S];
    for (int k = 0; k < S; k++) a[k] = _mm512_setzero_ps();
    for (size_t i = 0; i < q; i += 16)
        for (int k = 0; k < S; k++) a[k] = _mm512_add_ps(a[k], _mm512_loadu_ps(p + (size_t)k * q + i));
    for (int k = 1; k < S; k++) a[0] = _mm512_add_ps(a[0], a[k]);
    return _mm512_reduce_add_ps(a[0]);
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

float qtts_probe_bf16dot_avx512(int64_t iters) {
    __m512 a[QTTS_PROBE_CHAINS_AVX512];
    for (int i = 0; i < QTTS_PROBE_CHAINS_AVX512; i++) a[i] = _mm512_set1_ps(1e-3f * (float)i);
    const __m512bh x = (__m512bh)_mm512_set1_epi32(0x3f803f80), y = (__m512bh)_mm512_set1_epi32(0x33d633d6);
    for (int64_t it = 0; it < iters; it++)
        for (int i = 0; i < QTTS_PROBE_CHAINS_AVX512; i++) a[i] = _mm512_dpbf16_ps(a[i], x, y);
    __m512 s = _mm512_setzero_ps();
    for (int i = 0; i < QTTS_PROBE_CHAINS_AVX512; i++) s = _mm512_add_ps(s, a[i]);
    return _mm512_reduce_add_ps(s);
}
