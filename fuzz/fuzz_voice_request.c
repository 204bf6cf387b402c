/* POST /v1/audio/voices bodies through the request decoders of
 * voice_request.c. The first byte picks the shape (bit 0: a JSON body
 * through the server's JSON gate, else a multipart/form-data body with the
 * fixed boundary "XyZ") and the fake Base model's geometry (x-vector length,
 * codebooks, codebook size). Beyond "no crash": each body gives either a
 * decoded request or one error, never both. An error has a status of
 * 400/404/413/5xx, a type, a non-empty message and leaves nothing allocated;
 * a request has a valid name, the field it came from, and exactly one of a
 * non-empty recording (inside the body for a form) or an x-vector of the
 * model's length with codes in range. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/internal.h"
#include "voices/voice_files.h"
#include "server/voice_request.h"

#define BOUNDARY "XyZ"

static void check_error(const srv_bad_req *b, const srv_voice_request *r) {
    int st = b->status;
    if (!(st == 400 || st == 404 || st == 413 || (st >= 500 && st < 600))) abort();
    if (!b->type || !b->msg[0] || memchr(b->msg, 0, sizeof b->msg) == NULL) abort();
    if (r->audio || r->xvec || r->codes || r->audio_owned || r->ref_text_owned || r->ref_text) abort();
}

static void check_request(const qtts_model_info *mi, const srv_bad_req *b, const srv_voice_request *r,
                          const uint8_t *body, size_t len, int form) {
    if (b->status || b->msg[0]) abort();
    if (!memchr(r->name, 0, sizeof r->name) || !srv_voice_name_ok(r->name) || !r->param) abort();
    if (r->ref_text && !*r->ref_text) abort();
    if (!!r->audio == !!r->xvec) abort(); /* exactly one source */
    if (r->audio) {
        if (!r->audio_len || r->codes) abort();
        if (form && (r->audio < body || r->audio + r->audio_len > body + len)) abort();
        if (!form && r->audio != r->audio_owned) abort();
    } else {
        if (form || r->xvec_len != (size_t)mi->hidden_size) abort();
        for (size_t i = 0; i < r->xvec_len; i++)
            if (!isfinite(r->xvec[i])) abort();
        if (!!r->codes != !!r->n_frames) abort();
        for (size_t i = 0; i < r->n_frames * (size_t)mi->n_codebooks; i++)
            if (r->codes[i] < 0 || r->codes[i] >= mi->codebook_size) abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    uint8_t sel = data[0];
    static const int hidden[] = {32, 1, 1024, 2048};
    static const int books[] = {16, 8};
    static const int values[] = {2048, 1024};
    qtts_model_info mi;
    memset(&mi, 0, sizeof mi);
    mi.variant = "base";
    mi.size = "0b6";
    mi.hidden_size = hidden[sel >> 1 & 3];
    mi.n_codebooks = books[sel >> 3 & 1];
    mi.codebook_size = values[sel >> 4 & 1];
    mi.sample_rate = 24000;
    mi.frame_samples = 1920;
    size_t n = size - 1;
    uint8_t *body = malloc(n ? n : 1); /* its own buffer: overreads show */
    if (!body) return 0;
    memcpy(body, data + 1, n);
    srv_voice_request r;
    srv_bad_req b;
    if (sel & 1) {
        srv_req rq;
        memset(&rq, 0, sizeof rq);
        rq.body.data = (char *)body;
        rq.body.len = n;
        const char *why = NULL;
        cJSON *root = srv_parse_json_body(&rq, &why);
        if (!root) {
            if (!why || !*why) abort();
        } else {
            if (srv_voice_request_from_json(&mi, root, &r, &b)) check_error(&b, &r);
            else check_request(&mi, &b, &r, body, n, 0);
            srv_voice_request_clear(&r);
            cJSON_Delete(root);
        }
    } else {
        if (srv_voice_request_from_form("multipart/form-data; boundary=" BOUNDARY, body, n, &r, &b))
            check_error(&b, &r);
        else check_request(&mi, &b, &r, body, n, 1);
        srv_voice_request_clear(&r);
    }
    free(body);
    return 0;
}
