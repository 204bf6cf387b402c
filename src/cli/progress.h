/* Progress line for `qtts say` (and any long CLI job) on stderr.
 *
 * On a terminal one line per utterance is redrawn in place with \r
 * (at most 10 times a second):
 *     [2/5] 123 frames  9.8 s audio  RTF 0.42  ETA ~0:31
 * and finished with a newline by cli_progress_end. When stderr is not a TTY
 * (pipes, CI, logs) nothing is printed at all.
 *
 * RTF = wall time spent / audio seconds produced (below 1: faster than real
 * time). ETA is an estimate: the text still to speak (in split units, see
 * text/split.h) times the seconds of audio per unit observed so far (or 1/14 s
 * per unit before the first utterance ends), times the current RTF.
 *
 * Typical use:
 *     cli_progress pr;
 *     cli_progress_init(&pr, -1, n_chunks, total_units);
 *     for each chunk i: cli_progress_begin(&pr, i, units_i);
 *         in the audio callback: cli_progress_update(&pr, frames, seconds);
 *         cli_progress_end(&pr, frames, seconds);
 *     before printing an error: cli_progress_clear(&pr); */
#ifndef QTTS_CLI_PROGRESS_H
#define QTTS_CLI_PROGRESS_H

#include <stddef.h>
#include <stdio.h>

typedef struct {
    FILE *out;
    int enabled;
    int n_utts;          /* total utterances; <= 1 hides the [i/n] prefix */
    size_t total_units;  /* text units of the whole job (0: unknown, no ETA) */
    size_t done_units;   /* units of finished utterances */
    double done_audio_s; /* audio of finished utterances */
    int utt;             /* current utterance, 0-based */
    size_t utt_units;
    int frames;
    double audio_s;
    double t_job, t_utt, last_draw;
    int drawn; /* a line is on screen */
} cli_progress;

/* mode: -1 auto (on iff stderr is a TTY), 0 off, 1 on. */
void cli_progress_init(cli_progress *p, int mode, int n_utts, size_t total_units);
void cli_progress_begin(cli_progress *p, int index, size_t units);
/* frames / audio seconds produced so far for the current utterance. */
void cli_progress_update(cli_progress *p, int frames, double audio_seconds);
/* Final line for the utterance (newline), accounting for the ETA. */
void cli_progress_end(cli_progress *p, int frames, double audio_seconds);
/* Erases the current line (call before writing other text to stderr). */
void cli_progress_clear(cli_progress *p);

/* The line as it would be drawn at time `now` (seconds, qtts_now_s); for
 * tests. Returns its length. */
int cli_progress_format(const cli_progress *p, double now, int final, char *buf, size_t size);

#endif
