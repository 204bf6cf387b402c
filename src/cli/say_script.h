/* qtts say --script: a dialogue script (text/dialogue.h) as one recording.
 * The turns are joined with blank lines into one text, so the splitter's
 * chunks never cross a turn; each chunk then takes its turn's voice. */
#ifndef QTTS_CLI_SAY_SCRIPT_H
#define QTTS_CLI_SAY_SCRIPT_H

#include <stddef.h>

#include "qtts.h"
#include "text/dialogue.h"

/* The voice of one turn, as request fields. */
typedef struct {
    const char *speaker; /* CustomVoice: a built-in speaker (the model's string) */
    qtts_voice *voice;   /* Base: a registered voice (one reference, shared by the turns of a name) */
    char *instruct;      /* owned, or NULL: VoiceDesign description and/or the turn's instruction */
} say_turn_voice;

typedef struct {
    qtts_dialogue d;
    say_turn_voice *tv;  /* [d.n] */
    size_t *turn_start;  /* [d.n] byte offset of each turn's text in the joined text */
} say_script;

/* Parses script (len bytes; the caller checked UTF-8) and returns the joined
 * text (malloc'd) in *text, *text_len. Prints the error and returns -1. */
int say_script_parse(const char *path, const char *script, size_t len, say_script *s, char **text, size_t *text_len);

/* Maps every name to a voice: cast[i] is "NAME=VALUE" (VALUE: a built-in
 * speaker, a registered voice, or a VoiceDesign description); names without
 * one are taken as a built-in speaker (CustomVoice) or registered voice
 * (Base). Prints an error naming the script line and returns -1. */
int say_script_cast(say_script *s, qtts_engine *e, char *const *cast, int n_cast, const char *voices_dir,
                    const char *path);

/* The turn that holds byte offset off of the joined text. */
size_t say_script_turn_of(const say_script *s, size_t off);

void say_script_free(say_script *s);

#endif
