/* POST /v1/audio/voices request decoding (see voice_request.h). */
#include "server/voice_request.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/rvq.h"
#include "io/spk.h"
#include "server/b64.h"
#include "server/multipart.h"
#include "voices/voice_files.h"
#include "text/utf8.h"

static int bad_name(srv_bad_req *b) {
    return srv_bad_req_fail(b, 400, "name", "invalid_name",
                            "'name' is required: 1-64 characters of A-Z a-z 0-9 _ - . starting with a letter or "
                            "digit, without '..'");
}

/* An upload the engine never saw: the same reply an extraction failure of
 * the caller's gets (400, invalid_audio, the field as param). */
static int bad_audio(srv_bad_req *b, const char *param, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad_audio(srv_bad_req *b, const char *param, const char *fmt, ...) {
    srv_bad_req_fail(b, 400, param, "invalid_audio", "%s", "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->msg, sizeof b->msg, fmt, ap);
    va_end(ap);
    return -1;
}

static const char *opt_str(const cJSON *root, const char *name, int *bad) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);
    if (!v || cJSON_IsNull(v)) return NULL;
    if (!cJSON_IsString(v)) {
        *bad = 1;
        return NULL;
    }
    return v->valuestring;
}

/* spk_b64 (+ rvq_b64): checked against the model's hidden size and code
 * geometry here, so that the engine only gets parts that fit. */
static int decode_parts(const qtts_model_info *info, const char *spk_b64, const char *rvq_b64, srv_voice_request *r,
                        srv_bad_req *b) {
    size_t n = 0;
    int64_t xlen = 0, n_frames = 0;
    const char *why = "";
    qtts_err qe = {0};
    unsigned char *raw = srv_b64_decode(spk_b64, strlen(spk_b64), &n, &why);
    r->param = "spk_b64";
    if (!raw) return bad_audio(b, r->param, "spk_b64: %s", why);
    r->xvec = qtts_spk_from_bytes(raw, n, info->hidden_size, "spk_b64", &xlen, &qe);
    free(raw);
    if (!r->xvec) return bad_audio(b, r->param, "%s", qe.msg); /* "spk_b64: ..." */
    r->xvec_len = (size_t)xlen;
    if (rvq_b64 && *rvq_b64) {
        r->param = "rvq_b64";
        raw = srv_b64_decode(rvq_b64, strlen(rvq_b64), &n, &why);
        if (!raw) return bad_audio(b, r->param, "rvq_b64: %s", why);
        int bad = qtts_rvq_unpack(raw, n, info->n_codebooks, info->codebook_size, "rvq_b64", &r->codes, &n_frames, &qe);
        free(raw);
        if (bad) return bad_audio(b, r->param, "%s", qe.msg);
        r->n_frames = (size_t)n_frames;
    }
    return 0;
}

static int from_json(const qtts_model_info *info, const cJSON *root, srv_voice_request *r, srv_bad_req *b) {
    if (!cJSON_IsObject(root))
        return srv_bad_req_fail(b, 400, NULL, "invalid_json", "the request body is not a JSON object");
    int bad = 0;
    const char *name = opt_str(root, "name", &bad), *ref_text = opt_str(root, "ref_text", &bad);
    const char *wav = opt_str(root, "wav_b64", &bad), *audio = opt_str(root, "audio_b64", &bad);
    const char *spk = opt_str(root, "spk_b64", &bad), *rvq = opt_str(root, "rvq_b64", &bad);
    if (bad)
        return srv_bad_req_fail(b, 400, NULL, "invalid_type",
                                "name, ref_text, wav_b64, audio_b64, spk_b64 and rvq_b64 must be strings");
    if (!name || !srv_voice_name_ok(name)) return bad_name(b);
    snprintf(r->name, sizeof r->name, "%s", name);
    if (ref_text && qtts_utf8_count(ref_text, strlen(ref_text)) < 0) /* as the multipart form checks it */
        return srv_bad_req_fail(b, 400, "ref_text", "invalid_value", "'ref_text' must be UTF-8 text without NUL bytes");
    r->ref_text = ref_text && *ref_text ? ref_text : NULL;
    const char *audio_b64 = wav ? wav : audio;
    if (!!audio_b64 + !!spk != 1 || (wav && audio) || (rvq && !spk))
        return srv_bad_req_fail(b, 400, NULL, "missing_audio",
                                "give exactly one of 'wav_b64' / 'audio_b64' (an audio file) or 'spk_b64' (+ "
                                "optional 'rvq_b64')");
    if (!audio_b64) return decode_parts(info, spk, rvq, r, b);
    size_t n = 0;
    const char *why = "";
    r->param = wav ? "wav_b64" : "audio_b64";
    r->audio_owned = srv_b64_decode(audio_b64, strlen(audio_b64), &n, &why);
    if (!r->audio_owned) return bad_audio(b, r->param, "%s: %s", r->param, why);
    if (!n) return bad_audio(b, r->param, "%s: empty", r->param);
    r->audio = r->audio_owned;
    r->audio_len = n;
    return 0;
}

int srv_voice_request_from_json(const qtts_model_info *info, const cJSON *root, srv_voice_request *out,
                                srv_bad_req *b) {
    memset(out, 0, sizeof *out);
    memset(b, 0, sizeof *b);
    if (from_json(info, root, out, b) == 0) return 0;
    srv_voice_request_clear(out);
    return -1;
}

/* A form field's text as a C string (NUL-free, valid UTF-8), or NULL. */
static char *form_text(const srv_form_part *p) {
    if (!p || memchr(p->data, 0, p->len) || qtts_utf8_count((const char *)p->data, p->len) < 0) return NULL;
    char *t = malloc(p->len + 1);
    if (!t) return NULL;
    memcpy(t, p->data, p->len);
    t[p->len] = 0;
    return t;
}

static int from_form(const char *ctype, const unsigned char *body, size_t len, srv_voice_request *r,
                     srv_bad_req *b) {
    srv_form_part parts[16];
    const char *why = "";
    int n = srv_multipart_parse(ctype, body, len, parts, 16, &why);
    if (n < 0) return srv_bad_req_fail(b, 400, NULL, "invalid_form", "%s", why);
    const srv_form_part *type = srv_form_find(parts, n, "type");
    if (type && !(type->len == 12 && !memcmp(type->data, "audio_sample", 12)))
        return srv_bad_req_fail(b, 400, "type", "unsupported_value",
                                "only type 'audio_sample' voices can be created here");
    const srv_form_part *audio = srv_form_find(parts, n, "audio_sample");
    if (!audio)
        return srv_bad_req_fail(b, 400, "audio_sample", "missing_audio", "the form needs an 'audio_sample' file part");
    const srv_form_part *np = srv_form_find(parts, n, "name");
    if (!np || np->len >= sizeof r->name) return bad_name(b);
    memcpy(r->name, np->data, np->len);
    r->name[np->len] = 0;
    if (strlen(r->name) != np->len || !srv_voice_name_ok(r->name)) return bad_name(b);
    const srv_form_part *rt = srv_form_find(parts, n, "ref_text");
    if (rt && rt->len) {
        r->ref_text = r->ref_text_owned = form_text(rt);
        if (!r->ref_text)
            return srv_bad_req_fail(b, 400, "ref_text", "invalid_value",
                                    "'ref_text' must be UTF-8 text without NUL bytes");
    }
    r->param = "audio_sample";
    if (!audio->len) return bad_audio(b, r->param, "%s: empty", r->param);
    r->audio = audio->data;
    r->audio_len = audio->len;
    return 0;
}

int srv_voice_request_from_form(const char *content_type, const unsigned char *body, size_t len,
                                srv_voice_request *out, srv_bad_req *b) {
    memset(out, 0, sizeof *out);
    memset(b, 0, sizeof *b);
    if (from_form(content_type, body, len, out, b) == 0) return 0;
    srv_voice_request_clear(out);
    return -1;
}

void srv_voice_request_clear(srv_voice_request *r) {
    free(r->audio_owned);
    free(r->ref_text_owned);
    free(r->xvec);
    free(r->codes);
    memset(r, 0, sizeof *r);
}
