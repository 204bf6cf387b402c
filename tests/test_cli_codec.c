/* `qtts codec decode` end to end: .rvq in, WAV out (f32 and s16), and its errors. */
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "io/rvq.h"
#include "support/npy.h"

/* Runs a shell command; returns the exit status and the first line of stderr in msg. */
static int run(const char *cmd, char *msg, size_t n) {
    char full[4096];
    snprintf(full, sizeof full, "%s 2>&1 >/dev/null", cmd);
    FILE *p = popen(full, "r");
    if (!p) return -1;
    msg[0] = 0;
    if (!fgets(msg, (int)n, p)) msg[0] = 0;
    char sink[256];
    while (fgets(sink, sizeof sink, p)) {
    }
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static float *read_wav(const char *path, int64_t *n, int *sr, int *fmt) {
    SF_INFO info;
    memset(&info, 0, sizeof info);
    SNDFILE *sf = sf_open(path, SFM_READ, &info);
    if (!sf) return NULL;
    float *buf = malloc(sizeof(float) * (size_t)info.frames);
    if ((info.format & SF_FORMAT_SUBMASK) == SF_FORMAT_PCM_16) { /* the writer's scale: 32767 */
        short *s = malloc(sizeof(short) * (size_t)info.frames);
        *n = sf_readf_short(sf, s, info.frames);
        for (int64_t i = 0; i < *n; i++) buf[i] = s[i] / 32767.0f;
        free(s);
    } else {
        *n = sf_readf_float(sf, buf, info.frames);
    }
    *sr = info.samplerate;
    *fmt = info.format & SF_FORMAT_SUBMASK;
    sf_close(sf);
    return buf;
}

int main(void) {
    char tok[2048], rvq[256], wav[256], cmd[4096], msg[512];
    golden_path(tok, sizeof tok, "Qwen3-TTS-12Hz-0.6B-Base-tiny");
    snprintf(rvq, sizeof rvq, "/tmp/qtts_cli_codec_%d.rvq", (int)getpid());
    snprintf(wav, sizeof wav, "/tmp/qtts_cli_codec_%d.wav", (int)getpid());
    npy_array codes, want;
    if (npy_load_fixture("dec_codes_T20", &codes) || npy_load_fixture("dec_T20_wav", &want)) {
        TEST_CHECK(0, "fixtures missing");
        return test_finish("test_cli_codec");
    }
    qtts_err err = {0};
    TEST_CHECK(qtts_rvq_write(rvq, codes.i, 16, codes.shape[0], &err) == 0, "write rvq: %s", err.msg);

    const char *fmts[] = {"f32", "s16"};
    for (int f = 0; f < 2; f++) {
        snprintf(cmd, sizeof cmd, "%s codec decode %s -o %s -m %s --sample-format %s --threads 2", QTTS_BINARY, rvq,
                 wav, tok, fmts[f]);
        int rc = run(cmd, msg, sizeof msg);
        TEST_CHECK(rc == 0, "%s -> %d: %s", cmd, rc, msg);
        int64_t n = 0;
        int sr = 0, sub = 0;
        float *got = read_wav(wav, &n, &sr, &sub);
        TEST_CHECK(got && n == want.numel && sr == 24000, "wav: %lld samples at %d Hz", (long long)n, sr);
        TEST_CHECK(sub == (f == 0 ? SF_FORMAT_FLOAT : SF_FORMAT_PCM_16), "sample format %x", sub);
        if (got && n == want.numel) {
            char what[64];
            snprintf(what, sizeof what, "CLI decode %s", fmts[f]);
            /* f32: golden tolerance; s16: plus half a quantization step */
            TEST_NEAR(got, want.f, (size_t)n, f == 0 ? 1e-4 : 1e-4 + 0.5 / 32767.0 + 1e-6, what);
        }
        free(got);
    }
    /* official chunking runs too (single chunk here, so the same audio) */
    snprintf(cmd, sizeof cmd, "QTTS_MODEL=%s %s codec decode %s -o %s --official-chunking --sample-format f32",
             tok, QTTS_BINARY, rvq, wav);
    TEST_CHECK(run(cmd, msg, sizeof msg) == 0, "official chunking via $QTTS_MODEL: %s", msg);

    /* errors: one clear line, exit 1 (bad input) or 2 (usage) */
    FILE *fp = fopen(rvq, "wb");
    fwrite("0123456789012345678901234", 1, 25, fp);
    fclose(fp);
    snprintf(cmd, sizeof cmd, "%s codec decode %s -o %s -m %s", QTTS_BINARY, rvq, wav, tok);
    TEST_CHECK(run(cmd, msg, sizeof msg) == 1 && strstr(msg, "multiple of 22"), "truncated rvq: '%s'", msg);
    fp = fopen(rvq, "wb");
    fclose(fp);
    TEST_CHECK(run(cmd, msg, sizeof msg) == 1 && strstr(msg, "empty"), "empty rvq: '%s'", msg);
    snprintf(cmd, sizeof cmd, "%s codec decode %s -o %s -m %s --sample-format s24", QTTS_BINARY, rvq, wav, tok);
    TEST_CHECK(run(cmd, msg, sizeof msg) == 2 && strstr(msg, "sample-format"), "bad format: '%s'", msg);
    snprintf(cmd, sizeof cmd, "env -u QTTS_MODEL %s codec decode %s -o %s", QTTS_BINARY, rvq, wav);
    TEST_CHECK(run(cmd, msg, sizeof msg) == 2 && strstr(msg, "model"), "no model: '%s'", msg);
    snprintf(cmd, sizeof cmd, "%s codec encode /nonexistent/x.wav -o /nonexistent/y.rvq -m %s", QTTS_BINARY, tok);
    TEST_CHECK(run(cmd, msg, sizeof msg) == 1 && strstr(msg, "x.wav"), "encode of a missing file: '%s'", msg);

    unlink(rvq);
    unlink(wav);
    npy_free(&codes);
    npy_free(&want);
    return test_finish("test_cli_codec");
}
