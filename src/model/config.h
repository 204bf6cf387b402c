/* Model configuration read from the checkpoint's config.json,
 * generation_config.json and speech_tokenizer/config.json. Every size used
 * anywhere in the engine comes from here. */
#ifndef QTTS_MODEL_CONFIG_H
#define QTTS_MODEL_CONFIG_H

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>

#include "core/err.h"

enum { QTTS_MAX_NAMED_IDS = 64, QTTS_NAME_LEN = 48 };

typedef enum { QTTS_VARIANT_BASE, QTTS_VARIANT_CUSTOM_VOICE, QTTS_VARIANT_VOICE_DESIGN } qtts_variant;

typedef struct {
    char name[QTTS_NAME_LEN];
    int64_t id;
    char dialect[QTTS_NAME_LEN]; /* speakers: dialect language name or "" */
} qtts_named_id;

/* A Qwen3-style decoder stack (talker or code predictor). */
typedef struct {
    int64_t hidden, layers, heads, kv_heads, head_dim, intermediate, vocab;
    double rms_eps, rope_theta;
} qtts_lm_config;

typedef struct {
    qtts_lm_config talker;
    qtts_lm_config cp; /* code predictor; vocab = codebook size */
    int64_t text_vocab, text_hidden, num_code_groups;
    int64_t cp_code_groups; /* code_predictor_config.num_code_groups: must equal num_code_groups */
    /* special ids */
    int64_t codec_pad, codec_bos, codec_eos, think, nothink, think_bos, think_eos;
    int64_t tts_pad, tts_bos, tts_eos, im_start, im_end, assistant;
    qtts_named_id languages[QTTS_MAX_NAMED_IDS];
    int n_languages;
    qtts_named_id speakers[QTTS_MAX_NAMED_IDS];
    int n_speakers;
    qtts_variant variant;
    char size[16]; /* "0b6" / "1b7" as in tts_model_size */
    /* speaker encoder (Base only) */
    int has_speaker_encoder;
    int64_t spk_mel_dim, spk_enc_dim, spk_channels[5], spk_kernels[5], spk_dilations[5];
    int64_t spk_attention_channels, spk_res2net_scale, spk_se_channels, spk_sample_rate;
} qtts_model_config;

typedef struct {
    int do_sample;
    double temperature, top_p, repetition_penalty;
    int64_t top_k, max_new_tokens;
    int cp_do_sample;
    double cp_temperature, cp_top_p;
    int64_t cp_top_k;
} qtts_generation_config;

/* speech_tokenizer/config.json */
typedef struct {
    int64_t sample_rate, frame_samples, valid_quantizers; /* sample_rate: the decoder's output rate */
    int64_t input_sample_rate, encode_samples;           /* the encoder's input rate and hop */
    struct {
        int64_t codebook_size, codebook_dim, latent_dim, hidden, intermediate, layers, heads, kv_heads, head_dim;
        int64_t num_quantizers, decoder_dim, sliding_window;
        int64_t upsample_rates[8], n_upsample_rates, upsampling_ratios[8], n_upsampling_ratios;
        double rms_eps, rope_theta;
    } dec;
    struct {
        int64_t num_filters, kernel_size, residual_kernel_size, last_kernel_size, num_residual_layers;
        int64_t dilation_growth_rate, compress, ratios[8], n_ratios;
        int64_t hidden, intermediate, layers, heads, kv_heads, head_dim;
        int64_t num_quantizers, num_semantic_quantizers, codebook_size, codebook_dim, sliding_window;
        int64_t sampling_rate, audio_channels;
        double norm_eps, rope_theta;
    } enc;
} qtts_codec_config;

/* Every key absent from a file takes the default of its official config class
 * (Qwen3TTSConfig and its sub-configs, Qwen3TTSTokenizerV2Config, MimiConfig);
 * the few without a usable default are required. A key present with the wrong
 * type or an impossible value fails with "<file>: <object>.<key>: ..., got
 * <value>". Unknown keys are ignored. `qtts info --config-keys` lists them all.
 *
 * The _parse variants read an already parsed document; name is the file name
 * used in messages. The _load variants read <dir>/config.json (or
 * generation_config.json, where a missing file gives the defaults). */
int qtts_model_config_parse(qtts_model_config *cfg, const cJSON *root, const char *name, qtts_err *err);
int qtts_model_config_load(qtts_model_config *cfg, const char *dir, qtts_err *err);
int qtts_generation_config_parse(qtts_generation_config *g, const cJSON *root, const char *name, qtts_err *err);
int qtts_generation_config_load(qtts_generation_config *g, const char *dir, qtts_err *err);
void qtts_generation_config_defaults(qtts_generation_config *g);
/* dir = folder holding the speech tokenizer's config.json. */
int qtts_codec_config_parse(qtts_codec_config *cfg, const cJSON *root, const char *name, qtts_err *err);
int qtts_codec_config_load(qtts_codec_config *cfg, const char *dir, qtts_err *err);

/* The inverse of the _parse functions, from the same field tables (for
 * checkpoints written by this program, e.g. random weights): a new JSON
 * document that parses back to cfg, or NULL when out of memory. */
cJSON *qtts_model_config_to_json(const qtts_model_config *cfg);
cJSON *qtts_codec_config_to_json(const qtts_codec_config *cfg);

/* Markdown table of every key the loaders read: required / default / derived, range, why. */
void qtts_config_describe(FILE *out);
void qtts_codec_config_describe(FILE *out); /* the speech_tokenizer/config.json rows of it */

const char *qtts_variant_name(qtts_variant v);
/* The language name an ISO 639-1 code stands for ("en" -> "english"), or
 * name itself when it is not one of the codes of the model's languages. */
const char *qtts_language_alias(const char *name);
/* Case-insensitive lookups (languages also by ISO 639-1 code); NULL when unknown. */
const qtts_named_id *qtts_config_language(const qtts_model_config *cfg, const char *name);
const qtts_named_id *qtts_config_speaker(const qtts_model_config *cfg, const char *name);

#endif
