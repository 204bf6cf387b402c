/* Dialogue script parsing (see dialogue.h for the forms). One pass over the
 * lines; each tag opens a turn and text is appended to the open turn. */
#include "text/dialogue.h"

#include <stdlib.h>
#include <string.h>

#include "text/strbuf.h"

typedef struct {
    qtts_dialogue *d;
    size_t cap;
    qtts_strbuf text; /* the open turn's text */
    int open; /* a turn is open (d->turns[d->n - 1]) */
    qtts_err *err;
} parser;

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

static char *dup_trimmed(const char *s, size_t n, qtts_err *err) {
    while (n && is_blank(*s)) s++, n--;
    while (n && is_blank(s[n - 1])) n--;
    char *r = qtts_malloc(n + 1, err);
    if (!r) return NULL;
    memcpy(r, s, n);
    r[n] = 0;
    return r;
}

static int all_blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!is_blank(s[i]) && s[i] != '\n') return 0;
    return 1;
}

static int append(parser *p, const char *s, size_t n) {
    if (qtts_strbuf_add(&p->text, s, n))
        return qtts_fail_as(p->err, QTTS_ERR_NO_MEMORY, "out of memory reading the script");
    return 0;
}

/* Ends the open turn: its text, trimmed of blank lines around it. */
static int close_turn(parser *p) {
    if (!p->open) return 0;
    p->open = 0;
    qtts_dialogue_turn *t = &p->d->turns[p->d->n - 1];
    const char *buf = p->text.s;
    size_t a = 0, b = p->text.len;
    while (a < b && (is_blank(buf[a]) || buf[a] == '\n')) a++;
    while (b > a && (is_blank(buf[b - 1]) || buf[b - 1] == '\n')) b--;
    if (a == b)
        return qtts_fail_as(p->err, QTTS_ERR_INVALID, "line %d: [%s] has no text before the next tag or the end",
                            t->line, t->speaker);
    if (!(t->text = dup_trimmed(buf + a, b - a, p->err))) return -1;
    p->text.len = 0;
    return 0;
}

static int open_turn(parser *p, const char *name, size_t n, int line) {
    if (close_turn(p)) return -1;
    if (p->d->n == p->cap) {
        size_t nc = p->cap ? p->cap * 2 : 16;
        qtts_dialogue_turn *t = realloc(p->d->turns, nc * sizeof *t);
        if (!t) return qtts_fail_as(p->err, QTTS_ERR_NO_MEMORY, "out of memory reading the script");
        p->d->turns = t;
        p->cap = nc;
    }
    qtts_dialogue_turn *t = &p->d->turns[p->d->n];
    memset(t, 0, sizeof *t);
    t->line = line;
    if (!(t->speaker = dup_trimmed(name, n, p->err))) return -1;
    p->d->n++;
    p->open = 1;
    return 0;
}

/* "Name:" at the start of a line: the name's length, or 0 when it is not one.
 * *skip gets the bytes of name and colon. */
static size_t colon_tag(const char *s, size_t n, size_t *skip) {
    size_t i = 0;
    int spaces = 0;
    while (i < n && i <= 32) {
        unsigned char c = (unsigned char)s[i];
        size_t colon = c == ':' ? 1 : (n - i >= 3 && !memcmp(s + i, "\xEF\xBC\x9A", 3)) ? 3 : 0;
        if (colon) {
            if (i == 0 || s[i - 1] == ' ') return 0;
            size_t after = i + colon;
            if (colon == 1 && after < n && !is_blank(s[after])) return 0; /* "http://", "12:30" */
            *skip = after;
            return i;
        }
        if (c == ' ') {
            if (i == 0 || ++spaces > 2) return 0;
        } else if (!(c >= 0x80 || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                     c == '_' || c == '-' || c == '.' || c == '\'')) {
            return 0;
        }
        i++;
    }
    return 0;
}

/* A parenthesis right after a tag: the turn's instruction. *i moves past it. */
static int instruction(parser *p, const char *s, size_t n, size_t *i, int line) {
    if (!p->open || p->text.len || *i >= n || s[*i] != '(') return 0;
    const char *close = memchr(s + *i, ')', n - *i);
    if (!close)
        return qtts_fail_as(p->err, QTTS_ERR_INVALID, "line %d: '(' of an instruction without ')' on that line", line);
    size_t m = (size_t)(close - (s + *i)) - 1;
    if (m > QTTS_DIALOGUE_MAX_INSTRUCT)
        return qtts_fail_as(p->err, QTTS_ERR_INVALID, "line %d: instruction longer than %d bytes", line,
                            QTTS_DIALOGUE_MAX_INSTRUCT);
    qtts_dialogue_turn *t = &p->d->turns[p->d->n - 1];
    if (t->instruct) return 0; /* a second parenthesis is speech */
    if (!all_blank(s + *i + 1, m) && !(t->instruct = dup_trimmed(s + *i + 1, m, p->err))) return -1;
    *i = (size_t)(close - s) + 1;
    return 0;
}

/* The rest of a line: text for the open turn, each '[' opening another. */
static int line_rest(parser *p, const char *s, size_t n, int line) {
    size_t i = 0;
    for (;;) {
        while (i < n && is_blank(s[i])) i++;
        if (instruction(p, s, n, &i, line)) return -1;
        if (i >= n) return 0;
        const char *br = memchr(s + i, '[', n - i);
        size_t end = br ? (size_t)(br - s) : n;
        if (!all_blank(s + i, end - i)) {
            if (!p->open)
                return qtts_fail_as(p->err, QTTS_ERR_INVALID,
                                    "line %d: text before the first speaker tag ([Name] or Name:)", line);
            if (append(p, s + i, end - i)) return -1;
        }
        if (!br) return 0;
        const char *close = memchr(br, ']', n - end);
        if (!close) return qtts_fail_as(p->err, QTTS_ERR_INVALID, "line %d: '[' without ']' on that line", line);
        size_t nn = (size_t)(close - br) - 1;
        if (all_blank(br + 1, nn)) return qtts_fail_as(p->err, QTTS_ERR_INVALID, "line %d: an empty tag []", line);
        if (nn > QTTS_DIALOGUE_MAX_NAME || memchr(br + 1, '[', nn))
            return qtts_fail_as(p->err, QTTS_ERR_INVALID, "line %d: a tag of more than %d bytes (or a '[' inside one)",
                                line, QTTS_DIALOGUE_MAX_NAME);
        if (open_turn(p, br + 1, nn, line)) return -1;
        i = (size_t)(close - s) + 1;
    }
}

static int parse_line(parser *p, const char *s, size_t n, int line) {
    size_t i = 0;
    while (i < n && is_blank(s[i])) i++;
    if (i == n) return p->open && p->text.len ? append(p, "\n", 1) : 0; /* a blank line keeps the paragraph */
    if (s[i] == '#') return 0;
    size_t skip = 0, name = colon_tag(s + i, n - i, &skip);
    if (name) {
        if (open_turn(p, s + i, name, line)) return -1;
        i += skip;
    } else if (p->open && p->text.len && append(p, "\n", 1)) {
        return -1;
    }
    return line_rest(p, s + i, n - i, line);
}

int qtts_dialogue_parse(const char *text, size_t len, qtts_dialogue *out, qtts_err *err) {
    memset(out, 0, sizeof *out);
    parser p = {.d = out, .err = err};
    int rc = 0, line = 1;
    if (memchr(text, 0, len)) {
        const char *z = memchr(text, 0, len);
        for (const char *q = text; q < z; q++) line += *q == '\n';
        rc = qtts_fail_as(err, QTTS_ERR_INVALID, "line %d: a NUL byte", line);
    }
    for (size_t pos = 0; !rc && pos < len; line++) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len;
        rc = parse_line(&p, text + pos, end - pos, line);
        pos = end + 1;
    }
    if (!rc) rc = close_turn(&p);
    if (!rc && !out->n) rc = qtts_fail_as(err, QTTS_ERR_INVALID, "the script has no turns ([Name] text or Name: text)");
    qtts_strbuf_free(&p.text);
    if (rc) qtts_dialogue_free(out);
    return rc;
}

void qtts_dialogue_free(qtts_dialogue *d) {
    if (!d) return;
    for (size_t i = 0; i < d->n; i++) {
        free(d->turns[i].speaker);
        free(d->turns[i].instruct);
        free(d->turns[i].text);
    }
    free(d->turns);
    d->turns = NULL;
    d->n = 0;
}
