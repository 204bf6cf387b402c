/* The ElevenLabs-compatible routes of `qtts serve` (server/elevenlabs.c),
 * replayed over HTTP with the requests the official Python SDK
 * (elevenlabs-python, text_to_speech.convert / .stream, voices, models)
 * sends: its headers (xi-api-key, X-Fern-*), the query's output_format and
 * the JSON body with model_id and voice_settings. Every output_format is
 * decoded back by ffprobe (codec and sample rate checked); mu-law and A-law
 * are decoded by ffmpeg and compared with pcm_8000 of the same seed; the
 * speed setting shortens the audio at a resampled rate; auth
 * and error shapes ({"detail":{"status","message"}}). Skipped with a visible
 * message when ffprobe is missing (QTTS_REQUIRE_CLIENTS=1 fails instead). */
#include <cjson/cJSON.h>
#include <sys/stat.h>

#include "harness.h"
#include "support/test_util.h"
#include "test_server_http.h"

#define CUSTOM_MODEL QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"
#define SDK_HEADERS                                                                                                   \
    "xi-api-key: el-key\r\nX-Fern-Language: Python\r\nX-Fern-SDK-Name: elevenlabs\r\nX-Fern-SDK-Version: 2.0.0\r\n"
/* What convert(voice_id, text=..., model_id=..., voice_settings=VoiceSettings(...), seed=...) puts in the body. */
#define SDK_BODY                                                                                                      \
    "{\"text\": \"Good night, and sweet dreams.\", \"model_id\": \"eleven_multilingual_v2\", \"voice_settings\": "  \
    "{\"stability\": 0.5, \"similarity_boost\": 0.75, \"style\": 0.0, \"use_speaker_boost\": true, \"speed\": 1.0}, " \
    "\"seed\": 42}"

static int run_capture(const char *cmd, char *out, size_t size) {
    FILE *p = popen(cmd, "r");
    out[0] = 0;
    if (!p) return -1;
    size_t n = fread(out, 1, size - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The "detail" object's "status" of an error body, or "". */
static void detail_status(const th_resp *r, char *out, size_t size) {
    out[0] = 0;
    cJSON *root = cJSON_ParseWithLength((const char *)r->body, r->body_len);
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "detail");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(d, "status");
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(d, "message");
    if (cJSON_IsString(st) && cJSON_IsString(msg) && msg->valuestring[0]) snprintf(out, size, "%s", st->valuestring);
    cJSON_Delete(root);
}

static void expect_error(int port, const char *method, const char *path, const char *headers, const char *body,
                         int status, const char *code) {
    th_resp r;
    int rc = th_request(port, method, path, headers, body, body ? strlen(body) : 0, &r, 30);
    char got[128];
    detail_status(&r, got, sizeof got);
    TEST_CHECK(rc == 0 && r.status == status && !strcmp(got, code), "%s %s: %d '%s', want %d '%s' (%.*s)", method,
               path, r.status, got, status, code, (int)(r.body_len < 300 ? r.body_len : 300),
               r.body ? (const char *)r.body : "");
    th_resp_free(&r);
}

/* One output_format through the SDK's request; the body is saved to path. */
static int fetch_format(int port, const char *voice, const char *fmt, int stream, const char *path,
                        const char *mime) {
    char url[256];
    snprintf(url, sizeof url, "/v1/text-to-speech/%s%s?output_format=%s", voice, stream ? "/stream" : "", fmt);
    th_resp r;
    int rc = th_request(port, "POST", url, SDK_HEADERS, SDK_BODY, strlen(SDK_BODY), &r, 120);
    const char *ct = rc == 0 ? th_header(&r, "Content-Type") : NULL;
    int ok = rc == 0 && r.status == 200 && r.complete && r.body_len > 0;
    TEST_CHECK(ok, "%s: status %d, %zu bytes, complete %d", url, r.status, r.body_len, r.complete);
    TEST_CHECK(ct && !strcmp(ct, mime), "%s: Content-Type %s, want %s", url, ct ? ct : "(none)", mime);
    FILE *f = ok ? fopen(path, "wb") : NULL;
    if (f) {
        ok = fwrite(r.body, 1, r.body_len, f) == r.body_len;
        fclose(f);
    }
    th_resp_free(&r);
    return ok ? 0 : -1;
}

/* ffmpeg's input options for a headerless format. */
static const char *raw_args(const char *fmt, int rate, char *buf, size_t size) {
    if (!strncmp(fmt, "pcm_", 4)) snprintf(buf, size, "-f s16le -ar %d -ac 1", rate);
    else if (!strncmp(fmt, "ulaw", 4)) snprintf(buf, size, "-f mulaw -ar 8000 -ac 1");
    else if (!strncmp(fmt, "alaw", 4)) snprintf(buf, size, "-f alaw -ar 8000 -ac 1");
    else buf[0] = 0;
    return buf;
}

/* Decodes path (raw: ffmpeg's input options) to s16 8 kHz samples. */
static int16_t *decode_8k(const char *path, const char *raw, const char *dir, size_t *n) {
    char cmd[2048], out[600], line[512];
    snprintf(out, sizeof out, "%s/decoded.s16", dir);
    snprintf(cmd, sizeof cmd, "ffmpeg -v error -y %s -i %s -f s16le -ar 8000 -ac 1 %s 2>&1", raw, path, out);
    if (run_capture(cmd, line, sizeof line) != 0) return NULL;
    unsigned char *b = NULL;
    size_t len = 0;
    if (read_bytes(out, &b, &len)) return NULL;
    *n = len / 2;
    return (int16_t *)b;
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    char line[4096];
    if (run_capture("ffprobe -version 2>/dev/null", line, sizeof line) != 0) {
        printf("SKIP test_server_elevenlabs: ffprobe is not installed (apt-get install ffmpeg)\n");
        const char *strict = getenv("QTTS_REQUIRE_CLIENTS");
        if (strict && *strict && strcmp(strict, "0")) TEST_CHECK(0, "ffprobe required (QTTS_REQUIRE_CLIENTS)");
        return test_finish("test_server_elevenlabs");
    }
    char dir[] = "/tmp/qtts_elXXXXXX";
    if (!mkdtemp(dir)) return 1;
    th_server srv;
    const char *args[] = {"-m", CUSTOM_MODEL, "--threads", "2", "--api-key", "el-key", NULL};
    if (th_start(&srv, args, 120)) {
        TEST_CHECK(0, "server did not start");
        return test_finish("test_server_elevenlabs");
    }
    int port = srv.port;

    /* voices.search/get_all, voices.get, models.list */
    th_resp r;
    TEST_CHECK(th_get(port, "/v1/voices", SDK_HEADERS, &r) == 0 && r.status == 200, "GET /v1/voices: %d", r.status);
    cJSON *root = cJSON_ParseWithLength((const char *)r.body, r.body_len);
    const cJSON *voices = cJSON_GetObjectItemCaseSensitive(root, "voices");
    int found = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, voices) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(v, "voice_id");
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(v, "category");
        found += cJSON_IsString(id) && !strcmp(id->valuestring, "ryan") && cJSON_IsString(cat) &&
                 !strcmp(cat->valuestring, "premade");
    }
    TEST_CHECK(cJSON_GetArraySize(voices) == 9 && found == 1, "voices: %d entries, ryan premade %d",
               cJSON_GetArraySize(voices), found);
    cJSON_Delete(root);
    th_resp_free(&r);
    TEST_CHECK(th_get(port, "/v1/voices/vivian", SDK_HEADERS, &r) == 0 && r.status == 200 &&
                   strstr((const char *)r.body, "\"voice_id\":\"vivian\""),
               "GET /v1/voices/vivian: %d", r.status);
    th_resp_free(&r);
    TEST_CHECK(th_get(port, "/v1/models", SDK_HEADERS, &r) == 0 && r.status == 200, "GET /v1/models: %d", r.status);
    root = cJSON_ParseWithLength((const char *)r.body, r.body_len);
    const cJSON *m0 = cJSON_GetArrayItem(root, 0);
    TEST_CHECK(cJSON_IsArray(root) && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m0, "can_do_text_to_speech")) &&
                   cJSON_IsString(cJSON_GetObjectItemCaseSensitive(m0, "model_id")),
               "models: not ElevenLabs' array: %.200s", r.body ? (const char *)r.body : "");
    cJSON_Delete(root);
    th_resp_free(&r);
    /* the OpenAI clients' /v1/models keeps its shape */
    TEST_CHECK(th_get(port, "/v1/models", "Authorization: Bearer el-key\r\n", &r) == 0 && r.status == 200 &&
                   strstr((const char *)r.body, "\"object\":\"list\""),
               "OpenAI /v1/models: %d", r.status);
    th_resp_free(&r);

    /* every output_format the SDK lists (and wav), both routes */
    static const struct {
        const char *fmt, *codec, *mime;
        int rate;
    } formats[] = {
        {"mp3_22050_32", "mp3", "audio/mpeg", 22050},      {"mp3_44100_128", "mp3", "audio/mpeg", 44100},
        {"mp3_44100_192", "mp3", "audio/mpeg", 44100},     {"pcm_8000", "pcm_s16le", "audio/pcm", 8000},
        {"pcm_16000", "pcm_s16le", "audio/pcm", 16000},    {"pcm_22050", "pcm_s16le", "audio/pcm", 22050},
        {"pcm_24000", "pcm_s16le", "audio/pcm", 24000},    {"pcm_44100", "pcm_s16le", "audio/pcm", 44100},
        {"pcm_48000", "pcm_s16le", "audio/pcm", 48000},    {"ulaw_8000", "pcm_mulaw", "audio/basic", 8000},
        {"alaw_8000", "pcm_alaw", "audio/x-alaw-basic", 8000}, {"opus_48000_64", "opus", "audio/ogg", 48000},
        {"wav_16000", "pcm_s16le", "audio/wav", 16000},
    };
    double dur_24k = 0;
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        char path[600], raw[128], cmd[2048];
        snprintf(path, sizeof path, "%s/%s", dir, formats[i].fmt);
        if (fetch_format(port, "ryan", formats[i].fmt, (int)(i & 1), path, formats[i].mime)) continue;
        snprintf(cmd, sizeof cmd,
                 "ffprobe -v error %s -show_entries stream=codec_name,sample_rate -show_entries format=duration -of "
                 "default=nw=1 %s",
                 raw_args(formats[i].fmt, formats[i].rate, raw, sizeof raw), path);
        int rc = run_capture(cmd, line, sizeof line);
        char want_codec[64], want_rate[64];
        snprintf(want_codec, sizeof want_codec, "codec_name=%s\n", formats[i].codec);
        snprintf(want_rate, sizeof want_rate, "sample_rate=%d\n", formats[i].rate);
        TEST_CHECK(rc == 0 && strstr(line, want_codec) && strstr(line, want_rate), "%s: ffprobe says: %s",
                   formats[i].fmt, line);
        const char *d = strstr(line, "duration=");
        double dur = d ? atof(d + 9) : 0;
        if (!strcmp(formats[i].fmt, "pcm_24000")) dur_24k = dur;
        TEST_CHECK(dur > 0.3, "%s: duration %.3f s", formats[i].fmt, dur);
    }
    /* the same seed gives the same speech: every PCM rate lasts as long as 24 kHz */
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        if (strncmp(formats[i].fmt, "pcm_", 4)) continue;
        char path[600];
        snprintf(path, sizeof path, "%s/%s", dir, formats[i].fmt);
        struct stat st;
        double secs = stat(path, &st) == 0 ? (double)st.st_size / 2 / formats[i].rate : 0;
        TEST_CHECK(secs > dur_24k - 0.01 && secs < dur_24k + 0.01, "%s: %.4f s, pcm_24000 %.4f s", formats[i].fmt,
                   secs, dur_24k);
    }
    /* voice_settings.speed (ElevenLabs' top, 1.2): the tempo changes before the resampling, so pcm_16000
       lasts pcm_24000's duration / 1.2 */
    {
        const char *fast = "{\"text\": \"Good night, and sweet dreams.\", \"model_id\": \"eleven_multilingual_v2\", "
                           "\"voice_settings\": {\"speed\": 1.2}, \"seed\": 42}";
        th_resp r2;
        int rc = th_request(port, "POST", "/v1/text-to-speech/ryan/stream?output_format=pcm_16000", SDK_HEADERS, fast,
                            strlen(fast), &r2, 120);
        double secs = rc == 0 && r2.status == 200 && r2.complete ? (double)r2.body_len / 2 / 16000 : 0;
        TEST_CHECK(secs > dur_24k / 1.2 - 0.01 && secs < dur_24k / 1.2 + 0.01,
                   "speed 1.2 at pcm_16000: %.4f s (status %d), want %.4f s", secs, r2.status, dur_24k / 1.2);
        th_resp_free(&r2);
    }
    /* G.711 against linear PCM at 8 kHz: within the codecs' quantization step */
    char raw[128], path[600];
    size_t n_pcm = 0, n_u = 0, n_a = 0;
    snprintf(path, sizeof path, "%s/pcm_8000", dir);
    int16_t *pcm = decode_8k(path, raw_args("pcm_8000", 8000, raw, sizeof raw), dir, &n_pcm);
    snprintf(path, sizeof path, "%s/ulaw_8000", dir);
    int16_t *ul = decode_8k(path, raw_args("ulaw_8000", 8000, raw, sizeof raw), dir, &n_u);
    snprintf(path, sizeof path, "%s/alaw_8000", dir);
    int16_t *al = decode_8k(path, raw_args("alaw_8000", 8000, raw, sizeof raw), dir, &n_a);
    TEST_CHECK(pcm && ul && al && n_pcm == n_u && n_pcm == n_a && n_pcm > 0, "G.711: %zu/%zu/%zu samples", n_pcm,
               n_u, n_a);
    if (pcm && ul && al && n_pcm == n_u && n_pcm == n_a) {
        /* both laws step by 1/16 to 1/8 of the amplitude (a floor of 16 near zero): the decoded value is
           within half a step, so within a/16 + 16 */
        int bad_u = 0, bad_a = 0, peak = 0;
        for (size_t i = 0; i < n_pcm; i++) {
            int a = abs(pcm[i]), bound = a / 16 + 16;
            bad_u += abs(pcm[i] - ul[i]) > bound;
            bad_a += abs(pcm[i] - al[i]) > bound;
            if (a > peak) peak = a;
        }
        TEST_CHECK(peak > 100, "pcm_8000 is silent (peak %d)", peak);
        TEST_CHECK(!bad_u && !bad_a, "G.711 beyond half a step: %d mu-law and %d A-law samples of %zu", bad_u, bad_a,
                   n_pcm);
    }
    free(pcm);
    free(ul);
    free(al);

    /* auth and errors in ElevenLabs' shape */
    expect_error(port, "GET", "/v1/voices", NULL, NULL, 401, "invalid_api_key");
    expect_error(port, "POST", "/v1/text-to-speech/ryan", "xi-api-key: wrong\r\n", SDK_BODY, 401, "invalid_api_key");
    expect_error(port, "POST", "/v1/text-to-speech/bob", SDK_HEADERS, SDK_BODY, 404, "voice_not_found");
    expect_error(port, "GET", "/v1/voices/bob", SDK_HEADERS, NULL, 404, "voice_not_found");
    expect_error(port, "POST", "/v1/text-to-speech/ryan?output_format=mp3_48000_128", SDK_HEADERS, SDK_BODY, 400,
                 "invalid_output_format");
    expect_error(port, "POST", "/v1/text-to-speech/ryan", SDK_HEADERS, "{\"model_id\": \"x\"}", 422,
                 "invalid_request");
    expect_error(port, "POST", "/v1/text-to-speech/ryan", SDK_HEADERS, "{\"text\": \"   \"}", 400, "missing_input");
    expect_error(port, "POST", "/v1/text-to-speech/ryan", SDK_HEADERS, "not json", 400, "invalid_json");
    expect_error(port, "GET", "/v1/text-to-speech/ryan", SDK_HEADERS, NULL, 405, "method_not_allowed");
    expect_error(port, "POST", "/v1/text-to-speech/ryan/with-timestamps", SDK_HEADERS, SDK_BODY, 404, "not_found");
    TEST_CHECK(th_stop(&srv, 30) == 0, "server exit: %s", srv.log);
    rm_rf(dir);
    return test_finish("test_server_elevenlabs");
}
