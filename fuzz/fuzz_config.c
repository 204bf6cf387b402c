/* config.json / generation_config.json / speech_tokenizer config.json parsers
 * on arbitrary bytes, parsed in memory (no temporary files). */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>

#include "model/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    cJSON *root = cJSON_ParseWithLength((const char *)data, size);
    if (!root) return 0;
    qtts_err err = {0};
    qtts_model_config m;
    qtts_codec_config c;
    qtts_generation_config g;
    (void)qtts_model_config_parse(&m, root, "config.json", &err);
    (void)qtts_codec_config_parse(&c, root, "config.json", &err);
    (void)qtts_generation_config_parse(&g, root, "generation_config.json", &err);
    cJSON_Delete(root);
    return 0;
}
