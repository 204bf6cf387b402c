/* UTF-8 helpers and the GPT-2 byte-level alphabet used by byte-level BPE. */
#ifndef QTTS_TEXT_UTF8_H
#define QTTS_TEXT_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Returns len when s[0..len) is well-formed UTF-8 (no overlongs, no
 * surrogates, nothing above U+10FFFF), else the offset of the first byte of
 * the first bad sequence. */
size_t qtts_utf8_check(const char *s, size_t len);

/* Code points of s[0..len), or -1 when it is not well-formed UTF-8 (the
 * same rules as qtts_utf8_check). */
long qtts_utf8_count(const char *s, size_t len);

/* Decodes one code point from well-formed UTF-8; returns its byte length. */
int qtts_utf8_decode(const char *s, uint32_t *cp);

/* Encodes cp (<= U+10FFFF) into out; returns the byte length (1..4). */
int qtts_utf8_encode(uint32_t cp, char out[4]);

/* Unicode White_Space property (what \s means in the reference regex). */
int qtts_unicode_is_space(uint32_t cp);

/* GPT-2 bytes_to_unicode: every byte maps to a printable code point
 * (printable Latin-1 bytes map to themselves, the other 68 to U+0100..). */
uint32_t qtts_byte_to_unicode(uint8_t b);
/* The inverse; -1 for code points outside the 256-symbol alphabet. */
int qtts_unicode_to_byte(uint32_t cp);

#endif
