#include "model/runaway_guard.h"

#include <math.h>

int64_t qtts_guard_frame_cap(int64_t text_tokens, double frames_per_token) {
    if (text_tokens < 0) text_tokens = 0;
    double cap = QTTS_GUARD_FRAME_ALLOWANCE + ceil(frames_per_token * (double)text_tokens);
    return cap > 1e15 ? (int64_t)1e15 : (int64_t)cap;
}

int qtts_repeat_feed(qtts_repeat_state *st, const int32_t *c0, int64_t stride, int64_t n) {
    int64_t t = n - 1;
    int loop = 0;
    for (int p = 1; p <= QTTS_GUARD_MAX_PERIOD; p++) {
        if (t - p < 0) {
            st->run[p] = 0;
            continue;
        }
        st->run[p] = c0[t * stride] == c0[(t - p) * stride] ? st->run[p] + 1 : 0;
        /* run[p] matches => the last run[p] + p tokens are p-periodic */
        int64_t span = (int64_t)st->run[p] + p;
        if (span >= QTTS_GUARD_MIN_LOOP && span >= 3 * p) loop = 1;
    }
    return loop;
}
