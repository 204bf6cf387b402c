/* The text front end on text in pieces (qtts_norm_stream): for every case
 * of every language's table (tests/data/normalize) and for longer LLM-style
 * texts, feeding the text in 1-byte pieces and in random pieces (cut inside
 * UTF-8 sequences, numbers, links, markdown marks) gives exactly
 * qtts_text_normalize's output for the whole text; what is given out before
 * the end is always a prefix of it, and plain text is given out before the
 * end (it does not wait for all of it). Also: invalid UTF-8 in a piece,
 * a text that ends inside a sequence, `auto` guessing from the first
 * clause (and giving out text from then on), off mode. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "support/test_util.h"
#include "text/norm_lang.h"
#include "text/normalize.h"

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Feeds text in pieces: piece 0 = 1-byte pieces, else random lengths from
 * the seed. Returns the final text (malloc'd) or NULL; checks that every
 * partial output is a prefix of want. *early: bytes given out before the end. */
static char *feed(const char *text, const char *lang, qtts_norm_mode mode, uint64_t seed, const char *want,
                  size_t *early, int *prefix_ok) {
    qtts_err err = {0};
    qtts_norm_stream *s = qtts_norm_stream_new(lang, mode, &err);
    if (!s) return NULL;
    size_t n = strlen(text), p = 0;
    *prefix_ok = 1;
    *early = 0;
    while (p < n) {
        size_t k = seed ? 1 + rng_next(&seed) % 9 : 1;
        if (k > n - p) k = n - p;
        if (qtts_norm_stream_feed(s, text + p, k, 0, &err)) {
            printf("  feed failed: %s\n", err.msg);
            qtts_norm_stream_free(s);
            return NULL;
        }
        p += k;
        size_t len;
        const char *t = qtts_norm_stream_text(s, &len);
        if (want && (len > strlen(want) || memcmp(t, want, len))) *prefix_ok = 0;
        *early = len;
    }
    char *out = NULL;
    if (!qtts_norm_stream_feed(s, NULL, 0, 1, &err)) {
        size_t len;
        const char *t = qtts_norm_stream_text(s, &len);
        if ((out = malloc(len + 1))) memcpy(out, t, len), out[len] = 0;
    } else {
        printf("  close failed: %s\n", err.msg);
    }
    qtts_norm_stream_free(s);
    return out;
}

static int n_compared;

/* Whole vs 1-byte pieces vs several random splits. */
static void check_text(const char *text, const char *lang, qtts_norm_mode mode, const char *where) {
    qtts_err err = {0};
    char *want = qtts_text_normalize(text, strlen(text), lang, mode, NULL, &err);
    if (!want) {
        TEST_CHECK(0, "%s: whole text failed: %s", where, err.msg);
        return;
    }
    for (uint64_t seed = 0; seed < 6; seed++) {
        size_t early;
        int prefix_ok;
        char *got = feed(text, lang, mode, seed ? seed * 0x9E3779B97F4A7C15ull : 0, want, &early, &prefix_ok);
        int same = got && !strcmp(got, want);
        TEST_CHECK(same, "%s [%s] pieces %s:\n  input: %s\n  whole: %s\n  piece: %s", where, lang,
                   seed ? "random" : "of 1 byte", text, want, got ? got : "(failed)");
        TEST_CHECK(prefix_ok, "%s: a partial output is not a prefix of the whole one (input %s)", where, text);
        free(got);
        n_compared++;
        if (!same) break;
    }
    free(want);
}

static void run_table(const char *lang) {
    char path[512], line[4096], where[600];
    snprintf(path, sizeof path, "%s/tests/data/normalize/%s.tsv", QTTS_SOURCE_DIR, lang);
    FILE *f = fopen(path, "r");
    TEST_CHECK(f != NULL, "cannot open %s", path);
    if (!f) return;
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\r\n")] = 0;
        char *tab = strchr(line, '\t');
        if (!line[0] || line[0] == '#' || !tab) continue;
        *tab = 0;
        test_unescape(line);
        snprintf(where, sizeof where, "%s.tsv:%d", lang, lineno);
        check_text(line, lang, QTTS_NORM_FULL, where);
        check_text(line, lang, QTTS_NORM_BASIC, where);
    }
    fclose(f);
}

static const struct {
    const char *lang, *text;
} LONG[] = {
    {"en", "# Your order\n\nIt costs **$3.50** (or 1,234.5 points) and ships on 2026-03-05 at 14:30.\n"
           "- Weight: 2.5 kg, speed 100 km/h, 50 % off\n- See [the docs](https://example.com/a b) or <b>mail</b> "
           "john.smith@example.org\n\n```python\nprint(1 + 2)\n```\n| Item | Price |\n|---|---|\n| Tea | $2 |\n"
           "> Quoted 3/4 of the time, call +1 555-123-4567 now! Ages 5-10 & 1st place 😀 done.  "},
    {"en", "Plain words only, with commas, and an ending that goes on for a while without numbers at all"},
    {"en", "Dr. Smith lives at 221B Baker St. and owes €5, ¥1000 or 10 USD; -5 is less than 3.14. Temps: -5°C..."},
    {"de", "Es kostet 3,50 € und wiegt 1.234,5 kg. Am 2026-03-05 um 14:30 Uhr sind es 50 % weniger, Straße frei."},
    {"fr", "Il coûte 1 234,50 € et pèse 3 kg ; rendez-vous à 9:05, soit 25 % de plus — voilà."},
    {"ru", "Цена 5 рублей, 21 ₽ или 1 234,5 км; встреча в 14:30, скидка 50 %. Привет!"},
    {"zh", "我有2个苹果，花了¥5.5元，2026年3月去了3次，温度-5°C。你好！今天是2026-03-05，14:30见。"},
    {"ja", "今日は3回目です。価格は¥1,500、時間は14:30、距離は5 kmです。ありがとう！"},
    {"ko", "사과 3개를 샀어요. 가격은 ₩5,000이고 14:30에 만나요! 50% 할인."},
    {"es", "Cuesta 3,50 € y pesa 2 kg. ¿Vienes a las 14:30? ¡Sí, el 50 % seguro!"},
    {"it", "Costa 3,50 € e pesa 2 kg. Ci vediamo alle 14:30, più o meno il 50 % di volte."},
    {"pt", "Custa R$ 3,50 ou 3,50 € e pesa 2 kg. Às 14:30, 50 % de desconto, não é?"},
};

int main(void) {
    for (int i = 0; i < qtts_norm_lang_count(); i++) run_table(qtts_norm_lang_at(i)->code);
    for (size_t i = 0; i < sizeof LONG / sizeof LONG[0]; i++) {
        check_text(LONG[i].text, LONG[i].lang, QTTS_NORM_FULL, "long text");
        check_text(LONG[i].text, LONG[i].lang, QTTS_NORM_BASIC, "long text");
    }
    printf("compared %d piece feeds with the whole text\n", n_compared);

    /* plain text is given out before the end; a number split over pieces waits */
    size_t early;
    int ok;
    char *out = feed("Hello there my friend, how are you doing today", "en", QTTS_NORM_FULL, 0, NULL, &early, &ok);
    TEST_CHECK(out && early >= strlen("Hello there my friend, how are you doing"), "plain text waited: %zu bytes early", early);
    free(out);
    qtts_err err = {0};
    qtts_norm_stream *s = qtts_norm_stream_new("en", QTTS_NORM_FULL, &err);
    size_t len;
    TEST_CHECK(s && !qtts_norm_stream_feed(s, "It costs 1,23", 13, 0, &err), "feed");
    const char *t = qtts_norm_stream_text(s, &len);
    TEST_CHECK(len == 8 && !memcmp(t, "It costs", 8), "a number is held until complete (given out: %.*s)", (int)len, t);
    TEST_CHECK(!qtts_norm_stream_feed(s, "4.5 today", 9, 1, &err), "feed");
    t = qtts_norm_stream_text(s, &len);
    const char *want = "It costs one thousand two hundred thirty-four point five today";
    TEST_CHECK(len == strlen(want) && !memcmp(t, want, len), "got %.*s", (int)len, t);
    TEST_CHECK(qtts_norm_stream_feed(s, "x", 1, 0, &err) && err.status == QTTS_ERR_INVALID, "a complete text takes no more");
    qtts_norm_stream_free(s);

    /* a piece may end inside a UTF-8 sequence; invalid bytes fail */
    s = qtts_norm_stream_new("en", QTTS_NORM_FULL, &err);
    TEST_CHECK(s && !qtts_norm_stream_feed(s, "caf\xC3", 4, 0, &err), "a split sequence waits");
    TEST_CHECK(!qtts_norm_stream_feed(s, "\xA9 ok", 4, 1, &err), "and completes");
    t = qtts_norm_stream_text(s, &len);
    TEST_CHECK(len == strlen("café ok") && !memcmp(t, "café ok", len), "got %.*s", (int)len, t);
    qtts_norm_stream_free(s);
    s = qtts_norm_stream_new("en", QTTS_NORM_FULL, &err);
    err.status = QTTS_OK;
    TEST_CHECK(s && qtts_norm_stream_feed(s, "a\xFF b", 4, 0, &err) && err.status == QTTS_ERR_INVALID &&
                   strstr(err.msg, "byte 1"),
               "invalid UTF-8: %s", err.msg);
    TEST_CHECK(qtts_norm_stream_feed(s, "c", 1, 1, &err), "a failed stream stays failed");
    qtts_norm_stream_free(s);
    s = qtts_norm_stream_new("en", QTTS_NORM_FULL, &err);
    TEST_CHECK(s && !qtts_norm_stream_feed(s, "a\xE2\x82", 3, 0, &err) && qtts_norm_stream_feed(s, NULL, 0, 1, &err) &&
                   err.status == QTTS_ERR_INVALID,
               "a text that ends inside a sequence fails");
    qtts_norm_stream_free(s);
    TEST_CHECK(!qtts_norm_stream_new("xx", QTTS_NORM_FULL, &err) && strstr(err.msg, "xx"), "unknown language");
    /* no text at all (nothing appended, then the end): empty, as the whole text */
    s = qtts_norm_stream_new("auto", QTTS_NORM_FULL, &err);
    TEST_CHECK(s && !qtts_norm_stream_feed(s, NULL, 0, 1, &err), "an empty text closes: %s", err.msg);
    qtts_norm_stream_text(s, &len);
    TEST_CHECK(len == 0, "an empty text gives nothing (%zu bytes)", len);
    qtts_norm_stream_free(s);

    /* auto: guessed from the first sentence, then the same as the whole text when that agrees */
    check_text("Grüße aus München. Wir haben 3 Äpfel und 2,5 kg Mehl.", "auto", QTTS_NORM_FULL, "auto de");
    check_text("你好。我有2个苹果，3次。", "auto", QTTS_NORM_FULL, "auto zh");
    check_text("Short", "auto", QTTS_NORM_FULL, "auto short");
    /* auto speaks from the first clause on: an LLM's first words are not held until its first sentence ends */
    {
        static const char *const first[] = {"Hello there, ", "one two three four five six seven ", "你好，"};
        for (size_t i = 0; i < sizeof first / sizeof first[0]; i++) {
            s = qtts_norm_stream_new("auto", QTTS_NORM_FULL, &err);
            TEST_CHECK(s && !qtts_norm_stream_feed(s, first[i], strlen(first[i]), 0, &err), "auto feed: %s", err.msg);
            qtts_norm_stream_text(s, &len);
            TEST_CHECK(len > 0, "auto: '%s' is given out before the text ends (%zu bytes)", first[i], len);
            qtts_norm_stream_free(s);
        }
    }
    /* fenced code read as text: the same in pieces */
    {
        const char *md = "Run:\n\n```sh\n# 2 files\nrm -rf x && echo 5 kg\n- item 3\n```\nDone, 2 + 2.";
        qtts_norm_opts ro = {.read_code = 1};
        char *want = qtts_text_normalize_opts(md, strlen(md), "en", QTTS_NORM_FULL, &ro, NULL, NULL);
        for (size_t step = 1; step <= 4; step++) {
            qtts_norm_stream *rs = qtts_norm_stream_new("en", QTTS_NORM_FULL, &err);
            qtts_norm_stream_set_read_code(rs, 1);
            size_t n = strlen(md);
            for (size_t p = 0; p < n; p += step) qtts_norm_stream_feed(rs, md + p, p + step <= n ? step : n - p, 0, &err);
            int fed = !qtts_norm_stream_feed(rs, NULL, 0, 1, &err);
            const char *got = qtts_norm_stream_text(rs, &len);
            TEST_CHECK(fed && want && len == strlen(want) && !memcmp(got, want, len), "code read in pieces of %zu: %.*s",
                       step, (int)len, got);
            qtts_norm_stream_free(rs);
        }
        free(want);
    }
    /* 60 KB in 1-byte pieces, a line with no cut (digits) and one of words: each byte is scanned a bounded
     * number of times (printed, not asserted: no timing checks in unit tests) */
    for (int kind = 0; kind < 2; kind++) {
        size_t n = 60000;
        char *big = malloc(n + 1);
        for (size_t i = 0; big && i < n; i++) big[i] = kind ? "word "[i % 5] : (char)('0' + i % 10);
        if (!big) continue;
        big[n] = 0;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        s = qtts_norm_stream_new("en", QTTS_NORM_FULL, &err);
        int ok = s != NULL;
        for (size_t i = 0; ok && i < n; i++) ok = !qtts_norm_stream_feed(s, big + i, 1, 0, &err);
        ok = ok && !qtts_norm_stream_feed(s, NULL, 0, 1, &err);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        qtts_norm_stream_text(s, &len);
        TEST_CHECK(ok && len > 0, "60 KB in 1-byte pieces: %s", err.msg);
        printf("60 KB of %s in 1-byte pieces: %.0f ms\n", kind ? "words" : "digits",
               (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
        qtts_norm_stream_free(s);
        free(big);
    }
    /* off: the bytes as they are */
    check_text("  **Hi** 3 km\n\n```x```  ", "en", QTTS_NORM_OFF, "off");
    return test_finish("test_norm_stream");
}
