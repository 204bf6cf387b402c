/* `qtts codec decode --device` end to end: .rvq in, f32 WAV out, decoded on
 * the device (gpu/gpu_decoder.h):
 *  - dec_codes_T20 on vulkan -> dec_T20_wav within 1e-4 (the decoder's golden
 *    tolerance, test_gpu_decoder);
 *  - dec_codes_T310 with --official-chunking (300-frame chunks, 25 frames of
 *    context re-decoded on a fresh state) -> dec_T310_wav within 1e-4;
 *  - no Vulkan driver (VK_ICD_FILENAMES at a missing file): vulkan fails with
 *    one line, auto decodes on the CPU and says so; an unknown device is a usage error.
 * Skipped (77) without a device unless QTTS_REQUIRE_VULKAN=1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu/gpu.h"
#include "harness.h"
#include "io/rvq.h"
#include "support/gpu_device.h"
#include "support/npy.h"
#include "support/test_util.h"

/* Runs cmd (stderr captured into msg); returns its exit status. */
static int run(const char *cmd, char *msg, size_t n) {
    char full[4600];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    return test_run_capture(full, msg, n);
}

/* Decodes `codes_fixture` with extra options and compares with `wav_fixture`. */
static void decode_case(const char *tok, const char *codes_fixture, const char *wav_fixture, const char *opts) {
    char rvq[256], wav[256], cmd[4400], msg[1024];
    snprintf(rvq, sizeof rvq, "/tmp/qtts_gpu_cli_codec_%d.rvq", (int)getpid());
    snprintf(wav, sizeof wav, "/tmp/qtts_gpu_cli_codec_%d.wav", (int)getpid());
    npy_array codes, want;
    if (npy_load_fixture(codes_fixture, &codes) || npy_load_fixture(wav_fixture, &want)) {
        TEST_CHECK(0, "fixtures %s / %s missing", codes_fixture, wav_fixture);
        return;
    }
    qtts_err err = {0};
    TEST_CHECK(qtts_rvq_write(rvq, codes.i, 16, codes.shape[0], &err) == 0, "write rvq: %s", err.msg);
    snprintf(cmd, sizeof cmd, "%s codec decode %s -o %s -m %s --sample-format f32 --threads 2 %s", QTTS_BINARY, rvq,
             wav, tok, opts);
    int rc = run(cmd, msg, sizeof msg);
    TEST_CHECK(rc == 0, "%s -> %d: %s", cmd, rc, msg);
    size_t n = 0;
    float *got = rc == 0 ? read_wav(wav, &n) : NULL;
    TEST_CHECK(got && n == (size_t)want.numel, "%s: %zu samples, want %lld", cmd, n, (long long)want.numel);
    if (got && n == (size_t)want.numel) {
        char what[160];
        snprintf(what, sizeof what, "codec decode %s %s", codes_fixture, opts);
        TEST_NEAR(got, want.f, n, 1e-4, what);
    }
    free(got);
    npy_free(&codes);
    npy_free(&want);
    unlink(rvq);
    unlink(wav);
}

int main(void) {
    int code = 0;
    qtts_gpu *g = test_gpu_open(&code);
    if (!g) return code;
    qtts_gpu_close(g); /* the child process opens its own */
    char tok[2048], cmd[4400], msg[1024];
    golden_path(tok, sizeof tok, "Qwen3-TTS-12Hz-0.6B-Base-tiny");
    decode_case(tok, "dec_codes_T20", "dec_T20_wav", "--device vulkan");
    decode_case(tok, "dec_codes_T310", "dec_T310_wav", "--device vulkan --official-chunking");

    /* no driver: vulkan fails with the reason, auto falls back to the CPU */
    decode_case(tok, "dec_codes_T20", "dec_T20_wav", "--device auto");
    snprintf(cmd, sizeof cmd, "VK_ICD_FILENAMES=/nonexistent/icd.json %s codec decode /nonexistent.rvq -o /tmp/x.wav "
             "-m %s --device bogus", QTTS_BINARY, tok);
    TEST_CHECK(run(cmd, msg, sizeof msg) == 2, "--device bogus: '%s'", msg);
    npy_array codes;
    if (npy_load_fixture("dec_codes_T20", &codes) == 0) {
        char rvq[256], wav[256];
        snprintf(rvq, sizeof rvq, "/tmp/qtts_gpu_cli_codec_nd_%d.rvq", (int)getpid());
        snprintf(wav, sizeof wav, "/tmp/qtts_gpu_cli_codec_nd_%d.wav", (int)getpid());
        qtts_err err = {0};
        TEST_CHECK(qtts_rvq_write(rvq, codes.i, 16, codes.shape[0], &err) == 0, "write rvq: %s", err.msg);
        snprintf(cmd, sizeof cmd, "VK_ICD_FILENAMES=/nonexistent/icd.json %s codec decode %s -o %s -m %s --device vulkan",
                 QTTS_BINARY, rvq, wav, tok);
        int rc = run(cmd, msg, sizeof msg);
        int lines = 0; /* qtts's own lines (the validation layer, when on, adds its own) */
        for (const char *c = msg; c; c = strchr(c, '\n'), c = c ? c + 1 : NULL) lines += !strncmp(c, "qtts:", 5);
        TEST_CHECK(rc == 1 && strstr(msg, "vulkan") && lines == 1, "vulkan without a driver -> %d: '%s'", rc, msg);
        snprintf(cmd, sizeof cmd, "VK_ICD_FILENAMES=/nonexistent/icd.json %s codec decode %s -o %s -m %s --device auto",
                 QTTS_BINARY, rvq, wav, tok);
        rc = run(cmd, msg, sizeof msg);
        TEST_CHECK(rc == 0 && strstr(msg, "decoding on the CPU"), "auto without a driver -> %d: '%s'", rc, msg);
        unlink(rvq);
        unlink(wav);
        npy_free(&codes);
    }
    return test_finish("test_gpu_cli_codec");
}
