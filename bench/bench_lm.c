/* Talker ms/step and code predictor ms/frame on random weights at real
 * dimensions (model/model_random.h).
 *   bench_lm [size=0.6b] [types=f32,q8_0,q4_k] [threads=1,2] [steps=16] [batch=1]
 * Talker: one prefill of a ~40-row CustomVoice prompt, then `steps` single
 * steps (context grows from ~40). Code predictor: `steps` frames (15 forwards
 * each). With batch B > 1, B sequences are stepped together; times are per
 * call (i.e. per B frames). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/code_predictor.h"
#include "model/model_random.h"
#include "model/sampler.h"
#include "tensor/linear.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int32_t pick_argmax(void *ctx, int b, int g, float *logits, int64_t v) {
    (void)ctx;
    (void)b;
    (void)g;
    return qtts_argmax(logits, v);
}

static int bench(qtts_talker_model *m, int threads, int steps, int B, const char *tname) {
    qtts_err err = {0};
    qtts_pool *pool = qtts_pool_create(threads, &err);
    if (!pool) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    const int64_t D = m->cfg.talker.hidden, V = m->cfg.talker.vocab, P = 40;
    qtts_kv_cache kv[16], ckv[16];
    qtts_kv_cache *kp[16], *ckp[16];
    int64_t nt[16];
    qtts_lm_work w = {0};
    qtts_cp_work cw = {0};
    float *x = malloc(sizeof(float) * (size_t)(P * B * D)), *h = malloc(sizeof(float) * (size_t)(P * B * D));
    float *logits = malloc(sizeof(float) * (size_t)(B * V)), *e0 = malloc(sizeof(float) * (size_t)(B * D));
    int32_t *codes = malloc(sizeof(int32_t) * (size_t)(B * 15));
    for (int64_t i = 0; i < P * B * D; i++) x[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    for (int b = 0; b < B; b++) {
        qtts_kv_init(&kv[b], &m->cfg.talker, m->kv_type, P + steps + 1, 0, &err);
        qtts_kv_init(&ckv[b], &m->cfg.cp, QTTS_F32, 16, 16, &err);
        kp[b] = &kv[b];
        ckp[b] = &ckv[b];
        nt[b] = P;
    }
    double t0 = now_ms();
    qtts_lm_forward(&m->lm, pool, &w, B, kp, nt, x, h, NULL, &err);
    double t_prefill = now_ms() - t0;
    for (int b = 0; b < B; b++) nt[b] = 1;
    double t_talker = 0, t_cp = 0;
    for (int s = 0; s < steps; s++) {
        for (int b = 0; b < B; b++) qtts_talker_codec_embed(m, (s * 31 + b) % 2048, e0 + b * D, &err);
        t0 = now_ms();
        if (qtts_code_predictor_run(&m->cp, pool, &cw, B, h, e0, ckp, pick_argmax, NULL, codes, NULL, NULL, NULL, &err)) {
            fprintf(stderr, "cp: %s\n", err.msg);
            break;
        }
        double t1 = now_ms();
        t_cp += t1 - t0;
        if (qtts_lm_forward(&m->lm, pool, &w, B, kp, nt, e0, h, NULL, &err)) {
            fprintf(stderr, "talker: %s\n", err.msg);
            break;
        }
        qtts_linear(pool, &m->codec_head, NULL, h, B, logits);
        t_talker += now_ms() - t1;
    }
    printf("%-5s threads %d batch %d: prefill(%lld rows) %8.1f ms | talker %7.2f ms/step | code predictor %7.2f ms/frame"
           " | %.1f frames/s\n",
           tname, threads, B, (long long)(P * B), t_prefill, t_talker / steps, t_cp / steps,
           1000.0 * B * steps / (t_talker + t_cp));
    fflush(stdout);
    for (int b = 0; b < B; b++) {
        qtts_kv_free(&kv[b]);
        qtts_kv_free(&ckv[b]);
    }
    qtts_lm_work_free(&w);
    qtts_cp_work_free(&cw);
    free(x);
    free(h);
    free(logits);
    free(e0);
    free(codes);
    qtts_pool_free(pool);
    return 0;
}

int main(int argc, char **argv) {
    const char *size = argc > 1 ? argv[1] : "0.6b";
    char types[128];
    snprintf(types, sizeof types, "%s", argc > 2 ? argv[2] : "f32,q8_0,q4_k");
    char threads[64];
    snprintf(threads, sizeof threads, "%s", argc > 3 ? argv[3] : "1,2");
    int steps = argc > 4 ? atoi(argv[4]) : 16, B = argc > 5 ? atoi(argv[5]) : 1;
    if (steps < 1 || B < 1 || B > 16) {
        fprintf(stderr, "usage: bench_lm [size] [types] [threads] [steps>=1] [batch 1..16]\n");
        return 2;
    }
    char *save = NULL;
    for (char *t = strtok_r(types, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        qtts_dtype dt = qtts_dtype_from_name(t);
        if (dt == QTTS_DTYPE_INVALID) {
            fprintf(stderr, "unknown type %s\n", t);
            return 2;
        }
        qtts_err err = {0};
        double t0 = now_ms();
        qtts_talker_model *m = qtts_model_random(size, QTTS_VARIANT_CUSTOM_VOICE, dt, 1, &err);
        if (!m) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        printf("%s %s: random weights built in %.1f s\n", size, t, (now_ms() - t0) / 1e3);
        char th[64], *s2 = NULL;
        snprintf(th, sizeof th, "%s", threads);
        for (char *n = strtok_r(th, ",", &s2); n; n = strtok_r(NULL, ",", &s2))
            if (bench(m, atoi(n) > 0 ? atoi(n) : 1, steps, B, t)) return 1;
        qtts_talker_model_free(m);
    }
    return 0;
}
