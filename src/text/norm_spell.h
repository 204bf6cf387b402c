/* Number words through ICU's rule-based number formatting (CLDR spellout
 * rules) and plural categories (CLDR plural rules) for one language: opened
 * once per normalization, closed after it. */
#ifndef QTTS_TEXT_NORM_SPELL_H
#define QTTS_TEXT_NORM_SPELL_H

#include <stdint.h>

#include "core/err.h"
#include "text/norm_lang.h"
#include "text/strbuf.h"

#define QTTS_SPELL_MAX_RULESETS 8

typedef struct {
    const qtts_norm_lang *lang;
    void *fmt[QTTS_SPELL_MAX_RULESETS]; /* UNumberFormat *, one per rule set used */
    const char *fmt_rs[QTTS_SPELL_MAX_RULESETS];
    void *plural;                       /* UPluralRules * */
    void *dates;                        /* UDateFormatSymbols' owner: a UDateFormat * */
} qtts_spell;

void qtts_spell_init(qtts_spell *sp, const qtts_norm_lang *lang);
void qtts_spell_free(qtts_spell *sp);
/* Appends the words of v under ICU rule set rs ("%spellout-numbering") to out.
 * Soft hyphens (which ICU puts inside German and Italian compounds) are left
 * out. -1 with err set when ICU fails. */
int qtts_spell_number(qtts_spell *sp, const char *rs, double v, qtts_strbuf *out, qtts_err *err);
/* The CLDR plural category of v: "one", "two", "few", "many" or "other". */
const char *qtts_spell_plural(qtts_spell *sp, double v);
/* Appends the name of month m (1-12) as a date says it (format context). */
int qtts_spell_month(qtts_spell *sp, int m, qtts_strbuf *out, qtts_err *err);

#endif
