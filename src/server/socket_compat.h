/* The few Linux socket conveniences the servers use, with portable
 * fallbacks for macOS and the BSDs (which lack accept4, pipe2, SOCK_CLOEXEC
 * or MSG_NOSIGNAL): close-on-exec descriptors and no SIGPIPE on a closed peer. */
#ifndef QTTS_SERVER_SOCKET_COMPAT_H
#define QTTS_SERVER_SOCKET_COMPAT_H

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#if defined(MSG_NOSIGNAL)
#define QTTS_MSG_NOSIGNAL MSG_NOSIGNAL
#else
#define QTTS_MSG_NOSIGNAL 0 /* the socket has SO_NOSIGPIPE instead (qtts_socket_nosigpipe) */
#endif

static inline int qtts_set_cloexec(int fd) {
    int fl = fcntl(fd, F_GETFD);
    return fl < 0 ? -1 : fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
}

/* Where send() has no MSG_NOSIGNAL, the socket itself is told not to raise SIGPIPE. */
static inline void qtts_socket_nosigpipe(int fd) {
#if !defined(MSG_NOSIGNAL) && defined(SO_NOSIGPIPE)
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one);
#else
    (void)fd;
#endif
}

static inline int qtts_socket_cloexec(int domain, int type, int protocol) {
#if defined(SOCK_CLOEXEC)
    int fd = socket(domain, type | SOCK_CLOEXEC, protocol);
#else
    int fd = socket(domain, type, protocol);
    if (fd >= 0) qtts_set_cloexec(fd);
#endif
    if (fd >= 0) qtts_socket_nosigpipe(fd);
    return fd;
}

static inline int qtts_accept_cloexec(int listen_fd) {
#if defined(__linux__)
    int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
#else
    int fd = accept(listen_fd, NULL, NULL);
    if (fd >= 0) qtts_set_cloexec(fd);
#endif
    if (fd >= 0) qtts_socket_nosigpipe(fd);
    return fd;
}

static inline int qtts_pipe_cloexec(int fds[2]) {
#if defined(__linux__)
    return pipe2(fds, O_CLOEXEC);
#else
    if (pipe(fds)) return -1;
    qtts_set_cloexec(fds[0]);
    qtts_set_cloexec(fds[1]);
    return 0;
#endif
}

#endif
