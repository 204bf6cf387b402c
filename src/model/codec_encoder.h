/* Speech-tokenizer encoder: 24 kHz waveform -> RVQ codes, the
 * Mimi geometry with the Qwen weights (`encoder.*` of speech_tokenizer/).
 * SEANet causal conv stack -> transformer (LayerNorm, RoPE, full causal
 * attention as in the reference's sdpa path, LayerScale, GELU MLP) -> stride-2
 * downsample (replicate padding) -> split RVQ (semantic + acoustic residual).
 * Only Base ICL cloning needs it. All sizes from config and tensor shapes. */
#ifndef QTTS_MODEL_CODEC_ENCODER_H
#define QTTS_MODEL_CODEC_ENCODER_H

#include <stdint.h>

#include "core/err.h"
#include "core/threadpool.h"
#include "io/store.h"
#include "model/config.h"
#include "model/voice_tap.h"

typedef struct qtts_codec_encoder qtts_codec_encoder;

/* st: the speech tokenizer's tensors; cfg: its config (needs encoder_config). */
qtts_codec_encoder *qtts_codec_encoder_load(const qtts_store *st, const qtts_codec_config *cfg, qtts_err *err);
void qtts_codec_encoder_free(qtts_codec_encoder *e);

int64_t qtts_codec_encoder_sample_rate(const qtts_codec_encoder *e);
/* Samples per output frame (1920 = 24 kHz / 12.5 Hz). */
int64_t qtts_codec_encoder_hop(const qtts_codec_encoder *e);
/* Quantizers used for the talker (encoder_valid_num_quantizers, 16) and all stored ones (32). */
int64_t qtts_codec_encoder_valid_quantizers(const qtts_codec_encoder *e);
int64_t qtts_codec_encoder_max_quantizers(const qtts_codec_encoder *e);
/* Frames produced for n samples: ceil(n / hop). */
int64_t qtts_codec_encoder_frames(const qtts_codec_encoder *e, int64_t n);

/* wav: n >= 1 samples at the tokenizer rate. codes: frames(n) rows of n_q int32
 * (n_q in 1..max_quantizers; the first valid_quantizers are what the talker
 * uses). tap (may be NULL) sees enc_seanet_out [C][T25], enc_transformer_out
 * [T25][C] and enc_downsample_out [C][T12]. */
int qtts_codec_encoder_encode(const qtts_codec_encoder *e, qtts_pool *pool, const float *wav, int64_t n, int64_t n_q,
                              int32_t *codes, qtts_stage_tap tap, void *tap_ctx, qtts_err *err);

#endif
