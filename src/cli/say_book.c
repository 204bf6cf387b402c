/* qtts say --book: chapters, file names, resume state, playlist. */
#include "cli/say_book.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "io/file.h"
#include "text/epub.h"
#include "text/utf8.h"

#define MAX_BOOK_BYTES ((size_t)1 << 30)
#define STATE_NAME "qtts-book.state"

static int has_ext(const char *path, const char *ext) {
    size_t n = strlen(path), e = strlen(ext);
    return n > e && !strcasecmp(path + n - e, ext);
}

/* The state file: "seed N" then "chapter I HASH SECONDS GUARDED" lines.
 * Lines it does not know are skipped (a torn last line after a kill). */
static void read_state(say_book *bk) {
    char path[4096];
    snprintf(path, sizeof path, "%s/" STATE_NAME, bk->dir);
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        unsigned long long seed, hash;
        size_t i;
        double secs;
        int guarded;
        if (sscanf(line, "seed %llu", &seed) == 1) {
            bk->seed = seed;
            bk->has_seed = 1;
        } else if (sscanf(line, "chapter %zu %llx %lf %d", &i, &hash, &secs, &guarded) == 4 && i < bk->b.n &&
                   strchr(line, '\n')) {
            bk->done[i] = (say_book_done){.hash = hash, .seconds = secs, .guarded = guarded};
        }
    }
    fclose(f);
}

int say_book_open(const char *path, const char *dir, say_book *bk) {
    memset(bk, 0, sizeof *bk);
    bk->dir = dir;
    char *text = NULL;
    size_t len = 0;
    qtts_err qe = {0};
    if (qtts_read_file(path, MAX_BOOK_BYTES, &text, &len, &qe)) {
        cli_error("%s", qe.msg);
        return -1;
    }
    if (has_ext(path, ".epub")) { /* a ZIP of XHTML documents */
        int rc = qtts_epub_parse(text, len, &bk->b, &qe);
        free(text);
        if (rc) {
            cli_error("%s: %s", path, qe.msg);
            return -1;
        }
    } else {
        size_t bad = qtts_utf8_check(text, len);
        if (bad != len) {
            cli_error("%s: not valid UTF-8 (byte 0x%02X at offset %zu)", path, (unsigned char)text[bad], bad);
            free(text);
            return -1;
        }
        int rc = qtts_book_parse(text, len, has_ext(path, ".md") || has_ext(path, ".markdown"), &bk->b, &qe);
        free(text);
        if (rc) {
            cli_error("%s: %s", path, qe.msg);
            return -1;
        }
    }
    if (!(bk->done = calloc(bk->b.n, sizeof *bk->done))) {
        cli_error("out of memory");
        return -1;
    }
    if (mkdir(dir, 0777) && errno != EEXIST) {
        cli_error("%s: %s", dir, strerror(errno));
        return -1;
    }
    read_state(bk);
    return 0;
}

void say_book_file_name(const say_book *bk, size_t i, const char *ext, char *out, size_t size) {
    char title[48];
    size_t k = 0;
    for (const char *p = bk->b.ch[i].title; *p && k + 1 < sizeof title; p++) {
        char c = *p;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_')
            title[k++] = c;
        else if (k && title[k - 1] != ' ')
            title[k++] = ' ';
    }
    while (k && title[k - 1] == ' ') k--;
    title[k] = 0;
    int width = bk->b.n >= 100 ? 3 : 2;
    snprintf(out, size, "%0*zu%s%s.%s", width, i + 1, k ? " - " : "", title, ext);
}

uint64_t say_book_hash(const char *text, const char *settings) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const char *s = text; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    h = (h ^ 0xFF) * 1099511628211ull;
    for (const char *s = settings; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h ? h : 1;
}

/* Appends one line and syncs it: the record is the commit of a chapter. */
static int append_state(const say_book *bk, const char *line, int truncate) {
    char path[4096];
    snprintf(path, sizeof path, "%s/" STATE_NAME, bk->dir);
    FILE *f = fopen(path, truncate ? "w" : "a");
    int ok = f && fputs(line, f) >= 0 && fflush(f) == 0 && fsync(fileno(f)) == 0;
    if (f && fclose(f)) ok = 0;
    if (!ok) cli_error("%s: %s", path, strerror(errno));
    return ok ? 0 : -1;
}

int say_book_record_seed(say_book *bk, uint64_t seed) {
    char line[64];
    snprintf(line, sizeof line, "seed %llu\n", (unsigned long long)seed);
    bk->seed = seed;
    bk->has_seed = 1;
    memset(bk->done, 0, bk->b.n * sizeof *bk->done); /* a new state */
    return append_state(bk, line, 1);
}

int say_book_record(say_book *bk, size_t i, uint64_t hash, double seconds, int guarded) {
    char line[128];
    snprintf(line, sizeof line, "chapter %zu %llx %.3f %d\n", i, (unsigned long long)hash, seconds, guarded);
    bk->done[i] = (say_book_done){.hash = hash, .seconds = seconds, .guarded = guarded};
    return append_state(bk, line, 0);
}

int say_book_write_m3u(const say_book *bk, const char *ext) {
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/book.m3u", bk->dir);
    snprintf(tmp, sizeof tmp, "%s.part", path);
    FILE *f = fopen(tmp, "w");
    int ok = f && fputs("#EXTM3U\n", f) >= 0;
    for (size_t i = 0; ok && i < bk->b.n; i++) {
        if (!bk->done[i].hash) continue;
        char name[128];
        say_book_file_name(bk, i, ext, name, sizeof name);
        ok = fprintf(f, "#EXTINF:%.0f,%s\n%s\n", bk->done[i].seconds, bk->b.ch[i].title, name) > 0;
    }
    if (f && fclose(f)) ok = 0;
    if (ok && rename(tmp, path)) ok = 0;
    if (!ok) cli_error("%s: %s", path, strerror(errno));
    return ok ? 0 : -1;
}

void say_book_close(say_book *bk) {
    qtts_book_free(&bk->b);
    free(bk->done);
    memset(bk, 0, sizeof *bk);
}
