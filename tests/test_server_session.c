/* The server session (src/server/session.c) under its front ends, in one
 * process over one engine (the tiny CustomVoice model), an HTTP server and
 * a Wyoming server side by side:
 *  - the same request and seed give the same 16-bit PCM bytes over HTTP
 *    (buffered pcm, streamed pcm, the data of a buffered wav) and Wyoming
 *    (the audio-chunk payloads): one session, one float->s16 conversion;
 *  - waiters sleep on the engine's notifier, never on a timer: a Wyoming
 *    synthesis whose text is still incomplete (the engine waits for more)
 *    wakes its connection thread zero times, and a whole synthesis wakes
 *    it at most once per engine push (a push is at least one frame) plus
 *    the client's messages; the same for a WebSocket utterance, and the
 *    HTTP stream pump for a streamed response (qtts_stream_wakeups_total in
 *    /metrics). */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <time.h>

#include "harness.h"
#include "qtts.h"
#include "server/server.h"
#include "server/wyoming.h"
#include "test_server_http.h"

#define TEXT "Hello there, this is a test."
#define SEED 7
#define MAX_FRAMES 24
#define FRAME_SAMPLES 1920 /* 24 kHz / 12.5 Hz */

/* ---- a minimal Wyoming client: JSON header line, data block, payload ---- */

static int wy_send(int fd, const char *type, const char *data_json) {
    char line[2048];
    int n = snprintf(line, sizeof line, "{\"type\":\"%s\",\"data\":%s}\n", type, data_json ? data_json : "{}");
    return n > 0 && (size_t)n < sizeof line ? th_send_all(fd, line, (size_t)n) : -1;
}

static int read_exact(int fd, void *p, size_t n, double end) {
    unsigned char *b = p;
    while (n) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int left = (int)((end - th_now()) * 1000);
        if (left <= 0 || poll(&pf, 1, left) <= 0) return -1;
        ssize_t k = recv(fd, b, n, 0);
        if (k <= 0) return -1;
        b += k;
        n -= (size_t)k;
    }
    return 0;
}

/* One event: its type, and its payload appended to pcm (when pcm). 0 or -1. */
static int wy_recv(int fd, char *type, size_t type_cap, unsigned char **pcm, size_t *pcm_len, double timeout_s) {
    double end = th_now() + timeout_s;
    char line[4096];
    size_t n = 0;
    for (;;) {
        if (n + 1 >= sizeof line || read_exact(fd, line + n, 1, end)) return -1;
        if (line[n++] == '\n') break;
    }
    line[n] = 0;
    cJSON *h = cJSON_Parse(line);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(h, "type");
    const cJSON *dl = cJSON_GetObjectItemCaseSensitive(h, "data_length");
    const cJSON *pl = cJSON_GetObjectItemCaseSensitive(h, "payload_length");
    int rc = cJSON_IsString(t) ? 0 : -1;
    if (!rc) snprintf(type, type_cap, "%s", t->valuestring);
    size_t data_len = cJSON_IsNumber(dl) ? (size_t)dl->valuedouble : 0;
    size_t payload_len = cJSON_IsNumber(pl) ? (size_t)pl->valuedouble : 0;
    cJSON_Delete(h);
    unsigned char *tmp = malloc(data_len + payload_len + 1);
    if (!tmp || read_exact(fd, tmp, data_len + payload_len, end)) rc = -1;
    if (!rc && pcm && payload_len) {
        unsigned char *p = realloc(*pcm, *pcm_len + payload_len);
        if (p) {
            memcpy(p + *pcm_len, tmp + data_len, payload_len);
            *pcm = p;
            *pcm_len += payload_len;
        } else {
            rc = -1;
        }
    }
    free(tmp);
    return rc;
}

/* Reads events up to audio-stop (and synthesize-stopped when streamed);
 * the PCM in *pcm. Returns the number of audio-chunk events, or -1. */
static int wy_collect(int fd, int streamed, unsigned char **pcm, size_t *pcm_len) {
    int chunks = 0;
    char type[64];
    for (;;) {
        if (wy_recv(fd, type, sizeof type, pcm, pcm_len, 60)) return -1;
        if (!strcmp(type, "error")) return -1;
        if (!strcmp(type, "audio-chunk")) chunks++;
        if (!strcmp(type, "audio-stop") && !streamed) return chunks;
        if (!strcmp(type, "synthesize-stopped")) return chunks;
    }
}

/* ---- a minimal WebSocket client (RFC 6455; client frames masked with a zero key) ---- */

static int ws_open(int port) {
    int fd = th_connect(port);
    const char *req = "GET /v1/audio/speech/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                      "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                      "Sec-WebSocket-Version: 13\r\n\r\n";
    if (fd < 0 || th_send_all(fd, req, strlen(req))) return -1;
    char head[2048];
    size_t n = 0;
    double end = th_now() + 10;
    while (n + 1 < sizeof head && !(n >= 4 && !memcmp(head + n - 4, "\r\n\r\n", 4)))
        if (read_exact(fd, head + n++, 1, end)) break;
    head[n] = 0;
    if (!strstr(head, " 101 ")) {
        close(fd);
        return -1;
    }
    return fd;
}

static int ws_send_text(int fd, const char *text) {
    size_t n = strlen(text);
    unsigned char h[8] = {0x81, (unsigned char)(0x80 | n), 0, 0, 0, 0};
    return n < 126 && !th_send_all(fd, h, 6) && !th_send_all(fd, text, n) ? 0 : -1;
}

/* One server frame: its opcode, payload in *p (*n bytes, caller frees); -1 on failure. */
static int ws_recv(int fd, unsigned char **p, size_t *n) {
    double end = th_now() + 60;
    unsigned char h[2], ext[8];
    if (read_exact(fd, h, 2, end)) return -1;
    uint64_t len = h[1] & 0x7F;
    int k = len == 126 ? 2 : len == 127 ? 8 : 0;
    if (k && read_exact(fd, ext, (size_t)k, end)) return -1;
    if (k) len = 0;
    for (int i = 0; i < k; i++) len = len << 8 | ext[i];
    *p = malloc(len + 1);
    if (!*p || read_exact(fd, *p, len, end)) return -1;
    (*p)[len] = 0;
    *n = len;
    return h[0] & 0x0F;
}

/* Reads frames until a text frame containing want; audio bytes are added to *audio. 0 or -1. */
static int ws_until(int fd, const char *want, size_t *audio) {
    for (;;) {
        unsigned char *p = NULL;
        size_t n = 0;
        int op = ws_recv(fd, &p, &n);
        int hit = op == 1 && strstr((char *)p, want), bad = op < 0 || (op == 1 && strstr((char *)p, "\"error\""));
        if (op == 2) *audio += n;
        free(p);
        if (bad) return -1;
        if (hit) return 0;
    }
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- the cases ---- */

/* The speech request of every case; extra: more JSON members or "". */
static void speech_body(char *out, size_t cap, const char *format, const char *extra) {
    snprintf(out, cap,
             "{\"model\":\"qwen3-tts\",\"input\":\"%s\",\"voice\":\"ryan\",\"response_format\":\"%s\",\"seed\":%d,"
             "\"max_new_tokens\":%d%s}",
             TEXT, format, SEED, MAX_FRAMES, extra);
}

static void same_bytes(int http_port, int wy_port) {
    char body[640];
    th_resp pcm = {0}, streamed = {0}, wav = {0};
    speech_body(body, sizeof body, "pcm", "");
    TEST_CHECK(th_post_json(http_port, "/v1/audio/speech", NULL, body, &pcm, 60) == 0 && pcm.status == 200,
               "HTTP pcm: status %d", pcm.status);
    speech_body(body, sizeof body, "pcm", ",\"stream_format\":\"audio\"");
    TEST_CHECK(th_post_json(http_port, "/v1/audio/speech", NULL, body, &streamed, 60) == 0 && streamed.status == 200,
               "HTTP streamed pcm: status %d", streamed.status);
    speech_body(body, sizeof body, "wav", "");
    TEST_CHECK(th_post_json(http_port, "/v1/audio/speech", NULL, body, &wav, 60) == 0 && wav.status == 200,
               "HTTP wav: status %d", wav.status);

    int fd = th_connect(wy_port);
    unsigned char *wy = NULL;
    size_t wy_len = 0;
    char data[512];
    snprintf(data, sizeof data, "{\"text\":\"%s\",\"voice\":{\"name\":\"ryan\"},\"qtts\":{\"seed\":%d,\"max_frames\":%d}}",
             TEXT, SEED, MAX_FRAMES);
    TEST_CHECK(fd >= 0 && wy_send(fd, "synthesize", data) == 0 && wy_collect(fd, 0, &wy, &wy_len) > 0,
               "Wyoming synthesize");
    if (fd >= 0) close(fd);

    TEST_CHECK(pcm.body_len > 0 && pcm.body_len % 2 == 0, "HTTP pcm has samples (%zu bytes)", pcm.body_len);
    TEST_CHECK(wy_len == pcm.body_len && wy && !memcmp(wy, pcm.body, wy_len),
               "Wyoming and HTTP pcm: the same bytes (%zu and %zu)", wy_len, pcm.body_len);
    TEST_CHECK(streamed.body_len == pcm.body_len && !memcmp(streamed.body, pcm.body, pcm.body_len),
               "streamed and buffered HTTP pcm: the same bytes (%zu and %zu)", streamed.body_len, pcm.body_len);
    const unsigned char *d = NULL;
    int rate = 0;
    long n = wav.body ? th_wav_samples(wav.body, wav.body_len, &d, &rate) : -1;
    TEST_CHECK(n * 2 == (long)pcm.body_len && rate == 24000 && !memcmp(d, pcm.body, pcm.body_len),
               "the wav's data is the pcm (%ld samples at %d Hz)", n, rate);
    free(wy);
    th_resp_free(&pcm);
    th_resp_free(&streamed);
    th_resp_free(&wav);
}

static void wyoming_wakeups(qtts_wyoming *w, int wy_port) {
    int fd = th_connect(wy_port);
    TEST_CHECK(fd >= 0, "connect");
    if (fd < 0) return;
    char data[256];
    snprintf(data, sizeof data, "{\"voice\":{\"name\":\"ryan\"},\"qtts\":{\"seed\":%d,\"max_frames\":%d}}", SEED,
             MAX_FRAMES);
    /* "Hello" alone is not a stable word yet: the request is submitted and the engine waits for more text. */
    TEST_CHECK(wy_send(fd, "synthesize-start", data) == 0 && wy_send(fd, "synthesize-chunk", "{\"text\":\"Hello\"}") == 0,
               "synthesize-start, one chunk");
    sleep_ms(300); /* the connection thread takes the events and goes to sleep */
    uint64_t w0 = qtts_wyoming_stream_wakeups(w);
    sleep_ms(500);
    uint64_t w1 = qtts_wyoming_stream_wakeups(w);
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    TEST_CHECK(poll(&pf, 1, 0) == 0, "no audio while the text is incomplete");
    TEST_CHECK(w1 == w0, "an idle synthesis wakes its connection thread %llu times in 0.5 s (want 0)",
               (unsigned long long)(w1 - w0));
    unsigned char *pcm = NULL;
    size_t len = 0;
    int chunks = -1;
    if (!wy_send(fd, "synthesize-chunk", "{\"text\":\" there, this is a test.\"}") &&
        !wy_send(fd, "synthesize-stop", NULL))
        chunks = wy_collect(fd, 1, &pcm, &len);
    uint64_t w2 = qtts_wyoming_stream_wakeups(w);
    size_t frames = len / 2 / FRAME_SAMPLES + 1;
    /* engine pushes (<= frames) + the end + the two client events, with room for a split TCP segment each */
    uint64_t bound = frames + 1 + 4;
    TEST_CHECK(chunks > 0, "streamed synthesis: %d audio chunks", chunks);
    TEST_CHECK(w2 - w1 <= bound, "a synthesis of %zu frames woke its connection thread %llu times (at most %llu)",
               frames, (unsigned long long)(w2 - w1), (unsigned long long)bound);
    printf("wyoming: idle %llu wake-ups in 0.5 s; %llu for %zu frames\n", (unsigned long long)(w1 - w0),
           (unsigned long long)(w2 - w1), frames);
    free(pcm);
    close(fd);
}

static void http_wakeups(int http_port) {
    double w0 = th_metric(http_port, "qtts_stream_wakeups_total");
    char body[640];
    speech_body(body, sizeof body, "pcm", ",\"stream_format\":\"audio\"");
    th_resp r = {0};
    TEST_CHECK(th_post_json(http_port, "/v1/audio/speech", NULL, body, &r, 60) == 0 && r.status == 200,
               "HTTP streamed: status %d", r.status);
    double w1 = th_metric(http_port, "qtts_stream_wakeups_total");
    size_t frames = r.body_len / 2 / FRAME_SAMPLES + 1;
    /* per push: the notification and the reader's next suspension; the end likewise */
    double bound = 2.0 * (double)(frames + 1) + 2;
    TEST_CHECK(w0 >= 0 && w1 - w0 <= bound, "a streamed response of %zu frames woke the pump %.0f times (at most %.0f)",
               frames, w1 - w0, bound);
    sleep_ms(300);
    double w2 = th_metric(http_port, "qtts_stream_wakeups_total");
    TEST_CHECK(w2 == w1, "the pump sleeps with no request: %.0f wake-ups in 0.3 s", w2 - w1);
    printf("http pump: %.0f wake-ups for %zu frames\n", w1 - w0, frames);
    th_resp_free(&r);
}

static void ws_wakeups(int http_port) {
    int fd = ws_open(http_port);
    TEST_CHECK(fd >= 0, "WebSocket upgrade");
    if (fd < 0) return;
    size_t audio = 0;
    char config[160];
    snprintf(config, sizeof config, "{\"type\":\"session.config\",\"voice\":\"ryan\",\"seed\":%d}", SEED);
    TEST_CHECK(!ws_send_text(fd, config) && !ws_send_text(fd, "{\"type\":\"input.text\",\"text\":\"Hello\"}") &&
                   !ws_until(fd, "audio.start", &audio),
               "an utterance starts with incomplete text");
    sleep_ms(300);
    double w0 = th_metric(http_port, "qtts_stream_wakeups_total");
    sleep_ms(500);
    double w1 = th_metric(http_port, "qtts_stream_wakeups_total");
    TEST_CHECK(w0 >= 0 && w1 == w0, "an idle utterance wakes its WebSocket session %.0f times in 0.5 s (want 0)",
               w1 - w0);
    int ok = !ws_send_text(fd, "{\"type\":\"input.text\",\"text\":\" there, this is a test.\"}") &&
             !ws_send_text(fd, "{\"type\":\"input.done\"}") && !ws_until(fd, "audio.done", &audio);
    double w2 = th_metric(http_port, "qtts_stream_wakeups_total");
    size_t frames = audio / 2 / FRAME_SAMPLES + 1;
    double bound = (double)frames + 1 + 4; /* engine pushes, the end, the client's two messages (split or not) */
    TEST_CHECK(ok && audio > 0, "the utterance ends with audio (%zu bytes)", audio);
    TEST_CHECK(w2 - w1 <= bound, "an utterance of %zu frames woke its session %.0f times (at most %.0f)", frames,
               w2 - w1, bound);
    printf("websocket: idle %.0f wake-ups in 0.5 s; %.0f for %zu frames\n", w1 - w0, w2 - w1, frames);
    close(fd);
}

int main(void) {
    char path[1024];
    qtts_engine_params ep;
    qtts_engine_params_default(&ep);
    ep.model_path = golden_path(path, sizeof path, "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny");
    ep.n_threads = 2;
    qtts_error err = {0};
    qtts_engine *e = qtts_engine_create(&ep, &err);
    TEST_CHECK(e != NULL, "engine: %s", err.message);
    if (!e) return test_finish("test_server_session");

    char why[512] = "";
    qtts_server_params sp;
    qtts_server_params_default(&sp);
    sp.port = 0;
    sp.http_threads = 2;
    sp.ws_sessions = 1;
    qtts_server *s = qtts_server_start(e, &sp, why, sizeof why);
    TEST_CHECK(s != NULL, "HTTP server: %s", why);
    qtts_wyoming_params wp;
    qtts_wyoming_params_default(&wp);
    wp.port = 0;
    wp.max_connections = 2;
    qtts_wyoming *w = qtts_wyoming_start(e, &wp, why, sizeof why);
    TEST_CHECK(w != NULL, "Wyoming server: %s", why);

    if (s && w) {
        same_bytes(qtts_server_port(s), qtts_wyoming_port(w));
        wyoming_wakeups(w, qtts_wyoming_port(w));
        http_wakeups(qtts_server_port(s));
        ws_wakeups(qtts_server_port(s));
    }
    if (w) qtts_wyoming_stop(w, 1000);
    if (s) {
        qtts_server_drain(s, 1000);
        qtts_server_free(s);
    }
    qtts_engine_free(e);
    return test_finish("test_server_session");
}
