/* Wyoming event parser on arbitrary bytes. The first byte picks the limits
 * (the defaults or small ones, so the over-limit paths are reached) and the
 * size of the pieces the rest is fed in (the parser must not care where the
 * bytes are cut). Every event returned must be well formed, and writing it
 * back and parsing that must give the same event. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/wyoming_frame.h"

static void check_roundtrip(const wy_event *ev) {
    srv_buf b = {0};
    if (wy_write_event(&b, ev->type, ev->data, ev->payload, ev->payload_len)) {
        srv_buf_free(&b);
        return; /* out of memory is allowed */
    }
    wy_reader r;
    wy_reader_init(&r);
    wy_event back;
    if (wy_reader_feed(&r, b.data, b.len) || wy_reader_next(&r, &back) != 1) abort();
    /* Data compared as printed: objects may hold a key twice, which cJSON_Compare does not follow. */
    char *a = cJSON_PrintUnformatted(ev->data), *z = cJSON_PrintUnformatted(back.data);
    if (strcmp(back.type, ev->type) || back.payload_len != ev->payload_len ||
        (ev->payload_len && memcmp(back.payload, ev->payload, ev->payload_len)) || (a && z && strcmp(a, z)) ||
        wy_reader_buffered(&r))
        abort();
    free(a);
    free(z);
    wy_event_free(&back);
    wy_reader_free(&r);
    srv_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!size) return 0;
    wy_reader r;
    wy_reader_init(&r);
    if (data[0] & 1) {
        r.max_header = 200;
        r.max_data = 300;
        r.max_payload = 400;
    }
    size_t piece = 1 + (data[0] >> 1) % 64;
    size_t max_payload = r.max_payload;
    int failed = 0;
    for (size_t at = 1; at < size && !failed;) {
        size_t n = size - at < piece ? size - at : piece;
        if (wy_reader_feed(&r, data + at, n)) break;
        at += n;
        for (;;) {
            wy_event ev;
            int rc = wy_reader_next(&r, &ev);
            if (rc < 0) {
                if (!r.error[0]) abort();
                failed = 1;
                break;
            }
            if (rc == 0) break;
            if (!ev.type || !ev.type[0] || !cJSON_IsObject(ev.data) || ev.payload_len > max_payload ||
                (!ev.payload) != (ev.payload_len == 0))
                abort();
            check_roundtrip(&ev);
            wy_event_free(&ev);
        }
    }
    if (failed && wy_reader_next(&r, &(wy_event){0}) != -1) abort(); /* a failed reader stays failed */
    wy_reader_free(&r);
    return 0;
}
