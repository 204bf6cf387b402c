/* Long-text splitter: expected chunk boundaries on hand-made cases, and the
 * no-loss/no-duplication invariants on randomized text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "text/split.h"

/* Splits and returns the chunks joined by " | " (normalized), for compact checks. */
static char *split_join(const char *text, int max, int cjk_w, int by_line, long *count) {
    qtts_split_params p = {max, cjk_w, by_line};
    qtts_text_chunk *c = NULL;
    qtts_err err = {0};
    long n = qtts_text_split(text, strlen(text), &p, &c, &err);
    *count = n;
    size_t cap = strlen(text) * 2 + 16 + (n > 0 ? (size_t)n * 3 : 0);
    char *out = calloc(1, cap);
    for (long i = 0; i < n; i++) {
        char *t = qtts_text_chunk_dup(text, c[i], &err);
        if (i) strcat(out, " | ");
        strcat(out, t);
        free(t);
    }
    free(c);
    return out;
}

static void expect(const char *text, int max, int cjk_w, int by_line, const char *want, const char *what) {
    long n;
    char *got = split_join(text, max, cjk_w, by_line, &n);
    TEST_CHECK(!strcmp(got, want), "%s:\n    got  [%s]\n    want [%s]", what, got, want);
    if (!strcmp(got, want)) printf("  ok   %s (%ld chunks)\n", what, n);
    free(got);
}

static void test_cases(void) {
    expect("Hello world. How are you? I'm fine!", 20, 3, 0, "Hello world. | How are you? | I'm fine!", "sentences");
    expect("Hello world. How are you? I'm fine!", 300, 3, 0, "Hello world. How are you? I'm fine!",
           "short text stays one chunk");
    expect("Hello world. How are you? I'm fine!", 25, 3, 0, "Hello world. How are you? | I'm fine!",
           "greedy packing");
    expect("Pi is 3.14 today. Mr. Smith said hi.", 18, 3, 0, "Pi is 3.14 today. | Mr. Smith said hi.",
           "decimals and abbreviations");
    expect("He said \"Stop!\" Then he left.", 16, 3, 0, "He said \"Stop!\" | Then he left.", "closing quote stays");
    expect("Wait... what?! Really.", 10, 3, 0, "Wait... | what?! | Really.", "punctuation runs");
    expect("One; two; three.", 6, 3, 0, "One; | two; | three.", "semicolons");
    expect("你好。今天天气很好！我们去公园吧？", 7, 1, 0, "你好。 | 今天天气很好！ | 我们去公园吧？", "CJK sentences");
    expect("你好。今天天气很好！我们去公园吧？", 30, 3, 0, "你好。今天天气很好！ | 我们去公园吧？",
           "CJK weight 3 packing");
    expect("今日は晴れです。散歩に行きましょう。", 100, 3, 0, "今日は晴れです。散歩に行きましょう。", "Japanese fits");
    expect("First para one. Still one.\n\nSecond para.", 300, 3, 0, "First para one. Still one. | Second para.",
           "blank line forces a break");
    expect("line one\nline two\nline three", 300, 3, 0, "line one line two line three",
           "single newlines pack (joined with spaces)");
    expect("line one\nline two\n\n\n  \nline three\r\nline four", 300, 3, 1,
           "line one | line two | line three | line four", "by-line mode skips empty lines");
    expect("alpha beta, gamma delta, epsilon zeta, eta theta", 26, 3, 0,
           "alpha beta, gamma delta, | epsilon zeta, eta theta", "comma fallback");
    expect("一二三四五六七八九十", 12, 3, 0, "一二三四 | 五六七八 | 九十", "unpunctuated CJK hard cuts");
    expect("", 10, 3, 0, "", "empty text");
    expect(" \n\t \n ", 10, 3, 0, "", "whitespace only");
    expect("a  \t b\n c", 300, 3, 0, "a b c", "whitespace runs collapse in chunk text");
    expect("e\xcc\x81\xcc\x81\xcc\x81 x", 1, 1, 0, "e\xcc\x81\xcc\x81\xcc\x81 | x", "no cut before combining marks");
}

/* The span invariants; returns 1 if all hold. */
static int is_ws_ascii(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static size_t ws_len(const char *t, size_t i, size_t n) { /* whitespace we generate, at t[i] */
    if (i < n && is_ws_ascii((unsigned char)t[i])) return 1;
    if (i + 2 < n && !memcmp(t + i, "\xe3\x80\x80", 3)) return 3; /* U+3000 */
    return 0;
}

static int check_invariants(const char *t, size_t n, const qtts_text_chunk *c, long nc, int max, int cjk_w, int valid,
                            const char *what) {
    size_t pos = 0;
    for (long i = 0; i < nc; i++) {
        if (c[i].len == 0 || c[i].start < pos || c[i].start + c[i].len > n) {
            fprintf(stderr, "%s: chunk %ld bad range [%zu,+%zu) after %zu\n", what, i, c[i].start, c[i].len, pos);
            return 0;
        }
        while (pos < c[i].start) { /* the gap must be whitespace */
            size_t k = ws_len(t, pos, n);
            if (!k) {
                fprintf(stderr, "%s: text lost before chunk %ld at byte %zu\n", what, i, pos);
                return 0;
            }
            pos += k;
        }
        if (pos != c[i].start) {
            fprintf(stderr, "%s: chunk %ld starts inside a character\n", what, i);
            return 0;
        }
        if (ws_len(t, c[i].start, n) || is_ws_ascii((unsigned char)t[c[i].start + c[i].len - 1])) {
            fprintf(stderr, "%s: chunk %ld not trimmed\n", what, i);
            return 0;
        }
        if (i > 0 && c[i].start == c[i - 1].start + c[i - 1].len &&
            (!memcmp(t + c[i].start, "\xcc\x81", 2) || !memcmp(t + c[i].start, "\xf0\x9f\x8f\xbd", 4))) {
            fprintf(stderr, "%s: chunk %ld starts with a combining mark / modifier\n", what, i);
            return 0;
        }
        if (valid && ((unsigned char)t[c[i].start] & 0xC0) == 0x80) {
            fprintf(stderr, "%s: chunk %ld starts in a UTF-8 sequence\n", what, i);
            return 0;
        }
        size_t units = qtts_text_units(t + c[i].start, c[i].len, cjk_w);
        if ((int)units > max && units > (size_t)cjk_w + 3) { /* one over-wide cluster may exceed a tiny max */
            fprintf(stderr, "%s: chunk %ld has %zu units > max %d\n", what, i, units, max);
            return 0;
        }
        pos = c[i].start + c[i].len;
    }
    while (pos < n) {
        size_t k = ws_len(t, pos, n);
        if (!k) {
            fprintf(stderr, "%s: text lost after the last chunk at byte %zu\n", what, pos);
            return 0;
        }
        pos += k;
    }
    return 1;
}

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

static void test_random(void) {
    static const char *const pieces[] = {
        "a", "b", "word", "Hello", "3.14", "Mr.", ".", "!", "?", ";", ",", ":", "...", "\"", ")", " ", " ", " ",
        "\n", "\n\n", "\t", "\r\n", "你", "好", "。", "！", "，", "、", "가", "나", "é", "e\xcc\x81", "\xe2\x80\x94",
        "\xe3\x80\x80", "\xf0\x9f\x98\x80", "\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd", "\xe2\x80\xa6", "「", "」"};
    const size_t np = sizeof pieces / sizeof pieces[0];
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    int ok = 1, runs = 0;
    for (int iter = 0; iter < 400 && ok; iter++) {
        size_t len = 0, target = (size_t)(rng_next(&seed) % 3000);
        char *t = malloc(target + 16);
        while (len < target) {
            const char *p = pieces[rng_next(&seed) % np];
            size_t k = strlen(p);
            memcpy(t + len, p, k);
            len += k;
        }
        int invalid = iter % 10 == 9;
        if (invalid && len) t[rng_next(&seed) % len] = (char)0xFF; /* an invalid byte must survive too */
        t[len] = 0;
        int max = 1 + (int)(rng_next(&seed) % 200), cjk_w = 1 + (int)(rng_next(&seed) % 3);
        qtts_split_params p = {max, cjk_w, (int)(iter % 3 == 0)};
        qtts_text_chunk *c = NULL;
        qtts_err err = {0};
        long nc = qtts_text_split(t, len, &p, &c, &err);
        char what[96];
        snprintf(what, sizeof what, "random text %d (len %zu, max %d, cjk %d, by_line %d)", iter, len, max, cjk_w,
                 p.by_line);
        ok = nc >= 0 && check_invariants(t, len, c, nc, max, cjk_w, !invalid, what);
        TEST_CHECK(ok, "%s: invariants violated", what);
        runs++;
        free(c);
        free(t);
    }
    if (ok) printf("  ok   %d random texts: ordered, trimmed, nothing lost or duplicated, within budget\n", runs);
}

static void test_long(void) {
    /* 20k words with no punctuation at all. */
    size_t n = 0, cap = 200000;
    char *t = malloc(cap);
    for (int i = 0; i < 20000; i++) n += (size_t)snprintf(t + n, cap - n, "word%d ", i);
    qtts_split_params p = {80, 3, 0};
    qtts_text_chunk *c = NULL;
    qtts_err err = {0};
    long nc = qtts_text_split(t, n, &p, &c, &err);
    TEST_CHECK(nc > 1000 && check_invariants(t, n, c, nc, 80, 3, 1, "long unpunctuated"), "long text: %ld chunks", nc);
    int whole_words = 1;
    for (long i = 0; i < nc; i++) {
        size_t e = c[i].start + c[i].len;
        if (e < n && t[e] != ' ') whole_words = 0;
    }
    TEST_CHECK(whole_words, "long text cut inside a word although spaces exist");
    free(c);
    free(t);

    /* 3000 Han characters without punctuation. */
    n = 0;
    t = malloc(3000 * 3 + 1);
    for (int i = 0; i < 3000; i++) memcpy(t + n, i % 2 ? "的" : "中", 3), n += 3;
    p.max_chars = 60;
    nc = qtts_text_split(t, n, &p, &c, &err);
    TEST_CHECK(nc == 150 && check_invariants(t, n, c, nc, 60, 3, 1, "long CJK"), "long CJK: %ld chunks (want 150)", nc);
    free(c);
    free(t);
}

int main(void) {
    test_cases();
    test_random();
    test_long();
    return test_finish("test_split");
}
