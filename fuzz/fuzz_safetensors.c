/* Any byte string given to the safetensors parser yields a store whose tensors
 * all lie inside the buffer, or a clean error. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    qtts_err err = {0};
    qtts_store *st = qtts_store_new(&err);
    if (!st) return 0;
    if (qtts_store_parse_safetensors(st, "fuzz", data, size, &err) == 0) {
        for (int i = 0; i < qtts_store_count(st); i++) {
            const qtts_tensor *t = qtts_store_at(st, i);
            const uint8_t *p = t->data;
            if (p < data || p + t->nbytes > data + size) abort();
            volatile uint8_t sink = 0;
            for (size_t k = 0; k < t->nbytes; k++) sink ^= p[k];
            (void)sink;
        }
    }
    qtts_store_free(st);
    return 0;
}
