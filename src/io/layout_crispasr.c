/* CrispASR's GGUF pair (models/convert-qwen3-tts-to-gguf.py and
 * convert-qwen3-tts-tokenizer-to-gguf.py; F16 or F32 matrices, 1-D tensors
 * F32, Q8_0/Q4_K by its quantizer): qwen3-tts-12hz-<size>-<kind>[-<type>].gguf
 * (architecture "qwen3tts": talker, code predictor, speaker encoder, the
 * vocab.json tokens and merges) and qwen3-tts-tokenizer-12hz.gguf
 * ("qwen3tts_tokenizer": decoder and encoder, codebooks divided by their
 * usage). What the files do not carry takes the released checkpoints'
 * values: the code predictor's rope base and epsilon (the talker's), the
 * encoder's attention heads (MimiConfig's 8) and the sampling defaults. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/layout_internal.h"

#define WB(from, to, dest) {from ".weight", to ".weight", dest, XF_NONE}, {from ".bias", to ".bias", dest, XF_NONE}
#define WB_(from, to) {from "_w", to ".weight", LR_CODEC, XF_NONE}, {from "_b", to ".bias", LR_CODEC, XF_NONE}
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
    {"talker.token_embd.weight", "talker.model.codec_embedding.weight", LR_MODEL, 0},
    {"talker.token_embd_text.weight", "talker.model.text_embedding.weight", LR_MODEL, 0},
    {"talker.output_norm.weight", "talker.model.norm.weight", LR_MODEL, 0},
    {"talker.output.weight", "talker.codec_head.weight", LR_MODEL, 0},
    WB("talker.text_proj.fc1", "talker.text_projection.linear_fc1", LR_MODEL),
    WB("talker.text_proj.fc2", "talker.text_projection.linear_fc2", LR_MODEL),
    LM_LAYER("code_pred.blk.{a}", "talker.code_predictor.model.layers.{a}"),
    {"code_pred.token_embd.{a}.weight", "talker.code_predictor.model.codec_embedding.{a}.weight", LR_MODEL, 0},
    {"code_pred.output.{a}.weight", "talker.code_predictor.lm_head.{a}.weight", LR_MODEL, 0},
    {"code_pred.output_norm.weight", "talker.code_predictor.model.norm.weight", LR_MODEL, 0},
    WB("code_pred.small_to_mtp", "talker.code_predictor.small_to_mtp_projection", LR_MODEL),
    {"speaker.{s}", "speaker_encoder.{s}", LR_MODEL, 0},
};

#define DEC_TFM "decoder.pre_transformer.layers.{a}"
#define ENC_TFM "encoder.encoder_transformer.layers.{a}"
#define SEM "encoder.quantizer.semantic_residual_vector_quantizer"
#define ACO "encoder.quantizer.acoustic_residual_vector_quantizer"
#define DEC_BLK "decoder.decoder.{a+1}.block"

static const layout_rule codec_rules[] = {
    {"codec.dec.rvq_first.codebook", "decoder.quantizer.rvq_first.vq.layers.0._codebook.embedding_sum", LR_CODEC,
     XF_CODEBOOK},
    {"codec.dec.rvq_rest.{a}.codebook", "decoder.quantizer.rvq_rest.vq.layers.{a}._codebook.embedding_sum", LR_CODEC,
     XF_CODEBOOK},
    {"codec.dec.rvq_first.out_proj_w", "decoder.quantizer.rvq_first.output_proj.weight", LR_CODEC, 0},
    {"codec.dec.rvq_rest.out_proj_w", "decoder.quantizer.rvq_rest.output_proj.weight", LR_CODEC, 0},
    WB_("codec.dec.pre_conv", "decoder.pre_conv.conv"),
    WB_("codec.dec.xfmr.in_proj", "decoder.pre_transformer.input_proj"),
    WB_("codec.dec.xfmr.out_proj", "decoder.pre_transformer.output_proj"),
    {"codec.dec.xfmr.norm_w", "decoder.pre_transformer.norm.weight", LR_CODEC, 0},
    {"codec.dec.xfmr.blk.{a}.attn_norm_w", DEC_TFM ".input_layernorm.weight", LR_CODEC, 0},
    {"codec.dec.xfmr.blk.{a}.ffn_norm_w", DEC_TFM ".post_attention_layernorm.weight", LR_CODEC, 0},
    {"codec.dec.xfmr.blk.{a}.attn_q_w", DEC_TFM ".self_attn.q_proj.weight", LR_CODEC, 0},
    {"codec.dec.xfmr.blk.{a}.attn_k_w", DEC_TFM ".self_attn.k_proj.weight", LR_CODEC, 0},
    {"codec.dec.xfmr.blk.{a}.attn_v_w", DEC_TFM ".self_attn.v_proj.weight", LR_CODEC, 0},
    {"codec.dec.xfmr.blk.{a}.attn_o_w", DEC_TFM ".self_attn.o_proj.weight", LR_CODEC, 0},
    {"codec.dec.xfmr.blk.{a}.attn_ls_w", DEC_TFM ".self_attn_layer_scale.scale", LR_CODEC, 0},
    {"codec.dec.xfmr.blk.{a}.ffn_gate_w", DEC_TFM ".mlp.gate_proj.weight", LR_CODEC, 0},
    {"codec.dec.xfmr.blk.{a}.ffn_up_w", DEC_TFM ".mlp.up_proj.weight", LR_CODEC, 0},
    {"codec.dec.xfmr.blk.{a}.ffn_down_w", DEC_TFM ".mlp.down_proj.weight", LR_CODEC, 0},
    {"codec.dec.xfmr.blk.{a}.ffn_ls_w", DEC_TFM ".mlp_layer_scale.scale", LR_CODEC, 0},
    WB_("codec.dec.up.{a}.tconv", "decoder.upsample.{a}.0.conv"),
    WB_("codec.dec.up.{a}.cnx.dw", "decoder.upsample.{a}.1.dwconv.conv"),
    WB_("codec.dec.up.{a}.cnx.norm", "decoder.upsample.{a}.1.norm"),
    WB_("codec.dec.up.{a}.cnx.pw1", "decoder.upsample.{a}.1.pwconv1"),
    WB_("codec.dec.up.{a}.cnx.pw2", "decoder.upsample.{a}.1.pwconv2"),
    {"codec.dec.up.{a}.cnx.gamma", "decoder.upsample.{a}.1.gamma", LR_CODEC, 0},
    WB_("codec.dec.in_conv", "decoder.decoder.0.conv"),
    {"codec.dec.blk.{a}.snake_a", DEC_BLK ".0.alpha", LR_CODEC, 0},
    {"codec.dec.blk.{a}.snake_b", DEC_BLK ".0.beta", LR_CODEC, 0},
    WB_("codec.dec.blk.{a}.tconv", DEC_BLK ".1.conv"),
    {"codec.dec.blk.{a}.res.{b}.act1_a", DEC_BLK ".{b+2}.act1.alpha", LR_CODEC, 0},
    {"codec.dec.blk.{a}.res.{b}.act1_b", DEC_BLK ".{b+2}.act1.beta", LR_CODEC, 0},
    {"codec.dec.blk.{a}.res.{b}.act2_a", DEC_BLK ".{b+2}.act2.alpha", LR_CODEC, 0},
    {"codec.dec.blk.{a}.res.{b}.act2_b", DEC_BLK ".{b+2}.act2.beta", LR_CODEC, 0},
    WB_("codec.dec.blk.{a}.res.{b}.conv1", DEC_BLK ".{b+2}.conv1.conv"),
    WB_("codec.dec.blk.{a}.res.{b}.conv2", DEC_BLK ".{b+2}.conv2.conv"),
    {"codec.dec.out_snake_a", "decoder.decoder.5.alpha", LR_CODEC, 0},
    {"codec.dec.out_snake_b", "decoder.decoder.5.beta", LR_CODEC, 0},
    WB_("codec.dec.out_conv", "decoder.decoder.6.conv"),
    /* SEANet: stage a's residual block is layer 3a+1, its strided conv 3a+3 */
    WB_("codec.enc.seanet.init", "encoder.encoder.layers.0.conv"),
    WB_("codec.enc.seanet.blk.{a}.short", "encoder.encoder.layers.{a*3+1}.block.1.conv"),
    WB_("codec.enc.seanet.blk.{a}.exp", "encoder.encoder.layers.{a*3+1}.block.3.conv"),
    {"codec.enc.seanet.ds.{a}.w", "encoder.encoder.layers.{a*3+3}.conv.weight", LR_CODEC, 0},
    {"codec.enc.seanet.ds.{a}.b", "encoder.encoder.layers.{a*3+3}.conv.bias", LR_CODEC, 0},
    WB_("codec.enc.seanet.final", "encoder.encoder.layers.14.conv"),
    WB_("codec.enc.xfmr.blk.{a}.norm1", ENC_TFM ".input_layernorm"),
    WB_("codec.enc.xfmr.blk.{a}.norm2", ENC_TFM ".post_attention_layernorm"),
    {"codec.enc.xfmr.blk.{a}.attn_q_w", ENC_TFM ".self_attn.q_proj.weight", LR_CODEC, 0},
    {"codec.enc.xfmr.blk.{a}.attn_k_w", ENC_TFM ".self_attn.k_proj.weight", LR_CODEC, 0},
    {"codec.enc.xfmr.blk.{a}.attn_v_w", ENC_TFM ".self_attn.v_proj.weight", LR_CODEC, 0},
    {"codec.enc.xfmr.blk.{a}.attn_o_w", ENC_TFM ".self_attn.o_proj.weight", LR_CODEC, 0},
    {"codec.enc.xfmr.blk.{a}.attn_ls", ENC_TFM ".self_attn_layer_scale.scale", LR_CODEC, 0},
    {"codec.enc.xfmr.blk.{a}.fc1_w", ENC_TFM ".mlp.fc1.weight", LR_CODEC, 0},
    {"codec.enc.xfmr.blk.{a}.fc2_w", ENC_TFM ".mlp.fc2.weight", LR_CODEC, 0},
    {"codec.enc.xfmr.blk.{a}.ffn_ls", ENC_TFM ".mlp_layer_scale.scale", LR_CODEC, 0},
    {"codec.enc.ds_w", "encoder.downsample.conv.weight", LR_CODEC, 0},
    {"codec.enc.rvq.sem.in_w", SEM ".input_proj.weight", LR_CODEC, 0},
    {"codec.enc.rvq.sem.out_w", SEM ".output_proj.weight", LR_CODEC, 0},
    {"codec.enc.rvq.ac.in_w", ACO ".input_proj.weight", LR_CODEC, 0},
    {"codec.enc.rvq.ac.out_w", ACO ".output_proj.weight", LR_CODEC, 0},
    {"codec.enc.rvq.sem.cb", SEM ".layers.0.codebook.embed_sum", LR_CODEC, XF_CODEBOOK},
    {"codec.enc.rvq.ac.{a}.cb", ACO ".layers.{a}.codebook.embed_sum", LR_CODEC, XF_CODEBOOK},
};

static int is_talker(const qtts_gguf *g) {
    return layout_arch_is(g, "qwen3tts") && layout_has_tensor(g, "talker.token_embd.weight");
}
static int is_codec(const qtts_gguf *g) {
    return layout_arch_is(g, "qwen3tts_tokenizer") && layout_has_tensor(g, "codec.dec.pre_conv_w");
}
static int detect(const qtts_gguf *g) {
    if (is_talker(g) || is_codec(g)) return 1;
    /* "qwen3tts" is also llama.cpp's architecture: only a file with neither layout's tensors is mislabeled */
    if (layout_arch_is(g, "qwen3tts_tokenizer")) return -1;
    return 0;
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
    char s[96];
    cJSON_AddStringToObject(cfg, "tts_model_type", layout_kv_str(gt, "qwen3tts.tts_model_type", s, sizeof s) ? s : "base");
    /* general.name is "qwen3-tts-<tts_model_size>-<tts_model_type>" */
    if (layout_kv_str(gt, "general.name", s, sizeof s) && !strncmp(s, "qwen3-tts-", 10)) {
        char *size = s + 10, *dash = strchr(size, '-');
        if (dash) *dash = 0;
        if (*size && strcmp(size, "?")) cJSON_AddStringToObject(cfg, "tts_model_size", size);
    }
    put_num(tk, "rope_theta", gt, "qwen3tts.talker.rope_theta");
    put_num(tk, "rms_norm_eps", gt, "qwen3tts.talker.rms_norm_eps");
    put_num(cp, "rope_theta", gt, "qwen3tts.talker.rope_theta");
    put_num(cp, "rms_norm_eps", gt, "qwen3tts.talker.rms_norm_eps");
    static const char *const ids[] = {"codec_pad_id",   "codec_bos_id",       "codec_eos_token_id", "codec_think_id",
                                      "codec_nothink_id", "codec_think_bos_id", "codec_think_eos_id"};
    for (size_t i = 0; i < sizeof ids / sizeof *ids; i++) {
        char k[96];
        snprintf(k, sizeof k, "qwen3tts.talker.%s", ids[i]);
        put_num(tk, ids[i], gt, k);
    }
    static const char *const text_ids[] = {"im_start_token_id", "im_end_token_id", "tts_pad_token_id",
                                           "tts_bos_token_id", "tts_eos_token_id", "assistant_token_id"};
    for (size_t i = 0; i < sizeof text_ids / sizeof *text_ids; i++) {
        char k[96];
        snprintf(k, sizeof k, "qwen3tts.%s", text_ids[i]);
        put_num(cfg, text_ids[i], gt, k);
    }
    cJSON *langs = layout_kv_named_ids(gt, "qwen3tts.codec_language_names", "qwen3tts.codec_language_ids");
    if (langs) cJSON_AddItemToObject(tk, "codec_language_id", langs);
    cJSON *spk = layout_kv_named_ids(gt, "qwen3tts.spk_names", "qwen3tts.spk_token_ids");
    cJSON *dia_ids = layout_kv_named_ids(gt, "qwen3tts.spk_names", "qwen3tts.spk_dialect_token_ids");
    if (spk) {
        cJSON_AddItemToObject(tk, "spk_id", spk);
        cJSON *dia = cJSON_AddObjectToObject(tk, "spk_is_dialect");
        for (const cJSON *it = spk->child; it; it = it->next) {
            /* the dialect is stored as its language token: back to the language name */
            const cJSON *d = dia_ids ? cJSON_GetObjectItemCaseSensitive(dia_ids, it->string) : NULL;
            const char *lang = NULL;
            for (const cJSON *l = langs ? langs->child : NULL; l && d && d->valuedouble > 0; l = l->next)
                if (l->valuedouble == d->valuedouble) lang = l->string;
            if (lang) cJSON_AddStringToObject(dia, it->string, lang);
            else cJSON_AddFalseToObject(dia, it->string);
        }
    }
    cJSON_Delete(dia_ids);
    cJSON *se = cJSON_GetObjectItemCaseSensitive(cfg, "speaker_encoder_config");
    if (se) put_num(se, "sample_rate", gt, "qwen3tts.speaker.sample_rate");
    int rc = layout_write_json(m->dir, "config.json", cfg, err);
    cJSON_Delete(cfg);
    if (rc) return -1;
    static const char *const dec_keys[] = {"head_dim", "sliding_window", "rms_norm_eps", "rope_theta",
                                           "upsample_rates", "upsampling_ratios"};
    cJSON *dec = cJSON_CreateObject();
    layout_copy_kv(gc, "qwen3tts_codec.dec.", dec_keys, sizeof dec_keys / sizeof *dec_keys, dec);
    cJSON *cc = layout_codec_config(b->codec, dec, NULL, err);
    cJSON_Delete(dec);
    if (!cc) return -1;
    put_num(cc, "input_sample_rate", gc, "qwen3tts_codec.input_sample_rate");
    put_num(cc, "output_sample_rate", gc, "qwen3tts_codec.output_sample_rate");
    put_num(cc, "decode_upsample_rate", gc, "qwen3tts_codec.decode_upsample");
    put_num(cc, "encode_downsample_rate", gc, "qwen3tts_codec.encode_downsample");
    rc = layout_write_json(m->dir, "speech_tokenizer/config.json", cc, err);
    cJSON_Delete(cc);
    if (rc) return -1;
    return layout_write_tokenizer(m->dir, gt, 0, err);
}

static const layout_pair pair = {
    .is_first = is_talker,
    .is_second = is_codec,
    .second_what = "speech tokenizer (qwen3-tts-tokenizer-12hz*.gguf)",
    .first_rules = talker_rules,
    .n_first = sizeof talker_rules / sizeof *talker_rules,
    .second_rules = codec_rules,
    .n_second = sizeof codec_rules / sizeof *codec_rules,
    .configs = configs,
};

static int open_crispasr(qtts_model_files *m, const char *path, qtts_gguf *g, int flags, qtts_err *err) {
    return layout_open_pair(m, path, g, flags, &pair, err);
}

const layout_reader qtts_layout_crispasr = {
    .name = "CrispASR",
    .expect = "general.architecture qwen3tts with talker.token_embd.weight, qwen3tts_tokenizer with codec.dec.*",
    .signature = "codec.dec.pre_conv_w",
    .detect = detect,
    .open = open_crispasr,
};
