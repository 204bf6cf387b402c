/* The text front end's per-language data: one row per language, every
 * spoken word the rules insert (CLDR/ICU supplies the number words; these
 * are what CLDR does not cover). */
#ifndef QTTS_TEXT_NORM_LANG_H
#define QTTS_TEXT_NORM_LANG_H

typedef struct {
    const char *code;    /* ISO 639-1: what the tables and the lexicon are keyed by */
    const char *locale;  /* ICU locale of the number words */
    int spaced;          /* words are separated by spaces (not zh, ja) */
    char decimal, group; /* the number separators written in this language (group ' ': a space) */
    const char *full_stop; /* ends a heading, list item or table row that has no end mark */
    const char *list_sep;  /* between table cells */
    /* symbols (as words) */
    const char *w_and, *w_plus, *w_equals, *w_at, *w_hash, *w_slash, *w_dot, *w_minus;
    /* Templates: {0} {1} {2} are filled in (qtts_norm_fill). */
    const char *percent;   /* {0} the number: "{0} percent", zh "百分之{0}" */
    const char *range;     /* "{0} to {1}" */
    const char *fraction;  /* {0} numerator, {1} denominator: "{0} over {1}", zh "{1}分之{0}" */
    /* rule sets for ICU */
    const char *rs_count;  /* a number before a unit or currency ("ein Kilogramm", "un kilogramo"), NULL: rs_cardinal */
    const char *rs_cardinal, *rs_year, *rs_ordinal, *rs_day, *rs_hour;
    int year_words;        /* a bare 4-digit number 1100-2099 reads as a year */
    /* dates: {0} day, {1} month, {2} year */
    const char *date;
    const char *day_one;   /* the word for the 1st of a month where it differs (fr "premier") or NULL */
    int month_first;       /* numeric dates are M/D/Y (en-US) */
    int month_numeric;     /* months are spelled numbers + a counter (zh, ja) */
    const char *months[12]; /* month words where ICU's names are not what is said (ko), else NULL */
    /* times: {0} hour, {1} minutes */
    const char *time_hm, *time_h0, *time_hm_leading_zero; /* the last for minutes 1-9 (en "oh"), or NULL */
    const char *hour_one;  /* what 1:00 is where the template does not fit ("une heure") or NULL */
    const char *am, *pm;
    const char *time_word; /* written after a time and already in its template (de "14:30 Uhr"), or NULL */   /* after a 12-hour time ("a m"), NULL: the language writes 24-hour times */
    /* a ruler's roman numeral ("Louis XIV"): {0} its ordinal up to regnal_ordinal_max, else its cardinal
     * (fr "Louis quatorze", "François premier"); NULL: not read */
    const char *regnal;
    int regnal_ordinal_max;
} qtts_norm_lang;

/* The row for an ISO code or model language name ("en", "English"), NULL for others. */
const qtts_norm_lang *qtts_norm_lang_find(const char *name);
/* Every row (10), for the tests and `auto`. */
const qtts_norm_lang *qtts_norm_lang_at(int i);
int qtts_norm_lang_count(void);

#endif
