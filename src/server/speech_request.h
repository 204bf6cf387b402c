/* POST /v1/audio/speech request bodies -> a qtts_request, without a server:
 * field types and ranges, the text limits, response/stream format, language,
 * and the voice rules of each model variant. What the parser needs from the
 * server comes in a small context (model info, limits, defaults and a voice
 * lookup callback), so the same code runs under a fuzzer with a stub lookup.
 *
 * The parser never calls the engine. A Base model's inline 'ref_audio' is
 * decoded from base64 here (a request error if it is not valid), and the
 * caller extracts the voice from those bytes afterwards: extraction is an
 * engine job, the last step of validation, and the server's to run. */
#ifndef QTTS_SERVER_SPEECH_REQUEST_H
#define QTTS_SERVER_SPEECH_REQUEST_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "qtts.h"
#include "server/audio_out.h"

/* A request the server refuses: the HTTP status, the OpenAI error fields and
 * one line of message. Used by the voice registration parser too. */
typedef struct {
    int status;
    const char *type, *param, *code; /* static strings; param and code may be NULL */
    char msg[512];
} srv_bad_req;

/* Fills b (type from the status: 503 server_busy, >= 500 server_error, else
 * invalid_request_error) and returns -1. */
int srv_bad_req_fail(srv_bad_req *b, int status, const char *param, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Registered-voice lookup, srv_voices_get's contract: 0 found (*out gets a
 * new reference the caller releases), -2 unknown, -1 the voice's files could
 * not be loaded (err). With out == NULL it only asks whether name exists
 * (the callback drops the reference itself). */
typedef int (*srv_voice_lookup_fn)(void *user, const char *name, qtts_voice **out, char *err, size_t err_size);

struct srv_voice_aliases;

typedef struct {
    const qtts_model_info *info;   /* variant, speakers, languages */
    const struct srv_voice_aliases *aliases; /* other names for voices (server/voice_alias.h); may be NULL */
    int max_input_chars;           /* limit of 'input' and 'instructions' */
    float guard_frames_per_token;  /* server defaults of the runaway guard */
    int no_repetition_guard;
    int max_request_frames;        /* the most frames a request may ask for or get (server/frame_limit.h); 0: none */
    const qtts_lexicon *lexicon;   /* the server's pronunciation lexicon, or NULL */
    srv_voice_lookup_fn voice_get; /* registered voices */
    void *voice_user;
} srv_speech_ctx;

typedef enum { SRV_OUT_BUFFERED, SRV_OUT_AUDIO_STREAM, SRV_OUT_SSE } srv_out_mode;

typedef struct {
    qtts_request r; /* its strings point into the cJSON tree: keep it until submitted */
    srv_format fmt;
    srv_out_mode mode;
    double speed;
    /* Base models: a registered voice (r.voice points at it; the caller
     * releases it) or, for an inline 'ref_audio', the decoded recording
     * (malloc'd, non-empty) for the caller to extract a voice from. */
    qtts_voice *voice;
    unsigned char *ref_audio;
    size_t ref_audio_len;
    const char *ref_text; /* with ref_audio: the transcript, NULL when absent or empty */
} srv_speech_request;

/* Parses root (any JSON value) into *out. Returns 0, or -1 with b filled;
 * on failure *out holds no voice and no ref_audio. */
int srv_speech_request_parse(const srv_speech_ctx *ctx, const cJSON *root, srv_speech_request *out, srv_bad_req *b);

/* Frees ref_audio (not the voice: its release is the caller's). */
void srv_speech_request_clear(srv_speech_request *o);

#endif
