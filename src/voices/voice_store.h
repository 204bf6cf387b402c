/* Registered voices: an in-memory cache over an optional directory.
 * On disk a voice NAME is NAME.spk (x-vector, the commit point), NAME.rvq
 * (reference codes; absent for an x-vector-only voice) and NAME.json
 * ({"ref_text": ...}). Each file is written to a temp file, fsynced and
 * renamed; NAME.spk is linked into place last and fails if it exists, so a
 * crash never leaves a half-registered voice visible and two instances
 * sharing one directory cannot overwrite each other. Lookups of a name not in
 * memory (or changed on disk) read the directory. The file format itself
 * (read without an engine by `qtts voices`) is voices/voice_files.h. */
#ifndef QTTS_VOICES_VOICE_STORE_H
#define QTTS_VOICES_VOICE_STORE_H

#include <stddef.h>

#include "qtts.h"
#include "voices/voice_files.h" /* srv_voice_name_ok */

typedef struct srv_voices srv_voices;

/* dir may be NULL (memory only). Loads every voice found in dir; files that
 * do not load are reported through warn (one line each) and skipped. */
srv_voices *srv_voices_open(qtts_engine *e, const char *dir, void (*warn)(void *, const char *), void *warn_user,
                            char *err, size_t err_size);
void srv_voices_free(srv_voices *vs);

/* srv_voice_name_ok(name) (voice_files.h): [A-Za-z0-9][A-Za-z0-9_.-]{0,63}, no "..". */

/* *out: a new reference (release it). Returns 0, -2 if unknown, -1 if the
 * voice's files could not be loaded (err). */
int srv_voices_get(srv_voices *vs, const char *name, qtts_voice **out, char *err, size_t err_size);
/* Adds voice under name (takes no reference of the caller's; retains its own).
 * Returns 0, -1 on failure (err), -2 if the name exists. */
int srv_voices_add(srv_voices *vs, const char *name, qtts_voice *v, char *err, size_t err_size);
/* Returns 0, -2 if unknown, -1 on an I/O failure. */
int srv_voices_delete(srv_voices *vs, const char *name, char *err, size_t err_size);

typedef struct {
    char name[72];
    int has_codes;
    size_t n_frames;
    char *ref_text; /* malloc'd or NULL */
} srv_voice_entry;
/* Snapshot of all voices (memory + directory), sorted by name. */
int srv_voices_list(srv_voices *vs, srv_voice_entry **out, size_t *n);
void srv_voices_list_free(srv_voice_entry *list, size_t n);

#endif
