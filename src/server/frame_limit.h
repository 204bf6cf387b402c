/* The servers' per-request frame limit (--max-request-frames): the most codec
 * frames one request may make the engine generate, whatever runaway guards
 * the request turns off. Each frame holds a KV-cache position (229 KB for
 * 0.6B in f32) and 80 ms of audio while the request runs, so without it one
 * request asking max_new_tokens 2^20 with the guards off grows until the
 * machine's memory ends. The field's own range stays [1, 2^20]: the limit is
 * the server's, and a request above it is refused by name. */
#ifndef QTTS_SERVER_FRAME_LIMIT_H
#define QTTS_SERVER_FRAME_LIMIT_H

#include "qtts.h"

/* 4096 frames = 327.7 s of audio per utterance: above any sentence, half the
 * model's own default (8191), and 0.9 GB of f32 KV cache for 0.6B. */
#define SRV_MAX_REQUEST_FRAMES_DEFAULT 4096

/* After a request's fields are parsed: where it sets no frame limit and the
 * model's default (model_frames) is above limit, the limit applies. The guard
 * keeps the engine's automatic ratio, which a set max_frames would switch off.
 * limit <= 0: no server limit. */
void srv_frame_limit_apply(qtts_request *r, int limit, int model_frames);

#endif
