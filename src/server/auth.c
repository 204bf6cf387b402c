#include "server/auth.h"

#include <string.h>
#include <strings.h>

int srv_ct_equal(const char *a, size_t a_len, const char *b, size_t b_len) {
    /* Compare over the longer length so a short guess is not faster to reject. */
    size_t n = a_len > b_len ? a_len : b_len;
    volatile unsigned char diff = (unsigned char)(a_len != b_len);
    for (size_t i = 0; i < n; i++) {
        unsigned char x = i < a_len ? (unsigned char)a[i] : 0;
        unsigned char y = i < b_len ? (unsigned char)b[i] : 0;
        diff |= (unsigned char)(x ^ y);
    }
    return diff == 0;
}

int srv_auth_bearer_ok(const char *header, const char *key) {
    if (!header || !key) return 0;
    if (strncasecmp(header, "Bearer ", 7) != 0) return 0;
    const char *tok = header + 7;
    while (*tok == ' ') tok++;
    size_t n = strlen(tok);
    while (n && (tok[n - 1] == ' ' || tok[n - 1] == '\t')) n--;
    return srv_ct_equal(tok, n, key, strlen(key));
}
