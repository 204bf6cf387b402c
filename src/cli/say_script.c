/* qtts say --script: parsing into turns and casting names to voices. */
#include "cli/say_script.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "voices/voice_files.h"

int say_script_parse(const char *path, const char *script, size_t len, say_script *s, char **text, size_t *text_len) {
    memset(s, 0, sizeof *s);
    *text = NULL;
    qtts_err err = {0};
    if (qtts_dialogue_parse(script, len, &s->d, &err)) {
        cli_error("%s: %s", path, err.msg);
        return -1;
    }
    size_t total = 1;
    for (size_t i = 0; i < s->d.n; i++) total += strlen(s->d.turns[i].text) + 2;
    s->tv = calloc(s->d.n, sizeof *s->tv);
    s->turn_start = calloc(s->d.n, sizeof *s->turn_start);
    char *t = malloc(total);
    if (!s->tv || !s->turn_start || !t) {
        free(t);
        cli_error("out of memory reading the script");
        return -1;
    }
    size_t used = 0;
    for (size_t i = 0; i < s->d.n; i++) { /* a blank line between turns: a chunk never spans two */
        if (i) {
            memcpy(t + used, "\n\n", 2);
            used += 2;
        }
        s->turn_start[i] = used;
        size_t n = strlen(s->d.turns[i].text);
        memcpy(t + used, s->d.turns[i].text, n);
        used += n;
    }
    t[used] = 0;
    *text = t;
    *text_len = used;
    return 0;
}

size_t say_script_turn_of(const say_script *s, size_t off) {
    size_t lo = 0, hi = s->d.n; /* the last turn starting at or before off */
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (s->turn_start[mid] <= off) lo = mid;
        else hi = mid;
    }
    return lo;
}

/* The VALUE of "NAME=VALUE" for name (case-insensitive), or NULL. */
static const char *cast_of(char *const *cast, int n_cast, const char *name) {
    size_t n = strlen(name);
    for (int i = 0; i < n_cast; i++)
        if (!strncasecmp(cast[i], name, n) && cast[i][n] == '=') return cast[i] + n + 1;
    return NULL;
}

static void list_speakers(const qtts_model_info *mi, char *out, size_t size) {
    size_t used = 0;
    out[0] = 0;
    for (int i = 0; i < mi->n_speakers && used < size; i++) {
        int w = snprintf(out + used, size - used, "%s%s", i ? ", " : "", mi->speakers[i]);
        used += w > 0 ? (size_t)w : 0;
    }
}

static char *join_instruct(const char *a, const char *b) {
    if (!a && !b) return NULL;
    size_t n = (a ? strlen(a) : 0) + (b ? strlen(b) : 0) + 3;
    char *r = malloc(n);
    if (r) snprintf(r, n, "%s%s%s", a ? a : "", a && b ? ". " : "", b ? b : "");
    return r;
}

/* One turn's voice. Earlier turns of the same name share a loaded voice. */
static int cast_turn(say_script *s, size_t i, qtts_engine *e, char *const *cast, int n_cast, const char *dir,
                     const char *path) {
    const qtts_model_info *mi = qtts_engine_info(e);
    const qtts_dialogue_turn *t = &s->d.turns[i];
    say_turn_voice *tv = &s->tv[i];
    const char *given = cast_of(cast, n_cast, t->speaker);
    const char *name = given ? given : t->speaker;
    if (!strcmp(mi->variant, "voice_design")) {
        if (!given) {
            cli_error("%s: line %d: speaker '%s' needs a voice description on a VoiceDesign model: --cast "
                      "'%s=A calm, deep male voice'",
                      path, t->line, t->speaker, t->speaker);
            return -1;
        }
        if (!(tv->instruct = join_instruct(given, t->instruct))) goto oom;
        return 0;
    }
    if (t->instruct && !(tv->instruct = join_instruct(NULL, t->instruct))) goto oom;
    if (!strcmp(mi->variant, "custom_voice")) {
        for (int k = 0; k < mi->n_speakers; k++)
            if (!strcasecmp(name, mi->speakers[k])) {
                tv->speaker = mi->speakers[k];
                return 0;
            }
        char names[1024];
        list_speakers(mi, names, sizeof names);
        cli_error("%s: line %d: unknown speaker '%s'%s%s%s (this model's speakers: %s; map a name with --cast "
                  "NAME=SPEAKER)",
                  path, t->line, t->speaker, given ? " (cast as '" : "", given ? given : "", given ? "')" : "", names);
        return -1;
    }
    if (t->instruct) {
        cli_error("%s: line %d: a turn's instruction '(%s)' needs a CustomVoice or VoiceDesign model", path, t->line,
                  t->instruct);
        return -1;
    }
    for (size_t k = 0; k < i; k++) /* Base: a voice already loaded for this name */
        if (s->tv[k].voice && !strcasecmp(s->d.turns[k].speaker, t->speaker)) {
            tv->voice = qtts_voice_retain(s->tv[k].voice);
            return 0;
        }
    if (!dir) {
        cli_error("%s: line %d: speaker '%s' is a registered voice on a Base model, which needs --voices-dir DIR or "
                  "$QTTS_VOICES_DIR",
                  path, t->line, t->speaker);
        return -1;
    }
    struct stat st;
    if (!srv_voice_name_ok(name) || srv_voice_files_stat(dir, name, &st)) {
        cli_error("%s: line %d: unknown speaker '%s'%s%s%s: no registered voice of that name in %s (register one "
                  "with 'qtts voices add', or map the name with --cast NAME=VOICE)",
                  path, t->line, t->speaker, given ? " (cast as '" : "", given ? given : "", given ? "')" : "", dir);
        return -1;
    }
    char err[512];
    if (!(tv->voice = srv_voice_files_load(e, dir, name, err, sizeof err))) {
        cli_error("%s: line %d: voice '%s' in %s does not load: %s", path, t->line, name, dir, err);
        return -1;
    }
    return 0;
oom:
    cli_error("out of memory");
    return -1;
}

int say_script_cast(say_script *s, qtts_engine *e, char *const *cast, int n_cast, const char *voices_dir,
                    const char *path) {
    for (int i = 0; i < n_cast; i++)
        if (!strchr(cast[i], '=') || cast[i][0] == '=') {
            cli_error("--cast '%s': expected NAME=VOICE", cast[i]);
            return -1;
        }
    for (size_t i = 0; i < s->d.n; i++)
        if (cast_turn(s, i, e, cast, n_cast, voices_dir, path)) return -1;
    return 0;
}

void say_script_free(say_script *s) {
    for (size_t i = 0; s->tv && i < s->d.n; i++) {
        qtts_voice_release(s->tv[i].voice);
        free(s->tv[i].instruct);
    }
    free(s->tv);
    free(s->turn_start);
    qtts_dialogue_free(&s->d);
    memset(s, 0, sizeof *s);
}
