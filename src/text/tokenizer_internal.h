/* Internals of the text tokenizer exposed for tests only. */
#ifndef QTTS_TEXT_TOKENIZER_INTERNAL_H
#define QTTS_TEXT_TOKENIZER_INTERNAL_H

#include "text/bpe.h"
#include "text/tokenizer.h"

const qtts_merges *qtts_tok_merges(const qtts_tokenizer *tok);
/* Id of the single-byte token of byte b. */
int32_t qtts_tok_byte_id(const qtts_tokenizer *tok, uint8_t b);

#endif
