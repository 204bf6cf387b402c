#include "cli/daemon.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "core/err.h"
#include "cli/load_line.h"

int daemon_start_engine(const char *cmd, const char *model, qtts_engine_params *ep, sigset_t *sigs,
                        qtts_engine **out) {
    *out = NULL;
    if (!cli_model_path(model)) {
        cli_error("%s: no model (use -m PATH or set QTTS_MODEL)", cmd);
        return CLI_USAGE;
    }
    char model_buf[4096];
    ep->model_path = cli_resolve_model(model, model_buf, sizeof model_buf);
    if (!ep->model_path) return CLI_FAIL;
    qtts_heap_return_large_blocks(); /* before the engine's first allocation */
    sigemptyset(sigs);
    sigaddset(sigs, SIGTERM);
    sigaddset(sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, sigs, NULL);
    qtts_error eerr = {0};
    cli_load_line ll;
    cli_load_line_attach(&ll, ep);
    *out = qtts_engine_create(ep, &eerr);
    cli_load_line_clear(&ll);
    ep->load_progress = NULL; /* ll ends here */
    ep->load_progress_user = NULL;
    ep->model_path = NULL; /* model_buf ends here; the engine keeps its own copy */
    if (!*out) {
        cli_error("%s", eerr.message);
        return CLI_FAIL;
    }
    return CLI_CONTINUE;
}

/* An IPv6 literal goes in brackets in a URL (http://[::1]:8080). */
const char *daemon_host_open(const char *host) { return host && strchr(host, ':') ? "[" : ""; }
const char *daemon_host_close(const char *host) { return host && strchr(host, ':') ? "]" : ""; }

void daemon_banner(const char *cmd, const qtts_engine *e, const char *scheme, const char *host, int port,
                   const char *voices_dir) {
    const qtts_model_info *info = qtts_engine_info(e);
    fprintf(stderr,
            "qtts %s: %s %s model (weights %s, decoder %s, KV cache %s), %d threads, batch %d; listening on %s://%s%s%s:%d\n",
            cmd, info->size, info->variant, info->weight_type, info->decoder_precision, info->kv_cache, info->n_threads,
            info->max_batch, scheme, daemon_host_open(host), host, daemon_host_close(host), port);
    /* Home Assistant and the API clients see no voice at all otherwise, and every request fails */
    if (!strcmp(info->variant, "base") && !voices_dir)
        fprintf(stderr,
                "qtts %s: warning: this Base model clones voices and there is no --voices-dir (or $QTTS_VOICES_DIR): "
                "it starts with no voices\n",
                cmd);
    fflush(stderr);
}

int daemon_wait(const sigset_t *sigs, void (*tick)(void *), void *ctx) {
    const struct timespec second = {1, 0};
    int sig;
    while ((sig = sigtimedwait(sigs, NULL, &second)) != SIGTERM && sig != SIGINT)
        if (tick) tick(ctx);
    return sig;
}
