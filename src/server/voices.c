/* GET/POST /v1/audio/voices, DELETE /v1/audio/voices/{name}. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/b64.h"
#include "io/rvq.h"
#include "io/spk.h"
#include "server/internal.h"

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

enum MHD_Result srv_route_voices_add(qtts_server *s, struct MHD_Connection *c, srv_req *rq) {
    if (strcmp(s->info->variant, "base") != 0)
        return srv_respond_error(s, c, 400, "invalid_request_error", NULL, "unsupported_for_model",
                                 "voice registration needs a Base model; this server runs a %s model",
                                 s->info->variant);
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
        rc = srv_respond_error(s, c, 400, "invalid_request_error", "name", "invalid_name",
                               "'name' is required: 1-64 characters of A-Z a-z 0-9 _ - . starting with a letter or "
                               "digit, without '..'");
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
        const char *why = "";
        unsigned char *bytes = srv_b64_decode(audio_b64, strlen(audio_b64), &n, &why);
        param = wav ? "wav_b64" : "audio_b64";
        if (!bytes || !n) snprintf(verr.message, sizeof verr.message, "%s: %s", param, bytes ? "empty" : why);
        else v = qtts_voice_from_audio_bytes(s->engine, bytes, n, ref_text, &verr); /* an engine job; this thread waits */
        free(bytes);
    } else {
        v = voice_from_parts(s, spk, rvq, ref_text, &param, &verr);
    }
    if (!v) {
        atomic_fetch_sub(&s->metrics.inflight, 1);
        int status = http_status_of(verr.status);
        rc = srv_respond_error(s, c, status, status >= 500 ? "server_error" : "invalid_request_error", param,
                               status >= 500 ? NULL : "invalid_audio", "%s", verr.message);
        goto out;
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
            cJSON_AddStringToObject(o, "name", name);
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
out:
    cJSON_Delete(root);
    return rc;
}

enum MHD_Result srv_route_voices_delete(qtts_server *s, struct MHD_Connection *c, const char *name) {
    char err[512] = "";
    int rc = srv_voices_delete(s->voices, name, err, sizeof err);
    if (rc == -2)
        return srv_respond_error(s, c, 404, "invalid_request_error", "name", "voice_not_found", "unknown voice '%.64s'",
                                 name);
    if (rc) return srv_respond_error(s, c, 500, "server_error", NULL, NULL, "%s", err);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddBoolToObject(o, "deleted", 1);
    char *js = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    enum MHD_Result r = js ? srv_respond_json(s, c, 200, js) : MHD_NO;
    free(js);
    return r;
}
