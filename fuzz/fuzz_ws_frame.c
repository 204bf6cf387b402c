/* WebSocket frame parser on arbitrary bytes, fed in two pieces split at the
 * first byte's value: every message must lie inside the buffer, consumed
 * counts must add up, and an error must come with a close code. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/ws_frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!size) return 0;
    size_t split = data[0] % (size + 1);
    unsigned char *buf = malloc(size + 1);
    if (!buf) return 0;
    ws_reader r;
    ws_reader_init(&r, 1 << 16);
    size_t have = 0;
    for (int phase = 0; phase < 2; phase++) {
        size_t from = phase ? split : 1, to = phase ? size : split;
        if (to < from) to = from;
        memcpy(buf + have, data + from, to - from);
        have += to - from;
        for (;;) {
            ws_message m;
            int got = 0, code = 0;
            const char *why = NULL;
            long used = ws_read(&r, buf, have, &m, &got, &code, &why);
            if (used < 0) {
                if (!code || !why) abort();
                goto done;
            }
            if (used == 0) break;
            if ((size_t)used > have) abort();
            if (got && m.len && (m.data < buf || m.data + m.len > buf + have) &&
                (m.data < r.msg || m.data + m.len > r.msg + r.msg_len))
                abort();
            memmove(buf, buf + used, have - (size_t)used);
            have -= (size_t)used;
        }
    }
done:
    ws_reader_free(&r);
    free(buf);
    return 0;
}
