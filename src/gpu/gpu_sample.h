/* Token sampling on the device (Vulkan builds only), the rule of the CPU
 * sampler (model/sampler.h) so that, given the same logits, the device picks
 * the same id: the talker's processors (repetition penalty over the stream's
 * history, EOS masked while too few tokens, the non-audio ids suppressed),
 * greedy argmax or temperature / top-k / top-p and the inverse CDF at the
 * same Philox draw (seed, stream, step, sub).
 *
 * A sampler holds `slots` streams' settings, RNG counters and codebook-0
 * histories in device buffers, so one recorded sequence samples every frame:
 * the host writes a slot when a stream starts (between submissions), the
 * kernel reads it when it runs, adds the picked codebook-0 id to the history
 * and advances the step counter after the frame's last draw. The picked id is
 * written to a device buffer that later kernels (embed_add) read.
 *
 * Where the device may pick another id than the CPU: the device sums in
 * float (the CPU in double) and its exp and division may differ by a few
 * ulps, so a draw within ~1e-6 (relative) of a CDF boundary or of the top-p
 * cut, or logits within an ulp of the top-k value, may go the other way.
 * tests/test_gpu_sample.c allows a difference only there. */
#ifndef QTTS_GPU_GPU_SAMPLE_H
#define QTTS_GPU_GPU_SAMPLE_H

#include <stdint.h>

#include "core/err.h"
#include "gpu/gpu_ops.h"
#include "model/sampler.h"

typedef struct qtts_gpu_sampler qtts_gpu_sampler;

/* One stream's settings, as qtts_gen_params holds them. */
typedef struct {
    qtts_sample_cfg talker, cp; /* codebook 0; codebooks 1.. */
    float repetition_penalty; /* > 0; codebook 0 only */
    int64_t min_new_tokens; /* EOS masked while fewer codebook-0 tokens were drawn */
    int64_t eos; /* the talker's EOS id, or -1 */
    uint64_t seed, stream;
} qtts_gpu_sample_settings;

/* slots streams, talker vocabulary `vocab` (the history's size). */
qtts_gpu_sampler *qtts_gpu_sampler_new(qtts_gpu *g, int slots, int64_t vocab, qtts_err *err);
void qtts_gpu_sampler_free(qtts_gpu *g, qtts_gpu_sampler *s);

/* (Re)starts a slot: settings, step counter (the stream's number of
 * codebook-0 draws so far, qtts_gen_request's step) and history (hist[n_hist],
 * may be NULL). Only between submissions. */
int qtts_gpu_sampler_start(qtts_gpu_sampler *s, int slot, const qtts_gpu_sample_settings *c, uint32_t step,
                           const int32_t *hist, int64_t n_hist, qtts_err *err);
/* Copies slot src (settings, step, history) to dst, for a batch whose rows
 * are compacted when a stream leaves. Only between submissions. */
int qtts_gpu_sampler_copy(qtts_gpu_sampler *s, int dst, int src, qtts_err *err);
/* The slot's step counter, and the Philox words (out[0], out[1]) of its
 * last draw, as the kernels left them (after a submission). */
uint32_t qtts_gpu_sampler_step(const qtts_gpu_sampler *s, int slot);
void qtts_gpu_sampler_last_draw(const qtts_gpu_sampler *s, int slot, uint32_t out[2]);

typedef struct {
    int talker; /* 1: codebook 0 (talker settings, processors, history); 0: the code predictor's */
    qtts_gpu_buf *z; /* rows rows of n logits, row r at z_off + r * z_stride; overwritten (processed) */
    int64_t z_off, z_stride, n, rows;
    int slot0; /* row r draws for slot slot0 + r */
    uint32_t sub; /* the draw's sub-step: 0 for codebook 0, g for code group g (qtts_philox_uniform) */
    int advance; /* 1 on the frame's last draw: the slots' step counters advance after it */
    qtts_gpu_buf *ids; /* ids[id_off + r * id_stride] = the picked token (int32) */
    int64_t id_off, id_stride;
    /* optional (NULL: none): the token also goes to ring[(slot * ring_rows +
     * (step & (ring_rows - 1))) * ring_width + sub], the slot's ring of its last
     * ring_rows steps (a power of two; ring_width > sub), which a later
     * sequence reads (the decoder's codes) */
    qtts_gpu_buf *ring;
    int64_t ring_rows, ring_width;
} qtts_gpu_sample_args;

/* Records one draw per row into seq. */
int qtts_gpu_sample(qtts_gpu_seq *seq, qtts_gpu_sampler *s, const qtts_gpu_sample_args *a, qtts_err *err);

#endif
