/* Wyoming framing (see wyoming_frame.h). */
#include "server/wyoming_frame.h"

#include <math.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/json_util.h"

void wy_event_free(wy_event *ev) {
    if (!ev) return;
    cJSON_Delete(ev->root);
    free(ev->payload);
    memset(ev, 0, sizeof *ev);
}

void wy_reader_init(wy_reader *r) {
    memset(r, 0, sizeof *r);
    r->max_header = WY_MAX_HEADER;
    r->max_data = WY_MAX_DATA;
    r->max_payload = WY_MAX_PAYLOAD;
}

void wy_reader_free(wy_reader *r) {
    free(r->buf);
    wy_event_free(&r->pending);
    memset(r, 0, sizeof *r);
}

static int fail(wy_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(wy_reader *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->error, sizeof r->error, fmt, ap);
    va_end(ap);
    r->failed = 1;
    wy_event_free(&r->pending);
    r->have_header = 0;
    return -1;
}

int wy_reader_feed(wy_reader *r, const void *bytes, size_t n) {
    if (r->failed) return -1;
    if (!n) return 0;
    if (r->off && r->off == r->len) r->off = r->len = 0;
    if (r->cap - r->len < n) {
        /* Compact before growing: consumed bytes at the front are dead. */
        if (r->off) {
            memmove(r->buf, r->buf + r->off, r->len - r->off);
            r->len -= r->off;
            r->off = 0;
        }
        if (r->cap - r->len < n) {
            size_t want = r->len + n, nc = r->cap ? r->cap : 4096;
            while (nc < want) {
                if (nc > ((size_t)-1) / 2) {
                    nc = want;
                    break;
                }
                nc *= 2;
            }
            unsigned char *p = realloc(r->buf, nc);
            if (!p) return fail(r, "out of memory buffering %zu bytes", want);
            r->buf = p;
            r->cap = nc;
        }
    }
    memcpy(r->buf + r->len, bytes, n);
    r->len += n;
    return 0;
}

size_t wy_reader_buffered(const wy_reader *r) { return r->len - r->off; }

/* A length field: absent or null = 0; otherwise an integer in [0, max]. */
static int length_field(wy_reader *r, const cJSON *root, const char *name, size_t max, size_t *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);
    *out = 0;
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble) ||
        v->valuedouble < 0)
        return fail(r, "'%s' must be a non-negative integer", name);
    if (v->valuedouble > (double)max)
        return fail(r, "'%s' %.15g is over the limit of %zu bytes", name, v->valuedouble, max);
    *out = (size_t)v->valuedouble;
    return 0;
}

static int is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\r'; }

static int dedupe_last_wins(wy_reader *r, cJSON *obj);

/* Parses the header line buf[0..n) (without its '\n') into r->pending. */
static int parse_header(wy_reader *r, const unsigned char *line, size_t n) {
    const char *end = NULL;
    if (json_has_nul((const char *)line, n)) return fail(r, "event header contains a NUL character");
    cJSON *root = cJSON_ParseWithLengthOpts((const char *)line, n, &end, 0);
    if (!root) return fail(r, "event header is not valid JSON");
    size_t used = end ? (size_t)(end - (const char *)line) : n;
    while (used < n && is_space(line[used])) used++;
    if (used != n) {
        cJSON_Delete(root);
        return fail(r, "event header has bytes after its JSON object");
    }
    r->pending.root = root;
    if (!cJSON_IsObject(root)) return fail(r, "event header is not a JSON object");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "type");
    if (!cJSON_IsString(type) || !type->valuestring || !type->valuestring[0])
        return fail(r, "event header has no 'type' (a non-empty string)");
    r->pending.type = type->valuestring;
    cJSON *data = cJSON_GetObjectItemCaseSensitive(root, "data");
    if (data && cJSON_IsNull(data)) {
        cJSON_DeleteItemFromObjectCaseSensitive(root, "data");
        data = NULL;
    }
    if (data && !cJSON_IsObject(data)) return fail(r, "event 'data' must be a JSON object");
    if (!data && !(data = cJSON_AddObjectToObject(root, "data"))) return fail(r, "out of memory");
    r->pending.data = data;
    if (dedupe_last_wins(r, data)) return -1;
    if (length_field(r, root, "data_length", r->max_data, &r->data_len) ||
        length_field(r, root, "payload_length", r->max_payload, &r->payload_len))
        return -1;
    r->have_header = 1;
    return 0;
}

static uint64_t key_hash(const char *k) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *k; k++) h = (h ^ (unsigned char)*k) * 1099511628211ull;
    return h;
}

/* Keeps the last of each key of obj's members, as a JSON reader that fills a
 * dictionary does (the data block, appended after the inline data, so wins).
 * A hash set makes it linear: a megabyte of keys must not take quadratic time. */
static int dedupe_last_wins(wy_reader *r, cJSON *obj) {
    size_t n = 0;
    for (cJSON *it = obj->child; it; it = it->next) n++;
    if (n < 2) return 0;
    size_t cap = 4;
    while (cap < 2 * n) cap *= 2;
    cJSON **set = calloc(cap, sizeof *set);
    if (!set) return fail(r, "out of memory");
    cJSON *it = obj->child->prev; /* cJSON keeps the last member in the first one's prev */
    for (size_t left = n; left--;) {
        cJSON *prev = it == obj->child ? NULL : it->prev;
        const char *key = it->string ? it->string : "";
        size_t h = (size_t)key_hash(key) & (cap - 1);
        int dup = 0;
        for (; set[h]; h = (h + 1) & (cap - 1))
            if (!strcmp(set[h]->string ? set[h]->string : "", key)) {
                dup = 1;
                break;
            }
        if (dup) cJSON_Delete(cJSON_DetachItemViaPointer(obj, it));
        else set[h] = it;
        it = prev;
    }
    free(set);
    return 0;
}

/* The data block's keys replace or extend the header's data. */
static int merge_data(wy_reader *r, const unsigned char *block, size_t n) {
    const char *end = NULL;
    if (json_has_nul((const char *)block, n)) return fail(r, "event data block contains a NUL character");
    cJSON *extra = cJSON_ParseWithLengthOpts((const char *)block, n, &end, 0);
    if (!extra) return fail(r, "event data block (%zu bytes) is not valid JSON", n);
    size_t used = end ? (size_t)(end - (const char *)block) : n;
    while (used < n && (is_space(block[used]) || block[used] == '\n')) used++;
    if (used != n || !cJSON_IsObject(extra)) {
        cJSON_Delete(extra);
        return fail(r, "event data block (%zu bytes) is not one JSON object", n);
    }
    /* Move the members over as they are (keys included), then resolve repeats. */
    cJSON *data = r->pending.data, *first = extra->child;
    if (first) {
        cJSON *last = first->prev;
        if (data->child) {
            cJSON *tail = data->child->prev;
            tail->next = first;
            first->prev = tail;
            data->child->prev = last;
        } else {
            data->child = first;
        }
        extra->child = NULL;
    }
    cJSON_Delete(extra);
    return dedupe_last_wins(r, data);
}

int wy_reader_next(wy_reader *r, wy_event *ev) {
    memset(ev, 0, sizeof *ev);
    if (r->failed) return -1;
    for (;;) {
        if (!r->have_header) {
            const unsigned char *line = r->buf + r->off;
            size_t avail = r->len - r->off, i = r->scanned;
            for (; i < avail && line[i] != '\n'; i++) {
                /* JSON allows no raw control bytes: these are binary data,
                 * most likely a payload sent without its payload_length. */
                if (line[i] < 0x20 && line[i] != '\t' && line[i] != '\r')
                    return fail(r, "binary data where an event header line was expected (byte 0x%02x; a payload "
                                   "without payload_length?)",
                                line[i]);
            }
            if (i >= avail) {
                r->scanned = i;
                if (i > r->max_header) return fail(r, "event header line is longer than %zu bytes", r->max_header);
                return 0;
            }
            if (i > r->max_header) return fail(r, "event header line is longer than %zu bytes", r->max_header);
            size_t start = 0;
            while (start < i && is_space(line[start])) start++;
            r->off += i + 1;
            r->scanned = 0;
            if (start == i) continue; /* blank line between events */
            if (parse_header(r, line + start, i - start)) return -1;
        }
        size_t need = r->data_len + r->payload_len;
        if (r->len - r->off < need) return 0;
        const unsigned char *body = r->buf + r->off;
        if (r->data_len && merge_data(r, body, r->data_len)) return -1;
        if (r->payload_len) {
            r->pending.payload = malloc(r->payload_len);
            if (!r->pending.payload) return fail(r, "out of memory for a %zu-byte payload", r->payload_len);
            memcpy(r->pending.payload, body + r->data_len, r->payload_len);
            r->pending.payload_len = r->payload_len;
        }
        r->off += need;
        *ev = r->pending;
        memset(&r->pending, 0, sizeof r->pending);
        r->have_header = 0;
        r->data_len = r->payload_len = 0;
        return 1;
    }
}

int wy_write_event(srv_buf *out, const char *type, const cJSON *data, const void *payload, size_t payload_len) {
    char *block = NULL;
    size_t block_len = 0;
    if (data && data->child) {
        if (!(block = cJSON_PrintUnformatted(data))) return -1;
        block_len = strlen(block);
    }
    cJSON *h = cJSON_CreateObject();
    char *line = NULL;
    if (h && cJSON_AddStringToObject(h, "type", type) && cJSON_AddStringToObject(h, "version", WY_PROTOCOL_VERSION) &&
        (!block_len || cJSON_AddNumberToObject(h, "data_length", (double)block_len)) &&
        (!payload_len || cJSON_AddNumberToObject(h, "payload_length", (double)payload_len)))
        line = cJSON_PrintUnformatted(h);
    cJSON_Delete(h);
    size_t before = out->len - out->off; /* appends may compact the buffer: count from off */
    int rc = line && !srv_buf_append(out, line, strlen(line)) && !srv_buf_append(out, "\n", 1) &&
                     (!block_len || !srv_buf_append(out, block, block_len)) &&
                     (!payload_len || !srv_buf_append(out, payload, payload_len))
                 ? 0
                 : -1;
    if (rc) out->len = out->off + before; /* never a half-written event */
    free(line);
    free(block);
    return rc;
}
