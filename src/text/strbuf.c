/* Growable string (see strbuf.h). */
#include "text/strbuf.h"

#include <stdlib.h>
#include <string.h>

#include "text/utf8.h"

void qtts_strbuf_init(qtts_strbuf *b, size_t max) {
    memset(b, 0, sizeof *b);
    b->max = max;
}

void qtts_strbuf_free(qtts_strbuf *b) {
    free(b->s);
    memset(b, 0, sizeof *b);
}

int qtts_strbuf_add(qtts_strbuf *b, const char *s, size_t n) {
    if (b->failed) return -1;
    if (b->max && n > b->max - b->len) return b->failed = 1, -1;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1) cap *= 2;
        char *ns = realloc(b->s, cap);
        if (!ns) return b->failed = 1, -1;
        b->s = ns, b->cap = cap;
    }
    if (n) memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
    return 0;
}

int qtts_strbuf_adds(qtts_strbuf *b, const char *s) { return qtts_strbuf_add(b, s, strlen(s)); }

int qtts_strbuf_addc(qtts_strbuf *b, uint32_t cp) {
    char u[4];
    return qtts_strbuf_add(b, u, (size_t)qtts_utf8_encode(cp, u));
}

uint32_t qtts_strbuf_last(const qtts_strbuf *b) {
    if (!b->len) return 0;
    size_t i = b->len - 1;
    while (i > 0 && ((unsigned char)b->s[i] & 0xC0) == 0x80) i--;
    uint32_t cp = 0;
    qtts_utf8_decode(b->s + i, &cp);
    return cp;
}
