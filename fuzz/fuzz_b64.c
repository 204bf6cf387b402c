/* The server's base64 decoder (srv_b64_decode: whitespace, optional padding,
 * the URL-safe alphabet, "data:...;base64," URLs) on arbitrary text, and the
 * encoder on arbitrary bytes. Beyond "no crash":
 *  - decoding never yields more than 3 bytes per 4 characters, and a failure
 *    always says why;
 *  - decode(encode(x)) == x, also after the encoding is re-wrapped the ways
 *    clients send it (line breaks, no padding, URL-safe alphabet, a data URL);
 *  - whatever decodes, re-encoded, decodes to the same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/b64.h"

static void expect_decodes_to(const char *text, size_t len, const uint8_t *want, size_t want_len) {
    size_t n = 0;
    const char *why = NULL;
    unsigned char *got = srv_b64_decode(text, len, &n, &why);
    if (!got || n != want_len || (n && memcmp(got, want, n))) abort();
    free(got);
}

/* The encoding of x re-wrapped by style: 0 as is, 1 line breaks every 76
 * characters (MIME) and a trailing CRLF, 2 padding dropped, 3 URL-safe
 * alphabet, 4 a data URL, 5 spaces and tabs sprinkled in. */
static void round_trip(const uint8_t *x, size_t n, int style) {
    size_t elen = srv_b64_encoded_len(n);
    char *enc = malloc(elen + 1);
    /* worst case: one separator per character plus a 64-byte prefix */
    char *wrapped = malloc(2 * elen + 80);
    if (!enc || !wrapped) abort();
    srv_b64_encode(x, n, enc);
    if (strlen(enc) != elen || elen % 4) abort();
    size_t w = 0;
    if (style == 4) {
        static const char prefix[] = "data:audio/wav;base64,";
        memcpy(wrapped, prefix, sizeof prefix - 1);
        w = sizeof prefix - 1;
    }
    for (size_t i = 0; i < elen; i++) {
        char c = enc[i];
        if (style == 2 && c == '=') continue;
        if (style == 3) c = c == '+' ? '-' : c == '/' ? '_' : c;
        wrapped[w++] = c;
        if (style == 1 && i % 76 == 75) wrapped[w++] = '\n';
        if (style == 5 && x[i % n] & 1) wrapped[w++] = (x[i % n] & 2) ? ' ' : '\t';
    }
    if (style == 1) {
        wrapped[w++] = '\r';
        wrapped[w++] = '\n';
    }
    expect_decodes_to(wrapped, w, x, n);
    free(wrapped);
    free(enc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data;
    size_t n = 0;
    const char *why = NULL;
    unsigned char *out = srv_b64_decode(text, size, &n, &why);
    if (!out) {
        if (!why || !*why) abort();
    } else {
        if (n > size / 4 * 3 + 3) abort();
        size_t elen = srv_b64_encoded_len(n);
        char *again = malloc(elen + 1);
        if (!again) abort();
        srv_b64_encode(out, n, again);
        expect_decodes_to(again, elen, out, n);
        free(again);
        free(out);
    }
    if (size) round_trip(data + 1, size - 1, data[0] % 6);
    return 0;
}
