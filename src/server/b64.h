/* Base64 (RFC 4648, standard alphabet) and the small pieces of text framing
 * the server needs: data URLs and Server-Sent Events. */
#ifndef QTTS_SERVER_B64_H
#define QTTS_SERVER_B64_H

#include <stddef.h>

/* Encoded length without the terminating NUL. */
size_t srv_b64_encoded_len(size_t n);
/* Writes srv_b64_encoded_len(n) characters and a NUL into out. */
void srv_b64_encode(const void *in, size_t n, char *out);
/* Decodes text (whitespace ignored, '=' padding optional). Returns a malloc'd
 * buffer and its size, or NULL on invalid input / out of memory (why says
 * which). A "data:...;base64," prefix is accepted and skipped. */
unsigned char *srv_b64_decode(const char *text, size_t len, size_t *out_len, const char **why);

#endif
