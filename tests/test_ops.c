/* Reference checks of the shared ops against direct double-precision formulas. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tensor/attention.h"
#include "tensor/ops.h"
#include "tensor/tensor.h"

static float frand(unsigned *s) {
    *s = *s * 1664525u + 1013904223u;
    return ((*s >> 8) / 16777216.0f) * 2.0f - 1.0f;
}

/* Naive attention in double with an explicit mask, keys and values f32 (k, v). */
static void attention_naive(const qtts_attn_args *a, const float *k, const float *v, float *out) {
    int64_t hd = a->head_dim, group = a->n_heads / a->n_kv_heads;
    for (int64_t t = 0; t < a->n_q; t++)
        for (int64_t h = 0; h < a->n_heads; h++) {
            int64_t qi = a->q_first + t;
            double *w = calloc((size_t)qi + 1, sizeof *w), mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j <= qi; j++) {
                if (a->window > 0 && qi - j >= a->window) { w[j] = -INFINITY; continue; }
                double d = 0;
                for (int64_t e = 0; e < hd; e++)
                    d += (double)a->q[t * a->q_stride + h * hd + e] * k[j * a->kv_stride + (h / group) * hd + e];
                w[j] = d * a->scale;
                if (w[j] > mx) mx = w[j];
            }
            for (int64_t j = 0; j <= qi; j++) { w[j] = w[j] == -INFINITY ? 0 : exp(w[j] - mx); sum += w[j]; }
            for (int64_t e = 0; e < hd; e++) {
                double acc = 0;
                for (int64_t j = 0; j <= qi; j++) acc += w[j] * v[j * a->kv_stride + (h / group) * hd + e];
                out[t * a->out_stride + h * hd + e] = (float)(acc / sum);
            }
            free(w);
        }
}

int main(void) {
    unsigned seed = 7;
    qtts_err err = {0};
    qtts_pool *pool = qtts_pool_create(2, &err);
    TEST_CHECK(pool != NULL, "pool: %s", err.msg);

    /* attention, every kernel family this CPU runs: GQA (groups of 1 to 12, over the
     * 8-head item limit), windows, offset queries, contexts across 64-key blocks and
     * with 1..7 keys left over, head dims the vectors do and do not divide */
    int64_t cases[][6] = {/* n_q, q_first, heads, kv_heads, hd, window */
                          {5, 0, 4, 2, 16, 0},    {1, 300, 4, 1, 8, 0},    {7, 80, 2, 2, 16, 72},
                          {20, 0, 4, 4, 16, 3},   {1, 999, 16, 8, 128, 0}, {3, 130, 12, 1, 64, 0},
                          {9, 60, 16, 16, 64, 72}, {2, 70, 4, 2, 20, 0},   {1, 64, 2, 1, 128, 0}};
    const qtts_isa isas[] = {QTTS_ISA_SCALAR, QTTS_ISA_AVX2, QTTS_ISA_AVX512, QTTS_ISA_NEON};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        qtts_attn_args a = {0};
        a.n_q = cases[c][0]; a.q_first = cases[c][1]; a.n_heads = cases[c][2]; a.n_kv_heads = cases[c][3];
        a.head_dim = cases[c][4]; a.window = cases[c][5];
        int64_t nk = a.q_first + a.n_q;
        a.q_stride = a.n_heads * a.head_dim + 3; a.kv_stride = a.n_kv_heads * a.head_dim; a.out_stride = a.n_heads * a.head_dim;
        const size_t no = (size_t)(a.n_q * a.out_stride);
        float *q = malloc(sizeof(float) * a.n_q * a.q_stride), *k = malloc(sizeof(float) * nk * a.kv_stride);
        float *v = malloc(sizeof(float) * nk * a.kv_stride), *want = malloc(sizeof(float) * no);
        float *o = malloc(sizeof(float) * no), *o_scalar = malloc(sizeof(float) * no), *o1 = malloc(sizeof(float) * no);
        for (int64_t i = 0; i < a.n_q * a.q_stride; i++) q[i] = frand(&seed) * 2;
        for (int64_t i = 0; i < nk * a.kv_stride; i++) { k[i] = frand(&seed) * 2; v[i] = frand(&seed); }
        a.q = q; a.scale = 1.0f / sqrtf((float)a.head_dim);
        /* the same keys and values as an f16 KV cache holds them, and as f32 again */
        const size_t nkv = (size_t)(nk * a.kv_stride);
        uint16_t *k16 = malloc(sizeof(uint16_t) * nkv), *v16 = malloc(sizeof(uint16_t) * nkv);
        float *kr = malloc(sizeof(float) * nkv), *vr = malloc(sizeof(float) * nkv), *want32 = malloc(sizeof(float) * no);
        qtts_f32_to_f16_row_isa(k, k16, (int64_t)nkv, QTTS_ISA_SCALAR);
        qtts_f32_to_f16_row_isa(v, v16, (int64_t)nkv, QTTS_ISA_SCALAR);
        for (size_t i = 0; i < nkv; i++) { kr[i] = qtts_f16_to_f32(k16[i]); vr[i] = qtts_f16_to_f32(v16[i]); }
        attention_naive(&a, k, v, want32);
        for (int f16 = 0; f16 < 2; f16++) {
        a.kv_f16 = f16;
        a.k = f16 ? (const void *)k16 : k;
        a.v = f16 ? (const void *)v16 : v;
        if (f16) {
            /* what half precision costs: keys in [-2, 2], values in [-1, 1] */
            attention_naive(&a, kr, vr, want);
            double worst = 0;
            for (size_t i = 0; i < no; i++) worst = fmax(worst, fabs((double)want[i] - want32[i]));
            TEST_CHECK(worst < 1e-3, "attention case %zu: f16 keys and values moved the output by %g", c, worst);
        } else {
            memcpy(want, want32, sizeof(float) * no);
        }
        for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
            if (!qtts_isa_supported(qtts_cpu_features_get(), isas[i])) continue;
            char what[96];
            a.out = o;
            qtts_attention_isa(pool, &a, isas[i]);
            snprintf(what, sizeof what, "attention case %zu %s%s", c, qtts_isa_name(isas[i]), f16 ? " f16 KV" : "");
            TEST_NEAR(o, want, no, 1e-5, what);
            if (isas[i] == QTTS_ISA_SCALAR) memcpy(o_scalar, o, sizeof(float) * no);
            else {
                snprintf(what, sizeof what, "attention case %zu %s%s = scalar twin", c, qtts_isa_name(isas[i]),
                         f16 ? " f16 KV" : "");
                TEST_NEAR(o, o_scalar, no, 2e-6, what);
            }
            /* inline (one item per KV group) and 2 threads (items per head where groups are
             * too few) must give the same bits */
            a.out = o1;
            qtts_attention_isa(NULL, &a, isas[i]);
            TEST_CHECK(!memcmp(o, o1, sizeof(float) * no), "attention case %zu %s%s: grouping changed the bits", c,
                       qtts_isa_name(isas[i]), f16 ? " f16 KV" : "");
        }
        }
        free(q); free(k); free(v); free(want); free(o); free(o_scalar); free(o1);
        free(k16); free(v16); free(kr); free(vr); free(want32);
    }

    /* f32 -> f16 rows, every kernel family bit for bit against the scalar twin: ties to
     * even, subnormals, the saturation at +-65504 (no infinity), lengths with tails */
    {
        enum { N = 83 };
        float x[N];
        uint16_t want[N], got[N];
        const float special[] = {1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, -(1.0f + 1.0f / 2048), 6.0e-8f, 3.0e-5f,
                                 -2.9802322e-8f, 65504.0f, 65519.0f, 65520.0f, 1e9f, -1e9f, INFINITY, -INFINITY,
                                 0.0f, -0.0f, 5.96e-8f, 1e-10f};
        const int ns = (int)(sizeof special / sizeof special[0]);
        for (int i = 0; i < N; i++) x[i] = i < ns ? special[i] : frand(&seed) * (i % 3 ? 4.0f : 3e4f);
        qtts_f32_to_f16_row_isa(x, want, N, QTTS_ISA_SCALAR);
        TEST_CHECK(want[0] == 0x3c00 && want[1] == 0x3c02 && want[2] == 0xbc00, "f16 ties to even: %04x %04x %04x",
                   want[0], want[1], want[2]);
        TEST_CHECK(want[7] == 0x7bff && want[8] == 0x7bff && want[9] == 0x7bff && want[10] == 0xfbff &&
                       want[11] == 0x7bff && want[12] == 0xfbff,
                   "f16 saturation: %04x %04x %04x %04x %04x %04x", want[7], want[8], want[9], want[10], want[11],
                   want[12]);
        TEST_CHECK(want[3] == 0x0001 && want[16] == 0x0000, "f16 subnormals: %04x %04x", want[3], want[16]);
        for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
            if (!qtts_isa_supported(qtts_cpu_features_get(), isas[i])) continue;
            for (int n = N; n >= N - 17; n -= 1) {
                memset(got, 0xee, sizeof got);
                qtts_f32_to_f16_row_isa(x, got, n, isas[i]);
                TEST_CHECK(!memcmp(got, want, sizeof(uint16_t) * (size_t)n) &&
                               (n == N || got[n] == 0xeeee),
                           "f32 -> f16 %s, %d values: not the scalar twin's bits", qtts_isa_name(isas[i]), n);
            }
        }
    }

    /* f16 -> f32 rows, every kernel family against the scalar conversion, all 65536 bit patterns
     * (NaNs: NaN), in lengths with tails */
    {
        enum { N = 65536 };
        uint16_t *h = malloc(sizeof(uint16_t) * N);
        float *want = malloc(sizeof(float) * N), *got = malloc(sizeof(float) * (N + 1));
        TEST_CHECK(h && want && got, "alloc");
        if (h && want && got) {
            for (int i = 0; i < N; i++) h[i] = (uint16_t)i;
            qtts_f16_to_f32_row_isa(h, want, N, QTTS_ISA_SCALAR);
            TEST_CHECK(want[0x3c00] == 1.0f && want[0xc000] == -2.0f && want[0x0001] == ldexpf(1.0f, -24) &&
                           want[0x7bff] == 65504.0f && isinf(want[0x7c00]) && isnan(want[0x7e00]),
                       "f16 -> f32 scalar: known values");
            for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
                if (!qtts_isa_supported(qtts_cpu_features_get(), isas[i])) continue;
                for (int n = N; n >= N - 13; n -= 13) {
                    got[n] = -7.0f;
                    qtts_f16_to_f32_row_isa(h, got, n, isas[i]);
                    int same = got[n] == -7.0f;
                    for (int k = 0; k < n && same; k++)
                        same = isnan(want[k]) ? isnan(got[k]) : !memcmp(&got[k], &want[k], sizeof(float));
                    TEST_CHECK(same, "f16 -> f32 %s, %d values: not the scalar conversion's bits", qtts_isa_name(isas[i]),
                               n);
                }
            }
        }
        free(h); free(want); free(got);
    }

    /* SwiGLU, every kernel family, against double formulas: a length with a tail, typical
     * activations and the exp clamps (|gate| up to 100) */
    {
        enum { N = 67 };
        float g0[N], up[N], g[N], want[N];
        for (int i = 0; i < N; i++) {
            g0[i] = i < 6 ? (float[]){-100.f, -90.f, -88.5f, 87.5f, 95.f, 100.f}[i] : frand(&seed) * 12;
            up[i] = frand(&seed) * 2;
            want[i] = (float)((double)g0[i] / (1.0 + exp(-(double)g0[i])) * up[i]);
        }
        for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
            if (!qtts_isa_supported(qtts_cpu_features_get(), isas[i])) continue;
            memcpy(g, g0, sizeof g);
            qtts_swiglu_isa(g, up, N, isas[i]);
            char what[64];
            snprintf(what, sizeof what, "swiglu %s", qtts_isa_name(isas[i]));
            TEST_NEAR(g, want, N, 2e-5, what);
        }
    }

    /* rmsnorm / layernorm against double formulas */
    float x[3 * 37], w[37], b[37], y[3 * 37], want[3 * 37];
    for (int i = 0; i < 3 * 37; i++) x[i] = frand(&seed) * 3;
    for (int i = 0; i < 37; i++) { w[i] = 1 + frand(&seed) * 0.1f; b[i] = frand(&seed) * 0.05f; }
    for (int r = 0; r < 3; r++) {
        double ss = 0, s = 0, vv = 0;
        for (int i = 0; i < 37; i++) { ss += x[r * 37 + i] * (double)x[r * 37 + i]; s += x[r * 37 + i]; }
        for (int i = 0; i < 37; i++) want[r * 37 + i] = (float)(w[i] * x[r * 37 + i] / sqrt(ss / 37 + 1e-6));
        double mean = s / 37;
        for (int i = 0; i < 37; i++) vv += (x[r * 37 + i] - mean) * (x[r * 37 + i] - mean);
        for (int i = 0; i < 37; i++) y[r * 37 + i] = (float)((x[r * 37 + i] - mean) / sqrt(vv / 37 + 1e-5) * w[i] + b[i]);
    }
    float got[3 * 37];
    qtts_rmsnorm(pool, x, w, 3, 37, 1e-6f, got);
    TEST_NEAR(got, want, 3 * 37, 1e-5, "rmsnorm");
    qtts_layernorm(pool, x, w, b, 3, 37, 1e-5f, got);
    TEST_NEAR(got, y, 3 * 37, 1e-5, "layernorm");

    /* rope: rotation preserves each pair's norm and matches the formula */
    float r[2 * 2 * 8], r0[2 * 2 * 8];
    for (int i = 0; i < 32; i++) r[i] = r0[i] = frand(&seed);
    qtts_rope_neox(r, 2, 16, 2, 8, 5, 10000.0);
    float rw[32];
    for (int t = 0; t < 2; t++)
        for (int h = 0; h < 2; h++)
            for (int i = 0; i < 4; i++) {
                double ang = (5 + t) * pow(10000.0, -2.0 * i / 8);
                float a = r0[t * 16 + h * 8 + i], bb = r0[t * 16 + h * 8 + i + 4];
                rw[t * 16 + h * 8 + i] = (float)(a * cos(ang) - bb * sin(ang));
                rw[t * 16 + h * 8 + i + 4] = (float)(bb * cos(ang) + a * sin(ang));
            }
    TEST_NEAR(r, rw, 32, 1e-5, "rope neox");

    qtts_pool_free(pool);
    return test_finish("test_ops");
}
