/* The runaway-generation guard (src/model/runaway_guard.c):
 *  - the loop detector and the frame cap on synthetic sequences;
 *  - a model that can never end: a copy of the tiny CustomVoice checkpoint
 *    with talker.codec_head zeroed, so every greedy step picks codebook-0
 *    token 0 (all logits tie; EOS is never the first maximum). Its runs must
 *    stop at frame 40 (loop), at the text-relative cap (loop guard off), at
 *    max_new_tokens (explicit cap), and each guard's codes must be a prefix of
 *    the unguarded run's (the guard only ends, never changes, a run);
 *  - the unmodified golden model: codes with and without the guard identical;
 *  - the server reports how each run ended (X-Qtts-Finished-By, the SSE done
 *    event, /metrics qtts_finished_total). */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <sys/stat.h>

#include "harness.h"
#include "qtts.h"
#include "model/runaway_guard.h"
#include "support/endless_model.h"
#include "support/test_util.h"
#include "test_server_http.h"

#define CV_MODEL QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"

static void test_detector(void) {
    TEST_CHECK(qtts_guard_frame_cap(0, 10) == QTTS_GUARD_FRAME_ALLOWANCE, "cap of empty text = allowance");
    TEST_CHECK(qtts_guard_frame_cap(7, 10) == QTTS_GUARD_FRAME_ALLOWANCE + 70, "cap = allowance + ratio x tokens");
    TEST_CHECK(qtts_guard_frame_cap(3, 2.5) == QTTS_GUARD_FRAME_ALLOWANCE + 8, "fractional ratio rounds up");
    enum { N = 400 };
    int32_t c0[N];
    /* pseudo-random codes: never a loop */
    uint32_t x = 12345;
    qtts_repeat_state st = {{0}};
    int fired = 0;
    for (int t = 0; t < N; t++) {
        x = x * 1664525u + 1013904223u;
        c0[t] = (int32_t)(x >> 21);
        fired |= qtts_repeat_feed(&st, c0, 1, t + 1);
    }
    TEST_CHECK(!fired, "random codes never look like a loop");
    /* period p, starting after 10 random frames: fires exactly when the
     * periodic stretch reaches max(40, 3p) frames */
    for (int p = 1; p <= QTTS_GUARD_MAX_PERIOD + 3; p++) {
        memset(&st, 0, sizeof st);
        int at = -1;
        for (int t = 0; t < N && at < 0; t++) {
            if (t < 10) c0[t] = 3000 + t; /* distinct prefix */
            else if (t < 10 + p) c0[t] = 100 + (t - 10) * 7 % 61; /* one period, distinct values for p <= 61 */
            else c0[t] = c0[t - p];
            if (qtts_repeat_feed(&st, c0, 1, t + 1)) at = t + 1 - 10; /* periodic frames so far */
        }
        int want = p > QTTS_GUARD_MAX_PERIOD ? -1 : (3 * p > QTTS_GUARD_MIN_LOOP ? 3 * p : QTTS_GUARD_MIN_LOOP);
        TEST_CHECK(at == want, "period %d: caught after %d periodic frames (want %d)", p, at, want);
    }
    /* a long pause is not a loop, a longer one is: 39 equal tokens pass, 40 fire */
    memset(&st, 0, sizeof st);
    int first = -1;
    for (int t = 0; t < 60; t++) {
        c0[t] = t < 5 ? 2000 + t : 7;
        if (qtts_repeat_feed(&st, c0, 1, t + 1) && first < 0) first = t + 1 - 5;
    }
    TEST_CHECK(first == QTTS_GUARD_MIN_LOOP, "one repeated token: caught at %d frames (want %d)", first,
               QTTS_GUARD_MIN_LOOP);
    /* the stride walks frame-major codes (codebook 0 of each frame) */
    int32_t frames[50 * 16];
    for (int t = 0; t < 50; t++)
        for (int g = 0; g < 16; g++) frames[t * 16 + g] = g ? t * 16 + g : 5; /* codebook 0 loops, the rest do not */
    memset(&st, 0, sizeof st);
    first = -1;
    for (int t = 0; t < 50 && first < 0; t++)
        if (qtts_repeat_feed(&st, frames, 16, t + 1)) first = t + 1;
    TEST_CHECK(first == QTTS_GUARD_MIN_LOOP, "stride 16: codebook 0 only (%d)", first);
}

typedef struct {
    qtts_result res;
    int32_t *codes;
    size_t n_frames;
} run_out;

static int run(qtts_engine *e, qtts_request *r, run_out *o) {
    memset(o, 0, sizeof *o);
    r->keep_codes = 1;
    qtts_error err = {0};
    qtts_stream *st = qtts_submit(e, r, &err);
    if (!st) {
        fprintf(stderr, "submit: %s\n", err.message);
        return -1;
    }
    float buf[8192];
    long got;
    while ((got = qtts_stream_read(st, buf, 8192, -1)) > 0) {
    }
    int rc = got == 0 ? 0 : -1;
    if (!rc) {
        qtts_stream_result(st, &o->res);
        int ncb = 0;
        const int32_t *c = qtts_stream_codes(st, &o->n_frames, &ncb);
        if (c && o->n_frames) {
            o->codes = malloc(o->n_frames * (size_t)ncb * sizeof *c);
            if (o->codes) memcpy(o->codes, c, o->n_frames * (size_t)ncb * sizeof *c);
        }
    }
    qtts_stream_free(st);
    return rc;
}

static qtts_engine *engine_for(const char *path) {
    qtts_engine_params p;
    qtts_engine_params_default(&p);
    p.model_path = path;
    p.n_threads = 2;
    qtts_error err = {0};
    qtts_engine *e = qtts_engine_create(&p, &err);
    if (!e) fprintf(stderr, "engine %s: %s\n", path, err.message);
    return e;
}

static void base_request(qtts_request *r, const char *text) {
    qtts_request_default(r);
    r->text = text;
    r->speaker = "vivian";
    r->greedy = 1;
    r->has_seed = 1;
    r->seed = 3;
}

static void test_endless_model(const char *dir) {
    qtts_engine *e = engine_for(dir);
    TEST_CHECK(e != NULL, "engine on the endless model");
    if (!e) return;
    const char *text = "Hello there, how are you?";
    qtts_request r;
    run_out loop, len, len2, capped;
    base_request(&r, text); /* defaults: both guards on */
    int ok = run(e, &r, &loop) == 0;
    TEST_CHECK(ok && loop.res.finished_by == QTTS_FINISHED_GUARD && loop.res.guard == QTTS_GUARD_REPETITION &&
                   loop.res.n_frames == QTTS_GUARD_MIN_LOOP,
               "endless model, defaults: repetition guard at frame %d (got %s/%s after %d frames)",
               QTTS_GUARD_MIN_LOOP, qtts_finish_reason_name(loop.res.finished_by),
               qtts_guard_reason_name(loop.res.guard), loop.res.n_frames);
    TEST_CHECK(ok && loop.codes && loop.codes[0] == 0 && loop.codes[16 * (loop.n_frames - 1)] == 0,
               "the endless model repeats codebook-0 token 0");

    base_request(&r, text);
    r.no_repetition_guard = 1;
    ok = run(e, &r, &len) == 0;
    int64_t cap = qtts_guard_frame_cap(len.res.input_tokens, QTTS_GUARD_FRAMES_PER_TOKEN);
    TEST_CHECK(ok && len.res.input_tokens > 3 && len.res.finished_by == QTTS_FINISHED_GUARD &&
                   len.res.guard == QTTS_GUARD_LENGTH && len.res.n_frames == cap,
               "loop guard off: the length guard ends it at %lld frames (%d text tokens; got %s/%s, %d frames)",
               (long long)cap, len.res.input_tokens, qtts_finish_reason_name(len.res.finished_by),
               qtts_guard_reason_name(len.res.guard), len.res.n_frames);

    base_request(&r, text);
    r.no_repetition_guard = 1;
    r.guard_frames_per_token = 2.5f;
    ok = run(e, &r, &len2) == 0;
    cap = qtts_guard_frame_cap(len2.res.input_tokens, 2.5);
    TEST_CHECK(ok && len2.res.guard == QTTS_GUARD_LENGTH && len2.res.n_frames == cap,
               "guard_frames_per_token 2.5: %lld frames (got %d)", (long long)cap, len2.res.n_frames);

    base_request(&r, text);
    r.no_repetition_guard = 1;
    r.max_frames = (int)qtts_guard_frame_cap(len.res.input_tokens, QTTS_GUARD_FRAMES_PER_TOKEN) + 30;
    ok = run(e, &r, &capped) == 0;
    TEST_CHECK(ok && capped.res.finished_by == QTTS_FINISHED_MAX_FRAMES && capped.res.guard == QTTS_GUARD_NONE &&
                   capped.res.n_frames == r.max_frames && !capped.res.finished_by_eos,
               "an explicit max_frames is the caller's cap: %d frames, max_frames (got %s, %d)", r.max_frames,
               qtts_finish_reason_name(capped.res.finished_by), capped.res.n_frames);
    /* each guarded run is a prefix of the unguarded one */
    int prefix = capped.codes && loop.codes && len.codes && len2.codes;
    if (prefix) {
        prefix = !memcmp(loop.codes, capped.codes, loop.n_frames * 16 * sizeof(int32_t)) &&
                 !memcmp(len.codes, capped.codes, len.n_frames * 16 * sizeof(int32_t)) &&
                 !memcmp(len2.codes, capped.codes, len2.n_frames * 16 * sizeof(int32_t));
    }
    TEST_CHECK(prefix, "guarded runs' codes are prefixes of the unguarded run's");
    qtts_engine_stats stats;
    qtts_engine_get_stats(e, &stats);
    TEST_CHECK(stats.finished_guard_repetition == 1 && stats.finished_guard_length == 2 &&
                   stats.finished_max_frames == 1 && stats.finished_eos == 0,
               "engine stats count endings (rep %llu len %llu max %llu eos %llu)",
               (unsigned long long)stats.finished_guard_repetition, (unsigned long long)stats.finished_guard_length,
               (unsigned long long)stats.finished_max_frames, (unsigned long long)stats.finished_eos);
    /* bad ratios */
    base_request(&r, text);
    r.guard_frames_per_token = 1e9f;
    qtts_error err = {0};
    qtts_stream *st = qtts_submit(e, &r, &err);
    TEST_CHECK(!st && err.status == QTTS_ERR_INVALID && strstr(err.message, "guard_frames_per_token"),
               "an absurd ratio is refused: %s", err.message);
    qtts_stream_free(st);
    free(loop.codes);
    free(len.codes);
    free(len2.codes);
    free(capped.codes);
    qtts_engine_free(e);
}

/* The real (golden) model: the guard on or off changes nothing. */
static void test_guard_is_transparent(void) {
    qtts_engine *e = engine_for(CV_MODEL);
    TEST_CHECK(e != NULL, "engine on the golden model");
    if (!e) return;
    const char *texts[] = {"Hello world, this is a test.", "短い文です。", "One, two, three, four, five, six."};
    for (size_t i = 0; i < 3; i++) {
        for (int greedy = 0; greedy < 2; greedy++) {
            qtts_request r;
            run_out on, off;
            base_request(&r, texts[i]);
            r.greedy = greedy;
            int ok = run(e, &r, &on) == 0;
            base_request(&r, texts[i]);
            r.greedy = greedy;
            r.guard_frames_per_token = -1;
            r.no_repetition_guard = 1;
            ok = ok && run(e, &r, &off) == 0;
            TEST_CHECK(ok && on.n_frames == off.n_frames && on.codes && off.codes &&
                           !memcmp(on.codes, off.codes, on.n_frames * 16 * sizeof(int32_t)) &&
                           on.res.finished_by == off.res.finished_by && on.res.finished_by != QTTS_FINISHED_GUARD,
                       "text %zu %s: same %zu frames with and without the guard (ended by %s)", i,
                       greedy ? "greedy" : "sampled", on.n_frames, qtts_finish_reason_name(on.res.finished_by));
            free(on.codes);
            free(off.codes);
        }
    }
    qtts_engine_free(e);
}

static double metric_value(const th_resp *r, const char *line_prefix) {
    const char *at = r->body ? strstr((const char *)r->body, line_prefix) : NULL;
    return at ? atof(at + strlen(line_prefix)) : -1;
}

static void test_server_reports(const char *dir) {
    th_server srv;
    const char *args[] = {"-m", dir, "--threads", "2", NULL};
    if (th_start(&srv, args, 120)) {
        TEST_CHECK(0, "server on the endless model starts: %s", srv.log);
        th_stop(&srv, 10);
        return;
    }
    th_resp r;
    const char *req = "{\"input\":\"Hello there, how are you?\",\"voice\":\"vivian\",\"response_format\":\"pcm\","
                      "\"temperature\":0}";
    th_post_json(srv.port, "/v1/audio/speech", NULL, req, &r, 120);
    const char *fb = th_header(&r, "X-Qtts-Finished-By");
    TEST_CHECK(r.status == 200 && fb && !strcmp(fb, "guard:repetition") &&
                   r.body_len == (size_t)QTTS_GUARD_MIN_LOOP * 1920 * 2,
               "buffered: X-Qtts-Finished-By guard:repetition, %d frames of audio (%d, %s, %zu bytes)",
               QTTS_GUARD_MIN_LOOP, r.status, fb ? fb : "(none)", r.body_len);
    th_resp_free(&r);
    req = "{\"input\":\"Hello there, how are you?\",\"voice\":\"vivian\",\"response_format\":\"pcm\",\"temperature\":0,"
          "\"stream_format\":\"sse\",\"repetition_guard\":false,\"guard_frames_per_token\":2}";
    th_post_json(srv.port, "/v1/audio/speech", NULL, req, &r, 120);
    TEST_CHECK(r.status == 200 && r.body && strstr((char *)r.body, "\"finished_by\":\"guard\",\"guard\":\"length\""),
               "SSE done event: finished_by guard, guard length (%d)", r.status);
    th_resp_free(&r);
    req = "{\"input\":\"Hi.\",\"voice\":\"vivian\",\"response_format\":\"pcm\",\"temperature\":0,\"max_new_tokens\":9,"
          "\"repetition_guard\":false}";
    th_post_json(srv.port, "/v1/audio/speech", NULL, req, &r, 120);
    fb = th_header(&r, "X-Qtts-Finished-By");
    TEST_CHECK(r.status == 200 && fb && !strcmp(fb, "max_frames") && r.body_len == 9 * 1920 * 2,
               "max_new_tokens: X-Qtts-Finished-By max_frames (%s, %zu bytes)", fb ? fb : "(none)", r.body_len);
    th_resp_free(&r);
    th_post_json(srv.port, "/v1/audio/speech", NULL,
                 "{\"input\":\"Hi.\",\"voice\":\"vivian\",\"guard_frames_per_token\":-1}", &r, 30);
    TEST_CHECK(r.status == 400 && r.body && strstr((char *)r.body, "guard_frames_per_token"),
               "guard_frames_per_token out of range: 400 (%d)", r.status);
    th_resp_free(&r);
    th_post_json(srv.port, "/v1/audio/speech", NULL, "{\"input\":\"Hi.\",\"voice\":\"vivian\",\"repetition_guard\":1}",
                 &r, 30);
    TEST_CHECK(r.status == 400, "repetition_guard must be a boolean (%d)", r.status);
    th_resp_free(&r);
    th_get(srv.port, "/metrics", NULL, &r);
    TEST_CHECK(metric_value(&r, "qtts_finished_total{by=\"guard\",reason=\"repetition\"} ") == 1 &&
                   metric_value(&r, "qtts_finished_total{by=\"guard\",reason=\"length\"} ") == 1 &&
                   metric_value(&r, "qtts_finished_total{by=\"max_frames\"} ") == 1 &&
                   metric_value(&r, "qtts_finished_total{by=\"eos\"} ") == 0,
               "/metrics counts endings by reason");
    th_resp_free(&r);
    TEST_CHECK(th_stop(&srv, 30) == 0, "server exits cleanly: %s", srv.log);

    /* server-wide defaults: --no-repetition-guard --guard-frames-per-token 1 */
    const char *args2[] = {"-m", dir, "--threads", "2", "--no-repetition-guard", "--guard-frames-per-token", "1", NULL};
    if (th_start(&srv, args2, 120)) {
        TEST_CHECK(0, "server with guard flags starts: %s", srv.log);
        th_stop(&srv, 10);
        return;
    }
    th_post_json(srv.port, "/v1/audio/speech", NULL,
                 "{\"input\":\"Hello there, how are you?\",\"voice\":\"vivian\",\"response_format\":\"pcm\","
                 "\"temperature\":0}",
                 &r, 120);
    fb = th_header(&r, "X-Qtts-Finished-By");
    size_t frames = r.body_len / (1920 * 2);
    TEST_CHECK(r.status == 200 && fb && !strcmp(fb, "guard:length") && frames > QTTS_GUARD_FRAME_ALLOWANCE &&
                   frames < QTTS_GUARD_FRAME_ALLOWANCE + 20,
               "server flags: length guard at 1 frame per token (%s, %zu frames)", fb ? fb : "(none)", frames);
    th_resp_free(&r);
    TEST_CHECK(th_stop(&srv, 30) == 0, "server exits cleanly: %s", srv.log);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    test_detector();
    struct stat st;
    if (stat(CV_MODEL "/config.json", &st)) {
        TEST_CHECK(0, "tiny golden CustomVoice model present under %s", QTTS_GOLDEN_DIR);
        return test_finish("test_runaway_guard");
    }
    char tmp[] = "/tmp/qtts_guardXXXXXX";
    if (!mkdtemp(tmp)) return test_finish("test_runaway_guard");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/endless", tmp);
    int made = endless_model_write(CV_MODEL, dir) == 0;
    TEST_CHECK(made, "endless model written to %s", dir);
    if (made) {
        test_endless_model(dir);
        test_server_reports(dir);
    }
    test_guard_is_transparent();
    rm_rf(tmp);
    return test_finish("test_runaway_guard");
}
