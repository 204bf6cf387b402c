/* Padded 1-D convolutions: the blocked multi-threaded kernel against the
 * scalar reference for many geometries and all padding modes, the Mimi output
 * length rule, and bad-geometry errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tensor/conv1d_pad.h"

static float frand(unsigned *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

int main(void) {
    qtts_err err = {0};
    qtts_pool *pool = qtts_pool_create(2, &err);
    TEST_CHECK(pool != NULL, "pool: %s", err.msg);
    unsigned seed = 7;
    const struct {
        int64_t cin, cout, t, k, s, d;
    } g[] = {{1, 4, 1000, 7, 1, 1}, {4, 2, 777, 3, 1, 1},   {2, 4, 600, 1, 1, 1},  {4, 8, 1601, 8, 4, 1},
             {8, 16, 333, 10, 5, 1}, {16, 32, 90, 12, 6, 1}, {32, 64, 13, 16, 8, 1}, {5, 7, 40, 3, 1, 4},
             {3, 5, 9, 4, 2, 1},    {6, 3, 2, 4, 2, 1},     {9, 9, 1100, 5, 1, 2}};
    const qtts_pad_mode modes[] = {QTTS_PAD_ZERO, QTTS_PAD_REPLICATE, QTTS_PAD_REFLECT};
    int cases = 0;
    for (size_t c = 0; c < sizeof g / sizeof g[0]; c++) {
        int64_t nx = g[c].cin * g[c].t, nw = g[c].cout * g[c].cin * g[c].k;
        float *x = malloc(nx * sizeof(float)), *w = malloc(nw * sizeof(float)), *b = malloc(g[c].cout * 4);
        for (int64_t i = 0; i < nx; i++) x[i] = frand(&seed);
        for (int64_t i = 0; i < nw; i++) w[i] = frand(&seed);
        for (int64_t i = 0; i < g[c].cout; i++) b[i] = frand(&seed);
        for (int m = 0; m < 3; m++) {
            int64_t span = (g[c].k - 1) * g[c].d + 1, pl = span - g[c].s, pr = pl / 2 + 1;
            if (pl < 0) pl = 0;
            if (modes[m] == QTTS_PAD_REFLECT && (pl >= g[c].t || pr >= g[c].t)) continue;
            int64_t to1 = 0, to2 = 0, tmax = (g[c].t + pl + pr) / g[c].s + 2;
            float *y1 = calloc(g[c].cout * tmax, 4), *y2 = calloc(g[c].cout * tmax, 4);
            int r1 = qtts_conv1d_padded(pool, x, g[c].cin, g[c].t, w, m == 1 ? NULL : b, g[c].cout, g[c].k, g[c].s,
                                        g[c].d, pl, pr, modes[m], y1, &to1, &err);
            int r2 = qtts_conv1d_padded_ref(x, g[c].cin, g[c].t, w, m == 1 ? NULL : b, g[c].cout, g[c].k, g[c].s,
                                            g[c].d, pl, pr, modes[m], y2, &to2, &err);
            char what[128];
            snprintf(what, sizeof what, "conv cin%lld cout%lld T%lld k%lld s%lld d%lld mode%d", (long long)g[c].cin,
                     (long long)g[c].cout, (long long)g[c].t, (long long)g[c].k, (long long)g[c].s,
                     (long long)g[c].d, m);
            TEST_CHECK(r1 == 0 && r2 == 0 && to1 == to2, "%s: rc %d %d len %lld %lld", what, r1, r2, (long long)to1,
                       (long long)to2);
            if (to1 == to2) TEST_NEAR(y1, y2, (size_t)(g[c].cout * to1), 1e-4, what);
            cases++;
            free(y1);
            free(y2);
        }
        /* Mimi rule: ceil(T / stride) outputs */
        int64_t tc = qtts_conv1d_causal_len(g[c].t, g[c].s);
        float *y = calloc(g[c].cout * tc + 1, 4);
        int r = (g[c].k - 1) * g[c].d + 1 >= g[c].s
                    ? qtts_conv1d_causal(pool, x, g[c].cin, g[c].t, w, b, g[c].cout, g[c].k, g[c].s, g[c].d,
                                         QTTS_PAD_ZERO, y, &err)
                    : 0;
        TEST_CHECK(r == 0, "causal conv: %s", err.msg);
        TEST_CHECK(tc == (g[c].t + g[c].s - 1) / g[c].s, "causal length");
        free(y);
        free(x);
        free(w);
        free(b);
    }
    TEST_CHECK(cases > 25, "ran %d cases", cases);
    /* errors */
    float x[4] = {1, 2, 3, 4}, w[3] = {1, 1, 1}, y[8];
    TEST_CHECK(qtts_conv1d_same_reflect(pool, x, 1, 2, w, NULL, 1, 3, 2, y, &err) != 0 &&
                   strstr(err.msg, "reflect"),
               "reflect pad >= T rejected: %s", err.msg);
    TEST_CHECK(qtts_conv1d_padded(pool, x, 1, 4, w, NULL, 1, 0, 1, 1, 0, 0, QTTS_PAD_ZERO, y, NULL, &err) != 0,
               "k = 0 rejected");
    TEST_CHECK(qtts_conv1d_padded(pool, x, 1, 0, w, NULL, 1, 3, 1, 1, 1, 1, QTTS_PAD_REPLICATE, y, NULL, &err) != 0,
               "replicate pad of an empty signal rejected");
    qtts_pool_free(pool);
    return test_finish("test_conv1d_pad");
}
