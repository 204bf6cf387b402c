/* qtts serve: the HTTP server (src/server) in front of one engine. */
#include <arpa/inet.h>
#include <getopt.h>
#include <pthread.h>
#include <string.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "model/codec_decoder.h"
#include "cli/daemon.h"
#include "core/sampling_ranges.h"
#include "qtts.h"
#include "server/server.h"
#include "server/wyoming.h"

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
            "  --decoder-precision P  " QTTS_DECODER_PRECISION_OPTIONS "\n"
            "                         (default auto: with q8_0/q4_k weights the\n"
            "                         fastest measured here (qtts info --cpu), else f32)\n"
            "  --kv-cache T           the talker's KV cache: auto|f32|f16 (default auto: f16 with\n"
            "                         q8_0/q4_k weights, else f32); f16 halves a stream's memory\n"
            "  --device D             cpu (default), vulkan, vulkan:N or auto: where the\n"
            "                         requests' talker and code predictor run\n"
            "  --overlap MODE         auto|on|off: decoder steps beside LM steps (2 threads or more;\n"
            "                         default auto: measured while running)\n"
            CLI_LORA_HELP
            "  --voices-dir DIR       where registered voices persist (default $QTTS_VOICES_DIR, else\n"
            "                         memory only)\n"
            "  --api-key KEY          require 'Authorization: Bearer KEY' (or $QTTS_API_KEY)\n"
            "  --public-lists         with --api-key, answer GET /v1/audio/voices and /v1/audio/models\n"
            "                         without the key (Open WebUI reads them without it)\n"
            "  --voice-alias NAME=VOICE  another name for a voice: a speaker (CustomVoice), a registered\n"
            "                         voice (Base) or the voice description (VoiceDesign); repeatable.\n"
            "                         OpenAI's voice names (alloy, echo, ...) are aliases by default\n"
            "  --no-voice-aliases     drop the default aliases of OpenAI's voice names\n"
            "  --cors ORIGIN          send CORS headers for ORIGIN (default: off)\n"
            "  --max-body-mb N        request body limit in MiB (default 32)\n"
            "  --max-input-chars N    'input' text limit (default 4096)\n"
            "  --http-threads N       HTTP threads (default 16)\n"
            "  --timeout S            per-request synthesis limit in seconds (default 600)\n"
            "  --drain-timeout S      on SIGTERM/SIGINT, wait this long for in-flight requests (default 30)\n"
            "  --max-connections N    open connections at most (default 2048; at least --http-threads)\n"
            "  --max-connections-per-ip N  open connections per client address (default 0: no limit; a\n"
            "                         reverse proxy connects from one address)\n"
            "  --idle-timeout S       close a connection idle for S seconds (default 60)\n"
            "  --header-timeout S     close a connection whose request headers are not complete S seconds\n"
            "                         after it opened or its last response ended (default 30; 0: off)\n"
            "  --body-timeout S       answer 408 and close when a request body is not complete S seconds\n"
            "                         after its headers (default 60; 0: off)\n"
            "  --model-id NAME        model id reported by /v1/models (default qwen3-tts)\n"
            "  --reuse-port           share the port with other qtts processes (SO_REUSEPORT; off: a port\n"
            "                         in use is an error)\n"
            "  --guard-frames-per-token R  runaway guard: end an utterance after 4 s + R frames per text\n"
            "                         token (default 10, ~2.5x the speaking rate; 0: off). Requests may\n"
            "                         set guard_frames_per_token themselves\n"
            "  --no-repetition-guard  do not end utterances whose codes loop (default: end them)\n"
            "  --max-request-frames N  codec frames one request may ask for (max_new_tokens) or get, guards\n"
            "                         off included, Wyoming's too (default 4096 = 328 s of audio; 0: no limit)\n"
            "  --lexicon FILE         pronunciation lexicon for every request: written<TAB>spoken[<TAB>lang]\n"
            "                         per line, applied before numbers and symbols (docs/text.md)\n"
            "  --ws-sessions N        WebSocket sessions at once on /v1/audio/speech/stream (default 8;\n"
            "                         one thread each, started with the server)\n"
            "  --wyoming-port N       also serve the Wyoming protocol (Home Assistant) on port N, same\n"
            "                         --host and engine (docs/wyoming.md); --wyoming-zeroconf announces it\n"
            "  -v, --verbose          log errors and engine details\n");
}

enum {
    O_HOST = 256, O_PORT, O_MAX_BATCH, O_MAX_QUEUE, O_THREADS, O_QUANT, O_DECPREC, O_KVCACHE, O_DEVICE, O_OVERLAP, O_LORA, O_VOICES_DIR, O_API_KEY, O_CORS,
    O_MAX_BODY, O_MAX_INPUT, O_HTTP_THREADS, O_TIMEOUT, O_DRAIN, O_MODEL_ID,
    O_REUSE_PORT, O_LEXICON, O_GUARD_RATIO, O_NO_REPEAT_GUARD, O_WS_SESSIONS, O_WY_PORT, O_WY_ZEROCONF, O_MAX_CONN, O_MAX_CONN_IP, O_IDLE_TIMEOUT, O_HEADER_TIMEOUT,
    O_PUBLIC_LISTS, O_VOICE_ALIAS, O_NO_VOICE_ALIASES, O_BODY_TIMEOUT, O_MAX_REQ_FRAMES,
};
static const struct option serve_options[] = {
    {"help", no_argument, 0, 'h'},
    {"model", required_argument, 0, 'm'},
    {"host", required_argument, 0, O_HOST},
    {"port", required_argument, 0, O_PORT},
    {"max-batch", required_argument, 0, O_MAX_BATCH},
    {"max-queue", required_argument, 0, O_MAX_QUEUE},
    {"threads", required_argument, 0, O_THREADS},
    {"quant", required_argument, 0, O_QUANT},
    {"decoder-precision", required_argument, 0, O_DECPREC},
    {"kv-cache", required_argument, 0, O_KVCACHE},
    {"lora", required_argument, 0, O_LORA},
    {"device", required_argument, 0, O_DEVICE},
    {"overlap", required_argument, 0, O_OVERLAP},
    {"voices-dir", required_argument, 0, O_VOICES_DIR},
    {"api-key", required_argument, 0, O_API_KEY},
    {"public-lists", no_argument, 0, O_PUBLIC_LISTS},
    {"voice-alias", required_argument, 0, O_VOICE_ALIAS},
    {"no-voice-aliases", no_argument, 0, O_NO_VOICE_ALIASES},
    {"cors", required_argument, 0, O_CORS},
    {"max-body-mb", required_argument, 0, O_MAX_BODY},
    {"max-input-chars", required_argument, 0, O_MAX_INPUT},
    {"http-threads", required_argument, 0, O_HTTP_THREADS},
    {"timeout", required_argument, 0, O_TIMEOUT},
    {"drain-timeout", required_argument, 0, O_DRAIN},
    {"max-connections", required_argument, 0, O_MAX_CONN},
    {"max-connections-per-ip", required_argument, 0, O_MAX_CONN_IP},
    {"idle-timeout", required_argument, 0, O_IDLE_TIMEOUT},
    {"header-timeout", required_argument, 0, O_HEADER_TIMEOUT},
    {"body-timeout", required_argument, 0, O_BODY_TIMEOUT},
    {"max-request-frames", required_argument, 0, O_MAX_REQ_FRAMES},
    {"model-id", required_argument, 0, O_MODEL_ID},
    {"reuse-port", no_argument, 0, O_REUSE_PORT},
    {"ws-sessions", required_argument, 0, O_WS_SESSIONS},
    {"wyoming-port", required_argument, 0, O_WY_PORT},
    {"wyoming-zeroconf", no_argument, 0, O_WY_ZEROCONF},
    {"guard-frames-per-token", required_argument, 0, O_GUARD_RATIO},
    {"no-repetition-guard", no_argument, 0, O_NO_REPEAT_GUARD},
    {"lexicon", required_argument, 0, O_LEXICON},
    {"verbose", no_argument, 0, 'v'},
    {0, 0, 0, 0},
};

/* Options into the server / engine parameters; *drain_s: --drain-timeout. */
/* --wyoming-port: the Wyoming server beside the HTTP one (-1: none). */
typedef struct {
    int port, zeroconf;
} wyoming_opts;

#define MAX_VOICE_ALIASES 256

static int serve_parse_args(int argc, char **argv, qtts_server_params *sp, qtts_engine_params *ep, wyoming_opts *wy,
                            const char **model, int *drain_s, const char **aliases, cli_lora_list *lora) {
    long long v;
    optind = 1;
    opterr = 0;
    int c; /* '+': stop at the first argument that is not an option, and report it */
    while ((c = getopt_long(argc, argv, "+:hm:v", serve_options, NULL)) != -1) {
        int bad = 0;
        switch (c) {
        case 'h': serve_usage(stdout); return CLI_OK;
        case 'm': *model = optarg; break;
        case O_HOST: sp->host = optarg; break;
        case O_PORT: bad = cli_int_to("--port", optarg, 0, 65535, &sp->port); break;
        case O_MAX_BATCH: bad = cli_int_to("--max-batch", optarg, 0, 1024, &ep->max_batch); break;
        case O_MAX_QUEUE: bad = cli_int_to("--max-queue", optarg, 0, 1000000, &ep->max_queue); break;
        case O_THREADS: bad = cli_int_to("--threads", optarg, 0, 1024, &ep->n_threads); break;
        case O_QUANT: ep->weight_type = optarg; break;
        case O_DECPREC: bad = cli_check_decoder_precision(optarg); ep->decoder_precision = optarg; break;
        case O_KVCACHE: bad = cli_check_kv_cache(optarg); ep->kv_cache = optarg; break;
        case O_DEVICE: bad = cli_check_device(optarg); ep->device = optarg; break;
        case O_OVERLAP: bad = cli_parse_overlap(optarg, &ep->overlap); break;
        case O_LORA:
            bad = cli_add_lora(lora, optarg);
            ep->lora = lora->spec;
            ep->n_lora = lora->n;
            break;
        case O_VOICES_DIR: sp->voices_dir = optarg; break;
        case O_API_KEY: sp->api_key = optarg; break;
        case O_PUBLIC_LISTS: sp->public_lists = 1; break;
        case O_NO_VOICE_ALIASES: sp->no_default_voice_aliases = 1; break;
        case O_VOICE_ALIAS:
            if (sp->n_voice_aliases >= MAX_VOICE_ALIASES) {
                cli_error("--voice-alias: at most %d", MAX_VOICE_ALIASES);
                return CLI_USAGE;
            }
            aliases[sp->n_voice_aliases++] = optarg;
            break;
        case O_CORS: sp->cors_origin = optarg; break;
        case O_MAX_BODY:
            if (!(bad = cli_int("--max-body-mb", optarg, 1, 4096, &v))) sp->max_body = (size_t)v << 20;
            break;
        case O_MAX_INPUT: bad = cli_int_to("--max-input-chars", optarg, 1, 1000000, &sp->max_input_chars); break;
        case O_HTTP_THREADS: bad = cli_int_to("--http-threads", optarg, 1, 1024, &sp->http_threads); break;
        case O_TIMEOUT: bad = cli_int_to("--timeout", optarg, 1, 86400, &sp->request_timeout_s); break;
        case O_DRAIN: bad = cli_int_to("--drain-timeout", optarg, 0, 86400, drain_s); break;
        case O_MAX_CONN: bad = cli_int_to("--max-connections", optarg, 1, 65536, &sp->max_connections); break;
        case O_MAX_CONN_IP:
            bad = cli_int_to("--max-connections-per-ip", optarg, 0, 65536, &sp->max_connections_per_ip);
            break;
        case O_IDLE_TIMEOUT: bad = cli_int_to("--idle-timeout", optarg, 1, 86400, &sp->idle_timeout_s); break;
        case O_HEADER_TIMEOUT: bad = cli_int_to("--header-timeout", optarg, 0, 86400, &sp->header_timeout_s); break;
        case O_BODY_TIMEOUT: bad = cli_int_to("--body-timeout", optarg, 0, 86400, &sp->body_timeout_s); break;
        case O_MAX_REQ_FRAMES:
            bad = cli_int_to("--max-request-frames", optarg, 0, QTTS_MAX_FRAMES_MAX, &sp->max_request_frames);
            break;
        case O_MODEL_ID: sp->model_id = optarg; break;
        case O_REUSE_PORT: sp->reuse_port = 1; break;
        case O_WS_SESSIONS: bad = cli_int_to("--ws-sessions", optarg, 1, 1024, &sp->ws_sessions); break;
        case O_WY_PORT: bad = cli_int_to("--wyoming-port", optarg, 0, 65535, &wy->port); break;
        case O_WY_ZEROCONF: wy->zeroconf = 1; break;
        case O_GUARD_RATIO:
            if (!(bad = cli_float("--guard-frames-per-token", optarg, 0, 1000, &sp->guard_frames_per_token)) &&
                sp->guard_frames_per_token == 0)
                sp->guard_frames_per_token = -1.0f; /* 0 on the command line: off */
            break;
        case O_NO_REPEAT_GUARD: sp->no_repetition_guard = 1; break;
        case O_LEXICON: /* loaded before the model, so a bad file fails at once */
            if (sp->lexicon) {
                cli_error("--lexicon: give one file");
                bad = 1;
            } else {
                qtts_error le = {0};
                if (!(sp->lexicon = qtts_lexicon_load(optarg, &le))) cli_error("--lexicon: %s", le.message), bad = 1;
            }
            break;
        case 'v': sp->verbose = ep->verbose = 1; break;
        case ':': cli_error("%s needs a value", argv[optind - 1]); return CLI_USAGE;
        default:
            cli_error("serve: unknown option '%s' (see 'qtts serve --help')", argv[optind - 1]);
            return CLI_USAGE;
        }
        if (bad) return CLI_USAGE; /* the parser printed why */
    }
    if (optind < argc) {
        cli_error("serve: unknown option '%s' (see 'qtts serve --help')", argv[optind]);
        return CLI_USAGE;
    }
    unsigned char addr[16]; /* a bad value is a usage error (2), found before the model loads */
    if (sp->host && inet_pton(AF_INET, sp->host, addr) != 1 && inet_pton(AF_INET6, sp->host, addr) != 1 &&
        strcmp(sp->host, "localhost")) {
        cli_error("--host '%s' is not an IPv4/IPv6 address (or localhost)", sp->host);
        return CLI_USAGE;
    }
    return CLI_CONTINUE;
}

static void serve_tick(void *server) { qtts_server_tick(server); }

static int cmd_serve_run(qtts_server_params *spp, qtts_engine_params *epp, wyoming_opts *wyp, const char *model,
                         int drain_s);

int cmd_serve(int argc, char **argv) {
    qtts_server_params sp;
    qtts_server_params_default(&sp);
    qtts_engine_params ep;
    qtts_engine_params_default(&ep);
    const char *model = NULL;
    int drain_s = 30;
    sp.api_key = getenv("QTTS_API_KEY");
    const char *vdir = getenv("QTTS_VOICES_DIR"); /* the same default as say --voice and qtts voices */
    if (vdir && *vdir) sp.voices_dir = vdir;
    wyoming_opts wy = {-1, 0};
    const char *aliases[MAX_VOICE_ALIASES];
    sp.voice_aliases = aliases;
    cli_lora_list lora = {{0}, 0};
    int rc = serve_parse_args(argc, argv, &sp, &ep, &wy, &model, &drain_s, aliases, &lora);
    qtts_lexicon *lexicon = (qtts_lexicon *)sp.lexicon; /* ours: released when the server is gone */
    if (rc == CLI_CONTINUE) rc = cmd_serve_run(&sp, &ep, &wy, model, drain_s);
    qtts_lexicon_release(lexicon);
    return rc;
}

static int cmd_serve_run(qtts_server_params *spp, qtts_engine_params *epp, wyoming_opts *wyp, const char *model,
                         int drain_s) {
    qtts_server_params sp = *spp;
    qtts_engine_params ep = *epp;
    wyoming_opts wy = *wyp;
    int rc;
    sigset_t sigs; /* kept off the engine, pool and HTTP threads */
    qtts_engine *e;
    char err[512] = "";
    /* the port opens first: while the model loads it answers /health "loading" (503) and other requests 503
     * with Retry-After; the threads answering it start with SIGTERM/SIGINT blocked, as the engine's will */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    qtts_server_loading *loading = qtts_server_loading_start(&sp, err, sizeof err);
    if (!loading) {
        cli_error("%s", err);
        return CLI_FAIL;
    }
    const char *lh = sp.host ? sp.host : "127.0.0.1";
    fprintf(stderr, "qtts serve: loading the model; http://%s%s%s:%d/health says \"loading\" until it is ready\n",
            daemon_host_open(lh), lh, daemon_host_close(lh), qtts_server_loading_port(loading));
    if ((rc = daemon_start_engine("serve", model, &ep, &sigs, &e)) != CLI_CONTINUE) {
        qtts_server_loading_free(loading);
        return rc;
    }
    const int listen_fd = qtts_server_loading_handover(loading);
    qtts_server_loading_free(loading);
    qtts_server *s = listen_fd >= 0 ? qtts_server_start_on(e, &sp, listen_fd, err, sizeof err)
                                    : qtts_server_start(e, &sp, err, sizeof err);
    if (!s) {
        cli_error("%s", err);
        qtts_engine_free(e);
        return CLI_FAIL;
    }
    qtts_wyoming *wys = NULL;
    if (wy.port >= 0) { /* Home Assistant's protocol on the same engine */
        qtts_wyoming_params wp;
        qtts_wyoming_params_default(&wp);
        wp.host = sp.host;
        wp.port = wy.port;
        wp.voices_dir = sp.voices_dir;
        wp.max_input_chars = sp.max_input_chars;
        wp.guard_frames_per_token = sp.guard_frames_per_token;
        wp.no_repetition_guard = sp.no_repetition_guard;
        wp.max_request_frames = sp.max_request_frames;
        wp.lexicon = sp.lexicon;
        wp.zeroconf = wy.zeroconf;
        wp.verbose = sp.verbose;
        if (!(wys = qtts_wyoming_start(e, &wp, err, sizeof err))) {
            cli_error("%s", err);
            qtts_server_free(s);
            qtts_engine_free(e);
            return CLI_FAIL;
        }
        const char *h = sp.host ? sp.host : "127.0.0.1";
        fprintf(stderr, "qtts serve: Wyoming on tcp://%s%s%s:%d\n", daemon_host_open(h), h, daemon_host_close(h),
                qtts_wyoming_port(wys));
    }
    daemon_banner("serve", e, "http", sp.host, qtts_server_port(s), sp.voices_dir && *sp.voices_dir ? sp.voices_dir : NULL);
    /* the server's housekeeping (the request-header deadline) once a second */
    int sig = daemon_wait(&sigs, serve_tick, s);
    fprintf(stderr, "qtts serve: %s: draining (up to %d s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM", drain_s);
    int cut = qtts_server_drain(s, drain_s * 1000);
    if (wys) cut += qtts_wyoming_stop(wys, drain_s * 1000);
    qtts_server_free(s);
    qtts_engine_free(e);
    fprintf(stderr, "qtts serve: stopped%s\n", cut ? " (some requests were cut at the deadline)" : "");
    return CLI_OK;
}
