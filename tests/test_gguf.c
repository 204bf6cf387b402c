/* GGUF: a store with f32/f16/bf16/q8_0/q4_k tensors and every metadata kind
 * round-trips byte-exactly through qtts_gguf_write / qtts_gguf_load /
 * qtts_store_open; every prefix of the file and a set of hand-made corrupt
 * files fail with one clear message. Lookups into a mapped table (an
 * embedding) leave none of its pages in the RSS. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "io/gguf.h"
#include "io/store.h"
#include "model/talker.h"
#include "tensor/quant.h"

/* ---- a tiny GGUF builder for hand-made (corrupt) files ---- */
typedef struct {
    unsigned char buf[4096];
    size_t n;
} gb;
static void gb_u(gb *b, uint64_t v, int n) {
    for (int i = 0; i < n; i++) b->buf[b->n++] = (unsigned char)(v >> (8 * i));
}
static void gb_s(gb *b, const char *s) {
    gb_u(b, strlen(s), 8);
    memcpy(b->buf + b->n, s, strlen(s));
    b->n += strlen(s);
}
static void gb_head(gb *b, uint64_t nt, uint64_t nkv) {
    b->n = 0;
    memcpy(b->buf, "GGUF", 4);
    b->n = 4;
    gb_u(b, 3, 4);
    gb_u(b, nt, 8);
    gb_u(b, nkv, 8);
}
static void gb_tensor(gb *b, const char *name, uint64_t ne0, uint64_t ne1, uint32_t type, uint64_t off) {
    gb_s(b, name);
    gb_u(b, 2, 4);
    gb_u(b, ne0, 8);
    gb_u(b, ne1, 8);
    gb_u(b, type, 4);
    gb_u(b, off, 8);
}
static void gb_pad_data(gb *b, size_t data_bytes) {
    while (b->n % 32) b->buf[b->n++] = 0;
    memset(b->buf + b->n, 0x11, data_bytes);
    b->n += data_bytes;
}

static void expect_fail(const unsigned char *buf, size_t n, const char *label, const char *needle) {
    qtts_err err = {0};
    qtts_gguf *g = qtts_gguf_parse(buf, n, "bad.gguf", &err);
    TEST_CHECK(g == NULL, "%s: corrupt file was accepted", label);
    TEST_CHECK(g != NULL || (strstr(err.msg, "bad.gguf") && strstr(err.msg, needle)),
               "%s: message '%s' lacks '%s'", label, err.msg, needle);
    if (!g) printf("  ok   %-28s -> %s\n", label, err.msg);
    qtts_gguf_free(g);
}

static void corrupt_files(void) {
    gb b;
    /* a valid baseline: one f32 tensor [2][8] */
    gb_head(&b, 1, 0);
    gb_tensor(&b, "w", 8, 2, 0, 0);
    gb_pad_data(&b, 64);
    qtts_err err = {0};
    qtts_gguf *g = qtts_gguf_parse(b.buf, b.n, "ok.gguf", &err);
    TEST_CHECK(g && qtts_gguf_n_tensors(g) == 1 && qtts_gguf_tensor(g, 0)->shape[0] == 2 &&
                   qtts_gguf_tensor(g, 0)->shape[1] == 8,
               "hand-made baseline: %s", err.msg);
    qtts_gguf_free(g);
    expect_fail(b.buf, b.n - 1, "data truncated by 1 byte", "outside");

    unsigned char bad[64];
    memcpy(bad, b.buf, sizeof bad);
    bad[0] = 'X';
    expect_fail(bad, sizeof bad, "bad magic", "bad magic");
    memcpy(bad, b.buf, sizeof bad);
    bad[4] = 1;
    expect_fail(bad, sizeof bad, "version 1", "version 1");

    gb_head(&b, 1ull << 40, 0);
    expect_fail(b.buf, b.n, "tensor count too large", "tensor count");
    gb_head(&b, 0, 1ull << 50);
    expect_fail(b.buf, b.n, "metadata count too large", "metadata count");

    gb_head(&b, 1, 0);
    gb_tensor(&b, "w", 8, 2, 0, 4096);
    gb_pad_data(&b, 64);
    expect_fail(b.buf, b.n, "offset outside the file", "outside");

    gb_head(&b, 1, 0);
    gb_tensor(&b, "w", 8, 2, 16, 0); /* IQ2_XXS: a type qtts does not read (Q6_K and the other K-quants it does) */
    gb_pad_data(&b, 64);
    expect_fail(b.buf, b.n, "unknown tensor type", "IQ2_XXS");
    gb_head(&b, 1, 0);
    gb_tensor(&b, "w", 8, 2, 99, 0);
    gb_pad_data(&b, 64);
    expect_fail(b.buf, b.n, "type id 99", "type 99");

    gb_head(&b, 1, 0);
    gb_tensor(&b, "w", 8, 2, 0, 16);
    gb_pad_data(&b, 64);
    expect_fail(b.buf, b.n, "misaligned offset", "alignment");

    gb_head(&b, 2, 0);
    gb_tensor(&b, "a", 8, 2, 0, 0);
    gb_tensor(&b, "b", 8, 2, 0, 32);
    gb_pad_data(&b, 128);
    expect_fail(b.buf, b.n, "overlapping tensors", "overlap");

    gb_head(&b, 2, 0);
    gb_tensor(&b, "a", 8, 2, 0, 0);
    gb_tensor(&b, "a", 8, 2, 0, 64);
    gb_pad_data(&b, 128);
    expect_fail(b.buf, b.n, "duplicate tensor", "appears twice");

    gb_head(&b, 1, 0);
    gb_tensor(&b, "q", 100, 2, 8, 0); /* Q8_0 rows must be multiples of 32 */
    gb_pad_data(&b, 256);
    expect_fail(b.buf, b.n, "partial quant block", "blocks");

    gb_head(&b, 1, 0);
    gb_tensor(&b, "w", 1ull << 39, 1ull << 39, 0, 0);
    gb_pad_data(&b, 64);
    expect_fail(b.buf, b.n, "huge dims", "implausibly large");

    gb_head(&b, 0, 1);
    gb_s(&b, "general.alignment");
    gb_u(&b, QTTS_GGUF_U32, 4);
    gb_u(&b, 3, 4);
    expect_fail(b.buf, b.n, "alignment not a power of 2", "alignment");

    gb_head(&b, 0, 1);
    gb_s(&b, "k");
    gb_u(&b, QTTS_GGUF_STRING, 4);
    gb_u(&b, 1ull << 20, 8);
    expect_fail(b.buf, b.n, "string past the end", "truncated");

    gb_head(&b, 0, 1);
    gb_s(&b, "k");
    gb_u(&b, QTTS_GGUF_ARRAY, 4);
    gb_u(&b, QTTS_GGUF_U32, 4);
    gb_u(&b, 1ull << 60, 8);
    expect_fail(b.buf, b.n, "array count too large", "more than the file holds");

    gb_head(&b, 0, 1);
    gb_s(&b, "k");
    gb_u(&b, QTTS_GGUF_ARRAY, 4);
    gb_u(&b, QTTS_GGUF_ARRAY, 4);
    gb_u(&b, 1, 8);
    expect_fail(b.buf, b.n, "nested array", "array of arrays");

    gb_head(&b, 0, 1);
    gb_s(&b, "k");
    gb_u(&b, 13, 4);
    gb_u(&b, 0, 8);
    expect_fail(b.buf, b.n, "unknown value type", "unknown value type");

    gb_head(&b, 0, 2);
    gb_s(&b, "k");
    gb_u(&b, QTTS_GGUF_U8, 4);
    gb_u(&b, 1, 1);
    gb_s(&b, "k");
    gb_u(&b, QTTS_GGUF_U8, 4);
    gb_u(&b, 1, 1);
    expect_fail(b.buf, b.n, "duplicate key", "appears twice");
}

static void fill(float *x, int64_t n, uint32_t seed) {
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)((int32_t)seed >> 8) / 8388608.0f;
    }
}

/* Element counts from headers never overflow (fuzz_gguf found a shape with
 * huge dimensions next to a zero one overflowing int64 in qtts_store_add). */
static void huge_shapes(void) {
    gb b;
    gb_head(&b, 1, 0);
    gb_s(&b, "empty");
    gb_u(&b, 3, 4);
    gb_u(&b, 0, 8); /* innermost first: shape [2^40, 2^40, 0] */
    gb_u(&b, (uint64_t)1 << 40, 8);
    gb_u(&b, (uint64_t)1 << 40, 8);
    gb_u(&b, 0, 4); /* F32 */
    gb_u(&b, 0, 8);
    gb_pad_data(&b, 0);
    qtts_err err = {0};
    qtts_gguf *g = qtts_gguf_parse(b.buf, b.n, "zero.gguf", &err);
    TEST_CHECK(g != NULL, "zero-element tensor: %s", err.msg);
    qtts_store *st = qtts_store_new(&err);
    if (g && st) {
        TEST_CHECK(qtts_gguf_add_to_store(g, st, &err) == 0, "zero-element tensor into a store: %s", err.msg);
        const qtts_tensor *t = qtts_store_find(st, "empty");
        TEST_CHECK(t && t->nbytes == 0, "zero-element tensor has %zu bytes", t ? t->nbytes : (size_t)-1);
    }
    float x = 0;
    int64_t over[2] = {(int64_t)1 << 32, (int64_t)1 << 32}, wide[2] = {(int64_t)1 << 31, (int64_t)1 << 31},
            neg[2] = {-1, 2};
    TEST_CHECK(qtts_store_add(st, "over", QTTS_F32, 2, over, &x, 0, &err) == -1 && strstr(err.msg, "too many"),
               "2^64 elements: %s", err.msg);
    TEST_CHECK(qtts_store_add(st, "wide", QTTS_F32, 2, wide, &x, 0, &err) == -1 && strstr(err.msg, "too large"),
               "2^64 bytes: %s", err.msg);
    TEST_CHECK(qtts_store_add(st, "neg", QTTS_F32, 2, neg, &x, 0, &err) == -1 && strstr(err.msg, "negative"),
               "negative dimension: %s", err.msg);
    qtts_store_free(st);
    qtts_gguf_free(g);
}

/* Pages of [p, p+len) mapped into this process (/proc/self/pagemap bit 63); -1 where that cannot be read. */
static long present_pages(const void *p, size_t len) {
    FILE *f = fopen("/proc/self/pagemap", "rb");
    if (!f) return -1;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    long n = 0;
    for (uintptr_t a = (uintptr_t)p & ~(page - 1); a < (uintptr_t)p + len; a += page) {
        uint64_t v = 0;
        if (fseek(f, (long)(a / page * 8), SEEK_SET) || fread(&v, 8, 1, f) != 1) {
            n = -1;
            break;
        }
        n += (long)(v >> 63 & 1);
    }
    fclose(f);
    return n;
}

/* An embedding lookup (qtts_tensor_row_f32) into a mapped table reads the
 * right row and then drops what the read mapped in (the kernel maps the
 * 64 KiB around a fault); into an in-memory table it changes nothing. */
static void lookup_release(void) {
    qtts_err err = {0};
    enum { ROWS = 256, COLS = 1024 }; /* bf16: 2 KiB rows, 512 KiB */
    uint16_t *emb = malloc(sizeof(uint16_t) * ROWS * COLS);
    float *row = malloc(sizeof(float) * COLS);
    TEST_CHECK(emb && row, "alloc");
    if (!emb || !row) return;
    for (int i = 0; i < ROWS * COLS; i++) emb[i] = qtts_f32_to_bf16((float)(i % 977) * 0.01f - 4.0f);
    qtts_store *st = qtts_store_new(&err);
    int64_t shape[2] = {ROWS, COLS};
    TEST_CHECK(st && qtts_store_add(st, "emb", QTTS_BF16, 2, shape, emb, 0, &err) == 0, "%s", err.msg);
    const qtts_tensor *mem = qtts_store_find(st, "emb");
    TEST_CHECK(mem && qtts_tensor_row_f32(mem, 7, row, &err) == 0 && row[3] == qtts_bf16_to_f32(emb[7 * COLS + 3]),
               "in-memory lookup: %s", err.msg);
    char dir[] = "/tmp/qtts_gguf_XXXXXX";
    TEST_CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char path[256];
    snprintf(path, sizeof path, "%s/emb.gguf", dir);
    TEST_CHECK(qtts_gguf_write(path, st, NULL, 0, &err) == 0, "write: %s", err.msg);
    qtts_store *mapped = qtts_gguf_open(path, &err);
    TEST_CHECK(mapped != NULL, "open: %s", err.msg);
    const qtts_tensor *t = mapped ? qtts_store_find(mapped, "emb") : NULL;
    TEST_CHECK(t && t->mapped, "the table lies in the file mapping");
    if (t) {
        qtts_store_release_pages(mapped);
        volatile const uint16_t *d = t->data;
        (void)d[100 * COLS]; /* a plain read: the control */
        const long touched = present_pages(t->data, t->nbytes);
        if (touched <= 0) {
            printf("  note: /proc/self/pagemap shows no page after a read (unreadable or emulated): "
                   "residency not checked\n");
        }
        qtts_tensor_release_lookup(t);
        int right = 1;
        const int rows[] = {0, 1, 100, 131, 200, ROWS - 1};
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
            TEST_CHECK(qtts_tensor_row_f32(t, rows[i], row, &err) == 0, "lookup: %s", err.msg);
            for (int c = 0; c < COLS; c++) right &= row[c] == qtts_bf16_to_f32(emb[rows[i] * COLS + c]);
        }
        TEST_CHECK(right, "mapped lookups read the stored rows");
        /* several rows in one call (the text embedding's prompt), released once; a bad row fails the call */
        const int32_t many[] = {5, 250, 5, 64, 129};
        const int nm = (int)(sizeof many / sizeof many[0]);
        float *rows_out = malloc(sizeof(float) * COLS * nm);
        TEST_CHECK(rows_out && qtts_tensor_rows_f32(t, many, nm, rows_out, &err) == 0, "rows lookup: %s", err.msg);
        if (rows_out) {
            right = 1;
            for (int i = 0; i < nm; i++)
                for (int c = 0; c < COLS; c++)
                    right &= rows_out[i * COLS + c] == qtts_bf16_to_f32(emb[many[i] * COLS + c]);
            TEST_CHECK(right, "a rows lookup reads each stored row in order");
            const int32_t bad[] = {3, ROWS};
            TEST_CHECK(qtts_tensor_rows_f32(t, bad, 2, rows_out, &err) == -1 && strstr(err.msg, "out of range"),
                       "a row past the table: %s", err.msg);
        }
        free(rows_out);
        const long left = present_pages(t->data, t->nbytes);
        if (touched > 0) {
            /* only the tensor's first and last page may be shared with other data and kept */
            TEST_CHECK(touched >= 2 && left <= 2, "pages of the table mapped: %ld after one read, %ld after lookups",
                       touched, left);
        }
    }
    qtts_store_free(mapped);
    qtts_store_free(st);
    unlink(path);
    rmdir(dir);
    free(emb);
    free(row);
}

/* Copies out of a mapped file are read from the file (qtts_store_read), not
 * through the mapping: the bytes are the stored ones and the mapping's pages
 * stay out of the RSS; memory outside every mapping is copied as it is. */
static void file_reads(void) {
    qtts_err err = {0};
    enum { ROWS = 96, COLS = 1024 }; /* f32: 384 KiB */
    float *w = malloc(sizeof(float) * ROWS * COLS), *got = malloc(sizeof(float) * ROWS * COLS);
    TEST_CHECK(w && got, "alloc");
    if (!w || !got) {
        free(w), free(got);
        return;
    }
    fill(w, ROWS * COLS, 7);
    qtts_store *st = qtts_store_new(&err);
    int64_t shape[2] = {ROWS, COLS};
    TEST_CHECK(st && qtts_store_add(st, "w", QTTS_F32, 2, shape, w, 0, &err) == 0, "%s", err.msg);
    char dir[] = "/tmp/qtts_gguf_read_XXXXXX", path[256];
    TEST_CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    snprintf(path, sizeof path, "%s/w.gguf", dir);
    TEST_CHECK(qtts_gguf_write(path, st, NULL, 0, &err) == 0, "write: %s", err.msg);
    qtts_store *mapped = qtts_gguf_open(path, &err);
    const qtts_tensor *t = mapped ? qtts_store_find(mapped, "w") : NULL;
    TEST_CHECK(t && t->mapped, "open: %s", err.msg);
    if (t) {
        qtts_store_release_pages(mapped);
        memset(got, 0, sizeof(float) * ROWS * COLS);
        qtts_store_read(mapped, t->data, t->nbytes, got);
        TEST_CHECK(!memcmp(got, w, t->nbytes), "a whole tensor read from the file holds the stored bytes");
        /* of its 96 pages only the first and last, which it shares with what the open read, may be present */
        const long present = present_pages(t->data, t->nbytes);
        TEST_CHECK(present <= 2, "its mapping's pages are not faulted in by the read (%ld present)", present);
        qtts_store_read(mapped, (const float *)t->data + 1000, 4096, got);
        TEST_CHECK(!memcmp(got, w + 1000, 4096), "a slice from an unaligned offset");
        float copy_out[8];
        qtts_store_read(mapped, w + 5, sizeof copy_out, copy_out);
        TEST_CHECK(!memcmp(copy_out, w + 5, sizeof copy_out), "memory outside the mappings is copied");
        float *f = qtts_store_tensor_to_f32(mapped, t, &err);
        TEST_CHECK(f && !memcmp(f, w, t->nbytes), "qtts_store_tensor_to_f32 of a mapped tensor: %s", err.msg);
        memset(got, 0, t->nbytes);
        TEST_CHECK(qtts_store_tensor_f32_into(mapped, t, got, &err) == 0 && !memcmp(got, w, t->nbytes),
                   "qtts_store_tensor_f32_into of a mapped tensor: %s", err.msg);
        free(f);
    }
    qtts_store_free(mapped);
    qtts_store_free(st);
    unlink(path);
    rmdir(dir);
    free(w);
    free(got);
}

/* A table in an anonymous mapping the store keeps (the benchmark's random
 * text embedding) is not `mapped`: releasing pages after lookups must not
 * drop it, which would zero its rows. */
static void anonymous_mapping_kept(void) {
    qtts_err err = {0};
    enum { ROWS = 64, COLS = 1024 };
    const size_t bytes = sizeof(uint16_t) * ROWS * COLS;
    uint16_t *map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    TEST_CHECK(map != MAP_FAILED, "mmap");
    if (map == MAP_FAILED) return;
    for (int i = 0; i < ROWS * COLS; i++) map[i] = qtts_f32_to_bf16(1.0f + (float)(i % 13));
    qtts_store *st = qtts_store_new(&err);
    int64_t shape[2] = {ROWS, COLS};
    TEST_CHECK(st && qtts_store_keep_mapping(st, map, bytes, QTTS_ANONYMOUS_MAPPING, &err) == 0 &&
                   qtts_store_add(st, "emb", QTTS_BF16, 2, shape, map, 0, &err) == 0,
               "store: %s", err.msg);
    const qtts_tensor *t = st ? qtts_store_find(st, "emb") : NULL;
    TEST_CHECK(t && !t->mapped, "an anonymous mapping's tensor is not marked droppable");
    if (t) {
        float row[COLS];
        int right = 1;
        for (int pass = 0; pass < 2; pass++) {
            qtts_store_release_pages(st);
            TEST_CHECK(qtts_tensor_row_f32(t, 9, row, &err) == 0, "lookup: %s", err.msg);
            for (int c = 0; c < COLS; c++) right &= row[c] == 1.0f + (float)((9 * COLS + c) % 13);
        }
        TEST_CHECK(right, "rows of an anonymous table survive releases and lookups");
    }
    qtts_store_free(st); /* unmaps it */
}

int main(void) {
    corrupt_files();
    huge_shapes();
    lookup_release();
    file_reads();
    anonymous_mapping_kept();

    /* ---- round trip ---- */
    qtts_err err = {0};
    qtts_store *st = qtts_store_new(&err);
    float f32v[2 * 3 * 4];
    fill(f32v, 24, 1);
    uint16_t bf[4 * 6], hf[7];
    float tmp[1024];
    fill(tmp, 1024, 2);
    for (int i = 0; i < 24; i++) bf[i] = qtts_f32_to_bf16(tmp[i]);
    for (int i = 0; i < 7; i++) hf[i] = qtts_f32_to_f16(tmp[i]);
    qtts_block_q8_0 q8[2 * 2];
    qtts_block_q4_k q4[3 * 2];
    for (int r = 0; r < 2; r++) qtts_quantize_row(QTTS_Q8_0, tmp + 64 * r, q8 + 2 * r, 64);
    for (int r = 0; r < 3; r++) qtts_quantize_row(QTTS_Q4_K, tmp + 16 * r, q4 + 2 * r, 512);
    int64_t s3[3] = {2, 3, 4}, sbf[2] = {4, 6}, shf[1] = {7}, sq8[2] = {2, 64}, sq4[2] = {3, 512};
    TEST_CHECK(qtts_store_add(st, "a.f32", QTTS_F32, 3, s3, f32v, 0, &err) == 0, "%s", err.msg);
    TEST_CHECK(qtts_store_add(st, "b.bf16", QTTS_BF16, 2, sbf, bf, 0, &err) == 0, "%s", err.msg);
    TEST_CHECK(qtts_store_add(st, "c.f16", QTTS_F16, 1, shf, hf, 0, &err) == 0, "%s", err.msg);
    TEST_CHECK(qtts_store_add(st, "d.q8_0", QTTS_Q8_0, 2, sq8, q8, 0, &err) == 0, "%s", err.msg);
    TEST_CHECK(qtts_store_add(st, "e.q4_k", QTTS_Q4_K, 2, sq4, q4, 0, &err) == 0, "%s", err.msg);

    const char *config = "{\"tts_model_type\": \"base\", \"talker_config\": {\"hidden_size\": 32}}";
    int32_t ints[5] = {1, -2, 3, -4, 2147483647};
    const char *strs[3] = {"alpha", "", "\xc3\xa9t\xc3\xa9"};
    qtts_gguf_kv kv[8];
    kv[0] = qtts_gguf_kv_str("general.architecture", "qwen3-tts", 9);
    kv[1] = qtts_gguf_kv_str(QTTS_GGUF_KEY_CONFIG_JSON, config, strlen(config));
    kv[2] = qtts_gguf_kv_u32("qtts.version", 7);
    kv[3] = qtts_gguf_kv_i64("qtts.neg", -1234567890123ll);
    kv[4] = qtts_gguf_kv_f32("qtts.eps", 1e-6f);
    kv[5] = qtts_gguf_kv_bool("qtts.flag", 1);
    kv[6] = qtts_gguf_kv_arr("qtts.ints", QTTS_GGUF_I32, 5, ints);
    kv[7] = qtts_gguf_kv_arr_str("qtts.strs", 3, strs, NULL);

    char dir[] = "/tmp/qtts_gguf_XXXXXX";
    TEST_CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char path[256];
    snprintf(path, sizeof path, "%s/m.gguf", dir);
    TEST_CHECK(qtts_gguf_write(path, st, kv, 8, &err) == 0, "write: %s", err.msg);
    qtts_gguf *g = qtts_gguf_load(path, &err);
    TEST_CHECK(g != NULL, "load: %s", err.msg);
    if (g) {
        TEST_CHECK(qtts_gguf_version(g) == 3 && qtts_gguf_alignment(g) == 32, "version/alignment");
        TEST_CHECK(qtts_gguf_n_tensors(g) == 5 && qtts_gguf_n_kv(g) == 9, "counts %d %d", qtts_gguf_n_tensors(g),
                   qtts_gguf_n_kv(g));
        for (int i = 0; i < qtts_store_count(st) && i < qtts_gguf_n_tensors(g); i++) {
            const qtts_tensor *a = qtts_store_at(st, i), *b = qtts_gguf_tensor(g, i);
            int same = !strcmp(a->name, b->name) && a->type == b->type && a->ndim == b->ndim &&
                       a->nbytes == b->nbytes && !memcmp(a->data, b->data, a->nbytes);
            for (int d = 0; d < a->ndim; d++) same = same && a->shape[d] == b->shape[d];
            TEST_CHECK(same, "tensor %s differs after the round trip", a->name);
            TEST_CHECK(((uintptr_t)b->data & 31) == 0, "tensor %s data not 32-byte aligned", b->name);
        }
        size_t len;
        const char *s = qtts_gguf_get_str(g, QTTS_GGUF_KEY_CONFIG_JSON, &len);
        TEST_CHECK(s && len == strlen(config) && !memcmp(s, config, len), "config_json string");
        char *dup = qtts_gguf_dup_str(g, "general.architecture", &err);
        TEST_CHECK(dup && !strcmp(dup, "qwen3-tts"), "architecture");
        free(dup);
        int64_t iv;
        double fv;
        TEST_CHECK(qtts_gguf_get_int(g, "qtts.version", &iv, &err) == 0 && iv == 7, "u32");
        TEST_CHECK(qtts_gguf_get_int(g, "qtts.neg", &iv, &err) == 0 && iv == -1234567890123ll, "i64");
        TEST_CHECK(qtts_gguf_get_int(g, "qtts.flag", &iv, &err) == 0 && iv == 1, "bool");
        TEST_CHECK(qtts_gguf_get_float(g, "qtts.eps", &fv, &err) == 0 && (float)fv == 1e-6f, "f32");
        TEST_CHECK(qtts_gguf_get_int(g, "general.alignment", &iv, &err) == 0 && iv == 32, "alignment key written");
        qtts_gguf_type et;
        uint64_t cnt;
        const void *data;
        TEST_CHECK(qtts_gguf_get_arr(g, "qtts.ints", &et, &cnt, &data, &err) == 0 && et == QTTS_GGUF_I32 &&
                       cnt == 5 && !memcmp(data, ints, sizeof ints),
                   "i32 array");
        TEST_CHECK(qtts_gguf_get_arr(g, "qtts.strs", &et, &cnt, NULL, &err) == 0 && et == QTTS_GGUF_STRING &&
                       cnt == 3,
                   "string array");
        for (int i = 0; i < 3; i++) {
            s = qtts_gguf_get_arr_str(g, "qtts.strs", (uint64_t)i, &len);
            TEST_CHECK(s && len == strlen(strs[i]) && !memcmp(s, strs[i], len), "string array element %d", i);
        }
        TEST_CHECK(qtts_gguf_get_arr_str(g, "qtts.strs", 3, &len) == NULL, "string array index out of range");
        TEST_CHECK(qtts_gguf_dup_str(g, "no.such.key", &err) == NULL && strstr(err.msg, "missing metadata key"),
                   "missing key message: %s", err.msg);
        TEST_CHECK(qtts_gguf_get_int(g, QTTS_GGUF_KEY_CONFIG_JSON, &iv, &err) == -1 && strstr(err.msg, "not an integer"),
                   "wrong type message: %s", err.msg);

        /* every proper prefix of the file is rejected cleanly */
        FILE *f = fopen(path, "rb");
        unsigned char *img = malloc(1 << 16);
        size_t n = f ? fread(img, 1, 1 << 16, f) : 0;
        if (f) fclose(f);
        int accepted = 0;
        for (size_t k = 0; k < n; k++) {
            unsigned char *cut = malloc(k ? k : 1); /* exact-size copy so ASan sees any over-read */
            memcpy(cut, img, k);
            qtts_gguf *h = qtts_gguf_parse(cut, k, "cut", &err);
            if (h) accepted++;
            qtts_gguf_free(h);
            free(cut);
        }
        TEST_CHECK(n > 1000 && accepted == 0, "%d of %zu truncated prefixes were accepted", accepted, n);
        free(img);
        qtts_gguf_free(g);
    }

    /* the store opener sees the same tensors */
    qtts_store *st2 = qtts_store_open(path, &err);
    TEST_CHECK(st2 != NULL, "qtts_store_open: %s", err.msg);
    if (st2) {
        const qtts_tensor *t = qtts_store_get2(st2, "e.q4_k", 3, 512, &err);
        TEST_CHECK(t && t->type == QTTS_Q4_K && !memcmp(t->data, q4, sizeof q4), "store q4_k tensor: %s", err.msg);
        t = qtts_store_get3(st2, "a.f32", 2, 3, 4, &err);
        TEST_CHECK(t && !memcmp(t->data, f32v, sizeof f32v), "store f32 tensor: %s", err.msg);
        qtts_store_free(st2);
    }

    /* writer input validation */
    qtts_gguf_kv dupkv[2] = {qtts_gguf_kv_u32("x", 1), qtts_gguf_kv_u32("x", 2)};
    TEST_CHECK(qtts_gguf_write(path, st, dupkv, 2, &err) == -1 && strstr(err.msg, "twice"), "duplicate key write: %s",
               err.msg);
    snprintf(path, sizeof path, "%s/no/such/dir/m.gguf", dir);
    TEST_CHECK(qtts_gguf_write(path, st, kv, 8, &err) == -1 && strstr(err.msg, "temporary"), "bad dir: %s", err.msg);

    snprintf(path, sizeof path, "%s/m.gguf", dir);
    unlink(path);
    rmdir(dir);
    qtts_store_free(st);
    return test_finish("test_gguf");
}
