/* The Transformers-native checkpoints (transformers' convert_qwen3_tts_to_hf.py
 * and convert_qwen3_tts_tokenizer_multi_codebook_to_hf.py): the same
 * model_type "qwen3_tts" but the talker's "talker." prefix dropped, its codec
 * embedding called embed_tokens, the text projection linear_1/linear_2; the
 * speech tokenizer's quantizers named semantic/acoustic and its
 * pre-transformer projections moved up. config.json may leave out
 * tts_model_type (the speaker encoder config tells Base) and writes
 * rope_parameters. The speech tokenizer is looked for in speech_tokenizer/,
 * in either layout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/file.h"
#include "io/json_util.h"
#include "io/layout_internal.h"

static const layout_rule model_rules[] = {
    {"model.embed_tokens.weight", "talker.model.codec_embedding.weight", LR_MODEL, 0},
    {"model.text_embedding.weight", "talker.model.text_embedding.weight", LR_MODEL, 0},
    {"model.norm.weight", "talker.model.norm.weight", LR_MODEL, 0},
    {"model.layers.{s}", "talker.model.layers.{s}", LR_MODEL, 0},
    {"codec_head.weight", "talker.codec_head.weight", LR_MODEL, 0},
    {"text_projection.linear_1.{s}", "talker.text_projection.linear_fc1.{s}", LR_MODEL, 0},
    {"text_projection.linear_2.{s}", "talker.text_projection.linear_fc2.{s}", LR_MODEL, 0},
    {"code_predictor.{s}", "talker.code_predictor.{s}", LR_MODEL, 0},
    {"speaker_encoder.{s}", "speaker_encoder.{s}", LR_MODEL, 0},
};

#define HF_SEM "decoder.quantizer.semantic_residual_vector_quantizer"
#define HF_ACO "decoder.quantizer.acoustic_residual_vector_quantizer"

static const layout_rule codec_rules[] = {
    {HF_SEM ".layers.{a}.codebook.embed_sum", "decoder.quantizer.rvq_first.vq.layers.{a}._codebook.embedding_sum",
     LR_CODEC, 0},
    {HF_SEM ".layers.{a}.codebook.cluster_usage", "decoder.quantizer.rvq_first.vq.layers.{a}._codebook.cluster_usage",
     LR_CODEC, 0},
    {HF_ACO ".layers.{a}.codebook.embed_sum", "decoder.quantizer.rvq_rest.vq.layers.{a}._codebook.embedding_sum",
     LR_CODEC, 0},
    {HF_ACO ".layers.{a}.codebook.cluster_usage", "decoder.quantizer.rvq_rest.vq.layers.{a}._codebook.cluster_usage",
     LR_CODEC, 0},
    {HF_SEM ".layers.{a}.codebook.initialized", NULL, LR_DROP, 0},
    {HF_ACO ".layers.{a}.codebook.initialized", NULL, LR_DROP, 0},
    {HF_SEM ".{s}", "decoder.quantizer.rvq_first.{s}", LR_CODEC, 0},
    {HF_ACO ".{s}", "decoder.quantizer.rvq_rest.{s}", LR_CODEC, 0},
    {"decoder.input_proj.{s}", "decoder.pre_transformer.input_proj.{s}", LR_CODEC, 0},
    {"decoder.output_proj.{s}", "decoder.pre_transformer.output_proj.{s}", LR_CODEC, 0},
    {"decoder.{s}", "decoder.{s}", LR_CODEC, 0},
    {"encoder.{s}", "encoder.{s}", LR_CODEC, 0},
};

/* The official codec names pass through unchanged. */
static const layout_rule codec_official[] = {
    {"decoder.{s}", "decoder.{s}", LR_CODEC, 0},
    {"encoder.{s}", "encoder.{s}", LR_CODEC, 0},
};

int layout_transformers_detect(const qtts_store *st) {
    return qtts_store_find(st, "model.embed_tokens.weight") && qtts_store_find(st, "codec_head.weight") &&
           !qtts_store_find(st, "talker.codec_head.weight");
}

static int copy_file(const char *from_dir, const char *to_dir, const char *name, int required, qtts_err *err) {
    char src[PATH_MAX + 64], dst[PATH_MAX + 64];
    snprintf(src, sizeof src, "%s/%s", from_dir, name);
    snprintf(dst, sizeof dst, "%s/%s", to_dir, name);
    if (access(src, R_OK) != 0) return required ? qtts_fail(err, "%s: missing", src) : 0;
    char *buf;
    size_t len;
    if (qtts_read_file(src, (size_t)256 << 20, &buf, &len, err)) return -1;
    int rc = qtts_write_file(dst, buf, len, err);
    free(buf);
    return rc;
}

int layout_transformers_open(qtts_model_files *m, const char *dir, qtts_store *st, int flags, qtts_err *err) {
    m->layout = "transformers";
    layout_build b = {.label = "transformers", .flags = flags};
    char p[PATH_MAX + 64];
    cJSON *cfg = NULL, *cc = NULL;
    m->model_store = b.model = qtts_store_new(err);
    m->codec_store = b.codec = qtts_store_new(err);
    int rc = -1;
    if (!b.model || !b.codec) {
        qtts_store_free(st);
        return -1;
    }
    qtts_store_set_source(b.model, dir);
    const qtts_store *src = st;
    if (qtts_store_adopt(b.model, st, err)) {
        qtts_store_free(st);
        return -1;
    }
    if (layout_map(&b, src, model_rules, sizeof model_rules / sizeof *model_rules, err)) return -1;
    snprintf(p, sizeof p, "%s/speech_tokenizer", dir);
    qtts_store *cs = qtts_store_open(p, err);
    if (!cs) return qtts_fail_prefix(err, "the speech tokenizer (Qwen3-TTS-Tokenizer-12Hz, official or "
                                          "Transformers-native) belongs in %s/speech_tokenizer", dir);
    qtts_store_set_source(b.codec, p);
    const qtts_store *csrc = cs;
    if (qtts_store_adopt(b.model, cs, err)) {
        qtts_store_free(cs);
        return -1;
    }
    const int hf_codec = qtts_store_find(csrc, "decoder.input_proj.weight") != NULL;
    if (layout_map(&b, csrc, hf_codec ? codec_rules : codec_official,
                   hf_codec ? sizeof codec_rules / sizeof *codec_rules : sizeof codec_official / sizeof *codec_official,
                   err) ||
        layout_make_tmp(m, err))
        return -1;
    /* config.json: tts_model_type from the speaker encoder config when it was dropped */
    snprintf(p, sizeof p, "%s/config.json", dir);
    if (!(cfg = json_load_file(p, err))) goto done;
    if (!cJSON_GetObjectItemCaseSensitive(cfg, "tts_model_type")) {
        const cJSON *se = cJSON_GetObjectItemCaseSensitive(cfg, "speaker_encoder_config");
        const cJSON *tk = cJSON_GetObjectItemCaseSensitive(cfg, "talker_config");
        const cJSON *spk = tk ? cJSON_GetObjectItemCaseSensitive(tk, "spk_id") : NULL;
        const char *variant = se && !cJSON_IsNull(se) ? "base"
                              : cJSON_IsObject(spk) && spk->child ? "custom_voice"
                                                                   : "voice_design";
        cJSON_AddStringToObject(cfg, "tts_model_type", variant);
    }
    if (layout_write_json(m->dir, "config.json", cfg, err)) goto done;
    snprintf(p, sizeof p, "%s/speech_tokenizer/config.json", dir);
    if (!(cc = json_load_file(p, err))) goto done;
    /* the Transformers class has its own model_type; the sizes are the same keys */
    cJSON_ReplaceItemInObjectCaseSensitive(cc, "model_type", cJSON_CreateString("qwen3_tts_tokenizer_12hz"));
    if (!cJSON_GetObjectItemCaseSensitive(cc, "model_type")) cJSON_AddStringToObject(cc, "model_type", "qwen3_tts_tokenizer_12hz");
    if (layout_write_json(m->dir, "speech_tokenizer/config.json", cc, err)) goto done;
    if (copy_file(dir, m->dir, "generation_config.json", 0, err) || copy_file(dir, m->dir, "vocab.json", 1, err) ||
        copy_file(dir, m->dir, "merges.txt", 1, err) || copy_file(dir, m->dir, "tokenizer_config.json", 0, err))
        goto done;
    m->has_codec_encoder = qtts_store_find(b.codec, "encoder.encoder.layers.0.conv.weight") != NULL;
    rc = 0;
done:
    cJSON_Delete(cfg);
    cJSON_Delete(cc);
    return rc;
}
