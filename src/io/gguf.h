/* GGUF (v2/v3) files: reader (mmap, every count/length/offset validated
 * against the file size) and writer (atomic: temp file + rename).
 *
 * Tensor shapes are converted to PyTorch order: GGUF stores dims innermost
 * first (ne[0] = row length), qtts_tensor outermost first. GGML type ids
 * map 1:1 onto qtts_dtype: the runnable F32, F16, BF16, Q8_0, Q4_K and the
 * storage-only types other converters write (Q4_0 ... Q6_K, I32).
 *
 * Metadata: the key/value pairs of the header, readable by key. A
 * self-contained qtts GGUF carries the checkpoint's text files as string
 * values under the QTTS_GGUF_KEY_* keys below, so a model can be built from
 * the .gguf alone. */
#ifndef QTTS_IO_GGUF_H
#define QTTS_IO_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "io/store.h"

#define QTTS_GGUF_KEY_CONFIG_JSON "qtts.config_json"                       /* config.json */
#define QTTS_GGUF_KEY_GENERATION_CONFIG_JSON "qtts.generation_config_json" /* generation_config.json */
#define QTTS_GGUF_KEY_CODEC_CONFIG_JSON "qtts.codec_config_json"           /* speech_tokenizer/config.json */
#define QTTS_GGUF_KEY_VOCAB_JSON "qtts.vocab_json"                         /* vocab.json */
#define QTTS_GGUF_KEY_MERGES_TXT "qtts.merges_txt"                         /* merges.txt */
#define QTTS_GGUF_KEY_TOKENIZER_CONFIG_JSON "qtts.tokenizer_config_json"   /* tokenizer_config.json */

/* GGUF metadata value types (the file's numbering). */
typedef enum qtts_gguf_type {
    QTTS_GGUF_U8 = 0,
    QTTS_GGUF_I8 = 1,
    QTTS_GGUF_U16 = 2,
    QTTS_GGUF_I16 = 3,
    QTTS_GGUF_U32 = 4,
    QTTS_GGUF_I32 = 5,
    QTTS_GGUF_F32 = 6,
    QTTS_GGUF_BOOL = 7,
    QTTS_GGUF_STRING = 8,
    QTTS_GGUF_ARRAY = 9,
    QTTS_GGUF_U64 = 10,
    QTTS_GGUF_I64 = 11,
    QTTS_GGUF_F64 = 12,
} qtts_gguf_type;

typedef struct qtts_gguf qtts_gguf;

/* ---- reading ---- */

/* Maps and parses a file. The result owns the mapping. */
qtts_gguf *qtts_gguf_load(const char *path, qtts_err *err);
/* Parses an image in memory (borrowed: buf must outlive the result). label
 * names it in errors. Used by qtts_gguf_load and the fuzzer. */
qtts_gguf *qtts_gguf_parse(const unsigned char *buf, size_t size, const char *label, qtts_err *err);
void qtts_gguf_free(qtts_gguf *g);

uint32_t qtts_gguf_version(const qtts_gguf *g);
uint32_t qtts_gguf_alignment(const qtts_gguf *g);

/* Tensors (data point into the image; shapes in PyTorch order). */
int qtts_gguf_n_tensors(const qtts_gguf *g);
const qtts_tensor *qtts_gguf_tensor(const qtts_gguf *g, int i);
/* Adds every tensor to st as a borrowed view (g's image must outlive st). */
int qtts_gguf_add_to_store(const qtts_gguf *g, qtts_store *st, qtts_err *err);
/* The same, with matrices stored in the kernels' layout (io/kernel_layout.h)
 * kept as they lie where keep is set and the file's layout is this CPU's,
 * else put back into GGML rows. */
int qtts_gguf_add_to_store_kernel(const qtts_gguf *g, qtts_store *st, int keep, qtts_err *err);
/* Whether g's kernel layout (and its version) is the one this CPU's kernels run. */
int qtts_gguf_kernel_layout_matches(const qtts_gguf *g);

/* Hands g's file mapping to st (unmapped with st, no longer with g): the
 * tensors of g stay valid as long as st, after g is freed. */
int qtts_gguf_move_mapping(qtts_gguf *g, qtts_store *st, qtts_err *err);
/* The value type of a key (-1 when missing). */
int qtts_gguf_kv_type(const qtts_gguf *g, const char *key);

/* Metadata. Index-based access for listing, key-based for lookups. */
int qtts_gguf_n_kv(const qtts_gguf *g);
const char *qtts_gguf_kv_key(const qtts_gguf *g, int i);
int qtts_gguf_find_key(const qtts_gguf *g, const char *key); /* index, or -1 */

/* String value: pointer into the image, NOT NUL-terminated; *len = bytes.
 * NULL if the key is missing or not a string. */
const char *qtts_gguf_get_str(const qtts_gguf *g, const char *key, size_t *len);
/* Malloc'd NUL-terminated copy; NULL with "<label>: missing metadata key 'k'"
 * (or "... is not a string"). */
char *qtts_gguf_dup_str(const qtts_gguf *g, const char *key, qtts_err *err);
/* Integer of any integer type (or bool) as int64 (u64 values above INT64_MAX
 * fail). Float of F32/F64 (or any integer) as double. 0 on success, -1 with a
 * message if missing or of another type. */
int qtts_gguf_get_int(const qtts_gguf *g, const char *key, int64_t *out, qtts_err *err);
int qtts_gguf_get_float(const qtts_gguf *g, const char *key, double *out, qtts_err *err);
/* Array: element type and count. For numeric/bool arrays *data points at the
 * packed little-endian elements in the image (may be unaligned: memcpy out).
 * Returns 0, or -1 with a message if missing or not an array. */
int qtts_gguf_get_arr(const qtts_gguf *g, const char *key, qtts_gguf_type *elem, uint64_t *count,
                      const void **data, qtts_err *err);
/* Element i of a string array (pointer into the image, not NUL-terminated). */
const char *qtts_gguf_get_arr_str(const qtts_gguf *g, const char *key, uint64_t i, size_t *len);

/* ---- writing ---- */

/* One metadata entry for the writer. Fill with the helpers below. For
 * QTTS_GGUF_STRING: str/len. For arrays: arr_type, count and either
 * arr_data (count packed little-endian elements) or arr_strs/arr_lens
 * (strings; arr_lens NULL = NUL-terminated). */
typedef struct qtts_gguf_kv {
    const char *key;
    qtts_gguf_type type;
    union {
        uint64_t u;
        int64_t i;
        double f;
    } v;
    const char *str;
    size_t len;
    qtts_gguf_type arr_type;
    uint64_t count;
    const void *arr_data;
    const char *const *arr_strs;
    const size_t *arr_lens;
} qtts_gguf_kv;

static inline qtts_gguf_kv qtts_gguf_kv_str(const char *key, const char *s, size_t len) {
    qtts_gguf_kv kv = {0};
    kv.key = key, kv.type = QTTS_GGUF_STRING, kv.str = s, kv.len = len;
    return kv;
}
static inline qtts_gguf_kv qtts_gguf_kv_u32(const char *key, uint32_t v) {
    qtts_gguf_kv kv = {0};
    kv.key = key, kv.type = QTTS_GGUF_U32, kv.v.u = v;
    return kv;
}
static inline qtts_gguf_kv qtts_gguf_kv_i64(const char *key, int64_t v) {
    qtts_gguf_kv kv = {0};
    kv.key = key, kv.type = QTTS_GGUF_I64, kv.v.i = v;
    return kv;
}
static inline qtts_gguf_kv qtts_gguf_kv_f32(const char *key, float v) {
    qtts_gguf_kv kv = {0};
    kv.key = key, kv.type = QTTS_GGUF_F32, kv.v.f = v;
    return kv;
}
static inline qtts_gguf_kv qtts_gguf_kv_bool(const char *key, int v) {
    qtts_gguf_kv kv = {0};
    kv.key = key, kv.type = QTTS_GGUF_BOOL, kv.v.u = v != 0;
    return kv;
}
static inline qtts_gguf_kv qtts_gguf_kv_arr(const char *key, qtts_gguf_type elem, uint64_t count, const void *data) {
    qtts_gguf_kv kv = {0};
    kv.key = key, kv.type = QTTS_GGUF_ARRAY, kv.arr_type = elem, kv.count = count, kv.arr_data = data;
    return kv;
}
static inline qtts_gguf_kv qtts_gguf_kv_arr_str(const char *key, uint64_t count, const char *const *strs,
                                                const size_t *lens) {
    qtts_gguf_kv kv = {0};
    kv.key = key, kv.type = QTTS_GGUF_ARRAY, kv.arr_type = QTTS_GGUF_STRING, kv.count = count;
    kv.arr_strs = strs, kv.arr_lens = lens;
    return kv;
}

/* Writes a GGUF v3 file: the metadata entries in order (general.alignment is
 * added as 32 unless given), then every tensor of st in store order and in
 * its stored type, data aligned to 32 bytes. Atomic: a temp file next to
 * path is written, flushed and renamed over path. */
int qtts_gguf_write(const char *path, const qtts_store *st, const qtts_gguf_kv *kv, int n_kv, qtts_err *err);

/* Store opener used by qtts_store_open for *.gguf (tensors only; read the
 * metadata with qtts_gguf_load). */
qtts_store *qtts_gguf_open(const char *path, qtts_err *err);
/* The same, keeping matrices in the kernels' layout (qtts_gguf_add_to_store_kernel). */
qtts_store *qtts_gguf_open_kernel(const char *path, int keep, qtts_err *err);
/* Whether a path names a GGUF file (by its .gguf extension). */
int qtts_gguf_is_path(const char *path);

#endif
