/* Layout detection and the machinery every foreign layout shares (see
 * layout.h): name rules, the builder of the official stores, and the config
 * and tokenizer files rebuilt from tensor shapes and GGUF metadata. */
#include "io/layout.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/file.h"
#include "io/layout_internal.h"
#include "io/model_pack.h"
#include "tensor/quant.h"

/* ---- name rules ---- */

/* Matches s against pat: {a} and {b} match decimal indices (into idx), a
 * final {s} matches any rest (into *rest). */
static int match(const char *pat, const char *s, long idx[2], const char **rest) {
    while (*pat) {
        if (!strcmp(pat, "{s}")) {
            *rest = s;
            return *s != 0;
        }
        if (pat[0] == '{' && (pat[1] == 'a' || pat[1] == 'b') && pat[2] == '}') {
            if (!isdigit((unsigned char)*s)) return 0;
            char *end;
            long v = strtol(s, &end, 10);
            if (end - s > 6) return 0;
            idx[pat[1] - 'a'] = v;
            s = end;
            pat += 3;
            continue;
        }
        if (*pat++ != *s++) return 0;
    }
    return *s == 0;
}

/* Expands {a}, {b}, {k} (each optionally "*N" then "+N") and {s}. */
static int expand(const char *pat, const long idx[2], long k, const char *rest, char *out, size_t n) {
    size_t o = 0;
    while (*pat) {
        if (pat[0] == '{') {
            const char *close = strchr(pat, '}');
            if (!close) return -1;
            int w;
            if (pat[1] == 's') {
                w = snprintf(out + o, n - o, "%s", rest ? rest : "");
            } else {
                long v = pat[1] == 'a' ? idx[0] : pat[1] == 'b' ? idx[1] : k;
                const char *p = pat + 2;
                if (*p == '*') v *= strtol(p + 1, (char **)&p, 10);
                if (*p == '+') v += strtol(p + 1, NULL, 10);
                w = snprintf(out + o, n - o, "%ld", v);
            }
            if (w < 0 || (size_t)w >= n - o) return -1;
            o += (size_t)w;
            pat = close + 1;
            continue;
        }
        if (o + 1 >= n) return -1;
        out[o++] = *pat++;
    }
    out[o] = 0;
    return 0;
}

/* Storage-only matrices become Q8_0 (F32 when a row is not whole blocks of
 * 32): the kernels run neither. Embedding tables are read a row at a time
 * and convert on read, so they keep their type; so do 1-D and 3-D tensors,
 * which their loaders convert to f32 anyway. */
int layout_emit(layout_build *b, qtts_store *dst, const char *name, qtts_dtype type, int ndim, const int64_t *shape,
                const void *data, int owned, qtts_err *err) {
    if ((b->flags & QTTS_LAYOUT_CONVERT) && !qtts_dtype_runs(type) && ndim == 2 && !strstr(name, "embedding")) {
        const int64_t rows = shape[0], cols = shape[1];
        qtts_dtype to = qtts_dtype_row_bytes(QTTS_Q8_0, cols) ? QTTS_Q8_0 : QTTS_F32;
        size_t src_rb = qtts_dtype_row_bytes(type, cols), dst_rb = qtts_dtype_row_bytes(to, cols);
        if (!src_rb) return qtts_fail(err, "%s: tensor '%s' rows are not whole %s blocks", b->label, name, qtts_dtype_name(type));
        char *out = qtts_malloc(dst_rb * (size_t)rows, err);
        float *row = qtts_malloc((size_t)cols * sizeof *row, err);
        if (!out || !row) {
            free(out);
            free(row);
            if (owned) free((void *)data);
            return -1;
        }
        for (int64_t r = 0; r < rows; r++) {
            qtts_dequantize_row(type, (const char *)data + (size_t)r * src_rb, row, cols);
            if (to == QTTS_F32) memcpy(out + (size_t)r * dst_rb, row, dst_rb);
            else qtts_quantize_row(to, row, out + (size_t)r * dst_rb, cols);
        }
        free(row);
        if (owned) free((void *)data);
        if ((unsigned)type < 32) b->converted[type]++;
        return qtts_store_add(dst, name, to, ndim, shape, out, 1, err) ? (free(out), -1) : 0;
    }
    if (qtts_store_add(dst, name, type, ndim, shape, data, owned, err)) {
        if (owned) free((void *)data);
        return -1;
    }
    return 0;
}

/* An f32 copy of t transformed element-wise (the snake parameters). */
static float *f32_copy(const qtts_tensor *t, qtts_err *err) { return qtts_tensor_to_f32(t, err); }

static int emit_codebook(layout_build *b, qtts_store *dst, const char *to, qtts_dtype type, int64_t rows, int64_t dim,
                         const void *data, qtts_err *err) {
    int64_t shape[2] = {rows, dim};
    if (layout_emit(b, dst, to, type, 2, shape, data, 0, err)) return -1;
    /* the usage name sits next to the table: "..._codebook.embedding_sum" -> "..._codebook.cluster_usage" */
    char name[512];
    snprintf(name, sizeof name, "%s", to);
    char *dot = strrchr(name, '.');
    if (!dot) return qtts_fail(err, "%s: bad codebook name '%s'", b->label, to);
    snprintf(dot + 1, sizeof name - (size_t)(dot + 1 - name), "cluster_usage");
    float *ones = qtts_malloc((size_t)rows * sizeof *ones, err);
    if (!ones) return -1;
    for (int64_t i = 0; i < rows; i++) ones[i] = 1.0f;
    return layout_emit(b, dst, name, QTTS_F32, 1, &rows, ones, 1, err);
}

static int apply(layout_build *b, const qtts_tensor *t, const layout_rule *r, const long idx[2], const char *rest,
                 qtts_err *err) {
    qtts_store *dst = r->dest == LR_CODEC ? b->codec : b->model;
    char to[512];
    if (r->xform != XF_STACK && r->xform != XF_STACK_CODEBOOK && expand(r->to, idx, 0, rest, to, sizeof to))
        return qtts_fail(err, "%s: name too long for '%s'", b->label, t->name);
    int64_t shape[QTTS_MAX_DIMS];
    memcpy(shape, t->shape, sizeof shape);
    switch (r->xform) {
    case XF_NONE: return layout_emit(b, dst, to, t->type, t->ndim, t->shape, t->data, 0, err);
    case XF_ADD_DIM:
        if (t->ndim == 3) return layout_emit(b, dst, to, t->type, 3, t->shape, t->data, 0, err);
        if (t->ndim != 2) return qtts_fail(err, "%s: tensor '%s' is not a matrix", b->label, t->name);
        shape[2] = 1;
        return layout_emit(b, dst, to, t->type, 3, shape, t->data, 0, err);
    case XF_CODEBOOK:
        if (t->ndim != 2) return qtts_fail(err, "%s: codebook '%s' is not a matrix", b->label, t->name);
        return emit_codebook(b, dst, to, t->type, t->shape[0], t->shape[1], t->data, err);
    case XF_STACK:
    case XF_STACK_CODEBOOK: {
        if (t->ndim < 2) return qtts_fail(err, "%s: stacked tensor '%s' has one dimension", b->label, t->name);
        int64_t n = t->shape[0], inner = 1;
        for (int d = 1; d < t->ndim; d++) inner *= t->shape[d];
        size_t each = qtts_dtype_row_bytes(t->type, inner);
        if (!each) return qtts_fail(err, "%s: tensor '%s' cannot be split", b->label, t->name);
        for (int64_t k = 0; k < n; k++) {
            if (expand(r->to, idx, (long)k, rest, to, sizeof to)) return qtts_fail(err, "%s: name too long", b->label);
            const void *p = (const char *)t->data + (size_t)k * each;
            int rc = r->xform == XF_STACK_CODEBOOK
                         ? emit_codebook(b, dst, to, t->type, t->shape[1], t->ndim > 2 ? t->shape[2] : 1, p, err)
                         : layout_emit(b, dst, to, t->type, t->ndim - 1, t->shape + 1, p, 0, err);
            if (rc) return -1;
        }
        return 0;
    }
    case XF_SNAKE_ALPHA:
    case XF_SNAKE_BETA: {
        float *v = f32_copy(t, err);
        if (!v) return -1;
        int64_t n = qtts_tensor_numel(t);
        for (int64_t i = 0; i < n; i++) {
            /* the decoder computes exp(alpha) and 1/(exp(beta)+1e-9) again: these invert the stored forms */
            if (r->xform == XF_SNAKE_ALPHA) v[i] = logf(v[i] > 0 ? v[i] : 1e-30f);
            else {
                double e = 1.0 / (double)v[i] - 1e-9;
                v[i] = (float)log(e > 0 ? e : 1e-30);
            }
        }
        return layout_emit(b, dst, to, QTTS_F32, t->ndim, t->shape, v, 1, err);
    }
    case XF_TOKEN_EMBD: {
        if (t->ndim != 2 || b->text_rows <= 0 || b->text_rows >= t->shape[0])
            return qtts_fail(err, "%s: '%s' does not hold the text rows and the codec rows", b->label, t->name);
        size_t rb = qtts_dtype_row_bytes(t->type, t->shape[1]);
        int64_t text[2] = {b->text_rows, t->shape[1]}, codec[2] = {t->shape[0] - b->text_rows, t->shape[1]};
        if (layout_emit(b, b->model, "talker.model.text_embedding_projected.weight", t->type, 2, text, t->data, 0, err))
            return -1;
        return layout_emit(b, b->model, "talker.model.codec_embedding.weight", t->type, 2, codec,
                           (const char *)t->data + (size_t)b->text_rows * rb, 0, err);
    }
    }
    return qtts_fail(err, "%s: unknown transform", b->label);
}

int layout_map(layout_build *b, const qtts_store *src, const layout_rule *rules, size_t n_rules, qtts_err *err) {
    for (int i = 0; i < qtts_store_count(src); i++) {
        const qtts_tensor *t = qtts_store_at(src, i);
        size_t r = 0;
        long idx[2] = {0, 0};
        const char *rest = NULL;
        while (r < n_rules && !match(rules[r].from, t->name, idx, &rest)) r++;
        if (r == n_rules)
            return qtts_fail(err, "%s: tensor '%s' is not part of the %s layout (a file of another layout or version?)",
                             qtts_store_source(src), t->name, b->label);
        if (rules[r].dest == LR_DROP) continue;
        if (apply(b, t, &rules[r], idx, rest, err)) return -1;
    }
    return 0;
}

/* ---- configs from shapes ---- */

static const qtts_tensor *find(const qtts_store *st, const char *fmt, long i) {
    char name[512];
    snprintf(name, sizeof name, fmt, i);
    return qtts_store_find(st, name);
}

static void put_int(cJSON *o, const char *key, int64_t v) {
    if (!cJSON_GetObjectItemCaseSensitive(o, key)) cJSON_AddNumberToObject(o, key, (double)v);
}

int layout_lm_sizes(const qtts_store *st, const char *prefix, cJSON *obj, qtts_err *err) {
    char fmt[256];
    long layers = 0;
    snprintf(fmt, sizeof fmt, "%slayers.%%ld.self_attn.q_proj.weight", prefix);
    while (find(st, fmt, layers)) layers++;
    const qtts_tensor *q = find(st, fmt, 0), *k, *qn, *gate, *norm;
    snprintf(fmt, sizeof fmt, "%slayers.%%ld.self_attn.k_proj.weight", prefix);
    k = find(st, fmt, 0);
    snprintf(fmt, sizeof fmt, "%slayers.%%ld.self_attn.q_norm.weight", prefix);
    qn = find(st, fmt, 0);
    snprintf(fmt, sizeof fmt, "%slayers.%%ld.mlp.gate_proj.weight", prefix);
    gate = find(st, fmt, 0);
    snprintf(fmt, sizeof fmt, "%snorm.weight", prefix);
    norm = find(st, fmt, 0);
    if (!layers || !q || !k || !qn || !gate || !norm || q->ndim != 2 || k->ndim != 2 || gate->ndim != 2 ||
        qn->shape[0] < 2)
        return qtts_fail(err, "%s: the %slayers.* tensors are incomplete", qtts_store_source(st), prefix);
    const int64_t hd = qn->shape[0];
    put_int(obj, "hidden_size", norm->shape[0]);
    put_int(obj, "num_hidden_layers", layers);
    put_int(obj, "head_dim", hd);
    put_int(obj, "num_attention_heads", q->shape[0] / hd);
    put_int(obj, "num_key_value_heads", k->shape[0] / hd);
    put_int(obj, "intermediate_size", gate->shape[0]);
    return 0;
}

cJSON *layout_model_config(const qtts_store *model, qtts_err *err) {
    cJSON *root = cJSON_CreateObject(), *tk = cJSON_AddObjectToObject(root, "talker_config");
    cJSON *cp = tk ? cJSON_AddObjectToObject(tk, "code_predictor_config") : NULL;
    if (!cp) {
        cJSON_Delete(root);
        qtts_fail(err, "out of memory");
        return NULL;
    }
    const qtts_tensor *head = qtts_store_find(model, "talker.codec_head.weight");
    const qtts_tensor *te = qtts_store_find(model, "talker.model.text_embedding.weight");
    const qtts_tensor *tp = qtts_store_find(model, "talker.model.text_embedding_projected.weight");
    const qtts_tensor *cph = qtts_store_find(model, "talker.code_predictor.lm_head.0.weight");
    if (!head || (!te && !tp) || !cph) {
        cJSON_Delete(root);
        qtts_fail(err, "%s: the talker's codec_head, text embedding or the code predictor's heads are missing",
                  qtts_store_source(model));
        return NULL;
    }
    if (layout_lm_sizes(model, "talker.model.", tk, err) ||
        layout_lm_sizes(model, "talker.code_predictor.model.", cp, err)) {
        cJSON_Delete(root);
        return NULL;
    }
    long groups = 0;
    while (find(model, "talker.code_predictor.lm_head.%ld.weight", groups)) groups++;
    put_int(tk, "vocab_size", head->shape[0]);
    put_int(tk, "text_vocab_size", te ? te->shape[0] : tp->shape[0]);
    put_int(tk, "text_hidden_size", te ? te->shape[1] : tp->shape[1]);
    put_int(tk, "num_code_groups", groups + 1);
    put_int(cp, "vocab_size", cph->shape[0]);
    put_int(cp, "num_code_groups", groups + 1);
    const qtts_tensor *fc = qtts_store_find(model, "speaker_encoder.fc.weight");
    const qtts_tensor *c0 = qtts_store_find(model, "speaker_encoder.blocks.0.conv.weight");
    if (fc && c0 && fc->ndim == 3 && c0->ndim == 3) {
        cJSON *se = cJSON_AddObjectToObject(root, "speaker_encoder_config");
        /* the channel list, kernels and dilations as the shapes give them; dilations take the class default */
        int64_t ch[5], ks[5];
        ch[0] = c0->shape[0], ks[0] = c0->shape[2];
        for (long i = 1; i < 4; i++) {
            const qtts_tensor *t = find(model, "speaker_encoder.blocks.%ld.tdnn1.conv.weight", i);
            const qtts_tensor *r = find(model, "speaker_encoder.blocks.%ld.res2net_block.blocks.0.conv.weight", i);
            ch[i] = t ? t->shape[0] : 512, ks[i] = r ? r->shape[2] : 3;
        }
        const qtts_tensor *mfa = qtts_store_find(model, "speaker_encoder.mfa.conv.weight");
        const qtts_tensor *asp = qtts_store_find(model, "speaker_encoder.asp.conv.weight");
        const qtts_tensor *se1 = qtts_store_find(model, "speaker_encoder.blocks.1.se_block.conv1.weight");
        const qtts_tensor *r0 = qtts_store_find(model, "speaker_encoder.blocks.1.res2net_block.blocks.0.conv.weight");
        ch[4] = mfa ? mfa->shape[0] : 1536, ks[4] = mfa ? mfa->shape[2] : 1;
        cJSON *jch = cJSON_AddArrayToObject(se, "enc_channels"), *jks = cJSON_AddArrayToObject(se, "enc_kernel_sizes");
        for (int i = 0; i < 5; i++) {
            cJSON_AddItemToArray(jch, cJSON_CreateNumber((double)ch[i]));
            cJSON_AddItemToArray(jks, cJSON_CreateNumber((double)ks[i]));
        }
        put_int(se, "mel_dim", c0->shape[1]);
        put_int(se, "enc_dim", fc->shape[0]);
        if (asp) put_int(se, "enc_attention_channels", asp->shape[1]);
        if (se1) put_int(se, "enc_se_channels", se1->shape[0]);
        if (r0 && r0->shape[0]) put_int(se, "enc_res2net_scale", ch[1] / r0->shape[0]);
    }
    return root;
}

static int64_t dim_of(const qtts_store *st, const char *name, int d) {
    const qtts_tensor *t = qtts_store_find(st, name);
    return t && d < t->ndim ? t->shape[d] : -1;
}

cJSON *layout_codec_config(const qtts_store *codec, const cJSON *dec_extra, const cJSON *enc_extra, qtts_err *err) {
    cJSON *root = cJSON_CreateObject();
    cJSON *dec = cJSON_AddObjectToObject(root, "decoder_config"), *enc = cJSON_AddObjectToObject(root, "encoder_config");
    cJSON_AddStringToObject(root, "model_type", "qwen3_tts_tokenizer_12hz");
    for (const cJSON *it = dec_extra ? dec_extra->child : NULL; it; it = it->next)
        cJSON_AddItemToObject(dec, it->string, cJSON_Duplicate(it, 1));
    for (const cJSON *it = enc_extra ? enc_extra->child : NULL; it; it = it->next)
        cJSON_AddItemToObject(enc, it->string, cJSON_Duplicate(it, 1));
    const int64_t latent = dim_of(codec, "decoder.pre_conv.conv.weight", 0);
    const int64_t cbdim = dim_of(codec, "decoder.quantizer.rvq_first.output_proj.weight", 0);
    const int64_t hidden = dim_of(codec, "decoder.pre_transformer.input_proj.weight", 0);
    const int64_t inter = dim_of(codec, "decoder.pre_transformer.layers.0.mlp.gate_proj.weight", 0);
    const int64_t ddim = dim_of(codec, "decoder.decoder.0.conv.weight", 0);
    const int64_t cbsize = dim_of(codec, "decoder.quantizer.rvq_first.vq.layers.0._codebook.embedding_sum", 0);
    if (latent < 0 || cbdim < 0 || hidden < 0 || ddim < 0 || cbsize < 0) {
        cJSON_Delete(root);
        qtts_fail(err, "%s: the speech tokenizer's decoder tensors are incomplete", qtts_store_source(codec));
        return NULL;
    }
    long layers = 0, rest = 0;
    while (find(codec, "decoder.pre_transformer.layers.%ld.input_layernorm.weight", layers)) layers++;
    while (find(codec, "decoder.quantizer.rvq_rest.vq.layers.%ld._codebook.embedding_sum", rest)) rest++;
    put_int(dec, "latent_dim", latent);
    put_int(dec, "codebook_dim", cbdim);
    put_int(dec, "codebook_size", cbsize);
    put_int(dec, "hidden_size", hidden);
    if (inter > 0) put_int(dec, "intermediate_size", inter);
    put_int(dec, "num_hidden_layers", layers);
    put_int(dec, "num_quantizers", 1 + rest);
    put_int(dec, "decoder_dim", ddim);
    const int64_t q = dim_of(codec, "decoder.pre_transformer.layers.0.self_attn.q_proj.weight", 0);
    const cJSON *hd = cJSON_GetObjectItemCaseSensitive(dec, "head_dim");
    if (q > 0 && cJSON_IsNumber(hd) && hd->valuedouble > 0) put_int(dec, "num_attention_heads", q / (int64_t)hd->valuedouble);
    if (q > 0 && cJSON_IsNumber(hd) && hd->valuedouble > 0) put_int(dec, "num_key_value_heads", q / (int64_t)hd->valuedouble);
    if (!cJSON_GetObjectItemCaseSensitive(dec, "upsample_rates")) { /* ConvTranspose kernel = 2 x stride */
        cJSON *a = cJSON_AddArrayToObject(dec, "upsample_rates");
        for (long i = 1; find(codec, "decoder.decoder.%ld.block.1.conv.weight", i); i++)
            cJSON_AddItemToArray(a, cJSON_CreateNumber((double)(find(codec, "decoder.decoder.%ld.block.1.conv.weight", i)->shape[2] / 2)));
    }
    if (!cJSON_GetObjectItemCaseSensitive(dec, "upsampling_ratios")) {
        cJSON *a = cJSON_AddArrayToObject(dec, "upsampling_ratios");
        for (long i = 0; find(codec, "decoder.upsample.%ld.0.conv.weight", i); i++)
            cJSON_AddItemToArray(a, cJSON_CreateNumber((double)find(codec, "decoder.upsample.%ld.0.conv.weight", i)->shape[2]));
    }
    /* the encoder, when present: the acoustic codebooks the file kept */
    long ac = 0;
    while (find(codec, "encoder.quantizer.acoustic_residual_vector_quantizer.layers.%ld.codebook.embed_sum", ac)) ac++;
    const int64_t ehid = dim_of(codec, "encoder.encoder_transformer.layers.0.self_attn.q_proj.weight", 1);
    if (ehid > 0) {
        long el = 0;
        while (find(codec, "encoder.encoder_transformer.layers.%ld.self_attn.q_proj.weight", el)) el++;
        put_int(enc, "hidden_size", ehid);
        put_int(enc, "num_hidden_layers", el);
        put_int(enc, "intermediate_size", dim_of(codec, "encoder.encoder_transformer.layers.0.mlp.fc1.weight", 0));
        put_int(enc, "num_filters", dim_of(codec, "encoder.encoder.layers.0.conv.weight", 0));
        put_int(enc, "codebook_dim",
                dim_of(codec, "encoder.quantizer.semantic_residual_vector_quantizer.layers.0.codebook.embed_sum", 1));
        put_int(enc, "codebook_size",
                dim_of(codec, "encoder.quantizer.semantic_residual_vector_quantizer.layers.0.codebook.embed_sum", 0));
        put_int(enc, "num_quantizers", 1 + ac);
        put_int(root, "encoder_valid_num_quantizers", 1 + ac < 16 ? 1 + ac : 16);
        const cJSON *ehd = cJSON_GetObjectItemCaseSensitive(enc, "head_dim");
        const int64_t eq = dim_of(codec, "encoder.encoder_transformer.layers.0.self_attn.q_proj.weight", 0);
        if (cJSON_IsNumber(ehd) && ehd->valuedouble > 0 && eq > 0) {
            put_int(enc, "num_attention_heads", eq / (int64_t)ehd->valuedouble);
            put_int(enc, "num_key_value_heads", eq / (int64_t)ehd->valuedouble);
        }
    }
    return root;
}

/* ---- files ---- */

int layout_write_json(const char *dir, const char *rel, const cJSON *obj, qtts_err *err) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    char *text = cJSON_Print(obj);
    if (!text) return qtts_fail(err, "out of memory");
    int rc = qtts_write_file(path, text, strlen(text), err);
    free(text);
    return rc;
}

/* The Qwen2 added tokens (151643..151675) every 12 Hz checkpoint ships: for
 * files whose vocabulary leaves them out (CrispASR writes vocab.json only). */
static const char *const qwen2_added[] = {
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>",
    "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
    "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>",
    "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>",
    "<think>", "</think>", "<|audio_start|>", "<|audio_end|>", "<tts_pad>", "<tts_text_bos>", "<tts_text_eod>",
    "<tts_text_bos_single>", "<|audio_pad|>",
};
enum { QWEN2_ADDED_FIRST = 151643 };

static int is_special(const char *s, size_t n) {
    return n >= 3 && ((s[0] == '<' && s[n - 1] == '>' && (s[1] == '|' || n > 4)));
}

int layout_write_tokenizer(const char *dir, const qtts_gguf *g, int64_t n_text, qtts_err *err) {
    qtts_gguf_type et;
    uint64_t n_tok = 0, n_merges = 0, n_types = 0;
    const void *types = NULL;
    qtts_err e2 = {0};
    if (qtts_gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n_tok, NULL, err) || et != QTTS_GGUF_STRING)
        return qtts_fail_prefix(err, "no vocabulary in the file (tokenizer.ggml.tokens) and no vocab.json");
    if (qtts_gguf_get_arr(g, "tokenizer.ggml.merges", &et, &n_merges, NULL, err) || et != QTTS_GGUF_STRING)
        return qtts_fail_prefix(err, "no BPE merges in the file (tokenizer.ggml.merges) and no merges.txt");
    qtts_gguf_type tt = QTTS_GGUF_I32;
    if (qtts_gguf_get_arr(g, "tokenizer.ggml.token_type", &tt, &n_types, &types, &e2) || tt != QTTS_GGUF_I32)
        n_types = 0;
    if (n_text <= 0 || (uint64_t)n_text > n_tok) n_text = (int64_t)n_tok;
    cJSON *vocab = cJSON_CreateObject(), *cfg = cJSON_CreateObject(), *added = cJSON_AddObjectToObject(cfg, "added_tokens_decoder");
    int rc = vocab && added ? 0 : qtts_fail(err, "out of memory");
    int have_im_start = 0;
    for (int64_t i = 0; i < n_text && !rc; i++) {
        size_t len;
        const char *s = qtts_gguf_get_arr_str(g, "tokenizer.ggml.tokens", (uint64_t)i, &len);
        int32_t type = 1;
        if ((uint64_t)i < n_types) memcpy(&type, (const char *)types + 4 * i, 4);
        if (type == 5 /* unused padding slot */) continue;
        char *tok = malloc(len + 1);
        if (!tok) {
            rc = qtts_fail(err, "out of memory");
            break;
        }
        memcpy(tok, s, len);
        tok[len] = 0;
        /* added tokens: control/user-defined types, or (files without types) ids past the BPE vocabulary */
        int special = type == 3 || type == 4 || (!n_types && i >= QWEN2_ADDED_FIRST && is_special(tok, len));
        if (special) {
            char id[24];
            snprintf(id, sizeof id, "%lld", (long long)i);
            cJSON *o = cJSON_AddObjectToObject(added, id);
            cJSON_AddStringToObject(o, "content", tok);
            cJSON_AddBoolToObject(o, "special", 1);
            if (!strcmp(tok, "<|im_start|>")) have_im_start = 1;
        } else {
            cJSON_AddNumberToObject(vocab, tok, (double)i); /* appended: a name lookup per token would be quadratic */
        }
        free(tok);
    }
    if (!rc && !have_im_start && n_text <= QWEN2_ADDED_FIRST) /* a bare BPE vocabulary: add the Qwen2 tokens */
        for (size_t i = 0; i < sizeof qwen2_added / sizeof *qwen2_added; i++) {
            char id[24];
            snprintf(id, sizeof id, "%zu", QWEN2_ADDED_FIRST + i);
            cJSON *o = cJSON_AddObjectToObject(added, id);
            cJSON_AddStringToObject(o, "content", qwen2_added[i]);
            cJSON_AddBoolToObject(o, "special", 1);
        }
    if (!rc) rc = layout_write_json(dir, "vocab.json", vocab, err);
    if (!rc) rc = layout_write_json(dir, "tokenizer_config.json", cfg, err);
    cJSON_Delete(vocab);
    cJSON_Delete(cfg);
    if (rc) return rc;
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/merges.txt", dir);
    FILE *f = fopen(path, "wb");
    if (!f) return qtts_fail(err, "%s: %s", path, strerror(errno));
    for (uint64_t i = 0; i < n_merges; i++) {
        size_t len;
        const char *s = qtts_gguf_get_arr_str(g, "tokenizer.ggml.merges", i, &len);
        fwrite(s, 1, len, f);
        fputc('\n', f);
    }
    if (fclose(f) != 0) return qtts_fail(err, "%s: write failed", path);
    return 0;
}

int layout_kv_num(const qtts_gguf *g, const char *key, double *out) {
    if (qtts_gguf_find_key(g, key) < 0) return -1;
    qtts_err e = {0};
    return qtts_gguf_get_float(g, key, out, &e);
}

const char *layout_kv_str(const qtts_gguf *g, const char *key, char *buf, size_t n) {
    size_t len;
    const char *s = qtts_gguf_get_str(g, key, &len);
    if (!s) return NULL;
    snprintf(buf, n, "%.*s", (int)(len < n ? len : n - 1), s);
    return buf;
}

cJSON *layout_kv_named_ids(const qtts_gguf *g, const char *names_key, const char *ids_key) {
    qtts_gguf_type nt, it;
    uint64_t nn, ni;
    const void *ids;
    qtts_err e = {0};
    if (qtts_gguf_get_arr(g, names_key, &nt, &nn, NULL, &e) || qtts_gguf_get_arr(g, ids_key, &it, &ni, &ids, &e) ||
        nt != QTTS_GGUF_STRING || nn != ni || (it != QTTS_GGUF_I32 && it != QTTS_GGUF_U32))
        return NULL;
    cJSON *o = cJSON_CreateObject();
    for (uint64_t i = 0; o && i < nn; i++) {
        size_t len;
        const char *s = qtts_gguf_get_arr_str(g, names_key, i, &len);
        char name[96];
        snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), s);
        uint32_t v;
        memcpy(&v, (const char *)ids + 4 * i, 4);
        cJSON_AddNumberToObject(o, name, (double)(it == QTTS_GGUF_I32 ? (double)(int32_t)v : (double)v));
    }
    return o;
}

cJSON *layout_generation_config(const qtts_gguf *g, const char *prefix) {
    static const char *const keys[][2] = {
        {"do_sample", "do_sample"}, {"top_k", "top_k"}, {"top_p", "top_p"}, {"temperature", "temperature"},
        {"repetition_penalty", "repetition_penalty"}, {"max_new_tokens", "max_new_tokens"},
        {"subtalker_do_sample", "subtalker_dosample"}, {"subtalker_top_k", "subtalker_top_k"},
        {"subtalker_top_p", "subtalker_top_p"}, {"subtalker_temperature", "subtalker_temperature"},
    };
    cJSON *o = NULL;
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        char k[128];
        double v;
        snprintf(k, sizeof k, "%s%s", prefix, keys[i][0]);
        if (layout_kv_num(g, k, &v)) continue;
        if (!o) o = cJSON_CreateObject();
        if (qtts_gguf_kv_type(g, k) == QTTS_GGUF_BOOL) cJSON_AddBoolToObject(o, keys[i][1], v != 0);
        else cJSON_AddNumberToObject(o, keys[i][1], v);
    }
    return o;
}

void layout_copy_kv(const qtts_gguf *g, const char *prefix, const char *const *names, size_t n, cJSON *obj) {
    for (size_t i = 0; i < n; i++) {
        char k[160];
        snprintf(k, sizeof k, "%s%s", prefix, names[i]);
        int type = qtts_gguf_kv_type(g, k);
        double v;
        if (type == QTTS_GGUF_ARRAY) {
            qtts_gguf_type et;
            uint64_t cnt;
            const void *data;
            qtts_err e = {0};
            if (qtts_gguf_get_arr(g, k, &et, &cnt, &data, &e) || (et != QTTS_GGUF_I32 && et != QTTS_GGUF_U32 &&
                                                                   et != QTTS_GGUF_I64) || cnt > 64)
                continue;
            cJSON *a = cJSON_AddArrayToObject(obj, names[i]);
            for (uint64_t j = 0; j < cnt; j++) {
                int64_t x = 0;
                if (et == QTTS_GGUF_I64) memcpy(&x, (const char *)data + 8 * j, 8);
                else {
                    int32_t y;
                    memcpy(&y, (const char *)data + 4 * j, 4);
                    x = et == QTTS_GGUF_U32 ? (int64_t)(uint32_t)y : y;
                }
                cJSON_AddItemToArray(a, cJSON_CreateNumber((double)x));
            }
        } else if (type == QTTS_GGUF_BOOL && !layout_kv_num(g, k, &v)) {
            cJSON_AddBoolToObject(obj, names[i], v != 0);
        } else if (type >= 0 && !layout_kv_num(g, k, &v)) {
            /* f32 metadata of values like 1e-6: keep the decimal the config had */
            char text[32];
            snprintf(text, sizeof text, "%.7g", v);
            cJSON_AddNumberToObject(obj, names[i], strtod(text, NULL));
        }
    }
}

int layout_arch_is(const qtts_gguf *g, const char *arch) {
    size_t len;
    const char *s = qtts_gguf_get_str(g, "general.architecture", &len);
    return s && len == strlen(arch) && !memcmp(s, arch, len);
}

int layout_has_tensor(const qtts_gguf *g, const char *name) {
    for (int i = 0; i < qtts_gguf_n_tensors(g); i++)
        if (!strcmp(qtts_gguf_tensor(g, i)->name, name)) return 1;
    return 0;
}

int layout_make_tmp(qtts_model_files *m, qtts_err *err) {
    const char *base = getenv("TMPDIR");
    snprintf(m->tmp, sizeof m->tmp, "%s/qtts-model-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(m->tmp)) {
        m->tmp[0] = 0;
        return qtts_fail(err, "cannot create a temporary folder: %s", strerror(errno));
    }
    char p[PATH_MAX + 32];
    snprintf(p, sizeof p, "%s/speech_tokenizer", m->tmp);
    if (mkdir(p, 0700) != 0) return qtts_fail(err, "%s: %s", p, strerror(errno));
    m->dir = m->tmp;
    return 0;
}

static int has_suffix(const char *s, const char *suf) {
    size_t n = strlen(s), k = strlen(suf);
    return n >= k && !strcmp(s + n - k, suf);
}

qtts_gguf *layout_find_companion(const char *path, int (*want)(const qtts_gguf *g), const char *what, char *found,
                                 size_t found_size, qtts_err *err) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    else snprintf(dir, sizeof dir, ".");
    DIR *d = opendir(dir);
    if (!d) {
        qtts_fail(err, "%s: %s", dir, strerror(errno));
        return NULL;
    }
    /* sorted, so the choice does not depend on the directory order */
    char names[64][256];
    int n = 0;
    for (struct dirent *de; (de = readdir(d)) && n < 64;)
        if (has_suffix(de->d_name, ".gguf") && strlen(de->d_name) < 256) snprintf(names[n++], 256, "%s", de->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], (int (*)(const void *, const void *))strcmp);
    char cand[PATH_MAX + 256];
    for (int i = 0; i < n; i++) {
        if (snprintf(cand, sizeof cand, "%s/%s", dir, names[i]) >= (int)sizeof cand || !strcmp(cand, path)) continue;
        qtts_err e = {0};
        qtts_gguf *g = qtts_gguf_load(cand, &e);
        if (g && want(g)) {
            snprintf(found, found_size, "%s", cand);
            return g;
        }
        qtts_gguf_free(g);
    }
    found[0] = 0;
    qtts_fail(err, "%s: needs its %s next to it (no such .gguf in %s)", path, what, dir);
    return NULL;
}

/* A GGUF's tensors as a store that owns the file mapping (g stays readable). */
static qtts_store *gguf_store(qtts_gguf *g, const char *path, qtts_err *err) {
    qtts_store *st = qtts_store_new(err);
    if (!st) return NULL;
    qtts_store_set_source(st, path);
    if (qtts_gguf_add_to_store(g, st, err) || qtts_gguf_move_mapping(g, st, err)) {
        qtts_store_free(st);
        return NULL;
    }
    return st;
}

static void describe_conversions(qtts_model_files *m, const layout_build *b) {
    size_t o = strlen(m->note);
    for (int t = 0; t < 32; t++)
        if (b->converted[t] && o < sizeof m->note)
            o += (size_t)snprintf(m->note + o, sizeof m->note - o, "%s%d %s matrices requantized to q8_0 at load",
                                  o ? "; " : "", b->converted[t], qtts_dtype_name((qtts_dtype)t));
}

int layout_open_pair(qtts_model_files *m, const char *path, qtts_gguf *g, int flags, const layout_pair *lp,
                     qtts_err *err) {
    char other[PATH_MAX];
    const int first = lp->is_first(g);
    qtts_gguf *found = layout_find_companion(path, first ? lp->is_second : lp->is_first,
                                             first ? lp->second_what : "talker file", other, sizeof other, err);
    if (!found) {
        qtts_gguf_free(g);
        return -1;
    }
    qtts_gguf *g1 = first ? g : found, *g2 = first ? found : g;
    const char *p1 = first ? path : other, *p2 = first ? other : path;
    snprintf(m->files, sizeof m->files, "%s + %s", p1, p2);
    layout_build b = {.label = m->layout, .flags = flags};
    int rc = -1;
    qtts_store *s1 = gguf_store(g1, p1, err), *s2 = s1 ? gguf_store(g2, p2, err) : NULL;
    m->model_store = b.model = qtts_store_new(err);
    m->codec_store = b.codec = qtts_store_new(err);
    if (!s1 || !s2 || !b.model || !b.codec) goto fail;
    qtts_store_set_source(b.model, m->files);
    qtts_store_set_source(b.codec, m->files);
    /* the file stores live as long as the model store (the codec store borrows from them too) */
    const qtts_store *f1 = s1, *f2 = s2;
    if (qtts_store_adopt(b.model, s1, err)) goto fail;
    s1 = NULL;
    if (qtts_store_adopt(b.model, s2, err)) goto fail;
    s2 = NULL;
    if ((lp->prepare && lp->prepare(&b, g1, g2, err)) || layout_map(&b, f1, lp->first_rules, lp->n_first, err) ||
        layout_map(&b, f2, lp->second_rules, lp->n_second, err) || layout_make_tmp(m, err) ||
        lp->configs(m, &b, g1, g2, err))
        goto fail;
    m->has_codec_encoder = qtts_store_find(b.codec, "encoder.encoder.layers.0.conv.weight") != NULL;
    describe_conversions(m, &b);
    rc = 0;
fail:
    qtts_store_free(s1);
    qtts_store_free(s2);
    qtts_gguf_free(g1);
    qtts_gguf_free(g2);
    return rc;
}

/* ---- detection and opening ---- */

static const layout_reader *const readers[] = {&qtts_layout_qwentts, &qtts_layout_crispasr, &qtts_layout_llamacpp};
enum { N_READERS = sizeof readers / sizeof readers[0] };

static int is_qtts_gguf(const qtts_gguf *g) { return qtts_gguf_find_key(g, QTTS_GGUF_KEY_CONFIG_JSON) >= 0; }

static void unknown_gguf(const char *path, const qtts_gguf *g, qtts_err *err) {
    char arch[64] = "(none)", names[200] = "";
    layout_kv_str(g, "general.architecture", arch, sizeof arch);
    size_t o = 0;
    for (int i = 0; i < qtts_gguf_n_tensors(g) && i < 3 && o < sizeof names; i++)
        o += (size_t)snprintf(names + o, sizeof names - o, "%s'%s'", i ? ", " : "", qtts_gguf_tensor(g, i)->name);
    char expect[600];
    o = (size_t)snprintf(expect, sizeof expect, "qtts (%s metadata)", QTTS_GGUF_KEY_CONFIG_JSON);
    for (int i = 0; i < N_READERS && o < sizeof expect; i++)
        o += (size_t)snprintf(expect + o, sizeof expect - o, ", %s (%s)", readers[i]->name, readers[i]->expect);
    qtts_fail_as(err, QTTS_ERR_MODEL, "%s: unknown model layout: general.architecture '%s', tensors %s%s; expected %s",
                 path, arch, names[0] ? names : "(none)", qtts_gguf_n_tensors(g) > 3 ? ", ..." : "", expect);
}

/* A folder: official or Transformers-native (by its tensor names), or a
 * folder holding a GGUF pair. */
static int open_folder(qtts_model_files *m, const char *path, int flags, qtts_err *err) {
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/model.safetensors", path);
    int has_st = access(p, R_OK) == 0;
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", path);
    has_st |= access(p, R_OK) == 0;
    if (!has_st) { /* a GGUF pair's folder? */
        DIR *d = opendir(path);
        char first[256] = "";
        for (struct dirent *de; d && (de = readdir(d));)
            if (has_suffix(de->d_name, ".gguf") && (!first[0] || strcmp(de->d_name, first) < 0) && strlen(de->d_name) < 256)
                snprintf(first, sizeof first, "%s", de->d_name);
        if (d) closedir(d);
        if (first[0]) {
            snprintf(p, sizeof p, "%s/%s", path, first);
            return qtts_model_files_open(m, p, flags, err);
        }
        m->layout = "official"; /* a bare speech tokenizer, or files the loaders will name as missing */
        m->dir = path;
        snprintf(m->files, sizeof m->files, "%s", path);
        return 0;
    }
    qtts_store *st = qtts_store_open(path, err);
    if (!st) return -1;
    snprintf(m->files, sizeof m->files, "%s", path);
    if (qtts_store_find(st, "talker.model.codec_embedding.weight") || qtts_store_find(st, "decoder.pre_conv.conv.weight")) {
        qtts_store_free(st);
        m->layout = "official";
        m->dir = path;
        return 0;
    }
    if (layout_transformers_detect(st)) return layout_transformers_open(m, path, st, flags, err);
    const qtts_tensor *t0 = qtts_store_count(st) ? qtts_store_at(st, 0) : NULL;
    qtts_fail_as(err, QTTS_ERR_MODEL,
                 "%s: unknown model layout: tensors such as '%s'; expected the official names "
                 "('talker.model.codec_embedding.weight', ...) or the Transformers-native ones ('model.embed_tokens.weight', "
                 "'codec_head.weight', ...)",
                 path, t0 ? t0->name : "(none)");
    qtts_store_free(st);
    return -1;
}

int qtts_model_files_open(qtts_model_files *m, const char *path, int flags, qtts_err *err) {
    memset(m, 0, sizeof *m);
    struct stat sb;
    if (stat(path, &sb) != 0) return qtts_fail_as(err, QTTS_ERR_MODEL, "%s: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode)) {
        int rc = open_folder(m, path, flags, err);
        if (rc) qtts_model_files_close(m);
        return rc;
    }
    snprintf(m->files, sizeof m->files, "%s", path);
    if (!qtts_gguf_is_path(path)) { /* a lone safetensors file: the official loaders say what it lacks */
        m->layout = "official";
        m->dir = path;
        return 0;
    }
    qtts_gguf *g = qtts_gguf_load(path, err);
    if (!g) return -1;
    if (is_qtts_gguf(g)) {
        qtts_gguf_free(g);
        m->layout = "qtts";
        m->has_codec_encoder = 1;
        if (qtts_model_unpack(path, (flags & QTTS_LAYOUT_KERNEL) != 0, m->tmp, sizeof m->tmp, &m->model_store,
                              &m->codec_store, err))
            return -1;
        m->dir = m->tmp;
        m->has_codec_encoder = qtts_store_find(m->codec_store, "encoder.encoder.layers.0.conv.weight") != NULL;
        return 0;
    }
    for (int i = 0; i < N_READERS; i++) {
        int d = readers[i]->detect(g);
        if (d < 0) {
            char found[160] = "(none)";
            if (qtts_gguf_n_tensors(g)) snprintf(found, sizeof found, "'%s'", qtts_gguf_tensor(g, 0)->name);
            qtts_fail_as(err, QTTS_ERR_MODEL,
                         "%s: its metadata says %s (%s) but its tensors are not that layout's: found %s, expected '%s'",
                         path, readers[i]->name, readers[i]->expect, found, readers[i]->signature);
            qtts_gguf_free(g);
            return -1;
        }
        if (d > 0) {
            m->layout = readers[i]->name;
            int rc = readers[i]->open(m, path, g, flags, err); /* takes g */
            if (rc) qtts_model_files_close(m);
            return rc;
        }
    }
    unknown_gguf(path, g, err);
    qtts_gguf_free(g);
    return -1;
}

void qtts_model_files_close(qtts_model_files *m) {
    qtts_store_free(m->codec_store); /* may borrow from the model store's mappings */
    qtts_store_free(m->model_store);
    if (m->tmp[0]) qtts_pack_remove_dir(m->tmp);
    memset(m, 0, sizeof *m);
}

const char *qtts_layout_detect(const char *path, qtts_err *err) {
    qtts_model_files m;
    if (qtts_model_files_open(&m, path, 0, err)) return NULL;
    const char *name = m.layout;
    qtts_model_files_close(&m);
    return name;
}
