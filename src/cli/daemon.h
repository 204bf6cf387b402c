/* What the long-running front ends (qtts serve, qtts wyoming) share: the
 * engine start with signals kept off every worker thread, the banner, and
 * the wait for SIGTERM/SIGINT. */
#ifndef QTTS_CLI_DAEMON_H
#define QTTS_CLI_DAEMON_H

#include <signal.h>

#include "qtts.h"

/* Resolves -m (a path or a downloaded model's name; `cmd` names the command
 * in errors), blocks SIGTERM and SIGINT (every thread created afterwards,
 * the engine's included, inherits the mask, so only daemon_wait sees them;
 * *sigs is that set) and creates the engine. Returns CLI_CONTINUE with *out
 * set, or the exit status after printing why. */
int daemon_start_engine(const char *cmd, const char *model, qtts_engine_params *ep, sigset_t *sigs,
                        qtts_engine **out);

/* "qtts CMD: 0.6b base model (weights ..., decoder ...), N threads, batch B; listening on URL" */
/* "[" and "]" around an IPv6 literal host in a URL, else "". */
const char *daemon_host_open(const char *host);
const char *daemon_host_close(const char *host);
void daemon_banner(const char *cmd, const qtts_engine *e, const char *scheme, const char *host, int port,
                   const char *voices_dir); /* NULL: a Base model gets a warning */

/* Waits for SIGTERM or SIGINT, calling tick(ctx) about once a second when
 * tick is not NULL; returns the signal. */
int daemon_wait(const sigset_t *sigs, void (*tick)(void *), void *ctx);

#endif
