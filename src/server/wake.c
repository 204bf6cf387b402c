#include "server/wake.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "server/socket_compat.h"

static int set_nonblock(int fd) {
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

int srv_wake_open(srv_wake *w) {
    int fds[2];
    w->rd = w->wr = -1;
    if (qtts_pipe_cloexec(fds)) return -1;
    if (set_nonblock(fds[0]) || set_nonblock(fds[1])) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        errno = e;
        return -1;
    }
    w->rd = fds[0];
    w->wr = fds[1];
    return 0;
}

void srv_wake_signal(const srv_wake *w) {
    ssize_t n;
    do n = write(w->wr, "", 1);
    while (n < 0 && errno == EINTR);
    /* EAGAIN: the pipe is full, so rd is readable already */
}

void srv_wake_drain(const srv_wake *w) {
    char buf[256];
    ssize_t n;
    do n = read(w->rd, buf, sizeof buf);
    while (n == (ssize_t)sizeof buf || (n < 0 && errno == EINTR));
}

void srv_wake_close(srv_wake *w) {
    if (w->rd >= 0) close(w->rd);
    if (w->wr >= 0) close(w->wr);
    w->rd = w->wr = -1;
}
