/* Any byte string given to the GGUF parser yields tensors that lie inside the
 * buffer and metadata whose strings/arrays lie inside it, or a clean error:
 * one printable line, whatever control characters the file's names hold.
 * Matrices stored in the kernels' layout (io/kernel_layout.h) are put back
 * into rows or kept as views inside the buffer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/gguf.h"

static void touch(const uint8_t *data, size_t size, const void *p, size_t n) {
    const uint8_t *q = p;
    if (n && (q < data || q + n > data + size)) abort();
    volatile uint8_t sink = 0;
    for (size_t k = 0; k < n; k++) sink ^= q[k];
    (void)sink;
}

static void check_printable(const qtts_err *err) {
    for (const char *c = err->msg; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    qtts_err err = {0};
    qtts_gguf *g = qtts_gguf_parse(data, size, "fuzz", &err);
    check_printable(&err);
    if (!g) {
        if (!err.msg[0]) abort();
        return 0;
    }
    for (int i = 0; i < qtts_gguf_n_tensors(g); i++) {
        const qtts_tensor *t = qtts_gguf_tensor(g, i);
        touch(data, size, t->data, t->nbytes);
    }
    for (int i = 0; i < qtts_gguf_n_kv(g); i++) {
        const char *key = qtts_gguf_kv_key(g, i);
        size_t len;
        const char *s = qtts_gguf_get_str(g, key, &len);
        if (s) touch(data, size, s, len);
        int64_t iv;
        double fv;
        (void)qtts_gguf_get_int(g, key, &iv, &err);
        (void)qtts_gguf_get_float(g, key, &fv, &err);
        qtts_gguf_type et;
        uint64_t cnt;
        const void *arr;
        if (qtts_gguf_get_arr(g, key, &et, &cnt, &arr, &err) == 0) {
            if (et == QTTS_GGUF_STRING) {
                for (uint64_t k = 0; k < cnt && k < 1000; k++) {
                    s = qtts_gguf_get_arr_str(g, key, k, &len);
                    if (!s) abort();
                    touch(data, size, s, len);
                }
            }
        }
    }
    check_printable(&err);
    /* rows (matrices in the kernels' layout put back) and, as the engine loader reads a file, kept as they lie */
    for (int keep = 0; keep < 2; keep++) {
        qtts_store *st = qtts_store_new(&err);
        if (st && qtts_gguf_add_to_store_kernel(g, st, keep, &err) == 0)
            for (int i = 0; i < qtts_store_count(st); i++) {
                const qtts_tensor *t = qtts_store_at(st, i);
                if (t->interleave) touch(data, size, t->data, t->nbytes);
            }
        check_printable(&err);
        qtts_store_free(st);
    }
    qtts_gguf_free(g);
    return 0;
}
