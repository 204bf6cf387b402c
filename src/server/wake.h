/* A wake-up descriptor: a non-blocking self-pipe that a thread sleeping in
 * poll() watches. The engine's stream notifier writes it
 * (qtts_stream_set_notify_fd), and so do the server's stop paths, so a
 * session sleeps until there is something to do instead of looking on a
 * timer. A pipe rather than an eventfd: the same code on Linux, macOS and
 * the BSDs. */
#ifndef QTTS_SERVER_WAKE_H
#define QTTS_SERVER_WAKE_H

typedef struct {
    int rd, wr; /* -1 when closed */
} srv_wake;

/* Returns 0, or -1 with errno set. */
int srv_wake_open(srv_wake *w);
/* Makes rd readable (never blocks: a full pipe is already readable). Safe
 * from any thread, also under other locks. */
void srv_wake_signal(const srv_wake *w);
/* Reads everything pending, so the next poll() sleeps again. */
void srv_wake_drain(const srv_wake *w);
void srv_wake_close(srv_wake *w);

#endif
