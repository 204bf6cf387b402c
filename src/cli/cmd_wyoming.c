/* qtts wyoming: the Wyoming protocol server (src/server/wyoming.c) in front
 * of one engine, for Home Assistant's Wyoming Protocol integration. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "core/sampling_ranges.h"
#include "model/codec_decoder.h"
#include "cli/daemon.h"
#include "qtts.h"
#include "server/wyoming.h"

static void wyoming_usage(FILE *out) {
    fprintf(out,
            "usage: qtts wyoming [options] -m PATH\n"
            "  -m, --model PATH       model folder, .gguf or downloaded model name (default $QTTS_MODEL)\n"
            "  --host ADDR            bind address (default 127.0.0.1; 0.0.0.0 for Home Assistant on another\n"
            "                         machine: Wyoming has no authentication)\n"
            "  --port N               port (default 10200; 0 picks a free one)\n"
            "  --voices-dir DIR       Base models: the registered voices (default $QTTS_VOICES_DIR; add\n"
            "                         them with 'qtts voices add')\n"
            "  --voice NAME           the voice of requests that name none (default: the first listed)\n"
            "  --instruct TEXT        VoiceDesign: the description of the voice (required); CustomVoice:\n"
            "                         a style instruction for every request\n"
            "  --language L           the language of requests that name none, as a code (en) or name\n"
            "                         (default auto; Home Assistant names none)\n"
            "  --threads N            compute threads (default: all CPUs)\n"
            "  --max-batch N          concurrent synthesis slots (engine default if 0)\n"
            "  --max-queue N          requests waiting beyond the slots; more get an error\n"
            "  --quant TYPE           weights as f32|bf16|q8_0|q4_k (default: as stored)\n"
            "  --decoder-precision P  " QTTS_DECODER_PRECISION_OPTIONS "\n"
            "                         (default auto)\n"
            "  --kv-cache T           auto|f32|f16 (default auto: f16 with q8_0/q4_k weights)\n"
            "  --device D             cpu (default), vulkan, vulkan:N or auto: where the\n"
            "                         requests' talker and code predictor run\n"
            "  --overlap MODE         auto|on|off: decoder steps beside LM steps (default auto)\n"
            CLI_LORA_HELP
            "  --max-connections N    concurrent connections (default 16); more get an error event\n"
            "  --idle-timeout S       close a connection that sends nothing for S seconds (default 60)\n"
            "  --timeout S            one synthesis at most S seconds (default 600)\n"
            "  --max-input-chars N    text of one synthesis, in characters (default 4096)\n"
            "  --chunk-ms N           audio per audio-chunk event at most (default 200)\n"
            "  --drain-timeout S      on SIGTERM/SIGINT, let running syntheses finish this long (default 30)\n"
            "  --zeroconf[=NAME]      announce _wyoming._tcp (service NAME, default qtts) through Avahi, for\n"
            "                         Home Assistant's discovery (default: off)\n"
            "  --guard-frames-per-token R  runaway guard (default 10; 0: off)\n"
            "  --no-repetition-guard  do not end utterances whose codes loop\n"
            "  --max-request-frames N  codec frames one synthesis may ask for (qtts.max_frames) or get,\n"
            "                         guards off included (default 4096 = 328 s; 0: no limit)\n"
            "  -v, --verbose          log connections, requests, timings and ignored events\n");
}

enum {
    O_HOST = 256, O_PORT, O_VOICES_DIR, O_VOICE, O_INSTRUCT, O_THREADS, O_MAX_BATCH, O_MAX_QUEUE, O_QUANT, O_DECPREC, O_KVCACHE, O_DEVICE, O_OVERLAP, O_LORA,
    O_MAX_CONN, O_IDLE, O_TIMEOUT, O_MAX_INPUT, O_CHUNK_MS, O_DRAIN, O_ZEROCONF, O_GUARD_RATIO, O_NO_REPEAT_GUARD, O_LANGUAGE,
    O_MAX_REQ_FRAMES,
};
static const struct option wyoming_options[] = {
    {"help", no_argument, 0, 'h'},
    {"model", required_argument, 0, 'm'},
    {"host", required_argument, 0, O_HOST},
    {"port", required_argument, 0, O_PORT},
    {"voices-dir", required_argument, 0, O_VOICES_DIR},
    {"voice", required_argument, 0, O_VOICE},
    {"instruct", required_argument, 0, O_INSTRUCT},
    {"language", required_argument, 0, O_LANGUAGE},
    {"threads", required_argument, 0, O_THREADS},
    {"max-batch", required_argument, 0, O_MAX_BATCH},
    {"max-queue", required_argument, 0, O_MAX_QUEUE},
    {"quant", required_argument, 0, O_QUANT},
    {"decoder-precision", required_argument, 0, O_DECPREC},
    {"kv-cache", required_argument, 0, O_KVCACHE},
    {"lora", required_argument, 0, O_LORA},
    {"device", required_argument, 0, O_DEVICE},
    {"overlap", required_argument, 0, O_OVERLAP},
    {"max-connections", required_argument, 0, O_MAX_CONN},
    {"idle-timeout", required_argument, 0, O_IDLE},
    {"timeout", required_argument, 0, O_TIMEOUT},
    {"max-input-chars", required_argument, 0, O_MAX_INPUT},
    {"chunk-ms", required_argument, 0, O_CHUNK_MS},
    {"drain-timeout", required_argument, 0, O_DRAIN},
    {"zeroconf", optional_argument, 0, O_ZEROCONF},
    {"guard-frames-per-token", required_argument, 0, O_GUARD_RATIO},
    {"no-repetition-guard", no_argument, 0, O_NO_REPEAT_GUARD},
    {"max-request-frames", required_argument, 0, O_MAX_REQ_FRAMES},
    {"verbose", no_argument, 0, 'v'},
    {0, 0, 0, 0},
};

static int wyoming_parse_args(int argc, char **argv, qtts_wyoming_params *wp, qtts_engine_params *ep,
                              const char **model, int *drain_s, cli_lora_list *lora) {
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+:hm:v", wyoming_options, NULL)) != -1) {
        int bad = 0;
        switch (c) {
        case 'h': wyoming_usage(stdout); return CLI_OK;
        case 'm': *model = optarg; break;
        case O_HOST: wp->host = optarg; break;
        case O_PORT: bad = cli_int_to("--port", optarg, 0, 65535, &wp->port); break;
        case O_VOICES_DIR: wp->voices_dir = optarg; break;
        case O_VOICE: wp->voice = optarg; break;
        case O_INSTRUCT: wp->instruct = optarg; break;
        case O_LANGUAGE: wp->language = optarg; break;
        case O_THREADS: bad = cli_int_to("--threads", optarg, 0, 1024, &ep->n_threads); break;
        case O_MAX_BATCH: bad = cli_int_to("--max-batch", optarg, 0, 1024, &ep->max_batch); break;
        case O_MAX_QUEUE: bad = cli_int_to("--max-queue", optarg, 0, 1000000, &ep->max_queue); break;
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
        case O_MAX_CONN: bad = cli_int_to("--max-connections", optarg, 1, 65536, &wp->max_connections); break;
        case O_IDLE: bad = cli_int_to("--idle-timeout", optarg, 1, 86400, &wp->idle_timeout_s); break;
        case O_TIMEOUT: bad = cli_int_to("--timeout", optarg, 1, 86400, &wp->request_timeout_s); break;
        case O_MAX_INPUT: bad = cli_int_to("--max-input-chars", optarg, 1, 65536, &wp->max_input_chars); break;
        case O_CHUNK_MS: bad = cli_int_to("--chunk-ms", optarg, 10, 10000, &wp->chunk_ms); break;
        case O_DRAIN: bad = cli_int_to("--drain-timeout", optarg, 0, 86400, drain_s); break;
        case O_MAX_REQ_FRAMES:
            bad = cli_int_to("--max-request-frames", optarg, 0, QTTS_MAX_FRAMES_MAX, &wp->max_request_frames);
            break;
        case O_ZEROCONF:
            wp->zeroconf = 1;
            if (optarg) wp->zeroconf_name = optarg;
            break;
        case O_GUARD_RATIO:
            if (!(bad = cli_float("--guard-frames-per-token", optarg, 0, 1000, &wp->guard_frames_per_token)) &&
                wp->guard_frames_per_token == 0)
                wp->guard_frames_per_token = -1.0f; /* 0 on the command line: off */
            break;
        case O_NO_REPEAT_GUARD: wp->no_repetition_guard = 1; break;
        case 'v': wp->verbose = ep->verbose = 1; break;
        case ':': cli_error("%s needs a value", argv[optind - 1]); return CLI_USAGE;
        default:
            cli_error("wyoming: unknown option '%s' (see 'qtts wyoming --help')", argv[optind - 1]);
            return CLI_USAGE;
        }
        if (bad) return CLI_USAGE;
    }
    if (optind < argc) {
        cli_error("wyoming: unexpected argument '%s' (see 'qtts wyoming --help')", argv[optind]);
        return CLI_USAGE;
    }
    return CLI_CONTINUE;
}

int cmd_wyoming(int argc, char **argv) {
    qtts_wyoming_params wp;
    qtts_wyoming_params_default(&wp);
    qtts_engine_params ep;
    qtts_engine_params_default(&ep);
    const char *model = NULL;
    int drain_s = 30;
    const char *vdir = getenv("QTTS_VOICES_DIR"); /* the same default as serve, say --voice and qtts voices */
    if (vdir && *vdir) wp.voices_dir = vdir;
    cli_lora_list lora = {{0}, 0};
    int rc = wyoming_parse_args(argc, argv, &wp, &ep, &model, &drain_s, &lora);
    if (rc != CLI_CONTINUE) return rc;
    sigset_t sigs; /* kept off the engine, pool, accept and connection threads */
    qtts_engine *e;
    if ((rc = daemon_start_engine("wyoming", model, &ep, &sigs, &e)) != CLI_CONTINUE) return rc;
    char err[512] = "";
    qtts_wyoming *w = qtts_wyoming_start(e, &wp, err, sizeof err);
    if (!w) {
        cli_error("%s", err);
        qtts_engine_free(e);
        return CLI_FAIL;
    }
    daemon_banner("wyoming", e, "tcp", wp.host, qtts_wyoming_port(w), wp.voices_dir && *wp.voices_dir ? wp.voices_dir : NULL);
    int sig = daemon_wait(&sigs, NULL, NULL);
    fprintf(stderr, "qtts wyoming: %s: draining (up to %d s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM", drain_s);
    int cut = qtts_wyoming_stop(w, drain_s * 1000);
    qtts_engine_free(e);
    fprintf(stderr, "qtts wyoming: stopped%s\n", cut ? " (some connections were cut at the deadline)" : "");
    return CLI_OK;
}
