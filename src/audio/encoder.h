/* Streaming audio encoder: float samples in, encoded bytes out through a
 * caller-supplied sink. Used by `qtts say` (files, stdout) and the HTTP
 * server (chunked responses), so it knows nothing about FILE* or sockets.
 *
 *   qtts_audio_sink sink = {my_write, NULL, ctx};      // NULL seek: a stream
 *   qtts_encoder *enc = qtts_encoder_open(QTTS_AUDIO_WAV, QTTS_SAMPLE_S16,
 *                                         24000, 1, &sink, &err);
 *   while (...) qtts_encoder_write(enc, samples, n_frames, &err);
 *   qtts_encoder_close(enc, &err);                      // flushes and frees
 *
 * Bytes reach the sink in stream order as soon as the format allows:
 *   wav, pcm         written by hand; every write emits its samples at once.
 *                    WAV header first; on a non-seekable sink its RIFF/data
 *                    (and fact) sizes are 0xFFFFFFFF ("unknown, read to the
 *                    end"), which players and libsndfile accept; on a
 *                    seekable sink close() seeks back and patches the sizes.
 *   flac, opus,      through libsndfile (sf_open_virtual). Bytes come out in
 *   vorbis, mp3      encoder-sized blocks. Ogg streams never seek. FLAC and
 *                    MP3 rewrite their header at close (FLAC STREAMINFO totals
 *                    and MD5, the MP3 Xing/LAME tag): with a seekable sink the
 *                    patch is applied; without one it is dropped, which leaves
 *                    a valid stream whose header says "length unknown".
 *   aac, m4a         AAC-LC through libavcodec's native encoder (64 kbit/s
 *                    per channel at 24 kHz), muxed by libavformat: aac = ADTS
 *                    (never seeks); m4a = MP4 with the moov atom at the end
 *                    when the sink can seek, fragmented MP4 when it cannot
 *                    (encoder_aac.h). Bytes come out after every write.
 * The sink never sees a seek unless it provided one.
 *
 * Sample formats: s16 or f32 for wav and pcm (little-endian, interleaved);
 * flac stores 16 bits for s16 and 24 bits for f32; lossy formats ignore it.
 * Integer output follows libsndfile's convention: s16 = round(x * 32768)
 * clipped to [-32768, 32767]; NaN becomes 0.
 *
 * Thread-safety: one encoder per thread at a time; distinct encoders are
 * independent. */
#ifndef QTTS_AUDIO_ENCODER_H
#define QTTS_AUDIO_ENCODER_H

#include <stddef.h>
#include <stdint.h>

#include "audio/audio_write.h" /* qtts_sample_format (s16/f32) and its parser */
#include "core/err.h"

typedef enum {
    QTTS_AUDIO_WAV = 0,
    QTTS_AUDIO_PCM,    /* headerless samples */
    QTTS_AUDIO_FLAC,
    QTTS_AUDIO_OPUS,   /* Ogg Opus */
    QTTS_AUDIO_VORBIS, /* Ogg Vorbis */
    QTTS_AUDIO_MP3,
    QTTS_AUDIO_AAC, /* AAC-LC in ADTS */
    QTTS_AUDIO_M4A, /* AAC-LC in MP4 (.m4a, .mp4) */
    QTTS_AUDIO_N_FORMATS
} qtts_audio_format;

/* Receives n encoded bytes; returns 0, or non-zero to fail the encoder (for
 * instance a closed client). */
typedef int (*qtts_sink_write_fn)(void *user, const void *bytes, size_t n);
/* Optional: moves the write position to `offset` bytes from the start of
 * this stream (always <= bytes written so far). Returns 0 or non-zero. */
typedef int (*qtts_sink_seek_fn)(void *user, uint64_t offset);

typedef struct {
    qtts_sink_write_fn write; /* required */
    qtts_sink_seek_fn seek;   /* NULL: non-seekable (pipe, socket, HTTP body) */
    void *user;
} qtts_audio_sink;

typedef struct qtts_encoder qtts_encoder;

/* A chapter mark of an M4A/M4B file: frames [start, end) of the audio. */
typedef struct {
    const char *title; /* UTF-8 */
    uint64_t start, end;
} qtts_audio_chapter;

/* Names: "wav", "pcm" (also "raw"), "flac", "opus", "vorbis" (also "ogg"),
 * "mp3", "aac", "m4a" (also "mp4" and "m4b", the audiobook extension). Return 0, or -1 with "unknown audio
 * format 'x' (...)". */
int qtts_audio_format_parse(const char *name, qtts_audio_format *out, qtts_err *err);
/* From a file name's extension: .wav .pcm .raw .flac .opus .ogg .oga .mp3
 * .aac .m4a .m4b .mp4. */
int qtts_audio_format_from_path(const char *path, qtts_audio_format *out, qtts_err *err);
const char *qtts_audio_format_name(qtts_audio_format f);
/* 0 if this process can write f; else -1 and why (aac and m4a need FFmpeg's
 * libraries, opened at run time). For a check before long work. */
int qtts_audio_format_available(qtts_audio_format f, qtts_err *err);
/* Sample format names: qtts_sample_format_parse() in audio/audio_write.h. */

/* Starts an encoder and may emit header bytes at once. channels >= 1;
 * sample_rate > 0 (opus: 8000, 12000, 16000, 24000 or 48000; aac and m4a:
 * one of AAC's rates, 7350 to 96000). The sink struct is copied. */
qtts_encoder *qtts_encoder_open(qtts_audio_format fmt, qtts_sample_format sfmt, int sample_rate, int channels,
                                const qtts_audio_sink *sink, qtts_err *err);
/* Encodes n_frames frames (n_frames * channels interleaved floats). After a
 * failure every later write fails too. */
int qtts_encoder_write(qtts_encoder *enc, const float *samples, size_t n_frames, qtts_err *err);
/* Flushes, finalizes headers (patches them if the sink can seek) and frees
 * the encoder, also on failure. Returns 0 or -1. NULL is a no-op. */
int qtts_encoder_close(qtts_encoder *enc, qtts_err *err);
/* Frees without flushing anything more to the sink (client went away). */
void qtts_encoder_abort(qtts_encoder *enc);
/* Frames accepted so far. */
uint64_t qtts_encoder_frames(const qtts_encoder *enc);

/* ---- file convenience ---- */

/* Opens an encoder writing to `path` ("-" = stdout). The format is
 * `format_name` when non-NULL, else taken from the extension ("-" without a
 * format is wav). Regular files (and stdout redirected to one) are seekable,
 * so headers get patched; pipes stream. The file is created/truncated at open
 * and closed by qtts_encoder_close (stdout is flushed, not closed). */
qtts_encoder *qtts_encoder_open_file(const char *path, const char *format_name, qtts_sample_format sfmt,
                                     int sample_rate, int channels, qtts_err *err);
/* As qtts_encoder_open_file, for m4a (.m4a/.m4b/.mp4) only, with chapter
 * marks (a QuickTime chapter track and a Nero 'chpl' list, which audiobook
 * players and ffprobe read). The marks must be known before the audio:
 * they go into the header. Titles are copied. */
qtts_encoder *qtts_encoder_open_file_chapters(const char *path, const char *format_name, qtts_sample_format sfmt,
                                              int sample_rate, int channels, const qtts_audio_chapter *chapters,
                                              size_t n_chapters, qtts_err *err);
/* One-shot: encodes a whole buffer to a file as above. */
int qtts_audio_write_file(const char *path, const char *format_name, qtts_sample_format sfmt, const float *samples,
                          size_t n_frames, int sample_rate, int channels, qtts_err *err);

#endif
