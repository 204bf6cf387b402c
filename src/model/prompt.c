#include "model/prompt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Token framing of the chat-template ids (qtts_prompt_spec):
 *   text_ids = <|im_start|> assistant \n {text} <|im_end|> \n <|im_start|> assistant \n
 *   ref_ids  = <|im_start|> assistant \n {ref_text} <|im_end|> \n
 * The role prefix becomes the three role rows of the prompt; {text} and
 * {ref_text} are what lies between prefix and suffix. */
enum {
    ROLE_PREFIX_IDS = 3, /* "<|im_start|>assistant\n" opening text_ids and ref_ids */
    TEXT_SUFFIX_IDS = 5, /* "<|im_end|>\n<|im_start|>assistant\n" closing text_ids */
    REF_SUFFIX_IDS = 2,  /* "<|im_end|>\n" closing ref_ids */
    TTS_SPECIAL_IDS = 3, /* tts_pad, tts_bos, tts_eos: the text rows PAD, BOS, EOS */
    MAX_CONTROL_IDS = 7, /* longest codec control sequence (see control_sequence) */
};

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
    /* suf: <|im_end|> \n <|im_start|> assistant \n */
    const int32_t *suf = t && n >= ROLE_PREFIX_IDS + TEXT_SUFFIX_IDS ? t + n - TEXT_SUFFIX_IDS : NULL;
    if (!suf || t[0] != c->im_start || t[1] != c->assistant || suf[0] != c->im_end || suf[2] != c->im_start ||
        suf[3] != c->assistant)
        return qtts_fail(err, "text ids must be the chat template <|im_start|>assistant\\n{text}<|im_end|>\\n"
                              "<|im_start|>assistant\\n (got %lld ids)", (long long)n);
    int streaming = s->non_streaming < 0 ? (s->mode == QTTS_MODE_CLONE_XVEC || s->mode == QTTS_MODE_CLONE_ICL)
                                         : !s->non_streaming;
    if (streaming && s->mode != QTTS_MODE_CLONE_ICL && n == ROLE_PREFIX_IDS + TEXT_SUFFIX_IDS)
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
            if (!s->ref_ids || s->n_ref_ids < ROLE_PREFIX_IDS + REF_SUFFIX_IDS || s->ref_ids[0] != c->im_start ||
                s->ref_ids[1] != c->assistant || s->ref_ids[s->n_ref_ids - REF_SUFFIX_IDS] != c->im_end)
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

/* The codec control sequence S: [think, think_bos, language, think_eos] with
 * a language, else [nothink, think_bos, think_eos]; then the speaker slot
 * (CustomVoice: the speaker's codec id; Base: the x-vector, placed raw;
 * VoiceDesign: none); then codec_pad, codec_bos. K = |S| is 5..7. */
typedef struct {
    int64_t id[MAX_CONTROL_IDS];
    int n;             /* K */
    int spk_row;       /* index of the speaker slot, or -1 */
    const float *xvec; /* Base: the x-vector for the speaker slot (its id is -1) */
} control_seq;

static void control_sequence(const qtts_model_config *c, const qtts_prompt_spec *s, int64_t lang, control_seq *cs) {
    int K = 0;
    cs->spk_row = -1;
    cs->xvec = NULL;
    if (lang >= 0) {
        cs->id[K++] = c->think;
        cs->id[K++] = c->think_bos;
        cs->id[K++] = lang;
        cs->id[K++] = c->think_eos;
    } else {
        cs->id[K++] = c->nothink;
        cs->id[K++] = c->think_bos;
        cs->id[K++] = c->think_eos;
    }
    if (s->mode == QTTS_MODE_CUSTOM_VOICE) {
        cs->spk_row = K;
        cs->id[K++] = qtts_config_speaker(c, s->speaker)->id;
    } else if (s->mode != QTTS_MODE_VOICE_DESIGN) {
        cs->spk_row = K;
        cs->id[K++] = -1;
        cs->xvec = s->xvector;
    }
    cs->id[K++] = c->codec_pad;
    cs->id[K++] = c->codec_bos;
    cs->n = K;
}

/* Every text-track row of the prompt, projected in one batch (rows of buf). */
typedef struct {
    float *buf;                        /* [TTS_SPECIAL_IDS + n_instr + ROLE_PREFIX_IDS + n_text + n_ref][D] */
    const float *pad, *bos, *eos;      /* T(tts_pad), T(tts_bos), T(tts_eos) */
    const float *instr, *role, *text, *ref; /* [n_instr], [ROLE_PREFIX_IDS], [n_text], [n_ref] rows */
    int64_t n_instr, n_text, n_ref;
} text_rows;

static int embed_prompt_text(const qtts_talker_model *m, qtts_pool *pool, const qtts_prompt_spec *s, int use_instruct,
                             int icl, text_rows *tr, qtts_err *err) {
    const qtts_model_config *c = &m->cfg;
    const int64_t D = c->talker.hidden;
    tr->n_text = qtts_prompt_text_tokens(s->n_text_ids);
    tr->n_instr = use_instruct ? s->n_instruct_ids : 0;
    tr->n_ref = icl ? s->n_ref_ids - ROLE_PREFIX_IDS - REF_SUFFIX_IDS : 0;
    const int64_t n_ids = TTS_SPECIAL_IDS + tr->n_instr + ROLE_PREFIX_IDS + tr->n_text + tr->n_ref;
    int32_t *ids = qtts_malloc((size_t)n_ids * sizeof(int32_t), err);
    tr->buf = ids ? qtts_malloc((size_t)n_ids * (size_t)D * sizeof(float), err) : NULL;
    if (!tr->buf) {
        free(ids);
        return -1;
    }
    int64_t o = 0;
    ids[o++] = (int32_t)c->tts_pad;
    ids[o++] = (int32_t)c->tts_bos;
    ids[o++] = (int32_t)c->tts_eos;
    for (int64_t i = 0; i < tr->n_instr; i++) ids[o++] = s->instruct_ids[i];
    for (int64_t i = 0; i < ROLE_PREFIX_IDS; i++) ids[o++] = s->text_ids[i];
    for (int64_t i = 0; i < tr->n_text; i++) ids[o++] = s->text_ids[ROLE_PREFIX_IDS + i];
    for (int64_t i = 0; i < tr->n_ref; i++) ids[o++] = s->ref_ids[ROLE_PREFIX_IDS + i];
    int rc = qtts_talker_text_embed(m, pool, ids, n_ids, tr->buf, err);
    free(ids);
    tr->pad = tr->buf;
    tr->bos = tr->pad + D;
    tr->eos = tr->bos + D;
    tr->instr = tr->buf + TTS_SPECIAL_IDS * D;
    tr->role = tr->instr + tr->n_instr * D;
    tr->text = tr->role + ROLE_PREFIX_IDS * D;
    tr->ref = tr->text + tr->n_text * D;
    return rc;
}

/* Row counts after the common prefix. ICL: text track A = [ref text, text,
 * EOS] (a_len) and codec track B = [codec_bos, reference frames] (b_len). */
typedef struct {
    int64_t a_len, b_len, body, n_trail;
} prompt_layout;

static prompt_layout layout_of(const text_rows *tr, int icl, int streaming, int64_t n_ref_frames) {
    prompt_layout l = {0, 0, 0, 0};
    if (!icl) {
        l.body = streaming ? 1 : tr->n_text + 2;
        l.n_trail = streaming ? tr->n_text : 1; /* t2..tn + EOS, or [PAD] */
        return l;
    }
    l.a_len = tr->n_ref + tr->n_text + 1;
    l.b_len = 1 + n_ref_frames;
    l.body = streaming ? l.b_len : l.a_len + l.b_len;
    l.n_trail = streaming && l.a_len > l.b_len ? l.a_len - l.b_len : 1;
    return l;
}

/* Common prefix: instruct rows and the role rows (text only), then the first
 * K-1 control ids over the text track [PAD x (K-2), BOS]. crow: [D] scratch.
 * Returns the next row, or NULL. */
static float *prefix_rows(const qtts_talker_model *m, const text_rows *tr, const control_seq *cs, float *row,
                          float *crow, qtts_err *err) {
    const int64_t D = m->cfg.talker.hidden;
    memcpy(row, tr->instr, (size_t)(tr->n_instr * D) * sizeof(float));
    row += tr->n_instr * D;
    memcpy(row, tr->role, (size_t)(ROLE_PREFIX_IDS * D) * sizeof(float));
    row += ROLE_PREFIX_IDS * D;
    for (int k = 0; k < cs->n - 1; k++, row += D) {
        if (k == cs->spk_row && cs->xvec) memcpy(crow, cs->xvec, (size_t)D * sizeof(float));
        else if (qtts_talker_codec_embed(m, cs->id[k], crow, err)) return NULL;
        vadd(row, k == cs->n - 2 ? tr->bos : tr->pad, crow, D);
    }
    return row;
}

/* Non-ICL body. Streaming: T(t1) + C(codec_bos), trailing [T(t2..tn), EOS].
 * Non-streaming: T(ti) + C(codec_pad) for every text token, EOS + C(codec_pad),
 * PAD + C(codec_bos); trailing [PAD]. cbuf: [2D] scratch. */
static int plain_body(const qtts_talker_model *m, const text_rows *tr, int streaming, float *row, float *cbuf,
                      qtts_prompt *out, qtts_err *err) {
    const qtts_model_config *c = &m->cfg;
    const int64_t D = c->talker.hidden, n_text = tr->n_text;
    float *cbos = cbuf, *cpad = cbuf + D;
    if (qtts_talker_codec_embed(m, c->codec_pad, cpad, err) || qtts_talker_codec_embed(m, c->codec_bos, cbos, err))
        return -1;
    if (streaming) {
        vadd(row, tr->text, cbos, D);
        memcpy(out->trailing, tr->text + D, (size_t)((n_text - 1) * D) * sizeof(float));
        memcpy(out->trailing + (n_text - 1) * D, tr->eos, (size_t)D * sizeof(float));
        return 0;
    }
    for (int64_t i = 0; i < n_text; i++, row += D) vadd(row, tr->text + i * D, cpad, D);
    vadd(row, tr->eos, cpad, D);
    row += D;
    vadd(row, tr->pad, cbos, D);
    memcpy(out->trailing, tr->pad, (size_t)D * sizeof(float));
    return 0;
}

/* The ICL tracks in one new buffer [a_len + b_len][D]: A = [T(ref text),
 * T(text), EOS], then B = [cbos, and per reference frame the sum of its G
 * codebook embeddings (codebook 0 from the talker, 1..G-1 from the code
 * predictor's tables)]. tmp: [D] scratch. */
static float *icl_tracks(const qtts_talker_model *m, const qtts_prompt_spec *s, const text_rows *tr,
                         const prompt_layout *l, const float *cbos, float *tmp, qtts_err *err) {
    const int64_t D = m->cfg.talker.hidden, G = m->cfg.num_code_groups;
    float *A = qtts_malloc((size_t)(l->a_len + l->b_len) * (size_t)D * sizeof(float), err);
    if (!A) return NULL;
    float *B = A + l->a_len * D;
    memcpy(A, tr->ref, (size_t)(tr->n_ref * D) * sizeof(float));
    memcpy(A + tr->n_ref * D, tr->text, (size_t)(tr->n_text * D) * sizeof(float));
    memcpy(A + (l->a_len - 1) * D, tr->eos, (size_t)D * sizeof(float));
    memcpy(B, cbos, (size_t)D * sizeof(float));
    for (int64_t f = 0; f < s->n_ref_frames; f++) {
        float *bf = B + (1 + f) * D;
        const int32_t *codes = s->ref_codes + f * G;
        if (qtts_talker_codec_embed(m, codes[0], bf, err)) goto fail;
        for (int64_t q = 1; q < G; q++) {
            if (qtts_tensor_row_f32(m->cp.emb[q - 1], codes[q], tmp, err)) goto fail;
            for (int64_t i = 0; i < D; i++) bf[i] += tmp[i];
        }
    }
    return A;
fail:
    free(A);
    return NULL;
}

/* ICL body. Streaming: A[j] + B[j] for every j < b_len (A padded with PAD),
 * trailing A[b_len..] or [PAD]. Non-streaming: A[i] + C(codec_pad) for all i,
 * then B[j] + PAD; trailing [PAD]. cbuf: [2D] scratch. */
static int icl_body(const qtts_talker_model *m, const qtts_prompt_spec *s, const text_rows *tr, const prompt_layout *l,
                    int streaming, float *row, float *cbuf, qtts_prompt *out, qtts_err *err) {
    const qtts_model_config *c = &m->cfg;
    const int64_t D = c->talker.hidden, a_len = l->a_len, b_len = l->b_len;
    float *cbos = cbuf, *cpad = cbuf + D;
    if (qtts_talker_codec_embed(m, c->codec_bos, cbos, err)) return -1;
    float *A = icl_tracks(m, s, tr, l, cbos, cpad, err);
    if (!A) return -1;
    const float *B = A + a_len * D;
    if (qtts_talker_codec_embed(m, c->codec_pad, cpad, err)) { /* cpad was the scratch above */
        free(A);
        return -1;
    }
    if (streaming) {
        for (int64_t j = 0; j < b_len; j++, row += D) vadd(row, j < a_len ? A + j * D : tr->pad, B + j * D, D);
        if (a_len > b_len) memcpy(out->trailing, A + b_len * D, (size_t)((a_len - b_len) * D) * sizeof(float));
        else memcpy(out->trailing, tr->pad, (size_t)D * sizeof(float));
    } else {
        for (int64_t i = 0; i < a_len; i++, row += D) vadd(row, A + i * D, cpad, D);
        for (int64_t j = 0; j < b_len; j++, row += D) vadd(row, B + j * D, tr->pad, D);
        memcpy(out->trailing, tr->pad, (size_t)D * sizeof(float));
    }
    free(A);
    return 0;
}

int qtts_prompt_build(const qtts_talker_model *m, qtts_pool *pool, const qtts_prompt_spec *s, qtts_prompt *out,
                      qtts_err *err) {
    memset(out, 0, sizeof *out);
    if (qtts_prompt_validate(m, s, err)) return -1;
    const qtts_model_config *c = &m->cfg;
    const int64_t D = c->talker.hidden;
    const int streaming = s->non_streaming < 0 ? (s->mode == QTTS_MODE_CLONE_XVEC || s->mode == QTTS_MODE_CLONE_ICL)
                                               : !s->non_streaming;
    const int icl = s->mode == QTTS_MODE_CLONE_ICL;
    int use_instruct = s->instruct_ids && s->n_instruct_ids > 0 &&
                       (s->mode != QTTS_MODE_CUSTOM_VOICE || cv_uses_instruct(c));
    int64_t lang;
    if (resolve_language(m, s, &lang, err)) return -1;
    control_seq cs;
    control_sequence(c, s, lang, &cs);

    text_rows tr = {0};
    float *cbuf = NULL, *row = NULL;
    int rc = -1;
    if (embed_prompt_text(m, pool, s, use_instruct, icl, &tr, err)) goto done;
    const prompt_layout l = layout_of(&tr, icl, streaming, s->n_ref_frames);
    out->dim = D;
    out->n_rows = tr.n_instr + ROLE_PREFIX_IDS + (cs.n - 1) + l.body;
    out->n_trailing = l.n_trail;
    out->rows = qtts_malloc((size_t)out->n_rows * (size_t)D * sizeof(float), err);
    out->trailing = qtts_malloc((size_t)l.n_trail * (size_t)D * sizeof(float), err);
    out->pad = qtts_malloc((size_t)D * sizeof(float), err);
    cbuf = qtts_malloc((size_t)D * 2 * sizeof(float), err);
    if (!out->rows || !out->trailing || !out->pad || !cbuf) goto done;
    memcpy(out->pad, tr.pad, (size_t)D * sizeof(float));
    if (!(row = prefix_rows(m, &tr, &cs, out->rows, cbuf, err))) goto done;
    rc = icl ? icl_body(m, s, &tr, &l, streaming, row, cbuf, out, err)
             : plain_body(m, &tr, streaming, row, cbuf, out, err);
done:
    free(tr.buf);
    free(cbuf);
    if (rc) qtts_prompt_free(out);
    return rc;
}

int64_t qtts_prompt_wrap_text(const int32_t *tmpl, int64_t n_tmpl, const int32_t *text, int64_t n, int32_t *out) {
    if (n_tmpl < ROLE_PREFIX_IDS + TEXT_SUFFIX_IDS) return -1;
    memcpy(out, tmpl, ROLE_PREFIX_IDS * sizeof *out);
    memcpy(out + ROLE_PREFIX_IDS, text, (size_t)n * sizeof *out);
    memcpy(out + ROLE_PREFIX_IDS + n, tmpl + n_tmpl - TEXT_SUFFIX_IDS, TEXT_SUFFIX_IDS * sizeof *out);
    return ROLE_PREFIX_IDS + n + TEXT_SUFFIX_IDS;
}

int64_t qtts_prompt_text_tokens(int64_t n_text_ids) {
    return n_text_ids > ROLE_PREFIX_IDS + TEXT_SUFFIX_IDS ? n_text_ids - ROLE_PREFIX_IDS - TEXT_SUFFIX_IDS : 0;
}
