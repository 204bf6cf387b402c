/* GET/POST /v1/audio/voices, DELETE /v1/audio/voices/{name}. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "server/internal.h"
#include "server/voice_alias.h"
#include "server/multipart.h"
#include "server/voice_request.h"
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
            /* a transcript file that is not UTF-8 (copied in by hand, or stored by an older server) would make the
               whole list invalid JSON for every client: it is listed as null */
            const char *rt = list[i].ref_text;
            if (rt && qtts_utf8_count(rt, strlen(rt)) >= 0) cJSON_AddStringToObject(v, "ref_text", rt);
            else cJSON_AddNullToObject(v, "ref_text");
            cJSON_AddNumberToObject(v, "ref_frames", (double)list[i].n_frames);
            cJSON_AddBoolToObject(v, "x_vector_only", !list[i].has_codes || !list[i].ref_text);
            cJSON_AddItemToArray(arr, v);
        }
    }
    /* aliases (OpenAI's voice names by default) with what each stands for, unless a registered voice has the
       name (it comes first) */
    for (int i = 0; i < srv_voice_aliases_count(s->aliases); i++) {
        const char *name, *target;
        srv_voice_alias_at(s->aliases, i, &name, &target);
        int shadowed = 0;
        for (size_t k = 0; k < n && !shadowed; k++) shadowed = !strcasecmp(list[k].name, name);
        cJSON *v = shadowed ? NULL : cJSON_CreateObject();
        if (!v) continue;
        cJSON_AddStringToObject(v, "id", name);
        cJSON_AddStringToObject(v, "name", name);
        cJSON_AddStringToObject(v, "type", "alias");
        cJSON_AddStringToObject(v, !strcmp(s->info->variant, "voice_design") ? "instructions" : "alias_of", target);
        cJSON_AddItemToArray(arr, v);
    }
    srv_voices_list_free(list, n);
    char *js = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!js) return srv_respond_error(s, c, 500, "server_error", NULL, NULL, "out of memory");
    enum MHD_Result rc = srv_respond_json(s, c, 200, js);
    free(js);
    return rc;
}

/* The engine makes the voice a decoded request describes: extraction from a
 * recording is an engine job (this request thread only waits); parts are
 * checked against the model's geometry. */
static qtts_voice *voice_from_request(qtts_server *s, const srv_voice_request *r, qtts_error *err) {
    err->status = QTTS_ERR_INVALID; /* the upload's fault unless the engine says otherwise */
    if (r->audio) return qtts_voice_from_audio_bytes(s->engine, r->audio, r->audio_len, r->ref_text, err);
    return qtts_voice_from_parts(s->engine, r->xvec, r->xvec_len, r->codes, r->n_frames, r->ref_text, err);
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
    int e = errno; /* srv_voices_add: the cause of a -1 */
    atomic_fetch_sub(&s->metrics.inflight, 1);
    if (added == -2) {
        rc = srv_respond_error(s, c, 409, "invalid_request_error", "name", "voice_exists",
                               "voice '%s' already exists (DELETE it first)", name);
    } else if (added && (e == ENOSPC || e == EDQUOT || e == EFBIG)) {
        /* 507 Insufficient Storage: the server is fine but cannot keep the
         * voice; the client may retry later or elsewhere. Nothing was kept. */
        rc = srv_respond_error(s, c, 507, "server_error", NULL, "insufficient_storage",
                               "voice '%s' was not stored: the voices dir %s is full (%s)", name, s->voices_dir, err);
    } else if (added && (e == EROFS || e == EACCES || e == EPERM)) {
        rc = srv_respond_error(s, c, 500, "server_error", NULL, "voices_dir_not_writable",
                               "voice '%s' was not stored: the voices dir %s is not writable (%s)", name,
                               s->voices_dir, err);
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

static enum MHD_Result respond_bad(qtts_server *s, struct MHD_Connection *c, const srv_bad_req *b) {
    return srv_respond_error(s, c, b->status, b->type, b->param, b->code, "%s", b->msg);
}

/* A decoded request (voice_request.c): the engine makes the voice, then it is
 * stored and the reply goes out. Clears r. */
static enum MHD_Result add_voice(qtts_server *s, struct MHD_Connection *c, srv_voice_request *r) {
    qtts_error verr = {.status = QTTS_ERR_INVALID};
    atomic_fetch_add(&s->metrics.inflight, 1);
    qtts_voice *v = voice_from_request(s, r, &verr);
    enum MHD_Result rc = store_and_reply(s, c, r->name, v, &verr, r->param);
    srv_voice_request_clear(r);
    return rc;
}

/* JSON: {name, ref_text?, wav_b64 | audio_b64 | spk_b64 (+ rvq_b64)}. */
static enum MHD_Result voices_add_json(qtts_server *s, struct MHD_Connection *c, srv_req *rq) {
    const char *why = "";
    cJSON *root = srv_parse_json_body(rq, &why);
    if (!root) return srv_respond_error(s, c, 400, "invalid_request_error", NULL, "invalid_json", "%s", why);
    srv_voice_request r;
    srv_bad_req b;
    enum MHD_Result rc =
        srv_voice_request_from_json(s->info, root, &r, &b) ? respond_bad(s, c, &b) : add_voice(s, c, &r);
    cJSON_Delete(root); /* after the reply: r's strings point into it */
    return rc;
}

/* multipart/form-data, OpenAI's shape (see voice_request.h). */
static enum MHD_Result voices_add_form(qtts_server *s, struct MHD_Connection *c, srv_req *rq, const char *ctype) {
    srv_voice_request r;
    srv_bad_req b;
    if (srv_voice_request_from_form(ctype, (const unsigned char *)rq->body.data, rq->body.len, &r, &b))
        return respond_bad(s, c, &b);
    return add_voice(s, c, &r);
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
    for (int i = 0; i < s->info->n_speakers; i++)
        if (!strcasecmp(name, s->info->speakers[i]))
            return srv_respond_error(s, c, 409, "invalid_request_error", "name", "builtin_voice",
                                     "'%s' is a built-in speaker of this model; built-in speakers cannot be deleted",
                                     s->info->speakers[i]);
    int rc = srv_voices_delete(s->voices, name, err, sizeof err);
    int e = errno; /* srv_voices_delete: the cause of a -1 */
    if (rc == -2)
        return srv_respond_error(s, c, 404, "invalid_request_error", "name", "voice_not_found", "unknown voice '%.64s'",
                                 name);
    if (rc && (e == EROFS || e == EACCES || e == EPERM))
        return srv_respond_error(s, c, 500, "server_error", NULL, "voices_dir_not_writable",
                                 "voice '%s' was not deleted: the voices dir %s is not writable (%s)", name,
                                 s->voices_dir, err);
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
