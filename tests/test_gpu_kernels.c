/* Every Vulkan kernel against its scalar CPU twin on odd shapes: sizes that
 * are not multiples of the workgroup, weights split across several buffers,
 * Q8_0 rows that start off a 4-byte boundary, offsets and strides, and
 * sequences submitted again after the device-side position changed.
 * Runs on any Vulkan device (CI: Mesa's lavapipe, with QTTS_VULKAN_VALIDATE=1).
 * Without a device it is skipped (exit 77) unless QTTS_REQUIRE_VULKAN=1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "gpu/gpu_ops.h"
#include "support/gpu_device.h"
#include "harness.h"
#include "model/sampler.h"
#include "tensor/attention.h"
#include "tensor/linear.h"
#include "tensor/ops.h"
#include "tensor/interleave.h"
#include "tensor/quant.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng >> 40) & 0xffffff) / 16777216.0f * 2.0f - 1.0f;
}

static int run(qtts_gpu_seq *s) {
    qtts_err err = {0};
    int rc = qtts_gpu_seq_run(s, &err);
    TEST_CHECK(rc == 0, "submission: %s", err.msg);
    return rc;
}

/* Tolerance of a dot product of n terms: float rounding in another order. */
static double dot_tol(const float *ref, int64_t n, int64_t terms) {
    double mx = 0;
    for (int64_t i = 0; i < n; i++) mx = fmax(mx, fabs(ref[i]));
    return (mx + 1.0) * 4e-7 * sqrt((double)terms);
}

/* x16: the matrix is uploaded in the layout the loader makes for the x86 CPU
 * kernels (tensor/interleave.h), which the upload puts back into GGML rows. */
static void test_gemv(qtts_gpu *g, qtts_dtype type, int64_t rows, int64_t cols, size_t limit, int x16) {
    qtts_err err = {0};
    const int64_t n = 3, x_stride = cols + 5, x_off = 2, y_stride = rows + 3, y_off = 1;
    size_t row_bytes = qtts_dtype_row_bytes(type, cols);
    float *wf = malloc((size_t)(rows * cols) * 4), *x = calloc((size_t)(n * x_stride + x_off), 4);
    unsigned char *wq = malloc((size_t)rows * row_bytes);
    float *xp = malloc((size_t)(n * cols) * 4), *ref = malloc((size_t)(n * rows) * 4);
    for (int64_t i = 0; i < rows * cols; i++) wf[i] = frand();
    for (int64_t r = 0; r < rows; r++) {
        if (type == QTTS_BF16)
            for (int64_t c = 0; c < cols; c++)
                ((uint16_t *)(wq + r * row_bytes))[c] = qtts_f32_to_bf16(wf[r * cols + c]);
        else if (type == QTTS_F32) memcpy(wq + r * row_bytes, wf + r * cols, (size_t)cols * 4);
        else qtts_quantize_row(type, wf + r * cols, wq + r * row_bytes, cols);
    }
    for (int64_t t = 0; t < n; t++)
        for (int64_t c = 0; c < cols; c++) x[x_off + t * x_stride + c] = xp[t * cols + c] = frand();
    qtts_mat m = {.type = type, .rows = rows, .cols = cols, .row_bytes = row_bytes, .data = wq};
    TEST_CHECK(qtts_linear_ref(&m, NULL, xp, n, ref) == 0, "reference");

    qtts_mat up = m;
    if (x16) {
        up.owned = malloc((size_t)rows * row_bytes);
        TEST_CHECK(up.owned != NULL, "out of memory");
        if (!up.owned) goto done;
        memcpy(up.owned, wq, (size_t)rows * row_bytes);
        up.data = up.owned;
        TEST_CHECK(qtts_mat_interleave_force(&up, &err) == 0 && up.interleave, "interleave: %s", err.msg);
    }
    qtts_gpu_set_buffer_limit(g, limit);
    qtts_gpu_mat *gm = qtts_gpu_mat_upload(g, &up, &err);
    qtts_gpu_set_buffer_limit(g, 0);
    qtts_mat_free(&up);
    TEST_CHECK(gm != NULL, "upload: %s", err.msg);
    if (!gm) goto done;
    if (limit)
        TEST_CHECK(qtts_gpu_mat_chunks(gm) > 1, "%s: a %zu-byte limit splits the matrix", qtts_dtype_name(type), limit);
    qtts_gpu_buf *bx = test_gpu_upload(g, x, n * x_stride + x_off), *by = test_gpu_upload(g, NULL, n * y_stride + y_off);
    qtts_gpu_seq *s = qtts_gpu_seq_new(g, &err);
    TEST_CHECK(s && qtts_gpu_gemv(s, gm, bx, x_off, x_stride, by, y_off, y_stride, n, &err) == 0, "gemv: %s", err.msg);
    if (s && run(s) == 0) {
        const float *y = qtts_gpu_buf_data(by);
        char what[96];
        for (int64_t t = 0; t < n; t++) {
            snprintf(what, sizeof what, "gemv %s%s %lldx%lld (%d chunks) token %lld", qtts_dtype_name(type),
                     x16 ? " interleaved" : "", (long long)rows, (long long)cols, qtts_gpu_mat_chunks(gm),
                     (long long)t);
            TEST_NEAR(y + y_off + t * y_stride, ref + t * rows, (size_t)rows, dot_tol(ref, n * rows, cols), what);
        }
    }
    qtts_gpu_seq_free(s);
    qtts_gpu_buf_free(g, bx);
    qtts_gpu_buf_free(g, by);
    qtts_gpu_mat_free(g, gm);
done:
    free(wf), free(x), free(wq), free(xp), free(ref);
}

static void test_gemv_refusals(qtts_gpu *g) {
    qtts_err err = {0};
    float w[64 * 2] = {0};
    qtts_mat m = {.type = QTTS_Q5_K, .rows = 2, .cols = 64, .row_bytes = 64 * 4, .data = w};
    TEST_CHECK(!qtts_gpu_mat_upload(g, &m, &err) && strstr(err.msg, "no GPU kernel"), "Q5_K refused: %s", err.msg);
    m = (qtts_mat){.type = QTTS_F32, .rows = 2, .cols = 64, .row_bytes = 64 * 4, .data = w};
    qtts_gpu_mat *gm = qtts_gpu_mat_upload(g, &m, &err);
    qtts_gpu_buf *x = test_gpu_upload(g, NULL, 10), *y = test_gpu_upload(g, NULL, 2);
    qtts_gpu_seq *s = qtts_gpu_seq_new(g, &err);
    TEST_CHECK(gm && s && qtts_gpu_gemv(s, gm, x, 0, 64, y, 0, 2, 1, &err) == -1 && strstr(err.msg, "outside"),
               "an x shorter than a row is refused: %s", err.msg);
    qtts_gpu_seq_free(s);
    qtts_gpu_buf_free(g, x);
    qtts_gpu_buf_free(g, y);
    qtts_gpu_mat_free(g, gm);
    qtts_gpu_set_buffer_limit(g, 1000);
    TEST_CHECK(!qtts_gpu_buf_new(g, 4000, &err) && strstr(err.msg, "storage-buffer range"), "too large: %s", err.msg);
    qtts_gpu_set_buffer_limit(g, 0);
}

static void test_rmsnorm(qtts_gpu *g) {
    qtts_err err = {0};
    enum { ROWS = 3, DIM = 150, OFF = 7 };
    float x[OFF + ROWS * DIM], w[DIM], ref[ROWS * DIM], ref_w[ROWS * DIM];
    for (int i = 0; i < OFF + ROWS * DIM; i++) x[i] = frand() * 3;
    for (int i = 0; i < DIM; i++) w[i] = frand();
    qtts_rmsnorm(NULL, x + OFF, NULL, ROWS, DIM, 1e-6f, ref);
    qtts_rmsnorm(NULL, x + OFF, w, ROWS, DIM, 1e-6f, ref_w);
    qtts_gpu_buf *bx = test_gpu_upload(g, x, OFF + ROWS * DIM), *bw = test_gpu_upload(g, w, DIM);
    qtts_gpu_buf *by = test_gpu_upload(g, NULL, ROWS * DIM), *byw = test_gpu_upload(g, NULL, 1 + ROWS * DIM);
    qtts_gpu_seq *s = qtts_gpu_seq_new(g, &err);
    TEST_CHECK(qtts_gpu_rmsnorm(s, bx, OFF, NULL, by, 0, ROWS, DIM, 1e-6f, &err) == 0 &&
                   qtts_gpu_rmsnorm(s, bx, OFF, bw, byw, 1, ROWS, DIM, 1e-6f, &err) == 0,
               "rmsnorm: %s", err.msg);
    if (run(s) == 0) {
        TEST_NEAR(qtts_gpu_buf_data(by), ref, ROWS * DIM, 2e-6, "rmsnorm without weight");
        TEST_NEAR((float *)qtts_gpu_buf_data(byw) + 1, ref_w, ROWS * DIM, 2e-6, "rmsnorm with weight");
    }
    qtts_gpu_seq_free(s);
    qtts_gpu_buf_free(g, bx), qtts_gpu_buf_free(g, bw), qtts_gpu_buf_free(g, by), qtts_gpu_buf_free(g, byw);
}

/* The angle table the backend's users upload: qtts_rope_angles per position. */
static qtts_gpu_buf *rope_table(qtts_gpu *g, int64_t head_dim, int64_t positions, double theta) {
    float *t = malloc((size_t)(head_dim * positions) * 4);
    for (int64_t p = 0; p < positions; p++)
        qtts_rope_angles(t + p * head_dim, t + p * head_dim + head_dim / 2, head_dim, p, theta);
    qtts_gpu_buf *b = test_gpu_upload(g, t, head_dim * positions);
    free(t);
    return b;
}

static void test_rope(qtts_gpu *g) {
    qtts_err err = {0};
    enum { T = 3, H = 5, HD = 66, STRIDE = H * HD + 4, OFF = 3, N = OFF + T * STRIDE };
    float x[N], ref[N];
    for (int i = 0; i < N; i++) x[i] = frand();
    qtts_gpu_buf *bx = test_gpu_upload(g, x, N), *table = rope_table(g, HD, 2000, 1e6);
    int32_t pos0 = 7;
    qtts_gpu_buf *pos = test_gpu_upload(g, NULL, 4);
    ((int32_t *)qtts_gpu_buf_data(pos))[2] = pos0;
    qtts_gpu_seq *s = qtts_gpu_seq_new(g, &err);
    TEST_CHECK(qtts_gpu_rope(s, bx, OFF, STRIDE, T, H, HD, table, pos, 2, &err) == 0, "rope: %s", err.msg);
    for (int round = 0; round < 2; round++) {
        /* the same recorded sequence at another position, and on other data */
        if (round == 1) {
            pos0 = 1500;
            ((int32_t *)qtts_gpu_buf_data(pos))[2] = pos0;
            memcpy(qtts_gpu_buf_data(bx), x, sizeof x);
        }
        memcpy(ref, x, sizeof x);
        qtts_rope_neox(ref + OFF, T, STRIDE, H, HD, pos0, 1e6);
        if (run(s)) break;
        TEST_NEAR(qtts_gpu_buf_data(bx), ref, N, 2e-6,
                  round ? "rope resubmitted at position 1500" : "rope at position 7");
    }
    qtts_gpu_seq_free(s);
    qtts_gpu_buf_free(g, bx), qtts_gpu_buf_free(g, table), qtts_gpu_buf_free(g, pos);
}

/* Keys and values stored through kv_store, then attention over them, at two
 * positions with one recorded sequence; with and without a window. */
static void test_attention(qtts_gpu *g, int64_t window) {
    qtts_err err = {0};
    enum { NQ = 3, H = 6, KVH = 2, HD = 72, KVW = KVH * HD, CAP = 200, QS = H * HD + 3 };
    const int64_t firsts[2] = {127, 60};
    float *k = malloc(CAP * KVW * 4), *v = malloc(CAP * KVW * 4), q[NQ * QS], ref[NQ * H * HD];
    for (int i = 0; i < CAP * KVW; i++) k[i] = frand(), v[i] = frand();
    for (int i = 0; i < NQ * QS; i++) q[i] = frand();
    /* the rows a step writes, laid out as a projection would leave them */
    qtts_gpu_buf *bk = test_gpu_upload(g, NULL, CAP * KVW), *bv = test_gpu_upload(g, NULL, CAP * KVW);
    qtts_gpu_buf *newk = test_gpu_upload(g, NULL, NQ * (KVW + 1)), *newv = test_gpu_upload(g, NULL, NQ * (KVW + 1));
    qtts_gpu_buf *bq = test_gpu_upload(g, q, NQ * QS), *out = test_gpu_upload(g, NULL, NQ * H * HD + 5), *pos = test_gpu_upload(g, NULL, 1);
    qtts_gpu_seq *s = qtts_gpu_seq_new(g, &err);
    qtts_gpu_attn_args a = {bq, bk, bv, out, pos, 0, QS, KVW, 5, H * HD, NQ, H, KVH, HD, window, 0, 1.0f / sqrtf(HD), 0};
    TEST_CHECK(qtts_gpu_kv_store(s, newk, 0, KVW + 1, NQ, KVW, bk, KVW, pos, 0, &err) == 0 &&
                   qtts_gpu_kv_store(s, newv, 0, KVW + 1, NQ, KVW, bv, KVW, pos, 0, &err) == 0 &&
                   qtts_gpu_attention(s, &a, &err) == 0,
               "attention: %s", err.msg);
    for (int round = 0; round < 2; round++) {
        const int64_t first = firsts[round];
        /* the cache holds keys before `first`; the step stores its own */
        memcpy(qtts_gpu_buf_data(bk), k, (size_t)first * KVW * 4);
        memcpy(qtts_gpu_buf_data(bv), v, (size_t)first * KVW * 4);
        for (int t = 0; t < NQ; t++) {
            memcpy((float *)qtts_gpu_buf_data(newk) + t * (KVW + 1), k + (first + t) * KVW, KVW * 4);
            memcpy((float *)qtts_gpu_buf_data(newv) + t * (KVW + 1), v + (first + t) * KVW, KVW * 4);
        }
        *(int32_t *)qtts_gpu_buf_data(pos) = (int32_t)first;
        qtts_attn_args ra = {.q = q,
                             .q_stride = QS,
                             .k = k,
                             .v = v,
                             .kv_stride = KVW,
                             .out = ref,
                             .out_stride = H * HD,
                             .n_q = NQ,
                             .q_first = first,
                             .n_heads = H,
                             .n_kv_heads = KVH,
                             .head_dim = HD,
                             .window = window,
                             .scale = 1.0f / sqrtf(HD)};
        qtts_attention_isa(NULL, &ra, QTTS_ISA_SCALAR);
        if (run(s)) break;
        char what[80];
        snprintf(what, sizeof what, "attention at key %lld, window %lld", (long long)first, (long long)window);
        TEST_NEAR((float *)qtts_gpu_buf_data(out) + 5, ref, NQ * H * HD, 2e-6, what);
        TEST_NEAR((float *)qtts_gpu_buf_data(bk) + first * KVW, k + first * KVW, NQ * KVW, 0, "kv_store keys");
    }
    qtts_gpu_seq_free(s);
    free(k), free(v);
    qtts_gpu_buf_free(g, bk), qtts_gpu_buf_free(g, bv), qtts_gpu_buf_free(g, newk), qtts_gpu_buf_free(g, newv);
    qtts_gpu_buf_free(g, bq), qtts_gpu_buf_free(g, out), qtts_gpu_buf_free(g, pos);
}

/* The f16 KV cache (the CPU's with quantized weights): kv_store rounds as the
 * CPU's scalar twin does, bit for bit (ties to even, subnormals, saturation
 * at 65504, infinities), and attention over f16 caches is the CPU's attention
 * over the same f16 values. */
static void test_attention_f16(qtts_gpu *g) {
    qtts_err err = {0};
    enum { NQ = 3, H = 4, KVH = 2, HD = 66, KVW = KVH * HD, CAP = 150, QS = H * HD + 1 };
    /* rounding: a row of specials */
    const float specials[] = {1.0f,  -0.0f, 1e5f,     -7e4f,      65519.0f, 65520.0f,  3e-6f, -2.9802322e-8f,
                              6.1e-5f, 1.00048828125f, 1.00146484375f, 1.0f / 0.0f, -1.0f / 0.0f, 0.33333334f,
                              5.96e-8f, 2048.5f};
    enum { NS = sizeof specials / sizeof *specials };
    qtts_gpu_buf *src = test_gpu_upload(g, specials, NS), *cache = test_gpu_upload(g, NULL, 3 * NS / 2);
    qtts_gpu_buf *pos = test_gpu_upload(g, NULL, 1);
    *(int32_t *)qtts_gpu_buf_data(pos) = 2;
    qtts_gpu_seq *s = qtts_gpu_seq_new(g, &err);
    TEST_CHECK(s && qtts_gpu_kv_store_as(s, src, 0, NS, 1, NS - 1, cache, NS, pos, 0, 1, &err) == -1,
               "an f16 cache row of an odd number of values is refused");
    TEST_CHECK(s && qtts_gpu_kv_store_as(s, src, 0, NS, 1, NS, cache, NS, pos, 0, 1, &err) == 0, "kv_store f16: %s",
               err.msg);
    if (s && run(s) == 0) {
        uint16_t want[NS];
        qtts_f32_to_f16_row_isa(specials, want, NS, QTTS_ISA_SCALAR);
        const uint16_t *got = (const uint16_t *)qtts_gpu_buf_data(cache) + 2 * NS;
        int same = 1;
        for (int i = 0; i < NS; i++) {
            TEST_CHECK(got[i] == want[i], "f16 of %g: 0x%04x, the CPU's 0x%04x", (double)specials[i], got[i], want[i]);
            same &= got[i] == want[i];
        }
        if (same) printf("  ok   kv_store f16: %d specials rounded as the CPU rounds them\n", NS);
    }
    qtts_gpu_seq_free(s);
    qtts_gpu_buf_free(g, src), qtts_gpu_buf_free(g, cache);
    /* attention over f16 caches at two positions, one recorded sequence */
    float *k = malloc(CAP * KVW * 4), *v = malloc(CAP * KVW * 4), q[NQ * QS], ref[NQ * H * HD];
    uint16_t *k16 = malloc(CAP * KVW * 2), *v16 = malloc(CAP * KVW * 2);
    for (int i = 0; i < CAP * KVW; i++) k[i] = frand() * 3, v[i] = frand() * 3;
    for (int i = 0; i < NQ * QS; i++) q[i] = frand();
    qtts_f32_to_f16_row_isa(k, k16, CAP * KVW, QTTS_ISA_SCALAR);
    qtts_f32_to_f16_row_isa(v, v16, CAP * KVW, QTTS_ISA_SCALAR);
    float *kr = malloc(CAP * KVW * 4), *vr = malloc(CAP * KVW * 4); /* what the CPU's f16 cache holds */
    qtts_f16_to_f32_row_isa(k16, kr, CAP * KVW, QTTS_ISA_SCALAR);
    qtts_f16_to_f32_row_isa(v16, vr, CAP * KVW, QTTS_ISA_SCALAR);
    qtts_gpu_buf *bk = test_gpu_upload(g, NULL, CAP * KVW / 2), *bv = test_gpu_upload(g, NULL, CAP * KVW / 2);
    qtts_gpu_buf *newk = test_gpu_upload(g, NULL, NQ * (KVW + 1)), *newv = test_gpu_upload(g, NULL, NQ * (KVW + 1));
    qtts_gpu_buf *bq = test_gpu_upload(g, q, NQ * QS), *out = test_gpu_upload(g, NULL, NQ * H * HD);
    s = qtts_gpu_seq_new(g, &err);
    qtts_gpu_attn_args a = {.q = bq, .k = bk, .v = bv, .out = out, .pos = pos, .q_stride = QS, .kv_stride = KVW,
                            .out_stride = H * HD, .n_q = NQ, .n_heads = H, .n_kv_heads = KVH, .head_dim = HD,
                            .scale = 1.0f / sqrtf(HD), .kv_f16 = 1};
    TEST_CHECK(s && qtts_gpu_kv_store_as(s, newk, 0, KVW + 1, NQ, KVW, bk, KVW, pos, 0, 1, &err) == 0 &&
                   qtts_gpu_kv_store_as(s, newv, 0, KVW + 1, NQ, KVW, bv, KVW, pos, 0, 1, &err) == 0 &&
                   qtts_gpu_attention(s, &a, &err) == 0,
               "attention f16: %s", err.msg);
    const int64_t firsts[2] = {97, 31};
    for (int round = 0; s && round < 2; round++) {
        const int64_t first = firsts[round];
        memcpy(qtts_gpu_buf_data(bk), k16, (size_t)first * KVW * 2);
        memcpy(qtts_gpu_buf_data(bv), v16, (size_t)first * KVW * 2);
        for (int t = 0; t < NQ; t++) {
            memcpy((float *)qtts_gpu_buf_data(newk) + t * (KVW + 1), k + (first + t) * KVW, KVW * 4);
            memcpy((float *)qtts_gpu_buf_data(newv) + t * (KVW + 1), v + (first + t) * KVW, KVW * 4);
        }
        *(int32_t *)qtts_gpu_buf_data(pos) = (int32_t)first;
        qtts_attn_args ra = {.q = q, .q_stride = QS, .k = kr, .v = vr, .kv_stride = KVW, .out = ref,
                             .out_stride = H * HD, .n_q = NQ, .q_first = first, .n_heads = H, .n_kv_heads = KVH,
                             .head_dim = HD, .scale = 1.0f / sqrtf(HD)};
        qtts_attention_isa(NULL, &ra, QTTS_ISA_SCALAR);
        if (run(s)) break;
        char what[80];
        snprintf(what, sizeof what, "attention over f16 caches at key %lld", (long long)first);
        TEST_NEAR((float *)qtts_gpu_buf_data(out), ref, NQ * H * HD, 2e-6, what);
        TEST_CHECK(!memcmp((uint16_t *)qtts_gpu_buf_data(bk) + first * KVW, k16 + first * KVW, NQ * KVW * 2),
                   "kv_store f16 keys at %lld: not the CPU's f16 values", (long long)first);
    }
    qtts_gpu_seq_free(s);
    free(k), free(v), free(k16), free(v16), free(kr), free(vr);
    qtts_gpu_buf_free(g, bk), qtts_gpu_buf_free(g, bv), qtts_gpu_buf_free(g, newk), qtts_gpu_buf_free(g, newv);
    qtts_gpu_buf_free(g, bq), qtts_gpu_buf_free(g, out), qtts_gpu_buf_free(g, pos);
}

static void test_silu_mul(qtts_gpu *g) {
    qtts_err err = {0};
    enum { ROWS = 2, N = 131, IN = 2 * N + 1 };
    float f[ROWS * IN], ref[ROWS * N];
    for (int i = 0; i < ROWS * IN; i++) f[i] = frand() * 6;
    for (int r = 0; r < ROWS; r++) {
        memcpy(ref + r * N, f + r * IN, N * 4);
        qtts_swiglu_isa(ref + r * N, f + r * IN + N, N, QTTS_ISA_SCALAR);
    }
    qtts_gpu_buf *bf = test_gpu_upload(g, f, ROWS * IN), *out = test_gpu_upload(g, NULL, ROWS * N);
    qtts_gpu_seq *s = qtts_gpu_seq_new(g, &err);
    TEST_CHECK(qtts_gpu_silu_mul(s, bf, 0, N, IN, out, 0, N, N, ROWS, &err) == 0, "silu_mul: %s", err.msg);
    if (run(s) == 0) TEST_NEAR(qtts_gpu_buf_data(out), ref, ROWS * N, 1e-5, "silu_mul");
    qtts_gpu_seq_free(s);
    qtts_gpu_buf_free(g, bf), qtts_gpu_buf_free(g, out);
}

static void test_embed_add(qtts_gpu *g) {
    qtts_err err = {0};
    enum { DIM = 70, ROWS = 9, TABLES = 3 };
    float t[TABLES * ROWS * DIM], ref[DIM + 2] = {0};
    for (int i = 0; i < TABLES * ROWS * DIM; i++) t[i] = frand();
    const int32_t ids[TABLES + 1] = {4, 8, 0, 9}; /* the last is out of range: adds nothing */
    for (int k = 0; k < TABLES; k++)
        for (int d = 0; d < DIM; d++) ref[2 + d] += t[(k * ROWS + ids[k]) * DIM + d];
    qtts_gpu_buf *bt = test_gpu_upload(g, t, TABLES * ROWS * DIM), *bi = test_gpu_upload(g, NULL, TABLES + 1),
                 *out = test_gpu_upload(g, NULL, DIM + 2);
    memcpy(qtts_gpu_buf_data(bi), ids, sizeof ids);
    for (int d = 0; d < DIM + 2; d++) ((float *)qtts_gpu_buf_data(out))[d] = 5.0f; /* overwritten by the first */
    ((float *)qtts_gpu_buf_data(out))[0] = ((float *)qtts_gpu_buf_data(out))[1] = 0;
    qtts_gpu_seq *s = qtts_gpu_seq_new(g, &err);
    int rc = 0;
    for (int k = 0; k <= TABLES && !rc; k++)
        rc = qtts_gpu_embed_add(s, bt, (k % TABLES) * ROWS, ROWS, DIM, bi, k, out, 2, k > 0, &err);
    TEST_CHECK(rc == 0, "embed_add: %s", err.msg);
    /* float sums in the same order as the reference: exact */
    if (run(s) == 0) TEST_NEAR(qtts_gpu_buf_data(out), ref, DIM + 2, 0, "embed_add");
    qtts_gpu_seq_free(s);
    qtts_gpu_buf_free(g, bt), qtts_gpu_buf_free(g, bi), qtts_gpu_buf_free(g, out);
}

static void test_argmax(qtts_gpu *g) {
    qtts_err err = {0};
    enum { N = 3001, CASES = 4 };
    float z[CASES][N];
    for (int c = 0; c < CASES; c++)
        for (int i = 0; i < N; i++) z[c][i] = c == 3 ? -INFINITY : frand();
    z[1][2999] = z[1][17] = z[1][600] = 2.0f; /* ties: the first wins */
    z[2][3000] = 9.0f; /* the last element */
    for (int i = 0; i < N; i += 2) z[0][i] = -INFINITY; /* filtered logits */
    qtts_gpu_buf *bz = test_gpu_upload(g, &z[0][0], CASES * N), *ids = test_gpu_upload(g, NULL, CASES);
    qtts_gpu_seq *s = qtts_gpu_seq_new(g, &err);
    int rc = 0;
    for (int c = 0; c < CASES && !rc; c++) rc = qtts_gpu_argmax(s, bz, c * N, N, ids, c, &err);
    TEST_CHECK(rc == 0, "argmax: %s", err.msg);
    if (run(s) == 0)
        for (int c = 0; c < CASES; c++) {
            int32_t got = ((int32_t *)qtts_gpu_buf_data(ids))[c], want = qtts_argmax(z[c], N);
            TEST_CHECK(got == want, "argmax case %d: %d, want %d", c, got, want);
        }
    qtts_gpu_seq_free(s);
    qtts_gpu_buf_free(g, bz), qtts_gpu_buf_free(g, ids);
}

int main(void) {
    int skip;
    qtts_gpu *g = test_gpu_open(&skip);
    if (!g) return skip;
    /* device names that are not devices: one clear line, no device opened */
    const char *bad[] = {"vulkan:999", "vulkan:", "vulkan:-1", "vulkan:1x", "cuda", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        qtts_err e = {0};
        qtts_gpu *other = qtts_gpu_open(bad[i], &e);
        TEST_CHECK(!other && e.status == QTTS_ERR_INVALID && e.msg[0], "device '%s' refused: %s", bad[i], e.msg);
        qtts_gpu_close(other);
    }
    const qtts_dtype types[] = {QTTS_F32, QTTS_BF16, QTTS_Q8_0, QTTS_Q4_K};
    const int64_t cols[] = {77, 133, 32 * 5, 256 * 3};
    for (int i = 0; i < 4; i++) {
        test_gemv(g, types[i], 67, cols[i], 0, 0);
        /* about 9 rows a buffer: uneven chunks, Q8_0/bf16 chunks ending mid-word */
        test_gemv(g, types[i], 67, cols[i], qtts_dtype_row_bytes(types[i], cols[i]) * 9 + 2, 0);
    }
    /* Q8_0/Q4_K as the loader interleaves them for the CPU (16-row groups):
     * the same products as the GGML rows, whole and split mid-group */
    for (int i = 2; i < 4; i++) {
        test_gemv(g, types[i], 80, cols[i], 0, 1);
        test_gemv(g, types[i], 80, cols[i], qtts_dtype_row_bytes(types[i], cols[i]) * 9 + 2, 1);
    }
    test_gemv_refusals(g);
    test_rmsnorm(g);
    test_rope(g);
    test_attention(g, 0);
    test_attention(g, 50);
    test_attention_f16(g);
    test_silu_mul(g);
    test_embed_add(g);
    test_argmax(g);
    TEST_CHECK(qtts_gpu_validation_errors(g) == 0, "%d validation errors", qtts_gpu_validation_errors(g));
    qtts_gpu_close(g);
    return test_finish("test_gpu_kernels");
}
