/* What one request may hold on the server, on the endless model (a copy of
 * the tiny CustomVoice model that never ends an utterance by itself):
 *  - frames (--max-request-frames): max_new_tokens above the limit is a 400
 *    naming the limit and the flag (its field range [1, 1048576] is
 *    unchanged); a request that sets no frame limit and turns both runaway
 *    guards off still ends at the server's limit; one that leaves the length
 *    guard on keeps it (the limit does not switch the automatic guard off);
 *    Wyoming's qtts.max_frames is held to the same limit by name;
 *  - time to send a body (--body-timeout): a body trickled one byte at a
 *    time, each byte well inside --idle-timeout, gets 408 naming the flag
 *    and the connection closes; a body sent at once is unaffected. */
#include <cjson/cJSON.h>
#include <sys/stat.h>

#include "harness.h"
#include "support/endless_model.h"
#include "test_server_http.h"

#define CV_MODEL QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"
#define LIMIT 200       /* --max-request-frames */
#define BODY_TIMEOUT 2  /* --body-timeout, s */
#define FRAME_BYTES (1920 * 2) /* pcm: 1920 16-bit samples per frame */

static void speech(int port, const char *json, th_resp *r) {
    if (th_post_json(port, "/v1/audio/speech", NULL, json, r, 120)) r->status = 0;
}

static int body_has(const th_resp *r, const char *s) { return r->body && strstr((const char *)r->body, s) != NULL; }

static void check_frames(int port) {
    th_resp r;
    speech(port, "{\"input\":\"Hi.\",\"voice\":\"vivian\",\"response_format\":\"pcm\",\"max_new_tokens\":201}", &r);
    TEST_CHECK(r.status == 400 && body_has(&r, "above_server_limit") && body_has(&r, "200 frames") &&
                   body_has(&r, "--max-request-frames"),
               "max_new_tokens 201 above --max-request-frames 200: 400 naming the limit and the flag (%d): %.300s",
               r.status, r.body ? (char *)r.body : "");
    th_resp_free(&r);
    speech(port, "{\"input\":\"Hi.\",\"voice\":\"vivian\",\"max_new_tokens\":1048576,\"guard_frames_per_token\":0,"
                 "\"repetition_guard\":false}",
           &r);
    TEST_CHECK(r.status == 400 && body_has(&r, "--max-request-frames"),
               "max_new_tokens 1048576 with the guards off: 400 by the server's limit (%d)", r.status);
    th_resp_free(&r);
    speech(port, "{\"input\":\"Hi.\",\"voice\":\"vivian\",\"max_new_tokens\":1048577}", &r);
    TEST_CHECK(r.status == 400 && body_has(&r, "[1, 1048576]"), "the field's own range is unchanged (%d): %.200s",
               r.status, r.body ? (char *)r.body : "");
    th_resp_free(&r);
    /* at the limit: allowed, and generated to it */
    speech(port, "{\"input\":\"Hi.\",\"voice\":\"vivian\",\"response_format\":\"pcm\",\"temperature\":0,"
                 "\"max_new_tokens\":200,\"repetition_guard\":false}",
           &r);
    const char *fb = th_header(&r, "X-Qtts-Finished-By");
    TEST_CHECK(r.status == 200 && fb && !strcmp(fb, "max_frames") && r.body_len == (size_t)LIMIT * FRAME_BYTES,
               "max_new_tokens at the limit: 200 frames (%d, %s, %zu bytes)", r.status, fb ? fb : "-", r.body_len);
    th_resp_free(&r);
    /* no max_new_tokens, both guards off: the model's own default (8191 frames) would apply; the server's holds */
    speech(port, "{\"input\":\"Hi.\",\"voice\":\"vivian\",\"response_format\":\"pcm\",\"temperature\":0,"
                 "\"guard_frames_per_token\":0,\"repetition_guard\":false}",
           &r);
    fb = th_header(&r, "X-Qtts-Finished-By");
    TEST_CHECK(r.status == 200 && fb && !strcmp(fb, "max_frames") && r.body_len == (size_t)LIMIT * FRAME_BYTES,
               "no max_new_tokens, guards off: ends at the server's 200 frames (%d, %s, %zu frames)", r.status,
               fb ? fb : "-", r.body_len / FRAME_BYTES);
    th_resp_free(&r);
    /* no max_new_tokens, the length guard left on: it still ends the utterance (4 s + 10 frames per token is
       below 200 frames for "Hi.") */
    speech(port, "{\"input\":\"Hi.\",\"voice\":\"vivian\",\"response_format\":\"pcm\",\"temperature\":0,"
                 "\"repetition_guard\":false}",
           &r);
    fb = th_header(&r, "X-Qtts-Finished-By");
    TEST_CHECK(r.status == 200 && fb && !strcmp(fb, "guard:length") && r.body_len < (size_t)LIMIT * FRAME_BYTES,
               "no max_new_tokens, length guard on: the guard ends it (%d, %s, %zu frames)", r.status, fb ? fb : "-",
               r.body_len / FRAME_BYTES);
    th_resp_free(&r);
}

/* One Wyoming event (header line only); everything the server sends back within 10 s or until it closes. */
static size_t wyoming_exchange(int port, const char *line, char *out, size_t cap) {
    out[0] = 0;
    int fd = th_connect(port);
    if (fd < 0 || th_send_all(fd, line, strlen(line))) {
        if (fd >= 0) close(fd);
        return 0;
    }
    size_t len = 0;
    double end = th_now() + 10;
    /* audio payloads hold NUL bytes: search by length */
    while (th_now() < end && len < cap - 1 && !memmem(out, len, "audio-stop", 10) && !memmem(out, len, "\"error\"", 7)) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 100) <= 0) continue;
        ssize_t k = recv(fd, out + len, cap - 1 - len, 0);
        if (k <= 0) break;
        len += (size_t)k;
        out[len] = 0;
    }
    close(fd);
    return len;
}

static void check_wyoming(const th_server *srv) {
    const char *tag = "Wyoming on tcp://127.0.0.1:";
    const char *at = strstr(srv->log, tag);
    int port = at ? atoi(at + strlen(tag)) : 0;
    TEST_CHECK(port > 0, "the Wyoming port is in the log");
    if (port <= 0) return;
    char out[8192];
    wyoming_exchange(port,
                     "{\"type\":\"synthesize\",\"data\":{\"text\":\"Hi.\",\"voice\":{\"name\":\"vivian\"},"
                     "\"qtts\":{\"max_frames\":201}}}\n",
                     out, sizeof out);
    TEST_CHECK(strstr(out, "\"error\"") && strstr(out, "200 frames") && strstr(out, "--max-request-frames") &&
                   !strstr(out, "audio-start"),
               "Wyoming qtts.max_frames 201: an error event naming the limit and the flag: %.300s", out);
    static char big[1 << 20];
    size_t n = wyoming_exchange(port,
                                "{\"type\":\"synthesize\",\"data\":{\"text\":\"Hi.\",\"voice\":{\"name\":\"vivian\"},"
                                "\"qtts\":{\"max_frames\":20}}}\n",
                                big, sizeof big);
    TEST_CHECK(memmem(big, n, "audio-stop", 10) != NULL, "Wyoming qtts.max_frames 20: spoken (%zu bytes back)", n);
}

/* Headers, then the body one byte every 400 ms: each gap is far inside --idle-timeout, the whole is not inside
   --body-timeout. */
static void check_body_timeout(int port) {
    static const char body[] = "{\"input\":\"Hi.\",\"voice\":\"vivian\",\"response_format\":\"pcm\"}";
    char head[256], out[4096];
    snprintf(head, sizeof head, "POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             "Content-Length: %zu\r\n\r\n", strlen(body));
    int fd = th_connect(port);
    TEST_CHECK(fd >= 0 && !th_send_all(fd, head, strlen(head)), "slow body: connected");
    if (fd < 0) return;
    size_t len = 0, sent = 0;
    int closed = 0;
    double t0 = th_now(), t_answer = -1;
    out[0] = 0;
    /* 57 bytes at 2.5 per second: 23 s to send it all, against a 2 s deadline */
    while (sent < strlen(body) && !closed) {
        if (send(fd, body + sent, 1, MSG_NOSIGNAL) == 1) sent++;
        double until = th_now() + 0.4;
        while (th_now() < until) {
            struct pollfd p = {.fd = fd, .events = POLLIN};
            if (poll(&p, 1, 50) <= 0) continue;
            ssize_t k = recv(fd, out + len, sizeof out - 1 - len, 0);
            if (k <= 0) {
                closed = 1;
                break;
            }
            if (t_answer < 0) t_answer = th_now() - t0;
            len += (size_t)k;
            out[len] = 0;
        }
    }
    close(fd);
    TEST_CHECK(!strncmp(out, "HTTP/1.1 408", 12) && strstr(out, "--body-timeout") && closed &&
                   sent < strlen(body),
               "a body trickled past --body-timeout %d: 408 naming the flag, then closed (%zu of %zu bytes sent, "
               "answer after %.1f s, closed %d): %.300s",
               BODY_TIMEOUT, sent, strlen(body), t_answer, closed, out);
    printf("  slow body: answered after %.1f s with %zu of %zu bytes sent\n", t_answer, sent, strlen(body));
    th_resp r;
    speech(port, "{\"input\":\"Hi.\",\"voice\":\"vivian\",\"response_format\":\"pcm\",\"max_new_tokens\":3}", &r);
    TEST_CHECK(r.status == 200 && r.body_len == 3 * FRAME_BYTES, "a body sent at once: 200 (%d)", r.status);
    th_resp_free(&r);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    struct stat st;
    if (stat(CV_MODEL "/config.json", &st)) {
        TEST_CHECK(0, "tiny CustomVoice model present under %s", QTTS_GOLDEN_DIR);
        return test_finish("test_server_limits");
    }
    char tmp[] = "/tmp/qtts_limits_XXXXXX", dir[512];
    TEST_CHECK(mkdtemp(tmp) != NULL, "temporary folder");
    snprintf(dir, sizeof dir, "%s/endless", tmp);
    if (endless_model_write(CV_MODEL, dir)) {
        TEST_CHECK(0, "endless model copy in %s", dir);
        return test_finish("test_server_limits");
    }
    th_server srv;
    const char *args[] = {"-m", dir, "--threads", "2", "--max-request-frames", "200", "--body-timeout", "2",
                          "--idle-timeout", "30", "--wyoming-port", "0", NULL};
    if (th_start(&srv, args, 120)) {
        TEST_CHECK(0, "server starts: %s", srv.log);
    } else {
        check_frames(srv.port);
        check_wyoming(&srv);
        check_body_timeout(srv.port);
    }
    TEST_CHECK(th_stop(&srv, 30) == 0, "server exits cleanly: %s", srv.log);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    TEST_CHECK(system(cmd) == 0, "temporary folder removed");
    return test_finish("test_server_limits");
}
