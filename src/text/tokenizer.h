/* Qwen2 byte-level BPE text tokenizer (the one of Qwen2/Qwen3 LMs), loaded from the
 * model folder's vocab.json, merges.txt and tokenizer_config.json.
 *
 * Pipeline (as HF's Qwen2 tokenizers): added tokens with normalized=false are
 * split out of the raw text first (leftmost, then longest match; lstrip /
 * rstrip / single_word as configured); each remaining span is NFC-normalised,
 * then split on normalized=true added tokens; the rest is pre-tokenised with
 * the Qwen2 regex, each piece's bytes are mapped through GPT-2's
 * bytes_to_unicode and merged by BPE rank. No BOS/EOS is added.
 *
 * A loaded tokenizer is immutable: any number of threads may encode with it
 * at once. */
#ifndef QTTS_TEXT_TOKENIZER_H
#define QTTS_TEXT_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

typedef struct qtts_tokenizer qtts_tokenizer;

/* Prompt templates of qwen_tts/inference/qwen3_tts_model.py (_build_*_text). */
typedef enum {
    QTTS_TEMPLATE_TARGET,   /* "<|im_start|>assistant\n{text}<|im_end|>\n<|im_start|>assistant\n" */
    QTTS_TEMPLATE_REF,      /* "<|im_start|>assistant\n{text}<|im_end|>\n" */
    QTTS_TEMPLATE_INSTRUCT, /* "<|im_start|>user\n{text}<|im_end|>\n" */
} qtts_template_kind;

/* Loads dir/vocab.json, dir/merges.txt and dir/tokenizer_config.json (the
 * last is optional: without it there are no added tokens). */
qtts_tokenizer *qtts_tok_load(const char *dir, qtts_err *err);
/* Same with explicit paths; config_path may be NULL. */
qtts_tokenizer *qtts_tok_load_files(const char *vocab_path, const char *merges_path, const char *config_path,
                                    qtts_err *err);
void qtts_tok_free(qtts_tokenizer *tok);

/* Encodes len bytes of UTF-8 text (NULs allowed). On success *ids is a
 * malloc'd array of *n ids (free() it; non-NULL even when *n == 0). Invalid
 * UTF-8 fails with the byte offset of the first bad sequence. */
int qtts_tok_encode(const qtts_tokenizer *tok, const char *text, size_t len, int32_t **ids, int *n, qtts_err *err);

/* Encodes the template with {text} filled in, exactly as the official code
 * does (no trimming: a text starting with a newline merges with the
 * template's "\n", as it does in the reference). Fails if the tokenizer lacks
 * the <|im_start|> / <|im_end|> added tokens. */
int qtts_tok_encode_template(const qtts_tokenizer *tok, qtts_template_kind kind, const char *text, int32_t **ids,
                             int *n, qtts_err *err);

/* Highest token id + 1 (vocab and added tokens). */
int qtts_tok_vocab_size(const qtts_tokenizer *tok);
/* Id of an exact token string (vocab form, e.g. "Ġworld", or an added token
 * such as "<|im_start|>"); -1 when absent. */
int32_t qtts_tok_token_id(const qtts_tokenizer *tok, const char *token);
/* The token string of id in vocab form (what HF convert_ids_to_tokens
 * gives; always valid UTF-8, not NUL-terminated); NULL for an unknown id. */
const char *qtts_tok_token_str(const qtts_tokenizer *tok, int32_t id, size_t *len);
/* 1 when id is an added token (<|im_start|>, <tts_pad>, ...). */
int qtts_tok_is_added(const qtts_tokenizer *tok, int32_t id);

/* Decodes ids back to text bytes (byte-level tokens to their bytes, added
 * tokens verbatim). *out is malloc'd and NUL-terminated; it may hold invalid
 * UTF-8 when the ids split a character. Fails on an unknown id. */
int qtts_tok_decode(const qtts_tokenizer *tok, const int32_t *ids, int n, char **out, size_t *out_len, qtts_err *err);

#endif
