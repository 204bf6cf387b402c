/* `qtts say --stream-text`: text piped in pieces, with pauses between them,
 * speaks exactly what the whole text speaks in the streaming layout (the same
 * samples as `say --text-layout streaming TEXT`), for a CustomVoice and a
 * Base (x-vector) model; bad input and usage errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "harness.h"
#include "support/test_util.h"

#define CV QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"
#define BASE QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-0.6B-Base-tiny"

static int run(const char *cmd) {
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int same_file(const char *a, const char *b) {
    unsigned char *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    int same = !read_bytes(a, &x, &nx) && !read_bytes(b, &y, &ny) && nx == ny && nx > 44 && !memcmp(x, y, nx);
    free(x);
    free(y);
    return same;
}

int main(void) {
    char tmp[] = "/tmp/qtts_stream_textXXXXXX";
    if (!mkdtemp(tmp)) return 1;
    char cmd[4096], a[512], b[512], c[512];
    const char *voice_opts[2] = {"--speaker vivian", ""};
    const char *models[2] = {CV, BASE};
    char ref[512];
    snprintf(ref, sizeof ref, "%s/ref.wav", tmp);
    /* a Base reference recording: any speech-like audio works; the CustomVoice model makes one */
    snprintf(cmd, sizeof cmd, "'%s' say -m '%s' --speaker ryan --seed 1 -q -o '%s' 'A short reference clip.'",
             QTTS_BINARY, CV, ref);
    TEST_CHECK(run(cmd) == 0, "reference clip");
    for (int m = 0; m < 2; m++) {
        char vo[700];
        snprintf(vo, sizeof vo, "%s", m == 0 ? voice_opts[0] : "");
        if (m == 1) snprintf(vo, sizeof vo, "--ref-audio '%s' --x-vector-only", ref);
        snprintf(a, sizeof a, "%s/pieces%d.wav", tmp, m);
        snprintf(b, sizeof b, "%s/whole%d.wav", tmp, m);
        snprintf(c, sizeof c, "%s/layout%d.wav", tmp, m);
        /* pieces split inside a word and inside a UTF-8 character (é = c3 a9), with pauses */
        snprintf(cmd, sizeof cmd,
                 "(printf 'Hel'; sleep 0.2; printf 'lo there, caf\\303'; sleep 0.2; printf '\\251 is op'; sleep 0.3; "
                 "printf 'en. Goodbye!') | '%s' say -m '%s' %s --seed 5 -q --stream-text -o '%s'",
                 QTTS_BINARY, models[m], vo, a);
        TEST_CHECK(run(cmd) == 0, "model %d: --stream-text with pieces", m);
        snprintf(cmd, sizeof cmd, "printf 'Hello there, caf\\303\\251 is open. Goodbye!' | '%s' say -m '%s' %s --seed 5 -q "
                 "--stream-text -o '%s'", QTTS_BINARY, models[m], vo, b);
        TEST_CHECK(run(cmd) == 0, "model %d: --stream-text at once", m);
        snprintf(cmd, sizeof cmd, "'%s' say -m '%s' %s --seed 5 -q --text-layout streaming -o '%s' "
                 "'Hello there, café is open. Goodbye!'", QTTS_BINARY, models[m], vo, c);
        TEST_CHECK(run(cmd) == 0, "model %d: whole text, streaming layout", m);
        TEST_CHECK(same_file(a, b), "model %d: pieces with pauses = all at once (byte-identical WAV)", m);
        TEST_CHECK(same_file(a, c), "model %d: --stream-text = say --text-layout streaming TEXT", m);
    }
    /* errors: invalid UTF-8, empty input, a text argument, a missing file */
    snprintf(a, sizeof a, "%s/bad.wav", tmp);
    snprintf(cmd, sizeof cmd, "printf '\\351 bad' | '%s' say -m '%s' --speaker vivian -q --stream-text -o '%s' 2>/dev/null",
             QTTS_BINARY, CV, a);
    TEST_CHECK(run(cmd) == 1, "invalid UTF-8 fails");
    struct stat st;
    TEST_CHECK(stat(a, &st) != 0, "no output file is left after a failure");
    snprintf(cmd, sizeof cmd, "'%s' say -m '%s' --speaker vivian -q --stream-text -o '%s' </dev/null 2>/dev/null",
             QTTS_BINARY, CV, a);
    TEST_CHECK(run(cmd) == 1, "empty input fails");
    snprintf(cmd, sizeof cmd, "'%s' say -m '%s' --speaker vivian --stream-text -o '%s' hello 2>/dev/null", QTTS_BINARY,
             CV, a);
    TEST_CHECK(run(cmd) == 2, "a text argument with --stream-text is a usage error");
    snprintf(cmd, sizeof cmd, "'%s' say -m '%s' --speaker vivian --stream-text --file /nonexistent -o '%s' 2>/dev/null",
             QTTS_BINARY, CV, a);
    TEST_CHECK(run(cmd) == 1, "a missing --file fails");
    rm_rf(tmp);
    return test_finish("test_cli_stream_text");
}
