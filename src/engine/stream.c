#include "engine/stream.h"

#include "engine/executor.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The clock of the stream's timed waits: monotonic where the condition
 * variable can use it (macOS cannot set a condition variable's clock). */
#if defined(__APPLE__)
#define STREAM_WAIT_CLOCK CLOCK_REALTIME
#else
#define STREAM_WAIT_CLOCK CLOCK_MONOTONIC
#endif

qtts_stream *stream_new(void) {
    qtts_stream *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
#if !defined(__APPLE__)
    pthread_condattr_setclock(&attr, STREAM_WAIT_CLOCK);
#endif
    pthread_cond_init(&s->changed, &attr);
    pthread_condattr_destroy(&attr);
    atomic_init(&s->refs, 2); /* the reader and the engine */
    s->notify_fd = -1;
    s->state = STREAM_QUEUED;
    return s;
}

/* Under s->mu: tells the reader that something changed. */
static void notify_reader(qtts_stream *s) {
    if (s->notify) s->notify(s->notify_user);
    if (s->notify_fd >= 0) {
        uint64_t one = 1;
        ssize_t w;
        do w = write(s->notify_fd, &one, sizeof one);
        while (w < 0 && errno == EINTR);
        /* EAGAIN (a full pipe or an eventfd at its maximum): a wake-up is already pending */
    }
}

static int readable_locked(const qtts_stream *s) {
    return s->tail > s->head || s->state == STREAM_DONE || s->state == STREAM_FAILED;
}

void qtts_stream_set_notify(qtts_stream *s, qtts_stream_notify_fn fn, void *user) {
    pthread_mutex_lock(&s->mu);
    s->notify = fn;
    s->notify_user = user;
    if (fn && readable_locked(s)) fn(user);
    pthread_mutex_unlock(&s->mu);
}

void qtts_stream_set_notify_fd(qtts_stream *s, int fd) {
    pthread_mutex_lock(&s->mu);
    s->notify_fd = fd < 0 ? -1 : fd;
    qtts_stream_notify_fn fn = s->notify;
    s->notify = NULL; /* only the fd for this one call */
    if (s->notify_fd >= 0 && readable_locked(s)) notify_reader(s);
    s->notify = fn;
    pthread_mutex_unlock(&s->mu);
}

void stream_release(qtts_stream *s) {
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->changed);
    free(s->pcm);
    free(s->codes);
    free(s->text_in);
    free(s);
}

int stream_push(qtts_stream *s, const float *pcm, size_t n) {
    pthread_mutex_lock(&s->mu);
    if (s->tail + n > s->cap) {
        /* compact first, grow if still short */
        if (s->head > 0) {
            memmove(s->pcm, s->pcm + s->head, (s->tail - s->head) * sizeof(float));
            s->tail -= s->head;
            s->head = 0;
        }
        if (s->tail + n > s->cap) {
            size_t cap = s->cap ? s->cap : 24000;
            while (cap < s->tail + n) cap *= 2;
            float *np = realloc(s->pcm, cap * sizeof(float));
            if (!np) {
                pthread_mutex_unlock(&s->mu);
                return -1;
            }
            s->pcm = np;
            s->cap = cap;
        }
    }
    memcpy(s->pcm + s->tail, pcm, n * sizeof(float));
    s->tail += n;
    pthread_cond_broadcast(&s->changed);
    notify_reader(s);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

void stream_set_running(qtts_stream *s) {
    pthread_mutex_lock(&s->mu);
    if (s->state == STREAM_QUEUED) s->state = STREAM_RUNNING;
    pthread_mutex_unlock(&s->mu);
}

void stream_finish(qtts_stream *s, const qtts_result *r, const engine_request_times *t) {
    pthread_mutex_lock(&s->mu);
    if (s->state != STREAM_FAILED) {
        s->state = STREAM_DONE;
        if (r) s->result = *r;
        if (t) s->times = *t;
    }
    pthread_cond_broadcast(&s->changed);
    notify_reader(s);
    pthread_mutex_unlock(&s->mu);
}

void stream_fail(qtts_stream *s, qtts_status status, const char *msg) {
    pthread_mutex_lock(&s->mu);
    if (s->state != STREAM_DONE && s->state != STREAM_FAILED) {
        s->state = STREAM_FAILED;
        s->status = status;
        snprintf(s->error, sizeof s->error, "%s", msg);
    }
    pthread_cond_broadcast(&s->changed);
    notify_reader(s);
    pthread_mutex_unlock(&s->mu);
}

long qtts_stream_read(qtts_stream *s, float *buf, size_t max, int timeout_ms) {
    struct timespec deadline;
    clock_gettime(STREAM_WAIT_CLOCK, &deadline);
    if (timeout_ms > 0) {
        deadline.tv_sec += timeout_ms / 1000;
        deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000L;
        }
    }
    pthread_mutex_lock(&s->mu);
    for (;;) {
        if (atomic_load(&s->cancelled) && s->state != STREAM_DONE) {
            if (s->state != STREAM_FAILED) {
                snprintf(s->error, sizeof s->error, "cancelled");
                s->status = QTTS_ERR_CANCELLED;
            }
            pthread_mutex_unlock(&s->mu);
            return QTTS_STREAM_ERROR;
        }
        if (s->tail > s->head) {
            size_t n = s->tail - s->head;
            if (n > max) n = max;
            memcpy(buf, s->pcm + s->head, n * sizeof(float));
            s->head += n;
            pthread_mutex_unlock(&s->mu);
            return (long)n;
        }
        if (s->state == STREAM_DONE) {
            pthread_mutex_unlock(&s->mu);
            return 0;
        }
        if (s->state == STREAM_FAILED) {
            pthread_mutex_unlock(&s->mu);
            return QTTS_STREAM_ERROR;
        }
        if (timeout_ms == 0) {
            pthread_mutex_unlock(&s->mu);
            return QTTS_STREAM_TIMEOUT;
        }
        if (timeout_ms < 0) {
            pthread_cond_wait(&s->changed, &s->mu);
        } else if (pthread_cond_timedwait(&s->changed, &s->mu, &deadline) == ETIMEDOUT) {
            pthread_mutex_unlock(&s->mu);
            return QTTS_STREAM_TIMEOUT;
        }
    }
}

const char *qtts_stream_error(const qtts_stream *s) { return s->error; }

qtts_status qtts_stream_status(const qtts_stream *s) {
    pthread_mutex_lock((pthread_mutex_t *)&s->mu);
    qtts_status st = s->state == STREAM_FAILED || (atomic_load(&s->cancelled) && s->state != STREAM_DONE)
                         ? (s->status ? s->status : QTTS_ERR_CANCELLED)
                         : QTTS_OK;
    pthread_mutex_unlock((pthread_mutex_t *)&s->mu);
    return st;
}

void stream_set_codes(qtts_stream *s, int32_t *codes, size_t n_frames, int n_codebooks) {
    pthread_mutex_lock(&s->mu);
    free(s->codes);
    s->codes = codes;
    s->n_code_frames = n_frames;
    s->n_codebooks = n_codebooks;
    pthread_mutex_unlock(&s->mu);
}

const int32_t *qtts_stream_codes(const qtts_stream *s, size_t *n_frames, int *n_codebooks) {
    pthread_mutex_lock((pthread_mutex_t *)&s->mu);
    const int32_t *c = s->state == STREAM_DONE ? s->codes : NULL;
    if (n_frames) *n_frames = c ? s->n_code_frames : 0;
    if (n_codebooks) *n_codebooks = s->n_codebooks;
    pthread_mutex_unlock((pthread_mutex_t *)&s->mu);
    return c;
}

void qtts_stream_result(const qtts_stream *s, qtts_result *out) {
    pthread_mutex_lock((pthread_mutex_t *)&s->mu);
    *out = s->result;
    pthread_mutex_unlock((pthread_mutex_t *)&s->mu);
}

qtts_status qtts_stream_append_text(qtts_stream *s, const char *utf8, size_t len, int is_last, qtts_error *err) {
    qtts_status st = QTTS_OK;
    const char *why = NULL;
    pthread_mutex_lock(&s->mu);
    if (!s->text_incremental) st = QTTS_ERR_INVALID, why = "this request was not submitted with text_incomplete";
    else if (s->text_closed) st = QTTS_ERR_INVALID, why = "the request's text is already complete";
    else if (s->state == STREAM_FAILED) st = s->status, why = s->error;
    else if (s->state == STREAM_DONE) st = QTTS_ERR_INVALID, why = "the request has already finished";
    else if (len > s->text_max - s->text_len) st = QTTS_ERR_INVALID, why = "the text is longer than 64 KiB";
    else if (len) {
        if (s->text_len + len + 1 > s->text_cap) {
            size_t cap = s->text_cap ? s->text_cap : 256;
            while (cap < s->text_len + len + 1) cap *= 2;
            char *nb = realloc(s->text_in, cap);
            if (!nb) st = QTTS_ERR_NO_MEMORY, why = "out of memory";
            else s->text_in = nb, s->text_cap = cap;
        }
        if (st == QTTS_OK) {
            memcpy(s->text_in + s->text_len, utf8, len);
            s->text_len += len;
            s->text_in[s->text_len] = 0;
        }
    }
    if (st == QTTS_OK && is_last) s->text_closed = 1;
    if (st != QTTS_OK && err) {
        err->status = st;
        snprintf(err->message, sizeof err->message, "%s", why && *why ? why : "the request failed");
    }
    struct qtts_exec *exec = s->exec;
    pthread_mutex_unlock(&s->mu);
    if (st == QTTS_OK && exec) qtts_exec_wake(exec);
    return st;
}

long stream_text_pull(qtts_stream *s, size_t from, char **buf, size_t *cap, int *closed) {
    pthread_mutex_lock(&s->mu);
    size_t n = s->text_len;
    long rc = (long)n;
    if (n + 1 > *cap) {
        char *nb = realloc(*buf, n + 1);
        if (!nb) rc = -1;
        else *buf = nb, *cap = n + 1;
    }
    if (rc >= 0) {
        if (n > from) memcpy(*buf + from, s->text_in + from, n - from);
        (*buf)[n] = 0;
        *closed = s->text_closed;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

void qtts_stream_cancel(qtts_stream *s) {
    atomic_store(&s->cancelled, 1);
    pthread_mutex_lock(&s->mu);
    pthread_cond_broadcast(&s->changed);
    struct qtts_exec *exec = s->state == STREAM_DONE || s->state == STREAM_FAILED ? NULL : s->exec;
    pthread_mutex_unlock(&s->mu);
    /* the engine may be asleep (every request waiting for text): it retires cancelled requests when it wakes */
    if (exec) qtts_exec_wake(exec);
}

void qtts_stream_free(qtts_stream *s) {
    if (!s) return;
    qtts_stream_cancel(s);
    stream_release(s);
}

int engine_stream_times(qtts_stream *s, engine_request_times *out) {
    pthread_mutex_lock(&s->mu);
    int done = s->state == STREAM_DONE && s->head == s->tail;
    if (done) *out = s->times;
    pthread_mutex_unlock(&s->mu);
    return done ? 0 : -1;
}
