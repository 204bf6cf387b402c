/* Units and currencies as spoken after a number: one row per (unit,
 * language) with the word for each CLDR plural category the language has. */
#ifndef QTTS_TEXT_NORM_UNITS_H
#define QTTS_TEXT_NORM_UNITS_H

#include <stddef.h>

typedef struct {
    const char *unit; /* "km", "°C", "USD" */
    const char *lang;
    const char *one, *few, *many, *other; /* NULL: other */
} qtts_norm_unit;

/* The row of unit for lang, NULL when there is none. */
const qtts_norm_unit *qtts_norm_unit_find(const char *unit, const char *lang);
/* The word for CLDR plural category cat ("one", "few", ...). */
const char *qtts_norm_unit_word(const qtts_norm_unit *u, const char *cat);
/* The unit written at s[0..n) (the longest one that is followed by no
 * letter): its key in the table, and *len its bytes; NULL when none. */
const char *qtts_norm_unit_match(const char *s, size_t n, size_t *len);
/* The currency of a symbol at s ("$", "€", "£", "¥", "₩", "₽") or of a code
 * ("USD", "EUR", ...): its code, *len its bytes; NULL when none. lang picks
 * what ¥ means (CNY in Chinese, JPY elsewhere). */
const char *qtts_norm_currency_match(const char *s, size_t n, const char *lang, size_t *len);

#endif
