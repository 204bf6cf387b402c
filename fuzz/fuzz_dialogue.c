/* Dialogue scripts (text/dialogue.h) on arbitrary bytes. Beyond "no crash":
 * a parse either fails with a message and no turns, or gives turns whose
 * names are non-empty, trimmed, without brackets or line breaks; whose texts
 * are non-blank and trimmed; whose instructions are non-blank when present;
 * and whose line numbers never decrease and lie within the text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text/dialogue.h"

static int blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' || c == '\n'; }

static void check_trimmed(const char *s) {
    size_t n = strlen(s);
    if (!n || blank(s[0]) || blank(s[n - 1])) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data;
    qtts_dialogue d;
    qtts_err err = {0};
    if (qtts_dialogue_parse(text, size, &d, &err)) {
        if (!err.msg[0] || d.n || d.turns) abort();
        return 0;
    }
    int lines = 1;
    for (size_t i = 0; i < size; i++) lines += text[i] == '\n';
    if (!d.n) abort();
    int prev = 1;
    for (size_t i = 0; i < d.n; i++) {
        const qtts_dialogue_turn *t = &d.turns[i];
        check_trimmed(t->speaker);
        check_trimmed(t->text);
        if (strpbrk(t->speaker, "[]\n")) abort();
        if (strlen(t->speaker) > QTTS_DIALOGUE_MAX_NAME) abort();
        if (t->instruct) check_trimmed(t->instruct);
        if (t->line < prev || t->line > lines) abort();
        prev = t->line;
    }
    qtts_dialogue_free(&d);
    return 0;
}
