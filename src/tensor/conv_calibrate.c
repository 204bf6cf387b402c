#include "tensor/conv_calibrate.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "tensor/conv.h"
#include "tensor/conv_winograd.h"

/* A residual-unit conv of the decoder's middle blocks: 256 -> 256 channels,
 * kernel 7, dilation 3, 96 samples: 44 M multiply-adds, about 1 ms direct. */
enum { CAL_C = 256, CAL_K = 7, CAL_DIL = 3, CAL_T = 96, CAL_RUNS = 3, CAL_WINOGRAD_M = 4 };
#define CAL_MARGIN 1.1 /* a path that changes the arithmetic must be this much faster to be chosen */

static double best_run_ms(const qtts_conv *cv, const float *x, int64_t ldx, float *y) {
    double best = 1e30;
    for (int r = 0; r < CAL_RUNS; r++) {
        double t0 = qtts_now_ms();
        if (qtts_conv1d_cm(NULL, cv, x, ldx, CAL_T, y, CAL_T, NULL, 0)) return -1;
        double dt = qtts_now_ms() - t0;
        if (dt < best) best = dt;
    }
    return best;
}

static void measure(qtts_conv_calibration *c) {
    memset(c, 0, sizeof *c);
    c->bf16_available = qtts_conv_bf16_supported();
    const double t0 = qtts_now_ms();
    const int64_t ldx = CAL_T + (CAL_K - 1) * CAL_DIL;
    float *w = malloc(sizeof(float) * CAL_C * CAL_C * CAL_K), *x = malloc(sizeof(float) * CAL_C * ldx);
    float *y = malloc(sizeof(float) * CAL_C * CAL_T);
    qtts_conv f32 = {0}, wg = {0}, bf = {0};
    qtts_err err = {0};
    if (!w || !x || !y) goto done;
    uint32_t s = 12345;
    for (int64_t i = 0; i < (int64_t)CAL_C * CAL_C * CAL_K; i++)
        w[i] = (float)((s = s * 1664525u + 1013904223u) >> 8) * 1e-8f - 0.08f;
    for (int64_t i = 0; i < (int64_t)CAL_C * ldx; i++)
        x[i] = (float)((s = s * 1664525u + 1013904223u) >> 8) * 1e-7f - 0.8f;
    if (qtts_conv_init(&f32, w, NULL, CAL_C, CAL_C, CAL_K, CAL_DIL, &err) ||
        qtts_conv_init(&wg, w, NULL, CAL_C, CAL_C, CAL_K, CAL_DIL, &err) ||
        qtts_conv_to_winograd(&wg, CAL_WINOGRAD_M, &err))
        goto done;
    if (c->bf16_available &&
        (qtts_conv_init(&bf, w, NULL, CAL_C, CAL_C, CAL_K, CAL_DIL, &err) || qtts_conv_to_bf16(&bf, &err)))
        goto done;
    best_run_ms(&f32, x, ldx, y); /* warm-up: caches, frequency */
    const double tf = best_run_ms(&f32, x, ldx, y), tw = best_run_ms(&wg, x, ldx, y);
    const double tb = c->bf16_available ? best_run_ms(&bf, x, ldx, y) : 0;
    if (tf <= 0 || tw <= 0 || (c->bf16_available && tb <= 0)) goto done;
    const double flop = 2.0 * CAL_C * CAL_C * CAL_K * CAL_T;
    c->f32_gflops = flop / (tf * 1e6);
    c->winograd_gflops = flop / (tw * 1e6);
    c->winograd_faster = tw * CAL_MARGIN <= tf;
    if (c->bf16_available) {
        c->bf16_gflops = flop / (tb * 1e6);
        c->bf16_faster = tb * CAL_MARGIN <= (c->winograd_faster ? tw : tf);
    }
done:
    qtts_conv_free(&f32);
    qtts_conv_free(&wg);
    qtts_conv_free(&bf);
    free(w);
    free(x);
    free(y);
    c->ms = qtts_now_ms() - t0;
}

/* Written once under pthread_once, read-only afterwards. */
static pthread_once_t g_cal_once = PTHREAD_ONCE_INIT;
static qtts_conv_calibration g_cal;

static void cal_init(void) { measure(&g_cal); }

const qtts_conv_calibration *qtts_conv_calibrate(void) {
    pthread_once(&g_cal_once, cal_init);
    return &g_cal;
}
