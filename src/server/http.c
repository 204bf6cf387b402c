/* libmicrohttpd front end: a fixed pool of HTTP threads, routing, body
 * limits, authentication, CORS preflight, draining (responses: respond.c). */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <netinet/in.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "server/auth.h"
#include "server/elevenlabs.h"
#include "server/frame_limit.h"
#include "server/internal.h"
#include "server/voice_alias.h"
#include "server/web.h"
#include "server/ws_frame.h"
#include "server/ws_speech.h"
#include "core/clock.h"
#include "io/json_util.h"

/* Per-connection memory (libmicrohttpd's pool: request line + headers, then
 * the write buffer). Headers that do not fit get 431 and a close, so this is
 * the header budget; 1024 connections cost at most 32 MiB. It is also
 * libmicrohttpd's own default: stated here so that it is a decision. */
#define SRV_CONN_MEMORY ((size_t)32 << 10)

/* Request-header deadline. libmicrohttpd's connection timeout restarts with
 * every byte received, so a client that sends one header byte per second
 * (slowloris) never reaches it and holds its connection slot forever. Each
 * connection is tracked from accept, and on a kept-alive connection again
 * from the end of each response, until its request headers are complete;
 * qtts_server_tick shuts down the socket of one whose headers are overdue and
 * libmicrohttpd then closes it as a client hang-up. */
typedef struct conn_track {
    struct conn_track *prev, *next;
    int fd;
    long long since_ms; /* waiting for request headers since */
    int waiting;        /* headers not complete */
    int cut;            /* shut down by the sweep */
} conn_track;

typedef struct {
    pthread_mutex_t mu;
    conn_track *head;
    int header_timeout_ms;
    int verbose;
} conn_guard;

/* http.c's private part of the server: internal.h's struct is shared by all
 * server units, the guard only matters here. s comes first, so a
 * qtts_server * is a server_box *. */
typedef struct {
    struct qtts_server s;
    conn_guard guard;
} server_box;

static conn_guard *guard_of(qtts_server *s) { return &((server_box *)s)->guard; }

/* libmicrohttpd calls CLOSED before it closes the socket, and the sweep holds
 * mu while it shuts sockets down: a listed fd is always that connection's. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
    conn_guard *g = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        conn_track *t = ci ? calloc(1, sizeof *t) : NULL;
        *socket_context = t;
        if (!t) return; /* untracked: only the idle timeout applies to it */
        t->fd = ci->connect_fd;
        t->since_ms = (long long)qtts_now_ms();
        t->waiting = 1;
        pthread_mutex_lock(&g->mu);
        t->next = g->head;
        if (g->head) g->head->prev = t;
        g->head = t;
        pthread_mutex_unlock(&g->mu);
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        conn_track *t = *socket_context;
        *socket_context = NULL;
        if (!t) return;
        pthread_mutex_lock(&g->mu);
        if (t->prev) t->prev->next = t->next;
        else g->head = t->next;
        if (t->next) t->next->prev = t->prev;
        pthread_mutex_unlock(&g->mu);
        free(t);
    }
}

/* waiting = 0: headers complete (first call of a request); 1: the response
 * is done, the next request's headers are awaited. */
static void track_headers(qtts_server *s, struct MHD_Connection *c, int waiting) {
    if (s->p.header_timeout_s <= 0) return;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    conn_track *t = ci ? ci->socket_context : NULL;
    if (!t) return;
    conn_guard *g = guard_of(s);
    pthread_mutex_lock(&g->mu);
    t->waiting = waiting;
    t->since_ms = (long long)qtts_now_ms();
    pthread_mutex_unlock(&g->mu);
}

static void sweep_slow_headers(qtts_server *s) {
    conn_guard *g = guard_of(s);
    if (g->header_timeout_ms <= 0) return;
    long long now = (long long)qtts_now_ms();
    int cut = 0;
    pthread_mutex_lock(&g->mu);
    for (conn_track *t = g->head; t; t = t->next)
        if (t->waiting && !t->cut && now - t->since_ms > g->header_timeout_ms) {
            shutdown(t->fd, SHUT_RDWR); /* the worker sees EOF and closes it */
            t->cut = 1;
            cut++;
        }
    pthread_mutex_unlock(&g->mu);
    if (cut && g->verbose)
        fprintf(stderr, "qtts serve: closed %d connection(s) whose request headers took over %d s\n", cut,
                g->header_timeout_ms / 1000);
}

void qtts_server_tick(qtts_server *s) {
    if (s) sweep_slow_headers(s);
}

void qtts_server_params_default(qtts_server_params *p) {
    memset(p, 0, sizeof *p);
    p->host = "127.0.0.1";
    p->port = 8080;
    p->max_body = 32u << 20;
    p->max_input_chars = 4096;
    p->http_threads = 16;
    p->idle_timeout_s = 60;
    p->request_timeout_s = 600;
    p->max_connections = 2048;
    p->max_connections_per_ip = 0;
    p->header_timeout_s = 30;
    p->body_timeout_s = 60;
    p->max_request_frames = SRV_MAX_REQUEST_FRAMES_DEFAULT;
}

static enum MHD_Result route_health(qtts_server *s, struct MHD_Connection *c) {
    qtts_engine_stats st;
    memset(&st, 0, sizeof st);
    qtts_engine_get_stats(s->engine, &st);
    char js[512];
    int draining = atomic_load(&s->draining);
    snprintf(js, sizeof js,
             "{\"status\":\"%s\",\"model\":\"%s\",\"variant\":\"%s\",\"active_slots\":%d,\"queued\":%d,"
             "\"uptime_s\":%.1f}",
             draining ? "draining" : "ok", s->model_id, s->info->variant, st.active_slots, st.queued,
             ((long long)qtts_now_ms() - s->started_ms) / 1000.0);
    return srv_respond_json(s, c, draining ? 503 : 200, js);
}

static enum MHD_Result route_models(qtts_server *s, struct MHD_Connection *c) {
    cJSON *root = cJSON_CreateObject();
    cJSON *data = cJSON_AddArrayToObject(root, "data");
    cJSON *m = cJSON_CreateObject();
    char *js = NULL;
    if (root && data && m) {
        cJSON_AddItemToArray(data, m);
        cJSON_AddStringToObject(root, "object", "list");
        cJSON_AddStringToObject(m, "id", s->model_id);
        cJSON_AddStringToObject(m, "object", "model");
        cJSON_AddNumberToObject(m, "created", 0);
        cJSON_AddStringToObject(m, "owned_by", "qtts");
        cJSON_AddStringToObject(m, "variant", s->info->variant);
        cJSON_AddStringToObject(m, "size", s->info->size);
        cJSON_AddNumberToObject(m, "sample_rate", s->info->sample_rate);
        cJSON_AddNumberToObject(m, "hidden_size", s->info->hidden_size);
        /* the request limits, for clients that show them (the web page's character counter) */
        cJSON_AddNumberToObject(m, "max_input_chars", s->p.max_input_chars);
        if (s->p.max_request_frames > 0) cJSON_AddNumberToObject(m, "max_request_frames", s->p.max_request_frames);
        cJSON *sp = cJSON_AddArrayToObject(m, "speakers");
        for (int i = 0; sp && i < s->info->n_speakers; i++)
            cJSON_AddItemToArray(sp, cJSON_CreateString(s->info->speakers[i]));
        cJSON *lg = cJSON_AddArrayToObject(m, "languages");
        for (int i = 0; lg && i < s->info->n_languages; i++)
            cJSON_AddItemToArray(lg, cJSON_CreateString(s->info->languages[i]));
        js = cJSON_PrintUnformatted(root);
    } else {
        cJSON_Delete(m);
    }
    cJSON_Delete(root);
    if (!js) return srv_respond_error(s, c, 500, "server_error", NULL, NULL, "out of memory");
    enum MHD_Result rc = srv_respond_json(s, c, 200, js);
    free(js);
    return rc;
}

/* Open WebUI's model listing for TTS: {"models":[{"id","name"}]}. Any model
 * name is accepted in requests (clients send "tts-1"), so this lists what
 * actually runs. */
static enum MHD_Result route_audio_models(qtts_server *s, struct MHD_Connection *c) {
    cJSON *root = cJSON_CreateObject();
    cJSON *arr = root ? cJSON_AddArrayToObject(root, "models") : NULL;
    cJSON *m = arr ? cJSON_CreateObject() : NULL;
    char *js = NULL;
    if (m) {
        cJSON_AddItemToArray(arr, m);
        cJSON_AddStringToObject(m, "id", s->model_id);
        cJSON_AddStringToObject(m, "name", s->model_id);
        cJSON_AddStringToObject(m, "variant", s->info->variant);
        js = cJSON_PrintUnformatted(root);
    }
    cJSON_Delete(root);
    if (!js) return srv_respond_error(s, c, 500, "server_error", NULL, NULL, "out of memory");
    enum MHD_Result rc = srv_respond_json(s, c, 200, js);
    free(js);
    return rc;
}

static enum MHD_Result route_metrics(qtts_server *s, struct MHD_Connection *c) {
    srv_buf b = {0};
    if (srv_metrics_render(&s->metrics, s->engine, s->info->sample_rate, &b)) {
        srv_buf_free(&b);
        return srv_respond_error(s, c, 500, "server_error", NULL, NULL, "out of memory");
    }
    enum MHD_Result rc = srv_respond(s, c, 200, "text/plain; version=0.0.4", b.data, b.len);
    srv_buf_free(&b);
    return rc;
}

static enum MHD_Result route_preflight(qtts_server *s, struct MHD_Connection *c) {
    struct MHD_Response *r = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    if (s->cors_origin) {
        MHD_add_response_header(r, "Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS");
        /* Echo what the browser asks for: client SDKs send their own headers
         * (the OpenAI JS SDK: X-Stainless-*), and CORS only guards the origin. */
        const char *asked = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Access-Control-Request-Headers");
        MHD_add_response_header(r, "Access-Control-Allow-Headers",
                                asked && *asked && strlen(asked) < 4096 && !strpbrk(asked, "\r\n")
                                    ? asked
                                    : "Authorization, Content-Type");
        MHD_add_response_header(r, "Access-Control-Max-Age", "600");
    }
    return srv_queue(s, c, s->cors_origin ? 204 : 405, r);
}

typedef enum {
    R_NONE,
    R_PAGE,
    R_HEALTH,
    R_MODELS,
    R_AUDIO_MODELS,
    R_METRICS,
    R_SPEECH,
    R_VOICES,
    R_VOICE_ITEM,
    R_SPEECH_STREAM,
    R_ELEVENLABS /* server/elevenlabs.c */
} route_id;

static route_id match_route(struct MHD_Connection *c, const char *url, const char **tail) {
    *tail = NULL;
    if (srv_el_match(c, url)) return R_ELEVENLABS;
    if (!strcmp(url, "/") || !strcmp(url, "/index.html")) return R_PAGE;
    if (!strcmp(url, "/v1/audio/speech/stream")) return R_SPEECH_STREAM;
    if (!strcmp(url, "/health") || !strcmp(url, "/healthz")) return R_HEALTH;
    if (!strcmp(url, "/v1/models")) return R_MODELS;
    if (!strcmp(url, "/v1/audio/models")) return R_AUDIO_MODELS;
    if (!strcmp(url, "/metrics")) return R_METRICS;
    if (!strcmp(url, "/v1/audio/speech")) return R_SPEECH;
    if (!strcmp(url, "/v1/audio/voices")) return R_VOICES;
    if (!strncmp(url, "/v1/audio/voices/", 17) && url[17]) {
        *tail = url + 17;
        return R_VOICE_ITEM;
    }
    return R_NONE;
}

static int method_allowed(route_id r, const char *m) {
    switch (r) {
    case R_PAGE:
    case R_HEALTH:
    case R_MODELS:
    case R_AUDIO_MODELS:
    case R_METRICS: return !strcmp(m, "GET") || !strcmp(m, "HEAD");
    case R_SPEECH: return !strcmp(m, "POST");
    case R_VOICES: return !strcmp(m, "GET") || !strcmp(m, "POST");
    case R_VOICE_ITEM: return !strcmp(m, "DELETE") || !strcmp(m, "GET");
    case R_SPEECH_STREAM: return !strcmp(m, "GET");
    case R_ELEVENLABS: return 1; /* it answers 405 in its own shape */
    default: return 0;
    }
}

/* ---- WebSocket upgrade (GET /v1/audio/speech/stream; sessions in ws_speech.c) ---- */

static void ws_close_urh(void *urh) { MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE); }

static void on_upgrade(void *cls, struct MHD_Connection *c, void *con_cls, const char *extra_in, size_t extra_in_size,
                       MHD_socket sock, struct MHD_UpgradeResponseHandle *urh) {
    (void)c;
    qtts_server *s = cls;
    srv_req *rq = con_cls;
    if (rq) rq->ws_reserved = 0; /* the session thread owns the slot now */
    srv_ws_pool_run(s->ws, sock, extra_in, extra_in_size, urh, ws_close_urh);
}

/* 1 if a comma-separated header value contains token (case-insensitive). */
static int header_has_token(const char *v, const char *token) {
    size_t n = strlen(token);
    for (const char *p = v; p && *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',') p++;
        const char *e = p;
        while (*e && *e != ',') e++;
        const char *t = e;
        while (t > p && (t[-1] == ' ' || t[-1] == '\t')) t--;
        if ((size_t)(t - p) == n && !strncasecmp(p, token, n)) return 1;
        p = e;
    }
    return 0;
}

static enum MHD_Result route_ws_upgrade(qtts_server *s, struct MHD_Connection *c, srv_req *rq) {
    const char *up = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Upgrade");
    const char *conn = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Connection");
    const char *ver = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-WebSocket-Version");
    const char *key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-WebSocket-Key");
    char accept[29];
    if (!up || !header_has_token(up, "websocket") || !conn || !header_has_token(conn, "upgrade"))
        return srv_respond_error(s, c, 426, "invalid_request_error", NULL, "upgrade_required",
                                 "this endpoint is a WebSocket (send Upgrade: websocket); POST /v1/audio/speech "
                                 "takes whole texts");
    if (!ver || strcmp(ver, "13") || ws_accept_key(key, accept))
        return srv_respond_error(s, c, 400, "invalid_request_error", NULL, "bad_handshake",
                                 "WebSocket handshake needs Sec-WebSocket-Version: 13 and a 16-byte Sec-WebSocket-Key");
    if (atomic_load(&s->draining))
        return srv_respond_error(s, c, 503, "server_busy", NULL, "shutting_down", "server is shutting down");
    if (!s->ws || !srv_ws_pool_reserve(s->ws))
        return srv_respond_error(s, c, 503, "server_busy", NULL, "too_many_sessions",
                                 "all %d WebSocket sessions are in use (--ws-sessions)", s->p.ws_sessions);
    struct MHD_Response *r = MHD_create_response_for_upgrade(on_upgrade, s);
    if (!r) {
        srv_ws_pool_unreserve(s->ws);
        return MHD_NO;
    }
    rq->ws_reserved = 1;
    MHD_add_response_header(r, MHD_HTTP_HEADER_UPGRADE, "websocket");
    MHD_add_response_header(r, "Sec-WebSocket-Accept", accept);
    return srv_queue(s, c, MHD_HTTP_SWITCHING_PROTOCOLS, r);
}

typedef struct {
    int content_length, transfer_encoding;
} framing_headers;

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    (void)kind, (void)value;
    framing_headers *f = cls;
    if (key && !strcasecmp(key, "Content-Length")) f->content_length++;
    if (key && !strcasecmp(key, "Transfer-Encoding")) f->transfer_encoding++;
    return MHD_YES;
}

/* Where the body's length is ambiguous (Content-Length with Transfer-Encoding, either twice), a proxy that
 * frames it the other way would pass a second request hidden in the body: refuse, and close (RFC 9112 6.1,
 * 6.3). HTTP/1.1 without Host is refused too (RFC 9112 3.2). NULL when the request is well framed. */
static const char *framing_problem(struct MHD_Connection *c, const char *version) {
    framing_headers f = {0, 0};
    MHD_get_connection_values(c, MHD_HEADER_KIND, count_framing, &f);
    if (f.content_length && f.transfer_encoding) return "both Content-Length and Transfer-Encoding";
    if (f.content_length > 1) return "more than one Content-Length";
    if (f.transfer_encoding > 1) return "more than one Transfer-Encoding";
    if (version && !strcmp(version, "HTTP/1.1") && !MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host"))
        return "no Host header";
    return NULL;
}

/* The body deadline (--body-timeout). The idle timeout restarts with every
 * byte, so a client that sends its body one byte every few seconds holds the
 * connection, its buffer and an HTTP thread's attention for as long as it
 * likes (the body may be 32 MiB); the headers have their own deadline. */
static int body_overdue(const qtts_server *s, const srv_req *rq) {
    return s->p.body_timeout_s > 0 && (long long)qtts_now_ms() - rq->t0_ms > (long long)s->p.body_timeout_s * 1000;
}

/* libmicrohttpd 0.9.75 takes a response only before a body starts or once it is complete (MHD_queue_response
 * refuses one in between), so the 408 goes onto the socket here: nothing of this request's response has been
 * written (a 100 Continue, if one was asked for, is complete), and MHD_NO then closes the connection. */
static enum MHD_Result body_timeout_close(qtts_server *s, struct MHD_Connection *c, srv_req *rq) {
    static const char *const days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                         "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    if (s->p.verbose)
        fprintf(stderr, "qtts serve: 408: a request body took over %d s (%zu bytes arrived); closing\n",
                s->p.body_timeout_s, rq->body.len);
    srv_metrics_status(&s->metrics, 408);
    char json[320], date[40], out[1024];
    int jn = snprintf(json, sizeof json,
                      "{\"error\":{\"message\":\"the request body did not arrive within %d s (qtts serve "
                      "--body-timeout)\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":\"body_timeout\"}}",
                      s->p.body_timeout_s);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    snprintf(date, sizeof date, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday % 7], tm.tm_mday,
             months[tm.tm_mon % 12], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
    const char *origin = s->cors_origin && strlen(s->cors_origin) < 256 ? s->cors_origin : NULL;
    int n = snprintf(out, sizeof out,
                     "HTTP/1.1 408 Request Timeout\r\nDate: %s\r\nConnection: close\r\n%s%s%s"
                     "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
                     date, origin ? "Access-Control-Allow-Origin: " : "", origin ? origin : "", origin ? "\r\n" : "",
                     jn, json);
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (ci && n > 0 && (size_t)n < sizeof out && send(ci->connect_fd, out, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 &&
        s->p.verbose)
        fprintf(stderr, "qtts serve: the 408 could not be sent: %s\n", strerror(errno));
    return MHD_NO;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_size, void **con_cls) {
    qtts_server *s = cls;
    srv_req *rq = *con_cls;
    if (!rq) { /* first call: headers only */
        rq = calloc(1, sizeof *rq);
        if (!rq) return MHD_NO;
        rq->t0_ms = (long long)qtts_now_ms();
        *con_cls = rq;
        track_headers(s, c, 0);
        const char *bad_framing = framing_problem(c, version);
        if (bad_framing) {
            rq->responded = 1;
            return srv_respond_error_close(s, c, 400, "bad_request_framing", "the request has %s", bad_framing);
        }
        const char *tail;
        route_id r = match_route(c, url, &tail);
        if (!strcmp(method, "OPTIONS")) {
            rq->responded = 1;
            return route_preflight(s, c);
        }
        /* The page is public (it asks for the key and sends it on its own requests). Open WebUI reads the
           two listings without its key: --public-lists opens them. */
        int public_list = s->p.public_lists && (r == R_VOICES || r == R_AUDIO_MODELS) &&
                          (!strcmp(method, "GET") || !strcmp(method, "HEAD"));
        if (r != R_HEALTH && r != R_PAGE && !public_list && s->api_key) {
            const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
            /* browsers cannot set headers on a WebSocket: the key may come as ?api_key= there */
            const char *qkey = r == R_SPEECH_STREAM ? MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "api_key")
                                                    : NULL;
            if (!srv_auth_bearer_ok(auth, s->api_key) && !srv_el_key_ok(c, s->api_key) && !(qkey && srv_ct_equal(qkey, strlen(qkey), s->api_key, strlen(s->api_key)))) {
                rq->responded = 1;
                if (r == R_ELEVENLABS)
                    return srv_el_error(s, c, 401, "invalid_api_key", "missing or invalid API key (send 'xi-api-key: <key>')");
                return srv_respond_error(s, c, 401, "authentication_error", NULL, "invalid_api_key",
                                         "missing or invalid API key (send 'Authorization: Bearer <key>')");
            }
        }
        if (r == R_NONE) {
            rq->responded = 1;
            return srv_respond_error(s, c, 404, "invalid_request_error", NULL, "not_found", "no route for %s %s",
                                     method, url);
        }
        if (!method_allowed(r, method)) {
            rq->responded = 1;
            return srv_respond_error(s, c, 405, "invalid_request_error", NULL, "method_not_allowed",
                                     "method %s is not allowed on %s", method, url);
        }
        if (r == R_SPEECH_STREAM) {
            rq->responded = 1;
            return route_ws_upgrade(s, c, rq);
        }
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > s->p.max_body) {
            rq->responded = 1;
            return srv_respond_error(s, c, 413, "invalid_request_error", NULL, "body_too_large",
                                     "request body of %s bytes exceeds the limit of %zu bytes", cl, s->p.max_body);
        }
        return MHD_YES;
    }
    if (rq->speech) return srv_speech_resume(s, c, rq); /* resumed by the pump */
    if (rq->responded) { /* discard the rest of a rejected body */
        *upload_size = 0;
        return MHD_YES;
    }
    if (*upload_size && body_overdue(s, rq)) {
        rq->responded = 1;
        *upload_size = 0;
        return body_timeout_close(s, c, rq);
    }
    if (*upload_size) {
        /* libmicrohttpd takes a response only once the body is in: past the
         * limit, discard the rest and answer 413 then. */
        if (rq->too_large || rq->body.len + *upload_size > s->p.max_body) {
            rq->too_large = 1;
            *upload_size = 0;
            return MHD_YES;
        }
        if (srv_buf_append(&rq->body, upload_data, *upload_size)) {
            rq->responded = 1;
            *upload_size = 0;
            return srv_respond_error(s, c, 500, "server_error", NULL, NULL, "out of memory");
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (rq->too_large) {
        rq->responded = 1;
        return srv_respond_error(s, c, 413, "invalid_request_error", NULL, "body_too_large",
                                 "request body exceeds the limit of %zu bytes", s->p.max_body);
    }
    /* Body complete. */
    rq->responded = 1;
    const char *tail;
    route_id r = match_route(c, url, &tail);
    if (atomic_load(&s->draining) && r != R_HEALTH && r != R_METRICS && r != R_PAGE)
        return srv_respond_error(s, c, 503, "server_busy", NULL, "shutting_down", "server is shutting down");
    switch (r) {
    case R_PAGE: return srv_route_web_page(s, c);
    case R_HEALTH: return route_health(s, c);
    case R_MODELS: return route_models(s, c);
    case R_AUDIO_MODELS: return route_audio_models(s, c);
    case R_METRICS: return route_metrics(s, c);
    case R_SPEECH: return srv_route_speech(s, c, rq);
    case R_ELEVENLABS: return srv_el_route(s, c, url, method, rq->body.data, rq->body.len);
    case R_VOICES: return !strcmp(method, "GET") ? srv_route_voices_list(s, c) : srv_route_voices_add(s, c, rq);
    case R_VOICE_ITEM:
        if (!strcmp(method, "GET"))
            return srv_respond_error(s, c, 405, "invalid_request_error", NULL, "method_not_allowed",
                                     "use GET /v1/audio/voices to list voices");
        return srv_route_voices_delete(s, c, tail);
    default: return MHD_NO;
    }
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
    (void)toe;
    track_headers(cls, c, 1); /* a kept-alive connection now awaits its next request's headers */
    srv_req *rq = *con_cls;
    if (!rq) return;
    if (rq->speech) srv_speech_abandon(rq->speech); /* the client went away mid-synthesis */
    if (rq->ws_reserved) srv_ws_pool_unreserve(((qtts_server *)cls)->ws); /* the upgrade never happened */
    int large = rq->body.cap >= ((size_t)1 << 20);
    srv_buf_free(&rq->body);
    free(rq);
    *con_cls = NULL;
    /* a large body's pages stay in this thread's arena otherwise: give them back to the system */
#ifdef __GLIBC__
    if (large) malloc_trim(0);
#else
    (void)large;
#endif
}

static char *dup_or_null(const char *x) { return x && *x ? strdup(x) : NULL; }

void qtts_server_free(qtts_server *s) {
    if (!s) return;
    atomic_store(&s->draining, 1);
    atomic_store(&s->aborting, 1);
    srv_pump_stop(s->pump); /* resumes every suspended connection first */
    srv_ws_pool_stop(s->ws); /* ends the sessions: their upgraded connections close */
    /* runs every connection's CLOSED notification; an upgrade still completing meets the stopped (not freed)
       pool (CI under UBSan once hit a freed one here) */
    if (s->daemon) MHD_stop_daemon(s->daemon);
    srv_ws_pool_free(s->ws);
    s->ws = NULL;
    pthread_mutex_destroy(&guard_of(s)->mu);
    srv_pump_free(s->pump);
    srv_voices_free(s->voices);
    srv_voice_aliases_free(s->aliases);
    free(s->host);
    free(s->voices_dir);
    free(s->api_key);
    free(s->cors_origin);
    free(s->model_id);
    free(s);
}

static void mhd_log(void *cls, const char *fmt, va_list ap) {
    const qtts_server *s = cls;
    if (!s->p.verbose) return;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    line[strcspn(line, "\n")] = 0;
    fprintf(stderr, "qtts serve: libmicrohttpd: %s\n", line);
}

static void warn_voice(void *user, const char *msg) {
    (void)user;
    fprintf(stderr, "qtts serve: warning: skipping voice: %s\n", msg);
}

static qtts_server *server_start(qtts_engine *e, const qtts_server_params *p, int listen_fd, char *err,
                                 size_t err_size);

qtts_server *qtts_server_start(qtts_engine *e, const qtts_server_params *p, char *err, size_t err_size) {
    return server_start(e, p, -1, err, err_size);
}

qtts_server *qtts_server_start_on(qtts_engine *e, const qtts_server_params *p, int listen_fd, char *err,
                                  size_t err_size) {
    qtts_server *s = server_start(e, p, listen_fd, err, err_size);
    if (!s && listen_fd >= 0) close(listen_fd); /* a started daemon closes it when stopped */
    return s;
}

static qtts_server *server_start(qtts_engine *e, const qtts_server_params *p, int listen_fd, char *err,
                                 size_t err_size) {
    server_box *box = calloc(1, sizeof *box);
    if (!box) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    qtts_server *s = &box->s;
    pthread_mutex_init(&box->guard.mu, NULL);
    s->engine = e;
    s->info = qtts_engine_info(e);
    s->p = *p;
    s->host = strdup(p->host && *p->host ? p->host : "127.0.0.1");
    s->voices_dir = dup_or_null(p->voices_dir);
    s->api_key = dup_or_null(p->api_key);
    s->cors_origin = dup_or_null(p->cors_origin);
    s->model_id = strdup(p->model_id && *p->model_id ? p->model_id : "qwen3-tts");
    atomic_init(&s->draining, 0);
    atomic_init(&s->aborting, 0);
    srv_metrics_init(&s->metrics);
    s->started_ms = (long long)qtts_now_ms();
    if (!s->host || !s->model_id || (p->voices_dir && *p->voices_dir && !s->voices_dir) ||
        (p->api_key && *p->api_key && !s->api_key) || (p->cors_origin && *p->cors_origin && !s->cors_origin)) {
        snprintf(err, err_size, "out of memory");
        qtts_server_free(s);
        return NULL;
    }
    if (s->p.max_body == 0) s->p.max_body = 32u << 20;
    if (s->p.max_input_chars <= 0) s->p.max_input_chars = 4096;
    if (s->p.http_threads <= 0) s->p.http_threads = 16;
    if (s->p.idle_timeout_s <= 0) s->p.idle_timeout_s = 60;
    if (s->p.request_timeout_s <= 0) s->p.request_timeout_s = 600;
    if (s->p.max_connections <= 0) s->p.max_connections = 2048;
    /* Every connection is a file descriptor: raise the soft limit toward the hard one so that the
       connection limit holds, or lower the limit to what the descriptors allow (a margin for the
       listener, voices, WebSocket and engine files). */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rlim_t want = (rlim_t)s->p.max_connections + 256;
        if (rl.rlim_cur < want) {
            rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want ? want : rl.rlim_max;
            setrlimit(RLIMIT_NOFILE, &rl);
            getrlimit(RLIMIT_NOFILE, &rl);
        }
        if (rl.rlim_cur < want && rl.rlim_cur > 256 + (rlim_t)s->p.http_threads) {
            fprintf(stderr, "qtts serve: warning: open files limited to %llu (ulimit -n): --max-connections %d -> %d\n",
                    (unsigned long long)rl.rlim_cur, s->p.max_connections, (int)(rl.rlim_cur - 256));
            s->p.max_connections = (int)(rl.rlim_cur - 256);
        }
    }
    if (s->p.max_connections_per_ip < 0) s->p.max_connections_per_ip = 0;
    if (s->p.header_timeout_s < 0) s->p.header_timeout_s = 0;
    if (s->p.body_timeout_s < 0) s->p.body_timeout_s = 0;
    box->guard.header_timeout_ms = s->p.header_timeout_s * 1000;
    box->guard.verbose = s->p.verbose;
    /* libmicrohttpd splits the connection limit evenly over its threads: a
     * thread with a share of 0 would never accept. */
    if (s->p.max_connections < s->p.http_threads) {
        snprintf(err, err_size, "--max-connections %d is below --http-threads %d (each HTTP thread needs a share)",
                 s->p.max_connections, s->p.http_threads);
        qtts_server_free(s);
        return NULL;
    }
    if (p->port < 0 || p->port > 65535) {
        snprintf(err, err_size, "invalid port %d", p->port);
        qtts_server_free(s);
        return NULL;
    }
    s->aliases = srv_voice_aliases_new(s->info, p->no_default_voice_aliases, p->voice_aliases, p->n_voice_aliases, err,
                                       err_size);
    if (!s->aliases) {
        qtts_server_free(s);
        return NULL;
    }
    s->voices = srv_voices_open(e, s->voices_dir, warn_voice, s, err, err_size);
    if (!s->voices) {
        qtts_server_free(s);
        return NULL;
    }
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    s->pump = srv_pump_start(&s->aborting, &s->metrics.stream_wakeups, err, err_size);
    if (!s->pump) {
        qtts_server_free(s);
        return NULL;
    }
    if (s->p.ws_sessions <= 0) s->p.ws_sessions = 8;
    s->ws = srv_ws_pool_new(s, s->p.ws_sessions);
    if (!s->ws) {
        snprintf(err, err_size, "cannot start the WebSocket session threads");
        qtts_server_free(s);
        return NULL;
    }
    /* epoll where there is one (MHD_USE_AUTO): select() cannot watch fds >= 1024, and libmicrohttpd closed
       such connections right after accept, below --max-connections 1024 (about 1,004 idle sockets reset
       every new client). */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ITC | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ERROR_LOG | MHD_ALLOW_UPGRADE;
    /* libmicrohttpd's own log lines ("Failed to bind to port ...") repeat what qtts reports in its own
       words: only with -v, and prefixed */
    struct MHD_OptionItem log_opt[2] = {{MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, s},
                                        {MHD_OPTION_END, 0, NULL}};
    /* SO_REUSEPORT only when asked: passing the option as 0 would also drop
     * libmicrohttpd's default SO_REUSEADDR, and a restarted server could not
     * listen while its old connections sit in TIME_WAIT. */
    struct MHD_OptionItem reuse[2] = {{MHD_OPTION_LISTENING_ADDRESS_REUSE, 1, NULL}, {MHD_OPTION_END, 0, NULL}};
    if (!s->p.reuse_port) reuse[0].option = MHD_OPTION_END;
    int ipv6 = 0;
    if (srv_listen_addr(s->host, p->port, &ss, &ipv6)) {
        snprintf(err, err_size, "--host '%s' is not an IPv4/IPv6 address", s->host);
        qtts_server_free(s);
        return NULL;
    }
    if (ipv6) flags |= MHD_USE_IPv6;
    /* the socket of the port opened while the model loaded, or a new one on the address */
    struct MHD_OptionItem listen_opt[2] = {{MHD_OPTION_SOCK_ADDR, 0, &ss}, {MHD_OPTION_END, 0, NULL}};
    if (listen_fd >= 0) {
        listen_opt[0] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_SOCKET, listen_fd, NULL};
        reuse[0].option = MHD_OPTION_END;
    }
    /* The connection limits bound what slow or idle clients can hold (file
     * descriptors, SRV_CONN_MEMORY each); waiting requests hold no HTTP
     * thread, so slow clients do not starve the pool. Per-IP is off by
     * default: behind a reverse proxy every client has the proxy's address. */
    s->daemon = MHD_start_daemon(
        flags, (uint16_t)p->port, NULL, NULL, on_request, s, MHD_OPTION_ARRAY, listen_opt,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)s->p.http_threads, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)s->p.idle_timeout_s, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)s->p.max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)s->p.max_connections_per_ip,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, SRV_CONN_MEMORY, MHD_OPTION_ARRAY, reuse, MHD_OPTION_ARRAY, log_opt, MHD_OPTION_NOTIFY_CONNECTION,
        s->p.header_timeout_s > 0 ? on_connection : NULL, &box->guard, MHD_OPTION_END);
    if (!s->daemon) {
        int e = errno;
        snprintf(err, err_size, "cannot listen on %s:%d: %s", s->host, p->port,
                 e == EADDRINUSE ? "address already in use (another server?)" : strerror(e));
        qtts_server_free(s);
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di ? di->port : p->port;
    if (listen_fd >= 0) { /* MHD did not bind it: ask the socket */
        struct sockaddr_storage bound;
        socklen_t len = sizeof bound;
        if (getsockname(listen_fd, (struct sockaddr *)&bound, &len) == 0)
            s->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                        : ((struct sockaddr_in *)&bound)->sin_port);
    }
    return s;
}

int qtts_server_port(const qtts_server *s) { return s->port; }

int qtts_server_drain(qtts_server *s, int deadline_ms) {
    /* Keep listening while draining: load balancers read 503 "draining" on
     * /health and new work gets 503; the listener closes once in-flight work
     * is done (or cut). */
    atomic_store(&s->draining, 1);
    long long end = (long long)qtts_now_ms() + (deadline_ms > 0 ? deadline_ms : 0);
    while (atomic_load(&s->metrics.inflight) > 0 && (long long)qtts_now_ms() < end) {
        struct timespec ts = {0, 20 * 1000000};
        nanosleep(&ts, NULL);
        sweep_slow_headers(s); /* this is the thread that ticks */
    }
    int cut = atomic_load(&s->metrics.inflight);
    if (cut > 0) {
        atomic_store(&s->aborting, 1);
        srv_pump_kick(s->pump);   /* resumes the suspended readers: they see the flag */
        srv_ws_pool_kick(s->ws); /* and the WebSocket sessions */
        long long end2 = (long long)qtts_now_ms() + 2000;
        while (atomic_load(&s->metrics.inflight) > 0 && (long long)qtts_now_ms() < end2) {
            struct timespec ts = {0, 20 * 1000000};
            nanosleep(&ts, NULL);
        }
    }
    MHD_socket lfd = MHD_quiesce_daemon(s->daemon);
    if (lfd != MHD_INVALID_SOCKET) close(lfd);
    return cut;
}
