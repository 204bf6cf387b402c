/* The kernel the device talker adds (add_rows) against its CPU twin on odd
 * shapes: row adds, copies and a broadcast bias with offsets and strides
 * (exact). The talker's logits processors run inside the sample kernel
 * (tests/test_gpu_sample.c). Skipped (exit 77) without a Vulkan device
 * unless QTTS_REQUIRE_VULKAN=1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu_ops.h"
#include "harness.h"
#include "support/gpu_device.h"

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

int main(void) {
    int skip;
    qtts_gpu *g = test_gpu_open(&skip);
    if (!g) return skip;
    test_add_rows(g);
    TEST_CHECK(qtts_gpu_validation_errors(g) == 0, "%d validation-layer errors", qtts_gpu_validation_errors(g));
    qtts_gpu_close(g);
    return test_finish("test_gpu_lm_kernels");
}
