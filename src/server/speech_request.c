/* POST /v1/audio/speech request validation (see speech_request.h). */
#include "server/speech_request.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/sampling_ranges.h"
#include "io/json_util.h"
#include "model/config.h"
#include "server/b64.h"
#include "server/frame_limit.h"
#include "server/voice_alias.h"
#include "text/normalize.h"
#include "text/utf8.h"

int srv_bad_req_fail(srv_bad_req *b, int status, const char *param, const char *code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->msg, sizeof b->msg, fmt, ap);
    va_end(ap);
    b->status = status;
    b->type = status == 503 ? "server_busy" : status >= 500 ? "server_error" : "invalid_request_error";
    b->param = param;
    b->code = code;
    return -1;
}

#define fail srv_bad_req_fail /* short name for the many call sites below */

static const cJSON *field(const cJSON *root, const char *name) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

static int get_str(const cJSON *root, const char *name, const char **out, srv_bad_req *b) {
    const cJSON *v = field(root, name);
    if (!v) return 0;
    if (!cJSON_IsString(v)) return fail(b, 400, name, "invalid_type", "'%s' must be a string", name);
    *out = v->valuestring;
    return 0;
}

static int get_num(const cJSON *root, const char *name, double lo, double hi, int integer, int *present, double *out,
                   srv_bad_req *b) {
    const cJSON *v = field(root, name);
    *present = 0;
    if (!v) return 0;
    if (!cJSON_IsNumber(v)) return fail(b, 400, name, "invalid_type", "'%s' must be a number", name);
    double x = v->valuedouble;
    if (integer && x != floor(x)) return fail(b, 400, name, "invalid_value", "'%s' must be an integer", name);
    if (!(x >= lo && x <= hi)) {
        if (integer)
            return fail(b, 400, name, "invalid_value", "'%s' must be an integer in [%.0f, %.0f]", name, lo, hi);
        return fail(b, 400, name, "invalid_value", "'%s' must be in [%g, %g]", name, lo, hi);
    }
    *out = x;
    *present = 1;
    return 0;
}

static int get_bool(const cJSON *root, const char *name, int *out, srv_bad_req *b) {
    const cJSON *v = field(root, name);
    if (!v) return 0;
    if (!cJSON_IsBool(v)) return fail(b, 400, name, "invalid_type", "'%s' must be true or false", name);
    *out = cJSON_IsTrue(v);
    return 0;
}

/* Voice names never contain spaces, and clients split lists typed as
 * "vivian, ryan" on the comma only: the name is trimmed in place. */
static char *trim(char *v) {
    while (*v == ' ' || *v == '\t' || *v == '\r' || *v == '\n') v++;
    size_t n = strlen(v);
    while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\r' || v[n - 1] == '\n')) v[--n] = 0;
    return v;
}

/* 'voice': a name, or OpenAI's object form {"id": "..."} (custom voices). */
static int get_voice(const cJSON *root, const char **out, srv_bad_req *b) {
    const cJSON *v = field(root, "voice");
    if (!v) return 0;
    if (cJSON_IsObject(v)) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(v, "id");
        if (!cJSON_IsString(id))
            return fail(b, 400, "voice", "invalid_type", "'voice' as an object must have a string 'id'");
        *out = trim(id->valuestring);
        return 0;
    }
    if (!cJSON_IsString(v))
        return fail(b, 400, "voice", "invalid_type", "'voice' must be a string or an object {\"id\": \"...\"}");
    *out = trim(v->valuestring);
    return 0;
}

/* 'input' and 'instructions' share the character limit (OpenAI: 4096 each). */
static int check_text_length(const srv_speech_ctx *ctx, const char *name, const char *text, srv_bad_req *b) {
    long nch = qtts_utf8_count(text, strlen(text));
    if (nch < 0) return fail(b, 400, name, "invalid_value", "'%s' is not valid UTF-8", name);
    if (nch > ctx->max_input_chars)
        return fail(b, 400, name, strcmp(name, "input") ? "instructions_too_long" : "input_too_long",
                    "'%s' has %ld characters; the limit is %d", name, nch, ctx->max_input_chars);
    return 0;
}

static const char *match_name(const char *want, const char *const *names, int n) {
    for (int i = 0; i < n; i++)
        if (!strcasecmp(want, names[i])) return names[i];
    return NULL;
}

static void list_names(char *out, size_t size, const char *const *names, int n) {
    size_t o = 0;
    out[0] = 0;
    for (int i = 0; i < n && o + 8 < size; i++) {
        int w = snprintf(out + o, size - o, "%s%s", i ? ", " : "", names[i]);
        if (w < 0 || (size_t)w >= size - o) {
            snprintf(out + o, size - o, ", ...");
            break;
        }
        o += (size_t)w;
    }
}

/* input, response_format, stream_format / stream. */
static int parse_input_and_format(const srv_speech_ctx *ctx, const cJSON *root, srv_speech_request *o,
                                  srv_bad_req *b) {
    const char *input = NULL, *fmt = NULL, *sfmt = NULL;
    if (get_str(root, "input", &input, b) || get_str(root, "response_format", &fmt, b) ||
        get_str(root, "stream_format", &sfmt, b))
        return -1;
    if (!input || !input[strspn(input, " \t\r\n\v\f")])
        return fail(b, 400, "input", "missing_input", "'input' is required and must not be empty or only whitespace");
    if (check_text_length(ctx, "input", input, b)) return -1;
    o->r.text = input;
    if (fmt) {
        const char *why = "";
        if (srv_format_parse(fmt, &o->fmt, &why))
            return fail(b, 400, "response_format", "unsupported_format", "response_format '%s' %s", fmt, why);
    }
    if (sfmt) {
        if (!strcmp(sfmt, "sse")) o->mode = SRV_OUT_SSE;
        else if (!strcmp(sfmt, "audio")) o->mode = SRV_OUT_AUDIO_STREAM;
        else return fail(b, 400, "stream_format", "invalid_value", "stream_format must be 'audio' or 'sse'");
    }
    int stream = 0;
    if (get_bool(root, "stream", &stream, b)) return -1;
    if (stream && o->mode == SRV_OUT_BUFFERED) o->mode = SRV_OUT_AUDIO_STREAM;
    return 0;
}

/* speed, seed and the sampling fields (0 temperature = greedy). */
static int parse_sampling(const srv_speech_ctx *ctx, const cJSON *root, srv_speech_request *o, srv_bad_req *b) {
    int has;
    double x;
    if (get_num(root, "speed", 0.25, 4.0, 0, &has, &x, b)) return -1;
    if (has) o->speed = x;
    const cJSON *seed = field(root, "seed");
    const char *why = "";
    if (seed && json_seed(seed, &o->r.seed, &why))
        return fail(b, 400, "seed", cJSON_IsNumber(seed) || cJSON_IsString(seed) ? "invalid_value" : "invalid_type",
                    "'seed' %s", why);
    o->r.has_seed = seed != NULL;
    if (get_num(root, "temperature", 0, QTTS_TEMPERATURE_MAX, 0, &has, &x, b)) return -1;
    if (has) {
        if (x == 0) o->r.greedy = 1;
        else o->r.temperature = (float)x;
    }
    if (get_num(root, "top_k", 0, QTTS_TOP_K_MAX, 1, &has, &x, b)) return -1;
    if (has) o->r.top_k = (int)x;
    if (get_num(root, "top_p", 0, 1, 0, &has, &x, b)) return -1;
    if (has) {
        if (x < QTTS_TOP_P_MIN) return fail(b, 400, "top_p", "invalid_value", "'top_p' must be in [%g, 1]", QTTS_TOP_P_MIN);
        o->r.top_p = (float)x;
    }
    if (get_num(root, "repetition_penalty", QTTS_REPETITION_PENALTY_MIN, QTTS_REPETITION_PENALTY_MAX, 0, &has, &x, b))
        return -1;
    if (has) o->r.repetition_penalty = (float)x;
    if (get_num(root, "max_new_tokens", 1, QTTS_MAX_FRAMES_MAX, 1, &has, &x, b)) return -1;
    if (has && ctx->max_request_frames > 0 && x > ctx->max_request_frames)
        return fail(b, 400, "max_new_tokens", "above_server_limit",
                    "'max_new_tokens' %.0f is above this server's limit of %d frames (qtts serve --max-request-frames)",
                    x, ctx->max_request_frames);
    if (has) o->r.max_frames = (int)x;
    /* runaway guard: frames per text token (0 = off), loop detection */
    if (get_num(root, "guard_frames_per_token", 0, 1000, 0, &has, &x, b)) return -1;
    if (has) o->r.guard_frames_per_token = x > 0 ? (float)x : -1.0f;
    int rep_guard = !o->r.no_repetition_guard;
    if (get_bool(root, "repetition_guard", &rep_guard, b)) return -1;
    o->r.no_repetition_guard = !rep_guard;
    int greedy = o->r.greedy, xvo = 0;
    if (get_bool(root, "greedy", &greedy, b) || get_bool(root, "x_vector_only", &xvo, b)) return -1;
    o->r.greedy = greedy;
    o->r.x_vector_only = xvo;
    return 0;
}

/* CustomVoice: 'voice' names a built-in speaker. */
static int resolve_speaker(const srv_speech_ctx *ctx, const char *voice, srv_speech_request *o, srv_bad_req *b) {
    const qtts_model_info *info = ctx->info;
    char names[1024];
    list_names(names, sizeof names, info->speakers, info->n_speakers);
    if (!voice || !*voice) return fail(b, 400, "voice", "missing_voice", "'voice' is required (one of: %s)", names);
    const char *canon = match_name(voice, info->speakers, info->n_speakers);
    const char *alias = canon ? NULL : srv_voice_alias_target(ctx->aliases, voice);
    if (alias) canon = match_name(alias, info->speakers, info->n_speakers);
    if (canon) {
        o->r.speaker = canon;
        return 0;
    }
    char e2[64];
    if (ctx->voice_get(ctx->voice_user, voice, NULL, e2, sizeof e2) == 0)
        return fail(b, 400, "voice", "unsupported_for_model",
                    "'%s' is a cloned voice, which needs a Base model; this model's speakers: %s", voice, names);
    if (srv_voice_is_openai_name(voice))
        return fail(b, 400, "voice", "voice_not_found",
                    "'%s' is an OpenAI voice name, not mapped on this server (--voice-alias %s=SPEAKER); this "
                    "model's built-in speakers are: %s",
                    voice, voice, names);
    return fail(b, 400, "voice", "voice_not_found", "unknown voice '%s' (one of: %s)", voice, names);
}

/* Base: an inline reference recording (decoded here, extracted by the
 * caller), or a registered voice. */
static int resolve_clone(const srv_speech_ctx *ctx, const char *voice, const char *ref_audio, const char *ref_text,
                         srv_speech_request *o, srv_bad_req *b) {
    if (ref_audio) {
        size_t n = 0;
        const char *why = "";
        unsigned char *bytes = srv_b64_decode(ref_audio, strlen(ref_audio), &n, &why);
        if (!bytes || n == 0) {
            free(bytes);
            return fail(b, 400, "ref_audio", "invalid_audio", "'ref_audio' is not valid base64: %s",
                        bytes ? "empty" : why);
        }
        if (ref_text && qtts_utf8_count(ref_text, strlen(ref_text)) < 0) {
            free(bytes);
            return fail(b, 400, "ref_text", "invalid_value", "'ref_text' is not valid UTF-8");
        }
        o->ref_audio = bytes;
        o->ref_audio_len = n;
        o->ref_text = ref_text && *ref_text ? ref_text : NULL;
        return 0;
    }
    if (!voice || !*voice)
        return fail(b, 400, "voice", "missing_voice",
                    "a Base model clones a voice: give 'voice' (a registered voice) or 'ref_audio'");
    char e2[512] = "";
    int got = ctx->voice_get(ctx->voice_user, voice, &o->voice, e2, sizeof e2);
    const char *alias = got == -2 ? srv_voice_alias_target(ctx->aliases, voice) : NULL;
    if (alias) { /* a registered voice of the alias's own name comes first */
        got = ctx->voice_get(ctx->voice_user, alias, &o->voice, e2, sizeof e2);
        if (got == -2) {
            o->voice = NULL;
            return fail(b, 400, "voice", "voice_not_found",
                        "'%s' stands for the voice '%s' (--voice-alias), which is not registered", voice, alias);
        }
    }
    switch (got) {
    case 0: break;
    case -2:
        o->voice = NULL;
        if (srv_voice_is_openai_name(voice))
            return fail(b, 400, "voice", "voice_not_found",
                        "'%s' is an OpenAI voice name; a Base model clones voices: register a voice named '%s' "
                        "(POST /v1/audio/voices) or map the name with --voice-alias %s=VOICE",
                        voice, voice, voice);
        return fail(b, 400, "voice", "voice_not_found", "unknown voice '%s' (register it with POST /v1/audio/voices)",
                    voice);
    default: o->voice = NULL; return fail(b, 500, "voice", NULL, "%s", e2);
    }
    o->r.voice = o->voice;
    return 0;
}

static int parse(const srv_speech_ctx *ctx, const cJSON *root, srv_speech_request *o, srv_bad_req *b) {
    const qtts_model_info *info = ctx->info;
    if (!cJSON_IsObject(root)) return fail(b, 400, NULL, "invalid_json", "the request body must be a JSON object");
    const char *voice = NULL, *instructions = NULL, *lang = NULL, *ref_audio = NULL, *ref_text = NULL, *model = NULL;
    if (get_str(root, "model", &model, b) || get_voice(root, &voice, b) ||
        get_str(root, "instructions", &instructions, b) || get_str(root, "language", &lang, b) ||
        get_str(root, "ref_audio", &ref_audio, b) || get_str(root, "ref_text", &ref_text, b) ||
        parse_input_and_format(ctx, root, o, b) || parse_sampling(ctx, root, o, b))
        return -1;
    const char *normalize = NULL; /* "off", "basic", "full" (the default) */
    if (get_str(root, "normalize", &normalize, b)) return -1;
    if (normalize) {
        const int m = qtts_norm_mode_parse(normalize);
        if (m < 0) return fail(b, 400, "normalize", "invalid_normalize", "normalize is off, basic or full, not '%s'", normalize);
        o->r.normalize = qtts_norm_request_mode((qtts_norm_mode)m);
    }
    const char *code_blocks = NULL; /* "skip" (the default) or "read" */
    if (get_str(root, "code_blocks", &code_blocks, b)) return -1;
    if (code_blocks) {
        if (strcmp(code_blocks, "skip") && strcmp(code_blocks, "read"))
            return fail(b, 400, "code_blocks", "invalid_code_blocks", "code_blocks is skip or read, not '%s'", code_blocks);
        o->r.code_blocks = !strcmp(code_blocks, "read") ? QTTS_CODE_BLOCKS_READ : QTTS_CODE_BLOCKS_SKIP;
    }
    if (lang && *lang && strcasecmp(lang, "auto")) {
        const char *canon = match_name(qtts_language_alias(lang), info->languages, info->n_languages);
        if (!canon) {
            char names[1024];
            list_names(names, sizeof names, info->languages, info->n_languages);
            return fail(b, 400, "language", "unsupported_language", "language '%s' is not supported (one of: %s)",
                        lang, names);
        }
        o->r.language = canon;
    }
    if (instructions && check_text_length(ctx, "instructions", instructions, b)) return -1;
    if (instructions && *instructions) o->r.instruct = instructions;
    /* VoiceDesign: a voice alias stands for its description when the request has none */
    if (!strcmp(info->variant, "voice_design") && !o->r.instruct && voice)
        o->r.instruct = srv_voice_alias_target(ctx->aliases, voice);
    if (!strcmp(info->variant, "voice_design") && !o->r.instruct)
        return fail(b, 400, "instructions", "missing_instructions",
                    "a VoiceDesign model needs 'instructions' describing the voice");
    if (voice && *voice && ref_audio)
        return fail(b, 400, "ref_audio", "conflicting_voice", "give one of 'voice' and 'ref_audio', not both");
    int is_base = !strcmp(info->variant, "base");
    if (!is_base && (ref_audio || o->r.x_vector_only))
        return fail(b, 400, ref_audio ? "ref_audio" : "x_vector_only", "unsupported_for_model",
                    "voice cloning needs a Base model; this server runs a %s model", info->variant);
    if (!strcmp(info->variant, "custom_voice")) return resolve_speaker(ctx, voice, o, b);
    if (is_base) return resolve_clone(ctx, voice, ref_audio, ref_text, o, b);
    return 0;
}

int srv_speech_request_parse(const srv_speech_ctx *ctx, const cJSON *root, srv_speech_request *o, srv_bad_req *b) {
    memset(o, 0, sizeof *o);
    memset(b, 0, sizeof *b);
    qtts_request_default(&o->r);
    o->r.guard_frames_per_token = ctx->guard_frames_per_token;
    o->r.no_repetition_guard = ctx->no_repetition_guard;
    o->r.lexicon = ctx->lexicon;
    o->fmt = SRV_FMT_MP3; /* OpenAI's default response_format */
    o->mode = SRV_OUT_BUFFERED;
    o->speed = 1.0;
    if (parse(ctx, root, o, b)) return -1;
    srv_frame_limit_apply(&o->r, ctx->max_request_frames, ctx->info->max_frames);
    return 0;
}

void srv_speech_request_clear(srv_speech_request *o) {
    free(o->ref_audio);
    o->ref_audio = NULL;
    o->ref_audio_len = 0;
}
