/* A growable NUL-terminated byte string for the text front end, with a hard
 * cap so no input can make the output grow without bound. */
#ifndef QTTS_TEXT_STRBUF_H
#define QTTS_TEXT_STRBUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    char *s;
    size_t len, cap;
    size_t max; /* appends past this many bytes fail (0: no cap) */
    int failed; /* an append failed (out of memory or past max): the rest are ignored */
} qtts_strbuf;

void qtts_strbuf_init(qtts_strbuf *b, size_t max);
void qtts_strbuf_free(qtts_strbuf *b);
int qtts_strbuf_add(qtts_strbuf *b, const char *s, size_t n);
int qtts_strbuf_adds(qtts_strbuf *b, const char *s);
int qtts_strbuf_addc(qtts_strbuf *b, uint32_t cp);
/* The last code point written, 0 when empty. */
uint32_t qtts_strbuf_last(const qtts_strbuf *b);

#endif
