/* LoRA adapters through the engine (qtts_engine_params.lora, --lora): an
 * adapter written here from known matrices (PEFT's names, r 2, alpha 4) for
 * two talker weights of the golden CustomVoice checkpoint. The reference is
 * a copy of the checkpoint whose model.safetensors holds W + scale *
 * alpha / r * B A computed here (sums in double, in PEFT's order): loading
 * the original with the adapter at scale 1.5 gives the same audio as that
 * copy, bit for bit, through the library and through `qtts say --lora`; the
 * adapter at scale 0 gives exactly the audio without it, and at 1.5 audio
 * that differs. A shape that does not fit, a target the model lacks, a
 * scale that is not a number and a missing folder each fail the load with
 * one line naming the problem. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "io/store.h"
#include "qtts.h"
#include "support/lora_adapter.h"
#include "support/test_util.h"

static const char *const model_name = "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny";
static const double SCALE = 1.5;

/* dst: the golden checkpoint with model.safetensors replaced by its tensors
 * where each target is W + SCALE * LORA_TEST_ALPHA / LORA_TEST_RANK * B A. */
static int write_merged_copy(const char *dst, float *const *a, float *const *b) {
    char src[1024], f[2048], l[2048];
    golden_path(src, sizeof src, model_name);
    if (mkdir(dst, 0700) != 0) return -1;
    static const char *const files[] = {"config.json", "speech_tokenizer",      "vocab.json",
                                        "merges.txt",  "tokenizer_config.json", "generation_config.json"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(f, sizeof f, "%s/%s", src, files[i]);
        snprintf(l, sizeof l, "%s/%s", dst, files[i]);
        if (symlink(f, l) != 0) return -1;
    }
    qtts_err err = {0};
    snprintf(f, sizeof f, "%s/model.safetensors", src);
    qtts_store *st = qtts_store_open_safetensors(f, &err);
    if (!st) return -1;
    const int n = qtts_store_count(st);
    const char **names = calloc((size_t)n, sizeof *names);
    const float **data = calloc((size_t)n, sizeof *data);
    int *nd = calloc((size_t)n, sizeof *nd);
    int64_t(*sh)[4] = calloc((size_t)n, sizeof *sh);
    float *merged[LORA_TEST_N] = {0};
    int rc = names && data && nd && sh ? 0 : -1;
    const double s = SCALE * LORA_TEST_ALPHA / LORA_TEST_RANK;
    for (int i = 0; !rc && i < n; i++) {
        const qtts_tensor *t = qtts_store_at(st, i);
        if (t->type != QTTS_F32) rc = -1;
        names[i] = t->name, nd[i] = t->ndim, data[i] = t->data;
        for (int d = 0; d < t->ndim; d++) sh[i][d] = t->shape[d];
        for (int k = 0; k < LORA_TEST_N; k++) {
            if (strcmp(t->name, lora_test_targets[k].weight)) continue;
            const int64_t rows = lora_test_targets[k].out, cols = lora_test_targets[k].in;
            if (t->ndim != 2 || t->shape[0] != rows || t->shape[1] != cols || !(merged[k] = malloc(t->nbytes))) {
                rc = -1;
                break;
            }
            const float *w = t->data;
            for (int64_t o = 0; o < rows; o++)
                for (int64_t c = 0; c < cols; c++) {
                    double acc = 0;
                    for (int r = 0; r < LORA_TEST_RANK; r++)
                        acc += (double)b[k][o * LORA_TEST_RANK + r] * a[k][r * cols + c];
                    merged[k][o * cols + c] = (float)(w[o * cols + c] + s * acc);
                }
            data[i] = merged[k];
        }
    }
    for (int k = 0; k < LORA_TEST_N; k++)
        if (!merged[k]) rc = -1;
    snprintf(l, sizeof l, "%s/model.safetensors", dst);
    if (!rc) rc = write_safetensors_f32(l, n, names, nd, (const int64_t(*)[4])sh, data);
    for (int k = 0; k < LORA_TEST_N; k++) free(merged[k]);
    free(names), free(data), free(nd), free(sh);
    qtts_store_free(st);
    return rc;
}

/* Greedy audio of a fixed sentence from model (with the adapters lora[0..n)), or status. */
static qtts_status say(const char *model, const char *const *lora, int n_lora, pcm_buf *out, qtts_error *err) {
    qtts_engine_params p;
    qtts_engine_params_default(&p);
    p.model_path = model;
    p.n_threads = 2;
    p.lora = lora;
    p.n_lora = n_lora;
    qtts_engine *e = qtts_engine_create(&p, err);
    if (!e) return err->status;
    qtts_request r;
    qtts_request_default(&r);
    r.text = "She said she would be here by noon.";
    r.speaker = "Ryan";
    r.greedy = 1;
    r.max_frames = 8;
    qtts_status st = qtts_synthesize(e, &r, pcm_collect, out, NULL, err);
    qtts_engine_free(e);
    return st;
}

static double max_diff(const float *a, size_t na, const float *b, size_t nb) {
    if (na != nb || !na) return INFINITY;
    double m = 0;
    for (size_t i = 0; i < na; i++)
        if (fabs((double)a[i] - b[i]) > m) m = fabs((double)a[i] - b[i]);
    return m;
}

static void check_fails(const char *model, const char *spec, const char *needle, const char *what) {
    pcm_buf x = {0};
    qtts_error err = {0};
    const char *l[1] = {spec};
    qtts_status st = say(model, l, 1, &x, &err);
    TEST_CHECK(st != QTTS_OK && strstr(err.message, needle) && !strchr(err.message, '\n'), "%s: status %d, '%s'", what,
               st, err.message);
    printf("  %-28s %s\n", what, err.message);
    free(x.d);
}

int main(void) {
    char tmp[] = "/tmp/qtts_lora_engine_XXXXXX", golden[1024], adapter[600], merged[600], spec[700], cmd[4096];
    if (!mkdtemp(tmp)) return 1;
    golden_path(golden, sizeof golden, model_name);
    float *a[LORA_TEST_N], *b[LORA_TEST_N];
    if (lora_test_matrices(4646, a, b)) return 1;
    snprintf(adapter, sizeof adapter, "%s/adapter", tmp);
    snprintf(merged, sizeof merged, "%s/merged", tmp);
    TEST_CHECK(lora_test_adapter_write(adapter, a, b, 0, NULL) == 0, "write the adapter");
    TEST_CHECK(write_merged_copy(merged, a, b) == 0, "write the merged copy");

    qtts_error err = {0};
    pcm_buf plain = {0}, zero = {0}, adapted = {0}, ref = {0};
    TEST_CHECK(say(golden, NULL, 0, &plain, &err) == QTTS_OK, "no adapter: %s", err.message);
    snprintf(spec, sizeof spec, "%s:0", adapter);
    const char *l0[1] = {spec};
    TEST_CHECK(say(golden, l0, 1, &zero, &err) == QTTS_OK, "scale 0: %s", err.message);
    TEST_CHECK(max_diff(plain.d, plain.n, zero.d, zero.n) == 0, "scale 0 differs from no adapter (%g)",
               max_diff(plain.d, plain.n, zero.d, zero.n));
    printf("  scale 0 == no adapter bit for bit (%zu samples)\n", zero.n);
    snprintf(spec, sizeof spec, "%s:%g", adapter, SCALE);
    const char *l1[1] = {spec};
    TEST_CHECK(say(golden, l1, 1, &adapted, &err) == QTTS_OK, "scale %g: %s", SCALE, err.message);
    TEST_CHECK(say(merged, NULL, 0, &ref, &err) == QTTS_OK, "merged copy: %s", err.message);
    const double d_ref = max_diff(adapted.d, adapted.n, ref.d, ref.n);
    const double d_plain = max_diff(adapted.d, adapted.n, plain.d, plain.n);
    TEST_CHECK(d_ref == 0, "adapter at %g differs from W + s B A written here by %g", SCALE, d_ref);
    TEST_CHECK(d_plain > 1e-3, "the adapter changed nothing (max diff %g)", d_plain);
    printf("  adapter at %g == merged copy bit for bit (%zu samples); the plain model: %zu samples, max diff %.3g\n",
           SCALE, adapted.n, plain.n, adapted.n == plain.n ? d_plain : NAN);

    /* the CLI: say --lora gives the merged copy's audio */
    char wav_a[700], wav_b[700];
    snprintf(wav_a, sizeof wav_a, "%s/a.wav", tmp);
    snprintf(wav_b, sizeof wav_b, "%s/b.wav", tmp);
    snprintf(cmd, sizeof cmd,
             "%s say -q -m %s --lora %s --speaker Ryan --greedy --max-frames 6 -o %s \"Hello there.\" && "
             "%s say -q -m %s --speaker Ryan --greedy --max-frames 6 -o %s \"Hello there.\"",
             QTTS_BINARY, golden, spec, wav_a, QTTS_BINARY, merged, wav_b);
    int st = system(cmd);
    size_t na = 0, nb = 0;
    float *wa = read_wav(wav_a, &na), *wb = read_wav(wav_b, &nb);
    TEST_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && max_diff(wa, na, wb, nb) == 0, "%s: diff %g", cmd,
               max_diff(wa, na, wb, nb));
    printf("  qtts say --lora == the merged copy (%zu samples)\n", na);
    free(wa), free(wb);
    snprintf(cmd, sizeof cmd, "%s say -q -m %s --lora %s/nowhere -o %s x > %s/err.txt 2>&1", QTTS_BINARY, golden, tmp,
             wav_a, tmp);
    st = system(cmd);
    unsigned char *text = NULL;
    size_t n = 0;
    snprintf(wav_b, sizeof wav_b, "%s/err.txt", tmp);
    TEST_CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 0 && read_bytes(wav_b, &text, &n) == 0 && text &&
                   memmem(text, n, "nowhere", 7),
               "say --lora with a missing folder: %.*s", (int)n, text ? (const char *)text : "");
    free(text);

    /* errors */
    char bad[600];
    snprintf(bad, sizeof bad, "%s/bad_shape", tmp);
    TEST_CHECK(lora_test_adapter_write(bad, a, b, 63, NULL) == 0, "write");
    check_fails(golden, bad, "does not fit", "lora_B one row short");
    snprintf(bad, sizeof bad, "%s/bad_target", tmp);
    TEST_CHECK(lora_test_adapter_write(bad, a, b, 0, "base_model.model.model.layers.7.self_attn.q_proj") == 0, "write");
    check_fails(golden, bad, "which the model does not have", "layer the model lacks");
    snprintf(spec, sizeof spec, "%s:loud", adapter);
    check_fails(golden, spec, "PATH:SCALE", "scale not a number");
    snprintf(spec, sizeof spec, "%s/missing", tmp);
    check_fails(golden, spec, "missing", "missing folder");

    free(plain.d), free(zero.d), free(adapted.d), free(ref.d);
    lora_test_matrices_free(a, b);
    TEST_CHECK(rm_rf(tmp) == 0, "cleanup");
    return test_finish("test_lora_engine");
}
