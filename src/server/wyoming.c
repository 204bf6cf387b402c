/* The Wyoming server (see wyoming.h and docs/wyoming.md). */
#include "server/wyoming.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/sampling_ranges.h"
#include "io/json_util.h"
#include "model/config.h"
#include "server/frame_limit.h"
#include "server/buf.h"
#include "server/send.h"
#include "server/session.h"
#include "server/socket_compat.h"
#include "server/wake.h"
#include "voices/voice_store.h"
#include "server/wyoming_frame.h"
#include "text/utf8.h"

#define WY_SEND_TIMEOUT_S 10  /* a client that stops reading is dropped */
#define WY_DESIGN_VOICE "design"
#define WY_ATTRIBUTION_NAME "Qwen"
#define WY_ATTRIBUTION_URL "https://github.com/QwenLM/Qwen3-TTS"

enum { SLOT_FREE = 0, SLOT_RUNNING };

/* One per max_connections, each with its own thread started with the server:
 * the process's thread count does not change with connections. */
typedef struct {
    struct qtts_wyoming *w;
    pthread_t th;
    int state; /* under w->mu; the accept thread sets RUNNING, the slot thread FREE */
    int fd;    /* under w->mu; -1 once the connection thread closed it */
} wy_slot;

struct qtts_wyoming {
    qtts_engine *e;
    const qtts_model_info *info;
    qtts_wyoming_params p;
    char *host, *voices_dir, *voice, *instruct, *language, *zc_name; /* owned copies of p's strings */
    srv_voices *voices; /* Base models */
    const char **lang_codes; /* ISO 639-1 code (or the model's name) of each info->languages entry but "auto" */
    int n_lang_codes;
    int listen_fd, port;
    int wake[2]; /* stop -> accept thread */
    pthread_t accept_th;
    int accept_started;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* under mu: a slot became RUNNING, or quit was set */
    wy_slot *slots;
    int n_threads; /* slot threads created (all joined by stop) */
    int quit;      /* under mu: slot threads return once their connection is over */
    int n_running; /* under mu */
    atomic_int draining; /* idle connections close, running syntheses finish */
    atomic_int aborting; /* running syntheses are cut */
    srv_wake drain_wake, abort_wake; /* readable once draining / aborting is set (never drained) */
    atomic_uint_least64_t wakeups;   /* connection threads' wake-ups (qtts_wyoming_stream_wakeups) */
    wy_zeroconf *zc;
};

void qtts_wyoming_params_default(qtts_wyoming_params *p) {
    memset(p, 0, sizeof *p);
    p->host = "127.0.0.1";
    p->port = 10200;
    p->max_connections = 16;
    p->idle_timeout_s = 60;
    p->request_timeout_s = 600;
    p->max_input_chars = 4096;
    p->chunk_ms = 200;
    p->max_request_frames = SRV_MAX_REQUEST_FRAMES_DEFAULT;
}

int qtts_wyoming_port(const qtts_wyoming *w) { return w ? w->port : 0; }

uint64_t qtts_wyoming_stream_wakeups(qtts_wyoming *w) { return w ? atomic_load(&w->wakeups) : 0; }

static void wlog(const qtts_wyoming *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void wlog(const qtts_wyoming *w, const char *fmt, ...) {
    if (!w->p.verbose) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "qtts wyoming: %s\n", line);
}

/* ---- model names for people and for Home Assistant ---- */

/* The model's language names -> ISO 639-1 (Home Assistant matches voices to
 * its pipelines' languages by code); the inverse of qtts_language_alias. */
static const char *lang_code(const char *name) {
    static const char *const codes[] = {"zh", "en", "de", "es", "ja", "fr", "ko", "ru", "it", "pt"};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (!strcasecmp(qtts_language_alias(codes[i]), name)) return codes[i];
    return name;
}

/* A requested language ("en", "en-US", "en_GB", "English", "auto") -> the
 * model's name for it; *lang = NULL for auto. -1 when the model has none. */
static int resolve_language(const qtts_model_info *info, const char *want, const char **lang) {
    *lang = NULL;
    if (!want || !*want || !strcasecmp(want, "auto")) return 0;
    char primary[32];
    size_t k = strcspn(want, "-_");
    snprintf(primary, sizeof primary, "%.*s", (int)(k < sizeof primary - 1 ? k : sizeof primary - 1), want);
    const char *tries[2] = {want, primary};
    for (int t = 0; t < 2; t++) {
        const char *name = qtts_language_alias(tries[t]);
        for (int i = 0; i < info->n_languages; i++)
            if (strcasecmp(info->languages[i], "auto") && !strcasecmp(info->languages[i], name)) {
                *lang = info->languages[i];
                return 0;
            }
    }
    return -1;
}

static const char *variant_title(const char *variant) {
    if (!strcmp(variant, "custom_voice")) return "CustomVoice";
    if (!strcmp(variant, "voice_design")) return "VoiceDesign";
    if (!strcmp(variant, "base")) return "Base";
    return variant;
}

/* "1b7" -> "1.7B" */
static void size_title(const char *size, char *out, size_t n) {
    if (strlen(size) == 3 && isdigit((unsigned char)size[0]) && size[1] == 'b' && isdigit((unsigned char)size[2]))
        snprintf(out, n, "%c.%cB", size[0], size[2]);
    else
        snprintf(out, n, "%s", size);
}

/* "uncle_fu" -> "Uncle Fu" */
static void speaker_title(const char *name, char *out, size_t n) {
    size_t i = 0;
    int word_start = 1;
    for (; name[i] && i + 1 < n; i++) {
        char ch = name[i] == '_' ? ' ' : name[i];
        out[i] = word_start ? (char)toupper((unsigned char)ch) : ch;
        word_start = ch == ' ';
    }
    out[i] = 0;
}

/* ---- the info event ---- */

static cJSON *attribution(void) {
    cJSON *a = cJSON_CreateObject();
    if (a && (!cJSON_AddStringToObject(a, "name", WY_ATTRIBUTION_NAME) ||
              !cJSON_AddStringToObject(a, "url", WY_ATTRIBUTION_URL))) {
        cJSON_Delete(a);
        return NULL;
    }
    return a;
}

static int add_voice(qtts_wyoming *w, cJSON *voices, const char *name, const char *description, const char *version) {
    cJSON *v = cJSON_CreateObject(), *langs = NULL;
    if (!v || !cJSON_AddItemToArray(voices, v)) {
        cJSON_Delete(v);
        return -1;
    }
    if (!cJSON_AddStringToObject(v, "name", name) || !cJSON_AddStringToObject(v, "description", description) ||
        !cJSON_AddItemToObject(v, "attribution", attribution()) || !cJSON_AddTrueToObject(v, "installed") ||
        !cJSON_AddStringToObject(v, "version", version) || !(langs = cJSON_AddArrayToObject(v, "languages")))
        return -1;
    for (int i = 0; i < w->n_lang_codes; i++)
        if (!cJSON_AddItemToArray(langs, cJSON_CreateString(w->lang_codes[i]))) return -1;
    return 0;
}

static cJSON *build_info(qtts_wyoming *w) {
    const qtts_model_info *info = w->info;
    char size[16], model[96], desc[256];
    size_title(info->size, size, sizeof size);
    snprintf(model, sizeof model, "Qwen3-TTS-12Hz-%s-%s", size, variant_title(info->variant));
    snprintf(desc, sizeof desc, "Qwen3-TTS %s %s (qtts %s, weights %s)", size, variant_title(info->variant),
             qtts_version(), info->weight_type);
    cJSON *root = cJSON_CreateObject(), *tts = NULL, *prog = cJSON_CreateObject(), *voices = NULL;
    int ok = root && prog && (tts = cJSON_AddArrayToObject(root, "tts")) && cJSON_AddItemToArray(tts, prog);
    if (!ok) cJSON_Delete(prog);
    ok = ok && cJSON_AddStringToObject(prog, "name", "qtts") && cJSON_AddStringToObject(prog, "description", desc) &&
         cJSON_AddItemToObject(prog, "attribution", attribution()) && cJSON_AddTrueToObject(prog, "installed") &&
         cJSON_AddStringToObject(prog, "version", qtts_version()) &&
         cJSON_AddTrueToObject(prog, "supports_synthesize_streaming") &&
         (voices = cJSON_AddArrayToObject(prog, "voices"));
    /* The other services are empty lists: readers that index them find them. */
    static const char *const others[] = {"asr", "handle", "intent", "wake", "mic", "snd"};
    for (size_t i = 0; ok && i < sizeof others / sizeof others[0]; i++) ok = cJSON_AddArrayToObject(root, others[i]) != NULL;
    if (ok && !strcmp(info->variant, "custom_voice")) {
        for (int i = 0; ok && i < info->n_speakers; i++) {
            char t[80], d[160];
            speaker_title(info->speakers[i], t, sizeof t);
            snprintf(d, sizeof d, "%s (built-in speaker)", t);
            ok = !add_voice(w, voices, info->speakers[i], d, model);
        }
    } else if (ok && !strcmp(info->variant, "voice_design")) {
        char d[320];
        snprintf(d, sizeof d, "Designed voice: %.280s", w->instruct ? w->instruct : "");
        ok = !add_voice(w, voices, WY_DESIGN_VOICE, d, model);
    } else if (ok) {
        srv_voice_entry *list = NULL;
        size_t n = 0;
        ok = srv_voices_list(w->voices, &list, &n) == 0;
        for (size_t i = 0; ok && i < n; i++) {
            char d[160];
            snprintf(d, sizeof d, "%s (cloned voice%s)", list[i].name,
                     list[i].has_codes && list[i].ref_text ? ", in context" : ", x-vector");
            ok = !add_voice(w, voices, list[i].name, d, model);
        }
        srv_voices_list_free(list, n);
    }
    if (!ok) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

/* ---- one connection ---- */

typedef struct {
    qtts_wyoming *w;
    wy_slot *slot;
    int fd;
    char peer[64];
    wy_reader rd;
    srv_buf out;
    srv_buf audio;      /* 16-bit PCM from the session, not yet sent */
    size_t chunk_bytes; /* an audio-chunk event's payload at most */
    srv_wake wake;      /* the engine's notifier of the synthesis */
    int input_closed;  /* the client sent EOF */
    double last_rx_ms;
    /* the synthesis under way */
    int active;
    int streaming;     /* synthesize-start: text arrives in synthesize-chunk events */
    int submitted;
    int text_done;
    int audio_started;
    qtts_request req;  /* kept for a streamed request's submit at its first words */
    char *instruct;    /* req.instruct (owned) */
    qtts_voice *voice; /* req.voice (one reference) */
    srv_session *session;
    qtts_stream *st;   /* the session's stream */
    long text_chars;
    double t_start_ms, t_first_text_ms, t_first_audio_ms;
    size_t samples;
} wy_conn;

static int send_event(wy_conn *c, const char *type, const cJSON *data, const void *payload, size_t n) {
    if (wy_write_event(&c->out, type, data, payload, n)) return -1;
    int rc = srv_send_all(c->fd, c->out.data + c->out.off, srv_buf_pending(&c->out), WY_SEND_TIMEOUT_S * 1000);
    c->out.off = c->out.len = 0;
    return rc;
}

/* error {text, code}; returns -1 so callers can `return send_error(...)` to end the connection. */
static int send_error(wy_conn *c, const char *code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int send_error(wy_conn *c, const char *code, const char *fmt, ...) {
    char text[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    wlog(c->w, "%s: error %s: %s", c->peer, code, text);
    cJSON *d = cJSON_CreateObject();
    if (d && cJSON_AddStringToObject(d, "text", text) && cJSON_AddStringToObject(d, "code", code))
        send_event(c, "error", d, NULL, 0);
    cJSON_Delete(d);
    return -1;
}

/* audio-start / audio-chunk (with n bytes of pcm) / audio-stop; the
 * timestamp is where the event's audio starts, in ms. audio-stop carries
 * only the timestamp. */
static int send_audio_event(wy_conn *c, const char *type, const void *pcm, size_t n) {
    int with_format = strcmp(type, "audio-stop") != 0;
    cJSON *d = cJSON_CreateObject();
    int rc = -1;
    if (d &&
        (!with_format || (cJSON_AddNumberToObject(d, "rate", c->w->info->sample_rate) &&
                          cJSON_AddNumberToObject(d, "width", 2) && cJSON_AddNumberToObject(d, "channels", 1))) &&
        cJSON_AddNumberToObject(d, "timestamp", floor((double)c->samples * 1000.0 / c->w->info->sample_rate)))
        rc = send_event(c, type, d, n ? pcm : NULL, n);
    cJSON_Delete(d);
    return rc;
}

static void utt_reset(wy_conn *c) {
    srv_session_free(c->session); /* cancels it if it still runs */
    c->session = NULL;
    c->audio.off = c->audio.len = 0;
    if (c->voice) qtts_voice_release(c->voice);
    free(c->instruct);
    c->st = NULL;
    c->voice = NULL;
    c->instruct = NULL;
    c->active = c->streaming = c->submitted = c->text_done = c->audio_started = 0;
    c->text_chars = 0;
    c->samples = 0;
    c->t_first_text_ms = c->t_first_audio_ms = 0;
}

static const char *code_of(qtts_status st) {
    switch (st) {
    case QTTS_ERR_INVALID: return "invalid_request";
    case QTTS_ERR_BUSY: return "busy";
    case QTTS_ERR_CANCELLED: return "cancelled";
    default: return "synthesis_failed";
    }
}

/* The voice: CustomVoice speakers, Base registered voices, VoiceDesign's one
 * designed voice. Fills c->req.speaker / c->voice. */
static int resolve_voice(wy_conn *c, const char *name, const char *speaker) {
    qtts_wyoming *w = c->w;
    const qtts_model_info *info = w->info;
    if (!strcmp(info->variant, "custom_voice")) {
        const char *tries[3] = {name, speaker, name || speaker ? NULL : w->voice};
        for (int t = 0; t < 3; t++)
            for (int i = 0; tries[t] && i < info->n_speakers; i++)
                if (!strcasecmp(tries[t], info->speakers[i])) {
                    c->req.speaker = info->speakers[i];
                    return 0;
                }
        if (name || speaker)
            return send_error(c, "voice_not_found", "unknown voice '%s': this model's speakers are listed by describe",
                              name ? name : speaker);
        c->req.speaker = info->n_speakers ? info->speakers[0] : NULL;
        return 0;
    }
    if (!strcmp(info->variant, "voice_design")) {
        if (name && strcasecmp(name, WY_DESIGN_VOICE))
            return send_error(c, "voice_not_found", "unknown voice '%s': this VoiceDesign model has one voice, '%s'",
                              name, WY_DESIGN_VOICE);
        return 0;
    }
    const char *want = name ? name : speaker ? speaker : w->voice;
    char first[72] = "", err[512] = "";
    if (!want) { /* the first registered voice, by name */
        srv_voice_entry *list = NULL;
        size_t n = 0;
        if (srv_voices_list(w->voices, &list, &n) == 0 && n) snprintf(first, sizeof first, "%s", list[0].name);
        srv_voices_list_free(list, n);
        if (!first[0])
            return send_error(c, "no_voice", "no registered voices: add one with 'qtts voices add NAME --voices-dir "
                                             "DIR ...' and start the server with --voices-dir DIR");
        want = first;
    }
    switch (srv_voices_get(w->voices, want, &c->voice, err, sizeof err)) {
    case 0: c->req.voice = c->voice; return 0;
    case -2: c->voice = NULL; return send_error(c, "voice_not_found", "unknown voice '%s' (describe lists them)", want);
    default: c->voice = NULL; return send_error(c, "voice_not_found", "voice '%s' does not load: %s", want, err);
    }
}

static int ext_number(wy_conn *c, const cJSON *ext, const char *name, double lo, double hi, int integer, int *has,
                      double *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(ext, name);
    *has = 0;
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi) ||
        (integer && v->valuedouble != floor(v->valuedouble)))
        return integer ? send_error(c, "invalid_request", "qtts.%s must be an integer in [%.0f, %.0f]", name, lo, hi)
                       : send_error(c, "invalid_request", "qtts.%s must be a number in [%g, %g]", name, lo, hi);
    *has = 1;
    *out = v->valuedouble;
    return 0;
}

static int ext_bool(wy_conn *c, const cJSON *ext, const char *name, int *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(ext, name);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsBool(v)) return send_error(c, "invalid_request", "qtts.%s must be true or false", name);
    *out = cJSON_IsTrue(v);
    return 0;
}

/* The qtts-specific extension: data.qtts {seed, greedy, temperature, top_k,
 * top_p, max_frames, layout, instruct, x_vector_only} (docs/wyoming.md).
 * Wyoming itself has none of these; other servers ignore the key. */
static int parse_ext(wy_conn *c, const cJSON *data, const char **instruct) {
    const cJSON *ext = cJSON_GetObjectItemCaseSensitive(data, "qtts");
    if (!ext || cJSON_IsNull(ext)) return 0;
    if (!cJSON_IsObject(ext)) return send_error(c, "invalid_request", "'qtts' must be an object");
    qtts_request *r = &c->req;
    int has;
    double x;
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(ext, "seed");
    const char *why = "";
    if (seed && !cJSON_IsNull(seed)) {
        if (json_seed(seed, &r->seed, &why)) return send_error(c, "invalid_request", "qtts.seed %s", why);
        r->has_seed = 1;
    }
    if (ext_bool(c, ext, "greedy", &r->greedy) || ext_bool(c, ext, "x_vector_only", &r->x_vector_only)) return -1;
    if (ext_number(c, ext, "temperature", 0, QTTS_TEMPERATURE_MAX, 0, &has, &x)) return -1;
    if (has) {
        if (x == 0) r->greedy = 1;
        else r->temperature = (float)x;
    }
    if (ext_number(c, ext, "top_k", 0, QTTS_TOP_K_MAX, 1, &has, &x)) return -1;
    if (has) r->top_k = (int)x;
    if (ext_number(c, ext, "top_p", QTTS_TOP_P_MIN, 1, 0, &has, &x)) return -1;
    if (has) r->top_p = (float)x;
    if (ext_number(c, ext, "max_frames", 1, QTTS_MAX_FRAMES_MAX, 1, &has, &x)) return -1;
    if (has && c->w->p.max_request_frames > 0 && x > c->w->p.max_request_frames)
        return send_error(c, "invalid_request",
                          "qtts.max_frames %.0f is above this server's limit of %d frames (--max-request-frames)", x,
                          c->w->p.max_request_frames);
    if (has) r->max_frames = (int)x;
    const cJSON *layout = cJSON_GetObjectItemCaseSensitive(ext, "layout");
    if (layout && !cJSON_IsNull(layout)) {
        const char *l = cJSON_IsString(layout) ? layout->valuestring : "";
        if (!strcmp(l, "default")) r->layout = QTTS_LAYOUT_DEFAULT;
        else if (!strcmp(l, "streaming")) r->layout = QTTS_LAYOUT_STREAMING;
        else if (!strcmp(l, "non_streaming")) r->layout = QTTS_LAYOUT_NON_STREAMING;
        else return send_error(c, "invalid_request", "qtts.layout must be 'default', 'streaming' or 'non_streaming'");
    }
    const cJSON *ins = cJSON_GetObjectItemCaseSensitive(ext, "instruct");
    if (ins && !cJSON_IsNull(ins)) {
        if (!cJSON_IsString(ins)) return send_error(c, "invalid_request", "qtts.instruct must be a string");
        *instruct = ins->valuestring;
    }
    return 0;
}

static int opt_string(wy_conn *c, const cJSON *obj, const char *name, const char **out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    *out = NULL;
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsString(v)) return send_error(c, "invalid_request", "'%s' must be a string", name);
    *out = v->valuestring[0] ? v->valuestring : NULL;
    return 0;
}

/* synthesize / synthesize-start data -> c->req (voice, language, options). */
static int utt_prepare(wy_conn *c, const cJSON *data) {
    qtts_wyoming *w = c->w;
    utt_reset(c);
    qtts_request_default(&c->req);
    c->req.guard_frames_per_token = w->p.guard_frames_per_token;
    c->req.lexicon = w->p.lexicon;
    c->req.no_repetition_guard = w->p.no_repetition_guard;
    const char *name = NULL, *speaker = NULL, *language = NULL, *instruct = NULL;
    const cJSON *voice = cJSON_GetObjectItemCaseSensitive(data, "voice");
    if (voice && !cJSON_IsNull(voice)) {
        if (!cJSON_IsObject(voice)) return send_error(c, "invalid_request", "'voice' must be an object");
        if (opt_string(c, voice, "name", &name) || opt_string(c, voice, "speaker", &speaker) ||
            opt_string(c, voice, "language", &language))
            return -1;
    }
    if (parse_ext(c, data, &instruct) || resolve_voice(c, name, speaker)) return -1;
    if (!language) language = w->language;
    if (resolve_language(w->info, language, &c->req.language)) {
        char list[512] = "";
        for (int i = 0; i < w->n_lang_codes; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", w->lang_codes[i]);
        return send_error(c, "unsupported_language", "language '%s' is not supported (this model: %s, or auto)",
                          language, list);
    }
    if (!instruct && strcmp(w->info->variant, "base")) instruct = w->instruct;
    if (instruct && *instruct) {
        long nch = qtts_utf8_count(instruct, strlen(instruct));
        if (nch < 0 || nch > w->p.max_input_chars)
            return send_error(c, "invalid_request", "qtts.instruct must be valid UTF-8 of at most %d characters",
                              w->p.max_input_chars);
        if (!(c->instruct = strdup(instruct))) return send_error(c, "synthesis_failed", "out of memory");
        c->req.instruct = c->instruct;
    }
    srv_frame_limit_apply(&c->req, w->p.max_request_frames, w->info->max_frames);
    c->t_start_ms = qtts_now_ms();
    return 0;
}

static int utt_submit(wy_conn *c, const char *text) {
    qtts_error err = {0};
    c->req.text = text;
    c->req.text_incomplete = c->streaming;
    /* Wyoming's audio is 16-bit PCM at the model's rate (audio-start says so) */
    srv_session_opts so = {.fmt = SRV_FMT_PCM, .speed = 1.0, .sample_rate = c->w->info->sample_rate,
                           .notify_fd = c->wake.wr};
    c->session = srv_session_start(c->w->e, &c->req, &so, &err);
    c->req.text = NULL;
    if (!c->session) return send_error(c, code_of(err.status), "%s", err.message);
    c->st = srv_session_stream(c->session);
    c->submitted = 1;
    c->t_first_text_ms = qtts_now_ms();
    return 0;
}

static int is_blank(const char *s) { return !s[strspn(s, " \t\r\n\v\f")]; }

/* An utterance with no words: audio-start + audio-stop (+ synthesize-stopped). */
static int utt_empty(wy_conn *c) {
    int rc = send_audio_event(c, "audio-start", NULL, 0) || send_event(c, "audio-stop", NULL, NULL, 0) ||
             (c->streaming && send_event(c, "synthesize-stopped", NULL, NULL, 0));
    utt_reset(c);
    return rc ? -1 : 0;
}

static int on_synthesize(wy_conn *c, const cJSON *data) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(data, "text");
    if (!cJSON_IsString(t)) return send_error(c, "invalid_request", "synthesize needs 'text' (a string)");
    long nch = qtts_utf8_count(t->valuestring, strlen(t->valuestring));
    if (nch < 0) return send_error(c, "invalid_request", "'text' is not valid UTF-8");
    if (nch > c->w->p.max_input_chars)
        return send_error(c, "text_too_long", "'text' has %ld characters; the limit is %d", nch,
                          c->w->p.max_input_chars);
    if (utt_prepare(c, data)) return -1;
    c->active = 1;
    c->text_done = 1;
    if (is_blank(t->valuestring)) return utt_empty(c);
    wlog(c->w, "%s: synthesize, %ld characters", c->peer, nch);
    return utt_submit(c, t->valuestring);
}

static int on_synthesize_start(wy_conn *c, const cJSON *data) {
    if (utt_prepare(c, data)) return -1;
    c->active = 1;
    c->streaming = 1;
    wlog(c->w, "%s: synthesize-start", c->peer);
    return 0;
}

/* Characters in a piece that may end or start inside one: continuation bytes do not count. */
static long count_chars(const char *s, size_t n) {
    long k = 0;
    for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

static int on_synthesize_chunk(wy_conn *c, const cJSON *data) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(data, "text");
    if (!cJSON_IsString(t)) return send_error(c, "invalid_request", "synthesize-chunk needs 'text' (a string)");
    size_t len = strlen(t->valuestring);
    c->text_chars += count_chars(t->valuestring, len);
    if (c->text_chars > c->w->p.max_input_chars)
        return send_error(c, "text_too_long", "the streamed text has more than %d characters", c->w->p.max_input_chars);
    if (!c->submitted) {
        /* The request starts with its first words: blank pieces before them
         * carry nothing (leading whitespace is not spoken). */
        return is_blank(t->valuestring) ? 0 : utt_submit(c, t->valuestring);
    }
    qtts_error err = {0};
    if (len && qtts_stream_append_text(c->st, t->valuestring, len, 0, &err) != QTTS_OK)
        return send_error(c, code_of(err.status), "%s", err.message);
    return 0;
}

static int on_synthesize_stop(wy_conn *c) {
    wlog(c->w, "%s: synthesize-stop after %ld characters", c->peer, c->text_chars);
    if (!c->submitted) return utt_empty(c);
    qtts_error err = {0};
    if (qtts_stream_append_text(c->st, "", 0, 1, &err) != QTTS_OK) {
        /* The stream already ended (a failure): its own error says why. */
        if (qtts_stream_status(c->st) != QTTS_OK)
            return send_error(c, code_of(qtts_stream_status(c->st)), "%s", qtts_stream_error(c->st));
        return send_error(c, code_of(err.status), "%s", err.message);
    }
    c->text_done = 1;
    return 0;
}

/* Returns 0 to go on, -1 to close the connection. */
static int handle_event(wy_conn *c, const wy_event *ev) {
    const char *type = ev->type;
    if (!strcmp(type, "describe")) {
        cJSON *info = build_info(c->w);
        if (!info) return send_error(c, "internal", "out of memory");
        int rc = send_event(c, "info", info, NULL, 0);
        cJSON_Delete(info);
        return rc;
    }
    if (!strcmp(type, "ping")) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(ev->data, "text");
        if (cJSON_IsString(t) && qtts_utf8_count(t->valuestring, strlen(t->valuestring)) < 0)
            return send_error(c, "invalid_request", "ping text is not valid UTF-8"); /* echoed, it would be invalid JSON */
        cJSON *d = cJSON_CreateObject();
        int rc = -1;
        if (d && (!cJSON_IsString(t) || cJSON_AddStringToObject(d, "text", t->valuestring)))
            rc = send_event(c, "pong", d, NULL, 0);
        cJSON_Delete(d);
        return rc;
    }
    int streaming_text = c->active && c->streaming && !c->text_done;
    if (!strcmp(type, "synthesize")) {
        if (streaming_text) { /* the whole text of what is being streamed: already spoken */
            wlog(c->w, "%s: synthesize during a streamed synthesis: ignored (its text came in chunks)", c->peer);
            return 0;
        }
        return on_synthesize(c, ev->data);
    }
    if (!strcmp(type, "synthesize-start")) {
        if (c->active) return send_error(c, "busy", "synthesize-start while a synthesis is under way");
        return on_synthesize_start(c, ev->data);
    }
    if (!strcmp(type, "synthesize-chunk") || !strcmp(type, "synthesize-stop")) {
        if (!streaming_text) {
            wlog(c->w, "%s: %s without synthesize-start: ignored", c->peer, type);
            return 0;
        }
        return !strcmp(type, "synthesize-chunk") ? on_synthesize_chunk(c, ev->data) : on_synthesize_stop(c);
    }
    wlog(c->w, "%s: event '%s' ignored", c->peer, type);
    return 0;
}

/* Sends the PCM waiting in c->audio as audio-chunk events of at most
 * chunk_ms each (audio-start before the first). */
static int send_chunks(wy_conn *c) {
    size_t n;
    while ((n = srv_buf_pending(&c->audio)) > 0) {
        size_t k = n < c->chunk_bytes ? n : c->chunk_bytes;
        if (!c->audio_started) {
            c->t_first_audio_ms = qtts_now_ms();
            if (send_audio_event(c, "audio-start", NULL, 0)) return -1;
            c->audio_started = 1;
        }
        if (send_audio_event(c, "audio-chunk", c->audio.data + c->audio.off, k)) return -1;
        c->audio.off += k;
        c->samples += k / 2;
    }
    c->audio.off = c->audio.len = 0;
    return 0;
}

/* Moves the audio the engine has now to the client. Returns 0, or -1 when
 * the connection must close. */
static int utt_pump(wy_conn *c) {
    qtts_wyoming *w = c->w;
    if (qtts_now_ms() - c->t_start_ms > (double)w->p.request_timeout_s * 1000.0) {
        qtts_stream_cancel(c->st);
        return send_error(c, "timeout", "the synthesis took longer than %d s", w->p.request_timeout_s);
    }
    if (atomic_load(&w->aborting)) {
        qtts_stream_cancel(c->st);
        return send_error(c, "shutting_down", "the server is shutting down");
    }
    srv_session_state st = srv_session_read(c->session, &c->audio);
    if (st == SRV_SESSION_FAILED)
        return send_error(c, code_of(srv_session_status(c->session)), "synthesis failed: %s",
                          srv_session_error(c->session));
    if (send_chunks(c)) {
        wlog(w, "%s: client gone (send failed): synthesis cancelled", c->peer);
        return -1;
    }
    if (st != SRV_SESSION_DONE) return 0;
    if ((!c->audio_started && send_audio_event(c, "audio-start", NULL, 0)) ||
        send_audio_event(c, "audio-stop", NULL, 0) ||
        (c->streaming && send_event(c, "synthesize-stopped", NULL, NULL, 0)))
        return -1;
    wlog(w, "%s: %.2f s of audio in %.2f s, first audio %.0f ms after the first text", c->peer,
         (double)c->samples / w->info->sample_rate, (qtts_now_ms() - c->t_start_ms) / 1000.0,
         c->t_first_audio_ms ? c->t_first_audio_ms - c->t_first_text_ms : 0.0);
    utt_reset(c);
    return 0;
}

/* Milliseconds until t_ms, for poll(); -1 (forever) when t_ms < 0. */
static int ms_until(double t_ms) {
    if (t_ms < 0) return -1;
    double left = t_ms - qtts_now_ms() + 1;
    return left <= 0 ? 0 : left > 1e9 ? 1000000000 : (int)left;
}

static void conn_run(wy_conn *c) {
    qtts_wyoming *w = c->w;
    unsigned char rbuf[16384];
    c->last_rx_ms = qtts_now_ms();
    for (;;) {
        if (atomic_load(&w->aborting)) {
            if (c->active) send_error(c, "shutting_down", "the server is shutting down");
            return;
        }
        /* Events in arrival order; while a synthesis has all its text, the
         * next events wait their turn (the client pipelined them). */
        while (!(c->active && c->text_done)) {
            wy_event ev;
            int r = wy_reader_next(&c->rd, &ev);
            if (r < 0) {
                send_error(c, "bad_event", "%s", c->rd.error);
                return;
            }
            if (r == 0) break;
            int rc = handle_event(c, &ev);
            wy_event_free(&ev);
            if (rc) return;
        }
        int audio_only = c->active && c->text_done; /* the text is all here: only audio is left */
        if (audio_only) {
            if (utt_pump(c)) return;
            if (!c->active) { /* it ended: the next events; the client was waiting for it, not idle */
                c->last_rx_ms = qtts_now_ms();
                continue;
            }
        } else {
            if (!c->active && (c->input_closed || atomic_load(&w->draining))) return;
            if (c->input_closed) {
                send_error(c, "incomplete", "the client closed its side before synthesize-stop");
                return;
            }
            if (c->submitted && utt_pump(c)) return;
        }
        /* Sleeps until the client sends (or, with only audio left, hangs
         * up), the engine has audio or an end, the server stops, or a
         * deadline: the idle timeout, the request's time limit. */
        enum { P_SOCK, P_ABORT, P_ENGINE, P_DRAIN };
        struct pollfd pf[4] = {{.fd = c->fd, .events = audio_only ? 0 : POLLIN},
                               {.fd = w->abort_wake.rd, .events = POLLIN},
                               {.fd = c->session ? c->wake.rd : -1, .events = POLLIN},
                               {.fd = c->active ? -1 : w->drain_wake.rd, .events = POLLIN}};
        double until = audio_only ? -1 : c->last_rx_ms + (double)w->p.idle_timeout_s * 1000.0;
        if (c->session) {
            double end = c->t_start_ms + (double)w->p.request_timeout_s * 1000.0;
            if (until < 0 || end < until) until = end;
        }
        int pr = poll(pf, 4, ms_until(until));
        atomic_fetch_add(&w->wakeups, 1);
        if (pr > 0 && pf[P_ENGINE].revents) srv_wake_drain(&c->wake);
        if (audio_only) {
            if (pr > 0 && (pf[P_SOCK].revents & (POLLHUP | POLLERR | POLLNVAL))) {
                wlog(w, "%s: client gone: synthesis cancelled", c->peer);
                return;
            }
            continue;
        }
        if (pr > 0 && !pf[P_SOCK].revents) continue;
        if (pr < 0 && errno != EINTR) return;
        if (pr > 0) {
            if (pf[P_SOCK].revents & (POLLERR | POLLNVAL)) {
                if (c->active) wlog(w, "%s: client gone (socket error): synthesis cancelled", c->peer);
                return;
            }
            ssize_t n = recv(c->fd, rbuf, sizeof rbuf, MSG_DONTWAIT);
            if (n > 0) {
                if (wy_reader_feed(&c->rd, rbuf, (size_t)n)) {
                    send_error(c, "internal", "%s", c->rd.error);
                    return;
                }
                c->last_rx_ms = qtts_now_ms();
            } else if (n == 0) {
                c->input_closed = 1;
            } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                if (c->active) wlog(w, "%s: client gone (%s): synthesis cancelled", c->peer, strerror(errno));
                return;
            }
        } else if (pr == 0 && qtts_now_ms() - c->last_rx_ms > (double)w->p.idle_timeout_s * 1000.0) {
            if (c->active)
                send_error(c, "timeout", "no synthesize-chunk or synthesize-stop for %d s", w->p.idle_timeout_s);
            else
                wlog(w, "%s: idle for %d s: closed", c->peer, w->p.idle_timeout_s);
            return;
        }
    }
}

/* Before closing: our side says EOF, and what the client still sends is
 * read and dropped for a moment. Closing with unread input would send a
 * reset, which can destroy the last events (an error) before the client
 * reads them. */
static void linger_input(int fd) {
    shutdown(fd, SHUT_WR);
    char sink[4096];
    size_t dropped = 0;
    for (double end = qtts_now_ms() + 300; dropped < 256 * 1024;) {
        int left = (int)(end - qtts_now_ms());
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        if (left <= 0 || poll(&pf, 1, left) <= 0) break;
        ssize_t n = recv(fd, sink, sizeof sink, MSG_DONTWAIT);
        if (n <= 0 && !(n < 0 && (errno == EINTR || errno == EAGAIN))) break;
        if (n > 0) dropped += (size_t)n;
    }
}

static void slot_close_fd(wy_slot *s) {
    pthread_mutex_lock(&s->w->mu);
    int fd = s->fd;
    s->fd = -1; /* stop() never shuts down a number the kernel may reuse */
    pthread_mutex_unlock(&s->w->mu);
    if (fd >= 0) close(fd);
}

/* One connection, on its slot's thread; the slot is RUNNING with its fd. */
static void conn_serve(wy_slot *s) {
    qtts_wyoming *w = s->w;
    wy_conn *c = calloc(1, sizeof *c);
    if (c) {
        c->w = w;
        c->slot = s;
        pthread_mutex_lock(&w->mu);
        c->fd = s->fd;
        pthread_mutex_unlock(&w->mu);
        wy_reader_init(&c->rd);
        c->chunk_bytes = 2 * ((size_t)w->info->sample_rate * (size_t)w->p.chunk_ms / 1000);
        if (c->chunk_bytes < 2) c->chunk_bytes = 2;
        int woke = srv_wake_open(&c->wake) == 0;
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        char h[48] = "?", port[8] = "?";
        if (!getpeername(c->fd, (struct sockaddr *)&ss, &sl))
            getnameinfo((struct sockaddr *)&ss, sl, h, sizeof h, port, sizeof port, NI_NUMERICHOST | NI_NUMERICSERV);
        snprintf(c->peer, sizeof c->peer, "%s:%s", h, port);
        if (woke) {
            wlog(w, "%s: connected", c->peer);
            conn_run(c);
            wlog(w, "%s: closed", c->peer);
        } else {
            send_error(c, "internal", "out of memory");
        }
        utt_reset(c);
        linger_input(c->fd);
        wy_reader_free(&c->rd);
        srv_buf_free(&c->out);
        srv_buf_free(&c->audio);
        srv_wake_close(&c->wake);
        free(c);
    }
    slot_close_fd(s);
}

/* A slot's thread: serves each connection the accept thread hands to its slot,
 * until quit. A slot made RUNNING before quit is served first, so stop's
 * drain and abort apply to it as to any running connection. */
static void *slot_main(void *arg) {
    wy_slot *s = arg;
    qtts_wyoming *w = s->w;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (s->state != SLOT_RUNNING && !w->quit) pthread_cond_wait(&w->cv, &w->mu);
        if (s->state != SLOT_RUNNING) break; /* quit */
        pthread_mutex_unlock(&w->mu);
        conn_serve(s);
        pthread_mutex_lock(&w->mu);
        s->state = SLOT_FREE;
        w->n_running--;
        pthread_cond_broadcast(&w->cv); /* qtts_wyoming_stop may be waiting for the last one */
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Sets quit and joins every slot thread created (each ends its connection first). */
static void pool_stop(qtts_wyoming *w) {
    pthread_mutex_lock(&w->mu);
    w->quit = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    for (int i = 0; i < w->n_threads; i++) pthread_join(w->slots[i].th, NULL);
    w->n_threads = 0;
}

/* Best effort, never blocking: a refused client learns why. */
static void refuse(int fd, const char *code, const char *text) {
    srv_buf b = {0};
    cJSON *d = cJSON_CreateObject();
    if (d && cJSON_AddStringToObject(d, "text", text) && cJSON_AddStringToObject(d, "code", code) &&
        !wy_write_event(&b, "error", d, NULL, 0))
        (void)!send(fd, b.data, b.len, QTTS_MSG_NOSIGNAL | MSG_DONTWAIT);
    cJSON_Delete(d);
    srv_buf_free(&b);
    /* Unread input at close() makes a reset, which may destroy the error
     * before the client reads it: drop what has arrived (no waiting). */
    shutdown(fd, SHUT_WR);
    char sink[4096];
    for (int i = 0; i < 16 && recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0; i++) {
    }
    close(fd);
}

static void setup_conn_socket(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* small events go out at once */
    struct timeval tv = {WY_SEND_TIMEOUT_S, 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

static void *accept_main(void *arg) {
    qtts_wyoming *w = arg;
    for (;;) {
        struct pollfd pf[2] = {{.fd = w->listen_fd, .events = POLLIN}, {.fd = w->wake[0], .events = POLLIN}};
        int pr = poll(pf, 2, -1); /* the listener, or stop's wake-up */
        if (pr < 0 && errno != EINTR) break;
        if (pr <= 0) continue;
        if (pf[1].revents) break;
        if (!(pf[0].revents & POLLIN)) continue;
        int fd = qtts_accept_cloexec(w->listen_fd);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                struct timespec ts = {0, 50 * 1000000}; /* out of descriptors: do not spin */
                nanosleep(&ts, NULL);
            }
            continue;
        }
        setup_conn_socket(fd);
        pthread_mutex_lock(&w->mu);
        wy_slot *s = NULL;
        for (int i = 0; i < w->p.max_connections && !s; i++)
            if (w->slots[i].state == SLOT_FREE) s = &w->slots[i];
        if (s) {
            s->fd = fd;
            s->state = SLOT_RUNNING;
            w->n_running++;
            pthread_cond_broadcast(&w->cv); /* one cv for all slots: wake them, the slot's own thread takes it */
        }
        pthread_mutex_unlock(&w->mu);
        if (!s) {
            char text[128];
            snprintf(text, sizeof text, "the server is busy: %d connections are open (its --max-connections)",
                     w->p.max_connections);
            refuse(fd, "busy", text);
            wlog(w, "refused a connection: %d are open", w->p.max_connections);
        }
    }
    return NULL;
}

/* ---- lifecycle ---- */

static void warn_voice(void *user, const char *msg) {
    (void)user;
    fprintf(stderr, "qtts wyoming: skipping a voice: %s\n", msg);
}

static int dup_param(const char *in, char **out) {
    *out = NULL;
    if (!in) return 0;
    return (*out = strdup(in)) ? 0 : -1;
}

static void wyoming_free(qtts_wyoming *w) {
    if (w->listen_fd >= 0) close(w->listen_fd);
    if (w->wake[0] >= 0) close(w->wake[0]);
    if (w->wake[1] >= 0) close(w->wake[1]);
    if (w->voices) srv_voices_free(w->voices);
    srv_wake_close(&w->drain_wake);
    srv_wake_close(&w->abort_wake);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w->slots);
    free(w->lang_codes);
    free(w->host);
    free(w->voices_dir);
    free(w->voice);
    free(w->instruct);
    free(w->language);
    free(w->zc_name);
    free(w);
}

static int check_params(qtts_wyoming *w, char *err, size_t n) {
    const qtts_model_info *info = w->info;
    const qtts_wyoming_params *p = &w->p;
    if (p->port < 0 || p->port > 65535) return snprintf(err, n, "wyoming: port %d is out of range", p->port), -1;
    if (p->max_connections < 1 || p->max_connections > 65536)
        return snprintf(err, n, "wyoming: max_connections must be in [1, 65536]"), -1;
    if (p->idle_timeout_s < 1 || p->request_timeout_s < 1 || p->max_input_chars < 1)
        return snprintf(err, n, "wyoming: timeouts and max_input_chars must be at least 1"), -1;
    if (p->chunk_ms < 10 || p->chunk_ms > 10000) return snprintf(err, n, "wyoming: chunk_ms must be in [10, 10000]"), -1;
    int base = !strcmp(info->variant, "base");
    if (!strcmp(info->variant, "voice_design") && (!w->instruct || !*w->instruct))
        return snprintf(err, n, "a VoiceDesign model needs --instruct TEXT: the description of the voice it speaks "
                                "with"), -1;
    const char *lang = NULL;
    if (w->language && resolve_language(info, w->language, &lang))
        return snprintf(err, n, "--language '%s' is not one of this model's languages", w->language), -1;
    if (base && w->instruct && *w->instruct)
        return snprintf(err, n, "--instruct is not supported with a Base model (it clones registered voices)"), -1;
    if (w->voice && !strcmp(info->variant, "custom_voice")) {
        for (int i = 0; i < info->n_speakers; i++)
            if (!strcasecmp(w->voice, info->speakers[i])) return 0;
        return snprintf(err, n, "--voice '%s' is not one of this model's speakers", w->voice), -1;
    }
    if (w->voice && base) {
        qtts_voice *v = NULL;
        char e2[256] = "";
        int rc = srv_voices_get(w->voices, w->voice, &v, e2, sizeof e2);
        if (v) qtts_voice_release(v);
        if (rc == -2)
            return snprintf(err, n, "--voice '%s' is not a registered voice%s%s", w->voice,
                            w->voices_dir ? " of " : " (no --voices-dir)", w->voices_dir ? w->voices_dir : ""), -1;
        if (rc) return snprintf(err, n, "--voice '%s': %s", w->voice, e2), -1;
    }
    return 0;
}

static int open_listener(qtts_wyoming *w, char *err, size_t n) {
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    char port[8];
    snprintf(port, sizeof port, "%d", w->p.port);
    int gai = getaddrinfo(w->host, port, &hints, &res);
    if (gai) return snprintf(err, n, "wyoming: address %s: %s", w->host, gai_strerror(gai)), -1;
    int fd = -1, saved = 0;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = qtts_socket_cloexec(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd < 0) {
            saved = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, a->ai_addr, a->ai_addrlen) || listen(fd, 64)) {
            saved = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) return snprintf(err, n, "wyoming: cannot listen on %s:%d: %s", w->host, w->p.port, strerror(saved)), -1;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char h[64], ps[8];
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) ||
        getnameinfo((struct sockaddr *)&ss, sl, h, sizeof h, ps, sizeof ps, NI_NUMERICHOST | NI_NUMERICSERV)) {
        close(fd);
        return snprintf(err, n, "wyoming: getsockname: %s", strerror(errno)), -1;
    }
    w->listen_fd = fd;
    w->port = atoi(ps);
    return 0;
}

qtts_wyoming *qtts_wyoming_start(qtts_engine *e, const qtts_wyoming_params *p, char *err, size_t err_size) {
    qtts_wyoming_params def;
    if (!p) {
        qtts_wyoming_params_default(&def);
        p = &def;
    }
    qtts_wyoming *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    w->listen_fd = w->wake[0] = w->wake[1] = -1;
    w->drain_wake.rd = w->drain_wake.wr = w->abort_wake.rd = w->abort_wake.wr = -1;
    int me = pthread_mutex_init(&w->mu, NULL), ce = me ? 0 : pthread_cond_init(&w->cv, NULL);
    if (me || ce) {
        if (!me) pthread_mutex_destroy(&w->mu);
        snprintf(err, err_size, "wyoming: cannot create a lock: %s", strerror(me ? me : ce));
        free(w);
        return NULL;
    }
    w->e = e;
    w->info = qtts_engine_info(e);
    w->p = *p;
    if (dup_param(p->host && *p->host ? p->host : "127.0.0.1", &w->host) ||
        dup_param(p->voices_dir && *p->voices_dir ? p->voices_dir : NULL, &w->voices_dir) ||
        dup_param(p->voice && *p->voice ? p->voice : NULL, &w->voice) ||
        dup_param(p->instruct && *p->instruct ? p->instruct : NULL, &w->instruct) ||
        dup_param(p->language && *p->language ? p->language : NULL, &w->language) ||
        dup_param(p->zeroconf_name && *p->zeroconf_name ? p->zeroconf_name : "qtts", &w->zc_name)) {
        snprintf(err, err_size, "out of memory");
        wyoming_free(w);
        return NULL;
    }
    w->p.host = w->host;
    w->p.voices_dir = w->voices_dir;
    w->p.voice = w->voice;
    w->p.instruct = w->instruct;
    w->p.language = w->language;
    w->p.zeroconf_name = w->zc_name;
    atomic_init(&w->draining, 0);
    atomic_init(&w->aborting, 0);
    atomic_init(&w->wakeups, 0);
    if (srv_wake_open(&w->drain_wake) || srv_wake_open(&w->abort_wake)) {
        snprintf(err, err_size, "wyoming: cannot create a pipe: %s", strerror(errno));
        wyoming_free(w);
        return NULL;
    }
    if (!strcmp(w->info->variant, "base")) {
        w->voices = srv_voices_open(e, w->voices_dir, warn_voice, NULL, err, err_size);
        if (!w->voices) {
            wyoming_free(w);
            return NULL;
        }
    }
    w->lang_codes = calloc((size_t)w->info->n_languages + 1, sizeof *w->lang_codes);
    w->slots = calloc((size_t)(p->max_connections > 0 ? p->max_connections : 1), sizeof *w->slots);
    if (!w->lang_codes || !w->slots) {
        snprintf(err, err_size, "out of memory");
        wyoming_free(w);
        return NULL;
    }
    for (int i = 0; i < w->info->n_languages; i++)
        if (strcasecmp(w->info->languages[i], "auto")) w->lang_codes[w->n_lang_codes++] = lang_code(w->info->languages[i]);
    if (check_params(w, err, err_size) || open_listener(w, err, err_size)) {
        wyoming_free(w);
        return NULL;
    }
    for (int i = 0; i < p->max_connections; i++) {
        w->slots[i].w = w;
        w->slots[i].fd = -1;
    }
    for (int i = 0; i < p->max_connections; i++) {
        int rc = pthread_create(&w->slots[i].th, NULL, slot_main, &w->slots[i]);
        if (rc) {
            snprintf(err, err_size, "wyoming: cannot start connection thread %d of %d (--max-connections): %s", i + 1,
                     p->max_connections, strerror(rc));
            pool_stop(w);
            wyoming_free(w);
            return NULL;
        }
        w->n_threads++;
    }
    if (qtts_pipe_cloexec(w->wake) || pthread_create(&w->accept_th, NULL, accept_main, w)) {
        snprintf(err, err_size, "wyoming: cannot start the accept thread: %s", strerror(errno));
        pool_stop(w);
        wyoming_free(w);
        return NULL;
    }
    w->accept_started = 1;
    if (p->zeroconf) {
        char why[256] = "";
        if (!strncmp(w->host, "127.", 4) || !strcmp(w->host, "::1") || !strcmp(w->host, "localhost"))
            fprintf(stderr, "qtts wyoming: zeroconf: the server listens on %s only; Home Assistant on another "
                            "machine cannot connect (use --host 0.0.0.0)\n", w->host);
        w->zc = wy_zeroconf_start(w->zc_name, w->port, p->verbose, why, sizeof why);
        if (!w->zc) fprintf(stderr, "qtts wyoming: zeroconf: not announced: %s\n", why);
    }
    return w;
}

int qtts_wyoming_stop(qtts_wyoming *w, int deadline_ms) {
    if (!w) return 0;
    if (w->accept_started) {
        (void)!write(w->wake[1], "x", 1);
        pthread_join(w->accept_th, NULL);
        w->accept_started = 0;
    }
    close(w->listen_fd); /* new clients are refused by the kernel from here */
    w->listen_fd = -1;
    wy_zeroconf_stop(w->zc);
    w->zc = NULL;
    atomic_store(&w->draining, 1);
    srv_wake_signal(&w->drain_wake); /* idle connections close at once */
    struct timespec end;
    clock_gettime(CLOCK_REALTIME, &end); /* the condition variable's clock */
    long long ns = (long long)end.tv_nsec + (long long)(deadline_ms > 0 ? deadline_ms : 0) * 1000000LL;
    end.tv_sec += (time_t)(ns / 1000000000LL);
    end.tv_nsec = (long)(ns % 1000000000LL);
    pthread_mutex_lock(&w->mu);
    while (w->n_running && pthread_cond_timedwait(&w->cv, &w->mu, &end) != ETIMEDOUT) {
    }
    int running = w->n_running;
    pthread_mutex_unlock(&w->mu);
    if (running) {
        atomic_store(&w->aborting, 1);
        srv_wake_signal(&w->abort_wake);
    }
    /* With the accept thread gone no slot becomes RUNNING: the ones running
     * now are all the connections left. */
    pthread_mutex_lock(&w->mu);
    for (int i = 0; i < w->p.max_connections; i++) {
        wy_slot *s = &w->slots[i];
        if (s->state == SLOT_RUNNING && s->fd >= 0) shutdown(s->fd, SHUT_RDWR); /* wakes a send to a non-reader */
    }
    pthread_mutex_unlock(&w->mu);
    pool_stop(w); /* each slot thread ends its connection, then returns */
    wyoming_free(w);
    return running;
}
