/* The engine thread's frame loop (continuous batching): admit waiting
 * requests (tokenize, build the prompt) -> one batched talker + code-predictor
 * step for all -> one batched decoder step for every request whose frames are
 * due (with two threads or more, possibly beside more LM steps: overlap_policy.h)
 * -> PCM into each request's stream. Requests join and leave at frame
 * boundaries; other jobs (voice extraction) run between frames. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "engine/decode_policy.h"
#include "engine/engine_internal.h"
#include "engine/overlap.h"
#include "engine/stream.h"
#include "gpu/gpu_decoder.h"
#include "gpu/gpu_lm.h"
#include "model/runaway_guard.h"
#include "text/norm_lang.h"
#include "text/normalize.h"
#include "text/stable_prefix.h"
#include "text/utf8.h"

static void on_frame(void *user, qtts_gen_request *r, int64_t frame, const int32_t *codes, int64_t n_codes) {
    (void)r;
    (void)frame;
    slot *s = user;
    if (s->out_of_memory) return;
    if (s->n_pending == s->cap_pending) {
        int64_t cap = s->cap_pending ? s->cap_pending * 2 : 8;
        int32_t *np = realloc(s->pending, (size_t)(cap * n_codes) * sizeof *np);
        if (!np) {
            s->out_of_memory = 1; /* frame_step fails the request after this step */
            return;
        }
        s->pending = np;
        s->cap_pending = cap;
    }
    memcpy(s->pending + s->n_pending * n_codes, codes, (size_t)n_codes * sizeof *codes);
    s->n_pending++;
}

/* The text-relative guard's frames per text token for r, or <= 0 when off. */
static double guard_ratio_of(const qtts_request *r) {
    double ratio = r->guard_frames_per_token;
    if (ratio == 0) ratio = r->max_frames > 0 ? -1 : QTTS_GUARD_FRAMES_PER_TOKEN; /* an explicit cap is the caller's */
    return ratio;
}

static void gen_params_of(const qtts_engine *e, const qtts_request *r, int64_t text_tokens, int exact_frames,
                          qtts_gen_params *p) {
    qtts_gen_params_from_config(p, &e->talker->gen);
    if (r->greedy) {
        p->talker.do_sample = 0;
        p->cp.do_sample = 0;
    }
    if (r->temperature > 0) p->talker.temperature = r->temperature;
    if (r->top_k > 0) p->talker.top_k = r->top_k;
    if (r->top_p > 0) p->talker.top_p = r->top_p;
    if (r->repetition_penalty > 0) p->repetition_penalty = r->repetition_penalty;
    if (r->cp_temperature > 0) p->cp.temperature = r->cp_temperature;
    if (r->cp_top_k > 0) p->cp.top_k = r->cp_top_k;
    if (r->cp_top_p > 0) p->cp.top_p = r->cp_top_p;
    if (r->max_frames > 0) p->max_frames = r->max_frames;
    double ratio = guard_ratio_of(r);
    p->guard_max_frames = ratio > 0 ? qtts_guard_frame_cap(text_tokens, ratio) : 0;
    p->guard_repetition = !r->no_repetition_guard;
    p->seed = r->seed;
    p->stream = 0; /* the seed alone keys a request's draws */
    if (exact_frames > 0) { /* end-of-speech masked until past the last frame, no guard */
        p->max_frames = exact_frames;
        p->min_new_tokens = (int64_t)exact_frames + 2;
        p->guard_max_frames = 0;
        p->guard_repetition = 0;
    }
}

/* ICL: the reference codes are decoded first (as the reference decodes
 * ref_code ++ codes) and their samples dropped. */
static int decode_reference(qtts_engine *e, qtts_pool *pool, slot *s, qtts_err *err) {
    int64_t nf = (int64_t)s->voice->n_frames;
    float *tmp = qtts_malloc((size_t)(nf * e->frame_samples) * sizeof *tmp, err);
    if (!tmp) return -1;
    const int32_t *codes = s->voice->codes;
    int rc = s->gdec ? qtts_gpu_decoder_step(e->gpu_dec, &s->gdec, &codes, &nf, 1, &tmp, err)
                     : qtts_codec_decode_feed(e->decoder, pool, s->dec, codes, nf, tmp, err);
    free(tmp);
    return rc;
}

/* Leading line breaks would merge with the template's "\n" token and shift
 * the positional slicing of the prompt (the text's ids are taken at fixed
 * offsets from the template's): leading whitespace, which carries no speech,
 * is skipped. */
static size_t leading_space(const char *t, size_t n) {
    size_t i = 0;
    while (i < n && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r')) i++;
    return i;
}

/* Builds the prompt from the target template's ids (text_ids), the decoder
 * stream, and joins the batch. */
static int slot_start_ids(qtts_engine *e, qtts_pool *pool, slot *s, const int32_t *text_ids, int n_text,
                          qtts_err *err) {
    int32_t *instr_ids = NULL, *ref_ids = NULL;
    int n_instr = 0, n_ref = 0, rc = -1;
    s->input_tokens = (int)qtts_prompt_text_tokens(n_text);
    if (s->instruct && *s->instruct &&
        qtts_tok_encode_template(e->tok, QTTS_TEMPLATE_INSTRUCT, s->instruct, &instr_ids, &n_instr, err))
        goto done;
    if (s->mode == QTTS_MODE_CLONE_ICL &&
        qtts_tok_encode_template(e->tok, QTTS_TEMPLATE_REF, s->voice->ref_text, &ref_ids, &n_ref, err))
        goto done;
    int icl = s->mode == QTTS_MODE_CLONE_ICL;
    qtts_prompt_spec spec = {
        .mode = s->mode,
        .text_ids = text_ids,
        .n_text_ids = n_text,
        .instruct_ids = instr_ids,
        .n_instruct_ids = n_instr,
        .ref_ids = ref_ids,
        .n_ref_ids = n_ref,
        .ref_codes = icl ? s->voice->codes : NULL,
        .n_ref_frames = icl ? (int64_t)s->voice->n_frames : 0,
        .xvector = s->voice ? s->voice->xvec : NULL,
        .speaker = s->speaker,
        .language = s->language,
        .non_streaming = s->req.layout == QTTS_LAYOUT_DEFAULT ? -1 : s->req.layout == QTTS_LAYOUT_NON_STREAMING,
    };
    qtts_gen_params p;
    gen_params_of(e, &s->req, s->input_tokens, s->exact_frames, &p);
    const double t0 = qtts_now_ms(), c0 = qtts_thread_cpu_ms();
    s->gen = qtts_gen_request_new(e->talker, pool, &spec, &p, err);
    if (!s->gen) goto done;
    engine_stage_add(&s->times.prompt, qtts_now_ms() - t0, qtts_thread_cpu_ms() - c0, 1);
    s->times.prompt_rows = qtts_gen_request_prompt_rows(s->gen);
    qtts_gen_request_set_callback(s->gen, on_frame, s);
    if (e->gpu_dec)
        s->gdec = qtts_gpu_dec_stream_new(e->gpu_dec, err);
    else
        s->dec = qtts_codec_stream_new(e->decoder, err);
    if ((!s->dec && !s->gdec) || (icl && decode_reference(e, pool, s, err)) || qtts_batch_add(e->batch, s->gen, err)) goto done;
    rc = 0;
done:
    free(instr_ids);
    free(ref_ids);
    return rc;
}

/* Tokenizes the whole text and starts (engine_submit refused whitespace-only text). */
static int slot_start(qtts_engine *e, qtts_pool *pool, slot *s, qtts_err *err) {
    int32_t *text_ids = NULL;
    int n_text = 0;
    const char *text = s->text + leading_space(s->text, strlen(s->text));
    int rc = qtts_tok_encode_template(e->tok, QTTS_TEMPLATE_TARGET, text, &text_ids, &n_text, err) ||
                     slot_start_ids(e, pool, s, text_ids, n_text, err)
                 ? -1
                 : 0;
    free(text_ids);
    return rc;
}

/* ---- incremental text (request.text_incomplete) ----
 * The engine thread pulls what the caller appended, tokenizes it up to the
 * last stable cut (text/stable_prefix.h: tokens before it never change) and
 * feeds those tokens to the talker's trailing text; the rest waits for more
 * text or the end. Spans between cuts are tokenized on their own, which is
 * exact because every cut is a pre-tokenizer boundary. */

/* The text front end on the appended text: what is final of its spoken
 * form (text/normalize.h: a number or markdown span split over pieces
 * waits until it is complete) becomes inc_text, which only grows. */
static int inc_normalize(slot *s, int mode, qtts_err *err) {
    size_t before = s->inc_raw_len;
    long n = stream_text_pull(s->stream, before, &s->inc_raw, &s->inc_raw_cap, &s->inc_closed);
    if (n < 0) return qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "out of memory");
    s->inc_raw_len = (size_t)n;
    if (s->inc_closed) {
        if (strlen(s->inc_raw) != s->inc_raw_len) return qtts_fail_as(err, QTTS_ERR_INVALID, "the input text has a NUL byte");
        if (!s->inc_raw[strspn(s->inc_raw, " \t\r\n\v\f")])
            return qtts_fail_as(err, QTTS_ERR_INVALID, "the input text is empty or only whitespace");
    }
    if (!s->inc_norm) {
        /* a language without text rules (a dialect): guessed from the text, as for a whole text */
        const char *lang = qtts_norm_lang_find(s->req.language) ? s->req.language : "auto";
        if (!(s->inc_norm = qtts_norm_stream_new(lang, (qtts_norm_mode)mode, err)))
            return qtts_fail_prefix(err, "normalizing the text");
        qtts_norm_stream_set_lexicon(s->inc_norm, s->req.lexicon);
        qtts_norm_stream_set_read_code(s->inc_norm, s->req.code_blocks == QTTS_CODE_BLOCKS_READ);
    }
    if ((s->inc_raw_len > before || s->inc_closed) &&
        qtts_norm_stream_feed(s->inc_norm, s->inc_raw + before, s->inc_raw_len - before, s->inc_closed, err))
        return qtts_fail_prefix(err, "normalizing the text");
    size_t len;
    const char *t = qtts_norm_stream_text(s->inc_norm, &len);
    if (len + 1 > s->inc_cap) {
        char *nb = realloc(s->inc_text, len + 1);
        if (!nb) return qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "out of memory");
        s->inc_text = nb, s->inc_cap = len + 1;
    }
    memcpy(s->inc_text + s->inc_len, t + s->inc_len, len - s->inc_len);
    s->inc_text[len] = 0;
    s->inc_len = len;
    if (s->inc_closed && !s->inc_text[strspn(s->inc_text, " \t\r\n")])
        return qtts_fail_as(err, QTTS_ERR_INVALID, "the input text has nothing to read once normalized (markup, "
                                                   "emoji or code only); set normalize to off to read it as it is");
    return 0;
}

/* Pulls appended text; then a closed text must be valid and non-empty. */
static int inc_pull(slot *s, qtts_err *err) {
    const int mode = qtts_norm_mode_of_request(s->req.normalize); /* checked at submit */
    if (mode != QTTS_NORM_OFF) return inc_normalize(s, mode, err);
    long n = stream_text_pull(s->stream, s->inc_len, &s->inc_text, &s->inc_cap, &s->inc_closed);
    if (n < 0) return qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "out of memory");
    s->inc_len = (size_t)n;
    if (!s->inc_closed) return 0;
    size_t bad = qtts_utf8_check(s->inc_text, s->inc_len);
    if (bad < s->inc_len)
        return qtts_fail_as(err, QTTS_ERR_INVALID, "the input text is not valid UTF-8 (at byte %zu)", bad);
    if (strlen(s->inc_text) != s->inc_len) return qtts_fail_as(err, QTTS_ERR_INVALID, "the input text has a NUL byte");
    if (!s->inc_text[strspn(s->inc_text, " \t\r\n\v\f")])
        return qtts_fail_as(err, QTTS_ERR_INVALID, "the input text is empty or only whitespace");
    return 0;
}

static void inc_update_guard(slot *s) {
    double ratio = guard_ratio_of(&s->req);
    if (ratio > 0) qtts_gen_request_set_guard_cap(s->gen, qtts_guard_frame_cap(s->inc_fed_tokens, ratio));
    s->input_tokens = s->inc_fed_tokens;
}

/* Feeds the tokens of text[inc_fed_bytes .. end) to a started request. */
static int inc_feed_span(qtts_engine *e, qtts_pool *pool, slot *s, size_t end, qtts_err *err) {
    if (end <= s->inc_fed_bytes) return 0;
    int32_t *ids = NULL;
    int n = 0;
    int rc = qtts_tok_encode(e->tok, s->inc_text + s->inc_fed_bytes, end - s->inc_fed_bytes, &ids, &n, err) ||
                     qtts_gen_request_append_text(s->gen, pool, ids, n, err)
                 ? -1
                 : 0;
    free(ids);
    if (rc) return -1;
    s->inc_fed_bytes = end;
    s->inc_fed_tokens += n;
    inc_update_guard(s);
    return 0;
}

/* Not started yet: starts once the first word is stable (or the text is
 * complete: then exactly as a whole-text request in the streaming layout).
 * Returns 1 started, 0 still waiting, -1 failed. */
static int inc_try_start(qtts_engine *e, qtts_pool *pool, slot *s, qtts_err *err) {
    if (inc_pull(s, err)) return -1;
    s->req.layout = QTTS_LAYOUT_STREAMING;
    if (s->inc_closed) {
        if (!(s->text = strdup(s->inc_text))) return qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "out of memory");
        s->incremental = 0; /* all of it is here: the ordinary path */
        return slot_start(e, pool, s, err) ? -1 : 1;
    }
    if (s->mode == QTTS_MODE_CLONE_ICL) return 0; /* its prompt block takes the whole text (spec 5.5) */
    size_t lead = leading_space(s->inc_text, s->inc_len);
    size_t cut = lead + qtts_tok_stable_prefix(s->inc_text + lead, s->inc_len - lead);
    if (cut == lead) return 0;
    /* the target template's fixed prefix and suffix around the stable tokens */
    int32_t *tmpl = NULL, *span = NULL, *ids = NULL;
    int n_tmpl = 0, n_span = 0, rc = -1;
    if (qtts_tok_encode_template(e->tok, QTTS_TEMPLATE_TARGET, "x", &tmpl, &n_tmpl, err) ||
        qtts_tok_encode(e->tok, s->inc_text + lead, cut - lead, &span, &n_span, err))
        goto done;
    if (!(ids = qtts_malloc((size_t)(n_span + n_tmpl) * sizeof *ids, err))) goto done;
    int64_t n_ids = qtts_prompt_wrap_text(tmpl, n_tmpl, span, n_span, ids);
    if (n_ids < 0 || n_span < 1) {
        qtts_fail(err, "incremental text: unexpected template tokenization");
        goto done;
    }
    if (slot_start_ids(e, pool, s, ids, (int)n_ids, err) || qtts_gen_request_open_text(s->gen, err)) goto done;
    s->inc_fed_bytes = cut;
    s->inc_fed_tokens = n_span;
    inc_update_guard(s);
    rc = 1;
done:
    free(tmpl);
    free(span);
    free(ids);
    return rc;
}

/* A started request: feeds what became stable, and everything at the end. */
static int inc_feed(qtts_engine *e, qtts_pool *pool, slot *s, qtts_err *err) {
    if (inc_pull(s, err)) return -1;
    if (s->inc_closed) {
        if (inc_feed_span(e, pool, s, s->inc_len, err) || qtts_gen_request_close_text(s->gen, err)) return -1;
        s->incremental = 0; /* nothing more to feed */
        return 0;
    }
    return inc_feed_span(e, pool, s, qtts_tok_stable_prefix(s->inc_text, s->inc_len), err);
}

static void keep_codes(qtts_engine *e, slot *s, int n_frames) {
    int64_t g = e->talker->cfg.num_code_groups;
    int32_t *copy = malloc((size_t)(n_frames * g) * sizeof *copy);
    if (!copy) return; /* qtts_stream_codes then returns NULL, as documented for "not kept" */
    memcpy(copy, qtts_gen_request_codes(s->gen), (size_t)(n_frames * g) * sizeof *copy);
    stream_set_codes(s->stream, copy, (size_t)n_frames, (int)g);
}

/* Ends a request's stream: its result on success, else the error. */
static void slot_finish(qtts_engine *e, slot *s, const qtts_err *error) {
    qtts_result r = {0};
    r.seed = s->req.seed;
    r.n_frames = (int)(s->gen ? qtts_gen_request_n_frames(s->gen) : 0);
    r.input_tokens = s->input_tokens;
    r.audio_seconds = (double)s->samples_out / e->sample_rate;
    r.queue_ms = s->t_start - s->t_submit;
    r.first_audio_ms = s->t_first_audio > 0 ? s->t_first_audio - s->t_submit : 0;
    r.total_ms = qtts_now_ms() - s->t_submit;
    r.prefill_ms = s->prefill_ms;
    r.talker_ms = s->talker_ms;
    r.code_predictor_ms = s->cp_ms;
    r.decoder_ms = s->decoder_ms;
    switch (s->gen ? qtts_gen_request_stop_reason(s->gen) : QTTS_STOP_MAX_FRAMES) {
    case QTTS_STOP_EOS: r.finished_by = QTTS_FINISHED_EOS; break;
    case QTTS_STOP_GUARD_LENGTH: r.finished_by = QTTS_FINISHED_GUARD, r.guard = QTTS_GUARD_LENGTH; break;
    case QTTS_STOP_GUARD_REPETITION: r.finished_by = QTTS_FINISHED_GUARD, r.guard = QTTS_GUARD_REPETITION; break;
    default: r.finished_by = QTTS_FINISHED_MAX_FRAMES; break;
    }
    r.finished_by_eos = r.finished_by == QTTS_FINISHED_EOS;
    r.decoder_steps = (int)s->times.decoder_steps;
    r.overlapped_decoder_steps = (int)s->times.overlapped_decoder_steps;
    s->times.cpu_ms = qtts_thread_cpu_ms() - s->cpu_start;
    if (error) {
        if (error->status == QTTS_ERR_CANCELLED) atomic_fetch_add(&e->n_cancelled, 1);
        else atomic_fetch_add(&e->n_failed, 1);
        stream_fail(s->stream, error->status ? error->status : QTTS_ERR_INTERNAL, error->msg);
        return;
    }
    if (s->req.keep_codes && s->gen && r.n_frames > 0) keep_codes(e, s, r.n_frames);
    if (e->verbose) /* the schedule it ran, as qtts bench reports it */
        fprintf(stderr, "qtts: request done: %d frames, %d decoder steps, %d beside LM steps, %s\n", r.n_frames,
                r.decoder_steps, r.overlapped_decoder_steps, qtts_finish_reason_name(r.finished_by));
    /* counted before the reader can see the end, so stats read after it include this request */
    atomic_fetch_add(&e->n_done, 1);
    if (s->gen && qtts_gen_request_on_device(s->gen)) atomic_fetch_add(&e->n_on_device, 1);
    atomic_fetch_add(r.finished_by == QTTS_FINISHED_EOS          ? &e->n_eos
                     : r.finished_by == QTTS_FINISHED_MAX_FRAMES ? &e->n_max_frames
                     : r.guard == QTTS_GUARD_LENGTH              ? &e->n_guard_length
                                                                 : &e->n_guard_repetition,
                     1);
    stream_finish(s->stream, &r, &s->times);
}

static void unlink_slot(qtts_engine *e, slot *s) {
    for (slot **pp = &e->active; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    s->next = NULL;
}

/* Finishes an active request (error NULL: success) and frees it. */
static void slot_retire(qtts_engine *e, slot *s, const qtts_err *error) {
    slot_finish(e, s, error);
    qtts_gpu_dec_stream_free(s->gdec); /* device memory: freed here, on the engine thread */
    s->gdec = NULL;
    unlink_slot(e, s);
    pthread_mutex_lock(&e->mu);
    e->n_active--;
    pthread_mutex_unlock(&e->mu);
    slot_free(s);
}

/* Where the device decoder finds s's pending frames and the `frames` - n_pending made after them in the
 * device LM's code ring, or slot -1 where the host writes them: the ring keeps a device request's last
 * QTTS_GPU_CODE_RING_ROWS - 1 frames, and its pending frames are its latest ones (on_frame keeps each frame,
 * or the request fails). */
static qtts_gpu_ring_at ring_at(const qtts_engine *e, const slot *s, int64_t frames) {
    const int dev_slot = s->gen ? qtts_gen_request_device_slot(s->gen) : -1;
    if (!e->code_ring || dev_slot < 0 || s->out_of_memory || frames >= QTTS_GPU_CODE_RING_ROWS)
        return (qtts_gpu_ring_at){-1, 0};
    return (qtts_gpu_ring_at){dev_slot, qtts_gen_request_n_frames(s->gen) - s->n_pending};
}

/* Moves the due requests' frames into one batched decoder call: their
 * pending frames, or (swap) the pending buffer itself, swapped with the
 * request's second buffer so that LM steps running beside the decoder
 * (overlap) append to an empty one. Returns the number of streams. */
static int gather_due(qtts_engine *e, int swap, qtts_err *err) {
    int i = 0;
    for (slot *s = e->active; s; s = s->next) {
        if (!s->decode_now) continue;
        int64_t need = s->n_pending * e->frame_samples;
        if (need > s->cap_pcm) {
            float *np = realloc(s->pcm, (size_t)need * sizeof *np);
            if (!np) return qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "out of memory");
            s->pcm = np;
            s->cap_pcm = need;
        }
        e->scratch_streams[i] = s->dec;
        e->scratch_gstreams[i] = s->gdec;
        e->scratch_at[i] = ring_at(e, s, s->n_pending);
        e->scratch_nf[i] = s->n_pending;
        e->scratch_out[i] = s->pcm;
        e->scratch_slots[i] = s;
        if (swap) {
            int32_t *codes = s->pending;
            int64_t cap = s->cap_pending;
            s->pending = s->decoding;
            s->cap_pending = s->cap_decoding;
            s->decoding = codes;
            s->cap_decoding = cap;
            s->n_pending = 0;
            e->scratch_codes[i] = codes;
        } else {
            e->scratch_codes[i] = s->pending;
        }
        i++;
    }
    return i;
}

/* Hands the decoded audio of the n gathered streams to their listeners;
 * each gets its share of the step's time (swapped: an overlapped step). */
static int deliver(qtts_engine *e, int n, int swapped, double decoder_ms, double decoder_cpu_ms, qtts_err *err) {
    for (int i = 0; i < n; i++) {
        slot *s = e->scratch_slots[i];
        int64_t count = e->scratch_nf[i] * e->frame_samples;
        s->decoder_ms += decoder_ms / n;
        engine_stage_add(s->samples_out ? &s->times.decoder : &s->times.first_decode, decoder_ms / n,
                         decoder_cpu_ms / n, e->scratch_nf[i]);
        s->times.decoder_steps++;
        s->times.overlapped_decoder_steps += swapped;
        if (!swapped) s->n_pending = 0;
        if (count > 0) {
            if (stream_push(s->stream, s->pcm, (size_t)count))
                return qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "out of memory");
            if (s->t_first_audio == 0) {
                s->t_first_audio = qtts_now_ms();
                s->times.first_audio_cpu_ms = qtts_thread_cpu_ms() - s->cpu_start;
            }
            s->samples_out += count;
        }
    }
    return 0;
}

/* The device frame's own decoder step: each request the frame steps whose
 * decode is due counting the frame it makes decodes its pending frames and
 * that one in the same submission, reading them from the code ring where the
 * frame leaves them (no second submission, no wait for the codes to come
 * back). NULL when none is due. */
static struct qtts_gpu_seq *frame_decode_before(void *ctx, qtts_gen_request *const *reqs, int n_reqs, qtts_err *err) {
    qtts_engine *e = ctx;
    const double now = qtts_now_ms();
    int n = 0;
    e->fused_n = 0;
    for (slot *s = e->active; s; s = s->next) {
        int stepped = 0;
        for (int k = 0; k < n_reqs && !stepped; k++) stepped = reqs[k] == s->gen;
        const int64_t nf = s->n_pending + 1; /* and the frame made now */
        const qtts_gpu_ring_at at = ring_at(e, s, nf);
        if (!stepped || !s->gdec || at.slot < 0 || nf > QTTS_GPU_DEC_STAGE_FRAMES ||
            !qtts_decode_due(nf, 0, s->samples_out, e->frame_samples, e->sample_rate, s->t_start, s->t_first_audio,
                             now))
            continue;
        if (nf * e->frame_samples > s->cap_pcm) {
            float *np = realloc(s->pcm, (size_t)(nf * e->frame_samples) * sizeof *np);
            if (!np) {
                qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "out of memory");
                return NULL;
            }
            s->pcm = np;
            s->cap_pcm = nf * e->frame_samples;
        }
        e->scratch_gstreams[n] = s->gdec;
        e->scratch_codes[n] = NULL;
        e->scratch_at[n] = at;
        e->scratch_nf[n] = nf;
        e->scratch_out[n] = s->pcm;
        e->scratch_slots[n] = s;
        n++;
    }
    if (!n) return NULL;
    struct qtts_gpu_seq *q = qtts_gpu_decoder_stage(e->gpu_dec, e->scratch_gstreams, e->scratch_codes, e->scratch_at,
                                                    e->scratch_nf, n, err);
    if (q) e->fused_n = n;
    return q;
}

/* After the frame's submission: the staged decoder step's samples go to
 * their listeners (its time is inside the frame's). */
static int frame_decode_after(void *ctx, int ran, qtts_err *err) {
    qtts_engine *e = ctx;
    const int n = e->fused_n;
    e->fused_n = 0;
    if (!ran || !n) return 0; /* a failed step fails its requests */
    qtts_gpu_decoder_collect(e->gpu_dec, e->scratch_gstreams, e->scratch_nf, n, e->scratch_out);
    for (int i = 0; i < n; i++) atomic_fetch_add(&e->n_ring_frames, (uint_fast64_t)e->scratch_nf[i]);
    atomic_fetch_add(&e->n_fused_steps, (uint_fast64_t)n);
    return deliver(e, n, 0, 0.0, 0.0, err);
}

void engine_attach_frame_decode(qtts_engine *e) {
    const qtts_batch_frame_hook hook = {frame_decode_before, frame_decode_after, e};
    qtts_batch_set_frame_hook(e->batch, e->code_ring ? &hook : NULL);
}

/* Shares the stage times of one batch step among the requests in it. */
static void account_step(qtts_engine *e, const qtts_batch_timing *tm0, const qtts_batch_timing *tm1,
                         int64_t frames_before) {
    double d_prefill = (double)(tm1->prefill.wall_ns - tm0->prefill.wall_ns) / 1e6;
    double d_cp = (double)(tm1->cp.wall_ns - tm0->cp.wall_ns) / 1e6;
    double d_talker = (double)(tm1->talker.wall_ns - tm0->talker.wall_ns) / 1e6;
    double c_prefill = (double)(tm1->prefill.cpu_ns - tm0->prefill.cpu_ns) / 1e6;
    double c_cp = (double)(tm1->cp.cpu_ns - tm0->cp.cpu_ns) / 1e6;
    double c_talker = (double)(tm1->talker.cpu_ns - tm0->talker.cpu_ns) / 1e6;
    int n_active = 0, n_new = 0;
    for (slot *s = e->active; s; s = s->next) {
        if (!s->gen) continue; /* incremental text: not started */
        n_active++;
        n_new += !s->prefilled;
    }
    int64_t frames_after = 0;
    for (slot *s = e->active; s; s = s->next) {
        if (!s->gen) continue;
        if (!s->prefilled) {
            s->prefill_ms += d_prefill / n_new;
            engine_stage_add(&s->times.prefill, d_prefill / n_new, c_prefill / n_new, 1);
            s->prefilled = 1;
        } else {
            const int n_old = n_active - n_new;
            s->cp_ms += d_cp / n_old;
            s->talker_ms += d_talker / n_old;
            engine_stage_add(&s->times.cp, d_cp / n_old, c_cp / n_old, 1);
            engine_stage_add(&s->times.talker, d_talker / n_old, c_talker / n_old, 1);
        }
        frames_after += qtts_gen_request_n_frames(s->gen);
    }
    atomic_fetch_add(&e->n_frames, (uint64_t)(frames_after - frames_before));
    e->cycle_frames += frames_after - frames_before;
    if (n_new) e->cycle_clean = 0;
}

/* One batched talker + code-predictor step for every active request. */
static int lm_step(qtts_engine *e, qtts_pool *pool, qtts_err *err) {
    qtts_batch_timing tm0, tm1;
    qtts_batch_get_timing(e->batch, &tm0);
    int64_t frames_before = 0; /* the frames made so far: the step's frames may be decoded within it */
    for (slot *s = e->active; s; s = s->next) frames_before += s->gen ? qtts_gen_request_n_frames(s->gen) : 0;
    int left = qtts_batch_step(e->batch, pool, err);
    qtts_batch_get_timing(e->batch, &tm1);
    account_step(e, &tm0, &tm1, frames_before);
    return left;
}

/* A request the LM steps beside an overlapped decoder step must not outrun:
 * one that ended, failed to keep a frame or was cancelled is retired first. */
static int lm_should_pause(const qtts_engine *e) {
    if (atomic_load(&e->stopping)) return 1;
    for (const slot *s = e->active; s; s = s->next)
        if (s->out_of_memory || atomic_load(&s->stream->cancelled) || (s->gen && qtts_gen_request_finished(s->gen)))
            return 1;
    return 0;
}

/* Overlap needs two pool threads or more, started requests only, and no
 * first decode (time to first audio gets both threads) or last one among
 * the due requests; incremental-text requests keep their per-step feeding. */
static int overlap_possible(const qtts_engine *e, const qtts_pool *pool) {
    /* the device decoder is the engine thread's alone: never beside LM steps on another thread */
    if (e->overlap_mode == QTTS_OVERLAP_NEVER || qtts_pool_size(pool) < 2 || e->gpu_dec) return 0;
    for (const slot *s = e->active; s; s = s->next) {
        if (!s->gen || s->incremental || qtts_gen_request_finished(s->gen)) return 0;
        if (s->decode_now && s->samples_out == 0) return 0;
    }
    return 1;
}

static int lm_step_cb(void *e, qtts_pool *lane, qtts_err *err) { return lm_step(e, lane, err); }
static int lm_pause_cb(void *e) { return lm_should_pause(e); }

/* Decodes the due requests' pending frames in one batched step: on the
 * whole pool, or beside LM steps (see overlap_policy.h). */
static int decode_pending(qtts_engine *e, qtts_pool *pool, qtts_err *err) {
    int n = 0;
    const double now = qtts_now_ms();
    for (slot *s = e->active; s; s = s->next) {
        if (!s->gen) continue; /* incremental text: not started */
        /* a request waiting for text flushes: its listener should hear all there is */
        int flush = qtts_gen_request_finished(s->gen) || qtts_gen_request_waiting_text(s->gen);
        s->decode_now = qtts_decode_due(s->n_pending, flush, s->samples_out,
                                        e->frame_samples, e->sample_rate, s->t_start, s->t_first_audio, now);
        n += s->decode_now;
    }
    if (!n) return 0;
    const int possible = overlap_possible(e, pool);
    const int overlap = possible && (e->overlap_mode == QTTS_OVERLAP_ALWAYS || qtts_overlap_choose(&e->overlap));
    if (gather_due(e, overlap, err) < 0) return -1;
    double dec_ms, dec_cpu_ms;
    if (overlap) { /* the LM steps append new frames to the emptied pending buffers */
        qtts_overlap_step ov = {.dec = e->decoder,
                                .streams = e->scratch_streams,
                                .codes = e->scratch_codes,
                                .n_frames = e->scratch_nf,
                                .n = n,
                                .out = e->scratch_out,
                                .lm_step = lm_step_cb,
                                .lm_pause = lm_pause_cb,
                                .lm_ctx = e};
        if (qtts_overlap_run(pool, &ov, err)) return -1;
        dec_ms = dec_cpu_ms = ov.decoder_ms; /* on one thread while another runs the LM: its wall time */
    } else {
        double t0 = qtts_now_ms(), c0 = qtts_thread_cpu_ms();
        if (e->gpu_dec ? qtts_gpu_decoder_step_from(e->gpu_dec, e->scratch_gstreams, e->scratch_codes, e->scratch_at,
                                                    e->scratch_nf, n, e->scratch_out, err)
                       : qtts_codec_decode_step_batch(e->decoder, pool, e->scratch_streams, e->scratch_codes,
                                                      e->scratch_nf, n, e->scratch_out, err))
            return -1;
        for (int i = 0; e->gpu_dec && i < n; i++)
            if (e->scratch_at[i].slot >= 0) atomic_fetch_add(&e->n_ring_frames, (uint_fast64_t)e->scratch_nf[i]);
        dec_ms = qtts_now_ms() - t0;
        dec_cpu_ms = qtts_thread_cpu_ms() - c0;
    }
    if (deliver(e, n, overlap, dec_ms, dec_cpu_ms, err)) return -1;
    /* a decode cycle ends here: from the last decoder step to this one, per frame generated */
    const double end = qtts_now_ms();
    if (possible && e->overlap_mode == QTTS_OVERLAP_AUTO && e->cycle_clean && e->cycle_frames > 0 && e->cycle_t0 > 0)
        qtts_overlap_record(&e->overlap, overlap, (end - e->cycle_t0) / (double)e->cycle_frames);
    e->cycle_t0 = end;
    e->cycle_frames = 0;
    e->cycle_clean = 1;
    /* requests that ended during the LM steps beside it flush their last frames now, on the whole pool (the
       engine retires ended requests after this step; with one of them active, overlap is not possible) */
    if (overlap)
        for (slot *s = e->active; s; s = s->next)
            if (s->gen && s->n_pending && qtts_gen_request_finished(s->gen)) return decode_pending(e, pool, err);
    return 0;
}

/* Moves waiting requests into the batch while slots are free. */
static void admit(qtts_engine *e, qtts_pool *pool) {
    for (;;) {
        pthread_mutex_lock(&e->mu);
        slot *s = NULL;
        if (e->n_active < e->max_batch && e->wait_head && !e->held) {
            s = e->wait_head;
            e->wait_head = s->next;
            if (!e->wait_head) e->wait_tail = NULL;
            e->n_waiting--;
            e->n_active++;
        }
        pthread_mutex_unlock(&e->mu);
        if (!s) return;
        s->next = e->active;
        e->active = s;
        s->t_start = qtts_now_ms();
        s->cpu_start = qtts_thread_cpu_ms();
        qtts_err err = {0};
        if (atomic_load(&s->stream->cancelled)) {
            qtts_fail_as(&err, QTTS_ERR_CANCELLED, "cancelled");
            slot_retire(e, s, &err);
        } else if (s->incremental ? inc_try_start(e, pool, s, &err) < 0 : slot_start(e, pool, s, &err) != 0) {
            slot_retire(e, s, &err);
        } else {
            stream_set_running(s->stream);
        }
    }
}

/* Cancellations (and shutdown) take effect at frame boundaries. */
static void retire_cancelled(qtts_engine *e) {
    qtts_err cancelled = {0};
    qtts_fail_as(&cancelled, QTTS_ERR_CANCELLED, "cancelled");
    for (slot *s = e->active, *next; s; s = next) {
        next = s->next;
        if (!atomic_load(&s->stream->cancelled) && !atomic_load(&e->stopping)) continue;
        if (s->gen) qtts_batch_remove(e->batch, s->gen);
        slot_retire(e, s, &cancelled);
    }
}

/* Starts and feeds the incremental-text requests; returns how many active
 * requests can make progress this step (the others wait for text). */
static int feed_incremental(qtts_engine *e, qtts_pool *pool) {
    int runnable = 0;
    for (slot *s = e->active, *next; s; s = next) {
        next = s->next;
        qtts_err err = {0};
        int rc = 0;
        if (s->incremental) rc = s->gen ? inc_feed(e, pool, s, &err) : inc_try_start(e, pool, s, &err);
        if (rc < 0) {
            if (s->gen) qtts_batch_remove(e->batch, s->gen);
            slot_retire(e, s, &err);
            continue;
        }
        if (s->gen && (!qtts_gen_request_waiting_text(s->gen) || s->n_pending || qtts_gen_request_finished(s->gen)))
            runnable++;
    }
    return runnable;
}

int engine_frame_loop(qtts_pool *pool, void *ctx) {
    qtts_engine *e = ctx;
    admit(e, pool);
    retire_cancelled(e);
    int runnable = feed_incremental(e, pool);
    if (!e->active || !runnable) {
        pthread_mutex_lock(&e->mu);
        int more = e->wait_head != NULL && e->n_active < e->max_batch && !e->held;
        pthread_mutex_unlock(&e->mu);
        return more; /* 0: sleep until a job, a request or text arrives (qtts_exec_wake) */
    }
    qtts_err err = {0};
    int left = lm_step(e, pool, &err);
    int failed = left < 0 || decode_pending(e, pool, &err) != 0;

    qtts_err oom = {0};
    qtts_fail_as(&oom, QTTS_ERR_NO_MEMORY, "out of memory keeping a generated frame");
    for (slot *s = e->active, *next; s; s = next) {
        next = s->next;
        if (failed) {
            slot_retire(e, s, &err);
        } else if (s->gen && (s->out_of_memory || qtts_gen_request_finished(s->gen))) {
            qtts_batch_remove(e->batch, s->gen);
            slot_retire(e, s, s->out_of_memory ? &oom : NULL);
        }
    }
    return 1;
}

void engine_drain(qtts_pool *pool, void *ctx) {
    qtts_engine *e = ctx;
    /* e->stopping makes the frame loop cancel every active request */
    while (e->active) engine_frame_loop(pool, e);
}
