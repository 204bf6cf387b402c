/* AVX-512 attention kernel (built with the AVX-512 flags; only called after
 * a cpuid check in attention.c). Scalar twin: qtts_attn_item_scalar. */
#include "tensor/x86_simd.h"
#include <math.h>

#include "tensor/attention_kernels.h"
#include "tensor/vexp.h"

/* The eight sums of v[0..7] (each first folded to 8 lanes), one per lane. */
static inline __m256 hsum8(const __m512 v[8]) {
    __m256 h[8];
    for (int i = 0; i < 8; i++) h[i] = _mm256_add_ps(_mm512_castps512_ps256(v[i]), _mm512_extractf32x8_ps(v[i], 1));
    const __m256 u0 = _mm256_hadd_ps(_mm256_hadd_ps(h[0], h[1]), _mm256_hadd_ps(h[2], h[3]));
    const __m256 u1 = _mm256_hadd_ps(_mm256_hadd_ps(h[4], h[5]), _mm256_hadd_ps(h[6], h[7]));
    return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}

/* Sixteen key or value elements from index i: f32, or f16 widened exactly. */
static inline __m512 load_kv(const void *p, int64_t i, int f16) {
    return f16 ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)((const uint16_t *)p + i)))
               : _mm512_loadu_ps((const float *)p + i);
}

/* scale * q.k for n <= 8 key rows (stride apart): one FMA chain per key, so
 * eight keys keep eight chains in flight; a key's sum does not depend on n. */
static inline void scores(const float *q, const void *k, int64_t stride, int64_t n, int64_t hd, float scale,
                          float *out, int f16) {
    __m512 acc[8];
    for (int i = 0; i < 8; i++) acc[i] = _mm512_setzero_ps();
    if (n == 8) {
        for (int64_t d = 0; d < hd; d += 16) {
            const __m512 qv = _mm512_loadu_ps(q + d);
            for (int i = 0; i < 8; i++) acc[i] = _mm512_fmadd_ps(qv, load_kv(k, i * stride + d, f16), acc[i]);
        }
    } else {
        for (int64_t i = 0; i < n; i++)
            for (int64_t d = 0; d < hd; d += 16)
                acc[i] = _mm512_fmadd_ps(_mm512_loadu_ps(q + d), load_kv(k, i * stride + d, f16), acc[i]);
    }
    _Alignas(32) float r[8];
    _mm256_store_ps(r, _mm256_mul_ps(hsum8(acc), _mm256_set1_ps(scale)));
    for (int64_t i = 0; i < n; i++) out[i] = r[i];
}

static inline void scale_row(float *o, int64_t hd, float c) {
    const __m512 cv = _mm512_set1_ps(c);
    for (int64_t d = 0; d < hd; d += 16) _mm512_storeu_ps(o + d, _mm512_mul_ps(_mm512_loadu_ps(o + d), cv));
}

/* o += sum_j w[j] * v_j over nb value rows, 128 columns at a time in eight
 * registers (eight independent FMA chains hide the FMA latency). */
static inline void add_values(float *o, const float *w, const void *v, int64_t stride, int64_t nb, int64_t hd,
                              int f16) {
    int64_t d = 0;
    for (; d + 128 <= hd; d += 128) {
        __m512 acc[8];
        for (int i = 0; i < 8; i++) acc[i] = _mm512_loadu_ps(o + d + 16 * i);
        for (int64_t j = 0; j < nb; j++) {
            const int64_t vr = j * stride + d;
            const __m512 wj = _mm512_set1_ps(w[j]);
            for (int i = 0; i < 8; i++) acc[i] = _mm512_fmadd_ps(wj, load_kv(v, vr + 16 * i, f16), acc[i]);
        }
        for (int i = 0; i < 8; i++) _mm512_storeu_ps(o + d + 16 * i, acc[i]);
    }
    for (; d + 64 <= hd; d += 64) {
        __m512 acc[4];
        for (int i = 0; i < 4; i++) acc[i] = _mm512_loadu_ps(o + d + 16 * i);
        for (int64_t j = 0; j < nb; j++) {
            const int64_t vr = j * stride + d;
            const __m512 wj = _mm512_set1_ps(w[j]);
            for (int i = 0; i < 4; i++) acc[i] = _mm512_fmadd_ps(wj, load_kv(v, vr + 16 * i, f16), acc[i]);
        }
        for (int i = 0; i < 4; i++) _mm512_storeu_ps(o + d + 16 * i, acc[i]);
    }
    for (; d < hd; d += 16) {
        __m512 a0 = _mm512_loadu_ps(o + d);
        for (int64_t j = 0; j < nb; j++)
            a0 = _mm512_fmadd_ps(_mm512_set1_ps(w[j]), load_kv(v, j * stride + d, f16), a0);
        _mm512_storeu_ps(o + d, a0);
    }
}

static inline float exp_shifted_sum(float *s, int64_t n, float m) {
    const __m512 mv = _mm512_set1_ps(m);
    __m512 sum = _mm512_setzero_ps();
    for (int64_t j = 0; j < n; j += 16) {
        const __m512 e = qtts_exp_avx512(_mm512_sub_ps(_mm512_load_ps(s + j), mv));
        _mm512_store_ps(s + j, e);
        sum = _mm512_add_ps(sum, e);
    }
    return _mm512_reduce_add_ps(sum);
}

#define ATTN_VW 16
#define ATTN_ITEM_FN qtts_attn_item_avx512
#include "tensor/attention_item.h"
