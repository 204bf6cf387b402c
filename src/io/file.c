#include "io/file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int fail_size(qtts_err *err, const char *name, size_t max) {
    if (max >= (1u << 20)) return qtts_fail(err, "%s: larger than %zu MiB", name, max >> 20);
    return qtts_fail(err, "%s: larger than %zu bytes", name, max);
}

int qtts_read_stream(FILE *f, const char *name, size_t max, char **buf, size_t *len, qtts_err *err) {
    *buf = NULL;
    *len = 0;
    size_t cap = 0, n = 0;
    char *b = NULL;
    for (;;) {
        if (n == cap) {
            if (cap > max) {
                free(b);
                return fail_size(err, name, max);
            }
            size_t ncap = cap ? cap * 2 : 65536;
            if (ncap > max + 1) ncap = max + 1; /* one byte past max tells "too large" from "exactly max" */
            char *nb = realloc(b, ncap + 1);
            if (!nb) {
                free(b);
                return qtts_fail(err, "%s: out of memory", name);
            }
            b = nb;
            cap = ncap;
        }
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    if (ferror(f)) {
        int e = errno;
        free(b);
        return qtts_fail(err, "%s: read error: %s", name, e ? strerror(e) : "I/O error");
    }
    if (n > max) {
        free(b);
        return fail_size(err, name, max);
    }
    b[n] = 0;
    *buf = b;
    *len = n;
    return 0;
}

int qtts_read_file(const char *path, size_t max, char **buf, size_t *len, qtts_err *err) {
    *buf = NULL;
    *len = 0;
    if (!strcmp(path, "-")) return qtts_read_stream(stdin, "standard input", max, buf, len, err);
    FILE *f = fopen(path, "rb");
    if (!f) return qtts_fail(err, "%s: cannot open: %s", path, strerror(errno));
    errno = 0;
    int rc = qtts_read_stream(f, path, max, buf, len, err);
    fclose(f);
    return rc;
}

int qtts_write_file(const char *path, const void *data, size_t n, qtts_err *err) {
    int to_stdout = !strcmp(path, "-");
    FILE *f = to_stdout ? stdout : fopen(path, "wb");
    if (!f) return qtts_fail(err, "%s: cannot create: %s", path, strerror(errno));
    int bad = fwrite(data, 1, n, f) != n;
    int e = errno;
    if (to_stdout) bad |= fflush(f) != 0;
    else bad |= fclose(f) != 0;
    if (bad) return qtts_fail(err, "%s: write failed: %s", to_stdout ? "standard output" : path, strerror(e ? e : errno));
    return 0;
}
