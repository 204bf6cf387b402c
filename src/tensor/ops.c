#include "tensor/ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/ops_kernels.h"
#include "tensor/tensor.h"

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

static void rope_inv_freq(float *inv_freq, int64_t head_dim, double theta) {
    for (int64_t i = 0; i < head_dim / 2; i++)
        inv_freq[i] = 1.0f / powf((float)theta, (float)(2 * i) / (float)head_dim);
}

/* cs/sn of position pos from the inverse frequencies; cs may be inv_freq itself. */
static void rope_angles_from(const float *inv_freq, int64_t half, int64_t pos, float *cs, float *sn) {
    const float p = (float)pos;
    for (int64_t i = 0; i < half; i++) {
        const float ang = p * inv_freq[i];
        cs[i] = (float)cos((double)ang);
        sn[i] = (float)sin((double)ang);
    }
}

void qtts_rope_angles(float *cs, float *sn, int64_t head_dim, int64_t pos, double theta) {
    rope_inv_freq(cs, head_dim, theta);
    rope_angles_from(cs, head_dim / 2, pos, cs, sn);
}

void qtts_rope_neox_rotate(float *x, int64_t n_heads, int64_t head_dim, const float *cs, const float *sn) {
    const int64_t half = head_dim / 2;
    for (int64_t h = 0; h < n_heads; h++) {
        float *v = x + h * head_dim;
        for (int64_t i = 0; i < half; i++) {
            const float a = v[i], b = v[i + half];
            v[i] = a * cs[i] - b * sn[i];
            v[i + half] = b * cs[i] + a * sn[i];
        }
    }
}

void qtts_rope_neox(float *x, int64_t n_tokens, int64_t stride, int64_t n_heads, int64_t head_dim, int64_t pos0,
                    double theta) {
    enum { MAX_HALF = 2048 }; /* head_dim <= 4096: the configs' cap (ops.h) */
    float inv_freq[MAX_HALF], cs[MAX_HALF], sn[MAX_HALF];
    rope_inv_freq(inv_freq, head_dim, theta);
    for (int64_t t = 0; t < n_tokens; t++) {
        rope_angles_from(inv_freq, head_dim / 2, pos0 + t, cs, sn);
        qtts_rope_neox_rotate(x + t * stride, n_heads, head_dim, cs, sn);
    }
}

void qtts_silu(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = x[i] / (1.0f + expf(-x[i]));
}

void qtts_gelu_erf(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
}

void qtts_swiglu_isa(float *gate, const float *up, int64_t n, qtts_isa isa) {
    switch (qtts_isa_usable(isa)) {
#if defined(__x86_64__) || defined(_M_X64)
    case QTTS_ISA_AVX512: qtts_swiglu_avx512(gate, up, n); return;
    case QTTS_ISA_AVX2: qtts_swiglu_avx2(gate, up, n); return;
#endif
#if defined(__aarch64__)
    case QTTS_ISA_NEON:
    case QTTS_ISA_NEON_DOTPROD:
    case QTTS_ISA_NEON_BF16: qtts_swiglu_neon(gate, up, n); return;
#endif
    default:
        for (int64_t i = 0; i < n; i++) gate[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
        return;
    }
}

void qtts_swiglu(float *gate, const float *up, int64_t n) { qtts_swiglu_isa(gate, up, n, qtts_cpu_isa()); }

/* The scalar twin of the f16 row conversion: clamp, then tensor.c's
 * round-to-nearest-even conversion (the bits F16C and NEON produce). */
static inline uint16_t f16_saturated(float x) {
    const float lim = 65504.0f;
    return qtts_f32_to_f16(x > lim ? lim : x < -lim ? -lim : x);
}

void qtts_f32_to_f16_row_isa(const float *x, uint16_t *y, int64_t n, qtts_isa isa) {
    switch (qtts_isa_usable(isa)) {
#if defined(__x86_64__) || defined(_M_X64)
    case QTTS_ISA_AVX512: qtts_f32_to_f16_row_avx512(x, y, n); return;
    case QTTS_ISA_AVX2: qtts_f32_to_f16_row_avx2(x, y, n); return;
#endif
#if defined(__aarch64__)
    case QTTS_ISA_NEON:
    case QTTS_ISA_NEON_DOTPROD:
    case QTTS_ISA_NEON_BF16: qtts_f32_to_f16_row_neon(x, y, n); return;
#endif
    default:
        for (int64_t i = 0; i < n; i++) y[i] = f16_saturated(x[i]);
        return;
    }
}

void qtts_f32_to_f16_row(const float *x, uint16_t *y, int64_t n) { qtts_f32_to_f16_row_isa(x, y, n, qtts_cpu_isa()); }

void qtts_f16_to_f32_row_isa(const uint16_t *x, float *y, int64_t n, qtts_isa isa) {
    switch (qtts_isa_usable(isa)) {
#if defined(__x86_64__) || defined(_M_X64)
    case QTTS_ISA_AVX512: qtts_f16_to_f32_row_avx512(x, y, n); return;
    case QTTS_ISA_AVX2: qtts_f16_to_f32_row_avx2(x, y, n); return;
#endif
#if defined(__aarch64__)
    case QTTS_ISA_NEON:
    case QTTS_ISA_NEON_DOTPROD:
    case QTTS_ISA_NEON_BF16: qtts_f16_to_f32_row_neon(x, y, n); return;
#endif
    default:
        for (int64_t i = 0; i < n; i++) y[i] = qtts_f16_to_f32(x[i]);
        return;
    }
}

void qtts_f16_to_f32_row(const uint16_t *x, float *y, int64_t n) { qtts_f16_to_f32_row_isa(x, y, n, qtts_cpu_isa()); }

typedef struct {
    const float *fused;
    int64_t inter;
    float *out;
} swiglu_job;

static void swiglu_rows(void *p, int64_t r0, int64_t r1, int tid) {
    (void)tid;
    const swiglu_job *j = p;
    for (int64_t r = r0; r < r1; r++) {
        const float *f = j->fused + r * 2 * j->inter;
        memcpy(j->out + r * j->inter, f, (size_t)j->inter * sizeof(float));
        qtts_swiglu(j->out + r * j->inter, f + j->inter, j->inter);
    }
}

void qtts_swiglu_fused(qtts_pool *pool, const float *fused, int64_t rows, int64_t inter, float *out) {
    swiglu_job j = {fused, inter, out};
    /* ~20 flops an element, most of them in exp */
    qtts_parallel_for_work(pool, rows, 1, 20.0 * (double)rows * (double)inter, swiglu_rows, &j);
}
