/* When a stream's generated frames go to the speech-tokenizer decoder.
 *
 * The first frame is decoded at once (time to first audio). After that,
 * decoding several frames per step is cheaper per frame (the decoder
 * transformer's weights are read once per step, and the convolutions get
 * longer tiles and fewer pool dispatches), but it holds audio back.
 * So a stream waits for more frames only while the audio it has delivered
 * runs ahead of the wall clock by at least the wait (a real-time listener
 * never starves): lead = audio delivered - time since its first audio.
 * Waiting for c frames costs about c x the stream's pace (wall ms per
 * generated frame so far, prefill included, so an overestimate); the lead
 * asked for is 1.25x that.
 * A stream already behind real time (lead < 0: its listener is waiting
 * anyway, e.g. on a loaded server or a model slower than real time) gets
 * the largest steps: they cost least per frame, so the waits add up to less
 * and the stream may catch up. */
#ifndef QTTS_ENGINE_DECODE_POLICY_H
#define QTTS_ENGINE_DECODE_POLICY_H

#include <stdint.h>

enum { QTTS_DECODE_MAX_CHUNK = 4 };

/* Frames to collect before the next decoder step of a stream that has
 * decoded frames_decoded frames so far, is lead_ms ahead of real time and
 * has taken pace_ms of wall time per generated frame. */
static inline int64_t qtts_decode_chunk_target(int64_t frames_decoded, double lead_ms, double pace_ms) {
    if (frames_decoded == 0) return 1;
    if (lead_ms < 0) return QTTS_DECODE_MAX_CHUNK;
    for (int64_t c = QTTS_DECODE_MAX_CHUNK; c > 1; c /= 2)
        if (lead_ms >= 1.25 * (double)c * pace_ms) return c;
    return 1;
}

/* Whether a stream's pending frames go to the decoder now (finished streams
 * always flush). Times in ms on one clock: t_start = when its generation
 * started, t_first_audio = when its first audio was delivered. */
static inline int qtts_decode_due(int64_t n_pending, int finished, int64_t samples_out, int64_t frame_samples,
                                  int64_t sample_rate, double t_start, double t_first_audio, double now) {
    if (!n_pending) return 0;
    if (finished) return 1;
    int64_t decoded = samples_out / frame_samples;
    if (!decoded) return 1;
    double lead = (double)samples_out * 1000.0 / (double)sample_rate - (now - t_first_audio);
    double pace = (now - t_start) / (double)(decoded + n_pending);
    return n_pending >= qtts_decode_chunk_target(decoded, lead, pace);
}

#endif
