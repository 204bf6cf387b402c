/* qtts_model_resolve (include/qtts.h): an existing path as given, a downloaded
 * model's short name, hub id or repository name as its cache folder, and NULL
 * (with the folder tried) for a name nothing answers to. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "qtts.h"
#include "support/test_util.h"

int main(void) {
    char home[] = "/tmp/qtts_resolve.XXXXXX", dir[600], buf[1024];
    TEST_CHECK(mkdtemp(home) != NULL, "mkdtemp");
    setenv("QTTS_HOME", home, 1);
    snprintf(dir, sizeof dir, "%s/Qwen3-TTS-12Hz-0.6B-Base", home);
    mkdir(dir, 0755);
    const char *names[] = {"0.6b-base", "Qwen/Qwen3-TTS-12Hz-0.6B-Base", "Qwen3-TTS-12Hz-0.6B-Base"};
    for (int i = 0; i < 3; i++) {
        const char *got = qtts_model_resolve(names[i], buf, sizeof buf);
        TEST_CHECK(got == buf && !strcmp(buf, dir), "%s -> %s, want %s", names[i], got ? got : "NULL", dir);
    }
    TEST_CHECK(qtts_model_resolve(home, buf, sizeof buf) == buf && !strcmp(buf, home), "an existing path as given");
    char want[700];
    snprintf(want, sizeof want, "%s/Qwen3-TTS-12Hz-1.7B-Base", home);
    TEST_CHECK(qtts_model_resolve("1.7b-base", buf, sizeof buf) == NULL && !strcmp(buf, want),
               "not downloaded: NULL, and the folder tried (%s)", buf);
    TEST_CHECK(qtts_model_resolve("/no/such/model", buf, sizeof buf) == NULL, "a missing path");
    TEST_CHECK(qtts_model_resolve("", buf, sizeof buf) == NULL && !buf[0], "empty");
    TEST_CHECK(qtts_model_resolve("0.6b-base", buf, 8) == NULL, "a buffer too small");
    rm_rf(home);
    return test_finish("test_model_resolve");
}
