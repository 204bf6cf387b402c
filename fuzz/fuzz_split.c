/* The long-text splitter (qtts_text_split, what `qtts say --file` feeds a
 * book through) on arbitrary bytes, invalid UTF-8 included; the first byte
 * picks max_chars, cjk_weight and by-line mode. Beyond "no crash", split.h's
 * guarantee: chunks are non-empty, in order, inside the text and without
 * overlap; they neither start nor end with whitespace and everything between
 * them is whitespace (so no text is lost or duplicated); in by-line mode no
 * chunk holds a line break; pure-ASCII chunks fit max_chars; and
 * qtts_text_chunk_dup gives the chunk with whitespace runs as single spaces. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "text/split.h"

/* The splitter's whitespace, stated independently: ASCII blanks, the line
 * breaks it knows, and Unicode space separators (Zs). */
static int newline_cp(int32_t c) { return c == '\n' || c == '\r' || c == 0x85 || c == 0x2028 || c == 0x2029; }
static int space_cp(int32_t c) {
    if (c < 0) return 0;
    if (c == ' ' || c == '\t' || c == '\v' || c == '\f' || newline_cp(c)) return 1;
    return c >= 0x80 && utf8proc_category(c) == UTF8PROC_CATEGORY_ZS;
}

/* Decodes the code point at text[pos]; invalid bytes are -1, one byte long. */
static size_t next_cp(const char *text, size_t pos, size_t end, int32_t *c) {
    utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)text + pos, (utf8proc_ssize_t)(end - pos), c);
    if (k <= 0 || *c < 0) {
        *c = -1;
        return 1;
    }
    return (size_t)k;
}

static void check_gap(const char *text, size_t a, size_t b) {
    for (size_t p = a; p < b;) {
        int32_t c;
        p += next_cp(text, p, b, &c);
        if (!space_cp(c)) abort(); /* text outside every chunk */
    }
}

static void check_chunk(const char *text, qtts_text_chunk ch, const qtts_split_params *sp) {
    size_t end = ch.start + ch.len;
    int32_t c, last = -1;
    int ascii = 1, first = 1;
    for (size_t p = ch.start; p < end;) {
        size_t k = next_cp(text, p, end, &c);
        if (first && space_cp(c)) abort();
        if (sp->by_line && newline_cp(c)) abort();
        if (c < 0 || c >= 0x80) ascii = 0;
        first = 0;
        last = c;
        p += k;
    }
    if (space_cp(last)) abort();
    if (ascii && ch.len > (size_t)sp->max_chars) abort();
    if (qtts_text_units(text + ch.start, ch.len, sp->cjk_weight) == 0) abort();
    if (memchr(text + ch.start, 0, ch.len)) return; /* the copy is a C string: a NUL ends it early */
    qtts_err err = {0};
    char *dup = qtts_text_chunk_dup(text, ch, &err);
    if (!dup) abort();
    /* the copy: the chunk's bytes with each whitespace run as one ' ' */
    size_t d = 0, dn = strlen(dup);
    int in_space = 0;
    for (size_t p = ch.start; p < end;) {
        size_t k = next_cp(text, p, end, &c);
        if (space_cp(c)) {
            if (!in_space && (d >= dn || dup[d++] != ' ')) abort();
            in_space = 1;
        } else {
            if (d + k > dn || memcmp(dup + d, text + p, k)) abort();
            d += k;
            in_space = 0;
        }
        p += k;
    }
    if (d != dn) abort();
    free(dup);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    static const int maxes[] = {300, 1, 2, 7, 20, 64, 0, 3};
    qtts_split_params sp;
    qtts_split_params_default(&sp);
    sp.max_chars = maxes[data[0] & 7];
    sp.cjk_weight = (data[0] >> 3) & 3; /* 0: the default (3) */
    sp.by_line = (data[0] >> 5) & 1;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    qtts_err err = {0};
    qtts_text_chunk *chunks = NULL;
    long n = qtts_text_split(text, len, &sp, &chunks, &err);
    if (n < 0) abort(); /* only out of memory fails */
    if (sp.max_chars <= 0) sp.max_chars = QTTS_SPLIT_DEFAULT_MAX;
    size_t prev = 0;
    for (long i = 0; i < n; i++) {
        qtts_text_chunk ch = chunks[i];
        if (!ch.len || ch.start < prev || ch.start + ch.len > len) abort();
        check_gap(text, prev, ch.start);
        check_chunk(text, ch, &sp);
        prev = ch.start + ch.len;
    }
    check_gap(text, prev, len);
    free(chunks);
    return 0;
}
