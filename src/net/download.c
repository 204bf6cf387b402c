/* HuggingFace hub download with resume and verification (see download.h). */
#include "net/download.h"
#include "core/clock.h"
#include "qtts.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LIST_MAX_BYTES (64u << 20)

void qtts_download_opts_default(qtts_download_opts *o) {
    memset(o, 0, sizeof *o);
    o->max_attempts = 3;
    o->connect_timeout_s = 30;
    o->stall_timeout_s = 60;
}

/* ---- hashing ---- */

static void to_hex(const unsigned char *d, unsigned n, char *hex) {
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < n; i++) hex[2 * i] = digits[d[i] >> 4], hex[2 * i + 1] = digits[d[i] & 15];
    hex[2 * n] = 0;
}

void qtts_sha256_hex(const void *data, size_t n, char hex[65]) {
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned dn = 0;
    if (!EVP_Digest(data, n, d, &dn, EVP_sha256(), NULL) || dn != 32) {
        hex[0] = 0;
        return;
    }
    to_hex(d, dn, hex);
}

/* Feeds the first `limit` bytes of a file into md. */
static int hash_file_prefix(EVP_MD_CTX *md, const char *path, uint64_t limit, qtts_err *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return qtts_fail(err, "%s: cannot read: %s", path, strerror(errno));
    unsigned char buf[1 << 16];
    uint64_t done = 0;
    while (done < limit) {
        size_t want = limit - done < sizeof buf ? (size_t)(limit - done) : sizeof buf;
        size_t got = fread(buf, 1, want, f);
        if (!got) break;
        if (!EVP_DigestUpdate(md, buf, got)) {
            fclose(f);
            return qtts_fail(err, "%s: hashing failed", path);
        }
        done += got;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad || done != limit) return qtts_fail(err, "%s: read error while verifying", path);
    return 0;
}

/* ---- small utilities ---- */

static int mkdir_p(const char *path, qtts_err *err) {
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp) return qtts_fail(err, "path too long: %s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0755) && errno != EEXIST) return qtts_fail(err, "%s: cannot create: %s", tmp, strerror(errno));
        *p = '/';
    }
    if (mkdir(tmp, 0755) && errno != EEXIST) return qtts_fail(err, "%s: cannot create: %s", tmp, strerror(errno));
    struct stat st;
    if (stat(tmp, &st) || !S_ISDIR(st.st_mode)) return qtts_fail(err, "%s: not a directory", tmp);
    return 0;
}

/* Hub paths become local paths: relative, no empty/./.. components. */
static int safe_rel_path(const char *p) {
    if (!*p || *p == '/' || strlen(p) > 1024) return 0;
    for (const char *c = p; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == '\\' || *c == 0x7f) return 0;
    const char *s = p;
    while (*s) {
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.')) return 0;
        if (!e) break;
        s = e + 1;
    }
    return p[strlen(p) - 1] != '/';
}

/* Files the engine never needs: dotfiles and model-card media. */
static int wanted(const char *path) {
    if (path[0] == '.' || strstr(path, "/.")) return 0;
    static const char *const skip[] = {".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".mp4",
                                       ".mp3", ".wav", ".flac", ".pdf", ".mov"};
    const char *dot = strrchr(path, '.');
    if (dot)
        for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
            if (!strcasecmp(dot, skip[i])) return 0;
    return 1;
}

/* ---- one HTTP exchange ---- */

typedef struct {
    /* body sink: a file (download) or memory (listing / error text) */
    FILE *f;
    EVP_MD_CTX *md;
    uint64_t have, expected;
    CURL *curl;
    int checked;    /* response code looked at (first body bytes) */
    int git_sha1;   /* re-seed the blob header when restarting */
    int bad_range, too_long, disk_error;
    char *mem;
    size_t mem_n, mem_cap, mem_limit;
    int too_big;
    long code;
    int64_t range_start; /* from Content-Range of the final response, -1 if none */
    char next_link[2048];
    /* progress */
    int progress;
    const char *label;
    int idx, n_files;
    uint64_t base_done, total_all;
    uint64_t received;
    double t0, last_draw;
} xfer;

static int mem_append(xfer *x, const char *p, size_t n) {
    if (x->mem_n + n + 1 > x->mem_limit) {
        x->too_big = 1;
        n = x->mem_limit > x->mem_n + 1 ? x->mem_limit - x->mem_n - 1 : 0;
        if (!n) return 0;
    }
    if (x->mem_n + n + 1 > x->mem_cap) {
        size_t nc = (x->mem_n + n + 1) * 2;
        if (nc > x->mem_limit) nc = x->mem_limit;
        char *m = realloc(x->mem, nc);
        if (!m) return -1;
        x->mem = m, x->mem_cap = nc;
    }
    memcpy(x->mem + x->mem_n, p, n);
    x->mem_n += n;
    x->mem[x->mem_n] = 0;
    return 0;
}

static int seed_git_header(EVP_MD_CTX *md, uint64_t size) {
    char hdr[64];
    int n = snprintf(hdr, sizeof hdr, "blob %llu", (unsigned long long)size);
    return EVP_DigestUpdate(md, hdr, (size_t)n + 1) ? 0 : -1; /* the NUL is part of the header */
}

static size_t on_header(char *buf, size_t size, size_t nitems, void *u) {
    xfer *x = u;
    size_t n = size * nitems;
    if (n >= 5 && !strncmp(buf, "HTTP/", 5)) { /* a new response (e.g. after a redirect) */
        x->range_start = -1;
        x->next_link[0] = 0;
    } else if (n > 14 && !strncasecmp(buf, "content-range:", 14)) {
        const char *p = buf + 14;
        while (p < buf + n && (*p == ' ' || *p == '\t')) p++;
        /* libcurl's header line is not NUL-terminated: no sscanf on it (fuzz_hub_list) */
        if (p + 6 < buf + n && !strncasecmp(p, "bytes ", 6)) {
            const char *q = p + 6, *end = buf + n;
            int64_t a = 0;
            int digits = 0;
            for (; q < end && *q >= '0' && *q <= '9' && a <= (INT64_MAX - 9) / 10; q++, digits++)
                a = a * 10 + (*q - '0');
            if (digits && q < end && *q == '-') x->range_start = a;
        }
    } else if (n > 5 && !strncasecmp(buf, "link:", 5)) {
        char line[2048];
        size_t m = n < sizeof line - 1 ? n : sizeof line - 1;
        memcpy(line, buf, m);
        line[m] = 0;
        char *rel = strstr(line, "rel=\"next\"");
        if (rel) {
            *rel = 0;
            char *lt = strrchr(line, '<'), *gt = lt ? strchr(lt, '>') : NULL;
            if (lt && gt && (size_t)(gt - lt - 1) < sizeof x->next_link) {
                memcpy(x->next_link, lt + 1, (size_t)(gt - lt - 1));
                x->next_link[gt - lt - 1] = 0;
            }
        }
    }
    return n;
}

static void draw_progress(xfer *x, int final) {
    double t = qtts_now_s();
    if (!final && t - x->last_draw < 0.1) return;
    x->last_draw = t;
    double el = t - x->t0, rate = el > 0 ? x->received / el : 0;
    uint64_t done = x->base_done + x->have;
    double frac = x->total_all ? (double)done / (double)x->total_all : 1.0;
    if (frac > 1) frac = 1;
    char bar[26];
    int fill = (int)(frac * 24 + 0.5);
    for (int i = 0; i < 24; i++) bar[i] = i < fill ? '#' : '.';
    bar[24] = 0;
    char eta[32] = "--:--";
    if (rate > 0 && x->total_all > done) {
        long s = (long)((x->total_all - done) / rate);
        snprintf(eta, sizeof eta, "%ld:%02ld", s / 60, s % 60);
    }
    fprintf(stderr, "\r\033[K[%d/%d] %-28.28s [%s] %3.0f%% %8.1f/%.1f MB %6.1f MB/s ETA %s", x->idx, x->n_files,
            x->label, bar, frac * 100, done / 1e6, x->total_all / 1e6, rate / 1e6, eta);
    if (final) fputc('\n', stderr);
    fflush(stderr);
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *u) {
    xfer *x = u;
    size_t n = size * nmemb;
    return mem_append(x, p, n) ? 0 : n;
}

/* Body callback for downloads: checks the response before the first write. */
static size_t on_file_body(char *p, size_t size, size_t nmemb, void *u) {
    xfer *x = u;
    size_t n = size * nmemb;
    if (!x->checked) {
        x->checked = 1;
        curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &x->code);
        if (x->code == 200 && x->have > 0) { /* the server ignored our Range: start over */
            if (fflush(x->f) || ftruncate(fileno(x->f), 0) || fseeko(x->f, 0, SEEK_SET)) return 0;
            if (x->md && !EVP_DigestInit_ex(x->md, EVP_MD_CTX_get0_md(x->md), NULL)) return 0;
            if (x->md && x->git_sha1 && seed_git_header(x->md, x->expected)) return 0;
            x->have = 0;
        } else if (x->code == 206 && x->range_start != (int64_t)x->have) {
            x->bad_range = 1;
            return 0;
        }
    }
    if (x->code < 200 || x->code >= 300) { /* error text: keep a little of it */
        mem_append(x, p, n);
        return n;
    }
    if (x->have + n > x->expected) {
        x->too_long = 1;
        return 0;
    }
    if (fwrite(p, 1, n, x->f) != n) {
        x->disk_error = errno ? errno : EIO;
        return 0;
    }
    if (x->md && !EVP_DigestUpdate(x->md, p, n)) return 0;
    x->have += n;
    x->received += n;
    if (x->progress) draw_progress(x, 0);
    return n;
}

typedef struct {
    CURL *curl;
    char errbuf[CURL_ERROR_SIZE];
    const char *hub;
    char repo[256], rev[128];
    const qtts_download_opts *o;
} session;

/* Sets up and runs one GET. The response code lands in x->code. */
static CURLcode do_get(session *s, const char *url, xfer *x, int to_file, const char *range) {
    CURL *c = s->curl;
    s->errbuf[0] = 0;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(c, CURLOPT_RANGE, range);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
    x->range_start = -1;
    x->code = 0;
    x->checked = 0;
    x->curl = c;
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, to_file ? on_file_body : on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
    CURLcode rc = curl_easy_perform(c);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    x->code = code;
    return rc;
}

static int curl_fail(session *s, CURLcode rc, const char *what, qtts_err *err) {
    const char *detail = s->errbuf[0] ? s->errbuf : curl_easy_strerror(rc);
    if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_COULDNT_RESOLVE_PROXY)
        return qtts_fail(err, "cannot reach %s (%s): offline? (QTTS_HUB_URL sets another hub address)", s->hub,
                         detail);
    return qtts_fail(err, "%s: %s", what, detail);
}

static int http_fail(session *s, long code, const char *what, const xfer *x, qtts_err *err) {
    if (code == 401 || code == 403)
        return qtts_fail(err, "%s: access denied (HTTP %ld): gated or private repository; accept its terms on the "
                              "hub and set HF_TOKEN", what, code);
    if (code == 404)
        return qtts_fail(err, "%s: not found on %s (HTTP 404): check the model name and revision '%s'", what, s->hub,
                         s->rev);
    char snippet[160] = "";
    if (x && x->mem_n) {
        size_t m = 0;
        for (size_t i = 0; i < x->mem_n && m + 1 < sizeof snippet; i++)
            snippet[m++] = (x->mem[i] >= 0x20 && x->mem[i] < 0x7f) ? x->mem[i] : ' ';
        snippet[m] = 0;
    }
    return qtts_fail(err, "%s: the hub answered HTTP %ld%s%s", what, code, snippet[0] ? ": " : "", snippet);
}

/* ---- listing ---- */

typedef struct {
    char *path;
    uint64_t size;
    char sha256[65]; /* LFS */
    char sha1[41];   /* git blob id */
} hub_file;

static int size_ok(double v) { return v >= 0 && v <= 9007199254740992.0; /* 2^53 */ }

static int add_entries(const cJSON *arr, hub_file **files, int *n, int *cap, qtts_err *err) {
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(it, "type");
        const cJSON *path = cJSON_GetObjectItemCaseSensitive(it, "path");
        const cJSON *size = cJSON_GetObjectItemCaseSensitive(it, "size");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "file")) continue;
        if (!cJSON_IsString(path) || !cJSON_IsNumber(size) || size->valuedouble < 0)
            return qtts_fail(err, "hub file list: an entry lacks a path or size");
        /* sizes are whole bytes a double holds exactly; 1e400 (inf) or 1e30 would not convert */
        if (!size_ok(size->valuedouble))
            return qtts_fail(err, "hub file list: '%.200s' has an implausible size", path->valuestring);
        if (!safe_rel_path(path->valuestring))
            return qtts_fail(err, "hub file list: refusing unsafe path '%.200s'", path->valuestring);
        if (!wanted(path->valuestring)) continue;
        if (*n == *cap) {
            int nc = *cap ? *cap * 2 : 32;
            hub_file *p = realloc(*files, (size_t)nc * sizeof *p);
            if (!p) return qtts_fail(err, "out of memory");
            *files = p, *cap = nc;
        }
        hub_file *f = &(*files)[*n];
        memset(f, 0, sizeof *f);
        f->size = (uint64_t)size->valuedouble;
        const cJSON *lfs = cJSON_GetObjectItemCaseSensitive(it, "lfs");
        const cJSON *lfs_oid = lfs ? cJSON_GetObjectItemCaseSensitive(lfs, "oid") : NULL;
        const cJSON *lfs_size = lfs ? cJSON_GetObjectItemCaseSensitive(lfs, "size") : NULL;
        const cJSON *oid = cJSON_GetObjectItemCaseSensitive(it, "oid");
        if (cJSON_IsString(lfs_oid) && strlen(lfs_oid->valuestring) == 64) {
            snprintf(f->sha256, sizeof f->sha256, "%s", lfs_oid->valuestring);
            for (char *c = f->sha256; *c; c++) *c = (char)(*c >= 'A' && *c <= 'F' ? *c + 32 : *c);
            if (cJSON_IsNumber(lfs_size) && size_ok(lfs_size->valuedouble)) f->size = (uint64_t)lfs_size->valuedouble;
        } else if (cJSON_IsString(oid) && strlen(oid->valuestring) == 40) {
            snprintf(f->sha1, sizeof f->sha1, "%s", oid->valuestring);
        }
        f->path = strdup(path->valuestring);
        if (!f->path) return qtts_fail(err, "out of memory");
        (*n)++;
    }
    return 0;
}

static int list_files(session *s, hub_file **files, int *n, qtts_err *err) {
    char url[4096];
    char *rev = curl_easy_escape(s->curl, s->rev, 0);
    if (!rev) return qtts_fail(err, "out of memory");
    snprintf(url, sizeof url, "%s/api/models/%s/tree/%s?recursive=true", s->hub, s->repo, rev);
    curl_free(rev);
    int cap = 0, pages = 0;
    *files = NULL;
    *n = 0;
    for (;;) {
        xfer x = {0};
        x.mem_limit = LIST_MAX_BYTES;
        CURLcode rc = do_get(s, url, &x, 0, NULL);
        char what[512];
        snprintf(what, sizeof what, "listing %s", s->repo);
        int r = 0;
        if (rc != CURLE_OK) r = curl_fail(s, rc, what, err);
        else if (x.code != 200) r = http_fail(s, x.code, what, &x, err);
        else if (x.too_big) r = qtts_fail(err, "%s: file list larger than %u MiB", what, LIST_MAX_BYTES >> 20);
        cJSON *root = NULL;
        if (!r) {
            root = x.mem ? cJSON_Parse(x.mem) : NULL;
            if (!cJSON_IsArray(root)) r = qtts_fail(err, "%s: the hub's answer is not a JSON file list", what);
            else r = add_entries(root, files, n, &cap, err);
        }
        cJSON_Delete(root);
        free(x.mem);
        if (r) return -1;
        if (!x.next_link[0]) break;
        if (++pages > 1000) return qtts_fail(err, "%s: too many pages", what);
        snprintf(url, sizeof url, "%s", x.next_link);
    }
    return 0;
}

/* ---- one file ---- */

static int transient(CURLcode rc, long code) {
    if (rc == CURLE_OK) return code >= 500 || code == 429;
    return rc == CURLE_PARTIAL_FILE || rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR ||
           rc == CURLE_OPERATION_TIMEDOUT || rc == CURLE_GOT_NOTHING || rc == CURLE_HTTP2 ||
           rc == CURLE_HTTP2_STREAM || rc == CURLE_WRITE_ERROR;
}

static int fetch_file(session *s, const hub_file *hf, const char *dir, xfer *prog, qtts_download_stats *st,
                      qtts_err *err) {
    char dest[4096], part[4200];
    if (snprintf(dest, sizeof dest, "%s/%s", dir, hf->path) >= (int)sizeof dest)
        return qtts_fail(err, "%s: path too long", hf->path);
    snprintf(part, sizeof part, "%s.part", dest);
    struct stat sb;
    if (!stat(dest, &sb) && S_ISREG(sb.st_mode) && (uint64_t)sb.st_size == hf->size) {
        st->files_skipped++;
        prog->base_done += hf->size;
        return 0;
    }
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", dest);
    char *slash = strrchr(parent, '/');
    if (slash) {
        *slash = 0;
        if (mkdir_p(parent, err)) return -1;
    }
    /* URL: {hub}/{repo}/resolve/{rev}/{escaped path segments} */
    char url[8192];
    int un = snprintf(url, sizeof url, "%s/%s/resolve/", s->hub, s->repo);
    char *rev = curl_easy_escape(s->curl, s->rev, 0);
    if (!rev) return qtts_fail(err, "out of memory");
    un += snprintf(url + un, sizeof url - (size_t)un, "%s", rev);
    curl_free(rev);
    for (const char *p = hf->path; *p && un < (int)sizeof url;) {
        const char *e = strchr(p, '/');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char *seg = curl_easy_escape(s->curl, p, (int)len);
        if (!seg) return qtts_fail(err, "out of memory");
        un += snprintf(url + un, sizeof url - (size_t)un, "/%s", seg);
        curl_free(seg);
        p += len + (e ? 1 : 0);
    }
    if (un >= (int)sizeof url) return qtts_fail(err, "%s: URL too long", hf->path);

    const EVP_MD *alg = hf->sha256[0] ? EVP_sha256() : hf->sha1[0] ? EVP_sha1() : NULL;
    const char *want = hf->sha256[0] ? hf->sha256 : hf->sha1;
    int attempts = s->o->max_attempts > 0 ? s->o->max_attempts : 3;
    for (int attempt = 1;; attempt++) {
        uint64_t have = 0;
        if (!stat(part, &sb)) {
            have = (uint64_t)sb.st_size;
            if (have > hf->size) { /* not ours to keep */
                if (truncate(part, 0)) return qtts_fail(err, "%s: cannot reset: %s", part, strerror(errno));
                have = 0;
            }
        }
        EVP_MD_CTX *md = alg ? EVP_MD_CTX_new() : NULL;
        if (alg && (!md || !EVP_DigestInit_ex(md, alg, NULL) || (hf->sha1[0] && !hf->sha256[0] &&
                                                                  seed_git_header(md, hf->size)))) {
            EVP_MD_CTX_free(md);
            return qtts_fail(err, "hash unavailable");
        }
        if (md && have && hash_file_prefix(md, part, have, err)) {
            EVP_MD_CTX_free(md);
            return -1;
        }
        CURLcode rc = CURLE_OK;
        long code = 206;
        xfer *x = prog;
        x->md = md;
        x->have = have;
        x->expected = hf->size;
        x->git_sha1 = hf->sha1[0] && !hf->sha256[0];
        x->bad_range = x->too_long = x->disk_error = 0;
        x->mem = NULL, x->mem_n = x->mem_cap = 0, x->mem_limit = 4096, x->too_big = 0;
        x->label = hf->path;
        if (have < hf->size) {
            x->f = fopen(part, have ? "ab" : "wb");
            if (!x->f) {
                EVP_MD_CTX_free(md);
                return qtts_fail(err, "%s: cannot write: %s", part, strerror(errno));
            }
            char range[64];
            snprintf(range, sizeof range, "%llu-", (unsigned long long)have);
            errno = 0;
            rc = do_get(s, url, x, 1, have ? range : NULL);
            code = x->code;
            if (fclose(x->f) && !x->disk_error) x->disk_error = errno ? errno : EIO;
            x->f = NULL;
        }
        if (x->progress) draw_progress(x, 0);
        const char *what = hf->path;
        int done = rc == CURLE_OK && !x->disk_error && (code == 200 || code == 206) && x->have == hf->size;
        if (!done) {
            EVP_MD_CTX_free(md);
            x->md = NULL;
            int retry = !x->disk_error && !x->too_long && attempt < attempts &&
                        (transient(rc, code) || x->bad_range ||
                         (rc == CURLE_OK && (code == 200 || code == 206) && x->have < hf->size));
            free(x->mem);
            x->mem = NULL;
            if (retry) {
                sleep(attempt > 1 ? 2 : 1);
                continue;
            }
            int r;
            if (x->disk_error)
                r = qtts_fail(err, "%s: writing %s failed: %s", what, part, strerror(x->disk_error));
            else if (x->too_long)
                r = qtts_fail(err, "%s: the server sent more than the listed %llu bytes", what,
                              (unsigned long long)hf->size);
            else if (x->bad_range)
                r = qtts_fail(err, "%s: the server answered a different byte range than asked", what);
            else if (code >= 300 || (code < 200 && rc == CURLE_OK))
                r = http_fail(s, code, what, x, err);
            else if (rc != CURLE_OK)
                r = curl_fail(s, rc, what, err);
            else
                r = qtts_fail(err, "%s: transfer ended at %llu of %llu bytes", what, (unsigned long long)x->have,
                              (unsigned long long)hf->size);
            if (err && x->have && x->have < hf->size && !x->too_long) {
                char first[sizeof err->msg];
                snprintf(first, sizeof first, "%s", err->msg);
                qtts_fail(err, "%s (stopped at %llu of %llu bytes; the partial file is kept: run again to resume)",
                          first, (unsigned long long)x->have, (unsigned long long)hf->size);
            }
            return r;
        }
        free(x->mem);
        x->mem = NULL;
        if (md) {
            unsigned char d[EVP_MAX_MD_SIZE];
            unsigned dn = 0;
            char got[129];
            int ok = EVP_DigestFinal_ex(md, d, &dn);
            EVP_MD_CTX_free(md);
            x->md = NULL;
            if (!ok) return qtts_fail(err, "%s: hashing failed", what);
            to_hex(d, dn, got);
            if (strcmp(got, want)) {
                unlink(part);
                return qtts_fail(err, "%s: %s mismatch (got %.16s..., hub lists %.16s...): the download was removed; "
                                      "run again", what, hf->sha256[0] ? "SHA-256" : "git SHA-1", got, want);
            }
        }
        if (rename(part, dest)) return qtts_fail(err, "%s: cannot move into place: %s", dest, strerror(errno));
        st->files_downloaded++;
        x->base_done += hf->size;
        x->have = 0;
        return 0;
    }
}

int qtts_download_repo(const char *repo_id, const char *dir, const qtts_download_opts *opts,
                       qtts_download_stats *stats, qtts_err *err) {
    qtts_download_opts def;
    qtts_download_opts_default(&def);
    if (!opts) opts = &def;
    qtts_download_stats local;
    if (!stats) stats = &local;
    memset(stats, 0, sizeof *stats);
    if (!repo_id || !strchr(repo_id, '/')) return qtts_fail(err, "bad repository id '%s'", repo_id ? repo_id : "");
    if (!dir || !*dir) return qtts_fail(err, "no destination folder");

    session s;
    memset(&s, 0, sizeof s);
    s.o = opts;
    const char *hub = opts->hub_url;
    if (!hub || !*hub) hub = getenv("QTTS_HUB_URL");
    if (!hub || !*hub) hub = "https://huggingface.co";
    char hubbuf[1024];
    if (snprintf(hubbuf, sizeof hubbuf, "%s", hub) >= (int)sizeof hubbuf) return qtts_fail(err, "hub URL too long");
    for (size_t l = strlen(hubbuf); l && hubbuf[l - 1] == '/'; l--) hubbuf[l - 1] = 0;
    s.hub = hubbuf;
    snprintf(s.repo, sizeof s.repo, "%s", repo_id);
    snprintf(s.rev, sizeof s.rev, "%s", opts->revision && *opts->revision ? opts->revision : "main");
    const char *token = opts->token && *opts->token ? opts->token : getenv("HF_TOKEN");

    if (curl_global_init(CURL_GLOBAL_DEFAULT)) return qtts_fail(err, "libcurl failed to initialize");
    s.curl = curl_easy_init();
    if (!s.curl) {
        curl_global_cleanup();
        return qtts_fail(err, "libcurl failed to initialize");
    }
    CURL *c = s.curl;
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, s.errbuf);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_USERAGENT, "qtts/" QTTS_VERSION);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, opts->connect_timeout_s > 0 ? opts->connect_timeout_s : 30L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, opts->stall_timeout_s > 0 ? opts->stall_timeout_s : 60L);
    if (token && *token) {
        /* Bearer auth is not forwarded to other hosts on redirects (the CDN). */
        curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
        curl_easy_setopt(c, CURLOPT_XOAUTH2_BEARER, token);
    }

    hub_file *files = NULL;
    int n = 0, rc = list_files(&s, &files, &n, err);
    if (!rc && n == 0) rc = qtts_fail(err, "%s lists no model files", repo_id);
    if (!rc) rc = mkdir_p(dir, err);
    xfer prog;
    memset(&prog, 0, sizeof prog);
    prog.progress = opts->progress;
    prog.n_files = n;
    prog.t0 = qtts_now_s();
    for (int i = 0; i < n; i++) prog.total_all += files[i].size;
    stats->files_total = n;
    stats->bytes_total = prog.total_all;
    for (int i = 0; i < n && !rc; i++) {
        prog.idx = i + 1;
        rc = fetch_file(&s, &files[i], dir, &prog, stats, err);
    }
    stats->bytes_downloaded = prog.received;
    if (prog.progress && n) {
        prog.label = rc ? "failed" : "done";
        if (!rc) prog.have = 0; /* base_done already counts every file */
        draw_progress(&prog, 1);
    }
    for (int i = 0; i < n; i++) free(files[i].path);
    free(files);
    curl_easy_cleanup(c);
    curl_global_cleanup();
    return rc;
}
