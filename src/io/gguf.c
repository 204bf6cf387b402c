/* GGUF reader and writer (see gguf.h). The reader never trusts a count,
 * length or offset: each is checked against the bytes that remain before it
 * is used, so a truncated or hostile file gives one clear error line. */
#include "io/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/kernel_layout.h"

enum { GGUF_DEFAULT_ALIGNMENT = 32, GGUF_MAX_STRING = 1 << 30, GGUF_MAX_NAME = 65535 };
static const unsigned char GGUF_MAGIC[4] = {'G', 'G', 'U', 'F'};

typedef struct {
    char *key;
    qtts_gguf_type type;
    const unsigned char *val; /* scalar bytes, string bytes, or packed array elements */
    uint64_t len;             /* string length */
    qtts_gguf_type arr_type;
    uint64_t count;
    const unsigned char **strs; /* string arrays: element pointers and lengths */
    uint64_t *str_lens;
} kv_entry;

struct qtts_gguf {
    const unsigned char *base;
    size_t size;
    void *map;
    size_t map_len;
    int fd; /* the mapped file, open while map is this object's (-1: none) */
    char label[512];
    uint32_t version, alignment;
    kv_entry *kv;
    int n_kv;
    qtts_tensor *tensors;
    int n_tensors;
};

/* ---- little-endian helpers ---- */

static uint64_t le_get(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static size_t scalar_size(qtts_gguf_type t) {
    switch (t) {
    case QTTS_GGUF_U8:
    case QTTS_GGUF_I8:
    case QTTS_GGUF_BOOL: return 1;
    case QTTS_GGUF_U16:
    case QTTS_GGUF_I16: return 2;
    case QTTS_GGUF_U32:
    case QTTS_GGUF_I32:
    case QTTS_GGUF_F32: return 4;
    case QTTS_GGUF_U64:
    case QTTS_GGUF_I64:
    case QTTS_GGUF_F64: return 8;
    default: return 0;
    }
}

static const char *type_name(qtts_gguf_type t) {
    static const char *const names[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                        "bool", "string", "array", "u64", "i64", "f64"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "unknown";
}

/* GGML tensor type names, for errors about types this engine does not run. */
static const char *ggml_type_name(uint32_t t) {
    static const char *const names[] = {"F32",     "F16",   "Q4_0",   "Q4_1",  "(removed Q4_2)", "(removed Q4_3)",
                                        "Q5_0",    "Q5_1",  "Q8_0",   "Q8_1",  "Q2_K",           "Q3_K",
                                        "Q4_K",    "Q5_K",  "Q6_K",   "Q8_K",  "IQ2_XXS",        "IQ2_XS",
                                        "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S",          "IQ4_XS",
                                        "I8",      "I16",   "I32",    "I64",   "F64",            "IQ1_M",
                                        "BF16"};
    return t < sizeof names / sizeof names[0] ? names[t] : "unknown";
}

/* qtts_dtype values are the GGML ids; the storage-only ones are read and
 * converted by the loaders (tensor.h). */
static qtts_dtype dtype_from_ggml(uint32_t t) {
    return t <= 30 && qtts_dtype_known((qtts_dtype)t) ? (qtts_dtype)t : QTTS_DTYPE_INVALID;
}

/* ---- reader ---- */

typedef struct {
    const unsigned char *base, *p, *end;
    const char *label;
    qtts_err *err;
} rd;

static size_t rd_left(const rd *r) { return (size_t)(r->end - r->p); }

static int rd_need(rd *r, uint64_t n, const char *what) {
    if (n > rd_left(r))
        return qtts_fail(r->err, "%s: truncated: %s needs %llu bytes at offset %zu but only %zu remain", r->label,
                         what, (unsigned long long)n, (size_t)(r->p - r->base), rd_left(r));
    return 0;
}

static int rd_uint(rd *r, int n, uint64_t *v, const char *what) {
    if (rd_need(r, (uint64_t)n, what)) return -1;
    *v = le_get(r->p, n);
    r->p += n;
    return 0;
}

static int rd_str(rd *r, const unsigned char **s, uint64_t *len, const char *what) {
    if (rd_uint(r, 8, len, what)) return -1;
    if (*len > GGUF_MAX_STRING)
        return qtts_fail(r->err, "%s: %s has length %llu, implausibly large", r->label, what,
                         (unsigned long long)*len);
    if (rd_need(r, *len, what)) return -1;
    *s = r->p;
    r->p += *len;
    return 0;
}

void qtts_gguf_free(qtts_gguf *g) {
    if (!g) return;
    for (int i = 0; i < g->n_kv; i++) {
        free(g->kv[i].key);
        free(g->kv[i].strs);
        free(g->kv[i].str_lens);
    }
    for (int i = 0; i < g->n_tensors; i++) free((void *)g->tensors[i].name);
    free(g->kv);
    free(g->tensors);
    if (g->map) munmap(g->map, g->map_len);
    if (g->fd >= 0) close(g->fd);
    free(g);
}

static int parse_value(rd *r, kv_entry *e) {
    char what[128];
    snprintf(what, sizeof what, "value of '%.80s'", e->key);
    if (e->type == QTTS_GGUF_STRING) return rd_str(r, &e->val, &e->len, what);
    if (e->type != QTTS_GGUF_ARRAY) {
        size_t sz = scalar_size(e->type);
        if (!sz)
            return qtts_fail(r->err, "%s: metadata key '%s' has unknown value type %u", r->label, e->key,
                             (unsigned)e->type);
        if (rd_need(r, sz, what)) return -1;
        e->val = r->p;
        r->p += sz;
        return 0;
    }
    uint64_t at, count;
    if (rd_uint(r, 4, &at, what) || rd_uint(r, 8, &count, what)) return -1;
    e->arr_type = (qtts_gguf_type)at;
    e->count = count;
    if (at == QTTS_GGUF_ARRAY)
        return qtts_fail(r->err, "%s: metadata key '%s' is an array of arrays (not supported)", r->label, e->key);
    if (at == QTTS_GGUF_STRING) {
        if (count > rd_left(r) / 8) /* every element has at least its 8-byte length */
            return qtts_fail(r->err, "%s: metadata key '%s' claims %llu strings, more than the file holds", r->label,
                             e->key, (unsigned long long)count);
        e->val = r->p;
        e->strs = malloc((size_t)(count ? count : 1) * sizeof *e->strs);
        e->str_lens = malloc((size_t)(count ? count : 1) * sizeof *e->str_lens);
        if (!e->strs || !e->str_lens) return qtts_fail(r->err, "%s: out of memory", r->label);
        for (uint64_t i = 0; i < count; i++)
            if (rd_str(r, &e->strs[i], &e->str_lens[i], what)) return -1;
        return 0;
    }
    size_t sz = scalar_size((qtts_gguf_type)at);
    if (!sz)
        return qtts_fail(r->err, "%s: metadata key '%s' is an array of unknown type %llu", r->label, e->key,
                         (unsigned long long)at);
    if (count > rd_left(r) / sz)
        return qtts_fail(r->err, "%s: metadata key '%s' claims %llu elements, more than the file holds", r->label,
                         e->key, (unsigned long long)count);
    e->val = r->p;
    r->p += count * sz;
    return 0;
}

static int cmp_name(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Duplicate keys make lookups ambiguous: reject them (sorted, O(n log n)). */
static int check_unique_keys(const qtts_gguf *g, qtts_err *err) {
    if (g->n_kv < 2) return 0;
    const char **keys = qtts_malloc((size_t)g->n_kv * sizeof *keys, err);
    if (!keys) return -1;
    for (int i = 0; i < g->n_kv; i++) keys[i] = g->kv[i].key;
    qsort(keys, (size_t)g->n_kv, sizeof *keys, cmp_name);
    int rc = 0;
    for (int i = 1; i < g->n_kv && !rc; i++)
        if (!strcmp(keys[i], keys[i - 1])) rc = qtts_fail(err, "%s: metadata key '%s' appears twice", g->label, keys[i]);
    free(keys);
    return rc;
}

static int parse_tensor_info(rd *r, qtts_gguf *g, int i, uint64_t *offset) {
    const unsigned char *s;
    uint64_t len, ndim, dims[QTTS_MAX_DIMS], type;
    char what[64];
    snprintf(what, sizeof what, "name of tensor #%d", i);
    if (rd_str(r, &s, &len, what)) return -1;
    if (len == 0 || len > GGUF_MAX_NAME || memchr(s, 0, (size_t)len))
        return qtts_fail(r->err, "%s: tensor #%d has an empty, overlong or NUL-containing name", g->label, i);
    char *name = malloc((size_t)len + 1);
    if (!name) return qtts_fail(r->err, "%s: out of memory", g->label);
    memcpy(name, s, (size_t)len);
    name[len] = 0;
    qtts_tensor *t = &g->tensors[i];
    t->name = name;
    g->n_tensors = i + 1;
    if (rd_uint(r, 4, &ndim, "tensor dimension count")) return -1;
    if (ndim < 1 || ndim > QTTS_MAX_DIMS)
        return qtts_fail(r->err, "%s: tensor '%s' has %llu dimensions (1 to %d supported)", g->label, name,
                         (unsigned long long)ndim, QTTS_MAX_DIMS);
    uint64_t numel = 1;
    for (uint64_t d = 0; d < ndim; d++) {
        if (rd_uint(r, 8, &dims[d], "tensor dimension")) return -1;
        if (dims[d] > (uint64_t)1 << 40 || (dims[d] && numel > UINT64_MAX / dims[d]))
            return qtts_fail(r->err, "%s: tensor '%s' dimension %llu is implausibly large", g->label, name,
                             (unsigned long long)dims[d]);
        numel *= dims[d];
    }
    if (rd_uint(r, 4, &type, "tensor type") || rd_uint(r, 8, offset, "tensor offset")) return -1;
    qtts_dtype dt = dtype_from_ggml((uint32_t)type);
    if (dt == QTTS_DTYPE_INVALID)
        return qtts_fail(r->err,
                         "%s: tensor '%s' has GGML type %llu (%s), which qtts does not read (F32, F16, BF16, "
                         "Q8_0, Q4_K, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q5_K, Q6_K are)",
                         g->label, name, (unsigned long long)type, ggml_type_name((uint32_t)type));
    int64_t be = qtts_dtype_block_elems(dt);
    if (dims[0] % (uint64_t)be)
        return qtts_fail(r->err, "%s: tensor '%s' rows of %llu values are not whole %s blocks of %lld", g->label,
                         name, (unsigned long long)dims[0], qtts_dtype_name(dt), (long long)be);
    if (numel / (uint64_t)be > UINT64_MAX / qtts_dtype_block_bytes(dt))
        return qtts_fail(r->err, "%s: tensor '%s' is implausibly large", g->label, name);
    t->type = dt;
    t->ndim = (int)ndim;
    for (uint64_t d = 0; d < ndim; d++) t->shape[d] = (int64_t)dims[ndim - 1 - d]; /* PyTorch order */
    t->nbytes = (size_t)(numel / (uint64_t)be * qtts_dtype_block_bytes(dt));
    if (*offset % g->alignment)
        return qtts_fail(r->err, "%s: tensor '%s' offset %llu is not a multiple of the alignment %u", g->label,
                         name, (unsigned long long)*offset, g->alignment);
    return 0;
}

qtts_gguf *qtts_gguf_parse(const unsigned char *buf, size_t size, const char *label, qtts_err *err) {
    qtts_gguf *g = qtts_calloc(1, sizeof *g, err);
    if (!g) return NULL;
    snprintf(g->label, sizeof g->label, "%s", label ? label : "(gguf)");
    g->fd = -1;
    g->base = buf;
    g->size = size;
    g->alignment = GGUF_DEFAULT_ALIGNMENT;
    rd r = {buf, buf, buf + size, g->label, err};
    uint64_t version, n_tensors, n_kv;
    if (size < 4 || memcmp(buf, GGUF_MAGIC, 4)) {
        qtts_fail(err, "%s: not a GGUF file (bad magic)", g->label);
        goto fail;
    }
    r.p += 4;
    if (rd_uint(&r, 4, &version, "version")) goto fail;
    if (version != 2 && version != 3) {
        qtts_fail(err, "%s: GGUF version %llu is not supported (2 and 3 are)", g->label, (unsigned long long)version);
        goto fail;
    }
    g->version = (uint32_t)version;
    if (rd_uint(&r, 8, &n_tensors, "tensor count") || rd_uint(&r, 8, &n_kv, "metadata count")) goto fail;
    /* Smallest possible entries: kv = 8 (key len) + 4 (type) + 1; tensor = 8 + 1 + 4 + 8 + 4 + 8. */
    if (n_kv > rd_left(&r) / 13 || n_kv > INT_MAX / 2) {
        qtts_fail(err, "%s: metadata count %llu is more than the file can hold", g->label, (unsigned long long)n_kv);
        goto fail;
    }
    if (n_tensors > rd_left(&r) / 33 || n_tensors > INT_MAX / 2) {
        qtts_fail(err, "%s: tensor count %llu is more than the file can hold", g->label,
                  (unsigned long long)n_tensors);
        goto fail;
    }
    g->kv = qtts_calloc((size_t)n_kv + 1, sizeof *g->kv, err);
    g->tensors = qtts_calloc((size_t)n_tensors + 1, sizeof *g->tensors, err);
    if (!g->kv || !g->tensors) goto fail;
    for (uint64_t i = 0; i < n_kv; i++) {
        const unsigned char *s;
        uint64_t len, type;
        if (rd_str(&r, &s, &len, "metadata key")) goto fail;
        if (len == 0 || len > GGUF_MAX_NAME || memchr(s, 0, (size_t)len)) {
            qtts_fail(err, "%s: metadata key #%llu is empty, overlong or contains a NUL byte", g->label,
                      (unsigned long long)i);
            goto fail;
        }
        kv_entry *e = &g->kv[i];
        e->key = malloc((size_t)len + 1);
        if (!e->key) {
            qtts_fail(err, "%s: out of memory", g->label);
            goto fail;
        }
        memcpy(e->key, s, (size_t)len);
        e->key[len] = 0;
        g->n_kv = (int)i + 1;
        if (rd_uint(&r, 4, &type, "metadata value type")) goto fail;
        e->type = (qtts_gguf_type)type;
        if (type > QTTS_GGUF_F64) {
            qtts_fail(err, "%s: metadata key '%s' has unknown value type %llu", g->label, e->key,
                      (unsigned long long)type);
            goto fail;
        }
        if (parse_value(&r, e)) goto fail;
        if (!strcmp(e->key, "general.alignment")) {
            uint32_t a = e->type == QTTS_GGUF_U32 ? (uint32_t)le_get(e->val, 4) : 0;
            if (!a || (a & (a - 1)) || a > (1u << 20)) {
                qtts_fail(err, "%s: general.alignment must be a u32 power of two up to 2^20 (got a %s%s%u)",
                          g->label, type_name(e->type), e->type == QTTS_GGUF_U32 ? " " : "",
                          e->type == QTTS_GGUF_U32 ? (unsigned)le_get(e->val, 4) : 0u);
                goto fail;
            }
            g->alignment = a;
        }
    }
    if (check_unique_keys(g, err)) goto fail;
    uint64_t *offsets = qtts_calloc((size_t)n_tensors + 1, sizeof *offsets, err);
    if (!offsets) goto fail;
    for (uint64_t i = 0; i < n_tensors; i++) {
        if (parse_tensor_info(&r, g, (int)i, &offsets[i])) {
            free(offsets);
            goto fail;
        }
    }
    uint64_t pos = (uint64_t)(r.p - buf);
    uint64_t data_start = (pos + g->alignment - 1) / g->alignment * g->alignment;
    uint64_t data_size = data_start <= size ? size - data_start : 0;
    if (n_tensors && data_start > size) {
        qtts_fail(err, "%s: truncated: tensor data would start at %llu, past the end of the file (%zu bytes)",
                  g->label, (unsigned long long)data_start, size);
        free(offsets);
        goto fail;
    }
    qtts_span *spans = qtts_calloc((size_t)n_tensors + 1, sizeof *spans, err);
    const char **names = qtts_calloc((size_t)n_tensors + 1, sizeof *names, err);
    int bad = !spans || !names;
    for (uint64_t i = 0; i < n_tensors && !bad; i++) {
        qtts_tensor *t = &g->tensors[i];
        if (offsets[i] > data_size || t->nbytes > data_size - offsets[i]) {
            qtts_fail(err, "%s: tensor '%s' data [%llu, +%zu) lies outside the %llu data bytes (file truncated?)",
                      g->label, t->name, (unsigned long long)offsets[i], t->nbytes, (unsigned long long)data_size);
            bad = 1;
            break;
        }
        t->data = buf + data_start + offsets[i];
        spans[i] = (qtts_span){offsets[i], offsets[i] + t->nbytes, t->name};
        names[i] = t->name;
    }
    if (!bad && qtts_spans_check_disjoint(spans, (size_t)n_tensors, g->label, err)) bad = 1;
    if (!bad) {
        qsort(names, (size_t)n_tensors, sizeof *names, cmp_name);
        for (uint64_t i = 1; i < n_tensors && !bad; i++)
            if (!strcmp(names[i], names[i - 1])) {
                qtts_fail(err, "%s: tensor '%s' appears twice", g->label, names[i]);
                bad = 1;
            }
    }
    free(spans);
    free(names);
    free(offsets);
    if (bad) goto fail;
    return g;
fail:
    qtts_gguf_free(g);
    return NULL;
}

qtts_gguf *qtts_gguf_load(const char *path, qtts_err *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        qtts_fail(err, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        qtts_fail(err, "%s: not a regular file", path);
        return NULL;
    }
    size_t size = (size_t)sb.st_size;
    if (size == 0) {
        close(fd);
        qtts_fail(err, "%s: file is empty", path);
        return NULL;
    }
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
        close(fd);
        qtts_fail(err, "%s: mmap failed: %s", path, strerror(errno));
        return NULL;
    }
    qtts_gguf *g = qtts_gguf_parse(map, size, path, err);
    if (!g) {
        munmap(map, size);
        close(fd);
        return NULL;
    }
    g->map = map;
    g->map_len = size;
    g->fd = fd; /* kept for reads that copy (qtts_store_read) */
    return g;
}

uint32_t qtts_gguf_version(const qtts_gguf *g) { return g->version; }
uint32_t qtts_gguf_alignment(const qtts_gguf *g) { return g->alignment; }
int qtts_gguf_n_tensors(const qtts_gguf *g) { return g->n_tensors; }
const qtts_tensor *qtts_gguf_tensor(const qtts_gguf *g, int i) {
    return i >= 0 && i < g->n_tensors ? &g->tensors[i] : NULL;
}

int qtts_gguf_add_to_store(const qtts_gguf *g, qtts_store *st, qtts_err *err) {
    return qtts_gguf_add_to_store_kernel(g, st, 0, err);
}

int qtts_gguf_kernel_layout_matches(const qtts_gguf *g) {
    size_t len = 0;
    const char *have = qtts_gguf_get_str(g, QTTS_GGUF_KEY_KERNEL_LAYOUT, &len), *here = qtts_kernel_layout_here();
    int64_t version = 0;
    qtts_err ignored = {0};
    return have && here && len == strlen(here) && !memcmp(have, here, len) &&
           !qtts_gguf_get_int(g, QTTS_GGUF_KEY_KERNEL_LAYOUT_VERSION, &version, &ignored) &&
           version == QTTS_KERNEL_LAYOUT_VERSION;
}

int qtts_gguf_add_to_store_kernel(const qtts_gguf *g, qtts_store *st, int keep, qtts_err *err) {
    keep = keep && qtts_gguf_kernel_layout_matches(g);
    for (int i = 0; i < g->n_tensors; i++) {
        const qtts_tensor *t = &g->tensors[i];
        char base[512];
        qtts_dtype type;
        if (qtts_kernel_layout_parse(t, base, sizeof base, &type)) {
            if (qtts_kernel_layout_load(st, t, keep, err)) return -1;
            continue;
        }
        if (qtts_store_add(st, t->name, t->type, t->ndim, t->shape, t->data, 0, err)) return -1;
    }
    return 0;
}

int qtts_gguf_move_mapping(qtts_gguf *g, qtts_store *st, qtts_err *err) {
    if (!g->map) return 0;
    if (qtts_store_keep_mapping(st, g->map, g->map_len, g->fd, err)) return -1;
    g->map = NULL;
    g->fd = -1;
    return 0;
}

int qtts_gguf_kv_type(const qtts_gguf *g, const char *key) {
    int i = qtts_gguf_find_key(g, key);
    return i < 0 ? -1 : (int)g->kv[i].type;
}

qtts_store *qtts_gguf_open(const char *path, qtts_err *err) { return qtts_gguf_open_kernel(path, 0, err); }

qtts_store *qtts_gguf_open_kernel(const char *path, int keep, qtts_err *err) {
    qtts_gguf *g = qtts_gguf_load(path, err);
    if (!g) return NULL;
    qtts_store *st = qtts_store_new(err);
    if (!st) {
        qtts_gguf_free(g);
        return NULL;
    }
    qtts_store_set_source(st, path);
    if (qtts_gguf_add_to_store_kernel(g, st, keep, err) ||
        qtts_store_keep_mapping(st, g->map, g->map_len, g->fd, err)) {
        qtts_store_free(st);
        qtts_gguf_free(g);
        return NULL;
    }
    g->map = NULL; /* the store unmaps it now, and closes its file */
    g->fd = -1;
    qtts_gguf_free(g);
    return st;
}

int qtts_gguf_n_kv(const qtts_gguf *g) { return g->n_kv; }
const char *qtts_gguf_kv_key(const qtts_gguf *g, int i) { return i >= 0 && i < g->n_kv ? g->kv[i].key : NULL; }

int qtts_gguf_find_key(const qtts_gguf *g, const char *key) {
    for (int i = 0; i < g->n_kv; i++)
        if (!strcmp(g->kv[i].key, key)) return i;
    return -1;
}

static const kv_entry *find_kv(const qtts_gguf *g, const char *key, qtts_err *err) {
    int i = qtts_gguf_find_key(g, key);
    if (i < 0) {
        qtts_fail(err, "%s: missing metadata key '%s'", g->label, key);
        return NULL;
    }
    return &g->kv[i];
}

const char *qtts_gguf_get_str(const qtts_gguf *g, const char *key, size_t *len) {
    int i = qtts_gguf_find_key(g, key);
    if (i < 0 || g->kv[i].type != QTTS_GGUF_STRING) return NULL;
    if (len) *len = (size_t)g->kv[i].len;
    return (const char *)g->kv[i].val;
}

char *qtts_gguf_dup_str(const qtts_gguf *g, const char *key, qtts_err *err) {
    const kv_entry *e = find_kv(g, key, err);
    if (!e) return NULL;
    if (e->type != QTTS_GGUF_STRING) {
        qtts_fail(err, "%s: metadata key '%s' is a %s, not a string", g->label, key, type_name(e->type));
        return NULL;
    }
    char *s = qtts_malloc((size_t)e->len + 1, err);
    if (!s) return NULL;
    memcpy(s, e->val, (size_t)e->len);
    s[e->len] = 0;
    return s;
}

static int is_int_type(qtts_gguf_type t) {
    return t == QTTS_GGUF_U8 || t == QTTS_GGUF_I8 || t == QTTS_GGUF_U16 || t == QTTS_GGUF_I16 ||
           t == QTTS_GGUF_U32 || t == QTTS_GGUF_I32 || t == QTTS_GGUF_U64 || t == QTTS_GGUF_I64 ||
           t == QTTS_GGUF_BOOL;
}

static int64_t int_value(qtts_gguf_type t, const unsigned char *p) {
    switch (t) {
    case QTTS_GGUF_I8: return (int8_t)p[0];
    case QTTS_GGUF_I16: return (int16_t)le_get(p, 2);
    case QTTS_GGUF_I32: return (int32_t)le_get(p, 4);
    case QTTS_GGUF_I64: return (int64_t)le_get(p, 8);
    default: return (int64_t)le_get(p, (int)scalar_size(t));
    }
}

int qtts_gguf_get_int(const qtts_gguf *g, const char *key, int64_t *out, qtts_err *err) {
    const kv_entry *e = find_kv(g, key, err);
    if (!e) return -1;
    if (!is_int_type(e->type))
        return qtts_fail(err, "%s: metadata key '%s' is a %s, not an integer", g->label, key, type_name(e->type));
    if (e->type == QTTS_GGUF_U64 && le_get(e->val, 8) > (uint64_t)INT64_MAX)
        return qtts_fail(err, "%s: metadata key '%s' does not fit in int64", g->label, key);
    *out = int_value(e->type, e->val);
    return 0;
}

int qtts_gguf_get_float(const qtts_gguf *g, const char *key, double *out, qtts_err *err) {
    const kv_entry *e = find_kv(g, key, err);
    if (!e) return -1;
    if (e->type == QTTS_GGUF_F32) {
        uint32_t u = (uint32_t)le_get(e->val, 4);
        float f;
        memcpy(&f, &u, 4);
        *out = f;
    } else if (e->type == QTTS_GGUF_F64) {
        uint64_t u = le_get(e->val, 8);
        memcpy(out, &u, 8);
    } else if (is_int_type(e->type)) {
        *out = e->type == QTTS_GGUF_U64 ? (double)le_get(e->val, 8) : (double)int_value(e->type, e->val);
    } else {
        return qtts_fail(err, "%s: metadata key '%s' is a %s, not a number", g->label, key, type_name(e->type));
    }
    return 0;
}

int qtts_gguf_get_arr(const qtts_gguf *g, const char *key, qtts_gguf_type *elem, uint64_t *count,
                      const void **data, qtts_err *err) {
    const kv_entry *e = find_kv(g, key, err);
    if (!e) return -1;
    if (e->type != QTTS_GGUF_ARRAY)
        return qtts_fail(err, "%s: metadata key '%s' is a %s, not an array", g->label, key, type_name(e->type));
    if (elem) *elem = e->arr_type;
    if (count) *count = e->count;
    if (data) *data = e->val;
    return 0;
}

const char *qtts_gguf_get_arr_str(const qtts_gguf *g, const char *key, uint64_t i, size_t *len) {
    int k = qtts_gguf_find_key(g, key);
    if (k < 0) return NULL;
    const kv_entry *e = &g->kv[k];
    if (e->type != QTTS_GGUF_ARRAY || e->arr_type != QTTS_GGUF_STRING || i >= e->count) return NULL;
    if (len) *len = (size_t)e->str_lens[i];
    return (const char *)e->strs[i];
}

/* ---- writer ---- */

typedef struct {
    FILE *f;
    int failed;
    uint64_t pos;
} wr;

static void w_bytes(wr *w, const void *p, size_t n) {
    if (w->failed || !n) return;
    if (fwrite(p, 1, n, w->f) != n) w->failed = 1;
    w->pos += n;
}

static void w_uint(wr *w, uint64_t v, int n) {
    unsigned char b[8];
    for (int i = 0; i < n; i++) b[i] = (unsigned char)(v >> (8 * i));
    w_bytes(w, b, (size_t)n);
}

static void w_str(wr *w, const char *s, size_t len) {
    w_uint(w, len, 8);
    w_bytes(w, s, len);
}

static void w_pad(wr *w, uint32_t align) {
    static const unsigned char zeros[64] = {0};
    while (w->pos % align) {
        size_t n = (size_t)(align - w->pos % align);
        w_bytes(w, zeros, n < sizeof zeros ? n : sizeof zeros);
    }
}

static void w_scalar(wr *w, qtts_gguf_type t, const qtts_gguf_kv *kv) {
    if (t == QTTS_GGUF_F32) {
        float f = (float)kv->v.f;
        uint32_t u;
        memcpy(&u, &f, 4);
        w_uint(w, u, 4);
    } else if (t == QTTS_GGUF_F64) {
        uint64_t u;
        memcpy(&u, &kv->v.f, 8);
        w_uint(w, u, 8);
    } else {
        w_uint(w, kv->v.u, (int)scalar_size(t)); /* two's complement for the signed types */
    }
}

static int check_kv(const qtts_gguf_kv *kv, const char *path, qtts_err *err) {
    if (!kv->key || !*kv->key) return qtts_fail(err, "%s: metadata entry without a key", path);
    if (kv->type == QTTS_GGUF_STRING) {
        if (!kv->str && kv->len) return qtts_fail(err, "%s: metadata '%s' has no string", path, kv->key);
        return 0;
    }
    if (kv->type == QTTS_GGUF_ARRAY) {
        if (kv->arr_type == QTTS_GGUF_STRING) {
            if (kv->count && !kv->arr_strs) return qtts_fail(err, "%s: metadata '%s' has no strings", path, kv->key);
            for (uint64_t i = 0; i < kv->count; i++)
                if (!kv->arr_strs[i]) return qtts_fail(err, "%s: metadata '%s' has a NULL string", path, kv->key);
            return 0;
        }
        if (!scalar_size(kv->arr_type))
            return qtts_fail(err, "%s: metadata '%s' has an unsupported array element type %d", path, kv->key,
                             (int)kv->arr_type);
        if (kv->count && !kv->arr_data) return qtts_fail(err, "%s: metadata '%s' has no array data", path, kv->key);
        return 0;
    }
    if (!scalar_size(kv->type))
        return qtts_fail(err, "%s: metadata '%s' has an unsupported type %d", path, kv->key, (int)kv->type);
    return 0;
}

static void w_kv(wr *w, const qtts_gguf_kv *kv) {
    w_str(w, kv->key, strlen(kv->key));
    w_uint(w, (uint64_t)kv->type, 4);
    if (kv->type == QTTS_GGUF_STRING) {
        w_str(w, kv->str, kv->len);
    } else if (kv->type == QTTS_GGUF_ARRAY) {
        w_uint(w, (uint64_t)kv->arr_type, 4);
        w_uint(w, kv->count, 8);
        if (kv->arr_type == QTTS_GGUF_STRING) {
            for (uint64_t i = 0; i < kv->count; i++)
                w_str(w, kv->arr_strs[i], kv->arr_lens ? kv->arr_lens[i] : strlen(kv->arr_strs[i]));
        } else {
            /* packed elements, already little-endian (qtts runs on little-endian hosts only) */
            w_bytes(w, kv->arr_data, (size_t)kv->count * scalar_size(kv->arr_type));
        }
    } else {
        w_scalar(w, kv->type, kv);
    }
}

int qtts_gguf_write(const char *path, const qtts_store *st, const qtts_gguf_kv *kv, int n_kv, qtts_err *err) {
    uint32_t align = GGUF_DEFAULT_ALIGNMENT;
    int has_align = 0;
    for (int i = 0; i < n_kv; i++) {
        if (check_kv(&kv[i], path, err)) return -1;
        for (int j = 0; j < i; j++)
            if (!strcmp(kv[i].key, kv[j].key)) return qtts_fail(err, "%s: metadata key '%s' given twice", path, kv[i].key);
        if (!strcmp(kv[i].key, "general.alignment")) {
            if (kv[i].type != QTTS_GGUF_U32 || !kv[i].v.u || (kv[i].v.u & (kv[i].v.u - 1)) || kv[i].v.u > (1u << 20))
                return qtts_fail(err, "%s: general.alignment must be a u32 power of two", path);
            align = (uint32_t)kv[i].v.u;
            has_align = 1;
        }
    }
    int nt = st ? qtts_store_count(st) : 0;
    for (int i = 0; i < nt; i++) {
        const qtts_tensor *t = qtts_store_at(st, i);
        int64_t inner = t->ndim ? t->shape[t->ndim - 1] : 1;
        if (!qtts_dtype_block_bytes(t->type) || inner % qtts_dtype_block_elems(t->type))
            return qtts_fail(err, "%s: tensor '%s' has a type or shape GGUF cannot store", path, t->name);
    }
    size_t plen = strlen(path);
    char *tmp = qtts_malloc(plen + 16, err);
    if (!tmp) return -1;
    snprintf(tmp, plen + 16, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        qtts_fail(err, "%s: cannot create a temporary file next to it: %s", path, strerror(errno));
        free(tmp);
        return -1;
    }
    (void)fchmod(fd, 0644); /* mkstemp makes 0600; a model file is normally world-readable */
    wr w = {fdopen(fd, "wb"), 0, 0};
    if (!w.f) {
        close(fd);
        unlink(tmp);
        free(tmp);
        return qtts_fail(err, "%s: fdopen failed", path);
    }
    w_bytes(&w, GGUF_MAGIC, 4);
    w_uint(&w, 3, 4);
    w_uint(&w, (uint64_t)nt, 8);
    w_uint(&w, (uint64_t)(n_kv + !has_align), 8);
    if (!has_align) {
        qtts_gguf_kv a = qtts_gguf_kv_u32("general.alignment", align);
        w_kv(&w, &a);
    }
    for (int i = 0; i < n_kv; i++) w_kv(&w, &kv[i]);
    uint64_t off = 0;
    for (int i = 0; i < nt; i++) {
        const qtts_tensor *t = qtts_store_at(st, i);
        w_str(&w, t->name, strlen(t->name));
        int nd = t->ndim ? t->ndim : 1;
        w_uint(&w, (uint64_t)nd, 4);
        for (int d = nd - 1; d >= 0; d--) w_uint(&w, t->ndim ? (uint64_t)t->shape[d] : 1, 8); /* innermost first */
        w_uint(&w, (uint64_t)t->type, 4); /* qtts_dtype values are the GGML ids */
        w_uint(&w, off, 8);
        off = (off + t->nbytes + align - 1) / align * align;
    }
    w_pad(&w, align);
    for (int i = 0; i < nt; i++) {
        const qtts_tensor *t = qtts_store_at(st, i);
        w_bytes(&w, t->data, t->nbytes);
        if (i + 1 < nt) w_pad(&w, align); /* data_start is aligned, so file and data offsets agree */
    }
    int rc = 0;
    if (w.failed || fflush(w.f) != 0 || fsync(fileno(w.f)) != 0) rc = qtts_fail(err, "%s: write failed: %s", path, strerror(errno));
    if (fclose(w.f) != 0 && !rc) rc = qtts_fail(err, "%s: close failed: %s", path, strerror(errno));
    if (!rc && rename(tmp, path) != 0) rc = qtts_fail(err, "%s: rename failed: %s", path, strerror(errno));
    if (rc) unlink(tmp);
    free(tmp);
    return rc;
}

int qtts_gguf_is_path(const char *path) {
    size_t n = strlen(path);
    return n >= 5 && !strcmp(path + n - 5, ".gguf");
}
