/* The WebSocket endpoint GET /v1/audio/speech/stream against `qtts serve`
 * (tiny CustomVoice model), with a client written here from RFC 6455:
 * handshake, session.config + input.text deltas + input.done -> audio.start,
 * binary audio, audio.done; the audio of text sent in pieces equals the same
 * text sent at once and `qtts say --stream-text`; errors keep the session;
 * protocol violations close it; disconnects cancel; auth; the session limit;
 * the process's thread count is the same before and after many sessions. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdint.h>
#include <sys/stat.h>

#include "harness.h"
#include "support/test_util.h"
#include "test_server_http.h"

#define CV QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"

typedef struct {
    int fd;
    unsigned char buf[1 << 20];
    size_t len;
} ws_client;

/* Opens a WebSocket; path may carry a query. Returns the HTTP status of the answer (101 on success). */
static int ws_open(ws_client *c, int port, const char *path, const char *extra_headers) {
    memset(c, 0, sizeof *c);
    c->fd = th_connect(port);
    if (c->fd < 0) return -1;
    char req[2048];
    int n = snprintf(req, sizeof req,
                     "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n%s\r\n",
                     path, extra_headers ? extra_headers : "");
    if (th_send_all(c->fd, req, (size_t)n)) return -1;
    /* read the response head */
    double t0 = th_now();
    while (th_now() - t0 < 10) {
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (poll(&p, 1, 100) <= 0) continue;
        ssize_t k = recv(c->fd, c->buf + c->len, sizeof c->buf - c->len, 0);
        if (k <= 0) break;
        c->len += (size_t)k;
        unsigned char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
        if (!end) continue;
        int status = 0;
        sscanf((char *)c->buf, "HTTP/1.1 %d", &status);
        int accept_ok = memmem(c->buf, (size_t)(end - c->buf), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", 28) != NULL;
        size_t head = (size_t)(end - c->buf) + 4;
        memmove(c->buf, c->buf + head, c->len - head);
        c->len -= head;
        return status == 101 && !accept_ok ? -2 : status;
    }
    return -1;
}

static int ws_send(ws_client *c, int opcode, const void *p, size_t n, int masked) {
    unsigned char h[14];
    size_t hn = 0;
    h[hn++] = (unsigned char)(0x80 | opcode);
    unsigned char mbit = masked ? 0x80 : 0;
    if (n < 126) h[hn++] = (unsigned char)(mbit | n);
    else {
        h[hn++] = mbit | 126;
        h[hn++] = (unsigned char)(n >> 8);
        h[hn++] = (unsigned char)n;
    }
    static const unsigned char key[4] = {1, 2, 3, 4};
    if (masked) {
        memcpy(h + hn, key, 4);
        hn += 4;
    }
    unsigned char *m = malloc(n + 1);
    for (size_t i = 0; i < n; i++) m[i] = ((const unsigned char *)p)[i] ^ (masked ? key[i & 3] : 0);
    int rc = th_send_all(c->fd, h, hn) || (n && th_send_all(c->fd, m, n));
    free(m);
    return rc;
}

static int ws_send_json(ws_client *c, const char *js) { return ws_send(c, 1, js, strlen(js), 1); }

/* Next server frame (unmasked): opcode, payload into out (malloc'd). -1 on timeout/close. */
static int ws_recv(ws_client *c, unsigned char **out, size_t *n, double timeout_s) {
    double t0 = th_now();
    for (;;) {
        if (c->len >= 2) {
            size_t h = 2;
            uint64_t len = c->buf[1] & 0x7F;
            if (len == 126 && c->len >= 4) len = (uint64_t)c->buf[2] << 8 | c->buf[3], h = 4;
            else if (len == 127 && c->len >= 10) {
                len = 0;
                for (int i = 0; i < 8; i++) len = len << 8 | c->buf[2 + i];
                h = 10;
            } else if (len >= 126) h = 0;
            if (h && c->len >= h + len) {
                int op = c->buf[0] & 0x0F;
                *out = malloc(len + 1);
                memcpy(*out, c->buf + h, len);
                (*out)[len] = 0;
                *n = len;
                memmove(c->buf, c->buf + h + len, c->len - h - len);
                c->len -= h + len;
                return op;
            }
        }
        if (th_now() - t0 > timeout_s) return -1;
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (poll(&p, 1, 100) <= 0) continue;
        ssize_t k = recv(c->fd, c->buf + c->len, sizeof c->buf - c->len, 0);
        if (k <= 0) return -1;
        c->len += (size_t)k;
    }
}

/* Reads until a JSON message of that type; binary payloads are appended to pcm. */
static cJSON *ws_until(ws_client *c, const char *type, unsigned char **pcm, size_t *pcm_len, double timeout_s) {
    for (;;) {
        unsigned char *p = NULL;
        size_t n = 0;
        int op = ws_recv(c, &p, &n, timeout_s);
        if (op < 0) return NULL;
        if (op == 2 && pcm) {
            *pcm = realloc(*pcm, *pcm_len + n + 1);
            memcpy(*pcm + *pcm_len, p, n);
            *pcm_len += n;
        }
        if (op == 1) {
            cJSON *j = cJSON_Parse((char *)p);
            const cJSON *t = cJSON_GetObjectItem(j, "type");
            if (cJSON_IsString(t) && !strcmp(t->valuestring, type)) {
                free(p);
                return j;
            }
            if (cJSON_IsString(t) && !strcmp(t->valuestring, "error") && strcmp(type, "error"))
                fprintf(stderr, "ws error: %s\n", (char *)p);
            cJSON_Delete(j);
        }
        if (op == 8) {
            free(p);
            return NULL;
        }
        free(p);
    }
}

#define CONFIG "{\"type\":\"session.config\",\"voice\":\"vivian\",\"response_format\":\"pcm\",\"seed\":11}"

/* One utterance of text split at the given byte offsets; returns its PCM. */
static unsigned char *speak(int port, const char *text, const size_t *cuts, int n_cuts, int pause_ms, size_t *len,
                            cJSON **done) {
    ws_client *c = malloc(sizeof *c);
    unsigned char *pcm = NULL;
    *len = 0;
    *done = NULL;
    if (ws_open(c, port, "/v1/audio/speech/stream", NULL) != 101) {
        free(c);
        return NULL;
    }
    ws_send_json(c, CONFIG);
    size_t prev = 0, tl = strlen(text);
    for (int i = 0; i <= n_cuts; i++) {
        size_t end = i < n_cuts ? cuts[i] : tl;
        cJSON *m = cJSON_CreateObject();
        char *piece = strndup(text + prev, end - prev);
        cJSON_AddStringToObject(m, "type", "input.text");
        cJSON_AddStringToObject(m, "text", piece);
        char *js = cJSON_PrintUnformatted(m);
        ws_send_json(c, js);
        free(js);
        free(piece);
        cJSON_Delete(m);
        prev = end;
        if (pause_ms) usleep((useconds_t)pause_ms * 1000);
    }
    ws_send_json(c, "{\"type\":\"input.done\"}");
    cJSON *start = ws_until(c, "audio.start", NULL, NULL, 30);
    *done = start ? ws_until(c, "audio.done", &pcm, len, 60) : NULL;
    cJSON_Delete(start);
    ws_send_json(c, "{\"type\":\"session.close\"}");
    cJSON *sd = ws_until(c, "session.done", NULL, NULL, 10);
    TEST_CHECK(sd != NULL, "session.close answers session.done");
    cJSON_Delete(sd);
    close(c->fd);
    free(c);
    return pcm;
}

static int count_tasks(pid_t pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    if (d) closedir(d);
    return n;
}


/* utime + stime of one thread, in clock ticks. */
static long long thread_ticks(pid_t pid, int tid) {
    char path[96], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, tid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *q = strrchr(buf, ')');
    long long ut = 0, st = 0;
    int field = 2;
    for (; q && *q; q++)
        if (*q == ' ' && ++field == 14) {
            sscanf(q + 1, "%lld %lld", &ut, &st);
            break;
        }
    return ut + st;
}

/* CPU ticks of the engine's threads (from /metrics qtts_engine_thread) and of all the others. */
static void cpu_split(int port, pid_t pid, long long *engine, long long *other) {
    th_resp r;
    th_get(port, "/metrics", NULL, &r);
    int etids[256], ne = 0;
    for (const char *p = r.body ? (char *)r.body : ""; (p = strstr(p, "qtts_engine_thread{tid=\"")) && ne < 256; p++)
        etids[ne++] = atoi(p + 24);
    th_resp_free(&r);
    *engine = *other = 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        int tid = atoi(e->d_name), is_engine = 0;
        for (int i = 0; i < ne; i++) is_engine |= etids[i] == tid;
        *(is_engine ? engine : other) += thread_ticks(pid, tid);
    }
    if (d) closedir(d);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    struct stat st;
    if (stat(CV "/config.json", &st)) {
        TEST_CHECK(0, "tiny CustomVoice model present");
        return test_finish("test_server_ws");
    }
    th_server srv;
    const char *args[] = {"-m", CV, "--threads", "2", "--ws-sessions", "4", NULL};
    if (th_start(&srv, args, 120)) {
        TEST_CHECK(0, "server starts: %s", srv.log);
        return test_finish("test_server_ws");
    }
    int port = srv.port;
    const char *text = "Hello there, this is a test of text that arrives in pieces. Does it work?";
    size_t cuts[] = {3, 7, 13, 20, 31, 40, 41, 55, 62};
    size_t n_whole = 0, n_pieces = 0, n_late = 0;
    cJSON *d1, *d2, *d3;
    unsigned char *whole = speak(port, text, NULL, 0, 0, &n_whole, &d1);
    unsigned char *pieces = speak(port, text, cuts, 9, 0, &n_pieces, &d2);
    unsigned char *late = speak(port, text, cuts, 9, 40, &n_late, &d3);
    TEST_CHECK(whole && n_whole > 0 && d1, "one piece: %zu bytes of pcm and audio.done", n_whole);
    TEST_CHECK(pieces && n_pieces == n_whole && !memcmp(pieces, whole, n_whole),
               "9 pieces: the same audio (%zu vs %zu bytes)", n_pieces, n_whole);
    TEST_CHECK(late && n_late == n_whole && !memcmp(late, whole, n_whole),
               "9 pieces 40 ms apart (the talker waits): the same audio (%zu bytes)", n_late);
    const cJSON *u = cJSON_GetObjectItem(d2, "usage");
    TEST_CHECK(cJSON_IsString(cJSON_GetObjectItem(d2, "finished_by")) &&
                   cJSON_GetNumberValue(cJSON_GetObjectItem(u, "output_tokens")) == (double)(n_whole / 3840),
               "audio.done carries finished_by and usage (output_tokens = frames)");
    /* the same as qtts say --stream-text with the same seed (s16 pcm, same rule) */
    char tmp[] = "/tmp/qtts_wsXXXXXX", cmd[2048], out[600];
    if (mkdtemp(tmp)) {
        snprintf(out, sizeof out, "%s/say.pcm", tmp);
        snprintf(cmd, sizeof cmd, "printf '%%s' '%s' | '%s' say -m '%s' --speaker vivian --seed 11 -q --stream-text -o '%s'",
                 text, QTTS_BINARY, CV, out);
        unsigned char *say = NULL;
        size_t n_say = 0;
        int rc = system(cmd);
        TEST_CHECK(rc == 0 && !read_bytes(out, &say, &n_say) && n_say == n_whole && !memcmp(say, whole, n_whole),
                   "WebSocket audio = qtts say --stream-text (%zu vs %zu bytes)", n_say, n_whole);
        free(say);
        rm_rf(tmp);
    }
    /* node's built-in WebSocket client (node 20: --experimental-websocket) */
    char line[1024];
    /* node 20: the flag; node >= 22: built in; older: the ws package (scripts/deps.sh installs it) */
    const char *node = NULL;
    FILE *np = popen("node --experimental-websocket -e \"process.exit(typeof WebSocket === 'function' ? 0 : 1)\" "
                     "2>/dev/null",
                     "r");
    if (np && pclose(np) == 0) node = "node --experimental-websocket";
    else if ((np = popen("NODE_PATH=\"$(npm root -g 2>/dev/null)\" node -e \"require('ws')\" 2>/dev/null", "r")) &&
             pclose(np) == 0)
        node = "NODE_PATH=\"$(npm root -g)\" node";
    int have_node = node != NULL;
    if (have_node) {
        snprintf(cmd, sizeof cmd, "%s '%s/tests/test_server_ws.cjs' %d vivian 2>&1", node, QTTS_SOURCE_DIR, port);
        np = popen(cmd, "r");
        int oks = 0, fails = 0;
        while (np && fgets(line, sizeof line, np)) {
            fputs(line, stdout);
            if (!strncmp(line, "ok", 2)) oks++;
            else fails++;
        }
        int rc = np ? pclose(np) : -1;
        TEST_CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 0 && oks == 4 && fails == 0,
                   "node WebSocket client: %d ok, %d other lines", oks, fails);
    } else {
        printf("SKIP node WebSocket client: node with --experimental-websocket is not installed\n");
        const char *strict = getenv("QTTS_REQUIRE_CLIENTS");
        if (strict && *strict && strcmp(strict, "0")) TEST_CHECK(0, "node required (QTTS_REQUIRE_CLIENTS)");
    }
    free(whole);
    free(pieces);
    free(late);
    cJSON_Delete(d1);
    cJSON_Delete(d2);
    cJSON_Delete(d3);

    /* errors keep the session; violations close it */
    ws_client *c = malloc(sizeof *c);
    TEST_CHECK(ws_open(c, port, "/v1/audio/speech/stream", NULL) == 101, "open");
    ws_send_json(c, "not json");
    cJSON *e = ws_until(c, "error", NULL, NULL, 10);
    TEST_CHECK(e != NULL, "bad JSON: an error message");
    cJSON_Delete(e);
    ws_send_json(c, "{\"type\":\"input.done\"}");
    e = ws_until(c, "error", NULL, NULL, 10);
    TEST_CHECK(e != NULL, "input.done without an utterance: error");
    cJSON_Delete(e);
    ws_send_json(c, "{\"type\":\"session.config\",\"voice\":\"nobody\"}");
    ws_send_json(c, "{\"type\":\"input.text\",\"text\":\"Hi.\"}");
    e = ws_until(c, "error", NULL, NULL, 10);
    const cJSON *em = cJSON_GetObjectItem(cJSON_GetObjectItem(e, "error"), "message");
    TEST_CHECK(cJSON_IsString(em) && strstr(em->valuestring, "nobody"), "unknown voice: error names it");
    cJSON_Delete(e);
    ws_send_json(c, "{\"type\":\"input.done\"}"); /* the refused utterance's end: says so, not 'send input.text' */
    e = ws_until(c, "error", NULL, NULL, 10);
    em = cJSON_GetObjectItem(cJSON_GetObjectItem(e, "error"), "message");
    TEST_CHECK(cJSON_IsString(em) && strstr(em->valuestring, "utterance was refused"),
               "input.done after a refused utterance says so: %s", cJSON_IsString(em) ? em->valuestring : "");
    cJSON_Delete(e);
    ws_send_json(c, "{\"type\":\"bogus\"}");
    e = ws_until(c, "error", NULL, NULL, 10);
    TEST_CHECK(e != NULL, "unknown type: error");
    cJSON_Delete(e);
    /* the server's frame limit (default 4096) holds on the WebSocket too, by name */
    ws_send_json(c, "{\"type\":\"session.config\",\"voice\":\"vivian\",\"max_new_tokens\":4097}");
    ws_send_json(c, "{\"type\":\"input.text\",\"text\":\"Hi.\"}");
    e = ws_until(c, "error", NULL, NULL, 10);
    em = cJSON_GetObjectItem(cJSON_GetObjectItem(e, "error"), "message");
    TEST_CHECK(cJSON_IsString(em) && strstr(em->valuestring, "4096") && strstr(em->valuestring, "--max-request-frames"),
               "max_new_tokens above the server's limit: the error names the limit and the flag: %s",
               cJSON_IsString(em) ? em->valuestring : "");
    cJSON_Delete(e);
    ws_send(c, 1, "{\"type\":\"session.close\"}", 24, 0); /* unmasked: a protocol violation */
    unsigned char *p = NULL;
    size_t n = 0;
    int op = ws_recv(c, &p, &n, 10);
    TEST_CHECK(op == 8 && n >= 2 && (p[0] << 8 | p[1]) == 1002, "an unmasked frame: close 1002 (op %d)", op);
    free(p);
    close(c->fd);

    /* a seed above 2^53 (as a string) is used and reported as an exact integer, not a rounded float */
    TEST_CHECK(ws_open(c, port, "/v1/audio/speech/stream", NULL) == 101, "open");
    ws_send_json(c, "{\"type\":\"session.config\",\"voice\":\"vivian\",\"response_format\":\"pcm\","
                    "\"seed\":\"18446744073709551615\",\"max_new_tokens\":3}");
    ws_send_json(c, "{\"type\":\"input.text\",\"text\":\"Hi.\"}");
    ws_send_json(c, "{\"type\":\"input.done\"}");
    int exact = 0;
    for (int i = 0; i < 200; i++) {
        unsigned char *m = NULL;
        size_t mn = 0;
        int mop = ws_recv(c, &m, &mn, 30);
        int done = mop < 0 || (mop == 1 && (strstr((char *)m, "audio.done") || strstr((char *)m, "\"error\"")));
        if (mop == 1 && strstr((char *)m, "audio.done")) exact = strstr((char *)m, "\"seed\":18446744073709551615") != NULL;
        if (done && mop == 1 && !exact) printf("last message: %s\n", (char *)m);
        free(m);
        if (done) break;
    }
    TEST_CHECK(exact, "audio.done reports the seed 18446744073709551615 exactly");
    close(c->fd);

    /* a disconnect while the utterance waits for text cancels it */
    th_resp r;
    th_get(port, "/metrics", NULL, &r);
    const char *m0 = r.body ? strstr((char *)r.body, "\nqtts_client_disconnects_total ") : NULL;
    double before = m0 ? atof(m0 + 31) : -1;
    th_resp_free(&r);
    TEST_CHECK(ws_open(c, port, "/v1/audio/speech/stream", NULL) == 101, "open");
    ws_send_json(c, CONFIG);
    ws_send_json(c, "{\"type\":\"input.text\",\"text\":\"Waiting for\"}");
    cJSON *as = ws_until(c, "audio.start", NULL, NULL, 10);
    cJSON_Delete(as);
    close(c->fd);
    double after = before;
    for (int i = 0; i < 50 && after == before; i++) {
        usleep(100000);
        th_get(port, "/metrics", NULL, &r);
        const char *m1 = r.body ? strstr((char *)r.body, "\nqtts_client_disconnects_total ") : NULL;
        after = m1 ? atof(m1 + 31) : -1;
        th_resp_free(&r);
    }
    TEST_CHECK(after == before + 1, "disconnect mid-utterance counted and cancelled (%g -> %g)", before, after);

    /* the session limit (4), then thread count after 20 sessions */
    int tasks0 = count_tasks(srv.pid);
    ws_client *held = calloc(4, sizeof *held);
    int opened = 0;
    for (int i = 0; i < 4; i++) opened += ws_open(&held[i], port, "/v1/audio/speech/stream", NULL) == 101;
    int st5 = ws_open(c, port, "/v1/audio/speech/stream", NULL);
    TEST_CHECK(opened == 4 && st5 == 503, "4 sessions open, the 5th gets 503 (%d, %d)", opened, st5);
    close(c->fd);
    for (int i = 0; i < 4; i++) close(held[i].fd);
    free(held);
    usleep(300000);
    long long e0, o0, e1, o1;
    cpu_split(port, srv.pid, &e0, &o0);
    double t_load = th_now();
    for (int i = 0; i < 20; i++) {
        size_t k;
        cJSON *dd;
        unsigned char *a = speak(port, text, cuts, 9, 0, &k, &dd);
        TEST_CHECK(a && dd, "session %d", i);
        free(a);
        cJSON_Delete(dd);
    }
    t_load = th_now() - t_load;
    cpu_split(port, srv.pid, &e1, &o1);
    int tasks1 = count_tasks(srv.pid);
    TEST_CHECK(tasks0 > 0 && tasks1 == tasks0, "thread count before/after 20 sessions: %d / %d", tasks0, tasks1);
    double hz = (double)sysconf(_SC_CLK_TCK);
    printf("20 WebSocket sessions: wall %.2f s, engine threads %.2f s CPU, other threads %.2f s CPU, effective cores "
           "%.2f\n",
           t_load, (e1 - e0) / hz, (o1 - o0) / hz, ((e1 - e0) + (o1 - o0)) / hz / t_load);
    TEST_CHECK(e1 - e0 > 0 && (o1 - o0) * 4 <= (e1 - e0) + 2,
               "the compute runs on the engine's threads: others used %lld ticks, the engine %lld", o1 - o0, e1 - e0);
    free(c);
    TEST_CHECK(th_stop(&srv, 30) == 0, "server exits cleanly: %s", srv.log);

    /* auth: the key in the Authorization header, or ?api_key= for browsers */
    const char *args2[] = {"-m", CV, "--threads", "2", "--api-key", "k9", NULL};
    if (!th_start(&srv, args2, 120)) {
        c = malloc(sizeof *c);
        TEST_CHECK(ws_open(c, srv.port, "/v1/audio/speech/stream", NULL) == 401, "no key: 401");
        close(c->fd);
        TEST_CHECK(ws_open(c, srv.port, "/v1/audio/speech/stream", "Authorization: Bearer k9\r\n") == 101,
                   "Authorization header: 101");
        close(c->fd);
        TEST_CHECK(ws_open(c, srv.port, "/v1/audio/speech/stream?api_key=k9", NULL) == 101, "api_key query: 101");
        close(c->fd);
        TEST_CHECK(ws_open(c, srv.port, "/v1/audio/speech/stream?api_key=wrong", NULL) == 401, "wrong key: 401");
        close(c->fd);
        free(c);
        TEST_CHECK(th_stop(&srv, 30) == 0, "server exits cleanly: %s", srv.log);
    } else {
        TEST_CHECK(0, "server with a key starts");
    }
    return test_finish("test_server_ws");
}
