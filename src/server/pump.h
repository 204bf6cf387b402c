/* The stream pump: one server thread, started with the server, that resumes
 * the HTTP connections suspended waiting for their synthesis. HTTP threads
 * never wait for synthesis: a speech response with nothing to send suspends
 * its connection (a request queued behind a full batch costs a suspended
 * connection, not a stalled HTTP thread, which would also stall the other
 * connections it serves).
 *
 * The pump sleeps in poll() until something happens: the engine's notifier
 * of a job's stream (srv_job_notify), a suspended client hanging up, the
 * earliest deadline of a suspended job, or a stop or abort (srv_pump_kick).
 * It never reads audio: the HTTP thread reads its session when resumed. The
 * one place an HTTP thread waits on the engine is voice extraction
 * (registration, inline ref_audio): it blocks, computing nothing, until the
 * engine job has run. */
#ifndef QTTS_SERVER_PUMP_H
#define QTTS_SERVER_PUMP_H

#include <microhttpd.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct srv_pump srv_pump;

/* One request's side of the pump. The flags are under the pump's lock, but
 * ready, which the engine thread sets. */
typedef struct srv_job {
    srv_pump *pump;
    struct MHD_Connection *conn; /* the connection to resume */
    long long deadline_ms;       /* the pump resumes a suspended job past it */
    atomic_int ready;            /* the stream changed since the reader last looked */
    int suspended;
    int gone;                    /* the client hung up while suspended */
    struct srv_job *next;
    int listed;
} srv_job;

/* aborting: the server's flag (srv_pump_kick after setting it resumes every
 * suspended job); wakeups: counts the pump's wake-ups (/metrics). */
srv_pump *srv_pump_start(atomic_int *aborting, atomic_uint_least64_t *wakeups, char *err, size_t err_size);
/* Resumes every suspended job and stops the thread; later waits do not suspend. */
void srv_pump_stop(srv_pump *p);
void srv_pump_free(srv_pump *p);
/* Wakes the pump to look at every job again (the server started aborting). */
void srv_pump_kick(srv_pump *p);

/* Lists j (conn and deadline_ms set) before its stream's notifier is set. */
void srv_pump_add(srv_pump *p, srv_job *j);
/* After this returns the pump no longer touches j. */
void srv_pump_remove(srv_pump *p, srv_job *j);
/* The stream notifier (qtts_stream_notify_fn) of a listed job: marks it
 * ready and wakes the pump. Only signals; runs on the engine thread. */
void srv_job_notify(void *job);
/* 1 once the pump saw the client hang up. */
int srv_job_gone(srv_job *j);
/* Called from an access handler or content reader that found nothing to do:
 * suspends the connection (returns 1; the pump resumes it when there is
 * something) unless the stream changed meanwhile, the client is gone, the
 * deadline passed or the pump is stopping (returns 0: look again). */
int srv_job_wait(srv_job *j);

#endif
