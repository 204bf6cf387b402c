/* Seeds go round trip: every seed the server or qtts say reports can be sent
 * back (HTTP here; WebSocket in test_server_ws, Wyoming in test_wyoming) and
 * gives the same audio. Drawn seeds stay below 2^53, where JSON numbers are
 * exact in every client (JavaScript's too); larger seeds are accepted as
 * decimal strings and reported as exact integers. */
#include <inttypes.h>
#include <sys/stat.h>

#include "harness.h"
#include "test_server_http.h"

#define CV_MODEL QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"

static unsigned long long seed_header(const th_resp *r) {
    const char *h = th_header(r, "X-Qtts-Seed");
    return h ? strtoull(h, NULL, 10) : 0;
}

static void speech(int port, const char *seed_json, th_resp *r) {
    char body[256];
    snprintf(body, sizeof body,
             "{\"input\":\"Seeds go round trip.\",\"voice\":\"ryan\",\"response_format\":\"wav\",\"max_new_tokens\":8%s%s}",
             seed_json ? ",\"seed\":" : "", seed_json ? seed_json : "");
    th_post_json(port, "/v1/audio/speech", NULL, body, r, 60);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    struct stat st;
    if (stat(CV_MODEL "/config.json", &st)) {
        TEST_CHECK(0, "tiny CustomVoice model present under %s", QTTS_GOLDEN_DIR);
        return test_finish("test_server_seeds");
    }
    th_server srv;
    const char *args[] = {"-m", CV_MODEL, "--threads", "2", NULL};
    if (th_start(&srv, args, 120) == 0) {
        th_resp a, b;
        for (int i = 0; i < 8; i++) { /* a few draws: each below 2^53 */
            speech(srv.port, NULL, &a);
            unsigned long long s = seed_header(&a);
            TEST_CHECK(a.status == 200 && s <= 9007199254740991ull, "drawn seed %llu is below 2^53", s);
            if (i == 0) {
                char js[32];
                snprintf(js, sizeof js, "%llu", s);
                speech(srv.port, js, &b);
                TEST_CHECK(b.status == 200 && seed_header(&b) == s && b.body_len == a.body_len &&
                               !memcmp(a.body, b.body, a.body_len),
                           "the reported seed sent back gives the same audio (%d %s)", b.status,
                           b.status == 200 ? "" : (char *)b.body);
                th_resp_free(&b);
            }
            th_resp_free(&a);
        }
        speech(srv.port, "\"18446744073709551615\"", &a);
        TEST_CHECK(a.status == 200 && th_header(&a, "X-Qtts-Seed") &&
                       !strcmp(th_header(&a, "X-Qtts-Seed"), "18446744073709551615"),
                   "a 64-bit seed as a string is used and reported exactly (%d %s)", a.status,
                   a.status == 200 ? "" : (char *)a.body);
        th_resp_free(&a);
        speech(srv.port, "9007199254740991", &a);
        TEST_CHECK(a.status == 200 && seed_header(&a) == 9007199254740991ull, "2^53-1 as a number (%d)", a.status);
        th_resp_free(&a);
        speech(srv.port, "18446744073709551615", &a);
        TEST_CHECK(a.status == 400 && a.body && strstr((char *)a.body, "as a string"),
                   "a number above 2^53 (digits lost) says to send a string: %d %s", a.status,
                   a.body ? (char *)a.body : "");
        th_resp_free(&a);
        speech(srv.port, "\"12x\"", &a);
        TEST_CHECK(a.status == 400, "a string that is not a decimal integer: 400 (%d)", a.status);
        th_resp_free(&a);
    } else {
        TEST_CHECK(0, "server starts: %s", srv.log);
    }
    TEST_CHECK(th_stop(&srv, 30) == 0, "server exits cleanly: %s", srv.log);

    /* qtts say prints the seed it drew: below 2^53 too, so the API takes it back */
    char cmd[1024], line[256] = "";
    snprintf(cmd, sizeof cmd, "'%s' say -m '%s' --speaker ryan --max-frames 3 -o /dev/null --format wav 'Hi.' 2>&1", QTTS_BINARY,
             CV_MODEL);
    FILE *p = popen(cmd, "r");
    unsigned long long drawn = 0;
    while (p && fgets(line, sizeof line, p))
        if (!strncmp(line, "qtts: seed ", 11)) drawn = strtoull(line + 11, NULL, 10);
    if (p) pclose(p);
    TEST_CHECK(drawn > 0 && drawn <= 9007199254740991ull, "qtts say's drawn seed %llu is below 2^53", drawn);
    return test_finish("test_server_seeds");
}
