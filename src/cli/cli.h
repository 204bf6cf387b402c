/* Shared pieces of the qtts command line. Each subcommand lives in its own
 * cmd_<name>.c and is registered in main.c. Exit codes: 0 ok, 1 failure,
 * 2 bad usage. */
#ifndef QTTS_CLI_H
#define QTTS_CLI_H

enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

int cmd_info(int argc, char **argv);
int cmd_serve(int argc, char **argv);

/* Prints "qtts: <msg>" to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Resolves the model path: explicit value, else $QTTS_MODEL; NULL if neither. */
const char *cli_model_path(const char *given);

#endif
