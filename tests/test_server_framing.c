/* HTTP/1.1 framing the server must not guess at (RFC 9112): a request with
 * both Content-Length and Transfer-Encoding, two Content-Lengths or two
 * Transfer-Encodings, or HTTP/1.1 without Host is answered 400 and the
 * connection closes, so a request hidden in its body ("smuggled" past a
 * proxy that frames it the other way) is never answered. A well-framed
 * keep-alive pair is still answered twice. */
#include <sys/stat.h>

#include "harness.h"
#include "test_server_http.h"

#define CV_MODEL QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"

/* Sends raw bytes on a new connection; returns the responses' status lines
 * counted and the first status, *closed when the server closed within 5 s. */
static int exchange(int port, const char *raw, int *first_status, int *closed, char *out, size_t cap) {
    int fd = th_connect(port);
    *first_status = 0, *closed = 0, out[0] = 0;
    if (fd < 0 || th_send_all(fd, raw, strlen(raw))) return -1;
    double end = th_now() + 5;
    size_t len = 0;
    while (th_now() < end && len < cap - 1) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 100) <= 0) continue;
        ssize_t k = recv(fd, out + len, cap - 1 - len, 0);
        if (k <= 0) {
            *closed = k == 0;
            break;
        }
        len += (size_t)k;
    }
    out[len] = 0;
    close(fd);
    int n = 0;
    for (const char *p = out; (p = strstr(p, "HTTP/1.1 ")); p += 9) {
        if (!n) *first_status = atoi(p + 9);
        n++;
    }
    return n;
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    struct stat st;
    if (stat(CV_MODEL "/config.json", &st)) {
        TEST_CHECK(0, "tiny CustomVoice model present under %s", QTTS_GOLDEN_DIR);
        return test_finish("test_server_framing");
    }
    th_server srv;
    const char *args[] = {"-m", CV_MODEL, "--threads", "1", NULL};
    if (th_start(&srv, args, 120)) {
        TEST_CHECK(0, "server starts: %s", srv.log);
        return test_finish("test_server_framing");
    }
    static const struct {
        const char *what, *raw;
    } bad[] = {
        {"Transfer-Encoding + Content-Length",
         "POST /v1/audio/voices HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 42\r\n\r\n"
         "0\r\n\r\nGET /smuggled-1 HTTP/1.1\r\nHost: x\r\n\r\n"},
        {"two Content-Lengths",
         "POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nContent-Length: 40\r\n\r\n"
         "{}{}GET /smuggled-2 HTTP/1.1\r\nHost: x\r\n\r\n"},
        {"two Transfer-Encodings",
         "POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n"
         "0\r\n\r\nGET /smuggled-3 HTTP/1.1\r\nHost: x\r\n\r\n"},
        {"HTTP/1.1 without Host", "GET /health HTTP/1.1\r\n\r\nGET /smuggled-4 HTTP/1.1\r\nHost: x\r\n\r\n"},
    };
    char out[16384];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int status = 0, closed = 0;
        int n = exchange(srv.port, bad[i].raw, &status, &closed, out, sizeof out);
        TEST_CHECK(n == 1 && status == 400 && closed && !strstr(out, "smuggled") && strstr(out, "bad_request_framing"),
                   "%s: one 400 and the connection closed (%d responses, first %d, closed %d): %.300s", bad[i].what, n,
                   status, closed, out);
    }
    int status = 0, closed = 0;
    int n = exchange(srv.port,
                     "GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                     &status, &closed, out, sizeof out);
    TEST_CHECK(n == 2 && status == 200, "two well-framed requests on one connection: %d responses, first %d", n, status);
    TEST_CHECK(th_stop(&srv, 30) == 0, "server exits cleanly: %s", srv.log);
    return test_finish("test_server_framing");
}
