/* Dialogue scripts on POST /v1/audio/speech (see speech_script.h). Each turn
 * becomes the single-voice request it stands for, a copy of the body with
 * its own input and voice, so it passes the same validation. */
#include "server/speech_script.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "text/dialogue.h"
#include "text/utf8.h"

#define PAUSE_MS_MAX 60000

struct srv_speech_script {
    size_t n;
    qtts_request *reqs; /* [n] their strings point into trees[i] */
    cJSON **trees;      /* [n] each turn's request body */
    qtts_voice **voices; /* [n] Base: each turn's registered voice (one reference each) */
    int pause_ms;
};

#define fail srv_bad_req_fail

static const cJSON *field(const cJSON *root, const char *name) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

int srv_speech_script_wanted(const cJSON *root, srv_bad_req *b) {
    const cJSON *v = cJSON_IsObject(root) ? field(root, "script") : NULL;
    if (!v) return 0;
    if (!cJSON_IsBool(v)) return fail(b, 400, "script", "invalid_type", "'script' must be true or false");
    return cJSON_IsTrue(v);
}

/* The fields of the script itself: cast, pause_ms, input (and what a script
 * refuses). */
static int parse_script_fields(const srv_speech_ctx *ctx, const cJSON *root, const cJSON **cast, int *pause_ms,
                               const char **input, srv_bad_req *b) {
    if (field(root, "instructions") || field(root, "ref_audio"))
        return fail(b, 400, field(root, "instructions") ? "instructions" : "ref_audio", "conflicting_voice",
                    "a script takes each turn's voice from its tag and 'cast' (no '%s')",
                    field(root, "instructions") ? "instructions" : "ref_audio");
    *cast = field(root, "cast");
    if (*cast) {
        if (!cJSON_IsObject(*cast))
            return fail(b, 400, "cast", "invalid_type", "'cast' must be an object {\"Name\": \"voice\", ...}");
        for (const cJSON *c = (*cast)->child; c; c = c->next)
            if (!cJSON_IsString(c) || !c->valuestring[0] || qtts_utf8_count(c->valuestring, strlen(c->valuestring)) < 0)
                return fail(b, 400, "cast", "invalid_value", "'cast': the voice of '%.64s' must be a non-empty string",
                            c->string ? c->string : "");
    }
    *pause_ms = SRV_SCRIPT_DEFAULT_PAUSE_MS;
    const cJSON *p = field(root, "pause_ms");
    if (p) {
        if (!cJSON_IsNumber(p)) return fail(b, 400, "pause_ms", "invalid_type", "'pause_ms' must be a number");
        if (!(p->valuedouble >= 0 && p->valuedouble <= PAUSE_MS_MAX) || p->valuedouble != (int)p->valuedouble)
            return fail(b, 400, "pause_ms", "invalid_value", "'pause_ms' must be an integer in [0, %d]", PAUSE_MS_MAX);
        *pause_ms = (int)p->valuedouble;
    }
    const cJSON *in = field(root, "input");
    if (!in) return fail(b, 400, "input", "missing_input", "'input' (the script) is required");
    if (!cJSON_IsString(in)) return fail(b, 400, "input", "invalid_type", "'input' must be a string");
    long nch = qtts_utf8_count(in->valuestring, strlen(in->valuestring));
    if (nch < 0) return fail(b, 400, "input", "invalid_value", "'input' is not valid UTF-8");
    if (nch > ctx->max_input_chars)
        return fail(b, 400, "input", "input_too_long", "'input' has %ld characters; the limit is %d", nch,
                    ctx->max_input_chars);
    *input = in->valuestring;
    return 0;
}

/* The cast's voice for name (case-insensitive), or NULL. */
static const char *cast_of(const cJSON *cast, const char *name) {
    for (const cJSON *c = cast ? cast->child : NULL; c; c = c->next)
        if (c->string && !strcasecmp(c->string, name)) return c->valuestring;
    return NULL;
}

/* Adds the turn's 'voice' and 'instructions' to its body, by the model's
 * variant (the rules of `qtts say --script --cast`). */
static int cast_turn(const srv_speech_ctx *ctx, const cJSON *cast, const qtts_dialogue_turn *t, cJSON *body,
                     srv_bad_req *b) {
    const char *given = cast_of(cast, t->speaker);
    const char *variant = ctx->info->variant;
    if (!strcmp(variant, "voice_design") && given) {
        size_t n = strlen(given) + (t->instruct ? strlen(t->instruct) + 2 : 0) + 1;
        char *d = malloc(n);
        if (!d) return fail(b, 500, NULL, NULL, "out of memory");
        snprintf(d, n, "%s%s%s", given, t->instruct ? ". " : "", t->instruct ? t->instruct : "");
        const cJSON *ok = cJSON_AddStringToObject(body, "instructions", d);
        free(d);
        return ok ? 0 : fail(b, 500, NULL, NULL, "out of memory");
    }
    if (!strcmp(variant, "base") && t->instruct)
        return fail(b, 400, "input", "unsupported_for_model",
                    "line %d: a turn's instruction '(%.200s)' needs a CustomVoice or VoiceDesign model", t->line,
                    t->instruct);
    if (!cJSON_AddStringToObject(body, "voice", given ? given : t->speaker) ||
        (t->instruct && !cJSON_AddStringToObject(body, "instructions", t->instruct)))
        return fail(b, 500, NULL, NULL, "out of memory");
    return 0;
}

/* A turn's own error, prefixed with its line and speaker. */
static int turn_fail(srv_bad_req *b, const qtts_dialogue_turn *t) {
    char msg[sizeof b->msg];
    memcpy(msg, b->msg, sizeof msg);
    int w = snprintf(b->msg, sizeof b->msg, "line %d: speaker '%.64s': ", t->line, t->speaker);
    if (w > 0 && (size_t)w < sizeof b->msg) snprintf(b->msg + w, sizeof b->msg - (size_t)w, "%.*s", 400, msg);
    return -1;
}

static srv_speech_script *script_new(size_t n) {
    srv_speech_script *sc = calloc(1, sizeof *sc);
    if (!sc) return NULL;
    sc->reqs = calloc(n, sizeof *sc->reqs);
    sc->trees = calloc(n, sizeof *sc->trees);
    sc->voices = calloc(n, sizeof *sc->voices);
    if (!sc->reqs || !sc->trees || !sc->voices) {
        srv_speech_script_free(sc);
        return NULL;
    }
    return sc;
}

int srv_speech_script_parse(const srv_speech_ctx *ctx, const cJSON *root, srv_speech_script **out,
                            srv_speech_request *common, srv_bad_req *b) {
    *out = NULL;
    memset(common, 0, sizeof *common);
    memset(b, 0, sizeof *b);
    const cJSON *cast = NULL;
    const char *input = NULL;
    int pause_ms = 0;
    if (!cJSON_IsObject(root)) return fail(b, 400, NULL, "invalid_json", "the request body must be a JSON object");
    if (parse_script_fields(ctx, root, &cast, &pause_ms, &input, b)) return -1;
    qtts_dialogue d;
    qtts_err e = {0};
    if (qtts_dialogue_parse(input, strlen(input), &d, &e))
        return fail(b, 400, "input", "invalid_script", "script: %s", e.msg);
    /* the shared fields: the body without the script's own */
    cJSON *base = cJSON_Duplicate(root, 1);
    srv_speech_script *sc = base ? script_new(d.n) : NULL;
    int rc = sc ? 0 : fail(b, 500, NULL, NULL, "out of memory");
    if (!rc) {
        static const char *const own[] = {"script", "cast", "pause_ms", "input", "voice", "instructions"};
        for (size_t k = 0; k < sizeof own / sizeof own[0]; k++) cJSON_DeleteItemFromObjectCaseSensitive(base, own[k]);
        sc->n = d.n;
        sc->pause_ms = pause_ms;
    }
    for (size_t i = 0; !rc && i < d.n; i++) {
        const qtts_dialogue_turn *t = &d.turns[i];
        cJSON *body = sc->trees[i] = cJSON_Duplicate(base, 1);
        if (!body || !cJSON_AddStringToObject(body, "input", t->text)) {
            rc = fail(b, 500, NULL, NULL, "out of memory");
            break;
        }
        if ((rc = cast_turn(ctx, cast, t, body, b))) break;
        srv_speech_request o;
        if ((rc = srv_speech_request_parse(ctx, body, &o, b))) {
            turn_fail(b, t);
            break;
        }
        srv_speech_request_clear(&o); /* never a recording: 'ref_audio' was refused */
        if (o.r.has_seed) o.r.seed += i;
        sc->reqs[i] = o.r;
        sc->voices[i] = o.voice;
        if (i == 0) {
            *common = o;
            common->voice = NULL; /* the script's */
        }
    }
    cJSON_Delete(base);
    qtts_dialogue_free(&d);
    if (rc) {
        srv_speech_script_free(sc);
        memset(common, 0, sizeof *common);
        return -1;
    }
    *out = sc;
    return 0;
}

size_t srv_speech_script_turns(const srv_speech_script *sc) { return sc->n; }
const qtts_request *srv_speech_script_request(const srv_speech_script *sc, size_t i) { return &sc->reqs[i]; }
int srv_speech_script_pause_ms(const srv_speech_script *sc) { return sc->pause_ms; }

static void free_owner(void *p) { srv_speech_script_free(p); }

srv_session *srv_speech_script_start(qtts_engine *e, srv_speech_script *sc, const srv_session_opts *o,
                                     qtts_error *err) {
    size_t pause = (size_t)((long long)sc->pause_ms * o->sample_rate / 1000);
    return srv_session_start_turns(e, sc->reqs, sc->n, pause, o, sc, free_owner, err);
}

void srv_speech_script_free(srv_speech_script *sc) {
    if (!sc) return;
    for (size_t i = 0; i < sc->n; i++) {
        if (sc->voices) qtts_voice_release(sc->voices[i]);
        if (sc->trees) cJSON_Delete(sc->trees[i]);
    }
    free(sc->reqs);
    free(sc->trees);
    free(sc->voices);
    free(sc);
}
