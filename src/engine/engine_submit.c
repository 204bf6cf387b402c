/* Request threads: validate a request, copy it and queue it for the engine
 * thread. Nothing here computes; names and combinations are checked now so
 * the caller gets a clear error before anything is queued (token ids and the
 * prompt are built on the engine thread). */
#include <fcntl.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/sampling_ranges.h"
#include "engine/engine_internal.h"
#include "engine/stream.h"
#include "text/lexicon.h"
#include "text/norm_lang.h"
#include "text/normalize.h"
#include "text/utf8.h"

void slot_free(slot *s) {
    if (!s) return;
    if (s->gen) qtts_gen_request_free(s->gen);
    if (s->dec) qtts_codec_stream_free(s->dec);
    if (s->voice) qtts_voice_release(s->voice);
    free(s->text);
    free(s->language);
    free(s->speaker);
    free(s->instruct);
    free(s->pending);
    free(s->decoding);
    free(s->pcm);
    free(s->inc_text);
    free(s->inc_raw);
    qtts_lexicon_release(s->lexicon);
    qtts_norm_stream_free(s->inc_norm);
    if (s->stream) stream_release(s->stream);
    free(s);
}

static char *dup_or_null(const char *s, int *oom) {
    if (!s) return NULL;
    char *d = strdup(s);
    if (!d) *oom = 1;
    return d;
}

static uint64_t random_seed(void) {
    uint64_t s = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read(fd, &s, sizeof s) != (ssize_t)sizeof s) s = 0;
        close(fd);
    }
    if (!s) s = (uint64_t)qtts_now_ms() * 6364136223846793005ull + (uint64_t)getpid();
    return s & QTTS_SEED_EXACT_MAX; /* reported in JSON: exact as a number in every client */
}

/* Mode of a request on this model. */
static int request_mode(const qtts_engine *e, const qtts_request *r, qtts_mode *mode, qtts_err *err) {
    switch (e->talker->cfg.variant) {
    case QTTS_VARIANT_CUSTOM_VOICE:
        if (r->voice)
            return qtts_fail_as(err, QTTS_ERR_INVALID,
                                "this CustomVoice model has built-in speakers only; cloned voices need a Base model");
        *mode = QTTS_MODE_CUSTOM_VOICE;
        return 0;
    case QTTS_VARIANT_VOICE_DESIGN:
        if (r->voice)
            return qtts_fail_as(err, QTTS_ERR_INVALID, "this VoiceDesign model designs voices from --instruct; cloned "
                                                       "voices need a Base model");
        *mode = QTTS_MODE_VOICE_DESIGN;
        return 0;
    case QTTS_VARIANT_BASE:
        if (!r->voice)
            return qtts_fail_as(err, QTTS_ERR_INVALID,
                                "this Base model clones a voice: give reference audio (or a registered voice)");
        /* A voice without codes or transcript clones from its x-vector alone. */
        *mode = r->x_vector_only || !r->voice->codes || !r->voice->n_frames || !r->voice->ref_text
                    ? QTTS_MODE_CLONE_XVEC
                    : QTTS_MODE_CLONE_ICL;
        return 0;
    }
    return qtts_fail_as(err, QTTS_ERR_INTERNAL, "unknown model variant");
}

static int check_voice_options(const qtts_engine *e, const qtts_request *r, qtts_mode mode, qtts_err *err) {
    const qtts_model_config *c = &e->talker->cfg;
    if (mode == QTTS_MODE_CUSTOM_VOICE) {
        if (!r->speaker || !*r->speaker)
            return qtts_fail_as(err, QTTS_ERR_INVALID, "this CustomVoice model needs a speaker (valid: %s)",
                                e->speaker_list);
        if (!qtts_config_speaker(c, r->speaker))
            return qtts_fail_as(err, QTTS_ERR_INVALID, "unknown speaker \"%s\" (valid: %s)", r->speaker,
                                e->speaker_list);
    } else if (r->speaker && *r->speaker) {
        return qtts_fail_as(err, QTTS_ERR_INVALID, "this %s model has no built-in speakers",
                            qtts_variant_name(c->variant));
    }
    if (mode == QTTS_MODE_VOICE_DESIGN && (!r->instruct || !*r->instruct))
        return qtts_fail_as(err, QTTS_ERR_INVALID,
                            "this VoiceDesign model needs an instruction describing the voice (instruct)");
    if ((mode == QTTS_MODE_CLONE_XVEC || mode == QTTS_MODE_CLONE_ICL) && r->instruct && *r->instruct)
        return qtts_fail_as(err, QTTS_ERR_INVALID, "instructions are not supported when cloning a voice (Base models)");
    if (r->language && *r->language && strcasecmp(r->language, "auto") != 0) {
        const qtts_named_id *l = qtts_config_language(c, r->language);
        if (!l || strstr(l->name, "dialect"))
            return qtts_fail_as(err, QTTS_ERR_INVALID, "unknown language \"%s\" (valid: %s)", r->language,
                                e->language_list);
    }
    return 0;
}

/* Every string of the request is UTF-8: refused here, before it is queued
 * (incremental text is checked once complete: a piece may end inside a
 * character). */
static int check_utf8(const qtts_request *r, qtts_err *err) {
    const struct {
        const char *what, *s;
    } fields[] = {{"input text", r->text_incomplete ? NULL : r->text},
                  {"language", r->language},
                  {"speaker", r->speaker},
                  {"instruction", r->instruct}};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        if (!fields[i].s) continue;
        size_t len = strlen(fields[i].s), bad = qtts_utf8_check(fields[i].s, len);
        if (bad < len)
            return qtts_fail_as(err, QTTS_ERR_INVALID, "the %s is not valid UTF-8 (at byte %zu)", fields[i].what, bad);
    }
    return 0;
}

static int check_request(const qtts_engine *e, const qtts_request *r, qtts_mode *mode, qtts_err *err) {
    if (!r) return qtts_fail_as(err, QTTS_ERR_INVALID, "no request");
    if (r->text_incomplete) { /* the text comes later: emptiness is checked when it is complete */
        if (r->layout == QTTS_LAYOUT_NON_STREAMING)
            return qtts_fail_as(err, QTTS_ERR_INVALID,
                                "incremental text needs the streaming text layout (the non-streaming one reads the "
                                "whole text before the first frame)");
    } else if (!r->text || !*r->text) {
        return qtts_fail_as(err, QTTS_ERR_INVALID, "the input text is empty");
    } else if (!r->text[strspn(r->text, " \t\r\n\v\f")]) {
        return qtts_fail_as(err, QTTS_ERR_INVALID, "the input text is only whitespace");
    }
    if (check_utf8(r, err) || request_mode(e, r, mode, err) || check_voice_options(e, r, *mode, err)) return -1;
    if (r->text && strlen(r->text) > QTTS_MAX_TEXT_BYTES)
        return qtts_fail_as(err, QTTS_ERR_INVALID, "the input text is longer than %d bytes; split it",
                            QTTS_MAX_TEXT_BYTES);
    if (r->max_frames < 0 || r->temperature < 0 || r->top_p < 0 || r->top_p > 1 || r->top_k < 0 ||
        r->repetition_penalty < 0 || r->cp_temperature < 0 || r->cp_top_p < 0 || r->cp_top_p > 1 || r->cp_top_k < 0)
        return qtts_fail_as(err, QTTS_ERR_INVALID, "sampling parameters out of range");
    if (isnan(r->guard_frames_per_token) || r->guard_frames_per_token > 1000)
        return qtts_fail_as(err, QTTS_ERR_INVALID, "guard_frames_per_token must be a number <= 1000 (<= 0: auto/off)");
    return 0;
}

/* The text front end on the engine's copy of the text (byte work on the
 * caller's thread, like validation). */
static int normalize_text(const qtts_request *r, const qtts_lexicon *lexicon, char **text, qtts_err *err) {
    const int mode = qtts_norm_mode_of_request(r->normalize);
    if (mode < 0)
        return qtts_fail_as(err, QTTS_ERR_INVALID, "normalize must be a qtts_normalize_mode (0-3), not %d",
                            r->normalize);
    if (r->code_blocks != QTTS_CODE_BLOCKS_SKIP && r->code_blocks != QTTS_CODE_BLOCKS_READ)
        return qtts_fail_as(err, QTTS_ERR_INVALID, "code_blocks must be QTTS_CODE_BLOCKS_SKIP or _READ, not %d",
                            r->code_blocks);
    if (mode == QTTS_NORM_OFF) return 0;
    /* a language without text rules (a dialect): guessed from the text */
    const char *lang = qtts_norm_lang_find(r->language) ? r->language : "auto";
    qtts_norm_opts o = {.lexicon = lexicon, .read_code = r->code_blocks == QTTS_CODE_BLOCKS_READ};
    char *out = qtts_text_normalize_opts(*text, strlen(*text), lang, (qtts_norm_mode)mode, &o, NULL, err);
    if (!out) return qtts_fail_prefix(err, "normalizing the text");
    if (!out[strspn(out, " \t\r\n")]) {
        free(out);
        return qtts_fail_as(err, QTTS_ERR_INVALID, "the input text has nothing to read once normalized (markup, "
                                                   "emoji or code only); set normalize to off to read it as it is");
    }
    free(*text);
    *text = out;
    return 0;
}

/* The engine's own copy of the request (strings and a voice reference). */
static slot *slot_from_request(const qtts_request *r, qtts_mode mode, qtts_err *err) {
    slot *s = calloc(1, sizeof *s);
    int oom = !s;
    if (s) {
        s->req = *r;
        /* a registered voice's own entries over the request's */
        const qtts_lexicon *own = r->voice ? r->voice->lexicon : NULL;
        s->lexicon = own ? qtts_lexicon_merge(own, r->lexicon, err) : qtts_lexicon_retain((qtts_lexicon *)r->lexicon);
        s->req.lexicon = s->lexicon;
        if (own && !s->lexicon) {
            slot_free(s);
            return NULL;
        }
        s->text = r->text_incomplete ? NULL : dup_or_null(r->text, &oom); /* incremental: in the stream */
        if (s->text && normalize_text(r, s->lexicon, &s->text, err)) {
            slot_free(s);
            return NULL;
        }
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
        if (s->stream && r->text_incomplete) {
            s->stream->text_incremental = 1;
            s->stream->text_max = QTTS_MAX_TEXT_BYTES;
            s->incremental = 1;
            if (r->text && *r->text && qtts_stream_append_text(s->stream, r->text, strlen(r->text), 0, NULL))
                oom = 1;
        }
    }
    if (oom) {
        slot_free(s);
        qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "out of memory");
        return NULL;
    }
    if (!r->has_seed) s->req.seed = random_seed();
    s->req.has_seed = 1;
    s->mode = mode;
    s->t_submit = qtts_now_ms();
    return s;
}

qtts_stream *engine_submit(qtts_engine *e, const qtts_request *r, qtts_err *err) {
    const engine_request_options none = {0};
    return engine_submit_with(e, r, &none, err);
}

qtts_stream *engine_submit_with(qtts_engine *e, const qtts_request *r, const engine_request_options *o,
                                qtts_err *err) {
    qtts_mode mode = QTTS_MODE_CUSTOM_VOICE;
    if (check_request(e, r, &mode, err)) return NULL;
    if (o->exact_frames < 0) return qtts_fail_as(err, QTTS_ERR_INVALID, "exact_frames must be >= 0"), NULL;
    slot *s = slot_from_request(r, mode, err);
    if (!s) return NULL;
    s->exact_frames = o->exact_frames;
    s->stream->exec = e->exec; /* before the caller has the stream: its appends wake the engine */
    pthread_mutex_lock(&e->mu);
    if (atomic_load(&e->stopping)) {
        pthread_mutex_unlock(&e->mu);
        slot_free(s);
        qtts_fail_as(err, QTTS_ERR_BUSY, "the engine is shutting down");
        return NULL;
    }
    if (e->n_waiting >= e->max_queue) {
        pthread_mutex_unlock(&e->mu);
        stream_release(s->stream); /* the reader's reference */
        slot_free(s);
        qtts_fail_as(err, QTTS_ERR_BUSY, "the queue is full: %d requests are already waiting", e->max_queue);
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

qtts_stream *qtts_submit(qtts_engine *e, const qtts_request *r, qtts_error *err) {
    qtts_err qe = {0};
    qtts_stream *s = engine_submit(e, r, &qe);
    if (!s) engine_copy_err(&qe, QTTS_ERR_INTERNAL, err);
    return s;
}

qtts_status qtts_synthesize(qtts_engine *e, const qtts_request *r, qtts_audio_cb cb, void *user, qtts_result *out,
                            qtts_error *err) {
    qtts_err qe = {0};
    if (r && r->text_incomplete) { /* nobody could append the rest: it would wait forever */
        qtts_fail_as(&qe, QTTS_ERR_INVALID, "incremental text needs qtts_submit + qtts_stream_append_text");
        engine_copy_err(&qe, QTTS_ERR_INVALID, err);
        return QTTS_ERR_INVALID;
    }
    qtts_stream *s = engine_submit(e, r, &qe);
    if (!s) {
        engine_copy_err(&qe, QTTS_ERR_INTERNAL, err);
        return qe.status ? qe.status : QTTS_ERR_INTERNAL;
    }
    float buf[8192];
    qtts_status rc = QTTS_OK;
    for (;;) {
        long n = qtts_stream_read(s, buf, sizeof buf / sizeof buf[0], -1);
        if (n > 0) {
            if (cb && cb(user, buf, (size_t)n)) {
                qtts_stream_cancel(s);
                qtts_fail_as(&qe, QTTS_ERR_CANCELLED, "cancelled by the caller");
                rc = QTTS_ERR_CANCELLED;
                engine_copy_err(&qe, QTTS_ERR_CANCELLED, err);
                break;
            }
            continue;
        }
        if (n == 0) {
            if (out) qtts_stream_result(s, out);
        } else {
            rc = qtts_stream_status(s);
            if (rc == QTTS_OK) rc = QTTS_ERR_INTERNAL;
            qtts_fail_as(&qe, rc, "%s", qtts_stream_error(s));
            engine_copy_err(&qe, rc, err);
        }
        break;
    }
    qtts_stream_free(s);
    return rc;
}
