/* Shared state of the server's translation units (not a public header). */
#ifndef QTTS_SERVER_INTERNAL_H
#define QTTS_SERVER_INTERNAL_H

#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <stdatomic.h>
#include <stddef.h>

#include "qtts.h"
#include "server/buf.h"
#include "server/metrics.h"
#include "server/pump.h"
#include "server/server.h"
#include "server/speech_request.h"
#include "voices/voice_store.h"

struct qtts_server {
    qtts_engine *engine;
    const qtts_model_info *info;
    qtts_server_params p;
    char *host, *voices_dir, *api_key, *cors_origin, *model_id; /* owned copies */
    struct MHD_Daemon *daemon;
    int port;
    srv_voices *voices;
    struct srv_voice_aliases *aliases; /* other names for voices (server/voice_alias.h) */
    srv_pump *pump;
    struct srv_ws_pool *ws; /* WebSocket sessions (server/ws_speech.h) */
    srv_metrics metrics;
    atomic_int draining; /* no new work accepted */
    atomic_int aborting; /* in-flight work is cut */
    long long started_ms;
};

typedef struct srv_speech srv_speech;

/* Per-request state while the body arrives. */
typedef struct {
    srv_buf body;
    int responded;
    int too_large; /* a body without Content-Length went past max_body: 413 once it has arrived */
    long long t0_ms;
    srv_speech *speech; /* a buffered speech request waiting for its audio */
    int ws_reserved;    /* holds a WebSocket session slot until the upgrade happens */
} srv_req;

/* ---- loading.c ---- */

struct sockaddr_storage;
/* The address to listen on for host ("localhost", or an IPv4/IPv6 literal) and port; -1 for another name. */
int srv_listen_addr(const char *host, int port, struct sockaddr_storage *ss, int *ipv6);

/* ---- respond.c ---- */

/* The HTTP status for an engine failure: invalid -> 400, busy -> 503,
 * cancelled -> 499 (client went away), the rest -> 500. */
int http_status_of(qtts_status st);

/* The request body as exactly one JSON document (trailing bytes other than
 * whitespace, and \u0000 escapes, are refused: C strings would cut there).
 * NULL with why set on failure. */
cJSON *srv_parse_json_body(const srv_req *rq, const char **why);

/* Responses: each queues a response and records its status in the metrics. */
enum MHD_Result srv_respond(qtts_server *s, struct MHD_Connection *c, int status, const char *mime, const void *data,
                            size_t n);
enum MHD_Result srv_respond_json(qtts_server *s, struct MHD_Connection *c, int status, const char *json);
/* {"error":{"message","type","param","code"}}; param and code may be NULL. */
enum MHD_Result srv_respond_error(qtts_server *s, struct MHD_Connection *c, int status, const char *type,
                                  const char *param, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));
/* The same as an invalid_request_error, and the connection closes after it (what follows on it cannot be
 * trusted to be a request). */
enum MHD_Result srv_respond_error_close(qtts_server *s, struct MHD_Connection *c, int status, const char *code,
                                        const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Adds the CORS headers when enabled, counts the status and queues. */
enum MHD_Result srv_queue(qtts_server *s, struct MHD_Connection *c, int status, struct MHD_Response *r);

/* Route handlers (body complete). */
enum MHD_Result srv_route_speech(qtts_server *s, struct MHD_Connection *c, srv_req *rq);
/* The speech-request parser's context for this server: model info, limits,
 * guard defaults and the registered-voice lookup (speech.c; also ws_speech.c). */
void srv_speech_context(qtts_server *s, srv_speech_ctx *ctx);
/* A buffered speech request whose connection the pump resumed. */
enum MHD_Result srv_speech_resume(qtts_server *s, struct MHD_Connection *c, srv_req *rq);
/* Frees a request whose connection ended early (cancels its synthesis). */
void srv_speech_abandon(srv_speech *ss);
enum MHD_Result srv_route_voices_list(qtts_server *s, struct MHD_Connection *c);
enum MHD_Result srv_route_voices_add(qtts_server *s, struct MHD_Connection *c, srv_req *rq);
enum MHD_Result srv_route_voices_delete(qtts_server *s, struct MHD_Connection *c, const char *name);

#endif
