/* The five published checkpoints and the bare speech tokenizer at their REAL
 * sizes, without downloading them: config files with exactly the keys and
 * values the published ones have (the Base speaker_encoder_config reduced to
 * enc_dim + sample_rate, as published), and safetensors files holding every
 * tensor of the inventory at the real shapes and dtypes, written as sparse
 * files (header + a hole: the weights read as zeros and cost neither disk nor
 * memory until touched). Checks:
 *   - the inventory generator reproduces every tensor name and shape of the
 *     golden checkpoints (so it is the official layout, not a guess);
 *   - `qtts info` prints the right variant, sizes and parameter counts (the
 *     spec's totals, 914.6 M for 0.6B-Base, 1928.7 M for 1.7B-Base, ...);
 *   - a 2-frame greedy `qtts say` runs to completion for every variant
 *     (x-vector and in-context cloning for Base), `qtts codec encode` for Base
 *     and the bare tokenizer, `qtts codec decode` for the bare tokenizer. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "io/store.h"
#include "model/config.h"
#include "support/checkpoint_inventory.h"
#include "support/test_util.h"

/* ---- the published config files ---------------------------------------- */

/* HF's PretrainedConfig dump inside the published code_predictor_config. */
#define HF_BOILERPLATE                                                                                           \
    "\"_name_or_path\":\"\",\"add_cross_attention\":false,\"architectures\":null,\"bad_words_ids\":null,"        \
    "\"begin_suppress_tokens\":null,\"bos_token_id\":null,\"chunk_size_feed_forward\":0,"                         \
    "\"cross_attention_hidden_size\":null,\"decoder_start_token_id\":null,\"diversity_penalty\":0.0,"             \
    "\"do_sample\":false,\"early_stopping\":false,\"encoder_no_repeat_ngram_size\":0,\"eos_token_id\":null,"      \
    "\"exponential_decay_length_penalty\":null,\"finetuning_task\":null,\"forced_bos_token_id\":null,"            \
    "\"forced_eos_token_id\":null,\"id2label\":{\"0\":\"LABEL_0\",\"1\":\"LABEL_1\"},\"is_decoder\":false,"        \
    "\"is_encoder_decoder\":false,\"label2id\":{\"LABEL_0\":0,\"LABEL_1\":1},\"length_penalty\":1.0,"             \
    "\"max_length\":20,\"min_length\":0,\"no_repeat_ngram_size\":0,\"num_beam_groups\":1,\"num_beams\":1,"        \
    "\"num_return_sequences\":1,\"output_attentions\":false,\"output_hidden_states\":false,\"output_scores\":false," \
    "\"pad_token_id\":null,\"prefix\":null,\"problem_type\":null,\"pruned_heads\":{},"                            \
    "\"remove_invalid_values\":false,\"repetition_penalty\":1.0,\"return_dict\":true,"                            \
    "\"return_dict_in_generate\":false,\"sep_token_id\":null,\"suppress_tokens\":null,"                          \
    "\"task_specific_params\":null,\"temperature\":1.0,\"tf_legacy_loss\":false,\"tie_encoder_decoder\":false,"    \
    "\"tie_word_embeddings\":false,\"tokenizer_class\":null,\"top_k\":50,\"top_p\":1.0,\"dtype\":null,"            \
    "\"torchscript\":false,\"typical_p\":1.0,\"use_bfloat16\":false,"

#define LANGUAGES                                                                                               \
    "\"chinese\":2055,\"english\":2050,\"german\":2053,\"italian\":2070,\"portuguese\":2071,\"spanish\":2054,"  \
    "\"japanese\":2058,\"korean\":2064,\"french\":2061,\"russian\":2069"
#define SPEAKERS                                                                                                \
    "\"spk_id\":{\"serena\":3066,\"vivian\":3065,\"uncle_fu\":3010,\"ryan\":3061,\"aiden\":2861,"                \
    "\"ono_anna\":2873,\"sohee\":2864,\"eric\":2875,\"dylan\":2878},"                                           \
    "\"spk_is_dialect\":{\"serena\":false,\"vivian\":false,\"uncle_fu\":false,\"ryan\":false,\"aiden\":false,"   \
    "\"ono_anna\":false,\"sohee\":false,\"eric\":\"sichuan_dialect\",\"dylan\":\"beijing_dialect\"},"

typedef struct {
    const char *name, *type, *size;
    int hidden, intermediate;
    double params_m;   /* the spec's total (section 11.1), millions */
    const char *voice; /* say options */
} variant;

static const variant variants[] = {
    {"Qwen3-TTS-12Hz-0.6B-Base", "base", "0b6", 1024, 3072, 914.6, NULL},
    {"Qwen3-TTS-12Hz-1.7B-Base", "base", "1b7", 2048, 6144, 1928.7, NULL},
    {"Qwen3-TTS-12Hz-0.6B-CustomVoice", "custom_voice", "0b6", 1024, 3072, 914.6 - 8.85, "--speaker ryan"},
    {"Qwen3-TTS-12Hz-1.7B-CustomVoice", "custom_voice", "1b7", 2048, 6144, 1928.7 - 12.00,
     "--speaker vivian --instruct 'Speak happily.'"},
    {"Qwen3-TTS-12Hz-1.7B-VoiceDesign", "voice_design", "1b7", 2048, 6144, 1928.7 - 12.00,
     "--instruct 'A calm, deep male voice.'"},
};

static char *model_config_json(const variant *v) {
    int base = !strcmp(v->type, "base"), cv = !strcmp(v->type, "custom_voice");
    char spk[96] = "";
    if (base) snprintf(spk, sizeof spk, "\"speaker_encoder_config\":{\"enc_dim\":%d,\"sample_rate\":24000},", v->hidden);
    size_t cap = 16384;
    char *s = malloc(cap);
    if (!s) return NULL;
    snprintf(s, cap,
             "{\"architectures\":[\"Qwen3TTSForConditionalGeneration\"],\"assistant_token_id\":77091,"
             "\"im_end_token_id\":151645,\"im_start_token_id\":151644,\"tts_bos_token_id\":151672,"
             "\"tts_eos_token_id\":151673,\"tts_pad_token_id\":151671,\"model_type\":\"qwen3_tts\","
             "\"tokenizer_type\":\"qwen3_tts_tokenizer_12hz\",\"tts_model_size\":\"%s\",\"tts_model_type\":\"%s\",%s"
             "\"talker_config\":{\"attention_bias\":false,\"attention_dropout\":0,"
             "\"code_predictor_config\":{" HF_BOILERPLATE
             "\"attention_bias\":false,\"attention_dropout\":0,\"head_dim\":128,\"hidden_act\":\"silu\","
             "\"hidden_size\":1024,\"initializer_range\":0.02,\"intermediate_size\":3072,"
             "\"layer_types\":[\"full_attention\",\"full_attention\",\"full_attention\",\"full_attention\","
             "\"full_attention\"],\"max_position_embeddings\":65536,\"max_window_layers\":28,"
             "\"model_type\":\"qwen3_tts_talker_code_predictor\",\"num_attention_heads\":16,\"num_code_groups\":16,"
             "\"num_hidden_layers\":5,\"num_key_value_heads\":8,\"rms_norm_eps\":1e-06,\"rope_scaling\":null,"
             "\"rope_theta\":1000000,\"sliding_window\":null,\"use_cache\":true,\"use_sliding_window\":false,"
             "\"vocab_size\":2048},"
             "\"codec_bos_id\":2149,\"codec_eos_token_id\":2150,\"codec_think_id\":2154,"
             "\"codec_language_id\":{" LANGUAGES "%s},"
             "\"codec_nothink_id\":2155,\"codec_pad_id\":2148,\"codec_think_bos_id\":2156,\"codec_think_eos_id\":2157,"
             "%s"
             "\"head_dim\":128,\"hidden_act\":\"silu\",\"hidden_size\":%d,\"initializer_range\":0.02,"
             "\"intermediate_size\":%d,\"max_position_embeddings\":32768,\"model_type\":\"qwen3_tts_talker\","
             "\"num_attention_heads\":16,\"num_code_groups\":16,\"num_hidden_layers\":28,\"num_key_value_heads\":8,"
             "\"position_id_per_seconds\":13,\"rms_norm_eps\":1e-06,"
             "\"rope_scaling\":{\"interleaved\":true,\"mrope_section\":[24,20,20],\"rope_type\":\"default\","
             "\"type\":\"default\"},\"rope_theta\":1000000,\"sliding_window\":null,\"text_hidden_size\":2048,"
             "\"text_vocab_size\":151936,\"use_cache\":true,\"use_sliding_window\":false,\"vocab_size\":3072,"
             "\"pad_token_id\":2148},\"transformers_version\":\"4.57.3\"}",
             v->size, v->type, spk, base ? "" : ",\"beijing_dialect\":2074,\"sichuan_dialect\":2062",
             cv ? SPEAKERS : "\"spk_id\":{},\"spk_is_dialect\":{},", v->hidden, v->intermediate);
    return s;
}

static const char *generation_config_json =
    "{\"do_sample\":true,\"repetition_penalty\":1.05,\"temperature\":0.9,\"top_p\":1.0,\"top_k\":50,"
    "\"subtalker_dosample\":true,\"subtalker_temperature\":0.9,\"subtalker_top_p\":1.0,\"subtalker_top_k\":50,"
    "\"max_new_tokens\":8192,\"transformers_version\":\"4.57.3\"}";

static const char *codec_config_json =
    "{\"architectures\":[\"Qwen3TTSTokenizerV2Model\"],\"model_type\":\"qwen3_tts_tokenizer_12hz\","
    "\"encoder_valid_num_quantizers\":16,\"input_sample_rate\":24000,\"output_sample_rate\":24000,"
    "\"decode_upsample_rate\":1920,"
    "\"decoder_config\":{\"attention_bias\":false,\"latent_dim\":1024,\"codebook_dim\":512,\"codebook_size\":2048,"
    "\"decoder_dim\":1536,\"hidden_act\":\"silu\",\"hidden_size\":512,\"intermediate_size\":1024,"
    "\"layer_scale_initial_scale\":0.01,\"max_position_embeddings\":8000,\"head_dim\":64,\"num_attention_heads\":16,"
    "\"num_hidden_layers\":8,\"num_key_value_heads\":16,\"num_quantizers\":16,\"num_semantic_quantizers\":1,"
    "\"rms_norm_eps\":1e-05,\"rope_theta\":10000,\"semantic_codebook_size\":4096,\"sliding_window\":72,"
    "\"upsample_rates\":[8,5,4,3],\"upsampling_ratios\":[2,2],\"vector_quantization_hidden_dimension\":512},"
    "\"encoder_config\":{\"_frame_rate\":12.5,\"audio_channels\":1,\"codebook_dim\":256,\"codebook_size\":2048,"
    "\"compress\":2,\"dilation_growth_rate\":2,\"head_dim\":64,\"hidden_act\":\"gelu\",\"hidden_size\":512,"
    "\"intermediate_size\":2048,\"kernel_size\":7,\"last_kernel_size\":3,\"layer_scale_initial_scale\":0.01,"
    "\"max_position_embeddings\":8000,\"model_type\":\"mimi\",\"norm_eps\":1e-05,\"num_attention_heads\":8,"
    "\"num_filters\":64,\"num_hidden_layers\":8,\"num_key_value_heads\":8,\"num_quantizers\":32,"
    "\"num_residual_layers\":1,\"num_semantic_quantizers\":1,\"pad_mode\":\"constant\",\"residual_kernel_size\":3,"
    "\"rope_theta\":10000.0,\"sampling_rate\":24000,\"sliding_window\":250,\"trim_right_ratio\":1.0,"
    "\"upsampling_ratios\":[8,6,5,4],\"use_causal_conv\":true,\"use_conv_shortcut\":false,"
    "\"vector_quantization_hidden_dimension\":256}}";

/* ---- helpers ------------------------------------------------------------- */

/* Runs a shell command; returns its exit status, stdout+stderr in out. */
static int run(const char *cmd, char *out, size_t cap) {
    size_t len = strlen(cmd) + 8;
    char *full = malloc(len);
    if (!full) return -1;
    snprintf(full, len, "%s 2>&1", cmd);
    int rc = test_run_capture(full, out, cap);
    free(full);
    return rc;
}

static int file_size_ok(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && sb.st_size > 44;
}

/* A 2 s mono 24 kHz 16-bit WAV: a chirp, so the front end sees real signal. */
static int write_reference_wav(const char *path) {
    enum { RATE = 24000, N = 2 * RATE };
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    uint32_t data = N * 2, riff = 36 + data;
    uint8_t h[44] = {'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'A', 'V', 'E', 'f', 'm', 't', ' ', 16, 0, 0, 0, 1, 0, 1, 0};
    for (int i = 0; i < 4; i++) h[4 + i] = (uint8_t)(riff >> (8 * i));
    uint32_t rate = RATE, bps = RATE * 2;
    for (int i = 0; i < 4; i++) h[24 + i] = (uint8_t)(rate >> (8 * i)), h[28 + i] = (uint8_t)(bps >> (8 * i));
    h[32] = 2, h[34] = 16;
    memcpy(h + 36, "data", 4);
    for (int i = 0; i < 4; i++) h[40 + i] = (uint8_t)(data >> (8 * i));
    int ok = fwrite(h, 1, 44, f) == 44;
    for (int i = 0; i < N && ok; i++) {
        double t = (double)i / RATE;
        int16_t s = (int16_t)(8000 * sin(2 * M_PI * (150 + 400 * t) * t));
        uint8_t b[2] = {(uint8_t)(s & 0xff), (uint8_t)((uint16_t)s >> 8)};
        ok = fwrite(b, 1, 2, f) == 2;
    }
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* ---- 1: the inventory reproduces the golden checkpoints -------------------- */

static void compare_inventory(const inventory *inv, const char *file) {
    qtts_err err = {0};
    qtts_store *st = qtts_store_open(file, &err);
    TEST_CHECK(st != NULL, "%s", err.msg);
    if (!st) return;
    TEST_CHECK(!inv->failed && inv->n == qtts_store_count(st), "%s: inventory has %d tensors, the file %d", file,
               inv->n, qtts_store_count(st));
    int bad = 0;
    for (int i = 0; i < inv->n; i++) {
        const inventory_tensor *t = &inv->t[i];
        const qtts_tensor *f = qtts_store_find(st, t->name);
        int same = f && f->ndim == t->ndim;
        for (int d = 0; same && d < t->ndim; d++) same = f->shape[d] == t->shape[d];
        if (!same && bad++ < 5)
            TEST_CHECK(0, "%s: %s [%lld %lld %lld] %s", file, t->name, (long long)t->shape[0], (long long)t->shape[1],
                       (long long)t->shape[2], f ? "has another shape in the file" : "is not in the file");
    }
    TEST_CHECK(bad == 0, "%s: %d inventory tensors differ from the file", file, bad);
    qtts_store_free(st);
}

static void check_inventory_against_golden(void) {
    static const char *const models[] = {"Qwen3-TTS-12Hz-0.6B-Base-tiny", "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny",
                                         "Qwen3-TTS-12Hz-1.7B-VoiceDesign-tiny"};
    for (size_t k = 0; k < sizeof models / sizeof models[0]; k++) {
        char dir[PATH_MAX], tok[PATH_MAX + 32], file[PATH_MAX + 64];
        golden_path(dir, sizeof dir, models[k]);
        snprintf(tok, sizeof tok, "%s/speech_tokenizer", dir);
        qtts_model_config m;
        qtts_codec_config c;
        qtts_err err = {0};
        if (qtts_model_config_load(&m, dir, &err) || qtts_codec_config_load(&c, tok, &err)) {
            TEST_CHECK(0, "%s", err.msg);
            continue;
        }
        inventory a = {0}, b = {0};
        inventory_model(&a, &m);
        inventory_codec(&b, &c);
        snprintf(file, sizeof file, "%s/model.safetensors", dir);
        compare_inventory(&a, file);
        snprintf(file, sizeof file, "%s/model.safetensors", tok);
        compare_inventory(&b, file);
        inventory_free(&a);
        inventory_free(&b);
    }
}

/* ---- 2: real-size folders ------------------------------------------------- */

static int make_tokenizer(const char *dir) {
    char path[PATH_MAX + 64];
    qtts_codec_config c;
    qtts_err err = {0};
    if (mkdir(dir, 0755)) return -1;
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (write_text_file(path, codec_config_json) || qtts_codec_config_load(&c, dir, &err)) {
        TEST_CHECK(0, "tokenizer config: %s", err.msg);
        return -1;
    }
    snprintf(path, sizeof path, "%s/preprocessor_config.json", dir);
    if (write_text_file(path, "{\"feature_extractor_type\":\"EncodecFeatureExtractor\",\"feature_size\":1,"
                              "\"padding_side\":\"right\",\"padding_value\":0.0,\"return_attention_mask\":true,"
                              "\"sampling_rate\":24000}"))
        return -1;
    inventory inv = {0};
    inventory_codec(&inv, &c);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    int rc = inventory_write_sparse(&inv, "F32", path);
    printf("speech tokenizer: %d tensors, %.1f M parameters\n", inv.n, inventory_params(&inv) / 1e6);
    inventory_free(&inv);
    return rc;
}

static int make_model(const char *dir, const variant *v, const char *tok_dir, int64_t *params) {
    static const char *const text_files[] = {"vocab.json", "merges.txt", "tokenizer_config.json",
                                             "preprocessor_config.json"};
    char path[PATH_MAX + 64], src[PATH_MAX];
    if (mkdir(dir, 0755)) return -1;
    for (size_t i = 0; i < sizeof text_files / sizeof text_files[0]; i++) {
        /* byte-identical to the official repos' files (shared/golden/README.md) */
        char rel[128];
        snprintf(rel, sizeof rel, "Qwen3-TTS-12Hz-0.6B-Base-tiny/%s", text_files[i]);
        golden_path(src, sizeof src, rel);
        snprintf(path, sizeof path, "%s/%s", dir, text_files[i]);
        if (symlink(src, path)) return -1;
    }
    snprintf(path, sizeof path, "%s/speech_tokenizer", dir);
    if (symlink(tok_dir, path)) return -1;
    char *cfg_text = model_config_json(v);
    snprintf(path, sizeof path, "%s/config.json", dir);
    int rc = cfg_text ? write_text_file(path, cfg_text) : -1;
    free(cfg_text);
    snprintf(path, sizeof path, "%s/generation_config.json", dir);
    if (rc || write_text_file(path, generation_config_json)) return -1;
    qtts_model_config m;
    qtts_err err = {0};
    if (qtts_model_config_load(&m, dir, &err)) {
        TEST_CHECK(0, "%s: %s", v->name, err.msg);
        return -1;
    }
    inventory inv = {0};
    inventory_model(&inv, &m);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    rc = inventory_write_sparse(&inv, "BF16", path);
    *params = inventory_params(&inv);
    printf("%s: %d tensors, %.2f M parameters (spec: %.2f M)\n", v->name, inv.n, *params / 1e6, v->params_m);
    inventory_free(&inv);
    return rc;
}

static void check_info(const char *dir, const variant *v, int64_t params) {
    char cmd[PATH_MAX + 128], out[16384], want[160];
    snprintf(cmd, sizeof cmd, "%s info '%s'", QTTS_BINARY, dir);
    int rc = run(cmd, out, sizeof out);
    TEST_CHECK(rc == 0, "%s: qtts info exit %d: %s", v->name, rc, out);
    snprintf(want, sizeof want, "variant         %s (size tag %s)", v->type, v->size);
    TEST_CHECK(strstr(out, want) != NULL, "%s: qtts info lacks \"%s\":\n%s", v->name, want, out);
    snprintf(want, sizeof want, "talker          hidden %d, 28 layers, heads 16 (kv 8) x 128, mlp %d, vocab 3072",
             v->hidden, v->intermediate);
    TEST_CHECK(strstr(out, want) != NULL, "%s: qtts info lacks \"%s\"", v->name, want);
    TEST_CHECK(strstr(out, "code predictor  hidden 1024, 5 layers, heads 16 (kv 8) x 128, mlp 3072, vocab 2048") !=
                   NULL, "%s: code predictor sizes:\n%s", v->name, out);
    if (!strcmp(v->type, "base")) {
        snprintf(want, sizeof want, "speaker encoder mel 128, channels 512..1536, x-vector %d", v->hidden);
        TEST_CHECK(strstr(out, want) != NULL, "%s: qtts info lacks \"%s\"", v->name, want);
    }
    if (!strcmp(v->type, "custom_voice"))
        TEST_CHECK(strstr(out, "eric (sichuan_dialect)") && strstr(out, "ryan"), "%s: speakers:\n%s", v->name, out);
    const char *tot = strstr(out, "total ");
    double total = tot ? atof(tot + 6) : 0;
    TEST_CHECK(fabs(total - params / 1e6) < 0.006 && fabs(total - v->params_m) < 0.1,
               "%s: qtts info total %.2f M parameters, inventory %.2f M, spec %.1f M", v->name, total, params / 1e6,
               v->params_m);
    TEST_CHECK(strstr(out, "sample rate 24000 Hz, 1920 samples per frame, 16 codebooks x 2048") != NULL,
               "%s: speech tokenizer line:\n%s", v->name, out);
}

static void check_say(const char *dir, const variant *v, const char *tmp, const char *ref_wav) {
    char cmd[PATH_MAX * 8], out[16384], wav[PATH_MAX + 64];
    const char *voices[2] = {v->voice, NULL};
    char xvec[PATH_MAX + 64], icl[PATH_MAX + 96];
    if (!v->voice) {
        snprintf(xvec, sizeof xvec, "--ref-audio '%s' --x-vector-only", ref_wav);
        snprintf(icl, sizeof icl, "--ref-audio '%s' --ref-text 'A short reference sentence.'", ref_wav);
        voices[0] = xvec, voices[1] = icl;
    }
    for (int k = 0; k < 2 && voices[k]; k++) {
        snprintf(wav, sizeof wav, "%s/out-%d.wav", tmp, k);
        snprintf(cmd, sizeof cmd, "%s say -m '%s' %s --lang english --greedy --max-frames 2 --threads 2 -q -o '%s' "
                                  "'Hello from a real-size model.'",
                 QTTS_BINARY, dir, voices[k], wav);
        int rc = run(cmd, out, sizeof out);
        TEST_CHECK(rc == 0 && file_size_ok(wav), "%s: say %s: exit %d: %s", v->name, voices[k], rc, out);
        remove(wav);
    }
    if (v->voice) return;
    char rvq[PATH_MAX + 64], spk[PATH_MAX + 64];
    snprintf(rvq, sizeof rvq, "%s/ref.rvq", tmp);
    snprintf(spk, sizeof spk, "%s/ref.spk", tmp);
    snprintf(cmd, sizeof cmd, "%s codec encode '%s' -o '%s' --spk '%s' -m '%s'", QTTS_BINARY, ref_wav, rvq, spk, dir);
    int rc = run(cmd, out, sizeof out);
    TEST_CHECK(rc == 0 && file_size_ok(rvq) && file_size_ok(spk), "%s: codec encode: exit %d: %s", v->name, rc, out);
    remove(rvq);
    remove(spk);
}

static void check_bare_tokenizer(const char *tok, const char *tmp, const char *ref_wav) {
    char cmd[PATH_MAX * 8], out[16384], rvq[PATH_MAX + 64], wav[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "%s info '%s'", QTTS_BINARY, tok);
    int rc = run(cmd, out, sizeof out);
    TEST_CHECK(rc == 0 && strstr(out, "sample rate 24000 Hz, 1920 samples per frame, 16 codebooks x 2048") &&
                   strstr(out, "encoder: 64 filters, transformer 8 layers x 512, 32 quantizers (16 used)"),
               "bare tokenizer: qtts info exit %d:\n%s", rc, out);
    snprintf(rvq, sizeof rvq, "%s/tok.rvq", tmp);
    snprintf(wav, sizeof wav, "%s/tok.wav", tmp);
    snprintf(cmd, sizeof cmd, "%s codec encode '%s' -o '%s' -m '%s'", QTTS_BINARY, ref_wav, rvq, tok);
    rc = run(cmd, out, sizeof out);
    TEST_CHECK(rc == 0 && file_size_ok(rvq), "bare tokenizer: codec encode exit %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, "%s codec decode '%s' -o '%s' -m '%s' --threads 2", QTTS_BINARY, rvq, wav, tok);
    rc = run(cmd, out, sizeof out);
    TEST_CHECK(rc == 0 && file_size_ok(wav), "bare tokenizer: codec decode exit %d: %s", rc, out);
}

int main(void) {
    check_inventory_against_golden();

    char tmpl[] = "/tmp/qtts_published_XXXXXX";
    char *tmp = mkdtemp(tmpl);
    TEST_CHECK(tmp != NULL, "mkdtemp");
    if (!tmp) return test_finish("test_published_checkpoints");
    char tok[PATH_MAX], ref[PATH_MAX];
    snprintf(tok, sizeof tok, "%s/Qwen3-TTS-Tokenizer-12Hz", tmp);
    snprintf(ref, sizeof ref, "%s/reference.wav", tmp);
    TEST_CHECK(make_tokenizer(tok) == 0, "bare tokenizer folder");
    TEST_CHECK(write_reference_wav(ref) == 0, "reference wav");
    check_bare_tokenizer(tok, tmp, ref);
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        const variant *v = &variants[i];
        char dir[PATH_MAX];
        int64_t params = 0;
        snprintf(dir, sizeof dir, "%s/%s", tmp, v->name);
        if (make_model(dir, v, tok, &params)) {
            TEST_CHECK(0, "%s: could not write the folder", v->name);
            continue;
        }
        check_info(dir, v, params);
        check_say(dir, v, tmp, ref);
    }
    rm_rf(tmp);
    return test_finish("test_published_checkpoints");
}
