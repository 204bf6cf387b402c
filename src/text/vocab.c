#include "text/vocab.h"

#include <stdlib.h>
#include <string.h>

#include "text/utf8.h"

uint32_t qtts_vocab_hash(const char *s, size_t len) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return (uint32_t)(h ^ (h >> 32));
}

int qtts_vocab_init(qtts_vocab *v, size_t expected, qtts_err *err) {
    memset(v, 0, sizeof *v);
    size_t cap = 1024;
    while (cap < expected * 2) cap *= 2;
    v->slots = qtts_malloc(cap * sizeof *v->slots, err);
    if (!v->slots) return -1;
    for (size_t i = 0; i < cap; i++) v->slots[i].id = -1;
    v->mask = cap - 1;
    return 0;
}

void qtts_vocab_free(qtts_vocab *v) {
    free(v->arena);
    free(v->off);
    free(v->len);
    free(v->slots);
    memset(v, 0, sizeof *v);
}

static int vocab_grow_slots(qtts_vocab *v, qtts_err *err) {
    size_t cap = (v->mask + 1) * 2;
    qtts_vocab_slot *ns = qtts_malloc(cap * sizeof *ns, err);
    if (!ns) return -1;
    for (size_t i = 0; i < cap; i++) ns[i].id = -1;
    for (size_t i = 0; i <= v->mask; i++) {
        if (v->slots[i].id < 0) continue;
        size_t j = v->slots[i].hash & (cap - 1);
        while (ns[j].id >= 0) j = (j + 1) & (cap - 1);
        ns[j] = v->slots[i];
    }
    free(v->slots);
    v->slots = ns;
    v->mask = cap - 1;
    return 0;
}

static int vocab_reserve_ids(qtts_vocab *v, int32_t id, qtts_err *err) {
    if ((size_t)id < v->ids_cap) return 0;
    size_t cap = v->ids_cap ? v->ids_cap : 1024;
    while (cap <= (size_t)id) cap *= 2;
    uint32_t *no = realloc(v->off, cap * sizeof *no);
    if (no) v->off = no;
    uint32_t *nl = realloc(v->len, cap * sizeof *nl);
    if (nl) v->len = nl;
    if (!no || !nl) return qtts_fail(err, "out of memory for %zu token ids", cap);
    for (size_t i = v->ids_cap; i < cap; i++) v->len[i] = UINT32_MAX;
    v->ids_cap = cap;
    return 0;
}

/* Appends s to the arena; returns its offset or -1. */
static int64_t arena_add(qtts_vocab *v, const char *s, size_t len, qtts_err *err) {
    if (v->arena_len + len > UINT32_MAX) return qtts_fail(err, "vocabulary strings exceed 4 GiB");
    if (v->arena_len + len > v->arena_cap) {
        size_t cap = v->arena_cap ? v->arena_cap : 65536;
        while (cap < v->arena_len + len) cap *= 2;
        char *na = realloc(v->arena, cap);
        if (!na) return qtts_fail(err, "out of memory for vocabulary strings");
        v->arena = na;
        v->arena_cap = cap;
    }
    /* s may point into the arena's free tail (the JSON scanner decodes there). */
    if (s != v->arena + v->arena_len) memmove(v->arena + v->arena_len, s, len);
    int64_t off = (int64_t)v->arena_len;
    v->arena_len += len;
    return off;
}

static int put_hashed(qtts_vocab *v, const char *s, size_t len, int32_t id, int replace, uint32_t h, qtts_err *err);

int qtts_vocab_put(qtts_vocab *v, const char *s, size_t len, int32_t id, int replace, qtts_err *err) {
    return put_hashed(v, s, len, id, replace, qtts_vocab_hash(s, len), err);
}

static int put_hashed(qtts_vocab *v, const char *s, size_t len, int32_t id, int replace, uint32_t h, qtts_err *err) {
    if (id < 0 || id > QTTS_VOCAB_MAX_ID) return qtts_fail(err, "token id %d out of range [0, %d]", id, QTTS_VOCAB_MAX_ID);
    if (len > 65535) return qtts_fail(err, "token of %zu bytes is too long", len);
    if ((v->count + 1) * 2 > v->mask + 1 && vocab_grow_slots(v, err)) return -1;
    if (vocab_reserve_ids(v, id, err)) return -1;
    size_t i = h & v->mask;
    for (; v->slots[i].id >= 0; i = (i + 1) & v->mask) {
        qtts_vocab_slot *sl = &v->slots[i];
        if (sl->hash == h && sl->len == len && !memcmp(v->arena + sl->off, s, len)) {
            if (!replace) return qtts_fail(err, "duplicate token '%.*s'", (int)(len > 64 ? 64 : len), s);
            sl->id = id;
            v->off[id] = sl->off;
            v->len[id] = sl->len;
            if (id >= v->n_ids) v->n_ids = id + 1;
            return 0;
        }
    }
    int64_t off = arena_add(v, s, len, err);
    if (off < 0) return -1;
    v->slots[i] = (qtts_vocab_slot){h, (uint32_t)off, (uint32_t)len, id};
    v->count++;
    v->off[id] = (uint32_t)off;
    v->len[id] = (uint32_t)len;
    if (id >= v->n_ids) v->n_ids = id + 1;
    return 0;
}

int32_t qtts_vocab_find(const qtts_vocab *v, const char *s, size_t len) {
    return v->slots ? qtts_vocab_find_hashed(v, s, len, qtts_vocab_hash(s, len)) : -1;
}

void qtts_vocab_prefetch(const qtts_vocab *v, uint32_t h) {
    /* First touch the slot; once it is cached, the string it points at. */
    const qtts_vocab_slot *sl = &v->slots[h & v->mask];
    __builtin_prefetch(sl);
}

int32_t qtts_vocab_find_hashed(const qtts_vocab *v, const char *s, size_t len, uint32_t h) {
    for (size_t i = h & v->mask; v->slots[i].id >= 0; i = (i + 1) & v->mask) {
        const qtts_vocab_slot *sl = &v->slots[i];
        if (sl->hash == h && sl->len == len && !memcmp(v->arena + sl->off, s, len)) return sl->id;
    }
    return -1;
}

const char *qtts_vocab_str(const qtts_vocab *v, int32_t id, size_t *len) {
    if (id < 0 || id >= v->n_ids || v->len[id] == UINT32_MAX) return NULL;
    if (len) *len = v->len[id];
    return v->arena + v->off[id];
}

/* ---- vocab.json scanner ------------------------------------------------ */

typedef struct {
    const char *p, *end, *base, *name;
    qtts_err *err;
} scanner;

static void skip_ws(scanner *sc) {
    while (sc->p < sc->end && (*sc->p == ' ' || *sc->p == '\n' || *sc->p == '\r' || *sc->p == '\t')) sc->p++;
}

static int scan_fail(scanner *sc, const char *what) {
    return qtts_fail(sc->err, "%s: %s at byte %zu", sc->name, what, (size_t)(sc->p - sc->base));
}

static int hex4(const char *p, uint32_t *out) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (uint32_t)(c - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

/* Decodes a JSON string (sc->p at the opening quote) into out, which has room
 * for at least the string's encoded length. */
static int scan_string(scanner *sc, char *out, size_t *out_len) {
    sc->p++;
    size_t n = 0;
    for (;;) {
        const char *q = sc->p;
        while (q < sc->end && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20) q++;
        memcpy(out + n, sc->p, (size_t)(q - sc->p));
        n += (size_t)(q - sc->p);
        sc->p = q;
        if (q >= sc->end) return scan_fail(sc, "unterminated string");
        if (*q == '"') {
            sc->p++;
            break;
        }
        if ((unsigned char)*q < 0x20) return scan_fail(sc, "control character in string");
        if (sc->end - q < 2) return scan_fail(sc, "unterminated escape");
        char e = q[1];
        sc->p = q + 2;
        switch (e) {
        case '"': out[n++] = '"'; break;
        case '\\': out[n++] = '\\'; break;
        case '/': out[n++] = '/'; break;
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'n': out[n++] = '\n'; break;
        case 'r': out[n++] = '\r'; break;
        case 't': out[n++] = '\t'; break;
        case 'u': {
            uint32_t cp, lo;
            if (sc->end - sc->p < 4 || hex4(sc->p, &cp)) return scan_fail(sc, "bad \\u escape");
            sc->p += 4;
            if (cp >= 0xDC00 && cp <= 0xDFFF) return scan_fail(sc, "lone low surrogate in \\u escape");
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (sc->end - sc->p < 6 || sc->p[0] != '\\' || sc->p[1] != 'u' || hex4(sc->p + 2, &lo) ||
                    lo < 0xDC00 || lo > 0xDFFF)
                    return scan_fail(sc, "unpaired surrogate in \\u escape");
                sc->p += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            n += (size_t)qtts_utf8_encode(cp, out + n);
            break;
        }
        default: return scan_fail(sc, "bad escape");
        }
    }
    *out_len = n;
    return 0;
}

/* One parsed "token": id pair waiting in a batch; its decoded bytes sit in
 * the arena's free tail at `off`, right after the previous entry's. */
typedef struct {
    size_t off, len, at;
    uint32_t hash;
    int32_t id;
} pending_entry;

enum { PUT_BATCH = 32 };

/* Inserts a batch in order; the slots were prefetched when it was built. */
static int flush_batch(qtts_vocab *v, const char *name, const pending_entry *pe, int n, qtts_err *err) {
    for (int i = 0; i < n; i++) {
        /* In order, each entry's bytes are exactly at the arena's end. */
        if (put_hashed(v, v->arena + pe[i].off, pe[i].len, pe[i].id, 0, pe[i].hash, err))
            return qtts_fail_prefix(err, "%s: byte %zu", name, pe[i].at);
    }
    return 0;
}

int qtts_vocab_parse_json(qtts_vocab *v, const char *name, const char *buf, size_t len, qtts_err *err) {
    scanner sc = {buf, buf + len, buf, name, err};
    /* Decoded strings are never longer than their JSON text, so the whole
     * file length is enough scratch in the arena. */
    if (v->arena_cap < v->arena_len + len) {
        char *na = realloc(v->arena, v->arena_len + len);
        if (!na) return qtts_fail(err, "%s: out of memory", name);
        v->arena = na;
        v->arena_cap = v->arena_len + len;
    }
    if (len >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3)) sc.p += 3; /* BOM */
    skip_ws(&sc);
    if (sc.p >= sc.end || *sc.p != '{') return scan_fail(&sc, "expected '{'");
    sc.p++;
    skip_ws(&sc);
    if (sc.p < sc.end && *sc.p == '}') return qtts_fail(err, "%s: empty vocabulary", name);
    pending_entry pe[PUT_BATCH];
    int npe = 0;
    size_t tail = v->arena_len; /* where the next decoded string goes */
    for (;;) {
        skip_ws(&sc);
        if (sc.p >= sc.end || *sc.p != '"') return scan_fail(&sc, "expected a token string");
        const char *tok_at = sc.p;
        char *out = v->arena + tail;
        size_t tlen = 0;
        if (scan_string(&sc, out, &tlen)) return -1;
        if (qtts_utf8_check(out, tlen) != tlen) {
            sc.p = tok_at;
            return scan_fail(&sc, "token is not valid UTF-8");
        }
        skip_ws(&sc);
        if (sc.p >= sc.end || *sc.p != ':') return scan_fail(&sc, "expected ':'");
        sc.p++;
        skip_ws(&sc);
        int64_t id = 0;
        const char *digits = sc.p;
        while (sc.p < sc.end && *sc.p >= '0' && *sc.p <= '9' && id <= QTTS_VOCAB_MAX_ID) id = id * 10 + (*sc.p++ - '0');
        if (sc.p == digits) return scan_fail(&sc, "expected a non-negative integer id");
        if (id > QTTS_VOCAB_MAX_ID) return scan_fail(&sc, "token id too large");
        if (sc.p < sc.end && (*sc.p == '.' || *sc.p == 'e' || *sc.p == 'E')) return scan_fail(&sc, "id is not an integer");
        uint32_t h = qtts_vocab_hash(out, tlen);
        __builtin_prefetch(&v->slots[h & v->mask]);
        pe[npe++] = (pending_entry){tail, tlen, (size_t)(tok_at - buf), h, (int32_t)id};
        tail += tlen;
        /* The table may grow during a flush, so stop short of its threshold. */
        if (npe == PUT_BATCH || (v->count + (size_t)npe + 1) * 2 > v->mask + 1) {
            if (flush_batch(v, name, pe, npe, err)) return -1;
            npe = 0;
        }
        skip_ws(&sc);
        if (sc.p < sc.end && *sc.p == ',') {
            sc.p++;
            continue;
        }
        if (sc.p < sc.end && *sc.p == '}') {
            sc.p++;
            break;
        }
        return scan_fail(&sc, "expected ',' or '}'");
    }
    if (flush_batch(v, name, pe, npe, err)) return -1;
    skip_ws(&sc);
    if (sc.p != sc.end) return scan_fail(&sc, "trailing data after the object");
    return 0;
}
