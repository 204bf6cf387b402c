/* Wyoming framing (src/server/wyoming_frame.c): events out of a byte stream
 * cut anywhere (every split point, byte by byte), inline data merged with
 * the data block, payloads holding any bytes, and every malformed input a
 * protocol error with a clear message: bad JSON, not an object, no type,
 * bad lengths, over-limit header / data / payload, binary bytes where a
 * header belongs. The writer's output parses back to the same event. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "server/wyoming_frame.h"

/* The events of a stream, flattened for comparison: "type|data|payload-hex;" */
typedef struct {
    char *s;
    size_t n, cap;
    int rc; /* last wy_reader_next result: -1 error, else 0 */
    char error[256];
} transcript;

static void tr_add(transcript *t, const char *p, size_t n) {
    if (t->n + n + 1 > t->cap) {
        size_t nc = t->cap ? t->cap : 256;
        while (nc < t->n + n + 1) nc *= 2;
        char *q = realloc(t->s, nc);
        if (!q) abort();
        t->s = q;
        t->cap = nc;
    }
    memcpy(t->s + t->n, p, n);
    t->n += n;
    t->s[t->n] = 0;
}

static void tr_event(transcript *t, const wy_event *ev) {
    char *d = cJSON_PrintUnformatted(ev->data);
    tr_add(t, ev->type, strlen(ev->type));
    tr_add(t, "|", 1);
    if (d) tr_add(t, d, strlen(d));
    tr_add(t, "|", 1);
    for (size_t i = 0; i < ev->payload_len; i++) {
        char hx[3];
        snprintf(hx, sizeof hx, "%02x", ev->payload[i]);
        tr_add(t, hx, 2);
    }
    tr_add(t, ";", 1);
    free(d);
}

/* Feeds bytes[0..n) in pieces ending at the given cuts (ascending), taking
 * events after each piece. */
static transcript run_cuts(const unsigned char *bytes, size_t n, const size_t *cuts, int n_cuts, wy_reader *lim) {
    transcript t = {0};
    wy_reader r;
    wy_reader_init(&r);
    if (lim) {
        r.max_header = lim->max_header;
        r.max_data = lim->max_data;
        r.max_payload = lim->max_payload;
    }
    size_t at = 0;
    for (int c = 0; c <= n_cuts && t.rc == 0; c++) {
        size_t end = c < n_cuts ? cuts[c] : n;
        if (end > at && wy_reader_feed(&r, bytes + at, end - at)) abort();
        at = end;
        for (;;) {
            wy_event ev;
            int rc = wy_reader_next(&r, &ev);
            if (rc < 0) {
                t.rc = -1;
                snprintf(t.error, sizeof t.error, "%s", r.error);
                break;
            }
            if (rc == 0) break;
            tr_event(&t, &ev);
            wy_event_free(&ev);
        }
    }
    if (!t.s) tr_add(&t, "", 0);
    wy_reader_free(&r);
    return t;
}

static transcript run_whole(const void *bytes, size_t n) { return run_cuts(bytes, n, NULL, 0, NULL); }

/* A stream exercising the format: blank lines, inline data, a data block
 * overriding it, a payload holding '\n', NUL and high bytes, explicit zero
 * lengths, a non-ASCII type and data. */
static size_t build_stream(unsigned char *out) {
    size_t n = 0;
#define PUT(str) (memcpy(out + n, str, sizeof str - 1), n += sizeof str - 1)
    PUT("{\"type\":\"describe\"}\n");
    PUT("\n  \r\n");
    PUT("{\"type\": \"ping\", \"data\": {\"text\": \"hi\"}, \"version\": \"1.7.2\"}\r\n");
    PUT("{\"type\":\"synthesize\",\"data\":{\"text\":\"inline\",\"keep\":1},\"data_length\":36}\n");
    PUT("{\"text\":\"from the block\",\"voice\":{}}");
    PUT("{\"type\":\"audio-chunk\",\"data_length\":40,\"payload_length\":6}\n");
    PUT("{\"rate\":24000,\"width\":2,\"channels\":1}\n  ");
    out[n++] = '\n';
    out[n++] = 0;
    out[n++] = 0xff;
    out[n++] = '{';
    out[n++] = '\r';
    out[n++] = 0x80;
    PUT("{\"type\":\"audio-stop\",\"data\":null,\"data_length\":0,\"payload_length\":0}\n");
    PUT("{\"type\":\"caf\xc3\xa9\",\"data\":{\"t\":\"\xe6\x97\xa5\xe6\x9c\xac\"}}\n");
#undef PUT
    return n;
}

static const char *k_expected =
    "describe|{}|;"
    "ping|{\"text\":\"hi\"}|;"
    "synthesize|{\"keep\":1,\"text\":\"from the block\",\"voice\":{}}|;"
    "audio-chunk|{\"rate\":24000,\"width\":2,\"channels\":1}|0a00ff7b0d80;"
    "audio-stop|{}|;"
    "caf\xc3\xa9|{\"t\":\"\xe6\x97\xa5\xe6\x9c\xac\"}|;";

static void test_splits(void) {
    unsigned char s[1024];
    size_t n = build_stream(s);
    transcript whole = run_whole(s, n);
    TEST_CHECK(whole.rc == 0 && !strcmp(whole.s, k_expected), "whole stream: rc %d (%s)\n got %s\nwant %s", whole.rc,
               whole.error, whole.s, k_expected);
    int bad = 0;
    for (size_t cut = 0; cut <= n; cut++) { /* two pieces, at every boundary */
        transcript t = run_cuts(s, n, &cut, 1, NULL);
        if (t.rc || strcmp(t.s, whole.s)) {
            if (!bad) fprintf(stderr, "split at %zu: rc %d %s: %s\n", cut, t.rc, t.error, t.s);
            bad++;
        }
        free(t.s);
    }
    TEST_CHECK(bad == 0, "every two-piece split gives the same events (%d differ)", bad);
    size_t *cuts = malloc(n * sizeof *cuts);
    for (size_t i = 0; i < n; i++) cuts[i] = i + 1;
    transcript bytewise = run_cuts(s, n, cuts, (int)n, NULL);
    TEST_CHECK(bytewise.rc == 0 && !strcmp(bytewise.s, whole.s), "byte by byte gives the same events");
    /* three pieces at pseudo-random boundaries */
    unsigned x = 12345;
    bad = 0;
    for (int k = 0; k < 500; k++) {
        size_t c3[2];
        x = x * 1103515245u + 12345u;
        c3[0] = (x >> 8) % (n + 1);
        x = x * 1103515245u + 12345u;
        c3[1] = c3[0] + (x >> 8) % (n + 1 - c3[0]);
        transcript t = run_cuts(s, n, c3, 2, NULL);
        bad += t.rc || strcmp(t.s, whole.s);
        free(t.s);
    }
    TEST_CHECK(bad == 0, "three-piece splits give the same events (%d differ)", bad);
    free(cuts);
    free(bytewise.s);
    free(whole.s);
}

/* Each case: bytes that must fail, and a word the message must contain. */
static void expect_error(const char *what, const void *bytes, size_t n, const char *word, wy_reader *lim) {
    transcript t = run_cuts(bytes, n, NULL, 0, lim);
    TEST_CHECK(t.rc == -1 && strstr(t.error, word), "%s: expected an error naming '%s', got rc %d '%s' (events %s)",
               what, word, t.rc, t.error, t.s);
    /* and cut byte by byte: the same error */
    size_t *cuts = malloc((n ? n : 1) * sizeof *cuts);
    for (size_t i = 0; i < n; i++) cuts[i] = i + 1;
    transcript b = run_cuts(bytes, n, cuts, (int)n, lim);
    TEST_CHECK(b.rc == -1 && !strcmp(b.error, t.error), "%s byte by byte: '%s' vs '%s'", what, b.error, t.error);
    free(cuts);
    free(t.s);
    free(b.s);
}
#define EXPECT_ERROR(what, lit, word) expect_error(what, lit, sizeof lit - 1, word, NULL)

static void test_errors(void) {
    EXPECT_ERROR("bad JSON", "{\"type\":\"ping\",}\n", "not valid JSON");
    EXPECT_ERROR("truncated JSON", "{\"type\":\"ping\"\n", "not valid JSON");
    EXPECT_ERROR("text line", "hello there\n", "not valid JSON");
    EXPECT_ERROR("two objects on a line", "{\"type\":\"a\"} {\"type\":\"b\"}\n", "bytes after");
    EXPECT_ERROR("array header", "[1,2]\n", "not a JSON object");
    EXPECT_ERROR("string header", "\"ping\"\n", "not a JSON object");
    EXPECT_ERROR("missing type", "{\"data\":{}}\n", "'type'");
    EXPECT_ERROR("numeric type", "{\"type\":5}\n", "'type'");
    EXPECT_ERROR("empty type", "{\"type\":\"\"}\n", "'type'");
    EXPECT_ERROR("data not an object", "{\"type\":\"x\",\"data\":[1]}\n", "'data'");
    EXPECT_ERROR("negative data_length", "{\"type\":\"x\",\"data_length\":-1}\n", "data_length");
    EXPECT_ERROR("fractional payload_length", "{\"type\":\"x\",\"payload_length\":1.5}\n", "payload_length");
    EXPECT_ERROR("string payload_length", "{\"type\":\"x\",\"payload_length\":\"4\"}\n", "payload_length");
    EXPECT_ERROR("huge payload_length", "{\"type\":\"x\",\"payload_length\":1e300}\n", "limit");
    EXPECT_ERROR("data_length over 1 MiB", "{\"type\":\"x\",\"data_length\":1048577}\n", "limit of 1048576");
    EXPECT_ERROR("payload_length over 16 MiB", "{\"type\":\"x\",\"payload_length\":16777217}\n", "limit of 16777216");
    EXPECT_ERROR("bad data block", "{\"type\":\"x\",\"data_length\":5}\n{abc}", "data block");
    EXPECT_ERROR("data block not an object", "{\"type\":\"x\",\"data_length\":3}\n[1]", "one JSON object");
    EXPECT_ERROR("data block with trailing bytes", "{\"type\":\"x\",\"data_length\":5}\n{} {}", "one JSON object");
    /* a payload sent without payload_length: its bytes are read as the next header */
    EXPECT_ERROR("payload without length", "{\"type\":\"audio-chunk\",\"data\":{\"rate\":24000}}\n\x01\x02\x03\x04",
                 "payload_length");
    EXPECT_ERROR("NUL in a header", "{\"type\":\"x\"\0}\n", "binary");
    /* limits exactly at and just past the edge */
    size_t hl = WY_MAX_HEADER;
    char *big = malloc(hl + 64);
    memset(big, ' ', hl + 64);
    memcpy(big, "{\"type\":\"x\"}", 12); /* then spaces up to the limit */
    big[hl] = '\n';
    transcript ok = run_whole(big, hl + 1);
    TEST_CHECK(ok.rc == 0 && !strcmp(ok.s, "x|{}|;"), "a %zu-byte header line is accepted (rc %d %s)", hl, ok.rc,
               ok.error);
    free(ok.s);
    memset(big, ' ', hl + 64);
    memcpy(big, "{\"type\":\"x\"}", 12);
    big[hl + 1] = '\n';
    expect_error("header one byte over", big, hl + 2, "longer than 65536", NULL);
    expect_error("header without newline past the limit", big, hl + 1, "longer than 65536", NULL);
    free(big);
    /* small limits */
    wy_reader lim = {.max_header = 40, .max_data = 8, .max_payload = 4};
    const char ok_small[] = "{\"type\":\"x\",\"payload_length\":4}\nabcd";
    transcript s = run_cuts((const unsigned char *)ok_small, sizeof ok_small - 1, NULL, 0, &lim);
    TEST_CHECK(s.rc == 0 && !strcmp(s.s, "x|{}|61626364;"), "payload at the limit (rc %d %s)", s.rc, s.error);
    free(s.s);
    const char over_small[] = "{\"type\":\"x\",\"payload_length\":5}\nabcde";
    expect_error("payload over a small limit", over_small, sizeof over_small - 1, "limit of 4", &lim);
    /* an error is final */
    wy_reader r;
    wy_reader_init(&r);
    wy_event ev;
    wy_reader_feed(&r, "nope\n{\"type\":\"ping\"}\n", 21);
    TEST_CHECK(wy_reader_next(&r, &ev) == -1 && wy_reader_next(&r, &ev) == -1 && wy_reader_feed(&r, "x", 1) == -1,
               "a failed reader stays failed");
    wy_reader_free(&r);
}

static void test_merge_and_writer(void) {
    /* inline data, then the block over it: last wins, like a dictionary */
    const char m[] = "{\"type\":\"t\",\"data\":{\"a\":1,\"b\":2,\"a\":5},\"data_length\":19}\n{\"b\":3,\"c\":4,\"c\":6}";
    transcript t = run_whole(m, sizeof m - 1);
    TEST_CHECK(t.rc == 0 && !strcmp(t.s, "t|{\"a\":5,\"b\":3,\"c\":6}|;"), "merge: %s (%s)", t.s, t.error);
    free(t.s);
    /* writer -> reader */
    srv_buf b = {0};
    cJSON *d = cJSON_Parse("{\"rate\":24000,\"width\":2,\"channels\":1,\"text\":\"\\u00e9\\n\"}");
    unsigned char pay[7] = {1, '\n', 0, 255, 128, '\r', 9};
    TEST_CHECK(!wy_write_event(&b, "audio-chunk", d, pay, sizeof pay) && !wy_write_event(&b, "pong", NULL, NULL, 0),
               "write events");
    const char *nl = memchr(b.data, '\n', b.len);
    cJSON *h = nl ? cJSON_ParseWithLength(b.data, (size_t)(nl - b.data)) : NULL;
    TEST_CHECK(h && cJSON_IsNumber(cJSON_GetObjectItem(h, "data_length")) &&
                   cJSON_GetObjectItem(h, "payload_length")->valuedouble == 7 &&
                   !strcmp(cJSON_GetObjectItem(h, "version")->valuestring, WY_PROTOCOL_VERSION) &&
                   !cJSON_GetObjectItem(h, "data"),
               "header line: type, version, data_length, payload_length; data in the block");
    cJSON_Delete(h);
    transcript w = run_whole(b.data, b.len);
    TEST_CHECK(w.rc == 0 && !strcmp(w.s, "audio-chunk|{\"rate\":24000,\"width\":2,\"channels\":1,\"text\":\"\xc3\xa9\\n\"}|"
                                          "010a00ff800d09;pong|{}|;"),
               "writer output parses back: %s", w.s);
    const char *pong = memmem(b.data, b.len, "{\"type\":\"pong\"", 14); /* (the payload holds a NUL) */
    TEST_CHECK(pong && !strstr(pong, "data_length") && !strstr(pong, "payload_length"),
               "an event without data or payload has neither length");
    free(w.s);
    cJSON_Delete(d);
    srv_buf_free(&b);
}

/* A megabyte data block of tiny distinct keys: merging stays linear. */
static void test_many_keys(void) {
    size_t cap = WY_MAX_DATA, n = 0;
    char *blk = malloc(cap + 1);
    blk[n++] = '{';
    for (int k = 0; n + 24 < cap; k++) n += (size_t)sprintf(blk + n, "%s\"k%d\":%d", k ? "," : "", k, k % 3);
    blk[n++] = '}';
    char head[128];
    int hn = snprintf(head, sizeof head, "{\"type\":\"big\",\"data\":{\"k1\":\"x\"},\"data_length\":%zu}\n", n);
    char *all = malloc((size_t)hn + n);
    memcpy(all, head, (size_t)hn);
    memcpy(all + hn, blk, n);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    wy_reader r;
    wy_reader_init(&r);
    wy_event ev;
    int rc = wy_reader_feed(&r, all, (size_t)hn + n) ? -1 : wy_reader_next(&r, &ev);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    int keys = rc == 1 ? cJSON_GetArraySize(ev.data) : -1;
    const cJSON *k1 = rc == 1 ? cJSON_GetObjectItem(ev.data, "k1") : NULL;
    TEST_CHECK(rc == 1 && keys > 50000 && cJSON_IsNumber(k1), "1 MiB block: %d keys merged (block's k1 wins)", keys);
    TEST_CHECK(s < 5.0, "1 MiB block of %d keys parsed and merged in %.2f s", keys, s);
    printf("a %zu-byte data block with %d keys: parsed and merged in %.3f s\n", n, keys, s);
    if (rc == 1) wy_event_free(&ev);
    wy_reader_free(&r);
    free(all);
    free(blk);
}

int main(void) {
    test_splits();
    test_errors();
    test_merge_and_writer();
    test_many_keys();
    return test_finish("test_wyoming_frame");
}
