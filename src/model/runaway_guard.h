/* Runaway-generation guard: ends an utterance that would otherwise never end
 * well. A missed codec EOS appends minutes of noise; a degenerate sampler
 * state loops one short codebook-0 pattern. Two independent checks, each
 * applied after a frame exists:
 *
 *   length      at most qtts_guard_frame_cap(text tokens, ratio) frames, a cap
 *               relative to the text (speech runs ~4 frames per text token;
 *               the default allows 10 plus a fixed allowance);
 *   repetition  the last codebook-0 tokens are one pattern of period p <= 25
 *               frames (2 s), repeated exactly for at least 40 frames (3.2 s)
 *               and at least 3 periods. Speech never repeats codes exactly for
 *               that long; pauses are shorter.
 *
 * Neither check looks at anything but the codes already generated, so when it
 * does not fire the codes are exactly those without the guard. */
#ifndef QTTS_MODEL_RUNAWAY_GUARD_H
#define QTTS_MODEL_RUNAWAY_GUARD_H

#include <stdint.h>

#define QTTS_GUARD_FRAMES_PER_TOKEN 10.0 /* default ratio */
#define QTTS_GUARD_FRAME_ALLOWANCE 50    /* frames (4 s) on top: short inputs, leading/trailing silence */
#define QTTS_GUARD_MAX_PERIOD 25
#define QTTS_GUARD_MIN_LOOP 40

/* The text-relative frame cap: allowance + ratio x text tokens. */
int64_t qtts_guard_frame_cap(int64_t text_tokens, double frames_per_token);

/* Loop detector state: run[p] = how many consecutive frames ended with
 * c0[t] == c0[t - p]. */
typedef struct {
    int32_t run[QTTS_GUARD_MAX_PERIOD + 1];
} qtts_repeat_state;

/* Feeds frame t (c0 = the codebook-0 tokens of frames 0..t, t = n - 1).
 * Returns 1 when the last frames form a loop as defined above. */
int qtts_repeat_feed(qtts_repeat_state *st, const int32_t *c0, int64_t stride, int64_t n);

#endif
