/* ElevenLabs-compatible routes on qtts serve: GET /v1/voices, GET
 * /v1/voices/{id}, GET /v1/models (ElevenLabs' shape when the request
 * carries an ElevenLabs client's header), POST /v1/text-to-speech/{voice_id}
 * and .../stream with ?output_format=codec_rate[_kbps]. The same engine,
 * voices, limits and request parser as /v1/audio/speech; errors in
 * ElevenLabs' shape {"detail":{"status","message"}}. */
#ifndef QTTS_SERVER_ELEVENLABS_H
#define QTTS_SERVER_ELEVENLABS_H

#include <microhttpd.h>

#include "server/server.h"

/* 1 if url (with this request's headers) is one of the routes above. */
int srv_el_match(struct MHD_Connection *c, const char *url);
/* 1 if the xi-api-key header holds key (constant time). */
int srv_el_key_ok(struct MHD_Connection *c, const char *key);
/* {"detail":{"status": code, "message": ...}} with the HTTP status. */
enum MHD_Result srv_el_error(qtts_server *s, struct MHD_Connection *c, int status, const char *code, const char *fmt,
                             ...) __attribute__((format(printf, 5, 6)));
/* The route, once the body is complete (body: the request's bytes). */
enum MHD_Result srv_el_route(qtts_server *s, struct MHD_Connection *c, const char *url, const char *method,
                             const char *body, size_t body_len);

#endif
