/* WebSocket framing (RFC 6455) for the server side: parsing client frames
 * from a byte buffer (incrementally, as they arrive) into whole messages,
 * and writing server frames. Pure functions over memory: no sockets, so the
 * parser is unit-tested and fuzzed on its own.
 *
 * Client frames must be masked (RFC 6455 5.1); control frames (close, ping,
 * pong) must be final and carry at most 125 bytes; fragmented data messages
 * are reassembled (control frames may arrive between the fragments); text
 * messages must be UTF-8. Any violation is a protocol error with the close
 * code the RFC asks for. */
#ifndef QTTS_SERVER_WS_FRAME_H
#define QTTS_SERVER_WS_FRAME_H

#include <stddef.h>
#include <stdint.h>

enum {
    WS_OP_CONT = 0x0,
    WS_OP_TEXT = 0x1,
    WS_OP_BINARY = 0x2,
    WS_OP_CLOSE = 0x8,
    WS_OP_PING = 0x9,
    WS_OP_PONG = 0xA,
};

/* Close codes (RFC 6455 7.4.1). */
enum { WS_CLOSE_NORMAL = 1000, WS_CLOSE_PROTOCOL = 1002, WS_CLOSE_BAD_DATA = 1007, WS_CLOSE_TOO_BIG = 1009 };

typedef struct {
    size_t max_message; /* reassembled data message limit */
    /* reassembly of a fragmented message */
    unsigned char *msg;
    size_t msg_len, msg_cap;
    int msg_opcode; /* 0: none in progress */
} ws_reader;

typedef struct {
    int opcode;               /* WS_OP_TEXT, _BINARY, _CLOSE, _PING, _PONG */
    const unsigned char *data; /* valid until the next ws_read call */
    size_t len;
    int close_code; /* WS_OP_CLOSE: the peer's code, or 1005 when none was sent */
} ws_message;

void ws_reader_init(ws_reader *r, size_t max_message);
void ws_reader_free(ws_reader *r);

/* Consumes at most one frame from buf[0..len). Returns:
 *   > 0  bytes consumed, and *got = 1 when a whole message is in *m
 *        (a fragment consumed without completing a message gives *got = 0);
 *   0    more bytes are needed;
 *   -1   protocol error: *close_code and *why say what to send and log.
 * The frame's payload is unmasked in place (buf is modified). */
long ws_read(ws_reader *r, unsigned char *buf, size_t len, ws_message *m, int *got, int *close_code,
             const char **why);

/* A server frame header for a payload of n bytes (unmasked, final).
 * Returns the header length (2, 4 or 10) written into hdr[10]. */
size_t ws_frame_header(int opcode, size_t n, unsigned char hdr[10]);

/* Sec-WebSocket-Accept for a Sec-WebSocket-Key (RFC 6455 4.2.2): base64 of
 * SHA-1(key + GUID) into out[29] (NUL-terminated). Returns 0, or -1 for a
 * key that is not 16 bytes of base64. */
int ws_accept_key(const char *key, char out[29]);

#endif
