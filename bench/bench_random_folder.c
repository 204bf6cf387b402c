/* Writes a model folder at the real 0.6B / 1.7B CustomVoice dimensions with
 * seeded random weights, laid out as the official checkpoint (bf16
 * model.safetensors, f32 speech_tokenizer/model.safetensors), so a cold
 * start can be measured from a folder without downloading the weights.
 * The text files (configs, tokenizer) are the caller's: bench/cold_start.sh
 * patches a tiny fixture's config.json to the real dimensions.
 *
 *   bench_random_folder OUT_DIR [0.6b|1.7b] [seed]
 *
 * Writes OUT_DIR/model.safetensors and OUT_DIR/speech_tokenizer/model.safetensors. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/store.h"
#include "model/codec_random.h"
#include "model/model_random.h"

static const char *st_dtype(qtts_dtype t) {
    switch (t) {
    case QTTS_F32: return "F32";
    case QTTS_BF16: return "BF16";
    case QTTS_F16: return "F16";
    case QTTS_I32: return "I32";
    default: return NULL;
    }
}

/* A safetensors file: 8-byte little-endian header length, the JSON header,
 * then every tensor's bytes in store order. */
static int write_safetensors(const char *path, const qtts_store *st) {
    size_t cap = 1 << 20, len = 0, off = 0;
    char *hdr = malloc(cap);
    if (!hdr) return -1;
    len += (size_t)snprintf(hdr, cap, "{");
    for (int i = 0; i < qtts_store_count(st); i++) {
        const qtts_tensor *t = qtts_store_at(st, i);
        const char *dt = st_dtype(t->type);
        if (!dt) {
            fprintf(stderr, "%s: tensor %s has type %s (no safetensors name)\n", path, t->name,
                    qtts_dtype_name(t->type));
            free(hdr);
            return -1;
        }
        if (cap - len < 1024) {
            char *n = realloc(hdr, cap *= 2);
            if (!n) {
                free(hdr);
                return -1;
            }
            hdr = n;
        }
        len += (size_t)snprintf(hdr + len, cap - len, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[", i ? "," : "", t->name, dt);
        for (int d = 0; d < t->ndim; d++)
            len += (size_t)snprintf(hdr + len, cap - len, d ? ",%lld" : "%lld", (long long)t->shape[d]);
        len += (size_t)snprintf(hdr + len, cap - len, "],\"data_offsets\":[%zu,%zu]}", off, off + t->nbytes);
        off += t->nbytes;
    }
    len += (size_t)snprintf(hdr + len, cap - len, "}");
    while (len % 8) hdr[len++] = ' ';
    FILE *f = fopen(path, "wb");
    int ok = f != NULL;
    unsigned char n8[8];
    for (int i = 0; i < 8; i++) n8[i] = (unsigned char)((uint64_t)len >> (8 * i));
    ok = ok && fwrite(n8, 1, 8, f) == 8 && fwrite(hdr, 1, len, f) == len;
    for (int i = 0; ok && i < qtts_store_count(st); i++) {
        const qtts_tensor *t = qtts_store_at(st, i);
        ok = fwrite(t->data, 1, t->nbytes, f) == t->nbytes;
    }
    if (f && fclose(f)) ok = 0;
    free(hdr);
    if (!ok) fprintf(stderr, "%s: %s\n", path, strerror(errno));
    return ok ? 0 : -1;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s OUT_DIR [0.6b|1.7b] [seed]\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1], *size = argc > 2 ? argv[2] : "0.6b";
    const uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;
    qtts_err err = {0};
    qtts_model_config mc;
    qtts_codec_config cc;
    qtts_codec_config_real(&cc);
    char path[4096];
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/speech_tokenizer", dir);
    mkdir(path, 0755);
    if (qtts_model_random_config(&mc, size, QTTS_VARIANT_CUSTOM_VOICE, &err)) goto fail;
    qtts_store *st = qtts_model_random_store(&mc, QTTS_BF16, seed, &err);
    if (!st) goto fail;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    int rc = write_safetensors(path, st);
    qtts_store_free(st);
    if (rc) return 1;
    if (!(st = qtts_codec_random_store(&cc, seed, &err))) goto fail;
    snprintf(path, sizeof path, "%s/speech_tokenizer/model.safetensors", dir);
    rc = write_safetensors(path, st);
    qtts_store_free(st);
    return rc ? 1 : 0;
fail:
    fprintf(stderr, "bench_random_folder: %s\n", err.msg);
    return 1;
}
