/* Books: a plain-text or Markdown file -> chapters to be read aloud.
 *
 * Markdown: a heading of level 1 or 2 ("# Title", "## Title") starts a
 * chapter; deeper headings stay as lines of text. Markup is not read out:
 * code blocks, images, HTML tags, horizontal rules, emphasis marks (* `),
 * quote and list markers go; a link reads as its text.
 * Plain text: a short line starting with "Chapter" (any case) after a blank
 * line, or at the start, starts a chapter.
 * Text before the first heading becomes a chapter of its own (title
 * "Opening") unless it is blank. Each chapter's text begins with its title,
 * so the title is read. */
#ifndef QTTS_TEXT_BOOK_H
#define QTTS_TEXT_BOOK_H

#include <stddef.h>

#include "core/err.h"

typedef struct {
    char *title; /* trimmed, never empty */
    char *text;  /* title, a blank line, then the chapter's prose (never blank) */
    int line;    /* 1-based line of its heading (1 for an opening) */
} qtts_chapter;

typedef struct {
    qtts_chapter *ch;
    size_t n;
} qtts_book;

/* Parses text[0, len) (markdown: 1 for Markdown rules, 0 for plain text).
 * Returns 0 with at least one chapter, or -1 with err set (an empty book, a
 * NUL byte, out of memory). */
int qtts_book_parse(const char *text, size_t len, int markdown, qtts_book *out, qtts_err *err);
void qtts_book_free(qtts_book *b);

#endif
