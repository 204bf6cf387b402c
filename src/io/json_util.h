/* Small helpers over cJSON for config files. */
#ifndef QTTS_IO_JSON_UTIL_H
#define QTTS_IO_JSON_UTIL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* Reads and parses a JSON file (at most 64 MiB). Fails with "<path>: ..." */
cJSON *json_load_file(const char *path, qtts_err *err);

/* A non-negative integer-valued number. */
int json_is_uint(const cJSON *v);

/* A seed: an integer JSON number in [0, 2^53-1] (the largest exact in
 * every JSON client) or a decimal string of any uint64. 0, or -1 with *why
 * ("must be ..." text). */
int json_seed(const cJSON *v, uint64_t *out, const char **why);

/* 1 if JSON text holds a NUL: a raw NUL byte or a \u0000 escape (a
 * backslash that is itself escaped, "C:\\u0000", starts none). C strings end
 * there, so parsed text would be cut silently. */
int json_has_nul(const char *text, size_t len);

/* A string by dotted path ("talker_config.model_type"), or def. */
const char *json_str_or(const cJSON *root, const char *dotted, const char *def);

#endif
