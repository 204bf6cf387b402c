/* The Home Assistant App (deploy/home-assistant): tests/ha_app_lint.py checks
 * its YAML against the Supervisor's required fields and schema types, the
 * options against the schema, and that run.sh maps every option to a
 * `qtts wyoming` flag the binary starts with (on the tiny CustomVoice model).
 * Skipped with a visible message without python3's yaml module
 * (QTTS_REQUIRE_CLIENTS=1 fails instead). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness.h"

int main(void) {
    if (system("python3 -c 'import yaml' 2>/dev/null") != 0) {
        printf("SKIP test_home_assistant_app: python3's yaml module is missing (apt-get install python3-yaml)\n");
        const char *strict = getenv("QTTS_REQUIRE_CLIENTS");
        if (strict && *strict && strcmp(strict, "0")) TEST_CHECK(0, "python3-yaml required (QTTS_REQUIRE_CLIENTS)");
        return test_finish("test_home_assistant_app");
    }
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "python3 %s/tests/ha_app_lint.py %s %s %s/Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny",
             QTTS_SOURCE_DIR, QTTS_SOURCE_DIR, QTTS_BINARY, QTTS_GOLDEN_DIR);
    int st = system(cmd);
    TEST_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the App's lint failed: %s", cmd);
    return test_finish("test_home_assistant_app");
}
