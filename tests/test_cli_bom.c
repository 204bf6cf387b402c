/* Text input and terminals in qtts say / tokenize: a leading UTF-8 byte
 * order mark (Windows Notepad writes one) is no text, so the ids and the
 * audio equal those of the same text without it; audio is not written to a
 * terminal, and a terminal on stdin gets a hint. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "support/test_util.h"

#define CV QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"

static int capture(const char *cmd, char *out, size_t cap) {
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(out, 1, cap - 1, p) : 0;
    out[n] = 0;
    return p ? pclose(p) : -1;
}

int main(void) {
    char cmd[2048], with[4096], without[4096];
    snprintf(cmd, sizeof cmd, "printf '\\357\\273\\277Hello with BOM.' | '%s' tokenize -m '%s'", QTTS_BINARY, CV);
    int rc1 = capture(cmd, with, sizeof with);
    snprintf(cmd, sizeof cmd, "printf 'Hello with BOM.' | '%s' tokenize -m '%s'", QTTS_BINARY, CV);
    int rc2 = capture(cmd, without, sizeof without);
    TEST_CHECK(rc1 == 0 && rc2 == 0 && with[0] && !strcmp(with, without), "tokenize drops the BOM: %s vs %s", with,
               without);
    char dir[] = "/tmp/qtts_bomXXXXXX";
    if (mkdtemp(dir)) {
        snprintf(cmd, sizeof cmd,
                 "cd '%s' && printf '\\357\\273\\277Hi.' > bom.txt && printf 'Hi.' > plain.txt && "
                 "'%s' say -q -m '%s' --speaker ryan --seed 3 --max-frames 4 --file bom.txt -o a.wav && "
                 "'%s' say -q -m '%s' --speaker ryan --seed 3 --max-frames 4 --file plain.txt -o b.wav && cmp a.wav b.wav",
                 dir, QTTS_BINARY, CV, QTTS_BINARY, CV);
        TEST_CHECK(system(cmd) == 0, "say --file with a BOM speaks the same audio as without");
        rm_rf(dir);
    }
    /* a terminal on stdout (script(1) gives one): audio is refused, not written to it; a terminal on stdin:
       a hint instead of a silent wait */
    if (system("command -v script >/dev/null 2>&1") == 0) {
        char out[4096];
        snprintf(cmd, sizeof cmd, "script -qc \"'%s' say -m '%s' --speaker ryan hi -o -\" /dev/null </dev/null",
                 QTTS_BINARY, CV);
        capture(cmd, out, sizeof out);
        TEST_CHECK(strstr(out, "standard output is a terminal") && !strstr(out, "RIFF"),
                   "-o - to a terminal is refused: %s", out);
        snprintf(cmd, sizeof cmd, "script -qc \"'%s' say -m '%s' --speaker ryan --format wav -o /dev/null\" /dev/null </dev/null",
                 QTTS_BINARY, CV);
        capture(cmd, out, sizeof out);
        TEST_CHECK(strstr(out, "reading the text from standard input (Ctrl-D to end)") != NULL,
                   "stdin on a terminal gets a hint: %s", out);
    } else {
        printf("SKIP terminal checks: script(1) is not installed\n");
    }
    return test_finish("test_cli_bom");
}
