#include "server/session.h"

#include <soxr.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/stretch.h"

#define SESSION_READ_MAX 8192 /* samples per engine read */

struct srv_session {
    qtts_stream *st;
    srv_session_opts o;
    /* Turns (srv_session_start_turns): submitted one after another into this
     * one encoder, pause_samples of silence between them. */
    qtts_engine *e;
    const qtts_request *turns;
    size_t n_turns, turn, pause_samples;
    void *owner; /* keeps the turns' strings and voices; owner_free on free */
    void (*owner_free)(void *);
    qtts_result sum; /* the finished turns' results */
    srv_stretch *stretch;
    soxr_t rs;    /* to out_rate; NULL at the model's rate */
    float *rbuf;  /* resampled samples */
    size_t rcap;
    qtts_encoder *enc;
    srv_buf *dst;       /* where the encoder's bytes go during a read */
    size_t enc_base;    /* whole: dst->len when the encoder opened (its offset 0) */
    size_t enc_pos;     /* whole: the encoder's write position, from enc_base */
    float *all;         /* whole: every sample, encoded at the end */
    size_t n_all, cap_all;
    size_t samples_out;
    srv_session_state end; /* DONE or FAILED once ended, else WAITING */
    qtts_status status;
    int engine_failed; /* the failure was the engine's (a turn's submission or its stream), not the encoder's */
    char error[512]; /* an engine message (qtts_err: 512) */
    float buf[SESSION_READ_MAX];
};

/* Streaming sink: bytes append to the reader's buffer. */
static int sink_append(void *user, const void *bytes, size_t n) {
    srv_session *ss = user;
    return srv_buf_append(ss->dst, bytes, n);
}

/* Whole-response sink: seekable, so the encoder patches its header in place. */
static int sink_write_at(void *user, const void *bytes, size_t n) {
    srv_session *ss = user;
    srv_buf *b = ss->dst;
    size_t at = ss->enc_base + ss->enc_pos;
    size_t over = at < b->len ? b->len - at : 0;
    if (over > n) over = n;
    if (over) memcpy(b->data + at, bytes, over);
    if (n > over && srv_buf_append(b, (const char *)bytes + over, n - over)) return -1;
    ss->enc_pos += n;
    return 0;
}

static int sink_seek(void *user, uint64_t offset) {
    srv_session *ss = user;
    if (ss->enc_base + offset > ss->dst->len) return -1;
    ss->enc_pos = (size_t)offset;
    return 0;
}

static srv_session_state fail(srv_session *ss, qtts_status st, const char *msg) {
    ss->status = st;
    snprintf(ss->error, sizeof ss->error, "%s", msg && *msg ? msg : "synthesis failed");
    return ss->end = SRV_SESSION_FAILED;
}

static int open_encoder(srv_session *ss) {
    qtts_audio_sink sink = {ss->o.whole ? sink_write_at : sink_append, ss->o.whole ? sink_seek : NULL, ss};
    ss->enc_base = ss->dst->len;
    ss->enc_pos = 0;
    qtts_err e;
    ss->enc = qtts_encoder_open(srv_format_codec(ss->o.fmt), QTTS_SAMPLE_S16, ss->o.out_rate, 1, &sink, &e);
    if (!ss->enc) fail(ss, QTTS_ERR_INTERNAL, e.msg);
    return ss->enc ? 0 : -1;
}

/* n samples (after the tempo change) to the encoder; final closes it. */
static int encode(srv_session *ss, const float *x, size_t n, int final) {
    qtts_err e;
    if (!ss->enc && open_encoder(ss)) return -1;
    if (n && qtts_encoder_write(ss->enc, x, n, &e)) return fail(ss, QTTS_ERR_INTERNAL, e.msg), -1;
    ss->samples_out += n;
    if (!final) return 0;
    int rc = qtts_encoder_close(ss->enc, &e);
    ss->enc = NULL;
    return rc ? (fail(ss, QTTS_ERR_INTERNAL, e.msg), -1) : 0;
}

/* Samples at the model's rate (x NULL: flush) to out_rate, then encoded. */
static int resample(srv_session *ss, const float *x, size_t n, int final) {
    size_t want = (size_t)((double)n * ss->o.out_rate / ss->o.sample_rate) + 1024;
    if (want > ss->rcap) {
        float *p = realloc(ss->rbuf, want * sizeof *p);
        if (!p) return fail(ss, QTTS_ERR_NO_MEMORY, "out of memory resampling audio"), -1;
        ss->rbuf = p;
        ss->rcap = want;
    }
    for (;;) {
        size_t idone = 0, odone = 0;
        soxr_error_t se = soxr_process(ss->rs, final ? NULL : x, final ? 0 : n, &idone, ss->rbuf, ss->rcap, &odone);
        if (se) return fail(ss, QTTS_ERR_INTERNAL, se), -1;
        if (!final) {
            if (encode(ss, ss->rbuf, odone, 0)) return -1;
            x += idone;
            n -= idone;
            if (!n) return 0;
        } else if (odone) {
            if (encode(ss, ss->rbuf, odone, 0)) return -1;
        } else {
            return encode(ss, NULL, 0, 1); /* flushed */
        }
    }
}

static int keep(srv_session *ss, const float *x, size_t n) {
    if (ss->n_all + n > ss->cap_all) {
        size_t cap = ss->cap_all ? ss->cap_all : 65536;
        while (cap < ss->n_all + n) cap *= 2;
        float *p = realloc(ss->all, cap * sizeof *p);
        if (!p) return -1;
        ss->all = p;
        ss->cap_all = cap;
    }
    memcpy(ss->all + ss->n_all, x, n * sizeof *x);
    ss->n_all += n;
    return 0;
}

/* Engine samples in (final: the stream ended): stretched, then encoded, or
 * kept until the end for a whole response. */
static int take(srv_session *ss, const float *x, size_t n, int final) {
    if (ss->o.whole) {
        if (n && keep(ss, x, n)) return fail(ss, QTTS_ERR_NO_MEMORY, "out of memory buffering audio"), -1;
        if (!final) return 0;
        x = ss->all;
        n = ss->n_all;
    }
    if (ss->stretch) {
        const float *y;
        long m = srv_stretch_process(ss->stretch, x, n, final, &y);
        if (m < 0) return fail(ss, QTTS_ERR_NO_MEMORY, "out of memory stretching audio"), -1;
        x = y;
        n = (size_t)m;
    }
    if (ss->rs) return (n && resample(ss, x, n, 0)) || (final && resample(ss, NULL, 0, 1)) ? -1 : 0;
    return encode(ss, x, n, final);
}

static void watch(srv_session *ss) {
    if (ss->o.notify) qtts_stream_set_notify(ss->st, ss->o.notify, ss->o.notify_user);
    if (ss->o.notify_fd >= 0) qtts_stream_set_notify_fd(ss->st, ss->o.notify_fd);
}

static void unwatch(srv_session *ss) {
    if (ss->o.notify) qtts_stream_set_notify(ss->st, NULL, NULL);
    if (ss->o.notify_fd >= 0) qtts_stream_set_notify_fd(ss->st, -1);
}

/* Folds a finished turn's result into sum: frames and tokens add up, the
 * first seed stays, the worst ending (guard, frame limit) is kept. */
static void add_result(qtts_result *sum, const qtts_result *r, int first) {
    if (first) {
        *sum = *r;
        return;
    }
    sum->n_frames += r->n_frames;
    sum->input_tokens += r->input_tokens;
    sum->audio_seconds += r->audio_seconds;
    sum->prefill_ms += r->prefill_ms;
    sum->talker_ms += r->talker_ms;
    sum->code_predictor_ms += r->code_predictor_ms;
    sum->decoder_ms += r->decoder_ms;
    sum->total_ms += r->total_ms;
    sum->decoder_steps += r->decoder_steps;
    sum->overlapped_decoder_steps += r->overlapped_decoder_steps;
    if (r->finished_by > sum->finished_by) sum->finished_by = r->finished_by;
    if (!sum->guard) sum->guard = r->guard;
    sum->finished_by_eos = sum->finished_by == QTTS_FINISHED_EOS;
}

/* The current turn ended well: its result is kept, the pause is encoded and
 * the next turn submitted. 0 when there was no next turn, 1 when one runs
 * now, -1 when it failed (ss->end is FAILED). */
static int next_turn(srv_session *ss) {
    static const float zeros[1024];
    if (ss->turn + 1 >= ss->n_turns) return 0;
    qtts_result r;
    memset(&r, 0, sizeof r);
    qtts_stream_result(ss->st, &r);
    add_result(&ss->sum, &r, ss->turn == 0);
    for (size_t left = ss->pause_samples; left;) {
        size_t k = left < 1024 ? left : 1024;
        if (take(ss, zeros, k, 0)) return -1;
        left -= k;
    }
    qtts_error err = {0};
    qtts_stream *next = qtts_submit(ss->e, &ss->turns[ss->turn + 1], &err);
    if (!next) {
        ss->engine_failed = 1;
        return fail(ss, err.status, err.message), -1;
    }
    unwatch(ss);
    qtts_stream_free(ss->st);
    ss->st = next;
    ss->turn++;
    watch(ss);
    return 1;
}

srv_session *srv_session_start_turns(qtts_engine *e, const qtts_request *turns, size_t n, size_t pause_samples,
                                     const srv_session_opts *o, void *owner, void (*owner_free)(void *),
                                     qtts_error *err) {
    srv_session *ss = n ? srv_session_start(e, &turns[0], o, err) : NULL;
    if (!ss) {
        if (!n) {
            err->status = QTTS_ERR_INVALID;
            snprintf(err->message, sizeof err->message, "no turns to speak");
        }
        if (owner_free) owner_free(owner);
        return NULL;
    }
    ss->e = e;
    ss->turns = turns;
    ss->n_turns = n;
    ss->pause_samples = pause_samples;
    ss->owner = owner;
    ss->owner_free = owner_free;
    return ss;
}

srv_session *srv_session_start(qtts_engine *e, const qtts_request *r, const srv_session_opts *o, qtts_error *err) {
    srv_session *ss = calloc(1, sizeof *ss);
    if (!ss || (o->speed != 1.0 && !(ss->stretch = srv_stretch_new(o->sample_rate, o->speed)))) {
        free(ss);
        err->status = QTTS_ERR_NO_MEMORY;
        snprintf(err->message, sizeof err->message, "out of memory");
        return NULL;
    }
    ss->o = *o;
    if (!ss->o.out_rate) ss->o.out_rate = o->sample_rate;
    if (ss->o.out_rate != o->sample_rate) {
        soxr_error_t se = NULL;
        soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
        soxr_quality_spec_t q = soxr_quality_spec(SOXR_HQ, 0);
        if (!(ss->rs = soxr_create(o->sample_rate, ss->o.out_rate, 1, &se, &io, &q, NULL))) {
            srv_stretch_free(ss->stretch);
            free(ss);
            err->status = QTTS_ERR_INTERNAL;
            snprintf(err->message, sizeof err->message, "cannot resample to %d Hz: %s", o->out_rate, se ? se : "soxr");
            return NULL;
        }
    }
    ss->end = SRV_SESSION_WAITING;
    ss->status = QTTS_OK;
    if (!(ss->st = qtts_submit(e, r, err))) {
        if (ss->rs) soxr_delete(ss->rs);
        srv_stretch_free(ss->stretch);
        free(ss);
        return NULL;
    }
    ss->n_turns = 1;
    watch(ss);
    return ss;
}

srv_session_state srv_session_read(srv_session *ss, srv_buf *out) {
    if (ss->end != SRV_SESSION_WAITING) return ss->end;
    ss->dst = out;
    srv_session_state got = SRV_SESSION_WAITING;
    for (;;) {
        long n = qtts_stream_read(ss->st, ss->buf, SESSION_READ_MAX, 0);
        if (n == QTTS_STREAM_TIMEOUT) return got;
        if (n > 0) {
            if (take(ss, ss->buf, (size_t)n, 0)) return ss->end;
            got = SRV_SESSION_AUDIO;
            continue;
        }
        if (n == 0) {
            int more = next_turn(ss);
            if (more < 0) return ss->end;
            if (more) continue;
            return take(ss, NULL, 0, 1) ? ss->end : (ss->end = SRV_SESSION_DONE);
        }
        ss->engine_failed = 1;
        return fail(ss, qtts_stream_status(ss->st), qtts_stream_error(ss->st));
    }
}

qtts_stream *srv_session_stream(const srv_session *ss) { return ss->st; }
const char *srv_session_error(const srv_session *ss) { return ss->error; }
qtts_status srv_session_status(const srv_session *ss) { return ss->status; }
int srv_session_engine_failed(const srv_session *ss) { return ss->engine_failed; }
size_t srv_session_samples(const srv_session *ss) { return ss->samples_out; }

void srv_session_result(const srv_session *ss, qtts_result *out) {
    memset(out, 0, sizeof *out);
    qtts_stream_result(ss->st, out);
    if (ss->turn == 0) return;
    qtts_result last = *out;
    *out = ss->sum;
    add_result(out, &last, 0);
}

void srv_session_free(srv_session *ss) {
    if (!ss) return;
    /* The engine may end the stream after the reader's objects are gone: it
     * must not signal them any more. */
    unwatch(ss);
    qtts_stream_free(ss->st); /* cancels it if it still runs */
    if (ss->enc) qtts_encoder_abort(ss->enc);
    srv_stretch_free(ss->stretch);
    if (ss->rs) soxr_delete(ss->rs);
    free(ss->rbuf);
    free(ss->all);
    if (ss->owner_free) ss->owner_free(ss->owner);
    free(ss);
}
