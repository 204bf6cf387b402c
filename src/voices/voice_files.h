/* The on-disk form of registered voices, shared by the server's voice store
 * (voice_store.c, the in-memory cache over it) and `qtts say --voice` /
 * `qtts voices`. A voice NAME in a directory is
 *   NAME.spk   x-vector, float32 LE (the commit point: the voice exists iff it does)
 *   NAME.rvq   reference codes (.rvq format); absent for a voice made without them
 *   NAME.json  {"name": ..., "ref_text": ...}; absent or unreadable = no transcript
 *   NAME.lexicon  the voice's pronunciation lexicon (text/lexicon.h format);
 *              absent = none; a bad one is reported and the voice works without it
 * Writes go to a temp file that is fsynced and renamed; NAME.spk is linked into
 * place last and that fails if it exists, so a crash never exposes a
 * half-registered voice and two writers cannot overwrite each other. Deletion
 * removes NAME.spk first, so a half-deleted voice is already gone.
 *
 * Reading the directory (srv_voice_files_info/list, delete) needs no engine;
 * turning files into a qtts_voice (load) and writing one do, for the model's
 * code geometry and hidden size. */
#ifndef QTTS_VOICES_VOICE_FILES_H
#define QTTS_VOICES_VOICE_FILES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "qtts.h"

/* 1 if name is acceptable: [A-Za-z0-9][A-Za-z0-9_.-]{0,63}, no "..". A valid
 * name is a plain file name component: no '/', never "." or "..". */
int srv_voice_name_ok(const char *name);

/* If file (a directory entry) is NAME.spk for a valid NAME, copies NAME into
 * name (72 bytes) and returns 1; otherwise 0 (temp files, other files). */
int srv_voice_spk_name(const char *file, char name[72]);

/* stat() of NAME.spk: 0 if the voice exists. */
int srv_voice_files_stat(const char *dir, const char *name, struct stat *st);

/* Codebooks per .rvq frame when no model is at hand: the 12 Hz speech
 * tokenizer's 16 (22 bytes per frame); one frame is 80 ms. */
enum { SRV_VOICE_FILE_CODEBOOKS = 16, SRV_VOICE_FILE_CODE_VALUES = 2048 };
#define SRV_VOICE_FRAME_SECONDS 0.08

typedef struct {
    char name[72];
    size_t xvec_len; /* floats in NAME.spk */
    int has_codes; /* NAME.rvq holds reference codes */
    size_t n_frames; /* their frames (16 codebooks) */
    char *ref_text; /* NAME.json's transcript: malloc'd or NULL */
    int in_context; /* codes and a transcript: a Base model clones in context, else from the x-vector alone */
    char error[512]; /* non-empty: the files are corrupt, and why (the fields above are partial) */
    int has_lexicon; /* NAME.lexicon exists */
    size_t lexicon_entries; /* its entries when it parses */
    char lexicon_error[512]; /* non-empty: it does not parse ("path:line: why"); the voice works without it */
} srv_voice_file_info;

/* What NAME's files hold, read without an engine, with the loader's checks
 * that need no model (the x-vector's length is checked against the model
 * only on load). Returns 0 (info->error says if the files are corrupt), -2 if
 * there is no NAME.spk (or name is invalid), -1 if dir cannot be read (err). */
int srv_voice_files_info(const char *dir, const char *name, srv_voice_file_info *info, char *err, size_t err_size);
void srv_voice_files_info_free(srv_voice_file_info *info);

/* Every voice in dir (corrupt ones included, with error set), sorted by
 * name. Returns 0, or -1 if dir cannot be read (err names it). */
int srv_voice_files_list(const char *dir, srv_voice_file_info **out, size_t *n, char *err, size_t err_size);
void srv_voice_files_list_free(srv_voice_file_info *list, size_t n);

/* The voice NAME of dir for engine e (a Base model), or NULL with err (files
 * missing, corrupt, or not this model's geometry). It carries NAME.lexicon
 * (engine/voice_lexicon.h) when that parses; a bad one is left out. */
qtts_voice *srv_voice_files_load(qtts_engine *e, const char *dir, const char *name, char *err, size_t err_size);

/* NAME.lexicon into *out (a new reference; NULL when the voice has none).
 * Returns 0, or -1 with err ("path:line: why") when it does not parse. */
int srv_voice_files_lexicon(const char *dir, const char *name, qtts_lexicon **out, char *err, size_t err_size);

/* The lexicon a request with voice NAME uses: NAME.lexicon's entries over
 * global's (qtts_lexicon_merge), a new reference in *out (NULL: neither).
 * A bad NAME.lexicon is left out, with its reason in warn (warn[0] = 0
 * otherwise). Returns 0, or -1 out of memory (err). */
int srv_voice_files_request_lexicon(const char *dir, const char *name, const qtts_lexicon *global,
                                    qtts_lexicon **out, char *warn, size_t warn_size);

/* Writes text (checked to parse first: err "name:line: why") as NAME.lexicon
 * of an existing voice, atomically replacing any. Returns 0, or -1 (err). */
int srv_voice_files_write_lexicon(const char *dir, const char *name, const char *text, size_t len,
                                  const char *source, unsigned long *tmp_counter, char *err, size_t err_size);

/* Writes v as NAME (crash-safe, see above); *st receives NAME.spk's stat.
 * *tmp_counter makes temp names unique within the process: callers that
 * write from several threads serialize around it. Returns 0, -2 if NAME
 * exists, -1 on failure (err). */
int srv_voice_files_write(qtts_engine *e, const char *dir, const char *name, qtts_voice *v, unsigned long *tmp_counter,
                          struct stat *st, char *err, size_t err_size);

/* The same from the parts, with no engine (`qtts voices import`): x-vector
 * x[xlen], frame-major codes[n_frames][n_q] (may be NULL / 0), transcript rt
 * (may be NULL). The caller checks them. */
int srv_voice_files_write_parts(const char *dir, const char *name, const float *x, size_t xlen, const int32_t *codes,
                                size_t n_frames, int64_t n_q, const char *rt, unsigned long *tmp_counter,
                                struct stat *st, char *err, size_t err_size);

/* Removes NAME (NAME.spk first, then its other files). Returns 0, -2 if unknown, -1 on an I/O
 * failure (err). */
int srv_voice_files_delete(const char *dir, const char *name, char *err, size_t err_size);

#endif
