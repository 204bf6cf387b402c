/* POST /v1/audio/voices request bodies -> what the engine needs to make the
 * voice, without a server: the fields and their types, the name rule, which
 * audio field was given, base64 decoding, the .spk/.rvq checks against the
 * model's geometry, and for multipart forms which part is which. Voice
 * extraction (an engine job) and storing the voice stay with the caller. */
#ifndef QTTS_SERVER_VOICE_REQUEST_H
#define QTTS_SERVER_VOICE_REQUEST_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "qtts.h"
#include "server/speech_request.h" /* srv_bad_req */

typedef struct {
    char name[72];        /* valid by srv_voice_name_ok */
    const char *ref_text; /* NULL when absent or empty */
    const char *param;    /* the field the voice comes from, for the caller's error messages */
    /* Either a recording for the engine to extract a voice from (non-empty;
     * decoded wav_b64/audio_b64, or the form's audio_sample part, which
     * points into the body) ... */
    const unsigned char *audio;
    size_t audio_len;
    /* ... or pre-extracted parts: the x-vector (hidden_size floats) and
     * optional reference codes (frame-major, n_frames x n_codebooks). */
    float *xvec;
    size_t xvec_len;
    int32_t *codes;
    size_t n_frames;
    unsigned char *audio_owned; /* what the fields above point into when owned here */
    char *ref_text_owned;
} srv_voice_request;

/* JSON: {name, ref_text?, wav_b64 | audio_b64 | spk_b64 (+ rvq_b64)}; root is
 * any JSON value (a non-object is refused). Strings of the request may point
 * into root: keep it while using *out. Returns 0, or -1 with b filled (then
 * *out holds nothing to free, but clearing it is harmless). */
int srv_voice_request_from_json(const qtts_model_info *info, const cJSON *root, srv_voice_request *out,
                                srv_bad_req *b);

/* multipart/form-data (OpenAI's shape): name, audio_sample (a file), type
 * (only "audio_sample"), consent (accepted, not checked), and qtts's
 * ref_text. The result points into body: keep it while using *out. */
int srv_voice_request_from_form(const char *content_type, const unsigned char *body, size_t len,
                                srv_voice_request *out, srv_bad_req *b);

void srv_voice_request_clear(srv_voice_request *r);

#endif
