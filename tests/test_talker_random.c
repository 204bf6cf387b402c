/* Random-weight models at real dimensions load through the normal path
 * (every tensor shape checked), and the fused q|k|v / gate|up path used for
 * converted weights matches the separate-matrix path: the tiny CustomVoice
 * checkpoint is re-stored as bf16, then loaded (a) as bf16 views (separate
 * matrices) and (b) converted to f32 at load (owned, fused; the values are
 * the same since bf16 -> f32 is exact). Greedy codes must be identical and
 * logits agree to 1e-4. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "model/generate.h"
#include "model/model_random.h"
#include "support/npy.h"

typedef struct {
    float *logits;
    int64_t n;
} cap;
static void on_logits(void *u, int64_t step, const float *raw, const float *scores, int64_t vocab) {
    (void)scores;
    cap *c = u;
    if (step < 8) memcpy(c->logits + step * vocab, raw, (size_t)vocab * sizeof(float));
    if (step + 1 > c->n) c->n = step + 1;
}

static qtts_store *as_bf16(const qtts_store *src, qtts_err *err) {
    qtts_store *st = qtts_store_new(err);
    for (int i = 0; st && i < qtts_store_count(src); i++) {
        const qtts_tensor *t = qtts_store_at(src, i);
        int64_t n = qtts_tensor_numel(t);
        float *f = qtts_tensor_to_f32(t, err);
        uint16_t *h = malloc((size_t)n * 2);
        if (!f || !h) return NULL;
        for (int64_t j = 0; j < n; j++) h[j] = qtts_f32_to_bf16(f[j]);
        free(f);
        if (qtts_store_add(st, t->name, QTTS_BF16, t->ndim, t->shape, h, 1, err)) return NULL;
    }
    return st;
}

int main(void) {
    qtts_err err = {0};
    qtts_pool *pool = qtts_pool_create(2, &err);

    /* real-dimension random models */
    qtts_model_config cfg;
    TEST_CHECK(qtts_model_random_config(&cfg, "0.6b", QTTS_VARIANT_BASE, &err) == 0 && cfg.talker.hidden == 1024 &&
                   cfg.talker.intermediate == 3072 && cfg.cp.layers == 5 && cfg.spk_enc_dim == 1024,
               "0.6B config");
    TEST_CHECK(qtts_model_random_config(&cfg, "1.7b", QTTS_VARIANT_CUSTOM_VOICE, &err) == 0 && cfg.talker.hidden == 2048 &&
                   cfg.talker.intermediate == 6144 && cfg.n_speakers == 9,
               "1.7B config");
    TEST_CHECK(qtts_model_random_config(&cfg, "0.6b", QTTS_VARIANT_VOICE_DESIGN, &err) == -1, "no 0.6B VoiceDesign");
    TEST_CHECK(qtts_model_random_config(&cfg, "3b", QTTS_VARIANT_BASE, &err) == -1 && strstr(err.msg, "3b"), "bad size");
    const char *sizes[2] = {"0.6b", "1.7b"};
    const qtts_variant vars[2] = {QTTS_VARIANT_CUSTOM_VOICE, QTTS_VARIANT_VOICE_DESIGN};
    for (int i = 0; i < 2; i++) {
        /* real widths, fewer layers (keeps the test fast; the bench builds the full stacks) */
        qtts_model_config rc;
        qtts_talker_model *m = NULL;
        if (!qtts_model_random_config(&rc, sizes[i], vars[i], &err)) {
            rc.talker.layers = 4;
            rc.cp.layers = 2;
            qtts_store *st = qtts_model_random_store(&rc, QTTS_Q4_K, 1, &err);
            if (st) m = qtts_talker_model_from_store(st, &rc, NULL, NULL, &err);
        }
        TEST_CHECK(m != NULL, "random %s: %s", sizes[i], err.msg);
        if (!m) continue;
        TEST_CHECK(m->cp.has_proj == (i == 1), "%s: small_to_mtp_projection present iff 1.7B", sizes[i]);
        /* interleaved weights (AVX-512 CPUs) are repacked copies, stacked; otherwise zero-copy views */
        const qtts_mat *qkv = &m->lm.layers[3].qkv;
        TEST_CHECK(qkv->data == m->lm.layers[3].q.data && (qkv->interleave ? qkv->owned != NULL : !qkv->owned) &&
                       m->cp.lm.layers[1].gate_up.rows == 2 * m->cfg.cp.intermediate,
                   "%s: q|k|v and gate|up are stacked (zero-copy unless interleaved)", sizes[i]);
        /* a prompt at real width: text projection over text_embedding rows */
        int32_t ids[10] = {151644, 77091, 198, 9707, 1879, 151645, 198, 151644, 77091, 198};
        int32_t instr[4] = {151644, 872, 198, 151645};
        qtts_prompt_spec s = {.mode = i ? QTTS_MODE_VOICE_DESIGN : QTTS_MODE_CUSTOM_VOICE, .text_ids = ids,
                              .n_text_ids = 10, .speaker = i ? NULL : "ryan", .instruct_ids = i ? instr : NULL,
                              .n_instruct_ids = i ? 4 : 0, .non_streaming = -1};
        qtts_prompt p;
        int prc = qtts_prompt_build(m, pool, &s, &p, &err);
        TEST_CHECK(prc == 0, "random %s prompt: %s", sizes[i], err.msg);
        if (prc == 0) {
            int finite = 1;
            for (int64_t j = 0; j < p.n_rows * p.dim; j++) finite &= p.rows[j] == p.rows[j];
            TEST_CHECK(finite && p.dim == m->cfg.talker.hidden, "random %s prompt values", sizes[i]);
            qtts_prompt_free(&p);
        }
        /* the text embedding keeps its values when its pages are dropped (as a checkpoint's would) */
        {
            const int64_t TH = m->cfg.text_hidden;
            float *r0 = malloc(sizeof(float) * (size_t)TH * 2), *r1 = r0 ? r0 + TH : NULL;
            int same = r0 && !qtts_tensor_row_f32(m->text_emb, 1879, r0, &err);
            qtts_store_release_pages(m->store);
            same = same && !qtts_tensor_row_f32(m->text_emb, 1879, r1, &err);
            double mag = 0;
            for (int64_t j = 0; same && j < TH; j++) {
                same &= r0[j] == r1[j];
                mag += fabs(r0[j]);
            }
            TEST_CHECK(same && mag > 0, "random %s: text embedding row after a page release (%s)", sizes[i], err.msg);
            free(r0);
        }
        qtts_talker_model_free(m);
    }

    /* fused vs separate matrices */
    char dir[1024];
    golden_path(dir, sizeof dir, "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny");
    qtts_model_config mc;
    qtts_generation_config gc;
    qtts_store *src = qtts_store_open(dir, &err);
    int ok = src && !qtts_model_config_load(&mc, dir, &err) && !qtts_generation_config_load(&gc, dir, &err);
    TEST_CHECK(ok, "tiny CV: %s", err.msg);
    qtts_store *s1 = ok ? as_bf16(src, &err) : NULL, *s2 = ok ? as_bf16(src, &err) : NULL;
    qtts_store_free(src);
    qtts_talker_options views = {.weight_type = QTTS_DTYPE_INVALID}, conv = {.weight_type = QTTS_F32};
    qtts_talker_model *a = s1 ? qtts_talker_model_from_store(s1, &mc, &gc, &views, &err) : NULL;
    qtts_talker_model *b = s2 ? qtts_talker_model_from_store(s2, &mc, &gc, &conv, &err) : NULL;
    TEST_CHECK(a && b, "bf16 stores: %s", err.msg);
    npy_array ids = {0};
    if (a && b && !npy_load_fixture("cv/tk_cv_en_input_ids", &ids)) {
        TEST_CHECK(a->lm.layers[0].qkv.data == NULL && b->lm.layers[0].qkv.data != NULL &&
                       b->cp.lm.layers[0].gate_up.data != NULL,
                   "views stay separate, converted weights are fused");
        qtts_prompt_spec s = {.mode = QTTS_MODE_CUSTOM_VOICE, .text_ids = ids.i, .n_text_ids = ids.numel,
                              .speaker = "ryan", .language = "english", .non_streaming = -1};
        qtts_gen_params gp;
        qtts_gen_params_greedy(&gp, &gc, 7);
        cap ca = {calloc(8 * 3072, sizeof(float)), 0}, cb = {calloc(8 * 3072, sizeof(float)), 0};
        qtts_gen_request *ra = qtts_gen_request_new(a, pool, &s, &gp, &err), *rb = qtts_gen_request_new(b, pool, &s, &gp, &err);
        if (ra && rb) {
            qtts_gen_trace ta = {.talker_logits = on_logits, .user = &ca}, tb = {.talker_logits = on_logits, .user = &cb};
            qtts_gen_request_set_trace(ra, &ta);
            qtts_gen_request_set_trace(rb, &tb);
            TEST_CHECK(!qtts_generate(a, pool, ra, &err) && !qtts_generate(b, pool, rb, &err), "gen: %s", err.msg);
            TEST_CHECK(qtts_gen_request_n_frames(ra) == 7 && qtts_gen_request_n_frames(rb) == 7, "frames");
            TEST_NEAR(cb.logits, ca.logits, (size_t)(7 * 3072), 1e-4, "fused vs separate: talker logits");
            TEST_EQUAL_I32(qtts_gen_request_codes(rb), qtts_gen_request_codes(ra), 7 * 16, "fused vs separate: codes");
        }
        qtts_gen_request_free(ra);
        qtts_gen_request_free(rb);
        free(ca.logits);
        free(cb.logits);
    }
    npy_free(&ids);
    qtts_talker_model_free(a);
    qtts_talker_model_free(b);
    /* q4_k on rows that hold no whole 256-block falls back to q8_0 (qtts_dtype_fit) */
    qtts_talker_options q4 = {.weight_type = QTTS_Q4_K};
    qtts_talker_model *fit = qtts_talker_model_load(dir, &q4, &err);
    TEST_CHECK(fit != NULL, "q4_k on 32-wide tiny weights: %s", err.msg);
    if (fit) TEST_CHECK(fit->codec_head.type == QTTS_Q8_0, "codec_head stored as %s, expected q8_0", qtts_dtype_name(fit->codec_head.type));
    qtts_talker_model_free(fit);
    qtts_pool_free(pool);
    return test_finish("test_talker_random");
}
