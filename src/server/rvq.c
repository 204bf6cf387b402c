#include "server/rvq.h"

#include <stdlib.h>
#include <string.h>

int32_t *srv_rvq_unpack(const void *data, size_t size, size_t *n_frames, const char **why) {
    *n_frames = 0;
    if (size == 0 || size % SRV_RVQ_FRAME_BYTES != 0) {
        *why = "rvq data size is not a positive multiple of 22 bytes (16 codes x 11 bits per frame)";
        return NULL;
    }
    size_t t = size / SRV_RVQ_FRAME_BYTES;
    int32_t *codes = malloc(t * SRV_RVQ_CODEBOOKS * sizeof *codes);
    if (!codes) {
        *why = "out of memory";
        return NULL;
    }
    const unsigned char *p = data;
    /* Code number k of the stream is codebook k / t, frame k % t. */
    for (size_t k = 0; k < t * SRV_RVQ_CODEBOOKS; k++) {
        size_t bit = k * SRV_RVQ_BITS;
        uint32_t v = 0;
        for (int b = 0; b < SRV_RVQ_BITS; b++, bit++) v |= (uint32_t)(p[bit >> 3] >> (bit & 7) & 1) << b;
        codes[(k % t) * SRV_RVQ_CODEBOOKS + k / t] = (int32_t)v;
    }
    *n_frames = t;
    return codes;
}

unsigned char *srv_rvq_pack(const int32_t *codes, size_t n_frames, size_t *size, const char **why) {
    *size = n_frames * SRV_RVQ_FRAME_BYTES;
    unsigned char *p = calloc(*size ? *size : 1, 1);
    if (!p) {
        *why = "out of memory";
        return NULL;
    }
    for (size_t k = 0; k < n_frames * SRV_RVQ_CODEBOOKS; k++) {
        int32_t v = codes[(k % n_frames) * SRV_RVQ_CODEBOOKS + k / n_frames];
        if (v < 0 || v >= 1 << SRV_RVQ_BITS) {
            free(p);
            *why = "code out of the 11-bit range";
            return NULL;
        }
        size_t bit = k * SRV_RVQ_BITS;
        for (int b = 0; b < SRV_RVQ_BITS; b++, bit++)
            p[bit >> 3] |= (unsigned char)(((uint32_t)v >> b & 1) << (bit & 7));
    }
    return p;
}

float *srv_spk_unpack(const void *data, size_t size, size_t *n, const char **why) {
    *n = 0;
    if (size == 0 || size % 4) {
        *why = "spk data size is not a positive multiple of 4 bytes (float32)";
        return NULL;
    }
    float *x = malloc(size);
    if (!x) {
        *why = "out of memory";
        return NULL;
    }
    const unsigned char *p = data;
    for (size_t i = 0; i < size / 4; i++) {
        uint32_t u = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 | (uint32_t)p[4 * i + 2] << 16 |
                     (uint32_t)p[4 * i + 3] << 24;
        memcpy(&x[i], &u, 4);
    }
    *n = size / 4;
    return x;
}

unsigned char *srv_spk_pack(const float *x, size_t n, size_t *size) {
    *size = n * 4;
    unsigned char *p = malloc(*size ? *size : 1);
    if (!p) return NULL;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], 4);
        p[4 * i] = (unsigned char)u;
        p[4 * i + 1] = (unsigned char)(u >> 8);
        p[4 * i + 2] = (unsigned char)(u >> 16);
        p[4 * i + 3] = (unsigned char)(u >> 24);
    }
    return p;
}
