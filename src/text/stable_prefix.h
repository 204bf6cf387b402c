/* Incremental tokenization: how much of a text that is still being written
 * can be tokenized now without a later piece changing those tokens.
 *
 * qtts_tok_stable_prefix(text, len) returns a byte offset p <= len such that
 * the tokens of text[0..p) are a prefix of the tokens of text + any suffix.
 * p is the last position where
 *   (a) text[p] is an ASCII space and text[p-1] is not whitespace, or
 *   (b) text[p-1] is a letter (\p{L}) and text[p] is one of , . ! ? ; : and
 *       their full-width forms ， 。 ！ ？ ； ： 、 (unspaced scripts end
 *       clauses this way),
 * and 0 when there is none. Why this is safe for the Qwen2 tokenizer:
 *  - no pre-tokenizer pattern matches a non-space character followed by a
 *    space, nor a letter followed by one of those marks (letter runs stop at a
 *    non-letter; symbol runs start a new piece), so every piece before p ends
 *    before p whatever follows, and the patterns' one-character lookahead
 *    sees text[p], which is already known;
 *  - NFC only composes a character with combining marks after it, and
 *    text[p] is not one;
 *  - the added tokens (<|im_end|>, <tts_pad>, ...) contain none of those
 *    characters, so none can straddle p;
 *  - BPE runs within one piece.
 * tests/test_incremental_text.c checks it on random splits against whole
 * tokenizations. */
#ifndef QTTS_TEXT_STABLE_PREFIX_H
#define QTTS_TEXT_STABLE_PREFIX_H

#include <stddef.h>

size_t qtts_tok_stable_prefix(const char *text, size_t len);

#endif
