/* Voice aliases (see voice_alias.h). */
#include "server/voice_alias.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* OpenAI's voice names and what each stands for here. The speakers are
 * picked by voice character (gender, register) among the CustomVoice
 * checkpoints' nine; the descriptions are VoiceDesign instructions in the
 * same spirit. Base models have no default targets: a cloned voice exists
 * only once someone registers it. */
static const struct {
    const char *name, *speaker, *design;
} k_openai_voices[] = {
    {"alloy", "vivian", "A clear, neutral adult voice with an even, friendly tone."},
    {"ash", "ryan", "A warm, confident adult male voice, relaxed and direct."},
    {"ballad", "aiden", "A soft, expressive young male voice, gentle and melodic."},
    {"coral", "serena", "A bright, warm female voice, upbeat and friendly."},
    {"echo", "ryan", "A calm, resonant male voice with a steady pace."},
    {"fable", "aiden", "A lively storyteller's voice, expressive and animated, with a light British accent."},
    {"nova", "serena", "A youthful, energetic female voice, crisp and clear."},
    {"onyx", "uncle_fu", "A deep, rich, authoritative mature male voice."},
    {"sage", "vivian", "A calm, thoughtful female voice, measured and soft."},
    {"shimmer", "sohee", "A light, airy female voice, gentle and cheerful."},
    {"verse", "dylan", "A versatile, engaging male voice with natural expression."},
};
#define N_OPENAI (sizeof k_openai_voices / sizeof k_openai_voices[0])

typedef struct {
    char *name, *target;
} alias;

struct srv_voice_aliases {
    alias *v;
    int n, cap;
};

int srv_voice_is_openai_name(const char *name) {
    for (size_t i = 0; name && i < N_OPENAI; i++)
        if (!strcasecmp(name, k_openai_voices[i].name)) return 1;
    return 0;
}

static const char *speaker_of(const qtts_model_info *info, const char *want) {
    for (int i = 0; i < info->n_speakers; i++)
        if (!strcasecmp(want, info->speakers[i])) return info->speakers[i];
    return NULL;
}

static int set(srv_voice_aliases *a, const char *name, size_t name_len, const char *target) {
    char *n = strndup(name, name_len), *t = strdup(target);
    if (!n || !t) {
        free(n);
        free(t);
        return -1;
    }
    for (int i = 0; i < a->n; i++)
        if (!strcasecmp(a->v[i].name, n)) {
            free(a->v[i].name);
            free(a->v[i].target);
            a->v[i] = (alias){n, t};
            return 0;
        }
    if (a->n == a->cap) {
        int cap = a->cap ? a->cap * 2 : 16;
        alias *v = realloc(a->v, (size_t)cap * sizeof *v);
        if (!v) {
            free(n);
            free(t);
            return -1;
        }
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = (alias){n, t};
    return 0;
}

/* An alias name is typed into client settings and sent as 'voice': the
 * registered-voice name rule, and never a built-in speaker's name. */
static int name_ok(const char *p, size_t n) {
    if (n == 0 || n > 64) return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = p[i];
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                 (i > 0 && (ch == '_' || ch == '-' || ch == '.'));
        if (!ok) return 0;
    }
    return 1;
}

srv_voice_aliases *srv_voice_aliases_new(const qtts_model_info *info, int no_defaults, const char *const *specs,
                                         int n_specs, char *err, size_t err_size) {
    srv_voice_aliases *a = calloc(1, sizeof *a);
    if (!a) goto oom;
    int design = !strcmp(info->variant, "voice_design"), custom = !strcmp(info->variant, "custom_voice");
    for (size_t i = 0; !no_defaults && i < N_OPENAI; i++) {
        const char *t = design ? k_openai_voices[i].design : custom ? speaker_of(info, k_openai_voices[i].speaker)
                                                                    : NULL;
        if (t && set(a, k_openai_voices[i].name, strlen(k_openai_voices[i].name), t)) goto oom;
    }
    for (int i = 0; i < n_specs; i++) {
        const char *eq = strchr(specs[i], '=');
        const char *target = eq ? eq + 1 : "";
        size_t nlen = eq ? (size_t)(eq - specs[i]) : strlen(specs[i]);
        if (!eq || !*target) {
            snprintf(err, err_size, "--voice-alias '%s': expected NAME=VOICE", specs[i]);
            goto fail;
        }
        if (!name_ok(specs[i], nlen)) {
            snprintf(err, err_size,
                     "--voice-alias '%s': the name must be 1-64 of A-Za-z0-9_.- starting with a letter or digit",
                     specs[i]);
            goto fail;
        }
        char nm[65];
        snprintf(nm, sizeof nm, "%.*s", (int)nlen, specs[i]);
        if (speaker_of(info, nm)) {
            snprintf(err, err_size, "--voice-alias '%s': '%s' is already a built-in speaker", specs[i], nm);
            goto fail;
        }
        if (custom) {
            const char *sp = speaker_of(info, target);
            if (!sp) {
                snprintf(err, err_size, "--voice-alias '%s': '%s' is not a speaker of this CustomVoice model",
                         specs[i], target);
                goto fail;
            }
            target = sp;
        }
        if (set(a, specs[i], nlen, target)) goto oom;
    }
    return a;
oom:
    snprintf(err, err_size, "out of memory");
fail:
    srv_voice_aliases_free(a);
    return NULL;
}

void srv_voice_aliases_free(srv_voice_aliases *a) {
    if (!a) return;
    for (int i = 0; i < a->n; i++) {
        free(a->v[i].name);
        free(a->v[i].target);
    }
    free(a->v);
    free(a);
}

const char *srv_voice_alias_target(const srv_voice_aliases *a, const char *name) {
    for (int i = 0; a && name && i < a->n; i++)
        if (!strcasecmp(a->v[i].name, name)) return a->v[i].target;
    return NULL;
}

int srv_voice_aliases_count(const srv_voice_aliases *a) { return a ? a->n : 0; }

void srv_voice_alias_at(const srv_voice_aliases *a, int i, const char **name, const char **target) {
    *name = a->v[i].name;
    *target = a->v[i].target;
}
