#include "engine/executor.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct job {
    qtts_job_fn fn;
    void *ctx;
    int done;
    pthread_cond_t done_cv;
    struct job *next;
} job;

struct qtts_exec {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t has_work;
    job *head, *tail;
    int stopping;
    int wake_pending;
    qtts_idle_fn idle;
    void *idle_ctx;
    int n_threads;
    qtts_pool *pool;
    int start_failed;
    int started;
    pthread_cond_t started_cv;
    qtts_err start_err;
};

static void *engine_main(void *p) {
    qtts_exec *ex = p;
    qtts_pool *pool = qtts_pool_create(ex->n_threads, &ex->start_err);
    pthread_mutex_lock(&ex->mu);
    ex->pool = pool;
    ex->start_failed = pool == NULL;
    ex->started = 1;
    pthread_cond_broadcast(&ex->started_cv);
    pthread_mutex_unlock(&ex->mu);
    if (!pool) return NULL;

    for (;;) {
        pthread_mutex_lock(&ex->mu);
        while (!ex->head && !ex->stopping && !ex->wake_pending) pthread_cond_wait(&ex->has_work, &ex->mu);
        job *j = ex->head;
        if (!j) {
            if (ex->stopping) { /* stopping and drained */
                pthread_mutex_unlock(&ex->mu);
                break;
            }
            /* Woken for the frame loop: step until it has nothing to do or a
             * job is waiting (jobs run between frames). */
            ex->wake_pending = 0;
            qtts_idle_fn idle = ex->idle;
            void *ctx = ex->idle_ctx;
            pthread_mutex_unlock(&ex->mu);
            if (!idle) continue;
            for (;;) {
                int more = idle(pool, ctx);
                pthread_mutex_lock(&ex->mu);
                int job_waiting = ex->head != NULL || ex->stopping;
                if (more && job_waiting) ex->wake_pending = 1; /* resume stepping after the job */
                pthread_mutex_unlock(&ex->mu);
                if (!more || job_waiting) break;
            }
            continue;
        }
        ex->head = j->next;
        if (!ex->head) ex->tail = NULL;
        pthread_mutex_unlock(&ex->mu);

        j->fn(pool, j->ctx);

        pthread_mutex_lock(&ex->mu);
        j->done = 1;
        pthread_cond_signal(&j->done_cv);
        pthread_mutex_unlock(&ex->mu);
    }
    qtts_pool_free(pool);
    return NULL;
}

qtts_exec *qtts_exec_create(int n_threads, qtts_err *err) {
    qtts_exec *ex = qtts_calloc(1, sizeof *ex, err);
    if (!ex) return NULL;
    ex->n_threads = n_threads < 1 ? 1 : n_threads;
    pthread_mutex_init(&ex->mu, NULL);
    pthread_cond_init(&ex->has_work, NULL);
    pthread_cond_init(&ex->started_cv, NULL);
    if (pthread_create(&ex->thread, NULL, engine_main, ex) != 0) {
        qtts_fail(err, "could not start the engine thread");
        free(ex);
        return NULL;
    }
    pthread_mutex_lock(&ex->mu);
    while (!ex->started) pthread_cond_wait(&ex->started_cv, &ex->mu);
    pthread_mutex_unlock(&ex->mu);
    if (ex->start_failed) {
        if (err) *err = ex->start_err;
        pthread_join(ex->thread, NULL);
        free(ex);
        return NULL;
    }
    return ex;
}

void qtts_exec_free(qtts_exec *ex) {
    if (!ex) return;
    pthread_mutex_lock(&ex->mu);
    ex->stopping = 1;
    pthread_cond_broadcast(&ex->has_work);
    pthread_mutex_unlock(&ex->mu);
    pthread_join(ex->thread, NULL);
    pthread_mutex_destroy(&ex->mu);
    pthread_cond_destroy(&ex->has_work);
    pthread_cond_destroy(&ex->started_cv);
    free(ex);
}

int qtts_exec_on_engine_thread(const qtts_exec *ex) { return pthread_equal(pthread_self(), ex->thread); }

void qtts_exec_call(qtts_exec *ex, qtts_job_fn fn, void *ctx) {
    if (qtts_exec_on_engine_thread(ex)) {
        fn(ex->pool, ctx);
        return;
    }
    job j = {.fn = fn, .ctx = ctx};
    pthread_cond_init(&j.done_cv, NULL);
    pthread_mutex_lock(&ex->mu);
    if (ex->tail) ex->tail->next = &j;
    else ex->head = &j;
    ex->tail = &j;
    pthread_cond_signal(&ex->has_work);
    while (!j.done) pthread_cond_wait(&j.done_cv, &ex->mu);
    pthread_mutex_unlock(&ex->mu);
    pthread_cond_destroy(&j.done_cv);
}

void qtts_exec_set_idle(qtts_exec *ex, qtts_idle_fn idle, void *ctx) {
    pthread_mutex_lock(&ex->mu);
    ex->idle = idle;
    ex->idle_ctx = ctx;
    pthread_mutex_unlock(&ex->mu);
}

void qtts_exec_wake(qtts_exec *ex) {
    pthread_mutex_lock(&ex->mu);
    ex->wake_pending = 1;
    pthread_cond_signal(&ex->has_work);
    pthread_mutex_unlock(&ex->mu);
}

int qtts_exec_thread_ids(const qtts_exec *ex, pid_t *out, int max) { return qtts_pool_thread_ids(ex->pool, out, max); }
