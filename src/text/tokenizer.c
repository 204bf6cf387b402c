#include "text/tokenizer.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include "io/json_util.h"
#include "text/bpe.h"
#include "text/tokenizer_internal.h"
#include "text/utf8.h"
#include "text/vocab.h"
#include "io/file.h"

enum {
    MAX_TEXT_BYTES = 1 << 30,        /* longest text one encode call accepts */
    MAX_FILE_BYTES = 256 << 20,      /* vocab.json / merges.txt size bound */
    MAX_ADDED_BYTES = 1024,          /* longest added token */
    CACHE_MAX_KEY = 64,              /* pieces up to this many bytes are memoised */
    CACHE_MAX_ENTRIES = 8192,
};

/* The Qwen2 pre-tokenizer regex. \s is spelled \p{White_Space}: under
 * PCRE2_UCP, PCRE2's \s also matches U+180E, which the reference regex
 * engines (Python `regex`, Oniguruma) do not treat as whitespace. */
static const char QWEN2_PATTERN[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
    "| ?[^\\p{White_Space}\\p{L}\\p{N}]+[\\r\\n]*|\\p{White_Space}*[\\r\\n]+"
    "|\\p{White_Space}+(?!\\P{White_Space})|\\p{White_Space}+";
/* The pattern as written in the spec, for PCRE2 builds without
 * \p{White_Space} (before 10.40). */
static const char QWEN2_PATTERN_FALLBACK[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

typedef struct {
    char *text;
    size_t len;
    int32_t id;
    unsigned char lstrip, rstrip, normalized, single_word, special;
} added_token;

struct qtts_tokenizer {
    qtts_vocab vocab;
    qtts_merges merges;
    int32_t byte_id[256];   /* id of the one-byte token of each byte */
    added_token *added;     /* longest first */
    int n_added;
    int n_added_group[2];   /* [normalized] */
    unsigned char starts[2][256]; /* [normalized][first byte of some added token] */
    pcre2_code *re;
};

/* ---- loading ------------------------------------------------------------ */

static int is_hspace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

/* One parsed merges.txt line: tokens a and b, their concatenation in the
 * batch's scratch buffer, and the three hashes. */
typedef struct {
    const char *a, *b;
    size_t la, lb, cat_off, lineno;
    uint32_t ha, hb, hc;
} merge_line;

enum { MERGE_BATCH = 64 };

/* Resolves a batch of merge lines. The lookups are hashed and prefetched
 * first: the vocab table is far larger than cache, and this halves load time. */
static int add_merge_batch(qtts_tokenizer *t, const char *path, merge_line *ml, int n, const char *cat, int32_t *rank,
                           qtts_err *err) {
    const qtts_vocab *v = &t->vocab;
    for (int i = 0; i < n; i++) {
        qtts_vocab_prefetch(v, ml[i].ha);
        qtts_vocab_prefetch(v, ml[i].hb);
        qtts_vocab_prefetch(v, ml[i].hc);
    }
    int32_t ids[MERGE_BATCH][3];
    for (int i = 0; i < n; i++) {
        const merge_line *m = &ml[i];
        int32_t ia = qtts_vocab_find_hashed(v, m->a, m->la, m->ha), ib = qtts_vocab_find_hashed(v, m->b, m->lb, m->hb);
        if (ia < 0 || ib < 0) {
            size_t l = ia < 0 ? m->la : m->lb;
            return qtts_fail(err, "%s:%zu: merge token '%.*s' is not in vocab.json", path, m->lineno,
                             (int)(l > 64 ? 64 : l), ia < 0 ? m->a : m->b);
        }
        size_t lc = m->la + m->lb;
        int32_t im = qtts_vocab_find_hashed(v, cat + m->cat_off, lc, m->hc);
        if (im < 0)
            return qtts_fail(err, "%s:%zu: merged token '%.*s' is not in vocab.json", path, m->lineno,
                             (int)(lc > 64 ? 64 : lc), cat + m->cat_off);
        ids[i][0] = ia;
        ids[i][1] = ib;
        ids[i][2] = im;
        qtts_merges_prefetch(&t->merges, ia, ib);
    }
    for (int i = 0; i < n; i++)
        if (qtts_merges_put(&t->merges, ids[i][0], ids[i][1], (*rank)++, ids[i][2], err)) return -1;
    return 0;
}

static int load_merges(qtts_tokenizer *t, const char *path, qtts_err *err) {
    char *buf;
    size_t len;
    if (qtts_read_file(path, MAX_FILE_BYTES, &buf, &len, err)) return -1;
    size_t lines = 1;
    for (size_t i = 0; i < len; i++) lines += buf[i] == '\n';
    merge_line ml[MERGE_BATCH];
    int nml = 0;
    char *cat = NULL;
    size_t cat_len = 0, cat_cap = 0;
    int rc = -1;
    int32_t rank = 0;
    size_t lineno = 0;
    if (qtts_merges_init(&t->merges, lines, err)) goto out;
    for (const char *p = buf, *end = buf + len; p < end || nml;) {
        if (p >= end || nml == MERGE_BATCH) {
            if (add_merge_batch(t, path, ml, nml, cat, &rank, err)) goto out;
            nml = 0;
            cat_len = 0;
            continue;
        }
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        lineno++;
        const char *a = p, *e = le;
        p = nl ? nl + 1 : end;
        while (a < e && is_hspace(*a)) a++;
        while (e > a && is_hspace(e[-1])) e--;
        if (a == e) continue;
        if (lineno == 1 && e - a >= 8 && !memcmp(a, "#version", 8)) continue;
        const char *sp = a;
        while (sp < e && !is_hspace(*sp)) sp++;
        const char *b = sp;
        while (b < e && is_hspace(*b)) b++;
        const char *be = b;
        while (be < e && !is_hspace(*be)) be++;
        if (sp == a || b == e || be != e) {
            qtts_fail(err, "%s:%zu: expected two tokens separated by a space", path, lineno);
            goto out;
        }
        merge_line *m = &ml[nml++];
        m->a = a;
        m->la = (size_t)(sp - a);
        m->b = b;
        m->lb = (size_t)(e - b);
        m->lineno = lineno;
        if (cat_len + m->la + m->lb > cat_cap) {
            size_t cap = (cat_len + m->la + m->lb) * 2 + 4096;
            char *nc = realloc(cat, cap);
            if (!nc) {
                qtts_fail(err, "%s: out of memory", path);
                goto out;
            }
            cat = nc;
            cat_cap = cap;
        }
        m->cat_off = cat_len;
        memcpy(cat + cat_len, a, m->la);
        memcpy(cat + cat_len + m->la, b, m->lb);
        cat_len += m->la + m->lb;
        m->ha = qtts_vocab_hash(m->a, m->la);
        m->hb = qtts_vocab_hash(m->b, m->lb);
        m->hc = qtts_vocab_hash(cat + m->cat_off, m->la + m->lb);
    }
    rc = 0;
out:
    free(cat);
    free(buf);
    return rc;
}

static int bool_field(const cJSON *o, const char *key, int def) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsBool(v)) return cJSON_IsTrue(v);
    return def;
}

static int cmp_added(const void *x, const void *y) {
    const added_token *a = x, *b = y;
    if (a->len != b->len) return a->len > b->len ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

static int load_added(qtts_tokenizer *t, const char *path, qtts_err *err) {
    cJSON *root = json_load_file(path, err);
    if (!root) return -1;
    int rc = -1;
    const cJSON *dec = cJSON_GetObjectItemCaseSensitive(root, "added_tokens_decoder");
    if (!dec) {
        rc = 0;
        goto out;
    }
    if (!cJSON_IsObject(dec)) {
        qtts_fail(err, "%s: 'added_tokens_decoder' is not an object", path);
        goto out;
    }
    int count = cJSON_GetArraySize(dec);
    t->added = qtts_calloc((size_t)count, sizeof *t->added, err);
    if (!t->added) goto out;
    const cJSON *it;
    cJSON_ArrayForEach(it, dec) {
        char *endp;
        errno = 0;
        long id = it->string ? strtol(it->string, &endp, 10) : -1;
        if (!it->string || !*it->string || *endp || errno || id < 0 || id > QTTS_VOCAB_MAX_ID) {
            qtts_fail(err, "%s: added_tokens_decoder key '%.40s' is not a token id", path, it->string ? it->string : "");
            goto out;
        }
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(it, "content");
        if (!cJSON_IsString(content) || !content->valuestring[0]) {
            qtts_fail(err, "%s: added token %ld has no 'content' string", path, id);
            goto out;
        }
        size_t len = strlen(content->valuestring);
        if (len > MAX_ADDED_BYTES || qtts_utf8_check(content->valuestring, len) != len) {
            qtts_fail(err, "%s: added token %ld: content is too long or not valid UTF-8", path, id);
            goto out;
        }
        added_token *a = &t->added[t->n_added];
        a->text = qtts_malloc(len + 1, err);
        if (!a->text) goto out;
        memcpy(a->text, content->valuestring, len + 1);
        a->len = len;
        a->id = (int32_t)id;
        t->n_added++;
        a->special = (unsigned char)bool_field(it, "special", 0);
        a->lstrip = (unsigned char)bool_field(it, "lstrip", 0);
        a->rstrip = (unsigned char)bool_field(it, "rstrip", 0);
        a->single_word = (unsigned char)bool_field(it, "single_word", 0);
        /* HF AddedToken: normalized defaults to "not special". */
        a->normalized = (unsigned char)bool_field(it, "normalized", !a->special);
        if (qtts_vocab_put(&t->vocab, a->text, len, a->id, 1, err)) {
            qtts_fail_prefix(err, "%s: added token %ld", path, id);
            goto out;
        }
    }
    qsort(t->added, (size_t)t->n_added, sizeof *t->added, cmp_added);
    for (int i = 0; i < t->n_added; i++) {
        const added_token *a = &t->added[i];
        t->starts[a->normalized][(unsigned char)a->text[0]] = 1;
        t->n_added_group[a->normalized]++;
    }
    rc = 0;
out:
    cJSON_Delete(root);
    return rc;
}

static int compile_regex(qtts_tokenizer *t, qtts_err *err) {
    int code;
    PCRE2_SIZE off;
    t->re = pcre2_compile((PCRE2_SPTR)QWEN2_PATTERN, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &code, &off, NULL);
    if (!t->re)
        t->re = pcre2_compile((PCRE2_SPTR)QWEN2_PATTERN_FALLBACK, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &code,
                              &off, NULL);
    if (!t->re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        return qtts_fail(err, "cannot compile the pre-tokenizer regex at offset %zu: %s", (size_t)off, (char *)msg);
    }
    pcre2_jit_compile(t->re, PCRE2_JIT_COMPLETE); /* optional: the interpreter gives the same matches */
    return 0;
}

qtts_tokenizer *qtts_tok_load_files(const char *vocab_path, const char *merges_path, const char *config_path,
                                    qtts_err *err) {
    qtts_tokenizer *t = qtts_calloc(1, sizeof *t, err);
    if (!t) return NULL;
    char *buf = NULL;
    size_t len;
    if (qtts_read_file(vocab_path, MAX_FILE_BYTES, &buf, &len, err)) goto fail;
    if (qtts_vocab_init(&t->vocab, len / 12 + 1024, err)) goto fail;
    if (qtts_vocab_parse_json(&t->vocab, vocab_path, buf, len, err)) goto fail;
    free(buf);
    buf = NULL;
    for (int b = 0; b < 256; b++) {
        char u[4];
        int n = qtts_utf8_encode(qtts_byte_to_unicode((uint8_t)b), u);
        t->byte_id[b] = qtts_vocab_find(&t->vocab, u, (size_t)n);
        if (t->byte_id[b] < 0) {
            qtts_fail(err, "%s: no token for byte 0x%02X ('%.*s'): not a byte-level BPE vocabulary", vocab_path, b, n,
                      u);
            goto fail;
        }
    }
    if (load_merges(t, merges_path, err)) goto fail;
    if (config_path && load_added(t, config_path, err)) goto fail;
    if (compile_regex(t, err)) goto fail;
    return t;
fail:
    free(buf);
    qtts_tok_free(t);
    return NULL;
}

qtts_tokenizer *qtts_tok_load(const char *dir, qtts_err *err) {
    if (!dir || !*dir) {
        qtts_fail(err, "tokenizer: no model folder given");
        return NULL;
    }
    size_t n = strlen(dir) + 32;
    char *v = malloc(n), *m = malloc(n), *c = malloc(n);
    qtts_tokenizer *t = NULL;
    if (!v || !m || !c) {
        qtts_fail(err, "out of memory");
    } else {
        snprintf(v, n, "%s/vocab.json", dir);
        snprintf(m, n, "%s/merges.txt", dir);
        snprintf(c, n, "%s/tokenizer_config.json", dir);
        FILE *f = fopen(c, "rb");
        if (f) fclose(f);
        t = qtts_tok_load_files(v, m, f ? c : NULL, err);
    }
    free(v);
    free(m);
    free(c);
    return t;
}

void qtts_tok_free(qtts_tokenizer *t) {
    if (!t) return;
    qtts_vocab_free(&t->vocab);
    qtts_merges_free(&t->merges);
    for (int i = 0; i < t->n_added; i++) free(t->added[i].text);
    free(t->added);
    pcre2_code_free(t->re);
    free(t);
}

/* ---- encoding ----------------------------------------------------------- */

typedef struct {
    uint64_t hash;
    uint32_t key_off, key_len; /* key_len 0: empty */
    uint32_t ids_off, n_ids;
} cache_slot;

/* Per-call state, so that a loaded tokenizer stays read-only. */
typedef struct {
    const qtts_tokenizer *tok;
    qtts_err *err;
    pcre2_match_data *md;
    int32_t *ids;
    size_t n, cap;
    int32_t *sym;
    size_t sym_cap;
    qtts_bpe_work bw;
    /* bounded memo of piece -> ids; cleared when full */
    cache_slot *cslots;
    size_t cmask, cused, climit;
    char *ckeys;
    size_t ckeys_len;
    int32_t *cids;
    size_t cids_len;
} enc_ctx;

static int ctx_init(enc_ctx *c, const qtts_tokenizer *t, size_t text_len, qtts_err *err) {
    memset(c, 0, sizeof *c);
    c->tok = t;
    c->err = err;
    c->md = pcre2_match_data_create_from_pattern(t->re, NULL);
    if (!c->md) return qtts_fail(err, "out of memory (regex match data)");
    /* A memo pays off only for longer texts; size it by the text. */
    size_t want = text_len / 8;
    if (want >= 32) {
        size_t limit = 32;
        while (limit < want && limit < CACHE_MAX_ENTRIES) limit *= 2;
        c->cslots = calloc(limit * 2, sizeof *c->cslots);
        c->ckeys = malloc(limit * CACHE_MAX_KEY);
        c->cids = malloc(limit * CACHE_MAX_KEY * sizeof *c->cids);
        if (!c->cslots || !c->ckeys || !c->cids) { /* the memo is optional */
            free(c->cslots);
            free(c->ckeys);
            free(c->cids);
            c->cslots = NULL;
        } else {
            c->cmask = limit * 2 - 1;
            c->climit = limit;
        }
    }
    return 0;
}

static void ctx_free(enc_ctx *c) {
    pcre2_match_data_free(c->md);
    free(c->ids);
    free(c->sym);
    qtts_bpe_work_free(&c->bw);
    if (c->cslots) {
        free(c->cslots);
        free(c->ckeys);
        free(c->cids);
    }
}

static int push_ids(enc_ctx *c, const int32_t *ids, size_t n) {
    if (c->n + n > c->cap) {
        size_t cap = c->cap ? c->cap : 64;
        while (cap < c->n + n) cap *= 2;
        int32_t *ni = realloc(c->ids, cap * sizeof *ni);
        if (!ni) return qtts_fail(c->err, "out of memory for %zu token ids", cap);
        c->ids = ni;
        c->cap = cap;
    }
    memcpy(c->ids + c->n, ids, n * sizeof *ids);
    c->n += n;
    return 0;
}

static uint64_t piece_hash(const char *s, size_t len) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ len;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    memcpy(&w, s + i, len - i);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

static int encode_piece(enc_ctx *c, const char *p, size_t len) {
    const qtts_tokenizer *t = c->tok;
    if (len == 1) return push_ids(c, &t->byte_id[(unsigned char)p[0]], 1);
    uint64_t h = 0;
    int memo = c->cslots && len <= CACHE_MAX_KEY;
    if (memo) {
        h = piece_hash(p, len);
        for (size_t i = h & c->cmask; c->cslots[i].key_len; i = (i + 1) & c->cmask) {
            const cache_slot *s = &c->cslots[i];
            if (s->hash == h && s->key_len == len && !memcmp(c->ckeys + s->key_off, p, len))
                return push_ids(c, c->cids + s->ids_off, s->n_ids);
        }
    }
    if (len > c->sym_cap) {
        size_t cap = c->sym_cap ? c->sym_cap : 256;
        while (cap < len) cap *= 2;
        int32_t *ns = realloc(c->sym, cap * sizeof *ns);
        if (!ns) return qtts_fail(c->err, "out of memory for a %zu-byte word", len);
        c->sym = ns;
        c->sym_cap = cap;
    }
    for (size_t i = 0; i < len; i++) c->sym[i] = t->byte_id[(unsigned char)p[i]];
    int k = qtts_bpe_merge(&t->merges, &c->bw, c->sym, (int)len, c->err);
    if (k < 0) return -1;
    if (memo) {
        if (c->cused == c->climit) {
            memset(c->cslots, 0, (c->cmask + 1) * sizeof *c->cslots);
            c->cused = c->ckeys_len = c->cids_len = 0;
        }
        size_t i = h & c->cmask;
        while (c->cslots[i].key_len) i = (i + 1) & c->cmask;
        c->cslots[i] = (cache_slot){h, (uint32_t)c->ckeys_len, (uint32_t)len, (uint32_t)c->cids_len, (uint32_t)k};
        memcpy(c->ckeys + c->ckeys_len, p, len);
        memcpy(c->cids + c->cids_len, c->sym, (size_t)k * sizeof *c->sym);
        c->ckeys_len += len;
        c->cids_len += (size_t)k;
        c->cused++;
    }
    return push_ids(c, c->sym, (size_t)k);
}

/* Regex pre-tokenisation + BPE of a span with no added tokens in it. Like
 * Python's findall, characters no alternative matches would be skipped (the
 * pattern matches every character, so none are). */
static int encode_plain(enc_ctx *c, const char *s, size_t len) {
    size_t off = 0;
    while (off < len) {
        int rc = pcre2_match(c->tok->re, (PCRE2_SPTR)s, len, off, PCRE2_NO_UTF_CHECK, c->md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(rc, msg, sizeof msg);
            return qtts_fail(c->err, "pre-tokenizer regex failed at byte %zu: %s", off, (char *)msg);
        }
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(c->md);
        if (ov[1] <= ov[0]) { /* an empty match cannot occur; step over one character */
            off = ov[0] + 1;
            while (off < len && ((unsigned char)s[off] & 0xC0) == 0x80) off++;
            continue;
        }
        if (encode_piece(c, s + ov[0], ov[1] - ov[0])) return -1;
        off = ov[1];
    }
    return 0;
}

static size_t prev_char(const char *s, size_t i) {
    do i--;
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80);
    return i;
}

static int is_word_char(uint32_t cp) {
    if (cp == '_') return 1;
    utf8proc_category_t cat = utf8proc_category((utf8proc_int32_t)cp);
    return (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) ||
           (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO);
}

/* Leftmost, then longest, added token of one group at or after `from`. Sets
 * [*ms, *me) to the span it replaces (with stripped whitespace) and returns
 * its index in t->added, or -1. */
static int find_added(const qtts_tokenizer *t, int normalized, const char *s, size_t len, size_t from, size_t *ms,
                      size_t *me) {
    const unsigned char *starts = t->starts[normalized];
    for (size_t i = from; i < len; i++) {
        if (!starts[(unsigned char)s[i]]) continue;
        for (int k = 0; k < t->n_added; k++) {
            const added_token *a = &t->added[k];
            if (a->normalized != normalized || a->len > len - i || memcmp(s + i, a->text, a->len)) continue;
            size_t st = i, en = i + a->len;
            uint32_t cp;
            if (a->single_word) {
                if (st > 0 && (qtts_utf8_decode(s + prev_char(s, st), &cp), is_word_char(cp))) continue;
                if (en < len && (qtts_utf8_decode(s + en, &cp), is_word_char(cp))) continue;
            }
            if (a->lstrip)
                while (st > from) {
                    size_t p = prev_char(s, st);
                    qtts_utf8_decode(s + p, &cp);
                    if (!qtts_unicode_is_space(cp)) break;
                    st = p;
                }
            if (a->rstrip)
                while (en < len) {
                    int n = qtts_utf8_decode(s + en, &cp);
                    if (!qtts_unicode_is_space(cp)) break;
                    en += (size_t)n;
                }
            *ms = st;
            *me = en;
            return k;
        }
    }
    return -1;
}

/* Splits s on the added tokens of one group; other spans go to `plain`. */
static int split_added(enc_ctx *c, int normalized, const char *s, size_t len,
                       int (*plain)(enc_ctx *, const char *, size_t)) {
    const qtts_tokenizer *t = c->tok;
    size_t pos = 0;
    while (pos < len) {
        size_t ms = len, me = len;
        int k = t->n_added_group[normalized] ? find_added(t, normalized, s, len, pos, &ms, &me) : -1;
        if (k < 0) ms = len;
        if (ms > pos && plain(c, s + pos, ms - pos)) return -1;
        if (k < 0) break;
        if (push_ids(c, &t->added[k].id, 1)) return -1;
        pos = me;
    }
    return 0;
}

/* A span of raw text between non-normalized added tokens: NFC, then split
 * on the normalized added tokens. */
static int encode_span(enc_ctx *c, const char *s, size_t len) {
    /* Text made only of code points below U+0300 (no lead byte >= 0xCC) is
     * already NFC: nothing there decomposes or composes. */
    int need_nfc = 0;
    for (size_t i = 0; i < len && !need_nfc; i++) need_nfc = (unsigned char)s[i] >= 0xCC;
    if (!need_nfc) return split_added(c, 1, s, len, encode_plain);
    utf8proc_uint8_t *nfc = NULL;
    utf8proc_ssize_t n =
        utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)len, &nfc, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    if (n < 0) return qtts_fail(c->err, "NFC normalisation failed: %s", utf8proc_errmsg(n));
    int rc = split_added(c, 1, (const char *)nfc, (size_t)n, encode_plain);
    free(nfc);
    return rc;
}

int qtts_tok_encode(const qtts_tokenizer *t, const char *text, size_t len, int32_t **ids, int *n, qtts_err *err) {
    *ids = NULL;
    *n = 0;
    if (!text && len) return qtts_fail(err, "tokenizer: NULL text");
    if (len > MAX_TEXT_BYTES) return qtts_fail(err, "text of %zu bytes is too long (at most %d)", len, MAX_TEXT_BYTES);
    size_t bad = qtts_utf8_check(text, len);
    if (bad != len) return qtts_fail(err, "text is not valid UTF-8 (byte 0x%02X at offset %zu)", (unsigned char)text[bad], bad);
    enc_ctx c;
    if (ctx_init(&c, t, len, err)) {
        ctx_free(&c);
        return -1;
    }
    int rc = len ? split_added(&c, 0, text, len, encode_span) : 0;
    if (rc == 0 && !c.ids) {
        c.ids = qtts_malloc(sizeof *c.ids, err);
        if (!c.ids) rc = -1;
    }
    if (rc == 0) {
        *ids = c.ids;
        *n = (int)c.n;
        c.ids = NULL;
    }
    ctx_free(&c);
    return rc;
}

static const added_token *added_by_text(const qtts_tokenizer *t, const char *s) {
    size_t len = strlen(s);
    for (int k = 0; k < t->n_added; k++)
        if (t->added[k].len == len && !memcmp(t->added[k].text, s, len)) return &t->added[k];
    return NULL;
}

int qtts_tok_encode_template(const qtts_tokenizer *t, qtts_template_kind kind, const char *text, int32_t **ids,
                             int *n, qtts_err *err) {
    static const char *const prefix[] = {"<|im_start|>assistant\n", "<|im_start|>assistant\n", "<|im_start|>user\n"};
    static const char *const suffix[] = {"<|im_end|>\n<|im_start|>assistant\n", "<|im_end|>\n", "<|im_end|>\n"};
    *ids = NULL;
    *n = 0;
    if ((int)kind < 0 || (int)kind > QTTS_TEMPLATE_INSTRUCT) return qtts_fail(err, "unknown template kind %d", (int)kind);
    if (!text) return qtts_fail(err, "template: NULL text");
    if (!added_by_text(t, "<|im_start|>") || !added_by_text(t, "<|im_end|>"))
        return qtts_fail(err, "tokenizer has no <|im_start|> / <|im_end|> added tokens (tokenizer_config.json missing?)");
    size_t lp = strlen(prefix[kind]), lt = strlen(text), ls = strlen(suffix[kind]);
    if (lt > MAX_TEXT_BYTES) return qtts_fail(err, "text of %zu bytes is too long", lt);
    char *buf = qtts_malloc(lp + lt + ls + 1, err);
    if (!buf) return -1;
    memcpy(buf, prefix[kind], lp);
    memcpy(buf + lp, text, lt);
    memcpy(buf + lp + lt, suffix[kind], ls + 1);
    int rc = qtts_tok_encode(t, buf, lp + lt + ls, ids, n, err);
    free(buf);
    return rc;
}

/* ---- lookups and decoding ----------------------------------------------- */

int qtts_tok_vocab_size(const qtts_tokenizer *t) { return t->vocab.n_ids; }

int32_t qtts_tok_token_id(const qtts_tokenizer *t, const char *token) {
    return token ? qtts_vocab_find(&t->vocab, token, strlen(token)) : -1;
}

const char *qtts_tok_token_str(const qtts_tokenizer *t, int32_t id, size_t *len) {
    return qtts_vocab_str(&t->vocab, id, len);
}

int qtts_tok_is_added(const qtts_tokenizer *t, int32_t id) {
    for (int k = 0; k < t->n_added; k++)
        if (t->added[k].id == id) return 1;
    return 0;
}

int qtts_tok_decode(const qtts_tokenizer *t, const int32_t *ids, int n, char **out, size_t *out_len, qtts_err *err) {
    *out = NULL;
    if (out_len) *out_len = 0;
    if (n < 0 || (n > 0 && !ids)) return qtts_fail(err, "decode: bad id array");
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        size_t l;
        if (!qtts_vocab_str(&t->vocab, ids[i], &l)) return qtts_fail(err, "decode: unknown token id %d at index %d", ids[i], i);
        total += l;
    }
    char *buf = qtts_malloc(total + 1, err);
    if (!buf) return -1;
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        size_t l;
        const char *s = qtts_vocab_str(&t->vocab, ids[i], &l);
        if (qtts_tok_is_added(t, ids[i])) {
            memcpy(buf + k, s, l);
            k += l;
            continue;
        }
        /* Each symbol of a byte-level token stands for one byte; anything
         * outside that alphabet is copied through. */
        for (size_t j = 0; j < l;) {
            uint32_t cp;
            int m = qtts_utf8_decode(s + j, &cp);
            int b = qtts_unicode_to_byte(cp);
            if (b >= 0) {
                buf[k++] = (char)b;
            } else {
                memcpy(buf + k, s + j, (size_t)m);
                k += (size_t)m;
            }
            j += (size_t)m;
        }
    }
    buf[k] = 0;
    *out = buf;
    if (out_len) *out_len = k;
    return 0;
}

const qtts_merges *qtts_tok_merges(const qtts_tokenizer *t) { return &t->merges; }

int32_t qtts_tok_byte_id(const qtts_tokenizer *t, uint8_t b) { return t->byte_id[b]; }
