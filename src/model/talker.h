/* The talker: text embedding + 2-layer text projection, codec embedding,
 * the 28-layer decoder (model/lm.h), codec_head, and the code predictor.
 * Loaded from a qtts_store with the official tensor names (talker.*). */
#ifndef QTTS_MODEL_TALKER_H
#define QTTS_MODEL_TALKER_H

#include "model/code_predictor.h"
#include "model/config.h"
#include "model/lm.h"

typedef struct {
    /* Storage type for every weight matrix (decoder layers, heads, text
     * projection, small_to_mtp_projection). QTTS_DTYPE_INVALID keeps the
     * checkpoint's type (zero-copy view of the mapped file). */
    qtts_dtype weight_type;
    /* Converts weights on this pool's threads (its owner loads); NULL: the calling thread. */
    qtts_pool *pool;
    /* The Q8_0/Q4_K layout and kernel flags the engine loader chose; NULL: GGML rows. */
    const qtts_weight_layout *layout;
    /* Called after each layer of the talker and the code predictor is loaded (progress); NULL: none. */
    void (*layer_done)(void *user);
    void *layer_user;
} qtts_talker_options;

typedef struct qtts_talker_model {
    qtts_model_config cfg;
    qtts_generation_config gen;
    qtts_store *store;          /* owned */
    char *weights;               /* owned: the block the matrices copied out of the file lie in, or NULL */
    const qtts_tensor *text_emb; /* zero-copy view [text_vocab x text_hidden]; rows converted on demand */
    qtts_mat fc1, fc2;           /* text_projection */
    /* Text rows already through the projection ([text_vocab x D], as
     * llama.cpp's converter folds them): when set, text_emb and fc* are unused. */
    const qtts_tensor *text_emb_projected;
    float *fc1_b, *fc2_b;
    const qtts_tensor *codec_emb; /* view [talker vocab x D] */
    qtts_mat codec_head;
    qtts_lm lm;
    qtts_code_predictor cp;
    /* The talker's KV cache entries: QTTS_F32 (as loaded) or QTTS_F16, which
     * the engine sets by qtts_kv_type_choose. The code predictor's 16-position
     * cache stays f32. */
    qtts_dtype kv_type;
} qtts_talker_model;

/* dir: model folder (config.json, generation_config.json, model.safetensors[.index.json]). */
qtts_talker_model *qtts_talker_model_load(const char *dir, const qtts_talker_options *opt, qtts_err *err);
/* Takes ownership of st (freed with the model, also on failure). gen may be NULL (official defaults). */
qtts_talker_model *qtts_talker_model_from_store(qtts_store *st, const qtts_model_config *cfg,
                                               const qtts_generation_config *gen, const qtts_talker_options *opt,
                                               qtts_err *err);
void qtts_talker_model_free(qtts_talker_model *m);
/* Every matrix of the talker and code predictor that is a view of the
 * model's mapped file copied into one block of memory the model owns
 * (qtts_weight_arena), then the file's pages released: the kernels read
 * page-cache pages of a file mapping slower than the process's own memory. */
int qtts_talker_own_mapped(qtts_talker_model *m, qtts_err *err);

/* out[n x D] = text_projection(text_embedding[ids]). */
int qtts_talker_text_embed(const qtts_talker_model *m, qtts_pool *pool, const int32_t *ids, int64_t n, float *out,
                           qtts_err *err);
/* out[D] = codec_embedding[id] (talker codebook-0 / control table). */
int qtts_talker_codec_embed(const qtts_talker_model *m, int64_t id, float *out, qtts_err *err);


#endif
