#include "model/codec_random.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void qtts_codec_config_real(qtts_codec_config *c) {
    memset(c, 0, sizeof *c);
    c->sample_rate = 24000;
    c->input_sample_rate = 24000;
    c->frame_samples = 1920;
    c->encode_samples = 1920;
    c->valid_quantizers = 16;
    c->dec.codebook_size = 2048;
    c->dec.codebook_dim = 512;
    c->dec.latent_dim = 1024;
    c->dec.hidden = 512;
    c->dec.intermediate = 1024;
    c->dec.layers = 8;
    c->dec.heads = 16;
    c->dec.kv_heads = 16;
    c->dec.head_dim = 64;
    c->dec.num_quantizers = 16;
    c->dec.decoder_dim = 1536;
    c->dec.sliding_window = 72;
    const int64_t rates[] = {8, 5, 4, 3}, ratios[] = {2, 2};
    memcpy(c->dec.upsample_rates, rates, sizeof rates);
    c->dec.n_upsample_rates = 4;
    memcpy(c->dec.upsampling_ratios, ratios, sizeof ratios);
    c->dec.n_upsampling_ratios = 2;
    c->dec.rms_eps = 1e-5;
    c->dec.rope_theta = 10000.0;
    c->enc.num_filters = 64;
    c->enc.kernel_size = 7;
    c->enc.residual_kernel_size = 3;
    c->enc.last_kernel_size = 3;
    c->enc.num_residual_layers = 1;
    c->enc.dilation_growth_rate = 2;
    c->enc.compress = 2;
    const int64_t eratios[] = {8, 6, 5, 4};
    memcpy(c->enc.ratios, eratios, sizeof eratios);
    c->enc.n_ratios = 4;
    c->enc.hidden = 512;
    c->enc.intermediate = 2048;
    c->enc.layers = 8;
    c->enc.heads = 8;
    c->enc.kv_heads = 8;
    c->enc.head_dim = 64;
    c->enc.num_quantizers = 32;
    c->enc.num_semantic_quantizers = 1;
    c->enc.codebook_size = 2048;
    c->enc.codebook_dim = 256;
    c->enc.sliding_window = 250;
    c->enc.norm_eps = 1e-5;
    c->enc.rope_theta = 10000.0;
    c->enc.sampling_rate = 24000;
    c->enc.audio_channels = 1;
}

typedef struct {
    qtts_store *st;
    uint64_t s;
    qtts_err *err;
    int failed;
} gen;

static double uni(gen *g) { /* [0, 1) */
    g->s ^= g->s << 13;
    g->s ^= g->s >> 7;
    g->s ^= g->s << 17;
    return (double)(g->s >> 11) * (1.0 / 9007199254740992.0);
}

enum { K_WEIGHT, K_BIAS, K_ONE, K_SCALE, K_SNAKE, K_USAGE };

/* Adds one tensor; fan = fan-in for weights, mult scales the weight std. */
static float *add(gen *g, const char *name, int ndim, const int64_t *shape, int kind, double fan, double mult) {
    if (g->failed) return NULL;
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    float *p = malloc(sizeof(float) * (size_t)n);
    if (!p) {
        g->failed = 1;
        qtts_fail(g->err, "random store: out of memory for '%s'", name);
        return NULL;
    }
    double a = sqrt(3.0 / (fan > 0 ? fan : 1)) * mult; /* uniform with std 1/sqrt(fan) */
    for (int64_t i = 0; i < n; i++) {
        double u = uni(g) * 2.0 - 1.0;
        switch (kind) {
        case K_WEIGHT: p[i] = (float)(a * u); break;
        case K_BIAS: p[i] = (float)(0.05 * u); break;
        case K_ONE: p[i] = (float)(1.0 + 0.1 * u); break;
        case K_SCALE: p[i] = (float)(0.2 + 0.1 * u); break;
        case K_SNAKE: p[i] = (float)(0.3 * u); break;
        default: p[i] = (float)(0.5 + 1.5 * uni(g)); break; /* cluster usage */
        }
    }
    if (qtts_store_add(g->st, name, QTTS_F32, ndim, shape, p, 1, g->err)) {
        free(p);
        g->failed = 1;
        return NULL;
    }
    return p;
}

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define NDIM(...) ((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define ADD(g, name, kind, fan, mult, ...) add(g, name, NDIM(__VA_ARGS__), SHAPE(__VA_ARGS__), kind, fan, mult)

qtts_store *qtts_codec_random_store(const qtts_codec_config *cfg, uint64_t seed, qtts_err *err) {
    qtts_store *st = qtts_store_new(err);
    if (!st) return NULL;
    qtts_store_set_source(st, "random speech-tokenizer weights");
    gen G = {st, seed * 0x9E3779B97F4A7C15ull + 1, err, 0}, *g = &G;
    char n[256];
    int64_t cd = cfg->dec.codebook_dim, half = cd / 2, L = cfg->dec.latent_dim, Hd = cfg->dec.hidden;
    int64_t qd = cfg->dec.heads * cfg->dec.head_dim, kvd = cfg->dec.kv_heads * cfg->dec.head_dim;
    int64_t I = cfg->dec.intermediate, D = cfg->dec.decoder_dim, cb = cfg->dec.codebook_size;

    for (int64_t j = 0; j < cfg->dec.num_quantizers; j++) {
        const char *grp = j == 0 ? "rvq_first" : "rvq_rest";
        int64_t li = j == 0 ? 0 : j - 1;
        snprintf(n, sizeof n, "decoder.quantizer.%s.vq.layers.%lld._codebook.cluster_usage", grp, (long long)li);
        float *u = ADD(g, n, K_USAGE, 1, 1, cb);
        snprintf(n, sizeof n, "decoder.quantizer.%s.vq.layers.%lld._codebook.embedding_sum", grp, (long long)li);
        float *e = ADD(g, n, K_WEIGHT, 1, 0.25, cb, half);
        if (u && e)
            for (int64_t c = 0; c < cb; c++)
                for (int64_t i = 0; i < half; i++) e[c * half + i] *= u[c];
    }
    ADD(g, "decoder.quantizer.rvq_first.input_proj.weight", K_WEIGHT, cd, 1, half, cd, 1);
    ADD(g, "decoder.quantizer.rvq_rest.input_proj.weight", K_WEIGHT, cd, 1, half, cd, 1);
    ADD(g, "decoder.quantizer.rvq_first.output_proj.weight", K_WEIGHT, half, 1, cd, half, 1);
    ADD(g, "decoder.quantizer.rvq_rest.output_proj.weight", K_WEIGHT, half * 4, 1, cd, half, 1);
    ADD(g, "decoder.pre_conv.conv.weight", K_WEIGHT, cd * 3, 1, L, cd, 3);
    ADD(g, "decoder.pre_conv.conv.bias", K_BIAS, 0, 0, L);
    ADD(g, "decoder.pre_transformer.input_proj.weight", K_WEIGHT, L, 1, Hd, L);
    ADD(g, "decoder.pre_transformer.input_proj.bias", K_BIAS, 0, 0, Hd);
    ADD(g, "decoder.pre_transformer.output_proj.weight", K_WEIGHT, Hd, 1, L, Hd);
    ADD(g, "decoder.pre_transformer.output_proj.bias", K_BIAS, 0, 0, L);
    ADD(g, "decoder.pre_transformer.norm.weight", K_ONE, 0, 0, Hd);
    for (int64_t l = 0; l < cfg->dec.layers; l++) {
        char p[96];
        snprintf(p, sizeof p, "decoder.pre_transformer.layers.%lld", (long long)l);
#define LADD(sub, kind, fan, ...)                     \
    snprintf(n, sizeof n, "%s.%s", p, sub);           \
    ADD(g, n, kind, fan, 1, __VA_ARGS__);
        LADD("input_layernorm.weight", K_ONE, 0, Hd)
        LADD("post_attention_layernorm.weight", K_ONE, 0, Hd)
        LADD("self_attn_layer_scale.scale", K_SCALE, 0, Hd)
        LADD("mlp_layer_scale.scale", K_SCALE, 0, Hd)
        LADD("self_attn.q_proj.weight", K_WEIGHT, Hd, qd, Hd)
        LADD("self_attn.k_proj.weight", K_WEIGHT, Hd, kvd, Hd)
        LADD("self_attn.v_proj.weight", K_WEIGHT, Hd, kvd, Hd)
        LADD("self_attn.o_proj.weight", K_WEIGHT, qd, Hd, qd)
        LADD("mlp.gate_proj.weight", K_WEIGHT, Hd, I, Hd)
        LADD("mlp.up_proj.weight", K_WEIGHT, Hd, I, Hd)
        LADD("mlp.down_proj.weight", K_WEIGHT, I, Hd, I)
#undef LADD
    }
    for (int64_t u = 0; u < cfg->dec.n_upsampling_ratios; u++) {
        int64_t s = cfg->dec.upsampling_ratios[u];
        char p[96];
        snprintf(p, sizeof p, "decoder.upsample.%lld", (long long)u);
#define UADD(sub, kind, fan, ...)                     \
    snprintf(n, sizeof n, "%s.%s", p, sub);           \
    ADD(g, n, kind, fan, 1, __VA_ARGS__);
        UADD("0.conv.weight", K_WEIGHT, L, L, L, s)
        UADD("0.conv.bias", K_BIAS, 0, L)
        UADD("1.dwconv.conv.weight", K_WEIGHT, 7, L, 1, 7)
        UADD("1.dwconv.conv.bias", K_BIAS, 0, L)
        UADD("1.norm.weight", K_ONE, 0, L)
        UADD("1.norm.bias", K_BIAS, 0, L)
        UADD("1.gamma", K_SCALE, 0, L)
        UADD("1.pwconv1.weight", K_WEIGHT, L, 4 * L, L)
        UADD("1.pwconv1.bias", K_BIAS, 0, 4 * L)
        UADD("1.pwconv2.weight", K_WEIGHT, 4 * L, L, 4 * L)
        UADD("1.pwconv2.bias", K_BIAS, 0, L)
#undef UADD
    }
    ADD(g, "decoder.decoder.0.conv.weight", K_WEIGHT, L * 7, 1, D, L, 7);
    ADD(g, "decoder.decoder.0.conv.bias", K_BIAS, 0, 0, D);
    for (int64_t b = 0; b < cfg->dec.n_upsample_rates; b++) {
        int64_t in = D >> b, out = D >> (b + 1), r = cfg->dec.upsample_rates[b];
        snprintf(n, sizeof n, "decoder.decoder.%lld.block.0.alpha", (long long)b + 1);
        ADD(g, n, K_SNAKE, 0, 0, in);
        snprintf(n, sizeof n, "decoder.decoder.%lld.block.0.beta", (long long)b + 1);
        ADD(g, n, K_SNAKE, 0, 0, in);
        snprintf(n, sizeof n, "decoder.decoder.%lld.block.1.conv.weight", (long long)b + 1);
        ADD(g, n, K_WEIGHT, in * 2, 1, in, out, 2 * r);
        snprintf(n, sizeof n, "decoder.decoder.%lld.block.1.conv.bias", (long long)b + 1);
        ADD(g, n, K_BIAS, 0, 0, out);
        for (int ru = 2; ru <= 4; ru++) {
            const char *acts[] = {"act1.alpha", "act1.beta", "act2.alpha", "act2.beta"};
            for (int a = 0; a < 4; a++) {
                snprintf(n, sizeof n, "decoder.decoder.%lld.block.%d.%s", (long long)b + 1, ru, acts[a]);
                ADD(g, n, K_SNAKE, 0, 0, out);
            }
            snprintf(n, sizeof n, "decoder.decoder.%lld.block.%d.conv1.conv.weight", (long long)b + 1, ru);
            ADD(g, n, K_WEIGHT, out * 7, 1, out, out, 7);
            snprintf(n, sizeof n, "decoder.decoder.%lld.block.%d.conv1.conv.bias", (long long)b + 1, ru);
            ADD(g, n, K_BIAS, 0, 0, out);
            snprintf(n, sizeof n, "decoder.decoder.%lld.block.%d.conv2.conv.weight", (long long)b + 1, ru);
            ADD(g, n, K_WEIGHT, out, 0.3, out, out, 1);
            snprintf(n, sizeof n, "decoder.decoder.%lld.block.%d.conv2.conv.bias", (long long)b + 1, ru);
            ADD(g, n, K_BIAS, 0, 0, out);
        }
    }
    int64_t last = D >> cfg->dec.n_upsample_rates, nb = cfg->dec.n_upsample_rates;
    snprintf(n, sizeof n, "decoder.decoder.%lld.alpha", (long long)nb + 1);
    ADD(g, n, K_SNAKE, 0, 0, last);
    snprintf(n, sizeof n, "decoder.decoder.%lld.beta", (long long)nb + 1);
    ADD(g, n, K_SNAKE, 0, 0, last);
    snprintf(n, sizeof n, "decoder.decoder.%lld.conv.weight", (long long)nb + 2);
    ADD(g, n, K_WEIGHT, last * 7, 0.06, 1, last, 7);
    snprintf(n, sizeof n, "decoder.decoder.%lld.conv.bias", (long long)nb + 2);
    ADD(g, n, K_BIAS, 0, 0, 1);
    if (g->failed) {
        qtts_store_free(st);
        return NULL;
    }
    return st;
}
