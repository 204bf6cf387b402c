/* Golden test of the talker + code predictor + prompt builder + greedy
 * generation loop against the official PyTorch outputs, for EVERY talker
 * case listed in manifest.json (every fixtures[/cv|/vd]/tk_<case>_input_ids
 * entry; the call string in "produced_by" gives mode, language, speaker,
 * streaming layout and max_new_tokens).
 * Tolerances: prompt rows / trailing / PAD 1e-5; hidden states, logits,
 * processed scores, step inputs 1e-4; tokens and codes identical. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "support/test_util.h"
#include "io/json_util.h"
#include "model/generate.h"
#include "support/npy.h"

#define TOL_PROMPT 1e-5
#define TOL_HIDDEN 1e-4
/* An f16 KV cache (what `auto` takes with q8_0/q4_k weights) rounds each key
 * and value to 11 significant bits; the prefill's layer outputs then move by
 * at most 1.6e-3 on these fixtures (f32 cache: 2.6e-6). */
#define TOL_HIDDEN_F16_KV 5e-3

static double worst[16];
static const char *stage_names[16] = {"prompt rows", "trailing text", "tts_pad", "talker prefill layers",
                                      "talker logits", "talker scores", "talker step inputs", "talker past hidden",
                                      "cp prefill projected", "cp frame0 layers", "cp logits frames 0/1",
                                      "talker prefill, f16 KV"};
enum { S_PROMPT, S_TRAIL, S_PAD, S_LAYERS, S_LOGITS, S_SCORES, S_STEPIN, S_PAST, S_CPPROJ, S_CPLAYERS, S_CPLOGITS,
       S_LAYERS_F16 };

static double near(int stage, const float *got, const float *want, size_t n, double tol, const char *what) {
    double e = TEST_NEAR(got, want, n, tol, what);
    if (e > worst[stage]) worst[stage] = e;
    return e;
}

/* Compares with -inf allowed (must match exactly in position). */
static void near_inf(int stage, const float *got, const float *want, size_t n, double tol, const char *what) {
    double e = 0;
    size_t bad = n;
    for (size_t i = 0; i < n; i++) {
        if (isinf(want[i]) || isinf(got[i])) {
            if (got[i] != want[i]) { bad = i; e = INFINITY; break; }
            continue;
        }
        double d = fabs((double)got[i] - want[i]);
        if (!(d <= e)) e = d;
    }
    TEST_CHECK(e <= tol, "%s: max|err| %g > %g (first inf mismatch at %zu)", what, e, tol, bad);
    if (e <= tol) printf("  ok   %-48s max|err| %.3g (tol %.1g, n=%zu, -inf matched)\n", what, e, tol, n);
    if (e > worst[stage]) worst[stage] = e;
}

static int fixture_exists(const char *name) {
    char rel[600], path[1024];
    snprintf(rel, sizeof rel, "fixtures/%s.npy", name);
    golden_path(path, sizeof path, rel);
    return access(path, R_OK) == 0;
}

static int load(const char *prefix, const char *what, npy_array *a) {
    char name[512];
    snprintf(name, sizeof name, "%s_%s", prefix, what);
    int rc = npy_load_fixture(name, a);
    TEST_CHECK(rc == 0, "missing fixture %s", name);
    return rc;
}

typedef struct {
    int64_t n_steps, n_cp;
    float *logits, *scores, *stepin, *past, *cp_logits; /* grown */
    int64_t V, D, CV, max_steps;
} trace_buf;

static void tr_logits(void *u, int64_t step, const float *raw, const float *scores, int64_t vocab) {
    trace_buf *t = u;
    if (step >= t->max_steps) return;
    memcpy(t->logits + step * vocab, raw, (size_t)vocab * sizeof(float));
    memcpy(t->scores + step * vocab, scores, (size_t)vocab * sizeof(float));
    if (step + 1 > t->n_steps) t->n_steps = step + 1;
}
static void tr_stepin(void *u, int64_t step, const float *x, int64_t dim) {
    trace_buf *t = u;
    if (step >= 1 && step < t->max_steps) memcpy(t->stepin + (step - 1) * dim, x, (size_t)dim * sizeof(float));
}
static void tr_past(void *u, int64_t step, const float *h, int64_t dim) {
    trace_buf *t = u;
    if (step < t->max_steps) memcpy(t->past + step * dim, h, (size_t)dim * sizeof(float));
}
static void tr_cp(void *u, int64_t frame, int group, const float *raw, int64_t vocab) {
    trace_buf *t = u;
    if (frame < 2) memcpy(t->cp_logits + (frame * 15 + (group - 1)) * vocab, raw, (size_t)vocab * sizeof(float));
}

typedef struct {
    float *logits; /* [15 x V] */
} cp_cap;
static int32_t cap_pick(void *ctx, int b, int group, float *logits, int64_t vocab) {
    cp_cap *c = ctx;
    (void)b;
    if (group <= 15) memcpy(c->logits + (group - 1) * vocab, logits, (size_t)vocab * sizeof(float));
    return qtts_argmax(logits, vocab);
}

static void on_frame(void *user, qtts_gen_request *r, int64_t frame, const int32_t *codes, int64_t n) {
    (void)r;
    (void)codes;
    (void)n;
    int64_t *count = user;
    if (frame == *count) (*count)++;
}

static void run_case(const char *sub, const char *cname, const char *call, qtts_pool *pool) {
    char prefix[256], arg[64], dir[1024];
    snprintf(prefix, sizeof prefix, "%stk_%s", sub, cname);
    printf("case %s\n", prefix);
    int clone = strstr(call, "generate_voice_clone") != NULL, cv = strstr(call, "generate_custom_voice") != NULL;
    int vd = strstr(call, "generate_voice_design") != NULL;
    TEST_CHECK(clone + cv + vd == 1, "%s: unknown call %s", cname, call);
    const char *model = clone ? "Qwen3-TTS-12Hz-0.6B-Base-tiny" : cv ? "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"
                                                                    : "Qwen3-TTS-12Hz-1.7B-VoiceDesign-tiny";
    golden_path(dir, sizeof dir, model);
    qtts_err err = {0};
    qtts_talker_model *m = qtts_talker_model_load(dir, NULL, &err);
    TEST_CHECK(m != NULL, "load %s: %s", model, err.msg);
    if (!m) return;
    const int64_t D = m->cfg.talker.hidden, V = m->cfg.talker.vocab, CV = m->cfg.cp.vocab, Dc = m->cfg.cp.hidden;
    const int64_t G = m->cfg.num_code_groups;

    npy_array ids = {0}, instr = {0}, ref_ids = {0}, ref_codes = {0}, spk = {0};
    load(prefix, "input_ids", &ids);
    char nm[400];
    snprintf(nm, sizeof nm, "%s_instruct_ids", prefix);
    if (fixture_exists(nm)) load(prefix, "instruct_ids", &instr);
    snprintf(nm, sizeof nm, "%s_spk_embedding", prefix);
    if (fixture_exists(nm)) load(prefix, "spk_embedding", &spk);
    snprintf(nm, sizeof nm, "%s_ref_codes", prefix);
    if (fixture_exists(nm)) {
        load(prefix, "ref_codes", &ref_codes);
        load(prefix, "ref_ids", &ref_ids);
    }

    qtts_prompt_spec spec = {0};
    spec.text_ids = ids.i;
    spec.n_text_ids = ids.numel;
    spec.instruct_ids = instr.i;
    spec.n_instruct_ids = instr.numel;
    char lang[64] = "", speaker[64] = "";
    if (!test_call_arg(call, "language", arg, sizeof arg) && strcmp(arg, "None")) snprintf(lang, sizeof lang, "%s", arg);
    spec.language = lang[0] ? lang : NULL;
    if (!test_call_arg(call, "speaker", arg, sizeof arg) && strcmp(arg, "None")) snprintf(speaker, sizeof speaker, "%s", arg);
    spec.speaker = speaker[0] ? speaker : NULL;
    spec.non_streaming = -1;
    if (!test_call_arg(call, "non_streaming_mode", arg, sizeof arg)) spec.non_streaming = !strcmp(arg, "True");
    if (clone) {
        int xvec_only = !test_call_arg(call, "x_vector_only_mode", arg, sizeof arg) && !strcmp(arg, "True");
        spec.mode = xvec_only ? QTTS_MODE_CLONE_XVEC : QTTS_MODE_CLONE_ICL;
        spec.xvector = spk.f;
        TEST_CHECK(spk.f != NULL, "%s: no spk_embedding fixture", cname);
        if (!xvec_only) {
            spec.ref_ids = ref_ids.i;
            spec.n_ref_ids = ref_ids.numel;
            spec.ref_codes = ref_codes.i;
            spec.n_ref_frames = ref_codes.numel / G;
        }
    } else {
        spec.mode = cv ? QTTS_MODE_CUSTOM_VOICE : QTTS_MODE_VOICE_DESIGN;
    }
    int64_t max_new = 0;
    TEST_CHECK(!test_call_arg(call, "max_new_tokens", arg, sizeof arg), "%s: no max_new_tokens", cname);
    max_new = atoll(arg);

    /* ---- prompt ---- */
    qtts_prompt pr;
    npy_array pe = {0}, tt = {0}, pad = {0};
    int prc = qtts_prompt_build(m, pool, &spec, &pr, &err);
    TEST_CHECK(prc == 0, "%s: prompt: %s", cname, err.msg);
    if (prc) goto out;
    load(prefix, "prefill_embeds", &pe);
    load(prefix, "trailing_text_hidden", &tt);
    load(prefix, "tts_pad_embed", &pad);
    TEST_CHECK(pe.numel == pr.n_rows * D, "%s: prompt rows %lld, want %lld", cname, (long long)pr.n_rows,
               (long long)(pe.numel / D));
    if (pe.numel == pr.n_rows * D) near(S_PROMPT, pr.rows, pe.f, (size_t)pe.numel, TOL_PROMPT, "prompt rows");
    TEST_CHECK(tt.numel == pr.n_trailing * D, "%s: trailing rows %lld, want %lld", cname, (long long)pr.n_trailing,
               (long long)(tt.numel / D));
    if (tt.numel == pr.n_trailing * D) near(S_TRAIL, pr.trailing, tt.f, (size_t)tt.numel, TOL_PROMPT, "trailing text");
    near(S_PAD, pr.pad, pad.f, (size_t)D, TOL_PROMPT, "tts_pad embed");

    /* ---- talker prefill, per layer, with an f32 and with an f16 KV cache ---- */
    for (int f16 = 0; f16 < 2; f16++) {
        npy_array lh = {0};
        load(prefix, "talker_prefill_layer_hidden", &lh);
        int64_t L = m->cfg.talker.layers, N = pr.n_rows;
        float *layers = malloc(sizeof(float) * (size_t)((L + 1) * N * D)), *out = malloc(sizeof(float) * (size_t)(N * D));
        qtts_kv_cache kv;
        qtts_lm_work w = {0};
        TEST_CHECK(qtts_kv_init(&kv, &m->cfg.talker, f16 ? QTTS_F16 : QTTS_F32, 0, 0, &err) == 0, "kv: %s", err.msg);
        qtts_kv_cache *kvp = &kv;
        int64_t n = N;
        int rc = qtts_lm_forward(&m->lm, pool, &w, 1, &kvp, &n, pr.rows, out, layers, &err);
        TEST_CHECK(rc == 0, "prefill: %s", err.msg);
        if (!rc && lh.numel == (L + 1) * N * D)
            near(f16 ? S_LAYERS_F16 : S_LAYERS, layers, lh.f, (size_t)lh.numel, f16 ? TOL_HIDDEN_F16_KV : TOL_HIDDEN,
                 f16 ? "talker prefill layer hidden, f16 KV" : "talker prefill layer hidden");
        else TEST_CHECK(0, "%s: layer hidden shape mismatch", cname);
        qtts_kv_free(&kv);
        qtts_lm_work_free(&w);
        free(layers);
        free(out);
        npy_free(&lh);
    }

    /* ---- code predictor frame 0 in isolation (fixture inputs) ---- */
    npy_array past = {0}, toks = {0}, cpt = {0}, cpl0 = {0}, cpl1 = {0}, cplh = {0}, proj = {0};
    load(prefix, "talker_past_hidden", &past);
    load(prefix, "talker_tokens", &toks);
    load(prefix, "cp_tokens", &cpt);
    load(prefix, "cp_logits_frame0", &cpl0);
    load(prefix, "cp_logits_frame1", &cpl1);
    load(prefix, "cp_frame0_prefill_layer_hidden", &cplh);
    snprintf(nm, sizeof nm, "%s_cp_prefill_embeds_projected", prefix);
    if (fixture_exists(nm)) load(prefix, "cp_prefill_embeds_projected", &proj);
    {
        int64_t Lc = m->cfg.cp.layers;
        float *e0 = malloc(sizeof(float) * (size_t)D), *layers = malloc(sizeof(float) * (size_t)((Lc + 1) * 2 * Dc));
        float *pj = malloc(sizeof(float) * (size_t)(2 * Dc)), *lg = malloc(sizeof(float) * (size_t)(15 * CV));
        int32_t codes[64];
        qtts_kv_cache kv;
        qtts_cp_work w = {0};
        qtts_kv_init(&kv, &m->cfg.cp, QTTS_F32, G, G, &err);
        qtts_kv_cache *kvp = &kv;
        cp_cap cap = {lg};
        TEST_CHECK(qtts_talker_codec_embed(m, toks.i[0], e0, &err) == 0, "codec embed: %s", err.msg);
        int rc = qtts_code_predictor_run(&m->cp, pool, &w, 1, past.f, e0, &kvp, cap_pick, &cap, codes, NULL, layers, pj, &err);
        TEST_CHECK(rc == 0, "cp: %s", err.msg);
        if (!rc) {
            if (cplh.numel == (Lc + 1) * 2 * Dc) near(S_CPLAYERS, layers, cplh.f, (size_t)cplh.numel, TOL_HIDDEN, "cp frame0 prefill layer hidden");
            else TEST_CHECK(0, "%s: cp layer hidden shape", cname);
            if (proj.f) near(S_CPPROJ, pj, proj.f, (size_t)(2 * Dc), TOL_HIDDEN, "cp prefill projected (frame 0)");
            if (G - 1 == 15) near(S_CPLOGITS, lg, cpl0.f, (size_t)(15 * CV), TOL_HIDDEN, "cp logits frame 0 (isolated)");
            TEST_EQUAL_I32(codes, cpt.i, (size_t)(G - 1), "cp tokens frame 0 (isolated)");
        }
        qtts_kv_free(&kv);
        qtts_cp_work_free(&w);
        free(e0);
        free(layers);
        free(pj);
        free(lg);
    }

    /* ---- full greedy generation with traces ---- */
    {
        npy_array lg = {0}, sc = {0}, si = {0}, codes = {0};
        load(prefix, "talker_logits", &lg);
        load(prefix, "talker_scores", &sc);
        load(prefix, "talker_step_input_embeds", &si);
        load(prefix, "codes", &codes);
        int64_t steps = toks.numel, want_frames = codes.numel / G;
        int eos = toks.i[steps - 1] == (int32_t)m->cfg.codec_eos;
        trace_buf tb = {0};
        tb.max_steps = steps + 1;
        tb.V = V;
        tb.D = D;
        tb.logits = calloc((size_t)(tb.max_steps * V), sizeof(float));
        tb.scores = calloc((size_t)(tb.max_steps * V), sizeof(float));
        tb.stepin = calloc((size_t)(tb.max_steps * D), sizeof(float));
        tb.past = calloc((size_t)(tb.max_steps * D), sizeof(float));
        tb.cp_logits = calloc((size_t)(2 * 15 * CV), sizeof(float));
        qtts_gen_params gp;
        qtts_gen_params_greedy(&gp, &m->gen, max_new - 1);
        TEST_CHECK(fabsf(gp.repetition_penalty - 1.05f) < 1e-6f, "repetition penalty from generation_config: %g",
                   gp.repetition_penalty);
        qtts_gen_request *r = qtts_gen_request_from_prompt(m, &pr, &gp, &err);
        TEST_CHECK(r != NULL, "request: %s", err.msg);
        if (r) {
            qtts_gen_trace t = {tr_logits, tr_stepin, tr_past, tr_cp, &tb};
            qtts_gen_request_set_trace(r, &t);
            int64_t cb_frames = 0;
            qtts_gen_request_set_callback(r, on_frame, &cb_frames);
            int rc = qtts_generate(m, pool, r, &err);
            TEST_CHECK(rc == 0, "generate: %s", err.msg);
            int64_t nf = qtts_gen_request_n_frames(r);
            TEST_CHECK(nf == want_frames, "%s: %lld frames, want %lld", cname, (long long)nf, (long long)want_frames);
            TEST_CHECK(cb_frames == nf, "%s: callback saw %lld frames in order, want %lld", cname, (long long)cb_frames,
                       (long long)nf);
            TEST_CHECK(qtts_gen_request_stop_reason(r) == (eos ? QTTS_STOP_EOS : QTTS_STOP_MAX_FRAMES), "%s: stop reason %d",
                       cname, (int)qtts_gen_request_stop_reason(r));
            /* computed talker steps: all of them at EOS; at max_frames the final (discarded) step is skipped */
            int64_t cmp = eos ? steps : steps - 1;
            TEST_CHECK(tb.n_steps == cmp, "%s: %lld talker steps traced, want %lld", cname, (long long)tb.n_steps,
                       (long long)cmp);
            if (tb.n_steps >= cmp && lg.numel == steps * V) {
                near(S_LOGITS, tb.logits, lg.f, (size_t)(cmp * V), TOL_HIDDEN, "talker logits (all computed steps)");
                near_inf(S_SCORES, tb.scores, sc.f, (size_t)(cmp * V), TOL_HIDDEN, "talker processed scores");
                near(S_PAST, tb.past, past.f, (size_t)(cmp * D), TOL_HIDDEN, "talker past hidden");
                if (cmp > 1) near(S_STEPIN, tb.stepin, si.f, (size_t)((cmp - 1) * D), TOL_HIDDEN, "talker step input embeds");
                int32_t *gt = malloc(sizeof(int32_t) * (size_t)cmp);
                for (int64_t s = 0; s < cmp; s++) gt[s] = qtts_argmax(tb.scores + s * V, V);
                TEST_EQUAL_I32(gt, toks.i, (size_t)cmp, "talker tokens");
                free(gt);
            }
            if (nf == want_frames) {
                TEST_EQUAL_I32(qtts_gen_request_codes(r), codes.i, (size_t)codes.numel, "codes [frames x 16]");
                int32_t *c = malloc(sizeof(int32_t) * (size_t)(nf * (G - 1)) + 1);
                for (int64_t f = 0; f < nf; f++) memcpy(c + f * (G - 1), qtts_gen_request_codes(r) + f * G + 1, sizeof(int32_t) * (size_t)(G - 1));
                TEST_EQUAL_I32(c, cpt.i, (size_t)(nf * (G - 1)), "cp tokens");
                free(c);
            }
            if (nf >= 2 && G - 1 == 15) {
                near(S_CPLOGITS, tb.cp_logits, cpl0.f, (size_t)(15 * CV), TOL_HIDDEN, "cp logits frame 0 (in loop)");
                near(S_CPLOGITS, tb.cp_logits + 15 * CV, cpl1.f, (size_t)(15 * CV), TOL_HIDDEN, "cp logits frame 1 (in loop)");
            }
            qtts_gen_request_free(r);
        }
        free(tb.logits);
        free(tb.scores);
        free(tb.stepin);
        free(tb.past);
        free(tb.cp_logits);
        npy_free(&lg);
        npy_free(&sc);
        npy_free(&si);
        npy_free(&codes);
    }
    npy_free(&past);
    npy_free(&toks);
    npy_free(&cpt);
    npy_free(&cpl0);
    npy_free(&cpl1);
    npy_free(&cplh);
    npy_free(&proj);
    qtts_prompt_free(&pr);
out:
    npy_free(&pe);
    npy_free(&tt);
    npy_free(&pad);
    npy_free(&ids);
    npy_free(&instr);
    npy_free(&ref_ids);
    npy_free(&ref_codes);
    npy_free(&spk);
    qtts_talker_model_free(m);
}

int main(void) {
    qtts_err err = {0};
    /* one thread: results do not depend on it (test_talker_batch checks 1 vs 2) and it stays fast on a busy machine */
    qtts_pool *pool = qtts_pool_create(1, &err);
    TEST_CHECK(pool != NULL, "pool: %s", err.msg);
    char path[1024];
    cJSON *man = json_load_file(golden_path(path, sizeof path, "manifest.json"), &err);
    TEST_CHECK(man != NULL, "manifest: %s", err.msg);
    if (!man || !pool) return test_finish("test_talker_golden");
    const cJSON *entries = cJSON_GetObjectItemCaseSensitive(man, "entries"), *e;
    int n_cases = 0;
    cJSON_ArrayForEach(e, entries) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(e, "file"), *pb = cJSON_GetObjectItemCaseSensitive(e, "produced_by");
        if (!cJSON_IsString(f) || !cJSON_IsString(pb)) continue;
        const char *file = f->valuestring, *base = strrchr(file, '/');
        base = base ? base + 1 : file;
        size_t bl = strlen(base), sl = strlen("_input_ids.npy");
        if (strncmp(base, "tk_", 3) || bl <= sl + 3 || strcmp(base + bl - sl, "_input_ids.npy")) continue;
        char cname[128], sub[64] = "";
        snprintf(cname, sizeof cname, "%.*s", (int)(bl - sl - 3), base + 3);
        /* sub-folder between "fixtures/" and the file name */
        const char *fx = strstr(file, "fixtures/");
        if (fx && base > fx + 9) snprintf(sub, sizeof sub, "%.*s", (int)(base - (fx + 9)), fx + 9);
        run_case(sub, cname, pb->valuestring, pool);
        n_cases++;
    }
    TEST_CHECK(n_cases >= 11, "only %d talker cases found in the manifest", n_cases);
    printf("%d talker cases; worst max|err| per stage:\n", n_cases);
    for (int s = 0; s <= S_LAYERS_F16; s++) printf("  %-26s %.3g\n", stage_names[s], worst[s]);
    cJSON_Delete(man);
    qtts_pool_free(pool);
    return test_finish("test_talker_golden");
}
