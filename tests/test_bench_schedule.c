/* `qtts bench` and `qtts serve` run the same frame loop: on the same model,
 * with overlap off and on, both report the same schedule (the bench from the
 * engine's request times, the server from the engine's per-request line on
 * stderr with -v): the first decoder step alone, the same number of frames
 * per later step, and decoder steps beside LM steps only where asked. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "harness.h"
#include "model/config.h"
#include "test_server_http.h"

#define MODEL QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"

typedef struct {
    int frames;
    long long steps, overlapped;
} schedule;

static int bench_schedule(qtts_overlap_mode mode, int frames, schedule *out) {
    qtts_bench_options o;
    qtts_bench_options_default(&o);
    o.model_path = MODEL;
    o.wtype = QTTS_DTYPE_INVALID;
    o.frames = frames;
    o.threads = 2;
    o.probe = 0;
    o.overlap = mode;
    qtts_bench_result r;
    qtts_err err = {0};
    if (qtts_bench_run(&o, &r, &err)) {
        TEST_CHECK(0, "bench: %s", err.msg);
        return -1;
    }
    *out = (schedule){(int)r.frames_out, (long long)r.decode_steps, (long long)r.overlapped_steps};
    return 0;
}

static int server_schedule(const char *overlap, const char *speaker, schedule *out) {
    th_server srv;
    const char *args[] = {"-m", MODEL, "--threads", "2", "--overlap", overlap, "-v", NULL};
    if (th_start(&srv, args, 120)) {
        TEST_CHECK(0, "server starts (--overlap %s)", overlap);
        th_stop(&srv, 10);
        return -1;
    }
    char body[512];
    snprintf(body, sizeof body,
             "{\"model\":\"qwen3-tts\",\"input\":\"Hello world, this is a longer test of the schedule.\",\"voice\":"
             "\"%s\",\"response_format\":\"pcm\",\"seed\":3,\"max_new_tokens\":14}",
             speaker);
    th_resp r;
    int rc = th_post_json(srv.port, "/v1/audio/speech", NULL, body, &r, 120);
    TEST_CHECK(rc == 0 && r.status == 200, "speech request: %d", r.status);
    th_resp_free(&r);
    const char *line = NULL;
    for (int i = 0; i < 100 && !line; i++) { /* the engine's line follows the response's end */
        th_drain_log(&srv);
        line = strstr(srv.log, "request done: ");
        if (!line) usleep(20000);
    }
    int n = line ? sscanf(line, "request done: %d frames, %lld decoder steps, %lld beside", &out->frames, &out->steps,
                          &out->overlapped)
                 : 0;
    TEST_CHECK(n == 3, "the server's schedule line (--overlap %s): %s", overlap, srv.log);
    th_stop(&srv, 30);
    return n == 3 ? 0 : -1;
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    qtts_model_config cfg;
    qtts_err err = {0};
    if (qtts_model_config_load(&cfg, MODEL, &err) || cfg.n_speakers < 1) {
        TEST_CHECK(0, "tiny CustomVoice model: %s", err.msg);
        return test_finish("test_bench_schedule");
    }
    static const struct {
        qtts_overlap_mode mode;
        const char *flag;
    } modes[] = {{QTTS_OVERLAP_NEVER, "off"}, {QTTS_OVERLAP_ALWAYS, "on"}};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        schedule b, s;
        /* the server's request first: the bench then runs exactly as many frames */
        if (server_schedule(modes[i].flag, cfg.speakers[0].name, &s) || bench_schedule(modes[i].mode, s.frames, &b))
            continue;
        printf("overlap %s: bench %d frames in %lld steps (%lld beside LM steps), server %d frames in %lld (%lld)\n",
               modes[i].flag, b.frames, b.steps, b.overlapped, s.frames, s.steps, s.overlapped);
        TEST_CHECK(b.steps >= 2 && s.steps >= 2, "overlap %s: several decoder steps each", modes[i].flag);
        if (modes[i].mode == QTTS_OVERLAP_NEVER) {
            /* the same frames in as many steps, give or take one: the decode policy (engine/decode_policy.h)
               takes smaller steps when the audio's lead over real time shrinks, which a loaded host changes */
            TEST_CHECK(b.frames == s.frames && llabs(b.steps - s.steps) <= 1 && b.steps < b.frames,
                       "overlap off: %d frames in %lld steps (bench) vs %d in %lld (server)", b.frames, b.steps,
                       s.frames, s.steps);
            TEST_CHECK(b.overlapped == 0 && s.overlapped == 0, "overlap off: none beside LM steps (%lld, %lld)",
                       b.overlapped, s.overlapped);
        } else {
            /* every step but the first and the last beside LM steps, on both */
            TEST_CHECK(b.overlapped >= 1 && b.overlapped <= b.steps - 1 && s.overlapped >= 1 &&
                           s.overlapped <= s.steps - 1,
                       "overlap on: %lld of %lld (bench), %lld of %lld (server)", b.overlapped, b.steps, s.overlapped,
                       s.steps);
        }
    }
    return test_finish("test_bench_schedule");
}
