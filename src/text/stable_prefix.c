#include "text/stable_prefix.h"

#include <stdint.h>
#include <string.h>
#include <utf8proc.h>

#include "text/utf8.h"

static int is_letter(uint32_t cp) {
    switch (utf8proc_category((utf8proc_int32_t)cp)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO: return 1;
    default: return 0;
    }
}

/* Byte length of a clause mark starting at s (n bytes available), or 0. */
static size_t clause_mark(const char *s, size_t n) {
    if (n >= 1 && strchr(",.!?;:", s[0]) && s[0]) return 1;
    static const char *const wide[] = {"\xef\xbc\x8c", "\xe3\x80\x82", "\xef\xbc\x81", "\xef\xbc\x9f",
                                       "\xef\xbc\x9b", "\xef\xbc\x9a", "\xe3\x80\x81"}; /* ， 。 ！ ？ ； ： 、 */
    for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++)
        if (n >= 3 && !memcmp(s, wide[i], 3)) return 3;
    return 0;
}

/* Start of the code point that ends at p (p > 0), stepping over continuation bytes. */
static size_t prev_start(const char *s, size_t p) {
    size_t q = p - 1;
    while (q > 0 && ((unsigned char)s[q] & 0xC0) == 0x80 && p - q < 4) q--;
    return q;
}

size_t qtts_tok_stable_prefix(const char *text, size_t len) {
    /* only the well-formed part can be classified; a piece may end inside a character */
    size_t ok = qtts_utf8_check(text, len);
    for (size_t p = ok; p-- > 1;) {
        if (((unsigned char)text[p] & 0xC0) == 0x80) continue; /* not a character start */
        size_t q = prev_start(text, p);
        uint32_t before;
        if (qtts_utf8_decode(text + q, &before) != (int)(p - q)) continue;
        if (text[p] == ' ' && !qtts_unicode_is_space(before)) return p;
        if (is_letter(before) && clause_mark(text + p, ok - p)) return p;
    }
    return 0;
}
