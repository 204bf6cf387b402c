#include "server/ws_frame.h"

#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>

#include "server/b64.h"
#include "text/utf8.h"

void ws_reader_init(ws_reader *r, size_t max_message) {
    memset(r, 0, sizeof *r);
    r->max_message = max_message;
}

void ws_reader_free(ws_reader *r) {
    free(r->msg);
    memset(r, 0, sizeof *r);
}

static long fail(int code, const char *what, int *close_code, const char **why) {
    *close_code = code;
    *why = what;
    return -1;
}

long ws_read(ws_reader *r, unsigned char *buf, size_t len, ws_message *m, int *got, int *close_code,
             const char **why) {
    *got = 0;
    if (len < 2) return 0;
    int fin = buf[0] >> 7, rsv = (buf[0] >> 4) & 7, op = buf[0] & 0x0F, masked = buf[1] >> 7;
    uint64_t n = buf[1] & 0x7F;
    size_t h = 2;
    if (rsv) return fail(WS_CLOSE_PROTOCOL, "reserved bits set (no extension was negotiated)", close_code, why);
    if (!masked) return fail(WS_CLOSE_PROTOCOL, "client frames must be masked", close_code, why);
    if (n == 126) {
        if (len < 4) return 0;
        n = (uint64_t)buf[2] << 8 | buf[3];
        h = 4;
    } else if (n == 127) {
        if (len < 10) return 0;
        n = 0;
        for (int i = 0; i < 8; i++) n = n << 8 | buf[2 + i];
        h = 10;
        if (n >> 63) return fail(WS_CLOSE_PROTOCOL, "frame length has the top bit set", close_code, why);
    }
    int control = op >= 0x8;
    if (control && (!fin || n > 125))
        return fail(WS_CLOSE_PROTOCOL, "control frames must be final and at most 125 bytes", close_code, why);
    if (op != WS_OP_CONT && op != WS_OP_TEXT && op != WS_OP_BINARY && op != WS_OP_CLOSE && op != WS_OP_PING &&
        op != WS_OP_PONG)
        return fail(WS_CLOSE_PROTOCOL, "unknown opcode", close_code, why);
    if (!control && n > r->max_message - (op == WS_OP_CONT ? r->msg_len : 0))
        return fail(WS_CLOSE_TOO_BIG, "message too large", close_code, why);
    if (len - h < 4 || len - h - 4 < n) return 0; /* mask key + payload not all here yet */
    unsigned char *key = buf + h, *p = buf + h + 4;
    for (uint64_t i = 0; i < n; i++) p[i] ^= key[i & 3];
    long used = (long)(h + 4 + n);
    if (control) {
        m->opcode = op;
        m->data = p;
        m->len = (size_t)n;
        m->close_code = 1005;
        if (op == WS_OP_CLOSE) {
            if (n == 1) return fail(WS_CLOSE_PROTOCOL, "a close frame with a 1-byte body", close_code, why);
            if (n >= 2) {
                m->close_code = p[0] << 8 | p[1];
                m->data = p + 2;
                m->len = (size_t)n - 2;
                if (qtts_utf8_check((const char *)m->data, m->len) != m->len)
                    return fail(WS_CLOSE_BAD_DATA, "close reason is not UTF-8", close_code, why);
            }
        }
        *got = 1;
        return used;
    }
    if (op == WS_OP_CONT && !r->msg_opcode)
        return fail(WS_CLOSE_PROTOCOL, "a continuation frame without a message", close_code, why);
    if (op != WS_OP_CONT && r->msg_opcode)
        return fail(WS_CLOSE_PROTOCOL, "a new message inside a fragmented one", close_code, why);
    if (fin && op != WS_OP_CONT) { /* the common case: one frame, one message, no copy */
        if (op == WS_OP_TEXT && qtts_utf8_check((const char *)p, (size_t)n) != (size_t)n)
            return fail(WS_CLOSE_BAD_DATA, "a text message that is not UTF-8", close_code, why);
        m->opcode = op;
        m->data = p;
        m->len = (size_t)n;
        m->close_code = 0;
        *got = 1;
        return used;
    }
    if (op != WS_OP_CONT) {
        r->msg_opcode = op;
        r->msg_len = 0;
    }
    if (r->msg_len + n > r->msg_cap) {
        size_t cap = r->msg_cap ? r->msg_cap : 4096;
        while (cap < r->msg_len + n) cap *= 2;
        unsigned char *nb = realloc(r->msg, cap);
        if (!nb) return fail(WS_CLOSE_TOO_BIG, "out of memory", close_code, why);
        r->msg = nb;
        r->msg_cap = cap;
    }
    if (n) memcpy(r->msg + r->msg_len, p, (size_t)n); /* an empty first fragment: r->msg may still be NULL */
    r->msg_len += (size_t)n;
    if (!fin) return used;
    if (r->msg_opcode == WS_OP_TEXT && qtts_utf8_check((const char *)r->msg, r->msg_len) != r->msg_len)
        return fail(WS_CLOSE_BAD_DATA, "a text message that is not UTF-8", close_code, why);
    m->opcode = r->msg_opcode;
    m->data = r->msg;
    m->len = r->msg_len;
    m->close_code = 0;
    r->msg_opcode = 0;
    *got = 1;
    return used;
}

size_t ws_frame_header(int opcode, size_t n, unsigned char hdr[10]) {
    hdr[0] = (unsigned char)(0x80 | (opcode & 0x0F));
    if (n < 126) {
        hdr[1] = (unsigned char)n;
        return 2;
    }
    if (n < 65536) {
        hdr[1] = 126;
        hdr[2] = (unsigned char)(n >> 8);
        hdr[3] = (unsigned char)n;
        return 4;
    }
    hdr[1] = 127;
    for (int i = 0; i < 8; i++) hdr[2 + i] = (unsigned char)((uint64_t)n >> (56 - 8 * i));
    return 10;
}

int ws_accept_key(const char *key, char out[29]) {
    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    size_t klen = key ? strlen(key) : 0, dn = 0;
    const char *why = NULL;
    unsigned char *raw = klen == 24 ? srv_b64_decode(key, klen, &dn, &why) : NULL;
    free(raw);
    if (!raw || dn != 16) return -1;
    char buf[24 + sizeof guid];
    memcpy(buf, key, 24);
    memcpy(buf + 24, guid, sizeof guid - 1);
    unsigned char digest[SHA_DIGEST_LENGTH];
    SHA1((const unsigned char *)buf, 24 + sizeof guid - 1, digest);
    srv_b64_encode(digest, SHA_DIGEST_LENGTH, out);
    out[28] = 0;
    return 0;
}
