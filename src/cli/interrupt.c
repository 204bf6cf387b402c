#include "cli/interrupt.h"

#include <string.h>

static void *watch(void *p) {
    cli_interrupt *ci = p;
    for (;;) {
        int sig = 0;
        if (sigwait(&ci->sigs, &sig)) continue;
        if (atomic_load(&ci->armed)) {
            atomic_store(&ci->signal, sig);
            continue;
        }
        /* Nothing to finish yet: die of the signal, so the shell sees it. */
        signal(sig, SIG_DFL);
        pthread_sigmask(SIG_UNBLOCK, &ci->sigs, NULL);
        raise(sig);
    }
    return NULL;
}

int cli_interrupt_start(cli_interrupt *ci) {
    memset(ci, 0, sizeof *ci);
    sigemptyset(&ci->sigs);
    sigaddset(&ci->sigs, SIGINT);
    sigaddset(&ci->sigs, SIGTERM);
    if (pthread_sigmask(SIG_BLOCK, &ci->sigs, NULL)) return -1;
    if (pthread_create(&ci->watcher, NULL, watch, ci)) {
        pthread_sigmask(SIG_UNBLOCK, &ci->sigs, NULL);
        return -1;
    }
    ci->started = 1;
    return 0;
}

void cli_interrupt_arm(cli_interrupt *ci) { atomic_store(&ci->armed, 1); }

int cli_interrupt_signal(cli_interrupt *ci) { return atomic_load(&ci->signal); }

void cli_interrupt_stop(cli_interrupt *ci) {
    if (!ci->started) return;
    pthread_cancel(ci->watcher); /* sigwait is a cancellation point */
    pthread_join(ci->watcher, NULL);
    ci->started = 0;
    /* a signal that arrived after the last check is still pending: it ends
     * the process now, as it would have without the watcher */
    pthread_sigmask(SIG_UNBLOCK, &ci->sigs, NULL);
}

const char *cli_interrupt_name(int sig) { return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "signal"; }
