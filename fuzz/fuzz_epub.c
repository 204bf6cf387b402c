/* EPUBs (text/epub.h) from arbitrary bytes: the ZIP container, the XML of
 * container.xml, the package and the NCX, the XHTML documents. Beyond "no
 * crash": a failed parse leaves no chapters and says why; a book has
 * chapters with non-empty titles, texts in valid UTF-8 that start with the
 * title, and spine positions that never decrease. The seeds are small
 * EPUB 2 and 3 books (fuzz/corpus/fuzz_epub, stored entries so the
 * mutations reach the XML). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text/epub.h"
#include "text/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    qtts_book b;
    qtts_err err = {0};
    if (qtts_epub_parse(data, size, &b, &err)) {
        if (!err.msg[0] || b.n || b.ch) abort();
        return 0;
    }
    if (!b.n) abort();
    int prev = 1;
    for (size_t i = 0; i < b.n; i++) {
        const qtts_chapter *c = &b.ch[i];
        size_t tl = strlen(c->title), n = strlen(c->text);
        if (!tl || strncmp(c->text, c->title, tl) || qtts_utf8_check(c->text, n) != n ||
            qtts_utf8_check(c->title, tl) != tl)
            abort();
        if (c->line < prev) abort();
        prev = c->line;
    }
    qtts_book_free(&b);
    return 0;
}
