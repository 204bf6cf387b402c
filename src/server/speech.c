/* POST /v1/audio/speech: submission to the engine (speech_request.c parses
 * and validates the body) and the three response shapes: buffered (default),
 * chunked audio stream (stream_format "audio"), Server-Sent Events
 * (stream_format "sse"). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "server/b64.h"
#include "server/internal.h"
#include "server/pump.h"
#include "server/session.h"
#include "server/speech_request.h"
#include "server/speech_script.h"

/* ---- per-request state ---- */

typedef enum {
    SPEECH_RUNNING,
    SPEECH_FINISHED, /* send what is left of out, then end the body */
    SPEECH_CUT,      /* end the body with an error (the client sees a short response) */
} speech_state;

struct srv_speech {
    qtts_server *s;
    srv_job job;          /* the pump's side: resumes the suspended connection */
    srv_session *session; /* the synthesis: engine -> stretch -> encoder */
    srv_out_mode mode;
    srv_format fmt;
    srv_buf out; /* bytes ready for the socket (buffered: the whole body) */
    srv_buf raw; /* SSE: encoded audio not yet framed */
    speech_state state;
    int got_first;
    double t0;
    int counted; /* holds one unit of metrics.inflight */
    int started; /* a response is under way: ending early means the client left */
};

static void speech_release(srv_speech *ss) {
    if (!ss) return;
    if (ss->started && ss->state == SPEECH_RUNNING && !atomic_load(&ss->s->aborting))
        atomic_fetch_add(&ss->s->metrics.disconnects, 1); /* closed before the end */
    srv_session_free(ss->session); /* no notification reaches the job after this; cancels if still running */
    srv_pump_remove(ss->s->pump, &ss->job);
    srv_buf_free(&ss->out);
    srv_buf_free(&ss->raw);
    if (ss->counted) atomic_fetch_sub(&ss->s->metrics.inflight, 1);
    free(ss);
}

void srv_speech_abandon(srv_speech *ss) { speech_release(ss); }

static qtts_stream *speech_stream(const srv_speech *ss) { return srv_session_stream(ss->session); }

static int sse_flush_raw(srv_speech *ss) {
    size_t n = srv_buf_pending(&ss->raw);
    if (!n) return 0;
    char *b64 = malloc(srv_b64_encoded_len(n) + 1);
    if (!b64) return -1;
    srv_b64_encode(ss->raw.data + ss->raw.off, n, b64);
    ss->raw.off = ss->raw.len;
    int rc = srv_buf_printf(&ss->out,
                            "event: speech.audio.delta\ndata: {\"type\":\"speech.audio.delta\",\"audio\":\"%s\"}\n\n",
                            b64);
    free(b64);
    return rc;
}

static void observe_first(srv_speech *ss) {
    if (ss->got_first) return;
    ss->got_first = 1;
    srv_hist_observe(&ss->s->metrics.ttfa, qtts_now_s() - ss->t0);
}

static void observe_done(srv_speech *ss) {
    int sr = ss->s->info->sample_rate > 0 ? ss->s->info->sample_rate : QTTS_SAMPLE_RATE;
    size_t samples = srv_session_samples(ss->session);
    double secs = (double)samples / sr;
    atomic_fetch_add(&ss->s->metrics.audio_samples_out, samples);
    if (secs > 0) srv_hist_observe(&ss->s->metrics.rtf, (qtts_now_s() - ss->t0) / secs);
}

/* An error after the 200 went out: SSE gets an error event, audio is cut. */
static void stream_fail(srv_speech *ss, const char *msg) {
    if (ss->mode == SRV_OUT_SSE) {
        cJSON *root = cJSON_CreateObject();
        cJSON *e = cJSON_AddObjectToObject(root, "error");
        cJSON_AddStringToObject(root, "type", "error");
        char *js = NULL;
        if (e && cJSON_AddStringToObject(e, "message", msg) && cJSON_AddStringToObject(e, "type", "server_error"))
            js = cJSON_PrintUnformatted(root);
        cJSON_Delete(root);
        if (js && !srv_buf_printf(&ss->out, "event: error\ndata: %s\n\n", js)) {
            free(js);
            ss->state = SPEECH_FINISHED;
            return;
        }
        free(js);
    }
    ss->state = SPEECH_CUT;
}

/* The session ended well: SSE gets the rest of the audio and the done event. */
static void stream_finish(srv_speech *ss) {
    if (ss->mode == SRV_OUT_SSE && sse_flush_raw(ss)) {
        stream_fail(ss, "out of memory");
        return;
    }
    qtts_result res;
    memset(&res, 0, sizeof res);
    srv_session_result(ss->session, &res);
    observe_done(ss);
    size_t samples = srv_session_samples(ss->session);
    if (ss->mode == SRV_OUT_SSE &&
        srv_buf_printf(&ss->out,
                       "event: speech.audio.done\ndata: {\"type\":\"speech.audio.done\",\"usage\":{\"input_tokens\":%d,"
                       "\"output_tokens\":%d,\"total_tokens\":%d},\"seed\":%llu,\"audio_seconds\":%.3f,"
                       "\"finished_by\":\"%s\"%s%s%s}\n\n",
                       res.input_tokens, res.n_frames, res.input_tokens + res.n_frames, (unsigned long long)res.seed,
                       (double)samples / QTTS_SAMPLE_RATE, qtts_finish_reason_name(res.finished_by),
                       res.guard ? ",\"guard\":\"" : "", res.guard ? qtts_guard_reason_name(res.guard) : "",
                       res.guard ? "\"" : "")) {
        stream_fail(ss, "out of memory");
        return;
    }
    ss->state = SPEECH_FINISHED;
}

/* Streaming body. Never blocks: with nothing to send it suspends the
 * connection and returns 0; the pump resumes it when the engine has audio
 * (or the end), and libmicrohttpd calls again. */
static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    srv_speech *ss = cls;
    qtts_server *s = ss->s;
    for (;;) {
        if (srv_buf_pending(&ss->out)) return (ssize_t)srv_buf_take(&ss->out, buf, max);
        if (ss->state == SPEECH_FINISHED) return MHD_CONTENT_READER_END_OF_STREAM;
        if (ss->state == SPEECH_CUT) return MHD_CONTENT_READER_END_WITH_ERROR;
        if (atomic_load(&s->aborting)) {
            qtts_stream_cancel(speech_stream(ss));
            stream_fail(ss, "server is shutting down");
            continue;
        }
        switch (srv_session_read(ss->session, ss->mode == SRV_OUT_SSE ? &ss->raw : &ss->out)) {
        case SRV_SESSION_AUDIO:
            observe_first(ss);
            if (ss->mode == SRV_OUT_SSE && sse_flush_raw(ss)) stream_fail(ss, "out of memory");
            continue;
        case SRV_SESSION_DONE: stream_finish(ss); continue;
        case SRV_SESSION_FAILED: stream_fail(ss, srv_session_error(ss->session)); continue;
        case SRV_SESSION_WAITING:
            if (srv_job_gone(&ss->job)) {
                qtts_stream_cancel(speech_stream(ss));
                return MHD_CONTENT_READER_END_WITH_ERROR; /* counted as a disconnect on release */
            }
            if ((long long)qtts_now_ms() > ss->job.deadline_ms) {
                qtts_stream_cancel(speech_stream(ss));
                stream_fail(ss, "request timed out");
                continue;
            }
            if (srv_job_wait(&ss->job)) return 0; /* suspended */
            continue;
        }
    }
}

static void stream_free_cb(void *cls) { speech_release(cls); }

static enum MHD_Result respond_bad(qtts_server *s, struct MHD_Connection *c, const srv_bad_req *b) {
    return srv_respond_error(s, c, b->status, b->type, b->param, b->code, "%s", b->msg);
}

/* The parser's voice lookup over the server's voice store. */
static int lookup_voice(void *user, const char *name, qtts_voice **out, char *err, size_t err_size) {
    qtts_voice *v = NULL;
    int rc = srv_voices_get(user, name, &v, err, err_size);
    if (rc == 0) {
        if (out) *out = v;
        else qtts_voice_release(v);
    }
    return rc;
}

/* Parses and validates the request. A Base model's inline recording then
 * becomes a voice: an engine job, this thread waits while it runs. */
void srv_speech_context(qtts_server *s, srv_speech_ctx *ctx) {
    *ctx = (srv_speech_ctx){
        .info = s->info,
        .aliases = s->aliases,
        .max_input_chars = s->p.max_input_chars,
        .guard_frames_per_token = s->p.guard_frames_per_token,
        .no_repetition_guard = s->p.no_repetition_guard,
        .max_request_frames = s->p.max_request_frames,
        .lexicon = s->p.lexicon,
        .voice_get = lookup_voice,
        .voice_user = s->voices,
    };
}

/* *script: a dialogue's turns ("script": true, speech_script.h), else NULL. */
static int parse_speech(qtts_server *s, const cJSON *root, srv_speech_request *o, srv_speech_script **script,
                        srv_bad_req *b) {
    srv_speech_ctx ctx;
    srv_speech_context(s, &ctx);
    *script = NULL;
    int want = srv_speech_script_wanted(root, b);
    if (want) {
        memset(o, 0, sizeof *o);
        return want < 0 ? -1 : srv_speech_script_parse(&ctx, root, script, o, b);
    }
    if (srv_speech_request_parse(&ctx, root, o, b)) return -1;
    if (!o->ref_audio) return 0;
    qtts_error verr = {0};
    o->voice = qtts_voice_from_audio_bytes(s->engine, o->ref_audio, o->ref_audio_len, o->ref_text, &verr);
    srv_speech_request_clear(o);
    if (!o->voice)
        return srv_bad_req_fail(b, http_status_of(verr.status), "ref_audio", "invalid_audio", "ref_audio: %s",
                                verr.message);
    o->r.voice = o->voice;
    return 0;
}

/* Buffered response: the session keeps every sample and encodes them at the
 * end (suspending the connection while the engine works), then the answer
 * goes out with Content-Length. Called again by the access handler each
 * time the pump resumes the connection. */
enum MHD_Result srv_speech_resume(qtts_server *s, struct MHD_Connection *c, srv_req *rq) {
    srv_speech *ss = rq->speech;
    enum MHD_Result rc;
    for (;;) {
        if (atomic_load(&s->aborting)) {
            rc = srv_respond_error(s, c, 503, "server_busy", NULL, "shutting_down", "server is shutting down");
            goto done;
        }
        srv_session_state st = srv_session_read(ss->session, &ss->out);
        if (st == SRV_SESSION_AUDIO) {
            observe_first(ss);
            continue;
        }
        if (st == SRV_SESSION_DONE) break;
        if (st == SRV_SESSION_FAILED) {
            int engine = srv_session_engine_failed(ss->session);
            rc = srv_respond_error(s, c, 500, "server_error", NULL, engine ? "synthesis_failed" : NULL, "%s%s",
                                   engine ? "" : "encoding failed: ", srv_session_error(ss->session));
            goto done;
        }
        if (srv_job_gone(&ss->job)) {
            rc = MHD_NO; /* closes the connection; the request is cancelled below */
            goto done;
        }
        if ((long long)qtts_now_ms() > ss->job.deadline_ms) {
            rc = srv_respond_error(s, c, 504, "server_error", NULL, "timeout", "request timed out");
            goto done;
        }
        if (srv_job_wait(&ss->job)) return MHD_YES; /* suspended until the pump resumes us */
    }
    ss->state = SPEECH_FINISHED;
    {
        observe_done(ss);
        qtts_result res;
        srv_session_result(ss->session, &res);
        /* The body changes hands: ss->out never had bytes taken from its front here. */
        struct MHD_Response *r = MHD_create_response_from_buffer(ss->out.len, ss->out.data, MHD_RESPMEM_MUST_FREE);
        if (!r) {
            rc = MHD_NO;
            goto done;
        }
        ss->out = (srv_buf){0};
        char seed[32];
        snprintf(seed, sizeof seed, "%llu", (unsigned long long)res.seed);
        MHD_add_response_header(r, "Content-Type", srv_format_mime(ss->fmt));
        MHD_add_response_header(r, "X-Qtts-Seed", seed);
        char finished[48]; /* eos, max_frames, guard:length, guard:repetition */
        snprintf(finished, sizeof finished, "%s%s%s", qtts_finish_reason_name(res.finished_by), res.guard ? ":" : "",
                 res.guard ? qtts_guard_reason_name(res.guard) : "");
        MHD_add_response_header(r, "X-Qtts-Finished-By", finished);
        char steps[16], beside[16]; /* the engine's schedule, as `qtts bench` reports it */
        snprintf(steps, sizeof steps, "%d", res.decoder_steps);
        snprintf(beside, sizeof beside, "%d", res.overlapped_decoder_steps);
        MHD_add_response_header(r, "X-Qtts-Decoder-Steps", steps);
        MHD_add_response_header(r, "X-Qtts-Overlapped-Steps", beside);
        rc = srv_queue(s, c, 200, r);
    }
done:
    if (rc == MHD_YES && ss->state == SPEECH_RUNNING) ss->state = SPEECH_CUT; /* an error response went out */
    rq->speech = NULL;
    speech_release(ss);
    return rc;
}

enum MHD_Result srv_route_speech(qtts_server *s, struct MHD_Connection *c, srv_req *rq) {
    srv_bad_req b;
    memset(&b, 0, sizeof b);
    const char *why = "";
    cJSON *root = srv_parse_json_body(rq, &why);
    if (!root) return srv_respond_error(s, c, 400, "invalid_request_error", NULL, "invalid_json", "%s", why);
    srv_speech_request o;
    srv_speech_script *script = NULL;
    if (parse_speech(s, root, &o, &script, &b)) {
        if (o.voice) qtts_voice_release(o.voice);
        cJSON_Delete(root);
        return respond_bad(s, c, &b);
    }
    srv_speech *ss = calloc(1, sizeof *ss);
    if (!ss) {
        if (o.voice) qtts_voice_release(o.voice);
        srv_speech_script_free(script);
        cJSON_Delete(root);
        return srv_respond_error(s, c, 500, "server_error", NULL, NULL, "out of memory");
    }
    ss->s = s;
    ss->mode = o.mode;
    ss->fmt = o.fmt;
    ss->t0 = qtts_now_s();
    ss->job.conn = c;
    ss->job.deadline_ms = (long long)qtts_now_ms() + (long long)s->p.request_timeout_s * 1000;
    atomic_fetch_add(&s->metrics.inflight, 1);
    ss->counted = 1;
    srv_pump_add(s->pump, &ss->job); /* before the notifier can fire */
    srv_session_opts so = {.fmt = o.fmt,
                           .speed = o.speed,
                           .sample_rate = s->info->sample_rate,
                           .whole = o.mode == SRV_OUT_BUFFERED,
                           .notify = srv_job_notify,
                           .notify_user = &ss->job,
                           .notify_fd = -1};
    qtts_error err = {0};
    ss->session = script ? srv_speech_script_start(s->engine, script, &so, &err) /* takes script */
                         : srv_session_start(s->engine, &o.r, &so, &err);
    if (o.voice) qtts_voice_release(o.voice); /* the request holds its own reference */
    cJSON_Delete(root);                       /* o.r's strings pointed into it */
    if (!ss->session) {
        speech_release(ss);
        int status = http_status_of(err.status);
        return srv_respond_error(s, c, status, status == 503 ? "server_busy" : status >= 500 ? "server_error"
                                                                                            : "invalid_request_error",
                                 NULL, status == 503 ? "queue_full" : status >= 500 ? NULL : "invalid_request", "%s",
                                 err.message);
    }
    atomic_fetch_add(&s->metrics.speech_requests, 1);
    ss->started = 1;
    if (o.mode == SRV_OUT_BUFFERED) {
        rq->speech = ss;
        return srv_speech_resume(s, c, rq);
    }
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 32 * 1024, stream_reader, ss,
                                                               stream_free_cb);
    if (!r) {
        speech_release(ss);
        return MHD_NO;
    }
    if (o.mode == SRV_OUT_SSE) {
        MHD_add_response_header(r, "Content-Type", "text/event-stream");
        MHD_add_response_header(r, "Cache-Control", "no-cache");
    } else {
        MHD_add_response_header(r, "Content-Type", srv_format_mime(o.fmt));
    }
    return srv_queue(s, c, 200, r);
}
