/* qwentts.cpp's GGUF pair (its convert.py, then tools/quantize.cpp for
 * BF16/Q8_0/K-quants): qwen-talker-<size>-<kind>-<type>.gguf (architecture
 * "qwen3-tts": talker, code predictor, speaker encoder, BPE vocabulary and
 * merges, every config value as metadata) and qwen-tokenizer-12hz-<type>.gguf
 * ("qwen3-tts-tokenizer": decoder and encoder, codebooks stored divided by
 * their usage, the encoder's unused acoustic codebooks left out). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/layout_internal.h"

#define WB(from, to, dest) {from ".weight", to ".weight", dest, XF_NONE}, {from ".bias", to ".bias", dest, XF_NONE}
#define LM_LAYER(f, t)                                                                                          \
    {f ".attn_norm.weight", t ".input_layernorm.weight", LR_MODEL, 0},                                         \
        {f ".ffn_norm.weight", t ".post_attention_layernorm.weight", LR_MODEL, 0},                             \
        {f ".attn_q.weight", t ".self_attn.q_proj.weight", LR_MODEL, 0},                                       \
        {f ".attn_k.weight", t ".self_attn.k_proj.weight", LR_MODEL, 0},                                       \
        {f ".attn_v.weight", t ".self_attn.v_proj.weight", LR_MODEL, 0},                                       \
        {f ".attn_output.weight", t ".self_attn.o_proj.weight", LR_MODEL, 0},                                  \
        {f ".attn_q_norm.weight", t ".self_attn.q_norm.weight", LR_MODEL, 0},                                  \
        {f ".attn_k_norm.weight", t ".self_attn.k_norm.weight", LR_MODEL, 0},                                  \
        {f ".ffn_gate.weight", t ".mlp.gate_proj.weight", LR_MODEL, 0},                                        \
        {f ".ffn_up.weight", t ".mlp.up_proj.weight", LR_MODEL, 0},                                            \
        {f ".ffn_down.weight", t ".mlp.down_proj.weight", LR_MODEL, 0}

static const layout_rule talker_rules[] = {
    LM_LAYER("talker.blk.{a}", "talker.model.layers.{a}"),
    {"talker.codec_embd.weight", "talker.model.codec_embedding.weight", LR_MODEL, 0},
    {"talker.text_embd.weight", "talker.model.text_embedding.weight", LR_MODEL, 0},
    {"talker.output_norm.weight", "talker.model.norm.weight", LR_MODEL, 0},
    {"talker.codec_head.weight", "talker.codec_head.weight", LR_MODEL, 0},
    WB("talker.text_proj.fc1", "talker.text_projection.linear_fc1", LR_MODEL),
    WB("talker.text_proj.fc2", "talker.text_projection.linear_fc2", LR_MODEL),
    LM_LAYER("code_pred.blk.{a}", "talker.code_predictor.model.layers.{a}"),
    {"code_pred.codec_embd.{a}.weight", "talker.code_predictor.model.codec_embedding.{a}.weight", LR_MODEL, 0},
    {"code_pred.lm_head.{a}.weight", "talker.code_predictor.lm_head.{a}.weight", LR_MODEL, 0},
    {"code_pred.output_norm.weight", "talker.code_predictor.model.norm.weight", LR_MODEL, 0},
    WB("code_pred.mtp_proj", "talker.code_predictor.small_to_mtp_projection", LR_MODEL),
    WB("spk_enc.conv0", "speaker_encoder.blocks.0.conv", LR_MODEL),
    WB("spk_enc.asp.conv", "speaker_encoder.asp.conv", LR_MODEL),
    WB("spk_enc.asp.tdnn", "speaker_encoder.asp.tdnn.conv", LR_MODEL),
    WB("spk_enc.mfa", "speaker_encoder.mfa.conv", LR_MODEL),
    WB("spk_enc.fc", "speaker_encoder.fc", LR_MODEL),
    WB("spk_enc.blk.{a}.res2net.{b}", "speaker_encoder.blocks.{a}.res2net_block.blocks.{b}.conv", LR_MODEL),
    WB("spk_enc.blk.{a}.se.conv1", "speaker_encoder.blocks.{a}.se_block.conv1", LR_MODEL),
    WB("spk_enc.blk.{a}.se.conv2", "speaker_encoder.blocks.{a}.se_block.conv2", LR_MODEL),
    WB("spk_enc.blk.{a}.tdnn1", "speaker_encoder.blocks.{a}.tdnn1.conv", LR_MODEL),
    WB("spk_enc.blk.{a}.tdnn2", "speaker_encoder.blocks.{a}.tdnn2.conv", LR_MODEL),
};

#define DEC_TFM "decoder.pre_transformer.layers.{a}"
#define ENC_TFM "encoder.encoder_transformer.layers.{a}"
#define SEM "encoder.quantizer.semantic_residual_vector_quantizer"
#define ACO "encoder.quantizer.acoustic_residual_vector_quantizer"

static const layout_rule codec_rules[] = {
    {"tok_dec.pre_tfm.blk.{a}.attn_norm.weight", DEC_TFM ".input_layernorm.weight", LR_CODEC, 0},
    {"tok_dec.pre_tfm.blk.{a}.ffn_norm.weight", DEC_TFM ".post_attention_layernorm.weight", LR_CODEC, 0},
    {"tok_dec.pre_tfm.blk.{a}.attn_q.weight", DEC_TFM ".self_attn.q_proj.weight", LR_CODEC, 0},
    {"tok_dec.pre_tfm.blk.{a}.attn_k.weight", DEC_TFM ".self_attn.k_proj.weight", LR_CODEC, 0},
    {"tok_dec.pre_tfm.blk.{a}.attn_v.weight", DEC_TFM ".self_attn.v_proj.weight", LR_CODEC, 0},
    {"tok_dec.pre_tfm.blk.{a}.attn_output.weight", DEC_TFM ".self_attn.o_proj.weight", LR_CODEC, 0},
    {"tok_dec.pre_tfm.blk.{a}.attn_scale", DEC_TFM ".self_attn_layer_scale.scale", LR_CODEC, 0},
    {"tok_dec.pre_tfm.blk.{a}.ffn_gate.weight", DEC_TFM ".mlp.gate_proj.weight", LR_CODEC, 0},
    {"tok_dec.pre_tfm.blk.{a}.ffn_up.weight", DEC_TFM ".mlp.up_proj.weight", LR_CODEC, 0},
    {"tok_dec.pre_tfm.blk.{a}.ffn_down.weight", DEC_TFM ".mlp.down_proj.weight", LR_CODEC, 0},
    {"tok_dec.pre_tfm.blk.{a}.ffn_scale", DEC_TFM ".mlp_layer_scale.scale", LR_CODEC, 0},
    WB("tok_dec.pre_tfm.input_proj", "decoder.pre_transformer.input_proj", LR_CODEC),
    WB("tok_dec.pre_tfm.output_proj", "decoder.pre_transformer.output_proj", LR_CODEC),
    {"tok_dec.pre_tfm.norm.weight", "decoder.pre_transformer.norm.weight", LR_CODEC, 0},
    WB("tok_dec.pre_conv", "decoder.pre_conv.conv", LR_CODEC),
    WB("tok_dec.upsample.{a}.conv", "decoder.upsample.{a}.0.conv", LR_CODEC),
    WB("tok_dec.upsample.{a}.dwconv", "decoder.upsample.{a}.1.dwconv.conv", LR_CODEC),
    WB("tok_dec.upsample.{a}.norm", "decoder.upsample.{a}.1.norm", LR_CODEC),
    WB("tok_dec.upsample.{a}.pwconv1", "decoder.upsample.{a}.1.pwconv1", LR_CODEC),
    WB("tok_dec.upsample.{a}.pwconv2", "decoder.upsample.{a}.1.pwconv2", LR_CODEC),
    {"tok_dec.upsample.{a}.gamma", "decoder.upsample.{a}.1.gamma", LR_CODEC, 0},
    WB("tok_dec.dec.0.conv", "decoder.decoder.0.conv", LR_CODEC),
    {"tok_dec.dec.5.snake.alpha", "decoder.decoder.5.alpha", LR_CODEC, 0},
    {"tok_dec.dec.5.snake.beta", "decoder.decoder.5.beta", LR_CODEC, 0},
    WB("tok_dec.dec.6.conv", "decoder.decoder.6.conv", LR_CODEC),
    {"tok_dec.dec.{a}.snake.alpha", "decoder.decoder.{a}.block.0.alpha", LR_CODEC, 0},
    {"tok_dec.dec.{a}.snake.beta", "decoder.decoder.{a}.block.0.beta", LR_CODEC, 0},
    WB("tok_dec.dec.{a}.conv_t", "decoder.decoder.{a}.block.1.conv", LR_CODEC),
    {"tok_dec.dec.{a}.res.{b}.act1.alpha", "decoder.decoder.{a}.block.{b+2}.act1.alpha", LR_CODEC, 0},
    {"tok_dec.dec.{a}.res.{b}.act1.beta", "decoder.decoder.{a}.block.{b+2}.act1.beta", LR_CODEC, 0},
    {"tok_dec.dec.{a}.res.{b}.act2.alpha", "decoder.decoder.{a}.block.{b+2}.act2.alpha", LR_CODEC, 0},
    {"tok_dec.dec.{a}.res.{b}.act2.beta", "decoder.decoder.{a}.block.{b+2}.act2.beta", LR_CODEC, 0},
    WB("tok_dec.dec.{a}.res.{b}.conv1", "decoder.decoder.{a}.block.{b+2}.conv1.conv", LR_CODEC),
    WB("tok_dec.dec.{a}.res.{b}.conv2", "decoder.decoder.{a}.block.{b+2}.conv2.conv", LR_CODEC),
    {"tok_dec.vq_first.output_proj.weight", "decoder.quantizer.rvq_first.output_proj.weight", LR_CODEC, 0},
    {"tok_dec.vq_rest.output_proj.weight", "decoder.quantizer.rvq_rest.output_proj.weight", LR_CODEC, 0},
    {"tok_dec.vq_first.{a}.codebook", "decoder.quantizer.rvq_first.vq.layers.{a}._codebook.embedding_sum", LR_CODEC,
     XF_CODEBOOK},
    {"tok_dec.vq_rest.{a}.codebook", "decoder.quantizer.rvq_rest.vq.layers.{a}._codebook.embedding_sum", LR_CODEC,
     XF_CODEBOOK},
    WB("tok_enc.conv.{a}", "encoder.encoder.layers.{a}.conv", LR_CODEC),
    WB("tok_enc.res.{a}.blk.{b}", "encoder.encoder.layers.{a}.block.{b}.conv", LR_CODEC),
    WB("tok_enc.blk.{a}.attn_norm", ENC_TFM ".input_layernorm", LR_CODEC),
    WB("tok_enc.blk.{a}.ffn_norm", ENC_TFM ".post_attention_layernorm", LR_CODEC),
    {"tok_enc.blk.{a}.attn_q.weight", ENC_TFM ".self_attn.q_proj.weight", LR_CODEC, 0},
    {"tok_enc.blk.{a}.attn_k.weight", ENC_TFM ".self_attn.k_proj.weight", LR_CODEC, 0},
    {"tok_enc.blk.{a}.attn_v.weight", ENC_TFM ".self_attn.v_proj.weight", LR_CODEC, 0},
    {"tok_enc.blk.{a}.attn_output.weight", ENC_TFM ".self_attn.o_proj.weight", LR_CODEC, 0},
    {"tok_enc.blk.{a}.attn_scale", ENC_TFM ".self_attn_layer_scale.scale", LR_CODEC, 0},
    {"tok_enc.blk.{a}.ffn_up.weight", ENC_TFM ".mlp.fc1.weight", LR_CODEC, 0},
    {"tok_enc.blk.{a}.ffn_down.weight", ENC_TFM ".mlp.fc2.weight", LR_CODEC, 0},
    {"tok_enc.blk.{a}.ffn_scale", ENC_TFM ".mlp_layer_scale.scale", LR_CODEC, 0},
    WB("tok_enc.downsample", "encoder.downsample.conv", LR_CODEC),
    {"tok_enc.vq_semantic.input_proj.weight", SEM ".input_proj.weight", LR_CODEC, 0},
    {"tok_enc.vq_semantic.output_proj.weight", SEM ".output_proj.weight", LR_CODEC, 0},
    {"tok_enc.vq_acoustic.input_proj.weight", ACO ".input_proj.weight", LR_CODEC, 0},
    {"tok_enc.vq_acoustic.output_proj.weight", ACO ".output_proj.weight", LR_CODEC, 0},
    {"tok_enc.vq_semantic.{a}.codebook", SEM ".layers.{a}.codebook.embed_sum", LR_CODEC, XF_CODEBOOK},
    {"tok_enc.vq_acoustic.{a}.codebook", ACO ".layers.{a}.codebook.embed_sum", LR_CODEC, XF_CODEBOOK},
};

static int is_talker(const qtts_gguf *g) {
    return layout_arch_is(g, "qwen3-tts") && layout_has_tensor(g, "talker.blk.0.attn_q.weight");
}
static int is_codec(const qtts_gguf *g) {
    return layout_arch_is(g, "qwen3-tts-tokenizer") && layout_has_tensor(g, "tok_dec.pre_conv.weight");
}
static int detect(const qtts_gguf *g) {
    if (is_talker(g) || is_codec(g)) return 1;
    return layout_arch_is(g, "qwen3-tts") || layout_arch_is(g, "qwen3-tts-tokenizer") ? -1 : 0;
}

static void put_num(cJSON *o, const char *key, const qtts_gguf *g, const char *gkey) {
    double v;
    if (layout_kv_num(g, gkey, &v)) return;
    char text[32];
    snprintf(text, sizeof text, "%.7g", v);
    cJSON_AddNumberToObject(o, key, strtod(text, NULL));
}

static int configs(qtts_model_files *m, const layout_build *b, const qtts_gguf *gt, const qtts_gguf *gc,
                   qtts_err *err) {
    cJSON *cfg = layout_model_config(b->model, err);
    if (!cfg) return -1;
    cJSON *tk = cJSON_GetObjectItemCaseSensitive(cfg, "talker_config");
    cJSON *cp = cJSON_GetObjectItemCaseSensitive(tk, "code_predictor_config");
    char s[64];
    cJSON_AddStringToObject(cfg, "tts_model_type", layout_kv_str(gt, "qwen3-tts.model_type", s, sizeof s) ? s : "base");
    if (layout_kv_str(gt, "qwen3-tts.model_size", s, sizeof s)) cJSON_AddStringToObject(cfg, "tts_model_size", s);
    put_num(tk, "rope_theta", gt, "qwen3-tts.talker.rope.freq_base");
    put_num(tk, "rms_norm_eps", gt, "qwen3-tts.talker.attention.layer_norm_rms_epsilon");
    put_num(cp, "rope_theta", gt, "qwen3-tts.code_pred.rope.freq_base");
    put_num(cp, "rms_norm_eps", gt, "qwen3-tts.code_pred.attention.layer_norm_rms_epsilon");
    static const char *const ids[][2] = {
        {"codec_pad_id", "pad_id"},         {"codec_bos_id", "bos_id"},           {"codec_eos_token_id", "eos_id"},
        {"codec_think_id", "think_id"},     {"codec_nothink_id", "nothink_id"},   {"codec_think_bos_id", "think_bos_id"},
        {"codec_think_eos_id", "think_eos_id"},
    };
    for (size_t i = 0; i < sizeof ids / sizeof *ids; i++) {
        char k[96];
        snprintf(k, sizeof k, "qwen3-tts.codec.%s", ids[i][1]);
        put_num(tk, ids[i][0], gt, k);
    }
    static const char *const text_ids[][2] = {
        {"im_start_token_id", "im_start_id"}, {"im_end_token_id", "im_end_id"}, {"tts_pad_token_id", "tts_pad_id"},
        {"tts_bos_token_id", "tts_bos_id"},   {"tts_eos_token_id", "tts_eos_id"},
    };
    for (size_t i = 0; i < sizeof text_ids / sizeof *text_ids; i++) {
        char k[96];
        snprintf(k, sizeof k, "qwen3-tts.text.%s", text_ids[i][1]);
        put_num(cfg, text_ids[i][0], gt, k);
    }
    cJSON *langs = layout_kv_named_ids(gt, "qwen3-tts.codec.language_names", "qwen3-tts.codec.language_ids");
    if (langs) cJSON_AddItemToObject(tk, "codec_language_id", langs);
    cJSON *spk = layout_kv_named_ids(gt, "qwen3-tts.codec.speaker_names", "qwen3-tts.codec.speaker_ids");
    if (spk) {
        cJSON_AddItemToObject(tk, "spk_id", spk);
        cJSON *dia = cJSON_AddObjectToObject(tk, "spk_is_dialect");
        int i = 0;
        for (const cJSON *it = spk->child; it; it = it->next, i++) {
            size_t len = 0;
            const char *d = qtts_gguf_get_arr_str(gt, "qwen3-tts.codec.speaker_dialects", (uint64_t)i, &len);
            char name[64];
            snprintf(name, sizeof name, "%.*s", d ? (int)(len < sizeof name ? len : sizeof name - 1) : 0, d ? d : "");
            if (name[0]) cJSON_AddStringToObject(dia, it->string, name);
            else cJSON_AddFalseToObject(dia, it->string);
        }
    }
    cJSON *se = cJSON_GetObjectItemCaseSensitive(cfg, "speaker_encoder_config");
    if (se) put_num(se, "sample_rate", gt, "qwen3-tts.spk_enc.sample_rate");
    int rc = layout_write_json(m->dir, "config.json", cfg, err);
    cJSON_Delete(cfg);
    cJSON *gen = layout_generation_config(gt, "generation.");
    if (!rc && gen) rc = layout_write_json(m->dir, "generation_config.json", gen, err);
    cJSON_Delete(gen);
    if (rc) return -1;
    static const char *const dec_keys[] = {"head_dim", "sliding_window", "rms_norm_eps", "rope_theta", "upsample_rates",
                                           "upsampling_ratios"};
    static const char *const enc_keys[] = {"kernel_size", "last_kernel_size", "residual_kernel_size",
                                           "num_residual_layers", "dilation_growth_rate", "compress",
                                           "upsampling_ratios", "head_dim", "norm_eps", "rope_theta"};
    static const char *const top_keys[] = {"input_sample_rate", "output_sample_rate", "decode_upsample_rate",
                                           "encode_downsample_rate"};
    cJSON *dec = cJSON_CreateObject(), *enc = cJSON_CreateObject();
    layout_copy_kv(gc, "qwen3-tts-tokenizer.decoder.", dec_keys, sizeof dec_keys / sizeof *dec_keys, dec);
    layout_copy_kv(gc, "qwen3-tts-tokenizer.encoder.", enc_keys, sizeof enc_keys / sizeof *enc_keys, enc);
    cJSON *cc = layout_codec_config(b->codec, dec, enc, err);
    cJSON_Delete(dec);
    cJSON_Delete(enc);
    if (!cc) return -1;
    layout_copy_kv(gc, "qwen3-tts-tokenizer.", top_keys, sizeof top_keys / sizeof *top_keys, cc);
    rc = layout_write_json(m->dir, "speech_tokenizer/config.json", cc, err);
    cJSON_Delete(cc);
    if (rc) return -1;
    return layout_write_tokenizer(m->dir, gt, 0, err);
}

static const layout_pair pair = {
    .is_first = is_talker,
    .is_second = is_codec,
    .second_what = "speech tokenizer (qwen-tokenizer-12hz-*.gguf)",
    .first_rules = talker_rules,
    .n_first = sizeof talker_rules / sizeof *talker_rules,
    .second_rules = codec_rules,
    .n_second = sizeof codec_rules / sizeof *codec_rules,
    .configs = configs,
};

static int open_qwentts(qtts_model_files *m, const char *path, qtts_gguf *g, int flags, qtts_err *err) {
    return layout_open_pair(m, path, g, flags, &pair, err);
}

const layout_reader qtts_layout_qwentts = {
    .name = "qwentts.cpp",
    .expect = "general.architecture qwen3-tts with talker.blk.*, qwen3-tts-tokenizer with tok_dec.*",
    .signature = "talker.blk.0.attn_q.weight",
    .detect = detect,
    .open = open_qwentts,
};
