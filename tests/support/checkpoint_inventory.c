#include "support/checkpoint_inventory.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void add(inventory *inv, int ndim, int64_t d0, int64_t d1, int64_t d2, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static void add(inventory *inv, int ndim, int64_t d0, int64_t d1, int64_t d2, const char *fmt, ...) {
    if (inv->failed) return;
    if (inv->n == inv->cap) {
        int cap = inv->cap ? inv->cap * 2 : 512;
        inventory_tensor *t = realloc(inv->t, (size_t)cap * sizeof *t);
        if (!t) {
            inv->failed = 1;
            return;
        }
        inv->t = t;
        inv->cap = cap;
    }
    inventory_tensor *t = &inv->t[inv->n++];
    memset(t, 0, sizeof *t);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->name, sizeof t->name, fmt, ap);
    va_end(ap);
    t->ndim = ndim;
    t->shape[0] = d0, t->shape[1] = d1, t->shape[2] = d2;
}

#define VEC(n, ...) add(inv, 1, n, 0, 0, __VA_ARGS__)
#define MAT(r, c, ...) add(inv, 2, r, c, 0, __VA_ARGS__)
#define CONV(o, i, k, ...) add(inv, 3, o, i, k, __VA_ARGS__)

/* One Qwen3 decoder layer (talker, code predictor). */
static void lm_layer(inventory *inv, const char *prefix, int64_t i, const qtts_lm_config *c) {
    int64_t q = c->heads * c->head_dim, kv = c->kv_heads * c->head_dim;
    VEC(c->hidden, "%s.layers.%lld.input_layernorm.weight", prefix, (long long)i);
    MAT(q, c->hidden, "%s.layers.%lld.self_attn.q_proj.weight", prefix, (long long)i);
    MAT(kv, c->hidden, "%s.layers.%lld.self_attn.k_proj.weight", prefix, (long long)i);
    MAT(kv, c->hidden, "%s.layers.%lld.self_attn.v_proj.weight", prefix, (long long)i);
    MAT(c->hidden, q, "%s.layers.%lld.self_attn.o_proj.weight", prefix, (long long)i);
    VEC(c->head_dim, "%s.layers.%lld.self_attn.q_norm.weight", prefix, (long long)i);
    VEC(c->head_dim, "%s.layers.%lld.self_attn.k_norm.weight", prefix, (long long)i);
    VEC(c->hidden, "%s.layers.%lld.post_attention_layernorm.weight", prefix, (long long)i);
    MAT(c->intermediate, c->hidden, "%s.layers.%lld.mlp.gate_proj.weight", prefix, (long long)i);
    MAT(c->intermediate, c->hidden, "%s.layers.%lld.mlp.up_proj.weight", prefix, (long long)i);
    MAT(c->hidden, c->intermediate, "%s.layers.%lld.mlp.down_proj.weight", prefix, (long long)i);
}

static void conv_bias(inventory *inv, int64_t o, int64_t i, int64_t k, const char *name) {
    CONV(o, i, k, "speaker_encoder.%s.weight", name);
    VEC(o, "speaker_encoder.%s.bias", name);
}

static void speaker_encoder(inventory *inv, const qtts_model_config *c) {
    const int64_t *ch = c->spk_channels;
    char n[96];
    conv_bias(inv, ch[0], c->spk_mel_dim, c->spk_kernels[0], "blocks.0.conv");
    for (int b = 1; b <= 3; b++) {
        int64_t sub = ch[b] / c->spk_res2net_scale;
        snprintf(n, sizeof n, "blocks.%d.tdnn1.conv", b);
        conv_bias(inv, ch[b], ch[b - 1], 1, n);
        for (int64_t j = 0; j < c->spk_res2net_scale - 1; j++) {
            snprintf(n, sizeof n, "blocks.%d.res2net_block.blocks.%lld.conv", b, (long long)j);
            conv_bias(inv, sub, sub, c->spk_kernels[b], n);
        }
        snprintf(n, sizeof n, "blocks.%d.tdnn2.conv", b);
        conv_bias(inv, ch[b], ch[b], 1, n);
        snprintf(n, sizeof n, "blocks.%d.se_block.conv1", b);
        conv_bias(inv, c->spk_se_channels, ch[b], 1, n);
        snprintf(n, sizeof n, "blocks.%d.se_block.conv2", b);
        conv_bias(inv, ch[b], c->spk_se_channels, 1, n);
    }
    conv_bias(inv, ch[4], ch[1] + ch[2] + ch[3], c->spk_kernels[4], "mfa.conv");
    conv_bias(inv, c->spk_attention_channels, 3 * ch[4], 1, "asp.tdnn.conv");
    conv_bias(inv, ch[4], c->spk_attention_channels, 1, "asp.conv");
    conv_bias(inv, c->spk_enc_dim, 2 * ch[4], 1, "fc");
}

void inventory_model(inventory *inv, const qtts_model_config *c) {
    const qtts_lm_config *t = &c->talker, *p = &c->cp;
    MAT(c->text_vocab, c->text_hidden, "talker.model.text_embedding.weight");
    MAT(t->vocab, t->hidden, "talker.model.codec_embedding.weight");
    for (int64_t i = 0; i < t->layers; i++) lm_layer(inv, "talker.model", i, t);
    VEC(t->hidden, "talker.model.norm.weight");
    MAT(c->text_hidden, c->text_hidden, "talker.text_projection.linear_fc1.weight");
    VEC(c->text_hidden, "talker.text_projection.linear_fc1.bias");
    MAT(t->hidden, c->text_hidden, "talker.text_projection.linear_fc2.weight");
    VEC(t->hidden, "talker.text_projection.linear_fc2.bias");
    MAT(t->vocab, t->hidden, "talker.codec_head.weight");
    for (int64_t g = 0; g < c->num_code_groups - 1; g++) {
        MAT(p->vocab, t->hidden, "talker.code_predictor.model.codec_embedding.%lld.weight", (long long)g);
        MAT(p->vocab, p->hidden, "talker.code_predictor.lm_head.%lld.weight", (long long)g);
    }
    for (int64_t i = 0; i < p->layers; i++) lm_layer(inv, "talker.code_predictor.model", i, p);
    VEC(p->hidden, "talker.code_predictor.model.norm.weight");
    if (t->hidden != p->hidden) {
        MAT(p->hidden, t->hidden, "talker.code_predictor.small_to_mtp_projection.weight");
        VEC(p->hidden, "talker.code_predictor.small_to_mtp_projection.bias");
    }
    if (c->variant == QTTS_VARIANT_BASE) speaker_encoder(inv, c);
}

static void decoder(inventory *inv, const qtts_codec_config *cfg) {
    const __typeof__(cfg->dec) *d = &cfg->dec;
    int64_t half = d->codebook_dim / 2;
    static const char *const rvq[2] = {"rvq_first", "rvq_rest"};
    for (int r = 0; r < 2; r++) {
        CONV(half, d->codebook_dim, 1, "decoder.quantizer.%s.input_proj.weight", rvq[r]);
        CONV(d->codebook_dim, half, 1, "decoder.quantizer.%s.output_proj.weight", rvq[r]);
        int64_t layers = r == 0 ? 1 : d->num_quantizers - 1;
        for (int64_t l = 0; l < layers; l++) {
            VEC(d->codebook_size, "decoder.quantizer.%s.vq.layers.%lld._codebook.cluster_usage", rvq[r], (long long)l);
            MAT(d->codebook_size, half, "decoder.quantizer.%s.vq.layers.%lld._codebook.embedding_sum", rvq[r],
                (long long)l);
        }
    }
    CONV(d->latent_dim, d->codebook_dim, 3, "decoder.pre_conv.conv.weight");
    VEC(d->latent_dim, "decoder.pre_conv.conv.bias");
    const char *pt = "decoder.pre_transformer";
    MAT(d->hidden, d->latent_dim, "%s.input_proj.weight", pt);
    VEC(d->hidden, "%s.input_proj.bias", pt);
    MAT(d->latent_dim, d->hidden, "%s.output_proj.weight", pt);
    VEC(d->latent_dim, "%s.output_proj.bias", pt);
    VEC(d->hidden, "%s.norm.weight", pt);
    int64_t q = d->heads * d->head_dim, kv = d->kv_heads * d->head_dim;
    for (int64_t i = 0; i < d->layers; i++) {
        long long l = (long long)i;
        VEC(d->hidden, "%s.layers.%lld.input_layernorm.weight", pt, l);
        VEC(d->hidden, "%s.layers.%lld.post_attention_layernorm.weight", pt, l);
        VEC(d->hidden, "%s.layers.%lld.self_attn_layer_scale.scale", pt, l);
        VEC(d->hidden, "%s.layers.%lld.mlp_layer_scale.scale", pt, l);
        MAT(q, d->hidden, "%s.layers.%lld.self_attn.q_proj.weight", pt, l);
        MAT(kv, d->hidden, "%s.layers.%lld.self_attn.k_proj.weight", pt, l);
        MAT(kv, d->hidden, "%s.layers.%lld.self_attn.v_proj.weight", pt, l);
        MAT(d->hidden, q, "%s.layers.%lld.self_attn.o_proj.weight", pt, l);
        MAT(d->intermediate, d->hidden, "%s.layers.%lld.mlp.gate_proj.weight", pt, l);
        MAT(d->intermediate, d->hidden, "%s.layers.%lld.mlp.up_proj.weight", pt, l);
        MAT(d->hidden, d->intermediate, "%s.layers.%lld.mlp.down_proj.weight", pt, l);
    }
    int64_t L = d->latent_dim;
    for (int64_t j = 0; j < d->n_upsampling_ratios; j++) {
        long long u = (long long)j;
        CONV(L, L, d->upsampling_ratios[j], "decoder.upsample.%lld.0.conv.weight", u);
        VEC(L, "decoder.upsample.%lld.0.conv.bias", u);
        CONV(L, 1, 7, "decoder.upsample.%lld.1.dwconv.conv.weight", u);
        VEC(L, "decoder.upsample.%lld.1.dwconv.conv.bias", u);
        VEC(L, "decoder.upsample.%lld.1.norm.weight", u);
        VEC(L, "decoder.upsample.%lld.1.norm.bias", u);
        VEC(L, "decoder.upsample.%lld.1.gamma", u);
        MAT(4 * L, L, "decoder.upsample.%lld.1.pwconv1.weight", u);
        VEC(4 * L, "decoder.upsample.%lld.1.pwconv1.bias", u);
        MAT(L, 4 * L, "decoder.upsample.%lld.1.pwconv2.weight", u);
        VEC(L, "decoder.upsample.%lld.1.pwconv2.bias", u);
    }
    int64_t ch = d->decoder_dim;
    CONV(ch, L, 7, "decoder.decoder.0.conv.weight");
    VEC(ch, "decoder.decoder.0.conv.bias");
    for (int64_t b = 1; b <= d->n_upsample_rates; b++) {
        long long B = (long long)b;
        int64_t in = ch, out = ch / 2, r = d->upsample_rates[b - 1];
        VEC(in, "decoder.decoder.%lld.block.0.alpha", B);
        VEC(in, "decoder.decoder.%lld.block.0.beta", B);
        CONV(in, out, 2 * r, "decoder.decoder.%lld.block.1.conv.weight", B);
        VEC(out, "decoder.decoder.%lld.block.1.conv.bias", B);
        for (int u = 2; u <= 4; u++) {
            VEC(out, "decoder.decoder.%lld.block.%d.act1.alpha", B, u);
            VEC(out, "decoder.decoder.%lld.block.%d.act1.beta", B, u);
            CONV(out, out, 7, "decoder.decoder.%lld.block.%d.conv1.conv.weight", B, u);
            VEC(out, "decoder.decoder.%lld.block.%d.conv1.conv.bias", B, u);
            VEC(out, "decoder.decoder.%lld.block.%d.act2.alpha", B, u);
            VEC(out, "decoder.decoder.%lld.block.%d.act2.beta", B, u);
            CONV(out, out, 1, "decoder.decoder.%lld.block.%d.conv2.conv.weight", B, u);
            VEC(out, "decoder.decoder.%lld.block.%d.conv2.conv.bias", B, u);
        }
        ch = out;
    }
    long long last = (long long)d->n_upsample_rates + 1;
    VEC(ch, "decoder.decoder.%lld.alpha", last);
    VEC(ch, "decoder.decoder.%lld.beta", last);
    CONV(1, ch, 7, "decoder.decoder.%lld.conv.weight", last + 1);
    VEC(1, "decoder.decoder.%lld.conv.bias", last + 1);
}

static void encoder(inventory *inv, const qtts_codec_config *cfg) {
    const __typeof__(cfg->enc) *e = &cfg->enc;
    int64_t c = e->num_filters, idx = 0;
    CONV(c, 1, e->kernel_size, "encoder.encoder.layers.0.conv.weight");
    VEC(c, "encoder.encoder.layers.0.conv.bias");
    idx = 1;
    for (int64_t s = 0; s < e->n_ratios; s++) {
        for (int64_t j = 0; j < e->num_residual_layers; j++, idx++) {
            CONV(c / 2, c, e->residual_kernel_size, "encoder.encoder.layers.%lld.block.1.conv.weight", (long long)idx);
            VEC(c / 2, "encoder.encoder.layers.%lld.block.1.conv.bias", (long long)idx);
            CONV(c, c / 2, 1, "encoder.encoder.layers.%lld.block.3.conv.weight", (long long)idx);
            VEC(c, "encoder.encoder.layers.%lld.block.3.conv.bias", (long long)idx);
        }
        idx++; /* ELU */
        int64_t r = e->ratios[e->n_ratios - 1 - s];
        CONV(2 * c, c, 2 * r, "encoder.encoder.layers.%lld.conv.weight", (long long)idx);
        VEC(2 * c, "encoder.encoder.layers.%lld.conv.bias", (long long)idx);
        idx++;
        c *= 2;
    }
    idx++; /* ELU */
    CONV(e->hidden, c, e->last_kernel_size, "encoder.encoder.layers.%lld.conv.weight", (long long)idx);
    VEC(e->hidden, "encoder.encoder.layers.%lld.conv.bias", (long long)idx);
    const char *et = "encoder.encoder_transformer";
    int64_t h = e->hidden, q = e->heads * e->head_dim, kv = e->kv_heads * e->head_dim;
    for (int64_t i = 0; i < e->layers; i++) {
        long long l = (long long)i;
        VEC(h, "%s.layers.%lld.input_layernorm.weight", et, l);
        VEC(h, "%s.layers.%lld.input_layernorm.bias", et, l);
        VEC(h, "%s.layers.%lld.post_attention_layernorm.weight", et, l);
        VEC(h, "%s.layers.%lld.post_attention_layernorm.bias", et, l);
        MAT(q, h, "%s.layers.%lld.self_attn.q_proj.weight", et, l);
        MAT(kv, h, "%s.layers.%lld.self_attn.k_proj.weight", et, l);
        MAT(kv, h, "%s.layers.%lld.self_attn.v_proj.weight", et, l);
        MAT(h, q, "%s.layers.%lld.self_attn.o_proj.weight", et, l);
        MAT(e->intermediate, h, "%s.layers.%lld.mlp.fc1.weight", et, l);
        MAT(h, e->intermediate, "%s.layers.%lld.mlp.fc2.weight", et, l);
        VEC(h, "%s.layers.%lld.self_attn_layer_scale.scale", et, l);
        VEC(h, "%s.layers.%lld.mlp_layer_scale.scale", et, l);
    }
    CONV(h, h, 2 * e->compress, "encoder.downsample.conv.weight");
    static const char *const rvq[2] = {"semantic", "acoustic"};
    for (int r = 0; r < 2; r++) {
        CONV(e->codebook_dim, h, 1, "encoder.quantizer.%s_residual_vector_quantizer.input_proj.weight", rvq[r]);
        CONV(h, e->codebook_dim, 1, "encoder.quantizer.%s_residual_vector_quantizer.output_proj.weight", rvq[r]);
        int64_t layers = r == 0 ? e->num_semantic_quantizers : e->num_quantizers - e->num_semantic_quantizers;
        for (int64_t l = 0; l < layers; l++) {
            const char *p = "encoder.quantizer.%s_residual_vector_quantizer.layers.%lld.codebook.%s";
            VEC(1, p, rvq[r], (long long)l, "initialized");
            VEC(e->codebook_size, p, rvq[r], (long long)l, "cluster_usage");
            MAT(e->codebook_size, e->codebook_dim, p, rvq[r], (long long)l, "embed_sum");
        }
    }
}

void inventory_codec(inventory *inv, const qtts_codec_config *cfg) {
    decoder(inv, cfg);
    encoder(inv, cfg);
}

void inventory_free(inventory *inv) {
    free(inv->t);
    memset(inv, 0, sizeof *inv);
}

static int64_t numel(const inventory_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
    return n;
}

int64_t inventory_params(const inventory *inv) {
    int64_t n = 0;
    for (int i = 0; i < inv->n; i++) n += numel(&inv->t[i]);
    return n;
}

int inventory_write_sparse(const inventory *inv, const char *dtype, const char *path) {
    if (inv->failed) return -1;
    size_t esize = !strcmp(dtype, "F32") ? 4 : 2;
    size_t cap = 256 + (size_t)inv->n * 256, len = 0;
    char *h = malloc(cap);
    if (!h) return -1;
    len += (size_t)snprintf(h + len, cap - len, "{\"__metadata__\":{\"format\":\"pt\"}");
    uint64_t off = 0;
    for (int i = 0; i < inv->n; i++) {
        const inventory_tensor *t = &inv->t[i];
        uint64_t bytes = (uint64_t)numel(t) * esize;
        len += (size_t)snprintf(h + len, cap - len, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", t->name, dtype);
        for (int d = 0; d < t->ndim; d++)
            len += (size_t)snprintf(h + len, cap - len, "%s%lld", d ? "," : "", (long long)t->shape[d]);
        len += (size_t)snprintf(h + len, cap - len, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                                (unsigned long long)(off + bytes));
        off += bytes;
    }
    len += (size_t)snprintf(h + len, cap - len, "}");
    while (len % 8) h[len++] = ' ';
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    uint8_t hdr[8];
    for (int i = 0; i < 8; i++) hdr[i] = (uint8_t)((uint64_t)len >> (8 * i));
    int ok = fd >= 0 && write(fd, hdr, 8) == 8 && write(fd, h, len) == (ssize_t)len &&
             ftruncate(fd, (off_t)(8 + len + off)) == 0;
    if (fd >= 0 && close(fd)) ok = 0;
    free(h);
    return ok ? 0 : -1;
}
