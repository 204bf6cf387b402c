/* Dialogue scripts through POST /v1/audio/speech ("script": true,
 * server/speech_script.h) on the tiny CustomVoice model: the response is
 * byte for byte the per-turn single-voice requests (each its own voice and
 * seed S + i) joined by pause_ms of silence, buffered and streamed; 'cast'
 * maps a name to a speaker, a "(style)" becomes the turn's instructions;
 * the SSE done event sums the turns; a WAV's header holds the whole length;
 * errors (unknown speaker, bad script, refused fields) name the line. On the
 * tiny VoiceDesign model 'cast' gives each name its description, a turn's
 * style appended. */
#include <cjson/cJSON.h>
#include <sys/stat.h>

#include "harness.h"
#include "test_server_http.h"

#define CV_MODEL QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"
#define VD_MODEL QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-1.7B-VoiceDesign-tiny"
#define RATE 24000
#define COMMON "\"max_new_tokens\":10,\"temperature\":0.9"

static int post(int port, const char *json, th_resp *r) {
    int rc = th_post_json(port, "/v1/audio/speech", NULL, json, r, 120);
    if (rc || r->status != 200)
        fprintf(stderr, "POST %s -> %d %.*s\n", json, r->status, (int)(r->body_len < 400 ? r->body_len : 400),
                r->body ? (const char *)r->body : "");
    return rc == 0 && r->status == 200 && r->complete ? 0 : -1;
}

/* One single-voice turn as PCM, appended to *all. */
static int turn(int port, const char *text, const char *voice, const char *instr, int seed, unsigned char **all,
                size_t *len) {
    char body[1024];
    snprintf(body, sizeof body,
             "{\"input\":\"%s\",%s%s%s%s%s%s\"response_format\":\"pcm\",\"seed\":%d," COMMON "}", text,
             voice ? "\"voice\":\"" : "", voice ? voice : "", voice ? "\"," : "", instr ? "\"instructions\":\"" : "",
             instr ? instr : "", instr ? "\"," : "", seed);
    th_resp r;
    int rc = post(port, body, &r);
    if (!rc) {
        unsigned char *p = realloc(*all, *len + r.body_len);
        if (!p) rc = -1;
        else {
            memcpy(p + *len, r.body, r.body_len);
            *all = p;
            *len += r.body_len;
        }
    }
    th_resp_free(&r);
    return rc;
}

static int silence(unsigned char **all, size_t *len, int ms) {
    size_t n = (size_t)ms * RATE / 1000 * 2;
    unsigned char *p = realloc(*all, *len + n);
    if (!p) return -1;
    memset(p + *len, 0, n);
    *all = p;
    *len += n;
    return 0;
}

static void expect_error(int port, const char *json, int status, const char *code, const char *needle) {
    th_resp r;
    th_post_json(port, "/v1/audio/speech", NULL, json, &r, 60);
    cJSON *root = cJSON_ParseWithLength((const char *)r.body, r.body_len);
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "code");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "message");
    int ok = r.status == status && cJSON_IsString(c) && !strcmp(c->valuestring, code) && cJSON_IsString(m) &&
             (!needle || strstr(m->valuestring, needle));
    TEST_CHECK(ok, "%s: %d %.*s, want %d %s with '%s'", json, r.status, (int)(r.body_len < 400 ? r.body_len : 400),
               r.body ? (const char *)r.body : "", status, code, needle ? needle : "");
    cJSON_Delete(root);
    th_resp_free(&r);
}

/* The "speech.audio.done" event's data of an SSE body, parsed. */
static cJSON *sse_done(const th_resp *r) {
    char *s = malloc(r->body_len + 1);
    if (!s) return NULL;
    memcpy(s, r->body, r->body_len);
    s[r->body_len] = 0;
    const char *ev = strstr(s, "event: speech.audio.done\ndata: ");
    cJSON *j = ev ? cJSON_Parse(ev + strlen("event: speech.audio.done\ndata: ")) : NULL;
    free(s);
    return j;
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    struct stat st;
    if (stat(CV_MODEL "/config.json", &st)) {
        TEST_CHECK(0, "tiny CustomVoice model present under %s", QTTS_GOLDEN_DIR);
        return test_finish("test_server_script");
    }
    th_server srv;
    const char *args[] = {"-m", CV_MODEL, "--threads", "2", NULL};
    if (th_start(&srv, args, 120)) {
        TEST_CHECK(0, "server did not start");
        return test_finish("test_server_script");
    }
    int port = srv.port;

    /* the reference: each turn alone, seeds 40, 41, 42, with the pause between */
    unsigned char *want = NULL;
    size_t want_len = 0;
    int ok = !turn(port, "Good morning, everyone.", "ryan", NULL, 40, &want, &want_len) &&
             !silence(&want, &want_len, 250) &&
             !turn(port, "Hi! Is the tea ready?", "vivian", "cheerful", 41, &want, &want_len) &&
             !silence(&want, &want_len, 250) &&
             !turn(port, "Almost.\nGive it a minute.", "ryan", NULL, 42, &want, &want_len);
    TEST_CHECK(ok, "the three single-voice turns");

    /* the script: a colon tag mapped by cast, a bracket tag with a style, a
     * continuation line; a comment line */
    const char *script = "\"# breakfast\\nNarrator: Good morning, everyone.\\n[Vivian] (cheerful) Hi! Is the tea "
                         "ready?\\nnarrator: Almost.\\nGive it a minute.\"";
    char body[1024];
    th_resp r;
    for (int mode = 0; ok && mode < 2; mode++) { /* buffered, streamed */
        snprintf(body, sizeof body,
                 "{\"model\":\"tts-1\",\"voice\":\"alloy\",\"script\":true,\"input\":%s,\"cast\":{\"narrator\":"
                 "\"Ryan\"},\"pause_ms\":250,\"response_format\":\"pcm\",\"seed\":40%s," COMMON "}",
                 script, mode ? ",\"stream_format\":\"audio\"" : "");
        if (post(port, body, &r) == 0) {
            TEST_CHECK(r.body_len == want_len && !memcmp(r.body, want, want_len),
                       "%s script = the turns joined by 250 ms of silence (%zu bytes, want %zu)",
                       mode ? "streamed" : "buffered", r.body_len, want_len);
            if (!mode) {
                const char *seed = th_header(&r, "X-Qtts-Seed");
                TEST_CHECK(seed && !strcmp(seed, "40"), "X-Qtts-Seed is the first turn's (%s)", seed ? seed : "none");
            }
        } else {
            TEST_CHECK(0, "%s script request", mode ? "streamed" : "buffered");
        }
        th_resp_free(&r);
    }

    /* WAV: one header for all turns */
    snprintf(body, sizeof body,
             "{\"script\":true,\"input\":%s,\"cast\":{\"Narrator\":\"ryan\"},\"pause_ms\":250,\"response_format\":"
             "\"wav\",\"seed\":40," COMMON "}",
             script);
    if (post(port, body, &r) == 0) {
        const unsigned char *data = NULL;
        int rate = 0;
        long n = th_wav_samples(r.body, r.body_len, &data, &rate);
        TEST_CHECK(n == (long)(want_len / 2) && rate == RATE && !memcmp(data, want, want_len),
                   "WAV script: %ld samples at %d Hz, want %zu", n, rate, want_len / 2);
    } else {
        TEST_CHECK(0, "WAV script request");
    }
    th_resp_free(&r);

    /* SSE: the done event sums the turns' frames and counts the pauses in its seconds */
    snprintf(body, sizeof body,
             "{\"script\":true,\"input\":%s,\"cast\":{\"Narrator\":\"ryan\"},\"pause_ms\":250,\"response_format\":"
             "\"pcm\",\"stream_format\":\"sse\",\"seed\":40," COMMON "}",
             script);
    if (post(port, body, &r) == 0) {
        cJSON *d = sse_done(&r);
        const cJSON *secs = cJSON_GetObjectItemCaseSensitive(d, "audio_seconds");
        const cJSON *seed = cJSON_GetObjectItemCaseSensitive(d, "seed");
        const cJSON *usage = cJSON_GetObjectItemCaseSensitive(d, "usage");
        const cJSON *out = cJSON_GetObjectItemCaseSensitive(usage, "output_tokens");
        double want_s = (double)want_len / 2 / RATE;
        TEST_CHECK(cJSON_IsNumber(secs) && secs->valuedouble > want_s - 0.002 && secs->valuedouble < want_s + 0.002,
                   "SSE audio_seconds %.3f, want %.3f", cJSON_IsNumber(secs) ? secs->valuedouble : -1, want_s);
        TEST_CHECK(cJSON_IsNumber(seed) && seed->valuedouble == 40, "SSE seed is the first turn's");
        /* 3 turns of at most 10 frames each, more than one turn's worth */
        TEST_CHECK(cJSON_IsNumber(out) && out->valueint > 10 && out->valueint <= 30, "SSE output_tokens %d sums the turns",
                   cJSON_IsNumber(out) ? out->valueint : -1);
        cJSON_Delete(d);
    } else {
        TEST_CHECK(0, "SSE script request");
    }
    th_resp_free(&r);

    /* errors name the line */
    expect_error(port, "{\"script\":true,\"input\":\"[Ryan] Hello.\\n[Bob] Hi.\"}", 400, "voice_not_found",
                 "line 2: speaker 'Bob'");
    expect_error(port, "{\"script\":true,\"input\":\"Hello.\\n[Ryan] Hi.\"}", 400, "invalid_script", "line 1");
    expect_error(port, "{\"script\":true,\"input\":\"[Ryan] Hello.\\n[Vivian]\"}", 400, "invalid_script", "line 2");
    expect_error(port, "{\"script\":\"yes\",\"input\":\"[Ryan] Hello.\"}", 400, "invalid_type", "script");
    expect_error(port, "{\"script\":true,\"input\":\"[Ryan] Hello.\",\"instructions\":\"calm\"}", 400,
                 "conflicting_voice", "instructions");
    expect_error(port, "{\"script\":true,\"input\":\"[Ryan] Hello.\",\"pause_ms\":-1}", 400, "invalid_value",
                 "pause_ms");
    expect_error(port, "{\"script\":true,\"input\":\"[Ryan] Hello.\",\"cast\":{\"Ryan\":5}}", 400, "invalid_value",
                 "cast");
    expect_error(port, "{\"script\":true,\"input\":\"[Ryan] Hello.\",\"cast\":{\"Ryan\":\"nobody\"}}", 400,
                 "voice_not_found", "line 1: speaker 'Ryan'");
    expect_error(port, "{\"script\":true,\"input\":\"[Ryan] Hello.\",\"response_format\":\"xyz\"}", 400,
                 "unsupported_format", NULL);

    /* without "script", tags are read as text: the single-voice request as before */
    ok = post(port, "{\"input\":\"[Ryan] Hello.\",\"voice\":\"vivian\",\"response_format\":\"pcm\"," COMMON "}", &r) ==
         0;
    TEST_CHECK(ok, "a tagged input without 'script' is one voice's text");
    th_resp_free(&r);

    free(want);
    TEST_CHECK(th_stop(&srv, 30) == 0, "server exits cleanly");

    /* VoiceDesign: the cast's descriptions */
    const char *vd_args[] = {"-m", VD_MODEL, "--threads", "2", NULL};
    if (th_start(&srv, vd_args, 120) == 0) {
        port = srv.port;
        want = NULL;
        want_len = 0;
        ok = !turn(port, "Who is there?", NULL, "A deep, calm voice", 7, &want, &want_len) &&
             !silence(&want, &want_len, 100) &&
             !turn(port, "Only me.", NULL, "A bright voice. whispering", 8, &want, &want_len);
        TEST_CHECK(ok, "the two VoiceDesign turns");
        snprintf(body, sizeof body,
                 "{\"script\":true,\"input\":\"[A] Who is there?\\n[B] (whispering) Only me.\",\"cast\":{\"a\":\"A "
                 "deep, calm voice\",\"B\":\"A bright voice\"},\"pause_ms\":100,\"response_format\":\"pcm\","
                 "\"seed\":7," COMMON "}");
        if (ok && post(port, body, &r) == 0)
            TEST_CHECK(r.body_len == want_len && !memcmp(r.body, want, want_len),
                       "VoiceDesign script = the described turns joined (%zu bytes, want %zu)", r.body_len, want_len);
        else
            TEST_CHECK(0, "VoiceDesign script request");
        th_resp_free(&r);
        expect_error(port, "{\"script\":true,\"input\":\"[A] Hi.\\n[C] Hello.\",\"cast\":{\"A\":\"A deep voice\"}}",
                     400, "missing_instructions", "line 2: speaker 'C'");
        free(want);
        TEST_CHECK(th_stop(&srv, 30) == 0, "VoiceDesign server exits cleanly");
    } else {
        TEST_CHECK(0, "VoiceDesign server did not start");
    }
    return test_finish("test_server_script");
}
