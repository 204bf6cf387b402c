/* Writing a whole buffer to a client socket, blocking or not: the one send
 * loop of the WebSocket and Wyoming sessions. */
#ifndef QTTS_SERVER_SEND_H
#define QTTS_SERVER_SEND_H

#include <stddef.h>

/* Sends n bytes; a client that accepts nothing for timeout_ms is dropped
 * (-1), as is a closed or failed socket. Never raises SIGPIPE. */
int srv_send_all(int fd, const void *p, size_t n, int timeout_ms);

#endif
