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

qtts_gpu_buf *test_gpu_upload(qtts_gpu *g, const float *x, int64_t n) {
    qtts_err err = {0};
    qtts_gpu_buf *b = qtts_gpu_buf_new(g, (size_t)n * 4, &err);
    if (!b) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    if (x) memcpy(qtts_gpu_buf_data(b), x, (size_t)n * 4);
    return b;
}
