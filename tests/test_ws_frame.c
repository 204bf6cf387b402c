/* WebSocket framing (src/server/ws_frame.c): masked client frames of every
 * length encoding, split at every byte, fragmentation with control frames in
 * between, every protocol error with its close code, the handshake key. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "server/ws_frame.h"

/* A masked client frame into out; returns its length. */
static size_t client_frame(int fin, int op, const void *payload, size_t n, unsigned char *out) {
    static const unsigned char key[4] = {0x37, 0xfa, 0x21, 0x3d};
    size_t h = 0;
    out[h++] = (unsigned char)((fin ? 0x80 : 0) | op);
    if (n < 126) {
        out[h++] = (unsigned char)(0x80 | n);
    } else if (n < 65536) {
        out[h++] = 0x80 | 126;
        out[h++] = (unsigned char)(n >> 8);
        out[h++] = (unsigned char)n;
    } else {
        out[h++] = 0x80 | 127;
        for (int i = 0; i < 8; i++) out[h++] = (unsigned char)((uint64_t)n >> (56 - 8 * i));
    }
    memcpy(out + h, key, 4);
    h += 4;
    for (size_t i = 0; i < n; i++) out[h + i] = ((const unsigned char *)payload)[i] ^ key[i & 3];
    return h + n;
}

/* Feeds buf through a reader in pieces of `step` bytes (as a socket would);
 * collects the messages' opcodes and total payload; returns -1 on error. */
static int feed(ws_reader *r, const unsigned char *frames, size_t n, size_t step, int *ops, int *n_ops,
                unsigned char *payload, size_t *plen, int *close_code) {
    unsigned char *buf = malloc(n + 1);
    size_t have = 0, fed = 0;
    *n_ops = 0;
    *plen = 0;
    while (fed < n || have) {
        size_t k = fed + step <= n ? step : n - fed;
        memcpy(buf + have, frames + fed, k);
        have += k;
        fed += k;
        for (;;) {
            ws_message m;
            int got = 0;
            const char *why = NULL;
            long used = ws_read(r, buf, have, &m, &got, close_code, &why);
            if (used < 0) {
                free(buf);
                return -1;
            }
            if (used == 0) break;
            if (got) {
                ops[(*n_ops)++] = m.opcode;
                memcpy(payload + *plen, m.data, m.len);
                *plen += m.len;
            }
            memmove(buf, buf + used, have - (size_t)used);
            have -= (size_t)used;
        }
        if (fed == n && have) break; /* a truncated tail */
    }
    free(buf);
    return 0;
}

static void test_messages(void) {
    static unsigned char big[70000];
    for (size_t i = 0; i < sizeof big; i++) big[i] = (unsigned char)(i * 7);
    unsigned char *frames = malloc(200000);
    size_t n = 0;
    n += client_frame(1, WS_OP_TEXT, "{\"type\":\"input.text\"}", 21, frames + n);
    n += client_frame(1, WS_OP_BINARY, big, 300, frames + n);     /* 16-bit length */
    n += client_frame(1, WS_OP_BINARY, big, 70000, frames + n);   /* 64-bit length */
    n += client_frame(0, WS_OP_TEXT, "Hel", 3, frames + n);       /* fragmented ... */
    n += client_frame(1, WS_OP_PING, "p", 1, frames + n);         /* ... a ping in between ... */
    n += client_frame(0, WS_OP_CONT, "lo ", 3, frames + n);
    n += client_frame(1, WS_OP_CONT, "\xc3\xa9", 2, frames + n);  /* ... UTF-8 split across fragments */
    n += client_frame(1, WS_OP_CLOSE, "\x03\xe8" "bye", 5, frames + n);
    int ops[16], n_ops;
    size_t plen;
    unsigned char *payload = malloc(200000);
    for (size_t step = 1; step <= 4099; step = step < 16 ? step + 1 : step * 2 + 3) {
        ws_reader r;
        ws_reader_init(&r, 1 << 20);
        int code = 0;
        int rc = feed(&r, frames, n, step, ops, &n_ops, payload, &plen, &code);
        int ok = rc == 0 && n_ops == 6 && ops[0] == WS_OP_TEXT && ops[1] == WS_OP_BINARY && ops[2] == WS_OP_BINARY &&
                 ops[3] == WS_OP_PING && ops[4] == WS_OP_TEXT && ops[5] == WS_OP_CLOSE &&
                 plen == 21 + 300 + 70000 + 1 + 8 + 3 && !memcmp(payload + 21, big, 300) &&
                 !memcmp(payload + 321, big, 70000) && !memcmp(payload + 70321, "pHello \xc3\xa9" "bye", 12);
        TEST_CHECK(ok, "messages read back in %zu-byte pieces (rc %d, %d messages, %zu bytes)", step, rc, n_ops, plen);
        ws_reader_free(&r);
    }
    free(payload);
    free(frames);
}

static void test_errors(void) {
    static const struct {
        unsigned char bytes[16];
        size_t n;
        int code;
        const char *what;
    } bad[] = {
        {{0x81, 0x01, 'x'}, 3, WS_CLOSE_PROTOCOL, "unmasked client frame"},
        {{0xC1, 0x80, 1, 2, 3, 4}, 6, WS_CLOSE_PROTOCOL, "reserved bit"},
        {{0x83, 0x80, 1, 2, 3, 4}, 6, WS_CLOSE_PROTOCOL, "unknown opcode 3"},
        {{0x09, 0x80, 1, 2, 3, 4}, 6, WS_CLOSE_PROTOCOL, "fragmented ping"},
        {{0x89, 0xFE, 0x00, 0x7E, 1, 2, 3, 4}, 8, WS_CLOSE_PROTOCOL, "ping of 126 bytes"},
        {{0x80, 0x80, 1, 2, 3, 4}, 6, WS_CLOSE_PROTOCOL, "continuation without a message"},
        {{0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0}, 10, WS_CLOSE_PROTOCOL, "64-bit length with the top bit"},
        {{0x82, 0xFF, 0, 0, 0, 0, 0x10, 0, 0, 0}, 10, WS_CLOSE_TOO_BIG, "256 MiB binary message"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ws_reader r;
        ws_reader_init(&r, 1 << 20);
        unsigned char buf[16];
        memcpy(buf, bad[i].bytes, bad[i].n);
        ws_message m;
        int got = 0, code = 0;
        const char *why = NULL;
        long rc = ws_read(&r, buf, bad[i].n, &m, &got, &code, &why);
        TEST_CHECK(rc == -1 && code == bad[i].code && why, "%s: rc %ld code %d (%s)", bad[i].what, rc, code,
                   why ? why : "");
        ws_reader_free(&r);
    }
    unsigned char f[64];
    int ops[4], n_ops, code = 0;
    size_t plen;
    unsigned char payload[64];
    size_t n = client_frame(1, WS_OP_TEXT, "\xc3(", 2, f);
    ws_reader r;
    ws_reader_init(&r, 1 << 20);
    TEST_CHECK(feed(&r, f, n, n, ops, &n_ops, payload, &plen, &code) == -1 && code == WS_CLOSE_BAD_DATA,
               "invalid UTF-8 text: 1007 (%d)", code);
    ws_reader_free(&r);
    n = client_frame(0, WS_OP_TEXT, "a", 1, f);
    n += client_frame(1, WS_OP_BINARY, "b", 1, f + n);
    ws_reader_init(&r, 1 << 20);
    TEST_CHECK(feed(&r, f, n, n, ops, &n_ops, payload, &plen, &code) == -1 && code == WS_CLOSE_PROTOCOL,
               "a new message inside a fragmented one: 1002");
    ws_reader_free(&r);
    n = client_frame(0, WS_OP_TEXT, "aaaa", 4, f);
    n += client_frame(1, WS_OP_CONT, "bbbb", 4, f + n);
    ws_reader_init(&r, 6);
    TEST_CHECK(feed(&r, f, n, n, ops, &n_ops, payload, &plen, &code) == -1 && code == WS_CLOSE_TOO_BIG,
               "fragments past the message limit: 1009");
    ws_reader_free(&r);
    n = client_frame(1, WS_OP_CLOSE, "\x03", 1, f);
    ws_reader_init(&r, 1 << 20);
    TEST_CHECK(feed(&r, f, n, n, ops, &n_ops, payload, &plen, &code) == -1, "a 1-byte close body");
    ws_reader_free(&r);
    /* truncated frames need more bytes, never read past the end */
    n = client_frame(1, WS_OP_BINARY, "0123456789", 10, f);
    for (size_t k = 0; k < n; k++) {
        unsigned char *cut = malloc(k ? k : 1);
        memcpy(cut, f, k);
        ws_message m;
        int got = 0;
        const char *why;
        ws_reader_init(&r, 1 << 20);
        long rc = ws_read(&r, cut, k, &m, &got, &code, &why);
        TEST_CHECK(rc == 0, "a frame cut at %zu bytes waits for more (%ld)", k, rc);
        ws_reader_free(&r);
        free(cut);
    }
}

static void test_server_frames_and_key(void) {
    unsigned char h[10];
    TEST_CHECK(ws_frame_header(WS_OP_TEXT, 5, h) == 2 && h[0] == 0x81 && h[1] == 5, "short header");
    TEST_CHECK(ws_frame_header(WS_OP_BINARY, 300, h) == 4 && h[0] == 0x82 && h[1] == 126 && h[2] == 1 && h[3] == 44,
               "16-bit header");
    TEST_CHECK(ws_frame_header(WS_OP_BINARY, 70000, h) == 10 && h[1] == 127 && h[7] == 1 && h[8] == 0x11 &&
                   h[9] == 0x70,
               "64-bit header");
    char acc[29];
    /* the example of RFC 6455 section 1.3 */
    TEST_CHECK(ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", acc) == 0 && !strcmp(acc, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="),
               "RFC 6455 accept key: %s", acc);
    TEST_CHECK(ws_accept_key("short", acc) == -1 && ws_accept_key(NULL, acc) == -1 &&
                   ws_accept_key("!!!!!!!!!!!!!!!!!!!!!!!!", acc) == -1,
               "bad keys refused");
}

int main(void) {
    test_messages();
    test_errors();
    test_server_frames_and_key();
    return test_finish("test_ws_frame");
}
