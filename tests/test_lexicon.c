/* The pronunciation lexicon (text/lexicon.h): the file format's errors
 * (with line numbers), the case rule, whole-word matching (not inside
 * words, URLs, e-mail addresses, hyphenated words), precedence (longest,
 * then the text's language), per-language scope, that it runs before the
 * number and symbol rules, CJK entries, off mode, the public load call, and
 * that text in pieces (qtts_norm_stream) gives the whole text's result, and
 * the merge of a registered voice's lexicon over the global one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "qtts.h"
#include "text/lexicon.h"
#include "text/normalize.h"

static const char LEX[] =
    "\xEF\xBB\xBF# names and brands\n"
    "nginx\tengine x\n"
    "SQL\tsequel\n"
    "New York\tthe Big Apple\n"
    "New\tnu\n"
    "C++\tC plus plus\n"
    "R2-D2\tArtoo Detoo\n"
    "W3C\tW 3 C\n"
    "Gif\tjiff\ten\n"
    "gif\tgiff\n"
    "Bahn\tBaan\tGerman\n"
    "北京\t北平\n"
    "\n"
    "   \n"
    "café\tcaff\r\n";

static char *norm(const qtts_lexicon *lx, const char *text, const char *lang, qtts_norm_mode mode) {
    qtts_err err = {0};
    char *out = qtts_text_normalize_lex(text, strlen(text), lang, mode, lx, NULL, &err);
    if (!out) printf("  normalize failed: %s\n", err.msg);
    return out;
}

static void expect(const qtts_lexicon *lx, const char *text, const char *lang, const char *want) {
    char *got = norm(lx, text, lang, QTTS_NORM_FULL);
    TEST_CHECK(got && !strcmp(got, want), "[%s] %s\n  expected: %s\n  got:      %s", lang, text, want, got ? got : "");
    /* in pieces: 1 byte, then 3 bytes */
    for (size_t step = 1; step <= 3; step += 2) {
        qtts_err err = {0};
        qtts_norm_stream *s = qtts_norm_stream_new(lang, QTTS_NORM_FULL, &err);
        qtts_norm_stream_set_lexicon(s, lx);
        size_t n = strlen(text), len = 0;
        for (size_t p = 0; p < n; p += step) qtts_norm_stream_feed(s, text + p, p + step <= n ? step : n - p, 0, &err);
        int ok = !qtts_norm_stream_feed(s, NULL, 0, 1, &err);
        const char *t = qtts_norm_stream_text(s, &len);
        TEST_CHECK(ok && got && len == strlen(got) && !memcmp(t, got, len), "pieces of %zu: %.*s vs %s", step,
                   (int)len, t, got ? got : "");
        qtts_norm_stream_free(s);
    }
    free(got);
}

/* qtts_lexicon_merge: the voice's entry for a written form (ignoring case)
 * replaces the global's, of every language; other global entries stay; the
 * longest match still wins across the two. */
static void check_merge(void) {
    qtts_err err = {0};
    const char *vt = "nginx\tengine x\nQTTS\tcute ts\n",
               *gt = "NGINX\tglobal nginx\nnginx\tglobal fr\tfr\nkubectl\tcube control\nQTTS engine\tthe engine\n";
    qtts_lexicon *voice = qtts_lexicon_parse_text(vt, strlen(vt), "voice", &err);
    qtts_lexicon *global = qtts_lexicon_parse_text(gt, strlen(gt), "global", &err);
    TEST_CHECK(voice && global, "merge inputs: %s", err.msg);
    if (!voice || !global) return;
    qtts_lexicon *m = qtts_lexicon_merge(voice, global, &err);
    TEST_CHECK(m && qtts_lexicon_size(m) == 4, "merged: 2 + 2 global entries not shadowed, not %zu",
               qtts_lexicon_size(m));
    if (m) {
        expect(m, "NGINX runs kubectl.", "en", "engine x runs cube control.");
        expect(m, "NGINX et kubectl.", "fr", "engine x et cube control.");
        expect(m, "QTTS engine and QTTS.", "en", "the engine and cute ts.");
    }
    expect(global, "NGINX runs kubectl.", "en", "global nginx runs cube control.");
    qtts_lexicon *only = qtts_lexicon_merge(NULL, global, &err);
    TEST_CHECK(only == global && qtts_lexicon_merge(NULL, NULL, &err) == NULL, "merge with none: the other, held");
    qtts_lexicon_release(only);
    qtts_lexicon_release(m);
    qtts_lexicon_release(voice);
    qtts_lexicon_release(global);
}

static void bad_file(const char *text, const char *want) {
    qtts_err err = {0};
    qtts_lexicon *lx = qtts_lexicon_parse_text(text, strlen(text), "my.lex", &err);
    TEST_CHECK(!lx && err.status == QTTS_ERR_INVALID && strstr(err.msg, want), "bad lexicon %s: %s", want, err.msg);
    qtts_lexicon_release(lx);
}

int main(void) {
    qtts_err err = {0};
    qtts_lexicon *lx = qtts_lexicon_parse_text(LEX, strlen(LEX), "test.lex", &err);
    TEST_CHECK(lx != NULL, "parse: %s", err.msg);
    if (!lx) return test_finish("test_lexicon");
    TEST_CHECK(qtts_lexicon_size(lx) == 12, "12 entries, not %zu", qtts_lexicon_size(lx));

    /* case: no capital -> any case; a capital -> exactly */
    expect(lx, "NGINX, Nginx and nginx.", "en", "engine x, engine x and engine x.");
    expect(lx, "SQL but not sql or Sql.", "en", "sequel but not sql or Sql.");
    /* whole words only; not inside URLs, e-mail, file names, hyphenated words */
    expect(lx, "nginxes, unginx, nginx_x, see https://nginx.org or www.nginx.org, root@nginx.com, nginx.conf, "
               "nginx-like; but nginx's and (nginx) and nginx. yes",
           "en",
           "nginxes, unginx, nginx x, see nginx dot org or nginx dot org, root at nginx dot com, nginx.conf, "
           "nginx-like; but engine x's and (engine x) and engine x. yes");
    /* longest first: the phrase over its first word */
    expect(lx, "New York is New.", "en", "the Big Apple is nu.");
    /* the text's language over every language; other languages' entries do not apply */
    expect(lx, "a Gif and a gif", "en", "a jiff and a giff");
    expect(lx, "ein Gif und ein gif", "de", "ein giff und ein giff");
    expect(lx, "Die Bahn kommt.", "de", "Die Baan kommt.");
    expect(lx, "The Bahn comes.", "en", "The Bahn comes.");
    /* before numbers and symbols: the respelling is read by the rules */
    expect(lx, "C++ and R2-D2 at the W3C, 2 + 2.", "en", "C plus plus and Artoo Detoo at the W three C, two plus two.");
    /* CJK: anywhere; non-ASCII case folding */
    expect(lx, "我在北京住了3年。", "zh", "我在北平住了三年。");
    expect(lx, "Un CAFÉ, un café.", "fr", "Un caff, un caff.");
    /* basic mode applies it too; off does not */
    char *b = norm(lx, "nginx 3", "en", QTTS_NORM_BASIC), *o = norm(lx, "nginx 3", "en", QTTS_NORM_OFF);
    TEST_CHECK(b && !strcmp(b, "engine x 3"), "basic: %s", b ? b : "");
    TEST_CHECK(o && !strcmp(o, "nginx 3"), "off: %s", o ? o : "");
    free(b), free(o);

    /* bad files: the line and the reason */
    bad_file("a\tb\nno tab here\n", "my.lex:2: has no TAB");
    bad_file("# c\n\tb\n", "my.lex:2: the written form is empty");
    bad_file("a \tb\n", "my.lex:1: the written form is empty or begins or ends with a space");
    bad_file("a\t\n", "my.lex:1: the spoken form is empty");
    bad_file("a\tb\tklingon\n", "my.lex:1: has no text rules for the language klingon");
    bad_file("a\tb\ten\tx\n", "my.lex:1: has more than three columns");
    bad_file("x\ty\n\nHello\tb\nhello\tc\nhello\td\n", "my.lex:5: repeats a written form (first on line 4)");
    bad_file("a\tb\nc\xC3\tz\n", "my.lex:2: is not valid UTF-8");
    bad_file("a\tb\x01\n", "my.lex:1: has a control character");
    /* the public calls: a file, a missing file */
    char path[] = "/tmp/qtts_lexXXXXXX";
    int fd = mkstemp(path);
    TEST_CHECK(fd >= 0 && write(fd, "Qwen\tchwen\n", 11) == 11, "temp file");
    if (fd >= 0) close(fd);
    qtts_error pe = {0};
    qtts_lexicon *fl = qtts_lexicon_load(path, &pe);
    TEST_CHECK(fl && qtts_lexicon_size(fl) == 1, "load: %s", pe.message);
    if (fl) expect(fl, "Qwen speaks.", "en", "chwen speaks.");
    TEST_CHECK(qtts_lexicon_retain(fl) == fl, "retain");
    qtts_lexicon_release(fl);
    qtts_lexicon_release(fl);
    unlink(path);
    TEST_CHECK(!qtts_lexicon_load(path, &pe) && pe.status == QTTS_ERR_NOT_FOUND && strstr(pe.message, path),
               "missing file: %s", pe.message);
    TEST_CHECK(!qtts_lexicon_parse("a", 1, NULL, &pe) && strstr(pe.message, "lexicon:1:"), "unnamed: %s", pe.message);
    qtts_lexicon_release(lx);
    check_merge();
    return test_finish("test_lexicon");
}
