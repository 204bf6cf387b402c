/* qtts_struct_size: the public structs' sizes, for bindings that lay them
 * out themselves (python/qtts/_lib.py) and must allocate what this library
 * reads and writes, whatever fields they know of. */
#include <string.h>

#include "qtts.h"

size_t qtts_struct_size(const char *name) {
    static const struct {
        const char *name;
        size_t size;
    } sizes[] = {
        {"qtts_engine_params", sizeof(qtts_engine_params)},
        {"qtts_request", sizeof(qtts_request)},
        {"qtts_result", sizeof(qtts_result)},
        {"qtts_model_info", sizeof(qtts_model_info)},
        {"qtts_engine_stats", sizeof(qtts_engine_stats)},
        {"qtts_error", sizeof(qtts_error)},
        {"qtts_audio_data", sizeof(qtts_audio_data)},
        {"qtts_voice_entry", sizeof(qtts_voice_entry)},
    };
    for (size_t i = 0; name && i < sizeof sizes / sizeof sizes[0]; i++)
        if (!strcmp(name, sizes[i].name)) return sizes[i].size;
    return 0;
}
