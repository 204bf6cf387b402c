/* Writing mono float audio to WAV files (through audio/encoder.h, the one
 * WAV writer): whole buffers or streamed chunk by chunk as frames are
 * decoded; and the one float -> 16-bit conversion. */
#ifndef QTTS_AUDIO_AUDIO_WRITE_H
#define QTTS_AUDIO_AUDIO_WRITE_H

#include <stdint.h>

#include "core/err.h"

typedef enum {
    QTTS_SAMPLE_S16 = 0, /* 16-bit PCM (default): qtts_f32_to_s16 */
    QTTS_SAMPLE_F32 = 1, /* 32-bit IEEE float */
} qtts_sample_format;

/* The one float -> 16-bit rule (libsndfile's and soundfile's): scale by
 * 32768, round to nearest, clip to [-32768, 32767]; NaN -> 0. Every s16 output
 * uses it: WAV files, the streaming encoders, and every server front end
 * (HTTP pcm/wav, WebSocket, Wyoming) through the server session. Why this
 * one: the reference pipeline writes its WAVs with soundfile (libsndfile),
 * so 16-bit outputs compare bit for bit with the reference's; and NaN, a
 * numeric failure upstream, plays as silence rather than a full-scale click
 * (scaling by 32767 with NaN -> -32767 did neither). */
short qtts_f32_to_s16(float v);

/* "s16" / "f32" (also "pcm16", "float"); -1 if unknown. */
int qtts_sample_format_parse(const char *name, qtts_sample_format *out);

typedef struct qtts_wav_writer qtts_wav_writer;

qtts_wav_writer *qtts_wav_open(const char *path, int sample_rate, qtts_sample_format fmt, qtts_err *err);
int qtts_wav_append(qtts_wav_writer *w, const float *samples, int64_t n, qtts_err *err);
/* Finalizes the header and frees w (also on error). */
int qtts_wav_close(qtts_wav_writer *w, qtts_err *err);
int64_t qtts_wav_frames_written(const qtts_wav_writer *w);

/* open + append + close. */
int qtts_wav_write(const char *path, const float *samples, int64_t n, int sample_rate, qtts_sample_format fmt,
                   qtts_err *err);

#endif
