/* A leading UTF-8 byte order mark (Windows Notepad writes one) is no text:
 * tokenize from stdin and say --file drop it, so the ids and the audio equal
 * those of the same text without it. */
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
    return test_finish("test_cli_bom");
}
