/* Scale-out, for real: two `qtts serve` replicas on loopback ports share one
 * voices directory behind nginx running the shipped proxy settings
 * (deploy/nginx-qtts-proxy.conf, included as is, and the upstream block of
 * deploy/nginx.conf with its server line pointed at the replicas).
 *   a. a voice registered on replica A is used on B and through nginx; a
 *      second registration through nginx answers 409; nginx's 413 is JSON
 *   b. requests through nginx are spread over both replicas, and the
 *      replicas' /metrics add up to exactly the requests sent
 *   c. SIGKILL of A in the middle of a burst of buffered requests: nginx
 *      retries every one that had received nothing on B, none fails
 *   d. A restarted on its port rejoins; SIGTERM drains it: /health says 503,
 *      its in-flight requests finish, new ones go to B, it exits 0
 * Skipped loudly without nginx (scripts/deps.sh installs it); CI sets
 * QTTS_REQUIRE_CLIENTS=1, which turns the skip into a failure. */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>

#include "harness.h"
#include "server/b64.h"
#include "support/npy.h"
#include "support/test_util.h"
#include "test_server_http.h"

#define BASE_MODEL QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-0.6B-Base-tiny"
#define SAMPLES_PER_FRAME 1920 /* 24 kHz / 12.5 Hz codec frames */

/* Loud on both streams, so ctest's summary and a log reader both see it. */
static int skip(const char *why) {
    const char *bar = "========================================================================";
    printf("%s\nSKIP test_scale_out: THE SCALE-OUT DEPLOYMENT WAS NOT TESTED: %s\n%s\n", bar, why, bar);
    fprintf(stderr, "SKIP test_scale_out: the scale-out deployment was not tested: %s\n", why);
    fflush(stdout);
    const char *strict = getenv("QTTS_REQUIRE_CLIENTS");
    if (!strict || !*strict || !strcmp(strict, "0")) return 0;
    TEST_CHECK(0, "client tools required (QTTS_REQUIRE_CLIENTS): %s", why);
    return test_finish("test_scale_out");
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* nginx lives in sbin, which a non-root PATH often lacks. */
static int find_nginx(char *out, size_t size) {
    const char *path = getenv("PATH");
    char dirs[4096];
    snprintf(dirs, sizeof dirs, "%s:/usr/sbin:/usr/local/sbin:/usr/local/nginx/sbin", path ? path : "");
    for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(out, size, "%s/nginx", d);
        if (access(out, X_OK) == 0) return 0;
    }
    return -1;
}

/* Runs argv, its stdout+stderr into out; returns the exit status or -1. */
static int run_argv(char *const argv[], char *out, size_t size) {
    int pfd[2];
    if (pipe(pfd)) return -1;
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        dup2(pfd[1], 1);
        dup2(pfd[1], 2);
        close(pfd[0]);
        close(pfd[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(pfd[1]);
    size_t n = 0;
    for (;;) { /* read to the end, keeping what fits, so the child never blocks on a full pipe */
        char tmp[1024];
        ssize_t k = read(pfd[0], tmp, sizeof tmp);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        size_t keep = (size_t)k < size - 1 - n ? (size_t)k : size - 1 - n;
        memcpy(out + n, tmp, keep);
        n += keep;
    }
    out[n] = 0;
    close(pfd[0]);
    int st;
    if (waitpid(pid, &st, 0) != pid) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A loopback port nobody uses right now, below the kernel's ephemeral range:
 * an outgoing connection (nginx to B) can then never take A's port as its
 * source port while A is down, which would make A's restart fail. Falls back
 * to a kernel-chosen port. */
static int free_port(void) {
    int lo = 32768, hi = 60999; /* hi: read along, unused */
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f) {
        if (fscanf(f, "%d %d", &lo, &hi) != 2) lo = 32768;
        fclose(f);
    }
    /* the lower half below the ephemeral range (16384..32767 by default), probed from a per-run start */
    unsigned base = lo / 2 > 1024 ? (unsigned)lo / 2 : 1024, span = (unsigned)lo > base ? (unsigned)lo - base : 0;
    unsigned seed = (unsigned)getpid() * 2654435761u ^ (unsigned)(th_now() * 1e6);
    for (unsigned attempt = 0; attempt < 200; attempt++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0) return -1;
        struct sockaddr_in a;
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int port = span && attempt < 199 ? (int)(base + (seed + attempt * 7919u) % span) : 0; /* last try: any */
        a.sin_port = htons((uint16_t)port);
        socklen_t len = sizeof a;
        int ok = !bind(fd, (struct sockaddr *)&a, sizeof a) && !getsockname(fd, (struct sockaddr *)&a, &len);
        close(fd);
        if (ok) return ntohs(a.sin_port);
    }
    return -1;
}

/* The `upstream qtts { ... }` block of deploy/nginx.conf with its
 * `server qtts:8080 PARAMS;` line repeated once per replica port, so the
 * test balances with the shipped parameters (least_conn, max_fails,
 * keepalive). Returns -1 if the shipped file no longer has that shape. */
static int render_upstream(const char *conf, const int *ports, int n, char *out, size_t size) {
    const char *start = strstr(conf, "upstream qtts {");
    const char *end = start ? strstr(start, "\n    }") : NULL;
    if (!start || !end) return -1;
    size_t o = 0;
    int servers = 0;
    for (const char *line = start; line < end;) {
        const char *nl = strchr(line, '\n');
        size_t len = (size_t)((nl ? nl : end) - line);
        const char *srv = memmem(line, len, "server qtts:8080", 16);
        for (int i = 0; i < (srv ? n : 1); i++) {
            int k = srv ? snprintf(out + o, size - o, "%.*s127.0.0.1:%d%.*s\n", (int)(srv + 7 - line), line, ports[i],
                                   (int)(len - (size_t)(srv + 16 - line)), srv + 16)
                        : snprintf(out + o, size - o, "%.*s\n", (int)len, line);
            if (k < 0 || (size_t)k >= size - o) return -1;
            o += (size_t)k;
        }
        servers += srv != NULL;
        line = nl ? nl + 1 : end;
    }
    int k = snprintf(out + o, size - o, "    }\n");
    if (k < 0 || (size_t)k >= size - o) return -1;
    return servers == 1 ? 0 : -1;
}

static unsigned char *reference_wav(size_t *size) {
    npy_array a;
    if (npy_load_fixture("input_wave_1p5s", &a)) return NULL;
    unsigned char *w = th_make_wav(a.f, (size_t)a.numel, 24000, size);
    npy_free(&a);
    return w;
}

/* A greedy, seeded, x-vector-only speech request: cheap, and the same bytes
 * from any replica. */
static void speech_body(char *buf, size_t size, const char *voice, int frames) {
    snprintf(buf, size,
             "{\"input\":\"Hello world, this is a test.\",\"voice\":\"%s\",\"response_format\":\"wav\","
             "\"temperature\":0,\"seed\":7,\"max_new_tokens\":%d,\"x_vector_only\":true}",
             voice, frames);
}

/* A complete WAV of exactly `frames` codec frames. */
static int speech_ok(const th_resp *r, int frames) {
    const unsigned char *d;
    return r->status == 200 && r->complete && r->body &&
           th_wav_samples(r->body, r->body_len, &d, NULL) == (long)frames * SAMPLES_PER_FRAME;
}

/* qtts_speech_requests_total of one replica, or -1. */
static long speech_count(int port) {
    th_resp r;
    long v = -1;
    if (th_get(port, "/metrics", NULL, &r) == 0 && r.status == 200 && r.body) {
        const char *at = strstr((const char *)r.body, "\nqtts_speech_requests_total ");
        if (at) v = strtol(at + strlen("\nqtts_speech_requests_total "), NULL, 10);
    }
    th_resp_free(&r);
    return v;
}

/* ---- a burst of concurrent requests through one port ---- */

typedef struct {
    int port, frames, n;
    char header[64]; /* X-Test-Phase: tags the requests in nginx's access log */
    atomic_int next, done;
    int *status, *ok;
} burst;

static void *burst_worker(void *p) {
    burst *b = p;
    char body[512];
    speech_body(body, sizeof body, "alice", b->frames);
    for (;;) {
        int i = atomic_fetch_add(&b->next, 1);
        if (i >= b->n) return NULL;
        th_resp r;
        th_post_json(b->port, "/v1/audio/speech", b->header, body, &r, 120);
        b->status[i] = r.status;
        b->ok[i] = speech_ok(&r, b->frames);
        th_resp_free(&r);
        atomic_fetch_add(&b->done, 1);
    }
}

static void burst_start(burst *b, int port, const char *phase, int n, int frames, pthread_t *th, int conc) {
    b->port = port;
    b->frames = frames;
    b->n = n;
    snprintf(b->header, sizeof b->header, "X-Test-Phase: %s\r\n", phase);
    atomic_init(&b->next, 0);
    atomic_init(&b->done, 0);
    b->status = calloc((size_t)n, sizeof *b->status);
    b->ok = calloc((size_t)n, sizeof *b->ok);
    for (int i = 0; i < conc; i++) pthread_create(&th[i], NULL, burst_worker, b);
}

/* Joins the workers; returns how many requests failed. */
static int burst_join(burst *b, pthread_t *th, int conc) {
    for (int i = 0; i < conc; i++) pthread_join(th[i], NULL);
    int bad = 0;
    for (int i = 0; i < b->n; i++) {
        if (!b->ok[i]) {
            bad++;
            fprintf(stderr, "  request %d: status %d\n", i, b->status[i]);
        }
    }
    free(b->status);
    free(b->ok);
    return bad;
}

/* ---- nginx's access log (log_format scale below) ---- */

typedef struct {
    int lines, retried, final_a, final_b, status_200, from_503; /* from_503: moved off a replica that answered 503 */
} log_stats;

/* Counts the access-log lines of one phase; waits (up to 5 s) until `want`
 * lines are there, since nginx logs a request just after its last byte. */
static log_stats read_log(const char *path, const char *phase, int want, int port_a, int port_b) {
    log_stats s;
    char a[32], b[32];
    snprintf(a, sizeof a, "127.0.0.1:%d", port_a);
    snprintf(b, sizeof b, "127.0.0.1:%d", port_b);
    for (double end = th_now() + 5;;) {
        memset(&s, 0, sizeof s);
        FILE *f = fopen(path, "r");
        char line[1024];
        while (f && fgets(line, sizeof line, f)) {
            char ph[32], addrs[256], codes[256];
            int status;
            /* phase status "addr[, addr]" "code[, code]" */
            if (sscanf(line, "%31s %d \"%255[^\"]\" \"%255[^\"]\"", ph, &status, addrs, codes) != 4 ||
                strcmp(ph, phase))
                continue;
            s.lines++;
            s.status_200 += status == 200;
            s.retried += strchr(addrs, ',') != NULL;
            s.from_503 += strstr(codes, "503, ") != NULL;
            const char *last = strrchr(addrs, ' ');
            last = last ? last + 1 : addrs;
            s.final_a += !strcmp(last, a);
            s.final_b += !strcmp(last, b);
        }
        if (f) fclose(f);
        if (s.lines >= want || th_now() > end) return s;
        sleep_ms(50);
    }
}

/* Occurrences of `what` in a file (nginx's error log). */
static int count_in_file(const char *path, const char *what) {
    size_t n, w = strlen(what);
    unsigned char *t = th_read_file(path, &n);
    int c = 0;
    for (size_t i = 0; t && i + w <= n; i++) c += !memcmp(t + i, what, w);
    free(t);
    return c;
}

static void print_file(const char *what, const char *path) {
    size_t n;
    unsigned char *t = th_read_file(path, &n);
    fprintf(stderr, "---- %s (%s) ----\n%.*s\n", what, path, (int)(n > 6000 ? 6000 : n),
            t ? (const char *)t + (n > 6000 ? n - 6000 : 0) : "");
    free(t);
}

/* Waits for a server child to exit on its own; returns its exit status or -1. */
static int wait_exit(th_server *s, double timeout_s) {
    int st, rc = -1;
    for (double end = th_now() + timeout_s; th_now() < end; sleep_ms(20)) {
        if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
            rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            s->pid = 0;
            break;
        }
    }
    th_stop(s, 5); /* closes the log pipe; kills it if still running */
    return rc;
}

/* ---- the run ---- */

typedef struct {
    char nginx[1024], tmp[256], vdir[512], conf[1024], access[1024], errlog[1024];
    th_server a, b;
    pid_t nginx_pid;
    int port; /* nginx */
} env;

static int write_nginx_conf(env *e) {
    char path[1024];
    snprintf(path, sizeof path, "%s/deploy/nginx.conf", QTTS_SOURCE_DIR);
    size_t n;
    unsigned char *shipped = th_read_file(path, &n);
    char *upstream = malloc(8192);
    int ports[2] = {e->a.port, e->b.port};
    int rc = shipped && upstream ? render_upstream((const char *)shipped, ports, 2, upstream, 8192) : -1;
    free(shipped);
    if (rc) {
        TEST_CHECK(0, "%s has an `upstream qtts { ... server qtts:8080 ...; }` block", path);
        free(upstream);
        return -1;
    }
    /* Temp paths inside the temp dir so nginx needs no root paths; modules a
     * build leaves out must not be named. */
    char v[8192] = "";
    char *vargv[] = {e->nginx, "-V", NULL};
    run_argv(vargv, v, sizeof v);
    char temps[2048];
    int o = snprintf(temps, sizeof temps, "    client_body_temp_path %s/body;\n    proxy_temp_path %s/proxy;\n", e->tmp,
                     e->tmp);
    const char *mods[] = {"fastcgi", "uwsgi", "scgi"};
    for (int i = 0; i < 3; i++) {
        char without[64];
        snprintf(without, sizeof without, "--without-http_%s_module", mods[i]);
        if (!strstr(v, without))
            o += snprintf(temps + o, sizeof temps - (size_t)o, "    %s_temp_path %s/%s;\n", mods[i], e->tmp, mods[i]);
    }
    e->port = free_port();
    snprintf(e->conf, sizeof e->conf, "%s/nginx.conf", e->tmp);
    snprintf(e->access, sizeof e->access, "%s/access.log", e->tmp);
    snprintf(e->errlog, sizeof e->errlog, "%s/error.log", e->tmp);
    char *text = malloc(32768);
    snprintf(text, 32768,
             "# rendered by tests/test_scale_out.c\n"
             "%s" /* as root, workers would otherwise run as nobody and not reach the 0700 temp dir */
             "worker_processes 1;\n"
             "pid %s/nginx.pid;\n"
             "error_log %s info;\n"
             "events { worker_connections 512; }\n"
             "http {\n"
             "%s"
             "    log_format scale '$http_x_test_phase $status \"$upstream_addr\" \"$upstream_status\"';\n"
             "    access_log %s scale;\n"
             "    %s" /* the upstream block starts with its own indentation */
             "    server {\n"
             "        listen 127.0.0.1:%d;\n"
             "        include %s/deploy/nginx-qtts-proxy.conf;\n"
             "    }\n"
             "}\n",
             geteuid() == 0 ? "user root;\n" : "", e->tmp, e->errlog, temps, e->access, upstream, e->port,
             QTTS_SOURCE_DIR);
    free(upstream);
    rc = write_text_file(e->conf, text);
    free(text);
    return rc;
}

static int start_nginx(env *e) {
    char out[4096];
    char *targv[] = {e->nginx, "-t", "-q", "-p", e->tmp, "-c", e->conf, NULL};
    int rc = run_argv(targv, out, sizeof out);
    TEST_CHECK(rc == 0, "nginx -t accepts the config with the shipped include: %s", out);
    if (rc) {
        print_file("rendered nginx.conf", e->conf);
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDWR);
        if (devnull >= 0) dup2(devnull, 0), dup2(devnull, 1), dup2(devnull, 2);
        char *argv[] = {e->nginx, "-p", e->tmp, "-c", e->conf, "-g", "daemon off;", NULL};
        execv(e->nginx, argv);
        _exit(127);
    }
    e->nginx_pid = pid;
    for (double end = th_now() + 10; th_now() < end; sleep_ms(20)) {
        int fd = th_connect(e->port);
        if (fd >= 0) {
            close(fd);
            return 0;
        }
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) break;
    }
    TEST_CHECK(0, "nginx listens on 127.0.0.1:%d", e->port);
    print_file("nginx error log", e->errlog);
    return -1;
}

static void stop_nginx(env *e) {
    if (e->nginx_pid <= 0) return;
    kill(e->nginx_pid, SIGTERM);
    int st;
    for (double end = th_now() + 10; th_now() < end; sleep_ms(20))
        if (waitpid(e->nginx_pid, &st, WNOHANG) == e->nginx_pid) {
            e->nginx_pid = 0;
            return;
        }
    kill(e->nginx_pid, SIGKILL);
    waitpid(e->nginx_pid, &st, 0);
    e->nginx_pid = 0;
}

static int start_replica(th_server *s, const char *vdir, int port) {
    char p[16];
    snprintf(p, sizeof p, "%d", port);
    /* One compute thread each: the two replicas, nginx and the clients share 2 cores here.
     * --port after th_start's own "--port 0" wins (getopt: the last one counts).
     * --reuse-port, as deploy/ starts the server: without it a replica that died
     * cannot listen on its port again while the kernel holds the killed
     * connections in TIME_WAIT (up to 60 s), and d's restart would fail. */
    const char *args[] = {"-m", BASE_MODEL, "--threads", "1", "--voices-dir", vdir, "--port", p, "--reuse-port", NULL};
    return th_start(s, args, 120);
}

/* a. one voices directory, two replicas, one proxy */
static void phase_voices(env *e, long *direct_a, long *direct_b, long *via_nginx) {
    size_t wav_n;
    unsigned char *wav = reference_wav(&wav_n);
    TEST_CHECK(wav != NULL, "reference wav fixture");
    if (!wav) return;
    char *b64 = malloc(srv_b64_encoded_len(wav_n) + 1);
    srv_b64_encode(wav, wav_n, b64);
    free(wav);
    char *reg = malloc(strlen(b64) + 256);
    sprintf(reg, "{\"name\":\"alice\",\"ref_text\":\"Hello there, this is my voice.\",\"wav_b64\":\"%s\"}", b64);
    th_resp r;
    th_post_json(e->a.port, "/v1/audio/voices", NULL, reg, &r, 120);
    TEST_CHECK(r.status == 201, "a: voice registered on replica A: %d %s", r.status, r.body ? (char *)r.body : "");
    th_resp_free(&r);

    char body[512];
    speech_body(body, sizeof body, "alice", 12);
    th_resp ra, rb, rn;
    th_post_json(e->b.port, "/v1/audio/speech", NULL, body, &rb, 120);
    TEST_CHECK(speech_ok(&rb, 12), "a: replica B speaks with the voice registered on A: %d %s", rb.status,
               rb.status != 200 && rb.body ? (char *)rb.body : "");
    th_post_json(e->a.port, "/v1/audio/speech", NULL, body, &ra, 120);
    TEST_CHECK(speech_ok(&ra, 12), "a: replica A speaks with it: %d", ra.status);
    th_post_json(e->port, "/v1/audio/speech", "X-Test-Phase: a\r\n", body, &rn, 120);
    TEST_CHECK(speech_ok(&rn, 12), "a: nginx speaks with it: %d", rn.status);
    *direct_a += 1, *direct_b += 1, *via_nginx += 1;
    TEST_CHECK(ra.body_len == rb.body_len && rb.body_len == rn.body_len && ra.body && rb.body && rn.body &&
                   !memcmp(ra.body, rb.body, ra.body_len) && !memcmp(rb.body, rn.body, rb.body_len),
               "a: the same voice on every path: A, B and nginx return identical audio (greedy, seeded)");
    th_resp_free(&ra);
    th_resp_free(&rb);
    th_resp_free(&rn);

    th_get(e->port, "/v1/audio/voices", "X-Test-Phase: a\r\n", &r);
    TEST_CHECK(r.status == 200 && r.body && strstr((char *)r.body, "\"alice\""), "a: nginx lists alice");
    th_resp_free(&r);

    /* Registered through nginx on whichever replica, visible on both; the
     * same name again answers 409 (what makes a retried registration safe). */
    memcpy(reg + 9, "bobby", 5);
    th_post_json(e->port, "/v1/audio/voices", "X-Test-Phase: a\r\n", reg, &r, 120);
    TEST_CHECK(r.status == 201, "a: voice registered through nginx: %d %s", r.status, r.body ? (char *)r.body : "");
    th_resp_free(&r);
    th_post_json(e->port, "/v1/audio/voices", "X-Test-Phase: a\r\n", reg, &r, 120);
    TEST_CHECK(r.status == 409 && r.body && strstr((char *)r.body, "voice_exists"),
               "a: the same name again through nginx: 409 voice_exists (%d)", r.status);
    th_resp_free(&r);
    for (int k = 0; k < 2; k++) {
        th_get(k ? e->b.port : e->a.port, "/v1/audio/voices", NULL, &r);
        TEST_CHECK(r.status == 200 && r.body && strstr((char *)r.body, "\"bobby\""), "a: replica %c lists bobby",
                   k ? 'B' : 'A');
        th_resp_free(&r);
    }
    free(reg);
    free(b64);
    printf("  a: voice registered on A spoken by B, A and nginx (%s); second voice through nginx: 201, again 409\n",
           g_test_counts.failed ? "see failures" : "identical audio");

    /* nginx's own 413 (the shipped limit equals the server's 32 MiB) in the API's error shape. */
    size_t big = (33u << 20);
    char *huge = malloc(big);
    if (huge) {
        memset(huge, ' ', big);
        th_request(e->port, "POST", "/v1/audio/speech", "X-Test-Phase: a\r\n", huge, big, &r, 60);
        TEST_CHECK(r.status == 413 && r.body && strstr((char *)r.body, "\"body_too_large\""),
                   "a: a 33 MiB body gets nginx's JSON 413 (%d %s)", r.status, r.body ? (char *)r.body : "");
        th_resp_free(&r);
        free(huge);
    }
}

/* b. spread, and metrics that add up */
static void phase_spread(env *e, long direct_a, long direct_b, long *via_nginx) {
    long a0 = speech_count(e->a.port), b0 = speech_count(e->b.port);
    char body[512];
    speech_body(body, sizeof body, "alice", 6);
    int seq_ok = 0;
    const int seq = 12, conc_n = 16, conc = 4;
    for (int i = 0; i < seq; i++) {
        th_resp r;
        th_post_json(e->port, "/v1/audio/speech", "X-Test-Phase: b\r\n", body, &r, 120);
        seq_ok += speech_ok(&r, 6);
        th_resp_free(&r);
    }
    long a1 = speech_count(e->a.port), b1 = speech_count(e->b.port);
    burst bu;
    pthread_t th[8];
    burst_start(&bu, e->port, "b", conc_n, 6, th, conc);
    int bad = burst_join(&bu, th, conc);
    long a2 = speech_count(e->a.port), b2 = speech_count(e->b.port);
    *via_nginx += seq + conc_n;
    TEST_CHECK(seq_ok == seq && bad == 0, "b: all %d requests through nginx succeed (%d failed)", seq + conc_n,
               seq - seq_ok + bad);
    printf("  b: %d sequential through nginx: A %ld, B %ld; %d at concurrency %d: A %ld, B %ld\n", seq, a1 - a0,
           b1 - b0, conc_n, conc, a2 - a1, b2 - b1);
    TEST_CHECK(a1 - a0 >= seq / 4 && b1 - b0 >= seq / 4, "b: sequential requests are spread (A %ld, B %ld of %d)",
               a1 - a0, b1 - b0, seq);
    TEST_CHECK(a2 - a1 >= 1 && b2 - b1 >= 1, "b: concurrent requests reach both replicas (A %ld, B %ld)", a2 - a1,
               b2 - b1);
    TEST_CHECK(a2 + b2 == direct_a + direct_b + *via_nginx,
               "b: qtts_speech_requests_total A %ld + B %ld = %ld direct + %ld through nginx", a2, b2,
               direct_a + direct_b, *via_nginx);
    TEST_CHECK(a2 >= direct_a && b2 >= direct_b, "b: each replica counted at least its direct requests");
    log_stats ls = read_log(e->access, "b", seq + conc_n, e->a.port, e->b.port);
    TEST_CHECK(ls.lines == seq + conc_n && ls.final_a == a2 - a0 && ls.final_b == b2 - b0 && ls.retried == 0,
               "b: nginx's access log agrees: %d lines, A %d, B %d, retried %d", ls.lines, ls.final_a, ls.final_b,
               ls.retried);
}

/* c. a replica dies mid-burst */
static void phase_kill(env *e) {
    const int n = 40, conc = 8, frames = 48, kill_after = 4;
    long b0 = speech_count(e->b.port);
    burst bu;
    pthread_t th[8];
    double t0 = th_now();
    burst_start(&bu, e->port, "c", n, frames, th, conc);
    while (atomic_load(&bu.done) < kill_after && th_now() - t0 < 60) sleep_ms(1);
    int done_at_kill = atomic_load(&bu.done);
    double t_kill = th_now() - t0;
    kill(e->a.pid, SIGKILL);
    int st;
    waitpid(e->a.pid, &st, 0);
    e->a.pid = 0;
    th_stop(&e->a, 1); /* closes the log pipe */
    int bad = burst_join(&bu, th, conc);
    double wall = th_now() - t0;
    long b1 = speech_count(e->b.port);
    log_stats ls = read_log(e->access, "c", n, e->a.port, e->b.port);
    int refused = count_in_file(e->errlog, "Connection refused"),
        cut = count_in_file(e->errlog, "upstream prematurely closed") +
              count_in_file(e->errlog, "Connection reset by peer");
    printf("  c: %d buffered requests at concurrency %d, A SIGKILLed after %d had completed (%.2f s in): "
           "%d ok, %d failed; %d retried on B (nginx errors: %d cut mid-request, %d refused); served: A %d, B %d "
           "(B's metrics: +%ld); burst took %.2f s\n",
           n, conc, done_at_kill, t_kill, n - bad, bad, ls.retried, cut, refused, ls.final_a, ls.final_b, b1 - b0,
           wall);
    TEST_CHECK(done_at_kill < n, "c: the kill came mid-burst (%d of %d done)", done_at_kill, n);
    TEST_CHECK(bad == 0, "c: no buffered request is lost when a replica dies (%d failed)", bad);
    TEST_CHECK(ls.lines == n && ls.status_200 == n, "c: nginx logged %d requests, %d with 200", ls.lines,
               ls.status_200);
    TEST_CHECK(ls.retried >= 1, "c: nginx retried at least one request on B (%d)", ls.retried);
    TEST_CHECK(ls.final_a + ls.final_b == n && ls.final_b == b1 - b0,
               "c: every request was served by A before the kill or by B (A %d + B %d, B's metrics +%ld)", ls.final_a,
               ls.final_b, b1 - b0);
}

/* d. rolling restart: A comes back, then drains */
static void phase_drain(env *e, const char *vdir, int port_a) {
    if (start_replica(&e->a, vdir, port_a) || e->a.port != port_a) {
        TEST_CHECK(0, "d: replica A restarts on its port %d (got %d)", port_a, e->a.port);
        return;
    }
    /* nginx takes A back once its fail_timeout is over and a request reaches it. */
    char body[512];
    speech_body(body, sizeof body, "alice", 6);
    double t0 = th_now();
    int rejoined = 0;
    while (!rejoined && th_now() - t0 < 20) {
        th_resp r;
        th_post_json(e->port, "/v1/audio/speech", "X-Test-Phase: rejoin\r\n", body, &r, 60);
        TEST_CHECK(speech_ok(&r, 6), "d: requests succeed while A rejoins (%d)", r.status);
        th_resp_free(&r);
        rejoined = speech_count(e->a.port) > 0;
        if (!rejoined) sleep_ms(100);
    }
    TEST_CHECK(rejoined, "d: nginx sends requests to the restarted A again (%.1f s)", th_now() - t0);
    printf("  d: A restarted on port %d, back in rotation after %.1f s\n", port_a, th_now() - t0);
    if (!rejoined) return;

    /* Long enough requests that some are still on A when SIGTERM arrives. */
    const int n1 = 8, conc = 8, frames = 240, n2 = 8;
    burst bu;
    pthread_t th[8];
    burst_start(&bu, e->port, "d", n1, frames, th, conc);
    int inflight_a = 0;
    for (double end = th_now() + 10; !inflight_a && th_now() < end; sleep_ms(5)) {
        th_resp r;
        if (th_get(e->a.port, "/metrics", NULL, &r) == 0 && r.body) {
            const char *at = strstr((const char *)r.body, "\nqtts_inflight_requests ");
            /* the /metrics request itself is not a speech request; inflight counts speech */
            if (at) inflight_a = atoi(at + strlen("\nqtts_inflight_requests "));
        }
        th_resp_free(&r);
    }
    TEST_CHECK(inflight_a > 0, "d: requests in flight on A before SIGTERM (%d)", inflight_a);
    double ts = th_now();
    kill(e->a.pid, SIGTERM);
    int saw_draining = 0;
    for (int k = 0; k < 200 && !saw_draining; k++) {
        th_resp h;
        if (th_get(e->a.port, "/health", NULL, &h) != 0) {
            th_resp_free(&h);
            break; /* already gone */
        }
        saw_draining = h.status == 503 && h.body && strstr((char *)h.body, "draining");
        th_resp_free(&h);
        if (!saw_draining) sleep_ms(2);
    }
    /* New requests while A drains: A answers them 503, nginx moves them to B. */
    int late_ok = 0;
    for (int i = 0; i < n2; i++) {
        th_resp r;
        th_post_json(e->port, "/v1/audio/speech", "X-Test-Phase: d2\r\n", body, &r, 60);
        late_ok += speech_ok(&r, 6);
        th_resp_free(&r);
    }
    int bad = burst_join(&bu, th, conc);
    int rc = wait_exit(&e->a, 60);
    log_stats l1 = read_log(e->access, "d", n1, e->a.port, e->b.port),
              l2 = read_log(e->access, "d2", n2, e->a.port, e->b.port);
    printf("  d: SIGTERM to A with %d in flight: /health 503 draining seen: %s; %d of %d in-flight requests "
           "finished (%d on A), %d of %d new ones succeeded (%d moved to B after A's 503); A exited %d after "
           "%.2f s\n",
           inflight_a, saw_draining ? "yes" : "no", n1 - bad, n1, l1.final_a, late_ok, n2, l2.from_503, rc,
           th_now() - ts);
    TEST_CHECK(saw_draining, "d: a draining replica answers /health with 503 draining");
    TEST_CHECK(bad == 0 && l1.final_a >= 1, "d: requests in flight on A finish there (%d failed, %d on A)", bad,
               l1.final_a);
    TEST_CHECK(late_ok == n2 && l2.final_a == 0, "d: requests during the drain succeed on B (%d of %d, %d on A)",
               late_ok, n2, l2.final_a);
    TEST_CHECK(rc == 0, "d: the drained replica exits 0 (%d)", rc);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    env e;
    memset(&e, 0, sizeof e);
    if (find_nginx(e.nginx, sizeof e.nginx)) return skip("nginx is not installed (scripts/deps.sh installs it)");
    double t_start = th_now();
    snprintf(e.tmp, sizeof e.tmp, "/tmp/qtts_scale_XXXXXX");
    if (!mkdtemp(e.tmp)) {
        TEST_CHECK(0, "temp dir");
        return test_finish("test_scale_out");
    }
    snprintf(e.vdir, sizeof e.vdir, "%s/voices", e.tmp);
    mkdir(e.vdir, 0700);
    if (start_replica(&e.a, e.vdir, free_port()) || start_replica(&e.b, e.vdir, free_port())) {
        TEST_CHECK(0, "two replicas start");
    } else if (!write_nginx_conf(&e) && !start_nginx(&e)) {
        printf("  replicas on 127.0.0.1:%d (A) and :%d (B), nginx on :%d, voices in %s\n", e.a.port, e.b.port, e.port,
               e.vdir);
        int port_a = e.a.port;
        long direct_a = 0, direct_b = 0, via_nginx = 0;
        phase_voices(&e, &direct_a, &direct_b, &via_nginx);
        phase_spread(&e, direct_a, direct_b, &via_nginx);
        phase_kill(&e);
        phase_drain(&e, e.vdir, port_a);
        /* nobody left: nginx's own error, JSON and retryable */
        TEST_CHECK(th_stop(&e.b, 30) == 0, "replica B exits 0 on SIGTERM");
        th_resp r;
        th_get(e.port, "/v1/models", "X-Test-Phase: none\r\n", &r);
        TEST_CHECK(r.status == 503 && r.body && strstr((char *)r.body, "upstream_unavailable") &&
                       th_header(&r, "Retry-After"),
                   "no replica left: nginx answers 503 upstream_unavailable with Retry-After (%d %s)", r.status,
                   r.body ? (char *)r.body : "");
        th_resp_free(&r);
    }
    if (g_test_counts.failed) {
        th_drain_log(&e.a);
        th_drain_log(&e.b);
        fprintf(stderr, "---- replica A log ----\n%s\n---- replica B log ----\n%s\n", e.a.log, e.b.log);
        print_file("nginx error log", e.errlog);
        print_file("nginx access log", e.access);
    }
    stop_nginx(&e);
    if (e.a.pid > 0) th_stop(&e.a, 30);
    if (e.b.pid > 0) th_stop(&e.b, 30);
    rm_rf(e.tmp);
    printf("test_scale_out: %.1f s\n", th_now() - t_start);
    return test_finish("test_scale_out");
}
