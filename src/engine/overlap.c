#include "engine/overlap.h"

#include <stdatomic.h>

#include "core/clock.h"
#include "engine/overlap_policy.h"

typedef struct {
    qtts_overlap_step *s;
    qtts_pool *pool;
    atomic_int decoded, lm_done;
    int dec_rc;
    qtts_err dec_err, lm_err;
} overlap_job;

/* Thread 1 runs the decoder step, thread 0 (the pool's owner) LM steps until
 * the decoder is done; each on its own thread, so neither waits for the
 * other inside its step. Each runs on its own lane of the pool, and the
 * thread that is done first takes chunks of the other's work instead of
 * waiting: thread 1 of the LM step in progress, thread 0 of the rest of the
 * decoder step (after its last LM step). Any further threads help the
 * decoder (compute-bound, it gains most from them) until it is done, then
 * the LM step in progress. A helper's slot in a lane is its tid, except
 * thread 0's in the decoder's lane: 1, which that lane's owner leaves free. */
static void overlap_body(void *ctx, int tid, int n_threads) {
    (void)n_threads;
    overlap_job *j = ctx;
    qtts_overlap_step *s = j->s;
    qtts_pool *lm_lane = qtts_pool_lane(j->pool, 0), *dec_lane = qtts_pool_lane(j->pool, 1);
    if (tid == 1) {
        double t0 = qtts_now_ms();
        j->dec_rc = qtts_codec_decode_step_batch(s->dec, dec_lane, s->streams, s->codes, s->n_frames, s->n, s->out,
                                                 &j->dec_err);
        s->decoder_ms = qtts_now_ms() - t0;
        atomic_store_explicit(&j->decoded, 1, memory_order_release);
        qtts_pool_lane_help(lm_lane, 1, &j->lm_done);
        return;
    }
    if (tid > 1) {
        qtts_pool_lane_help(dec_lane, tid, &j->decoded);
        qtts_pool_lane_help(lm_lane, tid, &j->lm_done);
        return;
    }
    while (!atomic_load_explicit(&j->decoded, memory_order_acquire) && s->lm_steps < QTTS_OVERLAP_MAX_LM_STEPS &&
           !(s->lm_pause && s->lm_pause(s->lm_ctx))) {
        s->lm_left = s->lm_step(s->lm_ctx, lm_lane, &j->lm_err);
        s->lm_steps++;
        if (s->lm_left <= 0) break;
    }
    atomic_store_explicit(&j->lm_done, 1, memory_order_release);
    qtts_pool_lane_help(dec_lane, 1, &j->decoded);
}

int qtts_overlap_run(qtts_pool *pool, qtts_overlap_step *s, qtts_err *err) {
    if (qtts_pool_size(pool) < 2) return qtts_fail(err, "overlap needs a pool of 2 threads or more");
    overlap_job j = {.s = s, .pool = pool};
    atomic_init(&j.decoded, 0);
    atomic_init(&j.lm_done, 0);
    s->lm_steps = 0;
    s->lm_left = 1;
    s->decoder_ms = 0;
    qtts_pool_run(pool, overlap_body, &j);
    if (j.dec_rc) {
        *err = j.dec_err;
        return -1;
    }
    if (s->lm_left < 0) {
        *err = j.lm_err;
        return -1;
    }
    return 0;
}
