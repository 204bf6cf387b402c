/* The pronunciation lexicon: a user's words and phrases with what to say
 * instead (names, brands, heteronyms), applied to the text before the rest
 * of the text front end, so its numbers and symbols rules see the
 * respelling.
 *
 * File format (UTF-8, docs/text.md): one entry per line,
 *   written<TAB>spoken[<TAB>language]
 * '#' at the start of a line begins a comment; blank lines are skipped.
 * The language (an ISO code of the text front end) limits an entry to text
 * of that language; without it the entry applies to all.
 * Case: a written form with no capital letter matches any case ("nginx"
 * matches "NGINX"); one with a capital matches exactly as written.
 * Whole words: a written form that begins (ends) with a letter or digit of
 * a spaced script matches only where no letter or digit comes before (after)
 * it, nor '.', '-', '@', '/' joined to one (so not inside URLs, e-mail
 * addresses, file names or hyphenated words); CJK written forms match
 * anywhere. Precedence at one place: the longest written form; then an
 * entry of the text's language over one for all languages. */
#ifndef QTTS_TEXT_LEXICON_H
#define QTTS_TEXT_LEXICON_H

#include <stddef.h>

#include "core/err.h"
#include "qtts.h"
#include "text/strbuf.h"

/* A file's text (name: for messages) -> a lexicon with one reference; NULL
 * and QTTS_ERR_INVALID with "name:line: why" for a bad entry. */
qtts_lexicon *qtts_lexicon_parse_text(const char *text, size_t len, const char *name, qtts_err *err);
qtts_lexicon *qtts_lexicon_load_file(const char *path, qtts_err *err);
size_t qtts_lexicon_size(const qtts_lexicon *lx); /* entries */

/* One lexicon of two (a registered voice's over the global one): every
 * entry of first, then those of then whose written form first does not
 * define (compared ignoring case), so first's entry for a written form
 * replaces all of then's for it; different written forms keep the longest
 * match rule, and at equal length first's wins. Either may be NULL: then
 * the other gains a reference (NULL when both are). A new lexicon with one
 * reference otherwise, or NULL with err (out of memory). */
qtts_lexicon *qtts_lexicon_merge(const qtts_lexicon *first, const qtts_lexicon *then, qtts_err *err);

/* Replaces the entries of lang (an ISO code) in s[from, n) (s[0, from): the
 * text before, for the word boundary), appending to out. complete 0: more
 * text may follow, so it stops where a match could still reach past n.
 * Returns the position it read up to. s is valid UTF-8. */
size_t qtts_lexicon_apply(const qtts_lexicon *lx, const char *lang, const char *s, size_t from, size_t n,
                          int complete, qtts_strbuf *out);

#endif
