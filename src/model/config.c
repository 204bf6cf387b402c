#include "model/config.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "io/json_util.h"

static int read_lm(const cJSON *o, qtts_lm_config *lm, const char *what, qtts_err *err) {
    if (!cJSON_IsObject(o)) return qtts_fail(err, "%s: missing object", what);
    if (json_int_req(o, "hidden_size", &lm->hidden, what, err) ||
        json_int_req(o, "num_hidden_layers", &lm->layers, what, err) ||
        json_int_req(o, "num_attention_heads", &lm->heads, what, err) ||
        json_int_req(o, "num_key_value_heads", &lm->kv_heads, what, err) ||
        json_int_req(o, "intermediate_size", &lm->intermediate, what, err) ||
        json_int_req(o, "vocab_size", &lm->vocab, what, err))
        return -1;
    lm->head_dim = json_int_or(o, "head_dim", lm->heads ? lm->hidden / lm->heads : 0);
    lm->rms_eps = json_num_or(o, "rms_norm_eps", 1e-6);
    lm->rope_theta = json_num_or(o, "rope_theta", 1e6);
    if (lm->hidden <= 0 || lm->layers <= 0 || lm->heads <= 0 || lm->kv_heads <= 0 || lm->head_dim <= 0 ||
        lm->intermediate <= 0 || lm->vocab <= 0 || lm->heads % lm->kv_heads || lm->head_dim % 2 ||
        lm->hidden > 65536 || lm->layers > 256 || lm->heads > 1024 || lm->intermediate > 1 << 20 ||
        lm->vocab > 1 << 24)
        return qtts_fail(err, "%s: inconsistent sizes (hidden %lld, layers %lld, heads %lld/%lld, head_dim %lld)", what,
                         (long long)lm->hidden, (long long)lm->layers, (long long)lm->heads, (long long)lm->kv_heads,
                         (long long)lm->head_dim);
    return 0;
}

static int read_named(const cJSON *o, qtts_named_id *out, int *n, const char *what, qtts_err *err) {
    *n = 0;
    if (!o) return 0;
    if (!cJSON_IsObject(o)) return qtts_fail(err, "%s: not an object", what);
    for (const cJSON *it = o->child; it; it = it->next) {
        if (*n >= QTTS_MAX_NAMED_IDS) return qtts_fail(err, "%s: too many entries", what);
        if (!json_is_uint(it) || strlen(it->string) >= QTTS_NAME_LEN)
            return qtts_fail(err, "%s: entry '%s' is not a valid id", what, it->string);
        qtts_named_id *e = &out[(*n)++];
        memset(e, 0, sizeof *e);
        snprintf(e->name, sizeof e->name, "%s", it->string);
        e->id = (int64_t)it->valuedouble;
    }
    return 0;
}

int qtts_model_config_load(qtts_model_config *cfg, const char *dir, qtts_err *err) {
    memset(cfg, 0, sizeof *cfg);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/config.json", dir);
    cJSON *root = json_load_file(path, err);
    if (!root) return -1;
    int rc = -1;
    const char *type = json_str_or(root, "tts_model_type", NULL);
    const cJSON *tk = json_path(root, "talker_config");
    char what[PATH_MAX + 64];
    if (!type) {
        qtts_fail(err, "%s: missing \"tts_model_type\" (is this a Qwen3-TTS model folder?)", path);
        goto done;
    }
    if (!strcmp(type, "base")) cfg->variant = QTTS_VARIANT_BASE;
    else if (!strcmp(type, "custom_voice")) cfg->variant = QTTS_VARIANT_CUSTOM_VOICE;
    else if (!strcmp(type, "voice_design")) cfg->variant = QTTS_VARIANT_VOICE_DESIGN;
    else {
        qtts_fail(err, "%s: unknown tts_model_type \"%s\"", path, type);
        goto done;
    }
    snprintf(cfg->size, sizeof cfg->size, "%s", json_str_or(root, "tts_model_size", ""));
    snprintf(what, sizeof what, "%s: talker_config", path);
    if (read_lm(tk, &cfg->talker, what, err)) goto done;
    snprintf(what, sizeof what, "%s: talker_config.code_predictor_config", path);
    if (read_lm(json_path(tk, "code_predictor_config"), &cfg->cp, what, err)) goto done;
    snprintf(what, sizeof what, "%s: talker_config", path);
    if (json_int_req(tk, "text_vocab_size", &cfg->text_vocab, what, err) ||
        json_int_req(tk, "text_hidden_size", &cfg->text_hidden, what, err))
        goto done;
    cfg->num_code_groups = json_int_or(tk, "num_code_groups", 16);
    if (cfg->num_code_groups < 2 || cfg->num_code_groups > 64) {
        qtts_fail(err, "%s: num_code_groups %lld out of range", what, (long long)cfg->num_code_groups);
        goto done;
    }
    struct {
        const cJSON *obj;
        const char *key;
        int64_t *out;
    } ids[] = {
        {tk, "codec_pad_id", &cfg->codec_pad},         {tk, "codec_bos_id", &cfg->codec_bos},
        {tk, "codec_eos_token_id", &cfg->codec_eos},   {tk, "codec_think_id", &cfg->think},
        {tk, "codec_nothink_id", &cfg->nothink},       {tk, "codec_think_bos_id", &cfg->think_bos},
        {tk, "codec_think_eos_id", &cfg->think_eos},   {root, "tts_pad_token_id", &cfg->tts_pad},
        {root, "tts_bos_token_id", &cfg->tts_bos},     {root, "tts_eos_token_id", &cfg->tts_eos},
        {root, "im_start_token_id", &cfg->im_start},   {root, "im_end_token_id", &cfg->im_end},
        {root, "assistant_token_id", &cfg->assistant},
    };
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        if (json_int_req(ids[i].obj, ids[i].key, ids[i].out, path, err)) goto done;
        int64_t limit = ids[i].obj == tk ? cfg->talker.vocab : cfg->text_vocab;
        if (*ids[i].out < 0 || *ids[i].out >= limit) {
            qtts_fail(err, "%s: %s = %lld is outside the vocabulary (%lld)", path, ids[i].key,
                      (long long)*ids[i].out, (long long)limit);
            goto done;
        }
    }
    snprintf(what, sizeof what, "%s: codec_language_id", path);
    if (read_named(json_path(tk, "codec_language_id"), cfg->languages, &cfg->n_languages, what, err)) goto done;
    snprintf(what, sizeof what, "%s: spk_id", path);
    if (read_named(json_path(tk, "spk_id"), cfg->speakers, &cfg->n_speakers, what, err)) goto done;
    for (int i = 0; i < cfg->n_languages; i++)
        if (cfg->languages[i].id >= cfg->talker.vocab) {
            qtts_fail(err, "%s: language id %lld out of range", path, (long long)cfg->languages[i].id);
            goto done;
        }
    const cJSON *dialects = json_path(tk, "spk_is_dialect");
    for (int i = 0; i < cfg->n_speakers; i++) {
        if (cfg->speakers[i].id >= cfg->talker.vocab) {
            qtts_fail(err, "%s: speaker id %lld out of range", path, (long long)cfg->speakers[i].id);
            goto done;
        }
        const cJSON *d = dialects ? cJSON_GetObjectItemCaseSensitive(dialects, cfg->speakers[i].name) : NULL;
        if (cJSON_IsString(d)) snprintf(cfg->speakers[i].dialect, QTTS_NAME_LEN, "%s", d->valuestring);
    }
    const cJSON *se = json_path(root, "speaker_encoder_config");
    if (cfg->variant == QTTS_VARIANT_BASE && !cJSON_IsObject(se)) {
        qtts_fail(err, "%s: a Base model needs \"speaker_encoder_config\"", path);
        goto done;
    }
    if (cJSON_IsObject(se)) {
        snprintf(what, sizeof what, "%s: speaker_encoder_config", path);
        cfg->has_speaker_encoder = 1;
        cfg->spk_mel_dim = json_int_or(se, "mel_dim", 128);
        cfg->spk_sample_rate = json_int_or(se, "sample_rate", 24000);
        if (json_int_req(se, "enc_dim", &cfg->spk_enc_dim, what, err) ||
            json_int_req(se, "enc_attention_channels", &cfg->spk_attention_channels, what, err) ||
            json_int_req(se, "enc_res2net_scale", &cfg->spk_res2net_scale, what, err) ||
            json_int_req(se, "enc_se_channels", &cfg->spk_se_channels, what, err))
            goto done;
        if (json_int_array(se, "enc_channels", cfg->spk_channels, 5, what, err) != 5 ||
            json_int_array(se, "enc_kernel_sizes", cfg->spk_kernels, 5, what, err) != 5 ||
            json_int_array(se, "enc_dilations", cfg->spk_dilations, 5, what, err) != 5) {
            qtts_fail(err, "%s: enc_channels, enc_kernel_sizes and enc_dilations need 5 entries each", what);
            goto done;
        }
        if (cfg->spk_enc_dim != cfg->talker.hidden) {
            qtts_fail(err, "%s: enc_dim %lld differs from the talker hidden size %lld", what,
                      (long long)cfg->spk_enc_dim, (long long)cfg->talker.hidden);
            goto done;
        }
    }
    rc = 0;
done:
    cJSON_Delete(root);
    return rc;
}

void qtts_generation_config_defaults(qtts_generation_config *g) {
    *g = (qtts_generation_config){
        .do_sample = 1, .temperature = 0.9, .top_p = 1.0, .repetition_penalty = 1.05, .top_k = 50,
        .max_new_tokens = 8192, .cp_do_sample = 1, .cp_temperature = 0.9, .cp_top_p = 1.0, .cp_top_k = 50,
    };
}

int qtts_generation_config_load(qtts_generation_config *g, const char *dir, qtts_err *err) {
    qtts_generation_config_defaults(g);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/generation_config.json", dir);
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    fclose(f);
    cJSON *root = json_load_file(path, err);
    if (!root) return -1;
    g->do_sample = json_bool_or(root, "do_sample", g->do_sample);
    g->temperature = json_num_or(root, "temperature", g->temperature);
    g->top_p = json_num_or(root, "top_p", g->top_p);
    g->top_k = json_int_or(root, "top_k", g->top_k);
    g->repetition_penalty = json_num_or(root, "repetition_penalty", g->repetition_penalty);
    g->max_new_tokens = json_int_or(root, "max_new_tokens", g->max_new_tokens);
    g->cp_do_sample = json_bool_or(root, "subtalker_dosample", g->cp_do_sample);
    g->cp_temperature = json_num_or(root, "subtalker_temperature", g->cp_temperature);
    g->cp_top_p = json_num_or(root, "subtalker_top_p", g->cp_top_p);
    g->cp_top_k = json_int_or(root, "subtalker_top_k", g->cp_top_k);
    cJSON_Delete(root);
    if (!(g->temperature > 0) || !(g->top_p > 0 && g->top_p <= 1) || g->top_k < 0 || !(g->repetition_penalty > 0) ||
        !(g->cp_temperature > 0) || !(g->cp_top_p > 0 && g->cp_top_p <= 1) || g->cp_top_k < 0 || g->max_new_tokens < 1)
        return qtts_fail(err, "%s: sampling values out of range", path);
    return 0;
}

int qtts_codec_config_load(qtts_codec_config *c, const char *dir, qtts_err *err) {
    memset(c, 0, sizeof *c);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/config.json", dir);
    cJSON *root = json_load_file(path, err);
    if (!root) return -1;
    int rc = -1;
    char what[PATH_MAX + 32];
    const char *mt = json_str_or(root, "model_type", "");
    if (strcmp(mt, "qwen3_tts_tokenizer_12hz") != 0) {
        qtts_fail(err, "%s: model_type \"%s\" is not qwen3_tts_tokenizer_12hz", path, mt);
        goto done;
    }
    c->sample_rate = json_int_or(root, "output_sample_rate", 24000);
    c->frame_samples = json_int_or(root, "decode_upsample_rate", 1920);
    c->valid_quantizers = json_int_or(root, "encoder_valid_num_quantizers", 16);
    const cJSON *d = json_path(root, "decoder_config");
    snprintf(what, sizeof what, "%s: decoder_config", path);
    if (!cJSON_IsObject(d)) {
        qtts_fail(err, "%s: missing object", what);
        goto done;
    }
    struct {
        const char *key;
        int64_t *out;
    } dk[] = {
        {"codebook_size", &c->dec.codebook_size}, {"codebook_dim", &c->dec.codebook_dim},
        {"latent_dim", &c->dec.latent_dim},       {"hidden_size", &c->dec.hidden},
        {"intermediate_size", &c->dec.intermediate}, {"num_hidden_layers", &c->dec.layers},
        {"num_attention_heads", &c->dec.heads},   {"num_key_value_heads", &c->dec.kv_heads},
        {"num_quantizers", &c->dec.num_quantizers}, {"decoder_dim", &c->dec.decoder_dim},
        {"sliding_window", &c->dec.sliding_window},
    };
    for (size_t i = 0; i < sizeof dk / sizeof dk[0]; i++)
        if (json_int_req(d, dk[i].key, dk[i].out, what, err)) goto done;
    c->dec.head_dim = json_int_or(d, "head_dim", c->dec.hidden / (c->dec.heads ? c->dec.heads : 1));
    c->dec.vq_hidden = json_int_or(d, "vector_quantization_hidden_dimension", c->dec.codebook_dim);
    c->dec.rms_eps = json_num_or(d, "rms_norm_eps", 1e-5);
    c->dec.rope_theta = json_num_or(d, "rope_theta", 1e4);
    int n = json_int_array(d, "upsample_rates", c->dec.upsample_rates, 8, what, err);
    if (n < 0) goto done;
    c->dec.n_upsample_rates = n;
    n = json_int_array(d, "upsampling_ratios", c->dec.upsampling_ratios, 8, what, err);
    if (n < 0) goto done;
    c->dec.n_upsampling_ratios = n;

    const cJSON *e = json_path(root, "encoder_config");
    snprintf(what, sizeof what, "%s: encoder_config", path);
    if (cJSON_IsObject(e)) {
        struct {
            const char *key;
            int64_t *out;
        } ek[] = {
            {"num_filters", &c->enc.num_filters},       {"kernel_size", &c->enc.kernel_size},
            {"residual_kernel_size", &c->enc.residual_kernel_size}, {"last_kernel_size", &c->enc.last_kernel_size},
            {"num_residual_layers", &c->enc.num_residual_layers}, {"dilation_growth_rate", &c->enc.dilation_growth_rate},
            {"compress", &c->enc.compress},             {"hidden_size", &c->enc.hidden},
            {"intermediate_size", &c->enc.intermediate}, {"num_hidden_layers", &c->enc.layers},
            {"num_attention_heads", &c->enc.heads},     {"num_key_value_heads", &c->enc.kv_heads},
            {"num_quantizers", &c->enc.num_quantizers}, {"codebook_size", &c->enc.codebook_size},
            {"codebook_dim", &c->enc.codebook_dim},
        };
        for (size_t i = 0; i < sizeof ek / sizeof ek[0]; i++)
            if (json_int_req(e, ek[i].key, ek[i].out, what, err)) goto done;
        c->enc.head_dim = json_int_or(e, "head_dim", c->enc.hidden / (c->enc.heads ? c->enc.heads : 1));
        c->enc.num_semantic_quantizers = json_int_or(e, "num_semantic_quantizers", 1);
        c->enc.vq_hidden = json_int_or(e, "vector_quantization_hidden_dimension", c->enc.codebook_dim);
        c->enc.sliding_window = json_int_or(e, "sliding_window", 250);
        c->enc.norm_eps = json_num_or(e, "norm_eps", 1e-5);
        c->enc.rope_theta = json_num_or(e, "rope_theta", 1e4);
        c->enc.layer_scale = json_num_or(e, "layer_scale_initial_scale", 0.01);
        n = json_int_array(e, "upsampling_ratios", c->enc.ratios, 8, what, err);
        if (n < 0) goto done;
        c->enc.n_ratios = n;
    }
    if (c->dec.codebook_size <= 0 || c->dec.num_quantizers <= 0 || c->dec.num_quantizers > 64 ||
        c->dec.heads <= 0 || c->dec.kv_heads <= 0 || c->dec.head_dim <= 0 || c->dec.layers < 0 ||
        c->frame_samples <= 0 || c->sample_rate <= 0) {
        qtts_fail(err, "%s: decoder sizes out of range", path);
        goto done;
    }
    rc = 0;
done:
    cJSON_Delete(root);
    return rc;
}

const char *qtts_variant_name(qtts_variant v) {
    switch (v) {
    case QTTS_VARIANT_BASE: return "base";
    case QTTS_VARIANT_CUSTOM_VOICE: return "custom_voice";
    case QTTS_VARIANT_VOICE_DESIGN: return "voice_design";
    }
    return "?";
}

static const qtts_named_id *find_named(const qtts_named_id *list, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!strcasecmp(list[i].name, name)) return &list[i];
    return NULL;
}

const qtts_named_id *qtts_config_language(const qtts_model_config *cfg, const char *name) {
    return find_named(cfg->languages, cfg->n_languages, name);
}

const qtts_named_id *qtts_config_speaker(const qtts_model_config *cfg, const char *name) {
    return find_named(cfg->speakers, cfg->n_speakers, name);
}
