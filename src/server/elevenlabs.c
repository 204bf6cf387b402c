/* ElevenLabs-compatible routes (elevenlabs.h). A text-to-speech request
 * becomes the equivalent /v1/audio/speech body and goes through the same
 * parser (speech_request.h); the server session (session.h) resamples its
 * audio to the output_format's rate and encodes it as it arrives, for both
 * routes: the body is sent chunked either way. */
#include "server/elevenlabs.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/clock.h"
#include "server/audio_out.h"
#include "server/auth.h"
#include "server/internal.h"
#include "server/pump.h"
#include "server/session.h"

#define DEFAULT_FORMAT "mp3_44100_128" /* ElevenLabs' default */

/* ---- output_format: codec_rate[_kbps] ---- */

typedef enum { EL_MP3, EL_PCM, EL_WAV, EL_OPUS, EL_ULAW, EL_ALAW } el_codec;

/* One row per codec: its name, the rates ElevenLabs lists for it, what
 * encodes it and the Content-Type. */
static const struct {
    const char *name;
    el_codec codec;
    int rates[6];
    srv_format fmt; /* unused for the G.711 codecs, written here */
    const char *mime;
} k_codecs[] = {
    {"mp3", EL_MP3, {22050, 44100}, SRV_FMT_MP3, "audio/mpeg"},
    {"pcm", EL_PCM, {8000, 16000, 22050, 24000, 44100, 48000}, SRV_FMT_PCM, "audio/pcm"},
    {"wav", EL_WAV, {8000, 16000, 22050, 24000, 44100, 48000}, SRV_FMT_WAV, "audio/wav"},
    {"opus", EL_OPUS, {48000}, SRV_FMT_OPUS, "audio/ogg"},
    {"ulaw", EL_ULAW, {8000}, SRV_FMT_PCM, "audio/basic"},
    {"alaw", EL_ALAW, {8000}, SRV_FMT_PCM, "audio/x-alaw-basic"},
};

typedef struct {
    size_t row; /* into k_codecs */
    int rate;
} el_format;

/* 0, or -1 with why (a message naming the accepted values). */
static int parse_format(const char *v, el_format *f, char *why, size_t why_size) {
    char codec[8] = "";
    int rate = 0, kbps = 0, used = 0;
    int n = sscanf(v, "%7[a-z0-9]_%d%n_%d%n", codec, &rate, &used, &kbps, &used);
    if (n >= 2 && (size_t)used == strlen(v))
        for (size_t i = 0; i < sizeof k_codecs / sizeof k_codecs[0]; i++) {
            if (strcmp(codec, k_codecs[i].name)) continue;
            for (int k = 0; k < 6 && k_codecs[i].rates[k]; k++)
                if (k_codecs[i].rates[k] == rate) {
                    f->row = i;
                    f->rate = rate;
                    return 0; /* the bitrate is the encoder's own (documented) */
                }
        }
    snprintf(why, why_size,
             "output_format '%.64s' is not supported (mp3_22050_32, mp3_44100_{32,64,96,128,192}, "
             "pcm_{8000,16000,22050,24000,44100,48000}, wav_<same rates>, ulaw_8000, alaw_8000, "
             "opus_48000_{32,64,96,128,192})",
             v);
    return -1;
}

/* G.711 (ITU-T): 16-bit linear to 8-bit mu-law and A-law. */
static uint8_t g711_ulaw(int pcm) {
    int mask = 0xFF;
    pcm >>= 2; /* 14 bits */
    if (pcm < 0) {
        pcm = -pcm;
        mask = 0x7F;
    }
    if (pcm > 8159) pcm = 8159;
    pcm += 0x21;
    int seg = 0;
    while (seg < 8 && pcm > (0x40 << seg) - 1) seg++; /* segment ends 0x3F, 0x7F, ... 0x1FFF */
    if (seg >= 8) return (uint8_t)(0x7F ^ mask);
    return (uint8_t)(((seg << 4) | ((pcm >> (seg + 1)) & 0xF)) ^ mask);
}

static uint8_t g711_alaw(int pcm) {
    int mask = 0xD5;
    pcm >>= 3; /* 13 bits */
    if (pcm < 0) {
        mask = 0x55;
        pcm = -pcm - 1;
    }
    int seg = 0;
    while (seg < 8 && pcm > (0x20 << seg) - 1) seg++; /* segment ends 0x1F, 0x3F, ... 0xFFF */
    if (seg >= 8) return (uint8_t)(0x7F ^ mask);
    int aval = seg << 4;
    aval |= seg < 2 ? (pcm >> 1) & 0xF : (pcm >> seg) & 0xF;
    return (uint8_t)(aval ^ mask);
}

/* ---- errors and headers ---- */

enum MHD_Result srv_el_error(qtts_server *s, struct MHD_Connection *c, int status, const char *code, const char *fmt,
                             ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cJSON *root = cJSON_CreateObject();
    cJSON *d = cJSON_AddObjectToObject(root, "detail");
    char *js = NULL;
    if (d && cJSON_AddStringToObject(d, "status", code) && cJSON_AddStringToObject(d, "message", msg))
        js = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (s->p.verbose) fprintf(stderr, "qtts serve: %d %s\n", status, msg);
    if (!js) return srv_respond(s, c, status, "text/plain", msg, strlen(msg));
    enum MHD_Result rc = srv_respond_json(s, c, status, js);
    free(js);
    return rc;
}

int srv_el_key_ok(struct MHD_Connection *c, const char *key) {
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "xi-api-key");
    return v && key && srv_ct_equal(v, strlen(v), key, strlen(key));
}

/* An ElevenLabs client: its key header, or the SDKs' name header. */
static int from_el_client(struct MHD_Connection *c) {
    const char *sdk = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Fern-SDK-Name");
    return MHD_lookup_connection_value(c, MHD_HEADER_KIND, "xi-api-key") || (sdk && strstr(sdk, "elevenlabs"));
}

int srv_el_match(struct MHD_Connection *c, const char *url) {
    if (!strcmp(url, "/v1/voices") || !strncmp(url, "/v1/voices/", 11) || !strncmp(url, "/v1/text-to-speech/", 19))
        return 1;
    return !strcmp(url, "/v1/models") && from_el_client(c);
}

/* ---- GET /v1/voices, /v1/voices/{id}, /v1/models ---- */

static cJSON *voice_json(const char *id, const char *category) {
    cJSON *v = cJSON_CreateObject();
    if (!v) return NULL;
    cJSON_AddStringToObject(v, "voice_id", id);
    cJSON_AddStringToObject(v, "name", id);
    cJSON_AddStringToObject(v, "category", category);
    cJSON_AddObjectToObject(v, "labels");
    cJSON_AddNullToObject(v, "description");
    cJSON_AddNullToObject(v, "preview_url");
    cJSON_AddNullToObject(v, "settings");
    return v;
}

static enum MHD_Result respond_cjson(qtts_server *s, struct MHD_Connection *c, cJSON *root) {
    char *js = root ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!js) return srv_el_error(s, c, 500, "internal_error", "out of memory");
    enum MHD_Result rc = srv_respond_json(s, c, 200, js);
    free(js);
    return rc;
}

/* Built-in speakers ("premade") then registered voices ("cloned"); one
 * voice when only is given (NULL when it is not found). */
static cJSON *voices_json(qtts_server *s, const char *only) {
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; arr && i < s->info->n_speakers; i++)
        if (!only || !strcasecmp(only, s->info->speakers[i]))
            cJSON_AddItemToArray(arr, voice_json(s->info->speakers[i], "premade"));
    srv_voice_entry *list = NULL;
    size_t n = 0;
    if (arr && srv_voices_list(s->voices, &list, &n) == 0)
        for (size_t i = 0; i < n; i++)
            if (!only || !strcmp(only, list[i].name)) cJSON_AddItemToArray(arr, voice_json(list[i].name, "cloned"));
    srv_voices_list_free(list, n);
    return arr;
}

static enum MHD_Result route_voices(qtts_server *s, struct MHD_Connection *c, const char *id) {
    cJSON *arr = voices_json(s, id);
    if (!arr) return srv_el_error(s, c, 500, "internal_error", "out of memory");
    if (id) {
        cJSON *one = cJSON_DetachItemFromArray(arr, 0);
        cJSON_Delete(arr);
        if (!one) return srv_el_error(s, c, 404, "voice_not_found", "a voice with the voice_id '%s' was not found", id);
        return respond_cjson(s, c, one);
    }
    cJSON *root = cJSON_CreateObject();
    if (!root) {
        cJSON_Delete(arr);
        return srv_el_error(s, c, 500, "internal_error", "out of memory");
    }
    cJSON_AddItemToObject(root, "voices", arr);
    return respond_cjson(s, c, root);
}

/* language_code (ISO 639-1) to the model's language names. */
static const char *const k_languages[][2] = {
    {"en", "english"}, {"zh", "chinese"}, {"ja", "japanese"},   {"ko", "korean"}, {"de", "german"},
    {"fr", "french"},  {"ru", "russian"}, {"pt", "portuguese"}, {"es", "spanish"}, {"it", "italian"},
};

static int model_has_language(const qtts_model_info *mi, const char *name) {
    for (int i = 0; i < mi->n_languages; i++)
        if (!strcasecmp(mi->languages[i], name)) return 1;
    return 0;
}

static enum MHD_Result route_models(qtts_server *s, struct MHD_Connection *c) {
    cJSON *arr = cJSON_CreateArray();
    cJSON *m = cJSON_CreateObject();
    if (!arr || !m) {
        cJSON_Delete(arr);
        cJSON_Delete(m);
        return srv_el_error(s, c, 500, "internal_error", "out of memory");
    }
    cJSON_AddItemToArray(arr, m);
    cJSON_AddStringToObject(m, "model_id", s->model_id);
    cJSON_AddStringToObject(m, "name", s->model_id);
    cJSON_AddStringToObject(m, "description", "Qwen3-TTS served by qtts");
    cJSON_AddBoolToObject(m, "can_do_text_to_speech", 1);
    cJSON_AddBoolToObject(m, "can_do_voice_conversion", 0);
    cJSON_AddBoolToObject(m, "can_use_style", 0);
    cJSON_AddBoolToObject(m, "can_use_speaker_boost", 0);
    cJSON_AddNumberToObject(m, "maximum_text_length_per_request", s->p.max_input_chars);
    cJSON *langs = cJSON_AddArrayToObject(m, "languages");
    for (size_t i = 0; langs && i < sizeof k_languages / sizeof k_languages[0]; i++) {
        if (!model_has_language(s->info, k_languages[i][1])) continue;
        cJSON *l = cJSON_CreateObject();
        if (!l) continue;
        cJSON_AddStringToObject(l, "language_id", k_languages[i][0]);
        cJSON_AddStringToObject(l, "name", k_languages[i][1]);
        cJSON_AddItemToArray(langs, l);
    }
    return respond_cjson(s, c, arr);
}

/* ---- POST /v1/text-to-speech/{voice_id}[/stream] ---- */

typedef struct {
    qtts_server *s;
    srv_job job;          /* the pump's side: resumes the suspended connection */
    srv_session *session; /* engine -> tempo -> the format's rate -> encoder */
    el_format f;
    srv_buf out; /* bytes ready for the socket */
    srv_buf raw; /* G.711: the session's 16-bit PCM not yet companded */
    int state;   /* 0 running, 1 finished, 2 cut */
    int counted;
} el_stream;

static void el_free(el_stream *es) {
    if (!es) return;
    srv_session_free(es->session); /* no notification reaches the job after this */
    srv_pump_remove(es->s->pump, &es->job);
    srv_buf_free(&es->out);
    srv_buf_free(&es->raw);
    if (es->counted) atomic_fetch_sub(&es->s->metrics.inflight, 1);
    free(es);
}

static int is_g711(el_codec c) { return c == EL_ULAW || c == EL_ALAW; }

/* G.711: the session's little-endian 16-bit samples (its one float -> s16
 * rule) companded into out; an odd trailing byte waits for its pair. */
static int compand(el_stream *es) {
    el_codec codec = k_codecs[es->f.row].codec;
    size_t n = srv_buf_pending(&es->raw) / 2;
    const unsigned char *p = (const unsigned char *)es->raw.data + es->raw.off;
    uint8_t b[1024];
    while (n) {
        size_t k = n < sizeof b ? n : sizeof b;
        for (size_t i = 0; i < k; i++, p += 2) {
            int v = (int16_t)(uint16_t)(p[0] | p[1] << 8);
            b[i] = codec == EL_ULAW ? g711_ulaw(v) : g711_alaw(v);
        }
        if (srv_buf_append(&es->out, b, k)) return -1;
        es->raw.off += 2 * k;
        n -= k;
    }
    return 0;
}

/* The body: never blocks. With nothing to send it suspends the connection;
 * the pump resumes it when the engine's notifier fires (or the client
 * leaves, the deadline passes, the server aborts). */
static ssize_t el_reader(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    el_stream *es = cls;
    int g711 = is_g711(k_codecs[es->f.row].codec);
    for (;;) {
        if (srv_buf_pending(&es->out)) return (ssize_t)srv_buf_take(&es->out, buf, max);
        if (es->state == 1) return MHD_CONTENT_READER_END_OF_STREAM;
        if (es->state == 2) return MHD_CONTENT_READER_END_WITH_ERROR;
        qtts_stream *st = srv_session_stream(es->session);
        if (atomic_load(&es->s->aborting)) {
            qtts_stream_cancel(st);
            es->state = 2;
            continue;
        }
        srv_session_state got = srv_session_read(es->session, g711 ? &es->raw : &es->out);
        if ((got == SRV_SESSION_AUDIO || got == SRV_SESSION_DONE) && g711 && compand(es)) got = SRV_SESSION_FAILED;
        switch (got) {
        case SRV_SESSION_AUDIO: continue;
        case SRV_SESSION_DONE:
            es->state = 1;
            atomic_fetch_add(&es->s->metrics.audio_samples_out, srv_session_samples(es->session));
            continue;
        case SRV_SESSION_FAILED: es->state = 2; continue;
        case SRV_SESSION_WAITING:
            if (srv_job_gone(&es->job)) {
                qtts_stream_cancel(st);
                return MHD_CONTENT_READER_END_WITH_ERROR;
            }
            if ((long long)qtts_now_ms() > es->job.deadline_ms) {
                qtts_stream_cancel(st);
                es->state = 2;
                continue;
            }
            if (srv_job_wait(&es->job)) return 0; /* suspended */
            continue;
        }
    }
}

static void el_reader_free(void *cls) { el_free(cls); }

/* The ElevenLabs body as the /v1/audio/speech body it means. Fields that
 * have no counterpart here (model_id, stability, similarity_boost, style,
 * previous_text, ...) are ignored. */
static cJSON *translate(qtts_server *s, const cJSON *in, const char *voice_id, const char **why) {
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(in, "text");
    if (!cJSON_IsString(text)) {
        *why = "'text' is required and must be a string";
        return NULL;
    }
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "input", text->valuestring) ||
        !cJSON_AddStringToObject(o, "voice", voice_id)) {
        cJSON_Delete(o);
        *why = "out of memory";
        return NULL;
    }
    const cJSON *lang = cJSON_GetObjectItemCaseSensitive(in, "language_code");
    if (cJSON_IsString(lang)) /* a language the model lacks is ignored, as ElevenLabs does */
        for (size_t i = 0; i < sizeof k_languages / sizeof k_languages[0]; i++)
            if (!strcasecmp(lang->valuestring, k_languages[i][0]) && model_has_language(s->info, k_languages[i][1]))
                cJSON_AddStringToObject(o, "language", k_languages[i][1]);
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(in, "seed");
    if (seed && !cJSON_IsNull(seed)) cJSON_AddItemToObject(o, "seed", cJSON_Duplicate(seed, 0));
    const cJSON *vs = cJSON_GetObjectItemCaseSensitive(in, "voice_settings");
    const cJSON *speed = cJSON_IsObject(vs) ? cJSON_GetObjectItemCaseSensitive(vs, "speed") : NULL;
    if (speed && !cJSON_IsNull(speed)) cJSON_AddItemToObject(o, "speed", cJSON_Duplicate(speed, 0));
    return o;
}

static enum MHD_Result route_tts(qtts_server *s, struct MHD_Connection *c, const char *voice_id, const char *body,
                                 size_t body_len) {
    el_format f;
    char why_fmt[512];
    const char *fv = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "output_format");
    if (parse_format(fv && *fv ? fv : DEFAULT_FORMAT, &f, why_fmt, sizeof why_fmt))
        return srv_el_error(s, c, 400, "invalid_output_format", "%s", why_fmt);
    const char *end = NULL;
    cJSON *in = cJSON_ParseWithLengthOpts(body ? body : "", body_len, &end, 0);
    if (!cJSON_IsObject(in)) {
        cJSON_Delete(in);
        return srv_el_error(s, c, 400, "invalid_json", "the request body must be a JSON object");
    }
    const char *why = "";
    cJSON *req = translate(s, in, voice_id, &why);
    cJSON_Delete(in);
    if (!req) return srv_el_error(s, c, 422, "invalid_request", "%s", why);
    srv_speech_ctx ctx;
    srv_speech_context(s, &ctx); /* the same voices, aliases and limits as /v1/audio/speech */
    srv_speech_request o;
    srv_bad_req b;
    memset(&b, 0, sizeof b);
    if (srv_speech_request_parse(&ctx, req, &o, &b)) {
        cJSON_Delete(req);
        int nf = b.code && !strcmp(b.code, "voice_not_found");
        return srv_el_error(s, c, nf ? 404 : b.status, nf ? "voice_not_found" : b.code ? b.code : "invalid_request",
                            "%s", b.msg);
    }
    el_stream *es = calloc(1, sizeof *es);
    if (!es) {
        qtts_voice_release(o.voice);
        cJSON_Delete(req);
        return srv_el_error(s, c, 500, "internal_error", "out of memory");
    }
    es->s = s;
    es->f = f;
    es->job.conn = c;
    es->job.deadline_ms = (long long)qtts_now_ms() + (long long)s->p.request_timeout_s * 1000;
    atomic_fetch_add(&s->metrics.inflight, 1);
    es->counted = 1;
    srv_pump_add(s->pump, &es->job); /* before the notifier can fire */
    /* Streamed either way (a WAV header then says "length unknown"); G.711
     * is 16-bit PCM from the session, companded here. */
    srv_session_opts so = {.fmt = k_codecs[f.row].fmt,
                           .speed = o.speed,
                           .sample_rate = s->info->sample_rate,
                           .out_rate = f.rate,
                           .whole = 0,
                           .notify = srv_job_notify,
                           .notify_user = &es->job,
                           .notify_fd = -1};
    qtts_error err = {0};
    es->session = srv_session_start(s->engine, &o.r, &so, &err);
    qtts_voice_release(o.voice); /* the request holds its own */
    cJSON_Delete(req);
    if (!es->session) {
        el_free(es);
        int st = http_status_of(err.status);
        return srv_el_error(s, c, st, st == 503 ? "system_busy" : st >= 500 ? "internal_error" : "invalid_request",
                            "%s", err.message);
    }
    atomic_fetch_add(&s->metrics.speech_requests, 1);
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 32 * 1024, el_reader, es,
                                                               el_reader_free);
    if (!r) {
        el_free(es);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", k_codecs[f.row].mime);
    return srv_queue(s, c, 200, r);
}

enum MHD_Result srv_el_route(qtts_server *s, struct MHD_Connection *c, const char *url, const char *method,
                             const char *body, size_t body_len) {
    int get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    if (!strcmp(url, "/v1/models")) return get ? route_models(s, c) : srv_el_error(s, c, 405, "method_not_allowed", "use GET");
    if (!strcmp(url, "/v1/voices")) return get ? route_voices(s, c, NULL) : srv_el_error(s, c, 405, "method_not_allowed", "use GET");
    if (!strncmp(url, "/v1/voices/", 11)) {
        const char *id = url + 11;
        if (!*id || strchr(id, '/')) return srv_el_error(s, c, 404, "not_found", "no route for %s %s", method, url);
        return get ? route_voices(s, c, id) : srv_el_error(s, c, 405, "method_not_allowed", "use GET");
    }
    /* /v1/text-to-speech/{voice_id} or .../stream */
    const char *id = url + 19, *slash = strchr(id, '/');
    size_t n = slash ? (size_t)(slash - id) : strlen(id);
    if (!n || n > 64 || (slash && strcmp(slash, "/stream")))
        return srv_el_error(s, c, 404, "not_found", "no route for %s %s (this server has /v1/text-to-speech/{voice_id} "
                                                   "and /v1/text-to-speech/{voice_id}/stream)",
                            method, url);
    if (strcmp(method, "POST")) return srv_el_error(s, c, 405, "method_not_allowed", "use POST");
    char voice_id[72];
    memcpy(voice_id, id, n);
    voice_id[n] = 0;
    return route_tts(s, c, voice_id, body, body_len);
}
