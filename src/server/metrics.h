/* Server counters for GET /metrics (Prometheus text format). All fields are
 * atomics inside the server object; no global state. */
#ifndef QTTS_SERVER_METRICS_H
#define QTTS_SERVER_METRICS_H

#include <stdatomic.h>
#include <stdint.h>

#include "qtts.h"
#include "server/buf.h"

#define SRV_HIST_BUCKETS 10

typedef struct {
    const double *bounds; /* SRV_HIST_BUCKETS upper bounds; +Inf is implicit */
    atomic_uint_least64_t counts[SRV_HIST_BUCKETS + 1];
    atomic_uint_least64_t sum_micro; /* sum of observations x 1e6 */
} srv_hist;

typedef struct {
    atomic_uint_least64_t by_status[600];
    atomic_uint_least64_t speech_requests, voice_registrations, disconnects;
    atomic_uint_least64_t audio_samples_out; /* samples sent to clients */
    /* Wake-ups of the threads that wait for synthesis (the HTTP stream pump,
     * WebSocket sessions): each follows an event (audio, an end, a client
     * message, a deadline), never a timer, so an idle stream adds none. */
    atomic_uint_least64_t stream_wakeups;
    atomic_int inflight;
    srv_hist ttfa; /* seconds from request accepted to first audio */
    srv_hist rtf;  /* processing wall time / audio duration */
} srv_metrics;

void srv_metrics_init(srv_metrics *m);
void srv_metrics_status(srv_metrics *m, int status);
void srv_hist_observe(srv_hist *h, double v);
/* Appends the whole exposition; e may be NULL (then no engine lines). */
int srv_metrics_render(srv_metrics *m, qtts_engine *e, int sample_rate, srv_buf *out);

#endif
