/* Stored-entry ZIP writer (see zip_store.h): local headers, data, the
 * central directory and its end record (PKWARE APPNOTE 4.3). */
#include "support/zip_store.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint32_t crc32_of(const unsigned char *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}

static unsigned char *put16(unsigned char *p, unsigned v) {
    p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8);
    return p + 2;
}

static unsigned char *put32(unsigned char *p, uint32_t v) {
    return put16(put16(p, v & 0xFFFF), v >> 16);
}

unsigned char *zip_store(const zip_entry *e, size_t n, size_t *len) {
    size_t total = 22;
    for (size_t i = 0; i < n; i++) total += 30 + 46 + 2 * strlen(e[i].name) + strlen(e[i].data);
    unsigned char *z = malloc(total), *p = z;
    uint32_t *offs = calloc(n ? n : 1, sizeof *offs);
    if (!z || !offs) {
        free(z);
        free(offs);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) { /* local file headers and data */
        size_t nl = strlen(e[i].name), dl = strlen(e[i].data);
        offs[i] = (uint32_t)(p - z);
        p = put32(p, 0x04034b50);
        p = put16(p, 10), p = put16(p, 0), p = put16(p, 0), p = put16(p, 0), p = put16(p, 0x21);
        p = put32(p, crc32_of((const unsigned char *)e[i].data, dl));
        p = put32(p, (uint32_t)dl), p = put32(p, (uint32_t)dl);
        p = put16(p, (unsigned)nl), p = put16(p, 0);
        memcpy(p, e[i].name, nl), p += nl;
        memcpy(p, e[i].data, dl), p += dl;
    }
    uint32_t cd = (uint32_t)(p - z);
    for (size_t i = 0; i < n; i++) { /* central directory */
        size_t nl = strlen(e[i].name), dl = strlen(e[i].data);
        p = put32(p, 0x02014b50);
        p = put16(p, 20), p = put16(p, 10), p = put16(p, 0), p = put16(p, 0), p = put16(p, 0), p = put16(p, 0x21);
        p = put32(p, crc32_of((const unsigned char *)e[i].data, dl));
        p = put32(p, (uint32_t)dl), p = put32(p, (uint32_t)dl);
        p = put16(p, (unsigned)nl), p = put16(p, 0), p = put16(p, 0), p = put16(p, 0), p = put16(p, 0);
        p = put32(p, 0), p = put32(p, offs[i]);
        memcpy(p, e[i].name, nl), p += nl;
    }
    uint32_t cd_len = (uint32_t)(p - z) - cd;
    p = put32(p, 0x06054b50);
    p = put16(p, 0), p = put16(p, 0), p = put16(p, (unsigned)n), p = put16(p, (unsigned)n);
    p = put32(p, cd_len), p = put32(p, cd), p = put16(p, 0);
    free(offs);
    *len = (size_t)(p - z);
    return z;
}
