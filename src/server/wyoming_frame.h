/* Wyoming protocol framing (rhasspy/wyoming): parsing a client's byte stream
 * into events, incrementally as the bytes arrive, and writing events. Pure
 * functions over memory: no sockets, so the parser is unit-tested and fuzzed
 * on its own.
 *
 * An event on the wire is
 *   one JSON object on one line, ended by '\n':
 *       {"type": "...", "data": {...}?, "data_length": N?, "payload_length": M?}
 *   then N bytes of a JSON object merged over "data" (its keys win),
 *   then M bytes of binary payload (PCM audio for audio-chunk).
 * Limits: the header line at most max_header bytes, N at most max_data and M
 * at most max_payload. Anything else (bad JSON, a header that is not an
 * object, no string "type", lengths that are not non-negative integers or are
 * over the limits, binary bytes where a header line should be) is a protocol
 * error: the stream cannot be resynchronised, so the reader stays failed. */
#ifndef QTTS_SERVER_WYOMING_FRAME_H
#define QTTS_SERVER_WYOMING_FRAME_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "server/buf.h"

#define WY_MAX_HEADER (64u * 1024u)          /* header line, without its '\n' */
#define WY_MAX_DATA (1024u * 1024u)          /* data_length */
#define WY_MAX_PAYLOAD (16u * 1024u * 1024u) /* payload_length */
/* The "version" written in event headers: the Wyoming release whose events
 * (streaming synthesis: 1.7.0) this implementation follows. */
#define WY_PROTOCOL_VERSION "1.7.2"

typedef struct {
    cJSON *root;            /* the parsed header line; owns type and data */
    const char *type;       /* non-empty */
    cJSON *data;            /* an object (empty when the event had none), the data block merged in */
    unsigned char *payload; /* malloc'd; NULL when payload_len is 0 */
    size_t payload_len;
} wy_event;

void wy_event_free(wy_event *ev);

typedef struct {
    size_t max_header, max_data, max_payload;
    unsigned char *buf; /* bytes received and not yet consumed: buf[off..len) */
    size_t len, off, cap;
    size_t scanned;     /* bytes of the current header line already searched for '\n' */
    /* a header parsed, waiting for its data block and payload */
    int have_header;
    wy_event pending;
    size_t data_len, payload_len;
    int failed;
    char error[256];    /* why, once failed */
} wy_reader;

/* Default limits (WY_MAX_*); set the max_* fields afterwards to change them. */
void wy_reader_init(wy_reader *r);
void wy_reader_free(wy_reader *r);

/* Appends n received bytes. Returns 0, or -1 when out of memory (the reader
 * is then failed). */
int wy_reader_feed(wy_reader *r, const void *bytes, size_t n);

/* Takes the next complete event out of the bytes fed so far. Returns 1 with
 * *ev filled (free it with wy_event_free), 0 when more bytes are needed, -1
 * on a protocol error (r->error says why; every later call returns -1). */
int wy_reader_next(wy_reader *r, wy_event *ev);

/* Bytes fed and not yet returned as events. */
size_t wy_reader_buffered(const wy_reader *r);

/* Appends one event to out: the header line (type, version, data_length and
 * payload_length as needed), data (an object or NULL) as the data block,
 * then the payload. Returns 0, or -1 when out of memory. */
int wy_write_event(srv_buf *out, const char *type, const cJSON *data, const void *payload, size_t payload_len);

#endif
