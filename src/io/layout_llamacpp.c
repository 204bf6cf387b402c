/* llama.cpp's pair (convert_hf_to_gguf.py's Qwen3TTSTalkerModel and, with
 * --mmproj, Qwen3TTSSpeakerEncoderModel; ggml-org/Qwen3-TTS-12Hz-*-GGUF):
 *   the talker file, architecture "qwen3tts": the talker decoder under
 *     llama.cpp's usual names, one token_embd table of the text rows already
 *     through the text projection followed by the codec rows, codec_head as
 *     "output", and a vocabulary of the text tokens then one name per codec
 *     row ("<|codec_bos|>", "<|codec_language_english|>", "<|spk_ryan|>", ...);
 *   the mmproj ("clip"): the speaker encoder (a.*), the code predictor
 *     (a.gen.code.*: its 15 tables and heads stacked) and the speech
 *     tokenizer's decoder (a.gen.wav.*: codebooks divided by their usage,
 *     SnakeBeta stored as exp(alpha) and 1/(exp(beta)+1e-9)). No encoder:
 *     voices clone from the x-vector alone.
 * The converter writes no decoder attention settings (clip.cpp fixes them):
 * the released checkpoints' head_dim 64, window 72, epsilon 1e-5 and rope
 * base 1e4 are assumed, and the code predictor's rope base is the talker's.
 * The speakers' dialects are not carried. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/layout_internal.h"

#define WB(from, to, dest) {from ".weight", to ".weight", dest, XF_NONE}, {from ".bias", to ".bias", dest, XF_NONE}
#define LM_LAYER(f, t, ln1, ln2, out)                                                                           \
    {f "." ln1 ".weight", t ".input_layernorm.weight", LR_MODEL, 0},                                           \
        {f "." ln2 ".weight", t ".post_attention_layernorm.weight", LR_MODEL, 0},                              \
        {f ".attn_q.weight", t ".self_attn.q_proj.weight", LR_MODEL, 0},                                       \
        {f ".attn_k.weight", t ".self_attn.k_proj.weight", LR_MODEL, 0},                                       \
        {f ".attn_v.weight", t ".self_attn.v_proj.weight", LR_MODEL, 0},                                       \
        {f "." out ".weight", t ".self_attn.o_proj.weight", LR_MODEL, 0},                                      \
        {f ".attn_q_norm.weight", t ".self_attn.q_norm.weight", LR_MODEL, 0},                                  \
        {f ".attn_k_norm.weight", t ".self_attn.k_norm.weight", LR_MODEL, 0},                                  \
        {f ".ffn_gate.weight", t ".mlp.gate_proj.weight", LR_MODEL, 0},                                        \
        {f ".ffn_up.weight", t ".mlp.up_proj.weight", LR_MODEL, 0},                                            \
        {f ".ffn_down.weight", t ".mlp.down_proj.weight", LR_MODEL, 0}

static const layout_rule talker_rules[] = {
    LM_LAYER("blk.{a}", "talker.model.layers.{a}", "attn_norm", "ffn_norm", "attn_output"),
    {"token_embd.weight", "", LR_MODEL, XF_TOKEN_EMBD},
    {"output_norm.weight", "talker.model.norm.weight", LR_MODEL, 0},
    {"output.weight", "talker.codec_head.weight", LR_MODEL, 0},
};

#define CP "talker.code_predictor"
#define SPK "speaker_encoder"
#define TFM "decoder.pre_transformer"
#define DEC_BLK "decoder.decoder.{a+1}.block"
#define WAV "a.gen.wav"
#define CODEC(from, to, xf) {from, to, LR_CODEC, xf}

static const layout_rule mmproj_rules[] = {
    /* the code predictor */
    LM_LAYER("a.gen.code.blk.{a}", CP ".model.layers.{a}", "ln1", "ln2", "attn_out"),
    {"a.gen.code.embd.weight", CP ".model.codec_embedding.{k}.weight", LR_MODEL, XF_STACK},
    {"a.gen.code.head.weight", CP ".lm_head.{k}.weight", LR_MODEL, XF_STACK},
    {"a.gen.code.output_norm.weight", CP ".model.norm.weight", LR_MODEL, 0},
    WB("a.gen.code.proj_in", CP ".small_to_mtp_projection", LR_MODEL),
    {"a.gen.code.out_embd.weight", "", LR_DROP, 0}, /* the codec rows again (token_embd has them) */
    /* the speaker encoder (ECAPA-TDNN) */
    WB("a.conv1d.0", SPK ".blocks.0.conv", LR_MODEL),
    WB("a.blk.{a}.conv_pw1", SPK ".blocks.{a}.tdnn1.conv", LR_MODEL),
    WB("a.blk.{a}.conv_pw2", SPK ".blocks.{a}.tdnn2.conv", LR_MODEL),
    WB("a.blk.{a}.se_conv1", SPK ".blocks.{a}.se_block.conv1", LR_MODEL),
    WB("a.blk.{a}.se_conv2", SPK ".blocks.{a}.se_block.conv2", LR_MODEL),
    WB("a.blk.{a}.res2.{b}", SPK ".blocks.{a}.res2net_block.blocks.{b}.conv", LR_MODEL),
    WB("a.conv_out", SPK ".mfa.conv", LR_MODEL),
    WB("a.asp_attn", SPK ".asp.conv", LR_MODEL),
    WB("a.asp_tdnn", SPK ".asp.tdnn.conv", LR_MODEL),
    WB("mm.a.fc", SPK ".fc", LR_MODEL),
    /* the speech tokenizer's decoder */
    {WAV ".quant.first.in_proj.weight", "", LR_DROP, 0}, /* used by encoding only */
    CODEC(WAV ".quant.first.out_proj.weight", "decoder.quantizer.rvq_first.output_proj.weight", XF_ADD_DIM),
    CODEC(WAV ".quant.first.codebook.weight", "decoder.quantizer.rvq_first.vq.layers.0._codebook.embedding_sum",
          XF_CODEBOOK),
    CODEC(WAV ".quant.rest.out_proj.weight", "decoder.quantizer.rvq_rest.output_proj.weight", XF_ADD_DIM),
    CODEC(WAV ".quant.rest.codebook.weight", "decoder.quantizer.rvq_rest.vq.layers.{k}._codebook.embedding_sum",
          XF_STACK_CODEBOOK),
    WB(WAV ".pre_conv", "decoder.pre_conv.conv", LR_CODEC),
    WB(WAV ".tfm.in_proj", TFM ".input_proj", LR_CODEC),
    WB(WAV ".tfm.out_proj", TFM ".output_proj", LR_CODEC),
    CODEC(WAV ".tfm.output_norm.weight", TFM ".norm.weight", 0),
    CODEC(WAV ".tfm.blk.{a}.ln1.weight", TFM ".layers.{a}.input_layernorm.weight", 0),
    CODEC(WAV ".tfm.blk.{a}.ln2.weight", TFM ".layers.{a}.post_attention_layernorm.weight", 0),
    CODEC(WAV ".tfm.blk.{a}.attn_q.weight", TFM ".layers.{a}.self_attn.q_proj.weight", 0),
    CODEC(WAV ".tfm.blk.{a}.attn_k.weight", TFM ".layers.{a}.self_attn.k_proj.weight", 0),
    CODEC(WAV ".tfm.blk.{a}.attn_v.weight", TFM ".layers.{a}.self_attn.v_proj.weight", 0),
    CODEC(WAV ".tfm.blk.{a}.attn_out.weight", TFM ".layers.{a}.self_attn.o_proj.weight", 0),
    CODEC(WAV ".tfm.blk.{a}.ls1.weight", TFM ".layers.{a}.self_attn_layer_scale.scale", 0),
    CODEC(WAV ".tfm.blk.{a}.ls2.weight", TFM ".layers.{a}.mlp_layer_scale.scale", 0),
    CODEC(WAV ".tfm.blk.{a}.ffn_gate.weight", TFM ".layers.{a}.mlp.gate_proj.weight", 0),
    CODEC(WAV ".tfm.blk.{a}.ffn_up.weight", TFM ".layers.{a}.mlp.up_proj.weight", 0),
    CODEC(WAV ".tfm.blk.{a}.ffn_down.weight", TFM ".layers.{a}.mlp.down_proj.weight", 0),
    WB(WAV ".up.blk.{a}.conv", "decoder.upsample.{a}.0.conv", LR_CODEC),
    WB(WAV ".up.blk.{a}.dwconv", "decoder.upsample.{a}.1.dwconv.conv", LR_CODEC),
    WB(WAV ".up.blk.{a}.norm", "decoder.upsample.{a}.1.norm", LR_CODEC),
    WB(WAV ".up.blk.{a}.pw1", "decoder.upsample.{a}.1.pwconv1", LR_CODEC),
    WB(WAV ".up.blk.{a}.pw2", "decoder.upsample.{a}.1.pwconv2", LR_CODEC),
    CODEC(WAV ".up.blk.{a}.gamma", "decoder.upsample.{a}.1.gamma", 0),
    WB(WAV ".dac.entry", "decoder.decoder.0.conv", LR_CODEC),
    CODEC(WAV ".dac.blk.{a}.snake.alpha", DEC_BLK ".0.alpha", XF_SNAKE_ALPHA),
    CODEC(WAV ".dac.blk.{a}.snake.beta", DEC_BLK ".0.beta", XF_SNAKE_BETA),
    WB(WAV ".dac.blk.{a}.conv", DEC_BLK ".1.conv", LR_CODEC),
    CODEC(WAV ".dac.blk.{a}.res.{b}.act1.alpha", DEC_BLK ".{b+2}.act1.alpha", XF_SNAKE_ALPHA),
    CODEC(WAV ".dac.blk.{a}.res.{b}.act1.beta", DEC_BLK ".{b+2}.act1.beta", XF_SNAKE_BETA),
    CODEC(WAV ".dac.blk.{a}.res.{b}.act2.alpha", DEC_BLK ".{b+2}.act2.alpha", XF_SNAKE_ALPHA),
    CODEC(WAV ".dac.blk.{a}.res.{b}.act2.beta", DEC_BLK ".{b+2}.act2.beta", XF_SNAKE_BETA),
    WB(WAV ".dac.blk.{a}.res.{b}.conv1", DEC_BLK ".{b+2}.conv1.conv", LR_CODEC),
    WB(WAV ".dac.blk.{a}.res.{b}.conv2", DEC_BLK ".{b+2}.conv2.conv", LR_CODEC),
    CODEC(WAV ".dac.post_snake.alpha", "decoder.decoder.5.alpha", XF_SNAKE_ALPHA),
    CODEC(WAV ".dac.post_snake.beta", "decoder.decoder.5.beta", XF_SNAKE_BETA),
    WB(WAV ".dac.post_conv", "decoder.decoder.6.conv", LR_CODEC),
    {WAV ".quant.rest.in_proj.weight", "", LR_DROP, 0},
};

static int is_talker(const qtts_gguf *g) {
    return layout_arch_is(g, "qwen3tts") && layout_has_tensor(g, "token_embd.weight") &&
           layout_has_tensor(g, "output.weight");
}
static int is_mmproj(const qtts_gguf *g) {
    return layout_arch_is(g, "clip") && layout_has_tensor(g, "a.gen.code.head.weight") &&
           layout_has_tensor(g, WAV ".pre_conv.weight");
}
static int detect(const qtts_gguf *g) {
    if (is_talker(g) || is_mmproj(g)) return 1;
    char s[64];
    /* CrispASR's talker file shares "qwen3tts" (its reader runs first): a
     * "qwen3tts" file of neither layout, or an mmproj that says it is
     * Qwen3-TTS's without the tensors, is mislabeled */
    if (layout_arch_is(g, "qwen3tts")) return -1;
    if (layout_arch_is(g, "clip") && layout_kv_str(g, "clip.gen.audio.projector_type", s, sizeof s) &&
        !strcmp(s, "qwen3tts_gen"))
        return -1;
    return 0;
}

static const qtts_tensor *tensor_named(const qtts_gguf *g, const char *name) {
    for (int i = 0; i < qtts_gguf_n_tensors(g); i++)
        if (!strcmp(qtts_gguf_tensor(g, i)->name, name)) return qtts_gguf_tensor(g, i);
    return NULL;
}

/* token_embd holds the text rows then one row per codec id: the text part is
 * as long as the table less codec_head's rows. */
static int prepare(layout_build *b, const qtts_gguf *talker, const qtts_gguf *mmproj, qtts_err *err) {
    (void)mmproj;
    const qtts_tensor *emb = tensor_named(talker, "token_embd.weight"), *out = tensor_named(talker, "output.weight");
    if (!emb || !out || emb->ndim != 2 || out->ndim != 2 || emb->shape[0] <= out->shape[0])
        return qtts_fail(err, "%s: token_embd.weight is not the text rows followed by output.weight's codec rows",
                         b->label);
    b->text_rows = emb->shape[0] - out->shape[0];
    return 0;
}

/* The vocabulary index of a token, or -1. */
static int64_t token_id(const qtts_gguf *g, const char *tok) {
    qtts_gguf_type et;
    uint64_t n = 0;
    qtts_err e = {0};
    if (qtts_gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n, NULL, &e) || et != QTTS_GGUF_STRING) return -1;
    const size_t want = strlen(tok);
    for (uint64_t i = 0; i < n; i++) {
        size_t len;
        const char *s = qtts_gguf_get_arr_str(g, "tokenizer.ggml.tokens", i, &len);
        if (s && len == want && !memcmp(s, tok, len)) return (int64_t)i;
    }
    return -1;
}

/* name -> codec id of every "<|prefix NAME|>" token past the text rows. */
static cJSON *codec_names(const qtts_gguf *g, const char *prefix, int64_t text_rows) {
    qtts_gguf_type et;
    uint64_t n = 0;
    qtts_err e = {0};
    cJSON *o = NULL;
    if (qtts_gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n, NULL, &e) || et != QTTS_GGUF_STRING) return NULL;
    const size_t pl = strlen(prefix);
    for (uint64_t i = (uint64_t)text_rows; i < n; i++) {
        size_t len;
        const char *s = qtts_gguf_get_arr_str(g, "tokenizer.ggml.tokens", i, &len);
        if (!s || len < pl + 3 || len > 96 || memcmp(s, prefix, pl) || memcmp(s + len - 2, "|>", 2)) continue;
        char name[96];
        snprintf(name, sizeof name, "%.*s", (int)(len - pl - 2), s + pl);
        if (!o) o = cJSON_CreateObject();
        if (o && !cJSON_GetObjectItemCaseSensitive(o, name)) cJSON_AddNumberToObject(o, name, (double)(i - (uint64_t)text_rows));
    }
    return o;
}

static void put_num(cJSON *o, const char *key, const qtts_gguf *g, const char *gkey) {
    double v;
    if (layout_kv_num(g, gkey, &v)) return;
    char text[32];
    snprintf(text, sizeof text, "%.7g", v);
    cJSON_AddNumberToObject(o, key, strtod(text, NULL));
}

static int configs(qtts_model_files *m, const layout_build *b, const qtts_gguf *gt, const qtts_gguf *gm,
                   qtts_err *err) {
    cJSON *cfg = layout_model_config(b->model, err);
    if (!cfg) return -1;
    cJSON *tk = cJSON_GetObjectItemCaseSensitive(cfg, "talker_config");
    cJSON *cp = cJSON_GetObjectItemCaseSensitive(tk, "code_predictor_config");
    const int64_t text_rows = b->text_rows;
    int rc = 0;
    static const char *const text_ids[][2] = {
        {"im_start_token_id", "<|im_start|>"}, {"im_end_token_id", "<|im_end|>"}, {"tts_pad_token_id", "<tts_pad>"},
        {"tts_bos_token_id", "<tts_text_bos>"}, {"tts_eos_token_id", "<tts_text_eod>"},
        {"assistant_token_id", "assistant"},
    };
    for (size_t i = 0; i < sizeof text_ids / sizeof *text_ids && !rc; i++) {
        int64_t id = token_id(gt, text_ids[i][1]);
        if (id < 0 || id >= text_rows) rc = qtts_fail(err, "%s: no '%s' text token in its vocabulary", b->label, text_ids[i][1]);
        else cJSON_AddNumberToObject(cfg, text_ids[i][0], (double)id);
    }
    /* the converter names each codec row after the talker_config key that held its id, "_id" dropped */
    static const char *const codec_ids[][2] = {
        {"codec_pad_id", "<|codec_pad|>"},           {"codec_bos_id", "<|codec_bos|>"},
        {"codec_eos_token_id", "<|codec_eos_token|>"}, {"codec_think_id", "<|codec_think|>"},
        {"codec_nothink_id", "<|codec_nothink|>"},   {"codec_think_bos_id", "<|codec_think_bos|>"},
        {"codec_think_eos_id", "<|codec_think_eos|>"},
    };
    for (size_t i = 0; i < sizeof codec_ids / sizeof *codec_ids && !rc; i++) {
        int64_t id = token_id(gt, codec_ids[i][1]);
        if (id < text_rows) rc = qtts_fail(err, "%s: no '%s' codec token in its vocabulary", b->label, codec_ids[i][1]);
        else cJSON_AddNumberToObject(tk, codec_ids[i][0], (double)(id - text_rows));
    }
    cJSON *langs = codec_names(gt, "<|codec_language_", text_rows);
    if (langs) cJSON_AddItemToObject(tk, "codec_language_id", langs);
    cJSON *spk = codec_names(gt, "<|spk_", text_rows);
    if (spk) {
        cJSON_AddItemToObject(tk, "spk_id", spk);
        cJSON *dia = cJSON_AddObjectToObject(tk, "spk_is_dialect");
        for (const cJSON *it = spk->child; dia && it; it = it->next) cJSON_AddFalseToObject(dia, it->string);
    }
    const int base = qtts_store_find(b->model, "speaker_encoder.fc.weight") != NULL;
    cJSON_AddStringToObject(cfg, "tts_model_type", base ? "base" : spk ? "custom_voice" : "voice_design");
    put_num(tk, "rope_theta", gt, "qwen3tts.rope.freq_base");
    put_num(tk, "rms_norm_eps", gt, "qwen3tts.attention.layer_norm_rms_epsilon");
    put_num(cp, "rope_theta", gt, "qwen3tts.rope.freq_base");
    put_num(cp, "rms_norm_eps", gm, "clip.gen.audio.attention.layer_norm_epsilon");
    if (!rc) rc = layout_write_json(m->dir, "config.json", cfg, err);
    cJSON_Delete(cfg);
    if (rc) return -1;
    cJSON *dec = cJSON_CreateObject();
    if (!dec) return qtts_fail(err, "out of memory");
    cJSON_AddNumberToObject(dec, "head_dim", 64);
    cJSON_AddNumberToObject(dec, "sliding_window", 72);
    cJSON_AddNumberToObject(dec, "rms_norm_eps", 1e-5);
    cJSON_AddNumberToObject(dec, "rope_theta", 10000);
    cJSON *cc = layout_codec_config(b->codec, dec, NULL, err);
    cJSON_Delete(dec);
    if (!cc) return -1;
    rc = layout_write_json(m->dir, "speech_tokenizer/config.json", cc, err);
    cJSON_Delete(cc);
    if (rc) return -1;
    return layout_write_tokenizer(m->dir, gt, text_rows, err);
}

static const layout_pair pair = {
    .is_first = is_talker,
    .is_second = is_mmproj,
    .second_what = "mmproj (mmproj-*.gguf with the a.gen.* tensors)",
    .first_rules = talker_rules,
    .n_first = sizeof talker_rules / sizeof *talker_rules,
    .second_rules = mmproj_rules,
    .n_second = sizeof mmproj_rules / sizeof *mmproj_rules,
    .prepare = prepare,
    .configs = configs,
};

static int open_llamacpp(qtts_model_files *m, const char *path, qtts_gguf *g, int flags, qtts_err *err) {
    return layout_open_pair(m, path, g, flags, &pair, err);
}

const layout_reader qtts_layout_llamacpp = {
    .name = "llama.cpp",
    .expect = "general.architecture qwen3tts with token_embd.weight and output.weight, its mmproj (clip) with a.gen.*",
    .signature = "token_embd.weight",
    .detect = detect,
    .open = open_llamacpp,
};
