/* safetensors reader: u64 LE header length, JSON header, raw little-endian
 * data. The file is mmap'd and tensors point into the mapping. Every field of
 * the header is validated before any tensor is exposed. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/gguf.h"
#include "io/json_util.h"
#include "io/store.h"

enum { MAX_HEADER_BYTES = 100 * 1024 * 1024 };

static qtts_dtype dtype_from_st(const char *s) {
    if (!strcmp(s, "F32")) return QTTS_F32;
    if (!strcmp(s, "F16")) return QTTS_F16;
    if (!strcmp(s, "BF16")) return QTTS_BF16;
    return QTTS_DTYPE_INVALID;
}

/* Adds the tensors of one mapped file to st. */
int qtts_store_parse_safetensors(qtts_store *st, const char *path, const unsigned char *base, size_t size, qtts_err *err) {
    if (size < 8) return qtts_fail(err, "%s: file is %zu bytes, too short for a safetensors header", path, size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | base[i];
    if (hlen > size - 8)
        return qtts_fail(err, "%s: header length %llu runs past the end of the file (%zu bytes)", path,
                         (unsigned long long)hlen, size);
    if (hlen > MAX_HEADER_BYTES)
        return qtts_fail(err, "%s: header length %llu is implausibly large", path, (unsigned long long)hlen);
    const unsigned char *data = base + 8 + hlen;
    uint64_t data_size = size - 8 - hlen;

    cJSON *root = cJSON_ParseWithLength((const char *)base + 8, (size_t)hlen);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return qtts_fail(err, "%s: header is not a valid JSON object", path);
    }
    int n = cJSON_GetArraySize(root);
    qtts_span *spans = qtts_calloc((size_t)n + 1, sizeof *spans, err);
    if (!spans) {
        cJSON_Delete(root);
        return -1;
    }
    int n_spans = 0, rc = 0;
    for (cJSON *it = root->child; it; it = it->next) {
        const char *name = it->string;
        if (!name) continue;
        if (!strcmp(name, "__metadata__")) continue;
        if (!cJSON_IsObject(it)) {
            rc = qtts_fail(err, "%s: header entry '%s' is not an object", path, name);
            break;
        }
        cJSON *jd = cJSON_GetObjectItemCaseSensitive(it, "dtype");
        cJSON *js = cJSON_GetObjectItemCaseSensitive(it, "shape");
        cJSON *jo = cJSON_GetObjectItemCaseSensitive(it, "data_offsets");
        if (!cJSON_IsString(jd) || !cJSON_IsArray(js) || !cJSON_IsArray(jo) || cJSON_GetArraySize(jo) != 2) {
            rc = qtts_fail(err, "%s: tensor '%s' lacks a valid dtype, shape or data_offsets", path, name);
            break;
        }
        qtts_dtype type = dtype_from_st(jd->valuestring);
        if (type == QTTS_DTYPE_INVALID) {
            rc = qtts_fail(err, "%s: tensor '%s' has unsupported dtype %s (F32, F16, BF16 are supported)", path, name,
                           jd->valuestring);
            break;
        }
        int ndim = cJSON_GetArraySize(js);
        if (ndim > QTTS_MAX_DIMS) {
            rc = qtts_fail(err, "%s: tensor '%s' has %d dimensions (at most %d supported)", path, name, ndim,
                           QTTS_MAX_DIMS);
            break;
        }
        int64_t shape[QTTS_MAX_DIMS] = {0};
        uint64_t numel = 1;
        int bad = 0;
        for (int d = 0; d < ndim; d++) {
            cJSON *v = cJSON_GetArrayItem(js, d);
            if (!json_is_uint(v) || v->valuedouble > 1e12) {
                bad = 1;
                break;
            }
            shape[d] = (int64_t)v->valuedouble;
            if (shape[d] && numel > UINT64_MAX / (uint64_t)shape[d]) bad = 1;
            numel *= (uint64_t)shape[d];
        }
        cJSON *j0 = cJSON_GetArrayItem(jo, 0), *j1 = cJSON_GetArrayItem(jo, 1);
        if (bad || !json_is_uint(j0) || !json_is_uint(j1)) {
            rc = qtts_fail(err, "%s: tensor '%s' has a malformed shape or data_offsets", path, name);
            break;
        }
        uint64_t b = (uint64_t)j0->valuedouble, e = (uint64_t)j1->valuedouble;
        if (b > e || e > data_size) {
            rc = qtts_fail(err, "%s: tensor '%s' data span [%llu, %llu) lies outside the %llu data bytes", path, name,
                           (unsigned long long)b, (unsigned long long)e, (unsigned long long)data_size);
            break;
        }
        uint64_t want = numel * qtts_dtype_block_bytes(type);
        if (e - b != want) {
            rc = qtts_fail(err, "%s: tensor '%s' spans %llu bytes but its shape and dtype need %llu", path, name,
                           (unsigned long long)(e - b), (unsigned long long)want);
            break;
        }
        spans[n_spans++] = (qtts_span){b, e, name};
        if (qtts_store_add(st, name, type, ndim, shape, data + b, 0, err)) {
            rc = qtts_fail_prefix(err, "%s", path);
            break;
        }
    }
    if (!rc) rc = qtts_spans_check_disjoint(spans, (size_t)n_spans, path, err);
    free(spans);
    cJSON_Delete(root);
    return rc;
}

static int add_file(qtts_store *st, const char *path, qtts_err *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return qtts_fail(err, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return qtts_fail(err, "%s: not a regular file", path);
    }
    size_t size = (size_t)sb.st_size;
    if (size == 0) {
        close(fd);
        return qtts_fail(err, "%s: file is empty", path);
    }
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
        close(fd);
        return qtts_fail(err, "%s: mmap failed: %s", path, strerror(errno));
    }
    if (qtts_store_keep_mapping(st, map, size, fd, err)) { /* the store closes fd with the mapping */
        munmap(map, size);
        close(fd);
        return -1;
    }
    return qtts_store_parse_safetensors(st, path, map, size, err);
}

qtts_store *qtts_store_open_safetensors(const char *file, qtts_err *err) {
    qtts_store *st = qtts_store_new(err);
    if (!st) return NULL;
    qtts_store_set_source(st, file);
    if (add_file(st, file, err)) {
        qtts_store_free(st);
        return NULL;
    }
    return st;
}

qtts_store *qtts_store_open_safetensors_index(const char *index_json, qtts_err *err) {
    cJSON *root = json_load_file(index_json, err);
    if (!root) return NULL;
    cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    if (!cJSON_IsObject(map)) {
        qtts_fail(err, "%s: no \"weight_map\" object", index_json);
        cJSON_Delete(root);
        return NULL;
    }
    qtts_store *st = qtts_store_new(err);
    if (!st) {
        cJSON_Delete(root);
        return NULL;
    }
    qtts_store_set_source(st, index_json);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", index_json);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    else snprintf(dir, sizeof dir, ".");
    /* Open each distinct shard once. */
    const char **seen = qtts_calloc((size_t)cJSON_GetArraySize(map) + 1, sizeof *seen, err);
    int n_seen = 0, rc = seen ? 0 : -1;
    for (cJSON *it = map->child; it && !rc; it = it->next) {
        if (!cJSON_IsString(it) || strchr(it->valuestring, '/') || !strcmp(it->valuestring, "..")) {
            rc = qtts_fail(err, "%s: weight_map entry '%s' is not a plain file name", index_json,
                           it->string ? it->string : "?");
            break;
        }
        int dup = 0;
        for (int i = 0; i < n_seen; i++)
            if (!strcmp(seen[i], it->valuestring)) dup = 1;
        if (dup) continue;
        seen[n_seen++] = it->valuestring;
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", dir, it->valuestring) >= (int)sizeof path) {
            rc = qtts_fail(err, "%s: shard path too long", index_json);
            break;
        }
        rc = add_file(st, path, err);
    }
    /* Every tensor the index names must be present in its shards. */
    for (cJSON *it = map->child; it && !rc; it = it->next)
        if (it->string && !qtts_store_find(st, it->string))
            rc = qtts_fail(err, "%s: tensor '%s' is listed but missing from %s", index_json, it->string,
                           it->valuestring);
    free(seen);
    cJSON_Delete(root);
    if (rc) {
        qtts_store_free(st);
        return NULL;
    }
    return st;
}

qtts_store *qtts_gguf_open(const char *path, qtts_err *err); /* io/gguf.c */

qtts_store *qtts_store_open(const char *path, qtts_err *err) {
    struct stat sb;
    if (stat(path, &sb) != 0) {
        qtts_fail(err, "%s: %s", path, strerror(errno));
        return NULL;
    }
    if (S_ISDIR(sb.st_mode)) {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/model.safetensors.index.json", path);
        if (access(p, R_OK) == 0) return qtts_store_open_safetensors_index(p, err);
        snprintf(p, sizeof p, "%s/model.safetensors", path);
        if (access(p, R_OK) == 0) return qtts_store_open_safetensors(p, err);
        qtts_fail(err, "%s: no model.safetensors or model.safetensors.index.json in this folder", path);
        return NULL;
    }
    size_t len = strlen(path);
    if (qtts_gguf_is_path(path)) return qtts_gguf_open(path, err);
    if (len >= 5 && !strcmp(path + len - 5, ".json")) return qtts_store_open_safetensors_index(path, err);
    return qtts_store_open_safetensors(path, err);
}
