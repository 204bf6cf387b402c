#include "server/frame_limit.h"

#include "model/runaway_guard.h"

void srv_frame_limit_apply(qtts_request *r, int limit, int model_frames) {
    if (limit <= 0 || r->max_frames > 0 || (model_frames > 0 && model_frames <= limit)) return;
    r->max_frames = limit;
    /* 0 means auto: the default ratio without max_frames, off with it */
    if (r->guard_frames_per_token == 0) r->guard_frames_per_token = (float)QTTS_GUARD_FRAMES_PER_TOKEN;
}
