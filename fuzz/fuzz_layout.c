/* Layout detection and the config/tokenizer rebuild (io/layout.h) on any pair
 * of files: the input is split into two GGUF images (the first 4 bytes give
 * the first one's length), written as a pair in a private folder, and opened
 * as a model, converting storage-only types. Every input either opens (and
 * closes) or fails cleanly; none crashes, leaks or reads outside the files.
 * (Error lines are not checked for being one line: the GGUF reader echoes a
 * key name as stored, control characters included.) */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/layout.h"

static int write_all(const char *path, const uint8_t *d, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(d, 1, n, f);
    return fclose(f) == 0 && w == n ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 4) return 0;
    uint32_t first;
    memcpy(&first, data, 4);
    data += 4, size -= 4;
    if (first > size) first = (uint32_t)size;
    /* one folder per process, made on the first input (the harness's only state) */
    static char dir[64];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/qtts_fuzz_layout_XXXXXX");
        if (!mkdtemp(dir)) abort();
    }
    char a[PATH_MAX], b[PATH_MAX];
    snprintf(a, sizeof a, "%s/a.gguf", dir);
    snprintf(b, sizeof b, "%s/b.gguf", dir);
    if (write_all(a, data, first) || write_all(b, data + first, size - first)) abort();
    qtts_err err = {0};
    qtts_model_files m;
    if (qtts_model_files_open(&m, a, QTTS_LAYOUT_CONVERT, &err) == 0) qtts_model_files_close(&m);
    return 0;
}
