/* The official `openai` npm package against `qtts serve` (CustomVoice tiny
 * model, API key on): models.list, speech.create (wav, streamed pcm), error
 * mapping. Skipped with a visible message when node or the package is not
 * installed (scripts/deps.sh installs both). */
#include <sys/stat.h>

#include "harness.h"
#include "test_server_http.h"

#define CUSTOM_MODEL QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"

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

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    char root[1024], line[1024];
    if (run_capture("node --version 2>/dev/null", line, sizeof line) != 0) {
        printf("SKIP test_server_openai: node is not installed (scripts/deps.sh installs nodejs, npm and openai)\n");
        return test_finish("test_server_openai");
    }
    if (run_capture("npm root -g 2>/dev/null", root, sizeof root) != 0 || !root[0]) root[0] = 0;
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "NODE_PATH='%s' node -e \"require.resolve('openai')\" 2>/dev/null", root);
    if (run_capture(cmd, line, sizeof line) != 0) {
        printf("SKIP test_server_openai: the openai npm package is not installed (npm install -g openai)\n");
        return test_finish("test_server_openai");
    }
    struct stat st;
    if (stat(CUSTOM_MODEL "/config.json", &st) != 0) {
        TEST_CHECK(0, "tiny CustomVoice model missing under %s", QTTS_GOLDEN_DIR);
        return test_finish("test_server_openai");
    }
    th_server srv;
    const char *args[] = {"-m", CUSTOM_MODEL, "--threads", "2", "--api-key", "k-123", NULL};
    if (th_start(&srv, args, 120)) {
        TEST_CHECK(0, "server starts");
        th_stop(&srv, 10);
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
    snprintf(cmd, sizeof cmd, "NODE_PATH='%s' node '%s/tests/test_server_openai.cjs' %d '%s' k-123 2>&1", root,
             QTTS_SOURCE_DIR, srv.port, voice);
    FILE *p = popen(cmd, "r");
    int oks = 0, fails = 0;
    while (p && fgets(line, sizeof line, p)) {
        fputs(line, stdout);
        if (!strncmp(line, "ok", 2)) oks++;
        else fails++;
    }
    int st2 = p ? pclose(p) : -1;
    TEST_CHECK(p && WIFEXITED(st2) && WEXITSTATUS(st2) == 0 && fails == 0 && oks >= 5,
               "openai SDK checks: %d ok, %d other lines, exit %d", oks, fails, WIFEXITED(st2) ? WEXITSTATUS(st2) : -1);
    TEST_CHECK(th_stop(&srv, 30) == 0, "SIGTERM exit status 0");
    return test_finish("test_server_openai");
}
