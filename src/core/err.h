/* Error reporting: functions that can fail take a qtts_err* and return -1
 * (or NULL) after writing one clear line into it. No global error state. */
#ifndef QTTS_CORE_ERR_H
#define QTTS_CORE_ERR_H

#include <stddef.h>

#include "qtts.h" /* qtts_status */

typedef struct qtts_err {
    char msg[512];
    qtts_status status; /* the kind of failure; QTTS_OK (0) until a qtts_fail* call */
} qtts_err;

/* Formats the message into e (if non-NULL) and returns -1. The status becomes
 * QTTS_ERR_INTERNAL unless the caller classifies it (qtts_fail_as). */
int qtts_fail(qtts_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same with an explicit kind (QTTS_ERR_INVALID for bad input, ...). */
int qtts_fail_as(qtts_err *e, qtts_status status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Prefixes an existing message: "prefix: old message" (the status stays). Returns -1. */
int qtts_fail_prefix(qtts_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Copies e into the public error (to may be NULL); an unclassified failure
 * (QTTS_OK or QTTS_ERR_INTERNAL) becomes fallback. */
void qtts_err_export(const qtts_err *from, qtts_status fallback, qtts_error *to);
/* Fills the public error directly (to may be NULL); returns status. */
qtts_status qtts_error_set(qtts_error *to, qtts_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Checked allocation helpers: return NULL and fill e on failure (QTTS_ERR_NO_MEMORY). */
void *qtts_malloc(size_t size, qtts_err *e);
void *qtts_calloc(size_t count, size_t size, qtts_err *e);
/* Returns the heap's free memory to the system (glibc's malloc_trim; a no-op
 * elsewhere). Called after a model load, whose temporary buffers (f32
 * originals before quantization, conversions) leave free holes that glibc
 * keeps resident otherwise. */
void qtts_heap_trim(void);
/* For long-running servers: blocks of 4 MiB and more are mapped on their own
 * and go back to the system when freed (glibc's M_MMAP_THRESHOLD, fixed;
 * unless MALLOC_MMAP_THRESHOLD_ is set). glibc otherwise raises the
 * threshold to the largest block freed so far, after which every large
 * request body or buffer stays in the arena of the thread that freed it:
 * one per HTTP thread. */
void qtts_heap_return_large_blocks(void);
/* Asks for transparent huge pages on the whole 2 MiB pages inside a large
 * fresh buffer (Linux madvise; a no-op elsewhere or when refused): a load
 * writes hundreds of MB of converted weights, and with 4 KiB pages the
 * faults cost about as much as the conversion. */
void qtts_advise_huge(void *p, size_t size);

#endif
