#include "gpu_device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

qtts_gpu *test_gpu_open(int *exit_code) {
    qtts_err err = {0};
    qtts_gpu *g = qtts_gpu_open("vulkan", &err);
    if (g) {
        printf("device: %s\n", qtts_gpu_name(g));
        return g;
    }
    const char *req = getenv("QTTS_REQUIRE_VULKAN");
    const int required = req && !strcmp(req, "1");
    fprintf(stderr, "%s: %s\n", required ? "FAIL" : "SKIP", err.msg);
    *exit_code = required ? 1 : 77;
    return NULL;
}
