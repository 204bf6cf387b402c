#include "tensor/ops.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
    const float *x, *w, *b;
    int64_t dim;
    float eps;
    float *y;
} norm_job;

static void rmsnorm_rows(void *p, int64_t r0, int64_t r1, int tid) {
    (void)tid;
    const norm_job *j = p;
    for (int64_t r = r0; r < r1; r++) {
        const float *x = j->x + r * j->dim;
        float *y = j->y + r * j->dim;
        double ss = 0.0;
        for (int64_t i = 0; i < j->dim; i++) ss += (double)x[i] * x[i];
        float inv = 1.0f / sqrtf((float)(ss / (double)j->dim) + j->eps);
        for (int64_t i = 0; i < j->dim; i++) y[i] = (j->w ? j->w[i] : 1.0f) * (x[i] * inv);
    }
}

void qtts_rmsnorm(qtts_pool *pool, const float *x, const float *w, int64_t rows, int64_t dim, float eps, float *y) {
    norm_job j = {x, w, NULL, dim, eps, y};
    qtts_parallel_for_work(pool, rows, 1, (double)rows * (double)dim, rmsnorm_rows, &j);
}

static void layernorm_rows(void *p, int64_t r0, int64_t r1, int tid) {
    (void)tid;
    const norm_job *j = p;
    for (int64_t r = r0; r < r1; r++) {
        const float *x = j->x + r * j->dim;
        float *y = j->y + r * j->dim;
        double s = 0.0;
        for (int64_t i = 0; i < j->dim; i++) s += x[i];
        float mean = (float)(s / (double)j->dim);
        double v = 0.0;
        for (int64_t i = 0; i < j->dim; i++) v += (double)(x[i] - mean) * (x[i] - mean);
        float inv = 1.0f / sqrtf((float)(v / (double)j->dim) + j->eps);
        for (int64_t i = 0; i < j->dim; i++) {
            float t = (x[i] - mean) * inv;
            y[i] = t * (j->w ? j->w[i] : 1.0f) + (j->b ? j->b[i] : 0.0f);
        }
    }
}

void qtts_layernorm(qtts_pool *pool, const float *x, const float *w, const float *b, int64_t rows, int64_t dim,
                    float eps, float *y) {
    norm_job j = {x, w, b, dim, eps, y};
    qtts_parallel_for_work(pool, rows, 1, (double)rows * (double)dim, layernorm_rows, &j);
}

void qtts_rope_neox(float *x, int64_t n_tokens, int64_t stride, int64_t n_heads, int64_t head_dim, int64_t pos0,
                    double theta) {
    int64_t half = head_dim / 2;
    float cs[512], sn[512];
    float inv_freq[512];
    for (int64_t i = 0; i < half && i < 512; i++)
        inv_freq[i] = 1.0f / powf((float)theta, (float)(2 * i) / (float)head_dim);
    for (int64_t t = 0; t < n_tokens; t++) {
        float pos = (float)(pos0 + t);
        for (int64_t i = 0; i < half && i < 512; i++) {
            float ang = pos * inv_freq[i];
            cs[i] = (float)cos((double)ang);
            sn[i] = (float)sin((double)ang);
        }
        for (int64_t h = 0; h < n_heads; h++) {
            float *v = x + t * stride + h * head_dim;
            for (int64_t i = 0; i < half; i++) {
                float a = v[i], b = v[i + half];
                v[i] = a * cs[i] - b * sn[i];
                v[i + half] = b * cs[i] + a * sn[i];
            }
        }
    }
}

void qtts_silu(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = x[i] / (1.0f + expf(-x[i]));
}

void qtts_gelu_erf(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
}

void qtts_swiglu(float *gate, const float *up, int64_t n) {
    for (int64_t i = 0; i < n; i++) gate[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}

/* q.k with 16 independent partial sums (a fixed order, so every build and
 * thread count gives the same bits): the compiler turns the lanes into one
 * vector register, where a single running sum would stay scalar. */
static float dot_lanes(const float *q, const float *k, int64_t n) {
    enum { LANES = 16 };
    float acc[LANES] = {0};
    int64_t d = 0;
    for (; d + LANES <= n; d += LANES)
        for (int i = 0; i < LANES; i++) acc[i] += q[d + i] * k[d + i];
    float tail = 0.0f;
    for (; d < n; d++) tail += q[d] * k[d];
    for (int w = LANES / 2; w > 0; w /= 2)
        for (int i = 0; i < w; i++) acc[i] += acc[i + w];
    return acc[0] + tail;
}

/* One (query token, head) pair per work item; scores use a small stack
 * buffer per block of keys with an online softmax, so any context fits. */
static void attention_items(void *p, int64_t i0, int64_t i1, int tid) {
    (void)tid;
    const qtts_attn_args *a = p;
    const int64_t hd = a->head_dim, group = a->n_heads / a->n_kv_heads;
    enum { BLOCK = 256 };
    float s[BLOCK];
    for (int64_t item = i0; item < i1; item++) {
        int64_t t = item / a->n_heads, h = item % a->n_heads, kvh = h / group;
        const float *q = a->q + t * a->q_stride + h * hd;
        float *o = a->out + t * a->out_stride + h * hd;
        int64_t qi = a->q_first + t;
        int64_t j0 = a->window > 0 && qi - a->window + 1 > 0 ? qi - a->window + 1 : 0;
        float m = -INFINITY, l = 0.0f;
        for (int64_t d = 0; d < hd; d++) o[d] = 0.0f;
        for (int64_t jb = j0; jb <= qi; jb += BLOCK) {
            int64_t je = jb + BLOCK - 1 < qi ? jb + BLOCK - 1 : qi;
            float bm = -INFINITY;
            for (int64_t j = jb; j <= je; j++) {
                const float *k = a->k + j * a->kv_stride + kvh * hd;
                s[j - jb] = dot_lanes(q, k, hd) * a->scale;
                bm = s[j - jb] > bm ? s[j - jb] : bm;
            }
            float nm = bm > m ? bm : m;
            float corr = expf(m - nm);
            l *= corr;
            for (int64_t d = 0; d < hd; d++) o[d] *= corr;
            for (int64_t j = jb; j <= je; j++) {
                float e = expf(s[j - jb] - nm);
                l += e;
                const float *v = a->v + j * a->kv_stride + kvh * hd;
                for (int64_t d = 0; d < hd; d++) o[d] += e * v[d];
            }
            m = nm;
        }
        float inv = l > 0 ? 1.0f / l : 0.0f;
        for (int64_t d = 0; d < hd; d++) o[d] *= inv;
    }
}

void qtts_attention(qtts_pool *pool, const qtts_attn_args *a) {
    int64_t items = a->n_q * a->n_heads;
    /* q.k and the weighted sum of v: 2 MACs per key per head dimension */
    int64_t keys = a->q_first + a->n_q;
    if (a->window > 0 && a->window < keys) keys = a->window;
    double work = 2.0 * (double)items * (double)keys * (double)a->head_dim;
    qtts_parallel_for_work(pool, items, 1, work, attention_items, (void *)a);
}
