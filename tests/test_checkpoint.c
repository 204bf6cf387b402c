/* Checkpoint loading: the tiny golden folders load through the real path, and
 * corrupted safetensors/config files fail with one clear message, no crash. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "support/test_util.h"
#include "io/store.h"
#include "model/config.h"

static const char *models[] = {
    "Qwen3-TTS-12Hz-0.6B-Base-tiny",
    "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny",
    "Qwen3-TTS-12Hz-1.7B-VoiceDesign-tiny",
};

static void write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(data, 1, n, f);
        fclose(f);
    }
}

/* Builds a safetensors file from a header string and data size. */
static void write_st(const char *path, const char *header, size_t data_bytes) {
    size_t hl = strlen(header);
    size_t total = 8 + hl + data_bytes;
    unsigned char *buf = calloc(1, total);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    memcpy(buf + 8, header, hl);
    write_file(path, buf, total);
    free(buf);
}

static void expect_st_error(const char *dir, const char *label, const char *header, size_t data, const char *needle) {
    char path[512];
    snprintf(path, sizeof path, "%s/bad.safetensors", dir);
    write_st(path, header, data);
    qtts_err err = {0};
    qtts_store *st = qtts_store_open_safetensors(path, &err);
    TEST_CHECK(st == NULL, "%s: corrupt file was accepted", label);
    TEST_CHECK(st != NULL || strstr(err.msg, needle) != NULL, "%s: message '%s' lacks '%s'", label, err.msg, needle);
    qtts_store_free(st);
}

int main(void) {
    char path[1024];
    for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
        golden_path(path, sizeof path, models[m]);
        qtts_err err = {0};
        qtts_model_config cfg;
        TEST_CHECK(qtts_model_config_load(&cfg, path, &err) == 0, "%s: %s", models[m], err.msg);
        qtts_store *st = qtts_store_open(path, &err);
        TEST_CHECK(st != NULL, "%s: %s", models[m], err.msg);
        if (st) {
            const qtts_tensor *t = qtts_store_get2(st, "talker.model.codec_embedding.weight", cfg.talker.vocab,
                                                   cfg.talker.hidden, &err);
            TEST_CHECK(t != NULL, "%s: %s", models[m], err.msg);
            t = qtts_store_get2(st, "talker.model.text_embedding.weight", cfg.text_vocab, cfg.text_hidden, &err);
            TEST_CHECK(t != NULL, "%s: %s", models[m], err.msg);
            TEST_CHECK(qtts_store_get1(st, "no.such.tensor", 3, &err) == NULL && strstr(err.msg, "missing tensor"),
                       "missing tensor message: %s", err.msg);
            TEST_CHECK(qtts_store_get2(st, "talker.model.codec_embedding.weight", 7, 7, &err) == NULL &&
                           strstr(err.msg, "has shape"),
                       "wrong shape message: %s", err.msg);
            qtts_store_free(st);
        }
        char tok[1100];
        snprintf(tok, sizeof tok, "%s/speech_tokenizer", path);
        qtts_codec_config cc;
        TEST_CHECK(qtts_codec_config_load(&cc, tok, &err) == 0, "%s codec: %s", models[m], err.msg);
        TEST_CHECK(cc.frame_samples == 1920 && cc.dec.num_quantizers == 16, "%s codec config values", models[m]);
        if (m == 0) {
            TEST_CHECK(cfg.variant == QTTS_VARIANT_BASE && cfg.has_speaker_encoder && cfg.talker.hidden == 32,
                       "base config values");
        } else if (m == 1) {
            TEST_CHECK(cfg.variant == QTTS_VARIANT_CUSTOM_VOICE && cfg.n_speakers == 9, "cv config values");
            const qtts_named_id *s = qtts_config_speaker(&cfg, "Dylan");
            TEST_CHECK(s && s->id == 2878 && !strcmp(s->dialect, "beijing_dialect"), "dylan is a dialect speaker");
        } else {
            TEST_CHECK(cfg.variant == QTTS_VARIANT_VOICE_DESIGN && cfg.n_speakers == 0, "vd config values");
        }
    }

    char tmpl[] = "/tmp/qtts_ckpt_XXXXXX";
    char *dir = mkdtemp(tmpl);
    TEST_CHECK(dir != NULL, "mkdtemp");
    if (!dir) return test_finish("test_checkpoint");
    const char *good = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}";
    char p[512];
    snprintf(p, sizeof p, "%s/good.safetensors", dir);
    write_st(p, good, 16);
    qtts_err err = {0};
    qtts_store *st = qtts_store_open_safetensors(p, &err);
    TEST_CHECK(st && qtts_store_find(st, "a"), "minimal valid file: %s", err.msg);
    qtts_store_free(st);

    expect_st_error(dir, "span past end", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}", 8,
                    "outside");
    expect_st_error(dir, "size mismatch", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,16]}}", 16,
                    "need");
    expect_st_error(dir, "unknown dtype", "{\"a\":{\"dtype\":\"Q9\",\"shape\":[2,2],\"data_offsets\":[0,16]}}", 16,
                    "unsupported dtype");
    expect_st_error(dir, "overlap",
                    "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                    "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
                    16, "overlap");
    expect_st_error(dir, "bad json", "{\"a\":{\"dtype\":\"F32\",", 16, "JSON");
    expect_st_error(dir, "negative shape", "{\"a\":{\"dtype\":\"F32\",\"shape\":[-2,2],\"data_offsets\":[0,16]}}", 16,
                    "malformed");
    expect_st_error(dir, "reversed span", "{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,4]}}", 16,
                    "outside");

    /* header length that lies */
    unsigned char lie[16] = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, '{', '}'};
    snprintf(p, sizeof p, "%s/lie.safetensors", dir);
    write_file(p, lie, sizeof lie);
    st = qtts_store_open_safetensors(p, &err);
    TEST_CHECK(!st && strstr(err.msg, "header length"), "lying header length: %s", err.msg);
    qtts_store_free(st);
    /* truncated file */
    snprintf(p, sizeof p, "%s/short.safetensors", dir);
    write_file(p, lie, 5);
    st = qtts_store_open_safetensors(p, &err);
    TEST_CHECK(!st && strstr(err.msg, "too short"), "truncated: %s", err.msg);
    qtts_store_free(st);
    /* missing file */
    st = qtts_store_open("/nonexistent/qtts/model", &err);
    TEST_CHECK(!st && strstr(err.msg, "/nonexistent"), "missing path: %s", err.msg);

    /* malformed config.json */
    snprintf(p, sizeof p, "%s/config.json", dir);
    { const char *t = "{\"tts_model_type\": \"base\", \"talker_config\": {"; write_file(p, t, strlen(t)); }
    qtts_model_config cfg;
    TEST_CHECK(qtts_model_config_load(&cfg, dir, &err) != 0 && strstr(err.msg, "malformed JSON"), "bad config: %s",
               err.msg);
    { const char *t = "{\"tts_model_type\": \"base\", \"talker_config\": {\"hidden_size\": 8}}"; write_file(p, t, strlen(t)); }
    TEST_CHECK(qtts_model_config_load(&cfg, dir, &err) != 0 && strstr(err.msg, "num_hidden_layers"),
               "incomplete config: %s", err.msg);

    TEST_CHECK(rm_rf(dir) == 0, "cleanup");
    return test_finish("test_checkpoint");
}
