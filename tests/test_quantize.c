/* qtts quantize -> one .gguf -> loaded with -m OUT.gguf: an f32 pack must
 * reproduce the golden output exactly (1e-4); every converted matrix of a
 * q8_0 / q4_k pack must hold its source within the format's error; those
 * packs must run, and their end-to-end fidelity (code agreement, waveform
 * SNR vs f32) is printed. On the tiny random models greedy margins are
 * ~1e-3, so any quantization flips early tokens and the rest diverges: the
 * end-to-end numbers are reported, not asserted. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness.h"
#include "io/model_pack.h"
#include "io/store.h"
#include "qtts.h"
#include "support/npy.h"
#include "support/test_util.h"

static int synth(const char *model, const char *ref_fixture, pcm_buf *out, int32_t **codes, size_t *nf) {
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
    if (ref_fixture) {
        if (npy_load_fixture(ref_fixture, &ref)) return -1;
        v = qtts_voice_from_samples(e, ref.f, (size_t)ref.numel, 24000, "The quick brown fox.", &err);
        TEST_CHECK(v != NULL, "voice: %s", err.message);
        r.text = "Hello world, this is a test.";
        r.voice = v;
        r.max_frames = 12;
    } else {
        r.text = "She said she would be here by noon.";
        r.speaker = "Ryan";
        r.layout = QTTS_LAYOUT_NON_STREAMING;
        r.max_frames = 7;
    }
    r.language = "English";
    r.greedy = 1;
    r.keep_codes = 1;
    qtts_stream *s = qtts_submit(e, &r, &err);
    int rc = -1;
    if (s) {
        float tmp[4096];
        long n;
        while ((n = qtts_stream_read(s, tmp, 4096, -1)) > 0) pcm_collect(out, tmp, (size_t)n);
        if (n == 0) {
            const int32_t *c = qtts_stream_codes(s, nf, NULL);
            *codes = malloc(*nf * 16 * sizeof **codes);
            if (*codes && c) memcpy(*codes, c, *nf * 16 * sizeof **codes);
            rc = 0;
        }
        qtts_stream_free(s);
    }
    TEST_CHECK(rc == 0, "synthesis with %s failed: %s", model, s ? "" : err.message);
    qtts_voice_release(v);
    npy_free(&ref);
    qtts_engine_free(e);
    return rc;
}

/* Every converted matrix of a pack holds its source within the format's error. */
static void check_pack_tensors(const char *src_dir, const char *gguf, qtts_dtype want) {
    qtts_err err = {0};
    qtts_store *src = qtts_store_open(src_dir, &err), *pk = qtts_store_open(gguf, &err);
    TEST_CHECK(src && pk, "open: %s", err.msg);
    int converted = 0, bad = 0;
    for (int i = 0; src && pk && i < qtts_store_count(src); i++) {
        const qtts_tensor *a = qtts_store_at(src, i), *b = qtts_store_find(pk, a->name);
        if (!b) {
            bad++;
            fprintf(stderr, "FAIL pack lacks %s\n", a->name);
            continue;
        }
        qtts_dtype expect = qtts_pack_is_quantizable(a->name, a->ndim) ? qtts_dtype_fit(want, a->shape[1], a->type) : a->type;
        if (b->type != expect) {
            bad++;
            fprintf(stderr, "FAIL %s stored as %s, expected %s\n", a->name, qtts_dtype_name(b->type), qtts_dtype_name(expect));
            continue;
        }
        float *x = qtts_tensor_to_f32(a, &err), *y = qtts_tensor_to_f32(b, &err);
        double num = 0, den = 0;
        for (int64_t k = 0; x && y && k < qtts_tensor_numel(a); k++) {
            num += ((double)x[k] - y[k]) * ((double)x[k] - y[k]);
            den += (double)x[k] * x[k];
        }
        double rel = den > 0 ? sqrt(num / den) : sqrt(num);
        double tol = b->type == QTTS_Q4_K ? 0.08 : b->type == QTTS_Q8_0 ? 0.01 : 0.0;
        if (!x || !y || rel > tol) {
            bad++;
            fprintf(stderr, "FAIL %s: relative RMS error %.4g > %.3g\n", a->name, rel, tol);
        }
        if (b->type != a->type) converted++;
        free(x);
        free(y);
    }
    TEST_CHECK(bad == 0, "%s: %d tensors wrong", gguf, bad);
    printf("  pack %-50s %d matrices converted, all within bounds\n", gguf, converted);
    if (want != QTTS_F32) TEST_CHECK(converted > 0, "%s: nothing was converted", gguf);
    qtts_store_free(src);
    qtts_store_free(pk);
}

static void check_model(const char *model_dir, const char *fixture, const char *ref_fixture, const char *tmp) {
    char src[1024], cmd[4096], gguf[1200];
    golden_path(src, sizeof src, model_dir);
    npy_array want;
    if (npy_load_fixture(fixture, &want)) {
        TEST_CHECK(0, "fixture %s", fixture);
        return;
    }
    pcm_buf ref_out = {0};
    int32_t *ref_codes = NULL;
    size_t ref_nf = 0;
    const char *types[] = {"f32", "q8_0", "q4_k"};
    for (int t = 0; t < 3; t++) {
        snprintf(gguf, sizeof gguf, "%s/%s_%s.gguf", tmp, model_dir, types[t]);
        snprintf(cmd, sizeof cmd, "%s quantize %s -o %s --type %s", QTTS_BINARY, src, gguf, types[t]);
        int st = system(cmd);
        TEST_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", cmd);
        check_pack_tensors(src, gguf, qtts_dtype_from_name(types[t]));
        pcm_buf out = {0};
        int32_t *codes = NULL;
        size_t nf = 0;
        if (synth(gguf, ref_fixture, &out, &codes, &nf) == 0) {
            char what[256];
            snprintf(what, sizeof what, "%s %s.gguf vs golden", model_dir, types[t]);
            if (t == 0) {
                TEST_CHECK(out.n == (size_t)want.numel, "%s: %zu samples, want %lld", what, out.n, (long long)want.numel);
                if (out.n == (size_t)want.numel) TEST_NEAR(out.d, want.f, out.n, 1e-4, what);
                ref_out = out;
                ref_codes = codes;
                ref_nf = nf;
                continue;
            }
            size_t same = 0, total = (nf < ref_nf ? nf : ref_nf) * 16;
            for (size_t i = 0; i < total; i++) same += codes[i] == ref_codes[i];
            double sig = 0, noise = 0;
            size_t m = out.n < ref_out.n ? out.n : ref_out.n;
            int finite = 1;
            for (size_t i = 0; i < m; i++) {
                sig += (double)ref_out.d[i] * ref_out.d[i];
                noise += ((double)out.d[i] - ref_out.d[i]) * ((double)out.d[i] - ref_out.d[i]);
                if (!isfinite(out.d[i])) finite = 0;
            }
            printf("  fidelity %-40s codes %zu/%zu (%.1f%%) equal to f32, waveform SNR %.1f dB\n", what, same, total,
                   total ? 100.0 * same / total : 0.0, noise > 0 ? 10 * log10(sig / noise) : INFINITY);
            TEST_CHECK(finite && out.n > 0, "%s: output not finite or empty", what);
            free(out.d);
            free(codes);
        }
    }
    free(ref_out.d);
    free(ref_codes);
    npy_free(&want);
}

int main(void) {
    char tmp[] = "/tmp/qtts_quant_XXXXXX";
    if (!mkdtemp(tmp)) return 1;
    check_model("Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny", "cv/tk_cv_en_wav", NULL, tmp);
    check_model("Qwen3-TTS-12Hz-0.6B-Base-tiny", "tk_icl_en_short_ref_wav", "tk_icl_en_short_ref_ref_wav", tmp);

    /* not a qtts pack: a clear error */
    char p[600];
    qtts_error err = {0};
    snprintf(p, sizeof p, "%s/bad.gguf", tmp);
    FILE *f = fopen(p, "wb");
    if (f) {
        fputs("GGUF-not-really", f);
        fclose(f);
    }
    qtts_engine_params ep;
    qtts_engine_params_default(&ep);
    ep.model_path = p;
    ep.n_threads = 1;
    qtts_engine *e = qtts_engine_create(&ep, &err);
    TEST_CHECK(e == NULL && strstr(err.message, "bad.gguf") && err.status == QTTS_ERR_MODEL, "corrupt gguf: %s", err.message);
    qtts_engine_free(e);
    TEST_CHECK(rm_rf(tmp) == 0, "cleanup");
    return test_finish("test_quantize");
}
