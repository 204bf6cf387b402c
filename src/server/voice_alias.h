/* Voice aliases: other names for voices, so that clients which start with
 * OpenAI's voice names (alloy, echo, ...; Open WebUI, SillyTavern) work with
 * their default settings. An alias's target depends on the model variant: a
 * built-in speaker (CustomVoice), a registered voice (Base), or the voice
 * description used as the instruction (VoiceDesign). The default table maps
 * OpenAI's names (voice_alias.c); --voice-alias NAME=TARGET adds or replaces
 * entries and --no-voice-aliases drops the defaults. */
#ifndef QTTS_SERVER_VOICE_ALIAS_H
#define QTTS_SERVER_VOICE_ALIAS_H

#include <stddef.h>

#include "qtts.h"

typedef struct srv_voice_aliases srv_voice_aliases;

/* The table for a model: the defaults for its variant (unless no_defaults),
 * then specs ("NAME=TARGET"; a later one replaces an earlier name). On a
 * CustomVoice model a target must be a built-in speaker. NULL with err set
 * on a bad spec or out of memory. */
srv_voice_aliases *srv_voice_aliases_new(const qtts_model_info *info, int no_defaults, const char *const *specs,
                                         int n_specs, char *err, size_t err_size);
void srv_voice_aliases_free(srv_voice_aliases *a);

/* The target of name (case-insensitive), or NULL. a may be NULL. */
const char *srv_voice_alias_target(const srv_voice_aliases *a, const char *name);
int srv_voice_aliases_count(const srv_voice_aliases *a);
void srv_voice_alias_at(const srv_voice_aliases *a, int i, const char **name, const char **target);

/* 1 if name is one of OpenAI's built-in voice names. */
int srv_voice_is_openai_name(const char *name);

#endif
