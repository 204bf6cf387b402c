/* GET/POST /v1/audio/voices, DELETE /v1/audio/voices/{name}. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/b64.h"
#include "io/rvq.h"
#include "io/spk.h"
#include "server/internal.h"
#include "server/multipart.h"
#include "text/utf8.h"

enum MHD_Result srv_route_voices_list(qtts_server *s, struct MHD_Connection *c) {
    cJSON *root = cJSON_CreateObject();
    cJSON *arr = root ? cJSON_AddArrayToObject(root, "voices") : NULL;
    if (!arr) {
        cJSON_Delete(root);
        return srv_respond_error(s, c, 500, "server_error", NULL, NULL, "out of memory");
    }
    cJSON_AddStringToObject(root, "object", "list");
    cJSON_AddStringToObject(root, "variant", s->info->variant);
    for (int i = 0; i < s->info->n_speakers; i++) {
        cJSON *v = cJSON_CreateObject();
        if (!v) continue;
        cJSON_AddStringToObject(v, "id", s->info->speakers[i]); /* Open WebUI reads id + name */
        cJSON_AddStringToObject(v, "name", s->info->speakers[i]);
        cJSON_AddStringToObject(v, "type", "builtin");
        cJSON_AddItemToArray(arr, v);
    }
    srv_voice_entry *list = NULL;
    size_t n = 0;
    if (srv_voices_list(s->voices, &list, &n) == 0) {
        for (size_t i = 0; i < n; i++) {
            cJSON *v = cJSON_CreateObject();
            if (!v) continue;
            cJSON_AddStringToObject(v, "id", list[i].name);
            cJSON_AddStringToObject(v, "name", list[i].name);
            cJSON_AddStringToObject(v, "type", "cloned");
            if (list[i].ref_text) cJSON_AddStringToObject(v, "ref_text", list[i].ref_text);
            else cJSON_AddNullToObject(v, "ref_text");
            cJSON_AddNumberToObject(v, "ref_frames", (double)list[i].n_frames);
            cJSON_AddBoolToObject(v, "x_vector_only", !list[i].has_codes || !list[i].ref_text);
            cJSON_AddItemToArray(arr, v);
        }
    }
    srv_voices_list_free(list, n);
    char *js = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!js) return srv_respond_error(s, c, 500, "server_error", NULL, NULL, "out of memory");
    enum MHD_Result rc = srv_respond_json(s, c, 200, js);
    free(js);
    return rc;
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

static qtts_voice *voice_from_parts(qtts_server *s, const char *spk_b64, const char *rvq_b64, const char *ref_text,
                                    const char **param, qtts_error *err) {
    size_t n = 0;
    int64_t xlen = 0, n_frames = 0;
    const char *why = "";
    qtts_err qe = {0};
    err->status = QTTS_ERR_INVALID; /* the upload's fault unless the engine says otherwise */
    unsigned char *raw = srv_b64_decode(spk_b64, strlen(spk_b64), &n, &why);
    int decoded = raw != NULL;
    float *x = raw ? qtts_spk_from_bytes(raw, n, s->info->hidden_size, "spk_b64", &xlen, &qe) : NULL;
    free(raw);
    *param = "spk_b64";
    if (!x) {
        if (decoded) snprintf(err->message, sizeof err->message, "%s", qe.msg); /* "spk_b64: ..." */
        else snprintf(err->message, sizeof err->message, "spk_b64: %s", why);
        return NULL;
    }
    int32_t *codes = NULL;
    if (rvq_b64 && *rvq_b64) {
        *param = "rvq_b64";
        raw = srv_b64_decode(rvq_b64, strlen(rvq_b64), &n, &why);
        int bad = !raw || qtts_rvq_unpack(raw, n, s->info->n_codebooks, s->info->codebook_size, "rvq_b64", &codes,
                                          &n_frames, &qe);
        if (bad) {
            if (raw) snprintf(err->message, sizeof err->message, "%s", qe.msg);
            else snprintf(err->message, sizeof err->message, "rvq_b64: %s", why);
            free(raw);
            free(x);
            return NULL;
        }
        free(raw);
    }
    qtts_voice *v = qtts_voice_from_parts(s->engine, x, (size_t)xlen, codes, (size_t)n_frames, ref_text, err);
    free(x);
    free(codes);
    return v;
}

/* The engine extracts a voice from an uploaded recording (an engine job: this
 * request thread only waits). param names the field for error messages. */
static qtts_voice *voice_from_recording(qtts_server *s, const unsigned char *bytes, size_t n, const char *ref_text,
                                        const char *param, qtts_error *err) {
    if (!n) {
        err->status = QTTS_ERR_INVALID;
        snprintf(err->message, sizeof err->message, "%s: empty", param);
        return NULL;
    }
    return qtts_voice_from_audio_bytes(s->engine, bytes, n, ref_text, err);
}

/* Stores a voice the request produced and answers. Both request shapes get
 * one reply carrying OpenAI's voice object (object, id, name, created_at)
 * and qtts's own fields. Takes over v (NULL: extraction failed, see verr). */
static enum MHD_Result store_and_reply(qtts_server *s, struct MHD_Connection *c, const char *name, qtts_voice *v,
                                       const qtts_error *verr, const char *param) {
    enum MHD_Result rc;
    if (!v) {
        atomic_fetch_sub(&s->metrics.inflight, 1);
        int status = http_status_of(verr->status);
        return srv_respond_error(s, c, status, status >= 500 ? "server_error" : "invalid_request_error", param,
                                 status >= 500 ? NULL : "invalid_audio", "%s", verr->message);
    }
    char err[512] = "";
    int added = srv_voices_add(s->voices, name, v, err, sizeof err);
    atomic_fetch_sub(&s->metrics.inflight, 1);
    if (added == -2) {
        rc = srv_respond_error(s, c, 409, "invalid_request_error", "name", "voice_exists",
                               "voice '%s' already exists (DELETE it first)", name);
    } else if (added) {
        rc = srv_respond_error(s, c, 500, "server_error", NULL, NULL, "%s", err);
    } else {
        atomic_fetch_add(&s->metrics.voice_registrations, 1);
        size_t n_frames = 0, xlen = 0;
        qtts_voice_codes(v, &n_frames);
        qtts_voice_xvector(v, &xlen);
        cJSON *o = cJSON_CreateObject();
        char *js = NULL;
        if (o) {
            cJSON_AddStringToObject(o, "object", "audio.voice");
            cJSON_AddStringToObject(o, "id", name); /* the name is the id: 'voice' takes either */
            cJSON_AddStringToObject(o, "name", name);
            cJSON_AddNumberToObject(o, "created_at", (double)time(NULL));
            cJSON_AddStringToObject(o, "type", "cloned");
            cJSON_AddNumberToObject(o, "ref_frames", (double)n_frames);
            cJSON_AddNumberToObject(o, "xvector_size", (double)xlen);
            cJSON_AddBoolToObject(o, "x_vector_only", !n_frames || !qtts_voice_ref_text(v));
            cJSON_AddBoolToObject(o, "persisted", s->voices_dir != NULL);
            js = cJSON_PrintUnformatted(o);
            cJSON_Delete(o);
        }
        rc = js ? srv_respond_json(s, c, 201, js) : srv_respond_error(s, c, 500, "server_error", NULL, NULL, "oom");
        free(js);
    }
    qtts_voice_release(v);
    return rc;
}

static enum MHD_Result bad_name(qtts_server *s, struct MHD_Connection *c) {
    return srv_respond_error(s, c, 400, "invalid_request_error", "name", "invalid_name",
                             "'name' is required: 1-64 characters of A-Z a-z 0-9 _ - . starting with a letter or "
                             "digit, without '..'");
}

/* JSON: {name, ref_text?, wav_b64 | audio_b64 | spk_b64 (+ rvq_b64)}. */
static enum MHD_Result voices_add_json(qtts_server *s, struct MHD_Connection *c, srv_req *rq) {
    const char *why = "the request body is not a JSON object";
    cJSON *root = srv_parse_json_body(rq, &why);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return srv_respond_error(s, c, 400, "invalid_request_error", NULL, "invalid_json", "%s", why);
    }
    int bad = 0;
    const char *name = opt_str(root, "name", &bad), *ref_text = opt_str(root, "ref_text", &bad);
    const char *wav = opt_str(root, "wav_b64", &bad), *audio = opt_str(root, "audio_b64", &bad);
    const char *spk = opt_str(root, "spk_b64", &bad), *rvq = opt_str(root, "rvq_b64", &bad);
    enum MHD_Result rc;
    if (bad) {
        rc = srv_respond_error(s, c, 400, "invalid_request_error", NULL, "invalid_type",
                               "name, ref_text, wav_b64, audio_b64, spk_b64 and rvq_b64 must be strings");
        goto out;
    }
    if (!name || !srv_voice_name_ok(name)) {
        rc = bad_name(s, c);
        goto out;
    }
    if (ref_text && !*ref_text) ref_text = NULL;
    const char *audio_b64 = wav ? wav : audio;
    if (!!audio_b64 + !!spk != 1 || (wav && audio) || (rvq && !spk)) {
        rc = srv_respond_error(s, c, 400, "invalid_request_error", NULL, "missing_audio",
                               "give exactly one of 'wav_b64' / 'audio_b64' (an audio file) or 'spk_b64' (+ "
                               "optional 'rvq_b64')");
        goto out;
    }
    qtts_error verr = {.status = QTTS_ERR_INVALID};
    const char *param = NULL;
    qtts_voice *v = NULL;
    atomic_fetch_add(&s->metrics.inflight, 1);
    if (audio_b64) {
        size_t n = 0;
        const char *why2 = "";
        unsigned char *bytes = srv_b64_decode(audio_b64, strlen(audio_b64), &n, &why2);
        param = wav ? "wav_b64" : "audio_b64";
        if (!bytes) snprintf(verr.message, sizeof verr.message, "%s: %s", param, why2);
        else v = voice_from_recording(s, bytes, n, ref_text, param, &verr);
        free(bytes);
    } else {
        v = voice_from_parts(s, spk, rvq, ref_text, &param, &verr);
    }
    rc = store_and_reply(s, c, name, v, &verr, param);
out:
    cJSON_Delete(root);
    return rc;
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

/* multipart/form-data, OpenAI's shape: name, audio_sample (a file), consent
 * (accepted and not checked: there is no consent store here); ref_text is
 * qtts's extra field for in-context cloning. */
static enum MHD_Result voices_add_form(qtts_server *s, struct MHD_Connection *c, srv_req *rq, const char *ctype) {
    srv_form_part parts[16];
    const char *why = "";
    int n = srv_multipart_parse(ctype, (const unsigned char *)rq->body.data, rq->body.len, parts, 16, &why);
    if (n < 0) return srv_respond_error(s, c, 400, "invalid_request_error", NULL, "invalid_form", "%s", why);
    const srv_form_part *type = srv_form_find(parts, n, "type");
    if (type && !(type->len == 12 && !memcmp(type->data, "audio_sample", 12)))
        return srv_respond_error(s, c, 400, "invalid_request_error", "type", "unsupported_value",
                                 "only type 'audio_sample' voices can be created here");
    const srv_form_part *audio = srv_form_find(parts, n, "audio_sample");
    if (!audio)
        return srv_respond_error(s, c, 400, "invalid_request_error", "audio_sample", "missing_audio",
                                 "the form needs an 'audio_sample' file part");
    char name[72] = "";
    const srv_form_part *np = srv_form_find(parts, n, "name");
    if (!np || np->len >= sizeof name) return bad_name(s, c);
    memcpy(name, np->data, np->len);
    name[np->len] = 0;
    if (strlen(name) != np->len || !srv_voice_name_ok(name)) return bad_name(s, c);
    const srv_form_part *rt = srv_form_find(parts, n, "ref_text");
    char *ref_text = rt && rt->len ? form_text(rt) : NULL;
    if (rt && rt->len && !ref_text)
        return srv_respond_error(s, c, 400, "invalid_request_error", "ref_text", "invalid_value",
                                 "'ref_text' must be UTF-8 text without NUL bytes");
    qtts_error verr = {.status = QTTS_ERR_INVALID};
    atomic_fetch_add(&s->metrics.inflight, 1);
    qtts_voice *v = voice_from_recording(s, audio->data, audio->len, ref_text, "audio_sample", &verr);
    free(ref_text);
    return store_and_reply(s, c, name, v, &verr, "audio_sample");
}

enum MHD_Result srv_route_voices_add(qtts_server *s, struct MHD_Connection *c, srv_req *rq) {
    if (strcmp(s->info->variant, "base") != 0)
        return srv_respond_error(s, c, 400, "invalid_request_error", NULL, "unsupported_for_model",
                                 "voice registration needs a Base model; this server runs a %s model",
                                 s->info->variant);
    const char *ctype = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    if (srv_multipart_is_form(ctype)) return voices_add_form(s, c, rq, ctype);
    return voices_add_json(s, c, rq);
}

enum MHD_Result srv_route_voices_delete(qtts_server *s, struct MHD_Connection *c, const char *name) {
    char err[512] = "";
    int rc = srv_voices_delete(s->voices, name, err, sizeof err);
    if (rc == -2)
        return srv_respond_error(s, c, 404, "invalid_request_error", "name", "voice_not_found", "unknown voice '%.64s'",
                                 name);
    if (rc) return srv_respond_error(s, c, 500, "server_error", NULL, NULL, "%s", err);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "object", "audio.voice.deleted"); /* OpenAI's VoiceDeleted */
    cJSON_AddStringToObject(o, "id", name);
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddBoolToObject(o, "deleted", 1);
    char *js = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    enum MHD_Result r = js ? srv_respond_json(s, c, 200, js) : MHD_NO;
    free(js);
    return r;
}
