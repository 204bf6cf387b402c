/* The talker and the code predictor on a Vulkan device: per frame one
 * recorded command sequence runs, for every stream of the batch, the code
 * predictor (2-row prefill and 14 one-token steps, each code picked on the
 * device by the sampler of gpu_sample.h with the stream's settings: argmax
 * when greedy), the codec-embedding sum that makes the next talker input, the
 * talker step, the codec head and the codebook-0 pick (logits processors
 * included). Only the codes come back to the host. The sequence is recorded
 * once per batch composition (the streams' slots) and resubmitted every
 * frame; positions, steps and text rows are host-written inputs read when the
 * kernels run. Weights are uploaded from a loaded CPU model in their stored
 * formats (f32, bf16, Q8_0, Q4_K in GGML rows; rows interleaved for the CPU
 * are put back as they are copied). Only the thread that opened the device may
 * call these. */
#ifndef QTTS_GPU_GPU_LM_H
#define QTTS_GPU_GPU_LM_H

#include <stdint.h>

#include "core/err.h"
#include "gpu/gpu.h"
#include "gpu/gpu_sample.h"
#include "model/talker.h"

typedef struct qtts_gpu_lm qtts_gpu_lm;

enum {
    QTTS_GPU_LM_MAX_STREAMS = 64,
    QTTS_GPU_CODE_RING_ROWS = 64, /* frames of codes each stream keeps on the device (a power of two) */
};

/* Uploads m's talker, codec head, codec embeddings and code predictor and
 * makes the state of max_streams streams (slots 0..max_streams-1, at most
 * QTTS_GPU_LM_MAX_STREAMS), each with a talker KV cache of max_pos positions
 * to start with (qtts_gpu_lm_reserve grows one). The talker's caches hold
 * m->kv_type values (f32 or f16, rounded as the CPU's), the code predictor's
 * f32, as on the CPU. m must outlive it. */
qtts_gpu_lm *qtts_gpu_lm_new(qtts_gpu *g, const qtts_talker_model *m, int max_streams, int64_t max_pos, qtts_err *err);
void qtts_gpu_lm_free(qtts_gpu_lm *d);

/* Makes slot's talker KV cache hold at least `positions` positions (prompt
 * plus frames) before its prefill: a larger one replaces the slot's caches
 * (what they held is gone) and the rope table grows with it. A failure
 * (QTTS_ERR_NO_MEMORY: the device's memory or storage-buffer range) leaves
 * the slot without a stream until a reserve succeeds; the others are kept. */
int qtts_gpu_lm_reserve(qtts_gpu_lm *d, int slot, int64_t positions, qtts_err *err);

/* Starts slot's stream with sampler settings ss (its seed and stream id, an
 * empty codebook-0 history, RNG step 0): the talker prefill over rows[n x
 * talker hidden], the codec head and the codebook-0 pick (repetition penalty,
 * min_new_tokens EOS mask, id suppression, then argmax or the seeded draw);
 * *c0 receives codebook-0 token 1 (it may be EOS). Every later pick of the
 * stream draws as the CPU's generation loop does: code group g of frame k at
 * (step k, sub g), codebook-0 token k+1 at (step k+1, sub 0). */
int qtts_gpu_lm_prefill(qtts_gpu_lm *d, int slot, const float *rows, int64_t n, const qtts_gpu_sample_settings *ss,
                        int32_t *c0, qtts_err *err);

/* One frame for B streams: for stream b (slot slots[b]) the frame of its
 * pending codebook-0 token goes to codes[b*G .. b*G + G) (G =
 * num_code_groups; code 0 is the pending token), then its next talker step
 * runs with text[b] (talker hidden floats: its trailing text row or PAD) added
 * to the frame's codec-embedding sum; next_c0[b] receives its next codebook-0
 * token (EOS ends the stream). `then` (may be NULL): a sequence that runs
 * after the frame in the same submission (a decoder step reading the codes
 * it made from the code ring). */
int qtts_gpu_lm_frame(qtts_gpu_lm *d, int B, const int *slots, const float *const *text, int32_t *codes,
                      int32_t *next_c0, qtts_gpu_seq *then, qtts_err *err);

/* The codes the frames picked, kept on the device for the speech decoder to
 * read without the host (qtts_gpu_decoder_step_from): per slot
 * QTTS_GPU_CODE_RING_ROWS rows of G codes (int32), frame k of the slot's
 * stream (k = 0 from its prefill on) in row k & (QTTS_GPU_CODE_RING_ROWS - 1).
 * Frame k's row is complete after the submission that returned it, and stays
 * until frame k + QTTS_GPU_CODE_RING_ROWS - 1's submission (which writes that
 * frame's codebook-0 token over it) or the slot's next prefill. */
qtts_gpu_buf *qtts_gpu_lm_code_ring(qtts_gpu_lm *d);

#endif
