/* AVX-512 attention kernel (built with the AVX-512 flags; only called after
 * a cpuid check in attention.c). Scalar twin: qtts_attn_item_scalar. */
#include <immintrin.h>
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

/* scale * q.k for n <= 8 key rows (stride apart): one FMA chain per key, so
 * eight keys keep eight chains in flight; a key's sum does not depend on n. */
static inline void scores(const float *q, const float *k, int64_t stride, int64_t n, int64_t hd, float scale,
                          float *out) {
    __m512 acc[8];
    for (int i = 0; i < 8; i++) acc[i] = _mm512_setzero_ps();
    if (n == 8) {
        for (int64_t d = 0; d < hd; d += 16) {
            const __m512 qv = _mm512_loadu_ps(q + d);
            for (int i = 0; i < 8; i++) acc[i] = _mm512_fmadd_ps(qv, _mm512_loadu_ps(k + i * stride + d), acc[i]);
        }
    } else {
        for (int64_t i = 0; i < n; i++)
            for (int64_t d = 0; d < hd; d += 16)
                acc[i] = _mm512_fmadd_ps(_mm512_loadu_ps(q + d), _mm512_loadu_ps(k + i * stride + d), acc[i]);
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
static inline void add_values(float *o, const float *w, const float *v, int64_t stride, int64_t nb, int64_t hd) {
    int64_t d = 0;
    for (; d + 128 <= hd; d += 128) {
        __m512 acc[8];
        for (int i = 0; i < 8; i++) acc[i] = _mm512_loadu_ps(o + d + 16 * i);
        for (int64_t j = 0; j < nb; j++) {
            const float *vr = v + j * stride + d;
            const __m512 wj = _mm512_set1_ps(w[j]);
            for (int i = 0; i < 8; i++) acc[i] = _mm512_fmadd_ps(wj, _mm512_loadu_ps(vr + 16 * i), acc[i]);
        }
        for (int i = 0; i < 8; i++) _mm512_storeu_ps(o + d + 16 * i, acc[i]);
    }
    for (; d + 64 <= hd; d += 64) {
        __m512 acc[4];
        for (int i = 0; i < 4; i++) acc[i] = _mm512_loadu_ps(o + d + 16 * i);
        for (int64_t j = 0; j < nb; j++) {
            const float *vr = v + j * stride + d;
            const __m512 wj = _mm512_set1_ps(w[j]);
            for (int i = 0; i < 4; i++) acc[i] = _mm512_fmadd_ps(wj, _mm512_loadu_ps(vr + 16 * i), acc[i]);
        }
        for (int i = 0; i < 4; i++) _mm512_storeu_ps(o + d + 16 * i, acc[i]);
    }
    for (; d < hd; d += 16) {
        __m512 a0 = _mm512_loadu_ps(o + d);
        for (int64_t j = 0; j < nb; j++)
            a0 = _mm512_fmadd_ps(_mm512_set1_ps(w[j]), _mm512_loadu_ps(v + j * stride + d), a0);
        _mm512_storeu_ps(o + d, a0);
    }
}

void qtts_attn_item_avx512(const qtts_attn_args *a, int64_t t, int64_t h0, int64_t gh) {
    const int64_t hd = a->head_dim, kvh = h0 / (a->n_heads / a->n_kv_heads), qi = a->q_first + t;
    const float *kbase = a->k + kvh * hd, *vbase = a->v + kvh * hd;
    _Alignas(64) float s[QTTS_ATTN_MAX_GROUP][QTTS_ATTN_BLOCK];
    float m[QTTS_ATTN_MAX_GROUP], l[QTTS_ATTN_MAX_GROUP];
    const float *q[QTTS_ATTN_MAX_GROUP];
    float *o[QTTS_ATTN_MAX_GROUP];
    for (int64_t g = 0; g < gh; g++) {
        q[g] = a->q + t * a->q_stride + (h0 + g) * hd;
        o[g] = a->out + t * a->out_stride + (h0 + g) * hd;
        m[g] = -INFINITY;
        l[g] = 0.0f;
        for (int64_t d = 0; d < hd; d += 16) _mm512_storeu_ps(o[g] + d, _mm512_setzero_ps());
    }
    for (int64_t jb = qtts_attn_first_key(a, t); jb <= qi; jb += QTTS_ATTN_BLOCK) {
        const int64_t nb = qi - jb + 1 < QTTS_ATTN_BLOCK ? qi - jb + 1 : QTTS_ATTN_BLOCK, nb16 = (nb + 15) & ~15;
        for (int64_t j = 0; j < nb; j += 8) { /* eight key rows, read once for the whole group */
            const float *kj = kbase + (jb + j) * a->kv_stride;
            for (int64_t g = 0; g < gh; g++)
                scores(q[g], kj, a->kv_stride, nb - j < 8 ? nb - j : 8, hd, a->scale, &s[g][j]);
        }
        for (int64_t g = 0; g < gh; g++) {
            float bm = -INFINITY;
            for (int64_t j = 0; j < nb; j++) bm = s[g][j] > bm ? s[g][j] : bm;
            for (int64_t j = nb; j < nb16; j++) s[g][j] = -INFINITY; /* weight 0 */
            const float nm = bm > m[g] ? bm : m[g], corr = expf(m[g] - nm);
            if (corr != 1.0f) scale_row(o[g], hd, corr);
            __m512 sum = _mm512_setzero_ps();
            const __m512 nmv = _mm512_set1_ps(nm);
            for (int64_t j = 0; j < nb16; j += 16) {
                const __m512 e = qtts_exp_avx512(_mm512_sub_ps(_mm512_load_ps(&s[g][j]), nmv));
                _mm512_store_ps(&s[g][j], e);
                sum = _mm512_add_ps(sum, e);
            }
            l[g] = l[g] * corr + _mm512_reduce_add_ps(sum);
            m[g] = nm;
        }
        for (int64_t g = 0; g < gh; g++) add_values(o[g], s[g], vbase + jb * a->kv_stride, a->kv_stride, nb, hd);
    }
    for (int64_t g = 0; g < gh; g++) scale_row(o[g], hd, l[g] > 0 ? 1.0f / l[g] : 0.0f);
}
