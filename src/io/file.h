/* The one whole-file reader: every "read this file (or stdin) into memory"
 * goes through here, with a size cap chosen by the caller and one set of
 * messages ("<name>: cannot open: ...", "<name>: larger than N MiB", ...). */
#ifndef QTTS_IO_FILE_H
#define QTTS_IO_FILE_H

#include <stddef.h>
#include <stdio.h>

#include "core/err.h"

/* Reads all of f (a file or a pipe) into *buf (NUL-terminated, free() it);
 * *len excludes the NUL. name is used in messages. More than max bytes fails. */
int qtts_read_stream(FILE *f, const char *name, size_t max, char **buf, size_t *len, qtts_err *err);
/* The same for the file at path ("-": standard input). */
int qtts_read_file(const char *path, size_t max, char **buf, size_t *len, qtts_err *err);
/* Writes n bytes to path, created or truncated ("-": standard output). */
int qtts_write_file(const char *path, const void *data, size_t n, qtts_err *err);

#endif
