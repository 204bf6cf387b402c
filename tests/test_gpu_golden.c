/* The golden talker cases (every fixtures[/cv|/vd]/tk_<case>_input_ids entry
 * of manifest.json) through the device talker and code predictor
 * (gpu/gpu_lm.h), greedy: the codebook-0 tokens (EOS included) and the 16
 * codes of every frame must be IDENTICAL to the official reference's (and be
 * in the stream's code-ring row, for the decoder), for each case run alone
 * (batch 1) and for all cases of a model run as one batch whose streams
 * finish at different frames (the batch shrinks, so several recorded
 * sequences are used). The prompts are built on the CPU (model/prompt.h), as
 * the engine does. The generation loop with the device attached
 * (qtts_batch_set_device) runs them again beside seeded sampled requests (the
 * model's sampling settings), which run on the device too and must give the
 * codes the CPU loop gives them alone (the device sampler draws as the CPU's,
 * gpu/gpu_sample.h); requests on the device hold no host KV cache. One stream
 * runs past 2048 positions (its device cache grown from 64, once at its
 * prefill and once mid-stream), with the CPU loop's codes. Without a Vulkan
 * device the test is skipped (exit 77) unless QTTS_REQUIRE_VULKAN=1. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu/gpu_lm.h"
#include "harness.h"
#include "support/test_util.h"
#include "support/gpu_device.h"
#include "io/json_util.h"
#include "model/generate.h"
#include "support/npy.h"

enum { MAX_CASES = 32 };

typedef struct {
    char prefix[256], call[1024];
} gcase;

static int load_opt(const char *prefix, const char *what, npy_array *a) {
    char name[512], rel[600], path[1024];
    snprintf(name, sizeof name, "%s_%s", prefix, what);
    snprintf(rel, sizeof rel, "fixtures/%s.npy", name);
    if (access(golden_path(path, sizeof path, rel), R_OK)) return 1;
    int rc = npy_load_fixture(name, a);
    TEST_CHECK(rc == 0, "fixture %s unreadable", name);
    return rc;
}

static const char *model_of(const char *call) {
    return strstr(call, "generate_voice_clone")    ? "Qwen3-TTS-12Hz-0.6B-Base-tiny"
           : strstr(call, "generate_custom_voice") ? "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"
                                                   : "Qwen3-TTS-12Hz-1.7B-VoiceDesign-tiny";
}

/* One case's prompt and reference. */
typedef struct {
    const gcase *c;
    qtts_prompt pr;
    int64_t max_frames;
    npy_array toks, codes; /* reference codebook-0 tokens (EOS last if it stopped there), frames x G */
    int ok;
} stream_case;

static int prepare(stream_case *s, const qtts_talker_model *m, qtts_pool *pool) {
    const gcase *c = s->c;
    npy_array ids = {0}, instr = {0}, ref_ids = {0}, ref_codes = {0}, spk = {0};
    char arg[64], lang[64] = "", speaker[64] = "";
    qtts_err err = {0};
    load_opt(c->prefix, "input_ids", &ids);
    load_opt(c->prefix, "instruct_ids", &instr);
    load_opt(c->prefix, "spk_embedding", &spk);
    if (!load_opt(c->prefix, "ref_codes", &ref_codes)) load_opt(c->prefix, "ref_ids", &ref_ids);
    TEST_CHECK(!load_opt(c->prefix, "talker_tokens", &s->toks) && !load_opt(c->prefix, "codes", &s->codes),
               "%s: reference tokens missing", c->prefix);
    qtts_prompt_spec spec = {0};
    spec.text_ids = ids.i;
    spec.n_text_ids = ids.numel;
    spec.instruct_ids = instr.i;
    spec.n_instruct_ids = instr.numel;
    if (!test_call_arg(c->call, "language", arg, sizeof arg) && strcmp(arg, "None")) snprintf(lang, sizeof lang, "%s", arg);
    if (!test_call_arg(c->call, "speaker", arg, sizeof arg) && strcmp(arg, "None"))
        snprintf(speaker, sizeof speaker, "%s", arg);
    spec.language = lang[0] ? lang : NULL;
    spec.speaker = speaker[0] ? speaker : NULL;
    spec.non_streaming = -1;
    if (!test_call_arg(c->call, "non_streaming_mode", arg, sizeof arg)) spec.non_streaming = !strcmp(arg, "True");
    if (strstr(c->call, "generate_voice_clone")) {
        int xvec = !test_call_arg(c->call, "x_vector_only_mode", arg, sizeof arg) && !strcmp(arg, "True");
        spec.mode = xvec ? QTTS_MODE_CLONE_XVEC : QTTS_MODE_CLONE_ICL;
        spec.xvector = spk.f;
        if (!xvec) {
            spec.ref_ids = ref_ids.i;
            spec.n_ref_ids = ref_ids.numel;
            spec.ref_codes = ref_codes.i;
            spec.n_ref_frames = ref_codes.numel / m->cfg.num_code_groups;
        }
    } else {
        spec.mode = strstr(c->call, "generate_custom_voice") ? QTTS_MODE_CUSTOM_VOICE : QTTS_MODE_VOICE_DESIGN;
    }
    TEST_CHECK(!test_call_arg(c->call, "max_new_tokens", arg, sizeof arg), "%s: no max_new_tokens", c->prefix);
    s->max_frames = atoll(arg) - 1;
    int rc = qtts_prompt_build(m, pool, &spec, &s->pr, &err);
    TEST_CHECK(rc == 0, "%s: prompt: %s", c->prefix, err.msg);
    s->ok = rc == 0 && s->toks.i && s->codes.i;
    npy_free(&ids), npy_free(&instr), npy_free(&ref_ids), npy_free(&ref_codes), npy_free(&spk);
    return s->ok ? 0 : -1;
}

/* Runs n cases together on the device (stream i in slot i), greedy, with the
 * engine's stopping rules (EOS, max_frames), and compares each with its reference. */
static void run_batch(qtts_gpu *g, const qtts_talker_model *m, stream_case *sc, int n, const char *what) {
    const int64_t G = m->cfg.num_code_groups, D = m->cfg.talker.hidden, eos = m->cfg.codec_eos;
    int64_t max_pos = 0;
    for (int i = 0; i < n; i++)
        if (sc[i].pr.n_rows + sc[i].max_frames + 1 > max_pos) max_pos = sc[i].pr.n_rows + sc[i].max_frames + 1;
    qtts_err err = {0};
    qtts_gpu_lm *d = qtts_gpu_lm_new(g, m, n, max_pos, &err);
    TEST_CHECK(d != NULL, "%s: device LM: %s", what, err.msg);
    if (!d) return;
    int32_t *toks[MAX_CASES], *codes[MAX_CASES], pending[MAX_CASES];
    int64_t n_toks[MAX_CASES] = {0}, n_frames[MAX_CASES] = {0};
    int live[MAX_CASES], slots[MAX_CASES];
    for (int i = 0; i < n; i++) {
        toks[i] = calloc((size_t)(sc[i].max_frames + 2), sizeof(int32_t));
        codes[i] = calloc((size_t)((sc[i].max_frames + 1) * G), sizeof(int32_t));
        TEST_CHECK(toks[i] && codes[i], "out of memory");
        qtts_gen_params gp;
        qtts_gen_params_greedy(&gp, &m->gen, sc[i].max_frames);
        const qtts_gpu_sample_settings ss = {gp.talker, gp.cp, gp.repetition_penalty, gp.min_new_tokens, eos,
                                             gp.seed, gp.stream};
        int rc = qtts_gpu_lm_prefill(d, i, sc[i].pr.rows, sc[i].pr.n_rows, &ss, &pending[i], &err);
        TEST_CHECK(rc == 0, "%s: prefill %s: %s", what, sc[i].c->prefix, err.msg);
        toks[i][n_toks[i]++] = pending[i];
        live[i] = !rc && pending[i] != eos && sc[i].max_frames > 0;
    }
    int32_t *fr = malloc(sizeof(int32_t) * (size_t)(n * G)), next[MAX_CASES];
    const float *text[MAX_CASES];
    for (;;) {
        int B = 0;
        for (int i = 0; i < n; i++)
            if (live[i]) {
                const qtts_prompt *pr = &sc[i].pr;
                int64_t fi = n_frames[i];
                text[B] = fi < pr->n_trailing ? pr->trailing + fi * D : pr->pad;
                slots[B++] = i;
            }
        if (!B) break;
        int rc = qtts_gpu_lm_frame(d, B, slots, text, fr, next, NULL, &err);
        TEST_CHECK(rc == 0, "%s: frame: %s", what, err.msg);
        if (rc) break;
        for (int b = 0; b < B; b++) {
            int i = slots[b];
            TEST_CHECK(fr[b * G] == pending[i], "%s: frame code 0 %d is not the pending token %d", what, fr[b * G],
                       pending[i]);
            memcpy(codes[i] + n_frames[i] * G, fr + b * G, sizeof(int32_t) * (size_t)G);
            /* the code ring holds the frame for the decoder, and the next codebook-0 token in the next row */
            const int32_t *ring = qtts_gpu_buf_data(qtts_gpu_lm_code_ring(d));
            const int64_t R = QTTS_GPU_CODE_RING_ROWS, row = ((int64_t)i * R + (n_frames[i] & (R - 1))) * G,
                          next_row = ((int64_t)i * R + ((n_frames[i] + 1) & (R - 1))) * G;
            TEST_CHECK(!memcmp(ring + row, fr + b * G, sizeof(int32_t) * (size_t)G) && ring[next_row] == next[b],
                       "%s: frame %lld of %s is not in its code ring row", what, (long long)n_frames[i],
                       sc[i].c->prefix);
            n_frames[i]++;
            /* as the engine: at max_frames the step after the last frame is not kept */
            if (n_frames[i] >= sc[i].max_frames) {
                live[i] = 0;
                continue;
            }
            pending[i] = next[b];
            toks[i][n_toks[i]++] = next[b];
            if (next[b] == eos) live[i] = 0;
        }
    }
    for (int i = 0; i < n; i++) {
        char label[400];
        snprintf(label, sizeof label, "%s %s: talker tokens", what, sc[i].c->prefix);
        TEST_CHECK(n_toks[i] == sc[i].toks.numel || n_toks[i] + 1 == sc[i].toks.numel,
                   "%s: %lld tokens, reference %lld", label, (long long)n_toks[i], (long long)sc[i].toks.numel);
        TEST_EQUAL_I32(toks[i], sc[i].toks.i, (size_t)(n_toks[i] < sc[i].toks.numel ? n_toks[i] : sc[i].toks.numel),
                       label);
        snprintf(label, sizeof label, "%s %s: codes [frames x %lld]", what, sc[i].c->prefix, (long long)G);
        TEST_CHECK(n_frames[i] * G == sc[i].codes.numel, "%s: %lld frames, reference %lld", label,
                   (long long)n_frames[i], (long long)(sc[i].codes.numel / G));
        if (n_frames[i] * G == sc[i].codes.numel)
            TEST_EQUAL_I32(codes[i], sc[i].codes.i, (size_t)sc[i].codes.numel, label);
        printf("  %s %s: %lld frames, %lld talker tokens\n", what, sc[i].c->prefix, (long long)n_frames[i],
               (long long)n_toks[i]);
        free(toks[i]);
        free(codes[i]);
    }
    free(fr);
    qtts_gpu_lm_free(d);
}

/* A request on its own copy of a prompt (a request takes its prompt's buffers). */
static qtts_gen_request *request_on_copy(const qtts_talker_model *m, const qtts_prompt *pr, const qtts_gen_params *gp,
                                         qtts_err *err) {
    qtts_prompt copy = *pr;
    size_t rows = (size_t)(pr->n_rows * pr->dim), trail = (size_t)(pr->n_trailing * pr->dim);
    copy.rows = malloc(rows * sizeof(float));
    copy.trailing = malloc((trail ? trail : 1) * sizeof(float));
    copy.pad = malloc((size_t)pr->dim * sizeof(float));
    qtts_gen_request *r = NULL;
    if (copy.rows && copy.trailing && copy.pad) {
        memcpy(copy.rows, pr->rows, rows * sizeof(float));
        memcpy(copy.trailing, pr->trailing, trail * sizeof(float));
        memcpy(copy.pad, pr->pad, (size_t)pr->dim * sizeof(float));
        r = qtts_gen_request_from_prompt(m, &copy, gp, err);
    }
    qtts_prompt_free(&copy);
    return r;
}

/* The same cases through the generation loop (model/generate.h) with the
 * device attached to the batch, as the engine runs them: every greedy case on
 * the device, plus N_SAMPLED seeded sampled requests (the model's sampling
 * settings) on the device beside them, each of which must give the codes the
 * CPU loop gives it alone. */
enum { N_SAMPLED = 2 };
static void run_generate(qtts_gpu *g, const qtts_talker_model *m, qtts_pool *pool, stream_case *sc, int n) {
    const int64_t G = m->cfg.num_code_groups;
    qtts_err err = {0};
    int64_t max_pos = 0;
    for (int i = 0; i < n; i++)
        if (sc[i].pr.n_rows + sc[i].max_frames + 1 > max_pos) max_pos = sc[i].pr.n_rows + sc[i].max_frames + 1;
    const int total = n + N_SAMPLED;
    qtts_gpu_lm *d = qtts_gpu_lm_new(g, m, total, max_pos, &err);
    qtts_batch *b = qtts_batch_new(m, &err);
    TEST_CHECK(d && b, "generate: %s", err.msg);
    qtts_gen_request *r[MAX_CASES + N_SAMPLED] = {0};
    qtts_gen_params sampled[N_SAMPLED];
    const stream_case *sampled_case[N_SAMPLED];
    for (int k = 0; k < N_SAMPLED; k++) {
        sampled_case[k] = &sc[k % n];
        qtts_gen_params_from_config(&sampled[k], &m->gen);
        sampled[k].max_frames = sampled_case[k]->max_frames;
        sampled[k].seed = 1234 + 4321 * (uint64_t)k;
        sampled[k].stream = (uint64_t)k;
        TEST_CHECK(sampled[k].talker.do_sample && sampled[k].cp.do_sample, "the model's defaults do not sample");
    }
    if (!d || !b) goto out;
    qtts_batch_set_device(b, d, total, max_pos);
    for (int i = 0; i < total; i++) {
        qtts_gen_params gp;
        if (i < n) qtts_gen_params_greedy(&gp, &m->gen, sc[i].max_frames);
        r[i] = request_on_copy(m, i < n ? &sc[i].pr : &sampled_case[i - n]->pr, i < n ? &gp : &sampled[i - n], &err);
        TEST_CHECK(r[i] && !qtts_batch_add(b, r[i], &err), "request %d: %s", i, err.msg);
    }
    int left, steps = 0;
    while ((left = qtts_batch_step(b, pool, &err)) > 0) {
        steps++;
        if (steps == 1) TEST_CHECK(qtts_batch_device_streams(b) == total, "%d of %d requests on the device",
                                   qtts_batch_device_streams(b), total);
    }
    TEST_CHECK(left == 0, "batch: %s", err.msg);
    for (int i = 0; i < n; i++) {
        char label[400];
        snprintf(label, sizeof label, "generate loop, device batch %s: codes", sc[i].c->prefix);
        TEST_CHECK(qtts_gen_request_on_device(r[i]), "%s: not on the device", label);
        TEST_CHECK(qtts_gen_request_host_kv_bytes(r[i]) == 0, "%s: %zu bytes of host KV cache on the device", label,
                   qtts_gen_request_host_kv_bytes(r[i]));
        int64_t nf = qtts_gen_request_n_frames(r[i]);
        TEST_CHECK(nf * G == sc[i].codes.numel, "%s: %lld frames, reference %lld", label, (long long)nf,
                   (long long)(sc[i].codes.numel / G));
        if (nf * G == sc[i].codes.numel)
            TEST_EQUAL_I32(qtts_gen_request_codes(r[i]), sc[i].codes.i, (size_t)(nf * G), label);
    }
    /* the sampled ones: on the device, the codes the CPU loop gives each alone */
    for (int k = 0; k < N_SAMPLED; k++) {
        qtts_gen_request *dev = r[n + k];
        char label[400];
        snprintf(label, sizeof label, "sampled %s seed %llu on the device = on the CPU alone",
                 sampled_case[k]->c->prefix, (unsigned long long)sampled[k].seed);
        TEST_CHECK(qtts_gen_request_on_device(dev), "%s: not on the device", label);
        qtts_gen_request *solo = request_on_copy(m, &sampled_case[k]->pr, &sampled[k], &err);
        TEST_CHECK(solo && !qtts_generate(m, pool, solo, &err), "%s: %s", label, err.msg);
        TEST_CHECK(qtts_gen_request_host_kv_bytes(dev) == 0 && solo && qtts_gen_request_host_kv_bytes(solo) > 0,
                   "%s: host KV caches of %zu bytes on the device, %zu on the CPU", label,
                   qtts_gen_request_host_kv_bytes(dev), solo ? qtts_gen_request_host_kv_bytes(solo) : 0);
        int64_t nf = solo ? qtts_gen_request_n_frames(solo) : -1, nd = qtts_gen_request_n_frames(dev);
        TEST_CHECK(solo && nf == nd && qtts_gen_request_stop_reason(solo) == qtts_gen_request_stop_reason(dev),
                   "%s: %lld frames on the device, %lld on the CPU", label, (long long)nd, (long long)nf);
        if (nf == nd && nf > 0) {
            TEST_EQUAL_I32(qtts_gen_request_codes(dev), qtts_gen_request_codes(solo), (size_t)(nf * G), label);
            printf("  ok   %s: %lld frames\n", label, (long long)nf);
        }
        qtts_gen_request_free(solo);
    }
out:
    for (int i = 0; i < total; i++) qtts_gen_request_free(r[i]);
    qtts_batch_free(b);
    qtts_gpu_lm_free(d);
}

/* One stream past 2048 positions: a prompt of LONG_PROMPT rows (the case's
 * rows repeated) and LONG_FRAMES frames (EOS masked until then). Its device
 * stream starts with a 64-position cache; the batch makes it the prompt plus
 * 256 frames at the prefill (qtts_gpu_lm_reserve, rope table grown) and the
 * device LM doubles it, contents kept, when the frames reach its end. Its
 * codes must be the CPU loop's. */
enum { LONG_PROMPT = 1800, LONG_FRAMES = 270 };
static void run_long(qtts_gpu *g, const qtts_talker_model *m, qtts_pool *pool, const stream_case *sc) {
    const int64_t G = m->cfg.num_code_groups, D = sc->pr.dim;
    qtts_err err = {0};
    qtts_gen_params gp;
    qtts_gen_params_greedy(&gp, &m->gen, LONG_FRAMES);
    gp.min_new_tokens = gp.max_frames + 1; /* no EOS before max_frames */
    gp.guard_max_frames = 0;
    gp.guard_repetition = 0;
    qtts_prompt pr = sc->pr;
    float *rows = malloc((size_t)(LONG_PROMPT * D) * sizeof(float));
    TEST_CHECK(rows != NULL, "out of memory");
    if (!rows) return;
    for (int64_t i = 0; i < LONG_PROMPT; i++)
        memcpy(rows + i * D, sc->pr.rows + (i % sc->pr.n_rows) * D, (size_t)D * sizeof(float));
    pr.rows = rows;
    pr.n_rows = LONG_PROMPT;
    qtts_gpu_lm *d = qtts_gpu_lm_new(g, m, 1, 64, &err);
    qtts_batch *b = qtts_batch_new(m, &err);
    qtts_gen_request *dev = request_on_copy(m, &pr, &gp, &err), *cpu = request_on_copy(m, &pr, &gp, &err);
    free(rows);
    TEST_CHECK(d && b && dev && cpu, "long stream: %s", err.msg);
    if (d && b && dev && cpu) {
        qtts_batch_set_device(b, d, 1, 1 << 15);
        TEST_CHECK(!qtts_batch_add(b, dev, &err), "long stream: %s", err.msg);
        int left;
        while ((left = qtts_batch_step(b, pool, &err)) > 0) {
        }
        TEST_CHECK(left == 0, "long stream on the device: %s", err.msg);
        TEST_CHECK(qtts_gen_request_on_device(dev), "the long stream did not run on the device");
        TEST_CHECK(!qtts_generate(m, pool, cpu, &err), "long stream on the CPU: %s", err.msg);
        const int64_t nd = qtts_gen_request_n_frames(dev), nc = qtts_gen_request_n_frames(cpu);
        TEST_CHECK(nd == gp.max_frames && nc == nd, "long stream: %lld frames on the device, %lld on the CPU, want %lld",
                   (long long)nd, (long long)nc, (long long)gp.max_frames);
        char label[128];
        snprintf(label, sizeof label, "%d positions (%lld frames) on the device = on the CPU",
                 LONG_PROMPT + (int)nd, (long long)nd);
        if (nd == nc && nd > 0)
            TEST_EQUAL_I32(qtts_gen_request_codes(dev), qtts_gen_request_codes(cpu), (size_t)(nd * G), label);
    }
    qtts_gen_request_free(dev);
    qtts_gen_request_free(cpu);
    qtts_batch_free(b);
    qtts_gpu_lm_free(d);
}

static void run_model(qtts_gpu *g, qtts_pool *pool, const char *model, gcase *cases, int n_cases) {
    stream_case sc[MAX_CASES];
    int n = 0;
    char dir[1024];
    qtts_err err = {0};
    golden_path(dir, sizeof dir, model);
    qtts_talker_model *m = qtts_talker_model_load(dir, NULL, &err);
    TEST_CHECK(m != NULL, "load %s: %s", model, err.msg);
    if (!m) return;
    printf("%s\n", model);
    for (int i = 0; i < n_cases; i++) {
        if (strcmp(model_of(cases[i].call), model)) continue;
        memset(&sc[n], 0, sizeof sc[n]);
        sc[n].c = &cases[i];
        if (!prepare(&sc[n], m, pool)) n++;
    }
    for (int i = 0; i < n; i++) run_batch(g, m, &sc[i], 1, "alone");
    if (n > 1) run_batch(g, m, sc, n, "batched");
    if (n > 0) run_generate(g, m, pool, sc, n);
    if (n > 0 && strstr(model, "VoiceDesign")) run_long(g, m, pool, &sc[0]);
    for (int i = 0; i < n; i++) {
        qtts_prompt_free(&sc[i].pr);
        npy_free(&sc[i].toks);
        npy_free(&sc[i].codes);
    }
    qtts_talker_model_free(m);
}

int main(void) {
    int skip;
    qtts_gpu *g = test_gpu_open(&skip);
    if (!g) return skip;
    qtts_err err = {0};
    qtts_pool *pool = qtts_pool_create(1, &err);
    char path[1024];
    cJSON *man = json_load_file(golden_path(path, sizeof path, "manifest.json"), &err);
    TEST_CHECK(man != NULL && pool != NULL, "manifest/pool: %s", err.msg);
    if (!man || !pool) return test_finish("test_gpu_golden");
    static gcase cases[MAX_CASES];
    int n_cases = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(man, "entries")) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(e, "file"),
                    *pb = cJSON_GetObjectItemCaseSensitive(e, "produced_by");
        if (!cJSON_IsString(f) || !cJSON_IsString(pb)) continue;
        const char *file = f->valuestring, *base = strrchr(file, '/');
        base = base ? base + 1 : file;
        size_t bl = strlen(base), sl = strlen("_input_ids.npy");
        if (strncmp(base, "tk_", 3) || bl <= sl + 3 || strcmp(base + bl - sl, "_input_ids.npy")) continue;
        const char *fx = strstr(file, "fixtures/");
        char sub[64] = "";
        if (fx && base > fx + 9) snprintf(sub, sizeof sub, "%.*s", (int)(base - (fx + 9)), fx + 9);
        TEST_CHECK(n_cases < MAX_CASES, "more than %d talker cases", MAX_CASES);
        if (n_cases == MAX_CASES) break;
        snprintf(cases[n_cases].prefix, sizeof cases[n_cases].prefix, "%stk_%.*s", sub, (int)(bl - sl - 3), base + 3);
        snprintf(cases[n_cases].call, sizeof cases[n_cases].call, "%s", pb->valuestring);
        n_cases++;
    }
    TEST_CHECK(n_cases >= 11, "only %d talker cases found in the manifest", n_cases);
    const char *models[] = {"Qwen3-TTS-12Hz-0.6B-Base-tiny", "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny",
                            "Qwen3-TTS-12Hz-1.7B-VoiceDesign-tiny"};
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) run_model(g, pool, models[i], cases, n_cases);
    TEST_CHECK(qtts_gpu_validation_errors(g) == 0, "%d validation-layer errors", qtts_gpu_validation_errors(g));
    cJSON_Delete(man);
    qtts_pool_free(pool);
    qtts_gpu_close(g);
    return test_finish("test_gpu_golden");
}
