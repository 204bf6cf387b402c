#include "core/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <string.h>
#include <stdint.h>
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#ifdef MADV_POPULATE_WRITE
#define QTTS_MADV_POPULATE_WRITE MADV_POPULATE_WRITE
#else
#define QTTS_MADV_POPULATE_WRITE 23 /* Linux 5.14's value, for older headers (Debian 12's glibc 2.36 has it) */
#endif
#endif

/* Control characters (a tensor name or metadata key of a hostile file, a
 * header value) become \xNN, so a message stays one printable line in a
 * terminal, a log or an HTTP reply: no newline, no escape sequence. */
static void escape_controls(char *msg, size_t cap) {
    size_t n = strlen(msg), i = 0;
    while (i < n && (unsigned char)msg[i] >= 0x20 && msg[i] != 0x7f) i++;
    if (i == n) return;
    char out[1024];
    size_t o = 0;
    for (size_t k = 0; k < n && o + 5 < sizeof out; k++) {
        unsigned char c = (unsigned char)msg[k];
        if (c < 0x20 || c == 0x7f) o += (size_t)snprintf(out + o, sizeof out - o, "\\x%02x", c);
        else out[o++] = (char)c;
    }
    const size_t m = o < cap - 1 ? o : cap - 1;
    memcpy(msg, out, m);
    msg[m] = 0;
}

static void vfail(qtts_err *e, qtts_status status, const char *fmt, va_list ap) {
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    escape_controls(e->msg, sizeof e->msg);
    e->status = status;
}

int qtts_fail(qtts_err *e, const char *fmt, ...) {
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vfail(e, QTTS_ERR_INTERNAL, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int qtts_fail_as(qtts_err *e, qtts_status status, const char *fmt, ...) {
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vfail(e, status, fmt, ap);
        va_end(ap);
    }
    return -1;
}

void qtts_err_export(const qtts_err *from, qtts_status fallback, qtts_error *to) {
    if (!to) return;
    to->status = from->status && from->status != QTTS_ERR_INTERNAL ? from->status : fallback;
    snprintf(to->message, sizeof to->message, "%s", from->msg);
}

qtts_status qtts_error_set(qtts_error *to, qtts_status status, const char *fmt, ...) {
    if (to) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(to->message, sizeof to->message, fmt, ap);
        va_end(ap);
        escape_controls(to->message, sizeof to->message);
        to->status = status;
    }
    return status;
}

int qtts_fail_prefix(qtts_err *e, const char *fmt, ...) {
    if (e) {
        char prefix[256], old[sizeof e->msg];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(prefix, sizeof prefix, fmt, ap);
        va_end(ap);
        memcpy(old, e->msg, sizeof old);
        snprintf(e->msg, sizeof e->msg, "%.255s: %.254s", prefix, old);
        escape_controls(e->msg, sizeof e->msg);
    }
    return -1;
}

void *qtts_malloc(size_t size, qtts_err *e) {
    void *p = malloc(size ? size : 1);
    if (!p) qtts_fail_as(e, QTTS_ERR_NO_MEMORY, "out of memory allocating %zu bytes", size);
    return p;
}

void qtts_heap_return_large_blocks(void) {
#if defined(__GLIBC__)
    if (!getenv("MALLOC_MMAP_THRESHOLD_")) mallopt(M_MMAP_THRESHOLD, 4 << 20);
#endif
}

void qtts_heap_trim(void) {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

void qtts_advise_huge(void *p, size_t size) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const uintptr_t huge = (uintptr_t)2 << 20, b = ((uintptr_t)p + huge - 1) & ~(huge - 1),
                    e = ((uintptr_t)p + size) & ~(huge - 1);
    if (e > b) (void)madvise((void *)b, e - b, MADV_HUGEPAGE);
    /* and its pages mapped now, in one call, rather than by a fault each as they are first written: on a
     * 2-vCPU VM 4 KiB faults took ~25 us each, and filling 190 new 1.7 MB weights 1.6-2.4 s, 0.85-1.4 s so
     * (Linux 5.14+; elsewhere the call fails and the faults remain) */
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), pb = (uintptr_t)p & ~(page - 1);
    (void)madvise((void *)pb, (uintptr_t)p + size - pb, QTTS_MADV_POPULATE_WRITE);
#else
    (void)p, (void)size;
#endif
}

void *qtts_calloc(size_t count, size_t size, qtts_err *e) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) qtts_fail_as(e, QTTS_ERR_NO_MEMORY, "out of memory allocating %zu x %zu bytes", count, size);
    return p;
}
