/* The per-item driver shared by the SIMD attention kernels (private to
 * src/tensor; see attention_kernels.h for what an item is). An including
 * file defines, before including this, its ISA's primitives:
 *   ATTN_VW                 floats per vector (head_dim is a multiple of it)
 *   scores(q, k, stride, n, hd, scale, out, f16)   scale * q.k for n <= 8 key rows
 *   exp_shifted_sum(s, n, m) s[j] = exp(s[j] - m) for j < n (a multiple of
 *                           ATTN_VW), returns their sum
 *   scale_row(o, hd, c)     o *= c
 *   add_values(o, w, v, stride, nb, hd, f16)       o += sum_j w[j] * v_j
 * (keys and values f32, or f16 where f16) and gets attn_item(), the body of
 * its qtts_attn_item_<isa>, and qtts_attn_item_<isa> itself (named by
 * ATTN_ITEM_FN). That calls attn_item with a constant f16, so the compiler
 * makes the f32 and f16 loops separate code (two constprop clones). The order of operations is the scalar twin's
 * (qtts_attn_item_scalar); an f16 element converts to f32 exactly. */
#ifndef QTTS_TENSOR_ATTENTION_ITEM_H
#define QTTS_TENSOR_ATTENTION_ITEM_H

#include <math.h>
#include <string.h>

#include "tensor/attention_kernels.h"

static inline void attn_item(const qtts_attn_args *a, int64_t t, int64_t h0, int64_t gh, int f16) {
    const int64_t hd = a->head_dim, kvh = h0 / (a->n_heads / a->n_kv_heads), qi = a->q_first + t;
    const void *kbase = qtts_attn_kv_at(a->k, kvh * hd, f16), *vbase = qtts_attn_kv_at(a->v, kvh * hd, f16);
    _Alignas(64) float s[QTTS_ATTN_MAX_GROUP][QTTS_ATTN_BLOCK];
    float m[QTTS_ATTN_MAX_GROUP], l[QTTS_ATTN_MAX_GROUP];
    const float *q[QTTS_ATTN_MAX_GROUP];
    float *o[QTTS_ATTN_MAX_GROUP];
    for (int64_t g = 0; g < gh; g++) {
        q[g] = a->q + t * a->q_stride + (h0 + g) * hd;
        o[g] = a->out + t * a->out_stride + (h0 + g) * hd;
        m[g] = -INFINITY;
        l[g] = 0.0f;
        memset(o[g], 0, (size_t)hd * sizeof(float));
    }
    for (int64_t jb = qtts_attn_first_key(a, t); jb <= qi; jb += QTTS_ATTN_BLOCK) {
        const int64_t nb = qi - jb + 1 < QTTS_ATTN_BLOCK ? qi - jb + 1 : QTTS_ATTN_BLOCK;
        const int64_t padded = (nb + ATTN_VW - 1) / ATTN_VW * ATTN_VW;
        for (int64_t j = 0; j < nb; j += 8) { /* eight key rows, read once for the whole group */
            const void *kj = qtts_attn_kv_at(kbase, (jb + j) * a->kv_stride, f16);
            for (int64_t g = 0; g < gh; g++)
                scores(q[g], kj, a->kv_stride, nb - j < 8 ? nb - j : 8, hd, a->scale, &s[g][j], f16);
        }
        for (int64_t g = 0; g < gh; g++) {
            float bm = -INFINITY;
            for (int64_t j = 0; j < nb; j++) bm = s[g][j] > bm ? s[g][j] : bm;
            for (int64_t j = nb; j < padded; j++) s[g][j] = -INFINITY; /* weight 0 */
            const float nm = bm > m[g] ? bm : m[g], corr = expf(m[g] - nm);
            if (corr != 1.0f) scale_row(o[g], hd, corr);
            l[g] = l[g] * corr + exp_shifted_sum(s[g], padded, nm);
            m[g] = nm;
        }
        const void *vb = qtts_attn_kv_at(vbase, jb * a->kv_stride, f16);
        for (int64_t g = 0; g < gh; g++) add_values(o[g], s[g], vb, a->kv_stride, nb, hd, f16);
    }
    for (int64_t g = 0; g < gh; g++) scale_row(o[g], hd, l[g] > 0 ? 1.0f / l[g] : 0.0f);
}

void ATTN_ITEM_FN(const qtts_attn_args *a, int64_t t, int64_t h0, int64_t gh) {
    if (a->kv_f16)
        attn_item(a, t, h0, gh, 1);
    else
        attn_item(a, t, h0, gh, 0);
}

#endif
