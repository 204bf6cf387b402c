/* `qtts serve` opens its port before the model loads: while it loads,
 * /health answers 503 {"status":"loading"} and every other route 503 with
 * Retry-After; once loaded, the same port (the socket handed over, no
 * refused connection between) serves the API and /health says ok.
 *
 * The load is held at a known point: the model folder's vocab.json is a
 * FIFO, so the tokenizer's read waits until this test writes it. */
#include <pthread.h>
#include <sys/stat.h>

#include "harness.h"
#include "support/test_util.h"
#include "test_server_http.h"

#define MODEL QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"

typedef struct {
    const char *fifo, *next; /* next: a regular copy of the file, renamed over the FIFO once it is read */
    const unsigned char *data;
    size_t n;
} fifo_feeder;

/* Writes the file to the FIFO's first reader, the regular copy taking the
 * FIFO's place first, so any later read of the path gets the file at once. */
static void *feed(void *p) {
    fifo_feeder *f = p;
    int fd = open(f->fifo, O_WRONLY); /* waits for the reader */
    if (fd < 0) return NULL;
    rename(f->next, f->fifo);
    size_t o = 0;
    while (o < f->n) {
        ssize_t k = write(fd, f->data + o, f->n - o);
        if (k <= 0) break;
        o += (size_t)k;
    }
    close(fd);
    return NULL;
}

/* Ends the feeder: where it still waits for a reader (a load that never got there), a reader of our own
 * lets its open return, and what it writes is read and dropped. */
static void feeder_stop(fifo_feeder *f, pthread_t th) {
    int fd = open(f->fifo, O_RDONLY | O_NONBLOCK);
    if (fd >= 0) {
        fcntl(fd, F_SETFL, 0);
        char buf[65536];
        double end = th_now() + 10;
        while (th_now() < end) {
            struct pollfd p = {.fd = fd, .events = POLLIN};
            if (poll(&p, 1, 100) <= 0) continue;
            if (read(fd, buf, sizeof buf) <= 0) break;
        }
        close(fd);
    }
    pthread_join(th, NULL);
}

/* A model folder: links to the golden model's files, vocab.json a FIFO. */
static int make_folder(const char *dir, char *fifo, size_t n) {
    static const char *const files[] = {"config.json",      "generation_config.json", "merges.txt",
                                        "model.safetensors", "preprocessor_config.json", "speech_tokenizer",
                                        "tokenizer_config.json"};
    char src[1024], dst[1200];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(src, sizeof src, "%s/%s", MODEL, files[i]);
        snprintf(dst, sizeof dst, "%s/%s", dir, files[i]);
        if (access(src, F_OK) == 0 && symlink(src, dst)) return -1;
    }
    snprintf(fifo, n, "%s/vocab.json", dir);
    return mkfifo(fifo, 0600);
}

/* The body holds needle (NUL-terminated copy). */
static int body_has(const th_resp *r, const char *needle) {
    if (!r->body) return 0;
    char *b = malloc(r->body_len + 1);
    if (!b) return 0;
    memcpy(b, r->body, r->body_len);
    b[r->body_len] = 0;
    int ok = strstr(b, needle) != NULL;
    free(b);
    return ok;
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    char dir[] = "/tmp/qtts-test-loading-XXXXXX", fifo[1200], next[1300], vocab[1024];
    if (!mkdtemp(dir)) return 1;
    snprintf(vocab, sizeof vocab, "%s/vocab.json", MODEL);
    unsigned char *data = NULL;
    size_t n = 0;
    TEST_CHECK(make_folder(dir, fifo, sizeof fifo) == 0 && read_bytes(vocab, &data, &n) == 0, "model folder");
    snprintf(next, sizeof next, "%s.next", fifo);
    FILE *nf = fopen(next, "wb");
    TEST_CHECK(nf && fwrite(data, 1, n, nf) == n && fclose(nf) == 0, "the regular copy");
    fifo_feeder f = {.fifo = fifo, .next = next, .data = data, .n = n};

    /* started: the "loading" line names the port long before the model is ready */
    th_server s;
    const char *args[] = {"-m", dir, "--threads", "1", NULL};
    th_start_cmd(&s, "serve", "http", args, 0.01, NULL, NULL); /* its "listening on" line cannot come yet */
    const char *tag = "http://127.0.0.1:";
    int port = 0;
    for (double end = th_now() + 60; th_now() < end && s.pid > 0 && !port;) {
        struct pollfd p = {.fd = s.err_fd, .events = POLLIN};
        poll(&p, 1, 50);
        th_drain_log(&s);
        const char *at = strstr(s.log, "loading the model");
        if (at && (at = strstr(at, tag)) && strstr(at, "says \"loading\"")) port = atoi(at + strlen(tag));
    }
    TEST_CHECK(port > 0, "no \"loading the model\" line with the port: %s", s.log);
    if (port > 0) {
        th_resp r;
        TEST_CHECK(th_get(port, "/health", NULL, &r) == 0 && r.status == 503 && body_has(&r, "\"status\":\"loading\""),
                   "/health while loading: %d", r.status);
        th_resp_free(&r);
        TEST_CHECK(th_get(port, "/healthz", NULL, &r) == 0 && r.status == 503 && body_has(&r, "loading"),
                   "/healthz while loading: %d", r.status);
        th_resp_free(&r);
        TEST_CHECK(th_get(port, "/v1/models", NULL, &r) == 0 && r.status == 503 && th_header(&r, "Retry-After") &&
                       body_has(&r, "\"code\":\"loading\""),
                   "/v1/models while loading: %d", r.status);
        th_resp_free(&r);
        TEST_CHECK(th_post_json(port, "/v1/audio/speech", NULL, "{\"input\":\"Hello.\",\"voice\":\"ryan\"}", &r, 10) ==
                           0 &&
                       r.status == 503 && th_header(&r, "Retry-After"),
                   "speech while loading: %d", r.status);
        th_resp_free(&r);
        /* still loading: the tokenizer waits for its file */
        TEST_CHECK(th_get(port, "/health", NULL, &r) == 0 && r.status == 503, "still loading: %d", r.status);
        th_resp_free(&r);

        /* the load goes on; /health goes from loading to ok on the same port, never refusing */
        pthread_t th;
        int feeding = pthread_create(&th, NULL, feed, &f) == 0;
        int ok = 0, refused = 0, other = 0;
        for (double end = th_now() + 120; th_now() < end && !ok;) {
            if (th_get(port, "/health", NULL, &r) != 0) refused++;
            else if (r.status == 200 && body_has(&r, "\"status\":\"ok\"")) ok = 1;
            else if (!(r.status == 503 && body_has(&r, "loading"))) other++;
            th_resp_free(&r);
            struct timespec ts = {0, 20 * 1000000};
            nanosleep(&ts, NULL);
        }
        TEST_CHECK(ok, "/health never said ok: %s", s.log);
        TEST_CHECK(refused == 0 && other == 0, "%d refused and %d other answers between loading and ok", refused,
                   other);
        th_drain_log(&s);
        char banner[64];
        snprintf(banner, sizeof banner, "listening on http://127.0.0.1:%d", port);
        TEST_CHECK(strstr(s.log, banner) != NULL, "the server listens on the loading port %d: %s", port, s.log);
        TEST_CHECK(th_get(port, "/v1/models", NULL, &r) == 0 && r.status == 200, "/v1/models once loaded: %d",
                   r.status);
        th_resp_free(&r);
        if (feeding) feeder_stop(&f, th);
    }
    TEST_CHECK(th_stop(&s, 30) == 0, "serve exits cleanly: %s", s.log);
    free(data);
    rm_rf(dir);
    return test_finish("test_server_loading");
}
