/* `cmake --install` into a scratch prefix, then a tiny C program compiled and
 * linked with `pkg-config --cflags --libs qtts` (scripts/check_install.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness.h"

int main(void) {
    char build[4096];
    snprintf(build, sizeof build, "%s", QTTS_BINARY);
    char *slash = strrchr(build, '/');
    if (slash) *slash = 0; /* the qtts binary sits at the top of the build folder */
    const char *flags = "";
#if defined(__SANITIZE_ADDRESS__)
    flags = "EXTRA_CFLAGS='-fsanitize=address,undefined' EXTRA_LDFLAGS='-fsanitize=address,undefined' "
            "ASAN_OPTIONS=detect_leaks=0 ";
#endif
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s'%s/scripts/check_install.sh' '%s' 2>&1", flags, QTTS_SOURCE_DIR, build);
    int st = system(cmd);
    TEST_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "install check failed (status %d): %s", st, cmd);
    return test_finish("test_install");
}
