/* speech_tokenizer/config.json: Qwen3TTSTokenizerV2Config with its decoder
 * config (configuration_qwen3_tts_tokenizer_v2.py) and a transformers
 * MimiConfig as the encoder config. As for config.json, every absent key takes
 * its class default (both sub-configs are built from {} when absent). */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "io/config_fields.h"
#include "io/json_util.h"
#include "model/config.h"

#define C(member) offsetof(qtts_codec_config, member)
#define INT_DEFAULT(k, m, d, lo_, hi_, w) \
    {.key = k, .kind = CFG_INT, .need = CFG_DEFAULT, .offset = C(m), .def = d, .lo = lo_, .hi = hi_, .why = w}
#define INT_REQUIRED(k, m, lo_, hi_, w) \
    {.key = k, .kind = CFG_INT, .need = CFG_REQUIRED, .offset = C(m), .lo = lo_, .hi = hi_, .why = w}
#define INT_DERIVED(k, m, lo_, hi_, w) \
    {.key = k, .kind = CFG_INT, .need = CFG_DERIVED, .offset = C(m), .lo = lo_, .hi = hi_, .why = w}
#define NUM_DEFAULT(k, m, d, lo_, hi_, w) \
    {.key = k, .kind = CFG_NUM, .need = CFG_DEFAULT, .offset = C(m), .def = d, .lo = lo_, .hi = hi_, .why = w}
#define LIST_DEFAULT(k, m, count, d, lo_, hi_, w)                                                               \
    {.key = k, .kind = CFG_INT_LIST, .need = CFG_DEFAULT, .offset = C(m), .def_list = d,                       \
     .def_count = (int)(sizeof d / sizeof d[0]), .list_max = 8, .count_offset = C(count), .lo = lo_, .hi = hi_, \
     .why = w}
#define ONLY_BOOL(k, v, w) {.key = k, .kind = CFG_BOOL, .offset = CFG_NOT_STORED, .only = v, .why = w}
#define ONLY_STR(k, v, w) {.key = k, .kind = CFG_STR, .offset = CFG_NOT_STORED, .only = v, .why = w}
#define N(a) (sizeof a / sizeof a[0])

static const cfg_field top_fields[] = {
    {.key = "model_type", .kind = CFG_STR, .need = CFG_REQUIRED, .offset = CFG_NOT_STORED,
     .only = "qwen3_tts_tokenizer_12hz", .why = "tells a speech-tokenizer folder from a model folder"},
    INT_DEFAULT("encoder_valid_num_quantizers", valid_quantizers, 16, 1, 64, "as shipped"),
    INT_DEFAULT("input_sample_rate", input_sample_rate, 24000, 8000, 192000, "as shipped"),
    INT_DEFAULT("output_sample_rate", sample_rate, 24000, 8000, 192000, "as shipped"),
    INT_DEFAULT("decode_upsample_rate", frame_samples, 1920, 1, 1 << 20, "must equal the product of the rates"),
    INT_DEFAULT("encode_downsample_rate", encode_samples, 1920, 1, 1 << 20, "must equal the encoder's hop"),
};

static const int64_t upsample_rates_default[] = {8, 5, 4, 3};
static const int64_t upsampling_ratios_default[] = {2, 2};

static const cfg_field decoder_fields[] = {
    INT_DEFAULT("codebook_size", dec.codebook_size, 2048, 2, 1 << 20, "as shipped"),
    INT_REQUIRED("codebook_dim", dec.codebook_dim, 2, 65536, "no class default (the reference reads it directly)"),
    INT_DEFAULT("latent_dim", dec.latent_dim, 1024, 1, 65536, "as shipped"),
    INT_DEFAULT("hidden_size", dec.hidden, 1024, 1, 65536,
                "class default; shipped 512 (a wrong value fails the tensor shape checks)"),
    INT_DEFAULT("intermediate_size", dec.intermediate, 3072, 1, 1 << 20,
                "class default; shipped 1024 (a wrong value fails the tensor shape checks)"),
    INT_DEFAULT("num_hidden_layers", dec.layers, 8, 0, 256, "as shipped"),
    INT_DEFAULT("num_attention_heads", dec.heads, 16, 1, 1024, "as shipped"),
    INT_DEFAULT("num_key_value_heads", dec.kv_heads, 16, 1, 1024, "as shipped"),
    INT_DERIVED("head_dim", dec.head_dim, 2, 4096, "absent: hidden_size / num_attention_heads (as the reference)"),
    INT_DEFAULT("num_quantizers", dec.num_quantizers, 16, 1, 64, "as shipped"),
    INT_DEFAULT("decoder_dim", dec.decoder_dim, 1536, 1, 65536, "as shipped"),
    INT_DEFAULT("sliding_window", dec.sliding_window, 72, 1, 1 << 20, "as shipped"),
    NUM_DEFAULT("rms_norm_eps", dec.rms_eps, 1e-5, 1e-12, 1, "as shipped"),
    NUM_DEFAULT("rope_theta", dec.rope_theta, 10000, 1, 1e12, "as shipped"),
    LIST_DEFAULT("upsample_rates", dec.upsample_rates, dec.n_upsample_rates, upsample_rates_default, 1, 64,
                 "as shipped"),
    LIST_DEFAULT("upsampling_ratios", dec.upsampling_ratios, dec.n_upsampling_ratios, upsampling_ratios_default, 1, 64,
                 "as shipped"),
    ONLY_STR("hidden_act", "silu", "the engine implements SwiGLU"),
    ONLY_BOOL("attention_bias", "false", "no bias tensors are loaded"),
};

static const int64_t mimi_ratios_default[] = {8, 6, 5, 4};

static const cfg_field encoder_fields[] = {
    INT_DEFAULT("sampling_rate", enc.sampling_rate, 24000, 8000, 192000, "must equal input_sample_rate"),
    INT_DEFAULT("audio_channels", enc.audio_channels, 1, 1, 1, "mono"),
    INT_DEFAULT("num_filters", enc.num_filters, 64, 1, 65536, "as shipped"),
    INT_DEFAULT("kernel_size", enc.kernel_size, 7, 1, 63, "as shipped"),
    INT_DEFAULT("residual_kernel_size", enc.residual_kernel_size, 3, 1, 63, "as shipped"),
    INT_DEFAULT("last_kernel_size", enc.last_kernel_size, 3, 1, 63, "as shipped"),
    INT_DEFAULT("num_residual_layers", enc.num_residual_layers, 1, 0, 8, "as shipped"),
    INT_DEFAULT("dilation_growth_rate", enc.dilation_growth_rate, 2, 1, 16, "as shipped"),
    INT_DEFAULT("compress", enc.compress, 2, 1, 16, "as shipped"),
    LIST_DEFAULT("upsampling_ratios", enc.ratios, enc.n_ratios, mimi_ratios_default, 1, 64, "as shipped"),
    INT_DEFAULT("hidden_size", enc.hidden, 512, 1, 65536, "as shipped"),
    INT_DEFAULT("intermediate_size", enc.intermediate, 2048, 1, 1 << 20, "as shipped"),
    INT_DEFAULT("num_hidden_layers", enc.layers, 8, 0, 256, "as shipped"),
    INT_DEFAULT("num_attention_heads", enc.heads, 8, 1, 1024, "as shipped"),
    INT_DEFAULT("num_key_value_heads", enc.kv_heads, 8, 1, 1024, "as shipped"),
    INT_DERIVED("head_dim", enc.head_dim, 2, 4096, "absent: hidden_size / num_attention_heads (as MimiConfig)"),
    INT_DEFAULT("num_quantizers", enc.num_quantizers, 32, 1, 64, "as shipped"),
    INT_DEFAULT("num_semantic_quantizers", enc.num_semantic_quantizers, 1, 1, 63, "must be below num_quantizers"),
    INT_DEFAULT("codebook_size", enc.codebook_size, 2048, 2, 1 << 20, "as shipped"),
    INT_DEFAULT("codebook_dim", enc.codebook_dim, 256, 1, 65536, "as shipped"),
    INT_DEFAULT("sliding_window", enc.sliding_window, 250, 1, 1 << 20, "as shipped (unused: see codec_encoder.c)"),
    NUM_DEFAULT("norm_eps", enc.norm_eps, 1e-5, 1e-12, 1, "as shipped"),
    NUM_DEFAULT("rope_theta", enc.rope_theta, 10000, 1, 1e12, "as shipped"),
    ONLY_BOOL("use_causal_conv", "true", "the encoder's convolutions are causal"),
    ONLY_BOOL("use_conv_shortcut", "false", "residual blocks add their input unchanged"),
    ONLY_STR("pad_mode", "constant", "causal padding with zeros"),
    ONLY_STR("hidden_act", "gelu", "the encoder transformer's MLP"),
    ONLY_BOOL("attention_bias", "false", "no bias tensors are loaded"),
};

static int read_sub(const cJSON *root, const char *key, const cfg_field *fields, size_t n, qtts_codec_config *c,
                    const char *name, qtts_err *err) {
    char what[PATH_MAX + 64];
    snprintf(what, sizeof what, "%s: %s", name, key);
    const cJSON *o;
    return cfg_object(root, key, 0, &o, name, err) || cfg_read_fields(o, fields, n, c, what, err) ? -1 : 0;
}

static int64_t product(const int64_t *v, int64_t n) {
    int64_t p = 1;
    for (int64_t i = 0; i < n; i++) p *= v[i];
    return p;
}

static int check_codec(qtts_codec_config *c, const char *name, qtts_err *err) {
    if (c->dec.head_dim < 0) c->dec.head_dim = c->dec.hidden / c->dec.heads;
    if (c->enc.head_dim < 0) c->enc.head_dim = c->enc.hidden / c->enc.heads;
    if (c->dec.heads % c->dec.kv_heads || c->dec.head_dim < 2 || c->dec.head_dim % 2)
        return qtts_fail(err, "%s: decoder_config: inconsistent attention sizes (heads %lld, kv heads %lld, head_dim "
                              "%lld)", name, (long long)c->dec.heads, (long long)c->dec.kv_heads,
                         (long long)c->dec.head_dim);
    if (c->enc.heads % c->enc.kv_heads || c->enc.head_dim < 2 || c->enc.head_dim % 2)
        return qtts_fail(err, "%s: encoder_config: inconsistent attention sizes (heads %lld, kv heads %lld, head_dim "
                              "%lld)", name, (long long)c->enc.heads, (long long)c->enc.kv_heads,
                         (long long)c->enc.head_dim);
    if (c->enc.num_semantic_quantizers >= c->enc.num_quantizers)
        return qtts_fail(err, "%s: encoder_config.num_semantic_quantizers: %lld must be below num_quantizers %lld",
                         name, (long long)c->enc.num_semantic_quantizers, (long long)c->enc.num_quantizers);
    int64_t decode_hop = product(c->dec.upsample_rates, c->dec.n_upsample_rates) *
                         product(c->dec.upsampling_ratios, c->dec.n_upsampling_ratios);
    if (decode_hop != c->frame_samples)
        return qtts_fail(err, "%s: decode_upsample_rate: %lld differs from the product of upsample_rates and "
                              "upsampling_ratios (%lld)", name, (long long)c->frame_samples, (long long)decode_hop);
    int64_t encode_hop = product(c->enc.ratios, c->enc.n_ratios) * c->enc.compress;
    if (encode_hop != c->encode_samples)
        return qtts_fail(err, "%s: encode_downsample_rate: %lld differs from the encoder's hop (upsampling_ratios x "
                              "compress = %lld)", name, (long long)c->encode_samples, (long long)encode_hop);
    if (c->enc.sampling_rate != c->input_sample_rate)
        return qtts_fail(err, "%s: encoder_config.sampling_rate: %lld differs from input_sample_rate %lld", name,
                         (long long)c->enc.sampling_rate, (long long)c->input_sample_rate);
    return 0;
}

int qtts_codec_config_parse(qtts_codec_config *c, const cJSON *root, const char *name, qtts_err *err) {
    memset(c, 0, sizeof *c);
    if (!cJSON_IsObject(root)) return qtts_fail(err, "%s: expected a JSON object", name);
    if (cfg_read_fields(root, top_fields, N(top_fields), c, name, err) ||
        read_sub(root, "decoder_config", decoder_fields, N(decoder_fields), c, name, err) ||
        read_sub(root, "encoder_config", encoder_fields, N(encoder_fields), c, name, err))
        return -1;
    return check_codec(c, name, err);
}

int qtts_codec_config_load(qtts_codec_config *c, const char *dir, qtts_err *err) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/config.json", dir);
    cJSON *root = json_load_file(path, err);
    if (!root) {
        memset(c, 0, sizeof *c);
        return -1;
    }
    int rc = qtts_codec_config_parse(c, root, path, err);
    cJSON_Delete(root);
    return rc;
}

void qtts_codec_config_describe(FILE *out) {
    cfg_describe_fields(out, "", top_fields, N(top_fields));
    cfg_describe_fields(out, "decoder_config", decoder_fields, N(decoder_fields));
    cfg_describe_fields(out, "encoder_config", encoder_fields, N(encoder_fields));
}

cJSON *qtts_codec_config_to_json(const qtts_codec_config *c) {
    cJSON *root = cJSON_CreateObject(), *dec = NULL, *enc = NULL;
    if (!root || cfg_write_fields(root, top_fields, N(top_fields), c) ||
        !(dec = cJSON_AddObjectToObject(root, "decoder_config")) ||
        cfg_write_fields(dec, decoder_fields, N(decoder_fields), c) ||
        !(enc = cJSON_AddObjectToObject(root, "encoder_config")) ||
        cfg_write_fields(enc, encoder_fields, N(encoder_fields), c)) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}
