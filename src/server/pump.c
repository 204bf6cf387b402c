#include "server/pump.h"
#include "core/clock.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define PUMP_READ_MAX 16384 /* samples per read */
#define PUMP_IDLE_NS (5 * 1000000L)
#define PUMP_GONE_EVERY 20 /* sweeps between hang-up checks of suspended jobs */

struct srv_pump {
    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    srv_job *head;
    atomic_int stopping;
    atomic_int *aborting;
    float buf[PUMP_READ_MAX];
};

static int conn_gone(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return 0;
    struct pollfd pfd = {.fd = ci->connect_fd, .events = POLLIN | POLLRDHUP};
    if (poll(&pfd, 1, 0) <= 0) return 0;
    if (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return 1;
    char ch;
    return (pfd.revents & POLLIN) && recv(ci->connect_fd, &ch, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

/* With j->mu held. */
static void wake(srv_job *j) {
    if (j->suspended) {
        j->suspended = 0;
        MHD_resume_connection(j->conn);
    }
}

static int append(srv_job *j, const float *x, size_t n) {
    if (j->len + n > j->cap) {
        size_t cap = j->cap ? j->cap : 16384;
        while (cap < j->len + n) cap *= 2;
        float *p = realloc(j->pcm, cap * sizeof *p);
        if (!p) return -1;
        j->pcm = p;
        j->cap = cap;
    }
    memcpy(j->pcm + j->len, x, n * sizeof *x);
    j->len += n;
    return 0;
}

static void unlink_job(srv_pump *p, srv_job *j) {
    for (srv_job **pp = &p->head; *pp; pp = &(*pp)->next)
        if (*pp == j) {
            *pp = j->next;
            break;
        }
    j->next = NULL;
    j->listed = 0;
}

static void *pump_main(void *arg) {
    srv_pump *p = arg;
    unsigned long sweep = 0;
    pthread_mutex_lock(&p->mu);
    while (!atomic_load(&p->stopping)) {
        if (!p->head) {
            pthread_cond_wait(&p->cv, &p->mu);
            continue;
        }
        int progressed = 0, check_gone = ++sweep % PUMP_GONE_EVERY == 0;
        int aborting = atomic_load(p->aborting);
        long long now = (long long)qtts_now_ms();
        for (srv_job *j = p->head, *next; j; j = next) {
            next = j->next;
            long n;
            /* Drain what the engine has for this request (bounded per sweep). */
            int reads = 0;
            do {
                n = qtts_stream_read(j->st, p->buf, PUMP_READ_MAX, 0);
                if (n > 0) {
                    pthread_mutex_lock(&j->mu);
                    if (append(j, p->buf, (size_t)n)) {
                        j->oom = 1;
                        j->end = -1;
                        snprintf(j->error, sizeof j->error, "out of memory buffering audio");
                    }
                    wake(j);
                    pthread_mutex_unlock(&j->mu);
                    progressed = 1;
                }
            } while (n > 0 && ++reads < 8 && !j->oom);
            if (j->oom) {
                unlink_job(p, j);
                continue;
            }
            if (n == 0 || n == QTTS_STREAM_ERROR) {
                pthread_mutex_lock(&j->mu);
                j->end = n == 0 ? 1 : -1;
                if (n != 0) {
                    const char *e = qtts_stream_error(j->st);
                    snprintf(j->error, sizeof j->error, "%s", e && *e ? e : "synthesis failed");
                }
                wake(j);
                pthread_mutex_unlock(&j->mu);
                unlink_job(p, j);
                progressed = 1;
                continue;
            }
            if (n == QTTS_STREAM_TIMEOUT && (aborting || check_gone || now > j->deadline_ms)) {
                pthread_mutex_lock(&j->mu);
                if (j->suspended) {
                    if (check_gone && conn_gone(j->conn)) j->gone = 1;
                    if (j->gone || aborting || now > j->deadline_ms) wake(j);
                }
                pthread_mutex_unlock(&j->mu);
            }
        }
        if (!progressed && !atomic_load(&p->stopping)) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += PUMP_IDLE_NS;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&p->cv, &p->mu, &ts);
        }
    }
    /* Stopping: nobody may stay suspended (MHD_stop_daemon requires it). */
    for (srv_job *j = p->head; j; j = j->next) {
        pthread_mutex_lock(&j->mu);
        wake(j);
        pthread_mutex_unlock(&j->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

srv_pump *srv_pump_start(atomic_int *aborting, char *err, size_t err_size) {
    srv_pump *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    atomic_init(&p->stopping, 0);
    p->aborting = aborting;
    int rc = pthread_create(&p->thread, NULL, pump_main, p);
    if (rc) {
        snprintf(err, err_size, "cannot start the stream pump thread: %s", strerror(rc));
        srv_pump_free(p);
        return NULL;
    }
    p->started = 1;
    return p;
}

void srv_pump_stop(srv_pump *p) {
    if (!p || !p->started) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stopping, 1);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    p->started = 0;
}

void srv_pump_free(srv_pump *p) {
    if (!p) return;
    srv_pump_stop(p);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p);
}

void srv_job_init(srv_job *j) {
    memset(j, 0, sizeof *j);
    pthread_mutex_init(&j->mu, NULL);
}

void srv_job_destroy(srv_job *j) {
    free(j->pcm);
    j->pcm = NULL;
    pthread_mutex_destroy(&j->mu);
}

void srv_pump_add(srv_pump *p, srv_job *j) {
    pthread_mutex_lock(&p->mu);
    j->next = p->head;
    p->head = j;
    j->listed = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

void srv_pump_remove(srv_pump *p, srv_job *j) {
    pthread_mutex_lock(&p->mu);
    if (j->listed) unlink_job(p, j);
    pthread_mutex_unlock(&p->mu);
}

srv_take srv_job_take(srv_job *j, float *out, size_t max, size_t *n) {
    *n = 0;
    pthread_mutex_lock(&j->mu);
    srv_take r;
    if (j->len) {
        size_t k = j->len < max ? j->len : max;
        memcpy(out, j->pcm, k * sizeof *out);
        memmove(j->pcm, j->pcm + k, (j->len - k) * sizeof *out);
        j->len -= k;
        *n = k;
        r = JOB_SAMPLES;
    } else if (j->gone) {
        r = JOB_GONE;
    } else if (j->end) {
        r = j->end > 0 ? JOB_DONE : JOB_FAILED;
    } else {
        r = JOB_EMPTY;
    }
    pthread_mutex_unlock(&j->mu);
    return r;
}

int srv_job_wait(srv_pump *p, srv_job *j) {
    pthread_mutex_lock(&j->mu);
    int suspend = !j->len && !j->end && !j->gone && !atomic_load(&p->stopping) && !atomic_load(p->aborting) &&
                  (long long)qtts_now_ms() <= j->deadline_ms;
    if (suspend) {
        j->suspended = 1;
        MHD_suspend_connection(j->conn);
    }
    pthread_mutex_unlock(&j->mu);
    return suspend;
}
