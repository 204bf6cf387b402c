/* The kernels the device talker adds against their CPU twins on odd shapes:
 * add_rows (row adds, copies and a broadcast bias with offsets and strides)
 * and ring_gather (a slot's ring rows across the wrap, moved between
 * submissions of one recorded sequence; a slot past the ring reads 0), both
 * exact. The talker's logits processors run inside the sample kernel
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

/* out[off + f*N + j] = ring[(slot * R + ((first + f) & (R - 1))) * N + j]: the decoder reading the LM's codes */
static void test_ring_gather(qtts_gpu *g) {
    enum { N = 5, R = 4, SLOTS = 3, F = 7, OFF = 9 };
    qtts_err err = {0};
    qtts_gpu_buf *ring = qtts_gpu_buf_new(g, sizeof(int32_t) * SLOTS * R * N, &err);
    qtts_gpu_buf *at = qtts_gpu_buf_new(g, sizeof(uint32_t) * 4, &err);
    qtts_gpu_buf *out = qtts_gpu_buf_new(g, sizeof(int32_t) * (OFF + F * N), &err);
    TEST_CHECK(ring && at && out, "buffers: %s", err.msg);
    if (!ring || !at || !out) return;
    int32_t *rp = qtts_gpu_buf_data(ring), *op = qtts_gpu_buf_data(out);
    uint32_t *ap = qtts_gpu_buf_data(at);
    for (int i = 0; i < SLOTS * R * N; i++) rp[i] = 1000 + i;
    qtts_gpu_seq *s = qtts_gpu_seq_new(g, &err);
    int rc = !s || qtts_gpu_ring_gather(s, ring, R, N, at, 2, F, out, OFF, &err) || qtts_gpu_seq_end(s, &err);
    TEST_CHECK(rc == 0, "ring_gather: %s", err.msg);
    /* one recording, run at several places: (slot, first) are read when it runs */
    static const uint32_t places[][2] = {{0, 0}, {2, 3}, {1, 6}, {SLOTS, 0}};
    for (size_t k = 0; !rc && k < sizeof places / sizeof *places; k++) {
        ap[2] = places[k][0];
        ap[3] = places[k][1];
        for (int i = 0; i < OFF + F * N; i++) op[i] = -7;
        TEST_CHECK(qtts_gpu_seq_run(s, &err) == 0, "run: %s", err.msg);
        int bad = 0;
        for (int i = 0; i < OFF; i++) bad += op[i] != -7;
        for (int f = 0; f < F; f++)
            for (int j = 0; j < N; j++) {
                const uint32_t row = places[k][0] * R + ((places[k][1] + (uint32_t)f) & (R - 1));
                const int32_t want = places[k][0] < SLOTS ? rp[row * N + j] : 0;
                bad += op[OFF + f * N + j] != want;
            }
        TEST_CHECK(bad == 0, "ring_gather at slot %u row %u: %d wrong ids", places[k][0], places[k][1], bad);
    }
    qtts_gpu_seq_free(s);
    s = qtts_gpu_seq_new(g, &err);
    TEST_CHECK(s && qtts_gpu_ring_gather(s, ring, 3, N, at, 2, F, out, OFF, &err) != 0,
               "a ring of 3 rows (not a power of two) must be refused");
    TEST_CHECK(s && qtts_gpu_ring_gather(s, ring, R, N, at, 2, F + 2, out, OFF, &err) != 0,
               "frames past the end of out must be refused");
    qtts_gpu_seq_free(s);
    qtts_gpu_buf_free(g, ring);
    qtts_gpu_buf_free(g, at);
    qtts_gpu_buf_free(g, out);
    printf("  ok   ring_gather (across the wrap, moved between runs, a slot past the ring)\n");
}

int main(void) {
    int skip;
    qtts_gpu *g = test_gpu_open(&skip);
    if (!g) return skip;
    test_add_rows(g);
    test_ring_gather(g);
    TEST_CHECK(qtts_gpu_validation_errors(g) == 0, "%d validation-layer errors", qtts_gpu_validation_errors(g));
    qtts_gpu_close(g);
    return test_finish("test_gpu_lm_kernels");
}
