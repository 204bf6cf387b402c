/* A LoRA adapter on quantized model files, end to end through the CLI: an
 * adapter written here (PEFT's names, r 2, alpha 4) for two talker weights of
 * the golden CustomVoice checkpoint, at scale 1.5, with q8_0 and q4_k (the
 * tiny model's rows hold no whole Q4_K block, so its q4_k files hold Q8_0
 * matrices, as qtts quantize reports):
 *   - `qtts quantize --lora A` merges before the conversion: `say -m
 *     BAKED.gguf` gives the audio of `say -m FOLDER --quant T --lora A` bit
 *     for bit, and `qtts info BAKED.gguf` names the adapter;
 *   - `say -m X.gguf --lora A` (X.gguf quantized without it) merges into the
 *     stored weights' dequantized values and requantizes them: it gives the
 *     audio of `qtts quantize X.gguf --lora A` bit for bit, and each merged
 *     weight holds W + s alpha/r B A (computed here in double from the f32
 *     checkpoint) within twice the Q8_0 rounding (relative RMS error 0.02),
 *     as the baked file does within once (0.01). Its audio is not the folder
 *     path's: rounding twice instead of once flips greedy tokens of the tiny
 *     random model (the SNR is printed, not asserted);
 *   - `qtts info X.gguf --lora A` says how many weights it changes; a missing
 *     adapter fails in one line. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "io/lora.h"
#include "io/store.h"
#include "support/lora_adapter.h"
#include "support/test_util.h"

static const char *const model_name = "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny";
static const double FACTOR = LORA_TEST_ALPHA / LORA_TEST_RANK, SCALE = 1.5;

static int run(const char *cmd) {
    int st = system(cmd);
    TEST_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", cmd);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* Greedy audio of a fixed sentence: `qtts say -m model ARGS` into wav. The decoder in f32, whose bits do not
 * depend on how frames are grouped into decoder steps, a timing choice (engine/decode_policy.h): with "auto"
 * under the sanitizers a Winograd form was measured fastest, and three runs of one command gave three waves. */
static int say(const char *model, const char *args, const char *wav) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "%s say -q -m %s %s --speaker Ryan --greedy --max-frames 8 --decoder-precision f32 -o %s "
             "\"Hello there, friend.\" 2>/dev/null",
             QTTS_BINARY, model, args, wav);
    return run(cmd);
}

static void check_same_wav(const char *x, const char *y, const char *what) {
    size_t nx = 0, ny = 0;
    float *a = read_wav(x, &nx), *b = read_wav(y, &ny);
    TEST_CHECK(a && b && nx == ny && nx > 0 && !memcmp(a, b, nx * sizeof(float)), "%s: %zu vs %zu samples differ", what,
               nx, ny);
    printf("  %-62s bit for bit (%zu samples)\n", what, nx);
    free(a), free(b);
}

static double snr_db(const char *x, const char *ref) {
    size_t nx = 0, nr = 0;
    float *a = read_wav(x, &nx), *b = read_wav(ref, &nr);
    double sig = 0, noise = 0;
    for (size_t i = 0; a && b && i < nx && i < nr; i++) {
        sig += (double)b[i] * b[i];
        noise += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    }
    free(a), free(b);
    return noise > 0 ? 10 * log10(sig / noise) : INFINITY;
}

/* Relative RMS error of each target weight of the model at path (merged with the adapter first when adapter
 * is given, as a load does) against W + s alpha/r B A; the worst of them. */
static double merged_error(const char *path, const char *adapter, double *const *want) {
    qtts_err err = {0};
    qtts_store *st = qtts_store_open(path, &err);
    int n = 0;
    TEST_CHECK(st != NULL, "open %s: %s", path, err.msg);
    if (st && adapter)
        TEST_CHECK(qtts_lora_merge(&st, adapter, SCALE, 0, NULL, &n, &err) == 0 && n == LORA_TEST_N,
                   "merge into %s: %s (%d weights)", path, err.msg, n);
    double worst = INFINITY;
    for (int t = 0; st && t < LORA_TEST_N; t++) {
        const qtts_tensor *w = qtts_store_find(st, lora_test_targets[t].weight);
        float *x = w ? qtts_tensor_to_f32(w, &err) : NULL;
        TEST_CHECK(x != NULL, "%s: %s", lora_test_targets[t].weight, err.msg);
        if (!x) break;
        double num = 0, den = 0;
        for (int64_t i = 0; i < lora_test_targets[t].out * lora_test_targets[t].in; i++) {
            num += (x[i] - want[t][i]) * (x[i] - want[t][i]);
            den += want[t][i] * want[t][i];
        }
        free(x);
        double rel = sqrt(num / den);
        worst = t == 0 || rel > worst ? rel : worst;
    }
    qtts_store_free(st);
    return worst;
}

/* `qtts info ARGS` holds needle in its output (stdout and stderr) and exits with want_ok. */
static void check_info(const char *tmp, const char *args, int want_ok, const char *needle, const char *what) {
    char cmd[4096], out[700], line[2048] = "";
    snprintf(out, sizeof out, "%s/info.txt", tmp);
    snprintf(cmd, sizeof cmd, "%s info %s > %s 2>&1", QTTS_BINARY, args, out);
    int st = system(cmd);
    unsigned char *text = NULL;
    size_t n = 0;
    TEST_CHECK(read_bytes(out, &text, &n) == 0 && text, "read %s", out);
    const char *hit = text ? memmem(text, n, needle, strlen(needle)) : NULL;
    TEST_CHECK(WIFEXITED(st) && (WEXITSTATUS(st) == 0) == want_ok && hit, "%s: exit %d, no '%s' in:\n%.*s", what,
               WIFEXITED(st) ? WEXITSTATUS(st) : -1, needle, (int)n, text ? (const char *)text : "");
    if (hit) {
        size_t len = strcspn(hit, "\n");
        snprintf(line, sizeof line, "%.*s", (int)(len < 200 ? len : 200), hit);
    }
    printf("  %-62s %s\n", what, line);
    free(text);
    unlink(out);
}

int main(void) {
    char tmp[] = "/tmp/qtts_lora_gguf_XXXXXX", golden[1024], adapter[600], spec[700], cmd[8192];
    if (!mkdtemp(tmp)) return 1;
    golden_path(golden, sizeof golden, model_name);
    float *a[LORA_TEST_N], *b[LORA_TEST_N];
    double *want[LORA_TEST_N];
    if (lora_test_matrices(4647, a, b)) return 1;
    qtts_err err = {0};
    qtts_store *orig = qtts_store_open(golden, &err);
    TEST_CHECK(orig != NULL, "%s", err.msg);
    for (int t = 0; t < LORA_TEST_N; t++) {
        const int64_t o = lora_test_targets[t].out, in = lora_test_targets[t].in;
        want[t] = malloc((size_t)(o * in) * sizeof(double));
        if (!want[t] || !orig) return 1;
        const qtts_tensor *w = qtts_store_find(orig, lora_test_targets[t].weight);
        float *wf = w ? qtts_tensor_to_f32(w, &err) : NULL;
        if (!wf) return 1;
        for (int64_t r = 0; r < o; r++)
            for (int64_t c = 0; c < in; c++) {
                double s = 0;
                for (int k = 0; k < LORA_TEST_RANK; k++) s += (double)b[t][r * LORA_TEST_RANK + k] * a[t][k * in + c];
                want[t][r * in + c] = wf[r * in + c] + SCALE * FACTOR * s;
            }
        free(wf);
    }
    qtts_store_free(orig);
    snprintf(adapter, sizeof adapter, "%s/adapter", tmp);
    TEST_CHECK(lora_test_adapter_write(adapter, a, b, 0, NULL) == 0, "write the adapter");
    snprintf(spec, sizeof spec, "%s:%g", adapter, SCALE);

    static const char *const types[] = {"q8_0", "q4_k"};
    for (int ti = 0; ti < 2; ti++) {
        const char *ty = types[ti];
        char x[700], baked[700], rebaked[700], w_folder[700], w_baked[700], w_x[700], w_rebaked[700], args[2048],
            what[200];
        snprintf(x, sizeof x, "%s/x-%s.gguf", tmp, ty);
        snprintf(baked, sizeof baked, "%s/baked-%s.gguf", tmp, ty);
        snprintf(rebaked, sizeof rebaked, "%s/x-baked-%s.gguf", tmp, ty);
        snprintf(w_folder, sizeof w_folder, "%s/folder-%s.wav", tmp, ty);
        snprintf(w_baked, sizeof w_baked, "%s/baked-%s.wav", tmp, ty);
        snprintf(w_x, sizeof w_x, "%s/x-%s.wav", tmp, ty);
        snprintf(w_rebaked, sizeof w_rebaked, "%s/x-baked-%s.wav", tmp, ty);
        snprintf(
            cmd, sizeof cmd,
            "%s quantize %s -o %s --type %s 2>/dev/null && %s quantize %s -o %s --type %s --lora %s 2>/dev/null && "
            "%s quantize %s -o %s --type %s --lora %s 2>/dev/null",
            QTTS_BINARY, golden, x, ty, QTTS_BINARY, golden, baked, ty, spec, QTTS_BINARY, x, rebaked, ty, spec);
        if (run(cmd)) continue;
        snprintf(args, sizeof args, "--quant %s --lora %s", ty, spec);
        if (say(golden, args, w_folder) || say(baked, "", w_baked)) continue;
        snprintf(what, sizeof what, "%s: quantize --lora == folder --quant --lora", ty);
        check_same_wav(w_baked, w_folder, what);
        snprintf(args, sizeof args, "--lora %s", spec);
        if (say(x, args, w_x) || say(rebaked, "", w_rebaked)) continue;
        snprintf(what, sizeof what, "%s: X.gguf --lora == quantize X.gguf --lora", ty);
        check_same_wav(w_x, w_rebaked, what);

        double e_baked = merged_error(baked, NULL, want), e_x = merged_error(x, adapter, want);
        TEST_CHECK(e_baked <= 0.01, "%s baked: relative RMS error %.4g > 0.01", ty, e_baked);
        TEST_CHECK(e_x <= 0.02, "%s X.gguf --lora: relative RMS error %.4g > 0.02", ty, e_x);
        printf("  %s merged weights vs W + s B A: baked %.4f (bound 0.01), X.gguf --lora %.4f (bound 0.02); "
               "X.gguf --lora audio vs the folder path's: %.1f dB SNR\n",
               ty, e_baked, e_x, snr_db(w_x, w_folder));

        snprintf(args, sizeof args, "%s", baked);
        snprintf(what, sizeof what, "%s: info BAKED.gguf", ty);
        check_info(tmp, args, 1, "scale 1.5, 2 weights", what);
        snprintf(args, sizeof args, "%s --lora %s", x, spec);
        snprintf(what, sizeof what, "%s: info X.gguf --lora", ty);
        check_info(tmp, args, 1, "scale 1.5, 2 weights", what);
    }
    snprintf(cmd, sizeof cmd, "%s/x-q8_0.gguf --lora %s/nowhere", tmp, tmp);
    check_info(tmp, cmd, 0, "nowhere", "info --lora with a missing adapter");
    snprintf(cmd, sizeof cmd, "%s quantize %s -o %s/never.gguf --lora %s/nowhere 2>/dev/null", QTTS_BINARY, golden, tmp,
             tmp);
    int st = system(cmd);
    snprintf(cmd, sizeof cmd, "%s/never.gguf", tmp);
    struct stat sb;
    TEST_CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 0 && stat(cmd, &sb) != 0,
               "quantize --lora with a missing adapter: exit %d, or a file was written", WEXITSTATUS(st));
    printf("  %-62s fails, writes nothing\n", "quantize --lora with a missing adapter");

    for (int t = 0; t < LORA_TEST_N; t++) free(want[t]);
    lora_test_matrices_free(a, b);
    TEST_CHECK(rm_rf(tmp) == 0, "cleanup");
    return test_finish("test_lora_gguf");
}
