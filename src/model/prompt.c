#include "model/prompt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *qtts_mode_name(qtts_mode m) {
    switch (m) {
    case QTTS_MODE_CUSTOM_VOICE: return "custom-voice";
    case QTTS_MODE_VOICE_DESIGN: return "voice-design";
    case QTTS_MODE_CLONE_XVEC: return "clone (x-vector only)";
    case QTTS_MODE_CLONE_ICL: return "clone (ICL)";
    }
    return "?";
}

static int is_auto(const char *lang) { return !lang || !*lang || !strcasecmp(lang, "auto"); }

/* "auto, chinese, english, ..." into buf. */
static const char *list_languages(const qtts_model_config *c, char *buf, size_t n) {
    size_t o = (size_t)snprintf(buf, n, "auto");
    for (int i = 0; i < c->n_languages && o < n; i++)
        if (!strstr(c->languages[i].name, "dialect")) o += (size_t)snprintf(buf + o, n - o, ", %s", c->languages[i].name);
    return buf;
}

static const char *list_speakers(const qtts_model_config *c, char *buf, size_t n) {
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < c->n_speakers && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%s", i ? ", " : "", c->speakers[i].name);
    return buf;
}

/* Official rule (generate_custom_voice): instruct is dropped when
 * `tts_model_size in "0b6"`, a substring test ("0b6" and "" match). */
static int cv_uses_instruct(const qtts_model_config *c) { return strstr("0b6", c->size) == NULL; }

/* Resolves the language id (-1 = auto / nothink prefix), applying the dialect override. */
static int resolve_language(const qtts_talker_model *m, const qtts_prompt_spec *s, int64_t *lang_id, qtts_err *err) {
    const qtts_model_config *c = &m->cfg;
    char buf[1024];
    *lang_id = -1;
    if (!is_auto(s->language)) {
        const qtts_named_id *l = qtts_config_language(c, s->language);
        if (!l || strstr(l->name, "dialect"))
            return qtts_fail(err, "unknown language \"%s\" (valid: %s)", s->language, list_languages(c, buf, sizeof buf));
        *lang_id = l->id;
    }
    if (s->mode == QTTS_MODE_CUSTOM_VOICE && s->speaker) {
        const qtts_named_id *sp = qtts_config_speaker(c, s->speaker);
        if (sp && sp->dialect[0] && (is_auto(s->language) || !strcasecmp(s->language, "chinese"))) {
            const qtts_named_id *d = qtts_config_language(c, sp->dialect);
            if (!d)
                return qtts_fail(err, "speaker \"%s\" has dialect \"%s\", which is not in codec_language_id",
                                 sp->name, sp->dialect);
            *lang_id = d->id;
        }
    }
    return 0;
}

int qtts_prompt_validate(const qtts_talker_model *m, const qtts_prompt_spec *s, qtts_err *err) {
    const qtts_model_config *c = &m->cfg;
    char buf[1024];
    qtts_variant need = s->mode == QTTS_MODE_CUSTOM_VOICE   ? QTTS_VARIANT_CUSTOM_VOICE
                        : s->mode == QTTS_MODE_VOICE_DESIGN ? QTTS_VARIANT_VOICE_DESIGN
                                                            : QTTS_VARIANT_BASE;
    if ((int)s->mode < 0 || s->mode > QTTS_MODE_CLONE_ICL) return qtts_fail(err, "unknown generation mode %d", (int)s->mode);
    if (c->variant != need)
        return qtts_fail(err, "%s mode needs a %s model, but this is a %s model", qtts_mode_name(s->mode),
                         qtts_variant_name(need), qtts_variant_name(c->variant));
    int64_t n = s->n_text_ids;
    const int32_t *t = s->text_ids;
    if (!t || n < 8 || t[0] != c->im_start || t[1] != c->assistant || t[n - 5] != c->im_end ||
        t[n - 3] != c->im_start || t[n - 2] != c->assistant)
        return qtts_fail(err, "text ids must be the chat template <|im_start|>assistant\\n{text}<|im_end|>\\n"
                              "<|im_start|>assistant\\n (got %lld ids)", (long long)n);
    int streaming = s->non_streaming < 0 ? (s->mode == QTTS_MODE_CLONE_XVEC || s->mode == QTTS_MODE_CLONE_ICL)
                                         : !s->non_streaming;
    if (streaming && s->mode != QTTS_MODE_CLONE_ICL && n == 8)
        return qtts_fail(err, "the text is empty (streaming-text layout needs at least one text token)");
    if (s->non_streaming > 1) return qtts_fail(err, "non_streaming must be -1, 0 or 1");
    int has_instruct = s->instruct_ids && s->n_instruct_ids > 0;
    switch (s->mode) {
    case QTTS_MODE_CUSTOM_VOICE:
        if (!s->speaker || !*s->speaker) return qtts_fail(err, "custom-voice mode needs a speaker (valid: %s)", list_speakers(c, buf, sizeof buf));
        if (!qtts_config_speaker(c, s->speaker))
            return qtts_fail(err, "unknown speaker \"%s\" (valid: %s)", s->speaker, list_speakers(c, buf, sizeof buf));
        break;
    case QTTS_MODE_VOICE_DESIGN:
        if (s->speaker && *s->speaker)
            return qtts_fail(err, "voice-design mode takes no speaker; describe the voice in the instruct text");
        if (!has_instruct) return qtts_fail(err, "voice-design mode needs an instruct text describing the voice");
        break;
    case QTTS_MODE_CLONE_XVEC:
    case QTTS_MODE_CLONE_ICL:
        if (s->speaker && *s->speaker)
            return qtts_fail(err, "voice cloning takes no named speaker (the Base model has none); give reference audio");
        if (has_instruct) return qtts_fail(err, "instruct is not supported by voice cloning (Base models)");
        if (!s->xvector) return qtts_fail(err, "voice cloning needs the reference speaker embedding (x-vector)");
        if (s->mode == QTTS_MODE_CLONE_ICL) {
            if (!s->ref_codes || s->n_ref_frames <= 0)
                return qtts_fail(err, "ICL voice cloning needs reference codes (or use x-vector-only mode)");
            if (!s->ref_ids || s->n_ref_ids < 5 || s->ref_ids[0] != c->im_start || s->ref_ids[1] != c->assistant ||
                s->ref_ids[s->n_ref_ids - 2] != c->im_end)
                return qtts_fail(err, "ICL voice cloning needs the reference text ids "
                                      "<|im_start|>assistant\\n{ref_text}<|im_end|>\\n (or use x-vector-only mode)");
            for (int64_t i = 0; i < s->n_ref_frames * c->num_code_groups; i++)
                if (s->ref_codes[i] < 0 || s->ref_codes[i] >= c->cp.vocab)
                    return qtts_fail(err, "reference code %d at frame %lld is outside the codebook (0..%lld)",
                                     s->ref_codes[i], (long long)(i / c->num_code_groups), (long long)c->cp.vocab - 1);
        }
        break;
    }
    int64_t lang;
    return resolve_language(m, s, &lang, err);
}

void qtts_prompt_free(qtts_prompt *p) {
    if (!p) return;
    free(p->rows);
    free(p->trailing);
    free(p->pad);
    memset(p, 0, sizeof *p);
}

static void vadd(float *y, const float *a, const float *b, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = a[i] + b[i];
}

int qtts_prompt_build(const qtts_talker_model *m, qtts_pool *pool, const qtts_prompt_spec *s, qtts_prompt *out,
                      qtts_err *err) {
    memset(out, 0, sizeof *out);
    if (qtts_prompt_validate(m, s, err)) return -1;
    const qtts_model_config *c = &m->cfg;
    const int64_t D = c->talker.hidden, G = c->num_code_groups;
    const int streaming = s->non_streaming < 0 ? (s->mode == QTTS_MODE_CLONE_XVEC || s->mode == QTTS_MODE_CLONE_ICL)
                                               : !s->non_streaming;
    const int icl = s->mode == QTTS_MODE_CLONE_ICL;
    int use_instruct = s->instruct_ids && s->n_instruct_ids > 0 &&
                       (s->mode != QTTS_MODE_CUSTOM_VOICE || cv_uses_instruct(c));
    int64_t lang;
    if (resolve_language(m, s, &lang, err)) return -1;

    /* codec control sequence S (spec §5.1); spk_row = index of the speaker slot or -1 */
    int64_t S[8];
    int K = 0, spk_row = -1;
    if (lang >= 0) {
        S[K++] = c->think;
        S[K++] = c->think_bos;
        S[K++] = lang;
        S[K++] = c->think_eos;
    } else {
        S[K++] = c->nothink;
        S[K++] = c->think_bos;
        S[K++] = c->think_eos;
    }
    const float *xvec = NULL;
    if (s->mode == QTTS_MODE_CUSTOM_VOICE) {
        spk_row = K;
        S[K++] = qtts_config_speaker(c, s->speaker)->id;
    } else if (s->mode != QTTS_MODE_VOICE_DESIGN) {
        spk_row = K;
        S[K++] = -1;
        xvec = s->xvector;
    }
    S[K++] = c->codec_pad;
    S[K++] = c->codec_bos;

    /* all text ids needed, projected in one batch: PAD, BOS, EOS, instruct, role, text, ref text */
    const int64_t n_text = s->n_text_ids - 8, n_instr = use_instruct ? s->n_instruct_ids : 0;
    const int64_t n_ref = icl ? s->n_ref_ids - 5 : 0;
    const int64_t n_ids = 3 + n_instr + 3 + n_text + n_ref;
    int32_t *ids = qtts_malloc((size_t)n_ids * sizeof(int32_t), err);
    float *T = ids ? qtts_malloc((size_t)n_ids * (size_t)D * sizeof(float), err) : NULL;
    float *crow = T ? qtts_malloc((size_t)D * 2 * sizeof(float), err) : NULL;
    int rc = -1;
    if (!crow) goto done;
    float *ctmp = crow + D;
    int64_t o = 0;
    ids[o++] = (int32_t)c->tts_pad;
    ids[o++] = (int32_t)c->tts_bos;
    ids[o++] = (int32_t)c->tts_eos;
    for (int64_t i = 0; i < n_instr; i++) ids[o++] = s->instruct_ids[i];
    for (int64_t i = 0; i < 3; i++) ids[o++] = s->text_ids[i];
    for (int64_t i = 0; i < n_text; i++) ids[o++] = s->text_ids[3 + i];
    for (int64_t i = 0; i < n_ref; i++) ids[o++] = s->ref_ids[3 + i];
    if (qtts_talker_text_embed(m, pool, ids, n_ids, T, err)) goto done;
    const float *PAD = T, *BOS = T + D, *EOS = T + 2 * D, *TI = T + 3 * D, *TR = TI + n_instr * D;
    const float *TX = TR + 3 * D, *TREF = TX + n_text * D;

    /* ICL sequences: A (text) and B (codec) */
    int64_t a_len = icl ? n_ref + n_text + 1 : 0, b_len = icl ? 1 + s->n_ref_frames : 0;
    int64_t body, n_trail;
    if (!icl) {
        body = streaming ? 1 : n_text + 2;
        n_trail = streaming ? n_text : 1; /* t2..tn + EOS, or [PAD] */
    } else if (streaming) {
        body = b_len;
        n_trail = a_len > b_len ? a_len - b_len : 1;
    } else {
        body = a_len + b_len;
        n_trail = 1;
    }
    out->dim = D;
    out->n_rows = n_instr + 3 + (K - 1) + body;
    out->n_trailing = n_trail;
    out->rows = qtts_malloc((size_t)out->n_rows * (size_t)D * sizeof(float), err);
    out->trailing = qtts_malloc((size_t)n_trail * (size_t)D * sizeof(float), err);
    out->pad = qtts_malloc((size_t)D * sizeof(float), err);
    if (!out->rows || !out->trailing || !out->pad) goto done;
    memcpy(out->pad, PAD, (size_t)D * sizeof(float));
    float *row = out->rows;
#define NEXT_ROW (row += D)
    memcpy(row, TI, (size_t)(n_instr * D) * sizeof(float));
    row += n_instr * D;
    memcpy(row, TR, (size_t)(3 * D) * sizeof(float));
    row += 3 * D;
    for (int k = 0; k < K - 1; k++, NEXT_ROW) {
        if (k == spk_row && xvec) memcpy(crow, xvec, (size_t)D * sizeof(float));
        else if (qtts_talker_codec_embed(m, S[k], crow, err)) goto done;
        vadd(row, k == K - 2 ? BOS : PAD, crow, D);
    }
    float *cpad = ctmp; /* C(codec_pad) */
    if (qtts_talker_codec_embed(m, c->codec_pad, cpad, err) || qtts_talker_codec_embed(m, c->codec_bos, crow, err))
        goto done; /* crow = C(codec_bos) */
    if (!icl) {
        if (streaming) {
            vadd(row, TX, crow, D);
            NEXT_ROW;
            memcpy(out->trailing, TX + D, (size_t)((n_text - 1) * D) * sizeof(float));
            memcpy(out->trailing + (n_text - 1) * D, EOS, (size_t)D * sizeof(float));
        } else {
            for (int64_t i = 0; i < n_text; i++, NEXT_ROW) vadd(row, TX + i * D, cpad, D);
            vadd(row, EOS, cpad, D);
            NEXT_ROW;
            vadd(row, PAD, crow, D);
            NEXT_ROW;
            memcpy(out->trailing, PAD, (size_t)D * sizeof(float));
        }
    } else {
        /* A[i]: ref text, target text, EOS. B[j]: C(bos), then per-frame sums of the G codebook embeddings. */
        float *A = qtts_malloc((size_t)(a_len + b_len) * (size_t)D * sizeof(float), err);
        if (!A) goto done;
        float *B = A + a_len * D;
        memcpy(A, TREF, (size_t)(n_ref * D) * sizeof(float));
        memcpy(A + n_ref * D, TX, (size_t)(n_text * D) * sizeof(float));
        memcpy(A + (a_len - 1) * D, EOS, (size_t)D * sizeof(float));
        memcpy(B, crow, (size_t)D * sizeof(float));
        for (int64_t f = 0; f < s->n_ref_frames; f++) {
            float *bf = B + (1 + f) * D;
            const int32_t *codes = s->ref_codes + f * G;
            if (qtts_talker_codec_embed(m, codes[0], bf, err)) {
                free(A);
                goto done;
            }
            for (int64_t q = 1; q < G; q++) {
                if (qtts_tensor_row_f32(m->cp.emb[q - 1], codes[q], ctmp + 0, err)) {
                    free(A);
                    goto done;
                }
                for (int64_t i = 0; i < D; i++) bf[i] += ctmp[i];
            }
        }
        /* cpad was overwritten by the sums above; reload it */
        if (qtts_talker_codec_embed(m, c->codec_pad, cpad, err)) {
            free(A);
            goto done;
        }
        if (streaming) {
            for (int64_t j = 0; j < b_len; j++, NEXT_ROW) vadd(row, j < a_len ? A + j * D : PAD, B + j * D, D);
            if (a_len > b_len) memcpy(out->trailing, A + b_len * D, (size_t)((a_len - b_len) * D) * sizeof(float));
            else memcpy(out->trailing, PAD, (size_t)D * sizeof(float));
        } else {
            for (int64_t i = 0; i < a_len; i++, NEXT_ROW) vadd(row, A + i * D, cpad, D);
            for (int64_t j = 0; j < b_len; j++, NEXT_ROW) vadd(row, B + j * D, PAD, D);
            memcpy(out->trailing, PAD, (size_t)D * sizeof(float));
        }
        free(A);
    }
#undef NEXT_ROW
    rc = 0;
done:
    free(ids);
    free(T);
    free(crow);
    if (rc) qtts_prompt_free(out);
    return rc;
}
