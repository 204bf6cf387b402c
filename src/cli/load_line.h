/* "Loading" line for the CLI commands that start an engine, on stderr.
 *
 * On a terminal, while the model loads, one line is redrawn in place (at
 * most 10 times a second) from the engine's load_progress callback:
 *     qtts: loading: LM weights 45% (3.2 s)
 * and erased once the engine is ready, so what follows starts on a clean
 * line. When stderr is not a TTY (pipes, CI, logs) nothing is printed. */
#ifndef QTTS_CLI_LOAD_LINE_H
#define QTTS_CLI_LOAD_LINE_H

#include <stdio.h>

#include "qtts.h"

typedef struct {
    FILE *out;
    double t0, last_draw;
    int drawn; /* a line is on screen */
} cli_load_line;

/* Hooks l into ep (ep->load_progress) where stderr is a terminal; l must
 * outlive qtts_engine_create. */
void cli_load_line_attach(cli_load_line *l, qtts_engine_params *ep);
/* Erases the line if one is still drawn (a failed load leaves one). */
void cli_load_line_clear(cli_load_line *l);

/* The line for step/done at elapsed seconds; for tests. Returns its length. */
int cli_load_line_format(const char *step, double done, double elapsed_s, char *buf, size_t size);

#endif
