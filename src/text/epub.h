/* EPUB books (2 and 3) -> chapters to be read aloud (text/book.h's shape).
 *
 * The container's rootfile names the package (OPF); its spine gives the
 * reading order of the XHTML documents. Chapter titles come from the table
 * of contents: EPUB 3's navigation document (<nav epub:type="toc">) or
 * EPUB 2's NCX. A document the contents name starts a chapter titled as
 * there (the first entry pointing into it); a document they do not name
 * continues the chapter before it (books split one chapter over several
 * files); documents before the first named one form a chapter titled
 * "Opening". Without a table of contents every document is a chapter,
 * titled by its first h1-h3 or <title>, else "Chapter N". Documents
 * without text (covers, images) are skipped.
 *
 * Text: what a reader sees; paragraphs, headings, list items and line
 * breaks end a paragraph; script, style and the head are dropped. Each
 * chapter's text begins with its title as a sentence ("Title.", as
 * text/book.h does), the document's own heading of the same words dropped.
 *
 * Bad input gives one clear error, never a crash: not a ZIP, no container
 * or package, an empty spine, no text at all. Every decompressed entry is
 * capped (QTTS_EPUB_MAX_ENTRY) and so is the text (QTTS_EPUB_MAX_TEXT), so a
 * ZIP bomb ends in an error. Built without libzip and libxml2 (epub_none.c),
 * every call fails with a message saying so. */
#ifndef QTTS_TEXT_EPUB_H
#define QTTS_TEXT_EPUB_H

#include <stddef.h>

#include "core/err.h"
#include "text/book.h"

#define QTTS_EPUB_MAX_ENTRY ((size_t)64 << 20) /* bytes of one decompressed file */
#define QTTS_EPUB_MAX_TEXT ((size_t)256 << 20) /* bytes of the book's text */
#define QTTS_EPUB_MAX_SPINE 20000              /* documents in the reading order */

/* 1 when this build reads EPUB, 0 when it was built without. */
int qtts_epub_supported(void);

/* Parses the EPUB data[0, len). Returns 0 with at least one chapter in *out
 * (qtts_book_free frees it; line = the 1-based spine position of the
 * chapter's first document), or -1 with err set. */
int qtts_epub_parse(const void *data, size_t len, qtts_book *out, qtts_err *err);

#endif
