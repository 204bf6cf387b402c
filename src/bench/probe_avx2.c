/* AVX2/FMA loops of the machine probe (see probe_kernels.h). */
#include <immintrin.h>

#include "bench/probe_kernels.h"

static float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

float qtts_probe_read_avx2(const float *p, size_t n) {
    /* eight streams far apart, read in lockstep (see probe_avx512.c) */
    enum { S = 8 };
    const size_t q = (n / S) & ~(size_t)7;
    __m256 a[S];
    for (int k = 0; k < S; k++) a[k] = _mm256_setzero_ps();
    for (size_t i = 0; i < q; i += 8)
        for (int k = 0; k < S; k++) a[k] = _mm256_add_ps(a[k], _mm256_loadu_ps(p + (size_t)k * q + i));
    for (int k = 1; k < S; k++) a[0] = _mm256_add_ps(a[0], a[k]);
    return hsum8(a[0]);
}

float qtts_probe_fma_avx2(int64_t iters) {
    __m256 a[QTTS_PROBE_CHAINS_AVX2];
    for (int i = 0; i < QTTS_PROBE_CHAINS_AVX2; i++) a[i] = _mm256_set1_ps(1e-3f * (float)i);
    const __m256 m = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    for (int64_t it = 0; it < iters; it++)
        for (int i = 0; i < QTTS_PROBE_CHAINS_AVX2; i++) a[i] = _mm256_fmadd_ps(a[i], m, b);
    __m256 s = _mm256_setzero_ps();
    for (int i = 0; i < QTTS_PROBE_CHAINS_AVX2; i++) s = _mm256_add_ps(s, a[i]);
    return hsum8(s);
}
