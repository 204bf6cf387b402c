/* config.json and generation_config.json. One table per official config
 * class (qwen_tts/core/models/configuration_qwen3_tts.py); a key that is
 * absent takes that class's default, so the terse published files (which omit
 * every default, e.g. a Base speaker_encoder_config of only enc_dim and
 * sample_rate) load as the reference loads them. */
#include "model/config.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "io/config_fields.h"
#include "io/json_util.h"

#define M(member) offsetof(qtts_model_config, member)
#define NOT_STORED CFG_NOT_STORED
#define INT_DEFAULT(k, m, d, lo_, hi_, w) \
    {.key = k, .kind = CFG_INT, .need = CFG_DEFAULT, .offset = M(m), .def = d, .lo = lo_, .hi = hi_, .why = w}
#define INT_REQUIRED(k, m, lo_, hi_, w) \
    {.key = k, .kind = CFG_INT, .need = CFG_REQUIRED, .offset = M(m), .lo = lo_, .hi = hi_, .why = w}
#define INT_DERIVED(k, m, lo_, hi_, w) \
    {.key = k, .kind = CFG_INT, .need = CFG_DERIVED, .offset = M(m), .lo = lo_, .hi = hi_, .why = w}
#define NUM_DEFAULT(k, m, d, lo_, hi_, w) \
    {.key = k, .kind = CFG_NUM, .need = CFG_DEFAULT, .offset = M(m), .def = d, .lo = lo_, .hi = hi_, .why = w}
#define LIST5_DEFAULT(k, m, d, lo_, hi_, w)                                                                   \
    {.key = k, .kind = CFG_INT_LIST, .need = CFG_DEFAULT, .offset = M(m), .def_list = d, .def_count = 5,     \
     .list_max = 5, .count_offset = NOT_STORED, .lo = lo_, .hi = hi_, .why = w}
#define ONLY_BOOL(k, v, w) {.key = k, .kind = CFG_BOOL, .offset = NOT_STORED, .def = 0, .only = v, .why = w}
#define ONLY_STR(k, v, w) {.key = k, .kind = CFG_STR, .offset = NOT_STORED, .only = v, .why = w}

enum { VOCAB_MAX = 1 << 24 };

/* Why the special ids have no default: Qwen3TTSTalkerConfig's defaults
 * (codec_pad_id 4196, ...) belong to a 4096-entry codec vocabulary no shipped
 * checkpoint has, and a wrong control id is caught by nothing: it just makes
 * bad audio. Every published config carries them. */
#define CODEC_ID_WHY "class default (4196..4205) fits no shipped codec vocabulary; a wrong id goes unnoticed"

static const cfg_field talker_fields[] = {
    INT_DEFAULT("hidden_size", talker.hidden, 1024, 1, 65536, "a wrong value fails the tensor shape checks"),
    INT_REQUIRED("num_hidden_layers", talker.layers, 1, 256,
                 "class default 20 matches no shipped model (28), and missing layers would go unnoticed"),
    INT_DEFAULT("num_attention_heads", talker.heads, 16, 1, 1024, "as shipped"),
    INT_DEFAULT("num_key_value_heads", talker.kv_heads, 2, 1, 1024,
                "class default; shipped 8 (a wrong value fails the tensor shape checks)"),
    INT_DERIVED("head_dim", talker.head_dim, 2, 4096, "absent: hidden_size / num_attention_heads (as the reference)"),
    INT_DEFAULT("intermediate_size", talker.intermediate, 2048, 1, 1 << 20,
                "class default; shipped 3072 / 6144 (a wrong value fails the tensor shape checks)"),
    INT_DEFAULT("vocab_size", talker.vocab, 3072, 2, VOCAB_MAX, "codec vocabulary, as shipped"),
    NUM_DEFAULT("rms_norm_eps", talker.rms_eps, 1e-6, 1e-12, 1, "as shipped"),
    NUM_DEFAULT("rope_theta", talker.rope_theta, 10000, 1, 1e12, "class default; the shipped files say 1000000"),
    INT_DEFAULT("num_code_groups", num_code_groups, 32, 2, 64, "class default; the shipped files say 16"),
    INT_REQUIRED("text_vocab_size", text_vocab, 1, VOCAB_MAX, "no class default (the reference reads it directly)"),
    INT_DEFAULT("text_hidden_size", text_hidden, 2048, 1, 65536, "as shipped"),
    INT_REQUIRED("codec_pad_id", codec_pad, 0, VOCAB_MAX, CODEC_ID_WHY),
    INT_REQUIRED("codec_bos_id", codec_bos, 0, VOCAB_MAX, CODEC_ID_WHY),
    INT_REQUIRED("codec_eos_token_id", codec_eos, 0, VOCAB_MAX, CODEC_ID_WHY),
    INT_REQUIRED("codec_think_id", think, 0, VOCAB_MAX, CODEC_ID_WHY),
    INT_REQUIRED("codec_nothink_id", nothink, 0, VOCAB_MAX, CODEC_ID_WHY),
    INT_REQUIRED("codec_think_bos_id", think_bos, 0, VOCAB_MAX, CODEC_ID_WHY),
    INT_REQUIRED("codec_think_eos_id", think_eos, 0, VOCAB_MAX, CODEC_ID_WHY),
    ONLY_STR("hidden_act", "silu", "the engine implements SwiGLU"),
    ONLY_BOOL("attention_bias", "false", "no bias tensors are loaded"),
    ONLY_BOOL("use_sliding_window", "false", "attention is full causal"),
};

static const cfg_field code_predictor_fields[] = {
    INT_DEFAULT("hidden_size", cp.hidden, 1024, 1, 65536, "as shipped"),
    INT_DEFAULT("num_hidden_layers", cp.layers, 5, 1, 256, "as shipped"),
    INT_DEFAULT("num_attention_heads", cp.heads, 16, 1, 1024, "as shipped"),
    INT_DEFAULT("num_key_value_heads", cp.kv_heads, 8, 1, 1024, "as shipped"),
    INT_DEFAULT("head_dim", cp.head_dim, 128, 2, 4096, "as shipped"),
    INT_DEFAULT("intermediate_size", cp.intermediate, 3072, 1, 1 << 20, "as shipped"),
    INT_DEFAULT("vocab_size", cp.vocab, 2048, 2, VOCAB_MAX, "codebook size, as shipped"),
    NUM_DEFAULT("rms_norm_eps", cp.rms_eps, 1e-6, 1e-12, 1, "as shipped"),
    NUM_DEFAULT("rope_theta", cp.rope_theta, 10000, 1, 1e12, "class default; the shipped files say 1000000"),
    INT_DEFAULT("num_code_groups", cp_code_groups, 32, 2, 64, "must equal the talker's"),
    ONLY_STR("hidden_act", "silu", "the engine implements SwiGLU"),
    ONLY_BOOL("attention_bias", "false", "no bias tensors are loaded"),
    ONLY_BOOL("use_sliding_window", "false", "attention is full causal"),
};

static const int64_t spk_channels_default[5] = {512, 512, 512, 512, 1536};
static const int64_t spk_kernels_default[5] = {5, 3, 3, 3, 1};
static const int64_t spk_dilations_default[5] = {1, 2, 3, 4, 1};

static const cfg_field speaker_encoder_fields[] = {
    INT_DEFAULT("mel_dim", spk_mel_dim, 128, 1, 4096, "as shipped"),
    INT_DEFAULT("enc_dim", spk_enc_dim, 1024, 1, 65536, "must equal the talker hidden size"),
    LIST5_DEFAULT("enc_channels", spk_channels, spk_channels_default, 1, 65536, "as shipped"),
    LIST5_DEFAULT("enc_kernel_sizes", spk_kernels, spk_kernels_default, 1, 63, "as shipped"),
    LIST5_DEFAULT("enc_dilations", spk_dilations, spk_dilations_default, 1, 64, "as shipped"),
    INT_DEFAULT("enc_attention_channels", spk_attention_channels, 128, 1, 65536, "as shipped"),
    INT_DEFAULT("enc_res2net_scale", spk_res2net_scale, 8, 1, 64, "as shipped"),
    INT_DEFAULT("enc_se_channels", spk_se_channels, 128, 1, 65536, "as shipped"),
    INT_DEFAULT("sample_rate", spk_sample_rate, 24000, 8000, 192000, "as shipped"),
};

static const cfg_field top_fields[] = {
    ONLY_STR("model_type", "qwen3_tts", "the model family"),
    ONLY_STR("tokenizer_type", "qwen3_tts_tokenizer_12hz", "only the 12 Hz speech tokenizer is implemented"),
    INT_DEFAULT("im_start_token_id", im_start, 151644, 0, VOCAB_MAX, "as shipped"),
    INT_DEFAULT("im_end_token_id", im_end, 151645, 0, VOCAB_MAX, "as shipped"),
    INT_DEFAULT("tts_pad_token_id", tts_pad, 151671, 0, VOCAB_MAX, "as shipped"),
    INT_DEFAULT("tts_bos_token_id", tts_bos, 151672, 0, VOCAB_MAX, "as shipped"),
    INT_DEFAULT("tts_eos_token_id", tts_eos, 151673, 0, VOCAB_MAX, "as shipped"),
    /* Not a class field (the reference never reads it); the id of "assistant"
     * in the Qwen2 vocabulary every checkpoint ships, used to check prompts. */
    INT_DEFAULT("assistant_token_id", assistant, 77091, 0, VOCAB_MAX, "id of \"assistant\" in the shipped vocabulary"),
};

#define N(a) (sizeof a / sizeof a[0])

static int read_named(const cJSON *o, qtts_named_id *out, int *n, const char *what, qtts_err *err) {
    *n = 0;
    if (!o || cJSON_IsNull(o)) return 0;
    if (!cJSON_IsObject(o)) return qtts_fail(err, "%s: expected an object of name: id", what);
    for (const cJSON *it = o->child; it; it = it->next) {
        if (*n >= QTTS_MAX_NAMED_IDS) return qtts_fail(err, "%s: more than %d entries", what, QTTS_MAX_NAMED_IDS);
        if (!json_is_uint(it) || strlen(it->string) >= QTTS_NAME_LEN) {
            char text[64];
            cfg_value_text(it, text, sizeof text);
            return qtts_fail(err, "%s.%s: expected a non-negative integer id, got %s", what, it->string, text);
        }
        qtts_named_id *e = &out[(*n)++];
        memset(e, 0, sizeof *e);
        snprintf(e->name, sizeof e->name, "%s", it->string);
        e->id = (int64_t)it->valuedouble;
    }
    return 0;
}

/* rope_scaling. The talker's configs carry an interleaved multimodal RoPE
 * ({"interleaved": true, "mrope_section": [24, 20, 20], "rope_type": "default"}).
 * For TTS the reference builds position ids as one row repeated for all three
 * axes (get_rope_index expands the same cumsum 3 times), so whichever axis a
 * frequency is taken from, its angle is position x inv_freq: the result is
 * plain NeoX RoPE, which is what the engine computes. Anything that would
 * change the frequencies (another rope_type, sections that do not cover
 * head_dim / 2) is refused. */
static int check_rope_scaling(const cJSON *obj, const qtts_lm_config *lm, int mrope, const char *what,
                              qtts_err *err) {
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(obj, "rope_scaling");
    if (!rs || cJSON_IsNull(rs)) return 0;
    char text[96];
    cfg_value_text(rs, text, sizeof text);
    if (!cJSON_IsObject(rs)) return qtts_fail(err, "%s.rope_scaling: expected an object or null, got %s", what, text);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
    if (!type) type = cJSON_GetObjectItemCaseSensitive(rs, "type");
    if (type && !(cJSON_IsString(type) && !strcmp(type->valuestring, "default")))
        return qtts_fail(err, "%s.rope_scaling: only rope_type \"default\" is supported, got %s", what, text);
    const cJSON *inter = cJSON_GetObjectItemCaseSensitive(rs, "interleaved");
    if (inter && !cJSON_IsBool(inter))
        return qtts_fail(err, "%s.rope_scaling.interleaved: expected true or false, got %s", what, text);
    const cJSON *sec = cJSON_GetObjectItemCaseSensitive(rs, "mrope_section");
    if (!mrope || !sec || cJSON_IsNull(sec)) return 0;
    int64_t sum = 0;
    int ok = cJSON_IsArray(sec) && cJSON_GetArraySize(sec) > 0;
    for (const cJSON *it = ok ? sec->child : NULL; it; it = it->next) {
        if (!json_is_uint(it)) ok = 0;
        else sum += (int64_t)it->valuedouble;
    }
    if (!ok || sum * 2 != lm->head_dim)
        return qtts_fail(err, "%s.rope_scaling.mrope_section: expected non-negative integers summing to head_dim / 2 = "
                              "%lld, got %s", what, (long long)lm->head_dim / 2, text);
    return 0;
}

/* transformers 5 moves rope_theta into rope_parameters; take it from there when
 * the plain key is absent. */
static int read_rope_parameters(const cJSON *obj, qtts_lm_config *lm, const char *what, qtts_err *err) {
    if (cJSON_GetObjectItemCaseSensitive(obj, "rope_theta")) return 0;
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(obj, "rope_parameters");
    if (!rp || cJSON_IsNull(rp)) return 0;
    static const cfg_field f[] = {
        {.key = "rope_theta", .kind = CFG_NUM, .need = CFG_DEFAULT, .offset = offsetof(qtts_lm_config, rope_theta),
         .def = 10000, .lo = 1, .hi = 1e12},
        ONLY_STR("rope_type", "default", ""),
    };
    char w[PATH_MAX + 96];
    snprintf(w, sizeof w, "%s.rope_parameters", what);
    if (!cJSON_IsObject(rp)) return qtts_fail(err, "%s: expected an object", w);
    return cfg_read_fields(rp, f, N(f), lm, w, err);
}

/* layer_types (when present) must be all full attention. */
static int check_layer_types(const cJSON *obj, const char *what, qtts_err *err) {
    const cJSON *lt = cJSON_GetObjectItemCaseSensitive(obj, "layer_types");
    if (!lt || cJSON_IsNull(lt)) return 0;
    int ok = cJSON_IsArray(lt);
    for (const cJSON *it = ok ? lt->child : NULL; it; it = it->next)
        if (!cJSON_IsString(it) || strcmp(it->valuestring, "full_attention")) ok = 0;
    if (ok) return 0;
    char text[96];
    cfg_value_text(lt, text, sizeof text);
    return qtts_fail(err, "%s.layer_types: only \"full_attention\" layers are supported, got %s", what, text);
}

/* obj may be NULL (an absent code_predictor_config). mrope: whether this
 * stack applies rope_scaling's sections (the talker) or ignores them (the code
 * predictor uses plain RoPE whatever they say). */
static int finish_lm(const cJSON *obj, qtts_lm_config *lm, int mrope, const char *what, qtts_err *err) {
    if (lm->head_dim < 0) lm->head_dim = lm->hidden / lm->heads;
    if (lm->heads % lm->kv_heads || lm->head_dim < 2 || lm->head_dim % 2)
        return qtts_fail(err, "%s: inconsistent sizes (num_attention_heads %lld must be a multiple of "
                              "num_key_value_heads %lld; head_dim %lld must be even)",
                         what, (long long)lm->heads, (long long)lm->kv_heads, (long long)lm->head_dim);
    if (read_rope_parameters(obj, lm, what, err) || check_rope_scaling(obj, lm, mrope, what, err) ||
        check_layer_types(obj, what, err))
        return -1;
    return 0;
}

static int read_variant(qtts_model_config *cfg, const cJSON *root, const char *name, qtts_err *err) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "tts_model_type");
    if (!t) return qtts_fail(err, "%s: missing \"tts_model_type\" (is this a Qwen3-TTS model folder?)", name);
    char text[64];
    cfg_value_text(t, text, sizeof text);
    if (!cJSON_IsString(t)) return qtts_fail(err, "%s: tts_model_type: expected a string, got %s", name, text);
    if (!strcmp(t->valuestring, "base")) cfg->variant = QTTS_VARIANT_BASE;
    else if (!strcmp(t->valuestring, "custom_voice")) cfg->variant = QTTS_VARIANT_CUSTOM_VOICE;
    else if (!strcmp(t->valuestring, "voice_design")) cfg->variant = QTTS_VARIANT_VOICE_DESIGN;
    else return qtts_fail(err, "%s: tts_model_type: expected base, custom_voice or voice_design, got %s", name, text);
    const cJSON *size = cJSON_GetObjectItemCaseSensitive(root, "tts_model_size");
    if (size && !cJSON_IsNull(size)) {
        cfg_value_text(size, text, sizeof text);
        if (!cJSON_IsString(size) || strlen(size->valuestring) >= sizeof cfg->size)
            return qtts_fail(err, "%s: tts_model_size: expected a short string such as \"0b6\", got %s", name, text);
        snprintf(cfg->size, sizeof cfg->size, "%s", size->valuestring);
    }
    return 0;
}

static int check_ids(const qtts_model_config *cfg, const char *name, qtts_err *err) {
    const struct {
        const char *key;
        int64_t id, limit;
    } ids[] = {
        {"talker_config.codec_pad_id", cfg->codec_pad, cfg->talker.vocab},
        {"talker_config.codec_bos_id", cfg->codec_bos, cfg->talker.vocab},
        {"talker_config.codec_eos_token_id", cfg->codec_eos, cfg->talker.vocab},
        {"talker_config.codec_think_id", cfg->think, cfg->talker.vocab},
        {"talker_config.codec_nothink_id", cfg->nothink, cfg->talker.vocab},
        {"talker_config.codec_think_bos_id", cfg->think_bos, cfg->talker.vocab},
        {"talker_config.codec_think_eos_id", cfg->think_eos, cfg->talker.vocab},
        {"tts_pad_token_id", cfg->tts_pad, cfg->text_vocab},
        {"tts_bos_token_id", cfg->tts_bos, cfg->text_vocab},
        {"tts_eos_token_id", cfg->tts_eos, cfg->text_vocab},
        {"im_start_token_id", cfg->im_start, cfg->text_vocab},
        {"im_end_token_id", cfg->im_end, cfg->text_vocab},
        {"assistant_token_id", cfg->assistant, cfg->text_vocab},
    };
    for (size_t i = 0; i < N(ids); i++)
        if (ids[i].id >= ids[i].limit)
            return qtts_fail(err, "%s: %s: %lld is outside the vocabulary (%lld entries)", name, ids[i].key,
                             (long long)ids[i].id, (long long)ids[i].limit);
    for (int i = 0; i < cfg->n_languages; i++)
        if (cfg->languages[i].id >= cfg->talker.vocab)
            return qtts_fail(err, "%s: talker_config.codec_language_id.%s: %lld is outside the codec vocabulary (%lld)",
                             name, cfg->languages[i].name, (long long)cfg->languages[i].id,
                             (long long)cfg->talker.vocab);
    for (int i = 0; i < cfg->n_speakers; i++)
        if (cfg->speakers[i].id >= cfg->talker.vocab)
            return qtts_fail(err, "%s: talker_config.spk_id.%s: %lld is outside the codec vocabulary (%lld)", name,
                             cfg->speakers[i].name, (long long)cfg->speakers[i].id, (long long)cfg->talker.vocab);
    return 0;
}

static int read_speakers(qtts_model_config *cfg, const cJSON *tk, const char *what, qtts_err *err) {
    char w[PATH_MAX + 96];
    snprintf(w, sizeof w, "%s.codec_language_id", what);
    if (read_named(cJSON_GetObjectItemCaseSensitive(tk, "codec_language_id"), cfg->languages, &cfg->n_languages, w,
                   err))
        return -1;
    snprintf(w, sizeof w, "%s.spk_id", what);
    if (read_named(cJSON_GetObjectItemCaseSensitive(tk, "spk_id"), cfg->speakers, &cfg->n_speakers, w, err)) return -1;
    const cJSON *dialects = cJSON_GetObjectItemCaseSensitive(tk, "spk_is_dialect");
    if (dialects && !cJSON_IsNull(dialects) && !cJSON_IsObject(dialects))
        return qtts_fail(err, "%s.spk_is_dialect: expected an object of name: false or dialect", what);
    for (const cJSON *d = cJSON_IsObject(dialects) ? dialects->child : NULL; d; d = d->next)
        if (!(cJSON_IsFalse(d) || cJSON_IsNull(d) || (cJSON_IsString(d) && strlen(d->valuestring) < QTTS_NAME_LEN))) {
            char text[64];
            cfg_value_text(d, text, sizeof text);
            return qtts_fail(err, "%s.spk_is_dialect.%s: expected false or a dialect name, got %s", what, d->string,
                             text);
        }
    for (int i = 0; i < cfg->n_speakers; i++) {
        const cJSON *d = dialects ? cJSON_GetObjectItemCaseSensitive(dialects, cfg->speakers[i].name) : NULL;
        if (cJSON_IsString(d)) snprintf(cfg->speakers[i].dialect, QTTS_NAME_LEN, "%s", d->valuestring);
    }
    return 0;
}

int qtts_model_config_parse(qtts_model_config *cfg, const cJSON *root, const char *name, qtts_err *err) {
    memset(cfg, 0, sizeof *cfg);
    if (!cJSON_IsObject(root)) return qtts_fail(err, "%s: expected a JSON object", name);
    if (read_variant(cfg, root, name, err)) return -1;
    char what[PATH_MAX + 64];
    const cJSON *tk, *cp, *se;
    if (cfg_read_fields(root, top_fields, N(top_fields), cfg, name, err)) return -1;
    if (cfg_object(root, "talker_config", 1, &tk, name, err)) return -1;
    snprintf(what, sizeof what, "%s: talker_config", name);
    if (cfg_read_fields(tk, talker_fields, N(talker_fields), cfg, what, err) || finish_lm(tk, &cfg->talker, 1, what, err) ||
        read_speakers(cfg, tk, what, err))
        return -1;
    /* Qwen3TTSTalkerConfig builds a default code predictor when the key is absent. */
    if (cfg_object(tk, "code_predictor_config", 0, &cp, what, err)) return -1;
    snprintf(what, sizeof what, "%s: talker_config.code_predictor_config", name);
    if (cfg_read_fields(cp, code_predictor_fields, N(code_predictor_fields), cfg, what, err) ||
        finish_lm(cp, &cfg->cp, 0, what, err))
        return -1;
    if (cfg->cp_code_groups != cfg->num_code_groups)
        return qtts_fail(err, "%s.num_code_groups: %lld differs from talker_config.num_code_groups %lld", what,
                         (long long)cfg->cp_code_groups, (long long)cfg->num_code_groups);
    if (check_ids(cfg, name, err)) return -1;
    /* Qwen3TTSConfig builds a default speaker encoder config when absent; only
     * Base checkpoints have the speaker-encoder weights. */
    if (cfg_object(root, "speaker_encoder_config", 0, &se, name, err)) return -1;
    if (cfg->variant == QTTS_VARIANT_BASE) {
        snprintf(what, sizeof what, "%s: speaker_encoder_config", name);
        cfg->has_speaker_encoder = 1;
        if (cfg_read_fields(se, speaker_encoder_fields, N(speaker_encoder_fields), cfg, what, err)) return -1;
        if (cfg->spk_enc_dim != cfg->talker.hidden)
            return qtts_fail(err, "%s.enc_dim: %lld differs from the talker hidden size %lld", what,
                             (long long)cfg->spk_enc_dim, (long long)cfg->talker.hidden);
    }
    return 0;
}

int qtts_model_config_load(qtts_model_config *cfg, const char *dir, qtts_err *err) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/config.json", dir);
    cJSON *root = json_load_file(path, err);
    if (!root) {
        memset(cfg, 0, sizeof *cfg);
        return -1;
    }
    int rc = qtts_model_config_parse(cfg, root, path, err);
    cJSON_Delete(root);
    return rc;
}

/* generation_config.json: the defaults are those of the shipped file (the
 * reference reads the file; without one it would use generate()'s own). */
#define G(member) offsetof(qtts_generation_config, member)
#define GEN_NUM(k, m, d, lo_, hi_) \
    {.key = k, .kind = CFG_NUM, .offset = G(m), .def = d, .lo = lo_, .hi = hi_, .why = "as shipped"}
#define GEN_INT(k, m, d, lo_, hi_) \
    {.key = k, .kind = CFG_INT, .offset = G(m), .def = d, .lo = lo_, .hi = hi_, .why = "as shipped"}
#define GEN_BOOL(k, m, d) {.key = k, .kind = CFG_BOOL, .offset = G(m), .def = d, .why = "as shipped"}

static const cfg_field generation_fields[] = {
    GEN_BOOL("do_sample", do_sample, 1),
    GEN_NUM("temperature", temperature, 0.9, 1e-6, 100),
    GEN_NUM("top_p", top_p, 1.0, 1e-9, 1),
    GEN_INT("top_k", top_k, 50, 0, VOCAB_MAX),
    GEN_NUM("repetition_penalty", repetition_penalty, 1.05, 1e-6, 100),
    GEN_INT("max_new_tokens", max_new_tokens, 8192, 1, 1 << 20),
    GEN_BOOL("subtalker_dosample", cp_do_sample, 1),
    GEN_NUM("subtalker_temperature", cp_temperature, 0.9, 1e-6, 100),
    GEN_NUM("subtalker_top_p", cp_top_p, 1.0, 1e-9, 1),
    GEN_INT("subtalker_top_k", cp_top_k, 50, 0, VOCAB_MAX),
};

/* The defaults are the table's: reading "no object" sets every field to them. */
void qtts_generation_config_defaults(qtts_generation_config *g) {
    memset(g, 0, sizeof *g);
    (void)cfg_read_fields(NULL, generation_fields, N(generation_fields), g, "", NULL);
}

int qtts_generation_config_parse(qtts_generation_config *g, const cJSON *root, const char *name, qtts_err *err) {
    qtts_generation_config_defaults(g);
    if (!cJSON_IsObject(root)) return qtts_fail(err, "%s: expected a JSON object", name);
    return cfg_read_fields(root, generation_fields, N(generation_fields), g, name, err);
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
    int rc = qtts_generation_config_parse(g, root, path, err);
    cJSON_Delete(root);
    return rc;
}

static void table_head(FILE *out, const char *file) {
    fprintf(out, "\n%s\n\n| key | type | when absent | accepted | why |\n|---|---|---|---|---|\n", file);
}

void qtts_config_describe(FILE *out) {
    table_head(out, "config.json");
    fprintf(out, "| tts_model_type | string | required | base, custom_voice, voice_design | selects the prompt "
                 "layout and the weights |\n");
    fprintf(out, "| tts_model_size | string | default none | any | \"0b6\": a CustomVoice model without instruct |\n");
    cfg_describe_fields(out, "", top_fields, N(top_fields));
    cfg_describe_fields(out, "talker_config", talker_fields, N(talker_fields));
    fprintf(out, "| talker_config.rope_scaling | object | default null | null, or rope_type \"default\" with "
                 "mrope_section summing to head_dim / 2 | interleaved M-RoPE equals plain RoPE for TTS position ids |\n");
    fprintf(out, "| talker_config.rope_parameters.rope_theta | number | - | 1 .. 1e12 | transformers 5 spelling, "
                 "used when rope_theta is absent |\n");
    fprintf(out, "| talker_config.codec_language_id, spk_id | objects | default {} | ids inside the codec vocabulary "
                 "| languages and built-in speakers |\n");
    fprintf(out, "| talker_config.spk_is_dialect | object | default {} | false or a language name | the dialect a "
                 "speaker implies |\n");
    cfg_describe_fields(out, "talker_config.code_predictor_config", code_predictor_fields, N(code_predictor_fields));
    fprintf(out, "| talker_config.code_predictor_config.layer_types | string list | default all full | "
                 "full_attention | attention is full causal |\n");
    cfg_describe_fields(out, "speaker_encoder_config", speaker_encoder_fields, N(speaker_encoder_fields));
    table_head(out, "generation_config.json (a missing file gives these defaults)");
    cfg_describe_fields(out, "", generation_fields, N(generation_fields));
    table_head(out, "speech_tokenizer/config.json");
    qtts_codec_config_describe(out);
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

const char *qtts_language_alias(const char *name) {
    static const char *const codes[][2] = {
        {"zh", "chinese"}, {"en", "english"},    {"de", "german"},  {"es", "spanish"}, {"ja", "japanese"},
        {"fr", "french"},  {"ko", "korean"},     {"ru", "russian"}, {"it", "italian"}, {"pt", "portuguese"},
    };
    /* a region or script tag after the code (en-US, en_GB, zh-Hans-CN: BCP 47 and POSIX forms, as Wyoming
       clients send them) names the same language */
    size_t n = strlen(name);
    if (n > 3 && (name[2] == '-' || name[2] == '_')) n = 2;
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (n == 2 && !strncasecmp(name, codes[i][0], 2)) return codes[i][1];
    return name;
}

const qtts_named_id *qtts_config_language(const qtts_model_config *cfg, const char *name) {
    return find_named(cfg->languages, cfg->n_languages, qtts_language_alias(name));
}

const qtts_named_id *qtts_config_speaker(const qtts_model_config *cfg, const char *name) {
    return find_named(cfg->speakers, cfg->n_speakers, name);
}

/* name: id pairs (and the dialect each speaker implies) under parent. */
static int write_named(cJSON *parent, const char *key, const qtts_named_id *list, int n) {
    cJSON *o = cJSON_AddObjectToObject(parent, key);
    for (int i = 0; o && i < n; i++)
        if (!cJSON_AddNumberToObject(o, list[i].name, (double)list[i].id)) return -1;
    return o ? 0 : -1;
}

cJSON *qtts_model_config_to_json(const qtts_model_config *in) {
    qtts_model_config c = *in;
    c.cp_code_groups = c.num_code_groups; /* one value in the struct, written in both places */
    cJSON *root = cJSON_CreateObject(), *tk = NULL, *cp = NULL, *dia = NULL;
    int ok = root && cJSON_AddStringToObject(root, "tts_model_type", qtts_variant_name(c.variant)) &&
             (!c.size[0] || cJSON_AddStringToObject(root, "tts_model_size", c.size)) &&
             !cfg_write_fields(root, top_fields, N(top_fields), &c) &&
             (tk = cJSON_AddObjectToObject(root, "talker_config")) &&
             !cfg_write_fields(tk, talker_fields, N(talker_fields), &c) &&
             !write_named(tk, "codec_language_id", c.languages, c.n_languages) &&
             !write_named(tk, "spk_id", c.speakers, c.n_speakers) &&
             (dia = cJSON_AddObjectToObject(tk, "spk_is_dialect")) &&
             (cp = cJSON_AddObjectToObject(tk, "code_predictor_config")) &&
             !cfg_write_fields(cp, code_predictor_fields, N(code_predictor_fields), &c);
    for (int i = 0; ok && i < c.n_speakers; i++)
        ok = c.speakers[i].dialect[0] ? cJSON_AddStringToObject(dia, c.speakers[i].name, c.speakers[i].dialect) != NULL
                                      : cJSON_AddFalseToObject(dia, c.speakers[i].name) != NULL;
    if (ok && c.has_speaker_encoder) {
        cJSON *se = cJSON_AddObjectToObject(root, "speaker_encoder_config");
        ok = se && !cfg_write_fields(se, speaker_encoder_fields, N(speaker_encoder_fields), &c);
    }
    if (!ok) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}
