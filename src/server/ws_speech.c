#include "io/json_util.h"
#include "server/ws_speech.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"
#include "server/internal.h"
#include "server/send.h"
#include "server/session.h"
#include "server/socket_compat.h"
#include "server/speech_request.h"
#include "server/wake.h"
#include "voices/voice_store.h"
#include "server/ws_frame.h"

#define WS_MAX_MESSAGE (1 << 20) /* a client message: config or a text piece */
#define WS_SEND_TIMEOUT_MS 10000 /* a client that stops reading is dropped */
#define WS_IDLE_TIMEOUT_MS 300000

typedef struct {
    int sock;
    void *urh;
    void (*done)(void *urh);
    unsigned char *extra;
    size_t extra_len;
} ws_job;

struct srv_ws_pool {
    qtts_server *s;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t *threads;
    int n_threads, started;
    int reserved; /* sessions promised to upgrades, running or queued */
    ws_job *queue;
    int q_head, q_len;
    atomic_int stopping; /* read by running sessions without the lock */
    int joined;          /* srv_ws_pool_stop has joined the threads */
    srv_wake stop;       /* readable once stopping or the server aborts: every session looks at the flags */
};

/* ---- one session ---- */

typedef struct {
    qtts_server *s;
    int sock;
    ws_reader rd;
    unsigned char *in;
    size_t in_len, in_cap;
    cJSON *config; /* the last session.config (an object without "input") */
    srv_wake wake; /* the engine's notifier of the current utterance */
    /* the current utterance */
    srv_session *session;
    qtts_stream *st; /* the session's stream; NULL between utterances */
    srv_format fmt;
    srv_buf out;   /* encoded audio waiting to go out as one binary message */
    int text_done; /* input.done seen */
    int skip_to_done; /* the utterance ended (EOS) before its text: drop pieces until input.done */
    int refused;      /* input.text could not start an utterance (its error went out); until input.done */
    int closing;   /* session.close seen: close after the utterance */
    double t_last;
} ws_session;

static int send_frame(ws_session *ss, int opcode, const void *p, size_t n) {
    unsigned char h[10];
    size_t hn = ws_frame_header(opcode, n, h);
    return srv_send_all(ss->sock, h, hn, WS_SEND_TIMEOUT_MS) || (n && srv_send_all(ss->sock, p, n, WS_SEND_TIMEOUT_MS))
               ? -1
               : 0;
}

static int send_json(ws_session *ss, cJSON *o) {
    char *js = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!js) return -1;
    int rc = send_frame(ss, WS_OP_TEXT, js, strlen(js));
    free(js);
    return rc;
}

static int send_error(ws_session *ss, const char *code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int send_error(ws_session *ss, const char *code, const char *fmt, ...) {
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cJSON *o = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(o, "error");
    cJSON_AddStringToObject(o, "type", "error");
    cJSON_AddStringToObject(e, "message", msg);
    cJSON_AddStringToObject(e, "type", "invalid_request_error");
    cJSON_AddStringToObject(e, "code", code);
    return send_json(ss, o);
}

static void utterance_end(ws_session *ss) {
    if (ss->st && !ss->text_done) ss->skip_to_done = 1;
    srv_session_free(ss->session); /* cancels it if it still runs */
    ss->session = NULL;
    ss->st = NULL;
    srv_buf_free(&ss->out);
    ss->text_done = 0;
    ss->t_last = qtts_now_ms(); /* the idle timeout counts from here: the client waited for the utterance */
}

/* session.config (or the stored one) + "input" -> a started incremental request. */
static int utterance_start(ws_session *ss) {
    qtts_server *s = ss->s;
    cJSON *req = ss->config ? cJSON_Duplicate(ss->config, 1) : cJSON_CreateObject();
    if (!req) return send_error(ss, "server_error", "out of memory");
    cJSON_DeleteItemFromObjectCaseSensitive(req, "input");
    cJSON_AddStringToObject(req, "input", "-"); /* the parser wants an input; the text comes in pieces */
    if (!cJSON_HasObjectItem(req, "response_format")) cJSON_AddStringToObject(req, "response_format", "pcm");
    srv_speech_ctx ctx;
    srv_speech_context(s, &ctx);
    srv_speech_request o;
    srv_bad_req b;
    memset(&o, 0, sizeof o);
    memset(&b, 0, sizeof b);
    int rc = 0;
    if (srv_speech_request_parse(&ctx, req, &o, &b)) {
        rc = send_error(ss, b.code ? b.code : "invalid_request", "session.config: %s", b.msg);
    } else if (o.ref_audio) {
        srv_speech_request_clear(&o);
        rc = send_error(ss, "unsupported", "session.config: ref_audio is not supported here; register the voice "
                                           "(POST /v1/audio/voices) and name it");
    } else {
        o.r.text = "";
        o.r.text_incomplete = 1;
        qtts_error err = {0};
        srv_session_opts so = {.fmt = o.fmt,
                               .speed = o.speed,
                               .sample_rate = s->info->sample_rate,
                               .notify_fd = ss->wake.wr};
        ss->session = srv_session_start(s->engine, &o.r, &so, &err);
        ss->st = ss->session ? srv_session_stream(ss->session) : NULL;
        if (!ss->st) {
            rc = send_error(ss, err.status == QTTS_ERR_BUSY ? "server_busy" : "invalid_request", "%s", err.message);
        } else {
            atomic_fetch_add(&s->metrics.speech_requests, 1);
            ss->fmt = o.fmt;
            cJSON *a = cJSON_CreateObject();
            cJSON_AddStringToObject(a, "type", "audio.start");
            cJSON_AddStringToObject(a, "format", srv_format_name(o.fmt));
            cJSON_AddNumberToObject(a, "sample_rate", s->info->sample_rate);
            rc = send_json(ss, a);
        }
    }
    if (o.voice) qtts_voice_release(o.voice);
    cJSON_Delete(req);
    return rc;
}

/* Sends the encoded audio waiting in out as one binary message. */
static int send_audio(ws_session *ss) {
    size_t k = srv_buf_pending(&ss->out);
    if (!k) return 0;
    int rc = send_frame(ss, WS_OP_BINARY, ss->out.data + ss->out.off, k);
    srv_buf_free(&ss->out);
    return rc;
}

/* Moves the audio the engine has to the client; at the end of the
 * utterance sends audio.done. Returns -1 when the connection is gone. */
static int pump_audio(ws_session *ss) {
    srv_session_state st = srv_session_read(ss->session, &ss->out);
    if (st == SRV_SESSION_WAITING) return 0;
    if (st == SRV_SESSION_AUDIO) return send_audio(ss);
    if (st == SRV_SESSION_FAILED) {
        int rc = send_error(ss, "synthesis_failed", "%s", srv_session_error(ss->session));
        utterance_end(ss);
        return rc;
    }
    qtts_result res;
    qtts_stream_result(ss->st, &res);
    if (send_audio(ss)) return -1;
    atomic_fetch_add(&ss->s->metrics.audio_samples_out, (uint64_t)srv_session_samples(ss->session));
    cJSON *d = cJSON_CreateObject(), *u = cJSON_AddObjectToObject(d, "usage");
    cJSON_AddStringToObject(d, "type", "audio.done");
    cJSON_AddStringToObject(d, "finished_by", qtts_finish_reason_name(res.finished_by));
    if (res.guard) cJSON_AddStringToObject(d, "guard", qtts_guard_reason_name(res.guard));
    cJSON_AddNumberToObject(u, "input_tokens", res.input_tokens);
    cJSON_AddNumberToObject(u, "output_tokens", res.n_frames);
    cJSON_AddNumberToObject(u, "total_tokens", res.input_tokens + res.n_frames);
    cJSON_AddNumberToObject(d, "audio_seconds", res.audio_seconds);
    char seed[24]; /* an exact integer: a double would round seeds above 2^53 */
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)res.seed);
    cJSON_AddRawToObject(d, "seed", seed);
    utterance_end(ss);
    return send_json(ss, d);
}

static const char *jstr(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* One client text message. Returns -1 to end the session. */
static int on_message(ws_session *ss, const unsigned char *data, size_t len) {
    cJSON *m = json_has_nul((const char *)data, len) ? NULL : cJSON_ParseWithLength((const char *)data, len);
    const char *type = jstr(m, "type");
    int rc = 0;
    if (!cJSON_IsObject(m) || !type) {
        rc = send_error(ss, "invalid_json", "each message must be a JSON object with a string 'type'");
    } else if (!strcmp(type, "session.config")) {
        if (ss->st) {
            rc = send_error(ss, "invalid_state", "session.config applies between utterances (after audio.done)");
        } else {
            cJSON_DeleteItemFromObjectCaseSensitive(m, "type");
            cJSON_Delete(ss->config);
            ss->config = m;
            m = NULL;
        }
    } else if (!strcmp(type, "input.text")) {
        const char *text = jstr(m, "text");
        if (!text) rc = send_error(ss, "invalid_type", "input.text needs a string 'text'");
        else if (ss->skip_to_done) rc = 0; /* the rest of a text whose utterance already ended */
        else if (ss->st && ss->text_done)
            rc = send_error(ss, "invalid_state", "the utterance's text is complete: wait for audio.done");
        else if (!ss->st && !*text) rc = 0; /* nothing to start with yet */
        else if (!ss->st && (rc = utterance_start(ss)) == 0 && !ss->st) ss->refused = 1; /* the error went out */
        if (!rc && ss->st && text && *text) {
            qtts_error err = {0};
            if (qtts_stream_append_text(ss->st, text, strlen(text), 0, &err) != QTTS_OK &&
                !strstr(err.message, "already finished"))
                rc = send_error(ss, "invalid_input", "%s", err.message);
        }
    } else if (!strcmp(type, "input.done")) {
        if (ss->skip_to_done) {
            ss->skip_to_done = 0;
        } else if (ss->st && !ss->text_done) {
            qtts_error err = {0};
            qtts_stream_append_text(ss->st, "", 0, 1, &err);
            ss->text_done = 1;
        } else if (!ss->st && ss->refused) {
            rc = send_error(ss, "invalid_state", "input.done: the text was not spoken, its utterance was refused (see "
                                                 "the error after its input.text; fix the session.config)");
        } else if (!ss->st) {
            rc = send_error(ss, "invalid_state", "input.done without an utterance (send input.text first)");
        }
        ss->refused = 0;
    } else if (!strcmp(type, "session.close")) {
        ss->closing = 1;
        if (ss->st && !ss->text_done) {
            qtts_error err = {0};
            qtts_stream_append_text(ss->st, "", 0, 1, &err);
            ss->text_done = 1;
        }
    } else {
        rc = send_error(ss, "unknown_type", "unknown message type '%.64s'", type);
    }
    cJSON_Delete(m);
    return rc;
}

/* Parses what arrived; returns -1 when the session must end. */
static int on_bytes(ws_session *ss) {
    size_t off = 0;
    int rc = 0;
    while (!rc) {
        ws_message m;
        int got = 0, code = 0;
        const char *why = NULL;
        long used = ws_read(&ss->rd, ss->in + off, ss->in_len - off, &m, &got, &code, &why);
        if (used == 0) break;
        if (used < 0) {
            unsigned char body[2] = {(unsigned char)(code >> 8), (unsigned char)code};
            send_frame(ss, WS_OP_CLOSE, body, 2);
            rc = -1;
            break;
        }
        off += (size_t)used;
        if (!got) continue;
        if (m.opcode == WS_OP_PING) rc = send_frame(ss, WS_OP_PONG, m.data, m.len);
        else if (m.opcode == WS_OP_CLOSE) {
            unsigned char body[2] = {WS_CLOSE_NORMAL >> 8, WS_CLOSE_NORMAL & 0xFF};
            send_frame(ss, WS_OP_CLOSE, body, 2);
            rc = -1;
        } else if (m.opcode == WS_OP_TEXT) rc = on_message(ss, m.data, m.len);
        else if (m.opcode == WS_OP_BINARY) rc = send_error(ss, "unsupported", "binary messages are not accepted");
    }
    memmove(ss->in, ss->in + off, ss->in_len - off);
    ss->in_len -= off;
    return rc;
}

static void session_run(srv_ws_pool *p, ws_job *j) {
    qtts_server *s = p->s;
    ws_session ss;
    memset(&ss, 0, sizeof ss);
    ss.wake.rd = ss.wake.wr = -1;
    ss.s = s;
    ss.sock = j->sock;
    ws_reader_init(&ss.rd, WS_MAX_MESSAGE);
    ss.in_cap = 65536;
    ss.in = malloc(ss.in_cap);
    int fl = fcntl(ss.sock, F_GETFL);
    if (fl >= 0) fcntl(ss.sock, F_SETFL, fl | O_NONBLOCK);
    if (ss.in && j->extra_len && j->extra_len <= ss.in_cap) {
        memcpy(ss.in, j->extra, j->extra_len);
        ss.in_len = j->extra_len;
    }
    ss.t_last = qtts_now_ms();
    int alive = ss.in != NULL && srv_wake_open(&ss.wake) == 0 && on_bytes(&ss) == 0;
    while (alive && !atomic_load(&s->aborting) && !atomic_load(&p->stopping)) {
        /* Sleeps until the client sends, the engine has audio or an end, the
         * server stops, or (between utterances) the idle timeout. */
        struct pollfd pf[3] = {{.fd = ss.sock, .events = POLLIN},
                               {.fd = ss.wake.rd, .events = POLLIN},
                               {.fd = p->stop.rd, .events = POLLIN}};
        int idle_left = (int)(ss.t_last + WS_IDLE_TIMEOUT_MS - qtts_now_ms());
        int pr = poll(pf, 3, ss.st ? -1 : idle_left > 0 ? idle_left : 0);
        atomic_fetch_add(&s->metrics.stream_wakeups, 1);
        if (pr > 0 && pf[1].revents) srv_wake_drain(&ss.wake);
        if (pr > 0 && pf[0].revents) {
            if (ss.in_len == ss.in_cap) { /* a frame larger than the buffer: grow up to the message limit */
                size_t cap = ss.in_cap * 2;
                unsigned char *nb = cap <= 2 * WS_MAX_MESSAGE + 16 ? realloc(ss.in, cap) : NULL;
                if (!nb) break;
                ss.in = nb;
                ss.in_cap = cap;
            }
            ssize_t n = recv(ss.sock, ss.in + ss.in_len, ss.in_cap - ss.in_len, 0);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) break; /* gone: cancel below */
            if (n > 0) {
                ss.in_len += (size_t)n;
                ss.t_last = qtts_now_ms();
                if (on_bytes(&ss)) break;
            }
        }
        if (ss.st && pump_audio(&ss)) break;
        if (!ss.st && ss.closing) {
            cJSON *d = cJSON_CreateObject();
            cJSON_AddStringToObject(d, "type", "session.done");
            send_json(&ss, d);
            unsigned char body[2] = {WS_CLOSE_NORMAL >> 8, WS_CLOSE_NORMAL & 0xFF};
            send_frame(&ss, WS_OP_CLOSE, body, 2);
            break;
        }
        if (!ss.st && qtts_now_ms() - ss.t_last > WS_IDLE_TIMEOUT_MS) break;
    }
    if (ss.st && !ss.closing) atomic_fetch_add(&s->metrics.disconnects, 1);
    utterance_end(&ss); /* a disconnect cancels the utterance */
    srv_wake_close(&ss.wake);
    cJSON_Delete(ss.config);
    ws_reader_free(&ss.rd);
    free(ss.in);
}

/* ---- the pool ---- */

static void *session_thread(void *arg) {
    srv_ws_pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (!p->q_len && !atomic_load(&p->stopping)) pthread_cond_wait(&p->cv, &p->mu);
        if (!p->q_len) {
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        ws_job j = p->queue[p->q_head];
        p->q_head = (p->q_head + 1) % p->n_threads;
        p->q_len--;
        pthread_mutex_unlock(&p->mu);
        if (!atomic_load(&p->stopping)) session_run(p, &j);
        free(j.extra);
        j.done(j.urh); /* libmicrohttpd closes the socket */
        pthread_mutex_lock(&p->mu);
        p->reserved--;
        pthread_mutex_unlock(&p->mu);
    }
}

srv_ws_pool *srv_ws_pool_new(qtts_server *s, int n_threads) {
    srv_ws_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->stop.rd = p->stop.wr = -1;
    p->s = s;
    p->n_threads = n_threads > 0 ? n_threads : 1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->threads = calloc((size_t)p->n_threads, sizeof *p->threads);
    p->queue = calloc((size_t)p->n_threads, sizeof *p->queue);
    if (!p->threads || !p->queue || srv_wake_open(&p->stop)) {
        srv_ws_pool_free(p);
        return NULL;
    }
    for (; p->started < p->n_threads; p->started++)
        if (pthread_create(&p->threads[p->started], NULL, session_thread, p)) {
            srv_ws_pool_free(p);
            return NULL;
        }
    return p;
}

void srv_ws_pool_stop(srv_ws_pool *p) {
    if (!p || p->joined) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stopping, 1);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    srv_wake_signal(&p->stop);
    for (int i = 0; i < p->started; i++) pthread_join(p->threads[i], NULL);
    p->joined = 1;
}

void srv_ws_pool_free(srv_ws_pool *p) {
    if (!p) return;
    srv_ws_pool_stop(p);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    srv_wake_close(&p->stop);
    free(p->threads);
    free(p->queue);
    free(p);
}

void srv_ws_pool_kick(srv_ws_pool *p) {
    if (p) srv_wake_signal(&p->stop); /* never drained: each session sees the flags and ends */
}

int srv_ws_pool_reserve(srv_ws_pool *p) {
    pthread_mutex_lock(&p->mu);
    int ok = !atomic_load(&p->stopping) && p->reserved < p->n_threads;
    if (ok) p->reserved++;
    pthread_mutex_unlock(&p->mu);
    return ok;
}

void srv_ws_pool_unreserve(srv_ws_pool *p) {
    pthread_mutex_lock(&p->mu);
    p->reserved--;
    pthread_mutex_unlock(&p->mu);
}

void srv_ws_pool_run(srv_ws_pool *p, int sock, const void *extra, size_t extra_len, void *urh,
                     void (*done)(void *urh)) {
    ws_job j = {.sock = sock, .urh = urh, .done = done, .extra = NULL, .extra_len = 0};
    if (extra_len && (j.extra = malloc(extra_len))) {
        memcpy(j.extra, extra, extra_len);
        j.extra_len = extra_len;
    }
    pthread_mutex_lock(&p->mu);
    if (atomic_load(&p->stopping)) { /* shutting down: the session threads may be gone; close at once */
        p->reserved--;
        pthread_mutex_unlock(&p->mu);
        free(j.extra);
        done(urh);
        return;
    }
    /* a reservation guarantees room: reserved <= n_threads == queue size */
    p->queue[(p->q_head + p->q_len) % p->n_threads] = j;
    p->q_len++;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}
