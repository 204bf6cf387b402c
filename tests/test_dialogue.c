/* Dialogue script parsing (text/dialogue.h): every tag form, instructions,
 * continuation lines, comments, mixed languages, and the errors with their
 * line numbers. */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "text/dialogue.h"

typedef struct {
    const char *speaker, *instruct, *text;
    int line;
} want_turn;

static void expect(const char *script, const want_turn *want, size_t n) {
    qtts_dialogue d;
    qtts_err err = {0};
    int rc = qtts_dialogue_parse(script, strlen(script), &d, &err);
    TEST_CHECK(rc == 0, "parse failed: %s\n--- script:\n%s", err.msg, script);
    if (rc) return;
    TEST_CHECK(d.n == n, "%zu turns, want %zu\n--- script:\n%s", d.n, n, script);
    for (size_t i = 0; i < d.n && i < n; i++) {
        const qtts_dialogue_turn *t = &d.turns[i];
        TEST_CHECK(!strcmp(t->speaker, want[i].speaker), "turn %zu speaker '%s', want '%s'", i, t->speaker,
                   want[i].speaker);
        TEST_CHECK(!strcmp(t->text, want[i].text), "turn %zu text '%s', want '%s'", i, t->text, want[i].text);
        TEST_CHECK(want[i].instruct ? t->instruct && !strcmp(t->instruct, want[i].instruct) : !t->instruct,
                   "turn %zu instruct '%s', want '%s'", i, t->instruct ? t->instruct : "(none)",
                   want[i].instruct ? want[i].instruct : "(none)");
        TEST_CHECK(t->line == want[i].line, "turn %zu line %d, want %d", i, t->line, want[i].line);
    }
    qtts_dialogue_free(&d);
}

static void expect_error_n(const char *script, size_t len, const char *msg_part) {
    qtts_dialogue d;
    qtts_err err = {0};
    int rc = qtts_dialogue_parse(script, len, &d, &err);
    TEST_CHECK(rc == -1, "accepted a bad script:\n%s", script);
    if (rc == 0) {
        qtts_dialogue_free(&d);
        return;
    }
    TEST_CHECK(strstr(err.msg, msg_part) != NULL, "error '%s' lacks '%s'", err.msg, msg_part);
    TEST_CHECK(err.status == QTTS_ERR_INVALID, "status %d, want invalid", (int)err.status);
    TEST_CHECK(d.n == 0 && d.turns == NULL, "a failed parse left turns behind");
}

static void expect_error(const char *script, const char *msg_part) {
    expect_error_n(script, strlen(script), msg_part);
}

int main(void) {
    /* bracketed tags, one per line and inline */
    expect("[Ryan] Hello there.\n[Vivian] Hi! [Ryan] Ready?\n",
           (want_turn[]){{"Ryan", NULL, "Hello there.", 1}, {"Vivian", NULL, "Hi!", 2}, {"Ryan", NULL, "Ready?", 2}},
           3);
    /* colon form, full-width colon, continuation lines, a paragraph, comments */
    expect("# a comment\nRyan: First line\nstill Ryan.\n\nNew paragraph.\nVivian：你好，我是薇薇安。\n# end\n",
           (want_turn[]){{"Ryan", NULL, "First line\nstill Ryan.\n\nNew paragraph.", 2},
                         {"Vivian", NULL, "你好，我是薇薇安。", 6}},
           2);
    /* per-turn instructions, a tag alone on its line, names with spaces */
    expect("[Ryan] (whispering) Psst.\n[Uncle Ben]\n(slowly) With great power.\nDr. Who: (excited) Allons-y!\n",
           (want_turn[]){{"Ryan", "whispering", "Psst.", 1},
                         {"Uncle Ben", "slowly", "With great power.", 2},
                         {"Dr. Who", "excited", "Allons-y!", 4}},
           3);
    /* a second parenthesis is speech; colons inside text are not tags */
    expect("[Ryan] (calm) (sighs) It is 12:30, see http://x.y\nNote:the colon needs a space after it.\n",
           (want_turn[]){{"Ryan", "calm", "(sighs) It is 12:30, see http://x.y\nNote:the colon needs a space after it.",
                          1}},
           1);
    /* mixed languages in one script, CRLF line ends */
    expect("[Ryan] Good morning.\r\n[Vivian] 早上好。\r\n[Ono_Anna] おはようございます。\r\n",
           (want_turn[]){{"Ryan", NULL, "Good morning.", 1},
                         {"Vivian", NULL, "早上好。", 2},
                         {"Ono_Anna", NULL, "おはようございます。", 3}},
           3);

    expect_error("Hello.\n[Ryan] Hi.\n", "line 1: text before the first speaker tag");
    expect_error("[Ryan] Hi.\n[Vivian]\n[Ryan] again\n", "line 2: [Vivian] has no text");
    expect_error("[Ryan] Hi.\n\n[Vivian\n", "line 3: '[' without ']'");
    expect_error("[Ryan] Hi [ ] there\n", "line 1: an empty tag");
    expect_error("[Ryan] Hi.\n[Vivian] (sad Hi.\n", "line 2: '(' of an instruction without ')'");
    expect_error("# only comments\n\n", "no turns");
    expect_error("", "no turns");
    expect_error_n("[Ryan] one\n[Vivian] t\0wo\n", 22, "line 2: a NUL byte");
    char longtag[200];
    memset(longtag, 'a', sizeof longtag);
    longtag[0] = '[';
    memcpy(longtag + sizeof longtag - 5, "] hi", 5);
    expect_error(longtag, "line 1: a tag of more than 64 bytes");
    return test_finish("test_dialogue");
}
