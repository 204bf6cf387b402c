/* ICU number words and plural categories (see norm_spell.h). */
#include "text/norm_spell.h"

#include <string.h>
#include <unicode/udat.h>
#include <unicode/unum.h>
#include <unicode/upluralrules.h>
#include <unicode/ustring.h>

void qtts_spell_init(qtts_spell *sp, const qtts_norm_lang *lang) {
    memset(sp, 0, sizeof *sp);
    sp->lang = lang;
}

void qtts_spell_free(qtts_spell *sp) {
    for (int i = 0; i < QTTS_SPELL_MAX_RULESETS; i++)
        if (sp->fmt[i]) unum_close(sp->fmt[i]);
    if (sp->plural) uplrules_close(sp->plural);
    if (sp->dates) udat_close(sp->dates);
    memset(sp, 0, sizeof *sp);
}

static UNumberFormat *formatter(qtts_spell *sp, const char *rs, qtts_err *err) {
    int i = 0;
    for (; i < QTTS_SPELL_MAX_RULESETS && sp->fmt[i]; i++)
        if (!strcmp(sp->fmt_rs[i], rs)) return sp->fmt[i];
    if (i == QTTS_SPELL_MAX_RULESETS) i = 0, unum_close(sp->fmt[0]), sp->fmt[0] = NULL;
    UErrorCode st = U_ZERO_ERROR;
    UNumberFormat *f = unum_open(UNUM_SPELLOUT, NULL, 0, sp->lang->locale, NULL, &st);
    if (U_FAILURE(st)) {
        qtts_fail(err, "ICU has no number words for %s: %s", sp->lang->locale, u_errorName(st));
        return NULL;
    }
    UChar name[64];
    u_uastrncpy(name, rs, 63);
    name[63] = 0;
    unum_setTextAttribute(f, UNUM_DEFAULT_RULESET, name, -1, &st);
    if (U_FAILURE(st)) {
        unum_close(f);
        qtts_fail(err, "ICU has no rule set %s for %s: %s", rs, sp->lang->locale, u_errorName(st));
        return NULL;
    }
    sp->fmt[i] = f;
    sp->fmt_rs[i] = rs;
    return f;
}

/* UTF-16 -> out, without soft hyphens. */
static int add_utf16(const UChar *u, int32_t n, qtts_strbuf *out) {
    for (int32_t i = 0; i < n;) {
        UChar32 c;
        U16_NEXT(u, i, n, c);
        if (c == 0xAD || c < 0) continue;
        if (qtts_strbuf_addc(out, (uint32_t)c)) return -1;
    }
    return 0;
}

int qtts_spell_number(qtts_spell *sp, const char *rs, double v, qtts_strbuf *out, qtts_err *err) {
    UNumberFormat *f = formatter(sp, rs, err);
    if (!f) return -1;
    UChar buf[512];
    UErrorCode st = U_ZERO_ERROR;
    int32_t n = unum_formatDouble(f, v, buf, 512, NULL, &st);
    if (U_FAILURE(st) || n > 512) return qtts_fail(err, "ICU could not spell %g: %s", v, u_errorName(st));
    if (add_utf16(buf, n, out)) return qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "out of memory");
    return 0;
}

const char *qtts_spell_plural(qtts_spell *sp, double v) {
    UErrorCode st = U_ZERO_ERROR;
    if (!sp->plural) {
        sp->plural = uplrules_open(sp->lang->locale, &st);
        if (U_FAILURE(st)) sp->plural = NULL;
    }
    if (!sp->plural) return "other";
    UChar kw[16];
    st = U_ZERO_ERROR;
    int32_t n = uplrules_select(sp->plural, v, kw, 16, &st);
    if (U_FAILURE(st)) return "other";
    static const char *const CATS[] = {"zero", "one", "two", "few", "many", "other"};
    for (size_t i = 0; i < sizeof CATS / sizeof CATS[0]; i++) {
        UChar want[8];
        u_uastrcpy(want, CATS[i]);
        if (u_strlen(want) == n && !u_strncmp(kw, want, n)) return CATS[i];
    }
    return "other";
}

int qtts_spell_month(qtts_spell *sp, int m, qtts_strbuf *out, qtts_err *err) {
    UErrorCode st = U_ZERO_ERROR;
    if (!sp->dates) {
        sp->dates = udat_open(UDAT_NONE, UDAT_LONG, sp->lang->locale, NULL, 0, NULL, 0, &st);
        if (U_FAILURE(st)) {
            sp->dates = NULL;
            return qtts_fail(err, "ICU has no month names for %s: %s", sp->lang->locale, u_errorName(st));
        }
    }
    UChar buf[64];
    st = U_ZERO_ERROR;
    int32_t n = udat_getSymbols(sp->dates, UDAT_MONTHS, m - 1, buf, 64, &st);
    if (U_FAILURE(st) || n > 64) return qtts_fail(err, "ICU month %d for %s: %s", m, sp->lang->locale, u_errorName(st));
    if (add_utf16(buf, n, out)) return qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "out of memory");
    return 0;
}
