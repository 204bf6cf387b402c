#include "server/b64.h"

#include <stdlib.h>
#include <string.h>

static const char k_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t srv_b64_encoded_len(size_t n) { return (n + 2) / 3 * 4; }

void srv_b64_encode(const void *in, size_t n, char *out) {
    const unsigned char *p = in;
    size_t o = 0, i = 0;
    for (; i + 3 <= n; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
        out[o++] = k_alphabet[v >> 18 & 63];
        out[o++] = k_alphabet[v >> 12 & 63];
        out[o++] = k_alphabet[v >> 6 & 63];
        out[o++] = k_alphabet[v & 63];
    }
    if (n - i == 1) {
        unsigned v = (unsigned)p[i] << 16;
        out[o++] = k_alphabet[v >> 18 & 63];
        out[o++] = k_alphabet[v >> 12 & 63];
        out[o++] = '=';
        out[o++] = '=';
    } else if (n - i == 2) {
        unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8;
        out[o++] = k_alphabet[v >> 18 & 63];
        out[o++] = k_alphabet[v >> 12 & 63];
        out[o++] = k_alphabet[v >> 6 & 63];
        out[o++] = '=';
    }
    out[o] = 0;
}

static int b64_value(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62; /* '-' and '_': URL-safe variant */
    if (c == '/' || c == '_') return 63;
    return -1;
}

unsigned char *srv_b64_decode(const char *text, size_t len, size_t *out_len, const char **why) {
    const char *why_local;
    if (!why) why = &why_local;
    *out_len = 0;
    if (len >= 5 && !strncmp(text, "data:", 5)) {
        const char *comma = memchr(text, ',', len);
        if (!comma) {
            *why = "data URL without a ','";
            return NULL;
        }
        size_t head = (size_t)(comma - text);
        if (head < 7 || memcmp(comma - 7, ";base64", 7) != 0) {
            *why = "data URL is not base64-encoded";
            return NULL;
        }
        len -= head + 1;
        text = comma + 1;
    }
    unsigned char *out = malloc(len / 4 * 3 + 3);
    if (!out) {
        *why = "out of memory";
        return NULL;
    }
    size_t o = 0;
    unsigned acc = 0;
    int bits = 0, pad = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
        if (c == '=') {
            pad++;
            continue;
        }
        int v = b64_value(c);
        if (v < 0 || pad) {
            free(out);
            *why = v < 0 ? "invalid base64 character" : "base64 data after '=' padding";
            return NULL;
        }
        acc = acc << 6 | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    if (bits >= 6 || pad > 2) { /* one dangling character cannot encode a byte */
        free(out);
        *why = "truncated base64 data";
        return NULL;
    }
    *out_len = o;
    return out;
}
