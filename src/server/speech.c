/* POST /v1/audio/speech: validation, submission to the engine, and the
 * three response shapes: buffered (default), chunked audio stream
 * (stream_format "audio"), Server-Sent Events (stream_format "sse"). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/clock.h"
#include "model/config.h"
#include "server/audio_out.h"
#include "server/b64.h"
#include "server/internal.h"
#include "server/pump.h"
#include "server/stretch.h"
#include "text/utf8.h"

#define READ_MAX 8192     /* samples per read */

typedef enum { OUT_BUFFERED, OUT_AUDIO_STREAM, OUT_SSE } out_mode;

/* ---- request parsing ---- */

typedef struct {
    qtts_request r;
    srv_format fmt;
    out_mode mode;
    double speed;
    qtts_voice *voice; /* held reference (cloned voice), or NULL */
    const char *speaker;
    const char *language;
} speech_opts;

typedef struct {
    int status;
    const char *type, *param, *code;
    char msg[512];
} bad_req;

static int fail(bad_req *b, int status, const char *param, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int fail(bad_req *b, int status, const char *param, const char *code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->msg, sizeof b->msg, fmt, ap);
    va_end(ap);
    b->status = status;
    b->type = status == 503 ? "server_busy" : status >= 500 ? "server_error" : "invalid_request_error";
    b->param = param;
    b->code = code;
    return -1;
}

static const cJSON *field(const cJSON *root, const char *name) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

static int get_str(const cJSON *root, const char *name, const char **out, bad_req *b) {
    const cJSON *v = field(root, name);
    if (!v) return 0;
    if (!cJSON_IsString(v)) return fail(b, 400, name, "invalid_type", "'%s' must be a string", name);
    *out = v->valuestring;
    return 0;
}

static int get_num(const cJSON *root, const char *name, double lo, double hi, int integer, int *present, double *out,
                   bad_req *b) {
    const cJSON *v = field(root, name);
    *present = 0;
    if (!v) return 0;
    if (!cJSON_IsNumber(v)) return fail(b, 400, name, "invalid_type", "'%s' must be a number", name);
    double x = v->valuedouble;
    if (integer && x != floor(x)) return fail(b, 400, name, "invalid_value", "'%s' must be an integer", name);
    if (!(x >= lo && x <= hi)) {
        if (integer)
            return fail(b, 400, name, "invalid_value", "'%s' must be an integer in [%.0f, %.0f]", name, lo, hi);
        return fail(b, 400, name, "invalid_value", "'%s' must be in [%g, %g]", name, lo, hi);
    }
    *out = x;
    *present = 1;
    return 0;
}

static int get_bool(const cJSON *root, const char *name, int *out, bad_req *b) {
    const cJSON *v = field(root, name);
    if (!v) return 0;
    if (!cJSON_IsBool(v)) return fail(b, 400, name, "invalid_type", "'%s' must be true or false", name);
    *out = cJSON_IsTrue(v);
    return 0;
}

/* 'voice': a name, or OpenAI's object form {"id": "..."} (custom voices). */
static int get_voice(const cJSON *root, const char **out, bad_req *b) {
    const cJSON *v = field(root, "voice");
    if (!v) return 0;
    if (cJSON_IsObject(v)) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(v, "id");
        if (!cJSON_IsString(id))
            return fail(b, 400, "voice", "invalid_type", "'voice' as an object must have a string 'id'");
        *out = id->valuestring;
        return 0;
    }
    if (!cJSON_IsString(v))
        return fail(b, 400, "voice", "invalid_type", "'voice' must be a string or an object {\"id\": \"...\"}");
    *out = v->valuestring;
    return 0;
}

/* 'input' and 'instructions' share the character limit (OpenAI: 4096 each). */
static int check_text_length(qtts_server *s, const char *name, const char *text, bad_req *b) {
    long nch = qtts_utf8_count(text, strlen(text));
    if (nch < 0) return fail(b, 400, name, "invalid_value", "'%s' is not valid UTF-8", name);
    if (nch > s->p.max_input_chars)
        return fail(b, 400, name, strcmp(name, "input") ? "instructions_too_long" : "input_too_long",
                    "'%s' has %ld characters; the limit is %d", name, nch, s->p.max_input_chars);
    return 0;
}

static const char *match_name(const char *want, const char *const *names, int n) {
    for (int i = 0; i < n; i++)
        if (!strcasecmp(want, names[i])) return names[i];
    return NULL;
}

static void list_names(char *out, size_t size, const char *const *names, int n) {
    size_t o = 0;
    out[0] = 0;
    for (int i = 0; i < n && o + 8 < size; i++) {
        int w = snprintf(out + o, size - o, "%s%s", i ? ", " : "", names[i]);
        if (w < 0 || (size_t)w >= size - o) {
            snprintf(out + o, size - o, ", ...");
            break;
        }
        o += (size_t)w;
    }
}

/* input, response_format, stream_format / stream. */
static int parse_input_and_format(qtts_server *s, const cJSON *root, speech_opts *o, bad_req *b) {
    const char *input = NULL, *fmt = NULL, *sfmt = NULL;
    if (get_str(root, "input", &input, b) || get_str(root, "response_format", &fmt, b) ||
        get_str(root, "stream_format", &sfmt, b))
        return -1;
    if (!input || !input[strspn(input, " \t\r\n\v\f")])
        return fail(b, 400, "input", "missing_input", "'input' is required and must not be empty or only whitespace");
    if (check_text_length(s, "input", input, b)) return -1;
    o->r.text = input;
    if (fmt) {
        const char *why = "";
        if (srv_format_parse(fmt, &o->fmt, &why))
            return fail(b, 400, "response_format", "unsupported_format", "response_format '%s' %s", fmt, why);
    }
    if (sfmt) {
        if (!strcmp(sfmt, "sse")) o->mode = OUT_SSE;
        else if (!strcmp(sfmt, "audio")) o->mode = OUT_AUDIO_STREAM;
        else return fail(b, 400, "stream_format", "invalid_value", "stream_format must be 'audio' or 'sse'");
    }
    int stream = 0;
    if (get_bool(root, "stream", &stream, b)) return -1;
    if (stream && o->mode == OUT_BUFFERED) o->mode = OUT_AUDIO_STREAM;
    return 0;
}

/* speed, seed and the sampling fields (0 temperature = greedy). */
static int parse_sampling(const cJSON *root, speech_opts *o, bad_req *b) {
    int has;
    double x;
    if (get_num(root, "speed", 0.25, 4.0, 0, &has, &x, b)) return -1;
    if (has) o->speed = x;
    if (get_num(root, "seed", 0, 9007199254740991.0, 1, &has, &x, b)) return -1;
    if (has) {
        o->r.has_seed = 1;
        o->r.seed = (uint64_t)x;
    }
    if (get_num(root, "temperature", 0, 10, 0, &has, &x, b)) return -1;
    if (has) {
        if (x == 0) o->r.greedy = 1;
        else o->r.temperature = (float)x;
    }
    if (get_num(root, "top_k", 0, 100000, 1, &has, &x, b)) return -1;
    if (has) o->r.top_k = (int)x;
    if (get_num(root, "top_p", 0, 1, 0, &has, &x, b)) return -1;
    if (has) {
        if (x == 0) return fail(b, 400, "top_p", "invalid_value", "'top_p' must be in (0, 1]");
        o->r.top_p = (float)x;
    }
    if (get_num(root, "repetition_penalty", 0.01, 10, 0, &has, &x, b)) return -1;
    if (has) o->r.repetition_penalty = (float)x;
    if (get_num(root, "max_new_tokens", 1, 1 << 20, 1, &has, &x, b)) return -1;
    if (has) o->r.max_frames = (int)x;
    /* runaway guard: frames per text token (0 = off), loop detection */
    if (get_num(root, "guard_frames_per_token", 0, 1000, 0, &has, &x, b)) return -1;
    if (has) o->r.guard_frames_per_token = x > 0 ? (float)x : -1.0f;
    int rep_guard = !o->r.no_repetition_guard;
    if (get_bool(root, "repetition_guard", &rep_guard, b)) return -1;
    o->r.no_repetition_guard = !rep_guard;
    int greedy = o->r.greedy, xvo = 0;
    if (get_bool(root, "greedy", &greedy, b) || get_bool(root, "x_vector_only", &xvo, b)) return -1;
    o->r.greedy = greedy;
    o->r.x_vector_only = xvo;
    return 0;
}

/* CustomVoice: 'voice' names a built-in speaker. */
static int resolve_speaker(qtts_server *s, const char *voice, speech_opts *o, bad_req *b) {
    const qtts_model_info *info = s->info;
    char names[1024];
    list_names(names, sizeof names, info->speakers, info->n_speakers);
    if (!voice || !*voice) return fail(b, 400, "voice", "missing_voice", "'voice' is required (one of: %s)", names);
    const char *canon = match_name(voice, info->speakers, info->n_speakers);
    if (canon) {
        o->r.speaker = canon;
        return 0;
    }
    char e2[64];
    qtts_voice *v = NULL;
    if (srv_voices_get(s->voices, voice, &v, e2, sizeof e2) == 0) {
        qtts_voice_release(v);
        return fail(b, 400, "voice", "unsupported_for_model",
                    "'%s' is a cloned voice, which needs a Base model; this model's speakers: %s", voice, names);
    }
    static const char *const openai[] = {"alloy", "ash", "ballad", "coral", "echo", "fable", "nova", "onyx", "sage",
                                         "shimmer", "verse"};
    for (size_t i = 0; i < sizeof openai / sizeof openai[0]; i++)
        if (!strcasecmp(voice, openai[i]))
            return fail(b, 400, "voice", "voice_not_found",
                        "'%s' is an OpenAI voice name; this model's built-in speakers are: %s", voice, names);
    return fail(b, 400, "voice", "voice_not_found", "unknown voice '%s' (one of: %s)", voice, names);
}

/* Base: an inline reference recording, or a registered voice. */
static int resolve_clone(qtts_server *s, const char *voice, const char *ref_audio, const char *ref_text,
                         speech_opts *o, bad_req *b) {
    char e2[512] = "";
    qtts_error verr = {0};
    if (ref_audio) {
        size_t n = 0;
        const char *why = "";
        unsigned char *bytes = srv_b64_decode(ref_audio, strlen(ref_audio), &n, &why);
        if (!bytes || n == 0) {
            free(bytes);
            return fail(b, 400, "ref_audio", "invalid_audio", "'ref_audio' is not valid base64: %s",
                        bytes ? "empty" : why);
        }
        /* an engine job: this thread waits while the engine extracts the voice */
        o->voice =
            qtts_voice_from_audio_bytes(s->engine, bytes, n, ref_text && *ref_text ? ref_text : NULL, &verr);
        free(bytes);
        if (!o->voice)
            return fail(b, http_status_of(verr.status), "ref_audio", "invalid_audio", "ref_audio: %s", verr.message);
    } else {
        if (!voice || !*voice)
            return fail(b, 400, "voice", "missing_voice",
                        "a Base model clones a voice: give 'voice' (a registered voice) or 'ref_audio'");
        switch (srv_voices_get(s->voices, voice, &o->voice, e2, sizeof e2)) {
        case 0: break;
        case -2:
            return fail(b, 400, "voice", "voice_not_found",
                        "unknown voice '%s' (register it with POST /v1/audio/voices)", voice);
        default: return fail(b, 500, "voice", NULL, "%s", e2);
        }
    }
    o->r.voice = o->voice;
    return 0;
}

static int parse_speech(qtts_server *s, const cJSON *root, speech_opts *o, bad_req *b) {
    const qtts_model_info *info = s->info;
    qtts_request_default(&o->r);
    o->r.guard_frames_per_token = s->p.guard_frames_per_token;
    o->r.no_repetition_guard = s->p.no_repetition_guard;
    o->fmt = SRV_FMT_MP3; /* OpenAI's default response_format */
    o->mode = OUT_BUFFERED;
    o->speed = 1.0;
    if (!cJSON_IsObject(root)) return fail(b, 400, NULL, "invalid_json", "the request body must be a JSON object");
    const char *voice = NULL, *instructions = NULL, *lang = NULL, *ref_audio = NULL, *ref_text = NULL, *model = NULL;
    if (get_str(root, "model", &model, b) || get_voice(root, &voice, b) ||
        get_str(root, "instructions", &instructions, b) || get_str(root, "language", &lang, b) ||
        get_str(root, "ref_audio", &ref_audio, b) || get_str(root, "ref_text", &ref_text, b) ||
        parse_input_and_format(s, root, o, b) || parse_sampling(root, o, b))
        return -1;
    if (lang && *lang && strcasecmp(lang, "auto")) {
        const char *canon = match_name(qtts_language_alias(lang), info->languages, info->n_languages);
        if (!canon) {
            char names[1024];
            list_names(names, sizeof names, info->languages, info->n_languages);
            return fail(b, 400, "language", "unsupported_language", "language '%s' is not supported (one of: %s)",
                        lang, names);
        }
        o->r.language = canon;
    }
    if (instructions && check_text_length(s, "instructions", instructions, b)) return -1;
    if (instructions && *instructions) o->r.instruct = instructions;
    if (!strcmp(info->variant, "voice_design") && !o->r.instruct)
        return fail(b, 400, "instructions", "missing_instructions",
                    "a VoiceDesign model needs 'instructions' describing the voice");
    if (voice && *voice && ref_audio)
        return fail(b, 400, "ref_audio", "conflicting_voice", "give one of 'voice' and 'ref_audio', not both");
    int is_base = !strcmp(info->variant, "base");
    if (!is_base && (ref_audio || o->r.x_vector_only))
        return fail(b, 400, ref_audio ? "ref_audio" : "x_vector_only", "unsupported_for_model",
                    "voice cloning needs a Base model; this server runs a %s model", info->variant);
    if (!strcmp(info->variant, "custom_voice")) return resolve_speaker(s, voice, o, b);
    if (is_base) return resolve_clone(s, voice, ref_audio, ref_text, o, b);
    return 0;
}

/* ---- per-request state ---- */

struct srv_speech {
    qtts_server *s;
    struct MHD_Connection *conn;
    srv_job job; /* the engine stream and the pump's buffer */
    out_mode mode;
    srv_format fmt;
    srv_audio_out *enc;
    srv_stretch *stretch;
    srv_buf out; /* bytes ready for the socket */
    srv_buf raw; /* SSE: encoded audio not yet framed */
    float *fbuf;
    float *all; /* buffered mode: every sample so far */
    size_t n_all, cap_all;
    int state; /* 0 running, 1 finished (drain out, then end), 2 cut */
    int got_first;
    double t0;
    size_t samples_out;
    int counted; /* holds one unit of metrics.inflight */
    int listed;  /* in the pump */
    int started; /* a response is under way: ending early means the client left */
};

static void speech_release(srv_speech *ss) {
    if (!ss) return;
    if (ss->started && ss->state == 0 && !atomic_load(&ss->s->aborting))
        atomic_fetch_add(&ss->s->metrics.disconnects, 1); /* closed before the end */
    if (ss->listed) srv_pump_remove(ss->s->pump, &ss->job);
    if (ss->job.st) qtts_stream_free(ss->job.st); /* cancels if still running */
    srv_job_destroy(&ss->job);
    srv_audio_out_free(ss->enc);
    srv_stretch_free(ss->stretch);
    srv_buf_free(&ss->out);
    srv_buf_free(&ss->raw);
    free(ss->fbuf);
    free(ss->all);
    if (ss->counted) atomic_fetch_sub(&ss->s->metrics.inflight, 1);
    free(ss);
}

void srv_speech_abandon(srv_speech *ss) { speech_release(ss); }

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

/* Encodes n samples (after the tempo change). */
static int push_audio(srv_speech *ss, const float *x, size_t n, int final) {
    if (ss->stretch) {
        const float *y;
        long m = srv_stretch_process(ss->stretch, x, n, final, &y);
        if (m < 0) return -1;
        x = y;
        n = (size_t)m;
    }
    if (n && srv_audio_out_write(ss->enc, x, n)) return -1;
    if (final && srv_audio_out_finish(ss->enc)) return -1;
    ss->samples_out += n;
    return ss->mode == OUT_SSE ? sse_flush_raw(ss) : 0;
}

static void observe_first(srv_speech *ss) {
    if (ss->got_first) return;
    ss->got_first = 1;
    srv_hist_observe(&ss->s->metrics.ttfa, qtts_now_s() - ss->t0);
}

static void observe_done(srv_speech *ss) {
    int sr = ss->s->info->sample_rate > 0 ? ss->s->info->sample_rate : QTTS_SAMPLE_RATE;
    double secs = (double)ss->samples_out / sr;
    atomic_fetch_add(&ss->s->metrics.audio_samples_out, ss->samples_out);
    if (secs > 0) srv_hist_observe(&ss->s->metrics.rtf, (qtts_now_s() - ss->t0) / secs);
}

/* An error after the 200 went out: SSE gets an error event, audio is cut. */
static void stream_fail(srv_speech *ss, const char *msg) {
    if (ss->mode == OUT_SSE) {
        cJSON *root = cJSON_CreateObject();
        cJSON *e = cJSON_AddObjectToObject(root, "error");
        cJSON_AddStringToObject(root, "type", "error");
        char *js = NULL;
        if (e && cJSON_AddStringToObject(e, "message", msg) && cJSON_AddStringToObject(e, "type", "server_error"))
            js = cJSON_PrintUnformatted(root);
        cJSON_Delete(root);
        if (js && !srv_buf_printf(&ss->out, "event: error\ndata: %s\n\n", js)) {
            free(js);
            ss->state = 1;
            return;
        }
        free(js);
    }
    ss->state = 2;
}

static void stream_finish(srv_speech *ss) {
    if (push_audio(ss, NULL, 0, 1)) {
        stream_fail(ss, "out of memory");
        return;
    }
    qtts_result res;
    memset(&res, 0, sizeof res);
    qtts_stream_result(ss->job.st, &res);
    observe_done(ss);
    if (ss->mode == OUT_SSE &&
        srv_buf_printf(&ss->out,
                       "event: speech.audio.done\ndata: {\"type\":\"speech.audio.done\",\"usage\":{\"input_tokens\":%d,"
                       "\"output_tokens\":%d,\"total_tokens\":%d},\"seed\":%llu,\"audio_seconds\":%.3f,"
                       "\"finished_by\":\"%s\"%s%s%s}\n\n",
                       res.input_tokens, res.n_frames, res.input_tokens + res.n_frames, (unsigned long long)res.seed,
                       (double)ss->samples_out / QTTS_SAMPLE_RATE, qtts_finish_reason_name(res.finished_by),
                       res.guard ? ",\"guard\":\"" : "", res.guard ? qtts_guard_reason_name(res.guard) : "",
                       res.guard ? "\"" : "")) {
        stream_fail(ss, "out of memory");
        return;
    }
    ss->state = 1;
}

/* Streaming body. Never blocks: with nothing to send it suspends the
 * connection and returns 0; the pump resumes it when audio (or the end)
 * arrives, and libmicrohttpd calls again. */
static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    srv_speech *ss = cls;
    qtts_server *s = ss->s;
    for (;;) {
        if (srv_buf_pending(&ss->out)) return (ssize_t)srv_buf_take(&ss->out, buf, max);
        if (ss->state == 1) return MHD_CONTENT_READER_END_OF_STREAM;
        if (ss->state == 2) return MHD_CONTENT_READER_END_WITH_ERROR;
        if (atomic_load(&s->aborting)) {
            qtts_stream_cancel(ss->job.st);
            stream_fail(ss, "server is shutting down");
            continue;
        }
        size_t n = 0;
        switch (srv_job_take(&ss->job, ss->fbuf, READ_MAX, &n)) {
        case JOB_SAMPLES:
            observe_first(ss);
            if (push_audio(ss, ss->fbuf, n, 0)) stream_fail(ss, "out of memory");
            continue;
        case JOB_DONE: stream_finish(ss); continue;
        case JOB_FAILED: stream_fail(ss, ss->job.error); continue;
        case JOB_GONE:
            qtts_stream_cancel(ss->job.st);
            ss->started = ss->state == 0; /* counted as a disconnect on release */
            return MHD_CONTENT_READER_END_WITH_ERROR;
        case JOB_EMPTY:
            if ((long long)qtts_now_ms() > ss->job.deadline_ms) {
                qtts_stream_cancel(ss->job.st);
                stream_fail(ss, "request timed out");
                continue;
            }
            if (srv_job_wait(s->pump, &ss->job)) return 0; /* suspended */
            continue;
        }
    }
}

static void stream_free_cb(void *cls) { speech_release(cls); }

static enum MHD_Result respond_bad(qtts_server *s, struct MHD_Connection *c, const bad_req *b) {
    return srv_respond_error(s, c, b->status, b->type, b->param, b->code, "%s", b->msg);
}

/* Buffered response: gathers every sample (suspending the connection while
 * the engine works), then answers with Content-Length. Called again by the
 * access handler each time the pump resumes the connection. */
enum MHD_Result srv_speech_resume(qtts_server *s, struct MHD_Connection *c, srv_req *rq) {
    srv_speech *ss = rq->speech;
    enum MHD_Result rc;
    for (;;) {
        if (atomic_load(&s->aborting)) {
            rc = srv_respond_error(s, c, 503, "server_busy", NULL, "shutting_down", "server is shutting down");
            goto done;
        }
        if (ss->cap_all - ss->n_all < READ_MAX) {
            size_t nc = ss->cap_all ? ss->cap_all * 2 : 65536;
            float *p = realloc(ss->all, nc * sizeof *p);
            if (!p) {
                rc = srv_respond_error(s, c, 500, "server_error", NULL, NULL, "out of memory");
                goto done;
            }
            ss->all = p;
            ss->cap_all = nc;
        }
        size_t n = 0;
        srv_take t = srv_job_take(&ss->job, ss->all + ss->n_all, ss->cap_all - ss->n_all, &n);
        if (t == JOB_SAMPLES) {
            observe_first(ss);
            ss->n_all += n;
            continue;
        }
        if (t == JOB_DONE) break;
        if (t == JOB_FAILED) {
            rc = srv_respond_error(s, c, 500, "server_error", NULL, "synthesis_failed", "%s", ss->job.error);
            goto done;
        }
        if (t == JOB_GONE) {
            rc = MHD_NO; /* closes the connection; the request is cancelled below */
            goto done;
        }
        if ((long long)qtts_now_ms() > ss->job.deadline_ms) {
            rc = srv_respond_error(s, c, 504, "server_error", NULL, "timeout", "request timed out");
            goto done;
        }
        if (srv_job_wait(s->pump, &ss->job)) return MHD_YES; /* suspended until the pump resumes us */
    }
    ss->state = 1;
    {
        const float *x = ss->all;
        size_t n = ss->n_all;
        if (ss->stretch) {
            long m = srv_stretch_process(ss->stretch, ss->all, ss->n_all, 1, &x);
            if (m < 0) {
                rc = srv_respond_error(s, c, 500, "server_error", NULL, NULL, "out of memory");
                goto done;
            }
            n = (size_t)m;
        }
        char err[256];
        srv_buf body = {0};
        ss->enc = srv_audio_out_new(ss->fmt, s->info->sample_rate, n, srv_buf_sink, &body, &body, err, sizeof err);
        if (!ss->enc || (n && srv_audio_out_write(ss->enc, x, n)) || srv_audio_out_finish(ss->enc)) {
            srv_buf_free(&body);
            rc = srv_respond_error(s, c, 500, "server_error", NULL, NULL, "encoding failed: %s",
                                   ss->enc ? "out of memory" : err);
            goto done;
        }
        ss->samples_out = n;
        observe_done(ss);
        qtts_result res;
        memset(&res, 0, sizeof res);
        qtts_stream_result(ss->job.st, &res);
        struct MHD_Response *r = MHD_create_response_from_buffer(body.len, body.data, MHD_RESPMEM_MUST_FREE);
        if (!r) {
            srv_buf_free(&body);
            rc = MHD_NO;
            goto done;
        }
        char seed[32];
        snprintf(seed, sizeof seed, "%llu", (unsigned long long)res.seed);
        MHD_add_response_header(r, "Content-Type", srv_format_mime(ss->fmt));
        MHD_add_response_header(r, "X-Qtts-Seed", seed);
        char finished[48]; /* eos, max_frames, guard:length, guard:repetition */
        snprintf(finished, sizeof finished, "%s%s%s", qtts_finish_reason_name(res.finished_by), res.guard ? ":" : "",
                 res.guard ? qtts_guard_reason_name(res.guard) : "");
        MHD_add_response_header(r, "X-Qtts-Finished-By", finished);
        rc = srv_queue(s, c, 200, r);
    }
done:
    if (rc == MHD_YES && ss->state == 0) ss->state = 2; /* an error response went out */
    rq->speech = NULL;
    speech_release(ss);
    return rc;
}

enum MHD_Result srv_route_speech(qtts_server *s, struct MHD_Connection *c, srv_req *rq) {
    bad_req b;
    memset(&b, 0, sizeof b);
    const char *why = "";
    cJSON *root = srv_parse_json_body(rq, &why);
    if (!root) return srv_respond_error(s, c, 400, "invalid_request_error", NULL, "invalid_json", "%s", why);
    speech_opts o;
    memset(&o, 0, sizeof o);
    if (parse_speech(s, root, &o, &b)) {
        if (o.voice) qtts_voice_release(o.voice);
        cJSON_Delete(root);
        return respond_bad(s, c, &b);
    }
    srv_speech *ss = calloc(1, sizeof *ss);
    if (ss) ss->fbuf = malloc(READ_MAX * sizeof(float));
    if (!ss || !ss->fbuf) {
        if (ss) free(ss);
        if (o.voice) qtts_voice_release(o.voice);
        cJSON_Delete(root);
        return srv_respond_error(s, c, 500, "server_error", NULL, NULL, "out of memory");
    }
    srv_job_init(&ss->job);
    ss->s = s;
    ss->conn = c;
    ss->mode = o.mode;
    ss->fmt = o.fmt;
    ss->t0 = qtts_now_s();
    ss->job.conn = c;
    ss->job.deadline_ms = (long long)qtts_now_ms() + (long long)s->p.request_timeout_s * 1000;
    atomic_fetch_add(&s->metrics.inflight, 1);
    ss->counted = 1;
    qtts_error err = {0};
    ss->job.st = qtts_submit(s->engine, &o.r, &err);
    if (o.voice) qtts_voice_release(o.voice); /* the request holds its own reference */
    cJSON_Delete(root);                       /* o.r's strings pointed into it */
    if (!ss->job.st) {
        speech_release(ss);
        int status = http_status_of(err.status);
        return srv_respond_error(s, c, status, status == 503 ? "server_busy" : status >= 500 ? "server_error"
                                                                                            : "invalid_request_error",
                                 NULL, status == 503 ? "queue_full" : status >= 500 ? NULL : "invalid_request", "%s",
                                 err.message);
    }
    atomic_fetch_add(&s->metrics.speech_requests, 1);
    if (o.speed != 1.0 && !(ss->stretch = srv_stretch_new(s->info->sample_rate, o.speed))) {
        speech_release(ss);
        return srv_respond_error(s, c, 500, "server_error", NULL, NULL, "cannot create the time stretcher");
    }
    srv_pump_add(s->pump, &ss->job);
    ss->listed = 1;
    ss->started = 1;
    if (o.mode == OUT_BUFFERED) {
        rq->speech = ss;
        return srv_speech_resume(s, c, rq);
    }
    ss->enc = srv_audio_out_new(o.fmt, s->info->sample_rate, 0, srv_buf_sink, o.mode == OUT_SSE ? &ss->raw : &ss->out,
                                NULL, err.message, sizeof err.message);
    if (!ss->enc) {
        speech_release(ss);
        return srv_respond_error(s, c, 500, "server_error", NULL, NULL, "%s", err.message);
    }
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 32 * 1024, stream_reader, ss,
                                                               stream_free_cb);
    if (!r) {
        speech_release(ss);
        return MHD_NO;
    }
    if (o.mode == OUT_SSE) {
        MHD_add_response_header(r, "Content-Type", "text/event-stream");
        MHD_add_response_header(r, "Cache-Control", "no-cache");
    } else {
        MHD_add_response_header(r, "Content-Type", srv_format_mime(o.fmt));
    }
    return srv_queue(s, c, 200, r);
}
