/* A reusable cloned voice (Base models): extracted once from a reference
 * recording, then shared by any number of requests.
 *   xvec  - speaker-encoder x-vector (talker hidden size), always present;
 *   codes - [n_frames][n_q] speech-tokenizer codes of the reference (ICL
 *           cloning), NULL for an x-vector-only voice;
 *   ref_text - transcript of the reference (needed for ICL), may be NULL.
 * All compute runs on the pool passed in (call from the engine thread). */
#ifndef QTTS_MODEL_VOICE_H
#define QTTS_MODEL_VOICE_H

#include <stddef.h>
#include <stdint.h>

#include "audio/audio_read.h"
#include "core/err.h"
#include "core/threadpool.h"
#include "model/codec_encoder.h"
#include "model/speaker_encoder.h"

typedef struct {
    float *xvec;
    int64_t dim;
    int32_t *codes;
    int64_t n_frames, n_q;
    char *ref_text;
} qtts_voice_data;

void qtts_voice_free(qtts_voice_data *v);

/* Shortest usable reference at the model rate: the speaker encoder's minimum,
 * and one codec frame (1920 samples) when codec is given. */
int64_t qtts_voice_min_samples(const qtts_spk_encoder *spk, const qtts_codec_encoder *codec);

/* wav: n mono samples at the speaker encoder's rate (24 kHz). codec NULL = x-vector
 * only. ref_text is copied (may be NULL). n_q = quantizers to keep (<= 0: the
 * tokenizer's valid count, 16). On failure *v is left empty. */
int qtts_voice_extract(qtts_voice_data *v, qtts_pool *pool, const qtts_spk_encoder *spk, const qtts_codec_encoder *codec,
                       const float *wav, int64_t n, const char *ref_text, int64_t n_q, qtts_err *err);

/* Same from an audio file or an in-memory file image (any format/rate/channels
 * libsndfile reads). max_seconds <= 0 means the default limit (60 s). */
int qtts_voice_extract_file(qtts_voice_data *v, qtts_pool *pool, const qtts_spk_encoder *spk,
                            const qtts_codec_encoder *codec, const char *path, const char *ref_text,
                            double max_seconds, qtts_err *err);
int qtts_voice_extract_memory(qtts_voice_data *v, qtts_pool *pool, const qtts_spk_encoder *spk,
                              const qtts_codec_encoder *codec, const void *data, size_t size, const char *label,
                              const char *ref_text, double max_seconds, qtts_err *err);

#endif
