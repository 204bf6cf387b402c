#include "server/metrics.h"

#include <string.h>

static const double k_ttfa_bounds[SRV_HIST_BUCKETS] = {0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
static const double k_rtf_bounds[SRV_HIST_BUCKETS] = {0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 5};

static void hist_init(srv_hist *h, const double *bounds) {
    h->bounds = bounds;
    for (int i = 0; i <= SRV_HIST_BUCKETS; i++) atomic_init(&h->counts[i], 0);
    atomic_init(&h->sum_micro, 0);
}

void srv_metrics_init(srv_metrics *m) {
    for (int i = 0; i < 600; i++) atomic_init(&m->by_status[i], 0);
    atomic_init(&m->speech_requests, 0);
    atomic_init(&m->voice_registrations, 0);
    atomic_init(&m->disconnects, 0);
    atomic_init(&m->audio_samples_out, 0);
    atomic_init(&m->stream_wakeups, 0);
    atomic_init(&m->inflight, 0);
    hist_init(&m->ttfa, k_ttfa_bounds);
    hist_init(&m->rtf, k_rtf_bounds);
}

void srv_metrics_status(srv_metrics *m, int status) {
    if (status >= 100 && status < 600) atomic_fetch_add(&m->by_status[status], 1);
}

void srv_hist_observe(srv_hist *h, double v) {
    if (!(v >= 0)) v = 0;
    int i = 0;
    while (i < SRV_HIST_BUCKETS && v > h->bounds[i]) i++;
    atomic_fetch_add(&h->counts[i], 1);
    atomic_fetch_add(&h->sum_micro, (uint_least64_t)(v * 1e6 + 0.5));
}

static int render_hist(srv_buf *o, const char *name, const char *help, srv_hist *h) {
    int rc = srv_buf_printf(o, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t cum = 0;
    for (int i = 0; i <= SRV_HIST_BUCKETS; i++) {
        cum += atomic_load(&h->counts[i]);
        if (i < SRV_HIST_BUCKETS)
            rc |= srv_buf_printf(o, "%s_bucket{le=\"%g\"} %llu\n", name, h->bounds[i], (unsigned long long)cum);
        else
            rc |= srv_buf_printf(o, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)cum);
    }
    rc |= srv_buf_printf(o, "%s_sum %.6f\n%s_count %llu\n", name, (double)atomic_load(&h->sum_micro) / 1e6, name,
                         (unsigned long long)cum);
    return rc;
}

int srv_metrics_render(srv_metrics *m, qtts_engine *e, int sample_rate, srv_buf *o) {
    int rc = srv_buf_printf(o, "# HELP qtts_http_requests_total HTTP responses by status code.\n"
                               "# TYPE qtts_http_requests_total counter\n");
    for (int s = 100; s < 600; s++) {
        uint64_t n = atomic_load(&m->by_status[s]);
        if (n) rc |= srv_buf_printf(o, "qtts_http_requests_total{code=\"%d\"} %llu\n", s, (unsigned long long)n);
    }
    rc |= srv_buf_printf(o,
                         "# HELP qtts_speech_requests_total Speech requests accepted by the engine.\n"
                         "# TYPE qtts_speech_requests_total counter\nqtts_speech_requests_total %llu\n"
                         "# HELP qtts_voice_registrations_total Voices registered through the API.\n"
                         "# TYPE qtts_voice_registrations_total counter\nqtts_voice_registrations_total %llu\n"
                         "# HELP qtts_client_disconnects_total Requests cancelled because the client went away.\n"
                         "# TYPE qtts_client_disconnects_total counter\nqtts_client_disconnects_total %llu\n"
                         "# HELP qtts_inflight_requests Requests being processed by the server.\n"
                         "# TYPE qtts_inflight_requests gauge\nqtts_inflight_requests %d\n"
                         "# HELP qtts_audio_sent_seconds_total Seconds of audio sent to clients.\n"
                         "# TYPE qtts_audio_sent_seconds_total counter\nqtts_audio_sent_seconds_total %.3f\n"
                         "# HELP qtts_stream_wakeups_total Wake-ups of the threads waiting for synthesis (each on "
                         "an event, never on a timer).\n"
                         "# TYPE qtts_stream_wakeups_total counter\nqtts_stream_wakeups_total %llu\n",
                         (unsigned long long)atomic_load(&m->speech_requests),
                         (unsigned long long)atomic_load(&m->voice_registrations),
                         (unsigned long long)atomic_load(&m->disconnects), atomic_load(&m->inflight),
                         (double)atomic_load(&m->audio_samples_out) / (sample_rate > 0 ? sample_rate : 24000),
                         (unsigned long long)atomic_load(&m->stream_wakeups));
    rc |= render_hist(o, "qtts_time_to_first_audio_seconds", "Time from request to the first audio samples.",
                      &m->ttfa);
    rc |= render_hist(o, "qtts_real_time_factor", "Processing time divided by audio duration, per request.",
                      &m->rtf);
    if (e) {
        qtts_engine_stats st;
        memset(&st, 0, sizeof st);
        qtts_engine_get_stats(e, &st);
        rc |= srv_buf_printf(o,
                             "# HELP qtts_queue_depth Requests waiting for a batch slot.\n"
                             "# TYPE qtts_queue_depth gauge\nqtts_queue_depth %d\n"
                             "# HELP qtts_active_slots Requests being synthesized.\n"
                             "# TYPE qtts_active_slots gauge\nqtts_active_slots %d\n"
                             "# HELP qtts_engine_requests_total Engine requests by outcome.\n"
                             "# TYPE qtts_engine_requests_total counter\n"
                             "qtts_engine_requests_total{outcome=\"done\"} %llu\n"
                             "qtts_engine_requests_total{outcome=\"failed\"} %llu\n"
                             "qtts_engine_requests_total{outcome=\"cancelled\"} %llu\n"
                             "# HELP qtts_audio_seconds_total Seconds of audio synthesized by the engine.\n"
                             "# TYPE qtts_audio_seconds_total counter\nqtts_audio_seconds_total %.3f\n"
                             "# HELP qtts_frames_total Codec frames generated.\n"
                             "# TYPE qtts_frames_total counter\nqtts_frames_total %llu\n"
                             "# HELP qtts_finished_total Completed utterances by how they ended (eos: the model "
                             "ended it; max_frames: the frame limit; guard: the runaway guard, by reason).\n"
                             "# TYPE qtts_finished_total counter\n"
                             "qtts_finished_total{by=\"eos\"} %llu\n"
                             "qtts_finished_total{by=\"max_frames\"} %llu\n"
                             "qtts_finished_total{by=\"guard\",reason=\"length\"} %llu\n"
                             "qtts_finished_total{by=\"guard\",reason=\"repetition\"} %llu\n",
                             st.queued, st.active_slots, (unsigned long long)st.requests_done,
                             (unsigned long long)st.requests_failed, (unsigned long long)st.requests_cancelled,
                             st.audio_seconds_total, (unsigned long long)st.frames_total,
                             (unsigned long long)st.finished_eos, (unsigned long long)st.finished_max_frames,
                             (unsigned long long)st.finished_guard_length,
                             (unsigned long long)st.finished_guard_repetition);
        int tids[256];
        int n = qtts_engine_thread_ids(e, tids, 256);
        rc |= srv_buf_printf(o, "# HELP qtts_engine_thread Kernel thread ids of the engine thread (role=engine) "
                                "and its pool workers (role=worker).\n# TYPE qtts_engine_thread gauge\n");
        for (int i = 0; i < n && i < 256; i++)
            rc |= srv_buf_printf(o, "qtts_engine_thread{tid=\"%d\",role=\"%s\"} 1\n", tids[i],
                                 i == 0 ? "engine" : "worker");
    }
    return rc ? -1 : 0;
}
