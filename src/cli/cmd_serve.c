/* qtts serve: the HTTP server (src/server) in front of one engine. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "qtts.h"
#include "server/server.h"

static void serve_usage(FILE *out) {
    fprintf(out,
            "usage: qtts serve [options] -m PATH\n"
            "  -m, --model PATH       model folder, .gguf or downloaded model name (default $QTTS_MODEL)\n"
            "  --host ADDR            bind address (default 127.0.0.1)\n"
            "  --port N               port (default 8080; 0 picks a free one)\n"
            "  --max-batch N          concurrent synthesis slots (engine default if 0)\n"
            "  --max-queue N          requests waiting beyond the slots; more get 503\n"
            "  --threads N            compute threads (default: all CPUs)\n"
            "  --quant TYPE           weights as f32|bf16|q8_0|q4_k (default: as stored)\n"
            "  --decoder-precision P  auto|f32|bf16 (default auto: bf16 with q8_0/q4_k weights on\n"
            "                         AVX-512 BF16 CPUs, else f32)\n"
            "  --voices-dir DIR       where registered voices persist (default: memory only)\n"
            "  --api-key KEY          require 'Authorization: Bearer KEY' (or $QTTS_API_KEY)\n"
            "  --cors ORIGIN          send CORS headers for ORIGIN (default: off)\n"
            "  --max-body-mb N        request body limit in MiB (default 32)\n"
            "  --max-input-chars N    'input' text limit (default 4096)\n"
            "  --http-threads N       HTTP threads (default 16)\n"
            "  --timeout S            per-request synthesis limit in seconds (default 600)\n"
            "  --drain-timeout S      on SIGTERM/SIGINT, wait this long for in-flight requests (default 30)\n"
            "  --model-id NAME        model id reported by /v1/models (default qwen3-tts)\n"
            "  -v, --verbose          log errors and engine details\n");
}

static int parse_int(const char *flag, const char *v, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long x = strtol(v ? v : "", &end, 10);
    if (!v || !*v || *end || errno || x < lo || x > hi) {
        cli_error("%s needs an integer in [%ld, %ld], got '%s'", flag, lo, hi, v ? v : "");
        return -1;
    }
    *out = x;
    return 0;
}

int cmd_serve(int argc, char **argv) {
    qtts_server_params sp;
    qtts_server_params_default(&sp);
    qtts_engine_params ep;
    qtts_engine_params_default(&ep);
    const char *model = NULL;
    long drain_s = 30;
    sp.api_key = getenv("QTTS_API_KEY");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long x;
#define NEED_VALUE                                                                                                     \
    do {                                                                                                               \
        if (!v) {                                                                                                      \
            cli_error("%s needs a value", a);                                                                          \
            return CLI_USAGE;                                                                                          \
        }                                                                                                              \
        i++;                                                                                                           \
    } while (0)
#define INT_FLAG(lo, hi, dst)                                                                                          \
    do {                                                                                                               \
        NEED_VALUE;                                                                                                    \
        if (parse_int(a, v, lo, hi, &x)) return CLI_USAGE;                                                             \
        dst = x;                                                                                                       \
    } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            serve_usage(stdout);
            return CLI_OK;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            NEED_VALUE;
            model = v;
        } else if (!strcmp(a, "--host")) {
            NEED_VALUE;
            sp.host = v;
        } else if (!strcmp(a, "--port")) {
            INT_FLAG(0, 65535, sp.port);
        } else if (!strcmp(a, "--max-batch")) {
            INT_FLAG(0, 1024, ep.max_batch);
        } else if (!strcmp(a, "--max-queue")) {
            INT_FLAG(0, 1000000, ep.max_queue);
        } else if (!strcmp(a, "--threads")) {
            INT_FLAG(0, 1024, ep.n_threads);
        } else if (!strcmp(a, "--quant")) {
            NEED_VALUE;
            ep.weight_type = v;
        } else if (!strcmp(a, "--decoder-precision")) {
            NEED_VALUE;
            if (cli_check_decoder_precision(v)) return CLI_USAGE;
            ep.decoder_precision = v;
        } else if (!strcmp(a, "--voices-dir")) {
            NEED_VALUE;
            sp.voices_dir = v;
        } else if (!strcmp(a, "--api-key")) {
            NEED_VALUE;
            sp.api_key = v;
        } else if (!strcmp(a, "--cors")) {
            NEED_VALUE;
            sp.cors_origin = v;
        } else if (!strcmp(a, "--max-body-mb")) {
            long mb;
            INT_FLAG(1, 4096, mb);
            sp.max_body = (size_t)mb << 20;
        } else if (!strcmp(a, "--max-input-chars")) {
            INT_FLAG(1, 1000000, sp.max_input_chars);
        } else if (!strcmp(a, "--http-threads")) {
            INT_FLAG(1, 1024, sp.http_threads);
        } else if (!strcmp(a, "--timeout")) {
            INT_FLAG(1, 86400, sp.request_timeout_s);
        } else if (!strcmp(a, "--drain-timeout")) {
            INT_FLAG(0, 86400, drain_s);
        } else if (!strcmp(a, "--model-id")) {
            NEED_VALUE;
            sp.model_id = v;
        } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            sp.verbose = ep.verbose = 1;
        } else {
            cli_error("serve: unknown option '%s' (see 'qtts serve --help')", a);
            return CLI_USAGE;
        }
#undef INT_FLAG
#undef NEED_VALUE
    }
    if (!cli_model_path(model)) {
        cli_error("serve: no model (use -m PATH or set QTTS_MODEL)");
        return CLI_USAGE;
    }
    char model_buf[4096];
    ep.model_path = cli_resolve_model(model, model_buf, sizeof model_buf); /* a path or a downloaded model's name */
    if (!ep.model_path) return CLI_FAIL;
    /* Every thread created from here on (engine, pool, HTTP) inherits this
     * mask, so the signals reach only the sigwait below. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    char err[512] = "";
    qtts_engine *e = qtts_engine_create(&ep, err, sizeof err);
    if (!e) {
        cli_error("%s", err);
        return CLI_FAIL;
    }
    qtts_server *s = qtts_server_start(e, &sp, err, sizeof err);
    if (!s) {
        cli_error("%s", err);
        qtts_engine_free(e);
        return CLI_FAIL;
    }
    const qtts_model_info *info = qtts_engine_info(e);
    fprintf(stderr, "qtts serve: %s %s model (weights %s, decoder %s), %d threads, batch %d; listening on http://%s:%d\n",
            info->size, info->variant, info->weight_type, info->decoder_precision, info->n_threads, info->max_batch,
            sp.host, qtts_server_port(s));
    fflush(stderr);
    int sig = 0;
    while (sigwait(&sigs, &sig) != 0) {
    }
    fprintf(stderr, "qtts serve: %s: draining (up to %ld s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM", drain_s);
    int cut = qtts_server_drain(s, (int)(drain_s * 1000));
    qtts_server_free(s);
    qtts_engine_free(e);
    fprintf(stderr, "qtts serve: stopped%s\n", cut ? " (some requests were cut at the deadline)" : "");
    return CLI_OK;
}
