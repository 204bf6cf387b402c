#include "server/send.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

#include "core/clock.h"
#include "server/socket_compat.h"

int srv_send_all(int fd, const void *p, size_t n, int timeout_ms) {
    const unsigned char *b = p;
    double deadline = qtts_now_ms() + timeout_ms;
    while (n) {
        ssize_t w = send(fd, b, n, QTTS_MSG_NOSIGNAL);
        if (w > 0) {
            b += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        /* A non-blocking socket with a full buffer, or a blocking one whose
         * SO_SNDTIMEO ran out: wait for room until the deadline. */
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int left = (int)(deadline - qtts_now_ms());
            struct pollfd pf = {.fd = fd, .events = POLLOUT};
            if (left <= 0 || poll(&pf, 1, left) <= 0) return -1;
            continue;
        }
        return -1;
    }
    return 0;
}
