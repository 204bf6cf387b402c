/* Whether the engine decodes one stream step's frames while the LMs compute
 * the next ones ("overlap"), decided by measurement.
 *
 * With two pool threads or more, an overlapped decode step runs as one pool
 * job: the engine thread runs talker + code-predictor steps while thread 1
 * runs the decoder step, until the decoder is done, the first one done then
 * helping the other (engine/overlap.h, with any further threads). That pays
 * where the LMs scale badly with threads (memory-bound: one thread already
 * reads most of the DRAM bandwidth) and the decoder well (compute-bound).
 * Elsewhere it may not (a fast bf16 decoder next to LMs that scale), so the
 * engine measures both ways: the wall time per generated frame of each
 * decode cycle (from the end of one decoder step to the end of the next,
 * prefill-free cycles only) goes into a running average per mode, the faster
 * mode is used, and the other one is tried again every
 * QTTS_OVERLAP_PROBE_EVERY cycles. Pure functions, so the
 * choice is testable without a model. */
#ifndef QTTS_ENGINE_OVERLAP_POLICY_H
#define QTTS_ENGINE_OVERLAP_POLICY_H

#include <stdint.h>

enum {
    QTTS_OVERLAP_PROBE_EVERY = 32, /* decode cycles in the faster mode between re-measurements of the other */
    QTTS_OVERLAP_MAX_LM_STEPS = 16 /* LM steps one overlapped decode step may run beside it */
};
#define QTTS_OVERLAP_EMA 0.3 /* weight of the newest cycle in a mode's average */

typedef struct {
    double ms[2];       /* average wall ms per generated frame: [0] one after the other, [1] overlapped; 0: none yet */
    int64_t since_probe; /* cycles recorded in the faster mode since the slower one was last measured */
} qtts_overlap_stats;

/* 1: overlap the next decoder step. The sequential mode is measured first
 * (it is what a single-thread-unfriendly first step needs anyway), then the
 * overlapped one once, then the faster one is kept, with a probe of the
 * other every QTTS_OVERLAP_PROBE_EVERY cycles. */
static inline int qtts_overlap_choose(const qtts_overlap_stats *s) {
    if (s->ms[0] <= 0) return 0;
    if (s->ms[1] <= 0) return 1;
    const int best = s->ms[1] < s->ms[0];
    return s->since_probe >= QTTS_OVERLAP_PROBE_EVERY ? !best : best;
}

/* Records one decode cycle of `mode` (ms_per_frame > 0). */
static inline void qtts_overlap_record(qtts_overlap_stats *s, int mode, double ms_per_frame) {
    if (!(ms_per_frame > 0)) return;
    const int best_before = s->ms[0] > 0 && s->ms[1] > 0 ? s->ms[1] < s->ms[0] : mode;
    double *m = &s->ms[mode != 0];
    *m = *m > 0 ? (1.0 - QTTS_OVERLAP_EMA) * *m + QTTS_OVERLAP_EMA * ms_per_frame : ms_per_frame;
    if ((mode != 0) == best_before) s->since_probe++;
    else s->since_probe = 0;
}

#endif
