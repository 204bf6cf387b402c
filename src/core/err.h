/* Error reporting: functions that can fail take a qtts_err* and return -1
 * (or NULL) after writing one clear line into it. No global error state. */
#ifndef QTTS_CORE_ERR_H
#define QTTS_CORE_ERR_H

#include <stddef.h>

typedef struct qtts_err {
    char msg[512];
} qtts_err;

/* Formats the message into e (if non-NULL) and returns -1. */
int qtts_fail(qtts_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prefixes an existing message: "prefix: old message". Returns -1. */
int qtts_fail_prefix(qtts_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Checked allocation helpers: return NULL and fill e on failure. */
void *qtts_malloc(size_t size, qtts_err *e);
void *qtts_calloc(size_t count, size_t size, qtts_err *e);

#endif
