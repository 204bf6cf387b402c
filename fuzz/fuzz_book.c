/* Books (text/book.h) on arbitrary bytes; the first byte picks Markdown or
 * plain text. Beyond "no crash": a failed parse leaves no chapters and says
 * why; chapters have non-empty trimmed titles, texts that start with the
 * title, and line numbers that never decrease and lie within the text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text/book.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    qtts_book b;
    qtts_err err = {0};
    if (qtts_book_parse(text, len, data[0] & 1, &b, &err)) {
        if (!err.msg[0] || b.n || b.ch) abort();
        return 0;
    }
    int lines = 1, prev = 1;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    if (!b.n) abort();
    for (size_t i = 0; i < b.n; i++) {
        const qtts_chapter *c = &b.ch[i];
        size_t tl = strlen(c->title);
        if (!tl || c->title[0] == ' ' || c->title[tl - 1] == ' ' || strncmp(c->text, c->title, tl)) abort();
        if (c->line < prev || c->line > lines) abort();
        prev = c->line;
    }
    qtts_book_free(&b);
    return 0;
}
