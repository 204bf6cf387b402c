/* A growable byte buffer with a read offset (bytes appended at the end, taken
 * from the front). */
#ifndef QTTS_SERVER_BUF_H
#define QTTS_SERVER_BUF_H

#include <stddef.h>

typedef struct {
    char *data;
    size_t len; /* bytes written */
    size_t off; /* bytes already consumed */
    size_t cap;
} srv_buf;

/* Returns 0, or -1 when out of memory (the buffer is unchanged). */
int srv_buf_append(srv_buf *b, const void *data, size_t n);
int srv_buf_printf(srv_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Copies up to max unread bytes into out and consumes them. */
size_t srv_buf_take(srv_buf *b, void *out, size_t max);
size_t srv_buf_pending(const srv_buf *b);
void srv_buf_free(srv_buf *b);
/* An encoder sink (audio/encoder.h) that appends: user is an srv_buf*. */
int srv_buf_sink(void *user, const void *data, size_t n);

#endif
