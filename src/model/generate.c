#include "model/generate.h"
#include "model/runaway_guard.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu/gpu_lm.h"
#include "tensor/linear.h"

/* Most codes per frame (num_code_groups) a step's frame buffer holds: the
 * config loader's cap for num_code_groups. */
enum { MAX_CODE_GROUPS = 64 };

struct qtts_gen_request {
    const qtts_talker_model *m;
    qtts_gen_params p;
    qtts_prompt prompt;
    qtts_kv_cache kv, cp_kv;
    int prefilled, in_batch;
    struct qtts_batch *batch; /* the batch holding it, or NULL */
    int32_t pending;   /* sampled codebook-0 token waiting for its frame, or -1 */
    int64_t step;      /* talker steps done (= codebook-0 tokens sampled) */
    float *h;          /* talker normed hidden that produced `pending` */
    int32_t *c0_hist;  /* distinct generated codebook-0 ids, in order (repetition penalty) */
    int64_t n_c0_hist;
    uint8_t *c0_seen;  /* [talker vocab]: 1 for the ids in c0_hist */
    int32_t *codes;    /* [cap_frames x G] */
    int64_t n_frames, cap_frames;
    qtts_stop_reason stop;
    qtts_repeat_state repeat;
    /* After its frame is emitted a request waits for its next talker step
     * with that step's input less the text row in next_x (awaiting = 1): the
     * step runs at the start of the next qtts_batch_step, so a frame reaches
     * the decoder before the talker step that follows it. With incremental
     * text the trailing rows grow while text_open, and a request whose next
     * text row has not arrived stays awaiting (waiting_text). */
    int text_open, awaiting;
    int64_t cap_trailing;
    float *eos_row, *next_x;
    qtts_frame_fn cb;
    void *cb_user;
    qtts_gen_trace trace;
    int gpu_slot; /* its device stream (qtts_batch_set_device), or -1: on the CPU */
};

struct qtts_batch {
    const qtts_talker_model *m;
    qtts_gen_request **reqs;
    int n, cap;
    qtts_lm_work work;
    qtts_cp_work cpw;
    /* per-step scratch, grown with the batch / prompt sizes */
    int64_t rows_cap, b_cap;
    float *x, *hid;          /* [rows x D] */
    float *logits, *raw;     /* [b x V] */
    float *sample_scratch;   /* [2 x V] for qtts_sample_pick */
    float *h;                /* [b x D] talker normed hidden per request */
    float *c0_emb;           /* [b x D] talker codec embedding of each pending codebook-0 token */
    float *cp_emb_sum;       /* [b x D] sum of the codebook 1..G-1 embeddings of each new frame */
    int32_t *codes;          /* [b x (G-1)] code-predictor codes of each new frame */
    qtts_gen_request **active;   /* [b] requests of the current stage, in batch-row order */
    qtts_kv_cache **caches;  /* [b] */
    int64_t *ntok;           /* [b] */
    qtts_batch_timing timing;
    /* the device LM (qtts_batch_set_device) and its per-frame arguments */
    struct qtts_gpu_lm *gpu;
    int gpu_slots;
    int64_t gpu_max_pos;
    int dev_slot[QTTS_GPU_LM_MAX_STREAMS];
    qtts_gen_request *dev_req[QTTS_GPU_LM_MAX_STREAMS];
    const float *dev_text[QTTS_GPU_LM_MAX_STREAMS];
    int32_t dev_next[QTTS_GPU_LM_MAX_STREAMS];
    int32_t *dev_codes; /* [gpu_slots x G] */
    qtts_batch_frame_hook hook;
};

/* ---- stage timing (benchmarks) ---- */

typedef struct {
    int64_t wall, cpu;
} stamp;

static int64_t ns_of(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
static stamp stamp_now(void) { return (stamp){ns_of(CLOCK_MONOTONIC), ns_of(CLOCK_THREAD_CPUTIME_ID)}; }
static void stage_add(qtts_stage_time *t, stamp since, int64_t rows) {
    stamp n = stamp_now();
    t->wall_ns += n.wall - since.wall;
    t->cpu_ns += n.cpu - since.cpu;
    t->calls++;
    t->rows += rows;
}

void qtts_batch_get_timing(const qtts_batch *b, qtts_batch_timing *out) { *out = b->timing; }
void qtts_batch_reset_timing(qtts_batch *b) { memset(&b->timing, 0, sizeof b->timing); }

void qtts_gen_params_from_config(qtts_gen_params *p, const qtts_generation_config *g) {
    memset(p, 0, sizeof *p);
    p->talker = (qtts_sample_cfg){g->do_sample, (float)g->temperature, g->top_k, (float)g->top_p};
    p->repetition_penalty = (float)g->repetition_penalty;
    p->min_new_tokens = 2;
    p->cp = (qtts_sample_cfg){g->cp_do_sample, (float)g->cp_temperature, g->cp_top_k, (float)g->cp_top_p};
    p->max_frames = g->max_new_tokens > 0 ? g->max_new_tokens - 1 : 0;
}

void qtts_gen_params_greedy(qtts_gen_params *p, const qtts_generation_config *g, int64_t max_frames) {
    qtts_gen_params_from_config(p, g);
    p->talker.do_sample = 0;
    p->cp.do_sample = 0;
    p->max_frames = max_frames;
}

static int check_params(const qtts_gen_params *p, qtts_err *err) {
    const qtts_sample_cfg *c[2] = {&p->talker, &p->cp};
    for (int i = 0; i < 2; i++)
        if (c[i]->do_sample && (!(c[i]->temperature > 0) || !(c[i]->top_p > 0 && c[i]->top_p <= 1) || c[i]->top_k < 0))
            return qtts_fail(err, "%s sampling: temperature must be > 0, top_p in (0, 1], top_k >= 0",
                             i ? "code predictor" : "talker");
    if (!(p->repetition_penalty > 0)) return qtts_fail(err, "repetition penalty must be > 0");
    if (p->max_frames < 0 || p->min_new_tokens < 0) return qtts_fail(err, "max_frames and min_new_tokens must be >= 0");
    return 0;
}

qtts_gen_request *qtts_gen_request_from_prompt(const qtts_talker_model *m, qtts_prompt *prompt, const qtts_gen_params *p,
                                       qtts_err *err) {
    if (check_params(p, err)) return NULL;
    if (prompt->dim != m->cfg.talker.hidden || prompt->n_rows <= 0 || prompt->n_trailing < 0) {
        qtts_fail(err, "prompt of width %lld does not fit the talker (hidden %lld)", (long long)prompt->dim,
                  (long long)m->cfg.talker.hidden);
        return NULL;
    }
    qtts_gen_request *r = qtts_calloc(1, sizeof *r, err);
    if (!r) return NULL;
    r->m = m;
    r->p = *p;
    r->pending = -1;
    r->gpu_slot = -1;
    const int64_t D = m->cfg.talker.hidden, V = m->cfg.talker.vocab;
    /* the caches get memory when the request runs on the CPU (its prefill):
     * on the device they are never used */
    if (qtts_kv_init(&r->kv, &m->cfg.talker, m->kv_type, 0, prompt->n_rows + p->max_frames + 1, err) ||
        qtts_kv_init(&r->cp_kv, &m->cfg.cp, QTTS_F32, 0, m->cfg.num_code_groups, err) ||
        !(r->h = qtts_malloc((size_t)D * sizeof(float), err)) ||
        !(r->next_x = qtts_malloc((size_t)D * sizeof(float), err)) ||
        !(r->c0_hist = qtts_malloc((size_t)V * sizeof(int32_t), err)) ||
        !(r->c0_seen = qtts_calloc((size_t)V, 1, err))) {
        qtts_gen_request_free(r);
        return NULL;
    }
    r->prompt = *prompt;
    memset(prompt, 0, sizeof *prompt);
    return r;
}

qtts_gen_request *qtts_gen_request_new(const qtts_talker_model *m, qtts_pool *pool, const qtts_prompt_spec *spec,
                               const qtts_gen_params *p, qtts_err *err) {
    if (check_params(p, err)) return NULL;
    qtts_prompt pr;
    if (qtts_prompt_build(m, pool, spec, &pr, err)) return NULL;
    qtts_gen_request *r = qtts_gen_request_from_prompt(m, &pr, p, err);
    qtts_prompt_free(&pr);
    return r;
}

void qtts_gen_request_set_callback(qtts_gen_request *r, qtts_frame_fn fn, void *user) {
    r->cb = fn;
    r->cb_user = user;
}
void qtts_gen_request_set_trace(qtts_gen_request *r, const qtts_gen_trace *t) {
    if (t) r->trace = *t;
    else memset(&r->trace, 0, sizeof r->trace);
}

void qtts_gen_request_free(qtts_gen_request *r) {
    if (!r) return;
    if (r->in_batch && r->batch) qtts_batch_remove(r->batch, r);
    qtts_prompt_free(&r->prompt);
    qtts_kv_free(&r->kv);
    qtts_kv_free(&r->cp_kv);
    free(r->h);
    free(r->c0_hist);
    free(r->c0_seen);
    free(r->codes);
    free(r->eos_row);
    free(r->next_x);
    free(r);
}

int qtts_gen_request_finished(const qtts_gen_request *r) { return r->stop != QTTS_STOP_NONE; }
qtts_stop_reason qtts_gen_request_stop_reason(const qtts_gen_request *r) { return r->stop; }
int64_t qtts_gen_request_n_frames(const qtts_gen_request *r) { return r->n_frames; }
int64_t qtts_gen_request_prompt_rows(const qtts_gen_request *r) { return r->prompt.n_rows; }
const int32_t *qtts_gen_request_codes(const qtts_gen_request *r) { return r->codes; }

/* ---- batch ---- */

qtts_batch *qtts_batch_new(const qtts_talker_model *m, qtts_err *err) {
    qtts_batch *b = qtts_calloc(1, sizeof *b, err);
    if (b) b->m = m;
    return b;
}

void qtts_batch_free(qtts_batch *b) {
    if (!b) return;
    for (int i = 0; i < b->n; i++) {
        b->reqs[i]->in_batch = 0;
        b->reqs[i]->batch = NULL;
    }
    free(b->reqs);
    qtts_lm_work_free(&b->work);
    qtts_cp_work_free(&b->cpw);
    free(b->x);
    free(b->hid);
    free(b->logits);
    free(b->raw);
    free(b->sample_scratch);
    free(b->h);
    free(b->c0_emb);
    free(b->cp_emb_sum);
    free(b->codes);
    free(b->active);
    free(b->caches);
    free(b->ntok);
    free(b->dev_codes);
    free(b);
}

int qtts_batch_add(qtts_batch *b, qtts_gen_request *r, qtts_err *err) {
    if (r->m != b->m) return qtts_fail(err, "request belongs to another model");
    if (r->in_batch) return qtts_fail(err, "request is already in a batch");
    if (r->stop != QTTS_STOP_NONE) return qtts_fail(err, "request has already finished");
    if (b->n == b->cap) {
        int cap = b->cap ? b->cap * 2 : 8;
        qtts_gen_request **n = realloc(b->reqs, (size_t)cap * sizeof *n);
        if (!n) return qtts_fail(err, "out of memory adding a request");
        b->reqs = n;
        b->cap = cap;
    }
    b->reqs[b->n++] = r;
    r->in_batch = 1;
    r->batch = b;
    return 0;
}

void qtts_batch_remove(qtts_batch *b, qtts_gen_request *r) {
    for (int i = 0; i < b->n; i++)
        if (b->reqs[i] == r) {
            memmove(b->reqs + i, b->reqs + i + 1, (size_t)(b->n - i - 1) * sizeof *b->reqs);
            b->n--;
            r->in_batch = 0;
            r->batch = NULL;
            if (r->stop == QTTS_STOP_NONE) r->stop = QTTS_STOP_CANCELLED;
            return;
        }
}

int qtts_batch_size(const qtts_batch *b) { return b->n; }

static int grow(void **p, size_t bytes, qtts_err *err) {
    void *n = realloc(*p, bytes);
    if (!n) return qtts_fail(err, "generation: out of memory (%zu bytes)", bytes);
    *p = n;
    return 0;
}

static int batch_reserve(qtts_batch *b, int64_t rows, int64_t nb, qtts_err *err) {
    const int64_t D = b->m->cfg.talker.hidden, V = b->m->cfg.talker.vocab, n_cp = b->m->cfg.num_code_groups - 1;
    if (rows > b->rows_cap) {
        if (grow((void **)&b->x, (size_t)rows * (size_t)D * sizeof(float), err) ||
            grow((void **)&b->hid, (size_t)rows * (size_t)D * sizeof(float), err))
            return -1;
        b->rows_cap = rows;
    }
    if (nb > b->b_cap || !b->sample_scratch) {
        size_t f = sizeof(float);
        if (grow((void **)&b->logits, (size_t)nb * (size_t)V * f, err) || grow((void **)&b->raw, (size_t)V * f, err) ||
            grow((void **)&b->sample_scratch, 2 * (size_t)V * f, err) ||
            grow((void **)&b->h, (size_t)nb * (size_t)D * f, err) ||
            grow((void **)&b->c0_emb, (size_t)nb * (size_t)D * f, err) ||
            grow((void **)&b->cp_emb_sum, (size_t)nb * (size_t)D * f, err) ||
            grow((void **)&b->codes, (size_t)nb * (size_t)n_cp * sizeof(int32_t), err) ||
            grow((void **)&b->active, (size_t)nb * sizeof(qtts_gen_request *), err) ||
            grow((void **)&b->caches, (size_t)nb * sizeof(qtts_kv_cache *), err) ||
            grow((void **)&b->ntok, (size_t)nb * sizeof(int64_t), err))
            return -1;
        b->b_cap = nb;
    }
    return 0;
}

/* Processes and samples codebook 0 for request r from its raw logits z (modified): repetition penalty
 * over its history, EOS masked while too few tokens, audio-only ids; the token joins the history. */
static int32_t sample_c0(qtts_batch *b, qtts_gen_request *r, float *z) {
    const qtts_model_config *c = &b->m->cfg;
    const int64_t V = c->talker.vocab;
    if (r->trace.talker_logits) memcpy(b->raw, z, (size_t)V * sizeof(float));
    qtts_talker_process_logits(z, V, r->c0_hist, r->n_c0_hist, r->p.repetition_penalty, r->step, r->p.min_new_tokens,
                               c->codec_eos);
    if (r->trace.talker_logits) r->trace.talker_logits(r->trace.user, r->step, b->raw, z, V);
    int32_t tok;
    double u = r->p.talker.do_sample ? qtts_philox_uniform(r->p.seed, r->p.stream, (uint32_t)r->step, 0) : 0.0;
    tok = qtts_sample_pick(z, V, &r->p.talker, u, b->sample_scratch);
    if (tok >= 0 && tok < V && !r->c0_seen[tok]) {
        r->c0_seen[tok] = 1;
        r->c0_hist[r->n_c0_hist++] = tok;
    }
    r->step++;
    return tok;
}

typedef struct {
    qtts_batch *b;
} cp_ctx;

/* qtts_cp_pick_fn: samples code `group` of batch row bi with its request's code-predictor settings. */
static int32_t sample_cp_code(void *ctx, int bi, int group, float *logits, int64_t vocab) {
    qtts_batch *b = ((cp_ctx *)ctx)->b;
    qtts_gen_request *r = b->active[bi];
    if (r->trace.cp_logits) r->trace.cp_logits(r->trace.user, r->n_frames, group, logits, vocab);
    double u = r->p.cp.do_sample ? qtts_philox_uniform(r->p.seed, r->p.stream, (uint32_t)r->n_frames, (uint32_t)group)
                                 : 0.0;
    return qtts_sample_pick(logits, vocab, &r->p.cp, u, b->sample_scratch);
}

static void finish(qtts_gen_request *r, qtts_stop_reason why) {
    if (r->stop == QTTS_STOP_NONE) r->stop = why;
}

static int append_frame(qtts_gen_request *r, int64_t G, const int32_t *frame, qtts_err *err) {
    if (r->n_frames == r->cap_frames) {
        int64_t cap = r->cap_frames ? r->cap_frames * 2 : 64;
        if (grow((void **)&r->codes, (size_t)cap * (size_t)G * sizeof(int32_t), err)) return -1;
        r->cap_frames = cap;
    }
    memcpy(r->codes + r->n_frames * G, frame, (size_t)G * sizeof(int32_t));
    r->n_frames++;
    return 0;
}

/* ---- incremental text ---- */

int qtts_gen_request_open_text(qtts_gen_request *r, qtts_err *err) {
    const int64_t D = r->m->cfg.talker.hidden;
    if (r->prefilled || r->text_open || r->prompt.n_trailing < 1)
        return qtts_fail(err, "incremental text needs a streaming-layout request that has not started");
    if (!(r->eos_row = qtts_malloc((size_t)D * sizeof(float), err))) return -1;
    r->prompt.n_trailing--; /* the streaming layout ends R with EOS: it goes back on at close */
    memcpy(r->eos_row, r->prompt.trailing + r->prompt.n_trailing * D, (size_t)D * sizeof(float));
    r->cap_trailing = r->prompt.n_trailing + 1;
    r->text_open = 1;
    return 0;
}

static int append_trailing(qtts_gen_request *r, int64_t n, qtts_err *err) {
    const int64_t D = r->m->cfg.talker.hidden;
    if (r->prompt.n_trailing + n <= r->cap_trailing) return 0;
    int64_t cap = r->cap_trailing * 2 > r->prompt.n_trailing + n ? r->cap_trailing * 2 : r->prompt.n_trailing + n;
    if (grow((void **)&r->prompt.trailing, (size_t)(cap * D) * sizeof(float), err)) return -1;
    r->cap_trailing = cap;
    return 0;
}

int qtts_gen_request_append_text(qtts_gen_request *r, qtts_pool *pool, const int32_t *ids, int64_t n, qtts_err *err) {
    const int64_t D = r->m->cfg.talker.hidden;
    if (!r->text_open) return qtts_fail(err, "the request's text is already complete");
    if (n <= 0) return 0;
    if (append_trailing(r, n, err) ||
        qtts_talker_text_embed(r->m, pool, ids, n, r->prompt.trailing + r->prompt.n_trailing * D, err))
        return -1;
    r->prompt.n_trailing += n;
    return 0;
}

int qtts_gen_request_close_text(qtts_gen_request *r, qtts_err *err) {
    const int64_t D = r->m->cfg.talker.hidden;
    if (!r->text_open) return 0;
    if (append_trailing(r, 1, err)) return -1;
    memcpy(r->prompt.trailing + r->prompt.n_trailing * D, r->eos_row, (size_t)D * sizeof(float));
    r->prompt.n_trailing++;
    r->text_open = 0;
    return 0;
}

int qtts_gen_request_waiting_text(const qtts_gen_request *r) {
    /* on the device a frame and the talker step after it are one submission,
     * so a request waits for the text row of that step before its frame */
    if (r->gpu_slot >= 0)
        return r->prefilled && !r->stop && r->pending >= 0 && r->text_open && r->n_frames >= r->prompt.n_trailing;
    return r->awaiting && r->text_open && r->n_frames - 1 >= r->prompt.n_trailing;
}

void qtts_gen_request_set_guard_cap(qtts_gen_request *r, int64_t max_frames) { r->p.guard_max_frames = max_frames; }

/* Samples each stepped request's next codebook-0 token from the hidden rows in b->hid. */
static void sample_next_c0(qtts_batch *b, int n, const float *hid) {
    const qtts_model_config *c = &b->m->cfg;
    const int64_t D = c->talker.hidden, V = c->talker.vocab;
    for (int k = 0; k < n; k++) {
        qtts_gen_request *r = b->active[k];
        memcpy(r->h, hid + k * D, (size_t)D * sizeof(float));
        if (r->trace.talker_hidden) r->trace.talker_hidden(r->trace.user, r->step, r->h, D);
        int32_t tok = sample_c0(b, r, b->logits + k * V);
        if (tok == c->codec_eos) finish(r, QTTS_STOP_EOS);
        else r->pending = tok;
    }
}

/* ---- the device path (qtts_batch_set_device) ---- */

void qtts_batch_set_device(qtts_batch *b, struct qtts_gpu_lm *d, int slots, int64_t max_pos) {
    b->gpu = d;
    b->gpu_slots = d ? (slots < QTTS_GPU_LM_MAX_STREAMS ? slots : QTTS_GPU_LM_MAX_STREAMS) : 0;
    b->gpu_max_pos = max_pos;
}

void qtts_batch_set_frame_hook(qtts_batch *b, const qtts_batch_frame_hook *hook) {
    b->hook = hook ? *hook : (qtts_batch_frame_hook){0};
}

int qtts_gen_request_on_device(const qtts_gen_request *r) { return r->gpu_slot >= 0; }
int qtts_gen_request_device_slot(const qtts_gen_request *r) { return r->gpu_slot; }

size_t qtts_gen_request_host_kv_bytes(const qtts_gen_request *r) {
    return (size_t)(r->kv.cap * r->kv.kv_dim * r->kv.n_layers) * qtts_kv_elem_size(&r->kv) * 2 +
           (size_t)(r->cp_kv.cap * r->cp_kv.kv_dim * r->cp_kv.n_layers) * qtts_kv_elem_size(&r->cp_kv) * 2;
}

int qtts_batch_device_streams(const qtts_batch *b) {
    int n = 0;
    for (int i = 0; i < b->n; i++) n += b->reqs[i]->gpu_slot >= 0;
    return n;
}

/* The most frames r can make: max_frames, or the runaway guard's cap. */
static int64_t frame_bound(const qtts_gen_request *r) {
    int64_t frames = r->p.max_frames;
    if (r->p.guard_max_frames > 0 && r->p.guard_max_frames < frames) frames = r->p.guard_max_frames;
    return frames;
}

/* A free device stream for r, or -1 where r runs on the CPU (see qtts_batch_set_device). */
static int device_slot_for(const qtts_batch *b, const qtts_gen_request *r) {
    if (r->prompt.n_rows + frame_bound(r) + 1 > b->gpu_max_pos) return -1;
    uint64_t used = 0;
    for (int i = 0; i < b->n; i++)
        if (b->reqs[i]->gpu_slot >= 0) used |= 1ull << b->reqs[i]->gpu_slot;
    for (int s = 0; s < b->gpu_slots; s++)
        if (!(used >> s & 1)) return s;
    return -1;
}

/* Emits a device frame and takes the next codebook-0 token: the CPU path's step 4 and sample_next_c0. */
static int device_emit(qtts_batch *b, qtts_gen_request *r, const int32_t *frame, int32_t next, qtts_err *err) {
    const int64_t G = b->m->cfg.num_code_groups;
    int64_t fi = r->n_frames;
    if (append_frame(r, G, frame, err)) return -1;
    r->pending = -1;
    if (r->cb) r->cb(r->cb_user, r, fi, frame, G);
    if (r->n_frames >= r->p.max_frames) finish(r, QTTS_STOP_MAX_FRAMES);
    else if (r->p.guard_max_frames > 0 && r->n_frames >= r->p.guard_max_frames) finish(r, QTTS_STOP_GUARD_LENGTH);
    else if (qtts_repeat_feed(&r->repeat, r->codes, G, r->n_frames) && r->p.guard_repetition)
        finish(r, QTTS_STOP_GUARD_REPETITION);
    if (r->stop) return 0;
    r->step++;
    if (next == b->m->cfg.codec_eos) finish(r, QTTS_STOP_EOS);
    else r->pending = next;
    return 0;
}

/* The requests on the device: the prefill of those that join (when one
 * fits, see device_slot_for), then one recorded frame for every pending
 * one: its code predictor, its next talker step and codebook-0 token. */
static int device_step(qtts_batch *b, qtts_err *err) {
    const qtts_model_config *c = &b->m->cfg;
    const int64_t D = c->talker.hidden, G = c->num_code_groups;
    if (!b->dev_codes && !(b->dev_codes = qtts_malloc((size_t)(QTTS_GPU_LM_MAX_STREAMS * G) * sizeof(int32_t), err)))
        return -1;
    for (int i = 0; i < b->n; i++) {
        qtts_gen_request *r = b->reqs[i];
        if (r->prefilled || r->stop || (r->gpu_slot = device_slot_for(b, r)) < 0) continue;
        if (r->p.max_frames <= 0) {
            r->prefilled = 1;
            finish(r, QTTS_STOP_MAX_FRAMES);
            continue;
        }
        /* its stream's cache for the prompt and up to 256 frames (the device
         * LM doubles it as the stream goes on); where the device has no room
         * for that the request runs on the CPU */
        const int64_t frames = frame_bound(r) < 256 ? frame_bound(r) : 256;
        qtts_err why = {0};
        if (qtts_gpu_lm_reserve(b->gpu, r->gpu_slot, r->prompt.n_rows + frames + 1, &why)) {
            r->gpu_slot = -1;
            continue;
        }
        r->prefilled = 1;
        stamp t0 = stamp_now();
        int32_t c0;
        const qtts_gpu_sample_settings ss = {r->p.talker, r->p.cp,          r->p.repetition_penalty, r->p.min_new_tokens,
                                             c->codec_eos, r->p.seed, r->p.stream};
        if (qtts_gpu_lm_prefill(b->gpu, r->gpu_slot, r->prompt.rows, r->prompt.n_rows, &ss, &c0, err))
            return -1;
        r->step = 1;
        if (c0 == c->codec_eos) finish(r, QTTS_STOP_EOS);
        else r->pending = c0;
        stage_add(&b->timing.prefill, t0, 1);
    }
    int B = 0;
    for (int i = 0; i < b->n; i++) {
        qtts_gen_request *r = b->reqs[i];
        if (r->gpu_slot < 0 || r->stop || r->pending < 0 || qtts_gen_request_waiting_text(r)) continue;
        int64_t fi = r->n_frames; /* the text row of the talker step after this frame */
        b->dev_text[B] = fi < r->prompt.n_trailing ? r->prompt.trailing + fi * D : r->prompt.pad;
        b->dev_slot[B] = r->gpu_slot;
        b->dev_req[B++] = r;
    }
    if (!B) return 0;
    struct qtts_gpu_seq *then = NULL;
    if (b->hook.before) {
        qtts_err why = {0};
        then = b->hook.before(b->hook.user, b->dev_req, B, &why);
        if (!then && why.status) return qtts_fail_as(err, why.status, "%s", why.msg);
    }
    stamp t0 = stamp_now();
    int rc = qtts_gpu_lm_frame(b->gpu, B, b->dev_slot, b->dev_text, b->dev_codes, b->dev_next, then, err);
    const int ran = rc == 0;
    stage_add(&b->timing.cp, t0, B);
    for (int k = 0; !rc && k < B; k++) rc = device_emit(b, b->dev_req[k], b->dev_codes + k * G, b->dev_next[k], err);
    /* the frame's requests have had their frames (or the step failed): the caller takes the step it added */
    if (then && b->hook.after(b->hook.user, ran, err)) rc = -1;
    return rc;
}

/* One step: the talker step of every request whose last frame was emitted
 * (its input waits in next_x), the prefill of the requests that joined, then
 * the code predictor for every pending codebook-0 token, whose frames are
 * emitted at the end. The talker step that follows a frame thus runs in the
 * next call, after the caller has had the frame (time to first audio does not
 * wait for it); per request the computation and its order are unchanged. */
static int batch_step(qtts_batch *b, qtts_pool *pool, qtts_err *err) {
    if (b->gpu && device_step(b, err)) return -1;
    const qtts_talker_model *m = b->m;
    const qtts_model_config *c = &m->cfg;
    /* n_cp: codes per frame from the code predictor (codebooks 1..G-1) */
    const int64_t D = c->talker.hidden, G = c->num_code_groups, n_cp = G - 1;
    int nb = b->n;
    int64_t rows = 0;
    for (int i = 0; i < nb; i++)
        if (!b->reqs[i]->prefilled) rows += b->reqs[i]->prompt.n_rows;
    if (batch_reserve(b, rows > nb ? rows : nb, nb, err)) return -1;

    /* 1. one talker step for the requests whose next input is complete (a
     * request parked for text joins once its row has arrived) */
    int nt = 0;
    for (int i = 0; i < nb; i++) {
        qtts_gen_request *r = b->reqs[i];
        if (!r->awaiting || r->stop || qtts_gen_request_waiting_text(r)) continue;
        int64_t fi = r->n_frames - 1;
        const float *text = fi < r->prompt.n_trailing ? r->prompt.trailing + fi * D : r->prompt.pad;
        float *x = b->x + nt * D;
        for (int64_t j = 0; j < D; j++) x[j] = r->next_x[j] + text[j]; /* frame embedding + text */
        if (r->trace.step_input) r->trace.step_input(r->trace.user, r->step, x, D);
        r->awaiting = 0;
        b->active[nt] = r;
        b->caches[nt] = &r->kv;
        b->ntok[nt] = 1;
        nt++;
    }
    if (nt) {
        stamp t_tk = stamp_now();
        if (qtts_lm_forward(&m->lm, pool, &b->work, nt, b->caches, b->ntok, b->x, b->hid, NULL, err)) return -1;
        if (qtts_linear(pool, &m->codec_head, NULL, b->hid, nt, b->logits))
            return qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "talker: out of memory in the codec head");
        sample_next_c0(b, nt, b->hid);
        stage_add(&b->timing.talker, t_tk, nt);
    }

    /* 2. prefill the requests that joined */
    int np = 0;
    int64_t off = 0;
    for (int i = 0; i < nb; i++) {
        qtts_gen_request *r = b->reqs[i];
        if (r->prefilled || r->stop) continue;
        r->prefilled = 1;
        if (r->p.max_frames <= 0) {
            finish(r, QTTS_STOP_MAX_FRAMES);
            continue;
        }
        /* the prompt and up to 256 frames at once; more grows it (doubling) */
        if (qtts_kv_reserve(&r->kv, r->prompt.n_rows + (r->p.max_frames < 256 ? r->p.max_frames : 256), err) ||
            qtts_kv_reserve(&r->cp_kv, c->num_code_groups, err))
            return -1;
        memcpy(b->x + off * D, r->prompt.rows, (size_t)(r->prompt.n_rows * D) * sizeof(float));
        b->active[np] = r;
        b->caches[np] = &r->kv;
        b->ntok[np] = r->prompt.n_rows;
        off += r->prompt.n_rows;
        np++;
    }
    if (np) {
        stamp t0 = stamp_now();
        if (qtts_lm_forward(&m->lm, pool, &b->work, np, b->caches, b->ntok, b->x, b->hid, NULL, err)) return -1;
        int64_t last = 0;
        for (int k = 0; k < np; k++) {
            last += b->ntok[k];
            memcpy(b->h + k * D, b->hid + (last - 1) * D, (size_t)D * sizeof(float));
        }
        if (qtts_linear(pool, &m->codec_head, NULL, b->h, np, b->logits))
            return qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "talker: out of memory in the codec head");
        sample_next_c0(b, np, b->h);
        stage_add(&b->timing.prefill, t0, np);
    }

    /* 3. code predictor for every pending codebook-0 token (none may be pending:
     * every request may be parked, waiting for text) */
    int na = 0;
    stamp t_cp = stamp_now();
    for (int i = 0; i < nb; i++) {
        qtts_gen_request *r = b->reqs[i];
        if (r->stop || r->pending < 0 || r->gpu_slot >= 0) continue;
        b->active[na] = r;
        b->caches[na] = &r->cp_kv;
        memcpy(b->h + na * D, r->h, (size_t)D * sizeof(float));
        if (qtts_talker_codec_embed(m, r->pending, b->c0_emb + na * D, err)) return -1;
        na++;
    }
    if (!na) return 0;
    cp_ctx cc = {b};
    if (qtts_code_predictor_run(&m->cp, pool, &b->cpw, na, b->h, b->c0_emb, b->caches, sample_cp_code, &cc, b->codes,
                                b->cp_emb_sum, NULL, NULL, err))
        return -1;
    stage_add(&b->timing.cp, t_cp, na);

    /* 4. emit frames; the next talker input (less its text row) waits in next_x */
    int32_t frame[MAX_CODE_GROUPS];
    for (int k = 0; k < na; k++) {
        qtts_gen_request *r = b->active[k];
        frame[0] = r->pending;
        memcpy(frame + 1, b->codes + k * n_cp, (size_t)n_cp * sizeof(int32_t));
        int64_t fi = r->n_frames;
        if (append_frame(r, G, frame, err)) return -1;
        r->pending = -1;
        if (r->cb) r->cb(r->cb_user, r, fi, frame, G);
        if (r->n_frames >= r->p.max_frames) {
            finish(r, QTTS_STOP_MAX_FRAMES); /* the reference would run one more talker step and drop its token */
            continue;
        }
        if (r->p.guard_max_frames > 0 && r->n_frames >= r->p.guard_max_frames) {
            finish(r, QTTS_STOP_GUARD_LENGTH);
            continue;
        }
        if (qtts_repeat_feed(&r->repeat, r->codes, G, r->n_frames) && r->p.guard_repetition) {
            finish(r, QTTS_STOP_GUARD_REPETITION);
            continue;
        }
        const float *e0 = b->c0_emb + k * D, *esum = b->cp_emb_sum + k * D;
        for (int64_t i = 0; i < D; i++) r->next_x[i] = e0[i] + esum[i];
        r->awaiting = 1;
    }
    return 0;
}

int qtts_batch_step(qtts_batch *b, qtts_pool *pool, qtts_err *err) {
    if (b->m->cfg.num_code_groups > MAX_CODE_GROUPS)
        return qtts_fail(err, "num_code_groups %lld is too large (at most %d)", (long long)b->m->cfg.num_code_groups,
                         MAX_CODE_GROUPS);
    int rc = batch_step(b, pool, err);
    if (rc) {
        for (int i = 0; i < b->n; i++) {
            finish(b->reqs[i], QTTS_STOP_ERROR);
            b->reqs[i]->in_batch = 0;
            b->reqs[i]->batch = NULL;
        }
        b->n = 0;
        return -1;
    }
    int w = 0;
    for (int i = 0; i < b->n; i++) {
        if (b->reqs[i]->stop) {
            b->reqs[i]->in_batch = 0;
            b->reqs[i]->batch = NULL;
        }
        else b->reqs[w++] = b->reqs[i];
    }
    b->n = w;
    return w;
}

int qtts_generate(const qtts_talker_model *m, qtts_pool *pool, qtts_gen_request *r, qtts_err *err) {
    qtts_batch *b = qtts_batch_new(m, err);
    if (!b) return -1;
    int rc = qtts_batch_add(b, r, err);
    while (!rc) {
        int left = qtts_batch_step(b, pool, err);
        if (left < 0) rc = -1;
        else if (left == 0) break;
    }
    qtts_batch_free(b);
    return rc;
}
