/* Token string <-> id table of a BPE vocabulary (vocab.json plus added
 * tokens). Strings are byte strings with explicit lengths. */
#ifndef QTTS_TEXT_VOCAB_H
#define QTTS_TEXT_VOCAB_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

enum { QTTS_VOCAB_MAX_ID = (1 << 22) - 1 }; /* sanity bound on ids (4M) */

typedef struct {
    uint32_t hash, off, len;
    int32_t id; /* -1: empty slot */
} qtts_vocab_slot;

typedef struct {
    char *arena; /* all token strings, back to back */
    size_t arena_len, arena_cap;
    uint32_t *off, *len; /* by id; len UINT32_MAX = no token has this id */
    int32_t n_ids;       /* highest id + 1 */
    size_t ids_cap;
    qtts_vocab_slot *slots;
    size_t mask, count;
} qtts_vocab;

int qtts_vocab_init(qtts_vocab *v, size_t expected, qtts_err *err);
void qtts_vocab_free(qtts_vocab *v);

/* Maps s <-> id. A string already present fails unless replace is set (then
 * it takes the new id); the id's string becomes s either way. */
int qtts_vocab_put(qtts_vocab *v, const char *s, size_t len, int32_t id, int replace, qtts_err *err);
/* -1 when absent. */
int32_t qtts_vocab_find(const qtts_vocab *v, const char *s, size_t len);

/* The same lookup split in steps, so that a loader can hash and prefetch a
 * batch of strings before resolving them (the table is larger than cache). */
uint32_t qtts_vocab_hash(const char *s, size_t len);
void qtts_vocab_prefetch(const qtts_vocab *v, uint32_t hash);
int32_t qtts_vocab_find_hashed(const qtts_vocab *v, const char *s, size_t len, uint32_t hash);
/* NULL when no token has this id. */
const char *qtts_vocab_str(const qtts_vocab *v, int32_t id, size_t *len);

/* Parses the text of vocab.json: one JSON object of "token": id pairs.
 * `name` is used in error messages. */
int qtts_vocab_parse_json(qtts_vocab *v, const char *name, const char *buf, size_t len, qtts_err *err);

#endif
