/* AAC for the streaming encoder (encoder.c dispatches here): libavcodec's
 * native "aac" encoder (AAC-LC), muxed by libavformat into ADTS (.aac) or
 * MP4/M4A (.m4a), bytes going to a qtts_audio_sink through a custom
 * AVIOContext. Internal to src/audio; callers use audio/encoder.h.
 *
 *   ADTS   every 1024-sample frame carries its own 7-byte header: streams to
 *          any sink, never seeks. Decoders output the encoder's 1024-sample
 *          priming too (ADTS cannot say to skip it).
 *   M4A    "ipod" muxer (brand M4A). Seekable sink: ftyp, mdat, then moov at
 *          close (the mdat size is patched by a seek back). Non-seekable
 *          sink: fragmented MP4, append-only: ftyp and a moov without
 *          samples once the first fragment is ready, then moof+mdat about
 *          every half second. Both carry an edit list that hides the priming.
 *
 * Bytes reach the sink after every write call (whatever the muxer has
 * finished), so a streamed ADTS response starts with the first frames. */
#ifndef QTTS_AUDIO_ENCODER_AAC_H
#define QTTS_AUDIO_ENCODER_AAC_H

#include <stddef.h>

#include "audio/encoder.h"
#include "core/err.h"

typedef struct qtts_aac_enc qtts_aac_enc;

/* m4a: 0 = ADTS, 1 = MP4 (seekable or fragmented, from sink->seek). The sink
 * is NOT copied: it must outlive the encoder (encoder.c passes its own, whose
 * user pointer it may change before the first write). May emit header bytes.
 * chapters (m4a only, n_chapters may be 0): marks in frames, in the header. */
qtts_aac_enc *qtts_aac_open(int m4a, int sample_rate, int channels, const qtts_audio_sink *sink,
                            const qtts_audio_chapter *chapters, size_t n_chapters, qtts_err *err);
/* n_frames frames of `channels` interleaved floats. */
int qtts_aac_write(qtts_aac_enc *a, const float *samples, size_t n_frames, qtts_err *err);
/* Encodes the last partial frame, drains the encoder, writes the trailer and
 * frees, also on failure. Returns 0 or -1. */
int qtts_aac_close(qtts_aac_enc *a, qtts_err *err);
/* 0 if libav can be opened (audio/libav.h), else -1 and why. */
int qtts_aac_available(qtts_err *err);
/* Frees without writing anything more. NULL is a no-op. */
void qtts_aac_abort(qtts_aac_enc *a);

#endif
