/* The text front end on text that arrives in pieces (see normalize.h):
 * the same steps as the whole-text normalizer (norm_core.h) on one
 * persistent state, run only over text that no later piece can change.
 *
 * Why a cut is safe: every rule decides from the text at and after its
 * start and the output before it. Within a line, the rules that read past
 * a space start at a number, a currency sign, '[' or '<' (a number and its
 * unit or currency code, "$ 5", French "1 234", phone groups, links,
 * tags), and none reads past a plain word (letters, , ; : ! ? quotes,
 * brackets, emphasis marks); so cutting before the space after a plain
 * word, with every '[' closed and every '<' closed or 200 bytes back, runs
 * each rule on the same bytes. A rule that reads the next word (an
 * abbreviation's '.') must start at a word that is not plain. No rule
 * reads past CJK full-width punctuation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unicode/uchar.h>

#include "text/lexicon.h"
#include "text/norm_core.h"
#include "text/normalize.h"
#include "text/utf8.h"

/* The scan for safe cuts in an open line, kept between pieces so that
 * text fed in small pieces is scanned once, not once per piece. */
typedef struct {
    size_t from;   /* where it started (the read position then) */
    size_t p;      /* scanned up to */
    size_t best, word, last_lt;
    int plain, open_bracket, open_lt;
} cut_scan;

struct qtts_norm_stream {
    char lang[32];   /* as asked ("auto": guessed once enough text is here) */
    qtts_norm_mode mode;
    qtts_strbuf raw; /* the text so far */
    size_t valid;    /* raw[0, valid) is checked UTF-8 */
    qtts_lexicon *lex; /* NULL: none */
    qtts_strbuf lexed; /* with a lexicon: raw[0, lex_pos) with its respellings, what the rules read */
    size_t lex_pos;
    size_t pos;      /* the rules' text [0, pos) is read */
    int started, closed, failed;
    int read_code;
    int line_open;   /* the line at pos has a known kind, its prefix is read */
    size_t line_before; /* the output's length when the open line began */
    norm_line kind;
    cut_scan cut;      /* the open line's scan for cuts */
    size_t no_nl_until; /* the rules' text [pos, no_nl_until) has no line break */
    size_t marks_until; /* the unopened line at pos has only line-mark characters before this */
    norm_ctx z;
    size_t done; /* z.out[0, done) is final */
};

qtts_norm_stream *qtts_norm_stream_new(const char *lang, qtts_norm_mode mode, qtts_err *err) {
    if (lang && *lang && strcasecmp(lang, "auto") && !qtts_norm_lang_find(lang)) {
        qtts_fail_as(err, QTTS_ERR_INVALID, "no text rules for language \"%s\"", lang);
        return NULL;
    }
    qtts_norm_stream *s = calloc(1, sizeof *s);
    if (!s) {
        qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "out of memory");
        return NULL;
    }
    snprintf(s->lang, sizeof s->lang, "%s", lang && *lang ? lang : "auto");
    s->mode = mode;
    qtts_strbuf_init(&s->raw, 0);
    qtts_strbuf_init(&s->lexed, 0);
    return s;
}

void qtts_norm_stream_set_read_code(qtts_norm_stream *s, int read_code) { s->read_code = read_code; }

void qtts_norm_stream_set_lexicon(qtts_norm_stream *s, const qtts_lexicon *lex) {
    qtts_lexicon_release(s->lex);
    s->lex = qtts_lexicon_retain((qtts_lexicon *)lex);
}

void qtts_norm_stream_free(qtts_norm_stream *s) {
    if (!s) return;
    if (s->started) {
        norm_ctx_end(&s->z);
        qtts_strbuf_free(&s->z.out);
    }
    qtts_strbuf_free(&s->raw);
    qtts_strbuf_free(&s->lexed);
    qtts_lexicon_release(s->lex);
    free(s);
}

const char *qtts_norm_stream_text(const qtts_norm_stream *s, size_t *len) {
    const char *t = s->mode == QTTS_NORM_OFF ? s->raw.s : s->started ? s->z.out.s : NULL;
    *len = t ? s->done : 0;
    return t ? t : "";
}

/* The start of a UTF-8 sequence that more bytes may complete. */
static int incomplete_tail(const char *s, size_t n) {
    unsigned char c = (unsigned char)s[0];
    size_t need = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 0;
    if (!need || n >= need) return 0;
    for (size_t i = 1; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80) return 0;
    return 1;
}

/* `auto`: enough text to guess from: a line, a sentence or clause, six
 * words or 200 bytes. Not more: text that arrives in pieces is often an
 * LLM's reply being spoken while it is written, and nothing is spoken
 * before the guess. */
static int enough_to_guess(const char *s, size_t n) {
    if (n >= 200 || memchr(s, '\n', n)) return 1;
    int words = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        if (s[i] && strchr(".!?,;:", s[i]) && s[i + 1] == ' ') return 1;
        if (s[i] != ' ' && s[i + 1] == ' ' && ++words >= 6) return 1;
    }
    for (size_t i = 0; i + 3 <= n; i++) /* 。！？，、 */
        if (!memcmp(s + i, "\xE3\x80\x82", 3) || !memcmp(s + i, "\xEF\xBC\x81", 3) ||
            !memcmp(s + i, "\xEF\xBC\x9F", 3) || !memcmp(s + i, "\xEF\xBC\x8C", 3) || !memcmp(s + i, "\xE3\x80\x81", 3))
            return 1;
    return 0;
}

static int is_cjk_stop(uint32_t c) {
    return c == 0x3001 || c == 0x3002 || c == 0xFF0C || c == 0xFF01 || c == 0xFF1F || c == 0xFF1B || c == 0xFF1A;
}

/* A character of a plain word: one no rule reads past. */
static int is_plain(uint32_t c) {
    if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c && strchr(",;:!?'\"()*_~", (int)c));
    if (c == 0x2018 || c == 0x2019 || c == 0x201C || c == 0x201D || c == 0xAB || c == 0xBB || c == 0x2026) return 1;
    int t = u_charType((UChar32)c);
    return u_isalpha((UChar32)c) || t == U_NON_SPACING_MARK || t == U_COMBINING_SPACING_MARK;
}

static void cut_scan_reset(cut_scan *c, size_t from) {
    *c = (cut_scan){.from = from, .p = from, .best = from, .word = from, .plain = 1};
}

/* The last safe cut in line text s[from, n) (see the top), or from. */
static size_t safe_cut(cut_scan *c, const char *s, size_t n) {
    while (c->p < n) {
        size_t p = c->p;
        uint32_t ch;
        size_t len = (size_t)qtts_utf8_decode(s + p, &ch);
        int links_closed = !c->open_bracket && (!c->open_lt || c->last_lt + 200 < p);
        if (ch == ' ') {
            if (p > c->word && c->plain && links_closed) c->best = p;
            c->word = p + 1, c->plain = 1;
        } else {
            if (ch == '[') c->open_bracket = 1;
            else if (ch == ']') c->open_bracket = 0;
            else if (ch == '<') c->open_lt = 1, c->last_lt = p;
            else if (ch == '>') c->open_lt = 0;
            if (!is_plain(ch)) c->plain = 0;
        }
        c->p = p + len;
        if (is_cjk_stop(ch)) {
            if (!c->open_bracket && (!c->open_lt || c->last_lt + 200 < c->p)) c->best = c->p;
            c->word = c->p, c->plain = 1;
        }
    }
    return c->best;
}

/* Reads what is certain of r[pos, n); all of it once closed. */
static void run(qtts_norm_stream *s, const char *r, size_t n) {
    norm_ctx *z = &s->z;
    while (!z->failed && !z->out.failed) {
        size_t from = s->no_nl_until > s->pos ? s->no_nl_until : s->pos;
        const char *nl = from < n ? memchr(r + from, '\n', n - from) : NULL;
        s->no_nl_until = nl ? s->pos : n;
        size_t e = nl ? (size_t)(nl - r) : n;
        if (!s->line_open) {
            if (nl || (s->closed && s->pos < n)) { /* a whole line */
                norm_put_line(z, r + s->pos, e - s->pos, nl != NULL);
                s->pos = nl ? e + 1 : n;
                continue;
            }
            if (s->closed || s->pos == n) break;
            /* a line of only marks so far cannot be certain: not re-read with every piece */
            if (s->marks_until < s->pos) s->marks_until = s->pos;
            while (s->marks_until < n && strchr(" \t-*_|:>#0123456789.)+~`", r[s->marks_until]) && r[s->marks_until])
                s->marks_until++;
            if (s->marks_until == n || norm_line_kind(r + s->pos, n - s->pos, 0, norm_fence_state(z), &s->kind)) break;
            s->line_open = 1;
            s->line_before = z->out.len;
            s->pos += s->kind.content;
            cut_scan_reset(&s->cut, s->pos);
        }
        if (nl || s->closed) { /* the rest of the open line */
            norm_put_inline(z, r + s->pos, e - s->pos);
            norm_end_line(z, &s->kind, s->line_before, nl != NULL);
            s->line_open = 0;
            s->pos = nl ? e + 1 : n;
            continue;
        }
        if (s->cut.from != s->pos) cut_scan_reset(&s->cut, s->pos);
        size_t c = safe_cut(&s->cut, r, n);
        if (c > s->pos) {
            norm_put_inline(z, r + s->pos, c - s->pos);
            s->pos = c;
            cut_scan_reset(&s->cut, c);
        }
        break;
    }
    if (s->closed) norm_trim_end(z);
}

int qtts_norm_stream_feed(qtts_norm_stream *s, const char *text, size_t len, int is_last, qtts_err *err) {
    if (s->failed) return qtts_fail_as(err, QTTS_ERR_INVALID, "the text already failed to normalize");
    if (s->closed) return qtts_fail_as(err, QTTS_ERR_INVALID, "the text is already complete");
    if (len && qtts_strbuf_add(&s->raw, text, len)) {
        s->failed = 1;
        return qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "out of memory");
    }
    const char *raw = s->raw.s ? s->raw.s : ""; /* nothing appended yet: no buffer */
    size_t bad = s->valid + qtts_utf8_check(raw + s->valid, s->raw.len - s->valid);
    if (bad < s->raw.len && (is_last || !incomplete_tail(raw + bad, s->raw.len - bad))) {
        s->failed = 1;
        return qtts_fail_as(err, QTTS_ERR_INVALID, "the text is not valid UTF-8 (at byte %zu)", bad);
    }
    s->valid = bad;
    s->closed = is_last;
    if (s->mode == QTTS_NORM_OFF) {
        s->done = s->valid;
        return 0;
    }
    if (!s->started) {
        const char *r = raw;
        if (!strcasecmp(s->lang, "auto") && !s->closed && !enough_to_guess(r, s->valid)) return 0;
        norm_ctx_begin(&s->z, qtts_norm_detect(r, s->valid, s->lang), s->mode, 0, err);
        s->z.read_code = s->read_code;
        s->started = 1;
    }
    s->z.err = err;
    const char *r = s->raw.s;
    size_t n = s->valid;
    if (s->lex) {
        s->lex_pos = qtts_lexicon_apply(s->lex, s->z.L->code, raw, s->lex_pos, s->valid, s->closed, &s->lexed);
        if (s->lexed.failed) {
            s->failed = 1;
            return qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "out of memory");
        }
        r = s->lexed.s, n = s->lexed.len;
    }
    s->z.out.max = 16 * (s->lex ? s->lexed.len : s->raw.len) + 4096; /* the whole-text bound */
    if (r) run(s, r, n);
    else if (s->closed) norm_trim_end(&s->z);
    if (s->z.failed || s->z.out.failed) {
        s->failed = 1;
        if (!s->z.failed) qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "out of memory (or past the normalizer's output limit)");
        return -1;
    }
    size_t d = s->z.out.len;
    if (!s->closed)
        while (d > s->done && (s->z.out.s[d - 1] == ' ' || s->z.out.s[d - 1] == '\n')) d--; /* may be trimmed */
    s->done = d;
    return 0;
}
