/* The official `openai` npm package against `qtts serve` (API key on): a
 * CustomVoice tiny model for models.list, speech.create in every format (each
 * decoded back by ffprobe), streaming (audio and SSE with usage),
 * instructions and error mapping; a Base tiny model for audio.voices.create
 * (multipart), voice as {id} and audio.voices.delete. Skipped with a visible
 * message when node, the package or ffprobe is not installed
 * (scripts/deps.sh installs all three). */
#include <sys/stat.h>

#include "harness.h"
#include "support/npy.h"
#include "support/test_util.h"
#include "test_server_http.h"

#define CUSTOM_MODEL QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"
#define BASE_MODEL QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-0.6B-Base-tiny"

/* Runs a shell command, returns its first output line in out (may be empty) and the exit status. */
static int run_capture(const char *cmd, char *out, size_t size) {
    FILE *p = popen(cmd, "r");
    out[0] = 0;
    if (!p) return -1;
    if (!fgets(out, (int)size, p)) out[0] = 0;
    char sink[512];
    while (fgets(sink, sizeof sink, p)) {
    }
    out[strcspn(out, "\n")] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A missing client tool skips the test loudly; CI sets QTTS_REQUIRE_CLIENTS=1 so it fails instead. */
static int skip(const char *why) {
    printf("SKIP test_server_openai: %s\n", why);
    const char *strict = getenv("QTTS_REQUIRE_CLIENTS");
    if (strict && *strict && strcmp(strict, "0")) TEST_CHECK(0, "client tools required (QTTS_REQUIRE_CLIENTS): %s", why);
    return test_finish("test_server_openai");
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    char root[1024], line[1024];
    if (run_capture("node --version 2>/dev/null", line, sizeof line) != 0) {
        return skip("node is not installed (scripts/deps.sh installs nodejs, npm and openai)");
    }
    if (run_capture("npm root -g 2>/dev/null", root, sizeof root) != 0 || !root[0]) root[0] = 0;
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "NODE_PATH='%s' node -e \"require.resolve('openai')\" 2>/dev/null", root);
    if (run_capture(cmd, line, sizeof line) != 0) {
        return skip("the openai npm package is not installed (npm install -g openai@7)");
    }
    if (run_capture("ffprobe -version 2>/dev/null", line, sizeof line) != 0) {
        return skip("ffprobe is not installed (apt-get install ffmpeg)");
    }
    struct stat st;
    if (stat(CUSTOM_MODEL "/config.json", &st) != 0 || stat(BASE_MODEL "/config.json", &st) != 0) {
        TEST_CHECK(0, "tiny CustomVoice/Base models missing under %s", QTTS_GOLDEN_DIR);
        return test_finish("test_server_openai");
    }
    char tmp[] = "/tmp/qtts_sdkXXXXXX";
    npy_array ref;
    if (!mkdtemp(tmp) || npy_load_fixture("input_wave_1p5s", &ref)) {
        TEST_CHECK(0, "temp dir and reference fixture");
        return test_finish("test_server_openai");
    }
    size_t wav_len = 0;
    unsigned char *wav = th_make_wav(ref.f, (size_t)ref.numel, 24000, &wav_len);
    npy_free(&ref);
    char wav_path[256];
    snprintf(wav_path, sizeof wav_path, "%s/reference.wav", tmp);
    FILE *wf = fopen(wav_path, "wb");
    TEST_CHECK(wav && wf && fwrite(wav, 1, wav_len, wf) == wav_len && fclose(wf) == 0, "reference wav written");
    free(wav);
    th_server srv, bsrv;
    const char *args[] = {"-m", CUSTOM_MODEL, "--threads", "2", "--api-key", "k-123", NULL};
    const char *bargs[] = {"-m", BASE_MODEL, "--threads", "2", "--api-key", "k-123", NULL};
    if (th_start(&srv, args, 120) || th_start(&bsrv, bargs, 120)) {
        TEST_CHECK(0, "servers start");
        th_stop(&srv, 10);
        th_stop(&bsrv, 10);
        rm_rf(tmp);
        return test_finish("test_server_openai");
    }
    /* A built-in speaker of the model. */
    th_resp r;
    th_get(srv.port, "/v1/audio/voices", "Authorization: Bearer k-123\r\n", &r);
    char voice[128] = "";
    const char *at = r.body ? strstr((const char *)r.body, "\"name\":\"") : NULL;
    if (at) sscanf(at + 8, "%127[^\"]", voice);
    th_resp_free(&r);
    TEST_CHECK(voice[0], "a built-in speaker is listed");
    snprintf(cmd, sizeof cmd, "NODE_PATH='%s' node '%s/tests/test_server_openai.cjs' %d '%s' k-123 %d '%s' '%s' 2>&1",
             root, QTTS_SOURCE_DIR, srv.port, voice, bsrv.port, wav_path, tmp);
    FILE *p = popen(cmd, "r");
    int oks = 0, fails = 0;
    while (p && fgets(line, sizeof line, p)) {
        fputs(line, stdout);
        if (line[0] == '#') continue; /* information */
        if (!strncmp(line, "ok", 2)) oks++;
        else fails++;
    }
    int st2 = p ? pclose(p) : -1;
    TEST_CHECK(p && WIFEXITED(st2) && WEXITSTATUS(st2) == 0 && fails == 0 && oks >= 20,
               "openai SDK checks: %d ok, %d other lines, exit %d", oks, fails, WIFEXITED(st2) ? WEXITSTATUS(st2) : -1);
    TEST_CHECK(th_stop(&srv, 30) == 0, "SIGTERM exit status 0 (CustomVoice server)");
    TEST_CHECK(th_stop(&bsrv, 30) == 0, "SIGTERM exit status 0 (Base server)");
    rm_rf(tmp);
    return test_finish("test_server_openai");
}
