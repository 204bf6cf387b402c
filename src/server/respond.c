/* Plain responses of the HTTP front end: JSON bodies, OpenAI-shaped errors,
 * CORS headers and the status metrics, plus the engine-status -> HTTP-status
 * map and the one JSON body parser every route uses. */
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/json_util.h"
#include "server/internal.h"

int http_status_of(qtts_status st) {
    switch (st) {
    case QTTS_OK: return 200;
    case QTTS_ERR_INVALID: return 400;
    case QTTS_ERR_BUSY: return 503;
    case QTTS_ERR_CANCELLED: return 499;
    case QTTS_ERR_NOT_FOUND: return 404;
    case QTTS_ERR_EXISTS: return 409;
    case QTTS_ERR_NO_MEMORY:
    case QTTS_ERR_MODEL:
    case QTTS_ERR_INTERNAL: return 500;
    }
    return 500;
}

cJSON *srv_parse_json_body(const srv_req *rq, const char **why) {
    const char *text = rq->body.data ? rq->body.data : "";
    size_t len = rq->body.data ? rq->body.len : 0;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) {
        *why = "the request body is not valid JSON";
        return NULL;
    }
    size_t used = end ? (size_t)(end - text) : len;
    while (used < len && strchr(" \t\r\n", text[used]) && text[used]) used++;
    if (used < len) {
        cJSON_Delete(root);
        *why = "the request body has bytes after its JSON document";
        return NULL;
    }
    if (json_has_nul(text, len)) {
        cJSON_Delete(root);
        *why = "the request body contains a NUL character (a NUL byte or \\u0000)";
        return NULL;
    }
    return root;
}

enum MHD_Result srv_queue(qtts_server *s, struct MHD_Connection *c, int status, struct MHD_Response *r) {
    if (!r) return MHD_NO;
    if (s->cors_origin) {
        MHD_add_response_header(r, "Access-Control-Allow-Origin", s->cors_origin);
        MHD_add_response_header(r, "Access-Control-Expose-Headers",
                                "X-Qtts-Seed, X-Qtts-Finished-By, X-Qtts-Decoder-Steps, X-Qtts-Overlapped-Steps");
        MHD_add_response_header(r, "Vary", "Origin");
    }
    srv_metrics_status(&s->metrics, status);
    enum MHD_Result rc = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return rc;
}

enum MHD_Result srv_respond(qtts_server *s, struct MHD_Connection *c, int status, const char *mime, const void *data,
                            size_t n) {
    struct MHD_Response *r = MHD_create_response_from_buffer(n, (void *)data, MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    if (mime) MHD_add_response_header(r, "Content-Type", mime);
    return srv_queue(s, c, status, r);
}

enum MHD_Result srv_respond_json(qtts_server *s, struct MHD_Connection *c, int status, const char *json) {
    return srv_respond(s, c, status, "application/json", json, strlen(json));
}

static enum MHD_Result respond_error_v(qtts_server *s, struct MHD_Connection *c, int status, const char *type,
                                       const char *param, const char *code, int close, const char *fmt, va_list ap) {
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    cJSON *root = cJSON_CreateObject();
    cJSON *e = cJSON_AddObjectToObject(root, "error");
    char *js = NULL;
    if (e && cJSON_AddStringToObject(e, "message", msg) && cJSON_AddStringToObject(e, "type", type) &&
        (param ? cJSON_AddStringToObject(e, "param", param) : cJSON_AddNullToObject(e, "param")) &&
        (code ? cJSON_AddStringToObject(e, "code", code) : cJSON_AddNullToObject(e, "code")))
        js = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (s->p.verbose) fprintf(stderr, "qtts serve: %d %s\n", status, msg);
    struct MHD_Response *r =
        js ? MHD_create_response_from_buffer(strlen(js), js, MHD_RESPMEM_MUST_FREE)
           : MHD_create_response_from_buffer(strlen(msg), msg, MHD_RESPMEM_MUST_COPY);
    if (!r) {
        free(js);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", js ? "application/json" : "text/plain");
    if (status == 503) MHD_add_response_header(r, "Retry-After", "1");
    if (status == 401) MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
    if (close) MHD_add_response_header(r, "Connection", "close");
    return srv_queue(s, c, status, r);
}

enum MHD_Result srv_respond_error(qtts_server *s, struct MHD_Connection *c, int status, const char *type,
                                  const char *param, const char *code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    enum MHD_Result rc = respond_error_v(s, c, status, type, param, code, 0, fmt, ap);
    va_end(ap);
    return rc;
}

enum MHD_Result srv_respond_error_close(qtts_server *s, struct MHD_Connection *c, int status, const char *code,
                                        const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    enum MHD_Result rc = respond_error_v(s, c, status, "invalid_request_error", NULL, code, 1, fmt, ap);
    va_end(ap);
    return rc;
}
