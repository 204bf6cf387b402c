/* Other projects' model files (io/layout.h): copies of the golden tiny
 * checkpoints written in each layout by tests/layouts/make_layout.py (the
 * converters' name mappings, metadata and transforms), loaded by the engine:
 *   - f32 files (qwentts.cpp, CrispASR, Transformers-native) give the golden
 *     waveforms within 1e-4, as the official folders do;
 *   - qwentts.cpp files of storage-only types (Q4_0, Q5_K, Q6_K) are
 *     dequantized within each format's error of the f32 weights and run;
 *   - llama.cpp's Base pair gives the official folder's audio within 1e-4 when that folder runs with the
 *     decoder attention llama.cpp assumes (its files do not carry it);
 *   - `qtts quantize` turns a foreign layout into a qtts .gguf that gives the
 *     same audio;
 *   - a file whose layout is unknown, and one whose metadata claims a layout
 *     its tensors do not have, fail with one line saying what was expected.
 * The files the real qwentts.cpp and CrispASR converters wrote from the golden checkpoints (rebuilt from
 * tests/layouts/converted/ and checked against their SHA-256) give the same results.
 * CrispASR's tokenizer file does not carry the encoder's attention heads
 * (MimiConfig's 8 are assumed, the tiny encoder has 4), so its Base case
 * clones from the x-vector alone. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "io/layout.h"
#include "io/store.h"
#include "qtts.h"
#include "support/npy.h"
#include "support/test_util.h"

typedef enum { CASE_CV, CASE_ICL, CASE_XVEC } synth_case;

static const struct {
    const char *model, *wav, *ref;
} cases[] = {
    [CASE_CV] = {"Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny", "cv/tk_cv_en_wav", NULL},
    [CASE_ICL] = {"Qwen3-TTS-12Hz-0.6B-Base-tiny", "tk_icl_en_short_ref_wav", "tk_icl_en_short_ref_ref_wav"},
    [CASE_XVEC] = {"Qwen3-TTS-12Hz-0.6B-Base-tiny", "tk_xvec_en_wav", "tk_xvec_en_ref_wav"},
};

static int synth(const char *model, synth_case c, pcm_buf *out) {
    qtts_error err = {0};
    qtts_engine_params p;
    qtts_engine_params_default(&p);
    p.model_path = model;
    p.n_threads = 2;
    qtts_engine *e = qtts_engine_create(&p, &err);
    TEST_CHECK(e != NULL, "load %s: %s", model, err.message);
    if (!e) return -1;
    qtts_request r;
    qtts_request_default(&r);
    npy_array ref = {0};
    qtts_voice *v = NULL;
    r.language = "English";
    r.greedy = 1;
    if (c == CASE_CV) {
        r.text = "She said she would be here by noon.";
        r.speaker = "Ryan";
        r.layout = QTTS_LAYOUT_NON_STREAMING;
        r.max_frames = 7;
    } else {
        if (npy_load_fixture(cases[c].ref, &ref)) return -1;
        v = qtts_voice_from_samples(e, ref.f, (size_t)ref.numel, 24000, c == CASE_ICL ? "The quick brown fox." : NULL,
                                    &err);
        TEST_CHECK(v != NULL, "voice: %s", err.message);
        r.text = "Hello world, this is a test.";
        r.voice = v;
        r.max_frames = 12;
        r.x_vector_only = c == CASE_XVEC;
    }
    qtts_status st = qtts_synthesize(e, &r, pcm_collect, out, NULL, &err);
    TEST_CHECK(st == QTTS_OK, "synthesis with %s: %s", model, err.message);
    qtts_voice_release(v);
    npy_free(&ref);
    qtts_engine_free(e);
    return st == QTTS_OK ? 0 : -1;
}

static void check_golden(const char *model, synth_case c, const char *what) {
    npy_array want;
    if (npy_load_fixture(cases[c].wav, &want)) {
        TEST_CHECK(0, "fixture %s", cases[c].wav);
        return;
    }
    pcm_buf out = {0};
    if (synth(model, c, &out) == 0) {
        TEST_CHECK(out.n == (size_t)want.numel, "%s: %zu samples, want %lld", what, out.n, (long long)want.numel);
        if (out.n == (size_t)want.numel) TEST_NEAR(out.d, want.f, out.n, 1e-4, what);
        printf("  %-60s golden within 1e-4\n", what);
    }
    free(out.d);
    npy_free(&want);
}

/* The same request on two model paths gives the same audio within 1e-4. */
static void check_same(const char *model, const char *ref, synth_case c, const char *what) {
    pcm_buf a = {0}, b = {0};
    if (synth(model, c, &a) == 0 && synth(ref, c, &b) == 0) {
        TEST_CHECK(a.n == b.n && a.n > 0, "%s: %zu samples, reference %zu", what, a.n, b.n);
        if (a.n == b.n) TEST_NEAR(a.d, b.d, a.n, 1e-4, what);
        double worst = 0;
        for (size_t i = 0; a.n == b.n && i < a.n; i++)
            if (fabs((double)a.d[i] - b.d[i]) > worst) worst = fabs((double)a.d[i] - b.d[i]);
        printf("  %-60s reference within 1e-4 (max %.3g, %zu samples)\n", what, worst, a.n);
    }
    free(a.d);
    free(b.d);
}

static int make(const char *layout, const char *model, const char *out, const char *type) {
    char src[1024], cmd[4096];
    golden_path(src, sizeof src, model);
    /* the system's python3 (scripts/deps.sh installs its numpy), ahead of any other on PATH */
    const char *py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
    snprintf(cmd, sizeof cmd, "%s %s/tests/layouts/make_layout.py %s %s %s --type %s", py, QTTS_SOURCE_DIR, layout, src,
             out, type);
    int st = system(cmd);
    TEST_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s (needs python3 with numpy: scripts/deps.sh)", cmd);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* Block types on rows of 512 (the tiny checkpoints have no row of 256 for the K-quants): each dequantizes
 * to its f32 source within the format's error. */
static void check_blocks(const char *tmp) {
    char d[700], f[800];
    snprintf(d, sizeof d, "%s/blocks", tmp);
    if (make("blocks", cases[CASE_CV].model, d, "f32")) return;
    snprintf(f, sizeof f, "%s/blocks.gguf", d);
    qtts_err err = {0};
    qtts_store *st = qtts_store_open(f, &err);
    TEST_CHECK(st != NULL, "%s", err.msg);
    static const struct {
        const char *name;
        qtts_dtype type;
        double tol;
    } b[] = {{"q4_0", QTTS_Q4_0, 0.15}, {"q5_k", QTTS_Q5_K, 0.06}, {"q6_k", QTTS_Q6_K, 0.03}, {"q8_0", QTTS_Q8_0, 0.01}};
    for (size_t i = 0; st && i < sizeof b / sizeof *b; i++) {
        char src[32];
        snprintf(src, sizeof src, "%s.src", b[i].name);
        const qtts_tensor *q = qtts_store_find(st, b[i].name), *a = qtts_store_find(st, src);
        TEST_CHECK(q && a && q->type == b[i].type, "%s: missing or of type %s", b[i].name, q ? qtts_dtype_name(q->type) : "-");
        if (!q || !a) continue;
        float *x = qtts_tensor_to_f32(a, &err), *y = qtts_tensor_to_f32(q, &err);
        double num = 0, den = 0;
        for (int64_t k = 0; x && y && k < qtts_tensor_numel(a); k++) {
            num += ((double)x[k] - y[k]) * ((double)x[k] - y[k]);
            den += (double)x[k] * x[k];
        }
        double rel = den > 0 ? sqrt(num / den) : 1;
        TEST_CHECK(x && y && rel <= b[i].tol, "%s: relative RMS error %.4g > %.3g", b[i].name, rel, b[i].tol);
        printf("  %-60s relative RMS error %.4f (bound %.2f)\n", b[i].name, rel, b[i].tol);
        free(x);
        free(y);
    }
    qtts_store_free(st);
}

/* Every matrix of a storage-only type, dequantized, holds the official f32 tensor within the format's error. */
static void check_dequant(const char *dir, const char *model, double tol, const char *type) {
    char src[1024];
    golden_path(src, sizeof src, model);
    qtts_err err = {0};
    qtts_model_files m;
    qtts_store *ref = qtts_store_open(src, &err);
    TEST_CHECK(ref && qtts_model_files_open(&m, dir, 0, &err) == 0, "open %s: %s", dir, err.msg);
    if (!ref || !m.model_store) {
        qtts_store_free(ref);
        return;
    }
    int checked = 0, bad = 0;
    double worst = 0;
    for (int i = 0; i < qtts_store_count(m.model_store); i++) {
        const qtts_tensor *b = qtts_store_at(m.model_store, i), *a = qtts_store_find(ref, b->name);
        if (!a || qtts_dtype_runs(b->type)) continue;
        float *x = qtts_tensor_to_f32(a, &err), *y = qtts_tensor_to_f32(b, &err);
        double num = 0, den = 0;
        for (int64_t k = 0; x && y && k < qtts_tensor_numel(a); k++) {
            num += ((double)x[k] - y[k]) * ((double)x[k] - y[k]);
            den += (double)x[k] * x[k];
        }
        double rel = den > 0 ? sqrt(num / den) : 0;
        if (rel > worst) worst = rel;
        if (!x || !y || rel > tol) {
            bad++;
            fprintf(stderr, "FAIL %s (%s): relative RMS error %.4g > %.3g\n", b->name, qtts_dtype_name(b->type), rel, tol);
        }
        checked++;
        free(x);
        free(y);
    }
    TEST_CHECK(bad == 0 && checked > 5, "%s: %d of %d %s matrices off", dir, bad, checked, type);
    printf("  %-60s %d %s matrices dequantized, worst relative RMS error %.4f (bound %.2f)\n", dir, checked, type,
           worst, tol);
    qtts_model_files_close(&m);
    qtts_store_free(ref);
}

/* A quantized layout runs end to end and its audio stays finite; the SNR against f32 is printed (on the
 * tiny random models greedy margins are ~1e-3, so quantization may flip tokens: reported, not asserted). */
static double check_runs(const char *file, synth_case c, const char *what) {
    npy_array want;
    double snr = -INFINITY;
    if (npy_load_fixture(cases[c].wav, &want)) return snr;
    pcm_buf out = {0};
    if (synth(file, c, &out) == 0) {
        double sig = 0, noise = 0;
        int finite = out.n > 0;
        size_t n = out.n < (size_t)want.numel ? out.n : (size_t)want.numel;
        for (size_t i = 0; i < n; i++) {
            sig += (double)want.f[i] * want.f[i];
            noise += ((double)out.d[i] - want.f[i]) * ((double)out.d[i] - want.f[i]);
            if (!isfinite(out.d[i])) finite = 0;
        }
        TEST_CHECK(finite, "%s: audio empty or not finite", what);
        snr = noise > 0 ? 10 * log10(sig / noise) : INFINITY;
        printf("  %-60s runs, waveform SNR vs golden %.1f dB (%zu samples, golden %lld)\n", what, snr, out.n,
               (long long)want.numel);
        if (!finite || out.n != (size_t)want.numel) snr = -INFINITY; /* a bound on it needs the whole waveform */
    }
    free(out.d);
    npy_free(&want);
    return snr;
}

static void check_error(const char *path, const char *needle, const char *what) {
    qtts_err err = {0};
    qtts_model_files m;
    int rc = qtts_model_files_open(&m, path, 0, &err);
    TEST_CHECK(rc != 0 && strstr(err.msg, needle) && !strchr(err.msg, '\n'), "%s: '%s'", what, err.msg);
    if (!rc) qtts_model_files_close(&m);
    printf("  %-60s %s\n", what, err.msg);
}

/* The files the real converters wrote (tests/layouts/converted/README.md), rebuilt byte for byte by
 * assemble_converted.py (it checks each file's SHA-256 against the converter's): f32 give the golden
 * waveforms within 1e-4, CrispASR's F16 (its default type) within 30 dB SNR of them. */
static void check_converted(const char *tmp) {
    static const struct {
        const char *set, *layout;
        synth_case c;
        double min_snr_db; /* 0: golden within 1e-4 */
    } sets[] = {
        {"qwentts-f32-cv", "qwentts.cpp", CASE_CV, 0},     {"qwentts-f32-base", "qwentts.cpp", CASE_ICL, 0},
        {"qwentts-f32-base", "qwentts.cpp", CASE_XVEC, 0}, {"crispasr-f32-cv", "CrispASR", CASE_CV, 0},
        {"crispasr-f32-base", "CrispASR", CASE_XVEC, 0},   {"crispasr-f16-cv", "CrispASR", CASE_CV, 30},
    };
    const char *py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
    for (size_t i = 0; i < sizeof sets / sizeof *sets; i++) {
        char d[700], cmd[2048], what[200];
        snprintf(d, sizeof d, "%s/converted-%s", tmp, sets[i].set);
        struct stat sb;
        if (stat(d, &sb) != 0) {
            snprintf(cmd, sizeof cmd, "QTTS_GOLDEN_DIR='%s' %s %s/tests/layouts/assemble_converted.py %s %s",
                     QTTS_GOLDEN_DIR, py, QTTS_SOURCE_DIR, sets[i].set, d);
            int st = system(cmd);
            TEST_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s (needs python3 with numpy: scripts/deps.sh)", cmd);
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) continue;
        }
        qtts_err err = {0};
        const char *name = qtts_layout_detect(d, &err);
        TEST_CHECK(name && !strcmp(name, sets[i].layout), "%s: detected as %s: %s", d, name ? name : "-", err.msg);
        snprintf(what, sizeof what, "converter's %s, %s", sets[i].set, cases[sets[i].c].wav);
        if (sets[i].min_snr_db == 0) {
            check_golden(d, sets[i].c, what);
            continue;
        }
        double snr = check_runs(d, sets[i].c, what);
        TEST_CHECK(snr >= sets[i].min_snr_db, "%s: SNR %.1f dB < %.0f dB", what, snr, sets[i].min_snr_db);
    }
}

int main(void) {
    char tmp[] = "/tmp/qtts_layouts_XXXXXX", d[700], f[1400];
    if (!mkdtemp(tmp)) return 1;
    static const char *const layouts[] = {"qwentts", "crispasr", "transformers"};
    static const char *const first_file[] = {"qwen-talker-1b7-customvoice.gguf", "qwen3-tts-12hz-1b7-custom_voice.gguf", ""};
    for (int l = 0; l < 3; l++) {
        for (int c = 0; c < 2; c++) {
            snprintf(d, sizeof d, "%s/%s-%d", tmp, layouts[l], c);
            if (make(layouts[l], cases[c == 0 ? CASE_CV : CASE_ICL].model, d, "f32")) continue;
            synth_case sc = c == 0 ? CASE_CV : l == 1 ? CASE_XVEC : CASE_ICL;
            char what[200];
            snprintf(what, sizeof what, "%s f32, %s", layouts[l], cases[sc].wav);
            check_golden(d, sc, what); /* the folder holding the pair */
            if (c == 0 && first_file[l][0]) { /* either file of a pair finds the other */
                snprintf(f, sizeof f, "%s/%s", d, first_file[l]);
                snprintf(what, sizeof what, "%s f32 talker file given, %s", layouts[l], cases[sc].wav);
                check_golden(f, sc, what);
            }
            if (c == 0 && l == 0) { /* qtts quantize converts a foreign layout into a qtts .gguf */
                char cmd[2400];
                snprintf(f, sizeof f, "%s/from-qwentts.gguf", tmp);
                snprintf(cmd, sizeof cmd, "%s quantize %s -o %s --type f32", QTTS_BINARY, d, f);
                int st = system(cmd);
                TEST_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", cmd);
                check_golden(f, CASE_CV, "qwentts -> qtts quantize f32 .gguf");
            }
        }
    }
    /* llama.cpp's pair (Base only: its converter needs a speaker encoder). The files carry no decoder
     * attention settings, so the reference is the official folder with those llama.cpp assumes. */
    {
        char ref[700];
        snprintf(d, sizeof d, "%s/llamacpp", tmp);
        snprintf(ref, sizeof ref, "%s/llamacpp-reference", tmp);
        if (!make("llamacpp", cases[CASE_XVEC].model, d, "f32") &&
            !make("llamacpp-reference", cases[CASE_XVEC].model, ref, "f32")) {
            check_same(d, ref, CASE_XVEC, "llama.cpp f32 pair, tk_xvec_en");
            snprintf(f, sizeof f, "%s/mmproj-Qwen3-TTS-12Hz-0b6-base-F32.gguf", d);
            check_same(f, ref, CASE_XVEC, "llama.cpp f32 mmproj given, tk_xvec_en");
            qtts_err err = {0};
            const char *name = qtts_layout_detect(f, &err);
            TEST_CHECK(name && !strcmp(name, "llama.cpp"), "detected as %s: %s", name ? name : "-", err.msg);
        }
        snprintf(d, sizeof d, "%s/llamacpp-q8_0", tmp);
        if (!make("llamacpp", cases[CASE_XVEC].model, d, "q8_0")) check_runs(d, CASE_XVEC, "llama.cpp q8_0, tk_xvec_en");
    }
    /* storage-only block types as qwentts.cpp's quantizer writes them */
    static const struct {
        const char *type;
        double tol;
    } quant[] = {{"q4_0", 0.15}, {"q8_0", 0.01}};
    check_blocks(tmp);
    for (size_t q = 0; q < sizeof quant / sizeof *quant; q++) {
        snprintf(d, sizeof d, "%s/qwentts-%s", tmp, quant[q].type);
        if (make("qwentts", cases[CASE_CV].model, d, quant[q].type)) continue;
        if (strcmp(quant[q].type, "q8_0")) check_dequant(d, cases[CASE_CV].model, quant[q].tol, quant[q].type);
        char what[200];
        snprintf(what, sizeof what, "qwentts %s, %s", quant[q].type, cases[CASE_CV].wav);
        check_runs(d, CASE_CV, what);
    }
    snprintf(d, sizeof d, "%s/crispasr-f16", tmp);
    if (!make("crispasr", cases[CASE_CV].model, d, "f16")) check_runs(d, CASE_CV, "crispasr f16, cv/tk_cv_en_wav");

    /* unknown and mislabeled files: one line each */
    snprintf(f, sizeof f, "%s/other.gguf", tmp);
    {
        FILE *o = fopen(f, "wb");
        /* a GGUF v3 with general.architecture "llama" and no tensors */
        static const unsigned char hdr[] = {'G', 'G', 'U', 'F', 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0,
                                            0, 0, 20, 0, 0, 0, 0, 0, 0, 0, 'g', 'e', 'n', 'e', 'r', 'a', 'l', '.', 'a',
                                            'r', 'c', 'h', 'i', 't', 'e', 'c', 't', 'u', 'r', 'e', 8, 0, 0, 0, 5, 0, 0,
                                            0, 0, 0, 0, 0, 'l', 'l', 'a', 'm', 'a'};
        if (o) {
            fwrite(hdr, 1, sizeof hdr, o);
            fclose(o);
        }
    }
    check_error(f, "unknown model layout: general.architecture 'llama'", "unknown GGUF layout");
    /* qwentts.cpp files whose architecture says CrispASR's speech tokenizer: metadata and tensors disagree */
    snprintf(d, sizeof d, "%s/mislabeled", tmp);
    if (!make("qwentts --arch qwen3tts_tokenizer", cases[CASE_CV].model, d, "f32")) {
        snprintf(f, sizeof f, "%s/qwen-talker-1b7-customvoice.gguf", d);
        check_error(f, "its metadata says CrispASR", "qwentts talker labelled a CrispASR tokenizer");
    }
    /* qwentts.cpp files whose architecture says llama.cpp's talker */
    snprintf(d, sizeof d, "%s/mislabeled-llamacpp", tmp);
    if (!make("qwentts --arch qwen3tts", cases[CASE_CV].model, d, "f32")) {
        snprintf(f, sizeof f, "%s/qwen-talker-1b7-customvoice.gguf", d);
        check_error(f, "its metadata says llama.cpp", "qwentts talker labelled a llama.cpp talker");
    }
    /* an official checkpoint mislabeled as Transformers-native (its config rewritten): the tensor names decide */
    {
        char src[1024], dst[800], lnk[1200];
        golden_path(src, sizeof src, cases[CASE_CV].model);
        snprintf(dst, sizeof dst, "%s/official-as-hf", tmp);
        TEST_CHECK(mkdir(dst, 0700) == 0, "mkdir %s", dst);
        static const char *const files[] = {"model.safetensors", "speech_tokenizer", "vocab.json", "merges.txt",
                                            "tokenizer_config.json"};
        for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
            snprintf(f, sizeof f, "%s/%s", src, files[i]);
            snprintf(lnk, sizeof lnk, "%s/%s", dst, files[i]);
            TEST_CHECK(symlink(f, lnk) == 0, "symlink %s", lnk);
        }
        snprintf(f, sizeof f, "%s/transformers-0/config.json", tmp);
        snprintf(lnk, sizeof lnk, "%s/config.json", dst);
        TEST_CHECK(symlink(f, lnk) == 0, "symlink %s", lnk);
        qtts_error err = {0};
        qtts_engine_params p;
        qtts_engine_params_default(&p);
        p.model_path = dst;
        p.n_threads = 1;
        qtts_engine *e = qtts_engine_create(&p, &err);
        TEST_CHECK(!e && err.status == QTTS_ERR_MODEL && strstr(err.message, "tts_model_type") &&
                       !strchr(err.message, '\n'),
                   "official tensors with a Transformers config: '%s'", err.message);
        printf("  %-60s %s\n", "official tensors, Transformers-native config.json", err.message);
        qtts_engine_free(e);
    }
    check_converted(tmp);
    TEST_CHECK(rm_rf(tmp) == 0, "cleanup");
    return test_finish("test_layouts");
}
