/* The pronunciation lexicon (see lexicon.h): parsing with line-numbered
 * errors, and the replacement pass. */
#include "text/lexicon.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unicode/uchar.h>

#include "text/norm_lang.h"
#include "text/utf8.h"

#define LEX_MAX_FILE (4u << 20)
#define LEX_MAX_KEY 256
#define LEX_MAX_VALUE 1024

typedef struct {
    char *key;   /* as written; case-folded when fold */
    size_t key_len;
    char *value;
    char lang[8]; /* "" : every language */
    int fold;     /* no capital letter: matches any case */
    int line;
} lex_entry;

struct qtts_lexicon {
    atomic_int refs;
    lex_entry *e;
    size_t n;
    size_t max_key; /* bytes */
};

static void lex_free(qtts_lexicon *lx) {
    for (size_t i = 0; i < lx->n; i++) free(lx->e[i].key), free(lx->e[i].value);
    free(lx->e);
    free(lx);
}

qtts_lexicon *qtts_lexicon_retain(qtts_lexicon *lx) {
    if (lx) atomic_fetch_add(&lx->refs, 1);
    return lx;
}

void qtts_lexicon_release(qtts_lexicon *lx) {
    if (lx && atomic_fetch_sub(&lx->refs, 1) == 1) lex_free(lx);
}

size_t qtts_lexicon_size(const qtts_lexicon *lx) { return lx ? lx->n : 0; }

/* A letter or digit of a script that puts spaces between words. */
static int spaced_word_cp(uint32_t c) { return c < 0x2E80 && c && u_isalnum((UChar32)c); }

static uint32_t fold_cp(uint32_t c) { return (uint32_t)u_foldCase((UChar32)c, U_FOLD_CASE_DEFAULT); }

/* The key folded code point by code point (lengths may change: re-encoded). */
static char *fold_copy(const char *s, size_t n, size_t *out_len) {
    char *o = malloc(4 * n + 1);
    if (!o) return NULL;
    size_t w = 0;
    for (size_t p = 0; p < n;) {
        uint32_t c;
        p += (size_t)qtts_utf8_decode(s + p, &c);
        w += (size_t)qtts_utf8_encode(fold_cp(c), o + w);
    }
    o[w] = 0;
    *out_len = w;
    return o;
}

static int has_capital(const char *s, size_t n) {
    for (size_t p = 0; p < n;) {
        uint32_t c;
        p += (size_t)qtts_utf8_decode(s + p, &c);
        if (fold_cp(c) != c) return 1;
    }
    return 0;
}

static int bad_chars(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7F) return 1;
    return 0;
}

static qtts_lexicon *parse_fail(qtts_lexicon *lx, qtts_err *err, const char *name, int line, const char *why,
                                const char *what) {
    qtts_fail_as(err, QTTS_ERR_INVALID, "%s:%d: %s%s%s", name, line, why, what ? " " : "", what ? what : "");
    lex_free(lx);
    return NULL;
}

qtts_lexicon *qtts_lexicon_parse_text(const char *text, size_t len, const char *name, qtts_err *err) {
    if (!name) name = "lexicon";
    if (len > LEX_MAX_FILE) {
        qtts_fail_as(err, QTTS_ERR_INVALID, "%s: a lexicon is at most 4 MiB", name);
        return NULL;
    }
    qtts_lexicon *lx = calloc(1, sizeof *lx);
    if (!lx) {
        qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "out of memory");
        return NULL;
    }
    atomic_init(&lx->refs, 1);
    size_t cap = 0;
    int line = 0;
    for (size_t p = 0; p < len;) {
        const char *nl = memchr(text + p, '\n', len - p);
        size_t e = nl ? (size_t)(nl - text) : len, q = p;
        p = e + 1;
        line++;
        if (e > q && text[e - 1] == '\r') e--;
        if (line == 1 && e - q >= 3 && !memcmp(text + q, "\xEF\xBB\xBF", 3)) q += 3; /* a BOM */
        const char *s = text + q;
        size_t n = e - q;
        if (qtts_utf8_check(s, n) != n) return parse_fail(lx, err, name, line, "is not valid UTF-8", NULL);
        size_t blank = 0;
        while (blank < n && (s[blank] == ' ' || s[blank] == '\t')) blank++;
        if (blank == n || s[0] == '#') continue;
        const char *t1 = memchr(s, '\t', n);
        if (!t1) return parse_fail(lx, err, name, line, "has no TAB between the written and the spoken form", NULL);
        const char *v = t1 + 1, *t2 = memchr(v, '\t', (size_t)(s + n - v));
        size_t kn = (size_t)(t1 - s), vn = (size_t)((t2 ? t2 : s + n) - v);
        const char *lang = t2 ? t2 + 1 : NULL;
        size_t ln = t2 ? (size_t)(s + n - lang) : 0;
        if (!kn || s[0] == ' ' || s[kn - 1] == ' ')
            return parse_fail(lx, err, name, line, "the written form is empty or begins or ends with a space", NULL);
        if (kn > LEX_MAX_KEY) return parse_fail(lx, err, name, line, "the written form is longer than 256 bytes", NULL);
        if (!vn || vn > LEX_MAX_VALUE)
            return parse_fail(lx, err, name, line, "the spoken form is empty or longer than 1024 bytes", NULL);
        if (bad_chars(s, kn) || bad_chars(v, vn))
            return parse_fail(lx, err, name, line, "has a control character", NULL);
        char lang_code[8] = "";
        if (t2) {
            if (memchr(lang, '\t', ln)) return parse_fail(lx, err, name, line, "has more than three columns", NULL);
            char want[32];
            snprintf(want, sizeof want, "%.*s", (int)(ln < 31 ? ln : 31), lang);
            const qtts_norm_lang *L = ln && ln < 31 ? qtts_norm_lang_find(want) : NULL;
            if (!L) return parse_fail(lx, err, name, line, "has no text rules for the language", want);
            snprintf(lang_code, sizeof lang_code, "%s", L->code);
        }
        lex_entry en = {.fold = !has_capital(s, kn), .line = line};
        snprintf(en.lang, sizeof en.lang, "%s", lang_code);
        en.key = en.fold ? fold_copy(s, kn, &en.key_len) : strndup(s, kn);
        if (!en.fold) en.key_len = kn;
        en.value = strndup(v, vn);
        if (!en.key || !en.value) {
            free(en.key), free(en.value);
            qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "out of memory");
            lex_free(lx);
            return NULL;
        }
        for (size_t i = 0; i < lx->n; i++) {
            const lex_entry *o = &lx->e[i];
            if (o->fold == en.fold && o->key_len == en.key_len && !memcmp(o->key, en.key, en.key_len) &&
                !strcmp(o->lang, en.lang)) {
                char first[48];
                snprintf(first, sizeof first, "(first on line %d)", o->line);
                free(en.key), free(en.value);
                return parse_fail(lx, err, name, line, "repeats a written form", first);
            }
        }
        if (lx->n == cap) {
            size_t nc = cap ? 2 * cap : 16;
            lex_entry *ne = realloc(lx->e, nc * sizeof *ne);
            if (!ne) {
                free(en.key), free(en.value);
                qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "out of memory");
                lex_free(lx);
                return NULL;
            }
            lx->e = ne, cap = nc;
        }
        lx->e[lx->n++] = en;
        if (kn > lx->max_key) lx->max_key = kn;
        if (en.key_len > lx->max_key) lx->max_key = en.key_len;
    }
    return lx;
}

qtts_lexicon *qtts_lexicon_load_file(const char *path, qtts_err *err) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        qtts_fail_as(err, QTTS_ERR_NOT_FOUND, "cannot open the lexicon %s", path);
        return NULL;
    }
    char *buf = malloc(LEX_MAX_FILE + 1);
    size_t n = buf ? fread(buf, 1, LEX_MAX_FILE + 1, f) : 0;
    int rerr = ferror(f);
    fclose(f);
    if (!buf || rerr) {
        free(buf);
        qtts_fail_as(err, buf ? QTTS_ERR_INTERNAL : QTTS_ERR_NO_MEMORY, buf ? "cannot read the lexicon %s" : "out of memory", path);
        return NULL;
    }
    qtts_lexicon *lx = qtts_lexicon_parse_text(buf, n, path, err);
    free(buf);
    return lx;
}

/* e's written form folded (a new string), to compare ignoring case. */
static char *folded_key(const lex_entry *e, size_t *len) {
    if (e->fold) {
        *len = e->key_len;
        return strndup(e->key, e->key_len);
    }
    return fold_copy(e->key, e->key_len, len);
}

static int copy_entry(qtts_lexicon *lx, const lex_entry *e) {
    lex_entry c = *e;
    c.key = malloc(e->key_len + 1);
    c.value = strdup(e->value);
    if (!c.key || !c.value) {
        free(c.key), free(c.value);
        return -1;
    }
    memcpy(c.key, e->key, e->key_len + 1);
    lx->e[lx->n++] = c;
    if (c.key_len > lx->max_key) lx->max_key = c.key_len;
    return 0;
}

qtts_lexicon *qtts_lexicon_merge(const qtts_lexicon *first, const qtts_lexicon *then, qtts_err *err) {
    if (!first || !then) return qtts_lexicon_retain((qtts_lexicon *)(first ? first : then));
    qtts_lexicon *lx = calloc(1, sizeof *lx);
    char **fk = calloc(first->n + 1, sizeof *fk);
    size_t *fl = calloc(first->n + 1, sizeof *fl);
    if (lx) atomic_init(&lx->refs, 1);
    if (!lx || !fk || !fl || !(lx->e = malloc((first->n + then->n + 1) * sizeof *lx->e))) goto oom;
    lx->max_key = first->max_key > then->max_key ? first->max_key : then->max_key;
    for (size_t i = 0; i < first->n; i++)
        if (!(fk[i] = folded_key(&first->e[i], &fl[i])) || copy_entry(lx, &first->e[i])) goto oom;
    for (size_t j = 0; j < then->n; j++) {
        size_t len;
        char *k = folded_key(&then->e[j], &len);
        if (!k) goto oom;
        int shadowed = 0;
        for (size_t i = 0; i < first->n && !shadowed; i++) shadowed = fl[i] == len && !memcmp(fk[i], k, len);
        free(k);
        if (!shadowed && copy_entry(lx, &then->e[j])) goto oom;
    }
    for (size_t i = 0; i < first->n; i++) free(fk[i]);
    free(fk), free(fl);
    return lx;
oom:
    if (fk)
        for (size_t i = 0; i < first->n; i++) free(fk[i]);
    free(fk), free(fl);
    if (lx) lex_free(lx);
    qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "out of memory");
    return NULL;
}

/* The code point before s[p] (0 at the start). */
static uint32_t cp_before(const char *s, size_t p) {
    if (!p) return 0;
    size_t q = p - 1;
    while (q > 0 && ((unsigned char)s[q] & 0xC0) == 0x80 && p - q < 4) q--;
    uint32_t c;
    qtts_utf8_decode(s + q, &c);
    return c;
}

static uint32_t cp_at(const char *s, size_t p, size_t n) {
    uint32_t c = 0;
    if (p < n) qtts_utf8_decode(s + p, &c);
    return c;
}

/* Bytes of s[p, n) that entry e matches (its case rule), 0 when it does not. */
static size_t match(const lex_entry *e, const char *s, size_t p, size_t n) {
    if (!e->fold) return e->key_len <= n - p && !memcmp(s + p, e->key, e->key_len) ? e->key_len : 0;
    size_t k = 0, q = p;
    while (k < e->key_len) {
        if (q >= n) return 0;
        uint32_t a, b;
        q += (size_t)qtts_utf8_decode(s + q, &a);
        k += (size_t)qtts_utf8_decode(e->key + k, &b);
        if (fold_cp(a) != b) return 0;
    }
    return q - p;
}

static int joiner(uint32_t c) { return c == '.' || c == '-' || c == '@' || c == '/'; }

/* Whole-word rule at the ends of a match s[p, q). */
static int at_word_edges(const char *s, size_t p, size_t q, size_t n) {
    uint32_t first = cp_at(s, p, n), last = cp_before(s, q);
    if (spaced_word_cp(first)) {
        uint32_t b = cp_before(s, p);
        if (u_isalnum((UChar32)b) || b == '_' || joiner(b)) return 0;
    }
    if (spaced_word_cp(last) && q < n) {
        uint32_t a = cp_at(s, q, n);
        if (u_isalnum((UChar32)a) || a == '_') return 0;
        if (joiner(a)) {
            uint32_t a2 = cp_at(s, q + (size_t)qtts_utf8_decode(s + q, &a), n);
            if (u_isalnum((UChar32)a2)) return 0;
        }
    }
    return 1;
}

size_t qtts_lexicon_apply(const qtts_lexicon *lx, const char *lang, const char *s, size_t from, size_t n,
                          int complete, qtts_strbuf *out) {
    /* a match (folded text may take up to 4 bytes for 1 of the key), the two characters after it */
    size_t p = from, reach = 4 * lx->max_key + 8;
    while (p < n && !out->failed) {
        if (!complete && n - p < reach) break;
        const lex_entry *best = NULL;
        size_t best_len = 0;
        for (size_t i = 0; i < lx->n; i++) {
            const lex_entry *e = &lx->e[i];
            if (e->lang[0] && strcmp(e->lang, lang)) continue;
            size_t k = match(e, s, p, n);
            if (!k || k < best_len || (k == best_len && (!e->lang[0] || best->lang[0])) || !at_word_edges(s, p, p + k, n))
                continue;
            best = e, best_len = k;
        }
        if (best) {
            qtts_strbuf_add(out, best->value, strlen(best->value));
            p += best_len;
        } else {
            int k = (unsigned char)s[p] < 0x80 ? 1 : qtts_utf8_decode(s + p, &(uint32_t){0});
            qtts_strbuf_add(out, s + p, (size_t)k);
            p += (size_t)k;
        }
    }
    return p;
}

qtts_lexicon *qtts_lexicon_load(const char *path, qtts_error *err) {
    qtts_err e = {0};
    qtts_lexicon *lx = qtts_lexicon_load_file(path, &e);
    if (!lx) qtts_err_export(&e, QTTS_ERR_INVALID, err);
    return lx;
}

qtts_lexicon *qtts_lexicon_parse(const char *text, size_t len, const char *name, qtts_error *err) {
    qtts_err e = {0};
    qtts_lexicon *lx = qtts_lexicon_parse_text(text ? text : "", text ? len : 0, name, &e);
    if (!lx) qtts_err_export(&e, QTTS_ERR_INVALID, err);
    return lx;
}
