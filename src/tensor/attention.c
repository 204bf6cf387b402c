#include "tensor/attention.h"

#include <math.h>

#include "tensor/attention_kernels.h"
#include "tensor/tensor.h"

/* Element i of a key or value row as f32. */
static inline float kv_elem(const void *row, int64_t i, int f16) {
    return f16 ? qtts_f16_to_f32(((const uint16_t *)row)[i]) : ((const float *)row)[i];
}

/* q.k with 16 independent partial sums in a fixed order (the compiler keeps
 * the lanes in vector registers, where one running sum would stay scalar). */
static float dot_lanes(const float *q, const void *k, int64_t n, int f16) {
    enum { LANES = 16 };
    float acc[LANES] = {0};
    int64_t d = 0;
    for (; d + LANES <= n; d += LANES)
        for (int i = 0; i < LANES; i++) acc[i] += q[d + i] * kv_elem(k, d + i, f16);
    float tail = 0.0f;
    for (; d < n; d++) tail += q[d] * kv_elem(k, d, f16);
    for (int w = LANES / 2; w > 0; w /= 2)
        for (int i = 0; i < w; i++) acc[i] += acc[i + w];
    return acc[0] + tail;
}

/* The scalar twin, with libm's expf: the reference the SIMD kernels are
 * compared against. Same blocks and order as theirs. */
static inline void attn_item_scalar(const qtts_attn_args *a, int64_t t, int64_t h0, int64_t gh, int f16) {
    const int64_t hd = a->head_dim, kvh = h0 / (a->n_heads / a->n_kv_heads), qi = a->q_first + t;
    const void *kbase = qtts_attn_kv_at(a->k, kvh * hd, f16), *vbase = qtts_attn_kv_at(a->v, kvh * hd, f16);
    float s[QTTS_ATTN_BLOCK];
    for (int64_t g = 0; g < gh; g++) {
        const float *q = a->q + t * a->q_stride + (h0 + g) * hd;
        float *o = a->out + t * a->out_stride + (h0 + g) * hd;
        float m = -INFINITY, l = 0.0f;
        for (int64_t d = 0; d < hd; d++) o[d] = 0.0f;
        for (int64_t jb = qtts_attn_first_key(a, t); jb <= qi; jb += QTTS_ATTN_BLOCK) {
            const int64_t nb = qi - jb + 1 < QTTS_ATTN_BLOCK ? qi - jb + 1 : QTTS_ATTN_BLOCK;
            float bm = -INFINITY;
            for (int64_t j = 0; j < nb; j++) {
                s[j] = dot_lanes(q, qtts_attn_kv_at(kbase, (jb + j) * a->kv_stride, f16), hd, f16) * a->scale;
                bm = s[j] > bm ? s[j] : bm;
            }
            const float nm = bm > m ? bm : m, corr = expf(m - nm);
            l *= corr;
            for (int64_t d = 0; d < hd; d++) o[d] *= corr;
            for (int64_t j = 0; j < nb; j++) {
                const float e = expf(s[j] - nm);
                const void *v = qtts_attn_kv_at(vbase, (jb + j) * a->kv_stride, f16);
                l += e;
                for (int64_t d = 0; d < hd; d++) o[d] += e * kv_elem(v, d, f16);
            }
            m = nm;
        }
        const float inv = l > 0 ? 1.0f / l : 0.0f;
        for (int64_t d = 0; d < hd; d++) o[d] *= inv;
    }
}

void qtts_attn_item_scalar(const qtts_attn_args *a, int64_t t, int64_t h0, int64_t gh) {
    if (a->kv_f16)
        attn_item_scalar(a, t, h0, gh, 1);
    else
        attn_item_scalar(a, t, h0, gh, 0);
}

/* The best kernel of `isa` (or below it) that takes this head_dim. */
static qtts_attn_item_fn pick(qtts_isa isa, int64_t hd) {
    for (isa = qtts_isa_usable(isa);; isa = qtts_isa_usable(qtts_isa_lower(isa))) {
        switch (isa) {
#if defined(__x86_64__) || defined(_M_X64)
        case QTTS_ISA_AVX512:
            if (hd % 16 == 0) return qtts_attn_item_avx512;
            break;
        case QTTS_ISA_AVX2:
            if (hd % 8 == 0) return qtts_attn_item_avx2;
            break;
#endif
#if defined(__aarch64__)
        case QTTS_ISA_NEON:
        case QTTS_ISA_NEON_DOTPROD:
        case QTTS_ISA_NEON_BF16:
            if (hd % 4 == 0) return qtts_attn_item_neon;
            break;
#endif
        default: return qtts_attn_item_scalar;
        }
    }
}

typedef struct {
    const qtts_attn_args *a;
    qtts_attn_item_fn fn;
    int64_t gh, per_token; /* heads per item, items per query token */
} attn_job;

static void attn_items(void *p, int64_t i0, int64_t i1, int tid) {
    (void)tid;
    const attn_job *j = p;
    const int64_t group = j->a->n_heads / j->a->n_kv_heads, per_kv = (group + j->gh - 1) / j->gh;
    for (int64_t it = i0; it < i1; it++) {
        const int64_t t = it / j->per_token, r = it % j->per_token, kvh = r / per_kv;
        const int64_t h0 = kvh * group + (r % per_kv) * j->gh, end = (kvh + 1) * group;
        j->fn(j->a, t, h0, h0 + j->gh <= end ? j->gh : end - h0);
    }
}

int qtts_attention_group_items(const qtts_pool *pool, int64_t items) {
    return !pool || items >= 2 * qtts_pool_size(pool);
}

void qtts_attention_isa(qtts_pool *pool, const qtts_attn_args *a, qtts_isa isa) {
    const int64_t group = a->n_heads / a->n_kv_heads;
    int64_t gh = group < QTTS_ATTN_MAX_GROUP ? group : QTTS_ATTN_MAX_GROUP;
    if (!qtts_attention_group_items(pool, a->n_q * a->n_kv_heads)) gh = 1;
    attn_job j = {a, pick(isa, a->head_dim), gh, a->n_kv_heads * ((group + gh - 1) / gh)};
    const int64_t items = a->n_q * j.per_token, keys = a->q_first + a->n_q;
    const int64_t seen = a->window > 0 && a->window < keys ? a->window : keys;
    /* q.k and the weighted sum of v: 2 MACs per key per head dimension */
    const double work = 2.0 * (double)(a->n_q * a->n_heads) * (double)seen * (double)a->head_dim;
    qtts_parallel_for_work(pool, items, 1, work, attn_items, &j);
}

void qtts_attention(qtts_pool *pool, const qtts_attn_args *a) { qtts_attention_isa(pool, a, qtts_cpu_isa()); }
