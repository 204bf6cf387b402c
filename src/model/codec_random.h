/* Random-weight speech-tokenizer decoders at any size (the real one by
 * default): benchmarks run the real loading path on an in-memory store. */
#ifndef QTTS_MODEL_CODEC_RANDOM_H
#define QTTS_MODEL_CODEC_RANDOM_H

#include <stdint.h>

#include "core/err.h"
#include "io/store.h"
#include "model/config.h"

/* The shipped Qwen3-TTS-Tokenizer-12Hz configuration: 24 kHz, 1920 samples
 * (12.5 Hz) per frame, 16 codebooks of 2048 entries. */
void qtts_codec_config_real(qtts_codec_config *cfg);

/* An in-memory store with every decoder tensor (official names and shapes
 * for cfg, F32) filled with seeded random values of sensible scale
 * (N(0, 1/fan_in)-like weights, unit norms, small layer scales, normalised
 * codebooks), so activations stay finite. */
qtts_store *qtts_codec_random_store(const qtts_codec_config *cfg, uint64_t seed, qtts_err *err);

#endif
