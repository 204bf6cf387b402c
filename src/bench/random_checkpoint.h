/* A random-weight checkpoint as a file the engine loads like any other: the
 * talker and code predictor of model/model_random.h and the speech-tokenizer
 * decoder of model/codec_random.h at real dimensions, in the one-file .gguf
 * layout `qtts quantize` writes (io/layout.h "qtts"), with config files
 * written from the same configs and a small byte-level BPE tokenizer.
 *
 * The tokenizer has the 256 byte tokens at the ids the published vocabulary
 * gives them, the chat template's tokens at theirs (<|im_start|>, <|im_end|>,
 * "assistant", "user") and each word of `words` as one token, so a sentence
 * made of those words tokenizes to as many ids as with the published
 * vocabulary (other text falls back to bytes). Only CustomVoice and
 * VoiceDesign: a Base model needs speaker and codec encoders, which are not
 * generated. */
#ifndef QTTS_BENCH_RANDOM_CHECKPOINT_H
#define QTTS_BENCH_RANDOM_CHECKPOINT_H

#include <stdint.h>

#include "core/err.h"
#include "model/config.h"
#include "tensor/tensor.h"

typedef struct {
    const char *size;     /* "0.6b" or "1.7b" */
    qtts_variant variant; /* custom_voice, or voice_design (1.7b) */
    qtts_dtype wtype;     /* the LM matrices: f32, bf16, q8_0, q4_k */
    uint64_t seed;
    const char *words;    /* space-separated words that become single tokens (may be NULL) */
} qtts_random_checkpoint;

/* Writes the checkpoint to path (atomically, as qtts_gguf_write). */
int qtts_random_checkpoint_write(const char *path, const qtts_random_checkpoint *c, qtts_err *err);

#endif
