#include "text/bpe.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

int qtts_merges_init(qtts_merges *m, size_t expected, qtts_err *err) {
    size_t cap = 1024;
    while (cap < expected * 2) cap *= 2; /* load factor <= 0.5 keeps probes short */
    memset(m, 0, sizeof *m);
    m->slots = qtts_calloc(cap, sizeof *m->slots, err);
    if (!m->slots) return -1;
    m->mask = cap - 1;
    return 0;
}

void qtts_merges_free(qtts_merges *m) {
    free(m->slots);
    memset(m, 0, sizeof *m);
}

static int merges_grow(qtts_merges *m, qtts_err *err) {
    size_t cap = (m->mask + 1) * 2;
    qtts_merge_slot *ns = qtts_calloc(cap, sizeof *ns, err);
    if (!ns) return -1;
    for (size_t i = 0; i <= m->mask; i++) {
        const qtts_merge_slot *s = &m->slots[i];
        if (!s->key) continue;
        size_t j = (size_t)((s->key * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
        while (ns[j].key) j = (j + 1) & (cap - 1);
        ns[j] = *s;
    }
    free(m->slots);
    m->slots = ns;
    m->mask = cap - 1;
    return 0;
}

int qtts_merges_put(qtts_merges *m, int32_t a, int32_t b, int32_t rank, int32_t merged, qtts_err *err) {
    if ((m->count + 1) * 2 > m->mask + 1 && merges_grow(m, err)) return -1;
    uint64_t key = qtts_merges_key(a, b);
    size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & m->mask;
    while (m->slots[i].key && m->slots[i].key != key) i = (i + 1) & m->mask;
    if (!m->slots[i].key) m->count++;
    m->slots[i].key = key;
    m->slots[i].rank = rank;
    m->slots[i].merged = merged;
    return 0;
}

/* A candidate merge of the symbol at pos with its right neighbour; it is
 * stale once either symbol has changed. Ordered by (rank, pos). */
struct qtts_bpe_cand {
    int32_t rank, pos, left, right, merged;
};

static int cand_less(const struct qtts_bpe_cand *x, const struct qtts_bpe_cand *y) {
    return x->rank < y->rank || (x->rank == y->rank && x->pos < y->pos);
}

static void heap_push(struct qtts_bpe_cand *h, size_t *n, struct qtts_bpe_cand c) {
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!cand_less(&c, &h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = c;
}

static struct qtts_bpe_cand heap_pop(struct qtts_bpe_cand *h, size_t *n) {
    struct qtts_bpe_cand top = h[0], last = h[--(*n)];
    size_t i = 0, m = *n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= m) break;
        if (c + 1 < m && cand_less(&h[c + 1], &h[c])) c++;
        if (!cand_less(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (m) h[i] = last;
    return top;
}

static void sift_down(struct qtts_bpe_cand *h, size_t n, size_t i) {
    struct qtts_bpe_cand x = h[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && cand_less(&h[c + 1], &h[c])) c++;
        if (!cand_less(&h[c], &x)) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

void qtts_bpe_work_free(qtts_bpe_work *w) {
    free(w->next);
    free(w->prev);
    free(w->heap);
    free(w->pending);
    memset(w, 0, sizeof *w);
}

static int work_reserve(qtts_bpe_work *w, size_t n, qtts_err *err) {
    if (n <= w->cap) return 0;
    size_t cap = w->cap ? w->cap : 64;
    while (cap < n) cap *= 2;
    int32_t *nx = realloc(w->next, cap * sizeof *nx);
    if (nx) w->next = nx;
    int32_t *pv = realloc(w->prev, cap * sizeof *pv);
    if (pv) w->prev = pv;
    /* Each merge adds at most two candidates: n initial + 2n later. */
    struct qtts_bpe_cand *hp = realloc(w->heap, 3 * cap * sizeof *hp);
    if (hp) w->heap = hp;
    struct qtts_bpe_cand *pd = realloc(w->pending, 2 * cap * sizeof *pd);
    if (pd) w->pending = pd;
    if (!nx || !pv || !hp || !pd) return qtts_fail(err, "out of memory in BPE (%zu symbols)", n);
    w->cap = cap;
    return 0;
}

int qtts_bpe_merge(const qtts_merges *m, qtts_bpe_work *w, int32_t *sym, int n, qtts_err *err) {
    if (n < 2) return n;
    if (work_reserve(w, (size_t)n, err)) return -1;
    int32_t *next = w->next, *prev = w->prev;
    struct qtts_bpe_cand *heap = w->heap, *pending = w->pending;
    size_t nheap = 0, npending = 0;
    for (int i = 0; i < n; i++) {
        next[i] = i + 1 < n ? i + 1 : -1;
        prev[i] = i - 1;
        if (i + 1 < n) {
            const qtts_merge_slot *s = qtts_merges_get(m, sym[i], sym[i + 1]);
            if (s) heap_push(heap, &nheap, (struct qtts_bpe_cand){s->rank, i, sym[i], sym[i + 1], s->merged});
        }
    }
    /* Pairs created while merging rank r wait in `pending` until every rank-r
     * pair present at the start of that round is done: the reference merges
     * all occurrences of one pair before it looks at new pairs. */
    int32_t cur = INT32_MIN;
    for (;;) {
        if (npending && (nheap == 0 || heap[0].rank != cur)) {
            /* A candidate already stale stays stale (ids only grow): drop
             * those; a large batch is cheaper to heapify than to push. */
            size_t start = nheap;
            for (size_t k = 0; k < npending; k++) {
                const struct qtts_bpe_cand *c = &pending[k];
                if (sym[c->pos] == c->left && next[c->pos] >= 0 && sym[next[c->pos]] == c->right)
                    heap[nheap++] = *c;
            }
            npending = 0;
            if (nheap - start > start) {
                for (size_t k = nheap / 2; k-- > 0;) sift_down(heap, nheap, k);
            } else {
                for (size_t k = start; k < nheap; k++) {
                    size_t m = k;
                    heap_push(heap, &m, heap[k]);
                }
            }
        }
        if (nheap == 0) break;
        struct qtts_bpe_cand c = heap_pop(heap, &nheap);
        cur = c.rank;
        int32_t i = c.pos;
        if (sym[i] != c.left) continue;
        int32_t j = next[i];
        if (j < 0 || sym[j] != c.right) continue;
        sym[i] = c.merged;
        sym[j] = -1;
        next[i] = next[j];
        if (next[j] >= 0) prev[next[j]] = i;
        if (prev[i] >= 0) {
            int32_t p = prev[i];
            const qtts_merge_slot *s = qtts_merges_get(m, sym[p], sym[i]);
            if (s) pending[npending++] = (struct qtts_bpe_cand){s->rank, p, sym[p], sym[i], s->merged};
        }
        if (next[i] >= 0) {
            int32_t q = next[i];
            const qtts_merge_slot *s = qtts_merges_get(m, sym[i], sym[q]);
            if (s) pending[npending++] = (struct qtts_bpe_cand){s->rank, i, sym[i], sym[q], s->merged};
        }
    }
    int k = 0;
    for (int32_t i = 0; i >= 0; i = next[i]) sym[k++] = sym[i];
    return k;
}

int qtts_bpe_merge_reference(const qtts_merges *m, int32_t *sym, int n) {
    while (n >= 2) {
        int32_t best = INT32_MAX, a = 0, b = 0, merged = 0;
        for (int i = 0; i + 1 < n; i++) {
            const qtts_merge_slot *s = qtts_merges_get(m, sym[i], sym[i + 1]);
            if (s && s->rank < best) {
                best = s->rank;
                a = sym[i];
                b = sym[i + 1];
                merged = s->merged;
            }
        }
        if (best == INT32_MAX) break;
        int k = 0;
        for (int i = 0; i < n;) {
            if (i + 1 < n && sym[i] == a && sym[i + 1] == b) {
                sym[k++] = merged;
                i += 2;
            } else {
                sym[k++] = sym[i++];
            }
        }
        n = k;
    }
    return n;
}
