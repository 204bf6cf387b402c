#include "server/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int srv_buf_append(srv_buf *b, const void *data, size_t n) {
    if (b->off && b->off == b->len) b->off = b->len = 0; /* everything consumed: reuse */
    if (b->len + n + 1 > b->cap) {
        if (b->off) { /* compact before growing */
            memmove(b->data, b->data + b->off, b->len - b->off);
            b->len -= b->off;
            b->off = 0;
        }
        if (b->len + n + 1 > b->cap) {
            size_t cap = b->cap ? b->cap : 4096;
            while (cap < b->len + n + 1) {
                if (cap > ((size_t)-1) / 2) return -1;
                cap *= 2;
            }
            char *p = realloc(b->data, cap);
            if (!p) return -1;
            b->data = p;
            b->cap = cap;
        }
    }
    if (n) memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = 0; /* keeps text NUL-terminated */
    return 0;
}

int srv_buf_printf(srv_buf *b, const char *fmt, ...) {
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return -1;
    if ((size_t)n < sizeof small) return srv_buf_append(b, small, (size_t)n);
    char *big = malloc((size_t)n + 1);
    if (!big) return -1;
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    int rc = srv_buf_append(b, big, (size_t)n);
    free(big);
    return rc;
}

size_t srv_buf_take(srv_buf *b, void *out, size_t max) {
    size_t n = b->len - b->off;
    if (n > max) n = max;
    memcpy(out, b->data + b->off, n);
    b->off += n;
    return n;
}

size_t srv_buf_pending(const srv_buf *b) { return b->len - b->off; }

void srv_buf_free(srv_buf *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}

int srv_buf_sink(void *user, const void *data, size_t n) { return srv_buf_append(user, data, n); }
