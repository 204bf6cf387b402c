/* One synthesis as every server front end serves it: submit the request,
 * take the engine's PCM as it arrives, change its tempo (speed, stretch.h),
 * resample it where the response asks for another rate (soxr), encode it
 * (audio/encoder.h: wav, pcm, flac, mp3, opus, aac) and hand the
 * bytes to the front end, which only frames them: an HTTP body or SSE
 * events (speech.c), WebSocket messages (ws_speech.c), Wyoming audio-chunk
 * events (wyoming.c), ElevenLabs' formats (elevenlabs.c).
 *
 * A session never waits: srv_session_read takes what the engine has now.
 * The engine tells the front end when there is more through the notifier
 * given at start (a callback that may only signal, or a descriptor for
 * poll()), so no front end looks on a timer. Runs on the front end's thread
 * and computes no model work: stretching and encoding are post-processing. */
#ifndef QTTS_SERVER_SESSION_H
#define QTTS_SERVER_SESSION_H

#include <stddef.h>

#include "qtts.h"
#include "server/audio_out.h"
#include "server/buf.h"

typedef struct srv_session srv_session;

typedef struct {
    srv_format fmt;
    double speed;    /* 1: as spoken; else the tempo change, pitch kept */
    int sample_rate; /* the model's */
    int out_rate;    /* the encoded audio's: 0 (or sample_rate) as the model speaks, else resampled */
    /* 1: the whole response at once (a buffered HTTP response): the samples
     * are kept and encoded at the end, so headers carry real sizes (WAV
     * lengths, FLAC totals, the MP3 Xing tag). 0: bytes as they come; a
     * WAV header then says "length unknown". */
    int whole;
    /* The engine's "something changed" (qtts_stream_set_notify): fn, or a
     * descriptor written on each change (-1: none). */
    qtts_stream_notify_fn notify;
    void *notify_user;
    int notify_fd;
} srv_session_opts;

typedef enum {
    SRV_SESSION_WAITING, /* nothing new yet: wait for the notifier */
    SRV_SESSION_AUDIO,   /* audio arrived (its bytes, if the encoder gave any, were appended) */
    SRV_SESSION_DONE,    /* the end: the last bytes were appended */
    SRV_SESSION_FAILED,  /* srv_session_error says why */
} srv_session_state;

/* Submits r. NULL with err filled (the engine's status, or out of memory). */
srv_session *srv_session_start(qtts_engine *e, const qtts_request *r, const srv_session_opts *o, qtts_error *err);
/* A dialogue's turns (each its own voice) as one recording: turns[0] is
 * submitted now, each next one when the one before ends, pause_samples of
 * silence (at the model's rate) between them, all into the one encoder.
 * turns' strings and voices must live until the session is freed:
 * owner_free(owner) runs then (and on failure here). */
srv_session *srv_session_start_turns(qtts_engine *e, const qtts_request *turns, size_t n, size_t pause_samples,
                                     const srv_session_opts *o, void *owner, void (*owner_free)(void *),
                                     qtts_error *err);
/* Takes everything the engine has now, stretches and encodes it, appending
 * the bytes to out. Never waits. After DONE or FAILED it returns the same. */
srv_session_state srv_session_read(srv_session *ss, srv_buf *out);
/* The engine stream (a dialogue's current turn): text appends, cancel, status. */
qtts_stream *srv_session_stream(const srv_session *ss);
/* Why it failed: the engine's message, or the encoder's. */
const char *srv_session_error(const srv_session *ss);
/* The engine's status when it failed there; QTTS_ERR_NO_MEMORY/INTERNAL when encoding did. */
qtts_status srv_session_status(const srv_session *ss);
/* 1 when it FAILED in the engine (a dialogue's next turn included), 0 when
 * post-processing (stretch, resampling, encoding) did. */
int srv_session_engine_failed(const srv_session *ss);
/* The result: the stream's, or a dialogue's turns summed (frames, tokens,
 * times; the first turn's seed; the worst ending). */
void srv_session_result(const srv_session *ss, qtts_result *out);
/* Samples encoded so far (after the tempo change). */
size_t srv_session_samples(const srv_session *ss);
/* Removes the notifier, cancels the synthesis if it still runs and frees. */
void srv_session_free(srv_session *ss);

#endif
