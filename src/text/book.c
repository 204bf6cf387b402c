/* Books -> chapters (book.h): one pass over the lines. */
#include "text/book.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "text/strbuf.h"

typedef struct {
    qtts_book *b;
    size_t cap;
    qtts_strbuf prose; /* the open chapter's */
    char *title;
    int line, open;
    qtts_err *err;
} builder;

static int blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

static int put(builder *p, const char *s, size_t n) {
    if (qtts_strbuf_add(&p->prose, s, n))
        return qtts_fail_as(p->err, QTTS_ERR_NO_MEMORY, "out of memory reading the book");
    return 0;
}

static char *trimmed(const char *s, size_t n, qtts_err *err) {
    while (n && (blank(*s) || *s == '\n')) s++, n--;
    while (n && (blank(s[n - 1]) || s[n - 1] == '\n')) n--;
    char *r = qtts_malloc(n + 1, err);
    if (r) {
        memcpy(r, s, n);
        r[n] = 0;
    }
    return r;
}

/* Ends the open chapter (one without prose or title is dropped). */
static int close_chapter(builder *p) {
    if (!p->open) return 0;
    p->open = 0;
    char *prose = trimmed(p->prose.s ? p->prose.s : "", p->prose.len, p->err);
    p->prose.len = 0;
    if (!prose) return -1;
    if (!*prose && !*p->title) {
        free(prose);
        free(p->title);
        p->title = NULL;
        return 0;
    }
    if (!*p->title) { /* the opening */
        free(p->title);
        p->title = strdup("Opening");
    }
    size_t n = p->title ? strlen(p->title) + strlen(prose) + 4 : 0; /* ".", "\n\n", NUL */
    char *text = p->title ? malloc(n) : NULL;
    if (p->b->n == p->cap) {
        size_t nc = p->cap ? p->cap * 2 : 16;
        qtts_chapter *c = realloc(p->b->ch, nc * sizeof *c);
        if (c) {
            p->b->ch = c;
            p->cap = nc;
        }
    }
    if (!text || p->b->n == p->cap) {
        free(text);
        free(prose);
        return qtts_fail_as(p->err, QTTS_ERR_NO_MEMORY, "out of memory reading the book");
    }
    /* "Title." so the title is its own sentence, unless it ends in punctuation */
    size_t tl = strlen(p->title);
    int punct = tl && strchr(".!?:;", p->title[tl - 1]) != NULL;
    snprintf(text, n, "%s%s%s%s", p->title, punct ? "" : ".", *prose ? "\n\n" : "", prose);
    free(prose);
    p->b->ch[p->b->n++] = (qtts_chapter){.title = p->title, .text = text, .line = p->line};
    p->title = NULL;
    return 0;
}

static int open_chapter(builder *p, const char *title, size_t n, int line) {
    if (close_chapter(p)) return -1;
    if (!(p->title = trimmed(title, n, p->err))) return -1;
    p->line = line;
    p->open = 1;
    return 0;
}

/* Markdown inline markup out: images dropped, links as their text, tags,
 * emphasis and code marks removed. */
static int put_inline(builder *p, const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        char c = s[i];
        if (c == '!' && i + 1 < n && s[i + 1] == '[') { /* ![alt](url) */
            const char *close = memchr(s + i, ']', n - i);
            if (close && (size_t)(close - s) + 1 < n && close[1] == '(') {
                const char *paren = memchr(close, ')', (size_t)(s + n - close));
                if (paren) {
                    i = (size_t)(paren - s) + 1;
                    continue;
                }
            }
        }
        if (c == ']' && i + 1 < n && s[i + 1] == '(') { /* the end of a link's text: skip (url) */
            const char *paren = memchr(s + i, ')', n - i);
            if (paren) {
                i = (size_t)(paren - s) + 1;
                continue;
            }
        }
        if (c == '<') { /* an HTML tag or autolink */
            const char *gt = memchr(s + i, '>', n - i);
            if (gt && gt - (s + i) < 200) {
                i = (size_t)(gt - s) + 1;
                continue;
            }
        }
        if (c == '*' || c == '`' || c == '[' || (c == ']')) {
            i++;
            continue;
        }
        if (put(p, s + i, 1)) return -1;
        i++;
    }
    return 0;
}

static int is_rule(const char *s, size_t n) {
    size_t k = 0;
    char m = 0;
    for (size_t i = 0; i < n; i++) {
        if (blank(s[i])) continue;
        if (s[i] != '-' && s[i] != '*' && s[i] != '_') return 0;
        if (m && s[i] != m) return 0;
        m = s[i];
        k++;
    }
    return k >= 3;
}

static int md_line(builder *p, const char *s, size_t n, int line, int *fence) {
    size_t i = 0;
    while (i < n && blank(s[i])) i++;
    if (n - i >= 3 && (!memcmp(s + i, "```", 3) || !memcmp(s + i, "~~~", 3))) {
        *fence = !*fence;
        return 0;
    }
    if (*fence) return 0;
    if (i < n && s[i] == '#') {
        size_t level = 0;
        while (i + level < n && s[i + level] == '#') level++;
        if (i + level == n || blank(s[i + level])) {
            size_t a = i + level, b = n;
            while (b > a && (blank(s[b - 1]) || s[b - 1] == '#')) b--; /* closing #s */
            if (level <= 2) return open_chapter(p, s + a, b - a, line);
            if (!p->open && open_chapter(p, "", 0, line)) return -1;
            return put_inline(p, s + a, b - a) || put(p, ".\n", 2); /* a sub-heading: its own sentence */
        }
    }
    if (is_rule(s + i, n - i)) return 0;
    while (i < n && (s[i] == '>' || blank(s[i]))) i++;
    if (i + 1 < n && strchr("-*+", s[i]) && blank(s[i + 1])) i += 2;
    else {
        size_t d = i;
        while (d < n && s[d] >= '0' && s[d] <= '9') d++;
        if (d > i && d + 1 < n && (s[d] == '.' || s[d] == ')') && blank(s[d + 1])) i = d + 2;
    }
    if (i == n) return p->open ? put(p, "\n", 1) : 0;
    if (!p->open && open_chapter(p, "", 0, line)) return -1;
    return put_inline(p, s + i, n - i) || put(p, "\n", 1);
}

static int txt_line(builder *p, const char *s, size_t n, int line, int after_blank) {
    size_t i = 0, e = n;
    while (i < n && blank(s[i])) i++;
    while (e > i && blank(s[e - 1])) e--;
    if (i == e) return p->open ? put(p, "\n", 1) : 0;
    if (after_blank && e - i < 80 && e - i >= 7 && !strncasecmp(s + i, "chapter", 7) &&
        (e - i == 7 || blank(s[i + 7]) || s[i + 7] == ':'))
        return open_chapter(p, s + i, e - i, line);
    if (!p->open && open_chapter(p, "", 0, line)) return -1;
    return put(p, s + i, e - i) || put(p, "\n", 1);
}

int qtts_book_parse(const char *text, size_t len, int markdown, qtts_book *out, qtts_err *err) {
    memset(out, 0, sizeof *out);
    if (memchr(text, 0, len)) return qtts_fail_as(err, QTTS_ERR_INVALID, "the book contains a NUL byte");
    builder p = {.b = out, .err = err};
    int rc = 0, line = 1, fence = 0, after_blank = 1;
    for (size_t pos = 0; !rc && pos < len; line++) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len;
        rc = markdown ? md_line(&p, text + pos, end - pos, line, &fence)
                      : txt_line(&p, text + pos, end - pos, line, after_blank);
        size_t k = pos;
        while (k < end && blank(text[k])) k++;
        after_blank = k == end;
        pos = end + 1;
    }
    if (!rc) rc = close_chapter(&p);
    if (!rc && !out->n) rc = qtts_fail_as(err, QTTS_ERR_INVALID, "the book has no text");
    qtts_strbuf_free(&p.prose);
    free(p.title);
    if (rc) qtts_book_free(out);
    return rc;
}

void qtts_book_free(qtts_book *b) {
    if (!b) return;
    for (size_t i = 0; i < b->n; i++) {
        free(b->ch[i].title);
        free(b->ch[i].text);
    }
    free(b->ch);
    b->ch = NULL;
    b->n = 0;
}
