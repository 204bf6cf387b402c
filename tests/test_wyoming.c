/* `qtts wyoming` as a child process, spoken to over TCP by a client written
 * here from the published protocol (rhasspy/wyoming README: a JSON header
 * line, then data_length bytes of JSON merged into data, then
 * payload_length bytes of payload), with the tiny golden models:
 *  - CustomVoice: describe -> info (program, voices = speakers, ISO
 *    languages, streaming support); ping/pong; one-shot synthesize
 *    (audio-start/chunk/stop, chunk sizes = width*channels*samples);
 *    streaming synthesize-start / -chunk x N / synthesize / synthesize-stop
 *    (audio before the text is complete, synthesize-stopped last, samples
 *    equal to a one-shot synthesis with the same qtts seed); request errors;
 *    malformed events (bad JSON, data_length too large, a payload without
 *    payload_length, an over-long header, no type) get an error and the
 *    server keeps serving; the connection limit; the idle timeout; clients
 *    that disconnect mid-synthesis (cancelled, the connection closed, the
 *    engine idle); the thread invariant (the thread count is the same
 *    before, during and after connections; only the engine computes);
 *    --zeroconf without an Avahi daemon (one warning, serving goes on);
 *  - Base: voices registered with `qtts voices add` (x-vector and in
 *    context), listed by describe (one added while running too), spoken
 *    one-shot and streamed;
 *  - VoiceDesign: --instruct is required; the "design" voice speaks.
 * Prints the time from the first synthesize-chunk to the first audio-chunk. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/stat.h>

#include "harness.h"
#include "support/npy.h"
#include "support/endless_model.h"
#include "support/test_util.h"
#include "test_server_http.h"

#define CV_MODEL QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"
#define BASE_MODEL QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-0.6B-Base-tiny"
#define VD_MODEL QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-1.7B-VoiceDesign-tiny"
#define REF_TEXT "Hello there, this is my voice."
#define MAX_CONN 4
#define MAX_TIDS 256

/* ---- the server child ---- */

static int wy_start(th_server *s, const char *const *args, double timeout_s) {
    return th_start_cmd(s, "wyoming", "tcp", args, timeout_s, NULL, NULL);
}

/* Runs `qtts ARGS` (a shell fragment); exit status, output in out. */
static int qtts_cmd(const char *args, char *out, size_t cap) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", QTTS_BINARY, args);
    return test_run_capture(cmd, out, cap);
}

/* ---- a Wyoming client ---- */

typedef struct {
    int fd;
    unsigned char *buf;
    size_t len, cap;
} wconn;

typedef struct {
    char type[64];
    cJSON *data; /* an object: header data with the data block merged over it */
    unsigned char *payload;
    size_t payload_len;
} wev;

static void wev_free(wev *e) {
    cJSON_Delete(e->data);
    free(e->payload);
    memset(e, 0, sizeof *e);
}

/* The server under test: its stderr is read whenever a connection opens,
 * so a verbose server never blocks on a full pipe (test state only). */
static th_server *g_srv;

static int wc_open(wconn *c, int port) {
    if (g_srv) th_drain_log(g_srv);
    memset(c, 0, sizeof *c);
    c->fd = th_connect(port);
    return c->fd >= 0 ? 0 : -1;
}

static void wc_close(wconn *c) {
    if (c->fd >= 0) close(c->fd);
    free(c->buf);
    memset(c, 0, sizeof *c);
    c->fd = -1;
}

/* Sends one event; data (a JSON object text or NULL) goes inline in the
 * header or, with as_block, as the data_length block. */
static int wc_send(wconn *c, const char *type, const char *data, int as_block, const void *payload, size_t n) {
    size_t dl = data ? strlen(data) : 0;
    char *msg = malloc(256 + 2 * dl + n);
    if (!msg) return -1;
    int h;
    if (data && !as_block)
        h = sprintf(msg, "{\"type\":\"%s\",\"data\":%s%s", type, data, n ? "" : "}\n");
    else if (data)
        h = sprintf(msg, "{\"type\":\"%s\",\"data_length\":%zu%s", type, dl, n ? "" : "}\n");
    else
        h = sprintf(msg, "{\"type\":\"%s\"%s", type, n ? "" : "}\n");
    if (n) h += sprintf(msg + h, ",\"payload_length\":%zu}\n", n);
    size_t len = (size_t)h;
    if (data && as_block) {
        memcpy(msg + len, data, dl);
        len += dl;
    }
    if (n) memcpy(msg + len, payload, n);
    int rc = th_send_all(c->fd, msg, len + n);
    free(msg);
    return rc;
}

static int wc_send_raw(wconn *c, const void *p, size_t n) { return th_send_all(c->fd, p, n); }

/* 1 with an event, 0 at EOF, -1 on timeout or a malformed event. */
static int wc_read(wconn *c, wev *ev, double timeout_s) {
    memset(ev, 0, sizeof *ev);
    double end = th_now() + timeout_s;
    for (;;) {
        unsigned char *nl = c->len ? memchr(c->buf, '\n', c->len) : NULL;
        if (nl) {
            size_t hl = (size_t)(nl - c->buf);
            cJSON *h = cJSON_ParseWithLength((const char *)c->buf, hl);
            const cJSON *t = cJSON_GetObjectItem(h, "type"), *dl = cJSON_GetObjectItem(h, "data_length"),
                        *pl = cJSON_GetObjectItem(h, "payload_length");
            if (!cJSON_IsString(t)) {
                cJSON_Delete(h);
                return -1;
            }
            size_t d = cJSON_IsNumber(dl) ? (size_t)dl->valuedouble : 0, p = cJSON_IsNumber(pl) ? (size_t)pl->valuedouble : 0;
            if (c->len >= hl + 1 + d + p) {
                snprintf(ev->type, sizeof ev->type, "%s", t->valuestring);
                cJSON *inl = cJSON_GetObjectItem(h, "data");
                ev->data = cJSON_IsObject(inl) ? cJSON_Duplicate(inl, 1) : cJSON_CreateObject();
                if (d) {
                    cJSON *blk = cJSON_ParseWithLength((const char *)c->buf + hl + 1, d);
                    for (cJSON *it = blk ? blk->child : NULL; it; it = it->next) {
                        cJSON_DeleteItemFromObject(ev->data, it->string);
                        cJSON_AddItemToObject(ev->data, it->string, cJSON_Duplicate(it, 1));
                    }
                    cJSON_Delete(blk);
                }
                if (p) {
                    ev->payload = malloc(p);
                    memcpy(ev->payload, c->buf + hl + 1 + d, p);
                    ev->payload_len = p;
                }
                size_t used = hl + 1 + d + p;
                memmove(c->buf, c->buf + used, c->len - used);
                c->len -= used;
                cJSON_Delete(h);
                return 1;
            }
            cJSON_Delete(h);
        }
        int left = (int)((end - th_now()) * 1000);
        struct pollfd pf = {.fd = c->fd, .events = POLLIN};
        if (left <= 0 || poll(&pf, 1, left) <= 0) return -1;
        if (c->cap - c->len < 65536) {
            size_t nc = c->cap ? c->cap * 2 : 131072;
            unsigned char *q = realloc(c->buf, nc);
            if (!q) return -1;
            c->buf = q;
            c->cap = nc;
        }
        ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
        if (n == 0) return 0;
        if (n < 0) return errno == ECONNRESET ? 0 : -1;
        c->len += (size_t)n;
    }
}

static int num_field(const cJSON *o, const char *k, double *v) {
    const cJSON *x = cJSON_GetObjectItem(o, k);
    if (!cJSON_IsNumber(x)) return 0;
    *v = x->valuedouble;
    return 1;
}

static const char *str_field(const cJSON *o, const char *k) {
    const cJSON *x = cJSON_GetObjectItem(o, k);
    return cJSON_IsString(x) ? x->valuestring : NULL;
}

/* Opens a connection that holds one of the server's connection slots: a
 * ping answered by pong. A slot still held by a just-closed connection (the
 * server notices the close a moment later on a loaded machine) is waited
 * for: a "busy" answer is retried for up to 10 s. */
static int wc_open_slot(wconn *c, int port) {
    double end = th_now() + 10;
    for (;;) {
        if (wc_open(c, port)) return -1;
        wev ev;
        int r = wc_send(c, "ping", NULL, 0, NULL, 0) == 0 ? wc_read(c, &ev, 10) : -1;
        int pong = r == 1 && !strcmp(ev.type, "pong");
        int busy = r == 1 && !strcmp(ev.type, "error") && str_field(ev.data, "code") &&
                   !strcmp(str_field(ev.data, "code"), "busy");
        if (r == 1) wev_free(&ev);
        if (pong) return 0;
        wc_close(c);
        if (!busy || th_now() > end) return -1;
        nanosleep(&(struct timespec){0, 50 * 1000000}, NULL);
    }
}


/* ---- audio ---- */

typedef struct {
    int16_t *s;
    size_t n, cap;
    int started, stopped, synth_stopped, chunks, bad_chunks, order_bad, eof, timed_out;
    size_t max_chunk;
    char err_code[64], err_text[512];
    double t_first_chunk;
} audio;

static void audio_free(audio *a) { free(a->s); }

/* Reads events until `until` (audio-stop or synthesize-stopped), an error,
 * EOF or the timeout. */
static void collect(wconn *c, const char *until, audio *a, double timeout_s) {
    for (;;) {
        wev ev;
        int r = wc_read(c, &ev, timeout_s);
        if (r <= 0) {
            a->eof = r == 0;
            a->timed_out = r < 0;
            return;
        }
        double rate = 0, width = 0, ch = 0;
        int fmt = num_field(ev.data, "rate", &rate) && num_field(ev.data, "width", &width) &&
                  num_field(ev.data, "channels", &ch);
        if (!strcmp(ev.type, "audio-start")) {
            if (a->started || !fmt || rate != 24000 || width != 2 || ch != 1) a->order_bad++;
            a->started = 1;
        } else if (!strcmp(ev.type, "audio-chunk")) {
            if (!a->chunks) a->t_first_chunk = th_now();
            a->chunks++;
            if (!a->started || a->stopped) a->order_bad++;
            size_t frame = (size_t)(width * ch);
            if (!fmt || rate != 24000 || width != 2 || ch != 1 || !ev.payload_len || ev.payload_len % frame) {
                a->bad_chunks++;
            } else {
                size_t k = ev.payload_len / frame; /* samples: payload = width * channels * samples */
                if (k > a->max_chunk) a->max_chunk = k;
                if (a->n + k > a->cap) {
                    a->cap = (a->n + k) * 2;
                    a->s = realloc(a->s, a->cap * sizeof *a->s);
                }
                for (size_t i = 0; i < k; i++)
                    a->s[a->n + i] = (int16_t)(ev.payload[2 * i] | (ev.payload[2 * i + 1] << 8));
                a->n += k;
            }
        } else if (!strcmp(ev.type, "audio-stop")) {
            if (!a->started || a->stopped) a->order_bad++;
            a->stopped = 1;
        } else if (!strcmp(ev.type, "synthesize-stopped")) {
            if (!a->stopped) a->order_bad++;
            a->synth_stopped = 1;
        } else if (!strcmp(ev.type, "error")) {
            snprintf(a->err_code, sizeof a->err_code, "%s", str_field(ev.data, "code") ? str_field(ev.data, "code") : "");
            snprintf(a->err_text, sizeof a->err_text, "%s", str_field(ev.data, "text") ? str_field(ev.data, "text") : "");
        }
        int done = !strcmp(ev.type, until) || !strcmp(ev.type, "error");
        wev_free(&ev);
        if (done) return;
    }
}

static int one_shot(int port, const char *data, audio *a) {
    memset(a, 0, sizeof *a);
    wconn c;
    if (wc_open_slot(&c, port) || wc_send(&c, "synthesize", data, 0, NULL, 0)) return -1;
    collect(&c, "audio-stop", a, 60);
    wc_close(&c);
    return 0;
}

/* synthesize-start, the pieces (waiting up to first_wait_s for the first
 * audio after the first one), synthesize (the whole text), synthesize-stop. *first_ms: first
 * piece -> first audio-chunk; *before_stop: audio came before the text was complete. */
static int streamed(int port, const char *start_data, const char *const *pieces, int n, double first_wait_s, audio *a,
                    double *first_ms, int *before_stop) {
    memset(a, 0, sizeof *a);
    *first_ms = -1;
    *before_stop = 0;
    wconn c;
    if (wc_open_slot(&c, port) || wc_send(&c, "synthesize-start", start_data, 1, NULL, 0)) return -1;
    char full[2048] = "", js[4096];
    for (int i = 0; i < n; i++) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "text", pieces[i]);
        char *p = cJSON_PrintUnformatted(d);
        double t0 = th_now();
        wc_send(&c, "synthesize-chunk", p, i % 2, NULL, 0);
        free(p);
        cJSON_Delete(d);
        strncat(full, pieces[i], sizeof full - strlen(full) - 1);
        if (i == 0) { /* the first words alone must start the audio */
            for (double end = th_now() + first_wait_s; !a->chunks && th_now() < end && !a->err_code[0];) {
                wev ev;
                if (wc_read(&c, &ev, end - th_now()) <= 0) break;
                if (!strcmp(ev.type, "audio-start")) a->started = 1;
                if (!strcmp(ev.type, "error"))
                    snprintf(a->err_text, sizeof a->err_text, "%s", str_field(ev.data, "text") ? str_field(ev.data, "text") : "");
                if (!strcmp(ev.type, "audio-chunk")) {
                    *first_ms = (th_now() - t0) * 1000;
                    *before_stop = 1;
                    a->t_first_chunk = th_now();
                    a->chunks = 1;
                    a->n = ev.payload_len / 2;
                    a->cap = a->n * 4 + 16;
                    a->s = malloc(a->cap * sizeof *a->s);
                    for (size_t k = 0; k < a->n; k++)
                        a->s[k] = (int16_t)(ev.payload[2 * k] | (ev.payload[2 * k + 1] << 8));
                    a->max_chunk = a->n;
                }
                wev_free(&ev);
            }
        } else {
            struct timespec ts = {0, 20 * 1000000};
            nanosleep(&ts, NULL);
        }
    }
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "text", full);
    char *p = cJSON_PrintUnformatted(d);
    snprintf(js, sizeof js, "%s", p);
    free(p);
    cJSON_Delete(d);
    wc_send(&c, "synthesize", js, 0, NULL, 0); /* what Home Assistant sends too: to be ignored */
    wc_send(&c, "synthesize-stop", NULL, 0, NULL, 0);
    collect(&c, "synthesize-stopped", a, 60);
    wc_close(&c);
    return 0;
}

static int same_audio(const audio *x, const audio *y) {
    return x->n && x->n == y->n && !memcmp(x->s, y->s, x->n * sizeof *x->s);
}

/* ---- threads and CPU time through /proc ---- */

static int list_tids(pid_t pid, int *out, int max) {
    char p[64];
    snprintf(p, sizeof p, "/proc/%d/task", (int)pid);
    DIR *d = opendir(p);
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] >= '0' && e->d_name[0] <= '9' && n < max) out[n++] = atoi(e->d_name);
    closedir(d);
    return n;
}

static long long tid_ticks(pid_t pid, int tid) {
    char p[96], b[1024];
    snprintf(p, sizeof p, "/proc/%d/task/%d/stat", (int)pid, tid);
    FILE *f = fopen(p, "r");
    if (!f) return 0;
    size_t n = fread(b, 1, sizeof b - 1, f);
    fclose(f);
    b[n] = 0;
    const char *s = strrchr(b, ')');
    long long ut = 0, st = 0;
    int field = 2;
    for (const char *q = s ? s + 1 : b + n; *q; q++) { /* fields after ')': 3 state ... 14 utime 15 stime */
        if (*q != ' ') continue;
        field++;
        if (field == 14) ut = atoll(q + 1);
        if (field == 15) {
            st = atoll(q + 1);
            break;
        }
    }
    return ut + st;
}

/* Waits until the thread count is want; returns the last count. */
static int wait_threads(pid_t pid, int want, double timeout_s) {
    int n = -1;
    for (double end = th_now() + timeout_s; th_now() < end; nanosleep(&(struct timespec){0, 20000000}, NULL))
        if ((n = th_proc_threads(pid)) == want) break;
    return n;
}

/* ---- CustomVoice ---- */

static void check_info(const wev *ev, const char *want_voice, int want_voices, const char *what) {
    const cJSON *tts = cJSON_GetObjectItem(ev->data, "tts"), *prog = cJSON_GetArrayItem(tts, 0);
    const cJSON *attr = cJSON_GetObjectItem(prog, "attribution"), *voices = cJSON_GetObjectItem(prog, "voices");
    TEST_CHECK(!strcmp(ev->type, "info") && cJSON_GetArraySize(tts) == 1, "%s: info with one tts program", what);
    TEST_CHECK(str_field(prog, "name") && !strcmp(str_field(prog, "name"), "qtts") && str_field(prog, "description") &&
                   str_field(prog, "version") && cJSON_IsTrue(cJSON_GetObjectItem(prog, "installed")) &&
                   cJSON_IsTrue(cJSON_GetObjectItem(prog, "supports_synthesize_streaming")) &&
                   str_field(attr, "name") && str_field(attr, "url"),
               "%s: program name qtts, description, version, installed, attribution, supports_synthesize_streaming",
               what);
    int n = cJSON_GetArraySize(voices), good = 0, found = 0;
    for (int i = 0; i < n; i++) {
        const cJSON *v = cJSON_GetArrayItem(voices, i), *langs = cJSON_GetObjectItem(v, "languages");
        const cJSON *va = cJSON_GetObjectItem(v, "attribution");
        int has_en = 0;
        for (int k = 0; k < cJSON_GetArraySize(langs); k++) {
            const char *l = cJSON_GetArrayItem(langs, k)->valuestring;
            has_en |= l && !strcmp(l, "en");
        }
        good += str_field(v, "name") && str_field(v, "description") && str_field(v, "version") &&
                cJSON_IsTrue(cJSON_GetObjectItem(v, "installed")) && str_field(va, "name") && str_field(va, "url") &&
                cJSON_GetArraySize(langs) == 10 && has_en;
        found += str_field(v, "name") && !strcmp(str_field(v, "name"), want_voice);
    }
    TEST_CHECK(n == want_voices && good == n && found == 1,
               "%s: %d voices (want %d), %d complete (name, description, attribution, installed, version, 10 ISO "
               "languages with 'en'), '%s' listed %d times",
               what, n, want_voices, good, want_voice, found);
}

static void test_describe_ping(int port) {
    wconn c;
    TEST_CHECK(wc_open_slot(&c, port) == 0, "connect");
    wev ev;
    wc_send(&c, "describe", NULL, 0, NULL, 0);
    TEST_CHECK(wc_read(&c, &ev, 10) == 1, "describe answered");
    check_info(&ev, "uncle_fu", 9, "CustomVoice describe");
    wev_free(&ev);
    wc_send(&c, "ping", "{\"text\":\"are you there?\"}", 1, NULL, 0);
    TEST_CHECK(wc_read(&c, &ev, 10) == 1 && !strcmp(ev.type, "pong") && str_field(ev.data, "text") &&
                   !strcmp(str_field(ev.data, "text"), "are you there?"),
               "ping {text} -> pong with the text echoed (%s)", ev.type);
    wev_free(&ev);
    wc_send(&c, "ping", NULL, 0, NULL, 0);
    TEST_CHECK(wc_read(&c, &ev, 10) == 1 && !strcmp(ev.type, "pong") && !str_field(ev.data, "text"),
               "ping -> pong");
    wev_free(&ev);

    /* unknown events are ignored: the next answer is the ping's */
    unsigned char junk[16] = {0, 1, 2, 3, '\n', 5};
    wc_send(&c, "some-future-event", "{\"x\":[1,2]}", 0, NULL, 0);
    wc_send(&c, "audio-chunk", "{\"rate\":16000,\"width\":2,\"channels\":1}", 1, junk, sizeof junk);
    wc_send(&c, "ping", "{\"text\":\"2\"}", 0, NULL, 0);
    TEST_CHECK(wc_read(&c, &ev, 10) == 1 && !strcmp(ev.type, "pong") && str_field(ev.data, "text") &&
                   !strcmp(str_field(ev.data, "text"), "2"),
               "unknown events and client audio are ignored (got %s)", ev.type);
    wev_free(&ev);
    /* a ping text that is not UTF-8 is not echoed (that would be invalid JSON): an error, as for any bad request */
    wc_send(&c, "ping", "{\"text\":\"\xff\xfe\"}", 0, NULL, 0);
    TEST_CHECK(wc_read(&c, &ev, 10) == 1 && !strcmp(ev.type, "error") && str_field(ev.data, "code") &&
                   !strcmp(str_field(ev.data, "code"), "invalid_request"),
               "ping with non-UTF-8 text -> error invalid_request (got %s)", ev.type ? ev.type : "nothing");
    wev_free(&ev);
    wc_close(&c);
}

#define EXT "\"qtts\":{\"seed\":7,\"max_frames\":24%s}"
static const char *const k_pieces[] = {"Hello there, ", "this is ", "a streamed ", "test of ", "Wyoming."};
#define K_TEXT "Hello there, this is a streamed test of Wyoming."

static double test_synthesis(int port) {
    audio a, b, s;
    one_shot(port, "{\"text\":\"" K_TEXT "\",\"voice\":{\"name\":\"vivian\"}," "\"qtts\":{\"seed\":7,\"max_frames\":24,\"layout\":\"streaming\"}}", &a);
    TEST_CHECK(a.started && a.stopped && a.n > 0 && !a.bad_chunks && !a.order_bad && !a.err_code[0],
               "one-shot synthesize: audio-start, %d chunks, %zu samples, audio-stop (bad %d, order %d, error '%s')",
               a.chunks, a.n, a.bad_chunks, a.order_bad, a.err_text);
    TEST_CHECK(a.max_chunk <= 4800, "audio-chunk events hold at most 200 ms (%zu samples)", a.max_chunk);
    one_shot(port, "{\"text\":\"" K_TEXT "\",\"voice\":{\"name\":\"vivian\"}," "\"qtts\":{\"seed\":7,\"max_frames\":24,\"layout\":\"streaming\"}}", &b);
    TEST_CHECK(same_audio(&a, &b), "the same seed gives the same samples (%zu vs %zu)", a.n, b.n);
    audio_free(&b);
    /* the default voice and layout, a language code */
    one_shot(port, "{\"text\":\"Short one.\",\"voice\":{\"language\":\"en-US\"},\"qtts\":{\"max_frames\":6}}", &b);
    TEST_CHECK(b.stopped && b.n > 0 && !b.err_code[0], "no voice name, language en-US: audio (%s)", b.err_text);
    audio_free(&b);
    one_shot(port, "{\"text\":\"   \"}", &b);
    TEST_CHECK(b.started && b.stopped && b.n == 0 && !b.err_code[0], "blank text: audio-start + audio-stop, no audio");
    audio_free(&b);
    double first_ms;
    int before_stop;
    streamed(port, "{\"voice\":{\"name\":\"vivian\"}," "\"qtts\":{\"seed\":7,\"max_frames\":24}}", k_pieces, 5, 20, &s,
             &first_ms, &before_stop);
    TEST_CHECK(before_stop && first_ms >= 0, "streaming: audio arrives after the first synthesize-chunk, before the "
                                             "text is complete (%.1f ms; error '%s')", first_ms, s.err_text);
    TEST_CHECK(s.started && s.stopped && s.synth_stopped && !s.order_bad && !s.bad_chunks && !s.err_code[0],
               "streaming: audio-start .. audio-stop, then synthesize-stopped (order %d, error '%s')", s.order_bad,
               s.err_text);
    TEST_CHECK(same_audio(&s, &a), "streamed samples equal the one-shot synthesis with the same seed (%zu vs %zu)",
               s.n, a.n);
    printf("streaming: first synthesize-chunk -> first audio-chunk %.1f ms; %zu samples in %d chunks (one-shot %zu)\n",
           first_ms, s.n, s.chunks, a.n);
    audio_free(&s);
    /* streaming with no words: an empty audio stream, then synthesize-stopped */
    const char *const blank[] = {" ", "\n"};
    double f2;
    int b2;
    streamed(port, "{}", blank, 2, 0, &s, &f2, &b2);
    TEST_CHECK(s.started && s.stopped && s.synth_stopped && s.n == 0 && !s.err_code[0],
               "streaming blank text: audio-start, audio-stop, synthesize-stopped (%s)", s.err_text);
    audio_free(&s);
    audio_free(&a);
    return first_ms;
}

/* The answer to a request the server refuses: an error, then EOF. */
static void expect_refusal(int port, const char *type, const char *data, const char *code, const char *what) {
    wconn c;
    TEST_CHECK(wc_open_slot(&c, port) == 0, "%s: a connection slot", what);
    wc_send(&c, type, data, 0, NULL, 0);
    wev ev;
    int r = wc_read(&c, &ev, 20);
    TEST_CHECK(r == 1 && !strcmp(ev.type, "error") && str_field(ev.data, "code") &&
                   !strcmp(str_field(ev.data, "code"), code) && str_field(ev.data, "text"),
               "%s: error %s (got %s %s: %s)", what, code, r == 1 ? ev.type : "nothing",
               r == 1 && str_field(ev.data, "code") ? str_field(ev.data, "code") : "",
               r == 1 && str_field(ev.data, "text") ? str_field(ev.data, "text") : "");
    if (r == 1) wev_free(&ev);
    TEST_CHECK(wc_read(&c, &ev, 10) == 0, "%s: then the connection closes", what);
    wc_close(&c);
}

/* The same for synthesize, checking that the message contains want. */
static void expect_refusal_text(int port, const char *data, const char *want, const char *what) {
    wconn c;
    TEST_CHECK(wc_open_slot(&c, port) == 0, "%s: a connection slot", what);
    wc_send(&c, "synthesize", data, 0, NULL, 0);
    wev ev;
    int r = wc_read(&c, &ev, 20);
    const char *text = r == 1 ? str_field(ev.data, "text") : NULL;
    TEST_CHECK(text && strstr(text, want), "%s: the message says '%s' (got: %s)", what, want, text ? text : "nothing");
    if (r == 1) wev_free(&ev);
    wc_close(&c);
}

static void expect_bad_event(int port, const void *bytes, size_t n, const char *word, const char *what) {
    wconn c;
    TEST_CHECK(wc_open_slot(&c, port) == 0, "%s: a connection slot", what);
    wc_send_raw(&c, bytes, n);
    wev ev;
    int r = wc_read(&c, &ev, 20);
    const char *code = r == 1 ? str_field(ev.data, "code") : NULL, *text = r == 1 ? str_field(ev.data, "text") : NULL;
    TEST_CHECK(r == 1 && !strcmp(ev.type, "error") && code && !strcmp(code, "bad_event") && text && strstr(text, word),
               "%s: error bad_event naming '%s' (got %s: %s)", what, word, r == 1 ? ev.type : "nothing",
               text ? text : "");
    if (r == 1) wev_free(&ev);
    TEST_CHECK(wc_read(&c, &ev, 10) == 0, "%s: then the connection closes", what);
    wc_close(&c);
}

static void test_errors(int port) {
    expect_refusal(port, "synthesize", "{\"text\":\"Hi.\",\"voice\":{\"name\":\"alloy\"}}", "voice_not_found",
                   "unknown voice");
    expect_refusal(port, "synthesize", "{\"text\":\"Hi.\",\"voice\":{\"language\":\"nl\"}}", "unsupported_language",
                   "unsupported language");
    expect_refusal(port, "synthesize", "{\"text\":42}", "invalid_request", "text not a string");
    expect_refusal(port, "synthesize", "{\"text\":\"Hi.\",\"qtts\":{\"seed\":-1}}", "invalid_request", "bad seed");
    /* integers in messages are integers (not %g's 1.04858e+06), and the ranges are the HTTP API's */
    expect_refusal_text(port, "{\"text\":\"Hi.\",\"qtts\":{\"max_frames\":0}}", "[1, 1048576]", "max_frames 0");
    expect_refusal_text(port, "{\"text\":\"Hi.\",\"qtts\":{\"seed\":-1}}", "[0, 9007199254740991]", "seed -1");
    expect_refusal_text(port, "{\"text\":\"Hi.\",\"qtts\":{\"top_k\":100001}}", "[0, 100000]", "top_k over");
    audio bigseed;
    one_shot(port, "{\"text\":\"Hi.\",\"qtts\":{\"seed\":\"18446744073709551615\",\"max_frames\":3}}", &bigseed);
    TEST_CHECK(bigseed.n > 0, "a 64-bit seed as a string is accepted (%zu samples)", bigseed.n);
    audio_free(&bigseed);
    expect_bad_event(port, "{\"type\":\"describe\",}\n", 21, "JSON", "bad JSON header");
    const char nul_text[] = "{\"type\":\"synthesize\",\"data\":{\"text\":\"a\\u0000b\"}}\n";
    expect_bad_event(port, nul_text, sizeof nul_text - 1, "NUL", "\\u0000 in the text (would cut it)");
    const char big_dl[] = "{\"type\":\"synthesize\",\"data_length\":2000000}\n";
    expect_bad_event(port, big_dl, sizeof big_dl - 1, "data_length", "data_length over the limit");
    const char big_pl[] = "{\"type\":\"audio-chunk\",\"payload_length\":17000000}\n";
    expect_bad_event(port, big_pl, sizeof big_pl - 1, "payload_length", "payload_length over the limit");
    unsigned char nolen[600];
    int h = sprintf((char *)nolen, "{\"type\":\"audio-chunk\",\"data\":{\"rate\":24000,\"width\":2,\"channels\":1}}\n");
    for (int i = 0; i < 400; i++) nolen[h + i] = (unsigned char)(i * 37 + 1);
    expect_bad_event(port, nolen, (size_t)h + 400, "payload_length", "a payload without payload_length");
    expect_bad_event(port, "{\"data\":{\"text\":\"x\"}}\n", 22, "type", "no type");
    size_t hl = 70000;
    char *big = malloc(hl);
    memset(big, ' ', hl);
    memcpy(big, "{\"type\":\"ping\",", 15);
    expect_bad_event(port, big, hl, "longer than 65536", "a header line over 64 KiB");
    free(big);
    /* and the server goes on serving */
    wconn c;
    wev ev;
    TEST_CHECK(wc_open_slot(&c, port) == 0 && wc_send(&c, "ping", "{\"text\":\"still here\"}", 0, NULL, 0) == 0 &&
                   wc_read(&c, &ev, 10) == 1 && !strcmp(ev.type, "pong"),
               "after malformed events the server still answers");
    wev_free(&ev);
    wc_close(&c);
}

static void test_limits(th_server *srv, int base_threads) {
    int port = srv->port;
    wait_threads(srv->pid, base_threads, 10);
    /* the slots of earlier tests' connections free up after their 300 ms linger (linger_input) */
    nanosleep(&(struct timespec){1, 0}, NULL);
    wconn cs[MAX_CONN + 1];
    for (int i = 0; i < MAX_CONN; i++) wc_open_slot(&cs[i], port);
    wev ev;
    /* the open ones are served... */
    for (int i = 0; i < MAX_CONN; i++) wc_send(&cs[i], "ping", NULL, 0, NULL, 0);
    int pongs = 0;
    for (int i = 0; i < MAX_CONN; i++) {
        pongs += wc_read(&cs[i], &ev, 10) == 1 && !strcmp(ev.type, "pong");
        wev_free(&ev);
    }
    TEST_CHECK(pongs == MAX_CONN, "%d connections served (%d pongs)", MAX_CONN, pongs);
    TEST_CHECK(th_proc_threads(srv->pid) == base_threads, "a fixed pool: %d threads with %d connections (base %d)",
               th_proc_threads(srv->pid), MAX_CONN, base_threads);
    /* ...one more is refused */
    wc_open(&cs[MAX_CONN], port);
    int r = wc_read(&cs[MAX_CONN], &ev, 10);
    TEST_CHECK(r == 1 && !strcmp(ev.type, "error") && str_field(ev.data, "code") &&
                   !strcmp(str_field(ev.data, "code"), "busy"),
               "connection %d of %d: error busy (%s)", MAX_CONN + 1, MAX_CONN, r == 1 ? ev.type : "nothing");
    if (r == 1) wev_free(&ev);
    for (int i = 0; i <= MAX_CONN; i++) wc_close(&cs[i]);
    TEST_CHECK(th_proc_threads(srv->pid) == base_threads, "after they close: %d threads (base %d)",
               th_proc_threads(srv->pid), base_threads);
    /* an idle connection is closed after --idle-timeout (2 s) */
    wconn idle;
    wc_open_slot(&idle, port); /* its pong starts the idle clock */
    double t0 = th_now();
    r = wc_read(&idle, &ev, 15);
    double dt = th_now() - t0;
    TEST_CHECK(r == 0 && dt > 1.5 && dt < 8, "an idle connection closes after the idle timeout (%.1f s, r %d)", dt, r);
    wc_close(&idle);
}

static int local_port(const wconn *c) {
    struct sockaddr_in a;
    socklen_t l = sizeof a;
    return getsockname(c->fd, (struct sockaddr *)&a, &l) ? -1 : ntohs(a.sin_port);
}

/* Waits until the server's log holds want; returns whether it did. */
static int wait_log(th_server *srv, const char *want, double timeout_s) {
    for (double end = th_now() + timeout_s;; nanosleep(&(struct timespec){0, 20000000}, NULL)) {
        th_drain_log(srv);
        if (strstr(srv->log, want)) return 1;
        if (th_now() >= end) return 0;
    }
}

/* CPU ticks of a set of threads. */
static long long ticks_of(pid_t pid, const int *tids, int n) {
    long long t = 0;
    for (int i = 0; i < n; i++) t += tid_ticks(pid, tids[i]);
    return t;
}

/* Clients that go away mid-synthesis, on the endless model: streamed (EOF
 * before synthesize-stop) and one-shot (the socket closed while audio
 * flows). The synthesis is cancelled: the connection closes (its pool
 * thread stays) and the engine threads go idle although max_frames is far
 * away. */
static void run_disconnects(const char *tmp) {
    char dir[512], want[128];
    snprintf(dir, sizeof dir, "%s/endless", tmp);
    if (endless_model_write(CV_MODEL, dir)) {
        TEST_CHECK(0, "endless model copy in %s", dir);
        return;
    }
    th_server srv;
    const char *args[] = {"-m", dir, "--threads", "2", "--guard-frames-per-token", "0", "--no-repetition-guard", "-v",
                          "--max-request-frames", "0", NULL}; /* the syntheses ask 100000 frames */
    if (wy_start(&srv, args, 120)) {
        TEST_CHECK(0, "endless-model server starts");
        th_stop(&srv, 10);
        return;
    }
    g_srv = &srv;
    int base[MAX_TIDS], n_base = list_tids(srv.pid, base, MAX_TIDS);
    double hz = (double)sysconf(_SC_CLK_TCK);
    for (int mode = 0; mode < 2; mode++) {
        const char *what = mode ? "one-shot" : "streamed";
        wconn c;
        wev ev;
        wc_open_slot(&c, srv.port);
        int me = local_port(&c);
        if (mode) {
            wc_send(&c, "synthesize", "{\"text\":\"A text that this model speaks forever.\",\"voice\":{\"name\":\"ryan\"},"
                    "\"qtts\":{\"max_frames\":100000,\"greedy\":true}}", 0, NULL, 0);
        } else {
            wc_send(&c, "synthesize-start", "{\"voice\":{\"name\":\"ryan\"},\"qtts\":{\"max_frames\":100000,\"greedy\":true}}", 0, NULL, 0);
            wc_send(&c, "synthesize-chunk", "{\"text\":\"This sentence never gets its end, because the client \"}", 0,
                    NULL, 0);
        }
        int chunks = 0;
        for (double end = th_now() + 20; chunks < 3 && th_now() < end;) {
            if (wc_read(&c, &ev, end - th_now()) <= 0) break;
            chunks += !strcmp(ev.type, "audio-chunk");
            wev_free(&ev);
        }
        TEST_CHECK(chunks == 3, "%s: audio flows (%d chunks)", what, chunks);
        /* while connected, the one-shot synthesis keeps the engine busy (the
         * streamed one waits for text: idle) */
        long long b0 = ticks_of(srv.pid, base, n_base);
        nanosleep(&(struct timespec){0, 500 * 1000000}, NULL);
        double before = (ticks_of(srv.pid, base, n_base) - b0) / hz;
        if (mode) /* (loose: the machine may be shared) */
            TEST_CHECK(before >= 0.05, "one-shot: the engine computes while the client is there (%.2f s CPU in 0.5 s)",
                       before);
        double t0 = th_now();
        wc_close(&c); /* mid-synthesis */
        char closed[64];
        snprintf(closed, sizeof closed, "127.0.0.1:%d: closed", me); /* the connection body has ended */
        int gone = wait_log(&srv, closed, 15);
        double dt = th_now() - t0;
        int n = th_proc_threads(srv.pid);
        TEST_CHECK(gone && n == n_base, "%s client gone: connection closed in %.2f s (%s), %d threads (base %d)", what,
                   dt, gone ? "logged" : "not logged", n, n_base);
        /* cancelled: the engine threads go idle (a running synthesis keeps them busy). The step in flight
         * when the cancel lands still finishes, which under ASan on a loaded host can outlast a short wait,
         * so the idle window starts 0.5 s after the close */
        nanosleep(&(struct timespec){0, 500 * 1000000}, NULL);
        long long t1 = ticks_of(srv.pid, base, n_base);
        nanosleep(&(struct timespec){1, 0}, NULL);
        long long busy = ticks_of(srv.pid, base, n_base) - t1;
        TEST_CHECK(busy <= (long long)(0.15 * hz), "%s: after the client left, the engine's threads used %.2f s CPU in "
                   "1 s: the synthesis was cancelled", what, busy / hz);
        th_drain_log(&srv);
        snprintf(want, sizeof want, "127.0.0.1:%d: %s", me, mode ? "client gone" : "error incomplete");
        TEST_CHECK(strstr(srv.log, want) || (!mode && (snprintf(want, sizeof want, "127.0.0.1:%d: client gone", me),
                                                       strstr(srv.log, want))),
                   "%s: the server logged the cancellation ('%s'); its log ends:\n%s", what, want,
                   srv.log + (srv.log_len > 1500 ? srv.log_len - 1500 : 0));
        printf("%s client left mid-synthesis: engine threads %.2f s CPU in 0.5 s before, connection closed %.2f s after, "
               "engine threads %.2f s CPU in the next second\n", what, before, dt, busy / hz);
    }
    /* and the server serves on */
    audio a;
    one_shot(srv.port, "{\"text\":\"Still here.\",\"qtts\":{\"max_frames\":5}}", &a);
    TEST_CHECK(a.stopped && a.n == 5 * 1920, "after the disconnects a synthesis works (%zu samples, %s)", a.n,
               a.err_text);
    audio_free(&a);
    TEST_CHECK(th_stop(&srv, 30) == 0, "endless-model server: exit status 0");
    g_srv = NULL;
}

/* The thread invariant: 4 concurrent connections, each 2 one-shot + 1
 * streamed synthesis; the thread count is the same before, during and after.
 * The connection threads exist from start-up on, so they are told from the
 * engine's by CPU: over the phase, the ENGINE_THREADS threads that used the
 * most (the engine thread and its pool workers, --threads 2) against all the
 * others (connection threads, accept, main). */
#define ENGINE_THREADS 2
typedef struct {
    int port, ok;
    wconn c;
    atomic_int *finished, *hold;
} load_job;

static void *load_worker(void *p) {
    load_job *j = p;
    j->ok = 0;
    if (wc_open_slot(&j->c, j->port)) return NULL;
    int good = 0;
    for (int k = 0; k < 3; k++) {
        audio a;
        memset(&a, 0, sizeof a);
        if (k < 2) {
            wc_send(&j->c, "synthesize",
                    "{\"text\":\"Load on the engine, not on the connection threads.\",\"voice\":{\"name\":\"aiden\"},"
                    "\"qtts\":{\"max_frames\":160}}",
                    0, NULL, 0);
            collect(&j->c, "audio-stop", &a, 60);
        } else {
            wc_send(&j->c, "synthesize-start", "{\"voice\":{\"name\":\"dylan\"},\"qtts\":{\"max_frames\":160}}", 1, NULL, 0);
            for (int i = 0; i < 5; i++) {
                char js[128];
                snprintf(js, sizeof js, "{\"text\":\"%s\"}", k_pieces[i]);
                wc_send(&j->c, "synthesize-chunk", js, 0, NULL, 0);
            }
            wc_send(&j->c, "synthesize-stop", NULL, 0, NULL, 0);
            collect(&j->c, "synthesize-stopped", &a, 60);
        }
        good += a.stopped && a.n > 0 && !a.err_code[0];
        audio_free(&a);
    }
    j->ok = good == 3;
    atomic_fetch_add(j->finished, 1);
    /* Keep the connection (and its server thread) alive past the idle
     * timeout until the snapshot is taken. */
    while (atomic_load(j->hold)) {
        wev ev;
        wc_send(&j->c, "ping", NULL, 0, NULL, 0);
        if (wc_read(&j->c, &ev, 10) == 1) wev_free(&ev);
        nanosleep(&(struct timespec){0, 200 * 1000000}, NULL);
    }
    return NULL; /* the socket stays open */
}

static void test_threads(th_server *srv, const int *base_tids, int n_base) {
    pid_t pid = srv->pid;
    long long before[MAX_TIDS];
    for (int i = 0; i < n_base; i++) before[i] = tid_ticks(pid, base_tids[i]);
    int tids0[MAX_TIDS], n0 = list_tids(pid, tids0, MAX_TIDS);
    double t0 = th_now();
    load_job jobs[MAX_CONN];
    pthread_t th[MAX_CONN];
    atomic_int finished, hold;
    atomic_init(&finished, 0);
    atomic_init(&hold, 1);
    for (int i = 0; i < MAX_CONN; i++) {
        jobs[i] = (load_job){.port = srv->port, .finished = &finished, .hold = &hold};
        pthread_create(&th[i], NULL, load_worker, &jobs[i]);
    }
    for (double end = th_now() + 120; atomic_load(&finished) < MAX_CONN && th_now() < end;)
        nanosleep(&(struct timespec){0, 10 * 1000000}, NULL);
    double wall = th_now() - t0;
    int tids[MAX_TIDS], n = list_tids(pid, tids, MAX_TIDS);
    /* each thread's CPU over the phase; one not there at start-up (none should
     * be) counts from 0 */
    long long d[MAX_TIDS], total = 0;
    for (int i = 0; i < n; i++) {
        d[i] = tid_ticks(pid, tids[i]);
        for (int k = 0; k < n_base; k++)
            if (base_tids[k] == tids[i]) d[i] -= before[k];
        if (d[i] < 0) d[i] = 0; /* gone between the two reads */
        total += d[i];
    }
    long long engine = 0; /* the top ENGINE_THREADS */
    for (int r = 0; r < ENGINE_THREADS; r++) {
        int top = -1;
        for (int i = 0; i < n; i++)
            if (d[i] >= 0 && (top < 0 || d[i] > d[top])) top = i;
        if (top < 0) break;
        engine += d[top];
        d[top] = -1; /* taken */
    }
    long long conn = total - engine, worst = 0; /* the rest, and the largest of them */
    for (int i = 0; i < n; i++)
        if (d[i] > worst) worst = d[i];
    atomic_store(&hold, 0);
    int ok = 0;
    for (int i = 0; i < MAX_CONN; i++) {
        pthread_join(th[i], NULL);
        ok += jobs[i].ok;
    }
    double hz = (double)sysconf(_SC_CLK_TCK);
    printf("threads: %d at start-up (engine + pool + main + accept + %d connection slots), %d before the phase, %d "
           "with %d connections\n",
           n_base, MAX_CONN, n0, n, MAX_CONN);
    printf("phase %d connections x 3 syntheses: wall %.2f s, top %d threads (engine) %.2f s CPU, the other %d threads "
           "%.2f s CPU (max one %.2f s), effective cores %.2f\n",
           MAX_CONN, wall, ENGINE_THREADS, engine / hz, n - ENGINE_THREADS, conn / hz, worst / hz,
           total / hz / (wall > 0 ? wall : 1));
    TEST_CHECK(ok == MAX_CONN, "all %d connections got their 3 syntheses (%d)", MAX_CONN, ok);
    TEST_CHECK(n0 == n_base && n == n_base, "a fixed pool: %d threads at start-up, %d before the phase, %d with %d "
               "connections", n_base, n0, n, MAX_CONN);
    TEST_CHECK(conn <= engine / 4 + (long long)(0.1 * hz),
               "threads other than the top %d used %.2f s CPU vs %.2f s on the top %d: the connection threads do not "
               "compute", ENGINE_THREADS, conn / hz, engine / hz, ENGINE_THREADS);
    for (int i = 0; i < MAX_CONN; i++) wc_close(&jobs[i].c);
    nanosleep(&(struct timespec){0, 200 * 1000000}, NULL); /* let the server see the closes */
    TEST_CHECK(th_proc_threads(pid) == n_base, "after the connections close: %d threads (base %d)",
               th_proc_threads(pid), n_base);
}

static double run_custom_voice(void) {
    th_server srv;
    const char *args[] = {"-m", CV_MODEL, "--threads", "2", "--max-connections", "4", "--idle-timeout", "2",
                          "--zeroconf", "-v", NULL};
    if (wy_start(&srv, args, 120)) {
        TEST_CHECK(0, "CustomVoice server starts");
        th_stop(&srv, 10);
        return -1;
    }
    TEST_CHECK(strstr(srv.log, "zeroconf") && strstr(srv.log, "not announced"),
               "--zeroconf without an Avahi daemon: one warning, and the server runs: %s", srv.log);
    g_srv = &srv;
    int base_tids[MAX_TIDS], n_base = list_tids(srv.pid, base_tids, MAX_TIDS);
    test_describe_ping(srv.port);
    double first_ms = test_synthesis(srv.port);
    test_errors(srv.port);
    test_limits(&srv, n_base);
    test_threads(&srv, base_tids, n_base);
    TEST_CHECK(th_stop(&srv, 30) == 0 && strstr(srv.log, "stopped"), "SIGTERM: drained, exit status 0");
    g_srv = NULL;
    return first_ms;
}

/* ---- Base ---- */

static void run_base(const char *tmp) {
    char vdir[512], wav_path[512], cmd[4096], out[8192];
    snprintf(vdir, sizeof vdir, "%s/voices", tmp);
    snprintf(wav_path, sizeof wav_path, "%s/ref.wav", tmp);
    npy_array a;
    if (npy_load_fixture("input_wave_1p5s", &a)) {
        TEST_CHECK(0, "fixture input_wave_1p5s");
        return;
    }
    size_t wn = 0;
    unsigned char *wav = th_make_wav(a.f, (size_t)a.numel, 24000, &wn);
    npy_free(&a);
    FILE *f = fopen(wav_path, "wb");
    TEST_CHECK(f && wav && fwrite(wav, 1, wn, f) == wn, "write %s", wav_path);
    if (f) fclose(f);
    free(wav);
    snprintf(cmd, sizeof cmd, "voices add alice -m '%s' --threads 2 --ref-audio '%s' --x-vector-only --voices-dir '%s'",
             BASE_MODEL, wav_path, vdir);
    TEST_CHECK(qtts_cmd(cmd, out, sizeof out) == 0, "qtts voices add alice (x-vector): %s", out);
    snprintf(cmd, sizeof cmd, "voices add bob -m '%s' --threads 2 --ref-audio '%s' --ref-text '%s' --voices-dir '%s'",
             BASE_MODEL, wav_path, REF_TEXT, vdir);
    TEST_CHECK(qtts_cmd(cmd, out, sizeof out) == 0, "qtts voices add bob (in context): %s", out);

    th_server srv;
    const char *args[] = {"-m", BASE_MODEL, "--threads", "2", "--voices-dir", vdir, NULL};
    if (wy_start(&srv, args, 120)) {
        TEST_CHECK(0, "Base server starts");
        th_stop(&srv, 10);
        return;
    }
    wconn c;
    wev ev;
    wc_open_slot(&c, srv.port);
    wc_send(&c, "describe", NULL, 0, NULL, 0);
    TEST_CHECK(wc_read(&c, &ev, 10) == 1, "Base describe");
    check_info(&ev, "bob", 2, "Base describe");
    wev_free(&ev);
    /* a voice registered while the server runs shows up */
    snprintf(cmd, sizeof cmd, "voices add carol -m '%s' --threads 2 --ref-audio '%s' --x-vector-only --voices-dir '%s'",
             BASE_MODEL, wav_path, vdir);
    TEST_CHECK(qtts_cmd(cmd, out, sizeof out) == 0, "qtts voices add carol: %s", out);
    wc_send(&c, "describe", NULL, 0, NULL, 0);
    TEST_CHECK(wc_read(&c, &ev, 10) == 1, "Base describe again");
    check_info(&ev, "carol", 3, "Base describe after qtts voices add");
    wev_free(&ev);
    wc_close(&c);

    audio x, y, z, s;
    one_shot(srv.port, "{\"text\":\"" K_TEXT "\",\"voice\":{\"name\":\"alice\"},\"qtts\":{\"seed\":3,\"max_frames\":20}}", &x);
    TEST_CHECK(x.stopped && x.n > 0 && !x.bad_chunks && !x.order_bad && !x.err_code[0],
               "Base one-shot with alice: %zu samples (%s)", x.n, x.err_text);
    one_shot(srv.port, "{\"text\":\"" K_TEXT "\",\"qtts\":{\"seed\":3,\"max_frames\":20}}", &y);
    TEST_CHECK(same_audio(&x, &y), "no voice named: the first registered voice (alice) speaks (%zu vs %zu)", y.n, x.n);
    one_shot(srv.port, "{\"text\":\"" K_TEXT "\",\"voice\":{\"name\":\"bob\"},\"qtts\":{\"seed\":3,\"max_frames\":20}}", &z);
    TEST_CHECK(z.stopped && z.n > 0 && !z.err_code[0], "Base one-shot with bob (in context): %zu samples (%s)", z.n,
               z.err_text);
    double first_ms;
    int before_stop;
    streamed(srv.port, "{\"voice\":{\"name\":\"alice\"},\"qtts\":{\"seed\":3,\"max_frames\":20}}", k_pieces, 5, 20, &s,
             &first_ms, &before_stop);
    TEST_CHECK(s.synth_stopped && same_audio(&s, &x) && before_stop,
               "Base streamed with alice: audio before the end, samples equal the one-shot's (%zu vs %zu, %s)", s.n,
               x.n, s.err_text);
    audio_free(&s);
    streamed(srv.port, "{\"voice\":{\"name\":\"bob\"},\"qtts\":{\"seed\":3,\"max_frames\":20}}", k_pieces, 5, 0, &s,
             &first_ms, &before_stop);
    TEST_CHECK(s.synth_stopped && s.n > 0 && !s.err_code[0],
               "Base streamed with bob (in context: starts once the text is complete): %zu samples (%s)", s.n,
               s.err_text);
    audio_free(&s);
    audio_free(&x);
    audio_free(&y);
    audio_free(&z);
    expect_refusal(srv.port, "synthesize", "{\"text\":\"Hi.\",\"voice\":{\"name\":\"nobody\"}}", "voice_not_found",
                   "Base: unknown voice");
    TEST_CHECK(th_stop(&srv, 30) == 0, "Base server: exit status 0");
}

/* ---- VoiceDesign ---- */

static void run_voice_design(void) {
    char cmd[2048], out[4096];
    snprintf(cmd, sizeof cmd, "wyoming -m '%s' --threads 2 --port 0", VD_MODEL);
    int rc = qtts_cmd(cmd, out, sizeof out);
    TEST_CHECK(rc == 1 && strstr(out, "--instruct"), "VoiceDesign without --instruct: exit 1 naming it (%d: %s)", rc,
               out);
    TEST_CHECK(qtts_cmd("wyoming --threads 2", out, sizeof out) == 2 && strstr(out, "no model"),
               "no model: usage error (%s)", out);
    TEST_CHECK(qtts_cmd("wyoming --bogus", out, sizeof out) == 2, "unknown option: usage error");
    th_server srv;
    const char *args[] = {"-m", VD_MODEL, "--threads", "2", "--instruct", "A calm, deep male voice.", NULL};
    if (wy_start(&srv, args, 120)) {
        TEST_CHECK(0, "VoiceDesign server starts");
        th_stop(&srv, 10);
        return;
    }
    wconn c;
    wev ev;
    wc_open_slot(&c, srv.port);
    wc_send(&c, "describe", NULL, 0, NULL, 0);
    TEST_CHECK(wc_read(&c, &ev, 10) == 1, "VoiceDesign describe");
    check_info(&ev, "design", 1, "VoiceDesign describe");
    wev_free(&ev);
    wc_close(&c);
    audio a;
    one_shot(srv.port, "{\"text\":\"Designed.\",\"voice\":{\"name\":\"design\"},\"qtts\":{\"max_frames\":8}}", &a);
    TEST_CHECK(a.stopped && a.n > 0 && !a.err_code[0], "VoiceDesign one-shot: %zu samples (%s)", a.n, a.err_text);
    audio_free(&a);
    one_shot(srv.port,
             "{\"text\":\"Designed.\",\"qtts\":{\"max_frames\":8,\"instruct\":\"A bright, quick female voice.\"}}", &a);
    TEST_CHECK(a.stopped && a.n > 0 && !a.err_code[0], "VoiceDesign with qtts.instruct: %zu samples (%s)", a.n,
               a.err_text);
    audio_free(&a);
    TEST_CHECK(th_stop(&srv, 30) == 0, "VoiceDesign server: exit status 0");
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    struct stat st;
    if (stat(CV_MODEL "/config.json", &st) || stat(BASE_MODEL "/config.json", &st) ||
        stat(VD_MODEL "/config.json", &st)) {
        TEST_CHECK(0, "tiny golden models missing under %s", QTTS_GOLDEN_DIR);
        return test_finish("test_wyoming");
    }
    char tmp[] = "/tmp/qtts_wyomingXXXXXX";
    if (!mkdtemp(tmp)) return 1;
    double first_ms = run_custom_voice();
    run_disconnects(tmp);
    run_base(tmp);
    run_voice_design();
    rm_rf(tmp);
    printf("first synthesize-chunk -> first audio-chunk: %.1f ms (CustomVoice tiny model, 2 threads)\n", first_ms);
    return test_finish("test_wyoming");
}
