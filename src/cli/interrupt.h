/* Ctrl-C and SIGTERM for a command that writes a file (qtts say): before the
 * output exists a signal ends the process at once, as usual; once it is
 * armed the signal is only recorded, so the command can stop at the next
 * frame and finalize (or remove) what it wrote. No signal handler: the
 * signals are blocked in every thread and one watcher thread takes them
 * with sigwait. */
#ifndef QTTS_CLI_INTERRUPT_H
#define QTTS_CLI_INTERRUPT_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

typedef struct {
    sigset_t sigs;
    pthread_t watcher;
    int started;
    atomic_int armed;  /* 1: record signals instead of dying */
    atomic_int signal; /* the signal recorded, 0 if none */
} cli_interrupt;

/* Blocks SIGINT and SIGTERM in the calling thread (threads created later,
 * the engine's included, inherit that) and starts the watcher. Call before
 * the engine starts. Returns 0, or -1 (signals then keep their defaults). */
int cli_interrupt_start(cli_interrupt *ci);
/* From now on a signal is recorded for cli_interrupt_signal. */
void cli_interrupt_arm(cli_interrupt *ci);
/* 0, or the signal received since arming. */
int cli_interrupt_signal(cli_interrupt *ci);
/* Ends the watcher and unblocks the signals; a no-op if not started. */
void cli_interrupt_stop(cli_interrupt *ci);
/* "SIGINT", "SIGTERM". */
const char *cli_interrupt_name(int sig);

#endif
