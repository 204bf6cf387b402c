/* Text tokenizer: every case of the golden text_tokenizer_cases.json and every
 * *_input_ids / *_ref_ids / *_instruct_ids fixture of the official processor
 * must come out identical (exact ids, no tolerance). Plus edge cases whose ids
 * come from an independent Python re-implementation of the slow HF
 * Qwen2Tokenizer (regex module; it reproduces all golden cases), BPE against
 * its O(n^2) reference twin, NFC, invalid UTF-8, broken tokenizer files, and
 * timings (printed, not asserted). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utf8proc.h>

#include "harness.h"
#include "io/json_util.h"
#include "support/npy.h"
#include "text/bpe.h"
#include "text/tokenizer.h"
#include "text/tokenizer_internal.h"

#define BASE_MODEL "Qwen3-TTS-12Hz-0.6B-Base-tiny"

/* CPU time of this thread: the build machine is shared, wall time is noise. */
static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static uint64_t rng_state = 0x243F6A8885A308D3ull;
static uint32_t rnd(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

/* Encodes and compares with want[0..nw). */
static void expect_ids(const qtts_tokenizer *tok, const char *text, size_t len, const int32_t *want, int nw,
                       const char *what) {
    qtts_err err = {0};
    int32_t *ids = NULL;
    int n = 0;
    if (qtts_tok_encode(tok, text, len, &ids, &n, &err)) {
        TEST_CHECK(0, "%s: encode failed: %s", what, err.msg);
        return;
    }
    if (n != nw) {
        TEST_CHECK(0, "%s: got %d ids, want %d", what, n, nw);
        for (int i = 0; i < n && i < 64; i++) fprintf(stderr, "%d ", ids[i]);
        fputc('\n', stderr);
    } else {
        TEST_EQUAL_I32(ids, want, (size_t)n, what);
    }
    free(ids);
}

/* decode(encode(text)) must give back NFC(text). */
static void expect_roundtrip(const qtts_tokenizer *tok, const char *text, size_t len, const char *what) {
    qtts_err err = {0};
    int32_t *ids = NULL;
    int n = 0;
    char *back = NULL;
    size_t blen = 0;
    utf8proc_uint8_t *nfc = NULL;
    utf8proc_ssize_t nl =
        utf8proc_map((const utf8proc_uint8_t *)text, (utf8proc_ssize_t)len, &nfc, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    int ok = nl >= 0 && qtts_tok_encode(tok, text, len, &ids, &n, &err) == 0 &&
             qtts_tok_decode(tok, ids, n, &back, &blen, &err) == 0;
    TEST_CHECK(ok && blen == (size_t)nl && !memcmp(back, nfc, blen), "%s: decode(encode(x)) != NFC(x) (%s)", what,
               err.msg);
    free(ids);
    free(back);
    free(nfc);
}

static void test_golden_cases(const qtts_tokenizer *tok) {
    char path[1024];
    qtts_err err = {0};
    cJSON *root = json_load_file(golden_path(path, sizeof path, "fixtures/text_tokenizer_cases.json"), &err);
    TEST_CHECK(root != NULL, "%s", err.msg);
    if (!root) return;
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(root, "cases"), *c;
    int total = 0, passed = 0;
    cJSON_ArrayForEach(c, cases) {
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(c, "text");
        const cJSON *want = cJSON_GetObjectItemCaseSensitive(c, "ids"), *w;
        if (!cJSON_IsString(text) || !cJSON_IsArray(want)) continue;
        int nw = cJSON_GetArraySize(want), k = 0;
        int32_t *wids = malloc(sizeof(int32_t) * (size_t)(nw + 1));
        cJSON_ArrayForEach(w, want) wids[k++] = (int32_t)w->valuedouble;
        int32_t *ids = NULL;
        int n = 0;
        int ok = qtts_tok_encode(tok, text->valuestring, strlen(text->valuestring), &ids, &n, &err) == 0 && n == nw &&
                 (n == 0 || !memcmp(ids, wids, sizeof(int32_t) * (size_t)n));
        total++;
        passed += ok;
        TEST_CHECK(ok, "golden case %d %.60s: ids differ (got %d ids, want %d)", total, text->valuestring, n, nw);
        expect_roundtrip(tok, text->valuestring, strlen(text->valuestring), "golden case round trip");
        free(ids);
        free(wids);
    }
    printf("  golden text cases: %d/%d identical\n", passed, total);
    TEST_CHECK(total >= 30, "expected the golden case list (got %d cases)", total);
    cJSON_Delete(root);
}

/* Parses the Python string literal after `key=` in s (the manifest's
 * produced_by call); returns a malloc'd UTF-8 string or NULL. */
static char *python_kwarg(const char *s, const char *key) {
    char pat[64];
    const char *p = NULL;
    for (const char *lead = "( "; *lead && !p; lead++) {
        snprintf(pat, sizeof pat, "%c%s=", *lead, key);
        p = strstr(s, pat);
    }
    if (!p) return NULL;
    p += strlen(pat);
    char q = *p;
    if (q != '\'' && q != '"') return NULL;
    char *out = malloc(strlen(p) * 4 + 1);
    size_t n = 0;
    for (p++; *p && *p != q; p++) {
        if (*p != '\\') {
            out[n++] = *p;
            continue;
        }
        p++;
        unsigned long cp = 0;
        int hex = 0;
        switch (*p) {
        case 'n': out[n++] = '\n'; break;
        case 't': out[n++] = '\t'; break;
        case 'r': out[n++] = '\r'; break;
        case 'x': hex = 2; break;
        case 'u': hex = 4; break;
        case 'U': hex = 8; break;
        case 0: free(out); return NULL;
        default: out[n++] = *p; break;
        }
        if (hex) {
            char buf[9] = {0};
            memcpy(buf, p + 1, (size_t)hex);
            cp = strtoul(buf, NULL, 16);
            p += hex;
            n += (size_t)utf8proc_encode_char((utf8proc_int32_t)cp, (utf8proc_uint8_t *)out + n);
        }
    }
    if (*p != q) {
        free(out);
        return NULL;
    }
    out[n] = 0;
    return out;
}

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

static void test_template_fixtures(const qtts_tokenizer *tok) {
    char path[1024];
    qtts_err err = {0};
    cJSON *root = json_load_file(golden_path(path, sizeof path, "manifest.json"), &err);
    TEST_CHECK(root != NULL, "%s", err.msg);
    if (!root) return;
    const cJSON *entries = cJSON_GetObjectItemCaseSensitive(root, "entries"), *e;
    int checked = 0, counts[3] = {0};
    cJSON_ArrayForEach(e, entries) {
        const char *file = json_str_or(e, "file", NULL), *by = json_str_or(e, "produced_by", NULL);
        if (!file || !by) continue;
        qtts_template_kind kind;
        const char *key;
        if (ends_with(file, "_input_ids.npy")) kind = QTTS_TEMPLATE_TARGET, key = "text";
        else if (ends_with(file, "_ref_ids.npy")) kind = QTTS_TEMPLATE_REF, key = "ref_text";
        else if (ends_with(file, "_instruct_ids.npy")) kind = QTTS_TEMPLATE_INSTRUCT, key = "instruct";
        else continue;
        char *text = python_kwarg(by, key);
        TEST_CHECK(text != NULL, "%s: cannot find %s= in the manifest's produced_by", file, key);
        npy_array want = {0};
        if (!text || npy_load(golden_path(path, sizeof path, file), &want)) {
            free(text);
            TEST_CHECK(0, "%s: cannot load", file);
            continue;
        }
        int32_t *ids = NULL;
        int n = 0;
        if (qtts_tok_encode_template(tok, kind, text, &ids, &n, &err)) {
            TEST_CHECK(0, "%s: %s", file, err.msg);
        } else if (n != want.numel) {
            TEST_CHECK(0, "%s: got %d ids, want %lld", file, n, (long long)want.numel);
        } else {
            TEST_EQUAL_I32(ids, want.i, (size_t)n, file);
            /* The model slices by position: [:3] role, text, then 5 (target) or 2 (ref/instruct) ids. */
            int tail = kind == QTTS_TEMPLATE_TARGET ? 5 : 2;
            TEST_CHECK(n > 3 + tail && ids[0] == 151644 && ids[2] == 198 && ids[n - tail] == 151645,
                       "%s: template layout", file);
        }
        counts[kind]++;
        checked++;
        free(ids);
        free(text);
        npy_free(&want);
    }
    printf("  template fixtures checked: %d (target %d, ref %d, instruct %d)\n", checked, counts[0], counts[1],
           counts[2]);
    TEST_CHECK(checked >= 16 && counts[0] && counts[1] && counts[2], "expected all template fixtures, found %d",
               checked);
    cJSON_Delete(root);
}

#define EXPECT(tok, lit, ...)                                                                              \
    do {                                                                                                   \
        static const int32_t want_[] = {__VA_ARGS__};                                                      \
        expect_ids(tok, lit, sizeof(lit) - 1, want_, (int)(sizeof want_ / sizeof want_[0]), #lit);         \
        expect_roundtrip(tok, lit, sizeof(lit) - 1, #lit);                                                 \
    } while (0)

static void test_edge_cases(const qtts_tokenizer *tok) {
    qtts_err err = {0};
    int32_t *ids = NULL;
    int n = -1;
    TEST_CHECK(qtts_tok_encode(tok, "", 0, &ids, &n, &err) == 0 && n == 0 && ids, "empty text gives no ids");
    free(ids);
    /* Expected ids from the Python reference (see the file comment). */
    EXPECT(tok, "\n\n \t ", 271, 65497);
    EXPECT(tok, "   ", 262);
    EXPECT(tok, "\n", 198);
    EXPECT(tok, "x \n y", 87, 715, 379);
    EXPECT(tok, "a\r\n\r\nb\n\r c\r", 64, 871, 65, 198, 201, 272, 201);
    EXPECT(tok, "\xF0\x9F\x91\xA9\xE2\x80\x8D\xE2\x9D\xA4\xEF\xB8\x8F\xE2\x80\x8D\xF0\x9F\x92\x8B\xE2\x80\x8D\xF0\x9F"
                "\x91\xA8 ok",
           145233, 378, 235, 141390, 30543, 378, 235, 145002, 378, 235, 145367, 5394);
    EXPECT(tok, "<|im_start|", 27, 91, 318, 4906, 91);
    EXPECT(tok, "<|im_start|>x<|im_end", 151644, 87, 27, 91, 318, 6213);
    EXPECT(tok, "<|im_end|><|im_end|>", 151645, 151645);
    EXPECT(tok, "<<|im_start|>>", 27, 151644, 29);
    EXPECT(tok, "a\0b", 64, 188, 65);
    EXPECT(tok, "日本語のテキスト、中文文本。한국어 텍스트", 101059, 102819, 15767, 56833, 61803, 70534, 5373, 104811,
           108704, 1773, 23573, 124785, 31079, 10764, 44104, 53189);
    EXPECT(tok, "Don't'S \xC5\xBF'\xC5\xBF", 8002, 944, 13272, 25917, 123, 6, 144815);
    /* \s is Unicode White_Space as in the reference engines: U+0085 is
     * whitespace, U+180E and U+FEFF are not (PCRE2's own \s disagrees). */
    EXPECT(tok, "a\xE1\xA0\x8E" "b c", 64, 123970, 236, 65, 272);
    EXPECT(tok, "a \xE1\xA0\x8E" "a", 64, 86089, 254, 236, 64);
    EXPECT(tok, "a\xC2\x85" "b \xC2\x85\xC2\x85" "c", 64, 126, 227, 65, 2139, 227, 126, 227, 66);
    EXPECT(tok, "x\xE3\x80\x80\xE3\x80\x80y\xEF\xBB\xBFz", 87, 22441, 22441, 88, 3225, 89);
    /* TTS added tokens are split out like the chat ones. */
    EXPECT(tok, "<tts_pad><tts_text_bos><tts_text_eod><tts_text_bos_single>", 151671, 151672, 151673, 151674);

    /* NFC: decomposed and precomposed spellings give the same ids. */
    int32_t *a = NULL, *b = NULL;
    int na = 0, nb = 0;
    const char *pairs[][2] = {{"caf\x65\xCC\x81 na\x69\xCC\x88ve", "caf\xC3\xA9 na\xC3\xAFve"},
                              {"\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8", "\xEA\xB0\x81"}, /* Hangul jamo -> syllable */
                              {"\xE2\x84\xAB", "\xC3\x85"}};                            /* Angstrom sign -> A-ring */
    for (int i = 0; i < 3; i++) {
        int ok = qtts_tok_encode(tok, pairs[i][0], strlen(pairs[i][0]), &a, &na, &err) == 0 &&
                 qtts_tok_encode(tok, pairs[i][1], strlen(pairs[i][1]), &b, &nb, &err) == 0 && na == nb &&
                 !memcmp(a, b, sizeof(int32_t) * (size_t)na);
        TEST_CHECK(ok, "NFC pair %d: ids differ", i);
        free(a);
        free(b);
        a = b = NULL;
    }

    /* Invalid UTF-8 is rejected with the offset, never encoded. */
    static const struct {
        const char *s;
        size_t off;
    } bad[] = {{"ok\xFF", 2},          {"\xC0\x80", 0},     {"ab\xED\xA0\x80", 2}, {"\xF4\x90\x80\x80", 0},
               {"x\xE4\xBD", 1},       {"\x80", 0},         {"\xC3", 0},           {"<|im_end|>\xFE", 10},
               {"\xF8\x88\x80\x80\x80", 0}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "offset %zu", bad[i].off);
        err.msg[0] = 0;
        ids = NULL;
        int rc = qtts_tok_encode(tok, bad[i].s, strlen(bad[i].s), &ids, &n, &err);
        TEST_CHECK(rc == -1 && ids == NULL && strstr(err.msg, "UTF-8") && strstr(err.msg, want),
                   "invalid UTF-8 case %zu: rc %d, message '%s'", i, rc, err.msg);
    }
    /* The template refuses invalid text too. */
    TEST_CHECK(qtts_tok_encode_template(tok, QTTS_TEMPLATE_TARGET, "\xFF", &ids, &n, &err) == -1,
               "template with invalid UTF-8 must fail");

    /* Official templates do not trim: a leading newline merges with the
     * template's own "\n" (ids[2] = 271 "\n\n"), as in the reference. */
    if (qtts_tok_encode_template(tok, QTTS_TEMPLATE_REF, "\nHello", &ids, &n, &err) == 0) {
        static const int32_t want[] = {151644, 77091, 271, 9707, 151645, 198};
        TEST_CHECK(n == 6 && !memcmp(ids, want, sizeof want), "template with a leading newline");
        free(ids);
    } else {
        TEST_CHECK(0, "template: %s", err.msg);
    }
    TEST_CHECK(qtts_tok_encode_template(tok, (qtts_template_kind)7, "x", &ids, &n, &err) == -1, "bad template kind");

    /* Lookups and decode. */
    TEST_CHECK(qtts_tok_token_id(tok, "<|im_start|>") == 151644 && qtts_tok_token_id(tok, "<tts_pad>") == 151671 &&
                   qtts_tok_token_id(tok, "assistant") == 77091 && qtts_tok_token_id(tok, "\xC4\x8A") == 198 &&
                   qtts_tok_token_id(tok, "no such token") == -1,
               "token id lookups");
    TEST_CHECK(qtts_tok_vocab_size(tok) == 151676, "vocab size %d", qtts_tok_vocab_size(tok));
    size_t l = 0;
    const char *s = qtts_tok_token_str(tok, 1879, &l);
    TEST_CHECK(s && l == 7 && !memcmp(s, "\xC4\xA0world", 7), "token string of 1879");
    TEST_CHECK(qtts_tok_token_str(tok, 151700, &l) == NULL && qtts_tok_token_str(tok, -1, &l) == NULL,
               "unknown ids have no string");
    TEST_CHECK(qtts_tok_is_added(tok, 151673) && !qtts_tok_is_added(tok, 198), "is_added");
    char *out = NULL;
    int32_t unknown = 151700;
    TEST_CHECK(qtts_tok_decode(tok, &unknown, 1, &out, &l, &err) == -1 && strstr(err.msg, "151700"),
               "decode of an unknown id fails");
}

static void test_bpe_twin(const qtts_tokenizer *tok) {
    const qtts_merges *m = qtts_tok_merges(tok);
    qtts_bpe_work w = {0};
    qtts_err err = {0};
    enum { MAXN = 6000 };
    int32_t *x = malloc(sizeof(int32_t) * MAXN), *y = malloc(sizeof(int32_t) * MAXN);
    unsigned char *bytes = malloc(MAXN);
    int mismatches = 0, runs = 0;
    for (int iter = 0; iter < 300; iter++) {
        int n = iter < 250 ? 1 + (int)(rnd() % 40) : 1000 + (int)(rnd() % 5000);
        int mode = (int)(rnd() % 5);
        for (int i = 0; i < n; i++) {
            switch (mode) {
            case 0: bytes[i] = (unsigned char)('a' + rnd() % 26); break;
            case 1: bytes[i] = (unsigned char)("ab "[rnd() % 3]); break;
            case 2: bytes[i] = (unsigned char)(rnd() & 0xFF); break;
            case 3: bytes[i] = "\xE4\xB8\xAD\xE6\x96\x87"[i % 6]; break; /* repeated CJK bytes */
            default: bytes[i] = (unsigned char)(i % 7 == 0 ? ' ' : 'e'); break;
            }
        }
        for (int i = 0; i < n; i++) x[i] = y[i] = qtts_tok_byte_id(tok, bytes[i]);
        int nx = qtts_bpe_merge(m, &w, x, n, &err);
        int ny = qtts_bpe_merge_reference(m, y, n);
        runs++;
        if (nx != ny || memcmp(x, y, sizeof(int32_t) * (size_t)nx)) mismatches++;
    }
    TEST_CHECK(mismatches == 0, "heap BPE differs from the reference twin on %d of %d inputs", mismatches, runs);
    printf("  BPE vs reference twin: %d inputs, %d mismatches\n", runs, mismatches);
    free(x);
    free(y);
    free(bytes);
    qtts_bpe_work_free(&w);
}

static void test_long_inputs(const qtts_tokenizer *tok) {
    enum { WORD = 100 * 1024 };
    char *buf = malloc(WORD + 1);
    qtts_err err = {0};
    int32_t *ids = NULL;
    int n = 0;

    /* 100 KB single word of random letters: one regex piece, one BPE run. */
    for (int i = 0; i < WORD; i++) buf[i] = (char)('a' + rnd() % 26);
    double t0 = now_ms();
    int rc = qtts_tok_encode(tok, buf, WORD, &ids, &n, &err);
    double t1 = now_ms();
    TEST_CHECK(rc == 0, "100 KB word: %s", err.msg);
    printf("  100 KB single word: %d ids in %.1f ms CPU\n", n, t1 - t0);
    free(ids);
    expect_roundtrip(tok, buf, WORD, "100 KB word round trip");

    /* 100 KB of one letter, checked against the reference twin. */
    memset(buf, 'a', WORD);
    rc = qtts_tok_encode(tok, buf, WORD, &ids, &n, &err);
    int32_t *ref = malloc(sizeof(int32_t) * WORD);
    for (int i = 0; i < WORD; i++) ref[i] = qtts_tok_byte_id(tok, 'a');
    int nr = qtts_bpe_merge_reference(qtts_tok_merges(tok), ref, WORD);
    TEST_CHECK(rc == 0 && n == nr && !memcmp(ids, ref, sizeof(int32_t) * (size_t)n), "100 KB 'aaa...' vs reference");
    free(ids);
    free(ref);

    /* 100 KB of whitespace (spaces then newlines) then a word. */
    for (int i = 0; i < WORD; i++) buf[i] = i < WORD / 2 ? ' ' : (i % 3 ? '\n' : '\r');
    memcpy(buf + WORD - 3, "end", 3);
    t0 = now_ms();
    rc = qtts_tok_encode(tok, buf, WORD, &ids, &n, &err);
    t1 = now_ms();
    TEST_CHECK(rc == 0, "100 KB whitespace: %s", err.msg);
    printf("  100 KB whitespace run: %d ids in %.1f ms CPU\n", n, t1 - t0);
    free(ids);
    expect_roundtrip(tok, buf, WORD, "100 KB whitespace round trip");
    free(buf);
}

/* Appends one random "word" of mixed scripts. */
static size_t random_word(char *p) {
    static const char *const punct[] = {",", ".", "!", "?", ";", ":", "\"", "(", ")", "-", "...", "'s", "'ll"};
    uint32_t r = rnd() % 100;
    size_t n = 0;
    if (r < 60) {
        if (rnd() % 10 < 8) p[n++] = ' ';
        int len = 1 + (int)(rnd() % 9);
        for (int i = 0; i < len; i++) p[n++] = (char)((i == 0 && rnd() % 5 == 0 ? 'A' : 'a') + rnd() % 26);
    } else if (r < 72) {
        const char *s = punct[rnd() % (sizeof punct / sizeof punct[0])];
        memcpy(p, s, strlen(s));
        n = strlen(s);
    } else if (r < 78) {
        int len = 1 + (int)(rnd() % 5);
        for (int i = 0; i < len; i++) p[n++] = (char)('0' + rnd() % 10);
    } else if (r < 92) {
        int len = 1 + (int)(rnd() % 6);
        for (int i = 0; i < len; i++)
            n += (size_t)utf8proc_encode_char((utf8proc_int32_t)(0x4E00 + rnd() % 0x5000), (utf8proc_uint8_t *)p + n);
    } else if (r < 96) {
        if (rnd() % 2) p[n++] = ' ';
        int len = 2 + (int)(rnd() % 8);
        for (int i = 0; i < len; i++)
            n += (size_t)utf8proc_encode_char((utf8proc_int32_t)(0x430 + rnd() % 32), (utf8proc_uint8_t *)p + n);
    } else if (r < 98) {
        n += (size_t)utf8proc_encode_char((utf8proc_int32_t)(0x1F600 + rnd() % 64), (utf8proc_uint8_t *)p + n);
    } else {
        p[n++] = '\n';
    }
    return n;
}

static void test_throughput(const qtts_tokenizer *tok) {
    enum { SIZE = 2 << 20 };
    char *buf = malloc(SIZE + 64);
    size_t len = 0;
    while (len < SIZE) len += random_word(buf + len);
    qtts_err err = {0};
    int32_t *ids = NULL;
    int n = 0;
    double t0 = now_ms();
    int rc = qtts_tok_encode(tok, buf, len, &ids, &n, &err);
    double t1 = now_ms();
    TEST_CHECK(rc == 0, "throughput text: %s", err.msg);
    printf("  throughput, random mixed words (en/zh/ru/digits/emoji): %.2f MB in %.1f ms CPU = %.1f MB/s, %d ids\n",
           len / 1e6, t1 - t0, len / 1e3 / (t1 - t0), n);
    free(ids);
    expect_roundtrip(tok, buf, len, "mixed text round trip");

    /* Natural text: the golden sentences repeated. */
    char path[1024];
    cJSON *root = json_load_file(golden_path(path, sizeof path, "fixtures/text_tokenizer_cases.json"), &err);
    const cJSON *c;
    len = 0;
    while (root && len < SIZE) {
        size_t before = len;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(root, "cases")) {
            const char *s = json_str_or(c, "text", "");
            size_t l = strlen(s);
            if (len + l + 1 > SIZE) break;
            memcpy(buf + len, s, l);
            len += l;
            buf[len++] = '\n';
        }
        if (len == before) break;
    }
    cJSON_Delete(root);
    t0 = now_ms();
    rc = qtts_tok_encode(tok, buf, len, &ids, &n, &err);
    t1 = now_ms();
    TEST_CHECK(rc == 0, "natural text: %s", err.msg);
    printf("  throughput, golden sentences repeated: %.2f MB in %.1f ms CPU = %.1f MB/s\n", len / 1e6, t1 - t0,
           len / 1e3 / (t1 - t0));
    free(ids);
    free(buf);
}

static void write_text(const char *path, const char *s) {
    FILE *f = fopen(path, "wb");
    if (f) {
        fputs(s, f);
        fclose(f);
    }
}

static void expect_load_error(const char *dir, const char *needle, const char *what) {
    qtts_err err = {0};
    qtts_tokenizer *t = qtts_tok_load(dir, &err);
    TEST_CHECK(t == NULL && strstr(err.msg, needle), "%s: expected an error containing '%s', got '%s'", what, needle,
               t ? "(loaded)" : err.msg);
    qtts_tok_free(t);
}

static void test_bad_files(const qtts_tokenizer *good) {
    char dir[] = "/tmp/qtts_tok_XXXXXX";
    if (!mkdtemp(dir)) {
        TEST_CHECK(0, "mkdtemp failed");
        return;
    }
    char v[256], m[256], c[256], src[1024];
    snprintf(v, sizeof v, "%s/vocab.json", dir);
    snprintf(m, sizeof m, "%s/merges.txt", dir);
    snprintf(c, sizeof c, "%s/tokenizer_config.json", dir);
    expect_load_error(dir, "vocab.json", "missing files");

    /* A tiny byte-level vocab: the 256 byte symbols, one merge. */
    size_t cap = 1 << 16, len = 0;
    char *vocab = malloc(cap);
    len += (size_t)snprintf(vocab + len, cap - len, "{");
    for (int b = 0; b < 256; b++) {
        /* GPT-2 bytes_to_unicode, written as \u escapes to exercise the scanner. */
        unsigned u = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE ? (unsigned)b
                     : b <= 0x20                                                        ? 0x100u + (unsigned)b
                     : b <= 0xA0                                                        ? 0x121u + (unsigned)b - 0x7F
                                                                                        : 0x143u;
        len += (size_t)snprintf(vocab + len, cap - len, "%s\"\\u%04x\": %d", b ? ", " : "", u, b);
    }
    len += (size_t)snprintf(vocab + len, cap - len, ", \"ab\": 256}");
    write_text(v, vocab);
    write_text(m, "#version: 0.2\na b\n\n");
    /* Added-token flags as HF applies them: lstrip/rstrip absorb whitespace,
     * single_word refuses to match inside a word, normalized=true tokens
     * (the default for non-special ones) match after NFC. */
    write_text(c, "{\"added_tokens_decoder\": {\"300\": {\"content\": \"<x>\", \"special\": true},"
                  " \"301\": {\"content\": \"<l>\", \"lstrip\": true, \"special\": true},"
                  " \"302\": {\"content\": \"<r>\", \"rstrip\": true, \"special\": true},"
                  " \"303\": {\"content\": \"<w>\", \"single_word\": true, \"special\": true},"
                  " \"304\": {\"content\": \"\\u00e9\", \"special\": false}}}");
    qtts_err err = {0};
    qtts_tokenizer *t = qtts_tok_load(dir, &err);
    TEST_CHECK(t != NULL, "tiny tokenizer with a #version header: %s", err.msg);
    if (t) {
        /* "ab" merges to 256, "<x>" is added token 300, 'a' and ',' are their own bytes. */
        int32_t *ids = NULL;
        int n = 0;
        TEST_CHECK(qtts_tok_encode(t, "ab<x>a,", 7, &ids, &n, &err) == 0 && n == 4 && ids[0] == 256 &&
                       ids[1] == 300 && ids[2] == 'a' && ids[3] == ',',
                   "tiny tokenizer encode");
        free(ids);
        static const int32_t flags_want[] = {97, 301, 98, 302, 99, 60, 119, 62, 100, 32, 303, 32, 304};
        const char *flags_text = "a <l>b<r>  c<w>d <w> e\xCC\x81";
        TEST_CHECK(qtts_tok_encode(t, flags_text, strlen(flags_text), &ids, &n, &err) == 0 && n == 13 &&
                       !memcmp(ids, flags_want, sizeof flags_want),
                   "added-token lstrip/rstrip/single_word/normalized flags");
        free(ids);
        TEST_CHECK(qtts_tok_encode_template(t, QTTS_TEMPLATE_TARGET, "x", &ids, &n, &err) == -1 &&
                       strstr(err.msg, "im_start"),
                   "template without <|im_start|> fails: %s", err.msg);
        qtts_tok_free(t);
    }
    free(vocab);

    write_text(m, "a zz\n");
    expect_load_error(dir, "merges.txt:1", "merge of an unknown token");
    write_text(m, "a b c\n");
    expect_load_error(dir, "merges.txt:1", "three tokens on a merge line");
    write_text(m, "b a\n");
    expect_load_error(dir, "not in vocab.json", "merge result missing from the vocab");
    write_text(m, "a b\n");
    write_text(c, "{\"added_tokens_decoder\": {\"x1\": {\"content\": \"<x>\"}}}");
    expect_load_error(dir, "tokenizer_config.json", "bad added token id");
    write_text(c, "{\"added_tokens_decoder\": {\"5\": {\"lstrip\": false}}}");
    expect_load_error(dir, "content", "added token without content");
    write_text(c, "{\"added_tokens_decoder\": ");
    expect_load_error(dir, "tokenizer_config.json", "truncated config");
    unlink(c);
    write_text(v, "{\"a\": 0, \"a\": 1}");
    expect_load_error(dir, "duplicate", "duplicate vocab key");
    write_text(v, "{\"a\": 0}");
    expect_load_error(dir, "byte 0x00", "vocab without byte tokens");
    write_text(v, "{\"a\": -1}");
    expect_load_error(dir, "vocab.json", "negative id");
    write_text(v, "{\"a\" 1}");
    expect_load_error(dir, "expected ':'", "missing colon");
    write_text(v, "{\"\\ud800\": 1}");
    expect_load_error(dir, "surrogate", "lone surrogate");
    write_text(v, "{\"a\": 99999999}");
    expect_load_error(dir, "too large", "huge id");
    write_text(v, "[]");
    expect_load_error(dir, "expected '{'", "not an object");
    write_text(v, "{}");
    expect_load_error(dir, "empty", "empty vocab");

    /* The real files with a #version header on merges.txt load and agree. */
    golden_path(src, sizeof src, BASE_MODEL "/vocab.json");
    unlink(v);
    TEST_CHECK(symlink(src, v) == 0, "symlink vocab.json");
    golden_path(src, sizeof src, BASE_MODEL "/tokenizer_config.json");
    TEST_CHECK(symlink(src, c) == 0, "symlink tokenizer_config.json");
    golden_path(src, sizeof src, BASE_MODEL "/merges.txt");
    FILE *in = fopen(src, "rb"), *out = fopen(m, "wb");
    if (in && out) {
        fputs("#version: 0.2\r\n", out);
        char chunk[65536];
        size_t got;
        while ((got = fread(chunk, 1, sizeof chunk, in)) > 0) fwrite(chunk, 1, got, out);
    }
    if (in) fclose(in);
    if (out) fclose(out);
    t = qtts_tok_load(dir, &err);
    TEST_CHECK(t != NULL, "real files with a #version header: %s", err.msg);
    if (t) {
        const char *text = "Hello, world. This is a test of the Qwen3 TTS tokenizer. 我叫通义千问";
        int32_t *a = NULL, *b = NULL;
        int na = 0, nb = 0;
        TEST_CHECK(qtts_tok_encode(t, text, strlen(text), &a, &na, &err) == 0 &&
                       qtts_tok_encode(good, text, strlen(text), &b, &nb, &err) == 0 && na == nb &&
                       !memcmp(a, b, sizeof(int32_t) * (size_t)na),
                   "#version header changes nothing");
        free(a);
        free(b);
        qtts_tok_free(t);
    }
    unlink(v);
    unlink(m);
    unlink(c);
    rmdir(dir);
}

/* Runs the qtts binary; returns its exit status and its first output line. */
static int run_cli(const char *args, char *out, size_t size) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s 2>&1", QTTS_BINARY, args);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    out[0] = 0;
    if (!fgets(out, (int)size, p)) out[0] = 0;
    char sink[256];
    while (fgets(sink, sizeof sink, p)) {
    }
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_cli(void) {
    char dir[1024], args[2048], out[4096];
    golden_path(dir, sizeof dir, BASE_MODEL);
    snprintf(args, sizeof args, "tokenize -m '%s' 'Hello world!'", dir);
    TEST_CHECK(run_cli(args, out, sizeof out) == 0 && !strcmp(out, "[9707, 1879, 0]\n"), "qtts tokenize: '%s'", out);
    snprintf(args, sizeof args, "tokenize -m '%s' --tokens 'Hello world!'", dir);
    TEST_CHECK(run_cli(args, out, sizeof out) == 0 &&
                   !strcmp(out, "{\"ids\": [9707, 1879, 0], \"tokens\": [\"Hello\", \"\xC4\xA0world\", \"!\"]}\n"),
               "qtts tokenize --tokens: '%s'", out);
    snprintf(args, sizeof args, "tokenize -m '%s' --template ref 'The quick brown fox.'", dir);
    TEST_CHECK(run_cli(args, out, sizeof out) == 0 &&
                   !strcmp(out, "[151644, 77091, 198, 785, 3974, 13876, 38835, 13, 151645, 198]\n"),
               "qtts tokenize --template ref: '%s'", out);
    snprintf(args, sizeof args, "tokenize -m '%s' < /dev/null", dir);
    TEST_CHECK(run_cli(args, out, sizeof out) == 0 && !strcmp(out, "[]\n"), "qtts tokenize of empty stdin: '%s'", out);
    snprintf(args, sizeof args, "tokenize -m '%s' \"$(printf 'a\\377')\"", dir);
    TEST_CHECK(run_cli(args, out, sizeof out) == 1 && strstr(out, "UTF-8"), "invalid UTF-8 on the command line: '%s'",
               out);
    TEST_CHECK(run_cli("tokenize -m /nonexistent/folder x", out, sizeof out) == 1 && strstr(out, "/nonexistent"),
               "missing model folder: '%s'", out);
    TEST_CHECK(run_cli("tokenize --bogus", out, sizeof out) == 2, "unknown option exits 2");
    TEST_CHECK(run_cli("tokenize --help", out, sizeof out) == 0 && strstr(out, "usage"), "tokenize --help");
}

int main(void) {
    char dir[1024];
    golden_path(dir, sizeof dir, BASE_MODEL);
    qtts_err err = {0};
    double t0 = now_ms();
    qtts_tokenizer *tok = qtts_tok_load(dir, &err);
    double t1 = now_ms();
    TEST_CHECK(tok != NULL, "load %s: %s", dir, err.msg);
    if (!tok) return test_finish("test_tokenizer");
    printf("  load (vocab.json + merges.txt + tokenizer_config.json): %.1f ms CPU\n", t1 - t0);

    test_golden_cases(tok);
    test_template_fixtures(tok);
    test_edge_cases(tok);
    test_bpe_twin(tok);
    test_long_inputs(tok);
    test_throughput(tok);
    test_bad_files(tok);
    test_cli();

    /* The other model folders ship the same tokenizer. */
    const char *others[] = {"Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny", "Qwen3-TTS-12Hz-1.7B-VoiceDesign-tiny"};
    for (int i = 0; i < 2; i++) {
        golden_path(dir, sizeof dir, others[i]);
        qtts_tokenizer *o = qtts_tok_load(dir, &err);
        TEST_CHECK(o != NULL && qtts_tok_vocab_size(o) == qtts_tok_vocab_size(tok), "load %s: %s", others[i],
                   o ? "" : err.msg);
        qtts_tok_free(o);
    }
    qtts_tok_free(tok);
    return test_finish("test_tokenizer");
}
