/* Reference-audio loading for voice cloning: any file libsndfile reads (WAV
 * PCM16/24/32/float, FLAC, OGG Vorbis/Opus, MP3, ...), from a path or a
 * memory buffer (HTTP uploads), downmixed to mono (channel mean, like the
 * reference's np.mean) and resampled to the model rate with libsoxr's HQ
 * recipe (what librosa.resample's default res_type 'soxr_hq' uses), with the
 * output length fixed to ceil(n * out_rate / in_rate) as librosa does.
 *
 * Bad input gives one clear error: unreadable/unknown format, no samples,
 * NaN/Inf samples, shorter than min_samples, longer than max_seconds. Files
 * are read in chunks, so a header that claims hours never causes a large
 * allocation; reading stops at the limit. */
#ifndef QTTS_AUDIO_AUDIO_READ_H
#define QTTS_AUDIO_AUDIO_READ_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

typedef struct {
    int64_t target_rate; /* output sample rate (24000); 0: the source's own */
    int64_t min_samples; /* minimum length at target_rate (e.g. 1920 = one codec frame for ICL) */
    double max_seconds;  /* maximum duration of the input (e.g. 60) */
} qtts_audio_opts;

/* target 24000 Hz, min 1 sample, max 60 s. */
void qtts_audio_opts_default(qtts_audio_opts *o);

/* A decoded, mono, resampled clip. samples is malloc'd (free with qtts_audio_free). */
typedef struct {
    float *samples;
    int64_t n;
    int64_t rate;        /* = target_rate (the source's when that is 0) */
    int64_t source_rate; /* rate of the file */
    int source_channels;
} qtts_audio;

void qtts_audio_free(qtts_audio *a);

int qtts_audio_read_file(const char *path, const qtts_audio_opts *o, qtts_audio *out, qtts_err *err);
/* label names the buffer in errors (e.g. "ref_audio upload"). The buffer is only read during the call. */
int qtts_audio_read_memory(const void *data, size_t size, const char *label, const qtts_audio_opts *o,
                           qtts_audio *out, qtts_err *err);
/* Raw samples already in memory (library API): interleaved frames of `channels`, any rate.
 * Validates, downmixes and resamples like the readers. */
int qtts_audio_from_samples(const float *interleaved, int64_t frames, int channels, int64_t rate, const char *label,
                            const qtts_audio_opts *o, qtts_audio *out, qtts_err *err);

/* Mono resampling with soxr HQ; *out is malloc'd with exactly ceil(n*out_rate/in_rate) samples
 * (a copy when the rates match). */
int qtts_audio_resample(const float *in, int64_t n, int64_t in_rate, int64_t out_rate, float **out, int64_t *n_out,
                        qtts_err *err);

#endif
