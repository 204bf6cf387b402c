/* Long text -> utterance-sized chunks.
 *
 * The model speaks best with a few sentences at a time, so `qtts say` splits
 * long input and synthesizes the chunks one after another. Rules:
 *  - Sentence ends: . ! ? ; … (ASCII ones need whitespace or the end of the
 *    text after them, so "3.14" and "a.b" stay whole; common abbreviations
 *    like "Mr." "e.g." and single-letter initials do not end a sentence) and
 *    the CJK/full-width 。！？；．｡ plus ؟ । ॥ (no space needed). Closing quotes
 *    and brackets after the mark stay with the sentence.
 *  - Newlines: a single line break ends a sentence; a blank line (paragraph)
 *    always ends a chunk. In by-line mode every line is its own chunk.
 *  - Sentences are packed greedily into chunks of at most max_chars "units".
 *    A unit is one code point, except East Asian wide characters (Han, kana,
 *    Hangul, full-width forms), which count cjk_weight units since each
 *    carries about a syllable of speech.
 *  - A sentence longer than max_chars is cut at the last clause mark
 *    (, ， 、 : ： – — ) or, failing that, the last space that fits; with
 *    neither (e.g. unpunctuated CJK) at the limit itself, never inside a
 *    UTF-8 sequence nor before a combining mark / joiner.
 *
 * Guarantee (tested): chunks are non-empty byte ranges of the input, in
 * order, without overlap, trimmed of surrounding whitespace; everything
 * between two chunks is whitespace. So the concatenation of the chunks equals
 * the input once all whitespace is removed: no text is lost or duplicated.
 * Invalid UTF-8 bytes are kept and treated as one unit each.
 *
 * qtts_text_chunk_dup() returns a chunk's text with every whitespace run
 * (line breaks included) collapsed to a single space: that is the only
 * normalization applied to what the model sees. */
#ifndef QTTS_TEXT_SPLIT_H
#define QTTS_TEXT_SPLIT_H

#include <stddef.h>

#include "core/err.h"

typedef struct {
    int max_chars;  /* chunk budget in units; <= 0: QTTS_SPLIT_DEFAULT_MAX */
    int cjk_weight; /* units per wide (CJK) character; <= 0: 3 */
    int by_line;    /* 1: each non-empty line is its own chunk (long lines still split) */
} qtts_split_params;

#define QTTS_SPLIT_DEFAULT_MAX 300

typedef struct {
    size_t start; /* byte offset into the text */
    size_t len;   /* bytes, > 0 */
} qtts_text_chunk;

void qtts_split_params_default(qtts_split_params *p);

/* Splits text[0, len). On success returns the number of chunks (0 for empty
 * or all-whitespace text) and sets *out to a malloc'd array the caller frees
 * (NULL when 0). Returns -1 only when out of memory. p may be NULL. */
long qtts_text_split(const char *text, size_t len, const qtts_split_params *p, qtts_text_chunk **out, qtts_err *err);

/* malloc'd, NUL-terminated copy of a chunk with whitespace runs collapsed to
 * one space. NULL (err set) when out of memory. */
char *qtts_text_chunk_dup(const char *text, qtts_text_chunk c, qtts_err *err);

/* Units of text[0, len) as the splitter counts them. */
size_t qtts_text_units(const char *text, size_t len, int cjk_weight);

#endif
