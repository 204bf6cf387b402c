/* multipart/form-data parser on arbitrary bytes. The first line (up to LF) is
 * the Content-Type header value, the rest the body; every part found must lie
 * inside the body. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/multipart.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nl = memchr(data, '\n', size < 256 ? size : 256);
    char ct[260] = "multipart/form-data; boundary=XyZ";
    const uint8_t *body = data;
    size_t len = size;
    if (nl) {
        size_t k = (size_t)(nl - data);
        memcpy(ct, data, k);
        ct[k] = 0;
        body = nl + 1;
        len = size - k - 1;
    }
    srv_form_part parts[8];
    const char *why = NULL;
    int n = srv_multipart_parse(ct, body, len, parts, 8, &why);
    if (n < 0 && !why) abort();
    for (int i = 0; i < n; i++) {
        const srv_form_part *p = &parts[i];
        if (p->data < body || p->data + p->len > body + len || !p->name || !p->name_len) abort();
    }
    (void)srv_form_find(parts, n > 0 ? n : 0, "name");
    return 0;
}
