#include "model/speaker_encoder.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/mel.h"
#include "tensor/conv1d_pad.h"

enum { SPK_MAX_BLOCKS = 8 };

typedef struct {
    float *w, *b;
    int64_t c_out, c_in, k, dil;
} spk_conv;

typedef struct {
    spk_conv tdnn1, tdnn2, se1, se2;
    spk_conv *res; /* scale-1 convs */
    int64_t channels;
} spk_block;

struct qtts_spk_encoder {
    int64_t mel_dim, sample_rate, dim, scale, n_blocks; /* n_blocks: SE-Res2Net blocks */
    int64_t min_frames;
    spk_conv block0;
    spk_block blocks[SPK_MAX_BLOCKS];
    spk_conv mfa;
    spk_conv asp_tdnn_x;    /* asp.tdnn restricted to the x channels */
    float *asp_tdnn_stats;  /* [att][2C]: the columns that see the mean/std broadcast */
    spk_conv asp_conv, fc;
    int64_t att, c_mfa;
    qtts_mel *mel;
};

static void conv_free(spk_conv *c) {
    free(c->w);
    free(c->b);
}

void qtts_spk_encoder_free(qtts_spk_encoder *e) {
    if (!e) return;
    conv_free(&e->block0);
    for (int64_t i = 0; i < e->n_blocks; i++) {
        spk_block *b = &e->blocks[i];
        conv_free(&b->tdnn1);
        conv_free(&b->tdnn2);
        conv_free(&b->se1);
        conv_free(&b->se2);
        if (b->res)
            for (int64_t j = 0; j < e->scale - 1; j++) conv_free(&b->res[j]);
        free(b->res);
    }
    conv_free(&e->mfa);
    conv_free(&e->asp_tdnn_x);
    free(e->asp_tdnn_stats);
    conv_free(&e->asp_conv);
    conv_free(&e->fc);
    qtts_mel_free(e->mel);
    free(e);
}

/* Loads <prefix>.weight [c_out][c_in][k] (c_in/k may be -1 = from the tensor) and <prefix>.bias. */
static int load_conv(spk_conv *c, const qtts_store *st, const char *prefix, int64_t c_out, int64_t c_in, int64_t k,
                     int64_t dil, qtts_err *err) {
    char name[256];
    snprintf(name, sizeof name, "speaker_encoder.%s.weight", prefix);
    const qtts_tensor *w = qtts_store_get3(st, name, c_out, c_in, k, err);
    if (!w) return -1;
    snprintf(name, sizeof name, "speaker_encoder.%s.bias", prefix);
    const qtts_tensor *b = qtts_store_get1(st, name, w->shape[0], err);
    if (!b) return -1;
    c->c_out = w->shape[0];
    c->c_in = w->shape[1];
    c->k = w->shape[2];
    c->dil = dil;
    c->w = qtts_tensor_to_f32(w, err);
    c->b = c->w ? qtts_tensor_to_f32(b, err) : NULL;
    return c->w && c->b ? 0 : -1;
}

qtts_spk_encoder *qtts_spk_encoder_load(const qtts_store *st, const qtts_model_config *cfg, qtts_err *err) {
    if (!cfg->has_speaker_encoder) {
        qtts_fail(err, "%s: this model has no speaker encoder (voice cloning needs a Base model)",
                  qtts_store_source(st));
        return NULL;
    }
    qtts_spk_encoder *e = qtts_calloc(1, sizeof *e, err);
    if (!e) return NULL;
    /* The config gives 5 stages: TDNN, SE-Res2Net x (n-2), MFA. */
    const int64_t n_cfg = 5;
    e->mel_dim = cfg->spk_mel_dim;
    e->sample_rate = cfg->spk_sample_rate;
    e->dim = cfg->spk_enc_dim;
    e->scale = cfg->spk_res2net_scale;
    e->n_blocks = n_cfg - 2;
    e->att = cfg->spk_attention_channels;
    if (e->scale < 1 || e->n_blocks > SPK_MAX_BLOCKS) {
        qtts_fail(err, "%s: unsupported speaker encoder config (res2net scale %lld)", qtts_store_source(st),
                  (long long)e->scale);
        goto fail;
    }
    int64_t max_pad = 0;
    if (load_conv(&e->block0, st, "blocks.0.conv", cfg->spk_channels[0], e->mel_dim, cfg->spk_kernels[0],
                  cfg->spk_dilations[0], err))
        goto fail;
    max_pad = (e->block0.k - 1) * e->block0.dil;
    int64_t prev = e->block0.c_out, cat = 0;
    for (int64_t i = 0; i < e->n_blocks; i++) {
        spk_block *b = &e->blocks[i];
        int64_t c = cfg->spk_channels[i + 1];
        char p[128];
        b->channels = c;
        if (c % e->scale) {
            qtts_fail(err, "%s: speaker encoder channels %lld not divisible by res2net scale %lld",
                      qtts_store_source(st), (long long)c, (long long)e->scale);
            goto fail;
        }
        snprintf(p, sizeof p, "blocks.%lld.tdnn1.conv", (long long)(i + 1));
        if (load_conv(&b->tdnn1, st, p, c, prev, 1, 1, err)) goto fail;
        b->res = qtts_calloc((size_t)(e->scale > 1 ? e->scale - 1 : 1), sizeof(spk_conv), err);
        if (!b->res) goto fail;
        for (int64_t j = 0; j < e->scale - 1; j++) {
            snprintf(p, sizeof p, "blocks.%lld.res2net_block.blocks.%lld.conv", (long long)(i + 1), (long long)j);
            if (load_conv(&b->res[j], st, p, c / e->scale, c / e->scale, cfg->spk_kernels[i + 1],
                          cfg->spk_dilations[i + 1], err))
                goto fail;
            int64_t pad = (b->res[j].k - 1) * b->res[j].dil;
            if (pad > max_pad) max_pad = pad;
        }
        snprintf(p, sizeof p, "blocks.%lld.tdnn2.conv", (long long)(i + 1));
        if (load_conv(&b->tdnn2, st, p, c, c, 1, 1, err)) goto fail;
        snprintf(p, sizeof p, "blocks.%lld.se_block.conv1", (long long)(i + 1));
        if (load_conv(&b->se1, st, p, cfg->spk_se_channels, c, 1, 1, err)) goto fail;
        snprintf(p, sizeof p, "blocks.%lld.se_block.conv2", (long long)(i + 1));
        if (load_conv(&b->se2, st, p, c, cfg->spk_se_channels, 1, 1, err)) goto fail;
        prev = c;
        cat += c;
    }
    if (load_conv(&e->mfa, st, "mfa.conv", cfg->spk_channels[n_cfg - 1], cat, cfg->spk_kernels[n_cfg - 1],
                  cfg->spk_dilations[n_cfg - 1], err))
        goto fail;
    if ((e->mfa.k - 1) * e->mfa.dil > max_pad) max_pad = (e->mfa.k - 1) * e->mfa.dil;
    e->c_mfa = e->mfa.c_out;
    {
        /* Split asp.tdnn [att][3C][1] into the part applied to x and the part
         * applied to the time-constant mean/std (folded into a bias per call). */
        spk_conv full = {0};
        if (load_conv(&full, st, "asp.tdnn.conv", e->att, 3 * e->c_mfa, 1, 1, err)) {
            conv_free(&full);
            goto fail;
        }
        int64_t C = e->c_mfa;
        e->asp_tdnn_x.w = qtts_malloc((size_t)(e->att * C) * sizeof(float), err);
        e->asp_tdnn_stats = qtts_malloc((size_t)(e->att * 2 * C) * sizeof(float), err);
        if (!e->asp_tdnn_x.w || !e->asp_tdnn_stats) {
            conv_free(&full);
            goto fail;
        }
        for (int64_t o = 0; o < e->att; o++) {
            memcpy(e->asp_tdnn_x.w + o * C, full.w + o * 3 * C, (size_t)C * sizeof(float));
            memcpy(e->asp_tdnn_stats + o * 2 * C, full.w + o * 3 * C + C, (size_t)(2 * C) * sizeof(float));
        }
        e->asp_tdnn_x.b = full.b;
        free(full.w);
        e->asp_tdnn_x.c_out = e->att;
        e->asp_tdnn_x.c_in = C;
        e->asp_tdnn_x.k = 1;
        e->asp_tdnn_x.dil = 1;
    }
    if (load_conv(&e->asp_conv, st, "asp.conv", e->c_mfa, e->att, 1, 1, err)) goto fail;
    if (load_conv(&e->fc, st, "fc", e->dim, 2 * e->c_mfa, 1, 1, err)) goto fail;
    e->mel = qtts_mel_create_speaker(e->sample_rate, e->mel_dim, err);
    if (!e->mel) goto fail;
    /* reflect 'same' padding needs pad < frames on each side */
    e->min_frames = max_pad - max_pad / 2 + 1;
    return e;
fail:
    qtts_fail_prefix(err, "speaker encoder");
    qtts_spk_encoder_free(e);
    return NULL;
}

int64_t qtts_spk_encoder_dim(const qtts_spk_encoder *e) { return e->dim; }
int64_t qtts_spk_encoder_sample_rate(const qtts_spk_encoder *e) { return e->sample_rate; }

int64_t qtts_spk_encoder_min_samples(const qtts_spk_encoder *e) {
    /* frames = (n - hop)/hop + 1 for n_fft 1024 / hop 256 with 384-sample reflect padding */
    int64_t n = e->min_frames * 256;
    int64_t m = qtts_mel_min_samples(e->mel);
    return n > m ? n : m;
}

static void relu(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

/* TDNN = conv ('same', reflect) + ReLU. */
static int tdnn(qtts_pool *pool, const spk_conv *c, const float *x, int64_t t, float *y, qtts_err *err) {
    if (qtts_conv1d_same_reflect(pool, x, c->c_in, t, c->w, c->b, c->c_out, c->k, c->dil, y, err)) return -1;
    relu(y, c->c_out * t);
    return 0;
}

/* One SE-Res2Net block; x [C_in][T] -> out [C][T] (out may not alias x). */
static int se_res2net(const qtts_spk_encoder *e, qtts_pool *pool, const spk_block *b, const float *x, int64_t t,
                      float *out, float *tmp1, float *tmp2, qtts_err *err) {
    int64_t C = b->channels, cs = C / e->scale;
    if (tdnn(pool, &b->tdnn1, x, t, tmp1, err)) return -1;
    /* Res2Net: chunk 0 passes through; chunk i (>=1) = TDNN(chunk_i + y_{i-1}) (no add for i = 1). */
    memcpy(tmp2, tmp1, (size_t)(cs * t) * sizeof(float));
    for (int64_t i = 1; i < e->scale; i++) {
        float *in = tmp1 + i * cs * t;
        if (i >= 2) {
            const float *yprev = tmp2 + (i - 1) * cs * t;
            for (int64_t k = 0; k < cs * t; k++) in[k] += yprev[k];
        }
        if (tdnn(pool, &b->res[i - 1], in, t, tmp2 + i * cs * t, err)) return -1;
    }
    if (tdnn(pool, &b->tdnn2, tmp2, t, out, err)) return -1;
    /* squeeze-excitation: per-channel gate from the time mean */
    float *s = tmp1, *s1 = tmp1 + C, *s2 = tmp1 + C + b->se1.c_out;
    for (int64_t c = 0; c < C; c++) {
        double acc = 0.0;
        const float *r = out + c * t;
        for (int64_t k = 0; k < t; k++) acc += r[k];
        s[c] = (float)(acc / (double)t);
    }
    if (qtts_conv1d_padded(pool, s, C, 1, b->se1.w, b->se1.b, b->se1.c_out, 1, 1, 1, 0, 0, QTTS_PAD_ZERO, s1, NULL,
                           err))
        return -1;
    relu(s1, b->se1.c_out);
    if (qtts_conv1d_padded(pool, s1, b->se1.c_out, 1, b->se2.w, b->se2.b, C, 1, 1, 1, 0, 0, QTTS_PAD_ZERO, s2, NULL,
                           err))
        return -1;
    for (int64_t c = 0; c < C; c++) {
        float g = 1.0f / (1.0f + expf(-s2[c]));
        float *r = out + c * t;
        const float *res = x + c * t;
        for (int64_t k = 0; k < t; k++) r[k] = r[k] * g + res[k];
    }
    return 0;
}

/* Per-channel mean/std (weights w over time, or uniform 1/T when w is NULL). */
typedef struct {
    const float *x, *w;
    int64_t t;
    float *mean, *std;
} stats_job;

static void stats_rows(void *ctx, int64_t c0, int64_t c1, int tid) {
    (void)tid;
    const stats_job *j = ctx;
    for (int64_t c = c0; c < c1; c++) {
        const float *x = j->x + c * j->t, *w = j->w ? j->w + c * j->t : NULL;
        double m = 0.0, v = 0.0, u = 1.0 / (double)j->t;
        for (int64_t k = 0; k < j->t; k++) m += (w ? (double)w[k] : u) * x[k];
        for (int64_t k = 0; k < j->t; k++) {
            double d = x[k] - m;
            v += (w ? (double)w[k] : u) * d * d;
        }
        j->mean[c] = (float)m;
        j->std[c] = (float)sqrt(v > 1e-12 ? v : 1e-12);
    }
}

static void softmax_rows(void *ctx, int64_t c0, int64_t c1, int tid) {
    (void)tid;
    const stats_job *j = ctx;
    float *a = (float *)j->w;
    for (int64_t c = c0; c < c1; c++) {
        float *r = a + c * j->t, mx = -INFINITY;
        for (int64_t k = 0; k < j->t; k++) mx = r[k] > mx ? r[k] : mx;
        double s = 0.0;
        for (int64_t k = 0; k < j->t; k++) {
            r[k] = expf(r[k] - mx);
            s += r[k];
        }
        float inv = (float)(1.0 / s);
        for (int64_t k = 0; k < j->t; k++) r[k] *= inv;
    }
}

int qtts_spk_encoder_forward_mel(const qtts_spk_encoder *e, qtts_pool *pool, const float *mel, int64_t t,
                                 float *xvec, qtts_stage_tap tap, void *tap_ctx, qtts_err *err) {
    if (t < e->min_frames)
        return qtts_fail(err, "speaker encoder: %lld mel frames is too short (need at least %lld)", (long long)t,
                         (long long)e->min_frames);
    int64_t cmax = e->block0.c_out, cat = 0;
    for (int64_t i = 0; i < e->n_blocks; i++) {
        cat += e->blocks[i].channels;
        if (e->blocks[i].channels > cmax) cmax = e->blocks[i].channels;
    }
    int64_t C = e->c_mfa;
    if (C > cmax) cmax = C;
    if (e->mel_dim > cmax) cmax = e->mel_dim;
    size_t big = (size_t)(cmax * t) + (size_t)(3 * cmax) + 64;
    float *xin = qtts_malloc((size_t)(e->mel_dim * t) * sizeof(float), err);
    float *h0 = qtts_malloc((size_t)(e->block0.c_out * t) * sizeof(float), err);
    float *cats = qtts_malloc((size_t)(cat * t) * sizeof(float), err);
    float *tmp1 = qtts_malloc(big * sizeof(float), err);
    float *tmp2 = qtts_malloc(big * sizeof(float), err);
    float *mfa = qtts_malloc((size_t)(C * t) * sizeof(float), err);
    float *alpha = qtts_malloc((size_t)(C * t) * sizeof(float), err);
    float *att = qtts_malloc((size_t)(e->att * t) * sizeof(float), err);
    float *stats = qtts_malloc((size_t)(4 * C + e->att) * sizeof(float), err);
    int rc = -1;
    if (!xin || !h0 || !cats || !tmp1 || !tmp2 || !mfa || !alpha || !att || !stats) goto done;
    /* [T][mel] -> channel-major [mel][T] */
    for (int64_t k = 0; k < t; k++)
        for (int64_t m = 0; m < e->mel_dim; m++) xin[m * t + k] = mel[k * e->mel_dim + m];
    if (tdnn(pool, &e->block0, xin, t, h0, err)) goto done;
    if (tap) tap(tap_ctx, "spk_block0_out", h0, e->block0.c_out, t);
    {
        const float *prev = h0;
        float *dst = cats;
        for (int64_t i = 0; i < e->n_blocks; i++) {
            if (se_res2net(e, pool, &e->blocks[i], prev, t, dst, tmp1, tmp2, err)) goto done;
            if (tap) {
                char name[64];
                snprintf(name, sizeof name, "spk_block%lld_out", (long long)(i + 1));
                tap(tap_ctx, name, dst, e->blocks[i].channels, t);
            }
            prev = dst;
            dst += e->blocks[i].channels * t;
        }
    }
    if (tdnn(pool, &e->mfa, cats, t, mfa, err)) goto done;
    if (tap) tap(tap_ctx, "spk_mfa_out", mfa, C, t);
    {
        /* attentive statistics pooling */
        float *mean = stats, *std = stats + C, *pooled = stats + 2 * C, *abias = stats + 4 * C;
        stats_job sj = {mfa, NULL, t, mean, std};
        qtts_parallel_for(pool, C, 16, stats_rows, &sj);
        for (int64_t o = 0; o < e->att; o++) {
            const float *w = e->asp_tdnn_stats + o * 2 * C;
            float acc = e->asp_tdnn_x.b[o];
            for (int64_t c = 0; c < C; c++) acc += w[c] * mean[c] + w[C + c] * std[c];
            abias[o] = acc;
        }
        if (qtts_conv1d_padded(pool, mfa, C, t, e->asp_tdnn_x.w, abias, e->att, 1, 1, 1, 0, 0, QTTS_PAD_ZERO, att,
                               NULL, err))
            goto done;
        for (int64_t k = 0; k < e->att * t; k++) att[k] = tanhf(att[k] > 0.0f ? att[k] : 0.0f);
        if (qtts_conv1d_padded(pool, att, e->att, t, e->asp_conv.w, e->asp_conv.b, C, 1, 1, 1, 0, 0, QTTS_PAD_ZERO,
                               alpha, NULL, err))
            goto done;
        stats_job aj = {mfa, alpha, t, pooled, pooled + C};
        qtts_parallel_for(pool, C, 16, softmax_rows, &aj);
        qtts_parallel_for(pool, C, 16, stats_rows, &aj);
        if (tap) tap(tap_ctx, "spk_asp_out", pooled, 2 * C, 1);
        if (qtts_conv1d_padded(pool, pooled, 2 * C, 1, e->fc.w, e->fc.b, e->dim, 1, 1, 1, 0, 0, QTTS_PAD_ZERO, xvec,
                               NULL, err))
            goto done;
        if (tap) tap(tap_ctx, "spk_embedding", xvec, e->dim, 1);
    }
    rc = 0;
done:
    free(xin);
    free(h0);
    free(cats);
    free(tmp1);
    free(tmp2);
    free(mfa);
    free(alpha);
    free(att);
    free(stats);
    if (rc) qtts_fail_prefix(err, "speaker encoder");
    return rc;
}

int qtts_spk_encoder_embed(const qtts_spk_encoder *e, qtts_pool *pool, const float *wav, int64_t n, float *xvec,
                           qtts_stage_tap tap, void *tap_ctx, qtts_err *err) {
    int64_t min = qtts_spk_encoder_min_samples(e);
    if (n < min)
        return qtts_fail(err, "speaker encoder: reference audio of %lld samples is too short (need at least %lld, "
                              "%.3f s)",
                         (long long)n, (long long)min, (double)min / (double)e->sample_rate);
    int64_t frames = qtts_mel_frames(e->mel, n);
    float *mel = qtts_malloc((size_t)(frames * e->mel_dim) * sizeof(float), err);
    if (!mel) return -1;
    int rc = qtts_mel_compute(e->mel, pool, wav, n, mel, err);
    if (!rc && tap) tap(tap_ctx, "spk_mel", mel, frames, e->mel_dim);
    if (!rc) rc = qtts_spk_encoder_forward_mel(e, pool, mel, frames, xvec, tap, tap_ctx, err);
    free(mel);
    return rc;
}
