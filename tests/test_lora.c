/* PEFT LoRA adapters merged at load (io/lora.h): an adapter written here
 * from known random matrices (adapter_config.json + adapter_model.safetensors,
 * PEFT's names for a talker-only adapter) merged into a small store gives
 * W + scale * alpha / r * B A computed here in double, within 1e-6; rsLoRA
 * uses alpha / sqrt(r); untouched tensors stay the same bytes; a Q8_0 or
 * Q4_K weight is merged into its dequantized values and requantized, to the byte; a target the
 * model lacks, a shape that does not fit and a missing lora_B each fail with
 * one line naming the tensor and leave the store as it was. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "io/lora.h"
#include "io/store.h"
#include "support/test_util.h"
#include "tensor/quant.h"

enum { OUT = 5, IN = 7, R = 3 };
static const char *const W_NAME = "talker.model.layers.0.self_attn.q_proj.weight";

static float rnd(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((double)(*s >> 11) / 9007199254740992.0 * 2 - 1);
}

/* A safetensors file of f32 tensors. */
static int write_st(const char *path, int n, const char *const *names, const int64_t (*shapes)[2],
                    const float *const *data) {
    char header[2048];
    size_t o = (size_t)snprintf(header, sizeof header, "{"), off = 0;
    for (int i = 0; i < n; i++) {
        size_t bytes = (size_t)(shapes[i][0] * shapes[i][1]) * 4;
        o += (size_t)snprintf(header + o, sizeof header - o,
                              "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[%lld,%lld],\"data_offsets\":[%zu,%zu]}",
                              i ? "," : "", names[i], (long long)shapes[i][0], (long long)shapes[i][1], off,
                              off + bytes);
        off += bytes;
    }
    o += (size_t)snprintf(header + o, sizeof header - o, "}");
    while (o % 8) header[o++] = ' ';
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    uint64_t hl = o;
    fwrite(&hl, 8, 1, f);
    fwrite(header, 1, o, f);
    for (int i = 0; i < n; i++) fwrite(data[i], 4, (size_t)(shapes[i][0] * shapes[i][1]), f);
    return fclose(f);
}

static int write_adapter(const char *dir, const char *config, const char *a_name, const char *b_name, int64_t a_rows,
                         int64_t a_cols, int64_t b_rows, const float *a, const float *b) {
    char p[700];
    snprintf(p, sizeof p, "%s/adapter_config.json", dir);
    if (write_text_file(p, config)) return -1;
    snprintf(p, sizeof p, "%s/adapter_model.safetensors", dir);
    const char *names[2] = {a_name, b_name};
    const int64_t shapes[2][2] = {{a_rows, a_cols}, {b_rows, a_rows}};
    const float *data[2] = {a, b};
    return write_st(p, b_name ? 2 : 1, names, shapes, data);
}

static qtts_store *base_store(float *w, float *other) {
    qtts_err err = {0};
    qtts_store *st = qtts_store_new(&err);
    const int64_t ws[2] = {OUT, IN}, os[1] = {4};
    if (!st || qtts_store_add(st, W_NAME, QTTS_F32, 2, ws, w, 0, &err) ||
        qtts_store_add(st, "talker.model.norm.weight", QTTS_F32, 1, os, other, 0, &err))
        return NULL;
    return st;
}

static void check_merge(const char *dir, const char *config, double factor, double user_scale, const char *what) {
    uint64_t seed = 46;
    float w[OUT * IN], a[R * IN], b[OUT * R], other[4] = {1, 2, 3, 4};
    for (int i = 0; i < OUT * IN; i++) w[i] = rnd(&seed);
    for (int i = 0; i < R * IN; i++) a[i] = rnd(&seed);
    for (int i = 0; i < OUT * R; i++) b[i] = rnd(&seed);
    TEST_CHECK(write_adapter(dir, config, "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight",
                             "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight", R, IN, OUT, a, b) == 0,
               "write adapter");
    qtts_store *st = base_store(w, other);
    qtts_err err = {0};
    int n = 0;
    TEST_CHECK(st && qtts_lora_merge(&st, dir, user_scale, 0, NULL, &n, &err) == 0 && n == 1, "%s: merge: %s", what,
               err.msg);
    const qtts_tensor *m = qtts_store_find(st, W_NAME), *o = qtts_store_find(st, "talker.model.norm.weight");
    TEST_CHECK(m && m->type == QTTS_F32 && o && o->data == (const void *)other, "%s: merged store", what);
    double worst = 0;
    for (int r = 0; m && r < OUT; r++)
        for (int c = 0; c < IN; c++) {
            double ref = w[r * IN + c];
            for (int k = 0; k < R; k++) ref += user_scale * factor * (double)b[r * R + k] * a[k * IN + c];
            double d = fabs(ref - ((const float *)m->data)[r * IN + c]);
            if (d > worst) worst = d;
        }
    TEST_CHECK(m && worst <= 1e-6, "%s: merged weight off by %g", what, worst);
    printf("  %-50s W + %.4g B A within 1e-6 (max %.2g)\n", what, user_scale * factor, worst);
    qtts_store_free(st);
}

static void check_error(const char *dir, const char *a_name, const char *b_name, int64_t a_cols, const char *needle,
                        const char *what) {
    float w[OUT * IN] = {0}, other[4] = {0}, a[R * (IN + 1)] = {0}, b[OUT * R] = {0};
    TEST_CHECK(write_adapter(dir, "{\"r\": 3, \"lora_alpha\": 6}", a_name, b_name, R, a_cols, OUT, a, b) == 0, "write");
    qtts_store *st = base_store(w, other), *before = st;
    qtts_err err = {0};
    int rc = qtts_lora_merge(&st, dir, 1.0, 0, NULL, NULL, &err);
    TEST_CHECK(rc != 0 && st == before && strstr(err.msg, needle) && !strchr(err.msg, '\n'), "%s: rc %d, '%s'", what,
               rc, err.msg);
    printf("  %-50s %s\n", what, err.msg);
    qtts_store_free(st);
}

/* A Q8_0 or Q4_K weight (as a quantized GGUF holds it) keeps its type: the
 * merge of its dequantized values, requantized, to the byte. */
static void check_quantized(const char *dir, qtts_dtype type) {
    enum { QR = 4, QC = 256 };
    const char *tn = qtts_dtype_name(type);
    const size_t row = qtts_dtype_row_bytes(type, QC);
    uint64_t seed = 7;
    float w[QR * QC], a[R * QC], b[QR * R], other[4] = {0};
    unsigned char *q = malloc(QR * row), *want = malloc(QR * row);
    if (!q || !want) return;
    for (int i = 0; i < QR * QC; i++) w[i] = rnd(&seed);
    for (int i = 0; i < R * QC; i++) a[i] = rnd(&seed);
    for (int i = 0; i < QR * R; i++) b[i] = rnd(&seed);
    for (int r = 0; r < QR; r++) {
        qtts_quantize_row(type, w + r * QC, q + r * row, QC);
        qtts_dequantize_row(type, q + r * row, w + r * QC, QC);
    }
    for (int r = 0; r < QR; r++)
        for (int c = 0; c < QC; c++) {
            double acc = 0;
            for (int k = 0; k < R; k++) acc += (double)b[r * R + k] * a[k * QC + c];
            w[r * QC + c] = (float)(w[r * QC + c] + 2.0 * acc);
        }
    for (int r = 0; r < QR; r++) qtts_quantize_row(type, w + r * QC, want + r * row, QC);
    TEST_CHECK(write_adapter(dir, "{\"r\": 3, \"lora_alpha\": 6}",
                             "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight",
                             "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight", R, QC, QR, a, b) == 0,
               "write adapter");
    qtts_err err = {0};
    qtts_store *st = qtts_store_new(&err);
    const int64_t ws[2] = {QR, QC}, os[1] = {4};
    TEST_CHECK(st && !qtts_store_add(st, W_NAME, type, 2, ws, q, 0, &err) &&
                   !qtts_store_add(st, "talker.model.norm.weight", QTTS_F32, 1, os, other, 0, &err),
               "store: %s", err.msg);
    TEST_CHECK(st && qtts_lora_merge(&st, dir, 1.0, 0, NULL, NULL, &err) == 0, "%s merge: %s", tn, err.msg);
    const qtts_tensor *m = st ? qtts_store_find(st, W_NAME) : NULL;
    TEST_CHECK(m && m->type == type && m->nbytes == QR * row && !memcmp(m->data, want, QR * row),
               "the merged %s weight is not the requantized reference", tn);
    printf("  %-50s requantized, the same bytes as the reference\n", type == QTTS_Q8_0 ? "q8_0 weight" : "q4_k weight");
    qtts_store_free(st);
    /* keep_f32 (a --quant conversion follows): the merged values themselves */
    st = qtts_store_new(&err);
    TEST_CHECK(st && !qtts_store_add(st, W_NAME, type, 2, ws, q, 0, &err) &&
                   qtts_lora_merge(&st, dir, 1.0, 1, NULL, NULL, &err) == 0,
               "%s merge kept in f32: %s", tn, err.msg);
    m = st ? qtts_store_find(st, W_NAME) : NULL;
    TEST_CHECK(m && m->type == QTTS_F32 && m->nbytes == sizeof w && !memcmp(m->data, w, sizeof w),
               "the merged %s weight kept in f32 is not dequant(W) + s B A", tn);
    printf("  %-50s kept in f32: dequant(W) + s B A exactly\n", type == QTTS_Q8_0 ? "q8_0 weight, keep_f32" : "q4_k weight, keep_f32");
    qtts_store_free(st);
    free(q), free(want);
}

int main(void) {
    char tmp[] = "/tmp/qtts_lora_XXXXXX";
    if (!mkdtemp(tmp)) return 1;
    check_merge(tmp, "{\"r\": 3, \"lora_alpha\": 6, \"target_modules\": [\"q_proj\"]}", 2.0, 1.0, "alpha 6 / r 3");
    check_merge(tmp, "{\"r\": 3, \"lora_alpha\": 6}", 2.0, 0.5, "alpha 6 / r 3, --lora scale 0.5");
    check_merge(tmp, "{\"r\": 3, \"lora_alpha\": 6, \"use_rslora\": true}", 6.0 / sqrt(3.0), 1.0, "rsLoRA alpha 6 / sqrt 3");
    check_quantized(tmp, QTTS_Q8_0);
    check_quantized(tmp, QTTS_Q4_K);
    check_error(tmp, "base_model.model.model.layers.9.self_attn.q_proj.lora_A.weight",
                "base_model.model.model.layers.9.self_attn.q_proj.lora_B.weight", IN, "which the model does not have",
                "target the model lacks");
    check_error(tmp, "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight",
                "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight", IN + 1, "does not fit",
                "lora_A with a column too many");
    check_error(tmp, "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", NULL, IN, "has no",
                "lora_B missing");
    TEST_CHECK(rm_rf(tmp) == 0, "cleanup");
    return test_finish("test_lora");
}
