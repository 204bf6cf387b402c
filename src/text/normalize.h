/* The text front end: what a person would read aloud, from the text an
 * application sends (often an LLM's markdown reply). Runs before the
 * tokenizer and before the long-text splitter.
 *
 * Modes: off (the text unchanged), basic (LLM-output cleanup: markdown,
 * emoji, control characters, URLs and e-mail addresses), full (basic plus
 * numbers, currencies, units, percentages, ranges, times, dates and symbols
 * in words of the text's language, through ICU's CLDR spellout rules). */
#ifndef QTTS_TEXT_NORMALIZE_H
#define QTTS_TEXT_NORMALIZE_H

#include <stddef.h>

#include "core/err.h"
#include "qtts.h"

typedef enum { QTTS_NORM_OFF = 0, QTTS_NORM_BASIC = 1, QTTS_NORM_FULL = 2 } qtts_norm_mode;

/* "off", "basic", "full" -> the mode; -1 for other names. */
int qtts_norm_mode_parse(const char *name);

/* qtts_request.normalize (a qtts_normalize_mode, include/qtts.h) -> the mode
 * it asks for (QTTS_NORMALIZE_DEFAULT: full); -1 when out of range. */
int qtts_norm_mode_of_request(int request_mode);
/* The mode -> the qtts_request.normalize value that asks for it. */
int qtts_norm_request_mode(qtts_norm_mode mode);

/* The language whose rules apply to text: lang as ISO code or model name
 * ("en", "English"); NULL, "" or "auto" guesses from the text's script and
 * letters. Returns the ISO code ("en" when nothing else fits). */
const char *qtts_norm_detect(const char *text, size_t len, const char *lang);

/* text[0, len) (valid UTF-8, else QTTS_ERR_INVALID) -> a malloc'd,
 * NUL-terminated spoken form; *out_len its bytes (may be NULL). The output
 * is valid UTF-8 and at most 16 x len + 4096 bytes. */
char *qtts_text_normalize(const char *text, size_t len, const char *lang, qtts_norm_mode mode, size_t *out_len,
                          qtts_err *err);
/* The same with a pronunciation lexicon (text/lexicon.h; NULL: none)
 * applied first, in basic and full modes; the size bound counts the text
 * after the lexicon. */
char *qtts_text_normalize_lex(const char *text, size_t len, const char *lang, qtts_norm_mode mode,
                              const qtts_lexicon *lex, size_t *out_len, qtts_err *err);
/* Everything beside the mode: the lexicon, and whether fenced code blocks
 * are read (their lines as plain text, no markdown) or skipped (default). */
typedef struct {
    const qtts_lexicon *lexicon;
    int read_code;
} qtts_norm_opts;
char *qtts_text_normalize_opts(const char *text, size_t len, const char *lang, qtts_norm_mode mode,
                               const qtts_norm_opts *opts, size_t *out_len, qtts_err *err);

/* Streaming: text that arrives in pieces (incremental requests) read
 * exactly as the whole text would be. What is final is given out as soon as
 * no later text can change it: whole lines, and inside a line the text up
 * to a space after a plain word (letters and , ; : ! ? quotes, brackets and
 * emphasis marks: no digit, symbol or '.') or after CJK punctuation (，。、！？；：),
 * with no link or tag left open. So "1,234.5", "$3.50", "5 kg" or a markdown
 * link split over two pieces waits until it is complete. lang NULL, "" or
 * "auto": guessed from the first sentence, line or 200 bytes (the whole
 * text when it is shorter); the whole-text guess reads all of it. */
typedef struct qtts_norm_stream qtts_norm_stream;

qtts_norm_stream *qtts_norm_stream_new(const char *lang, qtts_norm_mode mode, qtts_err *err);
/* Appends text[0, len) (a piece may end inside a UTF-8 sequence); is_last:
 * the text is complete. Invalid UTF-8 fails with QTTS_ERR_INVALID; after a
 * failure every call fails. */
int qtts_norm_stream_feed(qtts_norm_stream *s, const char *text, size_t len, int is_last, qtts_err *err);
/* The final part of the spoken form so far: *len bytes (only ever grows;
 * the bytes are not NUL-terminated there). Once the text is complete, all
 * of it: qtts_text_normalize's output for the whole text. */
const char *qtts_norm_stream_text(const qtts_norm_stream *s, size_t *len);
void qtts_norm_stream_free(qtts_norm_stream *s);
/* A lexicon for the stream (before the first piece; the stream holds a reference). */
void qtts_norm_stream_set_lexicon(qtts_norm_stream *s, const qtts_lexicon *lex);
/* Fenced code blocks read (1) or skipped (0, the default); before the first piece. */
void qtts_norm_stream_set_read_code(qtts_norm_stream *s, int read_code);

#endif
