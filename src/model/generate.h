/* The generation loop: talker prefill, then one frame per
 * step: code predictor for the pending codebook-0 token -> frame [G codes]
 * delivered to the frame callback at once -> next talker input (sum of the G
 * codebook embeddings + trailing text row or PAD) -> one talker step ->
 * next codebook-0 token. Stops at EOS (never a frame) or after max_frames.
 * A qtts_batch_step ends with the frames it emitted: the talker step after a
 * frame opens the next call, so a caller can decode a frame (the first one
 * above all) before that step runs.
 *
 * Batching: a qtts_batch steps several requests together, one frame each per
 * qtts_batch_step (talker rows and code-predictor rows batched through every
 * weight matmul). Requests join (qtts_batch_add) and leave (finish, or
 * qtts_batch_remove) at frame boundaries. Every random draw is keyed by the
 * request's (seed, stream, step, sub-step), so a request's codes never depend
 * on its neighbours. All compute runs on the pool passed in; no threads here. */
#ifndef QTTS_MODEL_GENERATE_H
#define QTTS_MODEL_GENERATE_H

#include <stdint.h>

#include "model/prompt.h"
#include "model/sampler.h"
#include "model/talker.h"

typedef struct {
    qtts_sample_cfg talker; /* codebook 0 */
    float repetition_penalty;
    int64_t min_new_tokens; /* EOS masked while fewer codebook-0 tokens were generated (official: 2) */
    qtts_sample_cfg cp;     /* codebooks 1..G-1 */
    /* At most this many frames. The official max_new_tokens K (talker steps)
     * gives at most K-1 frames: max_frames = K - 1. */
    int64_t max_frames;
    /* Runaway guard (model/runaway_guard.h): stop after guard_max_frames
     * frames (0: no text-relative cap) and/or on a codebook-0 loop. */
    int64_t guard_max_frames;
    int guard_repetition;
    uint64_t seed, stream;
} qtts_gen_params;

/* Official defaults from generation_config.json (max_frames = max_new_tokens - 1). */
void qtts_gen_params_from_config(qtts_gen_params *p, const qtts_generation_config *g);
/* Greedy on both stages (bit-exact validation mode), max_frames as given. */
void qtts_gen_params_greedy(qtts_gen_params *p, const qtts_generation_config *g, int64_t max_frames);

typedef enum {
    QTTS_STOP_NONE = 0, /* still running */
    QTTS_STOP_EOS,
    QTTS_STOP_MAX_FRAMES,
    QTTS_STOP_GUARD_LENGTH,     /* the text-relative frame cap */
    QTTS_STOP_GUARD_REPETITION, /* a codebook-0 loop */
    QTTS_STOP_CANCELLED,
    QTTS_STOP_ERROR,
} qtts_stop_reason;

typedef struct qtts_gen_request qtts_gen_request;

/* Called for each finished frame (codes[n_codes], n_codes = num_code_groups),
 * on the thread running qtts_batch_step, as soon as the frame exists. It must
 * not call the batch functions (add/remove/step) itself. */
typedef void (*qtts_frame_fn)(void *user, qtts_gen_request *r, int64_t frame, const int32_t *codes, int64_t n_codes);

/* Optional hooks for tests and debugging (any may be NULL). step 0 = prefill. */
typedef struct {
    /* raw codec_head logits and the processed scores (HF processors, before temperature/top-k/top-p) */
    void (*talker_logits)(void *user, int64_t step, const float *raw, const float *scores, int64_t vocab);
    void (*step_input)(void *user, int64_t step, const float *x, int64_t dim); /* talker input of step >= 1 */
    void (*talker_hidden)(void *user, int64_t step, const float *h, int64_t dim); /* normed last hidden */
    void (*cp_logits)(void *user, int64_t frame, int group, const float *raw, int64_t vocab);
    void *user;
} qtts_gen_trace;

/* Builds the prompt (model/prompt.h) and a request ready to join a batch. */
qtts_gen_request *qtts_gen_request_new(const qtts_talker_model *m, qtts_pool *pool, const qtts_prompt_spec *spec,
                               const qtts_gen_params *p, qtts_err *err);
/* Same from a prompt built elsewhere; takes ownership of its buffers (prompt is cleared). */
qtts_gen_request *qtts_gen_request_from_prompt(const qtts_talker_model *m, qtts_prompt *prompt, const qtts_gen_params *p,
                                       qtts_err *err);
void qtts_gen_request_set_callback(qtts_gen_request *r, qtts_frame_fn fn, void *user);
void qtts_gen_request_set_trace(qtts_gen_request *r, const qtts_gen_trace *t);
void qtts_gen_request_free(qtts_gen_request *r); /* leaves its batch first if it is in one */

/* Incremental text (streaming layout): open_text, before the request joins
 * a batch, takes the trailing EOS off so further text rows can follow;
 * append_text embeds and appends text-token rows; close_text puts EOS back.
 * While open, a request whose next step needs a row that has not arrived
 * parks after emitting its frame (waiting_text() is 1) and resumes in the
 * first batch step after the row arrives: same inputs, same codes, only
 * later. On the device (qtts_batch_set_device) a frame and the talker step
 * after it are one submission, so there the request parks before that frame. */
int qtts_gen_request_open_text(qtts_gen_request *r, qtts_err *err);
int qtts_gen_request_append_text(qtts_gen_request *r, qtts_pool *pool, const int32_t *ids, int64_t n, qtts_err *err);
int qtts_gen_request_close_text(qtts_gen_request *r, qtts_err *err);
int qtts_gen_request_waiting_text(const qtts_gen_request *r);
/* The text-relative guard cap changes as text arrives (0: none). */
void qtts_gen_request_set_guard_cap(qtts_gen_request *r, int64_t max_frames);

int qtts_gen_request_finished(const qtts_gen_request *r);
qtts_stop_reason qtts_gen_request_stop_reason(const qtts_gen_request *r);
int64_t qtts_gen_request_n_frames(const qtts_gen_request *r);
/* Rows of the talker prompt its prefill runs over. */
int64_t qtts_gen_request_prompt_rows(const qtts_gen_request *r);
/* All frames so far, [n_frames x num_code_groups], valid until the next step or free. */
const int32_t *qtts_gen_request_codes(const qtts_gen_request *r);

typedef struct qtts_batch qtts_batch;

qtts_batch *qtts_batch_new(const qtts_talker_model *m, qtts_err *err);
void qtts_batch_free(qtts_batch *b); /* does not free the requests */
/* Joins at the next step (its prefill runs then). A request can be in one batch. */
int qtts_batch_add(qtts_batch *b, qtts_gen_request *r, qtts_err *err);
/* Leaves now; an unfinished request is marked CANCELLED. */
void qtts_batch_remove(qtts_batch *b, qtts_gen_request *r);
int qtts_batch_size(const qtts_batch *b);
/* One frame for every request in the batch (a request's first call is its
 * prefill and first frame; the call after its last frame only samples EOS).
 * Finished requests leave the batch. Returns the number of requests still
 * in it, or -1 (then every request of the batch is stopped with
 * QTTS_STOP_ERROR and removed). */
int qtts_batch_step(qtts_batch *b, qtts_pool *pool, qtts_err *err);

/* Cumulative time spent in each stage of qtts_batch_step since the batch was
 * made or the last reset (for benchmarks): wall and calling-thread CPU
 * nanoseconds, calls and batch rows. prefill: talker forward over joining
 * prompts + codec_head + sampling; cp: code predictor for pending tokens;
 * talker: the single-token talker step + codec_head + sampling. */
typedef struct {
    int64_t wall_ns, cpu_ns, calls, rows;
} qtts_stage_time;
typedef struct {
    qtts_stage_time prefill, cp, talker;
} qtts_batch_timing;
void qtts_batch_get_timing(const qtts_batch *b, qtts_batch_timing *out);
void qtts_batch_reset_timing(qtts_batch *b);

/* Runs the LM work of requests on a device (gpu/gpu_lm.h, `slots` streams)
 * from the next step on; the batch does not own it. A request, greedy or
 * sampled, incremental text included, is put on the device when it joins if a
 * stream slot is free, its prompt plus its frame cap fit max_pos positions
 * and its stream's KV cache can be made large enough for its prompt and
 * first 256 frames (qtts_gpu_lm_reserve: device memory and storage-buffer
 * range; the device LM doubles it as the stream goes on); otherwise it runs
 * on the CPU beside them. Its
 * tokens are the CPU path's: greedy ones exactly (the golden tests hold both
 * to the reference), sampled ones at the same seeded draws except where a
 * draw lies within ~1e-6 of a CDF boundary (gpu/gpu_sample.h); the trace
 * hooks are not called for it. NULL: everything on the CPU. */
struct qtts_gpu_lm;
void qtts_batch_set_device(qtts_batch *b, struct qtts_gpu_lm *d, int slots, int64_t max_pos);
/* Work a caller adds to each device frame's submission (the engine: a
 * decoder step that reads the codes the frame makes from the device's code
 * ring). before() gets the requests the frame steps, in order, before it is
 * submitted, and returns a sequence to run after the frame in the same
 * submission, or NULL for none (with err set: the step fails). after() is
 * called once the submission ran (ran = 1; the requests have had their
 * frames) or failed (ran = 0), whenever before() returned a sequence. */
struct qtts_gpu_seq;
typedef struct {
    struct qtts_gpu_seq *(*before)(void *user, qtts_gen_request *const *reqs, int n, qtts_err *err);
    int (*after)(void *user, int ran, qtts_err *err);
    void *user;
} qtts_batch_frame_hook;
void qtts_batch_set_frame_hook(qtts_batch *b, const qtts_batch_frame_hook *hook);
/* 1 if r's LM work runs (or ran) on the batch's device. */
int qtts_gen_request_on_device(const qtts_gen_request *r);
/* The device stream (slot of qtts_gpu_lm) r's LM work runs in, or -1 (the CPU; not started yet). */
int qtts_gen_request_device_slot(const qtts_gen_request *r);
/* Requests of the batch running on the device now. */
int qtts_batch_device_streams(const qtts_batch *b);
/* Host bytes of r's KV caches (talker and code predictor): 0 until r runs on
 * the CPU, and 0 for good on the device, whose caches are its own. */
size_t qtts_gen_request_host_kv_bytes(const qtts_gen_request *r);

/* Runs one request alone to completion. */
int qtts_generate(const qtts_talker_model *m, qtts_pool *pool, qtts_gen_request *r, qtts_err *err);

#endif
