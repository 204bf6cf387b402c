/* Bearer-token authentication with a constant-time comparison. */
#ifndef QTTS_SERVER_AUTH_H
#define QTTS_SERVER_AUTH_H

#include <stddef.h>

/* 1 if a and b are equal; the time taken depends only on the lengths, and
 * not on where they differ. */
int srv_ct_equal(const char *a, size_t a_len, const char *b, size_t b_len);
/* 1 if the Authorization header value is "Bearer <key>" (scheme case-insensitive). */
int srv_auth_bearer_ok(const char *header, const char *key);

#endif
