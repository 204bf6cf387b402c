/* The OpenAI speech API's conventions and what the clients people use send:
 * default mp3, every response_format with its Content-Type, 'voice' as a
 * string or {"id"}, the 'input'/'instructions' limits, unknown fields
 * tolerated, the Open WebUI listings (/audio/voices, /audio/models), OpenAI's
 * multipart voice creation and deletion shapes, and byte-exact replays of the
 * requests Open WebUI and SillyTavern make. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "harness.h"
#include "support/npy.h"
#include "support/test_util.h"
#include "test_server_http.h"

#define BASE_MODEL QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-0.6B-Base-tiny"
#define MAX_CHARS 200 /* --max-input-chars: the limit both text fields share */
#define KEY "sk-test-123"
#define AUTH "Authorization: Bearer " KEY "\r\n"

static cJSON *json_of(const th_resp *r) {
    return r->body ? cJSON_ParseWithLength((const char *)r->body, r->body_len) : NULL;
}

static const char *jstr(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void expect_error(const th_resp *r, int status, const char *code, const char *what) {
    cJSON *j = json_of(r);
    const char *got = jstr(cJSON_GetObjectItem(j, "error"), "code");
    TEST_CHECK(r->status == status && got && !strcmp(got, code), "%s: want %d %s, got %d %s", what, status, code,
               r->status, r->body ? (const char *)r->body : "(no body)");
    cJSON_Delete(j);
}

static int is_mp3(const unsigned char *b, size_t n) {
    return n > 4 && (!memcmp(b, "ID3", 3) || (b[0] == 0xFF && (b[1] & 0xE0) == 0xE0));
}

/* The Content-Type's media type (parameters dropped). */
static int ctype_is(const th_resp *r, const char *want) {
    const char *ct = th_header(r, "Content-Type");
    return ct && !strncasecmp(ct, want, strlen(want)) && (ct[strlen(want)] == 0 || ct[strlen(want)] == ';');
}

/* multipart/form-data with the parts given as name/filename/type/data/len. */
typedef struct {
    const char *name, *filename, *type;
    const void *data;
    size_t len;
} part;

static unsigned char *form_body(const part *p, int n, const char *boundary, size_t *len) {
    size_t cap = 1024;
    for (int i = 0; i < n; i++) cap += p[i].len + 512;
    unsigned char *b = malloc(cap);
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        o += (size_t)snprintf((char *)b + o, cap - o, "--%s\r\nContent-Disposition: form-data; name=\"%s\"", boundary,
                              p[i].name);
        if (p[i].filename) o += (size_t)snprintf((char *)b + o, cap - o, "; filename=\"%s\"", p[i].filename);
        o += (size_t)snprintf((char *)b + o, cap - o, "\r\n");
        if (p[i].type) o += (size_t)snprintf((char *)b + o, cap - o, "Content-Type: %s\r\n", p[i].type);
        o += (size_t)snprintf((char *)b + o, cap - o, "\r\n");
        memcpy(b + o, p[i].data, p[i].len);
        o += p[i].len;
        o += (size_t)snprintf((char *)b + o, cap - o, "\r\n");
    }
    o += (size_t)snprintf((char *)b + o, cap - o, "--%s--\r\n", boundary);
    *len = o;
    return b;
}

static int post_form(int port, const part *p, int n, th_resp *r) {
    size_t len;
    const char *boundary = "----qttsFormBoundary7MA4YWxkTrZu0gW";
    unsigned char *body = form_body(p, n, boundary, &len);
    char ct[128];
    snprintf(ct, sizeof ct, "multipart/form-data; boundary=%s", boundary);
    int rc = th_request_typed(port, "POST", "/v1/audio/voices", ct, AUTH, body, len, r, 60);
    free(body);
    return rc;
}

static unsigned char *reference_wav(size_t *size) {
    npy_array a;
    if (npy_load_fixture("input_wave_1p5s", &a)) return NULL;
    unsigned char *w = th_make_wav(a.f, (size_t)a.numel, 24000, size);
    npy_free(&a);
    return w;
}

/* name=alice registered through OpenAI's multipart shape (+ ref_text). */
static void test_voice_creation(int port, const unsigned char *wav, size_t wav_len) {
    th_resp r;
    const char *ref = "Hello, this is the reference.";
    part ok[] = {{"name", NULL, NULL, "alice", 5},
                 {"audio_sample", "alice.wav", "audio/wav", wav, wav_len},
                 {"consent", NULL, NULL, "cons_1234", 9},
                 {"ref_text", NULL, NULL, ref, strlen(ref)}};
    time_t t0 = time(NULL);
    post_form(port, ok, 4, &r);
    cJSON *j = json_of(&r);
    const cJSON *ca = cJSON_GetObjectItem(j, "created_at");
    TEST_CHECK(r.status == 201 && jstr(j, "object") && !strcmp(jstr(j, "object"), "audio.voice") && jstr(j, "id") &&
                   !strcmp(jstr(j, "id"), "alice") && jstr(j, "name") && !strcmp(jstr(j, "name"), "alice"),
               "multipart voice creation answers OpenAI's voice object: %d %s", r.status,
               r.body ? (char *)r.body : "");
    TEST_CHECK(cJSON_IsNumber(ca) && ca->valuedouble >= (double)t0 - 1 && ca->valuedouble <= (double)time(NULL) + 1,
               "created_at is the Unix time of creation");
    TEST_CHECK(cJSON_IsFalse(cJSON_GetObjectItem(j, "x_vector_only")), "ref_text makes an in-context voice");
    cJSON_Delete(j);
    th_resp_free(&r);

    /* x-vector only: no ref_text, the form field order shuffled, a quoted filename with a space */
    part xv[] = {{"audio_sample", "my voice.wav", "audio/x-wav", wav, wav_len}, {"name", NULL, NULL, "bob", 3}};
    post_form(port, xv, 2, &r);
    j = json_of(&r);
    TEST_CHECK(r.status == 201 && cJSON_IsTrue(cJSON_GetObjectItem(j, "x_vector_only")),
               "multipart without ref_text: x-vector voice (%d %s)", r.status, r.body ? (char *)r.body : "");
    cJSON_Delete(j);
    th_resp_free(&r);

    post_form(port, ok, 4, &r);
    expect_error(&r, 409, "voice_exists", "the same name twice");
    th_resp_free(&r);
    part noaudio[] = {{"name", NULL, NULL, "carol", 5}, {"consent", NULL, NULL, "c", 1}};
    post_form(port, noaudio, 2, &r);
    expect_error(&r, 400, "missing_audio", "no audio_sample part");
    th_resp_free(&r);
    part badname[] = {{"name", NULL, NULL, "../x", 4}, {"audio_sample", "a.wav", NULL, wav, wav_len}};
    post_form(port, badname, 2, &r);
    expect_error(&r, 400, "invalid_name", "a name with '/'");
    th_resp_free(&r);
    part prompt[] = {{"name", NULL, NULL, "dave", 4}, {"type", NULL, NULL, "prompt", 6},
                     {"audio_sample", "a.wav", NULL, wav, wav_len}};
    post_form(port, prompt, 3, &r);
    expect_error(&r, 400, "unsupported_value", "type=prompt");
    th_resp_free(&r);
    part junk[] = {{"name", NULL, NULL, "erin", 4}, {"audio_sample", "a.wav", NULL, "not audio at all", 16}};
    post_form(port, junk, 2, &r);
    expect_error(&r, 400, "invalid_audio", "audio_sample that is not audio");
    th_resp_free(&r);
    const char *trunc = "------qttsFormBoundary7MA4YWxkTrZu0gW\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nx";
    th_request_typed(port, "POST", "/v1/audio/voices", "multipart/form-data; boundary=----qttsFormBoundary7MA4YWxkTrZu0gW",
                     AUTH, trunc, strlen(trunc), &r, 30);
    expect_error(&r, 400, "invalid_form", "a truncated form");
    th_resp_free(&r);
    th_request_typed(port, "POST", "/v1/audio/voices", "multipart/form-data", AUTH, "--x--", 5, &r, 30);
    expect_error(&r, 400, "invalid_form", "a form without a boundary");
    th_resp_free(&r);
}

static void test_listings(int port) {
    th_resp r;
    th_get(port, "/v1/audio/voices", AUTH, &r);
    cJSON *j = json_of(&r);
    const cJSON *voices = cJSON_GetObjectItem(j, "voices"), *v;
    int n = 0, alice = 0, ids_ok = 1;
    cJSON_ArrayForEach(v, voices) {
        n++;
        const char *id = jstr(v, "id"), *name = jstr(v, "name");
        if (!id || !name || strcmp(id, name)) ids_ok = 0;
        if (id && !strcmp(id, "alice")) alice = 1;
    }
    TEST_CHECK(r.status == 200 && n == 2 && alice && ids_ok,
               "GET /v1/audio/voices: Open WebUI's {voices:[{id,name}]} (%d entries): %s", n,
               r.body ? (char *)r.body : "");
    cJSON_Delete(j);
    th_resp_free(&r);
    th_get(port, "/v1/audio/models", AUTH, &r);
    j = json_of(&r);
    const cJSON *m0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "models"), 0);
    TEST_CHECK(r.status == 200 && jstr(m0, "id") && strlen(jstr(m0, "id")) > 0,
               "GET /v1/audio/models: {models:[{id}]}: %s", r.body ? (char *)r.body : "");
    cJSON_Delete(j);
    th_resp_free(&r);
    th_get(port, "/v1/audio/models", NULL, &r);
    TEST_CHECK(r.status == 401, "/v1/audio/models needs the key like every API route (%d)", r.status);
    th_resp_free(&r);
}

static void speech(int port, const char *json, th_resp *r) { th_post_json(port, "/v1/audio/speech", AUTH, json, r, 120); }

static void test_speech_conventions(int port) {
    th_resp r;
    /* no response_format: mp3, as OpenAI */
    speech(port, "{\"model\":\"tts-1\",\"input\":\"Hello there.\",\"voice\":\"alice\",\"max_new_tokens\":6,\"seed\":1}", &r);
    TEST_CHECK(r.status == 200 && ctype_is(&r, "audio/mpeg") && is_mp3(r.body, r.body_len),
               "default response_format is mp3 (%d, %s, %zu bytes)", r.status, th_header(&r, "Content-Type"),
               r.body_len);
    th_resp_free(&r);
    /* every format and its Content-Type */
    static const struct {
        const char *fmt, *ctype;
    } fmts[] = {{"mp3", "audio/mpeg"}, {"opus", "audio/ogg"}, {"aac", "audio/aac"},
                {"flac", "audio/flac"}, {"wav", "audio/wav"},  {"pcm", "audio/pcm"}};
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
        for (int stream = 0; stream < 2; stream++) {
            char body[512];
            snprintf(body, sizeof body,
                     "{\"model\":\"tts-1\",\"input\":\"Hello there.\",\"voice\":{\"id\":\"alice\"},"
                     "\"response_format\":\"%s\",\"max_new_tokens\":6,\"seed\":1%s}",
                     fmts[i].fmt, stream ? ",\"stream_format\":\"audio\"" : "");
            speech(port, body, &r);
            const unsigned char *b = r.body;
            int magic = 1;
            if (!strcmp(fmts[i].fmt, "mp3")) magic = is_mp3(b, r.body_len);
            else if (!strcmp(fmts[i].fmt, "opus")) magic = r.body_len > 4 && !memcmp(b, "OggS", 4);
            else if (!strcmp(fmts[i].fmt, "aac")) magic = r.body_len > 7 && b[0] == 0xFF && (b[1] & 0xF6) == 0xF0;
            else if (!strcmp(fmts[i].fmt, "flac")) magic = r.body_len > 4 && !memcmp(b, "fLaC", 4);
            else if (!strcmp(fmts[i].fmt, "wav")) magic = r.body_len > 44 && !memcmp(b, "RIFF", 4);
            else magic = r.body_len > 0 && r.body_len % 2 == 0;
            TEST_CHECK(r.status == 200 && ctype_is(&r, fmts[i].ctype) && magic && r.complete,
                       "%s%s: status %d, Content-Type %s (want %s), %zu bytes, magic %d", fmts[i].fmt,
                       stream ? " streamed" : "", r.status, th_header(&r, "Content-Type"), fmts[i].ctype, r.body_len,
                       magic);
            th_resp_free(&r);
        }
    }
    /* unknown fields are ignored, not refused */
    speech(port,
           "{\"model\":\"whatever-model\",\"input\":\"Hi.\",\"voice\":\"alice\",\"response_format\":\"wav\","
           "\"max_new_tokens\":4,\"user\":\"u1\",\"extra_body\":{\"x\":[1,2]},\"future_option\":true}",
           &r);
    TEST_CHECK(r.status == 200, "unknown fields and any model name are accepted (%d %s)", r.status,
               r.status != 200 && r.body ? (char *)r.body : "");
    th_resp_free(&r);
    /* 'voice' shapes */
    speech(port, "{\"input\":\"Hi.\",\"voice\":42}", &r);
    expect_error(&r, 400, "invalid_type", "voice as a number");
    th_resp_free(&r);
    speech(port, "{\"input\":\"Hi.\",\"voice\":{\"name\":\"alice\"}}", &r);
    expect_error(&r, 400, "invalid_type", "voice object without id");
    th_resp_free(&r);
    speech(port, "{\"input\":\"Hi.\",\"voice\":{\"id\":\"nobody\"}}", &r);
    expect_error(&r, 400, "voice_not_found", "voice {id} that is not registered");
    th_resp_free(&r);
    /* limits: exactly MAX_CHARS characters pass the check, one more does not (multi-byte characters count once) */
    char long_text[4 * MAX_CHARS + 64], body[5 * MAX_CHARS + 256];
    long_text[0] = 0;
    for (int i = 0; i < MAX_CHARS + 1; i++) strcat(long_text, i % 2 ? "\xc3\xa9" : "a");
    snprintf(body, sizeof body, "{\"input\":\"%s\",\"voice\":\"alice\"}", long_text);
    speech(port, body, &r);
    expect_error(&r, 400, "input_too_long", "input over the limit");
    th_resp_free(&r);
    snprintf(body, sizeof body, "{\"input\":\"Hi.\",\"voice\":\"alice\",\"instructions\":\"%s\"}", long_text);
    speech(port, body, &r);
    expect_error(&r, 400, "instructions_too_long", "instructions over the limit");
    th_resp_free(&r);
    long_text[strlen(long_text) - 1] = 0; /* drop the last character (an 'a', i = MAX_CHARS is even) */
    snprintf(body, sizeof body,
             "{\"input\":\"%s\",\"voice\":\"alice\",\"response_format\":\"pcm\",\"max_new_tokens\":2}", long_text);
    speech(port, body, &r);
    TEST_CHECK(r.status == 200, "input of exactly the limit passes (%d %s)", r.status,
               r.status != 200 && r.body ? (char *)r.body : "");
    th_resp_free(&r);
}

/* Exactly what Open WebUI's backend sends (routers/audio.py: aiohttp json=
 * payload, so Python's json.dumps separators; the model is overwritten with
 * the admin's TTS_MODEL; it stores the reply as NAME.mp3 without looking at
 * the Content-Type) and SillyTavern's OpenAI-compatible provider sends
 * (response_format "mp3" and speed always). */
static void test_client_replays(int port) {
    th_resp r;
    const char *owui_headers = "Authorization: Bearer " KEY "\r\nAccept: */*\r\nAccept-Encoding: gzip, deflate\r\n"
                               "User-Agent: Python/3.11 aiohttp/3.11.11\r\n";
    th_get(port, "/v1/audio/voices", owui_headers, &r);
    cJSON *j = json_of(&r);
    const cJSON *voices = cJSON_GetObjectItem(j, "voices");
    TEST_CHECK(r.status == 200 && cJSON_IsArray(voices) && jstr(cJSON_GetArrayItem(voices, 0), "id"),
               "Open WebUI voice listing read as data['voices'][i]['id']");
    cJSON_Delete(j);
    th_resp_free(&r);
    th_get(port, "/v1/audio/models", owui_headers, &r);
    j = json_of(&r);
    TEST_CHECK(r.status == 200 && jstr(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "models"), 0), "id"),
               "Open WebUI model listing read as data['models'][i]['id']");
    cJSON_Delete(j);
    th_resp_free(&r);
    const char *owui_body = "{\"input\": \"Hello from Open WebUI.\", \"voice\": \"alice\", \"model\": \"tts-1\", "
                            "\"max_new_tokens\": 6}";
    th_request(port, "POST", "/v1/audio/speech", owui_headers, owui_body, strlen(owui_body), &r, 120);
    TEST_CHECK(r.status == 200 && is_mp3(r.body, r.body_len),
               "Open WebUI speech request gets mp3 bytes (%d, %zu bytes)", r.status, r.body_len);
    th_resp_free(&r);
    th_request(port, "POST", "/v1/audio/speech", "Authorization: Bearer wrong\r\n", owui_body, strlen(owui_body), &r,
               30);
    j = json_of(&r);
    TEST_CHECK(r.status == 401 && jstr(cJSON_GetObjectItem(j, "error"), "message"),
               "Open WebUI shows res['error']['message'] on a bad key (%d)", r.status);
    cJSON_Delete(j);
    th_resp_free(&r);

    const char *st_headers = "Authorization: Bearer " KEY "\r\nUser-Agent: node-fetch\r\nAccept: */*\r\n";
    const char *st_body = "{\"input\":\"Hello from SillyTavern.\",\"voice\":\"bob\",\"model\":\"tts-1\","
                          "\"response_format\":\"mp3\",\"speed\":1.25,\"max_new_tokens\":6}";
    th_request(port, "POST", "/v1/audio/speech", st_headers, st_body, strlen(st_body), &r, 120);
    TEST_CHECK(r.status == 200 && ctype_is(&r, "audio/mpeg") && is_mp3(r.body, r.body_len),
               "SillyTavern request (mp3 + speed 1.25) gets mp3 (%d, %zu bytes)", r.status, r.body_len);
    th_resp_free(&r);
}

static void test_voice_deletion(int port) {
    th_resp r;
    th_request(port, "DELETE", "/v1/audio/voices/alice", AUTH, NULL, 0, &r, 30);
    cJSON *j = json_of(&r);
    TEST_CHECK(r.status == 200 && jstr(j, "object") && !strcmp(jstr(j, "object"), "audio.voice.deleted") &&
                   jstr(j, "id") && !strcmp(jstr(j, "id"), "alice") && cJSON_IsTrue(cJSON_GetObjectItem(j, "deleted")),
               "DELETE answers OpenAI's VoiceDeleted: %s", r.body ? (char *)r.body : "");
    cJSON_Delete(j);
    th_resp_free(&r);
    th_request(port, "DELETE", "/v1/audio/voices/alice", AUTH, NULL, 0, &r, 30);
    expect_error(&r, 404, "voice_not_found", "deleting a deleted voice");
    th_resp_free(&r);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    struct stat st;
    if (stat(BASE_MODEL "/config.json", &st)) {
        TEST_CHECK(0, "tiny golden Base model present under %s", QTTS_GOLDEN_DIR);
        return test_finish("test_server_api");
    }
    size_t wav_len = 0;
    unsigned char *wav = reference_wav(&wav_len);
    TEST_CHECK(wav != NULL, "reference recording fixture");
    char vdir[] = "/tmp/qtts_api_voicesXXXXXX";
    if (!wav || !mkdtemp(vdir)) return test_finish("test_server_api");
    th_server srv;
    const char *args[] = {"-m", BASE_MODEL, "--threads", "2", "--voices-dir", vdir, "--api-key", KEY,
                          "--max-input-chars", "200", NULL};
    if (th_start(&srv, args, 120)) {
        TEST_CHECK(0, "server starts: %s", srv.log);
    } else {
        test_voice_creation(srv.port, wav, wav_len);
        test_listings(srv.port);
        test_speech_conventions(srv.port);
        test_client_replays(srv.port);
        test_voice_deletion(srv.port);
    }
    TEST_CHECK(th_stop(&srv, 30) == 0, "server exits cleanly: %s", srv.log);
    free(wav);
    rm_rf(vdir);
    return test_finish("test_server_api");
}
