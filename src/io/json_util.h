/* Small helpers over cJSON for config files. */
#ifndef QTTS_IO_JSON_UTIL_H
#define QTTS_IO_JSON_UTIL_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "core/err.h"

/* Reads and parses a JSON file (at most 64 MiB). Fails with "<path>: ..." */
cJSON *json_load_file(const char *path, qtts_err *err);

/* A non-negative integer-valued number. */
int json_is_uint(const cJSON *v);

/* Lookups by dotted path ("talker_config.hidden_size"). The _req variants
 * fail with "<what>: missing or invalid '<path>'". */
const cJSON *json_path(const cJSON *root, const char *dotted);
int json_int_req(const cJSON *root, const char *dotted, int64_t *out, const char *what, qtts_err *err);
int json_num_req(const cJSON *root, const char *dotted, double *out, const char *what, qtts_err *err);
int64_t json_int_or(const cJSON *root, const char *dotted, int64_t def);
double json_num_or(const cJSON *root, const char *dotted, double def);
int json_bool_or(const cJSON *root, const char *dotted, int def);
const char *json_str_or(const cJSON *root, const char *dotted, const char *def);
/* An array of integers; returns count (<= max) or -1 with err. */
int json_int_array(const cJSON *root, const char *dotted, int64_t *out, int max, const char *what, qtts_err *err);

#endif
