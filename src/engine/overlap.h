/* One decoder step beside LM steps (the mechanism; when to use it is
 * engine/overlap_policy.h). Shared by the engine's frame loop and qtts bench,
 * which mirrors it. */
#ifndef QTTS_ENGINE_OVERLAP_H
#define QTTS_ENGINE_OVERLAP_H

#include <stdint.h>

#include "core/err.h"
#include "core/threadpool.h"
#include "model/codec_decoder.h"

typedef struct {
    /* the decoder step: as qtts_codec_decode_step_batch; the codes must not be
     * the buffers the LM steps append to */
    qtts_codec_decoder *dec;
    qtts_codec_stream **streams;
    const int32_t **codes;
    const int64_t *n_frames;
    int n;
    float **out;
    /* one talker + code-predictor step on the calling thread, with pool its
     * lane of the pool (qtts_pool_lane): returns what qtts_batch_step returns;
     * pause: nonzero stops further steps */
    int (*lm_step)(void *ctx, qtts_pool *pool, qtts_err *err);
    int (*lm_pause)(void *ctx);
    void *lm_ctx;
    /* results */
    int lm_steps;     /* LM steps run */
    int lm_left;      /* the last step's result (1 when none ran) */
    double decoder_ms; /* the decoder step's wall time */
} qtts_overlap_step;

/* Runs the decoder step on pool thread 1 and LM steps on the owner until the
 * decoder is done (or QTTS_OVERLAP_MAX_LM_STEPS, an LM step's result <= 0,
 * lm_pause), as one pool job of a pool of 2 threads or more: each on its own
 * lane of the pool, the one done first taking chunks of the other's work
 * (qtts_pool_lane), and any further threads helping the decoder, then the LM
 * step in progress. 0, or -1 with err set by whichever side failed (the
 * decoder's error first). */
int qtts_overlap_run(qtts_pool *pool, qtts_overlap_step *s, qtts_err *err);

#endif
