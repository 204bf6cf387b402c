/* qtts say --book on the tiny CustomVoice model: a 3-chapter Markdown book
 * and a 3-chapter plain-text book give one valid file per chapter and a
 * playlist; a run killed (SIGKILL) in the middle of chapter 2 leaves only
 * complete chapter files, and the rerun keeps chapter 1 untouched (same
 * inode and mtime) and ends with files equal, sample for sample, to an
 * uninterrupted run's. The same book as an EPUB (built here, the chapters
 * in three XHTML files named by its navigation document) gives the same
 * files as the Markdown one, also when killed and resumed (where the build
 * reads EPUB). */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "support/test_util.h"
#include "support/zip_store.h"
#include "text/epub.h"

#define CV "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"

static const char *const names[] = {"01 - The Beginning.wav", "02 - The Middle.wav", "03 - The End.wav"};

static void book_cmd(char *cmd, size_t size, const char *book, const char *dir) {
    char model[1024];
    golden_path(model, sizeof model, CV);
    snprintf(cmd, size,
             "exec %s say -q --threads 2 -m %s --speaker ryan --greedy --max-frames 6 --sample-format f32 "
             "--format wav --book %s -o %s 2>/dev/null",
             QTTS_BINARY, model, book, dir);
}

/* The chapter files of dir are complete WAVs (n_want of them, with audio). */
static void check_files(const char *dir, int n_want, const char *what) {
    for (int i = 0; i < 3; i++) {
        char path[1200];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct stat st;
        int exists = stat(path, &st) == 0;
        TEST_CHECK(exists == (i < n_want), "%s: %s %s", what, names[i], exists ? "exists" : "is missing");
        if (!exists) continue;
        size_t n = 0;
        float *x = read_wav(path, &n);
        TEST_CHECK(x && n > 0, "%s: %s is not a complete WAV", what, names[i]);
        free(x);
    }
}

static void same_files(const char *a, const char *b) {
    for (int i = 0; i < 3; i++) {
        char pa[1200], pb[1200];
        snprintf(pa, sizeof pa, "%s/%s", a, names[i]);
        snprintf(pb, sizeof pb, "%s/%s", b, names[i]);
        size_t na = 0, nb = 0;
        float *xa = read_wav(pa, &na), *xb = read_wav(pb, &nb);
        TEST_CHECK(xa && xb && na == nb, "%s: %zu samples resumed, %zu uninterrupted", names[i], nb, na);
        if (xa && xb && na == nb) TEST_NEAR(xb, xa, na, 0.0, names[i]);
        free(xa);
        free(xb);
    }
}

/* 1 when dir holds a chapter 2 part file (its synthesis is under way). */
static int chapter2_started(const char *dir) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s.part", dir, names[1]);
    struct stat st;
    return stat(path, &st) == 0 && st.st_size > 100;
}

/* The Markdown book as an EPUB 3: the same titles and paragraphs. */
static int write_epub(const char *path, const char *middle_html) {
    static const char head[] = "<?xml version=\"1.0\"?><html xmlns=\"http://www.w3.org/1999/xhtml\"><head><title>x"
                               "</title></head><body>";
    char c1[512], c2[8192], c3[512];
    snprintf(c1, sizeof c1, "%s<h1>The Beginning</h1><p>It was a <i>dark</i> night.</p></body></html>", head);
    snprintf(c2, sizeof c2, "%s<h1>The Middle</h1>%s</body></html>", head, middle_html);
    snprintf(c3, sizeof c3, "%s<h1>The End</h1><p>Good night.</p></body></html>", head);
    const zip_entry e[] = {
        {"mimetype", "application/epub+zip"},
        {"META-INF/container.xml", "<container><rootfiles><rootfile full-path=\"OPS/book.opf\"/></rootfiles>"
                                   "</container>"},
        {"OPS/book.opf", "<package><manifest><item id=\"nav\" href=\"nav.xhtml\" properties=\"nav\"/>"
                         "<item id=\"a\" href=\"a.xhtml\"/><item id=\"b\" href=\"b.xhtml\"/>"
                         "<item id=\"c\" href=\"c.xhtml\"/></manifest><spine><itemref idref=\"a\"/>"
                         "<itemref idref=\"b\"/><itemref idref=\"c\"/></spine></package>"},
        {"OPS/nav.xhtml", "<html><body><nav><ol><li><a href=\"a.xhtml\">The Beginning</a></li><li><a "
                          "href=\"b.xhtml\">The Middle</a></li><li><a href=\"c.xhtml\">The End</a></li></ol></nav>"
                          "</body></html>"},
        {"OPS/a.xhtml", c1},
        {"OPS/b.xhtml", c2},
        {"OPS/c.xhtml", c3},
    };
    size_t len = 0;
    unsigned char *z = zip_store(e, sizeof e / sizeof e[0], &len);
    FILE *f = z ? fopen(path, "wb") : NULL;
    int ok = f && fwrite(z, 1, len, f) == len;
    if (f && fclose(f)) ok = 0;
    free(z);
    return ok ? 0 : -1;
}

/* SIGKILL in the middle of chapter 2, then resume: the files equal clean's. */
static void kill_and_resume(const char *book, const char *killed, const char *clean) {
    char cmd[4096];
    book_cmd(cmd, sizeof cmd, book, killed);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    int started = 0;
    for (int i = 0; i < 60000 && !started; i++) { /* up to 60 s */
        started = chapter2_started(killed);
        if (!started) usleep(1000);
        int st;
        if (!started && waitpid(pid, &st, WNOHANG) == pid) {
            pid = -1;
            break;
        }
    }
    TEST_CHECK(started && pid > 0, "%s: chapter 2 never started before the run ended", book);
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    check_files(killed, 1, "after SIGKILL");
    char first[1200];
    snprintf(first, sizeof first, "%s/%s", killed, names[0]);
    struct stat before, after;
    TEST_CHECK(stat(first, &before) == 0, "%s: no chapter 1 after the kill", book);
    sleep(1); /* a rewrite would show in the mtime */
    TEST_CHECK(system(cmd) == 0, "resume failed: %s", cmd);
    check_files(killed, 3, "resumed");
    TEST_CHECK(stat(first, &after) == 0 && after.st_ino == before.st_ino &&
                   after.st_mtim.tv_sec == before.st_mtim.tv_sec && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec,
               "%s: chapter 1 was redone on resume", book);
    same_files(clean, killed);
}

int main(void) {
    char dir[] = "/tmp/qtts_book_XXXXXX";
    if (!mkdtemp(dir)) return 1;
    char md[700], txt[700], clean[700], killed[700], plain[700], cmd[4096];
    snprintf(md, sizeof md, "%s/book.md", dir);
    snprintf(txt, sizeof txt, "%s/book.txt", dir);
    snprintf(clean, sizeof clean, "%s/clean", dir);
    snprintf(killed, sizeof killed, "%s/killed", dir);
    snprintf(plain, sizeof plain, "%s/plain", dir);
    /* chapter 2 is long enough (40 utterances) to be killed in the middle of */
    char middle[8192] = "";
    for (int i = 0; i < 40; i++) strcat(middle, "She said she would be here by noon.\n\n");
    char text[10000];
    snprintf(text, sizeof text, "# The Beginning\n\nIt was a *dark* night.\n\n# The Middle\n\n%s# The End\n\nGood night.\n",
             middle);
    TEST_CHECK(write_text_file(md, text) == 0, "write %s", md);
    TEST_CHECK(write_text_file(txt, "Chapter 1: The Beginning\n\nIt was a dark night.\n\nChapter 2 The Middle\n"
                                    "She said.\n\nCHAPTER 3 - The End\nGood night.\n") == 0,
               "write %s", txt);

    book_cmd(cmd, sizeof cmd, md, clean);
    TEST_CHECK(system(cmd) == 0, "failed: %s", cmd);
    check_files(clean, 3, "uninterrupted");
    char m3u[800];
    snprintf(m3u, sizeof m3u, "%s/book.m3u", clean);
    unsigned char *list = NULL;
    size_t n = 0;
    TEST_CHECK(read_bytes(m3u, &list, &n) == 0, "no %s", m3u);
    char *l = list ? realloc(list, n + 1) : NULL;
    if (l) {
        l[n] = 0;
        for (int i = 0; i < 3; i++) TEST_CHECK(strstr(l, names[i]) != NULL, "book.m3u lacks %s:\n%s", names[i], l);
        TEST_CHECK(!strncmp(l, "#EXTM3U\n#EXTINF:", 16), "book.m3u: %s", l);
        free(l);
    } else {
        free(list);
    }

    /* plain text: "Chapter ..." lines */
    book_cmd(cmd, sizeof cmd, txt, plain);
    TEST_CHECK(system(cmd) == 0, "failed: %s", cmd);
    DIR *d = opendir(plain);
    int wavs = 0;
    for (struct dirent *e; d && (e = readdir(d));) wavs += strstr(e->d_name, ".wav") && !strstr(e->d_name, ".part");
    if (d) closedir(d);
    TEST_CHECK(wavs == 3, "plain text book: %d chapter files, want 3", wavs);

    kill_and_resume(md, killed, clean);

    /* the same book as an EPUB */
    if (qtts_epub_supported()) {
        char epub[700], from_epub[700], epub_killed[700], middle_html[8192] = "";
        snprintf(epub, sizeof epub, "%s/book.epub", dir);
        snprintf(from_epub, sizeof from_epub, "%s/epub", dir);
        snprintf(epub_killed, sizeof epub_killed, "%s/epub_killed", dir);
        for (int i = 0; i < 40; i++) strcat(middle_html, "<p>She said she would be here by noon.</p>\n");
        TEST_CHECK(write_epub(epub, middle_html) == 0, "write %s", epub);
        book_cmd(cmd, sizeof cmd, epub, from_epub);
        TEST_CHECK(system(cmd) == 0, "failed: %s", cmd);
        check_files(from_epub, 3, "EPUB");
        same_files(clean, from_epub);
        kill_and_resume(epub, epub_killed, clean);
    } else {
        printf("test_cli_book: built without EPUB support, the EPUB book is not read\n");
    }
    rm_rf(dir);
    return test_finish("test_cli_book");
}
