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

#endif
