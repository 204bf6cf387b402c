/* multipart/form-data parser: the shapes browsers, undici (node's fetch and
 * the OpenAI SDK) and curl send, and every way a body can be malformed. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "server/multipart.h"

static int parse(const char *ct, const char *body, size_t len, srv_form_part *parts, const char **why) {
    *why = NULL;
    return srv_multipart_parse(ct, (const unsigned char *)body, len, parts, 8, why);
}

static int field_is(const srv_form_part *p, const char *want) {
    return p && p->len == strlen(want) && !memcmp(p->data, want, p->len);
}

static void test_shapes(void) {
    srv_form_part parts[8];
    const char *why;
    /* curl -F style, with a binary file holding CR LF and "--" sequences */
    static const char body[] = "--XYZ\r\n"
                               "Content-Disposition: form-data; name=\"name\"\r\n\r\n"
                               "alice\r\n"
                               "--XYZ\r\n"
                               "Content-Disposition: form-data; name=\"audio_sample\"; filename=\"a b.wav\"\r\n"
                               "Content-Type: audio/wav\r\n\r\n"
                               "RIFF\r\n--XY\0\r\n-\r\n"
                               "\r\n--XYZ\r\n"
                               "content-disposition: FORM-DATA; filename=\"x;y.txt\"; name=ref_text\r\n\r\n"
                               "Hello; \"world\"\r\n"
                               "--XYZ--\r\n";
    int n = parse("multipart/form-data; boundary=XYZ", body, sizeof body - 1, parts, &why);
    TEST_CHECK(n == 3, "three parts (got %d: %s)", n, why ? why : "");
    if (n == 3) {
        TEST_CHECK(field_is(srv_form_find(parts, n, "name"), "alice"), "name field");
        const srv_form_part *a = srv_form_find(parts, n, "audio_sample");
        TEST_CHECK(a && a->len == 16 && !memcmp(a->data, "RIFF\r\n--XY\0\r\n-\r\n", 16),
                   "binary file part kept byte for byte (len %zu)", a ? a->len : 0);
        TEST_CHECK(a && a->filename_len == 7 && !memcmp(a->filename, "a b.wav", 7), "file name");
        TEST_CHECK(a && a->content_type_len == 9 && !memcmp(a->content_type, "audio/wav", 9), "part type");
        const srv_form_part *r = srv_form_find(parts, n, "ref_text");
        TEST_CHECK(field_is(r, "Hello; \"world\""), "case-insensitive headers, unquoted name after a quoted ';'");
        TEST_CHECK(r && r->filename && r->filename_len == 7, "filename with ';' inside quotes");
        TEST_CHECK(srv_form_find(parts, n, "consent") == NULL, "absent field");
    }
    /* quoted boundary, a preamble, padding after the delimiter, an epilogue, an empty field */
    static const char body2[] = "preamble text\r\n--a'b (c)  \r\n"
                                "Content-Disposition: form-data; name=\"consent\"\r\n\r\n"
                                "\r\n--a'b (c)--  trailing epilogue";
    n = parse(" Multipart/Form-Data; charset=utf-8; boundary=\"a'b (c)\"", body2, sizeof body2 - 1, parts, &why);
    TEST_CHECK(n == 1 && parts[0].len == 0 && field_is(&parts[0], ""), "quoted boundary + preamble (%d %s)", n,
               why ? why : "");
    /* a part without headers' content type; no parts at all */
    n = parse("multipart/form-data; boundary=q", "--q--\r\n", 7, parts, &why);
    TEST_CHECK(n == 0, "an empty form has no parts (%d)", n);
    TEST_CHECK(srv_multipart_is_form("multipart/form-data") && !srv_multipart_is_form("multipart/form-datax") &&
                   !srv_multipart_is_form("application/json") && !srv_multipart_is_form(NULL),
               "is_form");
}

static void test_errors(void) {
    srv_form_part parts[8];
    const char *why;
    static const struct {
        const char *ct, *body, *why_has;
    } bad[] = {
        {"application/json", "{}", "not multipart"},
        {"multipart/form-data", "--x\r\n", "boundary"},
        {"multipart/form-data; boundary=", "--\r\n", "boundary"},
        {"multipart/form-data; boundary=\"x", "--x\r\n", "boundary"},
        {"multipart/form-data; boundary=x", "no delimiter here", "boundary"},
        {"multipart/form-data; boundary=x", "--x\r\nContent-Disposition: form-data; name=a\r\n\r\nabc", "closing"},
        {"multipart/form-data; boundary=x", "--x\r\nContent-Disposition: form-data; name=a\r\n", "headers"},
        {"multipart/form-data; boundary=x", "--x", "closing"},
        {"multipart/form-data; boundary=x", "--xjunk\r\n", "CRLF"},
        {"multipart/form-data; boundary=x", "--x\r\nContent-Disposition: attachment; name=a\r\n\r\nv\r\n--x--",
         "form-data"},
        {"multipart/form-data; boundary=x", "--x\r\nContent-Disposition: form-data\r\n\r\nv\r\n--x--", "no name"},
        {"multipart/form-data; boundary=x", "--x\r\nContent-Disposition: form-data; name=\"\"\r\n\r\nv\r\n--x--",
         "no name"},
        {"multipart/form-data; boundary=x", "--x\r\nContent-Disposition: form-data; name=\"a\r\n\r\nv\r\n--x--",
         "unterminated"},
        {"multipart/form-data; boundary=x", "--x\r\nContent-Type: text/plain\r\n\r\nv\r\n--x--", "Disposition"},
        {"multipart/form-data; boundary=x", "--x\r\nbroken header\r\n\r\nv\r\n--x--", "Name: value"},
        {"multipart/form-data; boundary=x",
         "--x\r\nContent-Disposition: form-data; name=a\r\nContent-Transfer-Encoding: base64\r\n\r\nv\r\n--x--",
         "Transfer-Encoding"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int n = parse(bad[i].ct, bad[i].body, strlen(bad[i].body), parts, &why);
        TEST_CHECK(n == -1 && why && strstr(why, bad[i].why_has), "case %zu: want -1 with '%s', got %d '%s'", i,
                   bad[i].why_has, n, why ? why : "(null)");
    }
    /* more parts than room */
    char body[2048] = "";
    for (int i = 0; i < 9; i++) strcat(body, "--x\r\nContent-Disposition: form-data; name=f\r\n\r\nv\r\n");
    strcat(body, "--x--\r\n");
    int n = srv_multipart_parse("multipart/form-data; boundary=x", (const unsigned char *)body, strlen(body), parts,
                                8, &why);
    TEST_CHECK(n == -1 && strstr(why, "too many"), "9 parts into 8 slots refused (%d)", n);
    /* a 71-character boundary is beyond RFC 2046 */
    char ct[128] = "multipart/form-data; boundary=";
    memset(ct + strlen(ct), 'b', 71);
    TEST_CHECK(parse(ct, "--", 2, parts, &why) == -1 && strstr(why, "boundary"), "71-char boundary refused");
    /* every truncation of a valid body fails cleanly (no part runs past the end) */
    static const char ok[] = "--x\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nvalue\r\n--x--";
    for (size_t k = 0; k < sizeof ok - 1; k++) {
        char *cut = malloc(k ? k : 1); /* exact-size copy: ASan sees any over-read */
        memcpy(cut, ok, k);
        n = srv_multipart_parse("multipart/form-data; boundary=x", (unsigned char *)cut, k, parts, 8, &why);
        TEST_CHECK(n == -1, "truncated at %zu bytes: refused (%d)", k, n);
        free(cut);
    }
    n = parse("multipart/form-data; boundary=x", ok, sizeof ok - 1, parts, &why);
    TEST_CHECK(n == 1 && field_is(&parts[0], "value"), "the untruncated body parses");
}

int main(void) {
    test_shapes();
    test_errors();
    return test_finish("test_multipart");
}
