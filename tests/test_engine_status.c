/* Typed status at the public boundary: every failing call says what kind of
 * failure it is (qtts_status), so callers act without reading messages. */
#include <string.h>

#include "harness.h"
#include "qtts.h"

static int stop_at_once(void *user, const float *s, size_t n) {
    (void)user, (void)s, (void)n;
    return 1;
}

int main(void) {
    char path[1024];
    qtts_engine_params p;
    qtts_engine_params_default(&p);
    qtts_error err = {0};
    p.model_path = "/nonexistent/model";
    TEST_CHECK(!qtts_engine_create(&p, &err) && err.status == QTTS_ERR_MODEL && err.message[0],
               "missing model: %s (%s)", qtts_status_name(err.status), err.message);
    p.model_path = golden_path(path, sizeof path, "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny");
    p.weight_type = "q3_x";
    TEST_CHECK(!qtts_engine_create(&p, &err) && err.status == QTTS_ERR_INVALID, "bad weight type: %s (%s)",
               qtts_status_name(err.status), err.message);
    p.weight_type = NULL;
    p.kv_cache = "bf16";
    TEST_CHECK(!qtts_engine_create(&p, &err) && err.status == QTTS_ERR_INVALID && strstr(err.message, "bf16"),
               "bad KV cache type: %s (%s)", qtts_status_name(err.status), err.message);
    p.n_threads = 1;
    /* the KV cache's type: auto follows the weights (f32 for the reference, f16 for q8_0); f16 on request */
    const struct {
        const char *weights, *kv, *want;
    } kv_cases[] = {{NULL, NULL, "f32"}, {"q8_0", "auto", "f16"}, {NULL, "f16", "f16"}};
    for (size_t i = 0; i < sizeof kv_cases / sizeof kv_cases[0]; i++) {
        p.weight_type = kv_cases[i].weights;
        p.kv_cache = kv_cases[i].kv;
        qtts_engine *ek = qtts_engine_create(&p, &err);
        TEST_CHECK(ek != NULL, "engine: %s", err.message);
        if (!ek) continue;
        const qtts_model_info *mi = qtts_engine_info(ek);
        TEST_CHECK(mi->kv_cache && !strcmp(mi->kv_cache, kv_cases[i].want), "weights %s, --kv-cache %s: %s, want %s",
                   mi->weight_type, kv_cases[i].kv ? kv_cases[i].kv : "(default)", mi->kv_cache ? mi->kv_cache : "?",
                   kv_cases[i].want);
        if (kv_cases[i].kv && !strcmp(kv_cases[i].kv, "f16")) { /* and it synthesizes */
            qtts_request rk;
            qtts_request_default(&rk);
            rk.text = "Hello there.";
            rk.speaker = "ryan";
            rk.greedy = 1;
            rk.max_frames = 4;
            TEST_CHECK(qtts_synthesize(ek, &rk, NULL, NULL, NULL, &err) == QTTS_OK, "f16 KV synthesis: %s",
                       err.message);
        }
        qtts_engine_free(ek);
    }
    p.weight_type = NULL;
    p.kv_cache = NULL;
    qtts_engine *e = qtts_engine_create(&p, &err);
    TEST_CHECK(e != NULL, "engine: %s", err.message);
    if (!e) return test_finish("test_engine_status");
    TEST_CHECK(!strcmp(qtts_version(), QTTS_VERSION), "qtts_version %s", qtts_version());

    qtts_request r;
    qtts_request_default(&r);
    r.text = "Hello.";
    r.speaker = "nobody";
    TEST_CHECK(!qtts_submit(e, &r, &err) && err.status == QTTS_ERR_INVALID, "unknown speaker: %s",
               qtts_status_name(err.status));
    r.speaker = "ryan";
    r.text = " \n\t ";
    TEST_CHECK(!qtts_submit(e, &r, NULL), "whitespace-only text is refused (NULL err is fine)");
    TEST_CHECK(qtts_synthesize(e, &r, NULL, NULL, NULL, &err) == QTTS_ERR_INVALID, "whitespace: %s",
               qtts_status_name(err.status));
    r.text = "Hello there, this is a test.";
    r.greedy = 1;
    r.max_frames = 6;
    qtts_status st = qtts_synthesize(e, &r, stop_at_once, NULL, NULL, &err);
    TEST_CHECK(st == QTTS_ERR_CANCELLED && err.status == QTTS_ERR_CANCELLED, "callback cancel: %s",
               qtts_status_name(st));
    qtts_stream *s = qtts_submit(e, &r, &err);
    TEST_CHECK(s != NULL, "submit: %s", err.message);
    if (s) {
        qtts_stream_cancel(s);
        float buf[64];
        TEST_CHECK(qtts_stream_read(s, buf, 64, -1) == QTTS_STREAM_ERROR && qtts_stream_status(s) == QTTS_ERR_CANCELLED,
                   "cancelled stream: %s", qtts_status_name(qtts_stream_status(s)));
        qtts_stream_free(s);
    }
    TEST_CHECK(qtts_synthesize(e, &r, NULL, NULL, NULL, &err) == QTTS_OK, "a good request: %s", err.message);
    qtts_voice *v = qtts_voice_from_audio_bytes(e, "RIFF", 4, NULL, &err);
    TEST_CHECK(!v && err.status == QTTS_ERR_INVALID, "voices on a CustomVoice model: %s",
               qtts_status_name(err.status));
    qtts_engine_free(e);
    return test_finish("test_engine_status");
}
