#include "io/json_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sampling_ranges.h"
#include "io/file.h"

enum { MAX_JSON_BYTES = 64 * 1024 * 1024 };

cJSON *json_load_file(const char *path, qtts_err *err) {
    char *buf;
    size_t len;
    if (qtts_read_file(path, MAX_JSON_BYTES, &buf, &len, err)) return NULL;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
    if (!root) {
        size_t off = end ? (size_t)(end - buf) : 0;
        qtts_fail(err, "%s: malformed JSON near byte %zu", path, off);
    }
    free(buf);
    return root;
}

int json_is_uint(const cJSON *v) {
    return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble == floor(v->valuedouble) &&
           v->valuedouble < 9.0e15;
}

int json_has_nul(const char *text, size_t len) {
    if (memchr(text, 0, len)) return 1;
    for (size_t i = 0; i + 6 <= len; i++) {
        if (text[i] != '\\') continue;
        if ((text[i + 1] == 'u' || text[i + 1] == 'U') && !strncmp(text + i + 2, "0000", 4)) return 1;
        i++; /* the escaped character, a second backslash included */
    }
    return 0;
}

int json_seed(const cJSON *v, uint64_t *out, const char **why) {
    if (cJSON_IsString(v)) {
        const char *p = v->valuestring;
        char *end;
        errno = 0;
        unsigned long long x = strtoull(p, &end, 10);
        if (*p >= '0' && *p <= '9' && !*end && !errno && end - p <= 20) {
            *out = (uint64_t)x;
            return 0;
        }
        *why = "must be an integer in [0, 18446744073709551615] (as a string) or [0, 9007199254740991]";
        return -1;
    }
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble != floor(v->valuedouble)) {
        *why = "must be an integer in [0, 9007199254740991], or a decimal string up to 18446744073709551615";
        return -1;
    }
    if (v->valuedouble > (double)QTTS_SEED_EXACT_MAX) {
        *why = "is above 9007199254740991, where JSON numbers lose digits: send it as a string (\"seed\":\"...\")";
        return -1;
    }
    *out = (uint64_t)v->valuedouble;
    return 0;
}

static const cJSON *json_path(const cJSON *root, const char *dotted) {
    char key[256];
    const cJSON *cur = root;
    while (cur && *dotted) {
        const char *dot = strchr(dotted, '.');
        size_t n = dot ? (size_t)(dot - dotted) : strlen(dotted);
        if (n >= sizeof key) return NULL;
        memcpy(key, dotted, n);
        key[n] = 0;
        cur = cJSON_IsObject(cur) ? cJSON_GetObjectItemCaseSensitive(cur, key) : NULL;
        dotted += n + (dot ? 1 : 0);
    }
    return cur;
}

const char *json_str_or(const cJSON *root, const char *dotted, const char *def) {
    const cJSON *v = json_path(root, dotted);
    return cJSON_IsString(v) ? v->valuestring : def;
}

