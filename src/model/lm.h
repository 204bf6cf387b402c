/* A Qwen3-style decoder stack, shared by the talker and the code predictor:
 * pre-norm RMSNorm, q/k/v/o without bias, per-head QK RMSNorm before NeoX
 * RoPE, grouped KV heads, SwiGLU MLP, final RMSNorm.
 *
 * Batching: one qtts_lm_forward call advances several independent sequences
 * (each with its own KV cache and position). Their rows are stacked so every
 * weight matmul runs once for all of them; attention runs per sequence.
 * The position of a sequence's next token is its cache length. */
#ifndef QTTS_MODEL_LM_H
#define QTTS_MODEL_LM_H

#include <stdint.h>

#include "core/err.h"
#include "core/threadpool.h"
#include "io/store.h"
#include "model/config.h"
#include "tensor/tensor.h"

typedef struct {
    qtts_mat q, k, v, o, gate, up, down;
    /* q|k|v and gate|up as one matrix each, so a step makes one call (one
     * pool dispatch, one activation pack) per group: when the weights were
     * converted at load (owned; q/k/v/gate/up become views into the stack) or
     * when the checkpoint views already lie back to back (zero-copy). */
    qtts_mat qkv, gate_up;
    float *in_norm, *post_norm, *q_norm, *k_norm;
} qtts_lm_layer;

typedef struct {
    qtts_lm_config cfg;
    qtts_lm_layer *layers;
    float *norm;
} qtts_lm;

/* Loads "<prefix>layers.{i}.*" and "<prefix>norm.weight" (prefix e.g.
 * "talker.model."). plan: the matrices' storage type, layout and conversion
 * pool (NULL: the checkpoint's type as a zero-copy view, GGML rows). */
int qtts_lm_load(qtts_lm *lm, const qtts_store *st, const char *prefix, const qtts_lm_config *cfg,
                 const qtts_weight_plan *plan, qtts_err *err);
void qtts_lm_free(qtts_lm *lm);
/* Every layer matrix that views st's file mapping copied into a (stacks
 * moved with their parts; qtts_mat_own_mapped); see qtts_talker_own_mapped. */
void qtts_lm_own_mapped(qtts_lm *lm, const qtts_store *st, qtts_weight_arena *a);

/* Per-sequence KV cache: one K and one V array per layer, [cap][kv_heads*head_dim],
 * of f32 or f16 entries (type). Grows on demand (doubling) up to max_cap
 * (0 = unlimited); exceeding max_cap is an error naming the limit. f16 halves
 * what each step reads back (at 700 positions the 0.6B talker's f32 cache is
 * 160 MB, beside 256 MB of q4_k weights) and a stream's memory; entries past
 * +-65504 saturate. */
typedef struct {
    int64_t len, cap, max_cap, n_layers, kv_dim;
    qtts_dtype type; /* QTTS_F32 or QTTS_F16 */
    void **k, **v;
} qtts_kv_cache;

int qtts_kv_init(qtts_kv_cache *c, const qtts_lm_config *cfg, qtts_dtype type, int64_t initial_cap, int64_t max_cap,
                 qtts_err *err);
static inline size_t qtts_kv_elem_size(const qtts_kv_cache *c) { return c->type == QTTS_F16 ? 2 : 4; }

/* The KV entry type for an option: NULL, "" or "auto" (f16 with q8_0 / q4_k
 * LM weights, whose rounding already dwarfs f16's; f32 with f32 or bf16
 * weights, which ask for the reference), "f32" or "f16". */
int qtts_kv_type_choose(const char *opt, qtts_dtype lm_weights, qtts_dtype *out, qtts_err *err);
int qtts_kv_reserve(qtts_kv_cache *c, int64_t need, qtts_err *err);
void qtts_kv_reset(qtts_kv_cache *c); /* len = 0; keeps memory */
void qtts_kv_free(qtts_kv_cache *c);

/* Scratch buffers for a forward pass, grown as needed; owned by the caller
 * (one per thread of control; not shared between concurrent forwards). */
typedef struct {
    int64_t rows_cap, dim_cap[4];
    float *x, *h, *q, *k, *v, *att, *gate, *up, *fused;
} qtts_lm_work;

void qtts_lm_work_free(qtts_lm_work *w);

/* Runs n_seq sequences. Sequence s appends n_tok[s] tokens at positions
 * caches[s]->len ...; x holds all rows stacked in sequence order
 * (sum n_tok rows of cfg.hidden floats). out receives the final-normed hidden
 * state of every row (same layout; may equal x). layer_in, if non-NULL,
 * receives [layers+1][rows][hidden]: the input of each layer, then the final
 * norm output (for golden tests). */
int qtts_lm_forward(const qtts_lm *lm, qtts_pool *pool, qtts_lm_work *w, int n_seq, qtts_kv_cache *const *caches,
                    const int64_t *n_tok, const float *x, float *out, float *layer_in, qtts_err *err);

#endif
