/* The engine: one engine thread (src/engine/executor.c) with its pool runs a
 * frame loop over up to max_batch active requests (continuous batching):
 *   admit waiting requests (tokenize, build prompt) -> one batched talker +
 *   code-predictor step for all -> one batched decoder step for every request
 *   with new frames -> PCM into each request's stream.
 * Requests join and leave at frame boundaries. Other jobs (voice extraction)
 * run between frames. Request threads only validate, enqueue and read. */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "engine/decode_policy.h"
#include "engine/engine_internal.h"
#include "engine/stream.h"
#include "io/model_pack.h"
#include "core/clock.h"

static void set_err(char *err, size_t size, const char *msg) {
    if (err && size) snprintf(err, size, "%s", msg);
}

/* ---- per-request engine data ---- */

typedef struct slot {
    qtts_stream *stream;
    /* owned copies of the request */
    char *text, *language, *speaker, *instruct;
    qtts_voice *voice;
    qtts_request req;
    qtts_gen_params params;
    /* engine-thread state */
    qtts_gen_request *gen;
    qtts_codec_stream *dec;
    int32_t *pending; /* frames waiting for the decoder, frame-major */
    int decode_now;   /* decode_pending: part of this step */
    int64_t n_pending, cap_pending;
    int64_t skip_samples; /* ICL: decoded reference audio to drop */
    float *pcm;           /* decoder output scratch */
    int64_t cap_pcm;
    qtts_mode mode;
    double t_submit, t_start, t_first_audio;
    double prefill_ms, talker_ms, cp_ms, decoder_ms;
    int prefilled;
    int64_t samples_out;
    struct slot *next;
} slot;

static void slot_free(slot *s) {
    if (!s) return;
    if (s->gen) qtts_gen_request_free(s->gen);
    if (s->dec) qtts_codec_stream_free(s->dec);
    if (s->voice) qtts_voice_release(s->voice);
    free(s->text);
    free(s->language);
    free(s->speaker);
    free(s->instruct);
    free(s->pending);
    free(s->pcm);
    if (s->stream) stream_release(s->stream);
    free(s);
}

static char *dup_or_null(const char *s, int *oom) {
    if (!s) return NULL;
    char *d = strdup(s);
    if (!d) *oom = 1;
    return d;
}

/* ---- public: params, info ---- */

void qtts_engine_params_default(qtts_engine_params *p) {
    memset(p, 0, sizeof *p);
}

void qtts_request_default(qtts_request *r) {
    memset(r, 0, sizeof *r);
}

const qtts_model_info *qtts_engine_info(const qtts_engine *e) { return &e->info; }

void qtts_engine_get_stats(qtts_engine *e, qtts_engine_stats *out) {
    pthread_mutex_lock(&e->mu);
    out->active_slots = e->n_active;
    out->queued = e->n_waiting;
    pthread_mutex_unlock(&e->mu);
    out->requests_done = atomic_load(&e->n_done);
    out->requests_failed = atomic_load(&e->n_failed);
    out->requests_cancelled = atomic_load(&e->n_cancelled);
    out->frames_total = atomic_load(&e->n_frames);
    out->audio_seconds_total = (double)atomic_load(&e->n_frames) * e->frame_samples / e->sample_rate;
}

int qtts_engine_thread_ids(qtts_engine *e, int *out, int max) {
    pid_t tids[512];
    int n = qtts_pool_thread_ids(e->pool, tids, max < 512 ? max : 512);
    for (int i = 0; i < n; i++) out[i] = (int)tids[i];
    return n;
}

/* ---- submit (request thread: validate + enqueue only) ---- */

static uint64_t random_seed(void) {
    uint64_t s = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read(fd, &s, sizeof s) != (ssize_t)sizeof s) s = 0;
        close(fd);
    }
    if (!s) s = (uint64_t)qtts_now_ms() * 6364136223846793005ull + (uint64_t)getpid();
    return s >> 1; /* keep it printable as a signed 64-bit number too */
}

/* Mode of a request on this model, or -1 with a message. */
static int request_mode(const qtts_engine *e, const qtts_request *r, qtts_mode *mode, char *err, size_t es) {
    const qtts_model_config *c = &e->talker->cfg;
    switch (c->variant) {
    case QTTS_VARIANT_CUSTOM_VOICE:
        if (r->voice) return set_err(err, es, "this CustomVoice model has built-in speakers only; cloned voices need a Base model"), -1;
        *mode = QTTS_MODE_CUSTOM_VOICE;
        return 0;
    case QTTS_VARIANT_VOICE_DESIGN:
        if (r->voice) return set_err(err, es, "this VoiceDesign model designs voices from --instruct; cloned voices need a Base model"), -1;
        *mode = QTTS_MODE_VOICE_DESIGN;
        return 0;
    case QTTS_VARIANT_BASE:
        if (!r->voice) return set_err(err, es, "this Base model clones a voice: give reference audio (or a registered voice)"), -1;
        /* A voice without codes or transcript clones from its x-vector alone. */
        if (r->x_vector_only || !r->voice->codes || !r->voice->n_frames || !r->voice->ref_text) {
            *mode = QTTS_MODE_CLONE_XVEC;
        } else {
            *mode = QTTS_MODE_CLONE_ICL;
        }
        return 0;
    }
    return set_err(err, es, "unknown model variant"), -1;
}

qtts_stream *qtts_submit(qtts_engine *e, const qtts_request *r, char *err, size_t es) {
    if (!r || !r->text || !*r->text) {
        set_err(err, es, "the input text is empty");
        return NULL;
    }
    qtts_mode mode;
    if (request_mode(e, r, &mode, err, es)) return NULL;
    /* Check names and combinations now so the caller gets a clear error
     * before anything is queued (token ids are built on the engine thread). */
    const qtts_model_config *c = &e->talker->cfg;
    if (mode == QTTS_MODE_CUSTOM_VOICE) {
        if (!r->speaker || !*r->speaker) {
            snprintf(err, es, "this CustomVoice model needs a speaker (valid: %s)", e->speaker_list);
            return NULL;
        }
        if (!qtts_config_speaker(c, r->speaker)) {
            snprintf(err, es, "unknown speaker \"%s\" (valid: %s)", r->speaker, e->speaker_list);
            return NULL;
        }
    } else if (r->speaker && *r->speaker) {
        snprintf(err, es, "this %s model has no built-in speakers", qtts_variant_name(c->variant));
        return NULL;
    }
    if (mode == QTTS_MODE_VOICE_DESIGN && (!r->instruct || !*r->instruct)) {
        set_err(err, es, "this VoiceDesign model needs an instruction describing the voice (instruct)");
        return NULL;
    }
    if ((mode == QTTS_MODE_CLONE_XVEC || mode == QTTS_MODE_CLONE_ICL) && r->instruct && *r->instruct) {
        set_err(err, es, "instructions are not supported when cloning a voice (Base models)");
        return NULL;
    }
    if (r->language && *r->language && strcasecmp(r->language, "auto") != 0) {
        const qtts_named_id *l = qtts_config_language(c, r->language);
        if (!l || strstr(l->name, "dialect")) {
            snprintf(err, es, "unknown language \"%s\" (valid: %s)", r->language, e->language_list);
            return NULL;
        }
    }
    if (strlen(r->text) > QTTS_MAX_TEXT_BYTES) {
        snprintf(err, es, "the input text is longer than %d bytes; split it", QTTS_MAX_TEXT_BYTES);
        return NULL;
    }
    if (r->max_frames < 0 || r->temperature < 0 || r->top_p < 0 || r->top_p > 1 || r->top_k < 0 ||
        r->repetition_penalty < 0 || r->cp_temperature < 0 || r->cp_top_p < 0 || r->cp_top_p > 1 || r->cp_top_k < 0) {
        set_err(err, es, "sampling parameters out of range");
        return NULL;
    }

    slot *s = calloc(1, sizeof *s);
    int oom = !s;
    if (s) {
        s->req = *r;
        s->text = dup_or_null(r->text, &oom);
        s->language = dup_or_null(r->language, &oom);
        s->speaker = dup_or_null(r->speaker, &oom);
        s->instruct = dup_or_null(r->instruct, &oom);
        s->req.text = s->text;
        s->req.language = s->language;
        s->req.speaker = s->speaker;
        s->req.instruct = s->instruct;
        s->voice = r->voice ? qtts_voice_retain((qtts_voice *)r->voice) : NULL;
        s->req.voice = s->voice;
        s->stream = stream_new();
        if (!s->stream) oom = 1;
    }
    if (oom) {
        slot_free(s);
        set_err(err, es, "out of memory");
        return NULL;
    }
    if (!r->has_seed) s->req.seed = random_seed();
    s->req.has_seed = 1;
    s->mode = mode;
    s->t_submit = qtts_now_ms();

    pthread_mutex_lock(&e->mu);
    if (e->stopping) {
        pthread_mutex_unlock(&e->mu);
        slot_free(s);
        set_err(err, es, "the engine is shutting down");
        return NULL;
    }
    if (e->n_waiting >= e->max_queue) {
        pthread_mutex_unlock(&e->mu);
        stream_release(s->stream); /* the reader's reference */
        slot_free(s);
        snprintf(err, es, "busy: %d requests are waiting (limit %d)", e->max_queue, e->max_queue);
        return NULL;
    }
    if (e->wait_tail) e->wait_tail->next = s;
    else e->wait_head = s;
    e->wait_tail = s;
    e->n_waiting++;
    qtts_stream *st = s->stream;
    pthread_mutex_unlock(&e->mu);
    qtts_exec_wake(e->exec);
    return st;
}

/* ---- engine thread: the frame loop ---- */

static void on_frame(void *user, qtts_gen_request *r, int64_t frame, const int32_t *codes, int64_t n_codes) {
    (void)r;
    (void)frame;
    slot *s = user;
    if (s->n_pending == s->cap_pending) {
        int64_t cap = s->cap_pending ? s->cap_pending * 2 : 8;
        int32_t *np = realloc(s->pending, (size_t)(cap * n_codes) * sizeof *np);
        if (!np) return; /* checked after the step: n_pending stays short */
        s->pending = np;
        s->cap_pending = cap;
    }
    memcpy(s->pending + s->n_pending * n_codes, codes, (size_t)n_codes * sizeof *codes);
    s->n_pending++;
}

/* Tokenize, build the prompt and the decoder stream; joins the batch. */
static int slot_start(qtts_engine *e, qtts_pool *pool, slot *s, qtts_err *err) {
    const qtts_model_config *c = &e->talker->cfg;
    int32_t *text_ids = NULL, *instr_ids = NULL, *ref_ids = NULL;
    int n_text = 0, n_instr = 0, n_ref = 0, rc = -1;
    /* Leading line breaks would merge with the template's "\n" token and
     * shift the positional slicing of the prompt (spec section 3): skip
     * leading whitespace, which carries no speech. */
    const char *text = s->text;
    while (*text == ' ' || *text == '\t' || *text == '\n' || *text == '\r') text++;
    if (!*text) return qtts_fail(err, "the input text is only whitespace");
    if (qtts_tok_encode_template(e->tok, QTTS_TEMPLATE_TARGET, text, &text_ids, &n_text, err)) goto done;
    if (s->instruct && *s->instruct &&
        qtts_tok_encode_template(e->tok, QTTS_TEMPLATE_INSTRUCT, s->instruct, &instr_ids, &n_instr, err))
        goto done;
    if (s->mode == QTTS_MODE_CLONE_ICL &&
        qtts_tok_encode_template(e->tok, QTTS_TEMPLATE_REF, s->voice->ref_text, &ref_ids, &n_ref, err))
        goto done;
    qtts_prompt_spec spec = {
        .mode = s->mode,
        .text_ids = text_ids,
        .n_text_ids = n_text,
        .instruct_ids = instr_ids,
        .n_instruct_ids = n_instr,
        .ref_ids = ref_ids,
        .n_ref_ids = n_ref,
        .ref_codes = s->mode == QTTS_MODE_CLONE_ICL ? s->voice->codes : NULL,
        .n_ref_frames = s->mode == QTTS_MODE_CLONE_ICL ? (int64_t)s->voice->n_frames : 0,
        .xvector = s->voice ? s->voice->xvec : NULL,
        .speaker = s->speaker,
        .language = s->language,
        .non_streaming = s->req.layout == QTTS_LAYOUT_DEFAULT ? -1 : s->req.layout == QTTS_LAYOUT_NON_STREAMING,
    };
    qtts_gen_params p;
    qtts_gen_params_from_config(&p, &e->talker->gen);
    if (s->req.greedy) {
        p.talker.do_sample = 0;
        p.cp.do_sample = 0;
    }
    if (s->req.temperature > 0) p.talker.temperature = s->req.temperature;
    if (s->req.top_k > 0) p.talker.top_k = s->req.top_k;
    if (s->req.top_p > 0) p.talker.top_p = s->req.top_p;
    if (s->req.repetition_penalty > 0) p.repetition_penalty = s->req.repetition_penalty;
    if (s->req.cp_temperature > 0) p.cp.temperature = s->req.cp_temperature;
    if (s->req.cp_top_k > 0) p.cp.top_k = s->req.cp_top_k;
    if (s->req.cp_top_p > 0) p.cp.top_p = s->req.cp_top_p;
    if (s->req.max_frames > 0) p.max_frames = s->req.max_frames;
    p.seed = s->req.seed;
    p.stream = 0; /* the seed alone keys a request's draws */
    s->gen = qtts_gen_request_new(e->talker, pool, &spec, &p, err);
    if (!s->gen) goto done;
    qtts_gen_request_set_callback(s->gen, on_frame, s);
    s->dec = qtts_codec_stream_new(e->decoder, err);
    if (!s->dec) goto done;
    /* ICL: the reference codes are decoded first (as the reference decodes
     * ref_code ++ codes) and their samples dropped. */
    if (s->mode == QTTS_MODE_CLONE_ICL) {
        int64_t nf = (int64_t)s->voice->n_frames;
        float *tmp = malloc((size_t)(nf * e->frame_samples) * sizeof *tmp);
        if (!tmp) {
            qtts_fail(err, "out of memory");
            goto done;
        }
        int drc = qtts_codec_decode_feed(e->decoder, pool, s->dec, s->voice->codes, nf, tmp, err);
        free(tmp);
        if (drc) goto done;
    }
    if (qtts_batch_add(e->batch, s->gen, err)) goto done;
    (void)c;
    rc = 0;
done:
    free(text_ids);
    free(instr_ids);
    free(ref_ids);
    return rc;
}

static void slot_finish(qtts_engine *e, slot *s, const char *error) {
    qtts_result r = {0};
    r.seed = s->req.seed;
    r.n_frames = (int)(s->gen ? qtts_gen_request_n_frames(s->gen) : 0);
    r.audio_seconds = (double)s->samples_out / e->sample_rate;
    r.queue_ms = s->t_start - s->t_submit;
    r.first_audio_ms = s->t_first_audio > 0 ? s->t_first_audio - s->t_submit : 0;
    r.total_ms = qtts_now_ms() - s->t_submit;
    r.prefill_ms = s->prefill_ms;
    r.talker_ms = s->talker_ms;
    r.code_predictor_ms = s->cp_ms;
    r.decoder_ms = s->decoder_ms;
    r.finished_by_eos = s->gen && qtts_gen_request_stop_reason(s->gen) == QTTS_STOP_EOS;
    if (error) {
        stream_fail(s->stream, error);
        if (atomic_load(&s->stream->cancelled)) atomic_fetch_add(&e->n_cancelled, 1);
        else atomic_fetch_add(&e->n_failed, 1);
    } else {
        if (s->req.keep_codes && s->gen && r.n_frames > 0) {
            int64_t g = e->talker->cfg.num_code_groups;
            int32_t *copy = malloc((size_t)(r.n_frames * g) * sizeof *copy);
            if (copy) {
                memcpy(copy, qtts_gen_request_codes(s->gen), (size_t)(r.n_frames * g) * sizeof *copy);
                pthread_mutex_lock(&s->stream->mu);
                s->stream->codes = copy;
                s->stream->n_code_frames = (size_t)r.n_frames;
                s->stream->n_codebooks = (int)g;
                pthread_mutex_unlock(&s->stream->mu);
            }
        }
        stream_finish(s->stream, &r);
        atomic_fetch_add(&e->n_done, 1);
    }
}

/* Decodes the due requests' pending frames in one batched step. */
static int decode_pending(qtts_engine *e, qtts_pool *pool, qtts_err *err) {
    int n = 0;
    const double now = qtts_now_ms();
    for (slot *s = e->active; s; s = s->next) {
        s->decode_now = qtts_decode_due(s->n_pending, qtts_gen_request_finished(s->gen), s->samples_out,
                                        e->frame_samples, e->sample_rate, s->t_start, s->t_first_audio, now);
        n += s->decode_now;
    }
    if (!n) return 0;
    qtts_codec_stream **streams = e->scratch_streams;
    const int32_t **codes = e->scratch_codes;
    int64_t *nf = e->scratch_nf;
    float **out = e->scratch_out;
    slot **which = e->scratch_slots;
    int i = 0;
    for (slot *s = e->active; s; s = s->next) {
        if (!s->decode_now) continue;
        int64_t need = s->n_pending * e->frame_samples;
        if (need > s->cap_pcm) {
            float *np = realloc(s->pcm, (size_t)need * sizeof *np);
            if (!np) return qtts_fail(err, "out of memory");
            s->pcm = np;
            s->cap_pcm = need;
        }
        streams[i] = s->dec;
        codes[i] = s->pending;
        nf[i] = s->n_pending;
        out[i] = s->pcm;
        which[i] = s;
        i++;
    }
    double t0 = qtts_now_ms();
    if (qtts_codec_decode_step_batch(e->decoder, pool, streams, codes, nf, n, out, err)) return -1;
    double dt = (qtts_now_ms() - t0) / n;
    for (i = 0; i < n; i++) {
        slot *s = which[i];
        int64_t count = nf[i] * e->frame_samples;
        const float *pcm = s->pcm;
        if (s->skip_samples) { /* never the case today: reference audio is decoded at start */
            int64_t k = s->skip_samples < count ? s->skip_samples : count;
            pcm += k;
            count -= k;
            s->skip_samples -= k;
        }
        s->decoder_ms += dt;
        s->n_pending = 0;
        if (count > 0) {
            if (stream_push(s->stream, pcm, (size_t)count)) return qtts_fail(err, "out of memory");
            if (s->t_first_audio == 0) s->t_first_audio = qtts_now_ms();
            s->samples_out += count;
        }
    }
    return 0;
}

static void unlink_slot(qtts_engine *e, slot *s) {
    for (slot **pp = &e->active; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    s->next = NULL;
}

static int frame_loop(qtts_pool *pool, void *ctx) {
    qtts_engine *e = ctx;
    qtts_err err = {{0}};

    /* admit */
    for (;;) {
        pthread_mutex_lock(&e->mu);
        slot *s = NULL;
        if (e->n_active < e->max_batch && e->wait_head) {
            s = e->wait_head;
            e->wait_head = s->next;
            if (!e->wait_head) e->wait_tail = NULL;
            e->n_waiting--;
            e->n_active++;
        }
        pthread_mutex_unlock(&e->mu);
        if (!s) break;
        s->next = e->active;
        e->active = s;
        s->t_start = qtts_now_ms();
        if (atomic_load(&s->stream->cancelled)) {
            slot_finish(e, s, "cancelled");
        } else if (slot_start(e, pool, s, &err)) {
            slot_finish(e, s, err.msg);
        } else {
            stream_set_running(s->stream);
            continue;
        }
        unlink_slot(e, s);
        pthread_mutex_lock(&e->mu);
        e->n_active--;
        pthread_mutex_unlock(&e->mu);
        slot_free(s);
    }

    /* cancellations take effect at this frame boundary */
    for (slot *s = e->active, *next; s; s = next) {
        next = s->next;
        if (!atomic_load(&s->stream->cancelled) && !e->stopping) continue;
        qtts_batch_remove(e->batch, s->gen);
        slot_finish(e, s, "cancelled");
        unlink_slot(e, s);
        pthread_mutex_lock(&e->mu);
        e->n_active--;
        pthread_mutex_unlock(&e->mu);
        slot_free(s);
    }
    if (!e->active) {
        pthread_mutex_lock(&e->mu);
        int more = e->wait_head != NULL;
        pthread_mutex_unlock(&e->mu);
        return more;
    }

    qtts_batch_timing tm0, tm1;
    qtts_batch_get_timing(e->batch, &tm0);
    int64_t frames_before = 0;
    for (slot *s = e->active; s; s = s->next) frames_before += s->n_pending;
    int left = qtts_batch_step(e->batch, pool, &err);
    qtts_batch_get_timing(e->batch, &tm1);
    /* stage times of this step, shared among the requests that took part */
    double d_prefill = (double)(tm1.prefill.wall_ns - tm0.prefill.wall_ns) / 1e6;
    double d_cp = (double)(tm1.cp.wall_ns - tm0.cp.wall_ns) / 1e6;
    double d_talker = (double)(tm1.talker.wall_ns - tm0.talker.wall_ns) / 1e6;
    int n_active = 0, n_new = 0;
    for (slot *s = e->active; s; s = s->next) {
        n_active++;
        n_new += !s->prefilled;
    }
    int64_t frames_after = 0;
    for (slot *s = e->active; s; s = s->next) {
        if (!s->prefilled) {
            s->prefill_ms += d_prefill / n_new;
            s->prefilled = 1;
        } else {
            s->cp_ms += d_cp / (n_active - n_new);
            s->talker_ms += d_talker / (n_active - n_new);
        }
        frames_after += s->n_pending;
    }
    atomic_fetch_add(&e->n_frames, (uint64_t)(frames_after - frames_before));
    int failed = left < 0 || decode_pending(e, pool, &err) != 0;

    for (slot *s = e->active, *next; s; s = next) {
        next = s->next;
        if (!failed && !qtts_gen_request_finished(s->gen)) continue;
        if (!failed) qtts_batch_remove(e->batch, s->gen);
        slot_finish(e, s, failed ? err.msg : NULL);
        unlink_slot(e, s);
        pthread_mutex_lock(&e->mu);
        e->n_active--;
        pthread_mutex_unlock(&e->mu);
        slot_free(s);
    }
    return 1;
}

/* ---- lifecycle ---- */

typedef struct {
    qtts_engine *e;
    const qtts_engine_params *p;
    qtts_err err;
    int rc;
} load_job;

static int online_cpus(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 256 ? 256 : (int)n;
}

static int build_name_lists(qtts_engine *e) {
    const qtts_model_config *c = &e->talker->cfg;
    e->speaker_names = calloc((size_t)c->n_speakers + 1, sizeof *e->speaker_names);
    e->language_names = calloc((size_t)c->n_languages + 2, sizeof *e->language_names);
    if (!e->speaker_names || !e->language_names) return -1;
    size_t o = 0;
    e->speaker_list[0] = 0;
    for (int i = 0; i < c->n_speakers; i++) {
        e->speaker_names[i] = c->speakers[i].name;
        o += (size_t)snprintf(e->speaker_list + o, sizeof e->speaker_list - o, "%s%s", i ? ", " : "",
                              c->speakers[i].name);
        if (o >= sizeof e->speaker_list) o = sizeof e->speaker_list - 1;
    }
    int nl = 0;
    e->language_names[nl++] = "auto";
    o = (size_t)snprintf(e->language_list, sizeof e->language_list, "auto");
    for (int i = 0; i < c->n_languages; i++) {
        if (strstr(c->languages[i].name, "dialect")) continue;
        e->language_names[nl++] = c->languages[i].name;
        o += (size_t)snprintf(e->language_list + o, sizeof e->language_list - o, ", %s", c->languages[i].name);
        if (o >= sizeof e->language_list) o = sizeof e->language_list - 1;
    }
    e->info.variant = qtts_variant_name(c->variant);
    e->info.size = c->size;
    e->info.hidden_size = (int)c->talker.hidden;
    e->info.n_speakers = c->n_speakers;
    e->info.speakers = e->speaker_names;
    e->info.n_languages = nl;
    e->info.languages = e->language_names;
    e->info.sample_rate = (int)e->sample_rate;
    e->info.max_batch = e->max_batch;
    return 0;
}

/* Model loading runs on the engine thread too: weight conversion is compute. */
static void load_models(qtts_pool *pool, void *ctx) {
    load_job *j = ctx;
    qtts_engine *e = j->e;
    (void)pool;
    j->rc = -1;
    qtts_talker_options topt = {.weight_type = QTTS_DTYPE_INVALID};
    if (j->p->weight_type && *j->p->weight_type && strcmp(j->p->weight_type, "auto") != 0) {
        topt.weight_type = qtts_dtype_from_name(j->p->weight_type);
        if (topt.weight_type == QTTS_DTYPE_INVALID) {
            qtts_fail(&j->err, "unknown weight type \"%s\" (f32, bf16, q8_0, q4_k)", j->p->weight_type);
            return;
        }
    }
    const char *path = j->p->model_path;
    size_t plen = strlen(path);
    if (plen > 5 && !strcmp(path + plen - 5, ".gguf")) {
        /* one-file model (qtts quantize): text files go to a private folder */
        char tmp[PATH_MAX];
        qtts_store *model_store = NULL;
        if (qtts_model_unpack(path, tmp, sizeof tmp, &model_store, &e->codec_store, &j->err)) return;
        qtts_model_config cfg;
        qtts_generation_config gen;
        qtts_codec_config cc;
        char codec_dir[PATH_MAX + 32];
        snprintf(codec_dir, sizeof codec_dir, "%s/speech_tokenizer", tmp);
        int ok = !qtts_model_config_load(&cfg, tmp, &j->err) && !qtts_generation_config_load(&gen, tmp, &j->err) &&
                 !qtts_codec_config_load(&cc, codec_dir, &j->err);
        if (ok) {
            e->talker = qtts_talker_model_from_store(model_store, &cfg, &gen, &topt, &j->err); /* owns the store */
            model_store = NULL;
            ok = e->talker && (e->decoder = qtts_codec_decoder_load(e->codec_store, &cc, &j->err)) != NULL &&
                 (e->tok = qtts_tok_load(tmp, &j->err)) != NULL;
            if (ok && cfg.variant == QTTS_VARIANT_BASE)
                ok = (e->cloner = clone_frontend_open(tmp, e->talker->store, e->codec_store, &cfg, &j->err)) != NULL;
        }
        qtts_store_free(model_store);
        qtts_pack_remove_dir(tmp);
        if (!ok) return;
    } else {
        e->talker = qtts_talker_model_load(path, &topt, &j->err);
        if (!e->talker) return;
        e->decoder = qtts_codec_decoder_open(path, &j->err);
        if (!e->decoder) return;
        e->tok = qtts_tok_load(path, &j->err);
        if (!e->tok) return;
        if (e->talker->cfg.variant == QTTS_VARIANT_BASE) {
            e->cloner = clone_frontend_open(path, e->talker->store, NULL, &e->talker->cfg, &j->err);
            if (!e->cloner) return;
        }
    }
    qtts_decoder_precision prec;
    if (qtts_decoder_precision_choose(j->p->decoder_precision, e->talker->lm.layers[0].q.type, &prec, &j->err) ||
        qtts_codec_decoder_set_precision(e->decoder, prec, &j->err))
        return;
    e->info.weight_type = qtts_dtype_name(e->talker->lm.layers[0].q.type);
    e->info.decoder_precision = qtts_decoder_precision_name(prec);
    e->batch = qtts_batch_new(e->talker, &j->err);
    if (!e->batch) return;
    /* Converted and packed weights live in their own memory now: let the
     * mapped originals leave the RSS (what is still used faults back in). */
    qtts_store_release_pages(e->talker->store);
    qtts_store_release_pages(qtts_codec_decoder_owned_store(e->decoder));
    qtts_store_release_pages(e->codec_store);
    if (e->cloner) clone_frontend_release_pages(e->cloner);
    j->rc = 0;
}

static void unload_models(qtts_pool *pool, void *ctx) {
    qtts_engine *e = ctx;
    (void)pool;
    qtts_batch_free(e->batch);
    if (e->cloner) clone_frontend_free(e->cloner);
    qtts_tok_free(e->tok);
    qtts_codec_decoder_free(e->decoder);
    qtts_store_free(e->codec_store); /* borrows the talker store's mapping (packed models) */
    qtts_talker_model_free(e->talker);
}

qtts_engine *qtts_engine_create(const qtts_engine_params *p, char *err, size_t es) {
    if (!p || !p->model_path || !*p->model_path) {
        set_err(err, es, "no model given (use --model PATH or set QTTS_MODEL)");
        return NULL;
    }
    qtts_engine *e = calloc(1, sizeof *e);
    if (!e) {
        set_err(err, es, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&e->mu, NULL);
    int threads = p->n_threads > 0 ? p->n_threads : online_cpus();
    e->max_batch = p->max_batch > 0 ? p->max_batch : QTTS_DEFAULT_MAX_BATCH;
    if (e->max_batch > QTTS_MAX_BATCH) e->max_batch = QTTS_MAX_BATCH;
    e->max_queue = p->max_queue > 0 ? p->max_queue : 4 * e->max_batch + 16;
    qtts_err qe = {{0}};
    e->exec = qtts_exec_create(threads, &qe);
    if (!e->exec) {
        set_err(err, es, qe.msg);
        pthread_mutex_destroy(&e->mu);
        free(e);
        return NULL;
    }
    e->pool = qtts_exec_pool(e->exec);
    load_job j = {.e = e, .p = p};
    qtts_exec_call(e->exec, load_models, &j);
    if (j.rc == 0) {
        e->frame_samples = qtts_codec_decoder_frame_samples(e->decoder);
        e->sample_rate = qtts_codec_decoder_sample_rate(e->decoder);
        if (build_name_lists(e)) {
            j.rc = -1;
            qtts_fail(&j.err, "out of memory");
        }
    }
    if (j.rc) {
        set_err(err, es, j.err.msg);
        qtts_exec_call(e->exec, unload_models, e);
        qtts_exec_free(e->exec);
        free(e->speaker_names);
        free(e->language_names);
        pthread_mutex_destroy(&e->mu);
        free(e);
        return NULL;
    }
    e->info.n_threads = threads;
    qtts_exec_set_idle(e->exec, frame_loop, e);
    return e;
}

static void drain(qtts_pool *pool, void *ctx) {
    qtts_engine *e = ctx;
    /* e->stopping makes the frame loop cancel every active request */
    while (e->active) frame_loop(pool, e);
}

void qtts_engine_free(qtts_engine *e) {
    if (!e) return;
    pthread_mutex_lock(&e->mu);
    e->stopping = 1;
    slot *w = e->wait_head;
    e->wait_head = e->wait_tail = NULL;
    e->n_waiting = 0;
    pthread_mutex_unlock(&e->mu);
    while (w) {
        slot *next = w->next;
        stream_fail(w->stream, "the engine is shutting down");
        slot_free(w);
        w = next;
    }
    qtts_exec_call(e->exec, drain, e);
    qtts_exec_call(e->exec, unload_models, e);
    qtts_exec_free(e->exec);
    free(e->speaker_names);
    free(e->language_names);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

/* ---- convenience ---- */

int qtts_synthesize(qtts_engine *e, const qtts_request *r, qtts_audio_cb cb, void *user, qtts_result *out,
                    char *err, size_t es) {
    qtts_stream *s = qtts_submit(e, r, err, es);
    if (!s) return -1;
    float buf[8192];
    int rc = 0;
    for (;;) {
        long n = qtts_stream_read(s, buf, sizeof buf / sizeof buf[0], -1);
        if (n > 0) {
            if (cb && cb(user, buf, (size_t)n)) {
                qtts_stream_cancel(s);
                set_err(err, es, "cancelled by the caller");
                rc = -1;
                break;
            }
            continue;
        }
        if (n == 0) {
            if (out) qtts_stream_result(s, out);
        } else {
            set_err(err, es, qtts_stream_error(s));
            rc = -1;
        }
        break;
    }
    qtts_stream_free(s);
    return rc;
}
