/* The text front end against tables of input -> expected spoken text, one
 * per language (tests/data/normalize/<lang>.tsv: input TAB expected, "\n"
 * written as the two characters \n; each input read from an unterminated
 * copy), plus: off mode returns the text unchanged, invalid UTF-8 is
 * refused, and the language guess. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "support/test_util.h"
#include "text/norm_lang.h"
#include "text/normalize.h"

static int run_table(const char *lang) {
    char path[512];
    snprintf(path, sizeof path, "%s/tests/data/normalize/%s.tsv", QTTS_SOURCE_DIR, lang);
    FILE *f = fopen(path, "r");
    if (!f) {
        printf("FAIL: cannot open %s\n", path);
        return -1;
    }
    char line[4096];
    int n = 0, bad = 0, lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0] || line[0] == '#') continue;
        char *tab = strchr(line, '\t');
        if (!tab) {
            printf("FAIL: %s:%d has no tab\n", path, lineno);
            bad++;
            continue;
        }
        *tab = 0;
        char *in = line, *want = tab + 1;
        test_unescape(in), test_unescape(want);
        qtts_err err = {0};
        /* from an exact-size copy with no terminator, so ASan catches any read past the text */
        size_t len = strlen(in);
        char *exact = malloc(len ? len : 1);
        if (!exact) abort();
        memcpy(exact, in, len);
        char *got = qtts_text_normalize(exact, len, lang, QTTS_NORM_FULL, NULL, &err);
        free(exact);
        n++;
        if (!got || strcmp(got, want)) {
            printf("FAIL: %s:%d [%s]\n  input:    %s\n  expected: %s\n  got:      %s\n", path, lineno, lang, in, want,
                   got ? got : err.msg);
            bad++;
        }
        free(got);
    }
    fclose(f);
    printf("%s: %d cases, %d failed\n", lang, n, bad);
    return bad ? -1 : n;
}

int main(void) {
    int fails = 0;
    for (int i = 0; i < qtts_norm_lang_count(); i++) {
        int n = run_table(qtts_norm_lang_at(i)->code);
        if (n < 0) fails++;
        else TEST_CHECK(n >= 40, "%s: at least 40 cases, not %d", qtts_norm_lang_at(i)->code, n);
    }
    TEST_CHECK(fails == 0, "check failed");

    /* off: byte-identical */
    const char *raw = "  **Hi** 3 km\n\n```x```  ";
    char *same = qtts_text_normalize(raw, strlen(raw), "en", QTTS_NORM_OFF, NULL, NULL);
    TEST_CHECK(same && !strcmp(same, raw), "check failed");
    free(same);
    /* basic: markup goes, numbers stay */
    char *basic = qtts_text_normalize("**3** km 😀", strlen("**3** km 😀"), "en", QTTS_NORM_BASIC, NULL, NULL);
    TEST_CHECK(basic && !strcmp(basic, "3 km"), "check failed");
    free(basic);
    /* fenced code: skipped by default, its lines read as plain text (no markdown) when asked */
    const char *md = "Run:\n\n```sh\n# 2 files\nrm -rf x && echo 5\n```\nDone.";
    qtts_norm_opts ro = {.read_code = 1};
    char *skipped = qtts_text_normalize(md, strlen(md), "en", QTTS_NORM_FULL, NULL, NULL);
    char *read = qtts_text_normalize_opts(md, strlen(md), "en", QTTS_NORM_FULL, &ro, NULL, NULL);
    TEST_CHECK(skipped && !strcmp(skipped, "Run:\n\nDone."), "code skipped: %s", skipped ? skipped : "");
    TEST_CHECK(read && !strcmp(read, "Run:\n\n# two files\nrm -rf x and echo five\nDone."), "code read: %s",
               read ? read : "");
    free(skipped), free(read);
    /* invalid UTF-8 and unknown languages are refused with a reason */
    qtts_err err = {0};
    TEST_CHECK(!qtts_text_normalize("a\xC3", 2, "en", QTTS_NORM_FULL, NULL, &err) && err.status == QTTS_ERR_INVALID, "check failed");
    TEST_CHECK(!qtts_text_normalize("a", 1, "xx", QTTS_NORM_FULL, NULL, &err) && strstr(err.msg, "xx"), "check failed");
    /* language guesses */
    TEST_CHECK(!strcmp(qtts_norm_detect("今日は", strlen("今日は"), "auto"), "ja"), "check failed");
    TEST_CHECK(!strcmp(qtts_norm_detect("你好世界", strlen("你好世界"), NULL), "zh"), "check failed");
    TEST_CHECK(!strcmp(qtts_norm_detect("안녕하세요", strlen("안녕하세요"), ""), "ko"), "check failed");
    TEST_CHECK(!strcmp(qtts_norm_detect("Привет мир", strlen("Привет мир"), NULL), "ru"), "check failed");
    TEST_CHECK(!strcmp(qtts_norm_detect("Grüße aus München", strlen("Grüße aus München"), NULL), "de"), "check failed");
    TEST_CHECK(!strcmp(qtts_norm_detect("Hello world", 11, NULL), "en"), "check failed");
    TEST_CHECK(!strcmp(qtts_norm_detect("x", 1, "German"), "de"), "check failed");
    /* mode names */
    TEST_CHECK(qtts_norm_mode_parse("full") == QTTS_NORM_FULL && qtts_norm_mode_parse("OFF") == QTTS_NORM_OFF &&
                   qtts_norm_mode_parse("basic") == QTTS_NORM_BASIC && qtts_norm_mode_parse("x") == -1,
               "mode names");
    return test_finish("test_normalize");
}
