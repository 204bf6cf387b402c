/* Prompt builder: mode validation (one clear error per invalid combination),
 * dialect override, the CustomVoice instruct size-tag rule, layout lengths
 * for streaming / non-streaming overrides. Golden row values are covered by
 * test_talker_golden. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "model/prompt.h"
#include "support/npy.h"

static qtts_talker_model *load(const char *name) {
    char dir[1024];
    qtts_err err = {0};
    qtts_talker_model *m = qtts_talker_model_load(golden_path(dir, sizeof dir, name), NULL, &err);
    TEST_CHECK(m != NULL, "load %s: %s", name, err.msg);
    return m;
}

/* Expects failure with a message containing `needle`. */
static void expect_error(const qtts_talker_model *m, qtts_pool *pool, const qtts_prompt_spec *s, const char *needle,
                         const char *what) {
    qtts_err err = {0};
    qtts_prompt p;
    int rc = qtts_prompt_build(m, pool, s, &p, &err);
    TEST_CHECK(rc == -1 && strstr(err.msg, needle) != NULL, "%s: rc %d, message \"%s\" (want \"%s\")", what, rc,
               err.msg, needle);
    TEST_CHECK(strchr(err.msg, '\n') == NULL, "%s: message is one line", what);
    if (rc == 0) qtts_prompt_free(&p);
    else if (strstr(err.msg, needle)) printf("  ok   %-36s -> %s\n", what, err.msg);
}

static int64_t rows_of(const qtts_talker_model *m, qtts_pool *pool, const qtts_prompt_spec *s, qtts_prompt *keep) {
    qtts_err err = {0};
    qtts_prompt p;
    if (qtts_prompt_build(m, pool, s, &p, &err)) {
        TEST_CHECK(0, "build failed: %s", err.msg);
        return -1;
    }
    int64_t n = p.n_rows;
    if (keep) *keep = p;
    else qtts_prompt_free(&p);
    return n;
}

/* Checks that row r of the prompt equals PAD + C(id). */
static void check_lang_row(const qtts_talker_model *m, const qtts_prompt *p, int64_t r, int64_t id, const char *what) {
    int64_t D = p->dim;
    float *c = malloc(sizeof(float) * (size_t)D), *want = malloc(sizeof(float) * (size_t)D);
    qtts_err err = {0};
    qtts_talker_codec_embed(m, id, c, &err);
    for (int64_t i = 0; i < D; i++) want[i] = p->pad[i] + c[i];
    TEST_NEAR(p->rows + r * D, want, (size_t)D, 1e-6, what);
    free(c);
    free(want);
}

int main(void) {
    qtts_err err = {0};
    qtts_pool *pool = qtts_pool_create(1, &err);
    qtts_talker_model *cv = load("Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny");
    qtts_talker_model *vd = load("Qwen3-TTS-12Hz-1.7B-VoiceDesign-tiny");
    qtts_talker_model *base = load("Qwen3-TTS-12Hz-0.6B-Base-tiny");
    npy_array ids = {0}, instr = {0}, spk = {0}, rids = {0}, rcodes = {0};
    int ok = pool && cv && vd && base && !npy_load_fixture("cv/tk_cv_en_input_ids", &ids) &&
             !npy_load_fixture("cv/tk_cv_instruct_auto_instruct_ids", &instr) &&
             !npy_load_fixture("tk_icl_en_short_ref_spk_embedding", &spk) &&
             !npy_load_fixture("tk_icl_en_short_ref_ref_ids", &rids) &&
             !npy_load_fixture("tk_icl_en_short_ref_ref_codes", &rcodes);
    TEST_CHECK(ok, "setup");
    if (!ok) return test_finish("test_prompt");
    const qtts_prompt_spec cvs = {.mode = QTTS_MODE_CUSTOM_VOICE, .text_ids = ids.i, .n_text_ids = ids.numel,
                                  .speaker = "Ryan", .language = "English", .non_streaming = -1};
    qtts_prompt_spec s;

    /* --- validation errors --- */
    s = cvs; s.speaker = NULL;
    expect_error(cv, pool, &s, "needs a speaker", "CV without speaker");
    s = cvs; s.speaker = "nobody";
    expect_error(cv, pool, &s, "unknown speaker \"nobody\" (valid: ", "CV unknown speaker");
    s = cvs; s.language = "klingon";
    expect_error(cv, pool, &s, "unknown language \"klingon\" (valid: auto, ", "unknown language");
    s = cvs; s.language = "sichuan_dialect";
    expect_error(cv, pool, &s, "unknown language", "dialect as language");
    s = cvs; s.mode = QTTS_MODE_VOICE_DESIGN;
    expect_error(cv, pool, &s, "needs a voice_design model", "voice design on CV model");
    s = cvs; s.mode = QTTS_MODE_CLONE_XVEC; s.speaker = NULL; s.xvector = spk.f;
    expect_error(cv, pool, &s, "needs a base model", "cloning on CV model");
    s = cvs; s.mode = QTTS_MODE_VOICE_DESIGN; s.instruct_ids = instr.i; s.n_instruct_ids = instr.numel;
    expect_error(vd, pool, &s, "takes no speaker", "speaker on VoiceDesign");
    s = cvs; s.mode = QTTS_MODE_VOICE_DESIGN; s.speaker = NULL;
    expect_error(vd, pool, &s, "needs an instruct", "VoiceDesign without instruct");
    s = cvs; s.mode = QTTS_MODE_CLONE_ICL; s.speaker = NULL; s.xvector = spk.f; s.ref_ids = rids.i; s.n_ref_ids = rids.numel;
    expect_error(base, pool, &s, "needs reference codes", "ICL without ref codes");
    s.ref_codes = rcodes.i; s.n_ref_frames = rcodes.numel / 16; s.ref_ids = NULL; s.n_ref_ids = 0;
    expect_error(base, pool, &s, "reference text ids", "ICL without ref text");
    s.ref_ids = rids.i; s.n_ref_ids = rids.numel; s.xvector = NULL;
    expect_error(base, pool, &s, "x-vector", "clone without x-vector");
    s.xvector = spk.f; s.speaker = "Ryan";
    expect_error(base, pool, &s, "no named speaker", "speaker on Base");
    s.speaker = NULL; s.instruct_ids = instr.i; s.n_instruct_ids = instr.numel;
    expect_error(base, pool, &s, "instruct is not supported", "instruct on Base");
    s.instruct_ids = NULL; s.n_instruct_ids = 0;
    int32_t bad = rcodes.i[0];
    rcodes.i[0] = 5000;
    expect_error(base, pool, &s, "outside the codebook", "ICL ref code out of range");
    rcodes.i[0] = bad;
    s = cvs; s.mode = QTTS_MODE_CUSTOM_VOICE;
    expect_error(base, pool, &s, "needs a custom_voice model", "custom voice on Base");
    s = cvs; s.n_text_ids = 5;
    expect_error(cv, pool, &s, "chat template", "truncated text ids");
    s = cvs; s.n_text_ids = ids.numel - 1;
    expect_error(cv, pool, &s, "chat template", "text ids without the tail");
    int32_t badid[9];
    memcpy(badid, ids.i, 3 * sizeof(int32_t));
    memcpy(badid + 4, ids.i + ids.numel - 5, 5 * sizeof(int32_t));
    badid[3] = 999999;
    s = cvs; s.text_ids = badid; s.n_text_ids = 9;
    expect_error(cv, pool, &s, "outside the text vocabulary", "text id out of range");
    int32_t empty[8];
    memcpy(empty, ids.i, 3 * sizeof(int32_t));
    memcpy(empty + 3, ids.i + ids.numel - 5, 5 * sizeof(int32_t));
    s = cvs; s.text_ids = empty; s.n_text_ids = 8; s.non_streaming = 0;
    expect_error(cv, pool, &s, "text is empty", "empty text, streaming");

    /* --- layouts and rules --- */
    const int64_t nt = ids.numel - 8;
    s = cvs; s.text_ids = empty; s.n_text_ids = 8;
    TEST_CHECK(rows_of(cv, pool, &s, NULL) == 3 + 6 + 2, "empty text is fine non-streaming");
    s = cvs; /* English + speaker: K = 7 */
    TEST_CHECK(rows_of(cv, pool, &s, NULL) == 3 + 6 + nt + 2, "CV default is non-streaming");
    s.non_streaming = 0;
    TEST_CHECK(rows_of(cv, pool, &s, NULL) == 3 + 6 + 1, "CV streaming override");
    s = cvs; s.language = NULL; /* auto: K = 6 */
    TEST_CHECK(rows_of(cv, pool, &s, NULL) == 3 + 5 + nt + 2, "CV auto language (nothink prefix)");
    s.language = "AUTO";
    TEST_CHECK(rows_of(cv, pool, &s, NULL) == 3 + 5 + nt + 2, "language is case-insensitive");
    /* dialect override */
    const qtts_named_id *en = qtts_config_language(&cv->cfg, "english"), *sc = qtts_config_language(&cv->cfg, "sichuan_dialect");
    qtts_prompt p;
    s = cvs; s.speaker = "ERIC"; s.language = "Chinese";
    if (rows_of(cv, pool, &s, &p) == 3 + 6 + nt + 2) { check_lang_row(cv, &p, 5, sc->id, "eric+chinese -> sichuan_dialect"); qtts_prompt_free(&p); }
    s.language = "auto";
    if (rows_of(cv, pool, &s, &p) == 3 + 6 + nt + 2) { check_lang_row(cv, &p, 5, sc->id, "eric+auto -> think + sichuan_dialect"); qtts_prompt_free(&p); }
    else TEST_CHECK(0, "eric+auto uses the 4-row think prefix");
    s.language = "english";
    if (rows_of(cv, pool, &s, &p) == 3 + 6 + nt + 2) { check_lang_row(cv, &p, 5, en->id, "eric+english keeps english"); qtts_prompt_free(&p); }
    /* instruct: used on 1b7, dropped by the official size-tag rule on 0b6 and "" */
    s = cvs; s.instruct_ids = instr.i; s.n_instruct_ids = instr.numel;
    TEST_CHECK(rows_of(cv, pool, &s, NULL) == instr.numel + 3 + 6 + nt + 2, "CV 1b7 uses the instruct");
    char saved[16];
    memcpy(saved, cv->cfg.size, sizeof saved);
    snprintf(cv->cfg.size, sizeof cv->cfg.size, "0b6");
    TEST_CHECK(rows_of(cv, pool, &s, NULL) == 3 + 6 + nt + 2, "CV 0b6 drops the instruct");
    cv->cfg.size[0] = 0;
    TEST_CHECK(rows_of(cv, pool, &s, NULL) == 3 + 6 + nt + 2, "CV with empty size tag drops the instruct");
    memcpy(cv->cfg.size, saved, sizeof saved);
    /* ICL layouts: streaming (default) vs non-streaming */
    s = cvs; s.mode = QTTS_MODE_CLONE_ICL; s.speaker = NULL; s.xvector = spk.f; s.ref_ids = rids.i; s.n_ref_ids = rids.numel;
    s.ref_codes = rcodes.i; s.n_ref_frames = rcodes.numel / 16;
    int64_t a = (rids.numel - 5) + nt + 1, b = 1 + s.n_ref_frames;
    TEST_CHECK(rows_of(base, pool, &s, &p) == 3 + 6 + b, "ICL streaming rows");
    if (p.rows) {
        TEST_CHECK(p.n_trailing == (a > b ? a - b : 1), "ICL streaming trailing %lld", (long long)p.n_trailing);
        qtts_prompt_free(&p);
    }
    s.non_streaming = 1;
    TEST_CHECK(rows_of(base, pool, &s, &p) == 3 + 6 + a + b, "ICL non-streaming rows");
    if (p.rows) {
        TEST_CHECK(p.n_trailing == 1, "ICL non-streaming trailing = [PAD]");
        qtts_prompt_free(&p);
    }

    npy_free(&ids);
    npy_free(&instr);
    npy_free(&spk);
    npy_free(&rids);
    npy_free(&rcodes);
    qtts_talker_model_free(cv);
    qtts_talker_model_free(vd);
    qtts_talker_model_free(base);
    qtts_pool_free(pool);
    return test_finish("test_prompt");
}
