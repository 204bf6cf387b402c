/* Random-weight models at REAL dimensions (the shipped talker, code predictor
 * and tensor inventory of the 0.6B / 1.7B checkpoints) for
 * benchmarks: an in-memory qtts_store with the official tensor names and a
 * matching config, loaded through the normal path (qtts_talker_model_from_store).
 *
 * Memory: matrices are generated directly in the requested storage type
 * (f32 / bf16 / q8_0 / q4_k); embedding tables are bf16 (f32 when wtype is
 * f32), norms f32. The [text_vocab x text_hidden] text embedding is an
 * anonymous, lazily committed mapping: only rows 0..4095 and the special
 * tokens (ids >= 151643) hold random values; every other row reads as zeros
 * and costs no memory. Speaker-encoder tensors are not generated. */
#ifndef QTTS_MODEL_MODEL_RANDOM_H
#define QTTS_MODEL_MODEL_RANDOM_H

#include <stdint.h>

#include "io/store.h"
#include "model/config.h"
#include "model/talker.h"

/* size: "0.6b" / "0b6" or "1.7b" / "1b7". Real config values of that model. */
int qtts_model_random_config(qtts_model_config *cfg, const char *size, qtts_variant variant, qtts_err *err);
/* Talker + code predictor tensors for cfg, matrices stored as wtype. */
qtts_store *qtts_model_random_store(const qtts_model_config *cfg, qtts_dtype wtype, uint64_t seed, qtts_err *err);
/* Both, then loaded as a model (weights used as stored, zero-copy). */
qtts_talker_model *qtts_model_random(const char *size, qtts_variant variant, qtts_dtype wtype, uint64_t seed,
                                     qtts_err *err);

#endif
