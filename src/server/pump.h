/* The stream pump: one server thread, started with the server, that moves
 * audio from the engine's per-request streams (qtts_stream_read with a zero
 * timeout) into per-request buffers and resumes the HTTP connections that
 * were suspended waiting for it. HTTP threads therefore never wait for
 * synthesis: a request queued behind a full batch costs a suspended
 * connection, not a stalled HTTP thread (which would also stall the other
 * connections it serves). The one place an HTTP thread waits on the engine is
 * voice extraction (registration, inline ref_audio): it blocks, computing
 * nothing, until the engine job has run. */
#ifndef QTTS_SERVER_PUMP_H
#define QTTS_SERVER_PUMP_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "qtts.h"

typedef struct srv_pump srv_pump;

/* One request's side of the pump. Fields under mu unless noted. */
typedef struct srv_job {
    qtts_stream *st;              /* set before srv_pump_add; owned by the caller */
    struct MHD_Connection *conn;  /* the connection to resume */
    long long deadline_ms;        /* the pump resumes a suspended job past it */
    pthread_mutex_t mu;
    float *pcm;                   /* samples read from the engine, not yet taken */
    size_t len, cap;
    int end;                      /* 0 running, 1 done, -1 failed (error) */
    int oom;                      /* the pump could not buffer samples */
    char error[256];
    int suspended;
    int gone;                     /* the client hung up while suspended */
    struct srv_job *next;         /* pump list (under the pump's lock) */
    int listed;                   /* (under the pump's lock) */
} srv_job;

/* aborting: the server's flag; when set, suspended jobs are resumed. */
srv_pump *srv_pump_start(atomic_int *aborting, char *err, size_t err_size);
/* Resumes every suspended job and stops the thread; later waits do not suspend. */
void srv_pump_stop(srv_pump *p);
void srv_pump_free(srv_pump *p);

void srv_job_init(srv_job *j);
void srv_job_destroy(srv_job *j);
void srv_pump_add(srv_pump *p, srv_job *j);
/* After this returns the pump no longer touches j. */
void srv_pump_remove(srv_pump *p, srv_job *j);

typedef enum { JOB_SAMPLES, JOB_DONE, JOB_FAILED, JOB_GONE, JOB_EMPTY } srv_take;
/* Moves up to max buffered samples into out (*n). JOB_DONE / JOB_FAILED
 * only once all samples were taken. */
srv_take srv_job_take(srv_job *j, float *out, size_t max, size_t *n);
/* Called from an access handler or content reader with nothing to do:
 * suspends the connection (returns 1; the pump resumes it when there is
 * something) unless something arrived meanwhile or the pump is stopping
 * (returns 0: look again). */
int srv_job_wait(srv_pump *p, srv_job *j);

#endif
