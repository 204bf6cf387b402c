/* A stream tells its reader when something is ready (qtts_stream_set_notify,
 * qtts_stream_set_notify_fd): a reader that sleeps in poll() on an eventfd
 * gets every sample, wakes only for new audio, the end or a failure, and
 * reads exactly what the blocking read gives. */
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "harness.h"
#include "qtts.h"

enum { MAX_SAMPLES = 64 * 1920 };

static void request(qtts_request *r) {
    qtts_request_default(r);
    r->text = "Hello there, this is a test.";
    r->speaker = "ryan";
    r->greedy = 1;
    r->max_frames = 12;
}

/* The reference: blocking reads. */
static long read_blocking(qtts_engine *e, float *out) {
    qtts_request r;
    request(&r);
    qtts_error err = {0};
    qtts_stream *s = qtts_submit(e, &r, &err);
    TEST_CHECK(s != NULL, "submit: %s", err.message);
    if (!s) return -1;
    long total = 0, n;
    while ((n = qtts_stream_read(s, out + total, MAX_SAMPLES - (size_t)total, -1)) > 0) total += n;
    TEST_CHECK(n == 0, "blocking read ended with %ld (%s)", n, qtts_stream_error(s));
    qtts_stream_free(s);
    return total;
}

/* Sleeps in poll() on an eventfd; reads with a zero timeout when woken. */
static long read_polled(qtts_engine *e, float *out, int *wakeups, int *empty_wakeups) {
    qtts_request r;
    request(&r);
    qtts_error err = {0};
    qtts_stream *s = qtts_submit(e, &r, &err);
    TEST_CHECK(s != NULL, "submit: %s", err.message);
    if (!s) return -1;
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    TEST_CHECK(fd >= 0, "eventfd");
    qtts_stream_set_notify_fd(s, fd);
    long total = 0;
    int ended = 0;
    *wakeups = *empty_wakeups = 0;
    while (!ended) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int pr = poll(&pfd, 1, 20000);
        TEST_CHECK(pr == 1, "poll timed out: no notification in 20 s");
        if (pr != 1) break;
        uint64_t v;
        TEST_CHECK(read(fd, &v, sizeof v) == sizeof v && v >= 1, "eventfd value");
        ++*wakeups;
        int got = 0;
        for (;;) {
            long n = qtts_stream_read(s, out + total, MAX_SAMPLES - (size_t)total, 0);
            if (n > 0) total += n, got = 1;
            else if (n == 0) { ended = 1, got = 1; break; }
            else if (n == QTTS_STREAM_TIMEOUT) break;
            else { TEST_CHECK(0, "stream failed: %s", qtts_stream_error(s)); ended = 1; break; }
        }
        if (!got) ++*empty_wakeups;
    }
    qtts_stream_set_notify_fd(s, -1);
    qtts_stream_free(s);
    close(fd);
    return total;
}

static void count_call(void *user) { atomic_fetch_add((atomic_int *)user, 1); }

int main(void) {
    char path[1024];
    qtts_engine_params p;
    qtts_engine_params_default(&p);
    p.model_path = golden_path(path, sizeof path, "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny");
    p.n_threads = 2;
    qtts_error err = {0};
    qtts_engine *e = qtts_engine_create(&p, &err);
    TEST_CHECK(e != NULL, "engine: %s", err.message);
    if (!e) return test_finish("test_stream_notify");

    float *want = malloc(MAX_SAMPLES * sizeof *want), *got = malloc(MAX_SAMPLES * sizeof *got);
    TEST_CHECK(want && got, "out of memory");
    long nw = read_blocking(e, want);
    int wakeups = 0, empty = 0;
    long ng = read_polled(e, got, &wakeups, &empty);
    TEST_CHECK(nw > 0 && ng == nw, "polled reader got %ld samples, the blocking one %ld", ng, nw);
    if (nw > 0 && ng == nw) TEST_CHECK(!memcmp(want, got, (size_t)nw * sizeof *want), "samples differ");
    /* one wake-up per decoder step at most (the decoder pushes whole steps), plus the end */
    long frames = nw / 1920;
    TEST_CHECK(wakeups >= 1 && wakeups <= frames + 1, "%d wake-ups for %ld frames", wakeups, frames);
    /* an eventfd adds up events, so a wake-up finds something unless the read
     * before it took audio pushed after that event */
    TEST_CHECK(empty <= wakeups / 2, "%d of %d wake-ups found nothing", empty, wakeups);

    /* a callback set after the end is called once at once; removed, never again */
    qtts_request r;
    request(&r);
    r.max_frames = 2;
    qtts_stream *s = qtts_submit(e, &r, &err);
    TEST_CHECK(s != NULL, "submit: %s", err.message);
    if (s) {
        long n;
        while ((n = qtts_stream_read(s, got, MAX_SAMPLES, -1)) > 0) {}
        atomic_int calls = 0;
        qtts_stream_set_notify(s, count_call, &calls);
        TEST_CHECK(atomic_load(&calls) == 1, "notify set on an ended stream: %d calls, want 1", atomic_load(&calls));
        qtts_stream_set_notify(s, NULL, NULL);
        qtts_stream_free(s);
    }

    /* a callback on a running stream: called on the engine thread for every push and the end */
    request(&r);
    s = qtts_submit(e, &r, &err);
    if (s) {
        atomic_int calls = 0;
        qtts_stream_set_notify(s, count_call, &calls);
        long n, total = 0;
        while ((n = qtts_stream_read(s, got + total, MAX_SAMPLES - (size_t)total, -1)) > 0) total += n;
        qtts_stream_set_notify(s, NULL, NULL);
        TEST_CHECK(atomic_load(&calls) >= 1 && atomic_load(&calls) <= frames + 2, "%d callback calls for %ld frames",
                   atomic_load(&calls), frames);
        qtts_stream_free(s);
    }
    free(want);
    free(got);
    qtts_engine_free(e);
    return test_finish("test_stream_notify");
}
