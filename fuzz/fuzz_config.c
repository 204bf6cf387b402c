/* config.json / speech_tokenizer config.json parsers on arbitrary bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "model/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char dir[64];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/qtts_fuzz_cfg_%d", (int)getpid());
        char cmd[128];
        snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
        if (system(cmd) != 0) abort();
    }
    char path[128];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    qtts_err err = {{0}};
    qtts_model_config m;
    qtts_codec_config c;
    qtts_generation_config g;
    (void)qtts_model_config_load(&m, dir, &err);
    (void)qtts_codec_config_load(&c, dir, &err);
    (void)g;
    return 0;
}
