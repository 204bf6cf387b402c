/* POST /v1/audio/speech bodies: arbitrary bytes through the server's JSON
 * gate (srv_parse_json_body) and the request parser (speech_request.c), for a
 * fake model of each variant picked by the first byte (base, custom_voice,
 * voice_design; input limit and guard defaults too). A stub voice store
 * knows "alice" (loads), "broken" (files unreadable) and nothing else.
 * Beyond "no crash": each body gives either a request or one error, never
 * both: an error has a status of 400/404/413/5xx, a type, a non-empty
 * message, and leaves no voice or recording behind; a request has a
 * non-blank input within the limit, a known language or none, and the voice
 * its variant needs (a built-in speaker, a registered voice or a decoded
 * recording, instructions for VoiceDesign). A body with "script": true
 * goes through the dialogue parser (speech_script.c) instead: there the
 * stub store knows no voices (a script owns real references), and each
 * turn must be a request as above. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/internal.h"
#include "server/speech_request.h"
#include "server/speech_script.h"
#include "text/utf8.h"

static const char *const k_speakers[] = {"serena", "vivian", "uncle_fu", "ryan", "aiden", "ono_anna", "sohee"};
static const char *const k_languages[] = {"auto", "chinese", "english", "german", "japanese", "beijing_dialect"};
static const char *const k_variants[] = {"base", "custom_voice", "voice_design"};

static char k_alice; /* stands for a loaded voice: never dereferenced */

static int stub_voice_get(void *user, const char *name, qtts_voice **out, char *err, size_t err_size) {
    (void)user;
    if (!strcmp(name, "alice")) {
        if (out) *out = (qtts_voice *)(void *)&k_alice;
        return 0;
    }
    if (!strcmp(name, "broken")) {
        snprintf(err, err_size, "voices/broken.spk: 6 bytes is not a float32 x-vector");
        return -1;
    }
    return -2;
}

static int in_list(const char *p, const char *const *names, int n) {
    for (int i = 0; i < n; i++)
        if (p == names[i]) return 1;
    return 0;
}

static void check_error(const srv_bad_req *b, const srv_speech_request *o) {
    int st = b->status;
    if (!(st == 400 || st == 404 || st == 413 || (st >= 500 && st < 600))) abort();
    if (!b->type || !b->msg[0] || memchr(b->msg, 0, sizeof b->msg) == NULL) abort();
    if (o->voice || o->ref_audio || o->ref_audio_len) abort();
}

static void check_request(const srv_speech_ctx *ctx, const srv_bad_req *b, const srv_speech_request *o) {
    const qtts_model_info *mi = ctx->info;
    if (b->status || b->msg[0]) abort();
    const char *t = o->r.text;
    if (!t || !t[strspn(t, " \t\r\n\v\f")]) abort();
    long nch = qtts_utf8_count(t, strlen(t));
    if (nch < 0 || nch > ctx->max_input_chars) abort();
    if (o->r.language && !in_list(o->r.language, mi->languages, mi->n_languages)) abort();
    if (!(o->speed >= 0.25 && o->speed <= 4.0)) abort();
    if (o->mode != SRV_OUT_BUFFERED && o->mode != SRV_OUT_AUDIO_STREAM && o->mode != SRV_OUT_SSE) abort();
    if (!srv_format_mime(o->fmt)) abort();
    /* the server's frame limit: never more, and a request without its own limit gets it */
    if (ctx->max_request_frames > 0 && (o->r.max_frames > ctx->max_request_frames || o->r.max_frames <= 0)) abort();
    if (o->r.instruct && (!*o->r.instruct || qtts_utf8_count(o->r.instruct, strlen(o->r.instruct)) > ctx->max_input_chars))
        abort();
    if (!strcmp(mi->variant, "base")) {
        int registered = o->voice == (qtts_voice *)(void *)&k_alice && o->r.voice == o->voice && !o->ref_audio;
        int inline_audio = !o->voice && !o->r.voice && o->ref_audio && o->ref_audio_len > 0;
        if (registered == inline_audio) abort(); /* exactly one */
        if (o->r.speaker) abort();
    } else {
        if (o->voice || o->r.voice || o->ref_audio || o->r.x_vector_only) abort();
        if (!strcmp(mi->variant, "custom_voice") && !in_list(o->r.speaker, mi->speakers, mi->n_speakers)) abort();
        if (!strcmp(mi->variant, "voice_design") && (!o->r.instruct || o->r.speaker)) abort();
    }
}

static int stub_no_voice(void *user, const char *name, qtts_voice **out, char *err, size_t err_size) {
    (void)user, (void)name, (void)out, (void)err, (void)err_size;
    return -2;
}

/* "script": true bodies: an error, or turns that each pass check_request. */
static void fuzz_script(srv_speech_ctx ctx, const cJSON *root) {
    ctx.voice_get = stub_no_voice;
    srv_speech_script *sc = NULL;
    srv_speech_request common;
    srv_bad_req b;
    if (srv_speech_script_parse(&ctx, root, &sc, &common, &b)) {
        if (sc) abort();
        check_error(&b, &common);
        return;
    }
    if (!sc || !srv_speech_script_turns(sc) || common.voice || srv_speech_script_pause_ms(sc) < 0) abort();
    for (size_t i = 0; i < srv_speech_script_turns(sc); i++) {
        srv_speech_request o = common;
        o.r = *srv_speech_script_request(sc, i);
        check_request(&ctx, &b, &o);
    }
    srv_speech_script_free(sc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    uint8_t sel = data[0];
    qtts_model_info mi;
    memset(&mi, 0, sizeof mi);
    mi.variant = k_variants[(sel & 3) % 3];
    mi.size = "1b7";
    mi.hidden_size = 32;
    mi.n_speakers = strcmp(mi.variant, "custom_voice") ? 0 : (int)(sizeof k_speakers / sizeof k_speakers[0]);
    mi.speakers = k_speakers;
    mi.n_languages = (int)(sizeof k_languages / sizeof k_languages[0]);
    mi.languages = k_languages;
    mi.sample_rate = 24000;
    mi.frame_samples = 1920;
    mi.n_codebooks = 16;
    mi.codebook_size = 2048;
    mi.max_frames = 8191;
    static const int limits[] = {4096, 16, 1, 200};
    srv_speech_ctx ctx = {
        .info = &mi,
        .max_input_chars = limits[sel >> 2 & 3],
        .guard_frames_per_token = (sel & 16) ? -1.0f : 0.0f,
        .no_repetition_guard = (sel >> 5) & 1,
        .max_request_frames = (sel & 64) ? 100 : 0,
        .voice_get = stub_voice_get,
        .voice_user = NULL,
    };
    /* the body as the server holds it: its own buffer, exactly size - 1 bytes */
    size_t n = size - 1;
    char *body = malloc(n ? n : 1);
    if (!body) return 0;
    memcpy(body, data + 1, n);
    srv_req rq;
    memset(&rq, 0, sizeof rq);
    rq.body.data = body;
    rq.body.len = n;
    const char *why = NULL;
    cJSON *root = srv_parse_json_body(&rq, &why);
    if (!root) {
        if (!why || !*why) abort();
        free(body);
        return 0;
    }
    srv_speech_request o;
    srv_bad_req b;
    memset(&o, 0, sizeof o);
    memset(&b, 0, sizeof b);
    int script = srv_speech_script_wanted(root, &b);
    if (script) {
        if (script < 0) check_error(&b, &(srv_speech_request){0});
        else fuzz_script(ctx, root);
    } else if (srv_speech_request_parse(&ctx, root, &o, &b)) check_error(&b, &o);
    else check_request(&ctx, &b, &o);
    srv_speech_request_clear(&o);
    cJSON_Delete(root);
    free(body);
    return 0;
}
