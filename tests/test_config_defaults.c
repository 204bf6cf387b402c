/* The published config.json files omit every field whose official class
 * default applies. For each golden checkpoint this test removes from its
 * config files every field equal to the default of its official config class
 * (a table written here from configuration_qwen3_tts.py,
 * configuration_qwen3_tts_tokenizer_v2.py and transformers' MimiConfig,
 * independently of the loader's own table), then checks that
 *   - the stripped configs parse to exactly the same configuration,
 *   - the same plus HF-style extra keys (save_pretrained output) do too,
 *   - every golden case synthesized from the stripped folder is bit-identical
 *     to the full-config run (and within 1e-4 of the golden waveform),
 *   - mistyped or impossible values fail with one line naming file, key, value. */
#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "io/json_util.h"
#include "model/config.h"
#include "support/golden_cases.h"
#include "support/npy.h"
#include "support/test_util.h"

/* "derived" marks head_dim = hidden_size / num_attention_heads when absent. */
static const char *model_defaults =
    "{\"im_start_token_id\":151644,\"im_end_token_id\":151645,\"tts_pad_token_id\":151671,"
    "\"tts_bos_token_id\":151672,\"tts_eos_token_id\":151673,\"tokenizer_type\":null,\"tts_model_size\":null,"
    "\"talker_config\":{\"vocab_size\":3072,\"hidden_size\":1024,\"intermediate_size\":2048,"
    "\"num_hidden_layers\":20,\"num_attention_heads\":16,\"num_key_value_heads\":2,\"head_dim\":\"derived\","
    "\"hidden_act\":\"silu\",\"max_position_embeddings\":32768,\"initializer_range\":0.02,\"rms_norm_eps\":1e-6,"
    "\"use_cache\":true,\"tie_word_embeddings\":false,\"rope_theta\":10000,\"rope_scaling\":null,"
    "\"attention_bias\":false,\"use_sliding_window\":false,\"sliding_window\":4096,\"attention_dropout\":0,"
    "\"num_code_groups\":32,\"text_hidden_size\":2048,\"codec_eos_token_id\":4198,\"codec_think_id\":4202,"
    "\"codec_nothink_id\":4203,\"codec_think_bos_id\":4204,\"codec_think_eos_id\":4205,\"codec_pad_id\":4196,"
    "\"codec_bos_id\":4197,\"spk_id\":null,\"spk_is_dialect\":null,\"codec_language_id\":null,"
    "\"code_predictor_config\":{\"vocab_size\":2048,\"hidden_size\":1024,\"intermediate_size\":3072,"
    "\"num_hidden_layers\":5,\"num_attention_heads\":16,\"num_key_value_heads\":8,\"head_dim\":128,"
    "\"hidden_act\":\"silu\",\"max_position_embeddings\":32768,\"initializer_range\":0.02,\"rms_norm_eps\":1e-6,"
    "\"use_cache\":true,\"tie_word_embeddings\":false,\"rope_theta\":10000,\"rope_scaling\":null,"
    "\"attention_bias\":false,\"use_sliding_window\":false,\"sliding_window\":4096,\"max_window_layers\":28,"
    "\"layer_types\":null,\"attention_dropout\":0,\"num_code_groups\":32}},"
    "\"speaker_encoder_config\":{\"mel_dim\":128,\"enc_dim\":1024,\"enc_channels\":[512,512,512,512,1536],"
    "\"enc_kernel_sizes\":[5,3,3,3,1],\"enc_dilations\":[1,2,3,4,1],\"enc_attention_channels\":128,"
    "\"enc_res2net_scale\":8,\"enc_se_channels\":128,\"sample_rate\":24000}}";

static const char *codec_defaults =
    "{\"encoder_valid_num_quantizers\":16,\"input_sample_rate\":24000,\"output_sample_rate\":24000,"
    "\"decode_upsample_rate\":1920,\"encode_downsample_rate\":1920,"
    "\"decoder_config\":{\"codebook_size\":2048,\"hidden_size\":1024,\"latent_dim\":1024,"
    "\"max_position_embeddings\":8000,\"rope_theta\":10000,\"num_attention_heads\":16,\"num_key_value_heads\":16,"
    "\"attention_bias\":false,\"sliding_window\":72,\"intermediate_size\":3072,\"hidden_act\":\"silu\","
    "\"layer_scale_initial_scale\":0.01,\"rms_norm_eps\":1e-5,\"num_hidden_layers\":8,\"num_quantizers\":16,"
    "\"upsample_rates\":[8,5,4,3],\"upsampling_ratios\":[2,2],\"decoder_dim\":1536,\"attention_dropout\":0.0,"
    "\"head_dim\":\"derived\"},"
    "\"encoder_config\":{\"sampling_rate\":24000,\"frame_rate\":null,\"audio_channels\":1,\"hidden_size\":512,"
    "\"num_filters\":64,\"num_residual_layers\":1,\"upsampling_ratios\":[8,6,5,4],\"kernel_size\":7,"
    "\"last_kernel_size\":3,\"residual_kernel_size\":3,\"dilation_growth_rate\":2,\"use_causal_conv\":true,"
    "\"pad_mode\":\"constant\",\"compress\":2,\"trim_right_ratio\":1.0,\"codebook_size\":2048,\"codebook_dim\":256,"
    "\"num_quantizers\":32,\"use_conv_shortcut\":false,\"vector_quantization_hidden_dimension\":256,"
    "\"num_semantic_quantizers\":1,\"upsample_groups\":512,\"num_hidden_layers\":8,\"intermediate_size\":2048,"
    "\"num_attention_heads\":8,\"num_key_value_heads\":8,\"head_dim\":\"derived\",\"hidden_act\":\"gelu\","
    "\"max_position_embeddings\":8000,\"initializer_range\":0.02,\"norm_eps\":1e-5,\"use_cache\":false,"
    "\"use_streaming\":false,\"rope_theta\":10000,\"sliding_window\":250,\"attention_dropout\":0.0,"
    "\"layer_scale_initial_scale\":0.01,\"attention_bias\":false}}";

/* Removes from obj every key equal to its default; recurses into sub-configs. */
static int strip_defaults(cJSON *obj, const cJSON *defs) {
    int removed = 0;
    for (cJSON *it = obj->child, *next; it; it = next) {
        next = it->next;
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(defs, it->string);
        if (!d) continue;
        if (cJSON_IsObject(d) && cJSON_IsObject(it)) {
            removed += strip_defaults(it, d);
            continue;
        }
        int equal = cJSON_Compare(it, d, 1);
        if (cJSON_IsString(d) && !strcmp(d->valuestring, "derived")) {
            const cJSON *h = cJSON_GetObjectItemCaseSensitive(obj, "hidden_size");
            const cJSON *n = cJSON_GetObjectItemCaseSensitive(obj, "num_attention_heads");
            const cJSON *dh = cJSON_GetObjectItemCaseSensitive(defs, "hidden_size");
            const cJSON *dn = cJSON_GetObjectItemCaseSensitive(defs, "num_attention_heads");
            double hidden = h ? h->valuedouble : dh->valuedouble, heads = n ? n->valuedouble : dn->valuedouble;
            equal = cJSON_IsNumber(it) && heads > 0 && it->valuedouble == (double)((long long)hidden / (long long)heads);
        }
        if (equal) {
            cJSON_DeleteItemFromObjectCaseSensitive(obj, it->string);
            removed++;
        }
    }
    return removed;
}

/* What save_pretrained adds and the loader must ignore. */
static void add_extras(cJSON *obj) {
    cJSON_AddStringToObject(obj, "_name_or_path", "/models/Qwen3-TTS");
    cJSON *arch = cJSON_AddArrayToObject(obj, "architectures");
    cJSON_AddItemToArray(arch, cJSON_CreateString("Qwen3TTSForConditionalGeneration"));
    cJSON *id2label = cJSON_AddObjectToObject(obj, "id2label");
    cJSON_AddStringToObject(id2label, "0", "LABEL_0");
    cJSON_AddStringToObject(obj, "dtype", "bfloat16");
    cJSON_AddStringToObject(obj, "torch_dtype", "bfloat16");
    cJSON_AddStringToObject(obj, "transformers_version", "4.57.3");
    cJSON_AddNullToObject(obj, "bad_words_ids");
    cJSON *future = cJSON_AddObjectToObject(obj, "some_future_key");
    cJSON_AddItemToObject(future, "nested", cJSON_CreateIntArray((const int[]){1, 2, 3}, 3));
    for (cJSON *it = obj->child; it; it = it->next)
        if (cJSON_IsObject(it) && strstr(it->string, "_config")) add_extras(it);
}

static cJSON *load_json(const char *dir, const char *file) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    qtts_err err = {0};
    cJSON *j = json_load_file(path, &err);
    TEST_CHECK(j != NULL, "%s", err.msg);
    return j;
}

static int save_json(const char *path, const cJSON *j) {
    char *text = cJSON_Print(j);
    int rc = text ? write_text_file(path, text) : -1;
    free(text);
    return rc;
}

/* A copy of a golden model folder whose config files are given; every other
 * file is a symlink to the original. */
static int make_folder(const char *dst, const char *src, const cJSON *model_cfg, const cJSON *codec_cfg) {
    static const char *const links[] = {"generation_config.json", "merges.txt", "model.safetensors",
                                        "preprocessor_config.json", "tokenizer_config.json", "vocab.json",
                                        "speech_tokenizer/model.safetensors",
                                        "speech_tokenizer/preprocessor_config.json"};
    char a[PATH_MAX], b[PATH_MAX];
    snprintf(a, sizeof a, "%s/speech_tokenizer", dst);
    if (mkdir(dst, 0755) || mkdir(a, 0755)) return -1;
    for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
        snprintf(a, sizeof a, "%s/%s", src, links[i]);
        snprintf(b, sizeof b, "%s/%s", dst, links[i]);
        if (symlink(a, b)) return -1;
    }
    snprintf(a, sizeof a, "%s/config.json", dst);
    snprintf(b, sizeof b, "%s/speech_tokenizer/config.json", dst);
    return save_json(a, model_cfg) || save_json(b, codec_cfg) ? -1 : 0;
}

static void check_same_config(const cJSON *model_cfg, const cJSON *codec_cfg, const qtts_model_config *want_m,
                              const qtts_codec_config *want_c, const char *what) {
    qtts_model_config m;
    qtts_codec_config c;
    qtts_err err = {0};
    int rc = qtts_model_config_parse(&m, model_cfg, "config.json", &err);
    TEST_CHECK(rc == 0, "%s: config.json: %s", what, err.msg);
    if (rc == 0) TEST_CHECK(!memcmp(&m, want_m, sizeof m), "%s: config.json parses differently", what);
    rc = qtts_codec_config_parse(&c, codec_cfg, "speech_tokenizer/config.json", &err);
    TEST_CHECK(rc == 0, "%s: speech_tokenizer/config.json: %s", what, err.msg);
    if (rc == 0) TEST_CHECK(!memcmp(&c, want_c, sizeof c), "%s: speech_tokenizer/config.json parses differently", what);
}

/* Every golden case of this model: full folder vs the given copies. */
static void check_outputs(const char *model, const char *full_dir, const char *const *copies, int n_copies) {
    char err[512];
    qtts_engine *full = golden_engine(full_dir, err, sizeof err);
    TEST_CHECK(full != NULL, "%s: %s", full_dir, err);
    qtts_engine *other[2] = {NULL, NULL};
    for (int k = 0; k < n_copies; k++) {
        other[k] = golden_engine(copies[k], err, sizeof err);
        TEST_CHECK(other[k] != NULL, "%s: %s", copies[k], err);
    }
    for (size_t i = 0; full && i < golden_case_count; i++) {
        const golden_case *c = &golden_cases[i];
        if (strcmp(c->model, model)) continue;
        pcm_buf want = {0};
        int rc = golden_case_run(full, c, &want, err, sizeof err);
        TEST_CHECK(rc == 0, "%s (full config): %s", c->fixture, err);
        npy_array ref = {0};
        int have_ref = rc == 0 && npy_load_fixture(c->fixture, &ref) == 0;
        TEST_CHECK(rc != 0 || have_ref, "missing golden fixture %s", c->fixture);
        if (have_ref) {
            if (want.n == (size_t)ref.numel) TEST_NEAR(want.d, ref.f, want.n, 1e-4, c->fixture);
            else TEST_CHECK(0, "%s: %zu samples, golden %lld", c->fixture, want.n, (long long)ref.numel);
            npy_free(&ref);
        }
        for (int k = 0; k < n_copies && rc == 0; k++) {
            pcm_buf got = {0};
            if (!other[k]) break;
            int rk = golden_case_run(other[k], c, &got, err, sizeof err);
            TEST_CHECK(rk == 0, "%s (%s): %s", c->fixture, copies[k], err);
            TEST_CHECK(rk == 0 && got.n == want.n && !memcmp(got.d, want.d, got.n * sizeof *got.d),
                       "%s: %s is not bit-identical to the full-config run", c->fixture, copies[k]);
            free(got.d);
        }
        free(want.d);
    }
    for (int k = 0; k < n_copies; k++) qtts_engine_free(other[k]);
    qtts_engine_free(full);
}

/* Sets path (dotted, relative to root) to the JSON value text. */
static cJSON *mutated(const cJSON *root, const char *path, const char *value_json) {
    cJSON *copy = cJSON_Duplicate(root, 1);
    cJSON *obj = copy;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    char *key = buf;
    for (char *dot; (dot = strchr(key, '.'));) {
        *dot = 0;
        cJSON *next = cJSON_GetObjectItemCaseSensitive(obj, key);
        if (!next) next = cJSON_AddObjectToObject(obj, key);
        obj = next;
        key = dot + 1;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
    cJSON_AddItemToObject(obj, key, cJSON_Parse(value_json));
    return copy;
}

typedef struct {
    const char *path, *value, *expect; /* expect: a fragment the message must contain (besides the key) */
} mutation;

static void check_mistyped(const cJSON *model_cfg, const cJSON *codec_cfg, int base) {
    static const mutation model_cases[] = {
        {"talker_config.num_hidden_layers", "\"28\"", "expected an integer, got \"28\""},
        {"talker_config.hidden_size", "32.5", "expected an integer, got 32.5"},
        {"talker_config.num_key_value_heads", "0", "got 0"},
        {"talker_config.rope_theta", "\"1e6\"", "expected a number"},
        {"talker_config.rms_norm_eps", "true", "expected a number, got true"},
        {"talker_config.codec_eos_token_id", "-1", "got -1"},
        {"talker_config.codec_pad_id", "99999", "outside the vocabulary"},
        {"talker_config.num_code_groups", "8", "differs from talker_config.num_code_groups"},
        {"talker_config.hidden_act", "\"gelu\"", "supported: silu"},
        {"talker_config.attention_bias", "true", "only false is supported"},
        {"talker_config.rope_scaling", "{\"rope_type\":\"yarn\",\"factor\":4}", "only rope_type \"default\""},
        {"talker_config.rope_scaling", "{\"type\":\"default\",\"mrope_section\":[1,2,3],\"interleaved\":true}",
         "summing to head_dim / 2"},
        {"talker_config.rope_scaling", "[24,20,20]", "expected an object or null"},
        {"talker_config.spk_id", "[\"ryan\"]", "expected an object"},
        {"talker_config.codec_language_id", "{\"english\":\"2050\"}", "codec_language_id.english"},
        {"talker_config.spk_is_dialect", "{\"a\":1}", "spk_is_dialect"},
        {"talker_config.code_predictor_config", "16", "expected an object, got 16"},
        {"talker_config.code_predictor_config.head_dim", "[128]", "expected an integer"},
        {"talker_config.code_predictor_config.layer_types", "[\"sliding_attention\"]", "full_attention"},
        {"talker_config", "\"talker\"", "expected an object"},
        {"tts_model_type", "3", "expected a string, got 3"},
        {"tts_model_type", "\"base_v2\"", "expected base, custom_voice or voice_design"},
        {"tokenizer_type", "\"qwen3_tts_tokenizer_25hz\"", "supported: qwen3_tts_tokenizer_12hz"},
        {"im_start_token_id", "{}", "expected an integer, got {}"},
    };
    static const mutation spk_cases[] = {
        {"speaker_encoder_config.enc_channels", "[512,512]", "expected a list of 5 integers"},
        {"speaker_encoder_config.enc_kernel_sizes", "\"5,3,3,3,1\"", "expected a list"},
        {"speaker_encoder_config.enc_dim", "7", "differs from the talker hidden size"},
        {"speaker_encoder_config.enc_res2net_scale", "null", NULL}, /* null = absent: loads with the default */
        {"speaker_encoder_config", "[]", "expected an object"},
    };
    static const mutation codec_cases[] = {
        {"decoder_config.upsample_rates", "\"8543\"", "expected a list of integers"},
        {"decoder_config.upsample_rates", "[8,5,4]", "decode_upsample_rate"},
        {"decoder_config.codebook_dim", "\"512\"", "expected an integer"},
        {"decoder_config.num_quantizers", "1000", "expected a value in [1, 64]"},
        {"encoder_config.hidden_act", "\"relu\"", "supported: gelu"},
        {"encoder_config.use_causal_conv", "false", "only true is supported"},
        {"encoder_config.num_semantic_quantizers", "32", "must be below num_quantizers"},
        {"encoder_config.sampling_rate", "16000", "differs from input_sample_rate"},
        {"encoder_valid_num_quantizers", "1.5", "expected an integer"},
        {"model_type", "\"qwen3_tts\"", "supported: qwen3_tts_tokenizer_12hz"},
        {"decoder_config", "7", "expected an object"},
    };
    qtts_err err;
    qtts_model_config m;
    qtts_codec_config c;
    for (int set = 0; set < 3; set++) {
        const mutation *list = set == 0 ? model_cases : set == 1 ? spk_cases : codec_cases;
        size_t n = set == 0   ? sizeof model_cases / sizeof model_cases[0]
                   : set == 1 ? sizeof spk_cases / sizeof spk_cases[0]
                              : sizeof codec_cases / sizeof codec_cases[0];
        if (set == 1 && !base) continue;
        for (size_t i = 0; i < n; i++) {
            cJSON *bad = mutated(set == 2 ? codec_cfg : model_cfg, list[i].path, list[i].value);
            const char *file = set == 2 ? "speech_tokenizer/config.json" : "config.json";
            memset(&err, 0, sizeof err);
            int rc = set == 2 ? qtts_codec_config_parse(&c, bad, file, &err) : qtts_model_config_parse(&m, bad, file, &err);
            cJSON_Delete(bad);
            if (!list[i].expect) {
                TEST_CHECK(rc == 0, "%s = %s should load: %s", list[i].path, list[i].value, err.msg);
                continue;
            }
            const char *last = strrchr(list[i].path, '.');
            const char *key = last ? last + 1 : list[i].path;
            TEST_CHECK(rc != 0 && !strncmp(err.msg, file, strlen(file)) && strstr(err.msg, key) &&
                           strstr(err.msg, list[i].expect) && !strchr(err.msg, '\n'),
                       "%s = %s: want one line naming %s and \"%s\", got \"%s\"", list[i].path, list[i].value, file,
                       list[i].expect, err.msg);
        }
    }
}

int main(void) {
    static const char *const models[] = {"Qwen3-TTS-12Hz-0.6B-Base-tiny", "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny",
                                         "Qwen3-TTS-12Hz-1.7B-VoiceDesign-tiny"};
    char tmpl[] = "/tmp/qtts_cfgdef_XXXXXX";
    char *tmp = mkdtemp(tmpl);
    TEST_CHECK(tmp != NULL, "mkdtemp");
    if (!tmp) return test_finish("test_config_defaults");
    cJSON *mdefs = cJSON_Parse(model_defaults), *cdefs = cJSON_Parse(codec_defaults);
    TEST_CHECK(mdefs && cdefs, "default tables parse");
    for (size_t k = 0; mdefs && cdefs && k < sizeof models / sizeof models[0]; k++) {
        char src[PATH_MAX], tok[PATH_MAX + 32];
        golden_path(src, sizeof src, models[k]);
        snprintf(tok, sizeof tok, "%s/speech_tokenizer", src);
        qtts_model_config full_m;
        qtts_codec_config full_c;
        qtts_err err = {0};
        TEST_CHECK(qtts_model_config_load(&full_m, src, &err) == 0, "%s", err.msg);
        TEST_CHECK(qtts_codec_config_load(&full_c, tok, &err) == 0, "%s", err.msg);
        cJSON *mj = load_json(src, "config.json"), *cj = load_json(tok, "config.json");
        if (!mj || !cj) continue;
        int removed = strip_defaults(mj, mdefs), removed_codec = strip_defaults(cj, cdefs);
        printf("%s: removed %d default keys from config.json, %d from speech_tokenizer/config.json\n", models[k],
               removed, removed_codec);
        TEST_CHECK(removed >= 15 && removed_codec >= 30, "%s: too few defaults removed (%d, %d)", models[k], removed,
                   removed_codec);
        check_same_config(mj, cj, &full_m, &full_c, "stripped");
        cJSON *mx = cJSON_Duplicate(mj, 1), *cx = cJSON_Duplicate(cj, 1);
        add_extras(mx);
        add_extras(cx);
        check_same_config(mx, cx, &full_m, &full_c, "stripped + extra keys");

        char d1[PATH_MAX], d2[PATH_MAX];
        snprintf(d1, sizeof d1, "%s/stripped-%zu", tmp, k);
        snprintf(d2, sizeof d2, "%s/extras-%zu", tmp, k);
        TEST_CHECK(make_folder(d1, src, mj, cj) == 0 && make_folder(d2, src, mx, cx) == 0, "copies of %s", models[k]);
        const char *const copies[] = {d1, d2};
        check_outputs(models[k], src, copies, 2);
        check_mistyped(mj, cj, full_m.variant == QTTS_VARIANT_BASE);
        cJSON_Delete(mx);
        cJSON_Delete(cx);
        cJSON_Delete(mj);
        cJSON_Delete(cj);
    }
    cJSON_Delete(mdefs);
    cJSON_Delete(cdefs);
    rm_rf(tmp);
    return test_finish("test_config_defaults");
}
