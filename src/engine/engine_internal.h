/* The engine object behind include/qtts.h, shared by the engine's files, and
 * the internal entry points `qtts bench` drives it through. */
#ifndef QTTS_ENGINE_INTERNAL_H
#define QTTS_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "engine/calibration_cache.h"
#include "engine/executor.h"
#include "engine/overlap_policy.h"
#include "engine/request_times.h"
#include "gpu/gpu_decoder.h"
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
    /* talker positions per device stream (prompt + frames): each stream's
     * KV cache starts at GPU_POSITIONS and is made as large as a joining
     * request's prompt and frame cap need, up to GPU_POSITIONS_MAX (the
     * talker's position range); a request needing more, or more than the
     * device has room for, runs on the CPU. Per 1000 positions the 0.6B and
     * 1.7B talkers' caches take 230 MB (f32) or 115 MB (f16) of device memory */
    QTTS_ENGINE_GPU_POSITIONS = 256,
    QTTS_ENGINE_GPU_POSITIONS_MAX = 32768,
};

struct qtts_voice {
    atomic_int refs;
    float *xvec;
    size_t xvec_len;
    int32_t *codes; /* [n_frames][n_codebooks], frame-major */
    size_t n_frames;
    int n_codebooks;
    char *ref_text;
    qtts_lexicon *lexicon; /* its own pronunciation lexicon (engine/voice_lexicon.h), held; NULL: none */
};

/* One request inside the engine: the owned copy of the request, and its
 * engine-thread state while it is generated (src/engine/engine_loop.c). */
typedef struct slot {
    qtts_stream *stream;
    char *text, *language, *speaker, *instruct; /* owned copies of the request's strings */
    qtts_voice *voice;
    qtts_request req;
    /* engine-thread state */
    qtts_gen_request *gen;
    qtts_codec_stream *dec;           /* its decoder state on the CPU, or */
    struct qtts_gpu_dec_stream *gdec; /* on the device (engine thread: made at start, freed at retire) */
    int32_t *pending; /* frames waiting for the decoder, frame-major [n_pending][num_code_groups] */
    int32_t *decoding; /* an overlapped decoder step's frames, swapped out of pending (cap_decoding frames) */
    int64_t cap_decoding;
    int decode_now;   /* decode_pending: part of this step */
    int out_of_memory; /* a frame could not be kept: the request fails at the end of the step */
    int64_t n_pending, cap_pending;
    float *pcm; /* decoder output scratch */
    int64_t cap_pcm;
    qtts_mode mode;
    double t_submit, t_start, t_first_audio;
    double prefill_ms, talker_ms, cp_ms, decoder_ms;
    double cpu_start;             /* engine-thread CPU clock when it started */
    engine_request_times times;   /* the same and more, CPU time included */
    int exact_frames;             /* engine_request_options.exact_frames */
    int prefilled;
    int input_tokens; /* of the text alone */
    /* incremental text (request.text_incomplete), engine thread: the text so
     * far, where its tokens have been fed up to (a stable cut, see
     * text/stable_prefix.h), and whether the stream has all of it */
    int incremental, inc_closed;
    char *inc_text; /* what the model reads: the normalized text where the request normalizes */
    size_t inc_len, inc_cap, inc_fed_bytes;
    /* the text as appended, and its normalizer (normalize not off) */
    struct qtts_norm_stream *inc_norm;
    qtts_lexicon *lexicon; /* the request's, held */
    char *inc_raw;
    size_t inc_raw_len, inc_raw_cap;
    int inc_fed_tokens;
    int64_t samples_out;
    struct slot *next;
} slot;

void slot_free(slot *s);

struct clone_frontend;
/* Speaker encoder + codec encoder of a Base model (src/engine/voice.c). */
/* codec_store NULL: opened from model_dir/speech_tokenizer. with_encoder 0:
 * a file without the codec encoder (llama.cpp's): voices from the x-vector alone. */
struct clone_frontend *clone_frontend_open(const char *model_dir, const qtts_store *model_store,
                                           const qtts_store *codec_store, const qtts_model_config *cfg,
                                           int with_encoder, qtts_err *err);
void clone_frontend_free(struct clone_frontend *c);
void clone_frontend_release_pages(struct clone_frontend *c);

/* engine_tuning.c: the loader's kernel decisions (engine thread, during a load). */
typedef struct engine_tuning {
    qtts_calibration_key key;
    qtts_calibration_set cal; /* from the cache, completed by measurements */
    char path[4200];          /* the cache file ("" : none) */
    int dirty;                /* measured something the file lacks */
    int n_measured;           /* measurements this load ran */
    double measure_ms;
    int verbose;
    qtts_weight_layout layout; /* what the LM matrices were loaded with */
} engine_tuning;
void engine_tuning_begin(qtts_engine *e, qtts_pool *pool, int verbose);
void engine_tuning_end(qtts_engine *e); /* writes the cache where something was measured */
/* The layout for LM matrices of `type` (measured on pool or cached, or as the environment forces). */
const qtts_weight_layout *engine_tuning_layout(qtts_engine *e, qtts_pool *pool, qtts_dtype type);
/* The decoder convolution measurement (cached, or measured on this thread). */
const qtts_conv_calibration *engine_tuning_conv(qtts_engine *e);

struct qtts_engine {
    qtts_exec *exec;
    engine_tuning tuning;
    char load_report[1024];
    const qtts_engine_params *load_params; /* while the load job runs: the caller's (its progress callback) */
    qtts_talker_model *talker;
    qtts_codec_decoder *decoder;
    qtts_tokenizer *tok;
    struct clone_frontend *cloner; /* Base models */
    qtts_store *codec_store;       /* packed (.gguf) models: the speech tokenizer's tensors */
    int64_t frame_samples, sample_rate;
    int max_batch, max_queue;
    int verbose; /* one line per finished request on stderr: its schedule */

    qtts_model_info info;
    const char **speaker_names, **language_names;
    char speaker_list[1024], language_list[1024];

    pthread_mutex_t mu; /* guards the waiting queue and the counters below */
    struct slot *wait_head, *wait_tail;
    int n_waiting, n_active;
    atomic_int stopping; /* set by qtts_engine_free; read by the frame loop without the lock */
    int held;            /* engine_hold: waiting requests are not admitted (guarded by mu) */

    /* engine thread only */
    struct slot *active;
    qtts_batch *batch;
    qtts_codec_stream *scratch_streams[QTTS_MAX_BATCH];
    struct qtts_gpu_dec_stream *scratch_gstreams[QTTS_MAX_BATCH];
    const int32_t *scratch_codes[QTTS_MAX_BATCH];
    qtts_gpu_ring_at scratch_at[QTTS_MAX_BATCH]; /* where the device decoder reads them instead (slot -1: codes) */
    int64_t scratch_nf[QTTS_MAX_BATCH];
    float *scratch_out[QTTS_MAX_BATCH];
    struct slot *scratch_slots[QTTS_MAX_BATCH];
    /* decoder steps overlapped with LM steps (engine/overlap_policy.h) */
    qtts_overlap_mode overlap_mode; /* qtts_engine_params.overlap */
    qtts_overlap_stats overlap;
    double cycle_t0;       /* ms: end of the last decoder step */
    int64_t cycle_frames;  /* frames generated since */
    int cycle_clean;       /* no prefill since (a cycle with one is not recorded) */

    /* the device the LM work runs on (engine thread; NULL: the CPU) */
    struct qtts_gpu *gpu;
    struct qtts_gpu_lm *gpu_lm;
    struct qtts_gpu_decoder *gpu_dec; /* the speech-tokenizer decoder there: every request decodes on it */
    int code_ring; /* gpu_dec reads the codes of requests whose LM is on the device from gpu_lm's code ring */
    int fused_n;   /* streams of the decoder step staged into the device frame's submission (scratch_*) */
    char device_name[400];

    atomic_uint_fast64_t n_done, n_failed, n_cancelled, n_frames;
    atomic_uint_fast64_t n_on_device; /* n_done whose LM ran on the device */
    atomic_uint_fast64_t n_ring_frames; /* frames the device decoder read from gpu_lm's code ring */
    atomic_uint_fast64_t n_fused_steps; /* requests' decoder steps run in a device frame's submission */
    atomic_uint_fast64_t n_eos, n_max_frames, n_guard_length, n_guard_repetition; /* n_done by how it ended */
};

/* engine_load.c: runs on the engine thread (weight conversion is compute). */
typedef struct {
    qtts_engine *e;
    const qtts_engine_params *p;
    qtts_err err;
    int rc;
} engine_load_job;
void engine_load_models(qtts_pool *pool, void *ctx);   /* ctx: engine_load_job */
void engine_unload_models(qtts_pool *pool, void *ctx); /* ctx: the engine */
int engine_build_name_lists(qtts_engine *e);

/* engine_loop.c: the executor's idle function (one frame step per call). */
int engine_frame_loop(qtts_pool *pool, void *ctx);
/* With the code ring: each device frame's submission also runs the decoder steps due with the frame it makes. */
void engine_attach_frame_decode(qtts_engine *e);
/* Cancels and retires every active request (e->stopping is set). */
void engine_drain(qtts_pool *pool, void *ctx);

/* engine_submit.c */
qtts_stream *engine_submit(qtts_engine *e, const qtts_request *r, qtts_err *err);

/* What a benchmark asks of a request beyond qtts_request. */
typedef struct {
    int exact_frames; /* > 0: exactly this many frames (end-of-speech masked, guards off) */
} engine_request_options;
qtts_stream *engine_submit_with(qtts_engine *e, const qtts_request *r, const engine_request_options *o,
                                qtts_err *err);
/* hold 1: requests submitted from now on wait; hold 0: they start together,
 * in one batch (a benchmark's B streams in lockstep). */
void engine_hold(qtts_engine *e, int hold);

/* Copies an internal error to the public one (NULL to is fine); an
 * unclassified failure becomes fallback. */
void engine_copy_err(const qtts_err *from, qtts_status fallback, qtts_error *to);

#endif
