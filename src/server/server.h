/* qtts HTTP server: an OpenAI-compatible speech API over the public engine
 * API (include/qtts.h). The HTTP threads (a fixed libmicrohttpd pool) parse,
 * validate, enqueue and stream bytes; every model computation is an engine
 * job. */
#ifndef QTTS_SERVER_H
#define QTTS_SERVER_H

#include <stddef.h>

#include "qtts.h"

typedef struct {
    const char *host;        /* bind address; default 127.0.0.1 */
    int port;                /* 0: an ephemeral port (see qtts_server_port) */
    const char *voices_dir;  /* NULL: registered voices live in memory only */
    const char *api_key;     /* NULL: no authentication */
    const char *cors_origin; /* NULL: no CORS headers */
    const char *model_id;    /* id reported by /v1/models; NULL: "qwen3-tts" */
    size_t max_body;         /* request body limit in bytes (default 32 MiB) */
    int max_input_chars;     /* `input` limit in characters (default 4096) */
    int http_threads;        /* libmicrohttpd worker threads (default 16) */
    int idle_timeout_s;      /* idle connection timeout (default 60); restarts with every byte received */
    int header_timeout_s;    /* a request's headers must be complete this long after the connection opened (or
                              * its previous response ended); default 30, 0 = no deadline. Needs
                              * qtts_server_tick */
    int max_connections;     /* open connections at most (default 2048; at least http_threads); the
                              * open-files limit is raised to fit, or the limit lowered to it */
    int ws_sessions;         /* WebSocket sessions at once (default 8): a fixed pool of session threads */
    int max_connections_per_ip; /* per client address; 0 (default) = no per-address limit (a reverse proxy
                                 * connects from one address) */
    int request_timeout_s;   /* synthesis time limit per request (default 600) */
    int body_timeout_s;      /* a request body must have arrived this long after its headers (default 60); past
                              * it the request gets 408 and the connection closes. 0 = no deadline */
    int max_request_frames;  /* the most codec frames one request may ask for (max_new_tokens) or get, guards
                              * off included (default 4096, server/frame_limit.h); <= 0 = none */
    int reuse_port;          /* share the port with other processes (SO_REUSEPORT); off: a port in use fails */
    int public_lists;        /* with api_key: GET /v1/audio/voices and /v1/audio/models answer without it */
    /* Voice aliases (server/voice_alias.h): "NAME=TARGET" entries over the
     * default table of OpenAI's voice names, which no_default_voice_aliases
     * drops. */
    const char *const *voice_aliases;
    int n_voice_aliases;
    int no_default_voice_aliases;
    /* Runaway-guard defaults for requests that do not set their own
     * (qtts_request's fields: 0 = the engine's auto ratio, < 0 = off). */
    float guard_frames_per_token;
    int no_repetition_guard;
    /* A pronunciation lexicon for every request (qtts_request.lexicon);
     * NULL: none. It must outlive the server. */
    const qtts_lexicon *lexicon;
    int verbose;
} qtts_server_params;

typedef struct qtts_server qtts_server;

void qtts_server_params_default(qtts_server_params *p);
/* Starts listening; the engine must outlive the server. */
qtts_server *qtts_server_start(qtts_engine *e, const qtts_server_params *p, char *err, size_t err_size);
/* The same on a socket already listening (qtts_server_loading_handover's),
 * which the server takes (closed with it, or on failure). */
qtts_server *qtts_server_start_on(qtts_engine *e, const qtts_server_params *p, int listen_fd, char *err,
                                  size_t err_size);

/* The port while the model loads: opened on p's host and port before the
 * load, it answers /health (and /healthz) 503 {"status":"loading"} and every
 * other request 503 with Retry-After, until handed over to the server. */
typedef struct qtts_server_loading qtts_server_loading;
qtts_server_loading *qtts_server_loading_start(const qtts_server_params *p, char *err, size_t err_size);
int qtts_server_loading_port(const qtts_server_loading *l);
/* Stops answering and returns the listening socket (the caller's now; -1
 * on failure). Connections arriving meanwhile wait in its backlog. */
int qtts_server_loading_handover(qtts_server_loading *l);
void qtts_server_loading_free(qtts_server_loading *l);
int qtts_server_port(const qtts_server *s);
/* Housekeeping the caller runs about once a second (qtts serve's main thread
 * does, between signals): closes connections whose request headers are past
 * header_timeout_s. */
void qtts_server_tick(qtts_server *s);
/* Stops accepting connections, waits up to deadline_ms for in-flight requests,
 * then cuts the rest. Returns the number of requests that had to be cut. */
int qtts_server_drain(qtts_server *s, int deadline_ms);
/* Stops the HTTP threads and frees the server (not the engine). */
void qtts_server_free(qtts_server *s);

#endif
