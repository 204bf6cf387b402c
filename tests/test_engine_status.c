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
    p.n_threads = 1;
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
