/* GGUF files whose names carry control characters (a newline to forge a log
 * line, an ANSI escape to rewrite the terminal): every error they cause is
 * one printable line, the characters shown as \xNN. Crafted here: a metadata
 * key of an unknown value type, a duplicated key, a tensor of too many
 * dimensions and a duplicated tensor, parsed from memory; and a written file
 * whose architecture string and tensor name hold them, loaded as a model
 * through the public API (layout detection's error). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "io/gguf.h"
#include "io/store.h"
#include "qtts.h"
#include "support/test_util.h"

typedef struct {
    unsigned char b[4096];
    size_t n;
} buf;

static void put(buf *b, const void *p, size_t n) {
    if (b->n + n <= sizeof b->b) memcpy(b->b + b->n, p, n);
    b->n += n;
}
static void u32(buf *b, uint32_t v) { put(b, &v, 4); }
static void u64(buf *b, uint64_t v) { put(b, &v, 8); }
static void str(buf *b, const char *s) {
    u64(b, strlen(s));
    put(b, s, strlen(s));
}

static const char hostile[] = "x\n[2026-12-06] INFO: all good\x1b[2J\r\x7f";

static int printable(const char *m) {
    for (; *m; m++)
        if ((unsigned char)*m < 0x20 || *m == 0x7f) return 0;
    return 1;
}

static void check_msg(const char *msg, const char *what) {
    TEST_CHECK(msg[0] && printable(msg), "%s: control characters in '%s'", what, msg);
    TEST_CHECK(strstr(msg, "\\x0a") && strstr(msg, "\\x1b"), "%s: not escaped: '%s'", what, msg);
    printf("  %-30s %s\n", what, msg);
}

static void check_parse(const buf *b, const char *what) {
    qtts_err err = {0};
    qtts_gguf *g = qtts_gguf_parse(b->b, b->n, "crafted.gguf", &err);
    TEST_CHECK(!g, "%s: parsed", what);
    qtts_gguf_free(g);
    check_msg(err.msg, what);
}

static void header(buf *b, uint64_t n_tensors, uint64_t n_kv) {
    b->n = 0;
    put(b, "GGUF", 4);
    u32(b, 3);
    u64(b, n_tensors);
    u64(b, n_kv);
}

int main(void) {
    buf b;
    header(&b, 0, 1); /* a key of value type 99 */
    str(&b, hostile);
    u32(&b, 99);
    check_parse(&b, "key of an unknown type");

    header(&b, 0, 2); /* the same key twice */
    for (int i = 0; i < 2; i++) {
        str(&b, hostile);
        u32(&b, 4); /* u32 */
        u32(&b, 7);
    }
    check_parse(&b, "duplicated key");

    header(&b, 1, 0); /* a tensor of 9 dimensions */
    str(&b, hostile);
    u32(&b, 9);
    check_parse(&b, "tensor of 9 dimensions");

    header(&b, 2, 0); /* the same tensor twice */
    for (int i = 0; i < 2; i++) {
        str(&b, hostile);
        u32(&b, 1);
        u64(&b, 8);
        u32(&b, 0); /* f32 */
        u64(&b, (uint64_t)i * 32);
    }
    while (b.n % 32) put(&b, "", 1);
    for (int i = 0; i < 64; i++) put(&b, "", 1);
    check_parse(&b, "duplicated tensor");

    /* a written file, loaded as a model: the layout detection names what it found */
    char tmp[] = "/tmp/qtts_gguf_hostile_XXXXXX", path[600];
    if (!mkdtemp(tmp)) return 1;
    snprintf(path, sizeof path, "%s/model.gguf", tmp);
    qtts_err err = {0};
    qtts_store *st = qtts_store_new(&err);
    float w[8] = {0};
    const int64_t shape[1] = {8};
    qtts_gguf_kv kv[1] = {qtts_gguf_kv_str("general.architecture", hostile, strlen(hostile))};
    TEST_CHECK(st && !qtts_store_add(st, hostile, QTTS_F32, 1, shape, w, 0, &err) &&
                   !qtts_gguf_write(path, st, kv, 1, &err),
               "write: %s", err.msg);
    qtts_store_free(st);
    qtts_engine_params p;
    qtts_engine_params_default(&p);
    p.model_path = path;
    p.n_threads = 1;
    qtts_error qerr = {0};
    qtts_engine *e = qtts_engine_create(&p, &qerr);
    TEST_CHECK(!e, "a hostile file loaded");
    qtts_engine_free(e);
    TEST_CHECK(qerr.message[0] && printable(qerr.message), "engine: control characters in '%s'", qerr.message);
    printf("  %-30s %s\n", "loaded as a model", qerr.message);
    TEST_CHECK(rm_rf(tmp) == 0, "cleanup");
    return test_finish("test_gguf_hostile");
}
