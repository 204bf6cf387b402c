/* Long-text splitter (see split.h). Works on decoded code points with their
 * byte offsets, so every cut lands on a UTF-8 sequence boundary. */
#include "text/split.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <utf8proc.h>

#define INVALID_CP 0xFFFFFFFFu /* an undecodable byte, kept as is */

typedef struct {
    const char *text;
    uint32_t *cp;
    size_t *off; /* n + 1 byte offsets */
    size_t *w;   /* n + 1 prefix sums of unit weights */
    size_t n;
    size_t max;
    int by_line;
    qtts_text_chunk *out;
    size_t n_out, cap_out;
    qtts_err *err;
} splitter;

void qtts_split_params_default(qtts_split_params *p) {
    p->max_chars = QTTS_SPLIT_DEFAULT_MAX;
    p->cjk_weight = 3;
    p->by_line = 0;
}

static int is_newline(uint32_t c) { return c == '\n' || c == '\r' || c == 0x85 || c == 0x2028 || c == 0x2029; }

static int is_space(uint32_t c) {
    if (c == INVALID_CP) return 0;
    if (c == ' ' || c == '\t' || c == '\v' || c == '\f' || is_newline(c)) return 1;
    if (c < 0x80) return 0;
    return utf8proc_category((utf8proc_int32_t)c) == UTF8PROC_CATEGORY_ZS;
}

/* Marks that end a sentence only when followed by whitespace / the end. */
static int is_ascii_term(uint32_t c) { return c == '.' || c == '!' || c == '?' || c == ';' || c == 0x2026; }

/* Marks that end a sentence wherever they stand (scripts without spaces). */
static int is_cjk_term(uint32_t c) {
    return c == 0x3002 || c == 0xFF01 || c == 0xFF1F || c == 0xFF1B || c == 0xFF0E || c == 0xFF61 || c == 0x061F ||
           c == 0x06D4 || c == 0x0964 || c == 0x0965;
}

/* Closing quotes/brackets that belong to the sentence before them. */
static int is_closer(uint32_t c) {
    switch (c) {
    case '"': case '\'': case ')': case ']': case '}':
    case 0x2019: case 0x201D: case 0x00BB: case 0x203A: /* ’ ” » › */
    case 0x300D: case 0x300F: case 0xFF09: case 0x3011: case 0x3009: case 0x300B: case 0xFF63: case 0x3015:
        return 1;
    default:
        return 0;
    }
}

/* Clause marks where a too-long sentence may be cut (after the mark). */
static int is_clause(uint32_t c) {
    return c == ',' || c == ':' || c == 0xFF0C || c == 0x3001 || c == 0xFF1A || c == 0x2013 || c == 0x2014 ||
           c == 0x060C || c == 0xFF64;
}

/* Code points that must not start a cut piece (they attach to the previous one). */
static int is_attached(uint32_t c) {
    if (c == INVALID_CP) return 0;
    if (c == 0x200D || (c >= 0xFE00 && c <= 0xFE0F) || (c >= 0xE0100 && c <= 0xE01EF) || (c >= 0x1F3FB && c <= 0x1F3FF))
        return 1;
    if (c < 0x300) return 0;
    utf8proc_category_t cat = utf8proc_category((utf8proc_int32_t)c);
    return cat == UTF8PROC_CATEGORY_MN || cat == UTF8PROC_CATEGORY_MC || cat == UTF8PROC_CATEGORY_ME;
}

static size_t unit_weight(uint32_t c, size_t cjk_w) {
    if (c == INVALID_CP || c < 0x1100) return 1;
    return utf8proc_charwidth((utf8proc_int32_t)c) == 2 ? cjk_w : 1;
}

static size_t weight(const splitter *s, size_t a, size_t b) { return s->w[b] - s->w[a]; }

static int emit(splitter *s, size_t a, size_t b) {
    while (a < b && is_space(s->cp[a])) a++;
    while (b > a && is_space(s->cp[b - 1])) b--;
    if (a >= b) return 0;
    if (s->n_out == s->cap_out) {
        size_t nc = s->cap_out ? s->cap_out * 2 : 16;
        qtts_text_chunk *p = realloc(s->out, nc * sizeof *p);
        if (!p) return qtts_fail(s->err, "text split: out of memory");
        s->out = p, s->cap_out = nc;
    }
    s->out[s->n_out].start = s->off[a];
    s->out[s->n_out].len = s->off[b] - s->off[a];
    s->n_out++;
    return 0;
}

/* Is the '.' at index i part of an abbreviation, an initial or a list number? */
static int dot_is_not_end(const splitter *s, size_t seg_start, size_t i) {
    static const char *const abbrev[] = {"mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g",
                                         "i.e", "no", "approx", "dept", "fig", "inc", "ltd", "co", "mt", "cf"};
    size_t b = i;
    while (b > seg_start && !is_space(s->cp[b - 1]) && !is_closer(s->cp[b - 1]) && s->cp[b - 1] != '(') b--;
    size_t n = i - b;
    if (n == 0 || n > 6) return 0;
    char word[8];
    int digits = 1;
    for (size_t k = 0; k < n; k++) {
        uint32_t c = s->cp[b + k];
        if (c >= 0x80) return 0;
        word[k] = (char)c;
        if (c < '0' || c > '9') digits = 0;
    }
    word[n] = 0;
    if (n == 1 && ((word[0] >= 'A' && word[0] <= 'Z'))) return 1; /* "J. Smith" */
    if (digits && n <= 3) {                                      /* "1. item" at a line start */
        size_t p = b;
        while (p > seg_start && is_space(s->cp[p - 1]) && !is_newline(s->cp[p - 1])) p--;
        if (p == seg_start || is_newline(s->cp[p - 1])) return 1;
    }
    for (size_t k = 0; k < sizeof abbrev / sizeof abbrev[0]; k++)
        if (!strcasecmp(word, abbrev[k])) return 1;
    return 0;
}

/* If a sentence ends at index i, returns the index just past its end
 * (terminator run + closers); else 0. */
static size_t sentence_end_at(const splitter *s, size_t seg_start, size_t seg_end, size_t i) {
    uint32_t c = s->cp[i];
    int cjk = is_cjk_term(c);
    if (!cjk && !is_ascii_term(c)) return 0;
    size_t j = i;
    while (j < seg_end && (is_ascii_term(s->cp[j]) || is_cjk_term(s->cp[j]))) {
        cjk |= is_cjk_term(s->cp[j]);
        j++;
    }
    while (j < seg_end && is_closer(s->cp[j])) j++;
    if (cjk) return j;
    if (j < seg_end && !is_space(s->cp[j])) return 0;
    if (j == i + 1 && c == '.' && dot_is_not_end(s, seg_start, i)) return 0;
    return j;
}

typedef struct {
    size_t a, b;
} range;

typedef struct {
    range *v;
    size_t n, cap;
} range_list;

static int push_range(splitter *s, range_list *l, size_t a, size_t b) {
    while (a < b && is_space(s->cp[a])) a++;
    while (b > a && is_space(s->cp[b - 1])) b--;
    if (a >= b) return 0;
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 16;
        range *p = realloc(l->v, nc * sizeof *p);
        if (!p) return qtts_fail(s->err, "text split: out of memory");
        l->v = p, l->cap = nc;
    }
    l->v[l->n].a = a, l->v[l->n].b = b;
    l->n++;
    return 0;
}

/* Cuts an over-long sentence [a, b) into pieces of at most max units. */
static int split_long(splitter *s, range_list *l, size_t a, size_t b) {
    while (a < b && weight(s, a, b) > s->max) {
        size_t lim = a; /* largest index with weight(a, lim) <= max */
        while (lim < b && weight(s, a, lim + 1) <= s->max) lim++;
        if (lim == a) lim = a + 1; /* one character over budget on its own: take it */
        size_t clause = 0, space = 0, hard = 0;
        for (size_t k = lim; k > a; k--) { /* cut before index k */
            uint32_t prev = s->cp[k - 1], next = k < b ? s->cp[k] : ' ';
            if (!clause && (is_clause(prev) || (is_closer(prev) && k >= a + 2 && is_clause(s->cp[k - 2])))) clause = k;
            if (!space && is_space(next) && !is_space(prev)) space = k;
            if (!hard && !is_attached(next) && prev != 0x200D) hard = k;
            if (clause && space) break;
        }
        size_t floor_ = a + (lim - a) / 3; /* avoid tiny leading pieces when a later option exists */
        size_t cut = clause > floor_ ? clause : space > floor_ ? space : clause ? clause : space ? space : hard;
        if (!cut) { /* the budget ends inside one cluster: keep the cluster whole */
            cut = lim;
            while (cut < b && (is_attached(s->cp[cut]) || s->cp[cut - 1] == 0x200D)) cut++;
        }
        if (push_range(s, l, a, cut)) return -1;
        a = cut;
        while (a < b && is_space(s->cp[a])) a++;
    }
    return push_range(s, l, a, b);
}

/* One paragraph (or line): sentences -> pieces <= max -> packed chunks. */
static int process_segment(splitter *s, size_t a, size_t b) {
    range_list units = {0};
    size_t u = a;
    int rc = 0;
    for (size_t i = a; i < b && !rc; i++) {
        if (is_newline(s->cp[i])) {
            rc = split_long(s, &units, u, i);
            u = i + 1;
            continue;
        }
        size_t e = sentence_end_at(s, a, b, i);
        if (e) {
            rc = split_long(s, &units, u, e);
            u = e;
            i = e - 1;
        }
    }
    if (!rc) rc = split_long(s, &units, u, b);
    size_t ca = 0, cb = 0;
    int have = 0;
    for (size_t k = 0; k < units.n && !rc; k++) {
        if (have && weight(s, ca, units.v[k].b) <= s->max) {
            cb = units.v[k].b;
            continue;
        }
        if (have) rc = emit(s, ca, cb);
        ca = units.v[k].a, cb = units.v[k].b, have = 1;
    }
    if (have && !rc) rc = emit(s, ca, cb);
    free(units.v);
    return rc;
}

long qtts_text_split(const char *text, size_t len, const qtts_split_params *p, qtts_text_chunk **out, qtts_err *err) {
    qtts_split_params def;
    qtts_split_params_default(&def);
    if (!p) p = &def;
    *out = NULL;
    if (!text || !len) return 0;
    splitter s = {0};
    s.text = text;
    s.err = err;
    s.max = (size_t)(p->max_chars > 0 ? p->max_chars : QTTS_SPLIT_DEFAULT_MAX);
    size_t cjk_w = (size_t)(p->cjk_weight > 0 ? p->cjk_weight : 3);
    s.by_line = p->by_line;
    s.cp = malloc(len * sizeof *s.cp);
    s.off = malloc((len + 1) * sizeof *s.off);
    s.w = malloc((len + 1) * sizeof *s.w);
    if (!s.cp || !s.off || !s.w) {
        free(s.cp), free(s.off), free(s.w);
        qtts_fail(err, "text split: out of memory (%zu bytes of text)", len);
        return -1;
    }
    size_t pos = 0;
    s.w[0] = 0;
    while (pos < len) {
        utf8proc_int32_t c;
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)text + pos, (utf8proc_ssize_t)(len - pos), &c);
        uint32_t cp = INVALID_CP;
        if (k > 0 && c >= 0) cp = (uint32_t)c;
        else k = 1;
        s.cp[s.n] = cp;
        s.off[s.n] = pos;
        s.w[s.n + 1] = s.w[s.n] + unit_weight(cp, cjk_w);
        s.n++;
        pos += (size_t)k;
    }
    s.off[s.n] = len;

    /* Segments: lines (by-line mode) or paragraphs separated by blank lines. */
    int rc = 0;
    size_t seg = 0, i = 0;
    while (i < s.n && !rc) {
        if (!is_newline(s.cp[i])) {
            i++;
            continue;
        }
        size_t nl_end = i + 1;
        if (s.cp[i] == '\r' && nl_end < s.n && s.cp[nl_end] == '\n') nl_end++;
        if (s.by_line) {
            rc = process_segment(&s, seg, i);
            seg = i = nl_end;
            continue;
        }
        /* blank line ahead? (only spaces up to the next line break) */
        size_t j = nl_end;
        while (j < s.n && is_space(s.cp[j]) && !is_newline(s.cp[j])) j++;
        if (j < s.n && is_newline(s.cp[j])) {
            rc = process_segment(&s, seg, i);
            seg = i = j;
            continue;
        }
        i = nl_end;
    }
    if (!rc) rc = process_segment(&s, seg, s.n);
    free(s.cp), free(s.off), free(s.w);
    if (rc) {
        free(s.out);
        return -1;
    }
    *out = s.out;
    return (long)s.n_out;
}

char *qtts_text_chunk_dup(const char *text, qtts_text_chunk c, qtts_err *err) {
    char *o = qtts_malloc(c.len + 1, err);
    if (!o) return NULL;
    size_t n = 0, pos = c.start, end = c.start + c.len;
    int in_space = 0;
    while (pos < end) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)text + pos, (utf8proc_ssize_t)(end - pos), &cp);
        if (k <= 0 || cp < 0) k = 1, cp = -1;
        if (cp >= 0 && is_space((uint32_t)cp)) {
            if (!in_space) o[n++] = ' ';
            in_space = 1;
        } else {
            memcpy(o + n, text + pos, (size_t)k);
            n += (size_t)k;
            in_space = 0;
        }
        pos += (size_t)k;
    }
    o[n] = 0;
    return o;
}

size_t qtts_text_units(const char *text, size_t len, int cjk_weight) {
    size_t cjk_w = (size_t)(cjk_weight > 0 ? cjk_weight : 3), pos = 0, units = 0;
    while (pos < len) {
        utf8proc_int32_t c;
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)text + pos, (utf8proc_ssize_t)(len - pos), &c);
        if (k <= 0 || c < 0) k = 1, c = -1;
        units += unit_weight(c < 0 ? INVALID_CP : (uint32_t)c, cjk_w);
        pos += (size_t)k;
    }
    return units;
}
