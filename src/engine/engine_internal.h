/* The engine object behind include/qtts.h (shared by engine.c and voice.c). */
#ifndef QTTS_ENGINE_INTERNAL_H
#define QTTS_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "engine/executor.h"
#include "model/codec_decoder.h"
#include "model/generate.h"
#include "model/talker.h"
#include "qtts.h"
#include "model/prompt.h"
#include "text/tokenizer.h"

enum {
    QTTS_DEFAULT_MAX_BATCH = 8,
    QTTS_MAX_BATCH = 64,
    QTTS_MAX_TEXT_BYTES = 64 * 1024,
};

struct qtts_voice {
    atomic_int refs;
    float *xvec;
    size_t xvec_len;
    int32_t *codes; /* [n_frames][16], frame-major */
    size_t n_frames;
    char *ref_text;
};

struct slot;
struct clone_frontend;
/* Speaker encoder + codec encoder of a Base model (src/engine/voice.c). */
/* codec_store NULL: opened from model_dir/speech_tokenizer. */
struct clone_frontend *clone_frontend_open(const char *model_dir, const qtts_store *model_store,
                                           const qtts_store *codec_store, const qtts_model_config *cfg,
                                           qtts_err *err);
void clone_frontend_free(struct clone_frontend *c);
void clone_frontend_release_pages(struct clone_frontend *c);

struct qtts_engine {
    qtts_exec *exec;
    qtts_pool *pool;
    qtts_talker_model *talker;
    qtts_codec_decoder *decoder;
    qtts_tokenizer *tok;
    struct clone_frontend *cloner; /* Base models */
    qtts_store *codec_store;       /* packed (.gguf) models: the speech tokenizer's tensors */
    int64_t frame_samples, sample_rate;
    int max_batch, max_queue;

    qtts_model_info info;
    const char **speaker_names, **language_names;
    char speaker_list[1024], language_list[1024];

    pthread_mutex_t mu; /* guards the waiting queue and the counters below */
    struct slot *wait_head, *wait_tail;
    int n_waiting, n_active;
    int stopping;

    /* engine thread only */
    struct slot *active;
    qtts_batch *batch;
    qtts_codec_stream *scratch_streams[QTTS_MAX_BATCH];
    const int32_t *scratch_codes[QTTS_MAX_BATCH];
    int64_t scratch_nf[QTTS_MAX_BATCH];
    float *scratch_out[QTTS_MAX_BATCH];
    struct slot *scratch_slots[QTTS_MAX_BATCH];

    atomic_uint_fast64_t n_done, n_failed, n_cancelled, n_frames;
};

#endif
