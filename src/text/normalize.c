/* The text front end (see normalize.h): line-level markdown first, then
 * each line's inline markup, URLs, emoji and (full mode) numbers. Rules and
 * words are per language (norm_lang.c, norm_units.c); number words are
 * ICU's (norm_spell.c). */
#include "text/normalize.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unicode/uchar.h>

#include "qtts.h"
#include "text/lexicon.h"
#include "text/norm_core.h"
#include "text/norm_units.h"
#include "text/norm_words.h"
#include "text/utf8.h"

typedef norm_ctx norm;

int qtts_norm_mode_parse(const char *name) {
    static const char *const NAMES[] = {"off", "basic", "full"};
    for (int i = 0; i < 3; i++)
        if (name && !strcasecmp(name, NAMES[i])) return i;
    return -1;
}

int qtts_norm_mode_of_request(int request_mode) {
    switch (request_mode) {
    case QTTS_NORMALIZE_DEFAULT:
    case QTTS_NORMALIZE_FULL: return QTTS_NORM_FULL;
    case QTTS_NORMALIZE_OFF: return QTTS_NORM_OFF;
    case QTTS_NORMALIZE_BASIC: return QTTS_NORM_BASIC;
    }
    return -1;
}

int qtts_norm_request_mode(qtts_norm_mode mode) {
    return mode == QTTS_NORM_OFF ? QTTS_NORMALIZE_OFF : mode == QTTS_NORM_BASIC ? QTTS_NORMALIZE_BASIC : QTTS_NORMALIZE_FULL;
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_alnum_cp(uint32_t c) { return c && (u_isalnum((UChar32)c)); }
/* A letter or digit of a script that separates words with spaces: a number
 * right after one is part of a word ("A4", "mp3"); after Han or kana it is not. */
static int is_word_cp(uint32_t c) { return c < 0x2E80 && is_alnum_cp(c); }

/* ---- output ---- */

static void put(norm *z, const char *s, size_t n) {
    if (z->pending_space && n && z->L->spaced) {
        uint32_t c;
        qtts_utf8_decode(s, &c);
        if (is_word_cp(c)) qtts_strbuf_add(&z->out, " ", 1);
    }
    z->pending_space = 0;
    qtts_strbuf_add(&z->out, s, n);
}

/* Whitespace collapses to one space, never at the start of a line. */
static void put_space(norm *z) {
    uint32_t last = qtts_strbuf_last(&z->out);
    z->pending_space = 0;
    if (last && last != ' ' && last != '\n') qtts_strbuf_add(&z->out, " ", 1);
}

/* Inserted words: separated from letters around them where the language
 * puts spaces between words. */
static void put_words(norm *z, const char *w) {
    uint32_t last = qtts_strbuf_last(&z->out);
    if (z->L->spaced && is_alnum_cp(last)) qtts_strbuf_add(&z->out, " ", 1);
    qtts_strbuf_adds(&z->out, w);
    z->pending_space = 1;
}

/* Template {0} {1} {2} -> words. */
static void put_template(norm *z, const char *t, const char *a0, const char *a1, const char *a2) {
    qtts_strbuf b;
    qtts_strbuf_init(&b, 0);
    for (const char *p = t; *p; p++) {
        if (p[0] == '{' && p[1] >= '0' && p[1] <= '2' && p[2] == '}') {
            const char *a = p[1] == '0' ? a0 : p[1] == '1' ? a1 : a2;
            qtts_strbuf_adds(&b, a ? a : "");
            p += 2;
        } else {
            qtts_strbuf_add(&b, p, 1);
        }
    }
    if (b.failed) z->failed = 1;
    else put_words(z, b.s ? b.s : "");
    qtts_strbuf_free(&b);
}

/* Number words into a fresh string (caller frees). */
static char *spell(norm *z, const char *rs, double v) {
    qtts_strbuf b;
    qtts_strbuf_init(&b, 0);
    if (qtts_spell_number(&z->sp, rs, v, &b, z->err) || b.failed) {
        z->failed = 1;
        qtts_strbuf_free(&b);
        return NULL;
    }
    return b.s ? b.s : calloc(1, 1);
}

/* ---- numbers ---- */

typedef struct {
    double v;
    size_t len;    /* bytes of the written number */
    int is_int;
    int n_digits;  /* integer digits */
    int grouped;
    char digits[64]; /* as written, separators removed, '.' for the decimal mark */
} number;

/* A number at s (digits first): groups and decimal mark per language. */
static int parse_number(const qtts_norm_lang *L, const char *s, size_t n, number *num) {
    memset(num, 0, sizeof *num);
    size_t p = 0, d = 0;
    num->is_int = 1;
    while (p < n && is_digit(s[p])) {
        if (d < sizeof num->digits - 2) num->digits[d++] = s[p];
        p++, num->n_digits++;
        /* a group separator followed by exactly three digits */
        size_t g = 0;
        if (p < n && s[p] == L->group && L->group != ' ') g = 1;
        else if (L->group == ' ' && p + 1 < n && s[p] == ' ') g = 1;
        else if (L->group == ' ' && p + 2 < n && !memcmp(s + p, "\xC2\xA0", 2)) g = 2;
        else if (L->group == ' ' && p + 3 < n && !memcmp(s + p, "\xE2\x80\xAF", 3)) g = 3;
        if (g && num->n_digits <= 3 && p + g + 3 <= n && is_digit(s[p + g]) && is_digit(s[p + g + 1]) &&
            is_digit(s[p + g + 2]) && (p + g + 3 == n || !is_digit(s[p + g + 3]))) {
            p += g;
            num->grouped = 1;
            num->n_digits = 0; /* counts digits of the group now */
        }
    }
    if (!p) return 0;
    /* the decimal mark, or '.' in a comma language when it is not a group */
    if (p + 1 < n && (s[p] == L->decimal || s[p] == '.') && is_digit(s[p + 1]) && !(s[p] == ',' && L->decimal != ',')) {
        p++;
        num->is_int = 0;
        if (d < sizeof num->digits - 2) num->digits[d++] = '.';
        while (p < n && is_digit(s[p])) {
            if (d < sizeof num->digits - 2) num->digits[d++] = s[p];
            p++;
        }
    }
    num->digits[d] = 0;
    num->len = p;
    num->v = strtod(num->digits, NULL);
    if (num->grouped) num->n_digits = 0; /* not a year, a time or a date part */
    else num->n_digits = (int)strcspn(num->digits, ".");
    return 1;
}

/* Digits read one by one (phone numbers, very long numbers). */
static void put_digits(norm *z, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (!is_digit(s[i])) {
            if (i && is_digit(s[i - 1])) qtts_strbuf_adds(&z->out, z->L->list_sep);
            continue;
        }
        char *w = spell(z, z->L->rs_cardinal, s[i] - '0');
        if (w) put_words(z, w);
        free(w);
    }
}

static int two_digits(const char *s, size_t n, size_t at, int *v) {
    if (at + 2 > n || !is_digit(s[at]) || !is_digit(s[at + 1]) || (at + 2 < n && is_digit(s[at + 2]))) return 0;
    *v = (s[at] - '0') * 10 + (s[at + 1] - '0');
    return 1;
}

static void put_date(norm *z, int y, int m, int d);

/* 2026-03-05 */
static size_t try_iso_date(norm *z, const char *s, size_t n) {
    if (n < 10 || s[4] != '-' || s[7] != '-') return 0;
    for (int i = 0; i < 10; i++)
        if (i != 4 && i != 7 && !is_digit(s[i])) return 0;
    if (n > 10 && is_digit(s[10])) return 0;
    /* the text is not NUL-terminated: read the digits, not past them with atoi */
    int y = 0, m = 0, d = 0;
    for (int i = 0; i < 4; i++) y = y * 10 + (s[i] - '0');
    two_digits(s, n, 5, &m), two_digits(s, n, 8, &d); /* both hold: digits checked above, '-' and no digit after */
    if (m < 1 || m > 12 || d < 1 || d > 31) return 0;
    put_date(z, y, m, d);
    return 10;
}

/* 5.3.2026, 05/03/2026 (en: 03/05/2026 is month first): a day, a month and a 4-digit year */
static size_t try_numeric_date(norm *z, const char *s, size_t n) {
    int a = 0, b = 0, y = 0;
    size_t p = 0, k;
    for (k = 0; p < n && k < 2 && is_digit(s[p]); k++) a = a * 10 + (s[p++] - '0');
    if (!k || p >= n || (s[p] != '.' && s[p] != '/')) return 0;
    char sep = s[p++];
    if (sep == '.' && z->L->month_first) return 0; /* en writes 3.5 as a decimal */
    for (k = 0; p < n && k < 2 && is_digit(s[p]); k++) b = b * 10 + (s[p++] - '0');
    if (!k || p >= n || s[p] != sep) return 0;
    p++;
    for (k = 0; p < n && k < 4 && is_digit(s[p]); k++) y = y * 10 + (s[p++] - '0');
    if (k != 4 || (p < n && is_digit(s[p]))) return 0;
    int m = z->L->month_first && sep == '/' ? a : b, d = z->L->month_first && sep == '/' ? b : a;
    if (m < 1 || m > 12 || d < 1 || d > 31) return 0;
    put_date(z, y, m, d);
    return p;
}

static void put_date(norm *z, int y, int m, int d) {
    const qtts_norm_lang *L = z->L;
    char *yw = spell(z, L->rs_year, y), *dw = d == 1 && L->day_one ? strdup(L->day_one) : spell(z, L->rs_day, d);
    char *mw = NULL;
    if (L->months[0]) mw = strdup(L->months[m - 1]);
    else if (L->month_numeric) mw = spell(z, L->rs_cardinal, m);
    else {
        qtts_strbuf b;
        qtts_strbuf_init(&b, 0);
        if (qtts_spell_month(&z->sp, m, &b, z->err)) z->failed = 1;
        mw = b.s;
    }
    if (yw && dw && mw) put_template(z, L->date, dw, mw, yw);
    else z->failed = 1;
    free(yw), free(dw), free(mw);
}

/* "am", "p.m.", ... after a 12-hour time (optionally one space before): its
 * bytes, *pm whether it is p.m.; 0 when none or the language has no words for it. */
static size_t match_ampm(const qtts_norm_lang *L, const char *s, size_t n, int *pm) {
    static const char *const WRITTEN[] = {"a.m.", "am", "A.M.", "AM", "p.m.", "pm", "P.M.", "PM"};
    if (!L->am) return 0;
    size_t sp = n && s[0] == ' ' ? 1 : 0;
    for (size_t i = 0; i < sizeof WRITTEN / sizeof WRITTEN[0]; i++) {
        size_t k = strlen(WRITTEN[i]);
        if (sp + k <= n && !memcmp(s + sp, WRITTEN[i], k) &&
            !(sp + k < n && u_isalnum((UChar32)(unsigned char)s[sp + k]))) {
            *pm = i >= 4;
            return sp + k;
        }
    }
    return 0;
}

/* 14:30 */
static size_t try_time(norm *z, const char *s, size_t n) {
    size_t p = 0;
    int h = 0, m;
    while (p < n && p < 2 && is_digit(s[p])) h = h * 10 + (s[p++] - '0');
    if (!p || p >= n || s[p] != ':' || !two_digits(s, n, p + 1, &m) || h > 23 || m > 59) return 0;
    if (p + 3 < n && s[p + 3] == ':') return 0; /* h:m:s and longer: left as numbers */
    const qtts_norm_lang *L = z->L;
    int pm = 0;
    size_t ampm = h >= 1 && h <= 12 ? match_ampm(L, s + p + 3, n - p - 3, &pm) : 0;
    char *hw = spell(z, L->rs_hour, h);
    char *mw = spell(z, L->rs_cardinal, m);
    if (!strcmp(L->code, "zh") && h == 2 && hw) free(hw), hw = strdup("两"); /* 两点 */
    if (hw && mw && ampm) { /* 9:05 am: nine oh five a m; 9:00 pm: nine p m */
        if (m == 0) put_words(z, hw);
        else if (m < 10 && L->time_hm_leading_zero) put_template(z, L->time_hm_leading_zero, hw, mw, NULL);
        else put_template(z, L->time_hm, hw, mw, NULL);
        put_words(z, pm ? L->pm : L->am);
    } else if (hw && mw) {
        if (m == 0 && h == 1 && L->hour_one) put_words(z, L->hour_one);
        else if (m == 0) put_template(z, L->time_h0, hw, NULL, NULL);
        else if (m < 10 && L->time_hm_leading_zero) put_template(z, L->time_hm_leading_zero, hw, mw, NULL);
        else put_template(z, L->time_hm, hw, mw, NULL);
    } else {
        z->failed = 1;
    }
    free(hw), free(mw);
    size_t e = p + 3 + ampm, tw = L->time_word ? strlen(L->time_word) : 0;
    if (!ampm && tw && e + 1 + tw <= n && s[e] == ' ' && !memcmp(s + e + 1, L->time_word, tw) &&
        !(e + 1 + tw < n && u_isalpha((UChar32)(unsigned char)s[e + 1 + tw])))
        e += 1 + tw; /* "14:30 Uhr": the template says it */
    if (ampm && s[e - 1] == '.' && (e == n || (e + 1 < n && s[e] == ' ' && u_isupper((UChar32)(unsigned char)s[e + 1]))))
        qtts_strbuf_adds(&z->out, L->full_stop); /* "at 9 p.m." ends the sentence too */
    return e;
}

/* +1 555-123-4567, 555-1234: seven digits or more in groups */
static size_t try_phone(norm *z, const char *s, size_t n) {
    size_t p = s[0] == '+' ? 1 : 0;
    int digits = 0, groups = 0, run = 0;
    size_t end = p;
    for (; p < n; p++) {
        if (is_digit(s[p])) digits++, run++, end = p + 1;
        else if ((s[p] == '-' || s[p] == ' ') && run >= 2 && p + 1 < n && is_digit(s[p + 1])) groups++, run = 0;
        else break;
    }
    if (digits < 7 || !groups || (end < n && (u_isalpha((UChar32)(unsigned char)s[end])))) return 0;
    put_digits(z, s, end);
    return end;
}

/* The plural word of a unit or currency for v, or NULL. */
static const char *unit_word(norm *z, const char *unit, double v) {
    const qtts_norm_unit *u = qtts_norm_unit_find(unit, z->L->code);
    return u ? qtts_norm_unit_word(u, qtts_spell_plural(&z->sp, v)) : NULL;
}

/* A number and what follows it: %, a unit, a currency, an ordinal suffix,
 * a range, a fraction, a Chinese measure word or year. */
static size_t number_at(norm *z, const char *s, size_t n, int negative, const char *currency_before) {
    const qtts_norm_lang *L = z->L;
    number a;
    if (!parse_number(L, s, n, &a)) return 0;
    size_t p = a.len;
    double v = negative ? -a.v : a.v;
    if (a.n_digits > 15) {
        put_digits(z, s, p);
        return p;
    }
    size_t k = 0, sp = p < n && s[p] == ' ' ? 1 : p + 1 < n && !memcmp(s + p, "\xC2\xA0", 2) ? 2 : 0;
    const char *rs = L->rs_cardinal, *rs_count = L->rs_count ? L->rs_count : L->rs_cardinal;
    /* money: $5, 5 €, 5 USD; two decimals in a spaced language read as units and cents */
    const char *cur = currency_before;
    if (!cur) {
        cur = qtts_norm_currency_match(s + p + sp, n - p - sp, L->code, &k);
        if (cur) p += sp + k;
    }
    if (cur) {
        const char *frac = strchr(a.digits, '.');
        if (frac && strlen(frac) == 3 && L->spaced) {
            double whole = (double)(long long)a.v, cents = atoi(frac + 1);
            char *w = spell(z, rs_count, negative ? -whole : whole), *c = spell(z, rs_count, cents);
            const char *uw = unit_word(z, cur, whole);
            if (w && c && uw) {
                put_words(z, w), put_words(z, uw);
                if (cents > 0) put_words(z, c);
            }
            free(w), free(c);
        } else {
            char *w = spell(z, a.is_int ? rs_count : rs, v);
            const char *uw = unit_word(z, cur, v);
            if (w && uw) put_words(z, w), put_words(z, uw);
            free(w);
        }
        return p;
    }
    int pm = 0;
    size_t ampm = a.is_int && !negative && a.v >= 1 && a.v <= 12 ? match_ampm(L, s + p, n - p, &pm) : 0;
    if (ampm) { /* 7pm, 7 p.m. */
        char *w = spell(z, L->rs_hour, v);
        if (w) put_words(z, w), put_words(z, pm ? L->pm : L->am);
        free(w);
        size_t e = p + ampm;
        if (s[e - 1] == '.' && (e == n || (e + 1 < n && s[e] == ' ' && u_isupper((UChar32)(unsigned char)s[e + 1]))))
            qtts_strbuf_adds(&z->out, L->full_stop);
        return e;
    }
    if (p < n && s[p] == '%') {
        char *w = spell(z, rs, v);
        if (w) put_template(z, L->percent, w, NULL, NULL);
        free(w);
        return p + 1;
    }
    if (sp && p + sp < n && s[p + sp] == '%') { /* "50 %" (French and German typography) */
        char *w = spell(z, rs, v);
        if (w) put_template(z, L->percent, w, NULL, NULL);
        free(w);
        return p + sp + 1;
    }
    /* English ordinals: 1st 2nd 3rd 4th */
    if (a.is_int && !strcmp(L->code, "en") && p + 2 <= n &&
        (!strncasecmp(s + p, "st", 2) || !strncasecmp(s + p, "nd", 2) || !strncasecmp(s + p, "rd", 2) ||
         !strncasecmp(s + p, "th", 2)) &&
        (p + 2 == n || !u_isalpha((UChar32)(unsigned char)s[p + 2]))) {
        char *w = spell(z, L->rs_ordinal, v);
        if (w) put_words(z, w);
        free(w);
        return p + 2;
    }
    /* Chinese: 2026年 is read digit by digit, 2个 is 两个 */
    if (!strcmp(L->code, "zh") && a.is_int && p + 3 <= n) {
        static const char *const MEASURE[] = {"个", "次", "位", "本", "只", "条", "张", "件", "天", "岁",
                                              "种", "份", "台", "辆", "杯", "点", "周", "家", "块", "倍"};
        if (!memcmp(s + p, "年", 3) && a.n_digits == 4) rs = L->rs_year;
        for (size_t i = 0; i < sizeof MEASURE / sizeof MEASURE[0]; i++)
            if (a.v == 2 && !negative && !memcmp(s + p, MEASURE[i], 3)) {
                put_words(z, "两");
                return p;
            }
    }
    /* a unit after the number (or after a range's second number) */
    const char *unit = qtts_norm_unit_match(s + p + sp, n - p - sp, &k);
    if (unit && qtts_norm_unit_find(unit, L->code)) {
        char *w = spell(z, a.is_int ? rs_count : rs, v);
        const char *uw = unit_word(z, unit, v);
        if (w && uw) put_words(z, w), put_words(z, uw);
        free(w);
        return p + sp + k;
    }
    /* ranges 5-10, 5–10 */
    size_t dash = p < n && s[p] == '-' ? 1 : p + 3 <= n && !memcmp(s + p, "\xE2\x80\x93", 3) ? 3 : 0;
    if (dash && a.is_int && p + dash < n && is_digit(s[p + dash])) {
        number b;
        if (parse_number(L, s + p + dash, n - p - dash, &b) && b.n_digits <= 15) {
            char *w0 = spell(z, rs, v), *w1 = spell(z, rs, b.v);
            size_t q = p + dash + b.len, sq = q < n && s[q] == ' ' ? 1 : 0;
            const char *u2 = qtts_norm_unit_match(s + q + sq, n - q - sq, &k);
            if (w0 && w1) {
                put_template(z, L->range, w0, w1, NULL);
                if (u2 && qtts_norm_unit_find(u2, L->code)) put_words(z, unit_word(z, u2, b.v)), q += sq + k;
                else if (q < n && s[q] == '%') put_words(z, strstr(L->percent, "{0}") == L->percent ? L->percent + 4 : ""), q++;
            }
            free(w0), free(w1);
            return q;
        }
    }
    /* fractions 3/4 (not dates: the denominator is at most 100 and nothing follows) */
    if (a.is_int && p + 1 < n && s[p] == '/' && is_digit(s[p + 1])) {
        number b;
        if (parse_number(L, s + p + 1, n - p - 1, &b) && b.is_int && b.v >= 2 && b.v <= 100 &&
            !(p + 1 + b.len < n && s[p + 1 + b.len] == '/')) {
            char *w0 = spell(z, rs, v), *w1 = spell(z, rs, b.v);
            if (w0 && w1) put_template(z, L->fraction, w0, w1, NULL);
            free(w0), free(w1);
            return p + 1 + b.len;
        }
    }
    if (L->year_words && a.is_int && !negative && a.n_digits == 4 && a.v >= 1100 && a.v <= 2099 && s[0] != '0')
        rs = L->rs_year;
    char *w = spell(z, rs, v);
    if (w) put_words(z, w);
    free(w);
    return p;
}

/* ---- URLs and e-mail addresses: the host, in words ---- */

static void put_host(norm *z, const char *s, size_t n) {
    if (n > 4 && !strncasecmp(s, "www.", 4)) s += 4, n -= 4;
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && s[j] != '.') j++;
        qtts_strbuf_add(&z->out, " ", z->L->spaced || qtts_strbuf_last(&z->out) != ' ' ? (i ? 1 : 0) : 0);
        if (i) put_words(z, z->L->w_dot), qtts_strbuf_add(&z->out, z->L->spaced ? " " : "", z->L->spaced);
        if (!i) {
            uint32_t last = qtts_strbuf_last(&z->out);
            if (last && last != ' ' && last != '\n' && z->L->spaced) qtts_strbuf_add(&z->out, " ", 1);
        }
        qtts_strbuf_add(&z->out, s + i, j - i);
        i = j + 1;
    }
    z->pending_space = 1;
}

static int host_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '-' || c == '.'; }

static size_t try_url(norm *z, const char *s, size_t n) {
    size_t h = 0;
    if (n > 8 && !strncasecmp(s, "https://", 8)) h = 8;
    else if (n > 7 && !strncasecmp(s, "http://", 7)) h = 7;
    else if (!(n > 4 && !strncasecmp(s, "www.", 4))) return 0;
    size_t e = h;
    while (e < n && host_char(s[e])) e++;
    size_t host_end = e;
    while (host_end > h && s[host_end - 1] == '.') host_end--;
    if (host_end == h || !memchr(s + h, '.', host_end - h)) return 0;
    while (e < n && !strchr(" \t\n\"'<>)]", s[e]) && (unsigned char)s[e] < 0x80) e++;
    while (e > host_end && strchr(".,;:!?", s[e - 1])) e--; /* sentence punctuation after the URL */
    put_host(z, s + h, host_end - h);
    return e;
}

static size_t try_email(norm *z, const char *s, size_t n) {
    size_t at = 0;
    while (at < n && (host_char(s[at]) || s[at] == '_' || s[at] == '+')) at++;
    if (!at || at >= n || s[at] != '@') return 0;
    size_t e = at + 1;
    while (e < n && host_char(s[e])) e++;
    while (e > at + 1 && s[e - 1] == '.') e--;
    if (e == at + 1 || !memchr(s + at + 1, '.', e - at - 1)) return 0;
    size_t i = 0;
    while (i < at) { /* john.smith -> john dot smith */
        size_t j = i;
        while (j < at && s[j] != '.') j++;
        if (i) put_words(z, z->L->w_dot);
        put(z, s + i, j - i);
        if (z->L->spaced) z->pending_space = 1;
        i = j + 1;
    }
    put_words(z, z->L->w_at);
    put_host(z, s + at + 1, e - at - 1);
    return e;
}

/* ---- words: abbreviations, roman numerals ---- */

/* The roman numeral written at s (canonical form only, "IV" not "IIII"),
 * followed by no letter or digit: its value, *len its bytes; 0 when none. */
static int roman_at(const char *s, size_t n, size_t *len) {
    static const struct { const char *w; int v; } R[] = {{"M", 1000}, {"CM", 900}, {"D", 500}, {"CD", 400},
        {"C", 100}, {"XC", 90}, {"L", 50}, {"XL", 40}, {"X", 10}, {"IX", 9}, {"V", 5}, {"IV", 4}, {"I", 1}};
    size_t k = 0;
    while (k < n && k < 16 && strchr("IVXLCDM", s[k]) && s[k]) k++;
    if (!k || (k < n && (u_isalnum((UChar32)(unsigned char)s[k]) || (unsigned char)s[k] >= 0x80))) return 0;
    int v = 0;
    for (size_t p = 0; p < k;) { /* the value, left to right */
        int step = 0;
        for (size_t i = 0; i < sizeof R / sizeof R[0] && !step; i++) {
            size_t l = strlen(R[i].w);
            if (p + l <= k && !memcmp(s + p, R[i].w, l)) v += R[i].v, p += l, step = 1;
        }
    }
    char canon[32];
    size_t c = 0;
    for (int x = v, i = 0; x > 0 && c < sizeof canon - 3;) { /* written back: only the canonical form matches */
        if (x >= R[i].v) {
            size_t l = strlen(R[i].w);
            memcpy(canon + c, R[i].w, l), c += l, x -= R[i].v;
        } else {
            i++;
        }
    }
    if (c != k || memcmp(canon, s, k) || v > 3999) return 0;
    *len = k;
    return v;
}

/* The word the output ends with, before one space: *w and its bytes (0: none). */
static size_t last_word(const qtts_strbuf *out, const char **w) {
    size_t e = out->len;
    if (!e || out->s[e - 1] != ' ') return 0;
    e--;
    size_t b = e;
    while (b > 0) {
        size_t q = b - 1;
        while (q > 0 && ((unsigned char)out->s[q] & 0xC0) == 0x80) q--;
        uint32_t c;
        qtts_utf8_decode(out->s + q, &c);
        if (!u_isalpha((UChar32)c) && c != '-') break;
        b = q;
    }
    *w = out->s + b;
    return e - b;
}

/* "Chapter IV" -> Chapter four, "Louis XIV" -> Louis the fourteenth; not "I" elsewhere. */
static size_t try_roman(norm *z, const char *s, size_t n) {
    const qtts_norm_lang *L = z->L;
    const char *w;
    size_t wl = last_word(&z->out, &w), k;
    int kind = wl ? qtts_norm_roman_context(L->code, w, wl) : 0, v = kind ? roman_at(s, n, &k) : 0;
    if (!v || (kind == 2 && (!L->regnal || v > 99))) return 0;
    char *num = spell(z, kind == 2 && v <= L->regnal_ordinal_max ? L->rs_ordinal : L->rs_cardinal, v);
    if (!num) return 0;
    if (kind == 1) put_words(z, num);
    else put_template(z, L->regnal, num, NULL, NULL);
    free(num);
    return k;
}

/* Dr. -> Doctor, z. B. -> zum Beispiel (norm_words.c) */
static size_t try_abbrev(norm *z, const char *s, size_t n) {
    size_t k;
    const qtts_norm_abbrev *a = qtts_norm_abbrev_match(z->L->code, s, n, &k);
    if (!a) return 0;
    put_words(z, a->spoken);
    if (a->when == QTTS_ABBR_ENDS) { /* "etc." at the end of a line or before a capital also ends the sentence */
        uint32_t next = 0;
        if (k + 1 < n && s[k] == ' ') qtts_utf8_decode(s + k + 1, &next);
        if (k == n || u_isupper((UChar32)next)) qtts_strbuf_adds(&z->out, z->L->full_stop);
    }
    return k;
}

/* ---- one line's inline text ---- */

static int drop_cp(uint32_t c) {
    UChar32 u = (UChar32)c;
    if (c < 0x80) return 0;
    if (c == 0x200D || c == 0xFE0E || c == 0xFE0F || c == 0x20E3 || (c >= 0x1F1E6 && c <= 0x1F1FF)) return 1;
    if (u_hasBinaryProperty(u, UCHAR_EXTENDED_PICTOGRAPHIC) || u_hasBinaryProperty(u, UCHAR_EMOJI_MODIFIER)) return 1;
    return u_charType(u) == U_FORMAT_CHAR || (c >= 0xE0020 && c <= 0xE007F);
}

static void put_inline(norm *z, const char *s, size_t n, int depth) {
    size_t p = 0;
    while (p < n && !z->failed && !z->out.failed) {
        char c = s[p];
        uint32_t prev = qtts_strbuf_last(&z->out);
        size_t k;
        if (c == '`') { /* inline code: its text stays, the marks go */
            p++;
            continue;
        }
        if (c == '*' || c == '~') {
            while (p < n && s[p] == c) p++;
            continue;
        }
        if (c == '_') {
            size_t q = p;
            while (q < n && s[q] == '_') q++;
            int inside = is_alnum_cp(prev) && q < n && is_digit(s[q]) + u_isalpha((UChar32)(unsigned char)s[q]);
            if (inside) put_space(z);
            p = q;
            continue;
        }
        if ((c == '[' || (c == '!' && p + 1 < n && s[p + 1] == '[')) && depth == 0) { /* [text](url) */
            size_t t = p + (c == '!' ? 2 : 1), close = t;
            while (close < n && s[close] != ']' && s[close] != '\n') close++;
            if (close + 1 < n && s[close] == ']' && s[close + 1] == '(') {
                size_t u = close + 2;
                while (u < n && s[u] != ')' && s[u] != ' ') u++;
                if (u < n && s[u] == ')') {
                    put_inline(z, s + t, close - t, depth + 1);
                    p = u + 1;
                    continue;
                }
            }
        }
        if (c == '<' && p + 2 < n) { /* HTML tags */
            size_t q = p + 1 + (s[p + 1] == '/');
            if (q < n && ((s[q] >= 'a' && s[q] <= 'z') || (s[q] >= 'A' && s[q] <= 'Z'))) {
                size_t e = q;
                while (e < n && e < p + 200 && s[e] != '>' && s[e] != '<' && s[e] != '\n') e++;
                if (e < n && s[e] == '>') {
                    size_t inner = try_url(z, s + q, e - q);
                    if (!inner) put_space(z);
                    p = e + 1;
                    continue;
                }
            }
        }
        int word_start = !is_word_cp(prev);
        if (word_start && (c == 'h' || c == 'H' || c == 'w' || c == 'W') && (k = try_url(z, s + p, n - p))) {
            p += k;
            continue;
        }
        if (word_start && host_char(c) && c != '-' && c != '.' && (k = try_email(z, s + p, n - p))) {
            p += k;
            continue;
        }
        if (z->mode == QTTS_NORM_FULL) {
            const qtts_norm_lang *L = z->L;
            int after_word = is_word_cp(prev) && !z->pending_space;
            if (!after_word && ((k = try_abbrev(z, s + p, n - p)) ||
                                (strchr("IVXLCDM", c) && c && (k = try_roman(z, s + p, n - p))))) {
                p += k;
                continue;
            }
            if (is_digit(c) && !after_word) {
                if ((k = try_iso_date(z, s + p, n - p)) || (k = try_numeric_date(z, s + p, n - p)) ||
                    (k = try_time(z, s + p, n - p)) ||
                    (k = try_phone(z, s + p, n - p)) || (k = number_at(z, s + p, n - p, 0, NULL))) {
                    p += k;
                    continue;
                }
            }
            if (c == '+' && p + 1 < n && is_digit(s[p + 1]) && (k = try_phone(z, s + p, n - p))) {
                p += k;
                continue;
            }
            if ((c == '-' || (p + 3 <= n && !memcmp(s + p, "\xE2\x88\x92", 3))) && !after_word && !is_digit((char)prev)) {
                size_t m = c == '-' ? 1 : 3;
                if (p + m < n && is_digit(s[p + m]) && (k = number_at(z, s + p + m, n - p - m, 1, NULL))) {
                    p += m + k;
                    continue;
                }
            }
            const char *cur = !after_word ? qtts_norm_currency_match(s + p, n - p, L->code, &k) : NULL;
            if (cur && (unsigned char)c >= 0x80 ? 1 : cur && c == '$') {
                size_t q = p + k + (p + k < n && s[p + k] == ' ');
                size_t m;
                if (q < n && is_digit(s[q]) && (m = number_at(z, s + q, n - q, 0, cur))) {
                    p = q + m;
                    continue;
                }
            }
            const char *sym = c == '&' ? L->w_and : c == '=' ? L->w_equals : c == '+' ? L->w_plus
                            : c == '@' ? L->w_at : c == '#' && p + 1 < n && is_digit(s[p + 1]) ? L->w_hash
                            : c == '%' ? NULL : NULL;
            if (sym) {
                put_words(z, sym);
                p += c == '&' && p + 1 < n && s[p + 1] == '&' ? 2 : 1; /* && is one "and" */
                continue;
            }
            if (c == '/' && is_alnum_cp(prev) && p + 1 < n && u_isalpha((UChar32)(unsigned char)s[p + 1])) {
                put_words(z, L->w_slash);
                p++;
                continue;
            }
        }
        uint32_t cp;
        int len = qtts_utf8_decode(s + p, &cp);
        if (cp == '\t' || cp == '\r' || qtts_unicode_is_space(cp) || (cp < 0x20) || cp == 0x7F ||
            (cp >= 0x80 && cp < 0xA0)) {
            put_space(z);
        } else if (!drop_cp(cp)) {
            put(z, s + p, (size_t)len);
        }
        p += (size_t)len;
    }
}

/* ---- lines: markdown structure ---- */

static int only_of(const char *s, size_t n, const char *set, const char *need) {
    int seen = 0;
    for (size_t i = 0; i < n; i++) {
        if (!strchr(set, s[i])) return 0;
        if (strchr(need, s[i])) seen++;
    }
    return seen;
}

static void end_item(norm *z) {
    while (z->out.len && z->out.s[z->out.len - 1] == ' ') z->out.s[--z->out.len] = 0;
    uint32_t last = qtts_strbuf_last(&z->out);
    if (last && last != '\n' && !u_ispunct((UChar32)last)) qtts_strbuf_adds(&z->out, z->L->full_stop);
}

int norm_line_kind(const char *s, size_t n, int complete, int in_fence, norm_line *k) {
    memset(k, 0, sizeof *k);
    /* an unfinished line is certain once it has a character that no line
     * mark uses (so it is no rule, separator or fence) and enough bytes for
     * the marks at its start */
    if (!complete) {
        if (in_fence == 1) return -1;
        size_t i = 0;
        while (i < n && strchr(" \t-*_|:>#0123456789.)+~`", s[i])) i++;
        if (i == n) return -1;
    }
    size_t ind = 0;
    while (ind < n && ind < 4 && s[ind] == ' ') ind++;
    const char *t = s + ind;
    size_t m = n - ind;
    if (m >= 3 && (!strncmp(t, "```", 3) || !strncmp(t, "~~~", 3))) { /* code blocks are not read */
        k->skip = k->fence = 1;
        return complete ? 0 : -1; /* read once whole */
    }
    if (in_fence == 2) return 0; /* a code line that is read: plain text, no marks */
    if (in_fence) k->skip = 1;
    else if (m >= 3 && only_of(t, m, "-*_ ", "-*_") >= 3 && (t[0] == '-' || t[0] == '*' || t[0] == '_')) k->skip = 1; /* rule */
    else if (m && only_of(t, m, "|-: ", "-") && memchr(t, '|', m)) k->skip = 1; /* table separator row */
    if (k->skip) return 0;
    while (m && t[0] == '>') { /* quotes */
        t++, m--;
        if (m && t[0] == ' ') t++, m--;
    }
    if (!complete && m < 8) return -1; /* the marks below look at up to 7 bytes */
    size_t h = 0;
    while (h < m && h < 6 && t[h] == '#') h++;
    if (h && h < m && t[h] == ' ') t += h + 1, m -= h + 1, k->item = 1;
    else if (m >= 2 && strchr("-*+", t[0]) && t[1] == ' ') t += 2, m -= 2, k->item = 1;
    else {
        size_t d = 0;
        while (d < m && d < 3 && is_digit(t[d])) d++;
        if (d && d + 1 < m && (t[d] == '.' || t[d] == ')') && t[d + 1] == ' ') t += d + 2, m -= d + 2, k->item = 1;
    }
    k->table = m && t[0] == '|';
    k->content = (size_t)(t - s);
    return k->table && !complete ? -1 : 0; /* a table row is read once whole */
}

static void put_table_row(norm *z, const char *t, size_t m) {
    size_t i = 1;
    int cells = 0;
    while (i < m) {
        size_t j = i;
        while (j < m && t[j] != '|') j++;
        size_t a = i, b = j;
        while (a < b && t[a] == ' ') a++;
        while (b > a && t[b - 1] == ' ') b--;
        if (b > a) {
            if (cells++) qtts_strbuf_adds(&z->out, z->L->list_sep);
            put_inline(z, t + a, b - a, 0);
        }
        i = j + 1;
    }
    if (cells) end_item(z);
}

void norm_put_inline(norm_ctx *z, const char *s, size_t n) { put_inline(z, s, n, 0); }

int norm_fence_state(const norm_ctx *z) { return z->in_fence ? (z->read_code ? 2 : 1) : 0; }

void norm_end_line(norm_ctx *z, const norm_line *k, size_t before, int has_nl) {
    if (k->item) end_item(z);
    while (z->out.len > before && z->out.s[z->out.len - 1] == ' ') z->out.s[--z->out.len] = 0;
    if (z->out.len > before && has_nl) qtts_strbuf_add(&z->out, "\n", 1);
    z->pending_space = 0;
}

void norm_put_line(norm_ctx *z, const char *s, size_t n, int has_nl) {
    size_t k = 0;
    while (k < n && (s[k] == ' ' || s[k] == '\t' || s[k] == '\r')) k++;
    if (k == n) {
        /* a blank line: one paragraph break (the splitter ends a chunk there) */
        if ((!z->in_fence || z->read_code) && z->out.len >= 1 && z->out.s[z->out.len - 1] == '\n' &&
            !(z->out.len >= 2 && z->out.s[z->out.len - 2] == '\n'))
            qtts_strbuf_add(&z->out, "\n", 1);
        z->pending_space = 0;
        return;
    }
    norm_line kind;
    norm_line_kind(s, n, 1, norm_fence_state(z), &kind);
    size_t before = z->out.len;
    if (kind.fence) z->in_fence = !z->in_fence;
    if (kind.skip) {
        z->pending_space = 0;
        return;
    }
    if (kind.table) {
        put_table_row(z, s + kind.content, n - kind.content);
        kind.item = 0; /* the row ended itself */
    } else {
        put_inline(z, s + kind.content, n - kind.content, 0);
    }
    norm_end_line(z, &kind, before, has_nl);
}

void norm_trim_end(norm_ctx *z) {
    while (z->out.len && (z->out.s[z->out.len - 1] == '\n' || z->out.s[z->out.len - 1] == ' '))
        z->out.s[--z->out.len] = 0;
}

void norm_ctx_begin(norm_ctx *z, const char *lang, qtts_norm_mode mode, size_t max, qtts_err *err) {
    memset(z, 0, sizeof *z);
    z->L = qtts_norm_lang_find(lang);
    z->mode = mode;
    z->err = err;
    qtts_strbuf_init(&z->out, max);
    if (mode != QTTS_NORM_OFF) qtts_spell_init(&z->sp, z->L);
}

void norm_ctx_end(norm_ctx *z) {
    if (z->mode != QTTS_NORM_OFF) qtts_spell_free(&z->sp);
}

/* ---- language ---- */

const char *qtts_norm_detect(const char *text, size_t len, const char *lang) {
    const qtts_norm_lang *L = lang && *lang && strcasecmp(lang, "auto") ? qtts_norm_lang_find(lang) : NULL;
    if (L) return L->code;
    if (qtts_utf8_check(text, len) != len) return "en";
    /* letters by script; Latin languages by their own letters */
    long han = 0, kana = 0, hangul = 0, cyr = 0, latin = 0;
    long marks[6] = {0}; /* de fr es pt it: ä ö ü ß / ç è ê à / ñ ¿ ¡ / ã õ / ò ì */
    static const struct { uint32_t cp; int lang; } MARKS[] = {
        {0xE4, 0}, {0xF6, 0}, {0xFC, 0}, {0xDF, 0}, {0xE7, 1}, {0xE8, 1}, {0xEA, 1}, {0xE0, 1}, {0xF4, 1},
        {0xF1, 2}, {0xBF, 2}, {0xA1, 2}, {0xE1, 2}, {0xE3, 3}, {0xF5, 3}, {0xF2, 4}, {0xEC, 4},
    };
    for (size_t p = 0; p < len;) {
        uint32_t c;
        p += (size_t)qtts_utf8_decode(text + p, &c);
        if ((c >= 0x3040 && c <= 0x30FF)) kana++;
        else if (c >= 0x4E00 && c <= 0x9FFF) han++;
        else if (c >= 0xAC00 && c <= 0xD7AF) hangul++;
        else if (c >= 0x400 && c <= 0x4FF) cyr++;
        else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') latin++;
        uint32_t lc = c >= 0xC0 && c <= 0xDE ? c + 0x20 : c;
        for (size_t i = 0; i < sizeof MARKS / sizeof MARKS[0]; i++)
            if (MARKS[i].cp == lc) marks[MARKS[i].lang]++;
    }
    if (kana) return "ja";
    if (hangul && hangul >= han) return "ko";
    if (han) return "zh";
    if (cyr > latin) return "ru";
    static const char *const LATIN[] = {"de", "fr", "es", "pt", "it"};
    int best = -1;
    for (int i = 0; i < 5; i++)
        if (marks[i] && (best < 0 || marks[i] > marks[best])) best = i;
    return best >= 0 ? LATIN[best] : "en";
}

char *qtts_text_normalize(const char *text, size_t len, const char *lang, qtts_norm_mode mode, size_t *out_len,
                          qtts_err *err) {
    return qtts_text_normalize_lex(text, len, lang, mode, NULL, out_len, err);
}

char *qtts_text_normalize_lex(const char *text, size_t len, const char *lang, qtts_norm_mode mode,
                              const qtts_lexicon *lex, size_t *out_len, qtts_err *err) {
    qtts_norm_opts o = {.lexicon = lex};
    return qtts_text_normalize_opts(text, len, lang, mode, &o, out_len, err);
}

char *qtts_text_normalize_opts(const char *text, size_t len, const char *lang, qtts_norm_mode mode,
                               const qtts_norm_opts *opts, size_t *out_len, qtts_err *err) {
    const qtts_lexicon *lex = opts ? opts->lexicon : NULL;
    if (!text) text = "", len = 0;
    size_t bad = qtts_utf8_check(text, len);
    if (bad != len) {
        qtts_fail_as(err, QTTS_ERR_INVALID, "the text is not valid UTF-8 (at byte %zu)", bad);
        return NULL;
    }
    if (lang && *lang && strcasecmp(lang, "auto") && !qtts_norm_lang_find(lang)) {
        qtts_fail_as(err, QTTS_ERR_INVALID, "no text rules for language \"%s\"", lang);
        return NULL;
    }
    const char *code = qtts_norm_detect(text, len, lang);
    qtts_strbuf lexed;
    qtts_strbuf_init(&lexed, 0);
    if (lex && mode != QTTS_NORM_OFF) { /* the lexicon's respellings first */
        qtts_lexicon_apply(lex, code, text, 0, len, 1, &lexed);
        if (lexed.failed) {
            qtts_strbuf_free(&lexed);
            qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "out of memory");
            return NULL;
        }
        text = lexed.s ? lexed.s : "", len = lexed.len;
    }
    norm z;
    norm_ctx_begin(&z, code, mode, 16 * len + 4096, err);
    z.read_code = opts && opts->read_code;
    if (mode == QTTS_NORM_OFF) {
        qtts_strbuf_add(&z.out, text, len);
    } else {
        for (size_t p = 0; p < len && !z.failed;) {
            const char *nl = memchr(text + p, '\n', len - p);
            size_t e = nl ? (size_t)(nl - text) : len;
            norm_put_line(&z, text + p, e - p, nl != NULL);
            p = e + 1;
        }
        norm_trim_end(&z);
    }
    norm_ctx_end(&z);
    qtts_strbuf_free(&lexed);
    if (z.failed || z.out.failed) {
        if (z.out.failed && !z.failed)
            qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "out of memory (or past the normalizer's output limit)");
        qtts_strbuf_free(&z.out);
        return NULL;
    }
    if (!z.out.s && qtts_strbuf_add(&z.out, "", 0)) {
        qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "out of memory");
        return NULL;
    }
    if (out_len) *out_len = z.out.len;
    return z.out.s;
}
