/* Speaker encoder of the Base models: ECAPA-TDNN without BatchNorm.
 * 24 kHz mono waveform -> log-mel (model/mel.h) -> x-vector of the talker
 * hidden size. Weights are the `speaker_encoder.*` tensors of the main
 * checkpoint (any stored dtype; converted to f32 at load). All sizes come from
 * the config and the tensor shapes. */
#ifndef QTTS_MODEL_SPEAKER_ENCODER_H
#define QTTS_MODEL_SPEAKER_ENCODER_H

#include <stdint.h>

#include "core/err.h"
#include "core/threadpool.h"
#include "io/store.h"
#include "model/config.h"
#include "model/voice_tap.h"

typedef struct qtts_spk_encoder qtts_spk_encoder;

/* Fails if the config has no speaker encoder (not a Base model). */
qtts_spk_encoder *qtts_spk_encoder_load(const qtts_store *st, const qtts_model_config *cfg, qtts_err *err);
void qtts_spk_encoder_free(qtts_spk_encoder *e);

int64_t qtts_spk_encoder_dim(const qtts_spk_encoder *e);         /* x-vector length (= talker hidden) */
int64_t qtts_spk_encoder_sample_rate(const qtts_spk_encoder *e); /* expected input rate (24000) */
/* Shortest waveform the network accepts (reflect paddings need enough frames). */
int64_t qtts_spk_encoder_min_samples(const qtts_spk_encoder *e);

/* mel: [frames][mel_dim] (the reference's input layout). xvec: dim floats.
 * tap (may be NULL) sees spk_block0_out..spk_block3_out [C][T], spk_mfa_out
 * [C][T], spk_asp_out [2C][1], spk_embedding [D][1]. */
int qtts_spk_encoder_forward_mel(const qtts_spk_encoder *e, qtts_pool *pool, const float *mel, int64_t frames,
                                 float *xvec, qtts_stage_tap tap, void *tap_ctx, qtts_err *err);

/* wav: n samples at qtts_spk_encoder_sample_rate. Computes the mel (tap "spk_mel"
 * [frames][mel_dim]) and runs the network. */
int qtts_spk_encoder_embed(const qtts_spk_encoder *e, qtts_pool *pool, const float *wav, int64_t n, float *xvec,
                           qtts_stage_tap tap, void *tap_ctx, qtts_err *err);

#endif
