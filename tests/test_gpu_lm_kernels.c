/* The kernels the device talker adds (add_rows, logits_rules) against their
 * CPU twins on odd shapes: row adds, copies and a broadcast bias with
 * offsets and strides (exact), and the talker's logits processors against
 * qtts_talker_process_logits (repetition penalty on ids already generated,
 * EOS masked before min_new_tokens, suppressed ids; within one rounding of
 * the penalty's division, -inf positions identical). Skipped (exit 77)
 * without a Vulkan device unless QTTS_REQUIRE_VULKAN=1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu_ops.h"
#include "harness.h"
#include "model/sampler.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static float frand(void) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng >> 40) & 0xffffff) / 16777216.0f * 8.0f - 4.0f;
}

static void test_add_rows(qtts_gpu *g) {
    enum { N = 133, ROWS = 5, XS = 140, YS = 150, XO = 3, YO = 7 };
    qtts_err err = {0};
    qtts_gpu_buf *x = qtts_gpu_buf_new(g, sizeof(float) * (XO + ROWS * XS), &err);
    qtts_gpu_buf *y = qtts_gpu_buf_new(g, sizeof(float) * (YO + ROWS * YS), &err);
    TEST_CHECK(x && y, "buffers: %s", err.msg);
    if (!x || !y) return;
    float *xp = qtts_gpu_buf_data(x), *yp = qtts_gpu_buf_data(y);
    float y0[YO + ROWS * YS], want[YO + ROWS * YS];
    for (int i = 0; i < XO + ROWS * XS; i++) xp[i] = frand();
    for (int i = 0; i < YO + ROWS * YS; i++) y0[i] = frand();
    for (int mode = 0; mode < 3; mode++) { /* add, copy, broadcast add */
        memcpy(yp, y0, sizeof y0);
        memcpy(want, y0, sizeof y0);
        int64_t xs = mode == 2 ? 0 : XS;
        for (int r = 0; r < ROWS; r++)
            for (int i = 0; i < N; i++) {
                float v = xp[XO + r * xs + i];
                want[YO + r * YS + i] = mode == 1 ? v : want[YO + r * YS + i] + v;
            }
        qtts_gpu_seq *s = qtts_gpu_seq_new(g, &err);
        int rc =
            !s || qtts_gpu_add_rows(s, x, XO, xs, y, YO, YS, N, ROWS, mode != 1, &err) || qtts_gpu_seq_run(s, &err);
        TEST_CHECK(rc == 0, "add_rows: %s", err.msg);
        TEST_CHECK(!memcmp(yp, want, sizeof want), "add_rows mode %d: not the exact sums/copies", mode);
        qtts_gpu_seq_free(s);
    }
    qtts_gpu_seq *s = qtts_gpu_seq_new(g, &err);
    TEST_CHECK(s && qtts_gpu_add_rows(s, x, XO, XS, y, YO, YS, N, ROWS + 1, 1, &err) != 0,
               "add_rows past the end of y must be refused");
    qtts_gpu_seq_free(s);
    qtts_gpu_buf_free(g, x);
    qtts_gpu_buf_free(g, y);
    printf("  ok   add_rows (add, copy, broadcast; offsets and strides)\n");
}

static void test_rules(qtts_gpu *g, int64_t V, int64_t eos, float pen, int64_t step, int64_t min_new) {
    qtts_err err = {0};
    const int64_t ZO = 5, SO = 9;
    qtts_gpu_buf *z = qtts_gpu_buf_new(g, sizeof(float) * (size_t)(ZO + V), &err);
    qtts_gpu_buf *st = qtts_gpu_buf_new(g, sizeof(uint32_t) * (size_t)(SO + QTTS_GPU_RULES_STATE(V)), &err);
    qtts_gpu_buf *ids = qtts_gpu_buf_new(g, sizeof(int32_t) * 4, &err);
    float *want = malloc(sizeof(float) * (size_t)V);
    int32_t *hist = malloc(sizeof(int32_t) * (size_t)V);
    TEST_CHECK(z && st && ids && want && hist, "buffers: %s", err.msg);
    if (!z || !st || !ids || !want || !hist) goto out;
    float *zp = (float *)qtts_gpu_buf_data(z) + ZO;
    uint32_t *sp = (uint32_t *)qtts_gpu_buf_data(st) + SO;
    int64_t n_hist = 0;
    sp[0] = (uint32_t)step;
    memcpy(&sp[1], &pen, sizeof pen);
    sp[2] = (uint32_t)min_new;
    for (int64_t v = 0; v < V; v++) {
        want[v] = zp[v] = frand();
        if (v % 7 == 3 || v == eos) { /* generated ids, EOS among them */
            sp[4 + v] = 1;
            hist[n_hist++] = (int32_t)v;
        }
    }
    qtts_talker_process_logits(want, V, hist, n_hist, pen, step, min_new, eos);
    ((int32_t *)qtts_gpu_buf_data(ids))[2] = (int32_t)(V - 2);
    qtts_gpu_seq *s = qtts_gpu_seq_new(g, &err);
    int rc = !s || qtts_gpu_logits_rules(s, z, ZO, V, st, SO, eos, &err) ||
             qtts_gpu_rules_mark(s, st, SO, V, ids, 2, &err) || qtts_gpu_seq_run(s, &err);
    qtts_gpu_seq_free(s);
    TEST_CHECK(rc == 0, "logits_rules: %s", err.msg);
    double e = 0;
    int inf_ok = 1;
    for (int64_t v = 0; v < V; v++) {
        if (isinf(want[v]) || isinf(zp[v])) {
            inf_ok &= want[v] == zp[v];
            continue;
        }
        double d = fabs((double)zp[v] - want[v]) / (fabs(want[v]) + 1e-30);
        if (d > e) e = d;
    }
    TEST_CHECK(inf_ok, "logits_rules V=%lld: -inf positions differ from the CPU's", (long long)V);
    /* the penalty's division: correctly rounded on the CPU, within 2.5 ulp in SPIR-V */
    TEST_CHECK(e <= 4e-7, "logits_rules V=%lld: relative error %g", (long long)V, e);
    TEST_CHECK(sp[4 + V - 2] == 1 && sp[4 + V - 3] == (uint32_t)((V - 3) % 7 == 3), "rules_mark did not mark id %lld",
               (long long)(V - 2));
    printf("  ok   logits_rules V=%lld eos=%lld penalty %.2f step %lld/%lld: rel err %.3g, -inf matched\n",
           (long long)V, (long long)eos, pen, (long long)step, (long long)min_new, e);
out:
    qtts_gpu_buf_free(g, z);
    qtts_gpu_buf_free(g, st);
    qtts_gpu_buf_free(g, ids);
    free(want);
    free(hist);
}

int main(void) {
    qtts_err err = {0};
    qtts_gpu *g = qtts_gpu_open("vulkan", &err);
    if (!g) {
        const char *req = getenv("QTTS_REQUIRE_VULKAN");
        fprintf(stderr, "%s: %s\n", req && !strcmp(req, "1") ? "FAIL" : "SKIP", err.msg);
        return req && !strcmp(req, "1") ? 1 : 77;
    }
    printf("device: %s\n", qtts_gpu_name(g));
    test_add_rows(g);
    test_rules(g, 3072, 2150, 1.05f, 1, 2); /* the talker's shape; EOS masked */
    test_rules(g, 3072, 2150, 1.05f, 2, 2); /* EOS allowed */
    test_rules(g, 777, 400, 1.3f, 0, 2); /* fewer than 1024 ids: all but EOS suppressed */
    test_rules(g, 2000, 1999, 1.0f, 5, 2); /* no penalty */
    TEST_CHECK(qtts_gpu_validation_errors(g) == 0, "%d validation-layer errors", qtts_gpu_validation_errors(g));
    qtts_gpu_close(g);
    return test_finish("test_gpu_lm_kernels");
}
