/* qtts say --book --m4b on the tiny CustomVoice model: a 3-chapter Markdown
 * book gives DIR/book.m4b whose chapter marks (read back by libavformat, as
 * ffprobe -show_chapters does) carry the headings' titles and start where
 * each chapter file's samples start; its audio is as long as the chapters
 * together. A second run (every chapter done before) writes it again the
 * same; --m4b without --book, or with chapter files libsndfile cannot read,
 * is a usage error. */
#include <libavformat/avformat.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "harness.h"
#include "support/test_util.h"

#define CV "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"
#define RATE 24000

static const char *const titles[] = {"The Beginning", "The Middle: été", "The End"};
static const char *const files[] = {"01 - The Beginning.wav", "02 - The Middle t.wav", "03 - The End.wav"};

static int run(const char *book, const char *dir, const char *extra) {
    char model[1024], cmd[4096];
    golden_path(model, sizeof model, CV);
    snprintf(cmd, sizeof cmd,
             "%s say -q --threads 2 -m %s --speaker ryan --greedy --max-frames 6 --format wav --book %s -o %s %s "
             "2>/dev/null",
             QTTS_BINARY, model, book, dir, extra);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The m4b's marks against the chapter files' lengths. */
static void check_m4b(const char *dir, const char *what) {
    double start[3], end[3];
    double at = 0;
    for (int i = 0; i < 3; i++) {
        char path[1400];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        size_t n = 0;
        float *x = read_wav(path, &n);
        TEST_CHECK(x && n > 0, "%s: %s is a WAV with audio", what, files[i]);
        free(x);
        start[i] = at;
        at += (double)n / RATE;
        end[i] = at;
    }
    char path[1400];
    snprintf(path, sizeof path, "%s/book.m4b", dir);
    AVFormatContext *fc = NULL;
    int rc = avformat_open_input(&fc, path, NULL, NULL);
    if (rc >= 0) rc = avformat_find_stream_info(fc, NULL);
    TEST_CHECK(rc >= 0 && fc->nb_chapters == 3, "%s: book.m4b has %u chapters, want 3", what,
               rc >= 0 ? fc->nb_chapters : 0);
    for (unsigned i = 0; rc >= 0 && i < fc->nb_chapters && i < 3; i++) {
        const AVChapter *c = fc->chapters[i];
        const AVDictionaryEntry *t = av_dict_get(c->metadata, "title", NULL, 0);
        double s = (double)c->start * c->time_base.num / c->time_base.den;
        double e = (double)c->end * c->time_base.num / c->time_base.den;
        TEST_CHECK(t && !strcmp(t->value, titles[i]), "%s: chapter %u '%s', want '%s'", what, i + 1,
                   t ? t->value : "(none)", titles[i]);
        TEST_CHECK(fabs(s - start[i]) < 0.002 && fabs(e - end[i]) < 0.05, "%s: chapter %u %.3f-%.3f s, want %.3f-%.3f",
                   what, i + 1, s, e, start[i], end[i]);
    }
    double dur = rc >= 0 && fc->duration > 0 ? (double)fc->duration / AV_TIME_BASE : 0;
    TEST_CHECK(fabs(dur - at) < 0.05, "%s: book.m4b lasts %.3f s, the chapters %.3f s", what, dur, at);
    if (fc) avformat_close_input(&fc);
}

int main(void) {
    char dir[] = "/tmp/qtts_m4bXXXXXX";
    if (!mkdtemp(dir)) return 1;
    char book[1200], out[1200];
    snprintf(book, sizeof book, "%s/book.md", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    TEST_CHECK(!write_text_file(book, "# The Beginning\n\nIt was a dark night.\n\n## The Middle: été\n\nThe rain "
                                      "fell.\n\n### Not a chapter\n\nStill the middle.\n\n# The End\n\nMorning came.\n"),
               "write the book");
    int rc = run(book, out, "--m4b");
    TEST_CHECK(rc == 0, "say --book --m4b exits 0 (%d)", rc);
    if (rc == 0) check_m4b(out, "first run");
    char m4b[1300];
    snprintf(m4b, sizeof m4b, "%s/book.m4b", out);
    unsigned char *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    read_bytes(m4b, &a, &na);
    rc = run(book, out, "--m4b"); /* all done before: joined again */
    TEST_CHECK(rc == 0, "the second run exits 0 (%d)", rc);
    read_bytes(m4b, &b, &nb);
    TEST_CHECK(a && b && na == nb && !memcmp(a, b, na), "the second run writes the same book.m4b (%zu, %zu bytes)", na,
               nb);
    free(a);
    free(b);
    struct stat st;
    char part[1400];
    snprintf(part, sizeof part, "%s.part", m4b);
    TEST_CHECK(stat(part, &st) != 0, "no book.m4b.part is left");

    char cmd[4096], model[1024];
    golden_path(model, sizeof model, CV);
    snprintf(cmd, sizeof cmd, "%s say -m %s --m4b -o %s/x.wav hello 2>/dev/null", QTTS_BINARY, model, dir);
    int st2 = system(cmd);
    TEST_CHECK(WIFEXITED(st2) && WEXITSTATUS(st2) == 2, "--m4b without --book is a usage error");
    snprintf(cmd, sizeof cmd, "%s say -m %s --book %s --m4b --format m4a -o %s/o2 2>/dev/null", QTTS_BINARY, model,
             book, dir);
    st2 = system(cmd);
    TEST_CHECK(WIFEXITED(st2) && WEXITSTATUS(st2) == 2, "--m4b with m4a chapter files is a usage error");
    rm_rf(dir);
    return test_finish("test_cli_book_m4b");
}
