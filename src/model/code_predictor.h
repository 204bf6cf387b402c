/* The code predictor ("sub-talker"): given the talker's final hidden state h
 * and the sampled codebook-0 token, it generates codebooks 1..G-1 of one
 * frame with a fresh KV cache and positions 0..G-1. Batched: B
 * frames of B independent requests advance together, each weight matmul
 * once for all B rows. */
#ifndef QTTS_MODEL_CODE_PREDICTOR_H
#define QTTS_MODEL_CODE_PREDICTOR_H

#include "model/lm.h"

typedef struct {
    qtts_lm lm;
    int n_groups;              /* G-1 = 15: one embedding table and head per residual codebook */
    int64_t talker_hidden;     /* width of the embedding tables */
    const qtts_tensor **emb;   /* [G-1] views: [codebook x talker_hidden] */
    qtts_mat *heads;           /* [G-1]: [codebook x cp_hidden] */
    int has_proj;              /* small_to_mtp_projection (talker_hidden != cp_hidden) */
    qtts_mat proj;
    float *proj_b;
} qtts_code_predictor;

int qtts_code_predictor_load(qtts_code_predictor *cp, const qtts_store *st, const qtts_model_config *cfg,
                             const qtts_weight_plan *plan, qtts_err *err);
void qtts_code_predictor_free(qtts_code_predictor *cp);

/* Picks a token from the raw logits of codebook `group` (1..G-1) for batch
 * row b. logits may be modified. Returns the token (0..vocab-1). */
typedef int32_t (*qtts_cp_pick_fn)(void *ctx, int b, int group, float *logits, int64_t vocab);

/* Scratch for qtts_code_predictor_run (grown as needed). */
typedef struct {
    qtts_lm_work lm;
    int64_t cap;
    float *in, *proj, *hid, *logits;
    int64_t *ntok;
} qtts_cp_work;
void qtts_cp_work_free(qtts_cp_work *w);

/* Runs one frame for B rows. h, e0: [B x talker_hidden] (talker normed hidden
 * and talker codec_embedding(c0)). caches: B caches of this LM (reset here).
 * codes: [B x (G-1)] out. emb_sum (optional): [B x talker_hidden] receives
 * sum_k emb[k-1](c_k), the codebook 1..G-1 part of the next talker input.
 * layer_in0 (optional, tests): [layers+1][2*B][cp_hidden] of the 2-token prefill;
 * proj_in0 (optional): [2*B][cp_hidden] projected prefill input. */
int qtts_code_predictor_run(const qtts_code_predictor *cp, qtts_pool *pool, qtts_cp_work *w, int B, const float *h,
                            const float *e0, qtts_kv_cache *const *caches, qtts_cp_pick_fn pick, void *pick_ctx,
                            int32_t *codes, float *emb_sum, float *layer_in0, float *proj_in0, qtts_err *err);

#endif
