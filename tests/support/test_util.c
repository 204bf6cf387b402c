#include "test_util.h"

#include <dirent.h>
#include <ftw.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/file.h"

int pcm_collect(void *user, const float *samples, size_t n) {
    pcm_buf *b = user;
    if (b->n + n > b->cap) {
        size_t cap = (b->n + n) * 2;
        float *p = realloc(b->d, cap * sizeof *p);
        if (!p) return 1;
        b->d = p;
        b->cap = cap;
    }
    memcpy(b->d + b->n, samples, n * sizeof *samples);
    b->n += n;
    return 0;
}

int count_threads(void) {
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

int rm_rf(const char *path) {
    if (access(path, F_OK) != 0) return 0;
    return nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int write_text_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t n = strlen(text);
    int ok = fwrite(text, 1, n, f) == n;
    return fclose(f) == 0 && ok ? 0 : -1;
}

int read_bytes(const char *path, unsigned char **buf, size_t *n) {
    qtts_err err = {0};
    char *b = NULL;
    int rc = qtts_read_file(path, (size_t)1 << 30, &b, n, &err);
    *buf = (unsigned char *)b;
    return rc;
}

float *read_wav(const char *path, size_t *n) {
    SF_INFO info = {0};
    SNDFILE *f = sf_open(path, SFM_READ, &info);
    *n = 0;
    if (!f) return NULL;
    float *buf = malloc((size_t)info.frames * sizeof *buf + 4);
    if (buf) *n = (size_t)sf_readf_float(f, buf, info.frames);
    sf_close(f);
    return buf;
}

int test_call_arg(const char *call, const char *key, char *out, size_t n) {
    char pat[64];
    snprintf(pat, sizeof pat, " %s=", key);
    const char *p = strstr(call, pat);
    if (!p) {
        snprintf(pat, sizeof pat, "(%s=", key);
        p = strstr(call, pat);
    }
    if (!p) return -1;
    p += strlen(pat);
    size_t o = 0;
    if (*p == '\'' || *p == '"') {
        char q = *p++;
        while (*p && *p != q && o + 1 < n) out[o++] = *p++;
    } else {
        while (*p && *p != ',' && *p != ')' && o + 1 < n) out[o++] = *p++;
    }
    out[o] = 0;
    return 0;
}

void test_unescape(char *s) {
    char *w = s;
    for (char *r = s; *r; r++) {
        if (r[0] == '\\' && r[1] == 'n') *w++ = '\n', r++;
        else if (r[0] == '\\' && r[1] == 't') *w++ = '\t', r++;
        else *w++ = *r;
    }
    *w = 0;
}

int write_safetensors_f32(const char *path, int n, const char *const *names, const int *ndim,
                          const int64_t (*shapes)[4], const float *const *data) {
    size_t cap = 256 + (size_t)n * 512, o = 0, off = 0;
    char *h = malloc(cap);
    if (!h) return -1;
    o += (size_t)snprintf(h + o, cap - o, "{");
    for (int i = 0; i < n; i++) {
        int64_t numel = 1;
        o += (size_t)snprintf(h + o, cap - o, "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[", i ? "," : "", names[i]);
        for (int d = 0; d < ndim[i]; d++) {
            o += (size_t)snprintf(h + o, cap - o, "%s%lld", d ? "," : "", (long long)shapes[i][d]);
            numel *= shapes[i][d];
        }
        o += (size_t)snprintf(h + o, cap - o, "],\"data_offsets\":[%zu,%zu]}", off, off + (size_t)numel * 4);
        off += (size_t)numel * 4;
    }
    o += (size_t)snprintf(h + o, cap - o, "}");
    while (o % 8) h[o++] = ' ';
    FILE *f = fopen(path, "wb");
    int rc = f ? 0 : -1;
    uint64_t hl = o;
    if (f) rc |= fwrite(&hl, 8, 1, f) != 1 || fwrite(h, 1, o, f) != o;
    for (int i = 0; f && i < n; i++) {
        int64_t numel = 1;
        for (int d = 0; d < ndim[i]; d++) numel *= shapes[i][d];
        rc |= fwrite(data[i], 4, (size_t)numel, f) != (size_t)numel;
    }
    if (f) rc |= fclose(f);
    free(h);
    return rc;
}

int test_run_capture(const char *cmd, char *out, size_t size) {
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, size - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int test_run_bench(const char *args, char *out, size_t size) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s bench %s 2>/dev/null", QTTS_BINARY, args);
    return test_run_capture(cmd, out, size);
}
