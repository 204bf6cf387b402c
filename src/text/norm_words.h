/* Words the text front end reads differently from how they are written:
 * abbreviations per language, and the words before which a roman numeral
 * is a number (titles: "Chapter IV") or a regnal ordinal (names: "Louis
 * XIV"). Data only; normalize.c applies it. */
#ifndef QTTS_TEXT_NORM_WORDS_H
#define QTTS_TEXT_NORM_WORDS_H

#include <stddef.h>

/* ALWAYS, or only before a capitalized word or a number (after one space);
 * ENDS: always, and its '.' also ends the sentence at the end of a line or
 * before a capital letter ("etc. The"). */
enum { QTTS_ABBR_ALWAYS = 0, QTTS_ABBR_BEFORE_NAME = 1, QTTS_ABBR_BEFORE_NUMBER = 2, QTTS_ABBR_ENDS = 3 };

typedef struct {
    const char *lang, *written, *spoken;
    int when; /* QTTS_ABBR_* */
} qtts_norm_abbrev;

/* The abbreviation written at s[0, n) for lang (the first row that fits,
 * followed by no letter), *len its bytes; NULL when none. */
const qtts_norm_abbrev *qtts_norm_abbrev_match(const char *lang, const char *s, size_t n, size_t *len);

/* The kind of roman numeral a preceding word s[0, n) announces in lang:
 * 1 a number (a title word), 2 a regnal ordinal (a ruler's name), 0 none. */
int qtts_norm_roman_context(const char *lang, const char *s, size_t n);

#endif
