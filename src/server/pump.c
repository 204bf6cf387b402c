#include "server/pump.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "server/wake.h"

#ifndef POLLRDHUP
#define POLLRDHUP 0 /* outside Linux a hang-up shows as POLLHUP or at the next read */
#endif

struct srv_pump {
    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    srv_job *head;
    unsigned long generation; /* changes when a job leaves the list */
    srv_wake wake;
    atomic_int stopping;
    atomic_int *aborting;
    atomic_uint_least64_t *wakeups;
    struct pollfd *pfd; /* the wake pipe, then one per suspended job (the pump thread's) */
    srv_job **pjob;
    size_t cap;
};

static int conn_fd(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? (int)ci->connect_fd : -1;
}

/* With p->mu held. */
static void resume(srv_job *j) {
    if (!j->suspended) return;
    j->suspended = 0;
    MHD_resume_connection(j->conn);
}

/* With p->mu held: the poll set (the wake pipe and each suspended job's
 * socket, for a hang-up) and the earliest deadline among them. */
static nfds_t build_poll_set(srv_pump *p, long long *deadline) {
    size_t n = 0;
    for (srv_job *j = p->head; j; j = j->next) n += j->suspended;
    if (n + 1 > p->cap) {
        size_t cap = (n + 1) * 2;
        struct pollfd *pf = realloc(p->pfd, cap * sizeof *pf);
        if (pf) p->pfd = pf;
        srv_job **pj = realloc(p->pjob, cap * sizeof *pj);
        if (pj) p->pjob = pj;
        if (pf && pj) p->cap = cap;
    }
    nfds_t k = 0;
    *deadline = -1;
    p->pfd[k++] = (struct pollfd){.fd = p->wake.rd, .events = POLLIN}; /* cap >= 1 from the start */
    for (srv_job *j = p->head; j; j = j->next) {
        if (!j->suspended) continue;
        if (*deadline < 0 || j->deadline_ms < *deadline) *deadline = j->deadline_ms;
        int fd = j->gone ? -1 : conn_fd(j->conn);
        if (fd < 0 || k >= p->cap) continue; /* out of memory: its hang-up is seen at its next event */
        p->pjob[k] = j;
        p->pfd[k++] = (struct pollfd){.fd = fd, .events = POLLRDHUP};
    }
    return k;
}

static void *pump_main(void *arg) {
    srv_pump *p = arg;
    pthread_mutex_lock(&p->mu);
    while (!atomic_load(&p->stopping)) {
        long long deadline;
        nfds_t n = build_poll_set(p, &deadline);
        unsigned long gen = p->generation;
        pthread_mutex_unlock(&p->mu);
        int timeout = -1;
        if (deadline >= 0) {
            long long left = deadline - (long long)qtts_now_ms() + 1;
            timeout = left < 0 ? 0 : left > 1 << 30 ? 1 << 30 : (int)left;
        }
        if (poll(p->pfd, n, timeout) < 0) n = 0; /* EINTR: look at everything again */
        if (p->wakeups) atomic_fetch_add(p->wakeups, 1);
        srv_wake_drain(&p->wake);
        pthread_mutex_lock(&p->mu);
        if (gen == p->generation) /* every polled job is still listed (and suspended: only the pump resumes) */
            for (nfds_t i = 1; i < n; i++)
                if (p->pfd[i].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) p->pjob[i]->gone = 1;
        int aborting = atomic_load(p->aborting);
        long long now = (long long)qtts_now_ms();
        for (srv_job *j = p->head; j; j = j->next)
            if (j->suspended && (atomic_load(&j->ready) || j->gone || aborting || now > j->deadline_ms)) resume(j);
    }
    /* Stopping: nobody may stay suspended (MHD_stop_daemon requires it). */
    for (srv_job *j = p->head; j; j = j->next) resume(j);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

srv_pump *srv_pump_start(atomic_int *aborting, atomic_uint_least64_t *wakeups, char *err, size_t err_size) {
    srv_pump *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    atomic_init(&p->stopping, 0);
    p->aborting = aborting;
    p->wakeups = wakeups;
    p->cap = 16;
    p->pfd = malloc(p->cap * sizeof *p->pfd);
    p->pjob = malloc(p->cap * sizeof *p->pjob);
    if (!p->pfd || !p->pjob) {
        snprintf(err, err_size, "out of memory");
        p->wake.rd = p->wake.wr = -1;
        srv_pump_free(p);
        return NULL;
    }
    if (srv_wake_open(&p->wake)) {
        snprintf(err, err_size, "cannot create the stream pump's pipe: %s", strerror(errno));
        srv_pump_free(p);
        return NULL;
    }
    int rc = pthread_create(&p->thread, NULL, pump_main, p);
    if (rc) {
        snprintf(err, err_size, "cannot start the stream pump thread: %s", strerror(rc));
        srv_pump_free(p);
        return NULL;
    }
    p->started = 1;
    return p;
}

void srv_pump_kick(srv_pump *p) {
    if (p) srv_wake_signal(&p->wake);
}

void srv_pump_stop(srv_pump *p) {
    if (!p || !p->started) return;
    atomic_store(&p->stopping, 1);
    srv_wake_signal(&p->wake);
    pthread_join(p->thread, NULL);
    p->started = 0;
}

void srv_pump_free(srv_pump *p) {
    if (!p) return;
    srv_pump_stop(p);
    srv_wake_close(&p->wake);
    pthread_mutex_destroy(&p->mu);
    free(p->pfd);
    free(p->pjob);
    free(p);
}

void srv_pump_add(srv_pump *p, srv_job *j) {
    pthread_mutex_lock(&p->mu);
    j->pump = p;
    atomic_init(&j->ready, 0);
    j->suspended = j->gone = 0;
    j->next = p->head;
    p->head = j;
    j->listed = 1;
    pthread_mutex_unlock(&p->mu);
}

void srv_pump_remove(srv_pump *p, srv_job *j) {
    pthread_mutex_lock(&p->mu);
    if (j->listed) {
        for (srv_job **pp = &p->head; *pp; pp = &(*pp)->next)
            if (*pp == j) {
                *pp = j->next;
                break;
            }
        j->next = NULL;
        j->listed = 0;
        p->generation++;
    }
    pthread_mutex_unlock(&p->mu);
}

void srv_job_notify(void *job) {
    srv_job *j = job;
    atomic_store(&j->ready, 1);
    srv_wake_signal(&j->pump->wake);
}

int srv_job_gone(srv_job *j) {
    pthread_mutex_lock(&j->pump->mu);
    int gone = j->gone;
    pthread_mutex_unlock(&j->pump->mu);
    return gone;
}

int srv_job_wait(srv_job *j) {
    srv_pump *p = j->pump;
    pthread_mutex_lock(&p->mu);
    int suspend = !atomic_exchange(&j->ready, 0) && !j->gone && !atomic_load(&p->stopping) &&
                  !atomic_load(p->aborting) && (long long)qtts_now_ms() <= j->deadline_ms;
    if (suspend) {
        j->suspended = 1;
        MHD_suspend_connection(j->conn);
        srv_wake_signal(&p->wake); /* the pump watches this client and its deadline from now on */
    }
    pthread_mutex_unlock(&p->mu);
    return suspend;
}
