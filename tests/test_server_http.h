/* Shared by tests/test_server*.c: start `qtts serve` as a child process on an
 * ephemeral loopback port, and a tiny blocking HTTP/1.1 client over a socket.
 * Header-only (static functions) so each test binary stays self-contained. */
#ifndef QTTS_TEST_SERVER_HTTP_H
#define QTTS_TEST_SERVER_HTTP_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

__attribute__((unused)) static double th_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- server child process ---- */

typedef struct {
    pid_t pid;
    int port;
    int err_fd; /* read end of the child's stderr */
    char log[8192];
    size_t log_len;
} th_server;

__attribute__((unused)) static void th_drain_log(th_server *s) {
    for (;;) {
        struct pollfd p = {.fd = s->err_fd, .events = POLLIN};
        if (s->err_fd < 0 || poll(&p, 1, 0) <= 0) return;
        char tmp[1024];
        ssize_t n = read(s->err_fd, tmp, sizeof tmp);
        if (n <= 0) return;
        size_t room = sizeof s->log - 1 - s->log_len;
        if ((size_t)n > room) { /* keep the tail */
            size_t drop = (size_t)n - room;
            if (drop > s->log_len) drop = s->log_len;
            memmove(s->log, s->log + drop, s->log_len - drop);
            s->log_len -= drop;
            room += drop;
        }
        memcpy(s->log + s->log_len, tmp, (size_t)n < room ? (size_t)n : room);
        s->log_len += (size_t)n < room ? (size_t)n : room;
        s->log[s->log_len] = 0;
    }
}

/* Starts `qtts CMD --host 127.0.0.1 --port 0 ARGS...` (args NULL-terminated)
 * with stderr captured, pre_exec(arg) run in the child just before exec when
 * not NULL. Returns 0 when it printed "listening on SCHEME://127.0.0.1:PORT"
 * within timeout_s (s->port set). */
__attribute__((unused)) static int th_start_cmd(th_server *s, const char *cmd, const char *scheme,
                                                const char *const *args, double timeout_s, void (*pre_exec)(void *),
                                                void *arg) {
    memset(s, 0, sizeof *s);
    s->err_fd = -1;
    int pfd[2];
    if (pipe(pfd)) return -1;
    const char *argv[64];
    int n = 0;
    argv[n++] = QTTS_BINARY;
    argv[n++] = cmd;
    argv[n++] = "--host";
    argv[n++] = "127.0.0.1";
    argv[n++] = "--port";
    argv[n++] = "0";
    for (int i = 0; args[i] && n < 62; i++) argv[n++] = args[i];
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        dup2(pfd[1], 2);
        close(pfd[0]);
        close(pfd[1]);
        int devnull = open("/dev/null", O_RDWR);
        if (devnull >= 0) {
            dup2(devnull, 0);
            dup2(devnull, 1);
        }
        if (pre_exec) pre_exec(arg);
        execv(QTTS_BINARY, (char *const *)argv);
        fprintf(stderr, "exec %s failed: %s\n", QTTS_BINARY, strerror(errno));
        _exit(127);
    }
    close(pfd[1]);
    s->pid = pid;
    s->err_fd = pfd[0];
    char tag[64];
    snprintf(tag, sizeof tag, "listening on %s://127.0.0.1:", scheme);
    double end = th_now() + timeout_s;
    while (th_now() < end) {
        struct pollfd p = {.fd = s->err_fd, .events = POLLIN};
        poll(&p, 1, 50);
        th_drain_log(s);
        const char *at = strstr(s->log, tag);
        if (at) {
            s->port = atoi(at + strlen(tag));
            return s->port > 0 ? 0 : -1;
        }
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            s->pid = 0;
            th_drain_log(s);
            fprintf(stderr, "%s server exited early: %s\n", cmd, s->log);
            return -1;
        }
    }
    fprintf(stderr, "%s server did not start in %.0f s: %s\n", cmd, timeout_s, s->log);
    return -1;
}

/* argv: extra arguments after "serve", NULL-terminated. Returns 0 when the
 * server printed its "listening on" line within timeout_s. */
__attribute__((unused)) static int th_start(th_server *s, const char *const *args, double timeout_s) {
    return th_start_cmd(s, "serve", "http", args, timeout_s, NULL, NULL);
}

/* Sends SIGTERM and waits; returns the exit status (or -1). */
__attribute__((unused)) static int th_stop(th_server *s, double timeout_s) {
    int rc = -1;
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        double end = th_now() + timeout_s;
        int st = 0;
        pid_t w = 0;
        while (th_now() < end && (w = waitpid(s->pid, &st, WNOHANG)) == 0) {
            struct timespec ts = {0, 20 * 1000000};
            nanosleep(&ts, NULL);
        }
        if (w == s->pid) {
            rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
        } else {
            kill(s->pid, SIGKILL);
            waitpid(s->pid, &st, 0);
        }
        s->pid = 0;
    }
    th_drain_log(s);
    if (s->err_fd >= 0) close(s->err_fd);
    s->err_fd = -1;
    /* Under ASan/UBSan the server's own reports count as failures. */
    if (strstr(s->log, "Sanitizer") || strstr(s->log, "runtime error:")) {
        fprintf(stderr, "server sanitizer report:\n%s\n", s->log);
        if (rc == 0) rc = 99;
    }
    return rc;
}

/* ---- client ---- */

typedef struct {
    int status;
    char headers[4096];
    unsigned char *body;
    size_t body_len;
    int chunked;
    int complete; /* the body ended properly (final chunk / full Content-Length) */
    double t_first_body; /* seconds from sending to the first body byte; <0 if none */
} th_resp;

__attribute__((unused)) static void th_resp_free(th_resp *r) {
    free(r->body);
    r->body = NULL;
    r->body_len = 0;
}

__attribute__((unused)) static int th_connect(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a)) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

__attribute__((unused)) static int th_send_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

__attribute__((unused)) static const char *th_header(const th_resp *r, const char *name) {
    static __thread char val[512]; /* test code only */
    size_t nl = strlen(name);
    for (const char *p = r->headers; p && *p;) {
        if (!strncasecmp(p, name, nl) && p[nl] == ':') {
            const char *v = p + nl + 1;
            while (*v == ' ') v++;
            size_t k = strcspn(v, "\r\n");
            if (k >= sizeof val) k = sizeof val - 1;
            memcpy(val, v, k);
            val[k] = 0;
            return val;
        }
        p = strstr(p, "\r\n");
        if (p) p += 2;
    }
    return NULL;
}

/* Parses raw (headers + body as received) into r. */
__attribute__((unused)) static void th_parse(const unsigned char *raw, size_t n, th_resp *r) {
    const unsigned char *end = NULL;
    for (size_t i = 0; i + 3 < n; i++)
        if (!memcmp(raw + i, "\r\n\r\n", 4)) {
            end = raw + i;
            break;
        }
    if (!end) return;
    size_t hl = (size_t)(end - raw) + 2;
    memcpy(r->headers, raw, hl < sizeof r->headers - 1 ? hl : sizeof r->headers - 1);
    r->status = atoi(r->headers + 9);
    const unsigned char *b = end + 4;
    size_t bn = n - (size_t)(b - raw);
    const char *te = th_header(r, "Transfer-Encoding");
    r->body = malloc(bn + 1);
    if (!r->body) return;
    if (te && strstr(te, "chunked")) {
        r->chunked = 1;
        size_t o = 0;
        while (bn) {
            char *e;
            unsigned long len = strtoul((const char *)b, &e, 16);
            const unsigned char *crlf = memmem(b, bn, "\r\n", 2);
            if (!crlf || (const unsigned char *)e > crlf) break;
            size_t hdr = (size_t)(crlf - b) + 2;
            if (len == 0) {
                r->complete = 1;
                break;
            }
            if (hdr + len + 2 > bn) { /* truncated chunk */
                size_t have = bn > hdr ? bn - hdr : 0;
                if (have > len) have = len;
                memcpy(r->body + o, b + hdr, have);
                o += have;
                break;
            }
            memcpy(r->body + o, b + hdr, len);
            o += len;
            b += hdr + len + 2;
            bn -= hdr + len + 2;
        }
        r->body_len = o;
    } else {
        memcpy(r->body, b, bn);
        r->body_len = bn;
        const char *cl = th_header(r, "Content-Length");
        r->complete = cl ? (size_t)strtoull(cl, NULL, 10) == bn : 1;
    }
    r->body[r->body_len] = 0;
}

/* One request on a new connection ("Connection: close"). extra: more header
 * lines, each ending in \r\n, or NULL. Returns 0 if a response was read. */
/* content_type: the body's Content-Type (th_request sends application/json). */
__attribute__((unused)) static int th_request_typed(int port, const char *method, const char *path,
                                                    const char *content_type, const char *extra, const void *body,
                                                    size_t body_len, th_resp *r, double timeout_s) {
    memset(r, 0, sizeof *r);
    r->t_first_body = -1;
    int fd = th_connect(port);
    if (fd < 0) return -1;
    char head[2048];
    int hn = snprintf(head, sizeof head,
                      "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: %s\r\n"
                      "Content-Length: %zu\r\n%s\r\n",
                      method, path, content_type, body_len, extra ? extra : "");
    double t0 = th_now();
    if (th_send_all(fd, head, (size_t)hn) || (body_len && th_send_all(fd, body, body_len))) {
        /* the server may answer early (413) and close: still read what came */
    }
    size_t cap = 65536, n = 0;
    unsigned char *raw = malloc(cap);
    double end = t0 + timeout_s;
    while (raw && th_now() < end) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 100) <= 0) continue;
        if (cap - n < 65536) {
            unsigned char *q = realloc(raw, cap * 2);
            if (!q) break;
            raw = q;
            cap *= 2;
        }
        ssize_t k = recv(fd, raw + n, cap - n, 0);
        if (k <= 0) break;
        if (r->t_first_body < 0 && memmem(raw, n + (size_t)k, "\r\n\r\n", 4)) {
            const unsigned char *he = memmem(raw, n + (size_t)k, "\r\n\r\n", 4);
            if ((size_t)(he - raw) + 4 < n + (size_t)k) r->t_first_body = th_now() - t0;
        }
        n += (size_t)k;
    }
    close(fd);
    if (!raw) return -1;
    th_parse(raw, n, r);
    free(raw);
    return r->status ? 0 : -1;
}

__attribute__((unused)) static int th_request(int port, const char *method, const char *path, const char *extra,
                                              const void *body, size_t body_len, th_resp *r, double timeout_s) {
    return th_request_typed(port, method, path, "application/json", extra, body, body_len, r, timeout_s);
}

__attribute__((unused)) static int th_post_json(int port, const char *path, const char *extra, const char *json, th_resp *r, double timeout_s) {
    return th_request(port, "POST", path, extra, json, strlen(json), r, timeout_s);
}

__attribute__((unused)) static int th_get(int port, const char *path, const char *extra, th_resp *r) {
    return th_request(port, "GET", path, extra, NULL, 0, r, 30);
}

/* ---- WAV ---- */

/* Parses a RIFF PCM s16 mono WAV; returns the sample count or -1. *data
 * points at the samples. */
__attribute__((unused)) static long th_wav_samples(const unsigned char *b, size_t n, const unsigned char **data, int *rate) {
    if (n < 44 || memcmp(b, "RIFF", 4) || memcmp(b + 8, "WAVE", 4)) return -1;
    size_t off = 12;
    int fmt_ok = 0;
    while (off + 8 <= n) {
        uint32_t len = (uint32_t)b[off + 4] | (uint32_t)b[off + 5] << 8 | (uint32_t)b[off + 6] << 16 |
                       (uint32_t)b[off + 7] << 24;
        if (!memcmp(b + off, "fmt ", 4) && off + 24 <= n) {
            int fmt = b[off + 8] | b[off + 9] << 8, ch = b[off + 10] | b[off + 11] << 8,
                bits = b[off + 22] | b[off + 23] << 8;
            if (rate) *rate = (int)(b[off + 12] | b[off + 13] << 8 | b[off + 14] << 16 | (uint32_t)b[off + 15] << 24);
            fmt_ok = fmt == 1 && ch == 1 && bits == 16;
        } else if (!memcmp(b + off, "data", 4)) {
            if (!fmt_ok) return -1;
            size_t avail = n - off - 8;
            if (len != 0xFFFFFFFFu && len != avail) return -1; /* sizes must match what arrived */
            *data = b + off + 8;
            return (long)(avail / 2);
        }
        off += 8 + len + (len & 1);
    }
    return -1;
}

/* Builds a 16-bit mono WAV file in memory from float samples. */
__attribute__((unused)) static unsigned char *th_make_wav(const float *x, size_t n, int rate, size_t *size) {
    *size = 44 + 2 * n;
    unsigned char *b = malloc(*size);
    if (!b) return NULL;
    uint32_t v[] = {36 + 2 * (uint32_t)n, 16, (uint32_t)rate, (uint32_t)rate * 2, 2 * (uint32_t)n};
    memcpy(b, "RIFF", 4);
    memcpy(b + 4, &v[0], 4);
    memcpy(b + 8, "WAVEfmt ", 8);
    memcpy(b + 16, &v[1], 4);
    b[20] = 1, b[21] = 0, b[22] = 1, b[23] = 0;
    memcpy(b + 24, &v[2], 4);
    memcpy(b + 28, &v[3], 4);
    b[32] = 2, b[33] = 0, b[34] = 16, b[35] = 0;
    memcpy(b + 36, "data", 4);
    memcpy(b + 40, &v[4], 4);
    for (size_t i = 0; i < n; i++) {
        float f = x[i] > 1 ? 1 : x[i] < -1 ? -1 : x[i];
        int16_t s = (int16_t)(f * 32767.f);
        b[44 + 2 * i] = (unsigned char)s;
        b[45 + 2 * i] = (unsigned char)((uint16_t)s >> 8);
    }
    return b;
}

/* Reads a file completely; NULL if missing. */
__attribute__((unused)) static unsigned char *th_read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    *n = 0;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(len > 0 ? (size_t)len : 1);
    if (b && len > 0 && fread(b, 1, (size_t)len, f) != (size_t)len) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) *n = (size_t)(len > 0 ? len : 0);
    return b;
}


/* ---- more helpers (soak and fault tests) ---- */

#include <dirent.h>
#include <sys/resource.h>

/* th_start, with pre_exec(arg) run in the child just before exec (drop
 * privileges, set a resource limit, ...). */
__attribute__((unused)) static int th_start_hook(th_server *s, const char *const *args, double timeout_s,
                                                 void (*pre_exec)(void *), void *arg) {
    return th_start_cmd(s, "serve", "http", args, timeout_s, pre_exec, arg);
}

/* SIGKILL and reap; the log is kept (no sanitizer check: a killed process
 * reports nothing). */
__attribute__((unused)) static void th_kill9(th_server *s) {
    if (s->pid > 0) {
        int st;
        kill(s->pid, SIGKILL);
        waitpid(s->pid, &st, 0);
        s->pid = 0;
    }
    th_drain_log(s);
    if (s->err_fd >= 0) close(s->err_fd);
    s->err_fd = -1;
}

/* /proc figures of a process: VmRSS in kB, threads, open file descriptors
 * (-1 if unreadable). */
__attribute__((unused)) static long th_proc_rss_kb(pid_t pid) {
    char p[64], line[256];
    snprintf(p, sizeof p, "/proc/%d/status", (int)pid);
    FILE *f = fopen(p, "r");
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) kb = atol(line + 6);
    if (f) fclose(f);
    return kb;
}

__attribute__((unused)) static int th_proc_count(pid_t pid, const char *sub) {
    char p[64];
    snprintf(p, sizeof p, "/proc/%d/%s", (int)pid, sub);
    DIR *d = opendir(p);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] >= '0' && e->d_name[0] <= '9';
    closedir(d);
    return n;
}

__attribute__((unused)) static int th_proc_threads(pid_t pid) { return th_proc_count(pid, "task"); }
__attribute__((unused)) static int th_proc_fds(pid_t pid) { return th_proc_count(pid, "fd"); }

/* A sample of /metrics (a line "NAME VALUE"); -1 if absent. */
__attribute__((unused)) static double th_metric(int port, const char *name) {
    th_resp r;
    double v = -1;
    if (th_get(port, "/metrics", NULL, &r) == 0 && r.body) {
        char key[160];
        snprintf(key, sizeof key, "\n%s ", name);
        const char *at = strstr((const char *)r.body, key);
        if (at) v = atof(at + strlen(key));
    }
    th_resp_free(&r);
    return v;
}

/* A speech request whose socket is returned once the response headers and
 * at least min_body body bytes arrived (raw/len: what was read); -1 on
 * failure or timeout. */
__attribute__((unused)) static int th_open_stream(int port, const char *json, size_t min_body, char *raw, size_t cap,
                                                  size_t *len, double timeout_s) {
    *len = 0;
    int fd = th_connect(port);
    if (fd < 0) return -1;
    char head[512];
    int hn = snprintf(head, sizeof head,
                      "POST /v1/audio/speech HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      "Content-Length: %zu\r\n\r\n",
                      strlen(json));
    if (th_send_all(fd, head, (size_t)hn) || th_send_all(fd, json, strlen(json))) {
        close(fd);
        return -1;
    }
    double end = th_now() + timeout_s;
    while (th_now() < end && *len < cap - 1) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 100) <= 0) continue;
        ssize_t k = recv(fd, raw + *len, cap - 1 - *len, 0);
        if (k <= 0) break;
        *len += (size_t)k;
        raw[*len] = 0;
        const char *he = strstr(raw, "\r\n\r\n");
        if (he && (size_t)(he - raw) + 4 + min_body <= *len) return fd;
    }
    close(fd);
    return -1;
}

/* Reads until the peer closes or timeout_s; returns the total length. */
__attribute__((unused)) static size_t th_read_rest(int fd, char *raw, size_t len, size_t cap, double timeout_s) {
    double end = th_now() + timeout_s;
    while (th_now() < end && len < cap - 1) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 100) <= 0) continue;
        ssize_t k = recv(fd, raw + len, cap - 1 - len, 0);
        if (k <= 0) break;
        len += (size_t)k;
    }
    raw[len] = 0;
    return len;
}

/* multipart/form-data: parts as name / filename (NULL: a plain field) / data. */
typedef struct {
    const char *name, *filename;
    const void *data;
    size_t len;
} th_form_part;

#define TH_FORM_BOUNDARY "----qttsTestBoundary5c1f0e"

__attribute__((unused)) static unsigned char *th_form_body(const th_form_part *p, int n, size_t *len) {
    size_t cap = 256;
    for (int i = 0; i < n; i++) cap += p[i].len + 256 + strlen(p[i].name) + (p[i].filename ? strlen(p[i].filename) : 0);
    unsigned char *b = malloc(cap);
    if (!b) return NULL;
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        o += (size_t)snprintf((char *)b + o, cap - o, "--%s\r\nContent-Disposition: form-data; name=\"%s\"",
                              TH_FORM_BOUNDARY, p[i].name);
        if (p[i].filename)
            o += (size_t)snprintf((char *)b + o, cap - o, "; filename=\"%s\"\r\nContent-Type: audio/wav",
                                  p[i].filename);
        o += (size_t)snprintf((char *)b + o, cap - o, "\r\n\r\n");
        memcpy(b + o, p[i].data, p[i].len);
        o += p[i].len;
        o += (size_t)snprintf((char *)b + o, cap - o, "\r\n");
    }
    o += (size_t)snprintf((char *)b + o, cap - o, "--%s--\r\n", TH_FORM_BOUNDARY);
    *len = o;
    return b;
}

/* POST /v1/audio/voices as multipart: name, audio_sample (wav), consent,
 * ref_text (if not NULL). */
__attribute__((unused)) static int th_register_form(int port, const char *name, const unsigned char *wav,
                                                    size_t wav_n, const char *ref_text, th_resp *r,
                                                    double timeout_s) {
    th_form_part parts[4] = {{"name", NULL, name, strlen(name)},
                             {"audio_sample", "ref.wav", wav, wav_n},
                             {"consent", NULL, "none", 4},
                             {"ref_text", NULL, ref_text ? ref_text : "", ref_text ? strlen(ref_text) : 0}};
    size_t len = 0;
    unsigned char *body = th_form_body(parts, ref_text ? 4 : 3, &len);
    if (!body) {
        memset(r, 0, sizeof *r);
        return -1;
    }
    int rc = th_request_typed(port, "POST", "/v1/audio/voices", "multipart/form-data; boundary=" TH_FORM_BOUNDARY,
                              NULL, body, len, r, timeout_s);
    free(body);
    return rc;
}

/* Checks the first bytes of an audio body in response_format fmt. */
__attribute__((unused)) static int th_audio_magic_ok(const char *fmt, const unsigned char *b, size_t n) {
    if (!b || n < 4) return 0;
    if (!strcmp(fmt, "mp3")) return !memcmp(b, "ID3", 3) || (b[0] == 0xFF && (b[1] & 0xE0) == 0xE0);
    if (!strcmp(fmt, "opus")) return !memcmp(b, "OggS", 4);
    if (!strcmp(fmt, "aac")) return b[0] == 0xFF && (b[1] & 0xF6) == 0xF0; /* ADTS sync, layer 0 */
    if (!strcmp(fmt, "flac")) return !memcmp(b, "fLaC", 4);
    if (!strcmp(fmt, "wav")) return n >= 44 && !memcmp(b, "RIFF", 4) && !memcmp(b + 8, "WAVE", 4);
    if (!strcmp(fmt, "pcm")) return n % 2 == 0;
    return 0;
}

#endif
