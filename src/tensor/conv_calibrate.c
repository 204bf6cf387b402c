#include "tensor/conv_calibrate.h"

#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "tensor/conv.h"
#include "tensor/conv_winograd.h"

/* A residual unit of the decoder's middle blocks, as each path runs it: the
 * dilated conv (256 -> 256 channels, kernel 7, dilation 3, 96 samples), then
 * the 1x1 conv on its output; 50 M multiply-adds. The dilated conv alone
 * understates what the int16 path gains in the decoder, whose 1x1 convs run
 * in int16 too, and near the 1.1x rule's edge a load would then choose the
 * slower, larger `winograd` by chance. */
enum { CAL_C = 256, CAL_K = 7, CAL_DIL = 3, CAL_T = 96, CAL_ROUNDS = 7, CAL_WINOGRAD_M = 4 };
#define CAL_MARGIN 1.1 /* a path that changes the arithmetic must be this much faster to be chosen */

/* one path: the unit's dilated conv and its 1x1 conv in that path's form */
typedef struct {
    qtts_conv dil, pw;
} unit_path;

static double run_ms(const unit_path *p, const float *x, int64_t ldx, float *mid, float *y, qtts_conv_ws *ws) {
    const double t0 = qtts_now_ms();
    if (qtts_conv1d_cm_ws(NULL, &p->dil, x, ldx, CAL_T, mid, CAL_T, NULL, 0, ws) ||
        qtts_conv1d_cm_ws(NULL, &p->pw, mid, CAL_T, CAL_T, y, CAL_T, NULL, 0, ws))
        return -1;
    return qtts_now_ms() - t0;
}

/* Best time of each path over CAL_ROUNDS rounds, each round timing every
 * path once in a rotating order, so a burst of other work on a shared host
 * slows one round of every path rather than all the runs of one. The work
 * memory is kept across the runs, as the decoder keeps it (qtts_conv_ws):
 * allocated per call, it comes from fresh pages after the load's heap trim,
 * whose page faults would understate the Winograd path (sometimes under the
 * 1.1x margin, so `auto` would pick a slower decoder). */
static int best_ms(const unit_path *const *paths, int n, const float *x, int64_t ldx, float *mid, float *y,
                   double *best) {
    qtts_conv_ws ws = {0};
    int rc = -1;
    for (int i = 0; i < n; i++) {
        if (run_ms(paths[i], x, ldx, mid, y, &ws) < 0) goto out; /* warm-up: caches, frequency, work memory */
        best[i] = 1e30;
    }
    for (int r = 0; r < CAL_ROUNDS; r++)
        for (int k = 0; k < n; k++) {
            const int i = (r + k) % n;
            const double t = run_ms(paths[i], x, ldx, mid, y, &ws);
            if (t < 0) goto out;
            if (t < best[i]) best[i] = t;
        }
    rc = 0;
out:
    qtts_conv_ws_free(&ws);
    return rc;
}

/* The unit's two convs from the same weights in every path (w: the dilated
 * conv's, then the 1x1's) */
static int unit_init(unit_path *p, const float *w, qtts_err *err) {
    return qtts_conv_init(&p->dil, w, NULL, CAL_C, CAL_C, CAL_K, CAL_DIL, err) ||
           qtts_conv_init(&p->pw, w + (size_t)CAL_C * CAL_C * CAL_K, NULL, CAL_C, CAL_C, 1, 1, err);
}

static void unit_free(unit_path *p) {
    qtts_conv_free(&p->dil);
    qtts_conv_free(&p->pw);
}

void qtts_conv_measure(qtts_conv_calibration *c) {
    memset(c, 0, sizeof *c);
    c->bf16_available = qtts_conv_bf16_supported();
    c->i16_available = qtts_conv_i16_supported();
    const double t0 = qtts_now_ms();
    const int64_t ldx = CAL_T + (CAL_K - 1) * CAL_DIL, n_w = (int64_t)CAL_C * CAL_C * (CAL_K + 1);
    float *w = malloc(sizeof(float) * n_w), *x = malloc(sizeof(float) * CAL_C * ldx);
    float *mid = malloc(sizeof(float) * CAL_C * CAL_T), *y = malloc(sizeof(float) * CAL_C * CAL_T);
    unit_path f32 = {0}, wg = {0}, bf = {0}, wi = {0};
    qtts_err err = {0};
    if (!w || !x || !mid || !y) goto done;
    uint32_t s = 12345;
    for (int64_t i = 0; i < n_w; i++) w[i] = (float)((s = s * 1664525u + 1013904223u) >> 8) * 1e-8f - 0.08f;
    for (int64_t i = 0; i < (int64_t)CAL_C * ldx; i++)
        x[i] = (float)((s = s * 1664525u + 1013904223u) >> 8) * 1e-7f - 0.8f;
    /* each path as the decoder converts a residual unit (codec_decoder.c): Winograd for the dilated conv
     * only; int16 products for both convs on top of that; bf16 for both, without Winograd */
    if (unit_init(&f32, w, &err) || unit_init(&wg, w, &err) || qtts_conv_to_winograd(&wg.dil, CAL_WINOGRAD_M, &err))
        goto done;
    if (c->bf16_available &&
        (unit_init(&bf, w, &err) || qtts_conv_to_bf16(&bf.dil, &err) || qtts_conv_to_bf16(&bf.pw, &err)))
        goto done;
    if (c->i16_available &&
        (unit_init(&wi, w, &err) || qtts_conv_to_winograd(&wi.dil, CAL_WINOGRAD_M, &err) ||
         qtts_conv_to_i16(&wi.dil, &err) || qtts_conv_to_i16(&wi.pw, &err)))
        goto done;
    const unit_path *paths[4] = {&f32, &wg, NULL, NULL};
    int n = 2, ib = -1, ii = -1;
    if (c->bf16_available) paths[ib = n++] = &bf;
    if (c->i16_available) paths[ii = n++] = &wi;
    double best[4] = {0, 0, 0, 0};
    if (best_ms(paths, n, x, ldx, mid, y, best)) goto done;
    const double tf = best[0], tw = best[1], tb = ib >= 0 ? best[ib] : 0, ti = ii >= 0 ? best[ii] : 0;
    if (tf <= 0 || tw <= 0 || (ib >= 0 && tb <= 0) || (ii >= 0 && ti <= 0)) goto done;
    const double flop = 2.0 * CAL_C * CAL_C * (CAL_K + 1) * CAL_T;
    c->f32_gflops = flop / (tf * 1e6);
    c->winograd_gflops = flop / (tw * 1e6);
    c->winograd_faster = tw * CAL_MARGIN <= tf;
    if (c->bf16_available) {
        c->bf16_gflops = flop / (tb * 1e6);
        c->bf16_faster = tb * CAL_MARGIN <= (c->winograd_faster ? tw : tf);
    }
    if (c->i16_available) {
        c->i16_gflops = flop / (ti * 1e6);
        c->i16_faster = c->winograd_faster && ti * CAL_MARGIN <= tw;
    }
done:
    unit_free(&f32);
    unit_free(&wg);
    unit_free(&bf);
    unit_free(&wi);
    free(w);
    free(x);
    free(mid);
    free(y);
    c->ms = qtts_now_ms() - t0;
}

qtts_conv_path qtts_conv_calibration_best(const qtts_conv_calibration *c) {
    if (c->bf16_faster && (!c->i16_faster || c->bf16_gflops >= c->i16_gflops)) return QTTS_CONV_PATH_BF16;
    if (c->i16_faster) return QTTS_CONV_PATH_WINOGRAD_I16;
    return c->winograd_faster ? QTTS_CONV_PATH_WINOGRAD : QTTS_CONV_PATH_F32;
}
