/* Byte-level BPE merging over token ids.
 *
 * A merge table maps an adjacent pair of token ids (a, b) to its rank (line
 * order in merges.txt) and the id of the merged token. qtts_bpe_merge gives
 * exactly the result of the reference algorithm (repeatedly take the
 * lowest-ranked adjacent pair and merge all its occurrences left to right) in
 * O(n log n), so huge single words stay fast. */
#ifndef QTTS_TEXT_BPE_H
#define QTTS_TEXT_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

typedef struct {
    uint64_t key; /* ((a << 32) | b) + 1; 0 marks an empty slot */
    int32_t rank;
    int32_t merged;
} qtts_merge_slot;

typedef struct {
    qtts_merge_slot *slots;
    size_t mask;
    size_t count;
} qtts_merges;

int qtts_merges_init(qtts_merges *m, size_t expected, qtts_err *err);
void qtts_merges_free(qtts_merges *m);
/* Adds a merge; a pair already present takes the new rank and result (a
 * later duplicate line wins, as in the reference loaders). */
int qtts_merges_put(qtts_merges *m, int32_t a, int32_t b, int32_t rank, int32_t merged, qtts_err *err);

static inline uint64_t qtts_merges_key(int32_t a, int32_t b) {
    return (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
}

static inline const qtts_merge_slot *qtts_merges_get(const qtts_merges *m, int32_t a, int32_t b) {
    uint64_t key = qtts_merges_key(a, b);
    size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & m->mask;
    for (;;) {
        const qtts_merge_slot *s = &m->slots[i];
        if (s->key == key) return s;
        if (s->key == 0) return NULL;
        i = (i + 1) & m->mask;
    }
}

static inline void qtts_merges_prefetch(const qtts_merges *m, int32_t a, int32_t b) {
    uint64_t key = qtts_merges_key(a, b);
    __builtin_prefetch(&m->slots[(size_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & m->mask]);
}

/* Scratch space for qtts_bpe_merge, reusable across calls (zero-init). */
typedef struct {
    int32_t *next, *prev;
    struct qtts_bpe_cand *heap, *pending;
    size_t cap, heap_cap, pending_cap;
} qtts_bpe_work;

void qtts_bpe_work_free(qtts_bpe_work *w);

/* Merges the symbols sym[0..n) in place; returns the new count, or -1 with
 * err when out of memory. */
int qtts_bpe_merge(const qtts_merges *m, qtts_bpe_work *w, int32_t *sym, int n, qtts_err *err);

/* The reference algorithm, O(n^2): the twin that tests compare against. */
int qtts_bpe_merge_reference(const qtts_merges *m, int32_t *sym, int n);

#endif
