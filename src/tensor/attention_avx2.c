/* AVX2+FMA attention kernel (built with -mavx2 -mfma; only called after a
 * cpuid check in attention.c). Scalar twin: qtts_attn_item_scalar. */
#include <immintrin.h>
#include <math.h>

#include "tensor/attention_kernels.h"
#include "tensor/vexp.h"

static inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

/* The eight sums of v[0..7], one per lane, each as ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)). */
static inline __m256 hsum8(const __m256 v[8]) {
    const __m256 u0 = _mm256_hadd_ps(_mm256_hadd_ps(v[0], v[1]), _mm256_hadd_ps(v[2], v[3]));
    const __m256 u1 = _mm256_hadd_ps(_mm256_hadd_ps(v[4], v[5]), _mm256_hadd_ps(v[6], v[7]));
    return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}

/* Eight key or value elements from index i: f32, or f16 widened exactly (F16C). */
static inline __m256 load_kv(const void *p, int64_t i, int f16) {
    return f16 ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)((const uint16_t *)p + i)))
               : _mm256_loadu_ps((const float *)p + i);
}

/* scale * q.k for n <= 8 key rows (stride apart): one FMA chain per key, so
 * eight keys keep eight chains in flight; a key's sum does not depend on n. */
static inline void scores(const float *q, const void *k, int64_t stride, int64_t n, int64_t hd, float scale,
                          float *out, int f16) {
    __m256 acc[8];
    for (int i = 0; i < 8; i++) acc[i] = _mm256_setzero_ps();
    if (n == 8) {
        for (int64_t d = 0; d < hd; d += 8) {
            const __m256 qv = _mm256_loadu_ps(q + d);
            for (int i = 0; i < 8; i++) acc[i] = _mm256_fmadd_ps(qv, load_kv(k, i * stride + d, f16), acc[i]);
        }
    } else {
        for (int64_t i = 0; i < n; i++)
            for (int64_t d = 0; d < hd; d += 8)
                acc[i] = _mm256_fmadd_ps(_mm256_loadu_ps(q + d), load_kv(k, i * stride + d, f16), acc[i]);
    }
    _Alignas(32) float r[8];
    _mm256_store_ps(r, _mm256_mul_ps(hsum8(acc), _mm256_set1_ps(scale)));
    for (int64_t i = 0; i < n; i++) out[i] = r[i];
}

static inline void scale_row(float *o, int64_t hd, float c) {
    const __m256 cv = _mm256_set1_ps(c);
    for (int64_t d = 0; d < hd; d += 8) _mm256_storeu_ps(o + d, _mm256_mul_ps(_mm256_loadu_ps(o + d), cv));
}

/* o += sum_j w[j] * v_j over nb value rows, 64 columns at a time in eight
 * registers: eight independent FMA chains hide the FMA latency, where four
 * left the loop waiting on it. */
static inline void add_values(float *o, const float *w, const void *v, int64_t stride, int64_t nb, int64_t hd,
                              int f16) {
    int64_t d = 0;
    for (; d + 64 <= hd; d += 64) {
        __m256 acc[8];
        for (int i = 0; i < 8; i++) acc[i] = _mm256_loadu_ps(o + d + 8 * i);
        for (int64_t j = 0; j < nb; j++) {
            const int64_t vr = j * stride + d;
            const __m256 wj = _mm256_broadcast_ss(w + j);
            for (int i = 0; i < 8; i++) acc[i] = _mm256_fmadd_ps(wj, load_kv(v, vr + 8 * i, f16), acc[i]);
        }
        for (int i = 0; i < 8; i++) _mm256_storeu_ps(o + d + 8 * i, acc[i]);
    }
    for (; d < hd; d += 8) {
        __m256 a0 = _mm256_loadu_ps(o + d);
        for (int64_t j = 0; j < nb; j++)
            a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(w + j), load_kv(v, j * stride + d, f16), a0);
        _mm256_storeu_ps(o + d, a0);
    }
}

static inline float exp_shifted_sum(float *s, int64_t n, float m) {
    const __m256 mv = _mm256_set1_ps(m);
    __m256 sum = _mm256_setzero_ps();
    for (int64_t j = 0; j < n; j += 8) {
        const __m256 e = qtts_exp_avx2(_mm256_sub_ps(_mm256_load_ps(s + j), mv));
        _mm256_store_ps(s + j, e);
        sum = _mm256_add_ps(sum, e);
    }
    return hsum(sum);
}

#define ATTN_VW 8
#define ATTN_ITEM_FN qtts_attn_item_avx2
#include "tensor/attention_item.h"
