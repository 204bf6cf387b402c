#include "test_util.h"

#include <dirent.h>
#include <ftw.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
