/* Open WebUI and SillyTavern with their default settings against `qtts serve`:
 * their first requests byte for byte as they send them (Open WebUI's backend
 * lists voices and models with python-requests and no Authorization header,
 * then POSTs speech with aiohttp and `Bearer <key>`, an empty key when none
 * is set; SillyTavern's server proxies node-fetch POSTs with its default
 * voice list alloy,echo,fable,onyx,nova,shimmer, split on ',' without
 * trimming). Both start with OpenAI's voice names, which the default voice
 * aliases map: speakers on CustomVoice, the description on VoiceDesign, a
 * clear 400 on a Base server without such voices. With --api-key the two
 * listings answer only with --public-lists. */
#include <cjson/cJSON.h>
#include <sys/stat.h>

#include "harness.h"
#include "test_server_http.h"

#define CV_MODEL QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"
#define VD_MODEL QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-1.7B-VoiceDesign-tiny"
#define BASE_MODEL QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-0.6B-Base-tiny"
#define KEY "sk-test123"

/* Sends raw (a whole request) on a new connection and reads the reply until the server closes it. */
static int raw_request(int port, const char *raw, size_t n, th_resp *r) {
    memset(r, 0, sizeof *r);
    int fd = th_connect(port);
    if (fd < 0) return -1;
    th_send_all(fd, raw, n);
    size_t cap = 1 << 16, len = 0;
    unsigned char *buf = malloc(cap);
    double end = th_now() + 120;
    while (buf && th_now() < end) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 100) <= 0) continue;
        if (cap - len < 4096) {
            unsigned char *q = realloc(buf, cap * 2);
            if (!q) break;
            buf = q;
            cap *= 2;
        }
        ssize_t k = recv(fd, buf + len, cap - len, 0);
        if (k <= 0) break;
        len += (size_t)k;
    }
    close(fd);
    if (!buf) return -1;
    th_parse(buf, len, r);
    free(buf);
    return r->status ? 0 : -1;
}

/* python-requests' GET as Open WebUI's backend sends it (routers/audio.py: requests.get(f"{base}/audio/voices")). */
static void owui_get(int port, const char *path, th_resp *r) {
    char req[1024];
    int n = snprintf(req, sizeof req,
                     "GET /v1%s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUser-Agent: python-requests/2.32.3\r\n"
                     "Accept-Encoding: gzip, deflate\r\nAccept: */*\r\nConnection: close\r\n\r\n",
                     path, port);
    raw_request(port, req, (size_t)n, r);
}

/* aiohttp's POST (json=payload: json.dumps separators), Authorization "Bearer {TTS_OPENAI_API_KEY}". */
static void owui_speech(int port, const char *key, const char *voice, th_resp *r) {
    char body[512], req[2048];
    int bn = snprintf(body, sizeof body, "{\"input\": \"Hello from Open WebUI.\", \"voice\": \"%s\", \"model\": \"tts-1\"}",
                      voice);
    int n = snprintf(req, sizeof req,
                     "POST /v1/audio/speech HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
                     "Content-Type: application/json\r\nAccept: */*\r\nAccept-Encoding: gzip, deflate\r\n"
                     "User-Agent: Python/3.11 aiohttp/3.11.11\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
                     port, key, bn, body);
    raw_request(port, req, (size_t)n, r);
}

/* node-fetch@2 as SillyTavern's server proxies it (src/endpoints/openai.js). */
static void st_speech(int port, const char *key, const char *voice, th_resp *r) {
    char body[512], req[2048];
    int bn = snprintf(body, sizeof body,
                      "{\"input\":\"Hello from SillyTavern.\",\"response_format\":\"mp3\",\"voice\":\"%s\","
                      "\"speed\":1,\"model\":\"tts-1\"}",
                      voice);
    int n = snprintf(req, sizeof req,
                     "POST /v1/audio/speech HTTP/1.1\r\nContent-Type: application/json\r\nAuthorization: Bearer %s\r\n"
                     "Accept: */*\r\nContent-Length: %d\r\nUser-Agent: node-fetch/1.0 "
                     "(+https://github.com/bitinn/node-fetch)\r\nAccept-Encoding: gzip,deflate\r\n"
                     "Connection: close\r\nHost: 127.0.0.1:%d\r\n\r\n%s",
                     key, bn, port, body);
    raw_request(port, req, (size_t)n, r);
}

static int is_mp3(const th_resp *r) {
    const unsigned char *b = r->body;
    return r->status == 200 && r->body_len > 4 &&
           (!memcmp(b, "ID3", 3) || (b[0] == 0xFF && (b[1] & 0xE0) == 0xE0));
}

static const char *body_of(const th_resp *r) { return r->body ? (const char *)r->body : "(none)"; }

/* The alias entry of name in a /v1/audio/voices answer: its alias_of (or instructions), or NULL. */
static char *listed_alias(const th_resp *r, const char *name, const char *field) {
    cJSON *j = r->body ? cJSON_ParseWithLength((const char *)r->body, r->body_len) : NULL;
    char *out = NULL;
    const cJSON *v;
    cJSON_ArrayForEach(v, cJSON_GetObjectItem(j, "voices")) {
        const cJSON *id = cJSON_GetObjectItem(v, "id"), *ty = cJSON_GetObjectItem(v, "type");
        const cJSON *f = cJSON_GetObjectItem(v, field);
        if (cJSON_IsString(id) && !strcmp(id->valuestring, name) && cJSON_IsString(ty) &&
            !strcmp(ty->valuestring, "alias") && cJSON_IsString(f))
            out = strdup(f->valuestring);
    }
    cJSON_Delete(j);
    return out;
}

/* Open WebUI then SillyTavern, first requests with their defaults; key "" = the server has none. */
static void replay_clients(int port, const char *key, const char *what) {
    th_resp r;
    owui_get(port, "/audio/voices", &r);
    char *of = listed_alias(&r, "alloy", "alias_of");
    TEST_CHECK(r.status == 200 && of && !strcmp(of, "vivian"),
               "%s: Open WebUI's /audio/voices without a key lists alloy -> vivian (%d %s)", what, r.status,
               body_of(&r));
    free(of);
    th_resp_free(&r);
    owui_get(port, "/audio/models", &r);
    TEST_CHECK(r.status == 200 && r.body && strstr((char *)r.body, "\"models\""),
               "%s: Open WebUI's /audio/models without a key (%d %s)", what, r.status, body_of(&r));
    th_resp_free(&r);
    owui_speech(port, key, "alloy", &r);
    TEST_CHECK(is_mp3(&r), "%s: Open WebUI's default voice alloy gets mp3 (%d %s)", what, r.status,
               r.status == 200 ? "" : body_of(&r));
    th_resp_free(&r);
    /* SillyTavern's default list, and a list typed "vivian, ryan" */
    const char *st_voices[] = {"alloy", "echo", "fable", "onyx", "nova", "shimmer", " ryan"};
    for (size_t i = 0; i < sizeof st_voices / sizeof st_voices[0]; i++) {
        st_speech(port, key, st_voices[i], &r);
        TEST_CHECK(is_mp3(&r), "%s: SillyTavern voice '%s' gets mp3 (%d %s)", what, st_voices[i], r.status,
                   r.status == 200 ? "" : body_of(&r));
        th_resp_free(&r);
    }
}

static void check_error(const th_resp *r, int status, const char *needle, const char *what) {
    TEST_CHECK(r->status == status && r->body && strstr((const char *)r->body, needle), "%s: want %d with '%s', got %d %s",
               what, status, needle, r->status, body_of(r));
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    struct stat st;
    if (stat(CV_MODEL "/config.json", &st) || stat(VD_MODEL "/config.json", &st) ||
        stat(BASE_MODEL "/config.json", &st)) {
        TEST_CHECK(0, "tiny golden models present under %s", QTTS_GOLDEN_DIR);
        return test_finish("test_server_clients");
    }
    th_server srv;
    th_resp r;
    /* CustomVoice, no key: what a first-time user runs */
    const char *plain[] = {"-m", CV_MODEL, "--threads", "2", NULL};
    if (th_start(&srv, plain, 120) == 0) {
        replay_clients(srv.port, "", "no key");
        /* NUL: a raw NUL byte inside a string would cut the text silently; a literal backslash before
           "u0000" is ordinary text */
        const char nul[] = "{\"input\":\"Hi\0there\",\"voice\":\"ryan\",\"response_format\":\"wav\"}";
        th_request(srv.port, "POST", "/v1/audio/speech", NULL, nul, sizeof nul - 1, &r, 60);
        check_error(&r, 400, "NUL", "a raw NUL byte in 'input'");
        th_resp_free(&r);
        const char *lit = "{\"input\":\"Type C:\\\\u0000 literally\",\"voice\":\"ryan\",\"response_format\":\"wav\","
                          "\"max_new_tokens\":3}";
        th_post_json(srv.port, "/v1/audio/speech", NULL, lit, &r, 60);
        TEST_CHECK(r.status == 200, "a literal backslash before u0000 is text (%d %s)", r.status,
                   r.status == 200 ? "" : body_of(&r));
        th_resp_free(&r);
        /* region tags name the language, as on Wyoming and in qtts say */
        th_post_json(srv.port, "/v1/audio/speech", NULL,
                     "{\"input\":\"Hi.\",\"voice\":\"ryan\",\"language\":\"en-US\",\"max_new_tokens\":3}", &r, 60);
        TEST_CHECK(r.status == 200, "language en-US (%d %s)", r.status, r.status == 200 ? "" : body_of(&r));
        th_resp_free(&r);
        th_request(srv.port, "DELETE", "/v1/audio/voices/Ryan", NULL, NULL, 0, &r, 30);
        check_error(&r, 409, "built-in speakers cannot be deleted", "DELETE of a built-in speaker");
        th_resp_free(&r);
        /* a second server on the same port: one qtts line, no unprefixed libmicrohttpd line */
        char port[16];
        snprintf(port, sizeof port, "%d", srv.port);
        const char *again[] = {"-m", CV_MODEL, "--threads", "1", "--port", port, NULL};
        th_server second;
        TEST_CHECK(th_start(&second, again, 60) != 0 && strstr(second.log, "qtts: cannot listen") &&
                       !strstr(second.log, "Failed to bind"),
                   "a port in use: only qtts's own message: %s", second.log);
        th_stop(&second, 10);
    } else {
        TEST_CHECK(0, "server starts: %s", srv.log);
    }
    TEST_CHECK(th_stop(&srv, 30) == 0, "server exits cleanly: %s", srv.log);

    /* with a key the listings stay closed unless --public-lists */
    const char *keyed[] = {"-m", CV_MODEL, "--threads", "2", "--api-key", KEY, NULL};
    if (th_start(&srv, keyed, 120) == 0) {
        owui_get(srv.port, "/audio/voices", &r);
        TEST_CHECK(r.status == 401, "--api-key without --public-lists: the listing needs the key (%d)", r.status);
        th_resp_free(&r);
    } else {
        TEST_CHECK(0, "server starts: %s", srv.log);
    }
    TEST_CHECK(th_stop(&srv, 30) == 0, "server exits cleanly: %s", srv.log);
    const char *open_lists[] = {"-m", CV_MODEL, "--threads", "2", "--api-key", KEY, "--public-lists", NULL};
    if (th_start(&srv, open_lists, 120) == 0) {
        replay_clients(srv.port, KEY, "--api-key --public-lists");
        owui_speech(srv.port, "", "alloy", &r);
        TEST_CHECK(r.status == 401, "--public-lists: speech still needs the key (%d)", r.status);
        th_resp_free(&r);
        char req[512];
        int n = snprintf(req, sizeof req,
                         "POST /v1/audio/voices HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         "Content-Length: 2\r\nConnection: close\r\n\r\n{}");
        raw_request(srv.port, req, (size_t)n, &r);
        TEST_CHECK(r.status == 401, "--public-lists: registering a voice still needs the key (%d)", r.status);
        th_resp_free(&r);
    } else {
        TEST_CHECK(0, "server starts: %s", srv.log);
    }
    TEST_CHECK(th_stop(&srv, 30) == 0, "server exits cleanly: %s", srv.log);

    /* --voice-alias replaces a default; --no-voice-aliases drops the rest */
    const char *custom[] = {"-m", CV_MODEL, "--threads", "2", "--no-voice-aliases", "--voice-alias", "alloy=ryan",
                            "--voice-alias", "narrator=Aiden", NULL};
    if (th_start(&srv, custom, 120) == 0) {
        owui_get(srv.port, "/audio/voices", &r);
        char *a = listed_alias(&r, "alloy", "alias_of"), *b = listed_alias(&r, "narrator", "alias_of"),
             *c = listed_alias(&r, "echo", "alias_of");
        TEST_CHECK(a && !strcmp(a, "ryan") && b && !strcmp(b, "aiden") && !c,
                   "configured aliases listed, defaults dropped: %s", body_of(&r));
        free(a);
        free(b);
        free(c);
        th_resp_free(&r);
        st_speech(srv.port, "", "narrator", &r);
        TEST_CHECK(is_mp3(&r), "a configured alias speaks (%d %s)", r.status, body_of(&r));
        th_resp_free(&r);
        st_speech(srv.port, "", "echo", &r);
        check_error(&r, 400, "--voice-alias echo=", "--no-voice-aliases: echo");
        th_resp_free(&r);
    } else {
        TEST_CHECK(0, "server starts: %s", srv.log);
    }
    TEST_CHECK(th_stop(&srv, 30) == 0, "server exits cleanly: %s", srv.log);

    /* VoiceDesign: the alias's description is the instruction */
    const char *vd[] = {"-m", VD_MODEL, "--threads", "2", NULL};
    if (th_start(&srv, vd, 120) == 0) {
        owui_get(srv.port, "/audio/voices", &r);
        char *d = listed_alias(&r, "onyx", "instructions");
        TEST_CHECK(d && strstr(d, "deep"), "VoiceDesign lists onyx with its description: %s", body_of(&r));
        free(d);
        th_resp_free(&r);
        owui_speech(srv.port, "", "onyx", &r);
        TEST_CHECK(is_mp3(&r), "VoiceDesign: Open WebUI's request with onyx gets mp3 (%d %s)", r.status,
                   r.status == 200 ? "" : body_of(&r));
        th_resp_free(&r);
    } else {
        TEST_CHECK(0, "server starts: %s", srv.log);
    }
    TEST_CHECK(th_stop(&srv, 30) == 0, "server exits cleanly: %s", srv.log);

    /* Base without registered voices: a 400 that says what to do */
    const char *base[] = {"-m", BASE_MODEL, "--threads", "2", "--voice-alias", "nova=alice", NULL};
    if (th_start(&srv, base, 120) == 0) {
        usleep(200000);
        th_drain_log(&srv);
        TEST_CHECK(strstr(srv.log, "starts with no voices") != NULL, "a Base server without voices warns: %s", srv.log);
        owui_speech(srv.port, "", "alloy", &r);
        check_error(&r, 400, "--voice-alias alloy=VOICE", "Base: alloy");
        th_resp_free(&r);
        st_speech(srv.port, "", "nova", &r);
        check_error(&r, 400, "'nova' stands for the voice 'alice'", "Base: nova=alice unregistered");
        th_resp_free(&r);
    } else {
        TEST_CHECK(0, "server starts: %s", srv.log);
    }
    TEST_CHECK(th_stop(&srv, 30) == 0, "server exits cleanly: %s", srv.log);

    /* a bad alias is refused at start */
    const char *bad[] = {"-m", CV_MODEL, "--voice-alias", "alloy=nobody", NULL};
    TEST_CHECK(th_start(&srv, bad, 60) != 0 && strstr(srv.log, "not a speaker"),
               "--voice-alias to an unknown speaker is refused: %s", srv.log);
    th_stop(&srv, 10);
    /* a voices dir whose parents are missing is created, as qtts voices add does */
    char vroot[] = "/tmp/qtts_clients_vdXXXXXX", nested[128];
    if (mkdtemp(vroot)) {
        snprintf(nested, sizeof nested, "%s/new/sub", vroot);
        const char *nest[] = {"-m", BASE_MODEL, "--threads", "1", "--voices-dir", nested, NULL};
        TEST_CHECK(th_start(&srv, nest, 60) == 0 && stat(nested, &st) == 0 && S_ISDIR(st.st_mode),
                   "--voices-dir with missing parents is created: %s", srv.log);
        th_stop(&srv, 30);
        char rm[256];
        snprintf(rm, sizeof rm, "rm -rf '%s'", vroot);
        TEST_CHECK(system(rm) == 0, "cleanup");
    }
    /* CLI: a bad --host is a usage error (exit 2), and say takes region tags too */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' serve -m '%s' --host 999.1.1.1 2>/dev/null", QTTS_BINARY, CV_MODEL);
    int rc = system(cmd);
    TEST_CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 2, "serve --host 999.1.1.1 exits 2 (%d)", rc);
    snprintf(cmd, sizeof cmd, "'%s' say -q -m '%s' --speaker ryan --lang en-US --max-frames 2 --format wav -o /dev/null hi",
             QTTS_BINARY, CV_MODEL);
    rc = system(cmd);
    TEST_CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "say --lang en-US (%d)", rc);
    return test_finish("test_server_clients");
}
