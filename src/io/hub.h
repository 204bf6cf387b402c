/* Model names, the local model cache, and resolving --model values.
 *
 * Short names map to the official repositories on the HuggingFace hub:
 *   0.6b-base          Qwen/Qwen3-TTS-12Hz-0.6B-Base
 *   0.6b-custom-voice  Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice
 *   1.7b-base          Qwen/Qwen3-TTS-12Hz-1.7B-Base
 *   1.7b-custom-voice  Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice
 *   1.7b-voice-design  Qwen/Qwen3-TTS-12Hz-1.7B-VoiceDesign
 *   tokenizer          Qwen/Qwen3-TTS-Tokenizer-12Hz
 * A full repo id ("owner/name") is accepted as well.
 *
 * Cache: $QTTS_HOME, else $XDG_CACHE_HOME/qtts, else ~/.cache/qtts; a repo
 * lives in <cache>/<name part of the repo id>, e.g.
 * ~/.cache/qtts/Qwen3-TTS-12Hz-0.6B-Base. No curl here: the resolver is
 * usable by every front end. */
#ifndef QTTS_IO_HUB_H
#define QTTS_IO_HUB_H

#include <stddef.h>

#include "core/err.h"

typedef struct {
    const char *name;    /* short name */
    const char *repo_id; /* hub repository */
    const char *what;    /* one-line description */
} qtts_hub_model;

/* The table above; *n receives its length. */
const qtts_hub_model *qtts_hub_models(size_t *n);

/* Repo id for a short name or an "owner/name" id (validated: letters,
 * digits, '-', '_', '.', one '/', no ".."). Returns 0 or -1 with err. */
int qtts_hub_repo_id(const char *name, char *buf, size_t size, qtts_err *err);

/* The cache root (not created). Returns 0 or -1 (no $HOME). */
int qtts_cache_dir(char *buf, size_t size, qtts_err *err);

/* <cache>/<name part of repo_id>. */
int qtts_model_cache_path(const char *repo_id, char *buf, size_t size, qtts_err *err);

/* What --model / $QTTS_MODEL mean: an existing path wins (returned as
 * given, copied into buf); otherwise a short name, repo id or repo name
 * that exists in the cache resolves to that folder. Returns buf, or NULL
 * when nothing exists (buf then holds the cache path that was tried, or ""). */
const char *qtts_resolve_model(const char *name_or_path, char *buf, size_t size);

#endif
