/* The engine object behind include/qtts.h: parameters, info and statistics,
 * creation and teardown. One engine thread (src/engine/executor.c) with its
 * pool does all model compute: loading (engine_load.c), the frame loop
 * (engine_loop.c) and voice extraction (voice.c); request threads only
 * validate and enqueue (engine_submit.c) and read their streams. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine_internal.h"
#include "gpu/device_spec.h"
#include "gpu/gpu_ops.h"
#include "engine/stream.h"

const char *qtts_version(void) { return QTTS_VERSION; }

const char *qtts_finish_reason_name(qtts_finish_reason r) {
    switch (r) {
    case QTTS_FINISHED_EOS: return "eos";
    case QTTS_FINISHED_MAX_FRAMES: return "max_frames";
    case QTTS_FINISHED_GUARD: return "guard";
    }
    return "unknown";
}

const char *qtts_guard_reason_name(qtts_guard_reason g) {
    switch (g) {
    case QTTS_GUARD_NONE: return "none";
    case QTTS_GUARD_LENGTH: return "length";
    case QTTS_GUARD_REPETITION: return "repetition";
    }
    return "unknown";
}

void qtts_engine_params_default(qtts_engine_params *p) { memset(p, 0, sizeof *p); }

void qtts_request_default(qtts_request *r) { memset(r, 0, sizeof *r); }

const qtts_model_info *qtts_engine_info(const qtts_engine *e) { return &e->info; }

void qtts_engine_get_stats(qtts_engine *e, qtts_engine_stats *out) {
    pthread_mutex_lock(&e->mu);
    out->active_slots = e->n_active;
    out->queued = e->n_waiting;
    pthread_mutex_unlock(&e->mu);
    out->requests_done = atomic_load(&e->n_done);
    out->requests_failed = atomic_load(&e->n_failed);
    out->finished_eos = atomic_load(&e->n_eos);
    out->finished_max_frames = atomic_load(&e->n_max_frames);
    out->finished_guard_length = atomic_load(&e->n_guard_length);
    out->finished_guard_repetition = atomic_load(&e->n_guard_repetition);
    out->requests_cancelled = atomic_load(&e->n_cancelled);
    out->requests_on_device = atomic_load(&e->n_on_device);
    out->device_memory_peak = e->gpu ? qtts_gpu_memory_peak(e->gpu) : 0;
    out->frames_decoded_from_device_codes = atomic_load(&e->n_ring_frames);
    out->decoder_steps_in_frame_submissions = atomic_load(&e->n_fused_steps);
    out->frames_total = atomic_load(&e->n_frames);
    out->audio_seconds_total = (double)atomic_load(&e->n_frames) * e->frame_samples / e->sample_rate;
}

int qtts_engine_thread_ids(qtts_engine *e, int *out, int max) {
    pid_t tids[512];
    int n = qtts_exec_thread_ids(e->exec, tids, max < 512 ? max : 512);
    for (int i = 0; i < n; i++) out[i] = (int)tids[i];
    return n;
}

static int online_cpus(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 256 ? 256 : (int)n;
}

/* Everything qtts_engine_create made, in reverse; safe on a partial engine. */
static void engine_destroy(qtts_engine *e) {
    if (e->exec) {
        qtts_exec_call(e->exec, engine_unload_models, e);
        qtts_exec_free(e->exec);
    }
    free(e->speaker_names);
    free(e->language_names);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

qtts_engine *qtts_engine_create(const qtts_engine_params *p, qtts_error *err) {
    qtts_err qe = {0};
    if (!p || !p->model_path || !*p->model_path) {
        qtts_fail_as(&qe, QTTS_ERR_INVALID, "no model given (use --model PATH or set QTTS_MODEL)");
        engine_copy_err(&qe, QTTS_ERR_INVALID, err);
        return NULL;
    }
    qtts_engine *e = calloc(1, sizeof *e);
    if (!e) {
        qtts_fail_as(&qe, QTTS_ERR_NO_MEMORY, "out of memory");
        engine_copy_err(&qe, QTTS_ERR_INVALID, err);
        return NULL;
    }
    pthread_mutex_init(&e->mu, NULL);
    int threads = p->n_threads > 0 ? p->n_threads : online_cpus();
    e->max_batch = p->max_batch > 0 ? p->max_batch : QTTS_DEFAULT_MAX_BATCH;
    if (e->max_batch > QTTS_MAX_BATCH) e->max_batch = QTTS_MAX_BATCH;
    qtts_device_kind device;
    if (p->overlap != QTTS_OVERLAP_AUTO && p->overlap != QTTS_OVERLAP_ALWAYS && p->overlap != QTTS_OVERLAP_NEVER)
        qtts_fail_as(&qe, QTTS_ERR_INVALID, "unknown overlap mode %d", (int)p->overlap);
    else qtts_device_parse(p->device, &device, &qe); /* before the load: a typo is not worth a model load */
    if (qe.msg[0]) {
        engine_copy_err(&qe, QTTS_ERR_INVALID, err);
        pthread_mutex_destroy(&e->mu);
        free(e);
        return NULL;
    }
    e->max_queue = p->max_queue > 0 ? p->max_queue : 4 * e->max_batch + 16;
    e->exec = qtts_exec_create(threads, &qe);
    engine_load_job j = {.e = e, .p = p};
    if (e->exec) qtts_exec_call(e->exec, engine_load_models, &j);
    if (e->exec && j.rc == 0) {
        e->frame_samples = qtts_codec_decoder_frame_samples(e->decoder);
        e->sample_rate = qtts_codec_decoder_sample_rate(e->decoder);
        if (engine_build_name_lists(e)) j.rc = qtts_fail_as(&j.err, QTTS_ERR_NO_MEMORY, "out of memory");
    }
    if (!e->exec || j.rc) {
        /* an unclassified load failure is the model files' (missing, corrupt, unsupported) */
        engine_copy_err(e->exec ? &j.err : &qe, e->exec ? QTTS_ERR_MODEL : QTTS_ERR_INTERNAL, err);
        engine_destroy(e);
        return NULL;
    }
    e->info.n_threads = threads;
    e->overlap_mode = p->overlap;
    e->verbose = p->verbose;
    qtts_exec_set_idle(e->exec, engine_frame_loop, e);
    return e;
}

void engine_hold(qtts_engine *e, int hold) {
    pthread_mutex_lock(&e->mu);
    e->held = hold != 0;
    pthread_mutex_unlock(&e->mu);
    if (!hold) qtts_exec_wake(e->exec);
}

void qtts_engine_free(qtts_engine *e) {
    if (!e) return;
    pthread_mutex_lock(&e->mu);
    atomic_store(&e->stopping, 1);
    slot *w = e->wait_head;
    e->wait_head = e->wait_tail = NULL;
    e->n_waiting = 0;
    pthread_mutex_unlock(&e->mu);
    while (w) {
        slot *next = w->next;
        stream_fail(w->stream, QTTS_ERR_BUSY, "the engine is shutting down");
        slot_free(w);
        w = next;
    }
    qtts_exec_call(e->exec, engine_drain, e);
    engine_destroy(e);
}
