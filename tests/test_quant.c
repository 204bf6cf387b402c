/* Q8_0 / Q4_K: GGML block layouts (hand-built blocks dequantize to values
 * computed independently from the format description), round-trip error on
 * Gaussian data, and edge cases (zeros, constant and one-signed blocks). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tensor/quant.h"

static uint64_t rng = 12345;
static double urand(void) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return ((double)(rng >> 11) + 0.5) / 9007199254740992.0;
}
static float gauss(void) { return (float)(sqrt(-2.0 * log(urand())) * cos(6.283185307179586 * urand())); }

static double rel_rms(const float *a, const float *b, int64_t n) {
    double e = 0, s = 0;
    for (int64_t i = 0; i < n; i++) {
        e += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        s += (double)a[i] * a[i];
    }
    return sqrt(e / (s > 0 ? s : 1));
}

static void layout_q8_0(void) {
    qtts_block_q8_0 blk[2];
    unsigned char raw[68];
    /* bytes as GGML stores them: f16 d little-endian, then 32 int8 */
    memset(raw, 0, sizeof raw);
    raw[0] = 0x00, raw[1] = 0x38; /* f16 0.5 */
    for (int i = 0; i < 32; i++) raw[2 + i] = (unsigned char)(int8_t)(i * 8 - 128);
    raw[34] = 0x00, raw[35] = 0xC0; /* f16 -2.0 */
    for (int i = 0; i < 32; i++) raw[36 + i] = (unsigned char)(int8_t)(i - 16);
    memcpy(blk, raw, sizeof raw);
    float y[64], want[64];
    for (int i = 0; i < 32; i++) want[i] = 0.5f * (float)(i * 8 - 128);
    for (int i = 0; i < 32; i++) want[32 + i] = -2.0f * (float)(i - 16);
    qtts_dequantize_row(QTTS_Q8_0, blk, y, 64);
    TEST_NEAR(y, want, 64, 0.0, "Q8_0 hand-built blocks");
}

static void layout_q4_k(void) {
    /* 6-bit scale/min codes chosen so every packing branch and high bit matters */
    const int sc[8] = {1, 63, 17, 40, 33, 62, 5, 48}, mn[8] = {0, 21, 63, 2, 47, 16, 60, 31};
    unsigned char raw[144];
    memset(raw, 0, sizeof raw);
    raw[0] = 0x00, raw[1] = 0x3C; /* d = 1.0 */
    raw[2] = 0x00, raw[3] = 0x34; /* dmin = 0.25 */
    unsigned char *s = raw + 4, *qs = raw + 16;
    /* GGML packing: j < 4: scales[j] low 6 bits = sc, scales[j+4] low 6 bits = min.
     * j >= 4: scales[j+4] = sc low nibble | min low nibble << 4; the top two bits
     * of sc go to scales[j-4] bits 6-7, of min to scales[j] bits 6-7. */
    for (int j = 0; j < 4; j++) {
        s[j] = (unsigned char)sc[j];
        s[j + 4] = (unsigned char)mn[j];
    }
    for (int j = 4; j < 8; j++) {
        s[j + 4] = (unsigned char)((sc[j] & 15) | ((mn[j] & 15) << 4));
        s[j - 4] |= (unsigned char)((sc[j] >> 4) << 6);
        s[j] |= (unsigned char)((mn[j] >> 4) << 6);
    }
    /* element e: chunk c = e / 64; byte qs[32c + e % 32]; low nibble if e % 64 < 32 */
    int q[256];
    for (int e = 0; e < 256; e++) q[e] = (e * 7 + 3) % 16;
    for (int e = 0; e < 256; e++) {
        int c = e / 64, l = e % 32, high = (e % 64) >= 32;
        qs[32 * c + l] |= (unsigned char)(q[e] << (high ? 4 : 0));
    }
    qtts_block_q4_k blk;
    memcpy(&blk, raw, sizeof raw);
    float y[256], want[256];
    for (int e = 0; e < 256; e++) want[e] = 1.0f * (float)sc[e / 32] * (float)q[e] - 0.25f * (float)mn[e / 32];
    qtts_dequantize_row(QTTS_Q4_K, &blk, y, 256);
    TEST_NEAR(y, want, 256, 0.0, "Q4_K hand-built block");
    /* and the quantizer reproduces that block's values exactly */
    qtts_block_q4_k again;
    float y2[256];
    qtts_quantize_row(QTTS_Q4_K, want, &again, 256);
    qtts_dequantize_row(QTTS_Q4_K, &again, y2, 256);
    double err = rel_rms(want, y2, 256);
    TEST_CHECK(err < 0.01, "Q4_K re-quantizing a representable block: rel rms %.4f", err);
}

static void roundtrip(qtts_dtype t, double bound, const char *what, float scale) {
    const int64_t n = 256 * 512;
    float *x = malloc((size_t)n * sizeof(float)), *y = malloc((size_t)n * sizeof(float));
    void *q = malloc(qtts_dtype_row_bytes(t, n));
    for (int64_t i = 0; i < n; i++) x[i] = gauss() * scale;
    qtts_quantize_row(t, x, q, n);
    qtts_dequantize_row(t, q, y, n);
    double e = rel_rms(x, y, n);
    TEST_CHECK(e < bound, "%s: rel rms error %.4f%% >= %.2f%%", what, 100 * e, 100 * bound);
    printf("  ok   %-48s rel rms %.3f%% (bound %.2f%%)\n", what, 100 * e, 100 * bound);
    if (t == QTTS_Q8_0) { /* per element: at most half a step of its block */
        int bad = 0;
        for (int64_t b = 0; b < n / 32; b++) {
            float amax = 0;
            for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[32 * b + i]));
            for (int i = 0; i < 32; i++)
                if (fabsf(x[32 * b + i] - y[32 * b + i]) > amax / 127.0f * 0.502f + 1e-12f) bad++;
        }
        TEST_CHECK(bad == 0, "%s: %d elements off by more than half a step", what, bad);
    }
    free(x);
    free(y);
    free(q);
}

static void edge_cases(qtts_dtype t) {
    const int64_t n = 256;
    float x[256], y[256];
    unsigned char q[512];
    const char *name = qtts_dtype_name(t);
    char what[96];
    memset(x, 0, sizeof x);
    qtts_quantize_row(t, x, q, n);
    qtts_dequantize_row(t, q, y, n);
    snprintf(what, sizeof what, "%s all-zero block", name);
    TEST_NEAR(y, x, (size_t)n, 0.0, what);
    for (int i = 0; i < n; i++) x[i] = 0.75f;
    qtts_quantize_row(t, x, q, n);
    qtts_dequantize_row(t, q, y, n);
    snprintf(what, sizeof what, "%s constant block", name);
    TEST_NEAR(y, x, (size_t)n, 0.75 * 0.01, what);
    for (int i = 0; i < n; i++) x[i] = 2.0f + fabsf(gauss()); /* all positive, far from 0 */
    qtts_quantize_row(t, x, q, n);
    qtts_dequantize_row(t, q, y, n);
    snprintf(what, sizeof what, "%s positive block rel rms < 6%%", name);
    TEST_CHECK(rel_rms(x, y, n) < 0.06, "%s: %.4f", what, rel_rms(x, y, n));
    for (int i = 0; i < n; i++) x[i] = -1.0f - fabsf(gauss()); /* all negative */
    qtts_quantize_row(t, x, q, n);
    qtts_dequantize_row(t, q, y, n);
    snprintf(what, sizeof what, "%s negative block rel rms < 6%%", name);
    TEST_CHECK(rel_rms(x, y, n) < 0.06, "%s: %.4f", what, rel_rms(x, y, n));
}

/* The quantizer's SIMD fit gives the scalar twin's bytes exactly: Gaussian
 * and uniform rows at several scales, constant and one-sided blocks and
 * sub-blocks (also mixed in one block), zeros of both signs, subnormals and
 * huge values. */
static void twin(void) {
    enum { N = 256 * 4096 };
    float *x = malloc(sizeof(float) * N);
    unsigned char *a = malloc((size_t)N), *b = malloc((size_t)N);
    if (!x || !a || !b) {
        TEST_CHECK(0, "out of memory");
        free(x), free(a), free(b);
        return;
    }
    const float scales[] = {1.0f, 0.02f, 1e-30f, 3e30f, 0.1f}; /* the last: uniform in [-0.05, 0.05) */
    int same = 1;
    for (int k = 0; k < 5; k++) {
        for (int i = 0; i < N; i++) x[i] = k < 4 ? scales[k] * gauss() : scales[k] * ((float)urand() - 0.5f);
        for (int i = 0; i < 256; i++) x[i] = 0.0f;                     /* a zero block */
        for (int i = 256; i < 512; i++) x[i] = 0.5f;                   /* constant */
        for (int i = 512; i < 768; i++) x[i] = fabsf(x[i]) + 0.1f;     /* positive only */
        for (int i = 768; i < 1024; i++) x[i] = -fabsf(x[i]) - 1e-3f;  /* negative only */
        /* one super-block of every kind of 32-value sub-block (the AVX2 quantizer fits 8 in its lanes at once):
           zeros of both signs, constant, one-sided, a single outlier, Gaussian with zeros in it */
        for (int j = 0; j < 8; j++)
            for (int i = 0; i < 32; i++) {
                float *v = &x[1024 + 32 * j + i];
                switch (j) {
                case 0: *v = i % 2 ? -0.0f : 0.0f; break;
                case 1: *v = -0.25f; break;
                case 2: *v = fabsf(*v) + 1.0f; break;
                case 3: *v = i == 7 ? 5.0f * scales[k] : 0.0f; break;
                case 4: *v = i % 3 ? *v : 0.0f; break;
                case 5: *v = -fabsf(*v); break;
                default: break;
                }
            }
        qtts_quantize_row(QTTS_Q4_K, x, a, N);
        qtts_quantize_row_ref(QTTS_Q4_K, x, b, N);
        same &= !memcmp(a, b, (size_t)(N / 256) * 144);
    }
    TEST_CHECK(same, "Q4_K: the SIMD fit gives the scalar twin's bytes");
    free(x);
    free(a);
    free(b);
}

int main(void) {
    twin();
    layout_q8_0();
    layout_q4_k();
    /* Gaussian data: Q8_0 ~0.53% (theory for amax/127 steps: ~0.5%), Q4_K ~7.0% */
    roundtrip(QTTS_Q8_0, 0.006, "Q8_0 round trip, N(0,1)", 1.0f);
    roundtrip(QTTS_Q8_0, 0.006, "Q8_0 round trip, N(0,0.02^2)", 0.02f);
    roundtrip(QTTS_Q4_K, 0.075, "Q4_K round trip, N(0,1)", 1.0f);
    roundtrip(QTTS_Q4_K, 0.075, "Q4_K round trip, N(0,0.02^2)", 0.02f);
    edge_cases(QTTS_Q8_0);
    edge_cases(QTTS_Q4_K);
    return test_finish("test_quant");
}
