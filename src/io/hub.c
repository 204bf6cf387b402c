/* Model names, cache location and --model resolution (see hub.h). */
#include "io/hub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static const qtts_hub_model models[] = {
    {"0.6b-base", "Qwen/Qwen3-TTS-12Hz-0.6B-Base", "0.6B, voice cloning from reference audio"},
    {"0.6b-custom-voice", "Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice", "0.6B, built-in speakers"},
    {"1.7b-base", "Qwen/Qwen3-TTS-12Hz-1.7B-Base", "1.7B, voice cloning from reference audio"},
    {"1.7b-custom-voice", "Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice", "1.7B, built-in speakers + instructions"},
    {"1.7b-voice-design", "Qwen/Qwen3-TTS-12Hz-1.7B-VoiceDesign", "1.7B, voices described in words"},
    {"tokenizer", "Qwen/Qwen3-TTS-Tokenizer-12Hz", "the speech tokenizer (codec) alone"},
};

const qtts_hub_model *qtts_hub_models(size_t *n) {
    *n = sizeof models / sizeof models[0];
    return models;
}

static int valid_repo_id(const char *id) {
    const char *slash = strchr(id, '/');
    if (!slash || slash == id || !slash[1] || strchr(slash + 1, '/')) return 0;
    if (strstr(id, "..") || id[0] == '.' || slash[1] == '.' || strlen(id) > 200) return 0;
    for (const char *p = id; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
              *p == '_' || *p == '.' || *p == '/'))
            return 0;
    return 1;
}

int qtts_hub_repo_id(const char *name, char *buf, size_t size, qtts_err *err) {
    if (!name || !*name) return qtts_fail(err, "no model name given");
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++)
        if (!strcasecmp(name, models[i].name)) {
            if (snprintf(buf, size, "%s", models[i].repo_id) >= (int)size) return qtts_fail(err, "name too long");
            return 0;
        }
    if (!valid_repo_id(name))
        return qtts_fail(err, "unknown model '%s' (expected one of 0.6b-base, 0.6b-custom-voice, 1.7b-base, "
                              "1.7b-custom-voice, 1.7b-voice-design, tokenizer, or a hub id like Qwen/Qwen3-TTS-...)",
                         name);
    if (snprintf(buf, size, "%s", name) >= (int)size) return qtts_fail(err, "model id too long");
    return 0;
}

int qtts_cache_dir(char *buf, size_t size, qtts_err *err) {
    const char *home = getenv("QTTS_HOME");
    int n;
    if (home && *home) {
        n = snprintf(buf, size, "%s", home);
    } else {
        const char *xdg = getenv("XDG_CACHE_HOME");
        const char *h = getenv("HOME");
        if (xdg && *xdg) n = snprintf(buf, size, "%s/qtts", xdg);
        else if (h && *h) n = snprintf(buf, size, "%s/.cache/qtts", h);
        else return qtts_fail(err, "no model cache: set QTTS_HOME (or HOME)");
    }
    if (n < 0 || (size_t)n >= size) return qtts_fail(err, "model cache path too long");
    while (n > 1 && buf[n - 1] == '/') buf[--n] = 0;
    return 0;
}

int qtts_model_cache_path(const char *repo_id, char *buf, size_t size, qtts_err *err) {
    char cache[4096];
    if (qtts_cache_dir(cache, sizeof cache, err)) return -1;
    const char *slash = strrchr(repo_id, '/');
    const char *name = slash ? slash + 1 : repo_id;
    if (!*name || !strcmp(name, ".") || !strcmp(name, "..")) return qtts_fail(err, "bad model name '%s'", repo_id);
    if (snprintf(buf, size, "%s/%s", cache, name) >= (int)size) return qtts_fail(err, "model cache path too long");
    return 0;
}

const char *qtts_resolve_model(const char *name_or_path, char *buf, size_t size) {
    struct stat st;
    if (!buf || !size) return NULL;
    buf[0] = 0;
    if (!name_or_path || !*name_or_path) return NULL;
    if (!stat(name_or_path, &st)) {
        if (snprintf(buf, size, "%s", name_or_path) >= (int)size) return NULL;
        return buf;
    }
    char repo[256];
    qtts_err err;
    const char *id = name_or_path;
    if (!qtts_hub_repo_id(name_or_path, repo, sizeof repo, &err)) id = repo;
    else if (strchr(name_or_path, '/')) return NULL; /* a path that does not exist */
    if (qtts_model_cache_path(id, buf, size, &err)) {
        buf[0] = 0;
        return NULL;
    }
    return !stat(buf, &st) && S_ISDIR(st.st_mode) ? buf : NULL;
}

const char *qtts_model_resolve(const char *name_or_path, char *buf, size_t size) {
    return qtts_resolve_model(name_or_path, buf, size);
}
