/* qtts say --book --m4b: the finished chapter files joined into one
 * DIR/book.m4b with a chapter mark per chapter (see say_book.h). The chapter
 * files are read back (libsndfile) rather than kept in memory, so a resumed
 * book joins the chapters of earlier runs too. Two passes: the marks go into
 * the file's header, so every chapter's exact length is counted first. */
#include <errno.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/encoder.h"
#include "cli/cli.h"
#include "cli/say_book.h"

#define READ_FRAMES 8192

/* Opens chapter i's file; checks it is mono at rate (0: any, set from it). */
static SNDFILE *open_chapter(const say_book *bk, size_t i, const char *ext, int *rate, char *path, size_t size) {
    char name[160];
    say_book_file_name(bk, i, ext, name, sizeof name);
    snprintf(path, size, "%s/%s", bk->dir, name);
    SF_INFO info;
    memset(&info, 0, sizeof info);
    SNDFILE *f = sf_open(path, SFM_READ, &info);
    if (!f) {
        cli_error("%s: cannot read it back for book.m4b: %s", path, sf_strerror(NULL));
        return NULL;
    }
    if (info.channels != 1 || (*rate && info.samplerate != *rate)) {
        cli_error("%s: %d channel(s) at %d Hz, where book.m4b joins mono chapters at %d Hz", path, info.channels,
                  info.samplerate, *rate ? *rate : info.samplerate);
        sf_close(f);
        return NULL;
    }
    *rate = info.samplerate;
    return f;
}

/* Decodes chapter i: counts its frames, or (enc) encodes them too. */
static int read_chapter(const say_book *bk, size_t i, const char *ext, int *rate, float *buf, qtts_encoder *enc,
                        uint64_t *frames) {
    char path[4096];
    SNDFILE *f = open_chapter(bk, i, ext, rate, path, sizeof path);
    if (!f) return -1;
    *frames = 0;
    sf_count_t n;
    qtts_err qe = {0};
    while ((n = sf_readf_float(f, buf, READ_FRAMES)) > 0) {
        if (enc && qtts_encoder_write(enc, buf, (size_t)n, &qe)) {
            cli_error("book.m4b: %s", qe.msg);
            sf_close(f);
            return -1;
        }
        *frames += (uint64_t)n;
    }
    int bad = sf_error(f);
    if (bad) cli_error("%s: %s", path, sf_strerror(f));
    sf_close(f);
    return bad ? -1 : 0;
}

int say_book_write_m4b(const say_book *bk, const char *ext) {
    char path[4096], part[4200];
    snprintf(path, sizeof path, "%s/book.m4b", bk->dir);
    snprintf(part, sizeof part, "%s.part", path);
    qtts_audio_chapter *marks = calloc(bk->b.n ? bk->b.n : 1, sizeof *marks);
    float *buf = malloc(READ_FRAMES * sizeof *buf);
    int rc = marks && buf ? 0 : (cli_error("out of memory"), -1);
    int rate = 0;
    uint64_t at = 0, n = 0;
    for (size_t i = 0; !rc && i < bk->b.n; i++) { /* pass 1: the marks */
        rc = read_chapter(bk, i, ext, &rate, buf, NULL, &n);
        marks[i] = (qtts_audio_chapter){bk->b.ch[i].title, at, at + n};
        at += n;
    }
    qtts_encoder *enc = NULL;
    if (!rc) {
        qtts_err qe = {0};
        enc = qtts_encoder_open_file_chapters(part, "m4a", QTTS_SAMPLE_S16, rate, 1, marks, bk->b.n, &qe);
        if (!enc) rc = (cli_error("%s", qe.msg), -1);
    }
    for (size_t i = 0; !rc && i < bk->b.n; i++) { /* pass 2: the audio */
        rc = read_chapter(bk, i, ext, &rate, buf, enc, &n);
        if (!rc && n != marks[i].end - marks[i].start)
            rc = (cli_error("book.m4b: chapter %zu changed while it was read", i + 1), -1);
    }
    if (enc) {
        qtts_err qe = {0};
        if (rc) qtts_encoder_abort(enc);
        else if (qtts_encoder_close(enc, &qe)) rc = (cli_error("%s", qe.msg), -1);
    }
    if (!rc && rename(part, path)) rc = (cli_error("%s: %s", path, strerror(errno)), -1);
    if (rc) remove(part);
    free(marks);
    free(buf);
    return rc;
}
