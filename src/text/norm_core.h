/* The text front end's working state and its line-level steps, shared by
 * the whole-text normalizer (normalize.c) and the streaming one
 * (norm_stream.c), so that both run exactly the same rules. */
#ifndef QTTS_TEXT_NORM_CORE_H
#define QTTS_TEXT_NORM_CORE_H

#include <stddef.h>

#include "core/err.h"
#include "text/norm_lang.h"
#include "text/norm_spell.h"
#include "text/normalize.h"
#include "text/strbuf.h"

typedef struct {
    const qtts_norm_lang *L;
    qtts_norm_mode mode;
    qtts_spell sp;
    qtts_strbuf out;
    qtts_err *err;
    int failed;
    int pending_space; /* inserted words end here: a following letter gets a space */
    int in_fence;      /* inside a fenced code block */
    int read_code;     /* its lines are read as plain text (else skipped) */
} norm_ctx;

/* What a line's markdown makes of it. */
typedef struct {
    int skip;        /* not read (a fence, code, a rule, a table separator) */
    int table;       /* a table row: cells as a list */
    int item;        /* a heading or list item: ends with a full stop */
    int fence;       /* the line opens or closes a fenced block */
    size_t content;  /* where the inline text starts */
} norm_line;

/* lang: an ISO code with a row in norm_lang.c. The output is capped at max bytes. */
void norm_ctx_begin(norm_ctx *z, const char *lang, qtts_norm_mode mode, size_t max, qtts_err *err);
void norm_ctx_end(norm_ctx *z); /* frees the number speller, not the output */

/* The markdown kind of line s[0, n) (no '\n'). in_fence: 0 outside a fenced
 * block, 1 inside one that is skipped, 2 inside one that is read (plain
 * text). complete 0: the line may go on; returns 0 when its kind is already
 * certain, -1 when more of it is needed. */
int norm_line_kind(const char *s, size_t n, int complete, int in_fence, norm_line *k);
/* A whole line (no '\n'; has_nl: a line break followed it in the text). */
void norm_put_line(norm_ctx *z, const char *s, size_t n, int has_nl);
/* norm_line_kind's in_fence for the state now. */
int norm_fence_state(const norm_ctx *z);
/* Inline text of a line whose kind is known (not a table row or skipped). */
void norm_put_inline(norm_ctx *z, const char *s, size_t n);
/* Ends a line begun at output length `before`, after its inline text. */
void norm_end_line(norm_ctx *z, const norm_line *k, size_t before, int has_nl);
/* Drops trailing line breaks and spaces (the end of the text). */
void norm_trim_end(norm_ctx *z);

#endif
