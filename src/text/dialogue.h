/* Dialogue scripts: a text whose turns are tagged with the speaker's name,
 * spoken as one recording with a voice per name.
 *
 * Forms (one script may mix them):
 *   [Ryan] Hello there.          a bracketed tag, at a line's start or inside
 *   [Vivian] Hi! [Ryan] Ready?   a line (each tag starts a new turn)
 *   Ryan: Hello there.           a name and a colon (or the full-width '：')
 *                                at a line's start, followed by a space or the
 *                                end of the line; the name is 1-32 bytes of
 *                                letters, digits, spaces (at most two), _ - . '
 *   [Ryan] (whispering) Psst.    a parenthesis right after a tag is that
 *                                turn's instruction (style), not speech
 * A turn's text runs until the next tag; lines without a tag continue the
 * turn. Lines starting with '#' are comments. Names are kept as written; the
 * caller maps them to voices.
 *
 * Errors name the line: text before the first tag, an empty or unclosed tag,
 * a tag without text, an unclosed instruction, a NUL byte. */
#ifndef QTTS_TEXT_DIALOGUE_H
#define QTTS_TEXT_DIALOGUE_H

#include <stddef.h>

#include "core/err.h"

#define QTTS_DIALOGUE_MAX_NAME 64      /* bytes of a bracketed name */
#define QTTS_DIALOGUE_MAX_INSTRUCT 1024 /* bytes of a turn's instruction */

typedef struct {
    char *speaker;  /* the name as written, trimmed (never empty) */
    char *instruct; /* the turn's "(...)" without the parentheses, trimmed, or NULL */
    char *text;     /* the turn's words; its lines joined with '\n' (never blank) */
    int line;       /* 1-based line of its tag */
} qtts_dialogue_turn;

typedef struct {
    qtts_dialogue_turn *turns;
    size_t n;
} qtts_dialogue;

/* Parses text[0, len). Returns 0 with *out filled (at least one turn), or -1
 * with err set (QTTS_ERR_INVALID for a bad script, "line N: ..."). */
int qtts_dialogue_parse(const char *text, size_t len, qtts_dialogue *out, qtts_err *err);
void qtts_dialogue_free(qtts_dialogue *d);

#endif
