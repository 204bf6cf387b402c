/* Log-mel front end of the speaker encoder (the reference's mel_spectrogram):
 * reflect-pad (n_fft-hop)/2 on both sides, STFT (n_fft 1024, hop 256, periodic
 * Hann, no centering, onesided), magnitude sqrt(re^2+im^2+1e-9), librosa
 * Slaney mel filterbank (htk=false, norm='slaney', fmin 0, fmax sr/2),
 * log(max(x, 1e-5)). Output layout [frames][n_mels]. */
#ifndef QTTS_MODEL_MEL_H
#define QTTS_MODEL_MEL_H

#include <stdint.h>

#include "core/err.h"
#include "core/threadpool.h"

typedef struct qtts_mel qtts_mel;

/* n_fft must be a power of two; fmax <= 0 means sample_rate/2. */
qtts_mel *qtts_mel_create(int64_t sample_rate, int64_t n_fft, int64_t hop, int64_t n_mels, double fmin, double fmax,
                          qtts_err *err);
/* The speaker encoder's settings: n_fft 1024, hop 256, fmin 0, fmax sr/2. */
qtts_mel *qtts_mel_create_speaker(int64_t sample_rate, int64_t n_mels, qtts_err *err);
void qtts_mel_free(qtts_mel *m);

/* Frames for n samples: 1 + (n - hop) / hop after the reflect padding; 0 if too short. */
int64_t qtts_mel_frames(const qtts_mel *m, int64_t n_samples);
/* Smallest input the reflect padding accepts: (n_fft - hop)/2 + 1 samples and one frame. */
int64_t qtts_mel_min_samples(const qtts_mel *m);

/* out: qtts_mel_frames(m, n) rows of n_mels floats. Frames are split over the pool. */
int qtts_mel_compute(const qtts_mel *m, qtts_pool *pool, const float *wav, int64_t n, float *out, qtts_err *err);

/* The filterbank as librosa builds it (float32 weights), [n_mels][n_fft/2+1]; for tests. */
const float *qtts_mel_filterbank(const qtts_mel *m);

#endif
