/* qtts download against a fake hub on 127.0.0.1 (a thread in this process):
 * full download of the tiny golden model, resume after a cut transfer, a
 * server that ignores Range, checksum mismatches, pagination, redirects,
 * unsafe paths, offline errors, the CLI and the --model resolver. */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "support/test_util.h"
#include "net/download.h"
#include "io/hub.h"

/* ---- fake hub content ---- */

typedef struct {
    char path[512];
    unsigned char *data;
    size_t size;
    int lfs;
    char sha256[65], sha1[41];
} hub_file;

typedef struct {
    const char *id;
    hub_file files[64];
    int n;
} hub_repo;

static void hash_hex(const EVP_MD *md, const void *hdr, size_t hn, const void *d, size_t n, char *out) {
    unsigned char dig[EVP_MAX_MD_SIZE];
    unsigned dn = 0;
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    EVP_DigestInit_ex(c, md, NULL);
    if (hn) EVP_DigestUpdate(c, hdr, hn);
    EVP_DigestUpdate(c, d, n);
    EVP_DigestFinal_ex(c, dig, &dn);
    EVP_MD_CTX_free(c);
    for (unsigned i = 0; i < dn; i++) sprintf(out + 2 * i, "%02x", dig[i]);
}

static void add_file(hub_repo *r, const char *path, unsigned char *data, size_t size, int lfs) {
    hub_file *f = &r->files[r->n++];
    snprintf(f->path, sizeof f->path, "%s", path);
    f->data = data, f->size = size, f->lfs = lfs;
    hash_hex(EVP_sha256(), NULL, 0, data, size, f->sha256);
    char hdr[64];
    int hn = snprintf(hdr, sizeof hdr, "blob %zu", size) + 1;
    hash_hex(EVP_sha1(), hdr, (size_t)hn, data, size, f->sha1);
}

static void add_mem(hub_repo *r, const char *path, const char *text) {
    size_t n = strlen(text);
    unsigned char *d = malloc(n + 1);
    memcpy(d, text, n + 1);
    add_file(r, path, d, n, 0);
}

static void load_dir(hub_repo *r, const char *root, const char *rel) {
    char dpath[1024];
    snprintf(dpath, sizeof dpath, "%s%s%s", root, rel[0] ? "/" : "", rel);
    DIR *d = opendir(dpath);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) && r->n < 60) {
        if (e->d_name[0] == '.') continue;
        char sub[1024], full[2048];
        snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
        snprintf(full, sizeof full, "%s/%s", root, sub);
        struct stat st;
        if (stat(full, &st)) continue;
        if (S_ISDIR(st.st_mode)) {
            load_dir(r, root, sub);
            continue;
        }
        FILE *f = fopen(full, "rb");
        unsigned char *data = malloc((size_t)st.st_size + 1);
        size_t got = fread(data, 1, (size_t)st.st_size, f);
        fclose(f);
        add_file(r, sub, data, got, strstr(sub, ".safetensors") != NULL || got > (1u << 20));
    }
    closedir(d);
}

/* ---- the server ---- */

typedef struct {
    int listen_fd, port;
    pthread_t thread;
    atomic_int stop;
    hub_repo *repos;
    int n_repos;
    pthread_mutex_t mu;
    /* knobs */
    char cut_path[512];
    int cut_remaining;
    size_t cut_bytes;
    int ignore_range;
    char corrupt_path[512];
    int evil; /* list an unsafe path (1) or a size no integer holds (2) */
    /* observations */
    int requests;
    long last_range_start; /* of the last file request with a Range header, else -1 */
    char last_range_path[512];
} server;

static void send_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n) {
        ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
        if (k <= 0) return;
        c += k, n -= (size_t)k;
    }
}

static void respond(int fd, int code, const char *status, const char *extra, const void *body, size_t n) {
    char h[2048];
    int hn = snprintf(h, sizeof h, "HTTP/1.1 %d %s\r\nContent-Length: %zu\r\nConnection: close\r\n%s\r\n", code,
                      status, n, extra ? extra : "");
    send_all(fd, h, (size_t)hn);
    if (n) send_all(fd, body, n);
}

static void url_decode(char *s) {
    char *o = s;
    for (char *p = s; *p; p++) {
        if (*p == '%' && p[1] && p[2]) {
            char hex[3] = {p[1], p[2], 0};
            *o++ = (char)strtol(hex, NULL, 16);
            p += 2;
        } else {
            *o++ = *p;
        }
    }
    *o = 0;
}

static hub_repo *find_repo(server *s, const char *path, const char **rest) {
    for (int i = 0; i < s->n_repos; i++) {
        size_t n = strlen(s->repos[i].id);
        if (!strncmp(path, s->repos[i].id, n) && path[n] == '/') {
            *rest = path + n + 1;
            return &s->repos[i];
        }
    }
    return NULL;
}

static void serve_tree(server *s, int fd, hub_repo *r, int page) {
    /* two pages: the first half, then the rest, linked like the hub does */
    int half = r->n / 2, from = page ? half : 0, to = page ? r->n : half;
    cJSON *arr = cJSON_CreateArray();
    if (!page) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "type", "directory");
        cJSON_AddStringToObject(d, "path", "speech_tokenizer");
        cJSON_AddItemToArray(arr, d);
    }
    for (int i = from; i < to; i++) {
        hub_file *f = &r->files[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "type", "file");
        cJSON_AddStringToObject(o, "oid", f->lfs ? "0123456789abcdef0123456789abcdef01234567" : f->sha1);
        cJSON_AddNumberToObject(o, "size", (double)f->size);
        cJSON_AddStringToObject(o, "path", f->path);
        if (f->lfs) {
            cJSON *l = cJSON_AddObjectToObject(o, "lfs");
            cJSON_AddStringToObject(l, "oid", f->sha256);
            cJSON_AddNumberToObject(l, "size", (double)f->size);
            cJSON_AddNumberToObject(l, "pointerSize", 134);
        }
        cJSON_AddItemToArray(arr, o);
    }
    pthread_mutex_lock(&s->mu);
    int evil = s->evil;
    pthread_mutex_unlock(&s->mu);
    if (evil && page) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "type", "file");
        cJSON_AddStringToObject(o, "oid", "0123456789abcdef0123456789abcdef01234567");
        if (evil == 2) cJSON_AddRawToObject(o, "size", "1e400"); /* inf: found by fuzz_hub_list */
        else cJSON_AddNumberToObject(o, "size", 4);
        cJSON_AddStringToObject(o, "path", evil == 2 ? "huge.bin" : "../escaped.txt");
        cJSON_AddItemToArray(arr, o);
    }
    char *json = cJSON_PrintUnformatted(arr);
    char extra[1024] = "Content-Type: application/json\r\n";
    if (!page)
        snprintf(extra, sizeof extra,
                 "Content-Type: application/json\r\nLink: <http://127.0.0.1:%d/api/models/%s/tree/main?recursive=true"
                 "&cursor=abc>; rel=\"next\"\r\n",
                 s->port, r->id);
    respond(fd, 200, "OK", extra, json, strlen(json));
    free(json);
    cJSON_Delete(arr);
}

static void serve_file(server *s, int fd, hub_file *f, long range) {
    pthread_mutex_lock(&s->mu);
    int cut = s->cut_remaining > 0 && !strcmp(s->cut_path, f->path);
    if (cut) s->cut_remaining--;
    size_t cut_bytes = s->cut_bytes;
    int ignore = s->ignore_range;
    int corrupt = !strcmp(s->corrupt_path, f->path);
    if (range >= 0) {
        s->last_range_start = range;
        snprintf(s->last_range_path, sizeof s->last_range_path, "%s", f->path);
    }
    pthread_mutex_unlock(&s->mu);
    unsigned char *body = malloc(f->size + 1);
    memcpy(body, f->data, f->size);
    if (corrupt && f->size) body[f->size / 2] ^= 0x5A;
    size_t from = (range >= 0 && !ignore) ? (size_t)range : 0;
    if (from > f->size) {
        respond(fd, 416, "Range Not Satisfiable", NULL, NULL, 0);
        free(body);
        return;
    }
    size_t n = f->size - from;
    char h[1024];
    int hn;
    if (range >= 0 && !ignore)
        hn = snprintf(h, sizeof h,
                      "HTTP/1.1 206 Partial Content\r\nContent-Length: %zu\r\nContent-Range: bytes %zu-%zu/%zu\r\n"
                      "Connection: close\r\n\r\n",
                      n, from, f->size ? f->size - 1 : 0, f->size);
    else
        hn = snprintf(h, sizeof h, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n", n);
    send_all(fd, h, (size_t)hn);
    send_all(fd, body + from, cut && cut_bytes < n ? cut_bytes : n); /* a cut closes early */
    free(body);
}

static void handle(server *s, int fd) {
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char req[8192];
    size_t n = 0;
    while (n < sizeof req - 1) {
        ssize_t k = recv(fd, req + n, sizeof req - 1 - n, 0);
        if (k <= 0) return;
        n += (size_t)k;
        req[n] = 0;
        if (strstr(req, "\r\n\r\n")) break;
    }
    pthread_mutex_lock(&s->mu);
    s->requests++;
    pthread_mutex_unlock(&s->mu);
    char method[16], target[4096];
    if (sscanf(req, "%15s %4095s", method, target) != 2 || strcmp(method, "GET")) {
        respond(fd, 400, "Bad Request", NULL, NULL, 0);
        return;
    }
    long range = -1;
    char *rh = strcasestr(req, "\r\nRange: bytes=");
    if (rh) range = strtol(rh + 15, NULL, 10);
    char *q = strchr(target, '?');
    int page = q && strstr(q, "cursor=");
    if (q) *q = 0;
    url_decode(target);
    const char *rest;
    hub_repo *r;
    if (!strncmp(target, "/api/models/", 12) && (r = find_repo(s, target + 12, &rest)) && !strcmp(rest, "tree/main")) {
        serve_tree(s, fd, r, page);
        return;
    }
    int cdn = !strncmp(target, "/cdn/", 5);
    if ((r = find_repo(s, target + (cdn ? 5 : 1), &rest)) && (cdn || !strncmp(rest, "resolve/main/", 13))) {
        const char *path = cdn ? rest : rest + 13;
        for (int i = 0; i < r->n; i++) {
            if (strcmp(r->files[i].path, path)) continue;
            if (r->files[i].lfs && !cdn) { /* LFS files redirect to a CDN, like the hub */
                char loc[1200];
                snprintf(loc, sizeof loc, "Location: /cdn/%s/%s\r\n", r->id, path);
                respond(fd, 302, "Found", loc, NULL, 0);
                return;
            }
            serve_file(s, fd, &r->files[i], range);
            return;
        }
    }
    const char *msg = "{\"error\":\"Repository not found\"}";
    respond(fd, 404, "Not Found", "Content-Type: application/json\r\n", msg, strlen(msg));
}

static void *server_main(void *u) {
    server *s = u;
    while (!atomic_load(&s->stop)) {
        struct pollfd p = {s->listen_fd, POLLIN, 0};
        if (poll(&p, 1, 50) <= 0) continue;
        int fd = accept(s->listen_fd, NULL, NULL);
        if (fd < 0) continue;
        handle(s, fd);
        shutdown(fd, SHUT_RDWR);
        close(fd);
    }
    return NULL;
}

static int server_start(server *s) {
    s->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(s->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(s->listen_fd, (struct sockaddr *)&a, sizeof a) || listen(s->listen_fd, 16)) return -1;
    socklen_t al = sizeof a;
    getsockname(s->listen_fd, (struct sockaddr *)&a, &al);
    s->port = ntohs(a.sin_port);
    s->last_range_start = -1;
    pthread_mutex_init(&s->mu, NULL);
    return pthread_create(&s->thread, NULL, server_main, s);
}

static void server_stop(server *s) {
    atomic_store(&s->stop, 1);
    pthread_join(s->thread, NULL);
    close(s->listen_fd);
    pthread_mutex_destroy(&s->mu);
}

/* ---- helpers ---- */

static int file_equals(const char *path, const hub_file *f) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return 0;
    unsigned char *d = malloc(f->size + 1);
    size_t got = fread(d, 1, f->size + 1, fp);
    fclose(fp);
    int eq = got == f->size && !memcmp(d, f->data, f->size);
    free(d);
    return eq;
}

static int exists(const char *path) {
    struct stat st;
    return !stat(path, &st);
}

static long fsize(const char *path) {
    struct stat st;
    return stat(path, &st) ? -1 : (long)st.st_size;
}

static int check_repo_files(const char *dir, const hub_repo *r, const char *what) {
    int ok = 1;
    for (int i = 0; i < r->n; i++) {
        char p[2048];
        snprintf(p, sizeof p, "%s/%s", dir, r->files[i].path);
        int want = r->files[i].path[0] != '.' && !strstr(r->files[i].path, ".png");
        if (want && !file_equals(p, &r->files[i])) {
            fprintf(stderr, "%s: %s missing or different\n", what, r->files[i].path);
            ok = 0;
        }
        if (!want && exists(p)) {
            fprintf(stderr, "%s: %s should have been skipped\n", what, r->files[i].path);
            ok = 0;
        }
        strcat(p, ".part");
        if (exists(p)) {
            fprintf(stderr, "%s: %s left behind\n", what, p);
            ok = 0;
        }
    }
    return ok;
}

static int run_cli(const char *args, const char *env, char *out, size_t out_n, char *errout, size_t err_n,
                   const char *tmp) {
    char cmd[4096], of[1024], ef[1024];
    snprintf(of, sizeof of, "%s/cli.out", tmp);
    snprintf(ef, sizeof ef, "%s/cli.err", tmp);
    snprintf(cmd, sizeof cmd, "env %s '%s' %s >'%s' 2>'%s' </dev/null", env, QTTS_BINARY, args, of, ef);
    int st = system(cmd);
    int rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    FILE *f = fopen(of, "r");
    size_t n = f ? fread(out, 1, out_n - 1, f) : 0;
    out[n] = 0;
    if (f) fclose(f);
    f = fopen(ef, "r");
    n = f ? fread(errout, 1, err_n - 1, f) : 0;
    errout[n] = 0;
    if (f) fclose(f);
    return rc;
}

int main(void) {
    char golden[1024];
    golden_path(golden, sizeof golden, "Qwen3-TTS-12Hz-0.6B-Base-tiny");
    static hub_repo repos[2];
    repos[0].id = "Qwen/Qwen3-TTS-12Hz-0.6B-Base";
    load_dir(&repos[0], golden, "");
    add_mem(&repos[0], ".gitattributes", "*.safetensors filter=lfs diff=lfs merge=lfs -text\n");
    add_mem(&repos[0], "README.md", "# tiny test model\n");
    add_mem(&repos[0], "assets/logo.png", "not really a png");
    add_mem(&repos[0], "extra/hello world.txt", "a name that needs URL escaping\n");
    TEST_CHECK(repos[0].n >= 10, "golden model folder not found or too small (%d files) at %s", repos[0].n, golden);

    /* A small repo for the failure cases: one 300 KB LFS file. */
    repos[1].id = "Test/Small";
    add_mem(&repos[1], "config.json", "{\"model_type\": \"qwen3_tts\"}\n");
    add_mem(&repos[1], "speech_tokenizer/config.json", "{}\n");
    size_t wn = 300000;
    unsigned char *w = malloc(wn);
    uint32_t x = 12345;
    for (size_t i = 0; i < wn; i++) x = x * 1664525u + 1013904223u, w[i] = (unsigned char)(x >> 24);
    add_file(&repos[1], "weights.safetensors", w, wn, 1);

    char hex[65];
    qtts_sha256_hex("abc", 3, hex);
    TEST_CHECK(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"), "sha256(abc) = %s",
               hex);

    server srv = {0};
    srv.repos = repos;
    srv.n_repos = 2;
    if (server_start(&srv)) {
        TEST_CHECK(0, "cannot start the fake hub on 127.0.0.1");
        return test_finish("test_download");
    }
    char hub[64];
    snprintf(hub, sizeof hub, "http://127.0.0.1:%d", srv.port);
    char tmp[] = "/tmp/qtts_dl_XXXXXX";
    TEST_CHECK(mkdtemp(tmp) != NULL, "mkdtemp");

    qtts_download_opts o;
    qtts_download_opts_default(&o);
    o.hub_url = hub;
    o.max_attempts = 1;
    o.stall_timeout_s = 10;
    o.connect_timeout_s = 5;
    qtts_download_stats st;
    qtts_err err = {0};
    char dir[1200], p[2048];

    /* 1. Full download (pagination, redirects, escaping, skipped files). */
    snprintf(dir, sizeof dir, "%s/full/nested", tmp);
    int rc = qtts_download_repo(repos[0].id, dir, &o, &st, &err);
    TEST_CHECK(rc == 0, "full download failed: %s", err.msg);
    TEST_CHECK(st.files_total == repos[0].n - 2 && st.files_downloaded == st.files_total && st.files_skipped == 0,
               "full download stats: %d total %d downloaded %d skipped (repo has %d, 2 skippable)", st.files_total,
               st.files_downloaded, st.files_skipped, repos[0].n);
    TEST_CHECK(check_repo_files(dir, &repos[0], "full download"), "full download: files differ");
    printf("  ok?  full download: %d files, %.1f MB\n", st.files_downloaded, st.bytes_downloaded / 1e6);

    o.progress = getenv("TEST_PROGRESS") != NULL;
    /* 2. Again: everything present, nothing transferred. */
    rc = qtts_download_repo(repos[0].id, dir, &o, &st, &err);
    TEST_CHECK(rc == 0 && st.files_skipped == st.files_total && st.bytes_downloaded == 0,
               "second run should skip all (rc %d, %d skipped of %d, %llu bytes)", rc, st.files_skipped,
               st.files_total, (unsigned long long)st.bytes_downloaded);

    /* 3. A transfer cut midway fails, keeps the .part, and the next run resumes with Range. */
    snprintf(dir, sizeof dir, "%s/resume", tmp);
    snprintf(srv.cut_path, sizeof srv.cut_path, "weights.safetensors");
    srv.cut_bytes = 100000;
    srv.cut_remaining = 1;
    rc = qtts_download_repo("Test/Small", dir, &o, &st, &err);
    snprintf(p, sizeof p, "%s/weights.safetensors", dir);
    char part[2100];
    snprintf(part, sizeof part, "%s.part", p);
    TEST_CHECK(rc == -1 && strstr(err.msg, "resume"), "cut transfer must fail with a resume hint: rc %d, %s", rc,
               err.msg);
    TEST_CHECK(!exists(p) && fsize(part) == 100000, "after a cut: final file absent, .part has %ld bytes (want 100000)",
               fsize(part));
    srv.last_range_start = -1;
    rc = qtts_download_repo("Test/Small", dir, &o, &st, &err);
    TEST_CHECK(rc == 0, "resume failed: %s", err.msg);
    TEST_CHECK(srv.last_range_start == 100000 && !strcmp(srv.last_range_path, "weights.safetensors"),
               "resume should ask Range: bytes=100000- (saw %ld for %s)", srv.last_range_start, srv.last_range_path);
    TEST_CHECK(check_repo_files(dir, &repos[1], "resumed download"), "resumed file differs");
    TEST_CHECK(st.bytes_downloaded == wn - 100000,
               "resume transferred %llu bytes (should be the rest only)", (unsigned long long)st.bytes_downloaded);

    /* 4. Same cut, but retries allowed: one call recovers by itself. */
    snprintf(dir, sizeof dir, "%s/retry", tmp);
    srv.cut_remaining = 1;
    o.max_attempts = 3;
    rc = qtts_download_repo("Test/Small", dir, &o, &st, &err);
    TEST_CHECK(rc == 0 && check_repo_files(dir, &repos[1], "retried download"), "retry within one call: %s", err.msg);
    o.max_attempts = 1;

    /* 5. A stale .part and a server that ignores Range: restart from zero. */
    snprintf(dir, sizeof dir, "%s/norange", tmp);
    snprintf(p, sizeof p, "%s/weights.safetensors.part", dir);
    mkdir(dir, 0755);
    FILE *f = fopen(p, "wb");
    fputs("stale bytes that are not the file", f);
    fclose(f);
    srv.ignore_range = 1;
    rc = qtts_download_repo("Test/Small", dir, &o, &st, &err);
    srv.ignore_range = 0;
    TEST_CHECK(rc == 0 && check_repo_files(dir, &repos[1], "range ignored"), "server ignoring Range: %s", err.msg);

    /* 6. Checksum mismatch (LFS SHA-256 and git SHA-1): not installed, .part removed. */
    const char *bad[] = {"weights.safetensors", "speech_tokenizer/config.json"};
    const char *kind[] = {"SHA-256", "SHA-1"};
    for (int k = 0; k < 2; k++) {
        snprintf(dir, sizeof dir, "%s/corrupt%d", tmp, k);
        snprintf(srv.corrupt_path, sizeof srv.corrupt_path, "%s", bad[k]);
        rc = qtts_download_repo("Test/Small", dir, &o, &st, &err);
        snprintf(p, sizeof p, "%s/%s", dir, bad[k]);
        snprintf(part, sizeof part, "%s.part", p);
        TEST_CHECK(rc == -1 && strstr(err.msg, kind[k]) && strstr(err.msg, "mismatch"),
                   "corrupt %s must be rejected with a %s mismatch: %s", bad[k], kind[k], err.msg);
        TEST_CHECK(!exists(p) && !exists(part), "corrupt %s must not be installed nor kept", bad[k]);
        srv.corrupt_path[0] = 0;
    }

    /* 7. Unsafe path in the listing, unknown repository. */
    snprintf(dir, sizeof dir, "%s/evil/inner", tmp);
    srv.evil = 1;
    rc = qtts_download_repo("Test/Small", dir, &o, &st, &err);
    srv.evil = 0;
    snprintf(p, sizeof p, "%s/evil/escaped.txt", tmp);
    TEST_CHECK(rc == -1 && strstr(err.msg, "unsafe path") && !exists(p), "unsafe path must be refused: %s", err.msg);
    srv.evil = 2;
    rc = qtts_download_repo("Test/Small", dir, &o, &st, &err);
    srv.evil = 0;
    TEST_CHECK(rc == -1 && strstr(err.msg, "'huge.bin' has an implausible size"), "infinite size must be refused: %s",
               err.msg);
    rc = qtts_download_repo("Test/Nope", dir, &o, &st, &err);
    TEST_CHECK(rc == -1 && strstr(err.msg, "not found"), "unknown repo: %s", err.msg);

    /* 8. Offline: a port nobody listens on. */
    int s2 = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(s2, (struct sockaddr *)&a, sizeof a);
    socklen_t al = sizeof a;
    getsockname(s2, (struct sockaddr *)&a, &al);
    close(s2);
    char dead[64];
    snprintf(dead, sizeof dead, "http://127.0.0.1:%d", ntohs(a.sin_port));
    o.hub_url = dead;
    rc = qtts_download_repo("Test/Small", dir, &o, &st, &err);
    TEST_CHECK(rc == -1 && strstr(err.msg, "cannot reach"), "offline must say so: %s", err.msg);
    o.hub_url = hub;

    /* 9. The CLI: offline exit 1; a real run into $QTTS_HOME; usage errors exit 2. */
    char out[4096], eout[4096], env[2048];
    snprintf(env, sizeof env, "QTTS_HUB_URL=%s QTTS_HOME=%s/home", dead, tmp);
    rc = run_cli("download 0.6b-base", env, out, sizeof out, eout, sizeof eout, tmp);
    TEST_CHECK(rc == 1 && strstr(eout, "cannot reach") && !strchr(strchr(eout, '\n') ? strchr(eout, '\n') + 1 : "", '\n'),
               "CLI offline: exit %d, stderr [%s]", rc, eout);
    snprintf(env, sizeof env, "QTTS_HUB_URL=%s QTTS_HOME=%s/home", hub, tmp);
    rc = run_cli("download 0.6b-base", env, out, sizeof out, eout, sizeof eout, tmp);
    char want_dir[1200];
    snprintf(want_dir, sizeof want_dir, "%s/home/Qwen3-TTS-12Hz-0.6B-Base\n", tmp);
    TEST_CHECK(rc == 0 && !strcmp(out, want_dir), "CLI download: exit %d, stdout [%s], stderr [%s]", rc, out, eout);
    want_dir[strlen(want_dir) - 1] = 0;
    TEST_CHECK(check_repo_files(want_dir, &repos[0], "CLI download"), "CLI download files differ");
    TEST_CHECK(run_cli("download", env, out, sizeof out, eout, sizeof eout, tmp) == 2, "no name: exit 2");
    TEST_CHECK(run_cli("download 2b-base", env, out, sizeof out, eout, sizeof eout, tmp) == 2 && strstr(eout, "2b-base"),
               "unknown name: exit 2, stderr [%s]", eout);
    TEST_CHECK(run_cli("download 0.6b-base --bogus", env, out, sizeof out, eout, sizeof eout, tmp) == 2,
               "unknown option: exit 2");

    /* 10. Resolver: existing path wins, then names in the cache. */
    char home[1200], buf[2048];
    snprintf(home, sizeof home, "%s/home", tmp);
    setenv("QTTS_HOME", home, 1);
    const char *r1 = qtts_resolve_model("0.6b-base", buf, sizeof buf);
    TEST_CHECK(r1 && !strcmp(r1, want_dir), "resolve 0.6b-base -> %s", r1 ? r1 : "(null)");
    r1 = qtts_resolve_model("Qwen/Qwen3-TTS-12Hz-0.6B-Base", buf, sizeof buf);
    TEST_CHECK(r1 && !strcmp(r1, want_dir), "resolve repo id -> %s", r1 ? r1 : "(null)");
    r1 = qtts_resolve_model("Qwen3-TTS-12Hz-0.6B-Base", buf, sizeof buf);
    TEST_CHECK(r1 && !strcmp(r1, want_dir), "resolve repo name -> %s", r1 ? r1 : "(null)");
    TEST_CHECK(!qtts_resolve_model("1.7b-base", buf, sizeof buf), "a name not downloaded must not resolve");
    TEST_CHECK(!qtts_resolve_model("/no/such/dir", buf, sizeof buf), "a missing path must not resolve");
    r1 = qtts_resolve_model(golden, buf, sizeof buf);
    TEST_CHECK(r1 && !strcmp(r1, golden), "an existing path resolves to itself");
    unsetenv("QTTS_HOME");

    server_stop(&srv);
    printf("  fake hub served %d requests\n", srv.requests);
    if (rm_rf(tmp)) fprintf(stderr, "cleanup of %s failed\n", tmp);
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < repos[i].n; k++) free(repos[i].files[k].data);
    return test_finish("test_download");
}
