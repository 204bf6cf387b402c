#include "support/endless_model.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/test_util.h"

int endless_model_write(const char *src, const char *dst) {
    static const char *const links[] = {"config.json", "generation_config.json", "merges.txt", "vocab.json",
                                        "preprocessor_config.json", "tokenizer_config.json", "speech_tokenizer"};
    char from[1024], to[1024];
    if (mkdir(dst, 0755)) return -1;
    for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
        snprintf(from, sizeof from, "%s/%s", src, links[i]);
        snprintf(to, sizeof to, "%s/%s", dst, links[i]);
        if (symlink(from, to)) return -1;
    }
    unsigned char *b = NULL;
    size_t n = 0;
    snprintf(from, sizeof from, "%s/model.safetensors", src);
    if (read_bytes(from, &b, &n) || n < 8) {
        free(b);
        return -1;
    }
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = hl << 8 | b[i]; /* little-endian header length */
    cJSON *h = hl <= n - 8 ? cJSON_ParseWithLength((const char *)b + 8, (size_t)hl) : NULL;
    const cJSON *off = cJSON_GetObjectItem(cJSON_GetObjectItem(h, "talker.codec_head.weight"), "data_offsets");
    int rc = -1;
    if (cJSON_GetArraySize(off) == 2) {
        size_t a = (size_t)cJSON_GetArrayItem(off, 0)->valuedouble, z = (size_t)cJSON_GetArrayItem(off, 1)->valuedouble;
        if (a < z && 8 + hl + z <= n) {
            memset(b + 8 + hl + a, 0, z - a); /* +0.0 in f32 and bf16 alike */
            snprintf(to, sizeof to, "%s/model.safetensors", dst);
            FILE *f = fopen(to, "wb");
            rc = f && fwrite(b, 1, n, f) == n ? 0 : -1;
            if (f && fclose(f)) rc = -1;
        }
    }
    cJSON_Delete(h);
    free(b);
    return rc;
}
